"""The shared input checks every function uses: one place, one wording of each rule."""
from __future__ import annotations

import operator

from . import _revisions
from ._dtypes import DType, in_category


def article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _foreign_hint(x) -> str:
    mod = type(x).__module__.split(".")[0]
    if mod in ("numpy", "cupy", "torch", "jax", "jaxlib", "dask", "array_api_strict") or hasattr(
        x, "__dlpack__"
    ):
        return (f"a {mod}.{type(x).__name__} is not an xp_cuda array; bring it in explicitly "
                f"with xp.asarray(...) or xp.from_dlpack(...)")
    if isinstance(x, (list, tuple)):
        return "a Python sequence is not an array; convert it with xp.asarray(...)"
    return f"expected an xp_cuda array, got {type(x).__name__}"


def check_dtype_category(x, category: str, fname: str, argname: str = "x"):
    if not in_category(x.dtype, category):
        raise TypeError(
            f"{fname}: {argname} has dtype {x.dtype}, but {fname} requires {article(category)} "
            f"{category} dtype "
            f"(Array API {_revisions.api_version()}); convert it with xp.astype if that is "
            f"what you mean"
        )


def check_dtype_arg(dtype, fname: str, allowed: str = "any"):
    """A dtype argument: one of our DType objects (never a NumPy dtype or a string)."""
    if not isinstance(dtype, DType):
        raise TypeError(
            f"{fname}: dtype must be an xp_cuda dtype such as xp.float32, got {dtype!r}"
        )
    if not in_category(dtype, allowed):
        raise TypeError(f"{fname}: dtype {dtype} is not allowed here; it needs a {allowed} dtype")
    return dtype


def common_device(arrays, fname: str):
    dev = arrays[0].device
    for a in arrays[1:]:
        if a.device != dev:
            raise ValueError(
                f"{fname}: arrays are on different devices ({dev} and {a.device}); move one "
                f"with x.to_device(...) first"
            )
    return dev


def broadcast_shapes(shapes, fname: str, dtype=None) -> tuple:
    """The spec's broadcasting rule; ValueError naming the shapes where it fails, or where the
    result is larger than any array can be (check_size, with the result's ``dtype`` where the
    caller knows it)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n == out[i] or n == 1:
                continue
            if out[i] == 1:
                out[i] = n
            else:
                raise ValueError(
                    f"{fname}: shapes {' and '.join(str(tuple(t)) for t in shapes)} cannot be "
                    f"broadcast together (dimension {i - ndim} has sizes {out[i]} and {n})"
                )
    return check_size(tuple(out), dtype, fname)


# The most bytes an array may span: NumPy's and CuPy's sizes and strides are int64 (intp).
MAX_BYTES = 2**63 - 1


def check_size(shape, dtype, fname: str) -> tuple:
    """The one size rule for every result an array function makes, on every device (NumPy's
    rule): the product of the shape's non-zero sizes times the element's bytes must fit in
    int64. A size-0 dimension makes the array empty but does not excuse the other dimensions
    (NumPy refuses ``empty((0, 2**62, 2**62))`` too). ``dtype``: a DType, a NumPy dtype, or
    None for a count of elements (a rule on shapes before their dtype is known). A result too
    large for the memory at hand is a MemoryError later, where the allocation fails."""
    nbytes = 1 if dtype is None else getattr(dtype, "_np", dtype).itemsize
    for n in shape:
        if n:
            nbytes *= n
    if nbytes > MAX_BYTES:
        what = "elements" if dtype is None else f"bytes of {dtype.name}"
        raise ValueError(
            f"{fname}: a result of shape {tuple(shape)} would hold {nbytes} {what} (the "
            f"product of its non-zero sizes{'' if dtype is None else ' times the item size'}),"
            f" more than 2**63 - 1, the most an array can index on any device; use a "
            f"smaller shape")
    return shape


def reduced_shape(shape, axes, keepdims: bool) -> tuple:
    """The shape of a reduction over `axes` (normalized) of an array of `shape`."""
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def check_int(value, fname: str, argname: str) -> int:
    """An integer argument (shape, axis, k, n, num, ...): anything operator.index accepts
    (Python ints, NumPy integers, 0-d integer arrays), returned as a Python int. Bools are
    refused (True is no count or axis), as are floats."""
    if type(value) is int:  # the common case: one test
        return value
    if not isinstance(value, bool):
        try:
            return int(operator.index(value))  # (NumPy bools have no __index__: refused)
        except TypeError:
            pass
    raise TypeError(f"{fname}: {argname} must be an integer (a Python int, or an object "
                    f"operator.index accepts such as a NumPy integer), got {value!r}")


def check_copy(copy, fname: str, allow_none: bool = True):
    """A copy= argument: exactly True, False or (where the function allows it) None. 0 and 1
    are refused although they compare equal to False and True."""
    if copy is True or copy is False or (copy is None and allow_none):
        return copy
    allowed = "True, False or None" if allow_none else "True or False"
    raise TypeError(f"{fname}: copy must be {allowed}, got {copy!r}")


def check_bool(value, fname: str, argname: str) -> bool:
    """A Python bool flag (keepdims, descending, stable, ...): ints and NumPy bools refused."""
    if not isinstance(value, bool):
        raise TypeError(f"{fname}: {argname} must be True or False, got {value!r}")
    return value


def check_shape(shape, fname: str) -> tuple:
    """A shape argument: an int or a tuple of non-negative ints."""
    if not isinstance(shape, tuple):
        if isinstance(shape, list):
            shape = tuple(shape)
        else:
            shape = (shape,)
    out = tuple(check_int(n, fname, "shape") for n in shape)
    if any(n < 0 for n in out):
        raise ValueError(f"{fname}: shape {out} has a negative dimension")
    return out


def normalize_axis(axis, ndim: int, fname: str, argname: str = "axis") -> int:
    axis = check_int(axis, fname, argname)
    if not -ndim <= axis < ndim:
        raise IndexError(
            f"{fname}: {argname}={axis} is out of range for an array of {ndim} dimension(s) "
            f"(valid: {-ndim} to {ndim - 1})" if ndim else f"{fname}: a 0-d array has no axes"
        )
    return axis % ndim


def normalize_axes(axes, ndim: int, fname: str, argname: str = "axis") -> tuple:
    """None (all axes), an int, or a tuple of unique ints."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, tuple):
        out = tuple(normalize_axis(a, ndim, fname, argname) for a in axes)
        if len(set(out)) != len(out):
            raise ValueError(f"{fname}: {argname}={axes} repeats an axis")
        return out
    return (normalize_axis(axes, ndim, fname, argname),)


# ---- validated plans ---------------------------------------------------------------------------
# A function's checks depend only on its arguments' dtypes, shapes and options; once they pass
# for one combination, that combination's outcome (axes, result dtype, ...) is kept here, so a
# repeat call costs one dictionary lookup instead of the checks. Only keys whose equality
# implies identical checks are kept: options that are None, or exactly an int, a bool, a str or
# one of our DTypes, or tuples of ints (True == 1 and hash alike, so the key holds
# option_type(value) beside each option: its type, for a tuple its items' types). A miss always runs
# the full checks; their errors are never cached. Bounded: a program with endless distinct
# shapes evicts the oldest half instead of growing.
PLANS: dict = {}
PLAN_LIMIT = 8192
_KEYABLE = (int, bool, type(None), DType, str)


def option_type(o):
    """What a plan's key holds beside an option: its type, and for a tuple the types of its
    items (0 == False and 1 == 1.0 hash alike: the plan of axis=(0, 1) must not answer for
    axis=(0, True) or (0, 1.0), which the checks refuse)."""
    t = type(o)
    return t if t is not tuple else tuple(map(type, o))


def int_tuple(o) -> bool:
    """Whether ``o`` is a tuple of Python ints only (no bools, NumPy integers or floats,
    which hash like ints): what a memo keyed by the tuple itself may hold."""
    return type(o) is tuple and all(type(v) is int for v in o)


def _keyable(o) -> bool:
    if type(o) is tuple:
        return int_tuple(o)
    return type(o) in _KEYABLE


_UNHASHABLE = object()


def planned(key, options, validate, *args):
    """validate(*args) for key, memoised when every option is keyable (see PLANS): None, an
    int, a bool, a str, a DType, or a tuple of ints (the key must hold option_type() of each). Hot callers look ``PLANS.get(key)`` up themselves and call this on a miss; passing
    the arguments (instead of a closure) spares making a function object on every call."""
    try:
        plan = PLANS.get(key)
    except TypeError:  # an unhashable option (a list where a tuple belongs): the checks say so,
        plan = _UNHASHABLE  # outside this handler (no chained "during handling" traceback)
    if plan is _UNHASHABLE:
        return validate(*args)
    if plan is not None:
        return plan
    plan = validate(*args)
    for o in options:
        if not _keyable(o):
            return plan
    if len(PLANS) >= PLAN_LIMIT:
        for k in list(PLANS)[:PLAN_LIMIT // 2]:
            del PLANS[k]
    PLANS[key] = plan
    return plan
