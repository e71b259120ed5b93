"""`python -m xp_cuda`: versions, devices, the default device, and the standard at work on it."""
from __future__ import annotations

import platform
import sys


def _device_lines(xp):
    from xp_cuda._devices import cupy_module
    lines = []
    for d in xp.__array_namespace_info__().devices():
        if d.kind == "cpu":
            lines.append(f"  cpu      {platform.processor() or platform.machine()} (NumPy)")
            continue
        cp = cupy_module()
        props = cp.cuda.runtime.getDeviceProperties(d.index)
        with cp.cuda.Device(d.index):
            free, total = cp.cuda.runtime.memGetInfo()
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        lines.append(f"  {d}   {name}, compute capability {props['major']}.{props['minor']}, "
                     f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)")
    return lines


def main() -> int:
    import numpy as np

    import xp_cuda as xp
    from xp_cuda._devices import cupy_module

    cp = cupy_module()
    print(f"xp_cuda {xp.__version__}: Array API standard {xp.__array_api_version__}")
    print(f"Python {sys.version.split()[0]}, NumPy {np.__version__}, "
          f"CuPy {cp.__version__ if cp else 'not installed'}")
    print("devices:")
    print("\n".join(_device_lines(xp)))
    dev = xp.__array_namespace_info__().default_device()
    print(f"default device: {dev}  (set XP_CUDA_DEFAULT_DEVICE=cpu or cuda:N to change it)")
    print()
    x = xp.linspace(0.0, 1.0, 5, device=dev)
    y = xp.arange(5, dtype=xp.float32, device=dev)
    print(f"x = xp.linspace(0.0, 1.0, 5)            -> {x}")
    print(f"y = xp.arange(5, dtype=xp.float32)      -> {y}")
    print(f"x * y (float64 with float32 promotes)   -> {x * y}")
    print(f"xp.sqrt(y) + 1                          -> {xp.sqrt(y) + 1}")
    print(f"y[y > 2] (boolean mask)                 -> {y[y > 2]}")
    for expr, f in (("xp.arange(3) + xp.ones(3)", lambda: xp.arange(3, device=dev) + xp.ones(3, device=dev)),
                    ("y + 2**40 on an int8 array", lambda: xp.ones(2, dtype=xp.int8, device=dev) + 2**40)):
        try:
            f()
        except (TypeError, OverflowError) as e:
            print(f"{expr:40s}-> {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
