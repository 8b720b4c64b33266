/* cuda_runtime.h of the CUDA emulator (tests/cuda_emu/README.md): what the
 * kernels of kernels_cuda/ use on the device side -- the qualifiers,
 * threadIdx and friends, __syncthreads, the rounding intrinsics -- and the
 * launch that replaces the <<<grid, block, shared, stream>>> syntax (the
 * Makefile rewrites `k<<<g, b, m, s>>>(args)` as
 * `prn_emu::launch(g, b, m, s, k)(args)`).
 *
 * A launch runs at once, block after block in index order (or, with
 * PRN_CUDA_EMU_RESIDENT=n, n blocks at a time, each on a host thread of its
 * own); the threads of a block are fibers that run in turn until each
 * reaches __syncthreads or its end, so a barrier is a real barrier. Shared
 * arrays are the kernel's static arrays, one copy per host thread: a host
 * thread runs one block at a time, and contexts on other threads launch
 * their own. */
#ifndef PRN_CUDA_EMU_RUNTIME_H
#define PRN_CUDA_EMU_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include <functional>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* Set by the emulator before a fiber runs (per host thread: contexts on
 * different host threads launch independently). */
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;
static const int warpSize = 32;

void __syncthreads(void);
/* Inter-block communication. Blocks run one after another, or, with
 * PRN_CUDA_EMU_RESIDENT=n, n at a time on host threads; __nanosleep is a
 * spinning thread's yield, and a spin that cannot end is reported. */
void __nanosleep(unsigned ns);
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
/* Round-to-nearest products and sums that the compiler may not contract
 * into an FMA (the emulated kernels are compiled with -ffp-contract=off). */
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline float __double2float_rn(double a) { return (float)a; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }

namespace prn_emu {
/* Dynamic shared memory of the running block (the launch's size; one
 * buffer per host thread, NaN bytes at each block's start). */
unsigned char *dyn_shared(void);
cudaError_t set_max_dyn_shared(void (*key)(void), int bytes);
cudaError_t occupancy(int *n, void (*key)(void), int threads, size_t dyn);
/* Runs body once per thread of the grid; the result also becomes the
 * runtime's last error (as a failed launch does). key names the kernel. */
cudaError_t run(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, void (*key)(void),
                const std::function<void()> &body);

template <class... P> struct launcher {
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
    void (*kernel)(P...);
    template <class... A> void operator()(A... a) const {
        void (*k)(P...) = kernel;
        /* k(a...): the implicit conversions of a real launch, no casts */
        run(grid, block, shared, stream, reinterpret_cast<void (*)(void)>(k), [=]() { k(a...); });
    }
};
template <class... P>
launcher<P...> launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, void (*kernel)(P...)) {
    launcher<P...> l = {grid, block, shared, stream, kernel};
    return l;
}
} /* namespace prn_emu */

/* The runtime's C++ overloads: the opt-in above 48 KiB of dynamic shared
 * memory (checked at launch), and blocks per multiprocessor by threads
 * and shared memory (the emulated device's sm_90 limits). */
template <class F> cudaError_t cudaFuncSetAttribute(F *entry, enum cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    return prn_emu::set_max_dyn_shared(reinterpret_cast<void (*)(void)>(entry), value);
}
/* A cooperative launch: every block resident at once, or the launch fails
 * (cudaErrorCooperativeLaunchTooLarge) -- here, at most
 * PRN_CUDA_EMU_RESIDENT blocks. args: a pointer to each argument. */
#include <utility>
namespace prn_emu {
template <class... P, size_t... I>
cudaError_t launch_args(dim3 g, dim3 b, size_t sh, cudaStream_t st, void (*k)(P...), void **args,
                        std::index_sequence<I...>) {
    launch(g, b, sh, st, k)(*static_cast<typename std::decay<P>::type *>(args[I])...);
    return cudaPeekAtLastError();
}
} /* namespace prn_emu */
template <class... P>
cudaError_t cudaLaunchCooperativeKernel(void (*k)(P...), dim3 g, dim3 b, void **args, size_t sh, cudaStream_t st) {
    if ((long)g.x * g.y * g.z > prn_cuda_emu_resident()) return cudaErrorCooperativeLaunchTooLarge;
    return prn_emu::launch_args(g, b, sh, st, k, args, std::index_sequence_for<P...>());
}
template <class F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, F *entry, int threads, size_t dyn) {
    return prn_emu::occupancy(n, reinterpret_cast<void (*)(void)>(entry), threads, dyn);
}

#endif /* __cplusplus */
#endif /* PRN_CUDA_EMU_RUNTIME_H */
