"""``xp-cuda`` (also ``python -m xp_cuda``): the command line.

    xp-cuda [--version] [info] [--json]     versions, devices, cache, revision (the default)
    xp-cuda check [--device D]              a kernel of each family run and compared with cpu
    xp-cuda warm [--device D]               every shipped kernel loaded for this machine's GPUs
    xp-cuda bench / conformance             the checkout's benchmarks and the official suite

Every failure a user can cause (no GPU, a bad device name, a closed pipe) ends in one line on
stderr and a non-zero exit, never a traceback: 1 when a check or a tool failed, 2 for a bad
command line or environment.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent  # the checkout, where there is one


class CliError(Exception):
    """A failure to report in one line (its message), with an exit status."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


# ---- info -------------------------------------------------------------------------------------
def _cache_summary() -> dict:
    from xp_cuda._kernels import _runtime as rt
    folder = rt.cache_dir()
    out: dict[str, Any] = {"folder": str(folder) if folder else None, "entries": 0, "bytes": 0,
           "shipped_archs": rt.shipped_archs()}
    if folder is not None and folder.is_dir():
        for p in folder.rglob("*"):
            if p.is_file():
                out["entries"] += 1
                out["bytes"] += p.stat().st_size
    return out


def _all_devices(xp) -> list:
    try:
        return xp.__array_namespace_info__().devices()
    except ValueError as e:  # a bad XP_CUDA_CPU_DEVICES: say it, in one line
        raise CliError(str(e)) from None


def _devices(xp) -> list:
    from xp_cuda._devices import cupy_module
    rows = []
    for d in _all_devices(xp):
        if d.kind == "cpu":
            rows.append({"device": str(d), "name": (platform.processor() or platform.machine())
                         + (" (simulated)" if d.index else ""),
                         "memory_gib": None, "free_gib": None, "compute_capability": None})
            continue
        cp = cupy_module()
        props = cp.cuda.runtime.getDeviceProperties(d.index)
        with cp.cuda.Device(d.index):
            free, total = cp.cuda.runtime.memGetInfo()
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        rows.append({"device": str(d), "name": name, "memory_gib": round(total / 2**30, 1),
                     "free_gib": round(free / 2**30, 1),
                     "compute_capability": f"{props['major']}.{props['minor']}"})
    return rows


def info_report() -> dict:
    """What ``xp-cuda info`` says, as data (``--json`` prints it for bug reports)."""
    import numpy as np

    import xp_cuda as xp
    from xp_cuda._devices import cupy_module
    cp = cupy_module()
    default = _default_device(xp)
    return {"xp_cuda": xp.__version__, "api_version": xp.__array_api_version__,
            "python": sys.version.split()[0], "numpy": np.__version__,
            "cupy": cp.__version__ if cp else None, "devices": _devices(xp),
            "default_device": str(default), "kernel_cache": _cache_summary()}


def _default_device(xp):
    try:
        return xp.__array_namespace_info__().default_device()
    except (ValueError, TypeError) as e:  # a bad XP_CUDA_DEFAULT_DEVICE: say it, in one line
        raise CliError(str(e)) from None  # (the message names the variable)


def cmd_info(args) -> int:
    report = info_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    c = report["kernel_cache"]
    print(f"xp_cuda {report['xp_cuda']}: Array API standard {report['api_version']} in force")
    print(f"Python {report['python']}, NumPy {report['numpy']}, "
          f"CuPy {report['cupy'] or 'not installed'}")
    print("devices:")
    for d in report["devices"]:
        if d["memory_gib"] is None:
            print(f"  {d['device']:8s} {d['name']} (NumPy)")
        else:
            print(f"  {d['device']:8s} {d['name']}, compute capability "
                  f"{d['compute_capability']}, {d['memory_gib']} GiB ({d['free_gib']} GiB free)")
    print(f"default device: {report['default_device']}  "
          f"(XP_CUDA_DEFAULT_DEVICE=cpu or cuda:N changes it)")
    print(f"kernel cache: {c['folder'] or 'none (unusable: kernels compile per process)'}, "
          f"{c['entries']} entries, {c['bytes'] / 2**20:.1f} MiB "
          f"(XP_CUDA_KERNEL_CACHE changes it); prebuilt for {', '.join(c['shipped_archs'])}")
    if not args.quiet:
        _demo(report["default_device"])
    return 0


def _demo(device_name: str) -> None:
    """A few lines of the standard at work on the default device (the rules, with errors)."""
    import xp_cuda as xp
    from xp_cuda._devices import parse_device
    dev = parse_device(device_name)
    x = xp.linspace(0.0, 1.0, 5, device=dev)
    y = xp.arange(5, dtype=xp.float32, device=dev)
    print()
    print(f"x = xp.linspace(0.0, 1.0, 5)            -> {x}")
    print(f"y = xp.arange(5, dtype=xp.float32)      -> {y}")
    print(f"x * y (float64 with float32 promotes)   -> {x * y}")
    print(f"y[y > 2] (boolean mask)                 -> {y[y > 2]}")
    for expr, f in (("xp.arange(3) + xp.ones(3)",
                     lambda: xp.arange(3, device=dev) + xp.ones(3, device=dev)),
                    ("xp.ones(2, dtype=xp.int8) + 2**40",
                     lambda: xp.ones(2, dtype=xp.int8, device=dev) + 2**40)):
        try:
            f()
        except (TypeError, OverflowError) as e:
            print(f"{expr:40s}-> {type(e).__name__}: {e}")


# ---- check ------------------------------------------------------------------------------------
def _families(xp):
    """(family, function of a device returning arrays) pairs: a kernel of each family, on
    random data (never zeros), compared element for element with the same call on cpu."""
    import numpy as np
    rng = np.random.default_rng(20261123)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    b = rng.standard_normal(300).astype(np.float32)
    i = rng.integers(0, 64, 50)
    n = rng.integers(-50, 50, 2000).astype(np.int64)

    def on(dev, v):
        return xp.asarray(v, device=dev)

    def softmax(t):
        e = xp.exp(t - xp.max(t, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)

    from xp_cuda.fusion import fuse
    fused = fuse(softmax)
    return [
        ("elementwise", lambda d: (xp.exp(on(d, a)) * 2.5 + on(d, b),)),
        ("reduction", lambda d: (xp.sum(on(d, a), axis=0), xp.max(on(d, a), axis=1),
                                 xp.std(on(d, a), axis=1))),
        ("scan", lambda d: (xp.cumulative_sum(on(d, n)),)),
        ("sort", lambda d: (xp.sort(on(d, a), axis=1), xp.argsort(on(d, n), stable=True))),
        ("set", lambda d: tuple(xp.unique_counts(on(d, n)))),
        ("searching", lambda d: (xp.searchsorted(xp.sort(on(d, n)), on(d, n[:99])),
                                 xp.nonzero(on(d, n) > 10)[0], on(d, a)[on(d, a) > 1.0])),
        ("gather", lambda d: (xp.take(on(d, a), on(d, i), axis=0),)),
        ("manipulation", lambda d: (xp.concat([on(d, a), on(d, a)], axis=1),
                                    xp.flip(on(d, a), axis=0))),
        ("vecdot", lambda d: (xp.vecdot(on(d, a), on(d, b)),)),
        ("linalg", lambda d: (xp.matmul(on(d, a), on(d, a).T),)),
        ("creation", lambda d: (xp.linspace(-1.0, 3.0, 1001, device=d),
                                xp.arange(3, 700, 7, device=d))),
        ("fusion", lambda d: (fused(on(d, a)),)),
    ]


def _same(got, want) -> bool:
    import numpy as np
    g, w = np.from_dlpack(got, device="cpu"), np.from_dlpack(want, device="cpu")
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if g.dtype.kind in "fc":  # summation order and transcendental functions differ in ulps:
        # a tolerance relative to the result's largest magnitude (a dot product near zero
        # carries the rounding of its large terms)
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        return bool(np.allclose(g, w, rtol=1e-5, atol=1e-5 * max(scale, 1e-30),
                                equal_nan=True))
    return bool(np.array_equal(g, w))


def cmd_check(args) -> int:
    import xp_cuda as xp
    from xp_cuda._devices import CPU, parse_device
    devices = [_parse(parse_device, args.device)] if args.device else [
        d for d in _all_devices(xp) if d.kind != "cpu"]
    if not devices:
        print("no usable CUDA GPU here: only cpu, which is the reference (nothing to compare)")
        return 0
    families = _families(xp)
    bad = 0
    for dev in devices:
        print(f"{dev}:")
        for name, f in families:
            try:
                ok = all(_same(g, w) for g, w in zip(f(dev), f(CPU), strict=True))
                verdict = "ok" if ok else "WRONG: differs from cpu"
            except Exception as e:  # the check reports every failure, of any kind
                ok, verdict = False, f"FAILED: {type(e).__name__}: {str(e).splitlines()[0]}"
            bad += not ok
            print(f"  {name:13s} {verdict}")
    total = len(families) * len(devices)
    print(f"{total - bad} of {total} families agree with cpu"
          + ("" if not bad else "; please report this with `xp-cuda info --json`"))
    return 1 if bad else 0


def _parse(parse_device, text):
    """--device's value, a device that exists here (else the one-line error)."""
    from xp_cuda._devices import check_device
    try:
        dev = parse_device(text)
        check_device(dev, "--device")
        return dev
    except (ValueError, TypeError) as e:
        raise CliError(str(e) if str(e).startswith("--device") else f"--device: {e}") from None


# ---- warm -------------------------------------------------------------------------------------
def cmd_warm(args) -> int:
    import xp_cuda as xp
    from xp_cuda._devices import cupy_module, parse_device
    from xp_cuda._kernel_set import units
    from xp_cuda._kernels import load_kernel
    from xp_cuda._kernels._runtime import KernelCompileError
    devices = [_parse(parse_device, args.device)] if args.device else [
        d for d in _all_devices(xp) if d.kind != "cpu"]
    devices = [d for d in devices if d.kind != "cpu"]
    if not devices:
        raise CliError("warm: no usable CUDA GPU here (kernels are loaded for a GPU's "
                       "architecture); on a GPU machine run `xp-cuda warm`", 1)
    from tqdm import tqdm
    cp = cupy_module()
    us = units()
    for dev in devices:
        with cp.cuda.Device(dev.index):
            for src, opts, name in tqdm(us, desc=f"{dev}", unit="kernel", file=sys.stderr,
                                        disable=args.quiet):
                try:
                    load_kernel(src, name, opts)
                except KernelCompileError as e:  # a bug of ours: say which kernel, briefly
                    raise CliError(f"warm: {dev}: {e}; please report it with "
                                   f"`xp-cuda info --json`", 1) from None
    print(f"{len(us)} kernels ready on {', '.join(map(str, devices))} (shipped, or compiled "
          f"once into the kernel cache); others compile on first use")
    return 0


# ---- the checkout's tools -----------------------------------------------------------------------
def _checkout_script(rel: str, what: str) -> Path:
    path = ROOT / rel
    if not path.is_file():
        raise CliError(f"{what} runs from a source checkout of xp_cuda (it needs {rel}); "
                       f"clone the repository and run it there")
    return path


def cmd_bench(args) -> int:
    """The suite's script (its table on stdout, its progress on stderr) writing JSON into
    --out; then the namespace suite's plots (benchmarks/plot.py) and, with --compare, the
    change from an earlier run (tools/bench_compare.py)."""
    folder = ROOT / "benchmarks"
    suites = sorted(p.stem[6:] for p in folder.glob("bench_*.py"))
    if suites and args.suite not in suites:
        raise CliError(f"bench: no suite {args.suite!r}; the suites are {', '.join(suites)}")
    script = _checkout_script(f"benchmarks/bench_{args.suite}.py", "bench")
    out = Path(args.out)
    if args.compare and not Path(args.compare).exists():
        raise CliError(f"bench: --compare {args.compare}: no such file or folder")
    status = subprocess.call([sys.executable, str(script), "--out", str(out), *args.rest])
    if status != 0:
        return status
    made = out / f"{args.suite}.json"
    if args.suite == "namespace" and made.is_file():
        if subprocess.call([sys.executable, str(folder / "plot.py"), str(made),
                            str(out)]) != 0:
            print("xp-cuda: bench: no plots (pip install -e .[plots] for matplotlib)",
                  file=sys.stderr)
    if args.compare:
        old = Path(args.compare)
        old_dir = old if old.is_dir() else old.parent
        return subprocess.call([sys.executable, str(_checkout_script(
            "tools/bench_compare.py", "bench --compare")), str(old_dir), str(out)])
    return 0


def cmd_conformance(args) -> int:
    script = _checkout_script("array_api_tests_config/run.py", "conformance")
    return subprocess.call([sys.executable, str(script), *args.rest])


# ---- the parser ---------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    from xp_cuda._version import version
    ap = argparse.ArgumentParser(
        prog="xp-cuda", description="xp_cuda, the Array API standard on NVIDIA GPUs: "
        "what is here, whether it works, and its kernels ready.")
    ap.add_argument("--version", action="version", version=f"xp_cuda {version()}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="versions, devices, kernel cache, revision (the default)")
    p.add_argument("--json", action="store_true", help="the report as JSON, for bug reports")
    p.add_argument("--quiet", action="store_true", help="no demonstration lines")
    p.set_defaults(run=cmd_info)
    p = sub.add_parser("check", help="a kernel of each family on every GPU, compared with cpu")
    p.add_argument("--device", help="only this device (cuda:N)")
    p.set_defaults(run=cmd_check)
    p = sub.add_parser("warm", help="load every shipped kernel for this machine's GPUs")
    p.add_argument("--device", help="only this device (cuda:N)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=cmd_warm)
    p = sub.add_parser("bench", help="a benchmark of the checkout (benchmarks/bench_SUITE.py)")
    p.add_argument("suite", nargs="?", default="namespace",
                   help="namespace (default), fusion, workloads, reduction, ...")
    p.add_argument("--out", default="bench-out",
                   help="the folder for JSON (and the namespace suite's PNG plots)")
    p.add_argument("--compare", metavar="OLD",
                   help="an earlier run's folder (or a JSON in it): the change, row by row")
    # (any other option goes to the benchmark itself: see main's parse_known_args)
    p.set_defaults(run=cmd_bench)
    p = sub.add_parser("conformance", help="the official array-api-tests suite "
                       "(array_api_tests_config/run.py)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the runner's options (SUITE ...)")
    p.set_defaults(run=cmd_conformance)
    return ap


COMMANDS = ("info", "check", "warm", "bench", "conformance")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a in COMMANDS or a in ("-h", "--help", "--version") for a in argv):
        argv.insert(0, "info")  # the default command (its options too: xp-cuda --json)
    ap = parser()
    args, unknown = ap.parse_known_args(argv)
    if args.command == "bench":
        args.rest = unknown  # the benchmark's own options (--only, --quick, --allow-cpu, ...)
    elif unknown:
        ap.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        status = args.run(args)
        sys.stdout.flush()
        return status
    except CliError as e:
        print(f"xp-cuda: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:  # `xp-cuda info | head`: the reader left; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("xp-cuda: interrupted", file=sys.stderr)
        return 130
