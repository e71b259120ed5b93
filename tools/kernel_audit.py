"""Every shipped kernel's registers, stack frame and spills, read from ptxas (through NVRTC).

    python tools/kernel_audit.py [--arch sm_90] [--processes N] [--all]

A kernel with a stack frame keeps some of its values in local memory, which every thread then
writes and reads: the strided elementwise kernels built their geometry struct in registers but
read one field at an index known only at run time, so the whole struct went to local memory
(264 bytes a thread; x[::2] + y[::2] ran 1.4x slower). Prints the kernels that have a stack
frame or spills (``--all``: every kernel); ``--strict`` exits 1 if any has one (libdevice's
float64 sin/cos/tan keep a 40-byte frame for their rare huge-argument path). No GPU needed.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


def audit_log(log: str) -> list[tuple[str, int, int, int, int]]:
    """(kernel, registers, stack frame, spill stores, spill loads) per entry of a ptxas log."""
    out, name, frame = [], None, None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            name, frame = m.group(1), None
            continue
        m = _FRAME.search(line)
        if m and name:
            frame = tuple(int(v) for v in m.groups())
            continue
        m = _REGS.search(line)
        if m and name and frame is not None:
            out.append((name, int(m.group(1)), *frame))
            name = None
    return out


def strided_units():
    """The strided and tiled elementwise layouts, compiled on first use (not shipped): one per
    arity and scalar position, for a 4-, 8- and 16-byte dtype."""
    from xp_cuda._kernels import elementwise as E
    out = []
    for dt in ("float32", "float64", "complex128"):
        for fname, dts, lay in (("add", (dt, dt), "gg"), ("add", (dt, dt), "gs"),
                                ("add", (dt, dt), "sg"), ("negative", (dt,), "g"),
                                ("add", (dt, dt), "tg"), ("add", (dt, dt), "gt"),
                                ("add", (dt, dt), "ts"), ("negative", (dt,), "t")):
            out.append((E.layout_unit(fname, dts, dt, dt, lay), (),
                        E.kernel_name(fname, dts, lay)))
    return out


def _one(job):
    from cupy_backends.cuda.libs import nvrtc

    from xp_cuda._kernels import _runtime as rt
    src, opts, name, arch = job
    prog = nvrtc.createProgram(src, f"{name}.cu", (), ())
    try:
        nvrtc.compileProgram(prog, [f"-arch={arch}", *rt.BASE_OPTIONS, *rt._include_options(),
                                    *opts, "-Xptxas=-v"])
        return audit_log(nvrtc.getProgramLog(prog))
    finally:
        nvrtc.destroyProgram(prog)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--processes", type=int, default=0)
    ap.add_argument("--all", action="store_true", help="print every kernel, not only those "
                                                       "with a stack frame or spills")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any kernel has a stack "
                                                          "frame or spills")
    args = ap.parse_args(argv)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from tools.prebuild import units
    jobs = [(s, o, n, args.arch) for s, o, n in units() + strided_units()]
    rows = []
    with ProcessPoolExecutor(max_workers=args.processes or os.cpu_count() or 1,
                             mp_context=get_context("spawn")) as pool:
        for found in pool.map(_one, jobs, chunksize=4):
            rows.extend(found)
    rows = sorted(set(rows))
    bad = [r for r in rows if r[2] or r[3] or r[4]]
    for name, regs, frame, st, ld in (rows if args.all else bad):
        print(f"{name:60s} regs {regs:3d}  stack {frame:5d}  spill st {st:4d} ld {ld:4d}")
    print(f"{len(rows)} kernels from {len(jobs)} sources; {len(bad)} with a stack frame or "
          f"spills")
    return 1 if bad and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
