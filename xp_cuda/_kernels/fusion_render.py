"""The printer of fused kernels: C++ from the typed IR (fusion_ir) and a KernelPlan
(fusion_plan). It decides nothing: vector widths, unrolls, splits and grids come from the plan;
here they become text. Values the kernel needs at run time (sizes, strides, view starts and
steps, splits) go to numbered slots of one parameter struct, numbered in printing order, their
values taken from the plan and the IR; so a new shape with the same ranks and broadcast pattern
prints the same source.

The source holds only identifiers and literals made here, never a name or string of the user's
program. Literals are exact bit patterns, so inf, NaN, -0.0 and subnormals are valid CUDA.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np

from .elementwise import CTYPES, _op_struct, fast_divisor
from .fusion_ir import Op, Take
from .fusion_plan import (ROW_RESIDENT_THREADS, STRUCT_ACC, THREADS, accumulation_dtype, size,
                          struct_bytes)

FLAT = ("@flat",)  # coordinates of a C-contiguous element: the flat index itself

REDUCE_OP = {"sum": "add", "mean": "add", "prod": "multiply", "max": "maximum",
             "min": "minimum", "all": "logical_and", "any": "logical_or"}

# 16-byte vectors a lane loads before it combines them, on a reduction's vector path. Batched
# kinds (var, std, log-sum-exp) do more arithmetic per element, which four vectors in flight
# hid on the H200 (var over the last axis of (8192, 8192) float32 0.103 -> 0.0835 ms, over all
# axes 0.0752 -> 0.0709); sum and max gained nothing from four and any lost (0.024 -> 0.029).
VEC_STEPS = 2
BATCH_VEC_STEPS = 4

_KIND = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}


def kind_of(name: str) -> str:
    """bool, int, uint, float or complex: the kind of the dtype named `name`."""
    return _KIND[np.dtype(name).kind]


# ---- literals -------------------------------------------------------------------------------
def literal(value, dtype_name: str) -> str:
    """A typed C++ constant for a scalar of the dtype named `dtype_name` (exact bits)."""
    name = dtype_name
    ct = CTYPES[name]
    if name == "bool":
        return "true" if bool(value) else "false"
    kind = kind_of(name)
    if kind == "int":
        v = int(value)
        if v == -(2 ** 63):
            return "((long long)(-9223372036854775807LL - 1))"
        return f"(({ct})({v}LL))"
    if kind == "uint":
        return f"(({ct}){int(value)}ULL)"
    if name == "float32":
        return f"__int_as_float((int){int(np.float32(value).view(np.uint32))}u)"
    if name == "float64":
        return f"__longlong_as_double((long long){int(np.float64(value).view(np.uint64))}ull)"
    part = "float32" if name == "complex64" else "float64"  # the dtype of each part
    f = np.dtype(part).type
    c = complex(value)
    return f"{ct}({literal(f(c.real), part)}, {literal(f(c.imag), part)})"


def identity(kind: str, dtype_name: str) -> str:
    """The reduction's starting value, as a literal."""
    if kind in ("sum", "mean"):
        return literal(0, dtype_name)
    if kind == "prod":
        return literal(1, dtype_name)
    if kind == "all":
        return "true"
    if kind == "any":
        return "false"
    if kind_of(dtype_name) == "float":
        v = -np.inf if kind == "max" else np.inf
    else:
        info = np.iinfo(np.dtype(dtype_name))
        v = info.min if kind == "max" else info.max
    return literal(v, dtype_name)


# ---- an emitter that owns indentation -------------------------------------------------------
class Emitter:
    """Lines of C at an indentation it tracks (two spaces a level); pragmas stay at column 0."""

    def __init__(self, indent=0):
        self.parts = []
        self.indent = indent

    def line(self, text=""):
        self.parts.append(f"{' ' * self.indent}{text}\n")

    def lines(self, texts):
        for t in texts:
            self.line(t)

    def pragma(self, text):
        self.parts.append(f"{text}\n")

    @contextlib.contextmanager
    def block(self, head, close="}"):
        """`head` opens a brace; the body is indented one level; `close` ends it."""
        self.line(head)
        self.indent += 2
        try:
            yield self
        finally:
            self.indent -= 2
            if close is not None:
                self.line(close)

    def text(self):
        return "".join(self.parts)


# ---- values of IR nodes -----------------------------------------------------------------------
class _Values:
    """Prints the value of a node at given coordinates as a chain of `const` temporaries, and
    holds the parameter slots and op structs the printed code uses."""

    def __init__(self):
        self.gvals = []  # runtime values of the parameter struct, by slot
        self._slots = {}
        self.structs = {}  # op struct name -> source
        self.lines = []
        self.memo = {}
        self.tmp = 0
        self.flat_mode = "scalar"  # how FLAT input loads read: "scalar" (in[i]) or "pack"
        # ("pack": lane q of the u-th vector loaded for input k, p{k}[u].v[q])
        self.flat_var = "i"
        self.packed = frozenset()  # "rowpack" mode: inputs held in registers (p{k}[u].v[q])
        self.run_coords = None  # "runpack" mode: the coordinates at which they are
        self.reduced = {}  # id(REDUCE node) -> the variable holding its value (row kernels)
        self.const_params = False  # constants as runtime slots (fused programs), not literals
        self.unrolled = {}  # coordinate variable -> u, for element jj + u * G of a loop step
        # const_params: each constant read once into a local at the top of the kernel
        # (name -> declaration). Read where used, inside the unrolled loops, NVVM spent most
        # of a first call on them (softmax after 30 steps x * a + b, 60 constants, 2-core
        # box: NVVM 368 of 648 ms; read once, 112 of 329)
        self.hoisted = {}

    def start(self, flat_mode="scalar", flat_var=None):
        """A new body: fresh temporaries list and memo (slots and temporaries' numbers go on)."""
        self.memo, self.lines, self.flat_mode = {}, [], flat_mode
        if flat_var is not None:
            self.flat_var = flat_var

    def slot(self, key, value) -> str:
        i = self._slots.get(key)
        if i is None:
            i = self._slots[key] = len(self.gvals)
            self.gvals.append(int(value))
        return f"g.v[{i}]"

    def op(self, fname, tc, to, arity) -> str:
        sname = f"XpF_{fname}_{tc}_{to}"
        if sname not in self.structs:
            self.structs[sname] = _op_struct(sname, fname, tc, to, arity)
        return sname

    def new(self, ctype, expr) -> str:
        name = f"v{self.tmp}"
        self.tmp += 1
        self.lines.append(f"const {ctype} {name} = {expr};")
        return name

    @staticmethod
    def sub(operand, node, coords):
        """Coordinates of an operand of `node`, broadcast by the spec's rule."""
        if coords is FLAT:
            return ("0",) * len(operand.shape) if size(operand.shape) == 1 else FLAT
        r = len(operand.shape)
        c = coords[len(coords) - r:] if r else ()
        return tuple("0" if operand.shape[k] == 1 else c[k] for k in range(r))

    def val(self, node, coords) -> str:
        if coords is FLAT and size(node.shape) == 1:  # e.g. an output that is a 1-element view
            coords = ("0",) * len(node.shape)
        key = (id(node), coords)
        v = self.memo.get(key)
        if v is None:
            v = self.memo[key] = _PRINT[node.op](self, node, coords)
        return v

    # one printer per Op (the table _PRINT below)
    def constant(self, value, dtype_name, key) -> str:
        """A constant of the program: a literal, or (const_params: a fused function's
        constants) its exact bits read from a runtime slot, so programs that differ only in
        their constants share one source and one compiled kernel."""
        if not self.const_params:
            return literal(value, dtype_name)
        ct = CTYPES[dtype_name]
        kind = kind_of(dtype_name)
        if dtype_name == "bool":
            return self._hoist(ct, "({} != 0)", key, int(bool(value)))
        if kind == "int":
            return self._hoist(ct, f"(({ct}){{}})", key, int(value))
        if kind == "uint":
            v = int(value)
            return self._hoist(ct, f"(({ct})(unsigned long long){{}})", key,
                               v - 2**64 if v >= 2**63 else v)
        if dtype_name == "float32":
            bits = int(np.float32(value).view(np.int32))
            return self._hoist(ct, "__int_as_float((int){})", key, bits)
        if dtype_name == "float64":
            bits = int(np.float64(value).view(np.int64))
            return self._hoist(ct, "__longlong_as_double({})", key, bits)
        part = "float32" if dtype_name == "complex64" else "float64"
        c = complex(value)
        return (f"{ct}({self.constant(c.real, part, key + ('re',))}, "
                f"{self.constant(c.imag, part, key + ('im',))})")

    def _hoist(self, ctype, template, key, value) -> str:
        """The local holding slot `key` (value: its bits) converted by `template`."""
        slot = self.slot(key, value)
        name = f"xc{slot[4:-1]}"  # xc<slot number>
        if name not in self.hoisted:
            self.hoisted[name] = f"const {ctype} {name} = {template.format(slot)};"
        return name

    def declarations(self) -> str:
        """The kernel's first lines: the hoisted constants."""
        return "".join(f"  {d}\n" for d in self.hoisted.values())

    def _const(self, node, coords):
        return self.constant(node.attr.value, node.dtype.name, ("const", id(node)))

    def _param(self, node, coords):
        return f"s{node.attr.use}"

    def _input(self, node, coords):
        k = node.attr.pos
        ct = CTYPES[node.dtype.name]
        if coords is FLAT:
            return self.new(ct, f"p{k}[u].v[q]" if self.flat_mode == "pack"
                            else f"in{k}[{self.flat_var}]")
        if self.flat_mode == "rowpack" and k in self.packed and coords and coords[-1] == "jc":
            return self.new(ct, f"p{k}[u].v[q]")  # the row's element jc, in registers
        if self.flat_mode == "runpack" and k in self.packed and coords == self.run_coords:
            return self.new(ct, f"p{k}[u].v[q]")  # a vector run's element q (_vector_run)
        terms, step = [], ""
        for a, c in enumerate(coords):
            if c == "0":
                continue
            st = self.slot(('stride', k, a), 0)
            u = self.unrolled.get(c)
            if u is None:
                terms.append(f"({c}) * {st}")
            else:  # element jj + u * G of an unrolled step: see _reduce_scalar_loop
                terms.append(f"(jj) * {st}")
                step = f" + {u} * ((long long)G * {st})"
        return self.new(ct, f"in{k}[{' + '.join(terms) or '0'}{step}]" if not step
                        else f"in{k}[({' + '.join(terms)}){step}]")

    def _view(self, node, coords):
        (x,) = node.args
        src = []
        for a, s in enumerate(node.attr.spec):
            if x.shape[a] == 1:
                src.append("0")
            elif isinstance(s, Take):
                src.append(self.slot(("vidx", id(node), a), s.index))
            elif s.whole:
                src.append(coords[s.out_axis])
            else:
                start = self.slot(("vstart", id(node), a), s.start)
                step = self.slot(("vstep", id(node), a), s.step)
                src.append(f"({start} + {step} * ({coords[s.out_axis]}))")
        return self.val(x, tuple(src))

    def _elementwise(self, node, coords):
        a = node.attr
        sname = self.op(a.name, a.compute_dtype, node.dtype.name, len(node.args))
        tct = CTYPES[a.compute_dtype]
        args = [f"xp_cvt<{tct}>({self.val(o, self.sub(o, node, coords))})" for o in node.args]
        return self.new(CTYPES[node.dtype.name], f"{sname}::f({', '.join(args)})")

    def _astype(self, node, coords):
        ct = CTYPES[node.dtype.name]
        return self.new(ct, f"xp_cvt<{ct}>({self.val(node.args[0], coords)})")

    def _where(self, node, coords):
        ct = CTYPES[node.dtype.name]
        c, a, b = (self.val(o, self.sub(o, node, coords)) for o in node.args)
        return self.new(ct, f"{c} ? xp_cvt<{ct}>({a}) : xp_cvt<{ct}>({b})")

    def _clip(self, node, coords):
        ct = CTYPES[node.dtype.name]
        x, lo, hi = node.args
        v = self.val(x, self.sub(x, node, coords))
        for bound, cmp, pd in ((lo, "<", node.attr.lo_compare), (hi, ">", node.attr.hi_compare)):
            if bound is None:
                continue
            bv = self.val(bound, self.sub(bound, node, coords))
            pc = CTYPES[pd]
            cond = f"xp_cvt<{pc}>({v}) {cmp} xp_cvt<{pc}>({bv})"
            if kind_of(node.dtype.name) in ("int", "uint"):  # as maximum/minimum: see xp_isel
                v = self.new(ct, f"xp_isel({cond}, xp_cvt<{ct}>({bv}), {v})")
            else:  # a NaN bound gives NaN (the spec's special case), as eager clip does
                v = self.new(ct, f"({cond} || {bv} != {bv}) ? xp_cvt<{ct}>({bv}) : {v}")
        return v

    def _reduce(self, node, coords):
        # a row kernel's reduction, computed before the code reading it (one value per row);
        # a multi-kernel program reads earlier reductions as inputs (split_stages)
        return self.reduced[id(node)]


_PRINT = {Op.CONST: _Values._const, Op.PARAM: _Values._param, Op.INPUT: _Values._input,
          Op.VIEW: _Values._view, Op.ELEMENTWISE: _Values._elementwise,
          Op.ASTYPE: _Values._astype, Op.WHERE: _Values._where, Op.CLIP: _Values._clip,
          Op.REDUCE: _Values._reduce}


def _decompose(vals, var, axes_dims, prefix, lines, small=False):
    """C-order coordinates of flat index `var` over (axis, size, slot key) triples. ``small``:
    var < 2**31 (a reduced range's index where the range is that short): each division by a
    length is elementwise.cuh's multiply and shift (fast_divisor; a load each in a reduction
    over (0, 2) of (N, C, H*W): the 64-bit division and remainder held the loop's issue)."""
    coords = {}
    live = [(a, n, key) for a, n, key in axes_dims if n != 1]
    for a, n, key in axes_dims:
        if n == 1:
            coords[a] = "0"
    if not live:
        return coords
    if len(live) == 1:  # var itself, a term callers may scale: an expression in parentheses
        coords[live[0][0]] = var if var.isidentifier() else f"({var})"
        return coords
    r = f"{prefix}r"
    lines.append(f"long long {r} = {var};")
    for a, n, key in reversed(live[1:]):
        d = vals.slot(key, n)
        if small:
            f = vals.slot(("fast",) + key, fast_divisor(n))
            lines.append(f"const unsigned {prefix}q{a} = (__umulhi((unsigned){r}, (unsigned){f})"
                         f" + (unsigned){r}) >> (unsigned)({f} >> 32);")
            lines.append(f"const long long {prefix}{a} = {r} - (long long){prefix}q{a} * {d}; "
                         f"{r} = {prefix}q{a};")
        else:
            lines.append(f"const long long {prefix}{a} = {r} % {d}; {r} /= {d};")
        coords[a] = f"{prefix}{a}"
    coords[live[0][0]] = r
    return coords


# ---- the kernel -------------------------------------------------------------------------------
NO_ALIAS = ((), ())


def _input_params(vals, inputs, layouts, alias=NO_ALIAS) -> list:
    """The kernel's input pointer parameters, each input's strides made slots of ``vals``
    (the elementwise/reduction kernel and the row kernel declare their inputs alike).
    ``alias``: (input positions, output numbers) of arguments the kernel updates in place,
    written through their own memory: those pointers are not __restrict__ (they alias)."""
    decl = []
    for node, lay in zip(inputs, layouts):
        k = lay.pos
        for ax, s in enumerate(lay.strides):
            vals.slot(("stride", k, ax), s)
        r = "" if k in alias[0] else " __restrict__"
        decl.append(f"const {CTYPES[node.dtype.name]}*{r} in{k}")
    return decl


def _output_params(outs, alias=NO_ALIAS) -> list:
    return [f"{CTYPES[n.dtype.name]}*{'' if j in alias[1] else ' __restrict__'} out{j}"
            for j, n in enumerate(outs)]


def render(plan, graph, outs, name, const_params=False, alias=NO_ALIAS):
    """(kernel source, op structs by name, slot values) of the kernel `name` computing `outs`
    (IR nodes) from graph.inputs under `plan`; with `const_params` the constants are runtime
    slots (see _Values.constant); `alias`: see _input_params."""
    vals = _Values()
    vals.const_params = const_params
    in_decl = _input_params(vals, graph.inputs, plan.inputs, alias)
    T = plan.threads
    body = []
    for grp in plan.groups:
        body.append(_group_section(vals, plan, grp, outs, T))
    rides = _max_rides(plan, outs)
    for red in plan.reductions:
        if red.out not in rides.values():
            body.append(_reduce_section(vals, plan, red, outs,
                                        [(rides[red.out], "{}.m")] if red.out in rides else []))
    out_decl = _output_params(outs, alias)
    scr_decl = []
    for red in plan.reductions:
        a = acc_ctype(red)
        scr_decl += [f"{a}* __restrict__ part{red.index}",
                     f"unsigned int* __restrict__ cnt{red.index}"]
    par_decl = [f"const {CTYPES[u[1].name]} s{i}" for i, u in enumerate(graph.uses)]
    nslots = max(1, len(vals.gvals))
    # bytes per thread of the reductions' trees: 16, or a struct accumulator's size
    smem = max([16] + [struct_bytes(red.kind, red.ride) or 16 for red in plan.reductions])
    params = in_decl + out_decl + scr_decl + par_decl + [f"const XpG<{nslots}> g"]
    kernel = "".join([
        f'extern "C" __global__ void __launch_bounds__({T}) {name}(',
        ", ".join(params), ") {\n",
        "  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
        "  const long long stride = (long long)gridDim.x * blockDim.x;\n",
        "  (void)tid; (void)stride;\n",
        (f"  __shared__ __align__(16) unsigned char xp_smem[{THREADS * smem}];\n"
         f"  __shared__ int xp_flag[{THREADS}];\n" if plan.reductions else ""),
        vals.declarations(), "".join(body), "}\n"])
    return kernel, vals.structs, vals.gvals


def _pack(dtype_name, vec):
    return f"XpPack<{CTYPES[dtype_name]}, {vec}>"


def _aligned(terms):
    return " && ".join(f"((unsigned long long){p} % {b}) == 0" for p, b in terms)


def _group_coords(vals, grp, var, lines, small=False) -> tuple:
    """The group's coordinates of flat index `var` (their statements appended to `lines`)."""
    j0 = grp.outs[0]
    cm = _decompose(vals, var, [(a, s, ("dim", j0, a)) for a, s in enumerate(grp.shape)],
                    f"c{j0}_", lines, small)
    return tuple(cm[a] for a in range(len(grp.shape)))


def _scalar_body(vals, outs, grp, flat):
    """Statements computing the group's outputs at element i (flat index or coordinates)."""
    vals.start("scalar", "i")
    coords = FLAT if flat else _group_coords(vals, grp, "i", vals.lines)
    res = [vals.val(outs[j], coords) for j in grp.outs]
    return vals.lines + [f"out{j}[i] = {r};" for j, r in zip(grp.outs, res)]


def _run_body(vals, outs, grp):
    """(statements decomposing the run's first index i0 into coordinates, statements
    computing the group's outputs at element i = i0 + ru of the run): a run never crosses
    the innermost axis (its length is a multiple of grp.run)."""
    pre: list = []
    coords = _group_coords(vals, grp, "i0", pre)
    coords = coords[:-1] + (f"({coords[-1]} + ru)",)
    vals.start("scalar", "i")
    res = [vals.val(outs[j], coords) for j in grp.outs]
    return pre, vals.lines + [f"out{j}[i] = {r};" for j, r in zip(grp.outs, res)]


def _vector_run(e, vals, plan, grp, outs):
    """fusion_plan.VECTOR_RUNS: a thread a vector of grp.vrun elements where its vector inputs
    and the outputs are aligned: those inputs read as vectors at the flat index, the others at
    the vector's coordinates (decomposed once) plus q along the innermost axis. Leaves the
    branch open for the element path."""
    V, idxs = grp.vrun, list(grp.outs)
    al = _aligned([(f"in{k}", V * plan.input(k).itemsize) for k in grp.flat_inputs]
                  + [(f"out{j}", V * np.dtype(outs[j].dtype.name).itemsize) for j in idxs])
    e.line(f"if ({al}) {{")
    e.indent += 2
    with e.block(f"for (long long t = tid; t < n / {V}; t += stride) {{"):
        pre: list = []
        coords = _group_coords(vals, grp, f"t * {V}", pre, small=grp.n < 2**31)
        coords = coords[:-1] + (f"({coords[-1]} + q)",)
        e.lines(pre)
        e.line("const int u = 0;")
        for k in grp.flat_inputs:
            pk = _pack(plan.input(k).dtype, V)
            e.line(f"{pk} p{k}[1];")
            e.line(f"p{k}[0] = reinterpret_cast<const {pk}*>(in{k})[t];")
        vals.start("runpack")
        vals.packed, vals.run_coords = frozenset(grp.flat_inputs), coords
        res = [vals.val(outs[j], coords) for j in idxs]
        vals.packed, vals.run_coords = frozenset(), None
        for j in idxs:
            e.line(f"{_pack(outs[j].dtype.name, V)} r{j};")
        e.pragma("#pragma unroll")
        with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
            e.lines(vals.lines)
            for j, r in zip(idxs, res):
                e.line(f"r{j}.v[q] = {r};")
        for j in idxs:
            e.line(f"reinterpret_cast<{_pack(outs[j].dtype.name, V)}*>(out{j})[t] = r{j};")
    e.indent -= 2
    e.line("} else {")


def _group_section(vals, plan, grp, outs, T):
    e = Emitter(2)
    idxs = list(grp.outs)
    nvar = vals.slot(("n", idxs[0]), grp.n)
    e.line(f"{{ // outputs {idxs} ")
    e.indent += 2
    e.line(f"const long long n = {nvar};")
    if grp.vrun > 1:
        _vector_run(e, vals, plan, grp, outs)
        e.indent += 2
        _element_paths(e, vals, plan, grp, outs, T)
        e.indent -= 2
        e.line("}")
    else:
        _element_paths(e, vals, plan, grp, outs, T)
    e.indent -= 2
    e.line("}")
    return e.text()


def _element_paths(e, vals, plan, grp, outs, T):
    """The group's loops over elements: runs of grp.run, one by one, or (flat) whole vectors
    where aligned, then the rest."""
    idxs = list(grp.outs)
    if grp.run > 1:
        R = grp.run
        pre, body = _run_body(vals, outs, grp)
        with e.block(f"for (long long i0 = tid * {R}; i0 < n; i0 += stride * {R}) {{"):
            e.lines(pre)
            e.pragma("#pragma unroll")
            with e.block(f"for (int ru = 0; ru < {R}; ++ru) {{"):
                e.line("const long long i = i0 + ru;")
                e.lines(body)
        return
    if not (grp.flat and grp.vec > 1):
        with e.block("for (long long i = tid; i < n; i += stride) {"):
            e.lines(_scalar_body(vals, outs, grp, grp.flat))
        return
    vec, U = grp.vec, grp.unroll
    vals.start("pack")
    res = [vals.val(outs[j], FLAT) for j in idxs]
    inner = vals.lines
    al = _aligned([(f"in{k}", vec * plan.input(k).itemsize) for k in grp.flat_inputs]
                  + [(f"out{j}", vec * np.dtype(outs[j].dtype.name).itemsize) for j in idxs])
    # Whole blocks of U * T vectors first (no loop state, no bounds checks: the fewest
    # registers), then one thread per remaining element; with a misaligned operand one thread
    # per element (the launcher then uses the larger grid).
    with e.block(f"if ({al}) {{", close=None):
        e.line(f"const long long nfull = n / {grp.per_block};")
        with e.block("if (blockIdx.x < nfull) {", close=None):
            e.line(f"const long long j0 = (long long)blockIdx.x * {U * T} + threadIdx.x;")
            for k in grp.flat_inputs:
                pk = _pack(plan.input(k).dtype, vec)
                e.line(f"{pk} p{k}[{U}];")
                e.pragma("#pragma unroll")
                e.line(f"for (int u = 0; u < {U}; ++u) p{k}[u] = "
                       f"reinterpret_cast<const {pk}*>(in{k})[j0 + u * {T}];")
            e.pragma("#pragma unroll")
            with e.block(f"for (int u = 0; u < {U}; ++u) {{"):
                for j in idxs:
                    e.line(f"{_pack(outs[j].dtype.name, vec)} r{j};")
                e.pragma("#pragma unroll")
                with e.block(f"for (int q = 0; q < {vec}; ++q) {{"):
                    e.lines(inner)
                    for j, r in zip(idxs, res):
                        e.line(f"r{j}.v[q] = {r};")
                for j in idxs:
                    e.line(f"reinterpret_cast<{_pack(outs[j].dtype.name, vec)}*>(out{j})"
                           f"[j0 + u * {T}] = r{j};")
        scalar = _scalar_body(vals, outs, grp, True)
        with e.block("} else {"):
            e.line(f"const long long i = nfull * {grp.per_block} + "
                   f"(long long)(blockIdx.x - nfull) * {T} + threadIdx.x;")
            with e.block("if (i < n) {"):
                e.lines(scalar)
    with e.block("} else {"):
        e.line("const long long i = tid;")
        with e.block("if (i < n) {"):
            e.lines(scalar)


def acc_ctype(red) -> str:
    """The C type of a reduction's accumulator (its shared-memory tree and partials)."""
    if red.kind in ("argmax", "argmin"):
        return f"XpArg<{CTYPES[red.dtype]}>"
    if red.kind in ("var", "std"):
        if red.ride >= 0:  # (the mean's sum in its dtype, the var's result dtype)
            return f"XpMomS<{CTYPES[red.dtype]}, {CTYPES[red.result]}>"
        return f"XpMom<{CTYPES[red.dtype]}>"
    if red.ride >= 0:  # a max or min hosting the other (MIN_MAX)
        return f"XpMinMax<{CTYPES[red.dtype]}>"
    if red.kind == "sumexp":
        return f"XpLse<{CTYPES[red.result]}>"
    return CTYPES[red.dtype]


# The online sum of exponentials (fusion_plan.online_sumexp), printed into the fused programs
# that use it (never into the shipped eager kernels): a running maximum m, the float64 sum s of
# exp(x - m) (each term computed by the program's own exp and subtract, as the eager sum's
# terms), and whether any element was taken. A -inf maximum's terms vanish against a larger
# one; all -inf gives exp(-inf - -inf) = NaN, as the eager form does; NaN spreads.
SUMEXP = """template <typename T>
struct XpLse { T m; double s; int c; };
template <typename T>
struct XpLseOne { T x; };
template <typename T, int K>
struct XpLseBatch { T v[K]; };
template <typename T, typename EXP, typename SUB, typename MAX>
struct XpLseOp {
  typedef XpLse<T> A;
  static __device__ __forceinline__ A zero() { A a; a.m = (T)0; a.s = 0.0; a.c = 0; return a; }
  static __device__ __forceinline__ XpLseOne<T> one(T x) { XpLseOne<T> o; o.x = x; return o; }
  static __device__ __forceinline__ A lift(T x) {
    A a; a.m = x; a.s = (double)EXP::f(SUB::f(x, x)); a.c = 1; return a;
  }
  // a's sum against a larger maximum m
  static __device__ __forceinline__ double scaled(const A& a, T m) {
    return isinf(a.m) ? 0.0 : a.s * exp((double)a.m - (double)m);
  }
  // the maximum is the max reduction's own op (its NaN, its choice among equal zeros)
  static __device__ __forceinline__ A comb(const A& a, const XpLseOne<T>& o) {
    if (!a.c) return lift(o.x);
    A r;
    r.c = 1;
    r.m = MAX::f(a.m, o.x);
    if (o.x > a.m) {
      r.s = scaled(a, o.x) + (double)EXP::f(SUB::f(o.x, o.x));
    } else {  // not larger: its term against a.m (NaN where either is NaN)
      r.s = a.s + (double)EXP::f(SUB::f(o.x, a.m));
    }
    return r;
  }
  template <int K>
  static __device__ __forceinline__ XpLseBatch<T, K> batch(const T (&v)[K]) {
    XpLseBatch<T, K> b;
#pragma unroll
    for (int q = 0; q < K; ++q) b.v[q] = v[q];
    return b;
  }
  // K elements at once: the new maximum over a's and theirs, a's sum rescaled to it where it
  // grew, plus their terms exp(x - m) summed pairwise in T
  template <int K>
  static __device__ __forceinline__ A comb(const A& a, const XpLseBatch<T, K>& b) {
    T bm = b.v[0];
#pragma unroll
    for (int q = 1; q < K; ++q) bm = MAX::f(bm, b.v[q]);
    A r;
    r.c = 1;
    r.m = a.c ? MAX::f(a.m, bm) : bm;
    T t[K];
#pragma unroll
    for (int q = 0; q < K; ++q) t[q] = EXP::f(SUB::f(b.v[q], r.m));
#pragma unroll
    for (int w = 1; w < K; w *= 2)
#pragma unroll
      for (int q = 0; q + w < K; q += 2 * w) t[q] = t[q] + t[q + w];
    const double prev = !a.c ? 0.0 : (a.m == r.m ? a.s : scaled(a, r.m));
    r.s = prev + (double)t[0];
    return r;
  }
  static __device__ __forceinline__ A comb(const A& a, const A& b) {
    if (!a.c) return b;
    if (!b.c) return a;
    A r;
    r.c = 1;
    if (a.m != a.m || b.m != b.m) {
      r.m = MAX::f(a.m, b.m);
      r.s = a.s + b.s + (double)(r.m - r.m);
      return r;
    }
    r.m = MAX::f(a.m, b.m);
    r.s = (a.m == r.m ? a.s : scaled(a, r.m)) + (b.m == r.m ? b.s : scaled(b, r.m));
    return r;
  }
};
template <typename T>
__device__ __forceinline__ XpLse<T> xp_ldcg(const XpLse<T>* p) {
  XpLse<T> a;
  a.m = xp_ldcg(&p->m);
  a.s = __ldcg(&p->s);
  a.c = __ldcg(&p->c);
  return a;
}
"""


# A var/std section that a mean rides on (fusion_plan.rides): the moments plus the mean's
# sum, in the mean's dtype with its own addition (ADD), in the moments' order. Printed into the
# fused programs that use it, never into the shipped eager kernels.
MOMENTS_SUM = """template <typename F, typename S>
struct XpMomS : XpMom<F> { S s; };
template <typename F, typename S, typename ADD>
struct XpMomentsS {
  typedef XpMomS<F, S> A;
  static __device__ __forceinline__ A with(const XpMom<F>& m, const S& s) {
    A a; a.n = m.n; a.mean = m.mean; a.m2 = m.m2; a.s = s; return a;
  }
  static __device__ __forceinline__ A zero() { return with(XpMoments<F>::zero(), (S)0); }
  static __device__ __forceinline__ A lift(const F& v) {
    return with(XpMoments<F>::lift(v), (S)v);
  }
  template <int K>
  static __device__ __forceinline__ A batch(const F (&v)[K]) {
    S s = (S)v[0];
#pragma unroll
    for (int q = 1; q < K; ++q) s = ADD::f(s, (S)v[q]);
    return with(XpMoments<F>::batch(v), s);
  }
  static __device__ __forceinline__ A comb(const A& a, const A& b) {
    return with(XpMoments<F>::comb(a, b), ADD::f(a.s, b.s));
  }
};
template <typename F, typename S>
__device__ __forceinline__ XpMomS<F, S> xp_ldcg(const XpMomS<F, S>* p) {
  XpMomS<F, S> a;
  a.n = __ldcg(&p->n);
  a.mean = __ldcg(&p->mean);
  a.m2 = __ldcg(&p->m2);
  a.s = xp_ldcg(&p->s);
  return a;
}
"""


# A max (or min) section that the other rides on (fusion_plan.rides): the host's accumulator a
# and the rider's b, each combined by its eager op (OPA, OPB) in the same order.
MIN_MAX = """template <typename T>
struct XpMinMax { T a, b; };
template <typename T, typename OPA, typename OPB>
struct XpMinMaxOp {
  typedef XpMinMax<T> A;
  static __device__ __forceinline__ A make(const T& a, const T& b) {
    A r; r.a = a; r.b = b; return r;
  }
  static __device__ __forceinline__ A comb(const A& x, const A& y) {
    return make(OPA::f(x.a, y.a), OPB::f(x.b, y.b));
  }
};
template <typename T>
__device__ __forceinline__ XpMinMax<T> xp_ldcg(const XpMinMax<T>* p) {
  XpMinMax<T> r;
  r.a = xp_ldcg(&p->a);
  r.b = xp_ldcg(&p->b);
  return r;
}
"""


class _Acc:
    """How one reduction accumulates, as C text; the only per-kind knowledge of the printer.

    ctype, ident: the accumulator's type and starting value; comb: the ordered combination of
    two accumulators (a C callable); elem(v, j): element v at index j of the reduced range as
    an accumulator; batched: whether runs of elements are taken as one batch (var/std: then
    item(v) is an element in the accumulation type and batch(array) the run's accumulator);
    value: the final value of accumulator {} in the node's dtype, epilogue included."""

    def __init__(self, vals, red, node):
        kind, acc = red.kind, red.dtype
        self.ctype = acc_ctype(red)
        self.next = None  # comb of (earlier, later) in index order, where it is cheaper
        self.batched = False
        self.item_type = CTYPES[acc]  # a batched element's C type
        vtype = CTYPES[acc]  # C type of the value before the final conversion
        if kind in ("argmax", "argmin"):
            t = CTYPES[acc]
            rs = f"XpArgOp<{t}, {'true' if kind == 'argmax' else 'false'}>"
            if acc == "bool":
                ext = literal(kind == "argmin", acc)
            else:
                ext = identity("max" if kind == "argmax" else "min", acc)
            self.ident = f"{rs}::lift({ext}, 9223372036854775807LL)"
            self.comb = f"{rs}::comb"
            self.next = f"{rs}::next"
            self.elem = lambda v, j: f"{rs}::lift({v}, {j})"
            value = "{}.i"
            vtype = "long long"
        elif kind == "sumexp":
            t, dt = CTYPES[red.result], red.result
            vals.structs["XpLse"] = SUMEXP
            rs = (f"XpLseOp<{t}, {vals.op('exp', dt, dt, 1)}, {vals.op('subtract', dt, dt, 2)}"
                  f", {vals.op('maximum', dt, dt, 2)}>")
            self.ident = f"{rs}::zero()"
            self.comb = f"{rs}::comb"
            self.elem = lambda v, j: f"{rs}::one(xp_cvt<{t}>({v}))"
            # a step's elements as one batch: their maximum, one rescale where it grows,
            # then their terms summed in x's dtype (the per-element cost of the eager max and
            # sum passes, in one pass over x)
            self.batched = True
            self.item_type = t
            self.item = lambda v: f"xp_cvt<{t}>({v})"
            self.batch = lambda arr: f"{rs}::batch({arr})"
            value = "{}.s"
        elif kind in ("var", "std"):
            f = CTYPES[acc]
            rs = f"XpMoments<{f}>"
            value_rs = rs
            if red.ride >= 0:  # the accumulator carries a riding mean's sum (MOMENTS_SUM)
                vals.structs["XpMomS"] = MOMENTS_SUM
                dt = red.result
                rs = f"XpMomentsS<{f}, {CTYPES[dt]}, {vals.op(REDUCE_OP['mean'], dt, dt, 2)}>"
            self.ident = f"{rs}::zero()"
            self.comb = f"{rs}::comb"
            self.elem = lambda v, j: f"{rs}::lift(xp_cvt<{f}>({v}))"
            self.batched = True
            self.item = lambda v: f"xp_cvt<{f}>({v})"
            self.batch = lambda arr: f"{rs}::batch({arr})"
            bits = int(np.array(float(node.attr.correction), np.float64).view(np.int64))
            corr = vals.slot(("correction", red.out), bits)  # a runtime value: one source
            value = f"{value_rs}::var({{}}, ({f})__longlong_as_double({corr}))"
            if kind == "std":
                value = f"sqrt({value})"
        else:
            self.ident = identity(kind, acc)
            self.comb = f"{vals.op(REDUCE_OP[kind], acc, acc, 2)}::f"
            if kind in ("all", "any"):
                self.elem = lambda v, j: f"xp_truth({v})"
            else:
                self.elem = lambda v, j: f"xp_cvt<{self.ctype}>({v})"
            if kind == "mean" and acc.startswith("complex"):
                # part by part, as NumPy's mean: a complex division by n + 0j turns the
                # partner of an infinite part into NaN (mean(0 + inf j) is 0 + inf j)
                rt = "float" if acc == "complex64" else "double"
                m = vals.slot(("M", red.out), red.M)
                value = (f"[](const {self.ctype} z, const {rt} n) {{{{ return {self.ctype}("
                         f"z.real() / n, z.imag() / n); }}}}({{}}, ({rt})({m}))")
            elif kind == "mean":
                div = vals.op("divide", acc, acc, 2)
                value = (f"{div}::f({{}}, xp_cvt<{self.ctype}>("
                         f"{vals.slot(('M', red.out), red.M)}))")
            elif red.ride >= 0:  # max or min hosting the other: the pair's a (MIN_MAX)
                vals.structs["XpMinMax"] = MIN_MAX
                other = "min" if kind == "max" else "max"
                t = CTYPES[acc]
                rs = (f"XpMinMaxOp<{t}, {vals.op(REDUCE_OP[kind], acc, acc, 2)}, "
                      f"{vals.op(REDUCE_OP[other], acc, acc, 2)}>")
                self.ident = f"{rs}::make({self.ident}, {identity(other, acc)})"
                self.comb = f"{rs}::comb"
                self.elem = lambda v, j: f"{rs}::make(xp_cvt<{t}>({v}), xp_cvt<{t}>({v}))"
                value = "{}.a"
            else:
                value = "{}"
        ep = node.attr.epilogue
        if ep is not None:
            args = "" if ep.operand is None else \
                f", {vals.constant(ep.operand, acc, ('epilogue', red.out))}"
            op = vals.op(ep.name, acc, acc, 1 if ep.operand is None else 2)
            value = f"{op}::f({value}{args})"
        if vtype != CTYPES[red.result]:
            value = f"xp_cvt<{CTYPES[red.result]}>({value})"
        self.value = value


def _reduce_head(e, vals, red, acc):
    """A reduction section's geometry (runtime slots) and its shared-memory tree."""
    j = red.out
    e.line(f"const long long P = {vals.slot(('P', j), red.P)}, "
           f"M = {vals.slot(('M', j), red.M)}, S = {vals.slot(('S', j), red.S)}, "
           f"chunk = {vals.slot(('chunk', j), red.chunk)};")
    e.line(f"const int G = (int){vals.slot(('G', j), red.G)};")
    e.line("const int per = blockDim.x / G;")
    e.line(f"{acc.ctype}* sh = reinterpret_cast<{acc.ctype}*>(xp_smem);")


_GEOMETRY = ("axes", "P", "M", "row_like", "G", "S", "chunk", "per", "blocks", "flat", "vec",
             "colvec", "seg")


def _max_rides(plan, outs) -> dict:
    """{output of a sumexp reduction: output of a max reduction of the same operand and
    geometry}: that max is the sumexp accumulator's running maximum, written by the sumexp's
    section (one pass over x for both; fusion_plan.online_sumexp)."""
    rides: dict = {}
    for r in plan.reductions:
        if r.kind != "sumexp":
            continue
        for q in plan.reductions:
            if q.kind == "max" and q.ride < 0 and q.out not in rides.values() and \
                    outs[q.out].args[0] is outs[r.out].args[0] and \
                    all(getattr(q, f) == getattr(r, f) for f in _GEOMETRY):
                rides[r.out] = q.out
                break
    return rides


def _reduce_section(vals, plan, red, outs, rides):
    """One reduction's section (of outs[red.out]); `rides`: (output, value of accumulator {})
    of the outputs written from its accumulator beside its own result: a max riding on a
    sumexp (_max_rides), a mean on a var or std (red.ride: the accumulator's sum over M, as
    the mean's own final step)."""
    node = outs[red.out]
    if red.colvec > 1:
        return _colvec_section(vals, plan, red, node)
    j, r = red.out, red.index
    (x,) = node.args
    acc = _Acc(vals, red, node)
    comb, ident, fin = acc.comb, acc.ident, acc.value
    if red.ride >= 0:  # the rider's own final step, on its member of the accumulator
        node_r = outs[red.ride]
        rider = replace(red, out=red.ride, kind=node_r.attr.kind,
                        dtype=accumulation_dtype(node_r), result=node_r.dtype.name, ride=-1)
        member = "{}.s" if red.kind in ("var", "std") else "{}.b"
        rides = rides + [(red.ride, _Acc(vals, rider, node_r).value.format(member))]
    nd = len(x.shape)
    e = Emitter(2)
    with e.block(f"{{ // reduction {j}: {red.kind}"):
        _reduce_head(e, vals, red, acc)
        if red.row_like:  # items (p, s) in order, per consecutive ones a block
            e.line("const int grp = threadIdx.x / G, lane = threadIdx.x % G;")
            loop = ("for (long long w0 = (long long)blockIdx.x * per; w0 < P * S; "
                    "w0 += (long long)gridDim.x * per) {")
            head = ["const long long w = w0 + grp;", "const bool live = w < P * S;",
                    "const long long p = live ? w / S : 0;", "const long long s = w - p * S;"]
        else:  # a block: outputs cb * per + grp, one split s
            e.line("const int grp = threadIdx.x % per, lane = threadIdx.x / per;")
            e.line("const long long CB = (P + per - 1) / per;")
            loop = "for (long long wb = blockIdx.x; wb < CB * S; wb += gridDim.x) {"
            head = ["const long long s = wb / CB, pc = (wb - s * CB) * per + grp;",
                    "const bool live = pc < P;", "const long long p = live ? pc : 0;"]
        with e.block(loop):
            e.lines(head)
            e.line(f"{acc.ctype} acc = {ident};")
            with e.block("if (live) {"):
                pre = []
                kc = _decompose(vals, "p", [(a, x.shape[a], ("kdim", j, a)) for a in red.kept],
                                f"k{j}_", pre)
                e.lines(pre)
                vec = red.vec if red.flat or red.seg else 1
                if vec > 1:
                    _reduce_vector_path(e, vals, plan, red, x, acc, kc)
                    e.line("} else {")
                _reduce_scalar_loop(e, vals, red, x, kc, nd, acc)
                if vec > 1:
                    e.line("}")
            if red.row_like:
                # a row's G <= 32 lanes are neighbours in one warp: the same fixed-order tree
                # (lane l takes lane l + o) through shuffles, no barrier; each lane then reads
                # only its own slot. H200, ms, two runs, smem tree / shuffles (torch): var over
                # rows of 64 float32 (2^22 rows) 0.379-0.390 / 0.360-0.376 (1.89), argmax
                # 0.337-0.341 / 0.325-0.328 (1.85), max over rows of 8192 int8 0.048 /
                # 0.038-0.046 (0.090), min of int16 0.062 / 0.053-0.062 (0.074)
                with e.block("if (G <= 32) {", close=None):
                    with e.block("for (int o = G >> 1; o > 0; o >>= 1) {"):
                        e.line(f"const {acc.ctype} t = xp_shfl_down_any(acc, o);")
                        e.line(f"if (lane < o) acc = {comb}(acc, t);")
                    e.line("sh[threadIdx.x] = acc;")
                with e.block("} else {"):
                    _tree(e, comb, True)
            else:
                _tree(e, comb, red.row_like)
            ride = "".join(f" out{o}[p] = {v.format('sh[threadIdx.x]')};" for o, v in rides)
            with e.block("if (S == 1) {", close=None):
                if ride:
                    with e.block("if (live && lane == 0) {"):
                        e.line(f"out{j}[p] = {fin.format('sh[threadIdx.x]')};{ride}")
                else:  # (the shipped eager kernels' text, unchanged)
                    e.line(f"if (live && lane == 0) out{j}[p] = "
                           f"{fin.format('sh[threadIdx.x]')};")
            with e.block("} else {"):
                with e.block("if (lane == 0) {"):
                    e.line("int last = 0;")
                    with e.block("if (live) {"):
                        e.line(f"part{r}[p * S + s] = sh[threadIdx.x];")
                        e.line("__threadfence();")
                        e.line(f"last = atomicAdd(&cnt{r}[p], 1u) == (unsigned int)(S - 1);")
                    e.line("xp_flag[grp] = last;")
                e.line("__syncthreads();")
                e.line("const bool last = xp_flag[grp] != 0;")
                e.line(f"acc = {ident};")
                with e.block("if (last) {"):
                    e.line("__threadfence();")
                    _partials(e, ["acc"], comb, [f"part{r} + p * S"], red.kind)
                _tree(e, comb, red.row_like)
                with e.block("if (last && lane == 0) {"):
                    e.line(f"out{j}[p] = {fin.format('sh[threadIdx.x]')};{ride}")
                    e.line(f"cnt{r}[p] = 0;")
            e.line("__syncthreads();")
    return e.text()


# (kind, dtype) of fusion_plan.WORD_KINDS -> (the combination of accumulated word {a} and
# loaded word {b}, the identity word, element q's value from its word {w} shifted to the low
# bits)
_WORD_OPS = {
    ("max", "int8"): ("__vmaxs4({a}, {b})", 0x80808080, "(signed char)({w})"),
    ("max", "uint8"): ("__vmaxu4({a}, {b})", 0, "(unsigned char)({w})"),
    ("min", "int8"): ("__vmins4({a}, {b})", 0x7F7F7F7F, "(signed char)({w})"),
    ("min", "uint8"): ("__vminu4({a}, {b})", 0xFFFFFFFF, "(unsigned char)({w})"),
    ("max", "int16"): ("__vmaxs2({a}, {b})", 0x80008000, "(short)({w})"),
    ("max", "uint16"): ("__vmaxu2({a}, {b})", 0, "(unsigned short)({w})"),
    ("min", "int16"): ("__vmins2({a}, {b})", 0x7FFF7FFF, "(short)({w})"),
    ("min", "uint16"): ("__vminu2({a}, {b})", 0xFFFFFFFF, "(unsigned short)({w})"),
    # any byte of a bool non-zero; all: a byte of 0xff marks a row that held False there
    ("any", "bool"): ("{a} | {b}", 0, "((({w}) & 0xffu) != 0u)"),
    ("all", "bool"): ("{a} | __vcmpeq4({b}, 0u)", 0, "((({w}) & 0xffu) == 0u)"),
}


def _step_loads(e, k, pk, U):
    """A column lane's unrolled step: the packs `pk` of input k in its U rows, in flight."""
    e.line(f"{pk} p{k}[{U}];")
    e.pragma("#pragma unroll")
    e.line(f"for (int u = 0; u < {U}; ++u) p{k}[u] = "
           f"reinterpret_cast<const {pk}*>(in{k})[(jj + u * G) * PV + p];")


def _word_loops(e, red, x, step, n, loads, rest, rest_at):
    """A lane's word accumulators aw[red.words] of an input of fusion_plan.WORD_KINDS: the
    loop `step` (its n packs p{k}[u] issued by `loads`), then the loop `rest` over one pack
    at the index `rest_at()` returns (after printing any lines it needs). Returns the kind's
    element-from-word template (_WORD_OPS)."""
    W, k = red.words, x.attr.pos
    op, ident, elem = _WORD_OPS[(red.kind, x.dtype.name)]
    pk = f"XpPack<unsigned int, {W}>"
    e.line(f"unsigned int aw[{W}];")
    e.pragma("#pragma unroll")
    e.line(f"for (int w = 0; w < {W}; ++w) aw[w] = {ident}u;")
    with e.block(step):
        loads()
        e.pragma("#pragma unroll")
        with e.block(f"for (int u = 0; u < {n}; ++u) {{"):
            e.pragma("#pragma unroll")
            e.line(f"for (int w = 0; w < {W}; ++w) aw[w] = "
                   f"{op.format(a='aw[w]', b=f'p{k}[u].v[w]')};")
    with e.block(rest):
        e.line(f"const {pk} q{k} = reinterpret_cast<const {pk}*>(in{k})[{rest_at()}];")
        e.pragma("#pragma unroll")
        e.line(f"for (int w = 0; w < {W}; ++w) aw[w] = "
               f"{op.format(a='aw[w]', b=f'q{k}.v[w]')};")
    return elem


def _colvec_words(e, red, x, V, U):
    """The aligned loops of a column section whose lane combines its row's red.words 4-byte
    words (fusion_plan.WORD_KINDS), then sets its V accumulators from them."""
    W, k, isz = red.words, x.attr.pos, np.dtype(x.dtype.name).itemsize
    pk = f"XpPack<unsigned int, {W}>"
    elem = _word_loops(e, red, x, f"for (; jj + {U - 1} * G < jend; jj += {U} * G) {{", U,
                       lambda: _step_loads(e, k, pk, U), "for (; jj < jend; jj += G) {",
                       lambda: "jj * PV + p")
    e.pragma("#pragma unroll")
    word = f"aw[(q * {isz}) / 4] >> (8 * ((q * {isz}) % 4))"
    e.line(f"for (int q = 0; q < {V}; ++q) acc[q] = {elem.format(w=word)};")


def _colvec_elems(e, packs, packed, acc, vp, V, U):
    """The aligned loops of a column section taking its V outputs element by element."""
    comb = acc.comb
    with e.block(f"for (; jj + {U - 1} * G < jend; jj += {U} * G) {{"):
        for k, pk in packs.items():
            _step_loads(e, k, pk, U)
        e.pragma("#pragma unroll")
        with e.block(f"for (int u = 0; u < {U}; ++u) {{"):
            e.pragma("#pragma unroll")
            with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                e.lines(packed)
                e.line(f"acc[q] = {comb}(acc[q], {acc.elem(vp, 'jj')});")
    with e.block("for (; jj < jend; jj += G) {"):
        e.line("const int u = 0;")
        for k, pk in packs.items():
            e.line(f"{pk} p{k}[1];")
            e.line(f"p{k}[0] = reinterpret_cast<const {pk}*>(in{k})[jj * PV + p];")
        e.pragma("#pragma unroll")
        with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
            e.lines(packed)
            e.line(f"acc[q] = {comb}(acc[q], {acc.elem(vp, 'jj')});")


def _colvec_section(vals, plan, red, node):
    """Columns: a lane owns V = red.colvec neighbouring outputs (group p of the kept axes) and
    walks its rows of the split, reading one V-element vector per row of every input (aligned
    inputs), else V elements; V trees, then V outputs (or partials: one counter per group)."""
    j, r, V = red.out, red.index, red.colvec
    (x,) = node.args
    acc = _Acc(vals, red, node)
    comb, ident, fin = acc.comb, acc.ident, acc.value
    ins = red.flat_inputs
    packs = {k: _pack(plan.input(k).dtype, V) for k in ins}
    al = _aligned([(f"in{k}", V * plan.input(k).itemsize) for k in ins])
    vals.start("pack", "0")
    vp = vals.val(x, FLAT)
    packed = vals.lines
    vals.start("scalar", "je")
    vs = vals.val(x, FLAT)
    single = vals.lines
    e = Emitter(2)
    with e.block(f"{{ // reduction {j}: {red.kind}, {V} columns a lane"):
        _reduce_head(e, vals, red, acc)
        e.line("const int grp = threadIdx.x % per, lane = threadIdx.x / per;")
        e.line(f"const long long PV = P / {V};")
        e.line("const long long CB = (PV + per - 1) / per;")
        with e.block("for (long long wb = blockIdx.x; wb < CB * S; wb += gridDim.x) {"):
            e.line("const long long s = wb / CB, pc = (wb - s * CB) * per + grp;")
            e.line("const bool live = pc < PV;")
            e.line("const long long p = live ? pc : 0;")
            e.line(f"{acc.ctype} acc[{V}];")
            e.pragma("#pragma unroll")
            e.line(f"for (int q = 0; q < {V}; ++q) acc[q] = {ident};")
            with e.block("if (live) {"):
                e.line("const long long jend = min(s * chunk + chunk, M);")
                e.line("long long jj = s * chunk + lane;")
                U = red.unroll
                with e.block(f"if ({al}) {{", close=None):
                    if red.words:
                        _colvec_words(e, red, x, V, U)
                    else:
                        _colvec_elems(e, packs, packed, acc, vp, V, U)
                with e.block("} else {"):
                    with e.block("for (; jj < jend; jj += G) {"):
                        e.pragma("#pragma unroll")
                        with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                            e.line(f"const long long je = jj * P + p * {V} + q;")
                            e.lines(single)
                            e.line(f"acc[q] = {comb}(acc[q], {acc.elem(vs, 'jj')});")
            for q in range(V):
                _tree(e, comb, False, f"acc[{q}]")
                with e.block("if (live && lane == 0) {"):
                    with e.block("if (S == 1)", close=None):
                        e.line(f"  out{j}[p * {V} + {q}] = {fin.format('sh[threadIdx.x]')};")
                    e.line(f"else part{r}[(p * {V} + {q}) * S + s] = sh[threadIdx.x];")
            with e.block("if (S > 1) {"):
                with e.block("if (lane == 0) {"):
                    e.line("int last = 0;")
                    with e.block("if (live) {"):
                        e.line("__threadfence();")
                        e.line(f"last = atomicAdd(&cnt{r}[p], 1u) == (unsigned int)(S - 1);")
                    e.line("xp_flag[grp] = last;")
                e.line("__syncthreads();")
                e.line("const bool last = xp_flag[grp] != 0;")
                for q in range(V):
                    e.line(f"acc[{q}] = {ident};")
                with e.block("if (last) {"):
                    e.line("__threadfence();")
                    _partials(e, [f"acc[{q}]" for q in range(V)], comb,
                              [f"part{r} + (p * {V} + {q}) * S" for q in range(V)], red.kind)
                for q in range(V):
                    _tree(e, comb, False, f"acc[{q}]")
                    e.line(f"if (last && lane == 0) out{j}[p * {V} + {q}] = "
                           f"{fin.format('sh[threadIdx.x]')};")
                e.line(f"if (last && lane == 0) cnt{r}[p] = 0;")
            e.line("__syncthreads();")
    return e.text()


# The partials a lane of the last block loads before it combines any, over the columns of its
# work item (a lane of 4 columns loads each column's next, 4 in flight): with one load at a
# time each waited for its L2 round trip before the next was issued, and a split of S
# partials over G lanes took S / G round trips a column after every other block had finished.
# H200, ms, one load / now (torch): any over axis 0 of (2^22, 64) bool (792 partials, 16
# lanes, 4 columns a lane) 0.119 / 0.088-0.090 (0.207), all 0.118 / 0.088, max of int8
# 0.105 / 0.088, any over axis 0 of (8192, 8192) bool 0.027 / 0.026.
# A lane of one column loads PARTIAL_LOADS of it at a time for argmax/argmin (16-byte XpArg
# partials) only: argmax of (2^22, 64) float32 0.302 / 0.273 (torch 0.49), of (8192, 8192)
# 0.080 / 0.072. Not for the other kinds: two loads changed the registers of the whole kernel
# (the main loop's too) and with them its speed, mostly for the worse. H200, ms, three rounds
# a side, one load / two, (2^22, 64) over axis 0: sum of int16 0.209 / 0.278, any of int16
# 0.207 / 0.266, all 0.183 / 0.194, sum of float64 0.494 / 0.516, of (2^21, 64) complex128
# 0.499 / 0.535, prod of int16 0.276 / 0.206 (the one gain), sum and max of float32 and
# int16 within 0.3%; (8192, 8192) within 2%. var/std (24-byte XpMom): two took var from 48
# registers to 58, one block an SM fewer (over axis 0 of (8192, 8192) 0.076 -> 0.077).
PARTIAL_LOADS = 2
PARTIAL_LOAD_KINDS = frozenset(["argmax", "argmin"])


def partial_loads(kind: str, columns: int) -> int:
    """The partials of each of a lane's `columns` columns the last block's lane loads at a
    time (see PARTIAL_LOADS)."""
    return PARTIAL_LOADS if kind in PARTIAL_LOAD_KINDS and columns == 1 else 1


def _partials(e, targets, comb, bases, kind):
    """Combine the partials base[k] (k = lane, lane + G, ... < S) of each of `bases` into its
    target (a list each), in k's order, with partial_loads(kind, len(bases)) loads of each
    base in flight before any is combined."""
    U = partial_loads(kind, len(bases))
    for t, base in enumerate(bases):
        e.line(f"const auto* xp_q{t} = {base};")
    with e.block(f"for (int k = lane; k < (int)S; k += {U} * G) {{"):
        if U > 1:
            e.line("const int n = (int)S - k;")
        for t in range(len(bases)):
            e.line(f"const auto v{t}_0 = xp_ldcg(xp_q{t} + k);")
            for u in range(1, U):
                e.line(f"const auto v{t}_{u} = {u} * G < n ? xp_ldcg(xp_q{t} + k + {u} * G) "
                       f": v{t}_0;")
        for t, target in enumerate(targets):
            e.line(f"{target} = {comb}({target}, v{t}_0);")
            for u in range(1, U):
                e.line(f"if ({u} * G < n) {target} = {comb}({target}, v{t}_{u});")


def _tree(e, comb, row_like, value="acc"):
    """The fixed-order tree of `value` over a work item's G lanes in shared memory."""
    o = "o" if row_like else "o * per"  # from a lane to the next, in threads
    e.line(f"sh[threadIdx.x] = {value};")
    e.line("__syncthreads();")
    with e.block("for (int o = G >> 1; o > 0; o >>= 1) {"):
        e.line(f"if (lane < o) sh[threadIdx.x] = {comb}(sh[threadIdx.x], "
               f"sh[threadIdx.x + {o}]);")
        e.line("__syncthreads();")


def _vector_address(vals, plan, red, x, kc):
    """The vector path's address of vector `var` of output p's range, in vectors, as
    (lines, expression) for a name suffix: base + var where the range is flat; with red.seg
    (fusion_plan.RED_VECTOR_BYTES) its run and position, one division by the run's vectors,
    scaled by x's strides. Sets the branch's `base` line first."""
    V, j, nd = red.vec, red.out, len(x.shape)
    if not red.seg:
        base = f"p * (M / {V})" if red.kept else "0"
        return f"const long long base = {base};", lambda var, sfx: ([], f"base + {var}")
    shape = x.shape
    cs = plan.input(red.flat_inputs[0]).strides  # every input read: one layout (the plan's)
    base = " + ".join(f"{kc[a]} * {vals.slot(('segs', j, a), cs[a] // V)}"
                      for a in red.kept if kc[a] != "0") or "0"

    def address(var, sfx):
        lines = []
        dims = [(a, shape[a], ("rdim", j, a)) for a in red.axes[:-1]]
        dims.append((nd - 1, shape[-1] // V, ("segv", j)))
        rc = _decompose(vals, var, dims, f"sv{sfx}_", lines, small=red.M < 2**31)
        terms = [f"{rc[a]} * {vals.slot(('segs', j, a), cs[a] // V)}"
                 for a in red.axes[:-1] if rc[a] != "0"]
        return lines, " + ".join(["base"] + terms + [rc[nd - 1]] * (rc[nd - 1] != "0"))
    return f"const long long base = {base};", address


def _reduce_vector_path(e, vals, plan, red, x, acc, kc):
    """The loop's vector branch (inputs aligned, rows of whole vectors): each lane reads
    16-byte vectors of every input, VEC_STEPS in flight (BATCH_VEC_STEPS for batched kinds),
    then the rest one at a time. Leaves the branch open for the scalar one. Elements are taken
    in index order: one by one, or (batched kinds) as one batch per step."""
    V = red.vec
    comb = acc.comb
    base, address = _vector_address(vals, plan, red, x, kc)
    vals.start("pack", "0")
    v = vals.val(x, FLAT)
    inner = vals.lines
    ins = red.flat_inputs
    packs = {k: _pack(plan.input(k).dtype, V) for k in ins}
    al = _aligned([(f"in{k}", V * plan.input(k).itemsize) for k in ins])
    if red.seg:  # whole vectors in every run (the plan's shape; the slot's, for any other)
        al = f"{al} && ({vals.slot(('rdim', red.out, len(x.shape) - 1), x.shape[-1])} % {V}) == 0"
    else:
        al = f"{al} && (M % {V}) == 0"
    e.line(f"if ({al}) {{")
    e.indent += 2
    e.line(base)
    e.line(f"const long long vend = min(s * chunk + chunk, M) / {V};")
    e.line(f"long long jv = s * chunk / {V} + lane;")
    if red.words:
        _vector_words(e, red, x, acc, address)
        e.indent -= 2
        return
    bt = acc.item_type

    nxt = acc.next  # argmax/argmin: a vector's elements folded by next, then one comb

    def take(arr):
        if acc.batched:
            e.line(f"{arr}[u * {V} + q] = {acc.item(v)};")
        elif nxt:
            el = acc.elem(v, f"(jv + u * G) * {V} + q")
            e.line(f"if (q == 0) t = {el}; else t = {nxt}(t, {el});")
        else:
            e.line(f"acc = {comb}(acc, {acc.elem(v, f'(jv + u * G) * {V} + q')});")

    N = BATCH_VEC_STEPS if acc.batched else VEC_STEPS
    off = ["", " + G"] + [f" + {u} * G" for u in range(2, N)]  # vector u's offset from jv
    with e.block(f"for (; jv{off[N - 1]} < vend; jv += {N} * G) {{"):
        at = _addresses(e, address, [f"jv{o}" for o in off[:N]])
        for k, pk in packs.items():
            e.line(f"{pk} p{k}[{N}];")
            for u in range(N):
                e.line(f"p{k}[{u}] = reinterpret_cast<const {pk}*>(in{k})[{at[u]}];")
        if acc.batched:
            e.line(f"{bt} xb[{N * V}];")
        e.pragma("#pragma unroll")
        with e.block(f"for (int u = 0; u < {N}; ++u) {{"):
            if nxt:
                e.line(f"{acc.ctype} t;")
            e.pragma("#pragma unroll")
            with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                e.lines(inner)
                take("xb")
            if nxt:
                e.line(f"acc = {comb}(acc, t);")
        if acc.batched:
            e.line(f"acc = {comb}(acc, {acc.batch('xb')});")
    # the rest: at most one vector when N is 2 (an `if`, the source the shipped cubins hold)
    with e.block("for (; jv < vend; jv += G) {" if N > 2 else "if (jv < vend) {"):
        e.line("const int u = 0;")
        (at,) = _addresses(e, address, ["jv"])
        for k, pk in packs.items():
            e.line(f"{pk} p{k}[1];")
            e.line(f"p{k}[0] = reinterpret_cast<const {pk}*>(in{k})[{at}];")
        if acc.batched:
            e.line(f"{bt} xb[{V}];")
        if nxt:
            e.line(f"{acc.ctype} t;")
        e.pragma("#pragma unroll")
        e.indent += 2
        with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
            e.lines(inner)
            take("xb")
        e.indent -= 2
        if nxt:
            e.line(f"acc = {comb}(acc, t);")
        if acc.batched:
            e.line(f"acc = {comb}(acc, {acc.batch('xb')});")
    e.indent -= 2


# Vectors in flight a lane on the vector path of words (fusion_plan.WORD_KINDS). H200, ms, two
# runs, element by element (VEC_STEPS) / words with 2, 4, 8 vectors in flight (torch): any over
# rows of 64 bool (2^22 rows) 0.100-0.101 / 0.089-0.093, 0.085-0.087, 0.100-0.102 (1.25); all
# 0.106-0.109 / 0.098-0.101, 0.085-0.086, 0.104-0.106 (1.27); max of (8192, 8192) int8 over all
# axes 0.074-0.078 / 0.041-0.049, 0.049-0.054, 0.044-0.050 (0.059), over rows 0.072-0.078 /
# 0.042-0.049, 0.048, 0.049-0.052 (0.090); min of int16 rows 0.080-0.086 / 0.064-0.067, 0.062,
# 0.070-0.072 (0.074); any of (8192, 8192) bool within the spread (0.040-0.042 / 0.041, torch
# 0.056).
WORD_VEC_STEPS = 4


def _addresses(e, address, vars_) -> list:
    """Prints the lines of each vector's address (_vector_address); returns the expressions."""
    out = []
    for u, var in enumerate(vars_):
        lines, at = address(var, u)
        e.lines(lines)
        out.append(at)
    return out


def _vector_words(e, red, x, acc, address):
    """The vector branch's loops (its geometry base, vend, jv set) for an input whose 16-byte
    vectors combine as red.words 4-byte words (any/all of bool, max/min of 8- and 16-bit
    integers): WORD_VEC_STEPS vectors in flight, one
    word operation a word, one accumulator a word position; at the end each accumulated word's
    elements fold into `acc` (the kinds are exact and commutative: the order does not show;
    all's words mark the bytes that were zero, so they never combine through its word op)."""
    W, k, isz = red.words, x.attr.pos, np.dtype(x.dtype.name).itemsize
    pk = f"XpPack<unsigned int, {W}>"
    N = WORD_VEC_STEPS
    off = ["", " + G"] + [f" + {u} * G" for u in range(2, N)]

    def loads():
        at = _addresses(e, address, [f"jv{o}" for o in off[:N]])
        e.line(f"{pk} p{k}[{N}];")
        for u in range(N):
            e.line(f"p{k}[{u}] = reinterpret_cast<const {pk}*>(in{k})[{at[u]}];")

    def rest():
        (at,) = _addresses(e, address, ["jv"])
        return at
    elem = _word_loops(e, red, x, f"for (; jv{off[N - 1]} < vend; jv += {N} * G) {{", N, loads,
                       "for (; jv < vend; jv += G) {", rest)
    e.pragma("#pragma unroll")
    e.line(f"for (int i = 0; i < {W * 4 // isz}; ++i) acc = {acc.comb}(acc, "
           f"{elem.format(w=f'aw[i / {4 // isz}] >> ({8 * isz} * (i % {4 // isz}))')});")


def _reduce_scalar_loop(e, vals, red, x, kc, nd, acc):
    """red.unroll elements a step (all loads first, then a fixed-order tree), then one:
    element jj of the range of output p. A step's tree pairs elements in index order
    (acc.next); the accumulator takes each step's value by comb."""
    j = red.out
    comb = acc.comb
    pair = acc.next or comb
    U = red.unroll

    def body(var):
        vals.start("scalar", f"(p * M + {var})" if red.kept else var)
        if red.flat:
            coords = FLAT
        else:
            pre = []
            rc = _decompose(vals, var, [(a, x.shape[a], ("rdim", j, a)) for a in red.axes],
                            f"r{var}_", pre, small=red.M < 2**31)
            vals.lines = pre + vals.lines
            allc = dict(kc)
            allc.update(rc)
            coords = tuple(allc[a] for a in range(nd))
        v = vals.val(x, coords)
        return vals.lines, v

    e.line("const long long jend = min(s * chunk + chunk, M);")
    e.line("long long jj = s * chunk + lane;")
    vs = []
    with e.block(f"for (; jj + {U - 1} * G < jend; jj += {U} * G) {{"):
        # An input read at ju{u} along its one reduced axis is addressed as one offset per step
        # plus u * (G * stride): the step's offset is shared by its U loads and G * stride is
        # loop-invariant. Written as (ju{u}) * stride, each load took a 64-bit multiply of its
        # own (sum over axis 0 of an (8192, 8192) float32 on the H200: 0.0759 -> 0.0732 ms,
        # mean 0.0807 -> 0.0731, float32 prod in float64 0.0892 -> 0.0744; torch 0.0731-0.0736).
        # max and min keep the per-load form: the shared offset made them slower there
        # (0.0743 -> 0.0798 ms; torch 0.0745)
        vals.unrolled = {} if red.kind in ("max", "min") else {f"ju{u}": u for u in range(U)}
        for u in range(U):
            var = f"ju{u}"
            e.line(f"const long long {var} = jj + {u} * G;")
            lines, v = body(var)
            e.lines(lines)
            vs.append(v)
        vals.unrolled = {}
        if acc.batched:
            # one batch a step (U: 4 to 16, a power of two): var's merge divides once a
            # batch; batches of four divided twice a step of float32 (U = 8)
            items = ", ".join(acc.item(v) for v in vs)
            e.line(f"const {acc.item_type} xq[{U}] = {{{items}}};")
            e.line(f"acc = {comb}(acc, {acc.batch('xq')});")
        else:
            c = [acc.elem(v, f"ju{u}") for u, v in enumerate(vs)]
            while len(c) > 1:
                c = [f"{pair}({c[i]}, {c[i + 1]})" for i in range(0, len(c), 2)]
            e.line(f"acc = {comb}(acc, {c[0]});")
    with e.block("for (; jj < jend; jj += G) {"):
        e.line("const long long jt = jj;")
        lines, v = body("jt")
        e.lines(lines)
        e.line(f"acc = {comb}(acc, {acc.elem(v, 'jt')});")


# ---- the row kernel (fusion_plan.RowPlan) -----------------------------------------------------
# Warp shuffles for the block-wide trees of accumulators the hardware shuffles (arithmetic types
# of at most 8 bytes): one barrier a reduction instead of log2(T). Printed once per translation
# unit (it rides with the op structs), so the shared fusion.cuh, and the eager kernels built on
# it, stay as they are.
SHUFFLE = """template <typename T>
__device__ __forceinline__ T xp_shfl_down(T v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ bool xp_shfl_down(bool v, int o) {
  return __shfl_down_sync(0xffffffffu, (int)v, o) != 0;
}
__device__ __forceinline__ signed char xp_shfl_down(signed char v, int o) {
  return (signed char)__shfl_down_sync(0xffffffffu, (int)v, o);
}
__device__ __forceinline__ unsigned char xp_shfl_down(unsigned char v, int o) {
  return (unsigned char)__shfl_down_sync(0xffffffffu, (unsigned)v, o);
}
__device__ __forceinline__ short xp_shfl_down(short v, int o) {
  return (short)__shfl_down_sync(0xffffffffu, (int)v, o);
}
__device__ __forceinline__ unsigned short xp_shfl_down(unsigned short v, int o) {
  return (unsigned short)__shfl_down_sync(0xffffffffu, (unsigned)v, o);
}
template <typename T>
__device__ __forceinline__ T xp_shfl0(T v) { return __shfl_sync(0xffffffffu, v, 0); }
__device__ __forceinline__ bool xp_shfl0(bool v) { return __shfl_sync(0xffffffffu, (int)v, 0) != 0; }
__device__ __forceinline__ signed char xp_shfl0(signed char v) {
  return (signed char)__shfl_sync(0xffffffffu, (int)v, 0);
}
__device__ __forceinline__ unsigned char xp_shfl0(unsigned char v) {
  return (unsigned char)__shfl_sync(0xffffffffu, (unsigned)v, 0);
}
__device__ __forceinline__ short xp_shfl0(short v) {
  return (short)__shfl_sync(0xffffffffu, (int)v, 0);
}
__device__ __forceinline__ unsigned short xp_shfl0(unsigned short v) {
  return (unsigned short)__shfl_sync(0xffffffffu, (unsigned)v, 0);
}
"""
# Vector loads of a row that tell L2 to keep it for the next pass (evict_last) or to drop it
# (evict_first), as rows.reads plans them; sm_80 on (createpolicy), plain loads before.
LD_HINT = """#define XP_POLICY(LAST) unsigned long long pol; \\
  if constexpr (LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol)); \\
  else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#define XP_LD(LAST, PTX, ...) \\
  if constexpr (LAST) asm volatile("ld.global.L1::evict_last.L2::cache_hint" PTX : __VA_ARGS__); \\
  else asm volatile("ld.global.L1::evict_first.L2::cache_hint" PTX : __VA_ARGS__);
template <bool LAST, typename P>
__device__ __forceinline__ P xp_ld_hinted(const P* a) {
#if __CUDA_ARCH__ >= 800
  if constexpr (sizeof(P) == 16) {
    XP_POLICY(LAST) uint4 r;
    XP_LD(LAST, ".v4.u32 {%0, %1, %2, %3}, [%4], %5;", "=r"(r.x), "=r"(r.y), "=r"(r.z),
          "=r"(r.w) : "l"(a), "l"(pol))
    return *reinterpret_cast<P*>(&r);
  } else if constexpr (sizeof(P) == 8) {
    XP_POLICY(LAST) uint2 r;
    XP_LD(LAST, ".v2.u32 {%0, %1}, [%2], %3;", "=r"(r.x), "=r"(r.y) : "l"(a), "l"(pol))
    return *reinterpret_cast<P*>(&r);
  } else if constexpr (sizeof(P) == 4) {
    XP_POLICY(LAST) unsigned int r;
    XP_LD(LAST, ".u32 %0, [%1], %2;", "=r"(r) : "l"(a), "l"(pol))
    return *reinterpret_cast<P*>(&r);
  } else if constexpr (sizeof(P) == 2) {
    XP_POLICY(LAST) unsigned short r;
    XP_LD(LAST, ".u16 %0, [%1], %2;", "=h"(r) : "l"(a), "l"(pol))
    return *reinterpret_cast<P*>(&r);
  }
#endif
  return *a;
}
#undef XP_POLICY
#undef XP_LD
template <typename P> __device__ __forceinline__ P xp_ld_last(const P* a) { return xp_ld_hinted<true>(a); }
template <typename P> __device__ __forceinline__ P xp_ld_first(const P* a) { return xp_ld_hinted<false>(a); }
"""
_SHUFFLED = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64"}


def _block_reduce(e, acc, red, T, var, total, warp_rows=False):
    """`total` = the ordered combination of `var` over the row's T threads (the block, or with
    `warp_rows` the warp), in every one of them; leaves the shared buffer free again."""
    comb, ident = acc.comb, acc.ident
    shuffled = red.kind not in STRUCT_ACC and red.dtype in _SHUFFLED
    if warp_rows:  # a warp per row: no block barrier at all
        if shuffled:
            e.pragma("#pragma unroll")
            e.line(f"for (int o = 16; o > 0; o >>= 1) {var} = {comb}({var}, "
                   f"xp_shfl_down({var}, o));")
            e.line(f"{total} = xp_shfl0({var});")
            return
        e.line(f"{acc.ctype}* sh = reinterpret_cast<{acc.ctype}*>(xp_smem) + w * 32;")
        e.line(f"sh[t] = {var};")
        e.line("__syncwarp();")
        with e.block("for (int o = 16; o > 0; o >>= 1) {"):
            e.line(f"if (t < o) sh[t] = {comb}(sh[t], sh[t + o]);")
            e.line("__syncwarp();")
        e.line(f"{total} = sh[0];")
        e.line("__syncwarp();  // the buffer serves the next reduction")
        return
    if shuffled:
        # warp totals into one of two buffers (alternating: the next reduction writes the
        # other, so no barrier guards this one's reads), one barrier, then every warp combines
        # the W totals in the same tree, so every thread holds the same bits (one barrier
        # where there were three: layer norm over (32768, 4096) 0.296 -> 0.292 ms on the H200)
        W = T // 32
        e.line(f"{acc.ctype}* sh = reinterpret_cast<{acc.ctype}*>(xp_smem + xb * 256);")
        e.line("xb ^= 1;")
        e.pragma("#pragma unroll")
        e.line(f"for (int o = 16; o > 0; o >>= 1) {var} = {comb}({var}, xp_shfl_down({var}, o));")
        e.line(f"if ((t & 31) == 0) sh[t >> 5] = {var};")
        e.line("__syncthreads();")
        e.line(f"{var} = (t & 31) < {W} ? sh[t & 31] : {ident};")
        e.pragma("#pragma unroll")
        e.line(f"for (int o = 16; o > 0; o >>= 1) {var} = {comb}({var}, xp_shfl_down({var}, o));")
        e.line(f"{total} = xp_shfl0({var});")
        return
    # complex and struct accumulators: a shared-memory tree
    e.line(f"{acc.ctype}* sh = reinterpret_cast<{acc.ctype}*>(xp_smem);")
    e.line(f"sh[t] = {var};")
    e.line("__syncthreads();")
    with e.block(f"for (int o = {T // 2}; o > 0; o >>= 1) {{"):
        e.line(f"if (t < o) sh[t] = {comb}(sh[t], sh[t + o]);")
        e.line("__syncthreads();")
    e.line("__syncthreads();")
    e.line(f"{total} = sh[0];")
    e.line("__syncthreads();  // the buffer serves the next reduction")


def render_rows(rows, graph, outs, name, alias=NO_ALIAS, cap=True, reread=False):
    """(kernel source, op structs by name, slot values) of the row kernel `name` computing
    `outs` under the RowPlan `rows` (see RowPlan); constants are runtime slots (only fused
    functions have row kernels); `alias`: see _input_params; `cap`: registers capped so that
    ROW_RESIDENT_THREADS threads fit an SM (see fusion_plan.ROW_ELEMS_VECTORS); `reread`: the
    row-shaped inputs the outputs read loaded again for them (rows.reloads), not held from
    the reductions on (the same values: only the loads differ)."""
    vals = _Values()
    vals.const_params = True
    vals.structs["XpShflDown"] = SHUFFLE
    in_decl = _input_params(vals, graph.inputs, rows.inputs, alias)
    T, V, U = rows.threads, rows.vec, rows.per_thread
    S = rows.shape
    nd = len(S)
    vals.packed = frozenset(k for k, _ in rows.packed)
    e = Emitter(2)
    # Bounds checks cost instructions on every element of every pass, and a row kernel is
    # limited by instruction issue before DRAM (ncu, layer norm over (32768, 4096): 210M
    # instructions issued against torch.compile's 100M). So the source knows how rows end:
    # `full` rows are exactly U vectors a thread (no checks, M a literal: the source still
    # depends only on T, U and V), rows of `whole` vectors check once a vector, others once
    # an element.
    full = rows.M == U * T * V
    whole = rows.M % V == 0
    m_expr = f"{rows.M}LL" if full else vals.slot(('M',), rows.M)
    e.line(f"const long long P = {vals.slot(('rows',), rows.P)}, M = {m_expr};")
    R = rows.rows_per_block
    if R > 1:  # a warp per row, R rows a block (short rows: no block barrier)
        e.line("const int t = threadIdx.x & 31, w = threadIdx.x >> 5;")
        loop = (f"for (long long p = (long long)blockIdx.x * {R} + w; p < P; "
                f"p += (long long)gridDim.x * {R}) {{")
    else:
        e.line("const int t = threadIdx.x;")
        e.line("int xb = 0;  // which reduction buffer is next (_block_reduce)")
        e.line("(void)xb;")
        loop = "for (long long p = blockIdx.x; p < P; p += gridDim.x) {"
    with e.block(loop):
        pre = []
        rc = _decompose(vals, "p", [(a, S[a], ("rowdim", a)) for a in range(nd - 1)], "k_",
                        pre)
        e.lines(pre)
        rcoords = tuple(rc[a] for a in range(nd - 1))
        row = rcoords + ("jc",)
        e.line("(void)p;")
        # the row's inputs, loaded once: whole vectors where rows are whole vectors and
        # the input aligned, else element by element (the same registers either way)
        loads = {k: (f"in{k} + p * M" if full else f"in{k}") for k, full in rows.packed}
        for k, _ in rows.packed:
            e.line(f"{_pack(rows.inputs[[i.pos for i in rows.inputs].index(k)].dtype, V)} "
                   f"p{k}[{U}];")
        def in_row(check):
            """The block of statements for the part of the row `check` guards (none where
            the rows' ends make it always true)."""
            return e.block(f"if ({check}) {{") if check else contextlib.nullcontext()

        def over_row(emit_body):
            """emit_body() for element jc of the thread's part of the row: u, q unrolled."""
            e.pragma("#pragma unroll")
            with e.block(f"for (int u = 0; u < {U}; ++u) {{"):
                with in_row(None if full or not whole else
                            f"((long long)u * {T} + t) * {V} < M"):
                    e.pragma("#pragma unroll")
                    with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                        e.line(f"const long long jc = ((long long)u * {T} + t) * {V} + q;")
                        with in_row(None if whole else "jc < M"):
                            emit_body()

        al = _aligned([(f"in{k}", V * lay.itemsize) for lay in rows.inputs
                       for k, _ in rows.packed if lay.pos == k])

        def load(ks, hint=lambda k: None):
            """The row's inputs `ks` into their registers; hint(k): the L2 policy of a
            hinted vector load ("last", "first"), None for a plain one."""
            if not ks:
                return
            def scalar_loads():
                over_row(lambda: [e.line(f"p{k}[u].v[q] = ({loads[k]})[jc];") for k in ks])
            if not whole:
                scalar_loads()
                return
            with e.block(f"if ({al}) {{", close=None):
                e.pragma("#pragma unroll")
                with e.block(f"for (int u = 0; u < {U}; ++u) {{"):
                    e.line(f"const long long jv = (long long)u * {T} + t;")
                    with in_row(None if full else f"jv * {V} < M"):
                        for k in ks:
                            pk = _pack(next(i.dtype for i in rows.inputs if i.pos == k), V)
                            src = f"reinterpret_cast<const {pk}*>({loads[k]}) + jv"
                            e.line(f"p{k}[u] = xp_ld_{hint(k)}({src});" if hint(k) else
                                   f"p{k}[u] = *({src});")
            with e.block("} else {"):
                scalar_loads()

        # reread: the row is held through the reductions as by default, and the row-shaped
        # inputs the outputs read again (rows.reloads) are loaded again for them, L2 told to
        # keep those rows at the first load (evict_last) and to drop them at the second
        # (evict_first); inputs written in place take plain loads (the compiler orders those
        # with the stores, an asm load it need not)
        again = [k for k in rows.reloads if k not in alias[0]] if reread else []
        if again:
            vals.structs["XpLdHint"] = LD_HINT
        load([k for k, _ in rows.packed], lambda k: "last" if k in again else None)

        # row values kept between passes (RowPlan.kept): the first pass computing one stores
        # it, later passes read it (element u * V + q of the thread's part of the row)
        for i, node in enumerate(rows.kept):
            e.line(f"{CTYPES[node.dtype.name]} c{i}[{U * V}];")
        stored = set()

        def body_of(roots):
            """The statements computing `roots` over the row (element jc), kept values read
            or stored; returns (statements, value names)."""
            vals.start("rowpack")
            for i, node in enumerate(rows.kept):
                if i in stored:
                    vals.memo[(id(node), row)] = f"c{i}[u * {V} + q]"
            res = [vals.val(r, row) for r in roots]
            lines = list(vals.lines)
            for i, node in enumerate(rows.kept):
                got = vals.memo.get((id(node), row))
                if i not in stored and got is not None:
                    lines.append(f"c{i}[u * {V} + q] = {got};")
                    stored.add(i)
            return lines, res

        for node, red in rows.reduces:
            acc = _Acc(vals, red, node)
            (x,) = node.args
            rt = "long long" if red.kind in ("argmax", "argmin") else CTYPES[red.result]
            e.line(f"{rt} r{red.index};")
            with e.block(f"{{ // {red.kind} over the row"):
                e.line(f"{acc.ctype} acc = {acc.ident};")
                body, (v,) = body_of([x])

                def emit(body=body, v=v, acc=acc):
                    e.lines(body)
                    e.line(f"acc = {acc.comb}(acc, {acc.elem(v, 'jc')});")
                over_row(emit)
                e.line(f"{acc.ctype} tot;")
                _block_reduce(e, acc, red, T, "acc", "tot", R > 1)
                e.line(f"r{red.index} = {acc.value.format('tot')};")
            vals.reduced[id(node)] = f"r{red.index}"
        row_outs = [j for j, k in enumerate(rows.outs) if k == "row"]
        if row_outs:
            load(again, lambda k: "first")
            body, res = body_of([outs[j] for j in row_outs])
            e.pragma("#pragma unroll")
            with e.block(f"for (int u = 0; u < {U}; ++u) {{"):
                e.line(f"const long long jv = (long long)u * {T} + t;")
                with in_row(None if full or not whole else f"jv * {V} < M"):
                    for j in row_outs:
                        e.line(f"{_pack(outs[j].dtype.name, V)} o{j};")
                    e.pragma("#pragma unroll")
                    with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                        e.line(f"const long long jc = jv * {V} + q;")
                        with in_row(None if whole else "jc < M"):
                            e.lines(body)
                            for j, r in zip(row_outs, res):
                                e.line(f"o{j}.v[q] = {r};")
                    if whole:  # rows of whole vectors (fresh outputs are aligned)
                        for j in row_outs:
                            pk = _pack(outs[j].dtype.name, V)
                            e.line(f"reinterpret_cast<{pk}*>(out{j} + p * M)[jv] = o{j};")
                    else:
                        e.pragma("#pragma unroll")
                        with e.block(f"for (int q = 0; q < {V}; ++q) {{"):
                            e.line(f"const long long jc = jv * {V} + q;")
                            for j in row_outs:
                                e.line(f"if (jc < M) out{j}[p * M + jc] = o{j}.v[q];")
        one_outs = [j for j, k in enumerate(rows.outs) if k == "one"]
        if one_outs:
            with e.block("if (t == 0) {"):
                vals.start("rowpack")
                res = [vals.val(outs[j], rcoords + (("0",) if len(outs[j].shape) == nd
                                                    else ())) for j in one_outs]
                e.lines(vals.lines)
                for j, r in zip(one_outs, res):
                    e.line(f"out{j}[p] = {r};")
    out_decl = _output_params(outs, alias)
    par_decl = [f"const {CTYPES[u[1].name]} s{i}" for i, u in enumerate(graph.uses)]
    nslots = max(1, len(vals.gvals))
    smem = max([16] + [STRUCT_ACC.get(red.kind, 16) for _, red in rows.reduces])
    params = in_decl + out_decl + par_decl + [f"const XpG<{nslots}> g"]
    bounds = f"{T * R}, {ROW_RESIDENT_THREADS // (T * R)}" if cap else f"{T * R}"
    kernel = "".join([
        f'extern "C" __global__ void __launch_bounds__({bounds}) {name}(',
        ", ".join(params), ") {\n",
        f"  __shared__ __align__(16) unsigned char xp_smem[{T * R * smem}];\n",
        vals.declarations(), e.text(), "}\n"])
    return kernel, vals.structs, vals.gvals
