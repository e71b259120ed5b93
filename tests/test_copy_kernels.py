"""Copy kernels (copy.cu / copy.py): the planners on any machine, NVRTC compilation of every
kernel name, and on a GPU every plan path against NumPy, bit for bit, for every element size."""
import math
import re

import numpy as np
import pytest

from xp_cuda._devices import Device, cuda_device_count
from xp_cuda._kernels import copy as K
from xp_cuda._kernels import _runtime as R

F4 = np.float32


def _plan(dst, src, dst_align=0, src_align=0):
    """plan_copy of two NumPy arrays (their strides are the ones CuPy gives the same views)."""
    return K.plan_copy(dst.shape, dst.strides, src.strides, dst.itemsize, dst_align, src_align)


def _gplan(x, axis, m, x_align=0, out_align=0):
    return K.plan_gather(x.shape, x.strides, axis, m, x.itemsize, x_align, out_align)


# ---- copy planner ---------------------------------------------------------------------------

def test_plan_contiguous_is_one_memcpy():
    x = np.empty((3, 5, 7), F4)
    p = _plan(x, x)
    assert (p.path, p.shape, p.nbytes, p.itemsize) == ("memcpy", (105,), 420, 4)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
def test_plan_single_element_is_memcpy(shape):
    x = np.empty(shape, np.complex128)
    p = _plan(x, x)
    assert p.path == "memcpy" and p.nbytes == 16


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2)])
def test_plan_empty(shape):
    x = np.empty(shape, F4)
    assert _plan(x, x).path == "empty"


def test_plan_slice_of_bigger_out_is_rows_with_shift():
    out = np.empty((10, 1002), F4)
    dst = out[:, 1:1001]
    p = _plan(dst, np.empty((10, 1000), F4), dst_align=4)  # one float past an aligned base
    assert (p.path, p.shape, p.dst_strides, p.src_strides) == ("rows", (10, 1000), (4008, 4),
                                                                (4000, 4))
    assert p.shift == 1
    q = _plan(np.empty((10, 1000), F4), np.empty((10, 1000), F4)[:, :])
    assert q.path == "memcpy"


def test_plan_aligned_rows_need_no_shift():
    out = np.empty((8, 64), F4)
    p = _plan(out[:, :32], np.empty((8, 32), F4))
    assert (p.path, p.shift) == ("rows", 0)


def test_plan_transpose_2d():
    x = np.empty((4097, 1025), F4)
    out = np.empty((1025, 4097), F4)
    p = _plan(out, x.T)
    assert p.path == "transpose"
    assert p.shape == (1025, 4097) and p.dst_strides == (4097 * 4, 4)
    assert p.src_strides == (4, 1025 * 4) and p.tile_dim == 0


@pytest.mark.parametrize("perm", [(0, 2, 1), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
def test_plan_batched_permutation(perm):
    x = np.empty((20, 40, 50), F4)
    src = x.transpose(perm)
    out = np.empty(src.shape, F4)
    p = _plan(out, src)
    assert p.path == "transpose"
    # the tiled dims: the destination's contiguous one (last) and the source's contiguous one
    assert p.dst_strides[-1] == 4 and abs(p.src_strides[p.tile_dim]) == 4
    assert math.prod(p.shape) == x.size


def test_transpose_of_small_elements_moves_words():
    x = np.empty((4096, 1024), np.int8)
    p = _plan(np.empty((1024, 4096), np.int8), x.T)
    assert p.path == "transpose" and K.transpose_packed(p, 0, 0)
    assert K.tile_of(1, True) == 128 and K.tile_of(2, True) == 64 and K.tile_of(4) == 64
    assert not K.transpose_packed(p, 0, 2)          # source base off a 4-byte boundary
    y = np.empty((33, 17), np.int16)                # 17 is no whole number of words
    q = _plan(np.empty((17, 33), np.int16), y.T)
    assert q.path == "transpose" and not K.transpose_packed(q, 0, 0)
    z = np.empty((64, 64), F4)
    assert not K.transpose_packed(_plan(z, z.T), 0, 0)  # 4-byte elements are words already


def test_plan_moveaxis_keeps_contiguous_rows():
    # moving an outer axis leaves the inner one in place: rows, not a transpose
    x = np.empty((5, 6, 70), F4)
    src = np.moveaxis(x, 0, 1)
    p = _plan(np.empty(src.shape, F4), src)
    assert p.path == "rows" and p.shape == (6, 5, 70)


def test_plan_short_transposed_dim_is_strided():
    x = np.empty((1000, 3), F4)   # (3, 1000) <- x.T: a tile would be 3/32 busy
    p = _plan(np.empty((3, 1000), F4), x.T)
    assert p.path == "strided"


def test_plan_flip_outer_dim_is_rows():
    x = np.empty((50, 70), F4)
    p = _plan(np.empty_like(x), x[::-1])
    assert (p.path, p.src_strides) == ("rows", (-280, 4))


def test_plan_flip_inner_dim_is_strided():
    x = np.empty((50, 70), F4)
    p = _plan(np.empty_like(x), x[:, ::-1])
    assert (p.path, p.src_strides) == ("strided", (280, -4))


def test_plan_flip_1d_is_strided():
    x = np.empty(1001, np.int16)
    p = _plan(np.empty_like(x), x[::-1])
    assert (p.path, p.shape, p.src_strides) == ("strided", (1001,), (-2,))


def test_plan_negative_destination_turned_around():
    x = np.empty((20, 30), F4)
    out = np.empty((20, 30), F4)
    # writing out[::-1] = x[::-1] is a plain contiguous copy once both dims turn around
    p = _plan(out[::-1], x[::-1])
    assert p.path == "memcpy"
    assert p.dst_offset == -19 * 120 and p.src_offset == -19 * 120


def test_plan_broadcast_stride_zero():
    src = np.broadcast_to(np.empty((1, 30), F4), (40, 30))
    p = _plan(np.empty((40, 30), F4), src)
    assert (p.path, p.shape, p.src_strides) == ("rows", (40, 30), (0, 4))
    s2 = np.broadcast_to(np.empty((40, 1), F4), (40, 30))
    q = _plan(np.empty((40, 30), F4), s2)
    assert (q.path, q.src_strides) == ("flat", (4, 0))  # short rows, contiguous destination
    out = np.empty((40, 60), F4)
    r = _plan(out[:, ::2], s2)   # the same into a strided destination
    assert (r.path, r.src_strides, r.dst_strides) == ("strided", (4, 0), (240, 8))


def test_plan_scalar_broadcast():
    src = np.broadcast_to(np.float64(1.5), (3, 5, 7))
    p = _plan(np.empty((3, 5, 7)), src)
    assert (p.path, p.shape, p.src_strides) == ("strided", (105,), (0,))


def test_plan_misaligned_elements_move_as_words():
    x = np.empty((10, 20), np.complex128)
    p = _plan(x, x, dst_align=8, src_align=8)  # complex128 at an 8-byte offset
    assert p.itemsize == 8 and p.path == "memcpy" and p.nbytes == x.nbytes


def test_plan_short_inner_rows_widen():
    x = np.empty((100, 2), F4)
    src = np.empty((200, 2), F4)[::2]  # rows of two floats, every other row
    p = _plan(x, src)
    assert (p.itemsize, p.shape, p.dst_strides, p.src_strides) == (8, (100,), (8,), (16,))
    assert p.path == "strided"
    # misaligned rows cannot widen
    q = _plan(x, src, src_align=4)
    assert q.itemsize == 4 and q.path == "rows"


# ---- the namespace's functions mapped onto the copy planner ---------------------------------

def test_mapping_permute_dims():
    x = np.empty((64, 48, 32), F4)
    src = np.transpose(x, (2, 0, 1))
    assert _plan(np.empty(src.shape, F4), src).path == "transpose"


def test_mapping_flip_all_axes():
    x = np.empty((64, 48), F4)
    p = _plan(np.empty_like(x), np.flip(x))
    assert p.path == "strided" and p.src_strides == (-4,) and p.shape == (64 * 48,)


def test_mapping_roll_two_slices():
    x = np.empty((10, 1000), F4)
    out = np.empty_like(x)
    k = 3  # roll by 3 along axis 1: out[:, 3:] = x[:, :997]; out[:, :3] = x[:, 997:]
    a = _plan(out[:, k:], x[:, :-k], dst_align=12)
    b = _plan(out[:, :k], x[:, -k:], src_align=(997 * 4) % 16)
    assert a.path == "rows" and a.shift == 1 and a.shape == (10, 997)
    assert b.path in ("rows", "strided") and math.prod(b.shape) * b.itemsize == 10 * 3 * 4
    # along axis 0 both halves are contiguous blocks
    c = _plan(out[k:], x[:-k])
    assert c.path == "memcpy"


def test_plan_roll_paths():
    """One launch wherever the rows stay whole (the inner dim not rolled) or the array is
    small; 2**k slices only for a large array whose inner dim is rolled."""
    x = np.empty((10, 1000), F4)
    out = np.empty_like(x)

    def plan(v, shifts, o=out, **kw):
        return K.plan_roll(v.shape, o.strides, v.strides, v.itemsize, tuple(shifts), **kw)
    p = plan(x, (3, 0))
    assert (p.path, p.shape, p.roll, p.src_strides) == ("rows", (10, 1000), (3,), (4000, 4))
    p = plan(x, (3, 7))
    assert (p.path, p.shape, p.roll) == ("elements", (10, 1000, 1), (3, 7))
    assert p.dst_strides == (4000, 4, 4) and p.src_strides == (4000, 4, 4)
    big = np.empty((1000, 1000), F4)
    assert plan(big, (3, 7), o=big).path == "pieces"
    assert plan(big, (3, 0), o=big).path == "rows"
    # unrolled neighbours contiguous in both merge; a rolled dim stays on its own
    z = np.empty((4, 5, 6, 7), F4)
    p = plan(z, (1, 0, 2, 0), o=z)
    assert (p.path, p.shape, p.roll) == ("rows", (4, 5, 6, 7), (1, 0, 2))
    p = plan(z, (0, 0, 2, 3), o=z)
    assert (p.path, p.shape, p.roll) == ("elements", (20, 6, 7, 1), (0, 2, 3))
    p = plan(z, (1, 0, 0, 0), o=z)
    assert (p.path, p.shape, p.roll) == ("rows", (4, 210), (1,))
    # a flipped source: rows only when its inner dim reads forwards
    f = x[::-1]
    p = plan(f, (3, 0))
    assert p.path == "rows" and p.src_strides == (-4000, 4)
    assert plan(x[:, ::-1], (3, 0)).path == "elements"
    # size-1 dims drop; an empty array is nothing to do
    assert plan(np.empty((1, 8, 1), F4), (0, 5, 0), o=np.empty((1, 8, 1), F4)).shape == (8, 1)
    assert plan(np.empty((0, 8), F4), (0, 5), o=np.empty((0, 8), F4)).path == "empty"
    # a rows destination that is not 16-byte aligned per row moves chunks per row
    o3 = np.empty((10, 3), F4)
    assert plan(np.empty((10, 3), F4), (4, 0), o=o3).shift == 1


def test_mapping_tile():
    x = np.empty((30, 40), F4)
    reps = (2, 3)
    src = np.broadcast_to(x.reshape(1, 30, 1, 40), (2, 30, 3, 40))
    out = np.empty((2, 30, 3, 40), F4)
    p = _plan(out, src)
    # the repeat dims (source stride 0) walked innermost: each row of x read six times in turn
    assert p.path == "rows" and p.shape == (30, 2, 3, 40)
    assert p.src_strides == (160, 0, 0, 4) and p.dst_strides == (480, 14400, 160, 4)
    assert out.reshape(60, 120).shape == tuple(r * d for r, d in zip(reps, x.shape))


@pytest.mark.parametrize("n,itemsize,row", [
    (8192 * 8192, 4, 16384),   # tile(x, (2, 1)) of (8192, 8192) float32: rows of 64 KiB
    (40000, 4, 10000),         # the longest whole-chunk divisor of at most 64 KiB
    (40000, 16, 4000),
    (40000, 1, 40000),         # 40000 bytes: short enough already
    (65537, 4, 65537),         # prime: no divisor, the row stays whole
    (5 * 4099, 4, 5 * 4099),   # 80 KiB, its divisor in range (4099) not whole chunks: uncut
])
def test_plan_tile_cuts_long_rows_and_walks_repeats_inside(n, itemsize, row):
    """tile / a broadcast copy: a contiguous source row longer than FAN_ROW_BYTES is cut into
    equal rows of whole 16-byte chunks, and the repeat dim walks inside them, so the copies of
    one source row follow each other (read from L2, not twice from memory)."""
    dt = np.dtype(f"V{itemsize}")
    x = np.empty(n, dt)
    src = np.broadcast_to(x, (2, n))
    p = _plan(np.empty((2, n), dt), src)
    assert p.path == "rows" and p.itemsize == itemsize
    if row == n:
        assert p.shape == (2, n) and p.src_strides == (0, itemsize)
    else:
        assert p.shape == (n // row, 2, row)
        assert p.src_strides == (row * itemsize, 0, itemsize)
        assert p.dst_strides == (row * itemsize, n * itemsize, itemsize)
        assert row * itemsize <= K.FAN_ROW_BYTES and row * itemsize % 16 == 0


def test_plan_without_repeats_keeps_its_rows():
    x = np.empty((3, 50000), F4)
    out = np.empty((3, 60000), F4)
    p = _plan(out[:, :50000], x)  # long rows into a wider output, no stride-0 dim
    assert (p.path, p.shape, p.src_strides) == ("rows", (3, 50000), (200000, 4))


def test_mapping_tile_1d_wide_rows_merge():
    x = np.empty(1000, F4)
    src = np.broadcast_to(x.reshape(1, 1000), (5, 1000))
    p = _plan(np.empty((5, 1000), F4), src)
    assert (p.path, p.shape, p.src_strides) == ("rows", (5, 1000), (0, 4))


def test_mapping_repeat_int():
    x = np.empty((30, 40), F4)
    src = np.broadcast_to(x.reshape(30, 1, 40), (30, 4, 40))  # repeat(x, 4, axis=0)
    p = _plan(np.empty((30, 4, 40), F4), src)
    assert p.path == "rows" and p.src_strides == (160, 0, 4)
    y = np.empty(1000, np.int8)
    s2 = np.broadcast_to(y.reshape(1000, 1), (1000, 3))  # repeat(y, 3)
    q = _plan(np.empty((1000, 3), np.int8), s2)
    assert q.path == "flat" and q.src_strides == (1, 0) and q.shape == (1000, 3)


def test_mapping_reshape_copy():
    x = np.empty((20, 30), F4)[:, ::2]    # reshape of a non-contiguous view copies
    out = np.empty((300,), F4)
    p = _plan(out.reshape(x.shape), x)
    assert p.path == "strided" and p.src_strides == (8,) and p.shape == (300,)


def test_mapping_stack_parts_are_concat():
    parts = [((1, 4, 5), True), ((1, 4, 5), True)]
    steps = K.plan_concat((2, 4, 5), 0, parts)
    assert steps == (K.ConcatStep("kernel", (0, 1), 0, 40),)


# ---- concat planner -------------------------------------------------------------------------

def test_plan_concat_runs_and_copies():
    shape = (3, 10, 4)
    parts = [((3, 2, 4), True), ((3, 0, 4), True), ((3, 3, 4), True), ((3, 5, 4), False)]
    steps = K.plan_concat(shape, 1, parts)
    assert steps == (K.ConcatStep("kernel", (0, 2), 0, 20), K.ConcatStep("copy", (3,), 20, 20))


def test_plan_concat_single_row_single_part_is_memcpy():
    steps = K.plan_concat((9, 4), 0, [((4, 4), True), ((5, 4), False)])
    assert steps == (K.ConcatStep("memcpy", (0,), 0, 16), K.ConcatStep("copy", (1,), 16, 20))


def test_plan_concat_large_single_row_parts_are_memcpys():
    big = K.MEMCPY_MIN // 4
    parts = [((big,), True), ((3,), True), ((5,), True), ((big,), True), ((7,), False)]
    steps = K.plan_concat((2 * big + 15,), 0, parts, itemsize=4)
    assert steps == (K.ConcatStep("memcpy", (0,), 0, big),
                     K.ConcatStep("kernel", (1, 2), big, 8),
                     K.ConcatStep("memcpy", (3,), big + 8, big),
                     K.ConcatStep("copy", (4,), 2 * big + 8, 7))
    # with several output rows the same parts share one kernel
    rows = K.plan_concat((2, 2 * big + 8), 1, [((2, big), True), ((2, 8), True),
                                              ((2, big), True)], itemsize=4)
    assert [s.kind for s in rows] == ["kernel"]


def test_plan_concat_splits_beyond_maxparts():
    n = K.MAXPARTS + 5
    steps = K.plan_concat((n, 3), 0, [((1, 3), True)] * n)
    assert [s.kind for s in steps] == ["kernel", "kernel"]
    assert steps[0].parts == tuple(range(K.MAXPARTS)) and steps[1].col == 3 * K.MAXPARTS
    assert steps[1].width == 15


def test_plan_concat_empty_output():
    assert K.plan_concat((0, 5), 1, [((0, 2), True), ((0, 3), True)]) == ()


# ---- gather planner ---------------------------------------------------------------------------

def test_plan_gather_scalars_1d():
    x = np.empty(1 << 20, F4)
    p = _gplan(x, 0, 1 << 24)
    assert (p.path, p.shape, p.src_strides, p.gdim) == ("scalars", (1 << 24,), (4,), 0)


def test_plan_gather_rows_axis0():
    x = np.empty((1000, 64), F4)
    p = _gplan(x, 0, 77)
    assert (p.path, p.shape, p.dst_strides, p.src_strides, p.gdim) == (
        "rows", (77, 64), (256, 4), (256, 4), 0)
    assert p.shift == 0


def test_plan_gather_middle_axis_merges_inner():
    x = np.empty((4, 50, 6, 7), F4)
    p = _gplan(x, 1, 9)
    assert (p.path, p.shape, p.src_strides, p.gdim) == ("rows", (4, 9, 42), (8400, 168, 4), 1)


def test_plan_gather_last_axis_of_2d():
    x = np.empty((30, 50), np.int16)
    p = _gplan(x, 1, 11)
    assert (p.path, p.shape, p.src_strides, p.gdim) == ("scalars", (30, 11), (100, 2), 1)


def test_plan_gather_transposed_source_is_strided():
    x = np.empty((50, 30), F4).T   # (30, 50), inner stride 120
    p = _gplan(x, 0, 5)
    assert (p.path, p.src_strides) == ("strided", (4, 120))


def test_plan_gather_short_rows_widen():
    x = np.empty((1000, 2), np.float64)  # rows of 16 bytes: one element each
    p = _gplan(x, 0, 10)
    assert (p.path, p.itemsize, p.shape) == ("scalars", 16, (10,))


def test_plan_gather_single_index_keeps_the_axis():
    x = np.empty((5, 7), F4)
    p = _gplan(x, 0, 1)
    assert p.path == "rows" and p.shape == (1, 7) and p.gdim == 0


def test_plan_gather_empty():
    assert _gplan(np.empty((5, 7), F4), 0, 0).path == "empty"
    assert _gplan(np.empty((0, 7), F4), 1, 3).path == "empty"


def test_mapping_repeat_counts_is_gather():
    # repeat(x, counts, axis=0) = gather(x, idx, 0) with idx from the caller's scan
    x = np.empty((6, 5), F4)
    counts = np.array([0, 2, 1, 3, 0, 1])
    idx = np.searchsorted(np.cumsum(counts), np.arange(counts.sum()), side="right")
    assert idx.tolist() == [1, 1, 2, 3, 3, 3, 5]
    assert _gplan(x, 0, idx.size).path == "rows"


# ---- NVRTC: every kernel a launcher can ask for exists in the compiled source ----------------

from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
# ---- recorded programs: a replay launches exactly what planning would ---------------------

class _FakeCupy:
    """What the launchers touch of CuPy: the device, the stream, memcpyAsync, launchKernel."""

    def __init__(self, log, launch):
        import types
        rt = types.SimpleNamespace(getDevice=lambda: 0, memcpyAsync=lambda d, s, n, k, st:
                                   log.append(("memcpy", d, s, n)))
        stream = types.SimpleNamespace(ptr=7)
        self.cuda = types.SimpleNamespace(runtime=rt, get_current_stream=lambda: stream,
                                          driver=types.SimpleNamespace(launchKernel=launch))


class _FakeArray:
    def __init__(self, like, ptr):
        self.shape, self.strides, self.itemsize, self.dtype = (like.shape, like.strides,
                                                               like.itemsize, like.dtype)
        self.size, self.ndim = like.size, like.ndim
        self.flags = like.flags
        self.data = type("M", (), {"ptr": ptr})()


@pytest.fixture
def launches(monkeypatch):
    """Every launch as (kernel, blocks, threads, argument cells): from a replay or from direct
    planning (both reach the driver's launchKernel); the device's SM count is fixed."""
    import ctypes
    log = []

    names = {}

    def driver(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        p = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]
        name = names[fn]
        n = (K._TRANS_FIELDS + 3 * K.MAXND if "transpose" in name else
             K._CONCAT_FIELDS + 3 * K.MAXPARTS + 1 if "concat" in name else
             K._MOVE_FIELDS + 4 * K.MAXND)
        log.append((name, gx, (bx, by), list((ctypes.c_int64 * n).from_address(p))))

    def kernel(name):
        names[hash(name)] = name
        return type("F", (), {"ptr": hash(name)})()

    monkeypatch.setattr(K, "_kernel", kernel)
    monkeypatch.setattr(K, "device_info", lambda cp: type("D", (), {"sm_count": 132})())
    K_cache = R._programs
    K_cache.clear()
    recorded = []
    record = R._record
    monkeypatch.setattr(R, "_record", lambda *a: recorded.append(a[1][0]) or record(*a))
    yield log, _FakeCupy(log, driver), recorded
    K_cache.clear()  # programs of fake kernels must not outlive the test


def _direct(cp, log, fn):
    """The launches of fn() with recording bypassed: planning every time."""
    start = len(log)
    saved = K._run
    K._run = lambda cp_, key, ptrs, run: run(*ptrs)
    try:
        fn()
    finally:
        K._run = saved
    return log[start:]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x[0] == "memcpy":
            assert x == y
        else:
            assert x == y


@pytest.mark.parametrize("base", [0x7f0000000000, 0x7f0000001008])
def test_replayed_programs_match_direct_planning(launches, base):
    log, cp, recorded = launches
    b = np.empty((64, 80), np.float32)
    cases = {"copy T": (b[:40, :48].T.copy(), b[:40, :48].T),
             "copy flip": (b[::-1, 1:], b[::-1, 1:]),
             "copy rows": (b[:, :33], b[:, 2:35])}
    for name, (d, s_) in cases.items():
        for shift in (0, 4096 * 3):  # a first call records, a second one replays
            dst, src = _FakeArray(d, base + shift), _FakeArray(s_, base + 0x100000 + shift)
            start = len(log)
            K.copy_into(cp, dst, src)
            got = log[start:]
            want = _direct(cp, log, lambda: K.copy_into(cp, dst, src))
            _same(got, want)
    parts = [np.empty((5, 7), np.float64), b[:5, :9].astype(np.float64)[:, ::2],
             np.empty((5, 3), np.float64)]
    out = np.empty((5, 15), np.float64)
    for shift in (0, 64):
        fo = _FakeArray(out, base + shift)
        fp = [_FakeArray(p, base + 0x200000 * (k + 1) + shift) for k, p in enumerate(parts)]
        start = len(log)
        K.concat(cp, fp, 1, fo)
        got = log[start:]
        _same(got, _direct(cp, log, lambda: K.concat(cp, fp, 1, fo)))
        assert len(got) == 3  # the strided middle part splits the contiguous run
    x = b[:, :16].astype(np.float32)
    idx = np.empty(100, np.int64)
    for shift in (0, 128):
        fo = _FakeArray(np.empty((100, 16), np.float32), base + shift)
        fx, fi = _FakeArray(x, base + 0x400000 + shift), _FakeArray(idx, base + 0x800000)
        start = len(log)
        K.gather(cp, fx, fi, 0, fo)
        got = log[start:]
        _same(got, _direct(cp, log, lambda: K.gather(cp, fx, fi, 0, fo)))
        assert got
    src = b[:40, :48].T
    for shift in (0, 256):
        fo = _FakeArray(np.empty((48, 40), np.float32), base + shift)
        fx = _FakeArray(src, base + 0x900000 + shift)
        start = len(log)
        K.roll(cp, fx, fo, [3, 5])
        got = log[start:]
        _same(got, _direct(cp, log, lambda: K.roll(cp, fx, fo, [3, 5])))
        assert len(got) == 1  # two rolled axes of a small array: one launch
    # one recording per geometry (and alignment), replays after
    assert [k[0] for k in recorded] == ["copy"] * 3 + ["concat", "gather", "roll"], recorded


def test_every_launcher_kernel_compiles():
    from xp_cuda._kernels import kernel_sources, nvrtc_compile
    ptx = nvrtc_compile(kernel_sources()["copy.cu"], name="copy.cu")
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    missing = set(K.kernel_names()) - entries
    assert not missing, f"kernels named by copy.py but absent from the PTX: {sorted(missing)}"
    assert len(K.kernel_names()) == 30


def test_struct_sizes_match_the_source():
    """The launchers fill the argument structs cell by cell: the constants must agree."""
    src = K.source("copy.cu")
    for name, val in (("XC_MAXND", K.MAXND), ("XC_MAXPARTS", K.MAXPARTS),
                      ("XC_FLATND", K.FLATND), ("XC_THREADS", K.THREADS),
                      ("XC_UNROLL", K.UNROLL), ("XC_SEG_UNROLL", K.SEG_UNROLL)):
        assert re.search(rf"#define {name} (\d+)", src).group(1) == str(val), name
    for struct, fields in (("MoveArgs", K._MOVE_FIELDS), ("TransArgs", K._TRANS_FIELDS),
                           ("ConcatArgs", K._CONCAT_FIELDS)):
        body = src.split(f"struct {struct} {{")[1].split("};")[0]
        scalars = body.split("[")[0]  # the declarations before the first array
        names = re.findall(r"(\w+)\s*[,;]", re.sub(r"//[^\n]*", "", scalars))
        names = [n for n in names if n not in ("i64",)]
        assert len(names) == fields, (struct, names)


# ---- GPU: every plan path against NumPy, bit for bit -----------------------------------------

cuda = pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float32,
          np.int64, np.uint64, np.float64, np.complex64, np.complex128]
SIZE_DTYPES = [np.int8, np.int16, np.float32, np.float64, np.complex128]  # one per item size


def _rand(rng, shape, dtype):
    """Random bits of every kind, with -0.0, NaNs of odd payloads and infinities sprinkled in."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    if dtype == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape).copy()
    if dtype.kind in "fc" and n:
        flat = a.reshape(-1).view(np.float32 if dtype in (np.float32, np.complex64)
                                  else np.float64)
        k = max(1, flat.size // 7)
        pos = rng.integers(0, flat.size, k)
        specials = (np.array([-0.0, np.inf, -np.inf, 0.0], dtype=flat.dtype))
        flat[pos[: k // 2]] = specials[rng.integers(0, 4, k // 2)]
        ibits = flat.view(np.uint32 if flat.dtype == np.float32 else np.uint64)
        nan = (np.uint32(0x7fc12345) if flat.dtype == np.float32
               else np.uint64(0xfff4000000abcdef))
        ibits[pos[k // 2:]] = nan
    return a


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def _check(got, ref, what):
    import cupy as cp
    g = cp.asnumpy(got)
    assert g.shape == ref.shape and g.dtype == ref.dtype, (what, g.shape, ref.shape)
    gb, rb = _bits(g), _bits(ref)
    if not np.array_equal(gb, rb):
        bad = np.flatnonzero(gb != rb)
        raise AssertionError(f"{what}: {bad.size} of {rb.size} bytes differ, first at byte "
                             f"{bad[0]} (got {gb[bad[0]]}, want {rb[bad[0]]})")


def _src_view(cp, rng, dtype, base_shape, view):
    """(host array, device view) of the same view of random data."""
    h = _rand(rng, base_shape, dtype)
    d = cp.asarray(h)
    return view(h), view(d)


def _copy_case(cp, rng, dtype, base_shape, view, out_shape=None, out_view=None):
    hsrc, dsrc = _src_view(cp, rng, dtype, base_shape, view)
    if out_shape is None:
        out_shape, out_view = hsrc.shape, (lambda a: a)
    hout = _rand(rng, out_shape, dtype)
    dout = cp.asarray(hout)
    out_view(hout)[...] = hsrc
    K.copy_into(cp, out_view(dout), dsrc)
    return dout, hout


COPY_CASES = {
    "0d": ((), lambda a: a),
    "empty": ((3, 0, 4), lambda a: a),
    "size1": ((1,), lambda a: a),
    "odd_1001": ((1001,), lambda a: a),
    "odd_3_37": ((3, 37), lambda a: a),
    "strided_1d": ((2003,), lambda a: a[::2]),
    "neg_1d": ((1001,), lambda a: a[::-1]),
    "neg_outer": ((37, 65), lambda a: a[::-1]),
    "neg_inner": ((37, 65), lambda a: a[:, ::-3]),
    "neg_both": ((37, 65), lambda a: a[::-2, ::-1]),
    "transpose_4097_1025": ((4097, 1025), lambda a: a.T),
    "transpose_odd_small": ((33, 17), lambda a: a.T),
    "transpose_words": ((132, 1028), lambda a: a.T),
    "transpose_words_sliced": ((136, 1032), lambda a: a[4:132, 8:1028].T),
    "perm_words": ((3, 40, 52), lambda a: a.transpose(0, 2, 1)),
    "perm_words_outer": ((40, 3, 52), lambda a: a.transpose(2, 1, 0)),
    "perm_021": ((5, 67, 45), lambda a: a.transpose(0, 2, 1)),
    "perm_201": ((5, 67, 45), lambda a: a.transpose(2, 0, 1)),
    "perm_120": ((5, 67, 45), lambda a: a.transpose(1, 2, 0)),
    "perm_210": ((5, 67, 45), lambda a: a.transpose(2, 1, 0)),
    "perm_1023": ((3, 4, 70, 40), lambda a: a.transpose(1, 0, 3, 2)),
    "slice_rows": ((40, 1003), lambda a: a[3:30, 1:1000]),
    "short_transposed": ((1000, 3), lambda a: a.T),
    "many_dims": ((2, 3, 2, 3, 2, 3, 2, 3, 5), lambda a: a[:, ::-1, :, ::2, :, ::-1, :, ::2, 1:]),
}


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", sorted(COPY_CASES))
def test_copy_into_matches_numpy(dtype, case):
    import cupy as cp
    rng = np.random.default_rng(hash(case) % 2**32)
    base, view = COPY_CASES[case]
    dout, hout = _copy_case(cp, rng, dtype, base, view)
    _check(dout, hout, f"copy_into {case} {np.dtype(dtype).name}")


ROLL_CASES = {  # base shape, view, shifts: each plan_roll path, any strides
    "rows_big": ((1500, 1003), lambda a: a, (7, 0)),             # > ROLL_ONE_MAX, one launch
    "rows_flipped": ((37, 65), lambda a: a[::-1], (5, 0)),
    "rows_3d": ((6, 5, 43), lambda a: a, (2, 4, 0)),
    "elements_2d": ((37, 65), lambda a: a, (5, 9)),
    "elements_strided": ((70, 258), lambda a: a[1::2, ::-3], (3, 80)),
    "elements_1d": ((1001,), lambda a: a, (990,)),
    "elements_transposed": ((40, 64), lambda a: a.T, (13, 1)),
    "pieces_big": ((1200, 1001), lambda a: a, (5, 7)),            # inner rolled, large
    "pieces_big_neg": ((1200, 1001), lambda a: a[:, ::-1], (0, 999)),
    "none": ((9, 11), lambda a: a, (0, 0)),
}


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", SIZE_DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", sorted(ROLL_CASES))
def test_roll_every_path_matches_numpy(dtype, case):
    import cupy as cp
    rng = np.random.default_rng(hash(case) % 2**32)
    base, view, shifts = ROLL_CASES[case]
    hsrc, dsrc = _src_view(cp, rng, dtype, base, view)
    out = cp.empty(hsrc.shape, hsrc.dtype)
    K.roll(cp, dsrc, out, list(shifts))
    want = np.roll(hsrc, shifts, axis=tuple(range(hsrc.ndim)))
    path = K.plan_roll(dsrc.shape, out.strides, dsrc.strides, dsrc.itemsize, shifts,
                       out.data.ptr % 16, dsrc.data.ptr % 16).path
    _check(out, want, f"roll {case} ({path}) {np.dtype(dtype).name}")


BROADCASTS = {
    "scalar": ((), (3, 5, 7), lambda a: a),
    "row": ((1, 37), (29, 37), lambda a: a),
    "column": ((29, 1), (29, 37), lambda a: a),
    "tile_2x3": ((1, 30, 1, 40), (2, 30, 3, 40), lambda a: a),
    "repeat_int": ((1000, 1), (1000, 3), lambda a: a),
    "inner_big": ((4, 1, 1001), (4, 6, 1001), lambda a: a),
    "tile_long_rows": ((1, 40000), (3, 40000), lambda a: a),   # rows cut, repeats inside
    "tile_2d_long_rows": ((1, 5, 1, 20000), (2, 5, 3, 20000), lambda a: a),
    "tile_prime_rows": ((1, 65537), (2, 65537), lambda a: a),  # no cut
}


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", sorted(BROADCASTS))
def test_copy_into_broadcast_stride_zero(dtype, case):
    import cupy as cp
    rng = np.random.default_rng(7)
    shape, target, _ = BROADCASTS[case]
    h = _rand(rng, shape, dtype)
    d = cp.asarray(h)
    out = cp.asarray(_rand(rng, target, dtype))
    K.copy_into(cp, out, cp.broadcast_to(d, target))
    _check(out, np.broadcast_to(h, target).copy(), f"broadcast {case} {np.dtype(dtype).name}")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("sl", ["inner_offset", "inner_odd", "outer", "both_strided",
                                "transposed_dst", "reversed_dst"])
def test_copy_into_slice_of_larger_out(dtype, sl):
    import cupy as cp
    rng = np.random.default_rng(11)
    views = {
        "inner_offset": lambda a: a[:, 1:1001],
        "inner_odd": lambda a: a[2:39, 3:40],
        "outer": lambda a: a[5:25],
        "both_strided": lambda a: a[1::2, 2::3],
        "transposed_dst": lambda a: a[:, :37].T,
        "reversed_dst": lambda a: a[::-1, 7:900],
    }
    hout = _rand(rng, (40, 1002), dtype)
    dout = cp.asarray(hout)
    target = views[sl](hout)
    hsrc = _rand(rng, target.shape, dtype)
    target[...] = hsrc
    K.copy_into(cp, views[sl](dout), cp.asarray(hsrc))
    _check(dout, hout, f"slice {sl} {np.dtype(dtype).name}")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", SIZE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_copy_into_misaligned_views(dtype):
    """Element addresses off their size (a byte view shifted by one element of a smaller
    type) move as smaller words."""
    import cupy as cp
    rng = np.random.default_rng(3)
    item = np.dtype(dtype).itemsize
    if item == 1:
        pytest.skip("bytes are always aligned")
    n = 301
    hraw = rng.integers(0, 256, (n + 1) * item, dtype=np.uint8)
    draw = cp.asarray(hraw)
    half = item // 2
    hsrc = hraw[half:half + n * item].view(dtype)
    dsrc = draw[half:half + n * item].view(dtype)
    out = cp.empty(n, dtype)
    K.copy_into(cp, out, dsrc)
    _check(out, hsrc.copy(), f"misaligned {np.dtype(dtype).name}")
    out2 = cp.empty((n // 7, 7), dtype)
    K.copy_into(cp, out2, dsrc[: (n // 7) * 7].reshape(n // 7, 7)[::-1])
    _check(out2, hsrc[: (n // 7) * 7].reshape(n // 7, 7)[::-1].copy(), "misaligned 2-d")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_matches_numpy(dtype, axis):
    import cupy as cp
    rng = np.random.default_rng(axis)
    shapes = {0: [(2, 5, 7), (0, 5, 7), (3, 5, 7), (1, 5, 7), (4, 5, 7)],
              1: [(3, 1, 7), (3, 4, 7), (3, 0, 7), (3, 9, 7), (3, 2, 7)],
              2: [(3, 5, 3), (3, 5, 1), (3, 5, 0), (3, 5, 37), (3, 5, 2)]}[axis]
    hs = [_rand(rng, s, dtype) for s in shapes]
    ds = [cp.asarray(h) for h in hs]
    # mixed contiguity: part 3 through a transposed copy of itself, part 1 reversed
    ds[3] = cp.ascontiguousarray(ds[3].T).T
    ds[1] = cp.ascontiguousarray(ds[1][::-1])[::-1]
    ref = np.concatenate(hs, axis=axis)
    out = cp.asarray(_rand(rng, ref.shape, dtype))
    K.concat(cp, ds, axis, out)
    _check(out, ref, f"concat axis {axis} {np.dtype(dtype).name}")
    out2 = cp.asarray(_rand(rng, ref.shape, dtype))
    K.concat(cp, [cp.asarray(h) for h in hs], axis, out2)  # all contiguous: one launch
    _check(out2, ref, f"concat contiguous axis {axis} {np.dtype(dtype).name}")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", SIZE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_concat_large_and_many_parts(dtype):
    import cupy as cp
    rng = np.random.default_rng(5)
    hs = [_rand(rng, (1 + (i * 7) % 5, 129), dtype) for i in range(K.MAXPARTS + 7)]
    ref = np.concatenate(hs, axis=0)
    out = cp.empty(ref.shape, dtype)
    K.concat(cp, [cp.asarray(h) for h in hs], 0, out)
    _check(out, ref, "many parts axis 0")
    ref1 = np.concatenate([h[:1] for h in hs], axis=1)
    out1 = cp.empty(ref1.shape, dtype)
    K.concat(cp, [cp.asarray(h[:1]) for h in hs], 1, out1)
    _check(out1, ref1, "many parts axis 1")
    big = [_rand(rng, (300, 1001), dtype) for _ in range(3)]
    for ax in (0, 1):
        ref2 = np.concatenate(big, axis=ax)
        out2 = cp.empty(ref2.shape, dtype)
        K.concat(cp, [cp.asarray(b) for b in big], ax, out2)
        _check(out2, ref2, f"large axis {ax}")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,axis", [((1001,), 0), ((3, 37), 0), ((3, 37), 1),
                                        ((4, 6, 5), 0), ((4, 6, 5), 1), ((4, 6, 5), 2),
                                        ((50, 2), 0), ((7, 1), 0)])
def test_gather_matches_numpy(dtype, shape, axis):
    import cupy as cp
    rng = np.random.default_rng(len(shape) * 10 + axis)
    h = _rand(rng, shape, dtype)
    n = shape[axis]
    idx = np.concatenate([rng.integers(0, n, 2 * n + 3), [n - 1, 0, n - 1, 0]]).astype(np.int64)
    for view in (lambda a: a, lambda a: a[::-1], lambda a: np.swapaxes(a, 0, -1)):
        hv = view(h)
        dv = view(cp.asarray(h))
        for ax in range(hv.ndim):
            ii = idx % hv.shape[ax]
            ref = np.take(hv, ii, axis=ax)
            out = cp.asarray(_rand(rng, ref.shape, dtype))
            K.gather(cp, dv, cp.asarray(ii), ax, out)
            _check(out, ref, f"gather {shape} axis {ax} {np.dtype(dtype).name}")
        empty = cp.empty((0,), dtype=np.int64)
        ref = np.take(hv, np.zeros(0, np.int64), axis=0)
        out = cp.empty(ref.shape, dtype)
        K.gather(cp, dv, empty, 0, out)
        assert out.shape == ref.shape


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("dtype", SIZE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gather_large(dtype):
    import cupy as cp
    rng = np.random.default_rng(9)
    h = _rand(rng, (3000, 37), dtype)
    idx = rng.integers(0, 3000, 5001).astype(np.int64)
    for ax, ii in ((0, idx), (1, idx % 37)):
        ref = np.take(h, ii, axis=ax)
        out = cp.empty(ref.shape, dtype)
        K.gather(cp, cp.asarray(h), cp.asarray(ii), ax, out)
        _check(out, ref, f"gather large axis {ax}")
    flat = h.reshape(-1)
    ii = rng.integers(0, flat.size, 100003).astype(np.int64)
    out = cp.empty(ii.size, dtype)
    K.gather(cp, cp.asarray(flat), cp.asarray(ii), 0, out)
    _check(out, flat[ii], "gather scalars")


def test_c_contiguity_from_shape_and_strides_matches_numpy():
    """concat's cache key holds shapes and strides only: contiguity is derived from them."""
    b = np.empty((6, 5, 4), np.float32)
    views = [b, b[:, :1], b[::2], b.transpose(1, 0, 2), b[:, :, ::-1], b[:1, :1], b[:0],
             b[..., :1], b[:, 2:3, :], np.broadcast_to(b[:1], (3, 5, 4)), b[1:2, :, 1:2],
             b.reshape(-1)[3:], b[:, :, :1][:, ::2], np.empty((0, 3), np.float32)[:, ::2]]
    for v in views:
        assert K.c_contiguous(v.shape, v.strides, 4) == v.flags.c_contiguous, (v.shape,
                                                                                v.strides)


@cuda
@pytest.mark.cuda
def test_kept_take_gathers_each_call_and_checks_its_indices():
    """take's kept call (a replay of the checked gather, then its verdict) against NumPy on
    new indices each round, negative ones included; an index out of bounds on a kept call
    raises IndexError and the next call is right again; a view at another residue, int32
    indices and a strided x take the full path and agree."""
    import xp_cuda as xp
    from xp_cuda._backends._base import KEPT
    dev = Device("cuda", 0)
    rng = np.random.default_rng(12)
    a = rng.standard_normal((6, 9)).astype(np.float32)
    A = xp.asarray(a, device=dev)
    for r in range(4):
        i = rng.integers(-9, 9, 11)
        got = xp.take(A, xp.asarray(i, device=dev), axis=1)
        np.testing.assert_array_equal(np.from_dlpack(got, device="cpu"), np.take(a, i, axis=1))
    assert any(type(k).__name__ == "_KeptGather" for k in KEPT.values())
    bad = np.array([0, 3, 9, -1, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 of size 9"):
        xp.take(A, xp.asarray(bad, device=dev), axis=1)
    with pytest.raises(IndexError, match="index -10 is out of bounds"):
        xp.take(A, xp.asarray(np.full(11, -10), device=dev), axis=1)
    i = rng.integers(-9, 9, 11)
    np.testing.assert_array_equal(
        np.from_dlpack(xp.take(A, xp.asarray(i, device=dev), axis=1), device="cpu"),
        np.take(a, i, axis=1))
    # another address residue of x, int32 indices, a strided x
    flat = xp.asarray(np.concatenate([np.zeros(1, np.float32), a.ravel()]), device=dev)
    A1 = xp.reshape(flat[1:], (6, 9))
    np.testing.assert_array_equal(
        np.from_dlpack(xp.take(A1, xp.asarray(i, device=dev), axis=1), device="cpu"),
        np.take(a, i, axis=1))
    np.testing.assert_array_equal(
        np.from_dlpack(xp.take(A, xp.asarray(i.astype(np.int32), device=dev), axis=1),
                       device="cpu"), np.take(a, i, axis=1))
    W = xp.asarray(rng.standard_normal((6, 18)).astype(np.float32), device=dev)
    w = np.from_dlpack(W, device="cpu")
    np.testing.assert_array_equal(
        np.from_dlpack(xp.take(W[:, ::2], xp.asarray(i, device=dev), axis=1), device="cpu"),
        np.take(w[:, ::2], i, axis=1))


@cuda
@pytest.mark.cuda
def test_kept_calls_compute_each_later_call_afresh():
    """After a validated call, later calls of the same layout replay its kept device work
    (KEPT): each round's new data against NumPy, for the moves and the moments kept so; a
    view at another address residue and a transposed input of the same shape take the full
    path and agree too."""
    import xp_cuda as xp
    from xp_cuda import _statistical
    from xp_cuda._backends._base import KEPT
    dev = Device("cuda", 0)
    rng = np.random.default_rng(11)
    calls = [
        (lambda A, B: xp.concat([A, B]), lambda a, b: np.concatenate([a, b])),
        (lambda A, B: xp.concat([A, B, A], axis=1), lambda a, b: np.concatenate([a, b, a], 1)),
        (lambda A, B: xp.concat([A, B], axis=None), lambda a, b: np.concatenate(
            [a.ravel(), b.ravel()])),
        (lambda A, B: xp.stack([A, B], axis=1), lambda a, b: np.stack([a, b], 1)),
        (lambda A, B: xp.roll(A, (1, 2), axis=(0, 1)), lambda a, b: np.roll(a, (1, 2), (0, 1))),
        (lambda A, B: xp.roll(A, 3), lambda a, b: np.roll(a, 3)),
        (lambda A, B: xp.tile(A, (2, 3)), lambda a, b: np.tile(a, (2, 3))),
        (lambda A, B: xp.repeat(A, 3, axis=1), lambda a, b: np.repeat(a, 3, 1)),
        (lambda A, B: xp.reshape(xp.permute_dims(A, (1, 0)), (-1,)), lambda a, b: a.T.ravel()),
        (lambda A, B: xp.where(A > B, A, B[:1, ...]), lambda a, b: np.where(a > b, a, b[:1])),
        (lambda A, B: xp.astype(A, xp.float64), lambda a, b: a.astype(np.float64)),
        (lambda A, B: xp.astype(A, xp.int16), lambda a, b: a.astype(np.int16)),
        (lambda A, B: xp.cumulative_sum(A, axis=0), lambda a, b: np.cumsum(a, 0)),
        (lambda A, B: xp.cumulative_sum(A, axis=1, include_initial=True), lambda a, b:
         np.concatenate([np.zeros((5, 1), np.float32), np.cumsum(a, 1)], 1)),
        (lambda A, B: A[:, :1] - B[:1, :], lambda a, b: a[:, :1] - b[:1, :]),  # broadcast
        (lambda A, B: xp.searchsorted(xp.sort(A[0, ...]), B, side="right"),
         lambda a, b: np.searchsorted(np.sort(a[0]), b, side="right")),
        (lambda A, B: xp.multiply(A[::2, 1:], B[::2, :-1]), lambda a, b: a[::2, 1:] * b[::2, :-1]),
    ]
    moments = [
        (lambda A: xp.var(A, axis=0, correction=1), lambda a: a.var(0, ddof=1)),
        (lambda A: xp.std(A, axis=1), lambda a: a.std(1)),
        (lambda A: xp.linalg.vector_norm(A, axis=1, ord=3),
         lambda a: np.linalg.norm(a, 3, axis=1)),
        (lambda A: xp.linalg.matrix_norm(A), lambda a: np.linalg.norm(a)),
        (lambda A: xp.linalg.trace(A), lambda a: np.trace(a)),
        (lambda A: xp.linalg.trace(A, offset=2), lambda a: np.trace(a, offset=2)),
        (lambda A: _statistical.cumulative_prod(A, axis=0),  # 2024.12
         lambda a: np.cumprod(a.astype(np.float64), 0)),
    ]
    for r in range(4):
        # multiples of 1/64: the cumulative sums are exact in float32, in any order
        a = (np.round(rng.standard_normal((5, 7)) * 64) / 64).astype(np.float32)
        b = rng.standard_normal((5, 7)).astype(np.float32)
        if r == 2:  # same shape and strides, another address residue: one float32 in
            flat = np.concatenate([np.zeros(1, np.float32), a.ravel()])
            A = xp.reshape(xp.asarray(flat, device=dev)[1:], (5, 7))
        elif r == 3:  # same shape, transposed strides
            A = xp.permute_dims(xp.asarray(np.ascontiguousarray(a.T), device=dev), (1, 0))
        else:
            A = xp.asarray(a, device=dev)
        B = xp.asarray(b, device=dev)
        for f, ref in calls:
            np.testing.assert_array_equal(np.from_dlpack(f(A, B), device="cpu"), ref(a, b))
        for f, ref in moments:
            np.testing.assert_allclose(np.from_dlpack(f(A), device="cpu"), ref(a), rtol=2e-6)
        if r == 0:
            kept = {type(k).__name__ for k in KEPT.values()}
            assert {"KeptMove", "KeptLaunch"} <= kept, kept
            assert any(type(k) is tuple and k[0] == "searchsorted" for k in KEPT), \
                "searchsorted's call was not kept"
