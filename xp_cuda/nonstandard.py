"""Non-standard helpers: useful functions outside the Array API standard.

Not part of the strict namespace (never in ``xp_cuda.__all__``); import them by name::

    from xp_cuda.nonstandard import logspace, simulate_cpu_devices
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._creation import (_device_arg, _int_range_check, _lin_at, _lin_last, _make,
                        _lin_params, _to_float)
from ._devices import simulate_cpu_devices as _simulate
from ._dtypes import DEFAULT_DTYPES, scalar_type_name
from ._validation import check_dtype_arg, check_int, normalize_axis

if TYPE_CHECKING:
    from ._typing import Array, Device, DType

__all__ = ["logspace", "numpy_copies", "simulate_cpu_devices"]


def numpy_copies(enabled: bool) -> bool:
    """Whether ``numpy.asarray(x)`` of an array on a GPU copies it to the host (``True``) or
    raises ``TypeError`` naming ``numpy.from_dlpack(x, device="cpu")`` (``False``, the
    default). Process-wide, for engines that store every task's result through
    ``numpy.asarray`` (Cubed: ``xp_cuda.compat`` turns it on when imported); the environment
    variable ``XP_CUDA_NUMPY_COPIES=1`` sets it at import. ``copy=False`` is refused either way
    (the host array is always a copy). Arrays on ``cpu`` convert without it. Returns the
    previous setting."""
    if enabled is not True and enabled is not False:
        raise TypeError(f"numpy_copies: enabled must be True or False, got {enabled!r}")
    from ._backends._base import NUMPY_COPIES
    previous, NUMPY_COPIES[0] = NUMPY_COPIES[0], enabled
    return previous


def simulate_cpu_devices(n: int) -> list[Device]:
    """Simulated devices for testing device propagation without a GPU: cpu:1 ... cpu:n-1
    beside cpu, each a distinct device in every rule of the standard's device support
    (mixing arrays of two devices raises, ``to_device`` copies, ``device=`` is honoured and
    results stay on their inputs' device), computing with NumPy. ``n = 1`` switches them off
    (the default); the environment variable ``XP_CUDA_CPU_DEVICES=n`` sets the same at
    import. Returns ``__array_namespace_info__().devices()``.

    Arrays made on a device that is switched off keep working there; no new array can be put
    on it."""
    return _simulate(n)


def _exact_powers(ibase: int, exps: np.ndarray):
    """|ibase|**|e| for int64 exponents e: (values as uint64, mask of those below 2**64)."""
    uniq, inv = np.unique(exps, return_inverse=True)
    m = np.zeros(uniq.shape, dtype=np.uint64)
    ok = np.zeros(uniq.shape, dtype=bool)
    b = abs(ibase)
    for j, e in enumerate(uniq.tolist()):
        e = abs(e)
        if b <= 1 or e <= 64:  # otherwise |b|**e >= 2**65: no uint64 holds it
            v = b ** e if b > 1 else (1 if e == 0 or b == 1 else 0)
            if v < 2**64:
                m[j], ok[j] = v, True
    return m[inv.reshape(-1)], ok[inv.reshape(-1)]


def _logspace_values(y: np.ndarray, base: float, dtype, fname="logspace") -> np.ndarray:
    """base**y as dtype, the reference the kernel reproduces. Floating dtypes: NumPy's power.
    Integer dtypes: where base and y are integers and |base|**|y| fits in 64 bits the power is
    exact; elsewhere a power within a few ulps of an integer is that integer, then it
    truncates as NumPy's astype."""
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        p = np.power(np.float64(base), y)
    if dtype.kind not in ("int", "uint"):
        return p.astype(dtype._np)
    base_is_int = math.isfinite(base) and float(base).is_integer() and abs(base) < 2**63
    with np.errstate(all="ignore"):
        r = np.rint(p)
        a = np.abs(r)
        near = (r != 0) & np.isfinite(r) & (np.abs(p - r) <= 8 * np.spacing(a))
        t = np.trunc(np.where(near, r, p))
    exact = np.zeros(y.shape, dtype=bool)
    if base_is_int:
        exact = (y == np.floor(y)) & (np.abs(y) < 9.2e18)
    ib = int(base) if base_is_int else 0
    e = y[exact].astype(np.int64)
    m, ok = _exact_powers(ib, e)
    idx = np.flatnonzero(exact)[ok]
    e, m = e[ok], m[ok]
    neg = (ib < 0) & (np.abs(e) % 2 == 1)
    # integer dtypes: check every value before converting (no silent wrap, no NaN cast)
    rest = np.ones(y.shape, dtype=bool)
    rest[idx] = False
    tr = t[rest]
    checks = [math.nan] if np.isnan(tr).any() else [tr.min(), tr.max()] if tr.size else []
    pos = e >= 0
    checks += [-int(v) if n else int(v) for v, n in zip(m[pos].tolist(), neg[pos].tolist())]
    # negative exponents: |b**e| <= 1, or inf for 0**e
    checks += [math.inf if v == 0 else (-1 if n else 1) if v == 1 else 0
               for v, n in zip(m[~pos].tolist(), neg[~pos].tolist())]
    _int_range_check(fname, [float(c) if isinstance(c, np.floating) else c for c in checks],
                     dtype)
    out = np.empty(y.shape, dtype=dtype._np)
    with np.errstate(all="ignore"):
        out[rest] = t[rest].astype(dtype._np)
    bits = np.where(neg, np.uint64(0) - m, m)  # two's complement of -m, modulo 2**64
    small = np.where(m == 1, np.where(neg, np.uint64(2**64 - 1), np.uint64(1)), np.uint64(0))
    out[idx] = np.where(pos, bits, small).astype(dtype._np)
    return out


def logspace(start: int | float, stop: int | float, num: int = 50, endpoint: bool = True,
             base: int | float = 10.0, dtype: DType | None = None, axis: int = 0, *,
             device: Device | None = None) -> Array:
    """``base ** linspace(start, stop, num, endpoint)`` with NumPy's signature and grid.

    Unlike NumPy and CuPy, an integer result is exact: integer powers of an integer base are
    computed in integer arithmetic (``logspace(1, 2, num=1, base=3, dtype=int64)`` is
    ``[3]``), a floating power within 8 ulps of an integer is rounded to it, then integer
    dtypes truncate as NumPy's ``astype`` does; a value that does not fit the integer dtype
    (or NaN) raises instead of wrapping. start, stop and base are Python ints or floats, so the
    result is 1-D and ``axis`` must be 0 or -1. Same results on cpu and cuda for integer dtypes;
    floating results agree to the last bit or two (the CUDA ``pow`` is within 2 ulps).
    """
    fname = "logspace"
    for v, n in ((start, "start"), (stop, "stop"), (base, "base")):
        if scalar_type_name(v) not in ("int", "float"):
            raise TypeError(f"{fname}: {n} must be a Python int or float, got {v!r}")
    num = check_int(num, fname, "num")
    if num < 0:
        raise ValueError(f"{fname}: num must be non-negative, got {num}")
    if not isinstance(endpoint, bool):
        raise TypeError(f"{fname}: endpoint must be a bool, got {endpoint!r}")
    normalize_axis(axis, 1, fname)  # the result is 1-D: 0 or -1
    dtype = DEFAULT_DTYPES["real floating"] if dtype is None else dtype
    check_dtype_arg(dtype, fname, "numeric")
    device = _device_arg(device, fname)
    fstart, fstop = _to_float(start, fname, "start"), _to_float(stop, fname, "stop")
    fbase = _to_float(base, fname, "base")
    lin = _lin_params(fstart, fstop, num, endpoint)
    last = _lin_last(num, endpoint)
    if dtype.kind in ("int", "uint") and num:
        # Range check before any work: |base**y| is monotonic in y and y in i; signs alternate
        # for a negative base, so the extremes of each sign (and any NaN from a non-integer
        # step) sit at these indices.
        idx = sorted({i for i in (0, 1, num - 2, num - 1) if 0 <= i < num})
        _logspace_values(np.array([_lin_at(lin, i, last) for i in idx]), fbase, dtype)
    return _make(fname, (num,), dtype, device, "logspace", num, dtype, fstart, fstop, fbase,
                 endpoint, lin, last, _logspace_values)
