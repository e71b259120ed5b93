"""sort.cu / sort.py: the block radix sort of rows, the histogram set functions of small
integers and searchsorted, exactly against NumPy (stable sort and argsort, np.unique,
np.searchsorted); planning, key transforms and compilation without a GPU."""
import re
import zlib

import numpy as np
import pytest

from xp_cuda._devices import cuda_device_count
from xp_cuda._kernels import sort as K

_NO_GPU = cuda_device_count() == 0

KEY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"]


from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


# ---- without a GPU ---------------------------------------------------------------------------

@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
def test_every_launcher_kernel_compiles():
    from xp_cuda._kernels import kernel_sources, nvrtc_compile
    ptx = nvrtc_compile(kernel_sources()["sort.cu"], name="sort.cu")
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    missing = set(K.kernel_names()) - entries
    assert not missing, f"kernels the launchers may request but sort.cu lacks: {sorted(missing)}"


def test_plan_picks_the_smallest_tier_and_refuses_long_rows():
    caps = [32 * w * i for w, i in K.SEGSORT_CONFIGS]
    assert caps == sorted(caps) and K.L_MAX == caps[-1] == 16384
    assert 32 * max(K.WARP_ITEMS) < caps[0]  # the warp tier hands over to the radix tiers
    for width in K.KEY_WIDTHS:
        for mode in (K.MODE_UNSIGNED, K.MODE_SIGNED, K.MODE_FLOAT):
            for n in (1, 2, 31, 32, 33, 64, 65, 128, 129, 1000, 4096, 4097, 8192, 8193, K.L_MAX):
                for want_idx in (False, True):
                    plan = K.plan_segsort(n, width, mode, want_idx)
                    assert plan is not None, (n, width, mode, want_idx)
                    name, threads, smem, rows = plan
                    assert name in K.kernel_names()
                    if n <= 64:
                        iw = 1 if n <= 32 else 2
                        assert (name, threads, smem, rows) == (
                            f"xp_warpsort_{width}_{iw}", 32 * K.WARP_ROWS, 0, K.WARP_ROWS)
                        continue
                    cap = min(c for c in caps if c >= n)
                    w, i = K.SEGSORT_CONFIGS[caps.index(cap)]
                    assert name == f"xp_segsort_{width}_{w}x{i}" and threads == 32 * w
                    assert rows == 1
                    assert smem == K.smem_bytes(w, i, width, want_idx or mode == K.MODE_FLOAT)
                    assert smem <= 232448  # sm_90's opt-in limit
            assert K.plan_segsort(K.L_MAX + 1, width, mode, True) is None
    # a device with less shared memory refuses a tier rather than failing the launch
    assert K.plan_segsort(16384, 8, K.MODE_FLOAT, True, smem_limit=100_000) is None
    assert K.plan_segsort(100, 8, K.MODE_FLOAT, True, smem_limit=100_000) is not None


def test_long_row_passes_and_shared_memory():
    # the bytes up to the top bit where a row's keys differ; one pass at least
    assert K.osort_passes(0, 8) == [0]
    assert K.osort_passes(1, 1) == [0]
    assert K.osort_passes(8, 8) == [0]
    assert K.osort_passes(9, 4) == [0, 8]
    assert K.osort_passes(32, 4) == [0, 8, 16, 24]
    assert K.osort_passes(64, 8) == list(range(0, 64, 8))
    for w in K.KEY_WIDTHS:
        smem = K.osort_smem(w)
        assert smem == 4096 * (w + 4) + 16 * 257 * 4 + 32 * 4 + 257 * 4 + 256 * 4 + 4
        assert smem <= 232448  # sm_90's opt-in limit
    # the upfront count: about four blocks a SM in all, never less than a tile a block
    assert K.osort_hist_blocks(2**24, 1, 132) == 528
    assert K.osort_hist_blocks(20000, 1, 132) == 5
    assert K.osort_hist_blocks(2**20, 1000, 132) == 1
    assert K.OSORT_TILE == 4096 and K.OSORT_N_MAX == 2**30


def test_smem_layout_counts_every_part():
    # keys, 32 bytes of reductions, 32 scan words, warps x 257 counters, u16 indices
    assert K.smem_bytes(32, 8, 4, True) == 8192 * 4 + 32 + 128 + 32 * 257 * 4 + 8192 * 2
    assert K.smem_bytes(1, 4, 1, False) == 128 + 32 + 128 + 257 * 4


def test_hist16_chunks_fill_the_device_but_not_tiny_inputs():
    assert K.hist16_chunks(10, 132) == 1
    assert K.hist16_chunks(1 << 20, 132) == 4
    assert K.hist16_chunks(1 << 26, 132) == 66 and K.hist16_chunks(1 << 40, 132) == 66
    assert K.hist16_chunks(1 << 26, 1) == 1


def test_key_modes():
    assert K.key_mode(np.bool_) == K.key_mode(np.uint16) == K.MODE_UNSIGNED
    assert K.key_mode(np.int8) == K.key_mode(np.int64) == K.MODE_SIGNED
    assert K.key_mode(np.float32) == K.key_mode(np.float64) == K.MODE_FLOAT
    for bad in (np.complex64, np.float16):
        with pytest.raises(TypeError):
            K.key_mode(bad)


@pytest.mark.parametrize("dtype", KEY_DTYPES)
def test_key_transform_preserves_numpy_order(dtype):
    """to_key (the model of the device transform) sorts exactly as NumPy's stable sort: NaNs of
    any sign last, -0.0 and +0.0 tied, infinities at the ends."""
    rng = np.random.default_rng(7)
    a = _tied(rng, 5000, dtype)
    key = K.to_key(a)
    assert key.dtype == np.dtype(f"u{np.dtype(dtype).itemsize}")
    np.testing.assert_array_equal(np.argsort(key, kind="stable"), np.argsort(a, kind="stable"))
    if np.dtype(dtype).kind == "f":
        neg_nan = np.copysign(np.array(np.nan, dtype), -1.0)
        k = K.to_key(np.array([neg_nan, np.nan, -np.inf, np.inf, -0.0, 0.0], dtype))
        assert k[0] == k[1] == np.iinfo(key.dtype).max
        assert k[4] == k[5] and k[2] < k[4] < k[3] < k[0]


# ---- data ------------------------------------------------------------------------------------

def _tied(rng, shape, dtype):
    """Random values with many ties (a small range), and for floats NaN (both signs), -0.0,
    0.0 and infinities mixed in."""
    shape = tuple(np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    if shape == (0,) or len(shape) and 0 in shape:
        return np.zeros(shape, dtype=dtype)
    return _tied_flat(rng, int(np.prod(shape)), dtype).reshape(shape)


def _tied_flat(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = max(info.min, -20)
        a = rng.integers(lo, lo + 40, size=shape).astype(dt)
        # a few extremes, so every key byte varies
        m = rng.random(shape) < 0.02
        a[m] = np.array([info.min, info.max], dtype=dt)[rng.integers(0, 2, int(m.sum()))]
        return a
    a = rng.integers(-8, 8, size=shape).astype(dt) / dt.type(4)
    r = rng.random(shape)
    a[r < 0.05] = np.nan
    a[(r >= 0.05) & (r < 0.08)] = np.copysign(np.array(np.nan, dt), -1.0)
    a[(r >= 0.08) & (r < 0.15)] = -0.0
    a[(r >= 0.15) & (r < 0.18)] = np.inf
    a[(r >= 0.18) & (r < 0.21)] = -np.inf
    m = (r >= 0.21) & (r < 0.4)  # some distinct values too
    a[m] = (rng.standard_normal(int(m.sum())) * 1e3).astype(dt)
    return a


def _seed(*parts):
    return zlib.crc32(repr(parts).encode())  # reproducible (str hashes are salted per run)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


# ---- on a GPU --------------------------------------------------------------------------------

@pytest.fixture
def cp():
    import cupy
    return cupy


ROW_SHAPES = [(3, 1), (5, 2), (7, 31), (1, 32), (4, 33), (3, 64), (3, 65), (3, 128), (1000, 7),
              (999, 40), (2, 129), (4, 1000), (2, 4096),
              (2, 4097), (2, 8192), (2, 8193), (1, K.L_MAX), (300, 17), (2000, 100), (2, 3, 50)]


@pytest.mark.parametrize("dtype", KEY_DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("want", ["both", "values", "indices"])
@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_segmented_sort_matches_numpy_stable(cp, dtype, shape, want):
    rng = np.random.default_rng(_seed(dtype, shape, want))
    a = _tied(rng, shape, dtype)
    wv, wi = want in ("both", "values"), want in ("both", "indices")
    res = K.segmented_sort(cp, cp.asarray(a), wv, wi)
    assert res is not None, f"rows of {shape[-1]} <= L_MAX must be sorted"
    vals, idx = res
    ref_idx = np.argsort(a, axis=-1, kind="stable")
    if wi:
        got = cp.asnumpy(idx)
        assert got.dtype == np.int64 and got.shape == a.shape
        bad = np.argwhere(got != ref_idx)
        assert bad.size == 0, (f"{dtype} {shape}: indices differ from NumPy's stable argsort at "
                               f"{bad[:5].tolist()} (got {got[tuple(bad[0])]}, "
                               f"want {ref_idx[tuple(bad[0])]})")
    else:
        assert idx is None
    if wv:
        got = cp.asnumpy(vals)
        ref = np.take_along_axis(a, ref_idx, axis=-1)  # NumPy's sort, the original bits
        assert got.dtype == a.dtype and got.shape == a.shape
        bad = np.argwhere(_bits(got) != _bits(ref))
        assert bad.size == 0, (f"{dtype} {shape}: sorted values differ (bitwise) at "
                               f"{bad[:5].tolist()}: got {got[tuple(bad[0])]!r}, "
                               f"want {ref[tuple(bad[0])]!r}")
    else:
        assert vals is None


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "uint64", "float32", "float64"])
def test_segmented_sort_distinct_and_wide_values(cp, dtype):
    """Full-range random keys (every radix pass runs), many rows, both tiers at 8192."""
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    for shape in [(64, 8192), (512, 700), (3, K.L_MAX)]:
        if dt.kind == "f":
            a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30, shape)).astype(dt)
        else:
            info = np.iinfo(dt)
            a = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        vals, idx = K.segmented_sort(cp, cp.asarray(a), True, True)
        ref_idx = np.argsort(a, axis=-1, kind="stable")
        np.testing.assert_array_equal(cp.asnumpy(idx), ref_idx, err_msg=f"{dtype} {shape}")
        np.testing.assert_array_equal(cp.asnumpy(vals), np.sort(a, axis=-1, kind="stable"))


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_segmented_sort_single_long_row_falls_back(cp):
    a = cp.arange(K.L_MAX + 1, dtype=cp.float32)[::-1].copy()
    assert K.segmented_sort(cp, a, True, True) is None
    assert K.segmented_sort(cp, a.reshape(1, -1), False, True) is None
    v, i = K.segmented_sort(cp, a[:K.L_MAX], True, True)  # a 1-D row that fits: sorted here
    np.testing.assert_array_equal(cp.asnumpy(i), np.arange(K.L_MAX)[::-1])


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", KEY_DTYPES)
@pytest.mark.parametrize("n", [K.L_MAX + 1, 4096 * 37, 1_000_003])
def test_long_sort_of_one_row(cp, dtype, n):
    """The onesweep sort (_long_sort) of one row: 1000 tiles' look-back over each other, which
    a few long rows do not reach; random full-range data (every pass), ties with NaN and -0.0
    (values gathered), a narrow range (passes skipped on the device) and a reversed row."""
    rng = np.random.default_rng(_seed(dtype, (1, n)))
    dt = np.dtype(dtype)
    cases = {"tied": _tied(rng, (1, n), dtype)}
    if dt.kind == "f":
        cases["wide"] = (rng.standard_normal((1, n)) * 1e6).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        cases["wide"] = rng.integers(info.min, info.max, size=(1, n), dtype=dt, endpoint=True)
        cases["narrow"] = rng.integers(0, 3, size=(1, n)).astype(dt) + dt.type(100)
        cases["reversed"] = np.arange(n)[::-1].astype(dt)[None]
    mode = K.key_mode(dt)
    for what, a in cases.items():
        ref_idx = np.argsort(a, axis=-1, kind="stable")
        ref = np.take_along_axis(a, ref_idx, axis=-1)
        x = cp.asarray(a)
        for wv, wi in ((True, True), (True, False), (False, True)):
            vals = cp.empty(a.shape, dtype=dt) if wv else None
            idx = cp.empty(a.shape, dtype=np.int64) if wi else None
            K._long_sort(cp, x, vals, idx, 1, n, mode, dt.itemsize)
            if wi:
                bad = np.argwhere(cp.asnumpy(idx) != ref_idx)
                assert bad.size == 0, f"{dtype} {what} {n}: indices differ at {bad[:5].tolist()}"
            if wv:
                bad = np.argwhere(_bits(cp.asnumpy(vals)) != _bits(ref))
                assert bad.size == 0, f"{dtype} {what} {n}: values differ at {bad[:5].tolist()}"


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_segmented_sort_empty(cp):
    v, i = K.segmented_sort(cp, cp.empty((0, 5), dtype=cp.int32), True, True)
    assert v.shape == i.shape == (0, 5)
    v, i = K.segmented_sort(cp, cp.empty((3, 0), dtype=cp.float64), True, False)
    assert v.shape == (3, 0) and i is None


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", KEY_DTYPES)
@pytest.mark.parametrize("shape", [(2, K.L_MAX + 1), (3, 50001), (2, 300_001)],
                         ids=lambda s: "x".join(map(str, s)))
def test_segmented_sort_long_rows_multi_block(cp, dtype, shape):
    """Rows longer than L_MAX: the onesweep radix sort, tiles crossing (and a partial last
    tile), ties, NaNs, -0.0, every dtype; both outputs and each alone."""
    rng = np.random.default_rng(_seed(dtype, shape))
    a = _tied(rng, shape, dtype)
    if np.dtype(dtype).kind in "iuf" and shape[0] > 1:
        # a row of distinct full-range values: every pass runs
        dt = np.dtype(dtype)
        if dt.kind == "f":
            a[1] = (rng.standard_normal(shape[1]) * 1e6).astype(dt)
        else:
            info = np.iinfo(dt)
            a[1] = rng.integers(info.min, info.max, size=shape[1], dtype=dt, endpoint=True)
    ref_idx = np.argsort(a, axis=-1, kind="stable")
    ref = np.take_along_axis(a, ref_idx, axis=-1)
    x = cp.asarray(a)
    for wv, wi in ((True, True), (True, False), (False, True)):
        res = K.segmented_sort(cp, x, wv, wi)
        assert res is not None
        vals, idx = res
        if wi:
            got = cp.asnumpy(idx)
            bad = np.argwhere(got != ref_idx)
            assert bad.size == 0, (f"{dtype} {shape}: indices differ at {bad[:5].tolist()}")
        if wv:
            got = cp.asnumpy(vals)
            bad = np.argwhere(_bits(got) != _bits(ref))
            assert bad.size == 0, (f"{dtype} {shape}: values differ at {bad[:5].tolist()}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_segmented_sort_keeps_nan_payloads_and_zero_signs(cp):
    """Rows with NaN or -0.0 are written by gathering the original bits: payloads, signs and
    the stable order of -0.0/+0.0 all survive."""
    bits = np.array([0x7FC00001, 0xFFC00000, 0x80000000, 0x00000000, 0x3F800000, 0x80000000,
                     0x7F800001, 0xBF800000], dtype=np.uint32)
    a = np.tile(bits.view(np.float32), (3, 5))
    vals, idx = K.segmented_sort(cp, cp.asarray(a), True, True)
    ref_idx = np.argsort(a, axis=-1, kind="stable")
    np.testing.assert_array_equal(cp.asnumpy(idx), ref_idx)
    np.testing.assert_array_equal(cp.asnumpy(vals).view(np.uint32),
                                  np.take_along_axis(a, ref_idx, -1).view(np.uint32))
    vals, idx = K.segmented_sort(cp, cp.asarray(a), True, False)
    np.testing.assert_array_equal(cp.asnumpy(vals).view(np.uint32),
                                  np.take_along_axis(a, ref_idx, -1).view(np.uint32))


# ---- small_unique ----------------------------------------------------------------------------

def _unique_ref(a):
    flat = a.reshape(-1)
    vals, first, inv, counts = np.unique(flat, return_index=True, return_inverse=True,
                                         return_counts=True)
    return vals, first, inv.reshape(a.shape), counts


def _unique_data(rng, dtype, shape, spread):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.3
    info = np.iinfo(dt)
    if spread == "full":
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    lo = max(info.min, -3)
    return rng.integers(lo, lo + 9, size=shape).astype(dt)


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SMALL_UNIQUE_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (17,), (3, 5, 7), (1 << 20,), (1000, 1001)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("spread", ["few", "full"])
def test_small_unique_matches_numpy(cp, dtype, shape, spread):
    rng = np.random.default_rng(_seed(dtype, shape, spread))
    a = _unique_data(rng, dtype, shape, spread)
    vals, first, inv, counts = _unique_ref(a)
    x = cp.asarray(a)
    for wc, wi, wx in [(True, True, True), (False, False, False), (True, False, False),
                       (False, True, False), (False, False, True)]:
        got = K.small_unique(cp, x, wc, wi, wx)
        v = cp.asnumpy(got["values"])
        assert v.dtype == a.dtype
        np.testing.assert_array_equal(v, vals, err_msg=f"values {dtype} {shape}")
        assert ("counts" in got) == wc and ("inverse_indices" in got) == wi
        assert ("indices" in got) == wx
        if wc:
            np.testing.assert_array_equal(cp.asnumpy(got["counts"]), counts)
            assert got["counts"].dtype == np.int64
        if wi:
            g = cp.asnumpy(got["inverse_indices"])
            assert g.shape == a.shape and g.dtype == np.int64
            np.testing.assert_array_equal(g, inv, err_msg=f"inverse {dtype} {shape}")
        if wx:
            np.testing.assert_array_equal(cp.asnumpy(got["indices"]), first,
                                          err_msg=f"first indices {dtype} {shape}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SMALL_UNIQUE_DTYPES)
def test_small_unique_strided_offset_and_empty(cp, dtype):
    rng = np.random.default_rng(11)
    base = _unique_data(rng, dtype, (37, 81), "full")
    x = cp.asarray(base)
    # misaligned start (head path), transposed, negative and zero strides
    views = [(x.reshape(-1)[3:], base.reshape(-1)[3:]), (x.T, base.T),
             (x[::-2, 1::3], base[::-2, 1::3]),
             (cp.broadcast_to(x[:1], (5, 81)), np.broadcast_to(base[:1], (5, 81)))]
    for xv, av in views:
        vals, first, inv, counts = _unique_ref(np.ascontiguousarray(av))
        got = K.small_unique(cp, xv, True, True, True)
        np.testing.assert_array_equal(cp.asnumpy(got["values"]), vals)
        np.testing.assert_array_equal(cp.asnumpy(got["counts"]), counts)
        np.testing.assert_array_equal(cp.asnumpy(got["indices"]), first)
        np.testing.assert_array_equal(cp.asnumpy(got["inverse_indices"]), inv)
    got = K.small_unique(cp, cp.empty((0, 3), dtype=dtype), True, True, True)
    assert got["values"].shape == (0,) and got["inverse_indices"].shape == (0, 3)


# ---- searchsorted ----------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", KEY_DTYPES)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(cp, dtype, side):
    rng = np.random.default_rng(_seed(dtype, side))
    for n in (0, 1, 2, 31, 1000, 4097):
        a = np.sort(_tied(rng, n, dtype), kind="stable")
        for qshape in [(), (1,), (5, 7), (3000,)]:
            q = _tied(rng, qshape, dtype)
            if np.dtype(dtype).kind == "f" and q.ndim:
                q.reshape(-1)[:4] = [np.nan, -0.0, 0.0, -np.inf][:q.size]
            got = K.searchsorted(cp, cp.asarray(a), cp.asarray(q), side)
            ref = np.searchsorted(a, q, side=side)
            assert got.shape == q.shape and got.dtype == np.int64
            np.testing.assert_array_equal(cp.asnumpy(got), ref,
                                          err_msg=f"{dtype} {side} n={n} q={qshape}")
    # a strided query
    a = np.sort(_tied(rng, 500, dtype), kind="stable")
    q = _tied(rng, (40, 60), dtype)
    got = K.searchsorted(cp, cp.asarray(a), cp.asarray(q)[::-3, ::2], side)
    np.testing.assert_array_equal(cp.asnumpy(got), np.searchsorted(a, q[::-3, ::2], side=side))


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000, 1 << 20])
def test_small_unique_bool_one_value_and_late_first(cp, n):
    """The popcount path: all True, all False, and the other value appearing only at the end
    (its first index found inside a vector, in the tail, or in a misaligned head)."""
    cases = [np.ones(n, bool), np.zeros(n, bool)]
    for last in (True, False):
        a = np.full(n + 3, not last)
        a[-1] = last
        cases.append(a)
        cases.append(a[1:])  # misaligned start
    for a in cases:
        vals, first, inv, counts = _unique_ref(a)
        for x in (cp.asarray(a), cp.asarray(np.concatenate([[False], a]))[1:]):
            got = K.small_unique(cp, x, True, True, True)
            np.testing.assert_array_equal(cp.asnumpy(got["values"]), vals)
            np.testing.assert_array_equal(cp.asnumpy(got["counts"]), counts)
            np.testing.assert_array_equal(cp.asnumpy(got["indices"]), first)
            np.testing.assert_array_equal(cp.asnumpy(got["inverse_indices"]), inv)


# ---- sorted_unique ---------------------------------------------------------------------------

def test_every_kernel_name_has_a_compile_unit():
    units = K.units()
    missing = [n for n in K.kernel_names() if n not in units]
    assert not missing, f"kernel names without an instantiation line in sort.cu: {missing}"
    for w in K.UNIQUE_WIDTHS:
        assert f"SORTUNIQ({w}," in units[f"xp_sortuniq_runs_{w}"]
        for k in ("keys", "wtiles", "wruns", "wvals"):
            assert units[f"xp_sortuniq_{k}_{w}"] == units[f"xp_sortuniq_runs_{w}"]


def test_plan_unique_routes_and_scratch_layout():
    for dt in K.SORTED_UNIQUE_DTYPES:
        w = np.dtype(dt).itemsize
        assert K.plan_unique(0, dt, True, True).sort == "empty"
        for n in (1, 7, 1000, K.L_MAX, K.L_MAX + 1, 70000, 3_000_000, 2**31 + 5):
            for wi, wv in ((False, False), (True, False), (False, True), (True, True)):
                p = K.plan_unique(n, dt, wi, wv)
                assert p.perm == (wi or wv)
                assert p.sort == ("block" if n <= K.L_MAX else "keys"), (dt, n, p)
                assert p.tiles == -(-n // K.UNIQUE_TILE) and p.tiles * K.UNIQUE_TILE >= n
                # head (nuniq, first zero, counter) then one u32 flag per tile, zeroed; the
                # 16-byte pairs aligned and disjoint after it
                assert p.zero_bytes == 8 + 8 + 4 + 4 * p.tiles
                assert p.aggs_off % 16 == 0 and p.aggs_off >= p.zero_bytes
                assert p.incls_off == p.aggs_off + 16 * p.tiles
                assert p.scratch_bytes == p.incls_off + 16 * p.tiles
        # a device without the block tier's shared memory takes the radix-sort route
        assert K.plan_unique(K.L_MAX, dt, True, True, smem_limit=20_000).sort == "keys"
        assert K.plan_unique(40, dt, True, True, smem_limit=20_000).sort == "block"
    with pytest.raises(AssertionError):
        K.plan_unique(10, "int16", False, False)
    assert K.UNIQUE_TILE == 32 * 8 * 8


def test_runs_warps_cover_every_row_once():
    """The two-pass runs' warps: consecutive whole groups of rows, at least a tile's rows
    each (so never more warps than tiles: their pairs fit the plan), none empty, together
    every row."""
    for n in (1, 31, 2048, 2049, 70000, 3_000_017, 1 << 24, 2**31 + 5):
        rows, tiles = -(-n // 32), -(-n // K.UNIQUE_TILE)
        for sm in (1, 16, 132):
            warps, rpw = K.runs_warps(n, sm)
            assert rpw % K.WARP_GROUP_ROWS == 0 and rpw >= K.UNIQUE_TILE // 32, (n, sm, rpw)
            assert 1 <= warps <= tiles, (n, sm, warps, tiles)
            assert (warps - 1) * rpw < rows <= warps * rpw, (n, sm, warps, rpw)
            if rpw > K.UNIQUE_TILE // 32:  # the rows spread over about the SMs' warps
                assert warps <= sm * K.UQ_WARPS_PER_SM, (n, sm, warps)
    assert K.runs_warps(1 << 24, 132) == (3121, 168)  # 16M elements on an H200


def test_keep_whole_copies_only_small_results():
    assert K.keep_whole(1, 1) and K.keep_whole(3, 10) and K.keep_whole(1000, 1000)
    assert not K.keep_whole(1, 5) and not K.keep_whole(250, 1000)
    assert K.keep_whole(251, 1000)


def _model_runs(key, fl):
    """NumPy model of sort.cu's sortuniq_runs on sorted keys, statement for statement: tiles
    of 8 warps x 8 rows of 32 lanes, a ballot of run starts per row, the (starts, last start)
    pair scanned over the warps of a tile and carried across tiles (the look-back's result),
    then each element's run u, the start before it, and what it writes. Returns (rank of each
    sorted position, run start positions, counts, number of runs)."""
    n = key.size
    nan_key = np.iinfo(key.dtype).max
    lanes = np.arange(32)
    u_of = np.full(n, -1, np.int64)
    starts = np.full(n, -1, np.int64)
    counts = np.full(n, -1, np.int64)
    nuniq = None
    carry = (0, -1)  # what the look-back returns to tile t: the pair over tiles < t
    for t in range(-(-n // K.UNIQUE_TILE)):
        rows, pairs = [], []
        for w in range(8):
            wbase = t * K.UNIQUE_TILE + w * 256
            bs, cnt, last = [], 0, -1
            for j in range(8):
                p = wbase + j * 32 + lanes
                k = key[np.minimum(p, n - 1)]
                kp = key[np.clip(p - 1, 0, n - 1)]  # the shuffle / lane 0's load of p - 1
                st = (p < n) & ((p == 0) | (k != kp) | (fl & (k == nan_key)))
                b = int(np.sum(st.astype(np.int64) << lanes))
                bs.append(b)
                cnt += bin(b).count("1")
                if b:
                    last = wbase + j * 32 + b.bit_length() - 1
            rows.append(bs)
            pairs.append((cnt, last))
        agg = (sum(c for c, _ in pairs), max(s for _, s in pairs))
        for w in range(8):
            ec = carry[0] + sum(c for c, _ in pairs[:w])
            es = max([carry[1]] + [s for _, s in pairs[:w]])
            C, L = ec, es
            wbase = t * K.UNIQUE_TILE + w * 256
            for j, b in enumerate(rows[w]):
                rowp = wbase + j * 32
                for lane in range(32):
                    p = rowp + lane
                    if p >= n:
                        continue
                    below = b & ((1 << lane) - 1)
                    st = (b >> lane) & 1
                    r = C + bin(below).count("1")
                    u = r if st else r - 1
                    prev = rowp + below.bit_length() - 1 if below else L
                    u_of[p] = u
                    if st:
                        starts[r] = p
                        if r > 0:
                            counts[r - 1] = p - prev
                    if p == n - 1:
                        counts[u] = n - (p if st else prev)
                        nuniq = u + 1
                C += bin(b).count("1")
                if b:
                    L = rowp + b.bit_length() - 1
        carry = (carry[0] + agg[0], max(carry[1], agg[1]))
    return u_of, starts[:nuniq], counts[:nuniq], nuniq


@pytest.mark.parametrize("n", [1, 2, 33, 255, 256, 257, 2047, 2048, 2049, 4096 + 300, 9000])
@pytest.mark.parametrize("kind", ["few", "many", "equal", "nan", "tiles"])
def test_model_of_the_run_kernel_matches_numpy(n, kind):
    """The run kernel's indexing (ranks from ballots, the start before each element from the
    last start of earlier rows, warps and tiles) on sorted keys, against np.unique."""
    rng = np.random.default_rng(_seed("model", n, kind))
    if kind == "few":
        key = rng.integers(0, 2**32 - 2, n, dtype=np.uint64).astype(np.uint32)
    elif kind == "many":
        key = rng.integers(0, 7, n).astype(np.uint32)
    elif kind == "equal":
        key = np.full(n, 5, np.uint32)
    elif kind == "nan":  # the float NaN key: every element its own run
        key = np.where(rng.random(n) < 0.5, 3, np.iinfo(np.uint32).max).astype(np.uint32)
    else:  # runs ending at warp and tile boundaries
        key = (np.arange(n) // 256).astype(np.uint32)
    key = np.sort(key)
    fl = kind == "nan"
    u_of, starts, counts, nuniq = _model_runs(key, fl)
    if fl:
        nums = key[key != np.iinfo(np.uint32).max]
        _, first, inv, cnt = np.unique(nums, return_index=True, return_inverse=True,
                                       return_counts=True)
        m = n - nums.size
        first = np.concatenate([first, nums.size + np.arange(m)])
        inv = np.concatenate([inv, first.size - m + np.arange(m)])
        cnt = np.concatenate([cnt, np.ones(m, np.int64)])
    else:
        _, first, inv, cnt = np.unique(key, return_index=True, return_inverse=True,
                                       return_counts=True)
    assert nuniq == first.size
    np.testing.assert_array_equal(starts, first)
    np.testing.assert_array_equal(u_of, inv)
    np.testing.assert_array_equal(counts, cnt)


def _unique_flat_ref(a):
    """np.unique of the 1-D a with the spec's NaN rule (equal_nan=False: each NaN distinct),
    stable (first occurrences), all four parts."""
    return np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                     equal_nan=False)


def _sorted_unique_data(rng, dtype, n, dups):
    """1-D data: many duplicates (a few dozen values) or few (a wide range); floats with NaN
    of both signs and a payload, -0.0 and 0.0, infinities."""
    dt = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if dups == "many":
            lo = max(info.min, -20)
            a = rng.integers(lo, lo + 40, size=n).astype(dt)
        else:
            a = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        m = rng.random(n) < 0.01  # extremes: every key byte varies
        a[m] = np.array([info.min, info.max], dtype=dt)[rng.integers(0, 2, int(m.sum()))]
        return a
    if dups == "many":
        a = rng.integers(-30, 30, size=n).astype(dt) / dt.type(4)
    else:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)).astype(dt)
    r = rng.random(n)
    ut = np.dtype(f"u{dt.itemsize}")
    payload_nan = np.array(0x7FC00123 if dt.itemsize == 4 else 0x7FF8000000000123,
                           dtype=ut).view(dt)
    a[r < 0.01] = np.nan
    a[(r >= 0.01) & (r < 0.02)] = -np.nan
    a[(r >= 0.02) & (r < 0.025)] = payload_nan
    a[(r >= 0.03) & (r < 0.05)] = -0.0
    a[(r >= 0.05) & (r < 0.07)] = 0.0
    a[(r >= 0.07) & (r < 0.08)] = np.inf
    a[(r >= 0.08) & (r < 0.09)] = -np.inf
    return a


_UNIQUE_WANTS = [  # (values_only, index, inverse, counts)
    (True, False, False, False), (False, False, False, False), (False, True, True, True),
    (False, True, False, False), (False, False, True, False), (False, False, False, True),
    (False, True, False, True)]


def _check_sorted_unique(cp, a, x, label):
    """sorted_unique(x) (x the device copy of a, possibly a view) against NumPy, every part
    exactly; values bitwise where the path keeps bits (see sorted_unique's docstring)."""
    vals, first, inv, counts = _unique_flat_ref(a)
    n = a.size
    ub = f"u{a.dtype.itemsize}"
    for vo, wi, wv, wc in _UNIQUE_WANTS:
        tag = f"{label} values_only={vo} index={wi} inverse={wv} counts={wc}"
        got = K.sorted_unique(cp, x, vo, wi, wv, wc)
        expect_keys = {"values"} | {k for k, w in (("indices", wi), ("inverse_indices", wv),
                                                   ("counts", wc)) if w}
        assert set(got) == expect_keys, tag
        v = cp.asnumpy(got["values"])
        assert v.dtype == a.dtype and v.ndim == 1, tag
        assert v.shape == vals.shape, f"{tag}: {v.size} unique values, NumPy has {vals.size}"
        bad = np.flatnonzero(~((v == vals) | (np.isnan(v) & np.isnan(vals))))
        assert bad.size == 0, (f"{tag}: values differ at {bad[:5].tolist()}: got "
                               f"{v[bad[:5]].tolist()}, want {vals[bad[:5]].tolist()}")
        want_bits = a[first].view(ub) if n else vals.view(ub)
        exact = wi or wv or n <= K.L_MAX  # a permutation, or the bit-exact block sort
        if a.dtype.kind != "f" or exact:
            bad = np.flatnonzero(v.view(ub) != want_bits)
            assert bad.size == 0, (f"{tag}: value bits differ from the first occurrences at "
                                   f"{bad[:5].tolist()}: got {v.view(ub)[bad[:5]].tolist()}, "
                                   f"want {want_bits[bad[:5]].tolist()}")
        else:  # values only, long: NaN bits are the default NaN, the zero is the first zero's
            num = ~np.isnan(vals)
            bad = np.flatnonzero(v.view(ub)[num] != want_bits[num])
            assert bad.size == 0, f"{tag}: value bits differ (zero sign?) at {bad[:5].tolist()}"
        if wi:
            g = cp.asnumpy(got["indices"])
            assert g.dtype == np.int64 and g.shape == first.shape, tag
            bad = np.flatnonzero(g != first)
            assert bad.size == 0, (f"{tag}: first indices differ at {bad[:5].tolist()}: got "
                                   f"{g[bad[:5]].tolist()}, want {first[bad[:5]].tolist()}")
        if wv:
            g = cp.asnumpy(got["inverse_indices"])
            assert g.dtype == np.int64 and g.shape == (n,), f"{tag}: {g.dtype} {g.shape}"
            bad = np.flatnonzero(g != inv.reshape(-1))
            assert bad.size == 0, (f"{tag}: inverse differs at {bad[:5].tolist()}: got "
                                   f"{g[bad[:5]].tolist()}, want {inv.reshape(-1)[bad[:5]].tolist()}")
        if wc:
            g = cp.asnumpy(got["counts"])
            assert g.dtype == np.int64 and g.shape == counts.shape, tag
            bad = np.flatnonzero(g != counts)
            assert bad.size == 0, (f"{tag}: counts differ at {bad[:5].tolist()}: got "
                                   f"{g[bad[:5]].tolist()}, want {counts[bad[:5]].tolist()}")
            assert int(g.sum()) == n, tag



@pytest.mark.parametrize("width", K.KEY_WIDTHS)
def test_search_stage_stages_all_keys_or_a_sample_of_bucket_ends(width):
    """Every key staged while they fit _SEARCH_STAGE_BYTES; beyond, a sample of at most that
    many keys, one per bucket of ``stage`` elements, and the search inside a bucket. The model
    (NumPy: the first bucket whose last key satisfies the predicate, then a search inside it)
    gives np.searchsorted's answer on tied data, both sides, at every bucket boundary."""
    cap = K._SEARCH_STAGE_BYTES // width
    rng = np.random.default_rng(width)
    for n in (0, 1, cap - 1, cap, cap + 1, 3 * cap + 5, 1 << 20, 2**40 + 3):
        stage, smem = K.search_stage(n, width)
        assert smem <= K._SEARCH_STAGE_BYTES
        if n <= cap:
            assert (stage, smem) == (1, n * width)
            continue
        buckets = -(-n // stage)
        assert stage >= 2 and buckets <= cap and smem == buckets * width
        if n > 1 << 20:
            continue
        a = np.sort(rng.integers(0, n // 7 + 2, n))
        ends = a[np.minimum(np.arange(1, buckets + 1) * stage, n) - 1]
        q = np.concatenate([a[::97], ends, ends + 1, ends - 1, [-1, n]])
        for side in ("left", "right"):
            b = np.searchsorted(ends, q, side=side)  # the first bucket whose end satisfies
            lo = np.minimum(b * stage, n)
            got = np.array([lo[i] + np.searchsorted(a[lo[i]:min(lo[i] + stage, n)], v,
                                                    side=side) for i, v in enumerate(q)])
            np.testing.assert_array_equal(got, np.searchsorted(a, q, side=side),
                                          err_msg=f"{width} {n} {side}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "float32", "int64", "float64"])
def test_searchsorted_and_isin_over_a_sampled_stage(cp, dtype):
    """Sorted arrays too long to stage whole (the bucket-sample path): tied values across bucket
    boundaries, queries equal to bucket ends and between them, NaN and signed zeros."""
    rng = np.random.default_rng(_seed("sampled_search", dtype))
    width = np.dtype(dtype).itemsize
    cap = K._SEARCH_STAGE_BYTES // width
    for n in (cap + 1, 3 * cap + 5, 300_007):
        a = np.sort(_tied(rng, n, dtype), kind="stable")
        stage, _ = K.search_stage(n, width)
        assert stage >= 2
        ends = a[np.minimum(np.arange(1, -(-n // stage) + 1) * stage, n) - 1]
        q = np.concatenate([_tied(rng, 5000, dtype), ends, a[::13]])
        if np.dtype(dtype).kind == "f":
            q[:4] = [np.nan, -0.0, 0.0, -np.inf]
        ad, qd = cp.asarray(a), cp.asarray(q)
        for side in ("left", "right"):
            got = cp.asnumpy(K.searchsorted(cp, ad, qd, side))
            np.testing.assert_array_equal(got, np.searchsorted(a, q, side=side),
                                          err_msg=f"{dtype} n={n} {side}")
        got = cp.asnumpy(K.isin(cp, ad, qd, False))
        np.testing.assert_array_equal(got, np.isin(q, a), err_msg=f"isin {dtype} n={n}")

@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SORTED_UNIQUE_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, K.L_MAX, K.L_MAX + 1, 70000, 3_000_000])
@pytest.mark.parametrize("dups", ["many", "few"])
def test_sorted_unique_matches_numpy(cp, dtype, n, dups):
    rng = np.random.default_rng(_seed("sorted_unique", dtype, n, dups))
    a = _sorted_unique_data(rng, dtype, n, dups)
    _check_sorted_unique(cp, a, cp.asarray(a), f"{dtype} n={n} {dups}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SORTED_UNIQUE_DTYPES)
@pytest.mark.parametrize("n", [5, 4099, 70001])
def test_sorted_unique_misaligned_and_strided(cp, dtype, n):
    """A view starting 1 element into its buffer (not 16-byte aligned: the key pass's scalar
    path) and a strided view (copied to C order first)."""
    rng = np.random.default_rng(_seed("sorted_unique_views", dtype, n))
    base = _sorted_unique_data(rng, dtype, 2 * n + 1, "many")
    xb = cp.asarray(base)
    _check_sorted_unique(cp, base[1:n + 1], xb[1:n + 1], f"{dtype} n={n} offset 1")
    _check_sorted_unique(cp, base[::-2], xb[::-2], f"{dtype} n={n} stride -2")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SORTED_UNIQUE_DTYPES)
@pytest.mark.parametrize("n", [1, 2049, 70000, 3_000_000])
def test_sorted_unique_run_shapes(cp, dtype, n):
    """Runs that span many look-back tiles (all equal: one run; two halves), every element its
    own run (distinct ascending, descending), runs ending exactly at tile boundaries."""
    dt = np.dtype(dtype)
    cases = {"all equal": np.full(n, 3, dt),
             "two halves": np.concatenate([np.full(n // 2, 9, dt), np.full(n - n // 2, 2, dt)]),
             "ascending": np.arange(n).astype(dt), "descending": np.arange(n)[::-1].astype(dt),
             "tile runs": (np.arange(n) // K.UNIQUE_TILE).astype(dt)[::-1].copy()}
    if dt.kind == "f":
        cases["all nan"] = np.full(n, np.nan, dt)
        z = np.zeros(n, dt)
        z[::3] = -0.0  # -0.0 first: the zero value keeps its sign
        cases["zeros"] = z
        z2 = np.zeros(n, dt)
        z2[1::2] = -0.0  # +0.0 first
        cases["zeros+"] = z2
        cases["nan tail"] = np.concatenate([np.arange(n // 2).astype(dt),
                                            np.full(n - n // 2, np.nan, dt)])
    for label, a in cases.items():
        _check_sorted_unique(cp, a, cp.asarray(a), f"{dtype} n={n} {label}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("per_sm", [1, 4])
def test_sorted_unique_warps_of_many_rows(cp, monkeypatch, dtype, per_sm):
    """The two-pass runs with many rows a warp (UQ_WARPS_PER_SM lowered, the last warp
    short): a run crossing rows, tiles and warps amid distinct values, short runs, NaNs after
    the numbers; each too varied for the hash table, so the sort path serves it."""
    from xp_cuda._kernels._runtime import device_info
    monkeypatch.setattr(K, "UQ_WARPS_PER_SM", per_sm)
    n = 3_000_017
    warps, rpw = K.runs_warps(n, device_info(cp).sm_count)
    assert rpw >= 128 and warps * rpw * 32 > n, (warps, rpw)
    dt = np.dtype(dtype)
    rng = np.random.default_rng(_seed("sorted_unique_warps", dtype, per_sm))
    long_run = np.concatenate([np.arange(n // 2), np.full(n - n // 2, n // 5)]).astype(dt)
    cases = {"a long run": rng.permutation(long_run),
             "runs of 7": rng.permutation(np.arange(n) // 7).astype(dt)}
    if dt.kind == "f":
        nan_tail = rng.standard_normal(n).astype(dt)
        nan_tail[rng.integers(0, n, 5000)] = np.nan
        cases["NaNs"] = nan_tail
    for label, a in cases.items():
        _check_sorted_unique(cp, a, cp.asarray(a), f"{dtype} {per_sm} warps/SM {label}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_sorted_unique_small_result_is_a_compact_copy(cp):
    a = np.repeat(np.arange(10, dtype=np.int64), 10000)
    got = K.sorted_unique(cp, cp.asarray(a), False, True, True, True)
    for name in ("values", "indices", "counts"):
        arr = got[name]
        assert arr.size == 10 and arr.data.mem.size <= 4096, (name, arr.data.mem.size)
    np.testing.assert_array_equal(cp.asnumpy(got["counts"]), np.full(10, 10000))


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_replayed_programs_on_new_data_and_misaligned_views(cp):
    """A geometry's later calls replay its recorded program: new data each time, views that
    start off an allocation's alignment, a side stream."""
    rng = np.random.default_rng(5)
    for rep in range(3):
        stream = cp.cuda.Stream() if rep == 2 else cp.cuda.Stream.null
        for off in (0, 1, 3):
            with stream:
                a = _unique_data(rng, "int8", (off + 40,), "few")
                got = K.small_unique(cp, cp.asarray(a)[off:], True, True, True)
                vals, first, inv, counts = _unique_ref(a[off:])
                for key, ref in (("values", vals), ("indices", first),
                                 ("inverse_indices", inv), ("counts", counts)):
                    np.testing.assert_array_equal(cp.asnumpy(got[key]), ref,
                                                  err_msg=f"small_unique {key} rep {rep}")
                rows = _tied(rng, (off + 5 * 8,), "float32")
                v, i = K.segmented_sort(cp, cp.asarray(rows)[off:].reshape(5, 8), True, True)
                ref = np.argsort(rows[off:].reshape(5, 8), axis=-1, kind="stable")
                np.testing.assert_array_equal(cp.asnumpy(i), ref, err_msg=f"argsort rep {rep}")
                np.testing.assert_array_equal(cp.asnumpy(v).view(np.uint32), np.take_along_axis(
                    rows[off:].reshape(5, 8), ref, -1).view(np.uint32))
                srt = np.sort(_tied(rng, off + 50, "float64")[off:], kind="stable")
                full = np.concatenate([np.zeros(off), srt])
                q = _tied(rng, (off + 12,), "float64")
                got = K.searchsorted(cp, cp.asarray(full)[off:], cp.asarray(q)[off:], "right")
                np.testing.assert_array_equal(cp.asnumpy(got),
                                              np.searchsorted(srt, q[off:], side="right"))
                for n in (8, 3000):
                    b = rng.integers(-4, 4, off + n).astype(np.float32)
                    _check_sorted_unique(cp, b[off:], cp.asarray(b)[off:],
                                         f"replay rep {rep} off {off} n {n}")
        stream.synchronize()


# ---- recorded programs: a replay launches exactly what planning with its addresses would ----

@pytest.fixture
def rig(monkeypatch):
    from test_scan_kernels import ReplayRig
    r = ReplayRig(monkeypatch, [K])
    monkeypatch.setattr(K, "_smem_limit", lambda cp: 232448)
    monkeypatch.setattr(K, "_allow_smem", lambda cp, kern, smem: None)
    yield r
    r.cache.clear()  # programs of fake kernels must not outlive the test


def test_replayed_sort_programs_match_direct_planning(rig):
    cp = rig.cp
    b = np.empty((64, 80), np.float32)
    for a, v, side in ((np.empty(8, np.float32), np.empty(8, np.float32), "left"),
                       (np.empty(100000, np.int64), np.empty((3, 7), np.int64), "right"),
                       (np.empty(50, np.float32), b[::3, 1::2], "right")):
        log = rig.check(lambda base: K.searchsorted(cp, rig.array(a, base + 4),
                                                    rig.array(v, base + (1 << 24)), side))
        assert [e[0] for e in log][-1] == f"xp_searchsorted_{a.itemsize}"
    for like in (np.empty((5, 8), np.float32), np.empty((3, 1000), np.int16),
                 np.empty((2, 9000), np.float64)):
        for want in ((True, False), (False, True), (True, True)):
            rig.check(lambda base: K.segmented_sort(cp, rig.array(like, base), *want))
    for like in (np.empty(8, np.int8), np.empty((30, 7), np.uint16), np.empty(100, bool),
                 np.empty((64, 80), np.int8)[::2, ::10]):
        for want in ((False, False, False), (True, True, True), (True, False, True)):
            log = rig.check(lambda base: K.small_unique(cp, rig.array(like, base + 2), *want))
            assert [e[1] for e in log if e[0] == "memcpy"][-1] == "pinned"  # the one read
    for like in (np.empty(8, np.float32), np.empty(3000, np.int64), np.empty(70, np.uint32)):
        for want in ((True, False, False, False), (False, True, True, True),
                     (False, False, False, True)):
            log = rig.check(lambda base: K.sorted_unique(cp, rig.array(like, base), *want))
            names = [e[0] for e in log]
            assert names[-2].startswith("xp_sortuniq_runs") and names[0] == "memset"
    # one program per geometry and wants; a second call replays
    rig.recorded.clear()
    rig.cache.clear()
    x = np.empty(8, np.float32)
    for off in (0, 0, 16, 4):
        K.searchsorted(cp, rig.array(x, 0x30000000 + off), rig.array(x, 0x40000000), "left")
    assert len(rig.recorded) == 2, rig.recorded


# ---- hash_unique: few distinct values, no sort -------------------------------------------------

def test_every_hash_kernel_has_a_compile_unit():
    units = K.units()
    for w in K.UNIQUE_WIDTHS:
        for k in ("count", "finish", "inverse"):
            assert f"HASHUNIQ({w}," in units[f"xp_hashuniq_{k}_{w}"]


@pytest.mark.parametrize("width", K.UNIQUE_WIDTHS)
@pytest.mark.parametrize("n", [1, 2, 5, 2047, 2048, 2049, K.L_MAX + 1, 70001, 3_000_000,
                               2**31 + 7, 2**33 + 3])
@pytest.mark.parametrize("sms", [1, 78, 132])
def test_plan_hash_unique_chunks_and_scratch_layout(width, n, sms):
    p = K.plan_hash_unique(n, width, sms)
    vec = 16 // width
    # every element in exactly one block's chunk, every block with elements, vector-aligned
    # chunk starts, offsets within a chunk in 32 bits
    assert p.chunk % vec == 0 and p.chunk < 2**32
    assert p.blocks * p.chunk >= n > (p.blocks - 1) * p.chunk
    per_sm = {4: 4, 8: 2}[width]  # one wave of what the shared tables let reside
    assert 1 <= p.blocks <= per_sm * sms or p.chunk > 2**30
    # a block takes enough elements to meet HQ_MAX + 1 distinct keys alone (a refusal seen
    # in the block, not by every block merging its table), unless n itself is smaller
    assert p.chunk >= min(n, K.HQ_MIN_CHUNK) and p.chunk >= K.HQ_MAX + 1 or n <= K.HQ_MAX
    # the block's shared table: keys, counts, first offsets, then its 20-byte state
    assert p.smem == K.HQ_SLOTS * (width + 4 + 4) + 20
    # scratch: {abort, claims} (8), nuniq (8), counts, then the all-ones part from the
    # largest integer's first: {its count (zeroed), its first, the float zero's first, pad},
    # first indices, keys; then the slots' ranks
    assert p.counts_off == 16 and p.max_off == p.counts_off + 8 * K.HQ_SLOTS
    assert p.zero_bytes == p.max_off + 8
    assert p.first_off == p.max_off + 32 and p.keys_off == p.first_off + 8 * K.HQ_SLOTS
    assert p.keys_off % 16 == 0 and p.rank_off % 16 == 0
    assert p.ff_end == p.rank_off == p.keys_off + width * K.HQ_SLOTS
    assert p.total == p.rank_off + 4 * K.HQ_SLOTS
    assert p.inverse_smem == K.HQ_SLOTS * (width + 4) <= 49152  # no opt-in needed
    assert K.HQ_MAX * 2 == K.HQ_SLOTS


def _few_distinct(rng, dtype, n, k):
    """n elements drawn from k distinct values of dtype (floats: no NaN; -0.0 and +0.0 both,
    infinities; integers: the dtype's extremes among them)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        pool = np.unique((rng.standard_normal(4 * k) * 1e3).astype(dt))[:max(k - 4, 1)]
        pool = np.concatenate([pool, np.array([np.inf, -np.inf, 0.0], dt)])
    else:
        info = np.iinfo(dt)
        pool = np.unique(rng.integers(info.min, info.max, size=4 * k, dtype=dt,
                                      endpoint=True))[:max(k - 2, 1)]
        pool = np.concatenate([pool, np.array([info.min, info.max], dt)])
    pool = np.unique(pool)[:k]
    a = pool[rng.integers(0, pool.size, n)]
    if dt.kind == "f":
        a[rng.random(n) < 0.05] = -0.0
    return a


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SORTED_UNIQUE_DTYPES)
@pytest.mark.parametrize("n,k", [(K.L_MAX + 1, 3), (70001, 1000), (3_000_000, 1000),
                                 (3_000_000, K.HQ_MAX), (1 << 20, 1)])
def test_hash_unique_serves_few_distinct_values(cp, dtype, n, k):
    """hash_unique answers (no sort) for at most HQ_MAX distinct values and no NaN, every
    part exact (values bitwise: the first occurrence's, -0.0 included), and sorted_unique
    (which tries it first) agrees."""
    rng = np.random.default_rng(_seed("hash_unique", dtype, n, k))
    a = _few_distinct(rng, dtype, n, k)
    assert np.unique(a).size <= K.HQ_MAX
    x = cp.asarray(a)
    vals, first, inv, counts = _unique_flat_ref(a)
    for wi, wv, wc in ((False, False, False), (True, True, True), (False, True, False),
                       (False, False, True)):
        got = K.hash_unique(cp, x, wi, wv, wc)
        assert got is not None, f"{dtype} n={n} k={k}: refused"
        v = cp.asnumpy(got["values"])
        ub = f"u{a.dtype.itemsize}"
        assert v.dtype == a.dtype and np.array_equal(v.view(ub), a[first].view(ub)), dtype
        if wi:
            assert np.array_equal(cp.asnumpy(got["indices"]), first)
        if wv:
            assert np.array_equal(cp.asnumpy(got["inverse_indices"]), inv.reshape(-1))
        if wc:
            assert np.array_equal(cp.asnumpy(got["counts"]), counts)
    _check_sorted_unique(cp, a, x, f"{dtype} n={n} k={k}")
    # a misaligned view: the scalar loads
    xb = cp.asarray(np.concatenate([a[:1], a]))
    _check_sorted_unique(cp, a, xb[1:], f"{dtype} n={n} k={k} offset 1")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", K.SORTED_UNIQUE_DTYPES)
def test_hash_unique_refuses_and_sorted_unique_still_answers(cp, dtype):
    """More than HQ_MAX distinct values (in one block's chunk, or only across blocks: each
    chunk of a sorted input holds few), or a NaN: hash_unique returns None and sorted_unique
    gives NumPy's answer through the sort."""
    rng = np.random.default_rng(_seed("hash_refuse", dtype))
    dt = np.dtype(dtype)
    n = 3_000_000
    # HQ_MAX + 2: the integers' largest value is counted beside the table
    cases = {"HQ_MAX + 2 distinct": _few_distinct(rng, dtype, n, K.HQ_MAX + 2),
             "sorted, many distinct": np.sort(rng.integers(0, 50_000, n)).astype(dt),
             "all distinct": rng.permutation(n).astype(dt)}
    if dt.kind == "f":
        nan = _few_distinct(rng, dtype, n, 10)
        nan[n // 2] = np.nan
        cases["one NaN"] = nan
    for label, a in cases.items():
        if label.startswith("HQ_MAX") and np.unique(a).size < K.HQ_MAX + 2:
            continue  # the draw missed a value: not this case
        x = cp.asarray(a)
        for wi, wv, wc in ((False, False, False), (True, True, True)):
            assert K.hash_unique(cp, x, wi, wv, wc) is None, f"{dtype} {label}"
        _check_sorted_unique(cp, a, x, f"{dtype} {label}")


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", [d for d in K.SORTED_UNIQUE_DTYPES if np.dtype(d).kind in "iu"])
def test_hash_unique_serves_one_more_integer_beside_the_table(cp, dtype):
    """HQ_MAX + 1 distinct integers, the dtype's largest among them, in every block's chunk:
    the table holds HQ_MAX and counts the largest beside it, so hash_unique answers."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    rng = np.random.default_rng(_seed("hash_unique_beside", dtype))
    pool = np.unique(rng.integers(info.min, info.max, size=4 * K.HQ_MAX, dtype=dt))
    pool = np.concatenate([rng.permutation(pool)[:K.HQ_MAX], np.array([info.max], dt)])
    assert np.unique(pool).size == K.HQ_MAX + 1
    n = 3_000_000
    a = np.tile(rng.permutation(pool), -(-n // pool.size))[:n]
    x = cp.asarray(a)
    vals, first, inv, counts = _unique_flat_ref(a)
    got = K.hash_unique(cp, x, True, True, True)
    assert got is not None, f"{dtype}: refused"
    assert np.array_equal(cp.asnumpy(got["values"]), vals)
    assert np.array_equal(cp.asnumpy(got["indices"]), first)
    assert np.array_equal(cp.asnumpy(got["inverse_indices"]), inv.reshape(-1))
    assert np.array_equal(cp.asnumpy(got["counts"]), counts)


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_sorted_unique_after_either_verdict(cp, dtype):
    """Long inputs of few values and of many, alternating: after many values the next input
    goes straight to the sort (few values then take the sort once, and their count sends the
    next to the table), after few it tries the table (many values: refused, then sorted).
    Every order of the two, each result NumPy's; the guess follows the last count."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(_seed("after_either_verdict", dtype))
    n = 1_500_003
    few = _few_distinct(rng, dtype, n, 100)
    many = rng.permutation(n).astype(dt)
    x_few, x_many = cp.asarray(few), cp.asarray(many)
    for step, refused in enumerate((False, True, True, False, False, True, False)):
        a, x = (many, x_many) if refused else (few, x_few)
        _check_sorted_unique(cp, a, x, f"{dtype} step {step}")
        assert K._REFUSED[0] is refused, (dtype, step)
