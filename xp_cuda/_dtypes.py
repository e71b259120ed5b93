"""The 13 dtypes of the 2023.12 standard, their categories, and the promotion rules.

Everything here is data derived from the spec pages "Data Types" and "Type Promotion Rules";
no other module decides a result dtype.
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _revisions

_pybool = bool  # the builtin, before the dtype of that name shadows it


class DType:
    """An opaque dtype object. Equal only to itself: never to a NumPy or CuPy dtype."""

    __slots__ = ("name", "kind", "bits", "_np")

    def __init__(self, name: str, kind: str, bits: int):
        self.name = name
        self.kind = kind  # "bool", "int", "uint", "float" or "complex"
        self.bits = bits
        self._np = np.dtype(name)

    def __repr__(self):
        return f"xp_cuda.{self.name}"

    __str__ = __repr__

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return hash(("xp_cuda.dtype", self.name))

    def __reduce__(self):  # pickling returns the singleton
        return (_by_name, (self.name,))

    @property
    def dtype(self) -> np.dtype:
        """Not in the Array API standard: the NumPy dtype of the same name, so that
        ``numpy.dtype(xp.int32)`` reads it (NumPy looks for a ``.dtype`` attribute). An export
        only: ``xp.int32 == numpy.int32`` stays False and no function takes a NumPy dtype."""
        return self._np


def _by_name(name):
    return _BY_NAME[name]


bool = DType("bool", "bool", 8)  # noqa: A001  (the standard's name)
int8 = DType("int8", "int", 8)
int16 = DType("int16", "int", 16)
int32 = DType("int32", "int", 32)
int64 = DType("int64", "int", 64)
uint8 = DType("uint8", "uint", 8)
uint16 = DType("uint16", "uint", 16)
uint32 = DType("uint32", "uint", 32)
uint64 = DType("uint64", "uint", 64)
float32 = DType("float32", "float", 32)
float64 = DType("float64", "float", 64)
complex64 = DType("complex64", "complex", 64)
complex128 = DType("complex128", "complex", 128)

ALL_DTYPES = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float32, float64, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d._np: d for d in ALL_DTYPES}
_BY_KIND_BITS = {(d.kind, d.bits): d for d in ALL_DTYPES}

# Spec "Data Types" -> "Data Type Categories", plus the kind names of isdtype.
_CATEGORY_KINDS = {
    "bool": {"bool"},
    "boolean": {"bool"},
    "signed integer": {"int"},
    "unsigned integer": {"uint"},
    "integral": {"int", "uint"},
    "integer": {"int", "uint"},
    "integer or boolean": {"bool", "int", "uint"},
    "real floating": {"float"},
    "real-valued floating-point": {"float"},
    "complex floating": {"complex"},
    "complex floating-point": {"complex"},
    "floating-point": {"float", "complex"},
    "real-valued": {"int", "uint", "float"},
    "numeric": {"int", "uint", "float", "complex"},
    "real-valued or boolean": {"bool", "int", "uint", "float"},
    "any": {"bool", "int", "uint", "float", "complex"},
}
CATEGORIES = {name: tuple(d for d in ALL_DTYPES if d.kind in kinds)
              for name, kinds in _CATEGORY_KINDS.items()}
ISDTYPE_KINDS = ("bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric")

DEFAULT_DTYPES = {"real floating": float64, "complex floating": complex128,
                  "integral": int64, "indexing": int64}


def in_category(dtype: DType, category: str) -> builtins.bool:  # (bool here is the dtype)
    return dtype.kind in _CATEGORY_KINDS[category]


def _promote(a: DType, b: DType):
    """The spec's promotion lattice from kinds and bit widths; None where it is undefined."""
    if a is b:
        return a
    ka, kb = a.kind, b.kind
    if ka == kb:
        return a if a.bits >= b.bits else b
    if {ka, kb} == {"int", "uint"}:
        s, u = (a, b) if ka == "int" else (b, a)
        bits = s.bits if s.bits > u.bits else 2 * u.bits
        return _BY_KIND_BITS.get(("int", bits))  # uint64 with any signed: undefined
    if {ka, kb} == {"float", "complex"}:
        f, c = (a, b) if ka == "float" else (b, a)
        return _BY_KIND_BITS[("complex", max(2 * f.bits, c.bits))]
    return None  # bool with numbers, integers with floating-point: no cross-kind promotion


PROMOTION_TABLE = {(a, b): r for a in ALL_DTYPES for b in ALL_DTYPES
                   if (r := _promote(a, b)) is not None}


def promote(a: DType, b: DType) -> DType:
    try:
        return PROMOTION_TABLE[a, b]
    except KeyError:
        raise TypeError(
            f"{a} and {b} cannot be promoted under the Array API standard "
            f"({_revisions.api_version()} defines no "
            f"promotion between these kinds); convert one explicitly with xp.astype"
        ) from None


def real_dtype(dtype: DType) -> DType:
    """complex64 -> float32, complex128 -> float64; real dtypes map to themselves."""
    return _BY_KIND_BITS[("float", dtype.bits // 2)] if dtype.kind == "complex" else dtype


def complex_dtype(dtype: DType) -> DType:
    return _BY_KIND_BITS[("complex", dtype.bits * 2)] if dtype.kind == "float" else dtype


def from_numpy_dtype(npdtype, what: str = "array") -> DType:
    try:
        return _BY_NUMPY[np.dtype(npdtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"the {what} has dtype {npdtype}, which is not one of the 13 Array API dtypes "
            f"({', '.join(d.name for d in ALL_DTYPES)}); convert it first"
        ) from None


# Python scalars (spec "Mixing arrays with Python scalars", 2023.12): which dtype kinds each
# Python type may meet. Everything else is a TypeError.
_SCALAR_KINDS = {
    "bool": {"bool"},
    "int": {"int", "uint", "float", "complex"},
    "float": {"float", "complex"},
    "complex": {"complex"},
}


_EXACT_SCALAR_TYPES = {_pybool: "bool", int: "int", float: "float", complex: "complex"}


def scalar_type_name(value):
    """'bool', 'int', 'float', 'complex' for Python scalars (bool before int), else None."""
    kind = _EXACT_SCALAR_TYPES.get(type(value))  # the builtins themselves: one lookup
    if kind is not None:
        return kind
    if isinstance(value, _pybool):
        return "bool"
    for kind, t in (("int", int), ("float", float), ("complex", complex)):
        if isinstance(value, t) and not isinstance(value, np.generic):
            return kind
    return None


def check_scalar(value, dtype: DType, where: str):
    """Validate a Python scalar against an array dtype; return it as a NumPy scalar of dtype."""
    kind = scalar_type_name(value)
    if kind is None:
        raise TypeError(f"{where}: expected an array or a Python scalar, got {type(value).__name__}")
    if dtype.kind not in _SCALAR_KINDS[kind]:
        allowed = {"bool": "bool arrays", "int": "integer and floating-point arrays",
                   "float": "floating-point arrays", "complex": "complex floating-point arrays"}
        what = (f"{where}: a Python {kind} cannot be combined with a {dtype} array under the "
                f"Array API standard (a Python {kind} only mixes with {allowed[kind]}); use an "
                f"array of an explicit dtype, e.g. xp.asarray(value, dtype=...)")
        if kind == "complex" and dtype.kind == "float" and \
                not _revisions.allows(_COMPLEX_BESIDE_REAL):
            what += (f" (the {_revisions.RULES[_COMPLEX_BESIDE_REAL]} revision makes it the "
                     f"complex dtype; xp_cuda.set_api_version puts a revision in force)")
        raise TypeError(what)
    if kind == "int" and dtype.kind in ("int", "uint"):
        lo, hi = _INT_RANGES[dtype]
        if not lo <= value <= hi:
            raise OverflowError(
                f"{where}: Python int {value} is out of range for {dtype} "
                f"[{lo}, {hi}]; use a wider dtype"
            )
    elif kind == "int" and dtype.kind in ("float", "complex"):
        try:
            float(value)
        except OverflowError:
            raise OverflowError(f"{where}: Python int {value} is too large for {dtype}") from None
    return dtype._np.type(value)


_INT_RANGES = {d: (int(np.iinfo(d._np).min), int(np.iinfo(d._np).max))
               for d in ALL_DTYPES if d.kind in ("int", "uint")}  # np.iinfo costs ~1 us a call


def clip_scalar(value, dtype: DType, argname: str):
    """A Python scalar bound of ``clip``. An int bound beyond an integer dtype's range clamps
    nothing, so it is replaced by the range's end (exact), instead of overflowing."""
    if isinstance(value, int) and not isinstance(value, _pybool) and dtype.kind in ("int", "uint"):
        info = np.iinfo(dtype._np)
        value = info.min if value < info.min else info.max if value > info.max else value
    return check_scalar(value, dtype, f"clip: {argname}")


_FLOAT_SAFE = 2**1000  # an int of at most this size converts to a float without overflow
# (Python type, dtype kind) pairs whose scalar check is the types alone (no range to test)
_NO_RANGE = {(float, "float"), (float, "complex"), (complex, "complex"), (_pybool, "bool")}


# TypedScalars of nonzero Python floats and ints already made, by (value, type, dtype): a
# program's constants recur (x * 2.5 in a loop), and making one costs ~0.5 us of an 8-element
# operation's host time. Only nonzero ones: equal nonzero floats have equal bits, while 0.0
# and -0.0 are equal keys of different values (and complex parts have signed zeros too).
# Read-only objects; bounded (cleared when full: constants are user data).
_TYPED: dict = {}
_TYPED_get = _TYPED.get
_TYPED_MAX = 512


def typed_scalar(value, dtype: DType, where: str) -> "TypedScalar":
    """check_scalar's TypedScalar, with the common cases answered first: a float or complex
    for a floating dtype, a bool for bool, an int in range of an integer dtype, an int of
    less than 2**1000 for a floating dtype."""
    t = type(value)
    if (t is float or t is int) and value:
        key = (value, t, dtype)
        out = _TYPED_get(key)
        if out is not None:
            return out
    else:
        key = None
    kind = dtype.kind
    if (t, kind) in _NO_RANGE or t is int and (
            _INT_RANGES[dtype][0] <= value <= _INT_RANGES[dtype][1] if kind in ("int", "uint")
            else kind != "bool" and -_FLOAT_SAFE <= value <= _FLOAT_SAFE):
        out = _new_object(TypedScalar)
        out.value = dtype._np.type(value)
        out.dtype = dtype
        if key is not None:
            if len(_TYPED) >= _TYPED_MAX:
                _TYPED.clear()
            _TYPED[key] = out
        return out
    return TypedScalar(check_scalar(value, dtype, where), dtype)


_new_object = object.__new__

_COMPLEX_BESIDE_REAL = "complex python scalar promotes real floating array"


def wider_scalar_dtype(value, dtype: DType):
    """The dtype a Python scalar that ``typed_scalar`` refused takes beside an array of
    ``dtype`` by a later revision's rule, or None (the refusal stands). 2024.12: a Python
    complex beside a real floating array is a 0-d array of the complex dtype of that
    precision (spec "Mixing arrays with Python scalars"). Called on the error path only."""
    if dtype.kind == "float" and scalar_type_name(value) == "complex" and \
            _revisions.allows(_COMPLEX_BESIDE_REAL):
        return complex_dtype(dtype)
    return None


def scalar_dtype(value, dtype: DType, where: str) -> DType:
    """The dtype of the 0-d array a Python scalar stands for beside an array of ``dtype``
    (the operators' rules, typed_scalar's errors), with the revision's wider rules."""
    try:
        typed_scalar(value, dtype, where)
    except TypeError:
        wide = wider_scalar_dtype(value, dtype)
        if wide is None:
            raise
        return wide
    return dtype


class TypedScalar:
    """A Python scalar operand of an operator, already checked and typed by the scalar rules
    (``value`` is a NumPy scalar of ``dtype``)."""

    __slots__ = ("value", "dtype")
    shape = ()
    device = None

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = dtype
