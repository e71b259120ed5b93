"""The kernel layer: CUDA sources, their generators and launchers (a leaf: nothing here imports
the spec layer; dtypes, operations and layouts arrive as data).

The runtime every family uses (compile with NVRTC, the verified disk cache, load, launch, device
properties, dtype C names) lives in ``_runtime`` and is re-exported here; the families are
``elementwise``, ``fusion``, ``vecdot``, ``creation`` and ``spatial``. Compile-only
(``nvrtc_compile``) works on any machine with CuPy's NVRTC binding and the NVRTC library, no GPU
needed, so CI proves every source compiles. CuPy is imported lazily: the package must import
without it.
"""
from __future__ import annotations

from ._runtime import (BASE_OPTIONS, CACHE_ENV, CTYPES, NP_TYPES, SOURCE_DIR, DeviceInfo,
                       KernelCompileError, ThreadParams, cache_dir, device_info, driver_launch,
                       empty_allocator, grid, include_dirs, kernel_sources, load_kernel,
                       load_kernels, nvrtc_compile, pack_entry, read_entry, resolve_cache_dir,
                       source, source_hash, unpack_entry, write_entry)

__all__ = ["SOURCE_DIR", "BASE_OPTIONS", "CACHE_ENV", "KernelCompileError", "CTYPES", "NP_TYPES",
           "source", "source_hash", "kernel_sources", "include_dirs", "nvrtc_compile",
           "cache_dir", "resolve_cache_dir", "pack_entry", "unpack_entry", "read_entry",
           "write_entry", "load_kernel", "load_kernels", "DeviceInfo", "device_info", "grid",
           "ThreadParams", "driver_launch", "empty_allocator"]
