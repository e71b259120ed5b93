"""__array_namespace_info__ (the inspection API of 2023.12, with the later revisions' changes)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _revisions
from ._data_type_functions import isdtype
from ._devices import all_devices, check_device, default_device
from ._dtypes import ALL_DTYPES, DEFAULT_DTYPES, ISDTYPE_KINDS

if TYPE_CHECKING:
    from ._typing import Device, DType


# capabilities(): key -> (the RULES row of the revision that added it, None for 2023.12's;
# the value).
# "max dimensions": 64 is the most NumPy 2 (NPY_MAXDIMS) and CuPy (_carray.MAX_NDIM, "matches
# NPY_MAXDIMS") let an array have, so the most any xp_cuda array can have on either device.
CAPABILITIES = {
    "boolean indexing": (None, True),
    "data-dependent shapes": (None, True),
    "max dimensions": ("max dimensions capability", 64),
}
_TUPLES = "tuples from devices, broadcast_arrays and meshgrid"


class Info:
    """What this namespace offers: capabilities, devices and dtypes."""

    def capabilities(self) -> dict[str, bool | int]:
        """Array API inspection ``capabilities``: what this library supports (boolean
        indexing, data-dependent shapes, and the later revisions' keys)."""
        return {key: value for key, (rule, value) in CAPABILITIES.items()
                if rule is None or _revisions.allows(rule)}

    def default_device(self) -> Device:
        """Array API inspection ``default_device``: cuda:0 where a GPU is usable, else cpu
        (XP_CUDA_DEFAULT_DEVICE overrides)."""
        return default_device()

    def default_dtypes(self, *, device: Device | None = None) -> dict[str, DType]:
        """Array API inspection ``default_dtypes``: the default real floating, complex
        floating, integral and indexing dtypes (the same on every device)."""
        if device is not None:
            check_device(device, "default_dtypes")
        return dict(DEFAULT_DTYPES)

    def devices(self) -> list[Device] | tuple[Device, ...]:
        """Array API inspection ``devices``: every device (a list; a tuple from 2025.12)."""
        devices = all_devices()
        return tuple(devices) if _revisions.allows(_TUPLES) else devices

    def dtypes(self, *, device: Device | None = None,
               kind: str | DType | tuple[str | DType, ...] | None = None) -> dict[str, DType]:
        """Array API inspection ``dtypes``: the dtypes (of ``kind``, as isdtype reads it) by
        name; every device has all of them."""
        if device is not None:
            check_device(device, "dtypes")
        if kind is None:
            return {d.name: d for d in ALL_DTYPES}
        if isinstance(kind, str) and kind not in ISDTYPE_KINDS:
            raise ValueError(f"dtypes: unknown kind {kind!r}; use one of {ISDTYPE_KINDS}")
        return {d.name: d for d in ALL_DTYPES if isdtype(d, kind)}


def __array_namespace_info__() -> Info:
    """Array API 2023.12 inspection: the namespace's information object (capabilities,
    devices, dtypes)."""
    return Info()
