// Device helpers of the generated elementwise kernels (xp_cuda/_kernels/elementwise.py).
//
// The generator prepends this file to every translation unit it builds; which helper a function
// uses for which dtype kind is decided by the one table OPS in elementwise.py, never here.
// Real helpers follow NumPy's algorithms (the cpu reference); complex helpers wrap CuPy's
// thrust::complex functions (FreeBSD's C99 Annex G code) and add the special cases of the
// 2023.12 spec that those miss. Everything is __host__ __device__ so the special cases can be
// checked on a host compiler too.
//
// The complex helpers, and CuPy's complex.cuh under them, compile only where XP_COMPLEX is
// defined: the generators define it for units that name a complex type (elementwise.header).
// Parsing complex.cuh was a third of a real unit's first compile (35 of ~100 ms of NVRTC's C++
// front end), paid by every fused program and every kernel not shipped prebuilt.
#pragma once
#ifdef XP_COMPLEX
#include <cupy/complex.cuh>
#endif

#ifndef XP_HD
#define XP_HD __host__ __device__ __forceinline__
#endif

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
XP_HD double xp_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
XP_HD double xp_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
#else
#include <limits>
inline double xp_inf() { return std::numeric_limits<double>::infinity(); }
inline double xp_nan() { return std::numeric_limits<double>::quiet_NaN(); }
#endif

#define XP_PI 3.141592653589793238462643383279502884
typedef long long xp_i64;
typedef unsigned long long xp_u64;

// ---- packs for vectorised contiguous access ------------------------------------------------
template <typename T, int V>
struct alignas(sizeof(T) * V) XpPack {
  T v[V];
};

// ---- integers (NumPy semantics: wrap-around, x // 0 == x % 0 == 0) ------------------------
// U is an unsigned type at least as wide as int, so arithmetic never overflows a signed type.
template <typename T, typename U>
XP_HD T xp_iabs(T a) { return a < 0 ? (T)((U)0 - (U)a) : a; }

template <typename T>
XP_HD T xp_ifloordiv(T a, T b) {
  if (b == 0) return 0;
  if (b == (T)-1) return (T)(0 - (xp_u64)a);  // MIN // -1 wraps to MIN, no trap
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}

template <typename T>
XP_HD T xp_iremainder(T a, T b) {
  if (b == 0 || b == (T)-1) return 0;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <typename T>
XP_HD T xp_ufloordiv(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }

template <typename T>
XP_HD T xp_uremainder(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }

// Shifts by a count outside [0, bits) give what shifting one bit at a time would (NumPy).
template <typename T, typename U>
XP_HD T xp_lshift(T a, T b) {
  return (b < 0 || (xp_u64)b >= sizeof(T) * 8) ? (T)0 : (T)((U)a << (U)b);
}

template <typename T>
XP_HD T xp_rshift(T a, T b) {
  if (b < 0 || (xp_u64)b >= sizeof(T) * 8) return a < 0 ? (T)-1 : (T)0;
  return (T)(a >> b);
}

// Integer power by squaring (wrapping). A negative exponent (unspecified by the spec) gives the
// truncated exact result, as on the cpu: 1 for base 1, +-1 for base -1, else 0.
template <typename T, typename U>
XP_HD T xp_ipow(T a, T b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == (T)-1) return (b & 1) ? (T)-1 : (T)1;
    return 0;
  }
  U r = 1, base = (U)a;
  xp_u64 e = (xp_u64)b;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (T)r;
}

template <typename T>
XP_HD T xp_isign(T a) { return (T)((a > 0) - (a < 0)); }

// Integer maximum/minimum as a bit select, not `c ? a : b`: ptxas 13.0 (sm_90) fuses chains of
// integer max/min into 3-input VIMNMX3 and there drops the negation of an operand produced by
// `negative`, so a fused max(-x) read one element un-negated. Found by the fusion property test;
// every (dtype, max/min, negated operand) case agreed with NumPy once written this way.
template <typename T>
XP_HD T xp_isel(bool c, T a, T b) { return (T)(b ^ ((a ^ b) & (T)(0 - (T)c))); }

// ---- real floating point --------------------------------------------------------------------
// NumPy's divmod: the remainder takes the divisor's sign, zeros included; the quotient is
// rounded so that b * q + r == a as nearly as possible.
template <typename F>
XP_HD F xp_fremainder(F a, F b) {
  if (b == 0) return fmod(a, b);
  F mod = fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = copysign((F)0, b);
  }
  return mod;
}

template <typename F>
XP_HD F xp_ffloordiv(F a, F b) {
  if (b == 0) return a / b;
  F mod = fmod(a, b);
  F div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= (F)1;
  F fl;
  if (div != 0) {
    fl = floor(div);
    if (div - fl > (F)0.5) fl += (F)1;
  } else {
    fl = copysign((F)0, a / b);
  }
  return fl;
}

template <typename F>
XP_HD F xp_logaddexp(F a, F b) {
  if (a == b) return a + (F)0.693147180559945309417232121458176568;  // infinities too
  F d = a - b;
  if (d > 0) return a + log1p(exp(-d));
  if (d <= 0) return b + log1p(exp(d));
  return d;  // NaN
}

// NaN wins; between equal values (+0 and -0) the second operand, as NumPy gives.
template <typename F>
XP_HD F xp_fmaximum(F a, F b) { return (a > b || isnan(a)) ? a : b; }

template <typename F>
XP_HD F xp_fminimum(F a, F b) { return (a < b || isnan(a)) ? a : b; }

template <typename F>
XP_HD F xp_fsign(F a) { return a > 0 ? (F)1 : (a < 0 ? (F)-1 : (a == 0 ? (F)0 : a)); }

// nextafter (2024.12) by one step of the bit pattern: exact for subnormals whatever the
// flush-to-zero mode, and the spec's cases by construction: NaN in, NaN out; a == b gives b
// (so -0 toward +0 is +0, and +0 toward -0 is -0); from zero, the smallest subnormal of b's
// sign. A step away from zero adds one to the magnitude's bits, a step toward it subtracts one
// (+-inf toward a finite value gives +-max, max toward inf gives inf), as C's nextafter.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
XP_HD xp_i64 xp_bits(double v) { return __double_as_longlong(v); }
XP_HD int xp_bits(float v) { return __float_as_int(v); }
XP_HD double xp_from_bits(xp_i64 i, double) { return __longlong_as_double(i); }
XP_HD float xp_from_bits(int i, float) { return __int_as_float(i); }
#else
#include <cstring>
inline xp_i64 xp_bits(double v) { xp_i64 i; std::memcpy(&i, &v, 8); return i; }
inline int xp_bits(float v) { int i; std::memcpy(&i, &v, 4); return i; }
inline double xp_from_bits(xp_i64 i, double) { double v; std::memcpy(&v, &i, 8); return v; }
inline float xp_from_bits(int i, float) { float v; std::memcpy(&v, &i, 4); return v; }
#endif

template <typename F>
XP_HD F xp_nextafter(F a, F b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return b;
  if (a == 0) return xp_from_bits(xp_bits(copysign((F)0, b)) | 1, a);
  return xp_from_bits(xp_bits(a) + (((a < b) == (a > 0)) ? 1 : -1), a);
}

// ---- hypot ----------------------------------------------------------------------------------
// Our own, not the CUDA library's: NumPy's hypot is the C library's (glibc: correctly rounded),
// and the library hypot of a given CUDA release may differ from it (seen: inf for
// hypot(1e300, 1e300)). inf beats NaN (C99 F.10.4.3: hypot(inf, NaN) = inf).
// float: in double, as glibc's hypotf: a*a and b*b are exact there and one sqrt rounding then
// the rounding to float give the correctly rounded float in practice.
XP_HD float xp_hypot(float x, float y) {
  double a = fabs((double)x), b = fabs((double)y);
  if (isinf(a) || isinf(b)) return (float)xp_inf();
  return (float)sqrt(a * a + b * b);  // NaN in, NaN out
}
// double: Borges' fused correction (C. F. Borges, "An improved algorithm for hypot(a, b)",
// 2019; the kernel glibc uses) with exact power-of-two scaling away from overflow and
// underflow. The fma calls are explicit; the options forbid any other contraction.
XP_HD double xp_hypot(double x, double y) {
  double a = fabs(x), b = fabs(y);
  if (isinf(a) || isinf(b)) return xp_inf();
  if (isnan(a) || isnan(b)) return a + b;
  if (a < b) {
    double t = a;
    a = b;
    b = t;
  }
  // b/a <= 2^-27: a*sqrt(1 + (b/a)^2) lies within a quarter ulp of a (also b == 0)
  if (b <= a * 0x1p-27) return a;
  double s = 1.0;
  if (a > 0x1p+500) {  // exact scaling; b > a * 2^-27 stays normal
    a *= 0x1p-600;
    b *= 0x1p-600;
    s = 0x1p+600;
  } else if (b < 0x1p-500) {  // exact scaling up (subnormals included); a < 2^-473 here
    a *= 0x1p+600;
    b *= 0x1p+600;
    s = 0x1p-600;
  }
  double h = sqrt(fma(a, a, b * b));
  double h2 = h * h, a2 = a * a;
  double e = fma(-b, b, h2 - a2) + fma(h, h, -h2) - fma(a, a, -a2);
  h -= e / (2.0 * h);
  return h * s;
}

#ifdef XP_COMPLEX
// ---- complex --------------------------------------------------------------------------------
template <typename F>
XP_HD complex<F> xp_c(F re, F im) { return complex<F>(re, im); }

template <typename F>
XP_HD bool xp_cisnan(complex<F> z) { return isnan(z.real()) || isnan(z.imag()); }

template <typename F>
XP_HD bool xp_cisinf(complex<F> z) { return isinf(z.real()) || isinf(z.imag()); }

template <typename F>
XP_HD bool xp_cisfinite(complex<F> z) { return isfinite(z.real()) && isfinite(z.imag()); }

template <typename F>
XP_HD F xp_cabs(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (isinf(a) || isinf(b)) return (F)xp_inf();
  return xp_hypot(a, b);
}

template <typename F>
XP_HD complex<F> xp_cround(complex<F> z) { return xp_c<F>(rint(z.real()), rint(z.imag())); }

template <typename F>
XP_HD complex<F> xp_csquare(complex<F> z) { return z * z; }  // textbook, as NumPy

template <typename F>
XP_HD bool xp_ceq(complex<F> x, complex<F> y) {
  return x.real() == y.real() && x.imag() == y.imag();
}

// reciprocal (2024.12) of a complex number: the spec's 1.0 / z, a real numerator over a complex
// divisor, as NumPy's reciprocal computes it (Smith's scaling with the numerator's zero
// imaginary part dropped: 1 / (1 + 0j) is 1 - 0j, 1 / (0 + 1e-310j) is -inf j).
template <typename F>
XP_HD complex<F> xp_creciprocal(complex<F> z) {
  F c = z.real(), d = z.imag();
  if (fabs(d) <= fabs(c)) {
    F r = d / c, den = c + d * r;
    return xp_c<F>((F)1 / den, -r / den);
  }
  F r = c / d, den = d + c * r;
  return xp_c<F>(r / den, (F)-1 / den);
}

// Smith's scaled division (NumPy's): no overflow for large divisors, and a finite numerator
// over an infinite divisor gives zeros rather than NaN (those cases are implementation-defined).
template <typename F>
XP_HD complex<F> xp_cdiv(complex<F> x, complex<F> y) {
  F a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  F ac = fabs(c), ad = fabs(d);
  if (ac >= ad) {
    if (ac == 0 && ad == 0) return xp_c<F>(a / ac, b / ad);
    F rat = d / c, scl = (F)1 / (c + d * rat);
    return xp_c<F>((a + b * rat) * scl, (b - a * rat) * scl);
  }
  F rat = c / d, scl = (F)1 / (d + c * rat);
  return xp_c<F>((a * rat + b) * scl, (b * rat - a) * scl);
}

template <typename F>
XP_HD complex<F> xp_csign(complex<F> z) {
  F a = z.real(), b = z.imag();
  F nan = (F)xp_nan();
  if (a == 0 && b == 0) return xp_c<F>(0, 0);
  if (isnan(a) || isnan(b)) return xp_c<F>(nan, nan);
  if (isinf(a) || isinf(b)) {
    if (isinf(a) && isinf(b)) return xp_c<F>(nan, nan);
    return isinf(a) ? xp_c<F>(copysign((F)1, a), 0) : xp_c<F>(0, copysign((F)1, b));
  }
  F m = xp_hypot(a, b);
  return xp_c<F>(a / m, b / m);
}

template <typename F>
XP_HD complex<F> xp_cexp(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (isnan(a) && b == 0) return z;  // NaN + 0j keeps the (signed) zero
  return thrust::exp(z);
}

// expm1(a + ib) = expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b: accurate near 0.
template <typename F>
XP_HD complex<F> xp_cexpm1(complex<F> z) {
  F a = z.real(), b = z.imag();
  F nan = (F)xp_nan(), inf = (F)xp_inf();
  if (isnan(a)) return xp_c<F>(nan, b == 0 ? b : nan);
  if (isinf(a)) {
    if (a < 0) {
      if (!isfinite(b)) return xp_c<F>(-1, 0);
      return xp_c<F>(-1, (F)0 * sin(b));  // +0 cis(b) - 1
    }
    if (!isfinite(b)) return xp_c<F>(inf, nan);
    if (b == 0) return xp_c<F>(inf, b);
    return xp_c<F>(inf * cos(b), inf * sin(b));
  }
  if (!isfinite(b)) return xp_c<F>(nan, nan);
  if (a == 0 && b == 0) return xp_c<F>(0, b);  // the spec: +-0 + 0j -> 0 + 0j
  if (b == 0) return xp_c<F>(expm1(a), b);
  F h = sin(b / 2);
  return xp_c<F>(expm1(a) * cos(b) - 2 * h * h, exp(a) * sin(b));
}

template <typename F>
XP_HD complex<F> xp_clog(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (isnan(a) || isnan(b)) {
    F nan = (F)xp_nan();
    return xp_c<F>((isinf(a) || isinf(b)) ? (F)xp_inf() : nan, nan);
  }
  return thrust::log(z);
}

template <typename F>
XP_HD complex<F> xp_clog1p(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) return xp_clog(z);
  if (fabs(a) < (F)0.5 && fabs(b) < (F)0.5) {
    // |1 + z|^2 - 1 = a (2 + a) + b^2, without cancellation near 0
    return xp_c<F>((F)0.5 * log1p(a * (2 + a) + b * b), atan2(b, 1 + a));
  }
  return thrust::log(xp_c<F>(1 + a, b));
}

template <typename F>
XP_HD complex<F> xp_clogscaled(complex<F> z, F scale) {
  complex<F> l = xp_clog(z);
  return xp_c<F>(l.real() * scale, l.imag() * scale);
}

// thrust's sqrt loses the low bits of tiny parts (|z| and its halves become subnormal:
// sqrt(-2.6e-42 - 2.6e-42j) in complex64 was 3e-5 off): parts below 2^-60 (2^-500) are
// scaled by 2^64 (2^512), exactly, and the root back by 2^-32 (2^-256)
template <typename F>
XP_HD complex<F> xp_csqrt(complex<F> z) {
  const bool f32 = sizeof(F) == 4;
  const F lim = f32 ? (F)0x1p-60 : (F)0x1p-500;
  if (fabs(z.real()) < lim && fabs(z.imag()) < lim) {
    const F up = f32 ? (F)0x1p64 : (F)0x1p512, down = f32 ? (F)0x1p-32 : (F)0x1p-256;
    const complex<F> r = thrust::sqrt(xp_c<F>(z.real() * up, z.imag() * up));
    return xp_c<F>(r.real() * down, r.imag() * down);
  }
  return thrust::sqrt(z);
}

template <typename F>
XP_HD complex<F> xp_csinh(complex<F> z) { return thrust::sinh(z); }

template <typename F>
XP_HD complex<F> xp_ccosh(complex<F> z) { return thrust::cosh(z); }

// tanh: the spec wants tanh(+-inf + ib) = +-1 + copysign(0, b) j for finite b (C99 gives the
// sign of sin(2b)), and tanh(+-0 + inf j) = tanh(+-0 + NaN j) = +-0 + NaN j (C11).
template <typename F>
XP_HD complex<F> xp_ctanh(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (isinf(a)) return xp_c<F>(copysign((F)1, a), isfinite(b) ? copysign((F)0, b) : (F)0);
  if (a == 0 && !isfinite(b)) return xp_c<F>(a, (F)xp_nan());
  return thrust::tanh(z);
}

// sin, cos, tan as the spec defines their special cases: through sinh, cosh, tanh of i z.
template <typename F>
XP_HD complex<F> xp_csin(complex<F> z) {
  complex<F> s = xp_csinh(xp_c<F>(-z.imag(), z.real()));
  return xp_c<F>(s.imag(), -s.real());
}

template <typename F>
XP_HD complex<F> xp_ccos(complex<F> z) { return xp_ccosh(xp_c<F>(-z.imag(), z.real())); }

template <typename F>
XP_HD complex<F> xp_ctan(complex<F> z) {
  complex<F> t = xp_ctanh(xp_c<F>(-z.imag(), z.real()));
  return xp_c<F>(t.imag(), -t.real());
}

template <typename F>
XP_HD complex<F> xp_casinh(complex<F> z) {
  if (z.real() == 0 && z.imag() == 0) return z;
  return thrust::asinh(z);
}

template <typename F>
XP_HD complex<F> xp_casin(complex<F> z) {
  if (z.real() == 0 && z.imag() == 0) return z;
  return thrust::asin(z);
}

template <typename F>
XP_HD complex<F> xp_cacos(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (a == 0 && (b == 0 || isnan(b)))
    return xp_c<F>((F)(XP_PI / 2), isnan(b) ? b : -b);  // pi/2 - 0j, pi/2 + NaN j
  return thrust::acos(z);
}

template <typename F>
XP_HD complex<F> xp_cacosh(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (a == 0 && b == 0) return xp_c<F>(0, copysign((F)(XP_PI / 2), b));
  if (a == 0 && isnan(b)) return xp_c<F>(b, (F)(XP_PI / 2));  // NaN + pi/2 j (sign free)
  return thrust::acosh(z);
}

template <typename F>
XP_HD complex<F> xp_catanh(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (a == 0 && (b == 0 || isnan(b))) return z;
  return thrust::atanh(z);
}

template <typename F>
XP_HD complex<F> xp_catan(complex<F> z) {
  F a = z.real(), b = z.imag();
  if (b == 0 && (a == 0 || isnan(a))) return z;
  return thrust::atan(z);
}

// C99 Annex G complex product (G.5.1's example, the C compiler's x * y): the textbook
// product, with infinities recovered where it gives NaN + NaN j.
template <typename F>
XP_HD complex<F> xp_cmul_annex_g(complex<F> x, complex<F> y) {
  F a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  F ac = a * c, bd = b * d, ad = a * d, bc = b * c;
  F re = ac - bd, im = ad + bc;
  if (isnan(re) && isnan(im)) {
    bool again = false;
    if (isinf(a) || isinf(b)) {  // x infinite: box it, NaNs of y become 0
      a = copysign(isinf(a) ? (F)1 : (F)0, a);
      b = copysign(isinf(b) ? (F)1 : (F)0, b);
      if (isnan(c)) c = copysign((F)0, c);
      if (isnan(d)) d = copysign((F)0, d);
      again = true;
    }
    if (isinf(c) || isinf(d)) {  // y infinite: the same the other way round
      c = copysign(isinf(c) ? (F)1 : (F)0, c);
      d = copysign(isinf(d) ? (F)1 : (F)0, d);
      if (isnan(a)) a = copysign((F)0, a);
      if (isnan(b)) b = copysign((F)0, b);
      again = true;
    }
    if (!again && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {  // overflow
      if (isnan(a)) a = copysign((F)0, a);
      if (isnan(b)) b = copysign((F)0, b);
      if (isnan(c)) c = copysign((F)0, c);
      if (isnan(d)) d = copysign((F)0, d);
      again = true;
    }
    if (again) {
      F inf = (F)xp_inf();
      re = inf * (a * c - b * d);
      im = inf * (a * d + b * c);
    }
  }
  return xp_c<F>(re, im);
}

// pow as NumPy computes it (the cpu reference; the spec's complex cases are "as if
// exp(x2 * log(x1))", and it allows more careful handling): x ** (0 + 0j) = 1; a zero base
// gives 0 for a positive real part of the exponent, else NaN + NaN j; a real integer
// exponent n with |n| < 100 by repeated textbook products (n = 1 returns x itself; a negative
// n divides 1 by the power, Smith's division); anything else as the C library's cpow,
// exp(y * log(x)) with the Annex G product.
template <typename F>
XP_HD complex<F> xp_cpow(complex<F> x, complex<F> y) {
  F ar = x.real(), ai = x.imag(), br = y.real(), bi = y.imag();
  if (br == 0 && bi == 0) return xp_c<F>(1, 0);
  if (ar == 0 && ai == 0) {
    if (br > 0) return xp_c<F>(0, 0);
    F nan = (F)xp_nan();
    return xp_c<F>(nan, nan);
  }
  if (bi == 0 && br > (F)-100 && br < (F)100 && br == trunc(br)) {
    int n = (int)br;
    if (n == 1) return x;
    if (n == 2) return xp_c<F>(ar * ar - ai * ai, ar * ai + ai * ar);
    if (n == 3) {
      F sr = ar * ar - ai * ai, si = ar * ai + ai * ar;
      return xp_c<F>(ar * sr - ai * si, ar * si + ai * sr);
    }
    int m = n < 0 ? -n : n;
    F pr = ar, pi = ai, qr = 1, qi = 0;  // q = 1 * p * p^2 * ..., in NumPy's order
    while (true) {
      if (m & 1) {
        F tr = qr * pr - qi * pi, ti = qr * pi + qi * pr;
        qr = tr;
        qi = ti;
      }
      m >>= 1;
      if (m == 0) break;
      F tr = pr * pr - pi * pi, ti = pr * pi + pi * pr;
      pr = tr;
      pi = ti;
    }
    if (n < 0) return xp_cdiv(xp_c<F>(1, 0), xp_c<F>(qr, qi));
    return xp_c<F>(qr, qi);
  }
  return xp_cexp(xp_cmul_annex_g(y, xp_clog(x)));
}

#endif  // XP_COMPLEX

// ---- kernel bodies ------------------------------------------------------------------------------
// An operand is an array read at an index (XpArr) or one value (XpVal: a Python scalar passed
// as a kernel parameter, or a 0-d array read once). Op::f(T, T) -> TO holds the table's
// expression; every operand is converted to the compute type T in registers.
template <typename T>
struct XpArr {
  const T* __restrict__ p;
};
template <typename T>
struct XpVal {
  T v;
};

template <typename T>
XP_HD T xp_ld(const XpArr<T>& s, xp_i64 i) { return s.p[i]; }
template <typename T>
XP_HD T xp_ld(const XpVal<T>& s, xp_i64) { return s.v; }

template <int V, typename T>
XP_HD XpPack<T, V> xp_ldv(const XpArr<T>& s, xp_i64 j) {
  return reinterpret_cast<const XpPack<T, V>*>(s.p)[j];
}
template <int V, typename T>
XP_HD XpPack<T, V> xp_ldv(const XpVal<T>& s, xp_i64) {
  XpPack<T, V> r;
#pragma unroll
  for (int k = 0; k < V; ++k) r.v[k] = s.v;
  return r;
}

template <int V, typename T>
XP_HD bool xp_aligned(const XpArr<T>& s) { return ((xp_u64)s.p % (sizeof(T) * V)) == 0; }
template <int V, typename T>
XP_HD bool xp_aligned(const XpVal<T>&) { return true; }

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define XP_MAXND 8

template <typename Op, int V, typename S1, typename S2, typename TO>
__device__ __forceinline__ void xp_contig2(const S1& s1, const S2& s2, TO* __restrict__ out,
                                           xp_i64 n) {
  typedef typename Op::T T;
  const xp_i64 tid = (xp_i64)blockIdx.x * blockDim.x + threadIdx.x;
  const xp_i64 stride = (xp_i64)gridDim.x * blockDim.x;
  xp_i64 head = 0;
  if (V > 1 && xp_aligned<V>(s1) && xp_aligned<V>(s2) && ((xp_u64)out % (sizeof(TO) * V)) == 0) {
    const xp_i64 nv = n / V;
    for (xp_i64 j = tid; j < nv; j += stride) {
      auto p1 = xp_ldv<V>(s1, j);
      auto p2 = xp_ldv<V>(s2, j);
      XpPack<TO, V> r;
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = Op::f((T)p1.v[k], (T)p2.v[k]);
      reinterpret_cast<XpPack<TO, V>*>(out)[j] = r;
    }
    head = nv * V;
  }
  for (xp_i64 i = head + tid; i < n; i += stride) out[i] = Op::f((T)xp_ld(s1, i), (T)xp_ld(s2, i));
}

template <typename Op, int V, typename S1, typename TO>
__device__ __forceinline__ void xp_contig1(const S1& s1, TO* __restrict__ out, xp_i64 n) {
  typedef typename Op::T T;
  const xp_i64 tid = (xp_i64)blockIdx.x * blockDim.x + threadIdx.x;
  const xp_i64 stride = (xp_i64)gridDim.x * blockDim.x;
  xp_i64 head = 0;
  if (V > 1 && xp_aligned<V>(s1) && ((xp_u64)out % (sizeof(TO) * V)) == 0) {
    const xp_i64 nv = n / V;
    for (xp_i64 j = tid; j < nv; j += stride) {
      auto p1 = xp_ldv<V>(s1, j);
      XpPack<TO, V> r;
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = Op::f((T)p1.v[k]);
      reinterpret_cast<XpPack<TO, V>*>(out)[j] = r;
    }
    head = nv * V;
  }
  for (xp_i64 i = head + tid; i < n; i += stride) out[i] = Op::f((T)xp_ld(s1, i));
}

// Strided/broadcast operands: the output is C-contiguous; each operand is read through its own
// element strides (0 along broadcast axes). Dimensions arrive already collapsed (<= XP_MAXND).
// mg/sf: each dimension's divisor as a multiply and shift (q = (umulhi(r, mg) + r) >> sf, exact
// for r < 2^31): a hardware-free division costs ~20 instructions, and a broadcast of a 3-wide
// inner axis, (4096, 4096, 3), divides twice per element (it ran at 0.52 of torch, whose
// offset calculator divides the same way).
struct XpGeo {
  xp_i64 sh[XP_MAXND], s1[XP_MAXND], s2[XP_MAXND];
  unsigned int mg[XP_MAXND];
  int sf[XP_MAXND];
  int nd;
  // the innermost dimension's extent and operand strides, passed apart: read as sh[nd - 1],
  // an index known only at run time, they put the whole struct in local memory, which every
  // thread then writes (x[::2] + y[::2] of (8192, 8192) float32: 0.145 ms at 16 blocks per
  // SM, 2.27 ms at a block per 256 elements; a kernel without the struct: 0.097 ms)
  xp_i64 inner, in1, in2;
};

// r / sh[d] and r % sh[d]; FAST (IT 32-bit, every r < 2^31) by the multiply and shift
template <bool FAST, typename IT>
__device__ __forceinline__ IT xp_divmod(IT r, const XpGeo& g, int d, IT& c) {
  IT q;
  if constexpr (FAST) q = (IT)((__umulhi((unsigned int)r, g.mg[d]) + (unsigned int)r) >> g.sf[d]);
  else q = r / (IT)g.sh[d];
  c = r - q * (IT)g.sh[d];
  return q;
}

template <bool FAST, typename IT, typename Op, typename S1, typename S2, typename TO>
__device__ __forceinline__ void xp_strided2_loop(const S1& x1, const S2& x2, TO* __restrict__ out,
                                                 IT n, const XpGeo& g) {
  typedef typename Op::T T;
  const IT stride = (IT)gridDim.x * blockDim.x;
  for (IT i = (IT)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    IT r = i;
    xp_i64 o1 = 0, o2 = 0;
#pragma unroll
    for (int d = XP_MAXND - 1; d > 0; --d) {
      if (d < g.nd) {
        IT c;
        r = xp_divmod<FAST>(r, g, d, c);
        o1 += (xp_i64)c * g.s1[d];
        o2 += (xp_i64)c * g.s2[d];
      }
    }
    o1 += (xp_i64)r * g.s1[0];
    o2 += (xp_i64)r * g.s2[0];
    out[i] = Op::f((T)xp_ld(x1, o1), (T)xp_ld(x2, o2));
  }
}

// U neighbours of an operand along the innermost dimension from element offset o (its stride
// there is inner): one vector load where they are contiguous and aligned, one load where the
// operand is broadcast along it, else U loads.
template <int U, typename T>
__device__ __forceinline__ XpPack<T, U> xp_ld_run(const XpArr<T>& s, xp_i64 o, xp_i64 inner) {
  XpPack<T, U> v;
  if (inner == 1 && ((xp_u64)(s.p + o) % (sizeof(T) * U)) == 0) {
    v = *reinterpret_cast<const XpPack<T, U>*>(s.p + o);
  } else if (inner == 0) {
    const T a = s.p[o];
#pragma unroll
    for (int k = 0; k < U; ++k) v.v[k] = a;
  } else {
#pragma unroll
    for (int k = 0; k < U; ++k) v.v[k] = s.p[o + k * inner];
  }
  return v;
}
template <int U, typename T>
__device__ __forceinline__ XpPack<T, U> xp_ld_run(const XpVal<T>& s, xp_i64, xp_i64) {
  return xp_ldv<U>(s, 0);
}

// Runs of U neighbours along the innermost dimension (its length a multiple of U): the
// coordinates are decomposed once per run, each operand read as one vector where it is
// contiguous there, and the run stored as one vector.
template <bool FAST, typename IT, int U, typename Op, typename S1, typename S2, typename TO>
__device__ __forceinline__ void xp_strided2_runs(const S1& x1, const S2& x2,
                                                 TO* __restrict__ out, IT n, const XpGeo& g) {
  typedef typename Op::T T;
  const IT stride = (IT)gridDim.x * blockDim.x;
  const IT nr = n / U;
  const xp_i64 i1 = g.in1, i2 = g.in2;
  for (IT j = (IT)blockIdx.x * blockDim.x + threadIdx.x; j < nr; j += stride) {
    IT r = j * U;
    xp_i64 o1 = 0, o2 = 0;
#pragma unroll
    for (int d = XP_MAXND - 1; d > 0; --d) {
      if (d < g.nd) {
        IT c;
        r = xp_divmod<FAST>(r, g, d, c);
        o1 += (xp_i64)c * g.s1[d];
        o2 += (xp_i64)c * g.s2[d];
      }
    }
    o1 += (xp_i64)r * g.s1[0];
    o2 += (xp_i64)r * g.s2[0];
    const auto a = xp_ld_run<U>(x1, o1, i1);
    const auto b = xp_ld_run<U>(x2, o2, i2);
    XpPack<TO, U> v;
#pragma unroll
    for (int k = 0; k < U; ++k) v.v[k] = Op::f((T)a.v[k], (T)b.v[k]);
    reinterpret_cast<XpPack<TO, U>*>(out)[j] = v;
  }
}

template <typename Op, typename S1, typename S2, typename TO>
__device__ __forceinline__ void xp_strided2(const S1& x1, const S2& x2, TO* __restrict__ out,
                                            xp_i64 n, const XpGeo& g) {
  constexpr int U = sizeof(TO) >= 16 ? 1 : (sizeof(TO) >= 4 ? 16 / (int)sizeof(TO) : 4);
  if (U > 1 && g.nd > 0 && g.inner % U == 0 &&
      ((xp_u64)out % (sizeof(TO) * U)) == 0) {
    if (n < 0x80000000LL)
      xp_strided2_runs<true, unsigned int, U, Op>(x1, x2, out, (unsigned int)n, g);
    else
      xp_strided2_runs<false, xp_u64, U, Op>(x1, x2, out, (xp_u64)n, g);
  } else if (n < 0x80000000LL) {  // 32-bit index arithmetic where it fits: cheaper divisions
    xp_strided2_loop<true, unsigned int, Op>(x1, x2, out, (unsigned int)n, g);
  } else {
    xp_strided2_loop<false, xp_u64, Op>(x1, x2, out, (xp_u64)n, g);
  }
}

template <typename Op, typename S1, typename TO>
__device__ __forceinline__ void xp_strided1(const S1& x1, TO* __restrict__ out, xp_i64 n,
                                            const XpGeo& g) {
  // one operand: the second slot of the geometry is unused
  struct One {
    typedef typename Op::T T;
    static __device__ __forceinline__ TO f(T a, T) { return Op::f(a); }
  };
  xp_strided2<One>(x1, XpVal<typename Op::T>{typename Op::T()}, out, n, g);
}
#endif
