"""The kernels the package ships prebuilt, enumerated: every (source, NVRTC options, kernel
name) that everyday code launches first (COMMON: the default dtypes and bool), family by
family. tools/prebuild.py compiles them into
_kernels/prebuilt/<arch>.zip; ``xp-cuda warm`` loads each on this machine's GPUs (found in
those archives, or compiled once into the disk cache). It sits beside the namespace, not in
the kernel layer, because enumerating what can be launched needs the spec layer's tables."""
from __future__ import annotations

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
            # Every layout: strided, broadcast and 0-d operands too (x[:, None] - y[None, :],
            # x - mean(x), x[:, ::2] * 2.5: a first call waited 0.15-0.3 s for NVRTC; +2.0-3.0
            # MiB an arch) and the tiled ones of a transposed operand (x.T + y: 0.30 s for
            # float32, 0.48 s for int32 on its first use on the H200)
            for lay in E.layouts_for(names):
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
        yield rt.source("vecdot.cu"), V.compile_options(d, d, d), "vecdot_main"
    # a float32 matrix times a float64 vector (and the reverse): matmul's mixed route
    for d1, d2 in (("float32", "float64"), ("float64", "float32")):
        yield rt.source("vecdot.cu"), V.compile_options(d1, d2, "float64"), "vecdot_main"


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
    """The sorts of 4- and 8-byte keys (float32/int32, float64/int64; rows of any length), the
    histogram set functions (in every unit), the hash-table and sort-then-runs set functions
    of long inputs, searchsorted and isin."""
    from xp_cuda._kernels import sort as S
    for name, unit in S.units().items():
        if name.startswith(("xp_segsort_4", "xp_segsort_8", "xp_warpsort_4", "xp_warpsort_8",
                            "xp_searchsorted_4", "xp_searchsorted_8", "xp_unique",
                            "xp_sortuniq_keys_4", "xp_sortuniq_keys_8", "xp_sortuniq_runs_4",
                            "xp_sortuniq_runs_8", "xp_hashuniq_",
                            "xp_isin_4", "xp_isin_8", "xp_osort_hist_4", "xp_osort_hist_8",
                            "xp_osort_pass_4", "xp_osort_pass_8", "xp_osort_gather_4",
                            "xp_osort_gather_8")):
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
