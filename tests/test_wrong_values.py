"""Issue #18, wrong values: each fixed value has its regression test here.

1. clip with a NaN bound gives NaN (the spec's special cases), eagerly and fused, on cpu and
   cuda; on cuda the eager clip is the fused printer's kernel, so both agree to the bit.
2. hypot is our own (xp_hypot in elementwise.cuh): no overflow for large finite values,
   subnormals kept, hypot(inf, NaN) = inf; checked against NumPy on a host build of the same
   helper (runs here) and on the GPU.
3. No kernel flushes subnormals or contracts operations into a different rounding: the NVRTC
   options of every family and the PTX they produce are checked here; subnormal values go
   through astype, where, clip, add/multiply, sum, cumulative_sum and linspace on the GPU.
4. Complex pow computes what the cpu reference (NumPy) computes: a host build of xp_cpow on a
   grid of special values (runs here) and the same grid on the GPU.
5. dtype= of a narrower kind in sum, prod, cumulative_sum, cumulative_prod and linalg.trace
   casts x first (the spec's text); only complex into a real dtype is refused.
6. Subnormals through paths that ran CuPy's -ftz kernels on cuda: __setitem__ of a narrower
   dtype, linalg.outer/cross/pinv/matrix_rank/matrix_norm, tensordot, the fft norm scaling
   and fftfreq's rounding (on every device).
7. det and slogdet from our LU and kernels on cuda (a subnormal float32 determinant kept),
   KDTree's float32 data widened by our astype, complex64 unique_* by integer order keys.
8. Real subnormals keep their order in sort, argsort, unique_*, searchsorted, max/min,
   argmax/argmin, comparisons and maximum (no flushing comparison anywhere).

Equality rules: floats compare bit for bit, except that any NaN equals any NaN (sign and
payload aside). Complex results compare component by component with that rule: a component
that is NaN matches only a NaN component, so (inf + nan j) and (nan + nan j) differ.
"""
import functools
import re
import shutil
import subprocess
import types

import numpy as np
import pytest

import xp_cuda as xp
from xp_cuda._devices import CPU, Device, cuda_device_count

from helpers import nvrtc_missing, random_numpy, to_numpy

CUDA0 = Device("cuda", 0)
gpu = pytest.mark.skipif(cuda_device_count() == 0, reason="no usable CUDA GPU here")
needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))
F32, F64 = np.float32, np.float64


def _same(got, want, what=""):
    """Bit-for-bit equality of real or complex arrays, any NaN equal to any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    parts = ((got.real, want.real), (got.imag, want.imag)) if got.dtype.kind == "c" else \
        ((got, want),)
    ok = np.ones(got.shape, bool)
    for g, w in parts:
        if g.dtype.kind == "f":
            ok &= ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
        else:
            ok &= g == w
    bad = np.argwhere(~ok)
    assert bad.size == 0, (f"{what}: {len(bad)} of {got.size} differ; first at {bad[:5].tolist()}: "
                           f"got {got[tuple(bad[0])]!r}, want {want[tuple(bad[0])]!r}")


# ---- 1. clip with NaN bounds --------------------------------------------------------------

def _clip_ref(x, lo, hi):
    """The spec's clip in NumPy: each bound applied in order (lo, then hi: min > max gives
    max, the choice of xp_cuda where the spec leaves it unspecified), a NaN bound gives NaN,
    NaN in x stays NaN; comparisons in the promoted dtype, values stored in x's."""
    out = x.copy()
    for b, below in ((lo, True), (hi, False)):
        if b is None:
            continue
        b = np.asarray(b)
        cond = (out < b) if below else (out > b)
        if b.dtype.kind == "f":
            cond = cond | np.isnan(b)
        out = np.where(cond, b.astype(x.dtype), out)
    return out.astype(x.dtype)


def _special_floats(rng, shape, dt):
    fi = np.finfo(dt)
    x = random_numpy(rng, shape, xp.float32 if dt is F32 else xp.float64)
    flat = x.reshape(-1)
    flat[::7] = np.nan
    flat[1::11] = -0.0
    flat[2::13] = np.inf
    flat[3::17] = fi.smallest_subnormal * 5
    flat[4::19] = -fi.smallest_subnormal
    return x


@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_clip_nan_scalar_bound_gives_nan(device, rng, dt):
    a = _special_floats(rng, (5, 7), dt)
    x = xp.asarray(a, device=device)
    nan = float("nan")
    for lo, hi in ((nan, None), (None, nan), (nan, 1.0), (-1.0, nan), (nan, nan)):
        out = to_numpy(xp.clip(x, lo, hi))
        assert out.dtype == a.dtype and np.isnan(out).all(), (lo, hi, out)
    # ordinary bounds: NaN in x stays NaN; -0.0 and subnormals compare as they are
    lo, hi = -float(np.finfo(dt).smallest_subnormal) * 2, 3.0
    _same(to_numpy(xp.clip(x, lo, hi)), _clip_ref(a, dt(lo), dt(hi)), "clip(x, lo, hi)")
    _same(to_numpy(xp.clip(x, 3.0, -2.0)), _clip_ref(a, dt(3.0), dt(-2.0)), "min > max")


@pytest.mark.parametrize("dt,bdt", [(F32, F32), (F64, F64), (F32, F64)],
                         ids=["f32-f32", "f64-f64", "f32-f64bounds"])
def test_clip_nan_array_bounds(device, rng, dt, bdt):
    a = _special_floats(rng, (5, 7), dt)
    lo = (rng.standard_normal(7) - 2).astype(bdt)
    hi = (rng.standard_normal((5, 1)) + 2).astype(bdt)
    lo[[1, 4]] = np.nan
    hi[3, 0] = np.nan
    lo[5] = np.finfo(dt).smallest_subnormal * 3  # a subnormal bound
    x = xp.asarray(a, device=device)
    xl, xh = xp.asarray(lo, device=device), xp.asarray(hi, device=device)
    out = to_numpy(xp.clip(x, xl, xh))
    assert np.isnan(out[:, [1, 4]]).all() and np.isnan(out[3]).all()
    _same(out, _clip_ref(a, lo, hi), "clip(x, lo array, hi array)")
    _same(to_numpy(xp.clip(x, xl)), _clip_ref(a, lo, None), "clip(x, lo array)")
    _same(to_numpy(xp.clip(x, None, xh)), _clip_ref(a, None, hi), "clip(x, None, hi array)")
    _same(to_numpy(xp.clip(x, xl, 1.5)), _clip_ref(a, lo, dt(1.5)), "array lo, scalar hi")


def test_clip_integers_unchanged(device, rng):
    for d in (xp.int8, xp.uint16, xp.int64):
        a = random_numpy(rng, (33,), d)
        x = xp.asarray(a, device=device)
        _same(to_numpy(xp.clip(x, -5, 7)), _clip_ref(a, d._np.type(max(-5, 0) if d.kind ==
                                                                  "uint" else -5),
                                                     d._np.type(7)), f"clip {d}")
        b = random_numpy(rng, (33,), d)
        _same(to_numpy(xp.clip(x, xp.asarray(b, device=device))), _clip_ref(a, b, None),
              f"clip {d} array lo")


@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_fused_clip_equals_eager_clip(device, rng, dt):
    """fuse's clip (a kernel on cuda, the eager replay on cpu) gives the eager clip's bits:
    array bounds, constant bounds, a scalar argument as a bound, NaN in each."""
    from xp_cuda.fusion import fuse
    a = _special_floats(rng, (6, 37), dt)
    lo = (rng.standard_normal(37) - 1).astype(dt)
    lo[[0, 9]] = np.nan
    hi = (rng.standard_normal((6, 37)) + 1).astype(dt)
    hi[2, 3] = np.nan
    hi[4, 5] = -3.0  # min > max at some places
    x, xl, xh = (xp.asarray(v, device=device) for v in (a, lo, hi))
    nan = float("nan")
    cases = [
        ("arrays", lambda p, q, r: xp.clip(p, q, r), (x, xl, xh)),
        ("const NaN lo", lambda p: xp.clip(p, nan, 1.0), (x,)),
        ("const NaN hi", lambda p: xp.clip(p * 1, None, nan), (x,)),
        ("const bounds", lambda p: xp.clip(p, -0.5, 0.5), (x,)),
        ("param NaN", lambda p, s: xp.clip(p, s, 2.0), (x, nan)),
        ("param", lambda p, s: xp.clip(p, s, 2.0), (x, -0.25)),
        ("array lo, param hi", lambda p, q, s: xp.clip(p, q, s), (x, xl, nan)),
    ]
    for what, f, args in cases:
        eager = to_numpy(f(*args))
        fused = to_numpy(fuse(f)(*args))
        _same(fused, eager, f"fused vs eager clip ({what})")
    _same(to_numpy(xp.clip(x, xl, xh)), _clip_ref(a, lo, hi), "eager clip vs reference")


@needs_nvrtc
def test_clip_launch_kernels_compile_and_select_nan_bounds(monkeypatch):
    """Every kernel the cuda clip can request (each real dtype, each kind of bound) compiles;
    floating ones select a NaN bound, integer ones compare only."""
    from xp_cuda._kernels import eager, fusion as kfusion, nvrtc_compile
    from xp_cuda._kernels.fusion_ir import Graph
    progs = []

    def capture(cp, key, arrays, build, device, shape, uses=()):
        ins = eager._inputs(arrays)
        progs.append(kfusion.Program(Graph(ins, uses), build(ins), list(arrays), 132,
                                     name=f"clip{len(progs)}"))
    monkeypatch.setattr(eager, "launch_of", capture)
    names = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64")
    kinds = (("scalar", "scalar"), ("array", None), (None, "array"), ("scalar", "array"))
    for d in names:
        for sides in kinds + ((None, None),) * (d == "float32"):
            x = np.empty((9, 33), d)[:, ::2]  # strided: the general path
            arrays = [x] + [np.empty((17,), d) for s in sides if s == "array"]
            compare = tuple(None if s is None else d for s in sides)
            eager.clip_launch(None, arrays, sides, compare, d, (9, 17), 0)
            src = progs[-1].kernel
            if d.startswith("float") and "scalar" in sides:
                assert "s0 != s0" in src, src
            if not d.startswith("float"):
                assert "!=" not in src.split("xp_isel", 1)[-1].split(";")[0], src
    for s in range(0, len(progs), 24):
        chunk = progs[s:s + 24]
        ptx = nvrtc_compile(kfusion.translation_unit(chunk), name=f"clip_{s}.cu",
                            options=kfusion.OPTIONS)
        for p in chunk:
            assert f".entry {p.name}(" in ptx


# ---- host builds of elementwise.cuh helpers (hypot, complex abs, complex pow) --------------

_HOST_HARNESS = r"""
#define __host__
#define __device__
#define __forceinline__ inline
#include <math.h>
#include <cmath>
#include <cstdio>
#include <cstring>
using std::isnan; using std::isinf; using std::isfinite;
@CUH@
// stdin: "<op> <d|f> a b c d" (hex floats); stdout: two hex floats per line
int main() {
  char op[16], kind[4];
  double a, b, c, d;
  while (scanf("%15s %3s %la %la %la %la", op, kind, &a, &b, &c, &d) == 6) {
    double r = 0, i = 0;
    bool dbl = kind[0] == 'd';
    if (!strcmp(op, "hypot")) {
      r = dbl ? xp_hypot(a, c) : (double)xp_hypot((float)a, (float)c);
    } else if (!strcmp(op, "abs")) {
      r = dbl ? xp_cabs(complex<double>(a, b)) : (double)xp_cabs(complex<float>((float)a, (float)b));
    } else if (!strcmp(op, "sqrt")) {
      if (dbl) { complex<double> z = xp_csqrt(complex<double>(a, b)); r = z.real(); i = z.imag(); }
      else { complex<float> z = xp_csqrt(complex<float>((float)a, (float)b)); r = z.real(); i = z.imag(); }
    } else if (dbl) {
      complex<double> z = xp_cpow(complex<double>(a, b), complex<double>(c, d));
      r = z.real(); i = z.imag();
    } else {
      complex<float> z = xp_cpow(complex<float>((float)a, (float)b),
                                 complex<float>((float)c, (float)d));
      r = z.real(); i = z.imag();
    }
    printf("%la %la\n", r, i);
  }
  return 0;
}
"""


def _cxx():
    return shutil.which("g++") or shutil.which("clang++")


@pytest.fixture(scope="module")
def host_helpers(tmp_path_factory):
    """elementwise.cuh's helpers built for the host (they are __host__ __device__), run as
    a filter: run(lines) -> [(re, im)]. The arithmetic is IEEE operations and explicit fma,
    so hypot's results are the GPU's; pow's generic path calls the host's log/exp where the
    GPU calls libdevice's (the special values do not depend on that)."""
    if _cxx() is None:
        pytest.skip("no host C++ compiler (g++ or clang++)")
    try:
        from xp_cuda._kernels._runtime import include_dirs, source
        incs = [f"-I{d}" for d in include_dirs()]
    except Exception as e:  # no CuPy headers
        pytest.skip(f"CuPy's headers are not installed ({e!r})")
    d = tmp_path_factory.mktemp("host_helpers")
    src = d / "h.cpp"
    cuh = "#define XP_COMPLEX\n" + source("elementwise.cuh")  # with its complex helpers
    src.write_text(_HOST_HARNESS.replace("@CUH@", cuh))
    exe = d / "h"
    r = subprocess.run([_cxx(), "-std=c++17", "-O1", *incs, str(src), "-o", str(exe)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]

    def run(lines):
        out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True,
                             text=True, timeout=120).stdout.split("\n")
        return [tuple(float.fromhex(t) for t in line.split()) for line in out if line]
    return run


def _hypot_check(got, x, y, want, what):
    """got (ours) against NumPy (hypot is the C library's: glibc's double hypot is within an
    ulp, not always correctly rounded; complex abs has its own loops, seen 2 ulps off): the
    same bits, or finite values with ours no farther from the exact sqrt(x^2 + y^2) (in
    60-digit decimals) than NumPy's."""
    from decimal import Decimal, localcontext
    got, want = np.asarray(got), np.asarray(want)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    diff = np.nonzero(~same)[0]
    far = []
    with localcontext() as ctx:
        ctx.prec = 60
        for i in diff:
            g, w = got[i], want[i]
            if not (np.isfinite(g) and np.isfinite(w)):
                far.append(i)  # special values must be the same
                continue
            exact = (Decimal(float(x[i])) ** 2 + Decimal(float(y[i])) ** 2).sqrt()
            if abs(Decimal(float(g)) - exact) > abs(Decimal(float(w)) - exact):
                far.append(i)
    assert not far, (f"{what}: {len(far)} of {got.size} worse than NumPy, e.g. (x, y, got, "
                     f"numpy): {[(x[i], y[i], got[i], want[i]) for i in far[:5]]}")


def _hypot_inputs(rng, dt):
    """Random magnitudes over the whole exponent range (subnormals included), signs, and the
    special values, as (x, y) arrays of dt."""
    fi = np.finfo(dt)
    lo, hi = (-320, 300) if dt is F64 else (-45, 38)
    n = 20000
    x = rng.standard_normal(n) * 10.0 ** rng.integers(lo, hi, n)
    y = np.where(rng.random(n) < 0.5, x * 10.0 ** rng.integers(-5, 5, n),
                 rng.standard_normal(n) * 10.0 ** rng.integers(lo, hi, n))
    with np.errstate(over="ignore"):
        x, y = x.astype(dt), y.astype(dt)
    big = 1e300 if dt is F64 else 1e38
    sx = [big, fi.max, fi.max, 3, 0.0, -0.0, fi.tiny, fi.smallest_subnormal, np.inf, -np.inf,
          np.nan, np.nan, np.inf, 0.0]
    sy = [big, fi.max, 1.0, 4, 0.0, 5.0, fi.tiny, fi.smallest_subnormal * 3, np.nan, 1.0,
          np.inf, -np.inf, np.inf, np.nan]
    x = np.concatenate([x, np.array(sx, dt)])
    y = np.concatenate([y, np.array(sy, dt)])
    return x, y


@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_host_hypot_is_numpys(host_helpers, rng, dt):
    """xp_hypot equals NumPy's hypot (the C library's, correctly rounded) to the bit on random
    values over the whole range, large ones (hypot(1e300, 1e300) is finite), subnormals,
    and inf beating NaN."""
    x, y = _hypot_inputs(rng, dt)
    k = "d" if dt is F64 else "f"
    got = np.array([r[0] for r in host_helpers(
        [f"hypot {k} {float(a).hex()} 0x0p+0 {float(b).hex()} 0x0p+0" for a, b in zip(x, y)])],
        dtype=dt)
    with np.errstate(all="ignore"):
        want = np.hypot(x, y)
    _hypot_check(got, x, y, want, f"host xp_hypot {dt.__name__}")
    big = 1e300 if dt is F64 else 1e38
    assert np.isfinite(got[x == big]).all()


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_host_complex_abs_is_numpys(host_helpers, rng, dt):
    f = F32 if dt is np.complex64 else F64
    x, y = _hypot_inputs(rng, f)
    k = "d" if f is F64 else "f"
    got = np.array([r[0] for r in host_helpers(
        [f"abs {k} {float(a).hex()} {float(b).hex()} 0x0p+0 0x0p+0" for a, b in zip(x, y)])],
        dtype=f)
    z = np.empty(x.shape, dt)
    z.real, z.imag = x, y
    with np.errstate(all="ignore"):
        _hypot_check(got, x, y, np.abs(z), f"host xp_cabs {dt.__name__}")


# the special-value grid of complex pow: parts of the base, real and imaginary parts of the
# exponent (integers below and at NumPy's 100 limit, non-integers, zeros of both signs)
_BASE_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.0, 3.0, np.inf, -np.inf, np.nan]
_EXP_RE = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -2.0, 5.0, -7.0, 0.5, -0.5, 2.5, 99.0, 100.0,
           -99.0, np.inf, -np.inf, np.nan]
_EXP_IM = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan]


def _pow_grid(dt):
    xs = [complex(a, b) for a in _BASE_PARTS for b in _BASE_PARTS]
    ys = [complex(a, b) for a in _EXP_RE for b in _EXP_IM]
    x = np.array([a for a in xs for _ in ys], dt)
    y = np.array([b for _ in xs for b in ys], dt)
    return x, y


def _pow_agree(got, want, x, y, rtol, what, exact=True):
    """Component by component: NaN-ness equal, infinities equal (with sign), exact on the
    paths whose arithmetic is the same operations (zero exponent, zero base, real integer
    exponents |n| < 100: signed zeros included; ``exact=False`` where a C compiler may have
    contracted NumPy's products on random data); elsewhere finite components within rtol of
    |want| (the library log/exp differ in the last bits)."""
    exact_path = ((y == 0) | (x == 0) |
                  ((y.imag == 0) & (np.abs(y.real) < 100) & (y.real == np.trunc(y.real))))
    if not exact:
        exact_path[:] = False
    bad = []
    for i in range(got.size):
        g, w = got[i], want[i]
        scale = abs(w) if np.isfinite(w) else 1.0
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            if np.isnan(gp) or np.isnan(wp):
                ok = np.isnan(gp) and np.isnan(wp)
            elif np.isinf(gp) or np.isinf(wp):
                ok = gp == wp
            elif exact_path[i]:
                ok = gp == wp and np.signbit(gp) == np.signbit(wp)
            else:  # beside an infinite component: relative to this component itself
                s = scale if np.isfinite(w) else abs(wp)
                ok = abs(gp - wp) <= rtol * max(s, np.finfo(got.real.dtype).tiny)
            if not ok:
                bad.append((x[i], y[i], g, w))
                break
    assert not bad, f"{what}: {len(bad)} of {got.size} differ, e.g. (x, y, got, numpy): {bad[:8]}"


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_host_complex_pow_matches_the_cpu_reference(host_helpers, dt):
    x, y = _pow_grid(dt)
    k = "d" if dt is np.complex128 else "f"
    lines = [f"pow {k} {float(a.real).hex()} {float(a.imag).hex()} {float(b.real).hex()} "
             f"{float(b.imag).hex()}" for a, b in zip(x, y)]
    got = np.array([complex(*r) for r in host_helpers(lines)], dt)
    with np.errstate(all="ignore"):
        want = to_numpy(xp.pow(xp.asarray(x, device=CPU), xp.asarray(y, device=CPU)))
    # complex64's generic path rounds exp/log in float: one overflow boundary case of the grid
    # ((-2.5+0.5j) ** (100+1j), near FLT_MAX) may round to inf on one side only
    if dt is np.complex64:
        keep = ~((x == np.complex64(-2.5 + 0.5j)) & (y == np.complex64(100 + 1j)))
        got, want, x, y = got[keep], want[keep], x[keep], y[keep]
    _pow_agree(got, want, x, y, 1e-5 if dt is np.complex64 else 1e-12,
               f"host xp_cpow {dt.__name__}")


@pytest.mark.parametrize("dt", [xp.complex64, xp.complex128])
def test_complex_pow_defined_cases(device, rng, dt):
    """What the spec's rule exp(x2 * log(x1)) defines exactly, on each device: x ** (0+0j) is
    1 (more careful than the rule for x = 0, which the spec allows); x ** 1 is x; 0 ** y is 0
    for Re(y) > 0; and on finite values pow agrees with exp(y * log(x))."""
    n = 64
    a = random_numpy(rng, (n,), dt)
    x = xp.asarray(a, device=device)
    one = to_numpy(xp.pow(x, xp.asarray(np.zeros(n, dt._np), device=device)))
    _same(one, np.ones(n, dt._np), "x ** 0")
    _same(to_numpy(xp.pow(x, xp.asarray(np.ones(n, dt._np), device=device))), a, "x ** 1")
    b = random_numpy(rng, (n,), dt)
    b.real = np.abs(b.real) + 0.5
    zero = to_numpy(xp.pow(xp.zeros(n, dtype=dt, device=device), xp.asarray(b, device=device)))
    _same(zero, np.zeros(n, dt._np), "0 ** y, Re(y) > 0")
    y = (random_numpy(rng, (n,), dt) / 10).astype(dt._np)
    xy = xp.asarray(y, device=device)
    got = to_numpy(xp.pow(x, xy))
    ref = to_numpy(xp.exp(xp.multiply(xy, xp.log(x))))
    tol = 1e-4 if dt == xp.complex64 else 1e-11
    np.testing.assert_allclose(got, ref, rtol=tol, atol=0)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_host_complex_sqrt_of_tiny_parts(host_helpers, rng, dt):
    """Complex sqrt of values whose parts are subnormal or tiny (the GPU fuzz sweep found
    complex64 sqrt(-2.609e-42 - 2.609e-42j) 3e-5 off) and of ordinary ones: each part within
    2 ulps of NumPy's (the C library's csqrt)."""
    ft = np.float32 if dt == np.complex64 else np.float64
    fi = np.finfo(ft)
    mags = np.concatenate([fi.smallest_subnormal * rng.integers(1, 2 ** 20, 300),
                           fi.tiny * rng.random(200), 2.0 ** rng.uniform(-80, 0, 200),
                           rng.standard_normal(100) * 10 ** rng.uniform(-3, 3, 100)])
    re = (mags * rng.choice([-1, 1], mags.size)).astype(ft)
    im = (rng.permutation(mags) * rng.choice([-1, 1], mags.size)).astype(ft)
    re[:4], im[:4] = ft(-2.609e-42) if ft is np.float32 else -2.609e-310, [0, -0.0, 1e-45, -1e-45]
    z = np.empty(re.shape, dt)
    z.real, z.imag = re, im
    kind = "f" if dt == np.complex64 else "d"
    got = host_helpers([f"sqrt {kind} {float(a).hex()} {float(b).hex()} 0x0p+0 0x0p+0"
                        for a, b in zip(re, im)])
    want = np.sqrt(z)
    for part, g in (("real", np.array([v[0] for v in got], ft)),
                    ("imag", np.array([v[1] for v in got], ft))):
        w = getattr(want, part)
        ulps = np.abs(g - w) / np.spacing(np.maximum(np.abs(w), fi.smallest_subnormal))
        bad = np.nonzero(ulps > 2)[0]
        assert bad.size == 0, (part, [(z[i], g[i], w[i]) for i in bad[:5]])


# ---- 2. and 4. on the GPU --------------------------------------------------------------------

@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_cuda_hypot_is_numpys(rng, dt):
    """hypot on cuda:0 against NumPy: large finite values stay finite (the issue's
    hypot(1e300, 1e300)), subnormals, inf beats NaN; eager contiguous, broadcast and fused."""
    x, y = _hypot_inputs(rng, dt)
    with np.errstate(all="ignore"):
        want = np.hypot(x, y)
    gx, gy = xp.asarray(x, device=CUDA0), xp.asarray(y, device=CUDA0)
    got = to_numpy(xp.hypot(gx, gy))
    _hypot_check(got, x, y, want, f"cuda hypot {dt.__name__}")
    # every path runs the same helper: the same bits
    _same(to_numpy(xp.hypot(gx[::-3], gy[::-3])), got[::-3], "strided hypot")
    col = gy[:97]
    bro = to_numpy(xp.hypot(gx[:97], xp.reshape(col, (97, 1))))
    _same(bro[np.arange(97), np.arange(97)], got[:97], "broadcast hypot (its diagonal)")
    from xp_cuda.fusion import fuse
    _same(to_numpy(fuse(lambda p, q: xp.hypot(p, q))(gx, gy)), got, "fused hypot")
    big = 1e300 if dt is F64 else 1e38
    v = to_numpy(xp.hypot(xp.asarray([big], dtype=xp.float64 if dt is F64 else xp.float32,
                                     device=CUDA0),
                          xp.asarray([big], dtype=xp.float64 if dt is F64 else xp.float32,
                                     device=CUDA0)))
    assert np.isfinite(v).all(), v


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_cuda_complex_abs_is_numpys(rng, dt):
    f = F32 if dt is np.complex64 else F64
    x, y = _hypot_inputs(rng, f)
    z = np.empty(x.shape, dt)
    z.real, z.imag = x, y
    with np.errstate(all="ignore"):
        _hypot_check(to_numpy(xp.abs(xp.asarray(z, device=CUDA0))), x, y, np.abs(z),
                     f"cuda abs {dt.__name__}")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_cuda_complex_pow_grid_matches_cpu(dt):
    """The special-value grid of both operands on cuda:0 against the cpu reference (rules in
    _pow_agree), eager and fused."""
    x, y = _pow_grid(dt)
    with np.errstate(all="ignore"):
        want = to_numpy(xp.pow(xp.asarray(x, device=CPU), xp.asarray(y, device=CPU)))
    gx, gy = xp.asarray(x, device=CUDA0), xp.asarray(y, device=CUDA0)
    got = to_numpy(xp.pow(gx, gy))
    from xp_cuda.fusion import fuse
    fused = to_numpy(fuse(lambda p, q: xp.pow(p, q))(gx, gy))
    if dt is np.complex64:  # see test_host_complex_pow_matches_the_cpu_reference
        keep = ~((x == np.complex64(-2.5 + 0.5j)) & (y == np.complex64(100 + 1j)))
        got, fused, want, x, y = got[keep], fused[keep], want[keep], x[keep], y[keep]
    _pow_agree(got, want, x, y, 1e-5 if dt is np.complex64 else 1e-12,
               f"cuda pow {dt.__name__}")
    _same(fused, got, "fused pow vs eager pow")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_cuda_complex_pow_random_matches_cpu(rng, dt):
    """Random finite operands, integer exponents (the repeated-product path) and general
    ones, a scalar exponent too."""
    n = 4099
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    b = np.where(rng.random(n) < 0.5, rng.integers(-20, 20, n),
                 rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    want = to_numpy(xp.pow(xp.asarray(a, device=CPU), xp.asarray(b, device=CPU)))
    got = to_numpy(xp.pow(xp.asarray(a, device=CUDA0), xp.asarray(b, device=CUDA0)))
    _pow_agree(got, want, a, b, 1e-4 if dt is np.complex64 else 1e-11, "random pow",
               exact=False)


# ---- 3. subnormals and contraction: options and PTX of every family (CPU) -------------------

_FORBIDDEN = ("-ftz=true", "--ftz=true", "-use_fast_math", "--use_fast_math",
              "-prec-div=false", "--prec-div=false", "-prec-sqrt=false", "--prec-sqrt=false")


def _family_options(monkeypatch):
    """family -> the set of option tuples its launchers compile with (each kernel name a
    launcher of creation, scan, sort and copy can request, loaded through a recorder)."""
    from xp_cuda._kernels import copy, creation, elementwise, fusion, scan, sort, spatial, vecdot
    fams = {"elementwise": {tuple(elementwise.OPTIONS)},
            "fusion (fused, eager where/astype/clip, reductions)": {tuple(fusion.OPTIONS)}}
    for name, mod in (("creation", creation), ("scan", scan), ("sort", sort), ("copy", copy)):
        seen = set()
        monkeypatch.setattr(mod, "load_kernel",
                            lambda src, kname, options=(), seen=seen: seen.add(tuple(options)))
        for k in mod.kernel_names():
            mod._kernel(k)
        fams[name] = seen
    fams["vecdot"] = {tuple(vecdot.compile_options(a, b, r)) for a, b, r in (
        ("float32", "float32", "float32"), ("float64", "float64", "float64"),
        ("complex64", "complex64", "complex64"), ("int64", "int64", "int64"))}
    fams["spatial (exact)"] = {tuple(spatial.compile_options(m, p, per)) for m in (2, 3, 8)
                               for p in (0, 1, 2) for per in (False, True)}
    fams["spatial (brute force)"] = {tuple(spatial.compile_options(3, 2, False, 8, fmad=True))}
    return fams


def test_no_family_compiles_with_flushing_or_fast_math(monkeypatch):
    """No NVRTC option of any family flushes subnormals or relaxes IEEE rounding (NVRTC's
    defaults: -ftz=false, -prec-div=true, -prec-sqrt=true). Contraction (-fmad) is off where
    elementwise arithmetic must round as NumPy's: elementwise, fused (and so reductions and
    the eager where/astype/clip) and exact spatial kernels. Where -fmad is left at its
    default, the sources never leave a contractible product feeding a sum: creation's
    arange/linspace and scan's complex products use the _rn intrinsics (checked in the PTX
    below), sort and copy move bits, vecdot accumulates with explicit fma (a dot product has
    no correctly rounded result to change), and the spatial brute force is approximate by
    design."""
    from xp_cuda._kernels._runtime import BASE_OPTIONS
    for opt in BASE_OPTIONS:
        assert opt not in _FORBIDDEN, opt
    fams = _family_options(monkeypatch)
    for fam, optsets in fams.items():
        assert optsets, fam
        for opts in optsets:
            for opt in opts:
                assert opt not in _FORBIDDEN, (fam, opts)
    for fam in ("elementwise", "fusion (fused, eager where/astype/clip, reductions)",
                "spatial (exact)"):
        for opts in fams[fam]:
            assert any(o in ("--fmad=false", "-fmad=false") for o in opts), (fam, opts)
    for fam in ("creation", "scan", "sort", "copy"):  # NVRTC's defaults, checked in PTX below
        assert fams[fam] == {()}, (fam, fams[fam])


def _entry_body(ptx, name):
    i = ptx.index(f".entry {name}(")
    j = ptx.find(".entry", i + 6)
    return ptx[i:j if j > 0 else None]


# an instruction that flushes: .ftz outside the library's approximation seeds (rcp/rsqrt/ex2
# .approx.ftz inside libdevice's division, sqrt and exp, which handle subnormals around them)
_FLUSH = re.compile(r"^\s*(?!\w+\.approx\.)[a-z]\w*(?:\.\w+)*\.ftz\b", re.M)
# float products and sums that ptxas may still contract into an fma (no explicit rounding
# mode: the _rn intrinsics print add.rn, mul.rn), and fmas
_MUL = re.compile(r"^\s*mul\.f(?:32|64)\b", re.M)
_ADD = re.compile(r"^\s*(?:add|sub)\.f(?:32|64)\b", re.M)
_FMA = re.compile(r"^\s*fma\.", re.M)


@needs_nvrtc
def test_ptx_of_every_family_keeps_subnormals_and_roundings():
    """The PTX NVRTC makes with each family's options: no flushing instruction anywhere; and
    arange, linspace and the scans hold no contractible float arithmetic or FMA, so no
    option or later ptxas pass can change their roundings (NumPy's: i*step and + start
    rounded separately; sums and products rounded per combine)."""
    from xp_cuda._kernels import (copy, creation, elementwise as E, fusion as kfusion,
                                  nvrtc_compile, scan, sort)
    from xp_cuda._kernels import reduction as R
    from xp_cuda._kernels.fusion_ir import DName, Graph, Input, Node, Op
    units = [(creation, n) for n in ("xp_arange_float32", "xp_arange_float64",
                                     "xp_linspace_float32", "xp_linspace_float64",
                                     "xp_linspace_complex64")]
    units += [(scan, f"xp_{f}_lb_{t}") for f in ("scan", "scanprod")
              for t in ("f32_f32", "f64_f64", "c64_c64", "c128_c128", "f32_f64")]
    units += [(sort, sorted(sort.kernel_names())[0]), (copy, sorted(copy.kernel_names())[0])]
    for mod, name in units:
        ptx = nvrtc_compile(mod.units()[name], name=f"{name}.cu")
        assert not _FLUSH.search(ptx), (name, _FLUSH.search(ptx).group(0))
        if mod is creation or mod is scan:
            body = _entry_body(ptx, name)
            muls = _MUL.findall(body)
            adds = _ADD.findall(body)
            assert not (muls and adds), (name, muls[:2], adds[:2])  # nothing to contract
            if not name.startswith("xp_linspace"):  # linspace: its division's own fmas
                assert not _FMA.search(body), name
    # elementwise and fused programs (where/astype between float32 and float64, a float32
    # sum, add and multiply of float32): no flushing instruction, the conversions round
    srcs = [E.layout_unit(f, ("float32", "float32"), "float32", "float32", "cc")
            for f in ("add", "multiply")]
    for src in srcs:
        assert not _FLUSH.search(nvrtc_compile(src, name="ew.cu", options=E.OPTIONS))
    fake = types.SimpleNamespace
    shape = (1000,)

    def lay(isz):
        return fake(itemsize=isz, shape=shape, strides=(isz,), nbytes=0,
                    flags=fake(c_contiguous=True))
    c = Node(Op.INPUT, (), DName("bool"), shape, Input(0))
    a = Node(Op.INPUT, (), DName("float64"), shape, Input(1))
    b = Node(Op.INPUT, (), DName("float32"), shape, Input(2))
    progs = [kfusion.Program(Graph([c, a, b]), [Node(Op.WHERE, (c, a, b), DName("float64"),
                                                     shape)], [lay(1), lay(8), lay(4)], 132,
                             name="w64"),
             kfusion.Program(Graph([a]), [Node(Op.ASTYPE, (a,), DName("float32"), shape)],
                             [lay(8)], 132, name="to32"),
             kfusion.Program(Graph([b]), [Node(Op.ASTYPE, (b,), DName("float64"), shape)],
                             [lay(4)], 132, name="to64"),
             R.program("sum", "float32", "float32", lay(4), (0,), False, 132, name="s32")]
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="fz.cu", options=kfusion.OPTIONS)
    assert not _FLUSH.search(ptx), _FLUSH.search(ptx).group(0)
    assert "cvt.rn.f32.f64" in _entry_body(ptx, "to32")
    assert "cvt.f64.f32" in _entry_body(ptx, "to64")


# ---- 3. subnormals on the GPU ---------------------------------------------------------------

def _subnormals(rng, dt, n=4099):
    """n subnormals k * smallest_subnormal, 0 < |k| < 2**10: any sum of them stays below the
    smallest normal, so every partial sum is exact whatever the order."""
    fi = np.finfo(dt)
    k = rng.integers(1, 2 ** 10, n)
    v = (k * fi.smallest_subnormal).astype(dt)
    return np.where(rng.random(n) < 0.5, -v, v).astype(dt)


@pytest.mark.cuda
@gpu
def test_cuda_astype_and_where_keep_subnormals(rng):
    """float64 values in float32's subnormal range round as NumPy rounds them; float32
    subnormals widen exactly; where(mask, float64, float32) keeps them (the issue's 2.9e-39);
    asarray(..., dtype=) converts on the GPU without flushing."""
    s32 = _subnormals(rng, F32)
    wide = s32.astype(F64) * (1 + rng.random(s32.size) * 1e-3)  # between float32 subnormals
    wide[:3] = [2.9e-39, -2.9e-39, 1e-45]
    g32, g64 = xp.asarray(s32, device=CUDA0), xp.asarray(wide, device=CUDA0)
    _same(to_numpy(xp.astype(g64, xp.float32)), wide.astype(F32), "astype float64 -> float32")
    _same(to_numpy(xp.astype(g32, xp.float64)), s32.astype(F64), "astype float32 -> float64")
    _same(to_numpy(xp.astype(g32[::-2], xp.float64)), s32[::-2].astype(F64), "strided astype")
    mask = rng.random(s32.size) < 0.5
    gm = xp.asarray(mask, device=CUDA0)
    _same(to_numpy(xp.where(gm, g64, g32)), np.where(mask, wide, s32.astype(F64)),
          "where(mask, float64, float32)")
    _same(to_numpy(xp.where(gm, g32, g64)), np.where(mask, s32.astype(F64), wide),
          "where(mask, float32, float64)")
    one = xp.where(xp.asarray([False], device=CUDA0), xp.asarray([1.0], device=CUDA0),
                   xp.asarray(np.array([2.9e-39], F32), device=CUDA0))
    assert to_numpy(one)[0] == np.float64(np.float32(2.9e-39)) != 0
    _same(to_numpy(xp.asarray(wide, dtype=xp.float32, device=CUDA0)), wide.astype(F32),
          "asarray(float64 host data, dtype=float32, device=cuda:0)")
    _same(to_numpy(xp.asarray(g64, dtype=xp.float32)), wide.astype(F32),
          "asarray(cuda float64, dtype=float32)")
    _same(to_numpy(xp.asarray(g32, dtype=xp.float64)), s32.astype(F64),
          "asarray(cuda float32, dtype=float64)")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_cuda_arithmetic_keeps_subnormals(rng, dt):
    """add, multiply (results in the subnormal range and out of it), clip (subnormal bounds
    and values), a sum and a cumulative sum of subnormals (exact in any order, see
    _subnormals), fused add: bit for bit as NumPy."""
    s = _subnormals(rng, dt)
    t = _subnormals(rng, dt)
    gs, gt = xp.asarray(s, device=CUDA0), xp.asarray(t, device=CUDA0)
    _same(to_numpy(xp.add(gs, gt)), s + t, "add")
    _same(to_numpy(gs + gt[::-1]), s + t[::-1], "add reversed")
    half = np.full(s.shape, 0.5, dt)
    _same(to_numpy(xp.multiply(gs, xp.asarray(half, device=CUDA0))), s * half, "multiply")
    big = (rng.random(s.size) * 2 ** 20).astype(dt)
    _same(to_numpy(xp.multiply(gs, xp.asarray(big, device=CUDA0))), s * big,
          "multiply into normals")
    lo = dt(np.finfo(dt).smallest_subnormal * 1000)
    _same(to_numpy(xp.clip(gs, float(lo), None)), _clip_ref(s, lo, None), "clip subnormal lo")
    _same(to_numpy(xp.clip(gs, gt)), _clip_ref(s, t, None), "clip by subnormal array")
    _same(to_numpy(xp.sum(gs)), np.asarray(np.sum(s, dtype=dt)), "sum of subnormals")
    _same(to_numpy(xp.sum(xp.reshape(gs[:4096], (64, 64)), axis=0)),
          np.sum(s[:4096].reshape(64, 64), axis=0), "sum over axis 0")
    _same(to_numpy(xp.cumulative_sum(gs)), np.cumsum(s), "cumulative_sum")
    from xp_cuda.fusion import fuse
    _same(to_numpy(fuse(lambda p, q: p + q)(gs, gt)), s + t, "fused add")


@pytest.mark.cuda
@gpu
@pytest.mark.parametrize("dt", [xp.float32, xp.float64])
def test_cuda_linspace_and_arange_in_the_subnormal_range(dt):
    """linspace and arange whose elements are subnormal: the cpu reference's values (NumPy
    2.x's i*step + start, each operation rounded) to the bit."""
    tiny = float(np.finfo(dt._np).smallest_subnormal)
    for start, stop, num in ((0.0, 1000 * tiny, 1001), (-3 * tiny, 7777 * tiny, 97),
                             (1e-39 if dt == xp.float32 else 1e-310, 0.0, 50)):
        want = to_numpy(xp.linspace(start, stop, num, dtype=dt, device=CPU))
        got = to_numpy(xp.linspace(start, stop, num, dtype=dt, device=CUDA0))
        _same(got, want, f"linspace({start}, {stop}, {num})")
    want = to_numpy(xp.arange(0.0, 300 * tiny, 3 * tiny, dtype=dt, device=CPU))
    _same(to_numpy(xp.arange(0.0, 300 * tiny, 3 * tiny, dtype=dt, device=CUDA0)), want,
          "arange")


# ---- 5. dtype= of a narrower kind -----------------------------------------------------------

# (x dtype, dtype=): narrower widths and narrower kinds; x's values suit each (ints in range)
_NARROW = [("float64", "float32"), ("float64", "int32"), ("float32", "int64"),
           ("float64", "uint8"), ("int64", "int8"), ("int32", "float32"), ("uint16", "int8"),
           ("complex128", "complex64")]


def _narrow_data(rng, x_name, d_name, shape):
    if x_name.startswith("float") and d_name.startswith(("int", "uint")):
        a = rng.random(shape) * 20 + 0.25  # casts truncate; sums stay in range
    elif x_name.startswith("float"):
        a = rng.standard_normal(shape) * 3
    elif x_name.startswith("complex"):
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        a = rng.integers(0, 300, shape)
    return a.astype(x_name)


def _check_narrow(got, want, d_name, what):
    if d_name.startswith(("int", "uint")):
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        rtol = 1e-5 if d_name in ("float32", "complex64") else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("pair", _NARROW, ids=lambda p: f"{p[0]}-{p[1]}")
def test_sum_prod_cumulative_trace_cast_first(device, rng, pair):
    """The spec: "the input array should be cast to the specified data type before computing
    the sum". The result equals NumPy's x.astype(dtype) reduced in dtype (wrapping for ints)."""
    x_name, d_name = pair
    a = _narrow_data(rng, x_name, d_name, (6, 5))
    x = xp.asarray(a, device=device)
    dt = getattr(xp, d_name)
    c = a.astype(d_name)
    with np.errstate(all="ignore"):
        for name, ref in (("sum", lambda v, ax: np.sum(v, axis=ax, dtype=d_name)),
                          ("prod", lambda v, ax: np.prod(v[:3], axis=ax, dtype=d_name))):
            for ax in (None, 0, 1):
                src = x if name == "sum" else x[:3, ...]
                out = getattr(xp, name)(src, axis=ax, dtype=dt)
                assert out.dtype == dt
                _check_narrow(to_numpy(out), ref(c, ax), d_name, f"{name} axis={ax} {pair}")
        out = xp.cumulative_sum(x, axis=1, dtype=dt)
        assert out.dtype == dt
        _check_narrow(to_numpy(out), np.cumsum(c, axis=1, dtype=d_name), d_name,
                      f"cumulative_sum {pair}")
        out = xp.cumulative_sum(x[:, 0], dtype=dt, include_initial=True)
        _check_narrow(to_numpy(out), np.concatenate([[0], np.cumsum(c[:, 0], dtype=d_name)]
                                                    ).astype(d_name), d_name,
                      f"cumulative_sum include_initial {pair}")
        out = xp.linalg.trace(x[:5, ...], dtype=dt)
        assert out.dtype == dt
        _check_narrow(to_numpy(out), np.trace(c[:5], dtype=d_name), d_name, f"trace {pair}")


@pytest.mark.parametrize("pair", _NARROW, ids=lambda p: f"{p[0]}-{p[1]}")
def test_cumulative_prod_cast_first(v2024, device, rng, pair):
    x_name, d_name = pair
    a = _narrow_data(rng, x_name, d_name, (4, 3))
    if x_name.startswith("float") and not d_name.startswith("float"):
        a = (a / 10).astype(x_name)  # small products
    x = xp.asarray(a, device=device)
    c = a.astype(d_name)
    with np.errstate(all="ignore"):
        out = xp.cumulative_prod(x, axis=0, dtype=getattr(xp, d_name))
        _check_narrow(to_numpy(out), np.cumprod(c, axis=0, dtype=d_name), d_name,
                      f"cumulative_prod {pair}")


def test_narrower_dtype_matches_array_api_strict(rng):
    """array_api_strict (a CPU reference of the standard) computes the same values."""
    strict = pytest.importorskip("array_api_strict")
    for x_name, d_name in _NARROW:
        a = _narrow_data(rng, x_name, d_name, (7,))
        sx = strict.asarray(a)
        x = xp.asarray(a, device=CPU)
        for name in ("sum", "cumulative_sum"):
            want = np.asarray(getattr(strict, name)(sx, dtype=getattr(strict, d_name)))
            got = to_numpy(getattr(xp, name)(x, dtype=getattr(xp, d_name)))
            _check_narrow(got, want, d_name, f"{name} {x_name} -> {d_name} vs array_api_strict")


def test_complex_into_real_dtype_is_refused(device, revision):
    """astype must not cast complex to real (the spec), so neither does an implicit cast of
    dtype=; the message names the fix. The same under each revision."""
    for version in ("2023.12", "2024.12", "2025.12"):
        xp.set_api_version(version)
        z = xp.asarray(np.array([[1 + 2j, 3j], [1, 2]]), device=device)
        calls = [lambda: xp.sum(z, dtype=xp.float64), lambda: xp.prod(z, dtype=xp.float32),
                 lambda: xp.cumulative_sum(z, axis=0, dtype=xp.int64),
                 lambda: xp.linalg.trace(z, dtype=xp.float64)]
        if version != "2023.12":
            calls.append(lambda: xp.cumulative_prod(z, axis=0, dtype=xp.float64))
        for call in calls:
            with pytest.raises(TypeError, match=r"complex.*xp\.real"):
                call()


def test_narrowing_reduction_casts_in_a_prologue():
    """The reduction generator's graph: a narrowing dtype= puts an ASTYPE node before the
    REDUCE (each element rounded to the result dtype before a float32 product's float64
    accumulator sees it); safe casts (the defaults) keep the two-node graph and its kernel."""
    from xp_cuda._kernels import reduction as R
    from xp_cuda._kernels.fusion_ir import Op
    for kind, i, o in (("prod", "float64", "float32"), ("sum", "float64", "int32"),
                       ("sum", "int64", "int8"), ("prod", "int64", "float32")):
        _, out = R.graph(kind, i, o, (10, 4), (0,), False)
        assert out.op is Op.REDUCE and out.args[0].op is Op.ASTYPE, (kind, i, o)
        assert out.args[0].dtype.name == o
    for kind, i, o in (("sum", "int8", "int64"), ("prod", "float32", "float32"),
                       ("sum", "float32", "float64"), ("sum", "bool", "int64")):
        _, out = R.graph(kind, i, o, (10, 4), (0,), False)
        assert out.args[0].op is Op.INPUT, (kind, i, o)


@needs_nvrtc
def test_narrowing_reduction_programs_compile():
    from xp_cuda._kernels import fusion as kfusion, nvrtc_compile
    from xp_cuda._kernels import reduction as R
    fake = types.SimpleNamespace
    progs = []
    for kind, i, o in (("prod", "float64", "float32"), ("sum", "float64", "int32"),
                       ("sum", "float32", "uint8"), ("prod", "int64", "float32"),
                       ("sum", "complex128", "complex64")):
        isz = np.dtype(i).itemsize
        for shape, axes in (((1000,), (0,)), ((64, 33), (0,)), ((64, 33), (1,))):
            st = (isz,) if len(shape) == 1 else (shape[1] * isz, isz)
            x = fake(itemsize=isz, shape=shape, strides=st, nbytes=0,
                     flags=fake(c_contiguous=True))
            progs.append(R.program(kind, i, o, x, axes, False, 132, name=f"n{len(progs)}"))
    ptx = nvrtc_compile(kfusion.translation_unit(progs), name="narrow.cu",
                        options=kfusion.OPTIONS)
    for p in progs:
        assert f".entry {p.name}(" in ptx


@functools.lru_cache(maxsize=None)
def _routes():
    from xp_cuda._kernels import scan
    return {p: scan.cumsum_route(*p) for p in scan.CUMSUM_PAIRS}


def test_scan_routes_of_narrower_kinds_precast():
    """cumulative_sum's float -> int pairs exist and cast first (through the fused
    generator's astype on cuda)."""
    r = _routes()
    for i in ("float32", "float64"):
        for o in ("int8", "int32", "int64", "uint8", "uint64"):
            assert r[(i, o)].precast == o, (i, o, r[(i, o)])
    assert not any(i.startswith("complex") and not o.startswith("complex") for i, o in r)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_complex_mean_divides_each_part(device, v2024, dt):
    """mean(0 + inf j) is 0 + inf j on every device: the sum's parts are divided by the count
    one by one (a complex division by n + 0j, NumPy's, made the real part NaN on cpu while
    cuda gave 0, found by the fuzzer's cuda-against-cpu run)."""
    vals = np.array([0 + 1j * np.inf, np.inf + 2j, 3 - 4j, -np.inf + 0j], dtype=dt)
    for v in vals:
        got = xp.mean(xp.asarray(v, device=device))
        assert got.dtype == xp.asarray(v).dtype
        out = np.asarray(got.to_device(xp.__array_namespace_info__().devices()[0])._data)
        np.testing.assert_array_equal(out, v)
    x = xp.asarray(np.array([[1 + 1j * np.inf, 3 + 1j]], dtype=dt), device=device)
    got = np.asarray(xp.mean(x, axis=1).to_device(xp.__array_namespace_info__().devices()[0])
                     ._data)
    np.testing.assert_array_equal(got, np.array([2 + 1j * np.inf], dtype=dt))


# ---- 6. subnormals through __setitem__, linalg, tensordot and fft (every device) -------------
# CuPy's kernels are built with -ftz: a float32 subnormal operand or result of any of its
# ufuncs, reductions and casts (float32 -> float64 included) becomes 0. These paths used them
# on cuda; each now computes its float values with our kernels (or a library: cuBLAS, cuSOLVER,
# cuFFT). Where a library is involved, the inputs are chosen so that it sees no subnormal and
# the subnormals arise in our part (a conversion, a scaling, a cutoff); the library's own
# arithmetic on subnormals is unspecified (fuzz_unspecified.py). Exact comparisons (_same)
# wherever the math is exact; the rest state their tolerance.

C64, C128 = np.complex64, np.complex128


def _subnormal_values(rng, dt, n):
    """n nonzero subnormals of dt (complex: both parts), the issue's values first."""
    real = np.dtype(dt).kind == "c"
    part = F32 if dt in (F32, C64) else F64
    v = _subnormals(rng, part, n)
    if part == F32:
        v[:3] = [3e-39, 1e-45, -2.9e-39]
    if real:
        v = (v + 1j * _subnormals(rng, part, n)).astype(dt)
    return v.astype(dt)


def _equal_values(got, want, what):
    """dtype, shape and values equal (a zero's sign aside: a library's sums may differ there)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("vdt,tdt", [(F32, F64), (F32, C64), (F32, C128), (C64, C128)],
                         ids=["float32-into-float64", "float32-into-complex64",
                              "float32-into-complex128", "complex64-into-complex128"])
def test_setitem_of_a_narrower_dtype_keeps_subnormals(device, rng, vdt, tdt):
    """x[key] = v with v of a narrower dtype: converted by our astype, then moved (CuPy's
    casting assignment flushed float32 subnormals): rows, broadcast rows, strided and reversed
    slices, a 0-d value, a boolean mask with a 0-d value and with a row, the in-place +=."""
    n = 37
    s = _subnormal_values(rng, vdt, n)
    base = random_numpy(rng, (6, n), xp.asarray(np.zeros(1, tdt)).dtype)
    x, want = xp.asarray(base, device=device), base.copy()
    v = xp.asarray(s, device=device)
    x[1, :] = v
    want[1, :] = s
    x[2:4, ...] = v  # one row broadcast to two
    want[2:4, ...] = s
    x[4, ::-3] = v[:13]
    want[4, ::-3] = s[:13]
    x[0, 5] = v[7]  # a 0-d value
    want[0, 5] = s[7]
    _same(to_numpy(x), want, f"slices of {np.dtype(tdt)} set from {np.dtype(vdt)}")
    mask = rng.random((6, n)) < 0.3
    x[xp.asarray(mask, device=device)] = v[9]  # a 0-d value into the masked elements
    want[mask] = s[9]
    _same(to_numpy(x), want, "a boolean mask and a 0-d value")
    rows = np.array([True, False, True, False, False, True])
    x[xp.asarray(rows, device=device)] = v  # a row into the masked rows
    want[rows] = s
    _same(to_numpy(x), want, "a boolean mask of rows and a row")
    want_y = base[5, :] + s.astype(tdt)
    y = xp.asarray(base[5, :], device=device, copy=True)
    y += v  # our add, then a move of the same dtype
    _same(to_numpy(y), want_y, "in-place += of a narrower dtype")


@pytest.mark.parametrize("adt,bdt", [(F32, F32), (F32, F64), (C64, C64), (C64, C128),
                                     (F32, C64), (F64, F64)],
                         ids=lambda d: np.dtype(d).name)
def test_outer_keeps_subnormals(device, rng, adt, bdt):
    """linalg.outer of subnormals (complex: both parts) and values of magnitude >= 1 (complex:
    zero imaginary parts beside complex subnormals, so every product rounds once, whatever
    the formula): bit for bit as NumPy, in the promoted dtype. tensordot(axes=0) is the same
    product."""
    a = _subnormal_values(rng, adt, 11)
    b = (rng.integers(1, 9, 7) * np.where(rng.random(7) < 0.5, -1, 1)
         * (1 + rng.integers(0, 8, 7) / 8)).astype(bdt)
    if np.dtype(bdt).kind == "c" and np.dtype(adt).kind == "c":
        b = b.real.astype(bdt)
    elif np.dtype(bdt).kind == "c":
        b = (b + 1j * b[::-1].real).astype(bdt)
    ga, gb = xp.asarray(a, device=device), xp.asarray(b, device=device)
    _same(to_numpy(xp.linalg.outer(ga, gb)), np.outer(a, b), "outer")
    _same(to_numpy(xp.tensordot(ga, gb, axes=0)), np.multiply.outer(a, b),
          "tensordot(axes=0)")
    _same(to_numpy(xp.tensordot(ga[3], gb, axes=0)), a[3] * b, "tensordot(0-d, axes=0)")


@pytest.mark.parametrize("adt,bdt", [(F32, F32), (F32, F64), (C64, C64), (F64, F64)],
                         ids=lambda d: np.dtype(d).name)
def test_cross_keeps_subnormals(device, rng, adt, bdt):
    """linalg.cross of subnormal vectors k * smallest_subnormal (|k| < 2**10) and small
    integers: every product and difference is exact (a multiple of the smallest subnormal
    below 2**24 of them), so bit for bit as NumPy's cross (separate products and
    differences, as ours); along the last axis with broadcasting, and along axis -2."""
    a = _subnormal_values(rng, adt, 3 * 9).reshape(9, 3)
    b = rng.integers(-3, 4, (9, 3)).astype(bdt)
    if np.dtype(bdt).kind == "c":
        b = (b + 1j * rng.integers(-3, 4, (9, 3))).astype(bdt)
    ga, gb = xp.asarray(a, device=device), xp.asarray(b, device=device)
    _same(to_numpy(xp.linalg.cross(ga, gb)), np.cross(a, b), "cross")
    _same(to_numpy(xp.linalg.cross(ga, gb[4, :])), np.cross(a, b[4]), "cross, broadcast")
    at, bt = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    _same(to_numpy(xp.linalg.cross(xp.asarray(at, device=device),
                                   xp.asarray(bt, device=device), axis=-2)),
          np.cross(at, bt, axis=0), "cross along axis -2")


def test_pinv_and_matrix_rank_keep_a_subnormal_rtol(device):
    """A float32 rtol holding a subnormal (2**-130) against float64 matrices: rtol converted
    by our astype (CuPy's float32 -> float64 cast made it 0, keeping a singular value 1e-40
    below the cutoff 2**-130 * 1). The SVD sees normal float64 matrices only."""
    x = np.stack([np.diag([1.0, 1e-40, 0.5]), np.diag([1.0, 1e-30, 0.5])])
    rtol = np.array([2.0 ** -130, 2.0 ** -130], F32)  # the second: 1e-30 is kept
    assert 0 < rtol[0] < np.finfo(F32).smallest_normal
    gx, gr = xp.asarray(x, device=device), xp.asarray(rtol, device=device)
    rank = to_numpy(xp.linalg.matrix_rank(gx, rtol=gr))
    _same(rank, np.array([2, 3], np.int64), "matrix_rank with a subnormal float32 rtol")
    p = to_numpy(xp.linalg.pinv(gx, rtol=gr))
    want = np.stack([np.diag([1.0, 0.0, 2.0]), np.diag([1.0, 1e30, 2.0])])
    assert p.dtype == F64 and p.shape == (2, 3, 3), (p.dtype, p.shape)
    # the SVD of a diagonal matrix is exact on both devices in practice; 1e-12 allows for an
    # iteration that is not
    np.testing.assert_allclose(p, want, rtol=1e-12, atol=0,
                               err_msg="pinv with a subnormal float32 rtol")
    # a 0-d rtol broadcast over the stack
    p0 = to_numpy(xp.linalg.pinv(gx, rtol=gr[0]))
    np.testing.assert_allclose(p0, want, rtol=1e-12, atol=0, err_msg="pinv, 0-d rtol")


def _norm_ref(a, ord):
    """matrix_norm of the exact values: in float64 / complex128, rounded once."""
    wide = a.astype(C128 if a.dtype.kind == "c" else F64)
    out = np.linalg.norm(wide, ord=ord, axis=(-2, -1))
    return out.astype(np.finfo(a.dtype).dtype)


@pytest.mark.parametrize("dt", [F32, F64, C64, C128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("ord", [1, -1, float("inf"), -float("inf")],
                         ids=["1", "-1", "inf", "-inf"])
def test_matrix_norm_sums_of_subnormals(device, rng, dt, ord):
    """The 1 and inf norms (and -1, -inf) of stacks of subnormal matrices: sums of
    |x| = k * smallest_subnormal (complex parts 3k and 4k: |x| = 5k exactly), exact in any
    order; their largest or smallest: exact. Bit for bit as NumPy in float64, rounded once;
    with keepdims."""
    part = F32 if dt in (F32, C64) else F64
    tiny = np.finfo(part).smallest_subnormal
    k = rng.integers(1, 40, (3, 5, 4)) * np.where(rng.random((3, 5, 4)) < 0.5, -1, 1)
    if np.dtype(dt).kind == "c":
        a = (3 * k * tiny + 1j * 4 * k * tiny * np.where(rng.random(k.shape) < 0.5, -1, 1))
    else:
        a = k * tiny
    a = a.astype(dt)
    assert (np.abs(a) < np.finfo(part).smallest_normal).all()
    ga = xp.asarray(a, device=device)
    want = _norm_ref(a, ord)
    _same(to_numpy(xp.linalg.matrix_norm(ga, ord=ord)), want, f"matrix_norm ord={ord}")
    _same(to_numpy(xp.linalg.matrix_norm(ga, ord=ord, keepdims=True)), want[:, None, None],
          f"matrix_norm ord={ord}, keepdims")
    # a transposed (strided) view
    _same(to_numpy(xp.linalg.matrix_norm(ga.mT, ord=ord)), _norm_ref(np.swapaxes(a, -1, -2),
                                                                      ord),
          f"matrix_norm ord={ord} of a transposed view")


@pytest.mark.parametrize("dt", [F32, C64], ids=["float32", "complex64"])
def test_matrix_norm_fro_keeps_subnormal_squares(device, dt):
    """'fro' of normal float32 entries whose squares are subnormal: 3u, 4u, 12u with u =
    2**-66 give 13u exactly when the squares are kept (flushed, the norm was 0); one matrix
    holding subnormal entries beside normal ones. Tolerance: 2 ulp (a norm kernel may scale
    by the largest element first); the flushed answer is far outside it."""
    u = 2.0 ** -66
    if dt == C64:
        a = np.array([[[3 * u + 4j * u, 0], [0, 12 * u]], [[3e-39, 1], [2, 1e-45j]]], dt)
        want = np.array([13 * u, np.sqrt(5.0)], F32)
    else:
        a = np.array([[[3 * u, 4 * u], [0, 12 * u]], [[3e-39, 1], [2, -1e-45]]], dt)
        want = np.array([13 * u, np.sqrt(5.0)], F32)
    got = to_numpy(xp.linalg.matrix_norm(xp.asarray(a, device=device), ord="fro"))
    assert got.dtype == F32 and got.shape == (2,), (got.dtype, got.shape)
    np.testing.assert_allclose(got, want, rtol=2 * np.finfo(F32).eps, atol=0,
                               err_msg="matrix_norm 'fro'")


@pytest.mark.parametrize("adt,bdt", [(F32, F64), (C64, C128), (F32, F32)],
                         ids=lambda d: np.dtype(d).name)
def test_tensordot_converts_subnormals_exactly(device, rng, adt, bdt):
    """tensordot of subnormal float32 (complex64) values with float64 (complex128) small
    nonzero integers: x converted by our astype (CuPy's cast flushed it to 0), then the
    library's GEMM on normal float64 values: every partial sum is exact, so NumPy's in any
    order (a zero's sign aside). float32 with float32: the GEMM sees subnormals, compared
    only for not being flushed where the exact result is far from 0."""
    a = _subnormal_values(rng, adt, 4 * 5).reshape(4, 5)
    m = rng.integers(1, 4, (5, 3)) * np.where(rng.random((5, 3)) < 0.5, -1, 1)
    b = m.astype(bdt)
    if np.dtype(bdt).kind == "c":
        b = (m + 1j * m[::-1]).astype(bdt)
    ga, gb = xp.asarray(a, device=device), xp.asarray(b, device=device)
    got = to_numpy(xp.tensordot(ga, gb, axes=1))
    wide = np.tensordot(a.astype(b.dtype if b.dtype.itemsize >= a.dtype.itemsize else a.dtype),
                        b, axes=1)
    if adt == bdt == F32:
        # (cuBLAS's own arithmetic on subnormals is unspecified: not compared here)
        assert got.dtype == F32 and got.shape == (4, 3), (got.dtype, got.shape)
        return
    _equal_values(got, wide, "tensordot(axes=1)")
    a3 = _subnormal_values(rng, adt, 2 * 3 * 5).reshape(2, 3, 5)
    b3 = np.broadcast_to(b[None, :, :], (3, 5, 3)).copy()
    got = to_numpy(xp.tensordot(xp.asarray(a3, device=device), xp.asarray(b3, device=device),
                                axes=((1, 2), (0, 1))))
    _equal_values(got, np.tensordot(a3.astype(b3.dtype), b3, axes=((1, 2), (0, 1))),
                  "tensordot over two axes")


# Transforms whose every intermediate is a multiple of u (or 0): u = 2**-127 / factor keeps
# them all normal, and the scaling (ours) lands them on multiples of 2**-127, many subnormal.
# (name, input kind, norm, factor, call arguments)
_FFT_CASES = [
    ("fft", "c", "forward", 0.25, {}), ("fft", "c", "ortho", 0.5, {}),
    ("ifft", "c", "backward", 0.25, {}), ("ifft", "c", "ortho", 0.5, {}),
    ("rfft", "r", "forward", 0.25, {}), ("rfft", "r", "ortho", 0.5, {}),
    ("irfft", "h", "backward", 0.25, {"n": 4}), ("irfft", "h", "ortho", 0.5, {"n": 4}),
    ("hfft", "h", "forward", 0.25, {"n": 4}), ("ihfft", "r", "backward", 0.25, {}),
    ("fftn", "c2", "forward", 0.25, {}), ("ifftn", "c2", "backward", 0.25, {}),
    ("rfftn", "r2", "forward", 0.125, {}), ("irfftn", "h2", "backward", 0.125,
                                            {"s": (2, 4), "axes": (0, 1)}),
]


def _fft_input(rng, kind, u):
    def ints(shape):
        return rng.integers(-2, 3, shape).astype(F64)
    if kind == "c":
        return (ints(4) + 1j * ints(4)) * u
    if kind == "r":
        return ints(4) * u
    if kind == "h":  # 3 points of a Hermitian signal of 4: real first and last
        v = ints(3) + 1j * ints(3)
        v[0], v[-1] = v[0].real, v[-1].real
        return v * u
    if kind == "c2":
        return (ints((2, 2)) + 1j * ints((2, 2))) * u
    if kind == "r2":
        return ints((2, 4)) * u
    assert kind == "h2", kind
    v = ints((2, 3)) + 1j * ints((2, 3))
    v[:, 0], v[:, -1] = v[:, 0].real, v[:, -1].real
    v[1, 0] = v[1, 0].real  # (the (1, 0) point of a 2 x 4 signal's half spectrum is its own
    v[1, -1] = v[1, -1].real  # conjugate's partner: kept real, any order of the axes agrees)
    return v * u


@pytest.mark.parametrize("case", _FFT_CASES, ids=lambda c: f"{c[0]}-{c[2]}")
def test_fft_scaling_keeps_subnormals(device, rng, case):
    """The norm scaling (and hfft/ihfft's conjugation) by our kernels after the library's
    unscaled transform: small transforms (2 and 4 points: additions only) of multiples of
    u, scaled onto multiples of 2**-127, many of them subnormal, in float32 precision;
    against NumPy's pocketfft on the same values in float64, rounded once to float32 (both
    exact). Tolerance: 2 subnormal steps and 2 ulp (a library that rounds an intermediate);
    a flushed output (0 where the reference is >= 2**-127) is far outside it."""
    name, kind, norm, factor, kw = case
    u = 2.0 ** -127 / factor

    def subnormal_outputs(w):
        parts = (w.real, w.imag) if w.dtype.kind == "c" else (w,)
        return any(((p != 0) & (np.abs(p) < np.finfo(F32).smallest_normal)).any()
                   for p in parts)
    for _ in range(200):  # (the seeded rng: the same input every run)
        v = _fft_input(rng, kind, u)
        want = getattr(np.fft, name)(v, norm=norm, **kw)
        want = want.astype(C64 if want.dtype.kind == "c" else F32)
        if subnormal_outputs(want):
            break
    assert subnormal_outputs(want), "the case must have subnormal outputs"
    assert np.abs(v[v != 0]).min() >= np.finfo(F32).smallest_normal
    x = xp.asarray(v.astype(F32 if kind in ("r", "r2") else C64), device=device)
    got = to_numpy(getattr(xp.fft, name)(x, norm=norm, **kw))
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    tiny = np.finfo(F32).smallest_subnormal
    np.testing.assert_allclose(got, want, rtol=2 * np.finfo(F32).eps, atol=2 * tiny,
                               err_msg=f"fft.{name}(norm={norm!r})")


def test_fftfreq_rounds_subnormal_frequencies(device, v2024):
    """fftfreq / rfftfreq with dtype=float32 and a spacing that puts the frequencies k / (d n)
    on multiples of 2**-127: computed in float64, rounded by our astype (CuPy's flushed
    them), bit for bit as NumPy's float64 values rounded once."""
    d = 2.0 ** 125
    for fname in ("fftfreq", "rfftfreq"):
        got = to_numpy(getattr(xp.fft, fname)(4, d=d, dtype=xp.float32, device=device))
        want = getattr(np.fft, fname)(4, d).astype(F32)
        assert (np.abs(want[want != 0]) < np.finfo(F32).smallest_normal).any()
        _same(got, want, f"fft.{fname}(4, d=2**125, dtype=float32)")


# ---- 7. det/slogdet, KDTree's conversion, complex64 sets and searches (no CuPy -ftz) -------
# det and slogdet: the backend's LU (on cuda lapack.lu_factor: cuSOLVER/cuBLAS getrf), then
# NumPy's formula over U's diagonal and the pivots by our kernels (CuPy's log, sum, exp and
# product flushed float32 subnormals). KDTree: float32 data widened by our astype. complex64
# unique_*: uint64 order keys (integer kernels) and our not_equal. (searchsorted and isin take
# real-valued arrays only: the backends' complex branches are unreachable.)

def _det_tol(dt, n, logabs=0.0):
    """16 n eps, times |log|det|| where larger than 1: the LU's backward error grows with n
    (NumPy's float32 against float64 measured 0.25 n eps at most on these matrices), and
    sign * exp(logabsdet) carries the absolute rounding of the sum of n logarithms."""
    scale = max(1.0, float(np.max(np.abs(logabs), initial=0.0)))
    return 16 * n * float(np.finfo(np.dtype(dt)).eps) * scale
_FLOATING = ("float32", "float64", "complex64", "complex128")


def _well_conditioned(rng, dt, shape):
    """Random matrices I + G / (2 sqrt(n)), G of N(0, 1) entries: the eigenvalues lie near the
    disk of radius 1/2 around 1 (condition numbers near 3, determinants of modest size)."""
    n = shape[-1]
    a = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return (np.eye(n) + a / (2 * np.sqrt(n))).astype(dt)


def _det_refs(a):
    """NumPy's det and slogdet of a in 128-bit-complex / float64 precision."""
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    return np.linalg.det(wide), np.linalg.slogdet(wide)


# shapes reach each method of lapack.choose_method on cuda: one small matrix and a stack
# (batched), one matrix beyond ONE_BATCHED_MAX_N (single), a stack beyond BATCHED_MAX_N (loop)
_DET_SHAPES = [(1, 1), (2, 2), (3, 3), (5, 5), (4, 3, 3), (2, 3, 6, 6), (17, 17), (40, 40),
               (3, 40, 40), (2, 260, 260)]


@pytest.mark.parametrize("dt", _FLOATING)
@pytest.mark.parametrize("shape", _DET_SHAPES, ids=str)
def test_det_slogdet_match_numpy(device, rng, dt, shape):
    a = _well_conditioned(rng, dt, shape)
    want_det, (want_sign, want_log) = _det_refs(a)
    rtol = _det_tol(dt, shape[-1], want_log)
    x = xp.asarray(a, device=device)
    got = to_numpy(xp.linalg.det(x))
    assert got.dtype == a.dtype and got.shape == shape[:-2], (got.dtype, got.shape)
    np.testing.assert_allclose(got, want_det, rtol=rtol, err_msg=f"det {dt} {shape}")
    sign, logabs = (to_numpy(r) for r in xp.linalg.slogdet(x))
    assert sign.dtype == a.dtype and logabs.dtype == np.zeros(1, a.dtype).real.dtype
    assert sign.shape == logabs.shape == shape[:-2]
    if a.dtype.kind == "f":  # ±1 exactly
        assert set(np.unique(sign)) <= {-1.0, 1.0}
        np.testing.assert_array_equal(sign, want_sign, err_msg=f"slogdet sign {dt} {shape}")
    else:
        np.testing.assert_allclose(sign, want_sign, rtol=rtol, atol=rtol,
                                   err_msg=f"slogdet sign {dt} {shape}")
    np.testing.assert_allclose(logabs, want_log, rtol=0, atol=rtol,
                               err_msg=f"slogdet logabsdet {dt} {shape}")


@pytest.mark.parametrize("dt", _FLOATING)
def test_det_slogdet_strided_and_broadcast_inputs(device, rng, dt):
    """A transposed view, a negative-stride view and a broadcast stack (stride 0) read as the
    matrices they show (det(A^T) = det(A); the copy before the LU is ours)."""
    a = _well_conditioned(rng, dt, (3, 5, 5))
    x = xp.asarray(a, device=device)
    for view, ref in ((xp.matrix_transpose(x), np.swapaxes(a, -1, -2)),
                      (x[::-1, ::-1, :], a[::-1, ::-1, :]),
                      (xp.broadcast_to(x[0:1, ...], (4, 5, 5)),
                       np.broadcast_to(a[0:1, ...], (4, 5, 5)))):
        want_det, (want_sign, want_log) = _det_refs(ref)
        rtol = _det_tol(dt, 5, want_log)
        np.testing.assert_allclose(to_numpy(xp.linalg.det(view)), want_det, rtol=rtol)
        s, lg = (to_numpy(r) for r in xp.linalg.slogdet(view))
        np.testing.assert_allclose(s, want_sign, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(lg, want_log, rtol=0, atol=rtol)


@pytest.mark.parametrize("dt", _FLOATING)
def test_det_slogdet_singular_and_empty(device, rng, dt):
    """Exactly singular matrices (a zero row, a zero column, the zero matrix: U gets an exact
    0 on its diagonal under any rounding, where a repeated row need not) give det +0 and
    slogdet (0, -inf) as NumPy's (LAPACK's info > 0), also inside a stack of regular ones;
    empty stacks and 0 x 0 matrices keep NumPy's values (det 1 of a 0 x 0 matrix)."""
    a = _well_conditioned(rng, dt, (4, 3, 3))
    a[1, 1, :] = 0                 # a zero row
    a[2, :, 1] = 0                 # a zero column
    a[3, ...] = 0                  # the zero matrix
    x = xp.asarray(a, device=device)
    det = to_numpy(xp.linalg.det(x))
    sign, logabs = (to_numpy(r) for r in xp.linalg.slogdet(x))
    want_det, (want_sign, want_log) = _det_refs(a)
    for i in (1, 2, 3):
        _same(det[i:i + 1], np.zeros(1, a.dtype), f"det of singular matrix {i}")
        _same(sign[i:i + 1], np.zeros(1, a.dtype), f"slogdet sign of singular matrix {i}")
        assert logabs[i] == -np.inf, (i, logabs[i])
    tol = _det_tol(dt, 3, want_log[0])
    np.testing.assert_allclose(det[0], want_det[0], rtol=tol)
    np.testing.assert_allclose(logabs[0], want_log[0], atol=tol)
    for shape in ((0, 3, 3), (2, 0, 0), (0, 0)):
        e = xp.asarray(np.zeros(shape, dt), device=device)
        want = np.linalg.det(np.zeros(shape, dt))
        got = to_numpy(xp.linalg.det(e))
        assert got.dtype == np.dtype(dt) and got.shape == shape[:-2]
        np.testing.assert_array_equal(got, want)
        s, lg = (to_numpy(r) for r in xp.linalg.slogdet(e))
        ws, wl = np.linalg.slogdet(np.zeros(shape, dt))
        np.testing.assert_array_equal(s, ws)
        np.testing.assert_array_equal(lg, wl)


def test_det_slogdet_errors_unchanged(device):
    for bad, err in ((xp.asarray(np.ones((2, 3)), device=device), ValueError),
                     (xp.asarray(np.ones(3), device=device), ValueError),
                     (xp.asarray(np.ones((2, 2), np.int64), device=device), TypeError)):
        for f in (xp.linalg.det, xp.linalg.slogdet):
            with pytest.raises(err):
                f(bad)


@pytest.mark.parametrize("dt", ("float32", "complex64"))
def test_det_of_a_subnormal_determinant(device, dt):
    """det(diag(1e-20, 1e-20)) = 1e-40, a float32 subnormal (CuPy's exp under -ftz made it 0);
    the anti-diagonal's is -1e-40 (one row interchange); the LU itself is exact here (no
    subnormal intermediate: the multipliers are 0). The result's precision is the subnormal
    spacing's: 2**-149 / 1e-40 ~ 1.4e-5 relative."""
    j = 1j if dt == "complex64" else 1
    cases = ((np.diag([1e-20, 1e-20 * j]), 1e-40 * j, 1.0 * j),
             (np.array([[0, 1e-20], [1e-20 * j, 0]]), -1e-40 * j, -1.0 * j))
    for m, want, want_sign in cases:
        a = np.asarray(m).astype(dt)
        stack = np.stack([a, a, np.eye(2, dtype=dt)])
        x = xp.asarray(stack, device=device)
        got = to_numpy(xp.linalg.det(x))
        assert got[0] != 0 and got[1] != 0, f"det flushed to 0: {got}"
        np.testing.assert_allclose(got[:2], [want, want], rtol=1e-4, err_msg=f"{dt} {m}")
        assert got[2] == 1, got[2]
        sign, logabs = (to_numpy(r) for r in xp.linalg.slogdet(x))
        np.testing.assert_allclose(sign[:2], [want_sign, want_sign], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(logabs[:2], 2 * np.log(1e-20), rtol=1e-6)
        ref = np.linalg.det(stack)  # NumPy in float32: the same formula
        np.testing.assert_allclose(got, ref, rtol=1e-4)


@gpu
@pytest.mark.cuda
@pytest.mark.parametrize("method", ("batched", "single", "loop"))
@pytest.mark.parametrize("dt", _FLOATING)
def test_lu_factor_every_method(rng, method, dt):
    """lapack.lu_factor with each method forced: U's diagonal and the pivots' parity give the
    determinant NumPy's LAPACK gives (the factors are of each matrix's transpose)."""
    import cupy as cp
    from xp_cuda._kernels import lapack
    shape = (1, 7, 7) if method == "single" else (3, 7, 7)
    a = _well_conditioned(rng, dt, shape)
    with cp.cuda.Device(0):
        lu, piv = lapack.lu_factor(cp, cp.asarray(a), method)
        lu, piv = cp.asnumpy(lu), cp.asnumpy(piv)
    assert lu.shape == a.shape and piv.shape == a.shape[:-1] and piv.dtype == np.int32
    n = shape[-1]
    parity = (piv != np.arange(1, n + 1)).sum(axis=-1) % 2
    det = np.prod(np.diagonal(lu, 0, -2, -1).astype(np.complex128), axis=-1) * \
        np.where(parity == 1, -1, 1)
    want_det, (_, want_log) = _det_refs(a)
    np.testing.assert_allclose(det, want_det, rtol=_det_tol(dt, n, want_log))


def test_plan_factor_methods():
    from xp_cuda._kernels import lapack
    p = lapack.plan_factor((4, 3, 3), "float32")
    assert (p.method, p.batch, p.n, p.lwork, p.step) == ("batched", 4, 3, 0, 36)
    assert lapack.plan_factor((40, 40), "float64", 99).method == "single"
    assert lapack.plan_factor((40, 40), "float64", 99).lwork == 99
    assert lapack.plan_factor((2, 300, 300), "complex64", 5).method == "loop"
    assert lapack.plan_factor((0, 3, 3), "float32").method == "empty"
    assert lapack.plan_factor((2, 3, 3), "float32", 7, "loop").lwork == 7
    with pytest.raises(AssertionError):
        lapack.plan_factor((2, 3, 3), "float32", 0, "single")


def test_kdtree_keeps_subnormal_float32_coordinates(device):
    """float32 points whose coordinates are subnormal (multiples of 2**-149 up to 2**-140):
    widened to float64 by the backend's astype (CuPy's flushed them to 0, merging points), the
    tree answers as SciPy's over the same values in float64."""
    scipy_spatial = pytest.importorskip("scipy.spatial")
    from xp_cuda.spatial import KDTree
    rng = np.random.default_rng(7)
    pts = (rng.integers(1, 1 << 9, size=(300, 2)) * 2.0 ** -149).astype(F32)
    assert (np.abs(pts) < np.finfo(F32).smallest_normal).all() and (pts != 0).all()
    q = (rng.integers(1, 1 << 9, size=(50, 2)) * 2.0 ** -149).astype(F32)
    t = KDTree(xp.asarray(pts, device=device))
    ref = scipy_spatial.KDTree(pts.astype(F64))
    d, i = t.query(xp.asarray(q, device=device), k=3)
    rd, ri = ref.query(q.astype(F64), k=3)
    d, i = to_numpy(d), to_numpy(i)
    np.testing.assert_allclose(d, rd, rtol=1e-12, atol=0)
    assert (d > 0).any(), "every distance 0: coordinates flushed"
    # ties between equidistant points may order differently: compare the distances of the
    # indices found
    np.testing.assert_allclose(np.linalg.norm(pts.astype(F64)[i] - q.astype(F64)[:, None, :],
                                              axis=-1), rd, rtol=1e-12, atol=0)


def _c64_parts():
    """float32 parts: subnormals (several distinct, and their negatives), zeros of both signs,
    normal numbers, infinities and NaN."""
    tiny = [2.0 ** -149, 2 * 2.0 ** -149, 3 * 2.0 ** -149, 2.0 ** -130, 1e-40]
    return np.array(tiny + [-v for v in tiny] + [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf,
                                                 np.nan], F32)


def _c64(re, im):
    out = np.empty(np.broadcast(re, im).shape, np.complex64)
    out.real, out.imag = re, im  # (re + 1j * im would turn inf * 1j into NaN parts)
    return out


def test_complex64_order_key_is_numpys_order():
    """The keys' unsigned order is NumPy's sort order and equal keys are equivalent values;
    every pair of the parts checked (runs here: the key is integer arithmetic, the same on
    NumPy and CuPy)."""
    from xp_cuda._backends._base import complex64_order_key
    p = _c64_parts()
    c = _c64(*np.meshgrid(p, p, indexing="ij")).reshape(-1)
    s = np.sort(c, kind="stable")
    ks = complex64_order_key(np, s)
    assert (ks[1:] >= ks[:-1]).all()
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.searchsorted(ks, complex64_order_key(np, c), side),
                                      np.searchsorted(s, c, side), err_msg=side)


@pytest.fixture
def _c64_data():
    rng = np.random.default_rng(11)
    p = _c64_parts()
    return rng, p


def test_complex64_unique_keeps_distinct_subnormals(device, _c64_data):
    """unique_* of complex64 values whose parts are distinct subnormals (CuPy's comparisons
    merged them): NumPy's values, counts, first indices and inverse, exact (no NaN and no
    -0.0 here: np.unique merges NaNs and picks either zero)."""
    rng, p = _c64_data
    p = p[np.isfinite(p) & ~((p == 0) & np.signbit(p))]
    re, im = rng.choice(p, 3001), rng.choice(p, 3001)
    c = _c64(re, im)
    x = xp.asarray(c, device=device)
    wv, wi, winv, wc = np.unique(c, return_index=True, return_inverse=True, return_counts=True)
    got = xp.unique_all(x)
    _same(to_numpy(got.values), wv, "unique_all values")
    np.testing.assert_array_equal(to_numpy(got.indices), wi)
    np.testing.assert_array_equal(to_numpy(got.inverse_indices), winv.reshape(c.shape))
    np.testing.assert_array_equal(to_numpy(got.counts), wc)
    _same(to_numpy(xp.unique_values(x)), wv, "unique_values")
    y = xp.asarray(c[::-3], device=device)  # a strided view
    _same(to_numpy(xp.unique_values(y)), np.unique(c[::-3]), "unique_values of a view")


def test_complex64_unique_nans_distinct(device):
    c = _c64(np.array([np.nan, np.nan, 2.0 ** -149, 2.0 ** -149, 1.0], F32),
             np.array([0.0, 0.0, 2.0 ** -148, 2.0 ** -148, np.nan], F32))
    got = to_numpy(xp.unique_values(xp.asarray(c, device=device)))
    assert got.shape == (4,), got  # each NaN is its own value; the subnormal pair is one
    _same(got[:1], c[2:3], "the subnormal value first")


# ---- 8. order of real subnormals: sorting, sets, searches, extrema, comparisons ------------
# A flushing comparison (setp.ftz) sees every subnormal as a signed zero: a stable sort would
# keep distinct subnormals in input order, unique would merge them, argmax would pick the
# first of them. NumPy orders them exactly; so must every device.

@pytest.mark.parametrize("dt", [F32, F64], ids=["float32", "float64"])
def test_subnormals_keep_their_order(device, rng, dt):
    s = _subnormals(rng, dt, n=3001)
    s[::97] = 0.0
    x = xp.asarray(s, device=device)
    _same(to_numpy(xp.sort(x)), np.sort(s, kind="stable"), "sort")
    _same(to_numpy(xp.sort(x, descending=True)), -np.sort(-s, kind="stable"), "sort descending")
    np.testing.assert_array_equal(to_numpy(xp.argsort(x)), np.argsort(s, kind="stable"))
    m = s[:3000].reshape(60, 50)
    _same(to_numpy(xp.sort(xp.asarray(m, device=device), axis=0)), np.sort(m, axis=0,
          kind="stable"), "sort axis 0")
    _same(to_numpy(xp.unique_values(x)), np.unique(s), "unique_values")
    vals, counts = xp.unique_counts(x)
    wv, wc = np.unique(s, return_counts=True)
    _same(to_numpy(vals), wv, "unique_counts values")
    np.testing.assert_array_equal(to_numpy(counts), wc)
    srt = np.sort(s)
    q = _subnormals(rng, dt, n=257)
    for side in ("left", "right"):
        np.testing.assert_array_equal(
            to_numpy(xp.searchsorted(xp.asarray(srt, device=device), xp.asarray(q, device=device),
                                     side=side)), np.searchsorted(srt, q, side), err_msg=side)
    _same(to_numpy(xp.max(x)), np.asarray(s.max()), "max")
    _same(to_numpy(xp.min(x)), np.asarray(s.min()), "min")
    assert int(to_numpy(xp.argmax(x))) == int(np.argmax(s))
    assert int(to_numpy(xp.argmin(x))) == int(np.argmin(s))
    _same(to_numpy(xp.max(xp.asarray(m, device=device), axis=0)), m.max(axis=0), "max axis 0")
    t = xp.asarray(s[::-1].copy(), device=device)
    np.testing.assert_array_equal(to_numpy(x < t), s < s[::-1])
    np.testing.assert_array_equal(to_numpy(x == t), s == s[::-1])
    _same(to_numpy(xp.maximum(x, t)), np.maximum(s, s[::-1]), "maximum")


# ---- 9. found by the GPU fuzz sweep (300 examples a target): every device agrees ------------

@pytest.mark.parametrize("fname", ["var", "std"])
def test_var_std_of_nothing_follow_the_divisor(device, fname):
    """The spec's var: the sum of squared deviations (none: 0) over N - correction, NaN where
    that is <= 0. With N = 0 and correction -1 it is 0 / 1 = 0 (cuda gave NaN)."""
    f = getattr(xp, fname)
    x = xp.asarray(np.ones((0, 3)), device=device)
    np.testing.assert_array_equal(to_numpy(f(x, correction=-1)), 0.0)
    np.testing.assert_array_equal(to_numpy(f(x, axis=0, correction=-2.5)), [0.0] * 3)
    assert np.isnan(to_numpy(f(x, axis=0, correction=0))).all()
    assert np.isnan(to_numpy(f(x, correction=0.5)))


@pytest.mark.parametrize("fname", ["max", "min"])
def test_max_min_into_an_empty_result(device, fname):
    """An empty range with an empty result has nothing to reduce: an empty array (cpu raised
    NumPy's 'zero-size array to reduction operation' text)."""
    f = getattr(xp, fname)
    x = xp.asarray(np.ones((1, 0, 0), np.uint16), device=device)
    r = f(x, axis=1)
    assert r.shape == (1, 0) and r.dtype == xp.uint16
    assert f(x, axis=(0, 1), keepdims=True).shape == (1, 1, 0)
    with pytest.raises(ValueError, match="empty set has no"):
        f(xp.asarray(np.ones((2, 0, 3)), device=device), axis=1)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_mean_of_infinite_parts_on_every_layout(device, v2024, dt):
    """mean divides each part by n (NumPy's mean): a broadcast or permuted input through the
    kernels gives the same parts as a contiguous one (cuda divided by n + 0j: NaN)."""
    base = np.array([-49.837 - np.inf * 1j, 3.5 + 2j, np.inf + 1j], dtype=dt)
    base[0] = dt(complex(-49.837, -np.inf))
    b = xp.broadcast_to(xp.asarray(base[:1], device=device), (4,))
    _same(to_numpy(xp.mean(b)), np.asarray(dt(complex(np.float32(-49.837) if dt ==
                                                       np.complex64 else -49.837, -np.inf))),
          "mean of a broadcast")
    m = np.stack([base, base[::-1]]).T.copy()  # (3, 2)
    want = np.empty(2, dt)
    want.real, want.imag = m.real.mean(axis=0), m.imag.mean(axis=0)
    _same(to_numpy(xp.mean(xp.asarray(m, device=device), axis=0)), want, "mean axis 0")
    t = xp.permute_dims(xp.asarray(m.T.copy(), device=device), (1, 0))
    _same(to_numpy(xp.mean(t, axis=0)), want, "mean of a permuted view")


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_norms_of_infinite_parts(device, dt):
    """|inf + NaN j| is inf (the spec's abs), so the 2-norm and Frobenius norm of a vector or
    matrix holding one are inf (cuda summed re^2 + im^2: NaN)."""
    a = np.array([[0, 0, 0], [complex(np.inf, np.nan), 1 + 2j, 0]], dtype=dt)
    a[1, 0] = dt(complex(np.inf, np.nan))
    x = xp.asarray(a, device=device)
    assert to_numpy(xp.linalg.vector_norm(x)) == np.inf
    np.testing.assert_array_equal(to_numpy(xp.linalg.vector_norm(x, axis=1)), [0, np.inf])
    assert to_numpy(xp.linalg.matrix_norm(x[None, ...], ord="fro"))[0] == np.inf
    r = np.random.default_rng(5)
    c = (r.standard_normal((7, 5)) + 1j * r.standard_normal((7, 5))).astype(dt)
    tol = 1e-6 if dt == np.complex64 else 1e-14
    np.testing.assert_allclose(to_numpy(xp.linalg.vector_norm(xp.asarray(c, device=device),
                                                              axis=0)),
                               np.linalg.norm(c.astype(np.complex128), axis=0), rtol=tol)
