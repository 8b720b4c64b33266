/* Diagonal scans h[n,t] = a[n,t] * h[n,t-1] + b[n,t] over [batch, T, C],
 * parallel in time (the host, parrnn_opencl.h, drives the phases):
 *   fold:   each chunk of L steps of a (sequence, channel) becomes one affine
 *           map h -> m h + o;
 *   (carries: the maps are themselves a diagonal scan over chunks, which the
 *           host runs with these same kernels, recursively);
 *   expand: each chunk re-runs its steps from its incoming carry, writing h.
 * A chunk count of 1 makes expand the plain serial-in-time scan.
 * Work-item g = (n * chunks + j) * C + c: adjacent work-items take adjacent
 * channels, so their loads coalesce. Logical step t lives in row
 * rev ? T-1-t : t; chunk j holds logical steps [j L, min(T, (j+1) L)). */
#define SCAN_ROW(t) (rev ? T - 1 - (t) : (t))

/* Maps of chunks 0..nm-1 (the last chunk's map is never needed, so the
 * host passes nm = chunks - 1): m, o are [batch, nm, C], the layout of a
 * scan over nm steps. */
__kernel void scan_diag_fold(ulong batch, ulong T, ulong C, ulong L, ulong nm, int rev,
                             __global const real *a, __global const real *b,
                             __global real *m, __global real *o) {
    ulong g = get_global_id(0), c, j, n, base, t, t1;
    real mm = (real)1, oo = (real)0;
    if (g >= batch * nm * C) return;
    c = g % C;
    j = g / C % nm;
    n = g / C / nm;
    base = n * T * C + c;
    t1 = (j + 1) * L < T ? (j + 1) * L : T;
    for (t = j * L; t < t1; ++t) {
        ulong i = base + SCAN_ROW(t) * C;
        real x = a[i];
        oo = x * oo + b[i];
        mm *= x;
    }
    m[g] = mm;
    o[g] = oo;
}

/* h of every chunk. Chunk j > 0 starts from carry[n, j-1] (the scan of the
 * maps, [batch, chunks-1, C]); chunk 0 from h0[n] (zero when has_h0 is 0).
 * h may be b: each element of b is read by the work-item that overwrites it,
 * before it does. */
__kernel void scan_diag_expand(ulong batch, ulong T, ulong C, ulong L, ulong nch, int rev,
                               __global const real *a, __global const real *b,
                               __global const real *h0, int has_h0,
                               __global const real *carry, __global real *h) {
    ulong g = get_global_id(0), c, j, n, base, t, t1;
    real st;
    if (g >= batch * nch * C) return;
    c = g % C;
    j = g / C % nch;
    n = g / C / nch;
    base = n * T * C + c;
    st = j ? carry[(n * (nch - 1) + j - 1) * C + c] : has_h0 ? h0[n * C + c] : (real)0;
    t1 = (j + 1) * L < T ? (j + 1) * L : T;
    for (t = j * L; t < t1; ++t) {
        ulong i = base + SCAN_ROW(t) * C;
        st = a[i] * st + b[i];
        h[i] = st;
    }
}
