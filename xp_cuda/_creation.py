"""The 16 creation functions of 2023.12 (asarray and from_dlpack are the doors for foreign data)."""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _dtypes, _revisions
from ._array import Array, _backend_of, _wrap, check_array
from ._backends import backend
from ._backends.cpu import lin_at as _lin_at
from ._devices import CPU, Device, check_device, cupy_module, default_device
from ._dtypes import DEFAULT_DTYPES, DType, check_scalar, from_numpy_dtype, scalar_type_name
from ._validation import (MAX_BYTES, check_copy, check_dtype_arg, check_int, check_shape,
                          check_size, common_device, option_type, planned)

if TYPE_CHECKING:
    from ._typing import NestedSequence, PyScalar, ShapeArg

_DEFAULT_FLOAT = DEFAULT_DTYPES["real floating"]
_pybool = bool


def _device_arg(device, fname):
    return default_device() if device is None else check_device(device, fname)


def _alloc(b, fname: str, shape, dtype: DType, make):
    """Run make(), an allocating call of backend b, once the result's size passed the one size
    rule (a MemoryError is handled where every public call's is: xp_cuda._memory)."""
    check_size(shape, dtype, fname)
    with b.ctx():
        return make()


# ---- the doors: asarray and from_dlpack -----------------------------------------------------

_ARRAY_LEAF = "0-d array"


def _leaf_kinds(obj, kinds, fname, depth=0):
    """Collect the Python scalar kinds of a nested sequence (and reject anything else)."""
    k = scalar_type_name(obj)
    if k is not None:
        kinds.add(k)
        return
    if isinstance(obj, (list, tuple)):
        if depth > 64:
            raise ValueError(f"{fname}: the nested sequence is too deep")
        for v in obj:
            _leaf_kinds(v, kinds, fname, depth + 1)
        return
    if isinstance(obj, Array):
        if obj.ndim != 0:
            raise TypeError(f"{fname}: a sequence may hold Python scalars or 0-d arrays, not "
                            f"arrays of shape {obj.shape}; use xp.stack")
        kinds.add(_ARRAY_LEAF)
        kinds.add({"uint": "int"}.get(obj.dtype.kind, obj.dtype.kind))
        return
    raise TypeError(f"{fname}: cannot convert a {type(obj).__name__} inside a sequence; "
                    f"a nested sequence must hold Python bool, int, float or complex values")


def _from_python(obj, dtype, fname):
    kinds = set()
    _leaf_kinds(obj, kinds, fname)
    names = kinds
    if _ARRAY_LEAF in kinds:  # 0-d arrays inside a list: read them as Python scalars
        obj = _to_python_leaves(obj)
    if dtype is None:
        for kind, dt in (("complex", DEFAULT_DTYPES["complex floating"]),
                         ("float", DEFAULT_DTYPES["real floating"]),
                         ("int", DEFAULT_DTYPES["integral"]), ("bool", _dtypes.bool)):
            if kind in names:
                dtype = dt
                break
        else:
            dtype = DEFAULT_DTYPES["real floating"]  # an empty sequence
    _check_leaves(obj, dtype, fname)
    try:
        return np.array(obj, dtype=dtype._np)
    except ValueError as e:
        raise ValueError(f"{fname}: the nested sequence is not rectangular ({e})") from None


def _to_python_leaves(obj):
    if isinstance(obj, Array):
        return obj._data.item()
    if isinstance(obj, (list, tuple)):
        return [_to_python_leaves(v) for v in obj]
    return obj


def _check_leaves(obj, dtype, fname):
    if isinstance(obj, (list, tuple)):
        for v in obj:
            _check_leaves(v, dtype, fname)
    elif not (isinstance(obj, _pybool) and dtype.kind != "bool"):
        # Python bools read as 0/1 in numeric data (NumPy's and the suite's reading of
        # [0, False]); every other leaf follows the scalar rules, range checks included.
        check_scalar(obj, dtype, fname)


def _native_device(nat) -> Device:
    return CPU if isinstance(nat, np.ndarray) else Device("cuda", nat.device.id)


def _finish(nat, src: Device, dtype, device, copy, copied: bool, fname):
    """Cast and move a native array as asked, honouring copy=False/True; wrap it."""
    target = device if device is not None else src
    if isinstance(nat, np.generic):
        nat = np.asarray(nat)
    from_numpy_dtype(nat.dtype, f"input of {fname}")
    if target != src:
        if copy is False:
            raise ValueError(f"{fname}: copy=False, but the data is on {src} and device="
                             f"{target} needs a copy")
        nat, copied = backend(src).move(nat, backend(target)), True
    if dtype is not None and nat.dtype != dtype._np:
        if copy is False:
            raise ValueError(f"{fname}: copy=False, but converting to {dtype} needs a copy")
        _check_cast(from_numpy_dtype(nat.dtype), dtype, fname)
        # the backend's astype (on cuda our kernel; CuPy's flushes float32 subnormals)
        nat, copied = backend(target).astype(nat, dtype, True), True
    if copy and not copied:
        with backend(target).ctx():
            nat = nat.copy()
    return _wrap(nat, target)


def _check_cast(src: DType, dst: DType, fname):
    if src.kind == "complex" and dst.kind != "complex":
        raise TypeError(f"{fname}: casting complex {src} to real {dst} is not allowed (Array "
                        f"API {_revisions.api_version()}); take xp.real, xp.imag or xp.abs first")


def asarray(obj: Array | PyScalar | NestedSequence | Any, /, *, dtype: DType | None = None,
            device: Device | None = None, copy: bool | None = None) -> Array:
    # (Any: a buffer, or a foreign array: NumPy, CuPy, any DLPack exporter)
    """Array API 2023.12 ``asarray`` (creation functions): convert obj (an array, Python scalars
    and sequences, a NumPy/CuPy/DLPack array, or a buffer) to an xp_cuda array. A foreign array
    stays on its own device unless device= says."""
    fname = "asarray"
    if dtype is not None:
        check_dtype_arg(dtype, fname)
    if device is not None:
        check_device(device, fname)
    check_copy(copy, fname)
    if isinstance(obj, Array):
        return _finish(obj._data, obj.device, dtype, device, copy, False, fname)
    if scalar_type_name(obj) is not None or isinstance(obj, (list, tuple)):
        if copy is False:
            raise ValueError(f"{fname}: copy=False cannot be honoured for Python scalars or "
                             f"sequences, which are always copied")
        nat = _from_python(obj, dtype, fname)
        return _finish(nat, CPU, None, _device_arg(device, fname), None, True, fname)
    cp = cupy_module() if type(obj).__module__.split(".")[0] == "cupy" else None
    if cp is not None and isinstance(obj, cp.ndarray):
        return _finish(obj, _native_device(obj), dtype, device, copy, False, fname)
    if isinstance(obj, np.ndarray):
        return _finish(np.asarray(obj), CPU, dtype, device, copy, False, fname)
    if isinstance(obj, np.generic):
        # a NumPy scalar is immutable: an array of its value is always a new one
        if copy is False:
            raise ValueError(f"{fname}: copy=False cannot be honoured for a NumPy scalar "
                             f"(numpy.{type(obj).__name__}), whose value is always copied; "
                             f"pass copy=None")
        return _finish(np.asarray(obj), CPU, dtype, device, copy, True, fname)
    if hasattr(obj, "__dlpack__"):
        return from_dlpack(obj, device=device, copy=copy) if dtype is None else \
            asarray(from_dlpack(obj, device=device, copy=copy), dtype=dtype,
                    copy=None if copy is None else False if copy is False else None)
    try:
        # any other object: memoryview decides whether it is a buffer (its TypeError is caught)
        nat = np.asarray(memoryview(obj))  # type: ignore[arg-type]  # deliberately any object
    except TypeError:
        raise TypeError(f"{fname}: cannot convert a {type(obj).__name__}; give an array, a "
                        f"Python scalar or sequence, a buffer, or an object with __dlpack__"
                        ) from None  # (memoryview's own error is no help to the user)
    return _finish(nat, CPU, dtype, device, copy, False, fname)


_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


def from_dlpack(x: object, /, *, device: Device | None = None,
                copy: bool | None = None) -> Array:
    """Array API 2023.12 ``from_dlpack`` (creation functions): import any DLPack exporter
    (NumPy, CuPy, torch, ...). device= moves it, copy= as 2023.12."""
    fname = "from_dlpack"
    if device is not None:
        check_device(device, fname)
    check_copy(copy, fname)
    if isinstance(x, Array):
        return _finish(x._data, x.device, None, device, copy, False, fname)
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"{fname}: a {type(x).__name__} does not implement the DLPack protocol "
                        f"(__dlpack__ and __dlpack_device__); use xp.asarray")
    kind, index = (int(v) for v in x.__dlpack_device__())
    try:
        if kind in (_KDL_CPU, _KDL_CUDA_HOST) or (device == CPU and cupy_module() is None):
            nat = np.from_dlpack(x, copy=copy, device="cpu")
            return _finish(nat, CPU, None, device, copy, copy is True, fname)
        if kind in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            cp = cupy_module()
            if cp is None:
                raise ValueError(f"{fname}: the data is on a CUDA device, but CuPy is not "
                                 f"installed; install xp-cuda[cuda12] or [cuda13]")
            with cp.cuda.Device(index):
                nat = cp.from_dlpack(x) if copy is None else cp.from_dlpack(x, copy=copy)
            return _finish(nat, Device("cuda", index), None, device, copy, copy is True, fname)
    except BufferError as e:
        raise BufferError(f"{fname}: the exporter refused: {e}") from None
    raise ValueError(f"{fname}: DLPack device type {kind} is not supported (cpu and cuda are)")


# ---- shapes filled with values ------------------------------------------------------------

def _make(fname, shape, dtype, device, primitive, *args):
    """A new array of `shape` from one creation primitive of the device's backend."""
    device = _device_arg(device, fname)
    b = backend(device)
    return _wrap(_alloc(b, fname, shape, dtype, lambda: getattr(b, primitive)(*args)), device)


def _shape_plan(shape, fname):
    """(checked shape, product of its non-zero sizes): kept per shape argument (and its items'
    types); the product times the item size is the size rule's (check_size) per dtype."""
    shape = check_shape(shape, fname)
    return shape, math.prod(n for n in shape if n)


def _new_filled(fname, shape, dtype, device, value, check_dtype=False):
    """A new array of `shape` filled with value (None: left uninitialised, empty's). The
    shape's checks run once per shape argument (_validation.planned); the device argument is
    checked on every call, the dtype argument by the caller (or here after the shape's, with
    check_dtype)."""
    key = (fname, shape, option_type(shape))
    plan = planned(key, (shape,), _shape_plan, shape, fname)
    shape, nonzero = plan
    if check_dtype:
        check_dtype_arg(dtype, fname)
    device = _device_arg(device, fname)
    b = backend(device)
    if nonzero * dtype._np.itemsize > MAX_BYTES:
        check_size(shape, dtype, fname)  # raises: more than any array can index
    if b.switch is None:  # no device to make current: no context to enter
        out = b.empty(shape, dtype) if value is None else b.full(shape, dtype, value)
    else:
        with b.ctx():
            out = b.empty(shape, dtype) if value is None else b.full(shape, dtype, value)
    return _wrap(out, device)


def _filled(fname, shape, value, dtype, device):
    """Every element equal to value (already checked against dtype)."""
    return _new_filled(fname, shape, dtype, device, value, True)


def empty(shape: ShapeArg, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``empty`` (creation functions): an uninitialised array of ``shape``;
    dtype the default floating dtype unless given, on ``device`` (the default device unless
    given)."""
    return _new_filled("empty", shape, dtype or _DEFAULT_FLOAT, device, None, True)


# zeros' and ones' fill values, made once per dtype instead of on every call
_ZERO = {d: d._np.type(0) for d in _dtypes.ALL_DTYPES}
_ONE = {d: d._np.type(1) for d in _dtypes.ALL_DTYPES}


def zeros(shape: ShapeArg, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``zeros`` (creation functions): an array of ``shape`` filled with zeros."""
    dtype = check_dtype_arg(dtype or _DEFAULT_FLOAT, "zeros")
    return _new_filled("zeros", shape, dtype, device, _ZERO[dtype])


def ones(shape: ShapeArg, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``ones`` (creation functions): an array of ``shape`` filled with ones."""
    dtype = check_dtype_arg(dtype or _DEFAULT_FLOAT, "ones")
    return _new_filled("ones", shape, dtype, device, _ONE[dtype])


def _scalar_dtype(value, fname):
    kind = scalar_type_name(value)
    if kind is None:
        raise TypeError(f"{fname}: fill_value must be a Python bool, int, float or complex, "
                        f"got {type(value).__name__}")
    return {"bool": _dtypes.bool, "int": DEFAULT_DTYPES["integral"],
            "float": DEFAULT_DTYPES["real floating"],
            "complex": DEFAULT_DTYPES["complex floating"]}[kind]


def full(shape: ShapeArg, fill_value: PyScalar, *, dtype: DType | None = None,
         device: Device | None = None) -> Array:
    """Array API 2023.12 ``full`` (creation functions): an array of ``shape`` filled with
    ``fill_value`` (its dtype inferred from the value's Python type unless given; a value the
    dtype cannot hold is refused)."""
    if dtype is None:
        dtype = _scalar_dtype(fill_value, "full")
    else:
        check_dtype_arg(dtype, "full")
    v = check_scalar(fill_value, dtype, "full")
    return _filled("full", shape, v, dtype, device)


def _like(fname, x, dtype, device):
    check_array(x, fname)
    dtype = x.dtype if dtype is None else check_dtype_arg(dtype, fname)
    device = x.device if device is None else check_device(device, fname)
    return x.shape, dtype, device


def empty_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``empty_like`` (creation functions): an uninitialised array of ``x``'s
    shape, and of its dtype and device unless given."""
    shape, dtype, device = _like("empty_like", x, dtype, device)
    return empty(shape, dtype=dtype, device=device)


def zeros_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``zeros_like`` (creation functions): an array of ``x``'s shape filled
    with zeros, of ``x``'s dtype and device unless given."""
    shape, dtype, device = _like("zeros_like", x, dtype, device)
    return zeros(shape, dtype=dtype, device=device)


def ones_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``ones_like`` (creation functions): an array of ``x``'s shape filled
    with ones, of ``x``'s dtype and device unless given."""
    shape, dtype, device = _like("ones_like", x, dtype, device)
    return ones(shape, dtype=dtype, device=device)


def full_like(x: Array, /, fill_value: PyScalar, *, dtype: DType | None = None,
              device: Device | None = None) -> Array:
    """Array API 2023.12 ``full_like`` (creation functions): an array of ``x``'s shape filled
    with ``fill_value``, of ``x``'s dtype and device unless given."""
    shape, dtype, device = _like("full_like", x, dtype, device)
    return full(shape, fill_value, dtype=dtype, device=device)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None,
        device: Device | None = None) -> Array:
    """Array API 2023.12 ``eye`` (creation functions): a 2-D array with ones on the ``k``-th
    diagonal and zeros elsewhere."""
    fname = "eye"
    n_rows = check_int(n_rows, fname, "n_rows")
    n_cols = n_rows if n_cols is None else check_int(n_cols, fname, "n_cols")
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"eye: n_rows and n_cols must be non-negative, got {n_rows}, {n_cols}")
    k = check_int(k, fname, "k")
    k = max(-n_rows - 1, min(k, n_cols + 1))  # a diagonal outside the matrix is all zeros
    dtype = dtype or DEFAULT_DTYPES["real floating"]
    check_dtype_arg(dtype, fname)
    return _make(fname, (n_rows, n_cols), dtype, device, "eye", n_rows, n_cols, k, dtype)


def _tri(fname, x, k, upper):
    check_array(x, fname)
    k = check_int(k, fname, "k")
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions, got shape {x.shape}")
    k = max(-x.shape[-2] - 1, min(k, x.shape[-1] + 1))  # same result, fits a kernel int
    b = x._b
    return _wrap(_alloc(b, fname, x.shape, x.dtype, lambda: b.tri(x._data, k, upper)),
                 x.device)


def tril(x: Array, /, *, k: int = 0) -> Array:
    """Array API 2023.12 ``tril`` (creation functions): ``x`` with the elements above the
    ``k``-th diagonal of its last two axes zeroed."""
    return _tri("tril", x, k, upper=False)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """Array API 2023.12 ``triu`` (creation functions): ``x`` with the elements below the
    ``k``-th diagonal of its last two axes zeroed."""
    return _tri("triu", x, k, upper=True)


# ---- ranges --------------------------------------------------------------------------------

def _real_number(v, fname, argname):
    """(value, "int" or "float"): a Python int or float, or an integer operator.index
    accepts (a NumPy integer, a 0-d integer array) read as a Python int."""
    kind = scalar_type_name(v)
    if kind in ("int", "float"):
        return v, kind
    if kind is None:
        try:
            return int(operator.index(v)), "int"
        except TypeError:
            pass
    raise TypeError(f"{fname}: {argname} must be a Python int or float (or an integer "
                    f"operator.index accepts), got {v!r}")


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: DType | None = None, device: Device | None = None) -> Array:
    """Array API 2023.12 ``arange`` (creation functions): exactly ceil((stop - start) / step)
    elements with values start + i * step."""
    fname = "arange"
    if stop is None:
        start, stop = 0, start
    (start, k1), (stop, k2), (step, k3) = (_real_number(v, fname, n) for v, n in (
        (start, "start"), (stop, "stop"), (step, "step")))
    kinds = {k1, k2, k3}
    if step == 0:
        raise ValueError("arange: step must not be 0")
    integral = kinds == {"int"}
    if dtype is None:
        dtype = DEFAULT_DTYPES["integral"] if integral else DEFAULT_DTYPES["real floating"]
    check_dtype_arg(dtype, fname, "real-valued")
    if not integral and dtype.kind in ("int", "uint"):
        raise TypeError(f"arange: float arguments cannot produce {dtype}; pass ints or a "
                        f"floating-point dtype")
    if integral:
        n = max(0, -((start - stop) // step))  # exact ceil division
    else:
        n = max(0, math.ceil((stop - start) / step))
    if n and dtype.kind in ("int", "uint"):
        info = np.iinfo(dtype._np)
        last = start + (n - 1) * step
        if not (info.min <= start <= info.max and info.min <= last <= info.max):
            raise OverflowError(f"arange: values from {start} to {last} do not fit in {dtype}")

    exact = integral and dtype.kind in ("int", "uint")
    if not exact:
        try:
            start, step = float(start), float(step)
        except OverflowError:
            raise OverflowError(f"arange: start {start} or step {step} is too large for "
                                f"{dtype}") from None
    return _make(fname, (n,), dtype, device, "arange", n, dtype, start, step, exact)


def _lin_params(start: float, stop: float, num: int, endpoint: bool):
    """NumPy 2.x's linspace as (start, mult, div, stop, mode) for one real component:
    y = i*mult + start (mode 0) or (i/div)*mult + start (mode 1, when step underflows to 0),
    with step = (stop - start)/div; the kernels and _lin_at evaluate exactly this."""
    div = num - 1 if endpoint else num
    delta = stop - start
    if div > 0:
        step = delta / div
        return (start, delta, float(div), stop, 1) if step == 0 else \
            (start, step, float(div), stop, 0)
    return (start, delta, 1.0, stop, 0)  # 0 or 1 element: 0*delta + start, as NumPy


def _lin_last(num: int, endpoint: bool) -> int:
    """The index NumPy sets to stop exactly, or -1."""
    return num - 1 if endpoint and num > 1 else -1


def _to_float(v, fname, argname):
    try:
        return float(v)
    except OverflowError:
        raise OverflowError(f"{fname}: {argname}={v} is too large for float64") from None


def _int_range_check(fname, values, dtype):
    """values (floats, already floored or truncated) must be finite and fit dtype."""
    info = np.iinfo(dtype._np)
    for v in values:
        if math.isnan(v):
            raise ValueError(f"{fname}: the result holds NaN, which no integer dtype can hold; "
                             f"use a floating-point dtype")
        if not (info.min <= v <= info.max):
            raise OverflowError(f"{fname}: the value {v} does not fit in {dtype} "
                                f"[{info.min}, {info.max}]; use a dtype that holds it")


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: DType | None = None, device: Device | None = None,
             endpoint: bool = True) -> Array:
    """Array API 2023.12 ``linspace`` (creation functions): num evenly spaced values; the same
    float64 operations as NumPy 2.x on every device (integer dtypes: floor of NumPy's float64
    grid, exactly NumPy's values)."""
    fname = "linspace"
    kinds = set()
    for v, n in ((start, "start"), (stop, "stop")):
        k = scalar_type_name(v)
        if k not in ("int", "float", "complex"):
            raise TypeError(f"{fname}: {n} must be a Python int, float or complex, got {v!r}")
        kinds.add(k)
    num = check_int(num, fname, "num")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if not isinstance(endpoint, bool):
        raise TypeError(f"linspace: endpoint must be a bool, got {endpoint!r}")
    if dtype is None:
        dtype = DEFAULT_DTYPES["complex floating" if "complex" in kinds else "real floating"]
    check_dtype_arg(dtype, fname, "numeric")
    if "complex" in kinds and dtype.kind != "complex":
        raise TypeError(f"linspace: complex start/stop need a complex dtype, not {dtype}")
    integer = dtype.kind in ("int", "uint")
    if integer and kinds != {"int"}:
        raise TypeError(f"linspace: an integer dtype ({dtype}) needs Python int start and "
                        f"stop (a Python float does not mix with integer dtypes); pass ints "
                        f"or a floating-point dtype")
    a, b = complex(_to_float(start, fname, "start") if "complex" not in kinds else start), \
        complex(_to_float(stop, fname, "stop") if "complex" not in kinds else stop)
    re = _lin_params(a.real, b.real, num, endpoint)
    im = _lin_params(a.imag, b.imag, num, endpoint)
    last = _lin_last(num, endpoint)
    if integer and num:  # the grid is monotonic: its ends bound every value
        ends = (_lin_at(re, i, last) for i in (0, num - 1))
        _int_range_check(fname, [math.floor(y) if math.isfinite(y) else y for y in ends], dtype)

    return _make(fname, (num,), dtype, device, "linspace", num, dtype, a, b, endpoint, re, im,
                 last)


def meshgrid(*arrays: Array, indexing: Literal["xy", "ij"] = "xy"
             ) -> list[Array] | tuple[Array, ...]:
    """Array API 2023.12 ``meshgrid`` (creation functions): coordinate matrices from 1-D
    coordinate arrays (``indexing`` 'xy' or 'ij'); all inputs share one dtype and one device."""
    fname = "meshgrid"
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        check_array(a, fname, f"arrays[{i}]")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: every array must be 1-D; arrays[{i}] has shape {a.shape}")
    # a list (a tuple from 2025.12)
    sequence = tuple if _revisions.allows("tuples from devices, broadcast_arrays and meshgrid") \
        else list
    if not arrays:
        return sequence()
    if len({a.dtype for a in arrays}) > 1:
        raise TypeError(f"meshgrid: arrays must share one dtype, got "
                        f"{sorted({a.dtype.name for a in arrays})}; convert with xp.astype")
    device = common_device(list(arrays), fname)
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(shape) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    check_size(tuple(shape), arrays[0].dtype, fname)
    b = _backend_of(arrays)
    with b.ctx():
        outs = b.xp.meshgrid(*(a._data for a in arrays), indexing=indexing)
    return sequence([_wrap(o, device) for o in outs])


__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full",
           "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros",
           "zeros_like"]
