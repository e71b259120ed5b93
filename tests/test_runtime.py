"""The kernel runtime (xp_cuda/_kernels/_runtime.py) without a GPU: where the disk cache lives,
how its entries are verified, sources read once, the dtype tables, per-thread parameter blocks,
the load path's recovery (with a fake CuPy), and the kernel layer being a leaf."""
import ast
import importlib.util
import os
import threading
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from xp_cuda._devices import cuda_device_count
from xp_cuda._kernels import _runtime as rt

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "xp_cuda" / "_kernels"


# ---- where the cache lives -------------------------------------------------------------------

@pytest.fixture
def tmp_temp(tmp_path, monkeypatch):
    """A private temp directory standing in for tempfile.gettempdir() (the fallback's parent)."""
    t = tmp_path / "tmp"
    t.mkdir()
    monkeypatch.setattr(rt.tempfile, "gettempdir", lambda: str(t))
    return t


def _no_warning(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_empty_setting_means_the_default_folder(tmp_path, monkeypatch, tmp_temp):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    expected = home / ".cache" / "xp_cuda" / "kernels"
    for setting in (None, "", "  "):
        assert _no_warning(lambda: rt.resolve_cache_dir(setting)) == expected
    assert expected.is_dir()


def test_tilde_is_expanded(tmp_path, monkeypatch, tmp_temp):
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    d = _no_warning(lambda: rt.resolve_cache_dir("~/kc"))
    assert d == tmp_path / "h" / "kc" and d.is_dir()
    assert "~" not in str(d)


def test_cache_dir_reads_the_environment_once_per_value(tmp_path, monkeypatch, tmp_temp):
    monkeypatch.setattr(rt, "_cache_dirs", {})
    monkeypatch.setenv(rt.CACHE_ENV, str(tmp_path / "a"))
    assert rt.cache_dir() == tmp_path / "a"
    monkeypatch.setenv(rt.CACHE_ENV, str(tmp_path / "b"))
    assert rt.cache_dir() == tmp_path / "b"


def _fallback_warning(setting):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = rt.resolve_cache_dir(setting)
    assert len(w) == 1, [str(x.message) for x in w]
    return d, str(w[0].message)


@pytest.mark.parametrize("under", [False, True], ids=["file-is-the-folder", "file-is-a-parent"])
def test_a_file_in_the_way_falls_back_with_one_warning(tmp_path, tmp_temp, under):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    wanted = blocker / "sub" if under else blocker
    d, msg = _fallback_warning(str(wanted))
    fallback = rt._fallback_dir()
    assert d == fallback and fallback.parent == tmp_temp
    assert str(wanted) in msg and str(fallback) in msg
    st = os.lstat(fallback)
    assert st.st_mode & 0o777 == 0o700 and st.st_uid == os.getuid()
    assert blocker.read_text() == "not a folder"  # left alone


def test_fallback_is_0700_whatever_the_umask(tmp_path, tmp_temp):
    blocker = tmp_path / "f"
    blocker.write_text("")
    old = os.umask(0o277)  # would leave the owner without write permission
    try:
        d, _ = _fallback_warning(str(blocker))
    finally:
        os.umask(old)
    assert os.lstat(d).st_mode & 0o777 == 0o700


def test_an_unwritable_folder_falls_back(tmp_path, tmp_temp, monkeypatch):
    # Tests may run as root, where mode bits do not stop a write: fail the probe itself.
    wanted = tmp_path / "ro"
    real_mkstemp = rt.tempfile.mkstemp

    def mkstemp(*a, dir=None, **k):
        if Path(dir) == wanted:
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*a, dir=dir, **k)

    monkeypatch.setattr(rt.tempfile, "mkstemp", mkstemp)
    d, msg = _fallback_warning(str(wanted))
    assert d == rt._fallback_dir()
    assert str(wanted) in msg and str(d) in msg and "Permission denied" in msg


def test_fallback_owned_by_someone_else_is_refused(tmp_path, tmp_temp, monkeypatch):
    real_uid = os.getuid()
    monkeypatch.setattr(rt.os, "getuid", lambda: real_uid + 4242)
    fallback = rt._fallback_dir()
    fallback.mkdir(mode=0o700)  # owned by the real user, not the one getuid now reports
    blocker = tmp_path / "f"
    blocker.write_text("")
    d, msg = _fallback_warning(str(blocker))
    assert d is None
    assert str(blocker) in msg and str(fallback) in msg and "owned by uid" in msg
    assert "no disk cache" in msg


def test_group_writable_fallback_is_refused(tmp_path, tmp_temp):
    fallback = rt._fallback_dir()
    fallback.mkdir()
    os.chmod(fallback, 0o770)
    blocker = tmp_path / "f"
    blocker.write_text("")
    d, msg = _fallback_warning(str(blocker))
    assert d is None and str(fallback) in msg and "may write to it" in msg


def test_symlinked_fallback_is_refused(tmp_path, tmp_temp):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    os.symlink(target, rt._fallback_dir())
    blocker = tmp_path / "f"
    blocker.write_text("")
    d, msg = _fallback_warning(str(blocker))
    assert d is None and "symbolic link" in msg


def test_existing_private_fallback_is_reused(tmp_path, tmp_temp):
    fallback = rt._fallback_dir()
    fallback.mkdir(mode=0o700)
    blocker = tmp_path / "f"
    blocker.write_text("")
    d, msg = _fallback_warning(str(blocker))
    assert d == fallback


# ---- verified entries ------------------------------------------------------------------------

PAYLOAD = bytes(range(256)) * 40  # stands in for a cubin


def test_entry_round_trip(tmp_path):
    path = tmp_path / "k.cubin"
    rt.write_entry(path, PAYLOAD)
    assert rt.read_entry(path) == PAYLOAD
    assert path.read_bytes().endswith(PAYLOAD) and len(path.read_bytes()) > len(PAYLOAD)
    assert [p.name for p in tmp_path.iterdir()] == ["k.cubin"]  # no temp file left behind


def _entry():
    return rt.pack_entry(PAYLOAD)


def _flip(data, i):
    b = bytearray(data)
    b[i] ^= 0x10
    return bytes(b)


BAD = {
    "empty": lambda: b"",
    "header-only-part": lambda: _entry()[:10],
    "truncated-payload": lambda: _entry()[:-1],
    "truncated-to-header": lambda: _entry()[:rt._HEADER.size],
    "trailing-bytes": lambda: _entry() + b"\0",
    "garbage": lambda: os.urandom(5000),
    "plain-cubin-of-the-old-format": lambda: PAYLOAD,
    "bit-flip-in-payload": lambda: _flip(_entry(), rt._HEADER.size + 1234),
    "bit-flip-in-magic": lambda: _flip(_entry(), 0),
    "bit-flip-in-length": lambda: _flip(_entry(), 12),
    "bit-flip-in-checksum": lambda: _flip(_entry(), 30),
    "other-format-version": lambda: rt._HEADER.pack(rt._MAGIC, rt._FORMAT + 1, len(PAYLOAD),
                                                    __import__("hashlib").sha256(PAYLOAD)
                                                    .digest()) + PAYLOAD,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_entries_are_never_returned(tmp_path, case):
    path = tmp_path / "k.cubin"
    path.write_bytes(BAD[case]())
    assert rt.unpack_entry(path.read_bytes()) is None
    assert rt.read_entry(path) is None


def test_missing_entry_reads_as_none(tmp_path):
    assert rt.read_entry(tmp_path / "absent.cubin") is None
    assert rt.read_entry(tmp_path) is None  # a folder where the entry should be


def test_a_bad_entry_is_replaced_atomically(tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(_entry()[:-100])
    assert rt.read_entry(path) is None
    rt.write_entry(path, PAYLOAD)
    assert rt.read_entry(path) == PAYLOAD


def test_write_entry_into_a_missing_folder_raises_and_leaves_nothing(tmp_path):
    with pytest.raises(OSError):
        rt.write_entry(tmp_path / "gone" / "k.cubin", PAYLOAD)
    assert list(tmp_path.iterdir()) == []


# ---- the load path with a fake CuPy ------------------------------------------------------------

class _FakeFunction:
    def __init__(self, module, name):
        if name not in module.names:
            raise RuntimeError("CUDA_ERROR_NOT_FOUND")
        self.module, self.name, self.ptr = module, name, id(self)


def _fake_cupy(rejected: set):
    class Module:
        names = ("k",)

        def load(self, payload):
            if payload in rejected:
                raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
            self.payload = payload

    runtime = SimpleNamespace(getDevice=lambda: 0)
    return SimpleNamespace(cuda=SimpleNamespace(
        runtime=runtime, function=SimpleNamespace(Module=Module, Function=_FakeFunction)))


@pytest.fixture
def fake_load(tmp_path, monkeypatch):
    """The runtime's load path with NVRTC and the driver faked: compiles are counted."""
    monkeypatch.setattr(rt, "_loaded", {})
    monkeypatch.setattr(rt, "_modules", {})
    monkeypatch.setattr(rt, "_cache_dirs", {})
    monkeypatch.setenv(rt.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(rt, "_device_arch", lambda cupy: "sm_90")
    monkeypatch.setattr(rt, "_nvrtc_version_key", lambda: (12, 9))
    compiles = []

    def compile_(source, name, arch, options, output):
        compiles.append(name)
        return b"CUBIN:" + source.encode() + b":%d" % len(compiles)

    monkeypatch.setattr(rt, "_compile", compile_)
    return compiles


def test_load_compiles_once_then_reads_the_verified_entry(fake_load, tmp_path):
    cp = _fake_cupy(set())
    k = rt._load(cp, "src", "k", ())
    assert k.name == "k" and k.kernel is k and fake_load == ["k.cu"]
    (entry,) = (tmp_path / "cache").iterdir()
    assert rt.read_entry(entry) == b"CUBIN:src:1"
    rt._loaded.clear()
    rt._modules.clear()
    rt._load(cp, "src", "k", ())
    assert fake_load == ["k.cu"]  # from the cache
    entry.write_bytes(entry.read_bytes()[:-3])  # truncated: recompiled, never loaded
    rt._modules.clear()
    rt._load(cp, "src", "k", ())
    assert fake_load == ["k.cu", "k.cu"] and rt.read_entry(entry) == b"CUBIN:src:2"


def test_compile_cubins_compiles_and_stores_without_a_device(fake_load, tmp_path):
    """The background tier's compile (fuse's TIERED): each distinct source once, in parallel
    where several, stored on disk; its cubins load without compiling again (prepared), and a
    later call reads the stored entries."""
    pairs = [("src_a", "k"), ("src_b", "k"), ("src_a", "k")]
    got = rt.compile_cubins(pairs, ("--fmad=false",), "sm_90")
    assert sorted(fake_load) == ["k.cu", "k.cu"]
    keys = {rt._entry_key(s, ("--fmad=false",), "sm_90"): s for s in ("src_a", "src_b")}
    assert set(got) == set(keys) and all(cached is False for _, cached in got.values())
    assert all(got[k][0].startswith(b"CUBIN:" + s.encode() + b":") for k, s in keys.items())
    assert len(list((tmp_path / "cache").iterdir())) == 2
    assert rt.compile_cubins(pairs[:1], ("--fmad=false",), "sm_90")[
        rt._entry_key("src_a", ("--fmad=false",), "sm_90")][1] is True  # from the disk
    k = rt._load(_fake_cupy(set()), "src_b", "k", ("--fmad=false",),
                 got[rt._entry_key("src_b", ("--fmad=false",), "sm_90")])
    assert k.module.payload.startswith(b"CUBIN:src_b:") and len(fake_load) == 2


def test_a_fresh_cubin_the_driver_rejects_raises_at_once(fake_load):
    with pytest.raises(rt.KernelCompileError, match="just compiled"):
        rt._load(_fake_cupy({b"CUBIN:src:1"}), "src", "k", ())
    assert fake_load == ["k.cu"]  # no second compile of the same source


def test_rejected_entry_recovers_or_raises(fake_load, tmp_path):
    key = rt._entry_key("src", (), "sm_90")
    entry = tmp_path / "cache" / f"{key}.cubin"
    entry.parent.mkdir()
    rt.write_entry(entry, b"STALE")  # verified, but this driver will not take it
    k = rt._load(_fake_cupy({b"STALE"}), "src", "k", ())
    assert k.module.payload == b"CUBIN:src:1" and fake_load == ["k.cu"]
    assert rt.read_entry(entry) == b"CUBIN:src:1"  # replaced
    rt._modules.clear()
    rt.write_entry(entry, b"STALE")
    with pytest.raises(rt.KernelCompileError, match="again after recompiling"):
        rt._load(_fake_cupy({b"STALE", b"CUBIN:src:2"}), "src", "k", ())
    assert fake_load == ["k.cu", "k.cu"]  # once more, not in a loop


def test_threads_loading_one_kernel_at_once_share_one_module(fake_load, monkeypatch):
    """Threads making the first call of one kernel at the same time (Dask's threaded
    scheduler): one module is loaded and every thread gets its kernel; without the load lock
    each thread loaded its own and replaced the others' in the cache, unloading modules whose
    kernels were still in use (CUDA_ERROR_INVALID_HANDLE on the GPU)."""
    import threading
    import time
    loads = []

    class SlowModule:
        names = ("k",)

        def load(self, payload):
            loads.append(payload)
            time.sleep(0.02)  # the driver's time: the window two threads would both enter

    cp = _fake_cupy(set())
    monkeypatch.setattr(cp.cuda.function, "Module", SlowModule)
    barrier, got = threading.Barrier(8), []

    def work():
        barrier.wait()
        got.append(rt.load_kernel("src", "k"))

    threads = [threading.Thread(target=work) for _ in range(8)]
    monkeypatch.setitem(__import__("sys").modules, "cupy", cp)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and fake_load == ["k.cu"]
    assert len(got) == 8 and all(k.module is got[0].module for k in got)
    assert len(rt._modules) == 1


_FIRST_CALLS_IN_THREADS = """
import threading, numpy as np, xp_cuda as xp
dev = xp.__array_namespace_info__().default_device()  # cuda:0 (XP_CUDA_DEFAULT_DEVICE)
x = xp.asarray(np.linspace(0.1, 1.0, 1000, dtype=np.float32), device=dev)
barrier, errors = threading.Barrier(16), []
def work():
    barrier.wait()
    try:
        for _ in range(50):
            r = (x > 0.5, 0.25 * x, x + x, x * x, xp.sum(x), xp.exp(x))
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=work) for _ in range(16)]
[t.start() for t in threads]; [t.join() for t in threads]
want = np.linspace(0.1, 1.0, 1000, dtype=np.float32)
assert not errors, errors[:2]
assert np.array_equal(np.from_dlpack(x * x, device="cpu"), want * want)
print("ok")
"""


@pytest.mark.cuda
@pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
def test_first_calls_from_many_threads_on_the_gpu(tmp_path):
    """The first calls of several kernels from 16 threads at once, in a fresh process (on
    the H200 each thread failed with CUDA_ERROR_INVALID_HANDLE, or the process crashed,
    before the load lock)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, XP_CUDA_KERNEL_CACHE=str(tmp_path), XP_CUDA_DEFAULT_DEVICE="cuda:0")
    out = subprocess.run([sys.executable, "-c", _FIRST_CALLS_IN_THREADS], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_unknown_kernel_name_is_a_kernel_compile_error(fake_load):
    with pytest.raises(rt.KernelCompileError, match="nope could not be loaded"):
        rt._load(_fake_cupy(set()), "src", "nope", ())


class CUDADriverError(RuntimeError):
    """Named as CuPy's driver error, whose status 2 is CUDA_ERROR_OUT_OF_MEMORY."""

    def __init__(self, status):
        super().__init__(f"status {status}")
        self.status = status


@pytest.mark.parametrize("where", ["module", "kernel"])
def test_a_full_device_at_load_is_a_memory_error_not_a_compile_error(fake_load, monkeypatch,
                                                                      where):
    """A load the driver refuses for want of memory goes up as the driver's error, for the
    public entry's guard to release caches and retry (test_memory), and is not taken for a bad
    cubin: no recompile. Another driver error still reads as a KernelCompileError."""
    cp = _fake_cupy(set())
    status = [2]

    def refuse(*args):
        raise CUDADriverError(status[0])

    class Refused(_FakeFunction):
        def __init__(self, module, name):
            refuse()

    if where == "module":
        monkeypatch.setattr(rt, "_load_module", refuse)
    else:
        cp.cuda.function.Function = Refused
    with pytest.raises(CUDADriverError):
        rt._load(cp, "src", "k", ())
    assert fake_load == ["k.cu"]
    status[0] = 200  # CUDA_ERROR_INVALID_IMAGE
    rt._modules.clear()
    with pytest.raises(rt.KernelCompileError):
        rt._load(cp, "src", "k", ())


def test_no_disk_cache_compiles_in_memory(fake_load, monkeypatch):
    monkeypatch.setattr(rt, "cache_dir", lambda: None)
    k = rt._load(_fake_cupy(set()), "src", "k", ())
    assert k.module.payload == b"CUBIN:src:1"


# ---- sources, tables, devices, launch blocks ---------------------------------------------------

def test_a_source_is_read_once(monkeypatch):
    monkeypatch.setattr(rt, "_sources", {})
    monkeypatch.setattr(rt, "_source_hashes", {})
    reads = []
    real = Path.read_text

    def counting(self, *a, **k):
        reads.append(self.name)
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", counting)
    first = rt.source("spatial.cu")
    for _ in range(5):
        assert rt.source("spatial.cu") is first
        rt.source_hash("spatial.cu")
    assert reads == ["spatial.cu"]
    assert first == (KERNELS / "spatial.cu").read_bytes().decode()
    assert len(rt.source_hash("spatial.cu")) == 64


def test_family_modules_take_sources_from_the_runtime():
    from xp_cuda._kernels import elementwise
    assert elementwise.header("float x;") is rt.source("elementwise.cuh")


def test_complex_helpers_only_in_units_that_name_a_complex_type():
    """A real unit skips elementwise.cuh's complex helpers (and the parse of CuPy's
    complex.cuh): eager and fused units alike; a unit naming complex<...> has them."""
    from xp_cuda._kernels import elementwise as E
    from xp_cuda._kernels import fusion as F
    real = E.layout_unit("add", ("float32", "float32"), "float32", "float32", "cc")
    cplx = E.layout_unit("add", ("complex64", "complex64"), "complex64", "complex64", "cc")
    assert not real.startswith("#define XP_COMPLEX") and "complex<" not in real.split(
        "#ifdef XP_COMPLEX")[0]
    assert cplx.startswith("#define XP_COMPLEX\n")
    prog = type("P", (), {"structs": {}, "kernel": "__global__ void k(complex<float>* p) {}"})
    assert F.translation_unit([prog]).startswith("#define XP_COMPLEX\n")
    prog.kernel = "__global__ void k(float* p) {}"
    assert not F.translation_unit([prog]).startswith("#define XP_COMPLEX")


def test_ctypes_cover_the_thirteen_dtypes():
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64", "complex64", "complex128"]
    assert sorted(rt.CTYPES) == sorted(names) and sorted(rt.NP_TYPES) == sorted(names)
    for n in names:
        assert rt.NP_TYPES[n] is np.dtype(n).type
    assert rt.CTYPES["int64"] == "long long" and rt.CTYPES["complex64"] == "complex<float>"
    from xp_cuda._kernels import elementwise
    assert elementwise.CTYPES is rt.CTYPES  # the name fusion.py imports


def test_device_info_is_read_once_per_device(monkeypatch):
    monkeypatch.setattr(rt, "_device_infos", {})
    reads = []
    current = [0]

    class Device:
        def __init__(self, dev):
            self.dev = dev
            self.compute_capability = "90"

        @property
        def attributes(self):
            reads.append(self.dev)
            return {"MultiProcessorCount": 132 + self.dev, "MaxThreadsPerMultiProcessor": 2048,
                    "MaxRegistersPerMultiprocessor": 65536, "MaxBlocksPerMultiprocessor": 32}

    cp = SimpleNamespace(cuda=SimpleNamespace(
        runtime=SimpleNamespace(getDevice=lambda: current[0]), Device=Device))
    for _ in range(3):
        assert rt.device_info(cp).sm_count == 132
    current[0] = 1
    assert rt.device_info(cp) == rt.DeviceInfo(1, 133, 2048, 65536, 32, 90)
    assert reads == [0, 1]
    from xp_cuda._kernels import elementwise
    assert elementwise._max_blocks(cp) == 133 * 16  # the name fusion.py imports
    assert rt.grid(cp, 10, 256, 16) == 1 and rt.grid(cp, 0, 256, 16) == 1
    assert rt.grid(cp, 10**9, 256, 16) == 133 * 16 and rt.grid(cp, 1000, 256, 16) == 4


def test_parameter_blocks_are_per_thread():
    params = rt.ThreadParams(4)
    mine = params.block
    assert params.block is mine and len(mine[0]) == 4
    seen = []
    t = threading.Thread(target=lambda: seen.append(params.block))
    t.start()
    t.join()
    (theirs,) = seen
    assert theirs[1] != mine[1]
    assert __import__("ctypes").addressof(theirs[0]) != __import__("ctypes").addressof(mine[0])


def test_parameter_block_points_at_its_cells():
    import ctypes
    for cell_bytes in (8, 16):
        p = rt.ThreadParams(3, cell_bytes)
        base = ctypes.addressof(p.vals)
        assert list(p.ptrs) == [base + cell_bytes * i for i in range(3)]
        assert p.addr == ctypes.addressof(p.ptrs)
        p.vals[cell_bytes // 8] = 77  # cell 1
        assert ctypes.c_uint64.from_address(p.ptrs[1]).value == 77


# ---- the kernel layer is a leaf ---------------------------------------------------------------

def _spec_imports(text: str) -> list[str]:
    """Imports of xp_cuda outside xp_cuda._kernels in one module of xp_cuda/_kernels/."""
    bad = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                continue  # within _kernels
            if node.level >= 2:
                target = "xp_cuda" + ("." + node.module if node.module else "")
            else:
                target = node.module or ""
            if target == "xp_cuda":  # from .. import x / from xp_cuda import x
                bad += [f"xp_cuda.{a.name}" for a in node.names if a.name != "_kernels"]
            elif target.startswith("xp_cuda.") and not target.startswith("xp_cuda._kernels"):
                bad.append(target)
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names
                    if (a.name == "xp_cuda" or a.name.startswith("xp_cuda."))
                    and not a.name.startswith("xp_cuda._kernels")]
    return bad


def test_the_leaf_check_can_fail():
    assert _spec_imports("from .._dtypes import float32") == ["xp_cuda._dtypes"]
    assert _spec_imports("def f():\n    from .. import _elementwise") == ["xp_cuda._elementwise"]
    assert _spec_imports("import xp_cuda._validation as v") == ["xp_cuda._validation"]
    assert _spec_imports("from xp_cuda._array import Array") == ["xp_cuda._array"]
    assert _spec_imports("from xp_cuda import linalg") == ["xp_cuda.linalg"]
    assert _spec_imports("from . import load_kernel\nfrom ._runtime import CTYPES\n"
                         "from xp_cuda._kernels import elementwise") == []


# fusion.py's own _dtypes imports are being removed on the fusion branch.
@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_kernel_layer_imports_nothing_above_it(path):
    assert _spec_imports(path.read_text(encoding="utf-8")) == []


def test_warm_cache_tool_enumerates_every_elementwise_kernel():
    spec = importlib.util.spec_from_file_location("warm_cache", ROOT / "tools" / "warm_cache.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    from xp_cuda._elementwise import ELEMENTWISE
    from xp_cuda._kernels import elementwise as gen
    items = tool.all_items()
    assert {it[0] for it in items} == set(ELEMENTWISE) and len(items) > 1000
    assert ("add", ("float32", "float32"), "float32", "float32") in items
    for name, dtypes, tc, to in items[:50]:
        assert gen.kernel_name(name, dtypes, gen.layouts_for(dtypes)[0]) in \
            gen.translation_unit([(name, dtypes, tc, to)])


@pytest.fixture
def slow_compiles(monkeypatch):
    """Every compile takes 0.3 s, and a notice is due after 0.05 s."""
    import time
    slow = rt._compile

    def compile_slowly(*args):
        time.sleep(0.3)
        return slow(*args)
    monkeypatch.setattr(rt, "_compile", compile_slowly)
    monkeypatch.setattr(rt, "NOTICE_AFTER", 0.05)


def test_a_slow_compile_says_so_and_a_quick_one_says_nothing(fake_load, slow_compiles,
                                                            monkeypatch, capsys):
    """A first call that compiles for longer than NOTICE_AFTER names what it compiles on
    stderr, then how long it took; a quick compile prints nothing."""
    cp = _fake_cupy(set())
    rt._load(cp, "slow source", "k", ())
    err = capsys.readouterr().err
    assert "xp_cuda: compiling the kernel k for sm_90" in err
    assert "xp_cuda: compiled the kernel k for sm_90 in 0." in err
    monkeypatch.setattr(rt, "NOTICE_AFTER", 30.0)
    rt._load(cp, "another source", "k", ())
    monkeypatch.setattr(rt, "_modules", {})
    rt._load(cp, "slow source", "k", ())  # from the disk cache: no compile at all
    assert capsys.readouterr().err == ""


def test_a_slow_parallel_batch_says_so_once(fake_load, slow_compiles, monkeypatch, capsys):
    """load_kernels compiles its missing cubins in parallel: one notice for the batch, none
    per kernel."""
    import sys
    cp = _fake_cupy(set())
    monkeypatch.setitem(sys.modules, "cupy", cp)
    kernels = rt.load_kernels([("source one", "k"), ("source two", "k")])
    assert len(kernels) == 2 and fake_load == ["k.cu", "k.cu"]
    err = capsys.readouterr().err
    assert err.count("xp_cuda: compiling") == 1, err
    assert "compiling 2 kernels for sm_90 in parallel" in err
    assert "compiled 2 kernels for sm_90 in parallel in 0." in err
