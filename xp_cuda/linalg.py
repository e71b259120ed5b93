"""The ``linalg`` extension of 2023.12: its 23 functions.

matmul, matrix_transpose, tensordot and vecdot are the main namespace's own function objects.
Every decomposition runs as one batched backend call (numpy.linalg or cupy.linalg) on the whole
stack; empty stacks and empty matrices are answered here, identically on both backends.
A failure the backend detects (singular, not positive-definite, no convergence) is a ValueError
naming the function; on cuda the cuSOLVER status is checked so that both devices agree.
"""
from __future__ import annotations

import contextlib
import math
from collections import namedtuple
from typing import TYPE_CHECKING

import numpy as np

from . import _elementwise, _manipulation, _memory, _revisions, _searching
from ._array import Array, _backend_of, _wrap, check_array, kept_one
from ._backends._base import _FP_IGNORE, FpQuiet, fp_quiet_off, fp_quiet_on
from ._dtypes import DEFAULT_DTYPES, complex_dtype, in_category, promote, real_dtype
from ._linear_algebra import (_numeric_dtype, _numeric_pair, matmul, matrix_transpose,
                              negative_axis_check, tensordot, vecdot)
from ._statistical import accumulation_dtype
from ._validation import PLANS as _PLANS
from ._validation import (broadcast_shapes, check_bool, check_dtype_category, check_int,
                          check_size,
                          common_device, normalize_axes, option_type, planned)

if TYPE_CHECKING:
    from typing import Literal

    from ._typing import DType

# The namespace's own functions, unguarded (this module's guard names the linalg function in
# an out-of-memory error). Every float value computed here outside a library call goes
# through them (on cuda, our kernels: CuPy's are built with -ftz and flush float32 subnormals),
# the same code on every device.
def _unguarded(f):
    return getattr(f, "__wrapped__", f)


_conj = _unguarded(_elementwise.conj)
_greater = _unguarded(_elementwise.greater)
_multiply = _unguarded(_elementwise.multiply)
_subtract = _unguarded(_elementwise.subtract)
_moveaxis = _unguarded(_manipulation.moveaxis)
_reshape = _unguarded(_manipulation.reshape)
_stack = _unguarded(_manipulation.stack)
_where = _unguarded(_searching.where)
_matmul = _unguarded(matmul)

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


# ---- shared checks and the backend call ------------------------------------------------------

def _floating(x, fname, argname="x"):
    check_array(x, fname, argname)
    check_dtype_category(x, "floating-point", fname, argname)
    return x


def _matrix(x, fname, argname="x"):
    if x.ndim < 2:
        raise ValueError(f"{fname}: {argname} has shape {x.shape}; it needs at least 2 "
                         f"dimensions (a matrix or a stack of matrices)")
    return x


def _square(x, fname, argname="x"):
    _matrix(x, fname, argname)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fname}: {argname} has shape {x.shape}; its last two dimensions "
                         f"must be equal (square matrices)")
    return x


_NO_CHECK = contextlib.nullcontext()  # reusable: entering it does nothing


def _run(b, fname, failure, fn, check=True):
    """Run fn(xp) on the device; a backend LinAlgError becomes a ValueError naming fname."""
    errors = b.linalg_errors()
    token = fp_quiet_on(_FP_IGNORE)  # np.errstate(all="ignore"), ~0.8 us cheaper
    try:
        checked = b.linalg_checked() if check else _NO_CHECK
        if b.switch is None:  # no device to make current: no context to enter
            with checked:
                return fn(b.xp)
        with b.ctx(), checked:
            return fn(b.xp)
    except errors as e:
        raise ValueError(f"{fname}: {failure} ({e})") from None
    finally:
        fp_quiet_off(token)


def _zeros(x, shape, dtype):
    b = x._b
    with b.ctx():
        return _wrap(b.xp.zeros(shape, dtype=dtype._np), x.device)


def _eye_stack(xp, stack, n, dtype):
    return xp.broadcast_to(xp.eye(n, dtype=dtype._np), tuple(stack) + (n, n)).copy()


def _conj_t(a):
    """The conjugate transpose of the Array a (our conj: a view for real dtypes)."""
    return (_conj(a) if a.dtype.kind == "complex" else a).mT


# ---- decompositions and solvers ---------------------------------------------------------------

def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """Array API 2023.12 ``cholesky`` (linear algebra extension): the Cholesky factor of each
    symmetric (Hermitian) positive-definite matrix, lower unless ``upper``."""
    fname = "cholesky"
    _square(_floating(x, fname), fname)
    check_bool(upper, fname, "upper")
    if x.size == 0:
        return _zeros(x, x.shape, x.dtype)

    low = _wrap(_run(x._b, fname, "x is not Hermitian positive-definite",
                     lambda xp: xp.linalg.cholesky(x._data)), x.device)
    return _conj_t(low) if upper else low


def det(x: Array, /) -> Array:
    """Array API 2023.12 ``det`` (linear algebra extension): the determinant of each square
    matrix."""
    fname = "det"
    _square(_floating(x, fname), fname)
    stack = x.shape[:-2]
    b = x._b
    if x.size == 0:  # det of a 0x0 matrix is 1
        with b.ctx():
            fill = b.xp.ones if x.shape[-1] == 0 else b.xp.zeros
            return _wrap(fill(stack, dtype=x.dtype._np), x.device)
    # the backend's LU, then sign * exp(logabsdet) (on cuda our kernels: CuPy's flush float32
    # subnormals, e.g. det(diag(1e-20, 1e-20)) = 1e-40)
    out = _run(b, fname, "the LU factorization failed", lambda xp: b.det(x._data, x.dtype),
               check=False)
    return _wrap(out, x.device)


def slogdet(x: Array, /) -> SlogdetResult:
    """Array API 2023.12 ``slogdet`` (linear algebra extension): the sign and the natural log of
    the absolute determinant of each square matrix."""
    fname = "slogdet"
    _square(_floating(x, fname), fname)
    stack = x.shape[:-2]
    rdt = real_dtype(x.dtype)
    b = x._b
    if x.size == 0:
        with b.ctx():
            fill = b.xp.ones if x.shape[-1] == 0 else b.xp.zeros
            return SlogdetResult(_wrap(fill(stack, dtype=x.dtype._np), x.device),
                                 _wrap(b.xp.zeros(stack, dtype=rdt._np), x.device))

    # the backend's LU, then NumPy's formula over U's diagonal (on cuda by our kernels)
    s, l = _run(b, fname, "the LU factorization failed",
                lambda xp: b.slogdet(x._data, x.dtype, rdt), check=False)
    return SlogdetResult(_wrap(s, x.device), _wrap(l, x.device))


def eigh(x: Array, /) -> EighResult:
    """Array API 2023.12 ``eigh`` (linear algebra extension): eigenvalues (ascending) and
    eigenvectors of each symmetric (Hermitian) matrix."""
    fname = "eigh"
    _square(_floating(x, fname), fname)
    rdt = real_dtype(x.dtype)
    if x.size == 0:
        return EighResult(_zeros(x, x.shape[:-1], rdt), _zeros(x, x.shape, x.dtype))

    def f(xp):
        w, v = xp.linalg.eigh(x._data)
        return b.astype(w, rdt, False), b.astype(v, x.dtype, False)
    b = x._b
    w, v = _run(b, fname, "the eigenvalue iteration did not converge", f)
    return EighResult(_wrap(w, x.device), _wrap(v, x.device))


def eigvalsh(x: Array, /) -> Array:
    """Array API 2023.12 ``eigvalsh`` (linear algebra extension): the eigenvalues (ascending) of
    each symmetric (Hermitian) matrix."""
    fname = "eigvalsh"
    _square(_floating(x, fname), fname)
    rdt = real_dtype(x.dtype)
    if x.size == 0:
        return _zeros(x, x.shape[:-1], rdt)
    b = x._b
    out = _run(b, fname, "the eigenvalue iteration did not converge",
               lambda xp: b.astype(xp.linalg.eigvalsh(x._data), rdt, False))
    return _wrap(out, x.device)


def inv(x: Array, /) -> Array:
    """Array API 2023.12 ``inv`` (linear algebra extension): the inverse of each square matrix."""
    fname = "inv"
    _square(_floating(x, fname), fname)
    if x.size == 0:
        return _zeros(x, x.shape, x.dtype)
    b = x._b
    out = _run(b, fname, "x is singular (not invertible)",
               lambda xp: b.astype(xp.linalg.inv(x._data), x.dtype, False))
    return _wrap(out, x.device)


def _check_solve(x1, x2):
    fname = "solve"
    _square(_floating(x1, fname, "x1"), fname, "x1")
    _floating(x2, fname, "x2")
    dtype = _numeric_dtype(fname, x1, x2)
    m = x1.shape[-1]
    if x2.ndim == 0:
        raise ValueError(f"{fname}: x2 is 0-d; it must have shape (M,) or (..., M, K)")
    if x2.ndim == 1:
        if x2.shape[0] != m:
            raise ValueError(f"{fname}: x2 has shape {x2.shape}, but x1 {x1.shape} holds "
                             f"{m}x{m} matrices; a 1-D x2 must have length {m}")
        stack, k = x1.shape[:-2], 1
    else:
        if x2.shape[-2] != m:
            raise ValueError(f"{fname}: x2 has shape {x2.shape}, but x1 {x1.shape} holds "
                             f"{m}x{m} matrices; x2 must have shape (..., {m}, K)")
        stack = broadcast_shapes([x1.shape[:-2], x2.shape[:-2]], fname)
        k = x2.shape[-1]
    out_shape = stack + ((m,) if x2.ndim == 1 else (m, k))
    return dtype, stack + (m, m), stack + (m, k), out_shape


def solve(x1: Array, x2: Array, /) -> Array:
    """Array API 2023.12 ``solve`` (linear algebra extension): x2 of shape (M,) is one vector
    for every matrix in x1; any x2 of 2 or more dimensions is a stack of (M, K) matrices
    (2023.12: only a 1-D x2 is a vector)."""
    fname = "solve"
    d1 = check_array(x1, fname, "x1")._data
    d2 = check_array(x2, fname, "x2")._data
    # dtypes and shapes decide the checks and the shapes below: once per combination
    key = (fname, d1.dtype, d1.shape, d2.dtype, d2.shape)
    plan = _PLANS.get(key)
    if plan is None:
        plan = planned(key, (), _check_solve, x1, x2)
    dtype, a_shape, rhs_shape, out_shape = plan
    device = x1._device
    if x2._device is not device:
        device = common_device([x1, x2], fname)
    if math.prod(out_shape) == 0:
        return _zeros(x1, out_shape, dtype)
    vector = d2.ndim == 1
    b = x1._b if type(x1) is type(x2) else _backend_of([x1, x2])
    # Both operands as full (..., M, M) and (..., M, K) stacks (broadcast views): no backend's
    # own vector-or-matrix guess is involved.
    a = d1 if d1.shape == a_shape else b.xp.broadcast_to(d1, a_shape)
    rhs = d2[:, None] if vector else d2
    if rhs.shape != rhs_shape:
        rhs = b.xp.broadcast_to(rhs, rhs_shape)
    out = b.solve(a, rhs, dtype)
    return _wrap(out[..., 0] if vector else out, device)


def qr(x: Array, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """Array API 2023.12 ``qr`` (linear algebra extension): the QR factorisation of each matrix
    (``mode`` 'reduced' or 'complete')."""
    fname = "qr"
    _matrix(_floating(x, fname), fname)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"{fname}: mode must be 'reduced' or 'complete', got {mode!r}")
    *stack, m, n = x.shape
    k = min(m, n)
    qcols, rrows = (m, m) if mode == "complete" else (k, k)
    if x.size == 0:
        b = x._b
        with b.ctx():
            xp = b.xp
            if math.prod(stack) != 0 and mode == "complete":
                q = _eye_stack(xp, stack, m, x.dtype)  # an orthonormal basis of K^m
            else:
                q = xp.zeros(tuple(stack) + (m, qcols), dtype=x.dtype._np)
            r = xp.zeros(tuple(stack) + (rrows, n), dtype=x.dtype._np)
        return QRResult(_wrap(q, x.device), _wrap(r, x.device))

    def f(xp):
        q, r = xp.linalg.qr(x._data, mode=mode)
        return b.astype(q, x.dtype, False), b.astype(r, x.dtype, False)
    b = x._b
    q, r = _run(b, fname, "the factorization failed", f)
    return QRResult(_wrap(q, x.device), _wrap(r, x.device))


def _svd_native(b, fname, x, full_matrices, compute_uv):
    """SVD of x (non-empty) on its device; returns natives (U, S, Vh) or S."""
    rdt = real_dtype(x.dtype)

    def f(xp):
        if not compute_uv:
            return b.astype(b.svd(x._data, False, False), rdt, False)
        u, s, vh = b.svd(x._data, full_matrices, True)
        return (b.astype(u, x.dtype, False), b.astype(s, rdt, False),
                b.astype(vh, x.dtype, False))
    return _run(b, fname, "the singular value iteration did not converge", f)


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """Array API 2023.12 ``svd`` (linear algebra extension): the singular value decomposition U,
    S, Vh of each matrix (``full_matrices`` as the standard says)."""
    fname = "svd"
    _matrix(_floating(x, fname), fname)
    check_bool(full_matrices, fname, "full_matrices")
    *stack, m, n = x.shape
    k = min(m, n)
    rdt = real_dtype(x.dtype)
    b = x._b
    if x.size == 0:
        with b.ctx():
            xp = b.xp
            if full_matrices and math.prod(stack) != 0:
                u, vh = _eye_stack(xp, stack, m, x.dtype), _eye_stack(xp, stack, n, x.dtype)
            else:
                u = xp.zeros(tuple(stack) + ((m, m) if full_matrices else (m, k)), x.dtype._np)
                vh = xp.zeros(tuple(stack) + ((n, n) if full_matrices else (k, n)), x.dtype._np)
            s = xp.zeros(tuple(stack) + (k,), dtype=rdt._np)
        return SVDResult(_wrap(u, x.device), _wrap(s, x.device), _wrap(vh, x.device))
    u, s, vh = _svd_native(b, fname, x, full_matrices, True)
    return SVDResult(_wrap(u, x.device), _wrap(s, x.device), _wrap(vh, x.device))


def svdvals(x: Array, /) -> Array:
    """Array API 2023.12 ``svdvals`` (linear algebra extension): the singular values of each
    matrix, descending."""
    fname = "svdvals"
    _matrix(_floating(x, fname), fname)
    *stack, m, n = x.shape
    rdt = real_dtype(x.dtype)
    if x.size == 0:
        return _zeros(x, tuple(stack) + (min(m, n),), rdt)
    return _wrap(_svd_native(x._b, fname, x, False, False), x.device)


# ---- functions built on the SVD: rank and pseudo-inverse ------------------------------------

def _rtol_native(fname, x, rtol, rdt, stack):
    """rtol as a Python float or an Array of the promoted dtype broadcastable against the
    stack shape (None: max(M, N) * eps)."""
    b = x._b
    if rtol is None:
        return rdt, max(x.shape[-2:]) * float(np.finfo(rdt._np).eps), stack
    if isinstance(rtol, Array):
        if not in_category(rtol.dtype, "real-valued floating-point"):
            raise TypeError(f"{fname}: rtol has dtype {rtol.dtype}; it must be a real-valued "
                            f"floating-point array (Array API 2023.12)")
        common_device([x, rtol], fname)
        out_stack = broadcast_shapes([stack, rtol.shape], fname)
        dt = promote(rdt, rtol.dtype)
        return dt, _wrap(b.astype(rtol._data, dt, False), rtol.device), out_stack
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"{fname}: rtol must be a Python float, a real floating-point array "
                        f"or None, got {rtol!r}")
    return rdt, float(rtol), stack


def _kept_values(s, tol):
    """A bool Array: which singular values of the Array s (each stack's in descending order)
    exceed tol (a Python float or an Array) times that stack's largest; in the promoted
    dtype of both, as the product is."""
    smax = s[..., :1]
    cutoff = (_multiply(tol[..., None], smax) if isinstance(tol, Array)
              else _elementwise._binary(smax, tol, "multiply", "*"))
    return _greater(s, cutoff)


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Array API 2023.12 ``matrix_rank`` (linear algebra extension): the number of singular
    values above ``rtol`` times the largest."""
    fname = "matrix_rank"
    _matrix(_floating(x, fname), fname)
    stack = x.shape[:-2]
    rdt = real_dtype(x.dtype)
    dt, tol, out_stack = _rtol_native(fname, x, rtol, rdt, stack)
    idt = DEFAULT_DTYPES["integral"]
    if x.size == 0:
        return _zeros(x, out_stack, idt)
    b = x._b
    s = _wrap(_svd_native(b, fname, x, False, False), x.device)
    with FpQuiet():
        keep = _kept_values(s, tol)  # of shape out_stack + (K,): rtol broadcast in
    # a count, as the default index dtype (int64)
    assert idt.name == "int64", idt
    return _wrap(b.count_nonzero(keep._data, (keep.ndim - 1,), False), x.device)


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Array API 2023.12 ``pinv`` (linear algebra extension): the Moore-Penrose pseudo-inverse of
    each matrix (singular values below ``rtol`` times the largest count as zero)."""
    fname = "pinv"
    _matrix(_floating(x, fname), fname)
    *stack, m, n = x.shape
    rdt = real_dtype(x.dtype)
    dt, tol, out_stack = _rtol_native(fname, x, rtol, rdt, tuple(stack))
    out_dt = x.dtype
    if x.size == 0:
        return _zeros(x, tuple(out_stack) + (n, m), out_dt)
    b = x._b
    u, s, vh = (_wrap(a, x.device) for a in _svd_native(b, fname, x, False, True))
    with FpQuiet():
        keep = _kept_values(s, tol)
        # 1/s where s is kept; elsewhere 0 (the pseudo-inverse of a zero singular value;
        # 1/0 = inf there is never picked)
        sinv = _where(keep, _elementwise._binary(s, 1.0, "divide", "/", True),
                      _zeros(x, (), rdt))
        # V diag(sinv) U^H: sinv (real) scales V's columns, then one product; the batch
        # shapes broadcast to out_stack (an rtol array's stack), and the result is x's dtype
        out = _matmul(_multiply(_conj_t(vh), sinv[..., None, :]), _conj_t(u))
    assert out.dtype == out_dt and out.shape == tuple(out_stack) + (n, m), (out, out_stack)
    return out


# ---- powers and products ---------------------------------------------------------------------

def matrix_power(x: Array, n: int, /) -> Array:
    """Array API 2023.12 ``matrix_power`` (linear algebra extension): each square matrix raised
    to the integer power ``n`` (negative: of its inverse)."""
    fname = "matrix_power"
    _square(_floating(x, fname), fname)
    n = check_int(n, fname, "n")
    b = x._b
    if n == 0:
        with b.ctx():
            return _wrap(_eye_stack(b.xp, x.shape[:-2], x.shape[-1], x.dtype), x.device)
    base = inv(x) if n < 0 else x
    if x.size == 0:
        return _zeros(x, x.shape, x.dtype)
    e = -n if n < 0 else n
    with FpQuiet():
        a, out = base, None
        while True:  # binary exponentiation: O(log n) batched products (cuBLAS on cuda)
            if e & 1:
                out = a if out is None else _matmul(out, a)
            e >>= 1
            if not e:
                break
            a = _matmul(a, a)
    if out is x:  # n == 1: a new array all the same
        with b.ctx():
            return _wrap(b.copy(x._data), x.device)
    assert out is not None  # e >= 1: the loop's first pass set it (for mypy)
    return out


def outer(x1: Array, x2: Array, /) -> Array:
    """Array API 2023.12 ``outer`` (linear algebra extension): the outer product of two 1-D
    arrays."""
    fname = "outer"
    dtype, device = _numeric_pair(fname, x1, x2)
    for a, nm in ((x1, "x1"), (x2, "x2")):
        if a.ndim != 1:
            raise ValueError(f"{fname}: {nm} has shape {a.shape}; outer takes 1-D arrays")
    check_size(x1.shape + x2.shape, dtype, fname)
    # one product of the (M, 1) and (1, N) views, each operand read in its own dtype
    with FpQuiet():
        return _multiply(x1[:, None], x2[None, :])


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Array API 2023.12 ``cross`` (linear algebra extension): the cross product of 3-element
    vectors along ``axis``."""
    fname = "cross"
    dtype, device = _numeric_pair(fname, x1, x2)
    axis = negative_axis_check(fname, x1, x2, axis)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"{fname}: axis {axis} has size {x1.shape[axis]} in x1 {x1.shape} and "
                         f"size {x2.shape[axis]} in x2 {x2.shape}; both must be 3 (the cross "
                         f"product is of 3-element vectors, and that axis is never broadcast)")
    broadcast_shapes([x1.shape, x2.shape], fname)
    with FpQuiet():
        # the components are views; each operand is read in its own dtype by the products
        a = _moveaxis(x1, axis, -1)
        c = _moveaxis(x2, axis, -1)
        a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
        c0, c1, c2 = c[..., 0], c[..., 1], c[..., 2]
        parts = [_subtract(_multiply(p, q), _multiply(r, t))
                 for p, q, r, t in ((a1, c2, a2, c1), (a2, c0, a0, c2), (a0, c1, a1, c0))]
        # stacked straight into place: the new axis lands at `axis` (negative, from the end)
        return _stack(parts, axis=axis)


# ---- diagonals and norms ---------------------------------------------------------------------

def _check_diagonal(x, offset):
    _matrix(x, "diagonal")
    return check_int(offset, "diagonal", "offset")


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """Array API 2023.12 ``diagonal`` (linear algebra extension): the ``offset``-th diagonal of
    each matrix of the last two axes."""
    d = check_array(x, "diagonal", "x")._data
    key = ("diagonal", d.shape, offset, type(offset))  # the checks read only these
    offset = planned(key, (offset,), _check_diagonal, x, offset)
    return _wrap(x._b.diagonal(d, offset, True), x._device)


def _check_trace(x, offset, dtype):
    fname = "trace"
    check_dtype_category(x, "numeric", fname, "x")
    _matrix(x, fname)
    return check_int(offset, fname, "offset"), accumulation_dtype(x, dtype, fname)


def trace(x: Array, /, *, offset: int = 0, dtype: DType | None = None) -> Array:
    """Array API 2023.12 ``trace`` (linear algebra extension): the sum of the ``offset``-th
    diagonal of each matrix."""
    d = check_array(x, "trace", "x")._data
    # dtype, shape and the options decide the checks: once per combination
    key = ("trace", d.dtype, d.shape, offset, type(offset), dtype, type(dtype))
    r = kept_one(key, x, d)  # a validated call kept whole (cuda)
    if r is not None:
        return r
    offset, rdt = planned(key, (offset, dtype), _check_trace, x, offset, dtype)
    return _wrap(x._b.trace(d, offset, rdt, key), x._device)


def _check_ord(ord, fname):
    if type(ord) is int:  # the common case: one test
        return ord
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"{fname}: ord must be a Python int or float (inf and -inf included), "
                        f"got {ord!r}")
    if ord != ord:
        raise ValueError(f"{fname}: ord=nan is not a norm order")
    return ord


def _keep(out, keepdims, shape, axes):
    if not keepdims:
        return out
    return out.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape)))


def _check_vector_norm(x, axis, keepdims):
    fname = "vector_norm"
    check_dtype_category(x, "floating-point", fname, "x")
    axes = normalize_axes(axis, x.ndim, fname)
    check_bool(keepdims, fname, "keepdims")
    return axes, real_dtype(x.dtype)


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: int | float = 2) -> Array:
    """Array API 2023.12 ``vector_norm`` (linear algebra extension): the vector norm of order
    ``ord`` over ``axis`` (all axes by default); sums of squares accumulate in float64."""
    d = check_array(x, "vector_norm", "x")._data
    # dtype, shape, axis and keepdims decide the checks: once per combination; ord is a value
    # (any float), checked on every call
    key = ("vector_norm", d.dtype, d.shape, axis, option_type(axis), keepdims, type(keepdims))
    kept_key = (key, ord, type(ord))  # a kept launch holds its order
    r = kept_one(kept_key, x, d)
    if r is not None:
        return r
    plan = planned(key, (axis, keepdims), _check_vector_norm, x, axis, keepdims)
    axes, rdt = plan
    ord = _check_ord(ord, "vector_norm")
    return _wrap(x._b.vector_norm(d, axes, keepdims, ord, rdt, kept_key), x._device)


def _check_matrix_norm(x, keepdims, ord):
    fname = "matrix_norm"
    _matrix(_floating(x, fname), fname)
    check_bool(keepdims, fname, "keepdims")
    if not (isinstance(ord, str) and ord in ("fro", "nuc")
            or not isinstance(ord, (bool, str)) and isinstance(ord, (int, float))
            and ord in (1, 2, math.inf, -1, -2, -math.inf)):
        raise ValueError(f"{fname}: ord={ord!r} is not one of the 2023.12 matrix norms "
                         f"'fro', 'nuc', 1, 2, inf, -1, -2, -inf")
    return real_dtype(x.dtype), (x.ndim - 2, x.ndim - 1)


def matrix_norm(x: Array, /, *, keepdims: bool = False,
                ord: int | float | Literal["fro", "nuc"] = "fro") -> Array:
    """Array API 2023.12 ``matrix_norm`` (linear algebra extension): the matrix norm of each
    matrix ('fro', 'nuc', 1, 2, inf and their negatives)."""
    fname = "matrix_norm"
    d = check_array(x, fname, "x")._data
    # dtype, shape and the options decide the checks: once per combination (ord=inf is a
    # float, never keyed: checked on every call)
    key = (fname, d.dtype, d.shape, keepdims, type(keepdims), ord, type(ord))
    r = kept_one(key, x, d)  # ord="fro" keeps its one reduction
    if r is not None:
        return r
    plan = planned(key, (keepdims, ord), _check_matrix_norm, x, keepdims, ord)
    rdt, axes = plan
    stack = x.shape[:-2]
    b = x._b
    if x.shape[-1] == 0 or x.shape[-2] == 0:  # every norm of an empty (zero) matrix is 0
        out = _zeros(x, stack, rdt)._data
    elif ord == "nuc" or ord in (2, -2):
        s = _svd_native(b, fname, x, False, False)
        out = (b.reduce("sum", s, (s.ndim - 1,), False, rdt) if ord == "nuc"
               else s[..., 0] if ord == 2 else s[..., -1])
    elif ord == "fro":  # the 2-norm of the matrix's elements: one reduction
        return _wrap(b.vector_norm(d, axes, keepdims, 2, rdt, key), x._device)
    else:
        # 1, -1: the column sums of |x| (inf, -inf: the row sums), each one vector 1-norm
        # (|x| read inside the reduction), then their largest or smallest
        with FpQuiet():
            summed = axes[0] if ord in (1, -1) else axes[1]
            sums = b.vector_norm(d, (summed,), True, 1, rdt)
            return _wrap(b.reduce("max" if ord > 0 else "min", sums, axes, keepdims, rdt),
                         x._device)
    with b.ctx():
        out = _keep(out, keepdims, x.shape, axes)
    return _wrap(out, x.device)


__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]


# ---- 2025.12: the general eigenproblem ---------------------------------------------------------

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _eig(fname, x, vectors):
    _square(_floating(x, fname), fname)
    cdt = complex_dtype(x.dtype)
    if x.size == 0:
        w = _zeros(x, x.shape[:-1], cdt)
        return w, (_zeros(x, x.shape, cdt) if vectors else None)
    b = x._b
    # numpy.linalg on the host, on every device: Backend.eig says why
    w, v = _run(b, fname, "the eigenvalue computation failed",
                lambda xp: b.eig(x._data, vectors, cdt), check=False)
    return _wrap(w, x.device), (_wrap(v, x.device) if vectors else None)


@_revisions.since("2025.12", "xp_cuda.linalg")
def eig(x: Array, /) -> EigResult:
    """Array API 2025.12 ``linalg.eig``: (eigenvalues, eigenvectors) of the square matrices of
    x (floating-point), both complex of x's precision (float32 -> complex64); the columns of
    each eigenvectors matrix are the eigenvectors (unit 2-norm, LAPACK's geev). NaN or inf in x
    is a ValueError."""
    return EigResult(*_eig("eig", x, True))


@_revisions.since("2025.12", "xp_cuda.linalg")
def eigvals(x: Array, /) -> Array:
    """Array API 2025.12 ``linalg.eigvals``: the eigenvalues of the square matrices of x
    (floating-point), complex of x's precision, shape (..., M)."""
    return _eig("eigvals", x, False)[0]


__all__ += ["eig", "eigvals"]

_memory.install(__name__)  # the out-of-memory guard of every function (xp_cuda._memory)
_revisions.install(__name__)  # names of later revisions show only while one is in force


def __getattr__(name):
    raise _revisions.missing(__name__, name)
