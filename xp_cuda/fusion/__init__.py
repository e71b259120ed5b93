"""Fused expressions: ``fuse`` turns a function over xp_cuda arrays into as few CUDA kernels as
its dependencies allow (one for elementwise work and reductions it ends with; one per row
block for softmax-class programs; one per reduction depth otherwise).

Not part of the strict namespace (``xp_cuda.__all__``): import it as
``from xp_cuda.fusion import fuse``.
"""
from __future__ import annotations

from ._fuse import fuse

__all__ = ["fuse"]
