/* reduce.cu - sum/max, argmax and (log-)softmax over the middle axis of
 * [outer, n, inner] for the CUDA backend.
 *
 * Two kernel shapes:
 *  - rows (inner == 1 and n > 64): a block of PRN_TPB threads per row (or
 *    per part of a row), strided loads that coalesce, a tree in shared
 *    memory;
 *  - columns (otherwise): a thread per output (o, i), walking n with stride
 *    inner; adjacent threads read adjacent i, so loads coalesce.
 * Sums accumulate in double (f32 included). A reduction with too few
 * outputs to fill the device (one long row, a few long columns) runs in two
 * stages: each part of the middle axis reduces into scratch (double), then
 * the parts are reduced. */
#include "common.cuh"

#define PRN_ROW_MIN 64 /* rows longer than this get a block each */

/* Block-wide sum (op 0) or max (op 1) of v; every thread gets the result. */
__device__ double prn_block_reduce(int op, double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (threadIdx.x < st) {
            double o = sh[threadIdx.x + st], c = sh[threadIdx.x];
            sh[threadIdx.x] = op ? (o > c ? o : c) : c + o;
        }
        __syncthreads();
    }
    v = sh[0];
    __syncthreads(); /* sh is reused by the caller's next round */
    return v;
}

/* y[r * parts + p] = reduction of part p of row r (parts of len elements). */
template <typename TI, typename TO>
__global__ void k_reduce_rows(int op, size_t rows, size_t n, size_t parts, const TI *x, TO *y) {
    __shared__ double sh[PRN_TPB];
    const size_t len = prn_cdiv(n, parts);
    for (size_t item = blockIdx.x; item < rows * parts; item += gridDim.x) {
        const size_t r = item / parts, lo = (item % parts) * len, hi = prn_min(n, lo + len);
        double acc = op ? -INFINITY : 0.0;
        for (size_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
            const double v = (double)x[r * n + k];
            acc = op ? (v > acc ? v : acc) : acc + v;
        }
        acc = prn_block_reduce(op, acc, sh);
        if (threadIdx.x == 0) y[item] = (TO)acc;
    }
}

/* y[(o * parts + p) * inner + i] = reduction of part p of column (o, i). */
template <typename TI, typename TO>
__global__ void k_reduce_cols(int op, size_t outer, size_t n, size_t inner, size_t parts, const TI *x, TO *y) {
    const size_t len = prn_cdiv(n, parts);
    PRN_FOR(item, outer * parts * inner) {
        const size_t i = item % inner, r = item / inner, o = r / parts;
        const size_t lo = (r % parts) * len, hi = prn_min(n, lo + len);
        const TI *xo = x + o * n * inner + i;
        double acc = op ? -INFINITY : 0.0;
        for (size_t k = lo; k < hi; ++k) {
            const double v = (double)xo[k * inner];
            acc = op ? (v > acc ? v : acc) : acc + v;
        }
        y[item] = (TO)acc;
    }
}

/* How many parts the middle axis is cut into so the first stage fills
 * the device (1: one stage). */
static size_t prn_reduce_parts(size_t outer, size_t n, size_t inner, int sm) {
    size_t p, want;
    if (sm < 1) sm = 1;
    if (inner == 1 && n > PRN_ROW_MIN) {
        want = (size_t)sm * 8; /* blocks */
        if (outer >= want) return 1;
        p = prn_min(prn_cdiv(want, outer), prn_cdiv(n, 4096));
    } else {
        want = (size_t)sm * 2048; /* threads */
        if (outer * inner >= want) return 1;
        p = prn_min(prn_cdiv(want, outer * inner), prn_cdiv(n, 256));
    }
    return p < 1 ? 1 : p;
}

extern "C" size_t prn_cu_reduce_scratch(size_t outer, size_t n, size_t inner, int sm) {
    size_t p = prn_reduce_parts(outer, n, inner, sm);
    return p > 1 ? outer * p * inner * sizeof(double) : 0;
}

template <typename TI, typename TO>
static void prn_reduce_stage(cudaStream_t s, int op, size_t outer, size_t n, size_t inner, size_t parts, const TI *x,
                             TO *y) {
    if (inner == 1 && n > PRN_ROW_MIN)
        k_reduce_rows<TI, TO><<<prn_grid(outer * parts, 1), PRN_TPB, 0, s>>>(op, outer, n, parts, x, y);
    else
        k_reduce_cols<TI, TO><<<prn_grid(outer * parts * inner, PRN_TPB), PRN_TPB, 0, s>>>(op, outer, n, inner, parts,
                                                                                          x, y);
}

template <typename T>
static int prn_reduce_t(cudaStream_t s, int op, size_t outer, size_t n, size_t inner, const T *x, T *y,
                        double *scratch, int sm) {
    size_t parts = prn_reduce_parts(outer, n, inner, sm);
    if (parts == 1) {
        prn_reduce_stage<T, T>(s, op, outer, n, inner, 1, x, y);
        return prn_launched();
    }
    prn_reduce_stage<T, double>(s, op, outer, n, inner, parts, x, scratch);
    int e = prn_launched();
    if (e) return e;
    prn_reduce_stage<double, T>(s, op, outer, parts, inner, 1, scratch, y);
    return prn_launched();
}

extern "C" int prn_cu_reduce(cudaStream_t s, int f64, int op, size_t outer, size_t n, size_t inner, const void *x,
                             void *y, void *scratch, int sm) {
    if (outer * inner == 0) return 0;
    if (f64) return prn_reduce_t<double>(s, op, outer, n, inner, (const double *)x, (double *)y, (double *)scratch, sm);
    return prn_reduce_t<float>(s, op, outer, n, inner, (const float *)x, (float *)y, (double *)scratch, sm);
}

/* ---- argmax: the first maximum, as the reference's `x > best` walk ---- */
#define PRN_NO_INDEX (~(unsigned long long)0)

template <typename T> __global__ void k_argmax_rows(size_t rows, size_t n, const T *x, int32_t *y) {
    __shared__ double shv[PRN_TPB];
    __shared__ unsigned long long shi[PRN_TPB];
    const unsigned t = threadIdx.x;
    for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        double bv = 0;
        unsigned long long bi = PRN_NO_INDEX;
        /* this thread's elements in increasing order: its first maximum.
         * As the reference's walk, NaN is skipped except at index 0, where
         * it wins; so the only NaN that reaches the merge sits in slot 0,
         * which never gets replaced by a compare with it. */
        for (size_t k = t; k < n; k += blockDim.x) {
            const double v = (double)x[r * n + k];
            if (v == v ? (bi == PRN_NO_INDEX || v > bv) : (k == 0 && bi == PRN_NO_INDEX)) {
                bv = v;
                bi = k;
            }
        }
        shv[t] = bv;
        shi[t] = bi;
        __syncthreads();
        for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
            if (t < st) {
                const double ov = shv[t + st];
                const unsigned long long oi = shi[t + st];
                /* larger value, or equal value at a smaller index */
                if (oi != PRN_NO_INDEX && (shi[t] == PRN_NO_INDEX || ov > shv[t] || (ov == shv[t] && oi < shi[t]))) {
                    shv[t] = ov;
                    shi[t] = oi;
                }
            }
            __syncthreads();
        }
        if (t == 0) y[r] = (int32_t)(shi[0] == PRN_NO_INDEX ? 0 : shi[0]);
        __syncthreads();
    }
}

template <typename T> __global__ void k_argmax_cols(size_t outer, size_t n, size_t inner, const T *x, int32_t *y) {
    PRN_FOR(r, outer * inner) {
        const size_t o = r / inner, i = r % inner;
        const T *xo = x + o * n * inner + i;
        T bv = n ? xo[0] : (T)0;
        size_t best = 0;
        for (size_t k = 1; k < n; ++k)
            if (xo[k * inner] > bv) {
                bv = xo[k * inner];
                best = k;
            }
        y[r] = (int32_t)best;
    }
}

template <typename T> static int prn_argmax_t(cudaStream_t s, size_t outer, size_t n, size_t inner, const T *x, int32_t *y) {
    if (inner == 1 && n > PRN_ROW_MIN) k_argmax_rows<T><<<prn_grid(outer, 1), PRN_TPB, 0, s>>>(outer, n, x, y);
    else k_argmax_cols<T><<<prn_grid(outer * inner, PRN_TPB), PRN_TPB, 0, s>>>(outer, n, inner, x, y);
    return prn_launched();
}

extern "C" int prn_cu_argmax(cudaStream_t s, int f64, size_t outer, size_t n, size_t inner, const void *x, void *y) {
    if (outer * inner == 0) return 0;
    if (f64) return prn_argmax_t<double>(s, outer, n, inner, (const double *)x, (int32_t *)y);
    return prn_argmax_t<float>(s, outer, n, inner, (const float *)x, (int32_t *)y);
}

/* ---- (log-)softmax ---- */
template <typename T> __global__ void k_softmax_rows(int logsm, size_t rows, size_t n, const T *x, T *y) {
    __shared__ double sh[PRN_TPB];
    for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * n;
        T *yr = y + r * n;
        double acc = -INFINITY;
        for (size_t k = threadIdx.x; k < n; k += blockDim.x) {
            const double v = (double)xr[k];
            acc = v > acc ? v : acc;
        }
        const T mx = (T)prn_block_reduce(1, acc, sh);
        acc = 0;
        for (size_t k = threadIdx.x; k < n; k += blockDim.x) acc += (double)pexp(xr[k] - mx);
        const T sum = (T)prn_block_reduce(0, acc, sh);
        if (logsm) {
            const T ls = plog(sum) + mx;
            for (size_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = xr[k] - ls;
        } else {
            const T inv = (T)1 / sum;
            for (size_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = pexp(xr[k] - mx) * inv;
        }
    }
}

template <typename T>
__global__ void k_softmax_cols(int logsm, size_t outer, size_t n, size_t inner, const T *x, T *y) {
    PRN_FOR(r, outer * inner) {
        const size_t o = r / inner, i = r % inner;
        const T *xo = x + o * n * inner + i;
        T *yo = y + o * n * inner + i;
        T mx = xo[0], sum = 0;
        for (size_t k = 1; k < n; ++k)
            if (xo[k * inner] > mx) mx = xo[k * inner];
        for (size_t k = 0; k < n; ++k) sum += pexp(xo[k * inner] - mx);
        if (logsm) {
            const T ls = plog(sum) + mx;
            for (size_t k = 0; k < n; ++k) yo[k * inner] = xo[k * inner] - ls;
        } else {
            const T inv = (T)1 / sum;
            for (size_t k = 0; k < n; ++k) yo[k * inner] = pexp(xo[k * inner] - mx) * inv;
        }
    }
}

template <typename T>
static int prn_softmax_t(cudaStream_t s, int logsm, size_t outer, size_t n, size_t inner, const T *x, T *y) {
    if (inner == 1 && n > PRN_ROW_MIN) k_softmax_rows<T><<<prn_grid(outer, 1), PRN_TPB, 0, s>>>(logsm, outer, n, x, y);
    else k_softmax_cols<T><<<prn_grid(outer * inner, PRN_TPB), PRN_TPB, 0, s>>>(logsm, outer, n, inner, x, y);
    return prn_launched();
}

extern "C" int prn_cu_softmax(cudaStream_t s, int f64, int logsm, size_t outer, size_t n, size_t inner,
                              const void *x, void *y) {
    if (outer * inner == 0 || n == 0) return 0;
    if (f64) return prn_softmax_t<double>(s, logsm, outer, n, inner, (const double *)x, (double *)y);
    return prn_softmax_t<float>(s, logsm, outer, n, inner, (const float *)x, (float *)y);
}
