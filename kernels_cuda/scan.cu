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

/* Column q of [M | v] of chunk j of block jb of sequence n: x = e_q (q < k)
 * or 0 (q == k, plus b at each step). M: [batch, nm, C, k] with row j0+i
 * holding row i of the chunk's matrix (the layout of a, untransposed);
 * v: [batch, nm, C]. */
template <typename R>
__global__ void k_scan_block_fold(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nm, int rev, int tr,
                                  const R *__restrict__ a, const R *__restrict__ b, R *M, R *v) {
    const size_t nblk = C / k;
    PRN_FOR(g, batch * nm * nblk * (k + 1)) {
        const size_t q = g % (k + 1), u = g / (k + 1);
        const size_t jb = u % nblk, j = u / nblk % nm, n = u / nblk / nm, j0 = jb * k;
        const size_t t1 = prn_min((j + 1) * L, T);
        R x[PRN_KMAX], nx[PRN_KMAX];
        for (size_t i = 0; i < k; ++i) x[i] = (R)(i == q);
        for (size_t t = j * L; t < t1; ++t) {
            const size_t r = PRN_ROW(t);
            const R *ar = a + (n * T + r) * C * k, *br = b + (n * T + r) * C + j0;
            for (size_t i = 0; i < k; ++i) {
                R acc = q == k ? br[i] : (R)0;
                for (size_t mm = 0; mm < k; ++mm) acc += PRN_AM(ar, i, mm) * x[mm];
                nx[i] = acc;
            }
            for (size_t i = 0; i < k; ++i) x[i] = nx[i];
        }
        const size_t row = (n * nm + j) * C + j0;
        if (q < k)
            for (size_t i = 0; i < k; ++i) M[(row + i) * k + q] = x[i];
        else
            for (size_t i = 0; i < k; ++i) v[row + i] = x[i];
    }
}

/* carry: [batch, nch-1, C] (NULL when nch == 1); h0: [batch, C] or NULL. */
template <typename R>
__global__ void k_scan_block_expand(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nch, int rev,
                                    int tr, const R *a, const R *b, const R *h0, const R *carry, R *h) {
    const size_t nblk = C / k;
    PRN_FOR(g, batch * nch * nblk) {
        const size_t jb = g % nblk, j = g / nblk % nch, n = g / nblk / nch, j0 = jb * k;
        const size_t t1 = prn_min((j + 1) * L, T);
        const R *init = j ? carry + (n * (nch - 1) + j - 1) * C + j0 : h0 ? h0 + n * C + j0 : NULL;
        R st[PRN_KMAX], nx[PRN_KMAX];
        for (size_t i = 0; i < k; ++i) st[i] = init ? init[i] : (R)0;
        for (size_t t = j * L; t < t1; ++t) {
            const size_t r = PRN_ROW(t);
            const R *ar = a + (n * T + r) * C * k;
            const size_t hr = (n * T + r) * C + j0;
            for (size_t i = 0; i < k; ++i) {
                R acc = b[hr + i];
                for (size_t mm = 0; mm < k; ++mm) acc += PRN_AM(ar, i, mm) * st[mm];
                nx[i] = acc;
            }
            /* all of this block's b row is read before h (maybe b) is written */
            for (size_t i = 0; i < k; ++i) {
                st[i] = nx[i];
                h[hr + i] = nx[i];
            }
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

template <typename R>
__global__ void __launch_bounds__(PRN_LB_TPB, 4) /* <= 64 registers: registers leave room for 4 blocks per SM */
    k_scan_diag_lookback(size_t batch, size_t T, size_t C, size_t cw, size_t ng, size_t nt, int rev,
                         const R *__restrict__ a, const R *b, const R *h0, R *h, unsigned *ticket, unsigned *flag,
                         R *val) {
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
        /* 1. load (a fixed count per thread: the loads unroll and overlap);
         * steps past T and channels past C are the identity */
#pragma unroll
        for (unsigned u = 0; u < PRN_LB_ITEMS; ++u) {
            const unsigned e = tid + u * PRN_LB_TPB, r = e / cu, q = e % cu;
            if (e >= rows * cu) break;
            if (r < nr && q < w) {
                const size_t i = (n * T + PRN_ROW(t0 + r)) * C + c0 + q;
                sa[e] = a[i];
                sb[e] = b[i];
            } else {
                sa[e] = 1;
                sb[e] = 0;
            }
        }
        __syncthreads();
        /* 2. fold the slice into h -> m h + o, then scan the slices' maps */
        R m = 1, o = 0;
        if (act)
            for (unsigned i = 0; i < PRN_LB_ITEMS; ++i) {
                const unsigned e = (tt * PRN_LB_ITEMS + i) * cu + tc;
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
                const unsigned e = (tt * PRN_LB_ITEMS + i) * cu + tc;
                x = sa[e] * x + sb[e];
                sa[e] = x;
            }
        }
        __syncthreads();
#pragma unroll
        for (unsigned u = 0; u < PRN_LB_ITEMS; ++u) {
            const unsigned e = tid + u * PRN_LB_TPB, r = e / cu, q = e % cu;
            if (e >= rows * cu) break;
            if (r < nr && q < w) h[(n * T + PRN_ROW(t0 + r)) * C + c0 + q] = sa[e];
        }
        __syncthreads(); /* shared memory is the next tile's */
    }
}

/* Block scans keep k-vectors per thread: smaller blocks leave more
 * registers and local memory per multiprocessor. */
#define PRN_TPB_BLOCK 128

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

extern "C" int prn_cu_scan_block_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k, size_t L,
                                      size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t n = batch * nm * (C / k) * (k + 1);
    if (n == 0) return 0;
    if (f64)
        k_scan_block_fold<double><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nm, rev, tr, (const double *)a, (const double *)b, (double *)M, (double *)v);
    else
        k_scan_block_fold<float><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nm, rev, tr, (const float *)a, (const float *)b, (float *)M, (float *)v);
    return prn_launched();
}

extern "C" int prn_cu_scan_block_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k,
                                        size_t L, size_t nch, int rev, int tr, const void *a, const void *b,
                                        const void *h0, const void *carry, void *h) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t n = batch * nch * (C / k);
    if (n == 0) return 0;
    if (f64)
        k_scan_block_expand<double><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nch, rev, tr, (const double *)a, (const double *)b, (const double *)h0,
            (const double *)carry, (double *)h);
    else
        k_scan_block_expand<float><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nch, rev, tr, (const float *)a, (const float *)b, (const float *)h0,
            (const float *)carry, (float *)h);
    return prn_launched();
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
    if (f64)
        k_scan_diag_lookback<double><<<grid, PRN_LB_TPB, 0, s>>>(batch, T, C, cw, ng, nt, rev, (const double *)a,
                                                                 (const double *)b, (const double *)h0, (double *)h,
                                                                 ticket, flag, (double *)val);
    else
        k_scan_diag_lookback<float><<<grid, PRN_LB_TPB, 0, s>>>(batch, T, C, cw, ng, nt, rev, (const float *)a,
                                                                (const float *)b, (const float *)h0, (float *)h,
                                                                ticket, flag, (float *)val);
    return prn_launched();
}
