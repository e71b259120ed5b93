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
                            "needs Python int start and stop",
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
          lambda c, x, r: c.target.startswith("ns:unique_") and _same_unique(c, x, r),
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
    Entry("max/min over an empty axis where the result holds no elements",
          on({"ns:max", "ns:min"}, lambda c, x, r: ref_only_raises(
              "zero-size array to reduction")(c, x, r) and x.value[0] == "array"
             and 0 in x.value[2]),
          "When the number of elements over which to compute the maximum value is zero, the "
          "maximum value is implementation-defined. Specification-compliant libraries may "
          "choose to raise an error, return a sentinel value [...] (xp_cuda raises where an "
          "output element has no elements; a result with no elements needs no value.)",
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
          lambda c, x, r: (c.target in ("linalg:inv", "linalg:solve", "linalg:cholesky")
                           or _inverse_power(c) and _finite_matrices(c) is not None)
          and _outside_domain(x, r),
          "inv: The inverse matrix exists if and only if x is invertible. solve: x1 [...] Must "
          "be of full rank [...] Whether an array library explicitly checks whether x1 is "
          "invertible is implementation-defined. cholesky: Whether an array library "
          "explicitly checks whether an input array is Hermitian or a symmetric positive-"
          "definite matrix (or a stack of matrices) is implementation-defined. (matrix_power "
          "with n < 0 inverts first.)",
          page("linalg.inv")),
    Entry("factorisations of matrices holding NaN or infinity (cuSOLVER against LAPACK)",
          lambda c, x, r: _factorisation(c) and _nonfinite_input(c)
          and _factorisation_outcomes(x, r),
          "(The linear algebra pages list no special cases: what a factorisation returns or "
          "raises for NaN or infinite input is not specified; an iteration may stop on it, as "
          "cuSOLVER's syevd does, or run through it, as LAPACK's does, and an LU may call a "
          "pivot of inf - inf singular or carry its NaN on. So for inv, solve, det, slogdet, "
          "eigh, svd, pinv, matrix_rank, matrix_power with n < 0 (an inverse) and "
          "matrix_norm with ord 2, -2 or 'nuc' (singular values).)",
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
    Entry("writes into a broadcast view: refused by NumPy always, on cuda where elements "
          "overlap",
          lambda c, x, r: _readonly_broadcast(c, x, r),
          "Array API consumers are *strongly* advised to avoid *any* mutating operations when "
          "an array object may be either a \"view\" (i.e., an array whose data refers to "
          "memory that belongs to another array) or own memory of which one or more other "
          "array objects may be views. This admonition may become more strict in the future "
          "(e.g., this specification may require that view mutation be prohibited and trigger "
          "an exception). (NumPy marks every broadcast_to result and every view of one "
          "read-only; xp_cuda on cuda refuses only views whose elements share memory, so a "
          "broadcast that repeats nothing, or an empty one, stays writable there.)",
          SPEC.format(rev="2023.12", page="../design_topics/copies_views_and_mutation.html")),
    Entry("complex special cases with an infinite part of unspecified sign",
          lambda c, x, r: c.target in _UNSIGNED_INF_SPECIALS and _excused(
              c, x, r, _opposite_infinities(c)),
          "sinh: If a is +infinity and b is NaN, the result is infinity + NaN j (sign of the "
          "real component is unspecified). asinh: If a is NaN and b is +infinity, the result "
          "is ±infinity + NaN j (sign of the real component is unspecified). acos: If a is "
          "either +infinity or -infinity and b is NaN, the result is NaN ± infinity j (sign "
          "of the imaginary component is unspecified). (Likewise cosh (+infinity + infinity "
          "j only), exp, expm1, sqrt; sin, asin, cos are specified through them: For complex "
          "floating-point operands, special cases must be handled as if the operation is "
          "implemented as -1j * sinh(x*1j). Held to exactly those inputs and that part.)",
          page("sinh")),
    Entry("abs of complex values: a rounding of sqrt(a^2 + b^2)",
          lambda c, x, r: c.target in ("ns:abs", "op:abs") and _complex_arg(c)
          and _agree_within(x, r, "ulp"),
          "For complex floating-point operands, the complex absolute value is known as the "
          "norm, modulus, or magnitude and, for a complex number z = a + bj is computed as "
          "abs(z) = sqrt(a^2 + b^2). [...] conforming implementations should take care to "
          "avoid undue overflow or underflow during intermediate stages of computation. "
          "(Accuracy: only + - * / % must return the nearest representable value; a scaled "
          "hypot is not correctly rounded and its last bit depends on the scaling.)",
          page("abs")),
    Entry("complex log1p: the textbook log(1 + z) loses absolute accuracy near 0",
          lambda c, x, r: c.target == "ns:log1p" and _excused(c, x, r, _log1p_rounding(c)),
          "This specification does **not** precisely define the behavior of the following "
          "functions [...] log1p [...] except to require specific results for certain argument "
          "values that represent boundary cases of interest. (NumPy's complex log1p is "
          "log(hypot(1 + a, b)) + atan2(b, 1 + a) j: rounding 1 + z costs up to an eps of "
          "absolute error, e.g. log1p(0.01j).real 4.99975001665547e-05 against "
          "4.999750016665417e-05, and 0 for a tiny a. Held to: one side is that formula, the "
          "two differ by at most 4 eps.)",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
    Entry("floats cast to an integer dtype: NaN, infinity, and values out of its range",
          lambda c, x, r: _float_to_int_out_of_range(c, x, r),
          "astype: Casting floating-point NaN and infinity values to integral data types is "
          "not specified and is implementation-dependent. Type promotion: Behavior is also not "
          "specified for integers outside of the bounds of a given integer data type. "
          "Integers outside of bounds may result in overflow or an error. (sum, prod, "
          "cumulative_sum, trace with an integer dtype=: the input array should be cast to "
          "the specified data type before computing the sum.)",
          page("astype")),
    Entry("std of values that (nearly) agree: rounding noise around 0",
          lambda c, x, r: c.target == "ns:std" and _std_noise(c, x, r),
          "This specification does not specify accuracy requirements for statistical "
          "functions. (The deviations from a mean carry that mean's rounding error, up to "
          "n eps times the largest magnitude; where the values agree to that, both standard "
          "deviations are that noise: NumPy's float32 std of three equal values is "
          "5.3e-23 where the exact one, and ours, is 0.)",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
    Entry("det of a singular matrix: rounding noise around 0",
          lambda c, x, r: c.target == "linalg:det" and _det_noise(c, x, r),
          "This specification does not specify accuracy requirements for linear algebra "
          "functions. (An LU of an exactly or numerically singular matrix leaves a pivot of "
          "rounding noise; both determinants lie within 4 n eps times the product of the row "
          "norms (Hadamard's bound) of 0, and their signs and digits depend on the order of "
          "operations.)",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
    Entry("inv of a numerically singular matrix: huge values of no precision",
          lambda c, x, r: (c.target == "linalg:inv" or _inverse_power(c))
          and _inv_singular(c, x, r),
          "inv: The inverse matrix exists if and only if x is invertible. [...] This "
          "specification does not specify accuracy requirements for linear algebra functions. "
          "(Where the smallest singular value is within 4 n eps of the largest, both inverses "
          "are rounding noise scaled by 1/eps; so are their powers, for matrix_power with "
          "n < 0.)",
          page("linalg.inv")),
    Entry("complex products with an infinite part: NaN or infinity by the order of operations",
          lambda c, x, r: _complex_product_target(c) and _inf_input(c) and _excused(
              c, x, r, _nan_against_inf),
          "multiply: When at least one of a, b, c, or d is NaN, +infinity, or -infinity, - If "
          "a, b, c, and d are all NaN, the result is NaN + NaN j. - In the remaining cases, "
          "the result is implementation dependent. [...] Accordingly, special case behavior "
          "is unlikely to be consistent across implementations. (vecdot, matmul, tensordot, "
          "matrix_power sum such products in an order the standard leaves open: inf + "
          "(inf * 0) is NaN, inf alone is not.)",
          page("multiply")),
    Entry("complex squares whose parts overflow: NaN or infinity by the order of operations",
          lambda c, x, r: c.target in ("ns:square", "op:**") and _complex_arg(c)
          and _excused(c, x, r, _nan_against_inf),
          "square: For complex floating-point operands, special cases must be handled as if "
          "the operation is implemented as x * x (see multiply). multiply: [...] special case "
          "behavior is unlikely to be consistent across implementations. (The real part of "
          "(a + a j)^2 is a*a - a*a: inf - inf = NaN once a*a overflows, as the spec's "
          "formula gives; NumPy's loop returns -inf there.)",
          page("square")),
    Entry("which part of a complex product carries a NaN",
          lambda c, x, r: c.target in ("ns:prod", "ns:cumulative_prod") and _nan_input(c)
          and _excused(c, x, r, _both_complex_nan),
          "prod: For both real-valued and complex floating-point operands, special cases "
          "must be handled as if the operation is implemented by successive application of "
          "multiply. multiply: When at least one of a, b, c, or d is NaN, +infinity, or "
          "-infinity, - If a, b, c, and d are all NaN, the result is NaN + NaN j. - In the "
          "remaining cases, the result is implementation dependent. (prod(0 + NaN j) is "
          "0 + NaN j in xp_cuda, (1 + 0j) * (0 + NaN j) = NaN + NaN j in NumPy.)",
          page("prod")),
    Entry("accuracy of transcendental functions",
          lambda c, x, r: False,  # (applied as the "ulp" tolerance class of _fuzz_specs)
          "This specification does **not** precisely define the behavior of the following "
          "functions [acos ... tanh, pow] except to require specific results for certain "
          "argument values that represent boundary cases of interest.",
          SPEC.format(rev="2023.12", page="../design_topics/accuracy.html")),
    Entry("matrix_power of a matrix holding an infinity: NaN by the order of the products",
          on({"linalg:matrix_power"}, lambda c, x, r: len(c.args) > 1
             and isinstance(c.args[1], int) and c.args[1] >= 3 and _nonfinite_input(c)
             and _nan_on_one_side(x, r)),
          "This specification does not specify accuracy requirements for linear algebra "
          "functions (nor the order of the products from n = 3 on: (x @ x) @ x and "
          "x @ (x @ x) differ where an infinity meets a zero or an opposite infinity; NumPy "
          "takes the first for n = 3, xp_cuda's binary powering the second. One product, "
          "n = 2, has no such freedom: a dot product holding inf - inf or 0 * inf is NaN in "
          "any order)",
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
          lambda c, x, r: c.target == "ns:mean" and _ref_nan_where_xp_is_not(x, r)
          and _mean_by_parts(c, x),
          "Calculates the arithmetic mean of the input array x. (The sum over N: xp_cuda "
          "divides each part by N, so mean(0 + inf j) is 0 + inf j; array_api_strict divides "
          "by NumPy's complex division by N + 0j, whose 0 * inf makes the real part NaN. "
          "xp_cuda's result must be each part's own mean.)",
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
    Entry("irfft of an empty axis: the input zero-padded to n//2+1",
          on({"fft:irfft", "fft:irfftn"}, lambda c, x, r: _empty_input(c)
             and _zeros_result(x) and r.exc is None),
          "If n//2+1 is greater than M, the axis of the input array specified by axis must be "
          "zero-padded to size n//2+1. (An empty input is all zeros once padded, so the "
          "result is zeros; NumPy 2.4's pocketfft returns uninitialized memory for it, values "
          "that change from call to call.)",
          page("fft.irfft")),
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
    Entry("complex expm1 special cases: an infinite real part with an infinite or NaN "
          "imaginary part",
          lambda c, x, r: c.target == "ns:expm1" and _excused(c, x, r, _expm1_specials(c)),
          "If a is +infinity and b is +infinity, the result is ±infinity + NaN j (sign of real "
          "component is unspecified). If a is -infinity and b is +infinity, the result is "
          "-1 + 0j (sign of imaginary component is unspecified). If a is +infinity and b is "
          "NaN, the result is ±infinity + NaN j (sign of real component is unspecified). If "
          "a is -infinity and b is NaN, the result is -1 + 0j (sign of imaginary component is "
          "unspecified). (The reference gives NaN + NaN j for these; one array may hold both "
          "kinds.)",
          page("expm1")),
    Entry("vector_norm and matrix_norm of a complex infinity with a NaN part is +infinity",
          lambda c, x, r: c.target in ("linalg:vector_norm", "linalg:matrix_norm")
          and _inf_where_ref_nan(x, r),
          "abs: If a is either +infinity or -infinity and b is any value (including NaN), the "
          "result is +infinity. (The norm is computed from |x_i|; the reference's x*conj(x) "
          "gives NaN.)",
          page("abs")),
    Entry("isin with invert=True",
          lambda c, x, r: c.target == "ns:isin" and dict(c.kwargs).get("invert") is True
          and _isin_inverted(c, x, r),
          "invert: boolean indicating whether to invert the test criterion. If True, the "
          "function **must** test whether each element in x1 is *not* in x2. (array_api_strict "
          "2.6.1 ignores invert: its isin returns np.isin(x1, x2) whatever invert is.)",
          page("isin", "2025.12")),
    Entry("sort with descending=True keeps equal values in their order (signed zeros)",
          on({"ns:sort"}, lambda c, x, r: dict(c.kwargs).get("descending") is True
             and dict(c.kwargs).get("stable", True) is True and _stable_descending(c, x, r)),
          "stable: sort stability. If True, the returned array must maintain the relative "
          "order of x values which compare as equal. (-0 and +0 compare as equal; "
          "array_api_strict 2.6.1 flips an ascending sort, which reverses them.)",
          page("sort")),
    Entry("expand_dims: axis is an int or a tuple, not a list",
          on({"ns:expand_dims"}, xp_only_raises("got the list")),
          "axis: axis position(s) (zero-based). [...] int | Tuple[int, ...] (a list is "
          "neither; the reference passes it to NumPy)",
          page("expand_dims", "2025.12")),
    Entry("repeat: repeats are counts (non-negative), also for an empty array",
          on({"ns:repeat"}, xp_only_raises("must be non-negative")),
          "repeats: the number of repetitions for each element. (A count is never negative; "
          "NumPy checks it only where there are elements to repeat.)",
          page("repeat", "2023.12")),
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


_INVERSE_AT = {"ns:unique_all": 2, "ns:unique_inverse": 1}


def _same_unique(c, x, r) -> bool:
    """The unique_* outcomes agree once each is put in one order (each value with what
    belongs to it, sorted by the value's text; -0 as +0, in each part of a complex value;
    inverse indices read through values). Every NaN is its own value, so two NaN entries of
    one text are told apart by their first index or count only."""
    import numpy as np
    if x.exc is not None or r.exc is not None:
        return False

    def canon(o):
        v = o.value
        parts = [v] if v[0] == "array" else list(v[1])
        vals = parts[0][3]
        if vals.dtype.kind == "c":  # part by part (1j * inf would make the real part NaN)
            key = np.empty_like(vals)
            key.real = np.where(vals.real == 0, 0, vals.real)
            key.imag = np.where(vals.imag == 0, 0, vals.imag)
        else:
            key = np.where(vals == 0, 0, vals)
        texts = [repr(k) for k in key.tolist()]
        inv = _INVERSE_AT.get(c.target)  # the inverse indices' place in the tuple
        per_value = [p for k, p in enumerate(parts) if 0 < k != inv]
        rows = sorted((t,) + tuple(p[3][i].item() for p in per_value)
                      for i, t in enumerate(texts))
        out = [(p[1], p[2]) for p in parts] + rows
        if inv is not None:  # inverse indices: the value each element maps to
            out.append([texts[i] for i in parts[inv][3].reshape(-1).tolist()])
        return repr(out)

    try:
        return canon(x) == canon(r)
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


def _mean_by_parts(c, x) -> bool:
    """xp_cuda's complex mean is the real parts' mean plus j times the imaginary parts' (NaN
    where either part's values hold one), over the call's axis and keepdims."""
    import numpy as np
    if x.exc is not None or x.value[0] != "array" or not hasattr(c.args[0], "values"):
        return False
    v, kw = c.args[0].values(), dict(c.kwargs)
    ax = kw.get("axis")
    keep = bool(kw.get("keepdims"))
    with np.errstate(all="ignore"):  # each part on its own (1j * inf would be nan + inf j)
        want = [np.mean(p.astype(np.float64), axis=ax, keepdims=keep) for p in (v.real, v.imag)]
        got = np.asarray(x.value[3])
        if got.shape != np.shape(want[0]):
            return False
        return all(bool(np.all(np.isclose(g, w, rtol=1e-5, equal_nan=True) | (g == w)))
                   for g, w in zip((got.real, got.imag), want))


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
    """Complex results equal part by part except where only the reference's part is NaN."""
    import numpy as np
    if x.exc is not None or r.exc is not None:
        return False

    def values(v):
        return np.asarray(v[3]) if isinstance(v, tuple) and v and v[0] == "array" else None
    a, b = values(x.value), values(r.value)
    if a is None or b is None or a.shape != b.shape or a.dtype.kind != "c":
        return False
    extra = same = None
    for p, q in ((a.real, b.real), (a.imag, b.imag)):
        e = np.isnan(q) & ~np.isnan(p)
        m = (p == q) | (np.isnan(p) & np.isnan(q)) | e
        extra = e if extra is None else extra | e
        same = m if same is None else same & m
    return bool(extra.any() and same.all())


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
    if x.exc is not None or r.exc is not None:
        return False
    v1, v2 = (a.values() if hasattr(a, "values") else a for a in c.args[:2])
    if not hasattr(v1, "dtype") and not hasattr(v2, "dtype"):
        return False
    return bool(np.array_equal(r.value[3], np.isin(v1, v2))
                and np.array_equal(x.value[3], ~r.value[3]))


def _nan_on_one_side(x, r) -> bool:
    """Both return arrays of one shape, and wherever they differ one of them holds NaN."""
    import numpy as np
    if x.exc is not None or r.exc is not None or x.value[0] != "array" or r.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        return bool(differ.any() and (np.isnan(a) | np.isnan(b))[differ].all())


def _empty_input(c) -> bool:
    a = c.args[0] if c.args else None
    v = a.values() if hasattr(a, "values") else None
    return v is not None and v.size == 0


def _zeros_result(x) -> bool:
    import numpy as np
    return x.exc is None and x.value[0] == "array" and x.value[3].size > 0 and bool(
        np.all(x.value[3] == 0))


def _stable_descending(c, x, r) -> bool:
    """xp_cuda's sorted values, signs of zero included, are the stable descending order of
    the input along the axis (flip, stable ascending sort, flip), and the reference's differ
    from them only in the sign of zeros."""
    import numpy as np
    if x.exc is not None or r.exc is not None or not hasattr(c.args[0], "values"):
        return False
    v = c.args[0].values()
    ax = dict(c.kwargs).get("axis", -1)
    if v.ndim == 0 or v.dtype.kind not in "f":
        return False
    want = np.flip(np.sort(np.flip(v, ax), axis=ax, kind="stable"), ax)
    a, b = x.value[3], r.value[3]
    same = (a == want) | (np.isnan(a) & np.isnan(want))
    return bool(same.all() and np.array_equal(np.signbit(a), np.signbit(want))
                and _agree(x, r, signed_zero=False))


def _big_int_bound(c) -> bool:
    import numpy as np
    kw = dict(c.kwargs)
    dt = c.args[0].values().dtype if hasattr(c.args[0], "values") else None
    if dt is None or dt.kind not in "iu":
        return False
    info = np.iinfo(dt)
    return any(type(v) is int and not info.min <= v <= info.max
               for v in (kw.get("min"), kw.get("max")))


def _expm1_specials(c):
    """Marks the parts of complex expm1 results whose input is a special case of the spec's
    with an infinite or NaN part, where xp_cuda's result is the one listed: -1 + 0j (either
    zero) for -inf + (inf or NaN)j, ±inf + NaN j for +inf + (inf or NaN)j, and the zero
    imaginary part kept for +inf + 0j and NaN + 0j. The rest is compared as before."""
    import numpy as np
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None

    def excuse(a, b):
        if v is None or v.dtype.kind != "c" or a.dtype.kind != "c" or a.shape != v.shape:
            return None
        re, im = v.real, v.imag
        other = np.isinf(im) | np.isnan(im)
        neg = (re == -np.inf) & other & (a.real == -1) & (a.imag == 0)
        pos = (re == np.inf) & other & np.isinf(a.real) & np.isnan(a.imag)
        zero = ((re == np.inf) | np.isnan(re)) & (im == 0) & (a.imag == 0) & (
            np.signbit(a.imag) == np.signbit(im))
        return neg | pos, neg | pos | zero
    return excuse


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


# ---- helpers of the entries for the GPU sweep's differences (writes, complex special cases,
# casts, singular matrices, complex products) --------------------------------------------------
def _arrays_of(c):
    """The NumPy values of every array argument of a call (positional and keyword)."""
    return [a.values() for a in list(c.args) + [v for _, v in c.kwargs]
            if hasattr(a, "values")]


def _complex_arg(c) -> bool:
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None
    return v is not None and v.dtype.kind == "c"


def _inf_input(c) -> bool:
    import numpy as np
    for v in _arrays_of(c):
        if v.dtype.kind in "fc" and v.size and (np.isinf(v.real).any()
                                                or np.isinf(v.imag).any()):
            return True
    return False


def _agree_within(x, r, tol) -> bool:
    from _fuzz_engine import compare
    return x.exc is None and r.exc is None and compare(x, r, tol, False) is None


def _readonly_broadcast(c, x, r) -> bool:
    """An in-place operator or setitem on an array built through broadcast_to: one side
    refuses it as read-only (NumPy's flag), the other writes, and the view repeats no element
    (so that the side that writes has no race to refuse)."""
    from _fuzz_specs import op_parts
    kind, _, name = c.target.partition(":")
    if kind != "op" or not (name == "setitem" or op_parts(name)[1] == "="):
        return False
    a = c.args[0] if c.args else None
    if not hasattr(a, "steps") or not any(k == "broadcast" for k, _ in a.steps):
        return False

    def refused(o):
        return isinstance(o.exc, ValueError) and "read-only" in str(o.exc)

    if not ((refused(x) and r.exc is None) or (refused(r) and x.exc is None)):
        return False
    v = a.values()
    overlaps = v.size > 1 and any(st == 0 and d > 1 for st, d in zip(v.strides, v.shape))
    return not overlaps


def _excused(c, x, r, excuse) -> bool:
    """x and r agree under the target's tolerance once the parts that ``excuse`` marks are
    set aside, and at least one marked part differs. ``excuse(a, b)`` takes two result
    arrays of one dtype and shape and returns a mask per part ((real, imag) for complex)."""
    import numpy as np
    from _fuzz_engine import Outcome, compare
    from _fuzz_specs import tolerance
    if x.exc is not None or r.exc is not None:
        return False
    marked = [False]

    def walk(a, b):
        if isinstance(a, tuple) and a and a[0] == "array":
            if not (isinstance(b, tuple) and b and b[0] == "array") or a[1:3] != b[1:3]:
                return a, b
            va, vb = np.array(a[3], copy=True), np.array(b[3], copy=True)
            with np.errstate(all="ignore"):
                masks = excuse(va, vb)
            if masks is None:
                return a, b
            if va.dtype.kind == "c":
                parts = ((va.real, vb.real, masks[0]), (va.imag, vb.imag, masks[1]))
            else:
                parts = ((va, vb, masks),)
            for pa, pb, m in parts:
                m = np.asarray(m, dtype=bool)
                with np.errstate(all="ignore"):
                    differ = m & ~((pa == pb) | (np.isnan(pa) & np.isnan(pb)))
                marked[0] |= bool(differ.any())
                pa[m] = 0
                pb[m] = 0
            return ("array", a[1], a[2], va), ("array", b[1], b[2], vb)
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2 \
                and isinstance(a[1], tuple) and isinstance(b[1], tuple) \
                and len(a[1]) == len(b[1]):
            pairs = [walk(p, q) for p, q in zip(a[1], b[1])]
            return (a[0], tuple(p for p, _ in pairs)), (b[0], tuple(q for _, q in pairs))
        return a, b

    a, b = walk(x.value, r.value)
    tol, signed_zero = tolerance(c.target)
    return marked[0] and compare(Outcome(value=a), Outcome(value=b), tol, signed_zero) is None


# Where a special case leaves the sign of an infinite part open: per function, the input
# elements (a + bj) and the part (0 real, 1 imaginary) of the result. From the spec's lists
# (each function is conjugate-symmetric, sinh and asinh odd, cosh even, so the cases for
# a, b >= +0 cover the other signs): sinh: +inf + (inf or NaN)j -> infinity + NaN j; cosh:
# +inf + inf j -> infinity + NaN j (but +inf + NaN j -> +infinity + NaN j: specified); exp,
# expm1: +inf + (inf or NaN)j -> infinity + NaN j; sqrt: -inf + NaN j -> NaN + infinity j;
# asinh: NaN + inf j -> ±infinity + NaN j; acos: ±inf + NaN j -> NaN ± infinity j. sin,
# cos, asin through sinh(x*1j), cosh(x*1j), asinh(x*1j) (x*1j is -b + aj).
def _isinf(p):
    import numpy as np
    return np.isinf(p)


def _isnan(p):
    import numpy as np
    return np.isnan(p)


_UNSIGNED_INF_SPECIALS = {
    "ns:sinh": (0, lambda a, b: _isinf(a) & (_isinf(b) | _isnan(b))),
    "ns:sin": (1, lambda a, b: _isinf(b) & (_isinf(a) | _isnan(a))),
    "ns:cosh": (0, lambda a, b: _isinf(a) & _isinf(b)),
    "ns:cos": (0, lambda a, b: _isinf(a) & _isinf(b)),
    "ns:exp": (0, lambda a, b: (a == float("inf")) & (_isinf(b) | _isnan(b))),
    "ns:expm1": (0, lambda a, b: (a == float("inf")) & (_isinf(b) | _isnan(b))),
    "ns:sqrt": (1, lambda a, b: (a == -float("inf")) & _isnan(b)),
    "ns:asinh": (0, lambda a, b: _isnan(a) & _isinf(b)),
    "ns:asin": (1, lambda a, b: _isinf(a) & _isnan(b)),
    "ns:acos": (1, lambda a, b: _isinf(a) & _isnan(b)),
}


def _opposite_infinities(c):
    """Marks the part a special case leaves open (_UNSIGNED_INF_SPECIALS) where both results
    hold infinities of opposite signs in it and NaN in the other part."""
    import numpy as np
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None
    part, cases = _UNSIGNED_INF_SPECIALS[c.target]

    def excuse(a, b):
        if v is None or v.dtype.kind != "c" or a.dtype.kind != "c" or a.shape != v.shape:
            return None
        special = cases(v.real, v.imag)
        ps = ((a.real, b.real), (a.imag, b.imag))
        (pa, pb), (qa, qb) = ps[part], ps[1 - part]
        flipped = special & np.isinf(pa) & (pa == -pb) & np.isnan(qa) & np.isnan(qb)
        none = np.zeros(a.shape, dtype=bool)
        return (flipped, none) if part == 0 else (none, flipped)
    return excuse


def _log1p_rounding(c):
    """Marks a finite part where one side is NumPy's textbook formula log(hypot(1 + a, b)) +
    atan2(b, 1 + a) j (to 2 ulp) and the two sides differ by at most 4 eps (absolute)."""
    import numpy as np
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None

    def excuse(a, b):
        if v is None or v.dtype.kind != "c" or a.dtype.kind != "c" or a.shape != v.shape:
            return None
        one = v.real.dtype.type(1)
        textbook = (np.log(np.hypot(one + v.real, v.imag)),
                    np.arctan2(v.imag, one + v.real))
        eps = float(np.finfo(a.real.dtype).eps)
        out = []
        for pa, pb, t in ((a.real, b.real, textbook[0]), (a.imag, b.imag, textbook[1])):
            pa64, pb64, t64 = (np.asarray(p, dtype=np.float64) for p in (pa, pb, t))
            near = np.abs(pa64 - pb64) <= 4 * eps
            is_textbook = (np.abs(pa64 - t64) <= 2 * eps * np.abs(t64)) | (
                np.abs(pb64 - t64) <= 2 * eps * np.abs(t64))
            out.append(np.isfinite(pa64) & np.isfinite(pb64) & near & is_textbook)
        return tuple(out)
    return excuse


_CAST_TARGETS = {"ns:astype", "ns:asarray", "ns:sum", "ns:prod", "ns:cumulative_sum",
                 "ns:cumulative_prod", "linalg:trace"}


def _float_to_int_out_of_range(c, x, r) -> bool:
    """A real floating array cast to an integer dtype (astype's dtype, asarray's or a sum's
    dtype=) holds NaN, an infinity or a value whose truncation is outside the dtype; for
    astype and asarray the results differ only at those elements."""
    import numpy as np
    if c.target not in _CAST_TARGETS or x.exc is not None or r.exc is not None:
        return False
    kw = dict(c.kwargs)
    dt = c.args[1] if c.target == "ns:astype" and len(c.args) > 1 else kw.get("dtype")
    src = c.args[0] if c.args else None
    if not hasattr(dt, "name") or not hasattr(src, "values"):
        return False
    v = src.values()
    if v.dtype.kind != "f" or np.dtype(dt.name).kind not in "iu":
        return False
    info = np.iinfo(np.dtype(dt.name))
    with np.errstate(all="ignore"):
        t = np.trunc(v.astype(np.float64))
        # (float(info.max) + 1 rounds to 2**63 / 2**64 for the 64-bit types: the exact bound)
        outside = ~np.isfinite(t) | (t < float(info.min)) | (t >= float(info.max) + 1)
    if not outside.any():
        return False
    if c.target in ("ns:sum", "ns:prod", "ns:cumulative_sum", "ns:cumulative_prod",
                    "linalg:trace"):
        return True  # one wrapped or saturated term changes the whole sum
    a, b = x.value, r.value
    if not (a[0] == b[0] == "array") or a[1:3] != b[1:3] or a[3].shape != v.shape:
        return False
    return bool(np.all(outside[a[3] != b[3]]))


_FACTORISATIONS = {"linalg:det", "linalg:slogdet", "linalg:eigh", "linalg:eigvalsh",
                   "linalg:pinv", "linalg:matrix_rank", "linalg:svd", "linalg:svdvals",
                   "linalg:inv", "linalg:solve", "linalg:cholesky", "linalg:eig",
                   "linalg:eigvals"}


def _inverse_power(c) -> bool:
    """matrix_power with n < 0: it inverts its matrix first."""
    if c.target != "linalg:matrix_power":
        return False
    n = c.args[1] if len(c.args) > 1 else dict(c.kwargs).get("n")
    return type(n) is int and n < 0


def _factorisation(c) -> bool:
    """The target factorises its matrix (an LU, an eigen- or singular value iteration)."""
    if c.target in _FACTORISATIONS:
        return True
    if _inverse_power(c):
        return True
    if c.target == "linalg:matrix_norm":
        return dict(c.kwargs).get("ord", "fro") in (2, -2, "nuc")  # singular values
    return False


def _factorisation_outcomes(x, r) -> bool:
    """Each side returned or reported a failed factorisation (a ValueError: singular, no
    convergence, not positive-definite, failed); an argument error is no factorisation's."""
    for o in (x, r):
        if o.exc is not None and not (isinstance(o.exc, ValueError) and any(
                w in str(o.exc).lower() for w in ("singular", "converge", "definite",
                                                  "failed"))):
            return False
    return True


def _finite_matrices(c):
    """The first argument's stack of square finite floating matrices, or None."""
    import numpy as np
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None
    if v is None or v.dtype.kind not in "fc" or v.ndim < 2 or v.shape[-1] != v.shape[-2] \
            or not v.size or not np.isfinite(v).all():
        return None
    return v


def _std_noise(c, x, r) -> bool:
    """Both standard deviations are finite and within 4 n eps * (the largest magnitude of
    the input) of 0 wherever they differ, n the input's size."""
    import numpy as np
    v = c.args[0].values() if c.args and hasattr(c.args[0], "values") else None
    if v is None or v.dtype.kind != "f" or not v.size or not np.isfinite(v).all() \
            or x.exc is not None or r.exc is not None or x.value[0] != "array" \
            or r.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.shape != b.shape:
        return False
    bound = 4 * v.size * float(np.finfo(v.dtype).eps) * float(np.abs(v).max())
    with np.errstate(all="ignore"):
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        small = np.isfinite(a) & np.isfinite(b) & (np.abs(a) <= bound) & (np.abs(b) <= bound)
    return bool(differ.any() and np.all(small[differ]))


def _det_noise(c, x, r) -> bool:
    """Both determinants are finite and within 4 n eps * (product of the row norms) of 0
    wherever they differ."""
    import numpy as np
    v = _finite_matrices(c)
    if v is None or x.exc is not None or r.exc is not None or x.value[0] != "array" \
            or r.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.shape != b.shape or a.shape != v.shape[:-2]:
        return False
    n = v.shape[-1]
    eps = float(np.finfo(v.dtype).eps)
    with np.errstate(all="ignore"):
        wide = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
        bound = 4 * n * eps * np.prod(np.linalg.norm(wide, axis=-1), axis=-1)
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        small = np.isfinite(a) & np.isfinite(b) & (np.abs(a) <= bound) & (np.abs(b) <= bound)
    return bool(differ.any() and np.all(small[differ]))


def _inv_singular(c, x, r) -> bool:
    """Both sides return inverses, and every matrix whose inverses differ is numerically
    singular: its smallest singular value is at most 4 n eps times its largest."""
    import numpy as np
    v = _finite_matrices(c)
    if v is None or x.exc is not None or r.exc is not None or x.value[0] != "array" \
            or r.value[0] != "array":
        return False
    a, b = x.value[3], r.value[3]
    if a.shape != b.shape or a.shape != v.shape:
        return False
    n = v.shape[-1]
    eps = float(np.finfo(v.dtype).eps)
    wide = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
    s = np.linalg.svd(wide.reshape((-1, n, n)), compute_uv=False)
    singular = s[..., -1] <= 4 * n * eps * s[..., 0]
    with np.errstate(all="ignore"):
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    differ = differ.reshape((-1, n * n)).any(axis=-1)
    return bool(differ.any() and np.all(singular[differ]))


_PRODUCT_TARGETS = {"ns:vecdot", "linalg:vecdot", "ns:matmul", "linalg:matmul", "op:@",
                    "op:r@", "op:@=", "linalg:matrix_power", "ns:tensordot",
                    "linalg:tensordot"}


def _complex_product_target(c) -> bool:
    return c.target in _PRODUCT_TARGETS


def _nan_against_inf(a, b):
    """Marks a part of a complex result that is NaN on one side and an infinity on the other."""
    import numpy as np
    if a.dtype.kind != "c":
        return None

    def one(pa, pb):
        return (np.isnan(pa) & np.isinf(pb)) | (np.isinf(pa) & np.isnan(pb))
    return one(a.real, b.real), one(a.imag, b.imag)


def _both_complex_nan(a, b):
    """Marks both parts of an element that is a complex NaN (a NaN part) on both sides."""
    import numpy as np
    if a.dtype.kind != "c":
        return None
    both = np.isnan(a) & np.isnan(b)
    return both, both


def unspecified(call, x, r):
    """The entry that covers this difference, or None."""
    for e in ENTRIES:
        if e.applies(call, x, r):
            return e
    return None


# ---- known cases ------------------------------------------------------------------------------
def known_cases():
    """(call, xp_cuda's outcome, the reference's outcome, the entry's name or None) for the
    entries written from the GPU sweep of 300 examples per target: each difference it found
    that the standard leaves open, and beside each a plain wrong value the entry must not
    cover (None). A test asserts that check_known_cases() finds nothing wrong."""
    import numpy as np
    from _fuzz_engine import Arr, Call, Dt, Outcome

    inf, nan = np.inf, np.nan

    def arr(dt, v):
        v = np.asarray(v, dtype=dt)
        return ("array", dt, v.shape, v)

    def ok(dt, v):
        return Outcome(value=arr(dt, v))

    def A(dt, v, *steps):
        return Arr(dt, np.asarray(v, dtype=dt), tuple(steps))

    ro = Outcome(exc=ValueError("an in-place operator: this array is read-only: a broadcast "
                                "view (...); copy it first with xp.asarray(x, copy=True)"))
    ro_set = Outcome(exc=ValueError("__setitem__: this array is read-only: a broadcast view"))
    cases = []
    name = "writes into a broadcast view: refused by NumPy always, on cuda where elements " \
           "overlap"
    five = A("int64", [5], ("broadcast", (1,)))
    for op in ("op:+=", "op:*=", "op:/="):
        call = Call(op, (five, A("uint32", [0])))
        cases.append((call, Outcome(value=("tuple", (arr("int64", [5]), arr("int64", [5])))),
                      ro, name))
    call = Call("op:setitem", (A("bool", [False] * 3, ("broadcast", (1, 3))),
                               A("bool", False), False))
    cases.append((call, ok("bool", [[False] * 3]), ro_set, name))
    # a broadcast that repeats elements: cuda must refuse it too (a race), no excuse
    call = Call("op:+=", (A("int64", [5], ("broadcast", (3,))), A("int64", 1)))
    cases.append((call, ok("int64", [6, 6, 6]), ro, None))
    # an empty view with no broadcast step refused on cuda: the lead's bug (a), no excuse
    call = Call("op:&=", (A("uint64", np.zeros((2, 2, 1)), ("getitem", (slice(None),
                                                                         slice(None),
                                                                         slice(0, 0)))),
                          A("uint64", 8)))
    cases.append((call, ro, ok("uint64", np.zeros((2, 2, 0))), None))

    name = "complex special cases with an infinite part of unspecified sign"
    for f, z, xs, rs in (("ns:sin", complex(nan, inf), complex(nan, -inf), complex(nan, inf)),
                         ("ns:sin", complex(-inf, -inf), complex(nan, -inf),
                          complex(nan, inf)),
                         ("ns:asin", complex(-inf, nan), complex(nan, -inf),
                          complex(nan, inf)),
                         ("ns:asinh", complex(nan, inf), complex(-inf, nan),
                          complex(inf, nan))):
        call = Call(f, (A("complex128", [[z, 1 + 1j]]),))
        cases.append((call, ok("complex128", [[xs, np.sin(1 + 1j)]]),
                      ok("complex128", [[rs, np.sin(1 + 1j)]]), name))
    # the same flip for a finite input is a wrong value
    call = Call("ns:sin", (A("complex128", [1 + 1j]),))
    cases.append((call, ok("complex128", [complex(nan, -inf)]),
                  ok("complex128", [complex(nan, inf)]), None))
    # cosh(+inf + NaN j) is +infinity + NaN j, asinh(-inf + NaN j) is -infinity + NaN j:
    # specified signs, no excuse
    call = Call("ns:cosh", (A("complex128", [complex(inf, nan)]),))
    cases.append((call, ok("complex128", [complex(-inf, nan)]),
                  ok("complex128", [complex(inf, nan)]), None))
    call = Call("ns:asinh", (A("complex128", [complex(-inf, nan)]),))
    cases.append((call, ok("complex128", [complex(inf, nan)]),
                  ok("complex128", [complex(-inf, nan)]), None))
    call = Call("ns:cos", (A("complex64", [complex(inf, inf)]),))
    cases.append((call, ok("complex64", [complex(-inf, nan)]),
                  ok("complex64", [complex(inf, nan)]), name))
    # ... and so is a flipped infinity whose other part is not NaN
    call = Call("ns:sin", (A("complex128", [complex(nan, inf)]),))
    cases.append((call, ok("complex128", [complex(1.0, -inf)]),
                  ok("complex128", [complex(1.0, inf)]), None))

    name = "abs of complex values: a rounding of sqrt(a^2 + b^2)"
    z = A("complex128", [23.136 + 15.7674j, -9.2992e+15 - 50j])
    for t in ("ns:abs", "op:abs"):
        cases.append((Call(t, (z,)), ok("float64", [27.998150376668516, 9.2992e+15]),
                      ok("float64", [27.998150376668512, 9.2992e+15]), name))
    cases.append((Call("ns:abs", (A("complex64", [-2.662 - 50j]),)),
                  ok("float32", [50.070812]), ok("float32", [50.070816]), name))
    cases.append((Call("ns:abs", (z,)), ok("float64", [28.0, 9.2992e+15]),
                  ok("float64", [27.998150376668512, 9.2992e+15]), None))
    cases.append((Call("ns:abs", (A("float64", [-1.5]),)), ok("float64", [1.5000000000000002]),
                  ok("float64", [1.5]), None))

    name = "complex log1p: the textbook log(1 + z) loses absolute accuracy near 0"
    zs = np.array([0.01j, 2.5318e-229 + 2.5318e-229j, -1.1921e-07 - 4.9087e-161j, 2.7 - 0j])
    with np.errstate(all="ignore"):
        textbook = np.log(np.hypot(1 + zs.real, zs.imag)) + 1j * np.arctan2(zs.imag,
                                                                             1 + zs.real)
    accurate = textbook.copy()
    accurate[0] = complex(4.999750016665417e-05, textbook[0].imag)
    accurate[1] = complex(2.5318e-229, textbook[1].imag)
    accurate[2] = complex(textbook[2].real + 4.9e-17, textbook[2].imag)
    call = Call("ns:log1p", (A("complex128", zs),))
    cases.append((call, ok("complex128", accurate), ok("complex128", textbook), name))
    wrong = accurate.copy()
    wrong[0] = complex(5.1e-05, wrong[0].imag)
    cases.append((call, ok("complex128", wrong), ok("complex128", textbook), None))
    wrong = accurate.copy()
    wrong[1] = complex(1e-300, wrong[1].imag)  # tiny, but the textbook side says 0: not it
    cases.append((call, ok("complex128", accurate), ok("complex128", wrong), None))

    name = "floats cast to an integer dtype: NaN, infinity, and values out of its range"
    cases.append((Call("ns:astype", (A("float64", inf), Dt("int8"))), ok("int8", -1),
                  ok("int8", 0), name))
    cases.append((Call("ns:astype", (A("float64", 5.3231e+16), Dt("uint8")), (("copy", True),)),
                  ok("uint8", 255), ok("uint8", 0), name))
    cases.append((Call("ns:asarray", (A("float32", [inf, 11.6, -0.0, inf]),),
                       (("dtype", Dt("int64")),)),
                  ok("int64", [2**63 - 1, 11, 0, 2**63 - 1]),
                  ok("int64", [-2**63, 11, 0, -2**63]), name))
    cases.append((Call("ns:sum", (A("float64", [41.513, 3.9308e-293, 0.99999, -35.15]),),
                       (("dtype", Dt("uint16")),)), ok("uint16", 41), ok("uint16", 6), name))
    cases.append((Call("ns:sum", (A("float64", [inf, 0.0, 0.0, -0.0]),),
                       (("dtype", Dt("uint32")),)), ok("uint32", 2**32 - 1),
                  ok("uint32", 0), name))
    # in range: the casts must agree
    cases.append((Call("ns:asarray", (A("float32", [inf, 11.6]),), (("dtype", Dt("int64")),)),
                  ok("int64", [-2**63, 12]), ok("int64", [-2**63, 11]), None))
    cases.append((Call("ns:sum", (A("float64", [41.5, 1.5]),), (("dtype", Dt("uint16")),)),
                  ok("uint16", 43), ok("uint16", 42), None))

    name = "factorisations of matrices holding NaN or infinity (cuSOLVER against LAPACK)"
    call = Call("linalg:eigvalsh", (A("float64", [[[inf]], [[inf]]]),))
    cases.append((call, ok("float64", [[nan], [nan]]), ok("float64", [[inf], [inf]]), name))
    m = [[[-inf, 0.0], [0.0, -inf], [0.0, 1.0]]] * 3
    call = Call("linalg:matrix_norm", (A("float32", m),), (("ord", -2),))
    cases.append((call, ok("float32", [0.0] * 3), Outcome(exc=ValueError(
        "matrix_norm: the singular value iteration did not converge")), name))
    call = Call("linalg:matrix_power", (A("float32", [[47.1, inf, 1.0], [inf, 47.1, 27.9],
                                                      [1.0, 2.0, 3.0]]), -1))
    cases.append((call, ok("float32", np.full((3, 3), nan)), ok("float32", np.zeros((3, 3))),
                  name))
    # an argument error is no factorisation's
    call = Call("linalg:cholesky", (A("float64", [[inf, 1.0], [1.0, 2.0]]),),
                (("upper", None),))
    cases.append((call, Outcome(exc=TypeError("cholesky: upper must be True or False, got "
                                              "None")), ok("float64", [[inf, 0], [0, 1]]),
                  "a bool keyword given a non-bool (0, None)"))
    # the Frobenius norm is no factorisation (bug (e), the lead's): no excuse
    call = Call("linalg:matrix_norm", (A("complex64", [[complex(nan, -inf), 1.0]]),),
                (("ord", "fro"),))
    cases.append((call, ok("float32", nan), ok("float32", inf), None))
    # nor is a positive power (products: their own entry, complex only)
    call = Call("linalg:matrix_power", (A("float32", [[inf, 1.0], [1.0, 2.0]]), 2))
    cases.append((call, ok("float32", [[nan, inf], [inf, 5.0]]),
                  ok("float32", [[inf, inf], [inf, 5.0]]), None))

    name = "std of values that (nearly) agree: rounding noise around 0"
    same = A("float32", [8.535065e-16] * 3)
    cases.append((Call("ns:std", (same,)), ok("float32", 0.0), ok("float32", 5.293956e-23),
                  name))
    cases.append((Call("ns:std", (same,)), ok("float32", 1e-18), ok("float32", 5.293956e-23),
                  None))  # beyond the noise
    cases.append((Call("ns:std", (A("float32", [1.0, 2.0, 4.0]),)), ok("float32", 1.2472192),
                  ok("float32", 1.2472191), None))  # values apart: the sum tolerance's

    name = "det of a singular matrix: rounding noise around 0"
    sing = A("float64", [0.95, -37.8519], ("broadcast", (2, 2, 2)))
    cases.append((Call("linalg:det", (sing,)), ok("float64", [3.514233559142815e-15] * 2),
                  ok("float64", [-6.750155989720951e-15] * 2), name))
    cases.append((Call("linalg:det", (sing,)), ok("float64", [1e-6] * 2),
                  ok("float64", [-6.750155989720951e-15] * 2), None))
    cases.append((Call("linalg:det", (A("float64", [[2.0, 1.0], [1.0, 3.0]]),)),
                  ok("float64", 5.0000001), ok("float64", 5.0), None))

    name = ("inv, solve, cholesky of matrices outside their domain (singular, not positive-"
            "definite)")
    flat = A("complex64", [1 + 0.75j], ("broadcast", (3, 3)))  # exactly singular
    refused = Outcome(exc=ValueError("inv: x is singular (not invertible) (Singular matrix)"))
    cases.append((Call("linalg:matrix_power", (flat, -1)),
                  ok("complex64", np.full((3, 3), 3e6 - 2e6j)), refused, name))
    # a positive power inverts nothing: no excuse
    cases.append((Call("linalg:matrix_power", (flat, 2)),
                  ok("complex64", np.full((3, 3), 3e6 - 2e6j)), refused, None))

    name = "inv of a numerically singular matrix: huge values of no precision"
    big = np.array([[-1.077101634364923e+16, 4.3e14], [-2.7e14, 1.08e16]])
    cases.append((Call("linalg:inv", (sing,)), ok("float64", [big, big]),
                  ok("float64", [-big / 2, -big / 2]), name))
    well = A("float64", [[2.0, 1.0], [1.0, 3.0]])
    inv = np.linalg.inv(well.values())
    cases.append((Call("linalg:inv", (well,)), ok("float64", inv * 1.001), ok("float64", inv),
                  None))
    cases.append((Call("linalg:matrix_power", (sing, -1)), ok("float64", [big, big]),
                  ok("float64", [-big / 2, -big / 2]), name))

    name = "complex products with an infinite part: NaN or infinity by the order of operations"
    u = A("complex64", [complex(inf, -0.0), 2 - 0j])
    for t in ("ns:vecdot", "linalg:vecdot"):
        cases.append((Call(t, (u, u)), ok("complex64", complex(inf, nan)),
                      ok("complex64", complex(nan, nan)), name))
    call = Call("op:@", (A("float64", [1.0], ("broadcast", (1,))),
                         A("complex64", [[complex(inf, 0), 2.0]])))
    cases.append((call, ok("complex128", [complex(nan, nan), 2.0]),
                  ok("complex128", [complex(inf, nan), 2.0]), name))
    call = Call("linalg:matrix_power", (A("complex64", [[[complex(inf, -inf)]]]), 2))
    cases.append((call, ok("complex64", [[[complex(nan, nan)]]]),
                  ok("complex64", [[[complex(nan, -inf)]]]), name))
    # finite inputs: a NaN against a finite value or an infinity is a wrong value
    v = A("complex64", [1 + 1j, 2 - 0j])
    cases.append((Call("ns:vecdot", (v, v)), ok("complex64", complex(nan, 0)),
                  ok("complex64", complex(6, 0)), None))
    cases.append((Call("ns:vecdot", (u, u)), ok("complex64", complex(inf, 1.0)),
                  ok("complex64", complex(inf, nan)), None))

    name = "complex squares whose parts overflow: NaN or infinity by the order of operations"
    big = A("complex128", [complex(-1.6056e187, -1.6056e187), 1 + 2j])
    cases.append((Call("ns:square", (big,)), ok("complex128", [complex(nan, inf), -3 + 4j]),
                  ok("complex128", [complex(-inf, inf), -3 + 4j]), name))
    cases.append((Call("ns:square", (big,)), ok("complex128", [complex(nan, inf), -3 + 5j]),
                  ok("complex128", [complex(-inf, inf), -3 + 4j]), None))

    name = "which part of a complex product carries a NaN"
    call = Call("ns:prod", (A("complex128", complex(0, nan)),), (("dtype", Dt("complex128")),))
    cases.append((call, ok("complex128", complex(0, nan)), ok("complex128", complex(nan, nan)),
                  name))
    cases.append((call, ok("complex128", complex(0, 0)), ok("complex128", complex(nan, nan)),
                  None))
    call = Call("ns:prod", (A("complex128", [[complex(0, nan)], [2.0]]),), (("axis", 1),))
    cases.append((call, ok("complex128", [complex(0, nan), 3.0]),
                  ok("complex128", [complex(nan, nan), 2.0]), None))

    # found by the fuzzer at 120 examples a target (2026-12-02)
    name = ("complex expm1 special cases: an infinite real part with an infinite or NaN "
            "imaginary part")
    z = A("complex64", [complex(inf, inf), complex(-inf, nan), complex(nan, 0), 0.5 + 1j])
    good = [complex(inf, nan), complex(-1, 0), complex(nan, 0), np.expm1(0.5 + 1j)]
    ref = [complex(nan, nan), complex(nan, nan), complex(nan, nan), np.expm1(0.5 + 1j)]
    cases.append((Call("ns:expm1", (z,)), ok("complex64", good), ok("complex64", ref), name))
    cases.append((Call("ns:expm1", (z,)), ok("complex64", good[:3] + [2 + 1j]),
                  ok("complex64", ref), None))  # a wrong finite value beside them
    cases.append((Call("ns:expm1", (z,)), ok("complex64", [complex(1, nan)] + good[1:]),
                  ok("complex64", ref), None))  # a finite real part where the spec has inf

    name = "isin with invert=True"
    x1, x2 = A("int16", -1396), A("uint32", [[[7, 4]]])
    call = Call("ns:isin", (x1, x2), (("invert", True),), "2025.12")
    cases.append((call, ok("bool", True), ok("bool", False), name))
    call = Call("ns:isin", (A("int16", 4), x2), (("invert", True),), "2025.12")
    cases.append((call, ok("bool", True), ok("bool", True), None))  # 4 is in x2

    name = "sort with descending=True keeps equal values in their order (signed zeros)"
    v = [-2.0, -0.0, 0.0, 1.0]
    call = Call("ns:sort", (A("float32", v),), (("descending", True),), "2025.12")
    cases.append((call, ok("float32", [1.0, -0.0, 0.0, -2.0]),
                  ok("float32", [1.0, 0.0, -0.0, -2.0]), name))
    cases.append((call, ok("float32", [1.0, 0.0, -0.0, -2.0]),
                  ok("float32", [1.0, -0.0, 0.0, -2.0]), None))  # the unstable order

    name = "max/min over an empty axis where the result holds no elements"
    raised = Outcome(exc=ValueError("zero-size array to reduction operation maximum which has "
                                    "no identity"))
    call = Call("ns:max", (A("uint16", np.zeros((0, 0))),), (("axis", (1,)),
                                                              ("keepdims", True)))
    cases.append((call, ok("uint16", np.zeros((0, 1))), raised, name))
    call = Call("ns:max", (A("uint16", np.zeros((3, 0))),), (("axis", (1,)),))
    cases.append((call, ok("uint16", [0, 0, 0]), raised, None))  # outputs with no elements

    name = "expand_dims: axis is an int or a tuple, not a list"
    call = Call("ns:expand_dims", (A("int64", [[1]]), [1, 2]), (), "2025.12")
    cases.append((call, Outcome(exc=TypeError("expand_dims: axis must be an integer or a tuple "
                                              "of integers, got the list [1, 2]")),
                  ok("int64", [[[[1]]]]), name))

    name = "order of the unique elements, and which of -0/+0 is returned"
    # values with an infinite part keep their other part: 2 + inf j is not 3 + inf j
    zi = A("complex64", [complex(2, inf), complex(3, inf)])
    call = Call("ns:unique_values", (zi,), (), "2024.12")
    cases.append((call, ok("complex64", [complex(3, inf), complex(2, inf)]),
                  ok("complex64", [complex(2, inf), complex(3, inf)]), name))
    cases.append((call, ok("complex64", [complex(2, inf), complex(2, inf)]),
                  ok("complex64", [complex(2, inf), complex(3, inf)]), None))
    zc = A("complex64", [complex(nan, 1), 2 + 0j, complex(nan, 1), 2 - 0j])
    vals = [2 + 0j, complex(nan, 1), complex(nan, 1)]
    call = Call("ns:unique_inverse", (zc,), (), "2024.12")
    cases.append((call, Outcome(value=("namedtuple", (arr("complex64", vals),
                                                      arr("int64", [1, 0, 2, 0])))),
                  Outcome(value=("namedtuple", (arr("complex64", vals[::-1]),
                                                arr("int64", [0, 2, 1, 2])))), name))
    cases.append((call, Outcome(value=("namedtuple", (arr("complex64", vals),
                                                      arr("int64", [1, 0, 2, 1])))),
                  Outcome(value=("namedtuple", (arr("complex64", vals[::-1]),
                                                arr("int64", [0, 2, 1, 2])))), None))

    name = "matrix_power of a matrix holding an infinity: NaN by the order of the products"
    m = A("float64", [[inf, 0.5], [-2.0, inf]])
    call = Call("linalg:matrix_power", (m, 3))
    cases.append((call, ok("float64", [[inf, nan], [nan, inf]]),
                  ok("float64", [[nan, nan], [nan, inf]]), name))
    cases.append((call, ok("float64", [[inf, 1.0], [nan, inf]]),
                  ok("float64", [[inf, 2.0], [nan, inf]]), None))  # finite values differ
    finite = Call("linalg:matrix_power", (A("float64", [[1.0, 0.5], [-2.0, 1.0]]), 3))
    cases.append((finite, ok("float64", [[nan, 1.0], [1.0, 1.0]]),
                  ok("float64", [[2.0, 1.0], [1.0, 1.0]]), None))  # no infinity: a bug

    name = "irfft of an empty axis: the input zero-padded to n//2+1"
    call = Call("fft:irfft", (A("complex64", np.zeros(0)),), (("n", 2),))
    cases.append((call, ok("float32", [0.0, 0.0]), ok("float32", [4.4e-13, 4.4e-13]), name))
    cases.append((call, ok("float32", [1.0, 0.0]), ok("float32", [4.4e-13, 4.4e-13]), None))

    name = "the mean of complex values with an infinite part"
    v = A("complex128", [[complex(inf, 21.0), 2 + 3j], [complex(1.0, 1.0), complex(nan, 1.0)]])
    call = Call("ns:mean", (v,), (("axis", 0),), "2024.12")
    cases.append((call, ok("complex128", [complex(inf, 11.0), complex(nan, 2.0)]),
                  ok("complex128", [complex(inf, nan), complex(nan, 2.0)]), name))
    cases.append((call, ok("complex128", [complex(inf, 12.0), complex(nan, 2.0)]),
                  ok("complex128", [complex(inf, nan), complex(nan, 2.0)]), None))

    name = "repeat: repeats are counts (non-negative), also for an empty array"
    call = Call("ns:repeat", (A("int16", np.zeros((0, 0, 0))), -1), (("axis", -1),),
                "2025.12")
    cases.append((call, Outcome(exc=ValueError("repeat: repeats=-1 must be non-negative")),
                  ok("int16", np.zeros((0, 0, 0))), name))
    return cases


def check_known_cases():
    """The known cases whose entry ``unspecified`` does not give: (call, expected, got)."""
    bad = []
    for call, x, r, want in known_cases():
        got = unspecified(call, x, r)
        if (got.name if got is not None else None) != want:
            bad.append((call, want, got.name if got is not None else None))
    return bad
