"""KDTree: xp_cuda.spatial on the GPU against scipy.spatial.cKDTree (workers=-1) and
cupyx.scipy.spatial.KDTree, in one run.

    python benchmarks/bench_spatial.py --out DIR [--scipy-full]

Cases: 1M uniform 3-D points, build and 1M queries with k=8; 200k 16-D points, 200k queries,
k=8. SciPy on the 16-D case runs on a sample of queries and is scaled to 200k (it takes tens of
seconds in full; --scipy-full runs it all). Results are checked against SciPy on a sample.
A tree search is not bandwidth-bound, so the table gives times and query rates; the copy
bandwidth of the same run is recorded alongside for reference. Writes DIR/spatial.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json  # noqa: E402


def _wall(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench_out")
    ap.add_argument("--scipy-full", action="store_true")
    ap.add_argument("--small", action="store_true", help="tiny sizes (smoke test)")
    args = ap.parse_args()
    if no_gpu("bench_spatial"):
        return 0

    import cupy as cp
    import numpy as np
    import xp_cuda as xp
    from xp_cuda.spatial import KDTree

    try:
        from scipy.spatial import cKDTree
    except Exception as e:
        print(f"[bench] scipy unavailable: {e!r}", file=sys.stderr)
        cKDTree = None
    try:
        from cupyx.scipy.spatial import KDTree as CupyxKDTree
    except Exception as e:
        print(f"[bench] cupyx.scipy.spatial unavailable: {e!r}", file=sys.stderr)
        CupyxKDTree = None

    dev = xp.__array_namespace_info__().default_device()
    rng = np.random.default_rng(1)
    scale = 100 if args.small else 1
    cases = [("3-D uniform", 1_000_000 // scale, 1_000_000 // scale, 3, 8),
             ("16-D uniform", 200_000 // scale, 200_000 // scale, 16, 8)]
    rows = []
    gbps = copy_gbps(1 << 28)
    for name, n, nq, m, k in cases:
        data = rng.random((n, m))
        qs = rng.random((nq, m))
        ddev = xp.asarray(data, device=dev)
        qdev = xp.asarray(qs, device=dev)
        row = {"case": name, "n": n, "queries": nq, "m": m, "k": k}

        # ours: build (from device data) and query, CUDA events, median
        KDTree(ddev)  # compile + warm
        row["build_ms"] = time_gpu(lambda: KDTree(ddev), warmup=1, reps=5) * 1e3
        t = KDTree(ddev)
        t.query(qdev, k=k)
        row["query_ms"] = time_gpu(lambda: t.query(qdev, k=k), warmup=1,
                                   reps=5 if m > 8 else 10) * 1e3
        row["Mq/s"] = nq / row["query_ms"] / 1e3
        d, i = t.query(qdev, k=k)

        # scipy (16 cores or what is here), exact reference on a sample
        if cKDTree is not None:
            row["scipy_build_ms"] = _wall(lambda: cKDTree(data), reps=2) * 1e3
            ref = cKDTree(data)
            sample = min(nq, 2000)
            rd, ri = ref.query(qs[:sample], k=k, workers=-1)
            dd = cp.asnumpy(d._data[:sample])
            row["max_rel_err"] = float(np.max(np.abs(dd - rd) / rd))
            row["same_idx"] = float(np.mean(cp.asnumpy(i._data[:sample]) == ri))
            if m > 8 and not args.scipy_full:
                sub = max(1, nq // 20)
                ts = _wall(lambda: ref.query(qs[:sub], k=k, workers=-1), reps=1)
                row["scipy_query_ms"] = ts * nq / sub * 1e3
                row["scipy_note"] = f"scaled from {sub} queries"
            else:
                row["scipy_query_ms"] = _wall(lambda: ref.query(qs, k=k, workers=-1),
                                              reps=2) * 1e3
        # cupyx
        if CupyxKDTree is not None:
            dc, qc = cp.asarray(data), cp.asarray(qs)
            try:
                row["cupyx_build_ms"] = time_gpu(lambda: CupyxKDTree(dc), warmup=1,
                                                 reps=3) * 1e3
                tc = CupyxKDTree(dc)
                if m > 8:
                    sub = max(1, nq // 20)
                    row["cupyx_query_ms"] = time_gpu(lambda: tc.query(qc[:sub], k=k),
                                                     warmup=0, reps=1) * 1e3 * nq / sub
                    row["cupyx_note"] = f"scaled from {sub} queries"
                else:
                    row["cupyx_query_ms"] = time_gpu(lambda: tc.query(qc, k=k), warmup=1,
                                                     reps=3) * 1e3
            except Exception as e:  # record, do not stop the run
                row["cupyx_error"] = repr(e)[:200]
        rows.append(row)
        print(row, flush=True)

    cols = ["case", "n", "m", "k", "build_ms", "query_ms", "Mq/s", "scipy_build_ms",
            "scipy_query_ms", "cupyx_build_ms", "cupyx_query_ms", "max_rel_err", "same_idx"]
    print_table(rows, cols)
    os.makedirs(args.out, exist_ok=True)
    write_json(Path(args.out) / "spatial.json",
               {"env": environment(), "copy_gbps": gbps, "cpu_count": os.cpu_count(),
                "rows": rows})


if __name__ == "__main__":
    main()
