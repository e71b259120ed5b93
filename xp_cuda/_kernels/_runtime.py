"""The kernel runtime: every family compiles, caches, loads and launches through this module.

What it owns (the family modules keep only their own planning and argument packing):

- ``source(name)`` / ``source_hash(name)``: a shipped ``.cu``/``.cuh`` file, read and hashed once.
- ``CTYPES`` (dtype name -> C type) and ``NP_TYPES`` (dtype name -> NumPy scalar type).
- ``nvrtc_compile``: NVRTC called directly (no driver, no GPU), the path CI and the runtime share.
- ``load_kernel`` / ``load_kernels``: a cubin per (source, options, architecture, NVRTC
  version), kept in a verified on-disk cache (``cache_dir``, ``read_entry``, ``write_entry``),
  loaded once per device into a module; the kernel is a ``cupy.cuda.function.Function``.
- ``device_info(cp)``: SM count and per-SM limits of the current device, read once per device;
  ``grid(cp, work, threads, per_sm)`` the usual grid-stride block count from it.
- ``ThreadParams`` and ``driver_launch()``: a per-thread block of 8-byte parameter cells and
  ``cuLaunchKernel`` (CuPy's driver binding), the launch path of the hot elementwise calls.

CuPy is imported lazily: the package must import without it.

How a family specialises kernels (choose by the shape of the variant space):

- **Generated structs** (elementwise, fusion): the variants are open-ended or combinatorial
  (function x dtype pair x layout; any traced program). Python prints the C++ of the request into
  one translation unit; the source text is the cache key.
- **``-D`` macros** (vecdot, spatial): one hand-written ``.cu`` body parameterised by a few types
  or constants that vary independently (dtype triple, dimension, metric). Each combination
  compiles when first used; the options are part of the cache key. One ``compile_options``
  function per family builds them, so CI can enumerate and compile every combination.
- **Pre-instantiated names** (creation, scan, sort, copy): a closed set (dtypes or item sizes
  x a few kernels). Templates are instantiated under ``extern "C"`` names, one macro line per
  instance, in the ``.cu`` file and the launcher picks a name; ``instance_units`` compiles only
  the line a name needs (a whole file took 6-18 s), and tests check every name is in the PTX.

Kernels everyday code launches first also ship compiled (``prebuilt/``, ``shipped_cubin``).
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import os
import stat
import struct
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["SOURCE_DIR", "BASE_OPTIONS", "CACHE_ENV", "KernelCompileError", "CTYPES", "NP_TYPES",
           "source", "source_hash", "instance_units", "kernel_sources", "include_dirs", "nvrtc_compile",
           "cache_dir", "resolve_cache_dir", "pack_entry", "unpack_entry", "read_entry",
           "write_entry", "load_kernel", "load_kernels", "kernels_ready", "compile_cubins",
           "device_arch", "DeviceInfo", "device_info", "grid", "ThreadParams", "driver_launch",
           "empty_allocator", "library_handle", "reset_library_handles", "PREBUILT_DIR",
           "shipped_key",
           "shipped_archs", "shipped_cubin"]

SOURCE_DIR = Path(__file__).resolve().parent

# Options every compile uses; the runtime path and the CI path must agree (one code path).
BASE_OPTIONS = ("-std=c++17",)

CACHE_ENV = "XP_CUDA_KERNEL_CACHE"


class KernelCompileError(RuntimeError):
    """A CUDA source failed to compile or load; the message names the source and says why."""


# ---- dtypes ----------------------------------------------------------------------------------
# dtype name -> the C++ type kernels read and write (complex<T> from cupy/complex.cuh).
CTYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
    "float64": "double", "complex64": "complex<float>", "complex128": "complex<double>",
}
# dtype name -> the NumPy scalar type of a kernel parameter of that dtype.
NP_TYPES = {name: np.dtype(name).type for name in CTYPES}


# ---- sources ---------------------------------------------------------------------------------
_sources: dict[str, str] = {}
_source_hashes: dict[str, str] = {}


def source(name: str) -> str:
    """The text of the shipped file ``name`` (e.g. "vecdot.cu"), read once per process.

    Callers pass the same string object to ``load_kernel`` each time, so its memo lookup hashes
    the text once (Python caches a str's hash) instead of re-reading and re-hashing the file."""
    text = _sources.get(name)
    if text is None:
        text = _sources[name] = (SOURCE_DIR / name).read_text(encoding="utf-8")
    return text


def source_hash(name: str) -> str:
    """sha256 (hex) of ``source(name)``, computed once."""
    h = _source_hashes.get(name)
    if h is None:
        h = _source_hashes[name] = hashlib.sha256(source(name).encode()).hexdigest()
    return h


def instance_units(text: str, macros: dict) -> dict:
    """kernel name -> the source to compile for it, for a pre-instantiated family: ``text``
    without its instantiation lines ``MACRO(A0, A1, ...)`` (each macro of ``macros``, which
    maps it to the name templates one line makes: str.format of the line's arguments), plus
    the one line that makes the kernel. Kernels written out in the text (no macro) are in every unit, under
    their own names when listed in macros[None]. A first call then compiles one instance, not
    the whole family (seconds for a dozen dtypes); CI compiles the whole file, which proves
    every line."""
    import re
    pattern = re.compile(r"^(%s)\(([^()\n]*)\)[ \t]*$"
                         % "|".join(re.escape(m) for m in macros if m), re.M)
    body = pattern.sub("", text)
    out = {name: body for name in macros.get(None, ())}
    for m in pattern.finditer(text):
        unit = body + "\n" + m.group(0) + "\n"
        args = [a.strip() for a in m.group(2).split(",")]
        for template in macros[m.group(1)]:
            out[template.format(*args)] = unit
    return out


def kernel_sources() -> dict[str, str]:
    """Every ``*.cu`` file in this folder, as {file name: source text}, sorted by name."""
    return {p.name: source(p.name) for p in sorted(SOURCE_DIR.glob("*.cu"))}


# ---- NVRTC -----------------------------------------------------------------------------------
def _cupy_dir() -> Path:
    # find_spec avoids importing cupy (which may probe the driver) just to locate headers.
    import importlib.util
    spec = importlib.util.find_spec("cupy")
    if spec is None or not spec.submodule_search_locations:
        raise KernelCompileError("CuPy is not installed; install xp-cuda[cuda12] or [cuda13]")
    return Path(list(spec.submodule_search_locations)[0])


def include_dirs() -> list[str]:
    """CuPy's shipped headers: ``_core/include`` plus cub, thrust and libcudacxx under _cccl."""
    inc = _cupy_dir() / "_core" / "include"
    cccl = inc / "cupy" / "_cccl"
    dirs = [inc]
    if cccl.is_dir():
        dirs += sorted(p for p in cccl.iterdir() if p.is_dir())
    return [str(d) for d in dirs]


def _include_options() -> list[str]:
    return [f"-I{d}" for d in include_dirs()]


def _compile(source: str, name: str, arch: str, options, output: str) -> bytes:
    from cupy_backends.cuda.libs import nvrtc  # lazy: optional dependency

    opts = [f"-arch={arch}", *BASE_OPTIONS, *_include_options(), *options]
    try:
        prog = nvrtc.createProgram(source, name, (), ())
    except nvrtc.NVRTCError as e:
        raise KernelCompileError(f"NVRTC could not create a program for {name}: {e}") from None
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as e:
            try:
                log = nvrtc.getProgramLog(prog)
            except nvrtc.NVRTCError:
                log = "(no log)"
            raise KernelCompileError(
                f"CUDA source {name} failed to compile ({e}); NVRTC log:\n{log}") from None
        return nvrtc.getCUBIN(prog) if output == "cubin" else nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)


def nvrtc_compile(source: str, name: str = "kernel.cu", arch: str = "compute_90",
                  options=()) -> str:
    """Compile ``source`` to PTX with NVRTC directly (no driver or GPU needed); return the PTX.

    CuPy's own compile helpers query the driver for the architecture first, which fails on a
    machine with no GPU, hence the direct binding.
    """
    ptx = _compile(source, name, arch, tuple(options), "ptx")
    return ptx.decode("utf-8").rstrip("\x00") if isinstance(ptx, bytes) else ptx


_nvrtc_version = None


def _nvrtc_version_key():
    global _nvrtc_version
    if _nvrtc_version is None:
        from cupy_backends.cuda.libs import nvrtc
        _nvrtc_version = nvrtc.getVersion()
    return _nvrtc_version


# ---- the disk cache: where -------------------------------------------------------------------
def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "xp_cuda" / "kernels"


def _uid():
    getuid = getattr(os, "getuid", None)  # absent on Windows: no ownership checks there
    return getuid() if getuid is not None else None


def _fallback_dir() -> Path:
    uid = _uid()
    return Path(tempfile.gettempdir()) / f"xp_cuda_kernels_{uid if uid is not None else 'user'}"


def _probe(d: Path) -> str | None:
    """None when a file can be created and removed in ``d``; else why not. A real write, since
    permission bits say nothing for root or on some network file systems."""
    try:
        fd, name = tempfile.mkstemp(prefix=".probe-", dir=d)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
        os.unlink(name)
    except OSError as e:
        return e.strerror or str(e)
    return None


def _usable(d: Path) -> str | None:
    """None when ``d`` is (or can be made) a folder we can write in; else why not."""
    try:
        d.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "a file is in the way"
    except OSError as e:
        return e.strerror or str(e)
    if not d.is_dir():
        return "it is not a folder"
    return _probe(d)


def _private(d: Path) -> str | None:
    """None when ``d`` is a private folder of this user (made here with mode 0700 if missing);
    else why it is refused. A shared temp folder is where another user could plant cubins for
    us to load, so the fallback must be ours alone: no symlink, our owner, nobody else writes."""
    try:
        os.mkdir(d, 0o700)
        os.chmod(d, 0o700)  # ours: exactly 0700 whatever the umask
    except FileExistsError:
        pass
    except OSError as e:
        return e.strerror or str(e)
    try:
        st = os.lstat(d)
    except OSError as e:
        return e.strerror or str(e)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    uid = _uid()
    if uid is not None:
        if st.st_uid != uid:
            return f"it is owned by uid {st.st_uid}, not by this user (uid {uid})"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"group or others may write to it (mode {stat.S_IMODE(st.st_mode):#o})"
    return _probe(d)


def resolve_cache_dir(setting: str | None) -> Path | None:
    """The kernel cache folder for a value of $XP_CUDA_KERNEL_CACHE (None or empty: the default
    ``~/.cache/xp_cuda/kernels``; ``~`` expanded). An unusable folder falls back to a private
    per-user folder in the temp directory, with one warning naming both; when that is refused
    too, the warning says why and the result is None: kernels compile into memory, no disk
    cache. Never raises for the cache's sake."""
    why: str | None
    try:
        wanted = (Path(os.path.expanduser(setting)) if setting and setting.strip()
                  else _default_cache_dir())
    except (RuntimeError, KeyError) as e:  # no home directory to expand
        wanted, why = Path(setting or "~/.cache/xp_cuda/kernels"), f"no home directory ({e})"
    else:
        why = _usable(wanted)
        if why is None:
            return wanted
    fallback = _fallback_dir()
    refused = _private(fallback)
    if refused is None:
        warnings.warn(f"xp_cuda: kernel cache folder {wanted} is unusable ({why}); using "
                      f"{fallback} instead (set {CACHE_ENV} to choose another)",
                      RuntimeWarning, stacklevel=3)
        return fallback
    warnings.warn(f"xp_cuda: kernel cache folder {wanted} is unusable ({why}) and the fallback "
                  f"{fallback} is refused ({refused}); kernels compile in memory this run, "
                  f"with no disk cache (set {CACHE_ENV} to a folder you can write)",
                  RuntimeWarning, stacklevel=3)
    return None


_cache_dirs: dict = {}  # $XP_CUDA_KERNEL_CACHE value -> resolved folder (or None)


def cache_dir() -> Path | None:
    """``resolve_cache_dir`` of the current $XP_CUDA_KERNEL_CACHE, once per value per process
    (so its warning is given once)."""
    setting = os.environ.get(CACHE_ENV)
    try:
        return _cache_dirs[setting]
    except KeyError:
        d = _cache_dirs[setting] = resolve_cache_dir(setting)
        return d


# ---- the disk cache: entries -----------------------------------------------------------------
# An entry is a header then the cubin. A cubin the driver is handed must be whole: a truncated
# one has crashed the process inside cuModuleLoad, and a garbage one failed every run.
_MAGIC = b"XPCUDAK\x00"
_FORMAT = 1
_HEADER = struct.Struct("<8sIQ32s")  # magic, format version, payload bytes, sha256(payload)


def pack_entry(payload: bytes) -> bytes:
    """The bytes of a cache entry holding ``payload``."""
    return _HEADER.pack(_MAGIC, _FORMAT, len(payload), hashlib.sha256(payload).digest()) + payload


def unpack_entry(data: bytes) -> bytes | None:
    """The payload of an entry, or None when it is empty, truncated, of another format, or
    does not match its checksum."""
    if len(data) < _HEADER.size:
        return None
    magic, version, length, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic != _MAGIC or version != _FORMAT or length != len(payload)
            or hashlib.sha256(payload).digest() != digest):
        return None
    return payload


def read_entry(path) -> bytes | None:
    """The verified payload of the entry at ``path``; None when missing, unreadable or bad."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return unpack_entry(data)


def write_entry(path, payload: bytes) -> None:
    """Store ``payload`` at ``path`` atomically (a temp file in the same folder, then
    os.replace): a concurrent reader sees the old entry or the new one, never a part.
    Raises OSError when the folder cannot take it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pack_entry(payload))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_store_warned = False


def _store(path, payload: bytes) -> None:
    """write_entry, best effort: a full or vanished disk costs a recompile next run, not this
    run (one warning per process)."""
    global _store_warned
    try:
        write_entry(path, payload)
    except OSError as e:
        if not _store_warned:
            _store_warned = True
            warnings.warn(f"xp_cuda: could not write the kernel cache entry {path} ({e}); "
                          "kernels still run, compiled again in later runs",
                          RuntimeWarning, stacklevel=4)


# ---- devices ---------------------------------------------------------------------------------
class DeviceInfo(NamedTuple):
    """What the launchers size grids by, for one device."""
    id: int
    sm_count: int
    max_threads_per_sm: int
    max_regs_per_sm: int
    max_blocks_per_sm: int
    compute_capability: int  # e.g. 90 for sm_90


_device_infos: dict[int, DeviceInfo] = {}


_NAMES = {np.dtype(n): n for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "float16", "float32", "float64",
                                   "complex64", "complex128")}


def c_contiguous(shape, strides, itemsize: int) -> bool:
    """NumPy's C-contiguity from shape and byte strides (dims of one element are free, an
    empty array is contiguous): what the launchers check without a CuPy view."""
    if 0 in shape:
        return True
    want = itemsize
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != want:
            return False
        want *= n
    return True


def dtype_name(dt) -> str:
    """``dt.name`` of a NumPy dtype, by lookup: NumPy computes the property each time
    (2.3 us, as long as a whole kernel launch), and launchers key their caches on it."""
    name = _NAMES.get(dt)
    return name if name is not None else dt.name


def device_info(cp) -> DeviceInfo:
    """DeviceInfo of the current CuPy device, read once per device id."""
    dev = cp.cuda.runtime.getDevice()
    info = _device_infos.get(dev)
    if info is None:
        d = cp.cuda.Device(dev)
        a = d.attributes
        info = _device_infos[dev] = DeviceInfo(
            dev, a["MultiProcessorCount"], a.get("MaxThreadsPerMultiProcessor", 2048),
            a.get("MaxRegistersPerMultiprocessor", 65536),
            a.get("MaxBlocksPerMultiprocessor", 32), int(d.compute_capability))
    return info


def grid(cp, work: int, threads: int, per_sm: int) -> int:
    """Blocks of ``threads`` for ``work`` items, grid-stride beyond ``per_sm`` blocks per SM;
    at least 1."""
    return max(1, min(-(-work // threads), device_info(cp).sm_count * per_sm))


_archs: dict[int, str] = {}


def _device_arch(cupy) -> str:
    """sm_XX for the current device, clamped to what this NVRTC can target."""
    info = device_info(cupy)
    arch = _archs.get(info.id)
    if arch is None:
        from cupy_backends.cuda.libs import nvrtc
        cc = info.compute_capability
        supported = [a for a in nvrtc.getSupportedArchs() if a <= cc]
        arch = _archs[info.id] = f"sm_{max(supported) if supported else cc}"
    return arch


# ---- loading ---------------------------------------------------------------------------------
def _entry_key(source: str, options: tuple, arch: str) -> str:
    """The cache file's name: source, options, arch, NVRTC version and base options."""
    src_hash = hashlib.sha256(source.encode()).hexdigest()
    return hashlib.sha256(repr((src_hash, options, arch, _nvrtc_version_key(),
                                BASE_OPTIONS)).encode()).hexdigest()


def _entry_path(key: str):
    d = cache_dir()
    return None if d is None else d / f"{key}.cubin"


# ---- kernels shipped in the package ---------------------------------------------------------
# prebuilt/<arch>.zip holds cubins of the kernels everyday code launches first (tools/prebuild.py
# lists and builds them), so a new user's first calls load instead of compiling. An entry's
# name is shipped_key(source, options, arch): it does not name an NVRTC version (a cubin loads
# on any newer driver). A cubin built for sm_XY runs on every sm_XZ with Z >= Y.
PREBUILT_DIR = SOURCE_DIR / "prebuilt"
_shipped: dict = {}  # arch -> (ZipFile, names) or None
_shipped_lock = threading.Lock()


def shipped_key(source: str, options: tuple, arch: str) -> str:
    src_hash = hashlib.sha256(source.encode()).hexdigest()
    return hashlib.sha256(repr((src_hash, tuple(options), arch, BASE_OPTIONS)).encode()
                          ).hexdigest()


def shipped_archs() -> list[str]:
    """The archs the package ships kernels for (sm_80, sm_90, ...), ascending."""
    return sorted((p.stem for p in PREBUILT_DIR.glob("sm_*.zip")),
                  key=lambda a: int(a[3:]))


def _shipped_store(arch: str):
    store = _shipped.get(arch, False)
    if store is False:
        import zipfile
        try:
            z = zipfile.ZipFile(PREBUILT_DIR / f"{arch}.zip")
            store = (z, frozenset(z.namelist()))
        except (OSError, zipfile.BadZipFile):
            store = None
        _shipped[arch] = store
    return store


def shipped_cubin(source: str, options: tuple, arch: str) -> bytes | None:
    """The shipped cubin for ``source`` on a device of ``arch``: built for that arch or for an
    older one of the same major version; None when the package ships none."""
    major, minor = divmod(int(arch[3:]), 10)
    for a in reversed(shipped_archs()):
        m, n = divmod(int(a[3:]), 10)
        if m != major or n > minor:
            continue
        store = _shipped_store(a)
        if store is None:
            continue
        name = shipped_key(source, options, a)
        if name in store[1]:
            with _shipped_lock:  # one reader at a time per archive; the zip checks its CRC
                return store[0].read(name)
    return None


NOTICE_AFTER = 1.0  # seconds a compile runs before it says so on stderr


class CompileNotice:
    """Says on stderr what is compiling once it has taken NOTICE_AFTER seconds (a first call
    would otherwise wait in silence), and then how long it took; quick compiles say nothing.
    ``what``: e.g. "the kernel xp_scan_rows_f4 for sm_90" or "12 kernels for sm_90"."""

    def __init__(self, what: str):
        self.what = what
        self._lock = threading.Lock()
        self._said = False

    def _say(self):
        with self._lock:
            self._said = True
            sys.stderr.write(f"xp_cuda: compiling {self.what} (first use on this GPU and "
                             f"NVRTC; cached on disk afterwards)...\n")
            sys.stderr.flush()

    def __enter__(self):
        self._t0 = time.perf_counter()
        self._timer = threading.Timer(NOTICE_AFTER, self._say)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        with self._lock:
            if self._said:
                sys.stderr.write(f"xp_cuda: compiled {self.what} in "
                                 f"{time.perf_counter() - self._t0:.1f} s\n")
                sys.stderr.flush()
        return False


def _obtain(source, kernel_name, options, arch, key, fresh=False, notice=True):
    """(cubin, whether it came from a cache): the verified disk entry unless ``fresh``, else
    the package's shipped cubin, else compiled now (saying so after NOTICE_AFTER seconds
    unless the caller says for a batch) and stored (atomically replacing a bad entry)."""
    path = _entry_path(key)
    if path is not None and not fresh:
        payload = read_entry(path)
        if payload is not None:
            return payload, True
    if not fresh:
        payload = shipped_cubin(source, options, arch)
        if payload is not None:
            return payload, True
    if notice:
        with CompileNotice(f"the kernel {kernel_name} for {arch}"):
            payload = _compile(source, f"{kernel_name}.cu", arch, options, "cubin")
    else:
        payload = _compile(source, f"{kernel_name}.cu", arch, options, "cubin")
    if path is not None:
        _store(path, payload)
    return payload, False


_kernel_types: dict = {}


def _kernel_type(function_type):
    """A subclass of CuPy's Function (called exactly as a RawKernel) adding what our callers
    read from a RawKernel: ``.kernel`` (itself, whose ``.ptr`` is the CUfunction) and
    ``.num_regs``. Built on first use: CuPy is optional."""
    kt = _kernel_types.get(function_type)
    if kt is None:
        class Kernel(function_type):
            @property
            def kernel(self):
                return self

            @property
            def num_regs(self):
                from cupy.cuda import driver
                return driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, self.ptr)

        kt = _kernel_types[function_type] = Kernel
    return kt


def local_bytes(function_ptr: int) -> int:
    """Bytes of local memory a thread of the kernel (a CUfunction) uses: its spills and stack;
    0 where everything lives in registers."""
    from cupy.cuda import driver
    return driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function_ptr)


def _load_module(cupy, payload: bytes):
    mod = cupy.cuda.function.Module()
    mod.load(payload)  # cuModuleLoadData: from memory, never from a path another may write
    return mod


_modules: dict = {}  # (entry key, device) -> loaded module
_loaded: dict = {}   # (source, kernel name, options, device) -> kernel
# Loading is one thread at a time: two threads missing the same key would each load a module,
# and the one replaced in _modules would be unloaded (collected) while kernels and raw
# CUfunction pointers cut from it are still cached (CUDA_ERROR_INVALID_HANDLE, or a crash,
# under Dask's threaded scheduler). Hits never take it.
_load_lock = threading.RLock()


def _out_of_memory(e) -> bool:
    """The driver could not place a module or a kernel for want of device memory: no fault of
    the cubin. Such an error goes up as it is, to the public entry's memory guard (_memory:
    release the caches, try once more, else a MemoryError naming the device's free bytes)."""
    return type(e).__name__ == "CUDADriverError" and getattr(e, "status", None) == 2


def _module(cupy, source, kernel_name, options, dev, arch, key, prepared=None):
    mod = _modules.get((key, dev))
    if mod is not None:
        return mod
    payload, cached = prepared or _obtain(source, kernel_name, options, arch, key)
    try:
        mod = _load_module(cupy, payload)
    except Exception as e:
        if _out_of_memory(e):
            raise
        if not cached:
            raise KernelCompileError(
                f"the CUDA driver rejected the cubin just compiled for {kernel_name} "
                f"({arch}): {e}") from None
        # a verified entry the driver still rejects (another driver wrote it?): once more,
        # from a fresh compile that replaces it
        payload, _ = _obtain(source, kernel_name, options, arch, key, fresh=True)
        try:
            mod = _load_module(cupy, payload)
        except Exception as e2:
            raise KernelCompileError(
                f"the CUDA driver rejected the cubin of {kernel_name} ({arch}) from the cache "
                f"({e}) and again after recompiling it ({e2})") from None
    _modules[(key, dev)] = mod
    return mod


def _load(cupy, source, kernel_name, options, prepared=None):
    dev = cupy.cuda.runtime.getDevice()
    with _load_lock:
        arch = _device_arch(cupy)
        key = _entry_key(source, options, arch)
        mod = _module(cupy, source, kernel_name, options, dev, arch, key, prepared)
        try:
            kern = _kernel_type(cupy.cuda.function.Function)(mod, kernel_name)
        except Exception as e:  # e.g. no such kernel name in the source
            if _out_of_memory(e):  # lazy loading places the kernel's code now
                raise
            raise KernelCompileError(f"CUDA kernel {kernel_name} could not be loaded: "
                                     f"{e}") from None
        _loaded[(source, kernel_name, options, dev)] = kern
        return kern


def load_kernel(source: str, kernel_name: str, options=()):
    """The kernel ``kernel_name`` of ``source`` on the current device, called as a RawKernel:
    ``k(grid, block, args)``; ``k.kernel.ptr`` is its CUfunction.

    Compiles through the same ``_compile`` as CI (one code path: CuPy's RawModule(code=...)
    would append ``-ftz=true``, flushing float32 subnormals, so GPU results would differ from
    the CPU reference). Cubins are cached on disk (verified entries, see ``read_entry``) keyed
    by source, options, arch and NVRTC version; a cubin also avoids the driver rejecting PTX
    newer than itself. One module per (source, options, device); kernels memoised per
    (source, name, options, device).
    """
    import cupy

    options = tuple(options)
    kern = _loaded.get((source, kernel_name, options, cupy.cuda.runtime.getDevice()))
    if kern is not None:
        return kern
    return _load(cupy, source, kernel_name, options)


def kernels_ready(pairs, options=()) -> bool:
    """Whether ``load_kernels(pairs, options)`` on the current device compiles nothing: each
    kernel loaded, its module loaded, its cubin in the disk cache or shipped."""
    import cupy

    options = tuple(options)
    dev = cupy.cuda.runtime.getDevice()
    arch = _device_arch(cupy)
    for src, name in pairs:
        if (src, name, options, dev) in _loaded:
            continue
        key = _entry_key(src, options, arch)
        if (key, dev) in _modules:
            continue
        path = _entry_path(key)
        if path is not None and path.is_file():
            continue
        if shipped_cubin(src, options, arch) is None:
            return False
    return True


_Job = tuple  # (source, kernel name, options, arch, entry key): _obtain's arguments


def _obtain_all(jobs: dict) -> dict:
    """{entry key: (cubin, cached)} of ``jobs`` ({entry key: _obtain's arguments}), several
    compiled in parallel threads (NVRTC releases the GIL: about the time of the slowest),
    none of them saying so on stderr (the caller's CompileNotice speaks for the batch)."""
    def obtain(job: _Job):
        src, name, options, arch, key = job
        return _obtain(src, name, options, arch, key, notice=False)

    cache_dir()  # resolved here, not raced by the workers (its warning is given once)
    if len(jobs) == 1:
        return {k: obtain(job) for k, job in jobs.items()}
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(jobs)) as pool:
        return dict(zip(jobs, pool.map(obtain, jobs.values())))


def compile_cubins(pairs, options, arch: str) -> dict:
    """The cubins of ``pairs`` for ``arch``, compiled and stored in the disk cache without a
    device, for ``load_kernels``'s ``prepared`` (a background thread's work: nothing is said
    on stderr)."""
    options = tuple(options)
    jobs: dict[str, _Job] = {}
    for src, name in pairs:
        key = _entry_key(src, options, arch)
        jobs.setdefault(key, (src, name, options, arch, key))
    return _obtain_all(jobs)


def device_arch() -> str:
    """The architecture load_kernels compiles for on the current device (e.g. "sm_90")."""
    import cupy
    return _device_arch(cupy)


def load_kernels(pairs, options=(), prepared=None):
    """``load_kernel`` for each (source, kernel name) pair, the missing cubins compiled in
    parallel threads first (NVRTC releases the GIL): several variants of one kernel compile
    in about the time of the slowest. Loading stays in the calling thread, on its device.
    ``prepared``: cubins already compiled (compile_cubins), by entry key."""
    import cupy

    options = tuple(options)
    pairs = list(pairs)
    dev = cupy.cuda.runtime.getDevice()
    arch = _device_arch(cupy)
    prepared = dict(prepared or {})
    jobs = {}
    for src, name in pairs:
        if (src, name, options, dev) in _loaded:
            continue
        key = _entry_key(src, options, arch)
        if (key, dev) not in _modules and key not in jobs and key not in prepared:
            jobs[key] = (src, name, options, arch, key)
    if len(jobs) > 1:
        with CompileNotice(f"{len(jobs)} kernels for {arch} in parallel"):
            prepared.update(_obtain_all(jobs))
    out = []
    for src, name in pairs:
        kern = _loaded.get((src, name, options, dev))
        if kern is None:
            kern = _load(cupy, src, name, options, prepared.get(_entry_key(src, options, arch)))
        out.append(kern)
    return out


# ---- launching -------------------------------------------------------------------------------
_thread = threading.local()  # .ready: this thread made its current device's context current
_BUILT: set = set()  # ids of the ThreadParams built (module-level: a handful)


def thread_context() -> None:
    """Make the current device's primary context current on the calling thread, once per
    thread. A thread's first GPU work may be one of our driver launches with no CUDA runtime
    call before it (its output from the pool's cache), and cuLaunchKernel then finds no
    context: CUDA_ERROR_INVALID_CONTEXT (Dask worker threads on the two-GPU H200 machine,
    every run; once on one GPU). cudaSetDevice initializes the primary context and makes it
    current (CUDA 12+). The thread-local launch blocks call this when a thread builds its own."""
    if getattr(_thread, "ready", False):
        return
    _thread.ready = True
    cupy: Any = sys.modules.get("cupy")  # None: nothing of ours has launched, nor will here
    try:
        rt = cupy.cuda.runtime
        rt.setDevice(rt.getDevice())
    except Exception:  # no usable GPU here: no launch follows (the launch's own error rules)
        pass


class ThreadParams(threading.local):
    """A parameter block for ``cuLaunchKernel``, one per thread: ``vals`` holds ``cells``
    cells of ``cell_bytes`` (8, or 16 for complex128 scalars; cell i starts at
    ``vals[i * cell_bytes // 8]``) and ``addr`` is the address of the array of their addresses.

    cuLaunchKernel copies the parameters before it returns, so a thread reuses its block for
    every launch; two threads writing one block at once would launch each other's pointers,
    hence one block per thread (threading.local builds it on a thread's first use).
    """

    def __init__(self, cells: int, cell_bytes: int = 8):
        if id(self) in _BUILT:  # another thread's block: that thread's first launch
            thread_context()
        else:  # built where it is defined (at import: no CUDA call there)
            _BUILT.add(id(self))
        step = cell_bytes // 8
        self.vals = vals = (ctypes.c_uint64 * (cells * step))()
        base = ctypes.addressof(vals)
        self.ptrs = ptrs = (ctypes.c_void_p * cells)(*(base + cell_bytes * i
                                                        for i in range(cells)))
        self.addr = ctypes.addressof(ptrs)
        self.block = (vals, self.addr)  # one attribute read on the hot path


def driver_launch():
    """``cupy.cuda.driver.launchKernel``: (function, grid x, y, z, block x, y, z, shared bytes,
    stream, address of the parameter pointers, extra). Imported on first use: CuPy is optional.
    Hot paths keep the returned function in a local slot rather than calling through here."""
    from cupy.cuda import driver
    return driver.launchKernel


# ---- allocation ------------------------------------------------------------------------------
_allocator: dict = {}  # id(cupy module) -> the allocator, probed once per process


def empty_allocator(cupy):
    """``alloc(shape, numpy_dtype)``: a new C-contiguous ``cupy.ndarray`` from CuPy's pool;
    ``alloc(shape, numpy_dtype, memptr, strides)``: the view over ``memptr`` with those
    strides (flip, diagonal, strided reshapes), as ``cupy.ndarray`` takes the same arguments.

    The launchers' output allocation, a third of a small operation's host time. CuPy 14's
    ``ndarray(...)`` runs a Python-level ``__new__`` and ``__init__`` around the compiled
    ``_init``; calling the extension type's allocator and ``_init`` directly makes the same
    array in 1.0 us instead of 1.6 us, a view ~0.3 us sooner (H200 host). Checked once against
    the public constructor (an allocation, and a view with an offset and a negative stride);
    any CuPy whose internals differ gets ``cupy.ndarray`` itself.
    """
    alloc = _allocator.get(id(cupy))
    if alloc is None:
        alloc = _allocator[id(cupy)] = _probe_allocator(cupy)
    return alloc


def _probe_allocator(cupy):
    nd = cupy.ndarray
    try:
        new = cupy._core.core._ndarray_base.__new__
        probe = new(nd)
        probe._init((2, 3), np.dtype(np.float32))
        ref = nd((2, 3), np.dtype(np.float32))
        same = (type(probe) is nd and probe.shape == ref.shape and probe.strides == ref.strides
                and probe.dtype == ref.dtype and probe.flags.c_contiguous and probe.base is None
                and probe.data.ptr != 0 and probe.data.device_id == ref.data.device_id)
        args = ((2, 3), ref.dtype, ref.data + 12, (-12, 4))  # a view: rows reversed
        view = new(nd)
        view._init(*args)
        vref = nd(*args)
        same = same and (type(view) is nd and view.shape == vref.shape
                         and view.strides == vref.strides and view.dtype == vref.dtype
                         and view.data.ptr == vref.data.ptr and view.base is vref.base
                         and view.flags.c_contiguous == vref.flags.c_contiguous
                         and view.flags.f_contiguous == vref.flags.f_contiguous
                         and view.flags.owndata == vref.flags.owndata)
    except Exception:
        same = False
    if not same:
        return nd

    def alloc(shape, dtype, memptr=None, strides=None):
        out = new(nd)
        out._init(shape, dtype, memptr, strides)
        return out
    return alloc


class _Handles(threading.local):
    def __init__(self):
        self.by = {}  # (library, device index) -> this thread's handle
        self.stream = {}  # (library, device index) -> the stream that handle was last set to


_handles = _Handles()
_HANDLE_LIBRARIES = {"cublas": "cupy_backends.cuda.libs.cublas",
                     "cusolver": "cupy_backends.cuda.libs.cusolver"}


def library_handle(library: str, device: int, stream: int | None = None) -> int:
    """This thread's cuBLAS or cuSOLVER handle (``library``: "cublas", "cusolver") on
    ``device``, which must be current: made on first use, with the CuPy binding's create();
    with ``stream`` (a stream pointer), bound to that stream (setStream only when it changed:
    ~0.5 us of an 8x8 matmul's host time; every binding goes through here, so the record is
    never stale). cuBLAS handles keep the default host pointer mode: nothing here changes it.
    Ours rather than CuPy's (cupy.cuda.device.get_cublas_handle) because CuPy keeps its
    handles where no one can replace them, and a cuBLAS handle whose workspace could not be
    allocated (cuBLAS allocates it with cudaMalloc on the handle's first call, outside CuPy's
    pool: a pool holding the whole GPU makes it fail) kept answering ALLOC_FAILED after the
    pool was emptied; reset_library_handles drops ours, the next call makes a fresh one."""
    key = (library, device)
    h = _handles.by.get(key)
    if h is None:
        h = _handles.by[key] = importlib.import_module(_HANDLE_LIBRARIES[library]).create()
        _handles.stream.pop(key, None)
    if stream is not None and _handles.stream.get(key) != stream:
        sys.modules[_HANDLE_LIBRARIES[library]].setStream(h, stream)  # (imported by create)
        _handles.stream[key] = stream
    return h


def reset_library_handles(device: int) -> None:
    """Destroy this thread's handles on ``device`` (the device current): the next use makes new
    ones. (cublasDestroy and cusolverDnDestroy wait for the device: no queued work is lost.)"""
    for key in [k for k in _handles.by if k[1] == device]:
        h = _handles.by.pop(key)
        _handles.stream.pop(key, None)
        try:
            importlib.import_module(_HANDLE_LIBRARIES[key[0]]).destroy(h)
        except Exception:  # a handle the library no longer knows: dropping it is enough
            pass


# ---- recorded launch programs ----------------------------------------------------------------
# A launcher's work for one geometry (shapes, strides, dtypes, pointer alignments, device) is
# the same sequence of launches each call; only addresses (and a few per-call values, such as a
# count read back) change. Planning and packing that sequence cost 10-60 us of host time per
# call, several times the launches themselves (~3.3 us each), so a geometry is planned once
# with stand-in addresses, its launches recorded into a Program, and every call replays the
# Program with its own addresses patched into per-thread parameter blocks.
#
# Slots: the per-call values of a Program, numbered in this order: the caller's (its arrays'
# addresses, in the order given to ``program``), then one scratch allocation (``scratch``),
# then the late slots a recording asks for (``late``, ``read``: values known only after a
# phase has run, such as a count and the output allocated from it). Stand-in k is
# (k + 1) * SLOT plus the real address modulo 16 (so every alignment decision sees the real
# residue); a recorded parameter within SLOT / 2 of a stand-in is that slot plus a fixed
# offset. Only 8-byte parameters passed as Python ints, and the int64 cells of parameters
# passed as NumPy int64 arrays (argument structs), are searched for stand-ins: NumPy scalars
# (bit patterns, flags) are constants. No size, stride or count a launcher passes reaches
# SLOT / 2 (2**51).
SLOT = 1 << 52
MAX_SLOTS = 1024                    # (k + 1) * SLOT stays below 2**63
SCRATCH_ALIGN = 256                 # each scratch piece starts at a multiple of this
MEMCPY_D2D, MEMCPY_D2H = 3, 2       # cudaMemcpyKind
_KERNEL, _MEMSET, _MEMCPY, _READ = range(4)
_ctx = threading.local()            # .rec: the recording this thread is making, or None


def _stand_in(k: int, residue: int) -> int:
    """The stand-in of slot k (tests replace this to plan with real addresses)."""
    return (k + 1) * SLOT + residue


class _Block(threading.local):
    """One launch's parameters for ``cuLaunchKernel``, one copy per thread: ``pair`` is (the
    recorded bytes as int64 cells, the address of the NULL-terminated array of each
    parameter's address: a stand-in driver finds the end there, the real driver reads as many
    as the kernel has). A replay writes only the slot cells, so the other cells stay as
    recorded; cuLaunchKernel copies the parameters before it returns, so a thread reuses its
    block, and two threads never share one (threading.local builds a thread's on first use)."""

    def __init__(self, template: bytes, offsets: tuple):
        thread_context()  # (recorded on a thread with a context; replayed on any)
        vals, addr, self._keep = _param_block(template, offsets)
        self.pair = (vals, addr)


def _param_block(template: bytes, offsets: tuple):
    """(int64 cells holding ``template``, address of the NULL-terminated parameter address
    array, that array: keep it alive as long as the address is used)."""
    vals = (ctypes.c_int64 * (len(template) // 8)).from_buffer_copy(template)
    base = ctypes.addressof(vals)
    ptrs = (ctypes.c_void_p * (len(offsets) + 1))(*(base + o for o in offsets), None)
    return vals, ctypes.addressof(ptrs), ptrs


class Program:
    """The recorded steps of one geometry, in phases (a phase ends with a ``read``), the
    scratch bytes a call allocates, the number of the caller's slots and ``info``: what the
    recording run returned (what the launcher needs per call: output shapes and the like)."""
    __slots__ = ("phases", "scratch", "nslots", "info")

    def __init__(self, phases, scratch, nslots, info):
        self.phases, self.scratch, self.nslots, self.info = phases, scratch, nslots, info


def _pack(params):
    """(bytes, byte offset of each parameter, cells searched for stand-ins) of a parameter
    list: a Python int is an 8-byte cell (an address, or a per-call value), a NumPy scalar its
    own bytes (a constant), a NumPy int64 array an argument struct; each parameter starts on
    an 8-byte cell."""
    out = bytearray()
    offsets, search = [], []
    for p in params:
        offsets.append(len(out))
        if isinstance(p, int) and not isinstance(p, np.generic):
            search.append(len(out) // 8)
            out += (p & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
        elif isinstance(p, np.ndarray):
            assert p.dtype == np.int64 and p.ndim == 1, p.dtype
            search.extend(range(len(out) // 8, len(out) // 8 + p.size))
            out += p.tobytes()
        else:
            b = np.asarray(p).tobytes()
            out += b + bytes(-len(b) % 8)
    return bytes(out), tuple(offsets), tuple(search)


class _Recording:
    """The steps a launcher asks for while its Program is recorded."""

    def __init__(self, residues):
        self.fakes = [_stand_in(k, r) for k, r in enumerate(residues)]
        self.nslots = len(residues)
        self.fakes.append(_stand_in(self.nslots, 0))  # the scratch allocation
        self.scratch = 0
        self.phases = [[]]

    def slot_of(self, value: int):
        """(slot, offset) of a value near a stand-in, or (-1, value) for a constant."""
        k = (value + SLOT // 2) // SLOT - 1
        if 0 <= k < len(self.fakes):
            return k, value - self.fakes[k]
        return -1, value

    def late(self, residue: int = 0) -> int:
        assert len(self.fakes) < MAX_SLOTS, "too many slots in one program"
        self.fakes.append(_stand_in(len(self.fakes), residue))
        return self.fakes[-1]


def _dim3(v) -> tuple:
    if isinstance(v, int):
        return (v, 1, 1)
    v = tuple(int(a) for a in v)
    return v + (1,) * (3 - len(v))


def _stream(cp) -> int:
    return cp.cuda.get_current_stream().ptr


def launch(cp, kern, grid, block, params, smem: int = 0) -> None:
    """Launch ``kern`` (a loaded kernel: ``.ptr`` is its CUfunction) over ``grid`` blocks of
    ``block`` threads (an int or up to 3 dims) with ``params`` (see ``_pack``) and ``smem``
    bytes of dynamic shared memory, on the current stream; inside a recording the launch is
    noted in the Program instead."""
    template, offsets, search = _pack(params)
    g, b = _dim3(grid), _dim3(block)
    rec = getattr(_ctx, "rec", None)
    if rec is not None:
        cells = []
        for i in search:
            v = int.from_bytes(template[8 * i:8 * i + 8], "little", signed=True)
            k, off = rec.slot_of(v)
            if k >= 0:
                cells.append((i, k, off))
        rec.phases[-1].append((_KERNEL, kern.ptr, *g, *b, int(smem), _Block(template, offsets),
                               tuple(cells)))
        return
    vals, addr, keep = _param_block(template, offsets)
    cp.cuda.driver.launchKernel(kern.ptr, *g, *b, int(smem), _stream(cp), addr, 0)


def memset(cp, ptr: int, value: int, nbytes: int) -> None:
    """cudaMemsetAsync on the current stream (or noted in the recording)."""
    if not nbytes:
        return
    rec = getattr(_ctx, "rec", None)
    if rec is not None:
        rec.phases[-1].append((_MEMSET, *rec.slot_of(ptr), value, nbytes))
        return
    cp.cuda.runtime.memsetAsync(ptr, value, nbytes, _stream(cp))


def memcpy(cp, dst: int, src: int, nbytes: int, kind: int = MEMCPY_D2D) -> None:
    """cudaMemcpyAsync on the current stream (or noted in the recording); nothing for 0 bytes."""
    if not nbytes:
        return
    rec = getattr(_ctx, "rec", None)
    if rec is not None:
        rec.phases[-1].append((_MEMCPY, *rec.slot_of(dst), *rec.slot_of(src), nbytes, kind))
        return
    cp.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, _stream(cp))


def scratch(cp, nbytes: int) -> int:
    """Inside a recording: the address of ``nbytes`` of device memory for the call's
    temporaries, a piece of the Program's one scratch allocation (``replay`` allocates it per
    call; pieces start SCRATCH_ALIGN apart)."""
    rec = _ctx.rec
    off = rec.scratch
    rec.scratch = off + -(-max(nbytes, 1) // SCRATCH_ALIGN) * SCRATCH_ALIGN
    return rec.fakes[rec.nslots] + off


def late(cp, residue: int = 0) -> int:
    """Inside a recording: the stand-in of a slot the caller supplies only to a later phase
    (e.g. the output, allocated once a count is read)."""
    return _ctx.rec.late(residue)


def read(cp, ptr: int) -> int:
    """Inside a recording: ends a phase with a read of the int64 at device address ``ptr``
    (one async copy into pinned host memory and a wait on the stream: the one sync). The value
    becomes a late slot, whose stand-in is returned; ``replay`` returns the value read."""
    rec = _ctx.rec
    rec.phases[-1].append((_READ, *rec.slot_of(ptr)))
    rec.phases.append([])
    return rec.late(0)


_tls = threading.local()


def _pinned_cell(cp) -> int:
    """This thread's 8 bytes of pinned host memory for reads (page-locked: the copy is a true
    async DMA, and pinned memory is usable from every device under unified addressing)."""
    cell = getattr(_tls, "cell", None)
    if cell is None or cell[0] is not cp:
        mem = cp.cuda.alloc_pinned_memory(64)
        cell = _tls.cell = (cp, mem, mem.ptr)
    return cell[2]


def read_now(cp, ptr: int, stream: int) -> int:
    """The int64 at device address ``ptr``, read now: an async copy into pinned memory on
    ``stream``, then a wait on it (outside recordings; ``read`` is the recorded form)."""
    cell = _pinned_cell(cp)
    rt = cp.cuda.runtime
    rt.memcpyAsync(cell, ptr, 8, MEMCPY_D2H, stream)
    rt.streamSynchronize(stream)
    return ctypes.c_int64.from_address(cell).value


from collections import OrderedDict  # noqa: E402  (this section's; the module's head is shared)

PROGRAM_CACHE_SIZE = 512  # launches and Programs kept (least recently used dropped first)
_programs: OrderedDict = OrderedDict()
_programs_lock = threading.Lock()


def lookup_program(key):
    """The kept Program (or fused launch) of ``key`` (marked recently used), or None: the
    kernel layer's one bounded LRU, so no cache grows with user data. The recorded programs
    of copy, scan and sort, the eager reductions and eager.py's one-node programs share it;
    each family's keys start with its own names."""
    prog = _programs.get(key)
    if prog is not None:
        try:
            _programs.move_to_end(key)
        except KeyError:  # dropped by another thread meanwhile: still valid to run
            pass
    return prog


def keep_program(key, prog):
    """Keep ``prog`` under ``key``, dropping the least recently used beyond
    PROGRAM_CACHE_SIZE."""
    with _programs_lock:
        _programs[key] = prog
        while len(_programs) > PROGRAM_CACHE_SIZE:
            _programs.popitem(last=False)
    return prog


def _record(cp, key, residues, run):
    assert getattr(_ctx, "rec", None) is None, "a recording inside a recording"
    rec = _ctx.rec = _Recording(residues)
    try:
        info = run(*rec.fakes[:len(residues)])
    finally:
        _ctx.rec = None
    phases = tuple(tuple(p) for p in rec.phases)
    return keep_program(key, Program(phases, rec.scratch, len(residues), info))


def program(cp, key, residues: tuple, run) -> Program:
    """The Program of ``key`` on the current device (recorded on first sight, then kept in a
    bounded LRU, ``lookup_program``): ``run(*stand-ins of the caller's slots)`` plans
    and asks for the steps (``launch``, ``memset``, ``memcpy``, ``scratch``, ``read``,
    ``late``) and returns the Program's ``info``. ``residues``: each caller slot's address
    modulo 16 (0 for values); part of the key, with the device."""
    key = (key, residues, cp.cuda.runtime.getDevice())
    prog = lookup_program(key)
    if prog is None:
        prog = _record(cp, key, residues, run)
    return prog


def replay(cp, prog: Program, slots: tuple, phase: int = 0):
    """Enqueue phase ``phase`` of ``prog`` on the current stream with the slot values ``slots``
    (phase 0: the caller's; a later phase: the slots phase 0 returned, then the late slots in
    the order they were asked for). Returns (the value read at the phase's end or None, the
    slots with the scratch address, the scratch memory: keep it until the last phase is
    enqueued; the pool reuses it in stream order afterwards)."""
    cuda = cp.cuda
    stream = cuda.get_current_stream().ptr
    mem = None
    if phase == 0:
        if prog.scratch:
            mem = cuda.alloc(prog.scratch)  # from CuPy's pool (stream-ordered reuse)
            slots = slots + (mem.ptr,)
        else:
            slots = slots + (0,)
    launch_kernel = cuda.driver.launchKernel
    value = None
    for st in prog.phases[phase]:
        kind = st[0]
        if kind == _KERNEL:
            vals, addr = st[9].pair
            for i, k, off in st[10]:
                vals[i] = slots[k] + off
            launch_kernel(st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8], stream, addr,
                          0)
        elif kind == _MEMCPY:
            _, dk, do, sk, so, n, how = st
            cuda.runtime.memcpyAsync((slots[dk] if dk >= 0 else 0) + do,
                                     (slots[sk] if sk >= 0 else 0) + so, n, how, stream)
        elif kind == _MEMSET:
            _, dk, do, v, n = st
            cuda.runtime.memsetAsync((slots[dk] if dk >= 0 else 0) + do, v, n, stream)
        else:
            _, sk, so = st
            value = read_now(cp, (slots[sk] if sk >= 0 else 0) + so, stream)
    return value, slots, mem


def replayer(cp, prog: Program):
    """``run(slots)``: enqueue one-phase ``prog`` with the caller's ``slots``, as ``replay``
    does. A program of one kernel and no scratch (a concat, a roll, a search) gets a closure
    that patches the slot cells and launches, without replay's walk over the steps (~1.4 us
    of a small call's host time); any other gets replay itself."""
    steps = prog.phases[0]
    if len(prog.phases) != 1 or prog.scratch or len(steps) != 1 or steps[0][0] != _KERNEL:
        return lambda slots: replay(cp, prog, slots)
    _, fn, gx, gy, gz, bx, by, bz, smem, block, cells = steps[0]
    launch_kernel = cp.cuda.driver.launchKernel
    stream = cp.cuda.get_current_stream

    def run(slots):
        vals, addr = block.pair  # the calling thread's parameter block
        for i, k, off in cells:
            vals[i] = slots[k] + off
        launch_kernel(fn, gx, gy, gz, bx, by, bz, smem, stream().ptr, addr, 0)
    return run


def run_recorded(cp, key, ptrs: tuple, run) -> None:
    """``run(*ptrs)`` through its Program (one phase, the caller's slots all addresses): the
    path of launchers whose calls differ only in addresses (copy.py). Inside a recording (one
    launcher planning through another) ``run`` asks for its steps directly."""
    if getattr(_ctx, "rec", None) is not None:
        run(*ptrs)
        return
    prog = program(cp, key, tuple(p & 15 for p in ptrs), run)
    replay(cp, prog, ptrs)
    note_program(prog, ptrs)


def note_program(prog: Program, slots: tuple) -> None:
    """Tell noting_programs (if one is listening on this thread) that one-phase ``prog`` just
    ran with the caller's ``slots`` (a launcher that replays a program itself calls this)."""
    seen = getattr(_ctx, "seen", None)
    if seen is not None and len(prog.phases) == 1:
        seen.append((prog, slots))


@contextlib.contextmanager
def noting_programs():
    """``with noting_programs() as seen:`` lists (Program, slots) of each one-phase program
    run inside by run_recorded or a launcher's note_program (the calling thread's): what a caller replays to repeat that work (a backend
    keeping a whole call whose device work was one recorded program)."""
    outer = getattr(_ctx, "seen", None)
    _ctx.seen = seen = []
    try:
        yield seen
    finally:
        _ctx.seen = outer
