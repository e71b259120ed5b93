"""Dtypes, the promotion table and the Python-scalar rules, against the spec and array_api_strict."""
import itertools

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._dtypes import ALL_DTYPES, PROMOTION_TABLE

strict = pytest.importorskip("array_api_strict")
NAMES = [d.name for d in ALL_DTYPES]


def test_thirteen_opaque_dtypes():
    assert len(set(ALL_DTYPES)) == 13
    for d in ALL_DTYPES:
        assert getattr(xp, d.name) is d
        # (our side of ==; NumPy's own dtype == coerces its right operand through the .dtype
        # export, as it coerces "int32", so np.dtype("int32") == xp.int32 is NumPy's leniency)
        assert d != np.dtype(d.name) and not d.__eq__(np.dtype(d.name))
        assert d != getattr(np, d.name) and getattr(np, d.name) != d
        assert d != d.name
    assert xp.float32 != xp.float64 and xp.int8 == xp.int8
    assert hash(xp.int8) == hash(xp.int8)


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promotion_matches_array_api_strict(a, b):
    da, db = getattr(xp, a), getattr(xp, b)
    try:
        expected = strict.result_type(getattr(strict, a), getattr(strict, b))
    except TypeError:
        assert (da, db) not in PROMOTION_TABLE
        with pytest.raises(TypeError, match="astype"):
            xp.result_type(da, db)
        return
    assert xp.result_type(da, db).name == str(expected).split(".")[-1]
    # and the table drives arrays and can_cast too
    x, y = xp.ones(2, dtype=da), xp.ones(2, dtype=db)
    assert xp.result_type(x, y) == xp.result_type(da, db)
    assert xp.can_cast(da, db) == (xp.result_type(da, db) == db)


def test_promotion_is_symmetric_and_covers_spec_examples():
    for (a, b), r in PROMOTION_TABLE.items():
        assert PROMOTION_TABLE[b, a] is r
    assert xp.result_type(xp.uint8, xp.int8) == xp.int16
    assert xp.result_type(xp.uint32, xp.int64) == xp.int64
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.float64, xp.complex64) == xp.complex128
    assert (xp.uint64, xp.int8) not in PROMOTION_TABLE
    with pytest.raises(ValueError):
        xp.result_type()
    with pytest.raises(TypeError):
        xp.result_type(1, xp.int8)  # Python scalars are 2024.12, not 2023.12


# (scalar, dtypes it may meet) per spec "Mixing arrays with Python scalars" (2023.12)
SCALAR_CASES = [
    (True, {"bool"}),
    (3, {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"}),
    (2.5, {"float32", "float64", "complex64", "complex128"}),
    (1 + 2j, {"complex64", "complex128"}),
]


@pytest.mark.parametrize("scalar,allowed", SCALAR_CASES)
@pytest.mark.parametrize("name", NAMES)
def test_python_scalar_rules(scalar, allowed, name, device):
    dt = getattr(xp, name)
    x = xp.ones(3, dtype=dt, device=device)
    if name in allowed:
        r = x == scalar
        assert r.dtype == xp.bool
        if name != "bool":
            s = x * scalar
            assert s.dtype == dt and s.device == device
    else:
        with pytest.raises(TypeError, match="Python"):
            x == scalar
        with pytest.raises(TypeError, match="Python"):
            scalar == x  # reflected path too


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                  "int64", "uint64"])
def test_python_int_out_of_range_overflows(name, device):
    dt = getattr(xp, name)
    info = xp.iinfo(dt)
    x = xp.ones(2, dtype=dt, device=device)
    assert xp.all(x * 1 == x)
    for v in (info.max + 1, info.min - 1):
        with pytest.raises(OverflowError, match="out of range"):
            x + v
    assert (x + info.max - 1).dtype == dt  # in range is fine


def test_numpy_scalars_are_not_python_scalars():
    x = xp.ones(2, dtype=xp.float32)
    with pytest.raises(TypeError):
        x + np.float32(1)


def test_isdtype_and_info():
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.complex64, ("bool", "complex floating"))
    assert xp.isdtype(xp.float32, xp.float32) and not xp.isdtype(xp.float32, xp.float64)
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "integer-ish")
    with pytest.raises(TypeError):
        xp.isdtype(np.int8, "numeric")
    fi = xp.finfo(xp.complex64)
    assert fi.dtype == xp.float32 and fi.bits == 32 and fi.eps == float(np.finfo(np.float32).eps)
    ii = xp.iinfo(xp.uint16)
    assert (ii.min, ii.max, ii.bits, ii.dtype) == (0, 65535, 16, xp.uint16)
    with pytest.raises(TypeError):
        xp.finfo(xp.int8)
    with pytest.raises(TypeError):
        xp.iinfo(xp.float32)


def test_namespace_has_no_public_extras():
    """Every public name of the namespace is in __all__ (nothing leaks from imports)."""
    extras = {n for n in dir(xp) if not n.startswith("_")} - set(xp.__all__)
    # opt-in submodules, and the one switch of revision (named in the issue of later revisions)
    assert extras <= {"nonstandard", "fusion", "spatial", "set_api_version"}, extras


def test_typed_scalars_are_reused_only_where_equal_keys_mean_equal_bits(device):
    """Operators reuse the typed form of a nonzero Python float or int per dtype (a program's
    constants recur); zeros are typed afresh, since 0.0 == -0.0 as keys but their signs differ,
    and every result keeps the scalar's own value and the array's dtype. The reuse is bounded."""
    from xp_cuda import _dtypes as D
    x = xp.asarray([1.0, -2.0, 4.0], dtype=xp.float32, device=device)
    assert D.typed_scalar(2.5, xp.float32, "*") is D.typed_scalar(2.5, xp.float32, "*")
    assert D.typed_scalar(2.5, xp.float64, "*").value.dtype == np.float64
    assert D.typed_scalar(1, xp.float32, "*") is not D.typed_scalar(1.0, xp.float32, "*")
    from helpers import to_numpy
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        for z in (a, b, a):  # each zero after the other
            np.testing.assert_array_equal(np.signbit(to_numpy(x * z)),
                                          np.signbit(to_numpy(x) * np.float32(z)))
    for k in range(1, 3 * D._TYPED_MAX):
        D.typed_scalar(float(k), xp.float32, "+")
    assert 0 < len(D._TYPED) <= D._TYPED_MAX
    i8 = xp.asarray([1, 2], dtype=xp.int8, device=device)
    for _ in range(2):  # out of int8's range: refused every time, never kept
        with pytest.raises(OverflowError):
            i8 + 1000
