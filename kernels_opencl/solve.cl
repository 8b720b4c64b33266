/* Batched dense solves a[b] x = r[b] (solve_batched of the backend table):
 * LU with partial pivoting as the reference's prn__lu_solve_<T> (parrnn.h), one
 * work-group of L work-items (a power of two) per system, the matrix staying
 * in global memory. Each elimination step j:
 *   1. pivot search: every work-item scans rows j + lid, j + lid + L, ...
 *      of column j, then a tree in local memory; ties go to the lower row,
 *      so the first largest |pivot| wins as in the reference;
 *   2. the swap of rows j and p (columns j.., and r), shared by columns;
 *   3. the multipliers l_i = a[i][j] / pivot, stored below the diagonal;
 *   4. the update of the trailing block and of r, one element per work-item
 *      at a time, neighbouring work-items on neighbouring columns.
 * Back substitution goes by columns (one barrier per column): r[k] -=
 * a[k][i] x_i for k < i, with x_i = r[i] / a[i][i] computed alike by every
 * work-item and written at the end. The sums so run in the opposite order
 * to the reference's rows, so x differs from it by rounding only. */

/* Does |pivot| candidate (v, i) beat (bv, bi)? The larger wins, the lower
 * row on ties. */
int lu_beats(real v, uint i, real bv, uint bi) { return v > bv || (v == bv && i < bi); }

__kernel void solve_lu(ulong n, __global real *a, __global real *r, __global int *info,
                       __local real *pv, __local uint *pi) {
    const ulong b = get_group_id(0), L = get_local_size(0);
    const uint lid = (uint)get_local_id(0);
    __global real *A = a + b * n * n, *R = r + b * n;
    ulong j, i, e;
    uint h, p;
    int fail = 0;
    for (j = 0; j < n; ++j) {
        real best = (real)-1, piv;
        uint bi = (uint)j;
        for (i = j + lid; i < n; i += L) {
            real v = fabs(A[i * n + j]);
            /* The reference's scan starts from the diagonal and takes only
             * strictly greater values: a NaN on the diagonal is never
             * beaten (and fails, as not finite: +inf here, lowest row),
             * NaNs below it are passed over. */
            if (isnan(v)) v = i == j ? (real)INFINITY : (real)-1;
            if (v > best) { best = v; bi = (uint)i; }
        }
        pv[lid] = best;
        pi[lid] = bi;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (h = (uint)L / 2; h > 0; h >>= 1) {
            if (lid < h && lu_beats(pv[lid + h], pi[lid + h], pv[lid], pi[lid])) {
                pv[lid] = pv[lid + h];
                pi[lid] = pi[lid + h];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        best = pv[0]; /* the barriers below come before the next search writes pv */
        p = pi[0];
        /* the same values in every work-item: they all leave together */
        if (!(best > 0) || isinf(best)) { fail = (int)j + 1; break; }
        if (p != j) {
            for (i = j + lid; i < n; i += L) {
                real t = A[p * n + i];
                A[p * n + i] = A[j * n + i];
                A[j * n + i] = t;
            }
            if (lid == 0) { real t = R[p]; R[p] = R[j]; R[j] = t; }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        piv = A[j * n + j];
        for (i = j + 1 + lid; i < n; i += L) A[i * n + j] /= piv;
        barrier(CLK_GLOBAL_MEM_FENCE);
        {
            /* element e of the (n-j-1) x (n-j) block: row j+1 + e / w, column
             * j+1 + e % w, column n standing for r; (i, c) advance by (di, dc)
             * = (L / w, L % w) per turn, without a division per element */
            const ulong w = n - j, m = (n - j - 1) * w, di = L / w, dc = L % w;
            ulong c = lid % w;
            i = j + 1 + lid / w;
            for (e = lid; e < m; e += L) {
                real l = A[i * n + j];
                if (l != 0) { /* as the reference: rows with l == 0 stay as they are (inf or NaN in row j too) */
                    if (j + 1 + c < n) A[i * n + j + 1 + c] -= l * A[j * n + j + 1 + c];
                    else R[i] -= l * R[j];
                }
                c += dc;
                i += di;
                if (c >= w) { c -= w; ++i; }
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    if (fail) {
        if (lid == 0) info[b] = fail;
        return;
    }
    for (j = n; j-- > 0;) {
        const real x = R[j] / A[j * n + j];
        for (i = lid; i < j; i += L) R[i] -= A[i * n + j] * x;
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    for (i = lid; i < n; i += L) R[i] /= A[i * n + i];
    if (lid == 0) info[b] = 0;
}
