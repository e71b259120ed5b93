"""Creation functions: values, dtypes, devices, the copy rules of the doors, and bad input."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, random_numpy, to_numpy
from xp_cuda._devices import CPU


@pytest.mark.parametrize("args", [(10,), (3, 17, 4), (17, 3, -4), (-5, 5, 3), (0, 0),
                                  (5, 1), (2**40, 2**40 + 7, 3), (0, 10, 20)])
def test_arange_integer_exact(device, args):
    x = xp.arange(*args, device=device)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    expected = list(range(start, stop, step))
    assert x.dtype == xp.int64 and x.device == device
    assert to_numpy(x).tolist() == expected


@pytest.mark.parametrize("args", [(0.0, 1.0, 0.1), (1.5, -2.25, -0.75), (0, 1, 1 / 3),
                                  (-3.0, 3.0, 0.5)])
def test_arange_float_count_and_values(device, args):
    start, stop, step = args
    x = xp.arange(start, stop, step, device=device)
    n = max(0, math.ceil((stop - start) / step))
    assert x.shape == (n,) and x.dtype == xp.float64
    np.testing.assert_allclose(to_numpy(x), [start + i * step for i in range(n)], rtol=1e-15,
                               atol=1e-15)


def test_arange_errors():
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 10, 0)
    with pytest.raises(TypeError):
        xp.arange(0.5, 3, dtype=xp.int32)
    with pytest.raises(OverflowError):
        xp.arange(0, 300, dtype=xp.uint8)
    with pytest.raises(TypeError):
        xp.arange("3")
    assert xp.arange(0, 250, 5, dtype=xp.uint8).shape == (50,)


@pytest.mark.parametrize("dtype", [xp.float32, xp.float64, xp.complex64, xp.complex128])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace(device, dtype, endpoint):
    start, stop = (-2.5, 7.25) if dtype.kind == "float" else (-2.5 + 1j, 7.25 - 3j)
    x = xp.linspace(start, stop, 11, dtype=dtype, device=device, endpoint=endpoint)
    ref = np.linspace(start, stop, 11, endpoint=endpoint).astype(dtype._np)
    assert x.dtype == dtype and x.shape == (11,)
    got = to_numpy(x)
    assert got[0] == ref[0]
    if endpoint:
        assert got[-1] == dtype._np.type(stop)
    single = dtype in (xp.float32, xp.complex64)
    np.testing.assert_allclose(got, ref, rtol=1e-6 if single else 1e-14)
    with pytest.raises(ValueError, match="non-negative"):
        xp.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        xp.linspace(0j, 1, 5, dtype=xp.float64)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_full_zeros_ones_empty(device, dtype):
    fill = {"bool": True, "int": -3, "uint": 7, "float": 2.5, "complex": 1 - 2j}[dtype.kind]
    x = xp.full((2, 3), fill, dtype=dtype, device=device)
    assert x.dtype == dtype and x.shape == (2, 3) and x.device == device
    assert (to_numpy(x) == np.full((2, 3), fill, dtype=dtype._np)).all()
    for f, v in ((xp.zeros, 0), (xp.ones, 1)):
        y = f((4,), dtype=dtype, device=device)
        assert y.dtype == dtype and (to_numpy(y) == v).all()
        assert f(3).dtype == xp.float64
    assert xp.empty((0, 5), dtype=dtype, device=device).shape == (0, 5)
    like = xp.full_like(x, fill)
    assert like.dtype == dtype and like.device == device and like.shape == (2, 3)
    for f in (xp.zeros_like, xp.ones_like, xp.empty_like):
        assert f(x).dtype == dtype and f(x).device == device


def test_full_infers_and_checks_fill():
    assert xp.full(2, True).dtype == xp.bool
    assert xp.full(2, 1).dtype == xp.int64
    assert xp.full(2, 1.0).dtype == xp.float64
    assert xp.full(2, 1j).dtype == xp.complex128
    with pytest.raises(OverflowError):
        xp.full(2, 256, dtype=xp.uint8)
    with pytest.raises(TypeError):
        xp.full(2, 1.5, dtype=xp.int32)
    with pytest.raises(TypeError):
        xp.full(2, True, dtype=xp.int32)  # a bool only fills bool arrays (scalar rules)
    with pytest.raises(TypeError):
        xp.full(2, np.float32(1))


def test_bad_shapes():
    with pytest.raises(ValueError, match="negative"):
        xp.zeros((2, -1))
    with pytest.raises(TypeError):
        xp.zeros((2.0, 3))
    with pytest.raises(TypeError):
        xp.zeros(np.float64(3))  # (a NumPy integer is a size: operator.index)
    with pytest.raises(ValueError, match="bytes"):
        xp.zeros((2**40, 2**40), dtype=xp.float64)
    with pytest.raises(TypeError):
        xp.zeros(3, dtype=np.float32)
    with pytest.raises(TypeError):
        xp.zeros(3, dtype="float32")


@pytest.mark.parametrize("k", [-2, 0, 1, 5])
def test_eye_tril_triu(rng, device, k):
    e = xp.eye(4, 6, k=k, dtype=xp.int16, device=device)
    np.testing.assert_array_equal(to_numpy(e), np.eye(4, 6, k=k, dtype=np.int16))
    a = random_numpy(rng, (3, 4, 5), xp.float32)
    x = xp.asarray(a, device=device)
    np.testing.assert_array_equal(to_numpy(xp.tril(x, k=k)), np.tril(a, k=k))
    np.testing.assert_array_equal(to_numpy(xp.triu(x, k=k)), np.triu(a, k=k))
    with pytest.raises(ValueError):
        xp.tril(xp.ones(3, device=device))
    with pytest.raises(ValueError):
        xp.eye(-1)
    for huge in (2**63, -(2**63) - 5):  # beyond any kernel integer: still all zeros
        assert not to_numpy(xp.eye(3, 4, k=huge, device=device)).any()
        keep, drop = (xp.tril, xp.triu) if huge > 0 else (xp.triu, xp.tril)
        np.testing.assert_array_equal(to_numpy(keep(x, k=huge)), a)
        assert not to_numpy(drop(x, k=huge)).any()


def test_meshgrid(rng, device):
    a, b = random_numpy(rng, (3,), xp.float32), random_numpy(rng, (4,), xp.float32)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    for indexing in ("xy", "ij"):
        out = xp.meshgrid(x, y, indexing=indexing)
        assert isinstance(out, list)
        for o, r in zip(out, np.meshgrid(a, b, indexing=indexing)):
            np.testing.assert_array_equal(to_numpy(o), r)
    with pytest.raises(TypeError):
        xp.meshgrid(x, xp.ones(3, dtype=xp.float64, device=device))
    with pytest.raises(ValueError):
        xp.meshgrid(x, indexing="yx")


def test_asarray_python_input(device):
    assert xp.asarray([1, 2], device=device).dtype == xp.int64
    assert xp.asarray([1, 2.5], device=device).dtype == xp.float64
    assert xp.asarray([[1j]], device=device).dtype == xp.complex128
    assert xp.asarray([True], device=device).dtype == xp.bool
    assert xp.asarray(3, dtype=xp.uint8, device=device).shape == ()
    with pytest.raises(OverflowError):
        xp.asarray([1, 2**63])
    with pytest.raises(OverflowError):
        xp.asarray([300], dtype=xp.uint8)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="rectangular"):
        xp.asarray([[1, 2], [3]])
    with pytest.raises(TypeError):
        xp.asarray(["a"])
    with pytest.raises(TypeError):
        xp.asarray([1.5], dtype=xp.int32)
    # 0-d arrays inside a sequence read as the Python scalars they hold
    z = xp.asarray([[xp.asarray(3, dtype=xp.uint8, device=device), 4]], device=device)
    assert z.dtype == xp.int64 and to_numpy(z).tolist() == [[3, 4]]


def test_asarray_copy_semantics():
    a = np.arange(4.0)
    shared = xp.asarray(a, copy=False)
    a[0] = 9.0
    assert float(shared[0]) == 9.0
    copied = xp.asarray(a, copy=True)
    a[1] = 9.0
    assert float(copied[1]) == 1.0
    assert xp.asarray(shared) is not None and xp.asarray(shared, copy=False).dtype == xp.float64
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(shared, dtype=xp.float32, copy=False)
    assert xp.asarray(np.arange(3, dtype=np.int8)).dtype == xp.int8
    assert xp.asarray(np.arange(3)).device == CPU  # a NumPy array stays where it is
    with pytest.raises(TypeError, match="not one of the 13"):
        xp.asarray(np.ones(3, dtype=np.float16))
    with pytest.raises(TypeError, match="not one of the 13"):
        xp.asarray(np.array(["a"]))
    with pytest.raises(TypeError):
        xp.asarray(object())


def test_asarray_of_a_numpy_scalar_is_always_a_copy():
    """A NumPy scalar (a buffer, immutable) is copied into the array: copy=False raises, as
    the standard asks where a copy is needed (array_api_strict raises too); copy=None and
    True give its value and dtype."""
    for v, dt in ((np.float64(2.5), xp.float64), (np.int32(-3), xp.int32),
                  (np.bool_(True), xp.bool), (np.complex64(1 - 2j), xp.complex64)):
        with pytest.raises(ValueError, match="copy=False cannot be honoured for a NumPy scalar"):
            xp.asarray(v, copy=False)
        for copy in (None, True):
            a = xp.asarray(v, copy=copy)
            assert a.dtype == dt and a.shape == () and a.device == CPU
            assert np.asarray(a._data).item() == v.item()
    assert xp.asarray(np.float32(1.5), dtype=xp.float64).dtype == xp.float64


def test_asarray_moves_and_casts(device):
    x = xp.asarray([1, 2, 3], dtype=xp.int32, device=CPU)
    y = xp.asarray(x, device=device, dtype=xp.float64)
    assert y.device == device and y.dtype == xp.float64
    assert to_numpy(y).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="complex"):
        xp.asarray(xp.asarray([1j]), dtype=xp.float64)


def test_astype(rng, device):
    a = random_numpy(rng, (5,), xp.float64)
    x = xp.asarray(a, device=device)
    assert xp.astype(x, xp.float64, copy=False) is x
    c = xp.astype(x, xp.float64)
    assert c is not x
    np.testing.assert_array_equal(to_numpy(xp.astype(x, xp.int32)), a.astype(np.int32))
    assert to_numpy(xp.astype(x, xp.bool)).tolist() == (a != 0).tolist()
    with pytest.raises(TypeError, match="complex"):
        xp.astype(xp.asarray([1j], device=device), xp.float32)
    m = xp.astype(x, xp.float32, device=CPU)
    assert m.device == CPU and m.dtype == xp.float32


def test_torch_through_dlpack():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = xp.from_dlpack(t, device=CPU)
    assert x.shape == (2, 3) and x.dtype == xp.float32
    assert xp.asarray(t).dtype == xp.float32
    back = torch.from_dlpack(x)
    assert back.tolist() == t.tolist()
