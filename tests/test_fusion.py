"""xp_cuda.fusion.fuse: the fused function returns what the eager function returns (dtype,
shape, values), on cpu (graph replayed through the eager functions) and on cuda (one kernel);
every generated source compiles with NVRTC (CI, no GPU needed)."""
import contextlib
import math
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xp_cuda as xp
from xp_cuda._devices import CPU, Device, cuda_device_count
from xp_cuda._array import Array
from xp_cuda._dtypes import ALL_DTYPES
from xp_cuda._elementwise import ELEMENTWISE
from xp_cuda._kernels import fusion as kfusion
import xp_cuda.fusion as xp_cuda_fusion
from xp_cuda.fusion import fuse

from helpers import random_array, to_numpy

# Functions whose CUDA result may differ from the eager result in the last bits.
TRANSCENDENTAL = {"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh",
                  "exp", "expm1", "hypot", "log", "log1p", "log2", "log10", "logaddexp", "pow",
                  "sin", "sinh", "tan", "tanh", "sqrt", "abs", "sign", "divide"}
UNARY = sorted(n for n, v in ELEMENTWISE.items() if v[0] == 1)
BINARY = sorted(n for n, v in ELEMENTWISE.items() if v[0] == 2)
SHAPES = [(3, 4), (4,), (1, 4), (3, 1), ()]
SCALARS = [0, 1, -2, 3, 0.5, -1.25, True, False, 1j, 2 - 0.5j, float("inf"), float("-inf"),
           float("nan"), -0.0, complex(float("inf"), 0), complex(0, float("nan")), xp.pi, xp.e]


def _same(a, b, loose=False):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    na, nb = to_numpy(a), to_numpy(b)
    # complex products on cuda against the cpu: the kernels never contract into FMAs, while
    # NumPy's SIMD complex loops may (seen on the GPU machine's host: 1 ulp apart)
    loose = loose or (a.device.kind != b.device.kind and a.dtype.kind == "complex")
    if loose and a.dtype.kind in ("float", "complex"):
        # a float tolerance: the narrowest precision a program computed in (a float32 sum
        # promoted to a complex128 result keeps float32's rounding)
        rtol = loose if type(loose) is float else (
            1e-4 if a.dtype in (xp.float32, xp.complex64) else 1e-10)
        if a.dtype.kind == "complex":
            # complex products with an infinite part: NaN or infinity by the order of the
            # operations (the spec's multiply: "in the remaining cases, the result is
            # implementation dependent"); a finite value against a non-finite one still fails
            both = ~np.isfinite(na) & ~np.isfinite(nb)
            na, nb = np.where(both, 0, na), np.where(both, 0, nb)
        np.testing.assert_allclose(na, nb, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(na, nb)


def _check(f, args, loose=False):
    """Fused result == eager result; returns the fused result. On cuda the eager reference
    runs on copies of the arguments on the cpu (NumPy, the reference semantics of every
    kernel): the eager cuda path was seen to misread some negative-stride views."""
    ref_args = [a.to_device(CPU) if isinstance(a, Array) else a for a in args]
    want = f(*ref_args)
    got = fuse(f)(*args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, loose)
    else:
        _same(got, want, loose)
    return got


@contextlib.contextmanager
def _vector_shape(config):
    """Fused kernels compiled meanwhile use only this (vector bytes, vectors per thread,
    threads per block)."""
    saved = kfusion.CONFIGS
    kfusion.CONFIGS = (config,)
    try:
        yield
    finally:
        kfusion.CONFIGS = saved


def _configs(device):
    """Every vector shape on cuda; on cpu no kernel runs, so one pass."""
    return kfusion.CONFIGS if device.kind == "cuda" else kfusion.CONFIGS[:1]


def _arr(rng, shape, dtype, device, small=True):
    a, _ = random_array(rng, shape, dtype, device)
    if small and dtype.kind in ("int", "uint"):  # keep integer powers and shifts tame
        a = xp.asarray(np.asarray(to_numpy(a)) % 7, device=device)
    return a


# ---- random programs: the same seeded choices whether traced or eager ------------------------
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "all", "any", "var", "std", "argmax",
              "argmin"]


def program(seed, n_ops=6, reduce=True, uses=None, whole=False):
    """A function of its array arguments making seeded random choices among valid operations
    (invalid ones raise at validation, identically traced or eager, and are skipped). With
    `whole`: first in-place updates of the arguments, and reductions in the middle (kept
    dims, broadcast back over later work) as well as at the end."""
    def f(*args):
        r = random.Random(seed)
        pool = [a for a in args if isinstance(a, xp._array.Array)]
        scal = [a for a in args if not isinstance(a, xp._array.Array)]
        if whole:
            for _ in range(r.choice([0, 0, 1, 2])):  # before any view: then they are allowed
                a = r.choice(pool)
                c = r.choice([r.choice(SCALARS), r.choice(pool)] + scal)
                op = r.choice(["+=", "-=", "*=", "/=", "&=", "**="])
                try:
                    exec(f"a {op} c", {"a": a, "c": c})
                except (TypeError, ValueError, OverflowError):
                    continue
                if uses is not None:
                    uses.add(op)
        kinds = ["u", "b", "b", "s", "p", "where", "astype", "clip", "view"]
        if whole:
            kinds += ["r", "r", "r"]
        for _ in range(n_ops * 4):
            if len(pool) >= len(args) + n_ops:
                break
            kind = r.choice(kinds)
            # (whole programs build on their latest value often: reductions feed work)
            a = pool[-1] if whole and r.random() < 0.4 else r.choice(pool)
            try:
                if kind == "r":  # a reduction feeding later work
                    name = r.choice(REDUCTIONS)
                    if a.ndim == 0:
                        continue
                    axis = r.choice([-1, -1, -1, 0]) if name not in ("argmax", "argmin") else -1
                    out = getattr(xp, name)(a, axis=axis, keepdims=r.random() < 0.8)
                elif kind == "u":
                    name = r.choice(UNARY)
                    out = getattr(xp, name)(a)
                elif kind == "b":
                    name = r.choice(BINARY)
                    out = getattr(xp, name)(a, r.choice(pool))
                elif kind in ("s", "p"):
                    c = r.choice(SCALARS) if kind == "s" or not scal else r.choice(scal)
                    op = r.choice(["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<",
                                   ">=", "==", "!="])
                    name = op
                    left = r.random() < 0.5
                    out = eval(f"c {op} a" if left else f"a {op} c", {"a": a, "c": c})
                elif kind == "where":
                    name = "where"
                    cond = xp.isnan(r.choice(pool)) if r.random() < 0.2 else \
                        r.choice(pool) == r.choice(pool)
                    out = xp.where(cond, a, r.choice(pool))
                elif kind == "astype":
                    dt = r.choice(ALL_DTYPES)
                    if a.dtype.kind in ("float", "complex") and dt.kind in ("int", "uint"):
                        continue  # out-of-range float -> int casts are undefined behaviour
                    name = "astype"
                    out = xp.astype(a, dt)
                elif kind == "clip":
                    name = "clip"
                    lo = r.choice([None, 1, r.choice(pool)])
                    hi = r.choice([None, 5, r.choice(pool)])
                    out = xp.clip(a, min=lo, max=hi)
                else:
                    name = "view"
                    if a.ndim == 0:
                        out = a[None, ...]
                    else:
                        out = r.choice([lambda: a[..., None], lambda: a[::-1, ...],
                                        lambda: a[1:, ...], lambda: a[None, ...],
                                        lambda: a[-1, ...]])()
                    if 0 in out.shape:
                        continue
            except (TypeError, ValueError, OverflowError, IndexError):
                continue
            if uses is not None:
                uses.add(name)
            pool.append(out)
        outs = [pool[-1]]
        if len(pool) > 2:
            outs.append(pool[-2])
        if reduce:
            x = r.choice(pool)
            red = r.choice(["sum", "prod", "max", "min", "mean", "all", "any"])
            axis = r.choice([None] + list(range(x.ndim)) + ([-1] * 3 if whole and x.ndim else []))
            keep = r.random() < 0.5
            try:
                outs.append(getattr(xp, red)(x, axis=axis, keepdims=keep))
                if uses is not None:
                    uses.add(red)
            except (TypeError, ValueError):
                pass
        return tuple(outs)
    return f


# whole programs: mostly one row space, so that row kernels (and their fallbacks) are drawn
WHOLE_SHAPES = [(5, 7), (5, 7), (5, 7), (7,), (1, 7), (5, 1), ()]


def _random_args(seed, device, shapes=SHAPES):
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    n = r.choice([1, 2, 3])
    if shapes is WHOLE_SHAPES and r.random() < 0.5:  # one row space of odd rows
        shapes = [r.choice([(5, 37), (3, 130), (64,), (2, 3, 9)])]
    args = [_arr(rng, r.choice(shapes), r.choice(ALL_DTYPES), device) for _ in range(n)]
    if r.random() < 0.4:
        args.append(r.choice([2, 0.75, True, -3, 1.5j]))
    return args


def _run_program(seed, device, whole=False):
    uses = set()
    args = _random_args(seed, device, WHOLE_SHAPES if whole else SHAPES)
    f = program(seed, uses=uses, whole=whole)
    f(*[xp.asarray(a.to_device(CPU), copy=True) if isinstance(a, Array) else a
        for a in args])  # fills `uses`
    loose = device.kind == "cuda" and bool(
        uses & (TRANSCENDENTAL | set(REDUCTIONS) | {"**", "/", "/=", "**="}))
    if loose and any(isinstance(a, Array) and a.dtype in (xp.float32, xp.complex64)
                     for a in args):
        loose = 1e-4
    configs = _configs(device)
    with _vector_shape(configs[seed % len(configs)]):  # each vector shape, seed by seed
        if whole:
            _inplace_check(f, args, loose)
        else:
            _check(f, args, loose)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31))
def test_random_programs_match_eager_cpu(seed):
    _run_program(seed, CPU)


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
# derandomized: the cuda side compares within a tolerance, and a chaotic step after a
# transcendental (x % c of sinh's 1-ulp different huge value) would turn another seed's
# run red at random; these seeds are fixed and pass
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True, database=None)
@given(seed=st.integers(0, 2 ** 31))
def test_random_programs_match_eager_cuda(seed):
    _run_program(seed, Device("cuda", 0))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31))
def test_random_whole_programs_match_eager_cpu(seed):
    """Reductions in the middle, in-place updates of the arguments, several outputs."""
    _run_program(seed, CPU, whole=True)


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
# derandomized: the cuda side compares within a tolerance, and a chaotic step after a
# transcendental (x % c of sinh's 1-ulp different huge value) would turn another seed's
# run red at random; these seeds are fixed and pass
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True, database=None)
@given(seed=st.integers(0, 2 ** 31))
def test_random_whole_programs_match_eager_cuda(seed):
    _run_program(seed, Device("cuda", 0), whole=True)


# ---- targeted behaviour ---------------------------------------------------------------------
def test_scalars_typed_like_eager(device, rng):
    x = _arr(rng, (5,), xp.uint8, device)
    with pytest.raises(TypeError) as e_eager:
        x + 0.5
    with pytest.raises(TypeError) as e_fused:
        fuse(lambda a: a + 0.5)(x)
    assert str(e_eager.value) == str(e_fused.value)
    with pytest.raises(OverflowError):
        fuse(lambda a: a + 300)(x)
    _check(lambda a: (a + 3, 2 * a, a > 1, a ** 2), [x])
    f32 = _arr(rng, (5,), xp.float32, device)
    _check(lambda a: (a + 0.1, a * xp.pi, a + xp.e, a / 3), [f32])


def test_scalar_arguments_are_parameters(device, rng):
    x = _arr(rng, (7,), xp.float32, device)
    i = _arr(rng, (7,), xp.int8, device)

    def f(a, b, mu, dt):
        return 1 + mu * dt * a, b * dt, mu / dt + a
    g = fuse(f)
    xc, ic = x.to_device(CPU), i.to_device(CPU)
    for mu, dt in ((0.5, 2), (-1.25, 3), (1e30, 7)):
        got, want = g(x, i, mu, dt), f(xc, ic, mu, dt)
        for u, w in zip(got, want):
            _same(u, w)
    assert len(g._cache) == 1  # new values, same kernel
    with pytest.raises(OverflowError):
        g(x, i, 0.5, 200)  # 200 does not fit int8: the eager rule, per call
    with pytest.raises(TypeError, match="move it outside"):
        fuse(lambda a, s: a * 2 if s > 0 else a)(x, 1.0)


def test_inf_nan_constants_with_newaxis(device, rng):
    x = _arr(rng, (4, 3), xp.float64, device)
    m = x[:, 0] > 0
    _check(lambda mask, a: xp.where(mask[:, xp.newaxis], a * 0 + xp.inf, -xp.inf + a), [m, x])
    _check(lambda a: (a * xp.nan, a + -0.0, a * xp.inf, xp.maximum(a, a * 0 - xp.inf)), [x])
    c = _arr(rng, (4, 3), xp.complex128, device)
    c64 = _arr(rng, (3,), xp.complex64, device)
    _check(lambda a, b: (a * complex(xp.inf, 0), a + complex(0, xp.nan),
                         b == complex(-xp.inf, xp.inf), b + 1j), [c, c64])


def test_indexing_broadcasting_and_outputs_of_different_shapes(device, rng):
    x = _arr(rng, (5, 6), xp.float32, device)
    y = _arr(rng, (6,), xp.float32, device)
    z = _arr(rng, (), xp.float32, device)

    def f(a, b, c):
        return (a[1:, ::2] * b[None, ::2] + c, a[..., None] - b[:, None], b[::-1] * c,
                a[-1, ...] + b, a[2, 3] * c)
    _check(f, [x, y, z])
    s = xp.asarray(np.arange(40.0).reshape(5, 8), device=device)[:, 1:7]  # strided input
    _check(f, [s, y, z])


@pytest.mark.parametrize("dt", ["float32", "float64", "int16", "uint8", "complex64", "bool"])
def test_vector_runs_against_eager(device, rng, dt):
    """Per-channel operands beside an input of the output's shape (fusion_plan.VECTOR_RUNS):
    aligned, one element off alignment (the element runs), a transposed input, runs of part of
    a vector, and a batch normalisation, against the eager functions on the cpu."""
    t = getattr(xp, dt)
    for shape in ((8, 6, 64), (4, 3, 5, 32), (6, 5, 6)):
        n = math.prod(shape)
        whole = _arr(rng, (n + 1,), t, device)
        m = _arr(rng, (shape[1],) + (1,) * (len(shape) - 2), t, device)
        views = [xp.reshape(whole[:n], shape), xp.reshape(whole[1:], shape),
                 xp.permute_dims(xp.reshape(whole[:n], shape[::-1]),
                                 tuple(range(len(shape)))[::-1])]
        for x in views:
            if dt == "bool":
                _check(lambda a, b: (a & b, xp.where(a, b, ~b)), [x, m])
            else:
                _check(lambda a, b: ((a - b) * b, xp.where(a != b, a, b[..., :1])), [x, m])
    if dt in ("float32", "float64"):
        x = _arr(rng, (8, 6, 64), t, device)
        _check(lambda a: (a - xp.mean(a, axis=(0, 2), keepdims=True)) / xp.sqrt(
            xp.var(a, axis=(0, 2), keepdims=True) + 1e-5), [x], loose=True)


@pytest.mark.parametrize("red", ["sum", "prod", "max", "min", "mean", "all", "any"])
def test_reductions(device, rng, red):
    cuda = device.kind == "cuda"  # each case compiles a kernel there: a representative subset
    dts = [xp.int8, xp.uint16, xp.int64, xp.float32, xp.float64, xp.complex64, xp.bool] \
        if cuda else ALL_DTYPES
    for dt in dts:
        x = _arr(rng, (6, 5, 4), dt, device)
        for axis in ((None, 2, (0, 2)) if cuda else (None, 0, 1, 2, (0, 2), (1, 2))):
            for keep in (False, True):
                def f(a):
                    return getattr(xp, red)(a * a if dt.kind != "bool" else ~a, axis=axis,
                                            keepdims=keep)
                try:
                    want = f(x.to_device(CPU))
                except TypeError as e:
                    with pytest.raises(TypeError, match=str(e)[:20]):
                        fuse(f)(x)
                    continue
                _same(fuse(f)(x), want, loose=device.kind == "cuda")


def test_reductions_with_empty_results(device):
    """An empty result over a non-empty reduced range (planning once divided by zero)."""
    for shape, axis in (((0, 5), 1), ((5, 0), 0), ((0, 3, 4), (1, 2))):
        x = xp.ones(shape, dtype=xp.float32, device=device)
        _check(lambda a: (xp.sum(a * a, axis=axis), xp.max(a + 1, axis=axis, keepdims=True)),
               [x])


def test_big_reductions_split_across_blocks(device, rng):
    x = _arr(rng, (3, 200001), xp.float64, device)
    i = _arr(rng, (200001, 3), xp.int32, device)
    _check(lambda a: (xp.sum(a * 2 + 1), xp.max(a, axis=1), xp.mean(a, axis=1, keepdims=True)),
           [x], loose=True)
    _check(lambda a: (xp.sum(a, axis=0), xp.prod(a[:40, ...] + 1, axis=0), xp.any(a > 5)), [i])


@pytest.mark.parametrize("p", [1, 3, 4, 31, 33, 100])
def test_reductions_over_leading_and_middle_axes(device, rng, p):
    """The innermost axis kept: a block holds groups for neighbouring outputs (group-major),
    split across blocks when the reduced range is long; integer sums and max are exact."""
    x = _arr(rng, (20011, p), xp.int32, device, small=False)
    _check(lambda a: (xp.sum(a, axis=0), xp.max(a * 3, axis=0, keepdims=True)), [x])
    y = _arr(rng, (3, 4001, p), xp.int64, device, small=False)
    _check(lambda a: (xp.sum(a, axis=1), xp.min(a - 1, axis=(0, 1))), [y])
    z = _arr(rng, (9000, p), xp.float64, device)
    _check(lambda a: xp.mean(a * 2, axis=0), [z], loose=True)


def test_reductions_over_merged_axes(device, rng):
    """Programs that run over merged axes (fusion_plan.merge_axes): image statistics over
    (0, 2, 3), a normalisation feeding further work with a per-channel parameter, a permuted
    argument, flat argmax/argmin indices, norms, a reduction over leading axes fed back, and
    a split range; integer results exact."""
    x = _arr(rng, (3, 4, 5, 6), xp.float32, device)
    _check(lambda a: (xp.mean(a, axis=(0, 2, 3)), xp.var(a, axis=(0, 2, 3), keepdims=True),
                      xp.std(a * 2, axis=(0, 2, 3), correction=1)), [x], loose=True)
    g = _arr(rng, (4, 1, 1), xp.float32, device)
    _check(lambda a, b: (a - xp.mean(a, axis=(0, 2, 3), keepdims=True)) * b
           / xp.sqrt(xp.var(a, axis=(0, 2, 3), keepdims=True) + 1e-5), [x, g], loose=True)
    p = xp.permute_dims(_arr(rng, (4, 3, 5, 6), xp.int32, device, small=False), (1, 0, 2, 3))
    _check(lambda a: (xp.sum(a, axis=(0, 2, 3)), xp.max(a, axis=(0, 2, 3), keepdims=True)), [p])
    i = _arr(rng, (5, 6, 7), xp.int32, device, small=False)
    _check(lambda a: (xp.argmax(a), xp.argmin(a * 3)), [i])
    _check(lambda a: (xp.sum(a, axis=(1, 2)), xp.min(a, axis=(1, 2), keepdims=True)), [i])
    _check(lambda a: a - xp.sum(a, axis=(0, 1)), [i])
    b = _arr(rng, (5, 6, 7), xp.bool, device)
    _check(lambda a: (xp.any(a, axis=(0, 1)), xp.all(~a, axis=(0, 1))), [b])
    f = _arr(rng, (5, 6, 7), xp.float64, device)
    _check(lambda a: xp.linalg.vector_norm(a, axis=(0, 1), keepdims=True), [f], loose=True)
    big = _arr(rng, (16, 8, 64, 64), xp.float32, device)
    _check(lambda a: (xp.mean(a, axis=(0, 2, 3)), xp.sum(a * a, axis=(0, 2, 3))), [big],
           loose=True)


@pytest.mark.parametrize("dtype", [xp.int8, xp.int32, xp.float64, xp.complex64, xp.bool],
                         ids=str)
def test_row_reductions_vector_and_scalar_paths(device, rng, dtype):
    """Rows of whole 16-byte vectors (aligned) take the vector loads; a row length that is
    not a multiple of the vector, or a misaligned start, takes the scalar loop; rows of
    33008 are split across blocks."""
    for m in (4096, 4099, 33008):
        x, _ = random_array(rng, (7, m + 1), dtype, device)
        for a in (x[:, :m], x[:, 1:]):
            a = xp.asarray(to_numpy(a), device=device)  # contiguous, aligned
            for v in (a, xp.reshape(a, (-1,))[1:]):  # aligned rows; a misaligned flat view
                if dtype == xp.bool:
                    _check(lambda b: (xp.any(b), xp.all(b, axis=-1)), [v])
                elif dtype.kind == "int":
                    _check(lambda b: (xp.sum(b, axis=-1), xp.max(b), xp.sum(b * 2)), [v])
                else:
                    _check(lambda b: (xp.sum(b * 2, axis=-1), xp.sum(b + 1)), [v], loose=True)


@pytest.mark.parametrize("dtypes", [(xp.float32, xp.float32), (xp.float64, xp.float64),
                                    (xp.int8, xp.int16), (xp.complex64, xp.float32),
                                    (xp.float32, xp.float64)], ids=str)
def test_misaligned_operands_and_tails(device, rng, dtypes):
    """Contiguous views that start one element in (not 16-byte aligned); sizes that leave a
    partial vector, a partial block of vectors (up to one block short of two), or none: the
    same compiled layout serves aligned and misaligned calls, in every vector shape."""
    d1, d2 = dtypes

    def short(a, b):
        return a * b + 1

    def long(a, b):
        return ((a * b + 1) * a - b) * (a + b) + a * a - b * b + a

    for config in _configs(device):
        with _vector_shape(config):
            for body in (short, long):
                f = fuse(body)
                for n in (1, 3, 1021, 4099, 6143, 16384):
                    x, _ = random_array(rng, (n + 1,), d1, device)
                    y, _ = random_array(rng, (n + 1,), d2, device)
                    for a, b in ((x[:n], y[:n]), (x[1:], y[1:]), (x[:n], y[1:]),
                                 (x[1:], y[:n])):
                        _same(f(a, b), body(a, b))


def _launch_of(f):
    (entry,) = f._cache.values()
    return entry.launch


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_tuned_launch_times_every_vector_shape_once(rng, monkeypatch):
    """A launch big enough to time compiles each vector shape, tunes on its first call with
    aligned operands (not before), and every shape gives the eager values."""
    monkeypatch.setattr(kfusion, "TUNE_MIN_BYTES", 0)
    cuda = Device("cuda", 0)

    def body(a, b):
        return xp.atan2(a, b) * b + 1

    x, _ = random_array(rng, (40001,), xp.float32, cuda)
    y, _ = random_array(rng, (40001,), xp.float32, cuda)
    f = fuse(body)
    _same(f(x[1:], y[1:]), body(x[1:], y[1:]), loose=True)  # misaligned: the default runs
    launch = _launch_of(f)
    launch.finish()  # (a first compile's quick kernels are never timed: see TIERED)
    assert len(launch.variants) == len(kfusion.CONFIGS) and not launch.tuned
    a, b = x[:40000], y[:40000]
    want = body(a, b)
    got = f(a, b)
    assert launch.tuned and launch.variant in launch.variants
    _same(got, want, loose=True)
    for variant in launch.variants:  # each shape computes the same values
        launch.variant = variant
        _same(f(a, b), got)
    # nothing to choose with a reduction; operands too wide for a vector of two leave only
    # the block sizes to choose from
    g = fuse(lambda a, b: (a * b, xp.sum(a)))
    g(a, b)
    _launch_of(g).finish()
    assert len(_launch_of(g).variants) == 1 and _launch_of(g).tuned
    z = xp.astype(a, xp.complex128)
    h = fuse(lambda c: c * c + 1)
    _same(h(z), z * z + 1)
    _launch_of(h).finish()
    assert [v[3] for v in _launch_of(h).variants] == sorted({c[2] for c in kfusion.CONFIGS},
                                                            reverse=True)


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_a_new_program_runs_quick_kernels_until_the_full_ones_are_ready(rng, monkeypatch,
                                                                        tmp_path):
    """TIERED: a program whose cubins no cache holds runs, on its first call, kernels compiled
    with FIRST_CALL_COMPILE; its second call starts compiling the full-option ones in the
    background, and its first call after they are ready takes those. finish_compiling() starts
    the programs called once too. Values never change; a launch made once the kernels are
    cached has no tiers; TIERED off compiles the full ones at once."""
    if kfusion.first_call_options(()) is None:
        pytest.skip("this NVRTC has no --Ofast-compile (it came in 12.8): one tier only")
    monkeypatch.setenv("XP_CUDA_KERNEL_CACHE", str(tmp_path))  # nothing cached yet
    cuda = Device("cuda", 0)
    x, _ = random_array(rng, (64, 1000), xp.float32, cuda)
    depth = 7 + int(rng.integers(0, 40))  # a structure no earlier run compiled

    def chain(v):  # one elementwise kernel
        for _ in range(depth):
            v = v * 0.75 + 0.25
        return v

    def softmax(v):  # a row kernel
        e = xp.exp(v - xp.max(v, axis=-1, keepdims=True) + depth / 64)
        return e / xp.sum(e, axis=-1, keepdims=True)

    def lse0(v):  # stages
        m = xp.max(v, axis=0) - depth
        return m + xp.log(xp.sum(xp.exp(v - m), axis=0))

    def launches(f):
        launch = _launch_of(f)
        return [la for _, la in launch.launches] if hasattr(launch, "launches") else [launch]

    for body in (chain, softmax, lse0):
        f = fuse(body)
        first = to_numpy(f(x))
        quick = launches(f)
        assert all(la.tiering and la.quick is not None and la.pending is None and la.tuned
                   for la in quick), body.__name__
        kernels = [la.variant[0] for la in quick]
        np.testing.assert_array_equal(to_numpy(f(x)), first)  # the second call: compile starts
        assert all(la.quick is None and la.pending is not None for la in quick), body.__name__
        xp_cuda_fusion.finish_compiling()
        again = to_numpy(f(x))  # takes the full-option kernels
        assert all(not la.tiering and la.pending is None for la in quick), body.__name__
        assert [la.variant[0] for la in quick] != kernels, body.__name__
        np.testing.assert_array_equal(again, first)
        _same(f(x), body(x), loose=True)
        g = fuse(body)  # a new launch of the same program: its cubins are cached now
        np.testing.assert_array_equal(to_numpy(g(x)), first)
        assert not any(la.tiering for la in launches(g)), body.__name__
    once = fuse(lambda v: chain(v) - 1)  # called once: finish_compiling starts it too
    first = to_numpy(once(x))
    (la,) = launches(once)
    assert la.quick is not None
    xp_cuda_fusion.finish_compiling()
    assert la.quick is None and la.pending is not None and la.pending[0].done()
    np.testing.assert_array_equal(to_numpy(once(x)), first)
    assert not la.tiering
    monkeypatch.setattr(kfusion, "TIERED", False)
    depth += 1
    f = fuse(chain)
    _same(f(x), chain(x))
    assert all(la.pending is None for la in launches(f))


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_no_tuning_inside_graph_capture(rng, monkeypatch):
    """Timing needs events and a wait, which a stream being captured into a CUDA graph
    cannot have: there the default shape is captured, and tuning waits for a later call."""
    import cupy as cp
    monkeypatch.setattr(kfusion, "TUNE_MIN_BYTES", 0)
    cuda = Device("cuda", 0)
    x, _ = random_array(rng, (30000,), xp.float32, cuda)
    y, _ = random_array(rng, (30000,), xp.float32, cuda)

    def body(a, b):
        return a * b - a

    f = fuse(body)
    xm, _ = random_array(rng, (30001,), xp.float32, cuda)
    _same(f(xm[1:], y), body(xm[1:], y))  # compiled, not tuned (a misaligned operand)
    launch = _launch_of(f)
    launch.finish()
    assert len(launch.variants) > 1 and not launch.tuned
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        cp.empty(30000, dtype=cp.float32)  # a free block in the pool: no cudaMalloc in capture
        stream.begin_capture()
        got = f(x, y)
        graph = stream.end_capture()
        assert not launch.tuned
        graph.launch(stream)
        stream.synchronize()
    _same(got, body(x, y))
    _same(f(x, y), body(x, y))
    assert launch.tuned


def test_refusals_name_the_operation(device, rng):
    x = _arr(rng, (6,), xp.float32, device)
    for f, what in ((lambda a: a[a > 0], "boolean-mask"),
                    (lambda a: xp.nonzero(a)[0], "nonzero"),
                    (lambda a: xp.sort(a), "sort"),
                    (lambda a: xp.permute_dims(a[None, :], (1, 0)), "xp."),
                    (lambda a: xp.unique_values(a), "xp.unique"),
                    (lambda a: a + 1 if a[0] > 0 else a, "bool()"),
                    (lambda a: xp.cumulative_sum(a), "xp.cumulative_sum"),
                    (lambda a: float(a[0]), "float()")):
        with pytest.raises(TypeError, match="move it outside") as e:
            fuse(f)(x)
        assert what in str(e.value)
    y = _arr(rng, (6,), xp.float32, device)
    with pytest.raises(TypeError, match="pass it as an argument"):
        fuse(lambda a: a + y)(x)

    def inplace_view(a):
        v = a[1:]
        v += 1
        return v

    def inplace_viewed(a):
        v = a[1:]
        a += 1
        return v
    for f in (inplace_view, inplace_viewed):
        with pytest.raises(TypeError, match="in-place operator on a view"):
            fuse(f)(x)

    def inplace_global(a):
        y_ = y
        y_ += a
        return a
    with pytest.raises(TypeError, match="pass it as an argument"):
        fuse(inplace_global)(x)


def test_identity_and_view_outputs(device, rng):
    x = _arr(rng, (3, 4), xp.int16, device)
    got = fuse(lambda a: (a, a[:, 1:], a + 1))(x)
    assert got[0] is x
    _same(got[1], x[:, 1:])
    _same(got[2], x + 1)


def test_trace_cache_keys(device, rng):
    calls = []

    def f(a):
        calls.append(1)
        return a * 2
    g = fuse(f)
    x = _arr(rng, (8,), xp.float32, device)
    g(x)
    g(x)
    assert len(calls) == 1
    g(_arr(rng, (9,), xp.float32, device))
    g(_arr(rng, (8,), xp.float64, device))
    assert len(calls) == 3


# ---- generated CUDA: never user text; every constant and dtype compiles (CI, no GPU) ------------
from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


def _programs_corpus():
    """(function, cpu arguments) pairs: random programs over every dtype and scalar, plus each
    constant of SCALARS against each dtype that admits it."""
    from xp_cuda._devices import CPU
    items = []
    for seed in range(200):
        items.append((program(seed), _random_args(seed, CPU)))
    rng = np.random.default_rng(0)
    for dt in ALL_DTYPES:
        x = _arr(rng, (3, 2), dt, CPU)
        consts = [c for c in SCALARS if _admits(dt, c)]
        if dt.kind in ("int", "uint"):
            info = np.iinfo(dt._np)
            consts += [int(info.min), int(info.max)]
        if dt.kind == "float":
            info = np.finfo(dt._np)
            consts += [float(info.max), float(info.smallest_subnormal), -float(info.tiny)]

        def f(a, consts=consts):
            return tuple(((a == c) | (c & a)) if isinstance(c, bool) else (a * 0 + c)
                         for c in consts) + (
                xp.sum(xp.astype(a[:, None, ...] == a[None, :, ...], xp.int32), axis=0),)
        items.append((f, [x]))
    return items


def _admits(dt, c):
    k = dt.kind
    if isinstance(c, bool):
        return k == "bool"
    if isinstance(c, int):
        return k in ("int", "uint", "float", "complex") and (k not in ("uint",) or c >= 0)
    if isinstance(c, float):
        return k in ("float", "complex")
    return k == "complex"


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_generated_sources_compile_with_nvrtc():
    from xp_cuda._devices import CPU
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels.fusion import CONFIGS, OPTIONS, THREADS, Program, translation_unit
    from xp_cuda._kernels.fusion_ir import Op
    from xp_cuda.fusion import _trace
    from xp_cuda.fusion._fuse import _view_only

    progs, secret, n_programs = [], "user_secret_name", 0

    def user_secret_name(a, b):  # names of the user's program never reach the source
        return xp.sum(a * b + 1, axis=0), a[::-1, ...] / b
    rng = np.random.default_rng(1)
    xs = [_arr(rng, (4, 3), xp.float32, CPU) for _ in range(2)]
    extra = [(user_secret_name, xs)]
    for i, (f, args) in enumerate(_programs_corpus() + extra):
        t, nodes, *_ = _trace.trace(f, args, {}, CPU)
        kern = [n for n in nodes if not _view_only(n)]
        if kern:
            ins = [args[n.attr.pos]._data for n in t.inputs]
            p = Program(t, kern, ins, 132, name=f"k{i}", const_params=i % 2 == 0 or i >= 200)
            assert secret not in p.kernel and not re.search(r"\b(inf|nan|True|False)\b", p.kernel)
            progs.append(p)
            n_programs += 1
            layouts = {p.layout}
            for c, config in enumerate(CONFIGS[1:]):
                v = Program(t, kern, ins, 132, name=f"k{i}v{c}", config=config)
                if v.layout not in layouts:  # each vector shape a launch may take
                    layouts.add(v.layout)
                    progs.append(v)
                assert v.threads == THREADS or not any(n.op is Op.REDUCE for n in kern)
    assert n_programs >= 200 and len(progs) > n_programs
    batch = 12
    for s in range(0, len(progs), batch):
        chunk = progs[s:s + batch]
        ptx = nvrtc_compile(translation_unit(chunk), name=f"fused_{s}.cu", options=OPTIONS)
        for p_ in chunk:
            name = re.search(r"\) (k\d+(?:v\d+)?)\(", p_.kernel).group(1)
            assert f".entry {name}(" in ptx


def _layout(shape, itemsize, strides=None):
    """What a Program reads of an array: its layout (contiguous unless strides are given)."""
    import types
    if strides is None:
        strides = tuple(int(s) for s in np.empty(shape, dtype=np.int8).strides)
        strides = tuple(s * itemsize for s in strides)
        contiguous = True
    else:
        contiguous = False
    return types.SimpleNamespace(itemsize=itemsize, shape=shape, strides=strides, nbytes=0,
                                 flags=types.SimpleNamespace(c_contiguous=contiguous))


def _eager_reduction_cases():
    """(kind, in dtype, accumulation dtype, layout, axes, keepdims) of eager reductions: every
    dtype pair for rows, columns and no axis; every axis layout for a few pairs."""
    names = [d.name for d in ALL_DTYPES]
    numeric = [n for n in names if n != "bool"]
    real = [n for n in numeric if not n.startswith("complex")]

    def acc(n):
        return "int64" if n.startswith("int") else "uint64" if n.startswith("uint") else n
    pairs = ([("sum", n, acc(n)) for n in numeric] + [("prod", n, acc(n)) for n in numeric]
             + [("sum", "float32", "float64"), ("sum", "int32", "float64"),
                ("prod", "complex64", "complex128"), ("sum", "uint8", "int64")]
             + [(k, n, n) for k in ("max", "min") for n in real]
             + [("mean", n, n) for n in ("float32", "float64", "complex64", "complex128")]
             + [(k, n, "bool") for k in ("all", "any") for n in names])
    cases = []
    for kind, i, a in pairs:
        isz = np.dtype(i).itemsize
        for axes in ((2,), (0,), ()):
            cases.append((kind, i, a, _layout((3, 4, 5), isz), axes, False))
    shape = (3, 4, 5)
    for kind, i, a in (("sum", "float32", "float32"), ("sum", "int8", "int64"),
                       ("any", "complex64", "bool"), ("prod", "complex128", "complex128"),
                       ("mean", "float64", "float64"), ("max", "int16", "int16")):
        isz = np.dtype(i).itemsize
        c = _layout(shape, isz)
        t = _layout(shape, isz, tuple(reversed(c.strides)))  # transposed
        b = _layout(shape, isz, (0, 5 * isz, isz))  # broadcast along axis 0
        for axes in ((), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)):
            for x in (c, t, b):
                for keep in (False, True):
                    cases.append((kind, i, a, x, axes, keep))
        cases.append((kind, i, a, _layout((), isz), (), False))  # 0-d
    return cases


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_eager_reduction_sources_compile_with_nvrtc():
    """Every kernel reduction.reduce_eager can build for these dtypes and layouts compiles."""
    from xp_cuda._kernels import nvrtc_compile, reduction
    from xp_cuda._kernels.fusion import OPTIONS, translation_unit
    progs, seen = [], set()
    for n, (kind, i, a, x, axes, keep) in enumerate(_eager_reduction_cases()):
        p = reduction.program(kind, i, a, x, axes, keep, 132, name=f"r{n}")
        text = p.kernel.replace(f" r{n}(", " R(")
        if text not in seen:  # many layouts print the same kernel
            seen.add(text)
            progs.append(p)
    assert len(progs) > 150
    for s in range(0, len(progs), 16):
        chunk = progs[s:s + 16]
        ptx = nvrtc_compile(translation_unit(chunk), name=f"reduce_{s}.cu", options=OPTIONS)
        for p_ in chunk:
            assert f".entry {p_.name}(" in ptx


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "mean", "all", "any"])
def test_reduce_eager_matches_numpy(rng, kind):
    """The eager entry on every axis layout, strided and broadcast inputs, 0-d, empty ranges."""
    import cupy as cp
    from xp_cuda._kernels.reduction import reduce_eager
    dts = {"sum": ["int8", "uint16", "float32", "complex64"], "prod": ["int32", "float64"],
           "max": ["int16", "float32"], "min": ["uint8", "float64"], "mean": ["float32"],
           "all": ["bool", "float32"], "any": ["int8", "complex128"]}[kind]
    for dt in dts:
        a = np.asarray(rng.standard_normal((6, 7, 33)) * 3).astype(dt)
        if kind == "prod":
            a = (np.abs(a) % 2 + 1).astype(dt)
        acc = ("bool" if kind in ("all", "any") else "int64" if dt.startswith("int") else
               "uint64" if dt.startswith("uint") else dt)
        xs = [a, a[:, ::-2, 1:], np.broadcast_to(a[:1], a.shape), a[0, 0, 0], a[:, :0]]
        for x in xs:
            for axes in ([(), (0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)] if x.ndim else [()]):
                if kind in ("max", "min") and any(x.shape[ax] == 0 for ax in axes):
                    continue
                for keep in (False, True):
                    got = reduce_eager(cp, kind, cp.asarray(x), axes, keep, dt, acc)
                    xa = x.astype(acc) if kind not in ("all", "any") else x
                    f = {"max": np.max, "min": np.min}.get(kind, getattr(np, kind))
                    want = np.asarray(f(xa, axis=axes, keepdims=keep)).astype(acc)
                    assert got.dtype == want.dtype and got.shape == want.shape
                    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [xp.int8, xp.int16, xp.int32, xp.int64, xp.uint16], ids=str)
def test_integer_max_min_over_negated_values(device, rng, dtype):
    """Chains of integer max/min whose operands are negated (or clipped) values: ptxas 13.0
    once dropped such a negation inside its 3-input VIMNMX3 (see xp_isel), so fused max(-x)
    disagreed with eager on cuda."""
    x = _arr(rng, (3, 41), dtype, device, small=False)
    y = _arr(rng, (3, 41), dtype, device, small=False)
    z = _arr(rng, (3, 41), dtype, device, small=False)
    for f in (lambda a, b, c: (xp.max(-a), xp.min(-a), xp.max(-a, axis=1),
                               xp.min(-b, axis=0, keepdims=True)),
              lambda a, b, c: xp.maximum(xp.maximum(-a, -b), -c),
              lambda a, b, c: xp.minimum(xp.minimum(-a, b - c), -c),
              lambda a, b, c: (xp.clip(-a, min=-5, max=5), xp.max(xp.clip(-b, min=-9), axis=1))):
        _check(f, [x, y, z])


def test_one_element_views_as_outputs(device, rng):
    """An output that is a one-element view of a larger intermediate (found by the property
    test: the flat evaluation once leaked its placeholder index into the CUDA source)."""
    x = _arr(rng, (3, 1), xp.int64, device)
    _check(lambda a: (xp.astype(a[1:, ...], xp.uint64)[1:, ...], a[1:, ...] == 3), [x])
    _check(lambda a: (a[1:, ...] * 2)[-1:, ...], [x])
    y = _arr(rng, (4, 3), xp.float32, device)
    _check(lambda b: ((b + 1)[2:3, 1:2], (b * b)[None, -1, :1]), [y])


def test_property_seeds_generate_valid_sources():
    """The random programs whose flat sections leaked a placeholder index: every generated
    kernel now names only generator-made identifiers."""
    from xp_cuda._devices import CPU
    from xp_cuda._kernels.fusion import Program
    from xp_cuda.fusion import _trace
    from xp_cuda.fusion._fuse import _view_only
    for seed in (661, 671, 867, 2736, 3563):
        args = _random_args(seed, CPU)
        t, nodes, *_ = _trace.trace(program(seed), args, {}, CPU)
        kern = [n for n in nodes if not _view_only(n)]
        p = Program(t, kern, [args[n.attr.pos]._data for n in t.inputs], 132)
        assert "@" not in p.kernel, seed


# ---- whole programs: reductions feeding further work, in-place updates --------------------------
def softmax(a):
    m = xp.max(a, axis=-1, keepdims=True)
    e = xp.exp(a - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def layer_norm(a, w):
    mu = xp.mean(a, axis=-1, keepdims=True)
    d = a - mu
    return d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * w


def rms_norm(a, w):
    return a / xp.sqrt(xp.mean(a * a, axis=-1, keepdims=True) + 1e-6) * w


def lse_rows(a):
    m = xp.max(a, axis=-1)
    return xp.log(xp.sum(xp.exp(a - m[..., None]), axis=-1)) + m


def lse_cols(a):
    m = xp.max(a, axis=0, keepdims=True)
    return xp.log(xp.sum(xp.exp(a - m), axis=0)) + m[0, ...]


def row_normalise(a):
    return a / xp.linalg.vector_norm(a, axis=-1, keepdims=True)


def col_centre(a):
    return a - xp.mean(a, axis=0)


def norm_test(a):  # the example: a reduction feeding a comparison
    return xp.sqrt(xp.sum(a * a, axis=1)) > 1.0


def moments(a):  # var/std in the middle, several outputs of different shapes
    z = (a - xp.mean(a, axis=-1, keepdims=True)) / xp.std(a, axis=-1, keepdims=True)
    return z, xp.var(a, axis=-1, correction=1), xp.max(z, axis=-1)


def arg_and_dot(a, w):  # argmax and vecdot feeding elementwise work
    i = xp.argmax(a, axis=-1)
    d = xp.vecdot(a, w)
    return i + 1, d / (xp.sum(xp.abs(a), axis=-1) + 1)


def row_share(a):  # any numeric dtype: complex rows reduce in a shared-memory tree
    return a * 2 - xp.sum(a, axis=-1, keepdims=True)


PROGRAMS = {"softmax": (softmax, 1), "row_share": (row_share, 1), "layer_norm": (layer_norm, 2), "rms_norm": (rms_norm, 2),
            "lse_rows": (lse_rows, 1), "lse_cols": (lse_cols, 1),
            "row_normalise": (row_normalise, 1), "col_centre": (col_centre, 1),
            "norm_test": (norm_test, 1), "moments": (moments, 1),
            "arg_and_dot": (arg_and_dot, 2)}


def _program_args(rng, name, shape, dtype, device):
    f, n = PROGRAMS[name]
    x = _arr(rng, shape, dtype, device)
    if n == 1:
        return f, [x]
    return f, [x, _arr(rng, shape[-1:], dtype, device)]


def _plan_kind(f, args):
    text = fuse(f).plan(*args)
    # the first line that counts kernels (on cpu a line before it says the plan is replayed)
    return "rows" if "(rows)" in text else next(
        line for line in text.split("\n") if line.split(" ")[0].isdigit()).split(" (")[0]


# row lengths: a warp per row (37, 129, 33, 8, 128), a block per row (4099: 512 threads;
# 20000: 1024 threads; 4096), a row beyond the on-chip limit (70001: the multi-kernel plan);
# rows ending inside a vector (37, 4099, ...), at a vector (8, 20000: a check a vector) and
# exactly at the thread's last vector (128 and 4096 for every dtype: no checks)
ROW_SHAPES = [(5, 37), (3, 4099), (2, 3, 129), (33,), (1, 8), (2, 20000), (2, 70001),
              (3, 128), (2, 4096)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_whole_programs_match_eager(device, rng, name):
    """Reductions feeding further work return what the eager function returns, for every
    plan (row kernel, stages); tolerances only for reduction order and transcendentals."""
    dts = [xp.float32, xp.float64]
    if name in ("row_share", "col_centre", "softmax"):
        dts += [xp.complex64, xp.int16, xp.uint8, xp.int64]
    for dt in dts:
        for shape in ROW_SHAPES:
            if name in ("norm_test", "lse_cols", "col_centre") and len(shape) < 2:
                continue
            f, args = _program_args(rng, name, shape, dt, device)
            try:
                f(*[a.to_device(CPU) for a in args])
            except TypeError:  # a dtype the program's functions refuse (complex max)
                with pytest.raises(TypeError):
                    fuse(f)(*args)
                continue
            _check(f, args, loose=True)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "moments", "arg_and_dot"])
def test_whole_programs_on_strided_broadcast_and_empty_inputs(device, rng, name):
    for dt in (xp.float32, xp.float64):
        base = _arr(rng, (6, 75), dt, device)
        w = _arr(rng, (75,), dt, device)
        cases = [[base[:, ::2]], [base[::-1, 1:]], [base[:, 5:]],  # strided, misaligned
                 [xp.broadcast_to(base[:1, ...], (4, 75))],  # broadcast (stride 0)
                # one row held in registers: misaligned (the element loads), aligned whole
                # vectors (the vector loads)
                [xp.reshape(base, (-1,))[1:]], [xp.reshape(base, (-1,))[:448]]]
        if name not in ("moments", "arg_and_dot"):  # (reductions of nothing: no max)
            cases.append([xp.ones((0, 7), dtype=dt, device=device)])  # no rows
        f, n = PROGRAMS[name]
        for args in cases:
            x = args[0]
            if n == 2:
                args = [x, w[:x.shape[-1]] if x.shape[-1] <= 75 else
                        _arr(rng, x.shape[-1:], dt, device)]
            _check(f, args, loose=True)


def test_row_plans_and_fallbacks(device, rng):
    """The plan each program gets: the row kernel where every reduction reduces the innermost
    axis and a row fits on chip; one kernel per reduction depth otherwise."""
    x = _arr(rng, (64, 4096), xp.float32, device)
    w = _arr(rng, (4096,), xp.float32, device)
    for f, args in ((softmax, [x]), (layer_norm, [x, w]), (rms_norm, [x, w]),
                    (row_normalise, [x]), (lse_rows, [x]), (moments, [x]),
                    (arg_and_dot, [x, w])):
        assert _plan_kind(f, args) == "rows", (f.__name__, fuse(f).plan(*args))
    # the max and the sum of exponentials in one pass (online_sumexp), then log and add
    assert _plan_kind(lse_cols, [x]).startswith("2 kernels"), fuse(lse_cols).plan(x)
    assert _plan_kind(col_centre, [x]).startswith("2 kernels")
    long = _arr(rng, (2, 70001), xp.float32, device)  # beyond the registers: stages
    assert _plan_kind(softmax, [long]).startswith("2 kernels")  # (max and sum in one pass)
    assert _plan_kind(lambda a: a * 2 + 1, [x]).startswith("1 kernel")
    assert "row" in fuse(softmax).plan(x) and "4096" in fuse(softmax).plan(x)
    assert "no kernel" in fuse(lambda a: a[1:, ...]).plan(x)


# ---- in-place updates -------------------------------------------------------------------------
def _inplace_check(f, args, loose=True):
    """f's eager run on copies and its fused run on copies leave the same arguments and
    return the same results."""
    ref = [xp.asarray(a.to_device(CPU), copy=True) if isinstance(a, Array) else a for a in args]
    mine = [xp.asarray(a, copy=True) if isinstance(a, Array) else a for a in args]
    want = f(*ref)
    result = fuse(f)(*mine)
    want, got = (want, result) if isinstance(want, tuple) else ((want,), (result,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w, loose)
    for m, r in zip(mine, ref):
        if isinstance(m, Array):
            _same(m, r, loose)
    return mine, result


def test_inplace_updates_write_through(device, rng):
    x = _arr(rng, (5, 33), xp.float32, device)
    b = _arr(rng, (5, 33), xp.float32, device)
    i = _arr(rng, (33,), xp.int16, device)

    def f(a, b, k):
        b += 1.5  # a constant
        c = a * b  # reads the new b
        b *= a
        k -= 3
        return c, xp.sum(b, axis=1), k

    mine, got = _inplace_check(f, [x, b, i])
    assert got[2] is mine[2]  # the argument itself is returned, as eagerly

    def g(a, s):
        a += s  # a scalar argument: a parameter
        a /= xp.max(a, axis=-1, keepdims=True)  # a reduction feeding the update
        return a
    mine, got = _inplace_check(g, [x, 0.25])
    assert got is mine[0]
    mine, got = _inplace_check(g, [x[:, :7], 2.0])  # of a view argument: writes through


def test_inplace_rules_are_the_eager_ones(device, rng):
    i8 = _arr(rng, (4, 3), xp.int8, device)
    f32 = _arr(rng, (4, 3), xp.float32, device)
    row = _arr(rng, (3,), xp.float32, device)
    cases = ((lambda a: a.__iadd__(0.5) and a, [i8]),  # would change the dtype
             (lambda a, b: b.__iadd__(a) and b, [f32, row]))  # would change the shape
    for f, args in cases:
        with pytest.raises((TypeError, ValueError)) as e_eager:
            f(*[xp.asarray(a, copy=True) for a in args])
        with pytest.raises(type(e_eager.value)) as e_fused:
            fuse(f)(*[xp.asarray(a, copy=True) for a in args])
        assert str(e_eager.value) == str(e_fused.value)

    def upd(a, b):
        a += 1
        return a + b
    with pytest.raises(ValueError, match="also passed as argument"):
        fuse(upd)(f32, f32)


# ---- caches --------------------------------------------------------------------------------------
def test_layout_cache_is_bounded(device, rng):
    from xp_cuda.fusion import _fuse
    g = fuse(lambda a: a * 2 + 1)
    for n in range(1, _fuse.CACHE_SIZE + 12):
        g(_arr(rng, (n,), xp.float32, device))
    assert len(g._cache) == _fuse.CACHE_SIZE
    first = next(iter(g._cache))
    assert first[2] == (12,)  # the least recently used went first


def test_constants_are_parameters_not_literals():
    """Programs that differ only in their constants print one source (one compiled kernel)."""
    from xp_cuda._kernels.fusion import Program
    from xp_cuda.fusion import _trace
    x = xp.asarray(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    sources, slots = set(), []
    for c in (0.5, 2.0, -7.25, float("inf")):
        for f in (lambda a, c=c: a * c + 1, lambda a, c=c: xp.maximum(a - c, a * 0 + c)):
            t, nodes, *_ = _trace.trace(f, [x], {}, CPU)
            p = Program(t, nodes, [x._data], 132, const_params=True)
            sources.add(p.kernel)
            slots.append(tuple(p.gvals))
    assert len(sources) == 2 and len(set(slots)) == len(slots)
    t, nodes, *_ = _trace.trace(softmax, [x], {}, CPU)
    from xp_cuda._kernels.fusion import row_program
    rp = row_program(t, list(nodes), [x._data], 132)
    assert rp is not None and "__int_as_float((int)1" not in rp.kernel.split("{", 1)[1]


# ---- every plan kind compiles (CI, no GPU) ---------------------------------------------------
def _whole_program_corpus():
    rng = np.random.default_rng(5)
    items = []
    for name in sorted(PROGRAMS):
        for dt in (xp.float32, xp.float64):
            for shape in ((6, 37), (64, 4096), (8, 32768), (2, 70001), (33,), (3, 4100)):
                if name in ("norm_test", "lse_cols", "col_centre") and len(shape) < 2:
                    continue
                f, args = _program_args(rng, name, shape, dt, CPU)
                items.append((f, args))
    x8 = _arr(rng, (4, 50), xp.int8, CPU)
    b = _arr(rng, (4, 50), xp.bool, CPU)
    c = _arr(rng, (4, 50), xp.complex64, CPU)
    i64 = _arr(rng, (4, 50), xp.int64, CPU)
    items += [(lambda a: a - xp.max(a, axis=1, keepdims=True) * 2, [x8]),  # int8 shuffles
              (lambda a, m: (xp.any(a, axis=1, keepdims=True) & a, xp.all(m > 0, axis=1)),
               [b, x8]),
              (lambda z: z / xp.sum(z, axis=1, keepdims=True), [c]),  # a complex tree
              (lambda a: (a - xp.min(a, axis=1, keepdims=True), xp.argmin(a + 1, axis=1)),
               [i64]),
              (lambda a: xp.prod(a, axis=1, keepdims=True) + a, [i64]),
              (lambda a: xp.sum(a, axis=(0, 1), keepdims=True) - a, [i64]),  # stages
              (lambda a: (a * 2, xp.sum(a, axis=1)), [i64])]  # one kernel

    def inplace(a, b_):
        b_ += 1.5
        b_ /= xp.sum(b_, axis=-1, keepdims=True)
        return a * b_, xp.max(a, axis=0)
    f32 = _arr(rng, (6, 37), xp.float32, CPU)
    items.append((inplace, [f32, xp.asarray(f32, copy=True)]))
    # sections hosting a rider (fusion_plan.rides): min-max scaling over columns of every
    # real width (int16's word columns host none), a batch norm's statistics
    for dt in (xp.float32, xp.float64, xp.int32, xp.int16, xp.uint8):
        items.append((lambda a: (xp.max(a, axis=0) - xp.min(a, axis=0), xp.min(a, axis=0)),
                      [_arr(rng, (300, 40), dt, CPU)]))
    items.append((_min_max_scale, [_arr(rng, (3000, 5), xp.float64, CPU)]))
    for dt in (xp.float32, xp.float64):
        items.append((_batch_norm, [_arr(rng, (4, 3, 5, 8), dt, CPU)]))
    return items


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_whole_program_sources_compile_with_nvrtc():
    """Every kernel of every plan kind (row kernels, multi-kernel stages) of representative
    programs compiles for compute_90."""
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels.fusion import (OPTIONS, RowProgram, plan_program, stage_programs,
                                         translation_unit)
    from xp_cuda.fusion import _trace
    from xp_cuda.fusion._fuse import _view_only
    progs, kinds = [], set()
    for i, (f, args) in enumerate(_whole_program_corpus()):
        t, nodes, _, sources = _trace.trace(f, args, {}, CPU)
        outs = [n for n, s in zip(nodes, sources) if s is None and not _view_only(n)]
        outs += [m.node for m in t.writes.values()]
        natives = [args[n.attr.pos]._data for n in t.inputs]
        plan = plan_program(t, outs, natives, 132)
        if plan.rows is not None:
            progs.append(RowProgram(t, plan, list(plan.outs), f"w{i}"))
            kinds.add("rows")
            if plan.rows.reloads:  # its reread variant (RowLaunch)
                progs.append(RowProgram(t, plan, list(plan.outs), f"w{i}r", reread=True))
                kinds.add("reread")
        else:
            progs += stage_programs(t, plan, natives, 132, name=f"w{i}")
            kinds.add("stages" if len(plan.stages) > 1 else "one")
    assert kinds == {"rows", "reread", "stages", "one"}, kinds
    hinted = 0
    for s in range(0, len(progs), 12):
        chunk = progs[s:s + 12]
        ptx = nvrtc_compile(translation_unit(chunk), name=f"whole_{s}.cu", options=OPTIONS)
        for p_ in chunk:
            assert f".entry {p_.name}(" in ptx
        hinted += ptx.count("L2::evict_last")
    assert hinted > 0  # (compute_90: the reread variants' L2 policies are compiled)


def _scalar_programs():
    return (lambda a: xp.where(a > 0, a, 0.5), lambda a: xp.where(a > 0, -1, a),
            lambda a: xp.clip(a, min=-0.5, max=xp.max(a, axis=-1, keepdims=True) / 2),
            lambda a: a - xp.where(a > xp.mean(a, axis=-1, keepdims=True), 1.0, a))


def test_scalars_in_where_follow_the_revision(device, rng, revision):
    """Python scalars in where are an error under 2023.12 (the same error as eagerly) and
    0-d values of the scalar rules from 2024.12 on, also beside reductions."""
    from xp_cuda import set_api_version
    x = _arr(rng, (4, 9), xp.float32, device)
    for k, f in enumerate(_scalar_programs()):
        if k == 2:
            continue  # clip's scalars are 2023.12 already
        with pytest.raises(TypeError) as e_eager:
            f(x.to_device(CPU))
        with pytest.raises(TypeError) as e_fused:
            fuse(f)(x)
        assert str(e_eager.value) == str(e_fused.value)
    set_api_version("2024.12")
    for f in _scalar_programs():
        _check(f, [x], loose=True)


def test_whole_programs_with_0d_and_one_element_arrays(device, rng):
    """A 0-d argument broadcast into a row program and reductions of 0-d and one-element
    values feeding further work (stages: no row space)."""
    for dt in (xp.float32, xp.int32):
        s = _arr(rng, (), dt, device)
        v = _arr(rng, (6, 9), dt, device)
        one = _arr(rng, (1, 1), dt, device)
        _check(lambda a, b: (b - xp.max(b, axis=-1, keepdims=True) * a,
                             xp.sum(b * a, axis=-1)), [s, v], loose=True)
        _check(lambda a, b: (a - xp.sum(a), b + xp.max(a) * xp.min(b)), [s, v], loose=True)
        _check(lambda a, b: (b * xp.sum(a, axis=1, keepdims=True), xp.prod(a) + a),
               [one, v], loose=True)


def _eager_and_fused(f, fused, args):
    """(eager result on cpu copies, fused result), or the errors each raised."""
    ref = [a.to_device(CPU) if isinstance(a, Array) else a for a in args]
    out = []
    for g, a in ((f, ref), (fused, args)):
        try:
            out.append(g(*a))
        except (TypeError, ValueError, OverflowError) as e:
            out.append(e)
    return out


def _same_outcome(f, fused, args):
    want, got = _eager_and_fused(f, fused, args)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want), (want, got)
    else:
        assert not isinstance(got, Exception), got
        _same(got, want, loose=True)
    return want


def _scalar_argument_programs():
    """(function, array dtype, scalar arguments per call): a Python scalar passed to the fused
    function (a kernel parameter, not a constant) in where and clip."""
    return [
        (lambda c, x, s: xp.where(c, x, s), xp.float32, [2.0, -3.5, float("nan")]),
        (lambda c, x, s: xp.where(c, s, x), xp.float32, [0.25, float("-inf")]),
        (lambda c, x, s: xp.where(c, x, s), xp.float64, [3, -7]),  # an int beside floats
        (lambda c, x, s: xp.where(c, x, s), xp.int8, [100, -128, 1000]),  # 1000: overflow
        (lambda c, x, s: xp.where(c, x, s), xp.uint16, [65535, 0]),
        (lambda c, x, s: xp.where(c, x, s), xp.bool, [True, False]),
        (lambda c, x, s: xp.where(c, x, s), xp.float32, [1 - 2j]),  # 2024.12: complex64
        (lambda c, x, s: xp.where(c, x, s), xp.complex128, [1 - 2j, 0.5]),
        (lambda c, x, s: xp.where(c, x, s * 2 + 1), xp.float32, [2.0]),  # arithmetic on it
        (lambda c, x, s: xp.where(c, x - xp.max(x, axis=-1, keepdims=True), s),
         xp.float32, [0.5]),  # beside a reduction (a row program)
        (lambda c, x, s: xp.where(c, s, 1.5) + x, xp.float32, [2.0]),  # two scalars
        (lambda c, x, s: xp.clip(x, min=s, max=s + 1), xp.float32, [-0.5, float("nan")]),
        (lambda c, x, s: xp.clip(x, min=s), xp.int8, [-3, -1000]),  # clamps to the range
        (lambda c, x, s: xp.clip(x, max=s), xp.int16, [2.5]),  # a float bound: refused
        (lambda c, x, s: xp.clip(x * 2, min=-s, max=s) - xp.mean(x, axis=-1, keepdims=True),
         xp.float64, [0.75]),
    ]


@pytest.mark.parametrize("rev", ["2023.12", "2024.12"])
def test_scalar_arguments_in_where_and_clip_follow_the_revision(device, rng, revision, rev):
    """A Python scalar ARGUMENT of the fused function in where (x1 or x2) and in clip's
    bounds does exactly what it does eagerly under the revision in force: 2023.12 refuses it
    in where with eager's message, 2024.12 types it by the scalar rules (a complex beside a
    real array widens); clip took scalar bounds in both. Each call's value is a parameter:
    several values through one cached program, each equal to its eager result."""
    from xp_cuda import set_api_version
    set_api_version(rev)
    for k, (f, dt, values) in enumerate(_scalar_argument_programs()):
        x = _arr(rng, (5, 9), dt, device)
        c = _arr(rng, (5, 9), xp.bool, device)
        fused = fuse(f)
        outcomes = [_same_outcome(f, fused, [c, x, s]) for s in values]
        if rev == "2023.12" and k <= 10:  # where: refused, with eager's TypeError
            assert all(isinstance(o, TypeError) for o in outcomes), (k, outcomes)
        if rev == "2024.12" and k <= 9 and all(type(s) is type(values[0]) for s in values):
            assert len(fused._cache) == 1, k  # the values are parameters: one program
    if rev == "2024.12":  # the typing: an int beside int8 stays int8; a complex widens
        x = _arr(rng, (3,), xp.float32, device)
        c = _arr(rng, (3,), xp.bool, device)
        assert fuse(lambda c, x, s: xp.where(c, x, s))(c, x, 1j).dtype == xp.complex64
        x8 = _arr(rng, (3,), xp.int8, device)
        assert fuse(lambda c, x, s: xp.where(c, s, x))(c, x8, 7).dtype == xp.int8


# ---- in place on cuda: the kernel writes the argument directly where that is safe -------------
def _counting_copies(monkeypatch, x):
    """A list that grows by one each time fuse copies a computed value into an argument."""
    copies = []
    cls = type(x._b)
    orig = cls.assign

    def assign(self, data, value):
        copies.append(tuple(data.shape))
        return orig(self, data, value)
    monkeypatch.setattr(cls, "assign", assign)
    return copies


def _inplace_numeric(a, b):
    b += a * 2  # (bool: b ^= a, see _inplace_body)
    return a + b


def _inplace_body(dtype):
    if dtype == xp.bool:
        def f(a, b):
            b ^= a
            return a & b
        return f
    return _inplace_numeric


INPLACE_DTYPES = [xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16,
                  xp.uint32, xp.uint64, xp.float32, xp.float64, xp.complex64, xp.complex128]


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", INPLACE_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7, 33), (3, 4099), (1000003,)], ids=str)
def test_inplace_cuda_writes_the_argument_directly(monkeypatch, rng, dtype, shape):
    """Elementwise in-place updates of a contiguous aligned argument: the kernel writes the
    caller's array itself (no copy), and it holds exactly the eager result."""
    dev = Device("cuda", 0)
    a = _arr(rng, shape, dtype, dev)
    b = _arr(rng, shape, dtype, dev)
    copies = _counting_copies(monkeypatch, b)
    f = _inplace_body(dtype)
    fused = fuse(f)
    for k in range(3):  # (the first call of a launch big enough to time tunes: not in place)
        ref = [xp.asarray(v.to_device(CPU), copy=True) for v in (a, b)]
        arg = xp.asarray(b, copy=True)
        want = f(*ref)
        before = len(copies)
        _same(fused(a, arg), want)
        _same(arg, ref[1])
        if k:
            assert len(copies) == before, \
                f"{dtype} {shape}: copied {copies[before:]} instead of writing in place"


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_inplace_cuda_copies_where_it_must(monkeypatch, rng):
    """Arguments a direct write would corrupt (read at other indices in the same kernel) or
    that the kernel cannot write in its C order (strided, transposed, negative strides) or
    that are not 16-byte aligned: computed into a new array and copied; values and the
    caller's array object as eagerly."""
    dev = Device("cuda", 0)
    x = _arr(rng, (7, 33), xp.float32, dev)
    b = _arr(rng, (7, 33), xp.float32, dev)
    copies = _counting_copies(monkeypatch, b)

    def reduce_reads(a, b):
        b += 1.5
        return xp.sum(b, axis=1) + xp.sum(b, axis=0)[0]  # other indices of the new b

    def view_reads(a, b):
        b += 1.0
        return b[::-1, :] * a

    def elementwise(a, b):
        b += a * 2
        return a + b
    big = _arr(rng, (7, 70), xp.float32, dev)
    flat = _arr(rng, (1001,), xp.float32, dev)
    other = _arr(rng, (1001,), xp.float32, dev)
    shared = _arr(rng, (8, 32), xp.float32, dev)  # two aligned views that overlap
    cases = [(reduce_reads, lambda: [x, xp.asarray(b, copy=True)]),
             (view_reads, lambda: [x, xp.asarray(b, copy=True)]),
             (elementwise, lambda: [x, big[:, 1:67:2]]),  # strided
             (elementwise, lambda: [x, xp.matrix_transpose(_arr(rng, (33, 7), xp.float32,
                                                               dev))]),
             (elementwise, lambda: [x, big[::-1, :33]]),  # negative strides
             (elementwise, lambda: [flat[:1000], other[1:]]),  # 4 bytes past alignment
             (elementwise, lambda: [shared[:7, ...], shared[1:, ...]])]  # b's memory is a's too
    for k, (f, make) in enumerate(cases):
        args = make()
        before = len(copies)
        keep = args[1]
        ref = [xp.asarray(v.to_device(CPU), copy=True) for v in args]
        want = f(*ref)  # (the overlapping views: every read sees the values before the call)
        got = fuse(f)(*args)
        _same(got, want, loose=True)
        _same(keep, ref[1], loose=True)  # the caller's array (a view: its base) holds it
        assert len(copies) == before + 1, f"case {k}: expected one copy, got {copies[before:]}"


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("shape", [(5, 33), (64, 1000), (3, 4099), (2, 3, 257)], ids=str)
@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.int32], ids=str)
def test_inplace_cuda_row_kernel_writes_rows_directly(monkeypatch, rng, shape, dtype):
    """a += s; a -= max(a) over the row: the row kernel holds each row in registers before
    it writes the row back into the argument (no copy), the values the eager ones."""
    dev = Device("cuda", 0)
    a = _arr(rng, shape, dtype, dev)
    copies = _counting_copies(monkeypatch, a)

    def g(a, s):
        a += s
        a -= xp.max(a, axis=-1, keepdims=True)
        return a
    assert "(rows)" in fuse(g).plan(a, 3)
    mine, got = _inplace_check(g, [a, 3], loose=False)
    assert got is mine[0] and copies == []
    # the strided argument of the same program: copied, still right, the view's base holds it
    wide = _arr(rng, shape[:-1] + (shape[-1] + 5,), dtype, dev)
    view = wide[..., :shape[-1]]
    ref = xp.asarray(view.to_device(CPU), copy=True)
    tail = xp.asarray(wide.to_device(CPU), copy=True)[..., shape[-1]:]
    want = g(ref, 3)
    got = fuse(g)(view, 3)
    assert got is view and len(copies) == 1
    _same(view, want)
    _same(wide[..., shape[-1]:], tail)  # the columns outside the view untouched


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("name", ["row_normalise", "layer_norm", "softmax", "moments"])
@pytest.mark.parametrize("dtype", [xp.float32, xp.float64], ids=str)
def test_row_kernel_variants_agree(monkeypatch, rng, name, dtype):
    """A row launch long enough to time builds the reread variant beside the one holding rows
    in registers where the outputs read a row a reduction read (not softmax: its outputs read
    exp(x - max), held), keeps it where it does not spill, and keeps the faster. The reread kernel
    (run here on its own, uncapped) gives the held kernel's bits on rows of whole vectors and
    of a partial one, aligned and misaligned."""
    import cupy as cp
    monkeypatch.setattr(kfusion, "TUNE_MIN_BYTES", 0)
    dev = Device("cuda", 0)
    for shape in ((64, 4096), (33, 1000), (7, 1003)):
        f, args = _program_args(rng, name, shape, dtype, dev)
        flat = _arr(rng, (shape[0] * shape[1] + 1,), dtype, dev)
        mis = [xp.reshape(flat[1:], shape)] + args[1:]  # misaligned: the scalar loads
        g = fuse(f)
        g(*args)
        (entry,) = g._cache.values()
        launch = entry.launch
        launch.finish()
        got = g(*args)  # (the full kernels' first call times the variants)
        assert launch.tuned and launch.variant in launch.variants
        if (name, dtype, shape) == ("row_normalise", xp.float32, (64, 4096)):
            assert len(launch.variants) == 2  # (32 registers, no spill on sm_80 to sm_100)
        got = got if isinstance(got, tuple) else (got,)
        plan = launch.plan
        again = kfusion.RowProgram(entry.trace, plan, list(plan.outs), reread=True, cap=False)
        # (rows ending inside a vector: element loads, no hints, no variant)
        hinted = shape[-1] % plan.rows.vec == 0 and bool(plan.rows.reloads)
        assert bool(plan.rows.reloads) == (name != "softmax")
        assert ("xp_ld_last" in again.kernel) == hinted and (hinted or len(launch.variants) == 1)
        alone = kfusion.Launch(cp, entry.trace, list(plan.outs),
                               [args[p]._data for p in entry.in_pos], progs=[again])
        for o, r in zip(got, alone([args[p]._data for p in entry.in_pos], tuple(args))):
            np.testing.assert_array_equal(to_numpy(o), cp.asnumpy(r))
        ref = f(*args)
        _same(got[0], ref if not isinstance(ref, tuple) else ref[0], loose=True)
        held = g(*mis)
        held = held if isinstance(held, tuple) else (held,)
        for o, r in zip(held, alone([mis[p]._data for p in entry.in_pos], tuple(mis))):
            np.testing.assert_array_equal(to_numpy(o), cp.asnumpy(r))


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_inplace_direct_kernels_compile_with_nvrtc():
    """The kernels that write an argument in place (their aliased pointers not restrict):
    the flat kernel and the row kernel, each in every dtype the test above runs."""
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels.fusion import (OPTIONS, Graph, RowProgram, alias_of, direct_writes,
                                         plan_program, programs, translation_unit)
    from xp_cuda.fusion import _trace
    rng = np.random.default_rng(3)
    progs = []
    for i, dt in enumerate(INPLACE_DTYPES):
        a, b = _arr(rng, (7, 33), dt, CPU), _arr(rng, (7, 33), dt, CPU)
        f = _inplace_body(dt)

        def g(a, s):
            a += s
            a -= xp.max(a, axis=-1, keepdims=True)
            return a
        runs = [(f, [a, b])]
        if dt in (xp.float32, xp.float64, xp.int32):
            runs.append((g, [a, 3]))
        for k, (fn, args) in enumerate(runs):
            t, nodes, _, sources = _trace.trace(fn, args, {}, CPU)
            outs = [n for n, s in zip(nodes, sources) if s is None]
            outs += [m.node for m in t.writes.values()]
            lays = [args[n.attr.pos]._data for n in t.inputs]
            plan = plan_program(t, outs, lays, 132)
            direct, why = direct_writes(t, outs, plan, lays)
            assert direct and not why, (dt, k, why)
            if plan.rows is not None:
                progs.append(RowProgram(t, plan, list(plan.outs), f"ip{i}_{k}",
                                        alias_of(t, direct)))
            else:
                st = plan.stages[0]
                progs += programs(Graph(list(st.inputs), t.uses), list(st.outs), lays, 132,
                                  False, const_params=True, prefix=f"ip{i}_{k}_",
                                  alias=alias_of(t, direct))
    ptx = nvrtc_compile(translation_unit(progs), name="inplace.cu", options=OPTIONS)
    for p_ in progs:
        assert f".entry {p_.name}(" in ptx


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_fast_compile_option_is_off_by_default_and_keyed(monkeypatch):
    """fusion.FAST_COMPILE (NVRTC's --Ofast-compile: its kernels ran 2-5x slower) is off unless
    set; set, a fused kernel still compiles and its cache key differs (a cubin built with it
    is never served to a run without it)."""
    from xp_cuda._kernels import _runtime as R
    from xp_cuda._kernels import nvrtc_compile
    from xp_cuda._kernels.fusion import OPTIONS, fused_options, row_program
    from xp_cuda.fusion import _trace
    assert kfusion.FAST_COMPILE is None and fused_options() == OPTIONS
    monkeypatch.setattr(kfusion, "FAST_COMPILE", "mid")
    opts = fused_options()
    if tuple(R._nvrtc_version_key()) < (12, 8):
        assert opts == OPTIONS  # this NVRTC has no such option: left out
        return
    assert opts == OPTIONS + ("--Ofast-compile=mid",)
    x = xp.asarray(np.random.default_rng(0).standard_normal((6, 37)).astype(np.float32))
    t, nodes, *_ = _trace.trace(softmax, [x], {}, CPU)
    rp = row_program(t, list(nodes), [x._data], 132)
    assert f".entry {rp.name}(" in nvrtc_compile(rp.source, name="fast.cu", options=opts)
    assert R._entry_key(rp.source, opts, "sm_90") != R._entry_key(rp.source, OPTIONS, "sm_90")


# ---- the online sum of exponentials (fusion_plan.online_sumexp) ------------------------------

def csoftmax(a):
    m = xp.max(a, axis=0, keepdims=True)
    e = xp.exp(a - m)
    return e / xp.sum(e, axis=0, keepdims=True)


def _lse_columns(dt, rng):
    """(4099, 9) columns: random, ascending (a rescale at every element), descending, all
    -inf, -inf with finite values, +inf, NaN, huge spread (terms that underflow), one of all
    equal values."""
    n = 4099
    cols = [rng.standard_normal(n) * 3, np.sort(rng.standard_normal(n) * 50),
            -np.sort(rng.standard_normal(n)), np.full(n, -np.inf),
            np.where(rng.random(n) < 0.5, -np.inf, rng.standard_normal(n)),
            np.where(np.arange(n) == 77, np.inf, rng.standard_normal(n)),
            np.where(np.arange(n) == 3000, np.nan, rng.standard_normal(n)),
            rng.uniform(-800, 700, n) if dt == xp.float64 else rng.uniform(-100, 80, n),
            np.full(n, 1.5)]
    return np.stack(cols, axis=1).astype(np.float32 if dt == xp.float32 else np.float64)


@pytest.mark.parametrize("dt", [xp.float32, xp.float64])
def test_online_sumexp_columns_match_eager(device, rng, dt):
    """Log-sum-exp and softmax over columns: one pass for max and the sum of exponentials
    on cuda; the results are the eager ones (NaN, inf and -inf where the eager form gives
    them; the maximum to the bit), within the reduction-order tolerance elsewhere."""
    a = _lse_columns(dt, rng)
    x = xp.asarray(a, device=device)
    got = _check(lse_cols, [x], loose=True)
    want = lse_cols(xp.asarray(a, device=CPU))
    np.testing.assert_array_equal(np.isnan(to_numpy(got)), np.isnan(to_numpy(want)))
    np.testing.assert_array_equal(np.isinf(to_numpy(got)), np.isinf(to_numpy(want)))
    _check(csoftmax, [x], loose=True)
    _check(lambda v: (lse_cols(v), xp.max(v, axis=0)), [x], loose=True)
    # strided and transposed views, and a split range (a column of 70001: the partials)
    _check(lse_cols, [x[::-2, ::2]], loose=True)
    _check(lse_cols, [xp.asarray(np.ascontiguousarray(a[:, :3].T), device=device).mT],
           loose=True)
    long = xp.asarray(rng.standard_normal((70001, 3)).astype(a.dtype) * 20, device=device)
    _check(lse_cols, [long], loose=True)


def test_online_sumexp_plan():
    """The pass rewrites sum(exp(x - max(x, keepdims=True))) over the max's axes outside row
    kernels only, and the max rides on the sum's pass (one section, both outputs)."""
    from xp_cuda.fusion import _trace
    from xp_cuda._kernels import fusion_plan as fp
    a = xp.asarray(np.random.default_rng(1).standard_normal((300, 7)).astype(np.float32))
    t, nodes, *_ = _trace.trace(lse_cols, [a], {}, CPU)
    plan = kfusion.plan_program(t, list(nodes), [a._data], 132)
    assert plan.rows is None and len(plan.stages) == 2
    kinds = sorted(n.attr.kind for n in fp._walk_all(plan.stages[0].outs)
                   if n.op is fp.Op.REDUCE)
    assert kinds == ["max", "sumexp"]
    (prog, _) = kfusion.stage_programs(t, plan, [a._data], 132)
    assert prog.kernel.count("// reduction") == 1 and ".m;" in prog.kernel
    # not rewritten: a row kernel (softmax over rows), a sum with dtype=, other axes, or a
    # max without keepdims
    for f in (lambda v: softmax(v),
              lambda v: xp.sum(xp.exp(v - xp.max(v, axis=0, keepdims=True)), axis=0,
                               dtype=xp.float64),
              lambda v: xp.sum(xp.exp(v - xp.max(v, axis=0, keepdims=True)), axis=1),
              lambda v: xp.sum(xp.exp(v - xp.max(v, axis=0)), axis=0)):
        t, nodes, *_ = _trace.trace(f, [a], {}, CPU)
        plan = kfusion.plan_program(t, list(nodes), [a._data], 132)
        assert all(n.attr.kind != "sumexp" for n in fp._walk_all(plan.outs)
                   if n.op is fp.Op.REDUCE), f


# ---- reductions riding on another's pass (fusion_plan.rides) ---------------------------------
def _batch_norm(a):
    m = xp.mean(a, axis=(0, 2, 3), keepdims=True)
    return (a - m) / xp.sqrt(xp.var(a, axis=(0, 2, 3), keepdims=True) + 1e-5)


def _stage_sources(f, a):
    from xp_cuda.fusion import _trace
    from xp_cuda.fusion._fuse import _view_only
    t, nodes, _, sources = _trace.trace(f, [a], {}, CPU)
    outs = [n for n, s_ in zip(nodes, sources) if s_ is None and not _view_only(n)]
    plan = kfusion.plan_program(t, outs, [a._data], 132)
    assert plan.rows is None
    return [p.kernel for p in kfusion.stage_programs(t, plan, [a._data], 132)]


def test_mean_rides_on_moments_plan():
    """A mean of the same operand over the same axes as a var or std is written by the
    moments' section (one read of x for both, whatever either's keepdims); a mean of another
    operand, over other axes or of another dtype gets its own section."""
    a = xp.asarray(np.random.default_rng(2).standard_normal((4, 3, 5, 6)).astype(np.float32))
    first = _stage_sources(_batch_norm, a)[0]
    assert first.count("// reduction") == 1 and "XpMomentsS<double, float" in first
    assert "in the var's pass, one read of x" in fuse(_batch_norm).plan(a)
    c = xp.asarray(np.random.default_rng(3).standard_normal((300, 7)))
    (only,) = _stage_sources(lambda v: (xp.std(v, axis=0), xp.mean(v, axis=0, keepdims=True)),
                             c)
    assert only.count("// reduction") == 1 and "XpMomentsS<double, double" in only
    for f in (lambda v: (xp.var(v, axis=0), xp.mean(v * 2, axis=0)),  # another operand
              lambda v: (xp.var(v, axis=0), xp.mean(v, axis=(0, 1))),  # other axes
              lambda v: (xp.var(v, axis=0), xp.mean(xp.astype(v, xp.float32), axis=0))):
        (k,) = _stage_sources(f, c)
        assert k.count("// reduction") == 2 and "XpMomentsS" not in k


def _min_max_scale(v):
    lo = xp.min(v, axis=0)
    return (v - lo) / (xp.max(v, axis=0) - lo)


def test_min_rides_on_max_plan():
    """A min beside a max of the same operand and axes (or a max beside a min) shares its
    section: one pair of accumulators; not where the host reads words or column vectors
    (8-bit max over rows), nor for another operand."""
    c = xp.asarray(np.random.default_rng(4).standard_normal((300, 7)).astype(np.float32))
    for f in (lambda v: (xp.max(v, axis=0), xp.min(v, axis=0, keepdims=True)),
              _min_max_scale):
        k = _stage_sources(f, c)[0]
        assert k.count("// reduction") == 1 and "XpMinMaxOp<float" in k, k[:400]
    i8 = xp.asarray(np.random.default_rng(5).integers(-100, 100, (300, 64), dtype=np.int8))
    for f, a in ((lambda v: (xp.max(v, axis=1), xp.min(v, axis=1)), i8),
                 (lambda v: (xp.max(v, axis=0), xp.min(v + 1, axis=0)), c)):
        (k,) = _stage_sources(f, a)
        assert k.count("// reduction") == 2 and "XpMinMax" not in k


def test_mean_riding_on_moments_matches_eager(device, rng):
    """The riding mean is the eager mean (its dtype, infinities, NaN, overflow past float32)
    up to the order of its additions; the var/std beside it unchanged. Rows, columns and the
    image axes; ranges split across blocks and not; strided and broadcast inputs."""
    axes = (0, 2, 3)
    for dt in (xp.float32, xp.float64):
        x = _arr(rng, (6, 5, 7, 9), dt, device)
        v = np.array(to_numpy(x))
        v[0, 1, 2, 3], v[1, 2, 0, 0], v[2, 3, 4, 5] = np.inf, -np.inf, np.nan
        v[:, 4] = np.finfo(v.dtype).max / 2  # its sum overflows: the mean is inf
        m, var = fuse(lambda t: (xp.mean(t, axis=axes), xp.var(t, axis=axes)))(
            xp.asarray(v, device=device))
        ref = xp.asarray(v)
        _same(m, xp.mean(ref, axis=axes), loose=True)
        assert np.isinf(to_numpy(m)[[1, 2, 4]]).all() and np.isnan(to_numpy(m)[3])
        # (channel 4's variance: 0 from the moments, inf from NumPy's overflowed mean)
        _same(var[:4], xp.var(ref, axis=axes)[:4], loose=True)
        for a in (x, x[:, :, ::2, ...], xp.broadcast_to(x[:1, ...], (4, 5, 7, 9))):
            _check(_batch_norm, [a], loose=True)
            _check(lambda t: (xp.mean(t, axis=(0, 2, 3)), xp.std(t, axis=(0, 2, 3),
                                                                  correction=1)), [a], loose=True)
        long_rows = _arr(rng, (3, 200001), dt, device)  # split across blocks
        tall = _arr(rng, (30001, 5), dt, device)
        for a in (long_rows, tall):
            for ax in (0, 1):
                _check(lambda t: (xp.var(t, axis=ax, keepdims=True), xp.mean(t, axis=ax)),
                       [a], loose=True)


def test_min_riding_on_max_matches_eager(device, rng):
    """max and min in one section are the eager max and min exactly (NaN included), for every
    real dtype, over rows, columns and all axes, split across blocks and not, strided."""
    for dt in (xp.float32, xp.float64, xp.int32, xp.int16, xp.uint8, xp.int64):
        for shape in ((6, 5, 7), (3, 200001), (30001, 5)):
            x = _arr(rng, shape, dt, device, small=False)
            if dt.kind == "float":
                v = np.array(to_numpy(x))
                v.reshape(-1)[[5, 1000 % v.size]] = np.nan, -np.inf
                x = xp.asarray(v, device=device)
            for ax in (0, -1, None):
                _check(lambda t: (xp.max(t, axis=ax), xp.min(t, axis=ax, keepdims=True)), [x])
                _check(lambda t: (xp.min(t, axis=ax), xp.max(t, axis=ax)), [x[::2, ...]])
        y = _arr(rng, (64, 33), dt, device, small=False)
        _check(lambda t: (t - xp.min(t, axis=0)) * (xp.max(t, axis=0) - xp.min(t, axis=0)),
               [y])
        if dt.kind == "float":
            _check(_min_max_scale, [y])


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("n_in", [1, 5])
def test_row_kernels_run_without_spills(n_in):
    """A row kernel's registers are capped for full residency; one that would spill under
    the cap (five rows of 4096 float32 held at once: 40 registers of data a thread) is built
    again without it. Either way no thread uses local memory, and the values are eager's."""
    from xp_cuda._kernels._runtime import local_bytes

    def f(*xs):
        s = xs[0]
        for x in xs[1:]:
            s = s * x + x
        return s - xp.max(s, axis=-1, keepdims=True)

    dev = Device("cuda", 0)
    rng = np.random.default_rng(n_in)
    args = [xp.asarray(rng.standard_normal((64, 4096)).astype(np.float32), device=dev)
            for _ in range(n_in)]
    g = fuse(f)
    got, want = to_numpy(g(*args)), to_numpy(f(*args))
    np.testing.assert_array_equal(got, want)
    (entry,) = g._cache.values()
    launch = entry.launch
    launch.finish()  # the full-option kernel (TIERED), checked for spills as it is taken
    assert launch.plan.rows is not None and local_bytes(launch.variant[0]) == 0
    capped = "__launch_bounds__(512, 4)" in launch.source
    assert capped == (n_in == 1), launch.source[:300]
