/* parrnn_cuda.h - the CUDA backend of parrnn: every primitive of the backend
 * table as CUDA kernels (kernels_cuda/ *.cu), GEMM through cuBLAS.
 *
 * USE
 *   In ONE C or C++ file, after the implementation of parrnn.h:
 *       #define PARRNN_CUDA_IMPLEMENTATION
 *       #include "backends/parrnn_cuda.h"
 *   (or compile this header as a file of its own, as cuda.mk does), and
 *   link the kernels. Then pass prn_cuda_backend() in prn_config.backends,
 *   or compile parrnn.h's implementation with -DPARRNN_WITH_CUDA: "cuda" is
 *   then a built-in name (config.backend = "cuda", or PARRNN_BACKEND=cuda
 *   in the environment). This file uses only parrnn's public API.
 *
 * BUILD (what `make -f Makefile -f cuda.mk cuda` does)
 *   The kernels, with nvcc (code for sm_80 and sm_90):
 *       nvcc -O3 -std=c++14 -I. -gencode arch=compute_80,code=sm_80 \
 *            -gencode arch=compute_90,code=sm_90 -c kernels_cuda/X.cu
 *   for each X, then the host side and the program with any C99 compiler:
 *       cc -std=c99 -I. -I/usr/local/cuda/include -DPARRNN_WITH_CUDA \
 *          -x c -DPARRNN_CUDA_IMPLEMENTATION -c backends/parrnn_cuda.h -o cuda.o
 *       cc -std=c99 -I. -DPARRNN_WITH_CUDA app.c cuda.o *.o \
 *          -L/usr/local/cuda/lib64 -lcublas -lcudart -lstdc++ -lm
 *   (app.c defines PARRNN_IMPLEMENTATION and includes parrnn.h as usual).
 *
 * DEVICE
 *   prn_config.device, else the environment variable PARRNN_CUDA_DEVICE:
 *   a device index (0, 1, ... as CUDA numbers them, so CUDA_VISIBLE_DEVICES
 *   applies first); default device 0. A context creation fails with
 *   PRN_ERR_NO_DEVICE and a message when there is no driver, no device, no
 *   device of that index, or no code in this build for the device's
 *   architecture (the tests then skip the backend).
 *
 * CONTEXTS
 *   Each context has its own stream, cuBLAS handle and memory pool; nothing
 *   is global. Primitives are queued on the stream and return at once;
 *   buf_upload and buf_download wait for the stream, so host memory may be
 *   reused when they return (and errors of earlier kernels surface there).
 *   Every call first makes the context's device current on the calling
 *   thread, so contexts on different devices can share a thread.
 *
 * SCANS
 *   Diagonal, AUTO: when batch x channels alone fill the device, a thread
 *   per (sequence, channel) walks time (one read of a and b); otherwise a
 *   single pass with decoupled look-back (kernels_cuda/scan.cu): tiles of
 *   time x channels, handed out in order by an atomic ticket, publish
 *   their affine maps as soon as they have read them; a tile starts from
 *   the outgoing state of the tile D places back in its chain composed
 *   with the D-1 maps between, in an order fixed by the shape and the tile
 *   (the same bits on every run), so no tile waits on a chain of
 *   look-backs; a and b are read once. Its model
 *   (prn_cu_scan_diag_lookback_pays) prefers it to the chunked scan at
 *   every shape whose status fits but one chain of 2-8 channel rows (f32;
 *   measured slower there on an H200); the chunked scan below serves the
 *   others. The environment variable PARRNN_CUDA_SCAN=lookback or =chunked,
 *   read at context creation, overrides that choice (tests, benchmarks).
 *   CHUNKED and TREE, and every block scan: reduce / scan / expand, parallel
 *   along the sequence: time is cut into chunks, each chunk is folded into
 *   one affine map, the maps are scanned (by the same code, recursively),
 *   and each chunk is re-run from its incoming carry (a and b read twice,
 *   except with one chunk, as above).
 *   SEQUENTIAL runs one chunk: a thread per (sequence, channel) --
 *   (sequence, block) for block scans -- walks all of time (parallel over
 *   channels, serial in time: the baseline of the benchmarks). Other values
 *   fail with PRN_ERR_INVALID_ARGUMENT. f32 accumulates in f32.
 *
 * RNN LAYERS
 *   rnn_layer_forward / _backward: ONE persistent kernel per layer wherever
 *   W_hh fits on chip: W_hh cut by hidden units over ns blocks (each keeps
 *   its slice in shared memory for all T steps and runs a group of bg
 *   sequences; the blocks of a group exchange h each step (f32: tagged
 *   64-bit words; f64: a barrier), all resident
 *   at once by the occupancy), the plan made per call from H, B, the SM
 *   count and the opt-in shared memory (kernels_cuda/rnn_cell.cu); at
 *   H = 1, a thread per sequence with everything in registers. The
 *   results' bits do not depend on the plan. Otherwise (W_hh too large for
 *   the resident blocks: f32 LSTM H = 512 backward at B = 64, larger f64
 *   layers) they queue per step a cuBLAS GEMM (the hidden projection; in
 *   the backward, d h_prev += dq W_hh) and the cell kernel of
 *   rnn_gates_forward / _backward, reading and writing the layer's [B, T, X]
 *   arrays in place. PARRNN_CUDA_LAYER=steps (read at context creation)
 *   forces the latter, PARRNN_CUDA_LAYER=blocks the block kernels even at
 *   H = 1; PARRNN_CUDA_LAYER_SLICES=n plans at least n slices (tests,
 *   benchmarks).
 *
 * DEER
 *   deer_iterate / deer_adjoint: prn_deer_rnn's built-in cells of at most
 *   64 states (f64: 32) fused (kernels_cuda/deer.cu; see the kernels' README);
 *   the table's supports declines larger ones, which are composed from the
 *   entries above. PARRNN_CUDA_DEER=composed (read at context creation) declines
 *   all, for comparisons and benchmarks.
 *
 * ERRORS
 *   Every CUDA and cuBLAS failure becomes PRN_ERR_BACKEND, or
 *   PRN_ERR_OUT_OF_MEMORY for allocations, with the call and the error's
 *   name and code in the message. Nothing leaks on failure; nothing aborts
 *   or prints.
 *
 * TESTING WITHOUT A GPU
 *   tests/cuda_emu builds this file and the kernels against a host
 *   emulation of the CUDA runtime and cuBLAS (`make test-cuda-emu`); see
 *   its README for what that does and does not check.
 *
 * Compiles as C99 and as C++. MIT licence, as parrnn.h.
 */
#ifndef PARRNN_CUDA_H
#define PARRNN_CUDA_H
#include "../parrnn.h"
#ifdef __cplusplus
extern "C" {
#endif
/* The backend table ("cuda"). */
PRNDEF const prn_backend *prn_cuda_backend(void);
#ifdef __cplusplus
}
#endif
#endif /* PARRNN_CUDA_H */

#ifdef PARRNN_CUDA_IMPLEMENTATION
#ifndef PARRNN_CUDA_IMPLEMENTATION_DONE
#define PARRNN_CUDA_IMPLEMENTATION_DONE

/* The CUDA headers use C11 anonymous unions: not ours to fix under -Wpedantic. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include "../kernels_cuda/prn_cuda_launch.h" /* the kernels' launchers */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* private functions: static, no unused attribute, so that the compiler finds dead code */
#define PRN__CU_FN static
#ifdef PARRNN_STATIC
#define PRN__CU_DEF static
#else
#define PRN__CU_DEF
#endif

/* ------------------------------------------------------------------------
 * State and errors
 * ---------------------------------------------------------------------- */
typedef struct prn__cu_state {
    int device;
    int sm_count;           /* multiprocessors: sizes grids and chunk counts */
    size_t scan_items;      /* threads that fill the device */
    int scan_force;         /* PARRNN_CUDA_SCAN: 0 auto, 1 look-back, 2 chunked (for AUTO) */
    int layer_steps;        /* PARRNN_CUDA_LAYER=steps: layers as a GEMM and a cell kernel per step */
    int layer_blocks;       /* PARRNN_CUDA_LAYER=blocks: the one-kernel layers never a thread per sequence */
    unsigned layer_slices;  /* PARRNN_CUDA_LAYER_SLICES=n: the one-kernel layers in at least n slices */
    size_t smem_optin;      /* dynamic shared memory a block may opt in to */
    int deer_composed;      /* PARRNN_CUDA_DEER=composed: supports declines every DEER call */
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaMemPool_t pool;     /* NULL where the device has no memory pools */
    char name[256];
} prn__cu_state;

PRN__CU_FN prn__cu_state *prn__cu_get(prn_context *ctx) { return (prn__cu_state *)prn_backend_state(ctx); }

/* Sets the context's error for a failed CUDA call (call names it) and
 * returns its status. Clears the runtime's last error, so that the next
 * launch check does not report this one again. */
PRN__CU_FN prn_status prn__cu_fail(prn_context *ctx, const char *call, cudaError_t e) {
    prn_status st = e == cudaErrorMemoryAllocation ? PRN_ERR_OUT_OF_MEMORY : PRN_ERR_BACKEND;
    (void)cudaGetLastError();
    return prn_set_error(ctx, st, "cuda: %s failed: %s (%d): %s", call, cudaGetErrorName(e), (int)e,
                         cudaGetErrorString(e));
}

PRN__CU_FN prn_status prn__cu_blas_fail(prn_context *ctx, const char *call, cublasStatus_t e) {
    prn_status st = e == CUBLAS_STATUS_ALLOC_FAILED ? PRN_ERR_OUT_OF_MEMORY : PRN_ERR_BACKEND;
    (void)cudaGetLastError();
    return prn_set_error(ctx, st, "cuda: %s failed: %s (%d): %s", call, cublasGetStatusName(e), (int)e,
                         cublasGetStatusString(e));
}

/* A launcher's result: fn is the primitive, kernel what it launched. */
PRN__CU_FN prn_status prn__cu_launched(prn_context *ctx, const char *fn, const char *kernel, int e) {
    char call[128];
    if (e == 0) return PRN_OK;
    snprintf(call, sizeof call, "%s: launch of %s", fn, kernel);
    return prn__cu_fail(ctx, call, (cudaError_t)e);
}

/* Makes the context's device current on this thread (the runtime keeps
 * the current device per thread; contexts may sit on different devices). */
PRN__CU_FN prn_status prn__cu_enter(prn_context *ctx, prn__cu_state *s) {
    int cur = -1;
    cudaError_t e;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == s->device) return PRN_OK;
    e = cudaSetDevice(s->device);
    return e == cudaSuccess ? PRN_OK : prn__cu_fail(ctx, "cudaSetDevice", e);
}

/* Errors that mean "no usable driver or device here" rather than a fault. */
PRN__CU_FN int prn__cu_no_device(cudaError_t e) {
    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
           e == cudaErrorDevicesUnavailable || e == cudaErrorInvalidDevice || e == cudaErrorStubLibrary ||
           e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
           e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion;
}

/* ------------------------------------------------------------------------
 * Device memory: from the context's pool in stream order (frees need no
 * synchronisation, and freed blocks are reused by the next allocations),
 * else cudaMalloc/cudaFree. Zero bytes still get a distinct allocation,
 * so that every handle is a valid, non-NULL device pointer.
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_malloc(prn_context *ctx, prn__cu_state *s, size_t bytes, void **p, const char *what) {
    cudaError_t e;
    char call[128];
    *p = NULL;
    if (bytes == 0) bytes = 1;
    if (s->pool) {
        e = cudaMallocFromPoolAsync(p, bytes, s->pool, s->stream);
        if (e == cudaErrorMemoryAllocation) { /* give the pool's idle memory back, then try again */
            (void)cudaGetLastError();
            if (cudaStreamSynchronize(s->stream) == cudaSuccess) {
                cudaMemPoolTrimTo(s->pool, 0);
                e = cudaMallocFromPoolAsync(p, bytes, s->pool, s->stream);
            }
        }
    } else {
        e = cudaMalloc(p, bytes);
    }
    if (e != cudaSuccess) {
        *p = NULL;
        snprintf(call, sizeof call, "%s: %s(%lu bytes)", what, s->pool ? "cudaMallocFromPoolAsync" : "cudaMalloc",
                 (unsigned long)bytes);
        return prn__cu_fail(ctx, call, e);
    }
    return PRN_OK;
}

PRN__CU_FN void prn__cu_mfree(prn__cu_state *s, void *p) {
    if (!p) return;
    if (s->pool) cudaFreeAsync(p, s->stream); /* after the work queued before it */
    else cudaFree(p);                          /* waits for the device */
    (void)cudaGetLastError();                  /* a failed free has no one to report to */
}

/* ------------------------------------------------------------------------
 * Create, destroy
 * ---------------------------------------------------------------------- */
PRN__CU_FN void prn__cu_destroy(prn_context *ctx, void *state) {
    prn__cu_state *s = (prn__cu_state *)state;
    if (!s) return;
    cudaSetDevice(s->device);
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (s->blas) cublasDestroy(s->blas);
    if (s->pool) cudaMemPoolDestroy(s->pool); /* released once its last block is freed */
    if (s->stream) cudaStreamDestroy(s->stream);
    (void)cudaGetLastError();
    prn_free(ctx, s);
}

PRN__CU_FN prn_status prn__cu_create(prn_context *ctx, void **state) {
    const char *sel = prn_context_device(ctx);
    prn__cu_state *s;
    cudaError_t e;
    cublasStatus_t be;
    int count = 0, dev = 0, pools = 0, major = 0, minor = 0;
    prn_status st = PRN_OK;
    if (!sel || !*sel) sel = getenv("PARRNN_CUDA_DEVICE");
    if (sel && !*sel) sel = NULL;
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return prn_set_error(ctx, prn__cu_no_device(e) ? PRN_ERR_NO_DEVICE : PRN_ERR_BACKEND,
                             "cuda: no usable CUDA driver or device: cudaGetDeviceCount failed: %s (%d): %s",
                             cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    }
    if (count <= 0) return prn_set_error(ctx, PRN_ERR_NO_DEVICE, "cuda: the CUDA driver reports no device");
    if (sel) {
        char *end = NULL;
        long v = strtol(sel, &end, 10);
        if (end == sel || *end != 0 || v < 0)
            return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT,
                                 "cuda: device '%s' is not a device index (0 to %d)", sel, count - 1);
        if (v >= count)
            return prn_set_error(ctx, PRN_ERR_NO_DEVICE, "cuda: no CUDA device %ld (there are %d)", v, count);
        dev = (int)v;
    }
    s = (prn__cu_state *)prn_alloc(ctx, sizeof *s);
    if (!s) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "cuda: out of memory for the backend state");
    memset(s, 0, sizeof *s);
    s->device = dev;
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        prn__cu_fail(ctx, "cudaSetDevice", e);
        st = prn__cu_no_device(e) ? PRN_ERR_NO_DEVICE : prn_last_status(ctx);
        goto fail;
    }
    {
        struct cudaDeviceProp prop;
        if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
            st = prn__cu_fail(ctx, "cudaGetDeviceProperties", e);
            goto fail;
        }
        snprintf(s->name, sizeof s->name, "%s", prop.name);
        s->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
        s->smem_optin = prop.sharedMemPerBlockOptin;
        major = prop.major;
        minor = prop.minor;
        /* enough threads to fill every multiprocessor */
        s->scan_items = (size_t)s->sm_count * (prop.maxThreadsPerMultiProcessor > 0 ? prop.maxThreadsPerMultiProcessor : 1024);
        if (s->scan_items < 4096) s->scan_items = 4096;
    }
    {
        const char *force = getenv("PARRNN_CUDA_SCAN");
        s->scan_force = force && !strcmp(force, "lookback") ? 1 : force && !strcmp(force, "chunked") ? 2 : 0;
        force = getenv("PARRNN_CUDA_LAYER");
        s->layer_steps = force && !strcmp(force, "steps");
        s->layer_blocks = force && !strcmp(force, "blocks");
        force = getenv("PARRNN_CUDA_LAYER_SLICES");
        s->layer_slices = force ? (unsigned)strtoul(force, NULL, 10) : 0;
        force = getenv("PARRNN_CUDA_DEER");
        s->deer_composed = force && !strcmp(force, "composed");
    }
    if ((e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        s->stream = NULL;
        st = prn__cu_fail(ctx, "cudaStreamCreateWithFlags", e);
        if (prn__cu_no_device(e)) st = PRN_ERR_NO_DEVICE;
        goto fail;
    }
    /* Does this build have code for the device? (a kernel launch says) */
    e = (cudaError_t)prn_cu_probe(s->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        st = prn_set_error(ctx, prn__cu_no_device(e) ? PRN_ERR_NO_DEVICE : PRN_ERR_BACKEND,
                           "cuda: device %d (%s, sm_%d%d) cannot run this build's kernels (built for sm_80, sm_90): %s "
                           "(%d): %s",
                           dev, s->name, major, minor, cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
        goto fail;
    }
    if ((be = cublasCreate(&s->blas)) != CUBLAS_STATUS_SUCCESS) {
        s->blas = NULL;
        st = prn__cu_blas_fail(ctx, "cublasCreate", be);
        goto fail;
    }
    if ((be = cublasSetStream(s->blas, s->stream)) != CUBLAS_STATUS_SUCCESS) {
        st = prn__cu_blas_fail(ctx, "cublasSetStream", be);
        goto fail;
    }
    /* A pool of the context's own (the device's default pool is shared
     * process-wide state). It keeps up to 1 GiB of freed memory for reuse:
     * ops allocate every output afresh. */
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess && pools) {
        struct cudaMemPoolProps props;
        uint64_t keep = (uint64_t)1 << 30;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        if (cudaMemPoolCreate(&s->pool, &props) != cudaSuccess) s->pool = NULL; /* cudaMalloc instead */
        else cudaMemPoolSetAttribute(s->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    (void)cudaGetLastError();
    *state = s;
    return PRN_OK;
fail:
    prn__cu_destroy(ctx, s);
    return st;
}

/* ------------------------------------------------------------------------
 * Buffers: a handle is the device pointer itself
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_buf_alloc(prn_context *ctx, size_t bytes, void **buf) {
    prn__cu_state *s = prn__cu_get(ctx);
    prn_status st = prn__cu_enter(ctx, s);
    void *p;
    if (st == PRN_OK) st = prn__cu_malloc(ctx, s, bytes, &p, "buf_alloc");
    if (st == PRN_OK) *buf = p;
    return st;
}

PRN__CU_FN void prn__cu_buf_free(prn_context *ctx, void *buf) {
    prn__cu_state *s = prn__cu_get(ctx);
    if (!buf) return;
    if (prn__cu_enter(ctx, s) != PRN_OK) return;
    prn__cu_mfree(s, buf);
}

PRN__CU_FN prn_status prn__cu_sync(prn_context *ctx, prn__cu_state *s, const char *fn) {
    char call[96];
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess) return PRN_OK;
    snprintf(call, sizeof call, "%s: cudaStreamSynchronize", fn);
    return prn__cu_fail(ctx, call, e);
}

PRN__CU_FN prn_status prn__cu_buf_upload(prn_context *ctx, void *dst, size_t off, const void *src, size_t bytes) {
    prn__cu_state *s = prn__cu_get(ctx);
    prn_status st;
    cudaError_t e;
    if (!bytes) return PRN_OK;
    if ((st = prn__cu_enter(ctx, s)) != PRN_OK) return st;
    e = cudaMemcpyAsync((char *)dst + off, src, bytes, cudaMemcpyHostToDevice, s->stream);
    if (e != cudaSuccess) return prn__cu_fail(ctx, "buf_upload: cudaMemcpyAsync", e);
    return prn__cu_sync(ctx, s, "buf_upload"); /* src may be reused on return */
}

PRN__CU_FN prn_status prn__cu_buf_download(prn_context *ctx, const void *src, size_t off, void *dst, size_t bytes) {
    prn__cu_state *s = prn__cu_get(ctx);
    prn_status st;
    cudaError_t e;
    if (!bytes) return PRN_OK;
    if ((st = prn__cu_enter(ctx, s)) != PRN_OK) return st;
    e = cudaMemcpyAsync(dst, (const char *)src + off, bytes, cudaMemcpyDeviceToHost, s->stream);
    if (e != cudaSuccess) return prn__cu_fail(ctx, "buf_download: cudaMemcpyAsync", e);
    return prn__cu_sync(ctx, s, "buf_download");
}

PRN__CU_FN prn_status prn__cu_buf_copy(prn_context *ctx, void *dst, size_t doff, const void *src, size_t soff,
                                       size_t bytes) {
    prn__cu_state *s = prn__cu_get(ctx);
    char *d = (char *)dst + doff;
    const char *p = (const char *)src + soff;
    prn_status st;
    cudaError_t e;
    if (!bytes || d == p) return PRN_OK;
    if ((st = prn__cu_enter(ctx, s)) != PRN_OK) return st;
    if (d < p + bytes && p < d + bytes) { /* overlapping (memmove): cudaMemcpy's result would be undefined */
        void *tmp;
        if ((st = prn__cu_malloc(ctx, s, bytes, &tmp, "buf_copy")) != PRN_OK) return st;
        e = cudaMemcpyAsync(tmp, p, bytes, cudaMemcpyDeviceToDevice, s->stream);
        if (e == cudaSuccess) e = cudaMemcpyAsync(d, tmp, bytes, cudaMemcpyDeviceToDevice, s->stream);
        prn__cu_mfree(s, tmp);
    } else {
        e = cudaMemcpyAsync(d, p, bytes, cudaMemcpyDeviceToDevice, s->stream);
    }
    return e == cudaSuccess ? PRN_OK : prn__cu_fail(ctx, "buf_copy: cudaMemcpyAsync", e);
}

/* ------------------------------------------------------------------------
 * Elementwise (kernels_cuda/elementwise.cu)
 * ---------------------------------------------------------------------- */
/* f32 and f64 only (i32 is for indices: fill, copies and argmax). */
PRN__CU_FN prn_status prn__cu_float_type(prn_context *ctx, const char *fn, prn_dtype dt) {
    if (dt == PRN_F32 || dt == PRN_F64) return PRN_OK;
    return prn_set_error(ctx, PRN_ERR_DTYPE, "cuda: %s: dtype %s is not f32 or f64", fn, prn_dtype_name(dt));
}

/* Entry checks shared by the primitives: a float type, the device current. */
PRN__CU_FN prn_status prn__cu_begin(prn_context *ctx, const char *fn, prn_dtype dt, prn__cu_state **s) {
    prn_status st = prn__cu_float_type(ctx, fn, dt);
    *s = prn__cu_get(ctx);
    return st == PRN_OK ? prn__cu_enter(ctx, *s) : st;
}

PRN__CU_FN prn_status prn__cu_fill(prn_context *ctx, prn_dtype dtype, void *y, size_t n, double value) {
    prn__cu_state *s = prn__cu_get(ctx);
    prn_status st;
    uint64_t bits = 0;
    int esize = 4;
    if (n == 0) return PRN_OK;
    if ((st = prn__cu_enter(ctx, s)) != PRN_OK) return st;
    if (dtype == PRN_F64) {
        memcpy(&bits, &value, 8);
        esize = 8;
    } else if (dtype == PRN_F32) {
        float v = (float)value;
        uint32_t b;
        memcpy(&b, &v, 4);
        bits = b;
    } else {
        int32_t v = (int32_t)value;
        uint32_t b;
        memcpy(&b, &v, 4);
        bits = b;
    }
    return prn__cu_launched(ctx, "fill", "fill", prn_cu_fill(s->stream, esize, y, n, bits));
}

PRN__CU_FN prn_status prn__cu_unary(prn_context *ctx, prn_unary_op op, prn_dtype dtype, size_t n, const void *x,
                                    void *y, double alpha, double beta) {
    prn__cu_state *s;
    prn_status st;
    if ((int)op < 0 || op >= PRN_UNARY_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "unary: unknown op %d", (int)op);
    if (n == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "unary", dtype, &s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "unary", "unary",
                            prn_cu_unary(s->stream, dtype == PRN_F64, (int)op, n, x, y, alpha, beta));
}

PRN__CU_FN prn_status prn__cu_binary(prn_context *ctx, prn_binary_op op, prn_dtype dtype, const size_t shape[4],
                                     const void *a, const size_t as[4], const void *b, const size_t bs[4], void *y) {
    prn__cu_state *s;
    prn_status st;
    if (shape[0] * shape[1] * shape[2] * shape[3] == 0) return PRN_OK; /* before the op, as the reference */
    if ((int)op < 0 || op >= PRN_BINARY_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "binary: unknown op %d", (int)op);
    if ((st = prn__cu_begin(ctx, "binary", dtype, &s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "binary", "binary",
                            prn_cu_binary(s->stream, dtype == PRN_F64, (int)op, shape, a, as, b, bs, y));
}

PRN__CU_FN prn_status prn__cu_strided_copy(prn_context *ctx, prn_dtype dtype, const size_t shape[4], const void *x,
                                           size_t x_off, const size_t xs[4], void *y, size_t y_off,
                                           const size_t ys[4]) {
    prn__cu_state *s = prn__cu_get(ctx);
    prn_status st;
    if (shape[0] * shape[1] * shape[2] * shape[3] == 0) return PRN_OK;
    if ((st = prn__cu_enter(ctx, s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "strided_copy", "strided_copy",
                            prn_cu_strided_copy(s->stream, dtype == PRN_F64 ? 8 : 4, shape, x, x_off, xs, y, y_off, ys));
}

/* ------------------------------------------------------------------------
 * GEMM through cuBLAS. cuBLAS is column-major, and a row-major matrix is
 * its transpose in column-major: C^T = op(B)^T op(A)^T, so the operands
 * swap (B first) and M, N swap; the transpose flags and leading dimensions
 * carry over unchanged.
 * ---------------------------------------------------------------------- */
/* cuBLAS wants ld >= the contiguous extent even when there is one row
 * (where ld is never used to step): lift it there. */
PRN__CU_FN size_t prn__cu_ld(size_t ld, size_t rows, size_t cols) {
    if (rows <= 1 && ld < cols) ld = cols;
    return ld ? ld : 1;
}

PRN__CU_FN prn_status prn__cu_gemm(prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b, size_t M, size_t N,
                                   size_t K, double alpha, const void *A, size_t lda, size_t sa, const void *B,
                                   size_t ldb, size_t sb, double beta, void *C, size_t ldc, size_t sc, size_t batch) {
    prn__cu_state *s;
    prn_status st;
    cublasStatus_t e;
    cublasOperation_t opa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (M == 0 || N == 0 || batch == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "gemm", dtype, &s)) != PRN_OK) return st;
    if (K == 0) /* no products: C = beta C (zeros for beta == 0) */
        return prn__cu_launched(ctx, "gemm", "scale_matrices",
                                prn_cu_scale_matrices(s->stream, dtype == PRN_F64, batch, M, N, beta, C, ldc, sc));
    /* row-major op(A) is M x K: stored rows x cols = (trans_a ? K x M : M x K) */
    lda = prn__cu_ld(lda, trans_a ? K : M, trans_a ? M : K);
    ldb = prn__cu_ld(ldb, trans_b ? N : K, trans_b ? K : N);
    ldc = prn__cu_ld(ldc, M, N);
#if defined(CUBLAS_VER_MAJOR) && CUBLAS_VER_MAJOR >= 12
    if (dtype == PRN_F64)
        e = cublasDgemmStridedBatched_64(s->blas, opb, opa, (int64_t)N, (int64_t)M, (int64_t)K, &alpha,
                                         (const double *)B, (int64_t)ldb, (long long)sb, (const double *)A,
                                         (int64_t)lda, (long long)sa, &beta, (double *)C, (int64_t)ldc, (long long)sc,
                                         (int64_t)batch);
    else {
        float al = (float)alpha, bt = (float)beta;
        e = cublasSgemmStridedBatched_64(s->blas, opb, opa, (int64_t)N, (int64_t)M, (int64_t)K, &al,
                                         (const float *)B, (int64_t)ldb, (long long)sb, (const float *)A,
                                         (int64_t)lda, (long long)sa, &bt, (float *)C, (int64_t)ldc, (long long)sc,
                                         (int64_t)batch);
    }
#else
    if (M > 2147483647u || N > 2147483647u || K > 2147483647u || lda > 2147483647u || ldb > 2147483647u ||
        ldc > 2147483647u || batch > 2147483647u)
        return prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "cuda: gemm: sizes above 2^31-1 need cuBLAS 12 or later");
    if (dtype == PRN_F64)
        e = cublasDgemmStridedBatched(s->blas, opb, opa, (int)N, (int)M, (int)K, &alpha, (const double *)B, (int)ldb,
                                      (long long)sb, (const double *)A, (int)lda, (long long)sa, &beta, (double *)C,
                                      (int)ldc, (long long)sc, (int)batch);
    else {
        float al = (float)alpha, bt = (float)beta;
        e = cublasSgemmStridedBatched(s->blas, opb, opa, (int)N, (int)M, (int)K, &al, (const float *)B, (int)ldb,
                                      (long long)sb, (const float *)A, (int)lda, (long long)sa, &bt, (float *)C,
                                      (int)ldc, (long long)sc, (int)batch);
    }
#endif
    if (e != CUBLAS_STATUS_SUCCESS)
        return prn__cu_blas_fail(ctx, dtype == PRN_F64 ? "gemm: cublasDgemmStridedBatched" : "gemm: cublasSgemmStridedBatched", e);
    return PRN_OK;
}

/* ------------------------------------------------------------------------
 * Reductions, softmax (kernels_cuda/reduce.cu)
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_reduce(prn_context *ctx, prn_reduce_op op, prn_dtype dtype, size_t outer, size_t n,
                                     size_t inner, const void *x, void *y) {
    prn__cu_state *s;
    prn_status st;
    size_t bytes;
    void *scratch = NULL;
    if ((int)op < 0 || op >= PRN_REDUCE_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "reduce: unknown op %d", (int)op);
    if (outer == 0 || inner == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "reduce", dtype, &s)) != PRN_OK) return st;
    /* few outputs from long rows: two stages through scratch */
    bytes = prn_cu_reduce_scratch(outer, n, inner, s->sm_count);
    if (bytes && (st = prn__cu_malloc(ctx, s, bytes, &scratch, "reduce: scratch")) != PRN_OK) return st;
    st = prn__cu_launched(ctx, "reduce", "reduce",
                          prn_cu_reduce(s->stream, dtype == PRN_F64, (int)op, outer, n, inner, x, y, scratch,
                                        s->sm_count));
    prn__cu_mfree(s, scratch);
    return st;
}

PRN__CU_FN prn_status prn__cu_argmax(prn_context *ctx, prn_dtype dtype, size_t outer, size_t n, size_t inner,
                                     const void *x, void *y) {
    prn__cu_state *s;
    prn_status st;
    if (outer == 0 || inner == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "argmax", dtype, &s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "argmax", "argmax", prn_cu_argmax(s->stream, dtype == PRN_F64, outer, n, inner, x, y));
}

PRN__CU_FN prn_status prn__cu_softmax(prn_context *ctx, prn_dtype dtype, int logsm, size_t outer, size_t n,
                                      size_t inner, const void *x, void *y) {
    prn__cu_state *s;
    prn_status st;
    if (outer == 0 || inner == 0 || n == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "softmax", dtype, &s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "softmax", "softmax",
                            prn_cu_softmax(s->stream, dtype == PRN_F64, logsm != 0, outer, n, inner, x, y));
}

/* ------------------------------------------------------------------------
 * Random numbers, optimisers (kernels_cuda/elementwise.cu)
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_random(prn_context *ctx, prn_random_dist dist, prn_dtype dtype, size_t n, uint64_t seed,
                                     uint64_t counter, double p0, double p1, void *y) {
    prn__cu_state *s;
    prn_status st;
    if (dist != PRN_RANDOM_UNIFORM && dist != PRN_RANDOM_NORMAL)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "random: unknown distribution %d", (int)dist);
    if (n == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "random", dtype, &s)) != PRN_OK) return st;
    return prn__cu_launched(ctx, "random", "random",
                            prn_cu_random(s->stream, dtype == PRN_F64, dist == PRN_RANDOM_NORMAL, n, seed, counter, p0,
                                          p1, y));
}

PRN__CU_FN void prn__cu_optim(const prn_optim_params *p, prn_cu_optim *q) {
    q->lr = p->lr;
    q->momentum = p->momentum;
    q->weight_decay = p->weight_decay;
    q->beta1 = p->beta1;
    q->beta2 = p->beta2;
    q->eps = p->eps;
    q->ib1 = 1.0 / p->bias1; /* as the reference: the reciprocal in double */
    q->ib2 = 1.0 / p->bias2;
    q->nesterov = p->nesterov;
    q->decoupled = p->decoupled;
}

PRN__CU_FN prn_status prn__cu_sgd_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param, const void *grad,
                                         void *velocity, const prn_optim_params *p) {
    prn__cu_state *s;
    prn_status st;
    prn_cu_optim q;
    if (n == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "sgd_update", dtype, &s)) != PRN_OK) return st;
    prn__cu_optim(p, &q);
    return prn__cu_launched(ctx, "sgd_update", "sgd",
                            prn_cu_sgd(s->stream, dtype == PRN_F64, n, param, grad, velocity, &q));
}

PRN__CU_FN prn_status prn__cu_adam_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param, const void *grad,
                                          void *m, void *v, const prn_optim_params *p) {
    prn__cu_state *s;
    prn_status st;
    prn_cu_optim q;
    if (n == 0) return PRN_OK;
    if ((st = prn__cu_begin(ctx, "adam_update", dtype, &s)) != PRN_OK) return st;
    prn__cu_optim(p, &q);
    return prn__cu_launched(ctx, "adam_update", "adam", prn_cu_adam(s->stream, dtype == PRN_F64, n, param, grad, m, v, &q));
}

/* ------------------------------------------------------------------------
 * Fused cell steps (kernels_cuda/rnn_cell.cu)
 * ---------------------------------------------------------------------- */
/* The row widths of one step's arrays: xp and q P = G H, states S, saved
 * V H (V: ELMAN 0, LSTM 5, GRU and MHGRU 4). */
PRN__CU_FN void prn__cu_rows_of_step(prn_cu_rows *rows, int kind, size_t H) {
    const size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3;
    rows->xp = rows->q = G * H;
    rows->s = rows->next = rows->g = kind == PRN_RNN_LSTM ? 2 * H : H;
    rows->saved = (kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4) * H;
}

PRN__CU_FN prn_status prn__cu_rnn_gates_forward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B, size_t H,
                                               size_t k, const void *xp, const void *q, const void *bias, const void *s,
                                               void *next, void *saved) {
    prn__cu_state *cs;
    prn_cu_rows rows;
    prn_status st = prn_backend_rnn_gates_check(ctx, "rnn_gates_forward", kind, H, &k);
    if (st != PRN_OK || B * H == 0) return st;
    if ((st = prn__cu_begin(ctx, "rnn_gates_forward", dtype, &cs)) != PRN_OK) return st;
    prn__cu_rows_of_step(&rows, kind, H);
    return prn__cu_launched(ctx, "rnn_gates_forward", "cell_fwd",
                            prn_cu_rnn_cell_fwd(cs->stream, dtype == PRN_F64, kind, relu != 0, B, H, k, &rows, xp, q,
                                                bias, s, next, saved));
}
PRN__CU_FN prn_status prn__cu_rnn_gates_backward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B,
                                                size_t H, size_t k, const void *g, const void *s, const void *next,
                                                const void *saved, void *dxp, void *dq, void *ds) {
    prn__cu_state *cs;
    prn_cu_rows rows;
    prn_status st = prn_backend_rnn_gates_check(ctx, "rnn_gates_backward", kind, H, &k);
    if (st != PRN_OK || B * H == 0) return st;
    if ((st = prn__cu_begin(ctx, "rnn_gates_backward", dtype, &cs)) != PRN_OK) return st;
    prn__cu_rows_of_step(&rows, kind, H);
    return prn__cu_launched(ctx, "rnn_gates_backward", "cell_bwd",
                            prn_cu_rnn_cell_bwd(cs->stream, dtype == PRN_F64, kind, relu != 0, B, H, k, &rows, g, NULL,
                                                s, next, saved, dxp, dq, ds));
}

/* ------------------------------------------------------------------------
 * Fused layers (rnn_layer_forward / _backward): the T steps queued on the
 * stream by one call. Per step, a cuBLAS GEMM for the hidden projection,
 * then the cell kernel, which reads and writes the layer's [B, T, X]
 * arrays in place (row pitches). There are no per-step tensors, copies or
 * host synchronisations; the backward's carry (d loss / d state) is
 * double-buffered, and the GEMM adds its W_hh part (beta = 1).
 * Where prn_cu_rnn_layer_plan finds a plan (W_hh's slices fit the shared
 * memory of blocks that can all be resident), the layer instead runs as
 * ONE persistent kernel (kernels_cuda/rnn_cell.cu): no launch per step,
 * W_hh read from global memory once per layer. PARRNN_CUDA_LAYER=steps
 * forces the per-step path (benchmarks, tests).
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_layer_begin(prn_context *ctx, const char *fn, prn_dtype dtype, int kind, int bw,
                                          const void *saved, prn__cu_state **s) {
    prn_status st = prn_backend_rnn_layer_check(ctx, fn, kind, bw, saved);
    return st == PRN_OK ? prn__cu_begin(ctx, fn, dtype, s) : st;
}

PRN__CU_FN prn_status prn__cu_rnn_layer_forward(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                size_t B, size_t T, size_t H, const void *xp, const void *w_hh,
                                                const void *b_hh, const void *s0, void *states, void *saved) {
    const char *fn = "rnn_layer_forward";
    prn__cu_state *cs;
    prn_cu_rows rows;
    prn_cu_layer_plan pl;
    size_t es, P, S, V, step;
    void *q = NULL;
    prn_status st = prn__cu_layer_begin(ctx, fn, dtype, kind, 0, saved, &cs);
    if (st != PRN_OK || B == 0 || T == 0 || H == 0) return st;
    if (!cs->layer_steps && prn_cu_rnn_layer_plan(dtype == PRN_F64, kind, 0, B, T, H, cs->sm_count, cs->smem_optin,
                                                  cs->layer_slices, cs->layer_blocks, &pl)) {
        if ((st = prn__cu_malloc(ctx, cs, pl.scratch, &q, "rnn_layer_forward: layer status")) != PRN_OK) return st;
        st = prn__cu_launched(ctx, fn, "layer_fwd",
                              prn_cu_rnn_layer_fwd(cs->stream, dtype == PRN_F64, kind, relu != 0, reverse != 0, B, T, H,
                                                   &pl, xp, w_hh, b_hh, s0, states, saved, q));
        prn__cu_mfree(cs, q);
        return st;
    }
    prn__cu_rows_of_step(&rows, kind, H);
    es = prn_dtype_size(dtype);
    P = rows.xp;
    S = rows.s;
    V = rows.saved;
    rows.xp = T * P;
    rows.next = T * S;
    rows.saved = T * V;
    if ((st = prn__cu_malloc(ctx, cs, B * P * es, &q, "rnn_layer_forward: q")) != PRN_OK) return st;
    for (step = 0; step < T && st == PRN_OK; ++step) {
        const size_t t = reverse ? T - 1 - step : step;
        /* the state before step t: s0, or the previous step's row of states */
        const char *prev = step ? (const char *)states + (reverse ? t + 1 : t - 1) * S * es : (const char *)s0;
        rows.s = step ? T * S : S;
        st = prn__cu_gemm(ctx, dtype, 0, 1, B, P, H, 1.0, prev, rows.s, 0, w_hh, H, 0, 0.0, q, P, 0, 1);
        if (st == PRN_OK)
            st = prn__cu_launched(ctx, fn, "cell_fwd",
                                  prn_cu_rnn_cell_fwd(cs->stream, dtype == PRN_F64, kind, relu != 0, B, H, H, &rows,
                                                      (const char *)xp + t * P * es, q, b_hh, prev,
                                                      (char *)states + t * S * es,
                                                      saved ? (char *)saved + t * V * es : NULL));
    }
    prn__cu_mfree(cs, q);
    return st;
}

PRN__CU_FN prn_status prn__cu_rnn_layer_backward(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                 size_t B, size_t T, size_t H, const void *g, const void *w_hh,
                                                 const void *s0, const void *states, const void *saved, void *dxp,
                                                 void *dq, void *ds0) {
    const char *fn = "rnn_layer_backward";
    prn__cu_state *cs;
    prn_cu_rows rows;
    prn_cu_layer_plan pl;
    size_t es, P, S, V, step;
    char *carry = NULL, *cur = NULL;
    cudaError_t e;
    prn_status st = prn__cu_layer_begin(ctx, fn, dtype, kind, 1, saved, &cs);
    if (st != PRN_OK || B == 0 || H == 0) return st;
    prn__cu_rows_of_step(&rows, kind, H);
    es = prn_dtype_size(dtype);
    P = rows.xp;
    S = rows.s;
    V = rows.saved;
    if (T == 0) return prn__cu_fill(ctx, dtype, ds0, B * S, 0.0); /* no steps: s0 reaches nothing */
    if (!cs->layer_steps && prn_cu_rnn_layer_plan(dtype == PRN_F64, kind, 1, B, T, H, cs->sm_count, cs->smem_optin,
                                                  cs->layer_slices, cs->layer_blocks, &pl)) {
        if ((st = prn__cu_malloc(ctx, cs, pl.scratch, (void **)&carry, "rnn_layer_backward: layer status")) != PRN_OK)
            return st;
        st = prn__cu_launched(ctx, fn, "layer_bwd",
                              prn_cu_rnn_layer_bwd(cs->stream, dtype == PRN_F64, kind, relu != 0, reverse != 0, B, T, H,
                                                   &pl, g, w_hh, s0, states, saved, dxp, dq, ds0, carry));
        prn__cu_mfree(cs, carry);
        return st;
    }
    rows.xp = rows.q = T * P;
    rows.next = rows.g = T * S;
    rows.saved = T * V;
    if ((st = prn__cu_malloc(ctx, cs, 2 * B * S * es, (void **)&carry, "rnn_layer_backward: carry")) != PRN_OK)
        return st;
    /* the forward's steps, last first */
    for (step = 0; step < T && st == PRN_OK; ++step) {
        const size_t t = reverse ? step : T - 1 - step, first = step == T - 1;
        const char *prev = first ? (const char *)s0 : (const char *)states + (reverse ? t + 1 : t - 1) * S * es;
        char *out = carry + (step & 1) * B * S * es;
        rows.s = first ? S : T * S;
        st = prn__cu_launched(ctx, fn, "cell_bwd",
                              prn_cu_rnn_cell_bwd(cs->stream, dtype == PRN_F64, kind, relu != 0, B, H, H, &rows,
                                                  (const char *)g + t * S * es, cur, prev,
                                                  (const char *)states + t * S * es,
                                                  saved ? (const char *)saved + t * V * es : NULL,
                                                  (char *)dxp + t * P * es, (char *)dq + t * P * es, out));
        /* and through q = h_prev W_hh^T: d h_prev += dq_t W_hh */
        if (st == PRN_OK)
            st = prn__cu_gemm(ctx, dtype, 0, 0, B, H, P, 1.0, (const char *)dq + t * P * es, T * P, 0, w_hh, H, 0,
                              1.0, out, S, 0, 1);
        cur = out;
    }
    if (st == PRN_OK) {
        e = cudaMemcpyAsync(ds0, cur, B * S * es, cudaMemcpyDeviceToDevice, cs->stream);
        if (e != cudaSuccess) st = prn__cu_fail(ctx, "rnn_layer_backward: cudaMemcpyAsync(ds0)", e);
    }
    prn__cu_mfree(cs, carry);
    return st;
}

/* ------------------------------------------------------------------------
 * Batched dense solves (kernels_cuda/solve.cu): one thread block per system
 * ---------------------------------------------------------------------- */
PRN__CU_FN prn_status prn__cu_solve_batched(prn_context *ctx, prn_dtype dtype, size_t batch, size_t n, void *a,
                                            void *r, int *info) {
    prn__cu_state *s;
    prn_status st;
    void *dinfo = NULL;
    cudaError_t e;
    if (n == 0) return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "solve_batched: argument 'n' is 0");
    if (n > 0x7fffffff) /* info reports columns as int, the kernel rows as unsigned */
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "solve_batched: argument 'n' (%lu) is above 2^31 - 1",
                             (unsigned long)n);
    if ((st = prn__cu_begin(ctx, "solve_batched", dtype, &s)) != PRN_OK) return st;
    if (batch == 0) return PRN_OK;
    if ((st = prn__cu_malloc(ctx, s, batch * sizeof(int), &dinfo, "solve_batched: info")) != PRN_OK) return st;
    st = prn__cu_launched(ctx, "solve_batched", "solve_lu",
                          prn_cu_solve_batched(s->stream, dtype == PRN_F64, batch, n, a, r, (int *)dinfo));
    if (st == PRN_OK) {
        e = cudaMemcpyAsync(info, dinfo, batch * sizeof(int), cudaMemcpyDeviceToHost, s->stream);
        if (e != cudaSuccess) st = prn__cu_fail(ctx, "solve_batched: cudaMemcpyAsync(info)", e);
    }
    prn__cu_mfree(s, dinfo);
    /* info is the caller's host memory: ready on return */
    return st == PRN_OK ? prn__cu_sync(ctx, s, "solve_batched") : st;
}

/* ------------------------------------------------------------------------
 * Scans (kernels_cuda/scan.cu): reduce / scan / expand.
 *
 * Time is cut into chunks of L steps; per chunk a fold kernel reduces it
 * to one affine map h -> M h + v (a thread per channel, or per column of
 * [M | v] for block scans); the maps form a recurrence of the same kind
 * over the chunks, scanned by this same code (recursively: each level is
 * at least PRN__CU_SCAN_MIN_LEN times shorter, so T = 10^9 is five levels),
 * from h0; an expand kernel re-runs each chunk from its incoming carry and
 * writes h. The last chunk's map is never needed and not computed.
 *
 * The diagonal scan's AUTO uses the single pass with decoupled look-back
 * instead when chunks are needed (prn__cu_scan_diag); CHUNKED, TREE and
 * the block scans use this. It reads a and b twice, but only when the
 * device needs the chunks: when batch x channels (x (k+1) for block scans)
 * fill the device there is one chunk and the expand kernel alone is the
 * scan, one read. The block scans keep it: a look-back tile of k x k
 * matrices holds too few steps in shared memory to pay for its waiting.
 *
 * Chunks: enough fold threads to fill the device (scan_items), no chunk
 * shorter than PRN__CU_SCAN_MIN_LEN steps. All levels' maps live in one
 * scratch allocation made before the first kernel.
 * ---------------------------------------------------------------------- */
#define PRN__CU_SCAN_MIN_LEN 32
#define PRN__CU_ALIGN(x) (((x) + 255) / 256 * 256)

/* Chunks for T steps when one chunk gives `units` fold threads; sets the
 * chunk length *L. No chunk is empty. */
PRN__CU_FN size_t prn__cu_scan_chunks(size_t T, size_t units, size_t items, int serial, size_t *L) {
    size_t nch = serial || units >= items ? 1 : items / units;
    size_t most = (T + PRN__CU_SCAN_MIN_LEN - 1) / PRN__CU_SCAN_MIN_LEN;
    if (nch > most) nch = most;
    if (nch < 1) nch = 1;
    *L = (T + nch - 1) / nch;
    return (T + *L - 1) / *L;
}

/* Scratch bytes of all levels; per chunk map: mk values per (sequence,
 * channel) of M (1 diagonal, k blocks) and 1 of v. */
PRN__CU_FN size_t prn__cu_scan_bytes(size_t T, size_t units, size_t items, int serial, size_t batch, size_t C,
                                     size_t mk, size_t es) {
    size_t total = 0, L, nm;
    for (;;) {
        nm = prn__cu_scan_chunks(T, units, items, serial, &L) - 1;
        if (!nm) return total;
        total += PRN__CU_ALIGN(batch * nm * C * mk * es) + PRN__CU_ALIGN(batch * nm * C * es);
        T = nm;
        serial = 0;
    }
}

/* One level of the diagonal scan (h0 may be NULL; h may be b); scr holds
 * this level's maps and those below it. */
PRN__CU_FN prn_status prn__cu_scan_diag_run(prn_context *ctx, prn__cu_state *s, int f64, int rev, int serial,
                                            size_t batch, size_t T, size_t C, const void *a, const void *b,
                                            const void *h0, void *h, char *scr) {
    size_t es = f64 ? 8 : 4, L, nch = prn__cu_scan_chunks(T, batch * C, s->scan_items, serial, &L), nm = nch - 1;
    char *m = NULL, *o = NULL;
    prn_status st;
    if (nm) {
        m = scr;
        o = m + PRN__CU_ALIGN(batch * nm * C * es);
        st = prn__cu_launched(ctx, "scan_diag", "scan_diag_fold",
                              prn_cu_scan_diag_fold(s->stream, f64, batch, T, C, L, nm, rev, a, b, m, o));
        if (st != PRN_OK) return st;
        /* carry out of chunk j = forward scan of the maps 0..j from h0, in place in o */
        st = prn__cu_scan_diag_run(ctx, s, f64, 0, 0, batch, nm, C, m, o, h0, o, o + PRN__CU_ALIGN(batch * nm * C * es));
        if (st != PRN_OK) return st;
    }
    return prn__cu_launched(ctx, "scan_diag", "scan_diag_expand",
                            prn_cu_scan_diag_expand(s->stream, f64, batch, T, C, L, nch, rev, a, b, h0, o, h));
}

/* One level of the block scan. The maps' M is [batch, chunks-1, C, k] in
 * the untransposed layout of a, so the carries are an untransposed block
 * scan of it. */
PRN__CU_FN prn_status prn__cu_scan_block_run(prn_context *ctx, prn__cu_state *s, int f64, int rev, int tr, int serial,
                                             size_t batch, size_t T, size_t C, size_t k, const void *a, const void *b,
                                             const void *h0, void *h, char *scr) {
    size_t es = f64 ? 8 : 4, L, nch, nm;
    char *M = NULL, *v = NULL;
    prn_status st;
    nch = prn__cu_scan_chunks(T, batch * (C / k) * (k + 1), s->scan_items, serial, &L);
    nm = nch - 1;
    if (nm) {
        M = scr;
        v = M + PRN__CU_ALIGN(batch * nm * C * k * es);
        st = prn__cu_launched(ctx, "scan_block", "scan_block_fold",
                              prn_cu_scan_block_fold(s->stream, f64, batch, T, C, k, L, nm, rev, tr, a, b, M, v));
        if (st != PRN_OK) return st;
        st = prn__cu_scan_block_run(ctx, s, f64, 0, 0, 0, batch, nm, C, k, M, v, h0, v,
                                    v + PRN__CU_ALIGN(batch * nm * C * es));
        if (st != PRN_OK) return st;
    }
    return prn__cu_launched(ctx, "scan_block", "scan_block_expand",
                            prn_cu_scan_block_expand(s->stream, f64, batch, T, C, k, L, nch, rev, tr, a, b, h0, v, h));
}

PRN__CU_FN prn_status prn__cu_scan_diag(prn_context *ctx, prn_dtype dtype, int reverse, prn_scan_algo algo,
                                        size_t batch, size_t T, size_t C, const void *a, const void *b,
                                        const void *h0, void *h) {
    prn__cu_state *s;
    prn_status st;
    size_t bytes, L;
    int serial = algo == PRN_SCAN_SEQUENTIAL;
    void *scratch = NULL;
    if (batch == 0 || T == 0 || C == 0) return PRN_OK; /* before algo, as the reference */
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_diag: unknown algorithm %d", (int)algo);
    if ((st = prn__cu_begin(ctx, "scan_diag", dtype, &s)) != PRN_OK) return st;
    if (algo == PRN_SCAN_AUTO && prn__cu_scan_chunks(T, batch * C, s->scan_items, 0, &L) > 1 &&
        s->scan_force != 2 &&
        (s->scan_force == 1 || prn_cu_scan_diag_lookback_pays(dtype == PRN_F64, batch, T, C)) &&
        (bytes = prn_cu_scan_diag_lookback_bytes(dtype == PRN_F64, batch, T, C)) != 0) {
        /* the device needs parallelism along time: one pass, a and b read once */
        if ((st = prn__cu_malloc(ctx, s, bytes, &scratch, "scan_diag: look-back status")) != PRN_OK) return st;
        st = prn__cu_launched(ctx, "scan_diag", "scan_diag_lookback",
                              prn_cu_scan_diag_lookback(s->stream, dtype == PRN_F64, batch, T, C, reverse != 0, a, b,
                                                        h0, h, scratch, s->sm_count));
        prn__cu_mfree(s, scratch);
        return st;
    }
    bytes = prn__cu_scan_bytes(T, batch * C, s->scan_items, serial, batch, C, 1, prn_dtype_size(dtype));
    if (bytes && (st = prn__cu_malloc(ctx, s, bytes, &scratch, "scan_diag: scratch")) != PRN_OK) return st;
    st = prn__cu_scan_diag_run(ctx, s, dtype == PRN_F64, reverse != 0, serial, batch, T, C, a, b, h0, h,
                               (char *)scratch);
    prn__cu_mfree(s, scratch);
    return st;
}

PRN__CU_FN prn_status prn__cu_scan_block(prn_context *ctx, prn_dtype dtype, int reverse, int transpose,
                                         prn_scan_algo algo, size_t batch, size_t T, size_t C, size_t k,
                                         const void *a, const void *b, const void *h0, void *h) {
    prn__cu_state *s;
    prn_status st;
    size_t bytes;
    int serial = algo == PRN_SCAN_SEQUENTIAL;
    void *scratch = NULL;
    if (batch == 0 || T == 0 || C == 0) return PRN_OK;
    if (k == 0 || k > 64 || C % k != 0)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_block: block size %lu must be 1..64 and divide C = %lu",
                             (unsigned long)k, (unsigned long)C);
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_block: unknown algorithm %d", (int)algo);
    if ((st = prn__cu_begin(ctx, "scan_block", dtype, &s)) != PRN_OK) return st;
    bytes = prn__cu_scan_bytes(T, batch * (C / k) * (k + 1), s->scan_items, serial, batch, C, k, prn_dtype_size(dtype));
    if (bytes && (st = prn__cu_malloc(ctx, s, bytes, &scratch, "scan_block: scratch")) != PRN_OK) return st;
    st = prn__cu_scan_block_run(ctx, s, dtype == PRN_F64, reverse != 0, transpose != 0, serial, batch, T, C, k, a, b,
                                h0, h, (char *)scratch);
    prn__cu_mfree(s, scratch);
    return st;
}

/* ------------------------------------------------------------------------
 * The fused DEER iteration (kernels_cuda/deer.cu): a thread per (batch
 * row, time segment), f and J made step by step and never stored; the
 * segments' affine maps chained per row (a block per row; one state: a
 * block scan), then each segment solved again from its true carry. One
 * state, and 2 or 4 where S fixes the cell's sizes, run in registers; the
 * other cells of up to 64 states (f64: 32) keep their values (and the S x S map) in
 * shared memory; supports declines larger ones, which
 * prn_deer_rnn then composes from the other entries. Per call: one
 * stream-ordered scratch allocation, 4 or 5 launches an iteration for up
 * to iters iterations (prn_deer_fused), all queued at once and decided on
 * the device (an iteration after the one that converged or went non-finite
 * exits at once), and one read-back of the last residual and the count;
 * a converged iteration whose ynew is discarded skips its chain and
 * second pass on the device.
 * ---------------------------------------------------------------------- */
/* The table's supports: the DEER entries take a cell the kernels size for
 * (both entries alike); every other fused entry set takes every call. */
PRN__CU_FN int prn__cu_supports(prn_context *ctx, prn_backend_slot slot, const void *args) {
    const prn__cu_state *s = (const prn__cu_state *)prn_backend_state(ctx);
    const prn_deer_fused *a = (const prn_deer_fused *)args;
    if (slot != PRN_SLOT_deer_iterate && slot != PRN_SLOT_deer_adjoint) return 1;
    if (!a || (s && s->deer_composed) || (a->dtype != PRN_F32 && a->dtype != PRN_F64)) return 0;
    return prn_cu_deer_takes(a->kind, a->S, a->dtype == PRN_F64);
}
/* The checks of both entries (as the reference's), then the kernels' part
 * of the arguments, the segments planned; 1: nothing to do (B or T 0). */
PRN__CU_FN prn_status prn__cu_deer_args(prn_context *ctx, const char *fn, const prn_deer_fused *a, int adj, prn_cu_deer *k,
                                        int *empty) {
    size_t S, G, kb;
    prn_status st = prn_backend_deer_check(ctx, fn, a, adj, &kb);
    *empty = 0;
    if (st != PRN_OK) return st;
    S = a->S;
    if (!prn_cu_deer_takes(a->kind, S, a->dtype == PRN_F64))
        return prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "%s: the CUDA kernels take at most 64 states (f64: 32); this "
                             "cell has %lu (supports declines it)", fn, (unsigned long)S);
    if (!a->B || !a->T) { *empty = 1; return PRN_OK; }
    memset(k, 0, sizeof *k);
    G = a->kind == PRN_RNN_LSTM ? 4 : a->kind == PRN_RNN_GRU || a->kind == PRN_RNN_MHGRU ? 3 : 1;
    k->kind = a->kind; k->relu = a->relu; k->rev = a->reverse != 0;
    k->B = a->B; k->T = a->T; k->H = a->H; k->S = S; k->hk = a->hk; k->L = a->L; k->P = G * a->H;
    k->kb = kb;
    prn_cu_deer_plan(a->B, a->T, S, &k->C, &k->Ls);
    k->ntask = a->B * k->C;
    memcpy(k->w, a->w, sizeof k->w);
    k->xp = a->xp; k->h0 = a->h0; k->y = a->y;
    k->one_k = 1.0 - a->damping; k->clip = a->clip; k->atol = a->atol; k->rtol = a->rtol;
    k->wc = a->kind == PRN_RNN_MHGRU ? a->hk : a->H;
    if (adj) {
        k->g = a->g; k->lam = a->lam; k->dxp = a->dxp; k->dq = a->dq; k->dh0 = a->dh0;
        k->dw = a->dxp ? a->dw : NULL; k->db = a->dxp ? a->db : NULL;
    } else {
        k->ynew = a->ynew;
        k->discard = a->discard_converged != 0;
        k->iters = a->iters > 1 && a->ynew && a->y2 ? a->iters : 1;
        k->y2 = k->iters > 1 ? a->y2 : NULL;
    }
    return PRN_OK;
}
PRN__CU_FN prn_status prn__cu_deer_iterate(prn_context *ctx, prn_deer_fused *a) {
    static const char fn[] = "deer_iterate";
    prn__cu_state *s;
    prn_status st;
    prn_cu_deer k;
    size_t S, es, tvn;
    double out[3];
    void *scratch = NULL;
    cudaError_t e;
    int empty;
    if ((st = prn__cu_deer_args(ctx, fn, a, 0, &k, &empty)) != PRN_OK) return st;
    if (empty) { a->residual = 0; a->finite = 1; a->done = 1; return PRN_OK; }
    if ((st = prn__cu_begin(ctx, fn, a->dtype, &s)) != PRN_OK) return st;
    S = k.S;
    es = prn_dtype_size(a->dtype);
    /* per task: its residual and finite flag; its map and carry (segments) */
    tvn = k.C > 1 && a->ynew ? k.ntask * (2 * S + S * S) * es : 0;
    st = prn__cu_malloc(ctx, s, (2 * k.ntask + 4) * sizeof(double) + tvn, &scratch, "deer_iterate: scratch");
    if (st != PRN_OK) return st;
    e = cudaMemsetAsync(scratch, 0, 4 * sizeof(double), s->stream); /* ctl */
    if (e != cudaSuccess) st = prn__cu_fail(ctx, "deer_iterate: cudaMemsetAsync(ctl)", e);
    if (st == PRN_OK)
        st = prn__cu_launched(ctx, fn, "deer_iter",
                              prn_cu_deer_iterate(s->stream, a->dtype == PRN_F64, &k, (double *)scratch + 4,
                                                  tvn ? (char *)scratch + (2 * k.ntask + 4) * sizeof(double) : NULL,
                                                  (double *)scratch));
    if (st == PRN_OK) {
        e = cudaMemcpyAsync(out, scratch, sizeof out, cudaMemcpyDeviceToHost, s->stream);
        if (e != cudaSuccess) st = prn__cu_fail(ctx, "deer_iterate: cudaMemcpyAsync(residual)", e);
    }
    prn__cu_mfree(s, scratch);
    if (st == PRN_OK) st = prn__cu_sync(ctx, s, fn); /* out is read on the host */
    if (st != PRN_OK) return st;
    a->residual = out[0];
    a->finite = out[1] == 0;
    a->done = (int)out[2];
    return PRN_OK;
}
PRN__CU_FN prn_status prn__cu_deer_adjoint(prn_context *ctx, const prn_deer_fused *a) {
    static const char fn[] = "deer_adjoint";
    prn__cu_state *s;
    prn_status st;
    prn_cu_deer k;
    size_t es, tvn, dqn, pn, rpc = 0, nchunk = 0;
    char *scratch = NULL;
    int empty;
    if ((st = prn__cu_deer_args(ctx, fn, a, 1, &k, &empty)) != PRN_OK) return st;
    if (empty) return PRN_OK;
    if ((st = prn__cu_begin(ctx, fn, a->dtype, &s)) != PRN_OK) return st;
    es = prn_dtype_size(a->dtype);
    /* the segments' maps; dq for the weight sums when the caller wants none;
     * the sums' per-chunk partials */
    tvn = k.C > 1 ? k.ntask * (2 * k.S + k.S * k.S) * es : 0;
    dqn = k.dw && !k.dq && k.S != 1 ? k.B * k.T * k.P * es : 0; /* one state: the sums come with the adjoint's pass */
    if (k.dw) prn_cu_deer_dw_plan(&k, &rpc, &nchunk);
    pn = k.dw ? nchunk * (k.P * k.wc + k.P) * sizeof(double) : 0;
    st = prn__cu_malloc(ctx, s, pn + tvn + dqn + 16, (void **)&scratch, "deer_adjoint: scratch");
    if (st != PRN_OK) return st;
    st = prn__cu_launched(ctx, fn, "deer_adj",
                          prn_cu_deer_adjoint(s->stream, a->dtype == PRN_F64, &k, tvn ? scratch + pn : NULL,
                                              dqn ? scratch + pn + tvn : NULL, pn ? (double *)(void *)scratch : NULL));
    prn__cu_mfree(s, scratch);
    return st;
}

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */
/* all_finite is left NULL: composed from unary and reduce. */
#define PRN__CU_ENTRIES(E)                                                                          \
    E(create, prn__cu_create) E(destroy, prn__cu_destroy)                                           \
    E(buf_alloc, prn__cu_buf_alloc) E(buf_free, prn__cu_buf_free) E(buf_upload, prn__cu_buf_upload) \
    E(buf_download, prn__cu_buf_download) E(buf_copy, prn__cu_buf_copy)                            \
    E(fill, prn__cu_fill) E(unary, prn__cu_unary) E(binary, prn__cu_binary)                         \
    E(strided_copy, prn__cu_strided_copy) E(gemm, prn__cu_gemm) E(reduce, prn__cu_reduce)          \
    E(argmax, prn__cu_argmax) E(softmax, prn__cu_softmax) E(random, prn__cu_random)                 \
    E(sgd_update, prn__cu_sgd_update) E(adam_update, prn__cu_adam_update)                           \
    E(scan_diag, prn__cu_scan_diag) E(scan_block, prn__cu_scan_block)                               \
    E(rnn_gates_forward, prn__cu_rnn_gates_forward) E(rnn_gates_backward, prn__cu_rnn_gates_backward)   \
    E(solve_batched, prn__cu_solve_batched)                                                         \
    E(rnn_layer_forward, prn__cu_rnn_layer_forward) E(rnn_layer_backward, prn__cu_rnn_layer_backward) \
    E(deer_iterate, prn__cu_deer_iterate) E(deer_adjoint, prn__cu_deer_adjoint)                     \
    E(supports, prn__cu_supports)
PRN__CU_DEF const prn_backend *prn_cuda_backend(void) {
    PRN_BACKEND_TABLE(b, "cuda", PRN__CU_ENTRIES);
    return &b;
}

#endif /* PARRNN_CUDA_IMPLEMENTATION_DONE */
#endif /* PARRNN_CUDA_IMPLEMENTATION */
