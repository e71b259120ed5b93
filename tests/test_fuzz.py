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

Budget: ``XP_CUDA_FUZZ_EXAMPLES`` examples per target (default 6 in CI, derandomized so a
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

EXAMPLES = int(os.environ.get("XP_CUDA_FUZZ_EXAMPLES", "6"))
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


def check_call(call, side, ref, leaks_only=False):
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
    if leaks_only:
        return
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


# ---- coverage -----------------------------------------------------------------------------------------
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


def test_every_operator_dunder_is_fuzzed():
    a = xp.asarray([1])
    dunders = {n for n in dir(type(a)) if n.startswith("__") and n.endswith("__")}
    stems = {v for v in E.BINARY_SYMBOLS.values()}
    for stem in stems:
        for d in (f"__{stem}__", f"__r{stem}__", f"__i{stem}__"):
            assert d not in dunders or any(
                t for t in S.TARGETS if t.startswith("op:")), d
    uncovered = []
    for d in dunders:
        stem = d[2:-2]
        plain_stem = stem[1:] if stem[:1] in "ri" and stem[1:] in stems else stem
        if plain_stem in stems or stem in E.UNARY_SYMBOLS.values() or stem in (
                "getitem", "setitem", "int", "float", "complex", "bool", "index"):
            continue
        uncovered.append(d)
    known_not_operators = {"__init__", "__new__", "__repr__", "__str__", "__class__",
                           "__doc__", "__module__", "__slots__", "__hash__", "__reduce__",
                           "__reduce_ex__", "__copy__", "__deepcopy__", "__iter__", "__len__",
                           "__array_namespace__", "__dlpack__", "__dlpack_device__",
                           "__array__", "__getattribute__", "__setattr__", "__delattr__",
                           "__dir__", "__format__", "__sizeof__", "__subclasshook__",
                           "__init_subclass__", "__getstate__", "__eq__", "__ne__", "__lt__",
                           "__le__", "__gt__", "__ge__", "__array_priority__",
                           "__array_ufunc__", "__array_function__", "__weakref__",
                           "__annotations__", "__dict__", "__firstlineno__",
                           "__static_attributes__", "__contains__", "__abstractmethods__"}
    assert not set(uncovered) - known_not_operators, sorted(set(uncovered) -
                                                            known_not_operators)


# ---- the fuzzer --------------------------------------------------------------------------------------
def _targets_for_ci():
    return [pytest.param(t, id=t) for t in S.TARGETS]


@pytest.mark.parametrize("target", _targets_for_ci())
def test_fuzz_cpu_against_array_api_strict(target, revisions):
    side, ref = E.xp_side(CPU), E.strict_side()

    @FUZZ
    @given(st.data())
    def run(data):
        call = data.draw(st.composite(lambda draw: S.draw_call(draw, target))())
        check_call(call, side, ref)

    run()


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("target", _targets_for_ci())
def test_fuzz_cuda_against_cpu(target, revisions):
    side, ref = E.xp_side(Device("cuda", 0)), E.xp_side(CPU)

    @FUZZ
    @given(st.data())
    def run(data):
        call = data.draw(st.composite(lambda draw: S.draw_call(draw, target))())
        check_call(call, side, ref)

    run()
