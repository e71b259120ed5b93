"""Cubed's own test suite on NumPy and on xp_cuda.compat, side by side.

Cubed ships its tests inside the package (``cubed/tests``). This runs them twice, each in a
subprocess of its own (Cubed reads its backend once, when first imported): once with NumPy as
the backend (Cubed's default) and once with ``CUBED_BACKEND_ARRAY_API_MODULE=xp_cuda.compat``.
It prints passed/failed/skipped for each, the share of the tests passing on NumPy that pass on
xp_cuda too (the goal of issue #20: at least 95%), and the tests that pass on NumPy but not on
xp_cuda, grouped by their error (largest group first)::

    /path/to/py312/bin/python tools/cubed_suite.py            # both, one after the other
    python tools/cubed_suite.py --backend compat -k mean      # one backend, a subset
    python tools/cubed_suite.py --json out.json               # the figures, for a report
    python tools/cubed_suite.py --workdir d --reuse numpy     # NumPy's results of a former run

Cubed's test extra must be installed (``pip install "cubed[test]"``; the graph tests also want
Graphviz's ``dot``). The tests marked ``cloud`` (they write to Cubed's S3 bucket) are left out.
The device is xp_cuda's default (``XP_CUDA_DEFAULT_DEVICE`` pins it).
Exits 0 when the ratio reaches ``--goal`` (0.95), 1 otherwise.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

BACKENDS = {"numpy": None, "compat": "xp_cuda.compat"}


def run_suite(backend: str, python: str, extra: list[str], workdir: Path,
              timeout: float) -> dict:
    """Run cubed.tests with ``backend``; its outcome per test id, counts and duration."""
    env = dict(os.environ)
    env.pop("CUBED_BACKEND_ARRAY_API_MODULE", None)
    if BACKENDS[backend]:
        env["CUBED_BACKEND_ARRAY_API_MODULE"] = BACKENDS[backend]
    junit = workdir / f"{backend}.xml"
    log = workdir / f"{backend}.log"
    # -m "not cloud": the tests marked cloud write to Cubed's own S3 bucket (cubed-unittest);
    # they are never run here (no credentials, and no network but the package index)
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "cubed.tests",
           "-m", "not cloud", f"--junitxml={junit}", "-o", "junit_family=xunit2", *extra]
    t0 = time.perf_counter()
    with open(log, "w") as out:
        try:
            rc = subprocess.run(cmd, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = -1
    return read_suite(backend, workdir, rc, time.perf_counter() - t0)


def read_suite(backend: str, workdir: Path, rc: int | None = None,
               seconds: float | None = None) -> dict:
    """The results of a run of ``backend`` whose files are in ``workdir``."""
    junit = workdir / f"{backend}.xml"
    outcomes = _read_junit(junit) if junit.exists() else {}
    if seconds is None and junit.exists():
        suite = ET.parse(junit).getroot().find("testsuite")
        seconds = float(suite.get("time", "nan")) if suite is not None else None
    counts = collections.Counter(o for o, _ in outcomes.values())
    return {"backend": backend, "returncode": rc,
            "seconds": None if seconds is None else round(seconds, 1),
            "log": str(workdir / f"{backend}.log"), "passed": counts["passed"],
            "failed": counts["failed"], "errors": counts["error"],
            "skipped": counts["skipped"], "outcomes": outcomes}


def _read_junit(path: Path) -> dict[str, tuple[str, str]]:
    """test id -> (passed | failed | error | skipped, the first line of its message)."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or child.text or "").strip()
                break
        out[test_id] = (outcome, message.splitlines()[0] if message else "")
    return out


def _group_key(message: str) -> str:
    """An error message with its particulars (numbers, quoted names, shapes) blurred, so that
    one cause is one group."""
    key = re.sub(r"0x[0-9a-f]+", "0x..", message)
    key = re.sub(r"\(\d+(, \d+)*,?\)", "(shape)", key)
    key = re.sub(r"\d+", "N", key)
    return key[:160]


def report(results: dict[str, dict], goal: float, show: int) -> float | None:
    print(f"{'backend':<8} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} "
          f"{'seconds':>8}")
    for r in results.values():
        print(f"{r['backend']:<8} {r['passed']:>7} {r['failed']:>7} {r['errors']:>7} "
              f"{r['skipped']:>8} {r['seconds'] if r['seconds'] is not None else '?':>8}")
    if set(results) != set(BACKENDS):
        return None
    np_, xp_ = results["numpy"], results["compat"]
    lost = {t: xp_["outcomes"].get(t, ("missing", "")) for t, (o, _) in np_["outcomes"].items()
            if o == "passed" and xp_["outcomes"].get(t, ("missing", ""))[0] != "passed"}
    gained = [t for t, (o, _) in xp_["outcomes"].items()
              if o == "passed" and np_["outcomes"].get(t, ("",))[0] != "passed"]
    both = np_["passed"] - len(lost)
    ratio = both / np_["passed"] if np_["passed"] else 0.0
    print(f"\nof the {np_['passed']} tests that pass on NumPy, {both} pass on xp_cuda.compat: "
          f"ratio {ratio:.3f} (goal {goal:.2f}: {'met' if ratio >= goal else 'NOT met'})")
    print(f"passing on NumPy but not on xp_cuda.compat: {len(lost)}; the reverse: {len(gained)}")
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for t, (o, msg) in lost.items():
        groups[f"[{o}] {_group_key(msg)}"].append(t)
    for key, tests in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:show]:
        print(f"\n{len(tests):4d}  {key}")
        for t in tests[:4]:
            print(f"        {t}")
        if len(tests) > 4:
            print(f"        ... and {len(tests) - 4} more")
    return ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter with cubed and xp_cuda installed (default: this one)")
    ap.add_argument("-k", default=None, help="pytest -k expression (a subset of the suite)")
    ap.add_argument("--goal", type=float, default=0.95)
    ap.add_argument("--groups", type=int, default=15, help="failure groups to show")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per backend")
    ap.add_argument("--workdir", default=None, help="where logs and JUnit files go "
                    "(default: a new temporary folder)")
    ap.add_argument("--reuse", nargs="*", default=[], choices=list(BACKENDS),
                    help="read these backends' results from an earlier run in --workdir "
                    "instead of running them again")
    ap.add_argument("--json", default=None, help="write the figures to this file")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = ap.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="cubed_suite_"))
    workdir.mkdir(parents=True, exist_ok=True)
    extra = list(args.pytest_args) + (["-k", args.k] if args.k else [])
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    results = {}
    for b in backends:
        if b in args.reuse:
            results[b] = read_suite(b, workdir)
            continue
        print(f"running cubed.tests with {b} (log: {workdir / (b + '.log')}) ...", flush=True)
        results[b] = run_suite(b, args.python, extra, workdir, args.timeout)
    ratio = report(results, args.goal, args.groups)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"ratio": ratio, **{b: {k: v for k, v in r.items() if k != "outcomes"}
                                for b, r in results.items()}}, indent=1))
    return 0 if ratio is None or ratio >= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
