"""vecdot: xp_cuda's kernel against a same-run device copy and its peers (DESIGN principle 7).

    python benchmarks/bench_vecdot.py --out DIR [--explore]

Effective GB/s = bytes of x1 and x2 read once / time; the copy moves the same total bytes (half
read, half written). Peers: CuPy's (conj(x) * y).sum(axis) and torch.linalg.vecdot when torch
imports. --explore also times other launch configurations of our kernel around the chosen one.
Writes DIR/vecdot.json and prints a table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import no_gpu, copy_gbps, environment, print_table, time_gpu, write_json, try_import  # noqa: E402

# (name, shape, axis, dtype): the shapes the kernel family must cover.
CASES = [
    ("vector 2^28", (2**28,), -1, "float32"),
    ("(16M, 3)", (2**24, 3), -1, "float32"),
    ("(4M, 64)", (2**22, 64), -1, "float32"),
    ("(64, 4M) axis=-2", (64, 2**22), -2, "float32"),
    ("(16k, 16k)", (2**14, 2**14), -1, "float32"),
    ("c64 (4M, 32)", (2**22, 32), -1, "complex64"),
]


def _random(cp, rng, shape, dtype):
    if dtype == "complex64":
        z = cp.empty(shape, dtype=cp.complex64)
        z.real = rng.random(shape, dtype=cp.float32)
        z.imag = rng.random(shape, dtype=cp.float32) - 0.25
        return z
    return rng.random(shape, dtype=cp.float32) + cp.float32(0.01)  # never zero


def _rel_err(cp, got, ref):
    got = cp.asarray(got).astype(ref.dtype)
    return float(cp.abs(got - ref).max() / cp.abs(ref).max())


def _explore_configs(vk, lay, cfg, it, resident):
    """Launch configurations near the chosen one (group widths, splits), and the scalar
    kernel's own choice for comparison."""
    seen = set()
    main = vk.choose_config(lay, it, it, resident, "main")
    for base in (cfg, main):
        if base.variant in ("rows", "vecout"):
            key = (base.variant,)
            if key not in seen:
                seen.add(key)
                yield base
            continue
        u = vk.vec_for(it, it) * vk.VU if base.variant == "vec" else vk.unroll_for(it, it)
        for lg in range(max(0, base.lg - 2), min(8, base.lg + 2) + 1):
            for sf in (0.5, 1, 2):
                G = 1 << lg
                S = max(1, int(base.S * sf))
                chunk = lay.K
                if S > 1:
                    chunk = -(-lay.K // S)
                    chunk = -(-chunk // (G * u)) * (G * u)
                    S = -(-lay.K // chunk)
                key = (base.variant, base.kfast, lg, S)
                if key in seen:
                    continue
                seen.add(key)
                yield vk.Config(lg, base.kfast, S, chunk, -(-lay.M // (vk.THREADS >> lg)),
                                base.variant)


def run_case(cp, xp, torch, vk, name, shape, axis, dtype, explore):
    rng = cp.random.default_rng(0)
    a, b = _random(cp, rng, shape, dtype), _random(cp, rng, shape, dtype)
    nbytes = a.nbytes + b.nbytes
    wide = cp.complex128 if dtype == "complex64" else cp.float64
    ref = (cp.conj(a.astype(wide)) * b.astype(wide)).sum(axis=axis)
    copy = copy_gbps(nbytes // 2)
    rows = [{"case": name, "impl": "copy", "GB/s": copy, "vs_copy": 1.0,
             "ms": nbytes / copy / 1e6}]
    peers = []
    xa, xb = xp.asarray(a), xp.asarray(b)
    peers.append(("xp_cuda", lambda: xp.vecdot(xa, xb, axis=axis), lambda r: r._data))
    conj = cp.conj if dtype == "complex64" else (lambda v: v)
    peers.append(("cupy (x*y).sum", lambda: (conj(a) * b).sum(axis=axis), lambda r: r))
    if torch is not None:
        ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
        peers.append(("torch.linalg.vecdot", lambda: torch.linalg.vecdot(ta, tb, dim=axis),
                      lambda r: cp.from_dlpack(r)))
    for impl, fn, native in peers:
        try:
            err = _rel_err(cp, native(fn()), ref)
            t = time_gpu(fn)
            g = nbytes / t / 1e9
            rows.append({"case": name, "impl": impl, "ms": t * 1e3, "GB/s": g,
                         "vs_copy": g / copy, "rel_err": err})
        except Exception as e:
            rows.append({"case": name, "impl": impl, "error": repr(e)})
    lay = vk.plan_layout(a.shape, a.strides, b.shape, b.strides, axis)
    variant = vk.pick_variant(lay, a.itemsize, b.itemsize, a.data.ptr, b.data.ptr)
    kern = vk.load_kernel(vk._SOURCE_FILE.read_text(), f"vecdot_{variant}",
                          vk.compile_options(a.dtype.name, b.dtype.name, a.dtype.name))
    resident = vk._resident_blocks(cp, kern)
    cfg = vk.choose_config(lay, a.itemsize, b.itemsize, resident, variant)
    info = {"case": name, "chosen": vars(cfg), "num_regs": int(kern.num_regs),
            "resident_blocks": resident}
    explored = []
    if explore:
        for c in _explore_configs(vk, lay, cfg, a.itemsize, resident):
            try:
                fn = (lambda c=c: vk.vecdot_cuda(a, b, axis, a.dtype, config=c))
                err = _rel_err(cp, fn(), ref)
                t = time_gpu(fn, warmup=2, reps=10)
                explored.append({"case": name, **vars(c), "GB/s": nbytes / t / 1e9,
                                 "vs_copy": nbytes / t / 1e9 / copy, "rel_err": err})
            except Exception as e:
                explored.append({"case": name, **vars(c), "error": repr(e)})
    del a, b, xa, xb, ref
    cp.get_default_memory_pool().free_all_blocks()
    return rows, info, explored


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--explore", action="store_true",
                    help="also time launch configurations near the chosen one")
    args = ap.parse_args(argv)
    if no_gpu("bench_vecdot"):
        return 0

    import cupy as cp
    cp.cuda.Device(0).use()
    import xp_cuda as xp
    from xp_cuda._kernels import vecdot as vk
    torch = try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch = None

    rows, infos, explored = [], [], []
    for name, shape, axis, dtype in CASES:
        r, info, ex = run_case(cp, xp, torch, vk, name, shape, axis, dtype, args.explore)
        rows += r
        infos.append(info)
        explored += ex
    print_table(rows, ["case", "impl", "ms", "GB/s", "vs_copy", "rel_err", "error"])
    print()
    print_table([{"case": i["case"], **i["chosen"], "regs": i["num_regs"],
                  "resident": i["resident_blocks"]} for i in infos],
                ["case", "variant", "lg", "kfast", "S", "chunk", "blocks", "regs", "resident"])
    if explored:
        print()
        print_table(explored, ["case", "variant", "lg", "kfast", "S", "chunk", "GB/s", "vs_copy",
                               "rel_err", "error"])
    write_json(args.out / "vecdot.json",
               {"benchmark": "vecdot", "env": environment(), "rows": rows, "configs": infos,
                "explored": explored})
    ours = [r for r in rows if r["impl"] == "xp_cuda"]
    failed = any("error" in r for r in ours) or any(r.get("rel_err", 0) > 1e-5 for r in ours)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
