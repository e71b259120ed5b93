"""Shared test utilities: random (never zero) data of every dtype, the way back to NumPy, and
why NVRTC cannot compile here."""
import functools

import numpy as np

import xp_cuda as xp
from xp_cuda._dtypes import ALL_DTYPES, CATEGORIES

NUMERIC = CATEGORIES["numeric"]
REAL = CATEGORIES["real-valued"]
FLOATING = CATEGORIES["floating-point"]
INTEGER = CATEGORIES["integer"]


def to_numpy(x):
    """An xp_cuda array as a NumPy array, through the public DLPack door (copies from a GPU)."""
    return np.from_dlpack(x, device="cpu")


def random_numpy(rng, shape, dtype):
    """Random values of an xp_cuda dtype as NumPy data; integers span most of the range."""
    npd = dtype._np
    if dtype.kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in ("int", "uint"):
        info = np.iinfo(npd)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(npd)
    if dtype.kind == "float":
        return (rng.standard_normal(shape) * 10).astype(npd)
    return (rng.standard_normal(shape) * 10 + 1j * rng.standard_normal(shape) * 10).astype(npd)


def random_array(rng, shape, dtype, device):
    a = random_numpy(rng, shape, dtype)
    return xp.asarray(a, device=device, copy=True), a  # never aliases the reference


__all__ = ["ALL_DTYPES", "NUMERIC", "REAL", "FLOATING", "INTEGER", "to_numpy", "random_numpy",
           "random_array"]


@functools.lru_cache(maxsize=None)
def nvrtc_missing():
    """Why NVRTC cannot compile here (None when it can): the skip reason of compile tests."""
    try:
        from cupy_backends.cuda.libs import nvrtc
    except Exception as e:  # no CuPy, or a broken install
        return f"cupy_backends.cuda.libs.nvrtc cannot be imported ({e!r}); install xp-cuda[test]"
    try:
        nvrtc.getVersion()  # loads the NVRTC shared library
    except Exception as e:
        return f"NVRTC library cannot be loaded ({e!r}); install nvidia-cuda-nvrtc-cu12"
    return None
