/* One time step of the gates of the classic cells (rnn_gates_forward and
 * rnn_gates_backward of the table), one work-item per (row, unit). kind:
 * 0 Elman, 1 LSTM, 2 and 3 GRU (gates grouped by head of k units). The
 * layouts are the reference's (parrnn.h, prn__ref_rnn_gates_forward). */
#define CELL_ELMAN 0
#define CELL_LSTM 1

real cell_sigm(real x) { return (real)1 / ((real)1 + exp(-x)); }

__kernel void rnn_cell_fwd(ulong B, ulong H, ulong k, int kind, int relu, __global const real *xp,
                           __global const real *q, __global const real *bias, __global const real *s,
                           __global real *next, __global real *saved) {
    ulong id = get_global_id(0), b = id / H, i = id % H;
    ulong G = kind == CELL_LSTM ? 4 : kind == CELL_ELMAN ? 1 : 3, P = G * H, S = kind == CELL_LSTM ? 2 * H : H;
    __global const real *x = xp + b * P, *qq = q + b * P, *sp = s + b * S;
    __global real *n = next + b * S;
    if (id >= B * H) return;
    if (kind == CELL_ELMAN) {
        real p = x[i] + qq[i] + bias[i];
        n[i] = relu ? (p > 0 ? p : (real)0) : tanh(p);
    } else if (kind == CELL_LSTM) {
        __global real *v = saved + b * 5 * H;
        real ig = cell_sigm(x[i] + qq[i] + bias[i]), fg = cell_sigm(x[H + i] + qq[H + i] + bias[H + i]);
        real gg = tanh(x[2 * H + i] + qq[2 * H + i] + bias[2 * H + i]);
        real og = cell_sigm(x[3 * H + i] + qq[3 * H + i] + bias[3 * H + i]);
        real c = fg * sp[H + i] + ig * gg, tc = tanh(c);
        n[i] = og * tc;
        n[H + i] = c;
        v[i] = ig; v[H + i] = fg; v[2 * H + i] = gg; v[3 * H + i] = og; v[4 * H + i] = tc;
    } else {
        __global real *v = saved + b * 4 * H;
        ulong jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
        real r = cell_sigm(x[jr] + qq[jr] + bias[jr]), z = cell_sigm(x[jz] + qq[jz] + bias[jz]);
        real hn = qq[jn] + bias[jn], nn = tanh(x[jn] + r * hn);
        n[i] = nn + z * (sp[i] - nn);
        v[i] = r; v[H + i] = z; v[2 * H + i] = nn; v[3 * H + i] = hn;
    }
}

__kernel void rnn_cell_bwd(ulong B, ulong H, ulong k, int kind, int relu, __global const real *g,
                           __global const real *s, __global const real *next, __global const real *saved,
                           __global real *dxp, __global real *dq, __global real *ds) {
    ulong id = get_global_id(0), b = id / H, i = id % H;
    ulong G = kind == CELL_LSTM ? 4 : kind == CELL_ELMAN ? 1 : 3, P = G * H, S = kind == CELL_LSTM ? 2 * H : H;
    __global const real *gg = g + b * S, *sp = s + b * S, *n = next + b * S;
    __global real *dx = dxp + b * P, *dqq = dq + b * P, *d = ds + b * S;
    if (id >= B * H) return;
    if (kind == CELL_ELMAN) {
        real dp = relu ? (n[i] > 0 ? gg[i] : (real)0) : gg[i] * ((real)1 - n[i] * n[i]);
        dx[i] = dp; dqq[i] = dp; d[i] = 0;
    } else if (kind == CELL_LSTM) {
        __global const real *v = saved + b * 5 * H;
        real ig = v[i], fg = v[H + i], gt = v[2 * H + i], og = v[3 * H + i], tc = v[4 * H + i];
        real gh = gg[i], dc = gg[H + i] + gh * og * ((real)1 - tc * tc);
        real di = dc * gt * ig * ((real)1 - ig), df = dc * sp[H + i] * fg * ((real)1 - fg);
        real dg = dc * ig * ((real)1 - gt * gt), dO = gh * tc * og * ((real)1 - og);
        dx[i] = di; dqq[i] = di; dx[H + i] = df; dqq[H + i] = df;
        dx[2 * H + i] = dg; dqq[2 * H + i] = dg; dx[3 * H + i] = dO; dqq[3 * H + i] = dO;
        d[i] = 0; d[H + i] = dc * fg;
    } else {
        __global const real *v = saved + b * 4 * H;
        ulong jr = (i / k) * 3 * k + i % k, jz = jr + k, jn = jr + 2 * k;
        real r = v[i], z = v[H + i], nn = v[2 * H + i], hn = v[3 * H + i], gu = gg[i];
        real dpn = (gu - gu * z) * ((real)1 - nn * nn);
        real dpr = dpn * hn * r * ((real)1 - r), dpz = gu * (sp[i] - nn) * z * ((real)1 - z);
        dx[jr] = dpr; dqq[jr] = dpr; dx[jz] = dpz; dqq[jz] = dpz;
        dx[jn] = dpn; dqq[jn] = dpn * r;
        d[i] = gu * z;
    }
}
