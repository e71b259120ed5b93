"""Fused expressions (xp_cuda.fusion.fuse) against unfused xp_cuda, cupy.fuse, torch.compile and
a same-run device copy (DESIGN principle 7).

    python benchmarks/bench_fusion.py --out DIR [--log2n 28]

Cases: 1 + mu * dt * delta_phi (three float32 inputs), a ten-operation expression, a body
heavy in transcendental work (x ** y * z + x), a full reduction sum(x * y + 1), a row reduction
sum(x * y, axis=1) and a column reduction sum(x * y, axis=0) of the same square arrays. Also
the first-call time of a new fused function (small arrays: compile; 2^log2n arrays: compile
every vector shape and time them), and the host time of a cached call. Writes
DIR/fusion.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import copy_gbps, environment, print_table, time_gpu, write_json, try_import  # noqa: E402


def _cases(xp):
    def phi(mu, dt, d):
        return 1 + mu * dt * d

    def ten(x, y, z):
        return xp.sqrt(x * x + y * y) + xp.exp(-z) * xp.sin(x) + xp.cos(y) * z

    def heavy(x, y, z):
        return x ** y * z + x

    def full(x, y):
        return xp.sum(x * y + 1)

    def row(x, y):
        return xp.sum(x * y, axis=1)

    def col(x, y):
        return xp.sum(x * y, axis=0)
    return phi, ten, heavy, full, row, col


def run(log2n: int, with_torch: bool) -> dict:
    import cupy as cp
    import numpy as np

    import xp_cuda as xp
    from xp_cuda.fusion import fuse
    torch = try_import("torch") if with_torch else None
    n = 2 ** log2n
    rng = cp.random.default_rng(0)
    a, b, c = (rng.random(n, dtype=cp.float32) + 0.5 for _ in range(3))
    side = 2 ** (log2n // 2)
    ra, rb = a[: side * side].reshape(side, -1), b[: side * side].reshape(side, -1)
    phi, ten, heavy, full, row, col = _cases(xp)
    cp_phi, cp_ten, cp_heavy, cp_full, cp_row, cp_col = _cases(cp)
    cases = [("1+mu*dt*dphi", phi, cp_phi, (a, b, c), 4 * 4 * n),
             ("ten-op expression", ten, cp_ten, (a, b, c), 4 * 4 * n),
             ("x**y*z+x", heavy, cp_heavy, (a, b, c), 4 * 4 * n),
             ("sum(x*y+1)", full, cp_full, (a, b), 2 * 4 * n),
             ("sum(x*y, axis=1)", row, cp_row, (ra, rb), 2 * 4 * side * side),
             ("sum(x*y, axis=0)", col, cp_col, (ra, rb), 2 * 4 * side * side)]
    rows = []
    copy = copy_gbps(2 * 4 * n)
    rows.append({"case": "copy", "impl": "copy", "GB/s": copy, "vs_copy": 1.0})
    for name, f, cf, args, nbytes in cases:
        xargs = [xp.asarray(v) for v in args]
        want = cf(*args)
        peers = [("xp_cuda fused", fuse(f), xargs), ("xp_cuda unfused", f, xargs),
                 ("cupy.fuse", cp.fuse(cf), args)]
        if torch is not None:
            targs = [torch.as_tensor(v, device="cuda") for v in args]
            tf = _cases(torch)[[cc[0] for cc in cases].index(name)]
            peers.append(("torch.compile", torch.compile(tf), targs))
        for impl, fn, fargs in peers:
            try:
                got = fn(*fargs)
                got = got._data if hasattr(got, "_data") else cp.asarray(got)
                ok = bool(cp.allclose(got, want, rtol=1e-4, atol=1e-3 * abs(float(want.max()))
                                      if want.ndim == 0 else 1e-4))
                t = time_gpu(lambda: fn(*fargs), warmup=3, reps=20)
                gbps = nbytes / t / 1e9
                rows.append({"case": name, "impl": impl, "ms": t * 1e3, "GB/s": gbps,
                             "vs_copy": gbps / copy, "correct": ok})
            except Exception as e:  # a peer failing must not hide the others
                rows.append({"case": name, "impl": impl, "error": repr(e)[:200]})
        del want
    # first call of a new function (a constant no earlier run has compiled), then cached calls
    const = float(np.random.default_rng(int(time.time())).random())
    small = [xp.asarray(cp.random.random(1000, dtype=cp.float32)) for _ in range(3)]
    g = fuse(lambda x, y, z: (x * const + y) * z - 1)
    t0 = time.perf_counter()
    g(*small)
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t0
    for _ in range(100):
        g(*small)
    cp.cuda.Device().synchronize()
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        g(*small)
    cached_us = (time.perf_counter() - t0) / reps * 1e6
    cp.cuda.Device().synchronize()
    # first call on 2^log2n arrays: every vector shape compiled (in parallel) and timed
    big = [xp.asarray(v) for v in (a, b, c)]
    h = fuse(lambda x, y, z: xp.sin(x * const) * y + z)
    t0 = time.perf_counter()
    h(*big)
    cp.cuda.Device().synchronize()
    first_big = time.perf_counter() - t0
    s = fuse(lambda x, y, mu: x * mu + y)
    s(small[0], small[1], 0.5)
    t0 = time.perf_counter()
    for k in range(reps):
        s(small[0], small[1], 0.25)
    scalar_us = (time.perf_counter() - t0) / reps * 1e6
    # a new process reuses the on-disk cubin cache: first call in two fresh processes
    import subprocess
    probe = ("import time, cupy as cp, xp_cuda as xp; from xp_cuda.fusion import fuse; "
             f"c = {const!r}; x = xp.asarray(cp.arange(7, dtype=cp.float64)); "
             "f = fuse(lambda a: xp.sin(a) * c - a); t = time.perf_counter(); f(x); "
             "cp.cuda.Device().synchronize(); print(time.perf_counter() - t)")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    procs = [float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                  env=env).stdout.strip() or "nan") for _ in range(2)]
    host = {"first_call_s": first, "first_call_tuned_s": first_big, "cached_call_us": cached_us,
            "cached_call_with_scalar_arg_us": scalar_us,
            "new_process_first_call_s": procs[0], "second_process_first_call_s": procs[1]}
    return {"env": environment(), "n": n, "rows": rows, "host": host}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    res = run(args.log2n, not args.no_torch and not os.environ.get("XP_BENCH_NO_TORCH"))
    print_table(res["rows"], ["case", "impl", "ms", "GB/s", "vs_copy", "correct", "error"])
    print("host:", {k: round(v, 4) for k, v in res["host"].items()})
    write_json(Path(args.out) / "fusion.json", res)


if __name__ == "__main__":
    main()
