/* cuda_runtime_api.h of the CUDA emulator (tests/cuda_emu/README.md): the
 * part of the CUDA runtime API that parrnn's CUDA backend calls, with the
 * real names, types and error codes, carried out on the host. Built only
 * for `make test-cuda-emu`, which puts this folder before any CUDA
 * toolkit on the include path. C and C++. */
#ifndef PRN_CUDA_EMU_RUNTIME_API_H
#define PRN_CUDA_EMU_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#define PRN_CUDA_EMU 1
#define CUDART_VERSION 12000

#ifdef __cplusplus
extern "C" {
#endif

/* The codes the backend names, with the values of CUDA 12. */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorStubLibrary = 34,
    cudaErrorInsufficientDriver = 35,
    cudaErrorDevicesUnavailable = 46,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorSystemDriverMismatch = 803,
    cudaErrorCompatNotSupportedOnDevice = 804
} cudaError_t;

typedef struct prn_emu_stream *cudaStream_t;
typedef struct prn_emu_pool *cudaMemPool_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor;
    int multiProcessorCount;
    int maxThreadsPerMultiProcessor;
    int maxThreadsPerBlock;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;    /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    size_t sharedMemPerMultiprocessor;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMemoryPoolsSupported = 115 };

enum cudaMemAllocationType { cudaMemAllocationTypeInvalid = 0, cudaMemAllocationTypePinned = 1 };
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1 };
struct cudaMemLocation {
    enum cudaMemLocationType type;
    int id;
};
struct cudaMemPoolProps {
    enum cudaMemAllocationType allocType;
    int handleTypes;
    struct cudaMemLocation location;
    void *win32SecurityAttributes;
    unsigned char reserved[64];
};
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };

const char *cudaGetErrorName(cudaError_t e);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props);
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMallocFromPoolAsync(void **p, size_t bytes, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *p, cudaStream_t stream);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream);

/* Not CUDA: device allocations live now, and made since the start (for
 * tests/test_cuda.c's leak checks and its sweep of failing allocations). */
size_t prn_cuda_emu_live_allocations(void);
long prn_cuda_emu_allocation_count(void);
/* Not CUDA: blocks that run at once (PRN_CUDA_EMU_RESIDENT, default 1).
 * Kernels whose blocks wait for each other cap their grids by it, as on a
 * GPU by the occupancy (kernels_cuda/rnn_cell.cu). */
long prn_cuda_emu_resident(void);

#ifdef __cplusplus
}
#endif
#endif /* PRN_CUDA_EMU_RUNTIME_API_H */
