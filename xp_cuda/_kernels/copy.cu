// Data movement without arithmetic: strided copies, tiled transposes, concatenation and gathers.
//
// Every kernel moves elements of 1, 2, 4, 8 or 16 bytes as opaque bits (no dtype: a float's -0.0
// and NaN payloads pass untouched), instantiated per element size under extern "C" names, so the
// one module compiles once. copy.py plans the geometry (dims collapsed, strides in BYTES) and
// fills one argument struct per launch; the struct is a single __grid_constant__ parameter, so
// the per-dim arrays are indexed at run time straight from the constant bank (no local copy).
//
// Shared shape of the row kernels: the work is rows (the outer dims, any strides) by an inner
// dim cut into chunks of V = 16 / size elements, one chunk per thread and step; a chunk whose
// destination is 16-byte aligned and whole is stored as one uint4 (and loaded as one when the
// source is contiguous and aligned too), others element by element. With `shift`, chunk
// boundaries move per row so that destination chunks are aligned even when rows are not (a
// slice of a wider output): one chunk of slack per row buys vector stores everywhere.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
// 16-byte elements (complex128) need only 8-byte alignment here: the uint4 path checks the
// address at run time.
struct __align__(8) b16 { u64 lo, hi; };

#define XC_MAXND 32     // MAXND in copy.py: outer / batch dims one launch walks
#define XC_MAXPARTS 32  // MAXPARTS in copy.py: concatenated parts one launch reads
#define XC_TILE 32      // TILE in copy.py: transpose tile edge (elements)
#define XC_TROWS 8      // thread rows of a transpose block (XC_TILE x XC_TROWS threads)
#define XC_UNROLL 2     // chunks in flight per thread: a single 16-byte load per thread left
                        // too few bytes in flight to cover HBM latency

template <typename T> struct Pack {
    static constexpr int V = sizeof(T) >= 16 ? 1 : 16 / (int)sizeof(T);
    union { uint4 u; T t[V]; };
};

__device__ __forceinline__ bool aligned16(const void* p) { return ((u64)p & 15) == 0; }

// ---- strided copy and gather over rows ------------------------------------------------------

struct MoveArgs {
    i64 dst, src, idx;   // byte addresses (plan offsets applied); idx: int64 indices or 0
    i64 n, dsi, ssi;     // inner dim: elements, dst / src byte strides (MODE 2: x's stride
                         // along the gathered axis)
    i64 cpr;             // chunks per row: ceil((n + V - 1) / V) with shift, else ceil(n / V)
    i64 rows;            // product of the outer dims
    i64 nd, gdim, shift, pad;  // outer dims; the outer dim read through idx (-1: none)
    i64 shape[XC_MAXND], dstr[XC_MAXND], sstr[XC_MAXND];  // outer dims, outermost first
};

// MODE 0: the source's inner dim is contiguous (rows); 1: any source stride (0 included);
// 2: the inner dim is gathered, element j read at src + idx[j] * ssi.
template <typename T, int MODE, typename IT>
__device__ __forceinline__ void move_loop(const MoveArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const IT cpr = (IT)a.cpr;
    const IT total = (IT)a.rows * cpr;
    const IT step = (IT)gridDim.x * blockDim.x;
    const i64* idx = (const i64*)a.idx;
    const int nd = (int)a.nd, gdim = (int)a.gdim;
    for (IT g0 = (IT)blockIdx.x * blockDim.x + threadIdx.x; g0 < total; g0 += XC_UNROLL * step) {
        Pack<T> p[XC_UNROLL];
        char* drow[XC_UNROLL];
        i64 j0[XC_UNROLL];
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u) {
            const IT g = g0 + (IT)u * step;
            j0[u] = a.n;  // no chunk: nothing loaded or stored
            if (g >= total) continue;
            IT r = g / cpr;
            const IT c = g - r * cpr;
            i64 doff = 0, soff = 0;
            for (int d = nd - 1; d >= 0; --d) {
                const IT n = (IT)a.shape[d];
                const IT q = r / n;
                const IT k = r - q * n;
                r = q;
                doff += (i64)k * a.dstr[d];
                soff += (d == gdim ? idx[k] : (i64)k) * a.sstr[d];
            }
            drow[u] = (char*)a.dst + doff;
            const char* srow = (const char*)a.src + soff;
            const i64 o = a.shift ? (i64)(((u64)drow[u] & 15) / S) : 0;
            const i64 j = (i64)c * V - o;
            j0[u] = j;
            if (j >= a.n) continue;  // a row's slack chunk
            const bool full = j >= 0 && j + V <= a.n;
            if (MODE == 0) {
                const char* s = srow + j * S;
                if (full && aligned16(s)) {
                    p[u].u = *(const uint4*)s;
                } else {
#pragma unroll
                    for (int k = 0; k < V; ++k)
                        if (j + k >= 0 && j + k < a.n) p[u].t[k] = *(const T*)(s + k * S);
                }
            } else if (MODE == 1) {
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (j + k >= 0 && j + k < a.n) p[u].t[k] = *(const T*)(srow + (j + k) * a.ssi);
            } else {
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (j + k >= 0 && j + k < a.n)
                        p[u].t[k] = *(const T*)(srow + idx[j + k] * a.ssi);
            }
        }
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u) {
            const i64 j = j0[u];
            if (j >= a.n) continue;
            char* d = drow[u] + j * a.dsi;
            if (j >= 0 && j + V <= a.n && a.dsi == S && aligned16(d)) {
                *(uint4*)d = p[u].u;
            } else {
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (j + k >= 0 && j + k < a.n) *(T*)(drow[u] + (j + k) * a.dsi) = p[u].t[k];
            }
        }
    }
}

template <typename T, int MODE>
__device__ __forceinline__ void move(const MoveArgs& a) {
    // 32-bit index arithmetic where the chunk count fits: its divisions are several times
    // cheaper than 64-bit ones (the branch is uniform)
    if ((u64)a.rows * (u64)a.cpr + (u64)(XC_UNROLL + 1) * gridDim.x * blockDim.x
        < 0xffffffffull)
        move_loop<T, MODE, u32>(a);
    else
        move_loop<T, MODE, u64>(a);
}

// ---- tiled transpose: a = the destination's contiguous dim, b = the source's ----------------

struct TransArgs {
    i64 dst, src;
    i64 na, nb;            // sizes of the two tiled dims
    i64 dsa, dsb, ssa, ssb;  // their byte strides in dst and src
    i64 ta, tb;            // tiles along a and b
    i64 batch, nd;         // product and count of the batch dims
    i64 shape[XC_MAXND], dstr[XC_MAXND], sstr[XC_MAXND];
};

// Pad each tile row to an odd number of 4-byte banks: the column reads of the store phase
// then hit distinct banks for every element size.
template <typename T> struct TilePad { static constexpr int P = sizeof(T) >= 4 ? 1 : 4 / (int)sizeof(T); };

template <typename T>
__device__ __forceinline__ void transpose(const TransArgs& a) {
    __shared__ T tile[XC_TILE][XC_TILE + TilePad<T>::P];
    const i64 tasks = a.batch * a.ta * a.tb;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (i64 t = blockIdx.x; t < tasks; t += gridDim.x) {
        // a fastest: consecutive blocks write neighbouring destination tiles
        i64 r = t / a.ta;
        const i64 ia = t - r * a.ta;
        const i64 bi = r / a.tb;
        const i64 ib = r - bi * a.tb;
        i64 doff = 0, soff = 0;
        r = bi;
        for (int d = (int)a.nd - 1; d >= 0; --d) {
            const i64 q = r / a.shape[d];
            const i64 k = r - q * a.shape[d];
            r = q;
            doff += k * a.dstr[d];
            soff += k * a.sstr[d];
        }
        const i64 a0 = ia * XC_TILE, b0 = ib * XC_TILE;
        const char* s = (const char*)a.src + soff;
        char* dp = (char*)a.dst + doff;
        // load: threadIdx.x walks b, the source's contiguous dim
#pragma unroll
        for (int k = ty; k < XC_TILE; k += XC_TROWS) {
            const i64 ai = a0 + k, bj = b0 + tx;
            if (ai < a.na && bj < a.nb) tile[k][tx] = *(const T*)(s + ai * a.ssa + bj * a.ssb);
        }
        __syncthreads();
        // store: threadIdx.x walks a, the destination's contiguous dim
#pragma unroll
        for (int k = ty; k < XC_TILE; k += XC_TROWS) {
            const i64 ai = a0 + tx, bj = b0 + k;
            if (ai < a.na && bj < a.nb) *(T*)(dp + ai * a.dsa + bj * a.dsb) = tile[tx][k];
        }
        __syncthreads();
    }
}

// ---- concatenation of C-contiguous parts: one launch walks the output ------------------------

struct ConcatArgs {
    i64 dst;         // the output at the first column this launch writes
    i64 rows;        // product of the dims before the axis
    i64 row_stride;  // bytes between output rows
    i64 width;       // columns (elements) this launch writes per row
    i64 cpr, shift, nparts, pad;
    i64 src[XC_MAXPARTS];         // part addresses
    i64 w[XC_MAXPARTS];           // part row widths (elements)
    i64 start[XC_MAXPARTS + 1];   // first column of each part, relative to dst; start[nparts] = width
};

template <typename T, typename IT>
__device__ __forceinline__ void concat_loop(const ConcatArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const IT cpr = (IT)a.cpr;
    const IT total = (IT)a.rows * cpr;
    const IT step = (IT)gridDim.x * blockDim.x;
    const int np = (int)a.nparts;
    for (IT g0 = (IT)blockIdx.x * blockDim.x + threadIdx.x; g0 < total; g0 += XC_UNROLL * step) {
        Pack<T> p[XC_UNROLL];
        char* drow[XC_UNROLL];
        i64 j0[XC_UNROLL];
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u) {
            const IT g = g0 + (IT)u * step;
            j0[u] = a.width;
            if (g >= total) continue;
            const IT row = g / cpr;
            const IT c = g - row * cpr;
            drow[u] = (char*)a.dst + (i64)row * a.row_stride;
            const i64 o = a.shift ? (i64)(((u64)drow[u] & 15) / S) : 0;
            const i64 j = (i64)c * V - o;
            j0[u] = j;
            if (j >= a.width) continue;
            const i64 jf = j < 0 ? 0 : j;
            int q = 0;
            while (jf >= a.start[q + 1]) ++q;  // the part holding the chunk's first column
            if (j >= 0 && j + V <= a.start[q + 1]) {  // whole chunk in one part
                const char* s = (const char*)a.src[q] + ((i64)row * a.w[q] + j - a.start[q]) * S;
                if (aligned16(s)) {
                    p[u].u = *(const uint4*)s;
                } else {
#pragma unroll
                    for (int k = 0; k < V; ++k) p[u].t[k] = *(const T*)(s + k * S);
                }
            } else {
#pragma unroll
                for (int k = 0; k < V; ++k) {
                    const i64 jk = j + k;
                    if (jk < 0 || jk >= a.width) continue;
                    while (q < np - 1 && jk >= a.start[q + 1]) ++q;
                    p[u].t[k] = *(const T*)((const char*)a.src[q]
                                            + ((i64)row * a.w[q] + jk - a.start[q]) * S);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u) {
            const i64 j = j0[u];
            if (j >= a.width) continue;
            char* d = drow[u] + j * S;
            if (j >= 0 && j + V <= a.width && aligned16(d)) {
                *(uint4*)d = p[u].u;
            } else {
#pragma unroll
                for (int k = 0; k < V; ++k)
                    if (j + k >= 0 && j + k < a.width) *(T*)(d + k * S) = p[u].t[k];
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void concat(const ConcatArgs& a) {
    if ((u64)a.rows * (u64)a.cpr + (u64)(XC_UNROLL + 1) * gridDim.x * blockDim.x
        < 0xffffffffull)
        concat_loop<T, u32>(a);
    else
        concat_loop<T, u64>(a);
}

// ---- the extern "C" names: one set per element size ----------------------------------------

#define XC_BY_SIZE(S, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                         \
    xp_copy_rows_##S(const __grid_constant__ MoveArgs a) { move<T, 0>(a); }                   \
    extern "C" __global__ void __launch_bounds__(256)                                         \
    xp_copy_strided_##S(const __grid_constant__ MoveArgs a) { move<T, 1>(a); }                \
    extern "C" __global__ void __launch_bounds__(256)                                         \
    xp_gather_##S(const __grid_constant__ MoveArgs a) { move<T, 2>(a); }                      \
    extern "C" __global__ void __launch_bounds__(XC_TILE * XC_TROWS)                          \
    xp_transpose_##S(const __grid_constant__ TransArgs a) { transpose<T>(a); }                \
    extern "C" __global__ void __launch_bounds__(256)                                         \
    xp_concat_##S(const __grid_constant__ ConcatArgs a) { concat<T>(a); }
XC_BY_SIZE(1, u8)
XC_BY_SIZE(2, u16)
XC_BY_SIZE(4, u32)
XC_BY_SIZE(8, u64)
XC_BY_SIZE(16, b16)
