"""xp_cuda.spatial.KDTree against scipy.spatial.KDTree, on cpu (SciPy inside) and cuda:0
(our kernels), plus NVRTC compilation of every kernel variant the launcher can ask for."""
import ast
import inspect
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._kernels import spatial as K
from helpers import to_numpy

scipy_spatial = pytest.importorskip("scipy.spatial")
from xp_cuda.spatial import KDTree  # noqa: E402

INF = math.inf


def tree(data, device, **kw):
    return KDTree(xp.asarray(np.asarray(data), device=device), **kw)


def check_knn(t, ref, q, device, k=1, **kw):
    d, i = t.query(xp.asarray(q, device=device), k=k, **kw)
    rd, ri = ref.query(q, k=k, **kw)
    rd, ri = np.asarray(rd), np.asarray(ri)
    assert d.device == device and i.device == device
    assert d.dtype == xp.float64 and i.dtype == xp.int64
    d, i = to_numpy(d), to_numpy(i)
    assert d.shape == rd.shape and i.shape == ri.shape
    np.testing.assert_allclose(d, rd, rtol=1e-12, atol=0)
    # Same neighbours up to ties: where indices differ, ours is at the same distance.
    fin = np.isfinite(rd)
    assert (i[~fin] == ref.n).all()
    m = q.shape[-1]
    qf = q.reshape(-1, m)
    i2, d2 = i.reshape(len(qf), -1), d.reshape(len(qf), -1)
    ri2 = ri.reshape(len(qf), -1)
    for a, c in zip(*np.nonzero((i2 != ri2) & np.isfinite(d2))):
        diff = np.abs(ref.data[i2[a, c]] - qf[a])
        if ref.boxsize is not None:
            L = ref.boxsize
            diff = np.where(L > 0, np.minimum(diff % np.where(L > 0, L, 1),
                                              L - diff % np.where(L > 0, L, 1)), diff)
        assert np.linalg.norm(diff, ord=kw.get("p", 2)) == pytest.approx(d2[a, c], rel=1e-9)
    return d, i


# ---- k nearest ---------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [1, 2, 3, 5, 16, 32])
@pytest.mark.parametrize("p", [1, 2, 3, INF])
def test_query_random(device, rng, m, p):
    data = rng.random((700, m))
    q = rng.random((123, m))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    for k in (1, 4, [1, 3], [2]):
        check_knn(t, ref, q, device, k=k, p=p)
    check_knn(t, ref, q, device, k=3, p=p, distance_upper_bound=0.15 * m ** 0.5)


def test_query_shapes_and_scalars(device, rng):
    data = rng.random((100, 3))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    d, i = t.query(xp.asarray(data[0] + 0.01, device=device))
    assert d.shape == () and i.shape == () and isinstance(d, type(xp.asarray(1.0)))
    assert float(d) == pytest.approx(ref.query(data[0] + 0.01)[0], rel=1e-12)
    d, i = t.query(xp.asarray(data[0], device=device), k=[1])
    assert d.shape == (1,)
    q = rng.random((2, 5, 3))
    check_knn(t, ref, q, device, k=2)
    check_knn(t, ref, q, device, k=1)
    d, i = t.query(xp.asarray(np.zeros((0, 3)), device=device), k=2)
    assert d.shape == (0, 2) and i.shape == (0, 2)


def test_query_k_beyond_n_and_large_k(device, rng):
    data = rng.random((30, 2))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    q = rng.random((7, 2))
    check_knn(t, ref, q, device, k=40)
    check_knn(t, ref, q, device, k=[1, 35])
    data = rng.random((300, 2))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    check_knn(t, ref, q, device, k=50)  # beyond the k-best lists: dense path on cuda
    check_knn(t, ref, q, device, k=50, distance_upper_bound=0.2)


def test_degenerate_data(device, rng):
    # duplicates, an integer grid (many ties), one point, all points equal
    grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), np.arange(4)), -1).reshape(-1, 3)
    for data in (np.repeat(rng.random((20, 2)), 5, axis=0), grid.astype(np.int16),
                 np.array([[1.0, 2.0]]), np.ones((40, 2))):
        t, ref = tree(data, device, leafsize=3), scipy_spatial.KDTree(data, leafsize=3)
        q = np.concatenate([data[:5].astype(np.float64) + 0.5, data[:5].astype(np.float64)])
        for p in (1, 2, INF):
            check_knn(t, ref, q, device, k=5, p=p)
            for r in (1.0, 1.5):
                got = t.query_ball_point(xp.asarray(q, device=device), r, p=p)
                want = ref.query_ball_point(q, r, p=p)
                assert [sorted(a) for a in got] == [sorted(a) for a in want]
            assert int(t.count_neighbors(t, 1.0, p=p)) == ref.count_neighbors(ref, 1.0, p=p)


def test_empty_tree(device):
    t = tree(np.zeros((0, 3)), device)
    assert t.n == 0 and t.m == 3 and t.size == 1
    d, i = t.query(xp.asarray([[0.5, 0.5, 0.5]], device=device), k=3)
    assert np.isinf(to_numpy(d)).all() and (to_numpy(i) == 0).all()
    assert t.query_ball_point(xp.asarray([0.5, 0.5, 0.5], device=device), 1.0) == []
    assert t.query_pairs(1.0) == set()
    assert int(t.count_neighbors(t, 1.0)) == 0
    assert t.sparse_distance_matrix(t, 1.0, output_type="dict") == {}


def test_periodic(device, rng):
    data = rng.random((400, 3)) * [1.0, 2.0, 5.0]
    box = [1.0, 2.0, 0.0]
    t, ref = tree(data, device, boxsize=box), scipy_spatial.KDTree(data, boxsize=box)
    assert to_numpy(t.boxsize).tolist() == box
    q = rng.random((60, 3)) * [1.0, 2.0, 5.0]
    for p in (1, 2, 3, INF):
        check_knn(t, ref, q, device, k=4, p=p)
        got = t.query_ball_point(xp.asarray(q, device=device), 0.3, p=p)
        assert [sorted(a) for a in got] == list(ref.query_ball_point(q, 0.3, p=p))
        assert t.query_pairs(0.2, p=p) == ref.query_pairs(0.2, p=p)
    # query points outside the box are wrapped into it, as SciPy does
    check_knn(t, ref, q + [3.0, -4.0, 0.0], device, k=2)


def test_input_kinds(device, rng):
    base = rng.integers(-50, 50, size=(64, 3))
    ref = scipy_spatial.KDTree(base.astype(np.float64))
    q = rng.random((9, 3)) * 20
    for data in (base.astype(np.float16), base.astype(np.int8), base.astype(np.int16),
                 base.astype(np.float32), base.tolist(),
                 xp.asarray(base, device=device)):
        t = KDTree(data, device=device)
        assert t.data.dtype == xp.float64 and t.data.shape == (64, 3)
        check_knn(t, ref, q, device, k=3)
    # the tree's device follows an xp_cuda array's
    t = KDTree(xp.asarray(base, device=device))
    assert t.device == device and t.mins.device == device
    np.testing.assert_array_equal(to_numpy(t.mins), base.min(0))
    np.testing.assert_array_equal(to_numpy(t.maxes), base.max(0))
    # queries from a list and from NumPy
    d, _ = t.query(q.tolist(), k=2)
    np.testing.assert_allclose(to_numpy(d), ref.query(q, k=2)[0], rtol=1e-12)


def test_torch_and_cupy_inputs(device, rng):
    base = rng.random((50, 2))
    ref = scipy_spatial.KDTree(base)
    if device.kind == "cuda":
        import cupy as cp
        t = KDTree(cp.asarray(base))
        assert t.device == device
        np.testing.assert_allclose(to_numpy(t.query(cp.asarray(base[:3]))[0]),
                                   ref.query(base[:3])[0], rtol=1e-12)
    try:
        import torch
    except Exception:
        return
    tt = torch.tensor(base, dtype=torch.float16)
    if device.kind == "cuda":
        tt = tt.cuda()
    t = KDTree(tt, device=device)
    ref16 = scipy_spatial.KDTree(base.astype(np.float16).astype(np.float64))
    np.testing.assert_allclose(to_numpy(t.query(base[:4], k=2)[0]), ref16.query(base[:4], k=2)[0],
                               rtol=1e-12)


def test_bigger_and_high_dim(device, rng):
    # enough queries for the Morton-ordered tree walk, and the brute-force path (16-D)
    data = rng.random((20000, 3))
    q = rng.random((20000, 3))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    check_knn(t, ref, q, device, k=8)
    data = rng.random((3000, 16))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    check_knn(t, ref, rng.random((40, 16)), device, k=8)    # few queries: points split
    check_knn(t, ref, rng.random((700, 16)), device, k=[1, 8])
    data = rng.random((500, 70))                              # m > 64: tree, run-time m
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    check_knn(t, ref, rng.random((30, 70)), device, k=3)


# ---- fixed radius --------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [1, 2, 3, INF])
def test_ball_point(device, rng, p):
    data = rng.random((600, 3))
    t, ref = tree(data, device), scipy_spatial.KDTree(data)
    q = rng.random((4, 25, 3))
    got = t.query_ball_point(xp.asarray(q, device=device), 0.2, p=p)
    want = ref.query_ball_point(q, 0.2, p=p)
    assert isinstance(got, np.ndarray) and got.dtype == object and got.shape == (4, 25)
    assert got.tolist() == want.tolist()   # sorted, for arrays of points
    r = rng.random((4, 25)) * 0.3
    got = t.query_ball_point(xp.asarray(q, device=device), xp.asarray(r, device=device), p=p)
    assert got.tolist() == ref.query_ball_point(q, r, p=p).tolist()
    n = t.query_ball_point(xp.asarray(q, device=device), 0.2, p=p, return_length=True)
    assert n.dtype == xp.int64 and n.device == device
    np.testing.assert_array_equal(to_numpy(n), ref.query_ball_point(q, 0.2, p=p,
                                                                    return_length=True))
    one = t.query_ball_point(q[0, 0], 0.25, p=p)
    assert isinstance(one, list)
    assert sorted(one) == sorted(ref.query_ball_point(q[0, 0], 0.25, p=p))
    assert sorted(t.query_ball_point(q[0, 0], 0.25, p=p, return_sorted=False)) == sorted(one)
    assert t.query_ball_point(q[0, 0], 0.25, p=p, return_sorted=True) == sorted(one)
    ln = t.query_ball_point(q[0, 0], 0.25, p=p, return_length=True)
    assert ln.shape == () and int(ln) == len(one)
    # a radius covering everything, and radii that match nothing
    assert len(t.query_ball_point(q[0, 0], INF)) == 600
    assert t.query_ball_point(q[0, 0], -1.0) == [] and t.query_ball_point(q[0, 0], math.nan) == []


def test_ball_tree_pairs_sparse(device, rng):
    a, b = rng.random((300, 2)), rng.random((200, 2))
    ta, tb = tree(a, device), tree(b, device)
    ra, rb = scipy_spatial.KDTree(a), scipy_spatial.KDTree(b)
    for p in (1, 2, INF):
        got = ta.query_ball_tree(tb, 0.1, p=p)
        assert isinstance(got, list) and len(got) == 300
        assert [sorted(x) for x in got] == [sorted(x) for x in ra.query_ball_tree(rb, 0.1, p=p)]
        assert ta.query_pairs(0.08, p=p) == ra.query_pairs(0.08, p=p)
        arr = ta.query_pairs(0.08, p=p, output_type="ndarray")
        assert arr.dtype == xp.int64 and arr.device == device
        assert set(map(tuple, to_numpy(arr).tolist())) == ra.query_pairs(0.08, p=p)
        got = ta.sparse_distance_matrix(tb, 0.1, p=p, output_type="dict")
        want = ra.sparse_distance_matrix(rb, 0.1, p=p, output_type="dict")
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-12)
    dok = ta.sparse_distance_matrix(tb, 0.1)
    want = ra.sparse_distance_matrix(rb, 0.1)
    assert type(dok) is type(want) and dok.shape == want.shape and dok.nnz == want.nnz
    assert abs(dok - want).max() < 1e-12
    coo = ta.sparse_distance_matrix(tb, 0.1, output_type="coo_matrix")
    assert coo.format == "coo" and coo.nnz == want.nnz
    nd = ta.sparse_distance_matrix(tb, 0.1, output_type="ndarray")
    wnd = ra.sparse_distance_matrix(rb, 0.1, output_type="ndarray")
    assert nd.dtype == wnd.dtype and len(nd) == len(wnd)
    assert sorted(zip(nd["i"].tolist(), nd["j"].tolist())) == \
        sorted(zip(wnd["i"].tolist(), wnd["j"].tolist()))


def test_count_neighbors(device, rng):
    a, b = rng.random((400, 3)), rng.random((250, 3))
    ta, tb = tree(a, device), tree(b, device)
    ra, rb = scipy_spatial.KDTree(a), scipy_spatial.KDTree(b)
    r = np.array([0.05, 0.3, 0.1, 0.2, 0.2, INF, 0.0])
    for p in (1, 2, 3, INF):
        got = ta.count_neighbors(tb, r, p=p)
        assert got.dtype == xp.int64 and got.shape == (7,) and got.device == device
        np.testing.assert_array_equal(to_numpy(got), ra.count_neighbors(rb, r, p=p))
        s = ta.count_neighbors(tb, 0.2, p=p)
        assert s.shape == () and int(s) == ra.count_neighbors(rb, 0.2, p=p)
    rs = np.sort(r[:-2])
    np.testing.assert_array_equal(to_numpy(ta.count_neighbors(tb, rs, cumulative=False)),
                                  ra.count_neighbors(rb, rs, cumulative=False))
    wa, wb = rng.random(400), rng.random(250)
    for w in ((wa, wb), (wa, None), (None, wb)):
        got = ta.count_neighbors(tb, rs, weights=w)
        assert got.dtype == xp.float64
        np.testing.assert_allclose(to_numpy(got), ra.count_neighbors(rb, rs, weights=w),
                                   rtol=1e-12)
        got = ta.count_neighbors(tb, rs, weights=w, cumulative=False)
        np.testing.assert_allclose(to_numpy(got), ra.count_neighbors(rb, rs, weights=w,
                                                                     cumulative=False),
                                   rtol=1e-12, atol=1e-9)
    got = ta.count_neighbors(ta, 0.2, weights=wa)
    assert float(got) == pytest.approx(ra.count_neighbors(ra, 0.2, weights=wa), rel=1e-12)
    with pytest.raises(ValueError, match="Two different trees"):
        ta.count_neighbors(tb, 0.2, weights=wa)
    with pytest.raises(ValueError, match="non-decreasing"):
        ta.count_neighbors(tb, [0.2, 0.1], cumulative=False)


# ---- errors ----------------------------------------------------------------------------------------

def test_errors(device, rng):
    d2 = rng.random((10, 2))
    with pytest.raises(ValueError, match="shape"):
        KDTree(xp.asarray(rng.random(10), device=device))
    with pytest.raises(ValueError, match="finite"):
        KDTree(xp.asarray([[1.0, math.nan]], device=device))
    with pytest.raises(ValueError, match="finite"):
        KDTree([[1.0, math.inf]], device=device)
    with pytest.raises(TypeError, match="complex"):
        KDTree(xp.asarray([[1j, 2.0]], device=device))
    with pytest.raises(TypeError, match="complex"):
        KDTree(np.array([[1j, 2.0]]), device=device)
    with pytest.raises(ValueError, match="leafsize"):
        KDTree(d2, leafsize=0, device=device)
    with pytest.raises(ValueError, match="greater than the size"):
        KDTree(d2 * 3, boxsize=1.0, device=device)
    with pytest.raises(ValueError, match="Negative"):
        KDTree(d2 - 0.5, boxsize=[1.0, 0.0], device=device)
    KDTree(d2 - 0.5, boxsize=[0.0, 0.0], device=device)  # 0: not periodic
    t = KDTree(d2, device=device)
    with pytest.raises(ValueError, match="p-norms"):
        t.query(d2, p=0.5)
    with pytest.raises(ValueError, match="length 2"):
        t.query(rng.random((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        t.query([math.nan, 0.5])
    with pytest.raises(ValueError):
        t.query(d2, k=0)
    with pytest.raises(ValueError, match="workers"):
        t.query(d2, workers=0)
    with pytest.raises(ValueError, match="output type"):
        t.query_pairs(0.1, output_type="list")
    with pytest.raises(ValueError, match="output type"):
        t.sparse_distance_matrix(t, 0.1, output_type="csr")
    with pytest.raises(ValueError, match="dimensionality"):
        t.count_neighbors(KDTree(rng.random((4, 3)), device=device), 0.1)
    with pytest.raises(TypeError):
        t.query_ball_tree(scipy_spatial.KDTree(d2), 0.1)
    with pytest.raises(ValueError, match="r must be"):
        t.count_neighbors(t, [[0.1]])
    # the upper bound is strict, and a negative one matches nothing
    d, i = t.query(d2[:1], k=1, distance_upper_bound=0.0)
    assert math.isinf(float(d[0])) and int(i[0]) == 10
    d, i = t.query(d2[:1], k=1, distance_upper_bound=-1.0)
    assert int(i[0]) == 10


def test_attributes(device, rng):
    data = rng.random((37, 4))
    t, ref = tree(data, device, leafsize=5), scipy_spatial.KDTree(data, leafsize=5)
    assert (t.n, t.m, t.leafsize) == (37, 4, 5)
    assert t.boxsize is None and t.size >= 1
    np.testing.assert_array_equal(to_numpy(t.data), data)
    np.testing.assert_array_equal(to_numpy(t.mins), ref.mins)
    np.testing.assert_array_equal(to_numpy(t.maxes), ref.maxes)


# ---- one facade, two engines (no GPU needed) ----------------------------------------------------

SPATIAL = Path(K.__file__).resolve().parent.parent / "spatial"
ENGINES = ("CpuEngine", "CudaEngine")


def _device_decisions(src):
    """(line, what) for each place where code decides by device: a comparison with the cpu
    device, a device kind or a device name; an import inside a function; an engine class named
    inside a function. Dtype kinds (``x.dtype.kind``) are data, not devices."""
    def names_a_device(e):
        if isinstance(e, ast.Name) and e.id == "CPU" or \
                isinstance(e, ast.Attribute) and e.attr == "CPU":
            return True
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            return e.value in ("cpu", "cuda") or e.value.startswith("cuda:")
        return isinstance(e, ast.Attribute) and e.attr == "kind" and not (
            isinstance(e.value, ast.Attribute) and e.value.attr == "dtype")

    found = set()
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                names_a_device(e) for e in [node.left, *node.comparators]):
            found.add((node.lineno, "compares with a device"))
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.add((node.lineno, "imports inside a function"))
            elif isinstance(node, ast.Name) and node.id in ENGINES:
                found.add((node.lineno, "names an engine"))
    return sorted(found)


def test_the_device_checker_catches_what_it_names():
    flagged = {"def f(dev):\n    if dev == CPU:\n        pass\n": "compares with a device",
               "def f(x):\n    return x.device.kind == 'cuda'\n": "compares with a device",
               "def f(x):\n    return x.device is not _d.CPU\n": "compares with a device",
               "def f(x):\n    return str(x.device) != 'cpu'\n": "compares with a device",
               "def f():\n    from .._kernels import spatial as K\n": "imports inside a function",
               "def f(self):\n    return isinstance(self._engine, CudaEngine)\n":
                   "names an engine"}
    for src, what in flagged.items():
        assert [w for _, w in _device_decisions(src)] == [what], src
    assert _device_decisions("def f(a, b):\n    return a.dtype.kind == 'f' and a.device == b\n") \
        == []


def test_the_facade_does_not_decide_by_device():
    """_kdtree.py holds the API, the checks and the shaping common to both devices; the one
    device decision is the engine table, read once, in __init__."""
    src = (SPATIAL / "_kdtree.py").read_text(encoding="utf-8")
    problems = _device_decisions(src)
    assert not problems, "\n".join(f"_kdtree.py:{line} {what}" for line, what in problems)
    readers = {fn.name for fn in ast.walk(ast.parse(src)) if isinstance(fn, ast.FunctionDef)
               and any(isinstance(n, ast.Name) and n.id == "_ENGINES" for n in ast.walk(fn))}
    assert readers == {"__init__"}
    # the cuda engine imports its kernels at the top, not per call
    cuda = [(line, what) for line, what in
            _device_decisions((SPATIAL / "_engine_cuda.py").read_text(encoding="utf-8"))
            if what == "imports inside a function"]
    assert not cuda, cuda


def _interface(cls):
    """Public name -> signature (methods) or 'attribute' (slots)."""
    return {name: str(inspect.signature(v)) if callable(v) else "attribute"
            for name in dir(cls) if not name.startswith("_")
            for v in [getattr(cls, name)]}


def test_engines_offer_one_interface():
    from xp_cuda._devices import Device
    from xp_cuda.spatial import _kdtree
    from xp_cuda.spatial._engine_cpu import CpuEngine
    from xp_cuda.spatial._engine_cuda import CudaEngine
    cpu, cuda = _interface(CpuEngine), _interface(CudaEngine)
    assert cpu == cuda
    assert set(cpu) == {"build", "query", "ball_point", "ball_tree", "pairs", "count_neighbors",
                        "sparse_distance_matrix", "n", "size"}
    assert _kdtree._ENGINES == {Device("cpu").kind: CpuEngine, Device("cuda", 0).kind: CudaEngine}
    # the facade asks its engines for nothing else
    used = {n.attr for n in ast.walk(ast.parse(inspect.getsource(_kdtree)))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "_engine"}
    assert used and used <= set(cpu), used - set(cpu)


def test_importing_spatial_imports_neither_cupy_nor_scipy():
    # The facade imports both engines at its top: that must stay cheap and work without CuPy.
    code = ("import sys, xp_cuda.spatial; "
            "print(sorted(m for m in ('cupy', 'scipy') if m in sys.modules))")
    env = dict(os.environ, PYTHONPATH=str(SPATIAL.parent.parent))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# ---- launcher planning and NVRTC (no GPU needed) -------------------------------------------------

def test_depth_and_paths():
    for n, ls in ((0, 10), (1, 1), (10, 10), (11, 10), (1000, 7), (1_000_000, 10), (3, 1)):
        D = K.depth_for(n, ls)
        assert -(-n // (1 << D)) <= ls and (D == 0 or -(-n // (1 << (D - 1))) > ls)
    assert K.knn_path(3, 8) == "tree" and K.knn_path(16, 8) == "brute"
    assert K.knn_path(100, 8) == "tree" and K.knn_path(3, 33) == "dense"
    r = np.array([0.5, -1.0, math.nan, INF, 2.0])
    np.testing.assert_array_equal(K.reduce_radius(r, 2), [0.25, -1, -1, INF, 4.0])
    np.testing.assert_array_equal(K.reduce_radius(r, INF), [0.5, -1, -1, INF, 2.0])
    np.testing.assert_allclose(K.reduce_radius(r, 3), [0.125, -1, -1, INF, 8.0])


from helpers import nvrtc_missing as _nvrtc_reason  # noqa: E402  (one skip reason for compile tests)


def _variants():
    """The option sets the launcher produces, each value of every axis at least once (all p
    modes crossed with periodicity at the tree's kmax, k-best sizes at one p mode, every
    compile-time dimension at p=2) so CI proves each compiles."""
    out = set()
    for pm in (1, 2, 3, 4):
        for per in (False, True):
            out.add(K.compile_options(0, pm, per, 8))
            out.add(K.compile_options(16, pm, per, 8, fmad=True))
    for kmax in K.KMAX_LIST:
        out.add(K.compile_options(3, 2, False, kmax))
        out.add(K.compile_options(16, 2, False, kmax, fmad=True))
    for dim in list(range(1, K.TREE_MAX_DIM + 1)) + [9, 12, 24, 48, K.BRUTE_MAX_DIM]:
        out.add(K.compile_options(dim, 2, False, 8, fmad=dim > K.TREE_MAX_DIM))
    return sorted(out)


@pytest.mark.skipif(_nvrtc_reason() is not None, reason=_nvrtc_reason() or "")
@pytest.mark.parametrize("opts", _variants(), ids=lambda o: ",".join(x.split("=")[1] for x in o))
def test_nvrtc_variants_compile(opts):
    from xp_cuda._kernels import nvrtc_compile
    src = (K.SOURCE_DIR / "spatial.cu").read_text()
    ptx = nvrtc_compile(src, "spatial.cu", options=opts)
    for name in ("kd_keys", "kd_knn", "kd_brute", "kd_ball_count", "kd_ball_fill",
                 "kd_count_hist", "kd_dense"):
        assert f".entry {name}(" in ptx
