"""Creation functions: xp_cuda against memset and copy ceilings and CuPy/torch in the same run.

    python benchmarks/bench_creation.py --out DIR [--n 2**28]

Every case writes n elements of 8 bytes (eye: a square matrix of about n elements); GB/s
counts bytes written. "kernel" is our launcher into a preallocated buffer (no allocation or
validation), "xp_cuda" the public function. Writes DIR/creation.json and prints a table.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json, size_arg, try_import  # noqa: E402


def cases(cp, xp, torch, n: int):
    from xp_cuda._devices import Device
    from xp_cuda._kernels import creation as K
    from xp_cuda._creation import _lin_params, _lin_last
    from xp_cuda.nonstandard import logspace

    dev = Device("cuda", 0)
    side = math.isqrt(n)
    f64 = cp.float64
    lin = _lin_params(-3.0, 7.5, n, True)
    loglin = _lin_params(-2.0, 3.0, n, True)
    out = cp.empty(n, dtype=f64)
    out_i = cp.empty(n, dtype=cp.int64)
    out_sq = cp.empty((side, side), dtype=f64)
    one = memoryview(cp.asnumpy(cp.ones((), f64))).tobytes()
    fill_v = memoryview(cp.asnumpy(cp.full((), 1.5, f64))).tobytes()
    tdev = "cuda:0"
    rows = [
        ("arange int64", n * 8,
         [("kernel", lambda: K.arange(cp, out_i, 0, 1)),
          ("xp_cuda", lambda: xp.arange(n, device=dev)._data),
          ("cupy", lambda: cp.arange(n, dtype=cp.int64)),
          ("torch", torch and (lambda: torch.arange(n, dtype=torch.int64, device=tdev)))]),
        ("linspace float64", n * 8,
         [("kernel", lambda: K.linspace(cp, out, lin, (0.0, 0.0, 1.0, 0.0, 0),
                                        _lin_last(n, True))),
          ("xp_cuda", lambda: xp.linspace(-3.0, 7.5, n, device=dev)._data),
          ("cupy", lambda: cp.linspace(-3.0, 7.5, n)),
          ("torch", torch and (lambda: torch.linspace(-3.0, 7.5, n, dtype=torch.float64,
                                                      device=tdev)))]),
        ("full float64 1.5", n * 8,
         [("kernel", lambda: K.fill(cp, out, fill_v)),
          ("xp_cuda", lambda: xp.full(n, 1.5, device=dev)._data),
          ("cupy", lambda: cp.full(n, 1.5, dtype=f64)),
          ("torch", torch and (lambda: torch.full((n,), 1.5, dtype=torch.float64,
                                                  device=tdev)))]),
        ("zeros float64", n * 8,
         [("xp_cuda", lambda: xp.zeros(n, device=dev)._data),
          ("cupy", lambda: cp.zeros(n, dtype=f64)),
          ("torch", torch and (lambda: torch.zeros((n,), dtype=torch.float64, device=tdev)))]),
        (f"eye {side}x{side} float64", side * side * 8,
         [("kernel", lambda: K.eye(cp, out_sq, 0, one)),
          ("xp_cuda", lambda: xp.eye(side, device=dev)._data),
          ("cupy", lambda: cp.eye(side, dtype=f64)),
          ("torch", torch and (lambda: torch.eye(side, dtype=torch.float64, device=tdev)))]),
        ("logspace float64", n * 8,
         [("kernel", lambda: K.logspace(cp, out, loglin, _lin_last(n, True), 10.0, 10, True)),
          ("xp_cuda", lambda: logspace(-2.0, 3.0, n, device=dev)._data),
          ("cupy", lambda: cp.logspace(-2.0, 3.0, n)),
          ("torch", torch and (lambda: torch.logspace(-2.0, 3.0, n, dtype=torch.float64,
                                                      device=tdev)))]),
    ]
    return rows


def _sample_ok(cp, got, ref, exact):
    got, ref = cp.asarray(got).ravel(), cp.asarray(ref).ravel()
    step = max(1, got.size // 65536)
    g, r = got[::step], ref[::step]
    return bool(cp.array_equal(g, r)) if exact else bool(cp.allclose(g, r, rtol=1e-13))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=size_arg, default=2**28,
                    help="elements per array (expressions like 2**28 allowed)")
    args = ap.parse_args(argv)
    if no_gpu("bench_creation"):
        return 0
    n = args.n

    import cupy as cp
    cp.cuda.Device(0).use()
    xp, torch = try_import("xp_cuda"), try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None

    nbytes = n * 8
    buf = cp.empty(nbytes, dtype=cp.uint8)
    stream = cp.cuda.get_current_stream()
    t_memset = time_gpu(lambda: cp.cuda.runtime.memsetAsync(buf.data.ptr, 0, nbytes,
                                                             stream.ptr))
    memset = nbytes / t_memset / 1e9
    copy = copy_gbps(nbytes)
    del buf
    rows = [{"case": "memset (write only)", "impl": "cudaMemsetAsync", "GB/s": memset,
             "vs_memset": 1.0, "vs_copy": memset / copy, "ms": t_memset * 1e3},
            {"case": "copy (read + write)", "impl": "cudaMemcpyAsync", "GB/s": copy,
             "vs_memset": copy / memset, "vs_copy": 1.0, "ms": 2 * nbytes / copy / 1e6}]
    for case, written, impls in cases(cp, xp, torch, n):
        ref = None
        for impl, fn in impls:
            if fn is None:
                continue
            try:
                res = fn()
                if impl == "cupy":
                    ref = res
                t = time_gpu(fn)
                gbps = written / t / 1e9
                row = {"case": case, "impl": impl, "ms": t * 1e3, "GB/s": gbps,
                       "vs_memset": gbps / memset, "vs_copy": gbps / copy}
                if impl in ("kernel", "xp_cuda") and "logspace" not in case:
                    row["_res"] = res
                rows.append(row)
            except Exception as e:
                rows.append({"case": case, "impl": impl, "error": repr(e)})
        for r in rows:  # correctness of ours against CuPy on a sample
            if r.get("case") == case and "_res" in r:
                r["correct"] = (_sample_ok(cp, r.pop("_res"), ref, "linspace" not in case)
                                if ref is not None else None)
        cp.get_default_memory_pool().free_all_blocks()
    print_table(rows, ["case", "impl", "ms", "GB/s", "vs_memset", "vs_copy", "correct", "error"])
    write_json(args.out / "creation.json",
               {"benchmark": "creation", "env": environment(), "n": n, "rows": rows})
    return 1 if any("error" in r or r.get("correct") is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
