"""Creation kernels (creation.cu): every dtype against the NumPy reference, on cpu and cuda."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, INTEGER, NUMERIC, random_numpy, to_numpy
from xp_cuda._kernels import creation as K

REAL = [d for d in NUMERIC if d.kind != "complex"]
FLOATS = [d for d in NUMERIC if d.kind in ("float", "complex")]
ids = lambda d: d.name  # noqa: E731


def _same_bits(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(np.ascontiguousarray(got).reshape(-1).view(np.uint8),
                                  np.ascontiguousarray(ref).reshape(-1).view(np.uint8))


# ---- NVRTC: every kernel a launcher can ask for exists in the compiled source ---------------

from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
def test_every_launcher_kernel_compiles():
    import re
    from xp_cuda._kernels import kernel_sources, nvrtc_compile
    ptx = nvrtc_compile(kernel_sources()["creation.cu"], name="creation.cu")
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    assert set(K.kernel_names()) <= entries
    # i*step + start must stay two roundings, as in NumPy: no contraction in our own code
    body = ptx.split(".entry xp_linspace_float64(")[1].split(".entry")[0]
    assert "fma.rn.f64" not in body


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
def test_each_kernel_compiles_alone():
    """The runtime compiles one unit per kernel (a first call waits for its own kernel only);
    each unit must hold its kernel, and the units together every launcher name."""
    import re
    from xp_cuda._kernels import nvrtc_compile
    units = K.units()
    assert set(units) == set(K.kernel_names())
    by_unit = {}
    for name, unit in units.items():
        by_unit.setdefault(unit, []).append(name)
    for unit, names in by_unit.items():
        entries = set(re.findall(r"\.entry (\w+)\(", nvrtc_compile(unit, name="creation_unit.cu")))
        assert set(names) <= entries, names
        assert len(entries) <= 4, entries  # xp_fill and one instantiation line's kernels


# ---- fill: full / zeros / ones, every dtype, odd sizes, patterns and uniform bytes ----------

_FILLS = {"bool": [True, False], "int": [-3, 0, -1, 1, 100], "uint": [7, 0, 1, 255],
          "float": [2.5, -0.0, 0.0, float("nan"), float("-inf"), 1.0],
          "complex": [1 - 2j, 0j, complex(0.0, -0.0), complex(float("nan"), 1.0)]}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
@pytest.mark.parametrize("shape", [(), (1,), (3, 37), (1001,), (0, 4), (2, 3, 17)])
def test_full_every_dtype(device, dtype, shape):
    for v in _FILLS[dtype.kind]:
        x = xp.full(shape, v, dtype=dtype, device=device)
        assert x.device == device
        _same_bits(to_numpy(x), np.full(shape, v, dtype=dtype._np))
    for f, v in ((xp.zeros, 0), (xp.ones, 1)):
        _same_bits(to_numpy(f(shape, dtype=dtype, device=device)),
                   np.full(shape, v, dtype=dtype._np))


def test_full_checks_fill():
    with pytest.raises(OverflowError):
        xp.full(3, -1, dtype=xp.uint64)
    with pytest.raises(OverflowError):
        xp.full(3, 2**63, dtype=xp.int64)
    with pytest.raises(TypeError):
        xp.full(3, True, dtype=xp.float32)
    with pytest.raises(TypeError):
        xp.full(3, 1j, dtype=xp.float64)


# ---- eye and tril/triu -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_eye_every_dtype(device, dtype):
    for n, m, k in ((5, None, 0), (4, 7, 2), (7, 4, -3), (3, 3, 5), (3, 3, -5), (0, 3, 0),
                    (1, 1, 0), (33, 17, -1)):
        got = to_numpy(xp.eye(n, m, k=k, dtype=dtype, device=device))
        _same_bits(got, np.eye(n, m, k=k, dtype=dtype._np))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ids)
def test_tril_triu_batched_strided(rng, device, dtype):
    a = random_numpy(rng, (2, 3, 9, 14), dtype)
    x = xp.asarray(a, device=device)
    views = [(x, a), (x[:, :, ::2, 1::3], a[:, :, ::2, 1::3]),
             (xp.permute_dims(x, (0, 1, 3, 2)), a.transpose(0, 1, 3, 2))]
    for k in (-20, -2, 0, 1, 3, 20):
        for xv, av in views:
            _same_bits(to_numpy(xp.tril(xv, k=k)), np.tril(av, k=k))
            _same_bits(to_numpy(xp.triu(xv, k=k)), np.triu(av, k=k))
    e = xp.zeros((0, 3), dtype=dtype, device=device)
    assert xp.tril(e).shape == (0, 3)


def test_tri_errors(device):
    with pytest.raises(ValueError):
        xp.triu(xp.ones(4, device=device))
    with pytest.raises(TypeError):
        xp.tril(xp.ones((3, 3), device=device), k=1.0)


# ---- arange ---------------------------------------------------------------------------------

_INT_ARGS = [(0, 1001, 1), (-5, 250, 3), (100, -7, -2), (17, 3, -4), (5, 5, 1), (-128, 127, 1),
             (0, 10, 20), (3, 4, 1)]


@pytest.mark.parametrize("dtype", REAL, ids=ids)
def test_arange_every_dtype(device, dtype):
    info = np.iinfo(dtype._np) if dtype.kind in ("int", "uint") else None
    for start, stop, step in _INT_ARGS:
        vals = list(range(start, stop, step))
        if info is not None and vals and not (info.min <= min(vals) and max(vals) <= info.max):
            with pytest.raises(OverflowError):
                xp.arange(start, stop, step, dtype=dtype, device=device)
            continue
        got = to_numpy(xp.arange(start, stop, step, dtype=dtype, device=device))
        if info is not None:
            ref = np.array(vals, dtype=dtype._np)
        else:  # start + i*step in float64, then rounded to dtype
            ref = (np.arange(len(vals), dtype=np.float64) * float(step) + start).astype(
                dtype._np)
        _same_bits(got, ref)


def test_arange_extremes(device):
    got = to_numpy(xp.arange(2**64 - 7, 2**64 - 1, 2, dtype=xp.uint64, device=device))
    assert got.tolist() == list(range(2**64 - 7, 2**64 - 1, 2))
    got = to_numpy(xp.arange(2**63 - 1, -2**63, -(2**62), dtype=xp.int64, device=device))
    assert got.tolist() == list(range(2**63 - 1, -2**63, -(2**62)))
    assert to_numpy(xp.arange(2**53 + 1, 2**53 + 9, 3, device=device)).tolist() == \
        list(range(2**53 + 1, 2**53 + 9, 3))


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64], ids=ids)
def test_arange_float(device, dtype):
    for start, stop, step in ((0.0, 1.0, 0.1), (1.5, -2.25, -0.75), (0, 1, 1 / 3),
                              (-3.0, 1000.5, 0.37), (1e10, 1e10 + 1, 1e-3)):
        x = xp.arange(start, stop, step, dtype=dtype, device=device)
        n = x.shape[0]
        assert n == max(0, math.ceil((stop - start) / step))
        ref = (np.arange(n, dtype=np.float64) * step + start).astype(dtype._np)
        _same_bits(to_numpy(x), ref)


def test_arange_errors():
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 5, 0)
    with pytest.raises(TypeError):
        xp.arange(5, dtype=xp.complex64)
    with pytest.raises(TypeError):
        xp.arange(5, dtype=xp.bool)
    with pytest.raises(OverflowError):
        xp.arange(-1, 3, dtype=xp.uint8)


# ---- linspace -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTEGER, ids=ids)
def test_linspace_integer_sweep_matches_numpy(device, dtype):
    info = np.iinfo(dtype._np)
    grids = 0
    for start in range(-23, 24, 9):
        for stop in range(-31, 32, 7):
            for num in (1, 2, 3, 7, 10):
                for endpoint in (True, False):
                    ref = np.linspace(start, stop, num, endpoint=endpoint)
                    if np.floor(ref).min() < info.min or np.floor(ref).max() > info.max:
                        with pytest.raises(OverflowError):
                            xp.linspace(start, stop, num, dtype=dtype, device=device,
                                        endpoint=endpoint)
                        continue
                    ref = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype._np)
                    got = xp.linspace(start, stop, num, dtype=dtype, device=device,
                                      endpoint=endpoint)
                    assert got.dtype == dtype
                    _same_bits(to_numpy(got), ref)
                    grids += 1
    assert grids > 50


def test_linspace_integer_large(device):
    for args in ((-2**62, 2**62, 1001), (0, 2**53 + 1, 3), (-1000, 999, 2**12 + 3)):
        ref = np.linspace(*args, dtype=np.int64)
        _same_bits(to_numpy(xp.linspace(*args, dtype=xp.int64, device=device)), ref)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_linspace_floating(rng, device, dtype):
    complex_ = dtype.kind == "complex"
    for _ in range(6):
        s, e = (rng.standard_normal(2) * 100).tolist()
        if complex_:
            s, e = complex(s, e), complex(*(rng.standard_normal(2) * 100).tolist())
        for num in (0, 1, 2, 3, 7, 10, 1001):
            for endpoint in (True, False):
                x = to_numpy(xp.linspace(s, e, num, dtype=dtype, device=device,
                                         endpoint=endpoint))
                assert x.dtype == dtype._np and x.shape == (num,)
                if complex_:
                    ref = np.empty(num, dtype=dtype._np)
                    ref.real = np.linspace(s.real, e.real, num, endpoint=endpoint)
                    ref.imag = np.linspace(s.imag, e.imag, num, endpoint=endpoint)
                    np.testing.assert_allclose(x, np.linspace(s, e, num, endpoint=endpoint),
                                               rtol=1e-6 if dtype.bits == 64 else 1e-15)
                else:
                    ref = np.linspace(s, e, num, endpoint=endpoint).astype(dtype._np)
                _same_bits(x, ref)  # the same float64 operations as NumPy, bit for bit
                if num:
                    assert x[0] == dtype._np.type(s)
                if num > 1 and endpoint:
                    assert x[-1] == dtype._np.type(e)


def test_linspace_tiny_and_huge_steps(device):
    for s, e, num in ((0.0, 5e-324, 10), (-1e308, 1e308, 5), (1.0, 1.0, 4), (0.0, 1e-310, 7)):
        with np.errstate(all="ignore"):
            ref = np.linspace(s, e, num)
        _same_bits(to_numpy(xp.linspace(s, e, num, device=device)), ref)


def test_linspace_errors():
    with pytest.raises(ValueError, match="non-negative"):
        xp.linspace(0, 1, -3)
    with pytest.raises(TypeError):
        xp.linspace(0, 1, 3.0)
    with pytest.raises(TypeError):
        xp.linspace(0, 1, 3, dtype=xp.bool)
    with pytest.raises(TypeError, match="Python int"):
        xp.linspace(0.5, 3, 3, dtype=xp.int32)
    with pytest.raises(OverflowError):
        xp.linspace(-1, 3, 3, dtype=xp.uint8)
    with pytest.raises(OverflowError):
        xp.linspace(0, 300, 2, dtype=xp.uint8)
    with pytest.raises(OverflowError):
        xp.linspace(0, 10**400, 2)
    with pytest.raises(TypeError):
        xp.linspace(0, 1, 3, endpoint=1)


# ---- allocation failures ------------------------------------------------------------------

def test_shape_errors():
    with pytest.raises(TypeError):
        xp.ones((3, 2.0))
    with pytest.raises(ValueError, match="bytes"):
        xp.full((2**32, 2**32), 1.5)
    with pytest.raises(ValueError, match="bytes"):
        xp.eye(2**32, 2**32)
    with pytest.raises(ValueError, match="negative"):
        xp.eye(3, -1)


@pytest.mark.cuda
def test_out_of_memory_is_a_clear_memory_error(device):
    if device.kind != "cuda":
        pytest.skip("cuda only: a cpu allocation of this size may be overcommitted")
    for make in (lambda: xp.zeros(10**15 // 8, device=device),
                 lambda: xp.full((10**15 // 8,), 1.5, device=device),
                 lambda: xp.linspace(0, 1, 10**15 // 8, device=device)):
        with pytest.raises(MemoryError, match=r"1000000000000000 bytes.*bytes are free"):
            make()
    # the namespace keeps working afterwards
    assert to_numpy(xp.arange(5, device=device)).tolist() == [0, 1, 2, 3, 4]
    assert to_numpy(xp.full(3, 2.5, device=device)).tolist() == [2.5] * 3
