"""Fused kernels (xp_cuda.fusion): one program per trace and input layout, and its launcher.

The compiler is three steps over the typed IR (fusion_ir) recorded by xp_cuda.fusion's tracer:
fusion_plan decides (grouping, flat or strided, vector width, unroll, grid; for reductions P, M,
G, S, chunk and the vector path: see its docstring for the layouts), fusion_render prints one
translation unit with one kernel, built from elementwise.cuh and the op structs of the one
table ``OPS`` (the same ``_op_struct`` the elementwise kernels use) plus fusion.cuh's
conversions, and ``Launch`` here runs it. The source holds only identifiers and literals made
by the printer (never a name or string of the user's program), and no sizes: shapes, strides,
slice starts/steps and launch splits are runtime values in one parameter struct, so a new shape
with the same ranks and broadcast pattern reuses the compiled kernel (load_kernel memoises by
source, and its cubin cache serves new processes). Eager reductions run on the same machinery
(reduction.reduce_eager).

A fused function's whole program (reductions feeding further work) is planned by
fusion_plan's whole-program passes (lower, split_stages, plan_rows) into a ProgramPlan and run
by ``fused_launch``'s choice: one Launch (no reduction feeds other work: the kernel above), a
row kernel (RowProgram, printed by fusion_render.render_rows, run by the same Launch), or a
StagedLaunch of one Launch per reduction depth. Fused programs print their constants as
runtime slots (``const_params``), eager ones as literals (the shipped cubins' sources).

This is the kernel layer: it imports nothing above it; dtypes arrive as objects with a
``.name`` (or as names) and are read by name.
"""
from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from ._runtime import (NP_TYPES, compile_cubins, device_arch, device_info, driver_launch,
                       empty_allocator, kernels_ready, load_kernels, local_bytes, source)
from .elementwise import CTYPES, OPTIONS, _op_struct, header  # noqa: F401  (names kept)
from .fusion_ir import Graph, Op  # noqa: F401
from .fusion_plan import (COL_GROUPS, CONFIGS, RED_WAVES, THREADS, ContiguousLayout,  # noqa: F401
                          ProgramPlan, describe_merge, describe_rows, describe_stages,
                          input_layouts, itemsize, lower, merge_axes, online_sumexp, plan_kernel,
                          plan_rows, size, split_stages)
from .fusion_render import FLAT, NO_ALIAS, identity, literal, render, render_rows  # noqa: F401

TUNE_MIN_BYTES = 2**25  # operand bytes from which a launch is long enough to time (~8 us)
TUNE_ROUNDS = 3  # timed launches per candidate; the fastest of each counts
KERNEL = "xp_fused"


class Program:
    """Source and runtime layout of one fused kernel for one trace and input layout.

    trace: anything with ``.inputs`` (INPUT nodes) and ``.uses`` (parameter uses, each
    (parameter, dtype, convert)): xp_cuda.fusion's Trace or a fusion_ir.Graph. in_arrays: the
    inputs' layouts (``.itemsize``, ``.shape``, ``.strides``, ``.flags.c_contiguous``); sms: the
    GPU's multiprocessor count (the reduction split targets it). const_params: the program's
    constants are runtime slots, not literals (fused functions: a new constant value reuses
    the compiled kernel, so the kernel caches do not grow with the user's constants; eager
    one-node programs keep literals, the shipped cubins' sources)."""

    def __init__(self, trace, kernel_outs, in_arrays, sms, name=KERNEL, config=None,
                 const_params=False, alias=NO_ALIAS):
        self.trace = trace
        self.name = name
        self.config = config or CONFIGS[0]  # (vector bytes, vectors per thread, threads)
        self.outs = kernel_outs  # output Nodes computed by the kernel
        plan = self.plan = plan_kernel(kernel_outs, input_layouts(trace.inputs, in_arrays),
                                       sms, self.config)
        self.threads = plan.threads
        # (elements per vector, vectors per thread, threads) per flat group
        self.layout = plan.layout
        self.blocks = plan.blocks  # grid when every operand is aligned
        self.blocks_scalar = plan.blocks_scalar  # grid for any alignment
        self.tunable = plan.tunable  # other vector shapes could change its speed
        self.scratch = list(plan.scratch)  # (size, numpy dtype) or None: partials, counters
        self.reductions = [(r.out, r.P, r.S) for r in plan.reductions]
        self.in_count = len(plan.inputs)
        self.kernel, self.structs, self.gvals = render(plan, trace, kernel_outs, name,
                                                       const_params, alias)
        self.nslots = max(1, len(self.gvals))
        self.source = translation_unit([self])


def translation_unit(programs) -> str:
    """The helpers, each op struct once, then the kernels (CI batches several per unit)."""
    structs = {}
    for p in programs:
        structs.update(p.structs)
    body = "".join([*structs.values(), *(p.kernel for p in programs)])
    return "".join([header(body), "\n", source("fusion.cuh"), "\n", body])


def programs(trace, kernel_outs, in_arrays, sms, tune: bool, const_params=False,
             prefix=KERNEL, alias=NO_ALIAS) -> list:
    """The Programs a Launch compiles for these layouts: the default vector shape, and with
    ``tune`` each other shape of CONFIGS that plans a different layout with the same
    parameters (one parameter block serves them all). tools/prebuild.py ships exactly these.
    ``const_params``: constants as runtime values (fused functions; see Program). Kernel
    names: ``prefix`` and the shape's number. ``alias``: arguments written in place (see
    direct_writes)."""
    prog = Program(trace, kernel_outs, in_arrays, sms, name=f"{prefix}0",
                   const_params=const_params, alias=alias)
    progs = [prog]
    if tune and prog.tunable:
        for k, cfg in enumerate(CONFIGS[1:], 1):
            p = Program(trace, kernel_outs, in_arrays, sms, name=f"{prefix}{k}", config=cfg,
                        const_params=const_params, alias=alias)
            if p.layout not in [q.layout for q in progs] and p.gvals == prog.gvals:
                progs.append(p)
    return progs


# A fused function's kernels (its stages, their vector shapes) compile as ONE NVRTC program:
# each program pays NVRTC's fixed cost (the helpers' and CuPy's complex headers parsed: about
# 60 ms of a 2-core box's 90 for an empty kernel) once, not once a kernel, and NVRTC programs
# compiled in parallel threads scaled poorly there (log-sum-exp's 3 stages: 3 units one after
# another 416 ms, in 3 threads 358, one unit 222). tools/fuse_first_call.py measures the three
# ways on any machine. Not for eager launches: their sources are the shipped cubins' keys.
ONE_UNIT = True


# NVRTC 12.8+'s --Ofast-compile=LEVEL ("min", "mid", "max") for a fused function's kernels:
# None (the default) leaves it out. It halves a first compile (H200 host, softmax 225 -> 115 ms,
# a 30-step chain 303 -> 148) but the kernels lose far more (same run, ms: softmax over
# (32768, 4096) 0.293 -> 0.716 with "mid", 10.7 with "max"; layer norm 0.292 -> 0.839;
# log-sum-exp over axis 0 0.170 -> 0.782), so it stays off. Never an option that changes a
# float result. The options are part of the kernel cache's key.
FAST_COMPILE = None

# Tiered compiling of a fused function's kernels: where its cubins are in no cache, the first
# call compiles them with FIRST_CALL_COMPILE (NVRTC 12.8+; about half the compile time, kernels
# 2.4-4.6x slower: see FAST_COMPILE's figures) and runs those. From its second call a background
# thread compiles them with the full options (and stores them on disk: a program run once, as
# in a test, never pays that); the launch swaps them in at its next call after they are ready
# (in the calling thread: never a module load from another thread, which could break a CUDA
# graph capture there). Values are the same either way (no option that changes a float
# result). finish_compiling() starts what waits for a second call and waits for it all.
TIERED = True
FIRST_CALL_COMPILE = "mid"


class _Compiler:
    """One daemon thread running compile jobs in submission order (daemon: the process never
    waits at exit for kernels it will not run; an interrupted job leaves no cache entry, as
    entries are written whole). Made again in a forked child, which has no such thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid = None
        self._queue = None

    def submit(self, fn, *args):
        import os
        import queue
        from concurrent.futures import Future
        fut: Future = Future()
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._queue = os.getpid(), queue.SimpleQueue()
                threading.Thread(target=self._run, args=(self._queue,), daemon=True,
                                 name="xp_cuda-compile").start()
            self._queue.put((fut, fn, args))
        return fut

    @staticmethod
    def _run(jobs):
        while True:
            fut, fn, args = jobs.get()
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args))
                except BaseException as e:  # (the caller's result() raises it)
                    fut.set_exception(e)


_compiler = _Compiler()
_quick_launches: "weakref.WeakSet" = weakref.WeakSet()  # on quick kernels, nothing submitted


def finish_compiling() -> None:
    """Start the background compile of every launch still on its quick kernels, and wait
    until every background compile has finished (each launch takes its full-option kernels
    at its next call)."""
    for launch in list(_quick_launches):
        launch.submit()
    _compiler.submit(lambda: None).result()


def first_call_options(options: tuple):
    """The options of a first call's quick compile, or None where there is none (TIERED off,
    or an NVRTC without --Ofast-compile, or FAST_COMPILE already set)."""
    if not TIERED or FAST_COMPILE is not None:
        return None
    from ._runtime import _nvrtc_version_key
    if tuple(_nvrtc_version_key()) < (12, 8):
        return None
    return tuple(options) + (f"--Ofast-compile={FIRST_CALL_COMPILE}",)


def fused_options() -> tuple:
    """NVRTC options of a fused function's kernels: OPTIONS, and FAST_COMPILE's where set
    (and this NVRTC has it)."""
    if FAST_COMPILE is None:
        return OPTIONS
    from ._runtime import _nvrtc_version_key
    if tuple(_nvrtc_version_key()) < (12, 8):
        return OPTIONS
    return OPTIONS + (f"--Ofast-compile={FAST_COMPILE}",)


def one_unit(progs) -> list:
    """``progs`` (distinct kernel names) sharing one translation unit, where ONE_UNIT."""
    if ONE_UNIT and len(progs) > 1:
        src = translation_unit(progs)
        for p in progs:
            p.source = src
    return progs


# ---- in place: an argument's final value written into the argument ---------------------------
# A fused function's in-place update (b += 1.5) ends with the argument's final value, which
# the caller's array must hold. Its one kernel writes it there directly where no read sees the
# overwritten value: every read of the argument in the kernel is at the index being written
# (elementwise work of the argument's shape), or the row kernel holds the argument's row in
# registers before it writes the row. Else (a reduction, a view or broadcasting reads it at
# other indices, several kernels, a layout the kernel does not write) the kernel computes a
# new array and the caller copies it in (one more pass over the array).
def direct_writes(trace, outs, plan, in_arrays) -> tuple:
    """({program output number: input cell} written straight into the argument's memory,
    {argument position: why not} for the other arguments updated in place). trace.writes:
    argument position -> its final value (.node), one of `outs`; plan: plan_program's."""
    writes = getattr(trace, "writes", None) or {}
    if not writes:
        return {}, {}
    cells = {n.attr.pos: c for c, n in enumerate(trace.inputs)}
    low = plan.outs
    direct, why = {}, {}
    for pos, meta in writes.items():
        at = [j for j, n in enumerate(outs) if n is meta.node]
        cell = cells.get(pos)
        if len(at) != 1 or cell is None:
            why[pos] = "its value is also another result"
            continue
        j = at[0]
        lay = in_arrays[cell]
        if plan.rows is None and len(plan.stages) > 1:
            why[pos] = "the program runs as several kernels"
        elif not lay.flags.c_contiguous:
            why[pos] = "it is not C-contiguous (the kernel writes results in C order)"
        elif plan.rows is not None:
            if (pos, True) not in plan.rows.packed or plan.rows.outs[j] != "row":
                why[pos] = "the row kernel does not hold its rows in registers"
            else:
                direct[j] = cell
        else:
            arg = trace.inputs[cell]
            if any(_reads(root, pos, arg.shape, {}) == "other" for root in low):
                why[pos] = ("another value reads it at other indices (a reduction, a view "
                            "or broadcasting)")
            else:
                direct[j] = cell
    return direct, why


_SAME_INDEX = (Op.ELEMENTWISE, Op.WHERE, Op.ASTYPE, Op.CLIP)


def _reads(node, pos, shape, memo):
    """How `node` reads the input at argument position `pos` (of `shape`): None (not at
    all), "same" (only at the index of the element computed) or "other"."""
    if node is None:
        return None
    key = id(node)
    if key in memo:
        return memo[key]
    if node.op is Op.INPUT:
        got = "same" if node.attr.pos == pos else None
    else:
        kids = {_reads(a, pos, shape, memo) for a in node.args}
        got = "other" if "other" in kids else "same" if "same" in kids else None
        if got == "same" and (node.op not in _SAME_INDEX or tuple(node.shape) != tuple(shape)):
            got = "other"
    memo[key] = got
    return got


def _shares(d, datas, cell) -> bool:
    """Is another input a view of d's allocation (it could overlap d)? (An empty d
    overlaps nothing.)"""
    if not d.size:
        return False
    m = d.data.mem
    return any(k != cell and e.data.mem is m for k, e in enumerate(datas))


def alias_of(trace, direct) -> tuple:
    """The render's alias argument for `direct` ({output number: input cell})."""
    if not direct:
        return NO_ALIAS
    return (tuple(sorted(trace.inputs[c].attr.pos for c in direct.values())),
            tuple(sorted(direct)))


def _write_words(trace, direct, why) -> str:
    lines = []
    for pos in sorted(getattr(trace, "writes", None) or {}):
        if pos in why:
            lines.append(f"argument {pos} updated in place: computed into a new array, then "
                         f"copied into it ({why[pos]})")
        else:
            lines.append(f"argument {pos} updated in place: the kernel writes it directly")
    return "".join("\n" + ln for ln in lines)


# ---- launcher ---------------------------------------------------------------------------------
def _launch(*args):
    """The driver's launch, bound on first use (CuPy is imported lazily)."""
    global _launch
    _launch = driver_launch()
    return _launch(*args)


class _Block:
    """One thread's parameter block and reduction scratch: a copy of the launch's template
    with its own scratch pointers (two threads never share a block nor a scratch buffer)."""

    __slots__ = ("buf", "u64", "ptrs", "addr", "param_views", "scratch")

    def __init__(self, launch):
        cp = launch.cp
        self.scratch = [None if s is None else (cp.zeros(s[0], dtype=s[1]) if s[1] == np.uint32
                                                else cp.empty(s[0], dtype=s[1]))
                        for s in launch.scratch_specs]
        self.buf = buf = launch.template.copy()
        base = buf.ctypes.data
        ncells = launch.ncells
        self.ptrs = (ctypes.c_void_p * (ncells + 1))(
            *[base + 16 * c for c in range(ncells)], base + 16 * ncells)
        self.addr = ctypes.addressof(self.ptrs)
        # the same memory as ctypes: writing a Python int there is cheaper than through NumPy
        self.u64 = (ctypes.c_uint64 * buf.size).from_address(base)
        c0 = launch.scratch_cell
        for i, sc in enumerate(self.scratch):
            buf[2 * (c0 + i)] = 0 if sc is None else sc.data.ptr
        c0 += len(self.scratch)
        self.param_views = [buf[2 * (c0 + u): 2 * (c0 + u) + 2].view(NP_TYPES[dt.name])[:1]
                            for u, (_, dt, _) in enumerate(launch.uses)]


class _PerThread(threading.local):
    """`block`: the calling thread's _Block, built on its first touch (threading.local runs
    __init__ once per thread, with the arguments given at construction)."""

    def __init__(self, launch):
        self.block = _Block(launch)


def _final_kernels(progs, options, respill, prepared=None):
    """(kernels, programs) with the full options: ``progs``' kernels, where the first of them
    spills under its register cap the program ``respill()`` makes (a row kernel without the
    cap; RowLaunch) in its place, and without the other variants that spill."""
    kernels = load_kernels([(p.source, p.name) for p in progs], options, prepared)
    if respill is None:
        return kernels, progs
    if local_bytes(kernels[0].kernel.ptr):
        alt = respill()
        progs = [alt] + progs[1:]
        kernels = load_kernels([(alt.source, alt.name)], options, prepared) + kernels[1:]
    keep = [0] + [i for i in range(1, len(progs)) if not local_bytes(kernels[i].kernel.ptr)]
    return [kernels[i] for i in keep], [progs[i] for i in keep]


def _same_frame(a, b) -> bool:
    """Whether programs ``a`` and ``b`` take the same parameter block (a launch built for one
    can launch the other's kernel)."""
    return (a.gvals, a.nslots, a.scratch) == (b.gvals, b.nslots, b.scratch)


class Launch:
    """A compiled fused kernel for one exact input layout. Its parameter block (one 16-byte
    cell per pointer and scalar, then the geometry struct) is built once as a template; each
    thread that calls gets its own copy, with its own reduction scratch, on its first call
    (threading.local), so concurrent launches from several threads share neither. A call writes
    the pointers and scalar values into the caller's block and launches through the driver.

    A launch moving TUNE_MIN_BYTES or more compiles the kernel in each vector shape of CONFIGS
    (in parallel) and, on its first call with aligned operands, times each and keeps the
    fastest. Every shape computes each element with the same operations, so the choice changes
    speed only, never a value. The chosen shape is one tuple, ``variant`` (kernel, grid for
    aligned operands, grid for any, threads), so a thread never reads half of another's choice."""

    def __init__(self, cp, trace, kernel_outs, in_arrays, progs=None, const_params=False,
                 direct=None, respill=None):
        self.cp = cp
        # {output number: input cell}: outputs written straight into an argument updated in
        # place (direct_writes), while its pointer is 16-byte aligned (vector stores)
        self.direct = tuple(sorted((direct or {}).items()))
        planned_here = progs is None
        if progs is None:  # (a row kernel comes planned: RowLaunch)
            sms = device_info(cp).sm_count
            moved = sum(a.nbytes for a in in_arrays) + sum(
                size(n.shape) * itemsize(n.dtype.name) for n in kernel_outs)
            progs = programs(trace, kernel_outs, in_arrays, sms, moved >= TUNE_MIN_BYTES,
                             const_params, alias=alias_of(trace, direct))
            if const_params:  # a fused function's (eager sources stay the shipped ones)
                one_unit(progs)
        # a fused function's (planned here with constants as parameters, or by RowLaunch,
        # StagedLaunch): fused_options; an eager reduction's: OPTIONS (the shipped cubins)
        fused = const_params or not planned_here
        options = fused_options() if fused else OPTIONS
        quick = first_call_options(options) if fused else None
        pairs = [(p.source, p.name) for p in progs]
        if quick is not None and kernels_ready(pairs, options):
            quick = None
        # TIERED: (progs, options, respill) while on quick kernels with nothing submitted;
        # then the background compile's (future, progs, options, spill-free alternative)
        self.quick = self.pending = None
        self.tiering = quick is not None  # (one test on the hot path)
        self._calls = 0
        if quick is None:
            kernels, progs = _final_kernels(progs, options, respill)
        else:
            kernels = load_kernels(pairs, quick)
        prog = progs[0]
        self.source = prog.source
        self.variants = [(k.kernel.ptr, p.blocks, p.blocks_scalar, p.threads)
                         for k, p in zip(kernels, progs)]
        self.variant = self.variants[0]
        # (the quick kernels are never timed: tuning waits for the full-option ones)
        self.tuned = len(self.variants) == 1 or quick is not None
        self.out_specs = [(n.shape, np.dtype(n.dtype.name)) for n in kernel_outs]
        cells = dict(self.direct)
        self.direct_cells = [cells.get(j) for j in range(len(kernel_outs))] if cells else None
        self.scratch_specs = prog.scratch
        n_in, n_out = len(in_arrays), len(kernel_outs)
        self.uses = uses = trace.uses
        self.ncells = ncells = n_in + n_out + len(prog.scratch) + len(uses)
        self.scratch_cell = n_in + n_out
        self.template = np.zeros(ncells * 2 + prog.nslots, dtype=np.uint64)
        self.template[2 * ncells:] = np.array(prog.gvals + [0] * (prog.nslots - len(
            prog.gvals)), dtype=np.int64).view(np.uint64)
        self.in_cells = list(range(0, 2 * n_in, 2))
        self.out_cells = list(range(2 * n_in, 2 * (n_in + n_out), 2))
        self._local = _PerThread(self)  # the constructing thread's block is built now
        self.ndarray = empty_allocator(cp)
        self.stream = cp.cuda.get_current_stream
        # one output, no parameters, no direct writes (every eager strided call, reduction,
        # where, astype): `one` serves it with fewer steps than __call__
        self.single = not self.uses and self.direct_cells is None and n_out == 1
        self.out_cell0 = self.out_cells[0] if n_out else None
        if quick is not None:
            self.quick = (progs, options, respill)
            _quick_launches.add(self)

    def submit(self):
        """Start compiling the full-option kernels in the background (_install takes them);
        the uncapped row kernel (``respill``: see _final_kernels) compiles beside them."""
        if self.quick is None:
            return
        progs, options, respill = self.quick
        self.quick = None
        _quick_launches.discard(self)
        pairs = [(p.source, p.name) for p in progs]
        alt = None
        if respill is not None:  # both compile now: _install takes the one that does not spill
            alt = respill()
            if _same_frame(alt, progs[0]):
                pairs.append((alt.source, alt.name))
            else:
                alt = None
        arch = device_arch()
        self.pending = (_compiler.submit(compile_cubins, pairs, options, arch),
                        progs, options, alt)

    def _tier(self):
        """Each call while TIERED is not done: the second starts the background compile, the
        first after it is done takes its kernels."""
        if self.quick is not None:
            self._calls += 1
            if self._calls > 1:
                self.submit()
        elif self.pending is not None:
            self._install()

    def _install(self):
        """Swap in the full-option kernels once their background compile is done (never while
        the stream is being captured into a graph: a module load there could break it). A
        failed compile keeps the quick kernels, which compute the same values."""
        fut, progs, options, alt = self.pending
        if not fut.done() or self.stream().is_capturing():
            return
        self.pending = None
        self.tiering = False
        try:
            prepared = fut.result()
            kernels, final = _final_kernels(progs, options,
                                            None if alt is None else lambda: alt, prepared)
        except Exception:  # (the quick kernels stay: correct, only slower)
            return
        self.source = final[0].source
        self.variants = [(k.kernel.ptr, p.blocks, p.blocks_scalar, p.threads)
                         for k, p in zip(kernels, final)]
        self.variant = self.variants[0]
        self.tuned = len(self.variants) == 1

    def finish(self):
        """Compile this launch's full-option kernels now (in the background thread), wait
        and take them (tests, benchmarks)."""
        from concurrent.futures import wait
        self.submit()
        while self.pending is not None:
            pending = self.pending
            wait([pending[0]])  # (a failed compile: _install keeps the quick kernels)
            self._install()
            if self.pending is not None:  # (a capture in progress: a later call takes them)
                break

    def block(self) -> _Block:
        """The calling thread's parameter block (built on its first call)."""
        return self._local.block

    def __call__(self, in_datas, values):
        if self.tiering:
            self._tier()
        blk = self._local.block
        buf = blk.u64
        misaligned = 0
        for c, d in zip(self.in_cells, in_datas):
            buf[c] = p = d.data.ptr
            misaligned |= p & 15
        if self.uses:
            for view, (param, dt, convert) in zip(blk.param_views, self.uses):
                view[0] = convert(param.fn(values))
        outs = []
        nd = self.ndarray
        # (a launch that will tune runs each vector shape several times into its outputs:
        # never into an argument, which would be updated once a run)
        if self.direct_cells is None or not self.tuned:
            for c, (shape, dt) in zip(self.out_cells, self.out_specs):
                o = nd(shape, dt)
                buf[c] = o.data.ptr
                outs.append(o)
        else:  # into the argument itself where aligned and in memory no other input shares
            # (views of one allocation may overlap): else a new array the caller copies
            for c, (shape, dt), src in zip(self.out_cells, self.out_specs, self.direct_cells):
                o = None if src is None else in_datas[src]
                if o is None or o.data.ptr & 15 or _shares(o, in_datas, src):
                    o = nd(shape, dt)
                buf[c] = o.data.ptr
                outs.append(o)
        # the kernel takes its vector path when every operand is aligned (outputs always are)
        if self.tuned or misaligned:
            fn, blocks, blocks_scalar, threads = self.variant
            _launch(fn, blocks_scalar if misaligned else blocks, 1, 1,
                    threads, 1, 1, 0, self.stream().ptr, blk.addr, 0)
        else:
            self._tune(self.stream(), blk.addr)
        return outs

    def one(self, in_datas):
        """__call__(in_datas, ())[0] of a `single` launch: the hot path of kept eager calls
        (~0.4 us less host time: no parameter loop, no output list, no direct-write test)."""
        if not self.tuned or self.tiering:
            return self(in_datas, ())[0]
        blk = self._local.block
        buf = blk.u64
        misaligned = 0
        for c, d in zip(self.in_cells, in_datas):
            buf[c] = p = d.data.ptr
            misaligned |= p & 15
        shape, dt = self.out_specs[0]
        o = self.ndarray(shape, dt)
        buf[self.out_cell0] = o.data.ptr
        fn, blocks, blocks_scalar, threads = self.variant
        _launch(fn, blocks_scalar if misaligned else blocks, 1, 1, threads, 1, 1, 0,
                self.stream().ptr, blk.addr, 0)
        return o

    def _tune(self, stream, addr):
        """Launch every variant TUNE_ROUNDS times into this call's outputs (each writes the
        same values), timed by events; keep the fastest. Not while a graph is being captured:
        there the default runs, and the next call outside a capture tunes."""
        if stream.is_capturing():
            fn, blocks, _, threads = self.variant
            _launch(fn, blocks, 1, 1, threads, 1, 1, 0, stream.ptr, addr, 0)
            return
        Event = self.cp.cuda.Event
        marks = [[(Event(), Event()) for _ in range(TUNE_ROUNDS)] for _ in self.variants]
        for r in range(TUNE_ROUNDS):
            for (fn, blocks, _, threads), pairs in zip(self.variants, marks):
                pairs[r][0].record(stream)
                _launch(fn, blocks, 1, 1, threads, 1, 1, 0, stream.ptr, addr, 0)
                pairs[r][1].record(stream)
        marks[-1][-1][1].synchronize()
        elapsed = self.cp.cuda.get_elapsed_time
        best = min(range(len(self.variants)),
                   key=lambda v: min(elapsed(a, b) for a, b in marks[v]))
        self.variant = self.variants[best]
        self.tuned = True


# ---- whole programs: several kernels, or one row kernel --------------------------------------
def _first_mid(trace) -> int:
    return 1 + max([n.attr.pos for n in trace.inputs] or [-1])


def plan_program(trace, outs, in_arrays, sms):
    """The ProgramPlan of the program computing `outs` (fusion_plan's whole-program passes)."""
    low = lower(list(outs))
    stages = split_stages(low, tuple(trace.inputs), _first_mid(trace))
    rows = None
    if len(stages) > 1:
        rows = plan_rows(low, input_layouts(trace.inputs, in_arrays), sms)
        if rows is None:
            online = online_sumexp(low)
            if any(a is not b for a, b in zip(online, low)):
                low = online
                stages = split_stages(low, tuple(trace.inputs), _first_mid(trace))
    return ProgramPlan(stages, rows, tuple(low))


def _stage_layouts(stage, in_arrays, n_in):
    return list(in_arrays) + [ContiguousLayout(tuple(n.shape), itemsize(n.dtype.name))
                              for n in stage.inputs[n_in:]]


def stage_programs(trace, plan, in_arrays, sms, name=KERNEL) -> list:
    """The Programs of a multi-kernel plan, one per stage (for compile tests and describe)."""
    n_in = len(trace.inputs)
    return [Program(Graph(list(st.inputs), trace.uses), list(st.outs),
                    _stage_layouts(st, in_arrays, n_in), sms, name=f"{name}_s{k}",
                    const_params=True)
            for k, st in enumerate(plan.stages)]


def staged_programs(trace, plan, in_arrays, sms, tune) -> list:
    """(stage, graph, layouts, Programs) per stage of a multi-kernel plan, every kernel
    named apart (stage k, shape v: xp_fused_s{k}v{v}) and, where ONE_UNIT, all in one
    translation unit. tune(bytes moved) -> whether a stage compiles every vector shape."""
    n_in = len(trace.inputs)
    staged = []
    for k, st in enumerate(plan.stages):
        lays = _stage_layouts(st, in_arrays, n_in)
        g = Graph(list(st.inputs), trace.uses)
        moved = sum(a.nbytes for a in lays) + sum(
            size(n.shape) * itemsize(n.dtype.name) for n in st.outs)
        staged.append((st, g, lays, programs(g, list(st.outs), lays, sms, tune(moved),
                                             const_params=True, prefix=f"{KERNEL}_s{k}v")))
    one_unit([p for *_, progs in staged for p in progs])
    return staged


class StagedLaunch:
    """A program of several kernels (fusion_plan.split_stages): each stage's Launch, run in
    order on the current stream; a stage reads the function's inputs and the intermediates
    (reductions) of earlier stages, freshly allocated and dropped after the call."""

    def __init__(self, cp, trace, plan, in_arrays):
        self.plan = plan
        sms = device_info(cp).sm_count
        staged = staged_programs(trace, plan, in_arrays, sms,
                                 lambda moved: moved >= TUNE_MIN_BYTES)
        # every stage's kernels compile at once (one unit: see ONE_UNIT); each Launch below
        # then finds its kernels loaded (the quick ones where TIERED: each then submits the
        # unit's full compile, which the first does and the others find stored)
        pairs = [(p.source, p.name) for *_, progs in staged for p in progs]
        options = fused_options()
        quick = first_call_options(options)
        load_kernels(pairs, options if quick is None or kernels_ready(pairs, options)
                     else quick)
        self.launches = [(st, Launch(cp, g, list(st.outs), lays, progs=progs))
                         for st, g, lays, progs in staged]
        self.n_out = sum(1 for st in plan.stages for j, _ in st.results if j is not None)
        self.n_mid = sum(1 for st in plan.stages for _, m in st.results if m is not None)

    def finish(self):
        """Launch.finish for each stage."""
        for _, launch in self.launches:
            launch.finish()

    def __call__(self, in_datas, values):
        outs = [None] * self.n_out
        mids = [None] * self.n_mid
        for st, launch in self.launches:
            ins = list(in_datas) + [mids[m] for m in st.reads] if st.reads else in_datas
            for (j, m), r in zip(st.results, launch(ins, values)):
                if j is not None:
                    outs[j] = r
                if m is not None:
                    mids[m] = r
        return outs


def merged(trace, outs, in_arrays):
    """(trace, outs, in_arrays) of the program over merged axes (fusion_plan.merge_axes), or
    as given (None as a fourth value) where none merge. Not for a program that updates an
    argument in place (its writes name the original nodes)."""
    if getattr(trace, "writes", None):
        return trace, outs, in_arrays, None
    m = merge_axes(outs, trace.inputs, in_arrays)
    if m is None:
        return trace, outs, in_arrays, None
    return Graph(list(m.inputs), trace.uses), list(m.outs), list(m.layouts), m


def fused_launch(cp, trace, outs, in_arrays):
    """The launcher of a fused function's program for these input layouts: one kernel
    (Launch) where no reduction feeds other work; else the row kernel (RowLaunch) where
    plan_rows finds one, else one kernel per stage (StagedLaunch). Planned over merged axes
    where they merge; the launch reads only its inputs' addresses, so it takes the arrays
    themselves, and it returns outputs of their own shapes."""
    shapes = [n.shape for n in outs]
    trace, outs, in_arrays, m = merged(trace, outs, in_arrays)
    sms = device_info(cp).sm_count
    plan = plan_program(trace, outs, in_arrays, sms)
    direct, _ = direct_writes(trace, outs, plan, in_arrays)
    if plan.rows is not None:
        launch = RowLaunch(cp, trace, plan, in_arrays, direct)
    elif len(plan.stages) == 1:
        launch = Launch(cp, Graph(list(plan.stages[0].inputs), trace.uses),
                        list(plan.stages[0].outs), in_arrays, const_params=True, direct=direct)
    else:
        launch = StagedLaunch(cp, trace, plan, in_arrays)
    if m is not None:  # the same flat outputs in the shapes the function gives them
        if isinstance(launch, StagedLaunch):
            for st, lc in launch.launches:
                lc.out_specs = [spec if j is None else (shapes[j], spec[1])
                                for (j, _), spec in zip(st.results, lc.out_specs)]
        else:
            launch.out_specs = [(s, dt) for s, (_, dt) in zip(shapes, launch.out_specs)]
    return launch


def explain(trace, outs, in_arrays, sms) -> str:
    """A fused program's plan in words: the kernels, and for each what it computes and how
    (fuse's ``plan()``), over merged axes where they merge."""
    trace, outs, in_arrays, m = merged(trace, outs, in_arrays)
    plan = plan_program(trace, outs, in_arrays, sms)
    writes = _write_words(trace, *direct_writes(trace, outs, plan, in_arrays))
    head = "" if m is None else describe_merge(m.groups)
    if plan.rows is not None:
        return head + describe_rows(plan.rows) + writes
    progs = stage_programs(trace, plan, in_arrays, sms)
    return head + describe_stages(plan, [p.plan for p in progs]) + writes


class RowProgram:
    """Source and runtime layout of a row kernel (fusion_plan.RowPlan), with the attributes
    Launch reads of a Program (no scratch: a block owns its row)."""

    def __init__(self, trace, plan, outs, name=KERNEL, alias=NO_ALIAS, cap=True, reread=False):
        self.trace, self.name, self.outs = trace, name, outs
        rows = self.plan = plan.rows
        self.threads = rows.threads * rows.rows_per_block
        self.blocks = self.blocks_scalar = rows.blocks
        self.layout, self.tunable, self.scratch, self.reductions = (), False, [], []
        self.in_count = len(rows.inputs)
        self.kernel, self.structs, self.gvals = render_rows(rows, trace, outs, name, alias,
                                                            cap, reread)
        self.nslots = max(1, len(self.gvals))
        self.source = translation_unit([self])


def row_program(trace, outs, in_arrays, sms, name=f"{KERNEL}0"):
    """The RowProgram of a program where plan_rows finds one, else None (compile tests)."""
    plan = plan_program(trace, outs, in_arrays, sms)
    return None if plan.rows is None else RowProgram(trace, plan, list(plan.outs), name)


def RowLaunch(cp, trace, plan, in_arrays, direct=None):  # noqa: N802  (a Launch, planned)
    """The Launch of a row kernel: the whole program, one kernel (`direct`: see
    direct_writes)."""
    outs, alias = list(plan.outs), alias_of(trace, direct)
    progs = [RowProgram(trace, plan, outs, f"{KERNEL}0", alias)]
    # A launch long enough to time also builds the reread variant (render_rows: the rows the
    # outputs read again are loaded again, with L2 policies) and keeps the faster
    # (Launch._tune). Neither wins everywhere (H200, float32, ms, registers / reread /
    # torch.compile): x / norm(x) over (32768, 4096) 0.2600 / 0.2500 / 0.2508, float64 over
    # (16384, 2048) 0.1324 / 0.1355. (Torch's kernels read rows so; without the L2 policy
    # the two reads took 0.2562, with L1 hints alone 0.2602.) Rows of whole vectors only:
    # the hinted loads are the vector ones.
    moved = sum(a.nbytes for a in in_arrays) + sum(
        size(n.shape) * itemsize(n.dtype.name) for n in outs)
    rows = plan.rows
    if moved >= TUNE_MIN_BYTES and rows.M % rows.vec == 0 and \
            any(k not in alias[0] for k in rows.reloads):
        again = RowProgram(trace, plan, outs, f"{KERNEL}1", alias, reread=True)
        if _same_frame(again, progs[0]):
            progs.append(again)
    # where it spills under the register cap: built without it
    launch = Launch(cp, trace, outs, in_arrays, progs=progs, direct=direct,
                    respill=lambda: RowProgram(trace, plan, outs, f"{KERNEL}0", alias,
                                               cap=False))
    launch.plan = plan
    return launch
