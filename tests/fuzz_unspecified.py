"""Where xp_cuda may differ from the reference, as data the differential fuzzer consults.

Two lists, every entry with the spec sentence that decides it (quoted) and its page:
- UNSPECIFIED: what the standard leaves open ("unspecified", "implementation-defined", a
  "should" where xp_cuda takes the other side, accuracy of transcendental functions, order of
  operations), so both outcomes conform;
- REFERENCE: where array_api_strict 2.6.1 (the reference) accepts what the spec text refuses or
  gates, or refuses what it allows, and xp_cuda follows the text. These are the reference's
  differences, reported here so that a reader sees why xp_cuda is right.

Each entry's predicate takes (call, xp_cuda's outcome, the reference's outcome) and holds only
for the differences the entry covers. A difference that is a bug of xp_cuda never goes here
(bugs another part of #18 owns are in _fuzz_pending.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SPEC = "https://data-apis.org/array-api/{rev}/API_specification/{page}"


def page(name: str, rev: str = "2023.12") -> str:
    """The URL of a function's page ("sum", "linalg.matrix_rank", "fft.fftfreq")."""
    return SPEC.format(rev=rev, page=f"generated/array_api.{name}.html")


@dataclass(frozen=True)
class Entry:
    name: str
    applies: Callable  # (call, x, r) -> bool
    quote: str
    url: str


def _msg(o):
    return "" if o.exc is None else f"{type(o.exc).__name__}: {o.exc}"


def xp_only_raises(*texts):
    """xp_cuda raises with a message holding one of ``texts``; the reference returns."""
    return lambda c, x, r: r.exc is None and x.exc is not None and any(
        t in _msg(x) for t in texts)


def ref_only_raises(*texts):
    return lambda c, x, r: x.exc is None and r.exc is not None and any(
        t in _msg(r) for t in texts)


def on(targets, pred):
    targets = set(targets)
    return lambda c, x, r: c.target in targets and pred(c, x, r)


def revisions_before(first, pred):
    return lambda c, x, r: c.revision < first and pred(c, x, r)


BOOL_KEYWORDS = ("keepdims must be True or False", "stable must be True or False",
                 "descending must be True or False", "include_initial must be True or False",
                 "invert must be True or False", "endpoint must be True or False",
                 "upper must be True or False", "full_matrices must be True or False",
                 "copy must be True or False", "copy must be True, False or None",
                 "endpoint must be a bool")

UNSPECIFIED = (
    Entry("python scalar of another kind with an explicit dtype",
          on({"ns:asarray", "ns:full", "ns:full_like", "ns:linspace"},
             xp_only_raises("cannot be combined with a", "expected an array or a Python scalar",
                            "must be a Python int, float or complex",
                            "complex start/stop need a complex dtype",
                            "casting complex")),
          "If ``dtype`` is not ``None``, then array conversions should obey Type Promotion "
          "rules. Conversions not specified according to Type Promotion rules may or may not "
          "be permitted by a conforming array library.",
          page("asarray")),
    Entry("arange: float bounds with an integer dtype",
          on({"ns:arange"}, xp_only_raises("float arguments cannot produce")),
          "If ``dtype`` is ``None``, the output array data type must be inferred from "
          "``start``, ``stop`` and ``step``. [...] (nothing is said of float arguments with an "
          "integer ``dtype``)",
          page("arange")),
    Entry("promotion the tables do not list (uint64 with a signed integer)",
          xp_only_raises("cannot be promoted under the Array API"),
          "A conforming implementation of the array API standard may support additional type "
          "promotion rules beyond those described in this specification. [...] Boolean, "
          "integer and floating-point dtypes are not connected, indicating mixed-kind "
          "promotion is undefined. (uint64 with int8..int64 has no entry in the mixed "
          "unsigned and signed integer table.)",
          SPEC.format(rev="2023.12", page="type_promotion.html")),
    Entry("dtype=bool for a sum, product or trace",
          on({"ns:sum", "ns:prod", "ns:cumulative_sum", "ns:cumulative_prod", "linalg:trace"},
             xp_only_raises("is not allowed here; it needs a numeric dtype")),
          "dtype: data type of the returned array. If ``None``, the returned array must have "
          "the default data type [...] (the input should have a numeric data type; no rule "
          "names a boolean result of a sum, and array_api_strict returns NumPy's)",
          page("sum")),
    Entry("isin of real floating arrays (a 'should', not a 'must')",
          on({"ns:isin"}, ref_only_raises("Only integer dtypes are allowed")),
          "x1: first input array. **Should** have an integer data type. [...] Comparison of "
          "arrays without a corresponding promotable data type (see Type Promotion Rules) is "
          "unspecified and thus implementation-defined.",
          page("isin", "2025.12")),
    Entry("the devices an implementation has, and its default device",
          on({"info:devices", "info:default_device"},
             lambda c, x, r: x.exc is None and r.exc is None),
          "Returns a list of supported devices which are available at runtime.",
          page("info.devices")),
    Entry("integer pow with a negative exponent",
          lambda c, x, r: c.target in ("ns:pow", "op:**", "op:r**", "op:**=")
          and x.exc is None and r.exc is not None and "negative integer powers" in _msg(r),
          "If both x1 and x2 have integer data types, the result of pow when x2_i is negative "
          "(i.e., less than zero) is unspecified and thus implementation-dependent.",
          page("pow")),
    Entry("bit shifts by a negative amount",
          lambda c, x, r: c.target.split(":")[1] in (
              "bitwise_left_shift", "bitwise_right_shift", "<<", ">>", "r<<", "r>>", "<<=",
              ">>=") and x.exc is None and r.exc is not None and "x2 >= 0" in _msg(r),
          "x2: second input array. [...] Should have an integer data type. Each element must "
          "be greater than or equal to 0. (The result for a negative shift is not defined.)",
          page("bitwise_left_shift")),
    Entry("linspace with infinite or huge endpoints",
          lambda c, x, r: c.target == "ns:linspace" and x.exc is None and r.exc is None
          and any(isinstance(v, (int, float, complex)) and not isinstance(v, bool)
                  and not _finite_small(v) for v in c.args[:2]),
          "As mixed data type promotion is implementation-defined, behavior when start or "
          "stop exceeds the maximum safe integer of an output floating-point data type is "
          "implementation-defined. An implementation may choose to overflow or raise an "
          "exception.",
          page("linspace")),
    Entry("complex exp/expm1 whose real part overflows: +0 imaginary part or NaN",
          lambda c, x, r: c.target in ("ns:exp", "ns:expm1") and _overflowed_zero_imag(x, r),
          "Calculates an implementation-dependent approximation to exp(x)-1 for each element "
          "x_i of the input array x. (For a finite a with b = +0 the exact result is "
          "(e^a - 1) + 0j; when e^a overflows, the reference computes inf * sin(0) = NaN for "
          "the imaginary part, xp_cuda keeps the +0 of the exact result.)",
          page("expm1")),
    Entry("sign of a complex number with an infinite component",
          lambda c, x, r: c.target == "ns:sign" and _complex_inf_input(c),
          "sign: In the remaining cases, special cases must be handled according to the rules "
          "of complex number division (see divide). divide: In the remaining cases, the result "
          "is implementation dependent. [...] special case behavior is unlikely to be "
          "consistent across implementations.",
          page("sign")),
    Entry("a Python complex beside a real floating array (before 2024.12)",
          lambda c, x, r: c.revision < "2024.12" and xp_only_raises(
              "a Python complex cannot be combined with")(c, x, r),
          "Similarly, behavior is not specified when mixing a Python complex and an array with "
          "a real-valued data type; this may give complex64, complex128, or raise an "
          "exception. Behavior is implementation-specific.",
          SPEC.format(rev="2023.12", page="type_promotion.html")),
    Entry("diff: prepend/append of another dtype",
          on({"ns:diff"}, xp_only_raises("leaves mixed dtypes unspecified")),
          "prepend: [...] Should have the same data type as x.",
          page("diff", "2024.12")),
    Entry("order of the unique elements, and which of -0/+0 is returned",
          lambda c, x, r: c.target.startswith("ns:unique_") and _same_unique(x, r),
          "The order of unique elements is not specified and may vary between "
          "implementations. [...] As -0 and +0 compare as True, signed zeros should not be "
          "considered distinct, and the corresponding unique element will be implementation-"
          "dependent.",
          page("unique_all")),
    Entry("which signed zero max/min return",
          lambda c, x, r: c.target in ("ns:max", "ns:min") and _agree(x, r, signed_zero=False),
          "The order of signed zeros is unspecified and thus implementation-defined. When "
          "choosing between -0 or +0 as a maximum value, specification-compliant libraries "
          "may choose to return either value.",
          page("max")),
    Entry("a Python int outside the range of the dtype",
          lambda c, x, r: (xp_only_raises("is out of range for")(c, x, r)
                           or (c.target == "ns:clip" and _big_int_bound(c))),
          "Behavior is also not specified for integers outside of the bounds of a given "
          "integer data type. Integers outside of bounds may result in overflow or an error.",
          SPEC.format(rev="2023.12", page="type_promotion.html")),
    Entry("a NumPy scalar where the signature names a Python scalar",
          lambda c, x, r: xp_only_raises("got np.float64", "got float64")(c, x, r),
          "start: Union[int, float] (arange); fill_value: Union[bool, int, float, complex] "
          "(full). (A NumPy float64 subclasses float; the standard speaks of Python scalars "
          "and arrays only, and says nothing of other libraries' scalar types.)",
          page("arange")),
    Entry("clip with min greater than max",
          on({"ns:clip"}, ref_only_raises("min must be less than or equal to max")),
          "If a broadcasted element in min is greater than a corresponding broadcasted element "
          "in max, behavior is unspecified and thus implementation-dependent.",
          page("clip")),
    Entry("inv, solve, cholesky of matrices outside their domain (singular, not positive-"
          "definite)",
          lambda c, x, r: c.target in ("linalg:inv", "linalg:solve", "linalg:cholesky")
          and _outside_domain(x, r),
          "inv: The inverse matrix exists if and only if x is invertible. solve: x1 [...] Must "
          "be of full rank [...] Whether an array library explicitly checks whether x1 is "
          "invertible is implementation-defined. cholesky: Whether an array library "
          "explicitly checks whether an input array is Hermitian or a symmetric positive-"
          "definite matrix (or a stack of matrices) is implementation-defined.",
          page("linalg.inv")),
    Entry("factorisations of matrices holding NaN (cuSOLVER against LAPACK)",
          lambda c, x, r: c.target in ("linalg:det", "linalg:slogdet", "linalg:eigh",
                                       "linalg:eigvalsh", "linalg:pinv", "linalg:matrix_rank",
                                       "linalg:svd", "linalg:svdvals", "linalg:inv",
                                       "linalg:solve", "linalg:cholesky", "linalg:eig",
                                       "linalg:eigvals") and _nan_input(c),
          "(The linear algebra pages list no special cases: what a factorisation returns or "
          "raises for NaN input is not specified; an iteration may stop on it, as cuSOLVER's "
          "syevd does, or run through it, as LAPACK's does.)",
          SPEC.format(rev="2023.12", page="extensions/linear_algebra_functions.html")),
    Entry("Fourier transforms of input holding NaN or infinity (cuFFT against pocketfft)",
          lambda c, x, r: c.target.startswith("fft:") and not c.target.endswith(
              ("freq", "shift")) and _nonfinite_input(c),
          "(The fft pages list no special cases: which outputs and which parts of them are NaN "
          "when an input is NaN or infinite is not specified. Each output is a sum over every "
          "input, so a NaN or an infinity may spread to all of them, as in cuFFT's butterflies, "
          "or stay where a length-1 or zero-twiddle path leaves it, as in pocketfft's.)",
          page("fft.fft")),
    Entry("which part of a complex mean carries a NaN",
          lambda c, x, r: c.target == "ns:mean" and _nan_input(c) and _complex_nan_both(x, r),
          "Special cases: If N is 0, the arithmetic mean is NaN. If x_i is NaN, the arithmetic "
          "mean is NaN (i.e., NaN values propagate). (Said of real values: for complex input "
          "nothing says whether a NaN in one part makes the other part NaN; NumPy's complex "
          "division by N does, a division of each part does not.)",
          page("mean", "2024.12")),
    Entry("a slice whose bounds are out of range of an empty axis",
          on({"op:getitem", "op:setitem"}, ref_only_raises("out-of-bounds stops are not "
                                                           "specified", "out-of-bounds")),
          "This specification leaves unspecified the behavior of providing a slice which "
          "attempts to select elements along a particular axis, but whose starting index is "
          "out-of-bounds.",
          SPEC.format(rev="2023.12", page="indexing.html")),
    Entry("fftn family: repeated axes",
          lambda c, x, r: c.target.startswith("fft:") and xp_only_raises("repeats an axis")(
              c, x, r),
          "If axes contains two or more entries which resolve to the same axis (i.e., "
          "resolved axes are not unique), the behavior is unspecified and thus "
          "implementation-defined.",
          page("fft.fftn")),
    Entry("subnormal numbers in a library's arithmetic (flush-to-zero in cuBLAS, cuSOLVER, "
          "cuFFT)",
          lambda c, x, r: _library_backed(c) and _subnormal_input(c),
          "hardware support for subnormal numbers is not universal, and many platforms (e.g., "
          "accelerators) and compilers support toggling denormals-are-zero (DAZ) and/or "
          "flush-to-zero (FTZ) behavior to increase performance [...] Accordingly, subnormal "
          "behavior is left unspecified and, thus, implementation-defined. (Only for the "
          "arithmetic of the libraries xp_cuda calls: cuBLAS's GEMM in matmul and tensordot, "
          "cuSOLVER's factorisations and the linalg functions built on them (det and "
          "slogdet: the LU alone; the sign, logarithms, sum and exp after it are ours), "
          "cuFFT's transforms. xp_cuda's own kernels keep subnormals: elementwise functions, "
          "reductions, scans, conversions, outer, cross, the fft scaling, complex64 unique_*; "
          "the cuda-against-cpu run holds them to it.)",
          SPEC.format(rev="2023.12", page="data_types.html")),
    Entry("accuracy of transcendental functions",
          lambda c, x, r: False,  # (applied as the "ulp" tolerance class of _fuzz_specs)
          "This specification does **not** precisely define the behavior of the following "
          "functions [acos ... tanh, pow] except to require specific results for certain "
          "argument values that represent boundary cases of interest.",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
    Entry("accuracy of statistical and linear algebra functions (order of operations)",
          lambda c, x, r: False,  # (applied as the "sum" tolerance class of _fuzz_specs)
          "This specification does not specify accuracy requirements for statistical "
          "functions [...] This specification does not specify accuracy requirements for "
          "linear algebra functions",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
)

REFERENCE = (
    Entry("the mean of complex values with an infinite part",
          lambda c, x, r: c.target == "ns:mean" and not _nan_input(c)
          and _ref_nan_where_xp_is_not(x, r),
          "Calculates the arithmetic mean of the input array x. (The sum over N: xp_cuda "
          "divides each part by N, so mean(0 + inf j) is 0 + inf j; array_api_strict divides "
          "by NumPy's complex division by N + 0j, whose 0 * inf makes the real part NaN.)",
          page("mean", "2024.12")),
    Entry("a real dtype= for the sum, product or trace of a complex array",
          on({"ns:sum", "ns:prod", "ns:cumulative_sum", "ns:cumulative_prod", "linalg:trace"},
             xp_only_raises("to a real dtype, which the Array API does not permit")),
          "[sum] the input array should be cast to the specified data type before computing "
          "the sum [...] [astype] Casting a complex floating-point array to a real-valued data "
          "type should not be permitted. (array_api_strict drops the imaginary part)",
          page("astype")),
    Entry("a bool keyword given a non-bool (0, None)",
          xp_only_raises(*BOOL_KEYWORDS),
          "keepdims: bool = False  (and likewise stable: bool, descending: bool, "
          "include_initial: bool, invert: bool, endpoint: bool, copy: bool in astype: the "
          "signatures type these flags as bool)",
          page("sum")),
    Entry("an array outside the function's dtype category",
          lambda c, x, r: r.exc is None and x.exc is not None and "requires a" in _msg(x)
          and "dtype (Array API" in _msg(x),
          "Each function page names its inputs' category, e.g. less: x1: first input array. "
          "Should have a real-valued data type. (add, pow: numeric; divide, atan2: floating-"
          "point; logical_and: boolean; matrix_rank: floating-point). array_api_strict 2.6.1's "
          "functions do not check it: add(bool, bool) and divide(int8, int8) return.",
          page("less")),
    Entry("a name or keyword a later revision added, used under an earlier one",
          xp_only_raises("revision of the Array API standard"),
          "fftfreq/rfftfreq: Changed in version 2024.12: Added dtype keyword argument "
          "support. conj/real: Changed in version 2024.12: Added support for real-valued "
          "arrays. expand_dims: Changed in version 2025.12: Added support for specifying a "
          "tuple of axis positions. Indexing: integer array indexing is in the 2024.12 text.",
          page("fft.fftfreq", "2024.12")),
    Entry("an axis of a 0-d array (reductions, argmax/argmin, repeat, squeeze)",
          xp_only_raises("a 0-d array has no axes"),
          "all: A valid axis must be an integer on the interval [-N, N), where N is the rank "
          "(number of dimensions) of x. [...] If provided an invalid axis, the function must "
          "raise an exception. (So for any, count_nonzero, argmax, argmin; repeat: If axis is "
          "not None, let M = x.shape[axis]; a 0-d array has no axis.)",
          page("all")),
    Entry("roll: a tuple shift needs a tuple axis of its length",
          on({"ns:roll"}, xp_only_raises("a tuple shift needs a tuple axis",
                                         "must have the same length")),
          "shift: [...] If shift is a tuple, then axis must be a tuple of the same size, and "
          "each of the given axes must be shifted by the corresponding element in shift.",
          page("roll")),
    Entry("tensordot: a negative int axes",
          on({"ns:tensordot", "linalg:tensordot"}, xp_only_raises("must be between 0 and")),
          "If axes is an int equal to N, then contraction must be performed over the last N "
          "axes of x1 and the first N axes of x2 in order. [...] Must be nonnegative.",
          page("tensordot")),
    Entry("broadcast_shapes: a shape must be a tuple of ints",
          on({"ns:broadcast_shapes"}, xp_only_raises("each shape must be a tuple of ints")),
          "def broadcast_shapes(*shapes: Tuple[Optional[int], ...]) [...] shapes: an arbitrary "
          "number of to-be broadcasted shapes. (Each one a tuple, never a bare int.)",
          page("broadcast_shapes", "2025.12")),
    Entry("diff: prepend/append must have x's shape except along axis",
          on({"ns:diff"}, xp_only_raises("it must have x's shape")),
          "prepend: values to prepend to a specified axis prior to computing differences. "
          "Must have the same shape as x, except for the axis specified by axis which may "
          "have any size.",
          page("diff", "2024.12")),
    Entry("matrix_rank and matrix_norm of empty matrices are defined",
          on({"linalg:matrix_rank", "linalg:matrix_norm"},
             ref_only_raises("zero-size array to reduction")),
          "Returns the rank (i.e., number of non-zero singular values) of a matrix (or a "
          "stack of matrices). (An empty matrix has rank 0; NumPy's max over no singular "
          "values is the reference's error.)",
          page("linalg.matrix_rank")),
    Entry("fftn family: s given without axes",
          lambda c, x, r: c.target.startswith("fft:")
          and xp_only_raises("when s is given, axes must be given too")(c, x, r),
          "s: [...] If s is not None, axes must not be None. Default: None.",
          page("fft.fftn")),
    Entry("sort and argsort of a 0-d array (no axis -1 to sort along)",
          on({"ns:sort", "ns:argsort"}, xp_only_raises("a 0-d array has no axes")),
          "axis: axis along which to sort. If set to -1, the function must sort along the last "
          "axis. (A 0-d array has no last axis: the out-of-range axis rule applies.)",
          page("argsort")),
    Entry("reshape with copy=False of an empty array needs no copy",
          on({"ns:reshape"}, ref_only_raises("Incompatible shape for in-place modification")),
          "copy: whether or not to copy the input array. If True, the function must always "
          "copy. If False, the function must never copy. If None, the function must avoid "
          "copying, if possible, and may copy otherwise. (An empty array reshapes without a "
          "copy; the reference's NumPy in-place shape assignment refuses it.)",
          page("reshape")),
    Entry("cumulative_sum/prod of a 0-d array",
          on({"ns:cumulative_sum", "ns:cumulative_prod"},
             xp_only_raises("needs at least one dimension")),
          "x: input array. Should have one or more dimensions (axes). Should have a numeric "
          "data type.",
          page("cumulative_sum", "2024.12")),
    Entry("permute_dims: axes must be a tuple",
          on({"ns:permute_dims"}, xp_only_raises("axes must be a tuple of ints")),
          "axes: Tuple[int, ...] tuple containing a permutation of (0, 1, ..., N-1) where N "
          "is the number of axes (dimensions) of x.",
          page("permute_dims")),
    Entry("fftfreq/rfftfreq: the window length must be positive",
          on({"fft:fftfreq", "fft:rfftfreq"}, xp_only_raises("must be >= 1")),
          "n: int  window length. [...] f = [0, 1, ..., n/2-1, n/2] / (d*n) (no window has a "
          "length below 1; the reference returns an empty or negative-length result)",
          page("fft.rfftfreq")),
    Entry("diff with n=0 keeps the prepended and appended values",
          lambda c, x, r: c.target == "ns:diff" and dict(c.kwargs).get("n") == 0
          and x.exc is None and r.exc is None
          and any(k in dict(c.kwargs) for k in ("prepend", "append")),
          "prepend: values to prepend to a specified axis prior to computing differences. "
          "[...] n: number of times to recursively compute differences. (With n=0 no "
          "difference is computed: the result is x with prepend and append; NumPy, under the "
          "reference, returns x alone.)",
          page("diff", "2024.12")),
    Entry("qr: mode is 'reduced' or 'complete'",
          on({"linalg:qr"}, xp_only_raises("mode must be 'reduced' or 'complete'")),
          "def qr(x: array, /, *, mode: Literal[\"reduced\", \"complete\"] = \"reduced\")",
          page("linalg.qr")),
    Entry("a shape must be a tuple (broadcast_to)",
          on({"ns:broadcast_to"}, xp_only_raises("shape must be a tuple of ints")),
          "def broadcast_to(x: array, /, shape: Tuple[int, ...]) -> array",
          page("broadcast_to")),
    Entry("diff: an invalid axis raises even with n=0",
          on({"ns:diff"}, xp_only_raises("is out of range for an array")),
          "axis: axis along which to compute differences. A valid axis must be an integer on "
          "the interval [-N, N), where N is the rank (number of dimensions) of x. [...] If "
          "provided an invalid axis, the function must raise an exception.",
          page("diff", "2024.12")),
    Entry("complex expm1 special cases: -infinity with an infinite or NaN imaginary part",
          lambda c, x, r: c.target == "ns:expm1" and _special_neg_inf(c, x, r),
          "If a is -infinity and b is +infinity, the result is -1 + 0j (sign of imaginary "
          "component is unspecified). [...] If a is -infinity and b is NaN, the result is "
          "-1 + 0j (sign of imaginary component is unspecified).",
          page("expm1")),
    Entry("vector_norm and matrix_norm of a complex infinity with a NaN part is +infinity",
          lambda c, x, r: c.target in ("linalg:vector_norm", "linalg:matrix_norm")
          and _inf_where_ref_nan(x, r),
          "abs: If a is either +infinity or -infinity and b is any value (including NaN), the "
          "result is +infinity. (The norm is computed from |x_i|; the reference's x*conj(x) "
          "gives NaN.)",
          page("abs")),
    Entry("isin with a Python scalar x2 and invert=True",
          lambda c, x, r: c.target == "ns:isin" and dict(c.kwargs).get("invert") is True
          and _isin_inverted(c, x, r),
          "invert: boolean indicating whether to invert the test criterion. If True, the "
          "function **must** test whether each element in x1 is *not* in x2. (array_api_strict "
          "2.6.1 ignores invert when x2 is a Python scalar.)",
          page("isin", "2025.12")),
    Entry("tile: repetitions are counts (non-negative)",
          on({"ns:tile"}, xp_only_raises("must be non-negative")),
          "repetitions: Tuple[int, ...] number of repetitions along each axis (dimension). "
          "(A count of repetitions is never negative.)",
          page("tile")),
    Entry("info.default_dtypes: device must be a device object",
          on({"info:default_dtypes"}, xp_only_raises("expected a device object")),
          "device: device for which to return default data types. If device is None, the "
          "returned data types must be the default data types for the current device; "
          "otherwise, the returned data types must be default data types specific to the "
          "specified device. (A device is an object of the library's device type.)",
          page("info.default_dtypes")),
)

ENTRIES = UNSPECIFIED + REFERENCE


def _agree(x, r, signed_zero):
    from _fuzz_engine import compare
    return compare(x, r, "exact", signed_zero) is None


def _same_unique(x, r) -> bool:
    """The unique_* outcomes agree once each is put in one order (values sorted, NaNs last,
    -0 as +0; counts and indices follow their values; inverse indices read through values)."""
    import numpy as np
    if x.exc is not None or r.exc is not None:
        return False

    def canon(o):
        v = o.value
        parts = [v] if v[0] == "array" else list(v[1])
        vals = parts[0][3]
        if parts[0][1] != parts[0][1] or vals.dtype.kind == "c":
            return None
        key = np.where(vals == 0, 0, vals)  # -0 as +0
        order = np.argsort(key, kind="stable")
        out = [(parts[0][1], parts[0][2], key[order].tolist())]
        for p in parts[1:]:
            arr = p[3]
            if arr.shape == vals.shape:  # indices or counts: per unique value
                out.append((p[1], p[2], arr[order].tolist()))
            else:  # inverse indices: the value each element maps to
                out.append((p[1], p[2], key[arr].tolist() if vals.size else arr.tolist()))
        return repr(out)

    try:
        return canon(x) is not None and canon(x) == canon(r)
    except Exception:  # noqa: BLE001  (shapes that do not line up: no agreement)
        return False


# The targets whose arithmetic is a library's (on cuda): cuBLAS's GEMM, cuSOLVER's
# factorisations (CuPy's det and slogdet: its getrf, then the log of the diagonal), cuFFT's
# transforms, LAPACK's geev (eig, on the host). Everything else runs xp_cuda's own kernels.
_LIBRARY_TARGETS = {
    "ns:matmul", "linalg:matmul", "ns:tensordot", "linalg:tensordot", "linalg:matrix_power",
    "linalg:cholesky", "linalg:det", "linalg:slogdet", "linalg:eigh", "linalg:eigvalsh",
    "linalg:inv", "linalg:solve", "linalg:qr", "linalg:svd", "linalg:svdvals",
    "linalg:pinv", "linalg:matrix_rank", "linalg:eig", "linalg:eigvals"}


def _library_backed(c) -> bool:
    kind, _, name = c.target.partition(":")
    if kind == "op":
        from _fuzz_specs import op_parts
        return op_parts(name)[0] == "@"
    if c.target in ("ns:tensordot", "linalg:tensordot"):
        return dict(c.kwargs).get("axes", 2) != 0  # axes=0: our multiply, no GEMM
    if c.target == "linalg:matrix_norm":
        return dict(c.kwargs).get("ord", "fro") in ("nuc", 2, -2)  # by the SVD
    if kind == "fft":
        return not name.endswith(("freq", "shift"))
    return c.target in _LIBRARY_TARGETS


def _subnormal_input(c) -> bool:
    import numpy as np
    for a in list(c.args) + [v for _, v in c.kwargs]:
        vals = a.values() if hasattr(a, "values") else (
            np.asarray(a) if isinstance(a, float) else None)
        if vals is None or vals.dtype.kind not in "fc" or not vals.size:
            continue
        parts = (vals.real, vals.imag) if vals.dtype.kind == "c" else (vals,)
        tiny = np.finfo(parts[0].dtype).smallest_normal
        if any(((p != 0) & (np.abs(p) < tiny)).any() for p in parts):
            return True
    return False


def _nan_input(c) -> bool:
    import numpy as np
    for a in list(c.args) + [v for _, v in c.kwargs]:
        vals = a.values() if hasattr(a, "values") else None
        if vals is not None and vals.dtype.kind in "fc" and vals.size and np.isnan(vals).any():
            return True
    return False


def _nonfinite_input(c) -> bool:
    import numpy as np
    for a in list(c.args) + [v for _, v in c.kwargs]:
        vals = a.values() if hasattr(a, "values") else None
        if vals is not None and vals.dtype.kind in "fc" and vals.size and \
                not np.isfinite(vals).all():
            return True
    return False


def _complex_nan_both(x, r) -> bool:
    """Both sides returned complex values that are NaN at the same places (a complex value
    is NaN where either part is), whichever part holds the NaN."""
    import numpy as np
    if x.exc is not None or r.exc is not None:
        return False
    def values(v):  # an Outcome's array: ("array", dtype, shape, values)
        return np.asarray(v[3]) if isinstance(v, tuple) and v and v[0] == "array" else None
    a, b = values(x.value), values(r.value)
    return a is not None and b is not None and a.shape == b.shape and a.dtype.kind == b.dtype.kind == "c" and \
        bool(np.array_equal(np.isnan(a), np.isnan(b)))


def _ref_nan_where_xp_is_not(x, r) -> bool:
    """Complex results equal except where only the reference's holds a NaN part."""
    import numpy as np
    if x.exc is not None or r.exc is not None:
        return False

    def values(v):
        return np.asarray(v[3]) if isinstance(v, tuple) and v and v[0] == "array" else None
    a, b = values(x.value), values(r.value)
    if a is None or b is None or a.shape != b.shape or a.dtype.kind != "c":
        return False
    extra = np.isnan(b) & ~np.isnan(a)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return bool(extra.any() and (same | extra).all())


def _outside_domain(x, r) -> bool:
    """One side refuses the matrix (singular, not positive-definite) and the other returns,
    or either result holds non-finite values (what an unchecked factorisation gives)."""
    import numpy as np
    if (x.exc is None) != (r.exc is None):
        o = x if x.exc is not None else r
        return any(w in _msg(o) for w in ("ingular", "positive", "definite", "invertible"))
    if x.exc is not None:
        return False
    return any(v[0] == "array" and v[3].size and not np.isfinite(v[3]).all()
               for v in (x.value, r.value))


def _isin_inverted(c, x, r) -> bool:
    """xp_cuda's answer is the exact negation of the reference's, and the reference's is
    what invert=False gives (it ignored invert)."""
    import numpy as np
    if x.exc is not None or r.exc is not None or not isinstance(c.args[1], int):
        return False
    v = c.args[0].values()
    return bool(np.array_equal(r.value[3], v == c.args[1])
                and np.array_equal(x.value[3], ~r.value[3]))


def _big_int_bound(c) -> bool:
    import numpy as np
    kw = dict(c.kwargs)
    dt = c.args[0].values().dtype if hasattr(c.args[0], "values") else None
    if dt is None or dt.kind not in "iu":
        return False
    info = np.iinfo(dt)
    return any(type(v) is int and not info.min <= v <= info.max
               for v in (kw.get("min"), kw.get("max")))


def _special_neg_inf(c, x, r) -> bool:
    """Where xp_cuda and the reference differ, the input is -inf + (inf or NaN)j, xp_cuda's
    result is -1 + 0j (either zero) as the special case asks."""
    import numpy as np
    if x.exc is not None or r.exc is not None or not hasattr(c.args[0], "values"):
        return False
    v, a, b = c.args[0].values(), x.value[3], r.value[3]
    if a.dtype.kind != "c" or a.shape != v.shape:
        return False
    with np.errstate(all="ignore"):
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        special = (v.real == -np.inf) & (np.isinf(v.imag) | np.isnan(v.imag))
        ok = special & (a.real == -1) & (a.imag == 0)
    return bool(differ.any() and np.all(ok[differ]))


def _inf_where_ref_nan(x, r) -> bool:
    import numpy as np
    if x.exc is not None or r.exc is not None or x.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.shape != b.shape or a.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        ok = (a == np.inf) & np.isnan(b)
    return bool(differ.any() and np.all(ok[differ]))


def _complex_inf_input(c) -> bool:
    import numpy as np
    v = c.args[0].values() if hasattr(c.args[0], "values") else None
    return v is not None and v.dtype.kind == "c" and bool(
        np.any(np.isinf(v.real) | np.isinf(v.imag)))


def _finite_small(v) -> bool:
    parts = (v.real, v.imag) if isinstance(v, complex) else (v,)
    return all(abs(p) < 2.0 ** 53 for p in parts)  # (NaN compares False: not small)


def _overflowed_zero_imag(x, r) -> bool:
    """Where the results differ, the reference's imaginary part is NaN, xp_cuda's is 0 and
    the real parts agree on an infinity (and nowhere else do they differ)."""
    import numpy as np
    if x.exc is not None or r.exc is not None or x.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.dtype.kind != "c" or a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        odd = ~same
        ok = np.isinf(a.real) & (a.real == b.real) & (a.imag == 0) & np.isnan(b.imag)
    return bool(np.all(ok[odd]))


def unspecified(call, x, r):
    """The entry that covers this difference, or None."""
    for e in ENTRIES:
        if e.applies(call, x, r):
            return e
    return None
