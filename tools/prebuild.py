"""Build the kernels the package ships: xp_cuda/_kernels/prebuilt/<arch>.zip.

    python tools/prebuild.py [--archs sm_80,sm_90,sm_100] [--processes N] [--check] [--fresh]

A new user's first calls should load kernels, not wait for NVRTC (seconds per script). This
takes the kernels everyday code launches first (xp_cuda._kernel_set: the default dtypes and bool,
contiguous operands), compiles each for every shipped arch, and writes one zip per arch whose
entry names are _runtime.shipped_key(source, options, arch). Nothing else is shipped: any
other kernel compiles on first use (one kernel, a fraction of a second) into the disk cache.

--check lists what is missing from the shipped archives for the current sources and exits 1
when anything is (tests/test_prebuilt.py runs the same check in CI: a kernel source changed
without running this tool).

It lives in tools/ because enumerating what can be launched needs the spec layer's tables.
"""
from __future__ import annotations

import argparse
import os
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (and re-imported by spawned workers)
    sys.path.insert(0, str(ROOT))

ARCHS = ("sm_80", "sm_90", "sm_100")  # Ampere/Ada (8.x), Hopper, Blackwell datacenter
from xp_cuda._kernel_set import (COMMON, FAMILIES, SMS, _standin,  # noqa: E402,F401  (the
                                 units)  # enumeration lives in the package: xp-cuda warm uses it)


def _build_one(job):
    from xp_cuda._kernels import _runtime as rt
    src, opts, name, arch = job
    return rt.shipped_key(src, opts, arch), rt._compile(src, f"{name}.cu", arch, opts, "cubin")


def missing(archs=None) -> dict:
    """arch -> number of current units absent from its shipped archive."""
    from xp_cuda._kernels import _runtime as rt
    archs = archs or rt.shipped_archs() or list(ARCHS)
    us = units()
    out = {}
    for arch in archs:
        store = rt._shipped_store(arch)
        names = store[1] if store else frozenset()
        out[arch] = sum(rt.shipped_key(s, o, arch) not in names for s, o, _ in us)
    return out


def _write(z, key: str, cubin: bytes) -> None:
    """One entry with a fixed timestamp: the same kernels make the same archive bytes (a
    rebuild that changes nothing leaves git nothing to store)."""
    info = zipfile.ZipInfo(key, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, cubin, compresslevel=9)


def build(archs, processes=0, fresh=False):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from xp_cuda._kernels import _runtime as rt
    us = units()
    rt.PREBUILT_DIR.mkdir(exist_ok=True)
    with ProcessPoolExecutor(max_workers=processes or os.cpu_count() or 1,
                             mp_context=get_context("spawn")) as pool:
        for arch in archs:
            path = rt.PREBUILT_DIR / f"{arch}.zip"
            keys = {rt.shipped_key(s, o, arch): (s, o, n) for s, o, n in us}
            # entries whose key (source, options, arch) is still current are kept as built:
            # a change to one kernel source recompiles that source's kernels only
            kept, stale = {}, False
            if path.exists() and not fresh:
                with zipfile.ZipFile(path) as old:
                    kept = {k: old.read(k) for k in old.namelist() if k in keys}
                    stale = len(kept) != len(old.namelist())
            jobs = [(*keys[k], arch) for k in keys if k not in kept]
            if kept and not jobs and not stale:  # the same entries: the archive stays as it is
                print(f"{arch}: {len(keys)} kernels, all current; archive unchanged")
                continue
            tmp = rt.PREBUILT_DIR / f".{arch}.zip.tmp"
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                for key, cubin in kept.items():
                    _write(z, key, cubin)
                for i, (key, cubin) in enumerate(pool.map(_build_one, jobs, chunksize=4), 1):
                    _write(z, key, cubin)
                    if i % 100 == 0 or i == len(jobs):
                        print(f"\r{arch}: {i}/{len(jobs)} compiled", end="", flush=True)
            os.replace(tmp, path)
            size = path.stat().st_size
            print(f"\r{arch}: {len(keys)} kernels ({len(jobs)} compiled, {len(kept)} kept), "
                  f"{size / 2**20:.2f} MiB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument("--processes", type=int, default=0, help="worker processes (0: one per CPU)")
    ap.add_argument("--check", action="store_true", help="only report what is missing")
    ap.add_argument("--fresh", action="store_true",
                    help="compile every kernel (default: keep the current ones already built)")
    args = ap.parse_args(argv)
    archs = [a for a in args.archs.split(",") if a]
    if args.check:
        gaps = missing(archs)
        for arch, n in gaps.items():
            print(f"{arch}: {n} of {len(units())} kernels missing")
        return 1 if any(gaps.values()) else 0
    build(archs, args.processes, args.fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
