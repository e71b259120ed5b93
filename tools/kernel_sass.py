"""A kernel's machine code (SASS) without a GPU, and how many loads its main loop has in flight.

    python tools/kernel_sass.py KIND DTYPE SHAPE AXES [--strides S] [--print] [--arch sm_90]
    python tools/kernel_sass.py --audit [--arch sm_90]

KIND is a reduction (sum, prod, max, min, mean, all, any, argmax, argmin, var, std), SHAPE
and AXES Python tuples ("(64, 2**20)" "(0,)"), STRIDES byte strides (C order if left out).
The eager reduction's programs (every tuned variant) are rendered as the backend would,
compiled to PTX by this machine's NVRTC, assembled by ptxas and disassembled by nvdisasm.
For each kernel it prints registers, spills and its main loop: the innermost loop whose loads
read the most bytes, and how many of them (and their bytes) issue before the first instruction
that uses a loaded value. A step whose loads all issue first keeps them all in flight; ptxas
may instead use the first ones before issuing the rest, to save registers: the float32
product's 8-element step issued 4 (16 bytes), then the others as its float64 tree freed
registers, and ran 14% slower (performance notes, 2026-12-03). ``--audit`` checks the
benchmark's reduction layouts and lists the kernels that use a loaded value with fewer than
FLIGHT_BYTES of their step in flight (16-byte vector loads keep enough even when used early).

ptxas and nvdisasm come from NVIDIA's wheels (``pip install nvidia-cuda-nvcc-cu12
nvidia-cuda-nvdisasm``; the first for ptxas of the NVRTC's CUDA version) or from a CUDA
toolkit: found on PATH, in this environment's site-packages (nvidia/*/bin), or named with
--bin DIR[:DIR]. This assembles NVRTC's PTX with a separate ptxas, as NVRTC does inside: the same
CUDA version schedules the same way (checked on the product's kernels), another may not.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA\b.*`\((\.L_x_\d+)\)")
_REG = re.compile(r"\bR(\d+)(\.64)?\b")
_WIDTH = {".64": 2, ".128": 4}  # registers an LDG fills, by its size modifier
_BYTES = {".U8": 1, ".S8": 1, ".U16": 2, ".S16": 2, ".64": 8, ".128": 16}  # else 4


def instructions(sass: str) -> list[tuple[str | None, str]]:
    """(label or None, instruction text without address, predicate and encoding) in order;
    a label is its own entry."""
    out = []
    for line in sass.splitlines():
        m = _LABEL.match(line)
        if m:
            out.append((m.group(1), ""))
            continue
        if "*/" not in line:
            continue
        text = line.split("*/", 1)[1].split(";", 1)[0].strip()
        if not text or text.startswith("."):
            continue
        if text.startswith("@"):
            text = text.split(None, 1)[1] if " " in text else ""
        out.append((None, text))
    return out


def _regs(operand: str) -> set[int]:
    regs = set()
    for m in _REG.finditer(operand):
        r = int(m.group(1))
        regs.update((r, r + 1) if m.group(2) else (r,))
    return regs


def loop_loads(body: list[str]) -> tuple[int, int, int, int]:
    """(global loads in the loop body, loads issued before an instruction first reads a
    loaded register, the bytes of the first, of the second)."""
    pending: set[int] = set()
    total = first_use = nbytes = bytes_first = 0
    used = False
    for text in body:
        op, _, rest = text.partition(" ")
        operands = [o.strip() for o in rest.split(",")] if rest else []
        if not used and pending and any(_regs(o) & pending for o in operands[1:] or operands):
            used = True
        if not op.startswith(("LDG", "ST", "RED", "BRA", "BAR", "EXIT")) and operands:
            pending -= _regs(operands[0])  # overwritten: no longer a loaded value
        if op.startswith("LDG"):
            total += 1
            mods = op.split(".")
            width = next((w for s, w in _WIDTH.items() if s[1:] in mods), 1)
            size = next((b for s, b in _BYTES.items() if s[1:] in mods), 4)
            nbytes += size
            dest = _regs(operands[0]) if operands else set()
            if dest:
                r = min(dest)
                pending.update(range(r, r + width))
            if not used:
                first_use, bytes_first = total, nbytes
    return total, first_use, nbytes, bytes_first


def main_loop(sass: str) -> tuple[int, int] | None:
    """loop_loads of the innermost loop (a backward branch's body holding no other) whose
    global loads read the most bytes (the vector loop, where a kernel has a scalar one beside
    it); None where no loop loads."""
    ins = instructions(sass)
    where = {lab: i for i, (lab, _) in enumerate(ins) if lab}
    loops = []
    for i, (_, text) in enumerate(ins):
        m = _BRANCH.search(text)
        if m and where.get(m.group(1), i + 1) <= i:
            loops.append((where[m.group(1)], i))
    best = None
    for a, b in loops:
        if any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops):
            continue  # an outer loop: its inner ones are measured themselves
        got = loop_loads([t for lab, t in ins[a:b] if lab is None])
        # the most bytes; of equal bytes the wider loads (a vector loop beside a scalar one)
        if got[0] and (best is None or (got[2], got[2] / got[0]) > (best[2], best[2] / best[0])):
            best = got
    return best


def functions(sass: str) -> dict[str, str]:
    """Each kernel's part of nvdisasm's listing, by name."""
    parts = re.split(r"^\s*\.text\.(\S+):\s*$", sass, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def find_tool(name: str, where: str | None) -> str:
    if where:
        for d in where.split(os.pathsep):
            if (Path(d) / name).is_file():
                return str(Path(d) / name)
        raise SystemExit(f"kernel_sass: no {name} in {where}")
    found = shutil.which(name)
    if found:
        return found
    site = sysconfig.get_paths()["purelib"]
    for path in sorted(glob.glob(os.path.join(site, "nvidia", "*", "bin", name))):
        return path
    raise SystemExit(f"kernel_sass: {name} not found: pip install nvidia-cuda-nvcc-cu12 "
                     f"nvidia-cuda-nvdisasm (or a CUDA toolkit on PATH), or name it with --bin")


def assemble(source: str, arch: str, ptxas: str, nvdisasm: str) -> tuple[str, str]:
    """(ptxas's -v log, nvdisasm's listing) of one source compiled as the runtime compiles
    it (its base options and the fusion options)."""
    from cupy_backends.cuda.libs import nvrtc

    from xp_cuda._kernels import _runtime as rt
    from xp_cuda._kernels import fusion as kfusion
    prog = nvrtc.createProgram(source, "k.cu", (), ())
    try:
        nvrtc.compileProgram(prog, [f"-arch=compute_{arch[3:]}", *rt.BASE_OPTIONS,
                                    *rt._include_options(), *kfusion.OPTIONS])
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    with tempfile.TemporaryDirectory() as tmp:
        p_ptx, p_cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(p_ptx, "wb") as f:
            f.write(ptx.rstrip(b"\0") if isinstance(ptx, bytes) else ptx.encode())
        log = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", p_cubin, p_ptx],
                             capture_output=True, text=True, check=True).stderr
        listing = subprocess.run([nvdisasm, "-c", p_cubin], capture_output=True, text=True,
                                 check=True).stdout
    return log, listing


def reduction_sources(kind, dtype, shape, axes, strides=None) -> list[tuple[str, str]]:
    """(source, kernel name) of every program the eager reduction would compile (its tuned
    variants too), for an input of this layout."""
    import numpy as np

    from xp_cuda._kernels import fusion as F
    from xp_cuda._kernels import reduction as R
    x = np.zeros(1, dtype)
    if strides is None:
        x = np.lib.stride_tricks.as_strided(x, shape, _c_strides(shape, x.itemsize))
    else:
        x = np.lib.stride_tricks.as_strided(x, shape, strides)
    # x as _layout_launch reads it: its groups in the orientation's order, then merged
    axes = tuple(axes)
    perm = R.orientation(x.shape, x.strides, axes)
    if perm is not None:
        x, axes = x.transpose(perm), tuple(perm.index(a) for a in axes)
    m = R.merge_dims(x.shape, x.strides, axes)
    if m is not None:
        x = np.lib.stride_tricks.as_strided(x, m[0], m[1])
        axes = m[2]
    if kind in ("argmax", "argmin"):
        g = R.arg_graph(kind, dtype, x.shape, axes[0] if len(axes) == 1 else None, False)
    elif kind in ("var", "std"):
        g = R.moments_graph(kind, dtype, x.shape, axes, 0.0, False, dtype)
    else:  # the result dtype, as the backend asks (float32 products widen in the plan)
        acc = dtype
        if kind in ("sum", "prod") and np.dtype(dtype).kind in "biu":
            acc = "uint64" if np.dtype(dtype).kind == "u" else "int64"
        g = R.graph(kind, dtype, acc, x.shape, axes, False)
    return [(p.source, p.name) for p in F.programs(g[0], [g[1]], [x], 132, tune=True)]


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


FLIGHT_BYTES = 32  # fusion_plan.SCALAR_BYTES: the bytes a thread's step keeps in flight

# The benchmark's reduction layouts (benchmarks/bench_namespace.py, large) and a few dtypes
AUDIT = [(k, d, s, a) for d in ("float32", "float64", "int16", "int8", "bool")
         for k in ("sum", "prod", "max", "argmax", "var", "any")
         if (k == "any") == (d == "bool") and not (k == "var" and d[0] != "f")
         for s, a in (((8192, 8192), (0,)), ((8192, 8192), (1,)), ((8192, 8192), (0, 1)),
                      ((1 << 22, 64), (0,)), ((1 << 22, 64), (1,)), ((64, 1 << 20), (0,)))]


def report(kind, dtype, shape, axes, strides, arch, ptxas, nvdisasm, show=False) -> list:
    from tools.kernel_audit import audit_log
    rows = []
    for source, name in reduction_sources(kind, dtype, shape, axes, strides):
        log, listing = assemble(source, arch, ptxas, nvdisasm)
        info = {r[0]: r[1:] for r in audit_log(log)}  # (registers, frame, stores, loads)
        for fn, text in functions(listing).items():
            regs, _, spill, _ = info.get(fn, (-1, 0, 0, 0))
            rows.append((fn, regs, spill, main_loop(text)))
            if show:
                print(text)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", nargs="?")
    ap.add_argument("dtype", nargs="?")
    ap.add_argument("shape", nargs="?")
    ap.add_argument("axes", nargs="?")
    ap.add_argument("--strides")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--bin", help="folders holding ptxas and nvdisasm (joined by the path "
                                  "separator, ':')")
    ap.add_argument("--print", action="store_true", help="print the SASS too")
    ap.add_argument("--audit", action="store_true")
    args = ap.parse_args(argv)
    ptxas, nvdisasm = find_tool("ptxas", args.bin), find_tool("nvdisasm", args.bin)
    cases = AUDIT if args.audit else [(args.kind, args.dtype, eval(args.shape),
                                       eval(args.axes))]
    strides = eval(args.strides) if args.strides else None
    short = 0
    for kind, dtype, shape, axes in cases:
        for fn, regs, spill, loop in report(kind, dtype, shape, axes, strides, args.arch,
                                            ptxas, nvdisasm, args.print):
            loads = "no loop loads" if loop is None else \
                f"main loop {loop[0]} loads ({loop[2]} bytes), {loop[1]} ({loop[3]} bytes) " \
                f"before the first use"
            # a thread's step should hold SCALAR_BYTES in flight (fusion_plan)
            flag = loop is not None and loop[3] < min(loop[2], FLIGHT_BYTES)
            short += flag
            if flag or not args.audit:
                print(f"{kind} {dtype} {shape} {axes} {fn}: {regs} registers, {spill} bytes "
                      f"spilled, {loads}{'  <- too few bytes in flight' if flag else ''}")
    if args.audit:
        print(f"{short} kernels of the audit use a loaded value with fewer than "
              f"{FLIGHT_BYTES} bytes of their main loop's step in flight")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
