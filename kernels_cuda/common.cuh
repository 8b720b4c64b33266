/* common.cuh - helpers shared by the kernel files of the CUDA backend. */
#ifndef PRN_CUDA_COMMON_CUH
#define PRN_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../parrnn.h" /* the op enums only */
#include "prn_cuda_launch.h"

/* Threads per block of every kernel: a power of two (the block reductions
 * halve it) that keeps the block scans' per-thread arrays resident. */
#define PRN_TPB 256
/* The largest grid any kernel gets: legal on every device, and the kernels
 * loop over whatever is left (grid-stride), so sizes need no other limit. */
#define PRN_MAX_GRID ((size_t)65535)

static inline unsigned prn_grid(size_t items, size_t per_block) {
    size_t g = (items + per_block - 1) / per_block;
    if (g < 1) g = 1;
    if (g > PRN_MAX_GRID) g = PRN_MAX_GRID;
    return (unsigned)g;
}
static inline __host__ __device__ size_t prn_min(size_t a, size_t b) { return a < b ? a : b; }
static inline __host__ __device__ size_t prn_cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* The launch status, without waiting for the kernel. */
static inline int prn_launched(void) { return (int)cudaGetLastError(); }

#define PRN_FOR(i, n)                                                                                  \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)(n);                    \
         i += (size_t)blockDim.x * gridDim.x)

/* Math by element type (the reference uses the f suffixed functions for f32). */
__device__ __forceinline__ float pexp(float x) { return expf(x); }
__device__ __forceinline__ double pexp(double x) { return exp(x); }
__device__ __forceinline__ float plog(float x) { return logf(x); }
__device__ __forceinline__ double plog(double x) { return log(x); }
__device__ __forceinline__ float ptanh(float x) { return tanhf(x); }
__device__ __forceinline__ double ptanh(double x) { return tanh(x); }
__device__ __forceinline__ float psqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double psqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float ppow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double ppow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float pabs(float x) { return fabsf(x); }
__device__ __forceinline__ double pabs(double x) { return fabs(x); }

/* Division by a run-time divisor d < 2^32 of x < 2^32 without a divide
 * instruction: q = (mulhi(x, m) + x) >> l with l = ceil(log2 d) and
 * m = floor(2^32 (2^l - d) / d) + 1 (Granlund and Montgomery, "Division by
 * invariant integers using multiplication", 1994, Theorem 4.2), exact for
 * every such x and d >= 1; the sum is taken in 64 bits. Made on the host,
 * once per launch. */
struct prn_fdiv {
    uint32_t d, m, l;
};
static inline prn_fdiv prn_fdiv_make(size_t d) {
    prn_fdiv f;
    uint32_t l = 0;
    while (l < 32 && ((uint64_t)1 << l) < d) ++l;
    f.d = (uint32_t)d;
    f.l = l;
    f.m = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - d)) / d + 1);
    return f;
}
__device__ __forceinline__ uint32_t prn_umulhi(uint32_t x, uint32_t y) {
#ifdef __CUDA_ARCH__
    return __umulhi(x, y);
#else
    return (uint32_t)(((uint64_t)x * y) >> 32);
#endif
}
__device__ __forceinline__ uint32_t prn_fdiv_q(uint32_t x, const prn_fdiv &f) {
    return (uint32_t)(((uint64_t)prn_umulhi(x, f.m) + x) >> f.l);
}

/* 16 bytes of R, 16-byte aligned: one 128-bit load or store (ld.global.v4 /
 * .v2) where the address allows. */
template <typename R> struct alignas(16) prn_vec {
    enum { N = 16 / sizeof(R) };
    R v[16 / sizeof(R)];
};

/* Asynchronous copies from global to shared memory (cp.async, sm_80 and
 * later): the data go to shared memory without passing through registers,
 * so a thread can have all its loads in flight at once whatever their
 * number; prn_cp_wait waits for the thread's own copies (a barrier after it
 * makes them visible to the block). One element, or 16 bytes (both
 * addresses 16-byte aligned). Elsewhere (the emulator) plain copies. */
template <typename R> __device__ __forceinline__ void prn_cp1(R *s, const R *g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(s)),
                 "l"(__cvta_generic_to_global(g)), "n"((int)sizeof(R))
                 : "memory");
#else
    *s = *g;
#endif
}
template <typename R> __device__ __forceinline__ void prn_cp16(R *s, const R *g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(s)),
                 "l"(__cvta_generic_to_global(g))
                 : "memory");
#else
    *(prn_vec<R> *)s = *(const prn_vec<R> *)g;
#endif
}
__device__ __forceinline__ void prn_cp_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

/* The block's dynamic shared memory (the launch's third argument), as
 * bytes 16-byte aligned; the emulator (tests/cuda_emu) keeps a buffer per
 * host thread. */
#ifdef PRN_CUDA_EMU
#define PRN_DYN_SHARED(name) unsigned char *name = prn_emu::dyn_shared()
#else
#define PRN_DYN_SHARED(name)                                                                           \
    extern __shared__ __align__(16) unsigned char prn_dyn_smem_[];                                     \
    unsigned char *name = prn_dyn_smem_
#endif

#endif
