"""Out of memory and impossible sizes (issue #18), and a broken CuPy.

- Sizes no array can have (the product of the non-zero sizes times the item size beyond int64,
  NumPy's rule) are a ValueError naming the shape, on every device, before any allocation.
- A request the device cannot hold is a MemoryError naming the bytes asked and the bytes free,
  after xp_cuda released its caches and retried once; the namespace keeps working after it.
  On cpu: real requests beyond any address space (2**48 bytes and more: malloc refuses them at
  once, whatever the overcommit setting) and allocations made to fail by monkeypatching. On
  cuda:0: the GPU filled for real.
- A CuPy that is installed but broken is named (a RuntimeWarning when the default device falls
  back to cpu; the error of XP_CUDA_DEFAULT_DEVICE=cuda:0), never lost.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda import _devices, _memory
from xp_cuda._backends import backend
from xp_cuda._backends._base import FAST_ANY_LAYOUT, KEPT
from xp_cuda._devices import CPU, Device, cuda_device_count
from xp_cuda._validation import MAX_BYTES

_NO_GPU = cuda_device_count() == 0
CUDA0 = Device("cuda", 0)


@pytest.fixture(autouse=True)
def _cpu_default(request, monkeypatch):
    """Tests not marked cuda patch the cpu backend and read results as NumPy arrays: they run
    with cpu as the default device, whatever XP_CUDA_DEFAULT_DEVICE says (cuda:0 on the GPU
    machine)."""
    if request.node.get_closest_marker("cuda") is None:
        monkeypatch.setattr(_devices, "_default", CPU)


def _numpy_memory_error():
    """A real NumPy _ArrayMemoryError (it reports the bytes it asked for)."""
    try:
        np.empty(2**48, dtype=np.uint8)
    except MemoryError as e:
        return e
    raise AssertionError("numpy allocated 2**48 bytes")


# ---- the size rule: ValueError before any allocation ------------------------------------------

def _huge_view(n, device=CPU):
    """A 1-D float64 view of n elements (stride 0): no memory behind it."""
    return xp.broadcast_to(xp.asarray([1.5], device=device), (n,))


SIZE_CASES = {
    "empty with a 0 dim": lambda d: xp.empty((0, 2**62, 2**62), device=d),
    "zeros": lambda d: xp.zeros((2**62, 4), device=d),
    "full int8": lambda d: xp.full((2**32, 2**32), 1, dtype=xp.int8, device=d),
    "ones complex128 bytes": lambda d: xp.ones((2**60,), dtype=xp.complex128, device=d),
    "empty_like of a view": lambda d: xp.empty_like(xp.broadcast_to(
        xp.asarray([1.0], device=d), (2**62,)), dtype=xp.complex128),
    "eye": lambda d: xp.eye(2**32, 2**32, device=d),
    "arange": lambda d: xp.arange(0, 2**62, 1, dtype=xp.int64, device=d),
    "linspace": lambda d: xp.linspace(0.0, 1.0, num=2**62, device=d),
    "broadcast_to": lambda d: xp.broadcast_to(xp.asarray([1.0], device=d), (2**62, 4, 2)),
    "broadcast_arrays": lambda d: xp.broadcast_arrays(
        xp.reshape(_huge_view(2**40, d), (2**40, 1)), xp.reshape(_huge_view(2**40, d),
                                                                (1, 2**40))),
    "elementwise": lambda d: xp.reshape(_huge_view(2**40, d), (2**40, 1)) +
    xp.reshape(_huge_view(2**40, d), (1, 2**40)),
    "elementwise function": lambda d: xp.multiply(xp.reshape(_huge_view(2**40, d), (2**40, 1)),
                                                  xp.reshape(_huge_view(2**40, d), (1, 2**40))),
    "tile": lambda d: xp.tile(xp.asarray([1.0, 2.0], device=d), (2**62, 4)),
    "repeat": lambda d: xp.repeat(xp.asarray([1.0, 2.0], device=d), 2**63),
    "repeat by array": lambda d: xp.repeat(xp.asarray([1.0, 2.0], device=d),
                                           xp.asarray([2**62, 2**62], device=d)),
    "reshape of an empty array": lambda d: xp.reshape(xp.empty((0,), device=d),
                                                      (0, 2**62, 2**62)),
    "concat": lambda d: xp.concat([xp.reshape(_huge_view(2**62, d), (2**62, 1))] * 3),
    "concat flattened": lambda d: xp.concat([_huge_view(2**62, d)] * 3, axis=None),
    "stack": lambda d: xp.stack([_huge_view(2**62, d)] * 3),
    "meshgrid": lambda d: xp.meshgrid(_huge_view(2**40, d), _huge_view(2**40, d)),
    "matmul": lambda d: xp.matmul(xp.reshape(_huge_view(2**40, d), (2**40, 1)),
                                  xp.reshape(_huge_view(2**40, d), (1, 2**40))),
    "@": lambda d: xp.reshape(_huge_view(2**40, d), (2**40, 1)) @
    xp.reshape(_huge_view(2**40, d), (1, 2**40)),
    "linalg.outer": lambda d: xp.linalg.outer(_huge_view(2**40, d), _huge_view(2**40, d)),
    "tensordot": lambda d: xp.tensordot(_huge_view(2**40, d), _huge_view(2**40, d), axes=0),
    "fft.fftfreq": lambda d: xp.fft.fftfreq(2**63, device=d),
    "fft.rfftfreq": lambda d: xp.fft.rfftfreq(2**65, device=d),
    "fft.ifft n": lambda d: xp.fft.ifft(xp.asarray([1 + 1j, 2], device=d), n=2**64),
    "fft.fft n": lambda d: xp.fft.fft(xp.asarray([1 + 1j, 2], device=d), n=2**62),
    "fft.fftn s": lambda d: xp.fft.fftn(xp.asarray([[1 + 1j, 2]], device=d), s=(2**31, 2**31),
                                        axes=(0, 1)),
}


@pytest.mark.parametrize("case", sorted(SIZE_CASES))
def test_impossible_sizes_are_a_value_error(case, device):
    with pytest.raises(ValueError) as info:
        SIZE_CASES[case](device)
    msg = str(info.value)
    assert "2**63 - 1" in msg and "shape" in msg, msg
    assert "array is too big" not in msg and "Maximum allowed" not in msg, msg


def test_the_size_rule_is_numpys():
    """The product of the non-zero sizes times the item size must fit int64: compared with
    NumPy on shapes with a 0 dimension (nothing is allocated either way)."""
    for shape, dtype in [((0, 2**62, 2**62), xp.float64), ((0, 2**60), xp.float64),
                         ((0, 2**60), xp.int8), ((2**59, 0, 8), xp.int16),
                         ((0, 2**59, 16), xp.int8), ((0, 2**63 - 1), xp.bool),
                         ((0, 2**63), xp.bool), ((0, 2**31, 2**32), xp.float32)]:
        try:
            np.empty(shape, dtype=dtype._np)
            numpy_ok = True
        except ValueError:
            numpy_ok = False
        try:
            out = xp.empty(shape, dtype=dtype)
            ours_ok = True
        except ValueError as e:
            assert str(shape) in str(e), e
            ours_ok = False
        assert ours_ok == numpy_ok, (shape, dtype, numpy_ok)
        if ours_ok:
            assert out.shape == shape and out.size == 0


def test_check_size_names_the_rule():
    from xp_cuda._validation import check_size
    assert check_size((2**62,), xp.int8, "f") == (2**62,)
    assert check_size((0, 2**61), None, "f") == (0, 2**61)  # a count: 2**61 fits
    assert check_size((), xp.complex128, "f") == ()
    with pytest.raises(ValueError, match=r"f: a result of shape \(4, 2\*\*62\)|f: a result"):
        check_size((4, 2**62), xp.int8, "f")
    with pytest.raises(ValueError, match="bytes of float64"):
        check_size((2**61,), xp.float64, "f")
    assert MAX_BYTES == np.iinfo(np.intp).max


# ---- real out-of-memory on cpu (requests no address space holds) -----------------------------

def _huge(shape):  # a float64 view of `shape` without memory behind it
    return xp.broadcast_to(xp.asarray(1.5), shape)


REAL_CPU_CASES = {  # each asks for 2**48 bytes or more
    "empty": (lambda: xp.empty((2**45,)), 2**48),
    "zeros": (lambda: xp.zeros((2**46,)), 2**49),
    "broadcast_to + 1.0": (lambda: _huge((2**41, 16)) + 1.0, 2**48),
    "sin": (lambda: xp.sin(_huge((2**41, 16))), 2**48),
    "astype": (lambda: xp.astype(_huge((2**42, 16)), xp.float32), 2**48),
    "reshape copy": (lambda: xp.reshape(xp.permute_dims(_huge((2**41, 16)), (1, 0)), (-1,),
                                        copy=True), 2**48),
    "concat": (lambda: xp.concat([_huge((2**41, 16))] * 2), 2**49),
    "tile": (lambda: xp.tile(xp.asarray([1.0, 2.0]), (2**44, 2)), 2**48),  # (NumPy: 2 steps)
    "repeat": (lambda: xp.repeat(xp.asarray([1.0, 2.0]), 2**44), 2**48),
    "matmul": (lambda: xp.matmul(_huge((2**23, 1)), _huge((1, 2**23))), 2**49),
    "linalg.outer": (lambda: xp.linalg.outer(_huge((2**23,)), _huge((2**23,))), 2**49),
    "meshgrid": (lambda: xp.meshgrid(_huge((2**23,)), _huge((2**23,))), 2**49),
    "fft.fft": (lambda: xp.fft.fft(xp.asarray([1 + 1j, 2]), n=2**45), 2**49),
}


@pytest.mark.parametrize("case", sorted(REAL_CPU_CASES))
def test_real_out_of_memory_on_cpu(case):
    make, at_least = REAL_CPU_CASES[case]
    with pytest.raises(MemoryError) as info:
        make()
    e = info.value
    assert isinstance(e, _memory.OutOfMemory), repr(e)  # ours, not NumPy's
    msg = str(e)
    assert "out of memory on cpu" in msg, msg
    asked = int(msg.split(" bytes were asked for")[0].rsplit(" ", 1)[1])
    assert asked >= at_least, msg
    assert "bytes are free there" in msg or "not known here" in msg, msg
    assert e.__cause__ is None and e.__suppress_context__, "the raw error must not be chained"
    # the namespace keeps working
    assert xp.sum(xp.asarray([1.0, 2.0]) + 1.0) == 5.0


# ---- allocations made to fail (the one path: release, one retry, our MemoryError) ------------

class _Failing:
    """Replaces a backend method: raises make_error() on its first `times` calls, then calls
    the original (None: always raises)."""

    def __init__(self, original, make_error, times=1):
        self.original, self.make_error, self.times, self.calls = original, make_error, times, 0

    def __get__(self, obj, cls=None):
        return types.MethodType(self, obj) if obj is not None else self

    def __call__(self, this, *args, **kwargs):
        self.calls += 1
        if self.times is None or self.calls <= self.times:
            raise self.make_error()
        return self.original(this, *args, **kwargs)


@pytest.fixture
def releases(monkeypatch):
    """Counts the releases of cached memory (_memory.release), still releasing."""
    count = []
    original = _memory.release
    monkeypatch.setattr(_memory, "release", lambda: (count.append(1), original()))
    return count


def _forget_plans(monkeypatch):
    for table in (FAST_ANY_LAYOUT, KEPT):
        for k in list(table):
            monkeypatch.delitem(table, k)


@pytest.fixture
def fresh_plans(monkeypatch):
    """No memoised elementwise launch: every call reaches the backend's primitive."""
    _forget_plans(monkeypatch)


def _fail(monkeypatch, name, make_error, times=1):
    cls = type(backend(CPU))
    failing = _Failing(getattr(cls, name), make_error, times)
    monkeypatch.setattr(cls, name, failing)
    return failing


def _calls():  # the public calls of the guard tests, each through one backend primitive
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    b = xp.asarray([[0.5, -1.0], [2.0, 0.25]])
    return {  # name: (backend primitive, the call, its expected values)
        "empty": ("empty", lambda: xp.empty((3, 2)), None),
        "add": ("elementwise", lambda: xp.add(a, b), np.add(a._data, b._data)),
        "+": ("elementwise", lambda: a + b, np.add(a._data, b._data)),
        "sin": ("elementwise", lambda: xp.sin(a), np.sin(a._data)),
        "-x": ("elementwise", lambda: -a, -a._data),
        "matmul": ("matmul", lambda: xp.matmul(a, b), a._data @ b._data),
        "@": ("matmul", lambda: a @ b, a._data @ b._data),
        "getitem": ("getitem", lambda: a[1:, ::-1], a._data[1:, ::-1]),
        "tile": ("tile", lambda: xp.tile(a, (2, 1)), np.tile(a._data, (2, 1))),
        "concat": ("concat", lambda: xp.concat([a, b]), np.concatenate([a._data, b._data])),
    }


CALLS = sorted(_calls())


@pytest.mark.parametrize("call", CALLS)
def test_one_failure_is_retried_after_a_release(call, monkeypatch, releases, fresh_plans):
    primitive, run, expected = _calls()[call]
    failing = _fail(monkeypatch, primitive, _numpy_memory_error)
    out = run()
    assert failing.calls == 2, "one failure, one retry"
    assert len(releases) == 1
    if expected is not None:
        np.testing.assert_array_equal(np.asarray(out._data), expected)


@pytest.mark.parametrize("call", CALLS)
def test_two_failures_are_our_memory_error(call, monkeypatch, releases, fresh_plans):
    primitive, run, _ = _calls()[call]
    failing = _fail(monkeypatch, primitive, _numpy_memory_error, times=None)
    with pytest.raises(MemoryError) as info:
        run()
    assert failing.calls == 2, "retried once, not more"
    assert len(releases) == 1
    msg = str(info.value)
    assert isinstance(info.value, _memory.OutOfMemory)
    fname = {"-x": "negative", "getitem": "__getitem__"}.get(call, call)
    assert msg.startswith(f"{fname}: out of memory on cpu: {2**48} bytes were asked for"), msg
    monkeypatch.undo()
    assert xp.all(xp.asarray([1, 2]) + 1 == xp.asarray([2, 3]))  # still working


def test_the_failed_attempt_is_freed_before_the_retry(monkeypatch):
    """The arrays of the attempt that failed (held by its traceback's frames) are gone when
    the call is made again: their memory is there for the retry."""
    import weakref
    cls = type(backend(CPU))
    original, refs = cls.empty, []

    def empty(self, shape, dtype):
        if not refs:
            temporary = np.ones(1000)
            refs.append(weakref.ref(temporary))
            raise _numpy_memory_error()
        assert refs[0]() is None, "the failed attempt's array is still alive"
        return original(self, shape, dtype)
    monkeypatch.setattr(cls, "empty", empty)
    assert xp.empty((2,)).shape == (2,)
    assert len(refs) == 1


def test_setitem_is_guarded(monkeypatch, releases):
    x = xp.zeros((4,))
    failing = _fail(monkeypatch, "setitem", _numpy_memory_error)
    x[1:3] = 2.0
    assert failing.calls == 2 and len(releases) == 1
    np.testing.assert_array_equal(x._data, [0.0, 2.0, 2.0, 0.0])


def test_inplace_operator_is_guarded(monkeypatch, releases, fresh_plans):
    x = xp.asarray([1.0, 2.0])
    failing = _fail(monkeypatch, "elementwise", _numpy_memory_error)
    x += 1.0
    assert failing.calls == 2 and len(releases) == 1
    np.testing.assert_array_equal(x._data, [2.0, 3.0])


def test_cupy_out_of_memory_names_its_bytes(monkeypatch, releases):
    memory = pytest.importorskip("cupy.cuda.memory")
    failing = _fail(monkeypatch, "empty",
                    lambda: memory.OutOfMemoryError(123456789, 987654321, 0), times=None)
    with pytest.raises(MemoryError, match="empty: out of memory on cpu: 123456789 bytes were "
                                          "asked for") as info:
        xp.empty((5,))
    assert failing.calls == 2
    assert type(info.value) is _memory.OutOfMemory


def test_a_memory_error_without_a_size(monkeypatch, releases):
    _fail(monkeypatch, "empty", MemoryError, times=None)
    with pytest.raises(MemoryError, match="an allocation of unreported size failed"):
        xp.empty((5,))


def _fake_library(monkeypatch, module, name):
    """A stand-in for one of CuPy's library error classes (cuBLAS's needs the library): the
    same module, name and status attribute (cuFFT's is ``result``)."""
    cls = type(name, (RuntimeError,), {"__module__": module})
    attr = "result" if name == "CuFFTError" else "status"

    def init(self, status):
        RuntimeError.__init__(self, f"STATUS {status}")
        setattr(self, attr, status)
    cls.__init__ = init
    mod = types.ModuleType(module)
    setattr(mod, name, cls)
    monkeypatch.setitem(sys.modules, module, mod)
    monkeypatch.setattr(_memory, "_complete", False)
    monkeypatch.setattr(_memory, "_errors", (MemoryError,))
    return cls


@pytest.mark.parametrize("module,name,alloc_failed", [
    ("cupy_backends.cuda.libs.cublas", "CUBLASError", 3),
    ("cupy_backends.cuda.libs.cusolver", "CUSOLVERError", 2),
    ("cupy.cuda.cufft", "CuFFTError", 2),
])
def test_library_allocation_failures(module, name, alloc_failed, monkeypatch, releases):
    err = _fake_library(monkeypatch, module, name)
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    failing = _fail(monkeypatch, "matmul", lambda: err(alloc_failed))
    np.testing.assert_array_equal((a @ a)._data, a._data @ a._data)  # retried
    assert failing.calls == 2 and len(releases) == 1
    failing.calls, failing.times = 0, None
    with pytest.raises(MemoryError, match="could not allocate its work space"):
        xp.matmul(a, a)
    # another status is no memory error: it passes through untouched, without a retry
    failing.calls, failing.make_error = 0, lambda: err(alloc_failed + 4)
    with pytest.raises(err, match=f"STATUS {alloc_failed + 4}"):
        xp.matmul(a, a)
    assert failing.calls == 1


def test_library_handles_are_ours_and_reset(monkeypatch):
    """The cuBLAS/cuSOLVER handles our launchers use: one per (library, device) and thread,
    dropped by a reset of their device (the cuda backend's release), made anew on next use."""
    from xp_cuda._kernels import _runtime
    created, destroyed = [], []
    fake = types.ModuleType("fake_blas_library")
    fake.create = lambda: created.append(len(created) + 100) or created[-1]
    fake.destroy = destroyed.append
    monkeypatch.setitem(sys.modules, "fake_blas_library", fake)
    monkeypatch.setitem(_runtime._HANDLE_LIBRARIES, "cublas", "fake_blas_library")
    monkeypatch.setattr(_runtime._handles, "by", {})
    h0 = _runtime.library_handle("cublas", 0)
    assert _runtime.library_handle("cublas", 0) == h0 and created == [h0]
    h1 = _runtime.library_handle("cublas", 1)
    _runtime.reset_library_handles(0)
    assert destroyed == [h0]
    assert _runtime.library_handle("cublas", 1) == h1  # another device's handle is kept
    assert _runtime.library_handle("cublas", 0) not in (h0, h1)


def test_library_handles_bind_their_stream_once(monkeypatch):
    """library_handle(..., stream) binds the handle to the stream only when it differs from the
    one it last bound (every binding goes through it, so the record holds); a reset handle is
    bound again."""
    from xp_cuda._kernels import _runtime
    bound = []
    fake = types.ModuleType("fake_blas_library")
    fake.create = lambda: 100 + len(bound) * 10
    fake.destroy = lambda h: None
    fake.setStream = lambda h, s: bound.append((h, s))
    monkeypatch.setitem(sys.modules, "fake_blas_library", fake)
    monkeypatch.setitem(_runtime._HANDLE_LIBRARIES, "cublas", "fake_blas_library")
    monkeypatch.setattr(_runtime._handles, "by", {})
    monkeypatch.setattr(_runtime._handles, "stream", {})
    h = _runtime.library_handle("cublas", 0, 7)
    assert _runtime.library_handle("cublas", 0, 7) == h and bound == [(h, 7)]
    assert _runtime.library_handle("cublas", 0) == h and bound == [(h, 7)]  # no stream: as is
    _runtime.library_handle("cublas", 0, 9)
    _runtime.library_handle("cublas", 0, 7)
    assert bound == [(h, 7), (h, 9), (h, 7)]
    _runtime.reset_library_handles(0)
    h2 = _runtime.library_handle("cublas", 0, 7)
    assert h2 != h and bound[-1] == (h2, 7)


def test_other_errors_pass_through(monkeypatch, releases):
    _fail(monkeypatch, "empty", lambda: RuntimeError("not about memory"), times=None)
    with pytest.raises(RuntimeError, match="not about memory"):
        xp.empty((2,))
    assert not releases
    with pytest.raises(TypeError, match="dtype must be"):  # the checks' errors unchanged
        xp.ones((2,), dtype="float64")


def test_fused_functions_are_guarded(monkeypatch, releases, fresh_plans):
    from xp_cuda.fusion import fuse

    @fuse
    def f(x, y):
        return xp.sin(x) * y + 1.0

    x, y = xp.asarray([0.5, 1.0, 2.0]), xp.asarray([2.0, 3.0, 4.0])
    expected = np.sin(x._data) * y._data + 1.0
    np.testing.assert_allclose(f(x, y)._data, expected)
    _forget_plans(monkeypatch)  # (the first call memoised its launches)
    failing = _fail(monkeypatch, "elementwise", _numpy_memory_error)
    np.testing.assert_allclose(f(x, y)._data, expected)
    assert failing.calls >= 2 and len(releases) == 1
    failing.calls, failing.times = 0, None
    _forget_plans(monkeypatch)
    with pytest.raises(MemoryError, match="fused function: out of memory on cpu"):
        f(x, y)


def test_kdtree_is_guarded(monkeypatch, releases):
    pytest.importorskip("scipy")
    from xp_cuda.spatial import KDTree
    from xp_cuda.spatial._engine_cpu import CpuEngine
    pts = xp.asarray(np.random.default_rng(1).random((50, 3)))
    tree = KDTree(pts)
    d0, i0 = tree.query(pts[:5, :], k=2)
    failing = _Failing(CpuEngine.query, _numpy_memory_error)
    monkeypatch.setattr(CpuEngine, "query", failing)
    d1, i1 = tree.query(pts[:5, :], k=2)
    assert failing.calls == 2 and len(releases) == 1
    np.testing.assert_array_equal(d0._data, d1._data)
    np.testing.assert_array_equal(i0._data, i1._data)
    failing.calls, failing.times = 0, None
    with pytest.raises(MemoryError, match="KDTree.query: out of memory on cpu"):
        tree.query(pts[:5, :], k=2)


# ---- the guard itself ----------------------------------------------------------------------

def _public(namespace):
    return {n: getattr(namespace, n) for n in namespace.__all__
            if isinstance(getattr(namespace, n), types.FunctionType)}


def test_every_public_function_is_guarded(v2025):
    for ns in (xp, xp.linalg, xp.fft):
        fns = _public(ns)
        assert len(fns) > 10
        unguarded = [n for n, f in fns.items() if not getattr(f, "__xp_guarded__", False)]
        assert not unguarded, unguarded
    assert xp.matmul is xp.linalg.matmul  # one guard per function, wherever it is shown
    for stem in ("add", "sub", "mul", "truediv", "pow", "and", "lt", "eq", "iadd", "radd",
                 "matmul", "rmatmul", "imatmul", "getitem", "setitem", "neg", "abs"):
        src = inspect.getsource(getattr(xp.asarray(1.0).__class__, f"__{stem}__"))
        assert "_memory.recover" in src, stem


def test_guards_keep_the_signatures():
    for ns in (xp, xp.linalg, xp.fft):
        for name, f in _public(ns).items():
            original = getattr(f, "__wrapped__", None)
            if original is None:  # guarded inline
                continue
            assert inspect.signature(f) == inspect.signature(original), name
            assert f.__name__ == original.__name__ and f.__doc__ == original.__doc__, name
    # fftfreq shows its dtype keyword only under the revision that has it
    assert "dtype" not in inspect.signature(xp.fft.fftfreq).parameters


def test_guards_pass_arguments_as_given():
    a, b = xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])
    assert [o.shape for o in xp.meshgrid(a, b, indexing="ij")] == [(2, 2), (2, 2)]  # *args, kw
    assert xp.sum(xp.reshape(a, (2, 1)), axis=0, keepdims=True).shape == (1, 1)  # keywords
    assert float(xp.sum(a, dtype=xp.float32)) == 3.0
    with pytest.raises(TypeError):
        xp.sum(a, 0)  # axis is keyword-only, as in the original
    assert xp.fft.fftfreq(4, d=0.5).shape == (4,)
    assert xp.linalg.vector_norm(a, ord=1) == 3.0


# ---- a broken CuPy ---------------------------------------------------------------------------

@pytest.fixture
def fresh_devices(monkeypatch):
    """_devices as if nothing were known yet (restored after the test)."""
    for name, value in (("_cupy", None), ("_cuda_count", None), ("_reason", None),
                        ("_loud", False), ("_warned", False), ("_default", None)):
        monkeypatch.setattr(_devices, name, value)
    monkeypatch.delenv(_devices.ENV_DEFAULT_DEVICE, raising=False)
    return monkeypatch


def test_cupy_not_installed_is_quiet(fresh_devices):
    fresh_devices.setitem(sys.modules, "cupy", None)  # import cupy: ModuleNotFoundError
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _devices.default_device() == CPU
    assert _devices.cuda_unavailable_reason() is None


class _Raising(types.ModuleType):
    def __getattr__(self, name):
        raise RuntimeError(f"CUDA libraries unusable ({name}): libcudart.so.12 is missing")


def test_a_cupy_that_fails_on_use_is_named(fresh_devices):
    fresh_devices.setitem(sys.modules, "cupy", _Raising("cupy"))
    with pytest.warns(RuntimeWarning, match="libcudart.so.12 is missing") as record:
        assert _devices.default_device() == CPU
    assert "XP_CUDA_DEFAULT_DEVICE=cpu" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _devices.default_device()  # once only
    with pytest.raises(ValueError, match="libcudart.so.12 is missing"):
        _devices.check_device(CUDA0, "XP_CUDA_DEFAULT_DEVICE='cuda:0'")


def _fake_cupy(status):
    class Error(Exception):
        def __init__(self):
            super().__init__(f"cudaError {status}")
            self.status = status

    def count():
        raise Error()
    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count))
    return cp


@pytest.mark.parametrize("status,driver,loud", [(100, True, False), (35, False, False),
                                                (35, True, True), (999, False, True)])
def test_device_query_failures(status, driver, loud, fresh_devices):
    """No device (100), or no driver on a machine without one (35): cpu, quietly. A driver
    that refuses where one is installed, or anything else: named."""
    fresh_devices.setitem(sys.modules, "cupy", _fake_cupy(status))
    fresh_devices.setattr(_devices, "_driver_present", lambda: driver)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert _devices.default_device() == CPU
    assert bool(record) == loud, [str(w.message) for w in record]
    if loud:
        assert record[0].category is RuntimeWarning
        assert f"cudaError {status}" in str(record[0].message)
    assert f"cudaError {status}" in _devices.cuda_unavailable_reason()


_BROKEN_IMPORT = r"""
import importlib.abc, sys, warnings
class Broken(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "cupy":
            raise OSError("libnvrtc.so.12: cannot open shared object file")
sys.meta_path.insert(0, Broken())
warnings.simplefilter("always")
import xp_cuda as xp
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    try:
        x = xp.asarray([1.0])
        print("DEVICE", x.device)
    except ValueError as e:
        print("ERROR", e)
    for m in w:
        print("WARNING", m.category.__name__, m.message)
"""


@pytest.mark.parametrize("env", [None, "cuda:0", "cpu"])
def test_broken_cupy_in_a_fresh_process(env):
    environ = dict(os.environ)
    environ.pop(_devices.ENV_DEFAULT_DEVICE, None)
    if env is not None:
        environ[_devices.ENV_DEFAULT_DEVICE] = env
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    environ["PYTHONPATH"] = root + os.pathsep + environ.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _BROKEN_IMPORT], capture_output=True,
                         text=True, env=environ, timeout=300).stdout
    reason = "libnvrtc.so.12: cannot open shared object file"
    if env is None:
        assert "DEVICE cpu" in out and "WARNING RuntimeWarning" in out and reason in out, out
    elif env == "cuda:0":
        assert "ERROR" in out and reason in out and "cuda:0 is not usable" in out, out
    else:  # cpu chosen knowingly: no warning
        assert "DEVICE cpu" in out and "WARNING" not in out, out


# ---- cuda:0: the GPU really filled -----------------------------------------------------------

_GIB = 1 << 30


def _fill(device, blocks):
    """Allocate blocks of 8 GiB, then 1 GiB, then 64 MiB until each size fails: the GPU is
    full to within 64 MiB. Every failure must be our MemoryError naming the bytes."""
    for size in (8 * _GIB, _GIB, 64 << 20):
        while True:
            try:
                blocks.append(xp.empty((size,), dtype=xp.uint8, device=device))
            except MemoryError as e:
                assert isinstance(e, _memory.OutOfMemory), repr(e)
                assert f"{size} bytes were asked for" in str(e), str(e)
                assert "bytes are free there" in str(e), str(e)
                break


def _release_all(blocks):
    blocks.clear()
    _memory.release()


@pytest.mark.cuda
@pytest.mark.fills_gpu
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_cuda_exhaustion_then_recovery():
    from xp_cuda.fusion import fuse
    from xp_cuda.spatial import KDTree
    rng = np.random.default_rng(18)
    d = CUDA0
    n = 8192  # 8192 x 8192 float64: 512 MiB results, far beyond what a full GPU has left
    a_np = rng.standard_normal((n, n))
    v_np = rng.standard_normal(n)
    a = xp.asarray(a_np, device=d)
    v = xp.asarray(v_np, device=d)
    c = xp.asarray(a_np[0] + 1j * a_np[1], device=d)
    pts_np = rng.random((20000, 3))
    tree = KDTree(xp.asarray(pts_np, device=d))
    queries = xp.asarray(rng.random((200000, 3)), device=d)

    @fuse
    def fused(x, y):
        return xp.sin(x) * y + 1.0

    calls = {
        "broadcast_to + 1.0": lambda: xp.broadcast_to(v, (n, n)) + 1.0,
        "sin": lambda: xp.sin(a),
        "astype": lambda: xp.astype(a, xp.complex128),
        "reshape copy": lambda: xp.reshape(xp.permute_dims(a, (1, 0)), (-1,)),
        "concat": lambda: xp.concat([a, a]),
        "tile": lambda: xp.tile(a, (2, 1)),
        "repeat": lambda: xp.repeat(a, 2, axis=0),
        "matmul": lambda: xp.matmul(a, a),
        "@": lambda: a @ a,
        "linalg.outer": lambda: xp.linalg.outer(v, v),
        "linalg.inv": lambda: xp.linalg.inv(a),
        "fft.fft": lambda: xp.fft.fft(c, n=n * n),
        "meshgrid": lambda: xp.meshgrid(v, v),
        "fused": lambda: fused(a, a),
        "kdtree.query": lambda: tree.query(queries, k=500),
        "empty": lambda: xp.empty((n, n), device=d),
    }
    blocks = []
    try:
        _fill(d, blocks)
        for name, call in calls.items():
            with pytest.raises(MemoryError) as info:
                call()
            e = info.value
            assert isinstance(e, _memory.OutOfMemory), (name, repr(e))
            msg = str(e)
            assert "out of memory on cuda:0" in msg, (name, msg)
            assert "bytes were asked for" in msg or "could not allocate" in msg, (name, msg)
            assert "bytes are free there" in msg, (name, msg)
    finally:
        _release_all(blocks)

    # Everything works again, compared with NumPy: cuBLAS, cuSOLVER, cuFFT, an elementwise
    # kernel, a fused kernel and the KD-tree.
    m = 256
    s_np = a_np[:m, :m] @ a_np[:m, :m].T + m * np.eye(m)  # symmetric positive definite
    s = xp.asarray(s_np, device=d)
    b_np = rng.standard_normal((m, 3))
    b = xp.asarray(b_np, device=d)
    np.testing.assert_allclose((s @ s).to_device(CPU)._data, s_np @ s_np, rtol=1e-10)
    np.testing.assert_allclose(xp.matmul(a[:m, :m], a[:m, :m]).to_device(CPU)._data,
                               a_np[:m, :m] @ a_np[:m, :m], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(xp.linalg.solve(s, b).to_device(CPU)._data,
                               np.linalg.solve(s_np, b_np), rtol=1e-9)
    np.testing.assert_allclose(xp.linalg.inv(s).to_device(CPU)._data, np.linalg.inv(s_np),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(xp.linalg.cholesky(s).to_device(CPU)._data,
                               np.linalg.cholesky(s_np), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(xp.fft.fft(c).to_device(CPU)._data,
                               np.fft.fft(a_np[0] + 1j * a_np[1]), rtol=1e-9, atol=1e-8)
    # CUDA's sin and glibc's differ in the last bit (2.2e-16 at 0.02 seen on the H200)
    np.testing.assert_allclose(xp.sin(a[:m, ...]).to_device(CPU)._data, np.sin(a_np[:m]),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(fused(a[:m, ...], a[:m, ...]).to_device(CPU)._data,
                               np.sin(a_np[:m]) * a_np[:m] + 1.0, rtol=1e-14, atol=1e-15)
    scipy_spatial = pytest.importorskip("scipy.spatial")
    dist, idx = tree.query(queries[:1000, ...], k=3)
    ref_d, ref_i = scipy_spatial.cKDTree(pts_np).query(queries[:1000, ...].to_device(CPU)._data,
                                                        k=3)
    np.testing.assert_allclose(dist.to_device(CPU)._data, ref_d, rtol=1e-12)
    np.testing.assert_array_equal(idx.to_device(CPU)._data, ref_i)


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_cuda_cublas_alloc_failure_recovers_with_a_fresh_handle(monkeypatch):
    """A real CUBLASError(ALLOC_FAILED) out of the gemm: the handles we own are dropped, the
    retry makes new ones, and the product is right."""
    from cupy_backends.cuda.libs import cublas

    from xp_cuda._kernels import _runtime
    rng = np.random.default_rng(7)
    a_np = rng.standard_normal((64, 64))
    a = xp.asarray(a_np, device=CUDA0)
    np.testing.assert_allclose((a @ a).to_device(CPU)._data, a_np @ a_np, rtol=1e-12)
    before = _runtime.library_handle("cublas", 0)
    cls = type(backend(CUDA0))
    failing = _Failing(cls.matmul, lambda: cublas.CUBLASError(3))
    monkeypatch.setattr(cls, "matmul", failing)
    np.testing.assert_allclose((a @ a).to_device(CPU)._data, a_np @ a_np, rtol=1e-12)
    assert failing.calls == 2
    assert ("cublas", 0) in _runtime._handles.by  # made anew by the retry
    assert _runtime._handles.by[("cublas", 0)] is not None
    del before


@pytest.mark.cuda
@pytest.mark.skipif(_NO_GPU, reason="no usable CUDA GPU here")
def test_cuda_real_huge_request():
    """More than the device holds (and not an impossible size): our MemoryError with the
    bytes asked and free; the next call works."""
    with pytest.raises(MemoryError) as info:
        xp.empty((2**50,), dtype=xp.uint8, device=CUDA0)
    msg = str(info.value)
    assert f"{2**50} bytes were asked for" in msg and "bytes are free there" in msg, msg
    assert "cuda:0" in msg
    x = xp.asarray([1.0, 2.0], device=CUDA0)
    assert float(xp.sum(x * 2.0)) == 6.0
