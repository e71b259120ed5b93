"""vecdot's CUDA kernel (xp_cuda/_kernels/vecdot.cu) against the NumPy reference.

Behaviour tests run on every device (the cpu half checks the reference path itself); the
launcher's layout planning is checked in pure Python; every dtype combination the launcher can
generate is compiled with NVRTC (no GPU needed).
"""
import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import xp_cuda as xp
from helpers import NUMERIC, random_array, random_numpy, to_numpy
from xp_cuda._devices import cuda_device_count
from xp_cuda._dtypes import PROMOTION_TABLE, promote
from xp_cuda._kernels import SOURCE_DIR, nvrtc_compile
from xp_cuda._kernels import vecdot as vk

PAIRS = sorted(((a, b) for (a, b) in PROMOTION_TABLE if a in NUMERIC and b in NUMERIC),
               key=lambda p: (p[0].name, p[1].name))
_ids = [f"{a.name}-{b.name}" for a, b in PAIRS]
needs_gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="needs a usable CUDA GPU")


from helpers import nvrtc_missing as _nvrtc_missing  # noqa: E402  (one skip reason for compile tests)


# ---- NVRTC: every variant the launcher can produce compiles (CI, no GPU) ---------------------

@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_nvrtc_compiles_every_dtype_combination(pair):
    a, b = pair
    opts = vk.compile_options(a.name, b.name, promote(a, b).name)
    ptx = nvrtc_compile((SOURCE_DIR / "vecdot.cu").read_text(), "vecdot.cu", options=opts)
    for kernel in ("main", "vec", "vecout", "rows", "rowsb", "finish"):
        assert f".entry vecdot_{kernel}(" in ptx


def test_launcher_covers_every_numeric_pair():
    assert len(PAIRS) == 72
    for a, b in PAIRS:
        opts = vk.compile_options(a.name, b.name, promote(a, b).name)
        assert len(opts) == 5 and opts[-2] in ("-DUNROLL=2", "-DUNROLL=4", "-DUNROLL=8")
        assert opts[-1] in ("-DVEC=1", "-DVEC=2", "-DVEC=4")


# ---- layout planning, checked in NumPy (no GPU) ------------------------------------------------

def _emulate(a, b, axis):
    """What the kernel computes for plan_layout's description, read back through as_strided
    from the original buffers (byte strides, broadcast 0, negative allowed)."""
    lay = vk.plan_layout(a.shape, a.strides, b.shape, b.strides, axis)
    buf = np.zeros(lay.M, np.result_type(a, b))
    if lay.M:
        va = as_strided(a, tuple(lay.shape) + (lay.K,), tuple(lay.s1) + (lay.ks1,))
        vb = as_strided(b, tuple(lay.shape) + (lay.K,), tuple(lay.s2) + (lay.ks2,))
        buf[:] = (np.conj(va) * vb).sum(-1).reshape(-1)
    return vk.output_view(buf, lay), lay


def _variants(a):
    """The same values as a, in other memory layouts (views of bigger/reordered buffers)."""
    yield a
    if a.ndim >= 2:
        yield np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)   # transposed memory
    yield np.repeat(a, 2, axis=-1)[..., ::2] if a.ndim else a             # step slice
    yield np.flip(np.flip(a).copy())                                        # negative strides


PLAN_CASES = [((5,), (5,), -1), ((4, 1, 5), (3, 5), -1), ((2, 5, 3), (5, 3), -2),
              ((7, 3, 4), (7, 3, 4), -2), ((2, 3, 4, 5), (3, 1, 5), -1), ((6,), (3, 6), -1),
              ((1, 1, 4), (1, 4), -1), ((0, 3), (0, 3), -1), ((3, 0), (3, 0), -1),
              ((2, 1, 3, 4), (1, 5, 3, 4), -2), ((3, 1, 2, 2), (1, 4, 1, 2), -1)]


@pytest.mark.parametrize("case", PLAN_CASES, ids=str)
def test_plan_layout_reads_the_right_elements(case, rng):
    s1, s2, axis = case
    a = rng.standard_normal(s1) + 1j * rng.standard_normal(s1)
    b = rng.standard_normal(s2)
    for va in _variants(a):
        for vb in _variants(b):
            got, lay = _emulate(va, vb, axis)
            ref = np.vecdot(va, vb, axis=axis)
            assert got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
            assert len(lay.shape) <= len(lay.out_shape)


def test_plan_merges_and_orders_dims(rng):
    x = rng.standard_normal((5, 6, 7, 8))
    lay = vk.plan_layout(x.shape, x.strides, x.shape, x.strides, -1)
    assert lay.shape == [210] and lay.s1 == [64] and lay.perm == [0, 1, 2]
    t = x.transpose(2, 1, 0, 3)  # batch axes in reverse memory order
    got, lay = _emulate(t, t, -1)
    assert lay.shape == [210] and lay.perm == [2, 1, 0]  # walked in memory order
    np.testing.assert_allclose(got, np.vecdot(t, t))
    b = np.broadcast_to(rng.standard_normal(8), (5, 6, 7, 8))  # stride-0 batch dims
    lay = vk.plan_layout(x.shape, x.strides, b.shape, b.strides, -1)
    assert lay.shape == [210] and lay.s2 == [0] and lay.ks2 == 8


def _contig(shape, itemsize):
    st, acc = [], itemsize
    for n in reversed(shape):
        st.insert(0, acc)
        acc *= n
    return tuple(st)


BENCH_SHAPES = [((2**28,), -1, 4), ((2**24, 3), -1, 4), ((2**22, 64), -1, 4),
                ((64, 2**22), -2, 4), ((2**14, 2**14), -1, 4), ((2**22, 32), -1, 8),
                ((10**7,), -1, 4), ((3, 10**6), -1, 4), ((2**24, 4), -2, 4),
                ((1000, 10**6), -2, 4), ((7, 3), -1, 16), ((1, 1), -1, 1)]


@pytest.mark.parametrize("resident", [132 * 4, 132 * 5, 132 * 8, 7])
@pytest.mark.parametrize("case", BENCH_SHAPES, ids=str)
def test_choose_config_invariants(case, resident):
    shape, axis, it = case
    lay = vk.plan_layout(shape, _contig(shape, it), shape, _contig(shape, it), axis)
    for variant in vk.eligible_variants(lay, it, it, 256, 512):
        cfg = vk.choose_config(lay, it, it, resident, variant)
        assert cfg.variant == variant
        assert 1 <= cfg.S <= 65535 and cfg.S * cfg.chunk >= lay.K > (cfg.S - 1) * cfg.chunk
        per_block = {"vecout": vk.THREADS * vk.vec_for(it, it),
                     "rows": vk.THREADS * vk.rows_group(lay.K, it, it)[0],
                     "rowsb": vk.THREADS * vk.rowsb_group(lay.K, it)[0]}.get(
                         variant, vk.THREADS >> cfg.lg)
        assert cfg.blocks * per_block >= lay.M > (cfg.blocks - 1) * per_block
        assert 0 <= cfg.lg <= 8 and cfg.kfast in (0, 1)
        if variant == "vec":
            assert cfg.kfast and cfg.chunk % vk.vec_for(it, it) == 0  # splits stay aligned
        if cfg.S > 1 and variant == "main":
            assert cfg.chunk % (cfg.G * vk.unroll_for(it, it)) == 0  # whole rounds per split
        if lay.M == 1 and lay.K >= 2**20:
            assert cfg.S > 1 and cfg.G == vk.THREADS and cfg.S <= resident


def test_choose_config_picks_the_intended_variants():
    def cfg(shape, axis, it=4, ptr=256):
        lay = vk.plan_layout(shape, _contig(shape, it), shape, _contig(shape, it), axis)
        variant = vk.pick_variant(lay, it, it, ptr, ptr)
        return vk.choose_config(lay, it, it, 132 * 5, variant)
    long = cfg((2**28,), -1)
    assert long.variant == "vec" and long.G == 256 and long.S >= 132 * 4  # split + 2nd pass
    assert cfg((2**24, 3), -1).variant == "rows"                          # short rows
    medium = cfg((2**22, 64), -1)
    assert medium.variant == "vec" and 1 < medium.G <= 32 and medium.S == 1  # lanes per row
    col = cfg((64, 2**22), -2)
    assert col.variant == "vecout" and col.S == 1                         # coalesced outputs
    few = cfg((2**24, 4), -2)
    assert few.variant == "main" and not few.kfast and few.G == 64 and few.S > 1  # split K
    # Misaligned base pointers (a view starting at element 1) fall back to the scalar kernel.
    assert cfg((2**22, 64), -1, ptr=260).variant == "main"
    assert cfg((2**24, 3), -1, ptr=260).variant == "main"
    assert cfg((2**24, 3), -1, it=8).variant == "main"  # 24-byte rows: not the rows kernel
    assert cfg((2**24, 15), -1, it=1).variant == "main"  # 15 + 15 words per thread: too many

    def times_vector(shape, it=4, ptr=256):  # a matrix times one row (matmul's vecdot route)
        lay = vk.plan_layout(shape, _contig(shape, it), shape[-1:], _contig(shape[-1:], it), -1)
        return vk.choose_config(lay, it, it, 132 * 5, vk.pick_variant(lay, it, it, ptr, ptr))
    for shape, it in (((2**24, 4), 4), ((2**24, 3), 4), ((2**24, 1), 4), ((2**24, 2), 8)):
        c = times_vector(shape, it)
        assert c.variant == "rowsb", (shape, it)
        G = vk.rowsb_group(shape[1], it)[0]
        assert c.blocks * vk.THREADS * G >= shape[0] > (c.blocks - 1) * vk.THREADS * G
    assert times_vector((2**24, 8)).variant == "vec"  # 32-byte rows: not the rows kernels
    assert times_vector((2**24, 4), ptr=260).variant == "main"  # x1 misaligned
    assert vk.rowsb_group(3, 4) == (4, 3) and vk.rowsb_group(4, 4) == (1, 1)


def test_rows_group():
    """Rows per thread and 16-byte words loaded, as vecdot.cu's rows_k computes them."""
    assert vk.rows_group(3, 4, 4) == (4, 6)      # (16M, 3) float32: 4 rows = 3 words each
    assert vk.rows_group(1, 16, 16) == (1, 2)    # complex128 scalars
    assert vk.rows_group(3, 1, 1) == (16, 6)     # int8 rows of 3
    assert vk.rows_group(2, 1, 8) == (8, 9)      # int8 with int64: the narrower needs 8 rows
    assert vk.rows_group(4, 4, 2) == (2, 3)


# ---- behaviour on every device against NumPy --------------------------------------------------

def _reference(a1, a2, axis, rdtype):
    """Exact (modular) for integers, float64/complex128 for floating; x1 conjugated."""
    if rdtype.kind in ("int", "uint"):
        p = a1.astype(rdtype._np) * a2.astype(rdtype._np)
        return np.sum(p, axis=axis, dtype=rdtype._np)
    wide = np.complex128 if rdtype.kind == "complex" else np.float64
    return np.sum(np.conj(a1.astype(wide)) * a2.astype(wide), axis=axis)


def _check(out, a1, a2, axis, rdtype):
    assert out.dtype == rdtype
    ref = _reference(a1, a2, axis, rdtype)
    got = to_numpy(out)
    assert got.shape == ref.shape
    if rdtype.kind in ("int", "uint"):
        np.testing.assert_array_equal(got, ref)
        return
    scale = np.sum(np.abs(a1.astype(np.complex128)) * np.abs(a2.astype(np.complex128)),
                   axis=axis)
    eps = 1e-6 if rdtype in (xp.float32, xp.complex64) else 1e-13
    assert np.all(np.abs(got - ref) <= eps * (scale + 1)), np.max(np.abs(got - ref))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_every_dtype(device, rng, dtype):
    for s1, s2, axis in (((7, 1, 37), (5, 37), -1), ((3, 37, 5), (37, 1), -2),
                         ((101,), (101,), -1)):
        x1, a1 = random_array(rng, s1, dtype, device)
        x2, a2 = random_array(rng, s2, dtype, device)
        _check(xp.vecdot(x1, x2, axis=axis), a1, a2, axis, dtype)
    assert xp.linalg.vecdot is xp.vecdot


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_mixed_dtype_pairs(device, rng, pair):
    d1, d2 = pair
    x1, a1 = random_array(rng, (3, 4, 19), d1, device)
    x2, a2 = random_array(rng, (4, 19), d2, device)
    _check(xp.vecdot(x1, x2), a1, a2, -1, promote(d1, d2))


def test_integer_wraparound(device):
    a = np.full(1000, 100, dtype=np.int8)
    b = np.full(1000, 200, dtype=np.uint8)   # int16 result: 1000 * 20000 wraps
    out = xp.vecdot(xp.asarray(a, device=device), xp.asarray(b, device=device))
    v = (1000 * 20000) % 2**16
    assert out.dtype == xp.int16 and int(out) == (v - 2**16 if v >= 2**15 else v)
    u = np.full(3, 2**63 + 5, dtype=np.uint64)
    out = xp.vecdot(xp.asarray(u, device=device), xp.asarray(u, device=device))
    assert int(out) == (3 * (2**63 + 5) ** 2) % 2**64


@pytest.mark.parametrize("dtype", [xp.float64, xp.int32, xp.complex64], ids=str)
def test_odd_sizes(device, rng, dtype):
    for K in (1, 2, 3, 5, 8, 9, 31, 33, 255, 257, 1000, 4097):
        for M in (1, 3, 65):
            x1, a1 = random_array(rng, (M, K), dtype, device)
            x2, a2 = random_array(rng, (M, K), dtype, device)
            _check(xp.vecdot(x1, x2), a1, a2, -1, dtype)
            y1, b1 = random_array(rng, (K, M), dtype, device)
            _check(xp.vecdot(y1, x2.mT, axis=-2), b1, a2.T, -2, dtype)


def _strided_cases(rng, dtype, device):
    """(x1, x2, axis, a1, a2): views whose values the NumPy copies a1, a2 hold."""
    x, a = random_array(rng, (6, 9, 40), dtype, device)
    y, b = random_array(rng, (9, 40), dtype, device)
    yield x, y, -1, a, b
    yield x[:, ::2, ::-3], y[::2, ::-3], -1, a[:, ::2, ::-3], b[::2, ::-3]      # steps
    yield x[::-1, 1:, 3:], y[1:, 3:], -2, a[::-1, 1:, 3:], b[1:, 3:]              # axis -2
    p = xp.permute_dims(x, (2, 0, 1))                                            # transposes
    yield p, xp.permute_dims(y, (1, 0))[:, None, :], -1, \
        np.transpose(a, (2, 0, 1)), np.transpose(b)[:, None, :]
    yield x.mT, y.mT, -2, np.swapaxes(a, -1, -2), b.T
    yield x, xp.broadcast_to(y, (6, 9, 40)), -1, a, np.broadcast_to(b, (6, 9, 40))
    v, c = random_array(rng, (40,), dtype, device)
    yield v, x, -1, c, a                                                         # ranks 1 and 3
    yield x[:, :, None, :], x[:, None, :, :], -1, a[:, :, None, :], a[:, None, :, :]  # outer
    z, d = random_array(rng, (1, 1, 9, 1, 40), dtype, device)
    yield z, x[:, None, :, None, :], -1, d, a[:, None, :, None, :]               # size-1 dims


@pytest.mark.parametrize("dtype", [xp.float32, xp.int16, xp.complex128], ids=str)
def test_broadcast_and_strided(device, rng, dtype):
    for x1, x2, axis, a1, a2 in _strided_cases(rng, dtype, device):
        _check(xp.vecdot(x1, x2, axis=axis), a1, a2, axis, dtype)


def test_mixed_strided(device, rng):
    x, a = random_array(rng, (5, 50, 8), xp.float32, device)
    y, b = random_array(rng, (50, 8), xp.complex128, device)
    _check(xp.vecdot(x[:, ::-1, :], y[::-1, :], axis=-2), a[:, ::-1], b[::-1], -2,
           xp.complex128)
    _check(xp.vecdot(y[::-1, :], x[:, ::-1, :], axis=-2), b[::-1], a[:, ::-1], -2,
           xp.complex128)


def test_empty(device):
    for s1, s2, dtype in (((2, 0), (2, 0), xp.float32), ((0,), (0,), xp.complex64),
                          ((3, 1, 0), (4, 0), xp.int8)):
        out = xp.vecdot(xp.ones(s1, dtype=dtype, device=device),
                        xp.ones(s2, dtype=dtype, device=device))
        ref = np.zeros(np.broadcast_shapes(s1[:-1], s2[:-1]), dtype._np)
        assert out.dtype == dtype and out.shape == ref.shape
        np.testing.assert_array_equal(to_numpy(out), ref)
    for s1, s2, axis in (((0, 5), (0, 5), -1), ((3, 0, 5), (1, 5), -1), ((5, 0), (5, 1), -2),
                         ((0, 0), (0, 0), -1)):
        out = xp.vecdot(xp.ones(s1, device=device), xp.ones(s2, device=device), axis=axis)
        assert out.shape == tuple(np.broadcast_shapes(
            s1[:len(s1) + axis] + s1[len(s1) + axis + 1:],
            s2[:len(s2) + axis] + s2[len(s2) + axis + 1:]))
        assert out.dtype == xp.float64


def test_zero_d_result_and_conjugate(device):
    x1 = xp.asarray([1 + 2j, 3 - 1j], device=device)
    x2 = xp.asarray([2 - 1j, 1j], device=device)
    out = xp.vecdot(x1, x2)
    assert out.shape == () and complex(out) == (1 - 2j) * (2 - 1j) + (3 + 1j) * 1j
    r = xp.vecdot(xp.asarray([1.0, 2.0], device=device), x2)   # real x1: nothing to conjugate
    assert complex(r) == 2 - 1j + 2j


# ---- cuda only: accuracy, every variant, determinism -----------------------------------------

@pytest.mark.cuda
@needs_gpu
def test_long_contraction_accuracy_float32(rng):
    n = 10**7
    a = rng.standard_normal(n).astype(np.float32) + np.float32(0.5)  # non-zero mean: no
    b = rng.standard_normal(n).astype(np.float32) + np.float32(0.5)  # cancellation to hide in
    x1 = xp.asarray(a, device=_cuda())
    x2 = xp.asarray(b, device=_cuda())
    got = float(xp.vecdot(x1, x2))
    ref = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
    assert abs(got - ref) <= 1e-5 * abs(ref), (got, ref)
    c = (a + 1j * b).astype(np.complex64)
    got = complex(xp.vecdot(xp.asarray(c, device=_cuda()), xp.asarray(c[::-1], device=_cuda())))
    ref = complex(np.vdot(c.astype(np.complex128), c[::-1].astype(np.complex128)))
    assert abs(got - ref) <= 1e-5 * abs(ref)


def _cuda():
    from xp_cuda._devices import Device
    return Device("cuda", 0)


def _all_configs(lay, it1, it2, ptr1, ptr2):
    """Every kernel that can run this layout, with several group widths and splits each."""
    variants = vk.eligible_variants(lay, it1, it2, ptr1, ptr2)
    for variant in variants:
        if variant in ("rows", "rowsb", "vecout"):
            yield vk.choose_config(lay, it1, it2, 10**6, variant)  # no split
            if variant == "vecout":
                yield vk.choose_config(lay, it1, it2, 10**9, variant)  # forced split
            continue
        u = vk.vec_for(it1, it2) * vk.VU if variant == "vec" else vk.unroll_for(it1, it2)
        for kfast in ((1,) if variant == "vec" else (0, 1)):
            for lg in (0, 1, 3, 5, 6, 8):
                G = 1 << lg
                blocks = -(-lay.M // (vk.THREADS >> lg))
                for S in (1, 2, 5):
                    chunk = lay.K
                    if S > 1:
                        chunk = -(-(-(-lay.K // S)) // (G * u)) * (G * u)
                    S_eff = -(-lay.K // chunk) if chunk else 1
                    yield vk.Config(lg, kfast, S_eff, chunk, blocks, variant)


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", [xp.float64, xp.complex64, xp.int64], ids=str)
def test_every_variant_agrees(rng, dtype):
    import cupy as cp
    cases = [((37, 300), (300,), -1), ((300, 37), (300, 1), -2), ((4, 5, 1000), (5, 1000), -1),
             ((8, 1030), (8, 1030), -2), ((1001, 2), (1001, 2), -1), ((3, 4099), (3, 4099), -1),
             ((1001, 2), (2,), -1), ((999, 1), (1,), -1)]  # rows times one row: rowsb
    seen = set()
    for s1, s2, axis in cases:
        a1, a2 = random_numpy(rng, s1, dtype), random_numpy(rng, s2, dtype)
        c1, c2 = cp.asarray(a1), cp.asarray(a2)
        lay = vk.plan_layout(c1.shape, c1.strides, c2.shape, c2.strides, axis)
        ref = _reference(a1, a2, axis, dtype)
        for cfg in _all_configs(lay, c1.itemsize, c2.itemsize, c1.data.ptr, c2.data.ptr):
            seen.add(cfg.variant)
            got = cp.asnumpy(vk.vecdot_cuda(c1, c2, axis, dtype._np, config=cfg))
            if dtype.kind == "int":
                np.testing.assert_array_equal(got, ref, err_msg=str(cfg))
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max(),
                                           err_msg=str(cfg))
    assert seen == {"main", "vec", "vecout", "rows", "rowsb"}


@pytest.mark.parametrize("pair", [(xp.float32, xp.float32), (xp.int8, xp.int8),
                                  (xp.complex64, xp.complex64), (xp.float64, xp.float64),
                                  (xp.int8, xp.int64), (xp.uint16, xp.int32),
                                  (xp.float32, xp.complex64), (xp.int16, xp.int16)], ids=str)
def test_short_rows(device, rng, pair):
    """Every row length of the rows kernels (16 bytes or less per input; where 16-byte aligned),
    row counts that leave a partial group for the last thread, misaligned starts; rows times
    rows, and rows times one row."""
    d1, d2 = pair
    rdtype = xp.result_type(d1, d2)
    longest = 16 // max(np.dtype(d1._np).itemsize, np.dtype(d2._np).itemsize)
    for K in range(1, longest + 1):
        for M in (1, 7, 1027, 5003):
            x1, a1 = random_array(rng, (M, K), d1, device)
            x2, a2 = random_array(rng, (M, K), d2, device)
            _check(xp.vecdot(x1, x2), a1, a2, -1, rdtype)
            _check(xp.vecdot(x1[1:, :], x2[1:, :]), a1[1:], a2[1:], -1, rdtype)  # misaligned start
            # every row times one row (the rowsb kernel: x2 held, x1's rows up to 16 bytes)
            y2, b2 = random_array(rng, (K,), d2, device)
            _check(xp.vecdot(x1, y2), a1, b2, -1, rdtype)
            _check(xp.vecdot(x1[1:, :], y2), a1[1:], b2, -1, rdtype)
            if d1 == d2 and d1 in (xp.float32, xp.float64):  # matmul's route to it
                _check(x1 @ y2, a1, b2, -1, rdtype)


@pytest.mark.cuda
@needs_gpu
def test_split_is_deterministic_and_exact_for_integers(rng):
    a = rng.integers(-128, 128, 3 * 10**6).astype(np.int8)
    b = rng.integers(0, 256, 3 * 10**6).astype(np.uint8)
    x1, x2 = xp.asarray(a, device=_cuda()), xp.asarray(b, device=_cuda())
    out = xp.vecdot(x1, x2)
    assert int(out) == int(np.sum(a.astype(np.int16) * b.astype(np.int16), dtype=np.int16))
    f = rng.standard_normal(2**22)
    y = xp.asarray(f, device=_cuda())
    first = float(xp.vecdot(y, y))
    assert all(float(xp.vecdot(y, y)) == first for _ in range(3))
    assert abs(first - float(np.dot(f, f))) <= 1e-12 * float(np.dot(f, f))


@pytest.mark.cuda
@needs_gpu
def test_more_batch_dims_than_one_launch_walks(monkeypatch, rng):
    monkeypatch.setattr(vk, "_walk_max", 1)
    a = random_numpy(rng, (3, 1, 4, 1, 17), xp.float64)
    b = random_numpy(rng, (1, 5, 1, 2, 17), xp.float64)
    lay = vk.plan_layout(a.shape, a.strides, b.shape, b.strides, -1)
    assert len(lay.shape) == 4  # nothing merges: broadcast dims alternate
    out = xp.vecdot(xp.asarray(a, device=_cuda()), xp.asarray(b, device=_cuda()))
    _check(out, a, b, -1, xp.float64)


@pytest.mark.cuda
@needs_gpu
def test_no_materialised_copies(rng):
    """A broadcast input of 64 MiB view over 64 KiB: the call allocates about the output only."""
    import cupy as cp
    pool = cp.get_default_memory_pool()
    row = xp.asarray(random_numpy(rng, (1, 2**14), xp.float32), device=_cuda())
    big = xp.broadcast_to(row, (2**10, 2**14))
    other = xp.asarray(random_numpy(rng, (2**10, 2**14), xp.float32), device=_cuda())
    xp.vecdot(big, other)  # compile and warm the pool
    cp.cuda.Device().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()
    out = xp.vecdot(big, other.mT.mT)
    assert pool.total_bytes() - before <= 2 * 2**10 * 4 + 2**20
    assert math.isfinite(float(out[0]))
