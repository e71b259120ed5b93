"""The differential fuzzer (issue #18): random calls of every public function and operator,
xp_cuda on cpu against array_api_strict at the same revision, and on a GPU xp_cuda's cuda:0
against its cpu.

Every call draws a revision, its arguments (every dtype, 0-d, empty, broadcast, strided,
flipped and permuted arrays, Python scalars, valid and invalid axes, shapes and keywords, now
and then a foreign value), runs on both sides and compares: same dtype and shape, values exact
or within the target's tolerance class (_fuzz_engine), both raise or neither. A difference is a
failure unless tests/fuzz_unspecified.py lists it (what the standard leaves unspecified, with
its sentence) or tests/_fuzz_pending.py does (a bug another part of #18 owns; to be emptied).
Every exception xp_cuda raises is checked by the leak rule (_fuzz_engine.leak).

Budget: ``XP_CUDA_FUZZ_EXAMPLES`` examples per target (default 25 in CI, derandomized so a
failure reproduces). ``XP_CUDA_FUZZ_COLLECT=path`` records every difference and leak as a JSON
line in ``path`` instead of failing (for surveys; see the counts it writes too).
"""
from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))

import xp_cuda as xp  # noqa: E402
from xp_cuda import _revisions  # noqa: E402
from xp_cuda._devices import CPU, Device, cuda_device_count  # noqa: E402

import _fuzz_engine as E  # noqa: E402
import _fuzz_pending  # noqa: E402
import _fuzz_specs as S  # noqa: E402
import fuzz_unspecified  # noqa: E402

EXAMPLES = int(os.environ.get("XP_CUDA_FUZZ_EXAMPLES", "25"))
COLLECT = os.environ.get("XP_CUDA_FUZZ_COLLECT")
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck), print_blob=False)


@pytest.fixture
def revisions():
    """Restores both libraries' revisions after a test that changes them."""
    before = _revisions.api_version()
    yield
    xp.set_api_version(before)
    E.strict_side().set_revision("2025.12")


def _record(kind, call, text):
    with open(COLLECT, "a") as f:
        f.write(json.dumps({"kind": kind, "target": call.target, "call": repr(call),
                            "what": text}) + "\n")


def check_call(call, side, ref):
    """Run ``call`` on both sides; fail (or record) a leak or an unlisted difference."""
    x = E.run_side(side, call)
    if COLLECT:
        _record("call", call, "")
    if x.exc is not None:
        why = E.leak(x.exc, call.target)
        if why is not None and _fuzz_pending.pending(call, x, None) is None:
            if COLLECT:
                _record("leak", call, why)
            else:
                pytest.fail(f"leak from {call!r}: {why}\n{x.tb}")
    r = E.run_side(ref, call)
    tol, signed_zero = S.tolerance(call.target)
    diff = E.compare(x, r, tol, signed_zero)
    if diff is None:
        return
    entry = fuzz_unspecified.unspecified(call, x, r)
    if entry is not None:
        if COLLECT:
            _record("unspecified", call, f"{entry.name}: {diff}")
        return
    owner = _fuzz_pending.pending(call, x, r)
    if owner is not None:
        if COLLECT:
            _record("pending", call, f"{owner}: {diff}")
        return
    if COLLECT:
        _record("difference", call, diff)
        return
    raise AssertionError(f"{side.name} and {ref.name} differ on {call!r}: {diff}"
                         + (f"\n{side.name} raised:\n{x.tb}" if x.exc is not None else "")
                         + (f"\n{ref.name} raised:\n{r.tb}" if r.exc is not None else ""))


# ---- coverage -----------------------------------------------------------------------------------
def public_targets():
    """Every public name of xp_cuda, xp_cuda.linalg and xp_cuda.fft under every revision, as
    fuzz targets (constants, dtypes and the submodules excepted), plus Array's operators."""
    names = set()
    before = _revisions.api_version()
    try:
        for rev in _revisions.REVISIONS:
            xp.set_api_version(rev)
            for prefix, mod in (("ns", xp), ("linalg", xp.linalg), ("fft", xp.fft)):
                for n in mod.__all__:
                    obj = getattr(mod, n)
                    if callable(obj) and not isinstance(obj, type(xp.float32)) \
                            and n != "__array_namespace_info__":
                        names.add(f"{prefix}:{n}")
    finally:
        xp.set_api_version(before)
    info = xp.__array_namespace_info__()
    names |= {f"info:{n}" for n in dir(info) if not n.startswith("_")}
    ops = {f"op:{o}" for o in S.BINARY_OPS + ("@", "~", "neg", "pos", "abs", "getitem",
                                              "setitem")}
    ops |= {f"op:r{o}" for o in S.BINARY_OPS + ("@",) if o not in ("<", "<=", ">", ">=",
                                                                      "==", "!=")}
    ops |= {f"op:{o}=" for o in S.BINARY_OPS + ("@",) if o not in ("<", "<=", ">", ">=",
                                                                      "==", "!=")}
    return names | ops


def test_every_public_name_has_a_fuzz_target():
    missing = sorted(public_targets() - set(S.TARGETS))
    assert not missing, f"public names with no fuzz entry (add them to _fuzz_specs): {missing}"


_PY_OPERATORS = {**{f"__{v}__": k for k, v in E.BINARY_SYMBOLS.items()},
                 **{f"__r{v}__": f"r{k}" for k, v in E.BINARY_SYMBOLS.items()},
                 **{f"__i{v}__": f"{k}=" for k, v in E.BINARY_SYMBOLS.items()},
                 **{f"__{v}__": k for k, v in E.UNARY_SYMBOLS.items()},
                 **{f"__{c}__": c for c in E.CONVERSIONS},
                 "__getitem__": "getitem", "__setitem__": "setitem"}


def test_every_operator_of_array_is_fuzzed():
    """Each of Python's operator methods that Array defines is a fuzz target (a reflected
    comparison is Python's mirror of another comparison, so __rlt__ and the like do not exist)."""
    from xp_cuda._array import Array
    defined = [d for d in _PY_OPERATORS if getattr(Array, d, None) is not None
               and getattr(Array, d) is not getattr(object, d, None)]
    # 13 binary operators x 3 forms, 6 comparisons, 4 unary, 5 conversions, [] and []=
    assert len(defined) >= 56, defined
    missing = [d for d in defined if f"op:{_PY_OPERATORS[d]}" not in S.TARGETS]
    assert not missing, f"Array operators with no fuzz target: {missing}"


# ---- the fuzzer ---------------------------------------------------------------------------------
def _fuzz(target, side, ref):
    """Random calls of ``target`` drawn by hypothesis, each checked on ``side`` against ``ref``."""
    @FUZZ
    @given(st.data())
    def run(data):
        call = data.draw(st.composite(lambda draw: S.draw_call(draw, target))())
        check_call(call, side, ref)

    run()


def _targets_for_ci():
    return [pytest.param(t, id=t) for t in S.TARGETS]


@pytest.mark.parametrize("target", _targets_for_ci())
def test_fuzz_cpu_against_array_api_strict(target, revisions):
    _fuzz(target, E.xp_side(CPU), E.strict_side())


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("target", _targets_for_ci())
def test_fuzz_cuda_against_cpu(target, revisions):
    _fuzz(target, E.xp_side(Device("cuda", 0)), E.xp_side(CPU))


# ---- the rules the fuzzer applies, on known cases ----------------------------------------------
def test_the_leak_rule():
    import numpy as np
    assert E.leak(TypeError("add: x1 has dtype int8 ..."), "ns:add") is None
    assert E.leak(OverflowError("full: Python int 300 is out of range"), "ns:full") is None
    assert "not xp_cuda's or Python's" in E.leak(np.exceptions.AxisError(3, 1), "ns:sum")
    assert "carries 'ufunc'" in E.leak(TypeError("ufunc 'add' did not contain a loop"), "ns:add")
    assert "not one a user should get" in E.leak(KeyError("x"), "ns:add")
    assert "not one a user should get" in E.leak(AttributeError("no .T"), "ns:add")
    assert E.leak(AttributeError("in the 2024.12 revision"), "linalg:eig") is None
    try:
        try:
            raise KeyError("internal")
        except KeyError:
            raise ValueError("sum: axis 3 is out of range")
    except ValueError as e:
        assert "chained from builtins.KeyError" in E.leak(e, "ns:sum")
    try:
        try:
            raise KeyError("internal")
        except KeyError:
            raise ValueError("sum: axis 3 is out of range") from None
    except ValueError as e:
        assert E.leak(e, "ns:sum") is None


def test_the_comparison():
    import numpy as np

    def arr(v, dt):
        v = np.asarray(v, dtype=dt)
        return E.Outcome(value=("array", dt, v.shape, v))

    f64 = "float64"
    assert E.compare(arr([1.0, np.nan], f64), arr([1.0, np.nan], f64)) is None  # NaN == NaN
    assert E.compare(arr([-0.0], f64), arr([0.0], f64)) is not None  # signed zeros: exact
    assert E.compare(arr([-0.0], f64), arr([0.0], f64), signed_zero=False) is None
    assert E.compare(arr([1.0], f64), arr([1.0 + 1e-15], f64)) is not None
    assert E.compare(arr([1.0], f64), arr([1.0 + 1e-15], f64), "ulp") is None
    assert E.compare(arr([1.0], f64), arr([1.001], f64), "ulp") is not None
    assert E.compare(arr([1.0, 1e6], f64), arr([1.0 + 1e-7, 1e6], f64), "sum") is None
    assert E.compare(arr([np.inf], f64), arr([-np.inf], f64), "sum") is not None
    assert E.compare(arr([1], "int32"), arr([1], "int64")) is not None  # dtype exactly
    assert E.compare(arr([[1]], "int32"), arr([1], "int32")) is not None  # shape exactly
    assert E.compare(E.Outcome(exc=ValueError()), E.Outcome(exc=TypeError())) is None
    assert E.compare(E.Outcome(exc=ValueError()), arr([1], "int32")).startswith("only xp")
    # a complex part that cancels to near 0 is compared against the whole value's magnitude
    c = "complex64"
    assert E.compare(arr([1e-9 + 1j], c), arr([2e-9 + 1j], c), "ulp") is None
    assert E.compare(arr([1e-9 + 1j], c), arr([2e-9 + 1j], c)) is not None


def test_unspecified_entries_on_known_cases():
    """Each entry written from the GPU sweep covers its known differences and none of the
    plain wrong values beside them (fuzz_unspecified.known_cases)."""
    bad = fuzz_unspecified.check_known_cases()
    assert not bad, "\n".join(f"{c!r}: expected {w!r}, got {g!r}" for c, w, g in bad)


def test_the_reference_is_not_asked_for_an_svd_that_never_returns():
    """NumPy before 2.5 hands a matrix holding inf to gesdd, which loops forever on some
    (numpy/numpy#32591): the reference side answers NumPy 2.5's LinAlgError instead of
    calling; xp_cuda's side is always called (its cpu backend refuses the input itself)."""
    import numpy as np
    a = np.diag([np.inf, 1.0, 2.0])
    for target in ("linalg:svd", "linalg:pinv"):
        call = E.Call(target, (E.Arr("float64", a),))
        ref = E.run_side(E.strict_side(), call)
        assert isinstance(ref.exc, np.linalg.LinAlgError) and "converge" in str(ref.exc)
        assert E._reference_would_hang(E.strict_side(), call) == E._GESDD_HANGS
        mine = E.run_side(E.xp_side(), call)
        assert isinstance(mine.exc, ValueError) and "infinite or NaN" in str(mine.exc)
    finite = E.Call("linalg:svd", (E.Arr("float64", np.eye(3)),))
    assert not E._reference_would_hang(E.strict_side(), finite)
    assert E.run_side(E.strict_side(), finite).exc is None
