"""KDTree's doors for foreign data: where a tree over some data lives, and how that data (or a
query, a radius, weights) comes in as a float64 native array on the tree's device.

Kept apart from the facade (``_kdtree.py``) because it is the namespace's door logic, not the
tree's: HOUSE change 7(b) gathers it with ``asarray``'s and ``from_dlpack``'s into one doors
module (``xp_cuda/_foreign.py``), and this file is what moves there.
"""
from __future__ import annotations

import numpy as np

import xp_cuda
from .._array import Array
from .._backends import backend
from .._devices import Device, cupy_module, default_device

__all__ = ["bring", "home_device", "widen_foreign"]

_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


def home_device(obj) -> Device:
    """Where a tree over obj lives: an xp_cuda array's device, a CUDA array's (CuPy, torch via
    DLPack) GPU, else the default device."""
    if isinstance(obj, Array):
        return obj.device
    cp = cupy_module() if type(obj).__module__.split(".")[0] == "cupy" else None
    if cp is not None and isinstance(obj, cp.ndarray):
        return Device("cuda", obj.device.id)
    if hasattr(obj, "__dlpack_device__") and not isinstance(obj, (np.ndarray, np.generic)):
        try:
            kind, index = (int(v) for v in obj.__dlpack_device__())
        except Exception:
            kind = None
        if kind in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            return Device("cuda", index)
    return default_device()


def widen_foreign(obj):
    """NumPy/CuPy/DLPack data whose dtype the namespace does not carry (float16, longdouble)
    becomes float64 here, before it enters through xp_cuda.asarray."""
    if isinstance(obj, Array):
        return obj
    if isinstance(obj, (np.ndarray, np.generic)):
        if obj.dtype.kind == "c":
            raise TypeError("KDTree does not work with complex data")
        if obj.dtype.kind == "f" and obj.dtype not in (np.float32, np.float64):
            return np.asarray(obj, dtype=np.float64)
        return obj
    cp = cupy_module() if type(obj).__module__.split(".")[0] == "cupy" else None
    if cp is not None and isinstance(obj, cp.ndarray):
        if obj.dtype.kind == "f" and obj.dtype not in (np.float32, np.float64):
            # CuPy's cast (built with -ftz) is exact here: every float16 value, subnormals
            # included, is a normal float32 and float64 number; nothing to flush
            with cp.cuda.Device(obj.device.id):
                return obj.astype(cp.float64)
        return obj
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        try:
            return xp_cuda.from_dlpack(obj)
        except TypeError:  # a dtype outside the namespace: import natively, then widen
            kind = int(obj.__dlpack_device__()[0])
            if kind in (_KDL_CUDA, _KDL_CUDA_MANAGED) and cupy_module() is not None:
                return widen_foreign(cupy_module().from_dlpack(obj))
            try:
                return widen_foreign(np.from_dlpack(obj))
            except Exception as e:
                raise TypeError(f"cannot take in a {type(obj).__name__} of this dtype ({e}); "
                                f"convert it to float64 first") from None
    return obj


def bring(obj, device: Device, what: str):
    """obj as a float64 native (NumPy or CuPy) array on ``device`` (copy only when needed)."""
    a = xp_cuda.asarray(widen_foreign(obj))
    kind = a.dtype.kind
    if kind == "complex":
        raise TypeError(f"KDTree does not work with complex data ({what} has dtype {a.dtype})")
    if a.device != device:
        a = a.to_device(device)
    b = backend(device)
    nat = a._data
    if nat.dtype != np.float64:
        # the backend's astype: on cuda our kernel (CuPy's astype is built with -ftz and made
        # float32 subnormal coordinates 0)
        nat = b.astype(nat, xp_cuda.float64, False)
    return nat
