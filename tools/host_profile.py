"""Where a small call's host time goes: cProfile over many calls of each, per-call microseconds.

    python tools/host_profile.py [--device cuda:0] [--calls N] [--top K] [--only SUBSTRING]

For each everyday call on 8-element inputs (the host-time rows of benchmarks/bench_namespace.py)
prints the wall time per call (pipelined, no synchronisation inside the loop) and the K
functions with the most own time per call. A tool for finding what to cache; the benchmark is
the measurement.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import xp_cuda as xp  # noqa: E402

CALLS = {
    "add": "x + y",
    "x * 2.5": "x * 2.5",
    "sum": "xp.sum(x)",
    "max(axis=1)": "xp.max(m, axis=1)",
    "mean": "xp.mean(x)",
    "astype": "xp.astype(x, xp.float64)",
    "reshape": "xp.reshape(m, (-1,))",
    "m[1:3, ::2]": "m[1:3, ::2]",
    "matmul": "m @ m",
    "where": "xp.where(c, x, y)",
    "zeros": "xp.zeros(8, device=dev)",
    "take": "xp.take(x, i, axis=0)",
    "concat": "xp.concat([x, y, x])",
    "x[c]": "x[c]",
    "argmax": "xp.argmax(x)",
    "cumulative_sum": "xp.cumulative_sum(x)",
    "sort": "xp.sort(x)",
    "stack": "xp.stack([x, y, x])",
    "roll": "xp.roll(m, (1, 2), axis=(0, 1))",
    "cumsum axis0": "xp.cumulative_sum(m, axis=0)",
    "cumsum axis1": "xp.cumulative_sum(m, axis=1)",
    "outer add": "col + row",
    "permute reshape": "xp.reshape(xp.permute_dims(m, (1, 0)), (-1,))",
    "searchsorted": "xp.searchsorted(s, x)",
    "solve": "xp.linalg.solve(a, b)",
    "repeat": "xp.repeat(m, 2, axis=0)",
    "tile": "xp.tile(m, (2, 1))",
    "trace": "xp.linalg.trace(m)",
    "nonzero": "xp.nonzero(c)",
    "unique_values": "xp.unique_values(x)",
    "x[::2] + y[::2]": "x[::2] + y[::2]",
    "var": "xp.var(m, axis=0)",
    "std": "xp.std(m, axis=-1)",
    "vector_norm": "xp.linalg.vector_norm(m, axis=-1)",
    "matrix_norm": "xp.linalg.matrix_norm(m, ord='fro')",
    "flip": "xp.flip(m)",
    "transpose add": "xp.matrix_transpose(m) + m",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    dev = next(d for d in xp.__array_namespace_info__().devices() if str(d) == args.device)
    rng = np.random.default_rng(0)
    env = {"xp": xp, "dev": dev}
    env["x"] = xp.asarray(rng.standard_normal(8).astype(np.float32), device=dev)
    env["y"] = xp.asarray(rng.standard_normal(8).astype(np.float32), device=dev)
    env["m"] = xp.asarray(rng.standard_normal((4, 4)).astype(np.float32), device=dev)
    env["c"] = env["x"] > 0
    env["i"] = xp.asarray(rng.integers(0, 8, 8), device=dev)
    env["col"] = xp.reshape(env["x"], (8, 1))
    env["row"] = xp.reshape(env["y"], (1, 8))
    env["s"] = xp.sort(env["y"])
    env["a"] = xp.asarray((rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32),
                          device=dev)
    env["b"] = xp.asarray(rng.standard_normal((4, 2)).astype(np.float32), device=dev)
    for name, stmt in CALLS.items():
        if args.only not in name:
            continue
        code = compile(stmt, name, "eval")
        for _ in range(50):
            eval(code, env)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            eval(code, env)
        wall = (time.perf_counter() - t0) / args.calls * 1e6
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            eval(code, env)
        prof.disable()
        st = pstats.Stats(prof)
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:args.top]
        print(f"\n== {name}: {stmt}   {wall:.2f} us per call (no profiler)")
        for (fname, line, func), (cc, nc, tt, ct, _) in rows:
            where = f"{Path(fname).name}:{line}" if line else fname
            print(f"  {tt / args.calls * 1e6:7.2f} us own {ct / args.calls * 1e6:7.2f} us cum "
                  f"{nc / args.calls:5.1f}x  {func}  ({where})")


if __name__ == "__main__":
    main()
