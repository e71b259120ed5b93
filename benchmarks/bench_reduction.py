"""Eager reductions: xp_cuda against a device copy and CuPy/torch on the same arrays, one run.

    python benchmarks/bench_reduction.py --out DIR [--log2n 28]

Each case reads one random (never zero) array and writes the reduced result; GB/s counts the
bytes read plus written, so "vs_copy" compares with a device-to-device copy (read + write) of
the same run. Rows, columns, a whole-array sum, a tall-and-narrow column sum (k-means'
``sum(onehot, axis=0)``), max, mean, any over bool and an int8 sum widened to int64. Writes
DIR/reduction.json and prints a table; a wrong result (against CuPy, loosely for floats) is an
error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json, try_import  # noqa: E402


def cases(log2n: int):
    side = 1 << (log2n // 2)
    return [  # (name, shape, dtype name, function, axis)
        ("sum all", (1 << log2n,), "float32", "sum", None),
        ("sum rows", (side, side), "float32", "sum", 1),
        ("sum columns", (side, side), "float32", "sum", 0),
        ("sum(onehot, axis=0)", (1 << (log2n - 6), 64), "float32", "sum", 0),
        ("max rows", (side, side), "float32", "max", 1),
        ("mean columns", (side, side), "float32", "mean", 0),
        ("any rows (bool)", (side, side), "bool", "any", 1),
        ("sum int8 -> int64", (1 << log2n,), "int8", "sum", None),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--log2n", type=int, default=28, help="log2 of the elements per array")
    args = ap.parse_args(argv)
    if no_gpu("bench_reduction"):
        return 0

    import cupy as cp
    import numpy as np
    cp.cuda.Device(0).use()
    xp, torch = try_import("xp_cuda"), try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    from xp_cuda._devices import Device
    dev = Device("cuda", 0)

    copy = copy_gbps(1 << args.log2n)
    rows = [{"case": "copy (read + write)", "impl": "cudaMemcpyAsync", "GB/s": copy,
             "vs_copy": 1.0}]
    rng = cp.random.default_rng(7)
    for name, shape, dt, fn, axis in cases(args.log2n):
        if dt == "bool":
            c = rng.random(shape, dtype=cp.float32) > 0.999
        elif dt == "int8":
            c = rng.integers(-100, 100, size=shape, dtype=cp.int8)
            c[c == 0] = 1
        else:
            c = rng.standard_normal(shape, dtype=cp.float32) + 0.5
        x = xp.asarray(c)
        t = torch.from_dlpack(c) if torch is not None else None
        kw = {} if axis is None else {"axis": axis}
        tkw = {} if axis is None else {"dim": axis}
        cfn = {"max": "max", "mean": "mean", "any": "any", "sum": "sum"}[fn]
        impls = [("xp_cuda", lambda: getattr(xp, fn)(x, **kw)._data),
                 ("cupy", lambda: getattr(cp, cfn)(c, **kw))]
        if t is not None:
            if fn == "max" and axis is not None:
                impls.append(("torch", lambda: torch.amax(t, **tkw)))
            elif dt == "int8":
                impls.append(("torch", lambda: torch.sum(t, dtype=torch.int64, **tkw)))
            else:
                impls.append(("torch", lambda: getattr(torch, fn)(t, **tkw)))
        ref = cp.asnumpy(impls[1][1]())
        for impl, f in impls:
            try:
                res = f()
                tm = time_gpu(f)
                moved = c.nbytes + int(np.prod(res.shape)) * res.dtype.itemsize
                gbps = moved / tm / 1e9
                row = {"case": name, "impl": impl, "ms": tm * 1e3, "GB/s": gbps,
                       "vs_copy": gbps / copy}
                if impl == "xp_cuda":
                    got = cp.asnumpy(res)
                    row["correct"] = bool(got.shape == ref.shape and (
                        np.array_equal(got, ref) if dt != "float32" else
                        np.allclose(got, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))))
                rows.append(row)
            except Exception as e:
                rows.append({"case": name, "impl": impl, "error": repr(e)})
        del x, c, t
        cp.get_default_memory_pool().free_all_blocks()
    print_table(rows, ["case", "impl", "ms", "GB/s", "vs_copy", "correct", "error"])
    write_json(args.out / "reduction.json",
               {"benchmark": "reduction", "env": environment(), "log2n": args.log2n,
                "rows": rows})
    return 1 if any("error" in r or r.get("correct") is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
