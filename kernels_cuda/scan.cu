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
 * a and b are read once and h written once: 12 bytes per element for f32,
 * the same traffic as a copy of 1.5 arrays, so the scan can run at the
 * memory roof if enough bytes are in flight and no tile waits long.
 *
 * Tiles. A tile is `rows` steps of cw channels of one sequence: up to 32
 * bytes of channels (8 in f32, 4 in f64), whole rows (one contiguous run
 * of memory); beyond, a group of that many channels (row pieces of 32
 * bytes, a memory sector; the groups of a row range are consecutive
 * tickets, so they are read at about the same time). The block's 256
 * threads are (channel tc, slice tt) pairs, tc < cwp (cw rounded up to a
 * power of two), tn = 256 / cwp slices of ITEMS steps each (ITEMS odd: a
 * slice's column reads hit distinct shared-memory banks). A (sequence, group) is a chain of nt
 * tiles, tile i holding steps [i rows, (i+1) rows).
 *
 * Per tile, a block
 *   1. copies a and b into shared memory with cp.async (all of a thread's
 *      copies in flight at once, 16-byte pieces where aligned; no
 *      registers held), then takes its next ticket while they land;
 *   2. folds each slice into an affine map h -> m h + o, scans the slices'
 *      maps (a raking scan in groups of 16 slices) and PUBLISHES the tile's
 *      aggregate A_i = (m, o) per channel at once -- before any waiting;
 *   3. looks back: its incoming state is
 *          P_i = M_i(I_{i-D}),  M_i = A_{i-1} o ... o A_{i-D+1},
 *      where I_{i-D} is the inclusive (outgoing) state of the tile D
 *      places back in its chain (h0 for i < D, with M_i composing tiles
 *      0..i-1). The block's threads read the D-1 aggregates at once (a
 *      slice takes up to KPMAX consecutive ones), compose them in a
 *      tree of fixed shape, and only then need I_{i-D};
 *   4. PUBLISHES its inclusive state I_i = A_i(P_i), then runs its slices
 *      from P_i and writes h (16-byte stores where aligned).
 * So no tile waits on a chain of predecessors' look-backs: the aggregates
 * it reads are published by tiles right after their own loads, and the
 * one state it needs was made D tiles earlier. The states form D
 * interleaved chains, each hop one L2 round trip (poll, one multiply-add,
 * store): D x (tiles of all chains side by side) x tile bytes must cover
 * the bytes the device moves in a hop, about PRN_LB_HOP_BYTES (8 MB: 4
 * TB/s for 2 us), which sets D from the shape alone.
 *
 * Determinism: which values a tile combines, and the order and tree shape
 * of every combination, are functions of (shape, i) alone -- never of
 * which tiles happen to be done -- so every run gives the same bits (the
 * library's rule; a classic look-back that stops at the first finished
 * predecessor does not).
 *
 * Waiting and order. Tiles are handed out by an atomic ticket in launch
 * order, chain fastest (the chains of all sequences and groups advance
 * together); a tile waits only for tiles with lower tickets, taken by
 * blocks that are running or done -- a block holds at most its current
 * tile and its next ticket, which is higher -- so the lowest unfinished
 * tile can always proceed: no deadlock, however blocks are scheduled. The
 * status words are written once: the ticket and the words start as all
 * ones (one memset), a value is stored with its NaNs made canonical, so
 * "all ones" means "not yet" and a reader polls the value itself (volatile
 * loads that bypass L1). A value is the whole message -- nothing else is
 * read through it -- so no fence is needed; (m, o) pairs are checked half
 * by half, so a torn read only means one more poll. */
#define PRN_LB_TPB 256
/* channels of a group: 32 bytes of a row (a memory sector), 8 in f32, 4 in
 * f64; up to that, a tile holds whole rows */
#define PRN_LB_CW(R) ((unsigned)(32 / sizeof(R)))
#define PRN_LB_K 16    /* slices per raking group */
#define PRN_LB_NG (PRN_LB_TPB / PRN_LB_K)
#define PRN_LB_XS (PRN_LB_TPB + PRN_LB_NG) /* slice maps, one pad entry per raking group */
#define PRN_LB_HOP_BYTES ((size_t)8000000)

/* Per element type: the steps a thread folds (odd), the blocks per SM the
 * registers are bounded for (f32: 6 x 36 KB of shared memory fit an H100,
 * f64: 5 x 38 KB), the look-back terms a slice reads at most (registers),
 * and the status words' integer type. */
template <typename R> struct prn_lb;
template <> struct prn_lb<float> {
    typedef unsigned U;
    enum { ITEMS = 15, BPS = 6, KPMAX = 8 };
    static __device__ __forceinline__ U canon(float x) {
        union { float f; U u; } v;
        v.f = x;
        return x != x ? 0x7fc00000u : v.u;
    }
    static __device__ __forceinline__ float val(U u) {
        union { float f; U u; } v;
        v.u = u;
        return v.f;
    }
    /* the (m, o) pair at p: one 64-bit access */
    static __device__ __forceinline__ void put2(U *p, float m, float o) {
        *(volatile unsigned long long *)p = (unsigned long long)canon(o) << 32 | canon(m);
    }
    static __device__ __forceinline__ void get2(const U *p, U &m, U &o) {
        const unsigned long long x = *(const volatile unsigned long long *)p;
        m = (U)x;
        o = (U)(x >> 32);
    }
};
template <> struct prn_lb<double> {
    typedef unsigned long long U;
    enum { ITEMS = 7, BPS = 4, KPMAX = 8 };
    static __device__ __forceinline__ U canon(double x) {
        union { double f; U u; } v;
        v.f = x;
        return x != x ? 0x7ff8000000000000ull : v.u;
    }
    static __device__ __forceinline__ double val(U u) {
        union { double f; U u; } v;
        v.u = u;
        return v.f;
    }
    static __device__ __forceinline__ void put2(U *p, double m, double o) {
        ((volatile U *)p)[0] = canon(m);
        ((volatile U *)p)[1] = canon(o);
    }
    static __device__ __forceinline__ void get2(const U *p, U &m, U &o) {
        m = ((const volatile U *)p)[0];
        o = ((const volatile U *)p)[1];
    }
};

/* m x + o, where a zero state stays zero whatever m is: m, a product of many
 * decays, may have overflowed, which the step-by-step recurrence never
 * forms. */
template <typename R> __device__ __forceinline__ R prn_lb_apply(R m, R x, R o) { return x == (R)0 ? o : m * x + o; }
/* (cm, co) followed by (m, o) */
template <typename R> __device__ __forceinline__ void prn_lb_then(R &cm, R &co, R m, R o) {
    co = prn_lb_apply(m, co, o);
    cm *= m;
}

/* Shared-memory row of the tile's row r (in the order of the recurrence).
 * A whole-rows tile is stored in memory order (a contiguous copy), so
 * reversed, its first nr rows are flipped; rows past nr are padding. */
__device__ __forceinline__ unsigned prn_lb_srow(unsigned r, unsigned nr, bool flip) {
    return flip && r < nr ? nr - 1 - r : r;
}
/* Slot of slice s, channel tc in the slice-map arrays: one pad entry per
 * group of PRN_LB_K slices, so the raking threads hit distinct banks. */
__device__ __forceinline__ unsigned prn_lb_xi(unsigned s, unsigned tc, unsigned cwl) {
    return ((s + s / PRN_LB_K) << cwl) + tc;
}

/* Phase 1: a and b of the tile into sa, sb, with the identity (1, 0) in
 * rows past nr and channels past w; cp.async, nothing waited for here.
 * Whole rows (span): the run [s0, s0 + nr C) of memory, element e at
 * sa[sh + e] with sh = s0 mod the vector, so that 16-byte boundaries of
 * memory and of shared memory coincide: 16-byte pieces in the middle,
 * single elements at the ends. Groups: row r at sa[8 r], 16-byte pieces
 * when C is a multiple of the vector (then so is w). vec: a, b and h are
 * 16-byte aligned (the host checks). */
template <typename R>
__device__ __forceinline__ void prn_lb_load(unsigned tid, bool span, int vec, unsigned C, ptrdiff_t ds, unsigned sh,
                                            unsigned nr, unsigned w, unsigned rows, const R *a, const R *b, R *sa,
                                            R *sb) {
    enum { NV = prn_vec<R>::N, VR = PRN_LB_CW(R) / prn_vec<R>::N };
    if (span) {
        const unsigned cnt = nr * C, tot = rows * C;
        if (vec) {
            const unsigned hd = (unsigned)prn_min((NV - sh) & (NV - 1), cnt);
            const unsigned nv = (cnt - hd) / NV, tl = hd + nv * NV, ns = hd + cnt - tl;
            for (unsigned j = tid; j < nv; j += PRN_LB_TPB) {
                const unsigned e = hd + j * NV;
                prn_cp16(sa + sh + e, a + e);
                prn_cp16(sb + sh + e, b + e);
            }
            if (tid < ns) { /* the head (< hd) and the tail (>= tl): one element a thread */
                const unsigned e = tid < hd ? tid : tl + tid - hd;
                prn_cp1(sa + sh + e, a + e);
                prn_cp1(sb + sh + e, b + e);
            }
        } else {
            for (unsigned e = tid; e < cnt; e += PRN_LB_TPB) {
                prn_cp1(sa + e, a + e);
                prn_cp1(sb + e, b + e);
            }
        }
        for (unsigned e = cnt + tid; e < tot; e += PRN_LB_TPB) {
            sa[sh + e] = 1;
            sb[sh + e] = 0;
        }
        return;
    }
    const unsigned tot = rows * PRN_LB_CW(R);
    if (vec) {
        for (unsigned j = tid; j < tot / NV; j += PRN_LB_TPB) {
            const unsigned r = j / VR, q = j % VR * NV, e = j * NV;
            if (r < nr && q < w) {
                const ptrdiff_t g = (ptrdiff_t)r * ds + q;
                prn_cp16(sa + e, a + g);
                prn_cp16(sb + e, b + g);
            } else {
                for (unsigned k = 0; k < NV; ++k) {
                    sa[e + k] = 1;
                    sb[e + k] = 0;
                }
            }
        }
        return;
    }
    for (unsigned e = tid; e < tot; e += PRN_LB_TPB) {
        const unsigned r = e / PRN_LB_CW(R), q = e % PRN_LB_CW(R);
        if (r < nr && q < w) {
            const ptrdiff_t g = (ptrdiff_t)r * ds + q;
            prn_cp1(sa + e, a + g);
            prn_cp1(sb + e, b + g);
        } else {
            sa[e] = 1;
            sb[e] = 0;
        }
    }
}

/* The last phase: h from sa, in the layout of prn_lb_load; 16-byte stores
 * where it made 16-byte copies. */
template <typename R>
__device__ __forceinline__ void prn_lb_store(unsigned tid, bool span, int vec, unsigned C, ptrdiff_t ds, unsigned sh,
                                             unsigned nr, unsigned w, const R *sa, R *h) {
    typedef prn_vec<R> V;
    enum { NV = V::N, VR = PRN_LB_CW(R) / V::N };
    if (span) {
        const unsigned cnt = nr * C;
        if (vec) {
            const unsigned hd = (unsigned)prn_min((NV - sh) & (NV - 1), cnt);
            const unsigned nv = (cnt - hd) / NV, tl = hd + nv * NV, ns = hd + cnt - tl;
            for (unsigned j = tid; j < nv; j += PRN_LB_TPB) {
                const unsigned e = hd + j * NV;
                *(V *)(h + e) = *(const V *)(sa + sh + e);
            }
            if (tid < ns) {
                const unsigned e = tid < hd ? tid : tl + tid - hd;
                h[e] = sa[sh + e];
            }
        } else {
            for (unsigned e = tid; e < cnt; e += PRN_LB_TPB) h[e] = sa[e];
        }
        return;
    }
    if (vec) {
        for (unsigned j = tid; j < nr * VR; j += PRN_LB_TPB) {
            const unsigned r = j / VR, q = j % VR * NV;
            if (q < w) *(V *)(h + (ptrdiff_t)r * ds + q) = *(const V *)(sa + j * NV);
        }
        return;
    }
    for (unsigned e = tid; e < nr * PRN_LB_CW(R); e += PRN_LB_TPB) {
        const unsigned r = e / PRN_LB_CW(R), q = e % PRN_LB_CW(R);
        if (q < w) h[(ptrdiff_t)r * ds + q] = sa[e];
    }
}

/* The first level of the raking scan over the tn slices of each channel:
 * thread g * cwp + tc (16 threads) composes slices [16 g, 16 g + 16) of
 * channel tc in order into (ym, yo)[g * cwp + tc]; INCL: also leaves each
 * slice's map composed with those before it in its group, in place. */
template <typename R, bool INCL>
__device__ __forceinline__ void prn_lb_rake(unsigned tid, unsigned cwl, R *pm, R *po, R *ym, R *yo) {
    if (tid < PRN_LB_NG) {
        const unsigned tc = tid & ((1u << cwl) - 1), g = tid >> cwl;
        R cm = 1, co = 0;
#pragma unroll
        for (unsigned j = 0; j < PRN_LB_K; ++j) {
            const unsigned x = prn_lb_xi(g * PRN_LB_K + j, tc, cwl);
            prn_lb_then(cm, co, pm[x], po[x]);
            if (INCL) {
                pm[x] = cm;
                po[x] = co;
            }
        }
        ym[tid] = cm;
        yo[tid] = co;
    }
}

/* MODE: 2 = a tile holds whole rows (C <= PRN_LB_CW), 1 = 16-byte copies
 * and stores; each combination is a kernel of its own (registers for one
 * load path). cwl = log2 cwp; status: agg [tiles * cw] (m, o) pairs and
 * inc [tiles * cw] states, by ticket and channel; ticket and status all
 * ones before the launch. */
template <typename R, int MODE>
__global__ void __launch_bounds__(PRN_LB_TPB, prn_lb<R>::BPS)
    k_scan_diag_lookback(size_t batch, size_t T, size_t C, unsigned cw, unsigned cwl, size_t ngr, size_t nt,
                         unsigned D, int rev, const R *a, const R *b, const R *h0, R *h, unsigned *ticket,
                         typename prn_lb<R>::U *agg, typename prn_lb<R>::U *inc) {
    typedef prn_lb<R> L;
    typedef typename L::U U;
    enum { IT = L::ITEMS, NV = prn_vec<R>::N, KPMAX = L::KPMAX };
    const U NOT_YET = ~(U)0;
    __shared__ __align__(16) R sa[PRN_LB_TPB * IT + NV];
    __shared__ __align__(16) R sb[PRN_LB_TPB * IT + NV];
    __shared__ R xm[PRN_LB_XS], xo[PRN_LB_XS], lm[PRN_LB_XS], lo[PRN_LB_XS];
    __shared__ R ym[PRN_LB_NG], yo[PRN_LB_NG], zm[PRN_LB_NG], zo[PRN_LB_NG];
    __shared__ R am[8], ao[8], pin[8];
    __shared__ unsigned s_t[2];
    /* indices inside a tile in 32 bits: fewer registers */
    const unsigned tid = threadIdx.x, cwp = 1u << cwl, tc = tid & (cwp - 1), tt = tid >> cwl;
    const unsigned tn = PRN_LB_TPB >> cwl, ng = tn / PRN_LB_K, rows = tn * IT;
    const size_t chains = batch * ngr, tiles = chains * nt;
    const bool span = (MODE & 2) != 0;
    const int vec = MODE & 1;
    if (tid == 0) s_t[0] = atomicAdd(ticket, 1u) + 1u; /* the ticket starts at all ones */
    for (unsigned p = 0;; p ^= 1) {
        __syncthreads(); /* the ticket is in; the last tile's stores have read shared memory */
        const size_t v = s_t[p];
        if (v >= tiles) break;
        const size_t i = v / chains, q = v - i * chains, n = q / ngr, c0 = (q - n * ngr) * PRN_LB_CW(R);
        const size_t t0 = i * rows;
        const unsigned w = (unsigned)prn_min(cw, C - c0), nr = (unsigned)prn_min(rows, T - t0);
        /* whole rows: the run from s0; groups: row r at s0 + r ds */
        const size_t s0 = (n * T + (span ? (rev ? T - t0 - nr : t0) : rev ? T - 1 - t0 : t0)) * C + c0;
        const ptrdiff_t ds = rev ? -(ptrdiff_t)C : (ptrdiff_t)C;
        const unsigned sh = span && vec ? (unsigned)(s0 & (NV - 1)) : 0, S = span ? (unsigned)C : PRN_LB_CW(R);
        const bool act = tc < w, flip = span && rev;
        /* 1. a and b into shared memory; the next ticket while they land */
        prn_lb_load<R>(tid, span, vec, (unsigned)C, ds, sh, nr, w, rows, a + s0, b + s0, sa, sb);
        if (tid == 0) s_t[p ^ 1] = atomicAdd(ticket, 1u) + 1u;
        prn_cp_wait();
        __syncthreads();
        /* 2. each slice folded into a map, the slices scanned, the tile's
         * aggregate published */
        {
            R m = 1, o = 0;
            if (act)
                for (unsigned k = 0; k < IT; ++k) {
                    const unsigned e = sh + prn_lb_srow(tt * IT + k, nr, flip) * S + tc;
                    o = sa[e] * o + sb[e];
                    m *= sa[e];
                }
            xm[prn_lb_xi(tt, tc, cwl)] = m;
            xo[prn_lb_xi(tt, tc, cwl)] = o;
        }
        __syncthreads();
        prn_lb_rake<R, true>(tid, cwl, xm, xo, ym, yo);
        __syncthreads();
        if (tid < cwp) { /* exclusive prefixes of the raking groups; the tile's map */
            R cm = 1, co = 0;
#pragma unroll
            for (unsigned g = 0; g < PRN_LB_NG; ++g)
                if (g < ng) {
                    zm[(g << cwl) + tid] = cm;
                    zo[(g << cwl) + tid] = co;
                    prn_lb_then(cm, co, ym[(g << cwl) + tid], yo[(g << cwl) + tid]);
                }
            am[tid] = cm;
            ao[tid] = co;
            if (tid < w) L::put2(agg + (v * cw + tid) * 2, cm, co);
        }
        /* 3. the look-back: K aggregates (tiles i-K .. i-1), slice tt taking
         * KP consecutive ones, all its loads issued before it waits */
        const unsigned K = (unsigned)(i < D ? i : D - 1), KP = (K + tn - 1) / tn;
        U ib = 0;
        if (tid < w && i >= D) ib = ((const volatile U *)inc)[(v - (size_t)D * chains) * cw + tid]; /* early try */
        {
            R m = 1, o = 0;
            const unsigned first = tt * KP;
            if (act && first < K) {
                const unsigned cnt = K - first < KP ? K - first : KP;
                const U *src = agg + ((v - (size_t)(K - first) * chains) * cw + tc) * 2;
                const size_t step = chains * cw * 2;
                U tm[KPMAX], to[KPMAX];
                unsigned need = (1u << cnt) - 1;
                for (;;) {
#pragma unroll
                    for (unsigned j = 0; j < KPMAX; ++j)
                        if (need >> j & 1) L::get2(src + j * step, tm[j], to[j]);
#pragma unroll
                    for (unsigned j = 0; j < KPMAX; ++j)
                        if ((need >> j & 1) && tm[j] != NOT_YET && to[j] != NOT_YET) need &= ~(1u << j);
                    if (!need) break;
                    __nanosleep(32);
                }
#pragma unroll
                for (unsigned j = 0; j < KPMAX; ++j)
                    if (j < cnt) prn_lb_then(m, o, L::val(tm[j]), L::val(to[j]));
            }
            lm[prn_lb_xi(tt, tc, cwl)] = m;
            lo[prn_lb_xi(tt, tc, cwl)] = o;
        }
        __syncthreads();
        prn_lb_rake<R, false>(tid, cwl, lm, lo, ym, yo);
        __syncthreads();
        /* 4. P_i = M_i(I_{i-D} or h0); I_i = A_i(P_i) published */
        if (tid < w) {
            R cm = 1, co = 0, base;
#pragma unroll
            for (unsigned g = 0; g < PRN_LB_NG; ++g)
                if (g < ng) prn_lb_then(cm, co, ym[(g << cwl) + tid], yo[(g << cwl) + tid]);
            if (i >= D) {
                while (ib == NOT_YET) {
                    __nanosleep(32);
                    ib = ((const volatile U *)inc)[(v - (size_t)D * chains) * cw + tid];
                }
                base = L::val(ib);
            } else {
                base = h0 ? h0[n * C + c0 + tid] : (R)0;
            }
            const R x = prn_lb_apply(cm, base, co);
            pin[tid] = x;
            ((volatile U *)inc)[v * cw + tid] = L::canon(prn_lb_apply(am[tid], x, ao[tid]));
        }
        __syncthreads();
        /* each slice from its incoming state: the tile's, then the raking
         * groups before its own, then its group's slices before it */
        if (act) {
            const unsigned gi = tt / PRN_LB_K;
            R x = prn_lb_apply(zm[(gi << cwl) + tc], pin[tc], zo[(gi << cwl) + tc]);
            if (tt % PRN_LB_K) {
                const unsigned xp = prn_lb_xi(tt - 1, tc, cwl);
                x = prn_lb_apply(xm[xp], x, xo[xp]);
            }
            for (unsigned k = 0; k < IT; ++k) {
                const unsigned e = sh + prn_lb_srow(tt * IT + k, nr, flip) * S + tc;
                x = sa[e] * x + sb[e];
                sa[e] = x;
            }
        }
        __syncthreads();
        prn_lb_store<R>(tid, span, vec, (unsigned)C, ds, sh, nr, w, sa, h + s0);
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


/* Geometry of the look-back scan, a function of the shape alone (so are
 * its results): channels per tile and their power of two (log), groups,
 * tiles per chain, chains, the distance D of the state a tile starts from,
 * and where the status lives in the scratch (ticket at 0, aggregates,
 * states). 0 when the tiles would not fit the 32-bit ticket. */
typedef struct prn_lb_geo {
    size_t cw, cwl, ngr, nt, chains, tiles, D, agg_off, inc_off, bytes;
} prn_lb_geo;
static int prn_lb_geometry(int f64, size_t batch, size_t T, size_t C, prn_lb_geo *g) {
    const size_t es = f64 ? 8 : 4, items = f64 ? (size_t)prn_lb<double>::ITEMS : (size_t)prn_lb<float>::ITEMS;
    const size_t kpmax = f64 ? (size_t)prn_lb<double>::KPMAX : (size_t)prn_lb<float>::KPMAX;
    size_t tn, rows, tile_bytes, d;
    if (!batch || !T || !C) return 0;
    const size_t gw = f64 ? PRN_LB_CW(double) : PRN_LB_CW(float);
    g->cw = C < gw ? C : gw;
    for (g->cwl = 0; ((size_t)1 << g->cwl) < g->cw; ++g->cwl) {
    }
    g->ngr = prn_cdiv(C, g->cw);
    tn = PRN_LB_TPB >> g->cwl;
    rows = tn * items;
    g->nt = prn_cdiv(T, rows);
    g->chains = batch * g->ngr;
    g->tiles = g->chains * g->nt;
    if (g->tiles >= ((size_t)1 << 31) || g->tiles / g->chains != g->nt) return 0;
    /* the bytes of all chains' tiles side by side; D of them cover a hop */
    tile_bytes = rows * g->cw * 3 * es;
    d = prn_cdiv(PRN_LB_HOP_BYTES, g->chains * tile_bytes);
    g->D = d < 1 ? 1 : d > kpmax * tn ? kpmax * tn : d;
    g->agg_off = 256;
    g->inc_off = g->agg_off + prn_cdiv(g->tiles * g->cw * 2 * es, 256) * 256;
    g->bytes = g->inc_off + prn_cdiv(g->tiles * g->cw * es, 256) * 256;
    return 1;
}

extern "C" size_t prn_cu_scan_diag_lookback_bytes(int f64, size_t batch, size_t T, size_t C) {
    prn_lb_geo g;
    return prn_lb_geometry(f64, batch, T, C, &g) ? g.bytes : 0;
}

/* Does the look-back pay for this shape? It moves 12 bytes per element
 * (f32) at the memory roof unless its chains of states are slower: D
 * tiles of every chain per hop of about 2 us, i.e. D x chains x tile bytes
 * per hop against PRN_LB_HOP_BYTES at the roof. The chunked scan moves 20
 * (a and b read twice) at best at the roof: 0.6 of the look-back's. So the
 * look-back pays when its hop covers at least 0.6 of PRN_LB_HOP_BYTES, or
 * when a chain is no longer than D (no hop at all). D is capped by the
 * terms a tile reads (PRN_LB_KPMAX per slice, at least 32 slices): 256
 * tiles of 40+ KB, 10+ MB, so with the tiles of this kernel it pays at
 * every shape its status fits; the test is kept so that a future tile
 * geometry cannot silently lose to the chunked scan. */
extern "C" int prn_cu_scan_diag_lookback_pays(int f64, size_t batch, size_t T, size_t C) {
    prn_lb_geo g;
    size_t rows, tile_bytes;
    if (!prn_lb_geometry(f64, batch, T, C, &g)) return 0;
    /* Measured (H200, f32, bench/results/gpu_check_nvidia-h200_2026-11-27_run2):
     * with a single chain of whole-row tiles of 2-8 channels, (1, 1.25e7, 8),
     * the chunked scan ran at 0.42 of the copy and this one at 0.33 (at
     * C = 1 the chunked scan fell to 0.07 and this one reached 0.43). */
    if (g.chains == 1 && C >= 2 && g.nt > g.D) return 0;
    if (g.nt <= g.D) return 1;
    rows = (PRN_LB_TPB >> g.cwl) * (f64 ? (size_t)prn_lb<double>::ITEMS : (size_t)prn_lb<float>::ITEMS);
    tile_bytes = rows * g.cw * 3 * (f64 ? 8 : 4);
    return (double)g.D * (double)g.chains * (double)tile_bytes >= 0.6 * (double)PRN_LB_HOP_BYTES;
}

template <typename R, int MODE>
static void prn_lb_launch1(unsigned grid, cudaStream_t s, size_t batch, size_t T, size_t C, const prn_lb_geo *g,
                           int rev, const void *a, const void *b, const void *h0, void *h, char *base) {
    typedef typename prn_lb<R>::U U;
    k_scan_diag_lookback<R, MODE><<<grid, PRN_LB_TPB, 0, s>>>(
        batch, T, C, (unsigned)g->cw, (unsigned)g->cwl, g->ngr, g->nt, (unsigned)g->D, rev, (const R *)a,
        (const R *)b, (const R *)h0, (R *)h, (unsigned *)base, (U *)(base + g->agg_off), (U *)(base + g->inc_off));
}
template <typename R>
static void prn_lb_launch(int mode, unsigned grid, cudaStream_t s, size_t batch, size_t T, size_t C,
                          const prn_lb_geo *g, int rev, const void *a, const void *b, const void *h0, void *h,
                          char *base) {
    if (mode == 3) prn_lb_launch1<R, 3>(grid, s, batch, T, C, g, rev, a, b, h0, h, base);
    else if (mode == 2) prn_lb_launch1<R, 2>(grid, s, batch, T, C, g, rev, a, b, h0, h, base);
    else if (mode == 1) prn_lb_launch1<R, 1>(grid, s, batch, T, C, g, rev, a, b, h0, h, base);
    else prn_lb_launch1<R, 0>(grid, s, batch, T, C, g, rev, a, b, h0, h, base);
}

/* scratch: prn_cu_scan_diag_lookback_bytes of device memory; sm: the
 * device's multiprocessors. A grid of about as many blocks as fit the
 * device at once (each loops over tickets); more would only start when
 * the tiles are gone. */
extern "C" int prn_cu_scan_diag_lookback(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, int rev,
                                         const void *a, const void *b, const void *h0, void *h, void *scratch,
                                         int sm) {
    prn_lb_geo g;
    if (!batch || !T || !C) return 0;
    if (!prn_lb_geometry(f64, batch, T, C, &g)) return (int)cudaErrorInvalidValue;
    /* ticket and status words start as all ones ("not yet") */
    cudaError_t e = cudaMemsetAsync(scratch, 0xff, g.bytes, s);
    if (e != cudaSuccess) return (int)e;
    const size_t resident = (size_t)(sm > 0 ? sm : 1) * (size_t)(f64 ? (int)prn_lb<double>::BPS : (int)prn_lb<float>::BPS);
    const unsigned grid = (unsigned)prn_min(prn_min(g.tiles, resident), PRN_MAX_GRID);
    /* 16-byte copies need a, b and h at 16-byte boundaries (device
     * allocations are; views into them may not be), and for groups of
     * channels, rows of whole vectors */
    const int span = C <= (f64 ? PRN_LB_CW(double) : PRN_LB_CW(float));
    const int vec = (((uintptr_t)a | (uintptr_t)b | (uintptr_t)h) & 15) == 0 && (span || C % (f64 ? 2 : 4) == 0);
    const int mode = span * 2 + vec;
    if (f64) prn_lb_launch<double>(mode, grid, s, batch, T, C, &g, rev, a, b, h0, h, (char *)scratch);
    else prn_lb_launch<float>(mode, grid, s, batch, T, C, &g, rev, a, b, h0, h, (char *)scratch);
    return prn_launched();
}
