"""The output types of ``KDTree.sparse_distance_matrix``, built from (i, j, distance) triples.

Shared by the facade (the empty result of a radius that matches nothing, on every device) and
the cuda engine; the cpu engine returns what SciPy builds. SciPy is imported only when a SciPy
sparse matrix is asked for.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SPARSE_TYPES", "scipy_sparse", "sparse_out"]

SPARSE_TYPES = ("dok_matrix", "coo_matrix", "dict", "ndarray")
# SciPy's record layout for output_type='ndarray'
_SPARSE_DTYPE = np.dtype([("i", np.intp), ("j", np.intp), ("v", np.float64)], align=True)


def scipy_sparse():
    """scipy.sparse, or an ImportError that says which output types need no SciPy."""
    try:
        import scipy.sparse as sparse
    except ImportError:
        raise ImportError("sparse_distance_matrix's 'dok_matrix' and 'coo_matrix' outputs are "
                          "SciPy types: pip install scipy, or ask for output_type='dict' or "
                          "'ndarray'") from None
    return sparse


def sparse_out(i, j, v, shape, output_type):
    """The pairs (i[t], j[t]) at distance v[t] (host arrays) as ``output_type``."""
    if output_type == "dict":
        return dict(zip(zip(i.tolist(), j.tolist()), v.tolist()))
    if output_type == "ndarray":
        out = np.empty(len(i), dtype=_SPARSE_DTYPE)
        out["i"], out["j"], out["v"] = i, j, v
        return out
    sparse = scipy_sparse()
    coo = sparse.coo_matrix((v, (i, j)), shape=shape)
    if output_type == "coo_matrix":
        return coo
    return coo.todok()  # keeps explicit zero distances, as SciPy's dok result does
