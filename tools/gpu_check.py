"""Prove the project on a GPU machine with no network, in one command.

    python tools/gpu_check.py OUTDIR [--suite SUITE_PATH] [--max-examples N] [--skip-bench]

Steps: environment, a new user's first run (tools/first_run.py), a new fused program's first
call (tools/fuse_first_call.py), the kernels' registers and stack frames
(tools/kernel_audit.py), warming the kernel cache, the CUDA tests (pytest -m cuda), the
official suite on cuda:0 (with --suite), every benchmarks/bench_*.py. Each step logs to OUTDIR/<step>.log; the summary goes to
OUTDIR/summary.json and stdout. Later steps run even when one fails; exit 1 if any failed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, XP_CUDA_DEFAULT_DEVICE="cuda:0",
           PYTHONPATH=os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH")] if p))


def run_step(out: Path, step: str, cmd: list[str], timeout: float | None = None) -> dict:
    """Run ``cmd`` from the project root, tee its output into OUTDIR/<step>.log."""
    print(f"\n=== {step}: {' '.join(cmd)}", flush=True)
    t0 = time.time()
    with open(out / f"{step}.log", "w") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        try:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, bufsize=1)
            lines = []
            for line in proc.stdout:
                sys.stdout.write(line)
                log.write(line)
                lines.append(line)
            rc = proc.wait(timeout=timeout)
        except Exception as e:  # e.g. missing interpreter; record and go on
            log.write(f"{e!r}\n")
            return {"ok": False, "rc": None, "error": repr(e), "seconds": time.time() - t0}
    return {"ok": rc == 0, "rc": rc, "seconds": round(time.time() - t0, 1),
            "output": "".join(lines)}


def pytest_counts(text: str) -> dict[str, int]:
    lines = [ln for ln in text.splitlines()
             if re.search(r"\d+ (passed|failed|skipped|errors?|deselected)\b", ln)]
    counts = {}
    if lines:
        for n, w in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)",
                               lines[-1]):
            counts["error" if w.startswith("error") else w] = int(n)
    return counts


def environment(out: Path) -> dict:
    info: dict = {"python": sys.version.split()[0], "executable": sys.executable}
    ok = True
    try:
        import numpy
        info["numpy"] = numpy.__version__
    except Exception as e:
        info["numpy"], ok = repr(e), False
    try:
        import cupy as cp
        info["cupy"] = cp.__version__
        n = cp.cuda.runtime.getDeviceCount()
        gpus = []
        for i in range(n):
            name = cp.cuda.runtime.getDeviceProperties(i)["name"]
            gpus.append(name.decode() if isinstance(name, bytes) else str(name))
        info["gpus"] = gpus
        info["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        info["cuda_driver"] = cp.cuda.runtime.driverGetVersion()
        ok = ok and n > 0
    except Exception as e:
        info["cupy_error"], ok = repr(e), False
    if shutil.which("nvidia-smi"):
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        info["nvidia_smi"] = (r.stdout or r.stderr).strip().splitlines()
    try:
        import xp_cuda
        info["xp_cuda_default_device"] = str(getattr(xp_cuda, "__array_namespace_info__")()
                                             .default_device())
    except Exception as e:
        info["xp_cuda_error"], ok = repr(e), False
    (out / "environment.log").write_text(json.dumps(info, indent=2) + "\n")
    print("=== environment\n" + json.dumps(info, indent=2))
    return {"ok": ok, **info}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--suite", type=Path, help="array-api-tests checkout (e.g. .aat/array-api-tests)")
    ap.add_argument("--max-examples", type=int, default=20)
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args(argv)
    out = args.outdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    os.environ["XP_CUDA_DEFAULT_DEVICE"] = "cuda:0"  # for the in-process environment step
    py = sys.executable
    summary: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S")}

    summary["environment"] = environment(out)

    # A new user's wait, measured before anything is warmed (it uses its own empty cache).
    summary["first_run"] = run_step(out, "first_run", [py, str(ROOT / "tools" / "first_run.py"),
                                                       "--json", str(out / "first_run.json")])
    summary["first_run"].pop("output", None)
    # ... and a new fused program's first call, per phase (issue #17: 0.3 s or less)
    summary["fuse_first_call"] = run_step(
        out, "fuse_first_call", [py, str(ROOT / "tools" / "fuse_first_call.py"), "--device",
                                 "cuda:0", "--json", str(out / "fuse_first_call.json")])
    summary["fuse_first_call"].pop("output", None)
    # Registers, stack frames and spills of every shipped kernel (informational: see the
    # tool's docstring for the kernels that keep a frame by design)
    summary["kernel_audit"] = run_step(out, "kernel_audit",
                                       [py, str(ROOT / "tools" / "kernel_audit.py")])
    summary["kernel_audit"].pop("output", None)

    # Compile every generated elementwise kernel for this GPU in parallel first, so the tests
    # below measure behaviour, not one-at-a-time NVRTC compiles.
    summary["warm_kernels"] = run_step(out, "warm_kernels",
                                       [py, str(ROOT / "tools" / "warm_cache.py")])
    summary["warm_kernels"].pop("output", None)

    # With pytest-xdist, one worker a core (at most 16): most of the half's time is NVRTC
    # compiling the layouts the tests make, and those compiles run side by side
    # (tests/conftest.py runs a fills_gpu test alone).
    workers = (["-n", str(min(16, os.cpu_count() or 1))]
               if importlib.util.find_spec("xdist") is not None else [])
    r = run_step(out, "cuda_tests", [py, "-m", "pytest", "-m", "cuda", "-q", *workers,
                                     "-p", "no:cacheprovider", "tests"])
    counts = pytest_counts(r.pop("output"))
    # A run where every cuda test skipped proves nothing on a GPU machine.
    if counts.get("passed", 0) == 0:
        r["ok"], r["note"] = False, "no CUDA test passed"
    summary["cuda_tests"] = {**r, **counts}

    if args.suite:
        jf = out / "conformance_cuda.json"
        r = run_step(out, "conformance_cuda",
                     [py, "array_api_tests_config/run.py", str(args.suite.resolve()),
                      "--device", "cuda:0", "--max-examples", str(args.max_examples),
                      "--json", str(jf)])
        # run.py ends with "N passed, N failed, N skipped" then "(N xfailed, N xpassed, N errors)"
        lines = r.pop("output").strip().splitlines()
        counts = {k: v for ln in lines[-2:] for k, v in pytest_counts(ln).items()}
        # Without the JSON (pytest-json-report missing), pytest's short summary still names them.
        r["failing"] = sorted({ln.split()[1] for ln in lines
                               if ln.startswith(("FAILED ", "ERROR ")) and len(ln.split()) > 1})
        try:
            report = json.loads(jf.read_text())
            r["failing"] = sorted(t["nodeid"] for t in report.get("tests", [])
                                  if t.get("outcome") in ("failed", "error"))
            r["xpassed_ids"] = sorted(t["nodeid"] for t in report.get("tests", [])
                                  if t.get("outcome") == "xpassed")
        except Exception as e:
            r["json_error"] = repr(e)
        summary["conformance_cuda"] = {**r, **counts}

    if not args.skip_bench:
        for bench in sorted((ROOT / "benchmarks").glob("bench_*.py")):
            r = run_step(out, bench.stem, [py, str(bench), "--out", str(out)])
            r.pop("output")
            summary[bench.stem] = r

    steps = {k: v for k, v in summary.items() if isinstance(v, dict)}
    summary["failed_steps"] = [k for k, v in steps.items() if not v.get("ok")]
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("\n=== summary")
    for k, v in steps.items():
        extra = ", ".join(f"{c}={v[c]}" for c in ("passed", "failed", "skipped", "error",
                                                   "xfailed", "xpassed") if isinstance(v.get(c), int))
        print(f"{'ok  ' if v.get('ok') else 'FAIL'} {k} {extra}")
    print(f"written: {out / 'summary.json'}")
    return 1 if summary["failed_steps"] else 0


if __name__ == "__main__":
    sys.exit(main())
