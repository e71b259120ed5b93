"""Library-style workloads, written once against the standard, on xp_cuda, torch and CuPy.

    python benchmarks/bench_workloads.py [--out DIR] [--quick] [--only SUBSTRING] [--allow-cpu]

Each workload is a function of ``xp`` (the namespace) and its inputs, as a library author
writes it, run through xp_cuda, ``array_api_compat.torch`` and ``array_api_compat.cupy`` in one
process on the same data (made by CuPy on cuda:0, handed over without copies):

  k-means    Lloyd's algorithm, 1M x 32 float32, 64 centres, 10 iterations: distances via
             matmul, argmin, a one-hot matrix, counts by sum(onehot, axis=0), centres by
             onehot.T @ X / counts
  logistic   logistic regression by gradient descent, 1M x 64 float32, 50 steps
  n-body     one pairwise gravity step, 4096 bodies in 3-D, softened
  PCA        standardise (mean, std) then the covariance by matmul and linalg.eigh, 100k x 256

Times: wall clock of a whole run, synchronised at its end, the median of a few runs after a
warm-up. ratio = the peer's time / xp_cuda's (> 1: xp_cuda is faster). Each result is compared
with xp_cuda's (max |a - b| / max |b|, loose tolerance), so a fast wrong answer shows.

Without a usable GPU it prints one line and exits 0; with --allow-cpu it runs the workloads at
tiny sizes on cpu, xp_cuda against ``array_api_compat.numpy``. Writes DIR/workloads.json with
--out. Exit 1 when xp_cuda raised or disagreed.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import (environment, first_line, gpu_usable, missing_function,  # noqa: E402
                     print_table, time_wall, to_native, try_import, write_json)

TOLERANCE = 1e-2  # relative to the result's largest magnitude: float32, different sum orders


# ---- the workloads, each written once against the standard ------------------------------------

def kmeans(xp, a, iters: int = 10):
    """Lloyd's k-means from the given initial centres; returns the final centres."""
    X, C = a["X"], a["C"]
    k = C.shape[0]
    ids = xp.arange(k, device=X.device)[None, :]
    for _ in range(iters):
        # ||x - c||^2 up to the per-row constant ||x||^2, which argmin does not need
        d = xp.sum(C * C, axis=1)[None, :] - 2.0 * (X @ C.T)
        labels = xp.argmin(d, axis=1)
        onehot = xp.astype(labels[:, None] == ids, xp.float32)
        counts = xp.sum(onehot, axis=0)
        counts = xp.where(counts > 0, counts, xp.ones_like(counts))  # an empty centre stays 0
        C = (onehot.T @ X) / counts[:, None]
    return C


def logistic(xp, a, steps: int = 50, lr: float = 0.5):
    """Logistic regression by full-batch gradient descent; returns the weights."""
    X, y = a["X"], a["y"]
    n = X.shape[0]
    w = xp.zeros(X.shape[1], dtype=X.dtype, device=X.device)
    for _ in range(steps):
        p = 1.0 / (1.0 + xp.exp(-(X @ w)))
        w = w - lr * (X.T @ (p - y)) / n
    return w


def nbody(xp, a, dt: float = 1e-3, soft2: float = 1e-2):
    """One pairwise gravity step (G = 1, softened); returns positions and velocities."""
    pos, vel, m = a["pos"], a["vel"], a["m"]
    d = pos[None, :, :] - pos[:, None, :]                      # d[i, j] = r_j - r_i
    r2 = xp.sum(d * d, axis=-1) + soft2
    w = m[None, :] * r2 ** -1.5                                # m_j / |r_ij|^3
    acc = xp.sum(d * w[:, :, None], axis=1)
    vel = vel + dt * acc
    pos = pos + dt * vel
    return xp.concat([pos, vel], axis=1)


def pca(xp, a):
    """Standardise the columns, then the eigenvalues of the covariance (ascending)."""
    X = a["X"]
    Z = (X - xp.mean(X, axis=0)) / xp.std(X, axis=0)
    cov = (Z.T @ Z) / (X.shape[0] - 1)
    return xp.linalg.eigh(cov).eigenvalues


# ---- inputs, made by the platform's lib (CuPy on the GPU, NumPy on cpu) -----------------------

def kmeans_inputs(lib, n, d, k):
    rng = lib.random.default_rng(1)
    centres = rng.standard_normal((k, d), dtype=lib.float32) * lib.float32(4)
    labels = rng.integers(0, k, size=n)
    X = centres[labels] + rng.standard_normal((n, d), dtype=lib.float32) * lib.float32(0.5)
    return {"X": X, "C": X[:k].copy()}   # separated clusters: assignments do not hang on a tie


def logistic_inputs(lib, n, d):
    rng = lib.random.default_rng(2)
    X = rng.standard_normal((n, d), dtype=lib.float32)
    w = rng.standard_normal(d, dtype=lib.float32)
    noise = rng.standard_normal(n, dtype=lib.float32)
    return {"X": X, "y": ((X @ w + noise) > 0).astype(lib.float32)}


def nbody_inputs(lib, n):
    rng = lib.random.default_rng(3)
    return {"pos": rng.standard_normal((n, 3), dtype=lib.float32),
            "vel": rng.standard_normal((n, 3), dtype=lib.float32) * lib.float32(0.1),
            "m": rng.random(n, dtype=lib.float32) + lib.float32(0.5)}


def pca_inputs(lib, n, p):
    rng = lib.random.default_rng(4)
    mix = rng.standard_normal((p, p), dtype=lib.float32) / lib.float32(p ** 0.5)
    X = rng.standard_normal((n, p), dtype=lib.float32) @ mix + lib.float32(3)
    return {"X": X}


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable                         # f(xp, a)
    inputs: Callable                     # (lib, size) -> dict of lib arrays
    sizes: dict                          # "full" / "quick" / "cpu" -> the size


WORKLOADS = [
    Workload("k-means (Lloyd, 10 iterations)", kmeans,
             lambda lib, s: kmeans_inputs(lib, *s),
             {"full": (1 << 20, 32, 64), "quick": (1 << 17, 32, 64), "cpu": (2000, 8, 8)}),
    Workload("logistic regression (GD, 50 steps)", logistic,
             lambda lib, s: logistic_inputs(lib, *s),
             {"full": (1 << 20, 64), "quick": (1 << 17, 64), "cpu": (2000, 16)}),
    Workload("n-body step (pairwise, softened)", nbody,
             lambda lib, s: nbody_inputs(lib, s),
             {"full": 4096, "quick": 2048, "cpu": 128}),
    Workload("standardise + PCA (eigh)", pca,
             lambda lib, s: pca_inputs(lib, *s),
             {"full": (100_000, 256), "quick": (25_000, 256), "cpu": (2000, 32)}),
]


# ---- where they run ---------------------------------------------------------------------------

@dataclass
class Impl:
    name: str
    ns: object
    convert: Callable  # lib array -> this namespace's array


def gpu_impls(xp, notes):
    import cupy as cp
    import array_api_compat.cupy as cpx
    impls = [Impl("xp_cuda", xp, xp.asarray)]
    torch = try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        notes.append("torch is installed but sees no GPU: its column is skipped")
        torch = None
    if torch is None:
        notes.append("torch is not available: its column is skipped")
    else:
        import array_api_compat.torch as tx
        impls.append(Impl("torch", tx, torch.from_dlpack))
    impls.append(Impl("cupy", cpx, lambda c: c))
    return cp, impls, cp.cuda.Device(0).synchronize


def cpu_impls(xp):
    import numpy as np
    import array_api_compat.numpy as npx
    cpu = next(d for d in xp.__array_namespace_info__().devices() if str(d) == "cpu")
    return np, [Impl("xp_cuda", xp, lambda a: xp.asarray(a, device=cpu)),
                Impl("numpy", npx, lambda a: a)], lambda: None


def run(lib, impls, sync, size_key: str, only: str, warmup: int, reps: int):
    rows, table = [], []
    for wl in WORKLOADS:
        if only not in wl.name:
            continue
        print(f"[{size_key}] {wl.name}", file=sys.stderr, flush=True)
        src = wl.inputs(lib, wl.sizes[size_key])
        shapes = " ".join(f"{k}{tuple(v.shape)}" for k, v in src.items())
        wide, results = {"workload": wl.name, "inputs": shapes}, {}
        for impl in impls:
            row = {"case": wl.name, "impl": impl.name, "inputs": shapes}
            try:
                a = {k: impl.convert(v) for k, v in src.items()}
                results[impl.name] = to_native(lib, wl.fn(impl.ns, a))
                t = time_wall(lambda: wl.fn(impl.ns, a), sync, warmup=warmup, reps=reps)
                row["ms"] = wide[impl.name] = t * 1e3
            except Exception as e:
                text = "n/a" if missing_function(e) else first_line(e)
                row["na" if text == "n/a" else "error"] = True if text == "n/a" else text
                wide[impl.name] = text[:44]
            rows.append(row)
        mine = results.get("xp_cuda")
        for row in rows[-len(impls):]:
            got = results.get(row["impl"])
            if row["impl"] == "xp_cuda" or got is None or mine is None:
                continue
            try:
                diff = float(lib.max(lib.abs(got.astype(lib.float64) - mine.astype(lib.float64)))
                             / max(float(lib.max(lib.abs(mine))), 1e-30))
                row["max_rel_diff"], row["agree"] = diff, diff <= TOLERANCE
            except Exception as e:  # a shape mismatch, say
                row["agree"], row["check_error"] = False, first_line(e)
            wide[f"{row['impl']} diff"] = row.get("max_rel_diff", row.get("check_error"))
            wide[f"{row['impl']} agrees"] = row["agree"]
        xp_ms = wide.get("xp_cuda")
        for impl in impls[1:]:
            peer = wide.get(impl.name)
            if isinstance(xp_ms, float) and isinstance(peer, float):
                wide[f"{impl.name}/xp_cuda"] = peer / xp_ms
                next(r for r in rows[-len(impls):] if r["impl"] == "xp_cuda")[
                    f"vs_{impl.name}"] = peer / xp_ms
        table.append(wide)
        del src, results
    return rows, table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write DIR/workloads.json")
    ap.add_argument("--quick", action="store_true", help="smaller problems, fewer runs")
    ap.add_argument("--only", default="", help="run the workloads whose name contains SUBSTRING")
    ap.add_argument("--allow-cpu", action="store_true",
                    help="without a usable GPU, run tiny workloads on cpu against NumPy")
    args = ap.parse_args(argv)

    import xp_cuda as xp
    notes = []
    gpu = gpu_usable()
    if gpu:
        lib, impls, sync = gpu_impls(xp, notes)
        size_key = "quick" if args.quick else "full"
    else:
        print("bench_workloads: no usable GPU here; " + (
            "running tiny workloads on cpu (xp_cuda vs array_api_compat.numpy)"
            if args.allow_cpu else "nothing measured (--allow-cpu runs them on cpu)"), flush=True)
        if not args.allow_cpu:
            return 0
        lib, impls, sync = cpu_impls(xp)
        size_key = "cpu"
    warmup, reps = (1, 3) if args.quick else (1, 5)
    rows, table = run(lib, impls, sync, size_key, args.only, warmup, reps)

    names = [i.name for i in impls]
    print(f"\nworkloads on {'cuda:0' if gpu else 'cpu'} (ms, wall clock; peer/xp_cuda > 1: "
          f"xp_cuda faster; diff = max |peer - xp_cuda| / max |xp_cuda|, agrees at "
          f"<= {TOLERANCE:g})")
    cols = ["workload", *names]
    for n in names[1:]:
        cols += [f"{n}/xp_cuda", f"{n} diff", f"{n} agrees"]
    print_table(table, cols)
    for n in notes:
        print(f"note: {n}")
    if args.out:
        write_json(args.out / "workloads.json",
                   {"benchmark": "workloads", "env": environment(), "device":
                    "cuda:0" if gpu else "cpu", "sizes": size_key, "notes": notes,
                    "rows": rows})
    # a peer that disagrees with xp_cuda fails too: one of the two is wrong
    bad = [r for r in rows if ("error" in r and r["impl"] == "xp_cuda") or r.get("agree") is False]
    for r in bad:
        why = r.get("error") or r.get("check_error") or "disagrees with xp_cuda"
        print(f"FAILED: {r['case']} {r['impl']}: {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
