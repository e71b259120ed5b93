// Creation kernels: fill, eye's diagonal, tril/triu, arange, linspace, logspace.
// CPU reference: xp_cuda/_creation.py (NumPy) and xp_cuda/nonstandard.py.
// Every kernel is an extern "C" instance of a template, so the file compiles standalone
// (no -D macros) and one NVRTC compile proves every dtype the launchers can ask for.
//
// Floating arithmetic uses __dmul_rn/__dadd_rn/__ddiv_rn so NVRTC cannot contract
// i*step + start into an FMA: NumPy rounds the product and the sum separately, and integer
// linspace must floor exactly the same double NumPy floors.

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;
struct __align__(8) c64 { float re, im; };
struct __align__(16) c128 { double re, im; };
struct __align__(16) b16 { u64 lo, hi; };

// ---- 16-byte vector stores, grid-stride: one store path for every generator -----------------

template <typename T, typename F>
__device__ __forceinline__ void gen_store(T* __restrict__ out, long long n, const F& f) {
    constexpr int V = sizeof(T) >= 16 ? 1 : 16 / (int)sizeof(T);
    const long long nvec = n / V;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long v = tid; v < nvec; v += stride) {
        union { uint4 u; T t[V]; } buf;
#pragma unroll
        for (int j = 0; j < V; ++j) buf.t[j] = f(v * V + j);
        reinterpret_cast<uint4*>(out)[v] = buf.u;
    }
    for (long long i = nvec * V + tid; i < n; i += stride) out[i] = f(i);
}

// ---- fill: a 16-byte pattern (the value repeated; every itemsize divides 16) -----------------

extern "C" __global__ void xp_fill(unsigned char* __restrict__ out, long long nbytes,
                                   u64 lo, u64 hi) {
    const long long nvec = nbytes / 16;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    uint4 p;
    p.x = (unsigned)lo; p.y = (unsigned)(lo >> 32); p.z = (unsigned)hi; p.w = (unsigned)(hi >> 32);
    uint4* o = reinterpret_cast<uint4*>(out);
    for (long long v = tid; v < nvec; v += stride) o[v] = p;
    for (long long b = nvec * 16 + tid; b < nbytes; b += stride) {
        const int j = (int)(b & 15);
        out[b] = (unsigned char)((j < 8 ? lo >> (8 * j) : hi >> (8 * (j - 8))) & 0xff);
    }
}

// ---- eye: the diagonal after a memset to zero ------------------------------------------------

template <typename T>
__device__ __forceinline__ T from_bits(u64 lo, u64 hi) {
    union { b16 b; T t; } u;
    u.b.lo = lo; u.b.hi = hi;
    return u.t;
}

template <typename T>
__device__ void eye_diag(T* out, long long n_cols, long long r0, long long c0, long long ndiag,
                         u64 lo, u64 hi) {
    const T one = from_bits<T>(lo, hi);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < ndiag; i += stride)
        out[(r0 + i) * n_cols + c0 + i] = one;
}

// ---- tril/triu: bit copy or zero by element size (zero bits are 0, +0.0, False) -------------

template <typename T>
__device__ void tri(const T* __restrict__ x, T* __restrict__ out, long long total,
                    long long rows, long long cols, long long k, int upper) {
    const T zero = from_bits<T>(0, 0);
    const long long mat = rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const long long w = i % mat;
        const long long d = w % cols - w / cols;  // column - row
        const bool keep = upper ? d >= k : d <= k;
        out[i] = keep ? x[i] : zero;
    }
}

#define XP_BY_SIZE(S, T)                                                                        \
    extern "C" __global__ void xp_eye_diag_##S(T* out, long long n_cols, long long r0,          \
                                               long long c0, long long ndiag, u64 lo, u64 hi) { \
        eye_diag<T>(out, n_cols, r0, c0, ndiag, lo, hi);                                        \
    }                                                                                           \
    extern "C" __global__ void xp_tri_##S(const T* x, T* out, long long total, long long rows,   \
                                          long long cols, long long k, int upper) {             \
        tri<T>(x, out, total, rows, cols, k, upper);                                            \
    }
XP_BY_SIZE(1, u8)
XP_BY_SIZE(2, u16)
XP_BY_SIZE(4, u32)
XP_BY_SIZE(8, u64)
XP_BY_SIZE(16, b16)

// ---- conversion of a double (already floored/truncated for integers) to the output type -----

template <typename T> struct Out {
    // integers below 64 bits go through int64: in range by the host's checks, so exact
    static __device__ __forceinline__ T make(double re, double) { return (T)(long long)re; }
};
template <> struct Out<u64> {
    static __device__ __forceinline__ u64 make(double re, double) {
        return re < 0 ? (u64)(long long)re : (u64)re;
    }
};
template <> struct Out<f32> {
    static __device__ __forceinline__ f32 make(double re, double) { return __double2float_rn(re); }
};
template <> struct Out<f64> {
    static __device__ __forceinline__ f64 make(double re, double) { return re; }
};
template <> struct Out<c64> {
    static __device__ __forceinline__ c64 make(double re, double im) {
        c64 c; c.re = __double2float_rn(re); c.im = __double2float_rn(im); return c;
    }
};
template <> struct Out<c128> {
    static __device__ __forceinline__ c128 make(double re, double im) {
        c128 c; c.re = re; c.im = im; return c;
    }
};

template <typename T> struct IsInt { static constexpr bool value = false; };
#define XP_INT(T) template <> struct IsInt<T> { static constexpr bool value = true; };
XP_INT(i8) XP_INT(i16) XP_INT(i32) XP_INT(i64) XP_INT(u8) XP_INT(u16) XP_INT(u32) XP_INT(u64)

// ---- arange: start + i*step (never a running sum) ------------------------------------------

template <typename T>
struct ArangeInt {  // modular uint64 arithmetic: exact, as every value fits T (host checks)
    u64 start, step;
    __device__ T operator()(long long i) const { return (T)(start + (u64)i * step); }
};

template <typename T>
struct ArangeFloat {
    double start, step;
    __device__ T operator()(long long i) const {
        return Out<T>::make(__dadd_rn(__dmul_rn((double)i, step), start), 0.0);
    }
};

// ---- linspace, NumPy 2.x's operations: y = i*step + start (or (i/div)*delta + start when
// step underflows to 0), the last element set to stop, floor for integer dtypes -------------

// (double)i for 0 <= i < 2**52 without the int64 -> double conversion, which issues at a
// quarter of the double-precision FMA rate: i's bits become the mantissa of 2**52 + i.
__device__ __forceinline__ double exact_double(long long i) {
    return __dsub_rn(__hiloint2double(0x43300000 | (int)(i >> 32), (int)(unsigned)i),
                     4503599627370496.0);
}

struct Lin {
    double start, mult, div, stop;
    int mode;  // 0: i*mult + start; 1: (i/div)*mult + start
    __device__ __forceinline__ double at(long long i, bool last) const {
        if (last) return stop;
        const double fi = exact_double(i);
        const double t = mode ? __dmul_rn(__ddiv_rn(fi, div), mult) : __dmul_rn(fi, mult);
        return __dadd_rn(t, start);
    }
};

template <typename T>
struct Linspace {
    Lin re, im;
    long long last;  // index set to stop exactly, or -1
    __device__ T operator()(long long i) const {
        double r = re.at(i, i == last);
        if constexpr (IsInt<T>::value) r = floor(r);
        return Out<T>::make(r, im.at(i, i == last));
    }
};

// ---- logspace: base**y, exact where the exact result is an integer -------------------------

// |b|**e exactly in uint64; false when it does not fit
__device__ __forceinline__ bool ipow_u64(u64 b, u64 e, u64& r) {
    r = 1;
    while (e) {
        if (e & 1) {
            if (__umul64hi(r, b) != 0) return false;
            r *= b;
        }
        e >>= 1;
        if (e) {
            if (b > 0xFFFFFFFFull) return false;  // b*b overflows and is still needed
            b *= b;
        }
    }
    return true;
}

// base**y for a finite base > 0 in about 18 double operations, where the library pow costs
// several times that and made logspace compute-bound (0.20 of memset on the H200).
// t = y * log2(base) in double-double (log2(base) from the host to ~106 bits); t = m + j/128 + r
// with |r| <= 1/256; 2**(j/128) from a host table as hi + lo; 2**r - 1 = r * (c1 + c2 r + ...
// + c5 r**4) with c_k = ln2**k / k! (the next term is below 2**-60). The result is within about
// half an ulp of the exact power. Near the overflow or subnormal range, and for huge |y|: pow.
// Every constant is a kernel parameter (uniform, read from the constant bank: no loads).
// EXP2_ONLY: the host has checked that |y * log2(base)| <= 1014 over the whole grid, so the
// kernel carries no pow (a call whose saved registers cost occupancy even when never taken).
template <bool EXP2_ONLY>
struct Pow2 {
    const double* tab;  // 128 (hi, lo) pairs of 2**(j/128)
    double lh, ll;      // log2(base) = lh + ll
    double c1, c2, c3, c4, c5;
    int fast;           // base finite and > 0
    __device__ __forceinline__ double operator()(double base, double y) const {
        if (EXP2_ONLY || fast) {
            const double th = __dmul_rn(y, lh);
            if (EXP2_ONLY || fabs(th) <= 1015.0) {  // 2**t stays normal; false for NaN
                const double tl = __fma_rn(y, ll, __fma_rn(y, lh, -th));
                // k = rint(128 th) by the 1.5 * 2**52 shifter: the integer lands in the low
                // mantissa bits, no double -> int conversion (quarter rate) needed
                const double kd = __fma_rn(th, 128.0, 6755399441055744.0);
                const int n = __double2loint(kd);
                const double k = __dsub_rn(kd, 6755399441055744.0);
                const double r = __dadd_rn(__fma_rn(k, -0.0078125, th), tl);  // exact th - k/128
                double p = __fma_rn(c5, r, c4);
                p = __fma_rn(p, r, c3);
                p = __fma_rn(p, r, c2);
                p = __fma_rn(p, r, c1);
                p = __dmul_rn(p, r);
                const double hi = tab[2 * (n & 127)], lo = tab[2 * (n & 127) + 1];
                const double v = __dadd_rn(hi, __fma_rn(hi, p, lo));
                // times 2**(n >> 7) by adding to the exponent field (an integer operation)
                return __hiloint2double(__double2hiint(v) + (n >> 7) * 1048576,
                                        __double2loint(v));
            }
        }
        if constexpr (EXP2_ONLY) return 0.0;  // not reached
        else return pow(base, y);
    }
};

template <typename T, bool EXP2_ONLY>
struct Logspace {
    Lin lin;
    long long last;
    double base;
    long long ibase;  // base as an integer when base_is_int
    int base_is_int;
    Pow2<EXP2_ONLY> pow2;
    __device__ T operator()(long long i) const {
        const double y = lin.at(i, i == last);
        constexpr bool is_int = IsInt<T>::value;
        // Integer powers of an integer base in integer arithmetic: exact beyond 2**53 for
        // integer dtypes. Floating results need no such path: Pow2 is within half an ulp
        // and a bit, so a power that is a double comes out as that double.
        if constexpr (is_int) {
            if (base_is_int && y == floor(y) && fabs(y) < 9.2e18) {
                const long long e = (long long)y;
                const u64 ue = e < 0 ? (u64)(-e) : (u64)e;
                const u64 ub = ibase < 0 ? (u64)(-ibase) : (u64)ibase;
                u64 m;
                if (ipow_u64(ub, ue, m)) {
                    const bool neg = ibase < 0 && (ue & 1);
                    if (e >= 0) return (T)(neg ? (u64)(-(long long)m) : m);  // in range (host)
                    // |b**e| <= 1 for e < 0 (b = 0 gives inf, refused by the host)
                    return (T)(m == 1 ? (neg ? -1LL : 1LL) : 0LL);
                }
            }
        }
        double p = pow2(base, y);
        if constexpr (is_int) {
            // a power within a few ulps of an integer is that integer, then truncate as astype
            const double r = rint(p);
            if (r != 0.0 && isfinite(r)) {
                const double a = fabs(r);
                if (fabs(p - r) <= 8.0 * (nextafter(a, __longlong_as_double(0x7ff0000000000000LL)) - a)) p = r;
            }
            p = trunc(p);
        }
        return Out<T>::make(p, 0.0);
    }
};

#define XP_ARANGE_INT(N, T)                                                                 \
    extern "C" __global__ void xp_arange_##N(T* out, long long n, u64 start, u64 step) {    \
        gen_store(out, n, ArangeInt<T>{start, step});                                       \
    }
XP_ARANGE_INT(int8, i8)
XP_ARANGE_INT(int16, i16)
XP_ARANGE_INT(int32, i32)
XP_ARANGE_INT(int64, i64)
XP_ARANGE_INT(uint8, u8)
XP_ARANGE_INT(uint16, u16)
XP_ARANGE_INT(uint32, u32)
XP_ARANGE_INT(uint64, u64)

#define XP_ARANGE_FLOAT(N, T)                                                                 \
    extern "C" __global__ void xp_arange_##N(T* out, long long n, double start, double step) { \
        gen_store(out, n, ArangeFloat<T>{start, step});                                       \
    }
XP_ARANGE_FLOAT(float32, f32)
XP_ARANGE_FLOAT(float64, f64)

// logspace's two kernels (with and without the library pow) share one parameter list
#define XP_LOGSPACE(NAME, T, EXP2_ONLY)                                                        \
    extern "C" __global__ void NAME(                                                           \
        T* out, long long n, double s, double m, double d, double e, int mode, long long last, \
        double base, long long ibase, int base_is_int, const double* tab, double lh,          \
        double ll, double c1, double c2, double c3, double c4, double c5, int fast) {          \
        gen_store(out, n, Logspace<T, EXP2_ONLY>{{s, m, d, e, mode}, last, base, ibase,        \
                                                 base_is_int,                                  \
                                                 {tab, lh, ll, c1, c2, c3, c4, c5, fast}});    \
    }

#define XP_SPACE(N, T)                                                                         \
    extern "C" __global__ void xp_linspace_##N(                                                \
        T* out, long long n, double s_re, double m_re, double d_re, double e_re, int mode_re,  \
        double s_im, double m_im, double d_im, double e_im, int mode_im, long long last) {      \
        gen_store(out, n, Linspace<T>{{s_re, m_re, d_re, e_re, mode_re},                       \
                                      {s_im, m_im, d_im, e_im, mode_im}, last});               \
    }                                                                                          \
    XP_LOGSPACE(xp_logspace_##N, T, false)                                                     \
    XP_LOGSPACE(xp_logspace_exp2_##N, T, true)
XP_SPACE(int8, i8)
XP_SPACE(int16, i16)
XP_SPACE(int32, i32)
XP_SPACE(int64, i64)
XP_SPACE(uint8, u8)
XP_SPACE(uint16, u16)
XP_SPACE(uint32, u32)
XP_SPACE(uint64, u64)
XP_SPACE(float32, f32)
XP_SPACE(float64, f64)
XP_SPACE(complex64, c64)
XP_SPACE(complex128, c128)
