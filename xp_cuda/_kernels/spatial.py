"""Launcher of spatial.cu: k-d tree build, k-nearest-neighbour and fixed-radius searches on CuPy.

Every function takes and returns CuPy arrays (float64 points, C-contiguous) and runs on the
current device; the caller (xp_cuda.spatial) validates inputs and makes the device current.
The pure-Python part (``compile_options``, ``pmode_of``, ``reduce_radius``, ``knn_path``) is
tested without a GPU.
"""
from __future__ import annotations

from typing import Any

import math

import numpy as np

from ._runtime import SOURCE_DIR, device_info, load_kernel, source

__all__ = ["KMAX_LIST", "TREE_MAX_DIM", "BRUTE_MAX_DIM", "compile_options", "pmode_of",
           "reduce_radius", "knn_path", "build", "knn", "ball", "count_hist"]

KMAX_LIST = (1, 2, 4, 8, 16, 32)   # k-best list sizes compiled; larger k: dense path
TREE_MAX_DIM = 8                    # k-NN through the tree up to this dimension ...
BRUTE_MAX_DIM = 64                  # ... tiled brute force above it, up to this one
_THREADS = 256
_KNN_THREADS = 128                  # __launch_bounds__ of kd_knn / BT of kd_brute
_DENSE_ELEMS = 1 << 25              # distance-matrix elements per chunk of the dense path
_NULL = np.uint64(0)                # a null pointer argument


def pmode_of(p: float) -> int:
    """PMODE of spatial.cu for a Minkowski p (1 <= p <= inf)."""
    if p == 1:
        return 1
    if p == 2:
        return 2
    if math.isinf(p):
        return 3
    return 4


def reduce_radius(r, p: float):
    """Radii (NumPy or CuPy array) in the reduced space the kernels compare in: r**p (r*r for
    p=2, r for p=1 and inf). Negative or NaN radii become -1, which matches nothing."""
    xp = _array_module(r)
    bad = (r < 0) | xp.isnan(r)
    rc = xp.where(bad, 0.0, r)
    if p == 2:
        rr = rc * rc
    elif p == 1 or math.isinf(p):
        rr = rc
    else:
        rr = xp.where(xp.isinf(rc), xp.inf, rc ** p)
    return xp.where(bad, -1.0, rr)


def _array_module(a):
    return np if isinstance(a, (np.ndarray, np.generic)) else __import__("cupy")


def compile_options(dim: int, pmode: int, periodic: bool, kmax: int = 8,
                    fmad: bool = False) -> tuple:
    """NVRTC options of one variant. Exact kernels compile with -fmad=false (no contraction of
    a*b+c, so distances round as in SciPy); the brute force allows FMA for speed."""
    return (f"-DDIM={int(dim)}", f"-DPMODE={int(pmode)}", f"-DPERIODIC={int(bool(periodic))}",
            f"-DKMAX={int(kmax)}", f"-fmad={'true' if fmad else 'false'}")


def knn_path(m: int, kk: int) -> str:
    """Which k-NN algorithm serves dimension m and k = kk: 'tree', 'brute' or 'dense'."""
    if kk > KMAX_LIST[-1]:
        return "dense"
    if m <= TREE_MAX_DIM or m > BRUTE_MAX_DIM:
        return "tree"
    return "brute"


def _kmax_for(k: int) -> int:
    return next(b for b in KMAX_LIST if b >= k)


def _kernel(name, opts):
    return load_kernel(source("spatial.cu"), name, opts)


def _blocks(n, threads=_THREADS):
    return (max(1, -(-int(n) // threads)),)


def _ball_dim(m):
    return m if m <= TREE_MAX_DIM else 0


# ---- build -----------------------------------------------------------------------------------

class Tree:
    """Device arrays of a built tree."""

    __slots__ = ("n", "m", "D", "pts", "order", "boxes", "L", "periodic")
    n: int
    m: int
    D: int
    pts: Any
    order: Any
    boxes: Any
    L: Any
    periodic: bool

    @property
    def size(self):
        return (1 << (self.D + 1)) - 1


def depth_for(n: int, leafsize: int) -> int:
    """Levels below the root: the fewest that leave at most leafsize points per leaf."""
    D = 0
    while -(-n // (1 << D)) > leafsize:
        D += 1
    return D


def build(data, leafsize: int, L):
    """Build the tree over ``data`` ((n, m) float64 CuPy, C-contiguous). ``L``: (m,) float64
    CuPy box sizes (0: not periodic) or None."""
    import cupy as cp

    n, m = data.shape
    if n >= 2 ** 31 - 1:
        raise ValueError(f"KDTree on cuda holds fewer than 2**31 points, got {n}")
    D = depth_for(n, leafsize)
    t = Tree()
    t.n, t.m, t.D = n, m, D
    t.periodic = L is not None
    t.L = L if L is not None else cp.zeros(max(m, 1), dtype=cp.float64)
    opts = compile_options(0, 2, False)
    order = cp.arange(n, dtype=cp.int64)
    if n > 0 and D > 0:
        keys_k = _kernel("kd_keys", opts)
        split_k = _kernel("kd_split", opts)
        mins, maxs = data.min(axis=0), data.max(axis=0)
        abox = cp.concatenate([mins, maxs])
        dims = cp.argmax(maxs - mins).astype(cp.int32).reshape(1)
        keys = cp.empty(n, dtype=cp.uint64)
        for lvl in range(D):
            keys_k(_blocks(n), (_THREADS,),
                   (data, order, dims, keys, np.int64(n), np.int32(m), np.int32(lvl)))
            order = order[cp.argsort(keys)]
            if lvl + 1 < D:
                nn = 1 << lvl
                abox_next = cp.empty(2 * nn * 2 * m, dtype=cp.float64)
                dims_next = cp.empty(2 * nn, dtype=cp.int32)
                split_k(_blocks(nn), (_THREADS,),
                        (data, order, dims, abox, abox_next, dims_next, np.int64(n),
                         np.int32(m), np.int32(lvl)))
                abox, dims = abox_next, dims_next
    t.order = order
    t.pts = cp.ascontiguousarray(data[order]) if n > 0 else cp.empty((0, m), dtype=cp.float64)
    boxes = cp.empty(((1 << (D + 1)) - 1) * 2 * m, dtype=cp.float64)
    _kernel("kd_leaf_boxes", opts)(_blocks(1 << D), (_THREADS,),
                                   (t.pts, boxes, np.int64(n), np.int32(m), np.int32(D)))
    merge = _kernel("kd_merge_boxes", opts)
    for lvl in range(D - 1, -1, -1):
        merge(_blocks(1 << lvl), (_THREADS,), (boxes, np.int32(m), np.int32(lvl)))
    t.boxes = boxes
    return t


def node_sums(tree, w_tree):
    """Per-node sums of weights given in tree order."""
    import cupy as cp

    opts = compile_options(0, 2, False)
    sums = cp.empty((1 << (tree.D + 1)) - 1, dtype=cp.float64)
    _kernel("kd_leaf_sums", opts)(_blocks(1 << tree.D), (_THREADS,),
                                  (w_tree, sums, np.int64(tree.n), np.int32(tree.D)))
    merge = _kernel("kd_merge_sums", opts)
    for lvl in range(tree.D - 1, -1, -1):
        merge(_blocks(1 << lvl), (_THREADS,), (sums, np.int32(lvl)))
    return sums


# ---- k nearest neighbours --------------------------------------------------------------------

def _sm_count(cp):
    return device_info(cp).sm_count


def knn(tree, x, kk: int, p: float, ub_red: float, path: str | None = None):
    """The kk nearest neighbours (kk >= 1) of each row of x ((nq, m) float64, wrapped into a
    periodic box already) with reduced distance < ub_red. Returns distances (p-th root taken;
    inf where missing) and caller indices (n where missing), both (nq, kk)."""
    import cupy as cp

    nq, m = x.shape
    n = tree.n
    out_d = cp.empty((nq, kk), dtype=cp.float64)
    out_i = cp.empty((nq, kk), dtype=cp.int64)
    if nq == 0:
        return out_d, out_i
    pm = pmode_of(p)
    path = path or knn_path(m, kk)
    if path == "dense":
        return _knn_dense(tree, x, kk, p, ub_red)
    kmax = _kmax_for(kk)
    if path == "brute":
        opts = compile_options(m, pm, tree.periodic, kmax, fmad=True)
        kern = _kernel("kd_brute", opts)
        bx = -(-nq // _KNN_THREADS)
        tile = 128 if m <= 16 else max(1, 4096 // m)
        # Split the points over grid.y when the queries alone do not fill the GPU.
        target = _sm_count(cp) * 8
        S = max(1, min(-(-target // bx), -(-n // (4 * tile)) if n else 1))
        chunk = -(-max(n, 1) // S)
        chunk = -(-chunk // tile) * tile
        S = max(1, -(-max(n, 1) // chunk))
        pd = out_d if S == 1 else cp.empty((nq * S, kk), dtype=cp.float64)
        pi = out_i if S == 1 else cp.empty((nq * S, kk), dtype=cp.int64)
        kern((bx, S), (_KNN_THREADS,),
             (tree.pts, tree.order, x, np.int64(nq), np.int64(n), np.int32(m), tree.L,
              np.float64(p), np.float64(ub_red), np.int32(kk), np.int64(chunk), pd, pi))
        if S == 1:
            return out_d, out_i
        pd = pd.reshape(nq, S * kk)
        pi = pi.reshape(nq, S * kk)
        sel = cp.argsort(pd, axis=1)[:, :kk]
        return cp.take_along_axis(pd, sel, 1), cp.take_along_axis(pi, sel, 1)
    dim = m if m <= TREE_MAX_DIM else 0
    opts = compile_options(dim, pm, tree.periodic, kmax)
    qperm = None
    if nq >= 16384 and m <= 8 and n > 0:
        qperm = _morton_order(tree, x, opts)
    kern = _kernel("kd_knn", opts)
    kern(_blocks(nq, _KNN_THREADS), (_KNN_THREADS,),
         (tree.pts, tree.boxes, tree.order, x, qperm if qperm is not None else _NULL,
          np.int64(nq), np.int64(n), np.int32(m), np.int32(tree.D), tree.L, np.float64(p),
          np.float64(ub_red), np.int32(kk), out_d, out_i))
    return out_d, out_i


def _morton_order(tree, x, opts):
    import cupy as cp

    nq, m = x.shape
    lo = tree.boxes[:m]
    ext = tree.boxes[m:2 * m] - lo
    bits = min(21, 63 // m)
    scale = cp.where(ext > 0, float(1 << bits) / cp.where(ext > 0, ext, 1.0), 0.0)
    keys = cp.empty(nq, dtype=cp.uint64)
    _kernel("kd_morton", opts)(_blocks(nq), (_THREADS,),
                               (x, np.int64(nq), np.int32(m), lo, scale, np.int32(bits), keys))
    return cp.argsort(keys)


def _knn_dense(tree, x, kk, p, ub_red):
    """k > KMAX: dense distance blocks and a row sort, memory bounded by _DENSE_ELEMS."""
    import cupy as cp

    nq, m = x.shape
    n = tree.n
    out_d = cp.full((nq, kk), cp.inf, dtype=cp.float64)
    out_i = cp.full((nq, kk), n, dtype=cp.int64)
    if n == 0:
        return out_d, out_i
    kern = _kernel("kd_dense", compile_options(0, pmode_of(p), tree.periodic))
    cq = max(1, _DENSE_ELEMS // n)
    kc = min(kk, n)
    for q0 in range(0, nq, cq):
        q1 = min(nq, q0 + cq)
        c = q1 - q0
        blk = cp.empty((c, n), dtype=cp.float64)
        kern(_blocks(c * n), (_THREADS,),
             (tree.pts, x[q0:q1], np.int64(c), np.int64(n), np.int32(m), tree.L,
              np.float64(p), blk))
        sel = cp.argsort(blk, axis=1)[:, :kc]
        dd = cp.take_along_axis(blk, sel, 1)
        ok = dd < ub_red
        out_d[q0:q1, :kc] = cp.where(ok, _final(dd, p), cp.inf)
        out_i[q0:q1, :kc] = cp.where(ok, tree.order[sel], n)
    return out_d, out_i


def _final(d, p):
    import cupy as cp

    if p == 2:
        return cp.sqrt(d)
    if p == 1 or math.isinf(p):
        return d
    return d ** (1.0 / p)


# ---- fixed radius ----------------------------------------------------------------------------

def ball(tree, x, r_red, p, *, qids=None, pairs=False, want_dist=False, want_q=False,
         lengths_only=False):
    """Points of the tree within reduced radius r_red (CuPy, one per query or one for all) of
    each row of x: counted first, then written, so memory follows the number of hits.
    Returns (counts, offsets, j, q, v): per-query counts and offsets (nq + 1) and, for all hits
    grouped by query, caller indices j, query ids q (when want_q) and distances v (when
    want_dist). ``pairs``: keep only j > qid (qids give each query's id)."""
    import cupy as cp

    nq, m = x.shape
    n = tree.n
    counts = cp.zeros(nq, dtype=cp.int64)
    offsets = cp.zeros(nq + 1, dtype=cp.int64)
    empty_i = cp.empty(0, dtype=cp.int64)
    if nq == 0 or n == 0:
        return counts, offsets, empty_i, (empty_i if want_q else None), \
            (cp.empty(0, dtype=cp.float64) if want_dist else None)
    opts = compile_options(_ball_dim(m), pmode_of(p), tree.periodic)
    rstride = 1 if r_red.size == nq and nq > 1 else 0
    args = (tree.pts, tree.boxes, tree.order, x, qids if qids is not None else _NULL,
            np.int64(nq), np.int64(n), np.int32(m), np.int32(tree.D), tree.L, np.float64(p),
            r_red, np.int32(rstride), np.int32(bool(pairs)))
    _kernel("kd_ball_count", opts)(_blocks(nq), (_THREADS,),
                                   args + (np.int32(bool(want_dist)), counts))
    cp.cumsum(counts, out=offsets[1:])
    if lengths_only:
        return counts, offsets, None, None, None
    total = int(offsets[-1])
    out_j = cp.empty(total, dtype=cp.int64)
    out_q = cp.empty(total, dtype=cp.int64) if want_q else None
    out_v = cp.empty(total, dtype=cp.float64) if want_dist else None
    if total:
        _kernel("kd_ball_fill", opts)(_blocks(nq), (_THREADS,),
                                      args + (offsets, out_j, out_q if want_q else _NULL,
                                              out_v if want_dist else _NULL))
    return counts, offsets, out_j, out_q, out_v


def count_hist(tree, x, rr, p, wq=None, wt=None):
    """Histogram over ascending reduced radii rr (CuPy float64, nr) of distances between the
    rows of x and the tree's points; bin b holds rr[b-1] < d <= rr[b]. Weighted (float64)
    when wq or wt (tree order) is given, else int64 counts."""
    import cupy as cp

    nq, m = x.shape
    nr = int(rr.size)
    weighted = wq is not None or wt is not None
    hist = cp.zeros(nr, dtype=cp.float64 if weighted else cp.uint64)
    if nq == 0 or tree.n == 0 or nr == 0:
        return hist if weighted else hist.astype(cp.int64)
    wsum = node_sums(tree, wt) if wt is not None else None
    opts = compile_options(_ball_dim(m), pmode_of(p), tree.periodic)
    _kernel("kd_count_hist", opts)(
        _blocks(nq), (_THREADS,),
        (tree.pts, tree.boxes, x, np.int64(nq), np.int64(tree.n), np.int32(m),
         np.int32(tree.D), tree.L, np.float64(p), rr, np.int32(nr),
         wq if wq is not None else _NULL, wt if wt is not None else _NULL,
         wsum if wsum is not None else _NULL, _NULL if weighted else hist,
         hist if weighted else _NULL))
    return hist if weighted else hist.astype(cp.int64)
