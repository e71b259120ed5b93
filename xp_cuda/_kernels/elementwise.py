"""Generated elementwise kernels: one generator, one table of per-kind expressions, a launcher.

``OPS`` is the single table of what each elementwise function (2023.12's 65 and the rows of
later revisions) computes for each dtype kind (b bool, i signed, u unsigned, f real floating,
c complex): a C++ expression over ``a`` (and ``b``) of the compute type ``T`` (the promoted
dtype), with ``U`` an unsigned type at least as wide as int (wrap-around integer arithmetic)
and ``R`` the real type of ``T``. Special cases
live in the device helpers of elementwise.cuh that the expressions name; nothing else in the
package decides them.

For one (function, dtype1, dtype2) the generator emits one translation unit holding every
layout variant: contiguous (vectorised, 16-byte accesses when aligned) with each operand an
array, a 0-d array or a scalar parameter, strided (each operand read through its own
strides, broadcast axes stride 0), and tiled (an operand contiguous along another axis than
the result's last, x.T, read through a shared-memory tile: elementwise_tiled.cuh). Operands
are loaded in their own dtypes and converted in registers; the output is written once. The spec
layer (xp_cuda._elementwise) validates and decides the result dtype; nothing here checks user
input.
"""
from __future__ import annotations

import ctypes
import math
import struct

import numpy as np

from ._runtime import CTYPES, ThreadParams, device_info, driver_launch, empty_allocator, \
    load_kernel, source

_SHORT = {"bool": "b1", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1",
          "uint16": "u2", "uint32": "u4", "uint64": "u8", "float32": "f4", "float64": "f8",
          "complex64": "c8", "complex128": "c16"}
_KIND = {"bool": "b", "int": "i", "uint": "u", "float": "f", "complex": "c"}

_WRAP = {k: f"(T)((U)a {op} (U)b)" for k, op in (("add", "+"), ("sub", "-"), ("mul", "*"))}

def _same(expr, kinds="iufc"):
    return {k: expr for k in kinds}


def _cmp(op):
    return {"b": f"a {op} b", "i": f"a {op} b", "u": f"a {op} b", "f": f"a {op} b"}


# function -> {kind: expression}. Read against the spec page of each function: where a helper
# is named, its comment in elementwise.cuh says which special cases it carries.
OPS = {
    "abs": {"i": "xp_iabs<T, U>(a)", "u": "a", "f": "fabs(a)", "c": "xp_cabs(a)"},
    "acos": {"f": "acos(a)", "c": "xp_cacos(a)"},
    "acosh": {"f": "acosh(a)", "c": "xp_cacosh(a)"},
    "add": {"i": _WRAP["add"], "u": _WRAP["add"], "f": "a + b", "c": "a + b"},
    "asin": {"f": "asin(a)", "c": "xp_casin(a)"},
    "asinh": {"f": "asinh(a)", "c": "xp_casinh(a)"},
    "atan": {"f": "atan(a)", "c": "xp_catan(a)"},
    "atan2": {"f": "atan2(a, b)"},
    "atanh": {"f": "atanh(a)", "c": "xp_catanh(a)"},
    "bitwise_and": _same("a & b", "biu"),
    "bitwise_left_shift": {"i": "xp_lshift<T, U>(a, b)", "u": "xp_lshift<T, U>(a, b)"},
    "bitwise_invert": {"b": "!a", "i": "~a", "u": "~a"},
    "bitwise_or": _same("a | b", "biu"),
    "bitwise_right_shift": {"i": "xp_rshift(a, b)", "u": "xp_rshift(a, b)"},
    "bitwise_xor": _same("a ^ b", "biu"),
    "ceil": {"i": "a", "u": "a", "f": "ceil(a)"},
    "conj": {"c": "thrust::conj(a)"},
    "copysign": {"f": "copysign(a, b)"},
    "cos": {"f": "cos(a)", "c": "xp_ccos(a)"},
    "cosh": {"f": "cosh(a)", "c": "xp_ccosh(a)"},
    "divide": {"f": "a / b", "c": "xp_cdiv(a, b)"},
    "equal": {"b": "a == b", "i": "a == b", "u": "a == b", "f": "a == b", "c": "xp_ceq(a, b)"},
    "exp": {"f": "exp(a)", "c": "xp_cexp(a)"},
    "expm1": {"f": "expm1(a)", "c": "xp_cexpm1(a)"},
    "floor": {"i": "a", "u": "a", "f": "floor(a)"},
    "floor_divide": {"i": "xp_ifloordiv(a, b)", "u": "xp_ufloordiv(a, b)",
                     "f": "xp_ffloordiv(a, b)"},
    "greater": _cmp(">"),
    "greater_equal": _cmp(">="),
    "hypot": {"f": "xp_hypot(a, b)"},
    "imag": {"c": "a.imag()"},
    "isfinite": {"i": "true", "u": "true", "f": "isfinite(a)", "c": "xp_cisfinite(a)"},
    "isinf": {"i": "false", "u": "false", "f": "isinf(a)", "c": "xp_cisinf(a)"},
    "isnan": {"i": "false", "u": "false", "f": "isnan(a)", "c": "xp_cisnan(a)"},
    "less": _cmp("<"),
    "less_equal": _cmp("<="),
    "log": {"f": "log(a)", "c": "xp_clog(a)"},
    "log1p": {"f": "log1p(a)", "c": "xp_clog1p(a)"},
    "log2": {"f": "log2(a)", "c": "xp_clogscaled(a, (R)1.442695040888963407359924681001892137)"},
    "log10": {"f": "log10(a)",
              "c": "xp_clogscaled(a, (R)0.434294481903251827651128918916605082)"},
    "logaddexp": {"f": "xp_logaddexp(a, b)"},
    "logical_and": {"b": "a && b"},
    "logical_not": {"b": "!a"},
    "logical_or": {"b": "a || b"},
    "logical_xor": {"b": "a != b"},
    "maximum": {"i": "xp_isel(a > b, a, b)", "u": "xp_isel(a > b, a, b)",
                "f": "xp_fmaximum(a, b)"},
    "minimum": {"i": "xp_isel(a < b, a, b)", "u": "xp_isel(a < b, a, b)",
                "f": "xp_fminimum(a, b)"},
    "multiply": {"i": _WRAP["mul"], "u": _WRAP["mul"], "f": "a * b", "c": "a * b"},
    "negative": {"i": "(T)((U)0 - (U)a)", "u": "(T)((U)0 - (U)a)", "f": "-a", "c": "-a"},
    "nextafter": {"f": "xp_nextafter(a, b)"},
    "not_equal": {"b": "a != b", "i": "a != b", "u": "a != b", "f": "a != b",
                  "c": "!xp_ceq(a, b)"},
    "positive": _same("a"),
    "pow": {"i": "xp_ipow<T, U>(a, b)", "u": "xp_ipow<T, U>(a, b)", "f": "pow(a, b)",
            "c": "xp_cpow(a, b)"},
    "real": {"c": "a.real()"},
    "reciprocal": {"f": "(T)1 / a", "c": "xp_creciprocal(a)"},
    "remainder": {"i": "xp_iremainder(a, b)", "u": "xp_uremainder(a, b)",
                  "f": "xp_fremainder(a, b)"},
    "round": {"i": "a", "u": "a", "f": "rint(a)", "c": "xp_cround(a)"},
    "sign": {"i": "xp_isign(a)", "u": "(T)(a > 0)", "f": "xp_fsign(a)", "c": "xp_csign(a)"},
    "signbit": {"f": "signbit(a)"},
    "sin": {"f": "sin(a)", "c": "xp_csin(a)"},
    "sinh": {"f": "sinh(a)", "c": "xp_csinh(a)"},
    "square": {"i": "(T)((U)a * (U)a)", "u": "(T)((U)a * (U)a)", "f": "a * a",
               "c": "xp_csquare(a)"},
    "sqrt": {"f": "sqrt(a)", "c": "xp_csqrt(a)"},
    "subtract": {"i": _WRAP["sub"], "u": _WRAP["sub"], "f": "a - b", "c": "a - b"},
    "tan": {"f": "tan(a)", "c": "xp_ctan(a)"},
    "tanh": {"f": "tanh(a)", "c": "xp_ctanh(a)"},
    "trunc": {"i": "a", "u": "a", "f": "trunc(a)"},
}

MAXND = 8  # XP_MAXND in elementwise.cuh: collapsed dimensions a strided kernel takes
THREADS = 256

# Layout variants. Binary: two operand letters, c = contiguous array, z = 0-d array (read once),
# s = scalar parameter; g = strided; t = strided and read through a shared-memory tile (an
# operand contiguous along another axis than the output's last: elementwise_tiled.cuh).
# Unary: c, g or t.
BINARY_LAYOUTS = ("cc", "cz", "zc", "gg", "tg", "gt")
SCALAR_LAYOUTS = ("cs", "sc", "gs", "sg", "ts", "st")  # only for dtype1 == dtype2 (the operators)
UNARY_LAYOUTS = ("c", "g", "t")


def _unsigned_wide(dtype: str) -> str:
    return "unsigned long long" if dtype.endswith("64") and dtype[0] in "iu" else "unsigned int"


def _real_ctype(dtype: str) -> str:
    return {"complex64": "float", "complex128": "double"}.get(dtype, CTYPES[dtype])


def vec_width(names) -> int:
    """Elements per thread in the contiguous path: 16 bytes of the widest array operand."""
    return max(1, 16 // max(np.dtype(n).itemsize for n in names))


def kernel_name(fname: str, dtypes, layout: str) -> str:
    return f"xp_{fname}_{'_'.join(_SHORT[d] for d in dtypes)}_{layout}"


def _op_struct(sname, fname, tc, to, arity):
    kind = _KIND[_dtype_kind(tc)]
    expr = OPS[fname][kind]
    params = "T a" if arity == 1 else "T a, T b"
    return (f"struct {sname} {{\n  typedef {CTYPES[tc]} T;\n  typedef {_real_ctype(tc)} R;\n"
            f"  typedef {_unsigned_wide(tc)} U;\n"
            f"  static XP_HD {CTYPES[to]} f({params}) {{ return ({CTYPES[to]})({expr}); }}\n}};\n")


def _dtype_kind(name: str) -> str:
    if name == "bool":
        return "bool"
    if name.startswith("complex"):
        return "complex"
    if name.startswith("float"):
        return "float"
    return "uint" if name.startswith("uint") else "int"


def _geo_params(arity):
    names = [f"d{i}" for i in range(MAXND)] + [f"a{i}" for i in range(MAXND)]
    if arity == 2:
        names += [f"b{i}" for i in range(MAXND)]
    names += [f"q{i}" for i in range(MAXND)]
    names += ["inner", "in1"] + (["in2"] if arity == 2 else [])
    params = "int nd, " + ", ".join(f"long long {n}" for n in names)
    fill = (f"XpGeo g; g.nd = nd; g.inner = inner; g.in1 = in1; "
            f"g.in2 = {'in2' if arity == 2 else '0'};\n"
            + "".join(f"  g.sh[{i}] = d{i}; g.s1[{i}] = a{i}; g.s2[{i}] = "
                      f"{f'b{i}' if arity == 2 else '0'}; g.mg[{i}] = (unsigned int)q{i}; "
                      f"g.sf[{i}] = (int)(q{i} >> 32);\n" for i in range(MAXND)))
    return params, fill


def fast_divisor(d: int) -> int:
    """elementwise.cuh's division by d (1 <= d < 2**31) as a multiply and shift, packed as
    (shift << 32) | magic: q = (umulhi(r, magic) + r) >> shift for every r < 2**31
    (Granlund and Montgomery's round-up method, as torch's IntDivider)."""
    shift = max(0, (d - 1).bit_length())
    magic = ((1 << 32) * ((1 << shift) - d)) // d + 1
    assert 0 < magic <= 0xFFFFFFFF or d == 1, d
    return (shift << 32) | (magic & 0xFFFFFFFF)


def instantiation(fname: str, dtypes, tc: str, to: str, layouts) -> str:
    """C++ for one (function, input dtypes): the op struct and one kernel per layout."""
    arity = len(dtypes)
    sname = f"XpOp_{kernel_name(fname, dtypes, 'op')}"
    out = [_op_struct(sname, fname, tc, to, arity)]
    cts = [CTYPES[d] for d in dtypes]
    cto = CTYPES[to]
    vec = vec_width(list(dtypes) + [to])
    for lay in layouts:
        kname = kernel_name(fname, dtypes, lay)
        if "g" in lay or "t" in lay:  # a strided operand ("gg", "gs", "tg", ...): the geometry
            params, fill = _geo_params(arity)
            srcs, decl = [], []
            for i, (ct, m) in enumerate(zip(cts, lay)):
                if m == "s":
                    decl.append(f"const {ct} x{i + 1}")
                    srcs.append(f"XpVal<{ct}>{{x{i + 1}}}")
                else:
                    decl.append(f"const {ct}* __restrict__ x{i + 1}")
                    srcs.append(f"XpArr<{ct}>{{x{i + 1}}}")
            if "t" in lay:  # TILE_EXTRA: the tiled dimension b, as Plan.strided packs it
                params += ", int kb, long long nb, long long sb1, long long sb2, long long osb"
                call = (f"xp_tiled2<{lay.index('t') + 1}, {sname}>({', '.join(srcs)}, out, n, "
                        f"g, kb, nb, sb1, sb2, osb);" if arity == 2 else
                        f"xp_tiled1<{sname}>({srcs[0]}, out, n, g, kb, nb, sb1, osb);")
            else:
                call = (f"xp_strided{arity}<{sname}>({', '.join(srcs)}, out, n, g);")
            out.append(f'extern "C" __global__ void __launch_bounds__({THREADS}) {kname}('
                       f"{', '.join(decl)}, {cto}* __restrict__ out, long long n, {params}) {{\n"
                       f"  {fill}  {call}\n}}\n")
            continue
        srcs, decl = [], []
        for i, (ct, m) in enumerate(zip(cts, lay)):
            if m == "s":
                decl.append(f"const {ct} x{i + 1}")
                srcs.append(f"XpVal<{ct}>{{x{i + 1}}}")
            elif m == "z":
                decl.append(f"const {ct}* __restrict__ x{i + 1}")
                srcs.append(f"XpVal<{ct}>{{x{i + 1}[0]}}")
            else:
                decl.append(f"const {ct}* __restrict__ x{i + 1}")
                srcs.append(f"XpArr<{ct}>{{x{i + 1}}}")
        out.append(f'extern "C" __global__ void __launch_bounds__({THREADS}) {kname}('
                   f"{', '.join(decl)}, {cto}* __restrict__ out, long long n) {{\n"
                   f"  xp_contig{arity}<{sname}, {vec}>({', '.join(srcs)}, out, n);\n}}\n")
    return "".join(out)


def layouts_for(dtypes) -> tuple:
    if len(dtypes) == 1:
        return UNARY_LAYOUTS
    return BINARY_LAYOUTS + (SCALAR_LAYOUTS if dtypes[0] == dtypes[1] else ())


def header(body: str) -> str:
    """elementwise.cuh, the device helpers every generated unit starts with, for a unit whose
    code after them is ``body``: its complex helpers are compiled in (XP_COMPLEX) only where
    ``body`` names a complex C type (CTYPES spells both complex<...>), so a real unit's
    first compile does not parse CuPy's complex.cuh; elementwise_tiled.cuh follows only in
    the tiled layouts' units (the other units' sources, and their shipped cubins, unchanged)."""
    gate = "#define XP_COMPLEX\n" if "complex<" in body else ""
    tiled = "\n" + source("elementwise_tiled.cuh") if "xp_tiled" in body else ""
    return gate + source("elementwise.cuh") + tiled


def layout_unit(fname: str, dtypes, tc: str, to: str, layout: str) -> str:
    """The source the runtime compiles for one kernel: the helpers and one layout's kernel.
    A first call then waits for the one kernel it launches, not for every layout of the
    function (about half the NVRTC time of a binary function's eight)."""
    body = instantiation(fname, tuple(dtypes), tc, to, (layout,))
    return header(body) + "\n" + body


def translation_unit(items) -> str:
    """One source: the helpers, then each (fname, dtypes, compute dtype, out dtype)."""
    body = "".join(instantiation(f, d, tc, to, layouts_for(d)) for f, d, tc, to in items)
    return header(body) + "\n" + body


# No contraction of a*b+c into one FMA: complex products round as NumPy's do (each partial
# product rounded). Fused kernels compile with the same options, so fused and eager agree.
OPTIONS = ("--fmad=false",)


# ---- launcher ------------------------------------------------------------------------------
# Contiguous kernels get one thread per vector (their loop is grid-stride only beyond this):
# on the H200, one-shot blocks run at 1.03-1.06 of the copy rate where 16 resident blocks per
# SM walking the array reached 0.98-1.02.
MAX_GRID = 2**31 - 1

# The hot paths' parameter block (in1, in2, out, n; c1 uses three cells), one per thread and
# shared by every Plan: cuLaunchKernel copies it before returning.
_PARAMS = ThreadParams(4)


def _packer(code: str):
    pack = struct.Struct("<" + code).pack
    from_bytes = int.from_bytes
    return lambda v: from_bytes(pack(v), "little")


def _complex64_bits(v, _pack=struct.Struct("<ff").pack):
    return int.from_bytes(_pack(v.real, v.imag), "little")


# A scalar operand's bits for its parameter cell, by the NumPy scalar type of a TypedScalar's
# value: struct packs them in a fifth of NumPy's tobytes() (~1 us of an 8-element x * 2.5).
# Exact: each code is the scalar's own width (float32 goes through a double and back).
# complex128 (16 bytes) has none: the generic call takes it.
SCALAR_BITS = {np.bool_: _packer("?"), np.int8: _packer("b"), np.int16: _packer("h"),
               np.int32: _packer("i"), np.int64: _packer("q"), np.uint8: _packer("B"),
               np.uint16: _packer("H"), np.uint32: _packer("I"), np.uint64: _packer("Q"),
               np.float32: _packer("f"), np.float64: _packer("d"),
               np.complex64: _complex64_bits}
_SCALAR_BITS_get = SCALAR_BITS.get
# The strided and tiled kernels' blocks: operands, out, n, nd and the geometry (MAXND dims,
# MAXND strides per operand, MAXND divisors, the innermost dim and its stride per operand), then
# the tiled kernels' five (tile_extra), in 16-byte cells (a complex128 scalar operand takes one
# whole); a strided kernel reads the cells its signature has
_STRIDED_PARAMS = {1: ThreadParams(11 + 3 * MAXND, 16), 2: ThreadParams(13 + 4 * MAXND, 16)}
_M64 = (1 << 64) - 1
STRIDED_GEOMETRIES = 256  # geometries a Plan keeps packed (cleared when full: bounded)


def _max_blocks(cp) -> int:
    """Grid cap of the strided kernels: 16 blocks per SM of the current device."""
    return device_info(cp).sm_count * 16


class Plan:
    """Kernels of one (function, input dtypes, device); loaded on first use, kept for good.

    ``run`` takes backend operands (CuPy arrays, or NumPy scalars of the scalar layouts), the
    output shape, and returns the new CuPy output. Callers hold the device current.
    """

    __slots__ = ("fname", "dtypes", "tc", "to", "out_np", "kernels", "vec", "max_blocks",
                 "cp", "_ndarray", "_fn", "_fs", "_fsc", "_launch", "_per_block", "_stream", "_geos")

    def __init__(self, cp, fname, dtypes, tc, to):
        self.cp = cp
        self.fname = fname
        self.dtypes = tuple(dtypes)
        self.tc = tc
        self.to = to
        self.out_np = np.dtype(to)
        self.kernels = {}
        self.vec = vec_width(list(dtypes) + [to])
        self.max_blocks = _max_blocks(cp)
        self._ndarray = empty_allocator(cp)
        self._fn = None
        self._fs = None
        self._fsc = None
        self._launch = driver_launch()
        self._per_block = THREADS * self.vec
        self._stream = cp.cuda.get_current_stream
        self._geos = {}

    # The hot path: all-contiguous array operands, launched through the driver with the
    # thread's reused parameter block (a fraction of a RawKernel call's generic argument
    # packing). Every lookup here is a local, a slot or one global: each ~0.1 us counts for
    # an 8-element x + y.
    def _bind(self):
        layout = "cc" if len(self.dtypes) == 2 else "c"
        self._fn = self.kernel(layout).ptr
        return self._fn

    def cc(self, d1, d2, shape):
        """Two C-contiguous operands of the output's shape."""
        out = self._ndarray(shape, self.out_np)
        n = out.size
        if n:
            fn = self._fn or self._bind()
            vals, addr = _PARAMS.block
            vals[0] = d1.data.ptr
            vals[1] = d2.data.ptr
            vals[2] = out.data.ptr
            vals[3] = n
            blocks = (n + self._per_block - 1) // self._per_block
            self._launch(fn, blocks if blocks < MAX_GRID else MAX_GRID, 1, 1,
                         THREADS, 1, 1, 0, self._stream().ptr, addr, 0)
        return out

    def c1(self, d1, shape):
        """One C-contiguous operand."""
        out = self._ndarray(shape, self.out_np)
        n = out.size
        if n:
            fn = self._fn or self._bind()
            vals, addr = _PARAMS.block
            vals[0] = d1.data.ptr
            vals[1] = out.data.ptr
            vals[2] = n
            blocks = (n + self._per_block - 1) // self._per_block
            self._launch(fn, blocks if blocks < MAX_GRID else MAX_GRID, 1, 1,
                         THREADS, 1, 1, 0, self._stream().ptr, addr, 0)
        return out

    def cs(self, d1, value, shape):
        """A C-contiguous operand and a scalar (a NumPy scalar of the second dtype): the
        scalar's bits go into its parameter cell (8 bytes at most; complex128 takes the
        generic call)."""
        bits = _SCALAR_BITS_get(type(value))
        if bits is None:
            return self.contiguous("cs", (d1, value), shape, d1.size)
        out = self._ndarray(shape, self.out_np)
        n = out.size
        if n:
            fn = self._fs or self._bind_cs()
            vals, addr = _PARAMS.block
            vals[0] = d1.data.ptr
            vals[1] = bits(value)
            vals[2] = out.data.ptr
            vals[3] = n
            blocks = (n + self._per_block - 1) // self._per_block
            self._launch(fn, blocks if blocks < MAX_GRID else MAX_GRID, 1, 1,
                         THREADS, 1, 1, 0, self._stream().ptr, addr, 0)
        return out

    def _bind_cs(self):
        self._fs = self.kernel("cs").ptr
        return self._fs

    def sc(self, value, d2, shape):
        """A scalar first (a reflected operator: 1.0 / x) and a C-contiguous operand: cs with
        the cells in the kernel's order (scalar, array, out, n)."""
        bits = _SCALAR_BITS_get(type(value))
        if bits is None:
            return self.contiguous("sc", (value, d2), shape, d2.size)
        out = self._ndarray(shape, self.out_np)
        n = out.size
        if n:
            fn = self._fsc or self._bind_sc()
            vals, addr = _PARAMS.block
            vals[0] = bits(value)
            vals[1] = d2.data.ptr
            vals[2] = out.data.ptr
            vals[3] = n
            blocks = (n + self._per_block - 1) // self._per_block
            self._launch(fn, blocks if blocks < MAX_GRID else MAX_GRID, 1, 1,
                         THREADS, 1, 1, 0, self._stream().ptr, addr, 0)
        return out

    def _bind_sc(self):
        self._fsc = self.kernel("sc").ptr
        return self._fsc

    def kernel(self, layout):
        k = self.kernels.get(layout)
        if k is None:
            k = self.kernels[layout] = load_kernel(
                layout_unit(self.fname, self.dtypes, self.tc, self.to, layout),
                kernel_name(self.fname, self.dtypes, layout), OPTIONS)
        return k

    def blocks(self, work: int) -> int:
        """Grid of the strided kernels: grid-stride over at most 16 blocks per SM."""
        b = (work + THREADS - 1) // THREADS
        return b if b < self.max_blocks else self.max_blocks

    def contiguous(self, layout, args, shape, n):
        """All array operands C-contiguous of the output's shape (or 0-d / scalar)."""
        out = self._ndarray(shape, self.out_np)
        if n:
            k = self.kernels.get(layout) or self.kernel(layout)
            blocks = -(-n // self._per_block)
            k((blocks if blocks < MAX_GRID else MAX_GRID,), (THREADS,),
              (*args, out, np.int64(n)))
        return out

    def strided(self, layout, args, shape, n):
        """Any operand layout: collapsed to at most MAXND dims, read through strides; an
        operand contiguous along another axis than the last goes through the tiled kernel
        (tile_operand). Each geometry's parameters are packed once (a RawKernel call packing
        the ~40 arguments cost ~50 us of host time: longer than the kernel of a 16M-element
        broadcast)."""
        if not n:
            return self._ndarray(shape, self.out_np)
        entry = self._entry(layout, args, shape, n)
        if entry is None:  # more than MAXND dims survive collapsing: contiguous copies
            args = tuple(self.cp.ascontiguousarray(self.cp.broadcast_to(a, shape))
                         if m == "g" else a for a, m in zip(args, layout))
            return self.strided(layout, args, shape, n)
        return self._run(entry, layout, args, shape, n)

    def kept(self, layout, args, shape, n):
        """The launch of ``strided`` for operands of these layouts, to be kept for the spec
        layer's hot path (backend KeptLaunch or KeptScalarLaunch: the strides checked there):
        called as launch(datas, ()) -> [out], or launch.scalar(data, value) for an array and
        a scalar. None where there is none to keep."""
        if not n:
            return None
        entry = self._entry(layout, args, shape, n)
        return None if entry is None else StridedLaunch(self, entry, layout, shape, n)

    def _entry(self, layout, args, shape, n):
        """The packed launch of these layouts, made once per geometry (_geos); None past
        MAXND dims."""
        key = (layout, shape) + tuple((a.shape, a.strides) if m == "g" else None
                                      for a, m in zip(args, layout))
        entry = self._geos.get(key)
        if entry is None:
            entry = self._pack(layout, args, shape, n)
            if entry is not None:
                if len(self._geos) >= STRIDED_GEOMETRIES:
                    self._geos.clear()
                self._geos[key] = entry
        return entry

    def _pack(self, layout, args, shape, n):
        """What a launch of these layouts needs: (None, the result's element strides, ...)
        for operands read as flat memory (dense_order), else (kernel, blocks, bytes of the
        operand cells, the packed geometry); None past MAXND dims."""
        order = dense_order(shape, args, layout)
        if order is not None:
            return (None, order, 0, b"")
        geo = _geometry(shape, args, layout)
        if geo is None:
            return None
        nd, dims, strides = geo
        tail = [n, nd] + list(dims)
        for st in strides:
            tail += st
        # the divisors (fast_divisor: dims past nd are never divided by, 1 a placeholder)
        tail += [fast_divisor(v if 1 <= v < 2**31 else 1) for v in dims]
        tail += [dims[nd - 1]] + [st[nd - 1] for st in strides]  # XpGeo's inner, in1, in2
        itemsizes = [a.itemsize if m == "g" else 0 for a, m in zip(args, layout)]
        tile = tile_operand(nd, dims, strides, itemsizes)
        lay, blocks = layout, self.blocks(n)
        if tile is not None:
            k, kb, tasks = tile
            lay = layout[:k] + "t" + layout[k + 1:]
            blocks = tasks if tasks < self.max_blocks else self.max_blocks
            tail += tile_extra(nd, dims, strides, kb)
        cells = np.zeros((len(tail), 2), dtype=np.uint64)
        cells[:, 0] = [v & _M64 for v in tail]
        return (self.kernel(lay).ptr, blocks, (len(layout) + 1) * 16, cells.tobytes())

    def _run(self, entry, layout, args, shape, n):
        fn, blocks, head, tail = entry
        if fn is None:
            return self._in_memory_order(layout, args, shape, n, blocks)
        out = self._ndarray(shape, self.out_np)
        vals, addr = _STRIDED_PARAMS[len(layout)].block
        i = 0
        for a, m in zip(args, layout):
            if m == "g":
                vals[i] = a.data.ptr
            else:  # a NumPy scalar: its bits (16 bytes for complex128)
                pack = _SCALAR_BITS_get(type(a))
                if pack is not None:
                    vals[i] = pack(a)
                else:
                    bits = int.from_bytes(a.tobytes(), "little")
                    vals[i] = bits & _M64
                    vals[i + 1] = bits >> 64
            i += 2
        vals[i] = out.data.ptr
        ctypes.memmove(ctypes.addressof(vals) + head, tail, len(tail))
        self._launch(fn, blocks, 1, 1, THREADS, 1, 1, 0, self._stream().ptr, addr, 0)
        return out

    def _in_memory_order(self, layout, args, shape, n, order):
        """Array operands of one dense layout (dense_order): the contiguous kernel over their
        memory, the result laid out as they are (NumPy's order "K")."""
        # the hot launches read an operand's address alone: an array's first element is its
        # lowest address here (strides positive)
        if layout == "gg":
            out = self.cc(args[0], args[1], (n,))
        elif layout == "g":
            out = self.c1(args[0], (n,))
        elif layout == "gs":
            out = self.cs(args[0], args[1], (n,))
        else:  # "sg"
            out = self.sc(args[0], args[1], (n,))
        isz = self.out_np.itemsize
        return self.cp.ndarray(shape, self.out_np, out.data,
                               strides=tuple(e * isz for e in order))


class StridedLaunch:
    """Plan.strided for one layout of its array operands, its geometry resolved once: what the
    cuda backend keeps (KeptLaunch, which checks the strides) for a strided or broadcast call
    of more elements than the eager programs take (x.T + y of 512 x 512 float32 spent 15 us
    of host time a call, torch 9)."""

    __slots__ = ("plan", "entry", "layout", "shape", "n", "single", "first")

    def __init__(self, plan, entry, layout, shape, n):
        self.plan, self.entry, self.layout, self.shape, self.n = plan, entry, layout, shape, n
        self.single = True  # KeptLaunch calls .one(datas)
        self.first = layout[0] == "g"  # the array operand's place beside a scalar

    def one(self, datas):
        return self.plan._run(self.entry, self.layout, datas, self.shape, self.n)

    def scalar(self, data, value):
        """An array and a scalar (a NumPy scalar of the kept dtype), in the layout's order."""
        return self.plan._run(self.entry, self.layout,
                              (data, value) if self.first else (value, data), self.shape,
                              self.n)

    def __call__(self, datas, values):
        return [self.one(datas)]


def dense_order(shape, args, layout):
    """The element strides of the array operands where every one has the result's shape and
    one layout that covers its memory densely in another order than C (x.T, a permuted
    array), strides positive; None otherwise. Such operands are read as flat memory and the
    result takes their layout, as NumPy's order "K" does: x.T * 2.5 moves no element across
    rows (through the tile it ran at 0.83 of the copy, torch's flat pass at 0.97)."""
    order = None
    for a, m in zip(args, layout):
        if m != "g":
            continue
        if a.shape != shape:
            return None
        isz = a.itemsize
        st = tuple(x // isz if x % isz == 0 else -1 for x in a.strides)
        if order is None:
            order = st
        elif st != order:
            return None
    if order is None:
        return None
    dims = sorted((s, d) for s, d in zip(order, shape) if d > 1)
    expect = 1
    for s, d in dims:
        if s != expect:
            return None
        expect *= d
    if [s for s, d in zip(order, shape) if d > 1] == [s for s, _ in reversed(dims)]:
        return None  # C order (size-1 axes aside): the caller's contiguous layouts
    return order


# An operand read against its memory order (x.T: contiguous along another axis than the
# output's last) goes through a shared-memory tile (elementwise_tiled.cuh): the strided kernel's
# warps read 32 elements from 32 of its rows, and copying it C-contiguous by the copy kernels'
# transpose first cost two more passes over it (H200, x.T + y of (8192, 8192) float32: 0.61 ms
# strided, 0.41 copied first, 0.20-0.22 tiled, torch 0.50). Both tiled extents at least
# TILE_MIN: a tile of a short dimension leaves most lanes idle, where the strided kernel's
# reads of it hit L2. Where two operands are transposed (not alike, else dense_order), the
# first goes through the tile and the second is read through its strides.
TILE_MIN = 16


def tile_edge(itemsize: int) -> int:
    """XpTile<V>::E of elementwise_tiled.cuh: the tile's edge in elements."""
    return 32 if itemsize >= 16 else 64


def tile_operand(nd, dims, strides, itemsizes):
    """(operand index, b: the dimension it is contiguous along, tile tasks) of the first array
    operand (itemsize > 0) to read through the tile, in the collapsed geometry (element strides,
    0 where broadcast); None where none is read against its memory order."""
    if nd < 2 or dims[nd - 1] < TILE_MIN:
        return None
    for k, (st, isz) in enumerate(zip(strides, itemsizes)):
        if not isz or st[nd - 1] in (0, 1):
            continue
        for kb in range(nd - 2, -1, -1):
            if st[kb] == 1 and dims[kb] >= TILE_MIN:
                e = tile_edge(isz)
                na, nb = dims[nd - 1], dims[kb]
                # offsets within a tile are 32-bit (XpAt): every operand's and the output's
                span = max(abs(s[nd - 1]) + abs(s[kb]) for s in strides)
                if (span + math.prod(dims[kb + 1:nd]) + 1) * e >= 2**31:
                    return None
                batch = math.prod(dims[:nd]) // (na * nb)
                tasks = batch * -(-na // e) * -(-nb // e)
                return (k, kb, tasks) if tasks < 2**31 else None  # 32-bit task indices
    return None


def tile_extra(nd, dims, strides, kb) -> list:
    """The tiled kernels' last parameters: kb, nb, each operand's stride along b (0 for a
    second operand that is absent or a scalar), the output's (the dims after kb)."""
    sb = [st[kb] for st in strides] + [0]
    return [kb, dims[kb], sb[0], sb[1], math.prod(dims[kb + 1:nd])]


def _geometry(shape, args, layout):
    """Collapse the output shape and each array operand's element strides (0 where broadcast):
    drop size-1 axes, merge neighbours that are contiguous for every operand."""
    ndim = len(shape)
    per = []
    for a, m in zip(args, layout):
        if m != "g":
            per.append([0] * ndim)
            continue
        st = [0] * ndim
        off = ndim - a.ndim
        isz = a.itemsize
        for i, (n, s) in enumerate(zip(a.shape, a.strides)):
            st[off + i] = 0 if n == 1 else s // isz
        per.append(st)
    dims, cols = [], [[] for _ in per]
    for i, n in enumerate(shape):
        if n == 1:
            continue
        if dims and all(c[-1] == p[i] * n for c, p in zip(cols, per)):
            dims[-1] *= n
            for c, p in zip(cols, per):
                c[-1] = p[i]
            continue
        dims.append(n)
        for c, p in zip(cols, per):
            c.append(p[i])
    if not dims:
        dims, cols = [1], [[0] for _ in per]
    if len(dims) > MAXND:
        return None
    pad = MAXND - len(dims)
    strides = [c + [0] * pad for c in cols]
    return len(dims), dims + [1] * pad, strides
