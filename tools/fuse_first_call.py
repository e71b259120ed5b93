"""Where the first call of a new fused program spends its time (issue #17: 0.3 s or less).

    python tools/fuse_first_call.py [--programs softmax,layer_norm,lse0,rownorm,chain30]
                                    [--shape 64,1000] [--arch sm_90] [--units]
                                    [--options "--Ofast-compile=max"] [--in-process]

Each program runs in a NEW Python process (a first call pays NVRTC's first compile there),
which prints, in milliseconds:
  trace    the tracer running the function (xp_cuda.fusion._trace.trace)
  plan     fusion.plan_program (lowering, stages, the row kernel's plan)
  render   the kernels' sources, as the runtime builds them (one unit, see fusion.ONE_UNIT)
  nvrtc    compiling that source to a cubin for --arch, the runtime's options; split by
           NVRTC's own -time report into frontend (C++ parse: mostly the headers), nvvm (the
           optimizer) and ptxas; "first" is the process's first compile, NVRTC's library
           included (load: the first NVRTC call, already paid where any kernel was looked up
           in the cache, which computes its key with NVRTC's version)
  store    writing the cubin into a (temporary) disk cache, as the runtime does
  total    the sum, what a first call on a GPU waits for besides loading the module
With a GPU (--device cuda:N, the default where one exists) another new process runs the real
first call of the fused function, with XP_CUDA_KERNEL_CACHE a fresh temporary folder (the
program is new; every other kernel is warmed first by the unfused call), synchronised: its
wall time, the NVRTC and module-load time inside it, and a second call.

Programs (float32, --shape (P, M)): softmax over the last axis, layer norm with a scale,
log-sum-exp over axis 0, x / vector_norm(x, axis=1, keepdims=True) (benchmarks/bench_fusion.py
--whole-only), and chainD: D steps x = x * 1.0001 + 0.5, then softmax (the benchmark's
first-call row draws D from 3..59).

--units also times the other ways to compile a multi-kernel program: one NVRTC program per
kernel one after another, and in parallel threads (the runtime uses one unit: fusion.ONE_UNIT).
--options adds NVRTC options (e.g. --options=--Ofast-compile=mid: faster, but it may change
the SASS, so only a GPU run can say whether the kernels stay as fast; the runtime adds it only
where xp_cuda._kernels.fusion.FAST_COMPILE is set; the real first call on a GPU sets it from
an --Ofast-compile given here).
Runs without a GPU (NVRTC only). Never asserts a time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("softmax", "layer_norm", "lse0", "rownorm", "chain30")


def _functions(xp):
    """The programs: bench_fusion's whole-program cases (one definition of each), and a chain
    of ``depth`` steps x * 1.0001 + 0.5 before a softmax."""
    bench = str(ROOT / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from bench_fusion import _whole_cases
    softmax, layer_norm, lse0, rownorm, _ = _whole_cases(xp)

    def chain(depth):
        def f(x):
            for _ in range(depth):
                x = x * 1.0001 + 0.5
            return softmax(x)
        return f
    return {"softmax": softmax, "layer_norm": layer_norm, "lse0": lse0, "rownorm": rownorm,
            "chain": chain}


def _program(xp, name, shape, device):
    """(the function, its arguments on ``device``, the device) of program ``name``."""
    import numpy as np

    from xp_cuda._devices import parse_device
    fns = _functions(xp)
    f = fns["chain"](int(name[5:])) if name.startswith("chain") else fns[name]
    dev = parse_device(device)
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal(shape, dtype=np.float32), device=dev)
    args = (x, xp.asarray(rng.random(shape[-1], dtype=np.float32) + 0.5, device=dev)) \
        if name == "layer_norm" else (x,)
    return f, args, dev


def _nvrtc_phases(path) -> dict:
    """NVRTC's -time report (CSV: file, phase, value, unit) as {phase: ms}."""
    names = {"CUDA C++ Frontend": "frontend", "NVVM Optimizer": "nvvm",
             "PTX Translation": "ptxas"}
    out = {}
    try:
        lines = Path(path).read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            key = names.get(parts[1], parts[1])
            out[key] = out.get(key, 0.0) + float(parts[2])
    return out


def child(name: str, shape, arch: str, extra: tuple, units: bool, device: str) -> dict:
    """One program's breakdown (this process: a new one, unless --in-process)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import xp_cuda as xp
    from xp_cuda._kernels import _runtime as R
    from xp_cuda._kernels import fusion as F
    from xp_cuda._kernels.fusion_ir import Graph
    from xp_cuda.fusion import _trace
    from xp_cuda.fusion._fuse import _Layout

    ms = 1e3
    f, args, dev = _program(xp, name, shape, device)
    row = {"program": name, "shape": list(shape)}

    t0 = time.perf_counter()
    trace, outs, *_ = _trace.trace(f, args, {}, dev)
    t1 = time.perf_counter()
    lays = [_Layout(a._data) for a in args]
    plan = F.plan_program(trace, outs, lays, 132)
    t2 = time.perf_counter()
    # the Programs fused_launch builds (small arrays: no vector shapes to tune)
    if plan.rows is not None:
        progs = [F.RowProgram(trace, plan, list(plan.outs), f"{F.KERNEL}0")]
    elif len(plan.stages) == 1:
        st = plan.stages[0]
        progs = F.programs(Graph(list(st.inputs), trace.uses), list(st.outs), lays, 132,
                           False, const_params=True)
        if hasattr(F, "one_unit"):  # (a checkout before one_unit: a unit per kernel)
            F.one_unit(progs)
    elif hasattr(F, "staged_programs"):
        progs = [p for *_, ps in F.staged_programs(trace, plan, lays, 132, lambda m: False)
                 for p in ps]
    else:
        progs = F.stage_programs(trace, plan, lays, 132)
    t3 = time.perf_counter()
    row.update(kernels=len(progs), units=len({p.source for p in progs}),
               trace=(t1 - t0) * ms, plan=(t2 - t1) * ms, render=(t3 - t2) * ms)

    tmp = Path(tempfile.mkdtemp(prefix="xp_fuse_first_"))
    opts = tuple(F.OPTIONS) + tuple(extra)
    t4 = time.perf_counter()
    from cupy_backends.cuda.libs import nvrtc
    nvrtc.getVersion()  # the library's load (a GPU process paid it computing cache keys)
    t5 = time.perf_counter()
    row["nvrtc_load"] = (t5 - t4) * ms
    sources = list(dict.fromkeys(p.source for p in progs))
    phases = {}
    cubins = []
    t6 = time.perf_counter()
    for k, src in enumerate(sources):
        report = tmp / f"time{k}.csv"
        cubins.append(R._compile(src, f"fused{k}.cu", arch, opts + (f"-time={report}",),
                                 "cubin"))
        for ph, v in _nvrtc_phases(report).items():
            phases[ph] = phases.get(ph, 0.0) + v
    t7 = time.perf_counter()
    row["nvrtc"] = (t7 - t6) * ms
    row.update(phases)
    for k, c in enumerate(cubins):
        R.write_entry(tmp / f"entry{k}.cubin", c)
    t8 = time.perf_counter()
    row["store"] = (t8 - t7) * ms
    row["total"] = row["trace"] + row["plan"] + row["render"] + row["nvrtc"] + row["store"]
    # the same source again in this warm process: the fixed first-compile cost is the gap
    t9 = time.perf_counter()
    for src in sources:
        R._compile(src, "again.cu", arch, opts, "cubin")
    row["nvrtc_again"] = (time.perf_counter() - t9) * ms
    if units and len(progs) > 1:  # the other ways: a unit per kernel, in turn or in threads
        singles = [F.translation_unit([p]) for p in progs]
        t = time.perf_counter()
        for k, s in enumerate(singles):
            R._compile(s, f"one{k}.cu", arch, opts, "cubin")
        row["units_in_turn"] = (time.perf_counter() - t) * ms
        t = time.perf_counter()
        with ThreadPoolExecutor(len(singles)) as pool:
            list(pool.map(lambda s: R._compile(s, "thr.cu", arch, opts, "cubin"), singles))
        row["units_in_threads"] = (time.perf_counter() - t) * ms
        t = time.perf_counter()
        R._compile(F.translation_unit(progs), "all.cu", arch, opts, "cubin")
        row["one_unit"] = (time.perf_counter() - t) * ms

    return row


def gpu_child(name: str, shape, device: str, options=()) -> dict:
    """The real first call on a GPU, in a process of its own: a fresh kernel cache folder
    (the program is new), every other kernel warmed by the unfused call first; the time
    NVRTC took inside it (the runtime's _compile, wrapped) and the module loads beside.
    An --Ofast-compile=LEVEL among ``options`` sets fusion.FAST_COMPILE to LEVEL here."""
    import time

    import cupy as cp

    import xp_cuda as xp
    from xp_cuda._kernels import fusion as F
    for o in options:
        if o.startswith("--Ofast-compile="):
            F.FAST_COMPILE = o.split("=", 1)[1]
    from xp_cuda._kernels import _runtime as R
    from xp_cuda.fusion import fuse

    ms = 1e3
    f, args, dev = _program(xp, name, shape, device)
    os.environ[R.CACHE_ENV] = tempfile.mkdtemp(prefix="xp_fuse_first_gpu_")
    f(*args)  # the unfused program: the eager kernels it needs are loaded now
    cp.cuda.Device().synchronize()
    spent = {"compile": 0.0, "load": 0.0}

    def timed(fn, key):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.perf_counter() - t
        return wrapper
    R._compile = timed(R._compile, "compile")
    R._load_module = timed(R._load_module, "load")
    g = fuse(f)
    t = time.perf_counter()
    g(*args)
    cp.cuda.Device().synchronize()
    first = time.perf_counter() - t
    t = time.perf_counter()
    g(*args)
    cp.cuda.Device().synchronize()
    return {"program": name, "gpu_first_call": first * ms, "gpu_nvrtc": spent["compile"] * ms,
            "gpu_module_load": spent["load"] * ms,
            "gpu_second_call": (time.perf_counter() - t) * ms, "device": str(dev)}


COLUMNS = ("kernels", "units", "trace", "plan", "render", "nvrtc_load", "nvrtc", "frontend",
           "nvvm", "ptxas", "store", "total", "nvrtc_again", "units_in_turn", "units_in_threads",
           "one_unit", "gpu_first_call", "gpu_nvrtc", "gpu_module_load", "gpu_second_call")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--shape", default="64,1000")
    ap.add_argument("--arch", default="sm_90", help="NVRTC target (a cubin, as the runtime)")
    ap.add_argument("--options", default="", help="extra NVRTC options (never the runtime's)")
    ap.add_argument("--units", action="store_true", help="also time a unit per kernel")
    ap.add_argument("--device", default=None, help="cpu, or cuda:N for the real first call")
    ap.add_argument("--in-process", action="store_true", help="no new process per program")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gpu-child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    shape = tuple(int(s) for s in a.shape.split(","))
    extra = tuple(a.options.split())
    device = a.device
    if device is None:
        from xp_cuda._devices import cuda_device_count
        device = "cuda:0" if cuda_device_count() > 0 else "cpu"
    if a.child:
        print(json.dumps(child(a.child, shape, a.arch, extra, a.units, device)))
        return 0
    if a.gpu_child:
        print(json.dumps(gpu_child(a.gpu_child, shape, device, extra)))
        return 0
    rows = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    for name in a.programs.split(","):
        if a.in_process:
            row = child(name, shape, a.arch, extra, a.units, device)
        else:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--shape",
                   a.shape, "--arch", a.arch, f"--options={a.options}", "--device", device]
            if a.units:
                cmd.append("--units")
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
            if res.returncode != 0:
                print(f"{name}: failed\n{res.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
        if device.startswith("cuda"):  # the real first call, in a process of its own
            cmd = [sys.executable, str(Path(__file__).resolve()), "--gpu-child", name,
                   "--shape", a.shape, "--device", device, f"--options={a.options}"]
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT))
            if res.returncode != 0:
                print(f"{name} on {device}: failed\n{res.stderr[-2000:]}", file=sys.stderr)
            else:
                row.update(json.loads(res.stdout.strip().splitlines()[-1]))
        rows.append(row)
    cols = [c for c in COLUMNS if any(c in r for r in rows)]
    print(f"ms per step; {a.arch}; NVRTC options +{list(extra)}; shape {shape}; device {device}")
    print(f"{'program':12s}" + "".join(f"{c:>{max(9, len(c) + 1)}s}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            w = max(9, len(c) + 1)
            cells.append(f"{'':>{w}s}" if v is None else
                         f"{v:{w}d}" if isinstance(v, int) else f"{v:{w}.1f}")
        print(f"{r['program']:12s}" + "".join(cells))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
