"""Data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type (scalars from
2024.12)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import _revisions
from ._array import Array, _move, _wrap, check_array, kept_one
from ._devices import check_device
from ._dtypes import (CATEGORIES, ISDTYPE_KINDS, PROMOTION_TABLE, DType, promote,
                      real_dtype, scalar_dtype, scalar_type_name)
from ._validation import check_copy, check_dtype_arg

if TYPE_CHECKING:
    from ._devices import Device
    from ._typing import PyScalar


def astype(x: Array, dtype: DType, /, *, copy: bool = True,
           device: Device | None = None) -> Array:
    """Array API 2023.12 ``astype`` (data type functions): ``x`` converted to ``dtype`` (a
    complex to real cast is refused: take real, imag or abs first); ``copy=False`` returns ``x``
    itself where the dtype already matches."""
    fname = "astype"
    d = check_array(x, fname)._data
    if device is None and copy is True:  # the everyday call: a kept launch first
        key = (fname, d.dtype, d.shape, dtype, type(dtype))
        r = kept_one(key, x, d)
        if r is not None:
            return r
    else:
        key = None
    check_dtype_arg(dtype, fname)
    check_copy(copy, fname, allow_none=False)
    x_dtype = x.dtype
    if x_dtype.kind == "complex" and dtype.kind != "complex":
        raise TypeError(f"astype: casting complex {x.dtype} to real {dtype} is not allowed "
                        f"(Array API {_revisions.api_version()}); take xp.real, xp.imag or "
                        f"xp.abs first")
    dev = x._device
    if device is None or device is dev or check_device(device, fname) == dev:
        if dtype is x_dtype and not copy:
            return x
        return _wrap(x._b.astype(x._data, dtype, bool(copy), key), dev)
    moved = _wrap(_move(x, device), device)  # a new array: no second copy needed
    if dtype is x.dtype:
        return moved
    return _wrap(moved._b.astype(moved._data, dtype, False), device)


def _dtype_of(v, fname, argname):
    if isinstance(v, DType):
        return v
    if isinstance(v, Array):
        return v.dtype
    raise TypeError(f"{fname}: {argname} must be an xp_cuda dtype or array, got {v!r}")


def can_cast(from_: DType | Array, to: DType, /) -> bool:
    """Array API 2023.12 ``can_cast`` (data type functions): true when from_ promotes to `to`
    under the spec's table (no value can change)."""
    src = _dtype_of(from_, "can_cast", "from_")
    check_dtype_arg(to, "can_cast")
    return PROMOTION_TABLE.get((src, to)) is to


@dataclass(frozen=True)
class finfo_object:
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:
    bits: int
    max: int
    min: int
    dtype: DType


def finfo(type: DType | Array, /) -> finfo_object:
    """Array API 2023.12 ``finfo`` (data type functions): machine limits of a floating-point
    dtype (bits, eps, max, min, smallest_normal, dtype)."""
    dt = _dtype_of(type, "finfo", "type")
    if dt.kind not in ("float", "complex"):
        raise TypeError(f"finfo: {dt} is not a floating-point dtype; use iinfo for integers")
    r = real_dtype(dt)
    fi = np.finfo(r._np)
    return finfo_object(int(fi.bits), float(fi.eps), float(fi.max), float(fi.min),
                        float(fi.smallest_normal), r)


def iinfo(type: DType | Array, /) -> iinfo_object:
    """Array API 2023.12 ``iinfo`` (data type functions): machine limits of an integer dtype
    (bits, max, min, dtype)."""
    dt = _dtype_of(type, "iinfo", "type")
    if dt.kind not in ("int", "uint"):
        raise TypeError(f"iinfo: {dt} is not an integer dtype; use finfo for floating-point")
    ii = np.iinfo(dt._np)
    return iinfo_object(int(ii.bits), int(ii.max), int(ii.min), dt)


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> bool:
    """Array API 2023.12 ``isdtype`` (data type functions): whether ``dtype`` is of ``kind`` (a
    dtype, a kind name such as 'integral' or 'real floating', or a tuple of them)."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: dtype must be an xp_cuda dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        if kind not in ISDTYPE_KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; use one of {ISDTYPE_KINDS}, a "
                             f"dtype, or a tuple of them")
        return dtype in CATEGORIES[kind]
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple, got {kind!r}")


def result_type(*arrays_and_dtypes: Array | DType | PyScalar) -> DType:
    """Array API 2023.12 ``result_type`` (data type functions): the promoted dtype of arrays and
    dtypes; from 2024.12 Python scalars too, each typed by the scalar rules against the arrays'
    and dtypes' promoted dtype (at least one array or dtype is required)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    dts, scalars = [], []
    for v in arrays_and_dtypes:
        if isinstance(v, (DType, Array)) or scalar_type_name(v) is None:
            dts.append(_dtype_of(v, "result_type", "argument"))
        elif not _revisions.allows("python scalars in result_type"):
            raise TypeError(_revisions.later("python scalars in result_type",
                                             f"result_type: a Python {scalar_type_name(v)} "
                                             f"argument ({v!r})"))
        else:
            scalars.append(v)
    if not dts:
        raise ValueError(f"result_type: at least one array or dtype is required beside the "
                         f"Python scalars {scalars!r} (a scalar's dtype follows from them)")
    out = dts[0]
    for d in dts[1:]:
        out = promote(out, d)
    for v in scalars:  # (a scalar takes the promoted dtype, or the complex one for a complex)
        out = scalar_dtype(v, out, "result_type")
    return out


__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]
