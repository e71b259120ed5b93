"""xp_cuda.fft against numpy.fft computed in float64/complex128, on random non-zero data."""
import inspect

import numpy as np
import pytest

import xp_cuda as xp
from helpers import random_array, to_numpy

COMPLEX = [xp.complex64, xp.complex128]
REAL_FLOAT = [xp.float32, xp.float64]
NORMS = ["backward", "ortho", "forward"]
# name -> (accepted dtypes, result dtype from the input dtype)
TRANSFORMS = {
    "fft": (COMPLEX, lambda d: d), "ifft": (COMPLEX, lambda d: d),
    "fftn": (COMPLEX, lambda d: d), "ifftn": (COMPLEX, lambda d: d),
    "rfft": (REAL_FLOAT, {xp.float32: xp.complex64, xp.float64: xp.complex128}.get),
    "rfftn": (REAL_FLOAT, {xp.float32: xp.complex64, xp.float64: xp.complex128}.get),
    "ihfft": (REAL_FLOAT, {xp.float32: xp.complex64, xp.float64: xp.complex128}.get),
    "irfft": (COMPLEX, {xp.complex64: xp.float32, xp.complex128: xp.float64}.get),
    "irfftn": (COMPLEX, {xp.complex64: xp.float32, xp.complex128: xp.float64}.get),
    "hfft": (COMPLEX, {xp.complex64: xp.float32, xp.complex128: xp.float64}.get),
}
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]


def _ref_input(a):
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def check(out, ref, dtype, device):
    """Exact dtype, shape and device; values to a tolerance suited to the precision."""
    assert out.dtype == dtype
    assert out.device == device
    got = to_numpy(out)
    assert got.shape == ref.shape
    rtol = 2e-5 if dtype in (xp.float32, xp.complex64) else 1e-12
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("fname", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 8, 13])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_1d_against_numpy(device, rng, fname, norm, n, axis):
    dtypes, result = TRANSFORMS[fname]
    for dtype in dtypes:
        x, a = random_array(rng, (6, 7, 3), dtype, device)
        out = getattr(xp.fft, fname)(x, n=n, axis=axis, norm=norm)
        ref = getattr(np.fft, fname)(_ref_input(a), n=n, axis=axis, norm=norm)
        check(out, ref, result(dtype), device)


@pytest.mark.parametrize("fname", ONE_D)
def test_1d_defaults(device, rng, fname):
    dtypes, result = TRANSFORMS[fname]
    for dtype in dtypes:
        x, a = random_array(rng, (4, 9), dtype, device)
        check(getattr(xp.fft, fname)(x), getattr(np.fft, fname)(_ref_input(a)),
              result(dtype), device)


@pytest.mark.parametrize("fname", N_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s, axes", [
    (None, None), (None, (0,)), (None, [2, 0]), ((4, 6), (1, 2)), ([7, 3], [-1, 0]),
    ((5,), (1,)), ((-1, 5), (0, 2)), ((3, 4, 5), (2, 1, 0)), ((2, 7), (1, 0)),
    ((6, 1, 3), (2, 0, 1)),
])
def test_nd_against_numpy(device, rng, fname, norm, s, axes):
    dtypes, result = TRANSFORMS[fname]
    for dtype in dtypes:
        x, a = random_array(rng, (5, 6, 4), dtype, device)
        out = getattr(xp.fft, fname)(x, s=s, axes=axes, norm=norm)
        ref_s = None if s is None else [a.shape[ax] if v == -1 else v for v, ax in zip(s, axes)]
        ref = getattr(np.fft, fname)(_ref_input(a), s=ref_s, axes=axes, norm=norm)
        check(out, ref, result(dtype), device)


def test_irfftn_minus_one_on_last_axis_keeps_all_inputs(device, rng):
    # 2023.12: s[i] == -1 uses all M input points; on the last axis that is the default 2*(M-1).
    x, a = random_array(rng, (3, 5), xp.complex128, device)
    out = xp.fft.irfftn(x, s=(-1, -1), axes=(0, 1))
    check(out, np.fft.irfftn(a, s=(3, 8), axes=(0, 1)), xp.float64, device)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_round_trips(device, rng, dtype):
    x, a = random_array(rng, (4, 10), dtype, device)
    r = xp.real(x)
    ra = to_numpy(r)
    for norm in NORMS:
        check(xp.fft.ifft(xp.fft.fft(x, norm=norm), norm=norm), a.astype(np.complex128),
              dtype, device)
        check(xp.fft.ifftn(xp.fft.fftn(x, norm=norm), norm=norm), a.astype(np.complex128),
              dtype, device)
        real = r.dtype
        check(xp.fft.irfft(xp.fft.rfft(r, norm=norm), n=10, norm=norm), ra.astype(np.float64),
              real, device)
        check(xp.fft.irfftn(xp.fft.rfftn(r, norm=norm), s=(4, 10), axes=(0, 1), norm=norm),
              ra.astype(np.float64), real, device)
        check(xp.fft.hfft(xp.fft.ihfft(r, norm=norm), n=10, norm=norm), ra.astype(np.float64),
              real, device)


def test_empty_batches_and_zero_padding(device):
    z = xp.zeros((0, 4), dtype=xp.complex64, device=device)
    out = xp.fft.fft(z)
    assert out.shape == (0, 4) and out.dtype == xp.complex64
    assert xp.fft.rfft(xp.zeros((3, 0, 4), dtype=xp.float32, device=device)).shape == (3, 0, 3)
    assert xp.fft.irfftn(xp.zeros((0, 3), dtype=xp.complex128, device=device),
                         s=(5,), axes=(1,)).shape == (0, 5)
    padded = xp.fft.fft(xp.zeros((0,), dtype=xp.complex128, device=device), n=4)
    assert padded.shape == (4,) and not np.any(to_numpy(padded))


def test_fftn_without_axes(device, rng):
    x, a = random_array(rng, (3, 2), xp.complex64, device)
    out = xp.fft.fftn(x, axes=())
    check(out, a.astype(np.complex128), xp.complex64, device)
    scalar = xp.fft.fftn(x[0, 0])
    assert scalar.shape == () and scalar.dtype == xp.complex64
    for fname in ("rfftn", "irfftn"):
        y = x if fname == "irfftn" else xp.real(x)
        with pytest.raises(ValueError, match="at least one axis"):
            getattr(xp.fft, fname)(y, axes=())


@pytest.mark.parametrize("fname", ONE_D + N_D)
def test_wrong_dtype_category(device, fname):
    accepted = TRANSFORMS[fname][0]
    for dtype in [xp.int32, xp.bool, xp.float32, xp.complex64]:
        if dtype in accepted:
            continue
        x = xp.ones((4,), dtype=dtype, device=device)
        with pytest.raises(TypeError, match="requires a"):
            getattr(xp.fft, fname)(x)


@pytest.mark.parametrize("fname", ONE_D + N_D)
def test_bad_norm_and_foreign_input(device, fname):
    dtype = TRANSFORMS[fname][0][0]
    x = xp.ones((4,), dtype=dtype, device=device)
    f = getattr(xp.fft, fname)
    for norm in ("Ortho", None, "", 1):
        with pytest.raises(ValueError, match="norm must be one of"):
            f(x, norm=norm)
    with pytest.raises(TypeError, match="not an xp_cuda array"):
        f(np.ones(4, dtype=dtype._np))


@pytest.mark.parametrize("fname", ONE_D)
def test_bad_n_and_axis(device, fname):
    x = xp.ones((3, 4), dtype=TRANSFORMS[fname][0][0], device=device)
    f = getattr(xp.fft, fname)
    for n in (0, -3):
        with pytest.raises(ValueError, match="must be >= 1"):
            f(x, n=n)
    for n in (4.0, True, np.float64(4)):  # (a NumPy integer is an int: operator.index)
        with pytest.raises(TypeError, match="Python int"):
            f(x, n=n)
    with pytest.raises(IndexError, match="out of range"):
        f(x, axis=2)
    with pytest.raises(IndexError, match="out of range"):
        f(x, axis=-3)
    with pytest.raises(TypeError, match="Python int"):
        f(x, axis=0.0)


@pytest.mark.parametrize("fname", ["irfft", "hfft"])
def test_c2r_default_length_needs_two_inputs(device, fname):
    x = xp.ones((3, 1), dtype=xp.complex128, device=device)
    with pytest.raises(ValueError, match="pass n explicitly"):
        getattr(xp.fft, fname)(x)
    assert getattr(xp.fft, fname)(x, n=1).shape == (3, 1)
    with pytest.raises(ValueError, match="pass s"):
        xp.fft.irfftn(x, s=(4, -1), axes=(0, 1))


@pytest.mark.parametrize("fname", N_D)
def test_bad_s_and_axes(device, fname):
    x = xp.ones((3, 4), dtype=TRANSFORMS[fname][0][0], device=device)
    f = getattr(xp.fft, fname)
    with pytest.raises(ValueError, match="axes must be given"):
        f(x, s=(3, 4))
    with pytest.raises(ValueError, match="same length"):
        f(x, s=(3,), axes=(0, 1))
    with pytest.raises(ValueError, match="repeats an axis"):
        f(x, axes=(1, -1))
    with pytest.raises(IndexError, match="out of range"):
        f(x, axes=(2,))
    for bad in ((0,), (-2,)):
        with pytest.raises(ValueError, match="must be >= 1"):
            f(x, s=bad, axes=(0,))
    with pytest.raises(TypeError, match="sequence"):
        f(x, s=3, axes=(0,))
    with pytest.raises(TypeError, match="sequence"):
        f(x, axes=0)
    with pytest.raises(TypeError, match="Python int"):
        f(x, s=(3.0,), axes=(0,))


@pytest.mark.parametrize("fname", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n", [1, 2, 7, 10])
@pytest.mark.parametrize("d", [1.0, 0.25, 3, -2.5])
def test_freq(device, fname, n, d):
    out = getattr(xp.fft, fname)(n, d=d, device=device)
    check(out, getattr(np.fft, fname)(n, d=d), xp.float64, device)


def test_freq_defaults_and_errors(device):
    assert xp.fft.fftfreq(4).device == xp.__array_namespace_info__().default_device()
    assert xp.fft.rfftfreq(4).dtype == xp.float64
    for f in (xp.fft.fftfreq, xp.fft.rfftfreq):
        with pytest.raises(ValueError, match=">= 1"):
            f(0, device=device)
        with pytest.raises(TypeError, match="Python int"):
            f(4.0, device=device)
        with pytest.raises(TypeError, match="Python float"):
            f(4, d=True, device=device)
        with pytest.raises(TypeError, match="Python float"):
            f(4, d=xp.asarray(1.0, device=device), device=device)
        with pytest.raises(ValueError, match="non-zero"):
            f(4, d=0.0, device=device)
        with pytest.raises(TypeError, match="device"):
            f(4, device="cpu")
        with pytest.raises(TypeError):  # 2023.12 has no dtype= (added in 2024.12)
            f(4, dtype=xp.float32)


@pytest.mark.parametrize("fname", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 0, -1, (1,), [0, 2], (2, 0, 1), ()])
def test_shift(device, rng, fname, axes):
    for dtype in REAL_FLOAT + COMPLEX:
        x, a = random_array(rng, (5, 4, 3), dtype, device)
        out = getattr(xp.fft, fname)(x, axes=axes)
        ref = getattr(np.fft, fname)(a, axes=axes)
        assert out.dtype == dtype and out.device == device
        np.testing.assert_array_equal(to_numpy(out), ref)


def test_shift_round_trip_and_errors(device, rng):
    x, a = random_array(rng, (5, 7), xp.float32, device)
    back = xp.fft.ifftshift(xp.fft.fftshift(x))
    np.testing.assert_array_equal(to_numpy(back), a)
    for f in (xp.fft.fftshift, xp.fft.ifftshift):
        with pytest.raises(TypeError, match="floating-point"):
            f(xp.ones((3,), dtype=xp.int64, device=device))
        with pytest.raises(IndexError, match="out of range"):
            f(x, axes=2)
        with pytest.raises(ValueError, match="repeats an axis"):
            f(x, axes=(0, -2))
        with pytest.raises(TypeError, match="Python int"):
            f(x, axes=1.0)
        with pytest.raises(TypeError, match="not an xp_cuda array"):
            f(a)


def test_signatures():
    P = inspect.Parameter
    for fname in ONE_D:
        sig = inspect.signature(getattr(xp.fft, fname))
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
            ("x", P.POSITIONAL_ONLY, P.empty), ("n", P.KEYWORD_ONLY, None),
            ("axis", P.KEYWORD_ONLY, -1), ("norm", P.KEYWORD_ONLY, "backward")]
    for fname in N_D:
        sig = inspect.signature(getattr(xp.fft, fname))
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
            ("x", P.POSITIONAL_ONLY, P.empty), ("s", P.KEYWORD_ONLY, None),
            ("axes", P.KEYWORD_ONLY, None), ("norm", P.KEYWORD_ONLY, "backward")]
    for fname in ("fftfreq", "rfftfreq"):
        sig = inspect.signature(getattr(xp.fft, fname))
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
            ("n", P.POSITIONAL_ONLY, P.empty), ("d", P.KEYWORD_ONLY, 1.0),
            ("device", P.KEYWORD_ONLY, None)]
    for fname in ("fftshift", "ifftshift"):
        sig = inspect.signature(getattr(xp.fft, fname))
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == [
            ("x", P.POSITIONAL_ONLY, P.empty), ("axes", P.KEYWORD_ONLY, None)]
    assert sorted(xp.fft.__all__) == sorted(
        ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
         "fftfreq", "rfftfreq", "fftshift", "ifftshift"])


@pytest.mark.parametrize("axes", [[0, 2, 1], [2, 0], [1, 2]])
def test_real_nd_transforms_with_axes_out_of_order(rng, device, axes):
    a = rng.standard_normal((3, 4, 5))
    got = xp.fft.rfftn(xp.asarray(a, device=device), axes=axes)
    ref = np.fft.rfftn(a, axes=axes)
    assert got.shape == ref.shape
    np.testing.assert_allclose(to_numpy(got), ref, rtol=1e-12, atol=1e-12)
    back = xp.fft.irfftn(got, s=[a.shape[i] for i in axes], axes=axes)
    np.testing.assert_allclose(to_numpy(back), a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fname", ["fftn", "ifftn"])
def test_complex_nd_sizes_follow_axes_out_of_order(device, rng, fname):
    """s[i] sizes axes[i] whatever the order (the official suite's case: a (1, 2) input,
    s=(1, 2), axes=[1, 0] gives shape (2, 1))."""
    for shape, s, axes in (((1, 2), (1, 2), [1, 0]), ((3, 2, 4), (5, 1, 2), [2, 0, 1])):
        x, a = random_array(rng, shape, xp.complex64, device)
        out = getattr(xp.fft, fname)(x, s=s, axes=axes, norm="ortho")
        ref = getattr(np.fft, fname)(a.astype(np.complex128), s=s, axes=axes, norm="ortho")
        assert out.shape == ref.shape
        np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-5, atol=1e-5)
