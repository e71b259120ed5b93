"""The Array object: one backend buffer (NumPy or CuPy) and its Device, with the spec's rules."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import operator
import sys

import numpy as np

from . import _dtypes, _memory, _revisions
from ._backends import EmptyMask, backend
from ._backends._base import KEPT as _KEPT
from ._devices import CPU as _CPU
from ._devices import Device, check_device
from ._dtypes import (DType, check_scalar, in_category, scalar_type_name,
                      typed_scalar, wider_scalar_dtype)
from ._validation import _foreign_hint, broadcast_shapes, check_copy

if TYPE_CHECKING:
    from types import EllipsisType, ModuleType

    from typing import TypeAlias, Union

    PyScalar: TypeAlias = Union[bool, int, float, complex]  # (as _typing's, which imports us)
    _Index: TypeAlias = Union[int, slice, EllipsisType, None, "Array"]
    IndexKey: TypeAlias = Union[_Index, tuple[_Index, ...]]  # the standard's index kinds

_KDL_CPU = 1


_BOUND_TYPES = frozenset((int, type(None)))  # slice bounds that need no further check


def _index_int(v):
    """v as a Python int where operator.index takes it (NumPy integers, 0-d integer arrays,
    int subclasses), else None. Bools (Python's, NumPy's, 0-d boolean arrays) are no index:
    True would read as 1 where NumPy reads a mask."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, Array) and (v._data.ndim or v.dtype.kind not in ("int", "uint")):
        return None
    try:
        return int(operator.index(v))
    except TypeError:
        return None


def _converted(p):
    """A part of a validated key with its integers (and its slice's bounds) as Python ints;
    integer arrays of 1 or more dimensions stay as they are."""
    t = type(p)
    if t is int or p is None or p is Ellipsis:
        return p
    if t is slice:
        return slice(*(v if v is None or type(v) is int else _index_int(v)
                       for v in (p.start, p.stop, p.step)))
    if isinstance(p, Array) and p._data.ndim:
        return p
    return _index_int(p)


def _check_array_index(setting: bool) -> None:
    """The gate of an integer array in an index (2024.12's integer array indexing)."""
    if not _revisions.allows("integer array indexing"):
        raise IndexError(
            f"integer array indexing is in the 2024.12 revision of the Array API standard, "
            f"and {_revisions.api_version()} is in force; call "
            f"xp_cuda.set_api_version('2024.12'), or use xp.take")
    if setting:
        raise IndexError("assignment through integer array indices is not specified by the "
                         "standard (2024.12 defines reading only); assign through a boolean "
                         "mask, or build the result with xp.where")


def _part_text(p) -> str:
    """A part of a key as the user would write it inside x[...]."""
    if p is Ellipsis:
        return "..."
    if type(p) is slice:
        a = "" if p.start is None else str(p.start)
        b = "" if p.stop is None else str(p.stop)
        return f"{a}:{b}" if p.step is None else f"{a}:{b}:{p.step}"
    if isinstance(p, Array):
        return f"<{p.dtype.name} array of shape {p.shape}>"
    return repr(p)


def _partial_key(parts, ndim: int, n_axes: int, setting: bool):
    """The multi-axis rule (2023.12): without an ellipsis, a key names every axis (None
    excepted); NumPy's filling of the remaining axes with ':' is not the standard's."""
    fname = "__setitem__" if setting else "__getitem__"
    given = ", ".join(_part_text(p) for p in parts) if parts else "()"
    fixed = ", ".join([_part_text(p) for p in parts] + ["..."])
    raise IndexError(
        f"{fname}: x has {ndim} dimension{'s' if ndim != 1 else ''} but the index gives "
        f"{n_axes} (x[{given}]); index every axis or add an ellipsis: x[{fixed}] "
        f"(Array API {_revisions.api_version()}, multi-axis indexing)")


class _ArrayKey(Exception):
    """Raised by Array._key for a key holding an integer array: its parts, converted, and
    the number of axes they index. Raising keeps the check off the hot path of every other
    key (a try block costs nothing in Python 3.11+; a type test on every result would not)."""

    def __init__(self, parts, n_axes):
        self.parts, self.n_axes = parts, n_axes


_ARRAY_TYPES: dict = {}  # native type -> Array subclass (see register_native_type)


def register_native_type(native_type, array_class) -> None:
    """Arrays whose data is a `native_type` are `array_class`: the tracer of xp_cuda.fusion
    registers its values here, so results of its backend come back as its Tracer arrays."""
    _ARRAY_TYPES[native_type] = array_class


_KEPT_get = _KEPT.get  # bound once: the hot path's lookup


def kept_result(key, arrays, datas, device, plain=False):
    """The result of the call the backend kept under the validated key ``key`` (KEPT), run
    on ``datas`` (the natives of ``arrays``, all on ``device``), as an Array; None when no
    call is kept or the kept one does not apply (a tracer's arrays, other strides, alignment
    or device): the caller then takes its full path. ``plain``: the caller knows every one
    of ``arrays`` is an Array (no test of their types)."""
    try:
        kept = _KEPT_get(key)
    except TypeError:  # an unhashable option: the full path's checks name it
        return None
    if kept is None:
        return None
    if not plain:
        for a in arrays:
            if type(a) is not Array:
                return None
    r = kept(datas, device)
    return None if r is None else _wrap(r, device)


def kept_one(key, x, d):
    """kept_result for one array ``x`` with native ``d`` (the reductions' hot path: no
    tuples to build, one test of x's type)."""
    try:
        kept = _KEPT_get(key)
    except TypeError:
        return None
    if kept is None or type(x) is not Array:
        return None
    device = x._device
    r = kept((d,), device)
    return None if r is None else _wrap(r, device)


def _wrap(data, device: Device) -> "Array":
    cls = _ARRAY_TYPES.get(type(data))
    if cls is Array:  # every call's result: the object made inline (~0.1 us less than _new)
        obj = _new_object(Array)
        obj._data = data
        obj._device = device
        return obj
    if cls is not None:
        return cls._new(data, device)
    if isinstance(data, np.generic):  # NumPy's result of 0-d work; the standard wants arrays
        data = np.asarray(data)
    else:  # a backend's array type (NumPy's, CuPy's): plain Arrays, found at once next time
        _ARRAY_TYPES[type(data)] = Array
    return Array._new(data, device)


_new_object = object.__new__


def _backend_of(arrays):
    """The backend that handles a call on several arrays: the highest-ranked of theirs (the
    tracer's, as soon as one of them is traced)."""
    b = arrays[0]._b
    for a in arrays[1:]:
        o = a._b
        if o.rank > b.rank:
            b = o
    return b


def check_array(x, fname: str, argname: str = "x"):
    """An xp_cuda array argument; anything else is a TypeError that says how to bring it in."""
    if not isinstance(x, Array):
        raise TypeError(f"{fname}: {argname}: {_foreign_hint(x)}")
    return x


class Array:
    """An n-dimensional array of the Array API standard (2023.12) on a cpu or cuda device.

    Create arrays with the namespace's creation functions (xp.asarray, xp.zeros, ...).
    """

    __slots__ = ("_data", "_device", "__weakref__")
    _data: Any  # the backend's native array (NumPy's, CuPy's)
    _device: Device
    # NumPy and CuPy binary operators defer to ours, which reject foreign arrays clearly.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        raise TypeError("xp_cuda arrays are made by xp.asarray and the other creation functions")

    @classmethod
    def _new(cls, data, device: Device) -> "Array":
        obj = object.__new__(cls)
        obj._data = data
        obj._device = device
        return obj

    @property
    def _b(self):
        """The backend that computes on this array (xp_cuda._backends; kept on its device)."""
        try:
            return self._device._backend
        except AttributeError:  # (no backend made for that device yet)
            return backend(self._device)

    # ---- attributes ----------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return _dtypes._BY_NUMPY[self._data.dtype]

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def T(self) -> "Array":
        if self.ndim != 2:
            raise ValueError(
                f"x.T needs a 2-D array (Array API {_revisions.api_version()}); this one has "
                f"{self.ndim} "
                f"dimension(s): use xp.permute_dims or x.mT for stacks of matrices"
            )
        return Array._new(self._data.T, self._device)

    @property
    def mT(self) -> "Array":
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions; this array has {self.ndim}")
        return Array._new(self._data.swapaxes(-1, -2), self._device)

    def __repr__(self) -> str:
        host = self._b.to_host(self._data)
        body = np.array2string(host, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self.dtype.name}, device={self._device})"

    __str__ = __repr__

    def __iter__(self) -> Iterator[Array]:
        """Not in the Array API standard: Iteration over the first axis (x[0, ...], x[1, ...],
        ...): the standard defines none; a 0-d array cannot be iterated."""
        # The standard defines no __iter__; Python would iterate through x[0], x[1], ...,
        # which the multi-axis rule refuses beyond 1-d: iterate over the first axis
        # explicitly, x[i, ...] (0-d arrays have no first axis).
        if self.ndim == 0:
            raise TypeError("a 0-d array cannot be iterated; convert it with int()/float()")
        return (self[i, ...] for i in range(self.shape[0]))

    # ---- namespace, devices, DLPack -------------------------------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> ModuleType:
        """Array API 2023.12 ``__array_namespace__`` (array object): the xp_cuda namespace; an
        ``api_version`` other than the one in force puts that revision in force for the whole
        process (as array-api-strict does)."""
        if api_version is not None and api_version != _revisions.state.revision:
            _revisions.set_api_version(api_version)
        return sys.modules["xp_cuda"]  # the namespace (imported: it holds this module)

    def to_device(self, device: Device, /, *, stream: int | Any | None = None) -> Array:
        """Array API 2023.12 array object ``to_device``: this array on ``device`` (itself when
        it is there already, else a copy); ``stream`` only for a cuda destination."""
        check_device(device, "to_device")
        if device == self._device:
            return self
        try:
            return _wrap(_move(self, device, stream), device)
        except _memory.errors() as e:  # the out-of-memory guard (xp_cuda._memory)
            return _memory.recover(e, _move_wrapped, (self, device, stream), None,
                                   "to_device")

    def __dlpack_device__(self) -> tuple[int, int]:
        """Array API 2023.12 array object: the DLPack (device type, index) of the data."""
        return self._device.dlpack

    def __dlpack__(self, /, *, stream: int | Any | None = None,
                   max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None,
                   copy: bool | None = None) -> Any:
        """Array API 2023.12 array object: a DLPack capsule of the data (shared; a copy to
        the host where ``dl_device`` asks for the CPU)."""
        check_copy(copy, "__dlpack__")
        data = self._data
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if int(dl_device[0]) != _KDL_CPU:
                raise BufferError(f"cannot export an array on {self._device} to DLPack device "
                                  f"{tuple(dl_device)}; only a copy to the CPU is offered")
            if copy is False:
                raise BufferError(f"exporting an array on {self._device} to the CPU needs a "
                                  f"copy, but copy=False was passed")
            data = self._b.to_host(data)
            stream, copy = None, None
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                    ("copy", copy)) if v is not None}
        if isinstance(data, np.ndarray) and kwargs.pop("stream", None) not in (None, -1):
            raise ValueError("stream must be None for an array on the cpu")
        try:
            return data.__dlpack__(**kwargs)
        except TypeError:
            if "max_version" in kwargs and kwargs.get("copy") is None:
                kwargs.pop("max_version")  # an exporter that only speaks the old protocol
                return data.__dlpack__(**kwargs)
            raise

    # ---- the NumPy door, pickle and copy ---------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """Not in the Array API standard: numpy.asarray(x): on the cpu NumPy's own array (NumPy
        2's copy semantics: copy=None shares where it can, True always copies, False refuses a
        copy); on a GPU a TypeError naming the explicit door (numpy.from_dlpack(x,
        device="cpu")): a silent device to host copy is what this namespace exists to prevent."""
        check_copy(copy, "__array__")
        door = getattr(self._b, "numpy_door", None)
        if door is None:
            raise TypeError(f"numpy cannot read a {type(self).__name__} (its data lives on "
                            f"{self._device}); evaluate it first")
        return door(self._data, self._device, dtype, copy)

    def __reduce__(self) -> tuple[Any, ...]:
        # The values travel as a NumPy array (a cuda array is copied to the host once) and
        # come back on the same device, in the same dtype; a cuda:N array needs cuda:N where
        # it is loaded.
        return _rebuild, (self._b.to_host(self._data), self._device)

    def __copy__(self) -> Array:
        """Not in the Array API standard: copy.copy(x): a new array with the same values (never
        shared memory)."""
        # Values, not a reference, as NumPy's copy.copy: an Array is a mutable container
        # (x[...] = v), so a copy sharing the buffer would change with the original.
        return type(self)._new(self._b.copy(self._data), self._device)

    def __deepcopy__(self, memo: dict[int, Any]) -> Array:
        """Not in the Array API standard: copy.deepcopy(x): as copy.copy."""
        out = memo.get(id(self))
        if out is None:
            out = memo[id(self)] = self.__copy__()
        return out

    # ---- conversion of 0-d arrays ---------------------------------------------------------
    def _scalar(self, what: str, category: str):
        if self.ndim != 0:
            raise TypeError(f"{what}() needs a 0-d array, got shape {self.shape}; index one "
                            f"element first (x[i, j])")
        if not in_category(self.dtype, category):
            raise TypeError(f"{what}() is not defined for {self.dtype} arrays "
                            f"(needs a {category} dtype)")
        return self._data.item()

    def __bool__(self) -> bool:
        """Array API 2023.12 array object: bool(x) of a 0-d array of any dtype."""
        return bool(self._scalar("bool", "any"))

    def __int__(self) -> int:
        """Array API 2023.12 array object: int(x) of a 0-d array of a real or boolean dtype."""
        return int(self._scalar("int", "real-valued or boolean"))

    def __float__(self) -> float:
        """Array API 2023.12 array object: float(x) of a 0-d array of a real or boolean dtype."""
        return float(self._scalar("float", "real-valued or boolean"))

    def __complex__(self) -> complex:
        """Array API 2023.12 array object: complex(x) of a 0-d array of any dtype."""
        return complex(self._scalar("complex", "any"))

    def __index__(self) -> int:
        """Array API 2023.12 array object: operator.index(x) of a 0-d array of an integer dtype."""
        return int(self._scalar("index", "integer"))

    # ---- indexing ------------------------------------------------------------------------
    def _key(self, key, setting: bool):
        """Validate a key by the indexing rules; return the backend key. One pass over the
        parts, the exact types first (a key is validated on every call: it holds slices,
        which Python 3.11 cannot hash, so it is not memoised). Integers are whatever
        operator.index accepts (NumPy integers, 0-d integer arrays), bools excepted; they
        reach the backend as Python ints. A key holding an integer array of 1 or more
        dimensions (2024.12) raises _ArrayKey with its converted parts, after the checks
        every key shares: __getitem__ takes it from there."""
        if isinstance(key, Array):
            if key.dtype is not _dtypes.bool:
                if key.dtype.kind not in ("int", "uint"):
                    raise IndexError(f"an array index must have an integer or boolean dtype, "
                                     f"got {key.dtype}")
                if key._data.ndim:
                    key = (key,)  # an integer array: the tuple path below
                else:
                    key = int(key._data.item())  # a 0-d integer array is an integer index
            else:
                if key._device is not self._device and key._device != self._device:
                    raise ValueError(f"the boolean index is on {key._device} but the array is "
                                     f"on {self._device}; move one with to_device")
                kshape = key._data.shape
                lead = self._data.shape[: len(kshape)]
                if kshape == lead:  # the mask covers the leading dimensions exactly
                    return key._data
                if len(kshape) > len(self._data.shape) or \
                        any(k not in (n, 0) for k, n in zip(kshape, lead)):
                    raise IndexError(f"boolean index of shape {key.shape} does not match the "
                                     f"leading dimensions of an array of shape {self.shape}")
                return EmptyMask(key.ndim)  # an empty mask selects nothing, whatever the sizes
        t = type(key)
        if t is slice:  # x[a:b:c] of a 1-d x with int or None bounds: nothing else to check
            if type(key.start) in _BOUND_TYPES and type(key.stop) in _BOUND_TYPES and \
                    type(key.step) in _BOUND_TYPES and key.step != 0 and self._data.ndim == 1:
                return key
        elif t is int:  # x[i] of a 1-d x
            shape = self._data.shape
            if len(shape) == 1 and -shape[0] <= key < shape[0]:
                return key
        parts = key if t is tuple else (key,)
        n_ellipsis = 0
        n_axes = 0
        has_ints = False
        convert = False  # a part or a slice bound is an integer other than a Python int
        has_arrays = False
        for p in parts:
            t = type(p)
            if t is slice:
                if type(p.start) not in _BOUND_TYPES or type(p.stop) not in _BOUND_TYPES or \
                        type(p.step) not in _BOUND_TYPES:
                    for v in (p.start, p.stop, p.step):
                        if v is None or type(v) is int:
                            continue
                        if _index_int(v) is None:
                            raise IndexError(f"slice bounds must be integers (objects "
                                             f"operator.index accepts, bools excepted) or "
                                             f"None, got {p}")
                    convert = True  # (a step of 0 is caught after the conversion)
                elif p.step == 0:
                    raise IndexError("a slice step of 0 is not allowed")
                n_axes += 1
            elif t is int:
                n_axes += 1
                has_ints = True
            elif p is Ellipsis:
                n_ellipsis += 1
            elif p is None:
                if setting:
                    raise IndexError("None (newaxis) is not allowed in an index for assignment")
            elif isinstance(p, Array):
                kind = p.dtype.kind
                if kind == "bool":
                    raise IndexError("a boolean array must be the sole index; combine masks "
                                     "first, or index in two steps")
                if kind not in ("int", "uint"):
                    raise IndexError(f"an array index must have an integer or boolean dtype, "
                                     f"got {p.dtype}")
                n_axes += 1
                if p._data.ndim == 0:  # an integer index (operator.index)
                    has_ints = convert = True
                else:
                    _check_array_index(setting)
                    has_arrays = True
            elif _index_int(p) is not None:  # NumPy integers, int subclasses
                n_axes += 1
                has_ints = convert = True
            else:
                raise IndexError(
                    f"index {p!r} is not allowed: the standard indexes with integers, slices, "
                    f"..., None, integer arrays (2024.12), or a boolean array as the sole index"
                )
        if convert:  # every integer as a Python int, for the bounds below and the backend
            parts = tuple(_converted(p) for p in parts)
            for p in parts:
                if type(p) is slice and p.step == 0:
                    raise IndexError("a slice step of 0 is not allowed")
            key = parts
        if n_ellipsis > 1:
            raise IndexError("an index may contain at most one ellipsis (...)")
        shape = self._data.shape
        ndim = len(shape)
        if n_axes > ndim:
            raise IndexError(f"too many indices ({n_axes}) for an array of {ndim} "
                             f"dimension(s)")
        if n_axes < ndim and not n_ellipsis:
            _partial_key(parts, ndim, n_axes, setting)
        if has_ints:
            # Bounds of integer indices, axis by axis (the spec leaves them unspecified; we
            # refuse).
            axis = 0
            for p in parts:
                if p is Ellipsis:
                    axis += ndim - n_axes
                    continue
                if p is None:
                    continue
                if type(p) is int:  # (every integer is a Python int by now)
                    n = shape[axis]
                    if not -n <= p < n:
                        raise IndexError(f"index {p} is out of bounds for axis {axis} of size "
                                         f"{n}")
                axis += 1
        if has_arrays:
            raise _ArrayKey(parts, n_axes)
        return key

    def _take_arrays(self, parts, n_axes):
        """x[parts] for a key holding integer arrays (the 2024.12 integer array indexing):
        the integers and integer arrays (each integer a 0-d array of the standard) broadcast
        together to one shape S, whose elements select coordinates along their axes. The
        standard defines keys of integers and integer arrays only; beside them xp_cuda takes
        slices and one ellipsis where NumPy's placement of S is unambiguous: the integers
        and arrays stand next to each other, S replaces their axes in place."""
        adv = [i for i, p in enumerate(parts) if type(p) is int or isinstance(p, Array)]
        if any(p is None for p in parts):
            raise IndexError("None (newaxis) cannot be combined with integer array indices; "
                             "expand the result with xp.expand_dims")
        if adv[-1] - adv[0] + 1 != len(adv):
            raise IndexError(
                "the integers and integer arrays of an index must stand next to each other "
                "when slices or ... separate them (NumPy would move the selected axes to the "
                "front); index in two steps")
        arrays = [p for p in parts if isinstance(p, Array)]
        for a in arrays:
            if a._device is not self._device and a._device != self._device:
                raise ValueError(f"an index array is on {a._device} but the array is on "
                                 f"{self._device}; move one with to_device")
        try:
            bshape = broadcast_shapes([a.shape for a in arrays], "__getitem__")
        except ValueError as e:
            raise IndexError(f"the integer array indices cannot be broadcast together: "
                             f"{e}") from None
        # The basic part first (a view): slices and integers as written, each array's axis
        # kept whole; then the arrays gather along the axes they index, next to each other.
        ndim = self._data.ndim
        view_key, axes, axis = [], [], 0
        for p in parts:
            if p is Ellipsis:
                fill = ndim - n_axes
                view_key.extend([slice(None)] * fill)
                axis += fill
                continue
            if isinstance(p, Array):
                view_key.append(slice(None))
                axes.append(axis)
            else:
                view_key.append(p)
            axis += 1
        view_key = tuple(view_key)
        b = self._b
        view = b.getitem(self._data, view_key, view_key)
        # in the view, the integers' axes are gone: the arrays' axes start where they stood
        first = sum(1 for p in view_key[:axes[0]] if type(p) is not int)
        out, bad = b.take_arrays(view, first, [a._data for a in arrays], bshape)
        if bad is not None:
            j, value = bad
            raise IndexError(f"index {value} is out of bounds for axis {axes[j]} of size "
                             f"{self._data.shape[axes[j]]}")
        return _wrap(out, self._device)

    def __getitem__(self, key: IndexKey, /) -> Array:
        """Array API 2023.12 indexing: integers, slices, ellipsis, None and a boolean mask
        (integer arrays from 2024.12); a key names every axis or holds an ellipsis."""
        try:  # (no cost without an exception, Python 3.11+)
            try:
                k = self._key(key, setting=False)
            except _ArrayKey as a:  # integer array indexing (2024.12)
                taken = a
            else:
                return _wrap(self._b.getitem(self._data, k, key), self._device)
            # outside the handler: an error of the take carries no chained _ArrayKey
            return self._take_arrays(taken.parts, taken.n_axes)
        except _memory.errors() as e:  # the out-of-memory guard (xp_cuda._memory)
            return _memory.recover(e, Array.__getitem__, (self, key), None, "__getitem__")

    def __setitem__(self, key: IndexKey, value: Array | PyScalar, /) -> None:
        """Array API 2023.12 indexing: x[key] = value, value an array of x's dtype on x's
        device broadcast to the selection, or a Python scalar x's dtype can hold."""
        try:  # the out-of-memory guard (xp_cuda._memory), inline: no cost without a failure
            k = self._key(key, setting=True)
            if isinstance(value, Array):
                if value.device != self._device:
                    raise ValueError(f"the value is on {value.device} but the array is on "
                                     f"{self._device}; move one with to_device")
                if _dtypes.PROMOTION_TABLE.get((self.dtype, value.dtype)) is not self.dtype:
                    raise TypeError(f"cannot assign {value.dtype} values into a {self.dtype} "
                                    f"array without changing its dtype; cast the value with "
                                    f"xp.astype")
                v = value._data
            else:
                v = check_scalar(value, self.dtype, "__setitem__")
            _backend_of([self, value] if isinstance(value, Array) else [self]).setitem(
                self._data, k, v, getattr(value, "shape", ()))
        except _memory.errors() as e:
            _memory.recover(e, Array.__setitem__, (self, key, value), None, "__setitem__")

    # ---- operators -----------------------------------------------------------------------
    def _operand(self, other, op: str):
        t = type(other)
        if t is float or t is int or t is bool or t is complex or (
                not isinstance(other, Array) and scalar_type_name(other) is not None):
            dtype = _dtypes._BY_NUMPY[self._data.dtype]
            try:
                return typed_scalar(other, dtype, op)
            except TypeError:  # (no cost on the typed path: only a refusal comes here)
                # A later revision's wider rule makes the scalar a 0-d array of another dtype
                # (TypedScalars must share the array's dtype: the scalar kernels assume it);
                # without one, the refusal stands.
                if wider_scalar_dtype(other, dtype) is None:
                    raise
                return scalar_array(other, self, op)
        if isinstance(other, Array):
            return other
        if type(other).__module__.split(".")[0] in ("numpy", "cupy", "torch", "jax", "jaxlib") \
                or hasattr(other, "__dlpack__") or isinstance(other, (list, tuple)):
            raise TypeError(f"{op}: {_foreign_hint(other)}")
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # arrays are mutable: unhashable

    if TYPE_CHECKING:
        # The operators _elementwise (and _linear_algebra, for @) install from their tables at
        # import, as type checkers see them (tests/test_types.py keeps the two equal).
        # __eq__ and __ne__ return arrays, as the standard says, unlike object's.
        def __matmul__(self, other: Array, /) -> Array: ...
        def __rmatmul__(self, other: Array, /) -> Array: ...
        def __imatmul__(self, other: Array, /) -> Array: ...
        def __add__(self, other: Array | PyScalar, /) -> Array: ...
        def __radd__(self, other: Array | PyScalar, /) -> Array: ...
        def __iadd__(self, other: Array | PyScalar, /) -> Array: ...
        def __sub__(self, other: Array | PyScalar, /) -> Array: ...
        def __rsub__(self, other: Array | PyScalar, /) -> Array: ...
        def __isub__(self, other: Array | PyScalar, /) -> Array: ...
        def __mul__(self, other: Array | PyScalar, /) -> Array: ...
        def __rmul__(self, other: Array | PyScalar, /) -> Array: ...
        def __imul__(self, other: Array | PyScalar, /) -> Array: ...
        def __truediv__(self, other: Array | PyScalar, /) -> Array: ...
        def __rtruediv__(self, other: Array | PyScalar, /) -> Array: ...
        def __itruediv__(self, other: Array | PyScalar, /) -> Array: ...
        def __floordiv__(self, other: Array | PyScalar, /) -> Array: ...
        def __rfloordiv__(self, other: Array | PyScalar, /) -> Array: ...
        def __ifloordiv__(self, other: Array | PyScalar, /) -> Array: ...
        def __mod__(self, other: Array | PyScalar, /) -> Array: ...
        def __rmod__(self, other: Array | PyScalar, /) -> Array: ...
        def __imod__(self, other: Array | PyScalar, /) -> Array: ...
        def __pow__(self, other: Array | PyScalar, /) -> Array: ...
        def __rpow__(self, other: Array | PyScalar, /) -> Array: ...
        def __ipow__(self, other: Array | PyScalar, /) -> Array: ...
        def __and__(self, other: Array | PyScalar, /) -> Array: ...
        def __rand__(self, other: Array | PyScalar, /) -> Array: ...
        def __iand__(self, other: Array | PyScalar, /) -> Array: ...
        def __or__(self, other: Array | PyScalar, /) -> Array: ...
        def __ror__(self, other: Array | PyScalar, /) -> Array: ...
        def __ior__(self, other: Array | PyScalar, /) -> Array: ...
        def __xor__(self, other: Array | PyScalar, /) -> Array: ...
        def __rxor__(self, other: Array | PyScalar, /) -> Array: ...
        def __ixor__(self, other: Array | PyScalar, /) -> Array: ...
        def __lshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __rlshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __ilshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __rshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __rrshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __irshift__(self, other: Array | PyScalar, /) -> Array: ...
        def __lt__(self, other: Array | PyScalar, /) -> Array: ...
        def __le__(self, other: Array | PyScalar, /) -> Array: ...
        def __gt__(self, other: Array | PyScalar, /) -> Array: ...
        def __ge__(self, other: Array | PyScalar, /) -> Array: ...
        def __eq__(self, other: Array | PyScalar, /) -> Array: ...  # type: ignore[override]
        def __ne__(self, other: Array | PyScalar, /) -> Array: ...  # type: ignore[override]
        def __abs__(self) -> Array: ...
        def __neg__(self) -> Array: ...
        def __pos__(self) -> Array: ...
        def __invert__(self) -> Array: ...


def _rebuild(host, device: Device) -> Array:
    """pickle's reconstructor: the NumPy array ``host`` (a fresh one, unpickled) on device."""
    return _wrap(backend(device).move_in(host, backend(_CPU)), device)


def _filled_0d(value, dtype: DType, device: Device) -> Array:
    b = backend(device)
    with b.ctx():
        return _wrap(b.full((), dtype, value), device)


def scalar_array(value, like: Array, where: str) -> Array:
    """The Python scalar ``value`` beside the array ``like`` as the 0-d array the spec's
    scalar rules make of it (like's dtype, or the revision's wider one), on like's device."""
    dtype = like.dtype
    try:
        value = typed_scalar(value, dtype, where).value
    except TypeError:
        wide = wider_scalar_dtype(value, dtype)
        if wide is None:
            raise
        dtype, value = wide, wide._np.type(value)
    return _filled_0d(value, dtype, like._device)


def _move_wrapped(x: Array, dst: Device, stream=None) -> Array:
    return _wrap(_move(x, dst, stream), dst)


def _move(x: Array, dst: Device, stream=None):
    """A copy of x's data on device dst (a native array of dst's backend)."""
    return x._b.move(x._data, backend(dst), stream)
