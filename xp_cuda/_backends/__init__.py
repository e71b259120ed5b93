"""Backends: one object per device kind, each with the same named primitives.

The spec layer validates, takes result dtypes and shapes from its tables, and ends in one call
of a primitive of the backend its arrays name (``x._b``). Primitives take and return native
arrays (NumPy, CuPy, or the tracer's values); they never check user input.

- ``cpu`` (``cpu.py``): NumPy, and the reference semantics of every CUDA kernel.
- ``cuda`` (``cuda.py``): CuPy memory and library calls plus our generated kernels.
- the tracer of ``xp_cuda.fusion`` (``xp_cuda/fusion/_backend.py``): records IR nodes.

``Backend`` holds the primitives whose NumPy spelling serves NumPy and CuPy alike; a device
kind overrides a primitive where it differs, under the same name. Everything else the spec
layer needs from NumPy's API it calls as ``b.xp.<name>`` (CuPy mirrors NumPy there).
"""
from __future__ import annotations

from .._devices import CPU, Device, check_device
from ._base import FAST, Backend, EmptyMask
from .cpu import CpuBackend
from .cuda import CudaBackend

__all__ = ["Backend", "CpuBackend", "CudaBackend", "EmptyMask", "FAST", "backend", "existing"]

_backends: dict = {CPU: CpuBackend()}
CPU._backend = _backends[CPU]


def backend(device: Device) -> Backend:
    """The backend of a device (cpu, or cuda:N made on first use)."""
    try:
        return _backends[device]
    except KeyError:
        check_device(device)
        b = _backends[device] = (CpuBackend(device) if device.kind == "cpu" else
                                 CudaBackend(device))
        device._backend = b
        return b


def existing() -> list:
    """The backends made so far (those that may hold cached memory)."""
    return list(_backends.values())
