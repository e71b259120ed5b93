"""The 14 manipulation functions (2023.12, with the later revisions' changes).

Shapes and axes are validated here with the shared checks, result dtypes come from the promotion
table, and each function makes one call (or a view) into the device's backend.
"""
from __future__ import annotations

import math

from . import _revisions
from ._array import Array, _backend_of, _wrap, check_array, kept_one, kept_result
from ._backends._base import RESHAPES as _RESHAPES
from ._dtypes import int64 as _int64
from ._dtypes import promote
from ._revisions import since
from ._validation import broadcast_shapes as _broadcast_rule  # the public name is 2025.12's
from ._validation import (MAX_BYTES, check_int, check_size, common_device, normalize_axes,
                          int_tuple, normalize_axis, option_type, planned,
                          PLAN_LIMIT)


def _check_sequence(arrays, fname: str) -> list:
    """A non-empty tuple or list of xp_cuda arrays on one device."""
    if not isinstance(arrays, (tuple, list)):
        raise TypeError(f"{fname}: arrays must be a tuple or list of arrays, got "
                        f"{type(arrays).__name__}")
    if len(arrays) == 0:
        raise ValueError(f"{fname}: needs at least one array")
    for i, a in enumerate(arrays):
        check_array(a, fname, f"arrays[{i}]")
    common_device(list(arrays), fname)
    return list(arrays)


def _promoted(arrays, fname: str):
    dt = arrays[0].dtype
    for a in arrays[1:]:
        try:
            dt = promote(dt, a.dtype)
        except TypeError as e:
            raise TypeError(f"{fname}: {e}") from None
    return dt


def _int_tuple(value, fname: str, argname: str) -> tuple:
    """A tuple of Python ints (the spec's Tuple[int, ...])."""
    if not isinstance(value, tuple):
        raise TypeError(f"{fname}: {argname} must be a tuple of ints, got {value!r}")
    return tuple(check_int(v, fname, argname) for v in value)


def _int_or_tuple(value, fname: str, argname: str) -> tuple:
    if isinstance(value, tuple):
        return _int_tuple(value, fname, argname)
    return (check_int(value, fname, argname),)


_TUPLES = "tuples from devices, broadcast_arrays and meshgrid"


def broadcast_arrays(*arrays: Array) -> list[Array] | tuple[Array, ...]:
    """Array API ``broadcast_arrays``: the arrays broadcast to one shape, as a list (a tuple
    from 2025.12)."""
    for i, a in enumerate(arrays):
        check_array(a, "broadcast_arrays", f"arrays[{i}]")
    sequence = tuple if _revisions.allows(_TUPLES) else list
    if not arrays:
        return sequence()
    dev = common_device(list(arrays), "broadcast_arrays")
    b = _backend_of(arrays)
    widest = max((a.dtype for a in arrays), key=lambda d: d._np.itemsize)
    shape = _broadcast_rule([a.shape for a in arrays], "broadcast_arrays", widest)
    with b.ctx():
        return sequence([_wrap(b.xp.broadcast_to(a._data, shape), dev) for a in arrays])


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    """Array API 2023.12 ``broadcast_to``: x broadcast to ``shape`` (a view)."""
    check_array(x, "broadcast_to")
    shape = _int_tuple(shape, "broadcast_to", "shape")
    if any(n < 0 for n in shape):
        raise ValueError(f"broadcast_to: shape {shape} has a negative dimension")
    if len(shape) < x.ndim or _broadcast_rule([x.shape, shape], "broadcast_to",
                                              x.dtype) != shape:
        raise ValueError(f"broadcast_to: an array of shape {x.shape} cannot be broadcast to "
                         f"shape {shape}")
    b = x._b
    with b.ctx():
        return _wrap(b.xp.broadcast_to(x._data, shape), x.device)


def _sequence(arrays, fname: str):
    """(natives, device, first, key of their dtypes and shapes) of a non-empty tuple or list
    of xp_cuda arrays on one device (the checks of every call: the arrays' types and devices).
    ``first``: arrays[0] when all are of one class on one device (its backend serves them,
    and where that class is Array a kept call may), else None (see _sequence_backend)."""
    if type(arrays) is not list and type(arrays) is not tuple:
        _check_sequence(arrays, fname)  # raises: not a tuple or list
    if not arrays:
        _check_sequence(arrays, fname)  # raises: empty
    natives, key = [], [fname]
    first = arrays[0]
    dev, cls = getattr(first, "_device", None), type(first)
    same = True
    for a in arrays:
        if not isinstance(a, Array):
            _check_sequence(arrays, fname)  # raises, naming the first non-array
        d = a._data
        natives.append(d)
        key.append(d.dtype)
        key.append(d.shape)
        if a._device is not dev or type(a) is not cls:
            same = False
    if same:  # one device, one kind of array
        return natives, dev, first, key
    return natives, common_device(list(arrays), fname), None, key


def _sequence_backend(arrays, first):
    """The backend of a call on _sequence's arrays: first's, else the highest-ranked."""
    return first._b if first is not None else _backend_of(arrays)


def _check_concat(arrays, axis):
    arrays = list(arrays)
    dt = _promoted(arrays, "concat")
    if axis is None:
        check_size((sum(a.size for a in arrays),), dt, "concat")
        return None, dt
    ndim = arrays[0].ndim
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(f"concat: arrays[0] has {ndim} dimension(s) but arrays[{i}] has "
                             f"{a.ndim}; all arrays need the same rank")
    if ndim == 0:
        raise ValueError("concat: 0-d arrays cannot be joined along an axis; use axis=None or "
                         "xp.stack")
    ax = normalize_axis(axis, ndim, "concat")
    ref = arrays[0].shape
    for i, a in enumerate(arrays):
        if any(n != m for j, (n, m) in enumerate(zip(a.shape, ref)) if j != ax):
            raise ValueError(f"concat: arrays[{i}] has shape {a.shape}, which differs from "
                             f"arrays[0]'s shape {ref} outside axis {ax}")
    check_size(ref[:ax] + (sum(a.shape[ax] for a in arrays),) + ref[ax + 1:], dt, "concat")
    return ax, dt


def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    """Array API 2023.12 ``concat``: join arrays along an existing axis (None: flattened)."""
    natives, dev, first, key = _sequence(arrays, "concat")
    # the arrays' dtypes and shapes and axis decide the checks: once per combination
    key.append(axis)
    key.append(option_type(axis))
    key = tuple(key)
    r = kept_result(key, arrays, natives, dev,
                    first is not None and type(first) is Array)
    if r is not None:
        return r
    ax, dt = planned(key, (axis,), _check_concat, arrays, axis)
    return _wrap(_sequence_backend(arrays, first).concat(natives, ax, dt, key), dev)


def _expanded_shape(x, axes: tuple) -> tuple:
    """2025.12's expand_dims with a tuple: each axis names a position of the result (M = N +
    len(axes) dimensions), in [-M, M), all distinct once normalised; x's sizes fill the other
    positions in order."""
    axes = _int_tuple(axes, "expand_dims", "axis")
    m = x.ndim + len(axes)
    positions = set()
    for a in axes:
        if not -m <= a < m:
            raise IndexError(f"expand_dims: axis={axes} holds {a}, out of range for a result "
                             f"of {m} dimension(s) (valid: {-m} to {m - 1})")
        positions.add(a % m)
    if len(positions) != len(axes):
        raise ValueError(f"expand_dims: axis={axes} names a position of the result twice")
    sizes = iter(x.shape)
    return tuple(1 if i in positions else next(sizes) for i in range(m))


def expand_dims(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """Array API ``expand_dims``: insert a size-one axis at ``axis`` (in [-N-1, N]); from
    2025.12 ``axis`` may be a tuple of positions in the result."""
    check_array(x, "expand_dims")
    if type(axis) is tuple:
        if not _revisions.allows("expand_dims tuple of axes"):
            raise TypeError(_revisions.later("expand_dims tuple of axes",
                                             f"expand_dims: axis is a tuple {axis}"))
        shape = _expanded_shape(x, axis)
        b = x._b
        with b.ctx():
            return _wrap(x._data.reshape(shape), x.device)
    if type(axis) is list and _revisions.allows("expand_dims tuple of axes"):
        # the signature's int | Tuple[int, ...]: a list is refused (as elsewhere), named
        raise TypeError(f"expand_dims: axis must be an integer or a tuple of integers, got "
                        f"the list {axis}; pass tuple({axis})")
    axis = check_int(axis, "expand_dims", "axis")
    n = x.ndim
    if not -n - 1 <= axis <= n:
        raise IndexError(f"expand_dims: axis={axis} is out of range for an array of {n} "
                         f"dimension(s) (valid: {-n - 1} to {n})")
    pos = axis % (n + 1)
    b = x._b
    with b.ctx():
        return _wrap(x._data.reshape(x.shape[:pos] + (1,) + x.shape[pos:]), x.device)


def _check_flip(x, axis):
    axes = normalize_axes(axis, x.ndim, "flip")
    return tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))


def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """Array API 2023.12 ``flip``: reverse the order of elements along the given axes."""
    d = check_array(x, "flip")._data
    key = ("flip", d.ndim, axis, option_type(axis))  # the checks read only these
    index = planned(key, (axis,), _check_flip, x, axis)
    b = x._b
    if b.switch is None:  # no device to make current: no context to enter
        return _wrap(b.flip(d, index), x._device)
    with b.ctx():
        return _wrap(b.flip(d, index), x._device)


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...],
             /) -> Array:
    """Array API 2023.12 ``moveaxis``: move axes to new positions, keeping the others' order."""
    check_array(x, "moveaxis")
    if source is None or destination is None:
        raise TypeError("moveaxis: source and destination must be ints or tuples of ints")
    src = normalize_axes(source, x.ndim, "moveaxis", "source")
    dst = normalize_axes(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must name "
                         f"the same number of axes")
    b = x._b
    with b.ctx():
        return _wrap(b.xp.moveaxis(x._data, src, dst), x.device)


def _check_permute_dims(x, axes):
    axes = _int_tuple(axes, "permute_dims", "axes")
    perm = normalize_axes(axes, x.ndim, "permute_dims", "axes")
    if len(perm) != x.ndim:
        raise ValueError(f"permute_dims: axes={axes} must be a permutation of all "
                         f"{x.ndim} axes of x")
    return perm


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    """Array API 2023.12 ``permute_dims``: permute the axes of x."""
    if type(x) is Array and type(axes) is tuple:
        # the hot path: axes of Python ints already checked for this many dimensions (a
        # transpose is a view on every backend: no device work, no context)
        for a in axes:
            if type(a) is not int:
                break
        else:
            d = x._data
            perm = _PERMS_get((d.ndim, axes))
            if perm is not None:
                out = _new_object(Array)
                out._data = d.transpose(perm)
                out._device = x._device
                return out
    d = check_array(x, "permute_dims")._data
    key = ("permute_dims", d.ndim, axes, option_type(axes))  # the checks read only these
    perm = planned(key, (axes,), _check_permute_dims, x, axes)
    if type(x) is Array and int_tuple(axes):
        if len(_PERMS) >= PLAN_LIMIT:
            _PERMS.clear()
        _PERMS[(d.ndim, axes)] = perm
    b = x._b
    if b.switch is None:  # no device to make current: no context to enter
        return _wrap(b.xp.transpose(d, perm), x._device)
    with b.ctx():
        return _wrap(b.xp.transpose(d, perm), x._device)


# permute_dims' checked permutations: (ndim, axes of Python ints) -> the permutation
_PERMS: dict = {}
_PERMS_get = _PERMS.get


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Array API 2023.12 ``repeat``: repeat each element ``repeats`` times along ``axis``
    (None: of the flattened array). An array of repeats makes the output shape depend on its
    values, so on a GPU it costs one device synchronization."""
    check_array(x, "repeat")
    b = x._b
    data = x._data
    kept_key = None
    if type(repeats) is int and type(axis) is int:  # keyable: repeats and axis are ints
        kept_key = ("repeat", data.dtype, data.shape, repeats, axis)
        r = kept_one(kept_key, x, data)
        if r is not None:
            return r
    if axis is None:
        with b.ctx():
            data = data.reshape(-1)
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim, "repeat")
    m = data.shape[ax]
    if not isinstance(repeats, Array):
        r = check_int(repeats, "repeat", "repeats")
        if r < 0:
            raise ValueError(f"repeat: repeats={r} must be non-negative")
        check_size(data.shape[:ax] + (m * r,) + data.shape[ax + 1:], data.dtype, "repeat")
        return _wrap(b.repeat(data, r, ax, kept_key), x.device)
    if repeats.dtype.kind not in ("int", "uint"):
        raise TypeError(f"repeat: repeats has dtype {repeats.dtype}, but it must be an integer "
                        f"array (Array API {_revisions.api_version()}); convert it with xp.astype")
    common_device([x, repeats], "repeat")
    if repeats.ndim != 1 or repeats.shape[0] not in (1, m):
        raise ValueError(f"repeat: repeats of shape {repeats.shape} must have shape (1,) or "
                         f"({m},) to match the {'flattened array' if axis is None else 'axis'}")
    r = b.astype(repeats._data, _int64, False)
    lo, hi = b.bounds(r) if r.shape[0] else (0, 0)
    if lo < 0:
        raise ValueError(f"repeat: repeats must be non-negative (it holds {lo})")
    if r.shape[0] == 1 or m == 0:
        total = hi * m
    else:
        total = hi * m  # a bound; the exact sum where the bound is too large to trust int64
        if total * data.dtype.itemsize > MAX_BYTES:
            total = sum(int(v) for v in b.to_host(r).tolist())
    check_size(data.shape[:ax] + (total,) + data.shape[ax + 1:], data.dtype, "repeat")
    if r.shape[0] == 1 or m == 0:
        return _wrap(b.repeat(data, hi if m else 0, ax), x.device)
    return _wrap(b.repeat(data, r, ax), x.device)


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    """Array API 2023.12 ``reshape``: same elements in a new shape (one -1 is inferred).
    copy=False raises ValueError when the new shape cannot be a view of x."""
    if copy is None and type(x) is Array and type(shape) is tuple:
        # the hot path: a layout whose checked reshape the backend answers with the native
        # reshape alone (RESHAPES), for a shape of Python ints (see there)
        for n in shape:
            if type(n) is not int:
                break
        else:
            d = x._data
            target = _RESHAPES_get((d.shape, d.strides, d.dtype, shape))
            if target is not None:
                out = _new_object(Array)
                out._data = d.reshape(target)
                out._device = x._device
                return out
            # a layout that needs a copy: the backend's kept move under the full path's key
            # (its strides and device checked by the kept call itself)
            r = kept_one((_reshape_key(d, shape, None), d.dtype), x, d)
            if r is not None:
                return r
    data = check_array(x, "reshape")._data
    key = _reshape_key(data, shape, copy)
    target = planned(key, (shape, copy), _reshape_target, x, shape, copy)
    b = x._b
    if copy:
        return _wrap(b.copy(data).reshape(target), x._device)
    if copy is None and b.switch is None:  # no view check, no device to make current
        view_key = (data.shape, data.strides, data.dtype, shape) if int_tuple(shape) else None
        return _wrap(b.reshape(data, target, (key, data.dtype), view_key), x._device)
    xp = b.xp
    with b.ctx():
        out = b.reshape(data, target)
        # A reshape that had to copy lands in a fresh buffer, sharing no memory with x.
        if copy is False and data.size > 0 and not xp.may_share_memory(out, data):
            raise ValueError(f"reshape: an array of shape {x.shape} with its strides cannot "
                             f"be viewed as shape {target} without a copy, but copy=False "
                             f"was passed")
        return _wrap(out, x._device)


_RESHAPES_get = _RESHAPES.get
_new_object = object.__new__


def _reshape_key(data, shape, copy) -> tuple:
    """reshape's plan key (the checks depend on these alone); the backend keeps a copying
    reshape under (this key, data's dtype), which the hot path looks up."""
    return ("reshape", data.shape, shape, option_type(shape), copy, type(copy))


def _reshape_target(x, shape, copy) -> tuple:
    """The checked target shape of reshape (its -1 resolved)."""
    shape = _int_tuple(shape, "reshape", "shape")
    if not (copy is None or copy is True or copy is False):
        raise TypeError(f"reshape: copy must be True, False or None, got {copy!r}")
    if any(n < -1 for n in shape) or shape.count(-1) > 1:
        raise ValueError(f"reshape: shape {shape} may hold non-negative sizes and at most "
                         f"one -1")
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or x.size % known:
            raise ValueError(f"reshape: cannot infer the -1 in {shape} for an array of "
                             f"{x.size} elements")
        return tuple(x.size // known if n == -1 else n for n in shape)
    if known != x.size:
        raise ValueError(f"reshape: an array of shape {x.shape} ({x.size} elements) cannot "
                         f"be reshaped to {shape}")
    # (only an empty x can have a target whose sizes overflow; the plan is kept per shape, not
    # per dtype, so the rule's element count: a larger product of non-zero sizes is refused)
    return check_size(shape, None, "reshape")


def _check_roll(x, shift, axis):
    shifts = _int_or_tuple(shift, "roll", "shift")
    if axis is None:
        if isinstance(shift, tuple):
            raise ValueError("roll: a tuple shift needs a tuple axis of the same length")
        return shifts, None
    # Repeated axes are allowed: their shifts add up.
    axes = tuple(normalize_axis(a, x.ndim, "roll") for a in _int_or_tuple(axis, "roll", "axis"))
    if isinstance(shift, tuple):
        if len(shifts) != len(axes):
            raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    else:
        shifts = shifts * len(axes)
    return shifts, axes


def roll(x: Array, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> Array:
    """Array API 2023.12 ``roll``: shift elements along axes, wrapping around."""
    d = check_array(x, "roll")._data
    # the checks read only these
    key = ("roll", d.ndim, shift, option_type(shift), axis, option_type(axis))
    kept_key = (key, d.dtype, d.shape)
    r = kept_one(kept_key, x, d)
    if r is not None:
        return r
    plan = planned(key, (shift, axis), _check_roll, x, shift, axis)
    return _wrap(x._b.roll(d, plan[0], plan[1], kept_key), x._device)


def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """Array API 2023.12 ``squeeze``: remove the given size-one axes."""
    check_array(x, "squeeze")
    if axis is None:
        raise TypeError(f"squeeze: axis is required in Array API {_revisions.api_version()} "
                        f"(an int or a tuple of ints naming size-one axes)")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}; only size-one axes "
                             f"can be removed (x has shape {x.shape})")
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    b = x._b
    with b.ctx():
        return _wrap(x._data.reshape(shape), x.device)


def _check_stack(arrays, axis):
    arrays = list(arrays)
    ref = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != ref:
            raise ValueError(f"stack: arrays[{i}] has shape {a.shape} but arrays[0] has "
                             f"{ref}; all arrays need the same shape")
    ax = normalize_axis(axis, len(ref) + 1, "stack")
    dt = _promoted(arrays, "stack")
    check_size(ref[:ax] + (len(arrays),) + ref[ax:], dt, "stack")
    return ax, dt


def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0) -> Array:
    """Array API 2023.12 ``stack``: join same-shape arrays along a new axis."""
    natives, dev, first, key = _sequence(arrays, "stack")
    # the arrays' dtypes and shapes and axis decide the checks: once per combination
    key.append(axis)
    key.append(option_type(axis))
    key = tuple(key)
    r = kept_result(key, arrays, natives, dev,
                    first is not None and type(first) is Array)
    if r is not None:
        return r
    ax, dt = planned(key, (axis,), _check_stack, arrays, axis)
    return _wrap(_sequence_backend(arrays, first).stack(natives, ax, dt, key), dev)


def _check_tile(repetitions, shape, dtype):
    reps = _int_tuple(repetitions, "tile", "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions {reps} must be non-negative")
    n = max(len(reps), len(shape))
    padded_reps, padded = (1,) * (n - len(reps)) + reps, (1,) * (n - len(shape)) + shape
    check_size(tuple(r * s for r, s in zip(padded_reps, padded)), dtype, "tile")
    return reps


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    """Array API 2023.12 ``tile``: repeat the whole array along each axis."""
    d = check_array(x, "tile")._data
    key = ("tile", repetitions, option_type(repetitions))  # the checks read only these
    kept_key = (key, d.dtype, d.shape)
    r = kept_one(kept_key, x, d)
    if r is not None:
        return r
    reps = planned(kept_key, (repetitions,), _check_tile, repetitions, d.shape, d.dtype)
    return _wrap(x._b.tile(d, reps, kept_key), x._device)


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Array API 2023.12 ``unstack``: the slices of x along ``axis``, as a tuple (views)."""
    check_array(x, "unstack")
    ax = normalize_axis(axis, x.ndim, "unstack")
    b = x._b
    with b.ctx():
        moved = b.xp.moveaxis(x._data, ax, 0)
        return tuple(_wrap(moved[i], x.device) for i in range(moved.shape[0]))


__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
           "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"]


@since("2025.12")
def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Array API 2025.12 ``broadcast_shapes``: the shape the shapes broadcast to (``()`` for
    none); ValueError where they do not broadcast. Each shape is a tuple of non-negative Python
    ints (the spec's None for an unknown size is for libraries that build graphs: here every
    size is known)."""
    fname = "broadcast_shapes"
    for i, s in enumerate(shapes):
        if not isinstance(s, tuple):
            raise TypeError(f"{fname}: shapes[{i}] is {s!r}; each shape must be a tuple of "
                            f"ints")
        for n in s:
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"{fname}: shapes[{i}] = {s} holds {n!r}; each size must be a "
                                f"Python int")
            if n < 0:
                raise ValueError(f"{fname}: shapes[{i}] = {s} has a negative size")
    return _broadcast_rule(shapes, fname)


__all__ += ["broadcast_shapes"]
