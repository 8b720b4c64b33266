/* parrnn_opencl.h - the OpenCL backend of parrnn: every primitive of the
 * backend table as OpenCL C 1.2 kernels, GEMM through CLBlast.
 *
 * USE
 *   In ONE C or C++ file, after the implementation of parrnn.h:
 *       #define PARRNN_OPENCL_IMPLEMENTATION
 *       #include "backends/parrnn_opencl.h"
 *   and link with -lclblast -lOpenCL. Then either pass prn_opencl_backend()
 *   in prn_config.backends, or compile parrnn.h's implementation with
 *   PARRNN_WITH_OPENCL: "opencl" is then a built-in name (config.backend,
 *   or PARRNN_BACKEND=opencl in the environment). The implementation may
 *   also live in a file of its own (the Makefile compiles this header as
 *   one); it uses only parrnn's public API.
 *
 * DEVICE
 *   prn_config.device, else the environment variable PARRNN_OPENCL_DEVICE:
 *     "P:D"    device D of platform P (indices from 0, in the order the ICD
 *              loader lists them), e.g. "0:1";
 *     "name"   the first device whose name, vendor or platform name contains
 *              it (case-insensitive), e.g. "pthread" for PoCL's CPU device;
 *   else the first GPU of any platform, else the first device.
 *
 * KERNELS
 *   $PARRNN_OPENCL_OPTIONS, read when a context is created, is appended to
 *   the compiler options (e.g. "-cl-fast-relaxed-math").
 *   The kernels are kernels_opencl/ *.cl, embedded by the build in
 *   backends/parrnn_opencl_kernels.h (generated; `make` refreshes it), so
 *   nothing is read from disk at run time. A context builds each file's
 *   program per element type when one of its kernels is first used (f64
 *   only on devices with cl_khr_fp64); a failed build's message carries
 *   the compiler's log. ICDs cache compiled
 *   programs (PoCL in ~/.cache/pocl), so only the first run is slow.
 *
 * ERRORS
 *   Every OpenCL and CLBlast status becomes PRN_ERR_BACKEND (or
 *   PRN_ERR_OUT_OF_MEMORY for allocation failures) with the call, the
 *   status name and its code in the message. Nothing leaks on failure.
 *
 * Compiles as C99 and as C++. MIT licence, as parrnn.h.
 */
#ifndef PARRNN_OPENCL_H
#define PARRNN_OPENCL_H
#include "../parrnn.h"
#ifdef __cplusplus
extern "C" {
#endif
/* The backend table ("opencl"). */
PRNDEF const prn_backend *prn_opencl_backend(void);
#ifdef __cplusplus
}
#endif
#endif /* PARRNN_OPENCL_H */

#ifdef PARRNN_OPENCL_IMPLEMENTATION
#ifndef PARRNN_OPENCL_IMPLEMENTATION_DONE
#define PARRNN_OPENCL_IMPLEMENTATION_DONE

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <clblast_c.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parrnn_opencl_kernels.h" /* prn__ocl_files[], generated from kernels_opencl/ */

/* private functions: static, no unused attribute, so that the compiler finds dead code */
#define PRN__OCL_FN static
#ifdef PARRNN_STATIC
#define PRN__OCL_DEF static
#else
#define PRN__OCL_DEF
#endif

/* ------------------------------------------------------------------------
 * State, buffers, errors
 * ---------------------------------------------------------------------- */
#define PRN__OCL_MAX_KERNELS 64
#define PRN__OCL_MAX_FILES 16

typedef struct prn__ocl_kernel {
    const char *name; /* a string literal of this file */
    int file, t;
    cl_kernel k;
} prn__ocl_kernel;

typedef struct prn__ocl_state {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    int has_f64;
    char device_name[128];
    char options[256]; /* $PARRNN_OPENCL_OPTIONS at create: more compiler options */
    /* per kernel file of kernels_opencl/: [file][0] f32 (and the untyped
     * copies and fills), [file][1] f64; built on first use */
    cl_program program[PRN__OCL_MAX_FILES][2];
    prn__ocl_kernel kernels[PRN__OCL_MAX_KERNELS];
    int num_kernels;
} prn__ocl_state;

/* A buffer handle: OpenCL has no zero-sized buffers, so the size lives here. */
typedef struct prn__ocl_buf {
    cl_mem mem;
    size_t bytes;
} prn__ocl_buf;

#define PRN__OCL_MEM(h) (((const prn__ocl_buf *)(h))->mem)

PRN__OCL_FN prn__ocl_state *prn__ocl_get(prn_context *ctx) { return (prn__ocl_state *)prn_backend_state(ctx); }

PRN__OCL_FN const char *prn__ocl_code_name(cl_int e) {
    switch (e) {
#define PRN__OCL_CASE(c) case c: return #c;
    PRN__OCL_CASE(CL_SUCCESS) PRN__OCL_CASE(CL_DEVICE_NOT_FOUND) PRN__OCL_CASE(CL_DEVICE_NOT_AVAILABLE)
    PRN__OCL_CASE(CL_COMPILER_NOT_AVAILABLE) PRN__OCL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    PRN__OCL_CASE(CL_OUT_OF_RESOURCES) PRN__OCL_CASE(CL_OUT_OF_HOST_MEMORY)
    PRN__OCL_CASE(CL_PROFILING_INFO_NOT_AVAILABLE) PRN__OCL_CASE(CL_MEM_COPY_OVERLAP)
    PRN__OCL_CASE(CL_IMAGE_FORMAT_MISMATCH) PRN__OCL_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    PRN__OCL_CASE(CL_BUILD_PROGRAM_FAILURE) PRN__OCL_CASE(CL_MAP_FAILURE)
    PRN__OCL_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET) PRN__OCL_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    PRN__OCL_CASE(CL_COMPILE_PROGRAM_FAILURE) PRN__OCL_CASE(CL_LINKER_NOT_AVAILABLE)
    PRN__OCL_CASE(CL_LINK_PROGRAM_FAILURE) PRN__OCL_CASE(CL_DEVICE_PARTITION_FAILED)
    PRN__OCL_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) PRN__OCL_CASE(CL_INVALID_VALUE)
    PRN__OCL_CASE(CL_INVALID_DEVICE_TYPE) PRN__OCL_CASE(CL_INVALID_PLATFORM) PRN__OCL_CASE(CL_INVALID_DEVICE)
    PRN__OCL_CASE(CL_INVALID_CONTEXT) PRN__OCL_CASE(CL_INVALID_QUEUE_PROPERTIES)
    PRN__OCL_CASE(CL_INVALID_COMMAND_QUEUE) PRN__OCL_CASE(CL_INVALID_HOST_PTR)
    PRN__OCL_CASE(CL_INVALID_MEM_OBJECT) PRN__OCL_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    PRN__OCL_CASE(CL_INVALID_IMAGE_SIZE) PRN__OCL_CASE(CL_INVALID_SAMPLER) PRN__OCL_CASE(CL_INVALID_BINARY)
    PRN__OCL_CASE(CL_INVALID_BUILD_OPTIONS) PRN__OCL_CASE(CL_INVALID_PROGRAM)
    PRN__OCL_CASE(CL_INVALID_PROGRAM_EXECUTABLE) PRN__OCL_CASE(CL_INVALID_KERNEL_NAME)
    PRN__OCL_CASE(CL_INVALID_KERNEL_DEFINITION) PRN__OCL_CASE(CL_INVALID_KERNEL)
    PRN__OCL_CASE(CL_INVALID_ARG_INDEX) PRN__OCL_CASE(CL_INVALID_ARG_VALUE) PRN__OCL_CASE(CL_INVALID_ARG_SIZE)
    PRN__OCL_CASE(CL_INVALID_KERNEL_ARGS) PRN__OCL_CASE(CL_INVALID_WORK_DIMENSION)
    PRN__OCL_CASE(CL_INVALID_WORK_GROUP_SIZE) PRN__OCL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    PRN__OCL_CASE(CL_INVALID_GLOBAL_OFFSET) PRN__OCL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    PRN__OCL_CASE(CL_INVALID_EVENT) PRN__OCL_CASE(CL_INVALID_OPERATION) PRN__OCL_CASE(CL_INVALID_GL_OBJECT)
    PRN__OCL_CASE(CL_INVALID_BUFFER_SIZE) PRN__OCL_CASE(CL_INVALID_MIP_LEVEL)
    PRN__OCL_CASE(CL_INVALID_GLOBAL_WORK_SIZE) PRN__OCL_CASE(CL_INVALID_PROPERTY)
#undef PRN__OCL_CASE
    default: return "unknown OpenCL status";
    }
}

/* Sets the context's error for a failed OpenCL call and returns its status. */
PRN__OCL_FN prn_status prn__ocl_fail(prn_context *ctx, const char *call, cl_int code) {
    prn_status st = (code == CL_OUT_OF_HOST_MEMORY || code == CL_MEM_OBJECT_ALLOCATION_FAILURE)
                        ? PRN_ERR_OUT_OF_MEMORY
                        : PRN_ERR_BACKEND;
    return prn_set_error(ctx, st, "opencl: %s failed: %s (%d)", call, prn__ocl_code_name(code), (int)code);
}

PRN__OCL_FN prn_status prn__ocl_clblast_fail(prn_context *ctx, const char *call, CLBlastStatusCode code) {
    if ((int)code > -1000) return prn__ocl_fail(ctx, call, (cl_int)code); /* shared with OpenCL */
    return prn_set_error(ctx, code == CLBlastInsufficientMemoryTemp ? PRN_ERR_OUT_OF_MEMORY : PRN_ERR_BACKEND,
                         "opencl: %s failed: CLBlast status %d", call, (int)code);
}

/* ------------------------------------------------------------------------
 * Device choice, create, destroy
 * ---------------------------------------------------------------------- */
PRN__OCL_FN int prn__ocl_contains(const char *hay, const char *needle) {
    size_t n = strlen(needle), i, j;
    for (i = 0; hay[i]; ++i) {
        for (j = 0; j < n && hay[i + j]; ++j)
            if (tolower((unsigned char)hay[i + j]) != tolower((unsigned char)needle[j])) break;
        if (j == n) return 1;
    }
    return n == 0;
}

/* Finds the device the selector names (see DEVICE above); sel may be NULL. */
PRN__OCL_FN prn_status prn__ocl_pick(prn_context *ctx, const char *sel, cl_platform_id *pp, cl_device_id *dp) {
    cl_platform_id plats[16];
    cl_device_id devs[32];
    cl_uint np = 0, nd, p, d;
    cl_int e = clGetPlatformIDs(16, plats, &np);
    unsigned want_p = 0, want_d = 0;
    int by_index = 0, found = 0;
    char c;
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found none */ || (e == CL_SUCCESS && np == 0))
        return prn_set_error(ctx, PRN_ERR_NO_DEVICE, "opencl: no OpenCL platform is installed (no ICD found)");
    if (e != CL_SUCCESS) return prn__ocl_fail(ctx, "clGetPlatformIDs", e);
    if (np > 16) np = 16;
    if (sel && sscanf(sel, "%u:%u%c", &want_p, &want_d, &c) == 2) by_index = 1;
    /* pass 0: the selector, or a GPU when there is none; pass 1: any device */
    for (d = 0; d < 2 && !found; ++d) {
        for (p = 0; p < np && !found; ++p) {
            cl_uint i;
            char pname[128] = "";
            if (by_index && p != want_p) continue;
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
            if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 32, devs, &nd) != CL_SUCCESS) continue;
            if (nd > 32) nd = 32;
            for (i = 0; i < nd && !found; ++i) {
                char name[128] = "", vendor[128] = "";
                cl_device_type type = 0;
                clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof name, name, NULL);
                clGetDeviceInfo(devs[i], CL_DEVICE_VENDOR, sizeof vendor, vendor, NULL);
                clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                if (by_index) found = i == want_d;
                else if (sel) found = prn__ocl_contains(name, sel) || prn__ocl_contains(vendor, sel) ||
                                      prn__ocl_contains(pname, sel);
                else found = d == 1 || (type & CL_DEVICE_TYPE_GPU) != 0;
                if (found) { *pp = plats[p]; *dp = devs[i]; }
            }
        }
        if (sel) break; /* a selector gets no fallback */
    }
    if (!found) {
        if (sel)
            return prn_set_error(ctx, PRN_ERR_NO_DEVICE,
                                 "opencl: no OpenCL device matches '%s' (\"P:D\" indices or part of a name)", sel);
        return prn_set_error(ctx, PRN_ERR_NO_DEVICE, "opencl: the OpenCL platforms have no device");
    }
    return PRN_OK;
}

PRN__OCL_FN void prn__ocl_destroy(prn_context *ctx, void *state) {
    prn__ocl_state *s = (prn__ocl_state *)state;
    int f, t, i;
    if (!s) return;
    for (i = 0; i < s->num_kernels; ++i) clReleaseKernel(s->kernels[i].k);
    for (f = 0; f < PRN__OCL_MAX_FILES; ++f)
        for (t = 0; t < 2; ++t)
            if (s->program[f][t]) clReleaseProgram(s->program[f][t]);
    if (s->queue) {
        clFinish(s->queue);
        clReleaseCommandQueue(s->queue);
    }
    if (s->context) clReleaseContext(s->context);
    prn_free(ctx, s);
}

PRN__OCL_FN prn_status prn__ocl_create(prn_context *ctx, void **state) {
    prn__ocl_state *s;
    const char *sel = prn_context_device(ctx);
    char ext[4096] = "";
    cl_int e;
    prn_status st;
    if (!sel || !*sel) sel = getenv("PARRNN_OPENCL_DEVICE");
    if (sel && !*sel) sel = NULL;
    s = (prn__ocl_state *)prn_alloc(ctx, sizeof *s);
    if (!s) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "opencl: out of memory for the backend state");
    memset(s, 0, sizeof *s);
    st = prn__ocl_pick(ctx, sel, &s->platform, &s->device);
    if (st != PRN_OK) { prn_free(ctx, s); return st; }
    {
        const char *more = getenv("PARRNN_OPENCL_OPTIONS");
        if (more && strlen(more) >= sizeof s->options) {
            prn_free(ctx, s);
            return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "opencl: PARRNN_OPENCL_OPTIONS is longer than %u characters",
                                 (unsigned)sizeof s->options - 1);
        }
        snprintf(s->options, sizeof s->options, "%s", more ? more : "");
    }
    clGetDeviceInfo(s->device, CL_DEVICE_NAME, sizeof s->device_name, s->device_name, NULL);
    s->device_name[sizeof s->device_name - 1] = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    ext[sizeof ext - 1] = 0;
    s->has_f64 = strstr(ext, "cl_khr_fp64") != NULL;
    {
        cl_context_properties props[3];
        props[0] = CL_CONTEXT_PLATFORM;
        props[1] = (cl_context_properties)s->platform;
        props[2] = 0;
        s->context = clCreateContext(props, 1, &s->device, NULL, NULL, &e);
    }
    if (e != CL_SUCCESS) { prn__ocl_destroy(ctx, s); return prn__ocl_fail(ctx, "clCreateContext", e); }
    s->queue = clCreateCommandQueue(s->context, s->device, 0, &e);
    if (e != CL_SUCCESS) { prn__ocl_destroy(ctx, s); return prn__ocl_fail(ctx, "clCreateCommandQueue", e); }
    *state = s;
    return PRN_OK;
}

/* ------------------------------------------------------------------------
 * Programs and kernel launches
 * ---------------------------------------------------------------------- */
/* Builds the program of kernel file f (common.cl + the file) for a type
 * (t: 0 f32, 1 f64) on first use. */
PRN__OCL_FN prn_status prn__ocl_program(prn_context *ctx, prn__ocl_state *s, int f, int t) {
    static const char *const opts[2] = {"-cl-std=CL1.2 -DREAL=float", "-cl-std=CL1.2 -DREAL=double -DPRN_F64=1"};
    const unsigned nc = (unsigned)(sizeof prn__ocl_src_common / sizeof prn__ocl_src_common[0]);
    const prn__ocl_file *file = &prn__ocl_files[f];
    const char **src;
    unsigned i;
    cl_int e;
    cl_program prog;
    if (s->program[f][t]) return PRN_OK;
    if (t == 1 && !s->has_f64)
        return prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "opencl: device '%s' has no f64 (cl_khr_fp64)",
                             s->device_name);
    src = (const char **)prn_alloc(ctx, (nc + file->num_lines) * sizeof *src);
    if (!src) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "opencl: out of memory for the source of %s.cl", file->name);
    for (i = 0; i < nc; ++i) src[i] = prn__ocl_src_common[i];
    for (i = 0; i < file->num_lines; ++i) src[nc + i] = file->lines[i];
    prog = clCreateProgramWithSource(s->context, nc + file->num_lines, src, NULL, &e);
    prn_free(ctx, (void *)src);
    if (e != CL_SUCCESS) return prn__ocl_fail(ctx, "clCreateProgramWithSource", e);
    {
        char all[400];
        snprintf(all, sizeof all, "%s %s", opts[t], s->options);
        e = clBuildProgram(prog, 1, &s->device, all, NULL, NULL);
    }
    if (e != CL_SUCCESS) {
        /* the log's beginning: the query fails for a buffer smaller than
         * the whole log, so it is read whole and cut */
        char log[320] = "";
        size_t len = 0;
        if (clGetProgramBuildInfo(prog, s->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) == CL_SUCCESS && len) {
            char *full = (char *)prn_alloc(ctx, len + 1);
            if (full && clGetProgramBuildInfo(prog, s->device, CL_PROGRAM_BUILD_LOG, len, full, NULL) == CL_SUCCESS) {
                full[len] = 0;
                snprintf(log, sizeof log, "%s", full);
            }
            prn_free(ctx, full);
        }
        clReleaseProgram(prog);
        return prn_set_error(ctx, PRN_ERR_BACKEND, "opencl: clBuildProgram(%s.cl, %s) failed: %s (%d); log: %s",
                             file->name, t ? "f64" : "f32", prn__ocl_code_name(e), (int)e, log);
    }
    s->program[f][t] = prog;
    return PRN_OK;
}

/* Kernel name of kernel file `file` (the .cl name without extension) in
 * the program of type t (created once, then cached). */
PRN__OCL_FN prn_status prn__ocl_kernel_get(prn_context *ctx, int t, const char *file, const char *name,
                                           cl_kernel *out) {
    prn__ocl_state *s = prn__ocl_get(ctx);
    prn_status st;
    cl_int e;
    cl_kernel k;
    int i, f = -1;
    for (i = 0; i < s->num_kernels; ++i)
        if (s->kernels[i].t == t && strcmp(s->kernels[i].name, name) == 0) { *out = s->kernels[i].k; return PRN_OK; }
    for (i = 0; i < (int)PRN__OCL_NUM_FILES && i < PRN__OCL_MAX_FILES; ++i)
        if (strcmp(prn__ocl_files[i].name, file) == 0) f = i;
    if (f < 0) return prn_set_error(ctx, PRN_ERR_BACKEND, "opencl: no kernel file %s.cl embedded", file);
    if ((st = prn__ocl_program(ctx, s, f, t)) != PRN_OK) return st;
    if (s->num_kernels == PRN__OCL_MAX_KERNELS)
        return prn_set_error(ctx, PRN_ERR_BACKEND, "opencl: more than %d kernels", PRN__OCL_MAX_KERNELS);
    k = clCreateKernel(s->program[f][t], name, &e);
    if (e != CL_SUCCESS)
        return prn_set_error(ctx, PRN_ERR_BACKEND, "opencl: clCreateKernel(%s in %s.cl) failed: %s (%d)", name, file,
                             prn__ocl_code_name(e), (int)e);
    s->kernels[s->num_kernels].name = name;
    s->kernels[s->num_kernels].file = f;
    s->kernels[s->num_kernels].t = t;
    s->kernels[s->num_kernels].k = k;
    ++s->num_kernels;
    *out = k;
    return PRN_OK;
}

/* Kernel arguments, gathered by the caller and set in one go:
 *   prn__ocl_args a = {0};
 *   prn__ocl_arg_mem(&a, PRN__OCL_MEM(x)); prn__ocl_arg_u64(&a, n); ...
 *   prn__ocl_run(ctx, dtype, "file", "kernel", global, &a);
 * Integers travel as ulong (cl_ulong), element values as REAL of the
 * program (prn__ocl_arg_real converts by dtype). */
#define PRN__OCL_MAX_ARGS 24
typedef struct prn__ocl_args {
    int n;
    size_t size[PRN__OCL_MAX_ARGS];
    char local[PRN__OCL_MAX_ARGS]; /* a __local argument of size bytes */
    union {
        cl_mem mem;
        cl_ulong u;
        cl_long l;
        cl_int i;
        cl_float f;
        cl_double d;
    } v[PRN__OCL_MAX_ARGS];
} prn__ocl_args;

PRN__OCL_FN void prn__ocl_arg_mem(prn__ocl_args *a, cl_mem m) {
    if (a->n < PRN__OCL_MAX_ARGS) { a->v[a->n].mem = m; a->local[a->n] = 0; a->size[a->n++] = sizeof(cl_mem); }
}
PRN__OCL_FN void prn__ocl_arg_u64(prn__ocl_args *a, size_t x) {
    if (a->n < PRN__OCL_MAX_ARGS) { a->v[a->n].u = (cl_ulong)x; a->local[a->n] = 0; a->size[a->n++] = sizeof(cl_ulong); }
}
PRN__OCL_FN void prn__ocl_arg_int(prn__ocl_args *a, int x) {
    if (a->n < PRN__OCL_MAX_ARGS) { a->v[a->n].i = (cl_int)x; a->local[a->n] = 0; a->size[a->n++] = sizeof(cl_int); }
}
PRN__OCL_FN void prn__ocl_arg_real(prn__ocl_args *a, prn_dtype dt, double x) {
    if (a->n >= PRN__OCL_MAX_ARGS) return;
    a->local[a->n] = 0;
    if (dt == PRN_F64) { a->v[a->n].d = (cl_double)x; a->size[a->n++] = sizeof(cl_double); }
    else { a->v[a->n].f = (cl_float)x; a->size[a->n++] = sizeof(cl_float); }
}
/* A 64-bit kernel argument (seeds, counters, bits of doubles): the helpers
 * take size_t, which may be 32 bits on the host. */
PRN__OCL_FN void prn__ocl_arg_bits(prn__ocl_args *a, uint64_t x) {
    if (a->n < PRN__OCL_MAX_ARGS) { a->v[a->n].u = (cl_ulong)x; a->local[a->n] = 0; a->size[a->n++] = sizeof(cl_ulong); }
}
/* A local-memory argument of bytes (for kernels that use __local scratch). */
PRN__OCL_FN void prn__ocl_arg_local(prn__ocl_args *a, size_t bytes) {
    if (a->n < PRN__OCL_MAX_ARGS) { a->v[a->n].mem = NULL; a->local[a->n] = 1; a->size[a->n++] = bytes; }
}

/* Program index of an element type: f64 kernels live in the f64 program. */
PRN__OCL_FN int prn__ocl_t(prn_dtype dt) { return dt == PRN_F64 ? 1 : 0; }

/* Runs kernel name of kernel file `file` (dtype's program) over global
 * work-items (1-D; local size 0 lets the runtime choose, else global is
 * rounded up to a multiple of it -- kernels check their index). Zero work
 * is a no-op. */
PRN__OCL_FN prn_status prn__ocl_run_local(prn_context *ctx, prn_dtype dt, const char *file, const char *name,
                                          size_t global, size_t local, const prn__ocl_args *a) {
    prn__ocl_state *s = prn__ocl_get(ctx);
    cl_kernel k = NULL;
    cl_int e;
    prn_status st;
    int i;
    char call[96];
    if (global == 0) return PRN_OK;
    if ((st = prn__ocl_kernel_get(ctx, prn__ocl_t(dt), file, name, &k)) != PRN_OK) return st;
    if (a->n >= PRN__OCL_MAX_ARGS)
        return prn_set_error(ctx, PRN_ERR_BACKEND, "opencl: kernel %s: more than %d arguments", name, PRN__OCL_MAX_ARGS - 1);
    for (i = 0; i < a->n; ++i) {
        e = clSetKernelArg(k, (cl_uint)i, a->size[i], a->local[i] ? NULL : (const void *)&a->v[i]);
        if (e != CL_SUCCESS) {
            snprintf(call, sizeof call, "clSetKernelArg(%s, %d)", name, i);
            return prn__ocl_fail(ctx, call, e);
        }
    }
    if (local) global = (global + local - 1) / local * local;
    e = clEnqueueNDRangeKernel(s->queue, k, 1, NULL, &global, local ? &local : NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", name);
        return prn__ocl_fail(ctx, call, e);
    }
    return PRN_OK;
}
PRN__OCL_FN prn_status prn__ocl_run(prn_context *ctx, prn_dtype dt, const char *file, const char *name,
                                    size_t global, const prn__ocl_args *a) {
    return prn__ocl_run_local(ctx, dt, file, name, global, 0, a);
}

/* A temporary device buffer (scratch of a primitive); NULL on failure with
 * the error set. */
PRN__OCL_FN cl_mem prn__ocl_scratch(prn_context *ctx, size_t bytes) {
    cl_int e;
    cl_mem m = clCreateBuffer(prn__ocl_get(ctx)->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clCreateBuffer(scratch of %lu bytes)", (unsigned long)bytes);
        prn__ocl_fail(ctx, call, e);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------------------
 * Buffers
 * ---------------------------------------------------------------------- */
PRN__OCL_FN prn_status prn__ocl_buf_alloc(prn_context *ctx, size_t bytes, void **buf) {
    prn__ocl_buf *b = (prn__ocl_buf *)prn_alloc(ctx, sizeof *b);
    cl_int e;
    if (!b) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "buf_alloc: out of host memory for a buffer handle");
    b->bytes = bytes;
    b->mem = clCreateBuffer(prn__ocl_get(ctx)->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS) {
        prn_free(ctx, b);
        return prn__ocl_fail(ctx, "clCreateBuffer", e);
    }
    *buf = b;
    return PRN_OK;
}
PRN__OCL_FN void prn__ocl_buf_free(prn_context *ctx, void *buf) {
    prn__ocl_buf *b = (prn__ocl_buf *)buf;
    if (!b) return;
    clReleaseMemObject(b->mem); /* the runtime keeps it until queued work is done */
    prn_free(ctx, b);
}
PRN__OCL_FN prn_status prn__ocl_buf_upload(prn_context *ctx, void *dst, size_t off, const void *src, size_t bytes) {
    cl_int e;
    if (!bytes) return PRN_OK;
    e = clEnqueueWriteBuffer(prn__ocl_get(ctx)->queue, PRN__OCL_MEM(dst), CL_TRUE, off, bytes, src, 0, NULL, NULL);
    return e == CL_SUCCESS ? PRN_OK : prn__ocl_fail(ctx, "clEnqueueWriteBuffer", e);
}
PRN__OCL_FN prn_status prn__ocl_buf_download(prn_context *ctx, const void *src, size_t off, void *dst,
                                             size_t bytes) {
    cl_int e;
    if (!bytes) return PRN_OK;
    e = clEnqueueReadBuffer(prn__ocl_get(ctx)->queue, PRN__OCL_MEM(src), CL_TRUE, off, bytes, dst, 0, NULL, NULL);
    return e == CL_SUCCESS ? PRN_OK : prn__ocl_fail(ctx, "clEnqueueReadBuffer", e);
}
PRN__OCL_FN prn_status prn__ocl_buf_copy(prn_context *ctx, void *dst, size_t doff, const void *src, size_t soff,
                                         size_t bytes) {
    cl_int e;
    if (!bytes) return PRN_OK;
    if (PRN__OCL_MEM(dst) == PRN__OCL_MEM(src) && doff < soff + bytes && soff < doff + bytes) {
        /* OpenCL forbids overlapping copies within a buffer: go through a scratch buffer */
        cl_mem tmp = prn__ocl_scratch(ctx, bytes);
        cl_command_queue q = prn__ocl_get(ctx)->queue;
        if (!tmp) return prn_last_status(ctx);
        e = clEnqueueCopyBuffer(q, PRN__OCL_MEM(src), tmp, soff, 0, bytes, 0, NULL, NULL);
        if (e == CL_SUCCESS) e = clEnqueueCopyBuffer(q, tmp, PRN__OCL_MEM(dst), 0, doff, bytes, 0, NULL, NULL);
        clReleaseMemObject(tmp);
        return e == CL_SUCCESS ? PRN_OK : prn__ocl_fail(ctx, "clEnqueueCopyBuffer", e);
    }
    e = clEnqueueCopyBuffer(prn__ocl_get(ctx)->queue, PRN__OCL_MEM(src), PRN__OCL_MEM(dst), soff, doff, bytes, 0, NULL,
                            NULL);
    return e == CL_SUCCESS ? PRN_OK : prn__ocl_fail(ctx, "clEnqueueCopyBuffer", e);
}

/* ------------------------------------------------------------------------
 * Elementwise: fill, unary, binary, strided copy (kernels_opencl/elementwise.cl)
 * ---------------------------------------------------------------------- */
PRN__OCL_FN prn_status prn__ocl_fill(prn_context *ctx, prn_dtype dtype, void *y, size_t n, double value) {
    prn__ocl_args a;
    a.n = 0;
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
    prn__ocl_arg_u64(&a, n);
    if (dtype == PRN_F64) {
        uint64_t bits;
        double v = value;
        memcpy(&bits, &v, 8);
        prn__ocl_arg_bits(&a, bits);
        return prn__ocl_run(ctx, PRN_F32, "elementwise", "fill64", n, &a);
    } else {
        cl_uint bits;
        if (dtype == PRN_F32) { float v = (float)value; memcpy(&bits, &v, 4); }
        else { cl_int v = (cl_int)value; memcpy(&bits, &v, 4); }
        prn__ocl_arg_u64(&a, (size_t)bits);
        return prn__ocl_run(ctx, PRN_F32, "elementwise", "fill32", n, &a);
    }
}

PRN__OCL_FN prn_status prn__ocl_unary(prn_context *ctx, prn_unary_op op, prn_dtype dtype, size_t n, const void *x,
                                      void *y, double alpha, double beta) {
    prn__ocl_args a;
    if ((int)op < 0 || op >= PRN_UNARY_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "unary: unknown op %d", (int)op);
    a.n = 0;
    prn__ocl_arg_int(&a, (int)op);
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(x));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
    prn__ocl_arg_real(&a, dtype, alpha);
    prn__ocl_arg_real(&a, dtype, beta);
    return prn__ocl_run(ctx, dtype, "elementwise", "unary", n, &a);
}

PRN__OCL_FN prn_status prn__ocl_binary(prn_context *ctx, prn_binary_op op, prn_dtype dtype, const size_t shape[4],
                                       const void *x, const size_t xs[4], const void *z, const size_t zs[4],
                                       void *y) {
    prn__ocl_args a;
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    int i;
    if ((int)op < 0 || op >= PRN_BINARY_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "binary: unknown op %d", (int)op);
    a.n = 0;
    prn__ocl_arg_int(&a, (int)op);
    {   /* both operands contiguous like y: the flat kernel */
        size_t want = 1;
        int flat = 1;
        for (i = 3; i >= 0; --i) {
            if (shape[i] != 1 && (xs[i] != want || zs[i] != want)) flat = 0;
            want *= shape[i];
        }
        if (flat) {
            prn__ocl_arg_u64(&a, n);
            prn__ocl_arg_mem(&a, PRN__OCL_MEM(x));
            prn__ocl_arg_mem(&a, PRN__OCL_MEM(z));
            prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
            return prn__ocl_run(ctx, dtype, "elementwise", "binary_flat", n, &a);
        }
    }
    for (i = 1; i < 4; ++i) prn__ocl_arg_u64(&a, shape[i]);
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(x));
    for (i = 0; i < 4; ++i) prn__ocl_arg_u64(&a, xs[i]);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(z));
    for (i = 0; i < 4; ++i) prn__ocl_arg_u64(&a, zs[i]);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
    return prn__ocl_run(ctx, dtype, "elementwise", "binary", n, &a);
}

PRN__OCL_FN prn_status prn__ocl_strided_copy(prn_context *ctx, prn_dtype dtype, const size_t shape[4], const void *x,
                                             size_t x_off, const size_t xs[4], void *y, size_t y_off,
                                             const size_t ys[4]) {
    prn__ocl_args a;
    size_t n = shape[0] * shape[1] * shape[2] * shape[3];
    int i;
    a.n = 0;
    for (i = 1; i < 4; ++i) prn__ocl_arg_u64(&a, shape[i]);
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(x));
    prn__ocl_arg_u64(&a, x_off);
    for (i = 0; i < 4; ++i) prn__ocl_arg_u64(&a, xs[i]);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
    prn__ocl_arg_u64(&a, y_off);
    for (i = 0; i < 4; ++i) prn__ocl_arg_u64(&a, ys[i]);
    return prn__ocl_run(ctx, PRN_F32, "elementwise", dtype == PRN_F64 ? "strided_copy64" : "strided_copy32", n, &a);
}

/* ------------------------------------------------------------------------
 * Reductions, argmax, softmax (kernels_opencl/reduce.cl)
 * ---------------------------------------------------------------------- */

PRN__OCL_FN size_t prn__ocl_esize(prn_dtype dt) { return dt == PRN_F64 ? 8 : 4; }

/* The ops of reduce.cl */
enum { PRN__OCL_RD_SUM, PRN__OCL_RD_MAX, PRN__OCL_RD_SUMEXP, PRN__OCL_RD_ARGMAX };
#define PRN__OCL_RD_RUN 16  /* RD_RUN of reduce.cl: elements per work-item and pass */
#define PRN__OCL_RD_GROUP 256 /* largest work-group of rd_rows */
/* Rows longer than this go to rd_rows (work-groups of 32 or more: shorter
 * rows would leave most lanes of a GPU's SIMD unit idle); shorter ones to
 * rd_cols, which needs at most two passes for them. */
#define PRN__OCL_RD_ROWS_MIN (16 * PRN__OCL_RD_RUN)

/* The work-group size of rd_rows: the largest power of two up to
 * PRN__OCL_RD_GROUP that the device allows for the kernel. */
PRN__OCL_FN prn_status prn__ocl_rows_group(prn_context *ctx, prn_dtype dt, size_t *L) {
    cl_kernel k = NULL;
    size_t wg = 0;
    cl_int e;
    prn_status st = prn__ocl_kernel_get(ctx, prn__ocl_t(dt), "reduce", "rd_rows", &k);
    if (st != PRN_OK) return st;
    e = clGetKernelWorkGroupInfo(k, prn__ocl_get(ctx)->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    if (e != CL_SUCCESS) return prn__ocl_fail(ctx, "clGetKernelWorkGroupInfo(rd_rows)", e);
    for (*L = PRN__OCL_RD_GROUP; *L > 1 && *L > wg;) *L >>= 1;
    return PRN_OK;
}

/* Reduces x [outer, n, inner] over n into y [outer, inner] (values, or
 * int32 indices for argmax; sub [outer, inner] is RD_SUMEXP's shift). Each
 * pass folds chunks of n into partials [outer, chunks, inner] in scratch
 * (two buffers, used in turn) until one chunk is left, which the last pass
 * writes to y. Long rows (inner == 1) go to rd_rows, whose work-group
 * covers up to PRN__OCL_RD_GROUP runs: one pass for rows up to 4096
 * elements, three for 10^7. Needs outer * inner > 0. */
PRN__OCL_FN prn_status prn__ocl_reduce_passes(prn_context *ctx, prn_dtype dt, int op, size_t outer, size_t n,
                                              size_t inner, cl_mem x, cl_mem sub, cl_mem y) {
    cl_mem tv[2] = {NULL, NULL}, ti[2] = {NULL, NULL}; /* partial values, and indices for argmax */
    cl_mem xv = x, xi = x;
    size_t Lmax = 0;
    int pass = 0, first = 1;
    prn_status st = PRN_OK;
    for (;;) {
        const int rows = inner == 1 && n > PRN__OCL_RD_ROWS_MIN;
        size_t L = 1, chunk, nchunks, out;
        cl_mem yv = y, yi = y;
        int last, t = pass & 1;
        prn__ocl_args a;
        if (rows) {
            if (!Lmax && (st = prn__ocl_rows_group(ctx, dt, &Lmax)) != PRN_OK) break;
            while (L < Lmax && L * PRN__OCL_RD_RUN < n) L <<= 1; /* no larger than the row needs */
        }
        chunk = L * PRN__OCL_RD_RUN;
        nchunks = n > chunk ? (n + chunk - 1) / chunk : 1;
        last = nchunks == 1;
        out = outer * nchunks * inner;
        if (!last) {
            if (!tv[t] && !(tv[t] = prn__ocl_scratch(ctx, out * prn__ocl_esize(dt)))) { st = prn_last_status(ctx); break; }
            if (op == PRN__OCL_RD_ARGMAX && !ti[t] && !(ti[t] = prn__ocl_scratch(ctx, out * sizeof(cl_int)))) {
                st = prn_last_status(ctx);
                break;
            }
            yv = tv[t];
            yi = ti[t] ? ti[t] : tv[t];
        }
        a.n = 0;
        prn__ocl_arg_int(&a, op);
        prn__ocl_arg_int(&a, first);
        prn__ocl_arg_int(&a, last);
        prn__ocl_arg_u64(&a, n);
        if (!rows) prn__ocl_arg_u64(&a, inner);
        prn__ocl_arg_u64(&a, nchunks);
        if (!rows) prn__ocl_arg_u64(&a, out);
        prn__ocl_arg_mem(&a, xv);
        prn__ocl_arg_mem(&a, xi);
        prn__ocl_arg_mem(&a, sub ? sub : x);
        prn__ocl_arg_mem(&a, yv);
        prn__ocl_arg_mem(&a, yi);
        if (rows) {
            prn__ocl_arg_local(&a, L * prn__ocl_esize(dt));
            prn__ocl_arg_local(&a, L * sizeof(cl_int));
            st = prn__ocl_run_local(ctx, dt, "reduce", "rd_rows", out * L, L, &a);
        } else {
            st = prn__ocl_run(ctx, dt, "reduce", "rd_cols", out, &a);
        }
        if (st != PRN_OK || last) break;
        /* the partials are the next pass's input; exp was applied once */
        xv = yv;
        xi = yi;
        n = nchunks;
        if (op == PRN__OCL_RD_SUMEXP) op = PRN__OCL_RD_SUM;
        first = 0;
        ++pass;
    }
    for (pass = 0; pass < 2; ++pass) {
        if (tv[pass]) clReleaseMemObject(tv[pass]);
        if (ti[pass]) clReleaseMemObject(ti[pass]);
    }
    return st;
}

PRN__OCL_FN prn_status prn__ocl_reduce(prn_context *ctx, prn_reduce_op op, prn_dtype dtype, size_t outer, size_t n,
                                       size_t inner, const void *x, void *y) {
    if (op != PRN_REDUCE_SUM && op != PRN_REDUCE_MAX)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "reduce: unknown op %d", (int)op);
    if (!outer || !inner) return PRN_OK;
    /* n == 0 needs no special case: one pass of empty chunks writes 0 or -inf */
    return prn__ocl_reduce_passes(ctx, dtype, op == PRN_REDUCE_SUM ? PRN__OCL_RD_SUM : PRN__OCL_RD_MAX, outer, n,
                                  inner, PRN__OCL_MEM(x), NULL, PRN__OCL_MEM(y));
}

PRN__OCL_FN prn_status prn__ocl_argmax(prn_context *ctx, prn_dtype dtype, size_t outer, size_t n, size_t inner,
                                       const void *x, void *y) {
    if (!outer || !inner) return PRN_OK;
    return prn__ocl_reduce_passes(ctx, dtype, PRN__OCL_RD_ARGMAX, outer, n, inner, PRN__OCL_MEM(x), NULL,
                                  PRN__OCL_MEM(y));
}

/* Three steps, as the reference: the maximum of each [o, :, i], the sum of
 * exp(x - max) (both reductions in scratch), then every output. */
PRN__OCL_FN prn_status prn__ocl_softmax(prn_context *ctx, prn_dtype dtype, int logsm, size_t outer, size_t n,
                                        size_t inner, const void *x, void *y) {
    const size_t r = outer * inner, es = prn__ocl_esize(dtype);
    cl_mem mx, s = NULL;
    prn__ocl_args a;
    prn_status st;
    if (!r || !n) return PRN_OK;
    if (!(mx = prn__ocl_scratch(ctx, r * es))) return prn_last_status(ctx);
    if (!(s = prn__ocl_scratch(ctx, r * es))) st = prn_last_status(ctx);
    else st = prn__ocl_reduce_passes(ctx, dtype, PRN__OCL_RD_MAX, outer, n, inner, PRN__OCL_MEM(x), NULL, mx);
    if (st == PRN_OK)
        st = prn__ocl_reduce_passes(ctx, dtype, PRN__OCL_RD_SUMEXP, outer, n, inner, PRN__OCL_MEM(x), mx, s);
    if (st == PRN_OK) {
        a.n = 0;
        prn__ocl_arg_int(&a, logsm != 0);
        prn__ocl_arg_u64(&a, n);
        prn__ocl_arg_u64(&a, inner);
        prn__ocl_arg_u64(&a, r * n);
        prn__ocl_arg_mem(&a, PRN__OCL_MEM(x));
        prn__ocl_arg_mem(&a, mx);
        prn__ocl_arg_mem(&a, s);
        prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
        st = prn__ocl_run(ctx, dtype, "reduce", "sm_apply", r * n, &a);
    }
    clReleaseMemObject(mx);
    if (s) clReleaseMemObject(s);
    return st;
}

/* ------------------------------------------------------------------------
 * Random numbers (kernels_opencl/random.cl)
 * ---------------------------------------------------------------------- */
/* One f32 value of the reference's mapping (prn__random_value of parrnn.h),
 * on the host: for devices without fp64, whose kernels could not round
 * as the reference does. */
PRN__OCL_FN float prn__ocl_random_f32(prn_random_dist dist, uint64_t seed, uint64_t block, double p0, double p1) {
    uint32_t w[4];
    prn_philox4x32(seed, block, w);
    if (dist == PRN_RANDOM_UNIFORM) {
        double v = (double)(float)(p0 + (p1 - p0) * ((double)(w[0] >> 8) * (1.0 / 16777216.0)));
        return (float)(v < p1 || p1 <= p0 ? v : p0);
    } else {
        double u1 = ((double)(((uint64_t)w[0] << 21) ^ (w[1] >> 11)) + 1.0) * (1.0 / 9007199254740992.0);
        double u2 = (double)(((uint64_t)w[2] << 21) ^ (w[3] >> 11)) * (1.0 / 9007199254740992.0);
        return (float)(p0 + p1 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2));
    }
}

PRN__OCL_FN prn_status prn__ocl_random(prn_context *ctx, prn_random_dist dist, prn_dtype dtype, size_t n,
                                       uint64_t seed, uint64_t counter, double p0, double p1, void *y) {
    prn__ocl_args a;
    uint64_t b0, b1;
    if (dist != PRN_RANDOM_UNIFORM && dist != PRN_RANDOM_NORMAL)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "random: unknown distribution %d", (int)dist);
    if (!n) return PRN_OK;
    if (dtype != PRN_F64 && !prn__ocl_get(ctx)->has_f64) {
        /* drawn on the host in slices, uploaded */
        const size_t slice = 16384;
        float *buf = (float *)prn_alloc(ctx, (n < slice ? n : slice) * sizeof(float));
        size_t done, i, m;
        prn_status st = PRN_OK;
        if (!buf) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "random: out of host memory");
        for (done = 0; done < n && st == PRN_OK; done += m) {
            m = n - done < slice ? n - done : slice;
            for (i = 0; i < m; ++i) buf[i] = prn__ocl_random_f32(dist, seed, counter + done + i, p0, p1);
            st = prn__ocl_buf_upload(ctx, y, done * sizeof(float), buf, m * sizeof(float));
        }
        prn_free(ctx, buf);
        return st;
    }
    memcpy(&b0, &p0, 8);
    memcpy(&b1, &p1, 8);
    a.n = 0;
    prn__ocl_arg_int(&a, dist == PRN_RANDOM_NORMAL);
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_bits(&a, seed);
    prn__ocl_arg_bits(&a, counter);
    prn__ocl_arg_bits(&a, b0);
    prn__ocl_arg_bits(&a, b1);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(y));
    return prn__ocl_run(ctx, dtype, "random", "rng_fill", n, &a);
}

/* ------------------------------------------------------------------------
 * Optimiser updates (kernels_opencl/optim.cl)
 * ---------------------------------------------------------------------- */
PRN__OCL_FN prn_status prn__ocl_sgd_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param,
                                           const void *grad, void *velocity, const prn_optim_params *p) {
    prn__ocl_args a;
    a.n = 0;
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(param));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(grad));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(velocity ? velocity : param)); /* not read without velocity */
    prn__ocl_arg_int(&a, velocity != NULL);
    prn__ocl_arg_int(&a, p->nesterov != 0);
    prn__ocl_arg_real(&a, dtype, p->lr);
    prn__ocl_arg_real(&a, dtype, p->momentum);
    prn__ocl_arg_real(&a, dtype, p->weight_decay);
    return prn__ocl_run(ctx, dtype, "optim", "opt_sgd", n, &a);
}

PRN__OCL_FN prn_status prn__ocl_adam_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param,
                                            const void *grad, void *m, void *v, const prn_optim_params *p) {
    prn__ocl_args a;
    a.n = 0;
    prn__ocl_arg_u64(&a, n);
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(param));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(grad));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(m));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(v));
    prn__ocl_arg_int(&a, p->decoupled != 0);
    prn__ocl_arg_real(&a, dtype, p->lr);
    prn__ocl_arg_real(&a, dtype, p->beta1);
    prn__ocl_arg_real(&a, dtype, p->beta2);
    prn__ocl_arg_real(&a, dtype, p->eps);
    prn__ocl_arg_real(&a, dtype, p->weight_decay);
    prn__ocl_arg_real(&a, dtype, 1.0 / p->bias1); /* as the reference: the inverse in double, then rounded */
    prn__ocl_arg_real(&a, dtype, 1.0 / p->bias2);
    return prn__ocl_run(ctx, dtype, "optim", "opt_adam", n, &a);
}

/* ------------------------------------------------------------------------
 * Fused cell steps (kernels_opencl/rnn_cell.cl)
 * ---------------------------------------------------------------------- */
/* The arguments both kernels begin with, after checking them. */
PRN__OCL_FN prn_status prn__ocl_cell_args(prn_context *ctx, const char *fn, prn__ocl_args *a, int kind, int relu,
                                          size_t B, size_t H, size_t k) {
    prn_status st = prn_backend_rnn_gates_check(ctx, fn, kind, H, &k);
    if (st != PRN_OK) return st;
    a->n = 0;
    prn__ocl_arg_u64(a, B);
    prn__ocl_arg_u64(a, H);
    prn__ocl_arg_u64(a, k);
    prn__ocl_arg_int(a, kind);
    prn__ocl_arg_int(a, relu != 0);
    return PRN_OK;
}
PRN__OCL_FN prn_status prn__ocl_rnn_gates_forward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B,
                                                 size_t H, size_t k, const void *xp, const void *q, const void *bias,
                                                 const void *s, void *next, void *saved) {
    prn__ocl_args a;
    prn_status st = prn__ocl_cell_args(ctx, "rnn_gates_forward", &a, kind, relu, B, H, k);
    if (st != PRN_OK || B * H == 0) return st;
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(xp));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(q));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(bias));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(s));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(next));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(saved ? saved : next)); /* Elman saves nothing */
    return prn__ocl_run(ctx, dtype, "rnn_cell", "rnn_cell_fwd", B * H, &a);
}
PRN__OCL_FN prn_status prn__ocl_rnn_gates_backward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B,
                                                  size_t H, size_t k, const void *g, const void *s, const void *next,
                                                  const void *saved, void *dxp, void *dq, void *ds) {
    prn__ocl_args a;
    prn_status st = prn__ocl_cell_args(ctx, "rnn_gates_backward", &a, kind, relu, B, H, k);
    if (st != PRN_OK || B * H == 0) return st;
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(g));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(s));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(next));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(saved ? saved : next));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(dxp));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(dq));
    prn__ocl_arg_mem(&a, PRN__OCL_MEM(ds));
    return prn__ocl_run(ctx, dtype, "rnn_cell", "rnn_cell_bwd", B * H, &a);
}

/* ------------------------------------------------------------------------
 * Batched dense solves (kernels_opencl/solve.cl): one work-group per system
 * ---------------------------------------------------------------------- */
/* info travels from the device's int32 straight into the caller's ints. */
typedef char prn__ocl_int_is_cl_int[sizeof(int) == sizeof(cl_int) ? 1 : -1];
#define PRN__OCL_SOLVE_WG 256 /* the largest work-group of solve_lu */

PRN__OCL_FN prn_status prn__ocl_solve_batched(prn_context *ctx, prn_dtype dtype, size_t batch, size_t n, void *a,
                                              void *r, int *info) {
    prn__ocl_state *s = prn__ocl_get(ctx);
    prn__ocl_args x;
    cl_kernel k = NULL;
    cl_mem dinfo;
    size_t L = 32, wg = 0;
    prn_status st;
    cl_int e;
    if (n == 0) return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "solve_batched: argument 'n' is 0");
    if (n > 0x7fffffff) /* info reports columns as int, the kernel rows as uint */
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "solve_batched: argument 'n' (%lu) is above 2^31 - 1",
                             (unsigned long)n);
    if (dtype != PRN_F32 && dtype != PRN_F64)
        return prn_set_error(ctx, PRN_ERR_DTYPE, "solve_batched: dtype %s is not f32 or f64", prn_dtype_name(dtype));
    if (batch == 0) return PRN_OK;
    if ((st = prn__ocl_kernel_get(ctx, prn__ocl_t(dtype), "solve", "solve_lu", &k)) != PRN_OK) return st;
    e = clGetKernelWorkGroupInfo(k, s->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    if (e != CL_SUCCESS) return prn__ocl_fail(ctx, "clGetKernelWorkGroupInfo(solve_lu)", e);
    /* a power of two (the pivot search's tree) from a SIMD width up to about
     * one work-item per row: the wider trailing blocks keep them busy */
    while (L < PRN__OCL_SOLVE_WG && L < n) L <<= 1;
    while (L > 1 && L > wg) L >>= 1;
    if (!(dinfo = prn__ocl_scratch(ctx, batch * sizeof(cl_int)))) return prn_last_status(ctx);
    x.n = 0;
    prn__ocl_arg_u64(&x, n);
    prn__ocl_arg_mem(&x, PRN__OCL_MEM(a));
    prn__ocl_arg_mem(&x, PRN__OCL_MEM(r));
    prn__ocl_arg_mem(&x, dinfo);
    prn__ocl_arg_local(&x, L * prn__ocl_esize(dtype));
    prn__ocl_arg_local(&x, L * sizeof(cl_uint));
    st = prn__ocl_run_local(ctx, dtype, "solve", "solve_lu", batch * L, L, &x);
    if (st == PRN_OK) {
        e = clEnqueueReadBuffer(s->queue, dinfo, CL_TRUE, 0, batch * sizeof(cl_int), info, 0, NULL, NULL);
        if (e != CL_SUCCESS) st = prn__ocl_fail(ctx, "solve_batched: clEnqueueReadBuffer(info)", e);
    }
    clReleaseMemObject(dinfo);
    return st;
}

/* ------------------------------------------------------------------------
 * GEMM: CLBlast's strided-batched GEMM (row-major), edge cases here
 * ---------------------------------------------------------------------- */
PRN__OCL_FN prn_status prn__ocl_gemm(prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b, size_t M,
                                     size_t N, size_t K, double alpha, const void *A, size_t lda, size_t sa,
                                     const void *B, size_t ldb, size_t sb, double beta, void *C, size_t ldc,
                                     size_t sc, size_t batch) {
    prn__ocl_state *s = prn__ocl_get(ctx);
    const CLBlastTranspose ta = trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tb = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode e;
    if (!M || !N || !batch) return PRN_OK;
    if (dtype == PRN_F64 && !s->has_f64)
        return prn_set_error(ctx, PRN_ERR_UNSUPPORTED, "opencl: device '%s' has no f64 (cl_khr_fp64)", s->device_name);
    if (K == 0) { /* C = beta C; CLBlast rejects K == 0 */
        prn__ocl_args a;
        if (beta == 1) return PRN_OK;
        a.n = 0;
        prn__ocl_arg_u64(&a, M);
        prn__ocl_arg_u64(&a, N);
        prn__ocl_arg_u64(&a, ldc);
        prn__ocl_arg_u64(&a, sc);
        prn__ocl_arg_u64(&a, batch * M * N);
        prn__ocl_arg_int(&a, beta == 0);
        prn__ocl_arg_real(&a, dtype, beta);
        prn__ocl_arg_mem(&a, PRN__OCL_MEM(C));
        return prn__ocl_run(ctx, dtype, "gemm", "gemm_scale_c", batch * M * N, &a);
    }
    if (dtype == PRN_F64)
        e = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, M, N, K, alpha, PRN__OCL_MEM(A), 0, lda, sa,
                                       PRN__OCL_MEM(B), 0, ldb, sb, beta, PRN__OCL_MEM(C), 0, ldc, sc, batch,
                                       &s->queue, NULL);
    else
        e = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, M, N, K, (float)alpha, PRN__OCL_MEM(A), 0, lda,
                                       sa, PRN__OCL_MEM(B), 0, ldb, sb, (float)beta, PRN__OCL_MEM(C), 0, ldc, sc,
                                       batch, &s->queue, NULL);
    return e == CLBlastSuccess ? PRN_OK : prn__ocl_clblast_fail(ctx, "CLBlastXgemmStridedBatched", e);
}

/* ------------------------------------------------------------------------
 * Scans of linear recurrences (kernels_opencl/scan_diag.cl, scan_block.cl)
 *
 * Parallel in time, so that a GPU has work when batch x channels is small:
 * time is cut into `chunks` chunks of L steps (the last may be shorter) and
 *   1. fold: one work-item per (sequence, channel, chunk) -- per column of
 *      [M | v] of a (sequence, block, chunk) for block scans -- reduces its
 *      chunk to one affine map h -> M h + v (the last chunk's map is never
 *      needed and not computed);
 *   2. carries: the maps of a sequence form a recurrence of the same kind
 *      over chunks-1 steps, scanned by this same code, recursively (in place
 *      in the offset scratch; each level is at least SCAN_MIN_LEN times
 *      shorter than the one above: T = 10^7 on one channel takes 5);
 *   3. expand: one work-item per (sequence, channel, chunk) -- (sequence,
 *      block, chunk) -- re-runs its chunk from its incoming carry, writing h.
 * So a and b are read twice. The chunk count aims at SCAN_ITEMS work-items
 * per fold (enough to fill a GPU), no chunk shorter than SCAN_MIN_LEN
 * steps; when batch x channels alone fill the device there is one chunk,
 * and the expand kernel is the whole (serial-in-time, parallel-across-
 * channels) scan. Scratch: 2 values per (sequence, channel, chunk) for
 * diagonal scans, k + 1 for block scans, plus about 1/SCAN_MIN_LEN of that
 * for the levels below; the chunk count keeps it under SCAN_ITEMS x 2
 * (diagonal) and SCAN_ITEMS x k (blocks) values.
 *
 * algo: AUTO, CHUNKED and TREE all run the chunked scan above (the
 * Blelloch tree would do more passes over the data for no gain here);
 * SEQUENTIAL runs one chunk per sequence: one work-item per (sequence,
 * channel), or (sequence, block), walks all of time -- a serial-in-time
 * baseline for benchmarks. Rounding differs from the reference's orders
 * but stays within the same bounds (f32 accumulates in f32).
 * ---------------------------------------------------------------------- */
#define PRN__OCL_SCAN_ITEMS ((size_t)1 << 16)
#define PRN__OCL_SCAN_MIN_LEN 32
/* work-group size of the scan kernels: a multiple of any SIMD width, and
 * small enough for the block kernels' private arrays */
#define PRN__OCL_SCAN_WG 64

/* Chunks for T steps when one chunk gives `units` fold work-items; sets the
 * chunk length *L. No chunk is empty. */
PRN__OCL_FN size_t prn__ocl_scan_chunks(size_t T, size_t units, int serial, size_t *L) {
    size_t nch = serial || units >= PRN__OCL_SCAN_ITEMS ? 1 : PRN__OCL_SCAN_ITEMS / units;
    size_t most = (T + PRN__OCL_SCAN_MIN_LEN - 1) / PRN__OCL_SCAN_MIN_LEN;
    if (nch > most) nch = most;
    if (nch < 1) nch = 1;
    *L = (T + nch - 1) / nch;
    return (T + *L - 1) / *L;
}

/* A scan on cl_mem handles (h0 may be NULL; h may be b): diagonal for
 * k == 0 (scan_diag.cl), else blocks of k channels (scan_block.cl), whose
 * fold composes [M | v] with one work-item per column. The maps (m, o) --
 * (M, v) for blocks, M as [batch, chunks-1, C, k], already in order -- are
 * scanned forward and untransposed from h0 by this same function, in place
 * in o, which then holds the carry out of each chunk. */
PRN__OCL_FN prn_status prn__ocl_scan_mem(prn_context *ctx, prn_dtype dt, size_t k, int rev, int tr, int serial,
                                         size_t batch, size_t T, size_t C, cl_mem a, cl_mem b, cl_mem h0, cl_mem h) {
    const char *file = k ? "scan_block" : "scan_diag";
    const size_t units = k ? C / k : C, cols = k ? k + 1 : 1; /* blocks or channels; fold items per unit */
    size_t L, nch = prn__ocl_scan_chunks(T, batch * units * cols, serial, &L), nm = nch - 1, es = prn_dtype_size(dt);
    cl_mem m = NULL, o = NULL;
    prn__ocl_args x;
    prn_status st = PRN_OK;
    if (nm) {
        m = prn__ocl_scratch(ctx, batch * nm * C * (k ? k : 1) * es);
        o = m ? prn__ocl_scratch(ctx, batch * nm * C * es) : NULL;
        if (!o) {
            if (m) clReleaseMemObject(m);
            return prn_last_status(ctx);
        }
        x.n = 0;
        prn__ocl_arg_u64(&x, batch);
        prn__ocl_arg_u64(&x, T);
        prn__ocl_arg_u64(&x, C);
        if (k) prn__ocl_arg_u64(&x, k);
        prn__ocl_arg_u64(&x, L);
        prn__ocl_arg_u64(&x, nm);
        prn__ocl_arg_int(&x, rev);
        if (k) prn__ocl_arg_int(&x, tr);
        prn__ocl_arg_mem(&x, a);
        prn__ocl_arg_mem(&x, b);
        prn__ocl_arg_mem(&x, m);
        prn__ocl_arg_mem(&x, o);
        st = prn__ocl_run_local(ctx, dt, file, k ? "scan_block_fold" : "scan_diag_fold", batch * nm * units * cols,
                                PRN__OCL_SCAN_WG, &x);
        if (st == PRN_OK) st = prn__ocl_scan_mem(ctx, dt, k, 0, 0, 0, batch, nm, C, m, o, h0, o);
    }
    if (st == PRN_OK) {
        x.n = 0;
        prn__ocl_arg_u64(&x, batch);
        prn__ocl_arg_u64(&x, T);
        prn__ocl_arg_u64(&x, C);
        if (k) prn__ocl_arg_u64(&x, k);
        prn__ocl_arg_u64(&x, L);
        prn__ocl_arg_u64(&x, nch);
        prn__ocl_arg_int(&x, rev);
        if (k) prn__ocl_arg_int(&x, tr);
        prn__ocl_arg_mem(&x, a);
        prn__ocl_arg_mem(&x, b);
        prn__ocl_arg_mem(&x, h0 ? h0 : b); /* unused stand-ins: kernels take no NULL buffers portably */
        prn__ocl_arg_int(&x, h0 != NULL);
        prn__ocl_arg_mem(&x, o ? o : b);
        prn__ocl_arg_mem(&x, h);
        st = prn__ocl_run_local(ctx, dt, file, k ? "scan_block_expand" : "scan_diag_expand", batch * nch * units,
                                PRN__OCL_SCAN_WG, &x);
    }
    if (m) clReleaseMemObject(m); /* the runtime keeps them until queued work is done */
    if (o) clReleaseMemObject(o);
    return st;
}

PRN__OCL_FN prn_status prn__ocl_scan_diag(prn_context *ctx, prn_dtype dtype, int reverse, prn_scan_algo algo,
                                          size_t batch, size_t T, size_t C, const void *a, const void *b,
                                          const void *h0, void *h) {
    if (batch == 0 || T == 0 || C == 0) return PRN_OK;
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_diag: unknown algorithm %d", (int)algo);
    if (dtype != PRN_F32 && dtype != PRN_F64)
        return prn_set_error(ctx, PRN_ERR_DTYPE, "scan_diag: dtype %s is not f32 or f64", prn_dtype_name(dtype));
    return prn__ocl_scan_mem(ctx, dtype, 0, reverse != 0, 0, algo == PRN_SCAN_SEQUENTIAL, batch, T, C, PRN__OCL_MEM(a),
                                  PRN__OCL_MEM(b), h0 ? PRN__OCL_MEM(h0) : NULL, PRN__OCL_MEM(h));
}

PRN__OCL_FN prn_status prn__ocl_scan_block(prn_context *ctx, prn_dtype dtype, int reverse, int transpose,
                                           prn_scan_algo algo, size_t batch, size_t T, size_t C, size_t k,
                                           const void *a, const void *b, const void *h0, void *h) {
    if (batch == 0 || T == 0 || C == 0) return PRN_OK;
    if (k == 0 || k > 64 || C % k != 0)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_block: block size %lu must be 1..64 and divide C = %lu",
                             (unsigned long)k, (unsigned long)C);
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "scan_block: unknown algorithm %d", (int)algo);
    if (dtype != PRN_F32 && dtype != PRN_F64)
        return prn_set_error(ctx, PRN_ERR_DTYPE, "scan_block: dtype %s is not f32 or f64", prn_dtype_name(dtype));
    return prn__ocl_scan_mem(ctx, dtype, k, reverse != 0, transpose != 0, algo == PRN_SCAN_SEQUENTIAL, batch, T, C,
                             PRN__OCL_MEM(a), PRN__OCL_MEM(b), h0 ? PRN__OCL_MEM(h0) : NULL, PRN__OCL_MEM(h));
}

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */
/* Left NULL: rnn_layer_forward/_backward (the generic code steps through
 * time), deer_iterate/_adjoint (DEER composes its iterations), all_finite
 * (composed from unary and reduce), supports. */
#define PRN__OCL_ENTRIES(E)                                                                             \
    E(create, prn__ocl_create) E(destroy, prn__ocl_destroy)                                             \
    E(buf_alloc, prn__ocl_buf_alloc) E(buf_free, prn__ocl_buf_free) E(buf_upload, prn__ocl_buf_upload) \
    E(buf_download, prn__ocl_buf_download) E(buf_copy, prn__ocl_buf_copy)                               \
    E(fill, prn__ocl_fill) E(unary, prn__ocl_unary) E(binary, prn__ocl_binary)                          \
    E(strided_copy, prn__ocl_strided_copy) E(gemm, prn__ocl_gemm) E(reduce, prn__ocl_reduce)            \
    E(argmax, prn__ocl_argmax) E(softmax, prn__ocl_softmax) E(random, prn__ocl_random)                  \
    E(sgd_update, prn__ocl_sgd_update) E(adam_update, prn__ocl_adam_update)                             \
    E(scan_diag, prn__ocl_scan_diag) E(scan_block, prn__ocl_scan_block)                                 \
    E(rnn_gates_forward, prn__ocl_rnn_gates_forward) E(rnn_gates_backward, prn__ocl_rnn_gates_backward)     \
    E(solve_batched, prn__ocl_solve_batched)
PRN__OCL_DEF const prn_backend *prn_opencl_backend(void) {
    PRN_BACKEND_TABLE(b, "opencl", PRN__OCL_ENTRIES);
    return &b;
}

#endif /* PARRNN_OPENCL_IMPLEMENTATION_DONE */
#endif /* PARRNN_OPENCL_IMPLEMENTATION */
