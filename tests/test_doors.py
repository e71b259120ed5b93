"""The doors an array passes through (issue #16): numpy.asarray, pickle and copy, integers
wherever operator.index takes them, strict copy= flags, and 2024.12's integer array indexing.

Every behaviour test takes the `device` fixture (cpu here; cuda:0 on a GPU) and compares with
NumPy on random non-zero data of every dtype."""
import copy
import operator
import pickle

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._array import Array
from xp_cuda._backends import CpuBackend, CudaBackend, backend
from xp_cuda._backends._base import Backend
from xp_cuda._devices import CPU

from helpers import ALL_DTYPES, INTEGER, random_array, to_numpy


def _close(got, want):
    """got (an xp_cuda array) matches the NumPy array want in dtype, shape and values to
    rounding (a contraction's order of additions is the library's)."""
    g = to_numpy(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def _same(got, want, what=""):
    """got (an xp_cuda array) equals the NumPy array want: dtype, shape, values (NaN at the
    same places), and the sign of zeros."""
    g = to_numpy(got)
    assert g.dtype == want.dtype, f"{what}: dtype {g.dtype}, expected {want.dtype}"
    assert g.shape == want.shape, f"{what}: shape {g.shape}, expected {want.shape}"
    np.testing.assert_array_equal(g, want, err_msg=what)
    if want.dtype.kind in "fc":
        np.testing.assert_array_equal(np.signbit(g.real), np.signbit(want.real), err_msg=what)


# views of random data: contiguous, strided with a negative step, 0-d, empty
def _cases(rng, dtype, device):
    x, a = random_array(rng, (6, 7), dtype, device)
    yield "contiguous", x, a
    yield "strided", x[::2, ::-3], a[::2, ::-3]
    x0, a0 = random_array(rng, (), dtype, device)
    yield "0-d", x0, a0
    xe, ae = random_array(rng, (0, 3), dtype, device)
    yield "empty", xe, ae


# ---- 1. the NumPy door --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy_asarray_converts_on_cpu_and_refuses_on_gpu(device, rng, dtype):
    for what, x, a in _cases(rng, dtype, device):
        if device.kind == "cpu":  # (the simulated cpu:1 too: its memory is the host's)
            got = np.asarray(x)
            assert type(got) is np.ndarray and got.dtype == a.dtype, what
            np.testing.assert_array_equal(got, a, err_msg=what)
            np.testing.assert_array_equal(np.array(x), a, err_msg=what)
        else:
            with pytest.raises(TypeError, match=r'numpy\.from_dlpack\(x, device="cpu"\)'):
                np.asarray(x)
        # the explicit door works on every device
        got = np.from_dlpack(x, device="cpu")
        assert got.dtype == a.dtype, what
        np.testing.assert_array_equal(got, a, err_msg=what)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy_copies_switch_lets_numpy_read_every_device(device, rng, dtype):
    """xp_cuda.nonstandard.numpy_copies(True) (for engines such as Cubed, which store every
    task's result through numpy.asarray): a GPU array converts as a host copy, with NumPy's
    dtype argument; copy=False still refuses there. cpu arrays behave as without it."""
    from xp_cuda.nonstandard import numpy_copies
    previous = numpy_copies(True)
    try:
        for what, x, a in _cases(rng, dtype, device):
            got = np.asarray(x)
            assert type(got) is np.ndarray and got.dtype == a.dtype and got.shape == a.shape
            np.testing.assert_array_equal(got, a, err_msg=what)
            conv = np.asarray(x, dtype=np.complex128)
            np.testing.assert_array_equal(conv, a.astype(np.complex128), err_msg=what)
            if device.kind != "cpu":
                with pytest.raises(ValueError, match="only as a copy.*copy=False"):
                    np.asarray(x, copy=False)
                # a copy: writing to it leaves the array as it was
                if got.size:
                    got.reshape(-1)[0] = a.reshape(-1)[-1]
                    np.testing.assert_array_equal(np.asarray(x), a, err_msg=what)
    finally:
        assert numpy_copies(previous) is True
    if device.kind != "cpu":
        with pytest.raises(TypeError, match="numpy_copies"):
            np.asarray(random_array(rng, (2,), dtype, device)[0])


def test_numpy_copies_takes_a_bool_and_returns_the_previous_setting():
    from xp_cuda.nonstandard import numpy_copies
    with pytest.raises(TypeError, match="True or False"):
        numpy_copies(1)
    assert numpy_copies(False) is False  # the default (CI sets no XP_CUDA_NUMPY_COPIES)
    assert numpy_copies(False) is False


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy_reads_our_dtypes_without_equating_them(dtype):
    """numpy.dtype(xp.int32) is NumPy's int32 (engines convert dtypes so); the dtype itself
    stays opaque: never equal to NumPy's, and refused where a function takes a dtype."""
    assert np.dtype(dtype) == np.dtype(dtype.name)
    assert dtype.dtype == np.dtype(dtype.name)
    assert dtype != np.dtype(dtype.name) and dtype != getattr(np, dtype.name)
    with pytest.raises(TypeError):
        xp.zeros(2, dtype=np.dtype(dtype.name))


def test_numpy_asarray_copy_semantics_on_cpu(rng):
    x, a = random_array(rng, (4, 5), xp.int32, CPU)
    shared = np.asarray(x)  # copy=None: NumPy's array itself, no copy
    x[0, 0] = 12345
    assert shared[0, 0] == 12345
    fresh = np.asarray(x, copy=True)
    x[0, 1] = 54321
    assert fresh[0, 1] != 54321
    assert np.asarray(x, copy=False)[0, 1] == 54321
    conv = np.asarray(x, dtype=np.float64)  # a conversion is a copy
    assert conv.dtype == np.float64 and conv[0, 0] == 12345.0
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(x, dtype=np.float64, copy=False)
    with pytest.raises(TypeError, match="True, False or None"):
        x.__array__(copy=0)


class _ClaimsGpu(Array):
    """A cpu array that reports a CUDA DLPack device: __dlpack__'s path for a GPU array
    asked for the host (dl_device), which numpy.from_dlpack(x, device="cpu") takes."""
    __slots__ = ()

    def __dlpack_device__(self):
        return (2, 0)


def test_numpy_from_dlpack_asks_a_gpu_array_for_a_host_copy(rng):
    a = rng.standard_normal((3, 4))
    x = _ClaimsGpu._new(a[:, ::2], CPU)
    got = np.from_dlpack(x, device="cpu")  # NumPy passes dl_device=(1, 0)
    np.testing.assert_array_equal(got, a[:, ::2])
    with pytest.raises(BufferError, match="copy=False"):
        np.from_dlpack(x, device="cpu", copy=False)
    with pytest.raises(BufferError, match="only a copy to the CPU"):
        x.__dlpack__(dl_device=(2, 1))


# ---- 2. pickle, copy.copy, copy.deepcopy -------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_pickle_round_trips_values_device_and_dtype(device, rng, dtype):
    for what, x, a in _cases(rng, dtype, device):
        for protocol in (2, pickle.HIGHEST_PROTOCOL):
            y = pickle.loads(pickle.dumps(x, protocol=protocol))
            assert type(y) is type(x), what
            assert y.device == x.device and y.dtype == x.dtype, what
            _same(y, a, f"{what}, protocol {protocol}")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_copy_and_deepcopy_are_new_buffers_with_equal_values(device, rng, dtype):
    for what, x, a in _cases(rng, dtype, device):
        for make in (copy.copy, copy.deepcopy):
            y = make(x)
            assert y is not x and y.device == x.device and y.dtype == x.dtype, what
            _same(y, a, f"{what}, {make.__name__}")
            if y.size:  # writing into the copy leaves the original as it was
                y[(0,) * y.ndim] = xp.asarray(a[(-1,) * a.ndim], device=device)
                y[(0,) * y.ndim] = x[(-1,) * x.ndim]
                first = np.asarray(a[(0,) * a.ndim])
                _same(x[(0,) * x.ndim], first, f"{what}: the original after writing a copy")
    x, _ = random_array(rng, (3,), xp.float32, device)
    pair = copy.deepcopy([x, x])  # deepcopy's memo: one object stays one object
    assert pair[0] is pair[1] and pair[0] is not x


# ---- 3. integers are whatever operator.index accepts ---------------------------------------

_INTS = [np.int64(2), np.int8(2), np.uint16(2), np.intp(2)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_operator_index_integers_index_like_ints(device, rng, dtype):
    x, a = random_array(rng, (5, 6, 4), dtype, device)
    idx0 = xp.asarray(3, device=device)  # a 0-d integer array is an integer index
    for i in _INTS + [idx0, xp.asarray(np.uint8(1), device=device)]:
        k = operator.index(i)
        _same(x[i, ...], a[k], f"x[{i!r}, ...]")
        _same(x[1, i, ...], a[1, k], f"x[1, {i!r}, ...]")
        _same(x[i, ..., -1], a[k, ..., -1], f"x[{i!r}, ..., -1]")
        _same(x[:, i:, :], a[:, k:], f"x[:, {i!r}:, :]")
        _same(x[::i, 1:5:i, ...], a[::k, 1:5:k], f"x[::{i!r}, 1:5:{i!r}, ...]")
        _same(x[np.int64(-k):, :i, 0], a[-k:, :k, 0], f"x[-{k}:, :{i!r}, 0]")
    _same(x[np.int64(-1), np.int32(-2), np.int16(-3)], a[-1, -2, -3], "negative NumPy ints")
    # the same integers in assignments
    y, b = random_array(rng, (5, 6, 4), dtype, device)
    v, c = random_array(rng, (4,), dtype, device)
    for i in _INTS + [idx0]:
        k = operator.index(i)
        y[i, np.int8(-1), ...] = v
        b[k, -1] = c
        y[np.uint8(1):i, i, ...] = v[0]
        b[1:k, k] = c[0]
    _same(y, b, "assignments through NumPy integers and 0-d arrays")


def test_operator_index_integers_keep_bools_and_floats_out(device, revision):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    for v in (True, np.True_, 1.0, np.float64(1.0), "1"):
        with pytest.raises(IndexError):
            x[0, v]
        with pytest.raises(IndexError):
            x[v:, ...]
    with pytest.raises(IndexError):
        x[xp.asarray(1.0, device=device)]
    with pytest.raises(IndexError, match="step of 0"):
        x[::np.int64(0), :]
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.int64(3), ...]
    with pytest.raises(IndexError, match="out of bounds"):
        x[0, xp.asarray(-5, device=device)]
    # a 0-d boolean array stays a mask (the sole index), never the integer 1
    assert x[xp.asarray(True, device=device)].shape == (1, 3, 4)


def test_operator_index_integers_as_arguments(device, rng):
    i3, i1 = np.int64(3), np.int8(1)
    assert xp.zeros(i3, device=device).shape == (3,)
    assert xp.ones((np.int32(2), xp.asarray(3)), device=device).shape == (2, 3)
    assert xp.empty([np.uint8(2), 1], device=device).shape == (2, 1)
    assert xp.full((i3,), 1.5, device=device).shape == (3,)
    _same(xp.eye(i3, np.int16(4), k=i1, device=device), np.eye(3, 4, k=1))
    _same(xp.linspace(0.0, 1.0, num=np.int64(5), device=device), np.linspace(0.0, 1.0, 5))
    _same(xp.arange(np.int64(2), np.int32(9), np.int8(3), device=device), np.arange(2, 9, 3))
    _same(xp.arange(np.int64(4), device=device), np.arange(4))
    x, a = random_array(rng, (3, 4), xp.float64, device)
    _same(xp.tril(x, k=np.int64(-1)), np.tril(a, -1))
    _same(xp.triu(x, k=xp.asarray(1)), np.triu(a, 1))
    _close(xp.sum(x, axis=np.int64(0)), np.sum(a, axis=0))
    _close(xp.sum(x, axis=(np.int32(0), np.int64(1))), np.sum(a, axis=(0, 1)))
    _same(xp.argmax(x, axis=np.int64(-1)), np.argmax(a, axis=-1))
    _same(xp.concat([x, x], axis=np.int8(1)), np.concatenate([a, a], axis=1))
    _same(xp.reshape(x, (np.int64(2), -1)), a.reshape(2, -1))
    y, b = random_array(rng, (4, 2), xp.float64, device)
    _close(xp.tensordot(x, y, axes=np.int64(1)), np.tensordot(a, b, axes=1))
    _close(xp.vecdot(x, x, axis=np.int64(-1)), np.sum(a * a, axis=-1))
    s, c = random_array(rng, (3, 3), xp.float64, device)
    _close(xp.linalg.trace(s, offset=np.int64(1)), np.trace(c, offset=1))
    _same(xp.linalg.diagonal(s, offset=np.int8(-1)), np.diagonal(c, offset=-1))
    _close(xp.linalg.matrix_power(s, np.int64(2)), c @ c)
    for bad in (True, 2.0, np.float32(2)):
        with pytest.raises(TypeError):
            xp.tensordot(x, y, axes=bad)
        with pytest.raises(TypeError):
            xp.linalg.trace(s, offset=bad)
        with pytest.raises(TypeError):
            xp.zeros(bad, device=device)
        with pytest.raises(TypeError):
            xp.eye(3, k=bad, device=device)
        with pytest.raises(TypeError):
            xp.sum(x, axis=bad)
        with pytest.raises(TypeError):
            xp.linspace(0.0, 1.0, num=bad, device=device)


# ---- 4. copy= is True, False or None, nothing that merely compares equal ------------------------

@pytest.mark.parametrize("bad", [0, 1, np.True_, np.False_, "yes"], ids=repr)
def test_copy_flag_refuses_values_equal_to_a_bool(device, bad):
    x = xp.asarray([1.0, 2.0], device=device)
    msg = "copy must be True, False or None"
    with pytest.raises(TypeError, match=msg):
        xp.asarray(x, copy=bad)
    with pytest.raises(TypeError, match=msg):
        xp.asarray([1, 2], copy=bad, device=device)
    with pytest.raises(TypeError, match=msg):
        xp.from_dlpack(x, copy=bad)
    with pytest.raises(TypeError, match=msg):
        xp.from_dlpack(np.ones(2), copy=bad)
    with pytest.raises(TypeError, match=msg):
        x.__dlpack__(copy=bad)
    with pytest.raises(TypeError, match=msg):
        xp.reshape(x, (2, 1), copy=bad)
    with pytest.raises(TypeError, match="astype: copy must be True or False"):
        xp.astype(x, xp.float32, copy=bad)
    for ok in (True, False):  # astype's copy takes no None
        assert xp.astype(x, xp.float32, copy=ok).dtype == xp.float32
    # the three allowed values still work
    for ok in (None, True, False):
        assert xp.asarray(x, copy=ok).shape == (2,)
        assert xp.reshape(x, (1, 2), copy=ok).shape == (1, 2)


def test_copy_true_always_copies(device, rng):
    """2024.12's clarified copy=True (gh-906): a new buffer every time, even where a view or
    the input itself would serve. Writing into x afterwards leaves every copy as it was."""
    x, a = random_array(rng, (3, 4), xp.float64, device)
    copies = [xp.asarray(x, copy=True), xp.astype(x, xp.float64, copy=True),
              xp.reshape(x, (3, 4), copy=True), xp.from_dlpack(x, copy=True)]
    host = np.from_dlpack(x, copy=True, device="cpu")
    x[...] = -1.5
    for c in copies:
        _same(c, a)
    np.testing.assert_array_equal(host, a)


# ---- 5. integer array indexing (2024.12) ------------------------------------------------------

def _keys(rng, shape, idt):
    """(xp key maker, NumPy key) pairs over an array of `shape` (at least 3-D: (5, 6, 4)),
    index arrays of dtype idt with random in-range values, negatives where idt is signed."""
    def ints(shape_, n):
        lo = -n if idt.kind == "int" else 0
        return rng.integers(lo, n, size=shape_).astype(idt._np)
    n0, n1, n2 = shape
    i1 = ints((7,), n0)                       # one array, duplicates likely
    i2 = ints((2, 3), n1)                     # a 2-D index array
    j2 = ints((3, 1), n0)
    k2 = ints((4,), n1)                       # broadcasts with j2 to (3, 4)
    e = ints((0,), n0)                        # empty
    big = ints((3000,), n0)                   # crosses block boundaries
    r = ints((3, 1, 2), n2)
    return [
        ("x[i, :, :]", (i1, slice(None), slice(None))),
        ("x[i, j, :] 2-D and broadcast", (j2, k2, slice(None))),
        ("x[i, j, k] every axis", (j2, k2, ints((1, 4), n2))),
        ("x[int, J, :]", (2, i2, slice(None))),
        ("x[J, int, :]", (i2.clip(-n0 if idt.kind == "int" else 0, n0 - 1), -1, slice(None))),
        ("x[i, int, k]", (j2, n1 - 1, ints((4,), n2))),
        ("x[:, j, :]", (slice(None), i2, slice(None))),
        ("x[1:4, j, ::-1]", (slice(1, 4), i2, slice(None, None, -1))),
        ("x[..., k]", (Ellipsis, r)),
        ("x[i, ...]", (i1, Ellipsis)),
        ("x[:, j, k]", (slice(None), ints((5,), n1), ints((5,), n2))),
        ("empty index", (e, Ellipsis)),
        ("empty with another", (e, ints((1,), n1), Ellipsis)),
        ("many indices", (big, Ellipsis)),
    ]


def _as_xp(key, device):
    return tuple(xp.asarray(p, device=device) if isinstance(p, np.ndarray) else p for p in key)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_integer_array_indexing_matches_numpy(device, rng, dtype, revision):
    xp.set_api_version("2024.12")
    x, a = random_array(rng, (5, 6, 4), dtype, device)
    views = [("contiguous", x, a), ("strided", x[::-1, ::2, 1:], a[::-1, ::2, 1:])]
    for vname, xv, av in views:
        for idt in INTEGER:
            for what, key in _keys(rng, av.shape, idt):
                got = xv[_as_xp(key, device)]
                _same(got, av[key], f"{vname} {what}, {idt} indices")


def test_integer_array_indexing_small_cases(device, rng, revision):
    xp.set_api_version("2024.12")
    x, a = random_array(rng, (4, 3), xp.float32, device)
    # a sole array (no tuple) and the spec's example: ([0, 1], [2, 3]) on (4, 4)
    _same(x[xp.asarray([3, 0, 3, -1], device=device), ...], a[[3, 0, 3, -1]], "x[array, ...]")
    y, b = random_array(rng, (4, 4), xp.int16, device)
    got = y[xp.asarray([0, 1], device=device), xp.asarray([2, 3], device=device)]
    _same(got, np.array([b[0, 2], b[1, 3]]), "the spec's example")
    # a 0-d array beside an integer array counts as an integer
    _same(y[xp.asarray(1, device=device), xp.asarray([0, 3], device=device)], b[1, [0, 3]],
          "x[0-d array, array]")
    # 1-D data, the result of a gather is its own buffer
    v, c = random_array(rng, (9,), xp.int64, device)
    out = v[xp.asarray([[1, 2], [8, 0]], device=device)]
    _same(out, c[[[1, 2], [8, 0]]], "2-D index into 1-D data")
    out[0, 0] = 0
    _same(v, c, "the data after writing into a gather's result")
    # uint64 indices are exact (NumPy alone would read 2**64 - 1 as -1)
    u = xp.asarray(np.array([8, 0], dtype=np.uint64), device=device)
    _same(v[u], c[[8, 0]], "uint64 indices")


def test_integer_array_indexing_out_of_range_is_an_index_error(device, revision):
    xp.set_api_version("2024.12")
    x = xp.reshape(xp.arange(24, device=device), (2, 3, 4))
    def ix(v, dt=xp.int64):
        return xp.asarray(v, dtype=dt, device=device)
    cases = [((ix([0, 2]), Ellipsis), "index 2 .* axis 0 of size 2"),
             ((ix([0, -3]), Ellipsis), "index -3 .* axis 0 of size 2"),
             ((ix([0, 1]), ix([0, 3]), Ellipsis), "index 3 .* axis 1 of size 3"),
             ((slice(None), ix([1]), ix([[4]])), "index 4 .* axis 2 of size 4"),
             ((0, ix([-4]), ix([0])), "index -4 .* axis 1 of size 3"),
             ((ix([2**64 - 1], xp.uint64), Ellipsis), "out of bounds for axis 0"),
             ((ix([0]), ix([0]), ix([9], xp.uint8)), "index 9 .* axis 2 of size 4")]
    for key, msg in cases:
        with pytest.raises(IndexError, match=msg):
            x[key]
    empty = xp.zeros((0, 3), device=device)
    with pytest.raises(IndexError, match="axis 0 of size 0"):
        empty[ix([0]), ...]
    assert empty[ix([], xp.int64), ...].shape == (0, 3)


def test_integer_array_indexing_refuses_what_it_does_not_define(device, revision):
    xp.set_api_version("2024.12")
    x = xp.reshape(xp.arange(24, device=device), (2, 3, 4))
    i = xp.asarray([0, 1], device=device)
    with pytest.raises(IndexError, match="newaxis"):
        x[None, i, ...]
    with pytest.raises(IndexError, match="next to each other"):
        x[i, :, 0]
    with pytest.raises(IndexError, match="next to each other"):
        x[i, ..., i]
    with pytest.raises(IndexError, match="broadcast"):
        x[i, xp.asarray([0, 1, 2], device=device), 0]
    with pytest.raises(IndexError, match="sole index"):
        x[i, xp.asarray([True, False, True], device=device)]
    with pytest.raises(IndexError, match="integer or boolean dtype"):
        x[xp.asarray([0.0, 1.0], device=device)]
    with pytest.raises(IndexError, match="too many indices"):
        x[i, i, i, i]
    with pytest.raises(IndexError, match="assignment"):
        x[i] = 0
    with pytest.raises(IndexError, match="assignment"):
        x[0, i] = 0


def test_integer_array_indexing_is_2024_12(device, revision):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    i = xp.asarray([2, 0], device=device)
    for key in (i, (i,), (1, i), (slice(None), i), (i, i)):
        with pytest.raises(IndexError, match=r"2024\.12 revision.*2023\.12 is in force"):
            x[key]
        with pytest.raises(IndexError, match=r"2024\.12"):
            x[key] = 0
    # 0-d integer arrays are integers in every revision
    assert int(x[xp.asarray(1, device=device), xp.asarray(2, device=device)]) == 6
    for rev in ("2024.12", "2025.12"):
        xp.set_api_version(rev)
        _same(x[1, i], np.arange(12).reshape(3, 4)[1, [2, 0]], rev)


@pytest.mark.parametrize("dtype", [xp.int8, xp.uint8, xp.int64, xp.uint64], ids=str)
def test_shared_take_arrays_path_matches_numpy(rng, dtype):
    """Backend.take_arrays, the path the cuda backend takes (per-array checks, linear offsets,
    one checked gather), run on NumPy against NumPy's own vectorized indexing."""
    b = backend(CPU)
    a = rng.standard_normal((4, 5, 6, 3))
    signed = dtype.kind == "int"
    for axis in (0, 1):
        dims = a.shape[axis:axis + 3]
        for shapes in (((2, 1), (3,), (1, 1)), ((4,), (4,), (4,)), ((0,), (1,), (1,))):
            idx = [rng.integers(-n if signed else 0, n, size=s).astype(dtype._np)
                   for n, s in zip(dims, shapes)]
            bshape = np.broadcast_shapes(*shapes)
            out, bad = Backend.take_arrays(b, a, axis, idx, bshape)
            assert bad is None
            want = a[(slice(None),) * axis + tuple(i.astype(np.int64) for i in idx)]
            np.testing.assert_array_equal(out, want, err_msg=f"axis {axis}, {shapes}")
    # an index out of range names its array and value
    idx = [np.array([0, 1], dtype=dtype._np), np.array([5], dtype=dtype._np)]
    out, bad = Backend.take_arrays(b, a, 0, idx, (2,))
    assert out is None and bad == (1, 5)
    if signed:
        idx = [np.array([-5], dtype=dtype._np), np.array([1], dtype=dtype._np)]
        assert Backend.take_arrays(b, a, 0, idx, (1,)) == (None, (0, -5))


class _CudaOffsetsOnNumpy(CpuBackend):
    """The cpu backend with the cuda backend's linear_index (elementwise kernels called by
    name with int64 scalars): its logic checked here on NumPy's elementwise functions."""
    linear_index = CudaBackend.linear_index
    _int64_scalar_op = CudaBackend._int64_scalar_op


@pytest.mark.parametrize("dtype", [xp.int16, xp.uint32, xp.int64], ids=str)
def test_cuda_linear_index_logic_matches_the_reference(rng, dtype):
    b, ref = _CudaOffsetsOnNumpy(), backend(CPU)
    signed = dtype.kind == "int"
    a = rng.standard_normal((3, 4, 5))
    for axis, shapes in ((0, ((2, 1), (5,))), (0, ((6,), (1,), (2, 6))), (1, ((7,), (7,)))):
        dims = a.shape[axis:axis + len(shapes)]
        idx = [rng.integers(-n if signed else 0, n, size=s).astype(dtype._np)
               for n, s in zip(dims, shapes)]
        wrap = [bool(signed and (i < 0).any()) for i in idx]
        shape = np.broadcast_shapes(*shapes)
        got = b.linear_index(idx, dims, shape, wrap)
        want = Backend.linear_index(ref, idx, dims, shape, wrap)
        assert got.dtype == np.int64 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want, err_msg=f"{dims} {shapes}")
        out, bad = Backend.take_arrays(b, a, axis, idx, shape)
        assert bad is None
        np.testing.assert_array_equal(
            out, a[(slice(None),) * axis + tuple(i.astype(np.int64) for i in idx)])
