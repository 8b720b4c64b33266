/* rnn_cell.cu - one time step of the gates of the classic cells
 * (rnn_gates_forward / rnn_gates_backward of the table, and each step of
 * rnn_layer_forward / _backward), a thread per (row, unit); layouts as the
 * reference's (parrnn.h), rows `rows` apart (prn_cu_rows), so a layer's
 * steps read and write its [B, T, X] arrays in place. kind is a
 * prn_rnn_kind: ELMAN, LSTM, GRU or MHGRU (gates grouped by head of k). */
#include "common.cuh"
#include <string.h>

template <typename T> __device__ __forceinline__ T csigm(T x) { return (T)1 / ((T)1 + pexp(-x)); }

/* Unit i of one row's step: x, qq the row's input and hidden projections,
 * sp its state before the step, n the state after, v its saved values
 * (NULL: none kept). */
template <typename T>
__device__ __forceinline__ void prn_cell_fwd_unit(size_t H, size_t k, int kind, int relu, size_t i, const T *x,
                                                  const T *qq, const T *bias, const T *sp, T *n, T *v) {
    if (kind == PRN_RNN_ELMAN) {
        const T p = x[i] + qq[i] + bias[i];
        n[i] = relu ? (p > 0 ? p : (T)0) : ptanh(p);
    } else if (kind == PRN_RNN_LSTM) {
        const T ig = csigm(x[i] + qq[i] + bias[i]), fg = csigm(x[H + i] + qq[H + i] + bias[H + i]);
        const T gg = ptanh(x[2 * H + i] + qq[2 * H + i] + bias[2 * H + i]);
        const T og = csigm(x[3 * H + i] + qq[3 * H + i] + bias[3 * H + i]);
        const T c = fg * sp[H + i] + ig * gg, tc = ptanh(c);
        n[i] = og * tc;
        n[H + i] = c;
        if (v) { /* NULL: a layer's forward without a backward */
            v[i] = ig; v[H + i] = fg; v[2 * H + i] = gg; v[3 * H + i] = og; v[4 * H + i] = tc;
        }
    } else {
        const size_t jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
        const T r = csigm(x[jr] + qq[jr] + bias[jr]), z = csigm(x[jz] + qq[jz] + bias[jz]);
        const T hn = qq[jn] + bias[jn], nn = ptanh(x[jn] + r * hn);
        n[i] = nn + z * (sp[i] - nn);
        if (v) {
            v[i] = r; v[H + i] = z; v[2 * H + i] = nn; v[3 * H + i] = hn;
        }
    }
}

template <typename T>
__global__ void k_cell_fwd(size_t B, size_t H, size_t k, int kind, int relu, prn_cu_rows rows, const T *xp, const T *q,
                           const T *bias, const T *s, T *next, T *saved) {
    PRN_FOR(id, B * H) {
        const size_t b = id / H, i = id % H;
        prn_cell_fwd_unit(H, k, kind, relu, i, xp + b * rows.xp, q + b * rows.q, bias, s + b * rows.s,
                          next + b * rows.next, saved ? saved + b * rows.saved : (T *)NULL);
    }
}

/* Unit i of one row's step backward: gb the row's gradient of the state
 * after the step, cb what later steps sent back (NULL: none), sp, n the
 * states before and after, v the saved values; writes the gradients of
 * the projections (dx, dqq) and d, this step's part of d state before. */
template <typename T>
__device__ __forceinline__ void prn_cell_bwd_unit(size_t H, size_t k, int kind, int relu, size_t i, const T *gb,
                                                  const T *cb, const T *sp, const T *n, const T *v, T *dx, T *dqq,
                                                  T *d) {
    /* d loss / d next: this step's gradient plus what later steps sent back */
    const T g0 = cb ? gb[i] + cb[i] : gb[i];
    if (kind == PRN_RNN_ELMAN) {
        const T dp = relu ? (n[i] > 0 ? g0 : (T)0) : g0 * ((T)1 - n[i] * n[i]);
        dx[i] = dp; dqq[i] = dp; d[i] = 0;
    } else if (kind == PRN_RNN_LSTM) {
        const T ig = v[i], fg = v[H + i], gt = v[2 * H + i], og = v[3 * H + i], tc = v[4 * H + i];
        const T gh = g0, dc = (cb ? gb[H + i] + cb[H + i] : gb[H + i]) + gh * og * ((T)1 - tc * tc);
        const T di = dc * gt * ig * ((T)1 - ig), df = dc * sp[H + i] * fg * ((T)1 - fg);
        const T dg = dc * ig * ((T)1 - gt * gt), dO = gh * tc * og * ((T)1 - og);
        dx[i] = di; dqq[i] = di; dx[H + i] = df; dqq[H + i] = df;
        dx[2 * H + i] = dg; dqq[2 * H + i] = dg; dx[3 * H + i] = dO; dqq[3 * H + i] = dO;
        d[i] = 0; d[H + i] = dc * fg;
    } else {
        const size_t jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
        const T r = v[i], z = v[H + i], nn = v[2 * H + i], hn = v[3 * H + i], gu = g0;
        const T dpn = (gu - gu * z) * ((T)1 - nn * nn);
        const T dpr = dpn * hn * r * ((T)1 - r), dpz = gu * (sp[i] - nn) * z * ((T)1 - z);
        dx[jr] = dpr; dqq[jr] = dpr; dx[jz] = dpz; dqq[jz] = dpz;
        dx[jn] = dpn; dqq[jn] = dpn * r;
        d[i] = gu * z;
    }
}

template <typename T>
__global__ void k_cell_bwd(size_t B, size_t H, size_t k, int kind, int relu, prn_cu_rows rows, const T *g,
                           const T *carry, const T *s, const T *next, const T *saved, T *dxp, T *dq, T *ds) {
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H;
    PRN_FOR(id, B * H) {
        const size_t b = id / H, i = id % H;
        prn_cell_bwd_unit(H, k, kind, relu, i, g + b * rows.g, carry ? carry + b * S : (const T *)NULL, s + b * rows.s,
                          next + b * rows.next, saved ? saved + b * rows.saved : (const T *)NULL, dxp + b * rows.xp,
                          dq + b * rows.q, ds + b * S);
    }
}

/* ---- A whole layer in one launch: a persistent kernel --------------------
 * The grid is ns x (groups that run at once) blocks. Block s of a group owns
 * the hidden units [s u, s u + u) and keeps, for all T steps, the part of
 * W_hh it needs in shared memory (the forward: the G gate rows of its units,
 * G u rows of H; the backward: W_hh's columns of its units, u rows of P =
 * G H); W_hh is read from global memory once per launch. Each step it runs
 * all bg sequences of its group, so each value of W in shared memory serves
 * bg dot products (rb of them in registers at once).
 * Forward step: (1) q of the block's rows for all bg sequences (h_prev
 * staged in shared memory); (2) the cell of its units, which writes the
 * states row; (3) with ns > 1, the group's step barrier, after which every
 * block stages the whole new h from the states array (volatile loads: not
 * L1) -- the states array is the exchange buffer; with ns = 1 the cell
 * writes h straight into the stage and no block waits for another.
 * Backward step, last first: (1) the cell's backward of the block's units,
 * which writes dq and dxp of their gates and the carry (d state) of its
 * units (ns = 1: dq also straight into the stage); (2) the barrier; (3)
 * the whole dq row of the step staged from dq; (4)
 * d h_prev of its units = dq W_hh[:, units]: each block sums over all P for
 * its own units, so no partial sums cross blocks.
 * Dot products: ks threads split one dot (ks from its length and the dtype
 * only: prn_lay_ks), each summing every ks-th 16-byte vector in order; the
 * ks partial sums are added in order by the thread that runs the unit's
 * cell. The order of every sum thus depends on H, kind and dtype alone --
 * not on ns, bg, the grid or the device -- so the bits are the same
 * whatever the launch.
 * The step barrier: a counter per group, zeroed before the launch; after a
 * __syncthreads, thread 0 fences (its block's writes of the step become
 * visible before its arrival), adds 1, waits until the counter reaches
 * ns (step + 1), fences again; a __syncthreads releases the block. Blocks
 * of a group wait for each other, so the plan has at most as many blocks
 * as can be resident at once (occupancy x multiprocessors; on the
 * emulator, PRN_CUDA_EMU_RESIDENT), and such grids are cooperative
 * launches (all blocks at once, or an error): no deadlock. Groups beyond
 * that are looped over (ns = 1 only, where no block waits). f32 slices
 * replace the barrier and the staging from states / dq by the tagged
 * exchange (prn_lay_put, below). */
#define PRN_LAY_NT 512 /* threads per block at most (fewer where the work is less) */

__device__ __forceinline__ void prn_lay_barrier(unsigned *cnt, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(cnt, 1u);
        volatile unsigned *vc = cnt;
        while (*vc < target) __nanosleep(32);
        __threadfence();
    }
    __syncthreads();
}

/* The tagged exchange (f32 slices): instead of the counter barrier, each
 * value a block's cells produce for the other blocks (h forward, dq
 * backward) goes out as ONE 64-bit word, (step + 1) << 32 | its bits, into
 * a buffer of two rows per sequence (step parity), zeroed before the
 * launch; a block stages a value by polling its word until the tag is
 * step + 1. A 64-bit aligned store and load are single-copy atomic, so the
 * tag vouches for the value in the same word: no fence, no atomic, no
 * counter -- a step's exchange costs about one L2 round trip for the
 * store and one for the polls, where the barrier had fence, atomic, polls
 * (each an L2 round trip), fence and then the staging loads. Two rows
 * suffice: a block writes step s + 2's values only after it staged all of
 * step s + 1's, which every block produced after staging all of step s's.
 * Every block of the grid is resident (a cooperative launch), as for the
 * barrier. f64 values need the whole word: they keep the barrier. */
__device__ __forceinline__ void prn_lay_put(unsigned long long *p, float v, size_t tag) {
    union {
        float f;
        unsigned u;
    } c;
    c.f = v;
    *(volatile unsigned long long *)p = (unsigned long long)tag << 32 | c.u;
}
__device__ __forceinline__ void prn_lay_put(unsigned long long *, double, size_t) {} /* (never: f64 keeps the barrier) */
template <typename T> __device__ __forceinline__ T prn_lay_take(const unsigned long long *p, size_t tag) {
    unsigned long long w;
    while ((w = *(volatile const unsigned long long *)p) >> 32 != (unsigned long long)(unsigned)tag) __nanosleep(20);
    union {
        float f;
        unsigned u;
    } c;
    c.u = (unsigned)w;
    return (T)c.f;
}

/* A unit's inputs of a step, fetched from global memory before the block
 * needs them (their latency then hides behind the dot products): the
 * forward's x and b_hh of its G gates and its state before the step; the
 * backward's gradients, saved values and states. */
template <typename T> struct prn_lay_in {
    T x[4], b[4], h, c;
};
template <typename T>
__device__ __forceinline__ void prn_lay_fetch_fwd(size_t H, int kind, size_t i, const T *x, const T *bias, const T *sp,
                                                  prn_lay_in<T> &f) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
#pragma unroll
    for (int g = 0; g < 4; ++g)
        if ((size_t)g < G) {
            f.x[g] = x[g * H + i];
            f.b[g] = bias[g * H + i];
        }
    f.h = sp[i];
    f.c = kind == PRN_RNN_LSTM ? sp[H + i] : (T)0;
}

/* Unit i's step (ELMAN, LSTM, GRU with one head) with its gates' hidden
 * projections q[g] (without b_hh): prn_cell_fwd_unit's arithmetic.
 * Returns the new h; the new c (LSTM) in cn. */
template <typename T>
__device__ __forceinline__ T prn_lay_cell_fwd(size_t H, int kind, int relu, size_t i, const prn_lay_in<T> &f,
                                              const T *q, T *n, T *v, T &cn) {
    if (kind == PRN_RNN_ELMAN) {
        const T p = f.x[0] + q[0] + f.b[0];
        return n[i] = relu ? (p > 0 ? p : (T)0) : ptanh(p);
    } else if (kind == PRN_RNN_LSTM) {
        const T ig = csigm(f.x[0] + q[0] + f.b[0]), fg = csigm(f.x[1] + q[1] + f.b[1]);
        const T gg = ptanh(f.x[2] + q[2] + f.b[2]);
        const T og = csigm(f.x[3] + q[3] + f.b[3]);
        const T c = fg * f.c + ig * gg, tc = ptanh(c), h = og * tc;
        n[i] = h;
        n[H + i] = cn = c;
        if (v) {
            v[i] = ig; v[H + i] = fg; v[2 * H + i] = gg; v[3 * H + i] = og; v[4 * H + i] = tc;
        }
        return h;
    } else {
        const T r = csigm(f.x[0] + q[0] + f.b[0]), z = csigm(f.x[1] + q[1] + f.b[1]);
        const T hn = q[2] + f.b[2], nn = ptanh(f.x[2] + r * hn), h = nn + z * (f.h - nn);
        n[i] = h;
        if (v) {
            v[i] = r; v[H + i] = z; v[2 * H + i] = nn; v[3 * H + i] = hn;
        }
        return h;
    }
}

/* The backward's inputs of unit i: g and the states after (x: h, c) and
 * before (h, c) the step, the saved values in b (ELMAN: none). */
template <typename T> struct prn_lay_bin {
    T gh, gc, nh, ph, pc, v[5];
};
template <typename T>
__device__ __forceinline__ void prn_lay_fetch_bwd(size_t H, int kind, size_t i, const T *g, const T *sp, const T *n,
                                                  const T *v, prn_lay_bin<T> &f) {
    f.gh = g[i];
    f.gc = kind == PRN_RNN_LSTM ? g[H + i] : (T)0;
    f.nh = n[i];
    f.ph = sp[i];
    f.pc = kind == PRN_RNN_LSTM ? sp[H + i] : (T)0;
    const int nv = kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4;
#pragma unroll
    for (int k = 0; k < 5; ++k)
        if (k < nv) f.v[k] = v[k * H + i];
}

/* The inputs of unit i of sequence bb at the backward's step `step`. */
template <typename T>
__device__ __forceinline__ void prn_lay_fetch_bwd_at(size_t TT, size_t H, int kind, int rev, size_t step,
                                                     size_t bb, size_t i, const T *g, const T *s0, const T *states,
                                                     const T *saved, prn_lay_bin<T> &f) {
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H, V = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
    const size_t t = rev ? step : TT - 1 - step, row = bb * TT + t;
    const T *prev = step == TT - 1 ? s0 + bb * S : states + (bb * TT + (rev ? t + 1 : t - 1)) * S;
    prn_lay_fetch_bwd(H, kind, i, g + row * S, prev, states + row * S, saved ? saved + row * V : (const T *)NULL, f);
}

/* prn_cell_bwd_unit's arithmetic on fetched values; with cb, (ch, cc) is
 * the carry of the step after. Writes dx, dqq of the unit's gates (dqq also
 * to sq unless NULL: the block's stage; and tagged to xq unless NULL: the
 * tagged exchange) and returns d (dh, dc). */
#define PRN_LAY_DQ(k, val)                                                                                         \
    do {                                                                                                           \
        const T v_ = (val);                                                                                        \
        dqq[k] = v_;                                                                                               \
        if (sq) sq[k] = v_;                                                                                        \
        if (xq) prn_lay_put(xq + (k), v_, tag);                                                                    \
    } while (0)
template <typename T>
__device__ __forceinline__ void prn_lay_cell_bwd(size_t H, int kind, int relu, size_t i, const prn_lay_bin<T> &f,
                                                 bool cb, T ch, T cc, T *dx, T *dqq, T *sq, unsigned long long *xq,
                                                 size_t tag, T &dh, T &dcr) {
    const T g0 = cb ? f.gh + ch : f.gh;
    if (kind == PRN_RNN_ELMAN) {
        const T dp = relu ? (f.nh > 0 ? g0 : (T)0) : g0 * ((T)1 - f.nh * f.nh);
        dx[i] = dp; PRN_LAY_DQ(i, dp); dh = 0; dcr = 0;
    } else if (kind == PRN_RNN_LSTM) {
        const T ig = f.v[0], fg = f.v[1], gt = f.v[2], og = f.v[3], tc = f.v[4];
        const T gh = g0, dc = (cb ? f.gc + cc : f.gc) + gh * og * ((T)1 - tc * tc);
        const T di = dc * gt * ig * ((T)1 - ig), df = dc * f.pc * fg * ((T)1 - fg);
        const T dg = dc * ig * ((T)1 - gt * gt), dO = gh * tc * og * ((T)1 - og);
        dx[i] = di; PRN_LAY_DQ(i, di); dx[H + i] = df; PRN_LAY_DQ(H + i, df);
        dx[2 * H + i] = dg; PRN_LAY_DQ(2 * H + i, dg); dx[3 * H + i] = dO; PRN_LAY_DQ(3 * H + i, dO);
        dh = 0; dcr = dc * fg;
    } else {
        const T r = f.v[0], z = f.v[1], nn = f.v[2], hn = f.v[3], gu = g0;
        const T dpn = (gu - gu * z) * ((T)1 - nn * nn);
        const T dpr = dpn * hn * r * ((T)1 - r), dpz = gu * (f.ph - nn) * z * ((T)1 - z);
        dx[i] = dpr; PRN_LAY_DQ(i, dpr); dx[H + i] = dpz; PRN_LAY_DQ(H + i, dpz);
        dx[2 * H + i] = dpn; PRN_LAY_DQ(2 * H + i, dpn * r);
        dh = gu * z; dcr = 0;
    }
}

/* rb dot products of length nv vectors sharing one row a (stride 0 between
 * them) with rows x, x + xs, ...: this thread's part (vectors ks, ks + KS,
 * ...), in order. */
template <typename T, int RB>
__device__ __forceinline__ void prn_lay_dots(const T *a, const T *x, size_t xs, unsigned nv, unsigned ks, unsigned KS,
                                             T *acc) {
    typedef prn_vec<T> V;
    for (int j = 0; j < RB; ++j) acc[j] = 0;
    for (unsigned v = ks; v < nv; v += KS) {
        const V wv = ((const V *)a)[v];
        for (int j = 0; j < RB; ++j) {
            const V hv = ((const V *)(x + j * xs))[v];
            for (int e = 0; e < V::N; ++e) acc[j] += wv.v[e] * hv.v[e];
        }
    }
}

/* The dots' walk over o = (c, p) (c: a pass of RB sequences, p: a row of
 * np), from o0 = tid / KS in strides of NW, in 32-bit arithmetic and
 * without a division per step (a 64-bit division is a call of some 70
 * instructions on the device, and the old walk did three per dot: most
 * of a small layer's step). */
struct prn_lay_walk {
    unsigned p0, c0, dp, dc, np;
};
__device__ __forceinline__ prn_lay_walk prn_lay_walk_of(unsigned o0, unsigned nw, unsigned np) {
    prn_lay_walk w;
    w.p0 = o0 % np;
    w.c0 = o0 / np;
    w.dp = nw % np;
    w.dc = nw / np;
    w.np = np;
    return w;
}
/* (c, p) of o + NW from that of o */
__device__ __forceinline__ void prn_lay_walk_next(const prn_lay_walk &w, unsigned &p, unsigned &c) {
    p += w.dp;
    c += w.dc;
    if (p >= w.np) {
        p -= w.np;
        ++c;
    }
}

/* x of unit i's gates at one step (the rest of prn_lay_fetch_fwd's values
 * stay in registers between steps). */
template <typename T>
__device__ __forceinline__ void prn_lay_fetch_x(size_t H, int kind, size_t i, const T *x, T *out) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
#pragma unroll
    for (int g = 0; g < 4; ++g)
        if ((size_t)g < G) out[g] = x[g * H + i];
}

template <typename T, int RB>
__global__ void __launch_bounds__(PRN_LAY_NT, 1)
    k_lay_fwd(size_t B, size_t TT, size_t H, int kind, int relu, int rev, prn_cu_layer_plan L, const T *xp,
              const T *w, const T *bias, const T *s0, T *states, T *saved, unsigned *cnt, unsigned long long *xb) {
    PRN_DYN_SHARED(smem);
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H;
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H, V = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
    const unsigned tid = threadIdx.x, nt = blockDim.x, KS = L.ks, ks = tid % KS, NW = nt / KS;
    const size_t U = L.u, slice = blockIdx.x % L.ns, u0 = slice * U, uc = prn_min(U, H - u0), GU = G * U;
    const size_t hs = prn_cdiv(H, 32) * 32, ws = hs + (prn_vec<T>::N * KS) % (128 / sizeof(T));
    const size_t bgp = prn_cdiv(L.bg, RB) * RB;
    const unsigned NO = (unsigned)(GU * (bgp / RB)), U32 = (unsigned)U;
    const unsigned nv = (unsigned)(hs / prn_vec<T>::N);
    const prn_lay_walk wk = prn_lay_walk_of(tid / KS, NW, (unsigned)GU);
    T *sW = (T *)smem, *sh = sW + GU * ws, *sp = sh + bgp * hs;
    for (size_t e = tid; e < GU * ws; e += nt) { /* the slice's rows, zero past H and past the last unit */
        const size_t r = e / ws, m = e % ws, uu = r % U;
        sW[e] = uu < uc && m < H ? w[((r / U) * H + u0 + uu) * H + m] : (T)0;
    }
    for (size_t grp = blockIdx.x / L.ns; grp < L.nbg; grp += gridDim.x / L.ns) {
        const size_t b0 = grp * L.bg, nb = prn_min(L.bg, B - b0);
        /* one: a unit per thread at most, the same unit every step, so its
         * b_hh, state (h, c) and next x stay in registers: no step reads
         * back what the step before wrote, and x of step + 1 is loaded
         * during step (its latency, a DRAM round trip, behind the barrier
         * and the dots). */
        const bool one = nb * uc <= nt, mine = one && tid < nb * uc;
        const size_t mb = one ? tid / uc : 0, mu = one ? tid % uc : 0;
        prn_lay_in<T> in;
        for (size_t e = tid; e < bgp * hs; e += nt) {
            const size_t b = e / hs, m = e % hs;
            sh[e] = b < nb && m < H ? s0[(b0 + b) * S + m] : (T)0;
        }
        if (mine) {
            const size_t bb = b0 + mb, t = rev ? TT - 1 : 0;
            prn_lay_fetch_fwd(H, kind, u0 + mu, xp + (bb * TT + t) * P, bias, s0 + bb * S, in);
        }
        __syncthreads();
        for (size_t step = 0; step < TT; ++step) {
            const size_t t = rev ? TT - 1 - step : step;
            /* (1) q = W_hh h_prev for the slice's rows, partial sums */
            {
                unsigned p = wk.p0, c = wk.c0;
                for (unsigned o = tid / KS; o < NO; o += NW) {
                    if (uc == U || p % U32 < uc) {
                        T acc[RB];
                        prn_lay_dots<T, RB>(sW + p * ws, sh + c * RB * hs, hs, nv, ks, KS, acc);
                        for (int j = 0; j < RB; ++j) sp[((c * RB + j) * GU + p) * KS + ks] = acc[j];
                    }
                    prn_lay_walk_next(wk, p, c);
                }
            }
            __syncthreads();
            /* (2) the cell of the slice's units */
            for (size_t idx = tid; idx < nb * uc; idx += nt) {
                const size_t b = one ? mb : idx / uc, uu = one ? mu : idx % uc, i = u0 + uu, bb = b0 + b,
                             row = bb * TT + t;
                if (!one)
                    prn_lay_fetch_fwd(H, kind, i, xp + row * P, bias,
                                      step ? states + (bb * TT + (rev ? t + 1 : t - 1)) * S : s0 + bb * S, in);
                T q[4], cn = 0;
                for (size_t g = 0; g < G; ++g) {
                    const T *pp = sp + (b * GU + g * U + uu) * KS;
                    T a = pp[0];
                    for (unsigned k = 1; k < KS; ++k) a += pp[k];
                    q[g] = a;
                }
                const T h = prn_lay_cell_fwd(H, kind, relu, i, in, q, states + row * S,
                                             saved ? saved + row * V : (T *)NULL, cn);
                if (L.ns == 1) sh[b * hs + i] = h;
                else if (xb && step + 1 < TT) prn_lay_put(xb + ((step & 1) * B + bb) * H + i, h, step + 1);
                if (one) { /* the next step's state and x */
                    in.h = h;
                    in.c = cn;
                    if (step + 1 < TT) prn_lay_fetch_x(H, kind, i, xp + (bb * TT + (rev ? t - 1 : t + 1)) * P, in.x);
                }
            }
            if (L.ns > 1 && step + 1 < TT && xb) {
                /* (3) every slice's h of this step, tagged (the barrier first:
                 * this block's own values, on the emulator's fibers too) */
                const unsigned long long *xr = xb + ((step & 1) * B + b0) * H;
                __syncthreads();
                for (unsigned e = tid; e < (unsigned)(nb * H); e += nt) {
                    const unsigned b = e / (unsigned)H, m = e - b * (unsigned)H;
                    sh[b * hs + m] = prn_lay_take<T>(xr + e, step + 1);
                }
            } else if (L.ns > 1 && step + 1 < TT) {
                /* (3) every slice's h of this step, from the states array */
                prn_lay_barrier(cnt + grp, (unsigned)(L.ns * (step + 1)));
                for (unsigned e = tid; e < (unsigned)(nb * H); e += nt) { /* (32 bits: nb H <= 64 x 4096) */
                    const unsigned b = e / (unsigned)H, m = e - b * (unsigned)H;
                    sh[b * hs + m] = ((volatile const T *)states)[((b0 + b) * TT + t) * S + m];
                }
            }
            __syncthreads();
        }
    }
}

template <typename T, int RB>
__global__ void __launch_bounds__(PRN_LAY_NT, 1)
    k_lay_bwd(size_t B, size_t TT, size_t H, int kind, int relu, int rev, prn_cu_layer_plan L, const T *g,
              const T *w, const T *s0, const T *states, const T *saved, T *dxp, T *dq, T *ds0, unsigned *cnt,
              T *carry, unsigned long long *xb) {
    PRN_DYN_SHARED(smem);
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H;
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H;
    const unsigned tid = threadIdx.x, nt = blockDim.x, KS = L.ks, ks = tid % KS, NW = nt / KS;
    const size_t U = L.u, slice = blockIdx.x % L.ns, u0 = slice * U, uc = prn_min(U, H - u0);
    const size_t ps = prn_cdiv(P, 32) * 32, ws = ps + (prn_vec<T>::N * KS) % (128 / sizeof(T));
    const size_t bgp = prn_cdiv(L.bg, RB) * RB;
    const unsigned NO = (unsigned)(U * (bgp / RB)), nv = (unsigned)(ps / prn_vec<T>::N);
    const prn_lay_walk wk = prn_lay_walk_of(tid / KS, NW, (unsigned)U);
    T *sW = (T *)smem, *sd = sW + U * ws, *sp = sd + bgp * ps;
    for (size_t e = tid; e < U * ws; e += nt) { /* columns of the slice's units, as rows */
        const size_t uu = e / ws, p = e % ws;
        sW[e] = uu < uc && p < P ? w[p * H + u0 + uu] : (T)0;
    }
    for (size_t e = tid; e < bgp * ps; e += nt) sd[e] = 0; /* padding stays zero */
    __syncthreads(); /* before any cell writes the stage */
    for (size_t grp = blockIdx.x / L.ns; grp < L.nbg; grp += gridDim.x / L.ns) {
        const size_t b0 = grp * L.bg, nb = prn_min(L.bg, B - b0);
        const bool one = nb * uc <= nt; /* a unit per thread at most */
        const size_t mb = one ? tid / uc : 0, mu = one ? tid % uc : 0; /* its unit */
        prn_lay_bin<T> in;
        T ch = 0, cc = 0; /* one: the carry of this thread's unit, d state (h, c), between steps */
        if (one && tid < nb * uc) /* the first step's inputs */
            prn_lay_fetch_bwd_at(TT, H, kind, rev, 0, b0 + mb, u0 + mu, g, s0, states, saved, in);
        for (size_t step = 0; step < TT; ++step) {
            const size_t t = rev ? step : TT - 1 - step;
            /* (1) the cell's backward of the slice's units */
            for (size_t idx = tid; idx < nb * uc; idx += nt) {
                const size_t i = u0 + (one ? mu : idx % uc), bb = b0 + (one ? mb : idx / uc), row = bb * TT + t;
                const T *cb = carry + ((step - 1) & 1) * B * S + bb * S; /* !one: the carry in global memory */
                T *d = carry + (step & 1) * B * S + bb * S, dh, dc;
                if (!one) prn_lay_fetch_bwd_at(TT, H, kind, rev, step, bb, i, g, s0, states, saved, in);
                /* one call site for both (the same arithmetic, contracted alike) */
                prn_lay_cell_bwd(H, kind, relu, i, in, step != 0, one ? ch : step ? cb[i] : (T)0,
                                 one ? cc : step && S > H ? cb[H + i] : (T)0, dxp + row * P, dq + row * P,
                                 L.ns == 1 ? sd + (bb - b0) * ps : (T *)NULL,
                                 L.ns > 1 && xb ? xb + ((step & 1) * B + bb) * P : (unsigned long long *)NULL, step + 1,
                                 dh, dc);
                if (one) {
                    ch = dh;
                    cc = dc;
                } else {
                    d[i] = dh;
                    if (S > H) d[H + i] = dc;
                }
            }
            if (one && tid < nb * uc && step + 1 < TT) /* the next step's inputs, on their way during this one's dots */
                prn_lay_fetch_bwd_at(TT, H, kind, rev, step + 1, b0 + mb, u0 + mu, g, s0, states, saved, in);
            /* (2), (3): the whole dq row of the step (ns = 1: the cells wrote it to the stage) */
            if (L.ns > 1 && xb) { /* tagged, as the forward */
                const unsigned long long *xr = xb + ((step & 1) * B + b0) * P;
                __syncthreads();
                for (unsigned e = tid; e < (unsigned)(nb * P); e += nt) {
                    const unsigned b = e / (unsigned)P, p = e - b * (unsigned)P;
                    sd[b * ps + p] = prn_lay_take<T>(xr + e, step + 1);
                }
            } else if (L.ns > 1) {
                prn_lay_barrier(cnt + grp, (unsigned)(L.ns * (step + 1)));
                for (unsigned e = tid; e < (unsigned)(nb * P); e += nt) {
                    const unsigned b = e / (unsigned)P, p = e - b * (unsigned)P;
                    sd[b * ps + p] = ((volatile const T *)dq)[((b0 + b) * TT + t) * P + p];
                }
            }
            __syncthreads();
            /* (4) d h_prev of the slice's units: dq W_hh[:, units], partial sums */
            {
                unsigned uu = wk.p0, c = wk.c0; /* o = (c, uu), as the forward's walk */
                for (unsigned o = tid / KS; o < NO; o += NW) {
                    if (uu < uc) {
                        T acc[RB];
                        prn_lay_dots<T, RB>(sW + uu * ws, sd + c * RB * ps, ps, nv, ks, KS, acc);
                        for (int j = 0; j < RB; ++j) sp[((c * RB + j) * U + uu) * KS + ks] = acc[j];
                    }
                    prn_lay_walk_next(wk, uu, c);
                }
            }
            __syncthreads();
            for (size_t idx = tid; idx < nb * uc; idx += nt) {
                const size_t b = one ? mb : idx / uc, uu = one ? mu : idx % uc;
                const T *pp = sp + (b * U + uu) * KS;
                T a = pp[0];
                for (unsigned k = 1; k < KS; ++k) a += pp[k];
                if (one) ch += a;
                else carry[(step & 1) * B * S + (b0 + b) * S + u0 + uu] += a;
            }
            /* no barrier here: the next step's cell writes the stage sd, whose
             * readers (the dots above) all passed the barrier after them, and
             * its dots write sp only after the next step's barrier; the carry
             * is read back by the thread that wrote it (the same unit mapping) */
        }
        for (size_t idx = tid; idx < nb * uc; idx += nt) { /* d s0: the carry after the first step */
            const size_t b = idx / uc, i = u0 + idx % uc;
            const T *c = carry + ((TT - 1) & 1) * B * S + (b0 + b) * S;
            ds0[(b0 + b) * S + i] = one ? ch : c[i];
            if (S > H) ds0[(b0 + b) * S + H + i] = one ? cc : c[H + i];
        }
    }
}

/* ---- Hidden size 1: a thread per sequence ----------------------------------
 * At H = 1 a step is a handful of flops per sequence, and what bounds the
 * block kernels above is their step's chain of latencies (two barriers, a
 * trip through shared memory, the partial sums of ks threads): about
 * 1.4 us a step forward on an H200 (run 2: 2.67 s for the DEER baseline,
 * GRU, B = 16, T = 1e6, with gradients; the old two launches a step took
 * 1.60 s). Here one thread runs one sequence's T steps with W_hh, b_hh,
 * the state and the carry in registers: no barrier, no shared memory, and
 * the loads of later steps (x; the backward's g, states and saved values)
 * issued PRN_LAY1_D steps ahead into a ring of registers (a DRAM round
 * trip is several steps' work), so a step costs its arithmetic's latency
 * (the gates' exp, tanh and divisions, about 0.1-0.2 us) plus stores that
 * nothing waits for.
 * The bits are the block kernels': their dot of length n (n = 1 forward,
 * G backward, both <= 4 = one or two 16-byte vectors) is ks partial sums
 * (ks = 2 for f32, 4 for f64 at n <= 32: prn_lay_ks), partial k summing
 * the vectors k, k + ks, ... from 0, each ending with the zero padding up
 * to 32 elements (acc + 0: the same bits, -0 becoming +0 as there), then
 * added in order. prn_lay1_dot does exactly that on registers. */
template <typename T> struct prn_lay1_k {
    enum { N = 16 / sizeof(T), KS = sizeof(T) == 4 ? 2 : 4, D = sizeof(T) == 4 ? 8 : 4 };
};
#define PRN_LAY1_TPB 64 /* threads per block (sequences; a few blocks spread over the SMs) */

template <typename T> __device__ __forceinline__ T prn_lay1_dot(const T *a, const T *x, int n) {
    typedef prn_lay1_k<T> K;
    T s = 0;
#pragma unroll
    for (int k = 0; k < (int)K::KS; ++k) {
        T acc = 0;
#pragma unroll
        for (int m = 0; m < 4; ++m)
            if ((m / (int)K::N) % (int)K::KS == k && m < n) acc += a[m] * x[m];
        acc += (T)0; /* the padding's products */
        s = k ? s + acc : acc;
    }
    return s;
}

template <typename T>
__global__ void __launch_bounds__(PRN_LAY1_TPB)
    k_lay1_fwd(size_t B, size_t TT, int kind, int relu, int rev, const T *xp, const T *w, const T *bias,
               const T *s0, T *states, T *saved) {
    typedef prn_lay1_k<T> K;
    const int G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
    const size_t S = kind == PRN_RNN_LSTM ? 2 : 1, V = kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4;
    const size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    const T *x = xp + b * TT * G;
    T wr[4], xr[K::D][4];
    prn_lay_in<T> in;
#pragma unroll
    for (int g = 0; g < 4; ++g) {
        wr[g] = g < G ? w[g] : (T)0;
        in.b[g] = g < G ? bias[g] : (T)0;
    }
    in.h = s0[b * S];
    in.c = S > 1 ? s0[b * S + 1] : (T)0;
#pragma unroll
    for (int k = 0; k < (int)K::D; ++k) /* the ring: step k in slot k */
        if ((size_t)k < TT) prn_lay_fetch_x((size_t)1, kind, 0, x + (rev ? TT - 1 - k : k) * G, xr[k]);
    for (size_t s = 0; s < TT; s += K::D) {
#pragma unroll
        for (int k = 0; k < (int)K::D; ++k) {
            const size_t step = s + k, t = rev ? TT - 1 - step : step, row = b * TT + t;
            if (step >= TT) break;
            T q[4], cn = 0;
#pragma unroll
            for (int g = 0; g < 4; ++g) {
                in.x[g] = xr[k][g];
                q[g] = prn_lay1_dot(wr + g, &in.h, 1);
            }
            if (step + K::D < TT) /* the slot's next step */
                prn_lay_fetch_x((size_t)1, kind, 0, x + (rev ? t - K::D : t + K::D) * G, xr[k]);
            in.h = prn_lay_cell_fwd((size_t)1, kind, relu, 0, in, q, states + row * S,
                                    saved ? saved + row * V : (T *)NULL, cn);
            in.c = cn;
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(PRN_LAY1_TPB)
    k_lay1_bwd(size_t B, size_t TT, int kind, int relu, int rev, const T *g, const T *w, const T *s0,
               const T *states, const T *saved, T *dxp, T *dq, T *ds0) {
    typedef prn_lay1_k<T> K;
    const int G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
    const size_t S = kind == PRN_RNN_LSTM ? 2 : 1;
    const size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B) return;
    T wr[4], ch = 0, cc = 0;
    prn_lay_bin<T> ring[K::D];
#pragma unroll
    for (int m = 0; m < 4; ++m) wr[m] = m < G ? w[m] : (T)0; /* W_hh's column (P x 1) */
#pragma unroll
    for (int k = 0; k < (int)K::D; ++k)
        if ((size_t)k < TT) prn_lay_fetch_bwd_at(TT, (size_t)1, kind, rev, (size_t)k, b, 0, g, s0, states, saved, ring[k]);
    for (size_t s = 0; s < TT; s += K::D) {
#pragma unroll
        for (int k = 0; k < (int)K::D; ++k) {
            const size_t step = s + k, t = rev ? step : TT - 1 - step, row = b * TT + t;
            if (step >= TT) break;
            T sq[4] = {0, 0, 0, 0}, dh, dc;
            prn_lay_cell_bwd((size_t)1, kind, relu, 0, ring[k], step != 0, ch, cc, dxp + row * G, dq + row * G, sq,
                             (unsigned long long *)NULL, 0, dh, dc);
            if (step + K::D < TT)
                prn_lay_fetch_bwd_at(TT, (size_t)1, kind, rev, step + K::D, b, 0, g, s0, states, saved, ring[k]);
            ch = dh + prn_lay1_dot(wr, sq, G); /* d h_prev: the cell's part, then dq W_hh */
            cc = dc;
        }
    }
    ds0[b * S] = ch;
    if (S > 1) ds0[b * S + 1] = cc;
}

extern "C" int prn_cu_rnn_cell_fwd(cudaStream_t st, int f64, int kind, int relu, size_t B, size_t H, size_t k,
                                   const prn_cu_rows *rows, const void *xp, const void *q, const void *bias,
                                   const void *s, void *next, void *saved) {
    if (B * H == 0) return 0;
    if (f64)
        k_cell_fwd<double><<<prn_grid(B * H, PRN_TPB), PRN_TPB, 0, st>>>(
            B, H, k, kind, relu, *rows, (const double *)xp, (const double *)q, (const double *)bias,
            (const double *)s, (double *)next, (double *)saved);
    else
        k_cell_fwd<float><<<prn_grid(B * H, PRN_TPB), PRN_TPB, 0, st>>>(
            B, H, k, kind, relu, *rows, (const float *)xp, (const float *)q, (const float *)bias, (const float *)s,
            (float *)next, (float *)saved);
    return prn_launched();
}

extern "C" int prn_cu_rnn_cell_bwd(cudaStream_t st, int f64, int kind, int relu, size_t B, size_t H, size_t k,
                                   const prn_cu_rows *rows, const void *g, const void *carry, const void *s,
                                   const void *next, const void *saved, void *dxp, void *dq, void *ds) {
    if (B * H == 0) return 0;
    if (f64)
        k_cell_bwd<double><<<prn_grid(B * H, PRN_TPB), PRN_TPB, 0, st>>>(
            B, H, k, kind, relu, *rows, (const double *)g, (const double *)carry, (const double *)s,
            (const double *)next, (const double *)saved, (double *)dxp, (double *)dq, (double *)ds);
    else
        k_cell_bwd<float><<<prn_grid(B * H, PRN_TPB), PRN_TPB, 0, st>>>(
            B, H, k, kind, relu, *rows, (const float *)g, (const float *)carry, (const float *)s,
            (const float *)next, (const float *)saved, (float *)dxp, (float *)dq, (float *)ds);
    return prn_launched();
}

/* ---- The persistent layer's plan ----
 * ks: threads per dot product, from the dot's length n (H forward, G H
 * backward) and the dtype alone (it fixes the order of the sums): about
 * four 16-byte vectors per thread, 1 to 16 threads. */
static unsigned prn_lay_ks(size_t n, size_t es) {
    size_t ks = prn_cdiv(n, 32) * 32 / (16 / es) / 4, p = 1;
    while (p < ks && p < 16) p *= 2;
    return (unsigned)p;
}

/* Shared memory of a block: its W slice, the staged h (dq), the partial sums. */
static size_t prn_lay_smem(int bwd, size_t G, size_t H, size_t es, size_t u, size_t bgp, unsigned ks) {
    const size_t n = bwd ? G * H : H, hs = prn_cdiv(n, 32) * 32, ws = hs + (16 / es * ks) % (128 / es);
    const size_t rows = bwd ? u : G * u;
    return es * (rows * ws + bgp * hs + bgp * rows * ks);
}

/* Blocks of the kernel per multiprocessor with smem bytes of dynamic
 * shared memory (0 where it cannot launch). The kernel's opt-in is always
 * set to smax, the device's limit: one value for every context and host
 * thread, so that none lowers it under another's launch. */
template <typename T, int RB> static int prn_lay_occupancy(int bwd, int threads, size_t smem, size_t smax) {
    int n = 0;
    cudaError_t e;
    if (bwd) {
        e = cudaFuncSetAttribute(k_lay_bwd<T, RB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smax);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_lay_bwd<T, RB>, threads, smem);
    } else {
        e = cudaFuncSetAttribute(k_lay_fwd<T, RB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smax);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k_lay_fwd<T, RB>, threads, smem);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
static int prn_lay_occ(int f64, int rb, int bwd, int threads, size_t smem, size_t smax) {
    return f64 ? (rb == 1 ? prn_lay_occupancy<double, 1>(bwd, threads, smem, smax)
                          : prn_lay_occupancy<double, 4>(bwd, threads, smem, smax))
               : (rb == 1 ? prn_lay_occupancy<float, 1>(bwd, threads, smem, smax)
                          : prn_lay_occupancy<float, 4>(bwd, threads, smem, smax));
}

/* Picks ns (slices) and bg (sequences per block) by an estimate of a
 * step's cycles on one multiprocessor: the dot products bound by shared
 * memory's 128 bytes per cycle (each W vector serves rb sequences: up to
 * 128 f32 / 64 f64 FMAs per cycle), PRN_LAY_C1 cycles of cell, barriers
 * and latency, and with ns > 1 the step barrier and the staging of h (dq)
 * from L2 (PRN_LAY_CB + PRN_LAY_CBB per block of the grid: fence, atomic,
 * polls and loads, each an L2 round trip), so a layer that fits one
 * block's shared memory stays in one block per group unless the dots are
 * long. Groups that cannot run at once multiply it (ns = 1 only; with
 * ns > 1 every block must be resident). Blocks per multiprocessor: the
 * kernel's limit without shared memory (threads, registers) and the
 * multiprocessor's shared memory (the opt-in limit + the 1 KiB the runtime
 * reserves per block, as on sm_80 and sm_90); the chosen plan is checked
 * with the runtime's occupancy.
 * The constants, from the H200's run 2 (bench/results/gpu_check_nvidia-
 * h200_2026-11-27_run2, T = 1000, f32, B = 1, 1.8 cycles a ns). The
 * one-block steps took 4500 (GRU H 64) to 8800 (GRU H 128) cycles: 3000 +
 * 0.12 a multiply-add, four times the shared-memory bound -- the walk's
 * 64-bit divisions (three per dot, ~150 cycles each) made the dots
 * issue-bound -- with the x and state loads' DRAM / L2 round trips exposed
 * in each step. The slice plans' steps (LSTM H 128, 16 slices: 6500; GRU
 * H 256, 26: 6800; LSTM H 256, 32: 7300; GRU H 512, 47: 8700; LSTM H 512,
 * 57: 9200) fit 5670 + 0.12 a multiply-add + 21 a block within 5%. Those
 * divisions are gone (prn_lay_walk) and the loads run a step ahead, so the
 * dots are taken at the bound above, the one-block step's rest at C1 =
 * 1200 (the cell's chain: partial sums, exp, tanh, IEEE divisions, two
 * barriers; an estimate), and the barrier's at CB = 5670 - C1 - ~1000 (the
 * cell's and staging's divisions, gone) = 3500, CBB = 20 a block. At the
 * measured sizes this keeps one block wherever W_hh fits (GRU H <= 128,
 * LSTM H <= 64 in f32) and takes somewhat fewer slices than before (LSTM
 * H 128: 10 instead of 16; GRU H 512: 32 instead of 47). Refit from the
 * next run (bench_rnn at T = 1000, B = 1, per plan). f32 slice plans use
 * the tagged exchange instead of the barrier: PRN_LAY_CT. */
#define PRN_LAY_C1 1200.0
#define PRN_LAY_CB 3500.0
/* f32 slices exchange tagged words instead (prn_lay_put): one L2 round
 * trip for the producer's store and one for the polls, ~700 cycles each,
 * no fence or atomic -- an estimate, unmeasured */
#define PRN_LAY_CT 1500.0
#define PRN_LAY_CBB 20.0
extern "C" int prn_cu_rnn_layer_plan(int f64, int kind, int bwd, size_t B, size_t T, size_t H, int sm_count,
                                     size_t smem_optin, unsigned min_slices, int blocks_only, prn_cu_layer_plan *pl) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, es = f64 ? 8 : 4;
    const size_t n = bwd ? G * H : H, nr = prn_cdiv(n, 32) * 32;
    const unsigned ks = prn_lay_ks(n, es);
    const size_t smax = smem_optin < 48 * 1024 ? 48 * 1024 : smem_optin;
    size_t resident = (size_t)-1, ns;
    double best = 0;
    int found = 0, occ0[2];
    if (kind == PRN_RNN_MHGRU || !B || !T || !H || H > 4096 || sm_count < 1) return 0;
    pl->path = 0;
    /* H = 1: a thread per sequence (k_lay1_*) wherever the slices are not
     * forced. It is faster than any block plan at every B: a block plan's
     * step is a chain of two or three barriers, shared-memory round trips
     * and ks partial sums (about 2500 cycles a step forward on the H200, run 2),
     * the thread's step only the cell's arithmetic (a few hundred cycles);
     * B threads fill the device no worse than B / bg blocks would. Its dot
     * order is the block plans' for ks = prn_lay1_k<T>::KS, which
     * prn_lay_ks gives for every dot of length <= 32. */
    if (H == 1 && !blocks_only && min_slices <= 1 && prn_lay_ks(bwd ? G : 1, es) == (f64 ? 4u : 2u) &&
        prn_cdiv(B, PRN_LAY1_TPB) <= 0x7fffffff) {
        memset(pl, 0, sizeof *pl);
        pl->path = 1;
        pl->ns = pl->u = 1;
        pl->bg = 1;
        pl->nbg = (unsigned)(B > 0xffffffffu ? 0xffffffffu : B);
        pl->grid = (unsigned)prn_cdiv(B, PRN_LAY1_TPB);
        pl->threads = PRN_LAY1_TPB;
        pl->ks = ks;
        pl->rb = 1;
        pl->smem_max = smax;
        pl->scratch = 256;
        return 1;
    }
    occ0[0] = prn_lay_occ(f64, 1, bwd, PRN_LAY_NT, 0, smax); /* at the most threads: a lower bound */
    occ0[1] = prn_lay_occ(f64, 4, bwd, PRN_LAY_NT, 0, smax);
#ifdef PRN_CUDA_EMU
    resident = (size_t)prn_cuda_emu_resident(); /* the emulator's blocks at once */
#endif
    for (ns = 1; ns <= H && ns <= 1024; ++ns) {
        const size_t u = prn_cdiv(H, ns), rows = bwd ? u : G * u;
        size_t bg;
        if (prn_cdiv(H, u) != ns || ns < min_slices) continue; /* the same slices as a smaller ns */
        if (ns > 1 && (double)ns * (double)T >= 4.0e9) continue; /* the barrier's 32-bit counter */
        for (bg = 1; bg <= B && bg <= 64; bg = bg < 4 ? bg + 1 : bg + 4 > B && bg < B ? B : bg + 4) {
            /* bg: 1 to 4, then fours (rb = 4 per register pass), and B itself */
            const int rb = bg == 1 ? 1 : 4;
            const size_t bgp = prn_cdiv(bg, rb) * rb, nbg = prn_cdiv(B, bg), smem = prn_lay_smem(bwd, G, H, es, u, bgp, ks);
            if (smem > smax) break; /* a larger bg only needs more */
            const size_t by_smem = (smax + 1024) / (smem + 1024);
            size_t cap = prn_min((size_t)occ0[rb != 1], by_smem) * (size_t)sm_count;
            if (cap > resident) cap = resident;
            if (cap < 1 || (ns > 1 && ns * nbg > cap)) continue;
            const double rate = (double)(f64 ? 16 : 32) * (double)rb;
            double cyc = (double)(rows * nr * bgp) / rate + PRN_LAY_C1;
            if (ns > 1) cyc += (f64 ? PRN_LAY_CB : PRN_LAY_CT) + PRN_LAY_CBB * (double)(ns * nbg) + (double)(bgp * n * es) / 32;
            if (ns == 1) cyc *= (double)prn_cdiv(nbg, cap);
            if (!found || cyc < best) {
                /* threads: the dots' (ks per dot) or the cells', in warps, up to PRN_LAY_NT */
                const size_t dots = rows * (bgp / rb) * ks, work = prn_min(dots > bg * u ? dots : bg * u, PRN_LAY_NT);
                const size_t groups = ns == 1 ? prn_min(nbg, prn_min(cap, PRN_MAX_GRID)) : nbg;
                found = 1;
                best = cyc;
                pl->ns = (unsigned)ns;
                pl->u = (unsigned)u;
                pl->bg = (unsigned)bg;
                pl->nbg = (unsigned)nbg;
                pl->grid = (unsigned)(ns * groups);
                pl->threads = (unsigned)prn_cdiv(work, 32) * 32;
                pl->ks = ks;
                pl->rb = (unsigned)rb;
                pl->smem = smem;
                pl->smem_max = smax;
                pl->scratch = 256 * prn_cdiv(nbg * 4, 256) + (bwd ? 2 * B * (kind == PRN_RNN_LSTM ? 2 : 1) * H * es : 0);
                pl->xtag = ns > 1 && !f64; /* the tagged exchange's two rows of 64-bit words a sequence */
                pl->scratch += pl->xtag ? 2 * B * (bwd ? G * H : H) * 8 : 0;
            }
        }
    }
    if (found) { /* the runtime's word: every block of a group resident at once */
        const int occ = prn_lay_occ(f64, (int)pl->rb, bwd, (int)pl->threads, pl->smem, smax);
        if (occ < 1 || (pl->ns > 1 && (size_t)occ * (size_t)sm_count < pl->grid)) return 0;
    }
    return found;
}

extern "C" int prn_cu_rnn_layer_fwd(cudaStream_t st, int f64, int kind, int relu, int rev, size_t B, size_t TT, size_t H,
                                    const prn_cu_layer_plan *pl, const void *xp, const void *w, const void *bias,
                                    const void *s0, void *states, void *saved, void *scratch) {
    if (B * TT * H == 0) return 0;
    if (pl->path == 1) {
        const unsigned grid1 = pl->grid;
        if (f64)
            k_lay1_fwd<double><<<grid1, PRN_LAY1_TPB, 0, st>>>(B, TT, kind, relu, rev, (const double *)xp,
                                                                 (const double *)w, (const double *)bias,
                                                                 (const double *)s0, (double *)states, (double *)saved);
        else
            k_lay1_fwd<float><<<grid1, PRN_LAY1_TPB, 0, st>>>(B, TT, kind, relu, rev, (const float *)xp,
                                                                (const float *)w, (const float *)bias,
                                                                (const float *)s0, (float *)states, (float *)saved);
        return prn_launched();
    }
    unsigned *cnt = (unsigned *)scratch;
    const size_t zeroed = 256 * prn_cdiv(pl->nbg * 4, 256);
    unsigned long long *xb = pl->xtag ? (unsigned long long *)((char *)scratch + zeroed) : NULL;
    cudaError_t e = cudaMemsetAsync(cnt, 0, zeroed + (pl->xtag ? 2 * B * H * 8 : 0), st); /* the counters, the tags */
    if (e != cudaSuccess) return (int)e;
    prn_cu_layer_plan L = *pl; /* (not const: the cooperative launch takes void pointers) */
#define PRN_LAY_FWD(R, RB)                                                                                         \
    do {                                                                                                           \
        const R *a0 = (const R *)xp, *a1 = (const R *)w, *a2 = (const R *)bias, *a3 = (const R *)s0;              \
        R *a4 = (R *)states, *a5 = (R *)saved;                                                                     \
        void *args[] = {&B, &TT, &H, &kind, &relu, &rev, &L, &a0, &a1, &a2, &a3, &a4, &a5, &cnt, &xb};             \
        e = cudaFuncSetAttribute(k_lay_fwd<R, RB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.smem_max);  \
        if (e != cudaSuccess) return (int)e;                                                                       \
        if (L.ns > 1) /* blocks that wait for each other: all resident, or the launch fails */                    \
            return (int)cudaLaunchCooperativeKernel(k_lay_fwd<R, RB>, dim3(L.grid), dim3(L.threads), args, L.smem, \
                                                    st);                                                           \
        k_lay_fwd<R, RB><<<L.grid, L.threads, L.smem, st>>>(B, TT, H, kind, relu, rev, L, a0, a1, a2, a3, a4, a5,  \
                                                            cnt, xb);                                              \
    } while (0)
    if (f64 && L.rb == 1) PRN_LAY_FWD(double, 1);
    else if (f64) PRN_LAY_FWD(double, 4);
    else if (L.rb == 1) PRN_LAY_FWD(float, 1);
    else PRN_LAY_FWD(float, 4);
#undef PRN_LAY_FWD
    return prn_launched();
}

extern "C" int prn_cu_rnn_layer_bwd(cudaStream_t st, int f64, int kind, int relu, int rev, size_t B, size_t TT, size_t H,
                                    const prn_cu_layer_plan *pl, const void *g, const void *w, const void *s0,
                                    const void *states, const void *saved, void *dxp, void *dq, void *ds0,
                                    void *scratch) {
    if (B * TT * H == 0) return 0;
    if (pl->path == 1) {
        const unsigned grid1 = pl->grid;
        if (f64)
            k_lay1_bwd<double><<<grid1, PRN_LAY1_TPB, 0, st>>>(
                B, TT, kind, relu, rev, (const double *)g, (const double *)w, (const double *)s0,
                (const double *)states, (const double *)saved, (double *)dxp, (double *)dq, (double *)ds0);
        else
            k_lay1_bwd<float><<<grid1, PRN_LAY1_TPB, 0, st>>>(
                B, TT, kind, relu, rev, (const float *)g, (const float *)w, (const float *)s0, (const float *)states,
                (const float *)saved, (float *)dxp, (float *)dq, (float *)ds0);
        return prn_launched();
    }
    const size_t zeroed = 256 * prn_cdiv(pl->nbg * 4, 256), cs = 2 * B * (kind == PRN_RNN_LSTM ? 2 : 1) * H * (f64 ? 8 : 4);
    unsigned *cnt = (unsigned *)scratch;
    void *carry = (char *)scratch + zeroed;
    unsigned long long *xb = pl->xtag ? (unsigned long long *)((char *)carry + cs) : NULL; /* (8-byte aligned: cs is) */
    cudaError_t e = cudaMemsetAsync(cnt, 0, zeroed, st);
    if (e == cudaSuccess && xb) {
        const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
        e = cudaMemsetAsync(xb, 0, 2 * B * G * H * 8, st); /* the tags */
    }
    if (e != cudaSuccess) return (int)e;
    prn_cu_layer_plan L = *pl; /* (not const: the cooperative launch takes void pointers) */
#define PRN_LAY_BWD(R, RB)                                                                                         \
    do {                                                                                                           \
        const R *a0 = (const R *)g, *a1 = (const R *)w, *a2 = (const R *)s0, *a3 = (const R *)states;              \
        const R *a4 = (const R *)saved;                                                                            \
        R *a5 = (R *)dxp, *a6 = (R *)dq, *a7 = (R *)ds0, *a8 = (R *)carry;                                         \
        void *args[] = {&B, &TT, &H, &kind, &relu, &rev, &L, &a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &cnt, &a8, &xb}; \
        e = cudaFuncSetAttribute(k_lay_bwd<R, RB>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)L.smem_max);  \
        if (e != cudaSuccess) return (int)e;                                                                       \
        if (L.ns > 1)                                                                                              \
            return (int)cudaLaunchCooperativeKernel(k_lay_bwd<R, RB>, dim3(L.grid), dim3(L.threads), args, L.smem, \
                                                    st);                                                           \
        k_lay_bwd<R, RB><<<L.grid, L.threads, L.smem, st>>>(B, TT, H, kind, relu, rev, L, a0, a1, a2, a3, a4, a5,  \
                                                            a6, a7, cnt, a8, xb);                                  \
    } while (0)
    if (f64 && L.rb == 1) PRN_LAY_BWD(double, 1);
    else if (f64) PRN_LAY_BWD(double, 4);
    else if (L.rb == 1) PRN_LAY_BWD(float, 1);
    else PRN_LAY_BWD(float, 4);
#undef PRN_LAY_BWD
    return prn_launched();
}
