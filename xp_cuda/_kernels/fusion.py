"""CUDA generator and launcher for fused functions (xp_cuda.fusion).

Input: the typed IR recorded by xp_cuda.fusion's tracer. Output: one translation unit with one
kernel, built from elementwise.cuh and the op structs of the one table ``OPS`` (the same
``_op_struct`` the elementwise kernels use), plus fusion.cuh's conversions. The source holds
only identifiers and literals made here (never a name or string of the user's program), and no
sizes: shapes, strides, slice starts/steps and launch splits are runtime values in one
parameter struct, so a new shape with the same ranks and broadcast pattern reuses the compiled
kernel (load_kernel memoises by source, and its cubin cache serves new processes).

Kernel layout: one section per group of elementwise outputs of one shape (when every operand
is C-contiguous in the output's shape, vectors of 8 or 16 bytes, one or two per thread, and a
grid that covers them: see CONFIGS; otherwise grid-stride over elements), then one section
per reduction: work items (output element, split of its reduced range) handled by groups of G
threads (along rows, 16-byte vector reads when the operand is contiguous and aligned; with the
innermost axis kept, a block's groups own neighbouring outputs), a fixed-order tree in shared
memory, and, when a reduced range is split across blocks, the last block to finish an output
combines the partials in index order (deterministic, no second launch).
"""
from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np

from . import empty_allocator, load_kernels
from .elementwise import CTYPES, OPTIONS, _op_struct, header

THREADS = 256
# Flat elementwise sections read and write vectors: (bytes of the widest operand per vector,
# vectors per thread, block-interleaved: thread t of a block takes vectors t, t + T, ..;
# threads T per block). No one shape wins (H200, ratio to the copy rate in one run, for the
# three below in order, 256-thread blocks): cheap bodies want small vectors (1 + x*y*z 1.050 /
# 1.046 / 1.047, torch.compile 1.050); bodies heavy in transcendental or integer-division
# work want more elements per thread to hide their latency (float32 pow 0.85 / 0.95 / 1.00,
# atan2 0.75 / 0.92 / 1.03, the ten-op example 0.92 / 0.99 / 1.05); complex exp loses with
# two 16-byte vectors (0.96 / 1.05 / 0.97). Two vectors run best in 128-thread blocks (the
# shape torch.compile's Triton kernels take for such bodies: ten-op 955.4 -> 954.6 us, pow
# 984.8 -> 980.2 us). So a launch long enough to time tries each once and keeps the fastest
# (Launch._tune).
CONFIGS = ((16, 1, 256), (8, 1, 256), (16, 2, 128))  # the first: small launches, untimed
TUNE_MIN_BYTES = 2**25  # operand bytes from which a launch is long enough to time (~8 us)
TUNE_ROUNDS = 3  # timed launches per candidate; the fastest of each counts
# Reductions split long ranges into about RED_WAVES waves of resident blocks (H200, ratio to
# the copy rate, same run, waves 1 / 2 / 4 / 8: sum(x*y+1) over 2^28 1.084 / 1.082 / 1.065 /
# 1.045, torch.compile 1.080; sum over axis 0 of (2^20, 256) 0.97 / 1.03 / 0.98 / 0.93).
RED_WAVES = 2
COL_GROUPS = 32  # at most this many neighbouring outputs per block (innermost axis kept);
# 64 or 128: (2^22, 64) 0.94 -> 0.71, (2^20, 256) 1.03 -> 0.95 / 0.73 (2 waves)
KERNEL = "xp_fused"
FLAT = ("@flat",)  # coordinates of a C-contiguous element: the flat index itself
_FUSION_CUH = Path(__file__).resolve().parent / "fusion.cuh"
_fcuh = None

_REDUCE_OP = {"sum": "add", "mean": "add", "prod": "multiply", "max": "maximum",
              "min": "minimum", "all": "logical_and", "any": "logical_or"}


def _fusion_header():
    global _fcuh
    if _fcuh is None:
        _fcuh = _FUSION_CUH.read_text(encoding="utf-8")
    return _fcuh


# ---- literals: exact bit patterns, so inf, NaN, -0.0 and subnormals are valid CUDA ------------
def literal(value, dtype) -> str:
    """A typed C++ constant for a NumPy scalar of `dtype` (a DType)."""
    name = dtype.name
    ct = CTYPES[name]
    if name == "bool":
        return "true" if bool(value) else "false"
    if dtype.kind == "int":
        v = int(value)
        if v == -(2 ** 63):
            return "((long long)(-9223372036854775807LL - 1))"
        return f"(({ct})({v}LL))"
    if dtype.kind == "uint":
        return f"(({ct}){int(value)}ULL)"
    if name == "float32":
        return f"__int_as_float((int){int(np.float32(value).view(np.uint32))}u)"
    if name == "float64":
        return f"__longlong_as_double((long long){int(np.float64(value).view(np.uint64))}ull)"
    f = np.float32 if name == "complex64" else np.float64
    c = complex(value)
    from .._dtypes import float32, float64
    fd = float32 if name == "complex64" else float64
    return f"{ct}({literal(f(c.real), fd)}, {literal(f(c.imag), fd)})"


def _size(shape) -> int:
    return math.prod(shape)


def _sm_count(cp) -> int:
    from .elementwise import _max_blocks
    return _max_blocks(cp) // 16


# ---- the generator ------------------------------------------------------------------------------
class _Gen:
    def __init__(self, n_inputs):
        self.gvals = []  # runtime values of the parameter struct, by slot
        self._slots = {}
        self.structs = {}  # op struct name -> source
        self.lines = []
        self.memo = {}
        self.tmp = 0
        self.flat_mode = "scalar"  # how FLAT input loads read: "scalar" (in[i]) or "pack"
        # ("pack": lane q of the u-th vector loaded for input k, p{k}[u].v[q])
        self.flat_var = "i"
        self.flat_inputs = set()

    def slot(self, key, value) -> str:
        i = self._slots.get(key)
        if i is None:
            i = self._slots[key] = len(self.gvals)
            self.gvals.append(int(value))
        return f"g.v[{i}]"

    def op(self, fname, tc, to, arity) -> str:
        sname = f"XpF_{fname}_{tc.name}_{to.name}"
        if sname not in self.structs:
            self.structs[sname] = _op_struct(sname, fname, tc.name, to.name, arity)
        return sname

    def new(self, ctype, expr) -> str:
        name = f"v{self.tmp}"
        self.tmp += 1
        self.lines.append(f"const {ctype} {name} = {expr};")
        return name

    # coordinates of an operand of `node`, broadcast by the spec's rule
    @staticmethod
    def sub(operand, node, coords):
        if coords is FLAT:
            return ("0",) * len(operand.shape) if _size(operand.shape) == 1 else FLAT
        r = len(operand.shape)
        c = coords[len(coords) - r:] if r else ()
        return tuple("0" if operand.shape[k] == 1 else c[k] for k in range(r))

    def val(self, node, coords) -> str:
        if coords is FLAT and _size(node.shape) == 1:  # e.g. an output that is a 1-element view
            coords = ("0",) * len(node.shape)
        key = (id(node), coords)
        v = self.memo.get(key)
        if v is None:
            v = self.memo[key] = self._val(node, coords)
        return v

    def _val(self, node, coords) -> str:
        op = node.op
        ct = CTYPES[node.dtype.name]
        if op == "const":
            return literal(node.attr[0], node.dtype)
        if op == "param":
            return f"s{node.attr}"
        if op == "input":
            k = node.attr
            if coords is FLAT:
                self.flat_inputs.add(k)
                return self.new(ct, f"p{k}[u].v[q]" if self.flat_mode == "pack"
                                else f"in{k}[{self.flat_var}]")
            terms = [f"({c}) * {self.slot(('stride', k, a), 0)}"
                     for a, c in enumerate(coords) if c != "0"]
            return self.new(ct, f"in{k}[{' + '.join(terms) or '0'}]")
        if op == "view":
            (x,) = node.args
            spec = node.attr[0]
            src = []
            for a, s in enumerate(spec):
                if x.shape[a] == 1:
                    src.append("0")
                elif s[0] == "int":
                    src.append(self.slot(("vidx", id(node), a), s[1]))
                elif s[4]:  # a whole axis
                    src.append(coords[s[1]])
                else:
                    start = self.slot(("vstart", id(node), a), s[2])
                    step = self.slot(("vstep", id(node), a), s[3])
                    src.append(f"({start} + {step} * ({coords[s[1]]}))")
            return self.val(x, tuple(src))
        if op == "ew":
            fname, tc = node.attr
            sname = self.op(fname, tc, node.dtype, len(node.args))
            tct = CTYPES[tc.name]
            args = [f"xp_cvt<{tct}>({self.val(a, self.sub(a, node, coords))})" for a in node.args]
            return self.new(ct, f"{sname}::f({', '.join(args)})")
        if op == "astype":
            (x,) = node.args
            return self.new(ct, f"xp_cvt<{ct}>({self.val(x, coords)})")
        if op == "where":
            c, a, b = (self.val(o, self.sub(o, node, coords)) for o in node.args)
            return self.new(ct, f"{c} ? xp_cvt<{ct}>({a}) : xp_cvt<{ct}>({b})")
        if op == "clip":
            from .._dtypes import PROMOTION_TABLE
            x, lo, hi = node.args
            v = self.val(x, self.sub(x, node, coords))
            for bound, cmp in ((lo, "<"), (hi, ">")):
                if bound is None:
                    continue
                bv = self.val(bound, self.sub(bound, node, coords))
                pd = PROMOTION_TABLE.get((node.dtype, bound.dtype), node.dtype)
                pc = CTYPES[pd.name]
                cond = f"xp_cvt<{pc}>({v}) {cmp} xp_cvt<{pc}>({bv})"
                if node.dtype.kind in ("int", "uint"):  # as maximum/minimum: see xp_isel
                    v = self.new(ct, f"xp_isel({cond}, xp_cvt<{ct}>({bv}), {v})")
                else:
                    v = self.new(ct, f"({cond}) ? xp_cvt<{ct}>({bv}) : {v}")
            return v
        raise AssertionError(op)


def _contig(node, shape, strides_ok, seen=None) -> bool:
    """Can `node` (of shape `shape`) be evaluated at flat indices: no views, no broadcasting
    of operands bigger than one element, C-contiguous inputs?"""
    if _size(node.shape) == 1:
        return True
    if node.shape != shape or node.op == "view":
        return False
    if node.op == "input":
        return strides_ok[node.attr]
    return all(a is None or _contig(a, shape, strides_ok) for a in node.args)


def _decompose(gen, var, axes_dims, prefix, lines):
    """C-order coordinates of flat index `var` over (axis, size, slot key) triples."""
    coords = {}
    live = [(a, n, key) for a, n, key in axes_dims if n != 1]
    for a, n, key in axes_dims:
        if n == 1:
            coords[a] = "0"
    if not live:
        return coords
    if len(live) == 1:
        coords[live[0][0]] = var
        return coords
    r = f"{prefix}r"
    lines.append(f"long long {r} = {var};")
    for a, n, key in reversed(live[1:]):
        d = gen.slot(key, n)
        lines.append(f"const long long {prefix}{a} = {r} % {d}; {r} /= {d};")
        coords[a] = f"{prefix}{a}"
    coords[live[0][0]] = r
    return coords


class Program:
    """Source and runtime layout of one fused kernel for one trace and input layout."""

    def __init__(self, trace, kernel_outs, in_arrays, sms, name=KERNEL, config=None):
        self.trace = trace
        self.name = name
        self.config = config or CONFIGS[0]  # (vector bytes, vectors per thread, threads)
        # threads per block: reduction sections are laid out for THREADS
        T = self.threads = (THREADS if any(n.op == "reduce" for n in kernel_outs)
                            else self.config[2])
        self.layout = []  # (elements per vector, vectors per thread, threads) per flat section
        self.outs = kernel_outs  # output Nodes computed by the kernel
        g = _Gen(len(trace.inputs))
        self.gen = g
        strides_ok = {}
        in_decl = []
        for node, a in zip(trace.inputs, in_arrays):
            k = node.attr
            isz = a.itemsize
            strides_ok[k] = a.flags.c_contiguous
            for ax, (n, s) in enumerate(zip(a.shape, a.strides)):
                g.slot(("stride", k, ax), s // isz)
            in_decl.append(f"const {CTYPES[node.dtype.name]}* __restrict__ in{k}")
        self.in_count = len(in_decl)
        body = []
        blocks = blocks_scalar = 1  # grids for aligned operands, and for any alignment
        cap_ew = 2**31 - 1  # one thread per vector or element: see elementwise.MAX_GRID
        # elementwise groups, by shape, in first-output order
        groups = {}
        for j, node in enumerate(kernel_outs):
            if node.op != "reduce":
                groups.setdefault(node.shape, []).append(j)
        for shape, idxs in groups.items():
            n = _size(shape)
            flat = all(_contig(kernel_outs[j], shape, strides_ok) for j in idxs)
            body.append(self._ew_section(g, shape, idxs, flat, n))
            vec = self._last_vec
            if flat:
                self.layout.append((vec, self._last_unroll, T))
            # grid: with every operand aligned, blocks of U * T whole vectors (U, T: see
            # CONFIGS), then one thread per remaining element; otherwise one per element
            need_scalar = -(-n // T)
            if flat and vec > 1:
                per_block = self._last_unroll * T * vec
                need = n // per_block + -(-(n % per_block) // T)
            else:
                need = need_scalar
            if need_scalar > cap_ew:  # beyond any GPU's memory today
                raise ValueError(f"fuse: {n} elements exceed one launch ({cap_ew} blocks of "
                                 f"{T} threads); split the arrays")
            blocks = max(blocks, need)
            blocks_scalar = max(blocks_scalar, need_scalar)
        self.scratch = []  # (size, numpy dtype) per reduction scratch: partials and counters
        self.reductions = []
        for j, node in enumerate(kernel_outs):
            if node.op == "reduce":
                sec, nb = self._reduce_section(g, j, node, strides_ok, sms, cap_ew)
                body.append(sec)
                blocks = max(blocks, nb)
                blocks_scalar = max(blocks_scalar, nb)
        self.blocks = blocks
        self.blocks_scalar = blocks_scalar
        # other vector shapes are worth timing only where they change something
        self.tunable = bool(self.layout) and not self.reductions
        self.layout = tuple(self.layout)
        out_decl = [f"{CTYPES[n.dtype.name]}* __restrict__ out{j}"
                    for j, n in enumerate(kernel_outs)]
        scr_decl = []
        for r in range(len(self.reductions)):
            a = CTYPES[kernel_outs[self.reductions[r][0]].dtype.name]
            scr_decl += [f"{a}* __restrict__ part{r}", f"unsigned int* __restrict__ cnt{r}"]
        par_decl = [f"const {CTYPES[dt.name]} s{u}" for u, (_, dt, _) in enumerate(trace.uses)]
        nslots = max(1, len(g.gvals))
        params = in_decl + out_decl + scr_decl + par_decl + [f"const XpG<{nslots}> g"]
        self.structs = g.structs
        self.kernel = "".join([
            f'extern "C" __global__ void __launch_bounds__({T}) {name}(',
            ", ".join(params), ") {\n",
            "  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
            "  const long long stride = (long long)gridDim.x * blockDim.x;\n",
            "  (void)tid; (void)stride;\n",
            (f"  __shared__ __align__(16) unsigned char xp_smem[{THREADS * 16}];\n"
             f"  __shared__ int xp_flag[{THREADS}];\n" if self.reductions else ""),
            "".join(body), "}\n"])
        self.source = translation_unit([self])
        self.nslots = nslots

    def _reduce_vector_path(self, g, x, comb, conv, kept, L) -> int:
        """Open the reduction loop's vector branch (taken when the inputs are aligned and rows
        hold whole vectors): each lane reads 16-byte vectors of every input, two in flight;
        return the elements per vector (1: no branch opened, scalar loads only)."""
        g.memo, g.lines, g.flat_mode, g.flat_inputs, g.flat_var = {}, [], "scalar", set(), "0"
        g.val(x, FLAT)
        ins = sorted(g.flat_inputs)
        if not ins:
            return 1
        V = max(1, 16 // max(self._isz_in(k) for k in ins))
        if V == 1:
            return 1
        g.memo, g.lines, g.flat_mode = {}, [], "pack"
        v = conv.format(g.val(x, FLAT))
        inner = [f"                {ln}\n" for ln in g.lines]
        packs = {k: f"XpPack<{CTYPES[self._in_node(k).dtype.name]}, {V}>" for k in ins}
        al = " && ".join([f"((unsigned long long)in{k} % {V * self._isz_in(k)}) == 0"
                          for k in ins] + [f"(M % {V}) == 0"])
        L.append(f"        if ({al}) {{\n"
                 f"          const long long base = {'p * (M / ' + str(V) + ')' if kept else '0'};\n"
                 f"          const long long vend = min(s * chunk + chunk, M) / {V};\n"
                 f"          long long jv = s * chunk / {V} + lane;\n"
                 f"          for (; jv + G < vend; jv += 2 * G) {{\n")
        for k, pk in packs.items():
            L.append(f"            {pk} p{k}[2];\n"
                     f"            p{k}[0] = reinterpret_cast<const {pk}*>(in{k})[base + jv];\n"
                     f"            p{k}[1] = reinterpret_cast<const {pk}*>(in{k})[base + jv + G];\n")
        L.append("#pragma unroll\n            for (int u = 0; u < 2; ++u) {\n"
                 f"#pragma unroll\n              for (int q = 0; q < {V}; ++q) {{\n")
        L += inner
        L.append(f"                acc = {comb}::f(acc, {v});\n              }}\n            }}\n"
                 "          }\n          if (jv < vend) {\n            const int u = 0;\n")
        for k, pk in packs.items():
            L.append(f"            {pk} p{k}[1];\n"
                     f"            p{k}[0] = reinterpret_cast<const {pk}*>(in{k})[base + jv];\n")
        L.append(f"#pragma unroll\n              for (int q = 0; q < {V}; ++q) {{\n")
        L += inner
        L.append(f"                acc = {comb}::f(acc, {v});\n              }}\n          }}\n")
        return V

    # -- elementwise outputs of one shape ------------------------------------------------------
    def _ew_section(self, g, shape, idxs, flat, n):
        outs = self.outs
        nvar = g.slot(("n", idxs[0]), n)
        lines = [f"  {{ // outputs {idxs} \n    const long long n = {nvar};\n"]
        if flat:
            sizes = [np.dtype(outs[j].dtype._np).itemsize for j in idxs]
            # find the inputs read at flat indices (first a dry run of the body)
            g.memo, g.lines, g.flat_mode, g.flat_inputs = {}, [], "scalar", set()
            for j in idxs:
                g.val(outs[j], FLAT)
            flat_inputs = sorted(g.flat_inputs)
            sizes += [np.dtype(self.trace.inputs[self._in_pos(k)].dtype._np).itemsize
                      for k in flat_inputs]
            vec = max(1, self.config[0] // max(sizes))
        else:
            vec = 1
        self._last_vec = vec
        self._last_unroll = 1
        if flat and vec > 1:
            g.memo, g.lines, g.flat_mode, g.flat_inputs = {}, [], "pack", set()
            res = [g.val(outs[j], FLAT) for j in idxs]
            inner = g.lines
            al = " && ".join(
                [f"((unsigned long long)in{k} % {vec * self._isz_in(k)}) == 0" for k in flat_inputs]
                + [f"((unsigned long long)out{j} % {vec * self._isz_out(j)}) == 0" for j in idxs])
            U = self._last_unroll = self.config[1]
            T = self.threads
            # Whole blocks of U * T vectors first (no loop state, no bounds checks:
            # the fewest registers), then one thread per remaining element; with a misaligned
            # operand one thread per element (the launcher then uses the larger grid).
            per_block = U * T * vec
            lines.append(f"    if ({al}) {{\n"
                         f"      const long long nfull = n / {per_block};\n"
                         f"      if (blockIdx.x < nfull) {{\n"
                         f"        const long long j0 = (long long)blockIdx.x * {U * T}"
                         f" + threadIdx.x;\n")
            for k in flat_inputs:
                pk = f"XpPack<{CTYPES[self._in_node(k).dtype.name]}, {vec}>"
                lines.append(f"        {pk} p{k}[{U}];\n#pragma unroll\n"
                             f"        for (int u = 0; u < {U}; ++u) p{k}[u] = "
                             f"reinterpret_cast<const {pk}*>(in{k})[j0 + u * {T}];\n")
            lines.append(f"#pragma unroll\n        for (int u = 0; u < {U}; ++u) {{\n")
            for j in idxs:
                lines.append(f"          XpPack<{CTYPES[outs[j].dtype.name]}, {vec}> r{j};\n")
            lines.append(f"#pragma unroll\n          for (int q = 0; q < {vec}; ++q) {{\n")
            lines += [f"            {ln}\n" for ln in inner]
            for j, r in zip(idxs, res):
                lines.append(f"            r{j}.v[q] = {r};\n")
            lines.append("          }\n")
            for j in idxs:
                pk = f"XpPack<{CTYPES[outs[j].dtype.name]}, {vec}>"
                lines.append(f"          reinterpret_cast<{pk}*>(out{j})[j0 + u * {T}] = "
                             f"r{j};\n")
            lines.append("        }\n")
            scalar = self._scalar_body(g, outs, idxs, shape, True, "          ")
            lines.append(f"      }} else {{\n        const long long i = nfull * {per_block} + "
                         f"(long long)(blockIdx.x - nfull) * {T} + threadIdx.x;\n"
                         f"        if (i < n) {{\n{scalar}        }}\n      }}\n"
                         f"    }} else {{\n      const long long i = tid;\n"
                         f"      if (i < n) {{\n{scalar}      }}\n    }}\n  }}\n")
            return "".join(lines)
        lines.append("    for (long long i = tid; i < n; i += stride) {\n")
        lines.append(self._scalar_body(g, outs, idxs, shape, flat, "      "))
        lines.append("    }\n  }\n")
        return "".join(lines)

    def _scalar_body(self, g, outs, idxs, shape, flat, indent):
        """The outputs idxs at element i (flat index, or decomposed into coordinates)."""
        g.memo, g.lines, g.flat_mode, g.flat_var = {}, [], "scalar", "i"
        if flat:
            coords = FLAT
        else:
            pre = []
            cm = _decompose(g, "i", [(a, s, ("dim", idxs[0], a)) for a, s in enumerate(shape)],
                            f"c{idxs[0]}_", pre)
            g.lines += pre
            coords = tuple(cm[a] for a in range(len(shape)))
        res = [g.val(outs[j], coords) for j in idxs]
        body = [f"{indent}{ln}\n" for ln in g.lines]
        body += [f"{indent}out{j}[i] = {r};\n" for j, r in zip(idxs, res)]
        return "".join(body)

    def _in_pos(self, k):
        for pos, node in enumerate(self.trace.inputs):
            if node.attr == k:
                return pos
        raise KeyError(k)

    def _in_node(self, k):
        return self.trace.inputs[self._in_pos(k)]

    def _isz_in(self, k):
        return np.dtype(self._in_node(k).dtype._np).itemsize

    def _isz_out(self, j):
        return np.dtype(self.outs[j].dtype._np).itemsize

    # -- one reduction ---------------------------------------------------------------------------
    def _reduce_section(self, g, j, node, strides_ok, sms, cap):
        kind, axes, keepdims, _ = node.attr
        (x,) = node.args
        acc = node.dtype
        at = CTYPES[acc.name]
        comb = g.op(_REDUCE_OP[kind], acc, acc, 2)
        kept = [a for a in range(len(x.shape)) if a not in axes]
        P = _size([x.shape[a] for a in kept])
        M = _size([x.shape[a] for a in axes])
        nd = len(x.shape)
        row_like = nd == 0 or (nd - 1) in axes
        # A work item is (output p, split s of its reduced range), taken by a group of G
        # lanes. Rows: the lanes of a group are neighbouring threads reading along the row.
        # Otherwise (the innermost axis kept) a block holds `per` groups for neighbouring
        # outputs, group-major, so neighbouring threads read neighbouring addresses.
        if row_like:
            G = 256 if M >= 2048 else 32 if M >= 64 else 1
        else:
            G = THREADS // min(COL_GROUPS, 1 << max(0, P - 1).bit_length())
        # RED_WAVES work items per resident block
        target = sms * 2048 * RED_WAVES
        if P * G >= target or M == 0:
            S = 1
        else:
            S = max(1, min(-(-target // (P * G)), M // (G * 32)))
        chunk = -(-M // S) if M else 0
        if S > 1:  # whole 16-byte vectors of any dtype per split (see the vector path)
            chunk = -(-chunk // 16) * 16
        if chunk:
            S = -(-M // chunk)
        r = len(self.reductions)
        self.reductions.append((j, P, S))
        if S > 1:
            self.scratch.append((P * S, acc._np))
            self.scratch.append((P, np.uint32))
        else:
            self.scratch.append(None)
            self.scratch.append(None)
        per = THREADS // G
        blocks = max(1, min(cap, -(-(P * S) // per) if row_like else -(-P // per) * S))
        ident = _identity(kind, acc)
        if kind in ("all", "any"):
            conv = "xp_truth({})"
        else:
            conv = f"xp_cvt<{at}>({{}})"
        if kind == "mean":
            div = g.op("divide", acc, acc, 2)
            fin = f"{div}::f({{}}, xp_cvt<{at}>({g.slot(('M', j), M)}))"
        else:
            fin = "{}"
        # reduced axes trailing and the operand contiguous: element (p, j) is flat p * M + j
        flat = kept == list(range(len(kept))) and _contig(x, x.shape, strides_ok)
        L = [f"  {{ // reduction {j}: {kind}\n",
             f"    const long long P = {g.slot(('P', j), P)}, M = {g.slot(('M', j), M)}, "
             f"S = {g.slot(('S', j), S)}, chunk = {g.slot(('chunk', j), chunk)};\n",
             f"    const int G = (int){g.slot(('G', j), G)};\n",
             "    const int per = blockDim.x / G;\n",
             f"    {at}* sh = reinterpret_cast<{at}*>(xp_smem);\n"]
        if row_like:  # items (p, s) in order, per consecutive ones a block
            L += ["    const int grp = threadIdx.x / G, lane = threadIdx.x % G;\n",
                  "    for (long long w0 = (long long)blockIdx.x * per; w0 < P * S; "
                  "w0 += (long long)gridDim.x * per) {\n",
                  "      const long long w = w0 + grp;\n",
                  "      const bool live = w < P * S;\n",
                  "      const long long p = live ? w / S : 0;\n",
                  "      const long long s = w - p * S;\n"]
        else:  # a block: outputs cb * per + grp, one split s
            L += ["    const int grp = threadIdx.x % per, lane = threadIdx.x / per;\n",
                  "    const long long CB = (P + per - 1) / per;\n",
                  "    for (long long wb = blockIdx.x; wb < CB * S; wb += gridDim.x) {\n",
                  "      const long long s = wb / CB, pc = (wb - s * CB) * per + grp;\n",
                  "      const bool live = pc < P;\n",
                  "      const long long p = live ? pc : 0;\n"]
        L += [f"      {at} acc = {ident};\n",
              "      if (live) {\n"]
        pre = []
        kc = _decompose(g, "p", [(a, x.shape[a], ("kdim", j, a)) for a in kept], f"k{j}_", pre)
        L += [f"        {ln}\n" for ln in pre]
        vec = self._reduce_vector_path(g, x, comb, conv, kept, L) if flat else 1
        if vec > 1:
            L.append("        } else {\n")
        L.append("        const long long jend = min(s * chunk + chunk, M);\n"
                 "        long long jj = s * chunk + lane;\n"
                 "        for (; jj + 3 * G < jend; jj += 4 * G) {\n")

        def body(var):
            g.memo, g.lines, g.flat_mode = {}, [], "scalar"
            g.flat_var = f"(p * M + {var})" if kept else var
            if flat:
                coords = FLAT
            else:
                pre2 = []
                rc = _decompose(g, var, [(a, x.shape[a], ("rdim", j, a)) for a in axes],
                                f"r{var}_", pre2)
                g.lines = pre2 + g.lines
                allc = dict(kc)
                allc.update(rc)
                coords = tuple(allc[a] for a in range(nd))
            v = g.val(x, coords)
            return g.lines, conv.format(v)

        vals = []
        for u in range(4):
            var = f"ju{u}"
            L.append(f"          const long long {var} = jj + {u} * G;\n")
            lines, v = body(var)
            L += [f"          {ln}\n" for ln in lines]
            vals.append(v)
        L.append(f"          acc = {comb}::f(acc, {comb}::f({comb}::f({vals[0]}, {vals[1]}), "
                 f"{comb}::f({vals[2]}, {vals[3]})));\n        }}\n")
        L.append("        for (; jj < jend; jj += G) {\n          const long long jt = jj;\n")
        lines, v = body("jt")
        L += [f"          {ln}\n" for ln in lines]
        L.append(f"          acc = {comb}::f(acc, {v});\n        }}\n")
        L.append("        }\n      }\n" if vec > 1 else "      }\n")
        o = "o" if row_like else "o * per"  # from a lane to the next, in threads
        tree = ("      sh[threadIdx.x] = acc;\n      __syncthreads();\n"
                "      for (int o = G >> 1; o > 0; o >>= 1) {\n"
                f"        if (lane < o) sh[threadIdx.x] = {comb}::f(sh[threadIdx.x], "
                f"sh[threadIdx.x + {o}]);\n        __syncthreads();\n      }}\n")
        L.append(tree)
        L.append("      if (S == 1) {\n"
                 f"        if (live && lane == 0) out{j}[p] = {fin.format('sh[threadIdx.x]')};\n"
                 "      } else {\n"
                 "        if (lane == 0) {\n"
                 "          int last = 0;\n"
                 "          if (live) {\n"
                 f"            part{r}[p * S + s] = sh[threadIdx.x];\n"
                 "            __threadfence();\n"
                 f"            last = atomicAdd(&cnt{r}[p], 1u) == (unsigned int)(S - 1);\n"
                 "          }\n"
                 "          xp_flag[grp] = last;\n"
                 "        }\n"
                 "        __syncthreads();\n"
                 "        const bool last = xp_flag[grp] != 0;\n"
                 f"        acc = {ident};\n"
                 "        if (last) {\n"
                 "          __threadfence();\n"
                 "          for (long long k = lane; k < S; k += G)\n"
                 f"            acc = {comb}::f(acc, xp_ldcg(part{r} + p * S + k));\n"
                 "        }\n")
        L.append(tree.replace("      ", "        "))
        L.append("        if (last && lane == 0) {\n"
                 f"          out{j}[p] = {fin.format('sh[threadIdx.x]')};\n"
                 f"          cnt{r}[p] = 0;\n"
                 "        }\n"
                 "      }\n"
                 "      __syncthreads();\n"
                 "    }\n  }\n")
        return "".join(L), blocks


def translation_unit(programs) -> str:
    """The helpers, each op struct once, then the kernels (CI batches several per unit)."""
    structs = {}
    for p in programs:
        structs.update(p.structs)
    return "".join([header(), "\n", _fusion_header(), "\n", *structs.values(),
                    *(p.kernel for p in programs)])


def _identity(kind, dtype) -> str:
    if kind in ("sum", "mean"):
        return literal(0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    if kind == "all":
        return "true"
    if kind == "any":
        return "false"
    if dtype.kind == "float":
        v = -np.inf if kind == "max" else np.inf
    else:
        info = np.iinfo(dtype._np)
        v = info.min if kind == "max" else info.max
    return literal(v, dtype)


# ---- launcher -------------------------------------------------------------------------------------
def _launch(*args):
    global _launch
    from cupy.cuda import driver
    _launch = driver.launchKernel
    return _launch(*args)


_NP_PARAM = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
             "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
             "uint64": np.uint64, "float32": np.float32, "float64": np.float64,
             "complex64": np.complex64, "complex128": np.complex128}


class Launch:
    """A compiled fused kernel for one exact input layout: its parameter block is built once;
    a call writes the pointers and scalar values into it and launches through the driver.

    A launch moving TUNE_MIN_BYTES or more compiles the kernel in each vector shape of CONFIGS
    (in parallel) and, on its first call with aligned operands, times each and keeps the
    fastest. Every shape computes each element with the same operations, so the choice changes
    speed only, never a value."""

    def __init__(self, cp, trace, kernel_outs, in_arrays):
        self.cp = cp
        sms = _sm_count(cp)
        prog = Program(trace, kernel_outs, in_arrays, sms, name=f"{KERNEL}0")
        progs = [prog]
        moved = sum(a.nbytes for a in in_arrays) + sum(
            _size(n.shape) * np.dtype(n.dtype._np).itemsize for n in kernel_outs)
        if prog.tunable and moved >= TUNE_MIN_BYTES:
            for k, cfg in enumerate(CONFIGS[1:], 1):
                p = Program(trace, kernel_outs, in_arrays, sms, name=f"{KERNEL}{k}", config=cfg)
                # same parameters (gvals) in every shape: one parameter block serves them all
                if p.layout not in [q.layout for q in progs] and p.gen.gvals == prog.gen.gvals:
                    progs.append(p)
        self.source = prog.source
        kernels = load_kernels([(p.source, p.name) for p in progs], OPTIONS)
        self.variants = [(k.kernel.ptr, p.blocks, p.blocks_scalar, p.threads)
                         for k, p in zip(kernels, progs)]
        self.fn, self.blocks, self.blocks_scalar, self.threads = self.variants[0]
        self.tuned = len(self.variants) == 1
        self.out_specs = [(n.shape, np.dtype(n.dtype._np)) for n in kernel_outs]
        self.scratch = [None if s is None else (cp.zeros(s[0], dtype=s[1]) if s[1] == np.uint32
                                                else cp.empty(s[0], dtype=s[1]))
                        for s in prog.scratch]
        n_in, n_out = len(in_arrays), len(kernel_outs)
        uses = trace.uses
        # parameter block: one 16-byte cell per pointer/scalar, then the geometry struct
        ncells = n_in + n_out + len(self.scratch) + len(uses)
        self.buf = np.zeros(ncells * 2 + prog.nslots, dtype=np.uint64)
        base = self.buf.ctypes.data
        nparams = ncells + 1
        self.ptrs = (ctypes.c_void_p * nparams)(
            *[base + 16 * c for c in range(ncells)], base + 16 * ncells)
        self.addr = ctypes.addressof(self.ptrs)
        # the same memory as ctypes: writing a Python int there is cheaper than through NumPy
        self.u64 = (ctypes.c_uint64 * self.buf.size).from_address(base)
        self.in_cells = list(range(0, 2 * n_in, 2))
        self.out_cells = list(range(2 * n_in, 2 * (n_in + n_out), 2))
        c0 = n_in + n_out
        for i, s in enumerate(self.scratch):
            self.buf[2 * (c0 + i)] = 0 if s is None else s.data.ptr
        c0 += len(self.scratch)
        self.param_views = []
        for u, (_, dt, _) in enumerate(uses):
            cell = self.buf[2 * (c0 + u): 2 * (c0 + u) + 2]
            self.param_views.append(cell.view(_NP_PARAM[dt.name])[:1])
        self.buf[2 * ncells:] = np.array(prog.gen.gvals + [0] * (prog.nslots - len(
            prog.gen.gvals)), dtype=np.int64).view(np.uint64)
        self.uses = uses
        self.ndarray = empty_allocator(cp)
        self.stream = cp.cuda.get_current_stream

    def __call__(self, in_datas, values):
        buf = self.u64
        misaligned = 0
        for c, d in zip(self.in_cells, in_datas):
            buf[c] = p = d.data.ptr
            misaligned |= p & 15
        if self.uses:
            for view, (param, dt, convert) in zip(self.param_views, self.uses):
                view[0] = convert(param.fn(values))
        outs = []
        nd = self.ndarray
        for c, (shape, dt) in zip(self.out_cells, self.out_specs):
            o = nd(shape, dt)
            buf[c] = o.data.ptr
            outs.append(o)
        # the kernel takes its vector path when every operand is aligned (outputs always are)
        if self.tuned or misaligned:
            _launch(self.fn, self.blocks_scalar if misaligned else self.blocks, 1, 1,
                    self.threads, 1, 1, 0, self.stream().ptr, self.addr, 0)
        else:
            self._tune(self.stream())
        return outs

    def _tune(self, stream):
        """Launch every variant TUNE_ROUNDS times into this call's outputs (each writes the
        same values), timed by events; keep the fastest. Not while a graph is being captured:
        there the default runs, and the next call outside a capture tunes."""
        if stream.is_capturing():
            _launch(self.fn, self.blocks, 1, 1, self.threads, 1, 1, 0, stream.ptr, self.addr, 0)
            return
        Event = self.cp.cuda.Event
        marks = [[(Event(), Event()) for _ in range(TUNE_ROUNDS)] for _ in self.variants]
        for r in range(TUNE_ROUNDS):
            for (fn, blocks, _, threads), pairs in zip(self.variants, marks):
                pairs[r][0].record(stream)
                _launch(fn, blocks, 1, 1, threads, 1, 1, 0, stream.ptr, self.addr, 0)
                pairs[r][1].record(stream)
        marks[-1][-1][1].synchronize()
        elapsed = self.cp.cuda.get_elapsed_time
        best = min(range(len(self.variants)),
                   key=lambda v: min(elapsed(a, b) for a, b in marks[v]))
        self.fn, self.blocks, self.blocks_scalar, self.threads = self.variants[best]
        self.tuned = True
