"""KDTree: scipy.spatial.KDTree's API on xp_cuda devices, a facade over one engine per device.

This file is the API: docstrings, argument checks (SciPy's wording where SciPy has one), and
the result shaping both devices share (xp_cuda arrays on the tree's device). The work is done
by an engine, chosen once, when the tree is built, from the device's kind:

- ``_engine_cpu.CpuEngine``: SciPy's ``KDTree`` over NumPy (SciPy must be installed);
- ``_engine_cuda.CudaEngine``: our kernels (``xp_cuda/_kernels/spatial.py``) over CuPy.

Both engines have the same methods with the same signatures; they take native float64 arrays
already on the tree's device and return native arrays or SciPy's ragged types. Foreign data
comes in through ``_foreign.py``. SciPy's own split (``_kdtree.py`` over ``_ckdtree.pyx``) is
the model.
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import TYPE_CHECKING

import numpy as np

import xp_cuda
from .. import _memory
from .._array import Array, _wrap
from .._backends import backend
from .._devices import CPU, Device, check_device
from ._engine_cpu import CpuEngine
from ._engine_cuda import CudaEngine
from ._foreign import bring, home_device
from ._sparse import SPARSE_TYPES, scipy_sparse, sparse_out

if TYPE_CHECKING:
    from typing import Any, Literal, Sequence, SupportsIndex

__all__ = ["KDTree"]

# The engine of each device kind: the only device knowledge of this file.
_ENGINES: dict[str, type[CpuEngine] | type[CudaEngine]] = {"cpu": CpuEngine,
                                                         "cuda": CudaEngine}


# ---- argument checks -------------------------------------------------------------------------

def _as_int(v, what: str) -> int:
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real) and float(v).is_integer():
        return int(v)  # type: ignore[call-overload]  # (a Real with an integral value)
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


def _host(a: Array):
    """An xp_cuda array's data as NumPy (a copy from a GPU)."""
    return backend(a.device).to_host(a._data)


def _check_k(k):
    """(ranks, keep): 1-based ranks wanted and whether k was a sequence (never squeezed)."""
    if isinstance(k, Array):
        k = _host(k).tolist()
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

    The tree lives on one device; query points are moved to it, and results are xp_cuda arrays
    on it (0-d for a single point), except ragged results, which keep SciPy's types (lists,
    object arrays of lists, sets, dicts, SciPy sparse matrices, a structured NumPy array for
    ``sparse_distance_matrix(output_type='ndarray')``).

    Parameters
    ----------
    data : array_like, shape (n, m)
        The n points of dimension m: any array the namespace takes in (xp_cuda, NumPy, CuPy,
        torch through DLPack, nested lists) of any real dtype. It is computed in float64, as
        SciPy does, and must be finite.
    leafsize : int, optional
        The most points a leaf holds (at least 1). Default 10.
    compact_nodes, balanced_tree : bool, optional
        Passed to SciPy on ``cpu``; accepted for compatibility on ``cuda``, where the tree is
        always balanced with tight boxes.
    copy_data : bool, optional
        Copy ``data`` rather than keep a reference where it is already float64 and contiguous
        on the tree's device. Default False.
    boxsize : float or array_like of m floats, optional
        Periodic (toroidal) box lengths; 0 or inf leaves that dimension non-periodic. Data must
        lie in ``[0, boxsize)`` along the periodic dimensions. Default None (no box).
    device : Device or str, optional, keyword-only
        Where the tree lives. Default: the input's device when it is an xp_cuda array or a CUDA
        array (CuPy, torch), else the default device (``cuda:0`` when a GPU is usable).

    Attributes
    ----------
    data : Array, shape (n, m)
        The points, float64, on the tree's device.
    n, m : int
        Number of points and their dimension.
    leafsize : int
    mins, maxes : Array, shape (m,)
        The bounding box of the points (zeros when n is 0).
    boxsize : Array, shape (m,), or None
        The periodic box, as given (broadcast to m).
    size : int
        Number of nodes in the tree.
    device : Device
        The tree's device.

    Raises
    ------
    ValueError
        ``data`` not of shape (n, m) with m >= 1, or not finite; ``leafsize`` below 1; a
        negative or NaN ``boxsize``, or data outside the periodic box.
    TypeError
        Complex data, or arguments of the wrong type.

    Notes
    -----
    On ``cpu`` every call delegates to ``scipy.spatial.KDTree`` (SciPy must be installed).
    On ``cuda`` everything runs in our kernels (xp_cuda/_kernels/spatial.cu), in float64:

    * build: a balanced implicit k-d tree, made level by level with one radix sort per level
      (key = node index, then the split coordinate; split on the widest side of the node), with
      leaves of at most ``leafsize`` points and tight bounding boxes on every node.
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

    data: Array
    n: int
    m: int
    leafsize: int
    mins: Array
    maxes: Array
    boxsize: Array | None
    size: int

    def __init__(self, data: object, leafsize: SupportsIndex = 10, compact_nodes: bool = True,
                 copy_data: bool = False, balanced_tree: bool = True, boxsize: object = None,
                 *, device: Device | None = None) -> None:
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
                    sub = nat[:, xp.asarray(pi)]
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
        self.data = _wrap(nat, dev)
        self.n, self.m = n, m
        self.leafsize = leafsize
        self.mins, self.maxes = _wrap(mins, dev), _wrap(maxes, dev)
        self._box = box
        self.boxsize = None if box is None else xp_cuda.asarray(box.copy(), device=dev)
        # The one decision by device: which engine builds and queries this tree.
        self._engine = _ENGINES[dev.kind].build(nat, dev, leafsize, box, compact_nodes,
                                                balanced_tree)
        self.size = self._engine.size

    @staticmethod
    def _check_boxsize(boxsize, m):
        """boxsize as an (m,) float64 NumPy array (None stays None), checked."""
        if boxsize is None:
            return None
        if isinstance(boxsize, Array):
            boxsize = _host(boxsize)
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
        """The device the tree lives on (its data, and every array result)."""
        return self._device

    def __repr__(self) -> str:
        return (f"KDTree(n={self.n}, m={self.m}, leafsize={self.leafsize}, "
                f"device={self._device}{'' if self._box is None else ', periodic'})")

    # ---- helpers -------------------------------------------------------------------------
    def _ctx(self):
        return backend(self._device).ctx()

    def _xp(self):
        return backend(self._device).xp

    def _queries(self, x, what="x"):
        """x as (nq, m) float64 native rows on the tree's device, and its batch shape."""
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
        return X, batch

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

    def _weights(self, other, weights):
        """(self's, other's) weights as float64 natives on the device, either None."""
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

    # ---- k nearest -----------------------------------------------------------------------
    def query(self, x: object, k: SupportsIndex | Sequence[SupportsIndex] | Array = 1,
              eps: float = 0, p: float = 2, distance_upper_bound: float = np.inf,
              workers: SupportsIndex = 1) -> tuple[Array, Array]:
        """Query the tree for the k nearest neighbours of each point of x.

        Parameters
        ----------
        x : array_like, shape (..., m)
            The query points (moved to the tree's device). A periodic tree wraps them into
            its box first.
        k : int or sequence of int, optional
            An int asks for the ranks 1..k (k == 1 drops the last axis of the results); a
            sequence asks for those 1-based ranks (the axis is kept). Default 1.
        eps : float, optional
            Approximation allowed (neighbour k at most (1 + eps) times the true k-th
            distance); must be >= 0. Results are exact on cuda, which meets it.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        distance_upper_bound : float, optional
            Only neighbours strictly closer than this; negative or NaN matches nothing.
        workers : int, optional
            SciPy's worker threads on cpu (-1: all cores; must be -1 or > 0); no effect on
            cuda.

        Returns
        -------
        d : Array of float64
            Distances, shape ``x.shape[:-1] + (len(ranks),)`` (no last axis for k == 1);
            inf where a neighbour is missing.
        i : Array of int64
            Indices into ``data``, same shape; ``n`` where a neighbour is missing.

        Raises
        ------
        ValueError
            p < 1, eps < 0, k or a rank below 1, workers 0 or below -1, query points of the
            wrong length or not finite.
        """
        p = _check_p(p)
        _check_eps(eps)
        workers = _check_workers(workers)
        ranks, seq = _check_k(k)
        ub = _as_float(distance_upper_bound, "distance_upper_bound")
        if math.isnan(ub) or ub < 0:
            ub = 0.0  # matches nothing (strict bound)
        X, batch = self._queries(x)
        d, i = self._engine.query(X, batch, ranks, seq, p, eps, ub, workers)
        return _wrap(d, self._device), _wrap(i, self._device)

    # ---- fixed radius --------------------------------------------------------------------
    def query_ball_point(self, x: object, r: object, p: float = 2.0, eps: float = 0,
                         workers: SupportsIndex = 1, return_sorted: bool | None = None,
                         return_length: bool = False) -> list[int] | np.ndarray | Array:
        """Indices of the points within distance r of each point of x (d <= r).

        Parameters
        ----------
        x : array_like, shape (..., m)
            The query points (moved to the tree's device).
        r : float or array_like
            The radius, or one per point (broadcast to ``x.shape[:-1]``). A negative or NaN
            radius matches nothing.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        eps : float, optional
            Approximation allowed (>= 0); exact on cuda.
        workers : int, optional
            SciPy's worker threads on cpu; no effect on cuda.
        return_sorted : bool or None, optional
            True sorts each list of indices, False does not, None sorts for arrays of points
            only (SciPy's rule).
        return_length : bool, optional
            Return the number of hits instead of their indices. Default False.

        Returns
        -------
        list, or object ndarray of lists, or Array of int64
            A single point (x of shape (m,)) gives a list, an array of points a NumPy object
            array of lists of shape ``x.shape[:-1]``; with ``return_length``, an int64 Array
            of that shape (0-d for a single point).

        Raises
        ------
        ValueError
            p < 1, eps < 0, bad workers, query points of the wrong length or not finite, or r
            not broadcastable to the points.
        """
        p = _check_p(p)
        _check_eps(eps)
        workers = _check_workers(workers)
        X, batch = self._queries(x)
        R = self._radii(r, batch)
        res = self._engine.ball_point(X, batch, R, p, eps, workers, return_sorted,
                                      return_length)
        return _wrap(res, self._device) if return_length else res

    def query_ball_tree(self, other: KDTree, r: float, p: float = 2.0,
                        eps: float = 0) -> list[list[int]]:
        """For each point of self, the indices of other's points within distance r.

        Parameters
        ----------
        other : KDTree
            A tree of the same dimension on the same device.
        r : float
            The radius (d <= r); negative or NaN matches nothing.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        eps : float, optional
            Approximation allowed (>= 0); exact on cuda.

        Returns
        -------
        list of lists
            ``n`` lists, the i-th holding the sorted indices into ``other.data`` of the points
            within r of ``self.data[i]``.

        Raises
        ------
        TypeError
            other is not an xp_cuda KDTree.
        ValueError
            p < 1, eps < 0, or trees of different dimension or device.
        """
        other = self._other(other, "query_ball_tree")
        p = _check_p(p)
        _check_eps(eps)
        r = _as_float(r, "r")
        return self._engine.ball_tree(other._engine, r, p, eps)

    def query_pairs(self, r: float, p: float = 2.0, eps: float = 0,
                    output_type: Literal["set", "ndarray"] = "set"
                    ) -> set[tuple[int, int]] | Array:
        """All pairs (i, j), i < j, of the tree's points within distance r of each other.

        Parameters
        ----------
        r : float
            The radius (d <= r); negative or NaN matches nothing.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        eps : float, optional
            Approximation allowed (>= 0); exact on cuda.
        output_type : {'set', 'ndarray'}, optional
            Default 'set'.

        Returns
        -------
        set of tuple, or Array of int64
            A set of (i, j) tuples, or for 'ndarray' an int64 Array of shape (npairs, 2) on
            the tree's device (sorted on cuda).

        Raises
        ------
        ValueError
            p < 1, eps < 0, or an unknown output_type.
        """
        p = _check_p(p)
        _check_eps(eps)
        r = _as_float(r, "r")
        if output_type not in ("set", "ndarray"):
            raise ValueError(f"Invalid output type {output_type!r}: use 'set' or 'ndarray'")
        res = self._engine.pairs(r, p, eps, output_type)
        return res if output_type == "set" else _wrap(res, self._device)

    def count_neighbors(self, other: KDTree, r: object, p: float = 2.0, weights: object = None,
                        cumulative: bool = True) -> Array:
        """Number (or weighted sum) of pairs (x1 in self, x2 in other) with distance <= r.

        Parameters
        ----------
        other : KDTree
            A tree of the same dimension on the same device (may be self).
        r : float or 1-D array_like
            The radii; negative or NaN radii count nothing.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        weights : None, array_like or tuple of two, optional
            None counts pairs; an array of n weights weighs both trees (other must be self);
            a tuple gives (self's, other's) weights, either of which may be None.
        cumulative : bool, optional
            True counts pairs within each r; False counts per bin, r[i-1] < d <= r[i] (r must
            be non-decreasing). Default True.

        Returns
        -------
        Array
            int64 counts (float64 sums when weighted), 0-d for a scalar r, else of r's shape.

        Raises
        ------
        TypeError
            other is not an xp_cuda KDTree.
        ValueError
            p < 1, trees of different dimension or device, r of more than one dimension, r
            decreasing with cumulative=False, weights of the wrong shape, or one weights
            array for two different trees.
        """
        other = self._other(other, "count_neighbors")
        p = _check_p(p)
        rn = bring(r, CPU, "r")  # radii are planned on the host, on every device
        if rn.ndim > 1:
            raise ValueError("r must be either a single value or a one-dimensional array of "
                             "values")
        scalar = rn.ndim == 0
        rn = np.atleast_1d(rn)
        if not cumulative and rn.size > 1 and bool((rn[:-1] > rn[1:]).any()):
            raise ValueError("r must be non-decreasing for non-cumulative counting.")
        w_self, w_other = self._weights(other, weights)
        res = self._engine.count_neighbors(other._engine, rn, p, w_self, w_other, cumulative)
        return _wrap(res[0] if scalar else res, self._device)

    def sparse_distance_matrix(
            self, other: KDTree, max_distance: float, p: float = 2.0,
            output_type: Literal["dok_matrix", "coo_matrix", "dict", "ndarray"] = "dok_matrix"
    ) -> Any:
        """Distances between all pairs (i in self, j in other) at distance <= max_distance.

        Parameters
        ----------
        other : KDTree
            A tree of the same dimension on the same device.
        max_distance : float
            The largest distance kept; negative or NaN keeps nothing.
        p : float, optional
            The Minkowski p-norm, 1 <= p <= inf. Default 2.
        output_type : {'dok_matrix', 'coo_matrix', 'dict', 'ndarray'}, optional
            SciPy sparse matrices of shape (self.n, other.n) (SciPy needed), a dict
            ``{(i, j): distance}``, or a NumPy structured array with fields i, j, v, as
            SciPy's. Default 'dok_matrix'.

        Returns
        -------
        dok_matrix, coo_matrix, dict or ndarray
            On the host, whatever the tree's device.

        Raises
        ------
        TypeError
            other is not an xp_cuda KDTree.
        ValueError
            p < 1, trees of different dimension or device, or an unknown output_type.
        ImportError
            A SciPy sparse output without SciPy installed.
        """
        other = self._other(other, "sparse_distance_matrix")
        p = _check_p(p)
        md = _as_float(max_distance, "max_distance")
        if output_type not in SPARSE_TYPES:
            raise ValueError(f"Invalid output type {output_type!r}: use one of {SPARSE_TYPES}")
        if output_type in ("dok_matrix", "coo_matrix"):
            scipy_sparse()
        if math.isnan(md) or md < 0:
            return sparse_out(np.empty(0, np.intp), np.empty(0, np.intp),
                              np.empty(0, np.float64), (self.n, other.n), output_type)
        return self._engine.sparse_distance_matrix(other._engine, md, p, output_type)


# The out-of-memory guard (xp_cuda._memory) around the tree's construction and every query.
_memory.guard_methods(KDTree, ("__init__", "query", "query_ball_point", "query_ball_tree",
                               "query_pairs", "count_neighbors", "sparse_distance_matrix"),
                      "KDTree.")
