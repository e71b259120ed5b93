"""The fused compiler's planning (fusion_plan), the eager reduction entry and the launcher's
per-thread parameter blocks, checked on the CPU: no NVRTC, no GPU."""
import math
import threading
import types

import numpy as np

import pytest

import xp_cuda as xp
from xp_cuda._devices import CPU
from xp_cuda._kernels import fusion as kfusion
from xp_cuda._kernels import fusion_plan as fp
from xp_cuda._kernels import fusion_render as fr
from xp_cuda._kernels import _runtime as R
from xp_cuda._kernels import reduction as kred
from xp_cuda._kernels.fusion_ir import Op
from xp_cuda.fusion import _trace
from xp_cuda.fusion import fuse
from xp_cuda.fusion._fuse import _view_only
from helpers import nvrtc_missing as _nvrtc_reason

SMS = 132


def fake(shape, itemsize, strides=None):
    """An input layout: what planning reads of an array."""
    contiguous = strides is None
    if strides is None:
        st, acc = [], itemsize
        for n in reversed(shape):
            st.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(st))
    return types.SimpleNamespace(itemsize=itemsize, shape=tuple(shape), strides=tuple(strides),
                                 nbytes=0, flags=types.SimpleNamespace(c_contiguous=contiguous))


def red(shape, axes, kind="sum", dt="float32", strides=None):
    isz = np.dtype(dt).itemsize
    p = kred.program(kind, dt, dt if kind not in ("all", "any") else "bool",
                     fake(shape, isz, strides), axes, False, SMS)
    return p.plan


# ---- reductions -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axes,want", [
    # (P, M, row_like, G, S, chunk, per, blocks, flat, vec)
    ((7, 4096), (1,), (7, 4096, True, 256, 1, 4096, 1, 7, True, 4)),
    ((2**28,), (0,), (1, 2**28, True, 256, 792, 338944, 1, 792, True, 4)),
    ((33, 33008), (1,), (33, 33008, True, 256, 4, 8256, 1, 132, True, 4)),
    ((100,), (0,), (1, 100, True, 4, 1, 100, 64, 1, True, 4)),  # ROW_LANE_ELEMS a lane
    ((2**20, 64), (1,), (2**20, 64, True, 4, 1, 64, 64, 16384, True, 4)),  # short rows
    ((16, 2**20), (0,), (2**20, 16, False, 1, 1, 16, 256, 4096, False, 1)),  # short columns
    # innermost reduced, a kept axis before it: vectors of runs of 4 (ReducePlan.seg)
    ((6, 5, 4), (0, 2), (5, 24, True, 4, 1, 24, 64, 1, False, 4)),
    ((20011, 3), (0,), (3, 20011, False, 64, 9, 2224, 4, 9, False, 1)),  # column
    ((3, 4001, 5), (1,), (15, 4001, False, 16, 7, 576, 16, 7, False, 1)),  # middle axis
    ((2**20, 256), (0,), (256, 2**20, False, 8, 99, 10592, 32, 792, False, 1)),
    ((0, 5000), (1,), (0, 5000, True, 256, 1, 5000, 1, 1, True, 4)),  # no output: no split
    ((5000, 0), (0,), (0, 5000, False, 128, 1, 5000, 2, 1, False, 1)),
])
def test_reduction_split(shape, axes, want):
    plan = red(shape, axes)
    (r,) = plan.reductions
    assert (r.P, r.M, r.row_like, r.G, r.S, r.chunk, r.per, r.blocks, r.flat, r.vec) == want
    # the splits cover the range exactly once, in whole 16-element chunks when split
    assert (r.S - 1) * r.chunk < r.M <= r.S * r.chunk
    assert r.S == 1 or r.chunk % 16 == 0
    assert r.scratch == (((r.P * r.S, "float32"), (r.P, "uint32")) if r.S > 1 else (None, None))
    # one block per `per` work items (rows), or per `per` neighbouring groups of colvec
    # outputs and split
    blocks = (-(-(r.P * r.S) // r.per) if r.row_like else
              -(-(r.P // r.colvec) // r.per) * r.S)
    assert r.blocks == max(1, blocks)
    assert plan.threads == fp.THREADS and not plan.tunable


def test_split_stays_within_one_wave_of_resident_blocks():
    """A split count rounded up to its wave target stops at one wave of the blocks the kind's
    registers let reside (RESIDENT_BLOCKS): var over axis 0 of (8192, 8192) took 768 blocks
    (1.45 waves of 4 a SM), now 512; a kind without an entry keeps 8 a SM."""
    def plan(kind, shape, axes, dt="float32"):
        if kind in ("var", "argmax"):
            g, out = (kred.moments_graph(kind, dt, shape, axes, 0.0, False, dt) if kind == "var"
                      else kred.arg_graph(kind, dt, shape, axes[0], False))
            p = kfusion.Program(g, [out], [fake(shape, np.dtype(dt).itemsize)], SMS)
        else:
            p = kred.program(kind, dt, dt, fake(shape, np.dtype(dt).itemsize), axes, False, SMS)
        (r,) = p.plan.reductions
        return r
    for kind, shape, axes, want_s in (("var", (8192, 8192), (0,), 2),
                                      ("var", (4096, 4096), (1,), 1),
                                      ("argmax", (8192, 8192), (0,), 3),
                                      ("sum", (8192, 8192), (0,), 4)):
        r = plan(kind, shape, axes)
        assert r.S == want_s, (kind, shape, axes, r.S)
        if r.S > 1:
            assert r.blocks <= SMS * fp.RESIDENT_BLOCKS.get(kind, 8), (kind, shape)
    # the cap binds only past one wave: a short-column var keeps the split its target asks
    assert plan("var", (2**22, 64), (0,)).blocks == SMS * fp.RESIDENT_BLOCKS["var"]


def test_row_lanes_count_bytes_for_narrow_dtypes():
    """A lane of a row reduction reads the bytes of ROW_LANE_ELEMS float32s whatever the
    input's width below 4 bytes: short bool rows get fewer lanes, more rows a block; 4- and
    8-byte rows as before."""
    for dt, shape, lanes in (("bool", (2**22, 64), 1), ("int8", (2**22, 64), 1),
                             ("int16", (2**22, 64), 2), ("float32", (2**22, 64), 4),
                             ("float64", (2**22, 64), 4), ("bool", (7, 4096), 32),
                             ("bool", (7, 8192), 32), ("bool", (7, 16384), 256),
                             ("float32", (7, 2048), 32), ("float32", (7, 4096), 256),
                             ("float64", (7, 4096), 256)):
        kind = "any" if dt == "bool" else "sum"
        (r,) = red(shape, (1,), kind=kind, dt=dt).reductions
        assert (r.G, r.per) == (lanes, fp.THREADS // lanes), (dt, shape)
    # a struct accumulator's partials make the tree dear: a block a row from 64 KiB
    for n, lanes in ((4096, 32), (8192, 32), (16384, 256)):
        assert fp.row_lanes(n, 4, fp.ROW_BLOCK_BYTES[True]) == lanes
        assert fp.row_lanes(n, 4, fp.ROW_BLOCK_BYTES[False]) == 256


def test_reduction_vector_width_by_dtype_and_layout():
    for dt, vec in (("int8", 16), ("int16", 8), ("float32", 4), ("float64", 2),
                    ("complex128", 1)):
        assert red((5, 4096), (1,), dt=dt).reductions[0].vec == vec
    # transposed operand, or the innermost axis kept: scalar loads only
    assert red((64, 64), (1,), strides=(4, 256)).reductions[0].flat is False
    assert red((64, 64), (0,)).reductions[0].vec == 1
    # the innermost axis kept: outputs a lane by the widest input, dividing the outputs
    for dt, shape, colvec in (("bool", (9, 1024), 4), ("int16", (9, 1024), 4),
                              ("float32", (9, 1024), 1), ("complex128", (9, 1024), 1),
                              ("int8", (9, 514), 2), ("int8", (9, 515), 1), ("int8", (9, 512), 2),
                              ("bool", (9, 64), 4), ("int8", (9, 64), 1)):  # few: words
        r = red(shape, (0,), kind="sum" if dt != "bool" else "any", dt=dt).reductions[0]
        assert r.colvec == colvec, (dt, shape, r.colvec)
    assert red((64, 1024), (0,), "any", "bool", strides=(1, 64)).reductions[0].colvec == 1
    # max and min of few narrow columns: 16-byte vectors of 2-byte outputs, 4-byte vectors of
    # 1-byte ones; any/all of bool (words) too (not any of int16: measured slower)
    for kind, dt, shape, colvec in (("max", "int16", (2**22, 64), 8),
                                    ("min", "uint16", (2**23, 32), 8),
                                    ("any", "int16", (2**22, 64), 1),
                                    ("any", "bool", (2**22, 64), 4),  # combined as words
                                    ("all", "bool", (2**24, 4), 4),
                                    ("max", "int16", (2**22, 12), 4),
                                    ("max", "int16", (2**22, 7), 1),
                                    ("max", "int8", (2**22, 64), 4),
                                    ("min", "uint8", (2**22, 6), 2),
                                    ("max", "float32", (2**22, 64), 1),
                                    ("max", "int16", (64, 2**20), 4)):  # many: COL_VECTOR
        r = red(shape, (0,), kind=kind, dt=dt).reductions[0]
        assert r.colvec == colvec, (kind, dt, shape, r.colvec)
    # sums of few 2-byte columns into int64: 8-byte vectors (NARROW_SUM_BYTES); 1-byte: one
    for dt, shape, acc, colvec in (("int16", (2**22, 64), "int64", 4),
                                   ("uint16", (2**23, 32), "uint64", 4),
                                   ("int16", (2**22, 6), "int64", 2),
                                   ("int8", (2**22, 64), "int64", 1),
                                   ("uint8", (2**24, 16), "uint64", 1)):
        p = kred.program("sum", dt, acc, fake(shape, np.dtype(dt).itemsize, None), (0,), False,
                         SMS)
        assert p.plan.reductions[0].colvec == colvec, (dt, shape)
    # max/min of narrow integers and any/all of bool, read from the input itself, combine
    # whole 4-byte words of their row (colvec * itemsize / 4 of them)
    for kind, dt, shape, words in (("max", "int8", (2**22, 64), 1), ("min", "uint16",
                                   (2**22, 64), 4), ("max", "int16", (9, 1024), 2),
                                   ("any", "bool", (9, 1024), 1), ("all", "bool", (9, 1024), 1),
                                   ("sum", "int8", (9, 1024), 0),  # no word sum
                                   ("max", "int8", (9, 514), 0),  # 2 a lane: half a word
                                   ("max", "float32", (9, 1024), 0), ("any", "int8", (9, 1024), 0)):
        r = red(shape, (0,), kind=kind, dt=dt).reductions[0]
        assert r.words == words, (kind, dt, shape, r.colvec, r.words)
    assert set(fr._WORD_OPS) == fp.WORD_KINDS  # the printer has a word op for each
    assert red((9, 1024), (0,), kind="argmax", dt="int8").reductions[0].colvec == 1  # struct
    assert red((9, 8, 1024), (0, 1), "any", "bool").reductions[0].colvec == 4
    assert red((9, 1024, 8), (0, 2), "any", "bool").reductions[0].colvec == 1  # innermost
    # a broadcast operand (stride 0) is read through its strides
    assert red((64, 64), (1,), strides=(0, 4)).reductions[0].flat is False


def test_eager_reduction_edges():
    # axes=(): a conversion of each element, no reduction section
    plan = red((5, 3), ())
    assert not plan.reductions and plan.groups[0].flat and plan.groups[0].n == 15
    # all/any over no axis still take truth values: a reduction with M == 1
    (r,) = red((5, 3), (), kind="any").reductions
    assert (r.P, r.M) == (15, 1)
    (r,) = red((), (), kind="all").reductions  # 0-d
    assert (r.P, r.M, r.row_like) == (1, 1, True)
    plan = red((), ())
    assert plan.groups[0].shape == () and not plan.reductions


class _FakeCp:
    """What reduce_eager asks of CuPy before it would launch."""

    def __init__(self):
        self.calls = []
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))

    def empty(self, shape, dtype):
        self.calls.append(("empty", shape, dtype))
        return np.empty(shape, dtype=dtype)

    def full(self, shape, value, dtype):
        self.calls.append(("full", shape, value, dtype))
        return np.full(shape, value, dtype=dtype)


def test_eager_launches_are_found_again_by_their_layout_keys(monkeypatch):
    """eager.py's one-node programs are cached under the key the cuda backend's early lookup
    builds (launch_key of ew_key), and a second call of a layout builds nothing; an empty
    result launches nothing. A stand-in Launch records what is built (no GPU)."""
    from xp_cuda._kernels import eager

    built = []

    class FakeLaunch:
        def __init__(self, cp, graph, outs, arrays):
            built.append(self)
            self.shape = outs[0].shape

        def __call__(self, arrays, values):
            return [np.empty(self.shape)]

    monkeypatch.setattr(kfusion, "Launch", FakeLaunch)
    monkeypatch.setattr(R, "_programs", type(R._programs)())
    a, b = np.ones((3, 1), np.float32), np.ones((1, 4), np.float32)
    c = np.ones((3, 4), bool)
    eager.elementwise_launch(None, "add", "float32", "float32", (a, b), (3, 4), 0)
    key = eager.ew_key("add", "float32", "float32", (3, 4))
    assert kred.lookup(eager.launch_key(key, (a, b), 0)) is built[0]
    assert kred.lookup(eager.launch_key(key, (b, a), 0)) is None
    eager.elementwise_launch(None, "add", "float32", "float32", (a, b), (3, 4), 0)
    eager.where_launch(None, c, a, b, "float32", (3, 4), 0)
    eager.where_launch(None, c, a, b, "float32", (3, 4), 0)
    eager.astype(None, a.T, "float64", 0)
    eager.astype(None, a.T, "float64", 0)
    assert len(built) == 3  # each second call found the first one's launch
    eager.astype(None, a, "float64", 0)  # another layout: another launch
    assert len(built) == 4
    cp = _FakeCp()
    z = np.ones((0, 4), np.float32)
    assert eager.where_launch(cp, c[:0], z, z, "float32", (0, 4), 0) is None
    assert eager.astype(cp, z, "float64", 0).dtype == np.float64
    assert eager.elementwise_launch(cp, "add", "float32", "float32", (z, b), (0, 4), 0) is None
    assert len(built) == 4 and [c[0] for c in cp.calls] == ["empty"]


@pytest.mark.parametrize("kind,value", [("sum", 0), ("prod", 1), ("mean", np.nan),
                                        ("all", True), ("any", False)])
def test_reduce_eager_empty_ranges_need_no_kernel(kind, value):
    cp = _FakeCp()
    acc = "bool" if kind in ("all", "any") else "float64"
    out = kred.reduce_eager(cp, kind, np.zeros((3, 0)), (1,), False, "float64", acc)
    assert out.shape == (3,) and out.dtype == np.dtype(acc)
    np.testing.assert_array_equal(out, np.full(3, value, dtype=acc))
    out = kred.reduce_eager(cp, kind, np.zeros((0, 4)), (1,), True, "float64", acc)
    assert out.shape == (0, 1) and cp.calls[-1][0] == "empty"
    with pytest.raises(ValueError):
        kred.reduce_eager(cp, "max", np.zeros((3, 0)), (1,), False, "float64", "float64")


def test_reduce_eager_cache_is_bounded(monkeypatch):
    built = []

    def build(cp, kind, in_name, acc_name, x, axes, keepdims):
        built.append(x.shape)
        return lambda ins, values: [("ran", x.shape)]
    monkeypatch.setattr(kred, "_build", build)
    monkeypatch.setattr(R, "_programs", type(R._programs)())
    cp = _FakeCp()
    dt = types.SimpleNamespace(name="float32")  # a DType-like object is read by .name
    for n in range(1, R.PROGRAM_CACHE_SIZE + 45):
        assert kred.reduce_eager(cp, "sum", np.zeros(n, np.float32), (0,), False, dt, dt) == \
            ("ran", (n,))
    assert len(R._programs) == R.PROGRAM_CACHE_SIZE
    kred.reduce_eager(cp, "sum", np.zeros(R.PROGRAM_CACHE_SIZE + 44, np.float32), (0,), False,
                      "float32", "float32")
    assert len(built) == R.PROGRAM_CACHE_SIZE + 44  # the last one was a hit


# ---- elementwise groups ------------------------------------------------------------------------
@pytest.mark.parametrize("config", fp.CONFIGS)
@pytest.mark.parametrize("n", [1, 3, 1021, 4099, 6143, 16384, 2**20 + 5])
def test_flat_grid_covers_every_element(config, n):
    x = xp.broadcast_to(xp.zeros((), dtype=xp.float32, device=CPU), (n,))
    t, nodes, *_ = _trace.trace(lambda a: a * 2 + 1, [x], {}, CPU)
    p = kfusion.Program(t, nodes, [fake((n,), 4)], SMS, config=config)
    (g,) = p.plan.groups
    vec = config[0] // 4
    U, T = config[1], config[2]
    assert g.flat and (g.vec, g.unroll, g.threads) == (vec, U, T) and p.layout == ((vec, U, T),)
    per_block = U * T * vec
    full = n // per_block
    assert p.blocks == max(1, full + -(-(n - full * per_block) // T))
    assert p.blocks_scalar == max(1, -(-n // T))
    # aligned: whole blocks of vectors, then one thread per element of the tail
    assert full * per_block + (p.blocks - full) * T >= n
    assert p.tunable


@pytest.mark.parametrize("shape,run", [((8, 64), 4), ((3, 4), 4), ((5, 7), 1), ((4, 2), 1),
                                       ((2, 3, 8), 4)])
def test_strided_groups_take_runs_along_the_innermost_axis(shape, run):
    """A group read through coordinates (here a broadcast column) takes runs of RUN_ELEMS
    neighbours where the innermost axis is a multiple of it (one thread a run: the grid
    shrinks by the run), else one element a thread; the printed loop decomposes once a run."""
    c = xp.zeros(shape, dtype=xp.bool, device=CPU)
    x = xp.zeros(shape, dtype=xp.float32, device=CPU)
    col = xp.zeros(shape[:-1] + (1,), dtype=xp.float32, device=CPU)
    t, nodes, *_ = _trace.trace(lambda a, b, d: xp.where(a, b, d), [c, x, col], {}, CPU)
    p = kfusion.Program(t, nodes, [fake(shape, 1), fake(shape, 4), fake(col.shape, 4)], SMS)
    (g,) = p.plan.groups
    n = math.prod(shape)
    assert not g.flat and g.run == run
    assert g.blocks == g.blocks_scalar == max(1, -(-n // (g.threads * run)))
    assert ("for (long long i0 = tid * 4;" in p.source) is (run > 1)


@pytest.mark.parametrize("dt,shape,mshape,vrun", [
    ("float32", (8, 6, 64), (1, 6, 1), 4), ("float64", (8, 6, 64), (1, 6, 1), 2),
    ("float32", (8, 6, 6), (1, 6, 1), 1),  # runs of part of a vector: element runs
    ("int8", (4, 3, 32), (3, 1), 4),  # float32 out: vectors of 4 by the widest
    ("float32", (5, 64), (5, 1), 4), ("float32", (64,), (1,), 1)])  # 1-D: flat
def test_vector_runs_read_contiguous_inputs_as_vectors(dt, shape, mshape, vrun):
    """A group over coordinates whose innermost axis holds whole vectors reads its C-contiguous
    inputs of its own shape as vectors, a thread a vector (VECTOR_RUNS); the broadcast
    operand at the vector's coordinates."""
    x = xp.zeros(shape, dtype=getattr(xp, dt), device=CPU)
    m = xp.zeros(mshape, dtype=xp.float32, device=CPU)
    t, nodes, *_ = _trace.trace(lambda a, b: (xp.astype(a, xp.float32) - b) * b, [x, m], {},
                                CPU)
    isz = np.dtype(dt).itemsize
    p = kfusion.Program(t, nodes, [fake(shape, isz), fake(mshape, 4)], SMS)
    (g,) = p.plan.groups
    n = math.prod(shape)
    assert g.vrun == vrun, g
    if vrun > 1:
        assert not g.flat and g.flat_inputs == (0,)
        assert g.blocks == -(-n // (g.threads * vrun))
        assert g.blocks_scalar == -(-n // (g.threads * g.run))
        assert f"reinterpret_cast<XpPack<float, {vrun}>*>(out0)[t] = r0;" in p.source
        assert "for (long long t = tid;" in p.source
    # a transposed x is read through its strides: element runs
    st = fake(shape[::-1], isz).strides[::-1]
    p = kfusion.Program(t, nodes, [fake(shape, isz, st), fake(mshape, 4)], SMS)
    assert p.plan.groups[0].vrun == 1 or len(shape) == 1


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_vector_run_programs_compile_with_nvrtc():
    """Vector runs of every width (1- to 16-byte elements, a view beside, a where) compile."""
    from xp_cuda._kernels import nvrtc_compile
    progs = []
    for dt in ("bool", "int8", "int16", "float32", "float64", "complex64"):
        shape = (4, 3, 32)
        x = xp.zeros(shape, dtype=getattr(xp, dt), device=CPU)
        m = xp.zeros((3, 1), dtype=xp.float32, device=CPU)
        isz = np.dtype(dt).itemsize
        c = dt == "complex64"

        def cast(a, c=c):
            return a if c else xp.astype(a, xp.float32)

        def mm(b, c=c):
            return xp.astype(b, xp.complex64) if c else b
        fs = [lambda a, b: cast(a) * mm(b),
              lambda a, b: xp.where(b > 0, cast(a), mm(b[:, :1]) * mm(b)[0, 0])]
        if dt == "bool":
            fs = [lambda a, b: xp.where(a, b, -b)]
        for f in fs:
            t, nodes, *_ = _trace.trace(f, [x, m], {}, CPU)
            kern = [n for n in nodes if not _view_only(n)]
            p = kfusion.Program(t, kern, [fake(shape, isz), fake((3, 1), m._data.itemsize)],
                                SMS, name=f"vr{len(progs)}")
            assert p.plan.groups[0].vrun > 1, (dt, p.plan.groups[0])
            progs.append(p)
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="vruns.cu",
                        options=kfusion.OPTIONS)
    for p_ in progs:
        assert f".entry {p_.name}(" in ptx


def _plan_of(f, args, arrays=None):
    t, nodes, *_ = _trace.trace(f, args, {}, CPU)
    kern = [n for n in nodes if not _view_only(n)]
    ins = arrays or [args[n.attr.pos]._data for n in t.inputs]
    return kfusion.Program(t, kern, ins, SMS).plan


def test_flat_or_strided():
    x = xp.zeros((4, 6), dtype=xp.float32, device=CPU)
    y = xp.zeros((6,), dtype=xp.float32, device=CPU)
    s = xp.zeros((), dtype=xp.float64, device=CPU)
    assert _plan_of(lambda a: a * a + 1, [x]).groups[0].flat
    assert _plan_of(lambda a, c: a * c, [x, s]).groups[0].flat  # one element: read at 0
    assert _plan_of(lambda a, c: a * c, [x, s]).groups[0].flat_inputs == (0,)
    assert not _plan_of(lambda a, b: a + b, [x, y]).groups[0].flat  # broadcast
    assert not _plan_of(lambda a: a[:, 1:] * 2, [x]).groups[0].flat  # a view
    assert not _plan_of(lambda a: a * 2, [x], [fake((4, 6), 4, (4, 16))]).groups[0].flat
    plan = _plan_of(lambda a, b: (a + 1, b * 2, xp.sum(a, axis=1)), [x, y])
    assert [g.shape for g in plan.groups] == [(4, 6), (6,)] and len(plan.reductions) == 1
    assert plan.threads == fp.THREADS and plan.layout == ((4, 1, 256), (4, 1, 256))


def test_clip_compares_in_the_promoted_dtype():
    i = xp.zeros((5,), dtype=xp.int8, device=CPU)
    j = xp.zeros((5,), dtype=xp.int32, device=CPU)
    t, nodes, *_ = _trace.trace(lambda a, b: xp.clip(a, min=b, max=3), [i, j], {}, CPU)
    (n,) = nodes
    assert n.op is Op.CLIP and (n.attr.lo_compare, n.attr.hi_compare) == ("int32", "int8")


# ---- per-thread parameter blocks ----------------------------------------------------------------
def test_each_thread_gets_its_own_parameter_block_and_scratch():
    class Buf:
        n = 0

        def __init__(self, size, dtype):
            Buf.n += 1
            self.data = types.SimpleNamespace(ptr=4096 * Buf.n)
    cp = types.SimpleNamespace(zeros=Buf, empty=Buf)
    launch = kfusion.Launch.__new__(kfusion.Launch)
    launch.cp = cp
    launch.scratch_specs = [(10, np.float32), (5, np.uint32)]
    launch.uses = [(None, types.SimpleNamespace(name="float64"), None)]
    launch.ncells = 2 + 2 + 1
    launch.scratch_cell = 2
    launch.template = np.arange(2 * launch.ncells + 3, dtype=np.uint64)
    launch._local = kfusion._PerThread(launch)
    blocks = []
    main = launch.block()
    assert launch.block() is main  # the same thread: the same block

    def worker():
        blocks.append(launch.block())
    ts = [threading.Thread(target=worker) for _ in range(2)]
    for t_ in ts:
        t_.start()
    for t_ in ts:
        t_.join()
    allb = [main] + blocks
    assert len({id(b) for b in allb}) == 3
    assert len({b.buf.ctypes.data for b in allb}) == 3 and len({b.addr for b in allb}) == 3
    ptrs = [{s.data.ptr for s in b.scratch} for b in allb]
    assert all(not (p & q) for a, p in enumerate(ptrs) for q in ptrs[a + 1:])
    for b in allb:  # the geometry of the template; this thread's scratch pointers
        np.testing.assert_array_equal(b.buf[2 * launch.ncells:],
                                      launch.template[2 * launch.ncells:])
        assert [int(b.buf[4]), int(b.buf[6])] == [s.data.ptr for s in b.scratch]
        b.param_views[0][0] = 1.5
        assert b.buf[8:10].view(np.float64)[0] == 1.5


# ---- the launcher's wiring on a stand-in driver ----------------------------------------------
class _DevArray:
    """A stand-in device array: a layout and an address."""
    n = 0

    def __init__(self, shape, dtype, strides=None):
        _DevArray.n += 1
        self.dtype = np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        ref = np.empty(shape, dtype=self.dtype)
        self.shape, self.nbytes = tuple(shape), ref.nbytes
        self.strides = tuple(strides) if strides is not None else ref.strides
        self.flags = types.SimpleNamespace(c_contiguous=strides is None)
        self.data = types.SimpleNamespace(ptr=(1 << 20) * _DevArray.n)

    def transpose(self, perm):
        """The view of the same memory with its axes in perm's order."""
        t = _DevArray.__new__(_DevArray)
        t.__dict__.update(self.__dict__)
        t.shape = tuple(self.shape[a] for a in perm)
        t.strides = tuple(self.strides[a] for a in perm)
        t.flags = types.SimpleNamespace(c_contiguous=False)
        return t

    def as_strided(self, shape, strides):
        """The view of the same memory with this shape and these strides."""
        t = self.transpose(range(len(self.shape)))
        t.shape, t.strides = tuple(shape), tuple(strides)
        return t


def _stand_in(monkeypatch):
    launches = []
    stream = types.SimpleNamespace(ptr=77, is_capturing=lambda: False)
    cp = types.SimpleNamespace(
        zeros=lambda n, dtype: _DevArray((n,), dtype),
        empty=lambda n, dtype: _DevArray((n,), dtype),
        cuda=types.SimpleNamespace(get_current_stream=lambda: stream,
                                   runtime=types.SimpleNamespace(getDevice=lambda: 0)),
        lib=types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
            as_strided=lambda a, shape, strides: a.as_strided(shape, strides))))
    kernel = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=1234))
    monkeypatch.setattr(kfusion, "load_kernels",
                        lambda pairs, options, prepared=None: [kernel] * len(pairs))
    monkeypatch.setattr(kfusion, "TIERED", False)  # (one tier: no cache to ask, no thread)
    monkeypatch.setattr(kfusion, "empty_allocator", lambda cp_: _DevArray)
    monkeypatch.setattr(kfusion, "device_info", lambda cp_: types.SimpleNamespace(sm_count=SMS))
    monkeypatch.setattr(kfusion, "_launch", lambda *a: launches.append(a))
    return cp, launches


def _cells(addr, ncells, nslots):
    """The pointers and values a launch at `addr` passes: one 16-byte cell each, then the
    geometry struct."""
    import ctypes
    ptrs = (ctypes.c_void_p * (ncells + 1)).from_address(addr)
    cells = [ctypes.c_uint64.from_address(ptrs[c]).value for c in range(ncells)]
    geo = list((ctypes.c_int64 * nslots).from_address(ptrs[ncells]))
    return cells, geo


def test_launch_writes_each_threads_block(monkeypatch):
    cp, launches = _stand_in(monkeypatch)
    x = xp.zeros((5, 70000), dtype=xp.float32, device=CPU)
    t, nodes, *_ = _trace.trace(lambda a, s: (a * s, xp.sum(a, axis=1)), [x, 0.5], {}, CPU)
    dx = _DevArray((5, 70000), np.float32)
    launch = kfusion.Launch(cp, t, nodes, [dx])
    prog = kfusion.Program(t, nodes, [dx], SMS, name="xp_fused0")
    assert prog.reductions[0][2] > 1  # split: scratch in use
    outs = launch([dx], [None, 2.0])
    fn, grid, _, _, threads, _, _, _, stream, addr, _ = launches[-1]
    assert (fn, grid, threads, stream) == (1234, prog.blocks, prog.threads, 77)
    ncells = 1 + 2 + 2 + 1
    cells, geo = _cells(addr, ncells, prog.nslots)
    blk = launch.block()
    assert cells[:5] == [dx.data.ptr, outs[0].data.ptr, outs[1].data.ptr,
                         blk.scratch[0].data.ptr, blk.scratch[1].data.ptr]
    assert np.array([cells[5]], dtype=np.uint64).view(np.float32)[0] == 2.0
    assert geo == prog.gvals + [0] * (prog.nslots - len(prog.gvals))
    seen = []

    def other():
        launch([dx], [None, 3.0])
        seen.append((launches[-1][9], launch.block()))
    th = threading.Thread(target=other)
    th.start()
    th.join()
    addr2, blk2 = seen[0]
    assert addr2 != addr and blk2 is not blk
    cells2, geo2 = _cells(addr2, ncells, prog.nslots)
    assert cells2[3:5] == [blk2.scratch[0].data.ptr, blk2.scratch[1].data.ptr]
    assert not set(cells2[3:5]) & set(cells[3:5]) and geo2 == geo
    assert _cells(addr, ncells, prog.nslots)[0][5] == cells[5]  # this thread's value stays
    # misaligned input: the grid for any alignment
    launch([types.SimpleNamespace(data=types.SimpleNamespace(ptr=dx.data.ptr + 4))], [None, 1.0])
    assert launches[-1][1] == prog.blocks_scalar


def test_reduce_eager_builds_and_caches_one_launch(monkeypatch):
    cp, launches = _stand_in(monkeypatch)
    monkeypatch.setattr(R, "_programs", type(R._programs)())
    x = _DevArray((6, 5, 4), np.int8, strides=(20, 1, 5))  # non-contiguous
    f64 = types.SimpleNamespace(name="int64")
    out = kred.reduce_eager(cp, "sum", x, (0, 2), True, "int8", f64)
    assert out.shape == (1, 5, 1) and out.dtype == np.int64 and len(R._programs) == 1
    launch = next(iter(R._programs.values()))
    assert "xp_cvt<long long>" in launch.source and "reduction 0: sum" in launch.source
    # x's smallest stride is on kept axis 1: the kernel reads x as (6, 4, 5), axes (0, 1),
    # a column-like reduction, whose reduced axes merge: (24, 5) over axis 0 (no division of
    # the reduced index a load); the result keeps the caller's shape
    assert launch.out_specs[0][0] == (1, 5, 1)
    assert "reduction 0: sum" in launch.source and "rju0_" not in launch.source
    kred.reduce_eager(cp, "sum", x, (0, 2), True, "int8", "int64")
    assert len(R._programs) == 1 and len(launches) == 2
    with pytest.raises(ValueError, match="dtype"):
        kred.reduce_eager(cp, "sum", x, (0,), True, "int16", "int64")
    y = _DevArray((3, 4), np.float32)
    out = kred.reduce_eager(cp, "mean", y, (), False, "float32", "float32")  # a copy
    src = next(reversed(R._programs.values())).source
    assert out.shape == (3, 4) and "// reduction 0" not in src


# ---- whole programs: lowering, stages, row kernels -----------------------------------------------
def _whole(f, shapes, dtype=np.float32):
    """(trace, outputs, plan) of f traced on cpu arrays of these shapes."""
    rng = np.random.default_rng(0)
    args = [xp.asarray(rng.standard_normal(s).astype(dtype)) for s in shapes]
    t, nodes, *_ = _trace.trace(f, args, {}, CPU)
    natives = [args[n.attr.pos]._data for n in t.inputs]
    return t, nodes, kfusion.plan_program(t, list(nodes), natives, SMS)


def _softmax(a):
    m = xp.max(a, axis=-1, keepdims=True)
    e = xp.exp(a - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def test_split_stages_by_reduction_depth():
    def lse0(a):  # (2 * a - m: not the one-pass form of online_sumexp, which reads a)
        m = xp.max(a, axis=0, keepdims=True)
        return xp.log(xp.sum(xp.exp(a * 2 - m), axis=0)) + m[0, ...], m

    t, nodes, plan = _whole(lse0, [(8, 5)])
    assert plan.rows is None and len(plan.stages) == 3
    s0, s1, s2 = plan.stages
    # kernel 0: the max (an intermediate, also output 1); kernel 1: the sum (an
    # intermediate) reading the max; kernel 2: output 0, reading both
    ((j0, m_max),), ((j1, m_sum),), ((j2, m2),) = s0.results, s1.results, s2.results
    assert (j0, j1, j2, m2) == (1, None, 0, None) and {m_max, m_sum} == {0, 1}
    assert s0.reads == () and s1.reads == (m_max,) and s2.reads == (0, 1)
    assert [n.attr.kind for n in (s0.outs[0], s1.outs[0])] == ["max", "sum"]
    first_mid = 1 + max(n.attr.pos for n in t.inputs)
    assert [n.attr.pos for n in s2.inputs[len(t.inputs):]] == [first_mid, first_mid + 1]
    assert all(n.op is not Op.REDUCE for n in fp._walk_all(s2.outs))
    # no reduction feeding other work: one stage, the traced nodes themselves
    t, nodes, plan = _whole(lambda a: (a * 2, xp.sum(a, axis=1)), [(8, 5)])
    assert len(plan.stages) == 1 and list(plan.stages[0].outs) == list(nodes)


@pytest.mark.parametrize("shape,want", [
    # (threads, elements per vector, vectors per thread)
    ((32768, 4096), (512, 4, 2)),
    ((4096, 32768), (1024, 4, 8)),
    ((5, 37), (32, 4, 1)),
    ((3, 4099), (1024, 4, 2)),
    ((2, 3, 129), (32, 4, 2)),
])
def test_row_plan_geometry(shape, want):
    x = xp.asarray(np.zeros(shape, np.float32) + 1)
    t, nodes, *_ = _trace.trace(_softmax, [x], {}, CPU)
    rows = kfusion.plan_program(t, list(nodes), [x._data], SMS).rows
    assert rows is not None and (rows.threads, rows.vec, rows.per_thread) == want
    assert rows.P * rows.M == x.size and rows.outs == ("row",)
    assert [r.kind for _, r in rows.reduces] == ["max", "sum"]
    assert rows.threads * rows.vec * rows.per_thread >= rows.M
    # exp(x - max) is kept in registers for the division where they allow (not at 32 a thread)
    kept = [n.attr.name for n in rows.kept]
    assert kept == ([] if rows.per_thread * rows.vec == 32 else ["exp"]), kept


@pytest.mark.parametrize("shape,checks", [
    ((3, 4096), None),  # 512 threads x 2 vectors x 4 floats: the row ends at the last vector
    ((3, 128), None),  # a warp per row, one vector a thread
    ((3, 4100), "vector"),  # whole vectors, the last thread's last one past the end
    ((3, 8), "vector"),
    ((3, 4099), "element"), ((3, 37), "element")])
def test_row_kernel_checks_the_row_end_only_where_it_can_fall(shape, checks):
    """Bounds checks cost an instruction or more an element in every pass (the row kernel is
    limited by issue), so a row kernel checks per element only where a row ends inside a
    vector, per vector where it ends between vectors short of the last, else not at all."""
    t, nodes, plan = _whole(_softmax, [shape])
    src = kfusion.RowProgram(t, plan, list(plan.outs)).kernel
    assert ("jc < M" in src) == (checks == "element")
    assert ("* 4 < M" in src) == (checks == "vector")
    assert (f"M = {shape[-1]}LL" in src) == (checks is None)
    if checks is None:  # one source serves every row count
        t2, nodes2, plan2 = _whole(_softmax, [(5,) + shape[1:]])
        assert kfusion.RowProgram(t2, plan2, list(plan2.outs)).kernel == src


@pytest.mark.parametrize("shape,bounds", [((3, 4096), "512, 4"), ((3, 32768), "1024, 2"),
                                          ((3, 128), "256, 8")])
def test_row_kernel_caps_its_registers_for_full_residency(shape, bounds):
    """A row kernel's registers are capped so that an SM holds ROW_RESIDENT_THREADS threads
    (min blocks in __launch_bounds__); without the cap (the spill fallback) only the block
    size is bound."""
    t, nodes, plan = _whole(_softmax, [shape])
    assert f"__launch_bounds__({bounds})" in kfusion.RowProgram(t, plan, list(plan.outs)).kernel
    free = kfusion.RowProgram(t, plan, list(plan.outs), cap=False).kernel
    assert f"__launch_bounds__({bounds.split(',')[0]})" in free


def test_row_plan_reads_and_the_reread_variant():
    """rows.reads: per pass, the row-shaped inputs it reads (none behind a reduction or a kept
    value); rows.reloads: those the outputs read after a reduction read them. The reread
    variant holds the row through the reductions and loads those again for the outputs, L2
    told to keep the row at the first load (evict_last) and to drop it at the second
    (evict_first); a row vector every row reads is loaded once (plain); an input written in
    place takes plain loads; the default holds the row to the end."""
    def rownorm(a):
        return a / xp.linalg.vector_norm(a, axis=-1, keepdims=True)

    def ln(a, w):
        mu = xp.mean(a, axis=-1, keepdims=True)
        d = a - mu
        return d / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * w

    def two(a, b):
        return a / xp.sum(b, axis=-1, keepdims=True)

    t, _, plan = _whole(rownorm, [(4, 4096)])
    assert plan.rows.reads == ((0,), (0,)) and plan.rows.reloads == (0,)
    t_ln, _, plan_ln = _whole(ln, [(4, 4096), (4096,)])
    assert plan_ln.rows.reads == ((0,), (0,), (0,))  # (d is cheap: recomputed, not kept)
    assert plan_ln.rows.reloads == (0,)
    soft = _whole(_softmax, [(4, 4096)])[2].rows
    assert soft.reads == ((0,), (0,), ()) and soft.reloads == ()  # exp(x - m) kept
    two_rows = _whole(two, [(4, 4096), (4, 4096)])[2].rows
    assert two_rows.reads == ((1,), (0,)) and two_rows.reloads == ()  # a read only once
    from xp_cuda._kernels.fusion_plan import describe_rows
    assert "arguments [0] again for the outputs" in describe_rows(plan.rows)
    assert "again" not in describe_rows(soft)
    held = kfusion.RowProgram(t, plan, list(plan.outs)).kernel
    assert "xp_ld_" not in held and held.count("p0[u] = *(") == 1
    again = kfusion.RowProgram(t, plan, list(plan.outs), reread=True).kernel
    assert again.count("p0[u] = xp_ld_last(") == 1 and again.count("p0[u] = xp_ld_first(") == 1
    assert again.index("xp_ld_last") < again.index("xp_ld_first")
    src = kfusion.RowProgram(t_ln, plan_ln, list(plan_ln.outs), reread=True).kernel
    assert src.count("p0[u] = xp_ld_last(") == 1 and src.count("p0[u] = xp_ld_first(") == 1
    assert src.count("p1[u] = *(") == 1  # the scale: once a row, plain
    # written in place: plain loads, held (the variant is the default kernel, not built)
    def g(a, s):
        a += s
        a /= xp.linalg.vector_norm(a, axis=-1, keepdims=True)
        return a
    t2, outs2, plan2, direct, _ = _inplace_plan(g, [_f32(4, 4096), 0.25])
    assert direct == {0: 0} and plan2.rows.reloads == (0,)
    alias = kfusion.alias_of(t2, direct)
    src = kfusion.RowProgram(t2, plan2, list(plan2.outs), alias=alias, reread=True).kernel
    assert src == kfusion.RowProgram(t2, plan2, list(plan2.outs), alias=alias).kernel


def test_row_plan_fallbacks():
    def ln(a, w):
        mu = xp.mean(a, axis=-1, keepdims=True)
        return (a - mu) / xp.sqrt(xp.mean((a - mu) * (a - mu), axis=-1, keepdims=True)) * w

    assert _whole(ln, [(4, 4096), (4096,)])[2].rows.packed == ((0, True), (1, False))
    # a row past the registers, or two inputs of 32768 floats: one kernel per depth
    assert _whole(_softmax, [(2, 70001)])[2].rows is None
    assert _whole(ln, [(2, 32768), (32768,)])[2].rows is None
    # a reduction over another axis, a view of the row space, a reduction of another shape
    assert _whole(lambda a: a - xp.mean(a, axis=0), [(4, 6)])[2].rows is None
    assert _whole(lambda a: a[:, ::-1] - xp.max(a, axis=1, keepdims=True), [(4, 6)])[2].rows \
        is None
    assert _whole(lambda a, b: a - xp.max(a, axis=1, keepdims=True) + xp.sum(b, axis=1,
                                                                          keepdims=True),
                  [(4, 6), (4, 2)])[2].rows is None
    # a per-row value broadcast back through m[..., None], and outputs one per row
    rows = _whole(lambda a: (xp.log(xp.sum(xp.exp(a - xp.max(a, axis=1)[:, None]), axis=1)),
                             xp.max(a, axis=1, keepdims=True) * 2), [(4, 6)])[2].rows
    assert rows is not None and rows.outs == ("one", "one")
    # (P,) against (P, M) broadcasts along the row, not per row: never the row kernel
    assert _whole(lambda a: a - xp.max(a, axis=1), [(6, 6)])[2].rows is None


def test_lower_rewrites_norms_and_vecdot():
    t, nodes, plan = _whole(lambda a, b: (a / xp.linalg.vector_norm(a, axis=-1, keepdims=True),
                                          xp.vecdot(a, b)), [(4, 6), (6,)])
    reds = [n for n in fp._walk_all(plan.outs) if n.op is Op.REDUCE]
    kinds = sorted((r.attr.kind, getattr(r.attr.epilogue, "name", "")) for r in reds)
    assert kinds == [("sum", ""), ("sum", "sqrt")]
    assert plan.rows is not None  # both reduce the innermost axis of (4, 6)


# ---- in place: written into the argument directly, or copied -------------------------------
def _inplace_plan(f, arrays):
    """(trace, kernel outputs as fuse builds them, plan, direct, why)."""
    t, nodes, _, sources = _trace.trace(f, arrays, {}, CPU)
    outs = [n for n, s in zip(nodes, sources) if s is None and not _view_only(n)]
    outs += [m.node for m in t.writes.values()]
    lays = [arrays[n.attr.pos]._data for n in t.inputs]
    plan = kfusion.plan_program(t, outs, lays, SMS)
    direct, why = kfusion.direct_writes(t, outs, plan, lays)
    return t, outs, plan, direct, why


def _f32(*shape, seed=0):
    return xp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_inplace_direct_where_every_read_is_at_the_written_index():
    a, b = _f32(5, 33), _f32(5, 33, seed=1)

    def same_index(a, b):
        b += 1.5
        c = a * b  # reads the new b at the same index
        b *= xp.where(a > 0, a, xp.astype(b, xp.float32))
        return c, xp.clip(b, min=-1.0, max=2.0)
    t, outs, plan, direct, why = _inplace_plan(same_index, [a, b])
    assert direct == {len(outs) - 1: 1} and why == {}
    assert "argument 1 updated in place: the kernel writes it directly" in \
        fuse(same_index).plan(a, b)

    def both(a, b):  # two arguments updated, each read only at its own index
        a += b
        b += a
        return a * 0 + 1
    t, outs, plan, direct, why = _inplace_plan(both, [a, b])
    assert sorted(direct.values()) == [0, 1] and why == {}


@pytest.mark.parametrize("name", ["reduction", "view", "broadcast", "strided", "transposed",
                                  "stages", "also_output"])
def test_inplace_copied_where_a_direct_write_could_be_read(name):
    a, b = _f32(5, 33), _f32(5, 33, seed=1)
    big = _f32(2, 5, 33, seed=2)
    cases = {
        "reduction": (lambda a, b: (b.__iadd__(1.0), xp.sum(b, axis=1))[1], [a, b], "other"),
        "view": (lambda a, b: (b.__iadd__(1.0), b[::-1, :] * a)[1], [a, b], "other"),
        "broadcast": (lambda a, b: (b.__iadd__(1.0), a * b)[1], [big, b], "other"),
        "strided": (lambda a, b: (b.__iadd__(a[:, :17]), a * 2)[1],
                    [a, _f32(5, 34, seed=3)[:, ::2]], "C-contiguous"),
        "transposed": (lambda a, b: (b.__iadd__(1.0), a * 2)[1],
                       [a, xp.matrix_transpose(_f32(33, 5, seed=3))], "C-contiguous"),
        "stages": (lambda a, b: (b.__iadd__(xp.sum(a)), xp.sum(b, axis=0))[1], [a, b],
                   "several kernels"),
    }
    if name == "also_output":
        def f(a, b):
            b += 1.0
            return xp.sum(b, axis=1, keepdims=True) + b
        t, outs, plan, direct, why = _inplace_plan(f, [a, b])
        assert plan.rows is not None  # the row kernel holds b's row: direct
        assert direct == {len(outs) - 1: 1}
        return
    f, args, reason = cases[name]
    t, outs, plan, direct, why = _inplace_plan(f, args)
    assert direct == {} and list(why) == [1] and reason in why[1], why
    assert "computed into a new array, then copied" in fuse(f).plan(*args)


def test_inplace_row_kernel_writes_its_rows_directly():
    def g(a, s):
        a += s
        a /= xp.max(a, axis=-1, keepdims=True)
        return a
    for shape in ((5, 33), (64, 1000), (3, 4099)):
        x = _f32(*shape)
        t, outs, plan, direct, why = _inplace_plan(g, [x, 0.25])
        assert plan.rows is not None and direct == {0: 0} and why == {}, shape
    # a row kernel that reads the argument through its strides (not held): copied
    x = _f32(5, 40)[:, :33]
    t, outs, plan, direct, why = _inplace_plan(g, [x, 0.25])
    assert direct == {} and list(why) == [0]


def test_inplace_direct_kernels_do_not_declare_the_aliased_pointers_restrict():
    a, b = _f32(5, 33), _f32(5, 33, seed=1)

    def f(a, b):
        b += 1.5
        return a * b
    t, outs, plan, direct, why = _inplace_plan(f, [a, b])
    alias = kfusion.alias_of(t, direct)
    assert alias == ((1,), (1,))
    st = plan.stages[0]
    (p,) = kfusion.programs(kfusion.Graph(list(st.inputs), t.uses), list(st.outs),
                            [a._data, b._data], SMS, False, const_params=True, alias=alias)
    head = p.kernel.split(" {", 1)[0]  # the parameter list
    assert "const float* __restrict__ in0" in head and "const float* in1" in head
    assert "float* __restrict__ out0" in head and "float* out1" in head
    (q,) = kfusion.programs(kfusion.Graph(list(st.inputs), t.uses), list(st.outs),
                            [a._data, b._data], SMS, False, const_params=True)
    assert "const float* in1" not in q.kernel and q.source != p.source  # its own cubin


def test_tiers_quick_kernels_then_the_full_ones(monkeypatch):
    """TIERED, on stand-ins (no GPU): a launch whose kernels no cache holds runs the quick
    ones; its second call starts the full compile on the background thread; the first call
    after that is done takes the full kernels. finish_compiling starts a launch called once
    too; a failed compile keeps the quick kernels; nothing tiers where the kernels are
    cached."""
    cp, launches = _stand_in(monkeypatch)
    monkeypatch.setattr(kfusion, "TIERED", True)
    quick_k = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=111))
    full_k = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=222))
    loads = []

    def load(pairs, options, prepared=None):
        loads.append((options, prepared))
        return [quick_k if options[-1] == "QUICK" else full_k] * len(pairs)
    monkeypatch.setattr(kfusion, "load_kernels", load)
    monkeypatch.setattr(kfusion, "first_call_options", lambda o: tuple(o) + ("QUICK",))
    ready = [False]
    monkeypatch.setattr(kfusion, "kernels_ready", lambda pairs, o: ready[0])
    gate, compiled, fail = threading.Event(), [], [False]

    def compile_cubins(pairs, options, arch):
        gate.wait(30)
        if fail[0]:
            raise RuntimeError("NVRTC said no")
        compiled.append((len(pairs), options, arch))
        return {"key": (b"cubin", False)}
    monkeypatch.setattr(kfusion, "compile_cubins", compile_cubins)
    monkeypatch.setattr(kfusion, "device_arch", lambda: "sm_90")
    x = xp.zeros((5, 7), dtype=xp.float32, device=CPU)
    t, nodes, *_ = _trace.trace(lambda a, s: a * s, [x, 0.5], {}, CPU)
    dx = _DevArray((5, 7), np.float32)

    def new_launch():
        return kfusion.Launch(cp, t, nodes, [dx], const_params=True)

    launch = new_launch()
    assert launch.variant[0] == 111 and launch.tiering and launch.tuned
    launch([dx], [None, 2.0])
    assert launches[-1][0] == 111 and launch.pending is None  # one call: nothing started
    launch([dx], [None, 2.0])
    assert launch.quick is None and launch.pending is not None  # the second call starts it
    launch([dx], [None, 2.0])
    assert launches[-1][0] == 111 and launch.tiering  # not done yet: the quick kernel runs
    gate.set()
    kfusion.finish_compiling()
    launch([dx], [None, 2.0])
    assert launches[-1][0] == 222 and not launch.tiering and launch.pending is None
    assert compiled == [(1, kfusion.fused_options(), "sm_90")]
    assert loads[-1] == (kfusion.fused_options(), {"key": (b"cubin", False)})
    once = new_launch()  # called once: finish_compiling starts it
    once([dx], [None, 2.0])
    kfusion.finish_compiling()
    once([dx], [None, 2.0])
    assert launches[-1][0] == 222 and not once.tiering
    fail[0] = True  # a failed full compile: the quick kernel stays, and no error reaches a call
    failing = new_launch()
    failing([dx], [None, 2.0])
    kfusion.finish_compiling()
    failing([dx], [None, 2.0])
    assert launches[-1][0] == 111 and not failing.tiering
    ready[0] = True  # cached: the full kernels at once
    cached = new_launch()
    assert cached.variant[0] == 222 and not cached.tiering and cached.quick is None


# ---- merged axes ------------------------------------------------------------------------------
def _merge(f, *arrays):
    t, nodes, *_ = _trace.trace(f, list(arrays), {}, CPU)
    return fp.merge_axes(list(nodes), t.inputs, [a._data for a in arrays]), nodes


def test_merge_axes_of_image_statistics():
    """mean and var over (0, 2, 3) of NCHW run over (N, C, H*W), reducing (0, 2); the outputs
    keep their flat order and only their shapes change."""
    x = xp.ones((4, 3, 5, 6), dtype=xp.float32)
    m, nodes = _merge(lambda a: (xp.mean(a, axis=(0, 2, 3)), xp.var(a * 2, axis=(0, 2, 3),
                                                                        keepdims=True)), x)
    assert m.groups == ((0,), (1,), (2, 3))
    assert [n.shape for n in m.outs] == [(3,), (1, 3, 1)]
    assert [n.attr.axes for n in m.outs] == [(0, 2), (0, 2)]
    (lay,) = m.layouts
    assert lay.shape == (4, 3, 30) and lay.strides == (360, 120, 4) and lay.flags.c_contiguous
    assert [math.prod(n.shape) for n in m.outs] == [math.prod(n.shape) for n in nodes]


def test_merge_axes_of_a_broadcast_program_and_a_permuted_input():
    """x - mean(x, keepdims) over a per-channel (C, 1, 1) parameter: every node is S, S with
    1 on the reduced axes, or one element; a permuted input merges where memory allows."""
    base = xp.ones((3, 4, 5, 6), dtype=xp.float64)  # C, N, H, W in memory
    x = xp.permute_dims(base, (1, 0, 2, 3))
    g = xp.ones((3, 1, 1), dtype=xp.float64)

    def f(a, b):
        d = a - xp.mean(a, axis=(0, 2, 3), keepdims=True)
        return d * b / xp.sqrt(xp.var(a, axis=(0, 2, 3), keepdims=True) + 1e-5)
    m, nodes = _merge(f, x, g)
    assert m.groups == ((0,), (1,), (2, 3))
    assert m.outs[0].shape == (4, 3, 30)
    xl, gl = m.layouts
    assert xl.shape == (4, 3, 30) and xl.strides == (240, 960, 8) and not xl.flags.c_contiguous
    assert gl.shape == (1, 3, 1) and gl.strides == (0, 8, 0)


@pytest.mark.parametrize("case", ["trailing", "all", "argmax", "norm", "leading fed"])
def test_merge_axes_of_other_reductions(case):
    x = xp.ones((4, 5, 6), dtype=xp.float32)
    f, groups, shape = {
        "trailing": (lambda a: xp.sum(a * a, axis=(1, 2)), ((0,), (1, 2)), (4,)),
        "all": (lambda a: xp.max(a), ((0, 1, 2),), ()),
        "argmax": (lambda a: xp.argmax(a), ((0, 1, 2),), ()),
        "norm": (lambda a: xp.linalg.vector_norm(a, axis=(0, 1), keepdims=True),
                 ((0, 1), (2,)), (1, 6)),
        "leading fed": (lambda a: a - xp.sum(a, axis=(0, 1)), ((0, 1), (2,)), (20, 6)),
    }[case]
    m, _ = _merge(f, x)
    assert m.groups == groups and m.outs[0].shape == shape


@pytest.mark.parametrize("case", ["strides", "axes differ", "view", "middle fed", "one axis",
                                  "no reduction"])
def test_merge_axes_refusals(case):
    """None where merging would change what is read: neighbours that memory does not walk as
    one, reductions over different axes, views, a reduction over middle axes feeding further
    work (broadcasting would align it elsewhere), nothing to merge, no reduction."""
    x = xp.ones((4, 5, 6), dtype=xp.float32)
    f, args = {
        "strides": (lambda a: xp.sum(a, axis=(1, 2)),
                    [xp.permute_dims(xp.ones((4, 6, 5), dtype=xp.float32), (0, 2, 1))]),
        "axes differ": (lambda a: (xp.sum(a, axis=(1, 2)), xp.max(a, axis=0)), [x]),
        "view": (lambda a: xp.sum(a[:, ::2, :], axis=(1, 2)), [x]),
        "middle fed": (lambda a: a - xp.sum(a, axis=(1, 2)),
                       [xp.ones((4, 5, 4), dtype=xp.float32)]),
        "one axis": (lambda a: xp.sum(a, axis=1), [x]),
        "no reduction": (lambda a: a * 2, [x]),
    }[case]
    m, _ = _merge(f, *args)
    assert m is None


def test_fused_plan_names_merged_axes():
    x = xp.ones((4, 3, 5, 6), dtype=xp.float32)
    plan = fuse(lambda a: xp.mean(a * a, axis=(0, 2, 3))).plan(x)
    assert "axes (2, 3) run as one" in plan


def test_reduced_index_divides_by_multiplying_where_the_range_is_short():
    """A range under 2**31 elements decomposes its index by magic numbers; a longer one keeps
    the 64-bit division."""
    def source(shape):
        x = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape,
                                            (4 * shape[1] * shape[2], 4 * shape[2], 4))
        g = kred.graph("sum", "float32", "float32", shape, (0, 2), False)
        return kfusion.programs(g[0], [g[1]], [x], 132, tune=False)[0].source
    short, long = source((64, 64, 3136)), source((2**16, 2, 2**16))
    magic = "__umulhi((unsigned)r"  # the reduced index's (the header has a magic divide too)
    assert magic in short and "% g.v" not in short
    assert magic not in long and "% g.v" in long


def _merge_program(seed):
    """A random program of the kind merge_axes takes (its arguments and function): work over
    a shape S of 2 to 4 axes, reductions over one set of its axes, keepdims results fed back,
    an argument of S's shape in a permuted or flipped layout, and maybe a second one of S or
    of S with 1 on the reduced axes."""
    import random
    r = random.Random(seed)
    nd = r.choice([2, 3, 4])
    S = tuple(r.choice([1, 2, 3, 4, 5]) for _ in range(nd))
    A = tuple(sorted(r.sample(range(nd), r.randint(1, nd))))
    K = tuple(1 if a in A else n for a, n in enumerate(S))
    exact = r.random() < 0.6
    dt = xp.int64 if exact else xp.float64
    vals = np.random.default_rng(seed)

    def arg(shape):
        perm = list(range(len(shape)))
        r.shuffle(perm)
        base = xp.asarray(vals.integers(-5, 6, [shape[p] for p in perm]), dtype=dt)
        a = xp.permute_dims(base, tuple(perm.index(i) for i in range(len(shape))))
        flips = tuple(i for i in range(len(shape)) if r.random() < 0.25)
        return xp.flip(a, axis=flips) if flips else a
    args = [arg(S)]
    second = r.choice([None, "S", "K"])
    if second == "S":
        args.append(arg(S))
    elif second == "K":
        k = K[r.randint(0, nd - 1):] if r.random() < 0.5 else K  # broadcasting's left padding
        args.append(arg(k))
    kinds = ["sum", "max", "min", "prod", "argmax", "argmin", "any", "all"] if exact else \
        ["mean", "var", "std", "sum"]
    picks = [r.choice(kinds) for _ in range(r.randint(1, 3))]
    keeps = [r.random() < 0.5 for _ in picks]
    fed = r.random() < 0.4

    def f(*a):
        t = a[0] * 2 + a[1] if len(a) > 1 else a[0] - 1
        outs = []
        for kind, keep in zip(picks, keeps):
            if kind in ("argmax", "argmin"):
                if len(A) == nd:
                    outs.append(getattr(xp, kind)(t, keepdims=keep))
                elif len(A) == 1:
                    outs.append(getattr(xp, kind)(t, axis=A[0], keepdims=keep))
                continue
            operand = t > 0 if kind in ("any", "all") else t
            outs.append(getattr(xp, kind)(operand, axis=A, keepdims=keep))
        if fed:
            outs.append(t - xp.max(t, axis=A, keepdims=True))
        return tuple(outs) if outs else t * 3
    return f, args, exact


@pytest.mark.parametrize("seed", range(300))
def test_merged_programs_compute_what_the_originals_do(seed):
    """merge_axes' program over the merged views of the same memory, replayed through the
    eager functions, gives the original program's values in their shapes (cpu: the planning
    is the same on every device)."""
    from xp_cuda.fusion._fuse import evaluate
    f, args, exact = _merge_program(seed)
    t, nodes, *_ = _trace.trace(f, args, {}, CPU)
    m = fp.merge_axes(list(nodes), t.inputs, [a._data for a in args])
    if m is None:
        return
    want = evaluate(list(nodes), args, (), ())
    views = {}
    for node, a, lay in zip(m.inputs, args, m.layouts):
        d = a._data
        views[node.attr.pos] = xp.asarray(
            np.lib.stride_tricks.as_strided(d, lay.shape, lay.strides).copy()) \
            if lay.shape != () else a
    got = evaluate(list(m.outs), [views[i] for i in range(len(args))], (), ())
    for g, w, o, mo in zip(got, want, nodes, m.outs):
        assert w.shape == o.shape and g.shape == mo.shape and g.size == w.size
        gn = np.asarray(g._data).reshape(w.shape)
        if exact or w.dtype.kind != "float":
            np.testing.assert_array_equal(gn, np.asarray(w._data))
        else:
            np.testing.assert_allclose(gn, np.asarray(w._data), rtol=1e-12, atol=1e-12)


def test_merge_program_generator_reaches_merges():
    """The generator above is not vacuous: most of its programs merge."""
    merged = 0
    for seed in range(300):
        f, args, _ = _merge_program(seed)
        t, nodes, *_ = _trace.trace(f, args, {}, CPU)
        merged += fp.merge_axes(list(nodes), t.inputs, [a._data for a in args]) is not None
    assert merged > 60, merged
