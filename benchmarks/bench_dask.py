"""The cost per block of the Dask recipe (docs/dask.md; issue #20).

    python benchmarks/bench_dask.py [--device cuda:0 | --device cpu] [--out DIR] [--quick]
                                    [--blocks N] [--block-sizes 1024,65536]
                                    [--scheduler sync|threads] [--reps N]

The recipe is the page's own code: its ```python blocks are run here as a module, as the tests
run them, so what is timed is what the page says. A Dask array of float32 random data (never
zeros) in --blocks blocks of each --block-sizes elements, with NumPy blocks on cpu or CuPy
blocks on cuda:N, goes through three computations, each two ways: with the plain NumPy (CuPy)
function and with the same function through the recipe (each block into xp_cuda by DLPack,
computed there, out by DLPack):

  leaky_relu   map_blocks of ``where(x > 0, x, 0.25 * x)``: plain np/cupy.where against
               map_blocks_xp(leaky_relu)
  sum          Dask's own x.sum() against xp_reduction(x, "sum") (the same tree)
  var          Dask's own x.var() against moments(x, "var") (counts, means and M2)

Table 1, in Dask: microseconds per block = the wall time of a whole compute (the graph's
tasks run by --scheduler, "sync" by default: one thread, so the figure is host time per
block, not a share of a parallel run; the result on the device, synchronised; the best of
--reps rounds, plain and recipe interleaved) divided by the number of blocks; it holds
Dask's own cost per task and a share of its cost per graph; overhead = recipe - plain is the
recipe's own (on a busy host, within the noise of Dask's own). Table 2, one block outside
Dask: microseconds per call of the plain function, of the recipe's block function, of the
doors alone (to_xp, to_block, and the DLPack round trip ``to_block(to_xp(block))``) and of
the xp_cuda function on an xp_cuda array (its own host time: the standard's checks); the
calls enqueued back to back, one synchronise per round, the best round
(``_timing.pipelined_us``).

With --device cuda:N and no usable GPU it prints one line and exits 0 (the default device is
cuda:0); --device cpu measures on any machine. Writes DIR/dask.json with --out (rows keyed by
case and impl with "us", as tools/bench_compare.py reads them). Exit 1 when a recipe result
disagreed with the plain one.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # xp_cuda from this checkout
from _timing import environment, gpu_usable, pipelined_us, print_table, write_json  # noqa: E402

PAGE = Path(__file__).resolve().parent.parent / "docs" / "dask.md"


def load_recipe() -> types.ModuleType:
    """docs/dask.md's python blocks, run in order as an importable module (Dask then tokenizes
    its functions by name, as it would a library's)."""
    name = "_dask_md_recipe"
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    text = PAGE.read_text()
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        line = text.count("\n", 0, m.start(1))
        exec(compile("\n" * line + m.group(1), str(PAGE), "exec"), mod.__dict__)
    return mod


def best_of_interleaved(fns, sync, reps: int) -> list:
    """Seconds of each of ``fns`` (a whole Dask compute, then ``sync()``): the best of ``reps``
    rounds, the functions interleaved in each round, after one warm-up call each. The best,
    since noise on a shared host only ever adds time; interleaved, so that each function sees
    the same host."""
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn()
        sync()
    for _ in range(reps):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            sync()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def parse_device(text: str):
    if text == "cpu":
        return "cpu", None
    kind, _, index = text.partition(":")
    if kind != "cuda" or not index.isdigit():
        raise argparse.ArgumentTypeError(f"--device takes cpu or cuda:N, not {text!r}")
    return "cuda", int(index)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", type=parse_device, default=("cuda", 0),
                    help="cpu (NumPy blocks) or cuda:N (CuPy blocks on GPU N); default cuda:0")
    ap.add_argument("--out", type=Path, help="write DIR/dask.json")
    ap.add_argument("--quick", action="store_true", help="fewer blocks and repetitions")
    ap.add_argument("--blocks", type=int, default=None, help="blocks per array (default 1000)")
    ap.add_argument("--block-sizes", default="1024,65536",
                    help="elements per block, comma-separated (default 1024,65536)")
    ap.add_argument("--scheduler", choices=["sync", "threads"], default="sync")
    ap.add_argument("--reps", type=int, default=None, help="timed computes (default 7)")
    args = ap.parse_args(argv)
    kind, index = args.device
    device = "cpu" if kind == "cpu" else f"cuda:{index}"

    if kind == "cuda":
        if not gpu_usable():
            print("bench_dask: no usable GPU here; nothing measured (--device cpu measures "
                  "NumPy blocks)")
            return 0
        import cupy as lib
        if index >= lib.cuda.runtime.getDeviceCount():
            print(f"bench_dask: no {device} here", file=sys.stderr)
            return 2
        lib.cuda.Device(index).use()

        def sync():
            lib.cuda.Device(index).synchronize()
    else:
        import numpy as lib

        def sync():
            pass
    try:
        import dask
        import dask.array as da
    except ImportError as e:
        print(f"bench_dask: dask is not installed ({e}); pip install 'dask[array]'",
              file=sys.stderr)
        return 2
    import numpy as np

    R = load_recipe()
    xp = R.xp
    nblocks = args.blocks or (100 if args.quick else 1000)
    reps = args.reps or (3 if args.quick else 7)
    sizes = [int(s) for s in args.block_sizes.split(",") if s]
    where = lib.where

    def plain_leaky(b):
        return where(b > 0, b, lib.float32(0.25) * b)

    dask_rows, call_rows, rows, bad = [], [], [], []
    with dask.config.set(scheduler=args.scheduler):
        for size in sizes:
            rng = lib.random.default_rng(7)
            data = rng.standard_normal(nblocks * size, dtype=lib.float32) + lib.float32(0.5)
            data[data == 0] = 1
            x = da.from_array(data, chunks=size)
            meta = R.meta_for(x, xp.float32)
            cases = [
                ("leaky_relu", da.map_blocks(plain_leaky, x, meta=meta),
                 R.map_blocks_xp(R.leaky_relu, x, slope=0.25, dtype=xp.float32)),
                ("sum", x.sum(), R.xp_reduction(x, "sum")),
                ("var", x.var(), R.moments(x, "var")),
            ]
            for case, plain, recipe in cases:
                got, ref = recipe.compute(), plain.compute()
                g = np.asarray(got.get() if kind == "cuda" else got, dtype=np.float64)
                r = np.asarray(ref.get() if kind == "cuda" else ref, dtype=np.float64)
                agree = bool(g.shape == r.shape and np.allclose(g, r, rtol=1e-4, atol=1e-3))
                if not agree:
                    bad.append(case)
                t_plain, t_recipe = best_of_interleaved([plain.compute, recipe.compute], sync,
                                                        reps)
                us_plain, us_recipe = t_plain / nblocks * 1e6, t_recipe / nblocks * 1e6
                label = f"{case} [{size}/block]"
                dask_rows.append({"case": label, "plain": us_plain, "recipe": us_recipe,
                                  "overhead": us_recipe - us_plain,
                                  "recipe/plain": us_recipe / us_plain, "agree": agree})
                rows += [{"case": f"dask {label}", "impl": lib.__name__, "us": us_plain},
                         {"case": f"dask {label}", "impl": "xp_cuda recipe", "us": us_recipe,
                          "overhead_us": us_recipe - us_plain, "agree": agree}]

            # one block, outside Dask: where the overhead goes
            b = data[:size]
            xb = R.to_xp(b)
            block_fn = R.on_blocks(R.leaky_relu)
            fns = {
                f"{lib.__name__} where (plain)": lambda: plain_leaky(b),
                "xp_cuda recipe block function": lambda: block_fn(b, slope=0.25),
                "xp_cuda leaky_relu on an xp_cuda array": lambda: R.leaky_relu(xb, slope=0.25),
                "to_xp (DLPack in)": lambda: R.to_xp(b),
                "to_block (DLPack out)": lambda: R.to_block(xb),
                "DLPack round trip": lambda: R.to_block(R.to_xp(b)),
            }
            calls = 200 if args.quick else 2000
            us = pipelined_us(list(fns.values()), sync, calls=calls, rounds=reps)
            for (name, _), t in zip(fns.items(), us):
                call_rows.append({"call": name, "block": size, "us": t})
                rows.append({"case": f"one block [{size}/block]", "impl": name, "us": t})

    print(f"\nDask on {device}: {nblocks} float32 blocks, scheduler {args.scheduler}; "
          f"microseconds per block (the best of {reps} computes / blocks)")
    print_table(dask_rows, ["case", "plain", "recipe", "overhead", "recipe/plain", "agree"])
    print(f"\nOne block outside Dask on {device}: microseconds per call")
    print_table(call_rows, ["call", "block", "us"])
    if args.out:
        write_json(args.out / "dask.json",
                   {"benchmark": "dask", "env": environment(), "device": device,
                    "blocks": nblocks, "block_sizes": sizes, "scheduler": args.scheduler,
                    "reps": reps, "rows": rows})
    if bad:
        print(f"bench_dask: the recipe disagreed with the plain function in {bad}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
