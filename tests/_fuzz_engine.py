"""The differential fuzzer's machinery: argument recipes built alike for any namespace, one
call run on two sides, outcomes compared, and the leak rule.

A *recipe* describes an argument without naming a library (an array is its NumPy values, its
dtype name and the layout steps that make it strided, permuted, flipped or broadcast), so the
same call runs on xp_cuda (on one device) and on array_api_strict, or on xp_cuda's cuda:0 and
its cpu. ``run_side`` turns recipes into arguments of one side, calls, and returns an
``Outcome``: the result as plain NumPy data, or the exception. ``compare`` says where two
outcomes differ (None when they agree); ``leak`` says whether an exception of xp_cuda breaks
the error rule (see ALLOWED).
"""
from __future__ import annotations

import math
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

import xp_cuda as xp
from xp_cuda import _revisions
from xp_cuda._devices import CPU

import array_api_strict as strict

DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float32", "float64", "complex64", "complex128")

# ---- the leak rule ------------------------------------------------------------------------------
# The exception types a user may get from a public function with a wrong input, and why:
# - TypeError, ValueError, IndexError: the standard's own words for wrong types, values and
#   indices (its pages say "should raise" these), and what _validation raises;
# - MemoryError: a result that does not fit (the memory helper's part of #18);
# - OverflowError: a Python int outside a dtype's range (xp_cuda's check_scalar; Python's own
#   int conversions say it so) and what the spec asks of __int__ of an infinity;
# - NotImplementedError: a documented gap (none is expected; kept so a stated gap is no leak);
# - AttributeError: only for a name the namespace lacks under the revision in force.
# Each must be of xp_cuda's or Python's own classes (NumPy's AxisError or LinAlgError subclass
# ValueError/IndexError, but a user must never see them) and carry no chained internal error.
ALLOWED = (TypeError, ValueError, IndexError, MemoryError, OverflowError, NotImplementedError)
# Words that betray a library underneath in a message meant for xp_cuda's user. (A message may
# name the *user's* foreign type, "a numpy.ndarray is not an xp_cuda array": that is no leak.)
INTERNAL_WORDS = ("ufunc", "numpy._", "numpy.core", "numpy.linalg", "cupy", "_ArrayMemoryError",
                  "CUDA_ERROR", "nvrtc", "NVRTC", "operands could not be broadcast",
                  "casting rule", "LinAlgError", "Traceback",
                  "__array_function__", "__array_ufunc__", "dispatcher", "dtype('",
                  "zero-size array to reduction", "cannot reshape array of size",
                  "only integers, slices", "setting an array element", "did not contain a loop",
                  "Python integer", "AxisError", "object arrays", "array of dimension",
                  "is not supported for the", "Cannot cast")


def leak(exc: BaseException, fname: str) -> str | None:
    """Why ``exc`` (raised by xp_cuda's ``fname``) is a leak, or None when it is a proper
    error: an allowed type defined by xp_cuda or Python itself, a message free of the layers
    underneath, and no chained internal exception."""
    t = type(exc)
    mod = t.__module__.split(".")[0]
    if mod not in ("builtins", "xp_cuda"):
        return f"exception type {t.__module__}.{t.__qualname__} is not xp_cuda's or Python's"
    ok = isinstance(exc, ALLOWED) or (isinstance(exc, AttributeError) and "revision" in str(exc)
                                      and fname.split(":")[0] in ("ns", "linalg", "fft"))
    if not ok:
        return f"exception type {t.__name__} is not one a user should get"
    msg = str(exc)
    for w in INTERNAL_WORDS:
        if w in msg:
            return f"message carries {w!r}: {msg[:200]!r}"
    cause = exc.__cause__ if exc.__cause__ is not None else (
        None if exc.__suppress_context__ else exc.__context__)
    if cause is not None:
        return (f"chained from {type(cause).__module__}.{type(cause).__name__}: "
                f"{str(cause)[:120]!r}")
    return None


# ---- recipes ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arr:
    """An array: ``base`` (NumPy, dtype ``dtype``) taken through ``steps``: ("getitem", key),
    ("permute", axes), ("broadcast", shape). ``fresh`` copies each build (in-place targets)."""
    dtype: str
    base: np.ndarray = field(compare=False)
    steps: tuple = ()

    def values(self):
        v = self.base
        for kind, arg in self.steps:
            v = v[arg] if kind == "getitem" else (
                np.transpose(v, arg) if kind == "permute" else np.broadcast_to(v, arg))
        return v

    def __repr__(self):
        lay = ",".join(k for k, _ in self.steps) or "c"
        return f"Arr({self.dtype}{list(self.values().shape)}:{lay}:{_short(self.values())})"


def _short(v):
    flat = v.reshape(-1)
    s = np.array2string(flat[:6], precision=4, separator=" ")
    return s if flat.size <= 6 else s[:-1] + " ...]"


@dataclass(frozen=True)
class Dt:
    """A dtype of the namespace, by name."""
    name: str


@dataclass(frozen=True)
class Seq:
    """A list or tuple of recipes (concat's and stack's arrays, tensordot's axes)."""
    items: tuple
    kind: type = tuple


@dataclass(frozen=True)
class Foreign:
    """A value that is not the namespace's (a NumPy array, a list, a string, ...), passed as is."""
    value: object = field(compare=False)
    what: str = ""

    def __repr__(self):
        return f"Foreign({self.what or type(self.value).__name__})"


class DeviceArg:
    """The side's device object."""

    def __repr__(self):
        return "DEVICE"


DEVICE = DeviceArg()


@dataclass(frozen=True)
class Call:
    """One call: ``target`` names the function ("ns:add", "linalg:det", "fft:fft", "op:+",
    "op:r+", "op:+=", "op:getitem", "op:setitem", "info:dtypes", ...); revision in force."""
    target: str
    args: tuple
    kwargs: tuple = ()  # (name, recipe) pairs
    revision: str = "2023.12"

    def __repr__(self):
        a = [repr(x) for x in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"[{self.revision}] {self.target}({', '.join(a)})"


# ---- sides --------------------------------------------------------------------------------------
class Side:
    """One library on one device: builds arguments and calls."""

    def __init__(self, name, ns, device, to_numpy):
        self.name, self.ns, self.device, self._to_numpy = name, ns, device, to_numpy

    def set_revision(self, revision):
        if self.ns is xp:
            if _revisions.api_version() != revision:
                xp.set_api_version(revision)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                strict.set_array_api_strict_flags(api_version=revision)

    def build(self, r):
        ns = self.ns
        if isinstance(r, Arr):
            a = ns.asarray(np.array(r.base, copy=True), device=self.device)
            for kind, arg in r.steps:
                if kind == "getitem":
                    a = a[arg]
                elif kind == "permute":
                    a = ns.permute_dims(a, arg)
                else:
                    a = ns.broadcast_to(a, arg)
            return a
        if isinstance(r, Dt):
            return getattr(ns, r.name)
        if isinstance(r, Seq):
            return r.kind(self.build(i) for i in r.items)
        if isinstance(r, Foreign):
            return r.value
        if r is DEVICE:
            return self.device
        return r  # Python scalars, ints, None, strings, tuples of ints

    def numpy(self, a):
        return self._to_numpy(a)


def strict_side():
    return Side("array_api_strict", strict, strict.Device("CPU_DEVICE"), lambda a: a._array)


def xp_side(device=CPU):
    # (to_device: a creation function called without device= makes its array on the default
    # device, cuda:0 on a GPU machine, whichever side calls it)
    return Side(f"xp_cuda {device}", xp, device, lambda a: np.asarray(a.to_device(CPU)))


@dataclass
class Outcome:
    value: object = None  # plain data: ("array", dtype, shape, values), tuples, dicts, ...
    exc: BaseException | None = None
    tb: str = ""


def _namespace(side, target):
    where, _, name = target.partition(":")
    mod = {"ns": side.ns, "linalg": side.ns.linalg, "fft": side.ns.fft}[where]
    return getattr(mod, name)


BINARY_SYMBOLS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv",
                  "%": "mod", "**": "pow", "@": "matmul", "&": "and", "|": "or", "^": "xor",
                  "<<": "lshift", ">>": "rshift", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
                  "==": "eq", "!=": "ne"}
UNARY_SYMBOLS = {"~": "invert", "neg": "neg", "pos": "pos", "abs": "abs"}
CONVERSIONS = {"int": int, "float": float, "complex": complex, "bool": bool,
               "index": lambda a: a.__index__()}


def _invoke(side, call):
    args = [side.build(a) for a in call.args]
    kwargs = {k: side.build(v) for k, v in call.kwargs}
    return invoke_built(side, call, args, kwargs)


def invoke_built(side, call, args, kwargs):
    """Call ``call``'s target on one side with arguments already built."""
    t = call.target
    kind, _, name = t.partition(":")
    if kind in ("ns", "linalg", "fft"):
        return _namespace(side, t)(*args, **kwargs)
    if kind == "info":
        info = side.ns.__array_namespace_info__()
        return getattr(info, name)(*args, **kwargs)
    if kind == "attr":  # x.T, x.mT, x.shape, ...
        return getattr(args[0], name)
    assert kind == "op", t
    if name in BINARY_SYMBOLS:
        return getattr(args[0], f"__{BINARY_SYMBOLS[name]}__")(args[1])
    if name.startswith("r") and name[1:] in BINARY_SYMBOLS:
        return getattr(args[1], f"__r{BINARY_SYMBOLS[name[1:]]}__")(args[0])
    if name.endswith("=") and name[:-1] in BINARY_SYMBOLS:
        x = args[0]
        r = getattr(x, f"__i{BINARY_SYMBOLS[name[:-1]]}__")(args[1])
        return (x, r)  # the array updated in place, and what the operator returned
    if name in UNARY_SYMBOLS:
        return getattr(args[0], f"__{UNARY_SYMBOLS[name]}__")()
    if name in CONVERSIONS:
        return CONVERSIONS[name](args[0])
    if name == "getitem":
        return args[0][args[1]]
    if name == "setitem":
        x = args[0]
        x[args[1]] = args[2]
        return x
    raise AssertionError(t)


# NumPy before 2.5 handed a matrix holding inf to LAPACK's gesdd, which loops forever on some
# (Reference-LAPACK/lapack#1409, numpy/numpy#32591): the reference's svd and pinv (a full SVD)
# of such a matrix never return. NumPy 2.5 raises LinAlgError("SVD did not converge") for it,
# what the reference side is given here on an older NumPy instead of the call.
_GESDD_HANGS = tuple(int(v) for v in np.__version__.split(".")[:2]) < (2, 5)
_FULL_SVD_TARGETS = ("linalg:svd", "linalg:pinv")


def _reference_would_hang(side, call) -> bool:
    if not _GESDD_HANGS or side.ns is xp or call.target not in _FULL_SVD_TARGETS:
        return False
    a = call.args[0] if call.args else None
    v = a.values() if hasattr(a, "values") else None
    return v is not None and v.dtype.kind in "fc" and v.size > 0 and not np.isfinite(v).all()


def run_side(side, call) -> Outcome:
    side.set_revision(call.revision)
    if _reference_would_hang(side, call):
        e = np.linalg.LinAlgError("SVD did not converge (not called: gesdd loops on inf before "
                                  "NumPy 2.5, numpy/numpy#32591)")
        return Outcome(exc=e, tb="")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's overflow/invalid warnings: values compare
            res = _invoke(side, call)
    except Exception as e:  # noqa: BLE001  (every exception is an outcome to compare)
        return Outcome(exc=e, tb=traceback.format_exc(limit=-4))
    try:
        return Outcome(value=plain(side, res))
    except Exception as e:  # noqa: BLE001
        return Outcome(exc=e, tb="while reading the result back: " + traceback.format_exc())


def plain(side, r):
    """A result as comparable plain data."""
    ns = side.ns
    if isinstance(r, bool) or r is None or isinstance(r, (int, float, complex, str)):
        return r
    if hasattr(r, "__array_namespace__") and type(r).__module__.split(".")[0] in (
            "xp_cuda", "array_api_strict"):
        dt = next(n for n in DTYPE_NAMES if getattr(ns, n) == r.dtype)
        v = side.numpy(r)
        return ("array", dt, tuple(r.shape), np.array(v, copy=True))
    if isinstance(r, (tuple, list)):
        return (type(r).__name__ if not hasattr(r, "_fields") else "namedtuple",
                tuple(plain(side, i) for i in r))
    if isinstance(r, dict):
        return {k: plain(side, v) for k, v in r.items()}
    for n in DTYPE_NAMES:
        if r == getattr(ns, n):
            return ("dtype", n)
    if hasattr(r, "bits") and hasattr(r, "max"):  # finfo / iinfo objects
        out = {k: getattr(r, k) for k in ("bits", "max", "min", "eps", "resolution",
                                          "smallest_normal") if hasattr(r, k)}
        out["dtype"] = plain(side, r.dtype)
        return ("info", out)
    if type(r).__name__ == "Device":  # by name; the reference's CPU_DEVICE reads as cpu
        return ("device", "cpu" if "CPU_DEVICE" in repr(r) else str(r))
    return ("object", type(r).__name__)


# ---- comparison ---------------------------------------------------------------------------------
# Tolerance classes, per spec entry: "exact" (integers, bool, comparisons, rounding,
# manipulation, sorting, indexing, and IEEE-exact float arithmetic: + - * / sqrt on real
# floats), "ulp" (transcendental functions, complex arithmetic: the spec leaves their accuracy
# to the implementation), "sum" (reductions, products, linear algebra, FFTs: the order of
# operations is unspecified), "shape" (values not comparable, e.g. empty(), eigenvectors).
# ulp: |a - b| <= RTOL_ULP[dtype] * |b| + tiny; sum: |a - b| <= RTOL_SUM[dtype] * (|b| +
# max |b| over the result) (order effects scale with the largest partial sum).
RTOL_ULP = {"float32": 4e-6, "complex64": 4e-6, "float64": 8e-15, "complex128": 8e-15}
RTOL_SUM = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}


def _close(a, b, dt, tol, signed_zero, magnitude=None):
    """Where arrays a, b (same dtype and shape) differ beyond the class ``tol``: a message.
    A complex result's parts are compared against the magnitude of the whole value (a part
    that cancels to near 0 carries the error of the whole, not a relative one of its own)."""
    if a.dtype.kind == "c":
        with np.errstate(all="ignore"):
            mag = np.abs(b.astype(np.complex128))
        for part, f in (("real", np.real), ("imag", np.imag)):
            m = _close(np.ascontiguousarray(f(a)), np.ascontiguousarray(f(b)),
                       "float32" if dt == "complex64" else "float64", tol, signed_zero, mag)
            if m:
                return f"{part} part: {m}"
        return None
    if a.dtype.kind != "f":
        bad = a != b
    else:
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        with np.errstate(all="ignore"):
            if tol == "exact":
                bad = (a != b) & ~(nan_a & nan_b)
            else:
                both_inf = np.isinf(a) | np.isinf(b)
                rt = (RTOL_ULP if tol == "ulp" else RTOL_SUM)[dt]
                scale = np.abs(b.astype(np.float64))
                if magnitude is not None:
                    scale = np.where(np.isfinite(magnitude), np.maximum(scale, magnitude),
                                     scale)
                finite = scale[np.isfinite(scale)]
                big = finite.max() if tol == "sum" and finite.size else 0.0
                tiny = np.finfo(a.dtype).smallest_normal * 4
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
                bad = np.where(both_inf, a != b,
                               ~(diff <= rt * (scale + big) + tiny)) & ~(nan_a & nan_b)
            bad |= nan_a != nan_b
            if signed_zero and tol == "exact":
                bad |= (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
    if np.any(bad):
        i = tuple(int(k[0]) for k in np.nonzero(bad)) if a.ndim else ()
        return f"at {i}: {a[i]!r} vs {b[i]!r}"
    return None


def compare(x: Outcome, r: Outcome, tol="exact", signed_zero=True):
    """None when the outcomes agree, else a short description of the difference."""
    if x.exc is not None or r.exc is not None:
        if x.exc is not None and r.exc is not None:
            return None
        if x.exc is not None:
            return f"only xp_cuda raises: {type(x.exc).__name__}: {str(x.exc)[:300]}"
        return f"only the reference raises: {type(r.exc).__name__}: {str(r.exc)[:300]}"
    return _cmp(x.value, r.value, tol, signed_zero, "result")


def _cmp(a, b, tol, signed_zero, where):
    if isinstance(a, tuple) and a and a[0] == "array":
        if not (isinstance(b, tuple) and b and b[0] == "array"):
            return f"{where}: an array vs {b!r}"
        if a[1] != b[1] or a[2] != b[2]:
            return f"{where}: dtype/shape {a[1]}{list(a[2])} vs {b[1]}{list(b[2])}"
        if tol == "shape":
            return None
        m = _close(a[3], b[3], a[1], tol, signed_zero)
        return f"{where} {a[1]}{list(a[2])} {m}" if m else None
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2 \
            and isinstance(a[1], tuple) and a[0] in ("tuple", "list", "namedtuple"):
        if a[0] != b[0] or len(a[1]) != len(b[1]):
            return f"{where}: {a[0]} of {len(a[1])} vs {b[0]} of {len(b[1])}"
        for i, (p, q) in enumerate(zip(a[1], b[1])):
            m = _cmp(p, q, tol, signed_zero, f"{where}[{i}]")
            if m:
                return m
        return None
    if isinstance(a, (float, complex)) and type(a) is type(b):
        pairs = ((a.real, b.real), (a.imag, b.imag)) if isinstance(a, complex) else ((a, b),)
        if all((math.isnan(p) and math.isnan(q)) or p == q for p, q in pairs):
            return None
        return f"{where}: {a!r} vs {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            m = _cmp(a[k], b[k], tol, signed_zero, f"{where}[{k!r}]")
            if m:
                return m
        return None
    if type(a) is not type(b) or a != b:
        return f"{where}: {a!r} vs {b!r}"
    return None
