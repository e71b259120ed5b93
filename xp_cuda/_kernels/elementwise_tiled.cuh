// Elementwise kernels with an operand read against its memory order (x.T + y): appended to
// elementwise.cuh only in the units of the tiled layouts (elementwise.header), so every other
// unit's source, and its shipped cubin, stays as it was.
//
// The output is C-contiguous; `a` is its innermost (collapsed) dimension and `b` the one along
// which the tiled operand is contiguous. A block takes E x E tiles of (b, a): it reads the tiled
// operand with its lanes along b into shared memory, every other operand with its lanes along a
// (issued before the barrier, so their loads overlap the tile's), then computes and stores with
// its lanes along a. Copying the operand C-contiguous first and reading it back cost two more
// passes over it (x.T + y of (8192, 8192) float32: 0.35 ms, 0.55 of the copy rate).
#pragma once

// Tile edge E (64 elements: 16 loads in flight a thread, as copy.cu's transpose; 32 for 16-byte
// elements, whose 64-edge tile would pass 48 KiB of static shared memory) and row padding P:
// each tile row spans an odd number of 4-byte banks, so the column reads hit distinct banks.
template <typename V>
struct XpTile {
  static constexpr int E = sizeof(V) >= 16 ? 32 : 64;
  static constexpr int P = sizeof(V) >= 4 ? 1 : 4 / (int)sizeof(V);
};

#define XP_TILE_THREADS 256  // THREADS in elementwise.py

template <bool C, typename A, typename B>
struct XpIf { typedef A type; };
template <typename A, typename B>
struct XpIf<false, A, B> { typedef B type; };

template <typename S>
struct XpElem;
template <typename V>
struct XpElem<XpArr<V>> { typedef V type; };
template <typename V>
struct XpElem<XpVal<V>> { typedef V type; };

// An operand from a tile's origin, read at 32-bit offsets (the host tiles only geometries
// whose offsets within a tile fit: tile_operand): 64-bit offsets for each of a thread's 16
// loads took 110 registers a thread (two blocks a SM) for float32 and spilled for float64.
template <typename S>
struct XpAt;
template <typename V>
struct XpAt<XpArr<V>> {
  const V* __restrict__ p;
  __device__ __forceinline__ XpAt(const XpArr<V>& s, xp_i64 o) : p(s.p + o) {}
  __device__ __forceinline__ V ld(int i) const { return p[i]; }
};
template <typename V>
struct XpAt<XpVal<V>> {
  V v;
  __device__ __forceinline__ XpAt(const XpVal<V>& s, xp_i64) : v(s.v) {}
  __device__ __forceinline__ V ld(int) const { return v; }
};

// One tile at origin (a0, b0) of extents (ra, rb) left from it (FULL: both at least E, no
// bounds checks: one body with the checks ran x.T + y of (8192, 8192) float32 in 0.357 ms
// against 0.200, float64 0.497 against 0.391, on the H200). The tiled operand's loads are all issued before its shared stores; the other
// operand is read after the barrier (holding its values across the barrier too took the
// registers of a second block a SM).
template <bool FULL, int TILED, int E, typename Op, typename A1, typename A2, typename VT,
          typename TO>
__device__ __forceinline__ void xp_tile_one(const A1& p1, const A2& p2, TO* __restrict__ o,
                                            VT (*tile)[E + XpTile<VT>::P], int ra, int rb,
                                            int in1, int sb1, int in2, int sb2, int osb) {
  typedef typename Op::T T;
  constexpr int R = XP_TILE_THREADS / E, K = E / R;
  const int tx = threadIdx.x % E, ty = threadIdx.x / E;
  VT v[K];
#pragma unroll
  for (int i = 0; i < K; ++i) {  // lanes along b, the tiled operand's contiguous dimension
    const int k = ty + i * R;
    if (FULL || (k < ra && tx < rb)) {
      if constexpr (TILED == 1) v[i] = p1.ld(k * in1 + tx * sb1);
      else v[i] = p2.ld(k * in2 + tx * sb2);
    }
  }
#pragma unroll
  for (int i = 0; i < K; ++i) tile[ty + i * R][tx] = v[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < K; ++i) {  // lanes along a, the output's contiguous dimension
    const int k = ty + i * R;
    if (FULL || (tx < ra && k < rb)) {
      const T a = TILED == 1 ? (T)tile[tx][k] : (T)p1.ld(tx * in1 + k * sb1);
      const T b = TILED == 2 ? (T)tile[tx][k] : (T)p2.ld(tx * in2 + k * sb2);
      o[tx + k * osb] = Op::f(a, b);
    }
  }
  __syncthreads();
}

// TILED: which operand goes through the tile (1 or 2). kb: the b dimension's index; nb its
// extent; sb1, sb2 the operands' element strides along it; osb the output's (the product of
// the dimensions after kb).
template <int TILED, typename Op, typename S1, typename S2, typename TO>
__device__ __forceinline__ void xp_tiled2(const S1& x1, const S2& x2, TO* __restrict__ out,
                                          xp_i64 n, const XpGeo& g, int kb, xp_i64 nb,
                                          xp_i64 sb1, xp_i64 sb2, xp_i64 osb) {
  typedef typename XpElem<typename XpIf<TILED == 1, S1, S2>::type>::type VT;
  constexpr int E = XpTile<VT>::E;
  __shared__ VT tile[E][E + XpTile<VT>::P];
  const xp_i64 na = g.inner;
  // tile tasks in 32 bits (fewer than 2^31 tiles of 1024 elements or more: tile_operand),
  // the batch coordinates by each dimension's multiply and shift (as xp_strided2): 64-bit
  // divisions here were most of the unit's compile time
  const unsigned int ta = (unsigned int)((na + E - 1) / E), tb = (unsigned int)((nb + E - 1) / E);
  const unsigned int tasks = (unsigned int)(n / (na * nb)) * ta * tb;
  for (unsigned int t = blockIdx.x; t < tasks; t += gridDim.x) {
    const unsigned int q = t / ta;
    const xp_i64 a0 = (xp_i64)(t - q * ta) * E;
    unsigned int r = q / tb;
    const xp_i64 b0 = (xp_i64)(q - r * tb) * E;
    // the batch coordinates (every dimension but a and b): offsets of the tile's origin
    xp_i64 o1 = 0, o2 = 0, oo = 0, os = 1;
#pragma unroll
    for (int d = XP_MAXND - 1; d >= 0; --d) {
      if (d < g.nd) {
        if (d != kb && d != g.nd - 1) {
          unsigned int c;
          r = xp_divmod<true>(r, g, d, c);
          o1 += (xp_i64)c * g.s1[d];
          o2 += (xp_i64)c * g.s2[d];
          oo += (xp_i64)c * os;
        }
        os *= g.sh[d];
      }
    }
    const XpAt<S1> p1(x1, o1 + a0 * g.in1 + b0 * sb1);
    const XpAt<S2> p2(x2, o2 + a0 * g.in2 + b0 * sb2);
    TO* o = out + oo + a0 + b0 * osb;
    const xp_i64 ra = na - a0, rb = nb - b0;  // what is left of each dimension from the origin
    if (ra >= E && rb >= E)
      xp_tile_one<true, TILED, E, Op>(p1, p2, o, tile, E, E, (int)g.in1, (int)sb1,
                                      (int)g.in2, (int)sb2, (int)osb);
    else
      xp_tile_one<false, TILED, E, Op>(p1, p2, o, tile, (int)(ra < E ? ra : E),
                                       (int)(rb < E ? rb : E), (int)g.in1, (int)sb1,
                                       (int)g.in2, (int)sb2, (int)osb);
  }
}

template <typename Op, typename S1, typename TO>
__device__ __forceinline__ void xp_tiled1(const S1& x1, TO* __restrict__ out, xp_i64 n,
                                          const XpGeo& g, int kb, xp_i64 nb, xp_i64 sb1,
                                          xp_i64 osb) {
  // one operand: the second is a placeholder value, never read from memory
  struct One {
    typedef typename Op::T T;
    static __device__ __forceinline__ TO f(T a, T) { return Op::f(a); }
  };
  xp_tiled2<1, One>(x1, XpVal<typename Op::T>{typename Op::T()}, out, n, g, kb, nb, sb1, 0,
                    osb);
}
