"""Differences and leaks the fuzzer finds that are bugs owned elsewhere: another part of issue
#18 (helper "values": clip NaN bounds, hypot, where subnormals, complex pow specials,
sum/prod/cumulative_sum/trace dtype= of a narrower kind; helper "memory": out-of-memory and
overflowing sizes), or a decision the lead takes.

They are bugs, not unspecified behaviour: each entry keeps CI green until its owner's work
merges, and then goes (remove the entry; the fuzzer must still pass without it).
"""
from __future__ import annotations


def _xp_only_raises(text):
    return lambda c, x, r: r is not None and r.exc is None and x.exc is not None \
        and text in str(x.exc)


def _values(recipe):
    import numpy as np
    if hasattr(recipe, "values"):
        return recipe.values()
    if isinstance(recipe, (int, float, complex)) and not isinstance(recipe, bool):
        return np.asarray(recipe)
    return None


def _any_arg(c, test):
    vals = [_values(a) for a in list(c.args) + [v for _, v in c.kwargs]]
    return any(v is not None and v.size and bool(test(v)) for v in vals)


def _has_nan(v):
    import numpy as np
    return v.dtype.kind in "fc" and np.isnan(v).any()


def _has_subnormal(v):
    import numpy as np
    if v.dtype.kind not in "fc":
        return False
    parts = (v.real, v.imag) if v.dtype.kind == "c" else (v,)
    tiny = np.finfo(parts[0].dtype).smallest_normal
    return any(((p != 0) & (np.abs(p) < tiny)).any() for p in parts)


def _complex_special(v):
    import numpy as np
    if v.dtype.kind != "c":
        return False
    return bool((~np.isfinite(v.real) | ~np.isfinite(v.imag) | (v.real == 0)
                 | (v.imag == 0)).any())


_POW = ("ns:pow", "op:**", "op:r**", "op:**=")

PENDING = (
    # (empty: partial multi-axis indices, the last entry, are an IndexError in xp_cuda too since
    # issue #18's decision; both sides now raise it and the fuzzer compares them as equal)
)


def pending(call, x, r):
    """The owner of this difference or leak ('#18 values: ...'), or None. ``r`` is None when
    only xp_cuda's outcome is known (a leak)."""
    for owner, applies in PENDING:
        if applies(call, x, r):
            return owner
    return None
