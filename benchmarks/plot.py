"""PNG plots of a bench_namespace run, one per family of functions, against the peers and the
copy ceiling.

    python benchmarks/plot.py NAMESPACE_JSON OUTDIR [--size large]

For each family (reductions, scans, sorting, sets, searching and masks, gathers, manipulation,
elementwise on views, linear algebra) one horizontal bar chart: each case's effective
bandwidth as a fraction of the device-to-device copy measured in the same run (the dashed line
at 1.0), for xp_cuda, torch and CuPy side by side; cases whose bytes mean nothing (the set
functions, searchsorted, sort) are drawn as the peers' speed relative to xp_cuda's instead
(xp_cuda = 1; longer bars are faster). Needs matplotlib (the `plots` extra).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

IMPLS = ("xp_cuda", "torch", "cupy")
CAP = 1.5  # bars end here; a longer one (a view: no bytes moved) carries its value
COLOURS = {"xp_cuda": "#2b7bba", "torch": "#e8743b", "cupy": "#6aa84f"}
# family -> the functions whose cases it draws (the case name up to its first parenthesis)
FAMILIES = {
    "reductions": ("sum", "prod", "mean", "var", "std", "min", "max", "argmin", "argmax", "all",
                   "any", "linalg.vector_norm", "linalg.matrix_norm", "linalg.trace"),
    "scans": ("cumulative_sum",),
    "sorting": ("sort", "argsort"),
    "sets": ("unique_values", "unique_counts", "unique_inverse", "unique_all"),
    "searching and masks": ("searchsorted", "nonzero", "x[x > 0]", "where"),
    "gathers": ("take",),
    "manipulation": ("concat", "stack", "flip", "roll", "repeat", "tile", "moveaxis", "reshape",
                     "astype"),
    "elementwise on views": ("x[::2] + y[::2]", "(n, 1) + (1, m)", "x.T + y"),
    "linear algebra": ("matmul", "linalg.solve"),
}


def _function(case: str) -> str:
    name = case.split(" [", 1)[0]
    for fam_names in FAMILIES.values():
        for f in fam_names:
            if name == f or name.startswith(f + "("):
                return f
    return name.split("(", 1)[0]


def families(rows, size: str) -> dict:
    """family -> [(case, {impl: row})] of the run's cases of that size."""
    by_case: dict = {}
    for r in rows:
        if "ms" not in r or not r["case"].endswith(f"[{size}]") or r["impl"] not in IMPLS:
            continue
        by_case.setdefault(r["case"], {})[r["impl"]] = r
    out: dict = {}
    for case, impls in by_case.items():
        f = _function(case)
        fam = next((k for k, v in FAMILIES.items() if f in v), None)
        if fam is not None and "xp_cuda" in impls:
            out.setdefault(fam, []).append((case, impls))
    return out


def plot_family(plt, name, cases, copy_gbps, path):
    with_bytes = all("vs_copy" in impls["xp_cuda"] for _, impls in cases)
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(cases) + 1.4))
    height = 0.8 / len(IMPLS)
    labels, named = [], set()
    for i, (case, impls) in enumerate(sorted(cases)):
        labels.append(case.rsplit(" [", 1)[0])
        for j, impl in enumerate(IMPLS):
            r = impls.get(impl)
            if r is None:
                continue
            value = (r.get("vs_copy") if with_bytes else
                     impls["xp_cuda"]["ms"] / r["ms"])
            if value is None:
                continue
            y = i + (j - 1) * height
            ax.barh(y, min(value, CAP), height, color=COLOURS[impl],
                    label=None if impl in named else impl)
            named.add(impl)
            if value > CAP:  # a view counted as if copied (flip, reshape): the value written
                ax.text(CAP, y, f" {value:.0f}x", va="center", fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # the first case on top
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlim(0, CAP * 1.12)
    ax.set_xlabel(f"GB/s as a fraction of the copy ({copy_gbps:.0f} GB/s, dashed)" if with_bytes
                  else "speed relative to xp_cuda (xp_cuda = 1, dashed; longer is faster)")
    ax.set_title(name)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="namespace.json of benchmarks/bench_namespace.py --out")
    ap.add_argument("outdir")
    ap.add_argument("--size", default="large", choices=("large", "small"))
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot: matplotlib is not installed (pip install -e .[plots])", file=sys.stderr)
        return 2
    data = json.loads(Path(args.json).read_text())
    copy = next((r["GB/s"] for r in data["rows"] if r["case"].startswith("copy")), float("nan"))
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, cases in families(data["rows"], args.size).items():
        path = out / f"{name.replace(' ', '_')}_{args.size}.png"
        plot_family(plt, f"{name} ({args.size})", cases, copy, path)
        written.append(path)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
