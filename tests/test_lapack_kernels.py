"""The LU-solve launcher (xp_cuda/_kernels/lapack.py) and the backends' ``solve``.

Pure Python (any machine): the method choice, the plan's layouts and scratch regions, and a NumPy
emulation of the launcher that reads the planned buffers the way cuSOLVER/cuBLAS read them
(column-major) and solves what they would solve: it proves the transposition argument of the
module docstring (op T, never C, for complex too) and the shared-matrix nrhs trick without a
GPU. cuda (``pytest -m cuda``): the launcher on every method, dtype, size and layout against
NumPy in float64, singular stacks, and the namespace's error.
"""
import ctypes

import numpy as np
import pytest
import xp_cuda as xp
from helpers import to_numpy
from xp_cuda._devices import CPU, Device, cuda_device_count
from xp_cuda._kernels import lapack as lk

needs_gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="needs a usable CUDA GPU")
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _plan_of(a, b, lwork=0, method=None):
    return lk.plan_solve(a.shape, a.strides, b.shape, b.strides, a.dtype.name, lwork, method)


# ---- method choice and plans (pure Python) ---------------------------------------------------

def test_choose_method():
    one, stack = lk.ONE_BATCHED_MAX_N, lk.BATCHED_MAX_N
    assert lk.choose_method(1, 4, True) == "batched"
    assert lk.choose_method(1, one, True) == "batched"
    assert lk.choose_method(1, one + 1, True) == "single"
    assert lk.choose_method(1, 4096, True) == "single"
    assert lk.choose_method(7, 4, True) == "batched"          # one matrix broadcast: one LU
    assert lk.choose_method(7, 4096, True) == "single"
    assert lk.choose_method(7, 4, False) == "batched"
    assert lk.choose_method(7, stack, False) == "batched"
    assert lk.choose_method(7, stack + 1, False) == "loop"
    assert lk.choose_method(0, 4, False) == "empty"
    assert lk.choose_method(3, 0, False) == "empty"


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("method", ["single", "batched"])
def test_plan_single_layout(order, method):
    a = np.zeros((5, 5), np.float32, order=order)
    b = np.zeros((5, 1), np.float32)
    p = _plan_of(a, b, lwork=77, method=method)
    assert p.method == method and p.n == 5 and p.k == 1 and p.batch == 1 and p.nrhs == 1
    assert p.mats == 1
    # the copy keeps the source's order: C -> read as A^T, op T; F -> read as A, op N
    column = order == "F"
    assert p.trans == (0 if column else 1)
    assert p.lu_strides == ((4, 20) if column else (20, 4))
    assert p.rhs_strides is None          # k = 1: the result buffer is B
    if method == "single":
        assert p.info_count == 2 and p.read == 2 and p.lwork == 77 and p.host_ptrs == 0
        assert p.work % 256 == 0 and p.nbytes >= p.work + 77 * 4
    else:
        assert p.info_count == 1 and p.lwork == 0 and p.host_ptrs == 16


def test_plan_regions_are_aligned_and_disjoint():
    a = np.zeros((2, 3, 6, 6), np.complex128)
    b = np.zeros((2, 3, 6, 4), np.complex128)
    p = _plan_of(a, b)
    assert p.method == "batched" and p.batch == 6 and p.k == 4
    sizes = {"lu": 6 * 36 * 16, "piv": 6 * 6 * 4, "info": 6 * 4, "ptrs": 2 * 6 * 8,
             "rhs": 6 * 6 * 4 * 16, "work": 0}
    spans = sorted((getattr(p, r), getattr(p, r) + s) for r, s in sizes.items() if s)
    for (s0, e0), (s1, _) in zip(spans, spans[1:]):
        assert e0 <= s1, spans
    assert all(getattr(p, r) % 256 == 0 for r in sizes)
    assert spans[-1][1] <= p.nbytes
    assert p.host_ptrs == 2 * 6 * 8 and p.host_bytes == p.host_ptrs + 4 * (6 + 1)
    assert p.offsets.dtype == np.uint64
    assert p.offsets.tolist() == [i * 36 * 16 for i in range(6)] + [i * 24 * 16 for i in range(6)]
    assert p.mats == 6 and p.nrhs == 4
    # the column-major B scratch: packed (6 x 4) blocks, column-major inside
    assert p.rhs_strides == (3 * 24 * 16, 24 * 16, 16, 6 * 16)


def test_plan_shared_for_a_broadcast_matrix():
    m = np.zeros((4, 4), np.float64)
    a = np.broadcast_to(m, (3, 2, 4, 4))
    b = np.zeros((3, 2, 4, 2))
    for method in ("batched", "single"):
        p = _plan_of(a, b, lwork=5, method=method)
        assert p.method == method and p.mats == 1 and p.nrhs == 3 * 2 * 2
        assert p.lu_shape == (4, 4) and p.lu == 0 and p.piv >= 4 * 4 * 8
        assert p.info_count == (2 if method == "single" else 1)
    assert _plan_of(a, b).method == "batched"
    p = _plan_of(a, b, method="loop")  # the loop factors every matrix
    assert p.mats == 6 and p.nrhs == 2 and p.lu_shape == (3, 2, 4, 4)
    # partly broadcast: one matrix per row of the stack, so not shared
    a2 = np.broadcast_to(np.zeros((3, 1, 4, 4)), (3, 2, 4, 4))
    assert _plan_of(a2, b).method == "batched" and _plan_of(a2, b).mats == 6
    with pytest.raises(AssertionError):
        _plan_of(a2, b, method="single")


def test_plan_loop_and_long_stacks():
    n = lk.BATCHED_MAX_N + 1
    p = lk.plan_solve((5, n, n), (4 * n * n, 4 * n, 4), (5, n, 1), (4 * n, 4, 4), "float32", 9)
    assert p.method == "loop" and p.info_count == 6 and p.read == 6 and p.lwork == 9
    assert p.trans == 1 and p.host_ptrs == 0
    big = lk.INFO_READ_MAX + 1
    p = lk.plan_solve((big, 2, 2), (16, 8, 4), (big, 2, 1), (8, 4, 4), "float32")
    assert p.method == "batched" and p.read == 0 and p.host_bytes == p.host_ptrs + 8
    huge = lk.PTRS_HOST_MAX + 1
    p = lk.plan_solve((huge, 2, 2), (16, 8, 4), (huge, 2, 1), (8, 4, 4), "float32")
    assert p.host_ptrs == 0 and p.offsets is None and p.ptrs == p.rhs  # device-computed


def test_plan_memcpy_where_layouts_agree():
    S = 8
    a = np.zeros((3, 5, 5))
    b1, b3 = np.zeros((3, 5, 1)), np.zeros((3, 5, 3))
    p = _plan_of(a, b1)
    assert p.a_memcpy == 3 * 25 * S and p.b_memcpy == 3 * 5 * S   # C in, C copies
    p = _plan_of(a, b3)
    assert p.a_memcpy == 3 * 25 * S and p.b_memcpy == 0            # B goes column-major
    fb = np.swapaxes(np.swapaxes(b3, -1, -2).copy(), -1, -2)
    assert _plan_of(a, fb).b_memcpy == 3 * 15 * S
    fa = np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)
    p = _plan_of(fa, b1)
    assert p.trans == 0 and p.a_memcpy == 3 * 25 * S
    assert _plan_of(a[:, ::-1], b1).a_memcpy == 0                   # reversed rows
    assert _plan_of(a, b1[::-1]).b_memcpy == 0                      # reversed stack
    shared = np.broadcast_to(a[0], a.shape)
    p = _plan_of(shared, b1)
    assert p.mats == 1 and p.a_memcpy == 25 * S                     # its one matrix
    assert _plan_of(shared, b1, method="loop").a_memcpy == 0        # every matrix: a copy
    assert _plan_of(a, np.broadcast_to(b1[0], b1.shape)).b_memcpy == 0


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
def test_plan_empty(shape):
    a = np.zeros(shape)
    b = np.zeros(shape[:-1] + (2,))
    assert _plan_of(a, b).method == "empty"
    b0 = np.zeros((3, 3, 0))
    assert _plan_of(np.zeros((3, 3, 3)), b0).method == "empty"
    assert _plan_of(np.zeros((3, 3, 3)), b0, method="loop").method == "empty"


# ---- a NumPy emulation of the launcher: the libraries' column-major reading ----------------

def _colmajor(buf, offset, rows, cols, dtype):
    """rows x cols column-major at byte ``offset`` of the flat byte buffer ``buf``."""
    S = dtype.itemsize
    return np.ndarray((rows, cols), dtype, buf.data, offset, (S, rows * S))


def _emulate(a, b, method=None):
    """What the launcher computes, with NumPy standing in for getrf/getrs: the planned copies
    into a scratch buffer, each library call's operands read column-major from it, op(M)
    applied as the trans flag says, and the result read back through the planned layouts."""
    p = _plan_of(a, b, 0, method)
    S, n, k, dt = p.itemsize, p.n, p.k, a.dtype
    scratch = np.zeros(max(p.nbytes, 1) // S + 1, dt)
    raw = scratch.view(np.uint8)

    def view(shape, strides, off):
        return np.ndarray(shape, dt, raw.data, off, strides)
    src = a if p.mats == p.batch else a[(0,) * (a.ndim - 2)]
    if p.a_memcpy:  # the launcher's cudaMemcpyAsync: bytes from a's first element on
        ctypes.memmove(raw.ctypes.data + p.lu, a.ctypes.data, p.a_memcpy)
    else:
        view(p.lu_shape, p.lu_strides, p.lu)[...] = src
    out = np.empty(p.shape, dt)
    if p.rhs_strides is None:
        rbuf, roff = out.reshape(-1).view(np.uint8), 0
    else:
        rbuf, roff = raw, p.rhs
    if p.b_memcpy:
        ctypes.memmove(rbuf.ctypes.data + roff, b.ctypes.data, p.b_memcpy)
    elif p.rhs_strides is None:
        out[...] = b
    else:
        view(p.shape, p.rhs_strides, p.rhs)[...] = b

    def op(m):
        return m.T if p.trans == 1 else m  # T: plain transpose, for complex too
    # each factored matrix i at lu + i * a_step, its nrhs columns at B + i * b_step
    for i in range(p.mats):
        m = _colmajor(raw, p.lu + i * p.a_step, n, n, dt)
        B = _colmajor(rbuf, roff + i * p.b_step, n, p.nrhs, dt)
        B[...] = np.linalg.solve(op(m), B)
    if p.rhs_strides is not None:
        out[...] = view(p.shape, p.rhs_strides, p.rhs)
    return out


def _random(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def _system(rng, batch, n, k, dtype):
    """Random well-conditioned a (random + (n+1) I: spectral radius of the random part about
    sqrt(n/3)) and random b."""
    a = _random(rng, batch + (n, n), dtype) + (n + 1) * np.eye(n, dtype=dtype)
    return a, _random(rng, batch + (n, k), dtype)


def _check(x, a, b, what):
    ref = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    tol = 1e-4 if np.dtype(x.dtype).itemsize * (2 if x.dtype.kind == "f" else 1) <= 8 else 1e-11
    assert x.shape == b.shape, what
    err = np.abs(x.astype(np.complex128) - ref).max() / max(np.abs(ref).max(), 1e-30)
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", [None, "batched", "loop", "single"])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_emulated_launcher(rng, dtype, method, layout):
    for batch in ((), (4,), (2, 3)):
        for n, k in ((1, 1), (3, 1), (5, 3)):
            a, b = _system(rng, batch, n, k, dtype)
            if layout == "F":
                a = np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)
                b = np.swapaxes(np.swapaxes(b, -1, -2).copy(), -1, -2)
            elif layout == "strided":
                a = np.repeat(a, 2, axis=-1)[..., ::-2][..., ::-1]
                b = np.repeat(b, 3, axis=-2)[..., ::3, :]
            m = method if batch != () or method != "loop" else None
            if m == "single" and batch != ():
                a = np.broadcast_to(a[(0,) * len(batch)], a.shape)
            x = _emulate(a, b, m)
            assert x.flags.c_contiguous
            _check(x, a, b, f"{dtype} batch={batch} n={n} k={k} {layout} {m}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_emulated_shared_matrix(rng, dtype):
    a, _ = _system(rng, (), 4, 1, dtype)
    for k in (1, 3):
        b = _random(rng, (2, 3, 4, k), dtype)
        ab = np.broadcast_to(a, (2, 3, 4, 4))
        for method in (None, "single", "batched", "loop"):
            _check(_emulate(ab, b, method), ab, b, f"shared k={k} {method}")


def test_complex_needs_plain_transpose(rng):
    # The argument of the module docstring, checked: solving with the conjugate transpose of
    # the column-major reading would be wrong for a complex matrix.
    a, b = _system(rng, (), 4, 1, "complex128")
    m = a.T  # what a row-major copy is, read column-major
    assert np.allclose(np.linalg.solve(m.T, b), np.linalg.solve(a, b))
    assert not np.allclose(np.linalg.solve(m.conj().T, b), np.linalg.solve(a, b))


def test_module_imports_without_cupy():
    import subprocess
    import sys
    code = ("import sys; sys.modules['cupy'] = None; sys.modules['cupy_backends'] = None; "
            "import xp_cuda._kernels.lapack as m; print(m.plan_solve((2, 2), (16, 8), (2, 1), "
            "(8, 8), 'float64').method)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "batched", out.stderr


# ---- the cpu backend's reference ---------------------------------------------------------------

def test_cpu_backend_solve_and_singular(rng):
    from xp_cuda._backends.cpu import CpuBackend
    a, b = _system(rng, (3,), 4, 2, "float64")
    x = CpuBackend().solve(a, b, xp.float32)
    assert x.dtype == np.float32
    _check(x, a, b, "cpu")
    a[1] = 0
    with pytest.raises(ValueError, match=r"^solve: x1 is singular \(not invertible\)"):
        CpuBackend().solve(a, b, xp.float64)


# ---- cuda: the launcher against NumPy ----------------------------------------------------------

def _cp():
    import cupy
    return cupy


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 33, 64, 257])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("batch", [(), (4,), (2, 3)], ids=str)
def test_cuda_solve(rng, dtype, n, k, batch):
    cp = _cp()
    a, b = _system(rng, batch, n, k, dtype)
    x, singular = lk.solve(cp, cp.asarray(a), cp.asarray(b))
    assert not singular and x.dtype == np.dtype(dtype) and x.flags.c_contiguous
    _check(cp.asnumpy(x), a, b, f"{dtype} n={n} k={k} batch={batch}")


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", ["batched", "loop", "single"])
@pytest.mark.parametrize("n", [1, 4, 33, 70])
def test_cuda_every_method(rng, dtype, method, n):
    cp = _cp()
    for batch, k in (((), 1), ((1,), 1), ((3,), 1), ((2, 2), 2), ((3,), 3)):
        a, b = _system(rng, batch, n, k, dtype)
        da = cp.asarray(a)
        if method == "single":  # one matrix for the whole stack (broadcast on the device)
            a = np.broadcast_to(a[(0,) * len(batch)], a.shape)
            da = cp.broadcast_to(da[(0,) * len(batch)], da.shape)
        x, singular = lk.solve(cp, da, cp.asarray(b), method=method)
        assert not singular
        _check(cp.asnumpy(x), a, b, f"{method} {dtype} n={n} batch={batch} k={k}")


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_layouts(rng, dtype):
    cp = _cp()
    for n, k in ((3, 1), (5, 3), (40, 2)):
        a, b = _system(rng, (2, 3), n, k, dtype)
        da, db = cp.asarray(a), cp.asarray(b)
        cases = {
            "F": (cp.asfortranarray(da.reshape(6, n, n).transpose(1, 2, 0)).transpose(2, 0, 1)
                  .reshape(2, 3, n, n), db),
            "F matrices": (cp.swapaxes(cp.swapaxes(da, -1, -2).copy(), -1, -2),
                           cp.swapaxes(cp.swapaxes(db, -1, -2).copy(), -1, -2)),
            "strided": (cp.repeat(da, 2, axis=-1)[..., ::-2][..., ::-1],
                        cp.repeat(db, 3, axis=-2)[..., ::3, :]),
            "negative batch": (da[::-1, ::-1], db[::-1, ::-1]),
        }
        for name, (ga, gb) in cases.items():
            x, singular = lk.solve(cp, ga, gb)
            assert not singular
            _check(cp.asnumpy(x), cp.asnumpy(ga), cp.asnumpy(gb), f"{name} {dtype} n={n}")
        # broadcast stacks (stride 0): one matrix for all, and one right-hand side for all
        ga = cp.broadcast_to(da[0, 0], (2, 3, n, n))
        x, singular = lk.solve(cp, ga, db)
        assert not singular
        _check(cp.asnumpy(x), cp.asnumpy(ga), b, f"broadcast a {dtype} n={n} k={k}")
        gb = cp.broadcast_to(db[1, 2], (2, 3, n, k))
        x, singular = lk.solve(cp, da, gb)
        assert not singular
        _check(cp.asnumpy(x), a, cp.asnumpy(gb), f"broadcast b {dtype} n={n} k={k}")
        ga = cp.broadcast_to(da[:, :1], (2, 3, n, n))
        for method in (None, "loop"):
            x, singular = lk.solve(cp, ga, db, method=method)
            assert not singular
            _check(cp.asnumpy(x), cp.asnumpy(ga), b, f"part broadcast a {dtype} n={n} {method}")


@pytest.mark.cuda
@needs_gpu
def test_cuda_empty():
    cp = _cp()
    for ashape, bshape in (((0, 3, 3), (0, 3, 2)), ((2, 0, 0), (2, 0, 1)), ((3, 3), (3, 0))):
        a = cp.ones(ashape, np.float64)
        b = cp.ones(bshape, np.float64)
        x, singular = lk.solve(cp, a, b)
        assert x.shape == bshape and not singular


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 40])
def test_cuda_singular_in_a_stack(rng, dtype, n):
    cp = _cp()
    a, b = _system(rng, (5,), n, 2, dtype)
    a[3, :, 0] = 0  # a zero column: exactly singular (every elimination meets a zero pivot)
    for method in (None, "batched", "loop"):
        x, singular = lk.solve(cp, cp.asarray(a), cp.asarray(b), method=method)
        assert singular, f"{dtype} n={n} {method}: a singular matrix went unreported"
        ok = [0, 1, 2, 4]
        _check(cp.asnumpy(x)[ok], a[ok], b[ok], f"the regular ones beside it ({method})")
    for method in (None, "single", "batched"):
        x, singular = lk.solve(cp, cp.asarray(a[3]), cp.asarray(b[3]), method=method)
        assert singular, f"one singular matrix, {method}"
    x, singular = lk.solve(cp, cp.asarray(a[2]), cp.asarray(b[2]))
    assert not singular  # the next call's read is its own


@pytest.mark.cuda
@needs_gpu
def test_cuda_long_stacks(rng):
    cp = _cp()
    for batch in (lk.INFO_READ_MAX + 3, lk.PTRS_HOST_MAX + 5):
        a, b = _system(rng, (batch,), 3, 1, "float32")
        a[batch // 2] = 0
        x, singular = lk.solve(cp, cp.asarray(a), cp.asarray(b))
        assert singular
        ok = np.arange(batch) != batch // 2
        _check(cp.asnumpy(x)[ok], a[ok], b[ok], f"batch={batch}")
        a[batch // 2] = np.eye(3)
        x, singular = lk.solve(cp, cp.asarray(a), cp.asarray(b))
        assert not singular
    a, b = _system(rng, (lk.INFO_READ_MAX + 3,), 40, 1, "float64")  # loop, device max
    a[7] = 0
    assert lk.solve(cp, cp.asarray(a), cp.asarray(b))[1]


@pytest.mark.cuda
@needs_gpu
def test_cuda_streams(rng):
    cp = _cp()
    a, b = _system(rng, (4,), 6, 2, "float64")
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        da, db = cp.asarray(a), cp.asarray(b)
        x, singular = lk.solve(cp, da, db)
        got = cp.asnumpy(x, stream=s)
    s.synchronize()
    assert not singular
    _check(got, a, b, "non-blocking stream")


@pytest.mark.cuda
@needs_gpu
def test_namespace_solve_on_cuda(rng):
    dev = Device("cuda", 0)
    a, b = _system(rng, (2, 3), 4, 2, "float64")
    x = xp.linalg.solve(xp.asarray(a, device=dev), xp.asarray(b, device=dev))
    _check(to_numpy(x), a, b, "namespace")
    a32 = a.astype(np.float32)
    v = _random(rng, (4,), np.complex128)
    x = xp.linalg.solve(xp.asarray(a32, device=dev), xp.asarray(v, device=dev))
    assert x.dtype == xp.complex128 and x.shape == (2, 3, 4)
    ref = np.linalg.solve(a32.astype(np.complex128), np.broadcast_to(v[:, None], (2, 3, 4, 1)))
    np.testing.assert_allclose(to_numpy(x), ref[..., 0], rtol=1e-5)
    a[1, 2] = 0
    for d in (dev, CPU):
        with pytest.raises(ValueError, match=r"^solve: x1 is singular \(not invertible\)"):
            xp.linalg.solve(xp.asarray(a, device=d), xp.asarray(b, device=d))


@pytest.mark.cuda
@needs_gpu
def test_cuda_matches_cpu_backend(rng):
    from xp_cuda._backends.cpu import CpuBackend
    from xp_cuda._backends.cuda import CudaBackend
    cp = _cp()
    cuda = CudaBackend(Device("cuda", 0))
    for dt in (xp.float32, xp.float64, xp.complex64, xp.complex128):
        a, b = _system(rng, (3,), 5, 2, dt.name)
        got = cp.asnumpy(cuda.solve(cp.asarray(a), cp.asarray(b), dt))
        ref = CpuBackend().solve(a, b, dt)
        assert got.dtype == ref.dtype
        _check(got, a, b, f"cuda backend {dt}")
        _check(ref, a, b, f"cpu backend {dt}")
