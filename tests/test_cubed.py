"""Cubed on xp_cuda: Cubed computations whose chunks are xp_cuda arrays (through the adapter
``xp_cuda.compat``, docs/cubed.md) give NumPy's answers, with the single-threaded, threads and
processes executors, on arrays larger than a task's memory, and on several devices (one per
worker process).

Cubed reads its backend once, when first imported: this file sets
``CUBED_BACKEND_ARRAY_API_MODULE=xp_cuda.compat`` before importing it, and runs in a process
of its own (CI: a Python 3.12 venv; the main suite has no Cubed, so this file skips there).
The device is compat's (xp_cuda's default: ``XP_CUDA_DEFAULT_DEVICE=cuda:0`` runs the same
file on a GPU); results are compared on the host through ``numpy.asarray``.
"""
from __future__ import annotations

import importlib.util
import itertools
import multiprocessing
import os
import sys
import time
import uuid

import numpy as np
import pytest

BACKEND = "xp_cuda.compat"
if importlib.util.find_spec("cubed") is None:
    pytest.skip("Cubed is not installed (Python 3.12 or later: pip install -e .[engines])",
                allow_module_level=True)

import xp_cuda  # noqa: E402
from xp_cuda import _revisions  # noqa: E402
from xp_cuda.nonstandard import numpy_copies  # noqa: E402

# compat puts the newest revision in force and numpy_copies on, for the whole process: keep
# them to this file's tests (the fixture below), so a session that runs other tests too keeps
# its own settings.
_BEFORE = (_revisions.api_version(), numpy_copies(False))
numpy_copies(_BEFORE[1])
if "cubed" not in sys.modules:
    os.environ["CUBED_BACKEND_ARRAY_API_MODULE"] = BACKEND
cubed = pytest.importorskip("cubed")

import cubed.array_api as cxp  # noqa: E402
import cubed.random  # noqa: E402
from cubed.backend_array_api import namespace as _backend  # noqa: E402

if _backend.__name__ != BACKEND:
    pytest.skip(f"Cubed was imported earlier in this process with {_backend.__name__} as its "
                f"backend; run tests/test_cubed.py in a process of its own",
                allow_module_level=True)

from xp_cuda import compat  # noqa: E402
from xp_cuda._array import Array  # noqa: E402

_AFTER = (_revisions.api_version(), numpy_copies(_BEFORE[1]))
if multiprocessing.current_process().name == "MainProcess":
    # (a worker of the processes executor imports this file to find record_device: there
    # compat's settings stay, as its tasks need them)
    xp_cuda.set_api_version(_BEFORE[0])
else:
    numpy_copies(_AFTER[1])
DEVICE = compat.worker_device()
MB = 1_000_000


@pytest.fixture(autouse=True, scope="module")
def _compat_settings():
    xp_cuda.set_api_version(_AFTER[0])
    numpy_copies(_AFTER[1])
    yield
    xp_cuda.set_api_version(_BEFORE[0])
    numpy_copies(_BEFORE[1])


@pytest.fixture
def spec(tmp_path):
    return cubed.Spec(tmp_path, allowed_mem=100 * MB)


EXECUTORS = ["single-threaded", "threads"]


def _executor(name: str):
    from cubed.runtime.create import create_executor
    options = {"max_workers": 2} if name in ("threads", "processes") else None
    return create_executor(name, options)


def _data(shape, dtype, seed=0, low=1, high=9):
    """Random non-zero data of a NumPy dtype (never zeros, so a dropped chunk shows)."""
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(low, high, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(low, high, shape).astype(dtype)


def _compare(got, expected, rtol=None):
    """``got`` (a computed result) is a compat array (an xp_cuda array) on compat's device
    (this thread's: a test may set XP_CUDA_COMPAT_DEVICES) with NumPy's ``expected`` values
    and dtype, compared on the host."""
    assert type(got) is compat.CompatArray and isinstance(got, Array), type(got)
    assert got.device == compat.worker_device()
    host = np.asarray(got)
    expected = np.asarray(expected)
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape
    if rtol is None:
        rtol = 1e-5 if host.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(host, expected, rtol=rtol, atol=0)
    return host


def check(arr, expected, executor="single-threaded", rtol=None):
    """Compute ``arr`` (a Cubed array) and compare it with NumPy's ``expected``."""
    return _compare(arr.compute(executor=_executor(executor)), expected, rtol)


def check_all(cases, executor="single-threaded"):
    """``check`` for (array, expected, rtol) cases, computed together (one plan)."""
    results = cubed.compute(*(c[0] for c in cases), executor=_executor(executor))
    for got, (arr, expected, rtol) in zip(results, cases):
        _compare(got, expected, rtol)


# ---------------------------------------------------------------------------------------------
# creation and the adapter's edge
# ---------------------------------------------------------------------------------------------

def test_the_backend_is_compat_and_cubed_sees_compat_dtypes():
    assert _backend is compat
    assert cxp.float32 == np.float32 and cxp.int64 == np.int64  # compat's dtypes are NumPy's
    assert cubed.__array_namespace_info__().default_dtypes()["real floating"] == np.float64
    assert xp_cuda.__array_api_version__ == _revisions.REVISIONS[-1]  # (the fixture's)


def test_compat_is_the_newest_namespace_with_strict_functions_where_nothing_converts():
    """Where nothing converts, compat's function is the strict one, its result made a
    CompatArray (``_lift``: the same buffer, compat's array type) and nothing else."""
    assert compat.__array_api_version__ == _revisions.REVISIONS[-1]
    assert set(xp_cuda.__all__) <= set(compat.__all__)
    for name in ("sin", "matmul", "reshape", "argmax", "flip", "unstack", "broadcast_shapes",
                 "permute_dims"):
        assert getattr(compat, name).__wrapped__ is getattr(xp_cuda, name), name
    assert compat.linalg.qr.__wrapped__ is xp_cuda.linalg.qr
    for name in [*compat.CONVERT, *compat.ENGINE_CALLS]:
        module, _, fn = name.rpartition(".")
        space = getattr(compat, module) if module else compat
        assert getattr(space, fn).__wrapped__ is not getattr(
            getattr(xp_cuda, module, xp_cuda), fn, None), name


def test_compat_converts_at_its_edge():
    a = compat.asarray(np.arange(6).reshape(2, 3))
    assert a.device == DEVICE and a.dtype == xp_cuda.int64
    assert compat.zeros(3, dtype=np.float32, device=str(DEVICE)).dtype == xp_cuda.float32
    assert compat.ones((2,), dtype=float).device == DEVICE
    assert compat.astype(a, np.int8).dtype == xp_cuda.int8
    assert compat.isdtype(np.int8, "integral") and compat.can_cast(np.int8, xp_cuda.int16)
    assert compat.result_type(np.float32, a) == np.float64  # (NumPy's: the standard has none)
    assert compat.iinfo(np.uint8).max == 255
    info = compat.__array_namespace_info__()
    assert info.default_device() == DEVICE
    assert info.default_dtypes(device=str(DEVICE))["indexing"] == np.int64
    assert info.dtypes(kind="bool") == {"bool": np.dtype(bool)}
    assert info.capabilities() == xp_cuda.__array_namespace_info__().capabilities()
    fields = compat.asarray(np.ones(3, dtype=[("n", "i8"), ("total", "f8")]))
    assert set(fields) == {"n", "total"} and fields["total"].dtype == xp_cuda.float64
    assert int(compat.take(a, np.asarray([2]), axis=1)[1, 0]) == 5


def test_compat_holds_the_engines_non_standard_calls():
    x = compat.asarray([[1.0, float("nan")], [3.0, 4.0]])
    assert np.asarray(compat.nansum(x, axis=1)).tolist() == [1.0, 7.0]
    mask = compat.asarray([True, False, True])
    assert int(compat.sum(mask)) == 2 and compat.sum(mask).dtype == xp_cuda.int64
    assert float(compat.mean(compat.asarray([1, 2]), dtype=np.float64)) == 1.5
    total, n = compat.asarray([3.0, 5.0]), compat.asarray([2, 2])
    assert np.asarray(compat.divide(total, n)).tolist() == [1.5, 2.5]
    assert np.asarray(compat.take(x, 1, axis=0)).tolist() == [3.0, 4.0]
    assert compat.full_like(x, 7, shape=(1, 3)).shape == (1, 3)
    assert compat.squeeze(compat.ones((1, 3, 1))).shape == (3,)
    assert np.asarray(compat.diff(compat.asarray([1, 3, 6]), append=10)).tolist() == [2, 3, 4]
    assert int(compat.prod((2, 3, 4), dtype=np.int64)) == 24
    assert compat.array([1, 2]).dtype == xp_cuda.int64
    i, f = compat.asarray([1, 2], dtype=np.int32), compat.asarray([0.5, 0.5])
    assert np.asarray(compat.add(i, f)).tolist() == [1.5, 2.5]  # NumPy's promotion


def test_compat_errors_are_clear():
    with pytest.raises(TypeError, match="NumPy's dtype\\('<U3'\\) has no xp_cuda counterpart"):
        compat.zeros(2, dtype="U3")
    with pytest.raises(ValueError, match="cannot read 'gpu' as a device"):
        compat.zeros(2, device="gpu")
    with pytest.raises(ValueError, match="cpu:7 is a simulated device.*XP_CUDA_CPU_DEVICES=8"):
        compat.zeros(2, device="cpu:7")
    with pytest.raises(AttributeError, match="compat has the names of the Array API"):
        compat.nanmax  # noqa: B018
    x = compat.asarray([1, 2])
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"  # (neither an array nor a scalar: the strict operator's refusal)
    with pytest.raises(TypeError, match="cannot be promoted"):
        x += compat.asarray([0.5, 0.5])  # (NumPy refuses int += float too)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d array"):
        len(compat.asarray(1.0))


# ---------------------------------------------------------------------------------------------
# compat's arrays: a lenient subclass; xp_cuda's own arrays stay strict
# ---------------------------------------------------------------------------------------------

def test_compat_returns_compat_arrays_through_every_path():
    """Every array compat returns is a CompatArray, and so is every result of its operators,
    indexing, T, mT, to_device, copy, iteration and pickling: the leniency persists through
    an engine's chain of calls."""
    import copy
    import pickle
    C = compat.CompatArray
    a = compat.reshape(compat.arange(6, dtype=np.float64), (2, 3))
    i = compat.asarray(np.arange(6).reshape(2, 3))
    assert type(a) is C and type(i) is C and issubclass(C, Array)
    results = [a + 1, 1 + a, a * i, i / 2, 2 // i, -a, abs(a), ~i, a > i, 2 < a, a @ a.T,
               a[0, :], a[np.asarray([1, 0]), :], a[np.int64(1), ...], a[a > 2], a.T, a.mT,
               a.to_device(DEVICE), a.to_device(str(DEVICE)), copy.copy(a), copy.deepcopy(a),
               pickle.loads(pickle.dumps(a)), *a, *compat.unstack(a),
               *compat.meshgrid(a[0, :], a[1, :]), *compat.unique_all(i),
               *compat.linalg.qr(a @ a.T + 1), *compat.asarray(
                   np.ones(3, dtype=[("n", "i8"), ("total", "f8")])).values(),
               compat.sum(a, axis=0), compat.astype(i, np.int8), compat.nansum(a),
               compat.fft.rfft(a), compat.take(a, 1, axis=1), compat.asarray(a)]
    for r in results:
        assert type(r) is C, r
    q = compat.linalg.qr(a @ a.T + 1)
    assert type(q).__name__ == "QRResult" and type(q.Q) is C  # (named tuples keep their type)
    assert np.asarray(pickle.loads(pickle.dumps(i))).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert a.__array_namespace__() is compat


def test_compat_operators_are_numpys():
    """Every operator of CompatArray, forward, reflected and in place, on arrays of one kind,
    of two kinds and beside Python scalars, gives NumPy's values and dtypes."""
    import operator as op
    binary = [op.add, op.sub, op.mul, op.truediv, op.floordiv, op.mod, op.pow, op.and_,
              op.or_, op.xor, op.lshift, op.rshift, op.lt, op.le, op.gt, op.ge, op.eq, op.ne]
    n_i, n_j = np.asarray([3, 8, 5], dtype=np.int32), np.asarray([1, 2, 3])
    n_f = np.asarray([0.5, 2.0, 4.0])
    n_b = np.asarray([True, False, True])
    i, j, f, b = (compat.asarray(n) for n in (n_i, n_j, n_f, n_b))
    pairs = [(i, j, n_i, n_j), (i, 2, n_i, 2), (2, j, 2, n_j), (f, i, n_f, n_i),
             (i, f, n_i, n_f), (i, 1.5, n_i, 1.5), (1.5, i, 1.5, n_i), (f, 2, n_f, 2),
             (i, True, n_i, True), (b, 2, n_b, 2), (b, 0.5, n_b, 0.5), (b, i, n_b, n_i)]
    for fn in binary:
        for x, y, n_x, n_y in pairs:
            if fn is op.pow and n_b is n_x:  # (NumPy's pow of bools: its int8 loop)
                continue
            try:
                want = fn(n_x, n_y)
            except TypeError:  # (NumPy has no shifts or bitwise operators of floats)
                with pytest.raises(TypeError):
                    fn(x, y)
                continue
            got = fn(x, y)
            assert type(got) is compat.CompatArray, (fn, x, y)
            host = np.asarray(got)
            assert host.dtype == want.dtype, (fn, x, y, host.dtype, want.dtype)
            np.testing.assert_allclose(host, want, rtol=1e-15, err_msg=f"{fn} {x} {y}")
    for fn in (op.neg, op.pos, op.abs, op.invert):
        assert np.asarray(fn(i)).tolist() == fn(n_i).tolist()
    m = compat.reshape(f, (1, 3))
    assert np.asarray(m @ m.T).tolist() == [[n_f @ n_f]]
    for fn in (op.iadd, op.isub, op.imul, op.itruediv):  # (float in place, int operand)
        g, n_g = compat.asarray(n_f, copy=True), n_f.copy()
        assert fn(g, j) is g
        np.testing.assert_array_equal(np.asarray(g), fn(n_g, n_j))


def test_xp_cuda_arrays_stay_strict_beside_compat():
    """Importing compat changes no rule of xp_cuda's own arrays: its functions return plain
    Arrays, whose operators, len and indexing keep the standard's rules."""
    i, f = xp_cuda.asarray([1, 2]), xp_cuda.asarray([0.5, 1.5])
    assert type(i) is Array and type(xp_cuda.sin(f)) is Array and type(i + 1) is Array
    with pytest.raises(TypeError, match="cannot be promoted under the Array API"):
        i * f
    with pytest.raises(TypeError, match="Python float cannot be combined"):
        i - 1.0
    with pytest.raises(TypeError, match="divide requires a floating-point dtype"):
        i / 2
    with pytest.raises(TypeError):
        len(i)
    with pytest.raises(IndexError, match="is not allowed"):
        f[np.asarray([0])]
    with pytest.raises(TypeError, match="cannot be promoted"):
        xp_cuda.add(i, f)  # (compat's add promotes; xp_cuda's does not)


def test_compat_arrays_are_lenient_as_numpy():
    """The leniencies of CompatArray (ARRAY_LENIENCY), each as NumPy computes it."""
    n_i, n_f = np.asarray([3, 4, 5]), np.asarray([0.5, 2.0, -1.5])
    i, f = compat.asarray(n_i), compat.asarray(n_f)
    b = compat.asarray(np.asarray([True, False, True]))
    cases = [(i * f, n_i * n_f), (f * i, n_f * n_i), (i - 1.0, n_i - 1.0),
             (1.5 * i, 1.5 * n_i), (i / 2, n_i / 2), (2 / i, 2 / n_i), (i / i, n_i / n_i),
             (i ** 0.5, n_i ** 0.5), (b + 1, np.asarray([True, False, True]) + 1),
             (i == np.int64(4), n_i == np.int64(4)), (f - n_i, n_f - n_i),
             (n_f - i, n_f - n_i), (f < i, n_f < n_i), (compat.where(b, i, 0.5),
                                                        np.where(b, n_i, 0.5))]
    for got, want in cases:
        assert got.device == DEVICE
        host = np.asarray(got)
        assert host.dtype == want.dtype, (host.dtype, want.dtype)
        np.testing.assert_allclose(host, want, rtol=1e-15)
    g = compat.asarray(n_f, copy=True)
    g += i  # (a float array takes an int array in place, as NumPy)
    np.testing.assert_array_equal(np.asarray(g), n_f + n_i)
    m = compat.reshape(compat.arange(12), (3, 4))
    n_m = np.arange(12).reshape(3, 4)
    assert len(m) == 3 and len(compat.ones((0, 2))) == 0
    rows, cols = np.asarray([[2], [0]]), np.asarray([1, 3])
    np.testing.assert_array_equal(np.asarray(m[rows, cols]), n_m[rows, cols])
    np.testing.assert_array_equal(np.asarray(m[np.asarray([2, 0]), 1:3]),
                                  n_m[np.asarray([2, 0]), 1:3])
    np.testing.assert_array_equal(np.asarray(m[n_m > 6]), n_m[n_m > 6])
    m[n_m > 6] = np.int64(0)
    n_m[n_m > 6] = 0
    np.testing.assert_array_equal(np.asarray(m), n_m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_creation(spec, dtype):
    check(cxp.ones((7, 5), dtype=dtype, chunks=(3, 2), spec=spec), np.ones((7, 5), dtype))
    check(cxp.zeros((7, 5), dtype=dtype, chunks=(3, 2), spec=spec), np.zeros((7, 5), dtype))
    check(cxp.full((7, 5), 3, dtype=dtype, chunks=(3, 2), spec=spec),
          np.full((7, 5), 3, dtype))
    check(cxp.arange(2, 41, 3, dtype=dtype, chunks=4, spec=spec), np.arange(2, 41, 3, dtype))
    check(cxp.eye(6, 8, k=1, dtype=dtype, chunks=(4, 3), spec=spec), np.eye(6, 8, 1, dtype))
    a = _data((9, 4), dtype)
    check(cxp.asarray(a, chunks=(4, 3), spec=spec), a)
    check(cubed.from_array(a, chunks=(2, 2), spec=spec), a)


def test_linspace_and_full_like(spec):
    check(cxp.linspace(0.0, 1.0, 11, chunks=4, spec=spec), np.linspace(0.0, 1.0, 11))
    x = cxp.ones((5, 6), dtype=cxp.int32, chunks=(2, 4), spec=spec)
    check(cxp.full_like(x, 7), np.full((5, 6), 7, np.int32))
    check(cxp.zeros_like(x, dtype=cxp.float32), np.zeros((5, 6), np.float32))


# ---------------------------------------------------------------------------------------------
# elementwise chains, where, astype
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floating_chain(spec, executor, dtype):
    a, b = _data((30, 20), dtype, 1), _data((30, 20), dtype, 2)
    x = cubed.from_array(a, chunks=(7, 6), spec=spec)
    y = cubed.from_array(b, chunks=(7, 6), spec=spec)
    z = cxp.sin(x) * 2 + x ** 2 / (y + 3) - cxp.sqrt(y) * cxp.exp(-x)
    with np.errstate(all="ignore"):
        want = np.sin(a) * 2 + a ** 2 / (b + 3) - np.sqrt(b) * np.exp(-a)
    check(z, want.astype(dtype), executor, rtol=1e-4 if dtype == np.float32 else 1e-12)
    check(cxp.abs(-x) >= cxp.floor(y), np.abs(-a) >= np.floor(b), executor)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_chain(spec, dtype):
    a, b = _data((25, 8), dtype, 3), _data((25, 8), dtype, 4)
    x = cubed.from_array(a, chunks=(6, 5), spec=spec)
    y = cubed.from_array(b, chunks=(6, 5), spec=spec)
    z = ((x * 3 + y) // 2 % 7) ^ (y & x) | (x >> 1)
    check(z, ((a * 3 + b) // 2 % 7) ^ (b & a) | (a >> 1))


def test_complex_chain(spec):
    a = _data((12, 10), np.complex128, 5)
    x = cubed.from_array(a, chunks=(5, 4), spec=spec)
    check(cxp.real(x * cxp.conj(x)) + cxp.abs(x), np.real(a * np.conj(a)) + np.abs(a))


def test_where_and_astype(spec):
    a, b = _data((16, 9), np.float64, 6), _data((16, 9), np.float64, 7)
    x = cubed.from_array(a, chunks=(5, 4), spec=spec)
    y = cubed.from_array(b, chunks=(5, 4), spec=spec)
    check(cxp.where(x > y, x, y - 1), np.where(a > b, a, b - 1))
    check(cxp.astype(x * 10, cxp.int32), (a * 10).astype(np.int32))
    check(cxp.astype(x, cxp.float32), a.astype(np.float32))
    check(cxp.astype(x > 4, cxp.uint8), (a > 4).astype(np.uint8))


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------

_AXES = [None] + [ax for r in (1, 2, 3) for ax in itertools.combinations(range(3), r)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reductions_over_every_axis_set(spec, dtype):
    a = _data((9, 8, 7), dtype, 8, 1, 1.2 if dtype != np.int32 else 3)
    x = cubed.from_array(a, chunks=(4, 3, 5), spec=spec)
    wide = {np.int32: np.int64, np.float32: np.float32, np.float64: np.float64}[dtype]
    cases = []
    for axis in _AXES:
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            cases += [(cxp.sum(x, **kw), np.sum(a, **kw, dtype=wide), 1e-4),
                      (cxp.max(x, **kw), np.max(a, **kw), None),
                      (cxp.min(x, **kw), np.min(a, **kw), None)]
        if dtype != np.int32:
            cases += [(cxp.prod(x, axis=axis), np.prod(a, axis=axis), 1e-3),
                      (cxp.mean(x, axis=axis), np.mean(a, axis=axis, dtype=dtype), 1e-4)]
    check_all(cases)
    check(cxp.all(x > 1, axis=(0, 2)), np.all(a > 1, axis=(0, 2)))
    check(cxp.any(x > 2, axis=1), np.any(a > 2, axis=1))


@pytest.mark.parametrize("executor", EXECUTORS)
def test_mean(spec, executor):
    a = _data((40, 30), np.float64, 9)
    x = cubed.from_array(a, chunks=(7, 8), spec=spec)
    check(cxp.mean(x), np.mean(a), executor)
    check(cxp.mean(x, axis=0, keepdims=True), np.mean(a, axis=0, keepdims=True), executor)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_and_std(spec, axis):
    """Cubed's var multiplies int64 counts by float64 means on the chunks' operators
    (cubed/array_api/statistical_functions.py:311-312) and subtracts a float correction from
    a count (:322): CompatArray's operators promote as NumPy (ARRAY_LENIENCY)."""
    a = _data((20, 12), np.float64, 10)
    x = cubed.from_array(a, chunks=(6, 5), spec=spec)
    check(cxp.var(x, axis=axis), np.var(a, axis=axis))
    check(cxp.std(x, axis=axis, correction=1), np.std(a, axis=axis, ddof=1))


def test_var_of_a_single_chunk_and_of_integers(spec):
    """One chunk along the axis (no combine: only the count minus the correction, :322), and
    an integer array (its chunk minus its float64 mean, :290)."""
    a = _data((6, 4), np.float64, 11)
    check(cxp.var(cubed.from_array(a, chunks=(6, 4), spec=spec), axis=0), np.var(a, axis=0))
    k = _data((9, 7), np.int32, 12)
    check(cxp.var(cubed.from_array(k, chunks=(4, 3), spec=spec), axis=1), np.var(k, axis=1))


def test_argmax_argmin(spec):
    a = _data((17, 13), np.float64, 12)
    x = cubed.from_array(a, chunks=(5, 4), spec=spec)
    check(cxp.argmax(x, axis=0), np.argmax(a, axis=0))
    check(cxp.argmin(x, axis=1), np.argmin(a, axis=1))
    # (no axis: Cubed flattens, which needs chunks spanning whole rows, on any backend)
    check(cxp.argmax(cubed.from_array(a, chunks=(5, 13), spec=spec)), np.argmax(a))


def test_nanmean_and_nansum(spec):
    a = _data((15, 11), np.float64, 13)
    a[::3, ::2] = np.nan
    a[4] = np.nan
    x = cubed.from_array(a, chunks=(4, 5), spec=spec)
    check(cubed.nanmean(x, axis=0), np.nanmean(a, axis=0))
    check(cubed.nanmean(x), np.nanmean(a))
    check(cubed.nansum(x, axis=1), np.nansum(a, axis=1))


# ---------------------------------------------------------------------------------------------
# linear algebra and manipulation
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul(spec, dtype):
    a, b = _data((12, 10), dtype, 14), _data((10, 9), dtype, 15)
    x = cubed.from_array(a, chunks=(5, 4), spec=spec)
    y = cubed.from_array(b, chunks=(4, 3), spec=spec)
    check(x @ y, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)
    check(cxp.matmul(x, cxp.matrix_transpose(x)), a @ a.T,
          rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_rechunk(spec):
    a = _data((24, 18), np.int64, 16)
    x = cubed.from_array(a, chunks=(5, 7), spec=spec)
    y = x.rechunk((12, 2))
    assert y.chunks == ((12, 12), (2,) * 9)
    check(y + 1, a + 1)


def test_slicing(spec):
    a = _data((20, 15), np.float64, 17)
    x = cubed.from_array(a, chunks=(6, 4), spec=spec)
    check(x[3:17, 2:11], a[3:17, 2:11])
    check(x[1:19:3, ::2], a[1:19:3, ::2])
    check(x[5, ...], a[5])
    check(x[..., -1], a[..., -1])
    check(x[None, 2:4, :], a[None, 2:4, :])


def test_concat_stack_reshape(spec):
    a, b = _data((8, 6), np.float32, 18), _data((5, 6), np.float32, 19)
    x = cubed.from_array(a, chunks=(3, 4), spec=spec)
    y = cubed.from_array(b, chunks=(3, 4), spec=spec)
    check(cxp.concat([x, y], axis=0), np.concatenate([a, b], axis=0))
    check(cxp.stack([x, x * 2], axis=1), np.stack([a, a * 2], axis=1))
    rows = cubed.from_array(a, chunks=(4, 6), spec=spec)  # (Cubed reshapes whole-row chunks)
    check(cxp.reshape(rows, (2, 4, 6)), a.reshape(2, 4, 6))
    check(cxp.reshape(rows, (48,)), a.reshape(48))
    check(cxp.permute_dims(x, (1, 0)), a.T)
    check(cxp.expand_dims(x, axis=(0, 2)), np.expand_dims(a, (0, 2)))
    check(cxp.flip(x, axis=0), np.flip(a, 0))


# ---------------------------------------------------------------------------------------------
# random, larger than memory, processes, several devices
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random(spec, dtype):
    r = cubed.random.random((30, 20), dtype=dtype, chunks=(8, 7), spec=spec)
    values = check(r, np.asarray(r.compute()))  # deterministic: the same seed each compute
    assert values.dtype == dtype and (values >= 0).all() and (values < 1).all()
    assert len(np.unique(values)) > 500
    check(cxp.sum(r, axis=0), values.sum(axis=0, dtype=dtype), rtol=1e-4)


def test_larger_than_the_memory_of_a_task(tmp_path):
    """An array eight times allowed_mem: every task works on chunks, and the reductions over
    them give NumPy's answers on the whole."""
    spec = cubed.Spec(tmp_path, allowed_mem=4 * MB)
    r = cubed.random.random((2000, 2000), chunks=(250, 250), spec=spec)  # 32 MB
    assert r.nbytes >= 8 * spec.allowed_mem
    whole = np.asarray(r.compute())
    check(cxp.mean(r, axis=0), whole.mean(axis=0), rtol=1e-10)
    check(cxp.max(r * 2 - 1, axis=1), (whole * 2 - 1).max(axis=1))
    check(cxp.sum(r), whole.sum(), rtol=1e-10)


def test_processes_executor(spec):
    a, b = _data((40, 30), np.float64, 20), _data((40, 30), np.float64, 21)
    x = cubed.from_array(a, chunks=(10, 10), spec=spec)
    y = cubed.from_array(b, chunks=(10, 10), spec=spec)
    check(cxp.mean(x * y + cxp.sqrt(x), axis=0), np.mean(a * b + np.sqrt(a), axis=0),
          "processes")


def record_device(block, folder=None, workers=2):
    """In a worker (a process of the pool, or a thread): write which worker computed this
    block and on which device (a file each: "<worker> <process name> <process number>
    <device>"), then wait until ``workers`` distinct workers have written, so that every
    worker of the pool gets blocks (a waiting task holds its worker; the pool hands the next
    block to another), and give the block back doubled. The wait is a rendezvous with no
    clock: it ends when the pool's ``workers`` workers have met, which _spread_over_workers
    checks the executor is configured for before computing."""
    import threading
    me = multiprocessing.current_process()
    worker = f"{os.getpid()}.{threading.get_ident()}"
    with open(os.path.join(folder, f"{worker}-{uuid.uuid4().hex}"), "w") as f:
        f.write(f"{worker} {me.name} {me._identity[0] if me._identity else 0} {block.device}")
    while len({name.split("-")[0] for name in os.listdir(folder)}) < workers:
        time.sleep(0.02)  # (polling the folder, not timing anything)
    return block * 2


def _spread_over_workers(tmp_path, executor, seed):
    """8 blocks through record_device on ``executor`` (2 workers), the sum checked against
    NumPy's; the records, one a block computed ("<worker> <process name> <number> <device>")."""
    folder = tmp_path / "devices"
    folder.mkdir()
    spec = cubed.Spec(tmp_path / "work", allowed_mem=100 * MB)
    a = _data((40, 10), np.float64, seed)
    x = cubed.from_array(a, chunks=(5, 10), spec=spec)  # 8 blocks
    workers = _executor(executor).kwargs["max_workers"]
    assert workers == 2  # the rendezvous waits for this many workers: the pool must have them
    y = cubed.map_blocks(record_device, x, dtype=x.dtype, folder=str(folder), workers=workers)
    check(cxp.sum(y, axis=1), (a * 2).sum(axis=1), executor)
    records = [p.read_text().split() for p in folder.iterdir()]
    assert len(records) >= 8  # (a task may run twice: a backup)
    return records


def test_several_devices_one_per_worker_process(tmp_path, monkeypatch):
    """XP_CUDA_COMPAT_DEVICES=cpu,cpu:1 (cpu:1 simulated, XP_CUDA_CPU_DEVICES=2): worker N of
    the processes executor computes on device (N - 1) % 2, so both are used, and the answer
    is NumPy's."""
    monkeypatch.setenv("XP_CUDA_CPU_DEVICES", "2")
    monkeypatch.setenv(compat.ENV_DEVICES, "cpu,cpu:1")
    records = _spread_over_workers(tmp_path, "processes", 22)
    devices = ["cpu", "cpu:1"]
    for _, name, number, device in records:
        assert name.startswith("SpawnProcess-")
        assert device == devices[(int(number) - 1) % 2], records
    assert {device for *_, device in records} == set(devices), records
    assert DEVICE == compat.worker_device()  # the main process keeps its device


def test_several_devices_one_per_worker_thread(tmp_path, monkeypatch):
    """XP_CUDA_COMPAT_DEVICES=cpu,cpu:1 with the threads executor: the worker threads take the
    devices in turn (consecutive threads, different devices), each keeps its own, both are
    used, and the answer is NumPy's; the main thread keeps the first device."""
    from xp_cuda.nonstandard import simulate_cpu_devices
    before = sum(1 for d in xp_cuda.__array_namespace_info__().devices() if str(d)[:3] == "cpu")
    simulate_cpu_devices(2)
    monkeypatch.setenv(compat.ENV_DEVICES, "cpu,cpu:1")
    monkeypatch.setattr(compat, "_chosen", None)
    try:
        records = _spread_over_workers(tmp_path, "threads", 23)
        by_thread: dict = {}
        for ident, _, _, device in records:
            by_thread.setdefault(ident, set()).add(device)
        assert all(len(d) == 1 for d in by_thread.values()), records  # a thread keeps its own
        assert {device for *_, device in records} == {"cpu", "cpu:1"}, records
        assert str(compat.worker_device()) == "cpu"  # the main thread
    finally:
        simulate_cpu_devices(before)


def test_the_main_process_computes_on_the_first_device(monkeypatch):
    from xp_cuda.nonstandard import simulate_cpu_devices
    before = sum(1 for d in xp_cuda.__array_namespace_info__().devices() if str(d)[:3] == "cpu")
    monkeypatch.setattr(compat, "_chosen", None)  # (compat chooses again, once per process)
    monkeypatch.setenv(compat.ENV_DEVICES, "cpu:1,cpu")
    simulate_cpu_devices(2)
    try:
        assert str(compat.worker_device()) == "cpu:1"
        assert compat.asarray(np.ones(2)).device == compat.worker_device()
        assert compat.__array_namespace_info__().default_device() == compat.worker_device()
        monkeypatch.setattr(compat, "_chosen", None)
        monkeypatch.setenv(compat.ENV_DEVICES, "cpu,cuda:7")
        with pytest.raises(ValueError, match="XP_CUDA_COMPAT_DEVICES='cpu,cuda:7'"):
            compat.worker_device()
    finally:
        simulate_cpu_devices(before)
