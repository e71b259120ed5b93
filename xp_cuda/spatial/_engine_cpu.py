"""KDTree's cpu engine: ``scipy.spatial.KDTree`` over NumPy arrays.

The same methods, with the same signatures, as ``_engine_cuda.CudaEngine``; the facade
(``_kdtree.py``) has checked every argument and brought every array to NumPy float64 before a
method runs. Results are NumPy arrays (the facade wraps them) or SciPy's ragged types. Where our
API differs from SciPy's (a negative or NaN radius matches nothing; SciPy would square it for
p=2), the difference is made here, around the SciPy call.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["CpuEngine"]


def _scipy_kdtree_class():
    # SciPy is optional for the package as a whole: imported when a cpu tree is built.
    try:
        from scipy.spatial import KDTree as SciPyKDTree
    except ImportError:
        raise ImportError("KDTree on the cpu device delegates to SciPy, which is not installed: "
                          "pip install scipy (or build the tree on a cuda device)") from None
    return SciPyKDTree


def _radius_bad(r):
    return np.isnan(r) | (r < 0)


class CpuEngine:
    """A built SciPy tree. ``n``: points; ``size``: nodes (SciPy's count)."""

    __slots__ = ("n", "size", "_sp")

    @classmethod
    def build(cls, data, device, leafsize, boxsize, compact_nodes, balanced_tree):
        """The tree over ``data`` ((n, m) float64, C-contiguous, finite, inside the periodic
        box). ``boxsize``: (m,) float64 NumPy (0 or inf: not periodic) or None."""
        self = cls()
        self._sp = _scipy_kdtree_class()(data, leafsize=leafsize, compact_nodes=compact_nodes,
                                         copy_data=False, balanced_tree=balanced_tree,
                                         boxsize=boxsize)
        self.n = int(data.shape[0])
        self.size = int(self._sp.size)
        return self

    def query(self, x, batch, ranks, seq, p, eps, ub, workers):
        """k nearest of the rows of x ((nq, m), nq = prod(batch)): (distances, indices) of
        shape batch + (len(ranks),), the last axis dropped when k was the int 1."""
        kk = list(ranks) if seq else len(ranks)
        d, i = self._sp.query(x.reshape(batch + (x.shape[-1],)), k=kk, eps=eps, p=p,
                              distance_upper_bound=ub, workers=workers)
        return np.asarray(d, dtype=np.float64), np.asarray(i, dtype=np.int64)

    def ball_point(self, x, batch, r, p, eps, workers, return_sorted, return_length):
        """Hits within r (batch-shaped) of each row of x: int64 counts of shape batch
        (return_length), else a list (batch ``()``) or an object array of lists."""
        single = len(batch) == 0
        bad = _radius_bad(r)
        rc = np.where(bad, 0.0, r)
        res = self._sp.query_ball_point(x.reshape(batch + (x.shape[-1],)), rc, p=p, eps=eps,
                                        workers=workers, return_sorted=return_sorted,
                                        return_length=return_length)
        if return_length:
            return np.where(bad, 0, np.asarray(res, dtype=np.int64))
        if single:
            return [] if bool(bad) else list(res)
        for idx in zip(*np.nonzero(bad)):
            res[idx] = []
        return res

    def ball_tree(self, other, r, p, eps):
        """For each point of self, the sorted indices of other's points within r."""
        if math.isnan(r) or r < 0:
            return [[] for _ in range(self.n)]
        return self._sp.query_ball_tree(other._sp, r, p=p, eps=eps)

    def pairs(self, r, p, eps, output_type):
        """Pairs i < j within r: a set of tuples, or ('ndarray') an int64 (npairs, 2) array."""
        if math.isnan(r) or r < 0:
            res = set() if output_type == "set" else np.empty((0, 2), dtype=np.int64)
        else:
            res = self._sp.query_pairs(r, p=p, eps=eps, output_type=output_type)
        if output_type == "set":
            return res
        return np.asarray(res, dtype=np.int64).reshape(-1, 2)

    def count_neighbors(self, other, r, p, w_self, w_other, cumulative):
        """Pair counts (int64) or weighted sums (float64) for each radius of r (1-D, host)."""
        weighted = w_self is not None or w_other is not None
        rc = np.where(_radius_bad(r), -np.inf, r)
        wts = None if not weighted else (w_self, w_other)
        res = self._sp.count_neighbors(other._sp, rc, p=p, weights=wts, cumulative=cumulative)
        return np.asarray(res, dtype=np.float64 if weighted else np.int64)

    def sparse_distance_matrix(self, other, max_distance, p, output_type):
        """Distances of the pairs within max_distance (>= 0), as output_type."""
        return self._sp.sparse_distance_matrix(other._sp, max_distance, p=p,
                                               output_type=output_type)
