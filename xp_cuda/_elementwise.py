"""The elementwise functions (2023.12's 65 and those later revisions added), driven by tables.

Each row is read off the function's page in the spec: arity, the dtype category its inputs
must have, how the result dtype follows from the promoted input dtype, and the backend ufunc;
a row of a later revision then names that revision (its function shows only under it).
The same path serves the array operators (which also admit typed Python scalars).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _memory, _revisions
from ._array import Array, _backend_of, _wrap, check_array
from ._backends import FAST as _FAST
from ._backends._base import FAST_ANY_LAYOUT as _FAST_ANY
from ._backends._base import KEPT as _KEPT
from ._dtypes import TypedScalar, in_category, promote, real_dtype, scalar_type_name
from ._dtypes import bool as _bool
from ._revisions import since
from ._validation import PLANS as _PLANS
from ._validation import article, broadcast_shapes, common_device, planned

# Result rules: "same" = the promoted input dtype; "bool"; "real" = the real dtype of the same
# precision (abs and real/imag of complex input).
# name: (arity, input category, result rule, backend function)
ELEMENTWISE = {
    "abs": (1, "numeric", "real", "absolute"),
    "acos": (1, "floating-point", "same", "arccos"),
    "acosh": (1, "floating-point", "same", "arccosh"),
    "add": (2, "numeric", "same", "add"),
    "asin": (1, "floating-point", "same", "arcsin"),
    "asinh": (1, "floating-point", "same", "arcsinh"),
    "atan": (1, "floating-point", "same", "arctan"),
    "atan2": (2, "real-valued floating-point", "same", "arctan2"),
    "atanh": (1, "floating-point", "same", "arctanh"),
    "bitwise_and": (2, "integer or boolean", "same", "bitwise_and"),
    "bitwise_left_shift": (2, "integer", "same", "left_shift"),
    "bitwise_invert": (1, "integer or boolean", "same", "invert"),
    "bitwise_or": (2, "integer or boolean", "same", "bitwise_or"),
    "bitwise_right_shift": (2, "integer", "same", "right_shift"),
    "bitwise_xor": (2, "integer or boolean", "same", "bitwise_xor"),
    "ceil": (1, "real-valued", "same", "ceil"),
    "conj": (1, "complex floating-point", "same", "conjugate"),
    "copysign": (2, "real-valued floating-point", "same", "copysign"),
    "cos": (1, "floating-point", "same", "cos"),
    "cosh": (1, "floating-point", "same", "cosh"),
    "divide": (2, "floating-point", "same", "divide"),
    "equal": (2, "any", "bool", "equal"),
    "exp": (1, "floating-point", "same", "exp"),
    "expm1": (1, "floating-point", "same", "expm1"),
    "floor": (1, "real-valued", "same", "floor"),
    "floor_divide": (2, "real-valued", "same", "floor_divide"),
    "greater": (2, "real-valued", "bool", "greater"),
    "greater_equal": (2, "real-valued", "bool", "greater_equal"),
    "hypot": (2, "real-valued floating-point", "same", "hypot"),
    "imag": (1, "complex floating-point", "real", "imag"),
    "isfinite": (1, "numeric", "bool", "isfinite"),
    "isinf": (1, "numeric", "bool", "isinf"),
    "isnan": (1, "numeric", "bool", "isnan"),
    "less": (2, "real-valued", "bool", "less"),
    "less_equal": (2, "real-valued", "bool", "less_equal"),
    "log": (1, "floating-point", "same", "log"),
    "log1p": (1, "floating-point", "same", "log1p"),
    "log2": (1, "floating-point", "same", "log2"),
    "log10": (1, "floating-point", "same", "log10"),
    "logaddexp": (2, "real-valued floating-point", "same", "logaddexp"),
    "logical_and": (2, "boolean", "bool", "logical_and"),
    "logical_not": (1, "boolean", "bool", "logical_not"),
    "logical_or": (2, "boolean", "bool", "logical_or"),
    "logical_xor": (2, "boolean", "bool", "logical_xor"),
    "maximum": (2, "real-valued", "same", "maximum"),
    "minimum": (2, "real-valued", "same", "minimum"),
    "multiply": (2, "numeric", "same", "multiply"),
    "negative": (1, "numeric", "same", "negative"),
    "not_equal": (2, "any", "bool", "not_equal"),
    "positive": (1, "numeric", "same", "positive"),
    "pow": (2, "numeric", "same", "power"),
    "real": (1, "complex floating-point", "real", "real"),
    "remainder": (2, "real-valued", "same", "remainder"),
    "round": (1, "numeric", "same", "round"),
    "sign": (1, "numeric", "same", "sign"),
    "signbit": (1, "real-valued floating-point", "bool", "signbit"),
    "sin": (1, "floating-point", "same", "sin"),
    "sinh": (1, "floating-point", "same", "sinh"),
    "square": (1, "numeric", "same", "square"),
    "sqrt": (1, "floating-point", "same", "sqrt"),
    "subtract": (2, "numeric", "same", "subtract"),
    "tan": (1, "floating-point", "same", "tan"),
    "tanh": (1, "floating-point", "same", "tanh"),
    "trunc": (1, "real-valued", "same", "trunc"),
}
# The rows later revisions added: the same fields, then the first revision with the function.
# ELEMENTWISE stays 2023.12's table (what the default revision's tests and tools enumerate);
# ROWS is every revision's, which the functions below read.
LATER = {
    "nextafter": (2, "real-valued floating-point", "same", "nextafter", "2024.12"),
    "reciprocal": (1, "floating-point", "same", "reciprocal", "2024.12"),
}
ROWS = {**ELEMENTWISE, **{name: row[:4] for name, row in LATER.items()}}

def result_dtype(name: str, dtypes):
    arity, category, rule, _ = ROWS[name]
    for i, d in enumerate(dtypes):
        if not in_category(d, category):
            arg = "x" if arity == 1 else f"x{i + 1}"
            if name in _WIDER_INPUT and _revisions.allows(_WIDER_INPUT[name][0]):
                category = _WIDER_INPUT[name][2]
            raise TypeError(
                f"{name}: {arg} has dtype {d}, but {name} requires {article(category)} {category} dtype "
                f"(Array API {_revisions.api_version()}); convert it with xp.astype if that is what you mean"
            )
    try:
        dt = dtypes[0] if arity == 1 else promote(dtypes[0], dtypes[1])
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None
    if rule == "bool":
        return dt, _bool
    if rule == "real":
        return dt, real_dtype(dt)
    return dt, dt


def apply(name: str, operands) -> Array:
    """Run elementwise function `name` on Arrays (and TypedScalars from operators)."""
    if len(operands) == 2:
        return apply2(name, operands[0], operands[1])
    x1 = operands[0]
    if len(operands) == 1 and type(x1) is Array:  # not a fusion Tracer
        d1 = x1._data
        key = (name, d1.dtype)
        entry = _FAST.get(key)
        if entry is not None:
            plan, dev, ctx = entry
            if (x1._device is dev or x1._device == dev) and d1._c_contiguous:
                if ctx is None:
                    return Array._new(plan.c1(d1, d1.shape), dev)
                with ctx:
                    return Array._new(plan.c1(d1, d1.shape), dev)
        entry = _FAST_ANY.get(key)
        if entry is not None and x1._device is entry[1]:
            out = _new_object(Array)
            out._data = entry[0](d1)
            out._device = entry[1]
            return out
        # a strided operand: the launch kept under _apply_checked's plan key
        kept = _KEPT_get((name, d1.dtype, d1.shape))
        if kept is not None:
            r = kept((d1,), x1._device)
            if r is not None:
                out = _new_object(Array)
                out._data = r
                out._device = x1._device
                return out
    return _apply_checked(name, operands)


def apply2(name: str, x1, x2) -> Array:
    """apply for two operands. Hot paths: a launch plan cached per (function, dtypes); it
    exists only once the full checks of _apply_checked have passed for these dtypes on that
    device, so a hit needs only the layout and device checks (none of the layout for a
    backend that takes any strides: _FAST_ANY). Operators call this directly: every Python
    call saved is ~0.1 us of an 8-element operation's host time."""
    if type(x1) is Array:
        d1 = x1._data
        if type(x2) is Array:
            d2 = x2._data
            shape = d1.shape
            if shape == d2.shape:  # both tables serve equal shapes only (no broadcasting)
                key = (name, d1.dtype, d2.dtype)
                entry = _FAST.get(key)
                if entry is not None:
                    plan, dev, ctx = entry
                    if (x1._device is dev or x1._device == dev) and \
                            (x2._device is dev or x2._device == dev) and \
                            d1._c_contiguous and d2._c_contiguous:
                        if ctx is None:
                            out = _new_object(Array)
                            out._data = plan.cc(d1, d2, shape)
                            out._device = dev
                            return out
                        with ctx:
                            return Array._new(plan.cc(d1, d2, shape), dev)
                entry = _FAST_ANY.get(key)
                if entry is not None:
                    dev = entry[1]
                    if x1._device is dev and x2._device is dev:
                        out = _new_object(Array)
                        out._data = entry[0](d1, d2)
                        out._device = dev
                        return out
            # strided or broadcast operands: the launch kept under _apply_checked's plan key
            kept = _KEPT_get((name, d1.dtype, shape, d2.dtype, d2.shape))
            if kept is not None and x2._device is x1._device:
                r = kept((d1, d2), x1._device)
                if r is not None:
                    out = _new_object(Array)
                    out._data = r
                    out._device = x1._device
                    return out
        elif type(x2) is TypedScalar:
            key = (name, d1.dtype, "s")
            entry = _FAST.get(key)
            if entry is not None:
                plan, dev, ctx = entry
                if (x1._device is dev or x1._device == dev) and d1._c_contiguous:
                    if ctx is None:
                        return Array._new(plan.cs(d1, x2.value, d1.shape), dev)
                    with ctx:
                        return Array._new(plan.cs(d1, x2.value, d1.shape), dev)
            entry = _FAST_ANY.get(key)
            if entry is not None and x1._device is entry[1]:
                out = _new_object(Array)
                out._data = entry[0](d1, x2.value)
                out._device = entry[1]
                return out
            # a strided operand: the launch kept under _apply_checked's plan key
            kept = _KEPT_get((name, d1.dtype, d1.shape, x2.dtype._np, "s"))
            if kept is not None:
                r = kept(d1, x2.value, x1._device)
                if r is not None:
                    out = _new_object(Array)
                    out._data = r
                    out._device = x1._device
                    return out
    elif type(x1) is TypedScalar and type(x2) is Array:  # a reflected operator: 1.0 / x
        d2 = x2._data
        key = (name, "s", d2.dtype)
        entry = _FAST.get(key)
        if entry is not None:
            plan, dev, ctx = entry
            if (x2._device is dev or x2._device == dev) and d2._c_contiguous:
                if ctx is None:
                    return Array._new(plan.sc(x1.value, d2, d2.shape), dev)
                with ctx:
                    return Array._new(plan.sc(x1.value, d2, d2.shape), dev)
        entry = _FAST_ANY.get(key)
        if entry is not None and x2._device is entry[1]:
            out = _new_object(Array)
            out._data = entry[0](x1.value, d2)
            out._device = entry[1]
            return out
        kept = _KEPT_get((name, x1.dtype._np, "s", d2.dtype, d2.shape))
        if kept is not None:
            r = kept(d2, x1.value, x2._device)
            if r is not None:
                out = _new_object(Array)
                out._data = r
                out._device = x2._device
                return out
    return _apply_checked(name, (x1, x2))


_new_object = object.__new__
_KEPT_get = _KEPT.get


def _apply_checked(name: str, operands) -> Array:
    """Validate, take the result dtype and shape from the tables, and make one backend call.
    The cuda backend registers the validated plan in _FAST for the hot paths above."""
    x1 = operands[0]
    key: tuple  # (function, dtypes and shapes: one operand's, or two)
    if len(operands) == 1:
        d1 = x1._data
        key = (name, d1.dtype, d1.shape)
        plan = _PLANS.get(key)
        if plan is None:
            if name in _WIDER_INPUT:  # (a later revision's input: never planned, see there)
                out = _wider_input(name, x1)
                if out is not None:
                    return out
            plan = planned(key, (), lambda: _validate(name, operands))
        in_dtype, out_dtype, shape, fn = plan
        out = x1._b.elementwise(name, fn, (d1,), in_dtype, out_dtype, shape, key)
        return _wrap(out, x1._device)
    # Two operands: an array and a TypedScalar of an operator, or two arrays. The checks
    # depend only on each operand's dtype and shape (a scalar's value was checked when it was
    # typed, so it counts by its dtype alone): memoised under those.
    x2 = operands[1]
    if isinstance(x1, TypedScalar):  # (the tracer's ParamScalar too)
        arr, n1, n2 = x2, x1, x2._data
        key = (name, x1.dtype._np, "s", n2.dtype, n2.shape)
    elif isinstance(x2, TypedScalar):
        arr, n1, n2 = x1, x1._data, x2
        key = (name, n1.dtype, n1.shape, x2.dtype._np, "s")
    else:
        arr, n1, n2 = None, x1._data, x2._data
        key = (name, n1.dtype, n1.shape, n2.dtype, n2.shape)
    plan = _PLANS.get(key)
    if plan is None:
        plan = planned(key, (), lambda: _validate(name, operands))
    in_dtype, out_dtype, shape, fn = plan
    if arr is not None:
        device, b = arr._device, arr._b
    else:
        device = x1._device
        if x2._device is not device:
            device = common_device(operands, name)
        # one backend for two arrays of one class on one device; else the higher-ranked one
        b = x1._b if type(x1) is type(x2) else _backend_of(operands)
    return _wrap(b.elementwise(name, fn, (n1, n2), in_dtype, out_dtype, shape, key), device)


def _validate(name, operands):
    """The checks of an elementwise call: (promoted dtype, result dtype, shape, backend fn)."""
    in_out = result_dtype(name, [o.dtype for o in operands])
    arrays = [o for o in operands if isinstance(o, Array)]
    return in_out + (broadcast_shapes([a.shape for a in arrays], name, in_out[1]),
                     ROWS[name][3])


# Unary functions whose inputs a later revision widened: name -> (rule, the category the rule
# adds, the whole category it then takes). 2024.12: conj and real of a real-valued array are the
# array itself (a copy: the spec leaves sharing memory open). The kernels keep the table's
# category: these inputs never reach them, and never get a plan (a plan would outlive a
# change back to 2023.12).
_WIDER_INPUT = {
    "conj": ("conj and real accept real input", "real-valued", "numeric"),
    "real": ("conj and real accept real input", "real-valued", "numeric"),
}


def _wider_input(name: str, x):
    """conj/real of an input a later revision admits: a copy of x; None for any other input
    (the table's checks then run and name the error)."""
    rule, category, _ = _WIDER_INPUT[name]
    if in_category(x.dtype, category):
        if _revisions.allows(rule):
            return _wrap(x._b.copy(x._data), x._device)
        raise TypeError(_revisions.later(rule, f"{name} of a {x.dtype} array"))
    return None


_SCALARS = "python scalars in elementwise functions"


def _with_scalar(name: str, x1, x2) -> Array:
    """A binary function called with other than two arrays. From 2024.12 a Python scalar
    beside an array is typed by the operators' rules (the array's dtype; a complex beside a
    real floating array: the complex dtype); two scalars, or anything else, is a TypeError."""
    if _revisions.allows(_SCALARS):
        s1, s2 = scalar_type_name(x1), scalar_type_name(x2)
        if s1 is not None and s2 is not None:
            raise TypeError(f"{name}: x1 and x2 are both Python scalars ({s1} and {s2}); at "
                            f"least one must be an array")
        if s2 is not None and isinstance(x1, Array):
            return apply2(name, x1, x1._operand(x2, name))
        if s1 is not None and isinstance(x2, Array):
            return apply2(name, x2._operand(x1, name), x2)
    else:
        for k, (s, other) in enumerate(((x1, x2), (x2, x1)), 1):
            if scalar_type_name(s) is not None and isinstance(other, Array):
                raise TypeError(_revisions.later(_SCALARS, f"{name}: x{k} is a Python "
                                                           f"{scalar_type_name(s)}"))
    check_array(x1, name, "x1")
    check_array(x2, name, "x2")
    raise AssertionError("unreachable: one operand is not an array")


_ANNOTATIONS = {1: {"x": "Array", "return": "Array"},
                2: {"x1": "Array | PyScalar", "x2": "Array | PyScalar", "return": "Array"}}


def _make(name: str):
    # The out-of-memory guard (xp_cuda._memory) inline: a try costs nothing while nothing
    # fails; a wrapper around f would cost a call on every one.
    arity = ROWS[name][0]
    if arity == 1:
        def f(x, /):
            try:
                return apply(name, (check_array(x, name, "x"),))
            except _memory.errors() as e:
                return _memory.recover(e, f, (x,), None, name)
    else:
        def f(x1, x2, /):  # type: ignore[misc]  # one or two operands, by the row
            try:
                if isinstance(x1, Array) and isinstance(x2, Array):  # the common case, inline
                    return apply2(name, x1, x2)
                return _with_scalar(name, x1, x2)
            except _memory.errors() as e:
                return _memory.recover(e, f, (x1, x2), None, name)
    f.__xp_guarded__ = True  # type: ignore[attr-defined]
    f.__annotations__ = _ANNOTATIONS[arity]  # as declared under TYPE_CHECKING below
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Array API 2023.12 ``{name}``: elementwise, inputs of {ROWS[name][1]} dtype."
    return f


for _name in ROWS:
    globals()[_name] = _make(_name)
for _name, _row in LATER.items():  # shown only under the revision that added it
    _f = since(_row[4])(globals()[_name])
    _f.__doc__ = f"Array API {_row[4]} ``{_name}``: elementwise, inputs of {_row[1]} dtype."
del _name, _row, _f


if TYPE_CHECKING:
    # The functions _make installs above, as type checkers see them: one declaration a row of
    # ROWS (tests/test_types.py keeps the two equal). A binary function takes a Python scalar
    # on either side (the 2024.12 rule; under 2023.12 that raises at run time).
    from ._typing import PyScalar
    def abs(x: Array, /) -> Array: ...
    def acos(x: Array, /) -> Array: ...
    def acosh(x: Array, /) -> Array: ...
    def add(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def asin(x: Array, /) -> Array: ...
    def asinh(x: Array, /) -> Array: ...
    def atan(x: Array, /) -> Array: ...
    def atan2(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def atanh(x: Array, /) -> Array: ...
    def bitwise_and(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def bitwise_left_shift(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def bitwise_invert(x: Array, /) -> Array: ...
    def bitwise_or(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def bitwise_right_shift(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def bitwise_xor(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def ceil(x: Array, /) -> Array: ...
    def conj(x: Array, /) -> Array: ...
    def copysign(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def cos(x: Array, /) -> Array: ...
    def cosh(x: Array, /) -> Array: ...
    def divide(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def equal(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def exp(x: Array, /) -> Array: ...
    def expm1(x: Array, /) -> Array: ...
    def floor(x: Array, /) -> Array: ...
    def floor_divide(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def greater(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def greater_equal(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def hypot(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def imag(x: Array, /) -> Array: ...
    def isfinite(x: Array, /) -> Array: ...
    def isinf(x: Array, /) -> Array: ...
    def isnan(x: Array, /) -> Array: ...
    def less(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def less_equal(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def log(x: Array, /) -> Array: ...
    def log1p(x: Array, /) -> Array: ...
    def log2(x: Array, /) -> Array: ...
    def log10(x: Array, /) -> Array: ...
    def logaddexp(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def logical_and(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def logical_not(x: Array, /) -> Array: ...
    def logical_or(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def logical_xor(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def maximum(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def minimum(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def multiply(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def negative(x: Array, /) -> Array: ...
    def not_equal(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def positive(x: Array, /) -> Array: ...
    def pow(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def real(x: Array, /) -> Array: ...
    def remainder(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def round(x: Array, /) -> Array: ...
    def sign(x: Array, /) -> Array: ...
    def signbit(x: Array, /) -> Array: ...
    def sin(x: Array, /) -> Array: ...
    def sinh(x: Array, /) -> Array: ...
    def square(x: Array, /) -> Array: ...
    def sqrt(x: Array, /) -> Array: ...
    def subtract(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def tan(x: Array, /) -> Array: ...
    def tanh(x: Array, /) -> Array: ...
    def trunc(x: Array, /) -> Array: ...
    def nextafter(x1: Array | PyScalar, x2: Array | PyScalar, /) -> Array: ...
    def reciprocal(x: Array, /) -> Array: ...


def clip(x: Array, /, min: Array | int | float | None = None,
         max: Array | int | float | None = None) -> Array:
    """Array API 2023.12 ``clip``: clamp x to [min, max]; the result keeps x's dtype."""
    check_array(x, "clip", "x")
    if not in_category(x.dtype, "real-valued"):
        raise TypeError(f"clip: x has dtype {x.dtype}, but clip requires a real-valued dtype")
    bounds: list = []
    for argname, v in (("min", min), ("max", max)):
        if v is None:
            bounds.append(None)
        elif isinstance(v, Array):
            if not in_category(v.dtype, "real-valued"):
                raise TypeError(f"clip: {argname} has dtype {v.dtype}; it must be real-valued")
            if (v.dtype.kind == "float") != (x.dtype.kind == "float"):
                raise TypeError(f"clip: {argname} ({v.dtype}) and x ({x.dtype}) are of "
                                f"different kinds; convert {argname} with xp.astype")
            common_device([x, v], "clip")
            bounds.append(v._data)
        else:
            # the backend types a scalar bound (the tracer keeps a fused function's scalar
            # argument as a kernel parameter, checked with its value at trace time)
            bounds.append(x._b.clip_bound(v, x.dtype, argname))
    arrays = [x] + [v for v in (min, max) if isinstance(v, Array)]
    shape = broadcast_shapes([a.shape for a in arrays], "clip")
    lo, hi = bounds
    return _wrap(_backend_of(arrays).clip(x._data, lo, hi, x.dtype, shape), x.device)


if TYPE_CHECKING:  # the same names, literally (a type checker reads no table)
    __all__ = ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
               "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or",
               "bitwise_right_shift", "bitwise_xor", "ceil", "conj", "copysign", "cos",
               "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide",
               "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
               "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp",
               "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
               "minimum", "multiply", "negative", "not_equal", "positive", "pow", "real",
               "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt",
               "subtract", "tan", "tanh", "trunc", "nextafter", "reciprocal", "clip"]
else:
    __all__ = list(ROWS) + ["clip"]


# ---- the array operators: the same table and path as the functions -----------------------
# Binary operators: (dunder stem, elementwise function, symbol). Comparisons reflect to their
# mirrored function, which Python handles by itself; the rest get __r*__ and __i*__ variants.
_BINARY_OPERATORS = (
    ("add", "add", "+"), ("sub", "subtract", "-"), ("mul", "multiply", "*"),
    ("truediv", "divide", "/"), ("floordiv", "floor_divide", "//"), ("mod", "remainder", "%"),
    ("pow", "pow", "**"), ("and", "bitwise_and", "&"), ("or", "bitwise_or", "|"),
    ("xor", "bitwise_xor", "^"), ("lshift", "bitwise_left_shift", "<<"),
    ("rshift", "bitwise_right_shift", ">>"),
)
_COMPARISONS = (("lt", "less", "<"), ("le", "less_equal", "<="), ("gt", "greater", ">"),
                ("ge", "greater_equal", ">="), ("eq", "equal", "=="), ("ne", "not_equal", "!="))
_UNARY_OPERATORS = (("abs", "abs"), ("neg", "negative"), ("pos", "positive"),
                    ("invert", "bitwise_invert"))


def _binary(self, other, fname, op, reflected=False):
    if type(other) is Array:  # the common case first: no operand conversion to do
        return apply2(fname, other, self) if reflected else apply2(fname, self, other)
    o = self._operand(other, op)
    if o is NotImplemented:
        return o
    return apply2(fname, o, self) if reflected else apply2(fname, self, o)


def _inplace(self, other, fname, op):
    o = self._operand(other, op)
    if o is NotImplemented:
        return o
    res = apply(fname, (self, o))
    if res.dtype is not self.dtype:
        raise TypeError(f"{op}: the result dtype {res.dtype} differs from the array's dtype "
                        f"{self.dtype}; in-place operations cannot change the dtype")
    if res.shape != self.shape:
        raise ValueError(f"{op}: the result shape {res.shape} differs from the array's "
                         f"shape {self.shape}; in-place operations cannot change the shape")
    _backend_of([self, res]).assign(self._data, res._data)
    return self


def _operator_doc(fname, op, reflected, inplace) -> str:
    """The docstring of an operator method, from its row of the operator tables."""
    if inplace:
        return (f"Array API 2023.12 array object, in-place operator ``x {op} y``: "
                f"``x[...] = {fname}(x, y)``, where the result keeps x's dtype and shape "
                f"(else a TypeError or ValueError).")
    if reflected:
        return (f"Array API 2023.12 array object, reflected operator ``y {op} x`` for a Python "
                f"scalar y: ``{fname}(y, x)``, y typed by x's dtype.")
    return (f"Array API 2023.12 array object, operator ``x {op} y``: ``{fname}(x, y)``; y an "
            f"array or a Python scalar (typed by x's dtype).")


def _operator(fname, op, reflected=False, inplace=False):
    # (the out-of-memory guard inline, as in _make)
    if inplace:
        def method(self, other):
            try:
                return self._inplace(other, fname, op + "=")
            except _memory.errors() as e:
                return _memory.recover(e, method, (self, other), None, op + "=")
    elif reflected:
        def method(self, other):
            try:
                return _binary(self, other, fname, op, True)
            except _memory.errors() as e:
                return _memory.recover(e, method, (self, other), None, op)
    else:
        def method(self, other):
            try:
                if type(other) is Array:  # the common case without a Python layer between
                    return apply2(fname, self, other)
                return _binary(self, other, fname, op)
            except _memory.errors() as e:
                return _memory.recover(e, method, (self, other), None, op)
    method.__doc__ = _operator_doc(fname, op, reflected, inplace)
    method.__annotations__ = {"other": "Array | PyScalar", "return": "Array"}
    return method


def _unary(fname):
    def method(self):
        try:
            return apply(fname, (self,))
        except _memory.errors() as e:
            return _memory.recover(e, method, (self,), None, fname)
    method.__doc__ = f"Array API 2023.12 array object, unary operator: ``{fname}(x)``."
    method.__annotations__ = {"return": "Array"}
    return method


def _install_operators():
    """Array's operators, installed by the module that owns their table (so _array never
    imports this one)."""
    Array._inplace = _inplace
    for stem, fname, op in _BINARY_OPERATORS:
        setattr(Array, f"__{stem}__", _operator(fname, op))
        setattr(Array, f"__r{stem}__", _operator(fname, op, reflected=True))
        setattr(Array, f"__i{stem}__", _operator(fname, op, inplace=True))
    for stem, fname, op in _COMPARISONS:
        setattr(Array, f"__{stem}__", _operator(fname, op))
    for stem, fname in _UNARY_OPERATORS:
        setattr(Array, f"__{stem}__", _unary(fname))


_install_operators()
