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
template <typename To, typename From>
__device__ __forceinline__ To xp_cvt(const From& v) { return XpCvt<To, From>::f(v); }

// all/any: nonzero is true; NaN counts as true, as the spec says.
template <typename T>
__device__ __forceinline__ bool xp_truth(const T& v) { return v != (T)0; }
template <typename F>
__device__ __forceinline__ bool xp_truth(const complex<F>& v) {
  return v.real() != (F)0 || v.imag() != (F)0;
}

// Partials of other blocks: read through L2 (L1 is not coherent across blocks).
template <typename T>
__device__ __forceinline__ T xp_ldcg(const T* p) { return __ldcg(p); }
__device__ __forceinline__ bool xp_ldcg(const bool* p) {
  return (bool)__ldcg(reinterpret_cast<const unsigned char*>(p));
}
__device__ __forceinline__ complex<float> xp_ldcg(const complex<float>* p) {
  float2 v = __ldcg(reinterpret_cast<const float2*>(p));
  return complex<float>(v.x, v.y);
}
__device__ __forceinline__ complex<double> xp_ldcg(const complex<double>* p) {
  double2 v = __ldcg(reinterpret_cast<const double2*>(p));
  return complex<double>(v.x, v.y);
}
