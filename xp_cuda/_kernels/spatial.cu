// k-d tree build and queries for xp_cuda.spatial.KDTree (launcher: spatial.py).
//
// The tree is implicit and balanced: node `nd` (heap numbering, root 0, children 2nd+1 and
// 2nd+2) at level l, index i = nd - (2^l - 1), owns the points at tree positions
// [floor(i n / 2^l), floor((i+1) n / 2^l)) of `pts` (the data permuted into tree order, with
// `order` mapping tree positions back to the caller's indices). Leaves are the 2^D nodes of
// level D. Every node stores its tight bounding box (lo[m], hi[m]), so traversal is exact
// whatever split the build chose. All distances are float64 and "reduced" as in SciPy:
// sum |d|^p (squares for p=2), max |d| for p=inf; the p-th root is taken only on output.
//
// Compile-time options (every combination compiles; defaults below make the file standalone):
//   DIM      point dimension, or 0 for a run-time `m`
//   PMODE    1: p=1, 2: p=2, 3: p=inf, 4: any other p (run-time `p`)
//   PERIODIC 1: wrap differences by the per-dimension box size L[d] (L[d] == 0: not periodic)
//   KMAX     slots of the per-thread k-best list (run-time k <= KMAX)
#include <cupy/math_constants.h>

#ifndef DIM
#define DIM 3
#endif
#ifndef PMODE
#define PMODE 2
#endif
#ifndef PERIODIC
#define PERIODIC 0
#endif
#ifndef KMAX
#define KMAX 8
#endif

typedef long long i64;
typedef unsigned long long u64;

#define DIMS (DIM > 0 ? DIM : m)
// Pruning slack: box distances may round above a point's computed distance by an ulp or so;
// visiting slightly more nodes never changes results (points are tested exactly).
#define SAFE_LO (1.0 - 1e-12)
#define SAFE_HI (1.0 + 1e-12)
#define STACK 64

__device__ __forceinline__ double p_term(double t, double p) {
#if PMODE == 2
    return t * t;
#elif PMODE == 4
    return pow(t, p);
#else
    return t;
#endif
}

__device__ __forceinline__ double p_acc(double s, double v) {
#if PMODE == 3
    return fmax(s, v);
#else
    return s + v;
#endif
}

// Output distance from a reduced one (SciPy: sqrt for p=2, pow(., 1/p) for other finite p).
__device__ __forceinline__ double p_final(double s, double p) {
#if PMODE == 2
    return sqrt(s);
#elif PMODE == 4
    return pow(s, 1.0 / p);
#else
    return s;
#endif
}

__device__ __forceinline__ double wrap_diff(double t, const double* L, int d) {
#if PERIODIC
    double Ld = L[d];
    if (Ld > 0.0) t = fmin(t, Ld - t);
#endif
    return t;
}

// Reduced distance between two points. Non-periodic p=2 sums with four accumulators like
// SciPy's sqeuclidean_distance_double, so boundary decisions on exact data agree.
__device__ __forceinline__ double pdist(const double* q, const double* x, int m,
                                        const double* L, double p) {
#if PMODE == 2 && !PERIODIC
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int d = 0;
#pragma unroll
    for (; d + 4 <= DIMS; d += 4) {
        double t0 = q[d] - x[d], t1 = q[d + 1] - x[d + 1];
        double t2 = q[d + 2] - x[d + 2], t3 = q[d + 3] - x[d + 3];
        a0 += t0 * t0; a1 += t1 * t1; a2 += t2 * t2; a3 += t3 * t3;
    }
    double s = a0 + a1 + a2 + a3;
#pragma unroll
    for (; d < DIMS; ++d) { double t = q[d] - x[d]; s += t * t; }
    return s;
#else
    double s = 0.0;
#pragma unroll
    for (int d = 0; d < DIMS; ++d)
        s = p_acc(s, p_term(wrap_diff(fabs(q[d] - x[d]), L, d), p));
    return s;
#endif
}

// Smallest reduced distance from q to the box [lo, hi] (infinite for an empty box).
// Same accumulation pattern as pdist, so (rounding being monotone) it never exceeds the
// computed distance of a point inside the box.
__device__ __forceinline__ double box_gap(const double* q, const double* lo, const double* hi,
                                          int d, const double* L) {
    double t = fmax(0.0, fmax(lo[d] - q[d], q[d] - hi[d]));
#if PERIODIC
    double Ld = L[d];
    if (Ld > 0.0) t = fmin(t, fmin(lo[d] + Ld - q[d], q[d] - hi[d] + Ld));
#endif
    return t;
}

__device__ __forceinline__ double box_min(const double* q, const double* lo, const double* hi,
                                          int m, const double* L, double p) {
#if PMODE == 2 && !PERIODIC
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int d = 0;
#pragma unroll
    for (; d + 4 <= DIMS; d += 4) {
        double t0 = box_gap(q, lo, hi, d, L), t1 = box_gap(q, lo, hi, d + 1, L);
        double t2 = box_gap(q, lo, hi, d + 2, L), t3 = box_gap(q, lo, hi, d + 3, L);
        a0 += t0 * t0; a1 += t1 * t1; a2 += t2 * t2; a3 += t3 * t3;
    }
    double s = a0 + a1 + a2 + a3;
#pragma unroll
    for (; d < DIMS; ++d) { double t = box_gap(q, lo, hi, d, L); s += t * t; }
    return s;
#else
    double s = 0.0;
#pragma unroll
    for (int d = 0; d < DIMS; ++d) s = p_acc(s, p_term(box_gap(q, lo, hi, d, L), p));
    return s;
#endif
}

// Largest reduced distance from q to a point of the box (periodic boxes: +inf, no shortcut).
__device__ __forceinline__ double box_max(const double* q, const double* lo, const double* hi,
                                          int m, const double* L, double p) {
#if PERIODIC
    return CUDART_INF;
#elif PMODE == 2
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int d = 0;
#pragma unroll
    for (; d + 4 <= DIMS; d += 4) {
        double t0 = fmax(q[d] - lo[d], hi[d] - q[d]);
        double t1 = fmax(q[d + 1] - lo[d + 1], hi[d + 1] - q[d + 1]);
        double t2 = fmax(q[d + 2] - lo[d + 2], hi[d + 2] - q[d + 2]);
        double t3 = fmax(q[d + 3] - lo[d + 3], hi[d + 3] - q[d + 3]);
        a0 += t0 * t0; a1 += t1 * t1; a2 += t2 * t2; a3 += t3 * t3;
    }
    double s = a0 + a1 + a2 + a3;
#pragma unroll
    for (; d < DIMS; ++d) { double t = fmax(q[d] - lo[d], hi[d] - q[d]); s += t * t; }
    return s;
#else
    double s = 0.0;
#pragma unroll
    for (int d = 0; d < DIMS; ++d) s = p_acc(s, p_term(fmax(q[d] - lo[d], hi[d] - q[d]), p));
    return s;
#endif
}

__device__ __forceinline__ i64 node_start(i64 i, int l, i64 n) { return (i * n) >> l; }

__device__ __forceinline__ int node_level(i64 nd) { return 63 - __clzll((u64)(nd + 1)); }

// ---- build ---------------------------------------------------------------------------------

// Order-preserving unsigned image of a double (no NaNs here: the data was checked finite).
__device__ __forceinline__ u64 ordered_bits(double x) {
    u64 b = (u64)__double_as_longlong(x);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ULL);
}

// Sort keys of level l: the node index in the top l bits, the split coordinate below it.
// Truncating the coordinate only makes a split slightly unbalanced in value, never wrong:
// node boxes are recomputed tight from the final order.
extern "C" __global__ void kd_keys(const double* __restrict__ data, const i64* __restrict__ order,
                                   const int* __restrict__ dims, u64* __restrict__ keys,
                                   i64 n, int m, int l) {
    i64 pos = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (pos >= n) return;
    i64 i = (((pos + 1) << l) - 1) / n;
    u64 u = ordered_bits(data[order[pos] * m + dims[i]]);
    keys[pos] = l == 0 ? u : (((u64)i << (64 - l)) | (u >> l));
}

// Approximate boxes of the children of each level-l node (the parent's box cut at the split
// value) and their split dimensions (the widest side).
extern "C" __global__ void kd_split(const double* __restrict__ data, const i64* __restrict__ order,
                                    const int* __restrict__ dims, const double* __restrict__ abox,
                                    double* __restrict__ abox_next, int* __restrict__ dims_next,
                                    i64 n, int m, int l) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= ((i64)1 << l)) return;
    i64 s = node_start(i, l, n), e = node_start(i + 1, l, n), mid = node_start(2 * i + 1, l + 1, n);
    int d = dims[i];
    const double* b = abox + i * 2 * m;
    double* left = abox_next + 2 * i * 2 * m;
    double* right = left + 2 * m;
    for (int c = 0; c < 2 * m; ++c) { left[c] = b[c]; right[c] = b[c]; }
    if (mid > s && mid < e) {
        double v = data[order[mid] * m + d];
        left[m + d] = v;
        right[d] = v;
    }
    for (int c = 0; c < 2; ++c) {
        const double* cb = left + c * 2 * m;
        int best = 0;
        double w = cb[m] - cb[0];
        for (int dd = 1; dd < m; ++dd) {
            double ww = cb[m + dd] - cb[dd];
            if (ww > w) { w = ww; best = dd; }
        }
        dims_next[2 * i + c] = best;
    }
}

extern "C" __global__ void kd_leaf_boxes(const double* __restrict__ pts, double* __restrict__ boxes,
                                         i64 n, int m, int D) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= ((i64)1 << D)) return;
    i64 s = node_start(i, D, n), e = node_start(i + 1, D, n);
    double* b = boxes + ((((i64)1 << D) - 1) + i) * 2 * m;
    for (int d = 0; d < m; ++d) {
        double lo = CUDART_INF, hi = -CUDART_INF;
        for (i64 j = s; j < e; ++j) {
            double v = pts[j * m + d];
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        b[d] = lo;
        b[m + d] = hi;
    }
}

extern "C" __global__ void kd_merge_boxes(double* __restrict__ boxes, int m, int l) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= ((i64)1 << l)) return;
    i64 nd = (((i64)1 << l) - 1) + i;
    double* b = boxes + nd * 2 * m;
    const double* c1 = boxes + (2 * nd + 1) * 2 * m;
    const double* c2 = c1 + 2 * m;
    for (int d = 0; d < m; ++d) {
        b[d] = fmin(c1[d], c2[d]);
        b[m + d] = fmax(c1[m + d], c2[m + d]);
    }
}

// Per-node sums of point weights (tree order), leaves first then level by level upwards.
extern "C" __global__ void kd_leaf_sums(const double* __restrict__ w, double* __restrict__ sums,
                                        i64 n, int D) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= ((i64)1 << D)) return;
    i64 s = node_start(i, D, n), e = node_start(i + 1, D, n);
    double acc = 0.0;
    for (i64 j = s; j < e; ++j) acc += w[j];
    sums[(((i64)1 << D) - 1) + i] = acc;
}

extern "C" __global__ void kd_merge_sums(double* __restrict__ sums, int l) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= ((i64)1 << l)) return;
    i64 nd = (((i64)1 << l) - 1) + i;
    sums[nd] = sums[2 * nd + 1] + sums[2 * nd + 2];
}

// Morton keys of query points (m <= 8) over the tree's bounding box: queries sorted by them
// walk the tree together, so warps diverge less.
extern "C" __global__ void kd_morton(const double* __restrict__ x, i64 nq, int m,
                                     const double* __restrict__ lo, const double* __restrict__ scale,
                                     int bits, u64* __restrict__ keys) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nq || m > 8) return;
    unsigned cell[8];
    const double top = (double)((1u << bits) - 1);
    for (int d = 0; d < m; ++d) {
        double c = (x[t * m + d] - lo[d]) * scale[d];
        cell[d] = (unsigned)fmin(fmax(c, 0.0), top);
    }
    u64 key = 0;
    for (int b = bits - 1; b >= 0; --b)
        for (int d = 0; d < m; ++d) key = (key << 1) | ((cell[d] >> b) & 1u);
    keys[t] = key;
}

// ---- k nearest neighbours --------------------------------------------------------------------

// The k-best list: ascending, KMAX slots (registers: every index below is static); slots past
// k hold further candidates and are harmless. `worst` is slot k-1, the admission bound.
struct KBest {
    double d[KMAX];
    int i[KMAX];
    double worst;
    __device__ __forceinline__ void init(double ub) {
#pragma unroll
        for (int c = 0; c < KMAX; ++c) { d[c] = ub; i[c] = -1; }
        worst = ub;
    }
    __device__ __forceinline__ void push(double dd, int j, int k) {
        d[KMAX - 1] = dd;
        i[KMAX - 1] = j;
#pragma unroll
        for (int c = KMAX - 1; c > 0; --c) {
            if (d[c] < d[c - 1]) {
                double td = d[c]; d[c] = d[c - 1]; d[c - 1] = td;
                int ti = i[c]; i[c] = i[c - 1]; i[c - 1] = ti;
            }
        }
        double w = d[0];
#pragma unroll
        for (int c = 1; c < KMAX; ++c) if (c == k - 1) w = d[c];
        worst = w;
    }
    // Slot c of row `row`: distance (p-th root taken) and caller index, or inf and n if empty.
    __device__ __forceinline__ void store(double* out_d, i64* out_i, i64 row, int k,
                                          const i64* order, i64 n, double p) {
#pragma unroll
        for (int c = 0; c < KMAX; ++c) {
            if (c < k) {
                bool ok = i[c] >= 0;
                out_d[row * k + c] = ok ? p_final(d[c], p) : CUDART_INF;
                out_i[row * k + c] = ok ? order[i[c]] : n;
            }
        }
    }
};

// One query per thread, stack-based depth-first search visiting the nearer child first.
// `ub` is the reduced distance upper bound (strict). qperm (optional) is a traversal order.
extern "C" __global__ void __launch_bounds__(128)
kd_knn(const double* __restrict__ pts, const double* __restrict__ boxes, const i64* __restrict__ order,
       const double* __restrict__ queries, const i64* __restrict__ qperm, i64 nq, i64 n, int m,
       int D, const double* __restrict__ L, double p, double ub, int k,
       double* __restrict__ out_d, i64* __restrict__ out_i) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nq) return;
    i64 qi = qperm ? qperm[t] : t;
#if DIM > 0
    double q[DIM];
#pragma unroll
    for (int d = 0; d < DIM; ++d) q[d] = queries[qi * DIM + d];
#else
    const double* q = queries + qi * m;
#endif
    KBest best;
    best.init(ub);
    const i64 first_leaf = ((i64)1 << D) - 1;
    i64 stk_n[STACK];
    double stk_d[STACK];
    int sp = 0;
    stk_n[sp] = 0;
    stk_d[sp] = box_min(q, boxes, boxes + m, m, L, p);
    ++sp;
    while (sp > 0) {
        --sp;
        i64 nd = stk_n[sp];
        if (stk_d[sp] * SAFE_LO >= best.worst) continue;
        while (nd < first_leaf) {
            i64 c1 = 2 * nd + 1, c2 = c1 + 1;
            const double* b1 = boxes + c1 * 2 * m;
            const double* b2 = b1 + 2 * m;
            double d1 = box_min(q, b1, b1 + m, m, L, p);
            double d2 = box_min(q, b2, b2 + m, m, L, p);
            if (d2 < d1) {
                i64 tn = c1; c1 = c2; c2 = tn;
                double td = d1; d1 = d2; d2 = td;
            }
            if (d2 * SAFE_LO < best.worst) { stk_n[sp] = c2; stk_d[sp] = d2; ++sp; }
            if (d1 * SAFE_LO >= best.worst) { nd = -1; break; }
            nd = c1;
        }
        if (nd < 0) continue;
        i64 li = nd - first_leaf;
        i64 s = node_start(li, D, n), e = node_start(li + 1, D, n);
        for (i64 j = s; j < e; ++j) {
            double dd = pdist(q, pts + j * DIMS, m, L, p);
            if (dd < best.worst) best.push(dd, (int)j, k);
        }
    }
    best.store(out_d, out_i, qi, k, order, n, p);
}

// Exact brute force for high dimension: a block of BT queries streams every point through
// shared-memory tiles; grid.y splits the points into `chunk`s (partial lists merged by the
// launcher). Row of the output: qi * gridDim.y + blockIdx.y.
#define BT 128
#if DIM > 0
#define BTILE (DIM <= 16 ? 128 : (4096 / DIM > 0 ? 4096 / DIM : 1))
#else
#define BTILE 1
#endif

extern "C" __global__ void __launch_bounds__(BT)
kd_brute(const double* __restrict__ pts, const i64* __restrict__ order,
         const double* __restrict__ queries, i64 nq, i64 n, int m, const double* __restrict__ L,
         double p, double ub, int k, i64 chunk, double* __restrict__ out_d, i64* __restrict__ out_i) {
#if DIM > 0
    __shared__ double tile[BTILE * DIM];
    i64 qi = blockIdx.x * (i64)BT + threadIdx.x;
    bool valid = qi < nq;
    double q[DIM];
#pragma unroll
    for (int d = 0; d < DIM; ++d) q[d] = valid ? queries[qi * DIM + d] : 0.0;
    KBest best;
    best.init(ub);
    i64 j0 = (i64)blockIdx.y * chunk;
    i64 j1 = min(n, j0 + chunk);
    for (i64 t0 = j0; t0 < j1; t0 += BTILE) {
        int cnt = (int)min((i64)BTILE, j1 - t0);
        __syncthreads();
        for (int e = threadIdx.x; e < cnt * DIM; e += BT) tile[e] = pts[t0 * DIM + e];
        __syncthreads();
        if (valid) {
            for (int jj = 0; jj < cnt; ++jj) {
                double dd = pdist(q, tile + jj * DIM, m, L, p);
                if (dd < best.worst) best.push(dd, (int)(t0 + jj), k);
            }
        }
    }
    if (valid) best.store(out_d, out_i, qi * gridDim.y + blockIdx.y, k, order, n, p);
#endif
}

// Dense reduced distances of `cq` queries to all n points (the path for k > KMAX).
extern "C" __global__ void kd_dense(const double* __restrict__ pts, const double* __restrict__ queries,
                                    i64 cq, i64 n, int m, const double* __restrict__ L, double p,
                                    double* __restrict__ out) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= cq * n) return;
    i64 qi = t / n, j = t - qi * n;
    out[t] = pdist(queries + qi * m, pts + j * m, m, L, p);
}

// ---- fixed-radius searches ------------------------------------------------------------------

// Visit every point within reduced radius r of q (d <= r, as SciPy). Whole nodes inside the
// ball are handed over as ranges unless the caller needs each distance (WANT_DIST).
template <int WANT_DIST, class F>
__device__ __forceinline__ void ball_walk(const double* q, const double* pts, const double* boxes,
                                          i64 n, int m, int D, const double* L, double p, double r,
                                          F& f) {
    const i64 first_leaf = ((i64)1 << D) - 1;
    i64 stk[STACK];
    int sp = 0;
    stk[sp++] = 0;
    while (sp > 0) {
        i64 nd = stk[--sp];
        const double* b = boxes + nd * 2 * m;
        if (box_min(q, b, b + m, m, L, p) * SAFE_LO > r) continue;
        if (!WANT_DIST && box_max(q, b, b + m, m, L, p) * SAFE_HI <= r) {
            int l = node_level(nd);
            i64 i = nd - (((i64)1 << l) - 1);
            f.range(node_start(i, l, n), node_start(i + 1, l, n));
            continue;
        }
        if (nd < first_leaf) {
            stk[sp++] = 2 * nd + 2;
            stk[sp++] = 2 * nd + 1;
            continue;
        }
        i64 li = nd - first_leaf;
        i64 s = node_start(li, D, n), e = node_start(li + 1, D, n);
        for (i64 j = s; j < e; ++j) {
            double dd = pdist(q, pts + j * m, m, L, p);
            if (dd <= r) f.hit(j, dd);
        }
    }
}

struct CountF {
    const i64* order;
    i64 qid;
    int pairs;  // count only j with order[j] > qid (query_pairs)
    i64 c;
    __device__ __forceinline__ void hit(i64 j, double) { if (!pairs || order[j] > qid) ++c; }
    __device__ __forceinline__ void range(i64 s, i64 e) {
        if (!pairs) { c += e - s; return; }
        for (i64 j = s; j < e; ++j) if (order[j] > qid) ++c;
    }
};

struct FillF {
    const i64* order;
    i64 qid;
    int pairs;
    i64 pos, end;
    i64* out_j;
    i64* out_q;
    double* out_v;
    double p;
    __device__ __forceinline__ void put(i64 j, double dd) {
        if (pos >= end) return;  // never past the counted slots
        out_j[pos] = order[j];
        if (out_q) out_q[pos] = qid;
        if (out_v) out_v[pos] = p_final(dd, p);
        ++pos;
    }
    __device__ __forceinline__ void hit(i64 j, double dd) { if (!pairs || order[j] > qid) put(j, dd); }
    __device__ __forceinline__ void range(i64 s, i64 e) {
        for (i64 j = s; j < e; ++j) if (!pairs || order[j] > qid) put(j, 0.0);
    }
};

// Pass 1: hits per query. `qids` (optional) names each query for the pair rule and out_q;
// r[t * rstride] is query t's reduced radius. want_dist must match the fill pass.
extern "C" __global__ void kd_ball_count(const double* __restrict__ pts, const double* __restrict__ boxes,
                                         const i64* __restrict__ order, const double* __restrict__ queries,
                                         const i64* __restrict__ qids, i64 nq, i64 n, int m, int D,
                                         const double* __restrict__ L, double p,
                                         const double* __restrict__ r, int rstride, int pairs,
                                         int want_dist, i64* __restrict__ counts) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nq) return;
    CountF f{order, qids ? qids[t] : t, pairs, 0};
    const double* q = queries + t * m;
    if (want_dist) ball_walk<1>(q, pts, boxes, n, m, D, L, p, r[t * rstride], f);
    else ball_walk<0>(q, pts, boxes, n, m, D, L, p, r[t * rstride], f);
    counts[t] = f.c;
}

// Pass 2: write the hits of query t at offsets[t] .. offsets[t+1].
extern "C" __global__ void kd_ball_fill(const double* __restrict__ pts, const double* __restrict__ boxes,
                                        const i64* __restrict__ order, const double* __restrict__ queries,
                                        const i64* __restrict__ qids, i64 nq, i64 n, int m, int D,
                                        const double* __restrict__ L, double p,
                                        const double* __restrict__ r, int rstride, int pairs,
                                        const i64* __restrict__ offsets, i64* __restrict__ out_j,
                                        i64* __restrict__ out_q, double* __restrict__ out_v) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nq) return;
    FillF f{order, qids ? qids[t] : t, pairs, offsets[t], offsets[t + 1], out_j, out_q, out_v, p};
    const double* q = queries + t * m;
    if (out_v) ball_walk<1>(q, pts, boxes, n, m, D, L, p, r[t * rstride], f);
    else ball_walk<0>(q, pts, boxes, n, m, D, L, p, r[t * rstride], f);
}

// First bin b with x <= rr[b] (nr if none); rr ascending.
__device__ __forceinline__ int radius_bin(const double* rr, int nr, double x) {
    int lo = 0, hi = nr;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (x <= rr[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

// count_neighbors: histogram of pair distances over the ascending reduced radii rr (bin b:
// rr[b-1] < d <= rr[b]). Weighted pairs add wt[j] * wq[t] (either factor 1 when absent) into
// hist_w, unweighted pairs add 1 into hist_c. A node whose whole distance range falls into one
// bin is added at once (its count or weight sum).
extern "C" __global__ void kd_count_hist(const double* __restrict__ pts, const double* __restrict__ boxes,
                                         const double* __restrict__ queries, i64 nq, i64 n, int m,
                                         int D, const double* __restrict__ L, double p,
                                         const double* __restrict__ rr, int nr,
                                         const double* __restrict__ wq, const double* __restrict__ wt,
                                         const double* __restrict__ wsum,
                                         u64* __restrict__ hist_c, double* __restrict__ hist_w) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nq || nr <= 0) return;
    const double* q = queries + t * m;
    const double wqt = wq ? wq[t] : 1.0;
    const bool weighted = hist_w != nullptr;
    const double rmax = rr[nr - 1];
    const i64 first_leaf = ((i64)1 << D) - 1;
    i64 stk[STACK];
    int sp = 0;
    stk[sp++] = 0;
    while (sp > 0) {
        i64 nd = stk[--sp];
        const double* b = boxes + nd * 2 * m;
        double md = box_min(q, b, b + m, m, L, p);
        if (md * SAFE_LO > rmax) continue;
        double Md = box_max(q, b, b + m, m, L, p);
        int b0 = radius_bin(rr, nr, md * SAFE_LO);
        if (b0 == radius_bin(rr, nr, Md * SAFE_HI)) {
            if (b0 < nr) {
                int l = node_level(nd);
                i64 i = nd - (((i64)1 << l) - 1);
                i64 cnt = node_start(i + 1, l, n) - node_start(i, l, n);
                if (cnt > 0) {
                    if (weighted) atomicAdd(hist_w + b0, (wt ? wsum[nd] : (double)cnt) * wqt);
                    else atomicAdd(hist_c + b0, (u64)cnt);
                }
            }
            continue;
        }
        if (nd < first_leaf) {
            stk[sp++] = 2 * nd + 2;
            stk[sp++] = 2 * nd + 1;
            continue;
        }
        i64 li = nd - first_leaf;
        i64 s = node_start(li, D, n), e = node_start(li + 1, D, n);
        for (i64 j = s; j < e; ++j) {
            double dd = pdist(q, pts + j * m, m, L, p);
            int bb = radius_bin(rr, nr, dd);
            if (bb < nr) {
                if (weighted) atomicAdd(hist_w + bb, (wt ? wt[j] : 1.0) * wqt);
                else atomicAdd(hist_c + bb, 1ULL);
            }
        }
    }
}
