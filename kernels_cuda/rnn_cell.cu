/* rnn_cell.cu - one time step of the gates of the classic cells
 * (rnn_cell_forward / rnn_cell_backward of the table, and each step of
 * rnn_layer_forward / _backward), a thread per (row, unit); layouts as the
 * reference's (parrnn.h), rows `rows` apart (prn_cu_rows), so a layer's
 * steps read and write its [B, T, X] arrays in place. kind is a
 * prn_rnn_kind: ELMAN, LSTM, GRU or MHGRU (gates grouped by head of k). */
#include "common.cuh"

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

/* ---- A whole layer in one launch (small H: P = G H <= PRN_LAYER_PMAX) ----
 * A block per sequence (grid-stride over the batch): the sequences are
 * independent, so no block waits for another. Per step, the block forms
 * the hidden projection q = W_hh h_prev (thread p: row p of W_hh, q in
 * shared memory), meets a barrier, runs the cell (thread i: unit i), and
 * meets another; the state after the step is the layer's states row, which
 * the next step reads (a barrier makes the block's global writes visible
 * to it). The backward, last step first: the cell's backward (thread i),
 * then d h_prev += dq W_hh (thread m: column m, coalesced), the carry
 * double-buffered in shared memory. Two launches per step become one per
 * layer; W_hh (G H^2 values) is read from L1/L2 each step. */
#define PRN_LAYER_PMAX 1024
#define PRN_LAYER_SMAX 512

template <typename T>
__global__ void __launch_bounds__(PRN_LAYER_PMAX)
    k_layer_fwd(size_t B, size_t TT, size_t H, int kind, int relu, int rev, const T *xp, const T *w, const T *bias,
                const T *s0, T *states, T *saved) {
    __shared__ T sq[PRN_LAYER_PMAX];
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H;
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H, V = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    for (size_t b = blockIdx.x; b < B; b += gridDim.x) {
        for (size_t step = 0; step < TT; ++step) {
            const size_t t = rev ? TT - 1 - step : step, row = b * TT + t;
            const T *prev = step ? states + (b * TT + (rev ? t + 1 : t - 1)) * S : s0 + b * S;
            for (size_t p = tid; p < P; p += nt) {
                const T *wr = w + p * H;
                T acc = 0;
                for (size_t m = 0; m < H; ++m) acc += prev[m] * wr[m];
                sq[p] = acc;
            }
            __syncthreads();
            for (size_t i = tid; i < H; i += nt)
                prn_cell_fwd_unit(H, H, kind, relu, i, xp + row * P, (const T *)sq, bias, prev, states + row * S,
                                  saved ? saved + row * V : (T *)NULL);
            __syncthreads();
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(PRN_LAYER_PMAX)
    k_layer_bwd(size_t B, size_t TT, size_t H, int kind, int relu, int rev, const T *g, const T *w, const T *s0,
                const T *states, const T *saved, T *dxp, T *dq, T *ds0) {
    __shared__ T sc[2 * PRN_LAYER_SMAX];
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H;
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H, V = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
    const unsigned tid = threadIdx.x, nt = blockDim.x;
    for (size_t b = blockIdx.x; b < B; b += gridDim.x) {
        for (size_t step = 0; step < TT; ++step) {
            const size_t t = rev ? step : TT - 1 - step, row = b * TT + t;
            const T *prev = step == TT - 1 ? s0 + b * S : states + (b * TT + (rev ? t + 1 : t - 1)) * S;
            const T *cb = step ? sc + ((step - 1) & 1) * PRN_LAYER_SMAX : (const T *)NULL;
            T *out = sc + (step & 1) * PRN_LAYER_SMAX;
            for (size_t i = tid; i < H; i += nt)
                prn_cell_bwd_unit(H, H, kind, relu, i, g + row * S, cb, prev, states + row * S,
                                  saved ? saved + row * V : (const T *)NULL, dxp + row * P, dq + row * P, out);
            __syncthreads();
            /* and through q = W_hh h_prev: d h_prev += dq_t W_hh */
            for (size_t m = tid; m < H; m += nt) {
                const T *dr = dq + row * P;
                T acc = 0;
                for (size_t p = 0; p < P; ++p) acc += dr[p] * w[p * H + m];
                out[m] += acc;
            }
            __syncthreads();
        }
        for (size_t j = tid; j < S; j += nt) ds0[b * S + j] = sc[((TT - 1) & 1) * PRN_LAYER_SMAX + j];
        __syncthreads(); /* sc is the next sequence's */
    }
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

extern "C" int prn_cu_rnn_layer_fits(int kind, size_t H) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
    return kind != PRN_RNN_MHGRU && H >= 1 && G * H <= PRN_LAYER_PMAX && (kind == PRN_RNN_LSTM ? 2 : 1) * H <= PRN_LAYER_SMAX;
}

/* threads: enough for the projection's rows (forward) or the units, in warps */
static unsigned prn_layer_threads(size_t n) {
    size_t t = (n + 31) / 32 * 32;
    return (unsigned)(t > PRN_LAYER_PMAX ? PRN_LAYER_PMAX : t < 32 ? 32 : t);
}

extern "C" int prn_cu_rnn_layer_fwd(cudaStream_t st, int f64, int kind, int relu, int rev, size_t B, size_t TT, size_t H,
                                    const void *xp, const void *w, const void *bias, const void *s0, void *states,
                                    void *saved) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
    if (B * TT * H == 0) return 0;
    if (!prn_cu_rnn_layer_fits(kind, H)) return (int)cudaErrorInvalidValue;
    const unsigned grid = (unsigned)prn_min(B, PRN_MAX_GRID), nt = prn_layer_threads(G * H);
    if (f64)
        k_layer_fwd<double><<<grid, nt, 0, st>>>(B, TT, H, kind, relu, rev, (const double *)xp, (const double *)w,
                                                 (const double *)bias, (const double *)s0, (double *)states,
                                                 (double *)saved);
    else
        k_layer_fwd<float><<<grid, nt, 0, st>>>(B, TT, H, kind, relu, rev, (const float *)xp, (const float *)w,
                                                (const float *)bias, (const float *)s0, (float *)states,
                                                (float *)saved);
    return prn_launched();
}

extern "C" int prn_cu_rnn_layer_bwd(cudaStream_t st, int f64, int kind, int relu, int rev, size_t B, size_t TT, size_t H,
                                    const void *g, const void *w, const void *s0, const void *states, const void *saved,
                                    void *dxp, void *dq, void *ds0) {
    if (B * TT * H == 0) return 0;
    if (!prn_cu_rnn_layer_fits(kind, H)) return (int)cudaErrorInvalidValue;
    const unsigned grid = (unsigned)prn_min(B, PRN_MAX_GRID), nt = prn_layer_threads(kind == PRN_RNN_LSTM ? 2 * H : H);
    if (f64)
        k_layer_bwd<double><<<grid, nt, 0, st>>>(B, TT, H, kind, relu, rev, (const double *)g, (const double *)w,
                                                 (const double *)s0, (const double *)states, (const double *)saved,
                                                 (double *)dxp, (double *)dq, (double *)ds0);
    else
        k_layer_bwd<float><<<grid, nt, 0, st>>>(B, TT, H, kind, relu, rev, (const float *)g, (const float *)w,
                                                (const float *)s0, (const float *)states, (const float *)saved,
                                                (float *)dxp, (float *)dq, (float *)ds0);
    return prn_launched();
}
