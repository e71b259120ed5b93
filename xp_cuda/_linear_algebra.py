"""Linear algebra functions of the main namespace (2023.12)."""
from __future__ import annotations

from ._array import _wrap
from ._devices import backend
from ._dtypes import promote
from ._validation import (broadcast_shapes, check_array, check_dtype_category, common_device)


def matmul(x1, x2, /):
    fname = "matmul"
    for a, n in ((x1, "x1"), (x2, "x2")):
        check_array(a, fname, n)
        check_dtype_category(a, "numeric", fname, n)
        if a.ndim == 0:
            raise ValueError(f"{fname}: {n} is 0-d; matmul needs arrays of at least 1 "
                             f"dimension (use multiply for scalars)")
    dtype = promote(x1.dtype, x2.dtype)
    device = common_device([x1, x2], fname)
    k1 = x1.shape[-1]
    k2 = x2.shape[-2] if x2.ndim > 1 else x2.shape[0]
    if k1 != k2:
        raise ValueError(f"{fname}: the contracted dimensions differ: x1 {x1.shape} has {k1} "
                         f"columns, x2 {x2.shape} has {k2} rows")
    if x1.ndim > 2 or x2.ndim > 2:
        broadcast_shapes([x1.shape[:-2], x2.shape[:-2]], fname)
    b = backend(device)
    with b.ctx():
        out = b.xp.matmul(x1._data.astype(dtype._np, copy=False),
                          x2._data.astype(dtype._np, copy=False))
    return _wrap(out, device)


__all__ = ["matmul"]
