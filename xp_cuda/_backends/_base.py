"""What every backend shares: the primitives NumPy and CuPy spell alike, the index key
vocabulary, and the hot path's memo of validated elementwise plans (see __init__)."""
from __future__ import annotations

import contextlib
import math

import numpy as np

from .._devices import CPU, Device
from .._dtypes import clip_scalar

# Validated launch plans of the eager elementwise hot path, filled by the cuda backend once
# the spec layer's full checks have passed for a (function, dtypes) pair:
# (name, numpy dtype(s), or "s" for a scalar operand) -> (Plan, Device, context or None).
# The context is None when only one GPU is visible (nothing to switch).
FAST: dict = {}


def _reduced_shape(shape, axes, keepdims):
    """The shape a reduction over `axes` leaves (the NaN results of empty ranges need it)."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


class EmptyMask:
    """An index key: a boolean mask with a size-0 dimension; it selects no element."""

    __slots__ = ("ndim",)

    def __init__(self, ndim):
        self.ndim = ndim


class Backend:
    """Primitives shared by NumPy and CuPy (their APIs agree here)."""

    xp = np
    device: Device = CPU
    # When arrays of several backends meet in one call (an argument of a fused function and
    # an array it closes over), the one of higher rank handles it (and reports the problem).
    rank = 0

    # A context that makes this backend's device current, or None where there is no device
    # to switch to (hot paths then skip the context).
    switch = None

    def ctx(self):
        return contextlib.nullcontext()

    # ---- data movement --------------------------------------------------------------------
    def to_host(self, data):
        return data

    def move(self, data, dst: "Backend", stream=None):
        """A copy of `data` (a native array of this backend) on dst's device."""
        return dst.move_in(data, self, stream)

    def free_memory(self) -> str:
        """A clause for an out-of-memory message: what is free now (after releasing caches)."""
        return ""

    # ---- elementwise family ---------------------------------------------------------------
    def where(self, cond, x1, x2, dtype, shape):
        xp = self.xp
        with self.ctx():
            return xp.where(cond, x1.astype(dtype._np, copy=False), x2.astype(dtype._np, copy=False))

    def astype(self, data, dtype, copy: bool):
        with self.ctx():
            return data.astype(dtype._np, copy=copy)

    def clip_bound(self, value, dtype, argname):
        """A scalar bound of clip, typed as x's dtype (the scalar rules checked)."""
        return clip_scalar(value, dtype, argname)

    def clip(self, data, lo, hi, dtype, shape):
        """lo, hi: native arrays, checked Python scalars, or None."""
        xp = self.xp
        with self.ctx(), np.errstate(all="ignore"):
            out = xp.array(xp.broadcast_to(data, shape), copy=True)
            # where(...) keeps NaN in x (comparisons with NaN are false) and never promotes.
            if lo is not None:
                out = xp.where(out < lo, xp.asarray(lo).astype(out.dtype), out)
            if hi is not None:
                out = xp.where(out > hi, xp.asarray(hi).astype(out.dtype), out)
            return out.astype(dtype._np, copy=False)

    # ---- reductions -----------------------------------------------------------------------
    def reduce(self, kind, data, axes, keepdims, dtype):
        """sum, prod, max, min, mean, all, any over `axes`; the result in `dtype`. The spec
        layer has handled the cases the standard defines specially (empty max/min, the NaN
        mean of nothing)."""
        xp = self.xp
        with self.ctx(), np.errstate(all="ignore"):
            if kind in ("sum", "prod"):
                # Cast first (spec: the dtype argument exists to prevent overflow).
                data = data.astype(dtype._np, copy=False)
                out = getattr(xp, kind)(data, axis=axes, dtype=dtype._np, keepdims=keepdims)
            elif kind == "mean" and not math.prod(data.shape[a] for a in axes):
                out = xp.full(_reduced_shape(data.shape, axes, keepdims), np.nan,
                              dtype=dtype._np)
            elif kind in ("max", "min"):  # amax/amin propagate NaN, as the spec asks
                out = getattr(xp, "amax" if kind == "max" else "amin")(data, axis=axes,
                                                                      keepdims=keepdims)
            else:
                out = getattr(xp, kind)(data, axis=axes, keepdims=keepdims)
            return xp.asarray(out).astype(dtype._np, copy=False)

    def var(self, fname, data, axes, dof, keepdims, dtype):
        """var (std: fname "std", its square root) over `axes` with `dof` = N - correction
        degrees of freedom; NaN where dof <= 0."""
        xp = self.xp
        with self.ctx(), np.errstate(all="ignore"):
            if not dof > 0:
                out = xp.full(_reduced_shape(data.shape, axes, keepdims), np.nan,
                              dtype=dtype._np)
            else:
                dev = data - xp.mean(data, axis=axes, keepdims=True)
                out = xp.sum(dev * dev, axis=axes, keepdims=keepdims)
                out = out / xp.asarray(dof, dtype=dtype._np)
                if fname == "std":
                    out = xp.sqrt(out)
            return xp.asarray(out).astype(dtype._np, copy=False)

    # ---- indexing -------------------------------------------------------------------------
    def getitem(self, data, key, user_key):
        """key: validated by the spec layer (an EmptyMask, a native bool array, or a tuple of
        ints, slices, None and Ellipsis); user_key: the key as the user wrote it."""
        with self.ctx():
            if isinstance(key, EmptyMask):
                return self.xp.empty((0,) + data.shape[key.ndim:], data.dtype)
            return data[key]

    def setitem(self, data, key, value, value_shape):
        """value: a native array or a checked NumPy scalar of data's dtype."""
        if isinstance(key, EmptyMask):
            return
        with self.ctx():
            try:
                data[key] = value
            except ValueError:
                raise ValueError(
                    f"__setitem__: a value of shape {value_shape} cannot be broadcast to the "
                    f"selected elements of an array of shape {tuple(data.shape)}") from None

    def assign(self, data, value):
        """data[...] = value for the in-place operators (same shape and dtype)."""
        with self.ctx():
            data[...] = value

    # ---- sorting --------------------------------------------------------------------------
    def stable_argsort(self, data, axis: int):
        return self.xp.argsort(data, axis=axis, kind="stable")

    def stable_sort(self, data, axis: int):
        return self.xp.sort(data, axis=axis, kind="stable")

    # ---- fused programs (xp_cuda.fusion) -----------------------------------------------------
    def fused_launch(self, trace, outs, natives):
        """A compiled kernel computing the IR nodes `outs` of `trace` from arrays laid out like
        `natives`, or None where this backend evaluates the graph through the eager functions."""
        return None

    # ---- linear algebra -------------------------------------------------------------------
    def linalg_errors(self) -> tuple:
        """The exceptions a failing factorisation raises here."""
        return (np.linalg.LinAlgError,)

    def linalg_checked(self):
        """A context in which a failing factorisation raises (as LAPACK does on cpu)."""
        return contextlib.nullcontext()
