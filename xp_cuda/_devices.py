"""Devices ("cpu", "cuda:N", and the simulated "cpu:N") and the default device.

The backend behind each device (the primitives the spec layer calls) is in xp_cuda._backends.

Simulated devices: with XP_CUDA_CPU_DEVICES=N (or xp_cuda.nonstandard.simulate_cpu_devices(N))
the devices cpu:1 ... cpu:N-1 exist beside cpu, each a distinct device in every rule (mixing
raises, to_device copies, device= is honoured and propagates) computing with NumPy, so that
code can test that it keeps arrays on the caller's device on a machine without a GPU. Off by
default (N = 1: cpu alone).
"""
from __future__ import annotations

import os
import warnings

ENV_DEFAULT_DEVICE = "XP_CUDA_DEFAULT_DEVICE"
ENV_CPU_DEVICES = "XP_CUDA_CPU_DEVICES"


_INTERNED: dict = {}  # (kind, index) -> the one Device object of that device


class Device:
    """A device: ``cpu`` or ``cuda:N``. Hashable, equal by value, printed as its name.

    One object per device (``Device("cuda", 0) is Device("cuda", 0)``): the hot paths test a
    kept plan's device by identity first, so an array whose device object was made anew (from
    a foreign array, DLPack, a pickle) must not fall to the full path on every call."""

    # _backend: the device's backend once xp_cuda._backends made it (Array._b reads it there:
    # a slot read instead of a call and a dict lookup on every operation)
    __slots__ = ("kind", "index", "_backend")
    kind: str
    index: int
    _backend: object

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
        dev.index = int(index)
        return _INTERNED.setdefault((dev.kind, dev.index), dev)

    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return self.kind == other.kind and self.index == other.index

    # Identity: one object per device (interned above), so equal devices are the same object
    # and hash alike; a C-level hash spares the Python call every backend lookup paid.
    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.kind}:{self.index}" if self.index or self.kind == "cuda" else "cpu"

    __str__ = __repr__

    def __reduce__(self):
        return (Device, (self.kind, self.index))

    @property
    def dlpack(self) -> tuple:
        """This device as DLPack's (device type, index): kDLCPU 1, kDLCUDA 2 (a simulated cpu:N
        is the host's memory: kDLCPU 0)."""
        return (1, 0) if self.kind == "cpu" else (2, self.index)


CPU = Device("cpu")

_cupy = None
_cuda_count = None
# Why CuPy gives no device although it is (or seems) installed: the exception's text, kept so
# that the default device's fallback to cpu and a refused cuda:N can name it. _LOUD: whether
# the fallback warns (a broken installation, a driver that refuses), or stays quiet (a machine
# without an NVIDIA driver: cpu is the ordinary answer there).
_reason = None
_loud = False
_warned = False

# cudaErrorNoDevice; cudaErrorInsufficientDriver (also what the runtime says without any driver)
_NO_DEVICE, _NO_DRIVER = 100, 35


def _driver_present() -> bool:
    """Whether this machine has an NVIDIA kernel driver (Linux: its /proc entry or its device
    node), so that a CUDA runtime that finds no driver means a broken setup, not a laptop."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")


def _note(what: str, e: BaseException, loud: bool) -> None:
    global _reason, _loud
    _reason = f"{what} failed: {type(e).__name__}: {e}".rstrip()
    _loud = loud


def cupy_module():
    """CuPy, imported on first need; None when it is not installed or does not import (the
    reason is kept: cuda_unavailable_reason)."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ModuleNotFoundError as e:
            _cupy = False
            if e.name != "cupy":  # cupy is there, a module it needs is not: a broken install
                _note("import cupy", e, True)
        except Exception as e:  # broken CUDA libraries, a failing dependency
            _cupy = False
            _note("import cupy", e, True)
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
        except Exception as e:
            _cuda_count = 0
            status = getattr(e, "status", None)
            quiet = status == _NO_DEVICE or (status == _NO_DRIVER and not _driver_present())
            _note("CuPy's device query (cupy.cuda.runtime.getDeviceCount())", e, not quiet)
    return _cuda_count


def cuda_unavailable_reason():
    """Why no CUDA device is usable although CuPy is installed (text), or None."""
    cuda_device_count()
    return _reason


_cpu_count = None  # cpu devices: 1 (cpu alone), or more with the simulated cpu:N


def cpu_device_count() -> int:
    """cpu and the simulated cpu:N devices: XP_CUDA_CPU_DEVICES (read once), or what
    simulate_cpu_devices set; 1 by default."""
    global _cpu_count
    if _cpu_count is None:
        env = os.environ.get(ENV_CPU_DEVICES, "").strip()
        if not env:
            _cpu_count = 1
        elif env.isdigit() and int(env) >= 1:
            _cpu_count = int(env)
        else:
            raise ValueError(f"{ENV_CPU_DEVICES}={env!r}: write how many cpu devices there "
                             f"are, 1 (cpu alone) or more (cpu, cpu:1, ...)")
    return _cpu_count


def simulate_cpu_devices(n: int) -> list:
    """Make cpu:1 ... cpu:n-1 exist beside cpu (n = 1: cpu alone again); returns the devices.
    Arrays made on a device that is switched off keep working there; no new array can be put
    on it (device=, to_device and XP_CUDA_DEFAULT_DEVICE refuse it)."""
    global _cpu_count, _default
    if type(n) is not int or n < 1:
        raise ValueError(f"simulate_cpu_devices: n must be an int of at least 1, got {n!r}")
    _cpu_count = n
    _default = None  # (XP_CUDA_DEFAULT_DEVICE may name one of them)
    return all_devices()


def all_devices() -> list:
    return [Device("cpu", i) for i in range(cpu_device_count())] + [
        Device("cuda", i) for i in range(cuda_device_count())]


def parse_device(text: str) -> Device:
    t = text.strip().lower()
    if t == "cpu":
        return CPU
    for kind in ("cpu", "cuda"):
        if t.startswith(kind + ":") and t[len(kind) + 1:].isdigit():
            return Device(kind, int(t[len(kind) + 1:]))
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
        elif cuda_device_count() > 0:
            _default = Device("cuda", 0)
        else:
            _default = CPU
            _warn_fallback()
    return _default


def _warn_fallback() -> None:
    """Once: the default device fell back to cpu because CuPy is broken (not merely absent)."""
    global _warned
    if _loud and not _warned:
        _warned = True
        warnings.warn(
            f"xp_cuda: the default device is cpu because no CUDA device is usable: {_reason}. "
            f"Repair the CuPy/CUDA installation to use the GPU, or set "
            f"{ENV_DEFAULT_DEVICE}=cpu to choose cpu knowingly", RuntimeWarning, stacklevel=3)


def check_device(device, where: str = "device") -> Device:
    """Validate a device argument (a Device object). None is handled by callers."""
    if not isinstance(device, Device):
        raise TypeError(
            f"{where}: expected a device object, got {device!r}; use x.device or one of "
            f"xp.__array_namespace_info__().devices()"
        )
    if device.kind == "cpu" and device.index >= cpu_device_count():
        raise ValueError(
            f"{where}: {device} is a simulated device, and {cpu_device_count()} cpu "
            f"device{'s are' if cpu_device_count() != 1 else ' is'} on; set "
            f"{ENV_CPU_DEVICES}={device.index + 1} (or call "
            f"xp_cuda.nonstandard.simulate_cpu_devices({device.index + 1})), or use one of "
            f"{all_devices()}")
    if device.kind == "cuda" and device.index >= cuda_device_count():
        n = cuda_device_count()
        why = f"; CuPy: {_reason}" if n == 0 and _reason else ""
        raise ValueError(
            f"{where}: {device} is not usable here ({n} CUDA device{'s' if n != 1 else ''} "
            f"visible{why}); use one of {all_devices()}"
        )
    return device
