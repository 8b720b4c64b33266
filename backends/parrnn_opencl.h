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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parrnn_opencl_kernels.h" /* prn__ocl_files[], generated from kernels_opencl/ */

#if defined(__GNUC__) || defined(__clang__)
#define PRN__OCL_FN static __attribute__((unused))
#else
#define PRN__OCL_FN static
#endif
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
    e = clBuildProgram(prog, 1, &s->device, opts[t], NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[400] = "";
        clGetProgramBuildInfo(prog, s->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        log[sizeof log - 1] = 0;
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
    if (e != CL_SUCCESS) { prn__ocl_fail(ctx, "clCreateBuffer(scratch)", e); return NULL; }
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
        cl_ulong bits;
        double v = value;
        memcpy(&bits, &v, 8);
        prn__ocl_arg_u64(&a, (size_t)bits);
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

/* ==== PRIMITIVES: reductions, softmax, random, optimisers, GEMM ==== */
#include "parrnn_opencl_prims.inc" /* TEMPORARY during development: merged in later */

/* ==== PRIMITIVES: scans ==== */
#include "parrnn_opencl_scans.inc" /* TEMPORARY during development: merged in later */

/* TEMPORARY scaffolding: entries not written yet stay NULL */
#ifndef PRN__OCL_GEMM
#define PRN__OCL_GEMM NULL
#endif
#ifndef PRN__OCL_REDUCE
#define PRN__OCL_REDUCE NULL
#endif
#ifndef PRN__OCL_ARGMAX
#define PRN__OCL_ARGMAX NULL
#endif
#ifndef PRN__OCL_SOFTMAX
#define PRN__OCL_SOFTMAX NULL
#endif
#ifndef PRN__OCL_RANDOM
#define PRN__OCL_RANDOM NULL
#endif
#ifndef PRN__OCL_SGD_UPDATE
#define PRN__OCL_SGD_UPDATE NULL
#endif
#ifndef PRN__OCL_ADAM_UPDATE
#define PRN__OCL_ADAM_UPDATE NULL
#endif
#ifndef PRN__OCL_SCAN_DIAG
#define PRN__OCL_SCAN_DIAG NULL
#endif
#ifndef PRN__OCL_SCAN_BLOCK
#define PRN__OCL_SCAN_BLOCK NULL
#endif

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */
PRN__OCL_DEF const prn_backend *prn_opencl_backend(void) {
    /* in the order of struct prn_backend */
    static const prn_backend b = {
        "opencl", PARRNN_BACKEND_ABI, prn__ocl_create, prn__ocl_destroy,
        prn__ocl_buf_alloc, prn__ocl_buf_free, prn__ocl_buf_upload, prn__ocl_buf_download, prn__ocl_buf_copy,
        prn__ocl_fill, prn__ocl_unary, prn__ocl_binary, prn__ocl_strided_copy,
        PRN__OCL_GEMM, PRN__OCL_REDUCE, PRN__OCL_ARGMAX, PRN__OCL_SOFTMAX, PRN__OCL_RANDOM,
        PRN__OCL_SGD_UPDATE, PRN__OCL_ADAM_UPDATE,
        PRN__OCL_SCAN_DIAG, PRN__OCL_SCAN_BLOCK,
        {NULL}};
    return &b;
}

#endif /* PARRNN_OPENCL_IMPLEMENTATION_DONE */
#endif /* PARRNN_OPENCL_IMPLEMENTATION */
