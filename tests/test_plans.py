"""Memoised validation (_validation.planned): a cached plan rejects what a fresh call rejects.

Each case is (valid call, invalid call) with the same array shapes: the invalid one differs
only in a dtype or in an option whose value is equal to the valid one's (True == 1, 1.0 == 1,
(0, True) == (0, 1)) or differs in kind. A fresh call (no plans) must raise; the same call
after the valid one has left its plan must raise the same exception with the same message.
The device-independent keys make cpu enough: the cuda half runs the same spec layer.
"""
import math
import types

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda import _manipulation, _statistical
from xp_cuda._devices import CPU, Device, cpu_device_count
from xp_cuda._backends._base import FAST_ANY_LAYOUT, RESHAPES
from xp_cuda._validation import PLANS, option_type, planned


def _a(values, dtype=np.float32):
    return xp.asarray(np.asarray(values, dtype=dtype), device=CPU)


def _x(dtype=np.float32, shape=(2, 3)):
    return _a(np.arange(1, 1 + math.prod(shape)).reshape(shape), dtype)


def _sq(dtype=np.float32):
    return _a(np.eye(3) * 4 + 1, dtype)


def _bool(shape=(2, 3)):
    return _a(np.arange(math.prod(shape)).reshape(shape) % 2 == 0, bool)


def _idx(values=(0, 1), dtype=np.int64):
    return _a(values, dtype)


CASES = {
    # reductions: an axis tuple with a bool or float item, bool flags as ints, dtypes
    "sum axis (0, True)": (lambda: xp.sum(_x(), axis=(0, 1)),
                           lambda: xp.sum(_x(), axis=(0, True))),
    "sum axis (0, 1.0)": (lambda: xp.sum(_x(), axis=(0, 1)),
                          lambda: xp.sum(_x(), axis=(0, 1.0))),
    "sum axis True": (lambda: xp.sum(_x(), axis=1), lambda: xp.sum(_x(), axis=True)),
    "sum keepdims 0": (lambda: xp.sum(_x(), keepdims=False), lambda: xp.sum(_x(), keepdims=0)),
    "sum bool input": (lambda: xp.sum(_x()), lambda: xp.sum(_bool())),
    "sum dtype complex to real": (lambda: xp.sum(_x(np.complex64), dtype=xp.complex128),
                                  lambda: xp.sum(_x(np.complex64), dtype=xp.float64)),
    "prod axis (True,)": (lambda: xp.prod(_x(), axis=(1,)),
                          lambda: xp.prod(_x(), axis=(True,))),
    "max complex": (lambda: xp.max(_x()), lambda: xp.max(_x(np.complex64))),
    "max keepdims 1": (lambda: xp.max(_x(), keepdims=True), lambda: xp.max(_x(), keepdims=1)),
    "min axis (1, 0.0)": (lambda: xp.min(_x(), axis=(1, 0)),
                          lambda: xp.min(_x(), axis=(1, 0.0))),
    "min empty axis": (lambda: xp.min(_x(shape=(2, 0)), axis=0),
                       lambda: xp.min(_x(shape=(2, 0)), axis=1)),
    "mean int input": (lambda: xp.mean(_x()), lambda: xp.mean(_x(np.int32))),
    "var axis True": (lambda: xp.var(_x(), axis=1), lambda: xp.var(_x(), axis=True)),
    "std keepdims 0": (lambda: xp.std(_x(), keepdims=False), lambda: xp.std(_x(), keepdims=0)),
    "var correction bool": (lambda: xp.var(_x(), correction=1),
                            lambda: xp.var(_x(), correction=True)),
    "cumulative_sum include_initial 0": (
        lambda: xp.cumulative_sum(_x(), axis=1, include_initial=False),
        lambda: xp.cumulative_sum(_x(), axis=1, include_initial=0)),
    "cumulative_sum axis True": (lambda: xp.cumulative_sum(_x(), axis=1),
                                 lambda: xp.cumulative_sum(_x(), axis=True)),
    "cumulative_sum bool": (lambda: xp.cumulative_sum(_x(), axis=0),
                            lambda: xp.cumulative_sum(_bool(), axis=0)),
    "argmax keepdims 1": (lambda: xp.argmax(_x(), axis=0, keepdims=True),
                          lambda: xp.argmax(_x(), axis=0, keepdims=1)),
    "argmin axis False": (lambda: xp.argmin(_x(), axis=0), lambda: xp.argmin(_x(), axis=False)),
    "argmax complex": (lambda: xp.argmax(_x()), lambda: xp.argmax(_x(np.complex64))),
    "all keepdims 0": (lambda: xp.all(_x(), keepdims=False), lambda: xp.all(_x(), keepdims=0)),
    "any axis (0, True)": (lambda: xp.any(_x(), axis=(0, 1)),
                           lambda: xp.any(_x(), axis=(0, True))),
    # elementwise: same shapes, other dtypes
    "add bool": (lambda: xp.add(_x(), _x()), lambda: xp.add(_bool(), _bool())),
    "add mixed kinds": (lambda: xp.add(_x(), _x()), lambda: xp.add(_x(), _x(np.int32))),
    "x + 2.5 on int": (lambda: _x() + 2.5, lambda: _x(np.int32) + 2.5),
    "2.5 - x on int": (lambda: 2.5 - _x(), lambda: 2.5 - _x(np.int32)),
    "sin int": (lambda: xp.sin(_x()), lambda: xp.sin(_x(np.int32))),
    "add broadcast": (lambda: xp.add(_x(shape=(2, 1)), _x(shape=(1, 3))),
                      lambda: xp.add(_x(shape=(2, 1)), _x(shape=(3, 1)))),
    # searching
    "where float condition": (lambda: xp.where(_bool(), _x(), _x()),
                              lambda: xp.where(_x(), _x(), _x())),
    "where mixed kinds": (lambda: xp.where(_bool(), _x(), _x()),
                          lambda: xp.where(_bool(), _x(), _x(np.int32))),
    "searchsorted side": (lambda: xp.searchsorted(_x(shape=(4,)), _x(shape=(3,))),
                          lambda: xp.searchsorted(_x(shape=(4,)), _x(shape=(3,)), side="mid")),
    "searchsorted complex": (lambda: xp.searchsorted(_x(shape=(4,)), _x(shape=(3,))),
                             lambda: xp.searchsorted(_x(np.complex64, (4,)), _x(shape=(3,)))),
    "searchsorted float sorter": (
        lambda: xp.searchsorted(_x(shape=(4,)), _x(shape=(3,)),
                                sorter=_idx((0, 1, 2, 3))),
        lambda: xp.searchsorted(_x(shape=(4,)), _x(shape=(3,)),
                                sorter=_idx((0, 1, 2, 3), np.float32))),
    # linear algebra
    "matmul bool": (lambda: xp.matmul(_x(), _x(shape=(3, 2))),
                    lambda: xp.matmul(_bool(), _bool((3, 2)))),
    "matmul mixed kinds": (lambda: _x() @ _x(shape=(3, 2)),
                           lambda: _x() @ _x(np.int32, (3, 2))),
    "solve int": (lambda: xp.linalg.solve(_sq(), _x(shape=(3, 2))),
                  lambda: xp.linalg.solve(_sq(np.int32), _x(shape=(3, 2)))),
    "vector_norm axis (0, True)": (lambda: xp.linalg.vector_norm(_x(), axis=(0, 1)),
                                   lambda: xp.linalg.vector_norm(_x(), axis=(0, True))),
    "vector_norm keepdims 0": (lambda: xp.linalg.vector_norm(_x(), keepdims=False),
                               lambda: xp.linalg.vector_norm(_x(), keepdims=0)),
    "vector_norm ord bool": (lambda: xp.linalg.vector_norm(_x(), ord=1),
                             lambda: xp.linalg.vector_norm(_x(), ord=True)),
    "vector_norm int": (lambda: xp.linalg.vector_norm(_x()),
                        lambda: xp.linalg.vector_norm(_x(np.int32))),
    "matrix_norm ord": (lambda: xp.linalg.matrix_norm(_x(), ord=1),
                        lambda: xp.linalg.matrix_norm(_x(), ord=True)),
    "matrix_norm keepdims 1": (lambda: xp.linalg.matrix_norm(_x(), keepdims=True),
                               lambda: xp.linalg.matrix_norm(_x(), keepdims=1)),
    "matrix_norm int": (lambda: xp.linalg.matrix_norm(_x()),
                        lambda: xp.linalg.matrix_norm(_x(np.int32))),
    "trace offset True": (lambda: xp.linalg.trace(_sq(), offset=1),
                          lambda: xp.linalg.trace(_sq(), offset=True)),
    "trace bool": (lambda: xp.linalg.trace(_sq()), lambda: xp.linalg.trace(_sq(bool))),
    "trace dtype complex to real": (
        lambda: xp.linalg.trace(_sq(np.complex64), dtype=xp.complex128),
        lambda: xp.linalg.trace(_sq(np.complex64), dtype=xp.float64)),
    "diagonal offset True": (lambda: xp.linalg.diagonal(_sq(), offset=1),
                             lambda: xp.linalg.diagonal(_sq(), offset=True)),
    # manipulation and indexing
    "concat axis False": (lambda: xp.concat([_x(), _x()], axis=0),
                          lambda: xp.concat([_x(), _x()], axis=False)),
    "concat mixed kinds": (lambda: xp.concat([_x(), _x()]),
                           lambda: xp.concat([_x(), _x(np.int32)])),
    "stack axis True": (lambda: xp.stack([_x(), _x()], axis=1),
                        lambda: xp.stack([_x(), _x()], axis=True)),
    "stack mixed kinds": (lambda: xp.stack([_x(), _x()]),
                          lambda: xp.stack([_x(), _bool()])),
    "take axis False": (lambda: xp.take(_x(), _idx(), axis=0),
                        lambda: xp.take(_x(), _idx(), axis=False)),
    "take float indices": (lambda: xp.take(_x(), _idx(), axis=0),
                           lambda: xp.take(_x(), _idx(dtype=np.float32), axis=0)),
    "flip axis (False,)": (lambda: xp.flip(_x(), axis=(0,)),
                           lambda: xp.flip(_x(), axis=(False,))),
    "flip axis 0.0": (lambda: xp.flip(_x(), axis=0), lambda: xp.flip(_x(), axis=0.0)),
    "permute_dims (1, False)": (lambda: xp.permute_dims(_x(), (1, 0)),
                                lambda: xp.permute_dims(_x(), (1, False))),
    "permute_dims (1, 0.0)": (lambda: xp.permute_dims(_x(), (1, 0)),
                              lambda: xp.permute_dims(_x(), (1, 0.0))),
    "roll shift (1, True)": (lambda: xp.roll(_x(), (1, 1), axis=(0, 1)),
                             lambda: xp.roll(_x(), (1, True), axis=(0, 1))),
    "roll axis (0, True)": (lambda: xp.roll(_x(), (1, 1), axis=(0, 1)),
                            lambda: xp.roll(_x(), (1, 1), axis=(0, True))),
    "tile (2, True)": (lambda: xp.tile(_x(), (2, 1)), lambda: xp.tile(_x(), (2, True))),
    "reshape (6, 1.0)": (lambda: xp.reshape(_x(), (6, 1)), lambda: xp.reshape(_x(), (6, 1.0))),
    "reshape (6, True)": (lambda: xp.reshape(_x(), (6, 1)),
                          lambda: xp.reshape(_x(), (6, True))),
    "reshape copy 0": (lambda: xp.reshape(_x(), (6,), copy=False),
                       lambda: xp.reshape(_x(), (6,), copy=0)),
    # sorting
    "sort descending 1": (lambda: xp.sort(_x(), descending=True),
                          lambda: xp.sort(_x(), descending=1)),
    "argsort stable 1": (lambda: xp.argsort(_x(), stable=True),
                         lambda: xp.argsort(_x(), stable=1)),
    "sort axis True": (lambda: xp.sort(_x(), axis=1), lambda: xp.sort(_x(), axis=True)),
    "argsort complex": (lambda: xp.argsort(_x()), lambda: xp.argsort(_x(np.complex64))),
    # creation: the shape argument
    "zeros shape (2, True)": (lambda: xp.zeros((2, 1), device=CPU),
                              lambda: xp.zeros((2, True), device=CPU)),
    "ones shape (2, 1.0)": (lambda: xp.ones((2, 1), device=CPU),
                            lambda: xp.ones((2, 1.0), device=CPU)),
    "empty shape True": (lambda: xp.empty(1, device=CPU), lambda: xp.empty(True, device=CPU)),
    "full shape (2, -1)": (lambda: xp.full((2, 1), 3.0, device=CPU),
                           lambda: xp.full((2, -1), 3.0, device=CPU)),
    "zeros dtype numpy": (lambda: xp.zeros((2, 1), dtype=xp.float32, device=CPU),
                          lambda: xp.zeros((2, 1), dtype=np.float32, device=CPU)),
}


def _clear_plans():
    """Every memo of checked calls the spec layer reads: a fresh call runs every check."""
    PLANS.clear()
    RESHAPES.clear()
    _manipulation._PERMS.clear()


@pytest.mark.parametrize("name", list(CASES))
def test_cached_plan_rejects_what_a_fresh_call_rejects(name):
    valid, invalid = CASES[name]
    _clear_plans()
    with pytest.raises(Exception) as fresh:
        invalid()
    _clear_plans()
    valid()
    valid()  # a hit, too
    with pytest.raises(type(fresh.value)) as cached:
        invalid()
    assert str(cached.value) == str(fresh.value), name


def test_option_type_tells_equal_tuples_apart():
    assert (0, True) == (0, 1) and hash((0, True)) == hash((0, 1))
    assert option_type((0, True)) != option_type((0, 1))
    assert option_type((0, 1.0)) != option_type((0, 1))
    assert option_type(1) is int and option_type(True) is bool and option_type(None) is type(None)


def test_planned_keeps_only_keyable_options_and_never_errors():
    PLANS.clear()
    calls = []

    def validate(v):
        calls.append(v)
        if v == "bad":
            raise ValueError("bad")
        return v

    assert planned(("t", 1.5, float), (1.5,), validate, "float") == "float"
    assert planned(("t", 1.5, float), (1.5,), validate, "float") == "float"
    assert calls == ["float", "float"]  # a float option is not kept: checked every time
    assert planned(("t", 2, int), (2,), validate, "int") == "int"
    assert planned(("t", 2, int), (2,), validate, "again") == "int"  # kept
    for _ in range(2):
        with pytest.raises(ValueError):
            planned(("t", 3, int), (3,), validate, "bad")  # errors are never kept
    assert calls == ["float", "float", "int", "bad", "bad"]
    assert planned(("t", [1]), ([1],), validate, "list") == "list"  # unhashable: checked


def test_any_layout_hot_path_keeps_the_checks():
    """The cpu backend remembers plain NumPy calls per (function, dtypes) for apply/apply2
    (FAST_ANY_LAYOUT); a hit needs equal shapes and the same dtypes, everything else still
    goes through the checks."""
    FAST_ANY_LAYOUT.clear()
    a, b = _x(), _x()
    ref = np.asarray(a._data) + np.asarray(b._data)
    for _ in range(2):  # registers, then hits
        assert np.array_equal((a + b)._data, ref)
    assert ("add", np.dtype(np.float32), np.dtype(np.float32)) in FAST_ANY_LAYOUT
    with pytest.raises(ValueError, match="cannot be broadcast"):
        a + _x(shape=(4,))
    with pytest.raises(TypeError, match="cannot be promoted"):
        a + _x(np.int32)
    with pytest.raises(TypeError, match="numeric"):
        _bool() + _bool()
    # strided operands of equal shapes take the hot path and keep their values
    got = a[:, ::2] + b[:, ::2]
    assert np.array_equal(got._data, ref[:, ::2]) and got.dtype is xp.float32
    # a scalar operand: its value is checked on every call, before any table
    for _ in range(2):
        assert np.array_equal((a * 2.5)._data, np.asarray(a._data) * np.float32(2.5))
    with pytest.raises(TypeError):
        a * True
    with pytest.raises(TypeError):
        _x(np.int32) * 2.5
    with pytest.raises(OverflowError):
        _x(np.int8) + 1000
    # unary
    for _ in range(2):
        xp.sin(a)
    with pytest.raises(TypeError):
        xp.sin(_x(np.int32))
    # 0-d operands come back as 0-d arrays, not NumPy scalars
    z = _a(2.0)
    for _ in range(2):
        r = z + z
        assert isinstance(r, xp._array.Array) and r.shape == () and float(r) == 4.0
        assert (-z).shape == () and (z * 2.0).shape == ()


def test_cpu_broadcasts_keep_their_checked_numpy_call():
    """A broadcast of two cpu arrays whose checks passed keeps its plain NumPy call under the
    spec layer's key (KEPT: dtypes and shapes): the next such call runs it, equal to NumPy,
    from any strides; other shapes, dtypes and devices still go through the checks (a
    simulated cpu:1 is refused by the kept call and takes the full path)."""
    from xp_cuda._backends._base import KEPT
    from xp_cuda.nonstandard import simulate_cpu_devices
    col = _a(np.arange(1, 4).reshape(3, 1), np.int8)
    row = _x(np.int16, (1, 5))
    key = ("add", np.dtype(np.int8), (3, 1), np.dtype(np.int16), (1, 5))
    KEPT.pop(key, None)
    ref = np.asarray(col._data) + np.asarray(row._data)
    for _ in range(2):  # keeps, then runs the kept call
        got = col + row
        assert got.dtype is xp.int16 and np.array_equal(got._data, ref)
    assert key in KEPT
    wide = _a(np.repeat(np.arange(1, 6), 2).reshape(1, 10), np.int16)
    got = col + wide[:, ::2]  # the same key from a strided row: NumPy takes any strides
    assert np.array_equal(got._data, ref)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        col + _x(np.int16, (2, 5))
    with pytest.raises(TypeError, match="cannot be promoted"):
        _a(np.arange(3).reshape(3, 1), np.int64) + _x(np.uint64, (1, 5))
    before = cpu_device_count()
    try:
        d1 = next(d for d in simulate_cpu_devices(max(before, 2)) if str(d) == "cpu:1")
        c1, r1 = xp.asarray(col, device=d1), xp.asarray(row, device=d1)
        assert KEPT[key]((c1._data, r1._data), d1) is None
        got = c1 + r1
        assert got.device == d1 and np.array_equal(got._data, ref)
    finally:
        simulate_cpu_devices(before)


_M = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
_CPU_KEPT = {
    "repeat": (lambda m: xp.repeat(m, 2, axis=-1), lambda a: np.repeat(a, 2, axis=-1)),
    "concat": (lambda m: xp.concat([m, m[:1, :]], axis=0),
               lambda a: np.concatenate([a, a[:1]], 0)),
    "stack": (lambda m: xp.stack([m, m + 1], axis=-1), lambda a: np.stack([a, a + 1], -1)),
    "where": (lambda m: xp.where(m > 5, m, xp.zeros_like(m)),
              lambda a: np.where(a > 5, a, 0)),
    "searchsorted": (lambda m: xp.searchsorted(m[0, :], m[1, :] - 3.5, side="right"),
                     lambda a: np.searchsorted(a[0], a[1] - 3.5, "right")),
}


@pytest.mark.parametrize("name", sorted(_CPU_KEPT))
def test_cpu_keeps_its_checked_calls(monkeypatch, name):
    """Once a cpu call has passed the checks, the next one with the same key runs the kept
    NumPy call (KEPT): the backend method is not called again, and the result is NumPy's."""
    from xp_cuda._backends.cpu import CpuBackend
    call, ref = _CPU_KEPT[name]
    m = _a(_M.copy())
    first = call(m)
    seen = []
    orig = getattr(CpuBackend, name)
    monkeypatch.setattr(CpuBackend, name,
                        lambda self, *a, **k: (seen.append(name), orig(self, *a, **k))[1])
    again = call(m)
    assert not seen, f"{name}: the second call went back to the backend"
    want = np.asarray(ref(_M.copy()))
    for got in (first, again):
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got._data), want, rtol=1e-6)


def test_kept_reductions_need_the_same_key_strides_and_device(monkeypatch):
    """The spec layer's hot path (KEPT, which the cuda backend fills) runs a kept reduction
    launch only for the validated plan key, the same strides and the same device; any other
    call takes the checked path. A stand-in launch on cpu shows which path ran."""
    from xp_cuda._backends._base import KEPT, KeptLaunch
    x = _x(np.float64, (3, 4))
    d = x._data
    key = ("sum", d.dtype, d.shape, 0, option_type(0), False, bool, None, type(None))
    ran = []

    def launch(datas, values):
        ran.append(datas[0])
        return [np.full(4, -7.0)]
    monkeypatch.setitem(KEPT, key, KeptLaunch(launch, (d.strides,), x.device))
    assert xp.sum(x, axis=0).shape == (4,) and ran == [d]
    assert np.all(np.asarray(xp.sum(x, axis=0)._data) == -7.0)  # the kept launch's result
    ran.clear()
    np.testing.assert_array_equal(xp.sum(x, axis=0, keepdims=True)._data, d.sum(0, keepdims=True))
    np.testing.assert_array_equal(xp.prod(x, axis=0)._data, d.prod(0))  # another key
    t = _x(np.float64, (4, 3)).mT  # the key's shape, other strides
    np.testing.assert_array_equal(xp.sum(t, axis=0)._data, t._data.sum(0))
    assert ran == []
    monkeypatch.setitem(KEPT, key, KeptLaunch(launch, (d.strides,), Device("cuda", 0)))
    np.testing.assert_array_equal(xp.sum(x, axis=0)._data, d.sum(0))  # another device
    assert ran == []
    with pytest.raises(TypeError):  # a hit never skips validation of a new key
        xp.sum(_x(np.float64, (3, 4)), axis=0, dtype=xp.bool)
    with pytest.raises(TypeError, match="axis"):  # an unhashable option: the checks' message
        xp.sum(x, axis=[0])


def test_kept_arg_reductions_take_the_same_conditions(monkeypatch):
    """argmax/argmin share KEPT: a kept launch for their plan key runs only with the same
    strides and device."""
    from xp_cuda._backends._base import KEPT, KeptLaunch
    x = _x(np.float32, (3, 4))
    d = x._data
    key = ("argmax", d.dtype, d.shape, 1, option_type(1), False, bool)
    monkeypatch.setitem(KEPT, key, KeptLaunch(lambda datas, values: [np.full(3, 9)],
                                              (d.strides,), x.device))
    assert np.asarray(xp.argmax(x, axis=1)._data).tolist() == [9, 9, 9]
    np.testing.assert_array_equal(xp.argmax(x, axis=-1)._data, d.argmax(1))  # another key
    t = _x(np.float32, (4, 3)).mT
    np.testing.assert_array_equal(xp.argmax(t, axis=1)._data, t._data.argmax(1))


class _Ptr:
    """A stand-in native with an address (KeptMove reads .strides and .data.ptr)."""

    def __init__(self, ptr, strides):
        self.data = types.SimpleNamespace(ptr=ptr)
        self.strides = strides


def test_kept_move_checks_strides_residues_and_device():
    """A kept move replays its program with (new result, inputs...) addresses only where each
    input has the kept strides and address residue mod 16, on the kept device."""
    from xp_cuda._backends._base import KeptMove
    calls = []
    made = []

    def alloc(shape, dtype):
        made.append((shape, dtype))
        return _Ptr(4096 * len(made), (8,))
    dev = Device("cuda", 0)
    kept = KeptMove(calls.append, (6,), np.dtype(np.float64), ((8,), (8,)), (0, 8), dev, alloc)
    out = kept((_Ptr(256, (8,)), _Ptr(520, (8,))), dev)
    assert calls == [(4096, 256, 520)] and out.data.ptr == 4096 and made == [((6,), np.float64)]
    assert kept((_Ptr(256, (8,)), _Ptr(512, (8,))), dev) is None       # another residue
    assert kept((_Ptr(256, (16,)), _Ptr(520, (8,))), dev) is None      # other strides
    assert kept((_Ptr(256, (8,)), _Ptr(520, (8,))), Device("cuda", 1)) is None  # device
    assert len(calls) == 1 and len(made) == 1  # nothing allocated or launched for a miss


@pytest.mark.parametrize("call,key", [
    (lambda a, b: xp.concat([a, b]), lambda a, b: ("concat", a._data.dtype, a.shape,
                                                   b._data.dtype, b.shape, 0, option_type(0))),
    (lambda a, b: xp.stack([a, b]), lambda a, b: ("stack", a._data.dtype, a.shape,
                                                  b._data.dtype, b.shape, 0, option_type(0))),
    (lambda a, b: xp.roll(a, 1), lambda a, b: (
        ("roll", 1, 1, option_type(1), None, option_type(None)), a._data.dtype, a.shape)),
    (lambda a, b: xp.tile(a, (2,)), lambda a, b: (
        ("tile", (2,), option_type((2,))), a._data.dtype, a.shape)),
    (lambda a, b: xp.repeat(a, 2, axis=0), lambda a, b: ("repeat", a._data.dtype, a.shape, 2,
                                                         0)),
    (lambda a, b: xp.where(a > 0, a, b), lambda a, b: (
        "where", np.dtype(bool), a.shape, a._data.dtype, a.shape, b._data.dtype, b.shape)),
    (lambda a, b: xp.astype(a, xp.float32), lambda a, b: (
        "astype", a._data.dtype, a.shape, xp.float32, type(xp.float32))),
    (lambda a, b: xp.var(a, correction=1), lambda a, b: (
        ("var", a._data.dtype, a.shape, None, option_type(None), False, bool), 1)),
    (lambda a, b: xp.linalg.vector_norm(a, ord=1), lambda a, b: (
        ("vector_norm", a._data.dtype, a.shape, None, option_type(None), False, bool), 1,
        int)),
    (lambda a, b: xp.cumulative_sum(a), lambda a, b: (
        "cumulative_sum", a._data.dtype, a.shape, None, option_type(None), None,
        type(None), False, bool)),
    (lambda a, b: _statistical.cumulative_prod(a, include_initial=True), lambda a, b: (
        "cumulative_prod", a._data.dtype, a.shape, None, option_type(None), None,
        type(None), True, bool)),
    (lambda a, b: xp.reshape(a, (4, 1)) - b, lambda a, b: (
        "subtract", a._data.dtype, (4, 1), b._data.dtype, b.shape)),
    (lambda a, b: xp.all(a), lambda a, b: ("all", a._data.dtype, a.shape, None,
                                           option_type(None), False, bool)),
    (lambda a, b: xp.any(a, axis=0, keepdims=True), lambda a, b: (
        "any", a._data.dtype, a.shape, 0, option_type(0), True, bool)),
])
def test_moves_and_moments_use_kept_calls_under_their_keys(monkeypatch, call, key):
    """concat, stack, roll, tile, repeat, where, astype, var, vector_norm, all, any and a
    broadcast elementwise call look their validated key up in
    KEPT first and return the kept call's result; a kept call that declines (None) takes the
    full path."""
    from xp_cuda._backends._base import KEPT
    a, b = _x(np.float64, (4,)), _x(np.float64, (4,))
    want = np.asarray(call(a, b)._data)
    sentinel = np.full(3, 42.0)
    monkeypatch.setitem(KEPT, key(a, b), lambda datas, device: sentinel)
    assert call(a, b)._data is sentinel
    monkeypatch.setitem(KEPT, key(a, b), lambda datas, device: None)
    np.testing.assert_array_equal(np.asarray(call(a, b)._data), want)


def test_matmul_uses_its_kept_call_before_the_checks(monkeypatch):
    """matmul (and the @ operator) look ("matmul", dtypes, shapes) up in KEPT first and return
    the kept call's result; a declining kept call (None) takes the full path; the checks
    still refuse what no kept call may serve (a key is made of checked calls only)."""
    from xp_cuda._backends._base import KEPT
    a, b = _x(np.float64, (3, 4)), _x(np.float64, (4, 2))
    want = np.asarray(xp.matmul(a, b)._data)
    key = ("matmul", a._data.dtype, a.shape, b._data.dtype, b.shape)
    sentinel = np.full((3, 2), 42.0)
    monkeypatch.setitem(KEPT, key, lambda datas, device: sentinel)
    assert xp.matmul(a, b)._data is sentinel
    assert (a @ b)._data is sentinel
    monkeypatch.setitem(KEPT, key, lambda datas, device: None)
    np.testing.assert_array_equal(np.asarray((a @ b)._data), want)
    with pytest.raises(ValueError, match="contracted dimensions differ"):
        xp.matmul(a, a)


def test_take_uses_its_kept_call_and_raises_its_verdict(monkeypatch):
    """take looks (its checks' key, x's dtype) up in KEPT before the checks: a kept call's
    result is returned, its out-of-bounds verdict raises the full path's IndexError, and a
    declining one (None) takes the full path."""
    from xp_cuda._backends._base import KEPT
    a = _x(np.float64, (5,))
    i = xp.asarray(np.array([4, -5, 0], np.int64))
    want = np.asarray(xp.take(a, i)._data)
    key = (("take", a.shape, i._data.dtype, i.shape, None, type(None)), a._data.dtype)
    sentinel = np.full(3, 42.0)
    monkeypatch.setitem(KEPT, key, lambda datas, device: (sentinel, None))
    assert xp.take(a, i)._data is sentinel
    monkeypatch.setitem(KEPT, key, lambda datas, device: (None, 7))
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 of size 5"):
        xp.take(a, i)
    monkeypatch.setitem(KEPT, key, lambda datas, device: None)
    np.testing.assert_array_equal(np.asarray(xp.take(a, i)._data), want)


def test_a_copying_reshape_takes_the_kept_move_from_the_hot_path(monkeypatch):
    """reshape(copy=None) of a layout no view serves (RESHAPES misses) looks the full path's
    key up in KEPT before any check: the kept move answers (it checks strides and device
    itself); a declining one, or a shape not of Python ints, takes the checked path."""
    from xp_cuda._backends._base import KEPT
    v = _x(np.float64, (4, 6)).mT  # (6, 4), not C-contiguous
    want = np.asarray(xp.reshape(v, (24,))._data)
    monkeypatch.setattr(_manipulation, "_RESHAPES_get", {}.get)  # as on cuda: no view
    key = (("reshape", v.shape, (24,), (int,), None, type(None)), v._data.dtype)
    sentinel = np.full(24, 42.0)
    monkeypatch.setitem(KEPT, key, lambda datas, device: sentinel)
    assert xp.reshape(v, (24,))._data is sentinel
    with pytest.raises(TypeError):  # a float in the shape: the checks, not the kept call
        xp.reshape(v, (24.0,))
    monkeypatch.setitem(KEPT, key, lambda datas, device: None)
    np.testing.assert_array_equal(np.asarray(xp.reshape(v, (24,))._data), want)


def test_an_unhashable_option_is_refused_without_a_chained_traceback():
    """A list where a tuple belongs cannot key the plan memo: the checks refuse it, and the
    error carries no "during handling of the above exception" (the memo's own TypeError)."""
    x = xp.ones((2, 3))
    for f in (lambda: xp.permute_dims(x, [1, 0]), lambda: xp.sum(x, axis=[0]),
              lambda: xp.reshape(x, [3, 2], copy=None)):
        try:
            f()
        except TypeError as e:
            assert e.__context__ is None, repr(e.__context__)
        else:
            raise AssertionError("a list option was accepted")


def test_reshape_and_permute_hot_paths_keep_the_checks(device):
    """reshape (copy=None) and permute_dims answer a repeated call from what the full path
    registered (RESHAPES, _PERMS): per layout, for shapes and axes of Python ints only. A hit
    never answers a call the checks refuse, nor a layout the backend did not register (the
    cuda backend registers C-contiguous inputs only: its own copy serves the others)."""
    _clear_plans()
    rng = np.random.default_rng(7)
    host = rng.standard_normal((4, 6)).astype(np.float32)
    x = xp.asarray(host, device=device)
    for _ in range(2):  # registers, then hits
        r = xp.reshape(x, (3, 8))
        assert r.shape == (3, 8) and r.device == device
        assert np.array_equal(xp.asarray(r, device=CPU)._data, host.reshape(3, 8))
        t = xp.permute_dims(x, (1, 0))
        assert t.shape == (6, 4) and np.array_equal(xp.asarray(t, device=CPU)._data, host.T)
    assert (x._data.shape, x._data.strides, x._data.dtype, (3, 8)) in RESHAPES
    with pytest.raises(TypeError):
        xp.reshape(x, (3, 8.0))
    with pytest.raises(TypeError):
        xp.reshape(x, (24, True))
    with pytest.raises(ValueError, match="cannot be reshaped"):
        xp.reshape(x, (3, 9))
    with pytest.raises(TypeError):
        xp.permute_dims(x, (1, 0.0))
    with pytest.raises(ValueError):
        xp.permute_dims(xp.reshape(x, (2, 2, 6)), (1, 0))
    # a strided view of the same shape: its own layout, its own answer, twice
    v = x[:, ::2]
    for _ in range(2):
        r = xp.reshape(v, (12,))
        assert np.array_equal(xp.asarray(r, device=CPU)._data, host[:, ::2].reshape(12))
    if device.kind == "cuda":
        assert (v._data.shape, v._data.strides, v._data.dtype, (12,)) not in RESHAPES
