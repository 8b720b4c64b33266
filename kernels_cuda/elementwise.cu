/* elementwise.cu - fill, unary, binary, strided copy, GEMM's K == 0 case,
 * random numbers and the fused optimiser updates of the CUDA backend.
 * One element per thread of a grid-stride loop; 64-bit indices. */
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

/* ---- binary: 4-D broadcast walk; element i of y is index (i0,i1,i2,i3) ---- */
struct prn_dims4 {
    size_t v[4];
};
static prn_dims4 prn_dims(const size_t *p) {
    prn_dims4 d;
    for (int i = 0; i < 4; ++i) d.v[i] = p[i];
    return d;
}

/* Offset of element i (row-major over shape) under strides st. */
__device__ __forceinline__ size_t prn_offset(size_t i, const prn_dims4 &sh, const prn_dims4 &st) {
    size_t i3 = i % sh.v[3], r = i / sh.v[3];
    size_t i2 = r % sh.v[2];
    r /= sh.v[2];
    size_t i1 = r % sh.v[1], i0 = r / sh.v[1];
    return i0 * st.v[0] + i1 * st.v[1] + i2 * st.v[2] + i3 * st.v[3];
}

template <typename T>
__global__ void k_binary(int op, size_t n, prn_dims4 sh, const T *a, prn_dims4 as, const T *b, prn_dims4 bs, T *y) {
    PRN_FOR(i, n) {
        const T A = a[prn_offset(i, sh, as)], B = b[prn_offset(i, sh, bs)];
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

extern "C" int prn_cu_binary(cudaStream_t s, int f64, int op, const size_t shape[4], const void *a,
                             const size_t as[4], const void *b, const size_t bs[4], void *y) {
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    if (n == 0) return 0;
    if (f64)
        k_binary<double><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(op, n, prn_dims(shape), (const double *)a, prn_dims(as),
                                                                  (const double *)b, prn_dims(bs), (double *)y);
    else
        k_binary<float><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(op, n, prn_dims(shape), (const float *)a, prn_dims(as),
                                                                 (const float *)b, prn_dims(bs), (float *)y);
    return prn_launched();
}

/* ---- strided copy: type-blind ---- */
template <typename U>
__global__ void k_strided_copy(size_t n, prn_dims4 sh, const U *x, prn_dims4 xs, U *y, prn_dims4 ys) {
    PRN_FOR(i, n) y[prn_offset(i, sh, ys)] = x[prn_offset(i, sh, xs)];
}

extern "C" int prn_cu_strided_copy(cudaStream_t s, int esize, const size_t shape[4], const void *x, size_t xoff,
                                   const size_t xs[4], void *y, size_t yoff, const size_t ys[4]) {
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    if (n == 0) return 0;
    if (esize == 8)
        k_strided_copy<uint64_t><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, prn_dims(shape), (const uint64_t *)x + xoff,
                                                                          prn_dims(xs), (uint64_t *)y + yoff, prn_dims(ys));
    else
        k_strided_copy<uint32_t><<<prn_grid(n, PRN_TPB), PRN_TPB, 0, s>>>(n, prn_dims(shape), (const uint32_t *)x + xoff,
                                                                          prn_dims(xs), (uint32_t *)y + yoff, prn_dims(ys));
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
