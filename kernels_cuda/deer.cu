/* deer.cu - the fused DEER iteration (the table's deer_iterate) of the
 * built-in cells; the host side and the contract are prn__cu_deer_iterate
 * in backends/parrnn_cuda.h and prn_deer_fused in parrnn.h.
 *
 * A thread takes one (batch row, time segment) task and walks its steps:
 * f and J of step t are made from the iterate (y_{t-1}, xp_t), used for
 * the residual and the linear recurrence, and forgotten, so no Jacobian
 * ever reaches global memory. A row's T steps are cut into C segments of
 * Ls steps (prn_cu_deer_plan: a function of B, T and S alone), so that
 * B = 16 rows of 1e6 steps still give tens of thousands of threads (one
 * state: a quarter million):
 *   pass 1: each segment from a zero carry: its end state v and the product
 *           M of its A_t = (1 - k) J_t, and the residual;
 *   chain:  per row, the carries into its segments, h0 then v + M carry
 *           (a block per row; one state: a block scan of the maps);
 *   pass 2: each segment again from its true carry, writing ynew.
 * With one segment per row (many rows) a single pass from h0 does all.
 * The register kernels (k_deer_iterx, k_deer_adjx: S = 1, and 2 or 4 where
 * S fixes the cell's sizes) keep every value in registers; the others keep
 * them in shared memory, in a slot of its own per thread (slot i of thread
 * x at i * NT + x: no bank conflicts, no barriers), and the S x S map and
 * the Jacobian bound S by that room (PRN_DZ_SMAX; larger cells take the
 * composed path, prn_cu_deer_takes). Sums run in a fixed order and the
 * residual is a maximum: the result does not depend on the launch. */
#include "common.cuh"

/* per-thread slots: s, carry, f (and a column of M), the new carry, the
 * cell's gate values (3 S), J [S, kb], M [S, S] */
#define PRN_DZ_NV(SM) (7 * (SM) + 2 * (SM) * (SM))
#define PRN_DZ_SMAX 64
/* tasks the plan aims at, and the shortest segment it makes */
#define PRN_DZ_TASKS ((size_t)32768)
#define PRN_DZ_LMIN ((size_t)32)
/* one state (registers, a parallel chain): enough threads to fill an H100
 * (132 x 2048), segments of at least 8 steps (short sequences: more tasks) */
#define PRN_DZ_TASKS1 ((size_t)262144)
#define PRN_DZ_LMIN1 ((size_t)8)

extern "C" void prn_cu_deer_plan(size_t B, size_t T, size_t S, size_t *C, size_t *Ls) {
    const size_t tasks = S == 1 ? PRN_DZ_TASKS1 : PRN_DZ_TASKS, lmin = S == 1 ? PRN_DZ_LMIN1 : PRN_DZ_LMIN;
    size_t c = B ? prn_cdiv(tasks, B) : 1;
    if (c > T / lmin) c = T / lmin;
    if (c < 2) { *C = 1; *Ls = T; return; }
    *Ls = prn_cdiv(T, c);
    *C = prn_cdiv(T, *Ls);
}

/* f64 up to 32 states: 64 would need 69 KB a thread, past the 48 KB of
 * static shared memory a block */
extern "C" int prn_cu_deer_takes(int kind, size_t S, int f64) {
    return kind >= 0 && kind < (int)PRN_RNN_KIND_COUNT && S >= 1 && S <= (f64 ? 32u : (size_t)PRN_DZ_SMAX);
}

template <typename FT> __device__ __forceinline__ FT dz_sig(FT x) { return (FT)1 / ((FT)1 + pexp(-x)); }

/* f (slots F) and J (slots J, row i's kb columns from (i / kb) kb) at the
 * state in slots SP and the projections x [P]. v: this thread's slot 0. */
template <typename FT, int SM, int NT, int KB>
__device__ __forceinline__ void dz_cell(const prn_cu_deer &a, FT *v, const FT *x, FT *dx, FT *dq) {
    /* the adjoint (dx not NULL): lam in slots LM; dx, dq: the row's d f / d xp
     * and d f / d (q + b_hh) of each gate (torch kinds) */
    enum { SP = 0, F = 2 * SM, LM = 3 * SM, Q = 4 * SM, J = 7 * SM };
    /* KB > 0 (the register kernels): S = H = hk = SM and kb = KB, so that
     * every slot index is a constant (not LSTM; MHGRU with one head) */
    const size_t S = KB ? SM : a.S, H = KB ? SM : a.H, kb = KB ? KB : a.kb;
#define DZ(i) v[(size_t)(i) * NT]
    switch (a.kind) {
    case PRN_RNN_GRU:
    case PRN_RNN_MHGRU: {
        const size_t k = KB ? SM : a.hk, nh = H / k;
        const FT *Wh = (const FT *)a.w[0], *bh = (const FT *)a.w[1];
        for (size_t h = 0; h < nh; ++h) {
            const FT *Wg = Wh + h * 3 * k * k;
            for (size_t u = 0; u < 3 * k; ++u) {
                FT q = bh[h * 3 * k + u];
                for (size_t c = 0; c < k; ++c) q += Wg[u * k + c] * DZ(SP + h * k + c);
                DZ(Q + u) = q;
            }
            for (size_t u = 0; u < k; ++u) {
                const size_t row = h * k + u, j0 = row / kb * kb;
                const FT *xh = x + h * 3 * k;
                const FT r = dz_sig(xh[u] + DZ(Q + u)), z = dz_sig(xh[k + u] + DZ(Q + k + u));
                const FT hn = DZ(Q + 2 * k + u), n = ptanh(xh[2 * k + u] + r * hn), d = DZ(SP + row) - n;
                const FT tz = ((FT)1 - z) * ((FT)1 - n * n);
                const FT za = z, aa = d * z * ((FT)1 - z), ba = tz * hn * r * ((FT)1 - r), cc = tz * r;
                DZ(F + row) = n + z * d;
                if (dx) {
                    const FT lm = DZ(LM + row);
                    const size_t g0 = h * 3 * k + u;
                    dx[g0] = dq[g0] = lm * ba;
                    dx[g0 + k] = dq[g0 + k] = lm * aa;
                    dx[g0 + 2 * k] = lm * tz;
                    dq[g0 + 2 * k] = lm * cc;
                }
                for (size_t jj = 0; jj < kb; ++jj) {
                    const size_t j = j0 + jj;
                    size_t c;
                    FT jv;
                    if (kb == 1) c = u;
                    else if (j < h * k || j >= h * k + k) { DZ(J + row * kb + jj) = 0; continue; }
                    else c = j - h * k;
                    {
                        const FT wr = Wg[u * k + c], wz = Wg[(k + u) * k + c], wn = Wg[(2 * k + u) * k + c];
                        if (c == u) jv = za + aa * wz + ba * wr + cc * wn;
                        else jv = aa * wz + ba * wr + cc * wn;
                    }
                    DZ(J + row * kb + jj) = jv;
                }
            }
        }
        break;
    }
    case PRN_RNN_ELMAN: {
        const FT *Wh = (const FT *)a.w[0], *bh = (const FT *)a.w[1];
        for (size_t i = 0; i < H; ++i) {
            FT f = x[i] + bh[i], di;
            for (size_t c = 0; c < H; ++c) f += Wh[i * H + c] * DZ(SP + c);
            if (a.relu) { f = f > 0 ? f : (FT)0; di = f > 0 ? (FT)1 : (FT)0; }
            else { f = ptanh(f); di = (FT)1 - f * f; }
            DZ(F + i) = f;
            if (dx) dx[i] = dq[i] = DZ(LM + i) * di;
            for (size_t jj = 0; jj < kb; ++jj) DZ(J + i * kb + jj) = di * Wh[i * H + (kb == 1 ? i : i / kb * kb + jj)];
        }
        break;
    }
    case PRN_RNN_LSTM: { /* gates i f g o; s = [h, c] */
        const FT *Wh = (const FT *)a.w[0], *bh = (const FT *)a.w[1];
        for (size_t u = 0; u < 4 * H; ++u) {
            FT p = x[u] + bh[u];
            for (size_t c = 0; c < H; ++c) p += Wh[u * H + c] * DZ(SP + c);
            DZ(Q + u) = p;
        }
        for (size_t u = 0; u < H; ++u) {
            const FT ig = dz_sig(DZ(Q + u)), ff = dz_sig(DZ(Q + H + u)), gg = ptanh(DZ(Q + 2 * H + u));
            const FT og = dz_sig(DZ(Q + 3 * H + u)), cp = DZ(SP + H + u), cn = ff * cp + ig * gg, tc = ptanh(cn);
            const FT a1 = gg * ig * ((FT)1 - ig), a2 = cp * ff * ((FT)1 - ff), a3 = ig * ((FT)1 - gg * gg);
            const FT a4 = tc * og * ((FT)1 - og), a5 = og * ((FT)1 - tc * tc), a6 = ff;
            DZ(F + u) = og * tc;
            DZ(F + H + u) = cn;
            if (dx) { /* through c: the h gradient by tanh(c) and the c gradient */
                const FT lh = DZ(LM + u), dc = DZ(LM + H + u) + lh * a5;
                dx[u] = dq[u] = dc * a1;
                dx[H + u] = dq[H + u] = dc * a2;
                dx[2 * H + u] = dq[2 * H + u] = dc * a3;
                dx[3 * H + u] = dq[3 * H + u] = lh * a4;
            }
            for (int half = 0; half < 2; ++half) { /* row u (h), then H + u (c) */
                const size_t i = half ? H + u : u, j0 = i / kb * kb;
                for (size_t jj = 0; jj < kb; ++jj) {
                    const size_t j = kb == 1 ? i : j0 + jj;
                    FT jv;
                    if (j >= H) jv = j - H != u ? (FT)0 : i < H ? a5 * a6 : a6; /* d / d c: diagonal */
                    else {
                        const FT wi = Wh[u * H + j], wf = Wh[(H + u) * H + j], wg = Wh[(2 * H + u) * H + j];
                        if (i >= H) jv = a1 * wi + a2 * wf + a3 * wg;
                        else jv = a4 * Wh[(3 * H + u) * H + j] + a5 * (a1 * wi + a2 * wf + a3 * wg);
                    }
                    DZ(J + i * kb + jj) = jv;
                }
            }
        }
        break;
    }
    case PRN_RNN_PLRNN:
    case PRN_RNN_ALRNN: { /* f = A s + W phi(s) + xp */
        const FT *A = (const FT *)a.w[0], *Wm = (const FT *)a.w[1];
        const int al = a.kind == PRN_RNN_ALRNN;
        const size_t lin = al ? S - a.L : 0;
        for (size_t i = 0; i < S; ++i) {
            FT f = 0;
            for (size_t c = 0; c < S; ++c) {
                const FT sc = DZ(SP + c);
                const FT ph = c < lin ? sc : al ? sc * (sc > 0 ? (FT)1 : (FT)0) : sc > 0 ? sc : (FT)0;
                f += Wm[i * S + c] * ph;
            }
            DZ(F + i) = A[i] * DZ(SP + i) + f + x[i];
            for (size_t jj = 0; jj < kb; ++jj) {
                const size_t j = kb == 1 ? i : i / kb * kb + jj;
                const FT sj = DZ(SP + j), mj = j < lin ? (FT)1 : sj > 0 ? (FT)1 : (FT)0, wv = Wm[i * S + j];
                DZ(J + i * kb + jj) = j == i ? A[i] + wv * mj : wv * mj;
            }
        }
        break;
    }
    default: { /* shallow: f = A s + W1 rho(W2 s + h2) + xp, one hidden unit at a time */
        const size_t Lh = a.L;
        const int clipped = a.kind == PRN_RNN_CLIPPED_SHPLRNN;
        const FT *A = (const FT *)a.w[0], *W1 = (const FT *)a.w[1], *W2 = (const FT *)a.w[2], *h2 = (const FT *)a.w[3];
        for (size_t i = 0; i < S; ++i) {
            DZ(F + i) = 0;
            for (size_t jj = 0; jj < kb; ++jj) DZ(J + i * kb + jj) = (kb == 1 ? i : i / kb * kb + jj) == i ? A[i] : (FT)0;
        }
        for (size_t c = 0; c < Lh; ++c) {
            FT vv = 0, rho, m;
            for (size_t u = 0; u < S; ++u) vv += W2[c * S + u] * DZ(SP + u);
            {
                const FT uu = vv + h2[c];
                if (clipped) {
                    rho = (uu > 0 ? uu : (FT)0) - (vv > 0 ? vv : (FT)0);
                    m = (uu > 0 ? (FT)1 : (FT)0) - (vv > 0 ? (FT)1 : (FT)0);
                } else {
                    rho = uu > 0 ? uu : (FT)0;
                    m = uu > 0 ? (FT)1 : (FT)0;
                }
            }
            for (size_t i = 0; i < S; ++i) {
                const FT w1 = W1[i * Lh + c];
                DZ(F + i) += w1 * rho;
                for (size_t jj = 0; jj < kb; ++jj) {
                    const size_t j = kb == 1 ? i : i / kb * kb + jj;
                    DZ(J + i * kb + jj) += (w1 * W2[c * S + j]) * m;
                }
            }
        }
        for (size_t i = 0; i < S; ++i) DZ(F + i) = A[i] * DZ(SP + i) + DZ(F + i) + x[i];
        break;
    }
    }
#undef DZ
}

/* One task: row b = j / C, segment j % C. pass 0: the only pass (carry
 * h0); 1: zero carry, v and M into tv, the residual; 2: the carry from tv,
 * ynew. *mxo, *nfo (passes 0 and 1): raised to the task's largest residual
 * term, set when one was not finite. */
template <typename FT, int SM, int NT, int KB>
__device__ __forceinline__ void dz_task(const prn_cu_deer &a, int pass, size_t j, FT *v, double *mxo, int *nfo, FT *tv) {
    enum { SP = 0, CY = SM, F = 2 * SM, TMP = 3 * SM, J = 7 * SM, M = 7 * SM + SM * SM };
    const size_t S = KB ? SM : a.S, P = a.P, kb = KB ? KB : a.kb, T = a.T, C = a.C, b = j / C;
    const size_t w0 = (j % C) * a.Ls;
    const size_t w1 = prn_min(T, w0 + a.Ls);
    const FT *XP = (const FT *)a.xp, *Y = (const FT *)a.y, *H0 = (const FT *)a.h0 + b * S;
    FT *YN = (FT *)a.ynew, *tvj = tv ? tv + j * (2 * S + S * S) : NULL;
    const FT one_k = (FT)a.one_k, atol = (FT)a.atol, rtol = (FT)a.rtol, clip = (FT)a.clip;
    const int mapped = pass == 1 && YN != NULL;
    FT mx = 0;
    int nf = 0;
#define DZ(i) v[(size_t)(i) * NT]
    for (size_t i = 0; i < S; ++i) DZ(CY + i) = pass == 0 ? H0[i] : pass == 1 ? (FT)0 : tvj[S + S * S + i];
    if (mapped)
        for (size_t i = 0; i < S * S; ++i) DZ(M + i) = i % (S + 1) == 0 ? (FT)1 : (FT)0;
    for (size_t w = w0; w < w1; ++w) {
        const size_t t = a.rev ? T - 1 - w : w, row = b * T + t;
        const FT *sp = !Y || w == 0 ? H0 : Y + (b * T + (a.rev ? t + 1 : t - 1)) * S;
        for (size_t i = 0; i < S; ++i) DZ(SP + i) = sp[i];
        dz_cell<FT, SM, NT, KB>(a, v, XP + row * P, (FT *)NULL, (FT *)NULL);
        if (pass != 2) {
            const FT *yc = Y ? Y + row * S : H0;
            for (size_t i = 0; i < S; ++i) {
                const FT fv = DZ(F + i), d = yc[i] - fv;
                const FT q = (d < 0 ? -d : d) / (atol + rtol * (fv < 0 ? -fv : fv));
                const FT u = q - q; /* NaN for NaN and Inf */
                mx = q > mx ? q : mx;
                nf |= u != u;
            }
        }
        if (!YN) continue;
        /* y'_t = A (y'_{t-1} - y_{t-1}) + f */
        for (size_t i = 0; i < S; ++i) {
            const size_t j0 = kb == 1 ? i : i / kb * kb;
            FT acc = DZ(F + i);
            for (size_t jj = 0; jj < kb; ++jj) acc += one_k * DZ(J + i * kb + jj) * (DZ(CY + j0 + jj) - DZ(SP + j0 + jj));
            DZ(TMP + i) = acc;
        }
        if (mapped) { /* M = A M, a column at a time through F's slots */
            for (size_t c = 0; c < S; ++c) {
                for (size_t i = 0; i < S; ++i) {
                    const size_t j0 = kb == 1 ? i : i / kb * kb;
                    FT acc = 0;
                    for (size_t jj = 0; jj < kb; ++jj) acc += one_k * DZ(J + i * kb + jj) * DZ(M + (j0 + jj) * S + c);
                    DZ(F + i) = acc;
                }
                for (size_t i = 0; i < S; ++i) DZ(M + i * S + c) = DZ(F + i);
            }
        } else if (pass != 1) {
            FT *yo = YN + row * S;
            for (size_t i = 0; i < S; ++i) {
                FT x = DZ(TMP + i);
                x = x > clip ? clip : x;
                x = x < -clip ? -clip : x;
                yo[i] = x == x ? x : (FT)0;
            }
        }
        for (size_t i = 0; i < S; ++i) DZ(CY + i) = DZ(TMP + i); /* the recurrence carries the unclipped values */
    }
    if (pass != 2) { *mxo = (double)mx > *mxo ? (double)mx : *mxo; *nfo |= nf; }
    if (mapped) {
        for (size_t i = 0; i < S; ++i) tvj[i] = DZ(CY + i);
        for (size_t i = 0; i < S * S; ++i) tvj[S + i] = DZ(M + i);
    }
#undef DZ
}

/* A call's iterations (a.ev = 0, 1, ..) and what decides them on the
 * device, ctl [4]: the last residual made, 1 when it was not finite, the
 * iterations made, 1 once one stopped the call (converged or not
 * finite). Iteration ev's first pass and residual run while none stopped
 * the call (dz_off1); its chain and second pass when it was made and its
 * ynew is wanted, i.e. not converged with the caller discarding it
 * (dz_off2; ctl NULL: the adjoint, always run). The same answer in every
 * thread of a launch; a launch turned off still reaches its barriers. */
__device__ __forceinline__ bool dz_off1(const double *ctl) { return ctl && ctl[3] != 0; }
__device__ __forceinline__ bool dz_off2(const double *ctl, int ev, int discard) {
    return ctl && (ctl[2] != (double)(ev + 1) || (discard && ctl[1] == 0 && ctl[0] <= 1));
}

/* The block's largest residual term and whether one was not finite into
 * res2[2 blockIdx.x], res2[2 blockIdx.x + 1] (a maximum and an OR: exact in
 * any order). Every thread of the block calls it. */
template <int NT>
__device__ __forceinline__ void dz_block_res(double mx, int nf, double *res2) {
    __shared__ double rm[NT], rf[NT];
    rm[threadIdx.x] = mx;
    rf[threadIdx.x] = nf ? 1.0 : 0.0;
    __syncthreads();
    for (unsigned h = NT / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            if (rm[threadIdx.x + h] > rm[threadIdx.x]) rm[threadIdx.x] = rm[threadIdx.x + h];
            if (rf[threadIdx.x + h] > rf[threadIdx.x]) rf[threadIdx.x] = rf[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) { res2[2 * blockIdx.x] = rm[0]; res2[2 * blockIdx.x + 1] = rf[0]; }
}

template <typename FT, int SM, int NT>
__global__ void __launch_bounds__(NT) k_deer_iter(prn_cu_deer a, int pass, double *res2, FT *tv, const double *ctl) {
    __shared__ FT sh[PRN_DZ_NV(SM) * NT];
    FT *v = sh + threadIdx.x;
    double mx = 0;
    int nf = 0;
    const size_t n = (pass == 2 ? dz_off2(ctl, a.ev, a.discard) : dz_off1(ctl)) ? 0 : a.ntask;
    for (size_t j = (size_t)blockIdx.x * NT + threadIdx.x; j < n; j += (size_t)gridDim.x * NT)
        dz_task<FT, SM, NT, 0>(a, pass, j, v, &mx, &nf, tv);
    if (pass != 2) dz_block_res<NT>(mx, nf, res2);
    else __syncthreads(); /* every launch reaches a barrier (the emulator runs one that never does as plain calls) */
}
/* The register kernels (one state; 2 or 4 where S fixes H, hk and kb is 1
 * or S: dz_exact): every value in registers, the slots' indices constants
 * once the loops unroll, so many more threads fit. */
#define PRN_DZ_NT1 128
/* blocks a multiprocessor: what the compiler picks unasked (a minimum of 1
 * would let it take more registers), except one state f64: 7 (up to 73
 * registers), not the 8 it picks (64 and a spill since the control block) */
#define PRN_DZ_ITER_BLOCKS(FT, SM, KB)                                                                   \
    (sizeof(FT) == 4 ? (SM == 1 ? 9 : SM == 2 ? (KB == 2 ? 9 : 7) : (KB == 4 ? 4 : 5))                   \
                     : (SM == 1 ? 7 : SM == 2 ? 5 : (KB == 4 ? 2 : 3)))
template <typename FT, int SM, int KB>
__global__ void __launch_bounds__(PRN_DZ_NT1, PRN_DZ_ITER_BLOCKS(FT, SM, KB)) k_deer_iterx(prn_cu_deer a, int pass, double *res2, FT *tv,
                                                            const double *ctl) {
    FT v[PRN_DZ_NV(SM)];
    double mx = 0;
    int nf = 0;
    const size_t n = (pass == 2 ? dz_off2(ctl, a.ev, a.discard) : dz_off1(ctl)) ? 0 : a.ntask;
    for (size_t j = (size_t)blockIdx.x * PRN_DZ_NT1 + threadIdx.x; j < n; j += (size_t)gridDim.x * PRN_DZ_NT1)
        dz_task<FT, SM, 1, KB>(a, pass, j, v, &mx, &nf, tv);
    if (pass != 2) dz_block_res<PRN_DZ_NT1>(mx, nf, res2);
    else __syncthreads(); /* every launch reaches a barrier (the emulator) */
}

/* S of the register kernels for this call, 0: the shared-memory ones */
static int dz_exact(const prn_cu_deer *a) {
    if (a->S == 1) return 1;
    if ((a->S != 2 && a->S != 4) || a->kind == PRN_RNN_LSTM || (a->kind == PRN_RNN_MHGRU && a->hk != a->H)) return 0;
    return a->kb == 1 || a->kb == a->S ? (int)a->S : 0;
}

/* The carries into each segment of row b, in order: h0, then v + M carry
 * (back: from the last segment to the first, starting from zero). S > 1:
 * a block per row; the row's entries [v, M, carry] come into shared memory
 * a tile of segments at a time (every load of a tile issued together, not
 * one global round trip per segment), thread i < S then makes component i
 * of each carry in turn (one barrier a segment, the carry double
 * buffered), and the tile's carries go back. */
#define PRN_DZ_CHAIN_NT 128
/* 32 KiB a block: at least one segment's entry of 64 states (f32) */
#define PRN_DZ_CHAIN_ROOM (32768 / sizeof(FT))
template <typename FT>
__global__ void __launch_bounds__(PRN_DZ_CHAIN_NT) k_deer_chain(size_t B, size_t C, size_t S, const FT *h0, FT *tv,
                                                                 int back, const double *ctl, int ev, int discard) {
    __shared__ FT tile[PRN_DZ_CHAIN_ROOM], cur[2 * PRN_DZ_SMAX];
    const size_t SS = 2 * S + S * S, K = PRN_DZ_CHAIN_ROOM / SS, x = threadIdx.x;
    const size_t nb = dz_off2(ctl, ev, discard) ? 0 : B;
    for (size_t b = blockIdx.x; b < nb; b += gridDim.x) {
        FT *e = tv + b * C * SS;
        unsigned p = 0;
        if (x < S) cur[x] = back ? (FT)0 : h0[b * S + x];
        for (size_t t0 = 0; t0 < C; t0 += K) {
            const size_t nk = prn_min(K, C - t0), s0 = back ? C - t0 - nk : t0;
            FT *g = e + s0 * SS;
            for (size_t i = x; i < nk * SS; i += PRN_DZ_CHAIN_NT) tile[i] = g[i];
            __syncthreads();
            for (size_t kk = 0; kk < nk; ++kk, p ^= 1) {
                FT *te = tile + (back ? nk - 1 - kk : kk) * SS;
                const FT *cp = cur + p * PRN_DZ_SMAX;
                if (x < S) {
                    FT v = te[x];
                    for (size_t k = 0; k < S; ++k) v += te[S + x * S + k] * cp[k];
                    te[S + S * S + x] = cp[x];
                    cur[(p ^ 1) * PRN_DZ_SMAX + x] = v;
                }
                __syncthreads();
            }
            for (size_t i = x; i < nk * S; i += PRN_DZ_CHAIN_NT) {
                const size_t k = i / S, c = S + S * S + i % S;
                g[k * SS + c] = tile[k * SS + c];
            }
            __syncthreads(); /* the tile is written back before the next one comes in */
        }
    }
    __syncthreads(); /* a barrier in every launch, skipped or not (the emulator) */
}

/* The same for one state, a block per row: thread x composes the maps
 * c -> m c + v of its run of q = C / NT consecutive segments (in chain
 * order), the block scans the runs' maps (a fixed tree: the same bits
 * whatever the launch), and each thread walks its run again from the carry
 * into it, writing the carries. A segment's entry: v, m, carry. */
#define PRN_DZ_CH1_NT 1024
template <typename FT>
__global__ void __launch_bounds__(PRN_DZ_CH1_NT) k_deer_chain1(size_t B, size_t C, const FT *h0, FT *tv, int back,
                                                                const double *ctl, int ev, int discard) {
    __shared__ FT sm[PRN_DZ_CH1_NT], sv[PRN_DZ_CH1_NT];
    const unsigned x = threadIdx.x;
    const size_t q = prn_cdiv(C, PRN_DZ_CH1_NT), k0 = prn_min(C, x * q), k1 = prn_min(C, k0 + q);
    const size_t nb = dz_off2(ctl, ev, discard) ? 0 : B;
    for (size_t b = blockIdx.x; b < nb; b += gridDim.x) {
        FT *e = tv + b * C * 3, m = 1, v = 0, c;
        for (size_t k = k0; k < k1; ++k) {
            const FT *ek = e + (back ? C - 1 - k : k) * 3;
            const FT vk = ek[0], mk = ek[1];
            v = mk * v + vk;
            m = mk * m;
        }
        sm[x] = m;
        sv[x] = v;
        __syncthreads();
        for (unsigned d = 1; d < PRN_DZ_CH1_NT; d <<= 1) { /* inclusive: runs x - 2d + 1 .. x */
            FT pm = 1, pv = 0;
            if (x >= d) { pm = sm[x - d]; pv = sv[x - d]; }
            __syncthreads();
            v = m * pv + v;
            m = m * pm;
            sm[x] = m;
            sv[x] = v;
            __syncthreads();
        }
        c = back ? (FT)0 : h0[b];
        if (x > 0) c = c == 0 ? sv[x - 1] : sm[x - 1] * c + sv[x - 1]; /* no Inf * 0 from a product that overflowed */
        for (size_t k = k0; k < k1; ++k) {
            FT *ek = e + (back ? C - 1 - k : k) * 3;
            const FT vk = ek[0], mk = ek[1];
            ek[2] = c;
            c = mk * c + vk;
        }
        __syncthreads(); /* sm, sv are read before the next row writes them */
    }
    __syncthreads(); /* a barrier in every launch, skipped or not (the emulator) */
}

/* An iteration's residual: the largest of res2's even entries, and 1 when
 * an odd one is (one block: a maximum and an OR, exact in any order), into
 * ctl as dz_off1 says, unless an earlier iteration stopped the call. */
__global__ void __launch_bounds__(PRN_TPB) k_deer_resmax(size_t n, const double *res2, double *ctl) {
    __shared__ double mx[PRN_TPB], bad[PRN_TPB];
    double m = 0, f = 0;
    const bool off = dz_off1(ctl); /* read by all before thread 0 writes ctl, past the barriers */
    if (off) n = 0;
    for (size_t i = threadIdx.x; i < n; i += PRN_TPB) {
        const double q = res2[2 * i], u = res2[2 * i + 1];
        m = q > m ? q : m;
        f = u > f ? u : f;
    }
    mx[threadIdx.x] = m;
    bad[threadIdx.x] = f;
    __syncthreads();
    for (unsigned h = PRN_TPB / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            const double q = mx[threadIdx.x + h], u = bad[threadIdx.x + h];
            if (q > mx[threadIdx.x]) mx[threadIdx.x] = q;
            if (u > bad[threadIdx.x]) bad[threadIdx.x] = u;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && !off) {
        ctl[0] = mx[0];
        ctl[1] = bad[0];
        ctl[2] += 1;
        ctl[3] = bad[0] != 0 || mx[0] <= 1 ? 1 : 0;
    }
}

/* The chain of either kernel (a block per row). */
template <typename FT>
static int dz_chain(cudaStream_t s, const prn_cu_deer *a, FT *tv, int back, const double *ctl) {
    const unsigned g = prn_grid(a->B, 1);
    if (a->S == 1)
        k_deer_chain1<FT><<<g, PRN_DZ_CH1_NT, 0, s>>>(a->B, a->C, (const FT *)a->h0, tv, back, ctl, a->ev, a->discard);
    else
        k_deer_chain<FT><<<g, PRN_DZ_CHAIN_NT, 0, s>>>(a->B, a->C, a->S, (const FT *)a->h0, tv, back, ctl, a->ev,
                                                       a->discard);
    return prn_launched();
}

template <typename FT, int SM, int NT>
static int dz_iter_launch(int ex, unsigned g, cudaStream_t s, const prn_cu_deer *a, int pass, double *res2, FT *tv,
                          const double *skip) {
    const int d = a->kb == 1;
    if (ex == 1) k_deer_iterx<FT, 1, 1><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, res2, tv, skip);
    else if (ex == 2 && d) k_deer_iterx<FT, 2, 1><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, res2, tv, skip);
    else if (ex == 2) k_deer_iterx<FT, 2, 2><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, res2, tv, skip);
    else if (ex == 4 && d) k_deer_iterx<FT, 4, 1><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, res2, tv, skip);
    else if (ex == 4) k_deer_iterx<FT, 4, 4><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, res2, tv, skip);
    else k_deer_iter<FT, SM, NT><<<g, NT, 0, s>>>(*a, pass, res2, tv, skip);
    return prn_launched();
}

/* The call's iterations, all queued at once (no host round trip between
 * them): each is pass 1 (or the only pass), the residual's maximum into
 * ctl, then (segments, ynew) the chain and pass 2; the kernels of an
 * iteration after the one that stopped the call exit at once, and so do
 * the chain and pass 2 of a converged one whose ynew the caller discards
 * (dz_off1, dz_off2). Iteration j's iterate and result as prn_deer_fused's
 * iters says: y, ynew, y2, ynew, .. */
template <typename FT, int SM, int NT>
static int dz_iterate(cudaStream_t s, const prn_cu_deer *a0, double *res2, void *tv, double *ctl) {
    const int ex = dz_exact(a0);
    const unsigned g = prn_grid(a0->ntask, ex ? PRN_DZ_NT1 : NT);
    const int n = a0->iters > 1 && a0->ynew && a0->y2 ? a0->iters : 1;
    FT *tvp = (FT *)tv;
    const int pass = a0->C == 1 ? 0 : 1;
    prn_cu_deer a = *a0;
    int e = 0;
    for (int j = 0; j < n; ++j) {
        a.ev = j;
        a.y = j == 0 ? a0->y : j % 2 ? a0->ynew : a0->y2;
        a.ynew = j % 2 ? a0->y2 : a0->ynew;
        if ((e = dz_iter_launch<FT, SM, NT>(ex, g, s, &a, pass, res2, pass ? tvp : (FT *)NULL, ctl)) != 0) return e;
        k_deer_resmax<<<1, PRN_TPB, 0, s>>>(g, res2, ctl);
        if ((e = prn_launched()) != 0) return e;
        if (pass && a.ynew) {
            if ((e = dz_chain<FT>(s, &a, tvp, 0, ctl)) != 0) return e;
            if ((e = dz_iter_launch<FT, SM, NT>(ex, g, s, &a, 2, res2, tvp, ctl)) != 0) return e;
        }
    }
    return e;
}

/* Threads per block by the per-thread room: at most 40 KiB of static shared
 * memory a block (SM 8: 184 values a thread; SM 16: 624); one state: in
 * registers (k_deer_iterx). */
extern "C" int prn_cu_deer_iterate(cudaStream_t s, int f64, const prn_cu_deer *a, double *res2, void *tv,
                                   double *ctl) {
    if (a->S <= 8)
        return f64 ? dz_iterate<double, 8, 16>(s, a, res2, tv, ctl) : dz_iterate<float, 8, 32>(s, a, res2, tv, ctl);
    if (a->S <= 16)
        return f64 ? dz_iterate<double, 16, 8>(s, a, res2, tv, ctl) : dz_iterate<float, 16, 16>(s, a, res2, tv, ctl);
    if (a->S <= 32)
        return f64 ? dz_iterate<double, 32, 2>(s, a, res2, tv, ctl) : dz_iterate<float, 32, 4>(s, a, res2, tv, ctl);
    return dz_iterate<float, 64, 1>(s, a, res2, tv, ctl); /* f64: declined (prn_cu_deer_takes) */
}

/* --- the adjoint (deer_adjoint) ---------------------------------------------
 * lam_t = g_t + J_{t+1}^T lam_{t+1} (reverse: t - 1) at the solution y, a
 * segment walked from its last step to its first; the carry c is what the
 * step after adds (c = J^T lam). Pass 1 from a zero carry: the carry out v
 * and the map N = J_first^T .. J_last^T; the chain runs from each row's
 * last segment back (zero into it); pass 2 (or the only pass) writes lam,
 * dxp and dq, and dh0 from the first segment. The weight gradients are
 * sums of dq h_prev^T over rows: per chunk of rows in row order, then the
 * chunks in order (k_deer_dw, k_deer_dw_sum). */
template <typename FT, int SM, int NT, int KB>
__device__ __forceinline__ void dz_adj_task(const prn_cu_deer &a, int pass, size_t j, FT *v, FT *tv, FT *dqs,
                                            double *acc) {
    enum { SP = 0, CY = SM, F = 2 * SM, LM = 3 * SM, J = 7 * SM, M = 7 * SM + SM * SM };
    const size_t S = KB ? SM : a.S, P = a.P, kb = KB ? KB : a.kb, T = a.T, C = a.C, b = j / C;
    const size_t w0 = (j % C) * a.Ls;
    const size_t w1 = prn_min(T, w0 + a.Ls);
    const FT *XP = (const FT *)a.xp, *Y = (const FT *)a.y, *H0 = (const FT *)a.h0 + b * S, *G = (const FT *)a.g;
    FT *tvj = tv ? tv + j * (2 * S + S * S) : NULL, *LAM = (FT *)a.lam, *DXP = (FT *)a.dxp;
    FT *DQ = a.dq ? (FT *)a.dq : dqs;
    const int mapped = pass == 1, out = pass != 1;
    /* one state: dq kept in registers (written where the caller wants it),
     * and acc gets the task's sums of dq_t h_{t-1} (acc[p]) and dq_t
     * (acc[3 + p]), P <= 3 */
    const bool fuse = SM == 1 && out && DXP;
    FT qv[3] = {0, 0, 0};
#define DZ(i) v[(size_t)(i) * NT]
    for (size_t i = 0; i < S; ++i) DZ(CY + i) = pass == 2 ? tvj[S + S * S + i] : (FT)0;
    if (mapped)
        for (size_t i = 0; i < S * S; ++i) DZ(M + i) = i % (S + 1) == 0 ? (FT)1 : (FT)0;
    for (size_t w = w1; w-- > w0;) {
        const size_t t = a.rev ? T - 1 - w : w, row = b * T + t;
        const FT *sp = w == 0 ? H0 : Y + (b * T + (a.rev ? t + 1 : t - 1)) * S;
        for (size_t i = 0; i < S; ++i) {
            const FT l = G[row * S + i] + DZ(CY + i);
            DZ(SP + i) = sp[i];
            DZ(LM + i) = l;
            if (out) LAM[row * S + i] = l;
        }
        dz_cell<FT, SM, NT, KB>(a, v, XP + row * P, out && DXP ? DXP + row * P : (FT *)NULL,
                            SM == 1 ? qv : out && DXP ? DQ + row * P : (FT *)NULL); /* dq is written with dx */
        if (fuse)
            for (int p = 0; p < 3; ++p)
                if ((size_t)p < P) {
                    const FT d = qv[p];
                    acc[p] += (double)(d * DZ(SP));
                    acc[3 + p] += (double)d;
                    if (a.dq) DQ[row * P + p] = d;
                }
        for (size_t i = 0; i < S; ++i) { /* c = J^T lam: column i of J's block rows */
            const size_t j0 = i / kb * kb;
            FT acc = 0;
            for (size_t r = 0; r < kb; ++r) acc += DZ(J + (j0 + r) * kb + (i - j0)) * DZ(LM + j0 + r);
            DZ(CY + i) = acc;
        }
        if (mapped) /* N = J^T N, a column at a time through F's slots */
            for (size_t c = 0; c < S; ++c) {
                for (size_t i = 0; i < S; ++i) {
                    const size_t j0 = i / kb * kb;
                    FT acc = 0;
                    for (size_t r = 0; r < kb; ++r) acc += DZ(J + (j0 + r) * kb + (i - j0)) * DZ(M + (j0 + r) * S + c);
                    DZ(F + i) = acc;
                }
                for (size_t i = 0; i < S; ++i) DZ(M + i * S + c) = DZ(F + i);
            }
    }
    if (mapped) {
        for (size_t i = 0; i < S; ++i) tvj[i] = DZ(CY + i);
        for (size_t i = 0; i < S * S; ++i) tvj[S + i] = DZ(M + i);
    } else if (w0 == 0 && a.dh0) {
        for (size_t i = 0; i < S; ++i) ((FT *)a.dh0)[b * S + i] = DZ(CY + i);
    }
#undef DZ
}

template <typename FT, int SM, int NT>
__global__ void __launch_bounds__(NT) k_deer_adj(prn_cu_deer a, int pass, FT *tv, FT *dqs) {
    __shared__ FT sh[PRN_DZ_NV(SM) * NT];
    FT *v = sh + threadIdx.x;
    for (size_t j = (size_t)blockIdx.x * NT + threadIdx.x; j < a.ntask; j += (size_t)gridDim.x * NT)
        dz_adj_task<FT, SM, NT, 0>(a, pass, j, v, tv, dqs, (double *)NULL);
}
/* in registers, as k_deer_iterx (kb = S). One state, part not NULL (dw and
 * db wanted; pass 0 or 2): the block's sums, part[blockIdx.x, o] for the
 * nv = 2 P outputs (dw [P, 1], then db [P]): each thread's tasks in order,
 * then a fixed tree over the block; dq need not reach memory. */
__device__ __forceinline__ void dz_block_sums(const double *acc, size_t P, double *part) {
    __shared__ double sh[6 * PRN_DZ_NT1];
    for (int o = 0; o < 6; ++o) sh[o * PRN_DZ_NT1 + threadIdx.x] = acc[o];
    __syncthreads();
    for (unsigned h = PRN_DZ_NT1 / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            for (int o = 0; o < 6; ++o) sh[o * PRN_DZ_NT1 + threadIdx.x] += sh[o * PRN_DZ_NT1 + threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        for (size_t p = 0; p < P; ++p) {
            part[blockIdx.x * 2 * P + p] = sh[p * PRN_DZ_NT1];
            part[blockIdx.x * 2 * P + P + p] = sh[(3 + p) * PRN_DZ_NT1];
        }
}
/* blocks a multiprocessor: what the compiler picks unasked (no spill),
 * except one state f32: 9 (56 registers, no spill), not 7 */
#define PRN_DZ_ADJ_BLOCKS(FT, SM) (sizeof(FT) == 4 ? (SM == 1 ? 9 : SM == 2 ? 10 : 6) : (SM == 1 ? 6 : SM == 2 ? 7 : 4))
template <typename FT, int SM>
__global__ void __launch_bounds__(PRN_DZ_NT1, PRN_DZ_ADJ_BLOCKS(FT, SM)) k_deer_adjx(prn_cu_deer a, int pass, FT *tv, FT *dqs, double *part) {
    FT v[PRN_DZ_NV(SM)];
    double acc[6] = {0, 0, 0, 0, 0, 0};
    const bool sums = SM == 1 && pass != 1 && part;
    for (size_t j = (size_t)blockIdx.x * PRN_DZ_NT1 + threadIdx.x; j < a.ntask; j += (size_t)gridDim.x * PRN_DZ_NT1)
        dz_adj_task<FT, SM, 1, SM>(a, pass, j, v, tv, dqs, acc);
    if (sums) dz_block_sums(acc, a.P, part);
    else __syncthreads(); /* a barrier in every launch (the emulator) */
}

/* part[q, o]: chunk q's rows [q rpc, min(N, (q + 1) rpc)) in order, for
 * the nv = P wc + P outputs o (dw [P, wc], then db [P]); a thread per
 * (chunk, output), o fastest (neighbours read neighbouring dq). */
template <typename FT>
__global__ void __launch_bounds__(PRN_TPB) k_deer_dw(prn_cu_deer a, const FT *dq, size_t rpc, size_t nchunk,
                                                     double *part) {
    const size_t P = a.P, wc = a.wc, nv = P * wc + P, N = a.B * a.T, T = a.T, S = a.S;
    const FT *Y = (const FT *)a.y, *H0 = (const FT *)a.h0;
    PRN_FOR(idx, nchunk * nv) {
        const size_t q = idx / nv, o = idx % nv;
        const size_t p = o < P * wc ? o / wc : o - P * wc, jj = o < P * wc ? o % wc : 0;
        const size_t col = (wc == a.H ? 0 : p / (3 * wc) * wc) + jj; /* MHGRU: the gate's head */
        const size_t r0 = q * rpc, r1 = prn_min(N, r0 + rpc), first = a.rev ? T - 1 : 0;
        size_t b = r0 / T, t = r0 % T;
        double acc = 0;
        if (o >= P * wc)
            for (size_t r = r0; r < r1; ++r) acc += (double)dq[r * P + p];
        else
            for (size_t r = r0; r < r1; ++r) {
                const FT d = dq[r * P + p];
                const FT hp = t == first ? H0[b * S + col] : Y[(b * T + (a.rev ? t + 1 : t - 1)) * S + col];
                acc += (double)(d * hp);
                if (++t == T) { t = 0; ++b; }
            }
        part[q * nv + o] = acc;
    }
}
/* dw, db: output o's chunks summed by a block, thread x over chunks x,
 * x + NT, .. in order, then a fixed tree: the same bits whatever the launch */
template <typename FT>
__global__ void __launch_bounds__(PRN_TPB) k_deer_dw_sum(size_t nv, size_t Pwc, size_t nchunk, const double *part,
                                                         FT *dw, FT *db) {
    __shared__ double sh[PRN_TPB];
    for (size_t o = blockIdx.x; o < nv; o += gridDim.x) {
        double acc = 0;
        for (size_t q = threadIdx.x; q < nchunk; q += PRN_TPB) acc += part[q * nv + o];
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned h = PRN_TPB / 2; h > 0; h >>= 1) {
            if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (o < Pwc) dw[o] = (FT)sh[0];
            else db[o - Pwc] = (FT)sh[0];
        }
        __syncthreads();
    }
}

/* Chunks of at least 16 rows, as many as give about 2^18 (chunk, output)
 * threads: a function of N and nv alone. One state: a chunk per block of
 * k_deer_adjx (its sums), a function of B, T and S. */
extern "C" void prn_cu_deer_dw_plan(const prn_cu_deer *a, size_t *rpc, size_t *nchunk) {
    const size_t N = a->B * a->T, nv = a->P * a->wc + a->P;
    size_t c = ((size_t)1 << 18) / (nv ? nv : 1);
    if (a->S == 1) { *rpc = 0; *nchunk = prn_grid(a->ntask, PRN_DZ_NT1); return; }
    if (c > prn_cdiv(N, 16)) c = prn_cdiv(N, 16);
    if (c < 1) c = 1;
    *rpc = prn_cdiv(N, c);
    *nchunk = prn_cdiv(N, *rpc);
}

template <typename FT, int SM, int NT>
static int dz_adj_launch(int ex, unsigned g, cudaStream_t s, const prn_cu_deer *a, int pass, FT *tv, FT *dqs,
                         double *part) {
    if (ex == 1) k_deer_adjx<FT, 1><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, tv, dqs, part);
    else if (ex == 2) k_deer_adjx<FT, 2><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, tv, dqs, part);
    else if (ex == 4) k_deer_adjx<FT, 4><<<g, PRN_DZ_NT1, 0, s>>>(*a, pass, tv, dqs, part);
    else k_deer_adj<FT, SM, NT><<<g, NT, 0, s>>>(*a, pass, tv, dqs);
    return prn_launched();
}

template <typename FT, int SM, int NT>
static int dz_adjoint(cudaStream_t s, const prn_cu_deer *a, void *tv, void *dqs, double *part) {
    const int one = a->S == 1, sums = a->dw && a->db && a->dxp, ex = dz_exact(a); /* kb = S here (not MHGRU's heads) */
    const unsigned g = prn_grid(a->ntask, ex ? PRN_DZ_NT1 : NT);
    FT *tvp = (FT *)tv;
    double *p1 = one && sums ? part : (double *)NULL; /* one state: the sums come with the last pass */
    const int pass = a->C == 1 ? 0 : 1;
    int e;
    if ((e = dz_adj_launch<FT, SM, NT>(ex, g, s, a, pass, pass ? tvp : (FT *)NULL, (FT *)dqs, p1)) != 0) return e;
    if (pass) {
        if ((e = dz_chain<FT>(s, a, tvp, 1, (const double *)NULL)) != 0) return e;
        if ((e = dz_adj_launch<FT, SM, NT>(ex, g, s, a, 2, tvp, (FT *)dqs, p1)) != 0) return e;
    }
    if (sums) {
        size_t rpc, nchunk;
        const size_t nv = a->P * a->wc + a->P;
        const FT *dq = a->dq ? (const FT *)a->dq : (const FT *)dqs;
        const unsigned gs = prn_grid(nv, 1);
        prn_cu_deer_dw_plan(a, &rpc, &nchunk);
        if (!one) {
            const unsigned gq = prn_grid(nchunk * nv, PRN_TPB);
            k_deer_dw<FT><<<gq, PRN_TPB, 0, s>>>(*a, dq, rpc, nchunk, part);
            if ((e = prn_launched()) != 0) return e;
        }
        k_deer_dw_sum<FT><<<gs, PRN_TPB, 0, s>>>(nv, a->P * a->wc, nchunk, part, (FT *)a->dw, (FT *)a->db);
        e = prn_launched();
    }
    return e;
}

extern "C" int prn_cu_deer_adjoint(cudaStream_t s, int f64, const prn_cu_deer *a, void *tv, void *dqs, double *part) {
    if (a->S <= 8)
        return f64 ? dz_adjoint<double, 8, 16>(s, a, tv, dqs, part) : dz_adjoint<float, 8, 32>(s, a, tv, dqs, part);
    if (a->S <= 16)
        return f64 ? dz_adjoint<double, 16, 8>(s, a, tv, dqs, part) : dz_adjoint<float, 16, 16>(s, a, tv, dqs, part);
    if (a->S <= 32)
        return f64 ? dz_adjoint<double, 32, 2>(s, a, tv, dqs, part) : dz_adjoint<float, 32, 4>(s, a, tv, dqs, part);
    return dz_adjoint<float, 64, 1>(s, a, tv, dqs, part);
}
