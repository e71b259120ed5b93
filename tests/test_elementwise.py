"""Every elementwise function on every dtype it accepts, against NumPy on random data."""
import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, random_numpy, to_numpy
from xp_cuda._dtypes import in_category
from xp_cuda._elementwise import ELEMENTWISE

# NumPy reference for each function (the spec name where NumPy spells it differently).
NUMPY_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
              "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh",
              "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
              "bitwise_invert": "invert", "pow": "power", "conj": "conjugate"}
CASES = [(name, d) for name, (_, cat, _, _) in ELEMENTWISE.items() for d in ALL_DTYPES
         if in_category(d, cat)]
REJECTED = [(name, d) for name, (_, cat, _, _) in ELEMENTWISE.items() for d in ALL_DTYPES
            if not in_category(d, cat)]


def _inputs(rng, name, dtype, arity):
    a = random_numpy(rng, (7, 9), dtype)
    b = random_numpy(rng, (9,), dtype)  # broadcasts against a
    if name in ("floor_divide", "remainder") and dtype.kind in ("int", "uint"):
        b = np.where(b == 0, 1, b).astype(dtype._np)
    if name == "pow" and dtype.kind in ("int", "uint"):
        b = (np.abs(b) % 4).astype(dtype._np)
    if name.startswith("bitwise_") and name.endswith("shift"):
        b = (np.abs(b) % dtype.bits).astype(dtype._np)
    if name in ("acosh",) and dtype.kind == "float":
        a = np.abs(a) + 1
    return (a,) if arity == 1 else (a, b)


def _expected_dtype(name, dtype):
    rule = ELEMENTWISE[name][2]
    if rule == "bool":
        return xp.bool
    if rule == "real" and dtype.kind == "complex":
        return xp.float32 if dtype == xp.complex64 else xp.float64
    return dtype


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d.name}" for n, d in CASES])
def test_against_numpy(rng, device, name, dtype):
    arity = ELEMENTWISE[name][0]
    args = _inputs(rng, name, dtype, arity)
    xs = [xp.asarray(a, device=device) for a in args]
    out = getattr(xp, name)(*xs)
    assert out.dtype == _expected_dtype(name, dtype)
    assert out.device == device
    with np.errstate(all="ignore"):
        if name in ("ceil", "floor", "trunc", "round") and dtype.kind in ("int", "uint"):
            ref = args[0]  # rounding an integer is exact
        else:
            ref = getattr(np, NUMPY_NAME.get(name, name))(*args)
    got = to_numpy(out)
    assert got.shape == np.broadcast_shapes(*(a.shape for a in args))
    if dtype.kind in ("float", "complex") and out.dtype != xp.bool:
        rtol = 2e-6 if dtype in (xp.float32, xp.complex64) else 1e-13
        if name == "pow" and dtype.kind == "complex":
            rtol *= 10  # exp(y log x): the error grows with |y log x|, large here
        np.testing.assert_allclose(got, ref.astype(got.dtype), rtol=rtol, atol=0,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("name,dtype", REJECTED, ids=[f"{n}-{d.name}" for n, d in REJECTED])
def test_rejects_wrong_category(name, dtype):
    arity = ELEMENTWISE[name][0]
    x = xp.ones(3, dtype=dtype)
    # (conj and real of real input: a later revision's rule, refused naming it)
    with pytest.raises(TypeError, match=f"{name}.*(requires|2024\\.12 revision)"):
        getattr(xp, name)(*([x] * arity))


def test_functions_take_arrays_only():
    x = xp.ones(3)
    with pytest.raises(TypeError, match="asarray"):
        xp.add(x, np.ones(3))
    with pytest.raises(TypeError):
        xp.add(x, 1.0)  # Python scalars in functions are 2024.12, not 2023.12
    with pytest.raises(ValueError, match="broadcast"):
        xp.add(x, xp.ones(4))


def test_integer_pow_negative_exponent_is_exact(device):
    base = xp.asarray([2, -1, -1, 1, 0, 5], dtype=xp.int32, device=device)
    exp = xp.asarray([-1, -3, -2, -5, 2, 2], dtype=xp.int32, device=device)
    assert to_numpy(base ** exp).tolist() == [0, -1, 1, 1, 0, 25]


def test_integer_rounding_is_exact_beyond_2_53(device):
    x = xp.asarray([2**62 + 1, -(2**61) - 3], dtype=xp.int64, device=device)
    for f in (xp.ceil, xp.floor, xp.trunc, xp.round):
        assert to_numpy(f(x)).tolist() == [2**62 + 1, -(2**61) - 3]


def test_special_values(device):
    z = xp.asarray([-0.0, 0.0, float("inf"), float("nan")], device=device)
    assert to_numpy(xp.signbit(z)).tolist() == [True, False, False, False]
    s = to_numpy(xp.sqrt(z))
    assert np.signbit(s[0]) and s[2] == np.inf and np.isnan(s[3])
    c = xp.asarray([3 + 4j], device=device)
    assert to_numpy(xp.abs(c)).tolist() == [5.0]
    np.testing.assert_allclose(to_numpy(xp.sign(c)), [0.6 + 0.8j])


@pytest.mark.parametrize("dtype", [xp.int8, xp.uint8, xp.float32, xp.float64])
def test_clip(rng, device, dtype):
    a = random_numpy(rng, (50,), dtype)
    x = xp.asarray(a, device=device)
    lo, hi = (-5, 7) if dtype.kind != "uint" else (3, 200)
    r = xp.clip(x, lo, hi)
    assert r.dtype == dtype
    np.testing.assert_array_equal(to_numpy(r), np.clip(a, lo, hi))
    assert to_numpy(xp.clip(x, min=-10**6)).tolist() == a.tolist() or dtype.kind == "float"
    assert xp.clip(xp.asarray(a[0], device=device), x).shape == (50,)  # broadcasts
    b = xp.asarray(np.full(50, lo, dtype=dtype._np), device=device)
    np.testing.assert_array_equal(to_numpy(xp.clip(x, b)), np.maximum(a, lo))
    if dtype.kind == "float":
        n = xp.clip(xp.asarray([float("nan"), 100.0], dtype=dtype, device=device), 0.0, 1.0)
        assert np.isnan(to_numpy(n)[0]) and to_numpy(n)[1] == 1.0
    else:
        with pytest.raises(TypeError):
            xp.clip(x, 0.5)


def test_complex_expm1_special_cases(device):
    """2023.12 expm1 special cases for complex input (NumPy's own misses several)."""
    inf, nan = float("inf"), float("nan")
    cases = {  # input: expected (None: NaN)
        complex(-0.0, 0.0): (0.0, 0.0), complex(inf, 0.0): (inf, 0.0),
        complex(-inf, inf): (-1.0, 0.0), complex(-inf, nan): (-1.0, 0.0),
        complex(nan, 0.0): (None, 0.0), complex(inf, nan): (inf, None),
        complex(1.0, inf): (None, None),
    }
    got = to_numpy(xp.expm1(xp.asarray(list(cases), dtype=xp.complex128, device=device)))
    for g, (re, im) in zip(got, cases.values()):
        for part, want in ((g.real, re), (g.imag, im)):
            assert np.isnan(part) if want is None else abs(part) == abs(want)
    small = to_numpy(xp.expm1(xp.asarray([1e-10 + 1e-10j, 1 + 2j], device=device)))
    np.testing.assert_allclose(small, [np.expm1(1e-10) * np.cos(1e-10) - 2 * np.sin(5e-11) ** 2
                                       + 1j * np.exp(1e-10) * np.sin(1e-10), np.exp(1 + 2j) - 1],
                               rtol=1e-14)


def test_complex_tanh_infinite_real_part(device):
    inf = float("inf")
    z = xp.asarray([complex(inf, 1.0), complex(inf, 3.0), complex(-inf, 3.0), complex(inf, -3.0),
                    complex(inf, inf), 0.5 + 0.25j], dtype=xp.complex128, device=device)
    got = to_numpy(xp.tanh(z))
    assert got[:5].real.tolist() == [1.0, 1.0, -1.0, 1.0, 1.0]
    assert [bool(np.signbit(v)) for v in got[:4].imag] == [False, False, False, True]
    assert got[4].imag == 0
    np.testing.assert_allclose(got[5], np.tanh(0.5 + 0.25j), rtol=1e-15)


def test_complex_sign_nan_parts(device):
    """2023.12 sign: "If a is NaN or b is NaN, the result is NaN + NaN j"."""
    inf, nan = float("inf"), float("nan")
    z = xp.asarray([complex(inf, nan), complex(nan, 1.0), complex(0.0, nan), 3 + 4j],
                   dtype=xp.complex128, device=device)
    got = to_numpy(xp.sign(z))
    assert np.isnan(got[:3].real).all() and np.isnan(got[:3].imag).all()
    np.testing.assert_allclose(got[3], 0.6 + 0.8j, rtol=1e-15)
