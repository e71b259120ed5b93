"""Cubed on xp_cuda over several GPUs (issue #20): the same reduction on one GPU and on two.

    python benchmarks/bench_engines.py [--devices cuda:0,cuda:1] [--elements 2**37]
                                       [--chunk 2**30] [--executor processes|threads]
                                       [--out DIR] [--quick]

The computation, built with ``cubed.array_api`` on ``xp_cuda.compat``::

    x = arange(n, dtype=int64, chunks=c)          # made in each task, on its GPU
    total = sum(remainder(x, 1000))               # exact: checked against the closed form

Every chunk is made, transformed and reduced on the GPU of the worker that runs its task; only
the partial sums travel (through Cubed's storage). The array (8n bytes) is far larger than one
task's memory (``allowed_mem``) and than one GPU. Each configuration runs in a process of its
own (Cubed reads its backend when first imported), in this order:

  1 GPU,  1 worker                   the baseline
  1 GPU,  2 workers on it            a control: what two workers gain without a second GPU
  2 GPUs, 1 worker each              XP_CUDA_COMPAT_DEVICES=cuda:0,cuda:1

(a worker is a process with --executor processes, a thread with --executor threads: compat
gives each its device either way).

and prints wall seconds (the whole ``compute``, the executor's start of its workers included),
GB/s of the chunk work (32 bytes an element: arange writes 8, remainder reads 8 and writes 8,
sum reads 8), and the speed-up over the baseline. Beside them, the same chunk work run
directly on one GPU in a loop, without Cubed: the ceiling a worker could reach.

Without two usable GPUs it prints one line and exits 0. With --out DIR writes DIR/engines.json.
Exit 1 when a total disagrees with the closed form.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _timing import environment, size_arg, write_json  # noqa: E402


def expected(n: int, m: int = 1000) -> int:
    """sum(k % m for k in range(n)), in closed form."""
    full, rest = divmod(n, m)
    return full * (m * (m - 1) // 2) + rest * (rest - 1) // 2


def child(args) -> None:
    """One configuration (in its own process): prints one JSON line."""
    import cubed
    import cubed.array_api as ca

    from xp_cuda import compat
    n, c = args.elements, args.chunk
    spec = cubed.Spec(work_dir=args.work_dir, allowed_mem=args.allowed_mem)
    x = ca.arange(0, n, dtype=ca.int64, chunks=(c,), spec=spec)
    total = ca.sum(ca.remainder(x, 1000))
    kwargs = {"max_workers": args.workers}
    if args.executor == "processes":
        from cubed.runtime.executors.local import ProcessesExecutor
        executor = ProcessesExecutor()
    else:
        from cubed.runtime.executors.local import ThreadsExecutor
        executor = ThreadsExecutor()
    t = time.perf_counter()
    got = int(total.compute(executor=executor, **kwargs))
    wall = time.perf_counter() - t
    print(json.dumps({"wall_s": wall, "got": got, "device0": str(compat.worker_device())}),
          flush=True)


def direct(n: int, c: int, device: str) -> float:
    """Seconds of the same chunk work on one GPU without Cubed (each chunk made, transformed,
    reduced; one synchronisation at the end)."""
    import xp_cuda as xp
    dev = next(d for d in xp.__array_namespace_info__().devices() if str(d) == device)

    m = xp.asarray(1000, dtype=xp.int64, device=dev)

    def run(n: int) -> int:
        parts = []
        for s in range(0, n, c):
            x = xp.arange(s, min(s + c, n), dtype=xp.int64, device=dev)
            parts.append(xp.sum(xp.remainder(x, m)))
        return int(xp.sum(xp.stack(parts)))

    run(1000)  # kernels loaded before the clock
    t = time.perf_counter()
    got = run(n)
    dt = time.perf_counter() - t
    if got != expected(n):
        raise SystemExit(f"direct run: {got} != {expected(n)}")
    return dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", default="cuda:0,cuda:1")
    ap.add_argument("--elements", type=size_arg, default=2**37)
    ap.add_argument("--chunk", type=size_arg, default=2**30)
    ap.add_argument("--allowed-mem", default="40GB")
    ap.add_argument("--executor", choices=("processes", "threads"), default="processes")
    ap.add_argument("--work-dir", default=None)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="2**32 elements in chunks of 2**28")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.elements, args.chunk = 2**32, 2**28
    if args.child:
        child(args)
        return 0
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    try:
        import cupy
        ngpu = cupy.cuda.runtime.getDeviceCount()
    except Exception:
        ngpu = 0
    on_gpu = any(d.startswith("cuda") for d in devices)
    if on_gpu and ngpu == 0:
        print("bench_engines: no usable GPU here; nothing measured")
        return 0
    if len(devices) < 2 or (on_gpu and ngpu < 2):
        print(f"bench_engines: needs two devices in --devices and as many usable GPUs (found "
              f"{ngpu}); nothing measured")
        return 0
    try:
        import cubed  # noqa: F401
    except ImportError:
        print("bench_engines: needs Cubed (pip install -e '.[engines]', Python 3.12 or later); "
              "nothing measured")
        return 0
    n, c = args.elements, args.chunk
    want = expected(n)
    configs = [("1 GPU, 1 worker", devices[0], 1), ("1 GPU, 2 workers", devices[0], 2),
               (f"{len(devices)} GPUs, 1 worker each", ",".join(devices), len(devices))]
    rows, bad = [], False
    nbytes = 32 * n
    base = None
    for label, devs, workers in configs:
        env = dict(os.environ, CUBED_BACKEND_ARRAY_API_MODULE="xp_cuda.compat",
                   XP_CUDA_COMPAT_DEVICES=devs)
        cmd = [sys.executable, __file__, "--child", "--workers", str(workers),
               "--elements", str(n), "--chunk", str(c), "--allowed-mem", args.allowed_mem,
               "--executor", args.executor]
        if args.work_dir:
            cmd += ["--work-dir", args.work_dir]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        line = next((s for s in out.stdout.splitlines()[::-1] if s.startswith("{")), None)
        if out.returncode or line is None:
            print(f"[bench_engines] {label}: failed\n{out.stderr[-3000:]}")
            bad = True
            continue
        r = json.loads(line)
        ok = r["got"] == want
        bad |= not ok
        base = base or r["wall_s"]
        rows.append({"case": label, "devices": devs, "workers": workers,
                     "wall_s": round(r["wall_s"], 3), "GB/s": round(nbytes / r["wall_s"] / 1e9, 1),
                     "speedup": round(base / r["wall_s"], 2), "agree": ok})
    t = direct(n, c, devices[0])
    rows.append({"case": "direct, 1 GPU (no Cubed)", "devices": devices[0], "workers": 1,
                 "wall_s": round(t, 3), "GB/s": round(nbytes / t / 1e9, 1),
                 "speedup": round(base / t, 2) if base else None, "agree": True})
    print(f"sum(remainder(arange({n}), 1000)) in chunks of {c} ({n // c} tasks, "
          f"{8 * n / 1e9:.0f} GB of int64), Cubed {args.executor} executor, "
          f"allowed_mem {args.allowed_mem}")
    for r in rows:
        print(f"  {r['case']:<28} {r['wall_s']:>9.3f} s {r['GB/s']:>9.1f} GB/s "
              f"x{r['speedup']}  {'ok' if r['agree'] else 'WRONG'}")
    if args.out:
        write_json(args.out / "engines.json", {"benchmark": "engines", "env": environment(),
                                               "elements": n, "chunk": c, "rows": rows})
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
