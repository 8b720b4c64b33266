/* Reductions over the middle axis of x viewed as [outer, n, inner]: sum,
 * max, argmax, and the two reductions of softmax (max, then the sum of
 * exp(x - max)), plus softmax's elementwise output pass.
 *
 * The host runs passes: each cuts n into chunks and writes one partial per
 * (output, chunk), i.e. [outer, chunks, inner], until one chunk is left.
 * Every value is thus combined in short sequential runs (RD_RUN elements
 * per work-item) joined by trees: parallel even for one long row, accurate
 * for long f32 sums, and the same from run to run. Two forms of a pass:
 *   rd_cols  one work-item per (output, chunk of RD_RUN): neighbouring
 *            work-items read neighbouring i, coalesced when inner > 1;
 *   rd_rows  long rows (inner == 1): one work-group per (row, chunk of
 *            L * RD_RUN), work-item l reading every L-th element
 *            (coalesced), then a tree in local memory.
 * op: RD_SUM, RD_MAX, RD_SUMEXP (sum of exp(x - sub[o, i]); first pass
 * only, later passes sum), RD_ARGMAX (carries the index of the best value:
 * xi/yi hold the partials' indices, int32 like the output). */
#define RD_SUM 0
#define RD_MAX 1
#define RD_SUMEXP 2
#define RD_ARGMAX 3
#define RD_RUN 16 /* elements one work-item combines sequentially; the host uses the same */

/* Does (vb, ib) beat the best so far (va, ia)? As the reference's scan,
 * which starts from x[0] and takes strictly greater values: the first
 * maximum wins, NaNs are passed over, except a NaN at index 0 (nothing
 * compares greater than it). The empty start is (NaN, -1). */
int rd_beats(real vb, int ib, real va, int ia) {
    if (isnan(va) && ia == 0) return 0;
    if (isnan(vb)) return ib == 0;
    if (isnan(va)) return 1;
    return vb > va || (vb == va && ib < ia);
}

/* Folds (bv, bi) into the running (*av, *ai). */
void rd_fold(int op, real *av, int *ai, real bv, int bi) {
    if (op == RD_MAX) {
        if (bv > *av) *av = bv; /* NaNs never win, as in the reference */
    } else if (op == RD_ARGMAX) {
        if (rd_beats(bv, bi, *av, *ai)) { *av = bv; *ai = bi; }
    } else {
        *av += bv;
    }
}

real rd_start(int op) {
    return op == RD_MAX ? (real)(-INFINITY) : op == RD_ARGMAX ? (real)NAN : (real)0;
}

/* Folds element e (index k along n) of the pass's input into (*av, *ai). */
void rd_leaf(int op, int first, __global const real *xv, __global const int *xi, ulong e, ulong k, real sub,
             real *av, int *ai) {
    real v = xv[e];
    int id = op == RD_ARGMAX && !first ? xi[e] : (int)k;
    if (op == RD_SUMEXP) v = exp(v - sub);
    rd_fold(op, av, ai, v, id);
}

/* Writes output g of a pass: the last pass of argmax writes only the
 * index (0 for an empty row), every other pass the value (and index). */
void rd_store(int op, int last, __global real *yv, __global int *yi, ulong g, real av, int ai) {
    if (op != RD_ARGMAX || !last) yv[g] = av;
    if (op == RD_ARGMAX) yi[g] = last && ai < 0 ? 0 : ai;
}

/* y[o, c, i] = fold of x[o, k, i] for k in chunk c (RD_RUN values). */
__kernel void rd_cols(int op, int first, int last, ulong n, ulong inner, ulong nchunks, ulong total,
                      __global const real *xv, __global const int *xi, __global const real *sub,
                      __global real *yv, __global int *yi) {
    ulong g = get_global_id(0), i, c, o, k, end;
    real av, s;
    int ai = -1;
    if (g >= total) return;
    i = g % inner;
    c = g / inner % nchunks;
    o = g / inner / nchunks;
    s = op == RD_SUMEXP ? sub[o * inner + i] : (real)0;
    av = rd_start(op);
    end = min(n, (c + 1) * RD_RUN);
    for (k = c * RD_RUN; k < end; ++k) rd_leaf(op, first, xv, xi, (o * n + k) * inner + i, k, s, &av, &ai);
    rd_store(op, last, yv, yi, g, av, ai);
}

/* y[r, c] = fold of x[r, k] for k in chunk c (L * RD_RUN values), by a
 * work-group of L (a power of two) work-items. */
__kernel void rd_rows(int op, int first, int last, ulong n, ulong nchunks,
                      __global const real *xv, __global const int *xi, __global const real *sub,
                      __global real *yv, __global int *yi, __local real *pv, __local int *pi) {
    ulong g = get_group_id(0), r = g / nchunks, c = g % nchunks, L = get_local_size(0), k, end;
    uint l = (uint)get_local_id(0), h;
    real av = rd_start(op), s = op == RD_SUMEXP ? sub[r] : (real)0;
    int ai = -1;
    end = min(n, (c + 1) * L * RD_RUN);
    for (k = c * L * RD_RUN + l; k < end; k += L) rd_leaf(op, first, xv, xi, r * n + k, k, s, &av, &ai);
    pv[l] = av;
    pi[l] = ai;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (h = (uint)L / 2; h > 0; h >>= 1) {
        if (l < h) {
            av = pv[l];
            ai = pi[l];
            rd_fold(op, &av, &ai, pv[l + h], pi[l + h]); /* RD_SUMEXP folds by sum */
            pv[l] = av;
            pi[l] = ai;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) rd_store(op, last, yv, yi, g, pv[0], pi[0]);
}

/* Softmax's output, from the maximum mx and the sum s of exp(x - mx) of
 * each [o, :, i]: exp(x - mx) / s, or for log-softmax x - (log s + mx). */
__kernel void sm_apply(int logsm, ulong n, ulong inner, ulong total, __global const real *x,
                       __global const real *mx, __global const real *s, __global real *y) {
    ulong g = get_global_id(0), r;
    if (g >= total) return;
    r = g / (n * inner) * inner + g % inner;
    if (logsm) y[g] = x[g] - (log(s[r]) + mx[r]);
    else y[g] = exp(x[g] - mx[r]) * ((real)1 / s[r]);
}
