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
#define XC_FLATND 4     // FLATND in copy.py: dims the flat strided kernel walks
#define XC_THREADS 256  // THREADS in copy.py: threads of every block
#ifndef XC_UNROLL
#define XC_UNROLL 4     // UNROLL in copy.py: chunks in flight per thread (one 16-byte load per
                        // thread left too few bytes in flight to cover HBM latency)
#endif
#ifndef XC_SEG_UNROLL
#define XC_SEG_UNROLL 4  // SEG_UNROLL in copy.py: chunks per thread of a row segment. With 8
                         // for both mappings (H200): concat along axis 1 0.93 vs 0.92 of a
                         // copy, flip 0.94 vs 0.91, but gathers of rows 0.53 vs 0.79 (a thread
                         // per chunk). 8 here alone is unmeasured: it raises the registers of
                         // the whole kernel (64 -> 66), so one block fewer per SM for both
#endif
#define XC_SEG (XC_THREADS * XC_SEG_UNROLL)  // chunks of a row segment (one block step)

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
    i64 nd, gdim, shift; // outer dims; the outer dim read through idx (-1: none); see above
    i64 segs;            // > 0: long rows, a block moves one segment (XC_SEG chunks) of a row
                         // per step (one row lookup per block); 0: a thread per chunk
    i64 glen;            // gathers: the length of x's gathered axis; an index i < 0 reads
                         // i + glen (take's negative indices, no separate pass over them)
    i64 err;             // gathers: 0, or the address (host-mapped) of two words set to
                         // (1, index) by an index out of [-glen, glen): the check rides on the
                         // gather's own read of the indices instead of a pass of its own
    i64 shape[XC_MAXND], dstr[XC_MAXND], sstr[XC_MAXND];  // outer dims, outermost first
    i64 roll[XC_MAXND];  // roll: destination coordinate k reads source coordinate k - roll
                         // (wrapped into [0, n)); 0 everywhere else. One launch for any number
                         // of rolled dims, where the pieces of a roll took 2**k copies
};

// An index of a gathered axis of length glen as an element offset in [0, glen). One out of
// range is reported through err (when not 0) and read as 0 (a valid element: glen > 0 whenever
// a gather runs). Shared by take's gather (MoveArgs) and take_along_axis's (AlongArgs).
__device__ __forceinline__ i64 take_index(i64 glen, i64 err, i64 i) {
    const i64 k = i < 0 ? i + glen : i;
    if ((unsigned long long)k < (unsigned long long)glen) return k;
    if (err) {
        volatile i64* e = (volatile i64*)err;
        e[1] = i;
        e[0] = 1;
    }
    return 0;
}

__device__ __forceinline__ i64 gathered(const MoveArgs& a, i64 i) {
    return take_index(a.glen, a.err, i);
}

// Byte offsets of outer row r in dst and src (the gathered dim through the indices).
template <typename IT>
__device__ __forceinline__ void locate(const MoveArgs& a, IT r, i64& doff, i64& soff) {
    doff = 0;
    soff = 0;
    const i64* idx = (const i64*)a.idx;
    for (int d = (int)a.nd - 1; d >= 0; --d) {
        const IT n = (IT)a.shape[d];
        const IT q = r / n;
        const IT k = r - q * n;
        r = q;
        doff += (i64)k * a.dstr[d];
        i64 ks = (i64)k - a.roll[d];
        if (ks < 0) ks += (i64)n;
        soff += (d == (int)a.gdim ? gathered(a, idx[k]) : ks) * a.sstr[d];
    }
}

// Chunk j of a row (elements [j, j + V) clipped to [0, n)) into registers.
// MODE 0: the source's inner dim is contiguous (rows); 1: any source stride (0 included);
// 2: the inner dim is gathered, element j read at src + idx[j] * ssi.
template <typename T, int MODE>
__device__ __forceinline__ void load_chunk(const MoveArgs& a, const char* srow, i64 j,
                                           Pack<T>& p) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const bool full = j >= 0 && j + V <= a.n;
    if (MODE == 0) {
        const char* s = srow + j * S;
        if (full && aligned16(s)) {
            p.u = *(const uint4*)s;
        } else {
#pragma unroll
            for (int k = 0; k < V; ++k)
                if (j + k >= 0 && j + k < a.n) p.t[k] = *(const T*)(s + k * S);
        }
    } else if (MODE == 1) {
#pragma unroll
        for (int k = 0; k < V; ++k)
            if (j + k >= 0 && j + k < a.n) p.t[k] = *(const T*)(srow + (j + k) * a.ssi);
    } else {
        const i64* idx = (const i64*)a.idx + j;
        if constexpr (V >= 2) {
            if (full && aligned16(idx)) {
                // the chunk's indices in 16-byte loads: half the load instructions
                i64 ix[V];
#pragma unroll
                for (int k = 0; k < V; k += 2) {
                    const longlong2 w = *(const longlong2*)(idx + k);
                    ix[k] = w.x;
                    ix[k + 1] = w.y;
                }
#pragma unroll
                for (int k = 0; k < V; ++k) p.t[k] = *(const T*)(srow + gathered(a, ix[k]) * a.ssi);
                return;
            }
        }
#pragma unroll
        for (int k = 0; k < V; ++k)
            if (j + k >= 0 && j + k < a.n)
                p.t[k] = *(const T*)(srow + gathered(a, idx[k]) * a.ssi);
    }
}

template <typename T>
__device__ __forceinline__ void store_chunk(char* drow, i64 j, i64 n, i64 dsi, const Pack<T>& p) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    char* d = drow + j * dsi;
    if (j >= 0 && j + V <= n && dsi == S && aligned16(d)) {
        *(uint4*)d = p.u;
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k)
            if (j + k >= 0 && j + k < n) *(T*)(drow + (j + k) * dsi) = p.t[k];
    }
}

template <typename T>
__device__ __forceinline__ i64 head(const MoveArgs& a, const char* drow) {
    return a.shift ? (i64)(((u64)drow & 15) / sizeof(T)) : 0;
}

// A thread per chunk: short rows, where a block per row would idle most of its threads.
template <typename T, int MODE, typename IT>
__device__ __forceinline__ void move_chunks(const MoveArgs& a) {
    constexpr int V = Pack<T>::V;
    const IT cpr = (IT)a.cpr;
    const IT total = (IT)a.rows * cpr;
    const IT step = (IT)gridDim.x * blockDim.x;
    for (IT g0 = (IT)blockIdx.x * blockDim.x + threadIdx.x; g0 < total; g0 += XC_UNROLL * step) {
        Pack<T> p[XC_UNROLL];
        char* drow[XC_UNROLL];
        i64 j0[XC_UNROLL];
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u) {
            const IT g = g0 + (IT)u * step;
            j0[u] = a.n;  // no chunk: nothing loaded or stored
            if (g >= total) continue;
            const IT r = g / cpr;
            const IT c = g - r * cpr;
            i64 doff, soff;
            locate<IT>(a, r, doff, soff);
            drow[u] = (char*)a.dst + doff;
            const i64 j = (i64)c * V - head<T>(a, drow[u]);
            j0[u] = j;
            if (j < a.n) load_chunk<T, MODE>(a, (const char*)a.src + soff, j, p[u]);
        }
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u)
            if (j0[u] < a.n) store_chunk<T>(drow[u], j0[u], a.n, a.dsi, p[u]);
    }
}

// A block per row segment: long rows; the row lookup (divisions, an index load) is paid once
// per XC_SEG chunks, and each thread has XC_SEG_UNROLL loads in flight.
template <typename T, int MODE>
__device__ __forceinline__ void move_segments(const MoveArgs& a) {
    constexpr int V = Pack<T>::V;
    const i64 tasks = a.rows * a.segs;
    for (i64 t = blockIdx.x; t < tasks; t += gridDim.x) {
        const i64 r = t / a.segs;
        const i64 sg = t - r * a.segs;
        i64 doff, soff;
        locate<u64>(a, (u64)r, doff, soff);
        char* drow = (char*)a.dst + doff;
        const char* srow = (const char*)a.src + soff;
        const i64 o = head<T>(a, drow);
        const i64 c0 = sg * XC_SEG + threadIdx.x;
        Pack<T> p[XC_SEG_UNROLL];
#pragma unroll
        for (int u = 0; u < XC_SEG_UNROLL; ++u) {
            const i64 c = c0 + u * XC_THREADS;
            const i64 j = c * V - o;
            if (c < a.cpr && j < a.n) load_chunk<T, MODE>(a, srow, j, p[u]);
        }
#pragma unroll
        for (int u = 0; u < XC_SEG_UNROLL; ++u) {
            const i64 c = c0 + u * XC_THREADS;
            const i64 j = c * V - o;
            if (c < a.cpr && j < a.n) store_chunk<T>(drow, j, a.n, a.dsi, p[u]);
        }
    }
}

template <typename T, int MODE>
__device__ __forceinline__ void move(const MoveArgs& a) {
    if (a.segs) {
        move_segments<T, MODE>(a);
    } else if ((u64)a.rows * (u64)a.cpr + (u64)(XC_UNROLL + 1) * gridDim.x * blockDim.x
               < 0xffffffffull) {
        // 32-bit index arithmetic where the chunk count fits: its divisions are several times
        // cheaper than 64-bit ones (the branch is uniform)
        move_chunks<T, MODE, u32>(a);
    } else {
        move_chunks<T, MODE, u64>(a);
    }
}

// ---- strided copy into a contiguous destination: short inner rows (repeat, small moves) ------
// The destination is walked flat in 16-byte chunks whatever the row length; each chunk finds
// its first element's source offset by division, then steps an odometer over (at most
// XC_FLATND) dims, so rows of 3 elements cost no idle threads and no per-element divisions.

template <typename T, typename IT>
__device__ __forceinline__ void flat_loop(const MoveArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const i64 n = a.n;
    const i64 o = (i64)(((u64)a.dst & 15) / S);
    const IT total = (IT)((n + o + V - 1) / V);
    const IT step = (IT)gridDim.x * blockDim.x;
    // dims right-aligned into XC_FLATND slots (leading slots: size 1, stride 0)
    IT sh[XC_FLATND];
    i64 st[XC_FLATND];
    const int lead = XC_FLATND - (int)a.nd;
#pragma unroll
    for (int d = 0; d < XC_FLATND; ++d) {
        sh[d] = d < lead ? 1 : (IT)a.shape[d - lead];
        st[d] = d < lead ? 0 : a.sstr[d - lead];
    }
    for (IT g = (IT)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
        const i64 j = (i64)g * V - o;
        IT e = (IT)(j < 0 ? 0 : j);
        IT c[XC_FLATND];
        i64 soff = 0;
#pragma unroll
        for (int d = XC_FLATND - 1; d >= 0; --d) {
            if (d < lead) {  // uniform: no division by the padding slots
                c[d] = 0;
                continue;
            }
            const IT q = e / sh[d];
            c[d] = e - q * sh[d];
            e = q;
            soff += (i64)c[d] * st[d];
        }
        Pack<T> p;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (j + k < 0 || j + k >= n) continue;
            p.t[k] = *(const T*)((const char*)a.src + soff);
            // advance the odometer by one element
            soff += st[XC_FLATND - 1];
            c[XC_FLATND - 1] += 1;
#pragma unroll
            for (int d = XC_FLATND - 1; d > 0; --d) {
                if (c[d] == sh[d]) {
                    c[d] = 0;
                    soff += st[d - 1] - (i64)sh[d] * st[d];
                    c[d - 1] += 1;
                }
            }
        }
        store_chunk<T>((char*)a.dst, j, n, S, p);
    }
}

template <typename T>
__device__ __forceinline__ void flat(const MoveArgs& a) {
    if ((u64)a.n + 16 + (u64)gridDim.x * blockDim.x * 17 < 0xffffffffull)
        flat_loop<T, u32>(a);
    else
        flat_loop<T, u64>(a);
}

// ---- gather along an axis (take_along_axis): an index per output element --------------------
// out[c] = x[c with c[axis] replaced by indices[c]]: x and the indices are broadcast against
// each other in every other dim (stride 0), so each output element reads its own index. The
// host merges dims contiguous in out, x and the indices alike and drops size-1 dims; x's stride
// along the gathered axis is `gstride` (its coordinate stride there is 0: the index supplies
// that offset, so a gathered dim merges with a broadcast neighbour like any other).
// The destination (C-contiguous) is walked flat in 16-byte chunks as in the flat copy (vector
// stores); a chunk finds its row's offsets by division once and steps the inner coordinate,
// dividing again only when it crosses a row end. Indices wrap and are checked by take_index.

struct AlongArgs {
    i64 dst, src, idx;   // out (C-contiguous), x, int64 indices: byte addresses
    i64 n;               // output elements
    i64 nd;              // dims (>= 1), innermost last
    i64 gstride;         // x's byte stride along the gathered axis
    i64 glen, err;       // as in MoveArgs
    i64 shape[XC_MAXND], xstr[XC_MAXND], istr[XC_MAXND];  // byte strides; xstr 0 on the axis
};

// Byte offsets in x and in the indices of outer row r (the dims before the innermost).
template <typename IT>
__device__ __forceinline__ void along_row(const AlongArgs& a, IT r, i64& xoff, i64& ioff) {
    xoff = 0;
    ioff = 0;
    for (int d = (int)a.nd - 2; d >= 0; --d) {
        const IT n = (IT)a.shape[d];
        const IT q = r / n;
        const IT k = r - q * n;
        r = q;
        xoff += (i64)k * a.xstr[d];
        ioff += (i64)k * a.istr[d];
    }
}

template <typename T, typename IT>
__device__ __forceinline__ void along_loop(const AlongArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const i64 n = a.n;
    const int last = (int)a.nd - 1;
    const IT inner = (IT)a.shape[last];
    const i64 xs = a.xstr[last], is = a.istr[last];
    const i64 o = (i64)(((u64)a.dst & 15) / S);  // elements before the first 16-byte boundary
    const IT total = (IT)((n + o + V - 1) / V);
    const IT step = (IT)gridDim.x * blockDim.x;
    for (IT g = (IT)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += step) {
        const i64 j = (i64)g * V - o;
        const IT e = (IT)(j < 0 ? 0 : j);
        IT r = e / inner;
        IT c = e - r * inner;
        i64 xoff, ioff;
        along_row<IT>(a, r, xoff, ioff);
        Pack<T> p;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            if (j + k < 0 || j + k >= n) continue;
            const i64 id = *(const i64*)((const char*)a.idx + ioff + (i64)c * is);
            p.t[k] = *(const T*)((const char*)a.src + xoff + (i64)c * xs
                                 + take_index(a.glen, a.err, id) * a.gstride);
            if (++c == inner) {  // the next row: its offsets by division (rare for long rows)
                c = 0;
                ++r;
                along_row<IT>(a, r, xoff, ioff);
            }
        }
        store_chunk<T>((char*)a.dst, j, n, S, p);
    }
}

template <typename T>
__device__ __forceinline__ void gather_along(const AlongArgs& a) {
    // 32-bit index arithmetic where the element count allows (uniform branch), as in flat()
    if ((u64)a.n + 16 + (u64)gridDim.x * blockDim.x * 17 < 0xffffffffull)
        along_loop<T, u32>(a);
    else
        along_loop<T, u64>(a);
}

// ---- tiled transpose: a = the destination's contiguous dim, b = the source's ----------------

struct TransArgs {
    i64 dst, src;
    i64 na, nb;            // sizes of the two tiled dims
    i64 dsa, dsb, ssa, ssb;  // their byte strides in dst and src
    i64 ta, tb;            // tiles along a and b
    i64 batch, nd;         // product and count of the batch dims
    i64 packed, pad;       // 1: 1- and 2-byte elements moved as 4-byte words (see below)
    i64 shape[XC_MAXND], dstr[XC_MAXND], sstr[XC_MAXND];
};

// Batch offsets of tile task t, and its tile origins along a and b. 32-bit divisions where
// the task count fits (uniform branch): two 64-bit divisions per tile were a large share of a
// thread's instructions at 16 elements per thread.
__device__ __forceinline__ void tile_task(const TransArgs& a, i64 t, int E, i64& doff, i64& soff,
                                          i64& a0, i64& b0) {
    i64 ia, ib, bi;
    if (a.batch * a.ta * a.tb < 0xffffffffll) {
        const u32 ut = (u32)t, uta = (u32)a.ta, utb = (u32)a.tb;
        const u32 r = ut / uta;
        ia = ut - r * uta;
        const u32 q = r / utb;
        ib = r - q * utb;
        bi = q;
    } else {
        const i64 r = t / a.ta;
        ia = t - r * a.ta;
        bi = r / a.tb;
        ib = r - bi * a.tb;
    }
    doff = 0;
    soff = 0;
    i64 r = bi;
    for (int d = (int)a.nd - 1; d >= 0; --d) {
        const i64 q = r / a.shape[d];
        const i64 k = r - q * a.shape[d];
        r = q;
        doff += k * a.dstr[d];
        soff += k * a.sstr[d];
    }
    a0 = ia * E;
    b0 = ib * E;
}

// Tile edge: 64 elements (16 loads in flight per thread: a 32-edge tile left too few bytes in
// flight, 0.54 of a copy for float32) except 16-byte elements (a 64-edge tile would need 64 KiB
// of shared memory, past the static limit). TILE_OF in copy.py.
#ifndef XC_TILE_WIDE
#define XC_TILE_WIDE 64  // TILE_WIDE in copy.py
#endif
template <typename T> struct Tile {
    static constexpr int E = sizeof(T) >= 16 ? 32 : XC_TILE_WIDE;
    static constexpr int R = XC_THREADS / E;  // thread rows
    // pad each tile row to an odd number of 4-byte banks: the column reads of the store phase
    // then hit distinct banks for every element size
    static constexpr int P = sizeof(T) >= 4 ? 1 : 4 / (int)sizeof(T);
};

// One tile at (a0, b0). FULL: the whole E x E tile lies inside both dims, no bounds checks (the
// checks on every element of every tile held (8192, 8192) float32 at 0.84 of a copy; as the
// element-wise tiled kernels measured, elementwise_tiled.cuh).
template <bool FULL, typename T, int E, int R, int W>
__device__ __forceinline__ void transpose_tile(const TransArgs& a, T (*tile)[W], const char* s,
                                               char* dp, i64 a0, i64 b0, int tx, int ty) {
    // load: tx walks b, the source's contiguous dim. A fixed trip count (not k = ty..E)
    // unrolls fully, and every load is issued before the first shared store: a loop
    // starting at ty kept one load in flight per thread (0.43-0.54 of a copy).
    T v[E / R];
    const i64 bj = b0 + tx;
#pragma unroll
    for (int i = 0; i < E / R; ++i) {
        const i64 ai = a0 + ty + i * R;
        if (FULL || (ai < a.na && bj < a.nb)) v[i] = *(const T*)(s + ai * a.ssa + bj * a.ssb);
    }
#pragma unroll
    for (int i = 0; i < E / R; ++i) tile[ty + i * R][tx] = v[i];
    __syncthreads();
    // store: tx walks a, the destination's contiguous dim
    const i64 ai = a0 + tx;
#pragma unroll
    for (int i = 0; i < E / R; ++i) {
        const i64 bk = b0 + ty + i * R;
        if (FULL || (ai < a.na && bk < a.nb))
            *(T*)(dp + ai * a.dsa + bk * a.dsb) = tile[tx][ty + i * R];
    }
    __syncthreads();
}

template <typename T>
__device__ __forceinline__ void transpose_elems(const TransArgs& a) {
    constexpr int E = Tile<T>::E, R = Tile<T>::R, W = E + Tile<T>::P;
    __shared__ T tile[E][W];
    const i64 tasks = a.batch * a.ta * a.tb;
    const int tx = threadIdx.x % E, ty = threadIdx.x / E;
    for (i64 t = blockIdx.x; t < tasks; t += gridDim.x) {
        i64 doff, soff, a0, b0;
        tile_task(a, t, E, doff, soff, a0, b0);
        const char* s = (const char*)a.src + soff;
        char* dp = (char*)a.dst + doff;
        if (a0 + E <= a.na && b0 + E <= a.nb)
            transpose_tile<true, T, E, R, W>(a, tile, s, dp, a0, b0, tx, ty);
        else
            transpose_tile<false, T, E, R, W>(a, tile, s, dp, a0, b0, tx, ty);
    }
}

// 1- and 2-byte elements: a lane moving one element per access made the int8 transpose 0.14 of
// a copy. Here a lane loads a 4-byte word (P elements) along b and stores one along a; the
// host checks both tiled dims are whole words (na, nb multiples of P, every other stride and
// both bases multiples of 4). Tile rows are E + 1 elements: the column reads of the store phase
// (P consecutive rows per lane) then fall in distinct banks.
template <bool FULL, typename T, int E, int R>
__device__ __forceinline__ void transpose_words_tile(const TransArgs& a, T (*tile)[E + 1],
                                                     const char* s, char* dp, i64 a0, i64 b0,
                                                     int tx, int ty) {
    constexpr int S = (int)sizeof(T);
    constexpr int P = 4 / S;
    u32 v[E / R];
    const i64 bw = b0 + tx * P;
#pragma unroll
    for (int i = 0; i < E / R; ++i) {  // fixed trip count: all loads in flight at once
        const i64 ai = a0 + ty + i * R;
        if (FULL || (ai < a.na && bw < a.nb)) v[i] = *(const u32*)(s + ai * a.ssa + bw * S);
    }
#pragma unroll
    for (int i = 0; i < E / R; ++i) {
#pragma unroll
        for (int q = 0; q < P; ++q) tile[ty + i * R][tx * P + q] = (T)(v[i] >> (8 * S * q));
    }
    __syncthreads();
    const i64 aw = a0 + tx * P;
#pragma unroll
    for (int i = 0; i < E / R; ++i) {
        const int k = ty + i * R;
        const i64 bj = b0 + k;
        if (FULL || (aw < a.na && bj < a.nb)) {
            u32 w = 0;
#pragma unroll
            for (int q = 0; q < P; ++q) w |= (u32)tile[tx * P + q][k] << (8 * S * q);
            *(u32*)(dp + aw * S + bj * a.dsb) = w;
        }
    }
    __syncthreads();
}

template <typename T>
__device__ __forceinline__ void transpose_words(const TransArgs& a) {
    constexpr int P = 4 / (int)sizeof(T);
    constexpr int E = 32 * P;  // 32 words a tile row
    constexpr int R = XC_THREADS / 32;
    __shared__ T tile[E][E + 1];
    const i64 tasks = a.batch * a.ta * a.tb;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    for (i64 t = blockIdx.x; t < tasks; t += gridDim.x) {
        i64 doff, soff, a0, b0;
        tile_task(a, t, E, doff, soff, a0, b0);
        const char* s = (const char*)a.src + soff;
        char* dp = (char*)a.dst + doff;
        if (a0 + E <= a.na && b0 + E <= a.nb)  // a whole tile: no bounds checks
            transpose_words_tile<true, T, E, R>(a, tile, s, dp, a0, b0, tx, ty);
        else
            transpose_words_tile<false, T, E, R>(a, tile, s, dp, a0, b0, tx, ty);
    }
}

template <typename T>
__device__ __forceinline__ void transpose(const TransArgs& a) {
    if constexpr (sizeof(T) < 4) {
        if (a.packed) {
            transpose_words<T>(a);
            return;
        }
    }
    transpose_elems<T>(a);
}

// ---- concatenation of C-contiguous parts: one launch walks the output ------------------------

struct ConcatArgs {
    i64 dst;         // the output at the first column this launch writes
    i64 rows;        // product of the dims before the axis
    i64 row_stride;  // bytes between output rows
    i64 width;       // columns (elements) this launch writes per row
    i64 cpr, shift, nparts, segs;  // segs as in MoveArgs
    i64 src[XC_MAXPARTS];         // part addresses
    i64 w[XC_MAXPARTS];           // part row widths (elements)
    i64 start[XC_MAXPARTS + 1];   // first column of each part (relative to dst); then width
};

// Output chunk j (columns [j, j + V) of row `row`) from the parts; q: a part at or before the
// one holding column max(j, 0).
template <typename T>
__device__ __forceinline__ void concat_chunk(const ConcatArgs& a, i64 row, i64 j, int q,
                                             Pack<T>& p) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const int np = (int)a.nparts;
    const i64 jf = j < 0 ? 0 : j;
    while (jf >= a.start[q + 1]) ++q;  // the part holding the chunk's first column
    if (j >= 0 && j + V <= a.start[q + 1]) {  // whole chunk in one part
        const char* s = (const char*)a.src[q] + (row * a.w[q] + j - a.start[q]) * S;
        if (aligned16(s)) {
            p.u = *(const uint4*)s;
        } else {
#pragma unroll
            for (int k = 0; k < V; ++k) p.t[k] = *(const T*)(s + k * S);
        }
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const i64 jk = j + k;
            if (jk < 0 || jk >= a.width) continue;
            while (q < np - 1 && jk >= a.start[q + 1]) ++q;
            p.t[k] = *(const T*)((const char*)a.src[q] + (row * a.w[q] + jk - a.start[q]) * S);
        }
    }
}

template <typename T, typename IT>
__device__ __forceinline__ void concat_chunks(const ConcatArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const IT cpr = (IT)a.cpr;
    const IT total = (IT)a.rows * cpr;
    const IT step = (IT)gridDim.x * blockDim.x;
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
            const i64 j = (i64)c * V - (a.shift ? (i64)(((u64)drow[u] & 15) / S) : 0);
            j0[u] = j;
            if (j < a.width) concat_chunk<T>(a, (i64)row, j, 0, p[u]);
        }
#pragma unroll
        for (int u = 0; u < XC_UNROLL; ++u)
            if (j0[u] < a.width) store_chunk<T>(drow[u], j0[u], a.width, S, p[u]);
    }
}

template <typename T>
__device__ __forceinline__ void concat_segments(const ConcatArgs& a) {
    constexpr int V = Pack<T>::V;
    constexpr int S = (int)sizeof(T);
    const i64 tasks = a.rows * a.segs;
    for (i64 t = blockIdx.x; t < tasks; t += gridDim.x) {
        const i64 row = t / a.segs;
        const i64 sg = t - row * a.segs;
        char* drow = (char*)a.dst + row * a.row_stride;
        const i64 o = a.shift ? (i64)(((u64)drow & 15) / S) : 0;
        // the part holding the segment's first column: once per block step
        const i64 first = sg * XC_SEG * V - o;
        int q = 0;
        while ((first < 0 ? 0 : first) >= a.start[q + 1]) ++q;
        const i64 c0 = sg * XC_SEG + threadIdx.x;
        Pack<T> p[XC_SEG_UNROLL];
#pragma unroll
        for (int u = 0; u < XC_SEG_UNROLL; ++u) {
            const i64 c = c0 + u * XC_THREADS;
            const i64 j = c * V - o;
            if (c < a.cpr && j < a.width) concat_chunk<T>(a, row, j, q, p[u]);
        }
#pragma unroll
        for (int u = 0; u < XC_SEG_UNROLL; ++u) {
            const i64 c = c0 + u * XC_THREADS;
            const i64 j = c * V - o;
            if (c < a.cpr && j < a.width) store_chunk<T>(drow, j, a.width, S, p[u]);
        }
    }
}

template <typename T>
__device__ __forceinline__ void concat(const ConcatArgs& a) {
    if (a.segs)
        concat_segments<T>(a);
    else if ((u64)a.rows * (u64)a.cpr + (u64)(XC_UNROLL + 1) * gridDim.x * blockDim.x
             < 0xffffffffull)
        concat_chunks<T, u32>(a);
    else
        concat_chunks<T, u64>(a);
}

// ---- the extern "C" names: one set per element size ----------------------------------------

// One kernel per instantiation line: the runtime compiles the line a call needs (copy.units).
#define XC_COPY_ROWS(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_copy_rows_##S(const __grid_constant__ MoveArgs a) { move<T, 0>(a); }
#define XC_COPY_STRIDED(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_copy_strided_##S(const __grid_constant__ MoveArgs a) { move<T, 1>(a); }
#define XC_GATHER(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_gather_##S(const __grid_constant__ MoveArgs a) { move<T, 2>(a); }
#define XC_COPY_FLAT(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_copy_flat_##S(const __grid_constant__ MoveArgs a) { flat<T>(a); }
#define XC_TRANSPOSE(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_transpose_##S(const __grid_constant__ TransArgs a) { transpose<T>(a); }
#define XC_GATHER_ALONG(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_gather_along_##S(const __grid_constant__ AlongArgs a) { gather_along<T>(a); }
#define XC_CONCAT(S, T) \
    extern "C" __global__ void __launch_bounds__(256) \
    xp_concat_##S(const __grid_constant__ ConcatArgs a) { concat<T>(a); }

XC_COPY_ROWS(1, u8)
XC_COPY_ROWS(2, u16)
XC_COPY_ROWS(4, u32)
XC_COPY_ROWS(8, u64)
XC_COPY_ROWS(16, b16)
XC_COPY_STRIDED(1, u8)
XC_COPY_STRIDED(2, u16)
XC_COPY_STRIDED(4, u32)
XC_COPY_STRIDED(8, u64)
XC_COPY_STRIDED(16, b16)
XC_GATHER(1, u8)
XC_GATHER(2, u16)
XC_GATHER(4, u32)
XC_GATHER(8, u64)
XC_GATHER(16, b16)
XC_COPY_FLAT(1, u8)
XC_COPY_FLAT(2, u16)
XC_COPY_FLAT(4, u32)
XC_COPY_FLAT(8, u64)
XC_COPY_FLAT(16, b16)
XC_TRANSPOSE(1, u8)
XC_TRANSPOSE(2, u16)
XC_TRANSPOSE(4, u32)
XC_TRANSPOSE(8, u64)
XC_TRANSPOSE(16, b16)
XC_CONCAT(1, u8)
XC_CONCAT(2, u16)
XC_CONCAT(4, u32)
XC_CONCAT(8, u64)
XC_CONCAT(16, b16)
XC_GATHER_ALONG(1, u8)
XC_GATHER_ALONG(2, u16)
XC_GATHER_ALONG(4, u32)
XC_GATHER_ALONG(8, u64)
XC_GATHER_ALONG(16, b16)
