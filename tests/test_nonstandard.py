"""xp_cuda.nonstandard: logspace, exact where the result is an integer, the same on every device."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import INTEGER, to_numpy
from xp_cuda._devices import CPU
from xp_cuda.nonstandard import logspace


def test_outside_the_namespace():
    assert "logspace" not in xp.__all__
    assert not hasattr(xp, "logspace")


def test_the_motivating_case(device):
    x = logspace(1, 2, num=1, base=3, dtype=xp.int64, device=device)
    assert x.dtype == xp.int64 and x.device == device and to_numpy(x).tolist() == [3]


def _sweep():
    for base in (2, 3, 5, 7, 10):
        for start in range(-3, 6):
            for stop in range(start - 4, start + 9, 3):
                for num in (1, 2, 3, 4, 7, 10):
                    for endpoint in (True, False):
                        yield base, start, stop, num, endpoint


@pytest.mark.parametrize("dtype", INTEGER, ids=lambda d: d.name)
def test_integer_sweep_matches_numpy(device, dtype):
    info = np.iinfo(dtype._np)
    checked = 0
    for base, start, stop, num, endpoint in _sweep():
        with np.errstate(all="ignore"):
            f = np.logspace(start, stop, num, endpoint=endpoint, base=base)
        if np.abs(f).max() > 2**53:  # NumPy rounds through float64 there; see test below
            continue
        lo, hi = np.trunc(f).min(), np.trunc(f).max()
        if lo < info.min or hi > info.max:
            with pytest.raises(OverflowError):
                logspace(start, stop, num, endpoint, base, dtype, device=device)
            continue
        ref = np.logspace(start, stop, num, endpoint=endpoint, base=base, dtype=dtype._np)
        got = to_numpy(logspace(start, stop, num, endpoint, base, dtype, device=device))
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref, err_msg=str((base, start, stop, num, endpoint)))
        checked += 1
    assert checked > 200


def test_exact_beyond_float64(device):
    # NumPy gives float64(3**39) = 4052555153018976256; the exact integer is ...267
    x = logspace(38, 39, 2, base=3, dtype=xp.int64, device=device)
    assert to_numpy(x).tolist() == [3**38, 3**39]
    u = logspace(63, 63, 1, base=2, dtype=xp.uint64, device=device)
    assert to_numpy(u).tolist() == [2**63]
    n = logspace(0, 7, 8, base=-2, dtype=xp.int8, device=device)
    assert to_numpy(n).tolist() == [(-2)**k for k in range(8)]
    r = logspace(0, 2, 5, base=4, dtype=xp.int32, device=device)  # 4**0.5 = 2, 4**1.5 = 8
    assert to_numpy(r).tolist() == [1, 2, 4, 8, 16]
    z = logspace(-3, 0, 4, base=2, dtype=xp.int16, device=device)
    assert to_numpy(z).tolist() == [0, 0, 0, 1]


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.complex64, xp.complex128],
                         ids=lambda d: d.name)
def test_floating_matches_numpy(device, dtype):
    for base, start, stop, num, endpoint in ((10.0, -2.0, 3.0, 1001, True), (2, -10, 10, 21, True),
                                             (2.5, 0.25, 7.5, 33, False), (3, 0, 30, 31, True),
                                             (0.5, -4, 4, 9, True), (-2, 0, 6, 7, True),
                                             (7, 1, 2, 0, True), (10, 1, 2, 1, False)):
        got = to_numpy(logspace(start, stop, num, endpoint, base, dtype, device=device))
        with np.errstate(all="ignore"):
            ref = np.logspace(start, stop, num, endpoint=endpoint, base=base).astype(dtype._np)
        assert got.dtype == dtype._np and got.shape == (num,)
        rtol = 4e-16 if dtype.bits in (64, 128) and dtype != xp.complex64 else 1.2e-7
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=0)
        if float(base).is_integer() and float(start).is_integer() and num > 1 and endpoint:
            assert got[-1] == dtype._np.type(float(base) ** stop)  # an exact power


def _ulps(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    return np.where(same, 0.0, np.abs(got - ref) / np.spacing(np.abs(ref)))


@pytest.mark.parametrize("base", [10.0, 2.5, 0.3, 7.0, 1.0001, math.e, 0.5])
def test_float64_within_one_ulp(device, base):
    """Dense grids over the whole exponent range of float64 results: the kernel's power is
    within 1 ulp of NumPy's (glibc's correctly rounded pow); near overflow and in the
    subnormal range, where the kernel uses the library pow, within 2."""
    top = 1023.5 / abs(math.log2(base))
    for start, stop, limit in ((-top * 0.99, top * 0.99, 1), (top * 0.99, top * 1.01, 2),
                               (-top * 1.05, -top * 0.99, 2), (-3.0, 3.0, 1)):
        got = to_numpy(logspace(start, stop, 20001, base=base, dtype=xp.float64, device=device))
        with np.errstate(all="ignore"):
            ref = np.logspace(start, stop, 20001, base=base)
        assert _ulps(got, ref).max() <= limit, (start, stop)


def test_cpu_and_cuda_agree(device):
    if device.kind == "cpu":
        pytest.skip("compares cuda with cpu")
    rng = np.random.default_rng(7)
    for _ in range(20):
        s, e = (rng.uniform(-20, 20, 2)).tolist()
        base = float(rng.choice([2, 3, 10, 1.5, 0.25]))
        for dtype in (xp.float64, xp.float32):
            a = to_numpy(logspace(s, e, 257, base=base, dtype=dtype, device=CPU))
            b = to_numpy(logspace(s, e, 257, base=base, dtype=dtype, device=device))
            np.testing.assert_allclose(b, a, rtol=5e-16 if dtype == xp.float64 else 0)
        # integer dtypes: identical where the power is exact (integer exponents, any size)
        # or moderate (non-integer exponents below ~2**40: the truncation of a larger
        # non-integer power depends on pow's last bit, in NumPy as on the GPU)
        si, ei = sorted(int(v) for v in rng.integers(0, 40, 2))
        for dtype in (xp.int64, xp.uint64):
            for s0, e, num in ((si, ei, ei - si + 1), (min(si, 10), min(si, 10) + 14, 37)):
                a = to_numpy(logspace(s0, e, num, base=3, dtype=dtype, device=CPU))
                b = to_numpy(logspace(s0, e, num, base=3, dtype=dtype, device=device))
                np.testing.assert_array_equal(a, b)


def test_errors(device):
    with pytest.raises(TypeError):
        logspace(0j, 1, 3, device=device)
    with pytest.raises(TypeError):
        logspace(0, 1, 3, base=True, device=device)
    with pytest.raises(ValueError, match="non-negative"):
        logspace(0, 1, -1, device=device)
    with pytest.raises(TypeError):
        logspace(0, 1, 3.0, device=device)
    with pytest.raises(IndexError):
        logspace(0, 1, 3, axis=1, device=device)
    assert logspace(0, 1, 3, axis=-1, device=device).shape == (3,)
    with pytest.raises(TypeError):
        logspace(0, 1, 3, dtype=xp.bool, device=device)
    with pytest.raises(TypeError):
        logspace(0, 1, 3, dtype=np.float64, device=device)
    with pytest.raises(OverflowError):
        logspace(0, 8, 9, base=2, dtype=xp.int8, device=device)
    with pytest.raises(OverflowError):
        logspace(-1, 1, 3, base=0, dtype=xp.int32, device=device)  # 0**-1 is inf
    with pytest.raises(ValueError, match="NaN"):
        logspace(0, 1, 3, base=-2, dtype=xp.int32, device=device)  # (-2)**0.5
    with pytest.raises(OverflowError):
        logspace(0, 1, 2, base=-1, dtype=xp.uint8, device=device)
    assert logspace(0, 1, 0, dtype=xp.int8, device=device).shape == (0,)
