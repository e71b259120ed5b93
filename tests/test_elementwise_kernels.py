"""The generated elementwise kernels: every one compiles (NVRTC, no GPU needed), and on cuda
every function and dtype pair, every operand layout and the spec's special values agree with
the cpu reference (NumPy)."""

import numpy as np
import pytest

import xp_cuda as xp
from helpers import ALL_DTYPES, random_numpy, to_numpy
from xp_cuda._devices import CPU
from xp_cuda._dtypes import PROMOTION_TABLE, in_category
from xp_cuda._elementwise import ELEMENTWISE, ROWS, result_dtype
from xp_cuda._kernels import elementwise as gen


def _pairs(name):
    arity, cat = ROWS[name][:2]
    ok = [d for d in ALL_DTYPES if in_category(d, cat)]
    if arity == 1:
        return [(d,) for d in ok]
    return [(a, b) for a in ok for b in ok if (a, b) in PROMOTION_TABLE]


def _items(name):
    items = []
    for ds in _pairs(name):
        tc, to = result_dtype(name, list(ds))
        items.append((name, tuple(d.name for d in ds), tc.name, to.name))
    return items


# ---- every generated kernel compiles (CI, no GPU) ---------------------------------------------
from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=_nvrtc_reason() or "")
def test_every_generated_kernel_compiles():
    """One translation unit per function holding all its dtype instantiations and layouts."""
    from xp_cuda._kernels import nvrtc_compile

    def one(name):
        items = _items(name)
        ptx = nvrtc_compile(gen.translation_unit(items), name=f"ew_{name}.cu",
                            options=gen.OPTIONS)
        expected = sum(len(gen.layouts_for(d)) for _, d, _, _ in items)
        assert ptx.count(".entry ") == expected, name
        for _, d, _, _ in items:
            for lay in gen.layouts_for(d):
                assert f".entry {gen.kernel_name(name, d, lay)}(" in ptx
        return expected

    # NVRTC releases the GIL: units compile in parallel threads (the tiled layouts made the
    # serial loop take 10+ minutes)
    import os
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1))) as pool:
        total = sum(pool.map(one, ROWS))  # the later revisions' rows too
    assert total > 1000


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=str(_nvrtc_reason()))
@pytest.mark.parametrize("name", ["add", "sin", "equal", "abs"])
def test_runtime_compiles_one_layout_per_unit(name):
    """What a first call compiles: the helpers and the one kernel it launches."""
    import re
    from xp_cuda._kernels import nvrtc_compile
    fname, dtypes, tc, to = _items(name)[-1]
    for lay in gen.layouts_for(dtypes):
        ptx = nvrtc_compile(gen.layout_unit(fname, dtypes, tc, to, lay), name="ew_unit.cu",
                            options=gen.OPTIONS)
        assert re.findall(r"\.entry (\w+)\(", ptx) == [gen.kernel_name(fname, dtypes, lay)]


def test_one_table_covers_every_function_and_kind():
    kinds = {"bool": "b", "int": "i", "uint": "u", "float": "f", "complex": "c"}
    assert set(gen.OPS) == set(ROWS)
    for name in ROWS:
        admitted = {kinds[d[0].kind] for d in _pairs(name)}
        assert admitted <= set(gen.OPS[name]), name


def test_geometry_collapses_and_broadcasts():
    a = np.empty((4, 5, 6), dtype=np.float32)
    nd, dims, strides = gen._geometry((4, 5, 6), (a,), "g")
    assert nd == 1 and dims[0] == 120 and strides[0][0] == 1
    t = a.transpose(2, 0, 1)
    nd, dims, strides = gen._geometry((6, 4, 5), (t,), "g")
    assert nd == 2 and dims[:2] == [6, 20] and strides[0][:2] == [1, 6]
    b = np.empty((5, 1), dtype=np.int16)
    nd, dims, strides = gen._geometry((4, 5, 6), (a, b), "gg")
    assert nd == 3 and strides[1][:3] == [0, 1, 0]
    nd, dims, strides = gen._geometry((4, 5, 6), (a, np.float32(1)), "gs")
    assert strides[1] == [0] * gen.MAXND


# ---- results against the cpu reference ---------------------------------------------------------
def _data(rng, name, dtype, shape, second=False):
    a = random_numpy(rng, shape, dtype)
    kind = dtype.kind
    if second and name in ("floor_divide", "remainder") and kind in ("int", "uint"):
        a = np.where(a == 0, 1, a).astype(dtype._np)
    if second and name == "pow" and kind in ("int", "uint"):
        a = (np.abs(a) % 4).astype(dtype._np)
    if second and name.startswith("bitwise_") and name.endswith("shift"):
        a = (np.abs(a) % dtype.bits).astype(dtype._np)
    if name == "pow" and kind in ("float", "complex"):
        a = a / 10  # moderate powers: no overflow to infinities of implementation-defined sign
    if name == "acosh" and kind == "float":
        a = np.abs(a) + 1
    return a


def _close(got, ref, dtype, name):
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape
    if got.dtype.kind in "fc":
        single = got.dtype in (np.float32, np.complex64)
        rtol = 4e-6 if single else 1e-12
        if name == "pow":
            rtol *= 10
        atol = 0
        if name in ("sin", "cos", "tan", "expm1", "log1p", "atan2", "remainder", "logaddexp",
                    "floor_divide") or dtype.kind == "complex":
            atol = rtol * max(1.0, float(np.nanmax(np.abs(np.where(np.isfinite(ref), ref, 0)),
                                                   initial=0)))
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref)


def _reference(name, nps):
    return to_numpy(getattr(xp, name)(*(xp.asarray(a, device=CPU) for a in nps)))


CASES = [(n, ds) for n in ELEMENTWISE for ds in _pairs(n)]


@pytest.mark.parametrize("name,dtypes", CASES,
                         ids=[f"{n}-{'-'.join(d.name for d in ds)}" for n, ds in CASES])
def test_against_cpu_reference(device, rng, name, dtypes):
    if device.kind == "cpu":
        pytest.skip("the cpu path is the reference")
    shapes = [(37, 29)] if len(dtypes) == 1 else [(37, 29), (37, 29)]
    nps = [_data(rng, name, d, s, second=i == 1) for i, (d, s) in enumerate(zip(dtypes, shapes))]
    out = getattr(xp, name)(*(xp.asarray(a, device=device) for a in nps))
    assert out.device == device
    ref = _reference(name, nps)
    assert out.dtype == xp.asarray(ref, device=CPU).dtype
    _close(to_numpy(out), ref, dtypes[0], name)


LAYOUT_NAMES = ["add", "multiply", "divide", "pow", "less", "maximum", "atan2", "remainder",
                "bitwise_and", "logical_xor", "equal"]


def test_fast_divisor_divides_exactly_below_2_31():
    """The strided kernels' division by a multiply and shift (elementwise.fast_divisor),
    modelled in 32-bit unsigned arithmetic, equals integer division for every divisor kind
    (powers of two, 1, 3, large primes, random) and dividends up to 2**31 - 1."""
    from xp_cuda._kernels.elementwise import fast_divisor
    rng = np.random.default_rng(5)
    divisors = [1, 2, 3, 5, 7, 12288, 4096, 65537, 2**31 - 1, 2**30 + 3]
    divisors += rng.integers(2, 2**31, 500).tolist() + rng.integers(2, 300, 200).tolist()
    for d in divisors:
        q = fast_divisor(d)
        shift, magic = q >> 32, q & 0xFFFFFFFF
        assert magic < 2**32 and shift < 32
        r = np.concatenate([[0, 1, d - 1, d, d + 1, 2**31 - 1],
                            rng.integers(0, 2**31, 64)]).astype(np.uint64)
        t = (r * np.uint64(magic)) >> np.uint64(32)  # umulhi (r, magic < 2**32: no overflow)
        assert np.all((t + r) < 2**32), d  # the 32-bit sum of the kernel cannot wrap
        np.testing.assert_array_equal((t + r) >> np.uint64(shift), r // np.uint64(d),
                                      err_msg=f"divisor {d}")


class _Arr:
    """What Plan.strided reads of a CuPy array, without memory (the launch tests below)."""

    def __init__(self, shape, strides, ptr, itemsize):
        self.shape, self.strides, self.itemsize = shape, strides, itemsize
        self.data = type("P", (), {"ptr": ptr})()
        self.ndim = len(shape)


def _standin_plan(launch, layout):
    """A float32-result Plan whose launches go to ``launch`` (cuLaunchKernel's arguments),
    its ``layout`` kernel a stand-in at 0xF00, outputs at 0x7000: no GPU."""
    plan = object.__new__(gen.Plan)
    plan.cp, plan.max_blocks, plan._geos = None, 2112, {}
    plan.out_np = np.dtype("float32")
    plan._ndarray = lambda shape, dt: _Arr(shape, (), 0x7000, 4)
    plan._launch, plan._stream = launch, lambda: type("S", (), {"ptr": 5})()
    plan.kernels = {layout: type("K", (), {"ptr": 0xF00})()}
    return plan


@pytest.mark.parametrize("layout,dtypes", [("gg", ("float32", "int8")), ("gs", ("float64", "complex128")),
                                           ("sg", ("int16", "float32")), ("g", ("float32",))])
def test_strided_launch_packs_the_kernel_signature(layout, dtypes):
    """Plan.strided's packed parameter block holds, cell by cell, the arguments of the strided
    kernel's signature (operands, out, n, nd, dims, strides, divisors), with no GPU: a stand-in
    launch reads the block back through its pointers."""
    import ctypes
    from xp_cuda._kernels import elementwise as E
    Arr = _Arr

    launched = []

    def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        arity = len(layout)
        cells = 5 + 4 * E.MAXND if arity == 2 else 4 + 3 * E.MAXND
        ptrs = (ctypes.c_void_p * cells).from_address(addr)
        vals = [ctypes.c_uint64.from_address(p).value for p in ptrs]
        hi = [ctypes.c_uint64.from_address(p + 8).value for p in ptrs]
        launched.append((fn, gx, bx, vals, hi))

    plan = _standin_plan(launch, layout)
    shape = (6, 4, 3)
    ops = []
    for m, d in zip(layout, dtypes):
        if m == "g":
            isz = np.dtype(d).itemsize
            ops.append(Arr((6, 1, 3), (-3 * isz, 0, isz), 0x1000 + 16 * len(ops), isz))
        else:
            ops.append(np.array(1.5 - 2j if d.startswith("complex") else 3, dtype=d)[()])
    for _ in range(2):  # the second call replays the packed geometry
        plan.strided(layout, tuple(ops), shape, 72)
    assert len(plan._geos) == 1 and len(launched) == 2 and launched[0] == launched[1]
    fn, blocks, threads, vals, hi = launched[0]
    assert fn == 0xF00 and blocks == 1 and threads == E.THREADS
    k = 0
    for m, o in zip(layout, ops):
        if m == "g":
            assert vals[k] == o.data.ptr
        else:  # the scalar's bits; a 16-byte one's upper half in the cell's second word
            bits = int.from_bytes(o.tobytes(), "little")
            assert vals[k] == bits & (2**64 - 1)
            assert o.itemsize < 16 or hi[k] == bits >> 64
        k += 1
    assert vals[k] == 0x7000 and vals[k + 1] == 72
    nd, dims, strides = E._geometry(shape, ops, layout)
    assert vals[k + 2] & 0xFFFFFFFF == nd
    rest = vals[k + 3:]
    M = E.MAXND
    assert rest[:M] == list(dims)
    flat = [v & (2**64 - 1) for st in strides for v in st]
    assert rest[M:M + len(flat)] == flat
    assert rest[M + len(flat):] == [E.fast_divisor(v) for v in dims]


@pytest.mark.parametrize("layout", ["gs", "sg"])
def test_kept_scalar_launch_takes_each_calls_value(layout):
    """An array and a scalar past the eager programs' sizes: the kept launch (KeptScalarLaunch
    over StridedLaunch.scalar) puts each call's array and scalar in the kernel's cells in the
    layout's order, with the geometry packed once; another stride or device gets None (the
    full path then plans anew). No GPU."""
    import ctypes
    from xp_cuda._backends._base import KeptScalarLaunch
    from xp_cuda._devices import CPU, Device

    launched = []

    def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        ptrs = (ctypes.c_void_p * 3).from_address(addr)
        launched.append([ctypes.c_uint64.from_address(p).value for p in ptrs])

    plan = _standin_plan(launch, layout)
    arr = _Arr((6, 4), (64, 8), 0x1000, 4)  # every other column of a (6, 16) float32 array
    ops = (arr, np.float32(2.5)) if layout == "gs" else (np.float32(2.5), arr)
    kept = KeptScalarLaunch(plan.kept(layout, ops, (6, 4), 24), arr.strides, CPU)
    for ptr, value in ((0x2000, -1.25), (0x3000, 7.0)):
        out = kept(_Arr((6, 4), (64, 8), ptr, 4), np.float32(value), Device("cpu", 0))
        assert out.data.ptr == 0x7000
        bits = int.from_bytes(np.float32(value).tobytes(), "little")
        want = [ptr, bits] if layout == "gs" else [bits, ptr]
        assert launched[-1] == want + [0x7000]
    assert len(plan._geos) == 1
    assert kept(_Arr((6, 4), (128, 8), 0x2000, 4), np.float32(1), CPU) is None
    assert kept(_Arr((6, 4), (64, 8), 0x2000, 4), np.float32(1), Device("cpu", 1)) is None
    assert len(launched) == 2


def _layouts(rng, d1, d2, name):
    """(numpy operands before slicing, how to slice each): broadcast, strided, reversed,
    transposed, 0-d, single-element, misaligned, and vector-tail sizes."""
    def arr(shape, d, second=False):
        return _data(rng, name, d, shape, second)
    yield arr((7, 1), d1), arr((1, 9), d2, True), None
    yield arr((20, 18), d1), arr((18,), d2, True), (np.s_[::2, ::3], np.s_[::3])
    yield arr((33,), d1), arr((33,), d2, True), (np.s_[::-1], np.s_[:])
    yield arr((6, 5), d1), arr((5, 6), d2, True), ("T", None)
    yield arr((), d1), arr((5, 4), d2, True), None
    yield arr((5, 4), d1), arr((), d2, True), None
    yield arr((1,), d1), arr((3, 4), d2, True), None
    yield arr((1001,), d1), arr((1001,), d2, True), (np.s_[1:], np.s_[:-1])
    yield arr((4099,), d1), arr((4099,), d2, True), None
    yield arr((0, 3), d1), arr((3,), d2, True), None
    yield arr((2, 3, 2, 3, 2, 3, 2, 3, 2, 2), d1), arr((3, 1, 3, 1, 3, 1, 3, 2, 1), d2, True), \
        (np.s_[..., ::-1], None)  # ten axes: more than the kernels take after collapsing


def _check_layouts(device, name, d1, layouts):
    """`name` of each (a, b, slicing) layout on `device` against the NumPy reference."""
    for a, b, sl in layouts:
        xa, xb = xp.asarray(a, device=device), xp.asarray(b, device=device)
        if sl is not None:
            s1, s2 = sl
            xa = xa.T if s1 == "T" else (xa if s1 is None else xa[s1])
            xb = xb if s2 is None else xb[s2]
            a = a.T if s1 == "T" else (a if s1 is None else a[s1])
            b = b if s2 is None else b[s2]
        out = getattr(xp, name)(xa, xb)
        _close(to_numpy(out), _reference(name, [np.ascontiguousarray(a),
                                                np.ascontiguousarray(b)]), d1, name)


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_layouts_and_mixed_dtypes(device, rng, name):
    pairs = _pairs(name)
    # same dtype, and mixed pairs of each kind
    chosen = [p for p in pairs if p[0] == p[1]][:4] + [p for p in pairs if p[0] != p[1]][::7]
    for d1, d2 in chosen:
        _check_layouts(device, name, d1, _layouts(rng, d1, d2, name))
    # the same layouts again with new data: on cuda now served by launches cached per layout
    for d1, d2 in chosen[:2]:
        _check_layouts(device, name, d1, _layouts(rng, d1, d2, name))


@pytest.mark.parametrize("name", ["add", "divide", "less", "atan2", "bitwise_and", "equal"])
def test_layouts_through_the_strided_plan(device, rng, name, monkeypatch):
    """The same layouts through the Plan's strided kernel, which only arrays of more than
    _EAGER_STRIDED_MAX elements reach otherwise (its runs of neighbours along the innermost
    axis, and its element-by-element loop), and one such array for real."""
    if device.kind != "cuda":
        pytest.skip("the strided plan is the cuda backend's")
    import xp_cuda._backends.cuda as cuda_backend
    monkeypatch.setattr(cuda_backend, "_EAGER_STRIDED_MAX", 0)
    pairs = _pairs(name)
    chosen = [p for p in pairs if p[0] == p[1]][:6] + [p for p in pairs if p[0] != p[1]][::5]
    big = (lambda d1, d2: (_data(rng, name, d1, (300, 1)), _data(rng, name, d2, (1, 404), True),
                           None))
    for d1, d2 in chosen:
        _check_layouts(device, name, d1, list(_layouts(rng, d1, d2, name)) + [big(d1, d2)])
    a = _data(rng, "negative", xp.float32, (64, 36))
    x = xp.asarray(a, device=device)
    _close(to_numpy(xp.negative(x[:, ::-3])), np.negative(a[:, ::-3]), xp.float32, "negative")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float32", "float64", "complex64",
                                   "complex128", "bool"])
def test_operators_with_python_scalars(device, rng, dtype):
    d = getattr(xp, dtype)
    a = random_numpy(rng, (3, 5), d)
    x = xp.asarray(a, device=device)
    xc = xp.asarray(a, device=CPU)
    if d.kind == "bool":
        scalars, ops = [True, False], ["&", "|", "^", "==", "!="]
    elif d.kind in ("int", "uint"):
        scalars, ops = [3, 1], ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**", "<",
                                ">=", "=="]
    elif d.kind == "float":
        scalars, ops = [2.5, -0.0, 3, float("inf")], ["+", "-", "*", "/", "//", "%", "**", "<",
                                                      "==", ">"]
    else:
        scalars, ops = [1.5 - 2j, 2.0, 3], ["+", "-", "*", "/", "**", "==", "!="]
    for s in scalars:
        for op in ops:
            for expr in (f"x {op} s", f"s {op} x"):
                got = eval(expr, {"x": x, "s": s})
                ref = eval(expr, {"x": xc, "s": s})
                assert got.dtype == ref.dtype and got.device == device
                _close(to_numpy(got), to_numpy(ref), d, "pow" if "**" in op else op)
    # in place, on a strided view and on a whole array
    y = xp.asarray(a, device=device)
    yc = xp.asarray(a, device=CPU)
    s = scalars[0]
    if d.kind != "bool":
        y += s
        yc += s
    else:
        y &= s
        yc &= s
    _close(to_numpy(y), to_numpy(yc), d, "add")


# ---- special values ----------------------------------------------------------------------------
_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, np.inf, -np.inf, np.nan]
# Where the cpu reference (NumPy) leaves the 2023.12 text, the spec wins: sign of a complex
# number with a NaN part is NaN + NaN j ("If a is NaN or b is NaN, the result is NaN + NaN j").
_SPEC_OVER_NUMPY = {"sign"}


def _same_bits(got, ref, name, signed_zeros=True):
    """Equal, NaN to NaN, zeros with their sign; finite non-zero values to a few ulp."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.dtype.kind == "c":
        # The spec leaves many signs of complex results unspecified (zeros, and infinities
        # beside a NaN part); the specified ones are checked in test_spec_complex_cases and by
        # the official suite. Compare magnitudes there.
        nan_part = np.isnan(ref.real) | np.isnan(ref.imag)
        re = np.where(nan_part, np.abs(got.real), got.real)
        im = np.where(nan_part, np.abs(got.imag), got.imag)
        rre = np.where(nan_part, np.abs(ref.real), ref.real)
        rim = np.where(nan_part, np.abs(ref.imag), ref.imag)
        # Finite results compare as complex numbers: an error relative to |z| (Smith's division
        # leaves ~1e-17 where an exact component is 0; per-component checks would reject it).
        eps = np.finfo(got.real.dtype).eps
        with np.errstate(all="ignore"):
            close = (np.isfinite(got) & np.isfinite(ref) & (np.abs(ref) > 0)
                     & (np.abs(got - ref) <= 64 * eps * np.abs(ref)))
        return close | (_same_bits(re, rre, name, False) & _same_bits(im, rim, name, False))
    if got.dtype.kind != "f":
        return got == ref
    both_nan = np.isnan(got) & np.isnan(ref)
    eq = (got == ref) & ((np.signbit(got) == np.signbit(ref)) | (not signed_zeros))
    eps = np.finfo(got.dtype).eps
    fin = np.isfinite(got) & np.isfinite(ref) & (ref != 0)
    with np.errstate(all="ignore"):
        near = fin & (np.abs(got - ref) <= 64 * eps * np.abs(ref))
    return both_nan | eq | near


@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if ELEMENTWISE[n][1] != "integer"
                                  and any(d[0].kind in ("float", "complex")
                                          for d in _pairs(n))])
def test_special_values(device, name):
    if device.kind == "cpu":
        pytest.skip("the cpu path is the reference")
    arity = ELEMENTWISE[name][0]
    for d in (xp.float64, xp.float32, xp.complex128, xp.complex64):
        if not in_category(d, ELEMENTWISE[name][1]):
            continue
        if d.kind == "complex":
            vals = np.array([complex(a, b) for a in _SPECIAL for b in _SPECIAL], d._np)
        else:
            vals = np.array(_SPECIAL, d._np)
        if arity == 1:
            nps = [vals]
        else:
            nps = [np.repeat(vals, len(vals)), np.tile(vals, len(vals))]
        got = to_numpy(getattr(xp, name)(*(xp.asarray(v, device=device) for v in nps)))
        with np.errstate(all="ignore"):
            ref = _reference(name, nps)
        ok = _same_bits(got, ref, name)
        if name in _SPEC_OVER_NUMPY and d.kind == "complex":
            nan_part = np.isnan(nps[0].real) | np.isnan(nps[0].imag)
            ok |= nan_part & np.isnan(got.real) & np.isnan(got.imag)
        if name == "pow" and d.kind == "complex":
            continue  # exp(y log x) vs NumPy's integer-power shortcuts: checked by value above
        bad = np.flatnonzero(~ok)
        assert bad.size == 0, [(tuple(v[i] for v in nps), got[i], ref[i]) for i in bad[:8]]


@pytest.mark.parametrize("case", [
    ("acosh", complex(0.0, np.nan), (np.nan, np.pi / 2)),
    ("log", complex(np.inf, np.nan), (np.inf, np.nan)),
    ("log", complex(np.nan, -np.inf), (np.inf, np.nan)),
    ("log1p", complex(-np.inf, np.nan), (np.inf, np.nan)),
    ("log", complex(-0.0, 0.0), (-np.inf, np.pi)),
    ("tanh", complex(0.0, np.inf), (0.0, np.nan)),
    ("tanh", complex(-0.0, np.nan), (-0.0, np.nan)),
    ("tanh", complex(np.inf, 2.0), (1.0, 0.0)),
    ("sign", complex(np.nan, 1.0), (np.nan, np.nan)),
    ("sqrt", complex(-np.inf, 1.0), (0.0, np.inf)),
    ("exp", complex(np.nan, -0.0), (np.nan, -0.0)),
    ("expm1", complex(-np.inf, 1.0), (-1.0, 0.0)),
], ids=lambda c: f"{c[0]}({c[1]})")
def test_spec_complex_cases(device, case):
    """The cases CuPy's own kernels get wrong, read off the 2023.12 pages."""
    name, z, (re, im) = case
    for d in (xp.complex128, xp.complex64):
        got = complex(getattr(xp, name)(xp.asarray(z, dtype=d, device=device)))
        for g, e in ((got.real, re), (got.imag, im)):
            if np.isnan(e):
                assert np.isnan(g), (name, z, got)
            else:
                assert g == pytest.approx(e, rel=1e-6) and np.signbit(g) == np.signbit(e), \
                    (name, z, got)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_signed_zero_and_rounding(device, dtype):
    d = getattr(xp, dtype)
    x = xp.asarray([-0.5, 0.5, 1.5, 2.5, -2.5, -0.0, 0.0], dtype=d, device=device)
    np.testing.assert_array_equal(to_numpy(xp.round(x)), [-0.0, 0.0, 2.0, 2.0, -2.0, -0.0, 0.0])
    assert np.signbit(to_numpy(xp.round(x))).tolist() == [True, False, False, False, True,
                                                          True, False]
    a = xp.asarray([5.0, -5.0, 0.0, -0.0, 5.0], dtype=d, device=device)
    b = xp.asarray([-3.0, 3.0, -1.0, 1.0, np.inf], dtype=d, device=device)
    ac, bc = (xp.asarray(to_numpy(v), device=CPU) for v in (a, b))
    for f in ("floor_divide", "remainder", "maximum", "minimum", "copysign"):
        got, ref = to_numpy(getattr(xp, f)(a, b)), to_numpy(getattr(xp, f)(ac, bc))
        assert _same_bits(got, ref, f).all(), (f, got, ref)


def test_integer_edges(device):
    for d in (xp.int8, xp.int32, xp.int64):
        info = np.iinfo(d._np)
        a = np.array([info.min, info.min, 7, -7, 5, info.max], d._np)
        b = np.array([-1, 0, 0, 2, -2, -1], d._np)
        xa, xb = xp.asarray(a, device=device), xp.asarray(b, device=device)
        ca, cb = xp.asarray(a, device=CPU), xp.asarray(b, device=CPU)
        for f in ("floor_divide", "remainder", "add", "multiply", "subtract", "abs",
                  "negative", "bitwise_left_shift", "bitwise_right_shift", "pow"):
            args = (xa,) if ELEMENTWISE[f][0] == 1 else (xa, xb)
            cargs = (ca,) if ELEMENTWISE[f][0] == 1 else (ca, cb)
            if f.startswith("bitwise") or f == "pow":
                args = (xa, xp.abs(xb) * 3)
                cargs = (ca, xp.abs(cb) * 3)
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(to_numpy(getattr(xp, f)(*args)),
                                              to_numpy(getattr(xp, f)(*cargs)), err_msg=f)


def test_kernels_compiled_once_and_cached(device):
    if device.kind == "cpu":
        pytest.skip("cuda only")
    from xp_cuda._backends import backend
    plans = backend(device)._plans
    x = xp.asarray([1.0, 2.0, 3.0], device=device, dtype=xp.float32)
    y = x + x
    n_plans = len(plans)
    plan = plans[("add", ("float32", "float32"))]
    k = plan.kernel("cc")
    for _ in range(3):
        y = x + y
        y = xp.add(y, x)
    assert len(plans) == n_plans and plan.kernel("cc") is k
    np.testing.assert_array_equal(to_numpy(y), [8.0, 16.0, 24.0])


def test_errors_unchanged_on_fast_path(device):
    x = xp.asarray([1.0, 2.0], device=device)
    x + x  # the launch plan for (float64, float64) now exists
    with pytest.raises(ValueError, match="cannot be broadcast"):
        x + xp.asarray([1.0, 2.0, 3.0], device=device)
    with pytest.raises(TypeError, match="cannot be promoted"):
        x + xp.asarray([1, 2], device=device)
    with pytest.raises(TypeError, match="requires"):
        xp.bitwise_and(x, x)
    if device is not CPU:
        with pytest.raises(ValueError, match="different devices"):
            x + xp.asarray([1.0, 2.0], device=CPU)
    with pytest.raises(TypeError):
        x + np.ones(2)
    with pytest.raises(TypeError, match="in-place"):
        xf = xp.asarray([1, 2], device=device, dtype=xp.float32)
        xf *= x


def test_hot_paths_keep_devices_apart(device, rng):
    """A launch plan made on one device never serves arrays of another (same dtypes)."""
    a = random_numpy(rng, (5,), xp.float32)
    for dev in (device, CPU, device):
        x = xp.asarray(a, device=dev)
        for _ in range(2):
            np.testing.assert_allclose(to_numpy(xp.sin(x)), np.sin(a), rtol=4e-6)
            np.testing.assert_allclose(to_numpy(x * 2.0), a * 2, rtol=0)
            np.testing.assert_allclose(to_numpy(x + x), a + a, rtol=0)
            assert (x + x).device == dev and xp.sin(x).device == dev


def test_output_allocator_makes_what_cupy_empty_makes(device):
    """The launchers' allocator (CuPy's extension allocator, bypassing ndarray's Python-level
    __new__) gives arrays indistinguishable from cupy.empty: type, shape, strides, dtype, flags,
    a fresh pool block, usable by CuPy's own operations."""
    if device.kind == "cpu":
        pytest.skip("cuda only")
    import cupy as cp
    from xp_cuda._kernels import empty_allocator
    alloc = empty_allocator(cp)
    assert alloc is not cp.ndarray  # CuPy 14: the fast path is taken (fallback otherwise)
    for shape in ((), (0,), (7,), (3, 0, 2), (4, 5), (2, 3, 4)):
        for dt in ("bool", "int8", "uint16", "int64", "float32", "complex128"):
            got, ref = alloc(shape, np.dtype(dt)), cp.empty(shape, dtype=dt)
            assert type(got) is cp.ndarray and got.base is None
            assert (got.shape, got.strides, got.dtype, got.size, got.nbytes) == \
                (ref.shape, ref.strides, ref.dtype, ref.size, ref.nbytes)
            assert got.flags.c_contiguous and got.flags.owndata
            if got.size:
                assert got.data.ptr != ref.data.ptr
                got[...] = cp.arange(got.size).reshape(shape).astype(dt)
                cp.testing.assert_array_equal(got, cp.arange(got.size).reshape(shape).astype(dt))


def test_allocator_views_are_what_the_constructor_makes(device):
    """The allocator's view form (the extension type's _init, bypassing ndarray's Python-level
    __init__) gives the array cupy.ndarray(shape, dtype, memptr, strides) gives: type,
    shape, strides, dtype, flags, address, the elements read and written through it; for
    offsets, negative, zero and mixed strides."""
    if device.kind == "cpu":
        pytest.skip("cuda only")
    import cupy as cp
    from xp_cuda._kernels import empty_allocator
    view = empty_allocator(cp)
    assert view is not cp.ndarray  # CuPy 14: the fast path is taken (fallback otherwise)
    for dt in ("bool", "int8", "uint16", "int64", "float32", "complex128"):
        dt = np.dtype(dt)
        base = cp.arange(60).astype(dt).reshape(6, 10)
        s = dt.itemsize
        for shape, off, strides in (((6, 10), 0, (10 * s, s)), ((6, 10), 59 * s, (-10 * s, -s)),
                                    ((3, 10), 9 * s, (20 * s, -s)), ((4, 5), 0, (0, 2 * s)),
                                    ((2, 3, 2), 2 * s, (30 * s, 3 * s, 10 * s)), ((), 7 * s, ())):
            args = (shape, dt, base.data + off, strides)
            got, ref = view(*args), cp.ndarray(*args)
            assert type(got) is cp.ndarray
            assert (got.shape, got.strides, got.dtype, got.data.ptr, got.size) == \
                (ref.shape, ref.strides, ref.dtype, ref.data.ptr, ref.size), (dt, shape, strides)
            for f in ("c_contiguous", "f_contiguous", "owndata"):
                assert getattr(got.flags, f) == getattr(ref.flags, f), (dt, shape, strides, f)
            cp.testing.assert_array_equal(got, ref)
        w = view((3, 10), dt, base.data + 9 * s, (20 * s, -s))  # rows 0, 2, 4 reversed
        w[...] = cp.zeros((3, 10), dt)
        assert not bool(base[::2].any()) and bool(base[1::2].all())


@pytest.mark.parametrize("dtype", [xp.complex64, xp.complex128], ids=str)
def test_complex_arithmetic_rounds_as_fused(device, rng, dtype):
    """Eager kernels compile like fused ones (no FMA contraction): complex products and
    quotients agree exactly. Contracted, eager complex64 x / x kept imaginary residuals of
    ~1e-9 that fused code and NumPy did not have."""
    from xp_cuda.fusion import fuse
    a = random_numpy(rng, (1001,), dtype)
    b = random_numpy(rng, (1001,), dtype)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    for f in (lambda p, q: p * q, lambda p, q: p / q, lambda p, q: p / p, lambda p, q: p * q + p):
        np.testing.assert_array_equal(to_numpy(fuse(f)(x, y)), to_numpy(f(x, y)))


@pytest.mark.parametrize("dtype", [xp.bool, xp.int8, xp.int16, xp.float32, xp.float64,
                                   xp.complex128], ids=str)
def test_transposed_operands_read_through_tiles(device, rng, dtype, monkeypatch):
    """Operands read against their memory order (x.T, a permuted 3-d array) go through the
    tiled kernels: every tiled layout (tg, gt, ts, st, t) on partial tiles, batch dimensions,
    broadcast, strided and scalar second operands; the values are NumPy's exactly."""
    if device.kind != "cuda":
        pytest.skip("the strided plan is the cuda backend's")
    import xp_cuda._backends.cuda as cuda_backend
    monkeypatch.setattr(cuda_backend, "_EAGER_STRIDED_MAX", 0)
    used = []
    kernel = gen.Plan.kernel
    monkeypatch.setattr(gen.Plan, "kernel", lambda self, lay: used.append(lay) or kernel(self, lay))
    a, b = random_numpy(rng, (37, 83), dtype), random_numpy(rng, (83, 37), dtype)
    c, w = random_numpy(rng, (20, 3, 70), dtype), random_numpy(rng, (70, 20, 3), dtype)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    z, v = xp.asarray(c, device=device), xp.asarray(w, device=device)
    xt, zt = xp.permute_dims(x, (1, 0)), xp.permute_dims(z, (2, 0, 1))
    at, ct = a.T, c.transpose(2, 0, 1)
    # xg: contiguous along its first axis with gaps (not dense: the tile, not dense_order)
    xg, ag = xt[:, ::2], at[:, ::2]
    if dtype == xp.bool:
        cases = [(xp.logical_xor(xt, y), at ^ b), (xp.logical_and(y, xt), b & at),
                 (xp.logical_not(xg), ~ag), (xp.logical_or(zt, v[:, :1, :]), ct | w[:, :1, :]),
                 (xg ^ True, ag ^ True), (True & xg, True & ag)]
    else:
        s = 3 if dtype in (xp.int8, xp.int16) else 2.5
        cases = [
            (xt + y, at + b), (y - xt, b - at), (xp.negative(xg), np.negative(ag)),
            (xg * s, ag * np.asarray(s, a.dtype)), (s - xg, np.asarray(s, a.dtype) - ag),
            (xt[::2, ...] + y[::2, ...], at[::2] + b[::2]),
            (xt[None, ...] + xp.stack([y, y]), at[None] + np.stack([b, b])),
            (xt + y[:1, :], at + b[:1]), (xg + y[:, ::2], ag + b[:, ::2]),
            (zt + v, ct + w), (xp.negative(zt[:, ::-1, :]), np.negative(ct[:, ::-1, :])),
            # a product: against our own kernel on a C-contiguous copy (NumPy's SIMD complex
            # loops fuse a*c - b*d into an FMA; ours compile with -fmad=false)
            (xp.multiply(zt, v[:, :1, :]),
             to_numpy(xp.multiply(xp.asarray(np.ascontiguousarray(ct), device=device),
                                  v[:, :1, :]))),
        ]
        if dtype != xp.complex128:
            cases.append((xp.less(xt, y), at < b))
    for got, want in cases:
        assert got.shape == want.shape
        np.testing.assert_array_equal(to_numpy(got), want)
    assert {"tg", "gt", "ts", "st", "t"} <= set(used), used
    # operands of one dense permuted layout: read as flat memory, the result laid out as they
    # are (dense_order), values NumPy's
    used.clear()
    y2 = random_numpy(rng, (37, 83), dtype)
    x2t = xp.permute_dims(xp.asarray(y2, device=device), (1, 0))
    dense = [(xt + x2t, at + y2.T) if dtype != xp.bool else (xt ^ x2t, at ^ y2.T),
             (xp.not_equal(zt, zt), ct != ct)]
    if dtype != xp.bool:
        dense.append((xp.negative(xt), np.negative(at)))
        s = 3 if dtype in (xp.int8, xp.int16) else 2.5
        dense += [(xt * s, at * np.asarray(s, a.dtype)), (s - xt, np.asarray(s, a.dtype) - at)]
    for got, want in dense:
        assert got.shape == want.shape
        np.testing.assert_array_equal(to_numpy(got), want)
    assert not used or all(lay in ("c", "cc", "cs", "sc") for lay in used), used
    out_strides = dense[0][0]._data.strides
    assert out_strides[0] < out_strides[1]  # laid out as x.T: column-major
    # one above the tile's 2^20-element sizes without the monkeypatch
    monkeypatch.setattr(cuda_backend, "_EAGER_STRIDED_MAX", 1 << 16)
    big_a = random_numpy(rng, (1100, 1000), dtype)
    big_b = random_numpy(rng, (1000, 1100), dtype)
    got = xp.permute_dims(xp.asarray(big_a, device=device), (1, 0)) != \
        xp.asarray(big_b, device=device)
    np.testing.assert_array_equal(to_numpy(got), big_a.T != big_b)


@pytest.mark.parametrize("dtype", [xp.int16, xp.float32, xp.complex64], ids=str)
def test_strided_launches_kept_for_the_hot_path(device, rng, dtype):
    """Strided, broadcast and transposed calls of more elements than the eager programs take
    are kept (a StridedLaunch under the spec layer's plan key) and serve the next call of the
    same layouts; new data, new values; another layout is planned anew."""
    if device.kind != "cuda":
        pytest.skip("the strided plan is the cuda backend's")
    from xp_cuda._backends._base import KEPT
    a, b = random_numpy(rng, (300, 400), dtype), random_numpy(rng, (400, 300), dtype)
    for r in range(2):  # the second round: the kept launches, on new data
        a, b = a[::-1].copy(), b[:, ::-1].copy()
        x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
        xt = xp.permute_dims(x, (1, 0))
        s = a.dtype.type(3 + r)  # an operator's Python scalar, another value each round
        py = complex(s) if a.dtype.kind == "c" else int(s)
        cases = [(xt + y, a.T + b), (y - xt[:, :1], b - a.T[:, :1]),
                 (xp.negative(y[:, ::2]), np.negative(b[:, ::2])),
                 (xp.negative(xt), np.negative(a.T)), (y - y[::-1, :], b - b[::-1]),
                 (y[:, ::2] * py, b[:, ::2] * s), (py - xt, s - a.T),
                 (y[::-1, :] - py, b[::-1] - s)]
        for got, want in cases:
            np.testing.assert_array_equal(to_numpy(got), want)
    kinds = {type(k.launch).__name__ for k in KEPT.values() if hasattr(k, "launch")}
    assert "StridedLaunch" in kinds
    assert sum(type(k).__name__ == "KeptScalarLaunch" for k in KEPT.values()) >= 3
    # the same shapes in another layout: not served by the kept launch (its strides differ)
    y2 = xp.asarray(np.ascontiguousarray(b[::-1]), device=device)
    np.testing.assert_array_equal(to_numpy(xt + y2[::-1, :]), a.T + b)


def test_tile_operand_picks_the_transposed_operand():
    """tile_operand: in the collapsed geometry, the first array operand contiguous along
    another dimension than the last, both tiled extents at least TILE_MIN; the tile tasks."""
    def plan(shape, ops, layout):
        nd, dims, strides = gen._geometry(shape, ops, layout)
        isz = [o.itemsize if m == "g" else 0 for o, m in zip(ops, layout)]
        return gen.tile_operand(nd, dims, strides, isz)

    a = np.zeros((64, 48), np.float32)
    b = np.zeros((4, 50, 60), np.float64)
    assert plan((48, 64), (a.T, np.zeros((48, 64), np.float32)), "gg") == (0, 0, 1)
    assert plan((48, 64), (np.zeros((48, 64), np.int8), a.T), "gg") == (1, 0, 1)
    assert plan((48, 64), (a.T, np.float32(2)), "gs") == (0, 0, 1)
    assert plan((48, 64), (a.T,), "g") == (0, 0, 1)
    # (60, 4, 50): b is the last source axis (dim 0 of the output); batch 4, 1 x 1 tiles
    assert plan((60, 4, 50), (b.transpose(2, 0, 1),), "g") == (0, 0, 4)
    assert plan((4, 60, 50), (b.transpose(0, 2, 1),), "g") == (0, 1, 4)
    big = np.zeros((1000, 700), np.complex128)  # 16-byte elements: 32-edge tiles
    assert plan((700, 1000), (big.T,), "g") == (0, 0, 22 * 32)
    assert plan((48, 64), (a,), "g") is None  # C-contiguous
    assert plan((32, 48), (a[::2],), "g") is None  # strided, still contiguous along the last
    assert plan((64, 24), (a[:, ::2],), "g") is None  # contiguous along no axis
    assert plan((64, 48), (np.broadcast_to(a[:1], (64, 48)),), "g") is None
    assert plan((48, 8), (a[:8].T,), "g") is None  # an extent below TILE_MIN
    assert plan((8, 64), (a[:, :8].T,), "g") is None
    # offsets within a tile past 32 bits (XpAt): the strided kernel
    huge = np.lib.stride_tricks.as_strided(a, (64, 48), (2**28, 4))  # never read
    assert plan((48, 64), (huge.T,), "g") is None


def test_tiled_launch_packs_the_tile_parameters():
    """A transposed operand's launch: the tiled layout's kernel, a grid of at most one block a
    tile task, and the five parameters after the geometry (kb, nb, sb1, sb2, osb), no GPU."""
    import ctypes
    from xp_cuda._kernels import elementwise as E
    Arr = _Arr
    launched = []

    def launch(fn, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        cells = 13 + 4 * E.MAXND
        ptrs = (ctypes.c_void_p * cells).from_address(addr)
        launched.append((fn, gx, [ctypes.c_uint64.from_address(p).value for p in ptrs]))

    plan = _standin_plan(launch, "gt")
    # out (3, 200, 130): operand 2 is a (130, 3, 256)[:, :, :200] array permuted, contiguous
    # along dim 1 (the padding keeps dims 0 and 1 apart after collapsing)
    x1 = Arr((3, 200, 130), (4 * 200 * 130, 4 * 130, 4), 0x1000, 4)
    x2 = Arr((3, 200, 130), (4 * 256, 4, 4 * 768), 0x2000, 4)
    plan.strided("gg", (x1, x2), (3, 200, 130), 3 * 200 * 130)
    fn, blocks, vals = launched[0]
    assert fn == 0xF00 and blocks == 3 * 4 * 3  # batch 3, 4 tiles along b (200), 3 along a
    assert vals[-5:] == [1, 200, 130, 1, 130]  # kb, nb, sb1, sb2, osb


def test_dense_order_reads_permuted_operands_as_memory():
    """dense_order: operands of one dense, positive, non-C layout (x.T, a permuted array; two
    operands alike, a scalar beside them) give their element strides, the result's layout;
    anything else (C order, broadcast, reversed, gaps, two layouts) None."""
    a = np.zeros((64, 48), np.float32)
    b = np.zeros((4, 5, 6), np.float64)
    c = np.zeros((48, 64), np.int8)
    assert gen.dense_order((48, 64), (a.T,), "g") == (1, 48)
    assert gen.dense_order((48, 64), (a.T, np.float32(2)), "gs") == (1, 48)
    assert gen.dense_order((48, 64), (a.T, c.T.T.T.T), "gg") is None  # C-ordered second
    assert gen.dense_order((48, 64), (a.T, np.zeros((64, 48), np.int8).T), "gg") == (1, 48)
    assert gen.dense_order((6, 4, 5), (b.transpose(2, 0, 1),), "g") == (1, 30, 6)
    assert gen.dense_order((1, 48, 64), (a.T[None],), "g") is not None
    assert gen.dense_order((64, 48), (a,), "g") is None
    assert gen.dense_order((48, 64), (a[::-1].T,), "g") is None
    assert gen.dense_order((24, 64), (a[:, ::2].T,), "g") is None
    assert gen.dense_order((48, 64), (np.broadcast_to(a[:1].T, (48, 64)),), "g") is None
    assert gen.dense_order((48, 64), (a.T, np.zeros((48, 64), np.float32)[::1, ::1].T.T),
                           "gg") is None
