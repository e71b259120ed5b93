"""Build the kernels the package ships: xp_cuda/_kernels/prebuilt/<arch>.zip.

    python tools/prebuild.py [--archs sm_80,sm_90,sm_100] [--processes N] [--check] [--fresh]

A new user's first calls should load kernels, not wait for NVRTC (seconds per script). This
lists the kernels everyday code launches first (COMMON below: the default dtypes and bool,
contiguous operands), compiles each for every shipped arch, and writes one zip per arch whose
entry names are _runtime.shipped_key(source, options, arch). Nothing else is shipped: any
other kernel compiles on first use (one kernel, a fraction of a second) into the disk cache.

--check lists what is missing from the shipped archives for the current sources and exits 1
when anything is (tests/test_prebuilt.py runs the same check in CI: a kernel source changed
without running this tool).

It lives in tools/ because enumerating what can be launched needs the spec layer's tables.
"""
from __future__ import annotations

import argparse
import os
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (and re-imported by spawned workers)
    sys.path.insert(0, str(ROOT))

ARCHS = ("sm_80", "sm_90", "sm_100")  # Ampere/Ada (8.x), Hopper, Blackwell datacenter
COMMON = ("float32", "float64", "int64", "bool")
SMS = 132  # a reduction's source does not depend on it (tests/test_prebuilt.py checks)


def _standin(dtype, shape):
    """An array layout without memory: what the planners read (itemsize, shape, strides)."""
    import numpy as np
    from numpy.lib.stride_tricks import as_strided
    a = np.zeros(1, dtype=dtype)
    strides, step = [], a.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return as_strided(a, shape, tuple(reversed(strides)))


def elementwise_units():
    from xp_cuda._dtypes import ALL_DTYPES, in_category
    from xp_cuda._elementwise import ROWS, result_dtype
    from xp_cuda._kernels import elementwise as E

    common = [d for d in ALL_DTYPES if d.name in COMMON]
    for name, (arity, cat, _, _) in ROWS.items():  # every revision's functions
        for d in common:
            if not in_category(d, cat):
                continue
            dts = (d,) * arity
            tc, to = result_dtype(name, list(dts))
            names = tuple(x.name for x in dts)
            for lay in (("c",) if arity == 1 else ("cc", "cs", "sc")):
                yield (E.layout_unit(name, names, tc.name, to.name, lay), E.OPTIONS,
                       E.kernel_name(name, names, lay))


def _programs(graph, outs, arrays):
    """The sources fusion.Launch compiles for these layouts (its tuned variants included)."""
    from xp_cuda._kernels import fusion as F
    for p in F.programs(graph, outs, arrays, SMS, tune=True):
        yield p.source, F.OPTIONS, p.name


REDUCTIONS = {"sum": [("float32", "float32"), ("float64", "float64"), ("int64", "int64"),
                      ("bool", "int64")],
              "prod": [("float32", "float32"), ("float64", "float64"), ("int64", "int64")],
              "max": [(d, d) for d in ("float32", "float64", "int64")],
              "min": [(d, d) for d in ("float32", "float64", "int64")],
              "mean": [("float32", "float32"), ("float64", "float64")],
              "all": [("bool", "bool")], "any": [("bool", "bool")]}
LAYOUTS = [((1000,), (0,)), ((64, 48), (0,)), ((64, 48), (1,)), ((64, 48), (0, 1))]


def reduction_units():
    from xp_cuda._kernels import reduction as R
    for kind, pairs in REDUCTIONS.items():
        for in_name, acc in pairs:
            for shape, axes in LAYOUTS:
                x = _standin(in_name, shape)
                g, out = R.graph(kind, in_name, acc, shape, axes, False)
                yield from _programs(g, [out], [x])
    for in_name in ("float32", "float64", "int64", "bool"):  # count_nonzero (2024.12)
        for shape, axes in LAYOUTS:
            g, out = R.count_graph(in_name, shape, axes, False)
            yield from _programs(g, [out], [_standin(in_name, shape)])


def eager_units():
    from xp_cuda._kernels import eager as K
    from xp_cuda._kernels.fusion_ir import DName, Graph, Node, Op
    for shape in ((1000,), (64, 48)):
        for d in COMMON:
            arrays = [_standin("bool", shape), _standin(d, shape), _standin(d, shape)]
            ins = K._inputs(arrays)
            yield from _programs(Graph(ins), [Node(Op.WHERE, ins, DName(d), shape)], arrays)
            for t in COMMON:
                if t != d:
                    arrays = [_standin(d, shape)]
                    ins = K._inputs(arrays)
                    yield from _programs(Graph(ins), [Node(Op.ASTYPE, ins, DName(t), shape)],
                                         arrays)


def creation_units():
    from xp_cuda._kernels import creation as C
    for name, unit in C.units().items():
        yield unit, (), name


def vecdot_units():
    from xp_cuda._kernels import _runtime as rt
    from xp_cuda._kernels import vecdot as V
    for d in ("float32", "float64"):
        yield rt.source("vecdot.cu"), V.compile_options(d, d, d), "xp_vecdot"


def scan_units():
    from xp_cuda._kernels import scan as S
    for name, unit in S.units().items():
        yield unit, (), name


def moment_units():
    """var/std, argmax/argmin and vector norms: float32/float64, the reduction layouts."""
    from xp_cuda._kernels import reduction as R
    for d in ("float32", "float64"):
        for shape, axes in LAYOUTS:
            x = _standin(d, shape)
            for kind in ("var", "std"):
                g, out = R.moments_graph(kind, d, shape, axes, 0.0, False, d)
                yield from _programs(g, [out], [x])
            g, out = R.norm_graph(d, shape, 2, axes, False, d)
            yield from _programs(g, [out], [x])
    for d in ("float32", "float64", "int64"):
        for shape, axis in (((1000,), None), ((64, 48), 0), ((64, 48), 1), ((64, 48), None)):
            for kind in ("argmax", "argmin"):
                g, out = R.arg_graph(kind, d, shape, axis, False)
                yield from _programs(g, [out], [_standin(d, shape)])


def sort_units():
    """The sorts of 4- and 8-byte keys (float32/int32, float64/int64), the histogram set
    functions (in every unit), the hash-table and sort-then-runs set functions of long
    inputs and searchsorted."""
    from xp_cuda._kernels import sort as S
    for name, unit in S.units().items():
        if name.startswith(("xp_segsort_4", "xp_segsort_8", "xp_warpsort_4", "xp_warpsort_8",
                            "xp_searchsorted_4", "xp_searchsorted_8", "xp_unique",
                            "xp_sortuniq_keys_4", "xp_sortuniq_keys_8", "xp_sortuniq_runs_4",
                            "xp_sortuniq_runs_8", "xp_hashuniq_",
                            "xp_isin_4", "xp_isin_8")):
            yield unit, (), name


def copy_units():
    from xp_cuda._kernels import copy as C
    for name, unit in C.units().items():
        yield unit, (), name


FAMILIES = {"elementwise": elementwise_units, "reduction": reduction_units,
            "moments": moment_units, "eager": eager_units, "creation": creation_units,
            "vecdot": vecdot_units, "scan": scan_units, "sort": sort_units,
            "copy": copy_units}


def units():
    """Every (source, options, kernel name) shipped, each source once."""
    seen, out = set(), []
    for fam in FAMILIES.values():
        for src, opts, name in fam():
            if (src, tuple(opts)) not in seen:
                seen.add((src, tuple(opts)))
                out.append((src, tuple(opts), name))
    return out


def _build_one(job):
    from xp_cuda._kernels import _runtime as rt
    src, opts, name, arch = job
    return rt.shipped_key(src, opts, arch), rt._compile(src, f"{name}.cu", arch, opts, "cubin")


def missing(archs=None) -> dict:
    """arch -> number of current units absent from its shipped archive."""
    from xp_cuda._kernels import _runtime as rt
    archs = archs or rt.shipped_archs() or list(ARCHS)
    us = units()
    out = {}
    for arch in archs:
        store = rt._shipped_store(arch)
        names = store[1] if store else frozenset()
        out[arch] = sum(rt.shipped_key(s, o, arch) not in names for s, o, _ in us)
    return out


def build(archs, processes=0, fresh=False):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from xp_cuda._kernels import _runtime as rt
    us = units()
    rt.PREBUILT_DIR.mkdir(exist_ok=True)
    with ProcessPoolExecutor(max_workers=processes or os.cpu_count() or 1,
                             mp_context=get_context("spawn")) as pool:
        for arch in archs:
            path = rt.PREBUILT_DIR / f"{arch}.zip"
            keys = {rt.shipped_key(s, o, arch): (s, o, n) for s, o, n in us}
            # entries whose key (source, options, arch) is still current are kept as built:
            # a change to one kernel source recompiles that source's kernels only
            kept = {}
            if path.exists() and not fresh:
                with zipfile.ZipFile(path) as old:
                    kept = {k: old.read(k) for k in old.namelist() if k in keys}
            jobs = [(*keys[k], arch) for k in keys if k not in kept]
            tmp = rt.PREBUILT_DIR / f".{arch}.zip.tmp"
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                for key, cubin in kept.items():
                    z.writestr(key, cubin)
                for i, (key, cubin) in enumerate(pool.map(_build_one, jobs, chunksize=4), 1):
                    z.writestr(key, cubin)
                    if i % 100 == 0 or i == len(jobs):
                        print(f"\r{arch}: {i}/{len(jobs)} compiled", end="", flush=True)
            os.replace(tmp, path)
            size = path.stat().st_size
            print(f"\r{arch}: {len(keys)} kernels ({len(jobs)} compiled, {len(kept)} kept), "
                  f"{size / 2**20:.2f} MiB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument("--processes", type=int, default=0, help="worker processes (0: one per CPU)")
    ap.add_argument("--check", action="store_true", help="only report what is missing")
    ap.add_argument("--fresh", action="store_true",
                    help="compile every kernel (default: keep the current ones already built)")
    args = ap.parse_args(argv)
    archs = [a for a in args.archs.split(",") if a]
    if args.check:
        gaps = missing(archs)
        for arch, n in gaps.items():
            print(f"{arch}: {n} of {len(units())} kernels missing")
        return 1 if any(gaps.values()) else 0
    build(archs, args.processes, args.fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
