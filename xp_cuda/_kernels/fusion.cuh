// Helpers of the fused kernels (xp_cuda/_kernels/fusion.py), added after elementwise.cuh, whose
// op structs (from the one table OPS) do all the arithmetic; here only conversions between
// dtypes, truth values for all/any, and loads of partial results written by other blocks.
#pragma once

// The runtime sizes, strides and splits of one fused kernel.
template <int K>
struct XpG {
  long long v[K];
};

template <typename To, typename From>
struct XpCvt {
  static __device__ __forceinline__ To f(const From& v) { return (To)v; }
};
#ifdef XP_COMPLEX
template <typename F, typename From>
struct XpCvt<complex<F>, From> {
  static __device__ __forceinline__ complex<F> f(const From& v) { return complex<F>((F)v, (F)0); }
};
template <typename F, typename G>
struct XpCvt<complex<F>, complex<G>> {
  static __device__ __forceinline__ complex<F> f(const complex<G>& v) {
    return complex<F>((F)v.real(), (F)v.imag());
  }
};
#endif
template <typename To, typename From>
__device__ __forceinline__ To xp_cvt(const From& v) { return XpCvt<To, From>::f(v); }

// A value of any type (a scalar, complex, or an accumulator struct) moved down o lanes of the
// warp, four bytes at a time: the trees over the lanes of rows that one warp holds need no
// shared memory and no barrier.
template <typename T>
__device__ __forceinline__ T xp_shfl_down_any(const T& v, int o) {
  unsigned int w[(sizeof(T) + 3) / 4] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < (int)((sizeof(T) + 3) / 4); ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], o);
  T r;
  memcpy(&r, w, sizeof(T));
  return r;
}

// all/any: nonzero is true; NaN counts as true, as the spec says.
template <typename T>
__device__ __forceinline__ bool xp_truth(const T& v) { return v != (T)0; }
#ifdef XP_COMPLEX
template <typename F>
__device__ __forceinline__ bool xp_truth(const complex<F>& v) {
  return v.real() != (F)0 || v.imag() != (F)0;
}
#endif

// Partials of other blocks: read through L2 (L1 is not coherent across blocks).
template <typename T>
__device__ __forceinline__ T xp_ldcg(const T* p) { return __ldcg(p); }
__device__ __forceinline__ bool xp_ldcg(const bool* p) {
  return (bool)__ldcg(reinterpret_cast<const unsigned char*>(p));
}
#ifdef XP_COMPLEX
__device__ __forceinline__ complex<float> xp_ldcg(const complex<float>* p) {
  float2 v = __ldcg(reinterpret_cast<const float2*>(p));
  return complex<float>(v.x, v.y);
}
__device__ __forceinline__ complex<double> xp_ldcg(const complex<double>* p) {
  double2 v = __ldcg(reinterpret_cast<const double2*>(p));
  return complex<double>(v.x, v.y);
}
#endif

// ---- reductions whose accumulator is a small struct ------------------------------------------
// Each is combined by one ordered function, so every grouping of lanes, blocks and splits gives
// the same result (the printer fixes the grouping anyway). __host__ __device__ (XP_HD), so a
// host compiler checks their algebra (tests/test_reduction_kernels.py).

// argmax / argmin: the value and its C-order index in the reduced range. The order: NaN above
// every number (NumPy: NaN is both the max and the min, the first NaN wins), then the value,
// then the lower index; a total order, so the combination is associative and ties keep the
// FIRST occurrence whichever lanes met first. The starting value is the dtype's extreme at
// index LLONG_MAX: any element at a real index beats it, the extreme value included.
template <typename T>
struct XpArg {
  T v;
  long long i;
};
template <typename T, bool MAX>
struct XpArgOp {
  typedef XpArg<T> A;
  static XP_HD A lift(const T& v, long long i) {
    A a;
    a.v = v;
    a.i = i;
    return a;
  }
  static XP_HD A comb(const A& a, const A& b) {
    const bool an = a.v != a.v, bn = b.v != b.v;  // NaN (always false for integers)
    const bool beats = MAX ? b.v > a.v : b.v < a.v;
    const bool tie = b.v == a.v || (an && bn);
    return ((bn && !an) || (!an && beats) || (tie && b.i < a.i)) ? b : a;
  }
  // comb(a, b) of two elements (never the starting value: its extreme would keep a tie) where
  // b's index follows a's (one thread's unrolled elements): a tie keeps a, so the indices need
  // no comparison (about a third of comb's instructions)
  static XP_HD A next(const A& a, const A& b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    const bool beats = MAX ? b.v > a.v : b.v < a.v;
    return ((bn && !an) || (!an && beats)) ? b : a;
  }
};

// var / std: Welford moments (count, mean, sum of squared deviations) in the float type F.
// A run of K elements is taken as one batch (its mean, then its squared deviations from it,
// from registers) and merged by Chan's formula: one division per K elements instead of one per
// element, which keeps the FP64 pipe well under the memory rate (H200: ~67 TFLOP/s FP64 for
// ~1e12 float32 elements/s) while staying a one-pass, shift-free method (no cancellation when
// the mean is large against the spread).
template <typename F>
struct XpMom {
  F n, mean, m2;
};
template <typename F>
struct XpMoments {
  typedef XpMom<F> A;
  static XP_HD A zero() {
    A a;
    a.n = (F)0;
    a.mean = (F)0;
    a.m2 = (F)0;
    return a;
  }
  static XP_HD A lift(const F& v) {
    A a;
    a.n = (F)1;
    a.mean = v;
    a.m2 = (F)0;
    return a;
  }
  template <int K>
  static XP_HD A batch(const F (&v)[K]) {
    F s = (F)0;
#pragma unroll
    for (int q = 0; q < K; ++q) s += v[q];
    const F m = s / (F)K;  // K is a compile-time power of two here: an exact scaling
    F m2 = (F)0;
#pragma unroll
    for (int q = 0; q < K; ++q) {
      const F d = v[q] - m;
      m2 += d * d;
    }
    A a;
    a.n = (F)K;
    a.mean = m;
    a.m2 = m2;
    return a;
  }
  // Chan et al.: the moments of the union of two disjoint sets (a first, then b).
  static XP_HD A comb(const A& a, const A& b) {
    if (b.n == (F)0) return a;
    if (a.n == (F)0) return b;
    A r;
    r.n = a.n + b.n;
    const F d = b.mean - a.mean, wb = b.n / r.n;
    r.mean = a.mean + d * wb;
    r.m2 = a.m2 + b.m2 + d * d * (a.n * wb);
    return r;
  }
  // N - correction <= 0 degrees of freedom: NaN (the spec's rule). An infinite element makes
  // the mean infinite (or NaN) and the two-pass reference's deviation inf - inf NaN, while the
  // merged m2 here would read inf: a non-finite mean gives NaN, as NumPy does.
  static XP_HD F var(const A& a, F correction) {
    const F dof = a.n - correction;
    return (dof > (F)0 && a.mean - a.mean == (F)0) ? a.m2 / dof : (F)xp_nan();
  }
};

template <typename T>
__device__ __forceinline__ XpArg<T> xp_ldcg(const XpArg<T>* p) {
  XpArg<T> a;
  a.v = xp_ldcg(&p->v);
  a.i = __ldcg(&p->i);
  return a;
}
template <typename F>
__device__ __forceinline__ XpMom<F> xp_ldcg(const XpMom<F>* p) {
  XpMom<F> a;
  a.n = __ldcg(&p->n);
  a.mean = __ldcg(&p->mean);
  a.m2 = __ldcg(&p->m2);
  return a;
}
