"""Main-namespace linear algebra and the linalg extension against NumPy (float64 reference)."""
import math

import numpy as np
import pytest

import xp_cuda as xp
from helpers import FLOATING, NUMERIC, random_array, random_numpy, to_numpy

L = xp.linalg
REF = {"float": np.float64, "complex": np.complex128}


def _tol(dtype):
    return 2e-3 if dtype in (xp.float32, xp.complex64) else 1e-9


def _ref(a):
    return a.astype(REF.get(a.dtype.kind == "c" and "complex" or "float"))


def _close(got, ref, dtype, scale=None):
    ref = np.asarray(ref)
    scale = np.abs(ref).max(initial=1.0) if scale is None else scale
    np.testing.assert_allclose(to_numpy(got), ref, rtol=_tol(dtype), atol=_tol(dtype) * scale)


def _square_inputs(rng, dtype, device, shape=(2, 3, 4, 4)):
    """Well-conditioned random matrices: a + n*scale*I."""
    a = random_numpy(rng, shape, dtype)
    a = a + shape[-1] * 10 * np.eye(shape[-1], dtype=a.dtype)
    return xp.asarray(a, device=device), a


def _hermitian_pd(rng, dtype, device, shape=(2, 3, 4, 4)):
    a = random_numpy(rng, shape, dtype).astype(REF[dtype.kind]) / 10
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    h = h.astype(dtype._np)
    return xp.asarray(h, device=device), h


def test_same_function_objects():
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(L, name) is getattr(xp, name)
    assert len(L.__all__) == 23


# ---- main namespace ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_matmul_layouts_match_numpy(device, rng, dtype):
    """matmul of plain, transposed, sliced, batched, broadcast and 1-D operands (on cuda: the
    direct cuBLAS path where the layout allows one, CuPy's otherwise), mixed dtypes promoted."""
    big, B = random_array(rng, (3, 40, 36), dtype, device)
    x, a = random_array(rng, (36, 17), dtype, device)
    cases = [
        (big[0, ...], B[0], x, a),                              # C @ C
        (big[0, ...].mT, B[0].T, big[1, :, :17], B[1][:, :17]),  # F @ strided rows
        (big[1, :36, :].mT, B[1][:36, :].T, x[:, ::2], a[:, ::2]),
        (big, B, big.mT, np.swapaxes(B, -1, -2)),               # batched C @ batched F
        (big.mT, np.swapaxes(B, -1, -2), big, B),
        (big, B, x, a),                                         # broadcast batch
        (big[:, ::2, :], B[:, ::2, :], big[0, ...].mT, B[0].T),
        (big[0, 0, :], B[0][0], x, a),                          # 1-D @ 2-D
        (big[0, ...], B[0], x[:, 0], a[:, 0]),                  # 2-D @ 1-D
        (x[:, 0], a[:, 0], x[:, 1], a[:, 1]),                   # 1-D @ 1-D
        (big[0, :1, :], B[0][:1], x, a), (big[0, :, :1], B[0][:, :1], x[:1, :], a[:1]),
        (big[0, :0, :], B[0][:0], x, a), (big[0, :, :0], B[0][:, :0], x[:0, :], a[:0]),
    ]
    for x1, a1, x2, a2 in cases:
        got = x1 @ x2
        ref = _ref(a1) @ _ref(a2)
        assert got.dtype == dtype and got.shape == ref.shape, (got.shape, ref.shape)
        if dtype.kind in ("int", "uint"):
            np.testing.assert_array_equal(to_numpy(got), (a1 @ a2))
        else:
            _close(got, ref, dtype, scale=np.abs(ref).max(initial=1.0) + 1)
    if dtype is xp.float32:  # mixed dtypes: promoted before the product
        y, c = random_array(rng, (36, 5), xp.float64, device)
        got = xp.matmul(big[0, ...], y)
        assert got.dtype == xp.float64
        _close(got, B[0].astype(np.float64) @ c, xp.float64)


@pytest.mark.parametrize("dtype", (xp.float32, xp.float64), ids=str)
def test_kept_matmul_computes_each_later_call_afresh(device, rng, dtype):
    """After a checked call, later calls of the same dtypes and shapes take the kept call
    (cuda: the one cuBLAS call, _KeptGemm in KEPT): new data each round against float64
    NumPy; operands of the same shapes in other layouts (transposed, batched transposed)
    take the full path and agree; so do the kept layouts after them."""
    from xp_cuda._backends._base import KEPT
    for shapes in (((9, 7), (7, 5)), ((3, 9, 7), (3, 7, 5))):
        for r in range(5):
            x, a = random_array(rng, shapes[0], dtype, device)
            y, b = random_array(rng, shapes[1], dtype, device)
            if r == 2:  # the same shapes, F-contiguous operands
                x = xp.matrix_transpose(xp.asarray(np.swapaxes(a, -1, -2).copy(), device=device))
                y = xp.matrix_transpose(xp.asarray(np.swapaxes(b, -1, -2).copy(), device=device))
            got = x @ y if r % 2 else xp.matmul(x, y)
            assert got.dtype == dtype and got.shape == (a @ b).shape
            _close(got, _ref(a) @ _ref(b), dtype, scale=np.abs(_ref(a) @ _ref(b)).max() + 1)
        if device.kind == "cuda":
            kept = KEPT.get(("matmul", x._data.dtype, x.shape, y._data.dtype, y.shape))
            assert type(kept).__name__ == "_KeptGemm", kept


@pytest.mark.parametrize("dtype", (xp.float32, xp.float64), ids=str)
def test_matmul_of_short_rows_times_a_vector(device, rng, dtype):
    """A stack of matrices times a vector with rows of at most 64 float32 / 8 float64 elements
    or at most 4 MiB in all (cuda: our vecdot kernel, cuBLAS beyond), at the limits and past
    them, batched, strided, empty, against float64 NumPy."""
    for shape in ((3000, 1), (3000, 5), (1000, 8), (1000, 9), (777, 64), (777, 65),
                  (16385, 65), (2, 3, 64), (4, 0), (0, 7), (2, 0, 3)):
        x, a = random_array(rng, shape, dtype, device)
        v, b = random_array(rng, shape[-1:], dtype, device)
        for x1, a1 in ((x, a), (x[::2, ...], a[::2])):  # C-contiguous, and every other row
            got = x1 @ v
            ref = _ref(a1) @ _ref(b)
            assert got.dtype == dtype and got.shape == ref.shape
            _close(got, ref, dtype, scale=np.abs(ref).max(initial=1.0) + 1)
    if dtype is xp.float64:  # mixed: a float32 matrix (or vector) and a float64 result
        for shape in ((16385, 300), (5, 3, 70), (1000, 9)):
            x, a = random_array(rng, shape, xp.float32, device)
            v, b = random_array(rng, shape[-1:], dtype, device)
            for x1, a1, x2, a2 in ((x, a, v, b),
                                   (xp.astype(x, dtype), a.astype(np.float64),
                                    xp.astype(v, xp.float32), b.astype(np.float32))):
                got = x1 @ x2
                ref = a1.astype(np.float64) @ a2.astype(np.float64)
                assert got.dtype == dtype and got.shape == ref.shape
                _close(got, ref, dtype, scale=np.abs(ref).max(initial=1.0) + 1)


def test_matmul_vecdot_route():
    """Which products the cuda backend gives to vecdot: C-contiguous (stacks of) matrices
    times a contiguous vector, rows up to 64 float32 or 8 float64 elements, or any rows in a
    matrix of at most 4 MiB; not a transposed or strided matrix, a strided vector, a matrix
    operand, another dtype."""
    from xp_cuda._backends.cuda import vecdot_route
    f32, f64 = np.float32, np.float64
    m = np.zeros((5, 64), f32)
    assert vecdot_route("float32", m, np.zeros(64, f32))
    assert vecdot_route("float32", np.zeros((2, 5, 64), f32), np.zeros(64, f32))
    assert vecdot_route("float32", np.zeros((5, 65), f32), np.zeros(65, f32))  # small
    assert vecdot_route("float32", np.zeros((4096, 256), f32), np.zeros(256, f32))  # 4 MiB
    assert not vecdot_route("float32", np.zeros((4097, 256), f32), np.zeros(256, f32))
    assert vecdot_route("float32", np.zeros((1 << 16, 64), f32), np.zeros(64, f32))
    assert vecdot_route("float64", np.zeros((1 << 16, 8), f64), np.zeros(8, f64))
    assert not vecdot_route("float64", np.zeros((1 << 16, 9), f64), np.zeros(9, f64))
    # a float32 matrix for a float64 result: any size (no cast pass); a float64 one: the rule
    assert vecdot_route("float64", np.zeros((1 << 16, 300), f32), np.zeros(300, f64))
    assert not vecdot_route("float64", np.zeros((1 << 16, 300), f64), np.zeros(300, f32))
    # the one planned decision matmul caches: vecdot, or cast first and plan again
    from xp_cuda._backends.cuda import _gemm_plan
    assert _gemm_plan("float64", np.zeros((1 << 16, 300), f32), np.zeros(300, f64)) == "vecdot"
    assert _gemm_plan("float64", np.zeros((1 << 16, 300), f64), np.zeros(300, f32)) == "cast"
    assert _gemm_plan("float64", np.zeros((9, 9), f32), np.zeros((9, 9), f64)) == "cast"
    assert not vecdot_route("float32", np.zeros((64, 5), f32).T, np.zeros(64, f32))
    assert not vecdot_route("float32", m[::2], np.zeros(64, f32))
    assert not vecdot_route("float32", m, np.zeros(128, f32)[::2])
    assert not vecdot_route("float32", m, np.zeros((64, 1), f32))
    assert not vecdot_route("complex64", m.astype(np.complex64), np.zeros(64, np.complex64))


@pytest.mark.parametrize("dtype", NUMERIC + (xp.bool,), ids=str)
def test_matrix_transpose(device, rng, dtype):
    x, a = random_array(rng, (2, 3, 4), dtype, device)
    out = xp.matrix_transpose(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(to_numpy(out), np.swapaxes(a, -1, -2))
    with pytest.raises(ValueError, match="at least 2"):
        xp.matrix_transpose(xp.asarray([1, 2], device=device))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_tensordot(device, rng, dtype):
    x1, a1 = random_array(rng, (2, 3, 4), dtype, device)
    x2, a2 = random_array(rng, (3, 4, 5), dtype, device)
    cases = [(2, 2), (0, 0), (1, None), (([1, 2], [0, 1]), None), (([-1], [1]), None),
             (((2, 1), (1, 0)), None)]
    for axes, _ in cases:
        if axes == 1:
            y2, b2 = random_array(rng, (4, 5), dtype, device)
        else:
            y2, b2 = x2, a2
        out = xp.tensordot(x1, y2, axes=axes)
        assert out.dtype == dtype
        if dtype.kind in ("int", "uint"):
            ref = np.tensordot(a1, b2, axes=axes)
            np.testing.assert_array_equal(to_numpy(out), ref.astype(dtype._np))
        else:
            ref = np.tensordot(_ref(a1), _ref(b2), axes=axes)
            assert out.shape == ref.shape
            _close(out, ref, dtype, scale=np.abs(a1).max() * np.abs(b2).max() * 12)


def test_tensordot_zero_dim(device, rng):
    for dtype in (xp.int16, xp.float32, xp.complex128):
        x1, a1 = random_array(rng, (), dtype, device)
        x2, a2 = random_array(rng, (2, 3), dtype, device)
        for axes in (0, ((), ())):
            out = xp.tensordot(x1, x2, axes=axes)
            assert out.dtype == dtype and out.shape == (2, 3)
            np.testing.assert_allclose(to_numpy(out), np.tensordot(a1, a2, axes=0), rtol=1e-6)
            assert xp.tensordot(x2, x1, axes=axes).shape == (2, 3)
            assert xp.tensordot(x1, x1, axes=axes).shape == ()


def test_tensordot_rules(device, rng):
    x1, _ = random_array(rng, (2, 3), xp.int8, device)
    x2, _ = random_array(rng, (3, 2), xp.uint8, device)
    assert xp.tensordot(x1, x2, axes=([1], [0])).dtype == xp.int16
    with pytest.raises(ValueError, match="axis 0 has size 2, x2 axis 0 has size 3"):
        xp.tensordot(x1, x2, axes=2)
    with pytest.raises(ValueError):
        xp.tensordot(x1, x2, axes=3)
    with pytest.raises(ValueError, match="repeats"):
        xp.tensordot(x1, x2, axes=([1, 1], [0, 0]))
    with pytest.raises(ValueError, match="lengths"):
        xp.tensordot(x1, x2, axes=([1], [0, 1]))
    with pytest.raises(TypeError):
        xp.tensordot(x1, x2, axes=1.0)
    with pytest.raises(TypeError, match="promoted"):
        xp.tensordot(x1, xp.asarray([[1.0]], device=device), axes=0)
    with pytest.raises(TypeError):
        xp.tensordot(xp.asarray([True], device=device), xp.asarray([True], device=device))


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_vecdot(device, rng, dtype):
    x1, a1 = random_array(rng, (4, 1, 5), dtype, device)
    x2, a2 = random_array(rng, (3, 5), dtype, device)
    out = xp.vecdot(x1, x2)
    assert out.dtype == dtype and out.shape == (4, 3)
    ref = np.sum(np.conj(a1) * a2, axis=-1) if dtype.kind == "complex" else \
        np.sum(a1.astype(REF.get(dtype.kind, dtype._np)) * a2, axis=-1)
    if dtype.kind in ("int", "uint"):
        np.testing.assert_array_equal(to_numpy(out), ref.astype(dtype._np))
    else:
        _close(out, ref, dtype, scale=np.abs(a1).max() * np.abs(a2).max() * 5)
    # axis=-2: the contracted axis counted from the end in both arrays
    y1, b1 = random_array(rng, (2, 5, 3), dtype, device)
    y2, b2 = random_array(rng, (5, 3), dtype, device)
    out = xp.vecdot(y1, y2, axis=-2)
    assert out.shape == (2, 3)
    ref = np.sum(np.conj(b1) * b2, axis=-2)
    if dtype.kind in ("int", "uint"):
        np.testing.assert_array_equal(to_numpy(out), ref.astype(dtype._np))
    else:
        _close(out, ref, dtype, scale=np.abs(b1).max() * np.abs(b2).max() * 5)


def test_vecdot_rules(device):
    x1 = xp.asarray([1j, 2j, 3j], device=device)
    x2 = xp.asarray([1, 2j, 3], device=device)
    assert complex(xp.vecdot(x1, x2)) == 4 - 10j  # x1 is conjugated
    a = xp.ones((100,), device=device)
    b = xp.ones((100, 20), device=device)
    with pytest.raises(ValueError) as e:
        xp.vecdot(a, b, axis=0)
    assert "vecdot(x1[:, None], x2, axis=-2)" in str(e.value)
    # the suggested call does what axis 0 of each array means
    assert xp.vecdot(a[:, None], b, axis=-2).shape == (20,)
    with pytest.raises(ValueError, match="axis=-2"):
        xp.vecdot(b, b, axis=0)
    with pytest.raises(ValueError, match="size 3 in x1 but 4 in x2"):  # no call to suggest
        xp.vecdot(xp.ones((2, 3, 4), device=device), xp.ones((3, 4), device=device), axis=1)
    with pytest.raises(ValueError, match="size 3.*size 4"):
        xp.vecdot(xp.ones((2, 3), device=device), xp.ones((2, 4), device=device))
    with pytest.raises(ValueError, match="size 1.*size 4"):  # never broadcast
        xp.vecdot(xp.ones((1,), device=device), xp.ones((4,), device=device))
    with pytest.raises(ValueError, match="exist in both"):
        xp.vecdot(xp.ones((3,), device=device), xp.ones((2, 3), device=device), axis=-2)
    with pytest.raises(ValueError, match="broadcast"):
        xp.vecdot(xp.ones((2, 3), device=device), xp.ones((4, 3), device=device))
    z = xp.vecdot(xp.ones((2, 0), device=device), xp.ones((2, 0), device=device))
    np.testing.assert_array_equal(to_numpy(z), [0.0, 0.0])
    assert xp.vecdot(xp.ones((3,), dtype=xp.int8, device=device),
                     xp.ones((3,), dtype=xp.uint8, device=device)).dtype == xp.int16
    with pytest.raises(TypeError):
        xp.vecdot(x1, x2, axis=-1.0)


# ---- linalg: decompositions ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_cholesky(device, rng, dtype):
    x, h = _hermitian_pd(rng, dtype, device)
    low = L.cholesky(x)
    up = L.cholesky(x, upper=True)
    assert low.dtype == up.dtype == dtype and low.shape == x.shape
    ref = np.linalg.cholesky(_ref(h))
    _close(low, ref, dtype)
    _close(up, np.conj(np.swapaxes(ref, -1, -2)), dtype)
    assert np.array_equal(to_numpy(up), np.triu(to_numpy(up)))
    with pytest.raises(ValueError, match="positive-definite"):
        L.cholesky(xp.asarray(-np.eye(3, dtype=dtype._np), device=device))


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_det_slogdet_inv(device, rng, dtype):
    x, a = _square_inputs(rng, dtype, device)
    ar = _ref(a)
    d = L.det(x)
    assert d.dtype == dtype and d.shape == (2, 3)
    _close(d, np.linalg.det(ar), dtype)
    s, ld = L.slogdet(x)
    assert s.dtype == dtype
    assert ld.dtype == (xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64)
    rs, rld = np.linalg.slogdet(ar)
    _close(s, rs, dtype)
    _close(ld, rld, dtype)
    i = L.inv(x)
    assert i.dtype == dtype
    _close(i, np.linalg.inv(ar), dtype)


def test_singular_and_zero_det(device):
    z = xp.zeros((2, 3, 3), device=device)
    np.testing.assert_array_equal(to_numpy(L.det(z)), [0.0, 0.0])
    s, ld = L.slogdet(z)
    np.testing.assert_array_equal(to_numpy(s), [0.0, 0.0])
    np.testing.assert_array_equal(to_numpy(ld), [-np.inf, -np.inf])
    with pytest.raises(ValueError, match="singular"):
        L.inv(z)
    with pytest.raises(ValueError, match="singular"):
        L.solve(z, xp.ones((3,), device=device))


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_eigh(device, rng, dtype):
    x, h = _hermitian_pd(rng, dtype, device)
    rdt = xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64
    w, v = L.eigh(x)
    assert type(L.eigh(x)).__name__ != "tuple" and L.eigh(x)._fields == ("eigenvalues",
                                                                         "eigenvectors")
    assert w.dtype == rdt and v.dtype == dtype and w.shape == (2, 3, 4) and v.shape == x.shape
    rw = np.linalg.eigvalsh(_ref(h))
    _close(w, rw, dtype)
    vn, wn = to_numpy(v).astype(REF[dtype.kind]), to_numpy(w)
    recon = vn @ (wn[..., :, None] * np.conj(np.swapaxes(vn, -1, -2)))
    np.testing.assert_allclose(recon, h, rtol=_tol(dtype), atol=_tol(dtype) * np.abs(h).max())
    wv = L.eigvalsh(x)
    assert wv.dtype == rdt
    _close(wv, rw, dtype)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5)])
def test_qr(device, rng, dtype, shape):
    x, a = random_array(rng, shape, dtype, device)
    m, n = shape[-2:]
    k = min(m, n)
    for mode in ("reduced", "complete"):
        q, r = L.qr(x, mode=mode)
        assert L.qr(x)._fields == ("Q", "R")
        assert q.dtype == r.dtype == dtype
        assert q.shape == shape[:-2] + ((m, k) if mode == "reduced" else (m, m))
        assert r.shape == shape[:-2] + ((k, n) if mode == "reduced" else (m, n))
        qn, rn = to_numpy(q).astype(REF[dtype.kind]), to_numpy(r)
        np.testing.assert_array_equal(rn, np.triu(rn))
        np.testing.assert_allclose(qn @ rn, a, rtol=_tol(dtype), atol=_tol(dtype) * 100)
    with pytest.raises(ValueError, match="mode"):
        L.qr(x, mode="r")


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5)])
def test_svd_svdvals(device, rng, dtype, shape):
    x, a = random_array(rng, shape, dtype, device)
    m, n = shape[-2:]
    k = min(m, n)
    rdt = xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64
    rs = np.linalg.svd(_ref(a), compute_uv=False)
    for full in (True, False):
        res = L.svd(x, full_matrices=full)
        assert res._fields == ("U", "S", "Vh")
        u, s, vh = res
        assert u.dtype == vh.dtype == dtype and s.dtype == rdt
        assert u.shape == shape[:-2] + ((m, m) if full else (m, k))
        assert vh.shape == shape[:-2] + ((n, n) if full else (k, n))
        _close(s, rs, dtype)
        un, sn, vhn = (to_numpy(t).astype(REF[dtype.kind]) for t in (u, s, vh))
        recon = (un[..., :, :k] * sn[..., None, :]) @ vhn[..., :k, :]
        np.testing.assert_allclose(recon, a, rtol=_tol(dtype), atol=_tol(dtype) * 100)
    sv = L.svdvals(x)
    assert sv.dtype == rdt and sv.shape == shape[:-2] + (k,)
    _close(sv, rs, dtype)


_NONFINITE_SVD = """
import numpy as np, xp_cuda as xp
dev = next(d for d in xp.__array_namespace_info__().devices() if str(d) == {device!r})
a = xp.asarray(np.diag([np.inf, 1.0, 2.0]), device=dev)
try:
    xp.linalg.svd(a)
except ValueError as e:
    print(e)
"""


@pytest.mark.parametrize("device_name", ["cpu", "cpu:1"])
def test_svd_of_an_infinite_matrix_returns_on_cpu(device_name):
    """svd of diag(inf, 1, 2) never returned on cpu: LAPACK's gesdd loops forever on it
    (Reference-LAPACK/lapack#1409, numpy/numpy#32591, NumPy before 2.5). The cpu backend
    refuses non-finite input first, as NumPy 2.5 does; run in a process of its own so a
    regression fails here rather than hanging the suite."""
    import subprocess
    import sys
    env = dict(__import__("os").environ, XP_CUDA_CPU_DEVICES="2")
    r = subprocess.run([sys.executable, "-c", _NONFINITE_SVD.format(device=device_name)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "svd: the singular value iteration did not converge (x holds an infinite or NaN" \
        in r.stdout, r.stdout


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_svd_family_refuses_non_finite_input_on_cpu(bad):
    """Every SVD-based function on cpu: a matrix holding inf or NaN is a ValueError that
    says which values and what to do (the standard leaves the result unspecified); a stack
    with one such matrix too. Finite stacks beside it are unaffected."""
    from xp_cuda._devices import CPU, Device
    for dev in (CPU, Device("cpu", 1)):
        a = np.stack([np.eye(3) * 2.0, np.diag([bad, 1.0, 2.0])])
        x = xp.asarray(a, device=dev)
        calls = (lambda: L.svd(x), lambda: L.svd(x, full_matrices=False),
                 lambda: L.svdvals(x), lambda: L.pinv(x), lambda: L.matrix_rank(x),
                 lambda: L.matrix_norm(x, ord=2), lambda: L.matrix_norm(x, ord=-2),
                 lambda: L.matrix_norm(x, ord="nuc"))
        for call in calls:
            with pytest.raises(ValueError, match="infinite or NaN value; replace those"):
                call()
        good = xp.asarray(a[:1], device=dev)
        np.testing.assert_allclose(to_numpy(L.svdvals(good)), [[2.0, 2.0, 2.0]])


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_solve(device, rng, dtype):
    x1, a = _square_inputs(rng, dtype, device, (2, 3, 4, 4))
    ar = _ref(a)
    # 1-D x2: one vector for every matrix of the stack
    v, bv = random_array(rng, (4,), dtype, device)
    out = L.solve(x1, v)
    assert out.dtype == dtype and out.shape == (2, 3, 4)
    _close(out, np.linalg.solve(ar, np.broadcast_to(_ref(bv)[:, None], (2, 3, 4, 1)))[..., 0],
           dtype)
    # (..., M, K) x2 with broadcast stacks
    y, by = random_array(rng, (3, 4, 2), dtype, device)
    out = L.solve(x1, y)
    assert out.shape == (2, 3, 4, 2)
    _close(out, np.linalg.solve(ar, _ref(by)), dtype)
    # a 2-D x2 of shape (M, K) is a matrix, even against a stack: never a stack of vectors
    y2, by2 = random_array(rng, (4, 3), dtype, device)
    out = L.solve(x1, y2)
    assert out.shape == (2, 3, 4, 3)
    _close(out, np.linalg.solve(ar, _ref(by2)), dtype)
    with pytest.raises(ValueError, match=r"\(\.\.\., 4, K\)"):
        L.solve(x1, xp.ones((3, 4), dtype=dtype, device=device))
    with pytest.raises(ValueError, match="length 4"):
        L.solve(x1, xp.ones((3,), dtype=dtype, device=device))


def test_solve_promotion(device, rng):
    x1, a = _square_inputs(rng, xp.float32, device, (3, 3))
    v = xp.ones((3,), dtype=xp.complex128, device=device)
    out = L.solve(x1, v)
    assert out.dtype == xp.complex128
    np.testing.assert_allclose(to_numpy(out), np.linalg.solve(a.astype(np.float64), np.ones(3)),
                               rtol=1e-6)


# ---- linalg: SVD-based and powers ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_matrix_rank_pinv(device, rng, dtype):
    a = random_numpy(rng, (2, 5, 3), dtype)
    a[1, :, 2] = a[1, :, 0] + a[1, :, 1]  # rank 2
    x = xp.asarray(a, device=device)
    r = L.matrix_rank(x)
    assert r.dtype == xp.int64 and r.shape == (2,)
    np.testing.assert_array_equal(to_numpy(r), [3, 2])
    assert to_numpy(L.matrix_rank(x, rtol=0.99)).tolist() == [1, 1]
    rt = xp.asarray([0.0, 0.99], dtype=xp.float64, device=device)
    assert to_numpy(L.matrix_rank(x, rtol=rt)).tolist() == [3, 1]
    p = L.pinv(x)
    assert p.dtype == dtype and p.shape == (2, 3, 5)
    _close(p[0, ...], np.linalg.pinv(_ref(a[0])), dtype)
    # the rank-deficient matrix needs a cutoff matching the precision
    _close(p[1, ...], np.linalg.pinv(_ref(a[1]), rcond=1e-4 if dtype in (xp.float32, xp.complex64)
                                else 1e-12), dtype)
    with pytest.raises(TypeError, match="rtol"):
        L.matrix_rank(x, rtol=xp.asarray([1, 2], device=device))
    with pytest.raises(TypeError, match="rtol"):
        L.pinv(x, rtol="big")


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_matrix_power(device, rng, dtype):
    x, a = _square_inputs(rng, dtype, device, (2, 3, 3))
    x = x / 40  # keep powers in range
    ar = _ref(a) / 40
    for n in (0, 1, 2, 5, -1, -3):
        out = L.matrix_power(x, n)
        assert out.dtype == dtype and out.shape == (2, 3, 3)
        _close(out, np.linalg.matrix_power(ar, n), dtype)
    with pytest.raises(TypeError):
        L.matrix_power(x, 2.0)


# ---- linalg: products, diagonals, norms -----------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_outer_cross(device, rng, dtype):
    x1, a1 = random_array(rng, (4,), dtype, device)
    x2, a2 = random_array(rng, (3,), dtype, device)
    out = L.outer(x1, x2)
    assert out.dtype == dtype and out.shape == (4, 3)
    # exactly the namespace's own multiply of the two broadcast views, on every device
    own = xp.multiply(xp.reshape(x1, (4, 1)), xp.reshape(x2, (1, 3)))
    np.testing.assert_array_equal(to_numpy(out), to_numpy(own))
    if dtype.kind == "complex":  # NumPy's SIMD complex loops may fuse a*c - b*d into one FMA
        np.testing.assert_allclose(to_numpy(out), np.multiply.outer(a1, a2),
                                   rtol=2 * np.finfo(a1.real.dtype).eps)
    else:
        np.testing.assert_array_equal(to_numpy(out), np.multiply.outer(a1, a2))
    y1, b1 = random_array(rng, (2, 1, 3), dtype, device)
    y2, b2 = random_array(rng, (4, 3), dtype, device)
    out = L.cross(y1, y2)
    assert out.dtype == dtype and out.shape == (2, 4, 3)
    with np.errstate(all="ignore"):
        ref = np.cross(b1, b2)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-6 if dtype.bits >= 32 else 0)
    z1, c1 = random_array(rng, (3, 2), dtype, device)
    z2, c2 = random_array(rng, (5, 3, 2), dtype, device)
    out = L.cross(z1, z2, axis=-2)
    with np.errstate(all="ignore"):
        ref = np.cross(c1, c2, axis=-2)
    assert out.shape == (5, 3, 2)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-6 if dtype.bits >= 32 else 0)


def test_outer_cross_rules(device):
    a = xp.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="1-D"):
        L.outer(a, xp.ones((3,), device=device))
    with pytest.raises(ValueError, match="must be 3"):
        L.cross(xp.ones((2, 4), device=device), xp.ones((2, 4), device=device))
    with pytest.raises(ValueError, match="must be 3"):
        L.cross(xp.ones((2, 3), device=device), xp.ones((2, 1), device=device))
    with pytest.raises(ValueError, match="axis=-1"):
        L.cross(a, a, axis=1)
    with pytest.raises(TypeError):
        L.cross(xp.ones((3,), dtype=xp.bool, device=device), xp.ones((3,), device=device))


@pytest.mark.parametrize("dtype", NUMERIC + (xp.bool,), ids=str)
def test_diagonal_trace(device, rng, dtype):
    x, a = random_array(rng, (2, 3, 4), dtype, device)
    for off in (0, 1, -1, 3, -2, 4, -3, 10):
        d = L.diagonal(x, offset=off)
        ref = np.diagonal(a, offset=off, axis1=-2, axis2=-1)
        assert d.dtype == dtype and d.shape == ref.shape
        np.testing.assert_array_equal(to_numpy(d), ref)
        if dtype is xp.bool:
            continue
        t = L.trace(x, offset=off)
        rdt = {"int": xp.int64, "uint": xp.uint64}.get(dtype.kind, dtype)
        assert t.dtype == rdt and t.shape == (2,)
        np.testing.assert_allclose(to_numpy(t), np.sum(ref.astype(rdt._np), axis=-1),
                                   rtol=1e-5)
    # views: transposed, reversed and strided matrices (the diagonal is a view of their memory)
    big, B = random_array(rng, (3, 9, 8), dtype, device)
    for v, va in ((big.mT, B.transpose(0, 2, 1)), (big[:, ::-2, 1::3], B[:, ::-2, 1::3]),
                  (big[1, ::-1, ::-1], B[1, ::-1, ::-1])):
        for off in (0, 2, -1):
            ref = np.diagonal(va, offset=off, axis1=-2, axis2=-1)
            np.testing.assert_array_equal(to_numpy(L.diagonal(v, offset=off)), ref)
            if dtype is not xp.bool:
                rdt = {"int": xp.int64, "uint": xp.uint64}.get(dtype.kind, dtype)
                np.testing.assert_allclose(to_numpy(L.trace(v, offset=off)),
                                           np.sum(ref.astype(rdt._np), axis=-1), rtol=1e-5)
    if dtype is xp.bool:
        with pytest.raises(TypeError):
            L.trace(x)
    elif dtype.kind == "int":
        assert L.trace(x, dtype=dtype).dtype == dtype
    with pytest.raises(TypeError):
        L.diagonal(x, offset=1.0)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_vector_norm(device, rng, dtype):
    x, a = random_array(rng, (2, 3, 4), dtype, device)
    ar = _ref(a)
    rdt = xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64
    for ord in (2, 1, 0, -1, -2, math.inf, -math.inf, 3, 0.5, -1.5):
        for axis in (None, 1, (0, 2), -1):
            for keepdims in (False, True):
                out = L.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
                ref = np.linalg.vector_norm(ar, axis=axis, keepdims=keepdims, ord=ord)
                assert out.dtype == rdt and out.shape == np.shape(ref)
                _close(out, ref, dtype)
    with pytest.raises(TypeError):
        L.vector_norm(xp.asarray([1, 2], device=device))
    with pytest.raises(TypeError):
        L.vector_norm(x, ord="fro")
    with pytest.raises(ValueError):
        L.vector_norm(x, ord=math.nan)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_matrix_norm(device, rng, dtype):
    x, a = random_array(rng, (2, 3, 4), dtype, device)
    ar = _ref(a)
    rdt = xp.float32 if dtype in (xp.float32, xp.complex64) else xp.float64
    for ord in ("fro", "nuc", 1, 2, math.inf, -1, -2, -math.inf):
        for keepdims in (False, True):
            out = L.matrix_norm(x, keepdims=keepdims, ord=ord)
            ref = np.linalg.matrix_norm(ar, keepdims=keepdims, ord=ord)
            assert out.dtype == rdt and out.shape == ref.shape
            _close(out, ref, dtype)
    for bad in (3, 0, "inf", None, True):
        with pytest.raises(ValueError):
            L.matrix_norm(x, ord=bad)


# ---- empty inputs and rejected inputs ------------------------------------------------------------

def test_empty_inputs(device):
    e = xp.zeros((0, 3, 3), device=device)
    assert L.det(e).shape == (0,) and L.inv(e).shape == (0, 3, 3)
    m0 = xp.zeros((2, 0, 0), device=device)
    np.testing.assert_array_equal(to_numpy(L.det(m0)), [1.0, 1.0])
    s, ld = L.slogdet(m0)
    np.testing.assert_array_equal(to_numpy(s), [1.0, 1.0])
    np.testing.assert_array_equal(to_numpy(ld), [0.0, 0.0])
    w, v = L.eigh(m0)
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    r = xp.zeros((2, 4, 0), device=device)
    u, s, vh = L.svd(r)
    assert u.shape == (2, 4, 4) and s.shape == (2, 0) and vh.shape == (2, 0, 0)
    np.testing.assert_array_equal(to_numpy(u), np.broadcast_to(np.eye(4), (2, 4, 4)))
    q, rr = L.qr(r, mode="complete")
    assert q.shape == (2, 4, 4) and rr.shape == (2, 4, 0)
    assert L.pinv(r).shape == (2, 0, 4)
    np.testing.assert_array_equal(to_numpy(L.matrix_rank(r)), [0, 0])
    np.testing.assert_array_equal(to_numpy(L.matrix_norm(r, ord=2)), [0.0, 0.0])
    assert L.solve(m0, xp.zeros((0,), device=device)).shape == (2, 0)
    np.testing.assert_array_equal(to_numpy(L.vector_norm(xp.zeros((0,), device=device))), 0.0)
    np.testing.assert_array_equal(to_numpy(L.matrix_power(m0, 3)), np.zeros((2, 0, 0)))


@pytest.mark.parametrize("name", ["cholesky", "det", "eigh", "eigvalsh", "inv", "matrix_norm",
                                  "matrix_rank", "pinv", "qr", "slogdet", "svd", "svdvals",
                                  "vector_norm"])
def test_floating_only(device, name):
    x = xp.ones((3, 3), dtype=xp.int32, device=device)
    with pytest.raises(TypeError, match="floating-point"):
        getattr(L, name)(x)
    with pytest.raises(TypeError, match="xp_cuda array"):
        getattr(L, name)(np.ones((3, 3)))


def test_shape_rules(device):
    v = xp.ones((3,), device=device)
    r = xp.ones((2, 3), device=device)
    for name in ("cholesky", "det", "eigh", "eigvalsh", "inv", "slogdet"):
        with pytest.raises(ValueError, match="square"):
            getattr(L, name)(r)
        with pytest.raises(ValueError, match="at least 2"):
            getattr(L, name)(v)
    for name in ("qr", "svd", "svdvals", "pinv", "matrix_rank", "matrix_norm"):
        with pytest.raises(ValueError, match="at least 2"):
            getattr(L, name)(v)
    with pytest.raises(TypeError):
        L.svd(r, full_matrices=1)
    with pytest.raises(TypeError):
        L.cholesky(xp.eye(2, device=device), upper="yes")
