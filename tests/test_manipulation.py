"""Manipulation functions and take: results against NumPy for every dtype, and the errors."""
import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._devices import CPU, Device, cuda_device_count
from helpers import ALL_DTYPES, random_array, to_numpy


def same(out, expected, dtype):
    assert out.dtype is dtype
    got = to_numpy(out)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_shape_functions_match_numpy(device, rng, dtype):
    x, a = random_array(rng, (2, 3, 4), dtype, device)
    same(xp.broadcast_to(x[:, :1, :], (5, 2, 3, 4)), np.broadcast_to(a[:, :1, :], (5, 2, 3, 4)),
         dtype)
    same(xp.expand_dims(x, axis=-1), a[..., None], dtype)
    same(xp.expand_dims(x, axis=-4), a[None], dtype)
    same(xp.flip(x), np.flip(a), dtype)
    same(xp.flip(x, axis=(0, -1)), np.flip(a, axis=(0, -1)), dtype)
    same(xp.moveaxis(x, (0, 1), (-1, 0)), np.moveaxis(a, (0, 1), (-1, 0)), dtype)
    same(xp.permute_dims(x, (2, 0, 1)), np.transpose(a, (2, 0, 1)), dtype)
    same(xp.reshape(x, (4, -1)), a.reshape(4, -1), dtype)
    same(xp.roll(x, 5), np.roll(a, 5), dtype)
    same(xp.roll(x, (1, -2), axis=(0, 2)), np.roll(a, (1, -2), axis=(0, 2)), dtype)
    same(xp.roll(x, 1, axis=(1, 1)), np.roll(a, 2, axis=1), dtype)  # repeated axes add up
    same(xp.squeeze(x[:, :1, :1], axis=(1, 2)), a[:, 0, 0], dtype)
    same(xp.tile(x, (2, 1, 1, 3)), np.tile(a, (2, 1, 1, 3)), dtype)
    parts = xp.unstack(x, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for i, p in enumerate(parts):
        same(p, a[:, i, :], dtype)
    out = xp.broadcast_arrays(x, x[0, 0, :])
    assert isinstance(out, list)
    same(out[1], np.broadcast_to(a[0, 0, :], a.shape), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_repeat_and_take(device, rng, dtype):
    x, a = random_array(rng, (3, 4), dtype, device)
    same(xp.repeat(x, 2), np.repeat(a, 2), dtype)
    same(xp.repeat(x, 3, axis=-1), np.repeat(a, 3, axis=-1), dtype)
    r = np.array([2, 0, 3])
    same(xp.repeat(x, xp.asarray(r, device=device), axis=0), np.repeat(a, r, axis=0), dtype)
    same(xp.repeat(x, xp.asarray([2], dtype=xp.uint8, device=device)), np.repeat(a, 2), dtype)
    r12 = rng.integers(0, 3, 12)
    same(xp.repeat(x, xp.asarray(r12, device=device)), np.repeat(a, r12), dtype)
    idx = np.array([3, -1, 0, 0])
    same(xp.take(x, xp.asarray(idx, device=device), axis=1), np.take(a, idx, axis=1), dtype)
    same(xp.take(x[0, ...], xp.asarray(idx, dtype=xp.int8, device=device)), np.take(a[0], idx),
         dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_moves_of_views_match_numpy(device, rng, dtype):
    """The functions that move data, on strided, flipped, transposed and broadcast views and
    sizes that cross a kernel's blocks (on cuda: copy.cu's rows, strided, flat, transpose,
    concat and gather paths)."""
    big, B = random_array(rng, (70, 258), dtype, device)
    views = {"strided": (big[1::2, 3::2], B[1::2, 3::2]),
             "flipped": (big[::-1, ::-3], B[::-1, ::-3]),
             "transposed": (big[:64, :40].mT, B[:64, :40].T),
             "broadcast": (xp.broadcast_to(big[5:6, :37], (33, 37)),
                           np.broadcast_to(B[5:6, :37], (33, 37)))}
    for name, (v, a) in views.items():
        same(xp.reshape(v, (-1,)), a.reshape(-1), dtype)
        # flip's view (on cuda made from the strides), read by a copy and by elementwise work
        for ax in (None, 0, 1, (0, 1), -1):
            f, fa = xp.flip(v, axis=ax), np.flip(a, axis=ax)
            same(f, fa, dtype)
            same(xp.reshape(f, (-1,)), fa.reshape(-1), dtype)
            same(xp.flip(f, axis=ax), a, dtype)
        same(xp.flip(v[3:4, 2:7], axis=1), np.flip(a[3:4, 2:7], axis=1), dtype)
        same(xp.flip(v[:, :0]), np.flip(a[:, :0]), dtype)
        same(xp.flip(v[:, 5]), np.flip(a[:, 5]), dtype)
        same(xp.reshape(v, a.shape, copy=True), a, dtype)
        same(xp.roll(v, (3, -7), axis=(0, 1)), np.roll(a, (3, -7), axis=(0, 1)), dtype)
        same(xp.roll(v, -11), np.roll(a, -11), dtype)
        same(xp.tile(v, (2, 3)), np.tile(a, (2, 3)), dtype)
        same(xp.tile(v, (2, 1, 2)), np.tile(a, (2, 1, 2)), dtype)
        same(xp.tile(v, (3,)), np.tile(a, (3,)), dtype)
        same(xp.repeat(v, 3, axis=0), np.repeat(a, 3, axis=0), dtype)
        same(xp.repeat(v, 2, axis=1), np.repeat(a, 2, axis=1), dtype)
        r = rng.integers(0, 4, a.shape[1])
        same(xp.repeat(v, xp.asarray(r, device=device), axis=1), np.repeat(a, r, axis=1), dtype)
        for ax in (0, 1):
            n = a.shape[ax]
            idx = rng.integers(-n, n, 2 * n + 5)
            same(xp.take(v, xp.asarray(idx, device=device), axis=ax), np.take(a, idx, axis=ax),
                 dtype)
        c, C = big[: a.shape[0], : a.shape[1]], B[: a.shape[0], : a.shape[1]]
        for ax in (0, 1, -1):
            same(xp.concat([v, c, v], axis=ax), np.concatenate([a, C, a], axis=ax), dtype)
            same(xp.stack([v, c], axis=ax), np.stack([a, C], axis=ax), dtype)
        same(xp.concat([v, c], axis=None), np.concatenate([a.ravel(), C.ravel()]), dtype)
    # more parts than one concat launch reads, of mixed widths, empty ones among them
    parts = [(big[:, i:i + (i % 5)], B[:, i:i + (i % 5)]) for i in range(45)]
    same(xp.concat([p for p, _ in parts], axis=1),
         np.concatenate([q for _, q in parts], axis=1), dtype)
    same(xp.concat([p for p, _ in parts], axis=None),
         np.concatenate([q.ravel() for _, q in parts]), dtype)
    same(xp.stack([big[i, ...] for i in range(40)], axis=1), np.stack(list(B[:40]), axis=1),
         dtype)


@pytest.mark.parametrize("d1,d2", [(xp.int8, xp.int16), (xp.uint8, xp.int8),
                                   (xp.float32, xp.complex64), (xp.bool, xp.bool),
                                   (xp.uint32, xp.uint64), (xp.float32, xp.float64)], ids=str)
def test_concat_stack_promote(device, rng, d1, d2):
    x1, a1 = random_array(rng, (2, 3), d1, device)
    x2, a2 = random_array(rng, (2, 3), d2, device)
    dt = xp.result_type(d1, d2)
    same(xp.concat([x1, x2], axis=-1), np.concatenate([a1, a2], axis=-1).astype(dt._np), dt)
    same(xp.concat((x1, x2), axis=None), np.concatenate([a1.ravel(), a2.ravel()]).astype(dt._np),
         dt)
    same(xp.stack([x1, x2], axis=-1), np.stack([a1, a2], axis=-1).astype(dt._np), dt)
    same(xp.concat([x1]), a1, d1)


def test_zero_d_and_empty(device):
    s = xp.asarray(3.0, device=device)
    assert xp.expand_dims(s, axis=0).shape == (1,)
    assert xp.flip(s).shape == ()
    assert xp.reshape(s, (1, 1)).shape == (1, 1)
    assert xp.repeat(s, 4).shape == (4,)
    assert xp.roll(s, 3).shape == ()
    assert xp.tile(s, (2, 3)).shape == (2, 3)
    assert xp.concat([s, s], axis=None).shape == (2,)
    assert xp.stack([s, s]).shape == (2,)
    e = xp.zeros((0, 3), device=device)
    assert xp.reshape(e, (3, 0), copy=False).shape == (3, 0)
    assert xp.reshape(e, (-1,)).shape == (0,)
    assert xp.take(e, xp.asarray([1, 2], device=device), axis=1).shape == (0, 2)
    assert xp.unstack(e) == ()
    assert xp.broadcast_arrays() == []


def test_reshape_copy(device):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    v = xp.reshape(x, (2, 6), copy=False)
    c = xp.reshape(x, (2, 6), copy=True)
    x[0, 0] = 100
    assert int(v[0, 0]) == 100  # a view
    assert int(c[0, 0]) == 0  # a copy
    with pytest.raises(ValueError, match="copy=False"):
        xp.reshape(x.mT, (12,), copy=False)
    assert to_numpy(xp.reshape(x.mT, (12,))).tolist() == to_numpy(x).T.ravel().tolist()
    # strided views that can be viewed in the new shape stay views (twice: the second call of
    # a layout takes the remembered decision), those that cannot are copied
    big = xp.reshape(xp.arange(96, device=device), (4, 6, 4))
    ref = np.arange(96).reshape(4, 6, 4)
    for _ in range(2):
        v = xp.reshape(big[:, :, ::2], (24, 2), copy=False)
        assert to_numpy(v).tolist() == ref[:, :, ::2].reshape(24, 2).tolist()
        w = xp.reshape(big[::-1, 1, :], (2, 2, 4), copy=False)
        assert to_numpy(w).tolist() == ref[::-1, 1].reshape(2, 2, 4).tolist()
        c = xp.reshape(big[:, ::2, ::2], (24,))
        assert to_numpy(c).tolist() == ref[:, ::2, ::2].reshape(24).tolist()
        with pytest.raises(ValueError, match="copy=False"):
            xp.reshape(big[:, ::2, ::2], (24,), copy=False)
    big[0, 0, 0] = -1
    assert int(v[0, 0]) == -1  # v is a view of big


def test_errors(device):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    with pytest.raises(TypeError, match="not an xp_cuda array"):
        xp.flip(np.ones(3))
    with pytest.raises(TypeError, match="tuple"):
        xp.reshape(x, [12])
    with pytest.raises(ValueError, match="cannot infer"):
        xp.reshape(x, (5, -1))
    with pytest.raises(ValueError, match="at most one -1"):
        xp.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="cannot be reshaped"):
        xp.reshape(x, (5,))
    with pytest.raises(TypeError, match="copy"):
        xp.reshape(x, (12,), copy=1)
    with pytest.raises(IndexError, match="valid: -3 to 2"):
        xp.expand_dims(x, axis=3)
    with pytest.raises(ValueError, match="size 3"):
        xp.squeeze(x, axis=0)
    with pytest.raises(ValueError, match="repeats an axis"):
        xp.flip(x, axis=(0, 0))
    with pytest.raises(ValueError, match="permutation"):
        xp.permute_dims(x, (0,))
    with pytest.raises(ValueError, match="repeats an axis"):
        xp.permute_dims(x, (0, 0))
    with pytest.raises(ValueError, match="same number"):
        xp.moveaxis(x, (0, 1), 0)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        xp.broadcast_to(x, (4, 4))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        xp.broadcast_to(x, (4,))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        xp.broadcast_arrays(x, xp.ones(3, device=device))
    with pytest.raises(TypeError, match="cannot be promoted"):
        xp.concat([x, xp.ones((3, 4), device=device)])
    with pytest.raises(ValueError, match="outside axis"):
        xp.concat([x, x[:, :2]], axis=0)
    with pytest.raises(ValueError, match="0-d"):
        xp.concat([x[0, 0], x[0, 0]])
    with pytest.raises(ValueError, match="at least one"):
        xp.concat([])
    with pytest.raises(TypeError, match="tuple or list"):
        xp.stack(x)
    with pytest.raises(ValueError, match="same shape"):
        xp.stack([x, x[:2, ...]])
    with pytest.raises(ValueError, match="non-negative"):
        xp.repeat(x, -1)
    with pytest.raises(ValueError, match="non-negative"):
        xp.repeat(x, xp.asarray([1, -1, 1], device=device), axis=0)
    with pytest.raises(ValueError, match=r"shape \(1,\) or \(3,\)"):
        xp.repeat(x, xp.asarray([1, 2], device=device), axis=0)
    with pytest.raises(TypeError, match="integer"):
        xp.repeat(x, xp.asarray([1.0], device=device))
    with pytest.raises(TypeError, match="Python int"):
        xp.repeat(x, 2.0)
    with pytest.raises(ValueError, match="same length"):
        xp.roll(x, (1, 2), axis=(0,))
    with pytest.raises(ValueError, match="tuple axis"):
        xp.roll(x, (1, 2))
    with pytest.raises(ValueError, match="non-negative"):
        xp.tile(x, (-1,))
    with pytest.raises(IndexError, match="0-d"):
        xp.unstack(x[0, 0])
    # take
    with pytest.raises(IndexError, match="out of bounds"):
        xp.take(x, xp.asarray([4], device=device), axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        xp.take(x, xp.asarray([-4], device=device), axis=0)
    with pytest.raises(ValueError, match="axis is required"):
        xp.take(x, xp.asarray([0], device=device))
    with pytest.raises(ValueError, match="1-D"):
        xp.take(x, xp.asarray([[0]], device=device), axis=0)
    with pytest.raises(TypeError, match="integer"):
        xp.take(x, xp.asarray([0.0], device=device), axis=0)


@pytest.mark.parametrize("itype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_take_refuses_every_out_of_range_index(device, rng, itype):
    """Every gather path (whole rows, strided rows, single elements) checks its indices: one
    bad index among many good ones, at either end, is refused and named; the next call on
    the same thread works (the report does not stick)."""
    it = getattr(xp, itype)
    big, B = random_array(rng, (40, 37), xp.float32, device)
    cases = {"rows": (big, B, 0), "strided": (big[:, ::2], B[:, ::2], 0),
             "elements": (big[3, :], B[3], 0), "inner axis": (big[::3, :], B[::3], 1)}
    hi = np.iinfo(itype).max
    for name, (v, a, ax) in cases.items():
        n = a.shape[ax]
        lo_ok = 0 if itype.startswith("u") else -n
        good = rng.integers(lo_ok, min(n, hi + 1), 300)
        signed = [] if itype.startswith("u") else [-n - 1, int(np.iinfo(itype).min)]
        for bad in [n, n + 7, int(hi)] + signed:  # every axis here is shorter than 127
            idx = good.astype(itype)
            idx[rng.integers(0, idx.size)] = bad
            with pytest.raises(IndexError, match=rf"index {bad} is out of bounds for axis "
                                                 rf"{ax} of size {n}"):
                xp.take(v, xp.asarray(idx, device=device), axis=ax)
            # the same thread's next take, with valid indices of the same geometry, works
            got = xp.take(v, xp.asarray(good.astype(itype), device=device), axis=ax)
            np.testing.assert_array_equal(to_numpy(got), np.take(a, good, axis=ax),
                                          err_msg=f"{name} after a refused call")
    empty_axis = xp.zeros((0, 3), device=device)
    with pytest.raises(IndexError, match="out of bounds for axis 0 of size 0"):
        xp.take(empty_axis, xp.asarray([0], dtype=it, device=device), axis=0)
    assert xp.take(empty_axis, xp.asarray([], dtype=it, device=device), axis=0).shape == (0, 3)
    # searchsorted's sorter goes through the same checked gather
    s = xp.asarray([1.0, 2.0, 3.0], device=device)
    with pytest.raises(IndexError, match="sorter holds the index 3"):
        xp.searchsorted(s, s, sorter=xp.asarray([0, 3, 1], device=device))


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_mixed_devices():
    a = xp.ones(3, device=Device("cuda", 0))
    b = xp.ones(3, device=CPU)
    with pytest.raises(ValueError, match="different devices"):
        xp.concat([a, b])
    with pytest.raises(ValueError, match="different devices"):
        xp.take(a, xp.astype(b, xp.int64))
