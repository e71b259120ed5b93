"""Elementwise add: xp_cuda against a same-run device copy and its peers (DESIGN principle 7).

    python benchmarks/bench_elementwise.py --out DIR [--n 2**28]

Writes DIR/elementwise.json and prints a table.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json, size_arg, try_import  # noqa: E402


def bandwidth_cases(cp, xp, torch, n: int) -> list[dict]:
    rng = cp.random.default_rng(0)
    cases = [("float32 + float32", rng.random(n, dtype=cp.float32),
              rng.random(n, dtype=cp.float32)),
             ("int16 + int32", rng.integers(-2**15, 2**15, n, dtype=cp.int16),
              rng.integers(-2**31, 2**31 - 1, n, dtype=cp.int32)),
             ("float32 + float64", rng.random(n, dtype=cp.float32),
              rng.random(n, dtype=cp.float64))]
    rows = []
    for case, a, b in cases:
        out_dtype = cp.result_type(a, b)
        nbytes = a.nbytes + b.nbytes + n * out_dtype.itemsize  # read both, write result
        copy = copy_gbps(nbytes // 2)  # a copy moving the same bytes (read + write)
        rows.append({"case": case, "impl": "copy", "n": n, "GB/s": copy, "vs_copy": 1.0,
                     "ms": nbytes / copy / 1e6})
        expected = a + b
        peers = [("cupy", lambda: a + b, lambda: expected)]
        if xp is not None:
            try:
                xa, xb = xp.asarray(a), xp.asarray(b)
                peers.insert(0, ("xp_cuda", lambda: xa + xb, lambda: (xa + xb)._data))
            except Exception as e:
                rows.append({"case": case, "impl": "xp_cuda", "n": n, "error": repr(e)})
        if torch is not None:
            ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
            peers.append(("torch", lambda: ta + tb, lambda: cp.asarray(ta + tb)))
        for impl, fn, result in peers:
            try:
                ok = bool(cp.array_equal(cp.asarray(result()), expected))
                t = time_gpu(fn)
                gbps = nbytes / t / 1e9
                rows.append({"case": case, "impl": impl, "n": n, "ms": t * 1e3, "GB/s": gbps,
                             "vs_copy": gbps / copy, "correct": ok})
            except Exception as e:
                rows.append({"case": case, "impl": impl, "n": n, "error": repr(e)})
        del expected
    return rows


def host_overhead_us(cp, xp, torch, calls: int = 2000) -> dict:
    """Host time of one tiny (8-element float32) x + y, two ways, for every peer:
    "pipelined": calls back to back, one synchronise at the end, per call (min of 5 rounds
    of 20000): the host cost of an operation when the GPU keeps up, as in real code;
    "synchronised": the median of single calls each followed by a synchronise (adds the
    launch-to-completion latency, the same for all)."""
    import numpy as np

    def synchronised(fn, sync):
        for _ in range(50):
            fn(); sync()
        ts = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn(); sync()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e6

    def pipelined(fn, sync, n=20000):
        for _ in range(200):
            fn()
        sync()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            best.append((time.perf_counter() - t0) / n)
        return min(best) * 1e6

    hx, hy = np.random.default_rng(0).random((2, 8), dtype=np.float32)
    cx, cy = cp.asarray(hx), cp.asarray(hy)
    dsync = cp.cuda.Device().synchronize
    peers = [("numpy", lambda: hx + hy, lambda: None), ("cupy", lambda: cx + cy, dsync)]
    if xp is not None:
        xx, xy = xp.asarray(cx), xp.asarray(cy)
        peers.insert(0, ("xp_cuda", lambda: xx + xy, dsync))
    if torch is not None:
        tx, ty = torch.as_tensor(hx, device="cuda"), torch.as_tensor(hy, device="cuda")
        peers.append(("torch", lambda: tx + ty, torch.cuda.synchronize))
    out = {}
    for name, fn, sync in peers:
        try:
            out[name] = {"pipelined": pipelined(fn, sync), "synchronised": synchronised(fn, sync)}
        except Exception as e:
            out[name] = {"error": repr(e)}
    try:  # where xp_cuda's time goes: allocation, one raw launch, the synchronise itself
        from xp_cuda._backends import backend
        plan = backend(xx.device)._plans[("add", ("float32", "float32"))]
        k, o = plan.kernel("cc"), cp.empty(8, cp.float32)
        out["parts"] = {"raw launch": pipelined(lambda: k((1,), (256,), (cx, cy, o, 8)), dsync),
                        "cupy.empty": pipelined(lambda: cp.empty((8,), cp.float32), dsync),
                        "sync only": synchronised(lambda: None, dsync)}
    except Exception as e:
        out["parts"] = {"error": repr(e)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=size_arg, default=2**28,
                    help="elements per array (expressions like 2**28 allowed)")
    args = ap.parse_args(argv)
    if no_gpu("bench_elementwise"):
        return 0

    import cupy as cp
    cp.cuda.Device(0).use()
    xp, torch = try_import("xp_cuda"), try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None

    rows = bandwidth_cases(cp, xp, torch, args.n)
    overhead = host_overhead_us(cp, xp, torch)
    print_table(rows, ["case", "impl", "n", "ms", "GB/s", "vs_copy", "correct", "error"])
    print("\nhost time of an 8-element float32 x + y (us per call):")
    print_table([{"impl": k, **v} for k, v in overhead.items() if k != "parts"],
                ["impl", "pipelined", "synchronised", "error"])
    print("xp_cuda parts (us):", {k: round(v, 3) if isinstance(v, float) else v
                                  for k, v in overhead["parts"].items()})
    write_json(args.out / "elementwise.json",
               {"benchmark": "elementwise", "env": environment(), "n": args.n,
                "rows": rows, "host_overhead_us": overhead})
    failed = any("error" in r or r.get("correct") is False for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
