"""__array_namespace_info__ (2023.12 inspection API)."""
from __future__ import annotations

from ._data_type_functions import isdtype
from ._devices import all_devices, check_device, default_device
from ._dtypes import ALL_DTYPES, DEFAULT_DTYPES, ISDTYPE_KINDS


class Info:
    """What this namespace offers: capabilities, devices and dtypes."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True}

    def default_device(self):
        return default_device()

    def default_dtypes(self, *, device=None):
        if device is not None:
            check_device(device, "default_dtypes")
        return dict(DEFAULT_DTYPES)

    def devices(self):
        return all_devices()

    def dtypes(self, *, device=None, kind=None):
        if device is not None:
            check_device(device, "dtypes")
        if kind is None:
            return {d.name: d for d in ALL_DTYPES}
        if isinstance(kind, str) and kind not in ISDTYPE_KINDS:
            raise ValueError(f"dtypes: unknown kind {kind!r}; use one of {ISDTYPE_KINDS}")
        return {d.name: d for d in ALL_DTYPES if isdtype(d, kind)}


def __array_namespace_info__():
    return Info()
