"""The array object: attributes, operators, indexing, conversions, devices and DLPack."""
import operator

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, NUMERIC, random_array, to_numpy
from xp_cuda._array import Array
from xp_cuda._devices import CPU, Device


def test_attributes(rng, device):
    x, a = random_array(rng, (2, 3, 4), xp.float32, device)
    assert x.dtype == xp.float32 and x.device == device
    assert (x.ndim, x.shape, x.size) == (3, (2, 3, 4), 24)
    np.testing.assert_array_equal(to_numpy(x.mT), np.swapaxes(a, -1, -2))
    m, b = random_array(rng, (2, 5), xp.int16, device)
    np.testing.assert_array_equal(to_numpy(m.T), b.T)
    with pytest.raises(ValueError, match="permute_dims"):
        x.T
    with pytest.raises(ValueError):
        xp.ones(3, device=device).mT
    with pytest.raises(TypeError, match="creation"):
        type(x)()


BINARY = [("+", operator.add, operator.iadd), ("-", operator.sub, operator.isub),
          ("*", operator.mul, operator.imul), ("/", operator.truediv, operator.itruediv),
          ("//", operator.floordiv, operator.ifloordiv), ("%", operator.mod, operator.imod),
          ("**", operator.pow, operator.ipow)]


@pytest.mark.parametrize("sym,op,iop", BINARY)
@pytest.mark.parametrize("dtype", [xp.float32, xp.float64])
def test_arithmetic_operators_against_numpy(rng, device, sym, op, iop, dtype):
    x, a = random_array(rng, (4, 5), dtype, device)
    y, b = random_array(rng, (5,), dtype, device)
    if sym == "**":
        x, a = xp.abs(x), np.abs(a)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(to_numpy(op(x, y)), op(a, b), rtol=1e-6)
        np.testing.assert_allclose(to_numpy(op(x, 2.5)), op(a, dtype._np.type(2.5)), rtol=1e-6)
        np.testing.assert_allclose(to_numpy(op(3, x)), op(dtype._np.type(3), a), rtol=1e-6)
        before = x
        x2 = iop(x, y)
        assert x2 is before  # in place, same object
        np.testing.assert_allclose(to_numpy(x2), op(a, b), rtol=1e-6)


@pytest.mark.parametrize("dtype", [d for d in NUMERIC if d.kind in ("int", "uint")])
def test_integer_and_bitwise_operators(rng, device, dtype):
    x, a = random_array(rng, (17,), dtype, device)
    y, b = random_array(rng, (17,), dtype, device)
    b = np.where(b == 0, 1, b).astype(dtype._np)
    y = xp.asarray(b, device=device)
    with np.errstate(all="ignore"):
        for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
                   operator.and_, operator.or_, operator.xor):
            np.testing.assert_array_equal(to_numpy(op(x, y)), op(a, b))
    s = xp.asarray(np.abs(b) % dtype.bits, device=device)
    np.testing.assert_array_equal(to_numpy(x << s), a << (np.abs(b) % dtype.bits))
    np.testing.assert_array_equal(to_numpy(x >> s), a >> (np.abs(b) % dtype.bits))
    np.testing.assert_array_equal(to_numpy(~x), ~a)
    with pytest.raises(TypeError, match="floating-point"):
        x / y


def test_mixed_dtypes_promote(rng, device):
    x, a = random_array(rng, (6,), xp.int8, device)
    y, b = random_array(rng, (6,), xp.uint8, device)
    r = x + y
    assert r.dtype == xp.int16
    np.testing.assert_array_equal(to_numpy(r), a.astype(np.int16) + b.astype(np.int16))
    f, c = random_array(rng, (6,), xp.float32, device)
    z, d = random_array(rng, (6,), xp.complex128, device)
    assert (f * z).dtype == xp.complex128
    with pytest.raises(TypeError, match="cannot be promoted"):
        x + f
    with pytest.raises(TypeError, match="uint64"):
        x + xp.ones(6, dtype=xp.uint64, device=device)


def test_inplace_dtype_and_shape_rules(device):
    x = xp.ones((3,), dtype=xp.float32, device=device)
    with pytest.raises(TypeError, match="in-place"):
        x += xp.ones(3, dtype=xp.float64, device=device)
    with pytest.raises(ValueError, match="shape"):
        x += xp.ones((2, 3), dtype=xp.float32, device=device)
    i = xp.ones(3, dtype=xp.int32, device=device)
    with pytest.raises(TypeError):
        i /= 2
    f = xp.ones(3, dtype=xp.float64, device=device)
    f += xp.ones(3, dtype=xp.float32, device=device)  # promotes to float64: allowed
    assert to_numpy(f).tolist() == [2.0, 2.0, 2.0]


def test_writes_into_a_broadcast_view_are_refused(device):
    """A broadcast view's elements share memory: a write would race on cuda (several results
    into one element) and NumPy refuses it on cpu; every device refuses it with the fix, and
    leaves the viewed array unchanged. Views that share no element stay writable."""
    base = xp.asarray([1, 2], dtype=xp.int32, device=device)
    x = xp.broadcast_to(base, (3, 2))
    other = xp.asarray([[6], [2], [5]], dtype=xp.int32, device=device)
    for write in (lambda: x.__imod__(other), lambda: x.__iadd__(1), lambda: x.__ior__(other),
                  lambda: x.__imatmul__(xp.ones((2, 2), dtype=xp.int32, device=device)),
                  lambda: x.__setitem__((0, 0), 5), lambda: x.__setitem__(..., other)):
        with pytest.raises(ValueError, match=r"read-only.*asarray\(x, copy=True\)"):
            write()
    assert to_numpy(base).tolist() == [1, 2]
    y, _ = xp.broadcast_arrays(base, other)
    with pytest.raises(ValueError, match="broadcast view"):
        y[...] = 0
    ok = xp.broadcast_to(base, (1, 2))  # no element shared: writable
    c = xp.asarray(x, copy=True)
    c %= other
    assert to_numpy(c).tolist() == [[1, 2], [1, 0], [1, 2]]
    assert ok.shape == (1, 2)
    e = xp.ones((1, 3, 0), dtype=xp.int64, device=device)  # no element: nothing shared
    e &= xp.ones((1, 1, 0), dtype=xp.int64, device=device)
    e[...] = 3
    assert e.shape == (1, 3, 0)


def test_comparisons(rng, device):
    x, a = random_array(rng, (10,), xp.float64, device)
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        r = op(x, 0.5)
        assert r.dtype == xp.bool
        np.testing.assert_array_equal(to_numpy(r), op(a, 0.5))
    with pytest.raises(TypeError):
        xp.ones(2, dtype=xp.complex64, device=device) < 1


def test_foreign_operands_are_rejected(device):
    x = xp.ones(3, device=device)
    for foreign in (np.ones(3), [1.0, 2.0, 3.0], np.float64(1.0)):
        with pytest.raises(TypeError, match="asarray"):
            x + foreign
        with pytest.raises(TypeError, match="asarray"):
            foreign + x
    with pytest.raises(TypeError):
        x + "a"
    assert (x == None) is False  # noqa: E711  (Python's identity fallback, no error)


def test_devices_must_match(device):
    if device == CPU:
        pytest.skip("needs a second device")
    x = xp.ones(3, device=device)
    y = xp.ones(3, device=CPU)
    with pytest.raises(ValueError, match=f"{device}.*cpu|cpu.*{device}"):
        x + y


def test_zero_d_conversions(device):
    assert bool(xp.asarray(True, device=device)) is True
    assert int(xp.asarray(-7, dtype=xp.int8, device=device)) == -7
    assert float(xp.asarray(2.5, dtype=xp.float32, device=device)) == 2.5
    assert complex(xp.asarray(1 + 2j, device=device)) == 1 + 2j
    assert operator.index(xp.asarray(5, dtype=xp.uint8, device=device)) == 5
    assert list(range(10))[xp.asarray(3, device=device)] == 3
    with pytest.raises(TypeError, match="0-d"):
        bool(xp.ones(2, device=device))
    with pytest.raises(TypeError, match="0-d"):
        float(xp.ones((1, 1), device=device))
    with pytest.raises(TypeError):
        operator.index(xp.asarray(1.0, device=device))
    with pytest.raises(TypeError):
        float(xp.asarray(1j, device=device))
    with pytest.raises(TypeError):
        iter(xp.asarray(1.0, device=device))
    rows = list(xp.asarray([[1, 2], [3, 4]], device=device))  # iteration runs over axis 0
    assert [to_numpy(r).tolist() for r in rows] == [[1, 2], [3, 4]]


def test_array_namespace():
    x = xp.ones(2)
    for v in (None, "2021.12", "2022.12", "2023.12"):
        assert x.__array_namespace__(api_version=v) is xp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2019.12")
    import array_api_compat
    assert array_api_compat.array_namespace(x) is xp


def test_indexing_rules(rng, device):
    x, a = random_array(rng, (4, 5, 6), xp.float64, device)
    for key in [(1, Ellipsis), (-1, Ellipsis), (1, 2, Ellipsis),
                (slice(None, None, -2), Ellipsis), (Ellipsis, 1), (None, 1, Ellipsis),
                (slice(1, 3), None, slice(None, None, 2), -2), (Ellipsis,)]:
        np.testing.assert_array_equal(to_numpy(x[key]), a[key])
    assert x[1, 2, 3].shape == () and x[1, 2, 3].device == device
    np.testing.assert_array_equal(to_numpy(x[2, ...]), a[2])  # fewer indices: an ellipsis
    i, j = xp.asarray(1, device=device), xp.asarray(3, dtype=xp.uint8, device=device)
    np.testing.assert_array_equal(to_numpy(x[i:j, ::i, ...]), a[1:3])  # 0-d int slice bounds
    with pytest.raises(IndexError, match="slice bounds"):
        x[xp.asarray(1.0, device=device):]
    mask = x > 0
    np.testing.assert_array_equal(to_numpy(x[mask]), a[a > 0])
    np.testing.assert_array_equal(to_numpy(x[mask[:, :, 0]]), a[a[:, :, 0] > 0])
    # an empty mask selects nothing, even where its zero sizes differ from x's
    e = xp.zeros((0, 3, 2), device=device)[xp.zeros((0, 0), dtype=xp.bool, device=device)]
    assert e.shape == (0, 2)
    for bad, err in [((4, 0, 0), "out of bounds"), ((0, 0, 0, 0), "too many"),
                     ((Ellipsis, Ellipsis), "ellipsis"), (1.0, "not allowed"),
                     ([0, 1], "not allowed"), (True, "not allowed"),
                     (xp.asarray([0, 1], device=device), "take"),
                     ((mask, 0), "sole index")]:
        with pytest.raises(IndexError, match=err):
            x[bad]


def test_setitem_through_an_empty_mask_checks_the_value(device):
    """A mask selecting nothing selects (0,) + the rest: the value must broadcast to it on
    every device (the GPU fuzz sweep: cuda took a (3,) value into (0, 2))."""
    x = xp.ones((0, 1, 2), dtype=xp.uint8, device=device)
    m = xp.ones((0, 1), dtype=xp.bool, device=device)
    for bad in ((3,), (0,), (2, 2)):
        with pytest.raises(ValueError, match="cannot be broadcast"):
            x[m] = xp.ones(bad, dtype=xp.uint8, device=device)
    for ok in ((2,), (1, 2), (0, 2), ()):
        x[m] = xp.ones(ok, dtype=xp.uint8, device=device)
    x[m] = 7
    assert x.shape == (0, 1, 2)


def test_setitem(rng, device):
    x, a = random_array(rng, (3, 4), xp.float32, device)
    x[0, ...] = 1.5
    a[0] = 1.5
    x[:, 1] = xp.asarray([7.0, 8.0, 9.0], dtype=xp.float32, device=device)
    a[:, 1] = [7.0, 8.0, 9.0]
    x[x > 5] = 0.0
    a[a > 5] = 0.0
    np.testing.assert_array_equal(to_numpy(x), a)
    with pytest.raises(TypeError, match="astype"):
        x[0, ...] = xp.ones(4, dtype=xp.float64, device=device)
    with pytest.raises(TypeError):
        x[0, ...] = 1j
    with pytest.raises(IndexError):
        x[None] = 1.0
    with pytest.raises(ValueError, match="broadcast"):
        x[0, ...] = xp.ones(3, dtype=xp.float32, device=device)


# ---- the multi-axis rule (indexing page, 2023.12): "Except in the case of providing a single
# ellipsis [...], the number of provided single-axis indexing expressions (excluding None)
# should equal N. [...] An IndexError exception should be raised if [it] is less than N."
# Keys naming fewer axes than x has, without an ellipsis: (shape, key as a function of device).
PARTIAL = [
    ((2, 3), lambda d: 0), ((2, 3), lambda d: -1), ((2, 3), lambda d: (1,)),
    ((2, 3), lambda d: slice(None)), ((2, 3), lambda d: slice(0, 1)),
    ((2, 3), lambda d: ()), ((2, 3), lambda d: np.int64(1)),
    ((2, 3), lambda d: xp.asarray(1, device=d)),  # a 0-d integer array is an integer index
    ((2, 3, 4), lambda d: 1), ((2, 3, 4), lambda d: (0, 1)),
    ((2, 3, 4), lambda d: (slice(None), -1)), ((2, 3, 4), lambda d: slice(None, None, -1)),
    ((2, 3, 4), lambda d: (xp.asarray(1, device=d), xp.asarray(0, dtype=xp.uint8, device=d))),
]
# None adds an axis and names none: these still name fewer axes than x has.
PARTIAL_NONE = [((2, 3), lambda d: None), ((2, 3), lambda d: (None, 0)),
                ((2, 3), lambda d: (0, None)), ((2, 3, 4), lambda d: (None, 1, None, 2)),
                ((2, 3, 4), lambda d: (slice(None), None, slice(None)))]


def _strict_raises_index_error(shape, key_fn, api, setting):
    """Whether array_api_strict (the reference) refuses the key with IndexError."""
    import array_api_strict as strict
    with strict.ArrayAPIStrictFlags(api_version=api):
        s = strict.reshape(strict.arange(int(np.prod(shape)), dtype=strict.float64), shape)
        k = key_fn(None)
        k = tuple(strict.asarray(int(p._data.item()), dtype=getattr(strict, p.dtype.name))
                  if isinstance(p, Array) else p for p in k) if type(k) is tuple else (
            strict.asarray(int(k._data.item())) if isinstance(k, Array) else k)
        try:
            if setting:
                s[k] = 1.0
            else:
                s[k]
        except IndexError:
            return True
    return False


@pytest.mark.parametrize("api", ["2023.12", "2025.12"])
@pytest.mark.parametrize("shape,key_fn", PARTIAL + PARTIAL_NONE)
def test_partial_key_raises_index_error(rng, device, revision, api, shape, key_fn):
    xp.set_api_version(api)
    x, a = random_array(rng, shape, xp.float64, device)
    key = key_fn(device)
    with pytest.raises(IndexError, match="multi-axis indexing"):
        x[key]
    with pytest.raises(IndexError):  # (None in an assignment's key is refused first)
        x[key] = 1.0
    np.testing.assert_array_equal(to_numpy(x), a)  # nothing was written
    assert _strict_raises_index_error(shape, key_fn, api, setting=False)
    # with an ellipsis anywhere in it, the same key is valid and means what NumPy's does
    parts = key if type(key) is tuple else (key,)
    np_parts = tuple(int(p._data.item()) if isinstance(p, Array) else p for p in parts)
    for at in range(len(parts) + 1):
        full = parts[:at] + (Ellipsis,) + parts[at:]
        np.testing.assert_array_equal(to_numpy(x[full]), a[np_parts[:at] + (...,) +
                                                           np_parts[at:]])
        if None not in parts:
            x[full] = 2.5
            a[np_parts[:at] + (...,) + np_parts[at:]] = 2.5
            np.testing.assert_array_equal(to_numpy(x), a)
    if None not in parts:
        assert _strict_raises_index_error(shape, key_fn, api, setting=True)


@pytest.mark.parametrize("api", ["2023.12", "2025.12"])
def test_full_keys_and_ellipsis_are_valid(rng, device, revision, api):
    xp.set_api_version(api)
    x, a = random_array(rng, (2, 3, 4), xp.float32, device)
    for key in [(1, 2, 3), (0, slice(None), -1), (None, 1, None, slice(1, 3), 0, None),
                (Ellipsis,), Ellipsis, (Ellipsis, 0), (0, Ellipsis), (0, Ellipsis, 1),
                (None, Ellipsis), (Ellipsis, None), (1, 2, 3, Ellipsis), (1, Ellipsis, 2, 3),
                (slice(None),) * 3]:
        np.testing.assert_array_equal(to_numpy(x[key]), a[key])
    i = xp.asarray(1, device=device)
    np.testing.assert_array_equal(to_numpy(x[i, i, i]), a[1, 1, 1])
    x[1, ...] = 7.0
    a[1, ...] = 7.0
    x[...] = x + 1
    a[...] = a + 1
    x[:, :, 0] = 3.0
    a[:, :, 0] = 3.0
    np.testing.assert_array_equal(to_numpy(x), a)
    # 1-d (the fast paths of x[i] and x[a:b]) and 0-d arrays
    v, b = random_array(rng, (5,), xp.int32, device)
    for key in [0, -1, slice(1, 4), slice(None, None, -2), (2,), Ellipsis]:
        np.testing.assert_array_equal(to_numpy(v[key]), b[key])
    v[1] = 4
    b[1] = 4
    v[2:] = 9
    b[2:] = 9
    np.testing.assert_array_equal(to_numpy(v), b)
    z, c = random_array(rng, (), xp.float64, device)
    assert float(z[()]) == float(c) and float(z[...]) == float(c)
    assert z[None].shape == (1,) and z[None, ...].shape == (1,)
    z[()] = 1.5
    assert float(z) == 1.5


@pytest.mark.parametrize("api", ["2023.12", "2025.12"])
def test_boolean_mask_counts_as_its_axes(rng, device, revision, api):
    """A boolean array as the sole index names its own axes; a mask of lower rank than x
    replaces x's leading axes (boolean array indexing: "If N >= M, then A[B] must replace the
    first M dimensions of A"), which array_api_strict allows too: no multi-axis error."""
    import array_api_strict as strict
    xp.set_api_version(api)
    x, a = random_array(rng, (3, 4, 2), xp.float64, device)
    for m in (a[:, 0, 0] > 0, a[:, :, 0] > 0, a > 0):
        mask = xp.asarray(m, device=device)
        np.testing.assert_array_equal(to_numpy(x[mask]), a[m])
        with strict.ArrayAPIStrictFlags(api_version=api):
            s = strict.asarray(a)
            assert s[strict.asarray(m)].shape == a[m].shape
        y, b = xp.asarray(a, copy=True, device=device), a.copy()
        y[mask] = -1.0
        b[m] = -1.0
        np.testing.assert_array_equal(to_numpy(y), b)
    with pytest.raises(IndexError, match="sole index"):
        x[xp.asarray(a[:, 0, 0] > 0, device=device), 0]


@pytest.mark.parametrize("api", ["2024.12", "2025.12"])
def test_integer_arrays_count_as_one_axis_each(rng, device, revision, api):
    """Integer array indexing (2024.12): "Let T be a tuple (t1, t2, ..., tN) having length N";
    an integer array names one axis, so a tuple of them shorter than x's rank is refused, as
    array_api_strict refuses it."""
    import array_api_strict as strict
    xp.set_api_version(api)
    x, a = random_array(rng, (3, 4, 2), xp.float64, device)
    i = xp.asarray([0, 2, 1], device=device)
    for key in [(i,), i, (i, i), (1, i), (i, None, 0)]:
        with pytest.raises(IndexError, match="multi-axis indexing"):
            x[key]
    with strict.ArrayAPIStrictFlags(api_version=api):
        s, si = strict.asarray(a), strict.asarray([0, 2, 1])
        for key in [(si,), si, (si, si), (1, si)]:
            with pytest.raises(IndexError):
                s[key]
        np.testing.assert_array_equal(np.asarray(s[si, si, 1]), a[[0, 2, 1], [0, 2, 1], 1])
    np.testing.assert_array_equal(to_numpy(x[i, i, 1]), a[[0, 2, 1], [0, 2, 1], 1])
    np.testing.assert_array_equal(to_numpy(x[i, i, ...]), a[[0, 2, 1], [0, 2, 1], ...])


def test_partial_key_message(device, revision):
    x = xp.zeros((2, 3), device=device)
    msg = ("__getitem__: x has 2 dimensions but the index gives 1 (x[0]); index every axis or "
           "add an ellipsis: x[0, ...] (Array API 2023.12, multi-axis indexing)")
    with pytest.raises(IndexError) as e:
        x[0]
    assert str(e.value) == msg
    with pytest.raises(IndexError) as e:
        x[0] = 1.0
    assert str(e.value) == msg.replace("__getitem__", "__setitem__")
    y = xp.zeros((2, 3, 4), device=device)
    with pytest.raises(IndexError) as e:
        y[None, 1:, ::2]
    assert str(e.value) == (
        "__getitem__: x has 3 dimensions but the index gives 2 (x[None, 1:, ::2]); index "
        "every axis or add an ellipsis: x[None, 1:, ::2, ...] (Array API 2023.12, multi-axis "
        "indexing)")
    with pytest.raises(IndexError, match=r"gives 0 \(x\[\(\)\]\); .*: x\[\.\.\.\]"):
        y[()]
    xp.set_api_version("2025.12")
    with pytest.raises(IndexError, match=r"gives 1 \(x\[<int64 array of shape \(2,\)>\]\)"):
        x[xp.asarray([0, 1], device=device)]


@pytest.mark.parametrize("api", ["2023.12", "2025.12"])
def test_partial_key_inside_fuse(rng, device, revision, api):
    """The traced array of xp_cuda.fusion applies the eager rule: the fused function raises
    what the eager one raises, and a full key fuses as before."""
    from xp_cuda.fusion import fuse
    xp.set_api_version(api)
    x, a = random_array(rng, (3, 4), xp.float32, device)
    for f in (lambda t: t[0] * 2, lambda t: t[1:] + 1, lambda t: t[None, -1] - t[0, 0]):
        with pytest.raises(IndexError) as eager:
            f(x)
        with pytest.raises(IndexError) as fused:
            fuse(f)(x)
        assert str(fused.value) == str(eager.value)
        assert "multi-axis indexing" in str(fused.value)
    np.testing.assert_array_equal(to_numpy(fuse(lambda t: t[0, ...] * 2)(x)), a[0] * 2)
    np.testing.assert_array_equal(to_numpy(fuse(lambda t: t[..., 1:] + t[..., :1])(x)),
                                  a[:, 1:] + a[:, :1])

    def assign(t):
        t[0] = 1.0
        return t

    with pytest.raises(IndexError, match="__setitem__.*multi-axis indexing"):
        fuse(assign)(x)
    np.testing.assert_array_equal(to_numpy(x), a)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_dlpack_roundtrip(rng, device, dtype):
    x, a = random_array(rng, (3, 5), dtype, device)
    kind, idx = x.__dlpack_device__()
    assert (kind, idx) == ((1, 0) if device.kind == "cpu" else (2, device.index))
    # NumPy reads any of our arrays onto the cpu (copying from a GPU)
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), a)
    y = xp.from_dlpack(x)
    assert y.device == device and y.dtype == dtype
    np.testing.assert_array_equal(to_numpy(y), a)
    z = xp.from_dlpack(a, device=device)
    np.testing.assert_array_equal(to_numpy(z), a)
    v = x[:, ::2]  # a strided view travels too
    np.testing.assert_array_equal(np.from_dlpack(v, device="cpu"), a[:, ::2])


def test_dlpack_copy_flags(device):
    a = np.arange(6.0)
    x = xp.from_dlpack(a, device=CPU, copy=False)
    a[0] = 42.0
    assert float(x[0]) == 42.0  # shared memory
    y = xp.from_dlpack(a, device=CPU, copy=True)
    a[1] = 43.0
    assert float(y[1]) == 1.0
    if device != CPU:
        with pytest.raises((ValueError, BufferError)):
            xp.from_dlpack(a, device=device, copy=False)
    if device.kind != "cpu":  # (a simulated cpu:N exports the host memory it has)
        g = xp.ones(3, device=device)
        with pytest.raises(BufferError):
            g.__dlpack__(dl_device=(1, 0), copy=False)


def test_to_device_and_repr(device):
    x = xp.asarray([1, 2, 3], device=device)
    assert x.to_device(device) is x
    c = x.to_device(CPU)
    assert c.device == CPU and to_numpy(c).tolist() == [1, 2, 3]
    assert f"device={device}" in repr(x)
    assert str(device) in ("cpu", "cpu:1", "cuda:0")
    with pytest.raises(TypeError, match="device object"):
        x.to_device("cpu")
    with pytest.raises(ValueError):
        x.to_device(Device("cuda", 99))


def test_device_objects():
    a, b = Device("cuda", 0), Device("cuda", 0)
    assert a == b and hash(a) == hash(b) and a != CPU and str(a) == "cuda:0"
    assert str(CPU) == "cpu" and repr(CPU) == "cpu"
    assert {a, b, CPU} == {a, CPU}
    info = xp.__array_namespace_info__()
    assert isinstance(info.devices(), list) and CPU in info.devices()
    assert info.default_device() in info.devices()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True}
    assert info.default_dtypes() == {"real floating": xp.float64, "complex floating":
                                     xp.complex128, "integral": xp.int64, "indexing": xp.int64}
    assert set(info.dtypes(kind="integral").values()) == {xp.int8, xp.int16, xp.int32,
                                                          xp.int64, xp.uint8, xp.uint16,
                                                          xp.uint32, xp.uint64}
    assert len(info.dtypes()) == 13


def test_default_device_env(monkeypatch):
    import xp_cuda._devices as devs
    monkeypatch.setattr(devs, "_default", None)
    monkeypatch.setenv("XP_CUDA_DEFAULT_DEVICE", "cpu")
    assert devs.default_device() == CPU
    monkeypatch.setattr(devs, "_default", None)
    monkeypatch.setenv("XP_CUDA_DEFAULT_DEVICE", "gpu7")
    with pytest.raises(ValueError, match="XP_CUDA_DEFAULT_DEVICE"):
        devs.default_device()
    monkeypatch.setattr(devs, "_default", None)


def test_negative_zero_survives_every_door(device):
    """-0.0 keeps its sign through asarray, full, setitem and to_device (CuPy's fill() would
    memset it to +0.0)."""
    def neg(a):
        return bool(np.signbit(to_numpy(a)).all())
    assert neg(xp.asarray(-0.0, device=device))
    assert neg(xp.asarray([-0.0, -0.0], dtype=xp.float32, device=device))
    assert neg(xp.full((3,), -0.0, device=device))
    c = xp.asarray([1.0, 2.0], device=device)
    c[0] = -0.0
    c[1:] = -0.0
    assert neg(c)
    assert neg(xp.asarray(-0.0).to_device(device))
    assert neg(xp.sin(xp.asarray(-0.0, device=device)))


@pytest.mark.parametrize("view", ["reversed", "reversed_newaxis", "transposed", "step"])
def test_scalar_operators_on_strided_views(rng, device, view):
    """Scalars on either side of a view read through its strides (reflected ops included)."""
    x, a = random_array(rng, (6, 5), xp.float64, device)
    pick = {"reversed": lambda t: t[::-1, ...],
            "reversed_newaxis": lambda t: t[0, ::-1][None, :],
            "transposed": lambda t: t.T, "step": lambda t: t[::2, 1::2]}[view]
    v, b = pick(x), pick(a)
    for got, want in ((0.5 - v, 0.5 - b), (v - 0.5, b - 0.5), (2.0 * v, 2.0 * b),
                      (v / 4.0, b / 4.0), (-v, -b), (xp.sin(v), np.sin(b)), (v + v, b + b)):
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-15)


def test_one_device_object_per_device():
    """Device objects are interned: the hot paths test a kept plan's device by identity, so
    a device made anew (a foreign array's, a pickle's, a copy's) must be the same object."""
    import copy
    import pickle

    from xp_cuda._devices import CPU, Device
    assert Device("cuda", 0) is Device("cuda", 0) and Device("cuda", 1) is not Device("cuda", 0)
    assert Device("cpu") is CPU and Device("cpu", 0) is CPU  # (cpu:3: a simulated device)
    assert Device("cpu", 3) is Device("cpu", 3) and Device("cpu", 3) != CPU
    d = Device("cuda", 2)
    assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d
    x = xp.asarray(np.arange(3.0), device=CPU)
    assert pickle.loads(pickle.dumps(x)).device is x.device is CPU
    with pytest.raises(ValueError, match="unknown device kind"):
        Device("gpu")
    with pytest.raises(ValueError, match="unknown device kind"):
        Device(["cuda"])


@pytest.mark.cuda
@pytest.mark.skipif(__import__("xp_cuda._devices", fromlist=["x"]).cuda_device_count() == 0,
                    reason="no usable CUDA GPU here")
def test_arrays_from_cupy_take_the_kept_path(monkeypatch):
    """Arrays wrapped from CuPy arrays (each wrap names its device anew) reuse the validated
    broadcast launch: the second call makes no checked call."""
    import cupy as cp

    from xp_cuda import _elementwise as ew
    u = xp.asarray(cp.asarray([[1.5], [-2.0]], dtype=cp.float32))
    v = xp.asarray(cp.asarray([[0.25, 1.0, -3.0, 8.0]], dtype=cp.float32))
    u + v
    calls = []
    checked = ew._apply_checked
    monkeypatch.setattr(ew, "_apply_checked", lambda *a: calls.append(a) or checked(*a))
    r = u + v
    assert not calls, "the kept launch was not used for arrays wrapped from CuPy"
    np.testing.assert_array_equal(to_numpy(r), np.array([[1.5], [-2.0]], np.float32)
                                  + np.array([[0.25, 1.0, -3.0, 8.0]], np.float32))


_REFLECTED = {"float": ("add", "sub", "mul", "truediv", "pow"),
              "complex": ("add", "sub", "mul", "truediv"),
              "int": ("add", "sub", "mul", "and", "or", "xor"),
              "uint": ("add", "sub", "mul", "and", "or", "xor"),
              "bool": ("and", "or", "xor")}


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.complex64, xp.int8, xp.int64,
                                   xp.uint16, xp.bool], ids=str)
def test_reflected_operators_take_their_hot_path_with_the_same_results(device, rng, dtype):
    """A Python scalar first (1.0 / x, 3 - x) has its own hot path, as the scalar last has
    (its kept plan, a scalar-first kernel on cuda): repeated calls on contiguous, strided,
    0-d and empty arrays give NumPy's values for the scalar in the array's dtype, and a
    scalar the array's dtype refuses is still refused."""
    from xp_cuda._backends._base import FAST, FAST_ANY_LAYOUT
    kind = dtype.kind
    scalar = {"float": 1.5, "complex": 2.0, "int": 3, "uint": 3, "bool": True}[kind]
    x, ref = random_array(rng, (4, 6), dtype, device)
    cases = [(x, ref), (x[:, ::2], ref[:, ::2]), (x[1, 2], ref[1, 2]), (x[:0, ...], ref[:0])]
    for stem in _REFLECTED[kind]:
        method = getattr(Array, f"__r{stem}__")
        np_op = getattr(operator, stem if stem not in ("and", "or") else stem + "_")
        s = np.asarray(scalar, dtype=dtype._np)
        for a, r in cases:
            want = np.asarray(np_op(s, r))
            for _ in range(2):  # the checked call, then the kept plan
                got = method(a, scalar)
                assert got.dtype == dtype and got.device == device and got.shape == r.shape
                if stem == "pow":
                    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-6)
                else:
                    assert np.array_equal(to_numpy(got), want, equal_nan=kind != "bool"), stem
        name = {"sub": "subtract", "mul": "multiply", "truediv": "divide",
                "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}.get(stem, stem)
        assert (name, "s", dtype._np) in FAST or (name, "s", dtype._np) in FAST_ANY_LAYOUT
    if kind in ("int", "uint"):
        with pytest.raises(TypeError):
            1.5 - x
        with pytest.raises(OverflowError):
            2**70 - x
    if kind == "float":
        with pytest.raises(TypeError):
            True - x
