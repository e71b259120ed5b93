"""Spatial algorithms with SciPy's API on xp_cuda devices (outside the strict namespace).

``from xp_cuda.spatial import KDTree``: ``scipy.spatial.KDTree``'s API and semantics, built and
queried by our CUDA kernels on ``cuda:N`` and by SciPy on ``cpu``.
"""
from __future__ import annotations

from ._kdtree import KDTree

__all__ = ["KDTree"]
