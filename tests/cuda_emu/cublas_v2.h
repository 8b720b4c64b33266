/* cublas_v2.h of the CUDA emulator (tests/cuda_emu/README.md): the cuBLAS
 * calls parrnn's CUDA backend makes, with cuBLAS's argument rules and
 * status codes, computed on the host in column-major order. C and C++. */
#ifndef PRN_CUDA_EMU_CUBLAS_V2_H
#define PRN_CUDA_EMU_CUBLAS_V2_H

#include "cuda_runtime_api.h"

#define CUBLAS_VER_MAJOR 12

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef struct prn_emu_blas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
const char *cublasGetStatusName(cublasStatus_t status);
const char *cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch);
cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                                            int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                                            long long sa, const float *B, int64_t ldb, long long sb,
                                            const float *beta, float *C, int64_t ldc, long long sc, int64_t batch);
cublasStatus_t cublasDgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                                            int64_t n, int64_t k, const double *alpha, const double *A, int64_t lda,
                                            long long sa, const double *B, int64_t ldb, long long sb,
                                            const double *beta, double *C, int64_t ldc, long long sc, int64_t batch);

#ifdef __cplusplus
}
#endif
#endif /* PRN_CUDA_EMU_CUBLAS_V2_H */
