/* Block-diagonal scans h[n,t] = A[n,t] h[n,t-1] + b[n,t]: C = nblk * k
 * channels in blocks of k (1 <= k <= 64; dense is k = C); a is
 * [batch, T, C, k], rows j0..j0+k-1 of step t being block j0/k's matrix
 * (its transpose when tr is set). Parallel in time as scan_diag.cl:
 *   fold:   each chunk of L steps of a (sequence, block) becomes one affine
 *           map h -> M h + v, M = A_last ... A_first;
 *   (carries: the maps are a block scan over chunks, run by the host with
 *           these kernels, recursively);
 *   expand: each chunk re-runs its steps from its incoming carry.
 * Logical step t lives in row rev ? T-1-t : t; chunk j holds logical steps
 * [j L, min(T, (j+1) L)). */
#define SCAN_ROW(t) (rev ? T - 1 - (t) : (t))
/* entry (i, q) of the step matrix of the block at channel j0; ar is the
 * step's [C, k] matrix rows */
#define SCAN_AM(ar, i, q) (tr ? (ar)[(j0 + (q)) * k + (i)] : (ar)[(j0 + (i)) * k + (q)])
#define SCAN_KMAX 64

/* Maps of chunks 0..nm-1 (the host passes nm = chunks - 1: the last map is
 * never needed). One work-item per column of [M | v]:
 *   g = ((n * nm + j) * nblk + blk) * (k + 1) + q,
 * column q < k of M starts as e_q and follows x <- A_t x, the offset column
 * (q = k) starts at 0 and follows x <- A_t x + b_t; so k + 1 independent
 * matrix-vector chains instead of one k x k x k product per step. The
 * work-items of one block read the same A_t, which caches serve once.
 * M is [batch, nm, C, k] and v [batch, nm, C]: the layout of a block scan
 * over nm steps (untransposed). */
__kernel void scan_block_fold(ulong batch, ulong T, ulong C, ulong k, ulong L, ulong nm, int rev, int tr,
                              __global const real *a, __global const real *b,
                              __global real *M, __global real *v) {
    ulong g = get_global_id(0), nblk = C / k, q, blk, j, n, j0, t, t1, i, p;
    real xa[SCAN_KMAX], xb[SCAN_KMAX];
    real *x = xa, *y = xb, *sw;
    if (g >= batch * nm * nblk * (k + 1)) return;
    q = g % (k + 1);
    blk = g / (k + 1) % nblk;
    j = g / (k + 1) / nblk % nm;
    n = g / (k + 1) / nblk / nm;
    j0 = blk * k;
    for (i = 0; i < k; ++i) x[i] = i == q ? (real)1 : (real)0;
    t1 = (j + 1) * L < T ? (j + 1) * L : T;
    for (t = j * L; t < t1; ++t) {
        ulong r = (n * T + SCAN_ROW(t)) * C;
        __global const real *ar = a + r * k, *br = b + r + j0;
        for (i = 0; i < k; ++i) {
            real s = q == k ? br[i] : (real)0;
            if (q < k || t > j * L) /* v starts at 0: its first step is b, as a sequential scan's */
                for (p = 0; p < k; ++p) s += SCAN_AM(ar, i, p) * x[p];
            y[i] = s;
        }
        sw = x; x = y; y = sw;
    }
    if (q < k)
        for (i = 0; i < k; ++i) M[((n * nm + j) * C + j0 + i) * k + q] = x[i];
    else
        for (i = 0; i < k; ++i) v[(n * nm + j) * C + j0 + i] = x[i];
}

/* h of every chunk; one work-item per (sequence, chunk, block):
 *   g = (n * nch + j) * nblk + blk.
 * Chunk j > 0 starts from carry[n, j-1] (the scan of the maps,
 * [batch, chunks-1, C]); chunk 0 from h0[n], or with has_h0 0 from nothing:
 * its first step is h = b, as the reference's sequential scan. Each step
 * reads the previous row from h, which this work-item wrote itself (no
 * private state array). h may be b: h[r, j0+i] overwrites only b[r, j0+i],
 * already read, and the previous row is another row. */
__kernel void scan_block_expand(ulong batch, ulong T, ulong C, ulong k, ulong L, ulong nch, int rev, int tr,
                                __global const real *a, __global const real *b,
                                __global const real *h0, int has_h0,
                                __global const real *carry, __global real *h) {
    ulong g = get_global_id(0), nblk = C / k, blk, j, n, j0, t, t1, i, p;
    __global const real *prev;
    int have = 1;
    if (g >= batch * nch * nblk) return;
    blk = g % nblk;
    j = g / nblk % nch;
    n = g / nblk / nch;
    j0 = blk * k;
    if (j) prev = carry + (n * (nch - 1) + j - 1) * C + j0;
    else if (has_h0) prev = h0 + n * C + j0;
    else { prev = b; have = 0; }
    t1 = (j + 1) * L < T ? (j + 1) * L : T;
    for (t = j * L; t < t1; ++t) {
        ulong r = (n * T + SCAN_ROW(t)) * C;
        __global const real *ar = a + r * k;
        for (i = 0; i < k; ++i) {
            real s = b[r + j0 + i];
            if (have)
                for (p = 0; p < k; ++p) s += SCAN_AM(ar, i, p) * prev[p];
            h[r + j0 + i] = s;
        }
        prev = h + r + j0;
        have = 1;
    }
}
