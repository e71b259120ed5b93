"""How long a new user waits: a short script, each call timed, in fresh processes.

    python tools/first_run.py [--device cuda:0] [--json PATH]

Runs SCRIPT (17 everyday calls) three times, each in a new Python process: with an empty
kernel cache (a temporary XP_CUDA_KERNEL_CACHE), then again with the cache that run filled
(a new process: nothing in memory, cubins on disk), then a second time inside that warm
process (everything loaded). Prints each call's wall time (synchronised) and the totals, and
the import time. The issue's bar: no first call above 0.3 s, the cold run at most 1 s above the
warm-cache run.
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

# (label, statement); `x`, `m` and friends persist between statements.
SCRIPT = [
    ("asarray", "x = xp.asarray(np.random.default_rng(0).standard_normal(100000, dtype=np.float32), device=dev)"),
    ("mean", "r = xp.mean(x)"),
    ("std", "r = xp.std(x)"),
    ("arithmetic", "y = (x - xp.mean(x)) / 2.5 + 1.0"),
    ("comparison", "mask = y > 1.0"),
    ("reshape", "m = xp.reshape(x[:99856], (316, 316))"),
    ("matmul", "r = m @ m"),
    ("argmax", "r = xp.argmax(m, axis=1)"),
    ("arange", "a = xp.arange(1000, device=dev)"),
    ("sum(arange)", "r = xp.sum(a)"),
    ("linspace", "r = xp.linspace(0.0, 1.0, 1000, device=dev)"),
    ("astype", "r = xp.astype(a, xp.float64)"),
    ("where", "r = xp.where(mask, x, y)"),
    ("sort", "r = xp.sort(x)"),
    ("vecdot", "r = xp.vecdot(m, m)"),
    ("boolean mask", "r = x[mask]"),
    ("max(axis=0)", "r = xp.max(m, axis=0)"),
]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import xp_cuda as xp
t_import = time.perf_counter() - t0
dev = xp.__array_namespace_info__().default_device() if {device!r} == "default" else None
if dev is None:
    dev = [d for d in xp.__array_namespace_info__().devices() if str(d) == {device!r}][0]

def sync():
    if str(dev).startswith("cuda"):
        import cupy
        cupy.cuda.runtime.deviceSynchronize()

script = {script!r}
runs = []
for rep in range({reps}):
    env = dict(xp=xp, np=np, dev=dev)
    times = []
    for label, stmt in script:
        t = time.perf_counter()
        exec(stmt, env)
        sync()
        times.append((label, time.perf_counter() - t))
    runs.append(times)
print("RESULT" + json.dumps(dict(import_s=t_import, runs=runs)))
"""


def child(device, cache, reps):
    env = dict(os.environ, XP_CUDA_KERNEL_CACHE=str(cache), PYTHONPATH=str(ROOT) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    code = CHILD.format(device=device, script=SCRIPT, reps=reps)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"first_run: the child process failed:\n{out.stderr[-3000:]}")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        cold = child(args.device, cache, 1)
        warm = child(args.device, cache, 2)
    cols = [("cold cache", cold["runs"][0]), ("warm cache", warm["runs"][0]),
            ("in process", warm["runs"][1])]
    print(f"import xp_cuda: cold {cold['import_s']:.3f} s, warm {warm['import_s']:.3f} s")
    print(f"{'call':<16}" + "".join(f"{c:>14}" for c, _ in cols))
    for i, (label, _) in enumerate(SCRIPT):
        print(f"{label:<16}" + "".join(f"{r[i][1] * 1e3:>12.1f}ms" for _, r in cols))
    totals = [sum(t for _, t in r) for _, r in cols]
    print(f"{'total':<16}" + "".join(f"{t:>13.3f}s" for t in totals))
    worst = max(cold["runs"][0], key=lambda p: p[1])
    print(f"cold - warm cache: {totals[0] - totals[1]:.3f} s; slowest first call: {worst[0]} "
          f"{worst[1]:.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(cold=cold, warm=warm), indent=1))


if __name__ == "__main__":
    main()
