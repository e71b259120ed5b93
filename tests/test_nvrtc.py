"""Every CUDA source the package ships compiles with NVRTC; runs without a GPU (DESIGN 6)."""
import pytest

from xp_cuda._kernels import (SOURCE_DIR, KernelCompileError, kernel_sources, nvrtc_compile)


from helpers import nvrtc_missing as _nvrtc_unavailable_reason  # noqa: E402  (one skip reason for compile tests)


_reason = _nvrtc_unavailable_reason()
pytestmark = pytest.mark.skipif(_reason is not None, reason=_reason or "")

_SOURCES = kernel_sources()


def test_discovery_finds_every_cu_file():
    # Guards against a broken glob making the parametrised test below pass vacuously.
    on_disk = sorted(p.name for p in SOURCE_DIR.iterdir() if p.suffix == ".cu" and p.is_file())
    assert sorted(_SOURCES) == on_disk


@pytest.mark.parametrize("name", sorted(_SOURCES) or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no .cu sources yet"))])
def test_source_compiles(name):
    ptx = nvrtc_compile(_SOURCES[name], name=name)
    assert ".entry" in ptx


_GOOD = r"""
#include <cupy/complex.cuh>
#include <cupy/math_constants.h>
extern "C" __global__ void xp_probe(const complex<float>* x, double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = isfinite(x[i].real()) ? (double)abs(x[i]) : CUDART_INF;
}
"""


def test_valid_kernel_compiles_to_ptx():
    ptx = nvrtc_compile(_GOOD, name="probe.cu")
    assert ".entry xp_probe(" in ptx


def test_syntax_error_raises_kernel_compile_error_with_log():
    bad = 'extern "C" __global__ void broken(int* x) { x[0] = ; }'
    with pytest.raises(KernelCompileError) as info:
        nvrtc_compile(bad, name="broken.cu")
    msg = str(info.value)
    assert "broken.cu" in msg and "error" in msg and "expected an expression" in msg
    assert isinstance(info.value, RuntimeError)


def test_no_flush_to_zero():
    # float32 subnormals must survive, as on the CPU reference (CuPy's RawModule adds -ftz=true).
    ptx = nvrtc_compile('extern "C" __global__ void m(float* x) { x[0] = x[0] * x[1]; }')
    assert "mul.f32" in ptx and ".ftz" not in ptx


def _gpu_usable():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.cuda
@pytest.mark.skipif(not _gpu_usable(), reason="needs a usable CUDA GPU")
def test_load_kernel_runs_and_keeps_subnormals():
    import cupy as cp
    import numpy as np
    from xp_cuda._kernels import load_kernel

    src = _GOOD + r"""
extern "C" __global__ void xp_mul(const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] * y[i];
}"""
    k = load_kernel(src, "xp_mul")
    assert load_kernel(src, "xp_mul") is k  # memoised
    rng = np.random.default_rng(0)
    x = rng.random(1000, dtype=np.float32)
    y = rng.random(1000, dtype=np.float32)
    x[:10] = np.float32(1e-30)
    y[:10] = np.float32(1e-10)  # products are float32 subnormals
    dx, dy = cp.asarray(x), cp.asarray(y)
    dz = cp.empty_like(dx)
    k((4,), (256,), (dx, dy, dz, np.int32(1000)))
    np.testing.assert_array_equal(cp.asnumpy(dz), x * y)
    assert (cp.asnumpy(dz)[:10] != 0).all()
    with pytest.raises(KernelCompileError):
        load_kernel('extern "C" __global__ void b(int* x) { x[0] = ; }', "b")
