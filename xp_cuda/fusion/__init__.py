"""Fused expressions: ``fuse`` turns a function over xp_cuda arrays into as few CUDA kernels as
its dependencies allow (one for elementwise work and reductions it ends with; one per row
block for softmax-class programs; one per reduction depth otherwise).

Not part of the strict namespace (``xp_cuda.__all__``): import it as
``from xp_cuda.fusion import fuse``.
"""
from __future__ import annotations

from .._kernels.fusion import finish_compiling as _finish
from ._fuse import fuse

__all__ = ["finish_compiling", "fuse"]


def finish_compiling() -> None:
    """Wait until the background compiles of the fused programs called so far have finished.

    A new program's first call runs kernels compiled quickly (about half NVRTC's time); from
    its second call the fully optimised ones compile in a background thread, and it takes
    those at its next call once they are ready. This starts that for every program still on
    its quick kernels and waits: call it before timing a fused function, or where a program
    must run at full speed from its next call on. Results are the same either way."""
    _finish()
