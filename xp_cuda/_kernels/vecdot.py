"""Launcher of vecdot.cu: layout analysis, kernel variant and launch configuration.

The planning half (``plan_layout``, ``choose_config``, ``compile_options``) is pure Python so it
is tested without a GPU; ``vecdot_cuda`` is the only function that touches CuPy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._runtime import (dtype_name, CTYPES, SOURCE_DIR, device_info, empty_allocator, launch,
                       load_kernel, replayer, program, scratch, source)

__all__ = ["MAXD", "THREADS", "VU", "Layout", "Config", "compile_options",
           "unroll_for", "vec_for", "plan_layout", "k_is_fast", "eligible_variants", "pick_variant",
           "choose_config", "output_view", "vecdot_cuda"]

MAXD = 32       # VD_MAXD in vecdot.cu: batch dims one launch can walk
THREADS = 256   # VD_THREADS in vecdot.cu
_walk_max = MAXD  # batch dims per launch; tests lower it to exercise the outer walk
_SOURCE_FILE = SOURCE_DIR / "vecdot.cu"  # the file source("vecdot.cu") reads; benchmarks name it



def _acc_numpy(rname: str):
    """NumPy dtype matching AccOf<RT> in vecdot.cu (the partials buffer of a split)."""
    if rname.startswith("complex"):
        return np.complex128  # struct cacc {double re, im;}: same layout
    if rname.startswith("float"):
        return np.float64
    return np.uint64 if rname.endswith("64") else np.uint32


def unroll_for(itemsize1: int, itemsize2: int) -> int:
    """Loads in flight per lane and input: about 32 bytes of the wider input, 2 to 8."""
    return max(2, min(8, 32 // max(itemsize1, itemsize2)))


def compile_options(name1: str, name2: str, rname: str) -> tuple:
    """NVRTC options of the kernel for an input dtype pair and its result dtype."""
    i1, i2 = np.dtype(name1).itemsize, np.dtype(name2).itemsize
    return (f"-DT1={CTYPES[name1]}", f"-DT2={CTYPES[name2]}", f"-DRT={CTYPES[rname]}",
            f"-DUNROLL={unroll_for(i1, i2)}", f"-DVEC={vec_for(i1, i2)}")


@dataclass
class Layout:
    """The problem reduced to: M outputs (batch dims, merged, outermost first) by K terms.

    ``perm`` lists the non-unit output axes in the order the batch dims walk them; the output
    buffer is contiguous in that order (so threads write adjacent addresses).
    """
    out_shape: tuple
    M: int
    K: int
    ks1: int           # byte stride of the contraction in x1 / x2
    ks2: int
    shape: list        # merged batch dims, outermost first
    s1: list           # their byte strides in x1 / x2 (0 where broadcast)
    s2: list
    perm: list         # output axes (non-unit) in walking order, outermost first


def plan_layout(shape1, strides1, shape2, strides2, axis: int) -> Layout:
    """Broadcast the non-contracted dims (right-aligned), drop unit dims, order the rest by
    memory stride (largest first, C order on ties) and merge dims that are contiguous in both
    inputs. Strides are in bytes and may be negative or zero. ``axis`` is negative."""
    n1, n2 = len(shape1), len(shape2)
    ks1, ks2 = strides1[n1 + axis], strides2[n2 + axis]
    K = shape1[n1 + axis]
    r1 = [(shape1[i], strides1[i]) for i in range(n1) if i != n1 + axis]
    r2 = [(shape2[i], strides2[i]) for i in range(n2) if i != n2 + axis]
    nb = max(len(r1), len(r2))
    r1 = [(1, 0)] * (nb - len(r1)) + r1
    r2 = [(1, 0)] * (nb - len(r2)) + r2
    out_shape, dims = [], []
    for d in range(nb):
        (a, sa), (b, sb) = r1[d], r2[d]
        n = a if b == 1 else b
        out_shape.append(n)
        if n != 1:
            dims.append((d, n, sa if a != 1 else 0, sb if b != 1 else 0))
    M = math.prod(out_shape)
    # Stable sort: the dim with the largest strides walks slowest.
    dims.sort(key=lambda t: -(abs(t[2]) + abs(t[3])))
    perm = [t[0] for t in dims]
    shape: list = []
    s1: list = []
    s2: list = []
    for _, n, a, b in dims:
        if shape and s1[-1] == a * n and s2[-1] == b * n:
            shape[-1] *= n
            s1[-1], s2[-1] = a, b
        else:
            shape.append(n)
            s1.append(a)
            s2.append(b)
    return Layout(tuple(out_shape), M, K, ks1, ks2, shape, s1, s2, perm)


VU = 4  # VD_VU in vecdot.cu: vector loads in flight per lane and input
ROW_BYTES = 16       # VD_ROWBYTES: the longest row (per input) vecdot_rows takes
ROWS_MAX_WORDS = 16  # VD_ROWS_MAXW: 16-byte words a vecdot_rows thread holds, both inputs


def rows_group(K: int, itemsize1: int, itemsize2: int) -> tuple[int, int]:
    """vecdot_rows' G (rows per thread: the fewest whose bytes are whole 16-byte words in
    both inputs) and the words W1 + W2 it loads; as rows_k in vecdot.cu."""
    def g(nbytes):
        return next(d for d in (1, 2, 4, 8, 16) if (nbytes * d) % 16 == 0)
    G = max(g(K * itemsize1), g(K * itemsize2))
    return G, G * K * (itemsize1 + itemsize2) // 16


def rowsb_group(K: int, itemsize1: int) -> tuple[int, int]:
    """vecdot_rowsb's G and words: as rows_group, x1's rows only (x2's one row is held)."""
    G = next(d for d in (1, 2, 4, 8, 16) if (K * itemsize1 * d) % 16 == 0)
    return G, G * K * itemsize1 // 16


def vec_for(itemsize1: int, itemsize2: int) -> int:
    """Elements per vector load: 16 bytes of the wider input, at most 4 elements."""
    return max(1, min(4, 16 // max(itemsize1, itemsize2)))


@dataclass
class Config:
    lg: int        # log2 of G, the lanes reducing one output
    kfast: int     # 1: lanes are adjacent threads walking K; 0: adjacent threads = outputs
    S: int         # contraction splits (grid.y); > 1 adds the finishing pass
    chunk: int     # contraction elements per split
    blocks: int    # grid.x
    variant: str = "main"  # kernel: "main" (any layout); "vec", "vecout", "rows", "rowsb"
    # (aligned)

    @property
    def G(self):
        return 1 << self.lg


def _pow2ceil(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _tail_efficiency(blocks: int, resident: int) -> float:
    """Fraction of the last partial wave's slots that do work, over all waves."""
    waves = -(-blocks // resident)
    return blocks / (waves * resident)


def k_is_fast(lay: Layout, itemsize1: int, itemsize2: int) -> bool:
    """Does the contraction move through memory faster than the innermost batch dim? Each
    input votes with its element size; broadcast dims abstain."""
    kvote = bvote = 0
    if lay.shape:
        for ks, bs, it in ((lay.ks1, lay.s1[-1], itemsize1), (lay.ks2, lay.s2[-1], itemsize2)):
            if bs == 0:
                continue
            if abs(ks) < abs(bs):
                kvote += it
            else:
                bvote += it
    return kvote >= bvote


def eligible_variants(lay: Layout, itemsize1: int, itemsize2: int, ptr1: int,
                      ptr2: int) -> list:
    """Kernels that can run this layout, fastest first ("main" runs any). The vector kernels
    need every vector they load aligned: checked on the base pointers and every stride they
    step by (CuPy strides are bytes)."""
    K, out = lay.K, []
    if (len(lay.shape) == 1 and lay.ks1 == itemsize1 and lay.ks2 == itemsize2
            and lay.s1[0] == K * itemsize1 and lay.s2[0] == K * itemsize2
            and K * max(itemsize1, itemsize2) <= ROW_BYTES and ptr1 % 16 == 0
            and ptr2 % 16 == 0 and rows_group(K, itemsize1, itemsize2)[1] <= ROWS_MAX_WORDS):
        out.append("rows")  # short contiguous rows: whole rows per thread in registers
    if (len(lay.shape) == 1 and lay.ks1 == itemsize1 and lay.ks2 == itemsize2
            and lay.s1[0] == K * itemsize1 and lay.s2[0] == 0 and K <= 16
            and K * itemsize1 <= ROW_BYTES and ptr1 % 16 == 0
            and rowsb_group(K, itemsize1)[1] <= ROWS_MAX_WORDS):
        out.append("rowsb")  # short contiguous rows, each times x2's one row (held)
    v = vec_for(itemsize1, itemsize2)
    a1, a2 = v * itemsize1, v * itemsize2
    if v > 1 and ptr1 % a1 == 0 and ptr2 % a2 == 0:
        if k_is_fast(lay, itemsize1, itemsize2):
            if (lay.ks1 == itemsize1 and lay.ks2 == itemsize2 and K >= 2 * v
                    and all(s % a1 == 0 for s in lay.s1) and all(s % a2 == 0 for s in lay.s2)):
                out.append("vec")
        elif (lay.M >= THREADS * v and lay.s1[-1] == itemsize1 and lay.s2[-1] == itemsize2
              and lay.shape[-1] % v == 0 and lay.ks1 % a1 == 0 and lay.ks2 % a2 == 0
              and all(s % a1 == 0 for s in lay.s1[:-1])
              and all(s % a2 == 0 for s in lay.s2[:-1])):
            out.append("vecout")
    return out + ["main"]


def pick_variant(lay: Layout, itemsize1: int, itemsize2: int, ptr1: int, ptr2: int) -> str:
    return eligible_variants(lay, itemsize1, itemsize2, ptr1, ptr2)[0]


def choose_config(lay: Layout, itemsize1: int, itemsize2: int, resident: int,
                  variant: str = "main") -> Config:
    """The launch shape for ``variant``. ``resident``: blocks of THREADS that fit on the whole
    GPU at once (SM count x blocks per SM from the kernel's register use)."""
    M, K = lay.M, lay.K
    v = vec_for(itemsize1, itemsize2)
    if variant in ("rows", "rowsb"):
        G = (rows_group(K, itemsize1, itemsize2) if variant == "rows"
             else rowsb_group(K, itemsize1))[0]
        return Config(0, 1, 1, K, -(-M // (THREADS * G)), variant)
    if variant == "vecout":
        # Thread per v adjacent outputs; split K when that leaves the GPU part empty.
        blocks = -(-M // (THREADS * v))
        S, chunk = 1, K
        if blocks < resident:
            S = max(1, min(65535, resident // blocks, K // (2 * VU)))
            if S > 1:
                chunk = -(-K // S)
                S = -(-K // chunk)
        return Config(0, 0, S, chunk, blocks, variant)
    # Elements one lane takes per round of loads.
    u = v * VU if variant == "vec" else unroll_for(itemsize1, itemsize2)
    kfast = 1 if variant == "vec" or k_is_fast(lay, itemsize1, itemsize2) else 0
    if kfast:
        # Enough lanes that each does about one round of loads, at most a warp...
        G = min(32, _pow2ceil(-(-K // u)))
        blocks = -(-M // (THREADS // G))
        if blocks < resident:
            # ...or, for few outputs, whole blocks per output (then split K below).
            while G < THREADS and K >= 2 * G * u:
                G *= 2
        else:
            # Widen groups while the last wave leaves many SM slots idle and lanes keep work.
            best = (_tail_efficiency(blocks, resident), G)
            g = G
            while best[0] < 0.95 and g < THREADS and K >= 2 * g * u:
                g *= 2
                eff = _tail_efficiency(-(-M // (THREADS // g)), resident)
                if eff > best[0] + 0.01:
                    best = (eff, g)
            G = best[1]
    else:
        # Adjacent threads take adjacent outputs (coalesced); spare threads of a block take
        # slices of K when there are fewer than THREADS outputs.
        G = THREADS // min(THREADS, _pow2ceil(M))
    gpb = THREADS // G
    blocks = -(-M // gpb)
    S, chunk = 1, K
    if blocks < resident:
        # Split the contraction so that one wave fills the GPU; every split gets whole rounds
        # (so vector loads stay aligned).
        round_ = G * u
        S = max(1, min(65535, resident // blocks, K // (2 * round_)))
        if S > 1:
            chunk = -(-K // S)
            chunk = -(-chunk // round_) * round_
            S = -(-K // chunk)
    return Config(G.bit_length() - 1, kfast, S, chunk, blocks, variant)


def output_view(buf, lay: Layout):
    """The result array over ``buf`` (M elements, contiguous in the walking order): its axes
    put back in the input order, unit axes inserted. Works for NumPy and CuPy arrays."""
    walk = buf.reshape([lay.out_shape[d] for d in lay.perm])
    if lay.perm:
        walk = walk.transpose([int(i) for i in np.argsort(lay.perm)])
    return walk[tuple(slice(None) if n != 1 else None for n in lay.out_shape)]


# ---- runtime (CuPy) ------------------------------------------------------------------------

def _resident_blocks(cp, kern) -> int:
    """Blocks of THREADS resident on the whole GPU for this kernel (theoretical occupancy)."""
    _, sms, max_threads, regs_sm, max_blocks, _ = device_info(cp)
    regs = max(1, int(getattr(kern, "num_regs", 64) or 64))
    warps = THREADS // 32
    regs_per_warp = -(-regs * 32 // 256) * 256  # allocation unit of 256 registers per warp
    per_sm = min(max_threads // THREADS, max_blocks, regs_sm // (regs_per_warp * warps))
    return sms * max(1, per_sm)


def _layout_struct(shape, s1, s2):
    dt = np.dtype([("shape", np.int64, (MAXD,)), ("s1", np.int64, (MAXD,)),
                   ("s2", np.int64, (MAXD,))], align=True)
    st = np.zeros(1, dtype=dt)
    n = len(shape)
    st["shape"][0, :n] = shape
    st["s1"][0, :n] = s1
    st["s2"][0, :n] = s2
    return st


_kernels: dict = {}         # (kernel, options, device) -> kernel, one dict lookup per call
_plans: dict = {}           # launch plans of recent calls (see _plan)
_PLAN_CACHE_SIZE = 512


def _kernel(cp, name: str, opts: tuple):
    key = (name, opts, cp.cuda.runtime.getDevice())
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = load_kernel(source("vecdot.cu"), name, opts)
    return k


def _plan(cp, a, c, axis, rdtype, config):
    """Layout, configuration, kernels and packed arguments of a call; memoised on everything
    they depend on (shapes, strides, dtypes, pointer alignment, device) so that repeated
    calls cost one dict lookup on the host."""
    key = (a.shape, a.strides, c.shape, c.strides, axis, a.dtype.char, c.dtype.char,
           rdtype.char, a.data.ptr % 16, c.data.ptr % 16, cp.cuda.runtime.getDevice(),
           _walk_max,
           None if config is None else tuple(vars(config).values()))
    plan = _plans.get(key)
    if plan is not None:
        return plan
    lay = plan_layout(a.shape, a.strides, c.shape, c.strides, axis)
    # the result is the buffer itself, C-contiguous in its own shape, where the walk takes its
    # axes in order (output_view's reshape, transpose and indexing cost ~5 us of CuPy views)
    plan = {"lay": lay, "key": ("vecdot",) + key,
            "direct": tuple(lay.out_shape) if list(lay.perm) == sorted(lay.perm) else None}
    if lay.M and lay.K:
        opts = compile_options(dtype_name(a.dtype), dtype_name(c.dtype), rdtype.name)
        if config is None:
            variant = pick_variant(lay, a.itemsize, c.itemsize, a.data.ptr, c.data.ptr)
            kern = _kernel(cp, f"vecdot_{variant}", opts)
            cfg = choose_config(lay, a.itemsize, c.itemsize, _resident_blocks(cp, kern),
                                variant)
        else:
            cfg = config
            kern = _kernel(cp, f"vecdot_{cfg.variant}", opts)
        # Beyond _walk_max batch dims (only with many broadcast dims), the outermost ones are
        # walked here: each launch covers a contiguous slice of the output buffer.
        nb = len(lay.shape)
        outer = tuple(lay.shape[:max(0, nb - _walk_max)])
        inner = lay.shape[len(outer):]
        inner_M = math.prod(inner)
        if cfg.variant == "vecout":
            blocks = -(-inner_M // (THREADS * vec_for(a.itemsize, c.itemsize)))
        elif cfg.variant == "rows":
            blocks = -(-inner_M // (THREADS * rows_group(lay.K, a.itemsize, c.itemsize)[0]))
        elif cfg.variant == "rowsb":
            blocks = -(-inner_M // (THREADS * rowsb_group(lay.K, a.itemsize)[0]))
        else:
            blocks = -(-inner_M // (THREADS >> cfg.lg))
        i64 = np.int64
        if cfg.variant in ("rows", "rowsb"):
            tail = None
        elif cfg.variant == "main":
            tail = (i64(lay.ks1), i64(lay.ks2), np.int32(cfg.lg), np.int32(cfg.kfast),
                    i64(cfg.chunk))
        elif cfg.variant == "vec":
            tail = (np.int32(cfg.lg), i64(cfg.chunk))
        else:
            tail = (i64(lay.ks1), i64(lay.ks2), i64(cfg.chunk))
        plan.update(
            cfg=cfg, kern=kern, outer=outer, inner_M=inner_M, grid=(blocks, cfg.S),
            struct=_layout_struct(inner, lay.s1[len(outer):], lay.s2[len(outer):]),
            mid=(np.int32(len(inner)), i64(inner_M), i64(lay.K)), tail=tail,
            finish=_kernel(cp, "vecdot_finish", opts) if cfg.S > 1 else None,
            acc=_acc_numpy(rdtype.name))
    if len(_plans) >= _PLAN_CACHE_SIZE:
        _plans.clear()
    _plans[key] = plan
    return plan


def _steps(cp, plan, rdtype, p1, p2, pb):
    """Inside a recording: the launches of one call (x1 at p1, x2 at p2, the output buffer at
    pb), the split's partials in the program's scratch."""
    lay, cfg, kern = plan["lay"], plan["cfg"], plan["kern"]
    outer, inner_M = plan["outer"], plan["inner_M"]
    part = scratch(cp, inner_M * cfg.S * np.dtype(plan["acc"]).itemsize) if cfg.S > 1 else pb
    struct = plan["struct"].view(np.int64).ravel()
    tail = plan["tail"]
    for idx in np.ndindex(*outer) if outer else ((),):
        o1 = sum(int(i) * s for i, s in zip(idx, lay.s1))
        o2 = sum(int(i) * s for i, s in zip(idx, lay.s2))
        lin = int(np.ravel_multi_index(idx, outer)) if outer else 0
        dst = pb + lin * inner_M * rdtype.itemsize
        if tail is None:  # rows, rowsb
            launch(cp, kern, plan["grid"][0], THREADS,
                   (p1 + o1, p2 + o2, dst, plan["mid"][1], np.int32(lay.K)))
            continue
        launch(cp, kern, plan["grid"], THREADS,
               (p1 + o1, p2 + o2, dst, part, struct) + plan["mid"] + tail)
        if plan["finish"] is not None:
            launch(cp, plan["finish"], inner_M, THREADS, (part, dst, np.int64(cfg.S)))


def vecdot_cuda(a, c, axis: int, rdtype, config: Config | None = None):
    """conj(a) . c over ``axis`` (negative) for CuPy arrays ``a``, ``c`` already validated;
    returns a CuPy array of NumPy dtype ``rdtype``. ``config`` overrides the launch choice
    (benchmarks and tests explore variants with it).

    The launches of a geometry (the plan's key: shapes, strides, dtypes, address residues,
    device) are recorded once into a Program and replayed with each call's addresses: the
    generic kernel call packed the 768-byte layout struct and a dozen scalars on every call
    (an H200 vecdot of 4 MB, which waits for the host: 47 -> 31 us)."""
    import cupy as cp

    rdtype = np.dtype(rdtype)
    plan = _plan(cp, a, c, axis, rdtype, config)
    lay, direct = plan["lay"], plan["direct"]
    if direct is not None:
        out = buf = empty_allocator(cp)(direct, rdtype)
    else:
        buf = empty_allocator(cp)((lay.M,), rdtype)
        out = output_view(buf, lay)
    if lay.M == 0:
        return out
    if lay.K == 0:
        buf.fill(0)
        return out
    run = plan.get("run")
    if run is None:
        prog = program(cp, plan["key"], (a.data.ptr & 15, c.data.ptr & 15, 0),
                       lambda p1, p2, pb: _steps(cp, plan, rdtype, p1, p2, pb))
        run = plan["run"] = replayer(cp, prog)
    run((a.data.ptr, c.data.ptr, buf.data.ptr))
    return out
