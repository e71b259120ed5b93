"""Old code against new in alternating processes: a change's effect on a few calls, timed.

    python tools/ab.py OLD [--new DIR] [--device cuda:0] [--rounds 2] [--reps 30]
                       --case 'LABEL::SETUP::CALL' [--case ...] [--json PATH]

OLD is a git revision of this checkout (its xp_cuda/ is extracted with ``git archive`` into a
temporary folder) or a folder that holds an xp_cuda/ package (a tree extracted beforehand, for
a machine whose copy of the repository lacks the revision). NEW is this checkout unless
--new names another such folder. Each round runs every case in a fresh process of the old
code, then in one of the new, so neither profits from the other's caches, and a drift of the
machine between rounds shows as spread rather than as a difference. A case's time is the
median of --reps calls after a warm-up: CUDA events on cuda (each call between two events on
the current stream), perf_counter on cpu. The first round also keeps every result: old and new
must agree (bool and integer results exactly; floating ones to 1e-5 relative to the largest
magnitude for 4-byte elements, 1e-12 for 8-byte ones), or the table says DIFFER and the exit
code is 1.

A case is LABEL, SETUP (statements; ``xp``, ``np``, ``dev`` and ``rng``, a seeded NumPy
Generator, are in scope) and CALL (an expression on what SETUP made), joined by ``::``:

    --case 'cumsum f32 64M::x = xp.asarray(rng.standard_normal(2**26).astype(np.float32),
            device=dev)::xp.cumulative_sum(x)'

The measurement method of docs/performance.md ("old and new code in alternating processes"),
as one command; benchmarks/ measure xp_cuda against its peers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEP = "::"


def parse_case(text: str) -> tuple[str, str, str]:
    """(label, setup, call) of a --case argument; ValueError naming the form otherwise. A
    separator inside brackets is Python's (x[::2]), not one."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and text.startswith(SEP, i):
            parts.append(text[start:i])
            start = i = i + len(SEP)
            continue
        i += 1
    parts.append(text[start:])
    if len(parts) != 3 or not parts[0].strip() or not parts[2].strip():
        raise ValueError(f"a case is 'LABEL{SEP}SETUP{SEP}CALL' (SETUP may be empty), got "
                         f"{text!r}")
    return parts[0].strip(), parts[1], parts[2].strip()


def old_tree(old: str, tmp: Path) -> Path:
    """The folder holding the old xp_cuda/: OLD itself when it is one, else the revision
    extracted from this checkout with git archive."""
    p = Path(old)
    if (p / "xp_cuda" / "__init__.py").is_file():
        return p.resolve()
    dest = tmp / "old"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", old, "xp_cuda"],
                             capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"ab: {old!r} is neither a folder with xp_cuda/ nor a revision of "
                         f"{ROOT}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def _host(value):
    """A call's result as NumPy arrays (a tuple of them for a tuple result)."""
    import numpy as np
    if isinstance(value, tuple):
        return tuple(_host(v) for v in value)
    d = getattr(value, "_data", value)
    return np.asarray(d.get() if hasattr(d, "get") else d)


def worker(tree: str, device: str, reps: int, cases: list, keep: str | None) -> None:
    """Run in a fresh process with ``tree`` first on sys.path: each case's median seconds,
    one JSON line each; with ``keep``, the results saved there (one .npy per case)."""
    sys.path.insert(0, tree)
    import time

    import numpy as np

    import xp_cuda as xp
    if not Path(xp.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"ab: imported {xp.__file__}, not the tree {tree}")
    dev = next(d for d in xp.__array_namespace_info__().devices() if str(d) == device)
    cuda = device.startswith("cuda")
    if cuda:
        import cupy as cp
    for i, (label, setup, call) in enumerate(cases):
        env = {"xp": xp, "np": np, "dev": dev, "rng": np.random.default_rng(7)}
        exec(setup, env)
        code = compile(call, label, "eval")
        result = eval(code, env)
        if keep is not None:
            parts = result if isinstance(result, tuple) else (result,)
            for k, part in enumerate(parts):
                np.save(os.path.join(keep, f"{i}_{k}.npy"), _host(part))
        for _ in range(3):
            eval(code, env)
        times = []
        if cuda:
            stream = cp.cuda.get_current_stream()
            stream.synchronize()
            for _ in range(reps):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record(stream)
                eval(code, env)
                end.record(stream)
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        else:
            for _ in range(reps):
                t0 = time.perf_counter()
                eval(code, env)
                times.append(time.perf_counter() - t0)
        print(json.dumps({"case": i, "s": statistics.median(times)}), flush=True)


def agreement(old_dir: Path, new_dir: Path, index: int) -> str:
    """'equal', 'close (rel. err E)' or 'DIFFER (...)' for case ``index``'s saved results."""
    import numpy as np
    olds = sorted(old_dir.glob(f"{index}_*.npy"))
    news = sorted(new_dir.glob(f"{index}_*.npy"))
    if [p.name for p in olds] != [p.name for p in news]:
        return "DIFFER (the results' parts)"
    worst = 0.0
    for po, pn in zip(olds, news):
        a, b = np.load(po), np.load(pn)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"DIFFER ({a.dtype}{a.shape} against {b.dtype}{b.shape})"
        if a.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                return "DIFFER (values)"
            continue
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            return "DIFFER (NaN positions)"
        ok = ~np.isnan(a)
        scale = float(np.max(np.abs(a[ok]), initial=0.0)) or 1.0
        err = float(np.max(np.abs(a[ok] - b[ok]), initial=0.0)) / scale
        tol = 1e-5 if a.dtype.itemsize // (2 if a.dtype.kind == "c" else 1) == 4 else 1e-12
        if err > tol:
            return f"DIFFER (rel. err {err:.2e})"
        worst = max(worst, err)
    return "equal" if worst == 0 else f"close (rel. err {worst:.1e})"


def _run(tree: Path, args, cases, keep) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(tree),
           "--device", args.device, "--reps", str(args.reps), "--cases-json", json.dumps(cases)]
    if keep is not None:
        cmd += ["--keep", str(keep)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if r.returncode != 0:
        raise SystemExit(f"ab: the run of {tree} failed:\n{r.stderr[-3000:]}")
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            out[row["case"]] = row["s"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", nargs="?", help="a git revision, or a folder holding xp_cuda/")
    ap.add_argument("--new", default=str(ROOT), help="a folder holding xp_cuda/ (default: "
                                                     "this checkout)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--case", action="append", default=[], help="LABEL::SETUP::CALL")
    ap.add_argument("--json", help="write the table as JSON here")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a process may take")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--cases-json", help=argparse.SUPPRESS)
    ap.add_argument("--keep", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.device, args.reps, json.loads(args.cases_json), args.keep)
        return 0
    if not args.old or not args.case:
        ap.error("name OLD and at least one --case")
    try:
        cases = [parse_case(c) for c in args.case]
    except ValueError as e:
        ap.error(str(e))
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        old = old_tree(args.old, tmp_path)
        new = Path(args.new).resolve()
        keep = {"old": tmp_path / "res_old", "new": tmp_path / "res_new"}
        for k in keep.values():
            k.mkdir()
        times: dict = {"old": [], "new": []}
        for r in range(args.rounds):
            for name, tree in (("old", old), ("new", new)):
                times[name].append(_run(tree, args, cases, keep[name] if r == 0 else None))
        rows = []
        for i, (label, _, _) in enumerate(cases):
            o = [t[i] * 1e3 for t in times["old"]]
            n = [t[i] * 1e3 for t in times["new"]]
            rows.append({"case": label, "old_ms": o, "new_ms": n,
                         "new_over_old": statistics.median(n) / statistics.median(o),
                         "agree": agreement(keep["old"], keep["new"], i)})
    w = max(len(r["case"]) for r in rows)
    print(f"{'case':{w}s}  {'old ms (rounds)':>24s}  {'new ms (rounds)':>24s}  new/old  agree")
    for r in rows:
        o = " ".join(f"{v:.4f}" for v in r["old_ms"])
        n = " ".join(f"{v:.4f}" for v in r["new_ms"])
        print(f"{r['case']:{w}s}  {o:>24s}  {n:>24s}  {r['new_over_old']:7.3f}  {r['agree']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"old": args.old, "new": str(new),
                                               "device": args.device, "rows": rows}, indent=1))
    return 1 if any(r["agree"].startswith("DIFFER") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
