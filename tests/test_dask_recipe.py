"""docs/dask.md, the Dask recipe: the page's ```python blocks run in order as one module (so
the recipe cannot rot), and the functions they define are compared with NumPy in float64 on
random non-zero data: float32, float64, int32, int64 and bool where the function takes it;
uneven chunks, chunks of one element, a single chunk, zero-length chunks, strided and
transposed blocks; 0-d and empty arrays. Exact where the mathematics is exact (integers,
where, max, min, argmax, roll), a tolerance only where floating-point rounding or the order of
a reduction enters.

Every test runs with NumPy chunks (CI, on cpu) and, marked `cuda`, with CuPy chunks on a GPU
machine (`pytest -m cuda`; skipped where no GPU is usable). The page's ```py blocks need a GPU:
they run in `test_the_pages_gpu_lines`, after the python blocks.
"""
from __future__ import annotations

import re
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed (pip install -e .[test])")
da = pytest.importorskip("dask.array")

import xp_cuda as xp  # noqa: E402
from xp_cuda._devices import cuda_device_count  # noqa: E402

PAGE = Path(__file__).resolve().parent.parent / "docs" / "dask.md"
_GPUS = cuda_device_count()

KINDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("cupy", id="cupy",
                 marks=[pytest.mark.cuda,
                        pytest.mark.skipif(_GPUS == 0, reason="no usable CUDA GPU here")]),
]
FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
NUMERIC = FLOATS + INTS

# (7, 10) arrays in every chunking the tests use: uneven last chunks, chunks of one element,
# one chunk, zero-length chunks, strided blocks (a view of a larger array), transposed blocks
LAYOUTS = {
    "uneven": (3, 4),
    "ones": (1, 1),
    "single": -1,
    "zero": ((0, 3, 0, 4), (5, 0, 5)),
    "strided": (4, 3),
    "transposed": (5, 6),
}
SHAPE = (7, 10)


def _blocks(lang: str) -> list[tuple[int, str]]:
    """The page's fenced blocks of ``lang``, each with the line its code starts on."""
    text = PAGE.read_text()
    return [(text.count("\n", 0, m.start(1)), m.group(1))
            for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)]


def _run(blocks, ns: dict) -> dict:
    for line, code in blocks:  # padded so that a traceback names the page's own line
        exec(compile("\n" * line + code, str(PAGE), "exec"), ns)
    return ns


@pytest.fixture(scope="module")
def R():
    """The page's code as the module a library would copy it into (importable: Dask then
    tokenizes its functions by name, as it would a library's, not by value)."""
    name = "_dask_md_recipe"
    page = types.ModuleType(name)
    sys.modules[name] = page
    try:
        _run(_blocks("python"), page.__dict__)
        yield page
    finally:
        del sys.modules[name]


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


# ---- helpers ------------------------------------------------------------------------------------

def lib(kind):
    if kind == "cupy":
        import cupy
        return cupy
    return np


def data(rng, shape, dtype) -> np.ndarray:
    """Random values of ``dtype``, never zero (bools: both values)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        a = rng.integers(-50, 50, size=shape).astype(dtype)
    else:
        a = rng.uniform(-4.0, 4.0, size=shape).astype(dtype)
    a[a == 0] = 1
    return a


def dask_of(a: np.ndarray, kind: str, layout: str = "uneven", chunks=None):
    """A Dask array of a's values with blocks of ``kind`` (NumPy or CuPy) in ``layout``."""
    m = lib(kind)
    if layout == "strided":  # every block a strided view; the skipped elements, if ever read,
        base = np.full((2 * a.shape[0], 3 * a.shape[1]) + a.shape[2:], 99, dtype=a.dtype)
        base[::2, ::3] = a   # would show as 99s
        arr = m.asarray(base)[::2, ::3]
    elif layout == "transposed":  # blocks in column-major order
        arr = m.asarray(np.ascontiguousarray(a.T)).T
    else:
        arr = m.asarray(a)
    return da.from_array(arr, chunks=LAYOUTS.get(layout, -1) if chunks is None else chunks)


def host(r, kind) -> np.ndarray:
    """A computed result as NumPy, after checking it is an array of the chunks' kind."""
    assert type(r) is lib(kind).ndarray, type(r)
    return r.get() if kind == "cupy" else r


def check(got, ref, dtype, kind, *, exact, rtol=None, atol=0.0, what=""):
    """``got`` (computed from a Dask array of ``kind``) against the float64 (or exact integer)
    NumPy reference ``ref``: dtype, shape and values."""
    g = host(got, kind)
    assert g.dtype == np.dtype(dtype), (what, g.dtype, dtype)
    assert g.shape == np.shape(ref), (what, g.shape, np.shape(ref))
    if exact:
        assert np.array_equal(g, np.asarray(ref).astype(dtype), equal_nan=True), what
    else:
        if rtol is None:
            rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(g.astype(np.float64), ref, rtol=rtol, atol=atol,
                                   err_msg=what)


def check_meta(r, kind, dtype):
    """A result's meta: an empty array of the chunks' kind, in the result's dtype."""
    assert type(r._meta) is lib(kind).ndarray, type(r._meta)
    assert r.dtype == np.dtype(dtype) and r._meta.dtype == np.dtype(dtype)


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps) if np.dtype(dtype).kind == "f" else 0.0


# ---- the page ---------------------------------------------------------------------------------

def test_the_page_runs_in_order_and_defines_the_recipe(R):
    assert len(_blocks("python")) >= 9 and len(_blocks("py")) >= 1
    for name in ("to_xp", "to_block", "xp_dtype", "meta_for", "on_blocks", "map_blocks_xp",
                 "leaky_relu", "in_range", "softmax", "row_norms", "fma", "laplacian",
                 "laplacian_dask", "reduced_dtype", "xp_reduction", "moments", "argmax"):
        assert callable(getattr(R, name)), name


# ---- the doors ----------------------------------------------------------------------------------

def _ptr(a, kind) -> int:
    if kind == "cupy":
        return a.data.ptr
    return a.__array_interface__["data"][0]


def test_the_doors_share_memory_both_ways(R, kind, rng):
    m = lib(kind)
    a = m.asarray(data(rng, (6, 5), "float32"))
    x = R.to_xp(a)
    assert type(x) is type(xp.asarray(1.0)) and x.dtype == xp.float32 and x.shape == (6, 5)
    assert str(x.device) == ("cpu" if kind == "numpy" else f"cuda:{a.device.id}")
    b = R.to_block(x)
    assert type(b) is m.ndarray and _ptr(b, kind) == _ptr(a, kind)  # in and out: no copy
    r = x * 2
    assert _ptr(R.to_block(r), kind) == _ptr(R.to_block(r), kind)  # the result's own memory
    v = R.to_xp(a[1::2, ::-2])  # a strided view (negative step included) enters as it is
    assert np.array_equal(host(R.to_block(v), kind), host(a, kind)[1::2, ::-2])


def test_the_doors_take_read_only_broadcast_0d_and_scalar_blocks(R, kind):
    m = lib(kind)
    if kind == "numpy":
        ro = np.arange(1.0, 7.0)
        ro.flags.writeable = False
        assert np.array_equal(R.to_block(R.to_xp(ro) + 1), ro + 1)
    bc = m.broadcast_to(m.arange(1.0, 4.0), (4, 3))  # zero strides, as Dask's broadcast_to makes
    assert np.array_equal(host(R.to_block(R.to_xp(bc) * 2), kind), np.tile([2.0, 4, 6], (4, 1)))
    z = R.to_xp(m.asarray(2.5))
    assert z.shape == () and z.dtype == xp.float64
    s = R.to_xp(np.float32(2.5))  # NumPy returns 0-d results as scalars: they enter too
    assert s.shape == () and s.dtype == xp.float32 and str(s.device) == "cpu"
    assert R.xp_dtype(m.asarray([1, 2], dtype=m.int32)) == xp.int32
    assert R.xp_dtype(da.ones(3, dtype=bool)) == xp.bool


# ---- 1. blocks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_map_blocks_of_an_elementwise_function(R, kind, rng, layout, dtype):
    a = data(rng, SHAPE, dtype)
    x = dask_of(a, kind, layout)
    slope = 0.25 if dtype in FLOATS else 3  # a power of two: slope * a is exact in float32
    y = R.map_blocks_xp(R.leaky_relu, x, slope=slope, dtype=R.xp_dtype(x))
    check_meta(y, kind, dtype)
    a64 = a.astype(np.float64)
    check(y.compute(), np.where(a64 > 0, a64, slope * a64), dtype, kind, exact=True)
    mask = R.map_blocks_xp(R.in_range, x, lo=-2, hi=3, dtype=xp.bool)
    check_meta(mask, kind, "bool")
    check(mask.compute(), (a64 >= -2) & (a64 < 3), "bool", kind, exact=True)


def test_meta_given_means_no_call_before_compute(R, kind, rng):
    """With meta from map_blocks_xp the function runs once per block at compute, never on a
    made-up block; with dtype alone Dask probes it on an empty array (the page says so)."""
    seen = []

    def spy(x, /, *, slope):
        seen.append(x.shape)
        return R.leaky_relu(x, slope=slope)

    x = dask_of(data(rng, SHAPE, "float64"), kind, "uneven")
    y = R.map_blocks_xp(spy, x, slope=0.5, dtype=xp.float64)
    assert seen == []
    y.compute()
    assert sorted(seen) == sorted(b.shape for b in x.blocks.ravel())
    seen.clear()
    da.map_blocks(R.on_blocks(spy), x, slope=0.5, dtype=np.float64)
    assert seen == [(0, 0)]  # the probe that meta= avoids


def test_block_info_reaches_the_function(R, kind, rng):
    def offset_rows(x, /, *, block_info=None):
        (r0, _), _ = block_info[0]["array-location"]
        return x + r0
    a = data(rng, SHAPE, "int64")
    y = R.map_blocks_xp(offset_rows, dask_of(a, kind), dtype=xp.int64)
    rows = np.repeat(np.arange(0, 7, 3), [3, 3, 1])[:, None]
    check(y.compute(), a + rows, "int64", kind, exact=True)


@pytest.mark.parametrize("layout", ["uneven", "ones", "single", "strided", "transposed"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_row_functions_after_a_rechunk(R, kind, rng, layout, dtype):
    a = data(rng, SHAPE, dtype)
    x = dask_of(a, kind, layout).rechunk({1: -1})
    p = R.map_blocks_xp(R.softmax, x, dtype=R.xp_dtype(x))
    check_meta(p, kind, dtype)
    a64 = a.astype(np.float64)
    e = np.exp(a64 - a64.max(axis=1, keepdims=True))
    check(p.compute(), e / e.sum(axis=1, keepdims=True), dtype, kind, exact=False,
          rtol=20 * eps(dtype))
    n = R.map_blocks_xp(R.row_norms, x, dtype=R.xp_dtype(x), drop_axis=1)
    assert n.shape == (7,) and n.chunks == (x.chunks[0],)
    check(n.compute(), np.sqrt((a64 * a64).sum(axis=1)), dtype, kind, exact=False,
          rtol=20 * eps(dtype))


@pytest.mark.parametrize("dtypes,out", [
    (("float64", "float64", "float64"), "float64"),
    (("float32", "float32", "float32"), "float32"),
    (("float64", "float32", "float32"), "float64"),
    (("int32", "int32", "int32"), "int32"),
    (("int32", "int64", "int32"), "int64"),
])
@pytest.mark.parametrize("layout", ["uneven", "ones", "single", "strided", "transposed"])
def test_several_inputs_with_broadcasting(R, kind, rng, dtypes, out, layout):
    a = data(rng, SHAPE, dtypes[0])
    c = data(rng, (7, 1), dtypes[1])
    r = data(rng, (10,), dtypes[2])
    x = dask_of(a, kind, layout)
    col = dask_of(c, kind, chunks=(x.chunks[0], 1))
    row = dask_of(r, kind, chunks=(x.chunks[1],))
    dtype = xp.result_type(*(R.xp_dtype(v) for v in (x, col, row)))
    f = R.map_blocks_xp(R.fma, x, col, row, dtype=dtype)
    check_meta(f, kind, out)
    ref = a.astype(np.float64) * c + r
    tol = dict(exact=True) if out in INTS else dict(
        exact=False, rtol=2 * eps(out), atol=2 * eps(out) * float(np.abs(ref).max()))
    check(f.compute(), ref, out, kind, **tol)
    # the same with blockwise's index strings, as the page says
    b = da.blockwise(R.on_blocks(R.fma), "ij", x, "ij", col, "ij", row, "j",
                     meta=R.meta_for(x, dtype))
    check(b.compute(), ref, out, kind, **tol)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("shape,chunks", [
    ((12,), 5), ((12,), 1), ((12,), -1),
    (SHAPE, (3, 4)), (SHAPE, (1, 3)), (SHAPE, -1),
    ((4, 5, 6), (3, 2, 4)),
])
def test_map_overlap_stencil(R, kind, rng, dtype, shape, chunks):
    a = data(rng, shape, dtype)
    x = dask_of(a, kind, chunks=chunks)
    y = R.laplacian_dask(x)
    check_meta(y, kind, dtype)
    a64 = a.astype(np.float64)
    ref = -2 * a.ndim * a64
    for axis in range(a.ndim):
        ref = ref + np.roll(a64, 1, axis=axis) + np.roll(a64, -1, axis=axis)
    tol = dict(exact=True) if dtype in INTS else dict(
        exact=False, rtol=0, atol=8 * eps(dtype) * float(np.abs(a64).max()) * 2 * a.ndim)
    check(y.compute(), ref, dtype, kind, **tol)
    if kind == "numpy":  # on cpu the same operations in the same order: bit for bit
        assert np.array_equal(y.compute(), R.laplacian(a))


# ---- 2. reductions --------------------------------------------------------------------------

AXES = [None, 0, 1, (0, 1), -1]


def _reduction_data(rng, name, dtype):
    if name != "prod":
        return data(rng, SHAPE, dtype)
    if dtype in INTS:  # products that fit: mostly ones and minus ones, a few twos
        return rng.choice(np.array([-1, 1, 1, 1, 2], dtype=dtype), size=SHAPE)
    return rng.uniform(0.8, 1.25, size=SHAPE).astype(dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_associative_reductions(R, kind, rng, layout, dtype, name):
    a = _reduction_data(rng, name, dtype)
    x = dask_of(a, kind, layout)
    out = R.reduced_dtype(name, R.xp_dtype(x))
    assert out == getattr(xp, name)(xp.asarray(a[:1, :1])).dtype  # the standard's rule
    ref_fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[name]
    a64 = a.astype(np.float64) if dtype in FLOATS else a.astype(np.int64)
    cases = [(axis, keepdims, split_every) for axis in AXES
             for keepdims, split_every in ((False, None), (True, 2), (False, 3))]
    graphs = [R.xp_reduction(x, name, axis=axis, keepdims=keepdims, split_every=split_every)
              for axis, keepdims, split_every in cases]
    for r in graphs:
        check_meta(r, kind, np.dtype(out))
    for (axis, keepdims, split_every), got in zip(cases, dask.compute(*graphs)):
        ref = ref_fn(a64, axis=axis, keepdims=keepdims)
        what = f"{name} axis={axis} keepdims={keepdims} split_every={split_every}"
        if name in ("max", "min") or dtype in INTS:
            check(got, ref, np.dtype(out), kind, exact=True, what=what)
        elif name == "sum":
            check(got, ref, np.dtype(out), kind, exact=False, rtol=0,
                  atol=4 * eps(dtype) * float(np.abs(a64).sum()), what=what)
        else:
            check(got, ref, np.dtype(out), kind, exact=False, rtol=4 * a.size * eps(dtype),
                  what=what)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_any_and_all_of_bools(R, kind, rng, layout):
    a = data(rng, SHAPE, "bool")
    a[:, 3] = True  # a column of all True, so that all() is not always False
    a[2, :] = False
    x = dask_of(a, kind, layout)
    cases = [(name, axis, keepdims, split_every) for name in ("any", "all") for axis in AXES
             for keepdims, split_every in ((False, None), (True, 2))]
    graphs = [R.xp_reduction(x, name, axis=axis, keepdims=keepdims, split_every=split_every)
              for name, axis, keepdims, split_every in cases]
    for (name, axis, keepdims, _), r, got in zip(cases, graphs, dask.compute(*graphs)):
        check_meta(r, kind, "bool")
        ref = getattr(np, name)(a, axis=axis, keepdims=keepdims)
        check(got, ref, "bool", kind, exact=True, what=f"{name} {axis}")


def test_the_standards_rules_hold_inside_the_blocks(R, kind):
    x = dask_of(np.array([True, False, True]), kind, chunks=2)
    with pytest.raises(TypeError, match="sum requires a numeric dtype"):
        R.xp_reduction(x, "sum").compute()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
def test_mean_var_std(R, kind, rng, layout, dtype):
    a = data(rng, SHAPE, dtype)
    x = dask_of(a, kind, layout)
    out = dtype if dtype in FLOATS else "float64"  # integers and bools: float64, as NumPy
    a64 = a.astype(np.float64)
    tol = 1e-5 if out == "float32" else 1e-12
    cases = [(stat, ddof, axis, keepdims, split_every)
             for stat, ddof in (("mean", 0), ("var", 0), ("var", 1), ("std", 1))
             for axis in AXES for keepdims, split_every in ((False, None), (True, 2))]
    graphs = [R.moments(x, stat, axis=axis, keepdims=keepdims, ddof=ddof,
                        split_every=split_every)
              for stat, ddof, axis, keepdims, split_every in cases]
    for (stat, ddof, axis, keepdims, split_every), r, got in zip(cases, graphs,
                                                                 dask.compute(*graphs)):
        check_meta(r, kind, out)
        kw = dict(axis=axis, keepdims=keepdims)
        ref = np.mean(a64, **kw) if stat == "mean" else getattr(np, stat)(a64, ddof=ddof, **kw)
        check(got, ref, out, kind, exact=False, rtol=tol,
              atol=tol * float(np.abs(a64).max()),  # a mean near zero
              what=f"{stat} ddof={ddof} axis={axis} split_every={split_every}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_variance_keeps_its_digits_far_from_zero(R, kind, rng, dtype):
    """Data far from zero with a small spread: the combine of counts, means and M2 keeps the
    variance to a few ulps; the sum of squares minus the square of the sum loses all of it."""
    centre = 1e4 if dtype == "float32" else 1e9
    a = (centre + rng.uniform(-1.0, 1.0, size=4000)).astype(dtype)
    x = dask_of(a, kind, chunks=33)
    ref = np.var(a.astype(np.float64))
    got = host(R.moments(x, "var", split_every=4).compute(), kind)
    assert abs(float(got) - ref) <= 1e-3 * ref, (got, ref)
    a64 = a.astype(np.float64)
    naive = np.mean(a64 * a64) - np.mean(a64) ** 2 if dtype == "float64" else None
    if naive is not None:
        assert abs(naive - ref) > 1e-2 * ref  # what the recipe does not do


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_argmax(R, kind, rng, layout, dtype):
    a = rng.integers(0, 4, size=SHAPE).astype(dtype) + 1  # few values: many ties
    x = dask_of(a, kind, layout)
    cases = [(axis, keepdims, split_every) for axis in (0, 1, -1)
             for keepdims, split_every in ((False, None), (True, 2), (False, 3))]
    graphs = [R.argmax(x, axis, keepdims=keepdims, split_every=split_every)
              for axis, keepdims, split_every in cases]
    for (axis, keepdims, split_every), r, got in zip(cases, graphs, dask.compute(*graphs)):
        check_meta(r, kind, "int64")
        check(got, np.argmax(a, axis=axis, keepdims=keepdims), "int64", kind, exact=True,
              what=f"axis={axis} keepdims={keepdims} split_every={split_every}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_argmax_takes_the_first_nan_as_numpy(R, kind, rng, dtype):
    a = data(rng, SHAPE, dtype)
    a[1, 7] = a[5, 7] = a[4, 2] = np.nan
    x = dask_of(a, kind, chunks=(2, 3))
    for axis in (0, 1):
        check(R.argmax(x, axis, split_every=2).compute(), np.argmax(a, axis=axis), "int64",
              kind, exact=True, what=f"axis={axis}")


def test_min_max_skip_empty_blocks_and_refuse_an_empty_axis(R, kind, rng):
    a = data(rng, (7,), "float64")
    x = dask_of(a, kind, chunks=((0, 3, 0, 4),))
    check(R.xp_reduction(x, "max", split_every=2).compute(), a.max(), "float64", kind,
          exact=True)
    check(R.xp_reduction(x, "min").compute(), a.min(), "float64", kind, exact=True)
    empty = dask_of(np.ones((0, 4)), kind, chunks=(2, 2))
    with pytest.raises(ValueError):
        R.xp_reduction(empty, "max").compute()
    with pytest.raises(ValueError):
        R.argmax(empty, 0).compute()
    with pytest.raises(ValueError, match="axis 2 is out of range for 2 dimensions"):
        R.argmax(empty, 2)
    check(R.xp_reduction(empty, "max", axis=1).compute(), np.ones((0, 4)).max(axis=1),
          "float64", kind, exact=True)


def test_0d_and_empty_arrays(R, kind):
    z = dask_of(np.array(3.5), kind)
    check(R.map_blocks_xp(R.leaky_relu, z + 1, slope=0.5, dtype=xp.float64).compute(), 4.5,
          "float64", kind, exact=True)
    check(R.xp_reduction(z, "sum").compute(), 3.5, "float64", kind, exact=True)
    check(R.moments(z, "var").compute(), 0.0, "float64", kind, exact=True)
    e = dask_of(np.ones((0, 5)), kind, chunks=(2, 2))
    check(R.xp_reduction(e, "sum", axis=0).compute(), np.zeros(5), "float64", kind, exact=True)
    check(R.xp_reduction(e, "sum").compute(), 0.0, "float64", kind, exact=True)
    with np.errstate(all="ignore"):
        check(R.moments(e, "mean").compute(), np.nan, "float64", kind, exact=True)
        check(R.moments(e, "var", axis=0).compute(), np.full(5, np.nan), "float64", kind,
              exact=True)
        check(R.moments(dask_of(np.ones(1), kind, chunks=1), "var", ddof=1).compute(), np.nan,
              "float64", kind, exact=True)
    m = R.map_blocks_xp(R.leaky_relu, e, slope=2.0, dtype=xp.float64)
    check(m.compute(), np.ones((0, 5)), "float64", kind, exact=True)


def test_the_chunk_probe_does_no_work(R, kind, rng, monkeypatch):
    """da.reduction probes chunk while it builds the graph; the recipe's chunks see the
    computing_meta flag and return at once: no block enters xp_cuda before compute."""
    entered = []
    door = R.to_xp
    monkeypatch.setattr(R, "to_xp", lambda b: entered.append(b.shape) or door(b))
    x = dask_of(data(rng, SHAPE, "float64"), kind)
    graphs = [R.xp_reduction(x, "sum"), R.moments(x, "var", axis=0), R.argmax(x, 1)]
    assert entered == []
    for g in graphs:
        g.compute()
    assert entered and (0, 0) not in entered


def test_many_blocks_on_dask_threads(R, kind, rng):
    """The default scheduler runs blocks on several threads at once."""
    a = data(rng, (4000,), "float64")
    x = dask_of(a, kind, chunks=7)
    threads = set()

    def on_thread(v, /):
        threads.add(threading.get_ident())
        return R.leaky_relu(v, slope=0.5)
    y = R.map_blocks_xp(on_thread, x, dtype=xp.float64)
    check(y.compute(scheduler="threads"), np.where(a > 0, a, 0.5 * a), "float64", kind,
          exact=True)
    check(R.moments(x, "std", split_every=8).compute(scheduler="threads"), np.std(a),
          "float64", kind, exact=False)


# ---- 3. on the GPU: the page's py lines, and a second GPU ----------------------------------------

@pytest.mark.cuda
@pytest.mark.skipif(_GPUS == 0, reason="no usable CUDA GPU here")
def test_the_pages_gpu_lines(R):
    _run(_blocks("py"), dict(vars(R)))


@pytest.mark.cuda
@pytest.mark.skipif(_GPUS < 2, reason="needs two usable CUDA GPUs")
def test_blocks_on_cuda1_are_computed_and_stay_on_cuda1(R, rng):
    import cupy
    a = data(rng, SHAPE, "float32")
    with cupy.cuda.Device(1):
        g = cupy.asarray(a)
    x = da.from_array(g, chunks=(3, 4))
    assert str(R.to_xp(g).device) == "cuda:1"
    with cupy.cuda.Device(0):  # the thread's current device is not what decides
        y = R.map_blocks_xp(R.leaky_relu, x, slope=0.25, dtype=xp.float32).compute()
        s = R.moments(x, "var", axis=0).compute()
        i = R.argmax(x, 1).compute()
    assert y.device.id == 1 and s.device.id == 1 and i.device.id == 1
    assert np.array_equal(y.get(), np.where(a > 0, a, np.float32(0.25) * a))
    np.testing.assert_allclose(s.get(), np.var(a.astype(np.float64), axis=0), rtol=1e-5)
    assert np.array_equal(i.get(), np.argmax(a, axis=1))
