// Prefix sums and products, stream compaction: cumulative_sum, cumulative_prod, nonzero,
// x[mask], x[mask] = v, repeat.
// CPU reference: NumPy (np.cumsum / np.cumprod after astype, np.nonzero, x[mask], np.repeat).
// Launchers and the dtype table: scan.py. Every kernel is an extern "C" instance of a
// template (pre-instantiated names), so one NVRTC compile proves every name a launcher asks for.
//
// Types: A is the stored accumulator (out dtype), I the input, W the working type; Op the
// combine (Add or Mul, below). Integer sums and products wrap modulo 2**bits, so signed and
// unsigned of one width share the unsigned kernels (the launcher views int data as uint; the
// low bits of a product do not depend on the sign), and u8/u16 work in u32 and truncate on
// store (truncation commutes with + and * mod 2**bits). Complex is a plain pair. Products of
// float32 work in float64 (fusion_plan.WIDER_PRODUCT, as prod does).

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

#define FULL 0xffffffffu
#define THREADS 256
#define WARPS (THREADS / 32)

__device__ __forceinline__ c64 operator+(c64 a, c64 b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ c128 operator+(c128 a, c128 b) { return {a.re + b.re, a.im + b.im}; }
// NumPy's complex product (ac - bd, ad + bc), each operation rounded on its own: the _rn
// intrinsics are never contracted into FMAs, so the rounding is NumPy's whatever -fmad says.
__device__ __forceinline__ c64 operator*(c64 a, c64 b) {
    return {__fsub_rn(__fmul_rn(a.re, b.re), __fmul_rn(a.im, b.im)),
            __fadd_rn(__fmul_rn(a.re, b.im), __fmul_rn(a.im, b.re))}; }
__device__ __forceinline__ c128 operator*(c128 a, c128 b) {
    return {__dsub_rn(__dmul_rn(a.re, b.re), __dmul_rn(a.im, b.im)),
            __dadd_rn(__dmul_rn(a.re, b.im), __dmul_rn(a.im, b.re))}; }

// zero(): the identity of the sum. For floats that is -0.0, not +0.0 (x + -0.0 == x for
// every x, -0.0 included), so padding and empty prefixes keep NumPy's sign of zero exactly.
template <typename T> __device__ __forceinline__ T zero() { return T(0); }
template <> __device__ __forceinline__ f32 zero<f32>() { return -0.0f; }
template <> __device__ __forceinline__ f64 zero<f64>() { return -0.0; }
template <> __device__ __forceinline__ c64 zero<c64>() { return {-0.0f, -0.0f}; }
template <> __device__ __forceinline__ c128 zero<c128>() { return {-0.0, -0.0}; }
// the leading 0 of include_initial: +0, as NumPy writes it
template <typename T> __device__ __forceinline__ T initial() { return T(0); }
template <> __device__ __forceinline__ c64 initial<c64>() { return {0.f, 0.f}; }
template <> __device__ __forceinline__ c128 initial<c128>() { return {0.0, 0.0}; }

// the multiplicative identity (padding of a product's partial tiles, include_initial's 1)
template <typename T> __device__ __forceinline__ T one() { return T(1); }
template <> __device__ __forceinline__ c64 one<c64>() { return {1.f, 0.f}; }
template <> __device__ __forceinline__ c128 one<c128>() { return {1.0, 0.0}; }

// The combine of a scan. id() pads the elements past a row's end (they only ever reach
// positions past the end); first() is include_initial's leading value. The kernels combine
// two values only where both hold elements of the row, never an identity with an element:
// (1 + 0j) * z is not z when z has an infinite part, so a padded product would not be exact.
// For sums that changes nothing (-0.0 + v == v for every v).
struct Add {
    template <typename W> static __device__ __forceinline__ W f(W a, W b) { return a + b; }
    template <typename W> static __device__ __forceinline__ W id() { return zero<W>(); }
    template <typename A> static __device__ __forceinline__ A first() { return initial<A>(); }
};
struct Mul {
    template <typename W> static __device__ __forceinline__ W f(W a, W b) { return a * b; }
    template <typename W> static __device__ __forceinline__ W id() { return one<W>(); }
    template <typename A> static __device__ __forceinline__ A first() { return one<A>(); }
};

// Working type: u8/u16 sums run in u32 (shuffles and atomics are 32-bit anyway).
template <typename A> struct Work { typedef A type; };
template <> struct Work<u8> { typedef u32 type; };
template <> struct Work<u16> { typedef u32 type; };

// Input element -> working type: C conversion (sign-extends signed ints into u64, bool -> 0/1,
// f32 -> f64 exactly). Cast-first semantics: each element converts before it is added.
template <typename W, typename I> __device__ __forceinline__ W cvt(I v) { return (W)v; }

// ---- shuffles of every working type ----------------------------------------------------------
__device__ __forceinline__ u32 shup(u32 v, int d, int w) { return __shfl_up_sync(FULL, v, d, w); }
__device__ __forceinline__ u64 shup(u64 v, int d, int w) { return __shfl_up_sync(FULL, v, d, w); }
__device__ __forceinline__ f32 shup(f32 v, int d, int w) { return __shfl_up_sync(FULL, v, d, w); }
__device__ __forceinline__ f64 shup(f64 v, int d, int w) { return __shfl_up_sync(FULL, v, d, w); }
__device__ __forceinline__ c64 shup(c64 v, int d, int w) {
    return {__shfl_up_sync(FULL, v.re, d, w), __shfl_up_sync(FULL, v.im, d, w)}; }
__device__ __forceinline__ c128 shup(c128 v, int d, int w) {
    return {__shfl_up_sync(FULL, v.re, d, w), __shfl_up_sync(FULL, v.im, d, w)}; }
__device__ __forceinline__ u32 shix(u32 v, int s, int w) { return __shfl_sync(FULL, v, s, w); }
__device__ __forceinline__ u64 shix(u64 v, int s, int w) { return __shfl_sync(FULL, v, s, w); }
__device__ __forceinline__ f32 shix(f32 v, int s, int w) { return __shfl_sync(FULL, v, s, w); }
__device__ __forceinline__ f64 shix(f64 v, int s, int w) { return __shfl_sync(FULL, v, s, w); }
__device__ __forceinline__ c64 shix(c64 v, int s, int w) {
    return {__shfl_sync(FULL, v.re, s, w), __shfl_sync(FULL, v.im, s, w)}; }
__device__ __forceinline__ c128 shix(c128 v, int s, int w) {
    return {__shfl_sync(FULL, v.re, s, w), __shfl_sync(FULL, v.im, s, w)}; }

// Inclusive scan across groups of `width` lanes (a power of two <= 32).
template <typename Op, typename W>
__device__ __forceinline__ W group_incl(W v, int lane_in_group, int width) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        if (d >= width) break;
        W o = shup(v, d, width);
        if (lane_in_group >= d) v = Op::f(v, o);
    }
    return v;
}

// ---- raw vector memory: V elements of T as one 1/2/4/8/16-byte access -----------------------
template <int B> struct Word;
template <> struct Word<1> { typedef u8 t; };
template <> struct Word<2> { typedef u16 t; };
template <> struct Word<4> { typedef u32 t; };
template <> struct Word<8> { typedef uint2 t; };
template <> struct Word<16> { typedef uint4 t; };

template <typename T, int V>
__device__ __forceinline__ void vload(const T* p, T (&v)[V]) {
    typedef typename Word<sizeof(T) * V>::t Wd;
    union { Wd w; T t[V]; } u;
    u.w = *reinterpret_cast<const Wd*>(p);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = u.t[j];
}

template <typename T, int V>
__device__ __forceinline__ void vstore(T* p, const T (&v)[V]) {
    typedef typename Word<sizeof(T) * V>::t Wd;
    union { Wd w; T t[V]; } u;
#pragma unroll
    for (int j = 0; j < V; ++j) u.t[j] = v[j];
    *reinterpret_cast<Wd*>(p) = u.w;
}

// L2-coherent loads/stores of look-back values (never a stale L1 line), as raw words.
template <int B> struct Raw;  // the word type a B-byte look-back value travels as
template <> struct Raw<4> { typedef unsigned t; };
template <> struct Raw<8> { typedef unsigned long long t; };
template <> struct Raw<16> { typedef uint4 t; };
template <typename W> __device__ __forceinline__ void st_cg(W* p, W v) {
    typedef typename Raw<sizeof(W)>::t R;
    __stcg(reinterpret_cast<R*>(p), *reinterpret_cast<R*>(&v));
}
template <typename W> __device__ __forceinline__ W ld_cg(const W* p) {
    typedef typename Raw<sizeof(W)>::t R;
    W v;
    *reinterpret_cast<R*>(&v) = __ldcg(reinterpret_cast<const R*>(p));
    return v;
}

// ================================================================================================
// 1. Single-pass decoupled look-back scan of rows of length n (rows * tiles_per_row tiles).
//
// Why: one read and one write of the data (CUB's scheme, what torch runs): a tile publishes its
// aggregate, then looks back over its predecessors' published (flag, value) pairs until it meets
// an inclusive prefix. Tile ids come from an atomic counter in launch order, so every tile a
// block waits on has already started: progress is guaranteed whatever the scheduler does.
// A 4-byte working value (float32, the u32 sums of ints up to 32 bits) travels with its flag
// in one 64-bit word, published and read by one access (CUB packs its tile status so): no fence
// on a tile's path, which held the publish and each read of a look-back behind a device-wide
// fence. Wider values (up to complex128's 16 bytes) are published as value, fence, flag; a
// reader sees the flag, fences, then reads the value from L2.
//
// Layout inside a tile: warp w owns CH chunks of 32*V contiguous elements; lane l of chunk c
// holds elements ((w*CH + c)*32 + l)*V .. +V-1, so each access is a 16-byte vector and a warp's
// access is 512 contiguous bytes (coalesced), with no shared-memory transpose.
// ================================================================================================
// CH_OF(A): 16-byte vectors a thread holds (scan.py: lookback_vectors). 64M float32 on the
// H200 (fraction of a copy): 4 0.51, 8 0.61, 12 0.66 (torch 0.60): bigger tiles, fewer
// look-back hops; with the packed status below, 8 0.71-0.77, 12 0.80-0.82. 8-byte values take
// 8: their 12 held 94-100 registers (two blocks an SM), and 8 ran int32 into int64 at 0.43 of
// a copy, not 0.34 (rows of 8192 at 0.60, not 0.30), float64 and complex64 3-5% faster.
#define CH_OF(A) (sizeof(A) == 8 ? 8 : 12)
#define FLAG_A 1u
#define FLAG_P 2u

// A tile's status as one word for 4-byte W: the flag in the high half, W's bits in the low.
template <typename W> __device__ __forceinline__ unsigned long long status_word(unsigned f, W v) {
    union { W v; unsigned b; } u;
    u.v = v;
    return ((unsigned long long)f << 32) | u.b;
}
template <typename W> __device__ __forceinline__ W status_value(unsigned long long w) {
    union { unsigned b; W v; } u;
    u.b = (unsigned)w;
    return u.v;
}
// publish tile t's aggregate (FLAG_A) or inclusive prefix (FLAG_P)
template <typename W> __device__ __forceinline__ void publish(
        unsigned* flags, W* vals, long long t, unsigned f, W v) {
    if constexpr (sizeof(W) == 4) {
        atomicExch(reinterpret_cast<unsigned long long*>(flags) + t, status_word(f, v));
    } else {
        st_cg(vals + t, v);
        __threadfence();
        atomicExch(flags + t, f);
    }
}

template <typename Op, typename I, typename A, typename W>
__device__ __forceinline__ void lookback_scan(
        const I* __restrict__ x, A* __restrict__ out, long long n, long long tiles_per_row,
        long long out_row, int shift, unsigned* counter, unsigned* flags,
        W* aggs, W* incls, int vec_in, int vec_out) {
    constexpr int V = sizeof(A) >= 16 ? 1 : 16 / (int)sizeof(A);
    constexpr int CH = CH_OF(A);
    constexpr int TILE = THREADS * CH * V;
    __shared__ long long s_tile;
    __shared__ W s_warp[WARPS];

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) s_tile = (long long)atomicAdd(counter, 1u);
    __syncthreads();
    const long long t = s_tile;
    const long long row = t / tiles_per_row, k = t - row * tiles_per_row;
    const I* xr = x + row * n;
    A* orow = out + row * out_row + shift;
    const long long tile0 = k * TILE;

    // per chunk: a 16-byte vector wherever the chunk lies inside the row (a row's last tile
    // too: rows shorter than a tile, cumulative_sum(axis=1) of (8192, 8192), keep vectors)
    W v[CH][V];
#pragma unroll
    for (int c = 0; c < CH; ++c) {
        const long long e0 = tile0 + ((long long)(warp * CH + c) * 32 + lane) * V;
        if (vec_in && e0 + V <= n) {
            I tmp[V];
            vload<I, V>(xr + e0, tmp);
#pragma unroll
            for (int j = 0; j < V; ++j) v[c][j] = cvt<W, I>(tmp[j]);
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j)
                v[c][j] = e0 + j < n ? cvt<W, I>(xr[e0 + j]) : Op::template id<W>();
        }
    }

    // chunk by chunk: thread-local scan, warp scan, running warp carry. A prefix joins a value
    // only where it holds elements: lane 0 of chunk 0 has none (see Add/Mul).
    W carry = Op::template id<W>();
#pragma unroll
    for (int c = 0; c < CH; ++c) {
#pragma unroll
        for (int j = 1; j < V; ++j) v[c][j] = Op::f(v[c][j - 1], v[c][j]);
        const W incl = group_incl<Op, W>(v[c][V - 1], lane, 32);
        W excl = shup(incl, 1, 32);  // lane 0: its own value, unused
        if (c > 0) excl = lane > 0 ? Op::f(carry, excl) : carry;
        if (c > 0 || lane > 0) {
#pragma unroll
            for (int j = 0; j < V; ++j) v[c][j] = Op::f(excl, v[c][j]);
        }
        const W total = shix(incl, 31, 32);
        carry = c > 0 ? Op::f(carry, total) : total;
    }
    if (lane == 0) s_warp[warp] = carry;
    __syncthreads();

    if (warp == 0) {
        W wv = lane < WARPS ? s_warp[lane] : Op::template id<W>();  // past WARPS: never read
        const W wincl = group_incl<Op, W>(wv, lane, 32);
        const W agg = shix(wincl, WARPS - 1, 32);
        const W wexcl = shup(wincl, 1, 32);  // lane 0: unused
        // publish, then look back
        W prefix = Op::template id<W>();  // the tiles before this one (k > 0 only)
        if (k == 0) {
            if (lane == 0) publish(flags, incls, t, FLAG_P, agg);
        } else {
            if (lane == 0) publish(flags, aggs, t, FLAG_A, agg);
            const long long row_first = t - k;
            long long j0 = t - 1;
            bool have = false;
            while (true) {
                const long long j = j0 - lane;
                unsigned f = FLAG_P;
                W val = Op::template id<W>();
                if (j >= row_first) {
                    if constexpr (sizeof(W) == 4) {
                        const volatile unsigned long long* wp =
                            reinterpret_cast<unsigned long long*>(flags) + j;
                        unsigned long long w;
                        do { w = *wp; } while ((w >> 32) == 0u);
                        f = (unsigned)(w >> 32);
                        val = status_value<W>(w);
                    } else {
                        const volatile unsigned* fp = flags + j;
                        do { f = *fp; } while (f == 0u);
                        __threadfence();
                        val = f == FLAG_P ? ld_cg(incls + j) : ld_cg(aggs + j);
                    }
                }
                const unsigned pm = __ballot_sync(FULL, f == FLAG_P);
                const int lim = pm ? __ffs(pm) - 1 : 31;
                // combine lanes 0..lim (lane 0 always among them); every lane gets the result.
                // `live`: the lane's partial holds at least one of them.
                W contrib = val;
                int live = lane <= lim;
#pragma unroll
                for (int d = 16; d >= 1; d >>= 1) {
                    const W o = shix(contrib, lane ^ d, 32);
                    const int olive = __shfl_sync(FULL, live, lane ^ d, 32);
                    if (olive) contrib = live ? Op::f(contrib, o) : o;
                    live |= olive;
                }
                prefix = have ? Op::f(prefix, contrib) : contrib;
                have = true;
                if (pm) break;
                j0 -= 32;
            }
            if (lane == 0) publish(flags, incls, t, FLAG_P, Op::f(prefix, agg));
        }
        // warp `lane`'s exclusive prefix in the row: none for warp 0 of tile 0
        if (lane < WARPS) s_warp[lane] = k > 0 ? (lane > 0 ? Op::f(prefix, wexcl) : prefix)
                                               : wexcl;
    }
    __syncthreads();
    const W add = s_warp[warp];
    const bool has_add = k > 0 || warp > 0;
    if (shift && k == 0 && threadIdx.x == 0) orow[-1] = Op::template first<A>();

#pragma unroll
    for (int c = 0; c < CH; ++c) {
        const long long e0 = tile0 + ((long long)(warp * CH + c) * 32 + lane) * V;
        if (vec_out && e0 + V <= n) {
            A tmp[V];
#pragma unroll
            for (int j = 0; j < V; ++j) tmp[j] = (A)(has_add ? Op::f(add, v[c][j]) : v[c][j]);
            vstore<A, V>(orow + e0, tmp);
        } else {
#pragma unroll
            for (int j = 0; j < V; ++j)
                if (e0 + j < n) orow[e0 + j] = (A)(has_add ? Op::f(add, v[c][j]) : v[c][j]);
        }
    }
}

// ================================================================================================
// 2. Short rows: a group of G lanes (a power of two) per row, V elements per lane per step, with
//    a carry between steps. Why: a look-back tile would be mostly empty; a group sized to the
//    row keeps lanes busy down to rows of a few elements (G = 1: a thread per row).
// ================================================================================================
#define RV 4

template <typename Op, typename I, typename A, typename W>
__device__ __forceinline__ void group_scan(const I* __restrict__ x, A* __restrict__ out,
                                           long long rows, long long n, long long out_row,
                                           int shift, int G) {
    const int gl = threadIdx.x & (G - 1);
    const long long gid = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / G;
    const long long ngroups = (long long)gridDim.x * blockDim.x / G;
    const long long step = (long long)G * RV;
    // whole warps iterate together (the shuffles need every lane): rows past the end idle
    const long long rows_w = (rows + ngroups - 1) / ngroups * ngroups;
    for (long long r = gid; r < rows_w; r += ngroups) {
        const bool live = r < rows;
        const I* xr = x + (live ? r : 0) * n;
        A* orow = out + (live ? r : 0) * out_row + shift;
        if (live && shift && gl == 0) orow[-1] = Op::template first<A>();
        W carry = Op::template id<W>();  // the steps before this one (b > 0 only)
        for (long long b = 0; b < n; b += step) {
            W v[RV];
#pragma unroll
            for (int j = 0; j < RV; ++j) {
                const long long e = b + (long long)gl * RV + j;
                v[j] = live && e < n ? cvt<W, I>(xr[e]) : Op::template id<W>();
            }
#pragma unroll
            for (int j = 1; j < RV; ++j) v[j] = Op::f(v[j - 1], v[j]);
            const W incl = group_incl<Op, W>(v[RV - 1], gl, G);
            W excl = shup(incl, 1, G);  // lane 0 of the group: unused
            const bool more = b > 0;
            if (more) excl = gl > 0 ? Op::f(carry, excl) : carry;
            const bool has = more || gl > 0;
#pragma unroll
            for (int j = 0; j < RV; ++j) {
                const long long e = b + (long long)gl * RV + j;
                if (live && e < n) orow[e] = (A)(has ? Op::f(excl, v[j]) : v[j]);
            }
            const W total = shix(incl, G - 1, G);
            carry = more ? Op::f(carry, total) : total;
        }
    }
}

// ================================================================================================
// 3. Axis not last, columns enough to fill the GPU: x viewed as (outer, n, inner) C-contiguous;
//    a thread per column (adjacent threads adjacent in memory: coalesced), sequential along the
//    axis. Fewer columns take the strip scan (4).
// ================================================================================================
#define COL_BATCH 8
template <typename Op, typename I, typename A, typename W>
__device__ __forceinline__ void column_scan(
        const I* __restrict__ x, A* __restrict__ out, long long outer, long long n,
        long long inner, long long out_len, int shift) {
    const long long cols = outer * inner;
    for (long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x; col < cols;
         col += (long long)gridDim.x * blockDim.x) {
        const long long o = col / inner, i = col - o * inner;
        const I* xc = x + o * n * inner + i;
        long long a = 0;
        W acc = cvt<W, I>(xc[a++ * inner]);  // the first element starts the run
        // COL_BATCH rows loaded before any is combined or stored: that many loads in flight a
        // thread, where the loop unrolled 4 ways with its stores between the loads ran the
        // writing pass at 0.42 of DRAM bandwidth (ncu, H200; (8192, 8192) float32 over axis 0
        // 0.363 -> 0.237 ms, (1048576, 64) 1.51 -> 0.44); the combine order is unchanged
        I v[COL_BATCH];
        A* oc = out + o * out_len * inner + i;
        if (shift) oc[0] = Op::template first<A>();
        oc += (long long)shift * inner;
        oc[0] = (A)acc;
        for (; a + COL_BATCH <= n; a += COL_BATCH) {
#pragma unroll
            for (int u = 0; u < COL_BATCH; ++u) v[u] = xc[(a + u) * inner];
#pragma unroll
            for (int u = 0; u < COL_BATCH; ++u) {
                acc = Op::f(acc, cvt<W, I>(v[u]));
                oc[(a + u) * inner] = (A)acc;
            }
        }
        for (; a < n; ++a) {
            acc = Op::f(acc, cvt<W, I>(xc[a * inner]));
            oc[a * inner] = (A)acc;
        }
    }
}

// ================================================================================================
// 4. Axis not last, columns too few for a thread each: a block per strip of 32 adjacent columns
//    (lane = column, as in 3), its warps STRIP_LANES row lanes of U consecutive rows, stepping
//    down the axis STRIP_LANES * U rows at a time. A step: each lane runs its U rows, the lane
//    totals meet in shared memory, and each lane adds the run of everything above it; the next
//    step's loads are issued before this step's exchange. x is read once: the chunked column
//    scan read it twice (a totals pass first), 0.58 of the copy for (8192, 8192) float32 over
//    axis 0. blockIdx.y splits the axis into segments only where strips are too few for the
//    SMs: three launches (mode 1 the segment totals, their scan, mode 0 from `carry`).
//    Combines never meet an identity (the Add/Mul note); the association is
//    ((run * lanes above) * the lane's own run), the run growing by one combine a step.
// ================================================================================================
#define STRIP_LANES (THREADS / 32)
// rows a lane takes a step: 64 bytes of working values (16 of 4 bytes, 8 of 8, 4 of 16)
template <typename W> struct StripRows {
    static constexpr int value = sizeof(W) <= 4 ? 16 : (sizeof(W) == 8 ? 8 : 4); };

// the k (<= U) rows of a lane from row r0 (zeros past them: never stored)
template <int U, typename I>
__device__ __forceinline__ void strip_load(I (&v)[U], const I* __restrict__ xc, long long r0,
                                           int k, long long inner) {
    const I* p = xc + r0 * inner;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        I t = I();
        if (u < k) t = *p;
        v[u] = t;
        p += inner;
    }
}

// rows a lane holds from row r0 of a segment ending at `end`
template <int U>
__device__ __forceinline__ int strip_held(long long r0, long long end, bool live) {
    const long long left = live ? end - r0 : 0;
    return left <= 0 ? 0 : (left < U ? (int)left : U);
}

template <typename Op, typename I, typename A, typename W>
__device__ __forceinline__ void strip_scan(
        const I* __restrict__ x, A* __restrict__ out, long long outer, long long n,
        long long inner, long long out_len, int shift, long long seg, W* sums, const W* carry,
        int mode) {
    constexpr int U = StripRows<W>::value;
    constexpr int STEP = STRIP_LANES * U;
    __shared__ W tot[2][STRIP_LANES][32];
    const int lx = threadIdx.x & 31, ly = threadIdx.x >> 5;
    const long long cols = outer * inner;
    const long long col = (long long)blockIdx.x * 32 + lx;
    const bool live = col < cols;
    const long long o = live ? col / inner : 0, i = live ? col - o * inner : 0;
    const I* xc = x + o * n * inner + i;
    A* oc = out + o * out_len * inner + i + (long long)shift * inner;
    const long long s = blockIdx.y, start = s * seg;
    const long long end = start + seg < n ? start + seg : n;
    // run: the combine of every row above the step (the segments before, then the steps)
    bool has = carry != nullptr && s > 0;
    W run = has && live ? carry[(s - 1) * cols + col] : Op::template id<W>();
    if (mode == 0 && shift && s == 0 && ly == 0 && live) oc[-inner] = Op::template first<A>();
    I nx[U];
    strip_load<U, I>(nx, xc, start + (long long)ly * U,
                     strip_held<U>(start + (long long)ly * U, end, live), inner);
    int buf = 0;
    for (long long b = start; b < end; b += STEP, buf ^= 1) {
        const long long r0 = b + (long long)ly * U;
        const int k = strip_held<U>(r0, end, live);  // rows this lane holds
        W v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = cvt<W, I>(nx[u]);
        if (b + STEP < end)
            strip_load<U, I>(nx, xc, r0 + STEP, strip_held<U>(r0 + STEP, end, live), inner);
        W t = v[0];  // the lane's total (its last row's run: selected as the run goes, as an
                     // index k - 1 would put v in local memory)
#pragma unroll
        for (int u = 1; u < U; ++u)
            if (u < k) {
                v[u] = Op::f(v[u - 1], v[u]);
                t = v[u];
            }
        tot[buf][ly][lx] = t;
        __syncthreads();
        // the lanes holding rows this step, combined in order; `above` stops at this lane's
        const long long rows = end - b;
        const int lanes = rows >= STEP ? STRIP_LANES : (int)((rows + U - 1) / U);
        W all = tot[buf][0][lx], above = all;
#pragma unroll
        for (int l = 1; l < STRIP_LANES; ++l) {
            if (l >= lanes) break;
            if (l == ly) above = all;
            all = Op::f(all, tot[buf][l][lx]);
        }
        if (k > 0 && mode == 0) {
            // the rows above this lane: the run, then (for lanes past the first) those above
            const bool hb = has || ly > 0;
            const W base = ly == 0 ? run : (has ? Op::f(run, above) : above);
            A* q = oc + r0 * inner;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                if (u < k) *q = (A)(hb ? Op::f(base, v[u]) : v[u]);
                q += inner;
            }
        }
        run = has ? Op::f(run, all) : all;
        has = true;
    }
    if (mode == 1 && ly == 0 && live) sums[s * cols + col] = run;
}

// Three look-back blocks an SM for 4-byte values (at most 80 registers: a warp's registers
// are allocated 256 at a time, so 81-85 leave room for two blocks only; the packed status took
// the float32 kernel from 80 to 85 registers and (8192, 8192) over axis 1 from 0.154 to 0.18
// ms); 0, no minimum, for the others (their registers as before)
#define LB_BLOCKS(A, W) ((sizeof(A) == 4 && sizeof(W) == 4) ? 3 : 0)

// Four strip blocks an SM (64 registers; left to itself ptxas took 119 for float32, two
// blocks), three for 16-byte values (four spill them)
#define STRIP_SM_BLOCKS(W) (sizeof(W) <= 8 ? 4 : 3)

// One line per (combine, input, out, working type): KIND names the family (scan: sums,
// scanprod: products).
#define OP_INSTANCES(KIND, OP, NAME, I, A, W)                                                    \
extern "C" __global__ void __launch_bounds__(THREADS, LB_BLOCKS(A, W)) xp_##KIND##_lb_##NAME(    \
        const I* x, A* out, long long n, long long tpr, long long out_row, int shift,           \
        unsigned* counter, unsigned* flags, W* aggs, W* incls, int vec_in, int vec_out) {       \
    lookback_scan<OP, I, A, W>(x, out, n, tpr, out_row, shift, counter, flags, aggs, incls,     \
                               vec_in, vec_out); }                                               \
extern "C" __global__ void xp_##KIND##_rows_##NAME(const I* x, A* out, long long rows,          \
        long long n, long long out_row, int shift, int G) {                                      \
    group_scan<OP, I, A, W>(x, out, rows, n, out_row, shift, G); }                               \
extern "C" __global__ void xp_##KIND##_cols_##NAME(const I* x, A* out, long long outer,         \
        long long n, long long inner, long long out_len, int shift) {                            \
    column_scan<OP, I, A, W>(x, out, outer, n, inner, out_len, shift); }                         \
extern "C" __global__ void __launch_bounds__(THREADS, STRIP_SM_BLOCKS(W))                        \
xp_##KIND##_strip_##NAME(const I* x, A* out, long long outer, long long n, long long inner,      \
        long long out_len, int shift, long long seg, W* sums, const W* carry, int mode) {        \
    strip_scan<OP, I, A, W>(x, out, outer, n, inner, out_len, shift, seg, sums, carry, mode); }
#define SCAN_INSTANCES(NAME, I, A) OP_INSTANCES(scan, Add, NAME, I, A, Work<A>::type)
#define PROD_INSTANCES(NAME, I, A, W) OP_INSTANCES(scanprod, Mul, NAME, I, A, W)

// same dtype in and out (ints as their unsigned twin)
SCAN_INSTANCES(u8_u8, u8, u8)
SCAN_INSTANCES(u16_u16, u16, u16)
SCAN_INSTANCES(u32_u32, u32, u32)
SCAN_INSTANCES(u64_u64, u64, u64)
SCAN_INSTANCES(f32_f32, f32, f32)
SCAN_INSTANCES(f64_f64, f64, f64)
SCAN_INSTANCES(c64_c64, c64, c64)
SCAN_INSTANCES(c128_c128, c128, c128)
// the default widenings of cumulative_sum (bool and narrow ints to the default integer) and
// float32 with dtype=float64: the conversion fused into the load
SCAN_INSTANCES(b_u64, bool, u64)
SCAN_INSTANCES(i8_u64, i8, u64)
SCAN_INSTANCES(i16_u64, i16, u64)
SCAN_INSTANCES(i32_u64, i32, u64)
SCAN_INSTANCES(u8_u64, u8, u64)
SCAN_INSTANCES(u16_u64, u16, u64)
SCAN_INSTANCES(u32_u64, u32, u64)
SCAN_INSTANCES(f32_f64, f32, f64)
// products (cumulative_prod): the same pairs but bool (not numeric); W as Work<A>, except float32
// out, which works in float64 (WIDER_PRODUCT)
PROD_INSTANCES(u8_u8, u8, u8, u32)
PROD_INSTANCES(u16_u16, u16, u16, u32)
PROD_INSTANCES(u32_u32, u32, u32, u32)
PROD_INSTANCES(u64_u64, u64, u64, u64)
PROD_INSTANCES(f32_f32, f32, f32, f64)
PROD_INSTANCES(f64_f64, f64, f64, f64)
PROD_INSTANCES(c64_c64, c64, c64, c64)
PROD_INSTANCES(c128_c128, c128, c128, c128)
PROD_INSTANCES(i8_u64, i8, u64, u64)
PROD_INSTANCES(i16_u64, i16, u64, u64)
PROD_INSTANCES(i32_u64, i32, u64, u64)
PROD_INSTANCES(u8_u64, u8, u64, u64)
PROD_INSTANCES(u16_u64, u16, u64, u64)
PROD_INSTANCES(u32_u64, u32, u64, u64)
PROD_INSTANCES(f32_f64, f32, f64, f64)

// ================================================================================================
// 4. Stream compaction. Tiles of THREADS * IT elements, thread t owning IT consecutive ones.
//    Pass 1 (count) gives each tile's count and writes each thread's IT flags as one 16-bit
//    word (n / 8 bytes in all); one block turns the counts into exclusive offsets and the total
//    (the only number the host reads); pass 2 reads the flag words, not x or the mask again
//    (nonzero of 64M float32 re-read 256 MB for 8 MB of flags), ranks the selected elements
//    with a block scan, stages them in shared memory in output order and writes them out
//    coalesced (selected elements are contiguous in the output).
// ================================================================================================
template <typename P> __device__ __forceinline__ bool nz(P v) { return v != P(0); }
template <> __device__ __forceinline__ bool nz<c64>(c64 v) { return v.re != 0.f || v.im != 0.f; }
template <> __device__ __forceinline__ bool nz<c128>(c128 v) { return v.re != 0.0 || v.im != 0.0; }

// flags of thread's IT elements as a bit mask (vector loads when aligned)
template <typename P, int IT>
__device__ __forceinline__ unsigned load_flags(const P* __restrict__ x, long long n,
                                               long long base, int vec) {
    unsigned bits = 0;
    if (vec && base + IT <= n) {
        constexpr int VV = (16 / (int)sizeof(P)) < IT ? (16 / (int)sizeof(P)) : IT;
#pragma unroll
        for (int q = 0; q < IT / VV; ++q) {
            P tmp[VV];
            vload<P, VV>(x + base + q * VV, tmp);
#pragma unroll
            for (int j = 0; j < VV; ++j) bits |= (unsigned)nz<P>(tmp[j]) << (q * VV + j);
        }
    } else {
#pragma unroll
        for (int j = 0; j < IT; ++j)
            if (base + j < n) bits |= (unsigned)nz<P>(x[base + j]) << j;
    }
    return bits;
}

// exclusive block scan of one count per thread; returns the thread's offset, *total the sum
__device__ __forceinline__ int block_exscan_int(int c, int* s_warp, int* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int incl = c;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int o = __shfl_up_sync(FULL, incl, d);
        if (lane >= d) incl += o;
    }
    if (lane == 31) s_warp[warp] = incl;
    __syncthreads();
    int base = 0, tot = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        const int sw = s_warp[w];
        base += w < warp ? sw : 0;
        tot += sw;
    }
    *total = tot;
    return base + incl - c;
}

// A block counts K consecutive tiles: their loads are issued together, so a thread keeps about
// 64 bytes in flight whatever P's width, and one barrier serves the K block sums. H200, 64M
// elements, K = 1 -> K: bool 23.8 -> 22.6 us, the half tiles 35.7 -> 29.1, int16 36.0 -> 36.3.
template <typename P, int IT, int K>
__device__ __forceinline__ void count_tiles(const P* __restrict__ x, long long n,
                                            long long* __restrict__ counts,
                                            u16* __restrict__ flags, int vec) {
    static_assert(IT <= 16, "a thread's flags are one 16-bit word");
    __shared__ int s_warp[K][WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long tiles = (n + (long long)THREADS * IT - 1) / ((long long)THREADS * IT);
    const long long t0 = (long long)blockIdx.x * K;
    unsigned bits[K];
#pragma unroll
    for (int k = 0; k < K; ++k)  // a tile past the end has no elements: no flags
        bits[k] = load_flags<P, IT>(x, n, ((t0 + k) * THREADS + threadIdx.x) * IT, vec);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (t0 + k < tiles) flags[(t0 + k) * THREADS + threadIdx.x] = (u16)bits[k];
        int c = __popc(bits[k]);
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) c += __shfl_xor_sync(FULL, c, d);
        if (lane == 0) s_warp[k][warp] = c;
    }
    __syncthreads();
    if (threadIdx.x < K && t0 + threadIdx.x < tiles) {
        int total = 0;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) total += s_warp[threadIdx.x][w];
        counts[t0 + threadIdx.x] = total;
    }
}

// One block: counts[0..m) -> exclusive offsets in place, counts[m] = the total. A round takes
// 1024 * OFS_IT counts: warp w owns OFS_IT rows of 32 consecutive counts, lane l column l, so
// every load and store is a warp's 256 contiguous bytes; the warp scans its rows in order
// with a running carry. H200, pipelined: 16384 counts (64M elements) 21.6 -> 10.6 us, 131072
// 161 -> 73 us, against OFS_IT = 8 consecutive counts a thread (lanes 64 bytes apart).
#define OFS_IT 16
extern "C" __global__ void __launch_bounds__(1024) xp_tile_offsets(long long* counts,
                                                                   long long m) {
    __shared__ long long s_w[32];
    __shared__ long long s_carry;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) s_carry = 0;
    __syncthreads();
    for (long long b = 0; b < m; b += 1024 * OFS_IT) {
        const long long w0 = b + (long long)warp * (32 * OFS_IT) + lane;
        long long c[OFS_IT];
#pragma unroll
        for (int q = 0; q < OFS_IT; ++q) c[q] = w0 + q * 32 < m ? counts[w0 + q * 32] : 0;
        long long run = 0;  // the warp's rows before row q
#pragma unroll
        for (int q = 0; q < OFS_IT; ++q) {
            long long incl = c[q];
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const long long o = __shfl_up_sync(FULL, incl, d);
                if (lane >= d) incl += o;
            }
            c[q] = run + incl - c[q];
            run += __shfl_sync(FULL, incl, 31);
        }
        if (lane == 0) s_w[warp] = run;
        __syncthreads();
        long long wb = s_carry, tot = 0;
        for (int w = 0; w < 32; ++w) { wb += w < warp ? s_w[w] : 0; tot += s_w[w]; }
#pragma unroll
        for (int q = 0; q < OFS_IT; ++q)
            if (w0 + q * 32 < m) counts[w0 + q * 32] = wb + c[q];
        __syncthreads();
        if (threadIdx.x == 0) s_carry += tot;
        __syncthreads();
    }
    if (threadIdx.x == 0) counts[m] = s_carry;
}

// nonzero: coordinates (ndim <= 8 rows of out, each `total` long) of the selected elements,
// from pass 1's flag words, in a C-contiguous array of dims d0..d7 (ndim == 1: linear indices).
// The dimensions are indexed by unrolled constants (a runtime index put them in a 64-byte stack
// frame); n32: every linear index fits 32 bits, so the divisions run in 32 bits (I = unsigned).
template <typename I>
__device__ __forceinline__ void unravel(long long* o, I lin, long long total, int ndim,
                                        const long long (&dims)[8]) {
#pragma unroll
    for (int d = 7; d > 0; --d) {
        if (d < ndim) {
            const I dd = (I)dims[d], qd = lin / dd;
            o[(long long)d * total] = lin - qd * dd;
            lin = qd;
        }
    }
    *o = lin;
}

template <int IT>
__device__ __forceinline__ void nz_index(const u16* __restrict__ flags,
                                         const long long* __restrict__ offsets,
                                         long long* __restrict__ out, long long total, int ndim,
                                         int n32, const long long (&dims)[8]) {
    __shared__ int s_idx[THREADS * IT];  // offsets inside the tile
    __shared__ int s_warp[WARPS];
    const long long tile = blockIdx.x;
    const unsigned bits = flags[tile * THREADS + threadIdx.x];
    const long long off = offsets[tile];
    int cnt;
    int pos = block_exscan_int(__popc(bits), s_warp, &cnt);
#pragma unroll
    for (int j = 0; j < IT; ++j)
        if (bits >> j & 1u) s_idx[pos++] = threadIdx.x * IT + j;
    __syncthreads();
    const long long base = tile * THREADS * IT;
    for (int q = threadIdx.x; q < cnt; q += THREADS) {
        if (n32)
            unravel<unsigned>(out + off + q, (unsigned)(base + s_idx[q]), total, ndim, dims);
        else
            unravel<long long>(out + off + q, base + s_idx[q], total, ndim, dims);
    }
}

// x[mask]: elements of S bytes (one machine word, aligned to S) where pass 1 flagged the mask.
// vec: x is 16-byte aligned, so a thread reads its elements as 16-byte vectors, each only where
// one of its elements is selected, and issues those loads before the block scan: their latency
// overlaps the scan's barriers.
template <typename SW, int IT>
__device__ __forceinline__ void compact(const u16* __restrict__ flags, const SW* __restrict__ x,
                                        long long n, const long long* __restrict__ offsets,
                                        SW* __restrict__ out, int vec) {
    constexpr int VV = (16 / (int)sizeof(SW)) < IT ? (16 / (int)sizeof(SW)) : IT;
    __shared__ SW s_val[THREADS * IT];
    __shared__ int s_warp[WARPS];
    const long long tile = blockIdx.x;
    const long long base = (tile * THREADS + threadIdx.x) * IT;
    const unsigned bits = flags[tile * THREADS + threadIdx.x];
    const long long off = offsets[tile];  // (loaded before the barriers, as x is)
    const bool whole = vec && base + IT <= n;
    SW v[IT];
    if (whole) {
#pragma unroll
        for (int q = 0; q < IT / VV; ++q)
            if (bits >> (q * VV) & ((1u << VV) - 1u)) {
                SW tmp[VV];
                vload<SW, VV>(x + base + q * VV, tmp);
#pragma unroll
                for (int j = 0; j < VV; ++j) v[q * VV + j] = tmp[j];
            }
    } else {
#pragma unroll
        for (int j = 0; j < IT; ++j)
            if (bits >> j & 1u) v[j] = x[base + j];
    }
    int cnt;
    int pos = block_exscan_int(__popc(bits), s_warp, &cnt);
#pragma unroll
    for (int j = 0; j < IT; ++j)
        if (bits >> j & 1u) s_val[pos++] = v[j];
    __syncthreads();
    SW* o = out + off;
    for (int q = threadIdx.x; q < cnt; q += THREADS) o[q] = s_val[q];
}

#define IT_COUNT 16
#define DIMS_ARGS long long d0, long long d1, long long d2, long long d3, long long d4, \
                  long long d5, long long d6, long long d7
// K: tiles a counting block takes (scan.py: COUNT_TILES)
#define NZ_INSTANCES(NAME, P, K)                                                                 \
extern "C" __global__ void __launch_bounds__(THREADS) xp_count_##NAME(                          \
        const P* x, long long n, long long* counts, u16* flags, int vec) {                      \
    count_tiles<P, IT_COUNT, K>(x, n, counts, flags, vec); }

NZ_INSTANCES(u8, u8, 4)
NZ_INSTANCES(u16, u16, 2)
NZ_INSTANCES(u32, u32, 1)
NZ_INSTANCES(u64, u64, 1)
NZ_INSTANCES(f32, f32, 1)
NZ_INSTANCES(f64, f64, 1)
NZ_INSTANCES(c64, c64, 1)
NZ_INSTANCES(c128, c128, 1)

// dtype-free (it reads flags only), but an instance line of its own: a unit per kernel
#define NZIDX_INSTANCE(NAME)                                                                     \
extern "C" __global__ void __launch_bounds__(THREADS) xp_##NAME(                                \
        const u16* flags, const long long* offsets, long long* out, long long total, int ndim,  \
        int n32, DIMS_ARGS) {                                                                    \
    const long long dims[8] = {d0, d1, d2, d3, d4, d5, d6, d7};                                  \
    nz_index<IT_COUNT>(flags, offsets, out, total, ndim, n32, dims); }
NZIDX_INSTANCE(nzidx)

// 16-byte elements stage half as many per tile (shared memory), so their mask tiles are halved
extern "C" __global__ void __launch_bounds__(THREADS) xp_count_u8_half(
        const u8* x, long long n, long long* counts, u16* flags, int vec) {
    count_tiles<u8, IT_COUNT / 2, 8>(x, n, counts, flags, vec); }

#define COMPACT_INSTANCE(S, SW, IT)                                                              \
extern "C" __global__ void __launch_bounds__(THREADS) xp_compact_##S(                           \
        const u16* flags, const SW* x, long long n, const long long* offsets, SW* out,          \
        int vec) {                                                                               \
    compact<SW, IT>(flags, x, n, offsets, out, vec); }
COMPACT_INSTANCE(1, u8, IT_COUNT)
COMPACT_INSTANCE(2, u16, IT_COUNT)
COMPACT_INSTANCE(4, u32, IT_COUNT)
COMPACT_INSTANCE(8, u64, IT_COUNT)
COMPACT_INSTANCE(16, uint4, IT_COUNT / 2)

// ================================================================================================
// 5. Whole rows: out row k <- src row idx[k] (gather) or dst row idx[k] <- src row k (scatter),
//    rows of `units` words of U bytes; a thread per word, grid-stride: coalesced in both.
// ================================================================================================
template <typename U>
__device__ __forceinline__ void rows_move(const U* __restrict__ src, U* __restrict__ dst,
                                          const long long* __restrict__ idx, long long count,
                                          long long units, int scatter) {
    const long long total = count * units;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < total;
         q += (long long)gridDim.x * blockDim.x) {
        const long long k = q / units, j = q - k * units;
        const long long r = idx[k] * units + j;
        if (scatter) dst[r] = src[q];
        else dst[q] = src[r];
    }
}

// x[mask] = scalar: every selected row of `inner` words; no scan needed
template <typename U>
__device__ __forceinline__ void mask_fill(const u8* __restrict__ mask, U* __restrict__ x,
                                          long long total, long long inner,
                                          const U* __restrict__ vp, u64 lo, u64 hi) {
    // the value: on the device (a 0-d array: no host read) or its bytes as two words
    union { u64 w[2]; U u; } bitsv;
    bitsv.w[0] = lo; bitsv.w[1] = hi;
    const U value = vp != nullptr ? *vp : bitsv.u;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < total;
         q += (long long)gridDim.x * blockDim.x)
        if (mask[q / inner]) x[q] = value;
}

#define MOVE_INSTANCES(S, U)                                                                     \
extern "C" __global__ void xp_rows_##S(const U* src, U* dst, const long long* idx,              \
                                       long long count, long long units, int scatter) {          \
    rows_move<U>(src, dst, idx, count, units, scatter); }                                        \
extern "C" __global__ void xp_maskfill_##S(const u8* mask, U* x, long long total,               \
                                           long long inner, const U* vp, u64 lo, u64 hi) {       \
    mask_fill<U>(mask, x, total, inner, vp, lo, hi); }
MOVE_INSTANCES(1, u8)
MOVE_INSTANCES(2, u16)
MOVE_INSTANCES(4, u32)
MOVE_INSTANCES(8, u64)
MOVE_INSTANCES(16, uint4)

// ================================================================================================
// 6. repeat with counts: out[j] = the i with cum[i-1] <= j < cum[i] (cum the inclusive sums);
//    a binary search per output, the upper levels of which stay in L1/L2 for a whole block.
// ================================================================================================
extern "C" __global__ void xp_repeat_idx(const long long* __restrict__ cum, long long m,
                                         long long* __restrict__ out, long long total) {
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < total;
         j += (long long)gridDim.x * blockDim.x) {
        long long lo = 0, hi = m - 1;  // first i with cum[i] > j; exists since cum[m-1] == total
        while (lo < hi) {
            const long long mid = (lo + hi) >> 1;
            if (__ldg(cum + mid) > j) hi = mid; else lo = mid + 1;
        }
        out[j] = lo;
    }
}
