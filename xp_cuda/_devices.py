"""Devices ("cpu", "cuda:N") and the default device.

The backend behind each device (the primitives the spec layer calls) is in xp_cuda._backends.
"""
from __future__ import annotations

import os

ENV_DEFAULT_DEVICE = "XP_CUDA_DEFAULT_DEVICE"


_INTERNED: dict = {}  # (kind, index) -> the one Device object of that device


class Device:
    """A device: ``cpu`` or ``cuda:N``. Hashable, equal by value, printed as its name.

    One object per device (``Device("cuda", 0) is Device("cuda", 0)``): the hot paths test a
    kept plan's device by identity first, so an array whose device object was made anew (from
    a foreign array, DLPack, a pickle) must not fall to the full path on every call."""

    __slots__ = ("kind", "index")

    def __new__(cls, kind: str, index: int = 0):
        try:
            dev = _INTERNED.get((kind, index))
        except TypeError:  # an unhashable kind: refused below
            dev = None
        if dev is not None:
            return dev
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"unknown device kind {kind!r}; devices are 'cpu' and 'cuda:N'")
        dev = object.__new__(cls)
        dev.kind = kind
        dev.index = 0 if kind == "cpu" else int(index)
        return _INTERNED.setdefault((dev.kind, dev.index), dev)

    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return self.kind == other.kind and self.index == other.index

    def __hash__(self):
        return hash((self.kind, self.index))

    def __repr__(self):
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"

    __str__ = __repr__

    def __reduce__(self):
        return (Device, (self.kind, self.index))

    @property
    def dlpack(self) -> tuple:
        """This device as DLPack's (device type, index): kDLCPU 1, kDLCUDA 2."""
        return (1, 0) if self.kind == "cpu" else (2, self.index)


CPU = Device("cpu")

_cupy = None
_cuda_count = None


def cupy_module():
    """CuPy, imported on first need; None when it is not installed."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except Exception:  # not installed, or broken CUDA libraries: no cuda devices
            _cupy = False
        else:
            _cupy = cupy
    return _cupy or None


def cuda_device_count() -> int:
    """Number of usable GPUs (0 without CuPy, a driver or a GPU)."""
    global _cuda_count
    if _cuda_count is None:
        cp = cupy_module()
        try:
            _cuda_count = cp.cuda.runtime.getDeviceCount() if cp is not None else 0
        except Exception:
            _cuda_count = 0
    return _cuda_count


def all_devices() -> list:
    return [CPU] + [Device("cuda", i) for i in range(cuda_device_count())]


def parse_device(text: str) -> Device:
    t = text.strip().lower()
    if t == "cpu":
        return CPU
    if t.startswith("cuda:") and t[5:].isdigit():
        return Device("cuda", int(t[5:]))
    if t == "cuda":
        return Device("cuda", 0)
    raise ValueError(f"cannot read {text!r} as a device; write 'cpu' or 'cuda:N'")


_default = None


def default_device() -> Device:
    """cuda:0 when a GPU is usable, else cpu; XP_CUDA_DEFAULT_DEVICE overrides."""
    global _default
    if _default is None:
        env = os.environ.get(ENV_DEFAULT_DEVICE)
        if env:
            try:
                dev = parse_device(env)
            except ValueError as e:
                raise ValueError(f"{ENV_DEFAULT_DEVICE}={env!r}: {e}") from None
            check_device(dev, f"{ENV_DEFAULT_DEVICE}={env!r}")
            _default = dev
        else:
            _default = Device("cuda", 0) if cuda_device_count() > 0 else CPU
    return _default


def check_device(device, where: str = "device") -> Device:
    """Validate a device argument (a Device object). None is handled by callers."""
    if not isinstance(device, Device):
        raise TypeError(
            f"{where}: expected a device object, got {device!r}; use x.device or one of "
            f"xp.__array_namespace_info__().devices()"
        )
    if device.kind == "cuda" and device.index >= cuda_device_count():
        n = cuda_device_count()
        raise ValueError(
            f"{where}: {device} is not usable here ({n} CUDA device{'s' if n != 1 else ''} "
            f"visible); use one of {all_devices()}"
        )
    return device
