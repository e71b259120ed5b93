"""Fused expressions: ``fuse`` turns a function over xp_cuda arrays into one CUDA kernel.

Not part of the strict namespace (``xp_cuda.__all__``): import it as
``from xp_cuda.fusion import fuse``.
"""
from ._fuse import fuse

__all__ = ["fuse"]
