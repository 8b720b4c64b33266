/* scan.cu - the kernels of the CUDA backend's scans of linear recurrences
 * (the algorithm and the choice of chunks are in backends/parrnn_cuda.h):
 *   fold:   one thread per (sequence, chunk, channel) -- per column of
 *           [M | v] of a (sequence, chunk, block) for block scans -- reduces
 *           its chunk of L steps to one affine map h -> M h + v;
 *   expand: one thread per (sequence, chunk, channel) -- (sequence, chunk,
 *           block) -- runs its chunk from its incoming carry and writes h.
 * With one chunk, expand alone is the whole scan: serial in time, parallel
 * over sequences and channels (PRN_SCAN_SEQUENTIAL).
 * Thread g = (n * chunks + j) * C + c: adjacent threads take adjacent
 * channels, so their loads and stores coalesce. h may be b: every element
 * of b is read by the one thread that overwrites it, before it does. */
#include "common.cuh"

#define PRN_ROW(t) (rev ? T - 1 - (t) : (t))
#define PRN_KMAX 64

template <typename R>
__global__ void k_scan_diag_fold(size_t batch, size_t T, size_t C, size_t L, size_t nm, int rev,
                                 const R *__restrict__ a, const R *__restrict__ b, R *m, R *o) {
    PRN_FOR(g, batch * nm * C) {
        const size_t c = g % C, j = g / C % nm, n = g / C / nm;
        const size_t base = n * T * C + c, t1 = prn_min((j + 1) * L, T);
        R mm = 1, oo = 0;
        for (size_t t = j * L; t < t1; ++t) {
            const size_t i = base + PRN_ROW(t) * C;
            const R x = a[i];
            oo = x * oo + b[i];
            mm *= x;
        }
        m[g] = mm;
        o[g] = oo;
    }
}

/* carry: [batch, nch-1, C] (NULL when nch == 1); h0: [batch, C] or NULL.
 * No __restrict__ here: b may be h. */
template <typename R>
__global__ void k_scan_diag_expand(size_t batch, size_t T, size_t C, size_t L, size_t nch, int rev,
                                   const R *a, const R *b, const R *h0, const R *carry, R *h) {
    PRN_FOR(g, batch * nch * C) {
        const size_t c = g % C, j = g / C % nch, n = g / C / nch;
        const size_t base = n * T * C + c, t1 = prn_min((j + 1) * L, T);
        R st = j ? carry[(n * (nch - 1) + j - 1) * C + c] : h0 ? h0[n * C + c] : (R)0;
        size_t t = j * L;
        /* four steps' loads issued before their multiply-adds: the loads do
         * not depend on the state, so their latencies overlap */
        for (; t + 4 <= t1; t += 4) {
            const size_t i0 = base + PRN_ROW(t) * C, i1 = base + PRN_ROW(t + 1) * C;
            const size_t i2 = base + PRN_ROW(t + 2) * C, i3 = base + PRN_ROW(t + 3) * C;
            const R a0 = a[i0], a1 = a[i1], a2 = a[i2], a3 = a[i3];
            const R b0 = b[i0], b1 = b[i1], b2 = b[i2], b3 = b[i3];
            st = a0 * st + b0;
            h[i0] = st;
            st = a1 * st + b1;
            h[i1] = st;
            st = a2 * st + b2;
            h[i2] = st;
            st = a3 * st + b3;
            h[i3] = st;
        }
        for (; t < t1; ++t) {
            const size_t i = base + PRN_ROW(t) * C;
            st = a[i] * st + b[i];
            h[i] = st;
        }
    }
}

/* Entry (i, m) of block j0's matrix in row ar of a, honouring transpose. */
#define PRN_AM(ar, i, m) (tr ? (ar)[(j0 + (m)) * k + (i)] : (ar)[(j0 + (i)) * k + (m)])

/* The block scans' sizes: kernels are instantiated for a bound KB on the
 * block size k (1, 2, 4, 8, 16, 32, 64; k <= KB), so every per-thread
 * array has a compile-time size and compile-time indices (the loops over
 * KB unroll, guarded by i < k): registers, not local memory. */
#define PRN_KB_REG 8 /* up to here a fold thread's column lives in registers */
/* threads per block of the fold at KB: its columns in shared memory above
 * PRN_KB_REG, 2 x KB x threads values */
#define PRN_FOLD_TPB(KB) ((KB) <= 16 ? 128 : (KB) == 32 ? 64 : 32)
#define PRN_EXPAND_TPB 128

/* Column q of [M | v] of chunk j of block jb of sequence n: x = e_q (q < k)
 * or 0 (q == k, plus b at each step). M: [batch, nm, C, k] with row j0+i
 * holding row i of the chunk's matrix (the layout of a, untransposed);
 * v: [batch, nm, C]. A thread per column; its column in registers (KB <=
 * PRN_KB_REG, fully unrolled) or in shared memory, one slot per thread
 * (consecutive threads, consecutive banks) and two buffers, old and new. */
template <typename R, int KB>
__global__ void __launch_bounds__(PRN_FOLD_TPB(KB))
    k_scan_block_fold(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nm, int rev, int tr,
                      const R *__restrict__ a, const R *__restrict__ b, R *M, R *v) {
    const size_t nblk = C / k;
    const unsigned TP = PRN_FOLD_TPB(KB), ku = (unsigned)k;
    const bool sh = KB > PRN_KB_REG;
    __shared__ R xs[sh ? 2 * KB * PRN_FOLD_TPB(KB) : 1];
    R xr[sh ? 1 : KB], nr[sh ? 1 : KB];
    const unsigned tid = threadIdx.x;
    PRN_FOR(g, batch * nm * nblk * (k + 1)) {
        const size_t q = g % (k + 1), u = g / (k + 1);
        const size_t jb = u % nblk, j = u / nblk % nm, n = u / nblk / nm, j0 = jb * k;
        const size_t t1 = prn_min((j + 1) * L, T);
        unsigned cur = 0;
        if (sh) {
            for (unsigned i = 0; i < ku; ++i) xs[i * TP + tid] = (R)(i == q);
        } else {
#pragma unroll
            for (unsigned i = 0; i < (unsigned)KB; ++i) xr[i] = (R)(i == q);
        }
        for (size_t t = j * L; t < t1; ++t) {
            const size_t r = PRN_ROW(t);
            const R *ar = a + (n * T + r) * C * k, *br = b + (n * T + r) * C + j0;
            if (sh) {
                const R *xo = xs + cur * KB * TP;
                R *xn = xs + (cur ^ 1) * KB * TP;
                for (unsigned i = 0; i < ku; ++i) {
                    R acc = q == k ? br[i] : (R)0;
                    for (unsigned mm = 0; mm < ku; ++mm) acc += PRN_AM(ar, i, mm) * xo[mm * TP + tid];
                    xn[i * TP + tid] = acc;
                }
                cur ^= 1;
            } else {
#pragma unroll
                for (unsigned i = 0; i < (unsigned)KB; ++i) {
                    R acc = 0;
                    if (i < ku) {
                        acc = q == k ? br[i] : (R)0; /* column k carries b */
#pragma unroll
                        for (unsigned mm = 0; mm < (unsigned)KB; ++mm)
                            if (mm < ku) acc += PRN_AM(ar, i, mm) * xr[mm];
                    }
                    nr[i] = acc;
                }
#pragma unroll
                for (unsigned i = 0; i < (unsigned)KB; ++i) xr[i] = nr[i];
            }
        }
        const size_t row = (n * nm + j) * C + j0;
        R *dst = q < k ? M + row * k + q : v + row;
        const size_t step = q < k ? k : 1;
        if (sh) {
            for (unsigned i = 0; i < ku; ++i) dst[i * step] = xs[cur * KB * TP + i * TP + tid];
        } else {
#pragma unroll
            for (unsigned i = 0; i < (unsigned)KB; ++i)
                if (i < ku) dst[i * step] = xr[i];
        }
    }
}

/* carry: [batch, nch-1, C] (NULL when nch == 1); h0: [batch, C] or NULL.
 * A group of k threads per (sequence, chunk, block) -- as many threads as
 * the fold has per block, less one -- thread i computing row i of each
 * step's state from the group's state in shared memory (two buffers: one
 * barrier per step). Groups of a block walk their chunks in step, so every
 * thread meets the same barriers (the last chunk, shorter, idles). */
template <typename R>
__global__ void __launch_bounds__(PRN_EXPAND_TPB)
    k_scan_block_expand(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nch, int rev, int tr,
                        const R *a, const R *b, const R *h0, const R *carry, R *h) {
    __shared__ R st[2 * PRN_EXPAND_TPB];
    const size_t nblk = C / k, units = batch * nch * nblk;
    const unsigned tid = threadIdx.x, ku = (unsigned)k, gpb = PRN_EXPAND_TPB / ku, gl = tid / ku, i = tid % ku;
    const unsigned gb = gl * ku; /* the group's first slot */
    for (size_t u0 = (size_t)blockIdx.x * gpb; u0 < units; u0 += (size_t)gridDim.x * gpb) {
        const size_t u = u0 + gl;
        const bool act = gl < gpb && u < units;
        size_t jb = 0, j = 0, n = 0, j0 = 0, t0 = 0, t1 = 0;
        if (act) {
            jb = u % nblk;
            j = u / nblk % nch;
            n = u / nblk / nch;
            j0 = jb * k;
            t0 = j * L;
            t1 = prn_min(t0 + L, T);
            const R *init = j ? carry + (n * (nch - 1) + j - 1) * C + j0 : h0 ? h0 + n * C + j0 : NULL;
            st[tid] = init ? init[i] : (R)0;
        }
        __syncthreads();
        for (size_t s = 0; s < L; ++s) {
            const unsigned cur = (unsigned)(s & 1) * PRN_EXPAND_TPB, nxt = PRN_EXPAND_TPB - cur;
            if (act && t0 + s < t1) {
                const size_t r = PRN_ROW(t0 + s);
                const R *ar = a + (n * T + r) * C * k;
                const size_t hr = (n * T + r) * C + j0;
                R acc = b[hr + i];
                for (unsigned mm = 0; mm < ku; ++mm) acc += PRN_AM(ar, i, mm) * st[cur + gb + mm];
                st[nxt + tid] = acc;
                h[hr + i] = acc; /* b[hr + i] was read by this thread alone */
            }
            __syncthreads();
        }
    }
}

/* ---- The single-pass diagonal scan: decoupled look-back ----
 * A tile is `rows` = tn * PRN_LB_ITEMS steps of cw channels of one sequence
 * (cw = C up to PRN_LB_CW, then groups of PRN_LB_CW); a block's threads are
 * (channel tc, time slice tt) pairs, tn = PRN_LB_TPB / cw slices of
 * PRN_LB_ITEMS steps each. The tiles of a (sequence, channel group) form
 * windows of tn tiles. Per tile j, a block:
 *   1. loads a and b (coalesced) into shared memory -- the only read;
 *   2. folds each slice into an affine map and scans the maps along time;
 *   3. unless it ends its window, publishes its map (flag 1) per channel;
 *   4. looks back: slice tt takes tile j-1-tt of its window (its map), the
 *      slice after those takes the window's incoming state -- published
 *      (flag 2) by the last tile of the window before, or h0 -- and the
 *      slices' maps are composed by a tree of fixed shape;
 *   5. if it ends its window, publishes its outgoing state (flag 2); writes
 *      h from shared memory.
 * Every composition is fixed by j alone, not by which tiles happened to be
 * done: results are the same bits on every run (the rule of the library),
 * unlike a look-back that stops at the first finished predecessor. The
 * price is a chain of one flag round trip per window of tn tiles.
 * Tiles are handed out by an atomic ticket, window position slowest and
 * (sequence, group) fastest, so the chains of all sequences and groups
 * advance together, and a tile waits only for tiles with lower tickets,
 * which blocks already hold: no deadlock, however the device schedules
 * blocks. Status words are read and written volatile (not cached in L1)
 * with a fence between a value and its flag; status arrays are per
 * (tile, channel), indexed by ticket: flag [tiles * cw], val
 * [tiles * cw * 2] (the map (m, o), or the state in o); the ticket and the
 * flags are zeroed before the launch. */
#define PRN_LB_TPB 256
#define PRN_LB_ITEMS 9 /* odd: a slice's column reads hit distinct shared-memory banks */
#define PRN_LB_CW 8    /* 32-byte row segments (f32); more windows in flight at large C */

/* m x + o, where a zero state stays zero whatever m is: m, a product of many
 * decays, may have overflowed, which the step-by-step recurrence never
 * forms. */
template <typename R> __device__ __forceinline__ R prn_lb_apply(R m, R x, R o) { return x == (R)0 ? o : m * x + o; }

/* Shared-memory row of the tile's row r (in the order of the recurrence).
 * A tile of one group is stored in memory order (a contiguous copy), so
 * reversed, its first nr rows are flipped; rows past nr are padding. */
__device__ __forceinline__ unsigned prn_lb_srow(unsigned r, unsigned nr, bool flip) {
    return flip && r < nr ? nr - 1 - r : r;
}

/* Phase 1 of the look-back: a and b of the tile into sa, sb, with the
 * identity (1, 0) in rows past nr and channels past w. All of a thread's
 * global loads are issued before its first shared store, so they are in
 * flight together (up to 2 x 9 x 4 bytes per thread for f32 scalars, 2 x 3
 * x 16 with vectors). No run-time division: a one-group tile (span: C <=
 * PRN_LB_CW) is a contiguous run [s0, s0 + nr C) of memory copied as it is,
 * 128-bit loads in the middle, a scalar head up to the first 16-byte
 * boundary and a scalar tail; a tile of a group of PRN_LB_CW = 8 channels
 * has rows of 8, indexed by shifts, loaded in 16-byte pieces when C is a
 * multiple of the vector (then so is w). vec: a, b and h are 16-byte
 * aligned (the host checks). */
template <typename R>
__device__ __forceinline__ void prn_lb_load(unsigned tid, bool span, int vec, int rev, size_t T, size_t C, size_t n,
                                            size_t c0, size_t t0, size_t s0, unsigned nr, unsigned w, unsigned tot,
                                            const R *a, const R *b, R *sa, R *sb) {
    typedef prn_vec<R> V;
    const unsigned NV = V::N, UV = (PRN_LB_ITEMS + V::N - 1) / V::N;
    if (span) {
        const unsigned cnt = nr * (unsigned)C;
        if (vec) {
            const unsigned hd = (unsigned)prn_min((NV - (unsigned)(s0 & (NV - 1))) & (NV - 1), cnt);
            const unsigned nv = (cnt - hd) / NV, tl = hd + nv * NV; /* NV: a power of two, a shift */
            const V *va = (const V *)(a + s0 + hd), *vb = (const V *)(b + s0 + hd);
            V xa[UV], xb[UV];
            R ya = 1, yb = 0;
            /* the head (thread tid < hd) and the tail (threads NV..): one scalar each */
            const unsigned se = tid < hd ? tid : tid >= NV && tid - NV < cnt - tl ? tl + tid - NV : ~0u;
#pragma unroll
            for (unsigned u = 0; u < UV; ++u)
                if (tid + u * PRN_LB_TPB < nv) {
                    xa[u] = va[tid + u * PRN_LB_TPB];
                    xb[u] = vb[tid + u * PRN_LB_TPB];
                }
            if (se != ~0u) {
                ya = a[s0 + se];
                yb = b[s0 + se];
            }
#pragma unroll
            for (unsigned u = 0; u < UV; ++u)
                if (tid + u * PRN_LB_TPB < nv) {
                    const unsigned e = hd + (tid + u * PRN_LB_TPB) * NV;
#pragma unroll
                    for (unsigned k = 0; k < NV; ++k) {
                        sa[e + k] = xa[u].v[k];
                        sb[e + k] = xb[u].v[k];
                    }
                }
            if (se != ~0u) {
                sa[se] = ya;
                sb[se] = yb;
            }
        } else {
            R xa[PRN_LB_ITEMS], xb[PRN_LB_ITEMS];
#pragma unroll
            for (unsigned u = 0; u < PRN_LB_ITEMS; ++u)
                if (tid + u * PRN_LB_TPB < cnt) {
                    xa[u] = a[s0 + tid + u * PRN_LB_TPB];
                    xb[u] = b[s0 + tid + u * PRN_LB_TPB];
                }
#pragma unroll
            for (unsigned u = 0; u < PRN_LB_ITEMS; ++u)
                if (tid + u * PRN_LB_TPB < cnt) {
                    sa[tid + u * PRN_LB_TPB] = xa[u];
                    sb[tid + u * PRN_LB_TPB] = xb[u];
                }
        }
        for (unsigned e = cnt + tid; e < tot; e += PRN_LB_TPB) {
            sa[e] = 1;
            sb[e] = 0;
        }
        return;
    }
    /* groups of PRN_LB_CW channels: tot = PRN_LB_TPB * PRN_LB_ITEMS */
    if (vec && C % NV == 0) {
        const unsigned VR = PRN_LB_CW / V::N; /* vectors per row */
        V xa[UV], xb[UV];
#pragma unroll
        for (unsigned u = 0; u < UV; ++u) {
            const unsigned vi = tid + u * PRN_LB_TPB, r = vi / VR, q = vi % VR * NV;
            if (vi < tot / NV && r < nr && q < w) {
                const size_t i = (n * T + PRN_ROW(t0 + r)) * C + c0 + q;
                xa[u] = *(const V *)(a + i);
                xb[u] = *(const V *)(b + i);
            }
        }
#pragma unroll
        for (unsigned u = 0; u < UV; ++u) {
            const unsigned vi = tid + u * PRN_LB_TPB, r = vi / VR, q = vi % VR * NV;
            if (vi < tot / NV) {
                const bool in = r < nr && q < w;
#pragma unroll
                for (unsigned k = 0; k < NV; ++k) {
                    sa[vi * NV + k] = in ? xa[u].v[k] : (R)1;
                    sb[vi * NV + k] = in ? xb[u].v[k] : (R)0;
                }
            }
        }
        return;
    }
    R xa[PRN_LB_ITEMS], xb[PRN_LB_ITEMS];
#pragma unroll
    for (unsigned u = 0; u < PRN_LB_ITEMS; ++u) {
        const unsigned e = tid + u * PRN_LB_TPB, r = e / PRN_LB_CW, q = e % PRN_LB_CW;
        xa[u] = 1;
        xb[u] = 0;
        if (r < nr && q < w) {
            const size_t i = (n * T + PRN_ROW(t0 + r)) * C + c0 + q;
            xa[u] = a[i];
            xb[u] = b[i];
        }
    }
#pragma unroll
    for (unsigned u = 0; u < PRN_LB_ITEMS; ++u) {
        sa[tid + u * PRN_LB_TPB] = xa[u];
        sb[tid + u * PRN_LB_TPB] = xb[u];
    }
}

/* The last phase: h from sa, in the layout of prn_lb_load; 128-bit stores
 * where it used 128-bit loads. */
template <typename R>
__device__ __forceinline__ void prn_lb_store(unsigned tid, bool span, int vec, int rev, size_t T, size_t C, size_t n,
                                             size_t c0, size_t t0, size_t s0, unsigned nr, unsigned w, const R *sa,
                                             R *h) {
    typedef prn_vec<R> V;
    const unsigned NV = V::N, UV = (PRN_LB_ITEMS + V::N - 1) / V::N;
    if (span) {
        const unsigned cnt = nr * (unsigned)C;
        if (vec) {
            const unsigned hd = (unsigned)prn_min((NV - (unsigned)(s0 & (NV - 1))) & (NV - 1), cnt);
            const unsigned nv = (cnt - hd) / NV, tl = hd + nv * NV;
            V *vh = (V *)(h + s0 + hd);
            const unsigned se = tid < hd ? tid : tid >= NV && tid - NV < cnt - tl ? tl + tid - NV : ~0u;
#pragma unroll
            for (unsigned u = 0; u < UV; ++u)
                if (tid + u * PRN_LB_TPB < nv) {
                    const unsigned e = hd + (tid + u * PRN_LB_TPB) * NV;
                    V x;
#pragma unroll
                    for (unsigned k = 0; k < NV; ++k) x.v[k] = sa[e + k];
                    vh[tid + u * PRN_LB_TPB] = x;
                }
            if (se != ~0u) h[s0 + se] = sa[se];
        } else {
#pragma unroll
            for (unsigned u = 0; u < PRN_LB_ITEMS; ++u)
                if (tid + u * PRN_LB_TPB < cnt) h[s0 + tid + u * PRN_LB_TPB] = sa[tid + u * PRN_LB_TPB];
        }
        return;
    }
    if (vec && C % NV == 0) {
        const unsigned VR = PRN_LB_CW / V::N;
#pragma unroll
        for (unsigned u = 0; u < UV; ++u) {
            const unsigned vi = tid + u * PRN_LB_TPB, r = vi / VR, q = vi % VR * NV;
            if (vi < PRN_LB_TPB * PRN_LB_ITEMS / NV && r < nr && q < w) {
                V x;
#pragma unroll
                for (unsigned k = 0; k < NV; ++k) x.v[k] = sa[vi * NV + k];
                *(V *)(h + (n * T + PRN_ROW(t0 + r)) * C + c0 + q) = x;
            }
        }
        return;
    }
#pragma unroll
    for (unsigned u = 0; u < PRN_LB_ITEMS; ++u) {
        const unsigned e = tid + u * PRN_LB_TPB, r = e / PRN_LB_CW, q = e % PRN_LB_CW;
        if (r < nr && q < w) h[(n * T + PRN_ROW(t0 + r)) * C + c0 + q] = sa[e];
    }
}

/* MODE: 2 = a tile is one run of memory (C <= PRN_LB_CW), 1 = 128-bit
 * accesses; each combination is a kernel of its own, so that registers are
 * allocated for its one load path (one kernel with all four spilled). */
template <typename R, int MODE>
/* f32: <= 64 registers, room for 4 blocks per SM; f64: its 40 KB of shared
 * memory fit 2 to 5 blocks, and its loads in flight need more registers */
__global__ void __launch_bounds__(PRN_LB_TPB, sizeof(R) == 4 ? 4 : 2)
    k_scan_diag_lookback(size_t batch, size_t T, size_t C, size_t cw, size_t ng, size_t nt, int rev,
                         const R *__restrict__ a, const R *b, const R *h0, R *h, unsigned *ticket,
                         unsigned *flag, R *val) {
    __shared__ R sa[PRN_LB_TPB * PRN_LB_ITEMS], sb[PRN_LB_TPB * PRN_LB_ITEMS];
    __shared__ R sm[PRN_LB_TPB], so[PRN_LB_TPB];
    __shared__ size_t s_tile;
    /* indices inside a tile in 32 bits: fewer registers */
    const unsigned tid = threadIdx.x, cu = (unsigned)cw, tn = PRN_LB_TPB / cu, tc = tid % cu, tt = tid / cu;
    const unsigned rows = tn * PRN_LB_ITEMS;
    const size_t chains = batch * ng, tiles = chains * nt;
    const bool act = tt < tn; /* threads past tn * cw only meet the barriers */
    volatile unsigned *vf = flag;
    volatile R *vval = val;
    for (;;) {
        if (tid == 0) s_tile = atomicAdd(ticket, 1u);
        __syncthreads();
        const size_t v = s_tile;
        if (v >= tiles) break;
        const size_t j = v / chains, n = v % chains / ng, g = v % ng;
        const size_t c0 = g * cw, t0 = j * rows;
        const unsigned w = (unsigned)prn_min(cw, C - c0), nr = (unsigned)prn_min(rows, T - t0);
        const unsigned jw = (unsigned)(j % tn); /* position in the window */
        const bool last = jw == tn - 1;
        /* 1. load a and b into shared memory: every load of the thread is
         * issued before its first store, 128-bit where aligned (lb_load) */
        const bool span = (MODE & 2) != 0; /* one group: the tile is one run of memory */
        const int vec = MODE & 1;
        const size_t s0 = span ? (n * T + (rev ? T - t0 - nr : t0)) * C : 0;
        prn_lb_load<R>(tid, span, vec, rev, T, C, n, c0, t0, s0, nr, w, rows * cu, a, b, sa, sb);
        __syncthreads();
        /* 2. fold the slice into h -> m h + o, then scan the slices' maps */
        R m = 1, o = 0;
        if (act)
            for (unsigned i = 0; i < PRN_LB_ITEMS; ++i) {
                const unsigned e = prn_lb_srow(tt * PRN_LB_ITEMS + i, nr, span && rev) * cu + tc;
                o = sa[e] * o + sb[e];
                m *= sa[e];
            }
        sm[tid] = m;
        so[tid] = o;
        __syncthreads();
        for (unsigned d = 1; d < tn; d <<= 1) {
            const bool take = act && tt >= d;
            R pm = 1, po = 0;
            if (take) {
                pm = sm[tid - d * cu];
                po = so[tid - d * cu];
            }
            __syncthreads();
            if (take) { /* the earlier slices' map, then this one's */
                o = prn_lb_apply(m, po, o);
                m *= pm;
                sm[tid] = m;
                so[tid] = o;
            }
            __syncthreads();
        }
        /* the map of the slices before this one (identity for tt = 0), and the tile's */
        const R pm = act && tt ? sm[tid - cu] : (R)1, po = act && tt ? so[tid - cu] : (R)0;
        const R tm = tid < cu ? sm[(tn - 1) * cu + tid] : (R)1, to = tid < cu ? so[(tn - 1) * cu + tid] : (R)0;
        /* 3. publish the tile's map for the later tiles of its window */
        if (tid < cu && !last) {
            const size_t si = v * cw + tid;
            vval[2 * si] = tm;
            vval[2 * si + 1] = to;
            __threadfence();
            vf[si] = 1;
        }
        __syncthreads(); /* sm, so are free again */
        /* 4. slice tt < jw: the map of tile j-1-tt; slice jw: the window's
         * incoming state, as a constant map (m = 0); later slices: identity */
        R wm = 1, wo = 0;
        if (act && tt < jw) {
            const size_t si = (v - (size_t)(tt + 1) * chains) * cw + tc;
            while (vf[si] == 0) __nanosleep(64);
            __threadfence();
            wm = vval[2 * si];
            wo = vval[2 * si + 1];
        } else if (act && tt == jw) {
            wm = 0;
            if (j == jw) { /* the first window */
                wo = h0 && tc < w ? h0[n * C + c0 + tc] : (R)0;
            } else {
                const size_t si = (v - (size_t)(jw + 1) * chains) * cw + tc;
                while (vf[si] == 0) __nanosleep(64);
                __threadfence();
                wo = vval[2 * si + 1];
            }
        }
        sm[tid] = wm;
        so[tid] = wo;
        __syncthreads();
        /* newest (tt = 0) after all older ones, in a tree of fixed shape */
        for (unsigned d = 1; d < tn; d <<= 1) {
            if (act && tt % (2 * d) == 0 && tt + d < tn) {
                const R om = sm[tid + d * cu], oo = so[tid + d * cu];
                so[tid] = prn_lb_apply(sm[tid], oo, so[tid]);
                sm[tid] *= om;
            }
            __syncthreads();
        }
        /* so[tc] (row tt = 0) is now the tile's incoming state */
        /* 5. the window's last tile passes its outgoing state on */
        if (tid < cu && last) {
            const size_t si = v * cw + tid;
            vval[2 * si + 1] = prn_lb_apply(tm, so[tid], to);
            __threadfence();
            vf[si] = 2;
        }
        if (act) {
            R x = prn_lb_apply(pm, so[tc], po);
            for (unsigned i = 0; i < PRN_LB_ITEMS; ++i) {
                const unsigned e = prn_lb_srow(tt * PRN_LB_ITEMS + i, nr, span && rev) * cu + tc;
                x = sa[e] * x + sb[e];
                sa[e] = x;
            }
        }
        __syncthreads();
        prn_lb_store<R>(tid, span, vec, rev, T, C, n, c0, t0, s0, nr, w, sa, h);
        __syncthreads(); /* shared memory is the next tile's */
    }
}


extern "C" int prn_cu_scan_diag_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t L, size_t nm,
                                     int rev, const void *a, const void *b, void *m, void *o) {
    size_t n = batch * nm * C;
    if (n == 0) return 0;
    if (f64)
        k_scan_diag_fold<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(batch, T, C, L, nm, rev, (const double *)a,
                                                                          (const double *)b, (double *)m, (double *)o);
    else
        k_scan_diag_fold<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(batch, T, C, L, nm, rev, (const float *)a,
                                                                         (const float *)b, (float *)m, (float *)o);
    return prn_launched();
}

extern "C" int prn_cu_scan_diag_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t L,
                                       size_t nch, int rev, const void *a, const void *b, const void *h0,
                                       const void *carry, void *h) {
    size_t n = batch * nch * C;
    if (n == 0) return 0;
    if (f64)
        k_scan_diag_expand<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(
            batch, T, C, L, nch, rev, (const double *)a, (const double *)b, (const double *)h0, (const double *)carry,
            (double *)h);
    else
        k_scan_diag_expand<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(batch, T, C, L, nch, rev, (const float *)a,
                                                                           (const float *)b, (const float *)h0,
                                                                           (const float *)carry, (float *)h);
    return prn_launched();
}

template <typename R, int KB>
static void prn_block_fold_launch(cudaStream_t s, size_t n, size_t batch, size_t T, size_t C, size_t k, size_t L,
                                  size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v) {
    k_scan_block_fold<R, KB><<<prn_grid(n, PRN_FOLD_TPB(KB)), PRN_FOLD_TPB(KB), 0, s>>>(
        batch, T, C, k, L, nm, rev, tr, (const R *)a, (const R *)b, (R *)M, (R *)v);
}
template <typename R>
static void prn_block_fold_kb(cudaStream_t s, size_t n, size_t batch, size_t T, size_t C, size_t k, size_t L,
                              size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v) {
    if (k <= 1) prn_block_fold_launch<R, 1>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else if (k <= 2) prn_block_fold_launch<R, 2>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else if (k <= 4) prn_block_fold_launch<R, 4>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else if (k <= 8) prn_block_fold_launch<R, 8>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else if (k <= 16) prn_block_fold_launch<R, 16>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else if (k <= 32) prn_block_fold_launch<R, 32>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else prn_block_fold_launch<R, 64>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
}

extern "C" int prn_cu_scan_block_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k, size_t L,
                                      size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t n = batch * nm * (C / k) * (k + 1);
    if (n == 0) return 0;
    if (f64) prn_block_fold_kb<double>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    else prn_block_fold_kb<float>(s, n, batch, T, C, k, L, nm, rev, tr, a, b, M, v);
    return prn_launched();
}

extern "C" int prn_cu_scan_block_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k,
                                        size_t L, size_t nch, int rev, int tr, const void *a, const void *b,
                                        const void *h0, const void *carry, void *h) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t units = batch * nch * (C / k);
    if (units == 0) return 0;
    const unsigned grid = prn_grid(units, PRN_EXPAND_TPB / k); /* groups of k threads */
    if (f64)
        k_scan_block_expand<double><<<grid, PRN_EXPAND_TPB, 0, s>>>(batch, T, C, k, L, nch, rev, tr, (const double *)a,
                                                                    (const double *)b, (const double *)h0,
                                                                    (const double *)carry, (double *)h);
    else
        k_scan_block_expand<float><<<grid, PRN_EXPAND_TPB, 0, s>>>(batch, T, C, k, L, nch, rev, tr, (const float *)a,
                                                                   (const float *)b, (const float *)h0,
                                                                   (const float *)carry, (float *)h);
    return prn_launched();
}

template <typename R, int MODE>
static void prn_lb_launch1(unsigned grid, cudaStream_t s, size_t batch, size_t T, size_t C, size_t cw, size_t ng,
                           size_t nt, int rev, const void *a, const void *b, const void *h0, void *h,
                           unsigned *ticket, unsigned *flag, void *val) {
    k_scan_diag_lookback<R, MODE><<<grid, PRN_LB_TPB, 0, s>>>(batch, T, C, cw, ng, nt, rev, (const R *)a, (const R *)b,
                                                              (const R *)h0, (R *)h, ticket, flag, (R *)val);
}
template <typename R>
static void prn_lb_launch(int mode, unsigned grid, cudaStream_t s, size_t batch, size_t T, size_t C, size_t cw,
                          size_t ng, size_t nt, int rev, const void *a, const void *b, const void *h0, void *h,
                          unsigned *ticket, unsigned *flag, void *val) {
    if (mode == 3) prn_lb_launch1<R, 3>(grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
    else if (mode == 2) prn_lb_launch1<R, 2>(grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
    else if (mode == 1) prn_lb_launch1<R, 1>(grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
    else prn_lb_launch1<R, 0>(grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
}

/* Geometry of the look-back scan: channels per tile, groups, tiles per
 * chain, the bytes of the ticket and flags (zeroed before the launch; the
 * values follow them), and the bytes of all its status -- 0 when the tiles
 * would not fit the 32-bit ticket. batch, T, C > 0. */
static size_t prn_lb_geometry(int f64, size_t batch, size_t T, size_t C, size_t *cw, size_t *ng, size_t *nt,
                              size_t *zeroed) {
    const size_t es = f64 ? 8 : 4;
    *cw = C < PRN_LB_CW ? C : PRN_LB_CW;
    *ng = prn_cdiv(C, *cw);
    *nt = prn_cdiv(T, PRN_LB_TPB / *cw * PRN_LB_ITEMS);
    const size_t tiles = batch * *ng * *nt, words = tiles * *cw;
    *zeroed = 256 + prn_cdiv(words * 4, 256) * 256;
    if (tiles >= ((size_t)1 << 31)) return 0;
    return *zeroed + words * 2 * es;
}

extern "C" size_t prn_cu_scan_diag_lookback_bytes(int f64, size_t batch, size_t T, size_t C) {
    size_t cw, ng, nt, zeroed;
    return batch && T && C ? prn_lb_geometry(f64, batch, T, C, &cw, &ng, &nt, &zeroed) : 0;
}

/* Does the look-back pay for this shape? Each (sequence, channel group)
 * is a chain: window w + 1 of it starts its composition only when window
 * w has published its outgoing state, one round trip of poll, fence, tree
 * and publish per window -- about 2-4 us on an A100/H100. A chain thus
 * moves at most W bytes (a window's tiles: a and b read, h written) per
 * round trip, and all chains together about chains x W / latency. The
 * chunked scan moves 5/3 of the bytes (a and b read twice), so it reaches
 * about 0.6 of the copy bandwidth wherever it is bandwidth bound. The
 * look-back wins where chains x W / latency >= 0.6 x bandwidth, i.e.
 * chains x W >= PRN_LB_PAYS_BYTES = 0.6 x 3.35 TB/s (H100 SXM) x 3 us,
 * about 6 MB. A chain of one window has no hop: always the look-back.
 * f32 examples: C = 1 (W = 7 MB): look-back from one sequence; C = 8
 * (W = 0.9 MB): from 7 sequences; C >= 64: 8 groups, from one sequence. */
#define PRN_LB_PAYS_BYTES ((size_t)6000000)
extern "C" int prn_cu_scan_diag_lookback_pays(int f64, size_t batch, size_t T, size_t C) {
    size_t cw, ng, nt, zeroed;
    if (!batch || !T || !C || !prn_lb_geometry(f64, batch, T, C, &cw, &ng, &nt, &zeroed)) return 0;
    const size_t tn = PRN_LB_TPB / cw, rows = tn * PRN_LB_ITEMS;
    if (nt <= tn) return 1; /* one window */
    const size_t window = tn * rows * cw * 3 * (f64 ? 8 : 4);
    return batch * ng * window >= PRN_LB_PAYS_BYTES;
}

/* scratch: prn_cu_scan_diag_lookback_bytes of device memory */
extern "C" int prn_cu_scan_diag_lookback(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, int rev,
                                         const void *a, const void *b, const void *h0, void *h, void *scratch) {
    size_t cw, ng, nt, zeroed;
    if (!batch || !T || !C) return 0;
    if (!prn_lb_geometry(f64, batch, T, C, &cw, &ng, &nt, &zeroed)) return (int)cudaErrorInvalidValue;
    char *base = (char *)scratch;
    unsigned *ticket = (unsigned *)base, *flag = (unsigned *)(base + 256);
    void *val = base + zeroed;
    cudaError_t e = cudaMemsetAsync(base, 0, zeroed, s);
    if (e != cudaSuccess) return (int)e;
    const unsigned grid = (unsigned)prn_min(batch * ng * nt, PRN_MAX_GRID);
    /* 128-bit accesses need a, b and h at 16-byte boundaries (device
     * allocations are; views into them may not be), and for groups of
     * channels, rows of whole vectors */
    const int span = C <= PRN_LB_CW;
    const int vec = (((uintptr_t)a | (uintptr_t)b | (uintptr_t)h) & 15) == 0 && (span || C % (f64 ? 2 : 4) == 0);
    const int mode = span * 2 + vec;
    if (f64)
        prn_lb_launch<double>(mode, grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
    else
        prn_lb_launch<float>(mode, grid, s, batch, T, C, cw, ng, nt, rev, a, b, h0, h, ticket, flag, val);
    return prn_launched();
}
