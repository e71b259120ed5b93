"""Compile every generated elementwise kernel for this GPU into the kernel cache, in parallel.

    python tools/warm_cache.py [--processes N] [FUNCTION ...]

A fresh machine then never compiles on the hot path. It lives here, not in the kernel layer,
because enumerating what can be launched needs the spec layer's tables (the dtypes, the
promotion table, each function's result dtype), and the kernel layer imports nothing above it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (and re-imported by spawned workers)
    sys.path.insert(0, str(ROOT))


def all_items():
    """Every (function, input dtypes, compute dtype, output dtype) the spec layer can launch."""
    from xp_cuda._dtypes import ALL_DTYPES, PROMOTION_TABLE, in_category
    from xp_cuda._elementwise import ELEMENTWISE, result_dtype

    items = []
    for name, (arity, cat, _, _) in ELEMENTWISE.items():
        ok = [d for d in ALL_DTYPES if in_category(d, cat)]
        combos = [(d,) for d in ok] if arity == 1 else \
            [(a, b) for a in ok for b in ok if (a, b) in PROMOTION_TABLE]
        for ds in combos:
            tc, to = result_dtype(name, list(ds))
            items.append((name, tuple(d.name for d in ds), tc.name, to.name))
    return items


def _warm_one(item):
    """Every layout's kernel of one item, each its own unit (as the runtime compiles them)."""
    from xp_cuda._kernels import load_kernel
    from xp_cuda._kernels.elementwise import OPTIONS, kernel_name, layout_unit, layouts_for

    name, dtypes, tc, to = item
    for layout in layouts_for(dtypes):
        load_kernel(layout_unit(name, dtypes, tc, to, layout), kernel_name(name, dtypes, layout),
                    OPTIONS)
    return len(layouts_for(dtypes))


def warm_cache(processes: int = 0, names=None) -> int:
    """Compile (or find cached) each layout's unit of every item of ``all_items`` (only the
    functions in ``names`` when given), in ``processes`` spawned processes (0: one per CPU).
    Returns the number of kernels."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    items = [it for it in all_items() if names is None or it[0] in names]
    with ProcessPoolExecutor(max_workers=processes or os.cpu_count() or 1,
                             mp_context=get_context("spawn")) as pool:
        return sum(pool.map(_warm_one, items, chunksize=8))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=0, help="worker processes (0: one per CPU)")
    ap.add_argument("names", nargs="*", help="only these elementwise functions")
    args = ap.parse_args(argv)
    n = warm_cache(args.processes, args.names or None)
    print(n, "kernels compiled or cached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
