"""Fused expressions (xp_cuda.fusion.fuse) against unfused xp_cuda, cupy.fuse, torch.compile and
a same-run device copy (DESIGN principle 7).

    python benchmarks/bench_fusion.py --out DIR [--log2n 28]

Cases: 1 + mu * dt * delta_phi (three float32 inputs), a ten-operation expression, a body
heavy in transcendental work (x ** y * z + x), a full reduction sum(x * y + 1), a row reduction
sum(x * y, axis=1) and a column reduction sum(x * y, axis=0) of the same square arrays. Also
the first-call time of a new fused function (small arrays: compile; 2^log2n arrays: compile
every vector shape and time them), and the host time of a cached call.

Whole programs (reductions feeding further work; issue #17), float32, against torch.compile and
unfused xp_cuda, the copy as the ceiling: softmax over the last axis of (32768, 4096) and of
(4096, 32768), layer norm with a scale over (32768, 4096), log-sum-exp over axis 0 of
(4096, 32768), rows divided by their 2-norm (32768, 4096), a batch normalisation over (0, 2, 3)
of (512, 64, 64, 64) (its bytes: x read twice, the statistics then the output, and the output
written: x does not fit on the chip between); each row names the plan fuse chose.
Then the first call of a new whole program (compile included) and the host time of a cached
call of a small softmax, beside torch.compile's. ``--whole-only`` runs just these.
Writes DIR/fusion.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json, try_import  # noqa: E402


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


def _whole_cases(xp):
    def softmax(x):
        m = xp.max(x, axis=-1, keepdims=True)
        e = xp.exp(x - m)
        return e / xp.sum(e, axis=-1, keepdims=True)

    def layer_norm(x, w):
        mu = xp.mean(x, axis=-1, keepdims=True)
        d = x - mu
        return d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * w

    def lse0(x):
        m = xp.max(x, axis=0, keepdims=True)
        return xp.log(xp.sum(xp.exp(x - m), axis=0)) + m[0, ...]

    def rownorm(x):
        return x / xp.linalg.vector_norm(x, axis=-1, keepdims=True)

    def batch_norm(x):
        m = xp.mean(x, axis=(0, 2, 3), keepdims=True)
        return (x - m) / xp.sqrt(xp.var(x, axis=(0, 2, 3), keepdims=True) + 1e-5)
    return softmax, layer_norm, lse0, rownorm, batch_norm


def _torch_cases(torch):
    def softmax(x):
        m = torch.amax(x, dim=-1, keepdim=True)
        e = torch.exp(x - m)
        return e / torch.sum(e, dim=-1, keepdim=True)

    def layer_norm(x, w):
        mu = torch.mean(x, dim=-1, keepdim=True)
        d = x - mu
        return d / torch.sqrt(torch.mean(d * d, dim=-1, keepdim=True) + 1e-5) * w

    def lse0(x):
        m = torch.amax(x, dim=0, keepdim=True)
        return torch.log(torch.sum(torch.exp(x - m), dim=0)) + m[0]

    def rownorm(x):
        return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)

    def batch_norm(x):
        m = torch.mean(x, dim=(0, 2, 3), keepdim=True)
        v = torch.var(x, dim=(0, 2, 3), keepdim=True, correction=0)
        return (x - m) / torch.sqrt(v + 1e-5)
    return softmax, layer_norm, lse0, rownorm, batch_norm


def run_whole(with_torch: bool) -> dict:
    """The whole-program rows and their host times (see the module docstring)."""
    import random

    import cupy as cp

    import xp_cuda as xp
    from xp_cuda.fusion import finish_compiling, fuse
    torch = try_import("torch") if with_torch else None
    rng = cp.random.default_rng(1)
    wide = rng.standard_normal((32768, 4096), dtype=cp.float32)
    long = wide.reshape(4096, 32768)
    w = rng.random(4096, dtype=cp.float32) + 0.5
    softmax, layer_norm, lse0, rownorm, batch_norm = _whole_cases(xp)
    t_cases = _torch_cases(torch) if torch is not None else (None,) * 5
    n = wide.size
    cases = [("softmax (32768, 4096)", softmax, t_cases[0], (wide,), 2 * 4 * n),
             ("softmax (4096, 32768)", softmax, t_cases[0], (long,), 2 * 4 * n),
             ("layer norm + scale (32768, 4096)", layer_norm, t_cases[1], (wide, w),
              2 * 4 * n + 4 * 4096),
             ("logsumexp axis 0 (4096, 32768)", lse0, t_cases[2], (long,), 4 * n + 4 * 32768),
             ("x / norm(x, axis=1) (32768, 4096)", rownorm, t_cases[3], (wide,), 2 * 4 * n),
             ("batch norm over (0, 2, 3) (512, 64, 64, 64)", batch_norm, t_cases[4],
              (wide.reshape(512, 64, 64, 64),), 3 * 4 * n)]
    copy = copy_gbps(2 * 4 * n)
    rows = [{"case": "copy", "impl": "copy", "GB/s": copy, "vs_copy": 1.0}]
    for name, f, tf, args, nbytes in cases:
        xargs = [xp.asarray(v) for v in args]
        want = f(*xargs)._data
        fused = fuse(f)
        # the line that counts the kernels (a line naming merged axes may come first)
        plan = next(ln for ln in fused.plan(*xargs).split("\n") if ln[:1].isdigit())
        peers = [("xp_cuda fused", fused, xargs), ("xp_cuda unfused", f, xargs)]
        if torch is not None:
            targs = [torch.as_tensor(v, device="cuda") for v in args]
            peers.append(("torch.compile", torch.compile(tf), targs))
        for impl, fn, fargs in peers:
            try:
                got = fn(*fargs)
                got = got._data if hasattr(got, "_data") else cp.asarray(got)
                ok = bool(cp.allclose(got, want, rtol=1e-4, atol=1e-5))
                if impl == "xp_cuda fused":  # the full-option kernels, taken at the next call
                    finish_compiling()
                t = time_gpu(lambda: fn(*fargs), warmup=3, reps=20)
                gbps = nbytes / t / 1e9
                row = {"case": name, "impl": impl, "ms": t * 1e3, "GB/s": gbps,
                       "vs_copy": gbps / copy, "correct": ok}
                if impl == "xp_cuda fused":
                    row["plan"] = plan
                rows.append(row)
            except Exception as e:  # a peer failing must not hide the others
                rows.append({"case": name, "impl": impl, "error": repr(e)[:200]})
        del want
    # first call of a new whole program: a structure no run has compiled (a random depth of
    # the same steps), so the time includes tracing, planning and NVRTC
    depth = random.Random().randrange(3, 60)
    small = xp.asarray(rng.standard_normal((64, 1000), dtype=cp.float32))

    def new_program(x):
        for _ in range(depth):
            x = x * 1.0001 + 0.5
        return softmax(x)
    g = fuse(new_program)
    t0 = time.perf_counter()
    g(small)
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t0
    sm = fuse(softmax)
    sm(small)
    finish_compiling()  # (a cached call: the full-option kernels, no compile in the background)
    host = {"whole_first_call_s": first,
            "softmax_cached_call_us": _host_us(lambda: sm(small), cp)}
    if torch is not None:
        ts = torch.compile(t_cases[0])
        tsmall = torch.as_tensor(small._data, device="cuda")
        host["torch_compile_softmax_cached_call_us"] = _host_us(lambda: ts(tsmall), cp)
    return {"rows": rows, "host": host}


def _host_us(fn, cp, reps=2000) -> float:
    """Host microseconds per call of a warm call (launches queue; one wait at the end)."""
    for _ in range(50):
        fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t = (time.perf_counter() - t0) / reps * 1e6
    cp.cuda.Device().synchronize()
    return t


def run(log2n: int, with_torch: bool) -> dict:
    import cupy as cp
    import numpy as np

    import xp_cuda as xp
    from xp_cuda.fusion import finish_compiling, fuse
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
                if impl == "xp_cuda fused":  # the full-option kernels, taken at the next call
                    finish_compiling()
                t = time_gpu(lambda: fn(*fargs), warmup=3, reps=20)
                gbps = nbytes / t / 1e9
                rows.append({"case": name, "impl": impl, "ms": t * 1e3, "GB/s": gbps,
                             "vs_copy": gbps / copy, "correct": ok})
            except Exception as e:  # a peer failing must not hide the others
                rows.append({"case": name, "impl": impl, "error": repr(e)[:200]})
        del want
    # first call of a new function, then cached calls. Constants are kernel parameters (a
    # new value reuses the compiled kernel), so a structure no earlier run compiled: a
    # random number of the same steps
    const = float(np.random.default_rng(int(time.time())).random())
    depth = int(np.random.default_rng(int(time.time()) + 1).integers(3, 200))
    small = [xp.asarray(cp.random.random(1000, dtype=cp.float32)) for _ in range(3)]

    def chain(x, y, z):
        for _ in range(depth):
            x = x * const + y
        return x * z - 1
    g = fuse(chain)
    t0 = time.perf_counter()
    g(*small)
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t0
    finish_compiling()  # (the cached calls below run the full-option kernels)
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
    def heavy_chain(x, y, z):
        for _ in range(depth):
            x = xp.sin(x * const)
        return x * y + z
    h = fuse(heavy_chain)
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
             f"exec('def g(a):\\n for _ in range({depth}): a = xp.sin(a) * c - a\\n return a'); "
             "f = fuse(g); t = time.perf_counter(); f(x); "
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
    ap.add_argument("--whole-only", action="store_true",
                    help="only the whole-program rows (reductions feeding further work)")
    args = ap.parse_args()
    if no_gpu("bench_fusion"):
        return 0
    with_torch = not args.no_torch and not os.environ.get("XP_BENCH_NO_TORCH")
    res = {"env": environment(), "rows": [], "host": {}} if args.whole_only else \
        run(args.log2n, with_torch)
    whole = run_whole(with_torch)
    res["whole_rows"], res["host"] = whole["rows"], {**res["host"], **whole["host"]}
    cols = ["case", "impl", "ms", "GB/s", "vs_copy", "correct", "error"]
    if res["rows"]:
        print_table(res["rows"], cols)
    print_table(whole["rows"], cols + ["plan"])
    print("host:", {k: round(v, 4) for k, v in res["host"].items()})
    write_json(Path(args.out) / "fusion.json", res)


if __name__ == "__main__":
    main()
