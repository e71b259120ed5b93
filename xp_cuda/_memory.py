"""Out of memory: the one path from a backend's allocation failure to our MemoryError.

Every public entry point catches the backends' memory errors (``except _memory.errors()``) and
hands them to ``recover``: the namespace functions (wrapped once by ``install``, called by each
namespace module), the elementwise functions and Array's operators and methods (an inline
``try``: free in Python 3.11+ while nothing fails, where a wrapper's extra frame would cost
~40 ns on every call), fused functions and the KD-tree's methods. ``recover`` releases what
the backends cache (CuPy's memory pools, cuFFT plans, the library handles we own), tries the
call once more, and on a second failure raises ``OutOfMemory`` (a MemoryError) naming the bytes
asked and the bytes free on that device, from None: no raw CuPy, NumPy or cuBLAS error reaches
the user, and the namespace keeps working afterwards.

The one size check (a result too large for any array, a ValueError) is
``_validation.check_size``; this module handles what is possible in principle but does not fit.
"""
from __future__ import annotations

import gc
import sys
import threading
import traceback
import types

from . import _backends
from ._devices import CPU, Device, default_device


class OutOfMemory(MemoryError):
    """A request the device cannot hold, after xp_cuda released its caches and retried once."""


# The library errors that mean "allocation failed": (module, class name, status codes). Found
# in sys.modules at exception time, never imported here: a module of CuPy's is loaded only
# when its library is first used (cuBLAS, cuSOLVER and cuFFT load ~1 GB of code), and a class
# whose module is not loaded cannot have been raised.
_LIBRARY_ERRORS = (
    ("cupy_backends.cuda.libs.cublas", "CUBLASError", (3,)),  # CUBLAS_STATUS_ALLOC_FAILED
    ("cupy_backends.cuda.libs.cusolver", "CUSOLVERError", (2,)),  # CUSOLVER_STATUS_ALLOC_FAILED
    ("cupy.cuda.cufft", "CuFFTError", (2,)),  # CUFFT_ALLOC_FAILED
    ("cupy_backends.cuda.api.runtime", "CUDARuntimeError", (2,)),  # cudaErrorMemoryAllocation
    ("cupy_backends.cuda.api.driver", "CUDADriverError", (2,)),  # CUDA_ERROR_OUT_OF_MEMORY
)
_errors: tuple[type, ...] = (MemoryError,)
_complete = False


def errors() -> tuple:
    """The exception classes a guard catches: MemoryError (NumPy's and CuPy's allocation
    errors are MemoryErrors) and the loaded CuPy library errors. Evaluated only while an
    exception propagates (an ``except`` clause's expression), so it costs nothing otherwise."""
    global _errors, _complete
    if not _complete:
        found: list[type] = [MemoryError]
        for module, name, _ in _LIBRARY_ERRORS:
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type):
                found.append(cls)
        _errors = tuple(found)
        _complete = len(found) == len(_LIBRARY_ERRORS) + 1
    return _errors


_UNKNOWN = -1  # a memory error that does not say how many bytes it asked for


def _asked(e):
    """The bytes a memory error asked for (_UNKNOWN where it does not say), or None when the
    exception is not about memory (a library error of another status)."""
    if isinstance(e, MemoryError):
        for attr in ("_total_size", "_size"):  # NumPy's _ArrayMemoryError, CuPy's
            n = getattr(e, attr, None)
            if type(n) is int:
                return n
        return _UNKNOWN
    for module, name, statuses in _LIBRARY_ERRORS:
        if type(e).__name__ == name and type(e).__module__ == module:
            status = getattr(e, "status", getattr(e, "result", None))
            return _UNKNOWN if status in statuses else None
    return None


def _device_of(e, args, kwargs) -> Device:
    """The device that ran out: the host for NumPy's error; else the device the call names
    (device=, to_device's destination), else its first array's, else the default device."""
    if type(e).__module__.startswith("numpy"):
        return CPU
    values = list(args) + list((kwargs or {}).values())
    for v in values:
        if isinstance(v, Device):
            return v
    for v in values:
        for a in (v if isinstance(v, (list, tuple)) else (v,)):
            dev = getattr(a, "_device", None)
            if isinstance(dev, Device):
                return dev
    return default_device()


def release() -> None:
    """Give back what is cached: unreachable arrays (a collection), then every backend's
    pools, plans and handles (Backend.release_memory)."""
    gc.collect()
    for b in _backends.existing():
        try:
            b.release_memory()
        except Exception:  # releasing is best effort: the retry tells whether it was enough
            pass


def _error(e, fname: str, asked: int, device: Device) -> OutOfMemory:
    try:
        free = _backends.backend(device).free_bytes()
    except Exception:
        free = None
    if asked != _UNKNOWN:
        what = f"{asked} bytes were asked for"
    elif isinstance(e, MemoryError):
        what = f"an allocation of unreported size failed ({type(e).__name__}: {e})"
    else:
        what = f"a library call could not allocate its work space ({type(e).__name__}: {e})"
    room = (f"{free} bytes are free there" if free is not None else
            f"the free memory of {device} is not known here")
    return OutOfMemory(
        f"{fname}: out of memory on {device}: {what}, and {room} (after xp_cuda released its "
        f"cached memory and tried once more); delete arrays you no longer need, or work on "
        f"smaller pieces")


_state = threading.local()


def recover(e, fn, args, kwargs, fname: str):
    """The except clause of every guard: ``e`` (caught by ``errors()``) came out of
    ``fn(*args, **kwargs)``, the public call ``fname``. Not a memory error: raised again as it
    is. Else the caches are released and the call made once more; its result is returned, or
    its memory error raised as OutOfMemory naming the bytes. A guard met during that retry (a
    public function calling another) raises at once: one retry per user call."""
    if isinstance(e, OutOfMemory):
        raise e
    asked = _asked(e)
    if asked is None:
        raise e
    if getattr(_state, "retrying", False):
        raise _error(e, fname, asked, _device_of(e, args, kwargs)) from None
    # The failed attempt's finished frames still hold its arrays (through the traceback):
    # emptied first, so that their memory is free for the retry.
    traceback.clear_frames(e.__traceback__)
    release()
    _state.retrying = True
    try:
        return fn(*args, **(kwargs or {}))
    except errors() as e2:
        if isinstance(e2, OutOfMemory):
            raise
        asked = _asked(e2)
        if asked is None:
            raise
        raise _error(e2, fname, asked, _device_of(e2, args, kwargs)) from None
    finally:
        _state.retrying = False


# ---- the guard of a namespace function ---------------------------------------------------------

def guard(fn, fname: str | None = None):
    """fn with the guard around it: a wrapper of fn's exact parameters (read from its code, so
    a call passes them on as given, without packing *args and **kwargs: ~40 ns where a
    generic wrapper cost ~100 ns), its defaults, name, docstring and signature."""
    if getattr(fn, "__xp_guarded__", False):
        return fn
    g = _GUARDS.get(fn)
    if g is None:
        g = _GUARDS[fn] = _make_guard(fn, fname)
    return g


_GUARDS: dict = {}  # function -> its guard: one object wherever it is shown (xp.matmul is
#                     xp.linalg.matmul)


def _make_guard(fn, fname):
    code = fn.__code__
    names = code.co_varnames
    npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    star = code.co_flags & 0x04  # CO_VARARGS
    starstar = code.co_flags & 0x08  # CO_VARKEYWORDS
    params, call = [], []
    for i in range(npos):
        params.append(names[i])
        call.append(names[i])
        if i + 1 == nposonly:
            params.append("/")
    at = npos + nkw
    if star:
        params.append("*" + names[at])
        call.append("*" + names[at])
    elif nkw:
        params.append("*")
    for n in names[npos:npos + nkw]:
        params.append(n)
        call.append(f"{n}={n}")
    if starstar:
        kw = names[at + (1 if star else 0)]
        params.append("**" + kw)
        call.append("**" + kw)
    args = "(" + "".join(f"{n}, " for n in names[:npos]) + ")"
    if star:
        args += " + " + names[at]
    kwargs = "{" + ", ".join(f"{n!r}: {n}" for n in names[npos:npos + nkw]) + "}"
    if starstar:
        kwargs = f"dict({kwargs}, **{names[at + (1 if star else 0)]})"
    source = (f"def {fn.__name__}({', '.join(params)}):\n"
              f"    try:\n"
              f"        return _xp_fn({', '.join(call)})\n"
              f"    except _xp_errors() as _xp_e:\n"
              f"        return _xp_recover(_xp_e, _xp_fn, {args}, {kwargs}, _xp_name)\n")
    scope = {"_xp_fn": fn, "_xp_errors": errors, "_xp_recover": recover,
             "_xp_name": fname or fn.__name__}
    exec(compile(source, f"<guard of {fn.__qualname__}>", "exec"), scope)
    g = scope[fn.__name__]
    g.__defaults__, g.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    for attr in ("__module__", "__qualname__", "__doc__", "__dict__", "__annotations__"):
        try:
            value = getattr(fn, attr)
        except AttributeError:
            continue
        if attr == "__dict__":
            g.__dict__.update(value)
        else:
            setattr(g, attr, value)
    g.__wrapped__ = fn
    g.__xp_guarded__ = True
    return g


# A function's name in messages: the extensions' functions carry their namespace, as their
# other errors do ("fft.fft: ..."); xp.matmul, shown in linalg too, stays "matmul".
_PREFIXES = {"xp_cuda.fft": "fft.", "xp_cuda.linalg": "linalg."}


def install(namespace: str) -> None:
    """Guard every public function of the namespace module ``namespace`` (its __all__, the
    names of every revision: call this before _revisions.install hides later ones). Functions
    already guarded inline (``__xp_guarded__``) are kept as they are."""
    module = sys.modules[namespace]
    for name in module.__all__:
        fn = module.__dict__.get(name)
        if isinstance(fn, types.FunctionType) and not getattr(fn, "__xp_guarded__", False):
            setattr(module, name, guard(fn, _PREFIXES.get(fn.__module__, "") + name))


def guard_methods(cls, names, prefix: str = "") -> None:
    """Guard the methods ``names`` of class ``cls`` (the KD-tree's)."""
    for name in names:
        setattr(cls, name, guard(cls.__dict__[name], prefix + name))
