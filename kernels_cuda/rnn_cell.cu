/* rnn_cell.cu - one time step of the gates of the classic cells
 * (rnn_cell_forward / rnn_cell_backward of the table, and each step of
 * rnn_layer_forward / _backward), a thread per (row, unit); layouts as the
 * reference's (parrnn.h), rows `rows` apart (prn_cu_rows), so a layer's
 * steps read and write its [B, T, X] arrays in place. kind is a
 * prn_rnn_kind: ELMAN, LSTM, GRU or MHGRU (gates grouped by head of k). */
#include "common.cuh"

template <typename T> __device__ __forceinline__ T csigm(T x) { return (T)1 / ((T)1 + pexp(-x)); }

template <typename T>
__global__ void k_cell_fwd(size_t B, size_t H, size_t k, int kind, int relu, prn_cu_rows rows, const T *xp, const T *q,
                           const T *bias, const T *s, T *next, T *saved) {
    PRN_FOR(id, B * H) {
        const size_t b = id / H, i = id % H;
        const T *x = xp + b * rows.xp, *qq = q + b * rows.q, *sp = s + b * rows.s;
        T *n = next + b * rows.next;
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
            if (saved) { /* NULL: a layer's forward without a backward */
                T *v = saved + b * rows.saved;
                v[i] = ig; v[H + i] = fg; v[2 * H + i] = gg; v[3 * H + i] = og; v[4 * H + i] = tc;
            }
        } else {
            const size_t jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
            const T r = csigm(x[jr] + qq[jr] + bias[jr]), z = csigm(x[jz] + qq[jz] + bias[jz]);
            const T hn = qq[jn] + bias[jn], nn = ptanh(x[jn] + r * hn);
            n[i] = nn + z * (sp[i] - nn);
            if (saved) {
                T *v = saved + b * rows.saved;
                v[i] = r; v[H + i] = z; v[2 * H + i] = nn; v[3 * H + i] = hn;
            }
        }
    }
}

template <typename T>
__global__ void k_cell_bwd(size_t B, size_t H, size_t k, int kind, int relu, prn_cu_rows rows, const T *g,
                           const T *carry, const T *s, const T *next, const T *saved, T *dxp, T *dq, T *ds) {
    const size_t S = kind == PRN_RNN_LSTM ? 2 * H : H;
    PRN_FOR(id, B * H) {
        const size_t b = id / H, i = id % H;
        const T *gb = g + b * rows.g, *cb = carry ? carry + b * S : NULL, *sp = s + b * rows.s;
        const T *n = next + b * rows.next;
        T *dx = dxp + b * rows.xp, *dqq = dq + b * rows.q, *d = ds + b * S;
        /* d loss / d next: this step's gradient plus what later steps sent back */
        const T g0 = cb ? gb[i] + cb[i] : gb[i];
        if (kind == PRN_RNN_ELMAN) {
            const T dp = relu ? (n[i] > 0 ? g0 : (T)0) : g0 * ((T)1 - n[i] * n[i]);
            dx[i] = dp; dqq[i] = dp; d[i] = 0;
        } else if (kind == PRN_RNN_LSTM) {
            const T *v = saved + b * rows.saved;
            const T ig = v[i], fg = v[H + i], gt = v[2 * H + i], og = v[3 * H + i], tc = v[4 * H + i];
            const T gh = g0, dc = (cb ? gb[H + i] + cb[H + i] : gb[H + i]) + gh * og * ((T)1 - tc * tc);
            const T di = dc * gt * ig * ((T)1 - ig), df = dc * sp[H + i] * fg * ((T)1 - fg);
            const T dg = dc * ig * ((T)1 - gt * gt), dO = gh * tc * og * ((T)1 - og);
            dx[i] = di; dqq[i] = di; dx[H + i] = df; dqq[H + i] = df;
            dx[2 * H + i] = dg; dqq[2 * H + i] = dg; dx[3 * H + i] = dO; dqq[3 * H + i] = dO;
            d[i] = 0; d[H + i] = dc * fg;
        } else {
            const T *v = saved + b * rows.saved;
            const size_t jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
            const T r = v[i], z = v[H + i], nn = v[2 * H + i], hn = v[3 * H + i], gu = g0;
            const T dpn = (gu - gu * z) * ((T)1 - nn * nn);
            const T dpr = dpn * hn * r * ((T)1 - r), dpz = gu * (sp[i] - nn) * z * ((T)1 - z);
            dx[jr] = dpr; dqq[jr] = dpr; dx[jz] = dpz; dqq[jz] = dpz;
            dx[jn] = dpn; dqq[jn] = dpn * r;
            d[i] = gu * z;
        }
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
