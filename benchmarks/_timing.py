"""Shared timing helpers for benchmarks: GPU event timing, a copy baseline, JSON and tables."""
from __future__ import annotations

import json
import platform
import statistics
import sys
from pathlib import Path


def size_arg(text: str) -> int:
    """A size from the command line: an int or a power written as 2**28 (no eval)."""
    base, _, exp = text.partition("**")
    return int(base) ** int(exp) if exp else int(text)


def try_import(name):
    """A peer library (cupy, torch) if it imports, else None with a note on stderr."""
    try:
        return __import__(name)
    except Exception as e:
        print(f"[bench] {name} unavailable: {e!r}", file=sys.stderr)
        return None


def time_gpu(fn, warmup: int = 3, reps: int = 20) -> float:
    """Median seconds of ``fn()`` measured with CUDA event pairs on the current stream."""
    import cupy as cp

    for _ in range(warmup):
        fn()
    stream = cp.cuda.get_current_stream()
    stream.synchronize()
    pairs = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        fn()
        end.record(stream)
        pairs.append((start, end))
    end.synchronize()
    # get_elapsed_time is in milliseconds
    return statistics.median(cp.cuda.get_elapsed_time(s, e) for s, e in pairs) / 1e3


def copy_gbps(nbytes: int, warmup: int = 3, reps: int = 20) -> float:
    """Device-to-device copy bandwidth, (read + write bytes) / time, in GB/s (1e9 bytes/s).

    The buffer is random, not zeros, so no hardware shortcut for uniform data can flatter it.
    """
    import cupy as cp

    nbytes = int(nbytes)
    src = cp.random.randint(0, 256, size=nbytes, dtype=cp.uint8)
    dst = cp.empty_like(src)
    t = time_gpu(lambda: dst.data.copy_from_device_async(src.data, nbytes), warmup, reps)
    assert bool((dst[:: max(1, nbytes // 4096)] == src[:: max(1, nbytes // 4096)]).all())
    return 2 * nbytes / t / 1e9


def _copy_for(seconds: float, src, dst, per_sync: int) -> None:
    """Copy src into dst (CuPy arrays) for ``seconds``, per_sync copies a synchronisation."""
    import time

    import cupy as cp

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(per_sync):
            dst.data.copy_from_device_async(src.data, src.nbytes)
        cp.cuda.get_current_stream().synchronize()


def _buffers(nbytes: int) -> tuple:
    import cupy as cp

    src = cp.random.randint(0, 256, size=nbytes, dtype=cp.uint8)
    return src, cp.empty_like(src)


def warm_gpu(seconds: float = 0.3, nbytes: int = 1 << 28) -> None:
    """Keep the GPU copying for ``seconds`` before timed work. Without it the first large case
    of a run measured 13% slower for the first two libraries timed (sum over all axes of
    (8192, 8192) float32 on the H200: 0.076 ms against 0.068 as any later case), whichever
    case came first: a state of the machine, not of the call."""
    _copy_for(seconds, *_buffers(nbytes), 16)


_SETTLE: list = []


def settle_gpu(seconds: float = 0.02, nbytes: int = 1 << 26) -> None:
    """A short copy loop (buffers kept between calls) before each implementation's timing of a
    large case, so that each is timed in the state a busy GPU is in, whatever the case or the
    host work before it left (the first implementation timed after the previous case measured
    mean over all axes of (8192, 8192) float32 at 0.0765 ms in a whole run, 0.0680 alone)."""
    if not _SETTLE:
        _SETTLE.extend(_buffers(nbytes))
    _copy_for(seconds, *_SETTLE, 4)


def environment() -> dict:
    """Versions and device name, stored with every result so plots can say what ran."""
    env = {"python": platform.python_version()}
    try:
        import numpy
        env["numpy"] = numpy.__version__
        import cupy as cp
        env["cupy"] = cp.__version__
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
        name = props["name"]
        env["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:  # still write what we have
        env["error"] = repr(e)
    return env


def write_json(path, payload) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


def print_table(rows: list[dict], columns: list[str]) -> None:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c)
              for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


# ---- helpers of the namespace-wide benchmarks (bench_namespace, bench_workloads) -------------

def gpu_usable() -> bool:
    """True when CuPy imports and sees at least one GPU it can run on."""
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            return False
        cp.cuda.Device(0).use()
        cp.asarray([1]).sum().item()  # a real launch: a broken driver answers here, not later
        return True
    except Exception:
        return False


def no_gpu(name: str) -> bool:
    """True, after one line saying so, where no GPU is usable: a benchmark then measures
    nothing and exits 0 (never a CUDA traceback on a machine without a GPU)."""
    if gpu_usable():
        return False
    print(f"{name}: no usable GPU here; nothing measured")
    return True


def time_gpu_budget(fn, warmup: int = 3, reps: int = 20, budget_s: float = 2.0) -> float:
    """``time_gpu`` with fewer repetitions for slow calls: at most about ``budget_s`` seconds
    of timed calls (never fewer than 3), so one slow function cannot stall a whole run."""
    for _ in range(max(1, warmup)):
        fn()
    once = time_gpu(fn, warmup=0, reps=1)
    return time_gpu(fn, warmup=0, reps=max(3, min(reps, int(budget_s / max(once, 1e-9)))))


def time_wall(fn, sync=lambda: None, warmup: int = 1, reps: int = 5) -> float:
    """Median wall seconds of ``fn(); sync()`` after ``warmup`` calls (CPU, or a whole program
    that synchronises at its end)."""
    import time
    for _ in range(warmup):
        fn()
        sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def pipelined_us(fns, sync, calls: int = 2000, rounds: int = 5) -> list:
    """Host microseconds per call of each of ``fns`` with calls enqueued back to back and one
    ``sync()`` at the end of each round; rounds of the functions interleaved, each one's
    minimum over rounds of (round time / calls). The cost of an operation when the GPU keeps
    up, as in real code; interleaved so that every function sees the same host, and the
    minimum because noise on a shared host only ever adds time."""
    import time
    for fn in fns:
        for _ in range(min(calls, 100)):
            fn()
    sync()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            best[k] = min(best[k], (time.perf_counter() - t0) / calls)
    return [b * 1e6 for b in best]


def per_call_us(fn, calls: int = 2000) -> float:
    """Median microseconds of single calls timed one by one (CPU work: no queue to fill)."""
    import time
    for _ in range(min(calls, 100)):
        fn()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def first_line(exc: BaseException) -> str:
    """An exception as one short line for a table cell: its type and first message line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


def missing_function(exc: BaseException) -> bool:
    """True when ``exc`` says a namespace lacks the function (an "n/a" cell, not an error)."""
    return isinstance(exc, AttributeError) and str(exc).startswith("module ")


def to_native(lib, r):
    """A result of any namespace as an array of ``lib`` (CuPy or NumPy) for checking: DLPack
    first (no copy); where the exporter refuses (a negative-strided view, say), through a host
    copy that DLPack 2023.12 lets the consumer ask for."""
    if isinstance(r, lib.ndarray):
        return r
    try:
        return lib.from_dlpack(r)
    except Exception:
        pass
    import numpy as np
    try:
        return lib.asarray(np.from_dlpack(r, device="cpu"))
    except Exception:
        return lib.asarray(r)
