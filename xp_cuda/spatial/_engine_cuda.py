"""KDTree's cuda engine: our kernels (``xp_cuda/_kernels/spatial.py``) over CuPy arrays.

The same methods, with the same signatures, as ``_engine_cpu.CpuEngine``; the facade
(``_kdtree.py``) has checked every argument and brought every array to CuPy float64 on the
tree's GPU before a method runs (float32 data converted by our astype kernel: CuPy's flushes
float32 subnormals). The CuPy arithmetic left here runs on float64 and integers only, which its
-ftz build does not touch (it flushes float32 subnormals alone), one operation per kernel (no
contraction across them). Each method makes that GPU current around its kernel calls and
returns CuPy arrays (the facade wraps them) or SciPy's ragged types built on the host. The
algorithms are described in the facade's class docstring.

Importing this module imports no CuPy (the kernel layer imports it when a kernel runs).
"""
from __future__ import annotations

import numpy as np

from .._backends import backend
from .._kernels import spatial as K
from ._sparse import sparse_out

__all__ = ["CudaEngine"]


class CudaEngine:
    """A built tree on one GPU. ``n``: points; ``size``: nodes of the implicit tree."""

    __slots__ = ("n", "size", "_b", "_data", "_L", "_tree")

    @classmethod
    def build(cls, data, device, leafsize, boxsize, compact_nodes, balanced_tree):
        """The tree over ``data`` ((n, m) float64, C-contiguous, finite, inside the periodic
        box). ``boxsize``: (m,) float64 NumPy (0 or inf: not periodic) or None.
        ``compact_nodes`` and ``balanced_tree`` change nothing: the tree is always balanced
        with tight boxes."""
        self = cls()
        self._b = b = backend(device)
        # The data lies in the periodic box already (checked by the facade), so it serves as
        # queries without wrapping (query_ball_tree, sparse_distance_matrix).
        self._data = data
        self.n = int(data.shape[0])
        # box lengths per dimension, 0 where not periodic (the kernels' L)
        self._L = None if boxsize is None else np.where(
            (boxsize > 0) & np.isfinite(boxsize), boxsize, 0.0)
        with b.ctx():
            Ld = None if self._L is None else b.xp.asarray(self._L)
            self._tree = K.build(data, leafsize, Ld)
        self.size = self._tree.size
        return self

    # ---- helpers -------------------------------------------------------------------------
    def _ctx(self):
        return self._b.ctx()

    def _xp(self):
        return self._b.xp

    def _in_box(self, X):
        """Query rows wrapped into a periodic box (the kernels expect them there)."""
        if self._L is not None and X.size:
            with self._ctx():
                X = self._wrap_box(X)
        return X

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

    # ---- the engine's methods ------------------------------------------------------------
    def query(self, x, batch, ranks, seq, p, eps, ub, workers):
        """k nearest of the rows of x ((nq, m), nq = prod(batch)): (distances, indices) of
        shape batch + (len(ranks),), the last axis dropped when k was the int 1. Neighbours
        are exact (eps changes nothing) and the GPU is the worker (workers neither)."""
        X = self._in_box(x)
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
        return d, i

    def ball_point(self, x, batch, r, p, eps, workers, return_sorted, return_length):
        """Hits within r (batch-shaped) of each row of x: int64 counts of shape batch
        (return_length), else a list (batch ``()``) or an object array of lists."""
        X = self._in_box(x)
        single = len(batch) == 0
        cp = self._xp()
        sort = bool(return_sorted) if return_sorted is not None else not single
        with self._ctx():
            rr = cp.ascontiguousarray(K.reduce_radius(r.reshape(-1), p))
            if rr.size == 0:
                rr = cp.zeros(1, dtype=cp.float64)
            counts, offsets, j, q, _ = K.ball(self._tree, X, rr, p, want_q=sort,
                                              lengths_only=return_length)
            if return_length:
                return counts.reshape(batch)
            if sort:
                j = self._sorted_hits(offsets, j, q, self.n)
            lists = self._hits_to_lists(offsets.get(), j.get())
        if single:
            return lists[0]
        out = np.empty(len(lists), dtype=object)
        for t, lst in enumerate(lists):
            out[t] = lst
        return out.reshape(batch)

    def ball_tree(self, other, r, p, eps):
        """For each point of self, the sorted indices of other's points within r."""
        cp = self._xp()
        with self._ctx():
            rr = cp.asarray(K.reduce_radius(np.array([r]), p))
            counts, offsets, j, q, _ = K.ball(other._tree, self._data, rr, p, want_q=True)
            j = self._sorted_hits(offsets, j, q, other.n)
            return self._hits_to_lists(offsets.get(), j.get())

    def pairs(self, r, p, eps, output_type):
        """Pairs i < j within r: a set of tuples, or ('ndarray') an int64 (npairs, 2) array."""
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
            return cp.stack([q, j], axis=1).reshape(-1, 2)

    def count_neighbors(self, other, r, p, w_self, w_other, cumulative):
        """Pair counts (int64) or weighted sums (float64) for each radius of r (1-D, host):
        one walk per point of other over self's tree."""
        weighted = w_self is not None or w_other is not None
        cp = self._xp()
        with self._ctx():
            red = K.reduce_radius(r.astype(np.float64), p)
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
        return res

    def sparse_distance_matrix(self, other, max_distance, p, output_type):
        """Distances of the pairs within max_distance (>= 0), as output_type."""
        cp = self._xp()
        with self._ctx():
            rr = cp.asarray(K.reduce_radius(np.array([max_distance]), p))
            _, _, j, q, v = K.ball(other._tree, self._data, rr, p, want_q=True,
                                   want_dist=True)
            if j.size and other.n:
                perm = cp.argsort(q * other.n + j)
                q, j, v = q[perm], j[perm], v[perm]
            i_h, j_h, v_h = q.get(), j.get(), v.get()
        return sparse_out(i_h, j_h, v_h, (self.n, other.n), output_type)
