"""Linear algebra functions of the main namespace (2023.12)."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from . import _elementwise, _manipulation, _memory, _revisions
from ._array import Array, _backend_of, _wrap, check_array
from ._dtypes import promote, scalar_type_name
from ._backends._base import KEPT as _KEPT
from ._validation import PLANS as _PLANS
from ._validation import (broadcast_shapes, check_dtype_category, check_int, check_size,
                          common_device, normalize_axis, planned)

_KEPT_get = _KEPT.get  # bound once: the hot path's lookup

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def _unguarded(f):
    """A namespace function without its out-of-memory guard (the caller's guard names the
    caller)."""
    return getattr(f, "__wrapped__", f)


def _check_matmul(x1, x2):
    fname = "matmul"
    for a, n in ((x1, "x1"), (x2, "x2")):
        check_dtype_category(a, "numeric", fname, n)
        if a.ndim == 0:
            raise ValueError(f"{fname}: {n} is 0-d; matmul needs arrays of at least 1 "
                             f"dimension (use multiply for scalars)")
    dtype = promote(x1.dtype, x2.dtype)
    k1 = x1.shape[-1]
    k2 = x2.shape[-2] if x2.ndim > 1 else x2.shape[0]
    if k1 != k2:
        raise ValueError(f"{fname}: the contracted dimensions differ: x1 {x1.shape} has {k1} "
                         f"columns, x2 {x2.shape} has {k2} rows")
    batch = ()
    if x1.ndim > 2 or x2.ndim > 2:
        batch = broadcast_shapes([x1.shape[:-2], x2.shape[:-2]], fname)
    check_size(batch + x1.shape[-2:-1] + x2.shape[-1:] if x2.ndim > 1 else batch +
               x1.shape[-2:-1], dtype, fname)
    return dtype


def matmul(x1: Array, x2: Array, /) -> Array:
    """Array API 2023.12 ``matmul`` (linear algebra functions): the matrix product of ``x1`` and
    ``x2`` (stacks broadcast; 1-D operands promoted as the standard says), computed by cuBLAS on
    cuda (a matrix times a vector by our vecdot kernel where that is faster)."""
    d1 = check_array(x1, "matmul", "x1")._data
    d2 = check_array(x2, "matmul", "x2")._data
    # dtypes and shapes decide the checks: once per combination
    key = ("matmul", d1.dtype, d1.shape, d2.dtype, d2.shape)
    device = x1._device
    kept = _KEPT_get(key)  # a checked call the backend kept (one cuBLAS call): strides, device
    if kept is not None and x2._device is device and type(x1) is Array and type(x2) is Array:
        r = kept((d1, d2), device)
        if r is not None:
            return _wrap(r, device)
    t = _PLANS.get(key)
    if t is None:
        t = planned(key, (), _check_matmul, x1, x2)
    if x2._device is not device:
        device = common_device([x1, x2], "matmul")
    if type(x1) is type(x2):
        b = x1._b
        return _wrap(b.matmul(d1, d2, t, key if type(x1) is Array else None), device)
    return _wrap(_backend_of([x1, x2]).matmul(d1, d2, t), device)


def matrix_transpose(x: Array, /) -> Array:
    """Array API 2023.12 ``matrix_transpose`` (linear algebra functions): ``x`` with its last two
    axes swapped (a view)."""
    fname = "matrix_transpose"
    d = check_array(x, fname, "x")._data
    if d.ndim < 2:
        raise ValueError(f"{fname}: x has shape {x.shape}; it needs at least 2 dimensions "
                         f"(a matrix or a stack of matrices)")
    # a view: no allocation, no launch, so no device to enter (NumPy's and CuPy's method)
    return _wrap(d.swapaxes(-1, -2), x._device)


def _numeric_dtype(fname, x1, x2):
    """The promoted dtype of two numeric arrays (their dtype categories checked)."""
    for a, n in ((x1, "x1"), (x2, "x2")):
        check_dtype_category(a, "numeric", fname, n)
    try:
        return promote(x1.dtype, x2.dtype)
    except TypeError as e:
        raise TypeError(f"{fname}: {e}") from None


def _numeric_pair(fname, x1, x2):
    """Check two numeric arrays on one device; return (promoted dtype, device)."""
    check_array(x1, fname, "x1")
    check_array(x2, fname, "x2")
    return _numeric_dtype(fname, x1, x2), common_device([x1, x2], fname)


def _as_int(v: Any) -> int | None:
    """v as a Python int where operator.index accepts it (bools refused: True is no count),
    else None."""
    if type(v) is int:
        return v
    if isinstance(v, bool):
        return None
    try:
        return int(operator.index(v))
    except TypeError:
        return None


def tensordot(x1: Array, x2: Array, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Array API 2023.12 ``tensordot`` (linear algebra functions): the sum of products over
    ``axes`` (an int: the last of ``x1`` with the first of ``x2``; or two sequences of axes)."""
    fname = "tensordot"
    dtype, device = _numeric_pair(fname, x1, x2)
    n1, n2 = x1.ndim, x2.ndim
    k = _as_int(axes)
    if k is not None:
        if not 0 <= k <= min(n1, n2):
            raise ValueError(f"{fname}: axes={k} must be between 0 and the smaller rank "
                             f"{min(n1, n2)} (x1 {x1.shape}, x2 {x2.shape})")
        ax1, ax2 = list(range(n1 - k, n1)), list(range(k))
    elif (isinstance(axes, (tuple, list)) and len(axes) == 2
          and all(isinstance(a, (tuple, list)) for a in axes)):
        if len(axes[0]) != len(axes[1]):
            raise ValueError(f"{fname}: axes={axes}: the two axis sequences have different "
                             f"lengths ({len(axes[0])} and {len(axes[1])})")
        ax1 = [normalize_axis(a, n1, fname, "axes[0]") for a in axes[0]]
        ax2 = [normalize_axis(a, n2, fname, "axes[1]") for a in axes[1]]
        for ax, nm in ((ax1, "axes[0]"), (ax2, "axes[1]")):
            if len(set(ax)) != len(ax):
                raise ValueError(f"{fname}: {nm}={axes[0] if nm == 'axes[0]' else axes[1]} "
                                 f"repeats an axis")
    else:
        raise TypeError(f"{fname}: axes must be a non-negative integer or a pair of "
                        f"sequences of ints, got {axes!r}")
    for i, j in zip(ax1, ax2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"{fname}: contracted axes differ in size: x1 axis {i} has size "
                             f"{x1.shape[i]}, x2 axis {j} has size {x2.shape[j]} (x1 "
                             f"{x1.shape}, x2 {x2.shape}); contracted axes are never broadcast")
    check_size(tuple(n for i, n in enumerate(x1.shape) if i not in ax1) +
               tuple(n for i, n in enumerate(x2.shape) if i not in ax2), dtype, fname)
    if not ax1:
        # the outer product (CuPy's tensordot refuses 0-d inputs here): our multiply of
        # broadcast views, each operand read in its own dtype
        return _unguarded(_elementwise.multiply)(
            _unguarded(_manipulation.reshape)(x1, x1.shape + (1,) * n2), x2)
    b = _backend_of([x1, x2])
    with b.ctx():
        # converted by the backend's astype (on cuda our kernel: CuPy's flushes float32
        # subnormals); the contraction is the library's GEMM
        a = b.astype(x1._data, dtype, False)
        c = b.astype(x2._data, dtype, False)
        out = b.xp.tensordot(a, c, axes=(tuple(ax1), tuple(ax2)))
        out = b.astype(out, dtype, False)
    return _wrap(out, device)


def negative_axis_check(fname, x1, x2, axis):
    """The 2023.12 rule for vecdot/cross: axis counts from the end, in [-N, -1] with
    N = min(x1.ndim, x2.ndim). A non-negative axis is ambiguous across ranks, so it is refused
    with the equivalent call spelled out. Returns the (negative) axis."""
    axis = check_int(axis, fname, "axis")
    n1, n2 = x1.ndim, x2.ndim
    n = min(n1, n2)
    if n == 0:
        raise ValueError(f"{fname}: x1 {x1.shape} and x2 {x2.shape}: both inputs need at least "
                         f"one dimension")
    if axis >= 0:
        if axis < n and x1.shape[axis] != x2.shape[axis]:
            hint = (f"axis {axis} has size {x1.shape[axis]} in x1 but {x2.shape[axis]} in "
                    f"x2, so no contraction over it exists")
        elif axis < n:
            # Axis `axis` of each array, moved to the same place from the end in both.
            t1, t2 = n1 - axis - 1, n2 - axis - 1
            t = t1 if t1 > t2 else t2

            def spell(name, ti):
                if ti == t:
                    return name
                return f"{name}[{', '.join([':'] * (axis + 1) + ['None'] * (t - ti))}]"
            hint = (f"to contract axis {axis} of each array, call "
                    f"`{fname}({spell('x1', t1)}, {spell('x2', t2)}, axis={-(t + 1)})`")
        else:
            hint = f"axis {axis} does not exist in both arrays; use a negative axis"
        raise ValueError(
            f"{fname}: axis={axis} is not allowed: Array API {_revisions.api_version()} "
            f"requires a negative axis "
            f"in [-{n}, -1] counted from the last dimension (x1 {x1.shape}, x2 {x2.shape}); "
            f"{hint}")
    if axis < -n:
        raise ValueError(
            f"{fname}: axis={axis} is out of [-{n}, -1]: the contracted axis must exist in both "
            f"x1 {x1.shape} and x2 {x2.shape} (it is never broadcast)")
    return axis


def _check_vecdot(x1, x2, axis):
    """(promoted dtype, negative axis) of a valid vecdot of arrays of these dtypes and shapes
    (the devices are checked on every call)."""
    fname = "vecdot"
    dtype = _numeric_dtype(fname, x1, x2)
    axis = negative_axis_check(fname, x1, x2, axis)
    k1, k2 = x1.shape[axis], x2.shape[axis]
    if k1 != k2:
        raise ValueError(f"{fname}: the contracted axis {axis} has size {k1} in x1 {x1.shape} "
                         f"and size {k2} in x2 {x2.shape}; they must be equal (the contracted "
                         f"axis is never broadcast)")
    rest1 = x1.shape[:axis] + x1.shape[axis:][1:]
    rest2 = x2.shape[:axis] + x2.shape[axis:][1:]
    broadcast_shapes([rest1, rest2], fname)
    return dtype, axis


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Array API 2023.12 ``vecdot`` (linear algebra functions): the dot product ``sum(conj(x1) *
    x2)`` over ``axis``, the other axes broadcast (our fused kernel on cuda)."""
    d1 = check_array(x1, "vecdot", "x1")._data
    d2 = check_array(x2, "vecdot", "x2")._data
    # dtypes, shapes and axis decide the checks: once per combination
    key = ("vecdot", d1.dtype, d1.shape, d2.dtype, d2.shape, axis, type(axis))
    dtype, ax = planned(key, (axis,), _check_vecdot, x1, x2, axis)
    device = x1._device
    if x2._device is not device:
        device = common_device([x1, x2], "vecdot")
    b = x1._b if type(x1) is type(x2) else _backend_of([x1, x2])
    with b.ctx():
        return _wrap(b.vecdot(d1, d2, ax, dtype), device)


def _matmul_operand(self, other):
    if scalar_type_name(other) is not None:
        raise TypeError("@ needs two arrays; Python scalars are not allowed with matmul")
    return self._operand(other, "@")


# (each with the out-of-memory guard inline: xp_cuda._memory)
def _matmul_op(self: Array, other: Array) -> Array:
    try:
        return matmul(self, other) if isinstance(other, Array) else _matmul_operand(self, other)
    except _memory.errors() as e:
        return _memory.recover(e, _matmul_op, (self, other), None, "@")


def _rmatmul_op(self: Array, other: Array) -> Array:
    try:
        return matmul(other, self) if isinstance(other, Array) else _matmul_operand(self, other)
    except _memory.errors() as e:
        return _memory.recover(e, _rmatmul_op, (self, other), None, "@")


def _imatmul_op(self: Array, other: Array) -> Array:
    try:
        res = _matmul_op(self, other)
        if res is NotImplemented:
            return res
        if res.dtype is not self.dtype or res.shape != self.shape:
            raise ValueError(f"@=: the result ({res.dtype}, shape {res.shape}) cannot be "
                             f"stored in place into a {self.dtype} array of shape {self.shape}")
        _backend_of([self, res]).assign(self._data, res._data)
        return self
    except _memory.errors() as e:
        return _memory.recover(e, _imatmul_op, (self, other), None, "@=")


# Array's @ operators, installed by the module that owns matmul (_array never imports it).
_matmul_op.__doc__ = "Array API 2023.12 array object, operator ``x @ y``: ``matmul(x, y)``."
_rmatmul_op.__doc__ = "Array API 2023.12 array object, reflected ``y @ x``: ``matmul(y, x)``."
_imatmul_op.__doc__ = ("Array API 2023.12 array object, in-place ``x @= y``: ``x[...] = "
                       "matmul(x, y)``, where the result keeps x's dtype and shape.")
for _name, _op in (("__matmul__", _matmul_op), ("__rmatmul__", _rmatmul_op),
                  ("__imatmul__", _imatmul_op)):
    setattr(Array, _name, _op)
del _name, _op

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
