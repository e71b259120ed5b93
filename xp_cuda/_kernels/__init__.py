"""The one place CUDA C sources are found, compiled and loaded.

Compile-only (``nvrtc_compile``) works on any machine with CuPy's NVRTC binding and the NVRTC
library, no GPU needed, so CI proves every source compiles. ``load_kernel`` is the runtime path
on a GPU. CuPy is imported lazily: the package must import without it.
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

__all__ = ["SOURCE_DIR", "KernelCompileError", "kernel_sources", "include_dirs",
           "nvrtc_compile", "load_kernel", "load_kernels"]

SOURCE_DIR = Path(__file__).resolve().parent

# Options every compile uses; the runtime path and the CI path must agree (one code path).
BASE_OPTIONS = ("-std=c++17",)


class KernelCompileError(RuntimeError):
    """A CUDA source failed to compile; the message carries the source name and NVRTC log."""


def kernel_sources() -> dict[str, str]:
    """Every ``*.cu`` file in this folder, as {file name: source text}, sorted by name."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(SOURCE_DIR.glob("*.cu"))}


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


def _cache_dir() -> Path:
    d = Path(os.environ.get("XP_CUDA_KERNEL_CACHE",
                            Path.home() / ".cache" / "xp_cuda" / "kernels"))
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only home: fall back to a per-user temp folder
        import tempfile
        d = Path(tempfile.gettempdir()) / f"xp_cuda_kernels_{os.getuid()}"
        d.mkdir(parents=True, exist_ok=True)
    return d


def _device_arch(cupy) -> str:
    """sm_XX for the current device, clamped to what this NVRTC can target."""
    from cupy_backends.cuda.libs import nvrtc

    cc = int(cupy.cuda.Device().compute_capability)
    supported = [a for a in nvrtc.getSupportedArchs() if a <= cc]
    return f"sm_{max(supported) if supported else cc}"


_loaded: dict[tuple, object] = {}


def load_kernel(source: str, kernel_name: str, options=()):
    """Compile once per device architecture and return a ``cupy.RawKernel``.

    Compiles through the same ``_compile`` as CI (one code path: CuPy's RawModule(code=...)
    would append ``-ftz=true``, flushing float32 subnormals, so GPU results would differ from
    the CPU reference). Cubins are cached on disk keyed by source, options, arch and NVRTC
    version; a cubin also avoids the driver rejecting PTX newer than itself. Memoised per
    (source hash, kernel name, options, current device).
    """
    import cupy

    options = tuple(options)
    key = (hashlib.sha256(source.encode()).hexdigest(), kernel_name, options,
           cupy.cuda.runtime.getDevice())
    kern = _loaded.get(key)
    if kern is not None:
        return kern
    arch = _device_arch(cupy)
    path = _cubin_path(key[0], options, arch)
    if not path.exists():
        _write_cubin(source, kernel_name, arch, options, path)
    try:
        kern = cupy.RawModule(path=str(path)).get_function(kernel_name)
    except Exception as e:  # e.g. no such kernel name in the source
        raise KernelCompileError(f"CUDA kernel {kernel_name} could not be loaded: {e}") from None
    _loaded[key] = kern
    return kern


def load_kernels(pairs, options=()):
    """``load_kernel`` for each (source, kernel name) pair, the missing cubins compiled in
    parallel threads first (NVRTC releases the GIL): several variants of one kernel compile
    in about the time of the slowest. Loading stays in the calling thread, on its device."""
    import cupy

    options = tuple(options)
    arch = _device_arch(cupy)
    missing = {}
    for source, name in pairs:
        path = _cubin_path(hashlib.sha256(source.encode()).hexdigest(), options, arch)
        if not path.exists():
            missing[path] = (source, name, arch, options, path)
    if len(missing) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(missing)) as pool:
            list(pool.map(lambda job: _write_cubin(*job), missing.values()))
    return [load_kernel(source, name, options) for source, name in pairs]


def _cubin_path(src_hash, options, arch) -> Path:
    """The disk cache's file for a source: keyed by source, options, arch, NVRTC version."""
    from cupy_backends.cuda.libs import nvrtc

    file_key = hashlib.sha256(repr((src_hash, options, arch, nvrtc.getVersion(),
                                    BASE_OPTIONS)).encode()).hexdigest()
    return _cache_dir() / f"{file_key}.cubin"


def _write_cubin(source, kernel_name, arch, options, path) -> None:
    cubin = _compile(source, f"{kernel_name}.cu", arch, options, "cubin")
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(cubin)
    os.replace(tmp, path)  # atomic: concurrent processes never read a partial file


_allocator: dict = {}  # id(cupy module) -> the allocator, probed once per process


def empty_allocator(cupy):
    """``alloc(shape, numpy_dtype)``: a new C-contiguous ``cupy.ndarray`` from CuPy's pool.

    The launchers' output allocation, a third of a small operation's host time. CuPy 14's
    ``ndarray(shape, dtype)`` runs a Python-level ``__new__`` and ``__init__`` around the
    compiled ``_init``; calling the extension type's allocator and ``_init`` directly makes the
    same array in 1.0 us instead of 1.6 us (H200 host). Checked once against the public
    constructor; any CuPy whose internals differ gets ``cupy.ndarray`` itself.
    """
    alloc = _allocator.get(id(cupy))
    if alloc is None:
        alloc = _allocator[id(cupy)] = _probe_allocator(cupy)
    return alloc


def _probe_allocator(cupy):
    import numpy as np

    nd = cupy.ndarray
    try:
        new = cupy._core.core._ndarray_base.__new__
        probe = new(nd)
        probe._init((2, 3), np.dtype(np.float32))
        ref = nd((2, 3), np.dtype(np.float32))
        same = (type(probe) is nd and probe.shape == ref.shape and probe.strides == ref.strides
                and probe.dtype == ref.dtype and probe.flags.c_contiguous and probe.base is None
                and probe.data.ptr != 0 and probe.data.device_id == ref.data.device_id)
    except Exception:
        same = False
    if not same:
        return nd

    def alloc(shape, dtype):
        out = new(nd)
        out._init(shape, dtype)
        return out
    return alloc
