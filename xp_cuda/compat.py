"""xp_cuda.compat: xp_cuda as the chunk namespace of an array engine (Cubed). NOT strict.

``xp_cuda`` keeps every rule of the Array API standard. An engine such as Cubed, handed a
namespace, does not: it speaks NumPy's dtypes and device strings, feeds back the NumPy arrays
it read from storage, and makes a few calls the standard does not have (or not with those
arguments). This module is the adapter between the two, for engines only::

    CUBED_BACKEND_ARRAY_API_MODULE=xp_cuda.compat python my_cubed_program.py

What it is (docs/cubed.md says it at length):

- the namespace of the newest revision of the standard (2025.12: ``broadcast_shapes``,
  ``take_along_axis``, ``isin``, ``diff``, ``cumulative_prod``, tuple ``expand_dims``, integer
  array indexing), which importing this module puts in force for the whole process
  (``xp_cuda.set_api_version``);
- its dtypes are NumPy's (``compat.float32 is numpy.dtype("float32")``): Cubed turns every
  dtype into NumPy's and then looks it up among the namespace's. Every function takes NumPy's
  or xp_cuda's dtypes; the arrays are xp_cuda arrays, with xp_cuda dtypes;
- every function of that namespace, each either the strict function itself (when nothing
  needs converting) or a thin wrapper that converts at the edge as the table ``CONVERT``
  says (NumPy dtypes, NumPy scalar types and Python types in, device strings in, NumPy arrays
  in; xp_cuda arrays out) and then calls the strict function;
- the engine's non-standard calls (``ENGINE_CALLS``: ``nansum``, ``array``, ``mean(dtype=)``,
  ``sum`` of a bool mask, a float total divided by an integer count, ``full_like(shape=)``,
  NumPy's promotion for arrays of two kinds, ...), each implemented from standard functions,
  each naming the engine's call that needs it;
- devices: new arrays, and the NumPy arrays it converts, go to this process's device,
  ``worker_device()``: without ``XP_CUDA_COMPAT_DEVICES``, xp_cuda's default device; with it
  (e.g. ``cuda:0,cuda:1``), the first in the main process and, in worker process number N of
  a pool (Cubed's processes executor), the ``(N - 1) % len``-th: round-robin;
- ``numpy.asarray`` of an array on a GPU copies it to the host in this process
  (``xp_cuda.nonstandard.numpy_copies(True)``, turned on at import): Cubed stores every task's
  result through ``numpy.asarray``;
- its arrays are ``CompatArray``, a subclass of xp_cuda's ``Array`` that only compat makes:
  every function of compat returns them, and so do their operators and indexing, so that an
  engine's chains of calls on its chunks stay lenient. Cubed's own code reaches the array
  object too (``ARRAY_LENIENCY`` names each line): its operators are compat's functions
  (NumPy's promotion for operands of two kinds, NumPy arrays and scalars as operands), ``len``
  is the length of the first axis, and an index may hold NumPy integer arrays (also to
  assign through) and NumPy scalars.

What it is not: a way to write portable code. A library that runs on ``compat`` has not been
shown to keep the standard; test it on ``xp_cuda`` itself. ``xp_cuda``'s own functions and
arrays keep every rule, with compat imported or not: only compat's arrays are lenient.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import itertools
import multiprocessing
import os
import sys
import threading
import types
from typing import Any, Callable, Iterable

import numpy as np

import xp_cuda as _xp

from . import _revisions
from ._array import Array, _rebuild
from ._devices import Device, check_device, parse_device
from ._dtypes import DType
from ._elementwise import _BINARY_OPERATORS, _COMPARISONS, _UNARY_OPERATORS
from .nonstandard import numpy_copies

NEWEST = _revisions.REVISIONS[-1]
if _revisions.api_version() != NEWEST:
    _xp.set_api_version(NEWEST)
numpy_copies(True)

ENV_DEVICES = "XP_CUDA_COMPAT_DEVICES"
_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64", "complex64", "complex128")
_PY_TYPE_DEFAULTS = {int: "integral", float: "real floating", complex: "complex floating"}
# compat's dtypes are NumPy's: Cubed makes every dtype NumPy's (cubed/utils.py:381,
# normalize_dtype returns numpy.dtype(dtype)) and then looks it up among the namespace's
# (``x.dtype in (nxp.float32, ...)``); xp_cuda's own dtypes never equal NumPy's on their side.
# Every function of compat takes either kind; arrays keep xp_cuda's dtypes (x.dtype).
DTYPES: dict[str, np.dtype] = {name: np.dtype(name) for name in _DTYPE_NAMES}


# ---------------------------------------------------------------------------------------------
# The device of this process
# ---------------------------------------------------------------------------------------------

_chosen: tuple[int, Device] | None = None  # (process id, its device): a forked child chooses anew


def worker_device() -> Device:
    """The device this worker computes on: where compat puts new arrays and the NumPy arrays
    it converts. With ``XP_CUDA_COMPAT_DEVICES`` (comma-separated, e.g. ``cuda:0,cuda:1``):
    the first in the main thread of the main process; in worker process number N of a pool
    (Cubed's processes executor names them ``SpawnProcess-N``) the ``(N - 1) % len(devices)``-th;
    and each other thread (Cubed's threads executor) the next in turn, in the order threads
    first ask. So the workers of either executor spread round-robin over the devices. Without
    the variable, xp_cuda's default device (``XP_CUDA_DEFAULT_DEVICE`` pins that)."""
    global _chosen
    if (threading.current_thread() is not threading.main_thread()
            and os.environ.get(ENV_DEVICES, "").strip()):
        device = getattr(_thread, "device", None)
        if device is None:
            with _turn_lock:
                turn = next(_turns)
            device = _thread.device = _choose_device(turn)
        return device
    pid = os.getpid()
    if _chosen is None or _chosen[0] != pid:
        _chosen = (pid, _choose_device(_worker_number()))
    return _chosen[1]


_thread = threading.local()  # .device: this thread's, once chosen
_turns = itertools.count(1)  # the next thread's number (1, 2, ...)
_turn_lock = threading.Lock()


def _worker_number() -> int | None:
    """N of a pool's worker process (multiprocessing's ``_identity``, the N of its name
    ``SpawnProcess-N``/``ForkProcess-N``); None in the main process."""
    identity = getattr(multiprocessing.current_process(), "_identity", ())
    return identity[0] if identity else None


def _choose_device(n: int | None) -> Device:
    """Device number n (1, 2, ...; round-robin) of XP_CUDA_COMPAT_DEVICES, the first for None."""
    text = os.environ.get(ENV_DEVICES, "").strip()
    if not text:
        return _xp.__array_namespace_info__().default_device()
    where = f"{ENV_DEVICES}={text!r}"
    devices = [_device(name, where) for name in text.split(",") if name.strip()]
    if not devices:
        raise ValueError(f"{where}: name one device or more, e.g. 'cuda:0,cuda:1'")
    return devices[0] if n is None else devices[(n - 1) % len(devices)]


# ---------------------------------------------------------------------------------------------
# The conversions at the edge
# ---------------------------------------------------------------------------------------------

def _device(value: Any, where: str = "device") -> Any:
    """A device string ("cpu", "cpu:1", "cuda", "cuda:0") -> the xp_cuda device, read and
    checked as XP_CUDA_DEFAULT_DEVICE is; a Device and None pass through."""
    if value is None or isinstance(value, Device):
        return value
    if not isinstance(value, str):
        raise TypeError(f"xp_cuda.compat: {where}: expected an xp_cuda device or a device "
                        f"string such as 'cpu' or 'cuda:0', got {value!r}")
    try:
        device = parse_device(value)
    except ValueError as e:
        raise ValueError(f"xp_cuda.compat: {where}: {e}") from None
    return check_device(device, f"xp_cuda.compat: {where}")


def _here(value: Any, where: str = "device") -> Device:
    """A device argument of a function that makes a new array: None is this process's device."""
    return worker_device() if value is None else _device(value, where)


def _dtype(value: Any, where: str = "dtype") -> Any:
    """A NumPy dtype, a NumPy scalar type (numpy.float32), a dtype string ("f8") or a Python
    type (bool, int, float, complex: the default dtype of that kind) -> the xp_cuda dtype of
    the same name; an xp_cuda dtype and None pass through. An array passes through too (the
    functions whose argument may be an array or a dtype: can_cast, finfo, result_type)."""
    if value is None or isinstance(value, (DType, Array)):
        return value
    if value is builtins.bool:
        return _xp.bool
    if isinstance(value, type) and value in _PY_TYPE_DEFAULTS:
        return _xp.__array_namespace_info__().default_dtypes()[_PY_TYPE_DEFAULTS[value]]
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"xp_cuda.compat: {where}: {value!r} is not a dtype; use an xp_cuda "
                        f"dtype (xp_cuda.float32), a NumPy dtype or a Python type") from None
    if npd.fields is None and npd.isnative and npd.name in _DTYPE_NAMES:
        return getattr(_xp, npd.name)
    raise TypeError(f"xp_cuda.compat: {where}: NumPy's {npd!r} has no xp_cuda counterpart; "
                    f"xp_cuda has the 13 dtypes of the Array API standard "
                    f"({', '.join(_DTYPE_NAMES)})")


def _numpy_dtype(dtype: DType) -> np.dtype:
    """An xp_cuda dtype -> compat's dtype of that name (NumPy's)."""
    return DTYPES[dtype.name]


def _kind(value: Any, where: str = "kind") -> Any:
    """isdtype's kind: a name, a dtype (converted as ``_dtype``) or a tuple of them."""
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return tuple(_kind(v, where) for v in value)
    return _dtype(value, where)


def _has_numpy(obj: Any) -> bool:
    if isinstance(obj, (np.ndarray, np.generic)):
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_has_numpy(o) for o in obj)


def _array(value: Any, where: str = "array") -> Any:
    """A NumPy array or NumPy scalar -> an xp_cuda array on this process's device (a NumPy
    scalar keeps its dtype: NumPy 2 types its scalars as strongly as its arrays)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return asarray(value)
    return value


def _arrays(value: Any, where: str = "arrays") -> Any:
    """A sequence whose items convert as ``_array``."""
    if isinstance(value, (list, tuple)) and builtins.any(_has_numpy(v) for v in value):
        return type(value)(_array(v) for v in value)
    return value


def _scalar(value: Any, where: str = "scalar") -> Any:
    """A NumPy scalar or a 0-d NumPy or xp_cuda array -> the Python scalar (where the standard
    takes a Python scalar only: fill values, clip's bounds)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    if isinstance(value, Array) and value.ndim == 0:
        kind = value.dtype.kind
        return (builtins.bool(value) if kind == "bool" else complex(value) if kind == "complex"
                else float(value) if kind == "float" else int(value))
    return value


def _dtypes_or_arrays(values: Iterable[Any], where: str = "arrays_and_dtypes") -> list:
    return [_array(v, where) if isinstance(v, np.ndarray) else _dtype(v, where)
            if not isinstance(v, (builtins.bool, int, float, complex)) else v for v in values]


# converter name -> (function, whether it applies to an absent argument: None -> a default)
_CONVERTERS: dict[str, tuple[Callable[[Any, str], Any], bool]] = {
    "dtype": (_dtype, False),
    "kind": (_kind, False),
    "device": (_device, False),
    "device here": (_here, True),  # and an absent device is this process's
    "array": (_array, False),
    "arrays": (_arrays, False),
    "scalar": (_scalar, False),
    "dtypes or arrays": (_dtypes_or_arrays, False),  # every positional argument
}

_NEW = {"dtype": "dtype", "device": "device here"}  # a function making a new array
_LIKE = {"dtype": "dtype", "device": "device"}  # *_like: the device defaults to x's
_REDUCE = {"x": "array", "dtype": "dtype"}

# Which parameters convert, function by function (the strict namespace's parameter names).
# A function not named here is the strict function itself.
CONVERT: dict[str, dict[str, str]] = {
    # creation functions: NumPy dtypes and device strings in; new arrays on this process's
    # device (asarray, below, also takes NumPy structured arrays and NumPy scalars in lists)
    "arange": _NEW, "empty": _NEW, "eye": _NEW, "linspace": _NEW, "ones": _NEW,
    "zeros": _NEW, "full": {**_NEW, "fill_value": "scalar"},
    "empty_like": _LIKE, "ones_like": _LIKE, "zeros_like": _LIKE,
    "full_like": {**_LIKE, "fill_value": "scalar"},
    "from_dlpack": {"device": "device"},
    "fft.fftfreq": _NEW, "fft.rfftfreq": _NEW,
    # data type functions
    "astype": {"x": "array", "dtype": "dtype", "device": "device"},
    "can_cast": {"from_": "dtype", "to": "dtype"},
    "finfo": {"type": "dtype"}, "iinfo": {"type": "dtype"},
    "isdtype": {"dtype": "dtype", "kind": "kind"},
    "result_type": {"arrays_and_dtypes": "dtypes or arrays"},
    # reductions and scans (with a dtype): NumPy arrays in too (Cubed's tests compute their
    # expected values with nxp.mean(numpy_array, ...), cubed/tests/test_gufunc.py:25)
    "sum": _REDUCE, "prod": _REDUCE, "nansum": _REDUCE, "mean": _REDUCE,
    "cumulative_sum": _REDUCE, "cumulative_prod": _REDUCE,
    "max": {"x": "array"}, "min": {"x": "array"}, "var": {"x": "array"},
    "std": {"x": "array"}, "linalg.trace": {"dtype": "dtype"},
    # NumPy arrays the engine makes itself (indices, group labels, bounds)
    "take": {"x": "array", "indices": "array"},
    "take_along_axis": {"x": "array", "indices": "array"},
    "searchsorted": {"x1": "array", "x2": "array", "sorter": "array"},
    "isin": {"x1": "array", "x2": "array"},
    "where": {"condition": "array", "x1": "array", "x2": "array"},
    "clip": {"x": "array", "min": "scalar", "max": "scalar"},
    "concat": {"arrays": "arrays"}, "stack": {"arrays": "arrays"},
    "expand_dims": {"x": "array"},
    "diff": {"x": "array", "prepend": "array", "append": "array"},
}


def _converting(func: Callable[..., Any], params: dict[str, str],
                name: str) -> Callable[..., Any]:
    """``func`` behind the conversions ``params`` names (parameter -> converter)."""
    sig = inspect.signature(func)
    names = list(sig.parameters)
    plan = []
    for param, conv in params.items():
        p = sig.parameters[param]  # a KeyError here: CONVERT names a parameter func lacks
        convert, fill = _CONVERTERS[conv]
        pos = names.index(param) if p.kind in (p.POSITIONAL_ONLY,
                                                p.POSITIONAL_OR_KEYWORD) else None
        star = p.kind is p.VAR_POSITIONAL
        plan.append((param, names.index(param) if star else pos, star, convert, fill,
                     f"{name}: {param}"))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if plan:
            args_l = list(args)
            for param, pos, star, convert, fill, where in plan:
                if star:
                    args_l[pos:] = convert(args_l[pos:], where)
                elif pos is not None and pos < len(args_l):
                    args_l[pos] = convert(args_l[pos], where)
                elif param in kwargs:
                    kwargs[param] = convert(kwargs[param], where)
                elif fill:
                    kwargs[param] = convert(None, where)
            args = tuple(args_l)
        return func(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------------------------------
# The engine's non-standard calls, each from standard functions
# ---------------------------------------------------------------------------------------------

def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> Any:
    """``asarray`` for an engine: NumPy dtypes and device strings in; the result on this
    process's device unless ``device=`` says (so an array another process made moves here);
    a NumPy structured array (Cubed's intermediates of mean, var and nanmean: a count and a
    total per chunk) becomes a dict of xp_cuda arrays by field name, which is how Cubed's
    reduction functions hold them; lists holding NumPy scalars read as NumPy reads them."""
    dtype = _dtype(dtype, "asarray: dtype")
    device = _here(device, "asarray: device")
    if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
        return {name: _xp.asarray(obj[name], dtype=dtype, device=device, copy=copy)
                for name in obj.dtype.names}
    if isinstance(obj, (list, tuple)) and _has_numpy(obj):
        obj = np.asarray(obj)
    return _xp.asarray(obj, dtype=dtype, device=device, copy=copy)


def array(obj: Any, /, *, dtype: Any = None, device: Any = None,
          copy: bool | None = True) -> Any:
    """NumPy's ``array``: ``asarray`` that copies by default. Cubed 0.28 names ``nxp.array``
    as an annotation (cubed/core/groupby.py:137), so the name must exist."""
    return asarray(obj, dtype=dtype, device=device, copy=copy)


def _of_bool(func: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``func`` (a sum or product) of a bool array too: NumPy's, the bools counted as
    integers of ``dtype`` or the default integer dtype."""
    @functools.wraps(func)
    def wrapper(x: Array, /, **kwargs: Any) -> Array:
        if isinstance(x, Array) and x.dtype == _xp.bool:
            x = _xp.astype(x, kwargs.get("dtype") or _xp.__array_namespace_info__()
                           .default_dtypes(device=x.device)["integral"])
        return func(x, **kwargs)
    wrapper.__doc__ = (f"``{func.__name__}``, and of a bool array too (NumPy's: the bools "
                       f"counted as integers). {what}")
    return wrapper


sum = _of_bool(_xp.sum, "Cubed 0.28 counts the non-NaN elements with "  # noqa: A001
               "``nxp.sum(~nxp.isnan(x))`` (cubed/array/nan_functions.py:50).")
cumulative_sum = _of_bool(_xp.cumulative_sum, "Cubed 0.28 allows bool input (its tests: "
                          "cubed/tests/test_types.py).")
cumulative_prod = _of_bool(_xp.cumulative_prod, "Cubed 0.28 allows bool input (its tests: "
                           "cubed/tests/test_types.py).")
_prod_of_bool = _of_bool(_xp.prod, "")


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """``prod``, of a bool array too (NumPy's: the bools as integers), and of a tuple of ints
    (Cubed 0.28 multiplies a shape with ``nxp.prod(shape, dtype=dtype)``,
    cubed/array_api/statistical_functions.py:158)."""
    if isinstance(x, (tuple, list)):
        x = asarray(x, dtype=dtype or _xp.int64)
    return _prod_of_bool(x, axis=axis, dtype=dtype, keepdims=keepdims)


def nansum(x: Array, /, *, axis: Any = None, dtype: Any = None,
           keepdims: bool = False) -> Array:
    """NumPy's ``nansum``: ``sum`` with NaNs taken as zero (not in the standard). Cubed 0.28
    calls it in ``nanmean`` and ``nansum`` (cubed/array/nan_functions.py:33, 38, 39, 62)."""
    if _xp.isdtype(x.dtype, ("real floating", "complex floating")):
        x = _xp.where(_xp.isnan(x), _xp.zeros_like(x), x)
    return sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def mean(x: Array, /, *, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Array:
    """``mean``, with NumPy's ``dtype=`` (the dtype to compute in: x is converted first) and
    of an integer or bool array too (in the default real floating dtype, as the standard
    recommends where it is accepted). Cubed 0.28's ``var`` calls ``nxp.mean(a,
    dtype=...)`` (cubed/array_api/statistical_functions.py:289)."""
    if dtype is None and not _xp.isdtype(x.dtype, ("real floating", "complex floating")):
        dtype = _xp.__array_namespace_info__().default_dtypes(device=x.device)["real floating"]
    if dtype is not None and dtype != x.dtype:
        x = _xp.astype(x, dtype)
    return _xp.mean(x, axis=axis, keepdims=keepdims)


_PY_SCALARS = (builtins.bool, int, float, complex)
_OPERANDS = (Array, *_PY_SCALARS)  # what compat's operators take (besides NumPy's)


@functools.lru_cache(maxsize=None)
def _numpy_promotion(a: DType, b: DType | type) -> DType | None:
    """NumPy's dtype for an array of dtype a beside b, where the standard has no promotion
    (an integer and a floating dtype, int64 and uint64, bool and a number), which compat takes
    as its implementation-defined answer (Cubed's own tests expect it). b is a dtype, or the
    type of a Python scalar (bool, int, float, complex), which NumPy 2 reads by its kind only
    (an int array minus 1.0 is float64). None where the standard promotes two dtypes (nothing
    to do) or where NumPy's answer has no xp_cuda dtype."""
    if isinstance(b, DType):
        try:
            _xp.result_type(a, b)
            return None
        except TypeError:
            other: Any = b.dtype
    else:
        other = b()  # (False, 0, 0.0, 0j: NumPy types a Python scalar by kind, not by value)
    name = np.result_type(a.dtype, other).name
    return getattr(_xp, name) if name in _DTYPE_NAMES else None


def _operand_kind(x: Any) -> Any:
    """An operand's dtype, or a Python scalar's type; None for anything else."""
    return x.dtype if isinstance(x, Array) else type(x) if type(x) in _PY_SCALARS else None


def _promoted(x1: Any, x2: Any) -> tuple[Any, Any]:
    """Two operands (arrays, or an array and a Python scalar) the standard does not promote,
    the arrays in NumPy's common dtype (``_numpy_promotion``)."""
    if isinstance(x1, Array):
        a, b = x1.dtype, _operand_kind(x2)
    elif isinstance(x2, Array):
        a, b = x2.dtype, _operand_kind(x1)
    else:
        return x1, x2
    if b is None or b is a:
        return x1, x2
    common = _numpy_promotion(a, b)
    if common is not None:
        x1, x2 = (_xp.astype(x, common) if isinstance(x, Array) and x.dtype != common
                  else _typed(x, common) if type(x) in _PY_SCALARS else x for x in (x1, x2))
    return x1, x2


_KIND_TYPES = {"bool": builtins.bool, "int": int, "uint": int, "float": float,
               "complex": complex}


def _typed(value: Any, dtype: DType) -> Any:
    """A Python scalar as the Python type of dtype's kind (``True`` beside an int64 array is
    ``1``), where NumPy's promotion made the array's dtype another kind than the scalar's."""
    return _KIND_TYPES[dtype.kind](value)


def _promoting(func: Callable[..., Any]) -> Callable[..., Any]:
    """A binary elementwise function that takes operands of two kinds too (``_promoted``)."""
    @functools.wraps(func)
    def wrapper(x1: Any, x2: Any, /) -> Any:
        return func(*_promoted(x1, x2))
    return wrapper


def divide(x1: Any, x2: Any, /) -> Array:
    """``divide``, with NumPy's promotion where the standard has none (an integer array
    beside a floating one or a Python float) and NumPy's true division of integers and bools
    (in the default real floating dtype). Cubed 0.28 divides a float64 total by an int64 count
    in ``mean`` and ``nanmean`` (cubed/array_api/statistical_functions.py:144,
    cubed/array/nan_functions.py:45) and a float64 sum of squares by a count in ``var``
    (statistical_functions.py:322)."""
    x1, x2 = _promoted(x1, x2)
    arrays = [x for x in (x1, x2) if isinstance(x, Array)]
    if arrays and not _xp.isdtype(arrays[0].dtype, ("real floating", "complex floating")):
        common = _xp.__array_namespace_info__().default_dtypes(
            device=arrays[0].device)["real floating"]
        x1, x2 = (_xp.astype(x, common) if isinstance(x, Array)
                  else float(x) if type(x) in (builtins.bool, int) else x for x in (x1, x2))
    return _xp.divide(x1, x2)


def where(condition: Any, x1: Any, x2: Any, /) -> Array:
    """``where``, with x1 and x2 of two kinds too (NumPy's promotion, as ``divide``)."""
    return _xp.where(condition, *_promoted(x1, x2))


def take(x: Array, indices: Any, /, *, axis: int | None = None) -> Array:
    """``take``, and with one int index too (NumPy's: that axis goes, as ``x[..., i, ...]``).
    Cubed 0.28's ``var`` takes ``nxp.take(a["n"], 0, axis=axis)``
    (cubed/array_api/statistical_functions.py:302-307)."""
    if isinstance(indices, (int, np.integer)) and not isinstance(indices, builtins.bool):
        index = _xp.asarray([int(indices)], device=x.device)
        if axis is None:
            return _xp.reshape(_xp.take(_xp.reshape(x, (-1,)), index), ())
        return _xp.squeeze(_xp.take(x, index, axis=axis), axis=axis)
    return _xp.take(x, indices, axis=axis)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Array:
    """``full``; fill_value may also be a 0-d array or a NumPy scalar (Cubed 0.28's ``_numel``
    fills with an array, cubed/array_api/statistical_functions.py:162), and when dtype= is
    given it is first cast to that dtype as NumPy casts it (``numpy.full(2, True,
    dtype=float)`` is ``[1., 1.]``; the standard refuses a bool beside a float dtype)."""
    if dtype is not None and isinstance(fill_value, (builtins.bool, int, float, complex)):
        fill_value = np.full((), fill_value, dtype=np.dtype(dtype.dtype)).item()
    return _xp.full(shape, fill_value, dtype=dtype, device=device)


def full_like(x: Array, /, fill_value: Any, *, dtype: Any = None, device: Any = None,
              shape: Any = None) -> Array:
    """``full_like``, with NumPy's ``shape=`` (the shape of the result; x gives the dtype and
    device). Cubed 0.28 pads the blocks of ``map_overlap`` with
    ``nxp.full_like(x, fill_value=..., shape=pad_shape)`` (cubed/array/overlap.py:153)."""
    dtype = x.dtype if dtype is None else dtype
    device = x.device if device is None else device
    return full(x.shape if shape is None else shape, fill_value, dtype=dtype, device=device)


def squeeze(x: Array, /, axis: Any = None) -> Array:
    """``squeeze``, and without an axis too (NumPy's: every axis of size 1). Cubed 0.28 calls
    ``nxp.squeeze(by)`` in its group-by (cubed/core/groupby.py:83)."""
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return _xp.squeeze(x, axis=axis)


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Array:
    """``diff``; prepend/append may also be Python scalars (NumPy's: broadcast to x's shape
    with that axis of length 1). Cubed 0.28 calls ``nxp.diff(chunk_boundaries,
    append=len(labels))`` (cubed/core/groupby.py:248)."""
    def edge(v: Any) -> Any:
        if v is None or isinstance(v, Array):
            return v
        shape = list(x.shape)
        shape[axis] = 1
        return full(tuple(shape), v, dtype=x.dtype, device=x.device)
    return _xp.diff(x, axis=axis, n=n, prepend=edge(prepend), append=edge(append))


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """``result_type``, its answer in compat's dtypes (NumPy's): the standard's promotion,
    and NumPy's where the standard has none (``_numpy_promotion``: Cubed promotes with it
    before concat and for operators on arrays of two kinds, cubed/array_api/
    manipulation_functions.py:106, array_object.py:136)."""
    try:
        return _numpy_dtype(_xp.result_type(*arrays_and_dtypes))
    except TypeError:
        dtypes = [a.dtype if isinstance(a, Array) else a for a in arrays_and_dtypes]
        if not dtypes or not builtins.all(isinstance(d, DType) for d in dtypes):
            raise
        out = dtypes[0]
        for d in dtypes[1:]:  # (no promotion either way: the standard's TypeError)
            out = _numpy_promotion(out, d) or _xp.result_type(out, d)
        return _numpy_dtype(out)


# Binary elementwise functions that take arrays of two kinds too (NumPy's promotion where the
# standard has none, ``_promoted``): Cubed's operators on Cubed arrays of two kinds call them
# on the chunks (cubed/array_api/array_object.py:136-348), after result_type said NumPy's
# dtype. (divide and where are written out above.)
PROMOTING = ("add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or",
             "bitwise_right_shift", "bitwise_xor", "copysign", "equal", "floor_divide",
             "greater", "greater_equal", "hypot", "less", "less_equal", "logaddexp",
             "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
             "nextafter", "not_equal", "pow", "remainder", "subtract")

# name -> where the engine calls it that way (the note docs/cubed.md expands)
ENGINE_CALLS: dict[str, str] = {
    "nansum": "cubed/array/nan_functions.py:33,38,39,62 (not in the standard)",
    "array": "cubed/core/groupby.py:137 (an annotation; not in the standard)",
    "sum": "cubed/array/nan_functions.py:50 (sum of a bool mask)",
    "prod": "cubed/array_api/statistical_functions.py:158 (prod of a shape tuple)",
    "mean": "cubed/array_api/statistical_functions.py:289 (mean(dtype=))",
    "divide": "cubed/array_api/statistical_functions.py:144,322, "
              "cubed/array/nan_functions.py:45 (float total / int count)",
    "take": "cubed/array_api/statistical_functions.py:302-307 (take with an int)",
    "full": "cubed/array_api/statistical_functions.py:162 (an array as fill_value)",
    "full_like": "cubed/array/overlap.py:153 (full_like(shape=))",
    "squeeze": "cubed/core/groupby.py:83 (squeeze without axis)",
    "diff": "cubed/core/groupby.py:248 (diff(append=int))",
    "asarray": "cubed/primitive/blockwise.py:206 via numpy_array_to_backend_array "
               "(NumPy structured chunks)",
    "result_type": "cubed/array_api/manipulation_functions.py:106, array_object.py:136 "
                   "(arrays of two kinds: NumPy's promotion)",
    "where": "cubed/array_api/searching_functions.py:115 (arrays of two kinds)",
    "cumulative_sum": "cubed/array_api/statistical_functions.py:74 (bool input)",
    "cumulative_prod": "cubed/array_api/statistical_functions.py:38 (bool input)",
    **{name: "cubed/array_api/array_object.py:136-348 (operators on arrays of two kinds)"
       for name in PROMOTING},
}
_ENGINE: dict[str, Callable[..., Any]] = {
    "asarray": asarray, "array": array, "sum": sum, "prod": prod, "nansum": nansum, "mean": mean,
    "divide": divide, "take": take, "full": full, "full_like": full_like, "squeeze": squeeze,
    "diff": diff, "result_type": result_type, "where": where, "cumulative_sum": cumulative_sum,
    "cumulative_prod": cumulative_prod}


# what CompatArray allows beyond the standard -> the engine's line that needs it (docs/cubed.md)
ARRAY_LENIENCY: dict[str, str] = {
    "operators of two kinds (NumPy's promotion)":
        "cubed/array_api/statistical_functions.py:290 (a - mu: an integer chunk minus its "
        "float64 mean), 311-312 (int64 counts times float64 means), 322 (an int64 count "
        "minus a Python float correction)",
    "NumPy arrays and scalars as operands":
        "Cubed's tests, which compare chunks with NumPy's values and hand chunks to NumPy: "
        "cubed/tests/storage/test_virtual.py:52 (chunk == numpy.int64), "
        "cubed/tests/array/test_overlap.py:101 (x - numpy.roll(x, 1))",
    "len()": "cubed/core/groupby.py:248 (len(labels) of a chunk)",
    "NumPy integer arrays in an index": "cubed/core/ops.py:694 (ai[chunk_select]: Zarr's "
                                        "indexer selects with NumPy integer arrays)",
    "assignment through a NumPy integer array": "cubed/core/ops.py:694 (out[out_select] = "
                                                "...: the output positions, from Zarr too)",
}


# ---------------------------------------------------------------------------------------------
# The array object: compat's arrays, lenient where Cubed's own code reaches the array object
# ---------------------------------------------------------------------------------------------

class CompatArray(Array):
    """An xp_cuda array made by compat: every function of compat returns these, and so do
    their operators, indexing, ``T``, ``mT`` and ``to_device``, so an engine's chain of calls
    stays here. Its buffer and device are an xp_cuda array's (strict functions take it as
    one); ``xp_cuda``'s own arrays keep every rule. Lenient, beyond the standard
    (``ARRAY_LENIENCY`` names the engine's line that needs each):

    - operators are compat's functions (``x * y`` is ``compat.multiply(x, y)``): NumPy's
      promotion for operands of two kinds, NumPy's true division of integers, and NumPy
      arrays and scalars as operands (brought to x's device, NumPy's dtypes kept);
    - ``len(x)`` is ``x.shape[0]`` (a TypeError for a 0-d array, as NumPy);
    - an index (or an assigned value) may hold NumPy integer or boolean arrays and NumPy
      scalars: they become xp_cuda arrays on x's device, then the standard's indexing rules
      apply; and ``x[..., i, ...] = v`` assigns through one 1-d integer array i too (the
      standard defines reading only; ``_assign_at``).
    """

    __slots__ = ()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __getitem__(self, key: Any, /) -> CompatArray:
        if _has_numpy(key):
            key = _index_key(key, self._device)
        return _lift(Array.__getitem__(self, key))

    def __setitem__(self, key: Any, value: Any, /) -> None:
        if _has_numpy(key):
            key = _index_key(key, self._device)
        if isinstance(value, (np.ndarray, np.generic)):
            value = _xp.asarray(value, device=self._device)
        parts = key if isinstance(key, tuple) else (key,)
        arrays = [j for j, p in enumerate(parts) if isinstance(p, Array) and p.ndim
                  and p.dtype.kind in ("int", "uint")]
        if len(arrays) == 1 and parts[arrays[0]].ndim == 1:
            _assign_at(self, parts, arrays[0], value)
        else:
            Array.__setitem__(self, key, value)

    @property
    def T(self) -> CompatArray:
        return _lift(Array.T.fget(self))  # type: ignore[attr-defined]

    @property
    def mT(self) -> CompatArray:
        return _lift(Array.mT.fget(self))  # type: ignore[attr-defined]

    def to_device(self, device: Device, /, *, stream: Any = None) -> CompatArray:
        return _lift(Array.to_device(self, _device(device, "to_device"), stream=stream))

    def __array_namespace__(self, /, *, api_version: str | None = None) -> types.ModuleType:
        """compat (the newest revision, which is the one it keeps in force)."""
        if api_version is not None and api_version != NEWEST:
            raise ValueError(f"xp_cuda.compat is the namespace of the Array API standard "
                             f"{NEWEST} only; got api_version={api_version!r}")
        return sys.modules[__name__]

    def __reduce__(self) -> tuple[Any, ...]:
        # (Cubed's processes executor pickles chunks: they come back as compat's arrays)
        return _rebuild_compat, Array.__reduce__(self)[1]


def _assign_at(x: Array, parts: tuple, j: int, value: Any) -> None:
    """``x[parts] = value`` where ``parts[j]`` is a 1-d integer array (NumPy's assignment
    through integer indices; the standard defines reading only), from standard functions:
    every position p of that axis takes the value of the last index equal to p, the others
    keep x's, and the whole is assigned through the key with ``:`` for the array (a key the
    standard's rules take, dtype rule included)."""
    idx = parts[j]
    basic = (*parts[:j], slice(None), *parts[j + 1:])
    n_axes = builtins.sum(1 for p in parts if p is not Ellipsis and p is not None)
    axis = 0  # the array's axis among those x[basic] keeps
    for p in parts[:j]:
        if p is Ellipsis:
            axis += x.ndim - n_axes
        elif isinstance(p, slice) or p is None:
            axis += 1
    current = Array.__getitem__(x, basic)
    n, m = current.shape[axis], idx.shape[0]
    if m == 0:
        return
    idx = _xp.where(idx < 0, idx + n, idx)
    if builtins.bool(_xp.any((idx < 0) | (idx >= n))):
        raise IndexError(f"__setitem__: an index is out of bounds for axis {axis} of size {n}")
    order = _xp.argsort(idx, stable=True)
    pos = _xp.arange(n, device=x.device)
    k = _xp.clip(_xp.searchsorted(idx, pos, side="right", sorter=order) - 1, min=0)
    src = _xp.take(order, k)  # (for each position, the last of the indices at or below it)
    hit = _xp.take(idx, src) == pos
    if isinstance(value, Array):
        try:
            same = _xp.result_type(x.dtype, value.dtype) is x.dtype
        except TypeError:
            same = False
        if not same:
            raise TypeError(f"cannot assign {value.dtype} values into a {x.dtype} array "
                            f"without changing its dtype; cast the value with xp.astype")
        shape = list(current.shape)
        shape[axis] = m
        value = _xp.take(_xp.broadcast_to(value, tuple(shape)), src, axis=axis)
    mask = _xp.reshape(hit, tuple(n if i == axis else 1 for i in range(current.ndim)))
    Array.__setitem__(x, basic, _xp.where(mask, value, current))


def _rebuild_compat(host: np.ndarray, device: Device) -> CompatArray:
    """pickle's reconstructor of a CompatArray."""
    return _lift(_rebuild(host, device))


def _lift(value: Any) -> Any:
    """A strict function's result as compat's: its xp_cuda arrays (alone, or in a tuple, a
    named tuple, a list or a dict) as CompatArrays sharing their buffers."""
    t = type(value)
    if t is Array:
        return CompatArray._new(value._data, value._device)
    if t is dict:
        return {k: _lift(v) for k, v in value.items()}
    if t is list:
        return [_lift(v) for v in value]
    if isinstance(value, tuple):
        items = [_lift(v) for v in value]
        return t(*items) if hasattr(t, "_fields") else t(items)
    return value


def _lifting(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, its result lifted (``_lift``)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _lift(func(*args, **kwargs))
    return wrapper


def _index_part(part: Any, device: Device) -> Any:
    if isinstance(part, np.ndarray) or (isinstance(part, np.generic)
                                        and part.dtype == np.bool_):
        return _xp.asarray(part, device=device)
    if isinstance(part, np.integer):
        return int(part)
    return part


def _index_key(key: Any, device: Device) -> Any:
    """An index with its NumPy arrays and scalars made xp_cuda's, on ``device``."""
    if isinstance(key, tuple):
        return tuple(_index_part(p, device) for p in key)
    return _index_part(key, device)


# ---------------------------------------------------------------------------------------------
# The inspection object
# ---------------------------------------------------------------------------------------------

class Info:
    """``__array_namespace_info__()`` of compat: xp_cuda's, in compat's vocabulary: device
    strings and NumPy dtypes accepted, NumPy dtypes (compat's dtypes) given back, and this
    process's device as the default device."""

    def capabilities(self) -> dict[str, bool | int]:
        """xp_cuda's capabilities (of the revision in force: the newest)."""
        return _xp.__array_namespace_info__().capabilities()

    def default_device(self) -> Device:
        """This process's device (``worker_device()``)."""
        return worker_device()

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """xp_cuda's default dtypes, as compat's (NumPy's) dtypes; device may be a string."""
        return {k: _numpy_dtype(v) for k, v in _xp.__array_namespace_info__().default_dtypes(
            device=_device(device, "default_dtypes: device")).items()}

    def devices(self) -> list[Device] | tuple[Device, ...]:
        """xp_cuda's devices."""
        return _xp.__array_namespace_info__().devices()

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """xp_cuda's dtypes (of ``kind``: a name, or NumPy or xp_cuda dtypes), as compat's
        (NumPy's) dtypes; device may be a string."""
        return {k: _numpy_dtype(v) for k, v in _xp.__array_namespace_info__().dtypes(
            device=_device(device, "dtypes: device"),
            kind=None if kind is None else _kind(kind, "dtypes: kind")).items()}


def __array_namespace_info__() -> Info:
    """The inspection object of compat (see ``Info``)."""
    return Info()


# ---------------------------------------------------------------------------------------------
# The namespace: every name of the newest revision, converted where CONVERT says, its
# arrays compat's (CompatArray)
# ---------------------------------------------------------------------------------------------

def _build(module: Any, prefix: str) -> dict[str, Any]:
    out = {}
    for name in module.__all__:
        obj = getattr(module, name)
        key = prefix + name
        impl = _promoting(obj) if key in PROMOTING else _ENGINE.get(key, obj)
        if isinstance(impl, types.FunctionType):
            impl = _lifting(impl)
        out[name] = _converting(impl, CONVERT[key], key) if key in CONVERT else impl
    return out


_names = _build(_xp, "")
_names.pop("__array_namespace_info__")
_names["__array_api_version__"] = NEWEST
_names.update(DTYPES)
for _name in ("nansum", "array"):
    _impl = _lifting(_ENGINE[_name])
    _names[_name] = _converting(_impl, CONVERT[_name], _name) if _name in CONVERT else _impl
# (from here on, bool, sum, any, all, abs, max, min, round and pow in this module are the
# namespace's: the functions above name Python's as builtins.*)
globals().update(_names)
linalg = types.ModuleType("xp_cuda.compat.linalg", "xp_cuda.linalg for compat")
linalg.__dict__.update(_build(_xp.linalg, "linalg."))
linalg.__all__ = list(_xp.linalg.__all__)  # type: ignore[attr-defined]
fft = types.ModuleType("xp_cuda.compat.fft", "xp_cuda.fft for compat")
fft.__dict__.update(_build(_xp.fft, "fft."))
fft.__all__ = list(_xp.fft.__all__)  # type: ignore[attr-defined]
_names["linalg"], _names["fft"] = linalg, fft


def _operator(fname: str, dunder: str, reflected: bool = False) -> Callable[..., Any]:
    """The operator ``dunder`` of CompatArray: compat's function ``fname`` (y first where
    ``reflected``), NumPy operands brought to x's device first; other operands as the strict
    operator takes them (its TypeError, or NotImplemented)."""
    func, strict = _names[fname], getattr(Array, dunder)

    def method(self: CompatArray, other: Any) -> Any:
        if isinstance(other, (np.ndarray, np.generic)):
            other = _xp.asarray(other, device=self._device)
        elif not isinstance(other, _OPERANDS):
            return strict(self, other)
        return func(other, self) if reflected else func(self, other)
    method.__name__ = method.__qualname__ = dunder
    method.__doc__ = f"``x {dunder}``: compat's ``{fname}`` (NumPy's promotion)."
    return method


def _inplace(dunder: str) -> Callable[..., Any]:
    """The in-place operator ``dunder``: the strict one, y first promoted as ``_promoted``
    says where that keeps x as it is (``x += int_array`` of a float x; x's dtype never
    changes, as NumPy's same-kind rule)."""
    strict = getattr(Array, dunder)

    def method(self: CompatArray, other: Any) -> Any:
        if isinstance(other, (np.ndarray, np.generic)):
            other = _xp.asarray(other, device=self._device)
        x, y = _promoted(self, other)
        return strict(self, y if x is self else other)
    method.__name__ = method.__qualname__ = dunder
    method.__doc__ = f"``x {dunder}``: in place, y promoted to x's dtype (NumPy's)."
    return method


def _unary(fname: str, dunder: str) -> Callable[..., Any]:
    func = _names[fname]

    def method(self: CompatArray) -> Any:
        return func(self)
    method.__name__ = method.__qualname__ = dunder
    method.__doc__ = f"``{dunder}``: compat's ``{fname}``."
    return method


def _install_operators() -> None:
    """CompatArray's operators, from the strict operator tables of xp_cuda._elementwise."""
    for stem, fname, _ in _BINARY_OPERATORS:
        setattr(CompatArray, f"__{stem}__", _operator(fname, f"__{stem}__"))
        setattr(CompatArray, f"__r{stem}__", _operator(fname, f"__r{stem}__", True))
        setattr(CompatArray, f"__i{stem}__", _inplace(f"__i{stem}__"))
    for stem, fname, _ in _COMPARISONS:
        setattr(CompatArray, f"__{stem}__", _operator(fname, f"__{stem}__"))
    for stem, fname in _UNARY_OPERATORS:
        setattr(CompatArray, f"__{stem}__", _unary(fname, f"__{stem}__"))
    setattr(CompatArray, "__matmul__", _operator("matmul", "__matmul__"))
    setattr(CompatArray, "__rmatmul__", _operator("matmul", "__rmatmul__", True))


_install_operators()

__all__ = sorted(set(_names) | {"__array_namespace_info__", "worker_device"})


def __getattr__(name: str) -> Any:
    raise AttributeError(
        f"module 'xp_cuda.compat' has no attribute {name!r}: compat has the names of the "
        f"Array API standard {NEWEST} and, beyond it, the calls Cubed makes (nansum, array); "
        f"an engine that needs {name!r} needs it added to xp_cuda.compat")
