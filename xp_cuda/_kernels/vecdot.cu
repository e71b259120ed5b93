// vecdot: out[o] = sum_k conj(x1[o, k]) * x2[o, k] over any strided / broadcast layout.
//
// One kernel family, launched by xp_cuda/_kernels/vecdot.py:
//   vecdot_main    G lanes reduce one output; GPB = 256 / G outputs per block. kfast = 1: lanes
//                  are adjacent threads and walk the contraction (contiguous rows, long vectors);
//                  kfast = 0: adjacent threads are adjacent outputs, coalesced when the
//                  contraction is not the fastest memory axis (G = 1 is thread per output).
//                  gridDim.y = S splits the contraction; then each block writes an ACC partial.
//   vecdot_finish  reduces the S partials of each output in a fixed order (deterministic).
// Inputs are read as their own types through byte strides (stride 0 = broadcast, negative
// allowed) and converted in registers: no cast or broadcast copy is ever made.
//
// Macros (defaults make the file compile standalone for CI): T1, T2 input C types, RT the
// result type, UNROLL scalar loads in flight per lane and input, VEC elements per vector load.
//   vecdot_vec     vecdot_main (kfast) with VEC-wide loads: contiguous, aligned rows.
//   vecdot_vecout  thread per VEC adjacent outputs with VEC-wide loads: batch-fast layouts.
//   vecdot_rows    contiguous rows of <= 16 bytes, G whole rows per thread in registers.
#include <cupy/complex.cuh>

#ifndef T1
#define T1 float
#endif
#ifndef T2
#define T2 float
#endif
#ifndef RT
#define RT float
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef VEC
#define VEC 4
#endif
#define VD_VU 4

#define VD_MAXD 32
#define VD_THREADS 256
#define VD_NACC (UNROLL < 4 ? UNROLL : 4)

// Batch (non-contracted) dims after the launcher merged and ordered them; byte strides.
struct VdLayout {
    long long shape[VD_MAXD];
    long long s1[VD_MAXD];
    long long s2[VD_MAXD];
};

struct cacc {  // complex accumulator: always double precision
    double re, im;
};

// ---- accumulator type from the result type ------------------------------------------------
// Integers wrap like the result dtype: accumulate in an unsigned type at least as wide (the low
// bits of sums of products only depend on the low bits of the operands). Real floating results
// accumulate in double, complex ones in a pair of doubles.
template <class R> struct AccOf { typedef double type; };
template <> struct AccOf<complex<float> > { typedef cacc type; };
template <> struct AccOf<complex<double> > { typedef cacc type; };
template <> struct AccOf<signed char> { typedef unsigned int type; };
template <> struct AccOf<unsigned char> { typedef unsigned int type; };
template <> struct AccOf<short> { typedef unsigned int type; };
template <> struct AccOf<unsigned short> { typedef unsigned int type; };
template <> struct AccOf<int> { typedef unsigned int type; };
template <> struct AccOf<unsigned int> { typedef unsigned int type; };
template <> struct AccOf<long long> { typedef unsigned long long type; };
template <> struct AccOf<unsigned long long> { typedef unsigned long long type; };

typedef AccOf<RT>::type ACC;

// ---- the value an input element becomes in registers ----------------------------------------
// Integers: modular conversion to the unsigned accumulator (sign/zero extension as C++ does
// from the input's own type). Reals: double. Complex inputs: cacc; real inputs stay real under
// a complex accumulator (conj of a real is itself, and half the multiplies vanish).
template <class T, class A> struct Val {
    typedef A type;
    static __device__ __forceinline__ A get(T x) { return static_cast<A>(x); }
};
template <class T> struct Val<T, cacc> {
    typedef double type;
    static __device__ __forceinline__ double get(T x) { return static_cast<double>(x); }
};
template <> struct Val<complex<float>, cacc> {
    typedef cacc type;
    static __device__ __forceinline__ cacc get(complex<float> x) {
        cacc c; c.re = x.real(); c.im = x.imag(); return c;
    }
};
template <> struct Val<complex<double>, cacc> {
    typedef cacc type;
    static __device__ __forceinline__ cacc get(complex<double> x) {
        cacc c; c.re = x.real(); c.im = x.imag(); return c;
    }
};

typedef Val<T1, ACC>::type V1;
typedef Val<T2, ACC>::type V2;

// ---- acc += conj(a) * b ------------------------------------------------------------------------
__device__ __forceinline__ void mac(unsigned int& acc, unsigned int a, unsigned int b) {
    acc += a * b;
}
__device__ __forceinline__ void mac(unsigned long long& acc, unsigned long long a,
                                    unsigned long long b) { acc += a * b; }
__device__ __forceinline__ void mac(double& acc, double a, double b) { acc = fma(a, b, acc); }
__device__ __forceinline__ void mac(cacc& acc, double a, double b) { acc.re = fma(a, b, acc.re); }
__device__ __forceinline__ void mac(cacc& acc, double a, cacc b) {
    acc.re = fma(a, b.re, acc.re);
    acc.im = fma(a, b.im, acc.im);
}
__device__ __forceinline__ void mac(cacc& acc, cacc a, double b) {
    acc.re = fma(a.re, b, acc.re);
    acc.im = fma(-a.im, b, acc.im);
}
__device__ __forceinline__ void mac(cacc& acc, cacc a, cacc b) {
    acc.re = fma(a.re, b.re, fma(a.im, b.im, acc.re));
    acc.im = fma(a.re, b.im, fma(-a.im, b.re, acc.im));
}

__device__ __forceinline__ unsigned int add(unsigned int a, unsigned int b) { return a + b; }
__device__ __forceinline__ unsigned long long add(unsigned long long a, unsigned long long b) {
    return a + b;
}
__device__ __forceinline__ double add(double a, double b) { return a + b; }
__device__ __forceinline__ cacc add(cacc a, cacc b) {
    cacc c; c.re = a.re + b.re; c.im = a.im + b.im; return c;
}

__device__ __forceinline__ unsigned int shfl_xor(unsigned int v, int m) {
    return __shfl_xor_sync(0xffffffffu, v, m);
}
__device__ __forceinline__ unsigned long long shfl_xor(unsigned long long v, int m) {
    return __shfl_xor_sync(0xffffffffu, v, m);
}
__device__ __forceinline__ double shfl_xor(double v, int m) {
    return __shfl_xor_sync(0xffffffffu, v, m);
}
__device__ __forceinline__ cacc shfl_xor(cacc v, int m) {
    cacc c;
    c.re = __shfl_xor_sync(0xffffffffu, v.re, m);
    c.im = __shfl_xor_sync(0xffffffffu, v.im, m);
    return c;
}

// ---- final conversion to the result type ------------------------------------------------------
template <class R> __device__ __forceinline__ R to_result(double a) { return static_cast<R>(a); }
template <class R> __device__ __forceinline__ R to_result(unsigned int a) {
    return static_cast<R>(a);
}
template <class R> __device__ __forceinline__ R to_result(unsigned long long a) {
    return static_cast<R>(a);
}
template <class R> __device__ __forceinline__ R to_result(cacc a) {
    typedef typename R::value_type F;
    return R(static_cast<F>(a.re), static_cast<F>(a.im));
}

// Byte offsets of output o in each input (row-major order over the batch dims).
__device__ __forceinline__ void batch_offsets(const VdLayout& L, int nb, long long o,
                                              long long& off1, long long& off2) {
    off1 = 0;
    off2 = 0;
    if (nb == 0) return;
    long long rem = o;
    for (int d = nb - 1; d > 0; --d) {
        long long n = L.shape[d], q, i;
        if (rem < 4294967296LL && n < 4294967296LL) {  // 32-bit division is far cheaper
            unsigned int r32 = (unsigned int)rem, n32 = (unsigned int)n;
            q = r32 / n32;
            i = r32 - (unsigned int)q * n32;
        } else {
            q = rem / n;
            i = rem - q * n;
        }
        off1 += i * L.s1[d];
        off2 += i * L.s2[d];
        rem = q;
    }
    off1 += rem * L.s1[0];
    off2 += rem * L.s2[0];
}

// Combine a lane's accumulators pairwise, reduce the G lanes of each group in a fixed order and
// let lane 0 store: RT to out when gridDim.y == 1, else the ACC partial of this split.
__device__ __forceinline__ ACC combine(const ACC* acc) {
    ACC c[VD_NACC];
#pragma unroll
    for (int i = 0; i < VD_NACC; ++i) c[i] = acc[i];
#pragma unroll
    for (int w = 1; w < VD_NACC; w *= 2)
#pragma unroll
        for (int i = 0; i + w < VD_NACC; i += 2 * w) c[i] = add(c[i], c[i + w]);
    return c[0];
}

__device__ __forceinline__ void reduce_store(ACC r, ACC* sm, int t, int lane, int lg, int kfast,
                                             long long o, long long M, RT* __restrict__ out,
                                             ACC* __restrict__ part) {
    const int G = 1 << lg;
    if (kfast && G <= 32) {
        // Lanes of a group are adjacent in one warp: butterfly within the group.
        for (int m = G >> 1; m > 0; m >>= 1) r = add(r, shfl_xor(r, m));
    } else if (G > 1) {
        // Lanes span warps: a fixed-shape tree in shared memory.
        const int ls = kfast ? 1 : (VD_THREADS >> lg);  // distance between adjacent lanes
        sm[t] = r;
        __syncthreads();
        for (int s = G >> 1; s > 0; s >>= 1) {
            if (lane < s) sm[t] = add(sm[t], sm[t + s * ls]);
            __syncthreads();
        }
        r = sm[t];
    }
    if (lane == 0 && o < M) {
        if (gridDim.y == 1) out[o] = to_result<RT>(r);
        else part[o * gridDim.y + blockIdx.y] = r;
    }
}

// G is a power of two <= VD_THREADS (log2 in lg); blockDim.x == VD_THREADS.
// S == 1: writes RT results to out. S > 1: writes ACC partials to part[o * S + split].
extern "C" __global__ void __launch_bounds__(VD_THREADS)
vecdot_main(const char* __restrict__ x1, const char* __restrict__ x2, RT* __restrict__ out,
            ACC* __restrict__ part, const VdLayout L, int nb, long long M, long long K,
            long long ks1, long long ks2, int lg, int kfast, long long chunk) {
    __shared__ ACC sm[VD_THREADS];
    const int G = 1 << lg;
    const int gpb = VD_THREADS >> lg;
    const int t = threadIdx.x;
    int lane, group;
    if (kfast) { lane = t & (G - 1); group = t >> lg; }
    else { group = t & (gpb - 1); lane = t >> (8 - lg); }  // VD_THREADS == 1 << 8
    const long long o = (long long)blockIdx.x * gpb + group;
    const long long kbeg = (long long)blockIdx.y * chunk;
    const long long kend = min(K, kbeg + chunk);

    ACC acc[VD_NACC];
#pragma unroll
    for (int i = 0; i < VD_NACC; ++i) acc[i] = ACC();

    if (o < M) {
        long long off1, off2;
        batch_offsets(L, nb, o, off1, off2);
        const long long k0 = kbeg + lane;
        const char* p1 = x1 + off1 + k0 * ks1;
        const char* p2 = x2 + off2 + k0 * ks2;
        const long long st1 = ks1 << lg, st2 = ks2 << lg;
        const long long step = (long long)UNROLL << lg;
        long long k = k0;
        // Full rounds: all UNROLL loads of both inputs are issued before any use, so memory
        // latency is paid once per round.
        for (; k + step - G < kend; k += step) {
            V1 a[UNROLL];
            V2 b[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                a[u] = Val<T1, ACC>::get(*(const T1*)(p1 + u * st1));
                b[u] = Val<T2, ACC>::get(*(const T2*)(p2 + u * st2));
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) mac(acc[u % VD_NACC], a[u], b[u]);
            p1 += UNROLL * st1;
            p2 += UNROLL * st2;
        }
        if (k < kend) {  // the last, partial round: predicated loads, zeros elsewhere
            V1 a[UNROLL];
            V2 b[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const bool in = k + ((long long)u << lg) < kend;
                a[u] = in ? Val<T1, ACC>::get(*(const T1*)(p1 + u * st1)) : V1();
                b[u] = in ? Val<T2, ACC>::get(*(const T2*)(p2 + u * st2)) : V2();
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) mac(acc[u % VD_NACC], a[u], b[u]);
        }
    }
    reduce_store(combine(acc), sm, t, lane, lg, kfast, o, M, out, part);
}

// ---- vectorised variants: the launcher uses them when rows are contiguous and aligned --------
// VEC elements per load (16 bytes for the wider input at most), VD_VU loads in flight per lane.
template <class T, int N> struct alignas(sizeof(T) * N) VecT { T v[N]; };
typedef VecT<T1, VEC> W1;
typedef VecT<T2, VEC> W2;

// As vecdot_main with kfast = 1, for a contraction contiguous in both inputs (byte stride =
// itemsize); every row segment starts VEC-aligned (the launcher checks base pointers, batch
// strides and chunk). Lane l reads vectors l, l + G, ...; the < VEC trailing elements are scalar.
extern "C" __global__ void __launch_bounds__(VD_THREADS, 4)
vecdot_vec(const char* __restrict__ x1, const char* __restrict__ x2, RT* __restrict__ out,
           ACC* __restrict__ part, const VdLayout L, int nb, long long M, long long K,
           int lg, long long chunk) {
    __shared__ ACC sm[VD_THREADS];
    const int G = 1 << lg;
    const int t = threadIdx.x;
    const int lane = t & (G - 1);
    const long long o = (long long)blockIdx.x * (VD_THREADS >> lg) + (t >> lg);
    const long long kbeg = (long long)blockIdx.y * chunk;
    const long long len = min(K, kbeg + chunk) - kbeg;

    ACC acc[VD_NACC];
#pragma unroll
    for (int i = 0; i < VD_NACC; ++i) acc[i] = ACC();

    if (o < M) {
        long long off1, off2;
        batch_offsets(L, nb, o, off1, off2);
        const T1* r1 = (const T1*)(x1 + off1) + kbeg;
        const T2* r2 = (const T2*)(x2 + off2) + kbeg;
        const W1* v1 = (const W1*)r1;
        const W2* v2 = (const W2*)r2;
        const long long nv = len / VEC;
        long long j = lane;
        for (; j + (long long)(VD_VU - 1) * G < nv; j += (long long)VD_VU * G) {
            W1 a[VD_VU];
            W2 b[VD_VU];
#pragma unroll
            for (int u = 0; u < VD_VU; ++u) {
                a[u] = v1[j + (long long)u * G];
                b[u] = v2[j + (long long)u * G];
            }
#pragma unroll
            for (int u = 0; u < VD_VU; ++u)
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    mac(acc[(u * VEC + e) % VD_NACC], Val<T1, ACC>::get(a[u].v[e]),
                        Val<T2, ACC>::get(b[u].v[e]));
        }
        for (; j < nv; j += G) {
            const W1 a = v1[j];
            const W2 b = v2[j];
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                mac(acc[e % VD_NACC], Val<T1, ACC>::get(a.v[e]), Val<T2, ACC>::get(b.v[e]));
        }
        // The < VEC trailing elements (G may be smaller than VEC - 1).
        for (long long k = nv * VEC + lane; k < len; k += G)
            mac(acc[0], Val<T1, ACC>::get(r1[k]), Val<T2, ACC>::get(r2[k]));
    }
    reduce_store(combine(acc), sm, t, lane, lg, 1, o, M, out, part);
}

// Thread per VEC adjacent outputs (batch-fast layouts): the innermost batch dim is contiguous
// in both inputs, its size a multiple of VEC, everything VEC-aligned (the launcher checks).
// Each lane walks its split of the contraction with VD_VU vector loads per input in flight.
extern "C" __global__ void __launch_bounds__(VD_THREADS, VEC > 1 ? 4 : 2)
vecdot_vecout(const char* __restrict__ x1, const char* __restrict__ x2, RT* __restrict__ out,
              ACC* __restrict__ part, const VdLayout L, int nb, long long M, long long K,
              long long ks1, long long ks2, long long chunk) {
    const long long o = ((long long)blockIdx.x * VD_THREADS + threadIdx.x) * VEC;
    if (o >= M) return;
    const long long kbeg = (long long)blockIdx.y * chunk;
    const long long kend = min(K, kbeg + chunk);
    long long off1, off2;
    batch_offsets(L, nb, o, off1, off2);
    const char* p1 = x1 + off1 + kbeg * ks1;
    const char* p2 = x2 + off2 + kbeg * ks2;
    ACC acc[2][VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) { acc[0][e] = ACC(); acc[1][e] = ACC(); }
    long long k = kbeg;
    for (; k + VD_VU <= kend; k += VD_VU) {
        W1 a[VD_VU];
        W2 b[VD_VU];
#pragma unroll
        for (int u = 0; u < VD_VU; ++u) {
            a[u] = *(const W1*)(p1 + u * ks1);
            b[u] = *(const W2*)(p2 + u * ks2);
        }
#pragma unroll
        for (int u = 0; u < VD_VU; ++u)
#pragma unroll
            for (int e = 0; e < VEC; ++e)
                mac(acc[u & 1][e], Val<T1, ACC>::get(a[u].v[e]), Val<T2, ACC>::get(b[u].v[e]));
        p1 += VD_VU * ks1;
        p2 += VD_VU * ks2;
    }
    for (; k < kend; ++k) {
        const W1 a = *(const W1*)p1;
        const W2 b = *(const W2*)p2;
#pragma unroll
        for (int e = 0; e < VEC; ++e)
            mac(acc[0][e], Val<T1, ACC>::get(a.v[e]), Val<T2, ACC>::get(b.v[e]));
        p1 += ks1;
        p2 += ks2;
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
        const ACC r = add(acc[0][e], acc[1][e]);
        if (gridDim.y == 1) out[o + e] = to_result<RT>(r);
        else part[(o + e) * gridDim.y + blockIdx.y] = r;
    }
}

// ---- short rows in registers: rows of at most 16 bytes per input, contiguous in both ---------
// A thread takes G whole rows: the fewest whose bytes are whole 16-byte words in both inputs
// (W1 and W2 words). It issues all W1 + W2 loads before any arithmetic and writes its G results
// together. On the H200 this reads (16M, 3) float32 at 0.90 of the copy rate, where staging
// through shared memory reached 0.84 (the block's barrier stalls its loads).
// B2 (vecdot_rowsb): x2 is one row every row of x1 meets (a matrix times a vector, matmul's
// route): each thread holds its K elements, loaded once, and G counts x1's words only. The
// general kernel read (16M, 4) float32 times a vector at 0.36 of the copy rate, one element a
// load.
__host__ __device__ constexpr int vd_rows_g(int bytes) {
    return bytes % 16 == 0 ? 1 : bytes % 8 == 0 ? 2 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 8 : 16;
}
#define VD_ROWBYTES 16
#define VD_ROWS_MAXW 16  // W1 + W2 above this (odd int8 rows): the launcher uses vecdot_main

template <int K, bool B2>
__device__ __forceinline__ void rows_k(const char* __restrict__ x1, const char* __restrict__ x2,
                                       RT* __restrict__ out, long long M) {
    constexpr int G1 = vd_rows_g(K * (int)sizeof(T1)), G2 = B2 ? 1 : vd_rows_g(K * (int)sizeof(T2));
    constexpr int G = G1 > G2 ? G1 : G2;
    constexpr int W1 = G * K * (int)sizeof(T1) / 16, W2 = B2 ? 0 : G * K * (int)sizeof(T2) / 16;
    if constexpr (K * sizeof(T1) <= VD_ROWBYTES && (B2 || K * sizeof(T2) <= VD_ROWBYTES) &&
                  W1 + W2 <= VD_ROWS_MAXW) {
        const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        const long long r0 = g * G;
        if (r0 >= M) return;
        T2 b2[K];  // B2: the one row of x2
        if constexpr (B2) {
#pragma unroll
            for (int e = 0; e < K; ++e) b2[e] = reinterpret_cast<const T2*>(x2)[e];
        }
        if (r0 + G <= M) {
            uint4 w1[W1], w2[W2 > 0 ? W2 : 1];
            const uint4* p1 = reinterpret_cast<const uint4*>(x1) + g * W1;
#pragma unroll
            for (int w = 0; w < W1; ++w) w1[w] = p1[w];
            if constexpr (!B2) {
                const uint4* p2 = reinterpret_cast<const uint4*>(x2) + g * W2;
#pragma unroll
                for (int w = 0; w < W2; ++w) w2[w] = p2[w];
            }
            const T1* e1 = reinterpret_cast<const T1*>(w1);
            const T2* e2 = reinterpret_cast<const T2*>(w2);
            constexpr int OB = G * (int)sizeof(RT);  // result bytes: one vector store if 8 or 16
            constexpr int OW = OB == 16 || OB == 8 ? OB / 8 : 0;
            union Res {
                unsigned long long u[OW > 0 ? OW : 1];
                char b[OB];
            } res;
#pragma unroll
            for (int j = 0; j < G; ++j) {
                ACC acc = ACC();
#pragma unroll
                for (int e = 0; e < K; ++e)
                    mac(acc, Val<T1, ACC>::get(e1[j * K + e]),
                        Val<T2, ACC>::get(B2 ? b2[e] : e2[j * K + e]));
                const RT r = to_result<RT>(acc);
                if constexpr (OW > 0) memcpy(res.b + j * sizeof(RT), &r, sizeof(RT));
                else out[r0 + j] = r;
            }
            if constexpr (OW == 2) {
                if (((unsigned long long)(out + r0) & 15) == 0) {
                    *reinterpret_cast<ulonglong2*>(out + r0) = make_ulonglong2(res.u[0], res.u[OW - 1]);
                    return;
                }
            } else if constexpr (OW == 1) {
                if (((unsigned long long)(out + r0) & 7) == 0) {
                    *reinterpret_cast<unsigned long long*>(out + r0) = res.u[0];
                    return;
                }
            }
            if constexpr (OW > 0) {
#pragma unroll
                for (int j = 0; j < G; ++j) memcpy(out + r0 + j, res.b + j * sizeof(RT), sizeof(RT));
            }
        } else {  // the last rows of the last thread
            const T1* a = reinterpret_cast<const T1*>(x1);
            const T2* b = reinterpret_cast<const T2*>(x2);
            for (long long r = r0; r < M; ++r) {
                ACC acc = ACC();
#pragma unroll
                for (int e = 0; e < K; ++e)
                    mac(acc, Val<T1, ACC>::get(a[r * K + e]),
                        Val<T2, ACC>::get(B2 ? b2[e] : b[r * K + e]));
                out[r] = to_result<RT>(acc);
            }
        }
    }
}

#define VD_ROWS_CASES(B2)                                     \
    switch (K) {  /* the launcher only asks for row lengths rows_k accepts */ \
        case 1: rows_k<1, B2>(x1, x2, out, M); break;          \
        case 2: rows_k<2, B2>(x1, x2, out, M); break;          \
        case 3: rows_k<3, B2>(x1, x2, out, M); break;          \
        case 4: rows_k<4, B2>(x1, x2, out, M); break;          \
        case 5: rows_k<5, B2>(x1, x2, out, M); break;          \
        case 6: rows_k<6, B2>(x1, x2, out, M); break;          \
        case 7: rows_k<7, B2>(x1, x2, out, M); break;          \
        case 8: rows_k<8, B2>(x1, x2, out, M); break;          \
        case 9: rows_k<9, B2>(x1, x2, out, M); break;          \
        case 10: rows_k<10, B2>(x1, x2, out, M); break;        \
        case 11: rows_k<11, B2>(x1, x2, out, M); break;        \
        case 12: rows_k<12, B2>(x1, x2, out, M); break;        \
        case 13: rows_k<13, B2>(x1, x2, out, M); break;        \
        case 14: rows_k<14, B2>(x1, x2, out, M); break;        \
        case 15: rows_k<15, B2>(x1, x2, out, M); break;        \
        case 16: rows_k<16, B2>(x1, x2, out, M); break;        \
    }

extern "C" __global__ void __launch_bounds__(VD_THREADS)
vecdot_rows(const char* __restrict__ x1, const char* __restrict__ x2, RT* __restrict__ out,
            long long M, int K) {
    VD_ROWS_CASES(false)
}

extern "C" __global__ void __launch_bounds__(VD_THREADS)
vecdot_rowsb(const char* __restrict__ x1, const char* __restrict__ x2, RT* __restrict__ out,
             long long M, int K) {
    VD_ROWS_CASES(true)
}

// One block per output: reduce its S partials (strided per thread, then a tree) into RT.
extern "C" __global__ void __launch_bounds__(VD_THREADS)
vecdot_finish(const ACC* __restrict__ part, RT* __restrict__ out, long long S) {
    __shared__ ACC sm[VD_THREADS];
    const int t = threadIdx.x;
    const long long o = blockIdx.x;
    ACC r = ACC();
    for (long long s = t; s < S; s += VD_THREADS) r = add(r, part[o * S + s]);
    sm[t] = r;
    __syncthreads();
    for (int w = VD_THREADS >> 1; w > 0; w >>= 1) {
        if (t < w) sm[t] = add(sm[t], sm[t + w]);
        __syncthreads();
    }
    if (t == 0) out[o] = to_result<RT>(sm[0]);
}
