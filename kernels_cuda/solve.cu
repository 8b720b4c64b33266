/* solve.cu - batched dense solves a[b] x = r[b] (solve_batched of the
 * table): LU with partial pivoting as the reference's prn__lu_solve_<T>
 * (parrnn.h), the algorithm of kernels_opencl/solve.cl. One thread block of
 * L threads (a power of two) per system, blocks looping over the systems;
 * the matrix stays in global memory. Each elimination step j:
 *   1. pivot search: every thread scans rows j + tid, j + tid + L, ... of
 *      column j, then a tree in shared memory; ties go to the lower row, so
 *      the first largest |pivot| wins as in the reference;
 *   2. the swap of rows j and p (columns j.., and r), shared by columns;
 *   3. the multipliers l_i = a[i][j] / pivot, stored below the diagonal;
 *   4. the update of the trailing block and of r, one element per thread at
 *      a time, neighbouring threads on neighbouring columns (coalesced).
 * Back substitution goes by columns (one barrier per column): r[k] -=
 * a[k][i] x_i for k < i, x_i = r[i] / a[i][i] computed alike by every
 * thread and written at the end. The sums so run in the opposite order to
 * the reference's rows: x differs from it by rounding only. */
#include "common.cuh"

#define PRN_SOLVE_TPB 256 /* the largest block; shared arrays are sized for it */

template <typename T> __global__ void k_solve_lu(size_t batch, size_t n, T *a, T *r, int *info) {
    __shared__ T pv[PRN_SOLVE_TPB];
    __shared__ unsigned pi[PRN_SOLVE_TPB];
    const size_t L = blockDim.x;
    const unsigned tid = threadIdx.x;
    for (size_t b = blockIdx.x; b < batch; b += gridDim.x) {
        T *A = a + b * n * n, *R = r + b * n;
        int fail = 0;
        for (size_t j = 0; j < n; ++j) {
            T best = (T)-1, piv;
            unsigned bi = (unsigned)j, p;
            for (size_t i = j + tid; i < n; i += L) {
                T v = pabs(A[i * n + j]);
                /* The reference's scan starts from the diagonal and takes
                 * only strictly greater values: a NaN on the diagonal is
                 * never beaten (and fails, as not finite: +inf here, lowest
                 * row), NaNs below it are passed over. */
                if (isnan(v)) v = i == j ? (T)INFINITY : (T)-1;
                if (v > best) { best = v; bi = (unsigned)i; }
            }
            pv[tid] = best;
            pi[tid] = bi;
            __syncthreads();
            for (unsigned h = (unsigned)L / 2; h > 0; h >>= 1) {
                if (tid < h) {
                    const T v = pv[tid + h];
                    const unsigned vi = pi[tid + h];
                    if (v > pv[tid] || (v == pv[tid] && vi < pi[tid])) { pv[tid] = v; pi[tid] = vi; }
                }
                __syncthreads();
            }
            best = pv[0]; /* the barriers below come before the next search writes pv */
            p = pi[0];
            /* the same values in every thread: they all leave together */
            if (!(best > 0) || isinf(best)) { fail = (int)j + 1; break; }
            if (p != j) {
                for (size_t i = j + tid; i < n; i += L) {
                    const T t = A[p * n + i];
                    A[p * n + i] = A[j * n + i];
                    A[j * n + i] = t;
                }
                if (tid == 0) { const T t = R[p]; R[p] = R[j]; R[j] = t; }
                __syncthreads();
            }
            piv = A[j * n + j];
            for (size_t i = j + 1 + tid; i < n; i += L) A[i * n + j] /= piv;
            __syncthreads();
            {
                /* element e of the (n-j-1) x (n-j) block: row j+1 + e / w,
                 * column j+1 + e % w, column n standing for r; (i, c) advance
                 * by (L / w, L % w) per turn, without a division per element */
                const size_t w = n - j, m = (n - j - 1) * w, di = L / w, dc = L % w;
                size_t c = tid % w, i = j + 1 + tid / w;
                for (size_t e = tid; e < m; e += L) {
                    const T l = A[i * n + j];
                    if (l != 0) { /* as the reference: rows with l == 0 stay as they are (inf or NaN in row j too) */
                        if (j + 1 + c < n) A[i * n + j + 1 + c] -= l * A[j * n + j + 1 + c];
                        else R[i] -= l * R[j];
                    }
                    c += dc;
                    i += di;
                    if (c >= w) { c -= w; ++i; }
                }
            }
            __syncthreads();
        }
        if (!fail) {
            for (size_t j = n; j-- > 0;) {
                const T x = R[j] / A[j * n + j];
                for (size_t i = tid; i < j; i += L) R[i] -= A[i * n + j] * x;
                __syncthreads();
            }
            for (size_t i = tid; i < n; i += L) R[i] /= A[i * n + i];
        }
        if (tid == 0) info[b] = fail;
        __syncthreads(); /* the next system's search reuses pv */
    }
}

extern "C" int prn_cu_solve_batched(cudaStream_t s, int f64, size_t batch, size_t n, void *a, void *r, int *info) {
    unsigned L = 32;
    if (batch == 0 || n == 0) return 0;
    /* from a warp up to about one thread per row: the wider trailing blocks keep them busy */
    while (L < PRN_SOLVE_TPB && L < n) L <<= 1;
    const unsigned grid = (unsigned)prn_min(batch, PRN_MAX_GRID);
    if (f64)
        k_solve_lu<double><<<grid, L, 0, s>>>(batch, n, (double *)a, (double *)r, info);
    else
        k_solve_lu<float><<<grid, L, 0, s>>>(batch, n, (float *)a, (float *)r, info);
    return prn_launched();
}
