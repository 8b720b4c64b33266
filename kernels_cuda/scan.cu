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

/* Column q of [M | v] of chunk j of block jb of sequence n: x = e_q (q < k)
 * or 0 (q == k, plus b at each step). M: [batch, nm, C, k] with row j0+i
 * holding row i of the chunk's matrix (the layout of a, untransposed);
 * v: [batch, nm, C]. */
template <typename R>
__global__ void k_scan_block_fold(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nm, int rev, int tr,
                                  const R *__restrict__ a, const R *__restrict__ b, R *M, R *v) {
    const size_t nblk = C / k;
    PRN_FOR(g, batch * nm * nblk * (k + 1)) {
        const size_t q = g % (k + 1), u = g / (k + 1);
        const size_t jb = u % nblk, j = u / nblk % nm, n = u / nblk / nm, j0 = jb * k;
        const size_t t1 = prn_min((j + 1) * L, T);
        R x[PRN_KMAX], nx[PRN_KMAX];
        for (size_t i = 0; i < k; ++i) x[i] = (R)(i == q);
        for (size_t t = j * L; t < t1; ++t) {
            const size_t r = PRN_ROW(t);
            const R *ar = a + (n * T + r) * C * k, *br = b + (n * T + r) * C + j0;
            for (size_t i = 0; i < k; ++i) {
                R acc = q == k ? br[i] : (R)0;
                for (size_t mm = 0; mm < k; ++mm) acc += PRN_AM(ar, i, mm) * x[mm];
                nx[i] = acc;
            }
            for (size_t i = 0; i < k; ++i) x[i] = nx[i];
        }
        const size_t row = (n * nm + j) * C + j0;
        if (q < k)
            for (size_t i = 0; i < k; ++i) M[(row + i) * k + q] = x[i];
        else
            for (size_t i = 0; i < k; ++i) v[row + i] = x[i];
    }
}

/* carry: [batch, nch-1, C] (NULL when nch == 1); h0: [batch, C] or NULL. */
template <typename R>
__global__ void k_scan_block_expand(size_t batch, size_t T, size_t C, size_t k, size_t L, size_t nch, int rev,
                                    int tr, const R *a, const R *b, const R *h0, const R *carry, R *h) {
    const size_t nblk = C / k;
    PRN_FOR(g, batch * nch * nblk) {
        const size_t jb = g % nblk, j = g / nblk % nch, n = g / nblk / nch, j0 = jb * k;
        const size_t t1 = prn_min((j + 1) * L, T);
        const R *init = j ? carry + (n * (nch - 1) + j - 1) * C + j0 : h0 ? h0 + n * C + j0 : NULL;
        R st[PRN_KMAX], nx[PRN_KMAX];
        for (size_t i = 0; i < k; ++i) st[i] = init ? init[i] : (R)0;
        for (size_t t = j * L; t < t1; ++t) {
            const size_t r = PRN_ROW(t);
            const R *ar = a + (n * T + r) * C * k;
            const size_t hr = (n * T + r) * C + j0;
            for (size_t i = 0; i < k; ++i) {
                R acc = b[hr + i];
                for (size_t mm = 0; mm < k; ++mm) acc += PRN_AM(ar, i, mm) * st[mm];
                nx[i] = acc;
            }
            /* all of this block's b row is read before h (maybe b) is written */
            for (size_t i = 0; i < k; ++i) {
                st[i] = nx[i];
                h[hr + i] = nx[i];
            }
        }
    }
}

/* Block scans keep k-vectors per thread: smaller blocks leave more
 * registers and local memory per multiprocessor. */
#define PRN_TPB_BLOCK 128

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

extern "C" int prn_cu_scan_block_fold(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k, size_t L,
                                      size_t nm, int rev, int tr, const void *a, const void *b, void *M, void *v) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t n = batch * nm * (C / k) * (k + 1);
    if (n == 0) return 0;
    if (f64)
        k_scan_block_fold<double><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nm, rev, tr, (const double *)a, (const double *)b, (double *)M, (double *)v);
    else
        k_scan_block_fold<float><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nm, rev, tr, (const float *)a, (const float *)b, (float *)M, (float *)v);
    return prn_launched();
}

extern "C" int prn_cu_scan_block_expand(cudaStream_t s, int f64, size_t batch, size_t T, size_t C, size_t k,
                                        size_t L, size_t nch, int rev, int tr, const void *a, const void *b,
                                        const void *h0, const void *carry, void *h) {
    if (k == 0 || k > PRN_KMAX) return (int)cudaErrorInvalidValue;
    const size_t n = batch * nch * (C / k);
    if (n == 0) return 0;
    if (f64)
        k_scan_block_expand<double><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nch, rev, tr, (const double *)a, (const double *)b, (const double *)h0,
            (const double *)carry, (double *)h);
    else
        k_scan_block_expand<float><<<prn_grid(n, PRN_TPB_BLOCK), PRN_TPB_BLOCK, 0, s>>>(
            batch, T, C, k, L, nch, rev, tr, (const float *)a, (const float *)b, (const float *)h0,
            (const float *)carry, (float *)h);
    return prn_launched();
}
