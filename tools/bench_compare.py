"""Compare two benchmark runs (folders of bench_*.py JSON) row by row.

    python tools/bench_compare.py OLD_DIR NEW_DIR [--impl xp_cuda] [--limit 0.02]

For every row of every JSON file in both folders, keyed by (file, case, impl), it prints the
same-run ratio to the copy ("vs_copy", or "vs_memset" for creation) of the old and the new run
and their quotient; for the host-time section of the elementwise benchmark, microseconds; for
rows with no ratio to a copy (namespace: small, compute-bound and host-time rows; workloads),
the time itself ("ms" or "us", lower is better). The
ratios are taken against a copy measured in the same run, so two runs on one machine compare
even when the machine's bandwidth drifts between them. Rows of our own implementation whose
ratio fell by more than --limit are listed at the end, and the exit code is 1 when any did.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _rows(path: Path) -> dict:
    data = json.loads(path.read_text())
    out = {}
    for r in data.get("rows", []):
        case = r.get("case", " ".join(f"{k}={v}" for k, v in r.items()
                                      if k in ("n", "dims", "k", "d", "m")))
        key = (path.stem, str(case), str(r.get("impl", r.get("variant", "xp_cuda"))))
        for metric in ("vs_memset", "vs_copy"):
            if isinstance(r.get(metric), (int, float)):
                out[key] = (metric, float(r[metric]))
                break
        else:  # spatial: our times (its copy rate is recorded beside, not a ratio per row)
            for metric in ("build_ms", "query_ms"):
                if isinstance(r.get(metric), (int, float)):
                    out[key[:2] + (f"{key[2]} {metric[:-3]}",)] = ("ms", float(r[metric]))
            # namespace and workloads: launch-bound and compute-bound rows (no bytes model),
            # host-time rows: the time itself
            if not any(k in r for k in ("build_ms", "query_ms")):
                for metric in ("us", "ms"):
                    if isinstance(r.get(metric), (int, float)):
                        out[key] = (metric, float(r[metric]))
                        break
    for impl, v in (data.get("host_overhead_us") or {}).items():
        if isinstance(v, dict):
            for mode, t in v.items():
                if isinstance(t, (int, float)):
                    out[(path.stem, f"host {mode}", impl)] = ("us", float(t))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--impl", default="xp_cuda", help="the implementation held to --limit")
    ap.add_argument("--limit", type=float, default=0.02)
    args = ap.parse_args(argv)
    worse = []
    print(f"{'benchmark':12} {'case':34} {'impl':16} {'metric':9} {'old':>9} {'new':>9} "
          f"{'new/old':>8}")
    for f in sorted(args.new.glob("*.json")):
        if f.name == "summary.json" or not (args.old / f.name).exists():
            continue
        old, new = _rows(args.old / f.name), _rows(f)
        for key in sorted(set(old) & set(new), key=lambda k: (k[0], k[1], k[2])):
            (metric, a), (_, b) = old[key], new[key]
            q = b / a if a else float("nan")
            print(f"{key[0]:12} {key[1][:34]:34} {key[2][:16]:16} {metric:9} {a:9.4g} {b:9.4g} "
                  f"{q:8.4f}")
            lower_is_better = metric in ("us", "ms")
            if key[2].split()[0] == args.impl or key[1].startswith("host"):
                if (q > 1 + args.limit) if lower_is_better else (q < 1 - args.limit):
                    worse.append((key, a, b, q))
    if worse:
        print(f"\nbeyond {args.limit:.0%}:")
        for key, a, b, q in worse:
            print(f"  {key}: {a:.4g} -> {b:.4g} ({q:.4f})")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
