"""Reductions with struct accumulators and prologues on the shared generator (reduction.py):
argmax/argmin, var/std, vector norms. Planning and printing are checked on the CPU, every
program compiles with NVRTC, and on a GPU the results are compared with NumPy."""
import math
import types

import numpy as np
import pytest

from xp_cuda._devices import Device, cuda_device_count
from xp_cuda._kernels import _runtime as R
from xp_cuda._kernels import fusion as kfusion
from xp_cuda._kernels import fusion_plan as fp
from xp_cuda._kernels import reduction as kred
from xp_cuda._kernels.fusion_ir import Op

SMS = 132
ORDS = (1, 2, math.inf, -math.inf, 0, 3, -1.5, 0.5)


def fake(shape, itemsize, strides=None):
    """An input layout: what planning reads of an array (C order unless strides given)."""
    contiguous = strides is None
    if strides is None:
        st, acc = [], itemsize
        for n in reversed(shape):
            st.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(st))
    return types.SimpleNamespace(itemsize=itemsize, shape=tuple(shape), strides=tuple(strides),
                                 nbytes=0, flags=types.SimpleNamespace(c_contiguous=contiguous))


def _program(g_out, x, name="k"):
    g, out = g_out
    return kfusion.Program(g, [out], [x], SMS, name=name)


def _layouts(shape, isz):
    """C order, transposed, negatively strided along the last axis, every other row."""
    c = fake(shape, isz)
    out = [c, fake(shape, isz, tuple(reversed(fake(tuple(reversed(shape)), isz).strides)))]
    out.append(fake(shape, isz, c.strides[:-1] + (-c.strides[-1],)))
    if len(shape) > 1:
        out.append(fake(shape, isz, (2 * c.strides[0],) + c.strides[1:]))
    return out


# ---- planning -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,dt,want_acc", [("argmax", "float32", "float32"),
                                              ("argmin", "int8", "int8"),
                                              ("argmax", "bool", "bool")])
def test_arg_plan(kind, dt, want_acc):
    isz = np.dtype(dt).itemsize
    for shape, axis in (((7, 4096), 1), ((20011, 3), 0), ((2**22,), None), ((5, 6, 7), None)):
        p = _program(kred.arg_graph(kind, dt, shape, axis, False), fake(shape, isz))
        (r,) = p.plan.reductions
        assert (r.kind, r.dtype, r.result) == (kind, want_acc, "int64")
        # partials are 16-byte (value, index) structs: two 8-byte words each
        assert r.scratch[0] == ((r.P * r.S * 2, "uint64") if r.S > 1 else None)
        assert f"XpArg<{kfusion.CTYPES[dt]}>* __restrict__ part0" in p.kernel
        assert "long long* __restrict__ out0" in p.kernel and ".i" in p.kernel
    # a long row is split across blocks (the partials path) and the shared tree holds structs
    p = _program(kred.arg_graph(kind, dt, (2**22,), None, False), fake((2**22,), isz))
    assert p.plan.reductions[0].S > 1 and f"xp_smem[{fp.THREADS * 16}]" in p.kernel


@pytest.mark.parametrize("dt,want", [("float32", "float64"), ("complex64", "complex64"),
                                     ("float64", "float64"), ("int64", "int64")])
def test_prod_accumulates_wide(dt, want):
    """float32 products accumulate in float64 and round once at the end (WIDER_PRODUCT);
    sums, and products of other dtypes, keep the node's dtype."""
    isz = np.dtype(dt).itemsize
    for kind, acc in (("prod", want), ("sum", dt)):
        p = _program(kred.graph(kind, dt, dt, (4096, 64), (0,), False), fake((4096, 64), isz))
        (r,) = p.plan.reductions
        assert (r.dtype, r.result) == (acc, dt)


def test_wide_column_product_step():
    """A float32 column product steps by SCALAR_BYTES of its float64 accumulator (4 elements,
    all loaded before the tree), two outputs a lane where there are enough columns; sums,
    other dtypes and rows keep the input's step and one output a lane."""
    def plan(kind, dt, shape, axes, strides=None):
        p = _program(kred.graph(kind, dt, dt, shape, axes, False),
                     fake(shape, np.dtype(dt).itemsize, strides))
        r = p.plan.reductions[0]
        return r.unroll, r.colvec, p.kernel
    for shape, cv in (((64, 2**20), 2), ((8192, 8192), 2), ((2**22, 64), 1), ((64, 1001), 1)):
        U, colvec, src = plan("prod", "float32", shape, (0,))
        assert (U, colvec) == (fp.SCALAR_BYTES // 8, cv) == (4, cv)
        assert "jj + 3 * G < jend; jj += 4 * G" in src
        assert plan("sum", "float32", shape, (0,))[:2] == (fp.SCALAR_BYTES // 4, 1)
        assert plan("prod", "float64", shape, (0,))[:2] == (4, 1)
    # int32 products widen to int64 but keep their input's step; so do rows
    assert plan("prod", "int32", (8192, 8192), (0,))[:2] == (8, 1)
    assert plan("prod", "float32", (64, 4096), (1,))[0] == 8
    # strided rows (a stack's diagonals) step STRIDED_ROW_STEP elements of any width
    for dt in ("int8", "float32", "float64"):
        isz = np.dtype(dt).itemsize
        U, _, _ = plan("sum", dt, (16384, 64), (1,), (64 * 64 * isz, 65 * isz))
        assert U == fp.STRIDED_ROW_STEP == 4


def test_arg_graph_axes_and_shapes():
    g, out = kred.arg_graph("argmin", "float64", (3, 4, 5), 1, True)
    assert out.op is Op.REDUCE and out.attr.axes == (1,) and out.shape == (3, 1, 5)
    assert out.dtype.name == "int64"
    g, out = kred.arg_graph("argmax", "float64", (3, 4, 5), None, False)
    assert out.attr.axes == (0, 1, 2) and out.shape == ()
    g, out = kred.arg_graph("argmax", "float64", (3, 4, 5), None, True)
    assert out.shape == (1, 1, 1)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_moments_plan_and_runtime_correction(dt):
    isz = np.dtype(dt).itemsize
    shape = (8192, 8192)
    for axes in ((0,), (1,)):
        progs = [_program(kred.moments_graph("var", dt, shape, axes, c, False, dt),
                          fake(shape, isz)) for c in (0, 1, 0.5)]
        (r,) = progs[0].plan.reductions
        assert (r.dtype, r.result) == ("float64", dt)  # float64 moments for float32 too
        # the correction is a runtime value: one source for every correction
        assert progs[0].kernel == progs[1].kernel == progs[2].kernel
        bits = [int(np.float64(c).view(np.int64)) for c in (0, 1, 0.5)]
        for p, b in zip(progs, bits):
            assert b in p.gvals
        assert "XpMom<double>* __restrict__ part0" in progs[0].kernel
        assert f"xp_smem[{fp.THREADS * 24}]" in progs[0].kernel
        if r.S > 1:
            assert r.scratch[0] == (r.P * r.S * 3, "uint64")
    # the column case of (8192, 8192) splits its ranges; the row case needs no split
    col = _program(kred.moments_graph("var", dt, shape, (0,), 1, False, dt), fake(shape, isz))
    row = _program(kred.moments_graph("var", dt, shape, (1,), 1, False, dt), fake(shape, isz))
    assert col.plan.reductions[0].S > 1 and not col.plan.reductions[0].row_like
    assert row.plan.reductions[0].row_like and row.plan.reductions[0].vec == 16 // isz
    # batches: BATCH_VEC_STEPS vectors on the vector path, a step's unrolled elements (one
    # merge a step) on the scalar loop
    from xp_cuda._kernels.fusion_render import BATCH_VEC_STEPS
    assert f"double xb[{BATCH_VEC_STEPS * (16 // isz)}]" in row.kernel
    U = col.plan.reductions[0].unroll
    assert U == {"float32": 8, "float64": 4}[dt]
    assert f"const double xq[{U}]" in col.kernel and col.kernel.count("::batch(") == 1
    std = _program(kred.moments_graph("std", dt, shape, (1,), 0, True, dt), fake(shape, isz))
    assert "sqrt(XpMoments<double>::var(" in std.kernel
    if dt == "float32":  # std's root is taken in float64, then rounded once
        assert "xp_cvt<float>(sqrt(" in std.kernel


def _nodes(out):
    seen, order = set(), []

    def walk(n):
        if n is None or id(n) in seen:
            return
        seen.add(id(n))
        for a in n.args:
            walk(a)
        order.append(n)
    walk(out)
    return order


@pytest.mark.parametrize("dt,rd", [("float32", "float32"), ("float64", "float64"),
                                   ("complex64", "float32"), ("complex128", "float64"),
                                   ("int16", "float64")])
def test_norm_graph(dt, rd):
    shape = (5, 7)
    for ord_ in ORDS:
        g, out = kred.norm_graph(dt, shape, ord_, (1,), False, rd)
        a = out.attr
        names = [n.attr.name for n in _nodes(out) if n.op is Op.ELEMENTWISE]
        assert out.dtype.name == rd and out.shape == (5,) and len(g.inputs) == 1
        if ord_ in (math.inf, -math.inf):  # exact: no float64 needed
            assert (a.kind, a.acc, a.epilogue) == ("max" if ord_ > 0 else "min", rd, None)
            assert names == ["abs"]
            continue
        assert a.kind == "sum" and a.acc == "float64"
        if ord_ == 0:
            assert names == ["not_equal"] and a.epilogue is None
        elif ord_ == 1:
            assert names == ["abs"] and a.epilogue is None
        elif ord_ == 2:
            assert a.epilogue.name == "sqrt"
            assert names == (["abs", "square"] if dt[0] == "c" else ["square"])
        else:
            assert names == ["abs", "pow"] and a.epilogue.name == "pow"
            assert a.epilogue.operand == 1.0 / ord_
        if dt.startswith("int"):  # abs of an integer is taken in floating (no wrap-around)
            for n in _nodes(out):
                if n.op is Op.ELEMENTWISE and n.attr.name == "abs":
                    assert n.attr.compute_dtype == rd


def test_norm_program_is_one_kernel_reading_x_once():
    shape = (4096, 4096)
    p = _program(kred.norm_graph("float32", shape, 2, (1,), False, "float32"), fake(shape, 4))
    (r,) = p.plan.reductions
    assert r.flat and r.vec == 4 and r.flat_inputs == (0,) and len(p.plan.groups) == 0
    assert "XpF_sqrt_float64_float64::f(" in p.kernel and "xp_cvt<float>(" in p.kernel
    # one input, one output, no intermediate array: abs/square happen in registers
    assert p.kernel.count("__restrict__ in") == 1 and "out1" not in p.kernel
    assert p.kernel.count("(in0)[") == 3  # vector loads: two in flight, one in the tail


class _FakeCp:
    def __init__(self):
        self.calls = []
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))
        self.lib = np.lib  # stride_tricks.as_strided: merged axes (merge_dims) are a view

    def empty(self, shape, dtype):
        self.calls.append(("empty", shape, dtype))
        return np.empty(shape, dtype=dtype)

    def full(self, shape, value, dtype):
        self.calls.append(("full", shape, value, dtype))
        return np.full(shape, value, dtype=dtype)


def test_empty_cases_need_no_kernel():
    cp = _FakeCp()
    out = kred.arg_reduce(cp, "argmax", np.zeros((0, 5), np.float32), 1, True)
    assert out.shape == (0, 1) and out.dtype == np.int64
    with pytest.raises(ValueError):
        kred.arg_reduce(cp, "argmin", np.zeros((3, 0), np.float32), 1, False)
    out = kred.moments(cp, "var", np.zeros((3, 0)), (1,), 0, False, "float64")
    assert out.shape == (3,) and np.isnan(out).all()
    out = kred.moments(cp, "std", np.zeros((0, 4), np.float32), (1,), 1, True, "float32")
    assert out.shape == (0, 1) and out.dtype == np.float32
    for ord_, value in ((2, 0.0), (math.inf, 0.0), (-1, math.inf), (-math.inf, math.inf)):
        out = kred.norm_reduce(cp, np.zeros((3, 0), np.complex64), ord_, (1,), False, "float32")
        assert out.dtype == np.float32 and (out == value).all()
    assert all(c[0] in ("empty", "full") for c in cp.calls)


def test_new_kinds_share_the_bounded_cache(monkeypatch):
    built = []

    class Launch:  # reports the shape the real launch allocates (out_specs)
        def __init__(self, kind, shape):
            self.kind, self.out_specs = kind, [(shape, None)]

        def __call__(self, ins, values):
            return [(self.kind, self.out_specs[0][0])]

    def launch(cp, g, out, x):
        built.append(out.attr.kind)
        return Launch(out.attr.kind, out.shape)
    monkeypatch.setattr(kred, "_launch", launch)
    monkeypatch.setattr(R, "_programs", type(R._programs)())
    cp = _FakeCp()
    x = np.zeros((4, 6), np.float32)
    assert kred.arg_reduce(cp, "argmax", x, 1, False) == ("argmax", (4,))
    assert kred.arg_reduce(cp, "argmax", x, 1, False) == ("argmax", (4,))  # a hit
    assert kred.arg_reduce(cp, "argmin", x, None, True) == ("argmin", (1, 1))
    assert kred.moments(cp, "var", x, (0,), 1, False, "float32") == ("var", (6,))
    assert kred.moments(cp, "var", x, (0,), 0, False, "float32") == ("var", (6,))
    assert kred.norm_reduce(cp, x, 2, (0, 1), False, "float32") == ("sum", ())
    assert kred.norm_reduce(cp, x, math.inf, (0, 1), False, "float32") == ("max", ())
    assert built == ["argmax", "argmin", "var", "var", "sum", "max"]
    for n in range(R.PROGRAM_CACHE_SIZE + 3):
        kred.moments(cp, "std", np.zeros(n + 1, np.float32), (0,), 0, False, "float32")
    assert len(R._programs) == R.PROGRAM_CACHE_SIZE


# ---- NVRTC: every program of the new kinds compiles -----------------------------------------
from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


def _cases():
    """(name, (graph, out), layout) over dtypes and layouts: row-like, column-like, all axes,
    strided (transposed, negative, every other row), split (S > 1) and 0-d / 1-D."""
    cases = []
    for dt in ("float32", "float64", "int8", "uint64", "bool"):
        isz = np.dtype(dt).itemsize
        for shape, axes in (((129, 67), (0, 1, None)), ((3, 5, 7), (1, None)),
                            ((1000003,), (0,)), ((), (None,))):
            for x in (_layouts(shape, isz) if shape else [fake((), isz)]):
                for axis in axes:
                    for kind in ("argmax", "argmin"):
                        cases.append((kind, kred.arg_graph(kind, dt, shape, axis, False), x))
    for dt in ("float32", "float64"):
        isz = np.dtype(dt).itemsize
        for shape, axl in (((129, 67), ((0,), (1,), (0, 1), ())), ((3, 5, 7, 9), ((0, 2),
                                                                                 (1, 3))),
                           ((8192, 8192), ((0,), (1,))), ((7,), ((0,),))):
            for x in _layouts(shape, isz):
                for axes in axl:
                    for kind in ("var", "std"):
                        cases.append((kind, kred.moments_graph(kind, dt, shape, axes, 1, False,
                                                               dt), x))
    for dt, rd in (("float32", "float32"), ("float64", "float64"), ("complex64", "float32"),
                   ("complex128", "float64"), ("int32", "float64")):
        isz = np.dtype(dt).itemsize
        for ord_ in ORDS:  # each prologue and epilogue on a row and a column
            for axes in ((0,), (1,)):
                cases.append((f"norm{ord_}", kred.norm_graph(dt, (129, 67), ord_, axes, False,
                                                             rd), fake((129, 67), isz)))
        for shape, axl in (((129, 67), ((0,), (1,), (0, 1))), ((3, 5, 7), ((0, 2),))):
            for x in _layouts(shape, isz):  # every layout for two orders
                for axes in axl:
                    for ord_ in (2, 3):
                        cases.append((f"norm{ord_}", kred.norm_graph(dt, shape, ord_, axes,
                                                                     False, rd), x))
    return cases


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_every_new_reduction_program_compiles_with_nvrtc():
    from xp_cuda._kernels import nvrtc_compile
    progs, seen, kinds = [], set(), set()
    for n, (kind, gout, x) in enumerate(_cases()):
        p = _program(gout, x, name=f"r{n}")
        text = p.kernel.replace(f" r{n}(", " R(")
        if text not in seen:  # many layouts print the same kernel
            seen.add(text)
            progs.append(p)
            kinds.add("norm" if kind.startswith("norm") else kind)
    assert kinds == {"argmax", "argmin", "var", "std", "norm"} and len(progs) > 60
    for s in range(0, len(progs), 24):
        chunk = progs[s:s + 24]
        ptx = nvrtc_compile(kfusion.translation_unit(chunk), name=f"red_{s}.cu",
                            options=kfusion.OPTIONS)
        for p_ in chunk:
            assert f".entry {p_.name}(" in ptx


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_word_column_programs_compile_with_nvrtc():
    """Every (kind, dtype) that combines 4-byte words over columns (fusion_plan.WORD_KINDS),
    at one, two and four words a lane, compiles; each kernel holds its word op."""
    from xp_cuda._kernels import nvrtc_compile
    progs = []
    for kind, dt in sorted(fp.WORD_KINDS):
        isz = np.dtype(dt).itemsize
        for shape in ((2**22, 64), (8192, 8192), (9, 12)):
            p = _program(kred.graph(kind, dt, "bool" if dt == "bool" else dt, shape, (0,),
                                    False), fake(shape, isz), name=f"w{len(progs)}")
            r = p.plan.reductions[0]
            if r.words:
                assert "unsigned int aw[" in p.kernel, (kind, dt, shape)
                progs.append(p)
    assert {p.plan.reductions[0].words for p in progs} == {1, 2, 4}
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="words.cu",
                        options=kfusion.OPTIONS)
    for p_ in progs:
        assert f".entry {p_.name}(" in ptx


def test_word_vector_programs_compile_with_nvrtc():
    """Rows and whole arrays of an input of fusion_plan.WORD_KINDS combine their 16-byte
    vectors as four words on the vector path; a fused operand (not the input itself) and
    other kinds keep element by element; every such kernel compiles."""
    from xp_cuda._kernels import nvrtc_compile
    progs = []
    for kind, dt in sorted(fp.WORD_KINDS):
        isz = np.dtype(dt).itemsize
        for shape, axes in (((2**22, 64), (1,)), ((8192, 8192), (0, 1)), ((48,), (0,))):
            p = _program(kred.graph(kind, dt, "bool" if dt == "bool" else dt, shape, axes,
                                    False), fake(shape, isz), name=f"v{len(progs)}")
            r = p.plan.reductions[0]
            assert (r.words, r.vec, r.colvec) == (4, 16 // isz, 1), (kind, dt, shape)
            assert "unsigned int aw[4];" in p.kernel and ".v[q]" not in p.kernel
            progs.append(p)
    # no axis reduced: a column section (colvec > 1) whose lanes take two bool a row keep
    # their own words (none: two bytes are no word), not the vector path's four
    r = _program(kred.graph("all", "bool", "bool", (6, 7, 33), (), False),
                 fake((6, 7, 33), 1)).plan.reductions[0]
    assert (r.colvec, r.words) == (2, 0)
    for kind, dt in (("sum", "int8"), ("max", "int32"), ("any", "int8"), ("all", "float32")):
        r = _program(kred.graph(kind, dt, "bool" if kind in ("any", "all") else dt,
                                (64, 64), (1,), False),
                     fake((64, 64), np.dtype(dt).itemsize)).plan.reductions[0]
        assert r.words == 0 and r.vec > 1, (kind, dt)
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="vwords.cu",
                        options=kfusion.OPTIONS)
    for p_ in progs:
        assert f".entry {p_.name}(" in ptx


# (shape, axes) whose innermost reduced axis is a contiguous run of whole 16-byte vectors with
# a kept axis before it: the segmented vector path (fusion_plan.RED_VECTOR_BYTES, ReducePlan.seg)
_SEGMENTED = [((8, 6, 64), (0, 2)), ((2, 3, 4, 5, 32), (0, 2, 4)), ((3, 1, 7, 16), (0, 1, 3)),
              ((64, 64, 3136), (0, 2)), ((64, 3, 16), (0, 2)), ((50, 3, 4), (0, 2))]
# the last two: runs of one vector (16 int8, 4 float32) where each lane takes several


def _segmented_graphs(dt, shape, axes):
    """(name, (graph, out)) of every kind that reduces `dt` over several axes."""
    if dt == "bool":
        return [(k, kred.graph(k, dt, dt, shape, axes, False)) for k in ("any", "all")]
    kinds = ("sum", "prod") if dt.startswith("complex") else ("sum", "prod", "max", "min")
    out = [(k, kred.graph(k, dt, dt, shape, axes, False)) for k in kinds]
    if dt.startswith("float"):
        out += [(k, kred.moments_graph(k, dt, shape, axes, 1, False, dt)) for k in ("var", "std")]
    if not dt.startswith(("int", "uint")):
        rd = {"complex64": "float32"}.get(dt, dt)
        out.append(("norm", kred.norm_graph(dt, shape, 2, axes, False, rd)))
    return out


def test_segmented_path_splits_into_its_own_waves():
    """The runs' path splits long ranges into SEG_WAVES waves of resident threads, kinds
    with their own (KIND_WAVES: max, var) keep theirs, and the flat path keeps RED_WAVES."""
    from xp_cuda._kernels import fusion_plan as fp

    def waves(kind, dt, shape, axes):
        r = _program(kred.graph(kind, dt, dt, shape, axes, False),
                     fake(shape, np.dtype(dt).itemsize)).plan.reductions[0]
        return r, r.P * r.S * r.G / (SMS * 2048)

    one_split = 64 * 256 / (SMS * 2048)  # P * G of these layouts: one split more or less
    for kind, dt in (("sum", "float32"), ("prod", "int16"), ("any", "bool"), ("max", "float32")):
        r, w = waves(kind, dt, (256, 64, 4096), (0, 2))
        want = fp.KIND_WAVES.get(kind, fp.SEG_WAVES)
        assert r.seg and r.S > 1 and abs(w - want) <= one_split, (kind, dt, w)
        r, w = waves(kind, dt, (16384, 4096), (0, 1))
        want = fp.KIND_WAVES.get(kind, fp.RED_WAVES)
        assert r.flat and not r.seg and abs(w - want) <= 0.01, (kind, dt, w)
    assert fp.SEG_WAVES < fp.RED_WAVES


@pytest.mark.skipif(_nvrtc_reason() is not None, reason="NVRTC not available")
def test_segmented_vector_programs_compile_with_nvrtc():
    """Every kind over (N, C, L)-like layouts takes the vector path through the runs of its
    innermost reduced axis: one division a vector (its address), words where the kind has
    them; every such kernel compiles. Runs of part of a vector, a strided input and a flat
    range keep the paths they had."""
    from xp_cuda._kernels import nvrtc_compile
    progs = []
    for dt in ("float32", "float64", "int8", "int16", "uint8", "bool", "complex64"):
        isz = np.dtype(dt).itemsize
        for shape, axes in _SEGMENTED:
            for kind, g in _segmented_graphs(dt, shape, axes):
                p = _program(g, fake(shape, isz), name=f"s{len(progs)}")
                r = p.plan.reductions[0]
                if shape[-1] * isz % 16:  # runs of part of a vector: the element loop
                    assert not r.seg and r.vec == 1, (kind, dt, shape)
                    continue
                assert r.seg and not r.flat and r.vec == max(1, 16 // isz), (kind, dt, shape)
                assert "XpPack<" in p.kernel, (kind, dt, shape)
                if shape[-1] > r.vec:  # a vector's run and place: one multiply and shift
                    assert "const unsigned sv0_q" in p.kernel, (kind, dt, shape)
                progs.append(p)
    assert {p.plan.reductions[0].words for p in progs} == {0, 4}  # int8 max, bool any: words
    for shape, axes, x in (((8, 6, 66), (0, 2), fake((8, 6, 66), 4)),  # 66: half a vector
                           ((8, 6, 64), (0, 2), fake((8, 6, 64), 4, (4, 8 * 64 * 4, 4 * 8))),
                           ((64, 32), (1,), fake((64, 32), 4, (4 * 130, 4))),  # rows apart
                           ((8, 6, 64), (1, 2), fake((8, 6, 64), 4))):  # flat: rows
        r = _program(kred.graph("sum", "float32", "float32", shape, axes, False),
                     x).plan.reductions[0]
        assert not r.seg, (shape, axes, x.strides)
    # strided views whose runs are contiguous whole vectors: rows of a column slice, every
    # other image, channels first of a permuted NHWC (eager reductions after orientation)
    for shape, axes, st in (((64, 32), (1,), (128, 1)), ((4, 6, 64), (0, 2), (768, 64, 1)),
                            ((6, 4, 64), (1, 2), (64, 384, 1)), ((64, 32), (1,), (-128, 1))):
        x = fake(shape, 4, tuple(4 * t for t in st))
        p = _program(kred.graph("sum", "float32", "float32", shape, axes, False), x,
                     name=f"s{len(progs)}")
        r = p.plan.reductions[0]
        assert r.seg and not r.flat and r.vec == 4, (shape, st)
        progs.append(p)
    for s in range(0, len(progs), 32):
        chunk = progs[s:s + 32]
        ptx = nvrtc_compile(kfusion.translation_unit(chunk), name=f"seg_{s}.cu",
                            options=kfusion.OPTIONS)
        for p_ in chunk:
            assert f".entry {p_.name}(" in ptx


# ---- on a GPU, against NumPy ----------------------------------------------------------------
needs_gpu = [pytest.mark.cuda,
             pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")]


def _views(a):
    """The array, transposed, reversed along its last axis, and every other row."""
    out = [("c", a)]
    if a.ndim > 1:
        out += [("T", a.T), ("step", a[::2, ::-3])]
    if a.ndim:
        out.append(("neg", a[..., ::-1]))
    return out


def _random(rng, shape, dt, special=True, nan=False):
    if dt == "bool":
        return rng.random(shape) > 0.7
    if dt.startswith(("int", "uint")):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -40), min(info.max, 40), shape).astype(dt)
    a = rng.standard_normal(shape).astype(dt)
    if special and a.size > 16:  # ties, NaN, -0.0 / +0.0, inf
        flat = a.reshape(-1)
        idx = rng.integers(0, a.size, 6)
        flat[idx[:3]] = flat[idx[3]]
        flat[rng.integers(0, a.size)] = -0.0
        flat[rng.integers(0, a.size)] = 0.0
        if nan:
            flat[rng.integers(0, a.size, 3)] = np.nan
    return a


ARG_SHAPES = [((1,), (0, None)), ((7,), (0, None)), ((1000003,), (0, None)),
              ((129, 67), (0, 1, None)), ((67, 129), (0, 1, None)),
              ((3, 5, 7, 9), (0, 1, 2, 3, None))]


@pytest.mark.parametrize("dt", ["float32", "float64", "int8", "uint16", "int32", "uint64",
                                "bool"])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_arg_reduce_matches_numpy(rng, kind, dt):
    """Exact indices on every layout: ties (many, for integers and bools), +-0.0, and NaN in
    the 2-D and 4-D arrays (NumPy's rule: the first NaN wins)."""
    import cupy as cp
    for shape, axes in ARG_SHAPES:
        a = _random(rng, shape, dt, nan=len(shape) > 1)
        for vn, v in _views(a):
            dv = cp.asarray(v)
            for axis in axes:
                for keep in (False, True):
                    got = cp.asnumpy(kred.arg_reduce(cp, kind, dv, axis, keep))
                    want = np.asarray(getattr(np, kind)(v, axis=axis, keepdims=keep))
                    assert got.dtype == np.int64 and got.shape == want.shape, (vn, axis, keep)
                    np.testing.assert_array_equal(
                        got, want, err_msg=f"{kind} {dt} {shape} {vn} axis={axis} keep={keep}")
    # 0-d, with axis None
    z = _random(rng, (), dt)
    assert int(kred.arg_reduce(cp, kind, cp.asarray(z), None, False)) == 0


for _m in needs_gpu:
    test_arg_reduce_matches_numpy = _m(test_arg_reduce_matches_numpy)


# rows of 1, 3, 4, 5 and 64 vectors (the word loop's steps and its rest), long rows split
# across blocks (S > 1), and whole arrays
WORD_SHAPES = [((37, 16), (1,)), ((29, 48), (1,)), ((33, 64), (1,)), ((7, 80), (1,)),
               ((5, 1024), (1,)), ((3, 2**20), (1,)), ((257, 48), (0, 1)), ((2**21,), (0,))]


@pytest.mark.parametrize("kind,dt", sorted(fp.WORD_KINDS))
def test_word_vector_path_matches_numpy(rng, kind, dt):
    """The vector path that combines words (any/all of bool, max/min of 8- and 16-bit
    integers) against NumPy: one planted True in a row of False (any), one False in a row
    of True (all), one planted extreme (max/min) at any byte of any word, the last element
    included; 16-byte aligned and misaligned (the element-wise loop) views."""
    import cupy as cp
    for shape, axes in WORD_SHAPES:
        a = _random(rng, shape, dt)
        if dt == "bool":
            a[...] = kind == "all"
        rows = a.reshape(-1, a.shape[-1]) if len(axes) == 1 and a.ndim > 1 else a.reshape(1, -1)
        n = rows.shape[1]
        plant = rng.integers(0, n, rows.shape[0])
        plant[-1] = n - 1
        live = rng.random(rows.shape[0]) < 0.5  # the rows given a planted value
        if dt == "bool":
            rows[live, plant[live]] = kind != "all"
        else:
            info = np.iinfo(dt)
            rows[live, plant[live]] = info.max if kind == "max" else info.min
        d = cp.asarray(a)
        # on the device: the array, a view one element in (misaligned), and rows repeated
        # through a zero stride (both the element-wise loop)
        views = [("c", a, d, axes), ("off", a.reshape(-1)[1:], d.reshape(-1)[1:], (0,))]
        if a.ndim > 1:
            views.append(("bcast", np.broadcast_to(a[-1:], a.shape),
                          cp.broadcast_to(d[-1:], a.shape), axes))
        for vn, v, dv, ax in views:
            acc = "bool" if dt == "bool" else dt
            got = cp.asnumpy(kred.reduce_eager(cp, kind, dv, ax, False, dt, acc))
            want = np.asarray(getattr(np, {"max": "max", "min": "min"}.get(kind, kind))(
                v, axis=ax)).astype(acc)
            np.testing.assert_array_equal(got, want, err_msg=f"{kind} {dt} {shape} {vn}")


for _m in needs_gpu:
    test_word_vector_path_matches_numpy = _m(test_word_vector_path_matches_numpy)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_arg_reduce_special_values_and_split_ranges(rng, dt):
    """NaN is the max and the min and the first NaN wins; ties and +-inf keep the first
    occurrence; long rows and columns cross the split path (S > 1)."""
    import cupy as cp
    a = np.array([1.0, np.nan, 3.0, np.nan, 5.0], dt)
    for kind in ("argmax", "argmin"):
        assert int(kred.arg_reduce(cp, kind, cp.asarray(a), None, False)) == 1
    for fill in (-np.inf, np.inf, 2.5, -0.0):
        b = np.full(100003, fill, dt)
        for kind in ("argmax", "argmin"):
            assert int(kred.arg_reduce(cp, kind, cp.asarray(b), 0, False)) == 0, (kind, fill)
    b = np.zeros(100003, dt)
    b[[70001, 70002, 99999]] = -0.0  # -0.0 == 0.0: still the first
    assert int(kred.arg_reduce(cp, "argmax", cp.asarray(b), 0, False)) == 0
    for shape in ((8192, 8192), (4, 3000001), (3000001, 4)):
        x = rng.standard_normal(shape).astype(dt)
        x[1, 2] = x[2, 3] = x.max() + 1  # a tie across rows/columns
        x[-1, -1] = np.nan
        dx = cp.asarray(x)
        for kind in ("argmax", "argmin"):
            for axis in (0, 1, None):
                got = cp.asnumpy(kred.arg_reduce(cp, kind, dx, axis, False))
                np.testing.assert_array_equal(got, getattr(np, kind)(x, axis=axis),
                                              err_msg=f"{kind} {shape} axis={axis}")


for _m in needs_gpu:
    test_arg_reduce_special_values_and_split_ranges = _m(
        test_arg_reduce_special_values_and_split_ranges)

# var/std: relative tolerance against the float64 reference. float32: the moments are float64,
# so only the final rounding to float32 (6e-8) and the input's own values count; float64:
# Welford/Chan in float64 against NumPy's two-pass float64 differ by a few ulps times log N.
MOMENT_RTOL = {"float32": 2e-7, "float64": 1e-11}
MOMENT_SHAPES = [((1,), ((0,), ())), ((7,), ((0,),)), ((1000003,), ((0,),)),
                 ((129, 67), ((0,), (1,), (0, 1), ())), ((67, 129), ((0,), (1,), (0, 1))),
                 ((3, 5, 7, 9), ((0, 2), (1, 3), (0, 1, 2, 3))),
                 ((8192, 8192), ((0,), (1,))), ((3, 1000001), ((1,),)),
                 ((1000001, 3), ((0,),))]


@pytest.mark.parametrize("fused", [False, True])
def test_float32_prod_of_many_factors_near_one(rng, fused):
    """16M float32 factors in 1 +- 1e-4: a float32 tree drifts 11% from the true product (its
    ties round one way); the float64 accumulator stays within float32 rounding of the float64
    product, eagerly and fused, along every axis set."""
    import xp_cuda as xp
    from helpers import to_numpy
    from xp_cuda.fusion import fuse
    a = ((rng.random(1 << 24, dtype=np.float32) - np.float32(0.5)) * np.float32(2e-4)
         + np.float32(1))
    x = xp.asarray(a, device=Device("cuda", 0))
    for shape, axis in (((1 << 24,), None), ((4096, 4096), 0), ((4096, 4096), 1),
                        ((1 << 22, 4), 0)):
        f = (lambda ax: lambda v: xp.prod(v, axis=ax))(axis)
        got = to_numpy((fuse(f) if fused else f)(xp.reshape(x, shape)))
        want = np.prod(a.reshape(shape).astype(np.float64), axis=axis)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6)


for _m in needs_gpu:
    test_float32_prod_of_many_factors_near_one = _m(test_float32_prod_of_many_factors_near_one)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["var", "std"])
def test_moments_match_numpy(rng, kind, dt):
    import cupy as cp
    for shape, axl in MOMENT_SHAPES:
        # a mean far from zero against the spread: shift-free one-pass methods keep it
        a = (rng.standard_normal(shape) * 3 + 1000).astype(dt)
        for vn, v in (_views(a) if a.size < 10**7 else [("c", a), ("T", a.T)]):
            dv = cp.asarray(v)
            ref = v.astype(np.longdouble)  # 64-bit mantissa on x86: the reference's own error
            for axes in axl:                # stays below what the checks allow
                n = math.prod(v.shape[i] for i in axes)
                mu = np.abs(np.mean(ref, axis=axes, keepdims=True))
                for corr in (0, 1, 0.5):
                    for keep in (False, True):
                        got = cp.asnumpy(kred.moments(cp, kind, dv, axes, corr, keep, dt))
                        want = getattr(np, kind)(ref, axis=axes, ddof=corr, keepdims=True)
                        if n - corr <= 0:
                            want = np.full_like(want, np.nan)
                        # Any method that rounds the mean in `dt` errs by about eps*|mean| on
                        # each deviation, so by eps*|mean|*sigma on var (eps*|mean| on std):
                        # a few values near 1000 whose spread is 1e-3 lose digits everywhere.
                        sigma = np.sqrt(np.abs(getattr(np, "var")(ref, axis=axes, ddof=0,
                                                                  keepdims=True)))
                        eps = np.finfo(dt).eps
                        slack = 8 * eps * mu * (sigma if kind == "var" else 1)
                        if not keep:
                            want, slack = (np.squeeze(w, axis=axes) for w in (want, slack))
                        want = np.asarray(want).astype(dt)
                        assert got.dtype == want.dtype and got.shape == want.shape
                        err = np.abs(got.astype(np.longdouble) - want)
                        bad = ~(err <= MOMENT_RTOL[dt] * np.abs(want.astype(np.longdouble))
                                + slack) & ~(np.isnan(got) & np.isnan(want))
                        assert not bad.any(), (
                            f"{kind} {dt} {shape} {vn} axes={axes} correction={corr}: "
                            f"{int(bad.sum())} of {bad.size} off, e.g. got "
                            f"{got[bad][:3]} want {want[bad][:3]}")


for _m in needs_gpu:
    test_moments_match_numpy = _m(test_moments_match_numpy)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_moments_special_values(dt):
    import cupy as cp
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, np.inf], [2.0, 2.0, 2.0]], dt)
    for kind in ("var", "std"):
        got = cp.asnumpy(kred.moments(cp, kind, cp.asarray(x), (1,), 0, False, dt))
        assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 0, (kind, got)
        # N - correction <= 0: NaN
        got = cp.asnumpy(kred.moments(cp, kind, cp.asarray(x), (1,), 3, False, dt))
        assert np.isnan(got).all()
    # deterministic: the same bits on every call (a fixed combination order)
    y = cp.asarray(np.random.default_rng(3).standard_normal((2048, 4099)).astype(dt))
    first = kred.moments(cp, "var", y, (0,), 1, False, dt)
    for _ in range(3):
        assert bool((kred.moments(cp, "var", y, (0,), 1, False, dt) == first).all())


for _m in needs_gpu:
    test_moments_special_values = _m(test_moments_special_values)


def test_float32_moments_at_the_edges_of_their_range(rng):
    """float32 var/std take runs of elements as batches (XpMoments::batch) in float64. Rows
    and columns of 64 (every lane whole batches): constant runs give exactly 0; spreads of
    1e-30 and of 1e30 (squares that underflow and overflow float32), values near the float32
    limit (sums that overflow it), and inf and NaN give what the float64 reference gives
    (finite results within a few float32 roundings of it), eagerly and fused."""
    import cupy as cp
    import xp_cuda as xp
    from helpers import to_numpy
    from xp_cuda.fusion import fuse
    n = 64
    rows = [np.full(n, 3.0), np.full(n, 1 + 2.0 ** -23),  # constant: a variance of 0
            rng.standard_normal(n) * 1e-30,  # deviations whose squares underflow float32
            rng.standard_normal(n) * 1e30,  # ... and whose squares overflow it
            np.where(rng.random(n) < 0.5, 3e38, -3e38),  # sums that overflow float32
            1e4 + rng.standard_normal(n) * 1e-3,  # a mean far from the spread
            rng.standard_normal(n)]
    inf_row = rng.standard_normal(n)
    inf_row[17] = np.inf
    nan_row = rng.standard_normal(n)
    nan_row[40] = np.nan
    a = np.stack(rows + [inf_row, nan_row]).astype(np.float32)
    dev = Device("cuda", 0)
    for axis, arr in ((1, a), (0, np.ascontiguousarray(a.T))):
        x = xp.asarray(arr, device=dev)
        ref = arr.astype(np.longdouble)
        for kind in ("var", "std"):
            want = getattr(np, kind)(ref, axis=axis, ddof=1)
            for how, f in (("eager", lambda v, k=kind, ax=axis: getattr(xp, k)(
                    v, axis=ax, correction=1)), ("fused", fuse(
                    lambda v, k=kind, ax=axis: getattr(xp, k)(v, axis=ax, correction=1)))):
                got = to_numpy(f(x)).astype(np.longdouble)
                for i in range(len(rows)):
                    w = np.float32(want[i])
                    assert np.isfinite(got[i]) == np.isfinite(w), (kind, how, axis, i)
                    if i < 2:
                        assert got[i] == 0, (kind, how, axis, i, got[i])
                    elif np.isfinite(w):
                        assert abs(got[i] - w) <= 4e-7 * abs(w), (kind, how, axis, i, got[i], w)
                assert np.isnan(got[len(rows)]) and np.isnan(got[len(rows) + 1]), (kind, how)
    cp.cuda.Device().synchronize()


for _m in needs_gpu:
    test_float32_moments_at_the_edges_of_their_range = _m(
        test_float32_moments_at_the_edges_of_their_range)

# norms: float64 sums for every input, so float32 results are within a few roundings of the
# float64 reference (the float32 elementwise pow of NumPy's own algorithm included).
NORM_RTOL = {"float32": 2e-6, "float64": 1e-12}


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128", "int16"])
def test_norm_reduce_matches_numpy(rng, dt):
    import cupy as cp
    rd = {"float32": "float32", "complex64": "float32"}.get(dt, "float64")
    for shape, axl in (((1,), ((0,),)), ((1000003,), ((0,),)),
                       ((129, 67), ((0,), (1,), (0, 1))), ((3, 5, 7, 9), ((0, 2), (1, 3))),
                       ((2048, 2048), ((0,), (1,)))):
        a = _random(rng, shape, dt, special=False)
        if dt.startswith("complex"):
            a = (a + 1j * rng.standard_normal(shape)).astype(dt)
        ref = a.astype(np.complex128 if dt.startswith("complex") else np.float64)
        for vn, v in _views(a)[:2] + [("neg", a[..., ::-1])]:
            dv = cp.asarray(v)
            rv = np.ascontiguousarray(ref.T if vn == "T" else ref[..., ::-1] if vn == "neg"
                                      else ref)
            for axes in axl:
                for ord_ in ORDS:
                    got = cp.asnumpy(kred.norm_reduce(cp, dv, ord_, axes, False, rd))
                    want = np.asarray(np.linalg.vector_norm(rv, ord=ord_, axis=axes))
                    assert got.dtype == np.dtype(rd) and got.shape == want.shape
                    np.testing.assert_allclose(
                        got, want.astype(rd), rtol=NORM_RTOL[rd],
                        err_msg=f"norm {dt} {shape} {vn} axes={axes} ord={ord_}")


for _m in needs_gpu:
    test_norm_reduce_matches_numpy = _m(test_norm_reduce_matches_numpy)


def test_norm_reduce_special_values():
    import cupy as cp
    x = np.array([[3.0, -4.0, 0.0], [np.nan, 1.0, 0.0], [np.inf, 1.0, 0.0]], np.float32)
    dx = cp.asarray(x)
    for ord_ in ORDS:
        got = cp.asnumpy(kred.norm_reduce(cp, dx, ord_, (1,), False, "float32"))
        want = np.linalg.vector_norm(x.astype(np.float64), ord=ord_, axis=1).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=f"ord={ord_}")


for _m in needs_gpu:
    test_norm_reduce_special_values = _m(test_norm_reduce_special_values)


# ---- the accumulators' algebra, compiled for the host ---------------------------------------
_HOST_MAIN = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>
#define XP_HD inline
inline double xp_inf() { return std::numeric_limits<double>::infinity(); }
inline double xp_nan() { return std::numeric_limits<double>::quiet_NaN(); }
@ACCUMULATORS@
// Combine the lifted elements [lo, hi) in an order chosen by `seed`: a random split, each half
// recursively, so every grouping a kernel could take (lanes, blocks, splits) is exercised.
template <typename Op, typename A>
A tree(const std::vector<A>& xs, int lo, int hi, unsigned& seed) {
  if (hi - lo == 1) return xs[lo];
  seed = seed * 1103515245u + 12345u;
  const int mid = lo + 1 + (int)((seed >> 8) % (unsigned)(hi - lo - 1));
  return Op::comb(tree<Op>(xs, lo, mid, seed), tree<Op>(xs, mid, hi, seed));
}

template <bool MAX>
void arg(const std::vector<double>& v) {
  typedef XpArgOp<double, MAX> Op;
  std::vector<XpArg<double>> xs;
  for (size_t i = 0; i < v.size(); ++i) xs.push_back(Op::lift(v[i], (long long)i));
  XpArg<double> seq = Op::lift(MAX ? -xp_inf() : xp_inf(), 9223372036854775807LL);
  for (size_t i = 0; i < xs.size(); ++i) seq = Op::comb(seq, xs[i]);
  printf("%lld", seq.i);
  for (unsigned s = 1; s <= 5; ++s) {
    unsigned seed = s;
    printf(" %lld", tree<Op>(xs, 0, (int)xs.size(), seed).i);
  }
  // a kernel's lanes: each takes its own elements (every G-th) in steps of U, a step's
  // elements paired in index order by next, the step's value joining the lane's by comb;
  // then the lanes meet by comb in a random tree
  const XpArg<double> ident = Op::lift(MAX ? -xp_inf() : xp_inf(), 9223372036854775807LL);
  for (int G = 1; G <= 9; G += 4) {
    const int U = 4;
    std::vector<XpArg<double>> lanes;
    for (int lane = 0; lane < G; ++lane) {
      XpArg<double> a = ident;
      size_t j = lane;
      for (; j + (U - 1) * G < xs.size(); j += U * G) {
        const XpArg<double> s01 = Op::next(xs[j], xs[j + G]);
        const XpArg<double> s23 = Op::next(xs[j + 2 * G], xs[j + 3 * G]);
        a = Op::comb(a, Op::next(s01, s23));
      }
      for (; j < xs.size(); j += G) a = Op::comb(a, xs[j]);
      lanes.push_back(a);
    }
    unsigned seed = 7u + (unsigned)G;
    printf(" %lld", tree<Op>(lanes, 0, G, seed).i);
  }
  printf("\n");
}

int main() {
  int n;
  if (scanf("%d", &n) != 1) return 1;
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) {
    char buf[64];
    if (scanf("%63s", buf) != 1) return 1;
    v[i] = strtod(buf, 0);
  }
  arg<true>(v);
  arg<false>(v);
  // moments: lanes of batches of 8 (the vector path's shape) and single elements, merged in
  // random trees
  typedef XpMoments<double> M;
  std::vector<XpMom<double>> parts;
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    double b[8];
    for (int q = 0; q < 8; ++q) b[q] = v[i + q];
    parts.push_back(M::batch(b));
  }
  for (; i < n; ++i) parts.push_back(M::lift(v[i]));
  parts.push_back(M::zero());  // an idle lane
  for (unsigned s = 1; s <= 3; ++s) {
    unsigned seed = s;
    XpMom<double> m = tree<M>(parts, 0, (int)parts.size(), seed);
    printf("%.17g %.17g %.17g\n", M::var(m, 0.0), M::var(m, 1.0), M::var(m, (double)n));
  }
  return 0;
}
"""


def _cxx():
    import shutil
    return shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(_cxx() is None, reason="no host C++ compiler (g++ or clang++)")
def test_struct_accumulators_algebra_on_host(tmp_path):
    """argmax/argmin's (value, index) combination gives NumPy's index (first occurrence, first
    NaN) in every grouping; Welford batches merged by Chan's formula give NumPy's variance in
    every grouping; N - correction <= 0 gives NaN. The accumulators' text is taken from
    fusion.cuh as the kernels include it (they are XP_HD: host code too) and compiled by the
    host's C++ compiler."""
    import subprocess
    from xp_cuda._kernels._runtime import source
    cuh = source("fusion.cuh")
    start = cuh.index("// ---- reductions whose accumulator is a small struct")
    end = cuh.index("template <typename T>\n__device__ __forceinline__ XpArg<T> xp_ldcg")
    src = tmp_path / "acc.cpp"
    src.write_text(_HOST_MAIN.replace("@ACCUMULATORS@", cuh[start:end]))
    exe = tmp_path / "acc"
    r = subprocess.run([_cxx(), "-std=c++17", "-O1", str(src), "-o", str(exe)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rng = np.random.default_rng(7)
    cases = [rng.standard_normal(1000) * 3 + 1000,
             np.round(rng.standard_normal(333)),  # many ties
             np.array([1.0, np.nan, 3.0, np.nan, 5.0]),
             np.array([-np.inf] * 17),
             np.array([0.0, -0.0, 0.0]),
             np.array([2.5])]
    for x in cases:
        text = f"{x.size}\n" + " ".join(repr(float(t)) for t in x) + "\n"
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                             timeout=60).stdout.split("\n")
        amax, amin = ([int(t) for t in line.split()] for line in out[:2])
        assert set(amax) == {int(np.argmax(x))} and set(amin) == {int(np.argmin(x))}, (x, out)
        for line in out[2:5]:
            v0, v1, vn = (float(t) for t in line.split())
            with np.errstate(all="ignore"):
                w0, w1 = np.var(x), (np.var(x, ddof=1) if x.size > 1 else np.nan)
            np.testing.assert_allclose([v0, v1], [w0, w1], rtol=1e-12, equal_nan=True)
            assert math.isnan(vn)  # N - correction == 0


def test_orientation_trades_the_groups_where_the_smallest_stride_lies():
    """A reduction reads x with its reduced and kept axes as two groups, the group of the
    smallest stride last, each in its own order (None: x's own order)."""
    from xp_cuda._kernels.reduction import orientation
    f4 = 4
    # sum over axis 1 of x.T (x C-contiguous (8, 6)): a strided row per output -> a column read
    assert orientation((6, 8), (f4, 6 * f4), (1,)) == (1, 0)
    # sum over axis 0 of x.T: lanes over outputs 8 floats apart -> a row read
    assert orientation((6, 8), (f4, 6 * f4), (0,)) == (1, 0)
    # C-contiguous: already right, either way
    assert orientation((6, 8), (8 * f4, f4), (1,)) is None
    assert orientation((6, 8), (8 * f4, f4), (0,)) is None
    # every axis or none reduced: nothing to trade
    assert orientation((6, 8), (f4, 6 * f4), (0, 1)) is None
    assert orientation((6, 8), (f4, 6 * f4), ()) is None
    # 3-d, the middle axis kept and smallest: reduced (0, 2) go first, kept order unchanged
    assert orientation((6, 5, 4), (20, 1, 5), (0, 2)) == (0, 2, 1)
    # broadcast (stride 0) and size-1 axes never decide
    assert orientation((6, 8), (0, f4), (1,)) is None
    assert orientation((1, 8, 3), (4, 12, 4), (2,)) is None


# Split reductions: the last block's lanes load the partials of every column of their work item
# before combining any, argmax/argmin two of one column at a time (fusion_render.
# partial_loads), whose guarded second load runs past S where S is no multiple of 2 G. The
# other cases split over several columns a lane (bool, int8) or one. (kind, dtype, shape, axes)
_SPLIT_TAILS = [("any", "bool", (1 << 20, 64), (0,)), ("all", "bool", (1 << 20, 64), (0,)),
                ("sum", "float32", (300007, 64), (0,)), ("max", "int8", (1 << 20, 64), (0,)),
                ("prod", "int32", (200003, 48), (0,)), ("sum", "float64", (3, 1000001), (1,)),
                ("argmax", "float32", (300007, 64), (0,)), ("argmin", "int16", (200003, 48), (0,)),
                ("argmax", "float64", (3, 1000001), (1,))]


def _split_plan(kind, dt, shape, axes):
    isz = np.dtype(dt).itemsize
    if kind in ("argmax", "argmin"):
        g = kred.arg_graph(kind, dt, shape, axes[0], False)
    else:
        g = kred.graph(kind, dt, dt if kind != "prod" else "int64", shape, axes, False)
    return _program(g, fake(shape, isz)).plan.reductions[0]


def test_split_tail_cases_cross_the_guarded_tail():
    """The cases below split (S > 1); those of two loads a round leave a partial round."""
    from xp_cuda._kernels import fusion_render as fr
    tails = 0
    for kind, dt, shape, axes in _SPLIT_TAILS:
        red = _split_plan(kind, dt, shape, axes)
        U = fr.partial_loads(kind, red.colvec)
        assert red.S > 1, (kind, dt, shape, red.S)
        assert (U > 1) == (kind in ("argmax", "argmin")), (kind, U)
        tails += U > 1 and red.S % (U * red.G) != 0
    assert tails == 3


@pytest.mark.parametrize("case", _SPLIT_TAILS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_split_partials_match_numpy(rng, case):
    import cupy as cp
    kind, dt, shape, axes = case
    if dt == "bool":
        x = rng.random(shape) < (0.999 if kind == "all" else 0.001)
        x[-1, 5] = kind == "any"  # one column decided by the very last row
    elif dt in ("int8", "int16"):  # few values: ties everywhere, the first one counts
        x = rng.integers(-100, 100, shape, dtype=dt)
    elif dt == "int32":  # products of -1 and 1 and one 3 a column: exact in int64, not 0
        x = rng.choice(np.array([-1, 1], dt), shape)
        x[rng.integers(0, shape[0], shape[1]), np.arange(shape[1])] = 3
    else:
        x = rng.standard_normal(shape).astype(dt)
    if kind in ("argmax", "argmin"):
        if dt.startswith("float"):  # ties: a repeated extreme, first in a late partial
            x = np.round(x, 1)
        got = cp.asnumpy(kred.arg_reduce(cp, kind, cp.asarray(x), axes[0], False))
        ref = getattr(np, kind)(x, axis=axes[0])
        np.testing.assert_array_equal(got, ref)
        return
    acc = "int64" if kind == "prod" else dt
    got = cp.asnumpy(kred.reduce_eager(cp, kind, cp.asarray(x), axes, False, dt, acc))
    if dt.startswith("float"):  # against float64 sums (NumPy's float32 sum down a column
        # adds row after row: its error, about 1e-2 here, is the reference's, not ours)
        ref = np.sum(x, axis=axes, dtype=np.float64)
        np.testing.assert_allclose(got, ref, rtol=1e-6 if dt == "float32" else 1e-12,
                                   atol=5e-3 if dt == "float32" else 1e-9)
        return
    ref = {"any": np.any, "all": np.all, "max": np.max,
           "prod": np.prod}[kind](x.astype(acc) if kind == "prod" else x, axis=axes)
    np.testing.assert_array_equal(got, ref)


for _m in needs_gpu:
    test_split_partials_match_numpy = _m(test_split_partials_match_numpy)


def test_merge_dims_joins_neighbours_memory_walks_as_one():
    """Neighbouring axes of one group (both reduced or both kept) merge where one has length 1
    or the outer stride is the inner one's span; the kept axes keep their order."""
    from xp_cuda._kernels.reduction import merge_dims
    f4 = 4
    c3 = (64 * 16384 * f4, 16384 * f4, f4)
    assert merge_dims((64, 64, 16384), c3, (0, 1)) == ((4096, 16384), (16384 * f4, f4), (0,))
    assert merge_dims((64, 64, 16384), c3, (1, 2)) == ((64, 64 * 16384), c3[:1] + (f4,), (1,))
    assert merge_dims((64, 64, 16384), c3, (0, 2)) is None  # no two neighbours of one group
    assert merge_dims((2, 3, 4, 5), (240, 80, 20, 4), (1, 2)) == ((2, 12, 5), (240, 20, 4),
                                                                    (1,))
    # every axis kept (no reduction) or reduced: one axis
    assert merge_dims((4, 5, 6), (120, 24, 4), ()) == ((120,), (4,), ())
    assert merge_dims((4, 5, 6), (120, 24, 4), (0, 1, 2)) == ((120,), (4,), (0,))
    # a length-1 axis joins its group's neighbour whatever its stride (keepdims-like input)
    assert merge_dims((8, 1, 16), (64, 999, 4), (0,)) == ((8, 16), (64, 4), (0,))
    assert merge_dims((1, 8), (7, 4), (0, 1)) == ((8,), (4,), (0,))
    # every other column of rows of 16 float32: evenly spaced, one axis; the first 4: not
    assert merge_dims((8, 8), (64, 8), (0, 1)) == ((64,), (8,), (0,))
    assert merge_dims((8, 4), (64, 4), (0, 1)) is None
    # transposed, broadcast, reversed
    assert merge_dims((6, 8), (f4, 6 * f4), (0, 1)) is None
    assert merge_dims((4, 5), (0, 4), (0, 1)) is None
    assert merge_dims((4, 5), (0, 0), (0, 1)) == ((20,), (0,), (0,))
    assert merge_dims((4, 5), (-20, -4), ()) == ((20,), (-4,), ())
    assert merge_dims((7,), (4,), (0,)) is None


# (shape, axes) whose neighbouring axes merge (merge_dims), on views that merge and that don't
_MERGED = [((6, 7, 33), (0, 1)), ((4, 5, 6, 7), (1, 2)), ((3, 4, 5, 6), (0, 1, 3)),
           ((64, 64, 1000), (0, 1)), ((5, 1, 9), (0,)), ((2, 3, 4), (0, 1, 2)), ((3, 4, 5), ())]


@pytest.mark.parametrize("dt", ["float32", "int16", "float64", "bool"])
def test_merged_axes_match_numpy(rng, dt):
    """Reductions over axes that merge (and views of the same where they don't) equal NumPy's,
    keepdims included: sum, prod, max, any, var, vector_norm and argmax."""
    import xp_cuda as xp
    from helpers import to_numpy
    dev = Device("cuda", 0)
    tol = {"float32": 1e-5, "float64": 1e-12}.get(dt)  # float32 sums round in float32
    views = {"c": lambda t: t, "T": lambda t: t.mT if t.ndim == 2 else xp.permute_dims(
        t, tuple(reversed(range(t.ndim)))), "step": lambda t: t[::2, ::-3, ...],
        "neg": lambda t: t[..., ::-1]}
    for shape, axes in _MERGED:
        # floats near 1: products of thousands stay in range
        a = _random(rng, shape, dt) if dt in ("bool", "int16") else (
            1 + 0.01 * rng.standard_normal(shape)).astype(dt)
        x0 = xp.asarray(a, device=dev)
        for vn, v in _views(a):
            x = views[vn](x0)
            assert x.shape == v.shape
            for keep in (False, True):
                msg = f"{dt} {shape} {axes} {vn} keepdims={keep}"
                w = v.astype(np.float64) if dt.startswith("float") else v
                calls = (("any", np.any),) if dt == "bool" else (
                    ("sum", np.sum), ("prod", np.prod), ("max", np.max))
                for name, ref in calls:
                    got = to_numpy(getattr(xp, name)(x, axis=axes, keepdims=keep))
                    want = ref(w, axis=axes, keepdims=keep)
                    assert got.shape == want.shape, msg
                    if dt.startswith("float"):
                        np.testing.assert_allclose(got, want, rtol=tol, err_msg=msg)
                    else:
                        np.testing.assert_array_equal(got, want, err_msg=msg)
                if dt.startswith("float") and axes:
                    got = to_numpy(xp.var(x, axis=axes, keepdims=keep))
                    want = np.var(w, axis=axes, keepdims=keep)
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-12, err_msg=msg)
                    got = to_numpy(xp.linalg.vector_norm(x, axis=axes, keepdims=keep))
                    want = np.sqrt(np.sum(w * w, axis=axes, keepdims=keep))
                    np.testing.assert_allclose(got, want, rtol=tol, err_msg=msg)
            if dt != "bool":  # one reduced axis: its kept neighbours merge
                got = to_numpy(xp.argmax(x, axis=v.ndim - 1))
                np.testing.assert_array_equal(got, np.argmax(v, axis=v.ndim - 1), err_msg=msg)


for _m in needs_gpu:
    test_merged_axes_match_numpy = _m(test_merged_axes_match_numpy)


@pytest.mark.parametrize("dt", ["float32", "float64", "int8", "int16", "uint8", "bool",
                                "complex64"])
def test_segmented_vector_path_matches_numpy(rng, dt):
    """Reductions over (N, C, L)-like layouts (the segmented vector path), keepdims, a split
    range, strided views whose runs stay contiguous (every other, reversed, a slice of each
    run), and the same values one element off alignment (the element loop) equal NumPy's."""
    import xp_cuda as xp
    from helpers import to_numpy
    dev = Device("cuda", 0)
    floating = dt.startswith(("float", "complex"))
    for shape, axes in _SEGMENTED + [((96, 8, 4096), (0, 2))]:  # the last splits its ranges
        n = int(np.prod(shape))
        if dt == "bool" or not floating:
            flat = _random(rng, (n + 1,), dt, special=False)
        else:  # near 1: products of thousands stay in range
            flat = 1 + 0.01 * rng.standard_normal(n + 1)
            if dt.startswith("complex"):
                flat = flat + 0.01j * rng.standard_normal(n + 1)
            flat = flat.astype(dt)
        whole = xp.asarray(flat, device=dev)
        x0, a0 = xp.reshape(whole[:n], shape), flat[:n].reshape(shape)
        cut = shape[-1] // 2 if shape[-1] % 32 == 0 else shape[-1]  # whole vectors of any dtype
        for where, x, a in (("aligned", x0, a0),
                            ("offset", xp.reshape(whole[1:], shape), flat[1:].reshape(shape)),
                            ("every other", x0[::2, ...], a0[::2, ...]),
                            ("reversed", x0[::-1, ...], a0[::-1, ...]),
                            ("column slice", x0[..., :cut], a0[..., :cut])):
            w = a.astype(np.complex128 if dt.startswith("complex") else np.float64) \
                if floating else a
            calls = [("any", np.any), ("all", np.all)] if dt == "bool" else \
                [("sum", np.sum), ("prod", np.prod)]
            if dt != "bool" and not dt.startswith("complex"):
                calls += [("max", np.max), ("min", np.min)]
            if dt.startswith("float"):  # mean of complex: 2024.12
                calls.append(("mean", np.mean))
            for keep in (False, True):
                msg = f"{dt} {shape} {axes} {where} keepdims={keep}"
                for name, ref in calls:
                    got = to_numpy(getattr(xp, name)(x, axis=axes, keepdims=keep))
                    want = ref(w, axis=axes, keepdims=keep)
                    assert got.shape == want.shape, msg
                    if floating:  # complex64 multiplies in complex64: ~1e-7 a factor
                        rtol = {"float64": 1e-12, "float32": 2e-5}.get(dt, 2e-4)
                        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"{name} {msg}")
                    else:
                        np.testing.assert_array_equal(got, want, err_msg=f"{name} {msg}")
                if dt.startswith("float"):
                    for name, ref in (("var", np.var), ("std", np.std)):
                        got = to_numpy(getattr(xp, name)(x, axis=axes, correction=1,
                                                         keepdims=keep))
                        want = ref(w, axis=axes, ddof=1, keepdims=keep)
                        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=f"{name} {msg}")
                if floating:
                    got = to_numpy(xp.linalg.vector_norm(x, axis=axes, keepdims=keep))
                    want = np.sqrt(np.sum(np.abs(w) ** 2, axis=axes, keepdims=keep))
                    np.testing.assert_allclose(got, want, rtol=2e-5, err_msg=f"norm {msg}")


for _m in needs_gpu:
    test_segmented_vector_path_matches_numpy = _m(test_segmented_vector_path_matches_numpy)
