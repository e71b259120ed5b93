"""What the differential fuzzer calls: every public function and operator, with the kinds of
its arguments, and hypothesis strategies that draw one ``Call`` of each.

Elementwise functions are read off ``xp_cuda._elementwise.ROWS`` (arity and input category);
everything else is a row of ``SPECS`` below: positional argument kinds, keyword argument kinds
(each keyword is passed or left out at random) and the tolerance class of its values (see
_fuzz_engine.compare). Arrays are mostly drawn from the argument's category and sometimes
from any dtype, so rejections are compared too; axes, shapes and ints are mostly valid and
sometimes out of range.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np

from xp_cuda._dtypes import CATEGORIES
from xp_cuda._elementwise import LATER, ROWS
from xp_cuda._revisions import REVISIONS

from _fuzz_engine import DEVICE, Arr, Call, Dt, Foreign, Seq

CAT_NAMES = {c: tuple(d.name for d in ds) for c, ds in CATEGORIES.items()}
ALL = CAT_NAMES["any"]
# the spec's special values, drawn into float arrays alongside hypothesis's own
SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


class Ctx:
    """What the kinds drawn so far in one call know: the first array's shape."""

    def __init__(self):
        self.shape = None
        self.dtype = None

    @property
    def ndim(self):
        return 0 if self.shape is None else len(self.shape)


# ---- values -------------------------------------------------------------------------------------
def _elements(dt: str, tame: bool):
    npd = np.dtype(dt)
    if npd.kind == "b":
        return st.booleans()
    if npd.kind in "iu":
        info = np.iinfo(npd)
        if tame:
            return st.integers(max(info.min, -9), min(info.max, 9))
        return st.one_of(st.integers(max(info.min, -9), min(info.max, 9)),
                         st.integers(int(info.min), int(info.max)))
    width = npd.itemsize * 8 if npd.kind == "f" else npd.itemsize * 4
    if tame:
        f = st.one_of(st.floats(-50, 50, width=width), st.sampled_from(SPECIALS))
    else:
        f = st.one_of(st.floats(width=width), st.floats(-50, 50, width=width),
                      st.sampled_from(SPECIALS))
    if npd.kind == "f":
        return f
    return st.builds(complex, f, f)


def values(draw, dt: str, shape, tame: bool):
    return draw(hnp.arrays(np.dtype(dt), shape, elements=_elements(dt, tame)))


def layout(draw, v: np.ndarray, dt: str, tame: bool):
    """An Arr whose values are v, reached through a random layout."""
    kind = draw(st.sampled_from(("c", "c", "strided", "flipped", "permuted", "broadcast")))
    if v.ndim == 0 or kind == "c":
        return Arr(dt, v)
    axis = draw(st.integers(0, v.ndim - 1))
    if kind == "strided":
        shape = list(v.shape)
        shape[axis] *= 2
        base = values(draw, dt, tuple(shape), tame)  # the gaps hold other values
        key = tuple(slice(None, None, 2) if i == axis else slice(None) for i in range(v.ndim))
        base[key] = v
        return Arr(dt, base, (("getitem", key),))
    if kind == "flipped":
        key = tuple(slice(None, None, -1) if i == axis else slice(None) for i in range(v.ndim))
        return Arr(dt, np.ascontiguousarray(v[key]), (("getitem", key),))
    if kind == "permuted":
        perm = tuple(draw(st.permutations(range(v.ndim))))
        inv = tuple(int(i) for i in np.argsort(perm))
        return Arr(dt, np.ascontiguousarray(np.transpose(v, inv)), (("permute", perm),))
    # broadcast: the values of a smaller array (size-1 or missing leading dims)
    lead = draw(st.integers(0, v.ndim))
    small = tuple(1 if (i == axis or i < lead) else n for i, n in enumerate(v.shape))[lead:]
    base = values(draw, dt, small, tame)
    return Arr(dt, base, (("broadcast", tuple(v.shape)),))


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


# ---- argument kinds -----------------------------------------------------------------------------
@dataclass
class A:
    """An array of ``cat`` (sometimes of any dtype). shape: None = random; "like" = the first
    array's shape; "square" = a stack of square matrices; "sym" = of symmetric ones."""
    cat: str = "any"
    min_dims: int = 0
    max_dims: int = 3
    shape: object = None
    tame: bool = False
    same_dtype: bool = False  # the first array's dtype
    wrong: float = 0.1  # how often the dtype comes from outside cat

    def draw(self, draw, ctx):
        names = CAT_NAMES[self.cat]
        if self.same_dtype and ctx.dtype:
            dt = ctx.dtype if draw(st.integers(0, 9)) else draw(st.sampled_from(ALL))
        elif draw(st.floats(0, 1)) < self.wrong:
            dt = draw(st.sampled_from(ALL))
        else:
            dt = draw(st.sampled_from(names))
        if self.shape == "like" and ctx.shape is not None:
            shape = ctx.shape
        elif self.shape in ("square", "sym"):
            n = draw(st.integers(0, 4))
            batch = draw(shapes(0, max(0, self.max_dims - 2), 0, 3))
            shape = batch + (n, n)
            if not draw(st.integers(0, 15)):  # now and then not square
                shape = batch + (n, n + 1)
        elif isinstance(self.shape, tuple):
            shape = self.shape
        else:
            shape = draw(shapes(self.min_dims, self.max_dims))
        tame = self.tame or draw(st.booleans())
        v = values(draw, dt, shape, tame)
        if self.shape == "sym" and v.ndim >= 2 and v.shape[-1] == v.shape[-2]:
            with np.errstate(all="ignore"):
                v = (v + np.conj(np.swapaxes(v, -1, -2))).astype(v.dtype)
        if ctx.shape is None:
            ctx.shape, ctx.dtype = tuple(shape), dt
        return layout(draw, v, dt, tame)


@dataclass
class Sorted1D(A):
    """A sorted 1-D real array (searchsorted's x1)."""

    def draw(self, draw, ctx):
        dt = draw(st.sampled_from(CAT_NAMES["real-valued"]))
        v = np.sort(values(draw, dt, (draw(st.integers(0, 6)),), True))
        ctx.shape, ctx.dtype = v.shape, dt
        return Arr(dt, v)


@dataclass
class Indices:
    """An integer array of indices into the first array along ``axis`` (1-D for take;
    ``along`` = the first array's ndim for take_along_axis); sometimes out of range."""
    along: bool = False

    def draw(self, draw, ctx):
        dt = draw(st.sampled_from(CAT_NAMES["integer"] if draw(st.integers(0, 9)) else ALL))
        n = max(ctx.shape) if ctx.shape else 1
        lo, hi = (-n, n - 1) if draw(st.integers(0, 7)) else (-n - 2, n + 2)
        if np.dtype(dt).kind == "u":
            lo = 0
        if np.dtype(dt).kind not in "iu":
            return Arr(dt, values(draw, dt, (draw(st.integers(0, 4)),), True))
        if self.along and ctx.shape is not None:
            shape = tuple(draw(st.integers(0, 3)) if i == ctx.ndim - 1 else s
                          for i, s in enumerate(ctx.shape))
        else:
            shape = (draw(st.integers(0, 5)),)
        v = np.array(draw(hnp.arrays(np.int64, shape, elements=st.integers(lo, max(lo, hi)))),
                     dtype=dt)
        return Arr(dt, v)


@dataclass
class Axis:
    """An axis of the first array: None (when allowed), valid or out of range."""
    none: bool = True
    extra: int = 0  # axes one past the end are valid (expand_dims)

    def draw(self, draw, ctx):
        n = ctx.ndim + self.extra
        opts = [st.integers(-max(n, 1), max(n - 1, 0)),
                st.integers(-n - 2, n + 2)]
        if self.none:
            opts.append(st.none())
        return draw(st.one_of(*opts))


@dataclass
class Axes:
    """A tuple of axes of the first array (unique mostly), or an int, or None."""
    none: bool = True

    def draw(self, draw, ctx):
        n = ctx.ndim
        k = draw(st.integers(0, n))
        ax = tuple(draw(st.permutations(range(n)))[:k])
        ax = tuple(a - n if draw(st.booleans()) else a for a in ax)
        opts = [st.just(ax), st.just(ax), st.integers(-n - 1, n)]
        if self.none:
            opts.append(st.none())
        if n:
            opts.append(st.just(ax + ax[:1]))
        return draw(st.one_of(*opts))


@dataclass
class Perm:
    """A permutation of the first array's axes (sometimes wrong)."""

    def draw(self, draw, ctx):
        p = tuple(draw(st.permutations(range(ctx.ndim))))
        if draw(st.integers(0, 7)):
            return p
        return draw(st.sampled_from((p + (0,), p[:-1], tuple(-1 - i for i in p) or (0,))))


@dataclass
class Shape:
    """A shape: related to the first array's (its size, its broadcast) or random."""
    like: str = "random"  # "size": same size; "broadcast": a shape it broadcasts to

    def draw(self, draw, ctx):
        s = ctx.shape or ()
        if self.like == "size" and draw(st.integers(0, 5)):
            n = int(np.prod(s))
            if n and draw(st.booleans()):
                d = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
                return (d, n // d) if draw(st.booleans()) else (-1, d)
            return (n,) if draw(st.booleans()) else tuple(reversed(s))
        if self.like == "broadcast" and draw(st.integers(0, 5)):
            extra = draw(shapes(0, 1, 0, 3))
            return extra + tuple(draw(st.integers(0, 3)) if n == 1 else n for n in s)
        return draw(st.one_of(shapes(0, 3), st.integers(0, 4), st.just((2, -1))))


@dataclass
class Int:
    lo: int = -3
    hi: int = 3

    def draw(self, draw, ctx):
        return draw(st.integers(self.lo, self.hi))


@dataclass
class OneOf:
    """One of fixed values."""
    options: tuple

    def draw(self, draw, ctx):
        return draw(st.sampled_from(self.options))


@dataclass
class Kinds:
    """Any of several kinds."""
    kinds: tuple

    def draw(self, draw, ctx):
        return draw(st.sampled_from(self.kinds)).draw(draw, ctx)


@dataclass
class DType:
    cat: str = "any"
    none: bool = True

    def draw(self, draw, ctx):
        names = CAT_NAMES[self.cat] if draw(st.integers(0, 7)) else ALL
        if self.none and not draw(st.integers(0, 2)):
            return None
        return Dt(draw(st.sampled_from(names)))


@dataclass
class Bool:
    def draw(self, draw, ctx):
        return draw(st.sampled_from((True, False, True, False, 0, None)))


@dataclass
class Scalar:
    """A Python scalar (mostly of the first array's kind)."""
    kinds: tuple = ("bool", "int", "float", "complex")

    def draw(self, draw, ctx):
        k = draw(st.sampled_from(self.kinds))
        if k == "bool":
            return draw(st.booleans())
        if k == "int":
            return draw(st.one_of(st.integers(-9, 9), st.integers(-2**64, 2**64)))
        f = st.one_of(st.floats(-50, 50), st.sampled_from(SPECIALS), st.floats())
        if k == "float":
            return draw(f)
        return complex(draw(f), draw(f))


@dataclass
class ArraySeq:
    """A tuple or list of 0-3 arrays of the first's shape (sometimes not)."""
    cat: str = "any"
    min_dims: int = 0

    def draw(self, draw, ctx):
        n = draw(st.integers(0, 3))
        first = A(self.cat, self.min_dims).draw(draw, ctx)
        items = [first] + [A(self.cat, shape="like" if draw(st.integers(0, 4)) else None,
                             same_dtype=True).draw(draw, ctx) for _ in range(n)]
        if not draw(st.integers(0, 9)):
            items = []
        return Seq(tuple(items), draw(st.sampled_from((tuple, list))))


@dataclass
class Star:
    """*args of a kind: 0-3 of them."""
    kind: object
    lo: int = 0
    hi: int = 3


@dataclass
class Wrong:
    """A foreign or wrong value (used by the sweep and now and then by the fuzzer)."""

    def draw(self, draw, ctx):
        return draw(st.sampled_from(FOREIGN))


FOREIGN = (
    Foreign(np.ones((2, 2), np.float32), "numpy float32 array"),
    Foreign(np.float64(1.5), "numpy float64 scalar"),
    Foreign([1, 2], "list"),
    Foreign((1.0, 2.0), "tuple of floats"),
    Foreign(None, "None"),
    Foreign("abc", "str"),
    Foreign(object(), "object"),
)


# ---- the table of non-elementwise functions -----------------------------------------------------
@dataclass
class Spec:
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    tol: str = "exact"
    signed_zero: bool = True


RA = A("real-valued")
NA = A("numeric")
FA = A("floating-point")
RFA = A("real floating")
CFA = A("complex floating")
MAT = A("floating-point", shape="square", tame=True)
NUM_SCALAR = Scalar(("int", "float"))
SUM = "sum"

SPECS = {
    # creation
    "ns:arange": Spec((OneOf((0, 1, -3, 2.5, 5, 10, -0.5)),),
                      {"stop": OneOf((None, 0, 4, 7, -2, 3.5, 9.0)),
                       "step": OneOf((1, 2, -1, 0.5, -2.5, 3)),
                       "dtype": DType("real-valued")}, tol="ulp"),
    "ns:asarray": Spec((Kinds((A(), OneOf((1, 2.5, True, 1j, [1, 2], [[1.0, 2.0]], [True],
                                           [1, 2.5], [], (1, 2), 2**70, -1, [2**63]))),),),
                       {"dtype": DType(), "copy": Bool(), "device": OneOf((DEVICE,))}),
    "ns:empty": Spec((Shape(),), {"dtype": DType(), "device": OneOf((DEVICE,))}, tol="shape"),
    "ns:empty_like": Spec((A(),), {"dtype": DType(), "device": OneOf((DEVICE,))}, tol="shape"),
    "ns:eye": Spec((Int(0, 5),), {"n_cols": Kinds((Int(0, 5), OneOf((None,)))),
                                  "k": Int(-6, 6), "dtype": DType()}),
    "ns:from_dlpack": Spec((A(),), {"copy": Bool()}),
    "ns:full": Spec((Shape(), Scalar()), {"dtype": DType()}),
    "ns:full_like": Spec((A(), Scalar()), {"dtype": DType()}),
    "ns:linspace": Spec((Scalar(), Scalar(), Int(0, 6)),
                        {"dtype": DType("floating-point"), "endpoint": Bool()}, tol=SUM),
    "ns:meshgrid": Spec((Star(A(max_dims=1, min_dims=1, same_dtype=True)),),
                        {"indexing": OneOf(("xy", "ij", "ji"))}),
    "ns:ones": Spec((Shape(),), {"dtype": DType()}),
    "ns:ones_like": Spec((A(),), {"dtype": DType()}),
    "ns:tril": Spec((A(min_dims=2),), {"k": Int(-4, 4)}),
    "ns:triu": Spec((A(min_dims=2),), {"k": Int(-4, 4)}),
    "ns:zeros": Spec((Shape(),), {"dtype": DType()}),
    "ns:zeros_like": Spec((A(),), {"dtype": DType()}),
    # data type functions
    "ns:astype": Spec((A(), DType(none=False)), {"copy": Bool()}),
    "ns:can_cast": Spec((Kinds((DType(none=False), A())), DType(none=False))),
    "ns:finfo": Spec((Kinds((DType("floating-point", none=False), A("floating-point"))),)),
    "ns:iinfo": Spec((Kinds((DType("integer", none=False), A("integer"))),)),
    "ns:isdtype": Spec((DType(none=False), Kinds((
        OneOf(("bool", "signed integer", "unsigned integer", "integral", "real floating",
               "complex floating", "numeric", "float", ("bool", "numeric"),
               ("integral", "real floating"))),
        DType(none=False))))),
    "ns:result_type": Spec((Star(Kinds((DType(none=False), A(), Scalar()))),)),
    # linear algebra (main namespace)
    "ns:matmul": Spec((A("numeric", 1, tame=True), A("numeric", 1, tame=True)), tol=SUM),
    "ns:matrix_transpose": Spec((A(min_dims=2),)),
    "ns:tensordot": Spec((A("numeric", tame=True), A("numeric", tame=True)),
                         {"axes": OneOf((0, 1, 2, 3, -1, ((0,), (0,)), ((1, 0), (0, 1)),
                                         ((), ())))}, tol=SUM),
    "ns:vecdot": Spec((A("numeric", 1, tame=True), A("numeric", 1, tame=True, shape="like")),
                      {"axis": Axis(none=False)}, tol=SUM),
    # indexing
    "ns:take": Spec((A(min_dims=0), Indices()), {"axis": Axis()}),
    "ns:take_along_axis": Spec((A(min_dims=1), Indices(along=True)), {"axis": Axis(False)}),
    # manipulation
    "ns:broadcast_arrays": Spec((Star(A(shape="like")),)),
    "ns:broadcast_to": Spec((A(), Shape("broadcast"))),
    "ns:concat": Spec((ArraySeq(),), {"axis": Axis()}),
    "ns:expand_dims": Spec((A(), Kinds((Axis(False, 1), Axes(False))))),
    "ns:flip": Spec((A(),), {"axis": Kinds((Axis(), Axes()))}),
    "ns:moveaxis": Spec((A(), Kinds((Axis(False), Axes(False))),
                         Kinds((Axis(False), Axes(False))))),
    "ns:permute_dims": Spec((A(), Perm())),
    "ns:repeat": Spec((A(), Kinds((Int(-1, 3), Indices()))), {"axis": Axis()}),
    "ns:reshape": Spec((A(), Shape("size")), {"copy": Bool()}),
    "ns:roll": Spec((A(), Kinds((Int(-5, 5), OneOf(((1, -1), (2,), ()))))),
                    {"axis": Kinds((Axis(), Axes()))}),
    "ns:squeeze": Spec((A(), Kinds((Axis(False), Axes(False))))),
    "ns:stack": Spec((ArraySeq(),), {"axis": Axis(False, 1)}),
    "ns:tile": Spec((A(), OneOf(((2,), (1, 2), (0,), (2, 1, 1, 1), (), (-1,), 2)))),
    "ns:unstack": Spec((A(),), {"axis": Axis(False)}),
    "ns:broadcast_shapes": Spec((Star(Kinds((Shape(), Shape("broadcast")))),)),
    # searching
    "ns:argmax": Spec((RA,), {"axis": Axis(), "keepdims": Bool()}),
    "ns:argmin": Spec((RA,), {"axis": Axis(), "keepdims": Bool()}),
    "ns:count_nonzero": Spec((A(),), {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}),
    "ns:nonzero": Spec((A(),)),
    "ns:searchsorted": Spec((Sorted1D(), Kinds((A("real-valued", same_dtype=True),
                                                NUM_SCALAR))),
                            {"side": OneOf(("left", "right", "middle"))}),
    "ns:where": Spec((A("bool"), A(), Kinds((A(same_dtype=True), Scalar())))),
    # set
    "ns:unique_all": Spec((A(),)),
    "ns:unique_counts": Spec((A(),)),
    "ns:unique_inverse": Spec((A(),)),
    "ns:unique_values": Spec((A(),)),
    "ns:isin": Spec((A("integer"), Kinds((A("integer"), Scalar(("int",))))),
                    {"invert": Bool()}),
    # sorting
    "ns:argsort": Spec((RA,), {"axis": Axis(False), "descending": Bool(), "stable": Bool()}),
    "ns:sort": Spec((RA,), {"axis": Axis(False), "descending": Bool(), "stable": Bool()}),
    # statistical
    "ns:cumulative_prod": Spec((A("numeric", tame=True),), {"axis": Axis(), "dtype": DType(
        "numeric"), "include_initial": Bool()}, tol=SUM),
    "ns:cumulative_sum": Spec((A("numeric", tame=True),), {"axis": Axis(), "dtype": DType(
        "numeric"), "include_initial": Bool()}, tol=SUM),
    "ns:max": Spec((RA,), {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}),
    "ns:min": Spec((RA,), {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}),
    "ns:mean": Spec((A("floating-point", tame=True),),
                    {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}, tol=SUM,
                    signed_zero=False),
    "ns:prod": Spec((A("numeric", tame=True),), {"axis": Kinds((Axis(), Axes())),
                                                 "dtype": DType("numeric"),
                                                 "keepdims": Bool()}, tol=SUM),
    "ns:std": Spec((A("real floating", tame=True),),
                   {"axis": Kinds((Axis(), Axes())), "correction": OneOf((0, 1, 0.5, 2.0, -1)),
                    "keepdims": Bool()}, tol=SUM),
    "ns:sum": Spec((A("numeric", tame=True),), {"axis": Kinds((Axis(), Axes())),
                                                "dtype": DType("numeric"),
                                                "keepdims": Bool()}, tol=SUM, signed_zero=False),
    "ns:var": Spec((A("real floating", tame=True),),
                   {"axis": Kinds((Axis(), Axes())), "correction": OneOf((0, 1, 0.5, 2.0, -1)),
                    "keepdims": Bool()}, tol=SUM),
    # utility
    "ns:all": Spec((A(),), {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}),
    "ns:any": Spec((A(),), {"axis": Kinds((Axis(), Axes())), "keepdims": Bool()}),
    "ns:diff": Spec((A("numeric", 1),), {"axis": Axis(False), "n": Int(-1, 3),
                                         "prepend": A("numeric", same_dtype=True),
                                         "append": A("numeric", same_dtype=True)}),
    # elementwise with keywords
    "ns:clip": Spec((RA,), {"min": Kinds((NUM_SCALAR, A("real-valued", same_dtype=True),
                                          OneOf((None,)))),
                            "max": Kinds((NUM_SCALAR, A("real-valued", same_dtype=True),
                                          OneOf((None,))))}),
    # namespace info
    "info:capabilities": Spec(()),
    "info:default_device": Spec(()),
    "info:default_dtypes": Spec((), {"device": OneOf((DEVICE, None, "cpu"))}),
    "info:dtypes": Spec((), {"device": OneOf((DEVICE, None)),
                             "kind": OneOf((None, "bool", "signed integer", "unsigned integer",
                                            "integral", "real floating", "complex floating",
                                            "numeric", ("bool", "integral"), "nope"))}),
    "info:devices": Spec(()),
    # linalg
    "linalg:cholesky": Spec((A("floating-point", shape="sym", tame=True),),
                            {"upper": Bool()}, tol=SUM),
    "linalg:cross": Spec((A("numeric", 1, shape=(3,), tame=True),
                          A("numeric", 1, shape=(3,), tame=True)), {"axis": Axis(False)},
                         tol=SUM),
    "linalg:det": Spec((MAT,), tol=SUM),
    "linalg:diagonal": Spec((A(min_dims=2),), {"offset": Int(-4, 4)}),
    "linalg:eigh": Spec((A("floating-point", shape="sym", tame=True),), tol="shape"),
    "linalg:eigvalsh": Spec((A("floating-point", shape="sym", tame=True),), tol=SUM),
    "linalg:inv": Spec((MAT,), tol=SUM),
    "linalg:matmul": Spec((A("numeric", 1, tame=True), A("numeric", 1, tame=True)), tol=SUM),
    "linalg:matrix_norm": Spec((A("floating-point", 2, tame=True),),
                               {"keepdims": Bool(), "ord": OneOf(
                                   ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf"),
                                    3, "max"))}, tol=SUM),
    "linalg:matrix_power": Spec((MAT, Int(-2, 3)), tol=SUM),
    "linalg:matrix_rank": Spec((A("floating-point", 2, tame=True),),
                               {"rtol": OneOf((None, 0.1, 1e-3))}),
    "linalg:matrix_transpose": Spec((A(min_dims=2),)),
    "linalg:outer": Spec((A("numeric", 1, 1, tame=True), A("numeric", 1, 1, tame=True))),
    "linalg:pinv": Spec((A("floating-point", 2, tame=True),), {"rtol": OneOf((None, 0.1))},
                        tol="shape"),
    "linalg:qr": Spec((A("floating-point", 2, tame=True),),
                      {"mode": OneOf(("reduced", "complete", "r"))}, tol="shape"),
    "linalg:slogdet": Spec((MAT,), tol=SUM),
    "linalg:solve": Spec((MAT, A("floating-point", 1, tame=True)), tol="shape"),
    "linalg:svd": Spec((A("floating-point", 2, tame=True),), {"full_matrices": Bool()},
                       tol="shape"),
    "linalg:svdvals": Spec((A("floating-point", 2, tame=True),), tol=SUM),
    "linalg:tensordot": Spec((A("numeric", tame=True), A("numeric", tame=True)),
                             {"axes": OneOf((0, 1, 2, ((0,), (0,))))}, tol=SUM),
    "linalg:trace": Spec((A("numeric", 2, tame=True),), {"offset": Int(-3, 3),
                                                         "dtype": DType("numeric")}, tol=SUM),
    "linalg:vecdot": Spec((A("numeric", 1, tame=True), A("numeric", 1, tame=True,
                                                         shape="like")),
                          {"axis": Axis(False)}, tol=SUM),
    "linalg:vector_norm": Spec((A("floating-point", tame=True),),
                               {"axis": Kinds((Axis(), Axes())), "keepdims": Bool(),
                                "ord": OneOf((2, 1, 0, -1, float("inf"), -float("inf"), 3,
                                              0.5, "fro"))}, tol=SUM),
    "linalg:eig": Spec((MAT,), tol="shape"),
    "linalg:eigvals": Spec((MAT,), tol="shape"),
    # fft
    **{f"fft:{n}": Spec((A(cat, 1, tame=True),), {"n": OneOf((None, 1, 2, 5, 0, -1)),
                                                  "axis": Axis(False),
                                                  "norm": OneOf(("backward", "ortho",
                                                                 "forward", "none"))}, tol=SUM)
       for n, cat in (("fft", "complex floating"), ("ifft", "complex floating"),
                      ("rfft", "real floating"), ("irfft", "complex floating"),
                      ("hfft", "complex floating"), ("ihfft", "real floating"))},
    **{f"fft:{n}": Spec((A(cat, 1, tame=True),), {"s": OneOf((None, (2,), (1, 3), (0,))),
                                                  "axes": Axes(False),
                                                  "norm": OneOf(("backward", "ortho",
                                                                 "forward"))}, tol=SUM)
       for n, cat in (("fftn", "complex floating"), ("ifftn", "complex floating"),
                      ("rfftn", "real floating"), ("irfftn", "complex floating"))},
    "fft:fftfreq": Spec((Int(-1, 6),), {"d": OneOf((1.0, 0.5, 2, 0.0)),
                                        "dtype": DType("real floating"),
                                        "device": OneOf((DEVICE,))}, tol="ulp"),
    "fft:rfftfreq": Spec((Int(-1, 6),), {"d": OneOf((1.0, 0.5, 2, 0.0)),
                                         "dtype": DType("real floating"),
                                         "device": OneOf((DEVICE,))}, tol="ulp"),
    "fft:fftshift": Spec((A("numeric", 1),), {"axes": Kinds((Axes(), Axis()))}),
    "fft:ifftshift": Spec((A("numeric", 1),), {"axes": Kinds((Axes(), Axis()))}),
    # array attributes and conversions
    "attr:T": Spec((A(),)),
    "attr:mT": Spec((A(),)),
    "op:int": Spec((A(max_dims=1),)),
    "op:float": Spec((A(max_dims=1),)),
    "op:complex": Spec((A(max_dims=1),)),
    "op:bool": Spec((A(max_dims=1),)),
    "op:index": Spec((A(max_dims=1),)),
}

# The spec's accuracy is open for these elementwise functions (the transcendental ones of its
# Accuracy page, and those computed through them or through complex division and
# multiplication, whose rounding depends on the formula: sign(z) = z/|z|, complex *, /):
# "ulp" tolerance, signed zeros not compared; the rest are exact.
ULP_FUNCTIONS = {"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh",
                 "exp", "expm1", "log", "log1p", "log2", "log10", "logaddexp", "sin", "sinh",
                 "tan", "tanh", "pow", "hypot", "sqrt", "divide", "multiply", "square",
                 "reciprocal", "sign"}

BINARY_OPS = ("+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "<=", ">",
              ">=", "==", "!=")
OP_FUNCTION = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide",
               "//": "floor_divide", "%": "remainder", "**": "pow", "&": "bitwise_and",
               "|": "bitwise_or", "^": "bitwise_xor", "<<": "bitwise_left_shift",
               ">>": "bitwise_right_shift", "<": "less", "<=": "less_equal", ">": "greater",
               ">=": "greater_equal", "==": "equal", "!=": "not_equal", "~": "bitwise_invert",
               "neg": "negative", "pos": "positive", "abs": "abs"}


def op_parts(name):
    """An operator target's (symbol, mode): mode "" (x op y), "r" (reflected), "=" (in-place)."""
    if name in BINARY_OPS or name in ("@", "~", "neg", "pos", "abs", "getitem", "setitem",
                                      "int", "float", "complex", "bool", "index"):
        return name, ""
    if name.startswith("r"):
        return name[1:], "r"
    assert name.endswith("="), name
    return name[:-1], "="


def _targets():
    t = {f"ns:{n}": None for n in ROWS}
    t.update({k: None for k in SPECS})
    for op in BINARY_OPS:
        t[f"op:{op}"] = None
        if op not in ("<", "<=", ">", ">=", "==", "!="):
            t[f"op:r{op}"] = None
            t[f"op:{op}="] = None
    for op in ("@", "r@", "@=", "~", "neg", "pos", "abs", "getitem", "setitem"):
        t[f"op:{op}"] = None
    return sorted(t)


TARGETS = _targets()


def tolerance(target):
    """(tolerance class, compare signed zeros) for a target."""
    if target in SPECS:
        return SPECS[target].tol, SPECS[target].signed_zero
    kind, _, name = target.partition(":")
    if kind == "op":
        name = op_parts(name)[0]
        if name == "@":
            return SUM, True
        name = OP_FUNCTION.get(name, name)
    return ("ulp" if name in ULP_FUNCTIONS else "exact"), True


# ---- basic indices ------------------------------------------------------------------------------
def basic_index(draw, shape, setting=False):
    """A basic index for an array of ``shape``: ints, slices, ..., None; sometimes out of
    range or malformed; sometimes a boolean mask or an integer array (2024.12)."""
    what = draw(st.integers(0, 11))
    if what == 0 and shape:  # a boolean mask of the leading dims
        k = draw(st.integers(0, len(shape)))
        return Arr("bool", draw(hnp.arrays(bool, shape[:k])))
    if what == 1 and shape:  # integer array(s) (2024.12)
        n = shape[0]
        return Arr("int64", draw(hnp.arrays(np.int64, (draw(st.integers(0, 3)),),
                                            elements=st.integers(-n, max(n - 1, -n)))))
    parts = []
    used = 0
    ellipsis = False
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        c = draw(st.integers(0, 9))
        n = shape[used] if used < len(shape) else 1
        if c <= 2:
            parts.append(draw(st.integers(-n, max(n - 1, -n)) if c else st.integers(-n - 2, n + 2)))
            used += 1
        elif c <= 6:
            step = draw(st.sampled_from((None, 1, 2, -1, -2, 3)))
            parts.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)),
                               draw(st.none() | st.integers(-n - 1, n + 1)), step))
            used += 1
        elif c == 7 and not ellipsis:
            parts.append(Ellipsis)
            ellipsis = True
        elif c == 8:
            parts.append(None)
        else:
            parts.append(draw(st.sampled_from((1.0, True, slice(0, 1, 0), "a", Ellipsis))))
    if len(parts) == 1 and draw(st.booleans()):
        return parts[0]
    return tuple(parts)


# ---- one call -----------------------------------------------------------------------------------
def draw_call(draw, target, revisions=REVISIONS):
    revision = draw(st.sampled_from(revisions))
    if target.startswith("ns:") and target[3:] in LATER:
        revision = draw(st.sampled_from(revisions))  # (gated names: both revisions drawn)
    ctx = Ctx()
    kind, _, name = target.partition(":")
    if target in SPECS:
        spec = SPECS[target]
        args = []
        for k in spec.args:
            if isinstance(k, Star):
                args.extend(k.kind.draw(draw, ctx) for _ in range(draw(st.integers(k.lo,
                                                                                  k.hi))))
            else:
                args.append(k.draw(draw, ctx))
        kwargs = tuple((n, k.draw(draw, ctx)) for n, k in spec.kwargs.items()
                       if draw(st.booleans()))
        # now and then a foreign value in place of one argument (not an operator's own array)
        if not draw(st.integers(0, 24)) and args and kind not in ("attr", "op"):
            i = draw(st.integers(0, len(args) - 1))
            args[i] = draw(st.sampled_from(FOREIGN))
        return Call(target, tuple(args), kwargs, revision)
    if kind == "ns":  # an elementwise function from the table
        arity, cat = ROWS[name][0], ROWS[name][1]
        return Call(target, tuple(_elementwise_args(draw, arity, cat, ctx, name)), (), revision)
    assert kind == "op", target
    if name in ("getitem", "setitem"):
        x = A(tame=True).draw(draw, ctx)
        key = basic_index(draw, ctx.shape, name == "setitem")
        if name == "getitem":
            return Call(target, (x, key), (), revision)
        value = draw(st.one_of(st.just("scalar"), st.just("array")))
        if value == "scalar":
            v = Scalar().draw(draw, ctx)
        else:
            v = A(same_dtype=True, max_dims=1, tame=True).draw(draw, ctx)
        return Call(target, (x, key, v), (), revision)
    if name in ("@", "r@", "@="):
        a, b = A("numeric", 1, tame=True).draw(draw, ctx), A("numeric", 1, tame=True).draw(
            draw, ctx)
        return Call(target, (a, b), (), revision)
    if name in ("~", "neg", "pos", "abs"):
        fn = OP_FUNCTION[name]
        return Call(target, tuple(_elementwise_args(draw, 1, ROWS[fn][1], ctx, fn)), (),
                    revision)
    sym, mode = op_parts(name)
    fn = OP_FUNCTION[sym]
    args = _elementwise_args(draw, 2, ROWS[fn][1], ctx, fn, swap=False)
    if mode == "r":  # reflected: the scalar comes first
        args = [Scalar().draw(draw, ctx), args[0]]
    return Call(target, tuple(args), (), revision)


def _elementwise_args(draw, arity, cat, ctx, name, swap=True):
    if arity == 1:
        return [A(cat).draw(draw, ctx)]
    s1, s2 = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3,
                                                    min_side=0)).input_shapes
    if not draw(st.integers(0, 15)):
        s2 = draw(shapes(0, 3))  # now and then shapes that may not broadcast
    x1 = A(cat, shape=s1).draw(draw, ctx)
    same = draw(st.integers(0, 2))
    x2 = A(cat, shape=s2, same_dtype=bool(same)).draw(draw, ctx)
    if not draw(st.integers(0, 3)):  # a Python scalar (functions: 2024.12; operators: all)
        x2 = Scalar().draw(draw, ctx)
        if swap and not draw(st.integers(0, 5)):
            x1, x2 = x2, x1
    return [x1, x2]
