"""KDTree: scipy.spatial.KDTree's API on xp_cuda devices (CUDA kernels on cuda, SciPy on cpu)."""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

import xp_cuda
from .._array import Array, _wrap
from .._backends import backend
from .._devices import CPU, Device, check_device
from ._foreign import bring, home_device
from ._sparse import SPARSE_TYPES, scipy_sparse, sparse_out

__all__ = ["KDTree"]


def _scipy_kdtree_class():
    try:
        from scipy.spatial import KDTree as SciPyKDTree
    except ImportError:
        raise ImportError("KDTree on the cpu device delegates to SciPy, which is not installed: "
                          "pip install scipy (or build the tree on a cuda device)") from None
    return SciPyKDTree


def _as_int(v, what: str) -> int:
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real) and float(v).is_integer():
        return int(v)
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {v!r}") from None


def _as_float(v, what: str) -> float:
    if isinstance(v, Array):
        v = v._data
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a real number, got {v!r}") from None
    return f


def _check_p(p) -> float:
    p = _as_float(p, "p")
    if not p >= 1:
        raise ValueError(f"Only p-norms with 1<=p<=infinity permitted (got p={p})")
    return p


def _check_eps(eps) -> float:
    eps = _as_float(eps, "eps")
    if not eps >= 0:
        raise ValueError(f"eps must be a non-negative number (got {eps})")
    return eps


def _check_workers(workers) -> int:
    w = _as_int(workers, "workers")
    if w == 0 or w < -1:
        raise ValueError(f"Invalid number of workers {w}, must be -1 or > 0")
    return w


def _check_k(k):
    """(ranks, keep): 1-based ranks wanted and whether k was a sequence (never squeezed)."""
    if isinstance(k, Array):
        k = k._data.tolist() if k.device == CPU else k._data.get().tolist()
    if isinstance(k, (np.ndarray,)):
        k = k.tolist()
    if isinstance(k, (list, tuple)):
        if len(k) == 0:
            raise ValueError("k must name at least one neighbour rank")
        ranks = [_as_int(v, "each rank in k") for v in k]
        seq = True
    else:
        ranks = list(range(1, _as_int(k, "k") + 1))
        seq = False
        if not ranks:
            raise ValueError(f"k must be at least 1, got {k!r}")
    if min(ranks) < 1:
        raise ValueError(f"neighbour ranks in k start at 1, got {k!r}")
    return ranks, seq


# ---- the tree --------------------------------------------------------------------------------

class KDTree:
    """kd-tree for quick nearest-neighbour lookup, with ``scipy.spatial.KDTree``'s API.

    ``KDTree(data, leafsize=10, compact_nodes=True, copy_data=False, balanced_tree=True,
    boxsize=None, *, device=None)``

    ``data`` is any array the namespace takes in (xp_cuda, NumPy, CuPy, torch through DLPack,
    nested lists) of any real dtype; it is computed in float64 as SciPy does. The tree lives on
    ``device`` when given, else on the input's device when it is an xp_cuda array or a CUDA
    array (CuPy, torch), else on the default device (``cuda:0`` when a GPU is usable). Query
    points are moved to the tree's device; results are xp_cuda arrays on it (0-d for a single
    point), except ragged results, which keep SciPy's types (lists, object arrays of lists,
    sets, dicts, SciPy sparse matrices, a structured NumPy array for
    ``sparse_distance_matrix(output_type='ndarray')``).

    On ``cpu`` every call delegates to ``scipy.spatial.KDTree`` (SciPy must be installed).
    On ``cuda`` everything runs in our kernels (xp_cuda/_kernels/spatial.cu), in float64:

    * build: a balanced implicit k-d tree, made level by level with one radix sort per level
      (key = node index, then the split coordinate; split on the widest side of the node), with
      leaves of at most ``leafsize`` points and tight bounding boxes on every node.
      ``compact_nodes`` and ``balanced_tree`` are accepted for compatibility: the cuda tree is
      always balanced with tight boxes.
    * ``query`` (k nearest): for dimension m <= 8 (and m > 64) one query per thread walks the
      tree depth-first with a k-best list in registers (queries sorted along a Morton curve
      first); for 8 < m <= 64, where trees stop pruning, an exact tiled brute force (points
      streamed through shared memory, per-query k-best lists, the points split over blocks when
      queries are few). k up to 32 uses these; a larger k takes a dense path (distance blocks
      of bounded size and a row sort). Neighbours are exact, which meets ``eps``'s guarantee.
    * ``query_ball_point``, ``query_ball_tree``, ``query_pairs``, ``sparse_distance_matrix``:
      one query per thread counts its hits, then a second pass writes them at their offsets,
      so memory grows with the number of hits, never with queries x points.
      ``count_neighbors``: one walk per point of ``other`` over ``self``'s tree, histogramming
      pair distances over the radii (whole nodes at once when they fall into one bin).

    Differences from SciPy, on every device: p < 1 and eps < 0 raise ValueError; a negative or
    NaN radius (or ``distance_upper_bound``) matches nothing (SciPy squares it for p=2); a
    negative or NaN ``boxsize`` raises ValueError (inf or 0: that dimension is not periodic);
    query points of a periodic tree are wrapped into the box, as SciPy's ``query`` does.
    """

    def __init__(self, data, leafsize=10, compact_nodes=True, copy_data=False,
                 balanced_tree=True, boxsize=None, *, device=None):
        leafsize = _as_int(leafsize, "leafsize")
        if leafsize < 1:
            raise ValueError("leafsize must be at least 1")
        dev = home_device(data) if device is None else check_device(device, "KDTree")
        nat = bring(data, dev, "data")
        if nat.ndim != 2:
            raise ValueError(f"data must be of shape (n, m), where there are n points of "
                             f"dimension m; got shape {tuple(nat.shape)}")
        n, m = (int(s) for s in nat.shape)
        if m == 0:
            raise ValueError("data must have at least one dimension (m >= 1); got shape "
                             f"{(n, m)}")
        b = backend(dev)
        xp = b.xp
        with b.ctx():
            if copy_data:
                nat = xp.array(nat, dtype=xp.float64, order="C", copy=True)
            else:
                nat = xp.ascontiguousarray(nat)
            if n and not bool(xp.isfinite(nat).all()):
                raise ValueError("data must be finite, check for nan or inf values")
            box = self._check_boxsize(boxsize, m)
            if box is not None:
                per = (box > 0) & np.isfinite(box)
                if per.any() and n:
                    pi = np.nonzero(per)[0]
                    sub = nat[:, xp.asarray(pi)] if dev != CPU else nat[:, pi]
                    if bool((sub >= xp.asarray(box[pi])).any()):
                        raise ValueError("Some input data are greater than the size of the "
                                         "periodic box.")
                    if bool((sub < 0).any()):
                        raise ValueError("Negative input data are outside of the periodic "
                                         "box.")
            if n:
                mins, maxes = xp.amin(nat, axis=0), xp.amax(nat, axis=0)
            else:
                mins, maxes = xp.zeros(m, dtype=xp.float64), xp.zeros(m, dtype=xp.float64)
        self._device = dev
        self._nat = nat
        self.data = _wrap(nat, dev)
        self.n, self.m = n, m
        self.leafsize = leafsize
        self.mins, self.maxes = _wrap(mins, dev), _wrap(maxes, dev)
        self._box = box
        self._L = None if box is None else np.where((box > 0) & np.isfinite(box), box, 0.0)
        self.boxsize = None if box is None else xp_cuda.asarray(box.copy(), device=dev)
        if dev == CPU:
            self._sp = _scipy_kdtree_class()(nat, leafsize=leafsize, compact_nodes=compact_nodes,
                                             copy_data=False, balanced_tree=balanced_tree,
                                             boxsize=box)
            self.size = int(self._sp.size)
            self._tree = None
        else:
            from .._kernels import spatial as K
            self._sp = None
            with b.ctx():
                Ld = None if self._L is None else xp.asarray(self._L)
                self._tree = K.build(nat, leafsize, Ld)
            self.size = self._tree.size

    @staticmethod
    def _check_boxsize(boxsize, m):
        if boxsize is None:
            return None
        if isinstance(boxsize, Array):
            boxsize = boxsize._data if boxsize.device == CPU else boxsize._data.get()
        try:
            box = np.array(boxsize, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"boxsize must be a real number or a sequence of {m} of them, got "
                            f"{boxsize!r}") from None
        try:
            box = np.broadcast_to(box, (m,)).copy()
        except ValueError:
            raise ValueError(f"boxsize of shape {box.shape} does not fit data of dimension "
                             f"{m}") from None
        if (np.isnan(box) | (box < 0)).any():
            raise ValueError(f"boxsize must be >= 0 (0 or inf: not periodic), got {box}")
        return box

    @property
    def device(self) -> Device:
        return self._device

    def __repr__(self):
        return (f"KDTree(n={self.n}, m={self.m}, leafsize={self.leafsize}, "
                f"device={self._device}{'' if self._box is None else ', periodic'})")

    # ---- helpers -------------------------------------------------------------------------
    def _ctx(self):
        return backend(self._device).ctx()

    def _xp(self):
        return backend(self._device).xp

    def _queries(self, x, what="x"):
        """x as (nq, m) float64 native rows on the tree's device, its batch shape, and for a
        periodic cuda tree the rows wrapped into the box."""
        nat = bring(x, self._device, what)
        xp = self._xp()
        with self._ctx():
            if nat.ndim == 0 or nat.shape[-1] != self.m:
                raise ValueError(f"{what} must consist of vectors of length {self.m} but has "
                                 f"shape {tuple(nat.shape)}")
            batch = tuple(int(s) for s in nat.shape[:-1])
            X = xp.ascontiguousarray(nat.reshape(-1, self.m))
            if X.size and not bool(xp.isfinite(X).all()):
                raise ValueError(f"'{what}' must be finite, check for nan or inf values")
            if self._L is not None and self._tree is not None and X.size:
                X = self._wrap_box(X)
        return X, batch

    def _wrap_box(self, X):
        # SciPy's wrap_position: x - floor(x / L) L, then pulled into [0, L).
        cp = self._xp()
        L = cp.asarray(self._L)
        per = L > 0
        Ls = cp.where(per, L, 1.0)
        w = X - cp.floor(X / Ls) * Ls
        w = cp.where(w >= Ls, w - Ls, w)
        w = cp.where(w < 0, w + Ls, w)
        return cp.ascontiguousarray(cp.where(per, w, X))

    def _tree_points(self):
        """This tree's points as queries: (tree-order points, their caller indices)."""
        return self._tree.pts, self._tree.order

    def _other(self, other, fname):
        if not isinstance(other, KDTree):
            raise TypeError(f"{fname}: other must be an xp_cuda.spatial.KDTree, got "
                            f"{type(other).__name__}")
        if other.m != self.m:
            raise ValueError(f"Trees passed to {fname} have different dimensionality")
        if other.device != self.device:
            raise ValueError(f"{fname}: the trees live on different devices ({self.device} and "
                             f"{other.device}); build both on one device")
        return other

    def _radius_bad(self, r):
        return np.isnan(r) | (r < 0)

    # ---- k nearest -----------------------------------------------------------------------
    def query(self, x, k=1, eps=0, p=2, distance_upper_bound=np.inf, workers=1):
        """Query the tree for the k nearest neighbours: (distances, indices), xp_cuda arrays.

        x has shape (..., m); k is an int (ranks 1..k; k == 1 squeezes the last axis) or a
        sequence of 1-based ranks (never squeezed). Missing neighbours have distance inf and
        index n; distance_upper_bound is strict.
        """
        p = _check_p(p)
        _check_eps(eps)
        workers = _check_workers(workers)
        ranks, seq = _check_k(k)
        ub = _as_float(distance_upper_bound, "distance_upper_bound")
        if math.isnan(ub) or ub < 0:
            ub = 0.0  # matches nothing (strict bound)
        X, batch = self._queries(x)
        dev = self._device
        single = len(batch) == 0
        if dev == CPU:
            kk = list(ranks) if seq else len(ranks)
            d, i = self._sp.query(X.reshape(batch + (self.m,)), k=kk, eps=eps, p=p,
                                  distance_upper_bound=ub, workers=workers)
            d, i = np.asarray(d, dtype=np.float64), np.asarray(i, dtype=np.int64)
            return _wrap(d, dev), _wrap(i, dev)
        from .._kernels import spatial as K
        cp = self._xp()
        with self._ctx():
            nq = X.shape[0]
            kmax = max(ranks)
            kk = min(kmax, self.n)
            if kk > 0:
                ub_red = float(K.reduce_radius(np.array(ub), p))
                d, i = K.knn(self._tree, X, kk, p, ub_red)
            else:
                d = cp.empty((nq, 0), dtype=cp.float64)
                i = cp.empty((nq, 0), dtype=cp.int64)
            if kmax > kk:
                d = cp.concatenate([d, cp.full((nq, kmax - kk), cp.inf)], axis=1)
                i = cp.concatenate([i, cp.full((nq, kmax - kk), self.n, dtype=cp.int64)], axis=1)
            cols = [r - 1 for r in ranks]
            if cols != list(range(kmax)):
                sel = cp.asarray(np.array(cols, dtype=np.int64))
                d, i = d[:, sel], i[:, sel]
            shape = batch + ((len(ranks),) if (seq or len(ranks) != 1) else ())
            d = cp.ascontiguousarray(d).reshape(shape)
            i = cp.ascontiguousarray(i).reshape(shape)
        return _wrap(d, dev), _wrap(i, dev)

    # ---- fixed radius --------------------------------------------------------------------
    def _radii(self, r, batch):
        """r broadcast to the query batch shape, as a float64 native array on the device."""
        nat = bring(r, self._device, "r")
        xp = self._xp()
        with self._ctx():
            try:
                # (ascontiguousarray makes 0-d arrays 1-d: reshape back)
                return xp.ascontiguousarray(xp.broadcast_to(nat, batch)).reshape(batch)
            except ValueError:
                raise ValueError(f"r of shape {tuple(nat.shape)} does not broadcast to the "
                                 f"query points' shape {batch}") from None

    def _hits_to_lists(self, counts_off, j):
        off = counts_off.tolist()
        jl = j.tolist()
        return [jl[a:b] for a, b in zip(off[:-1], off[1:])]

    def _sorted_hits(self, offsets, j, q, n_tree):
        """Hits grouped by query with indices ascending inside each group."""
        cp = self._xp()
        if j.size == 0 or n_tree == 0:
            return j
        key = cp.sort(q * n_tree + j)
        return key % n_tree

    def query_ball_point(self, x, r, p=2.0, eps=0, workers=1, return_sorted=None,
                         return_length=False):
        """Indices of the points within distance r of each point of x (d <= r).

        A single point gives a list (or its length, a 0-d array); an array of points gives an
        object array of lists (or an int64 array of lengths). return_sorted: True sorts,
        False does not, None sorts for arrays of points only (SciPy's rule).
        """
        p = _check_p(p)
        _check_eps(eps)
        workers = _check_workers(workers)
        X, batch = self._queries(x)
        R = self._radii(r, batch)
        single = len(batch) == 0
        dev = self._device
        if dev == CPU:
            bad = self._radius_bad(R)
            Rc = np.where(bad, 0.0, R)
            res = self._sp.query_ball_point(X.reshape(batch + (self.m,)), Rc, p=p, eps=eps,
                                            workers=workers, return_sorted=return_sorted,
                                            return_length=return_length)
            if return_length:
                res = np.where(bad, 0, np.asarray(res, dtype=np.int64))
                return _wrap(res, dev)
            if single:
                return [] if bool(bad) else list(res)
            for idx in zip(*np.nonzero(bad)):
                res[idx] = []
            return res
        from .._kernels import spatial as K
        cp = self._xp()
        sort = bool(return_sorted) if return_sorted is not None else not single
        with self._ctx():
            rr = cp.ascontiguousarray(K.reduce_radius(R.reshape(-1), p))
            if rr.size == 0:
                rr = cp.zeros(1, dtype=cp.float64)
            counts, offsets, j, q, _ = K.ball(self._tree, X, rr, p, want_q=sort,
                                              lengths_only=return_length)
            if return_length:
                return _wrap(counts.reshape(batch), dev)
            if sort:
                j = self._sorted_hits(offsets, j, q, self.n)
            lists = self._hits_to_lists(offsets.get(), j.get())
        if single:
            return lists[0]
        out = np.empty(len(lists), dtype=object)
        for t, lst in enumerate(lists):
            out[t] = lst
        return out.reshape(batch)

    def query_ball_tree(self, other, r, p=2.0, eps=0):
        """For each point of self, the sorted list of indices of other's points within r."""
        other = self._other(other, "query_ball_tree")
        p = _check_p(p)
        _check_eps(eps)
        r = _as_float(r, "r")
        if self._device == CPU:
            if math.isnan(r) or r < 0:
                return [[] for _ in range(self.n)]
            return self._sp.query_ball_tree(other._sp, r, p=p, eps=eps)
        from .._kernels import spatial as K
        cp = self._xp()
        with self._ctx():
            rr = cp.asarray(K.reduce_radius(np.array([r]), p))
            counts, offsets, j, q, _ = K.ball(other._tree, self._nat_wrapped(), rr, p,
                                              want_q=True)
            j = self._sorted_hits(offsets, j, q, other.n)
            return self._hits_to_lists(offsets.get(), j.get())

    def _nat_wrapped(self):
        # The data already lies in the periodic box (checked at construction).
        return self._nat

    def query_pairs(self, r, p=2.0, eps=0, output_type="set"):
        """All pairs (i, j), i < j, of points within distance r: a set of tuples, or for
        output_type='ndarray' an int64 xp_cuda array of shape (npairs, 2), sorted."""
        p = _check_p(p)
        _check_eps(eps)
        r = _as_float(r, "r")
        if output_type not in ("set", "ndarray"):
            raise ValueError(f"Invalid output type {output_type!r}: use 'set' or 'ndarray'")
        dev = self._device
        if dev == CPU:
            if math.isnan(r) or r < 0:
                res = set() if output_type == "set" else np.empty((0, 2), dtype=np.int64)
            else:
                res = self._sp.query_pairs(r, p=p, eps=eps, output_type=output_type)
            if output_type == "set":
                return res
            return _wrap(np.asarray(res, dtype=np.int64).reshape(-1, 2), dev)
        from .._kernels import spatial as K
        cp = self._xp()
        with self._ctx():
            rr = cp.asarray(K.reduce_radius(np.array([r]), p))
            pts, order = self._tree_points()
            _, _, j, q, _ = K.ball(self._tree, pts, rr, p, qids=order, pairs=True, want_q=True)
            if j.size and self.n:
                key = cp.sort(q * self.n + j)
                q, j = key // self.n, key % self.n
            if output_type == "set":
                return set(zip(q.get().tolist(), j.get().tolist()))
            return _wrap(cp.stack([q, j], axis=1).reshape(-1, 2), dev)

    def count_neighbors(self, other, r, p=2.0, weights=None, cumulative=True):
        """Number (or weighted sum) of pairs (x1 in self, x2 in other) with distance <= r.

        r is a scalar (0-d result) or 1-D; cumulative=False counts per bin
        (r[i-1] < d <= r[i]) and needs r non-decreasing. weights: None, an array for both
        (other must be self), or a tuple (self's, other's), either None. Unweighted results
        are int64, weighted float64.
        """
        other = self._other(other, "count_neighbors")
        p = _check_p(p)
        rn = bring(r, CPU, "r")
        if rn.ndim > 1:
            raise ValueError("r must be either a single value or a one-dimensional array of "
                             "values")
        scalar = rn.ndim == 0
        rn = np.atleast_1d(rn)
        if not cumulative and rn.size > 1 and bool((rn[:-1] > rn[1:]).any()):
            raise ValueError("r must be non-decreasing for non-cumulative counting.")
        w_self, w_other = self._weights(other, weights)
        weighted = w_self is not None or w_other is not None
        dev = self._device
        if dev == CPU:
            rc = np.where(self._radius_bad(rn), -np.inf, rn)
            wts = None if not weighted else (w_self, w_other)
            res = self._sp.count_neighbors(other._sp, rc, p=p, weights=wts,
                                           cumulative=cumulative)
            res = np.asarray(res, dtype=np.float64 if weighted else np.int64)
            return _wrap(res[0] if scalar else res, dev)
        from .._kernels import spatial as K
        cp = self._xp()
        with self._ctx():
            red = K.reduce_radius(rn.astype(np.float64), p)
            pts, order = other._tree_points()
            wq = None if w_other is None else cp.ascontiguousarray(w_other[order])
            wt = None if w_self is None else cp.ascontiguousarray(w_self[self._tree.order])
            if cumulative:
                u, inv = np.unique(red, return_inverse=True)
                hist = K.count_hist(self._tree, pts, cp.asarray(u), p, wq, wt)
                res = cp.cumsum(hist)[cp.asarray(inv.reshape(-1))]
            else:
                rr = np.maximum.accumulate(red)
                res = K.count_hist(self._tree, pts, cp.asarray(rr), p, wq, wt)
            if weighted:
                res = res.astype(cp.float64)
            else:
                res = res.astype(cp.int64)
            if scalar:
                res = res[0]
        return _wrap(res, dev)

    def _weights(self, other, weights):
        if weights is None:
            return None, None
        if isinstance(weights, tuple):
            if len(weights) != 2:
                raise ValueError("weights as a tuple must be (self's weights, other's weights)")
            ws, wo = weights
        else:
            if other is not self:
                raise ValueError("Two different trees are used. Specify weights for both in a "
                                 "tuple.")
            ws = wo = weights

        def one(w, tree, who):
            if w is None:
                return None
            nat = bring(w, self._device, "weights")
            if nat.shape != (tree.n,):
                raise ValueError(f"{who} weights must have shape ({tree.n},), got "
                                 f"{tuple(nat.shape)}")
            return nat
        return one(ws, self, "self's"), one(wo, other, "other's")

    def sparse_distance_matrix(self, other, max_distance, p=2.0, output_type="dok_matrix"):
        """Distances between all pairs (i in self, j in other) with distance <= max_distance.

        output_type: 'dok_matrix' or 'coo_matrix' (SciPy sparse matrices, SciPy needed),
        'dict' ({(i, j): distance}) or 'ndarray' (a NumPy structured array with fields i, j,
        v, as SciPy's).
        """
        other = self._other(other, "sparse_distance_matrix")
        p = _check_p(p)
        md = _as_float(max_distance, "max_distance")
        if output_type not in SPARSE_TYPES:
            raise ValueError(f"Invalid output type {output_type!r}: use one of {SPARSE_TYPES}")
        if output_type in ("dok_matrix", "coo_matrix"):
            scipy_sparse()
        shape = (self.n, other.n)
        if math.isnan(md) or md < 0:
            return sparse_out(np.empty(0, np.intp), np.empty(0, np.intp),
                               np.empty(0, np.float64), shape, output_type)
        if self._device == CPU:
            return self._sp.sparse_distance_matrix(other._sp, md, p=p, output_type=output_type)
        from .._kernels import spatial as K
        cp = self._xp()
        with self._ctx():
            rr = cp.asarray(K.reduce_radius(np.array([md]), p))
            _, _, j, q, v = K.ball(other._tree, self._nat_wrapped(), rr, p, want_q=True,
                                   want_dist=True)
            if j.size and other.n:
                perm = cp.argsort(q * other.n + j)
                q, j, v = q[perm], j[perm], v[perm]
            i_h, j_h, v_h = q.get(), j.get(), v.get()
        return sparse_out(i_h, j_h, v_h, shape, output_type)

