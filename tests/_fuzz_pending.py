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


PENDING = (
    # sum(x, dtype=int8) of a float x: the spec casts x to dtype ("If the data type (either
    # specified or resolved) differs from the data type of x, the input array should be cast
    # to the specified data type before computing the sum"); xp_cuda refuses narrower kinds.
    ("#18 values: sum/prod/cumulative_sum/trace dtype= of a narrower kind",
     lambda c, x, r: c.target in ("ns:sum", "ns:prod", "ns:cumulative_sum",
                                  "ns:cumulative_prod", "linalg:trace")
     and _xp_only_raises("would discard part of the values")(c, x, r)),
    # x[0] on a 2-d array: "the number of provided single-axis indexing expressions (excluding
    # None) should equal N [...] An IndexError exception should be raised if [it] is less
    # than N" (indexing page, multi-axis indexing). xp_cuda fills the remaining axes with ':'
    # as NumPy does; array_api_strict raises. A 'should': the lead decides.
    ("lead decision: partial multi-axis indices (spec: IndexError 'should' be raised)",
     lambda c, x, r: c.target in ("op:getitem", "op:setitem") and r is not None
     and x.exc is None and r.exc is not None and "multi-axes index only specifies" in str(r.exc)),
)


def pending(call, x, r):
    """The owner of this difference or leak ('#18 values: ...'), or None. ``r`` is None when
    only xp_cuda's outcome is known (a leak)."""
    for owner, applies in PENDING:
        if applies(call, x, r):
            return owner
    return None
