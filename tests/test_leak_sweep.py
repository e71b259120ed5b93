"""The wrong-input sweep (issue #18): every public function and operator, called with each of
its arguments replaced in turn by a wrong value, must answer with a proper error (the leak rule
of _fuzz_engine.leak: an allowed builtin or xp_cuda type, a message free of NumPy/CuPy/NVRTC
internals, no chained internal exception) or a result, never a leak.

Wrong values: arrays of every dtype (wrong dtype categories), 0-d and 2-d; foreign types
(NumPy arrays and scalars, lists, tuples, None, strings, objects, an array_api_strict array);
bad ints (negative, huge, float, bool); bad axes and shapes (out of range, repeated, nested,
negative). Each target's valid calls come from the fuzzer's strategies (two per target,
derandomized), so the wrong value meets otherwise valid arguments. Mixed devices (an array on
cuda:0 beside one on cpu) are swept where a GPU exists (marked cuda).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
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
from _fuzz_engine import Arr, Call, Foreign  # noqa: E402

COLLECT = os.environ.get("XP_CUDA_FUZZ_COLLECT")
BASELINES = int(os.environ.get("XP_CUDA_SWEEP_BASELINES", "2"))
SWEEP = settings(max_examples=BASELINES, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck), print_blob=False)


def _strict_array():
    import array_api_strict
    return array_api_strict.asarray([1.0, 2.0])


WRONG = (
    # arrays of every dtype: 0-d and 2-d (wrong dtype categories, wrong ranks)
    *(Arr(n, np.ones((), n)) for n in E.DTYPE_NAMES),
    *(Arr(n, np.arange(6).reshape(2, 3).astype(n)) for n in E.DTYPE_NAMES),
    # foreign types
    Foreign(np.ones((2, 2), np.float32), "numpy float32 array"),
    Foreign(np.arange(3), "numpy int64 array"),
    Foreign(np.float64(1.5), "numpy float64 scalar"),
    Foreign(np.int64(2), "numpy int64 scalar"),
    Foreign([1, 2], "list of ints"),
    Foreign([[1.0], [2.0]], "nested list"),
    Foreign((1.0, 2.0), "tuple of floats"),
    Foreign(None, "None"),
    Foreign("abc", "str"),
    Foreign(b"ab", "bytes"),
    Foreign(object(), "object"),
    Foreign({"a": 1}, "dict"),
    Foreign(xp.float32, "xp dtype"),
    Foreign(np.float32, "numpy type"),
    Foreign(float, "python type"),
    Foreign(_strict_array(), "array_api_strict array"),
    Foreign(slice(0, 1), "slice"),
    Foreign(Ellipsis, "Ellipsis"),
    # bad ints, axes, shapes
    -1, -7, 7, 2**70, -2**70, 1.5, float("nan"), float("inf"), True, 1j,
    (0, 0), (0, 1, 2, 3, 4), (-9,), (0.5,), ((1,),), (2**70,), (-2, 3), (),
)


def _self_position(target):
    """The argument that is the Array whose method an operator or attribute calls (never
    replaced: a list has no __add__ of ours to test)."""
    kind, _, name = target.partition(":")
    if kind == "attr":
        return 0
    if kind == "op":
        return 1 if S.op_parts(name)[1] == "r" else 0
    return None


def _positions(call):
    """(kind, index or name) of each argument that can be replaced."""
    me = _self_position(call.target)
    out = [("arg", i) for i in range(len(call.args)) if i != me]
    out += [("kw", k) for k, _ in call.kwargs]
    spec = S.SPECS.get(call.target)
    if spec is not None:  # keywords the baseline left out get their turn too
        given_kw = {k for k, _ in call.kwargs}
        out += [("kw", k) for k in spec.kwargs if k not in given_kw]
    return out


def _replaced(call, pos, value):
    kind, where = pos
    if kind == "arg":
        args = list(call.args)
        args[where] = value
        return Call(call.target, tuple(args), call.kwargs, call.revision)
    kwargs = dict(call.kwargs)
    kwargs[where] = value
    return Call(call.target, call.args, tuple(kwargs.items()), call.revision)


COUNTS = {"calls": 0, "leaks": 0}


def sweep_call(call, side, leaks):
    for pos in _positions(call):
        for w in WRONG:
            c = _replaced(call, pos, w)
            o = E.run_side(side, c)
            COUNTS["calls"] += 1
            if o.exc is None:
                continue
            why = E.leak(o.exc, c.target)
            if why is not None and _fuzz_pending.pending(c, o, None) is None:
                COUNTS["leaks"] += 1
                leaks.append(f"{c!r}: {why}\n{o.tb}")
    if COLLECT:
        with open(COLLECT, "a") as f:
            f.write(json.dumps({"kind": "sweep", "target": call.target, "calls": COUNTS["calls"],
                                "leaks": leaks}) + "\n")
        COUNTS["calls"] = 0
        leaks.clear()


@pytest.fixture
def revisions():
    before = _revisions.api_version()
    yield
    xp.set_api_version(before)


@pytest.mark.parametrize("target", [pytest.param(t, id=t) for t in S.TARGETS])
def test_no_leak_on_wrong_input(target, revisions):
    side = E.xp_side(CPU)
    leaks = []

    @SWEEP
    @given(st.data())
    def run(data):
        call = data.draw(st.composite(lambda draw: S.draw_call(draw, target))())
        sweep_call(call, side, leaks)

    run()
    assert not leaks, f"{len(leaks)} leak(s); the first:\n" + "\n".join(leaks[:3])


# ---- the leaks found by the sweep and the fuzzer, fixed: regression tests -----------------------
# (each asserts the proper error type, that the message names the rule, and no chained error)
def _raised(fn, exc_type):
    with pytest.raises(exc_type) as info:
        fn()
    e = info.value
    assert E.leak(e, "ns:regression") is None, E.leak(e, "ns:regression")
    assert e.__cause__ is None and (e.__suppress_context__ or e.__context__ is None)
    return str(e)


def test_asarray_of_an_unconvertible_object_chains_nothing():
    # was: TypeError chained from memoryview's "a bytes-like object is required"
    for obj in (None, object(), {"a": 1}):
        msg = _raised(lambda: xp.asarray(obj), TypeError)
        assert "asarray: cannot convert a" in msg


def test_integer_array_index_out_of_bounds_chains_no_internal_key(revisions):
    # was: IndexError chained from xp_cuda._array._ArrayKey (raised in its except clause)
    xp.set_api_version("2024.12")
    x = xp.asarray(np.zeros((0, 2), np.uint8))
    msg = _raised(lambda: x[xp.asarray(np.array([0, 5], np.int8)), :], IndexError)
    assert "out of bounds for axis 0 of size 0" in msg
    y = xp.asarray(np.arange(6).reshape(2, 3))
    i, j = xp.asarray([0, 1], device=y.device), xp.asarray([3], device=y.device)
    msg = _raised(lambda: y[i, j], IndexError)
    assert "out of bounds" in msg


def test_fft_length_given_as_a_0d_integer_array_is_read_as_an_int():
    # was: the checked n went unused and the 0-d array reached NumPy's FFT ("operand 'Array'
    # does not support ufuncs"); the standard's n is an int, which operator.index gives
    x = xp.asarray(np.arange(4.0) + 1j)
    for f in (xp.fft.fft, xp.fft.ifft, xp.fft.irfft, xp.fft.hfft):
        r = f(x, n=xp.asarray(3))
        assert r.shape == f(x, n=3).shape
        assert np.array_equal(np.asarray(r), np.asarray(f(x, n=3)))
    for f in (xp.fft.rfft, xp.fft.ihfft):
        assert f(xp.real(x), n=np.int64(3)).shape == (2,)


# ---- mixed devices (a GPU machine) --------------------------------------------------------------
# functions whose arrays need not share a device (they read dtypes and shapes only)
DEVICE_FREE = {"ns:result_type", "ns:broadcast_shapes", "ns:can_cast"}


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
@pytest.mark.parametrize("target", [pytest.param(t, id=t) for t in S.TARGETS])
def test_mixed_devices_are_refused(target, revisions):
    """Every call with two or more arrays, one of them on cuda:0 and the rest on cpu, raises
    a proper error (ValueError or TypeError naming the devices), never a leak or a result."""
    if target in DEVICE_FREE:
        pytest.skip("reads dtypes and shapes only")
    gpu = Device("cuda", 0)
    problems = []

    @SWEEP
    @given(st.data())
    def run(data):
        call = data.draw(st.composite(lambda draw: S.draw_call(draw, target))())
        cpu = E.xp_side(CPU)
        cpu.set_revision(call.revision)
        args = [cpu.build(a) for a in call.args]
        kwargs = {k: cpu.build(v) for k, v in call.kwargs}
        def is_array(a):
            return hasattr(a, "__array_namespace__")

        arrays = [i for i, a in enumerate(args) if is_array(a)]
        kw_arrays = [k for k, a in kwargs.items() if is_array(a)]
        seqs = [i for i, a in enumerate(args) if isinstance(a, (tuple, list)) and len(a) >= 2
                and all(is_array(v) for v in a)]
        if seqs:  # concat, stack: the last array of the sequence moves
            seq = list(args[seqs[0]])
            seq[-1] = seq[-1].to_device(gpu)
            args[seqs[0]] = type(args[seqs[0]])(seq)
        elif len(arrays) >= 2:
            args[arrays[-1]] = args[arrays[-1]].to_device(gpu)
        elif arrays and kw_arrays:
            kwargs[kw_arrays[0]] = kwargs[kw_arrays[0]].to_device(gpu)
        else:
            return  # fewer than two arrays: nothing to mix
        try:
            E.invoke_built(cpu, call, args, kwargs)
        except Exception as e:  # noqa: BLE001
            why = E.leak(e, target)
            if why is not None:
                problems.append(f"{call!r}: {why}")
        else:
            problems.append(f"{call!r}: mixed devices accepted")

    run()
    assert not problems, "\n".join(problems[:5])
