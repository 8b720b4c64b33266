/* elementwise.cu - fill, unary, binary, strided copy, GEMM's K == 0 case,
 * random numbers and the fused optimiser updates of the CUDA backend.
 * One element per thread of a grid-stride loop; multi-dimensional indices
 * split without divide instructions below 2^32 elements (prn_fdiv). */
#include "common.cuh"

__global__ void k_probe(void) {}

extern "C" int prn_cu_probe(cudaStream_t s) {
    k_probe<<<1, 1, 0, s>>>();
    return prn_launched();
}

/* ---- fill: type-blind, by element size ---- */
template <typename U> __global__ void k_fill(U *y, size_t n, U v) {
    PRN_FOR(i, n) y[i] = v;
}

extern "C" int prn_cu_fill(cudaStream_t s, int esize, void *y, size_t n, uint64_t bits) {
    if (n == 0) return 0;
    if (esize == 8) k_fill<uint64_t><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>((uint64_t *)y, n, bits);
    else k_fill<uint32_t><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>((uint32_t *)y, n, (uint32_t)bits);
    return prn_launched();
}

/* ---- unary: the op is uniform across the grid, so the switch costs no divergence ---- */
template <typename T> __global__ void k_unary(int op, size_t n, const T *x, T *y, T al, T be) {
    PRN_FOR(i, n) {
        const T v = x[i];
        T r;
        switch (op) {
        case PRN_UNARY_NEG: r = -v; break;
        case PRN_UNARY_EXP: r = pexp(v); break;
        case PRN_UNARY_LOG: r = plog(v); break;
        case PRN_UNARY_RELU: r = v > 0 ? v : (T)0; break;
        case PRN_UNARY_SIGMOID: r = (T)1 / ((T)1 + pexp(-v)); break;
        case PRN_UNARY_TANH: r = ptanh(v); break;
        case PRN_UNARY_SQUARE: r = v * v; break;
        case PRN_UNARY_SQRT: r = psqrt(v); break;
        case PRN_UNARY_ABS: r = pabs(v); break;
        case PRN_UNARY_POWS: r = ppow(v, al); break;
        case PRN_UNARY_CLAMP: r = v != v ? be : v > al ? al : v < -al ? -al : v; break;
        default: r = al * v + be; break; /* PRN_UNARY_AFFINE (the host rejects others) */
        }
        y[i] = r;
    }
}

extern "C" int prn_cu_unary(cudaStream_t s, int f64, int op, size_t n, const void *x, void *y, double alpha,
                            double beta) {
    if (n == 0) return 0;
    if (f64) k_unary<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(op, n, (const double *)x, (double *)y, alpha, beta);
    else k_unary<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(op, n, (const float *)x, (float *)y, (float)alpha,
                                                                 (float)beta);
    return prn_launched();
}

/* ---- binary: 4-D broadcast walk; element i of y is index (i0,i1,i2,i3) ----
 * The index is split once for both operands. MODE 0: every operand is
 * laid out as y (row-major, no broadcast), offset i; MODE 1: fewer than
 * 2^32 elements, 32-bit indices split by multiplication (prn_fdiv, no
 * divide instruction); MODE 2: 64-bit division (2^32 elements and more). */
struct prn_dims4 {
    size_t v[4];
};
static prn_dims4 prn_dims(const size_t *p) {
    prn_dims4 d;
    for (int i = 0; i < 4; ++i) d.v[i] = p[i];
    return d;
}
/* The divisors of a 4-D index split: shape[3], shape[2], shape[1]. */
struct prn_split4 {
    prn_fdiv f3, f2, f1;
};
static prn_split4 prn_split(const size_t *sh) {
    prn_split4 s;
    s.f3 = prn_fdiv_make(sh[3]);
    s.f2 = prn_fdiv_make(sh[2]);
    s.f1 = prn_fdiv_make(sh[1]);
    return s;
}
/* Is st the row-major layout of sh (sizes of 1 may have any stride)? */
static int prn_dense(const size_t *sh, const size_t *st) {
    size_t want = 1;
    for (int k = 3; k >= 0; --k) {
        if (sh[k] != 1 && st[k] != want) return 0;
        want *= sh[k];
    }
    return 1;
}

template <int MODE>
__device__ __forceinline__ void prn_index4(size_t i, const prn_dims4 &sh, const prn_split4 &sp, size_t ix[4]) {
    if (MODE == 1) {
        const uint32_t x = (uint32_t)i, r3 = prn_fdiv_q(x, sp.f3), r2 = prn_fdiv_q(r3, sp.f2), r1 = prn_fdiv_q(r2, sp.f1);
        ix[3] = x - r3 * sp.f3.d;
        ix[2] = r3 - r2 * sp.f2.d;
        ix[1] = r2 - r1 * sp.f1.d;
        ix[0] = r1;
    } else {
        size_t r = i / sh.v[3];
        ix[3] = i - r * sh.v[3];
        size_t r2 = r / sh.v[2];
        ix[2] = r - r2 * sh.v[2];
        ix[0] = r2 / sh.v[1];
        ix[1] = r2 - ix[0] * sh.v[1];
    }
}
__device__ __forceinline__ size_t prn_off4(const size_t ix[4], const prn_dims4 &st) {
    return ix[0] * st.v[0] + ix[1] * st.v[1] + ix[2] * st.v[2] + ix[3] * st.v[3];
}

template <typename T, int MODE>
__global__ void k_binary(int op, size_t n, prn_dims4 sh, prn_split4 sp, const T *a, prn_dims4 as, const T *b,
                         prn_dims4 bs, T *y) {
    PRN_FOR(i, n) {
        T A, B;
        if (MODE == 0) {
            A = a[i];
            B = b[i];
        } else {
            size_t ix[4];
            prn_index4<MODE>(i, sh, sp, ix);
            A = a[prn_off4(ix, as)];
            B = b[prn_off4(ix, bs)];
        }
        T r;
        switch (op) {
        case PRN_BINARY_ADD: r = A + B; break;
        case PRN_BINARY_SUB: r = A - B; break;
        case PRN_BINARY_MUL: r = A * B; break;
        case PRN_BINARY_DIV: r = A / B; break;
        case PRN_BINARY_POW: r = ppow(A, B); break;
        case PRN_BINARY_MAX: r = A > B ? A : B; break;
        case PRN_BINARY_MIN: r = A < B ? A : B; break;
        case PRN_BINARY_EQ: r = A == B ? (T)1 : (T)0; break;
        case PRN_BINARY_RELU_GRAD: r = B > 0 ? A : (T)0; break;
        case PRN_BINARY_SIGMOID_GRAD: r = A * B * ((T)1 - B); break;
        default: r = A * ((T)1 - B * B); break; /* PRN_BINARY_TANH_GRAD */
        }
        y[i] = r; /* y may be a or b: this thread read its own element first */
    }
}

template <typename T, int MODE>
static void prn_binary_launch(cudaStream_t s, int op, size_t n, const size_t shape[4], const void *a, const size_t as[4],
                              const void *b, const size_t bs[4], void *y) {
    k_binary<T, MODE><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(op, n, prn_dims(shape), prn_split(shape), (const T *)a,
                                                               prn_dims(as), (const T *)b, prn_dims(bs), (T *)y);
}
template <typename T>
static void prn_binary_mode(cudaStream_t s, int op, size_t n, const size_t shape[4], const void *a, const size_t as[4],
                            const void *b, const size_t bs[4], void *y) {
    if (prn_dense(shape, as) && prn_dense(shape, bs)) prn_binary_launch<T, 0>(s, op, n, shape, a, as, b, bs, y);
    else if (n <= 0xFFFFFFFFu) prn_binary_launch<T, 1>(s, op, n, shape, a, as, b, bs, y);
    else prn_binary_launch<T, 2>(s, op, n, shape, a, as, b, bs, y);
}

extern "C" int prn_cu_binary(cudaStream_t s, int f64, int op, const size_t shape[4], const void *a,
                             const size_t as[4], const void *b, const size_t bs[4], void *y) {
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    if (n == 0) return 0;
    if (f64) prn_binary_mode<double>(s, op, n, shape, a, as, b, bs, y);
    else prn_binary_mode<float>(s, op, n, shape, a, as, b, bs, y);
    return prn_launched();
}

/* ---- strided copy: type-blind; index split as binary's ---- */
template <typename U, int MODE>
__global__ void k_strided_copy(size_t n, prn_dims4 sh, prn_split4 sp, const U *x, prn_dims4 xs, U *y, prn_dims4 ys) {
    PRN_FOR(i, n) {
        size_t ix[4];
        prn_index4<MODE>(i, sh, sp, ix);
        y[prn_off4(ix, ys)] = x[prn_off4(ix, xs)];
    }
}

template <typename U>
static void prn_copy_mode(cudaStream_t s, size_t n, const size_t shape[4], const U *x, const size_t xs[4], U *y,
                          const size_t ys[4]) {
    if (n <= 0xFFFFFFFFu)
        k_strided_copy<U, 1><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, prn_dims(shape), prn_split(shape), x,
                                                                      prn_dims(xs), y, prn_dims(ys));
    else
        k_strided_copy<U, 2><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, prn_dims(shape), prn_split(shape), x,
                                                                      prn_dims(xs), y, prn_dims(ys));
}

extern "C" int prn_cu_strided_copy(cudaStream_t s, int esize, const size_t shape[4], const void *x, size_t xoff,
                                   const size_t xs[4], void *y, size_t yoff, const size_t ys[4]) {
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    if (n == 0) return 0;
    if (esize == 8) prn_copy_mode<uint64_t>(s, n, shape, (const uint64_t *)x + xoff, xs, (uint64_t *)y + yoff, ys);
    else prn_copy_mode<uint32_t>(s, n, shape, (const uint32_t *)x + xoff, xs, (uint32_t *)y + yoff, ys);
    return prn_launched();
}

/* ---- GEMM with K == 0: C = beta C (zeros when beta == 0, whatever C held) ---- */
template <typename T>
__global__ void k_scale_matrices(size_t total, size_t M, size_t N, T beta, int zero, T *C, size_t ldc, size_t sc) {
    PRN_FOR(i, total) {
        size_t j = i % N, r = i / N, row = r % M, bi = r / M;
        T *c = C + bi * sc + row * ldc + j;
        *c = zero ? (T)0 : beta * *c;
    }
}

extern "C" int prn_cu_scale_matrices(cudaStream_t s, int f64, size_t batch, size_t M, size_t N, double beta, void *C,
                                     size_t ldc, size_t sc) {
    size_t total = batch * M * N;
    if (total == 0 || beta == 1) return 0;
    if (f64)
        k_scale_matrices<double><<<prn_grid(total, PRN_TPB), PRN_TPB, 0, s>>>(total, M, N, beta, beta == 0, (double *)C,
                                                                              ldc, sc);
    else
        k_scale_matrices<float><<<prn_grid(total, PRN_TPB), PRN_TPB, 0, s>>>(total, M, N, (float)beta, beta == 0,
                                                                             (float *)C, ldc, sc);
    return prn_launched();
}

/* ---- random: Philox4x32-10 exactly as prn_philox4x32, and the reference's
 * conversion (prn__random_value). The arithmetic uses the _rn intrinsics
 * so nvcc cannot contract it into fused multiply-adds: uniform values must
 * be bit-identical to the host's. ---- */
__device__ __forceinline__ void prn_philox(uint64_t seed, uint64_t counter, uint32_t w[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

template <typename T>
__global__ void k_random(int normal, size_t n, uint64_t seed, uint64_t counter, double p0, double p1, T *y) {
    const int f32 = sizeof(T) == 4;
    PRN_FOR(i, n) {
        uint32_t w[4];
        double v;
        prn_philox(seed, counter + i, w);
        if (!normal) {
            double u = f32 ? (double)(w[0] >> 8) * (1.0 / 16777216.0)
                           : (double)(((uint64_t)w[0] << 21) ^ (w[1] >> 11)) * (1.0 / 9007199254740992.0);
            v = __dadd_rn(p0, __dmul_rn(__dsub_rn(p1, p0), u));
            if (f32) v = (double)__double2float_rn(v); /* clamp the value as stored */
            if (!(v < p1 || p1 <= p0)) v = p0;         /* keep [lo, hi) under rounding */
        } else {
            double u1 = __dmul_rn((double)(((uint64_t)w[0] << 21) ^ (w[1] >> 11)) + 1.0, 1.0 / 9007199254740992.0);
            double u2 = __dmul_rn((double)(((uint64_t)w[2] << 21) ^ (w[3] >> 11)), 1.0 / 9007199254740992.0);
            double r = sqrt(__dmul_rn(-2.0, log(u1)));
            v = __dadd_rn(p0, __dmul_rn(__dmul_rn(p1, r), cos(__dmul_rn(6.283185307179586476925, u2))));
        }
        y[i] = (T)v;
    }
}

extern "C" int prn_cu_random(cudaStream_t s, int f64, int normal, size_t n, uint64_t seed, uint64_t counter,
                             double p0, double p1, void *y) {
    if (n == 0) return 0;
    if (f64) k_random<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(normal, n, seed, counter, p0, p1, (double *)y);
    else k_random<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(normal, n, seed, counter, p0, p1, (float *)y);
    return prn_launched();
}

/* ---- optimisers: the reference's arithmetic in the element type ---- */
template <typename T> __global__ void k_sgd(size_t n, T *w, const T *g, T *v, prn_cu_optim p) {
    const T lr = (T)p.lr, mom = (T)p.momentum, wd = (T)p.weight_decay;
    PRN_FOR(i, n) {
        T d = g[i] + wd * w[i];
        if (v) {
            v[i] = mom * v[i] + d;
            d = p.nesterov ? d + mom * v[i] : v[i];
        }
        w[i] -= lr * d;
    }
}

template <typename T> __global__ void k_adam(size_t n, T *w, const T *g, T *m, T *v, prn_cu_optim p) {
    const T lr = (T)p.lr, b1 = (T)p.beta1, b2 = (T)p.beta2, eps = (T)p.eps, wd = (T)p.weight_decay;
    const T ib1 = (T)p.ib1, ib2 = (T)p.ib2;
    const int dec = p.decoupled;
    PRN_FOR(i, n) {
        const T wi = w[i], gi = dec ? g[i] : g[i] + wd * wi;
        const T mi = b1 * m[i] + ((T)1 - b1) * gi;
        const T vi = b2 * v[i] + ((T)1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] = wi - lr * ((mi * ib1) / (psqrt(vi * ib2) + eps) + (dec ? wd * wi : (T)0));
    }
}

extern "C" int prn_cu_sgd(cudaStream_t s, int f64, size_t n, void *w, const void *g, void *v, const prn_cu_optim *p) {
    if (n == 0) return 0;
    if (f64) k_sgd<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, (double *)w, (const double *)g, (double *)v, *p);
    else k_sgd<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, (float *)w, (const float *)g, (float *)v, *p);
    return prn_launched();
}

extern "C" int prn_cu_adam(cudaStream_t s, int f64, size_t n, void *w, const void *g, void *m, void *v,
                           const prn_cu_optim *p) {
    if (n == 0) return 0;
    if (f64)
        k_adam<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, (double *)w, (const double *)g, (double *)m,
                                                                (double *)v, *p);
    else
        k_adam<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, (float *)w, (const float *)g, (float *)m, (float *)v,
                                                               *p);
    return prn_launched();
}
