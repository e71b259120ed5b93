// Sorting, small-integer set functions and binary search (launchers: sort.py).
//
// Every kernel reads the raw bits of its dtype as an unsigned integer of the same width and maps
// them to an order-preserving unsigned key (``to_key``), so one template per width serves every
// dtype: MODE_UNSIGNED (bool, uint*), MODE_SIGNED (int*: flip the sign bit), MODE_FLOAT
// (float32/64: flip every bit of a negative, the sign bit of a positive). NaN (any sign or
// payload) becomes the largest key, so NaNs sort last and keep their relative order in a stable
// sort; -0.0 becomes the key of +0.0, so the two are equal and stable order decides (NumPy).
// Every kernel is an extern "C" instance of a template: the file compiles standalone and one
// NVRTC compile proves every name the launchers can ask for.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define MODE_UNSIGNED 0
#define MODE_SIGNED 1
#define MODE_FLOAT 2
#define FULL_MASK 0xffffffffu

template <typename K>
__device__ __forceinline__ K sign_bit() { return (K)((K)1 << (sizeof(K) * 8 - 1)); }

// The key of raw bits v; ``special`` is set for NaN and -0.0, the two floats whose bits the key
// does not keep (the sort then writes values by gathering the original bits).
template <typename K>
__device__ __forceinline__ K to_key(K v, int mode, bool& special) {
    const K S = sign_bit<K>();
    if (mode == MODE_SIGNED) return (K)(v ^ S);
    if (mode == MODE_FLOAT) {
        if constexpr (sizeof(K) >= 4) {
            const K EXP = sizeof(K) == 4 ? (K)0x7f800000u : (K)0x7ff0000000000000ull;
            const K mag = (K)(v & (K)~S);
            if (mag > EXP) { special = true; return (K)~(K)0; }  // NaN: last
            if (v == S) { special = true; return S; }            // -0.0: the key of +0.0
            return (v & S) ? (K)~v : (K)(v | S);
        }
    }
    return v;
}

template <typename K>
__device__ __forceinline__ K to_key(K v, int mode) {
    bool unused = false;
    return to_key<K>(v, mode, unused);
}

// Inverse of to_key for keys of numbers that are neither NaN nor -0.0.
template <typename K>
__device__ __forceinline__ K from_key(K k, int mode) {
    const K S = sign_bit<K>();
    if (mode == MODE_SIGNED) return (K)(k ^ S);
    if (mode == MODE_FLOAT) return (k & S) ? (K)(k ^ S) : (K)~k;
    return k;
}

// ---- block helpers ---------------------------------------------------------------------------

// The lanes holding the same 8-bit digit as this one: a ballot per bit (cheaper than
// __match_any_sync, which the hardware serialises over distinct values), and only for the bits
// that vary in the row (`vb`, block-uniform): the others are equal in every lane.
__device__ __forceinline__ unsigned match_digit8(unsigned d, unsigned vb) {
    unsigned peers = FULL_MASK;
#pragma unroll
    for (int b = 0; b < 8; ++b) {
        if ((vb >> b) & 1u) {
            const unsigned ones = __ballot_sync(FULL_MASK, (d >> b) & 1u);
            peers &= ((d >> b) & 1u) ? ones : ~ones;
        }
    }
    return peers;
}

// Exclusive prefix sum of v over the block (WARPS warps); wsum holds 32 unsigned of scratch.
// Starts and ends with __syncthreads, so callers may reuse wsum and whatever they read before.
template <int WARPS>
__device__ __forceinline__ unsigned block_exclusive_scan(unsigned v, unsigned* wsum) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned incl = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned t = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= o) incl += t;
    }
    if (WARPS == 1) return incl - v;
    __syncthreads();
    if (lane == 31) wsum[w] = incl;
    __syncthreads();
    if (w == 0) {
        const unsigned s = lane < WARPS ? wsum[lane] : 0u;
        unsigned si = s;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const unsigned t = __shfl_up_sync(FULL_MASK, si, o);
            if (lane >= o) si += t;
        }
        if (lane < WARPS) wsum[lane] = si - s;
    }
    __syncthreads();
    return wsum[w] + incl - v;
}

// ---- segmented sort: one block sorts one row in shared memory -------------------------------
//
// Why an LSD radix sort over 8-bit digits: it is stable by construction (the spec's sort is),
// needs no comparison tie-break on the index, and a row of 32-bit keys takes 4 passes.
// Digits are those of k - kmin (the row's smallest key; order-preserving), and only the passes
// up to the top bit of kmax - kmin run: int64 data of a small range, bool rows or rows of equal
// keys cost one pass or none.
//
// One pass: warp w owns the ITEMS*32 consecutive positions [w*ITEMS*32, ...); it walks them 32
// at a time in order, so ranking within the warp is stable: ballots (match_digit8) group the
// lanes of one digit, each lane's rank is the warp's running count of that digit (a private,
// per-warp histogram in shared memory) plus its peers below it. Then one block-wide exclusive
// scan over the counts in digit-major, warp-minor order gives every (digit, warp) its first
// position, and each item goes to that plus its rank: a stable counting-sort scatter.
//
// The histogram rows are padded to 257 counters so the scan's transposed reads (lanes of a warp
// reading consecutive warps of one digit) fall in distinct banks.
//
// Shared memory: keys[CAP] of the key width, then 32 bytes of reductions, 32 scan words, the
// WARPS x 257 histogram, then idx[CAP] (u16: rows are at most 65535 long) when indices are
// carried (argsort, or a float row holding NaN or -0.0 whose values are gathered by index).

template <typename K, int WARPS, int ITEMS>
__device__ __forceinline__ void segsort(const K* __restrict__ x, K* __restrict__ vout,
                                        long long* __restrict__ iout, long long nrows, int n,
                                        int mode, int want_values, int want_indices) {
    constexpr int T = 32 * WARPS;
    constexpr int CAP = T * ITEMS;
    constexpr int HS = 257;
    constexpr int BITS = (int)sizeof(K) * 8;
    extern __shared__ __align__(16) unsigned char smem[];
    K* keys = reinterpret_cast<K*>(smem);
    u64* red = reinterpret_cast<u64*>(smem + CAP * sizeof(K));
    unsigned* wsum = reinterpret_cast<unsigned*>(red + 4);
    unsigned* hist = wsum + 32;
    u16* idx = reinterpret_cast<u16*>(hist + WARPS * HS);

    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const unsigned lt_mask = (1u << lane) - 1u;
    // idx exists in shared memory only when the launcher sized it (see sort.py: smem_bytes)
    const bool idx_smem = want_indices || mode == MODE_FLOAT;

    // red[parity]: a row's smallest key, red[2 + parity]: its largest; the other cells are the
    // next row's (no race with a slow reader of this row's)
    int parity = 0;
    for (long long row = blockIdx.x; row < nrows; row += gridDim.x, parity ^= 1) {
        const K* xr = x + row * (long long)n;
        if (tid == 0) { red[parity] = ~0ull; red[2 + parity] = 0; }
        __syncthreads();  // red cleared; the previous row's stores have read keys/idx
        K kmin = (K)~(K)0, kmax = 0;
        bool special = false;
        for (int i = tid; i < n; i += T) {
            const K k = to_key<K>(xr[i], mode, special);
            kmin = k < kmin ? k : kmin;
            kmax = k > kmax ? k : kmax;
            keys[i] = k;
            if (idx_smem) idx[i] = (u16)i;
        }
        u64 lo = (u64)kmin, hi = (u64)kmax;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const u64 a = __shfl_xor_sync(FULL_MASK, lo, o), b = __shfl_xor_sync(FULL_MASK, hi, o);
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
        if (lane == 0) {
            atomicMin(&red[parity], lo);
            atomicMax(&red[2 + parity], hi);
        }
        const bool gather = __syncthreads_or(special) != 0;  // also publishes red
        const K rmin = (K)red[parity], rmax = (K)red[2 + parity];
        // Keys become k - kmin here, once (the passes then shift plain keys; the stores add
        // kmin back). Padding up to CAP: the row's largest key, so it lands after every real
        // key (stable: it starts after them) and sets no bit above those of the real keys.
        if (rmin != 0 || n < CAP) {  // block-uniform
            for (int i = tid; i < CAP; i += T) {
                if (i < n) {
                    keys[i] = (K)(keys[i] - rmin);
                } else {
                    keys[i] = (K)(rmax - rmin);
                    if (idx_smem) idx[i] = (u16)i;
                }
            }
            __syncthreads();
        }
        // the bits of k - kmin that may vary: all up to the top bit of the span
        const u64 span = (u64)(K)(rmax - rmin);
        const u64 vary = span == 0 ? 0 : (~0ull >> __clzll(span));
        const bool carry = want_indices || gather;

        for (int shift = 0; shift < BITS; shift += 8) {
            const unsigned vb = (unsigned)(vary >> shift) & 0xffu;
            if (vb == 0) continue;  // block-uniform
            unsigned* h = hist + w * HS;
            for (int d = lane; d < 256; d += 32) h[d] = 0;
            __syncwarp();
            K kr[ITEMS];
            unsigned rk[ITEMS];  // rank within the warp | carried index << 16 (one register)
            const int base = w * ITEMS * 32 + lane;
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const K k = keys[base + j * 32];
                kr[j] = k;
                const unsigned d = (unsigned)(k >> shift) & 0xffu;
                const unsigned peers = match_digit8(d, vb);
                const unsigned old = h[d];
                __syncwarp();
                if (lane == __ffs(peers) - 1) h[d] = old + __popc(peers);
                __syncwarp();
                rk[j] = old + __popc(peers & lt_mask);
                if (carry) rk[j] |= (unsigned)idx[base + j * 32] << 16;
            }
            __syncthreads();
            // (digit, warp) counts in digit-major order: thread t owns entries 8t .. 8t+7
            // (read twice rather than held across the scan: registers are the scarce resource)
            unsigned s = 0;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int L = tid * 8 + q;
                s += hist[(L % WARPS) * HS + L / WARPS];
            }
            unsigned ex = block_exclusive_scan<WARPS>(s, wsum);
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int L = tid * 8 + q;
                const unsigned c = hist[(L % WARPS) * HS + L / WARPS];
                hist[(L % WARPS) * HS + L / WARPS] = ex;
                ex += c;
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < ITEMS; ++j) {
                const unsigned d = (unsigned)(kr[j] >> shift) & 0xffu;
                const unsigned pos = h[d] + (rk[j] & 0xffffu);
                keys[pos] = kr[j];
                if (carry) idx[pos] = (u16)(rk[j] >> 16);
            }
            __syncthreads();
        }

        K* vr = vout + row * (long long)n;
        long long* ir_out = iout + row * (long long)n;
        for (int i = tid; i < n; i += T) {
            if (want_values) vr[i] = gather ? xr[idx[i]] : from_key<K>((K)(keys[i] + rmin), mode);
            if (want_indices) ir_out[i] = (long long)idx[i];
        }
    }
}

// At least 1536 threads resident per SM (3 blocks of 512, 6 of 256, ...): without the bound the
// compiler took more than 42 registers for 64-bit keys and two blocks of 512 fit, 1.35x slower.
#define SEGSORT_MIN_BLOCKS(WARPS) ((WARPS) >= 32 ? 1 : (48 / (WARPS) > 32 ? 32 : 48 / (WARPS)))

#define SEGSORT(W, K, WARPS, ITEMS)                                                               \
    extern "C" __global__ void __launch_bounds__(32 * WARPS, SEGSORT_MIN_BLOCKS(WARPS))           \
    xp_segsort_##W##_##WARPS##x##ITEMS(const K* __restrict__ x, K* __restrict__ vout,             \
                                       long long* __restrict__ iout, long long nrows, int n,      \
                                       int mode, int want_values, int want_indices) {             \
        segsort<K, WARPS, ITEMS>(x, vout, iout, nrows, n, mode, want_values, want_indices);       \
    }

// The (warps, items per thread) tiers of sort.py's SEGSORT_CONFIGS: capacity 32*warps*items.
// One instantiation per line: the runtime compiles the line a call needs (sort.units).
SEGSORT(1, u8, 1, 4)
SEGSORT(1, u8, 4, 4)
SEGSORT(1, u8, 8, 4)
SEGSORT(1, u8, 8, 8)
SEGSORT(1, u8, 16, 8)
SEGSORT(1, u8, 32, 8)
SEGSORT(1, u8, 32, 16)
SEGSORT(2, u16, 1, 4)
SEGSORT(2, u16, 4, 4)
SEGSORT(2, u16, 8, 4)
SEGSORT(2, u16, 8, 8)
SEGSORT(2, u16, 16, 8)
SEGSORT(2, u16, 32, 8)
SEGSORT(2, u16, 32, 16)
SEGSORT(4, u32, 1, 4)
SEGSORT(4, u32, 4, 4)
SEGSORT(4, u32, 8, 4)
SEGSORT(4, u32, 8, 8)
SEGSORT(4, u32, 16, 8)
SEGSORT(4, u32, 32, 8)
SEGSORT(4, u32, 32, 16)
SEGSORT(8, u64, 1, 4)
SEGSORT(8, u64, 4, 4)
SEGSORT(8, u64, 8, 4)
SEGSORT(8, u64, 8, 8)
SEGSORT(8, u64, 16, 8)
SEGSORT(8, u64, 32, 8)
SEGSORT(8, u64, 32, 16)

// ---- short rows: one warp per row, ranks by counting ---------------------------------------
//
// Rows of at most 32*IW elements (IW = 1, 2): lane l holds positions l, l+32, ...; an element's
// place is the number of keys below it plus the number of equal keys before it (stable), from
// n shuffles: far fewer instructions than the radix passes with their 256-bin histograms, and
// eight rows share a block instead of one row a block. Values are written from the raw bits the
// lane holds, so NaN payloads and zero signs are kept.
template <typename K, int IW>
__device__ __forceinline__ void warpsort(const K* __restrict__ x, K* __restrict__ vout,
                                         long long* __restrict__ iout, long long nrows, int n,
                                         int mode, int want_values, int want_indices) {
    const int lane = threadIdx.x & 31;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; row < nrows;
         row += nwarps) {
        const K* xr = x + row * (long long)n;
        K raw[IW], key[IW];
        unsigned rank[IW];
#pragma unroll
        for (int t = 0; t < IW; ++t) {
            const int p = lane + 32 * t;
            raw[t] = p < n ? xr[p] : (K)0;
            key[t] = p < n ? to_key<K>(raw[t], mode) : (K)~(K)0;  // padding: after every key
            rank[t] = 0;
        }
#pragma unroll
        for (int s = 0; s < IW; ++s) {
            const int m = min(32, n - 32 * s);  // row-uniform
            for (int j = 0; j < m; ++j) {
                const K kf = (K)__shfl_sync(FULL_MASK, key[s], j);
#pragma unroll
                for (int t = 0; t < IW; ++t)
                    rank[t] += (kf < key[t]) | ((kf == key[t]) & (j + 32 * s < lane + 32 * t));
            }
        }
        K* vr = vout + row * (long long)n;
        long long* ir = iout + row * (long long)n;
#pragma unroll
        for (int t = 0; t < IW; ++t) {
            const int p = lane + 32 * t;
            if (p < n) {
                if (want_values) vr[rank[t]] = raw[t];
                if (want_indices) ir[rank[t]] = p;
            }
        }
    }
}

#define WARPSORT(W, K, IW)                                                                        \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_warpsort_##W##_##IW(const K* __restrict__ x, K* __restrict__ vout,                         \
                           long long* __restrict__ iout, long long nrows, int n, int mode,        \
                           int want_values, int want_indices) {                                   \
        warpsort<K, IW>(x, vout, iout, nrows, n, mode, want_values, want_indices);                \
    }

WARPSORT(1, u8, 1)
WARPSORT(1, u8, 2)
WARPSORT(2, u16, 1)
WARPSORT(2, u16, 2)
WARPSORT(4, u32, 1)
WARPSORT(4, u32, 2)
WARPSORT(8, u64, 1)
WARPSORT(8, u64, 2)

// ---- long rows (n > L_MAX): a onesweep LSD radix sort, several blocks per row ---------------
//
// After Adinets and Merrill's "Onesweep" (2022): one upfront pass (xp_osort_hist) counts every
// byte of every key of a row at once (hist[row][byte][256]) with the row's smallest and largest
// key; its last block sums them up in one word, which every later kernel reads on the device
// (no host sync): only the bytes up to the top bit where a row's keys differ are sorted by
// (int64 data of a small range, bool rows or rows of equal keys take one pass), the other
// passes exit at once. Then one kernel a pass (xp_osort_pass): a block takes the next tile of
// LT = 4096 of its row in the order blocks start (a counter, so a tile only ever waits on
// tiles taken before it), ranks it stably as the block sort does, publishes each digit's count
// in the tile, and finds the digit's count in all earlier tiles by looking back over their
// published words (decoupled look-back: a tile's inclusive prefix ends the walk; OS_WINDOW
// words a step). The digit's first position in the row (the prefix of the upfront counts) plus
// that plus the rank in the tile places every key; keys are staged in shared memory in digit
// order so each digit's run of the tile is written out in one piece. No pass between kernels
// and no per-tile counts in memory: a pass reads and writes each key once. The first pass reads
// the data and makes the keys, the last writes the values (or, for rows holding NaN or -0.0,
// int64 positions that xp_osort_gather turns into the original bits) and int64 indices.
// Positions travel as int32 (n < 2**30: the status word holds a count in 30 bits).

#ifndef LWARPS
#define LWARPS 16
#endif
#ifndef LITEMS
#define LITEMS 8
#endif
#define LT (32 * LWARPS * LITEMS)
#define OS_AGG 0x40000000u  // the word holds the tile's own count of the digit
#define OS_INC 0x80000000u  // the word holds the count in this and every earlier tile
#define OS_CNT 0x3fffffffu
#define OS_WANT_VALUES 1
#define OS_WANT_INDICES 2
#define OS_WINDOW 8  // earlier tiles' words a look-back step loads

__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_relaxed(unsigned* p, unsigned v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// stat[row] = {~smallest key, largest key, NaN or -0.0 seen}: zeroed memory is the identity of
// all three (the smallest is kept complemented, by atomicMax).
// The last block to finish writes summary[0] = (the top bit where any row's keys differ, + 1)
// | (NaN or -0.0 in any row) << 8: the one word the host reads; summary[1] counts the blocks.
template <typename K>
__device__ __forceinline__ void osort_hist(const K* __restrict__ x, unsigned* __restrict__ hist,
                                           u64* __restrict__ stat, u64* __restrict__ summary,
                                           long long row0, long long nrows, int n, int chunk,
                                           int mode, unsigned nblocks) {
    constexpr int W = sizeof(K);
    __shared__ unsigned h[W * 256];
    __shared__ u64 red[3];
    const long long row = row0 + blockIdx.y;
    for (int i = threadIdx.x; i < W * 256; i += blockDim.x) h[i] = 0;
    if (threadIdx.x < 3) red[threadIdx.x] = 0;
    __syncthreads();
    const K* xr = x + row * (long long)n;
    const int lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
    K kmin = (K)~(K)0, kmax = 0;
    bool special = false;
    // a run of equal digits of one byte is counted by one atomic: the high bytes of real data
    // hold few values, and 32 lanes adding to one counter serialise
    unsigned prev[W], run[W];
#pragma unroll
    for (int b = 0; b < W; ++b) { prev[b] = 0; run[b] = 0; }
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const K k = to_key<K>(xr[i], mode, special);
        kmin = k < kmin ? k : kmin;
        kmax = k > kmax ? k : kmax;
#pragma unroll
        for (int b = 0; b < W; ++b) {
            const unsigned d = (unsigned)(k >> (8 * b)) & 0xffu;
            if (d != prev[b]) {
                if (run[b]) atomicAdd(&h[b * 256 + prev[b]], run[b]);
                prev[b] = d;
                run[b] = 0;
            }
            ++run[b];
        }
    }
#pragma unroll
    for (int b = 0; b < W; ++b)
        if (run[b]) atomicAdd(&h[b * 256 + prev[b]], run[b]);
    u64 nlo = ~(u64)kmin, top = kmax;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        nlo = max(nlo, __shfl_xor_sync(FULL_MASK, nlo, o));
        top = max(top, __shfl_xor_sync(FULL_MASK, top, o));
    }
    if ((threadIdx.x & 31) == 0) { atomicMax(&red[0], nlo); atomicMax(&red[1], top); }
    if (__syncthreads_or(special) && threadIdx.x == 0) red[2] = 1;
    __syncthreads();
    unsigned* hr = hist + row * (W * 256);
    for (int i = threadIdx.x; i < W * 256; i += blockDim.x)
        if (h[i]) atomicAdd(&hr[i], h[i]);
    if (threadIdx.x == 0) {
        // ~kmin was taken in 64 bits: a narrower key's complement has its high bits set, the
        // same in every block, so the maximum is still the smallest key's
        atomicMax(&stat[3 * row], red[0]);
        atomicMax(&stat[3 * row + 1], red[1]);
        if (red[2]) atomicOr(&stat[3 * row + 2], 1ull);
        __threadfence();
        red[0] = atomicAdd(&summary[1], 1ull) == nblocks - 1;
    }
    __syncthreads();
    if (!red[0]) return;
    __threadfence();
    __shared__ u64 acc[2];
    if (threadIdx.x < 2) acc[threadIdx.x] = 0;
    __syncthreads();
    u64 vary = 0, sp = 0;
    const u64 mask = (u64)(K)~(K)0;
    for (long long r = threadIdx.x; r < nrows; r += blockDim.x) {
        const u64 lo = ~__ldcg(&stat[3 * r]) & mask;
        vary |= lo ^ __ldcg(&stat[3 * r + 1]);
        sp |= __ldcg(&stat[3 * r + 2]);
    }
    atomicOr(&acc[0], vary);
    atomicOr(&acc[1], sp);
    __syncthreads();
    if (threadIdx.x == 0) summary[0] = (u64)(64 - __clzll((long long)acc[0])) | (acc[1] << 8);
}

// Pass p over the digit at `shift` (8p). The upfront summary decides, on the device, what the
// pass does: nothing where shift is at or above the rows' top differing bit (p > 0), else the
// last pass is the one holding that bit. Sources: the data (pass 0: keys are made, positions
// are the indices) or keys[(p - 1) % 2] / pos[(p - 1) % 2]; a pass before the last writes
// keys[p % 2] (and pos[p % 2] where positions travel); the last writes the values (vout, when
// wanted and not gathered) and int64 positions (iout: the indices, or the gather's positions).
// status[p][row][tile][256] and ctr[p][row] are zeroed memory.
template <typename K>
__device__ __forceinline__ void osort_pass(const K* __restrict__ x, K* __restrict__ keys0,
                                           K* __restrict__ keys1, int* __restrict__ pos0,
                                           int* __restrict__ pos1, K* __restrict__ vout,
                                           long long* __restrict__ iout,
                                           const unsigned* __restrict__ hist,
                                           const u64* __restrict__ summary,
                                           unsigned* __restrict__ status,
                                           unsigned* __restrict__ ctr, long long row0,
                                           long long nrows, int n, int ntiles, int p, int mode,
                                           int want) {
    constexpr int HS = 257;
    const int shift = 8 * p;
    const u64 sw = __ldcg(summary);
    const int top = (int)(sw & 0xffu);
    if (p > 0 && shift >= top) return;
    const bool gather = (want & OS_WANT_VALUES) && mode == MODE_FLOAT && (sw >> 8);
    const bool first = p == 0, last = shift + 8 >= top;
    const bool carry = (want & OS_WANT_INDICES) || gather;
    const K* src = first ? x : (p & 1 ? keys0 : keys1);
    const int* psrc = p & 1 ? pos0 : pos1;
    K* kdst = p & 1 ? keys1 : keys0;
    int* pdst = p & 1 ? pos1 : pos0;
    status += (long long)p * nrows * ntiles * 256;
    ctr += (long long)p * nrows;
    extern __shared__ __align__(16) unsigned char osmem[];
    K* skeys = reinterpret_cast<K*>(osmem);
    int* spos = reinterpret_cast<int*>(skeys + LT);
    unsigned* whist = reinterpret_cast<unsigned*>(spos + LT);
    unsigned* wsum = whist + LWARPS * HS;
    unsigned* dstart = wsum + 32;                    // 257: the tile's first position of a digit
    int* goff = reinterpret_cast<int*>(dstart + 257);  // 256: row position - tile position
    unsigned* tile_id = reinterpret_cast<unsigned*>(goff + 256);
    const long long row = row0 + blockIdx.y;
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    if (tid == 0) *tile_id = atomicAdd(&ctr[row], 1u);
    {  // the row's first position of each digit: the prefix of the upfront counts
        const unsigned v = tid < 256 ? hist[(row * (long long)sizeof(K) + p) * 256 + tid] : 0u;
        const unsigned ex = block_exclusive_scan<LWARPS>(v, wsum);  // syncs: tile_id is seen
        if (tid < 256) goff[tid] = (int)ex;
    }
    const int t = (int)*tile_id;
    const int t0 = t * LT, valid = min(LT, n - t0);
    const long long rbase = row * (long long)n;
    unsigned* h = whist + w * HS;
    for (int d = lane; d < 256; d += 32) h[d] = 0;
    K kk[LITEMS];
    int pp[LITEMS];
    const int base = w * LITEMS * 32 + lane;
#pragma unroll
    for (int j = 0; j < LITEMS; ++j) {
        const int i = base + j * 32;
        kk[j] = 0;
        pp[j] = 0;
        if (i < valid) {
            const K v = src[rbase + t0 + i];
            kk[j] = first ? to_key<K>(v, mode) : v;
            if (carry) pp[j] = first ? t0 + i : psrc[rbase + t0 + i];
        }
    }
    __syncwarp();
    const unsigned lt_mask = (1u << lane) - 1u;
    unsigned dg[LITEMS], rk[LITEMS];
#pragma unroll
    for (int j = 0; j < LITEMS; ++j) {
        const bool ok = base + j * 32 < valid;
        const unsigned d = (unsigned)(kk[j] >> shift) & 0xffu;
        dg[j] = d;
        // padding lanes (the row's last tile only) rank with no one and count nowhere
        unsigned peers = match_digit8(d, 0xffu);
        if (valid < LT) peers &= __ballot_sync(FULL_MASK, ok);
        const unsigned old = h[d];
        __syncwarp();
        if (ok && lane == __ffs(peers) - 1) h[d] = old + __popc(peers);
        __syncwarp();
        rk[j] = old + __popc(peers & lt_mask);
    }
    __syncthreads();
    // (digit, warp) starts in digit-major order: 8 consecutive counters a thread
    unsigned s = 0;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
        const int L = tid * 8 + q;
        s += whist[(L % LWARPS) * HS + L / LWARPS];
    }
    unsigned ex = block_exclusive_scan<LWARPS>(s, wsum);
#pragma unroll
    for (int q = 0; q < 8; ++q) {
        const int L = tid * 8 + q;
        const unsigned c = whist[(L % LWARPS) * HS + L / LWARPS];
        whist[(L % LWARPS) * HS + L / LWARPS] = ex;
        if (L % LWARPS == 0) dstart[L / LWARPS] = ex;
        ex += c;
    }
    if (tid == 0) dstart[256] = (unsigned)valid;
    __syncthreads();
    if (tid < 256) {  // thread d: digit d's count in the earlier tiles of the row
        const unsigned c = dstart[tid + 1] - dstart[tid];
        unsigned* st = status + row * (long long)ntiles * 256 + tid;
        unsigned before = 0;
        if (t == 0) {
            st_relaxed(st, OS_INC | c);
        } else {
            st_relaxed(st + (long long)t * 256, OS_AGG | c);
            // OS_WINDOW earlier tiles' words loaded at once, then read in order until an
            // inclusive one: one memory latency per window, not per tile (tile 0 is inclusive)
            bool done = false;
            for (int j = t - 1; !done; j -= OS_WINDOW) {
                unsigned v[OS_WINDOW];
#pragma unroll
                for (int q = 0; q < OS_WINDOW; ++q)
                    v[q] = j - q >= 0 ? ld_relaxed(st + (long long)(j - q) * 256) : OS_INC;
#pragma unroll
                for (int q = 0; q < OS_WINDOW; ++q) {
                    if (!done) {
                        while (v[q] == 0u) v[q] = ld_relaxed(st + (long long)(j - q) * 256);
                        before += v[q] & OS_CNT;
                        done = v[q] & OS_INC;
                    }
                }
            }
            st_relaxed(st + (long long)t * 256, OS_INC | (before + c));
        }
        goff[tid] += (int)before - (int)dstart[tid];
    }
#pragma unroll
    for (int j = 0; j < LITEMS; ++j) {
        if (base + j * 32 < valid) {
            const unsigned p = h[dg[j]] + rk[j];
            skeys[p] = kk[j];
            if (carry) spos[p] = pp[j];
        }
    }
    __syncthreads();
    for (int i = tid; i < valid; i += blockDim.x) {
        const K k = skeys[i];
        const long long g = rbase + goff[(unsigned)(k >> shift) & 0xffu] + i;
        if (last) {
            if ((want & OS_WANT_VALUES) && !gather) vout[g] = from_key<K>(k, mode);
            if (carry) iout[g] = spos[i];
        } else {
            kdst[g] = k;
            if (carry) pdst[g] = spos[i];
        }
    }
}

// values of rows holding NaN or -0.0: the original bits at the sorted positions
template <typename K>
__device__ __forceinline__ void osort_gather(const K* __restrict__ x,
                                             const long long* __restrict__ pos,
                                             K* __restrict__ vout, const u64* __restrict__ summary,
                                             long long total, int n) {
    if (!(__ldcg(summary) >> 8)) return;  // no NaN or -0.0: the last pass wrote the values
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x)
        vout[i] = x[i - i % n + pos[i]];
}

#define OSORT(W, K, ...)                                                                          \
    extern "C" __global__ void __launch_bounds__(32 * LWARPS)                                     \
    xp_osort_hist_##W(const K* x, unsigned* hist, u64* stat, u64* summary, long long row0,       \
                      long long nrows, int n, int chunk, int mode, unsigned nblocks) {            \
        osort_hist<K>(x, hist, stat, summary, row0, nrows, n, chunk, mode, nblocks);              \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(__VA_ARGS__)                                     \
    xp_osort_pass_##W(const K* x, K* keys0, K* keys1, int* pos0, int* pos1, K* vout,             \
                      long long* iout, const unsigned* hist, const u64* summary, unsigned* status, \
                      unsigned* ctr, long long row0, long long nrows, int n, int ntiles, int p,   \
                      int mode, int want) {                                                       \
        osort_pass<K>(x, keys0, keys1, pos0, pos1, vout, iout, hist, summary, status, ctr, row0,  \
                      nrows, n, ntiles, p, mode, want);                                           \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_osort_gather_##W(const K* x, const long long* pos, K* vout, const u64* summary,            \
                        long long total, int n) {                                                 \
        osort_gather<K>(x, pos, vout, summary, total, n);                                         \
    }

// The pass's launch bounds (...): the 8-byte pass takes 83 registers unbounded (one block of
// 512 a SM); held to two blocks it keeps 64 and a 16-byte stack frame, and runs a quarter
// faster (H200, 16M int64: 0.275 -> 0.206 ms a pass). The others keep the bare bound: the
// 4-byte pass has 64 registers under it, 83 under (512, 1), 63 under (512, 2) and 3% slower.
OSORT(1, u8, 32 * LWARPS)
OSORT(2, u16, 32 * LWARPS)
OSORT(4, u32, 32 * LWARPS)
OSORT(8, u64, 32 * LWARPS, 2)

// ---- small-integer set functions: a histogram over every possible value ---------------------
//
// bin = raw bits ^ flip (flip: the sign bit of int8/int16, else 0), so bins run in value order.
// hist[bin] (u64) counts, first[bin] (u64, preset to ~0) is the smallest flat index holding it.

// 8-bit data: a block-private histogram in shared memory, replicated 32 times, copy = lane and
// laid out [bin][lane], so a warp's 32 atomics always hit 32 distinct banks and never the same
// address (no serialisation however few distinct values the data has). 16-byte loads.
extern "C" __global__ void __launch_bounds__(256)
xp_unique_hist8(const u8* __restrict__ x, long long n, long long head, unsigned flip,
                u64* __restrict__ hist, u64* __restrict__ first, int want_first) {
    __shared__ unsigned sh[256 * 32];
    __shared__ u64 sfirst[256];
    const int tid = threadIdx.x, lane = tid & 31;
    for (int i = tid; i < 256 * 32; i += blockDim.x) sh[i] = 0;
    for (int i = tid; i < 256; i += blockDim.x) sfirst[i] = ~0ull;
    __syncthreads();
    const long long gtid = (long long)blockIdx.x * blockDim.x + tid;
    const long long stride = (long long)gridDim.x * blockDim.x;
    // first: the atomic only when the recorded index is larger (a read is cheap; once the
    // bin's early hits are in, later indices skip it; values only decrease, so never wrongly)
    auto add = [&](unsigned b, long long i) {
        atomicAdd(&sh[b * 32 + lane], 1u);
        if (want_first && sfirst[b] > (u64)i) atomicMin(&sfirst[b], (u64)i);
    };
    if (gtid < head) add((unsigned)x[gtid] ^ flip, gtid);
    const long long nvec = (n - head) / 16;
    const uint4* xv = reinterpret_cast<const uint4*>(x + head);
    for (long long v = gtid; v < nvec; v += stride) {
        const uint4 q = xv[v];
        const unsigned words[4] = {q.x, q.y, q.z, q.w};
        const long long i0 = head + v * 16;
#pragma unroll
        for (int j = 0; j < 16; ++j)
            add(((words[j >> 2] >> (8 * (j & 3))) & 0xffu) ^ flip, i0 + j);
    }
    for (long long i = head + nvec * 16 + gtid; i < n; i += stride) add((unsigned)x[i] ^ flip, i);
    __syncthreads();
    for (int b = tid; b < 256; b += blockDim.x) {
        unsigned s = 0;
        for (int c = 0; c < 32; ++c) s += sh[b * 32 + ((c + b) & 31)];  // rotated: no conflicts
        if (s) atomicAdd(&hist[b], (u64)s);
        if (want_first && sfirst[b] != ~0ull) atomicMin(&first[b], sfirst[b]);
    }
}

// bool (bytes 0 or 1): a popcount of each 16-byte vector counts the Trues, no histogram needed;
// a thread's first True and first False are its first hits (its indices increase), then a warp
// minimum and one global atomic per warp.
__device__ __forceinline__ int first_byte_nonzero(const unsigned (&w)[4]) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (w[k]) return 4 * k + ((__ffs(w[k]) - 1) >> 3);
    return -1;
}

extern "C" __global__ void __launch_bounds__(256)
xp_unique_hist_bool(const u8* __restrict__ x, long long n, long long head, unsigned flip,
                    u64* __restrict__ hist, u64* __restrict__ first, int want_first) {
    const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    u64 ones = 0, seen = 0, f0 = ~0ull, f1 = ~0ull;
    auto one = [&](unsigned v, long long i) {
        ones += v;
        ++seen;
        if (v) f1 = min(f1, (u64)i);
        else f0 = min(f0, (u64)i);
    };
    if (gtid < head) one(x[gtid], gtid);
    const long long nvec = (n - head) / 16;
    const uint4* xv = reinterpret_cast<const uint4*>(x + head);
    for (long long v = gtid; v < nvec; v += stride) {
        const uint4 q = xv[v];
        const int c = __popc(q.x) + __popc(q.y) + __popc(q.z) + __popc(q.w);
        ones += c;
        seen += 16;
        if (want_first) {
            const long long i0 = head + v * 16;
            if (f1 == ~0ull && c) {
                const unsigned w[4] = {q.x, q.y, q.z, q.w};
                f1 = (u64)(i0 + first_byte_nonzero(w));
            }
            if (f0 == ~0ull && c < 16) {
                const unsigned w[4] = {q.x ^ 0x01010101u, q.y ^ 0x01010101u, q.z ^ 0x01010101u,
                                       q.w ^ 0x01010101u};
                f0 = (u64)(i0 + first_byte_nonzero(w));
            }
        }
    }
    for (long long i = head + nvec * 16 + gtid; i < n; i += stride) one(x[i], i);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ones += __shfl_xor_sync(FULL_MASK, ones, o);
        seen += __shfl_xor_sync(FULL_MASK, seen, o);
        f0 = min(f0, __shfl_xor_sync(FULL_MASK, f0, o));
        f1 = min(f1, __shfl_xor_sync(FULL_MASK, f1, o));
    }
    if ((threadIdx.x & 31) == 0) {
        if (seen - ones) atomicAdd(&hist[0], seen - ones);
        if (ones) atomicAdd(&hist[1], ones);
        if (want_first) {
            if (f0 != ~0ull) atomicMin(&first[0], f0);
            if (f1 != ~0ull) atomicMin(&first[1], f1);
        }
    }
}

// 16-bit data: 65536 32-bit counters (256 KiB) do not fit a block's shared memory, half of them
// do: block b counts the values whose low bit is b & 1 (so any range of values splits evenly)
// over chunk b >> 1 of the data, in a 128 KiB shared histogram, then adds its nonzero bins to
// the global one once. Reading the input twice costs less than a global atomic per element
// (L2 contention on few distinct values made that 8x slower).
// Few distinct values would serialise the shared atomics on one address: a warp whose first
// value of a vector repeats among its lanes merges lanes of one value with __match_any_sync for
// that vector; other warps (spread data) skip the costly match and add one by one.
// first: global, the atomic only when the recorded index is larger (see xp_unique_hist8).
__device__ __forceinline__ void hist16_add(unsigned b, long long i, unsigned half,
                                           unsigned* sh, u64* first, int want_first,
                                           unsigned active, bool merge) {
    const bool mine = (b & 1u) == half;
    if (merge) {
        const unsigned key = mine ? b : 0xffffffffu;  // the other half: one idle group
        const unsigned peers = __match_any_sync(active, key);
        if (mine && (threadIdx.x & 31) == __ffs(peers) - 1) {
            // the lowest lane holds the smallest index of its peers
            atomicAdd(&sh[b >> 1], (unsigned)__popc(peers));
            if (want_first && first[b] > (u64)i) atomicMin(&first[b], (u64)i);
        }
    } else if (mine) {
        atomicAdd(&sh[b >> 1], 1u);
        if (want_first && first[b] > (u64)i) atomicMin(&first[b], (u64)i);
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1)
xp_unique_hist16(const u16* __restrict__ x, long long n, long long head, unsigned flip,
                 u64* __restrict__ hist, u64* __restrict__ first, int want_first) {
    extern __shared__ unsigned sh16[];  // 32768 counters: bins 2k + half
    const unsigned half = blockIdx.x & 1u;
    for (int k = threadIdx.x; k < 32768; k += blockDim.x) sh16[k] = 0;
    __syncthreads();
    const long long gtid = (long long)(blockIdx.x >> 1) * blockDim.x + threadIdx.x;
    const long long stride = (long long)(gridDim.x >> 1) * blockDim.x;
    if (gtid < head)
        hist16_add((unsigned)x[gtid] ^ flip, gtid, half, sh16, first, want_first,
                   __activemask(), true);
    const long long nvec = (n - head) / 8;
    const uint4* xv = reinterpret_cast<const uint4*>(x + head);
    for (long long v = gtid; v < nvec; v += stride) {
        const uint4 q = xv[v];
        const unsigned words[4] = {q.x, q.y, q.z, q.w};
        const long long i0 = head + v * 8;
        const unsigned active = __activemask();
        const unsigned b0 = (q.x & 0xffffu) ^ flip;
        const bool merge = __any_sync(active, __popc(__match_any_sync(active, b0)) > 2);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            hist16_add(((words[j >> 1] >> (16 * (j & 1))) & 0xffffu) ^ flip, i0 + j, half, sh16,
                       first, want_first, active, merge);
    }
    for (long long i = head + nvec * 8 + gtid; i < n; i += stride)
        hist16_add((unsigned)x[i] ^ flip, i, half, sh16, first, want_first, __activemask(), true);
    __syncthreads();
    for (int k = threadIdx.x; k < 32768; k += blockDim.x) {
        const unsigned c = sh16[k];
        if (c) atomicAdd(&hist[2u * k + half], (u64)c);
    }
}

// One block of 1024 threads over the nb bins (256 or 65536): rank[bin] = number of present bins
// before it; the present bins' values, counts and first indices go to position rank; the number
// of unique values to *nuniq (the one number the host reads back).
template <typename V>
__device__ void unique_scan(const u64* __restrict__ hist, const u64* __restrict__ first, int nb,
                            unsigned flip, V* __restrict__ values, long long* __restrict__ counts,
                            long long* __restrict__ first_out, int* __restrict__ rank,
                            long long* __restrict__ nuniq) {
    __shared__ unsigned wsum[32];
    const int per = (nb + 1023) / 1024;
    const int b0 = threadIdx.x * per;
    unsigned s = 0;
    for (int b = b0; b < b0 + per && b < nb; ++b) s += hist[b] != 0;
    unsigned r = block_exclusive_scan<32>(s, wsum);
    if (threadIdx.x == 1023) *nuniq = (long long)(r + s);
    for (int b = b0; b < b0 + per && b < nb; ++b) {
        rank[b] = (int)r;
        const u64 c = hist[b];
        if (c) {
            values[r] = (V)(b ^ flip);
            if (counts) counts[r] = (long long)c;
            if (first_out) first_out[r] = (long long)first[b];
            ++r;
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024)
xp_unique_scan8(const u64* hist, const u64* first, int nb, unsigned flip, u8* values,
                long long* counts, long long* first_out, int* rank, long long* nuniq) {
    unique_scan<u8>(hist, first, nb, flip, values, counts, first_out, rank, nuniq);
}

extern "C" __global__ void __launch_bounds__(1024)
xp_unique_scan16(const u64* hist, const u64* first, int nb, unsigned flip, u16* values,
                 long long* counts, long long* first_out, int* rank, long long* nuniq) {
    unique_scan<u16>(hist, first, nb, flip, values, counts, first_out, rank, nuniq);
}

// inverse[i] = rank[bin of x[i]], the table in shared memory. 8-bit: one element per thread
// per step keeps each warp's 8-byte stores one contiguous 256-byte run.
extern "C" __global__ void __launch_bounds__(256)
xp_unique_inverse8(const u8* __restrict__ x, long long n, unsigned flip,
                   const int* __restrict__ rank, long long* __restrict__ out) {
    __shared__ int srank[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) srank[i] = rank[i];
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = srank[(unsigned)x[i] ^ flip];
}

// 16-bit: the table as u16 (ranks < 65536) in 128 KiB of shared memory, one block of 1024 per
// SM; four independent elements per thread per step keep enough stores in flight.
extern "C" __global__ void __launch_bounds__(1024, 1)
xp_unique_inverse16(const u16* __restrict__ x, long long n, unsigned flip,
                    const int* __restrict__ rank, long long* __restrict__ out) {
    extern __shared__ u16 srank16[];
    for (int k = threadIdx.x; k < 65536; k += blockDim.x) srank16[k] = (u16)rank[k];
    __syncthreads();
    const long long T = blockDim.x;
    for (long long s = (long long)blockIdx.x * 4 * T; s < n; s += (long long)gridDim.x * 4 * T) {
        unsigned b[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = s + j * T + threadIdx.x;
            b[j] = i < n ? ((unsigned)x[i] ^ flip) : 0u;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const long long i = s + j * T + threadIdx.x;
            if (i < n) out[i] = (long long)srank16[b[j]];
        }
    }
}

// ---- searchsorted: one binary search per query, on keys --------------------------------------
// left: the first i with key(a[i]) >= key(v); right: the first i with key(a[i]) > key(v).
// On keys NaN is the largest value and -0.0 equals +0.0, exactly NumPy's order.
// `stage` (sort.py, _plan_search) says what shared memory holds first: 0 nothing, 1 all of a's
// keys (a fits _SEARCH_STAGE_BYTES: every dependent load a shared-memory read), or s >= 2 a
// sample: the key of the last element of each bucket [k*s, min((k+1)*s, n)). The predicate of
// a search (key(a[i]) >= key, or > for "right") is monotone, so the first bucket whose last
// element satisfies it holds the answer (none: n), and the global search runs inside that
// bucket: log2(s) dependent loads instead of log2(n) (16M float32: 12 of 24).

// Stage a's keys, or the sample of them, in shared memory; every thread of the block calls it.
template <typename K>
__device__ __forceinline__ K* stage_keys(const K* __restrict__ a, long long n, int mode,
                                         long long stage) {
    extern __shared__ __align__(16) unsigned char ss_smem[];
    K* sa = reinterpret_cast<K*>(ss_smem);
    if (stage == 1) {
        for (int k = threadIdx.x; k < (int)n; k += blockDim.x) sa[k] = to_key<K>(a[k], mode);
        __syncthreads();
    } else if (stage > 1) {
        const int buckets = (int)((n + stage - 1) / stage);
        for (int k = threadIdx.x; k < buckets; k += blockDim.x)
            sa[k] = to_key<K>(a[min((long long)(k + 1) * stage, n) - 1], mode);
        __syncthreads();
    }
    return sa;
}

// The first i in [l, h) of the (shared-memory) keys sa where the search's predicate holds.
template <typename K>
__device__ __forceinline__ int search_shared(const K* sa, int l, int h, K key, int right) {
    while (l < h) {
        const int mid = (l + h) >> 1;
        const K km = sa[mid];
        if (right ? km <= key : km < key) l = mid + 1;
        else h = mid;
    }
    return l;
}

// The insertion point of `key` into the n sorted elements of a (sa: as stage_keys left it).
template <typename K>
__device__ __forceinline__ long long search_key(const K* __restrict__ a, const K* sa,
                                                long long n, K key, int mode, int right,
                                                long long stage) {
    if (stage == 1) return search_shared<K>(sa, 0, (int)n, key, right);
    long long lo = 0, hi = n;
    if (stage > 1) {
        lo = min((long long)search_shared<K>(sa, 0, (int)((n + stage - 1) / stage), key, right)
                 * stage, n);
        hi = min(lo + stage, n);
    }
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        const K km = to_key<K>(__ldg(&a[mid]), mode);
        if (right ? km <= key : km < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

template <typename K>
__device__ void searchsorted(const K* __restrict__ a, long long n, const K* __restrict__ v,
                             long long m, long long* __restrict__ out, int mode, int right,
                             long long staged) {
    const K* sa = stage_keys<K>(a, n, mode, staged);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride)
        out[i] = search_key<K>(a, sa, n, to_key<K>(v[i], mode), mode, right, staged);
}

// isin: out[i] = (v[i] equals an element of the sorted a) != invert, in one pass: the left
// insertion point of v[i]'s key, then one comparison of keys there (the search's own answer;
// no index array written and read back). On keys -0.0 equals +0.0; a NaN (MODE_FLOAT's
// all-ones key, which no number has) never matches, though its key equals a NaN's in a: the
// spec's equality, where NaN equals nothing.
template <typename K>
__device__ void isin(const K* __restrict__ a, long long n, const K* __restrict__ v, long long m,
                     unsigned char* __restrict__ out, int mode, int invert, long long staged) {
    const K* sa = stage_keys<K>(a, n, mode, staged);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) {
        const K key = to_key<K>(v[i], mode);
        const long long at = search_key<K>(a, sa, n, key, mode, 0, staged);
        bool found = false;
        if (at < n && !(mode == MODE_FLOAT && key == (K)~(K)0))
            found = (staged == 1 ? sa[at] : to_key<K>(__ldg(&a[at]), mode)) == key;
        out[i] = (unsigned char)(found != (invert != 0));
    }
}

#define SEARCHSORTED(W, K)                                                                        \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_searchsorted_##W(const K* __restrict__ a, long long n, const K* __restrict__ v,            \
                        long long m, long long* __restrict__ out, int mode, int right,            \
                        long long staged) {                                                       \
        searchsorted<K>(a, n, v, m, out, mode, right, staged);                                    \
    }
#define ISIN(W, K)                                                                                \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_isin_##W(const K* __restrict__ a, long long n, const K* __restrict__ v, long long m,       \
                unsigned char* __restrict__ out, int mode, int invert, long long staged) {        \
        isin<K>(a, n, v, m, out, mode, invert, staged);                                           \
    }

SEARCHSORTED(1, u8)
SEARCHSORTED(2, u16)
SEARCHSORTED(4, u32)
SEARCHSORTED(8, u64)
ISIN(1, u8)
ISIN(2, u16)
ISIN(4, u32)
ISIN(8, u64)

// ---- set functions of 32/64-bit dtypes: the runs of one sorted array (launcher: sorted_unique)
//
// Why this shape: the sort (a block sort, or CuPy's Thrust/CUB radix sort of the keys) is the one
// expensive step; everything after it is one pass over the sorted array. xp_sortuniq_runs flags
// run starts, ranks them with a single-pass decoupled look-back scan (CUB's scheme, as in
// scan.cu: the sorted array is read once; long inputs take the two-pass warp form below),
// and in the same pass writes the run values, their
// first indices, the counts (from run boundaries) and the inverse (scattered through the
// permutation). The scanned quantity is a pair: the number of run starts (a sum) and the
// position of the last start (a max), so the element closing a run knows where the run began
// even when it began tiles earlier.
//
// Layout: warp w of a tile owns UQ_ITEMS rows of 32 consecutive elements (warp-striped), so
// every load and every compacted store of one row is contiguous across the lanes (coalesced,
// no shared-memory transpose); a row's starts are one ballot, ranks within the warp popcounts.
//
// Equality is on keys (to_key): -0.0 equals +0.0, and in MODE_FLOAT the NaN key (all ones,
// which no number maps to) starts a run at every element: NaNs are each distinct (the spec).

#define UQ_WARPS 8
#define UQ_ITEMS 8
#define UQ_TILE (32 * UQ_WARPS * UQ_ITEMS)

// keys[i] = to_key(x[i]); *zfirst = ~(the first index of a float zero of either sign), 0 when
// there is none (stored inverted so a zeroed word means "none" and atomicMax finds the first).
// 16-byte vectors when x is aligned (the key buffer always is).
template <typename K>
__device__ __forceinline__ void sortuniq_keys(const K* __restrict__ x, K* __restrict__ keys,
                                              long long n, int mode, int vec,
                                              u64* __restrict__ zfirst) {
    constexpr int V = 16 / (int)sizeof(K);
    const K S = sign_bit<K>();
    const bool fl = mode == MODE_FLOAT;
    const long long gt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    u64 zmin = ~0ull;  // a thread's indices increase, so its first zero is its smallest
    long long done = 0;
    if (vec) {
        const long long nv = n / V;
        const uint4* xv = reinterpret_cast<const uint4*>(x);
        uint4* kv = reinterpret_cast<uint4*>(keys);
        for (long long v = gt; v < nv; v += stride) {
            union { uint4 q; K e[V]; } u;
            u.q = xv[v];
#pragma unroll
            for (int j = 0; j < V; ++j) {
                u.e[j] = to_key<K>(u.e[j], mode);
                if (fl && u.e[j] == S && zmin == ~0ull) zmin = (u64)(v * V + j);
            }
            kv[v] = u.q;
        }
        done = nv * V;
    }
    for (long long i = done + gt; i < n; i += stride) {
        const K k = to_key<K>(x[i], mode);
        keys[i] = k;
        if (fl && k == S && zmin == ~0ull) zmin = (u64)i;
    }
    if (fl) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const u64 z = __shfl_xor_sync(FULL_MASK, zmin, o);
            zmin = z < zmin ? z : zmin;
        }
        if ((threadIdx.x & 31) == 0 && zmin != ~0ull) atomicMax(zfirst, ~zmin);
    }
}

// (starts, last start) of the preceding tiles, by the warp calling it (warp 0 of the tile):
// publish this tile's aggregate, then walk back 32 tiles at a time until an inclusive prefix.
// Values are published as value, fence, flag; read as flag, fence, value (from L2).
__device__ __forceinline__ void sortuniq_lookback(long long t, long long ac, long long as,
                                                  unsigned* flags, ulonglong2* aggs,
                                                  ulonglong2* incls, long long& pc,
                                                  long long& ps) {
    const int lane = threadIdx.x & 31;
    pc = 0;
    ps = -1;
    if (t == 0) {
        if (lane == 0) {
            __stcg(incls, make_ulonglong2((u64)ac, (u64)as));
            __threadfence();
            atomicExch(flags, 2u);
        }
        return;
    }
    if (lane == 0) {
        __stcg(aggs + t, make_ulonglong2((u64)ac, (u64)as));
        __threadfence();
        atomicExch(flags + t, 1u);
    }
    long long j0 = t - 1;
    while (true) {
        const long long j = j0 - lane;
        unsigned f = 2u;
        long long c = 0, s = -1;
        if (j >= 0) {
            const volatile unsigned* fp = flags + j;
            do { f = *fp; } while (f == 0u);
            __threadfence();
            const ulonglong2 v = f == 2u ? __ldcg(incls + j) : __ldcg(aggs + j);
            c = (long long)v.x;
            s = (long long)v.y;
        }
        const unsigned pm = __ballot_sync(FULL_MASK, f == 2u);
        const int lim = pm ? __ffs(pm) - 1 : 31;  // the nearest inclusive prefix and after it
        if (lane > lim) { c = 0; s = -1; }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            c += __shfl_xor_sync(FULL_MASK, c, o);
            s = max(s, __shfl_xor_sync(FULL_MASK, s, o));
        }
        pc += c;
        ps = max(ps, s);
        if (pm) break;
        j0 -= 32;
    }
    if (lane == 0) {
        __stcg(incls + t, make_ulonglong2((u64)(pc + ac), (u64)max(ps, as)));
        __threadfence();
        atomicExch(flags + t, 2u);
    }
}

// The run starts among warp row group wbase (UQ_ITEMS rows of 32): key[j] the keys of row j,
// b[j] its ballot of starts; cnt the group's starts, last the position of its last (-1: none).
template <typename K>
__device__ __forceinline__ void sortuniq_starts(const K* __restrict__ s, int s_is_key,
                                                long long n, int mode, long long wbase,
                                                K (&key)[UQ_ITEMS], unsigned (&b)[UQ_ITEMS],
                                                long long& cnt, long long& last) {
    const int lane = threadIdx.x & 31;
    const K NANKEY = (K)~(K)0;
    const bool fl = mode == MODE_FLOAT;
#pragma unroll
    for (int j = 0; j < UQ_ITEMS; ++j) {
        const long long p = wbase + j * 32 + lane;
        const K r = p < n ? s[p] : (K)0;
        key[j] = s_is_key ? r : to_key<K>(r, mode);
    }
    K before = 0;  // the key preceding the warp's first element
    if (lane == 0 && wbase > 0 && wbase < n) {
        const K r = s[wbase - 1];
        before = s_is_key ? r : to_key<K>(r, mode);
    }
    cnt = 0;
    last = -1;
#pragma unroll
    for (int j = 0; j < UQ_ITEMS; ++j) {
        K pk = __shfl_up_sync(FULL_MASK, key[j], 1);
        const K row_prev = j ? __shfl_sync(FULL_MASK, key[j > 0 ? j - 1 : 0], 31) : before;
        if (lane == 0) pk = row_prev;
        const long long p = wbase + j * 32 + lane;
        const bool st = p < n && (p == 0 || key[j] != pk || (fl && key[j] == NANKEY));
        b[j] = __ballot_sync(FULL_MASK, st);
        cnt += __popc(b[j]);
        if (b[j]) last = wbase + j * 32 + 31 - __clz((int)b[j]);
    }
}

// Two-pass form for long inputs (the launcher's choice): warp w owns the rows [w * rpw,
// (w + 1) * rpw) of 32 elements (rpw a multiple of UQ_ITEMS, at least a tile's rows) and
// walks them in groups of UQ_ITEMS rows (groups of 16 rows, more loads in flight a warp but
// more registers: the runs pass took 88-98 us against 66-80).
// xp_sortuniq_wtiles writes the warp's (starts, last start) into aggs[w]; one block scans
// the pairs into exclusive prefixes (xp_sortuniq_scan); then xp_sortuniq_wruns walks the
// same rows again from its prefix, carrying the pair from row to row. It reads the sorted
// array twice, and no warp ever waits on another (H200, 16M float32, 24 warps a SM: 30 + 6 +
// 66 us):
// - the look-back (tiles waiting on L2 round trips, 8192 tiles for 16M elements) took
//   120-140 us on the H200, where a read of 64 MB takes 17;
// - a block a tile with its pair scanned per tile (a barrier per tile between the loads and
//   the writes) took 25 + 12 (the scan of 8192 pairs) + 74-92 us; blocks of many tiles
//   did no better (the barriers, not the block count, left too few loads in flight).
template <typename K>
__device__ __forceinline__ void sortuniq_wtiles(const K* __restrict__ s, int s_is_key,
                                                long long n, int mode, long long rpw,
                                                ulonglong2* aggs) {
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long b0 = w * rpw * 32, b1 = min(n, b0 + rpw * 32);
    if (b0 >= n) return;  // past the last warp's rows (the grid's last block)
    long long c = 0, l = -1;
    for (long long wbase = b0; wbase < b1; wbase += 32 * UQ_ITEMS) {
        K key[UQ_ITEMS];
        unsigned b[UQ_ITEMS];
        long long cnt, last;
        sortuniq_starts<K>(s, s_is_key, n, mode, wbase, key, b, cnt, last);
        c += cnt;
        l = max(l, last);
    }
    if ((threadIdx.x & 31) == 0) aggs[w] = make_ulonglong2((u64)c, (u64)l);
}

// excl[t] = (sum of counts, max of last starts) over aggs[0, t): one block of 1024 threads.
extern "C" __global__ void __launch_bounds__(1024)
xp_sortuniq_scan(const ulonglong2* __restrict__ aggs, ulonglong2* __restrict__ excl,
                 long long tiles) {
    __shared__ long long sc[32], ss[32];
    __shared__ long long carry_c, carry_s;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) { carry_c = 0; carry_s = -1; }
    __syncthreads();
    for (long long base = 0; base < tiles; base += 1024) {
        const long long i = base + threadIdx.x;
        long long c = 0, l = -1;
        if (i < tiles) {
            const ulonglong2 v = aggs[i];
            c = (long long)v.x;
            l = (long long)v.y;
        }
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {  // inclusive within the warp
            const long long tc = __shfl_up_sync(FULL_MASK, c, o);
            const long long tl = __shfl_up_sync(FULL_MASK, l, o);
            if (lane >= o) { c += tc; l = max(l, tl); }
        }
        if (lane == 31) { sc[warp] = c; ss[warp] = l; }
        __syncthreads();
        if (warp == 0) {
            long long wc = sc[lane], wl = ss[lane];
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const long long tc = __shfl_up_sync(FULL_MASK, wc, o);
                const long long tl = __shfl_up_sync(FULL_MASK, wl, o);
                if (lane >= o) { wc += tc; wl = max(wl, tl); }
            }
            sc[lane] = wc;
            ss[lane] = wl;
        }
        __syncthreads();
        long long pc = carry_c, pl = carry_s;  // before this warp
        if (warp > 0) { pc += sc[warp - 1]; pl = max(pl, ss[warp - 1]); }
        long long ec = __shfl_up_sync(FULL_MASK, c, 1), el = __shfl_up_sync(FULL_MASK, l, 1);
        if (lane == 0) { ec = 0; el = -1; }
        if (i < tiles) excl[i] = make_ulonglong2((u64)(pc + ec), (u64)max(pl, el));
        __syncthreads();  // every thread has read the carry
        if (threadIdx.x == 1023) { carry_c = pc + c; carry_s = max(pl, l); }
        __syncthreads();
    }
}

// One row of 32 sorted elements from rowp (this lane's key k, the row's ballot of run starts
// bj): the lane's element's run, and at a run start its value, first index and the previous
// run's count; C, L: the runs before the row and the last start before it, moved past it.
template <typename K>
__device__ __forceinline__ void sortuniq_row(
        const K* __restrict__ s, int s_is_key, const long long* __restrict__ perm,
        const K* __restrict__ x, const u64* __restrict__ zfirst, long long n, int mode,
        K* __restrict__ values, long long* __restrict__ indices, long long* __restrict__ counts,
        long long* __restrict__ inverse, long long* __restrict__ nuniq, long long rowp, K k,
        unsigned bj, long long& C, long long& L) {
    const int lane = threadIdx.x & 31;
    const unsigned lt_mask = (1u << lane) - 1u;
    const K S = sign_bit<K>(), NANKEY = (K)~(K)0;
    const bool fl = mode == MODE_FLOAT;
    const long long p = rowp + lane;
    if (p < n) {
        const unsigned below = bj & lt_mask;
        const bool st = (bj >> lane) & 1u;
        const long long r = C + __popc(below);       // this run's rank if p starts it
        const long long u = st ? r : r - 1;          // the run p belongs to
        const long long prev = below ? rowp + 31 - __clz((int)below) : L;  // start before p
        long long q = 0;
        if (inverse) {
            q = perm[p];
            inverse[q] = u;
        }
        if (st) {
            const bool special = s_is_key && fl && (k == S || k == NANKEY);
            if (perm && !inverse && (indices || special)) q = perm[p];
            K v;
            if (!s_is_key) {
                v = s[p];
            } else if (special) {
                if (perm) {
                    v = x[q];
                } else if (k == S) {
                    const u64 z = *zfirst;
                    v = z ? x[~z] : (K)0;
                } else {
                    v = sizeof(K) == 4 ? (K)0x7fc00000u : (K)0x7ff8000000000000ull;
                }
            } else {
                v = from_key<K>(k, mode);
            }
            values[r] = v;
            if (indices) indices[r] = q;
            if (counts && r > 0) counts[r - 1] = p - prev;
        }
        if (p == n - 1) {
            if (counts) counts[u] = n - (st ? p : prev);
            *nuniq = u + 1;
        }
    }
    C += __popc(bj);
    if (bj) L = rowp + 31 - __clz((int)bj);
}

// s: the sorted array, raw values (s_is_key = 0: a stable sort of x's bits, written out as they
// are) or keys (1: values from from_key, except the float zero and NaN keys, whose bits come
// from x[perm[i]], or without perm from x[~*zfirst] and the default NaN). perm (int64, may be
// null): the stable sorting permutation. Outputs (each may be null but values): values[r],
// indices[r] = perm of run r's first element, counts[r], inverse[perm[i]] = run of element i,
// *nuniq = the number of runs. counter/flags zeroed by the launcher. This form, a tile a block
// found by look-back, serves the block sort's few tiles; long inputs take the warp form below.
template <typename K>
__device__ __forceinline__ void sortuniq_runs(
        const K* __restrict__ s, int s_is_key, const long long* __restrict__ perm,
        const K* __restrict__ x, const u64* __restrict__ zfirst, long long n, int mode,
        K* __restrict__ values, long long* __restrict__ indices, long long* __restrict__ counts,
        long long* __restrict__ inverse, long long* __restrict__ nuniq, unsigned* counter,
        unsigned* flags, ulonglong2* aggs, ulonglong2* incls) {
    __shared__ long long s_tile;
    __shared__ long long w_c[UQ_WARPS], w_s[UQ_WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // tile ids in start order: every tile a block waits on has started (forward progress)
    if (threadIdx.x == 0) s_tile = (long long)atomicAdd(counter, 1u);
    __syncthreads();
    const long long t = s_tile;
    const long long wbase = t * UQ_TILE + (long long)warp * (32 * UQ_ITEMS);

    K key[UQ_ITEMS];  // raw values are reloaded at run starts (cache hits), not held: registers
    unsigned b[UQ_ITEMS];
    long long cnt, last;
    sortuniq_starts<K>(s, s_is_key, n, mode, wbase, key, b, cnt, last);
    if (lane == 0) { w_c[warp] = cnt; w_s[warp] = last; }
    __syncthreads();
    if (warp == 0) {
        long long c = lane < UQ_WARPS ? w_c[lane] : 0, sl = lane < UQ_WARPS ? w_s[lane] : -1;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const long long tc = __shfl_up_sync(FULL_MASK, c, o);
            const long long ts = __shfl_up_sync(FULL_MASK, sl, o);
            if (lane >= o) { c += tc; sl = max(sl, ts); }
        }
        const long long ac = __shfl_sync(FULL_MASK, c, UQ_WARPS - 1);
        const long long as = __shfl_sync(FULL_MASK, sl, UQ_WARPS - 1);
        long long ec = __shfl_up_sync(FULL_MASK, c, 1), es = __shfl_up_sync(FULL_MASK, sl, 1);
        if (lane == 0) { ec = 0; es = -1; }
        long long pc, ps;
        sortuniq_lookback(t, ac, as, flags, aggs, incls, pc, ps);
        if (lane < UQ_WARPS) { w_c[lane] = pc + ec; w_s[lane] = max(ps, es); }
    }
    __syncthreads();
    long long C = w_c[warp], L = w_s[warp];  // starts before this row, last start before it
#pragma unroll
    for (int j = 0; j < UQ_ITEMS; ++j)
        sortuniq_row<K>(s, s_is_key, perm, x, zfirst, n, mode, values, indices, counts, inverse,
                        nuniq, wbase + j * 32, key[j], b[j], C, L);
}

// The warp form of the runs pass (see sortuniq_wtiles): warp w's rows from the exclusive
// prefix incls[w] (the pair of every row before them).
template <typename K>
__device__ __forceinline__ void sortuniq_wruns(
        const K* __restrict__ s, int s_is_key, const long long* __restrict__ perm,
        const K* __restrict__ x, const u64* __restrict__ zfirst, long long n, int mode,
        K* __restrict__ values, long long* __restrict__ indices, long long* __restrict__ counts,
        long long* __restrict__ inverse, long long* __restrict__ nuniq,
        const ulonglong2* __restrict__ incls, long long rpw) {
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long b0 = w * rpw * 32, b1 = min(n, b0 + rpw * 32);
    if (b0 >= n) return;
    const ulonglong2 v = incls[w];
    long long C = (long long)v.x, L = (long long)v.y;
    for (long long wbase = b0; wbase < b1; wbase += 32 * UQ_ITEMS) {
        K key[UQ_ITEMS];
        unsigned b[UQ_ITEMS];
        long long cnt, last;
        sortuniq_starts<K>(s, s_is_key, n, mode, wbase, key, b, cnt, last);
#pragma unroll
        for (int j = 0; j < UQ_ITEMS; ++j)
            sortuniq_row<K>(s, s_is_key, perm, x, zfirst, n, mode, values, indices, counts,
                            inverse, nuniq, wbase + j * 32, key[j], b[j], C, L);
    }
}

// runs: at least 3 blocks per SM (768 threads); unbounded, ptxas gave 64-bit keys 95 registers
// (2 blocks) or 64 with spills.
#ifndef UQ_VALS_BLOCKS
#define UQ_VALS_BLOCKS 4
#endif
#define SORTUNIQ(W, K)                                                                            \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_sortuniq_keys_##W(const K* x, K* keys, long long n, int mode, int vec, u64* zfirst) {      \
        sortuniq_keys<K>(x, keys, n, mode, vec, zfirst);                                          \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(256)                                             \
    xp_sortuniq_wtiles_##W(const K* s, int s_is_key, long long n, int mode, long long rpw,        \
                           ulonglong2* aggs) {                                                    \
        sortuniq_wtiles<K>(s, s_is_key, n, mode, rpw, aggs);                                      \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(32 * UQ_WARPS, 3)                                \
    xp_sortuniq_runs_##W(const K* s, int s_is_key, const long long* perm, const K* x,             \
                         const u64* zfirst, long long n, int mode, K* values,                     \
                         long long* indices, long long* counts, long long* inverse,               \
                         long long* nuniq, unsigned* counter, unsigned* flags, ulonglong2* aggs,  \
                         ulonglong2* incls) {                                                     \
        sortuniq_runs<K>(s, s_is_key, perm, x, zfirst, n, mode, values, indices, counts,          \
                         inverse, nuniq, counter, flags, aggs, incls);                            \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(256, 3)                                          \
    xp_sortuniq_wruns_##W(const K* s, int s_is_key, const long long* perm, const K* x,            \
                          const u64* zfirst, long long n, int mode, K* values,                    \
                          long long* indices, long long* counts, long long* inverse,              \
                          long long* nuniq, const ulonglong2* incls, long long rpw) {             \
        sortuniq_wruns<K>(s, s_is_key, perm, x, zfirst, n, mode, values, indices, counts,         \
                          inverse, nuniq, incls, rpw);                                            \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(256, UQ_VALS_BLOCKS)                             \
    xp_sortuniq_wvals_##W(const K* s, const K* x, const u64* zfirst, long long n, int mode,       \
                          K* values, long long* nuniq, const ulonglong2* incls, long long rpw) {  \
        sortuniq_wruns<K>(s, 1, nullptr, x, zfirst, n, mode, values, nullptr, nullptr, nullptr,   \
                          nuniq, incls, rpw);                                                     \
    }

SORTUNIQ(4, u32)
SORTUNIQ(8, u64)

// ---- set functions of few distinct values: a hash table, no sort -----------------------------
// unique_* of a long 32/64-bit array whose distinct keys fit HQ_MAX: each block counts its
// contiguous chunk in a shared-memory table (key, count, first offset), then merges it into one
// global table; one block sorts the <= HQ_MAX keys (bitonic) and writes values (the input bits
// at each key's first index: exact, -0.0 included), first indices, counts and each slot's
// rank; the inverse looks each element's key up in the table. About one read of the input (plus one more
// and the int64 write for the inverse) where the sort path reads and writes it several times.
// More than HQ_MAX distinct keys, a full probe or a NaN (each NaN is its own value) set the
// abort word: every block stops at its next round and *nuniq = -1 tells the launcher to sort.
// In MODE_FLOAT the all-ones key is NaN's; in the integer modes it is a number (the largest),
// counted beside the table since the table marks empty slots with it.

#define HQ_SLOTS 4096
#define HQ_MAX 2048
#define HQ_PROBES 64  // a longer probe (at most half the slots full) refuses: the sort serves

template <typename K>
__device__ __forceinline__ unsigned hq_hash(K k) {
    // Fibonacci hashing of the key folded to 32 bits: the product's top bits depend on every
    // bit of the key (one 32-bit multiply; keys here differ in any bits: floats, offsets)
    const unsigned v = sizeof(K) == 8 ? (unsigned)k ^ (unsigned)((u64)k >> 32) : (unsigned)k;
    static_assert(HQ_SLOTS == 1 << 12, "hq_hash returns 12 bits");
    return (v * 0x9e3779b1u) >> (32 - 12);
}

// The slot of key k in the table `keys` (shared or global), claimed if new (`fresh`); -1 after
// HQ_PROBES slots, or after 8 once *stop is set (a refused block's table fills up: its late
// inserts must not probe it whole). Slots go from empty (all ones) to a key once, so a stale read is
// corrected by the compare-and-swap's answer.
template <typename K>
__device__ __forceinline__ int hq_slot(K* keys, K k, bool& fresh, const unsigned* stop) {
    const K EMPTY = (K)~(K)0;
    unsigned h = hq_hash<K>(k);
    for (int p = 0; p < HQ_PROBES; ++p) {
        const K cur = keys[h];
        if (cur == k) { fresh = false; return (int)h; }
        if (cur == EMPTY) {
            const K prev = atomicCAS(&keys[h], EMPTY, k);
            if (prev == EMPTY || prev == k) { fresh = prev == EMPTY; return (int)h; }
        }
        h = (h + 1) & (HQ_SLOTS - 1);
        if (p == 8 && stop && *(volatile const unsigned*)stop) return -1;
    }
    return -1;
}

struct HqShared {
    unsigned nloc, stop, maxcnt, maxfirst, zfirst;
};

// c elements of key k, the first at chunk offset off, into the block's table. First offsets
// are kept per key when `track` (indices asked for), else only the float zero's (its sign).
template <typename K>
__device__ __forceinline__ void hq_add(K* keys, unsigned* cnt, unsigned* first, HqShared& sh,
                                       K k, unsigned c, unsigned off, bool fl, bool track) {
    if (k == (K)~(K)0) {  // NaN (float): abort; the largest integer: beside the table
        if (fl) { sh.stop = 1; return; }
        atomicAdd(&sh.maxcnt, c);
        atomicMin(&sh.maxfirst, off);
        return;
    }
    bool fresh;
    const int h = hq_slot<K>(keys, k, fresh, &sh.stop);
    if (h < 0) { sh.stop = 1; return; }
    if (fresh && atomicAdd(&sh.nloc, 1u) >= HQ_MAX) sh.stop = 1;
    atomicAdd(&cnt[h], c);
    if (track) {
        if (off < first[h]) atomicMin(&first[h], off);
    } else if (fl && k == sign_bit<K>()) {
        atomicMin(&sh.zfirst, off);
    }
}

// Block b counts x[b * chunk, min(n, (b + 1) * chunk)) (chunk: a multiple of 16 / sizeof(K);
// vec: x is 16-byte aligned) and merges into gkeys / gcounts / gfirst (HQ_SLOTS each, empty:
// all ones / 0 / all ones; gfirst only when `track`); gstate = {abort, distinct keys claimed};
// gmax = {count, first} of the largest integer key, then the float zero's first index. Each
// round a thread loads HQ_UNROLL contiguous vectors (the loads in flight set the pace) and
// counts each run of equal keys among them once: constant and sorted inputs make few table
// updates. No barrier in the loop: a thread leaves it once the block's stop word is set (by an
// overflow, a NaN, or the abort word, which thread 0 reads every 8 rounds from the first: a
// block starting after a refusal counts nothing). The key mode is a template argument: no
// per-element branch on it.
// One vector a thread a round: on the H200, 16M float32 of 1000 values counted in 56 us against
// 73 (two vectors) and 148 (four; more registers live across the table updates), and a refused
// input (all distinct) stops sooner (each round's updates run to its end).
#define HQ_UNROLL 1
template <typename K, int MODE>
__device__ __forceinline__ void hq_count_chunk(const K* __restrict__ x, long long start,
                                               long long end, int vec, bool track, K* keys,
                                               unsigned* cnt, unsigned* first, HqShared& sh,
                                               const unsigned* gstate) {
    constexpr int V = 16 / (int)sizeof(K);
    constexpr int E = V * HQ_UNROLL;
    const bool fl = MODE == MODE_FLOAT;
    const long long step = (long long)blockDim.x * E;
    int r = 0;
    for (long long base = start; base < end; base += step, ++r) {
        if ((r & 7) == 0 && threadIdx.x == 0 && *(volatile const unsigned*)gstate) sh.stop = 1;
        if (*(volatile unsigned*)&sh.stop) break;
        const long long i0 = base + (long long)threadIdx.x * E;
        if (i0 >= end) continue;
        K k[E];
        int m = E;
        if (vec && i0 + E <= end) {
#pragma unroll
            for (int u = 0; u < HQ_UNROLL; ++u) {
                union { uint4 q; K e[V]; } w;
                w.q = *reinterpret_cast<const uint4*>(x + i0 + u * V);
#pragma unroll
                for (int j = 0; j < V; ++j) k[u * V + j] = w.e[j];
            }
        } else {
            m = (int)min((long long)E, end - i0);
#pragma unroll
            for (int j = 0; j < E; ++j) k[j] = j < m ? x[i0 + j] : (K)0;
        }
        K run = to_key<K>(k[0], MODE);
        unsigned rc = 1, ro = (unsigned)(i0 - start);
#pragma unroll
        for (int j = 1; j < E; ++j) {
            if (j >= m) break;
            const K kj = to_key<K>(k[j], MODE);
            if (kj == run) { ++rc; continue; }
            hq_add<K>(keys, cnt, first, sh, run, rc, ro, fl, track);
            run = kj;
            rc = 1;
            ro = (unsigned)(i0 + j - start);
        }
        hq_add<K>(keys, cnt, first, sh, run, rc, ro, fl, track);
    }
}

template <typename K>
__device__ __forceinline__ void hashuniq_count(const K* __restrict__ x, long long n,
                                               long long chunk, int mode, int vec, int track,
                                               K* gkeys, u64* gcounts, u64* gfirst,
                                               unsigned* gstate, u64* gmax) {
    extern __shared__ __align__(16) unsigned char hq_smem[];
    K* keys = reinterpret_cast<K*>(hq_smem);
    unsigned* cnt = reinterpret_cast<unsigned*>(keys + HQ_SLOTS);
    unsigned* first = cnt + HQ_SLOTS;
    HqShared& sh = *reinterpret_cast<HqShared*>(first + HQ_SLOTS);  // dynamic: over 48 KiB opts in
    const K EMPTY = (K)~(K)0;
    for (int s = threadIdx.x; s < HQ_SLOTS; s += blockDim.x) {
        keys[s] = EMPTY;
        cnt[s] = 0;
        first[s] = 0xffffffffu;
    }
    if (threadIdx.x == 0) {
        sh.nloc = 0;
        sh.stop = 0;
        sh.maxcnt = 0;
        sh.maxfirst = 0xffffffffu;
        sh.zfirst = 0xffffffffu;
    }
    __syncthreads();
    const long long start = (long long)blockIdx.x * chunk;
    const long long end = min(n, start + chunk);
    const bool tr = track != 0;
    if (mode == MODE_FLOAT)
        hq_count_chunk<K, MODE_FLOAT>(x, start, end, vec, tr, keys, cnt, first, sh, gstate);
    else if (mode == MODE_SIGNED)
        hq_count_chunk<K, MODE_SIGNED>(x, start, end, vec, tr, keys, cnt, first, sh, gstate);
    else
        hq_count_chunk<K, MODE_UNSIGNED>(x, start, end, vec, tr, keys, cnt, first, sh, gstate);
    __syncthreads();
    if (sh.stop) {
        if (threadIdx.x == 0) atomicExch(gstate, 1u);
        return;
    }
    // Merging stops at the abort word: a block whose chunk was one or two rounds never fills
    // its own table, so with many distinct keys every block reached the merge, and each probe
    // of the full global table ran HQ_PROBES long (H200, 1M distinct float32: 0.89 ms).
    for (int s = threadIdx.x; s < HQ_SLOTS; s += blockDim.x) {
        if (*(volatile const unsigned*)gstate) break;
        const K k = keys[s];
        if (k == EMPTY) continue;
        bool fresh;
        const int h = hq_slot<K>(gkeys, k, fresh, gstate);
        if (h < 0 || (fresh && atomicAdd(gstate + 1, 1u) >= HQ_MAX)) {
            atomicExch(gstate, 1u);
            break;
        }
        atomicAdd(&gcounts[h], (u64)cnt[s]);
        if (tr) atomicMin(&gfirst[h], (u64)start + first[s]);
    }
    if (threadIdx.x == 0) {
        if (sh.maxcnt) {
            atomicAdd(&gmax[0], (u64)sh.maxcnt);
            atomicMin(&gmax[1], (u64)start + sh.maxfirst);
        }
        if (sh.zfirst != 0xffffffffu) atomicMin(&gmax[2], (u64)start + sh.zfirst);
    }
}

// One block of HQ_MAX / 2 threads: the table's keys sorted (bitonic, padded with all ones),
// then values / indices / counts in key order, each slot's rank (srank, for the inverse) and
// *nuniq; *nuniq = -1 after an abort.
template <typename K>
__device__ __forceinline__ void hashuniq_finish(const K* __restrict__ x, const K* gkeys,
                                                const u64* gcounts, const u64* gfirst,
                                                const unsigned* gstate, const u64* gmax,
                                                int mode, K* values, long long* indices,
                                                long long* counts, unsigned* srank,
                                                long long* nuniq) {
    __shared__ K sk[HQ_MAX];
    __shared__ unsigned short ss[HQ_MAX];
    __shared__ unsigned nk;
    const K EMPTY = (K)~(K)0;
    const int t = threadIdx.x;
    if (gstate[0]) {
        if (t == 0) *nuniq = -1;
        return;
    }
    if (t == 0) nk = 0;
    __syncthreads();
    for (int s = t; s < HQ_SLOTS; s += blockDim.x) {
        const K k = gkeys[s];
        if (k != EMPTY) {
            const unsigned j = atomicAdd(&nk, 1u);
            sk[j] = k;
            ss[j] = (unsigned short)s;
        }
    }
    __syncthreads();
    const unsigned m = nk;
    for (unsigned j = m + t; j < HQ_MAX; j += blockDim.x) { sk[j] = EMPTY; ss[j] = 0; }
    for (int size = 2; size <= HQ_MAX; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            const int i = 2 * t - (t & (stride - 1));
            const int j = i + stride;
            const bool up = (i & size) == 0;
            const K a = sk[i], b = sk[j];
            if ((a > b) == up) {
                sk[i] = b;
                sk[j] = a;
                const unsigned short q = ss[i];
                ss[i] = ss[j];
                ss[j] = q;
            }
        }
    }
    __syncthreads();
    for (unsigned j = t; j < m; j += blockDim.x) {
        const int s = ss[j];
        if (indices) {  // the first indices were tracked: values are their bits
            const u64 f = gfirst[s];
            values[j] = x[f];
            indices[j] = (long long)f;
        } else {  // the float zero's sign is its first occurrence's
            const K k = sk[j];
            values[j] = mode == MODE_FLOAT && k == sign_bit<K>() ? x[gmax[2]] : from_key<K>(k, mode);
        }
        if (counts) counts[j] = (long long)gcounts[s];
        srank[s] = j;
    }
    if (t == 0) {
        const bool top = gmax[0] != 0;
        if (top) {
            values[m] = x[gmax[1]];
            if (indices) indices[m] = (long long)gmax[1];
            if (counts) counts[m] = (long long)gmax[0];
        }
        *nuniq = (long long)m + (top ? 1 : 0);
    }
}

// inverse[i] = the rank of x[i]'s key: its slot in the global table (staged in shared memory
// with the slots' ranks) probed as the count did; the integers' largest key ranks last.
// Nothing after an abort.
template <typename K, int MODE>
__device__ __forceinline__ void hq_inverse_loop(const K* __restrict__ x, long long n,
                                                const K* sk, const unsigned* sr, long long k,
                                                long long* inverse) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const K key = to_key<K>(x[i], MODE);
        long long rank = k - 1;  // the largest integer (never in the table)
        if (key != (K)~(K)0) {
            unsigned h = hq_hash<K>(key);
            while (sk[h] != key) h = (h + 1) & (HQ_SLOTS - 1);  // present: the count put it
            rank = sr[h];
        }
        inverse[i] = rank;
    }
}

template <typename K>
__device__ __forceinline__ void hashuniq_inverse(const K* __restrict__ x, long long n, int mode,
                                                 const K* gkeys, const unsigned* srank,
                                                 const long long* nuniq, long long* inverse) {
    extern __shared__ __align__(16) unsigned char hq_smem[];
    K* sk = reinterpret_cast<K*>(hq_smem);
    unsigned* sr = reinterpret_cast<unsigned*>(sk + HQ_SLOTS);
    const long long k = *nuniq;
    if (k < 0) return;
    for (int s = threadIdx.x; s < HQ_SLOTS; s += blockDim.x) {
        sk[s] = gkeys[s];
        sr[s] = srank[s];
    }
    __syncthreads();
    if (mode == MODE_FLOAT) hq_inverse_loop<K, MODE_FLOAT>(x, n, sk, sr, k, inverse);
    else if (mode == MODE_SIGNED) hq_inverse_loop<K, MODE_SIGNED>(x, n, sk, sr, k, inverse);
    else hq_inverse_loop<K, MODE_UNSIGNED>(x, n, sk, sr, k, inverse);
}

#define HASHUNIQ(W, K)                                                                            \
    extern "C" __global__ void __launch_bounds__(512)                                             \
    xp_hashuniq_count_##W(const K* x, long long n, long long chunk, int mode, int vec,           \
                          int track, K* gkeys, u64* gcounts, u64* gfirst, unsigned* gstate,      \
                          u64* gmax) {                                                            \
        hashuniq_count<K>(x, n, chunk, mode, vec, track, gkeys, gcounts, gfirst, gstate, gmax);  \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(HQ_MAX / 2)                                      \
    xp_hashuniq_finish_##W(const K* x, const K* gkeys, const u64* gcounts, const u64* gfirst,    \
                           const unsigned* gstate, const u64* gmax, int mode, K* values,         \
                           long long* indices, long long* counts, unsigned* srank,               \
                           long long* nuniq) {                                                    \
        hashuniq_finish<K>(x, gkeys, gcounts, gfirst, gstate, gmax, mode, values, indices,       \
                           counts, srank, nuniq);                                                 \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(512)                                             \
    xp_hashuniq_inverse_##W(const K* x, long long n, int mode, const K* gkeys,                   \
                            const unsigned* srank, const long long* nuniq, long long* inverse) { \
        hashuniq_inverse<K>(x, n, mode, gkeys, srank, nuniq, inverse);                            \
    }

HASHUNIQ(4, u32)
HASHUNIQ(8, u64)
