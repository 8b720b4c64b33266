/* parrnn.h - parallel recurrent neural networks in one C header.
 *
 * Tensors, a reverse-mode autodiff tape, optimisers, parallel scans of linear
 * recurrences and the RNN cells built on them, and a reference C backend, all
 * dispatched through a table of backend primitives (see PRN_BACKEND_SLOTS).
 *
 * USAGE (stb style)
 *   In exactly one C or C++ file:
 *       #define PARRNN_IMPLEMENTATION
 *       #include "parrnn.h"
 *   Everywhere else just #include "parrnn.h".
 *   #define PARRNN_STATIC before the include to give every function static
 *   linkage (private copy per translation unit).
 *
 * BUILD OPTIONS (define in the implementation file or on the command line)
 *   PARRNN_USE_CBLAS   the "reference" backend runs GEMM through CBLAS
 *                      (link -lopenblas or any CBLAS). Without it, its
 *                      large f32 products run on the header's own AVX2/
 *                      AVX-512 panel GEMM where the processor has AVX2 and
 *                      FMA. "reference-noblas" always uses the plain loops
 *                      and is the test oracle.
 *   -fopenmp           the reference backend threads its loops with OpenMP;
 *                      prn_config.num_threads caps the threads per call.
 *   PARRNN_MALLOC/PARRNN_FREE  default allocator (both or neither); the
 *                      allocator in prn_config overrides them per context.
 *   PARRNN_USE_LAPACK  prn_eigenvalues calls LAPACK's dgeev (link -llapack)
 *                      instead of the header's own QR iteration.
 *   PARRNN_NO_INTRINSICS  no x86 intrinsics: the scans' streaming stores
 *                      for outputs larger than the caches (SSE2) are off,
 *                      and so is everything PARRNN_NO_AVX2 turns off.
 *   PARRNN_NO_AVX2     no AVX2 functions. Otherwise, with gcc or clang on
 *                      x86, the one-channel diagonal scan and the fused RNN
 *                      layers' f32 products and gates use AVX2 and FMA when
 *                      the processor has them (checked at run time).
 *   PARRNN_NO_AVX512   no AVX-512 functions (the float frames use AVX-512F
 *                      when the processor has it and the hidden size,
 *                      rounded up to 8, is a multiple of 16).
 *   PARRNN_SELF_PATH   the implementation includes this file again to
 *                      instantiate its templates (see TEMPLATES at the
 *                      end), by default as "parrnn.h", which the quoted
 *                      include finds beside itself; a copy renamed in a
 *                      project defines this to its new name, in quotes.
 *   PARRNN_WITH_OPENCL / PARRNN_WITH_CUDA  "opencl" / "cuda" are built-in
 *                      backend names; link the backend of
 *                      backends/parrnn_opencl.h / backends/parrnn_cuda.h
 *                      (each documents its build). Without them, pass
 *                      prn_opencl_backend() / prn_cuda_backend() in
 *                      prn_config.backends.
 *
 * LEAVING PARTS OUT (define in the implementation file, before the include)
 *   An engine that only steps a network need not compile the rest (stb's
 *   STBI_NO_*). Each macro removes the functions listed; the types stay.
 *   A left-out function is neither defined nor, in a file that defines the
 *   macro too, declared: a call to it fails to compile (undeclared), or,
 *   from a file that does not define the macro, to link ("undefined
 *   reference to `prn_scyfi'"). No left-out function is kept as a stub
 *   that returns an error. Without any of the macros nothing changes.
 *   PARRNN_NO_SCYFI    prn_scyfi, prn_scyfi_free, the piecewise-linear
 *                      models (prn_pwl_check, _step, _parse, _load, _free)
 *                      and prn_eigenvalues (SCYFI's alone). The reference
 *                      backend's solve_batched entry is NULL.
 *   PARRNN_NO_DEER     prn_deer, prn_deer_rnn, with their damping, quasi-DEER
 *                      and adjoint code; the reference backend's
 *                      deer_iterate and deer_adjoint entries (its fused DEER
 *                      kernels) are NULL. prn_rnn_jacobian stays (RNN API),
 *                      and so does prn_backend_deer_check (for backends).
 *   PARRNN_NO_TRAINING frames and inference only. "Training" is what only
 *                      a gradient needs: the tape records nothing (every op
 *                      runs as inside prn_no_grad_begin, prn_grad_enabled
 *                      is 0; parameters may still be marked requires_grad,
 *                      no backward fills prn_tensor_grad); left out are
 *                      prn_backward, prn_backward_retain, prn_tape_record,
 *                      the optimisers (prn_optim_sgd_create, _adam, _step,
 *                      _zero_grad, _set_lr, _free), prn_clip_grad_norm and
 *                      every op's backward function; the reference
 *                      backend's sgd_update, adam_update, rnn_gates_backward,
 *                      rnn_layer_backward and deer_adjoint entries are NULL
 *                      (its fused cells and layers still run the forward:
 *                      without a tape no backward is ever asked of them).
 *                      The losses prn_mse and prn_cross_entropy stay: they
 *                      are forward ops, and evaluate a model too.
 *   PARRNN_ONLY_FRAMES all three: tensors, ops, scans, cells, prn_rnn
 *                      (forward, step, Jacobian, files) and the frames.
 *   The macros concern parrnn.h's implementation and its reference backend.
 *   The backends in backends/ need no change: the OpenCL and CUDA ones call
 *   only functions every build keeps (prn_backend_*_check, prn_set_error,
 *   ...), and their entries for a left-out part are simply never called.
 *   backends/parrnn_mpi.h needs the full build (prn_mpi_scyfi, training).
 *   `make optout-check` (part of `make test`) builds each macro and all
 *   three with gcc and clang, C99 and C++, runs a program on what remains
 *   and checks with nm that the left-out functions are gone.
 *
 * ERRORS
 *   Every fallible function returns a prn_status. On failure the context
 *   keeps a message naming the function, the argument and the problem
 *   (prn_last_error), and nothing the caller owns has been changed: output
 *   pointers are written only on success, tensors keep their contents.
 *
 * OWNERSHIP
 *   Tensors are reference counted. A function that returns a tensor through
 *   a prn_tensor** gives the caller one reference; prn_tensor_free drops it.
 *   The tape keeps its own references to what backward needs, so
 *   intermediates may be freed as soon as the caller is done with them.
 *   prn_context_free frees every tensor still alive on the context; free
 *   optimisers (prn_optim_free) and cells (prn_cell_free) before it.
 *
 * NAMES AND TYPES (one vocabulary; CHANGELOG.md lists the renames)
 *   - prn_<thing>_create makes an object, prn_<thing>_free ends it (the
 *     context too); a loader (prn_rnn_load, prn_pwl_parse/_load) or a
 *     search (prn_scyfi) that returns one says which _free ends it.
 *   - Opaque handles (contexts, tensors, cells, networks, frames,
 *     optimisers) remember their context: prn_<thing>_free(obj). Plain
 *     structs the library fills in for you (prn_pwl_model from a loader,
 *     prn_scyfi_result) have no hidden field, so their _free takes the
 *     context whose allocator made them first, as prn_free does:
 *     prn_pwl_free(ctx, m), prn_scyfi_free(ctx, r).
 *   - The context comes first, outputs come last (a pointer to what is
 *     written); every fallible call returns a prn_status.
 *   - Sizes, counts and lengths are size_t: prn_eigenvalues' n, the
 *     dimensions of tensors, cells and networks, prn_pwl_model's M, H and
 *     P, SCYFI's orders, loop counts, batch and cycle counts (kmax, outer,
 *     inner, batch, pool_size, max_cycles; a cycle's k, a result's M,
 *     num_cycles and count[]); counts that can pass 2^32 on any machine
 *     are uint64_t (SCYFI's solves and singular, exhaustive_limit). int
 *     is for flags, axes, enums, indices into short lists (params,
 *     slots, backends) and the settings and statistics that count
 *     threads, layers or Newton iterations (num_threads, num_layers,
 *     max_iter, iterations), which OpenMP and the loops take as int.
 *   - "cell" is a recurrent unit made by a prn_<kind>_create (prn_cell)
 *     and nothing else: DEER's user-supplied f is a prn_deer_system, and
 *     the backend slots that fuse one step of the classic networks' gates
 *     are rnn_gates_forward / rnn_gates_backward.
 *
 * THREADS
 *   No global mutable state. A context is used by one thread at a time; two
 *   contexts on two threads never interfere.
 *
 * THREADS AND BUSY MACHINES (the reference backend with OpenMP)
 *   Library threads do not spin-wait for long, whatever OMP_WAIT_POLICY
 *   says, so that a program's own busy threads (an engine's) cost the
 *   library no more than their share of the cores:
 *   - The fused RNN layers split the batch between threads (each runs
 *     every time step of its rows: no barrier per step); only a batch of
 *     one row with a large step, or fewer than 16 rows a thread with W_hh
 *     over 2 MiB (a core's L2), splits the hidden units, and the chunked
 *     scan of one long sequence splits time: their threads meet at the
 *     library's own barrier, which spins for tens of microseconds and
 *     then sleeps on a condition variable (POSIX threads; elsewhere the
 *     OpenMP barrier).
 *   - A parallel region ends when its last thread does, and a thread that
 *     another process has preempted arrives a time slice (milliseconds)
 *     late. So every 20 ms of calls a context opens an empty region and
 *     times its threads' arrival; one later than 0.3 ms makes the
 *     context's regions (its elementwise ops, reductions, fused layers,
 *     SCYFI's searches)
 *     run on one thread until the next look (after 20 ms, doubling to
 *     0.5 s while the machine stays busy). Results are the same bits with
 *     any number of threads there. (The chunked scan and DEER's fused
 *     iteration keep prn_config.num_threads: their results or layout
 *     depend on it. So do the GEMMs of a CBLAS: OpenBLAS's OpenMP build
 *     follows the calling thread's nthreads-var, set to num_threads for
 *     the call and restored, and its f32 products can differ in the last
 *     bits between thread counts; the built-in products, backend
 *     "reference-noblas", do not. Where OpenBLAS runs only its SSE3
 *     kernels on an AVX2 machine, the "reference" backend's larger f32
 *     products run on a built-in AVX2 kernel instead, on the team above,
 *     with the same bits for any number of threads.)
 *   - The OpenMP runtime's own waits between regions are its own: with
 *     libgomp an idle team thread spins for a while (GOMP_SPINCOUNT)
 *     before it sleeps; OMP_WAIT_POLICY=passive, set by the program's
 *     user, stops that too. bench/bench_contended.c measures a training
 *     step and DEER with 2 threads beside a spinning process.
 */
#ifndef PARRNN_H
#define PARRNN_H

/* LEAVING PARTS OUT, above: PARRNN_ONLY_FRAMES is the three macros. */
#ifdef PARRNN_ONLY_FRAMES
#ifndef PARRNN_NO_SCYFI
#define PARRNN_NO_SCYFI
#endif
#ifndef PARRNN_NO_DEER
#define PARRNN_NO_DEER
#endif
#ifndef PARRNN_NO_TRAINING
#define PARRNN_NO_TRAINING
#endif
#endif

#define PARRNN_VERSION_MAJOR 0
#define PARRNN_VERSION_MINOR 1
#define PARRNN_VERSION_PATCH 0
#define PARRNN_VERSION_STRING "0.1.0"
/* Bumped whenever prn_backend changes layout; backends state the version
 * they were written for and contexts refuse a mismatch. */
#define PARRNN_BACKEND_ABI 3

#include <stddef.h>
#include <stdint.h>

#ifdef PARRNN_STATIC
#define PRNDEF static
#else
#define PRNDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Status codes
 * ---------------------------------------------------------------------- */
typedef enum prn_status {
    PRN_OK = 0,
    PRN_ERR_NULL_ARGUMENT,   /* a required pointer was NULL                 */
    PRN_ERR_INVALID_ARGUMENT,/* a value out of its documented range         */
    PRN_ERR_SHAPE,           /* shapes do not fit the operation             */
    PRN_ERR_DTYPE,           /* wrong or mixed element types                */
    PRN_ERR_CONTEXT_MISMATCH,/* tensors from different contexts/backends    */
    PRN_ERR_OVERFLOW,        /* a size does not fit in size_t               */
    PRN_ERR_OUT_OF_MEMORY,   /* an allocation failed                        */
    PRN_ERR_UNSUPPORTED,     /* the backend leaves this primitive NULL      */
    PRN_ERR_NOT_FOUND,       /* no backend of that name                     */
    PRN_ERR_STATE,           /* call not valid now (e.g. backward through
                                released records or written saved tensors) */
    PRN_ERR_BACKEND,         /* the backend's runtime reported a failure    */
    PRN_ERR_NO_DEVICE,       /* the backend's runtime or device is absent   */
    PRN_ERR_IO,              /* a file could not be opened, read or written */
    PRN_ERR_FORMAT,          /* a file's contents are invalid               */
    PRN_ERR_NONFINITE,       /* a result would hold NaN or Inf              */
    PRN_ERR_REMOTE,          /* another process (MPI rank) failed           */
    PRN_STATUS_COUNT
} prn_status;

/* A short constant description; never NULL, even for unknown values. */
PRNDEF const char *prn_status_string(prn_status status);

/* ------------------------------------------------------------------------
 * Element types, shapes
 * ---------------------------------------------------------------------- */
typedef enum prn_dtype {
    PRN_F32 = 0,
    PRN_F64 = 1,
    PRN_I32 = 2   /* index tensors only: output of prn_argmax */
} prn_dtype;

#define PRN_MAX_DIMS 4
/* Reduce over every axis (prn_sum, prn_max, prn_mean). */
#define PRN_ALL_AXES 0x7fff

PRNDEF size_t prn_dtype_size(prn_dtype dtype);
PRNDEF const char *prn_dtype_name(prn_dtype dtype);

/* ------------------------------------------------------------------------
 * Configuration and context
 * ---------------------------------------------------------------------- */
typedef struct prn_context prn_context;
typedef struct prn_tensor prn_tensor;
typedef struct prn_backend prn_backend;

/* Allocator hooks. Both NULL: PARRNN_MALLOC/PARRNN_FREE (malloc/free).
 * alloc must return memory aligned for double; free(user, NULL) may occur. */
typedef struct prn_allocator {
    void *(*alloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} prn_allocator;

typedef enum prn_log_level {
    PRN_LOG_ERROR = 0, PRN_LOG_WARN = 1, PRN_LOG_INFO = 2, PRN_LOG_DEBUG = 3
} prn_log_level;

typedef void (*prn_log_fn)(void *user, prn_log_level level, const char *message);

/* Zero-initialise and set what you need: a zeroed config is valid.
 *   backend      name of the backend; NULL: $PARRNN_BACKEND, else "reference".
 *   backends     extra backends (user-written) searched by name before the
 *                built-in ones; num_backends entries.
 *   allocator    host allocations of this context and the reference
 *                backend's buffers. The reference backend keeps freed
 *                buffers of 64 KiB and more (at most 32) for reuse by an
 *                allocation of the same size, as a training loop repeats
 *                them: it holds at most the larger of 512 MiB and the peak
 *                of its live buffers' bytes (so at most about twice what the
 *                computation needed at once), returns them to the allocator
 *                before an allocation would fail, and frees them in
 *                prn_context_free. Every buffer still comes from the
 *                allocator once.
 *   seed         seed of the counter-based random generator.
 *   num_threads  upper bound on threads per call (0: backend default).
 *   log          receives errors (as they are set) and diagnostics; NULL: silent.
 */
typedef struct prn_config {
    const char *backend;
    const prn_backend *const *backends;
    int num_backends;
    prn_allocator allocator;
    uint64_t seed;
    int num_threads;
    prn_log_fn log;
    void *log_user;
    /* Which device the backend runs on, read by its create: for "opencl"
     * "P:D" (platform and device index) or part of the device's name, for
     * "cuda" a device index. NULL or "" falls back to the backend's
     * environment variable (PARRNN_OPENCL_DEVICE, PARRNN_CUDA_DEVICE), then
     * to its first device. The reference backends ignore it. */
    const char *device;
    /* [0: PRN_DEFAULT_MAX_FILE_BYTES, 1 GiB] The most bytes a loader
     * (prn_rnn_load, prn_pwl_load) reads from one file or stream: a longer
     * one fails with PRN_ERR_FORMAT after that many, so a stream without
     * end (/dev/zero, a pipe) cannot take all memory. */
    size_t max_file_bytes;
} prn_config;
#define PRN_DEFAULT_MAX_FILE_BYTES ((size_t)1 << 30)

/* Creates a context. config may be NULL (all defaults). On failure *out is
 * untouched; if err_buf is not NULL it receives the message (err_size bytes). */
PRNDEF prn_status prn_context_create(const prn_config *config, prn_context **out,
                                     char *err_buf, size_t err_size);
/* Frees the context, its tape and every tensor still alive on it. NULL is ok. */
PRNDEF void prn_context_free(prn_context *ctx);

PRNDEF const char *prn_context_backend_name(const prn_context *ctx);
PRNDEF prn_status prn_last_status(const prn_context *ctx);
/* The message of the last failure ("" when none). Valid until the next call. */
PRNDEF const char *prn_last_error(const prn_context *ctx);
PRNDEF void prn_clear_error(prn_context *ctx);
/* Sets the context's status and message (printf format) and logs it.
 * For backends and custom ops; returns status. */
PRNDEF prn_status prn_set_error(prn_context *ctx, prn_status status, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Number of tensors alive on the context (for leak checks). */
PRNDEF size_t prn_live_tensors(const prn_context *ctx);

/* Built-in backends and the ones in config, by name. Returns the number of
 * names; writes up to max of them into names (which may be NULL). */
PRNDEF int prn_backend_list(const prn_config *config, const char **names, int max);
/* For a backend's create: config->device of the prn_context_create call
 * being served (NULL when none; NULL once create has returned). */
PRNDEF const char *prn_context_device(const prn_context *ctx);
/* Reseeds the random generator: the counter restarts at 0. */
PRNDEF void prn_seed(prn_context *ctx, uint64_t seed);

/* ------------------------------------------------------------------------
 * Tensors: f32/f64 (I32 for indices), 0 to 4 dimensions, contiguous,
 * row-major, stored in the backend's memory.
 * ---------------------------------------------------------------------- */
/* New tensor filled with zeros. ndim 0 is a scalar (shape may be NULL). */
PRNDEF prn_status prn_tensor_create(prn_context *ctx, prn_dtype dtype, int ndim,
                                    const size_t *shape, prn_tensor **out);
/* New tensor with every element = value. */
PRNDEF prn_status prn_tensor_full(prn_context *ctx, prn_dtype dtype, int ndim,
                                  const size_t *shape, double value, prn_tensor **out);
/* New tensor holding numel elements copied from host memory of its dtype. */
PRNDEF prn_status prn_tensor_from_host(prn_context *ctx, prn_dtype dtype, int ndim,
                                       const size_t *shape, const void *data,
                                       prn_tensor **out);
/* Random tensors from the context's counter-based generator: element i of
 * the k-th draw depends only on (seed, counter, i), identically on every
 * backend. Each call advances the counter by numel. lo <= hi, mean and
 * stddev >= 0 must be finite, and so must hi - lo. */
PRNDEF prn_status prn_tensor_uniform(prn_context *ctx, prn_dtype dtype, int ndim,
                                     const size_t *shape, double lo, double hi,
                                     prn_tensor **out);
PRNDEF prn_status prn_tensor_normal(prn_context *ctx, prn_dtype dtype, int ndim,
                                    const size_t *shape, double mean, double stddev,
                                    prn_tensor **out);
/* Drops the caller's reference. NULL is ok. */
PRNDEF void prn_tensor_free(prn_tensor *t);
/* Takes another reference (to be dropped with prn_tensor_free). */
PRNDEF prn_tensor *prn_tensor_retain(prn_tensor *t);

/* Host <-> backend copies. count must equal the tensor's numel. Upload
 * and fill write in place: a record that saved t before no longer backwards
 * (prn_backward fails, naming it); record the forward after the write. */
PRNDEF prn_status prn_tensor_upload(prn_tensor *t, const void *src, size_t count);
PRNDEF prn_status prn_tensor_download(const prn_tensor *t, void *dst, size_t count);
/* Reads element 0 (scalar loss etc.) as a double. */
PRNDEF prn_status prn_tensor_item(const prn_tensor *t, double *value);
/* Fills in place (no gradient recorded). */
PRNDEF prn_status prn_tensor_fill(prn_tensor *t, double value);

PRNDEF prn_dtype prn_tensor_dtype(const prn_tensor *t);
PRNDEF int prn_tensor_ndim(const prn_tensor *t);
/* Size of axis i (negative counts from the end); 0 when out of range. */
PRNDEF size_t prn_tensor_dim(const prn_tensor *t, int axis);
PRNDEF size_t prn_tensor_numel(const prn_tensor *t);
PRNDEF prn_context *prn_tensor_context(const prn_tensor *t);
/* Backend buffer handle (a host pointer for the reference backend). */
PRNDEF void *prn_tensor_buffer(const prn_tensor *t);

/* ------------------------------------------------------------------------
 * Autodiff
 * ---------------------------------------------------------------------- */
/* Marks a leaf tensor as a parameter whose gradient backward computes. */
PRNDEF prn_status prn_tensor_set_requires_grad(prn_tensor *t, int requires_grad);
PRNDEF int prn_tensor_requires_grad(const prn_tensor *t);
/* The accumulated gradient, or NULL. Owned by t: do not free. */
PRNDEF prn_tensor *prn_tensor_grad(const prn_tensor *t);
/* Drops the gradient (the next backward starts from zero). */
PRNDEF void prn_tensor_zero_grad(prn_tensor *t);
/* Replaces t's gradient by a copy of g (t's shape and dtype, same context;
 * no gradient recorded); e.g. after summing gradients across processes. */
PRNDEF prn_status prn_tensor_set_grad(prn_tensor *t, prn_tensor *g);

/* Reverse pass from a tensor with one element. Runs the records that loss
 * depends on and adds the gradients to the .grad of every leaf that
 * requires grad: contributions accumulate over tensors used more than once
 * and over calls (two losses recorded, a prn_backward on each: .grad holds
 * the sum). Then it releases the records it ran, and every record whose
 * output is held by the tape alone (nobody can start a backward from it);
 * other records stay on the tape for their own prn_backward. A record runs
 * at most once: a later prn_backward through it (again on the same loss, or
 * on another loss sharing part of the graph) fails, unless the first pass
 * was prn_backward_retain. A loss that is itself a leaf requiring grad gets
 * .grad += 1. To carry a tensor into the next forward without its history
 * (a state in truncated backpropagation through time), copy it with
 * recording off (prn_no_grad_begin, prn_copy, prn_no_grad_end): the copy
 * is a leaf.
 *
 * Fails with PRN_ERR_STATE, before any backward function runs, when
 *   - loss, or a tensor it depends on, is the output of an op whose record
 *     is no longer on the tape (released by an earlier prn_backward, or by
 *     prn_tape_clear): there is nothing to differentiate;
 *   - a tensor that a reached record saved (any input or its output) was
 *     written after the op was recorded: every write into a tensor's data
 *     through the API (prn_tensor_upload, prn_tensor_fill, prn_optim_step,
 *     prn_clip_grad_norm, a backward adding into a .grad) bumps a version
 *     kept per storage (views share it), and the record kept the versions
 *     it saw. Writes through prn_tensor_buffer are not seen.
 * The message names the op and the input. On failure no gradient has
 * changed and the tape is kept as it was (but for a backend that fails
 * while the gradients are added into the .grad tensors, the last step). */
#ifndef PARRNN_NO_TRAINING
PRNDEF prn_status prn_backward(prn_context *ctx, prn_tensor *loss);
#endif
/* prn_backward that keeps the records it ran, so that a later prn_backward
 * (on the same loss, or on another one sharing part of the graph) can run
 * them again; the last pass over them should be a plain prn_backward. */
#ifndef PARRNN_NO_TRAINING
PRNDEF prn_status prn_backward_retain(prn_context *ctx, prn_tensor *loss);
#endif
/* Forgets everything recorded (e.g. after an evaluation pass with recording
 * on). A later prn_backward on an output recorded before fails. */
PRNDEF void prn_tape_clear(prn_context *ctx);
/* Number of records on the tape. */
PRNDEF size_t prn_tape_size(const prn_context *ctx);
/* No-grad regions nest: ops between begin and end record nothing. */
PRNDEF void prn_no_grad_begin(prn_context *ctx);
PRNDEF void prn_no_grad_end(prn_context *ctx);
PRNDEF int prn_grad_enabled(const prn_context *ctx);

/* Custom ops. Compute the forward with any prn_ functions (wrapped in a
 * no-grad region, or on tensors that need no grad), then record it:
 *
 *   prn_tape_record(ctx, "my_op", inputs, n, output, my_backward, user, free_user);
 *
 * During prn_backward, my_backward receives the output's gradient and fills
 * grad_inputs[i] with a tensor shaped like inputs[i] (or leaves it NULL
 * when that input gets no gradient, or when op->needs_grad[i] is 0): a new
 * tensor, whose reference the engine takes over, or, as it is, its
 * grad_output or one of op->inputs / op->output (an identity op passes
 * grad_output through): the engine takes its own reference to those. Any
 * other existing tensor must be handed over with prn_tensor_retain. The
 * same tensor may fill several slots. It runs
 * with gradient recording off (nothing it does is recorded), may use every
 * prn_ function but prn_backward, prn_backward_retain and prn_tape_clear
 * (they fail with PRN_ERR_STATE there, as does recording after
 * prn_no_grad_end), must not write into op's tensors, and returns
 * a status (setting a message with prn_set_error on failure). The engine
 * accumulates and frees what it returns. Built-in ops use this same path.
 *
 * If no input requires grad (or recording is off) nothing is recorded and
 * free_user(user) is called at once. On success the tape owns user and frees
 * it with free_user when the record is dropped. On failure user stays yours. */
#define PRN_MAX_OP_INPUTS 6
typedef struct prn_op {
    const char *name;
    prn_tensor *const *inputs;
    int num_inputs;
    const int *needs_grad;   /* per input: does anyone want its gradient */
    prn_tensor *output;
    void *user;              /* custom ops' data */
    const double *f;         /* built-in ops' saved scalars */
    const int *i;            /* built-in ops' saved integers */
} prn_op;
typedef prn_status (*prn_backward_fn)(prn_context *ctx, const prn_op *op,
                                      prn_tensor *grad_output,
                                      prn_tensor **grad_inputs);
#ifndef PARRNN_NO_TRAINING
PRNDEF prn_status prn_tape_record(prn_context *ctx, const char *name,
                                  prn_tensor *const *inputs, int num_inputs,
                                  prn_tensor *output, prn_backward_fn backward,
                                  void *user, void (*free_user)(void *user));
#endif

/* ------------------------------------------------------------------------
 * Ops. Each returns a new tensor through out and records its backward on
 * the tape when an input requires grad. Binary ops broadcast numpy-style
 * (shapes aligned at the right, size-1 axes stretch). Axes may be negative.
 * ---------------------------------------------------------------------- */
PRNDEF prn_status prn_add(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
PRNDEF prn_status prn_sub(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
PRNDEF prn_status prn_mul(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
PRNDEF prn_status prn_div(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
/* a^b elementwise (a > 0 where b is not an integer). */
PRNDEF prn_status prn_pow(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
PRNDEF prn_status prn_pow_scalar(prn_context *ctx, prn_tensor *x, double p, prn_tensor **out);
/* alpha x; alpha must be finite (Inf would turn 0 into NaN). */
PRNDEF prn_status prn_scale(prn_context *ctx, prn_tensor *x, double alpha, prn_tensor **out);
PRNDEF prn_status prn_add_scalar(prn_context *ctx, prn_tensor *x, double c, prn_tensor **out);
PRNDEF prn_status prn_neg(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_exp(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_log(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_relu(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_sigmoid(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_tanh(prn_context *ctx, prn_tensor *x, prn_tensor **out);
PRNDEF prn_status prn_copy(prn_context *ctx, prn_tensor *x, prn_tensor **out);
/* Materialises x broadcast to shape. */
PRNDEF prn_status prn_broadcast(prn_context *ctx, prn_tensor *x, int ndim,
                                const size_t *shape, prn_tensor **out);
/* Same data, new shape with the same numel. */
PRNDEF prn_status prn_reshape(prn_context *ctx, prn_tensor *x, int ndim,
                              const size_t *shape, prn_tensor **out);
/* Swaps two axes (materialised, contiguous result). */
PRNDEF prn_status prn_transpose(prn_context *ctx, prn_tensor *x, int axis0, int axis1,
                                prn_tensor **out);
/* Matrix product over the last two axes: a [..., M, K] x b [..., K, N].
 * Leading (batch) axes must be equal (aligned at the right), or one operand
 * a single matrix (no batch axes, or all of size 1), which is then used for
 * every matrix of the other; 1-D operands are not promoted. */
PRNDEF prn_status prn_matmul(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out);
/* As prn_matmul with op(a) = a^T over its last two axes when trans_a, etc. */
PRNDEF prn_status prn_matmul_ex(prn_context *ctx, prn_tensor *a, int trans_a,
                                prn_tensor *b, int trans_b, prn_tensor **out);
/* Reductions along axis (or PRN_ALL_AXES); keepdim keeps it with size 1.
 * prn_max and prn_mean of an empty axis have no value: PRN_ERR_SHAPE
 * (prn_sum gives 0). */
PRNDEF prn_status prn_sum(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out);
PRNDEF prn_status prn_mean(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out);
/* Gradient goes to the maximal elements (split evenly between ties). NaNs
 * are skipped (an axis of NaNs gives -inf). */
PRNDEF prn_status prn_max(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out);
/* Index of the first maximum along axis, as a PRN_I32 tensor (no gradient). */
PRNDEF prn_status prn_argmax(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out);
PRNDEF prn_status prn_softmax(prn_context *ctx, prn_tensor *x, int axis, prn_tensor **out);
PRNDEF prn_status prn_log_softmax(prn_context *ctx, prn_tensor *x, int axis, prn_tensor **out);
/* Mean over rows of -sum_c target[., c] * log_softmax(logits)[., c], with
 * classes on the last axis; target holds probabilities (e.g. one-hot) of
 * the logits' shape. Returns a scalar. */
PRNDEF prn_status prn_cross_entropy(prn_context *ctx, prn_tensor *logits, prn_tensor *target,
                                    prn_tensor **out);
/* Mean of (pred - target)^2 over all elements (target broadcasts). Scalar.
 * Empty: PRN_ERR_SHAPE. */
PRNDEF prn_status prn_mse(prn_context *ctx, prn_tensor *pred, prn_tensor *target, prn_tensor **out);

/* Elements start .. start+len-1 along axis (copied). */
PRNDEF prn_status prn_slice(prn_context *ctx, prn_tensor *x, int axis, size_t start, size_t len,
                            prn_tensor **out);
/* a followed by b along axis (copied): same dtype and ndim, equal sizes on
 * every other axis; either may be empty along axis. The inverse of two
 * prn_slice calls; the gradient is split back the same way. */
PRNDEF prn_status prn_concat(prn_context *ctx, prn_tensor *a, prn_tensor *b, int axis, prn_tensor **out);

/* ------------------------------------------------------------------------
 * Scans of linear recurrences, differentiable in a, b and h0
 *
 *   forward:  h[:, t] = a[:, t] * h[:, t-1] + b[:, t]   for t = 0 .. T-1, h[:, -1] = h0
 *   reverse:  h[:, t] = a[:, t] * h[:, t+1] + b[:, t]   for t = T-1 .. 0, h[:, T]  = h0
 *
 * b and h are [batch, T, C], or [T, C] for one sequence; h0 is [batch, C]
 * ([C]) or NULL for zeros. The final state is h[:, T-1] (h[:, 0] when
 * reverse): take it with prn_slice. Any T >= 1.
 *
 * The reference backend evaluates with algo (PRN_SCAN_AUTO: it chooses):
 * SEQUENTIAL walks time once, threads over sequences (and, for fewer
 * sequences than threads, over shares of the channels), vectorised across
 * channels -- one channel takes 4 (SSE2) or 8 (AVX2) steps per register;
 * CHUNKED cuts time into chunks of a core's cache size, reduces each to one
 * affine map, chains the maps' carries and expands each chunk from its
 * carry, threads over chunks, with the memory traffic of one pass; TREE is
 * the Blelloch up-sweep/down-sweep tree, for teaching
 * (examples/scan_explain.c). AUTO, diagonal: CHUNKED when there are fewer
 * sequences than threads, T >= 4096, T * C >= 32768 and a 512 KiB chunk of
 * a and b holds at least 4 rows per thread (C <= 16384 / threads in f32);
 * SEQUENTIAL otherwise. Block scans: SEQUENTIAL. Every choice computes
 * the same recurrence; results agree up to rounding, and depend on the
 * thread count only through CHUNKED's chunk boundaries. f32 data
 * accumulates in f32 (README: how the error grows with T).
 * Backward is the adjoint recurrence run the other way in time with A^T.
 * ---------------------------------------------------------------------- */
/* How a backend evaluates a linear-recurrence scan. Every choice computes
 * the same recurrence; they differ in order of operations (rounding) and
 * speed. Backends other than the reference may treat every value as AUTO. */
typedef enum prn_scan_algo {
    PRN_SCAN_AUTO = 0,     /* the backend chooses (reference: see prn_scan_diag) */
    PRN_SCAN_SEQUENTIAL,   /* one pass in time, parallel over batch and channels */
    PRN_SCAN_CHUNKED,      /* three phases: reduce chunks, scan carries, expand  */
    PRN_SCAN_TREE,         /* Blelloch up-sweep/down-sweep tree (for teaching)   */
    PRN_SCAN_ALGO_COUNT
} prn_scan_algo;
/* Diagonal: a has b's shape (elementwise decays). */
PRNDEF prn_status prn_scan_diag(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor *h0, int reverse,
                                prn_scan_algo algo, prn_tensor **out);
/* Block-diagonal: a is [batch, T, C, k] ([T, C, k]): rows j*k .. j*k+k-1 of
 * a[:, t] are the k x k matrix of channel block j, 1 <= k <= 64, k divides
 * C. Dense: k = C. */
PRNDEF prn_status prn_scan_block(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor *h0, int reverse,
                                 prn_scan_algo algo, prn_tensor **out);

/* ------------------------------------------------------------------------
 * Linear-recurrence RNN cells
 *
 * Recurrent layers whose state depends linearly on its previous value, so
 * that a whole sequence costs a few large matrix products (every time step
 * at once) and one or two prn_scan_diag calls instead of T small steps.
 * They are compositions of the ops above (no backend primitive of their
 * own), recorded on the tape like any op: the parameters require grad, and
 * prn_backward fills their gradients, x's and state0's.
 *
 * Shapes. x is [batch, T, input_size], or [T, input_size] for one sequence,
 * T >= 1; the output h is [batch, T, hidden_size] ([T, hidden_size]). The
 * state is what a sequence hands on to its continuation: state0 is
 * [batch, state_size] ([state_size]) or NULL for zeros, and the final state
 * (optional output) has the same shape, so that running x[:, :k] and then
 * x[:, k:] from the first part's final state gives the h of one call on x.
 *
 * Notation, per time step t: x_t is a row of x; s() the logistic sigmoid;
 * products of vectors are elementwise. Each cell has an input matrix W
 * ([rows, n * hidden]) whose column blocks of hidden_size are the gates in
 * the order listed, and a bias b; "x W_f" means x_t times the f block of W.
 * H = hidden_size, I = input_size.
 *
 *   minGRU (Feng et al. 2024, "Were RNNs all we needed?"; not the log-space
 *   form). W [I, 2H] = (z | h~), b [2H]. State: h (H).
 *       z_t = s(x W_z + b_z)    h~_t = x W_h + b_h
 *       h_t = (1 - z_t) h_{t-1} + z_t h~_t
 *   minLSTM (same paper). W [I, 3H] = (f | i | h~), b [3H]. State: h (H).
 *       f_t = s(x W_f + b_f)    i_t = s(x W_i + b_i)    h~_t = x W_h + b_h
 *       h_t = f_t / (f_t + i_t) h_{t-1} + i_t / (f_t + i_t) h~_t
 *   QRNN (Bradbury et al. 2017), fo-pooling, filter width 1 or 2.
 *   W [width I, 3H] = (z | f | o), b [3H]; with width 2 the first I rows
 *   multiply x_{t-1} and the last I rows x_t (x_{-1} comes from the state,
 *   zero without one). State: c (H), then x_{T-1} (I) when width is 2.
 *       z_t = tanh(x W_z + b_z)   f_t = s(x W_f + b_f)   o_t = s(x W_o + b_o)
 *       c_t = f_t c_{t-1} + (1 - f_t) z_t        h_t = o_t c_t
 *   SRU (Lei et al. 2018), without the v * c_{t-1} terms inside f and r (they
 *   would make the recurrence nonlinear; this is the form scanned by Martin
 *   & Cundy, with identity output activation). W [I, 3H] = (x~ | f | r)
 *   when I == H; otherwise [I, 4H] = (x~ | f | r | p), p projecting x_t to
 *   H for the highway term. b [2H] = (f | r). State: c (H).
 *       x~_t = x W~   f_t = s(x W_f + b_f)   r_t = s(x W_r + b_r)
 *       x'_t = x_t (I == H) or x W_p
 *       c_t = f_t c_{t-1} + (1 - f_t) x~_t      h_t = r_t c_t + (1 - r_t) x'_t
 *   GILR-LSTM (Martin & Cundy 2018): an LSTM whose gates read a gated
 *   impulse linear recurrence h~ in place of h_{t-1}. W [I, 6H] =
 *   (g | j | f | i | o | z), U [H, 4H] = (f | i | o | z), b [6H].
 *   State: h~ (H), then c (H).
 *       g_t = s(x W_g + b_g)    j_t = tanh(x W_j + b_j)
 *       h~_t = g_t h~_{t-1} + (1 - g_t) j_t                  (first scan)
 *       f_t, i_t, o_t = s(x W_k + h~_{t-1} U_k + b_k)   for k = f, i, o
 *       z_t = tanh(x W_z + h~_{t-1} U_z + b_z)
 *       c_t = f_t c_{t-1} + i_t z_t                          (second scan)
 *       h_t = o_t c_t
 *
 * Initialisation, from the context's generator (prn_seed): W uniform in
 * +-1/sqrt(rows of W), U uniform in +-1/sqrt(H), biases 0. Overwrite them
 * with prn_tensor_upload for another scheme (e.g. a forget-gate bias).
 */
typedef struct prn_cell prn_cell;

/* Create a cell of f32 or f64 parameters; input_size and hidden_size >= 1.
 * Free it with prn_cell_free before its context. */
PRNDEF prn_status prn_mingru_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                    prn_cell **out);
PRNDEF prn_status prn_minlstm_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                     prn_cell **out);
/* width: the filter width, 1 or 2. */
PRNDEF prn_status prn_qrnn_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                  int width, prn_cell **out);
PRNDEF prn_status prn_sru_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                 prn_cell **out);
PRNDEF prn_status prn_gilr_lstm_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                       prn_cell **out);
/* Drops the cell's references to its parameters (an optimiser keeps its
 * own). NULL is ok. */
PRNDEF void prn_cell_free(prn_cell *cell);

/* Runs the cell over x, all time steps at once: matrix products over
 * [batch * T] rows, the recurrences by prn_scan_diag. Writes h and, when
 * state is not NULL, the final state. state0 may be NULL (zeros). */
PRNDEF prn_status prn_cell_forward(prn_context *ctx, const prn_cell *cell, prn_tensor *x, prn_tensor *state0,
                                   prn_tensor **h, prn_tensor **state);
/* The same cell evaluated step by step with ordinary ops (a slice of x,
 * the step's matrix product and elementwise update, per t; h assembled by
 * prn_concat): the reference for prn_cell_forward, and the form for
 * stepping one input at a time (T = 1 with the previous state). */
PRNDEF prn_status prn_cell_forward_sequential(prn_context *ctx, const prn_cell *cell, prn_tensor *x,
                                              prn_tensor *state0, prn_tensor **h, prn_tensor **state);
/* The scan algorithm prn_cell_forward passes to prn_scan_diag (default
 * PRN_SCAN_AUTO). */
PRNDEF prn_status prn_cell_set_scan_algo(prn_cell *cell, prn_scan_algo algo);

/* The parameter tensors, e.g. for prn_optim_adam_create: returns how many there
 * are and writes the first max of them to params (which may be NULL).
 * They are owned by the cell (take a reference to keep one longer). */
PRNDEF int prn_cell_params(const prn_cell *cell, prn_tensor **params, int max);
/* "W", "U" or "b" for parameter index (order of prn_cell_params); NULL
 * when out of range. */
PRNDEF const char *prn_cell_param_name(const prn_cell *cell, int index);
/* "mingru", "minlstm", "qrnn", "sru" or "gilr_lstm" ("" for NULL). */
PRNDEF const char *prn_cell_name(const prn_cell *cell);
PRNDEF size_t prn_cell_input_size(const prn_cell *cell);
PRNDEF size_t prn_cell_hidden_size(const prn_cell *cell);
/* Features of state0 and of the final state (see each cell above). */
PRNDEF size_t prn_cell_state_size(const prn_cell *cell);

/* ------------------------------------------------------------------------
 * Recurrent networks: Elman, LSTM, GRU, multi-head GRU and the PLRNN family
 *
 * A prn_rnn is a stack of num_layers recurrent layers (each run in both
 * directions when bidirectional, the two outputs concatenated for the next
 * layer), optionally followed by a linear readout. Its parameters are
 * tensors that require grad; prn_rnn_forward records on the tape, so
 * prn_backward gives backpropagation through time. Each layer's recurrence
 * is one recorded op whose backward walks time in reverse with the saved
 * gate values; the input projections of all steps are one matrix product.
 * The gates of an Elman, LSTM or (multi-head) GRU step run as one backend
 * call where the backend has rnn_gates_forward/_backward (reference,
 * OpenCL, CUDA), else as a composition of elementwise ops; a one-head
 * layer's whole recurrence is one call where the backend also has
 * rnn_layer_forward/_backward (reference, CUDA). A forward that records
 * nothing (no gradient asked for) of such a layer with input_size > 0 takes
 * the input projection into that call too where the backend has
 * rnn_layer_forward_x (reference): the projections are computed a few
 * steps at a time next to the recurrence and never stored for the whole
 * sequence; with rnn_layer_forward_y (reference) the call writes y and the
 * last state alone, so that an LSTM's cell states never go to memory and
 * its y is not copied out of the states. So does a recorded ELMAN or LSTM
 * layer where the backend also
 * has rnn_layer_backward_x (reference): the projection and the recurrence
 * are then one recorded op, whose backward sums the gradients of W_ih and
 * b_ih inside the layer's backward pass (the projections' gradients are
 * stored only when x needs its own). A recorded LSTM whose final state the
 * caller does not take (state NULL) goes through rnn_layer_forward_yc and
 * rnn_layer_backward_yc where the backend has them (reference): the op
 * gives y itself, keeps the cell states apart for the backward, and that
 * backward takes d loss / d y as it is, with no copy of y out of the
 * states nor a zero gradient of the states to copy d loss / d y into.
 *
 * Per step t, with x_t the layer's input, s_t its state, s() the logistic
 * sigmoid, products of vectors elementwise, "W x" a matrix-vector product:
 *
 *   ELMAN (nn.RNN):  h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)
 *                    (relu instead of tanh with config.relu). State: h.
 *   LSTM (nn.LSTM):  gates i | f | g | o in that order of rows:
 *                    i,f,o = s(.), g = tanh(.) of W_ih x + b_ih + W_hh h + b_hh
 *                    c_t = f c_{t-1} + i g     h_t = o tanh(c_t)
 *                    State: h then c (2H features); the layer outputs h.
 *   GRU (nn.GRU):    gates r | z | n:
 *                    r = s(W_ir x + b_ir + W_hr h + b_hr)   z likewise
 *                    n = tanh(W_in x + b_in + r (W_hn h + b_hn))
 *                    h_t = (1 - z) n + z h_{t-1}.            State: h.
 *   MHGRU:           num_heads independent GRUs of hidden size k = H / heads
 *                    reading the same input, outputs concatenated; weight_ih
 *                    [heads * 3k, I] and the biases [heads * 3k] are grouped by
 *                    head (head j is rows j*3k .. j*3k+3k-1, gates r | z | n
 *                    inside), weight_hh is [heads, 3k, k]. Head j is exactly
 *                    an nn.GRU(I, k) with those rows. Its step Jacobian is
 *                    block-diagonal (blocks of k): the form DEER evaluates fast.
 *   PLRNN:           z_t = A z_{t-1} + W relu(z_{t-1}) + h + C x_t
 *                    A [M] diagonal, W [M, M], h [M], C [M, I] (absent when
 *                    I = 0: an autonomous system). State: z (M = hidden_size).
 *   SHPLRNN:         z_t = A z + W1 relu(W2 z + h2) + h1 + C x_t
 *                    W1 [M, L], W2 [L, M], h1 [M], h2 [L], L = shallow_size.
 *   CLIPPED_SHPLRNN: z_t = A z + W1 (relu(W2 z + h2) - relu(W2 z)) + h1 + C x_t
 *   ALRNN:           z_t = A z + W phi(z) + h + C x_t, phi the identity on the
 *                    first M - P units and relu on the last P = num_relu.
 *
 * The Elman, LSTM and GRU layouts, gate orders and names are PyTorch's
 * (weight_ih_l0 [G*H, I], weight_hh_l0 [G*H, H], bias_ih_l0, bias_hh_l0,
 * "_reverse" for the second direction; G = 1, 4, 3), so weights copy
 * across in both directions. The PLRNN family's parameters are named A_l0,
 * W_l0 (W1_l0, W2_l0), h_l0 (h1_l0, h2_l0), C_l0. The readout is
 * readout_weight [O, D*H] and readout_bias [O]: o_t = readout_bias +
 * readout_weight y_t, for softmax outputs as in classic RNN inference.
 *
 * Initialisation from the context's generator (prn_seed), as PyTorch does
 * it for the PyTorch kinds and the readout: uniform in +-1/sqrt(H) (readout:
 * +-1/sqrt(D*H)). PLRNN family: A uniform in [0.5, 0.9], W (W1) uniform in
 * +-0.5/sqrt(M) (+-0.5/sqrt(L)), W2 and C uniform in +-1/sqrt(columns), h2
 * uniform in [-1, 1] (the clipped form is zero when h2 is), h, h1 zero.
 * ---------------------------------------------------------------------- */
typedef struct prn_rnn prn_rnn;

typedef enum prn_rnn_kind {
    PRN_RNN_ELMAN = 0,
    PRN_RNN_LSTM,
    PRN_RNN_GRU,
    PRN_RNN_MHGRU,
    PRN_RNN_PLRNN,
    PRN_RNN_SHPLRNN,
    PRN_RNN_CLIPPED_SHPLRNN,
    PRN_RNN_ALRNN,
    PRN_RNN_KIND_COUNT
} prn_rnn_kind;

/* Zero-initialise, then set what you need. */
typedef struct prn_rnn_config {
    prn_rnn_kind kind;
    prn_dtype dtype;          /* PRN_F32 (the zero value) or PRN_F64            */
    size_t input_size;        /* I; 0 is allowed for the PLRNN family only      */
    size_t hidden_size;       /* H (PLRNN family: M, the latent dimension) >= 1 */
    int num_layers;           /* 0 means 1                                       */
    int bidirectional;        /* D = 2 directions when set                       */
    int relu;                 /* ELMAN: relu instead of tanh                     */
    size_t num_heads;         /* MHGRU: heads, dividing H (0 means 1)            */
    size_t shallow_size;      /* SHPLRNN, CLIPPED_SHPLRNN: L >= 1               */
    size_t num_relu;          /* ALRNN: P, 0 .. M                                */
    size_t output_size;       /* O > 0 adds the readout                          */
} prn_rnn_config;

PRNDEF prn_status prn_rnn_create(prn_context *ctx, const prn_rnn_config *config, prn_rnn **out);
/* Drops the network's references to its parameters. NULL is ok. */
PRNDEF void prn_rnn_free(prn_rnn *rnn);
/* The configuration with defaults filled in (num_layers, num_heads >= 1). */
PRNDEF const prn_rnn_config *prn_rnn_get_config(const prn_rnn *rnn);
/* "elman", "lstm", "gru", "mhgru", "plrnn", "shplrnn", "clipped_shplrnn",
 * "alrnn" ("" for an unknown kind). */
PRNDEF const char *prn_rnn_kind_name(prn_rnn_kind kind);
/* Parameters in PyTorch's order (per layer, per direction: weight_ih,
 * weight_hh, bias_ih, bias_hh; then the readout), as prn_cell_params. */
PRNDEF int prn_rnn_params(const prn_rnn *rnn, prn_tensor **params, int max);
PRNDEF const char *prn_rnn_param_name(const prn_rnn *rnn, int index);
/* The parameter called name, or NULL. Owned by the network. */
PRNDEF prn_tensor *prn_rnn_param(const prn_rnn *rnn, const char *name);
/* S: features of one layer's state in one direction (LSTM 2H, else H). */
PRNDEF size_t prn_rnn_state_size(const prn_rnn *rnn);
/* Features of prn_rnn_forward's y: D * H. */
PRNDEF size_t prn_rnn_output_size(const prn_rnn *rnn);

/* Runs the network over x [B, T, I] (or [T, I]), T >= 1, step by step,
 * and writes y [B, T, D*H] ([T, D*H]): the last layer's outputs, both
 * directions concatenated (forward first). state0 is [L*D, B, S]
 * ([L*D, S]), layer-major then direction as PyTorch's h_0 (LSTM: h_0 and
 * c_0 side by side along the last axis), or NULL for zeros; state, when
 * not NULL, receives the final states in the same layout (the reverse
 * direction's final state is the one after reading x_0). Leave state NULL
 * when you do not need it: a recorded LSTM then gives y without making its
 * states [B, T, 2H] (rnn_layer_forward_yc; a training step about 5% faster).
 * NaN and Inf, the same in prn_rnn_forward, prn_rnn_step, prn_rnn_jacobian,
 * prn_deer_rnn and the frames: the parameters, x and the state must be
 * finite, else PRN_ERR_NONFINITE names the tensor ("parameter
 * 'weight_hh_l0'", "argument 'x'"); a result (y, and state when asked for)
 * that is not finite although they are (the recurrence overflows) also
 * gives PRN_ERR_NONFINITE. */
PRNDEF prn_status prn_rnn_forward(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state0,
                                  prn_tensor **y, prn_tensor **state);
/* The readout o = readout_bias + y readout_weight^T over the last axis of
 * y ([..., D*H] -> [..., O]); PRN_ERR_STATE without one. Logits: apply
 * prn_softmax or prn_cross_entropy. */
PRNDEF prn_status prn_rnn_readout(prn_context *ctx, const prn_rnn *rnn, prn_tensor *y, prn_tensor **out);

/* One step of a single-layer, one-direction network for N independent
 * rows: x [N, I] (NULL when I = 0), state [N, S] -> next [N, S]. Recorded
 * on the tape like prn_rnn_forward with T = 1 (which it equals). */
PRNDEF prn_status prn_rnn_step(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state,
                               prn_tensor **next);

/* How prn_rnn_jacobian returns d next / d state. */
typedef enum prn_jacobian_mode {
    PRN_JACOBIAN_DENSE = 0, /* [N, S, S]: row i holds d next_i / d state_j      */
    PRN_JACOBIAN_BLOCK,     /* [N, S, k]: the diagonal blocks of size k =
                             * prn_rnn_jacobian_block (MHGRU: H / heads; else S),
                             * stacked as prn_scan_block's a; exact only when the
                             * Jacobian is block-diagonal (MHGRU), else the
                             * dense one (k = S)                                 */
    PRN_JACOBIAN_DIAG       /* [N, S]: the diagonal (quasi-DEER)                */
} prn_jacobian_mode;
PRNDEF size_t prn_rnn_jacobian_block(const prn_rnn *rnn);
/* The step and its Jacobian with respect to the state, for N (state, x)
 * pairs at once (single-layer, one-direction networks), computed in closed
 * form by batched ops on the backend: next [N, S] and jac as mode says.
 * Not recorded on the tape. next may be NULL when only jac is wanted. */
PRNDEF prn_status prn_rnn_jacobian(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state,
                                   prn_jacobian_mode mode, prn_tensor **next, prn_tensor **jac);

/* ------------------------------------------------------------------------
 * Per-frame inference for engines
 *
 * prn_rnn_frame_create copies the parameters to host memory once (as
 * doubles: evaluation is in f64 whatever the model's dtype) and allocates
 * the state and a workspace; prn_rnn_frame_step then advances every layer
 * of a one-direction network by one step for a batch of B rows, on the
 * calling thread, with no allocation, no tape and no backend call: the
 * same inputs give the same outputs bit for bit, on every machine with
 * IEEE doubles. Memory (prn_rnn_frame_memory returns it exactly), in bytes:
 *     8 * (P + 2*L*B*S + B*(2*G*H + max(S, O) + max(Lsh, H))) + 56*L + ~140
 * with P the number of parameter values, G the gates (LSTM 4, GRU and
 * MHGRU 3, else 1), Lsh the shallow size, O the readout's outputs: the
 * parameters, the state and the next state (a step that fails leaves the
 * state as it was) and a workspace for the batch (each weight row is
 * applied to every row of the batch while it is in cache). Nothing else is
 * touched per step; the frame reads the network's configuration, so free
 * it before the network. After training, prn_rnn_frame_sync copies the
 * parameters again.
 * NaN and Inf, as in prn_rnn_forward: prn_rnn_frame_create and _sync
 * refuse non-finite parameters, _set_state a non-finite state and _step a
 * non-finite x (PRN_ERR_NONFINITE naming them); a step whose next state or
 * readout output overflows gives PRN_ERR_NONFINITE. On every failure the
 * frame's state and parameters and y are unchanged.
 * x and y are host arrays of doubles: x [B, I] (NULL when I = 0), y
 * [B, O] (the readout's output when the network has one) or [B, H] (the
 * last layer's output), or NULL. The state is [L, B, S] doubles.
 * ---------------------------------------------------------------------- */
typedef struct prn_rnn_frame prn_rnn_frame;
PRNDEF prn_status prn_rnn_frame_create(const prn_rnn *rnn, size_t batch, prn_rnn_frame **out);
PRNDEF void prn_rnn_frame_free(prn_rnn_frame *frame);
PRNDEF size_t prn_rnn_frame_memory(const prn_rnn_frame *frame);
PRNDEF prn_status prn_rnn_frame_sync(prn_rnn_frame *frame);
/* Zeroes the state; _row zeroes one row of the batch in every layer (a
 * respawned agent). */
PRNDEF void prn_rnn_frame_reset(prn_rnn_frame *frame);
PRNDEF prn_status prn_rnn_frame_reset_row(prn_rnn_frame *frame, size_t row);
PRNDEF prn_status prn_rnn_frame_set_state(prn_rnn_frame *frame, const double *state);
PRNDEF prn_status prn_rnn_frame_get_state(const prn_rnn_frame *frame, double *state);
PRNDEF prn_status prn_rnn_frame_step(prn_rnn_frame *frame, const double *x, double *y);

/* Per-frame inference in f32 (the engine path). The same network as
 * prn_rnn_frame, stepped in float with float inputs and outputs: x [B, I]
 * (NULL when I = 0), y [B, O] or [B, H] (or NULL), the state [L, B, S]
 * floats in prn_rnn_frame's layout. Elman (tanh, relu), GRU, MHGRU and LSTM
 * networks, one direction, any depth, with or without a readout; other
 * kinds give PRN_ERR_UNSUPPORTED (their double frames serve them). Creation
 * converts the parameters to float once and repacks each layer's weights as
 * one matrix of column blocks of 8 (16 with AVX-512); prn_rnn_framef_sync
 * does it again after training. Both refuse (PRN_ERR_NONFINITE) a parameter
 * that is NaN, Inf or beyond FLT_MAX, leaving the frame as it was.
 * prn_rnn_framef_step allocates nothing, makes no backend call and runs on
 * the calling thread, with AVX-512F, or AVX2 and FMA, when the processor
 * has them (prn_rnn_framef_path says "avx512", "avx2" or "portable"); a
 * value of x that is NaN or Inf makes it return PRN_ERR_NONFINITE with
 * nothing changed (state, y), as set_state does for such a state. Rows of
 * the batch are stepped up to four at a time, each weight block loaded once
 * for them (the AVX-512 path runs where Hp is a multiple of 16). Memory
 * (prn_rnn_framef_memory), in bytes, with Hp = H rounded up to 8, G the
 * gates (LSTM 4, GRU 3, Elman 1), N = G Hp, Op = O rounded up to 8 (16 on
 * the AVX-512 path; 0 without a readout):
 *     4 * (N * (I + H + (L-1) * 2H + 2L) + (H + 1) * Op + L*B*Hp*(2 for LSTM,
 *     else 1) + 8N + 4 Op) + 64 + sizeof(frame)
 *
 * Bits. The step's outputs and state are a function of the parameters'
 * float values, the state and x alone: the same bits from the AVX2 path and
 * the portable one (a processor without AVX2, PARRNN_NO_AVX2,
 * PARRNN_NO_INTRINSICS), at any optimisation level, with gcc or clang, with
 * or without -march=native or -ffp-contract=fast, on any processor where
 * float is IEEE binary32 evaluated in float (FLT_EVAL_METHOD 0, as on
 * x86-64 and AArch64) and fmaf is correctly rounded (C99 requires it). The
 * reason: each unit's two preactivations (the input's, the state's) are
 * each one chain of fused multiply-adds in a fixed order, every other
 * product that meets a sum is an explicit fused multiply-add too (so a
 * compiler finds nothing to contract), e^x is the header's own polynomial
 * (no libm call), and division is IEEE division. Not guaranteed
 * under -ffast-math, -Ofast, -ffp-model=fast or -freciprocal-math, which
 * license the compiler to reorder or approximate (tests/frame_bits.sh
 * builds tests/frame_bits.c in several ways and compares the bits). The
 * portable path calls fmaf, which is slow where the compiler cannot emit an
 * FMA instruction; the double frames' bits are a different function.
 * ---------------------------------------------------------------------- */
typedef struct prn_rnn_framef prn_rnn_framef;
PRNDEF prn_status prn_rnn_framef_create(const prn_rnn *rnn, size_t batch, prn_rnn_framef **out);
PRNDEF void prn_rnn_framef_free(prn_rnn_framef *frame);
PRNDEF size_t prn_rnn_framef_memory(const prn_rnn_framef *frame);
PRNDEF const char *prn_rnn_framef_path(const prn_rnn_framef *frame);
PRNDEF prn_status prn_rnn_framef_sync(prn_rnn_framef *frame);
PRNDEF void prn_rnn_framef_reset(prn_rnn_framef *frame);
PRNDEF prn_status prn_rnn_framef_reset_row(prn_rnn_framef *frame, size_t row);
PRNDEF prn_status prn_rnn_framef_set_state(prn_rnn_framef *frame, const float *state);
PRNDEF prn_status prn_rnn_framef_get_state(const prn_rnn_framef *frame, float *state);
PRNDEF prn_status prn_rnn_framef_step(prn_rnn_framef *frame, const float *x, float *y);

/* ------------------------------------------------------------------------
 * Model files
 *
 * prn_rnn_save writes a network's configuration and parameters; prn_rnn_load
 * creates the network again (in ctx, on any backend). The format, all
 * integers little-endian, values in the model's dtype (IEEE, little-endian):
 *     8 bytes   magic "PRNRNN\r\n"
 *     u32       format version (PRN_RNN_FILE_VERSION)
 *     u32 x 6   kind, dtype, num_layers, bidirectional, relu, parameter count
 *     u64 x 6   input_size, hidden_size, num_heads, shallow_size, num_relu,
 *               output_size
 *     per parameter, in prn_rnn_params order: u64 element count, then the
 *               values (its shape follows from the configuration)
 *     u32       CRC-32 (IEEE 802.3, as zlib's crc32) of every byte before it
 * prn_rnn_load checks the magic, the version, the configuration (as
 * prn_rnn_create does), the length the configuration implies, the
 * checksum and every count, and fails with PRN_ERR_FORMAT and a message
 * saying which check failed (or PRN_ERR_IO when the file cannot be read);
 * a NaN or Inf value gives PRN_ERR_NONFINITE naming the parameter. It
 * reads the header first and allocates nothing for the parameters before
 * the file is known to hold them, and reads at most
 * prn_config.max_file_bytes (default 1 GiB) of any file or stream. */
#define PRN_RNN_FILE_VERSION 1
PRNDEF prn_status prn_rnn_save(const prn_rnn *rnn, const char *path);
PRNDEF prn_status prn_rnn_load(prn_context *ctx, const char *path, prn_rnn **out);

/* ------------------------------------------------------------------------
 * DEER: parallel Newton evaluation of nonlinear recurrences
 *
 * A nonlinear recurrence y_t = f(y_{t-1}, x_t), t = 1..T, is the root of
 * g(y) = y_{1..T} - f(y_{0..T-1}, x_{1..T}). DEER (Lim et al., 2023) finds
 * it by Newton's method: with the Jacobians J_t = df/dy at the current
 * iterate y, every step solves the linear recurrence
 *     y'_t = J_t y'_{t-1} + (f(y_{t-1}, x_t) - J_t y_{t-1}),   y'_0 = h0
 * by one parallel scan (prn_scan_block; prn_scan_diag for diagonal J), so
 * a sequence costs a few batched evaluations of f and its Jacobians and a
 * few scans instead of T dependent steps. Exact Jacobians make the first
 * k steps exact after k iterations (at most T + 1 iterations; usually
 * fewer than 20 for trained or untrained contracting networks).
 *
 * Jacobian modes (prn_jacobian_mode, as prn_rnn_jacobian):
 *   DENSE  DEER: the full S x S Jacobian, dense scan; O(T S^2) memory and
 *          O(T S^3) work per iteration; S <= 64 (the block scan's limit).
 *   BLOCK  the cell's diagonal blocks (MHGRU: heads of H / num_heads; user
 *          cells: prn_deer_system.block); exact when the Jacobian is
 *          block-diagonal, the dense one for the other built-in cells.
 *   DIAG   quasi-DEER: only the diagonal, O(T S) memory and work. Not
 *          Newton any more (more iterations), but the fixed point is the
 *          same, so the result is too.
 *
 * Convergence: iteration stops when every element of the residual
 * y_t - f(y_{t-1}, x_t) satisfies |r| <= atol + rtol |f| (defaults by
 * dtype: f32 1e-5 and 1e-5, f64 1e-10 and 1e-10), or after max_iter
 * iterations. After each scan, NaNs are replaced by 0 and states clipped
 * to +-clip (PRN_UNARY_CLAMP), so one bad iterate cannot poison the next.
 * Not converged: by default the recurrence is then evaluated sequentially
 * (prn_deer_stats.fell_back), so the result is always the sequential one
 * up to the tolerance; with no_fallback the last iterate is returned and
 * stats.converged is 0.
 *
 * Stability: damping k in [0, 1] scales the Jacobians in the scan,
 * J -> (1 - k) J: k = 0 is Newton, k = 1 the Picard (Jacobi) iteration
 * y'_t = f(y_{t-1}, x_t), which is slow but always converges in T
 * iterations. With adaptive set, k works like a Levenberg-Marquardt trust
 * region against blow-ups: an iterate whose largest residual is more than
 * 10 times the last accepted one's (or not finite) is rejected, and the
 * step is taken again from the last accepted iterate with k moved halfway
 * to 1; each later success halves k again (not below the given damping).
 * This is the damped (scaled-Jacobian) variant of ELK, not its
 * Kalman-smoother solve; it guards against divergence, it does not make
 * converging iterations faster.
 *
 * Results and NaN: x and state0 must be finite (PRN_ERR_NONFINITE names
 * the argument otherwise; prn_deer_rnn also names a non-finite parameter,
 * as prn_rnn_forward does); a result that is not finite (the model itself
 * overflows, or a user system's parameters are NaN) also gives
 * PRN_ERR_NONFINITE, with stats filled in. A NaN is never returned.
 *
 * Gradients: when the tape is on and anything requires grad, the result
 * is recorded as one op whose backward solves the adjoint recurrence
 *     lam_t = g_t + J_{t+1}^T lam_{t+1}
 * at the solution with one reverse scan (exact Jacobians, whatever the
 * mode: DIAG recomputes them, O(T S^2) memory, and needs S <= 64 unless
 * the cell's Jacobian is block-diagonal; with fused iterations, below,
 * the Jacobians are made row by row in the reverse pass instead: no S
 * limit and no O(T S^2) memory), followed by one recorded,
 * batched step of f over all T x B rows, whose backward is the
 * vector-Jacobian product with respect to the parameters, x and h0. The
 * iterations themselves are not differentiated. Up to the tolerance this
 * equals backpropagation through time of the sequential evaluation.
 *
 * Fused iterations (prn_deer_rnn on a backend with deer_iterate and
 * deer_adjoint: the reference backend; the CUDA backend for cells of at
 * most 64 states (f64: 32), a thread per batch row and time segment,
 * larger ones composed as below): each iteration is one pass over
 * the rows that evaluates f and its Jacobian step by step, checks the
 * residual and solves the linear recurrence, without storing Jacobians;
 * the adjoint likewise. The results are those of the composed iterations
 * above up to rounding (and, with time segments, below, the inexact step's
 * thousandth of the tolerance; tests/test_conformance.c holds them to it), with
 * the same options, decisions and statistics. Memory of a call beyond its
 * input, projections and output: two trajectories [B, T, S] (three with
 * adaptive, one more with a warm start) and a scratch of a few steps per
 * thread, independent of T: O(B T S) where the composed iterations need
 * O(B T S k) (DENSE: k = S) plus about ten temporaries of B T S. With
 * gradients: ELMAN, LSTM, GRU and MHGRU record no step at all; their
 * backward is one fused pass (adjoint, d/d xp, d/d h0, and W_hh's and
 * b_hh's gradients summed in the pass when W_hh is small, at most 1024
 * values, else by a GEMM over the rows), in an order fixed by B and T; it
 * needs S + P values per row for its duration (P = G H; 2 S + 2 P with
 * the GEMM). The PLRNN family records one step of f
 * over all rows, which keeps its activations (about L or M values per
 * row). prn_deer and user systems take the composed path. With fewer
 * batch rows than the 8 SIMD lanes (B < 8, S <= 8, T >= 1024), an
 * iteration splits each row's time into segments (16 in all, each at
 * least 512 steps, a function of B and T only) that fill the lanes and the
 * threads: each segment is solved from a zero carry while its A_t are
 * multiplied, the carries are chained across segments, and the carry's
 * part, A_t ... A_1 carry, is added to each segment's start until it is
 * below a thousandth of the tolerance (an inexact Newton step: the part
 * left out only grows where J amplifies, and the next iteration's residual
 * still decides convergence; a segment clipped or not finite is solved
 * again in full). No Jacobian is stored; the call that finds convergence
 * skips the second pass (its iterate is not kept). This is what makes
 * DEER at B = 1 use the machine. Without adaptive damping the iterations
 * after the first go to the backend several a call (2, 4, .. 16, never
 * past max_iter; prn_deer_fused's iters), which stops at the first that
 * converges or is not finite: the same results and statistics as one a
 * call, and a device (CUDA) queues them without a host round trip each.
 *
 * Warm start: *warm, when warm is not NULL and *warm is, is the initial
 * guess (the trajectory of a previous call with the same shapes, e.g. the
 * last training step's); on success *warm is replaced by this call's
 * solution (the caller frees the last one). Without it the guess is h0
 * repeated over time.
 * ---------------------------------------------------------------------- */
/* Zero fields take the defaults in brackets. */
typedef struct prn_deer_options {
    prn_jacobian_mode mode; /* [PRN_JACOBIAN_DENSE]                            */
    int max_iter;           /* [100] Newton iterations (scans)                 */
    double atol, rtol;      /* [by dtype, see above] finite, >= 0              */
    double clip;            /* [1e8] states are clipped to +-clip              */
    double damping;         /* [0] k in [0, 1]: J -> (1 - k) J                 */
    int adaptive;           /* [0] trust region: adapt k as described above    */
    int no_fallback;        /* [0] 1: return the last iterate when not converged */
    prn_scan_algo algo;     /* [PRN_SCAN_AUTO] passed to the scans             */
    prn_tensor **warm;      /* [NULL] in: initial guess or NULL; out: solution */
} prn_deer_options;

typedef struct prn_deer_stats {
    int iterations;   /* Newton iterations (most over layers and directions) */
    int converged;    /* the residual test held (in every layer/direction)  */
    int fell_back;    /* a layer/direction was evaluated sequentially       */
    int nonfinite;    /* NaN or Inf met in an iterate (replaced) or result  */
    int rejected;     /* iterations the adaptive trust region rejected      */
    double residual;  /* largest |r| / (atol + rtol |f|) at the end (<= 1:
                       * converged; 0 after a fall-back)                    */
    double damping;   /* k at the end (largest over layers and directions)  */
} prn_deer_stats;

/* A user system (prn_deer): f as callbacks. x rows are [N, input_size] (a [N, 0]
 * tensor when input_size is 0), states [N, state_size], for N independent
 * rows (N = B * T: every time step at once). */
typedef struct prn_deer_system {
    size_t state_size;  /* S                                                 */
    size_t input_size;  /* X: features per step of x                         */
    size_t block;       /* k of BLOCK mode (its Jacobian is block-diagonal
                         * with k x k blocks); 0: S                          */
    /* next = f(state, x) [N, S] and d next / d state as mode says (DENSE
     * [N, S, S], BLOCK [N, S, k], DIAG [N, S]), as new tensors of the
     * state's dtype. Called with the tape off. */
    prn_status (*jacobian)(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state,
                           prn_jacobian_mode mode, prn_tensor **next, prn_tensor **jac);
    /* next = f(state, x), recorded on the tape (its parameters require
     * grad); NULL when no gradients are wanted. */
    prn_status (*step)(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state, prn_tensor **next);
    void *user;
} prn_deer_system;

/* The trajectory y [B, T, S] of cell from state0 [B, S] (NULL: zeros)
 * over x [B, T, X], T >= 1. opt and stats may be NULL. */
#ifndef PARRNN_NO_DEER
PRNDEF prn_status prn_deer(prn_context *ctx, const prn_deer_system *cell, prn_tensor *x, prn_tensor *state0,
                           const prn_deer_options *opt, prn_tensor **y, prn_deer_stats *stats);
#endif
/* prn_rnn_forward by DEER: the same arguments and results (y, final
 * state), layer by layer and direction by direction (a reverse direction
 * is a reverse scan). *warm holds the states of every layer-direction:
 * [L*D, B, T, S]. The input projections of all steps are one GEMM, done
 * once. */
#ifndef PARRNN_NO_DEER
PRNDEF prn_status prn_deer_rnn(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state0,
                               const prn_deer_options *opt, prn_tensor **y, prn_tensor **state,
                               prn_deer_stats *stats);
#endif

/* ------------------------------------------------------------------------
 * Piecewise-linear models and SCYFI: their fixed points and cycles
 *
 * The PLRNN family is piecewise affine: inside each linear region (an
 * indicator pattern D of which ReLUs are on) the step is z' = J(D) z + c(D):
 *   plrnn            z' = A z + W relu(z) + h          J = A + W D
 *   alrnn            as plrnn, only the last P units pass through the
 *                    ReLU (the first M - P are linear: D = 1 there)
 *   shplrnn          z' = A z + W1 relu(W2 z + h2) + h1
 *                    J = A + W1 D W2, c = W1 D h2 + h1, D = [W2 z + h2 > 0]
 *   clipped_shplrnn  z' = A z + W1 (relu(W2 z + h2) - relu(W2 z)) + h1
 *                    J = A + W1 (D1 - D2) W2, c = W1 D1 h2 + h1,
 *                    D1 = [W2 z + h2 > 0], D2 = [W2 z > 0]
 * A is diagonal (M numbers) or full (M * M, row-major; full_A set); W may
 * have a diagonal. Indicators are strict (z > 0 is on).
 *
 * SCYFI (Eisenmann et al., 2023) finds k-cycles z_1 .. z_k exactly: guess
 * the patterns D_1 .. D_k, solve the affine k-step map's fixed point
 *     (I - J_k ... J_1) z_1 = c_k + J_k (c_{k-1} + J_{k-1} (... + J_2 c_1))
 * by LU (the backend's solve_batched), iterate the model from z_1 and
 * compare the patterns it visits with the guess. Equal: a k-cycle (new
 * ones are kept). Different: the visited patterns are the next guess.
 *
 * The search, order by order (k = 1 .. kmax), is the reference
 * implementation's outer and inner loop as independent chains j = 0, 1, ...
 * A chain starts from a random guess (plrnn/alrnn: random bits; shallow
 * kinds: each D_l drawn from a pool of patterns that occur at points
 * sampled in [-pool_range, pool_range]^M, half of them up to 100 times
 * further out, and along trajectories from them) and takes `inner` steps.
 * A singular or overflowing candidate, or a guess the chain made in its
 * last 8 steps (a loop), draws a new random guess. A consistent candidate
 * is kept when it is not a lower-order cycle repeated and new to the
 * chain, which then starts its count of steps again; either way the chain
 * goes on from a random guess. Chains are judged in index order: one that
 * brings a cycle new to the search resets the count of fruitless chains,
 * and the order ends after `outer` fruitless chains in a row (a discovery
 * restarts both counters, as in the reference). Many chains run at once
 * (`batch`): their systems are built on the CPU's threads and solved
 * together by one batched call of the backend. A chain depends only on
 * (seed, k, j) and chains are judged in order, so the cycles, their order
 * and their points do not depend on batch or threads, nor on the backend
 * up to rounding.
 *
 * Default loop counts grow with k, as the reference's: k < 3: outer 10,
 * inner 20; 3-5: 10/60; 6-7: 10/300; 8-19: 40/1080; 20-29: 40/1115;
 * 30 and more: 100/1115.
 *
 * A candidate is rejected when it is a lower-order cycle repeated (z_1
 * comes back after j | k, j < k steps), and is a duplicate when its z_1
 * equals a point of a known cycle of the same order: |a - b| <= tol (1 +
 * |a|) in the max norm. Each cycle carries the eigenvalues of J_k ... J_1
 * (the Jacobian of k steps) and its type: stable (all |lambda| < 1),
 * unstable (all > 1) or saddle.
 *
 * Exhaustive mode enumerates every pattern sequence instead (2^(R k) of
 * them, R the indicator bits: M, P, H or 2 H), so its result is the
 * complete set of k-cycles whose points are off the region borders; it
 * refuses more than exhaustive_limit sequences per order.
 * ---------------------------------------------------------------------- */
typedef enum prn_pwl_kind {
    PRN_PWL_PLRNN,
    PRN_PWL_SHPLRNN,
    PRN_PWL_CLIPPED_SHPLRNN,
    PRN_PWL_ALRNN
} prn_pwl_kind;

/* A model's parameters, on the host, in f64. The arrays are the caller's
 * (or the loader's, see prn_pwl_load). */
typedef struct prn_pwl_model {
    prn_pwl_kind kind;
    size_t M;      /* state size                                          */
    size_t H;      /* hidden size (shallow kinds; the others ignore it)   */
    size_t P;      /* alrnn: the last P units are ReLUs (0 <= P <= M)     */
    int full_A;    /* A is M x M (row-major) when set, else its diagonal  */
    double *A;     /* M or M*M                                            */
    double *W;     /* M*M, row-major (plrnn, alrnn)                       */
    double *h;     /* M (plrnn, alrnn)                                    */
    double *W1;    /* M*H, row-major (shallow kinds)                      */
    double *W2;    /* H*M                                                 */
    double *h1;    /* M                                                   */
    double *h2;    /* H                                                   */
} prn_pwl_model;

/* Checks a model (sizes, the arrays its kind needs, finite numbers). */
#ifndef PARRNN_NO_SCYFI
PRNDEF prn_status prn_pwl_check(prn_context *ctx, const prn_pwl_model *m);
/* One step z -> z' = F(z) (M numbers each; out may equal z). */
PRNDEF prn_status prn_pwl_step(prn_context *ctx, const prn_pwl_model *m, const double *z, double *out);
#endif

/* Model files (text). '#' starts a comment; each field is a keyword
 * followed by its numbers, which may continue on the following lines:
 *   kind plrnn | shplrnn | clipped_shplrnn | alrnn
 *   M <int>      H <int> (shallow kinds)      P <int> (alrnn)
 *   A <M numbers> (diagonal) or <M*M numbers> (full, row-major)
 *   W <M*M> h <M>                              (plrnn, alrnn)
 *   W1 <M*H> W2 <H*M> h1 <M> h2 <H>             (shallow kinds)
 * prn_pwl_parse reads len bytes of text; a missing, repeated or unknown
 * field, a wrong count, a field the kind does not have, a number that is
 * not one or not finite gives PRN_ERR_FORMAT and a message naming the
 * line and the field. On success *out is one allocation from the
 * context's allocator, freed with prn_pwl_free. prn_pwl_load reads the
 * file up to prn_config.max_file_bytes (default 1 GiB; more:
 * PRN_ERR_FORMAT) or to its first NUL byte, which the parser refuses. */
#ifndef PARRNN_NO_SCYFI
PRNDEF prn_status prn_pwl_parse(prn_context *ctx, const char *text, size_t len, prn_pwl_model **out);
PRNDEF prn_status prn_pwl_load(prn_context *ctx, const char *path, prn_pwl_model **out);
PRNDEF void prn_pwl_free(prn_context *ctx, prn_pwl_model *m);
#endif

/* The largest opt->kmax prn_scyfi takes. */
#define PRN_SCYFI_MAX_KMAX 100000
/* Zero fields take the defaults in brackets. */
typedef struct prn_scyfi_options {
    size_t kmax;              /* [1] orders 1 .. kmax (<= PRN_SCYFI_MAX_KMAX) */
    size_t outer, inner;      /* [by k, see above] fruitless chains that end
                               * an order; steps of one chain                  */
    uint64_t seed;            /* [0]                                           */
    size_t batch;             /* [max(outer, 4 threads); exhaustive: 256;
                               * capped so the systems take at most 64 MiB]
                               * chains at once                              */
    double tol;               /* [1e-6] duplicate test                         */
    int exhaustive;           /* [0] enumerate every pattern sequence          */
    uint64_t exhaustive_limit; /* [2^22] most sequences per order              */
    size_t pool_size;         /* [1000] shallow kinds: sampled points          */
    double pool_range;        /* [10]                                          */
    size_t max_cycles;        /* [0: no limit] stop an order after this many   */
    int host_products;        /* [0] backends other than the reference form
                               * the k-step products by their batched GEMM
                               * (orders >= 2); 1 keeps them on the CPU      */
    /* A search split over processes (set by prn_mpi_scyfi in
     * backends/parrnn_mpi.h; leave them zero). In each round every process
     * runs its block of `batch` chains, chains g + part_rank * batch ..,
     * to their ends; part_exchange (collective) then gathers every
     * process's message of the round, in process order, into *all
     * (prn_alloc'd on ctx, freed by the caller), and every process judges
     * all the chains in index order. failed = 1 tells the others this
     * process has failed; then, or when another has, it returns an error.
     * Every process calls it once more at the end (mine NULL), so that a
     * failure anywhere reaches every process. */
    int part_rank, part_size;
    prn_status (*part_exchange)(prn_context *ctx, void *user, int failed, const void *mine, size_t bytes,
                                void **all, size_t *all_bytes);
    void *part_user;
} prn_scyfi_options;

typedef enum prn_cycle_type { PRN_CYCLE_STABLE, PRN_CYCLE_UNSTABLE, PRN_CYCLE_SADDLE } prn_cycle_type;

typedef struct prn_scyfi_cycle {
    size_t k;             /* order                                             */
    double *points;       /* k x M: z_1 .. z_k in trajectory order             */
    double *eig_re;       /* M eigenvalues of J_k ... J_1 (real parts),        */
    double *eig_im;       /* imaginary parts; sorted by decreasing modulus     */
    prn_cycle_type type;
} prn_scyfi_cycle;

typedef struct prn_scyfi_result {
    size_t M, kmax;
    size_t num_cycles;
    prn_scyfi_cycle *cycles;  /* by order, then in the order found            */
    size_t *count;            /* [kmax + 1]: count[k] cycles of order k        */
    uint64_t solves;          /* candidate systems solved                      */
    uint64_t singular;        /* of them singular (re-randomised)              */
} prn_scyfi_result;

/* Every cycle of order 1 .. kmax that the search (or enumeration) finds.
 * opt may be NULL. On success *out is freed with prn_scyfi_free. */
#ifndef PARRNN_NO_SCYFI
PRNDEF prn_status prn_scyfi(prn_context *ctx, const prn_pwl_model *m, const prn_scyfi_options *opt,
                            prn_scyfi_result **out);
PRNDEF void prn_scyfi_free(prn_context *ctx, prn_scyfi_result *r);
#endif

/* Eigenvalues of a real n x n matrix a (row-major; not changed; n at most
 * 65536, 0: nothing to do): balancing,
 * Hessenberg reduction and the shifted (Francis double-shift) QR
 * iteration; LAPACK's dgeev instead when the implementation is compiled
 * with PARRNN_USE_LAPACK. re/im get n values, sorted by decreasing modulus
 * (a conjugate pair: positive imaginary part first). PRN_ERR_NONFINITE
 * for a non-finite a or when the iteration does not converge. */
#ifndef PARRNN_NO_SCYFI
PRNDEF prn_status prn_eigenvalues(prn_context *ctx, size_t n, const double *a, double *re, double *im);
#endif

/* ------------------------------------------------------------------------
 * Optimisers
 * ---------------------------------------------------------------------- */
typedef struct prn_optim prn_optim;

/* Zero fields take the defaults in brackets. */
typedef struct prn_sgd_config {
    double lr;            /* [0.01] */
    double momentum;      /* [0]    */
    double weight_decay;  /* [0]    L2 term added to the gradient */
    int nesterov;         /* [0]    */
} prn_sgd_config;

typedef struct prn_adam_config {
    double lr;            /* [1e-3]  */
    double beta1;         /* [0.9]   */
    double beta2;         /* [0.999] */
    double eps;           /* [1e-8]  */
    double weight_decay;  /* [0]     decoupled (AdamW) when decoupled != 0 */
    int decoupled;        /* [0]     */
} prn_adam_config;

/* The optimiser keeps a reference to each parameter; free it (prn_optim_free)
 * before its context. The parameters are distinct leaf tensors: a tensor
 * listed twice, or two tensors sharing storage, would be updated twice per
 * step, so creation refuses them (PRN_ERR_INVALID_ARGUMENT, naming both
 * indices). */
#ifndef PARRNN_NO_TRAINING
PRNDEF prn_status prn_optim_sgd_create(prn_context *ctx, prn_tensor *const *params, int num_params,
                                const prn_sgd_config *config, prn_optim **out);
PRNDEF prn_status prn_optim_adam_create(prn_context *ctx, prn_tensor *const *params, int num_params,
                                 const prn_adam_config *config, prn_optim **out);
/* One update of every parameter that has a gradient. On failure no
 * parameter or state has changed. The update writes the parameters in
 * place: records that saved them before the step no longer backward (see
 * prn_backward). */
PRNDEF prn_status prn_optim_step(prn_optim *opt);
PRNDEF void prn_optim_zero_grad(prn_optim *opt);
PRNDEF prn_status prn_optim_set_lr(prn_optim *opt, double lr);
PRNDEF void prn_optim_free(prn_optim *opt);

/* Scales the gradients so that their global L2 norm is at most max_norm.
 * Writes the norm before clipping to *total_norm when not NULL. A tensor
 * listed more than once counts, and is scaled, once. */
PRNDEF prn_status prn_clip_grad_norm(prn_context *ctx, prn_tensor *const *params, int num_params,
                                     double max_norm, double *total_norm);
#endif

/* ------------------------------------------------------------------------
 * The backend table
 *
 * A backend implements primitives on opaque buffers; everything above
 * (tensors, autodiff, optimisers, later cells, DEER, SCYFI) is generic code
 * calling these through the table. The slots are declared once, in
 * PRN_BACKEND_SLOTS below, with their kinds, conventions and contracts;
 * a backend's table is written with PRN_BACKEND_TABLE.
 * ---------------------------------------------------------------------- */
typedef enum prn_unary_op {
    PRN_UNARY_NEG,      /* -x            */
    PRN_UNARY_EXP,      /* e^x           */
    PRN_UNARY_LOG,      /* ln x          */
    PRN_UNARY_RELU,     /* max(x, 0)     */
    PRN_UNARY_SIGMOID,  /* 1/(1+e^-x)    */
    PRN_UNARY_TANH,     /* tanh x        */
    PRN_UNARY_SQUARE,   /* x*x           */
    PRN_UNARY_SQRT,     /* sqrt x        */
    PRN_UNARY_ABS,      /* |x|           */
    PRN_UNARY_POWS,     /* x^alpha       */
    PRN_UNARY_AFFINE,   /* alpha*x+beta  */
    PRN_UNARY_CLAMP,    /* NaN -> beta; else x limited to [-alpha, alpha]
                         * (so +-Inf -> +-alpha): DEER's sanitising step   */
    PRN_UNARY_COUNT
} prn_unary_op;

typedef enum prn_binary_op {
    PRN_BINARY_ADD,          /* a+b                       */
    PRN_BINARY_SUB,          /* a-b                       */
    PRN_BINARY_MUL,          /* a*b                       */
    PRN_BINARY_DIV,          /* a/b                       */
    PRN_BINARY_POW,          /* a^b                       */
    PRN_BINARY_MAX,          /* max(a,b)                  */
    PRN_BINARY_MIN,          /* min(a,b)                  */
    PRN_BINARY_EQ,           /* a==b ? 1 : 0              */
    PRN_BINARY_RELU_GRAD,    /* a * (b > 0)     (a=grad, b=x) */
    PRN_BINARY_SIGMOID_GRAD, /* a * b * (1-b)   (a=grad, b=y) */
    PRN_BINARY_TANH_GRAD,    /* a * (1-b*b)     (a=grad, b=y) */
    PRN_BINARY_COUNT
} prn_binary_op;

typedef enum prn_reduce_op { PRN_REDUCE_SUM, PRN_REDUCE_MAX, PRN_REDUCE_COUNT } prn_reduce_op;
typedef enum prn_random_dist { PRN_RANDOM_UNIFORM, PRN_RANDOM_NORMAL } prn_random_dist;


/* Parameters of the fused optimiser updates (one parameter tensor). */
typedef struct prn_optim_params {
    double lr, momentum, weight_decay; /* sgd; weight_decay also adam     */
    double beta1, beta2, eps;          /* adam                            */
    double bias1, bias2;               /* adam: 1-beta1^t, 1-beta2^t      */
    int nesterov, decoupled;
} prn_optim_params;

/* One fused DEER iteration or adjoint solve of a built-in cell (the
 * optional entries deer_iterate and deer_adjoint; prn_deer_rnn fills it).
 * The cell is one layer-direction of a prn_rnn: f(s, xp_t) as in the API
 * section, P = G H input projections per step (G: ELMAN 1, LSTM 4, GRU and
 * MHGRU 3; the PLRNN family 1, P = M). Every array is contiguous, in the
 * dtype; rows of a [B, T, .] array are b * T + t. */
typedef struct prn_deer_fused {
    int kind;               /* prn_rnn_kind                                     */
    int relu;               /* ELMAN: relu instead of tanh                      */
    prn_dtype dtype;        /* PRN_F32 or PRN_F64                               */
    prn_jacobian_mode mode; /* the Jacobians of deer_iterate's linear recurrence */
    int reverse;            /* t runs T-1 .. 0; the state before t is at t + 1  */
    size_t B, T;
    size_t H;               /* hidden size (PLRNN family: M)                    */
    size_t S;               /* state size: LSTM 2H, else H                      */
    size_t hk;              /* GRU, MHGRU: head size (GRU: H); BLOCK mode's k    */
    size_t L;               /* SHPLRNN, CLIPPED_SHPLRNN: shallow size; ALRNN: P
                             * (relu units, the last P of M)                    */
    /* recurrent parameters: torch kinds w_hh [G H, H] (MHGRU [heads, 3k, k]),
     * b_hh [G H]; PLRNN, ALRNN: A [M], W [M, M]; shallow: A, W1 [M, L],
     * W2 [L, M], h2 [L] */
    const void *w[4];
    const void *xp;         /* [B, T, P] input projections (b_ih, h, C x in)   */
    const void *h0;         /* [B, S]                                          */
    const void *y;          /* [B, T, S] the iterate (deer_adjoint: solution)  */
    double damping;         /* k: the recurrence's Jacobians are (1 - k) J     */
    double clip, atol, rtol;
    /* deer_iterate's results: ynew [B, T, S] (unless NULL): the solution of
     * y'_t = A_t y'_{t-1} + (f_t - A_t y_{t-1}), A_t = (1 - k) J_t as mode
     * says, J_t and f_t at (y_{t-1}, xp_t), y'_{-1} = y_{-1} = h0, each
     * value then sanitised as PRN_UNARY_CLAMP with clip (the recurrence
     * carries the values before it); residual = max |y_t - f_t| / (atol +
     * rtol |f_t|) over all elements, finite = 0 when any term is NaN or Inf
     * (residual then unspecified) */
    void *ynew;
    double residual;
    int finite;
    /* deer_adjoint: g [B, T, S] -> lam [B, T, S], lam_t = g_t + J_{t'}^T
     * lam_{t'} with t' the step after t (t + 1, reverse: t - 1; none at the
     * end) and J the exact Jacobians at the solution y (mode not read) */
    const void *g;
    void *lam;
    /* deer_adjoint, when dxp is not NULL (torch kinds: ELMAN, LSTM, GRU,
     * MHGRU): also the rest of the backward in the same pass, with lam_t
     * as the gradient of f_t: dxp [B, T, P] = (d f_t / d xp_t)^T lam_t,
     * dq [B, T, P] the same for the recurrent term q_t = W_hh h_{t-1} +
     * b_hh of each gate (as rnn_layer_backward's dq), and dh0 [B, S] =
     * J_first^T lam_first, the gradient of h0 (the first step: t = 0,
     * reverse: T - 1). The weight gradients are then dq's sums over rows,
     * whose order the caller fixes. dh0 alone (dxp NULL) is allowed for
     * every kind. dw (the shape of w_hh) and db (of b_hh), when not NULL
     * (with dxp; dq may then be NULL): the sums over all rows of dq_t
     * h_{t-1}^T (MHGRU: within each head) and of dq_t, in an order fixed by
     * B and T alone. */
    void *dxp;
    void *dq;
    void *dh0;
    void *dw;
    void *db;
    /* deer_iterate: 1 when the caller discards ynew if the result shows
     * convergence (finite and residual <= 1); ynew's contents are then
     * unspecified (a backend may skip work). 0: ynew is always written. */
    int discard_converged;
    /* deer_iterate, several iterations in one call (so that a device runs
     * them without a host round trip each): iters > 1 (0 or 1: one) allows
     * up to iters iterations when ynew and y2 [B, T, S] are not NULL (else
     * one is made). Iteration j (from 0) takes its iterate from y (j = 0),
     * ynew (j odd) or y2 (j even) and writes its result to ynew (j even)
     * or y2 (j odd), exactly as a call of one iteration with those
     * pointers and the same damping would; the call stops after the
     * iteration that shows convergence (finite and residual <= 1) or is not
     * finite, or after iters. residual and finite are then the last
     * iteration's, and done (out) the iterations made, 1 .. iters. y2 may
     * be y (overwritten from the second iteration on), never ynew. An
     * entry that leaves done 0 made one iteration (a backend that ignores
     * iters); prn_deer_rnn then makes the others one call at a time. */
    int iters;
    void *y2;
    int done;
} prn_deer_fused;

/* ------------------------------------------------------------------------
 * The slots of struct prn_backend, declared once
 *
 * Each slot is one macro PRN_SLOT_DECL_<name>(X) that hands X its return
 * type, name, parameter list and kind; PRN_BACKEND_SLOTS(X) lists them in
 * the struct's order. From that list come the struct's members, the slot
 * ids (enum prn_backend_slot: PRN_SLOT_<name>), their names
 * (prn_backend_slot_name), their kinds (prn_backend_slot_kind), the test of
 * a slot by id (prn_backend_has) and the conformance test's check that
 * every required slot of every backend is set.
 *
 * Kinds:
 *  - BUFFER: required; prn_context_create refuses a table without it.
 *  - BASIC: required; the conformance test fails a backend that leaves one
 *    NULL. A context still runs on such a table (a partial backend while
 *    it is written): what needs the slot fails with PRN_ERR_UNSUPPORTED
 *    naming it.
 *  - OPTIONAL: create, destroy, supports: NULL has a meaning of its own
 *    (no per-context state; every fused slot set takes every call).
 *  - FUSED: optional. One step, layer or iteration of a model (or one
 *    pass for what takes several) that the generic code also composes from
 *    BASIC slots, the conformance test checking the one against the other;
 *    the generic code uses the fused slot when it is set and supports (when
 *    set) does not decline the call: prn_backend_supports is the one gate
 *    every generic caller of a fused slot goes through.
 *
 * Which are fused: rnn_gates_*, rnn_layer_*, deer_iterate, deer_adjoint
 * and all_finite each have a composition from the basic slots in the
 * generic code (so a new backend can start without them). sgd_update,
 * adam_update and solve_batched are BASIC although fused in name or
 * model-specific: nothing composes them (the optimisers and SCYFI call
 * them directly), so a backend without them cannot run those parts.
 * deer_takes (ABI 1) is now the general query supports.
 *
 * Why typed slots and not one entry taking an op code and a void *
 * parameter block: every fused slot keeps its C prototype, so the compiler
 * checks each kernel's signature and each call; the op code is the slot id
 * (PRN_SLOT_deer_iterate, ...), and supports(ctx, slot, args) is the
 * capability query over it. The parameter block of the DEER slots is
 * prn_deer_fused (supports reads it); the other fused slots have plain
 * arguments and supports gets NULL for them (the slot as a whole).
 *
 * Adding a slot: define its PRN_SLOT_DECL_<name> (with its contract in a
 * comment above it) and append PRN_SLOT_DECL_<name>(X) at the END of
 * PRN_BACKEND_SLOTS: it takes the first reserved pointer, which tables
 * made for the list before leave NULL, so the layout of the others stays
 * (PARRNN_BACKEND_ABI is bumped only when a slot changes or goes). Then
 * the generic caller (through prn_backend_supports when FUSED), the
 * backends that implement it (E(name, fn) in their entry lists; the
 * others leave it NULL) and its test in tests/test_conformance.c's
 * k_prims, whose coverage check fails for a slot without one.
 *
 * Conventions for every slot:
 *  - ctx is the calling context; prn_backend_state(ctx) is what create made.
 *  - Buffers are void* handles from buf_alloc; sizes and offsets in bytes for
 *    buffer entries, in elements elsewhere.
 *  - Report failures with prn_set_error and return its status.
 *  - Outputs never alias inputs unless the entry says so.
 *  - Shapes are always 4-D ({1,1,...} padded on the left); a stride of 0
 *    broadcasts that axis.
 * ---------------------------------------------------------------------- */
typedef enum prn_slot_kind {
    PRN_SLOT_KIND_BUFFER,   /* required to create a context          */
    PRN_SLOT_KIND_BASIC,    /* required by the conformance test      */
    PRN_SLOT_KIND_OPTIONAL, /* NULL means something of its own       */
    PRN_SLOT_KIND_FUSED     /* NULL or declined: composed from BASIC */
} prn_slot_kind;

/* Lifetime: create makes per-context state; destroy frees it. */
#define PRN_SLOT_DECL_create(X) X(prn_status, create, (prn_context *ctx, void **state), PRN_SLOT_KIND_OPTIONAL)
#define PRN_SLOT_DECL_destroy(X) X(void, destroy, (prn_context *ctx, void *state), PRN_SLOT_KIND_OPTIONAL)

/* Buffers. buf_alloc of 0 bytes must still give a handle. */
#define PRN_SLOT_DECL_buf_alloc(X) X(prn_status, buf_alloc, (prn_context *ctx, size_t bytes, void **buf), PRN_SLOT_KIND_BUFFER)
#define PRN_SLOT_DECL_buf_free(X) X(void, buf_free, (prn_context *ctx, void *buf), PRN_SLOT_KIND_BUFFER)
#define PRN_SLOT_DECL_buf_upload(X)                                                                    \
    X(prn_status, buf_upload, (prn_context *ctx, void *dst, size_t offset, const void *src, size_t bytes), \
      PRN_SLOT_KIND_BUFFER)
#define PRN_SLOT_DECL_buf_download(X)                                                                      \
    X(prn_status, buf_download, (prn_context *ctx, const void *src, size_t offset, void *dst, size_t bytes), \
      PRN_SLOT_KIND_BUFFER)
#define PRN_SLOT_DECL_buf_copy(X)                                                                        \
    X(prn_status, buf_copy,                                                                              \
      (prn_context *ctx, void *dst, size_t dst_offset, const void *src, size_t src_offset, size_t bytes), \
      PRN_SLOT_KIND_BUFFER)

/* y[i] = value for i < n. */
#define PRN_SLOT_DECL_fill(X) \
    X(prn_status, fill, (prn_context *ctx, prn_dtype dtype, void *y, size_t n, double value), PRN_SLOT_KIND_BASIC)
/* y[i] = op(x[i]); alpha/beta are POWS/AFFINE/CLAMP's. y may equal x. */
#define PRN_SLOT_DECL_unary(X)                                                                               \
    X(prn_status, unary,                                                                                     \
      (prn_context *ctx, prn_unary_op op, prn_dtype dtype, size_t n, const void *x, void *y, double alpha, \
       double beta),                                                                                         \
      PRN_SLOT_KIND_BASIC)
/* y[i0,i1,i2,i3] = op(a[sum i*astride], b[sum i*bstride]) over shape;
 * y is contiguous. y may equal a or b when that operand is contiguous
 * and not broadcast. */
#define PRN_SLOT_DECL_binary(X)                                                                            \
    X(prn_status, binary,                                                                                  \
      (prn_context *ctx, prn_binary_op op, prn_dtype dtype, const size_t shape[4], const void *a,        \
       const size_t astride[4], const void *b, const size_t bstride[4], void *y),                        \
      PRN_SLOT_KIND_BASIC)
/* y[y_off + sum i*ystride] = x[x_off + sum i*xstride] over shape (offsets
 * and strides in elements): copies, transposes, broadcasts (xstride 0),
 * slices and writes into part of a tensor. Written elements are distinct. */
#define PRN_SLOT_DECL_strided_copy(X)                                                                  \
    X(prn_status, strided_copy,                                                                        \
      (prn_context *ctx, prn_dtype dtype, const size_t shape[4], const void *x, size_t x_off,        \
       const size_t xstride[4], void *y, size_t y_off, const size_t ystride[4]),                     \
      PRN_SLOT_KIND_BASIC)
/* C_b = alpha op(A_b) op(B_b) + beta C_b for b < batch; op(A) is M x K,
 * op(B) K x N, all row-major with leading dimensions lda/ldb/ldc and
 * batch strides sa/sb/sc (sa or sb 0 broadcasts; sc is never 0). */
#define PRN_SLOT_DECL_gemm(X)                                                                               \
    X(prn_status, gemm,                                                                                     \
      (prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b, size_t M, size_t N, size_t K,         \
       double alpha, const void *A, size_t lda, size_t sa, const void *B, size_t ldb, size_t sb,           \
       double beta, void *C, size_t ldc, size_t sc, size_t batch),                                         \
      PRN_SLOT_KIND_BASIC)
/* x viewed as [outer, n, inner]; y[o, i] = reduce over the middle axis. */
#define PRN_SLOT_DECL_reduce(X)                                                                          \
    X(prn_status, reduce,                                                                                \
      (prn_context *ctx, prn_reduce_op op, prn_dtype dtype, size_t outer, size_t n, size_t inner,      \
       const void *x, void *y),                                                                          \
      PRN_SLOT_KIND_BASIC)
/* As reduce; y is int32 index of the first maximum. */
#define PRN_SLOT_DECL_argmax(X)                                                                          \
    X(prn_status, argmax,                                                                                \
      (prn_context *ctx, prn_dtype dtype, size_t outer, size_t n, size_t inner, const void *x, void *y), \
      PRN_SLOT_KIND_BASIC)
/* (log-)softmax over the middle axis of [outer, n, inner]. */
#define PRN_SLOT_DECL_softmax(X)                                                                          \
    X(prn_status, softmax,                                                                                \
      (prn_context *ctx, prn_dtype dtype, int log, size_t outer, size_t n, size_t inner, const void *x, \
       void *y),                                                                                          \
      PRN_SLOT_KIND_BASIC)
/* Counter-based random numbers: element i is a function of
 * (seed, counter + i) only -- Philox4x32-10, see prn_philox4x32 --
 * so every backend must produce the same values. */
#define PRN_SLOT_DECL_random(X)                                                                     \
    X(prn_status, random,                                                                           \
      (prn_context *ctx, prn_random_dist dist, prn_dtype dtype, size_t n, uint64_t seed,          \
       uint64_t counter, double p0, double p1, void *y),                                           \
      PRN_SLOT_KIND_BASIC)
/* Fused optimiser updates of n elements of param from grad, in place
 * (BASIC: the optimisers have no composed path). */
#define PRN_SLOT_DECL_sgd_update(X)                                                                  \
    X(prn_status, sgd_update,                                                                        \
      (prn_context *ctx, prn_dtype dtype, size_t n, void *param, const void *grad, void *velocity, \
       const prn_optim_params *p),                                                                   \
      PRN_SLOT_KIND_BASIC)
#define PRN_SLOT_DECL_adam_update(X)                                                                   \
    X(prn_status, adam_update,                                                                         \
      (prn_context *ctx, prn_dtype dtype, size_t n, void *param, const void *grad, void *m, void *v, \
       const prn_optim_params *p),                                                                     \
      PRN_SLOT_KIND_BASIC)

/* Linear recurrences over time, batched, on contiguous arrays. Forward:
 *   h[n,t] = a[n,t] * h[n,t-1] + b[n,t]   (t = 0..T-1, h[n,-1] = h0[n])
 * reverse: h[n,t] = a[n,t] * h[n,t+1] + b[n,t]   (h[n,T] = h0[n]).
 * scan_diag: a, b, h are [batch, T, C], h0 is [batch, C] or NULL (zero);
 * a[n,t] * h is elementwise. h may equal b. */
#define PRN_SLOT_DECL_scan_diag(X)                                                                      \
    X(prn_status, scan_diag,                                                                            \
      (prn_context *ctx, prn_dtype dtype, int reverse, prn_scan_algo algo, size_t batch, size_t T,    \
       size_t C, const void *a, const void *b, const void *h0, void *h),                               \
      PRN_SLOT_KIND_BASIC)
/* scan_block: C = nblk * k channels in blocks of k; a is [batch, T, C, k]:
 * rows j*k..j*k+k-1 of step t are the k x k matrix of block j, and
 * a[n,t] * h multiplies each block of h by its matrix (by its transpose
 * when transpose is set: the adjoint scans of backward). Dense is k = C. */
#define PRN_SLOT_DECL_scan_block(X)                                                                      \
    X(prn_status, scan_block,                                                                            \
      (prn_context *ctx, prn_dtype dtype, int reverse, int transpose, prn_scan_algo algo, size_t batch, \
       size_t T, size_t C, size_t k, const void *a, const void *b, const void *h0, void *h),            \
      PRN_SLOT_KIND_BASIC)

/* FUSED, both or neither (NULL: the generic code composes the step from
 * the basic slots). One time step of the gates of the classic cells:
 * kind is PRN_RNN_ELMAN (relu: relu instead of tanh), PRN_RNN_LSTM or
 * PRN_RNN_GRU / PRN_RNN_MHGRU (gates grouped by head of k units; k = H
 * for GRU). xp [B, P] holds the input projections (with b_ih), q [B, P]
 * the hidden ones without bias, bias [P] is b_hh, s [B, S] the previous
 * state (P = G H, S = 2H for LSTM, else H). Writes next [B, S] and
 * saved [B, V H] for the backward (V: ELMAN 0, LSTM 5: i f g o tanh c';
 * GRU 4: r z n and q_n + b_hn). */
#define PRN_SLOT_DECL_rnn_gates_forward(X)                                                                  \
    X(prn_status, rnn_gates_forward,                                                                        \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B, size_t H, size_t k, const void *xp, \
       const void *q, const void *bias, const void *s, void *next, void *saved),                           \
      PRN_SLOT_KIND_FUSED)
/* Its backward: from g [B, S] (d loss / d next) and the forward's s,
 * next and saved, writes dxp [B, P] (d loss / d xp), dq [B, P] (d loss /
 * d (q + bias)) and ds [B, S], the part of d loss / d s that does not go
 * through q (zeros for ELMAN). */
#define PRN_SLOT_DECL_rnn_gates_backward(X)                                                                \
    X(prn_status, rnn_gates_backward,                                                                      \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B, size_t H, size_t k, const void *g, \
       const void *s, const void *next, const void *saved, void *dxp, void *dq, void *ds),                \
      PRN_SLOT_KIND_FUSED)

/* Batched dense solves (SCYFI's candidates; BASIC: nothing composes an LU
 * with pivoting, SCYFI fails PRN_ERR_UNSUPPORTED without it): for b <
 * batch, solves a[b] x = r[b] by LU with partial pivoting (the first
 * largest |pivot| of the column wins; no scaling), a [batch, n, n]
 * row-major, r [batch, n]. a is overwritten (factors or scratch), r by x.
 * info is a host array of batch ints: 0, or j + 1 when the pivot of
 * column j was 0 or not finite (that r is then unspecified). n >= 1. */
#define PRN_SLOT_DECL_solve_batched(X)                                                                    \
    X(prn_status, solve_batched, (prn_context *ctx, prn_dtype dtype, size_t batch, size_t n, void *a,   \
                                  void *r, int *info),                                                    \
      PRN_SLOT_KIND_BASIC)

/* FUSED, both or neither (NULL: the generic code runs each step with
 * gemm and rnn_gates_forward/_backward; it uses these two only on a
 * backend that has those as well). A whole layer of one head of
 * kind PRN_RNN_ELMAN, PRN_RNN_LSTM or PRN_RNN_GRU (a one-head MHGRU is
 * passed as GRU): for t = 0 .. T-1
 * (T-1 .. 0 when reverse), the step of rnn_gates_forward with xp[:, t]
 * and q = h_prev W_hh^T, h_prev being the first H values of the previous
 * state (of s0 before the first step). xp [B, T, P] (input projections
 * with b_ih), w_hh [P, H], b_hh [P], s0 [B, S]; writes states [B, T, S]
 * and, unless NULL, saved [B, T, V H] (rnn_gates_forward's saved values,
 * step by step). */
#define PRN_SLOT_DECL_rnn_layer_forward(X)                                                                 \
    X(prn_status, rnn_layer_forward,                                                                       \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       const void *xp, const void *w_hh, const void *b_hh, const void *s0, void *states, void *saved),     \
      PRN_SLOT_KIND_FUSED)
/* Its backward: from g [B, T, S] (d loss / d states) and the forward's
 * w_hh, s0, states and saved (required for LSTM and GRU), writes dxp
 * [B, T, P] (d loss / d xp), dq [B, T, P] (d loss / d (q + b_hh) of
 * each step) and ds0 [B, S] (d loss / d s0; zero when T = 0). For ELMAN
 * and LSTM, whose dq equals dxp, dq may be dxp itself (the generic code
 * passes one buffer for both); every other buffer is distinct. */
#define PRN_SLOT_DECL_rnn_layer_backward(X)                                                                \
    X(prn_status, rnn_layer_backward,                                                                      \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       const void *g, const void *w_hh, const void *s0, const void *states, const void *saved, void *dxp, \
       void *dq, void *ds0),                                                                               \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: DEER composes its iterations from the basic slots). One
 * Newton iteration of prn_deer_rnn's built-in cells (or several in a
 * call, stopping on the device: prn_deer_fused's iters) in one pass over
 * the rows, the Jacobians never stored for all rows (see prn_deer_fused
 * for the contract), and the adjoint solve of its backward. prn_deer_rnn
 * calls them with S <= 64 in DENSE and BLOCK mode (the block scan's
 * limit, which the generic path has). deer_adjoint may be NULL with
 * deer_iterate set: gradients then take the composed adjoint; it is used
 * only with deer_iterate. supports gets the call's prn_deer_fused. */
#define PRN_SLOT_DECL_deer_iterate(X) X(prn_status, deer_iterate, (prn_context *ctx, prn_deer_fused *a), PRN_SLOT_KIND_FUSED)
#define PRN_SLOT_DECL_deer_adjoint(X) \
    X(prn_status, deer_adjoint, (prn_context *ctx, const prn_deer_fused *a), PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: the check is composed from unary AFFINE x * 0 + 0 and a
 * reduce SUM, which keeps a NaN). *finite = 1 when none of the n values
 * of x is NaN or Inf (i32: always), else 0. The functions that run a
 * network check their arguments and results with it on every call: one
 * pass, no temporaries. */
#define PRN_SLOT_DECL_all_finite(X)                                                                       \
    X(prn_status, all_finite, (prn_context *ctx, prn_dtype dtype, size_t n, const void *x, int *finite), \
      PRN_SLOT_KIND_FUSED)

/* OPTIONAL (NULL: every fused slot that is set takes every call). The
 * capability query of the fused slots: 1 when the fused slot `slot`
 * takes a call with these arguments, 0 when the generic code should
 * compose it instead (a backend with a size limit -- a per-thread map of
 * S x S values, say -- declines with it instead of failing). args:
 * deer_iterate and deer_adjoint: the call's prn_deer_fused, of which only
 * kind, relu, dtype, mode, reverse, B, T, H, S, hk and L are read; the
 * other fused slots: NULL (the slot as a whole). Asked for fused slots
 * only, and only when the slot is set. */
#define PRN_SLOT_DECL_supports(X) \
    X(int, supports, (prn_context *ctx, prn_backend_slot slot, const void *args), PRN_SLOT_KIND_OPTIONAL)

/* FUSED (NULL: rnn_layer_backward, then dw and db from dq by gemm and
 * reduce). rnn_layer_backward (same arguments, dq required) that also
 * writes dw [P, H], the sum over all rows b and steps t of dq_t
 * h_{t-1}^T (h_{t-1} the first H values of the previous state, s0's
 * before the first step), and db [P] (unless NULL), the sum of dq_t: the
 * gradients of w_hh and b_hh. Each sum runs in an order fixed by B and T
 * alone (not by the threads), so that the reference computes them per
 * chunk of steps while dq is still in its caches. */
#define PRN_SLOT_DECL_rnn_layer_backward_dw(X)                                                             \
    X(prn_status, rnn_layer_backward_dw,                                                                   \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       const void *g, const void *w_hh, const void *s0, const void *states, const void *saved, void *dxp, \
       void *dq, void *ds0, void *dw, void *db),                                                          \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: the generic code computes xp with gemm and calls
 * rnn_layer_forward; it uses this one only on a backend that has
 * rnn_layer_forward/_backward as well, and only for a forward that saves
 * nothing for a backward, or for an ELMAN or LSTM forward whose backward
 * takes rnn_layer_backward_x: saved is then set). rnn_layer_forward with its input projections
 * taken from the layer's input: xp = x W_ih^T + b_ih, each entry the
 * product's sum plus b_ih (b_ih NULL: plus nothing), with x [B, T, In],
 * w_ih [P, In], b_ih [P]; the other arguments and the result as
 * rnn_layer_forward's. xp need not exist in memory as a whole (the
 * reference backend computes it a few steps at a time, so that it never
 * leaves the caches). The result agrees with the composition within the
 * rounding of a different order of the product's sum (the reference
 * backend: the same bits as its gemm's own AVX2/AVX-512 f32 kernel). */
#define PRN_SLOT_DECL_rnn_layer_forward_x(X)                                                               \
    X(prn_status, rnn_layer_forward_x,                                                                     \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       size_t In, const void *x, const void *w_ih, const void *b_ih, const void *w_hh, const void *b_hh,   \
       const void *s0, void *states, void *saved),                                                        \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: the generic code computes xp with gemm, records it, and
 * takes rnn_layer_forward/_backward(_dw) and the gemm's backward; it uses
 * this one only on a backend that has rnn_layer_forward/_backward and
 * rnn_layer_forward_x as well, for the backward of a recorded
 * rnn_layer_forward_x). The backward of rnn_layer_forward_x for
 * kind PRN_RNN_ELMAN or PRN_RNN_LSTM (whose d loss / d xp equals dq):
 * rnn_layer_backward_dw's results (dw_hh, db_hh its dw and db, ds0), with
 * dxp [B, T, P] written only when not NULL, and besides dw_ih [P, In], the
 * sum over all rows b and steps t of dxp_t x_t^T with x [B, T, In] the
 * forward's input, and db_ih [P] (unless NULL), the sum of dxp_t (db_hh's
 * values). The sums run in an order fixed by B and T alone; the reference
 * takes dw_ih with dw_hh in one product per chunk of steps, so that dxp
 * need not be stored (d loss / d x, when wanted, is dxp W_ih: the caller's
 * product). */
#define PRN_SLOT_DECL_rnn_layer_backward_x(X)                                                              \
    X(prn_status, rnn_layer_backward_x,                                                                    \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       size_t In, const void *g, const void *x, const void *w_hh, const void *s0, const void *states,      \
       const void *saved, void *dxp, void *ds0, void *dw_hh, void *db_hh, void *dw_ih, void *db_ih),       \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: the generic code takes rnn_layer_forward_x and copies y
 * and the last state out of its states; it uses this one only where it
 * would take rnn_layer_forward_x for a forward that saves nothing).
 * rnn_layer_forward_x with y [B, T, H] and fin [B, S] in place of the
 * states: y holds each step's h (an LSTM's first H of the state; ELMAN's
 * and GRU's whole state), fin the state after the last step taken (t = T
 * - 1; t = 0 with reverse; s0 when T = 0). The same values as
 * rnn_layer_forward_x's (the reference backend: the same bits); an LSTM's
 * cell states stay out of memory (the reference keeps them in two
 * [B, H] rows), and y needs no copy out of states twice its size. */
#define PRN_SLOT_DECL_rnn_layer_forward_y(X)                                                               \
    X(prn_status, rnn_layer_forward_y,                                                                     \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       size_t In, const void *x, const void *w_ih, const void *b_ih, const void *w_hh, const void *b_hh,   \
       const void *s0, void *y, void *fin),                                                               \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: the generic code takes rnn_layer_forward_x and
 * rnn_layer_backward_x; it uses these two only on a backend that has
 * those and rnn_layer_backward_yc as well, for a recorded LSTM forward
 * whose final state the caller does not take). rnn_layer_forward_x of
 * kind PRN_RNN_ELMAN or PRN_RNN_LSTM (others refused) with each step's
 * state in two parts: y [B, T, H] its first H values (h), c [B, T, S - H]
 * the rest (an LSTM's cell state; c unused, may be NULL, where S = H);
 * saved as rnn_layer_forward_x's. The same values as rnn_layer_forward_x's
 * (the reference backend: the same bits). A recorded LSTM's y is then
 * written where it goes, not copied out of states twice its size. */
#define PRN_SLOT_DECL_rnn_layer_forward_yc(X)                                                              \
    X(prn_status, rnn_layer_forward_yc,                                                                    \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       size_t In, const void *x, const void *w_ih, const void *b_ih, const void *w_hh, const void *b_hh,   \
       const void *s0, void *y, void *c, void *saved),                                                    \
      PRN_SLOT_KIND_FUSED)

/* FUSED (NULL: as rnn_layer_forward_yc's). The backward of
 * rnn_layer_forward_yc: rnn_layer_backward_x with the states as that gave
 * them (y, c) and gy [B, T, H], d loss / d y, in place of g: d loss / d
 * state is gy in each state's first H values and zero in the rest (an
 * LSTM's c reaches the loss only through later steps). The same results
 * as rnn_layer_backward_x's with that g (the reference backend: the same
 * bits), without a zero [B, T, S] gradient for the caller to make and
 * copy d loss / d y into. */
#define PRN_SLOT_DECL_rnn_layer_backward_yc(X)                                                             \
    X(prn_status, rnn_layer_backward_yc,                                                                   \
      (prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B, size_t T, size_t H,   \
       size_t In, const void *gy, const void *x, const void *w_hh, const void *s0, const void *y,          \
       const void *c, const void *saved, void *dxp, void *ds0, void *dw_hh, void *db_hh, void *dw_ih,      \
       void *db_ih),                                                                                      \
      PRN_SLOT_KIND_FUSED)

/* The list, in the struct's order (new slots go at the end). */
#define PRN_BACKEND_SLOTS(X)                                                                                 \
    PRN_SLOT_DECL_create(X) PRN_SLOT_DECL_destroy(X)                                                         \
    PRN_SLOT_DECL_buf_alloc(X) PRN_SLOT_DECL_buf_free(X) PRN_SLOT_DECL_buf_upload(X)                          \
    PRN_SLOT_DECL_buf_download(X) PRN_SLOT_DECL_buf_copy(X)                                                  \
    PRN_SLOT_DECL_fill(X) PRN_SLOT_DECL_unary(X) PRN_SLOT_DECL_binary(X) PRN_SLOT_DECL_strided_copy(X)       \
    PRN_SLOT_DECL_gemm(X) PRN_SLOT_DECL_reduce(X) PRN_SLOT_DECL_argmax(X) PRN_SLOT_DECL_softmax(X)            \
    PRN_SLOT_DECL_random(X) PRN_SLOT_DECL_sgd_update(X) PRN_SLOT_DECL_adam_update(X)                         \
    PRN_SLOT_DECL_scan_diag(X) PRN_SLOT_DECL_scan_block(X)                                                   \
    PRN_SLOT_DECL_rnn_gates_forward(X) PRN_SLOT_DECL_rnn_gates_backward(X) PRN_SLOT_DECL_solve_batched(X)      \
    PRN_SLOT_DECL_rnn_layer_forward(X) PRN_SLOT_DECL_rnn_layer_backward(X)                                   \
    PRN_SLOT_DECL_deer_iterate(X) PRN_SLOT_DECL_deer_adjoint(X) PRN_SLOT_DECL_all_finite(X)                  \
    PRN_SLOT_DECL_supports(X) PRN_SLOT_DECL_rnn_layer_backward_dw(X) PRN_SLOT_DECL_rnn_layer_forward_x(X)      \
    PRN_SLOT_DECL_rnn_layer_backward_x(X) PRN_SLOT_DECL_rnn_layer_forward_y(X)                                \
    PRN_SLOT_DECL_rnn_layer_forward_yc(X) PRN_SLOT_DECL_rnn_layer_backward_yc(X)

/* The slot ids: PRN_SLOT_create, PRN_SLOT_destroy, ..., PRN_SLOT_COUNT. */
#define PRN__SLOT_ID(ret, name, args, kind) PRN_SLOT_##name,
typedef enum prn_backend_slot { PRN_BACKEND_SLOTS(PRN__SLOT_ID) PRN_SLOT_COUNT } prn_backend_slot;
#undef PRN__SLOT_ID

/* The total of slots and reserved room: the struct's size stays put as
 * slots are added (reserved shrinks). */
#define PRN__BACKEND_ROOM 50

#define PRN__SLOT_MEMBER(ret, name, args, kind) ret(*name) args;
struct prn_backend {
    const char *name;
    int abi_version; /* PARRNN_BACKEND_ABI */
    PRN_BACKEND_SLOTS(PRN__SLOT_MEMBER)
    /* Room for the primitives of later versions: keep NULL. */
    void (*reserved[PRN__BACKEND_ROOM - PRN_SLOT_COUNT])(void);
};
#undef PRN__SLOT_MEMBER

/* Writing a backend's table: list what it implements as E(slot, function)
 * in a macro, in any order, and define the table with
 * PRN_BACKEND_TABLE(variable, name, list); slots not listed are NULL:
 *
 *     #define MY_ENTRIES(E) E(buf_alloc, my_buf_alloc) E(buf_free, my_buf_free) \
 *         E(buf_upload, my_upload) E(buf_download, my_download) E(buf_copy, my_copy) E(gemm, my_gemm)
 *     const prn_backend *my_backend(void) {
 *         PRN_BACKEND_TABLE(table, "mine", MY_ENTRIES);
 *         return &table;
 *     }
 *
 * A misspelt slot or a function of the wrong type does not compile. An
 * entry that a configuration leaves out goes into a sub-list defined
 * empty under that configuration. In C the table is a constant with
 * designated initialisers; C++ before C++20 has none, so there it is a
 * local static built once by assignments (thread-safe since C++11). */
#ifdef __cplusplus
#define PRN__TABLE_ENTRY(slot, fn) prn__t.slot = fn;
#define PRN_BACKEND_TABLE(var, NAME, ENTRIES)               \
    static const prn_backend var = []() {                   \
        prn_backend prn__t = prn_backend();                 \
        prn__t.name = NAME;                                 \
        prn__t.abi_version = PARRNN_BACKEND_ABI;            \
        ENTRIES(PRN__TABLE_ENTRY)                           \
        return prn__t;                                      \
    }()
#else
#define PRN__TABLE_ENTRY(slot, fn) .slot = fn,
#define PRN_BACKEND_TABLE(var, NAME, ENTRIES) \
    static const prn_backend var = {.name = NAME, .abi_version = PARRNN_BACKEND_ABI, ENTRIES(PRN__TABLE_ENTRY)}
#endif

/* Introspection over the list: the number of slots (PRN_SLOT_COUNT), the
 * name of slot i ("gemm"; NULL when i is out of range), its kind (a
 * prn_slot_kind; -1 out of range), whether table be sets it (0
 * for a NULL be or i out of range), and whether the context's backend
 * takes a call of the fused or basic slot i with args (the slot is set
 * and, for a FUSED slot, supports is NULL or returns nonzero; see
 * supports for args): the gate of the generic code's fused paths. */
PRNDEF int prn_backend_slot_count(void);
PRNDEF const char *prn_backend_slot_name(int slot);
PRNDEF int prn_backend_slot_kind(int slot);
PRNDEF int prn_backend_has(const prn_backend *be, int slot);
PRNDEF int prn_backend_supports(prn_context *ctx, prn_backend_slot slot, const void *args);

/* The backend table the context runs on. */
PRNDEF const prn_backend *prn_context_backend(const prn_context *ctx);
/* The state that the context's backend's create returned. */
PRNDEF void *prn_backend_state(prn_context *ctx);
/* Allocate with the context's allocator (for backends and custom ops).
 * prn_alloc sets PRN_ERR_OUT_OF_MEMORY on the context when it fails. */
PRNDEF void *prn_alloc(prn_context *ctx, size_t size);
PRNDEF void prn_free(prn_context *ctx, void *ptr);
PRNDEF int prn_context_num_threads(const prn_context *ctx);
/* For implementations of rnn_gates_forward/_backward: checks kind and the
 * head size k (set to H for ELMAN and LSTM), leaving a message that names
 * fn on failure. */
PRNDEF prn_status prn_backend_rnn_gates_check(prn_context *ctx, const char *fn, int kind, size_t H, size_t *k);
/* For implementations of rnn_layer_forward/_backward (backward != 0):
 * checks kind (ELMAN, LSTM or GRU) and that the backward of LSTM and GRU
 * has saved, leaving a message that names fn on failure. */
PRNDEF prn_status prn_backend_rnn_layer_check(prn_context *ctx, const char *fn, int kind, int backward,
                                              const void *saved);
/* For implementations of deer_iterate (adjoint 0) and deer_adjoint (1):
 * checks a (not NULL, dtype f32 or f64, kind and mode valid, the sizes H,
 * S, hk and L those of the kind; for the adjoint, dxp only for the torch
 * kinds and with dq or with dw and db), leaving a message that names fn on
 * failure. On success *kb (unless kb is NULL) is the width of the
 * Jacobian's blocks the entry solves with: the adjoint's exact Jacobian
 * (MHGRU: its heads' hk, the others S), the iteration's by a->mode (DIAG
 * 1, BLOCK hk for MHGRU, else S). */
PRNDEF prn_status prn_backend_deer_check(prn_context *ctx, const char *fn, const prn_deer_fused *a, int adjoint,
                                         size_t *kb);
/* The built-in reference backend: "reference" uses CBLAS for GEMM when
 * built with PARRNN_USE_CBLAS, and otherwise the header's AVX2 panel GEMM
 * for f32 products of M N K >= 2^18 (K >= 8) on a processor with AVX2 and
 * FMA; "reference-noblas" always runs the plain loops (the oracle). */
PRNDEF const prn_backend *prn_reference_backend(void);
PRNDEF const prn_backend *prn_reference_noblas_backend(void);
/* The generator every backend must reproduce: the 4 words of block
 * (counter) under key (seed). */
PRNDEF void prn_philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]);
/* Backends in other headers (backends/), built in by name when the
 * implementation of parrnn.h is compiled with PARRNN_WITH_OPENCL /
 * PARRNN_WITH_CUDA and linked with theirs. */
#ifdef PARRNN_WITH_OPENCL
PRNDEF const prn_backend *prn_opencl_backend(void);
#endif
#ifdef PARRNN_WITH_CUDA
PRNDEF const prn_backend *prn_cuda_backend(void);
#endif

#ifdef __cplusplus
}
#endif
#endif /* PARRNN_H */

/* ========================================================================
 * FAST F32 MATH (private; part of the implementation)
 * A file that defines PARRNN_FAST_MATH before the include gets these two
 * static inline functions without the rest of the implementation: the
 * library's test of their accuracy (tests/test_ops.c) links the
 * implementation compiled once, like every other program.
 * ====================================================================== */
#if (defined(PARRNN_IMPLEMENTATION) || defined(PARRNN_FAST_MATH)) && !defined(PRN__FAST_MATH_DONE)
#define PRN__FAST_MATH_DONE
#include <string.h>
#if defined(__GNUC__) || defined(__clang__)
#define PRN__MATH_INLINE static inline __attribute__((always_inline, unused))
#else
#define PRN__MATH_INLINE static inline
#endif
/* e^x in f32 without a libm call, so that the gate loops vectorise: round
 * x log2 e to n with the 1.5 * 2^23 trick, reduce (Cody-Waite), a degree-6
 * polynomial, scale by 2^n through the exponent bits. Within 1 ulp on
 * [-87, 87]; |x| beyond 87 (infinities too) is clamped to 87, on the bits,
 * because a float comparison may trap and so keeps gcc from vectorising
 * (without -fno-trapping-math); NaN stays NaN. libm's tanhf costs as much
 * as the step's matrix product. */
PRN__MATH_INLINE float prn__expf(float x) {
    const float magic = 12582912.0f;
    const uint32_t lim = 0x42ae0000u; /* the bits of 87.0f */
    float t, n, r, p, sc, xc;
    uint32_t ut, um, e, xi, ax, clamp;
    memcpy(&xi, &x, sizeof xi);
    ax = xi & 0x7fffffffu;
    clamp = (uint32_t)-(int32_t)(ax > lim && ax <= 0x7f800000u); /* all ones: |x| > 87, not NaN */
    xi = (xi & 0x80000000u) | (ax & ~clamp) | (lim & clamp);
    memcpy(&xc, &xi, sizeof xc); /* a new variable: writing x back keeps gcc 12 from vectorising two calls */
    t = xc * 1.44269504088896341f + magic;
    n = t - magic;
    r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    memcpy(&ut, &t, sizeof ut);
    memcpy(&um, &magic, sizeof um);
    e = (ut - um + 127u) << 23;
    memcpy(&sc, &e, sizeof sc);
    return p * sc;
}
/* tanh through e^(2x): absolute error about 1e-7 (relative error grows
 * only where tanh is below that). */
PRN__MATH_INLINE float prn__tanhf(float x) { return 1.0f - 2.0f / (1.0f + prn__expf(2.0f * x)); }
#endif /* PRN__FAST_MATH_DONE */

/* ========================================================================
 * IMPLEMENTATION
 * ====================================================================== */
#ifdef PARRNN_IMPLEMENTATION
#ifndef PARRNN_IMPLEMENTATION_DONE
#define PARRNN_IMPLEMENTATION_DONE

/* ------------------------------------------------------------------------
 * MAP OF THE IMPLEMENTATION: its sections, in file order, and the internal
 * (prn__) helpers they share. Anything not listed is private to the section
 * that defines it.
 *   Internal structures     prn_context, prn_tensor, prn__storage;
 *                           prn__gates_saved (the fused gate slots' saved
 *                           layout: the RNN layers, the reference kernels),
 *                           prn__work_nt, prn__all_finite_f32
 *   Status ... errors       prn_alloc/prn_free, prn_set_error, PRN__ERR,
 *                           PRN__CTX, prn__in_fn: every section;
 *                           prn__team (how many threads to fork): the
 *                           reference kernels and SCYFI
 *   Reference backend       (from "Reference scans" to its table,
 *                           prn_reference_backend): reached by every other
 *                           section only through the table (ctx->be); the
 *                           prn_backend_*_check argument checks are public.
 *                           The host helpers it shares with generic code
 *                           are defined above it: prn__work_nt (SCYFI's
 *                           threads), prn__all_finite_f32 (the f32 frames,
 *                           which run on the host for any backend) and
 *                           prn__cpu_avx2 (CPU features, before "Reference
 *                           scans")
 *   Context, Tensors, Tape, the tensor constructors and the tape: used by
 *   Shape helpers / ops     the ops, cells, RNN, DEER and optimisers
 *   Cells, RNN, frames      prn__cw (workspace tensors): RNN and DEER
 *   DEER                    uses the RNN's layers through prn__deer_rnn_system
 *   PWL models, SCYFI,      prn__sc_sort_eig (SCYFI and the eigenvalues)
 *   eigenvalues
 *   Optimisers              the table's sgd_update/adam_update only
 *   TEMPLATES (file end)    instantiated where a section needs a dtype
 *                           variant; see the TEMPLATES comment there
 * ---------------------------------------------------------------------- */

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PARRNN_USE_CBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
/* SSE2 for the diagonal scans (streaming stores for their outputs, four
 * steps of one channel per register; see prn__scan1_f32) and the f64
 * maxima (prn__max8_f64). */
#if !defined(PARRNN_NO_INTRINSICS) && (defined(__SSE2__) || defined(_M_X64))
#include <emmintrin.h>
#define PRN__HAVE_SSE2 1
/* gcc and clang compile AVX2 functions in any build (target attribute) and
 * tell at run time whether the processor has AVX2 and FMA: the one-channel
 * scan then takes eight steps per register */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && !defined(PARRNN_NO_AVX2)
/* g++ 12 at -O2 flags the AVX-512 header's own "__m512 __Y = __Y" (its
 * undefined-value idiom) as maybe-uninitialized once inlined (C++ enables
 * -Winit-self): silenced for the header's lines only */
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#define PRN__HAVE_AVX2 1
#define PRN__AVX2 __attribute__((target("avx2,fma")))
#if !defined(PARRNN_NO_AVX512)
#define PRN__HAVE_AVX512 1
#define PRN__AVX512 __attribute__((target("avx512f,avx2,fma")))
#endif
#endif
#endif

/* The implementation includes this file again to instantiate its
 * templates (TEMPLATES, at the end of the file); a quoted include looks
 * beside the including file first, so this finds the file itself. A copy
 * renamed in a project defines PARRNN_SELF_PATH to its new name. */
#ifndef PARRNN_SELF_PATH
#define PARRNN_SELF_PATH "parrnn.h"
#endif

#if defined(PARRNN_MALLOC) != defined(PARRNN_FREE)
#error "parrnn: define both PARRNN_MALLOC and PARRNN_FREE, or neither"
#endif
#ifndef PARRNN_MALLOC
#define PARRNN_MALLOC(size) malloc(size)
#define PARRNN_FREE(ptr) free(ptr)
#endif

/* Private functions are static and carry no unused attribute, so that the
 * compiler's unused-function warning finds dead code: one that only some
 * configurations need (a part left out, an instruction set, LAPACK) sits
 * under the same #if as its callers. Public functions, static with
 * PARRNN_STATIC, are marked unused there: a program need not call them all. */
#if defined(__GNUC__) || defined(__clang__)
#define PRN__UNUSED __attribute__((unused))
#else
#define PRN__UNUSED
#endif
#define PRN__FN static
/* Small functions called inside loops that must vectorise (gcc will not
 * inline prn__expf five times into one loop on its own judgement). */
#if defined(__GNUC__) || defined(__clang__)
#define PRN__FN_INLINE static inline __attribute__((always_inline))
#else
#define PRN__FN_INLINE static inline
#endif
#ifdef PARRNN_STATIC
#define PRN__DEF static PRN__UNUSED
#else
#define PRN__DEF
#endif

/* LEAVING PARTS OUT (top of the file): a reference to a function of a
 * left-out part (a backend table's entry, an op's backward function) is
 * NULL, so that nothing refers to it and the compiler drops it. */
#ifdef PARRNN_NO_SCYFI
#define PRN__IF_SCYFI(f) NULL
#else
#define PRN__IF_SCYFI(f) f
#endif
#ifdef PARRNN_NO_DEER
#define PRN__IF_DEER(f) NULL
#else
#define PRN__IF_DEER(f) f
#endif
#ifdef PARRNN_NO_TRAINING
#define PRN__IF_TRAINING(f) NULL
#else
#define PRN__IF_TRAINING(f) f
#endif

/* OpenMP: loops parallelise only when work is large enough to pay the
 * fork; every function that uses PRN__PARFOR declares prn__nt/prn__par. */
/* PRN__SIMD marks inner loops free of loop-carried dependences: with gcc
 * and OpenMP they vectorise even at -O2 (whose cost model refuses loops that
 * need a runtime alias check); without OpenMP, -O3 vectorises them. clang
 * vectorises such loops by itself and reports `omp simd` loops it cannot
 * vectorise (calls into libm) as warnings, so it gets no simd pragmas. */
#ifdef _OPENMP
#define PRN__PRAGMA(x) _Pragma(#x)
#define PRN__PARFOR PRN__PRAGMA(omp parallel for num_threads(prn__nt) schedule(static) if(prn__par))
/* the same, or-ing v over the team */
#define PRN__PARFOR_OR(v) PRN__PRAGMA(omp parallel for num_threads(prn__nt) schedule(static) if(prn__par) reduction(|:v))
#else
#define PRN__PARFOR
#define PRN__PARFOR_OR(v)
#endif
#if defined(_OPENMP) && !defined(__clang__)
#define PRN__PARFOR_SIMD PRN__PRAGMA(omp parallel for simd num_threads(prn__nt) schedule(static) if(prn__par))
#define PRN__SIMD PRN__PRAGMA(omp simd)
#define PRN__SIMD_SUM(s) PRN__PRAGMA(omp simd reduction(+:s))
#else
#define PRN__PARFOR_SIMD PRN__PARFOR
#define PRN__SIMD
#define PRN__SIMD_SUM(s)
#endif
#define PRN__PAR_MIN 32768
/* A row's sum (reduce, inner 1) goes by chunks of prn__sum_chunk(n)
 * elements, at most PRN__SUM_CHUNKS of them: a split set by n alone,
 * whatever the threads, so the bits are too; each chunk in PRN__SUM_LANES
 * partial sums. */
#define PRN__SUM_CHUNKS 256
#define PRN__SUM_LANES 16
PRN__FN_INLINE size_t prn__sum_chunk(size_t n) {
    const size_t c = (n + PRN__SUM_CHUNKS - 1) / PRN__SUM_CHUNKS;
    return c < 8192 ? 8192 : (c + 63) / 64 * 64;
}
/* f64 maxima of eight lanes over x's first n / 8 * 8 elements into m[8]
 * (m[j] = x[k] > m[j] ? x[k] : m[j], each lane in order); the compiler
 * left this f64 loop scalar, at 0.75 of the triad bandwidth. MAXPD(v, m)
 * is v > m ? v : m, NaNs and zeros included. Returns the elements done. */
PRN__FN_INLINE size_t prn__max8_f64(const double *x, size_t n, double *m) {
    size_t k = 0;
#ifdef PRN__HAVE_SSE2
    __m128d a = _mm_loadu_pd(m), b = _mm_loadu_pd(m + 2), c = _mm_loadu_pd(m + 4), d = _mm_loadu_pd(m + 6);
    for (; k + 8 <= n; k += 8) {
        a = _mm_max_pd(_mm_loadu_pd(x + k), a);
        b = _mm_max_pd(_mm_loadu_pd(x + k + 2), b);
        c = _mm_max_pd(_mm_loadu_pd(x + k + 4), c);
        d = _mm_max_pd(_mm_loadu_pd(x + k + 6), d);
    }
    _mm_storeu_pd(m, a); _mm_storeu_pd(m + 2, b); _mm_storeu_pd(m + 4, c); _mm_storeu_pd(m + 6, d);
#else
    size_t j;
    for (; k + 8 <= n; k += 8)
        for (j = 0; j < 8; ++j) m[j] = x[k + j] > m[j] ? x[k + j] : m[j];
#endif
    return k;
}
#define PRN__PAR_SETUP(ctx, work)                                              \
    int prn__nt = (work) >= PRN__PAR_MIN ? prn__team(ctx) : 1;                 \
    int prn__par = prn__nt > 1;                                                \
    (void)prn__nt; (void)prn__par

/* ------------------------------------------------------------------------
 * Internal structures
 * ---------------------------------------------------------------------- */
typedef struct prn__storage {
    void *buf;
    size_t bytes;
    int refs;
    /* Bumped by every write through the API into existing data (upload,
     * fill, optimiser steps, gradient clipping and accumulation); a record
     * keeps the versions it saw, and prn_backward refuses a record whose
     * tensors changed since. Per storage, so views see each other's writes. */
    unsigned long version;
} prn__storage;

struct prn_tensor {
    prn_context *ctx;
    prn_dtype dtype;
    int ndim;
    size_t shape[PRN_MAX_DIMS];
    size_t numel;
    prn__storage *st;
    int refs;
    int requires_grad;
    int is_leaf;          /* not the output of a recorded op */
    prn_tensor *grad;     /* committed gradient (leaves)     */
    prn_tensor *pending;  /* gradient during prn_backward     */
    int mark;             /* prn_backward: reached from the loss (1), its record found (2) */
    prn_tensor *prev, *next; /* context's list of live tensors */
};

typedef struct prn__node {
    const char *name;
    prn_backward_fn backward;
    void *user;
    void (*free_user)(void *);
    prn_tensor *in[PRN_MAX_OP_INPUTS];
    int needs[PRN_MAX_OP_INPUTS];
    unsigned long ver[PRN_MAX_OP_INPUTS + 1]; /* storage versions at recording: inputs, then out */
    int n_in;
    int drop;             /* prn_backward: to be released */
    prn_tensor *out;
    double f[4];
    int i[8];
} prn__node;

struct prn_context {
    const prn_backend *be;
    void *bstate;
    prn_allocator al;
    uint64_t seed, counter;
    int num_threads;
    prn_log_fn log;
    void *log_user;
    const char *device; /* prn_config.device, only while the backend's create runs */
    size_t max_file_bytes; /* prn_config.max_file_bytes, default filled in */
    prn_status status;
    char msg[512];
    prn__node *tape;
    size_t tape_n, tape_cap;
    int no_grad;
    int in_backward;
    prn_tensor *live;
    size_t n_live;
    double team_next, team_wait; /* prn__team: when to look again (omp_get_wtime), and how long it waits then */
    int team_one;                /* prn__team: the last look found a thread that was not running */
};

/* V, the values a fused gate step (rnn_gates_forward) saves per unit for its
 * backward: ELMAN 0, LSTM 5 (i f g o tanh c'), GRU and MHGRU 4 (r z n hn).
 * Part of the slot's contract, so generic code (the RNN layers sizing
 * saved) and every backend's kernels agree on it. */
PRN__FN size_t prn__gates_saved(int kind) { return kind == PRN_RNN_LSTM ? 5 : kind == PRN_RNN_ELMAN ? 0 : 4; }
/* Threads for a region of work multiply-adds: at most nt, each with at
 * least PRN__PAR_MIN of them (1: run it serially). */
#ifndef PARRNN_NO_SCYFI
PRN__FN int prn__work_nt(double work, int nt) {
    double w = work / PRN__PAR_MIN;
    return w < nt ? (w < 1 ? 1 : (int)w) : nt;
}
#endif /* PARRNN_NO_SCYFI */
/* An exponent of all ones is NaN or Inf: OR over the lanes of a block, by
 * integer operations the compiler vectorises (no float compare, no
 * temporaries), one pass at memory speed. f32's test is also the float
 * frames' (memcpy: no aliasing of the caller's floats; it vectorises as a
 * plain load does). */
PRN__FN int prn__all_finite_f32(const float *x, size_t n) {
    uint32_t u, bad = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        memcpy(&u, x + i, sizeof u);
        bad |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
    }
    return !bad;
}

/* ------------------------------------------------------------------------
 * Status, dtypes, allocation, errors
 * ---------------------------------------------------------------------- */
PRN__DEF const char *prn_status_string(prn_status s) {
    switch (s) {
    case PRN_OK: return "ok";
    case PRN_ERR_NULL_ARGUMENT: return "null argument";
    case PRN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case PRN_ERR_SHAPE: return "shape mismatch";
    case PRN_ERR_DTYPE: return "wrong dtype";
    case PRN_ERR_CONTEXT_MISMATCH: return "tensors from different contexts";
    case PRN_ERR_OVERFLOW: return "size overflow";
    case PRN_ERR_OUT_OF_MEMORY: return "out of memory";
    case PRN_ERR_UNSUPPORTED: return "unsupported by backend";
    case PRN_ERR_NOT_FOUND: return "not found";
    case PRN_ERR_STATE: return "invalid state";
    case PRN_ERR_BACKEND: return "backend failure";
    case PRN_ERR_NO_DEVICE: return "no device for the backend";
    case PRN_ERR_IO: return "file input/output error";
    case PRN_ERR_FORMAT: return "invalid file format";
    case PRN_ERR_NONFINITE: return "NaN or Inf in a result";
    case PRN_ERR_REMOTE: return "another process failed";
    default: return "unknown status";
    }
}

PRN__DEF size_t prn_dtype_size(prn_dtype d) {
    return d == PRN_F64 ? 8 : 4;
}
PRN__DEF const char *prn_dtype_name(prn_dtype d) {
    return d == PRN_F32 ? "f32" : d == PRN_F64 ? "f64" : d == PRN_I32 ? "i32" : "?";
}

/* The allocator alone, without touching the context's error state. */
PRN__FN void *prn__alloc_quiet(prn_context *ctx, size_t size) {
    if (size == 0) size = 1;
    return ctx->al.alloc ? ctx->al.alloc(ctx->al.user, size) : PARRNN_MALLOC(size);
}
PRN__DEF void *prn_alloc(prn_context *ctx, size_t size) {
    void *p;
    if (!ctx) return NULL;
    p = prn__alloc_quiet(ctx, size);
    if (!p) prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "prn_alloc: allocation of %lu bytes failed",
                          (unsigned long)size);
    return p;
}
PRN__DEF void prn_free(prn_context *ctx, void *ptr) {
    if (!ctx || !ptr) return;
    if (ctx->al.free) ctx->al.free(ctx->al.user, ptr);
    else PARRNN_FREE(ptr);
}

PRN__DEF prn_status prn_set_error(prn_context *ctx, prn_status status, const char *fmt, ...) {
    va_list ap;
    char buf[sizeof ctx->msg];
    if (!ctx) return status;
    ctx->status = status;
    va_start(ap, fmt);
    /* via a local buffer: an argument may be prn_last_error(ctx) itself */
    if (vsnprintf(buf, sizeof buf, fmt, ap) < 0) buf[0] = 0;
    va_end(ap);
    memcpy(ctx->msg, buf, sizeof buf);
    if (ctx->log) ctx->log(ctx->log_user, PRN_LOG_ERROR, ctx->msg);
    return status;
}
PRN__DEF prn_status prn_last_status(const prn_context *ctx) { return ctx ? ctx->status : PRN_ERR_NULL_ARGUMENT; }
PRN__DEF const char *prn_last_error(const prn_context *ctx) { return ctx ? ctx->msg : "prn_last_error: ctx is NULL"; }
PRN__DEF void prn_clear_error(prn_context *ctx) { if (ctx) { ctx->status = PRN_OK; ctx->msg[0] = 0; } }
PRN__DEF size_t prn_live_tensors(const prn_context *ctx) { return ctx ? ctx->n_live : 0; }
PRN__DEF void *prn_backend_state(prn_context *ctx) { return ctx ? ctx->bstate : NULL; }
PRN__DEF const prn_backend *prn_context_backend(const prn_context *ctx) { return ctx ? ctx->be : NULL; }
PRN__DEF int prn_context_num_threads(const prn_context *ctx) {
#ifdef _OPENMP
    int mx = omp_get_max_threads();
    return ctx && ctx->num_threads > 0 && ctx->num_threads < mx ? ctx->num_threads : mx;
#else
    (void)ctx;
    return 1;
#endif
}
/* The threads a parallel region of the library takes now: the context's
 * cap, or one while the machine is busy. A region's threads meet at its
 * end, so one that another process has preempted holds up the others
 * for the rest of its time slice (milliseconds), and a region costs that
 * much more than it saves whenever it is short. So now and then (every
 * 20 ms of calls) the context opens an empty region and looks at how late
 * its threads arrive: one later than PRN__TEAM_LATE was not running, and
 * the context's regions take one thread until the next look, which comes
 * after 20 ms, then 40 ms, ... up to 0.5 s while it keeps finding the
 * machine busy. Results do not depend on it: every region that uses it
 * computes the same bits with any number of threads. */
#define PRN__TEAM_LATE 3e-4
PRN__FN int prn__team(prn_context *ctx) {
    int nt = prn_context_num_threads(ctx);
#ifdef _OPENMP
    double now;
    if (!ctx || nt < 2 || omp_in_parallel()) return nt;
    now = omp_get_wtime();
    if (now >= ctx->team_next) {
        double late = 0, t0 = omp_get_wtime();
        PRN__PRAGMA(omp parallel num_threads(nt) reduction(max:late))
        late = omp_get_wtime() - t0;
        if (late > PRN__TEAM_LATE) {
            ctx->team_one = 1;
            ctx->team_wait = ctx->team_wait < 0.02 ? 0.02 : ctx->team_wait < 0.25 ? 2 * ctx->team_wait : 0.5;
        } else {
            ctx->team_one = 0;
            ctx->team_wait = 0.02;
        }
        ctx->team_next = omp_get_wtime() + ctx->team_wait;
    }
    return ctx->team_one ? 1 : nt;
#else
    (void)ctx;
    return nt;
#endif
}
PRN__DEF const char *prn_context_backend_name(const prn_context *ctx) { return ctx ? ctx->be->name : ""; }
PRN__DEF void prn_seed(prn_context *ctx, uint64_t seed) { if (ctx) { ctx->seed = seed; ctx->counter = 0; } }

#define PRN__ERR(ctx, st, ...) prn_set_error((ctx), (st), __VA_ARGS__)
#define PRN__TRY(expr) do { prn_status prn__s = (expr); if (prn__s != PRN_OK) return prn__s; } while (0)
#define PRN__CTX(ctx, fn) do { if (!(ctx)) return PRN_ERR_NULL_ARGUMENT; } while (0)
/* Fails with PRN_ERR_UNSUPPORTED when the backend left the entry NULL. */
#define PRN__NEED(ctx, entry, fn)                                               \
    do { if (!(ctx)->be->entry)                                                 \
        return PRN__ERR((ctx), PRN_ERR_UNSUPPORTED,                            \
            "%s: backend '%s' does not implement primitive '%s'",             \
            (fn), (ctx)->be->name, #entry); } while (0)

/* A public function built on other public ones: when st is a failure whose
 * message names an inner function, prefix it with fn (the one the caller
 * called), e.g. "prn_cross_entropy: prn_log_softmax: ...". Returns st. */
PRN__FN prn_status prn__in_fn(prn_context *ctx, const char *fn, prn_status st) {
    size_t n = strlen(fn);
    if (st != PRN_OK && !(strncmp(ctx->msg, fn, n) == 0 && ctx->msg[n] == ':')) {
        char inner[sizeof ctx->msg];
        memcpy(inner, ctx->msg, sizeof inner);
        inner[sizeof inner - 1] = 0;
        if (snprintf(ctx->msg, sizeof ctx->msg, "%s: %s", fn, inner) < 0) ctx->msg[0] = 0;
    }
    return st;
}

/* ------------------------------------------------------------------------
 * Philox4x32-10 counter-based generator
 * ---------------------------------------------------------------------- */
PRN__DEF void prn_philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    int r;
    for (r = 0; r < 10; ++r) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Element i of a draw uses block (counter + i): uniform takes 24 bits (f32)
 * or 53 bits (f64) of words 0-1; normal is Box-Muller (cosine branch) of
 * u1 in (0,1] from words 0-1 and u2 in [0,1) from words 2-3, in double. */
PRN__FN double prn__random_value(prn_random_dist dist, prn_dtype dtype, uint64_t seed,
                                 uint64_t block, double p0, double p1) {
    uint32_t w[4];
    prn_philox4x32(seed, block, w);
    if (dist == PRN_RANDOM_UNIFORM) {
        double u = dtype == PRN_F32 ? (double)(w[0] >> 8) * (1.0 / 16777216.0)
                                    : (double)(((uint64_t)w[0] << 21) ^ (w[1] >> 11)) * (1.0 / 9007199254740992.0);
        double v = p0 + (p1 - p0) * u;
        if (dtype == PRN_F32) v = (double)(float)v; /* clamp the value as stored: f32 may round up to hi */
        return v < p1 || p1 <= p0 ? v : p0; /* keep [lo, hi) under rounding */
    } else {
        double u1 = ((double)(((uint64_t)w[0] << 21) ^ (w[1] >> 11)) + 1.0) * (1.0 / 9007199254740992.0);
        double u2 = (double)(((uint64_t)w[2] << 21) ^ (w[3] >> 11)) * (1.0 / 9007199254740992.0);
        return p0 + p1 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
    }
}

/* ------------------------------------------------------------------------
 * Reference C backend: the oracle every other backend is tested against.
 * Plain loops written so compilers vectorise the innermost one; OpenMP
 * across the outer one when the work is large.
 * ---------------------------------------------------------------------- */
/* Large buffers are kept for reuse when freed: ops allocate their outputs
 * afresh, and memory the C library returns to the kernel comes back as page
 * faults on every call (4x slower elementwise ops on 64 MiB tensors). Only
 * exact sizes are reused, which is what a training loop repeats; the cache
 * is bounded and emptied before an allocation is allowed to fail. The bound
 * scales with the peak of the live buffers: a fixed one (512 MiB before)
 * made every output above it fresh pages on each call, a scan of 819 MB per
 * array then ran at 0.15 of the memory bandwidth (200k page faults a call). */
#define PRN__CACHE_SLOTS 32
#define PRN__CACHE_MIN ((size_t)1 << 16)
#define PRN__CACHE_MAX ((size_t)512 << 20) /* the bound's floor */
#define PRN__HDR 32 /* bytes before each buffer: its size; keeps the allocator's alignment */
typedef struct prn__ref_state {
    void *block[PRN__CACHE_SLOTS]; /* oldest first */
    int n;
    size_t bytes;       /* in the cache */
    size_t live, peak;  /* of the buffers handed out (not in the cache), and their peak */
} prn__ref_state;
PRN__FN size_t prn__ref_cache_bound(const prn__ref_state *s) { return s->peak > PRN__CACHE_MAX ? s->peak : PRN__CACHE_MAX; }

PRN__FN prn_status prn__ref_create(prn_context *ctx, void **state) {
    prn__ref_state *s = (prn__ref_state *)prn_alloc(ctx, sizeof *s);
    if (!s) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "prn_context_create: out of memory for the reference backend");
    memset(s, 0, sizeof *s);
    *state = s;
    return PRN_OK;
}
PRN__FN size_t prn__ref_size(const void *buf) { return *(const size_t *)((const char *)buf - PRN__HDR); }
PRN__FN void prn__ref_drop_oldest(prn_context *ctx, prn__ref_state *s) {
    s->bytes -= prn__ref_size(s->block[0]);
    prn_free(ctx, (char *)s->block[0] - PRN__HDR);
    memmove(s->block, s->block + 1, (size_t)(--s->n) * sizeof s->block[0]);
}
PRN__FN void prn__ref_destroy(prn_context *ctx, void *state) {
    prn__ref_state *s = (prn__ref_state *)state;
    if (!s) return;
    while (s->n) prn__ref_drop_oldest(ctx, s);
    prn_free(ctx, s);
}
PRN__FN prn_status prn__ref_buf_alloc(prn_context *ctx, size_t bytes, void **buf) {
    prn__ref_state *s = (prn__ref_state *)prn_backend_state(ctx);
    char *p;
    int i;
    if (s && bytes >= PRN__CACHE_MIN)
        for (i = s->n - 1; i >= 0; --i)
            if (prn__ref_size(s->block[i]) == bytes) {
                *buf = s->block[i];
                s->bytes -= bytes;
                memmove(s->block + i, s->block + i + 1, (size_t)(s->n - i - 1) * sizeof s->block[0]);
                s->n--;
                s->live += bytes;
                return PRN_OK;
            }
    p = bytes <= (size_t)-1 - PRN__HDR ? (char *)prn__alloc_quiet(ctx, bytes + PRN__HDR) : NULL;
    if (!p && s && s->n && bytes <= (size_t)-1 - PRN__HDR) { /* give the cache back and try again */
        while (s->n) prn__ref_drop_oldest(ctx, s);
        p = (char *)prn__alloc_quiet(ctx, bytes + PRN__HDR);
    }
    if (!p) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY,
                            "buf_alloc: backend buffer of %lu bytes could not be allocated",
                            (unsigned long)bytes);
    *(size_t *)p = bytes;
    *buf = p + PRN__HDR;
    if (s) {
        s->live += bytes;
        if (s->live > s->peak) s->peak = s->live;
    }
    return PRN_OK;
}
PRN__FN void prn__ref_buf_free(prn_context *ctx, void *buf) {
    prn__ref_state *s = (prn__ref_state *)prn_backend_state(ctx);
    size_t bytes;
    if (!buf) return;
    bytes = prn__ref_size(buf);
    if (s) s->live -= bytes;
    if (!s || bytes < PRN__CACHE_MIN || bytes > prn__ref_cache_bound(s)) { prn_free(ctx, (char *)buf - PRN__HDR); return; }
    while (s->n && (s->n == PRN__CACHE_SLOTS || s->bytes + bytes > prn__ref_cache_bound(s))) prn__ref_drop_oldest(ctx, s);
    s->block[s->n++] = buf;
    s->bytes += bytes;
}
PRN__FN prn_status prn__ref_buf_upload(prn_context *ctx, void *dst, size_t off, const void *src, size_t bytes) {
    (void)ctx;
    if (bytes) memcpy((char *)dst + off, src, bytes);
    return PRN_OK;
}
PRN__FN prn_status prn__ref_buf_download(prn_context *ctx, const void *src, size_t off, void *dst, size_t bytes) {
    (void)ctx;
    if (bytes) memcpy(dst, (const char *)src + off, bytes);
    return PRN_OK;
}
PRN__FN prn_status prn__ref_buf_copy(prn_context *ctx, void *dst, size_t doff, const void *src,
                                     size_t soff, size_t bytes) {
    (void)ctx;
    if (bytes) memmove((char *)dst + doff, (const char *)src + soff, bytes);
    return PRN_OK;
}

/* tiles of the copies' and binary ops' innermost axis, so that a single long row still uses every thread */
#define PRN__TILE 8192
/* prn__fill_f32, _f64, _i32, prn__scopy_rows_<sfx>, prn__scopy_tiles_<sfx>: TEMPLATE COPY */
#define PRN__TPL_COPY
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_COPY
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#define PRN__TPL_COPY
#define PRN__T int32_t
#define PRN__SFX i32
#include PARRNN_SELF_PATH
/* prn__unary_f32/_f64, prn__binary_*, prn__gemm_loops_*, prn__reduce_sum_*, prn__reduce_max_*, prn__argmax_*,
 * prn__softmax_*, prn__sgd_*, prn__adam_*: TEMPLATE OPS */
#define PRN__TPL_OPS
#define PRN__T float
#define PRN__SFX f32
#define PRN__EXP expf
#define PRN__LOG logf
#define PRN__TANH tanhf
#define PRN__SQRT sqrtf
#define PRN__POW powf
#define PRN__FABS fabsf
#include PARRNN_SELF_PATH
#define PRN__TPL_OPS
#define PRN__T double
#define PRN__SFX f64
#define PRN__EXP exp
#define PRN__LOG log
#define PRN__TANH tanh
#define PRN__SQRT sqrt
#define PRN__POW pow
#define PRN__FABS fabs
#include PARRNN_SELF_PATH
PRN__FN prn_status prn__ref_fill(prn_context *ctx, prn_dtype dtype, void *y, size_t n, double value) {
    PRN__PAR_SETUP(ctx, n);
    if (dtype == PRN_F32) prn__fill_f32((float *)y, n, value, prn__nt, prn__par);
    else if (dtype == PRN_F64) prn__fill_f64((double *)y, n, value, prn__nt, prn__par);
    else prn__fill_i32((int32_t *)y, n, value, prn__nt, prn__par);
    return PRN_OK;
}

PRN__FN prn_status prn__ref_unary(prn_context *ctx, prn_unary_op op, prn_dtype dtype, size_t n,
                                  const void *x, void *y, double alpha, double beta) {
    PRN__PAR_SETUP(ctx, n);
    if (dtype == PRN_F32 ? prn__unary_f32(op, n, (const float *)x, (float *)y, alpha, beta, prn__nt, prn__par)
                         : prn__unary_f64(op, n, (const double *)x, (double *)y, alpha, beta, prn__nt, prn__par))
        return PRN_OK;
    return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "unary: unknown op %d", (int)op);
}

PRN__FN prn_status prn__ref_binary(prn_context *ctx, prn_binary_op op, prn_dtype dtype,
                                   const size_t shape[4], const void *a, const size_t as[4],
                                   const void *b, const size_t bs[4], void *y) {
    PRN__PAR_SETUP(ctx, shape[0] * shape[1] * shape[2] * shape[3]);
    if (shape[0] * shape[1] * shape[2] * shape[3] == 0) return PRN_OK;
    if ((unsigned)op >= (unsigned)PRN_BINARY_COUNT)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "binary: unknown op %d", (int)op);
    if (dtype == PRN_F32)
        prn__binary_f32(op, shape, (const float *)a, as, (const float *)b, bs, (float *)y, prn__nt, prn__par);
    else
        prn__binary_f64(op, shape, (const double *)a, as, (const double *)b, bs, (double *)y, prn__nt, prn__par);
    return PRN_OK;
}

PRN__FN prn_status prn__ref_strided_copy(prn_context *ctx, prn_dtype dtype, const size_t shape[4],
                                         const void *x, size_t x_off, const size_t xs_in[4],
                                         void *y, size_t y_off, const size_t ys_in[4]) {
    size_t shp[4], xs[4], ys[4], s1, s2, s3, xs3, ys3, rows, nch;
    int q, it;
    memcpy(shp, shape, sizeof shp); memcpy(xs, xs_in, sizeof xs); memcpy(ys, ys_in, sizeof ys);
    for (it = 0; it < 4; ++it) {
        if (shp[3] == 1 && shp[0] * shp[1] * shp[2] > 1) { /* drop a unit inner axis */
            for (q = 3; q > 0; --q) { shp[q] = shp[q - 1]; xs[q] = xs[q - 1]; ys[q] = ys[q - 1]; }
            shp[0] = 1; xs[0] = ys[0] = 0;
        } else if (shp[2] > 1 && xs[2] == shp[3] * xs[3] && ys[2] == shp[3] * ys[3]) { /* merge 2 into 3 */
            shp[3] *= shp[2]; shp[2] = 1;
        } else break;
    }
    s1 = shp[1]; s2 = shp[2]; s3 = shp[3]; xs3 = xs[3]; ys3 = ys[3];
    rows = shp[0] * s1 * s2; nch = (s3 + PRN__TILE - 1) / PRN__TILE;
    PRN__PAR_SETUP(ctx, rows * s3);
    if (rows * s3 == 0) return PRN_OK;
    if (shp[0] * s1 == 1 && s2 > 1 && xs[2] == 0 && xs3 == 1 && ys3 == 1 && ys[2] == s3) {
        /* one row repeated into contiguous rows (a bias into every row of a
         * product): the row, then copies of what is written, doubling, so
         * that short rows cost no loop each */
        const size_t es = dtype == PRN_F64 ? 8 : 4, row = s3 * es;
        char *yb = (char *)y + y_off * es;
        size_t done = 1, c;
        memcpy(yb, (const char *)x + x_off * es, row);
        for (; done < s2; done += c) {
            c = done < s2 - done ? done : s2 - done;
            memcpy(yb + done * row, yb, c * row);
        }
        return PRN_OK;
    }
    if (nch == 1 && s2 > 1) {
        if (dtype == PRN_F64) prn__scopy_rows_f64(shp, (const double *)x + x_off, xs, (double *)y + y_off, ys, prn__nt, prn__par);
        else if (dtype == PRN_F32) prn__scopy_rows_f32(shp, (const float *)x + x_off, xs, (float *)y + y_off, ys, prn__nt, prn__par);
        else prn__scopy_rows_i32(shp, (const int32_t *)x + x_off, xs, (int32_t *)y + y_off, ys, prn__nt, prn__par);
    } else if (dtype == PRN_F64) prn__scopy_tiles_f64(shp, (const double *)x + x_off, xs, (double *)y + y_off, ys, prn__nt, prn__par);
    else if (dtype == PRN_F32) prn__scopy_tiles_f32(shp, (const float *)x + x_off, xs, (float *)y + y_off, ys, prn__nt, prn__par);
    else prn__scopy_tiles_i32(shp, (const int32_t *)x + x_off, xs, (int32_t *)y + y_off, ys, prn__nt, prn__par);
    return PRN_OK;
}

#ifdef PRN__HAVE_AVX2
PRN__FN_INLINE int prn__cpu_avx2(void);
/* C = alpha A op(B) + beta C with K = 1 (f32), A a column (lda 1), C's rows
 * contiguous (ldc N), N <= 64: the input projection of a layer with one
 * input, where a BLAS call costs more than the products (rows of N values,
 * a few per cache line). Eight rows at a time: their 8 N values of C are N
 * vectors, lane l of vector v being row (8 v + l) / N, column
 * (8 v + l) % N, so each is a permutation of the eight A values times a
 * vector of weights, both tabled once. Every value is rounded as
 * c' + alpha (a w) (alpha 1: c' + a w), c' = 0, c or beta c: the same in
 * the vector loop and the scalar rows past the last multiple of 8. */
#define PRN__GEMM_K1_MAXN 64
PRN__FN int prn__gemm_k1_ok(prn_dtype dtype, int trans_a, size_t M, size_t N, size_t K, size_t lda, size_t ldc) {
    return dtype == PRN_F32 && !trans_a && K == 1 && lda == 1 && ldc == N && N && N <= PRN__GEMM_K1_MAXN && M >= 64 &&
           prn__cpu_avx2();
}
PRN__FN PRN__AVX2 void prn__gemm_k1_f32x(int trans_b, size_t M, size_t N, float alpha, const float *A, size_t sa,
                                        const float *B, size_t ldb, size_t sb, float beta, float *C, size_t sc,
                                        size_t batch) {
    int32_t idx[PRN__GEMM_K1_MAXN * 8];
    float wv[PRN__GEMM_K1_MAXN * 8], w[PRN__GEMM_K1_MAXN];
    const __m256 al = _mm256_set1_ps(alpha), bt = _mm256_set1_ps(beta);
    size_t bi, i, j, v;
    for (v = 0; v < 8 * N; ++v) idx[v] = (int32_t)(v / N);
    for (bi = 0; bi < batch; ++bi) {
        const float *a = A + bi * sa, *b = B + bi * sb;
        float *c = C + bi * sc;
        for (j = 0; j < N; ++j) w[j] = trans_b ? b[j * ldb] : b[j]; /* op(B) [1, N] */
        for (v = 0; v < 8 * N; ++v) wv[v] = w[v % N];
        for (i = 0; i + 8 <= M; i += 8) {
            const __m256 a8 = _mm256_loadu_ps(a + i);
            float *ci = c + i * N;
            for (v = 0; v < N; ++v) {
                __m256 p = _mm256_mul_ps(_mm256_permutevar8x32_ps(a8, _mm256_loadu_si256((const __m256i *)(idx + 8 * v))),
                                         _mm256_loadu_ps(wv + 8 * v));
                __m256 cv = beta == 0.0f ? _mm256_setzero_ps() : _mm256_loadu_ps(ci + 8 * v);
                if (alpha != 1.0f) p = _mm256_mul_ps(p, al);
                if (beta != 0.0f && beta != 1.0f) cv = _mm256_mul_ps(cv, bt);
                _mm256_storeu_ps(ci + 8 * v, _mm256_add_ps(cv, p));
            }
        }
        for (; i < M; ++i)
            for (j = 0; j < N; ++j) {
                float p = a[i] * w[j], cv = beta == 0.0f ? 0.0f : c[i * N + j];
                if (alpha != 1.0f) p *= alpha;
                if (beta != 0.0f && beta != 1.0f) cv *= beta;
                c[i * N + j] = cv + p;
            }
    }
}
#endif
PRN__FN prn_status prn__ref_gemm_loops(prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b,
                                       size_t M, size_t N, size_t K, double alpha,
                                       const void *A, size_t lda, size_t sa,
                                       const void *B, size_t ldb, size_t sb,
                                       double beta, void *C, size_t ldc, size_t sc, size_t batch) {
    PRN__PAR_SETUP(ctx, batch * M * N * (K + 1) / 8);
#ifdef PRN__HAVE_AVX2
    if (prn__gemm_k1_ok(dtype, trans_a, M, N, K, lda, ldc)) {
        prn__gemm_k1_f32x(trans_b, M, N, (float)alpha, (const float *)A, sa, (const float *)B, ldb, sb, (float)beta,
                          (float *)C, sc, batch);
        return PRN_OK;
    }
#endif
    if (dtype == PRN_F32)
        prn__gemm_loops_f32(trans_a, trans_b, M, N, K, alpha, (const float *)A, lda, sa, (const float *)B, ldb, sb, beta,
                            (float *)C, ldc, sc, batch, prn__nt, prn__par);
    else
        prn__gemm_loops_f64(trans_a, trans_b, M, N, K, alpha, (const double *)A, lda, sa, (const double *)B, ldb, sb,
                            beta, (double *)C, ldc, sc, batch, prn__nt, prn__par);
    return PRN_OK;
}

#ifdef PRN__HAVE_AVX2
PRN__FN PRN__AVX2 prn_status prn__gemm_f32x(prn_context *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                            float alpha, const float *A, size_t lda, size_t sa, const float *B,
                                            size_t ldb, size_t sb, float beta, float *C, size_t ldc, size_t sc,
                                            size_t batch);
/* An f32 product large enough (M N K >= 2^18, K >= 8) for parrnn's AVX2
 * panel GEMM (prn__gemm_f32x) to pay its packing, on a processor with AVX2
 * and FMA. */
PRN__FN int prn__gemm_f32x_pays(prn_dtype dtype, size_t M, size_t N, size_t K, size_t batch) {
    return dtype == PRN_F32 && (double)M * (double)N * (double)K * (double)batch >= 262144.0 && K >= 8 &&
           prn__cpu_avx2();
}
#endif
#ifndef PARRNN_USE_CBLAS
/* "reference" without CBLAS: f32 products that pay it on the AVX2 panel
 * GEMM (prn__gemm_f32x: 5-10x the plain loops, so a GRU's input projection
 * and its gradient, or prn_matmul, no longer need a BLAS to be fast; no
 * fallback when it fails, so that a product's rounding never depends on an
 * allocation), the rest on the loops of "reference-noblas", the oracle. */
PRN__FN prn_status prn__ref_gemm_panel(prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b,
                                       size_t M, size_t N, size_t K, double alpha,
                                       const void *A, size_t lda, size_t sa,
                                       const void *B, size_t ldb, size_t sb,
                                       double beta, void *C, size_t ldc, size_t sc, size_t batch) {
#ifdef PRN__HAVE_AVX2
    if (prn__gemm_f32x_pays(dtype, M, N, K, batch)) /* (K >= 8: never the loops' K = 1 kernel) */
        return prn__gemm_f32x(ctx, trans_a, trans_b, M, N, K, (float)alpha, (const float *)A, lda, sa,
                              (const float *)B, ldb, sb, (float)beta, (float *)C, ldc, sc, batch);
#endif
    return prn__ref_gemm_loops(ctx, dtype, trans_a, trans_b, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc,
                               sc, batch);
}
#endif

#ifdef PARRNN_USE_CBLAS
#ifdef PRN__HAVE_AVX2
PRN__FN int prn__cblas_weak_f32(prn_context *ctx, size_t M, size_t N, size_t K, size_t batch);
#endif
PRN__FN prn_status prn__ref_gemm_cblas(prn_context *ctx, prn_dtype dtype, int trans_a, int trans_b,
                                       size_t M, size_t N, size_t K, double alpha,
                                       const void *A, size_t lda, size_t sa,
                                       const void *B, size_t ldb, size_t sb,
                                       double beta, void *C, size_t ldc, size_t sc, size_t batch) {
    size_t b;
#ifdef PRN__HAVE_AVX2
    if (prn__gemm_k1_ok(dtype, trans_a, M, N, K, lda, ldc)) { /* one input: no BLAS call (prn__gemm_k1_f32x) */
        prn__gemm_k1_f32x(trans_b, M, N, (float)alpha, (const float *)A, sa, (const float *)B, ldb, sb, (float)beta,
                          (float *)C, sc, batch);
        return PRN_OK;
    }
    /* f32 on a CBLAS that runs SSE kernels on an AVX2 machine: parrnn's
     * AVX2 kernel (prn__gemm_f32x; no fallback when it fails, so that a
     * product's rounding never depends on an allocation). Its threads are
     * prn__team's: the weight gradients' products (op(A) = A^T) of a
     * training step on CBLAS's two threads beside a busy core cost the
     * LSTM step 2.0-2.2x its quiet one-thread time (bench_contended). */
    if (dtype == PRN_F32 && prn__cblas_weak_f32(ctx, M, N, K, batch))
        return prn__gemm_f32x(ctx, trans_a, trans_b, M, N, K, (float)alpha, (const float *)A, lda, sa,
                              (const float *)B, ldb, sb, (float)beta, (float *)C, ldc, sc, batch);
#endif
#ifdef _OPENMP
    /* OpenBLAS's OpenMP build takes as many threads as the caller's
     * nthreads-var says: prn_config.num_threads, restored after. Not
     * prn__team's load-dependent count: OpenBLAS's f32 products differ in
     * their last bits between 1 and 2 threads, and a result must not
     * depend on how busy the machine was. */
    const int was = omp_get_max_threads(), nt = batch * M * N * K >= PRN__PAR_MIN ? prn_context_num_threads(ctx) : 1;
    if (nt != was) omp_set_num_threads(nt);
#endif
    if (M > 2147483647u || N > 2147483647u || K > 2147483647u || lda > 2147483647u ||
        ldb > 2147483647u || ldc > 2147483647u || K == 0) {
#ifdef _OPENMP
        if (nt != was) omp_set_num_threads(was);
#endif
        return prn__ref_gemm_loops(ctx, dtype, trans_a, trans_b, M, N, K, alpha, A, lda, sa, B, ldb,
                                   sb, beta, C, ldc, sc, batch);
    }
    for (b = 0; b < batch; ++b) {
        if (dtype == PRN_F32)
            cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                        trans_b ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, (float)alpha,
                        (const float *)A + b * sa, (int)lda, (const float *)B + b * sb, (int)ldb,
                        (float)beta, (float *)C + b * sc, (int)ldc);
        else
            cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                        trans_b ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha,
                        (const double *)A + b * sa, (int)lda, (const double *)B + b * sb, (int)ldb,
                        beta, (double *)C + b * sc, (int)ldc);
    }
#ifdef _OPENMP
    if (nt != was) omp_set_num_threads(was);
#endif
    return PRN_OK;
}
#endif

PRN__FN prn_status prn__ref_reduce(prn_context *ctx, prn_reduce_op op, prn_dtype dtype, size_t outer,
                                   size_t n, size_t inner, const void *x, void *y) {
    /* one strided row (outer 1, inner > 1) stays on one thread */
    PRN__PAR_SETUP(ctx, outer > 1 || inner == 1 ? outer * n * inner : 0);
    if (op == PRN_REDUCE_SUM) {
        if (dtype == PRN_F32) prn__reduce_sum_f32(outer, n, inner, (const float *)x, (float *)y, prn__nt, prn__par);
        else prn__reduce_sum_f64(outer, n, inner, (const double *)x, (double *)y, prn__nt, prn__par);
    } else {
        if (dtype == PRN_F32) prn__reduce_max_f32(outer, n, inner, (const float *)x, (float *)y, prn__nt, prn__par);
        else prn__reduce_max_f64(outer, n, inner, (const double *)x, (double *)y, prn__nt, prn__par);
    }
    return PRN_OK;
}

PRN__FN prn_status prn__ref_argmax(prn_context *ctx, prn_dtype dtype, size_t outer, size_t n,
                                   size_t inner, const void *x, void *y) {
    PRN__PAR_SETUP(ctx, outer * inner * n);
    if (dtype == PRN_F32) prn__argmax_f32(outer, n, inner, (const float *)x, (int32_t *)y, prn__nt, prn__par);
    else prn__argmax_f64(outer, n, inner, (const double *)x, (int32_t *)y, prn__nt, prn__par);
    return PRN_OK;
}

PRN__FN prn_status prn__ref_softmax(prn_context *ctx, prn_dtype dtype, int logsm, size_t outer,
                                    size_t n, size_t inner, const void *x, void *y) {
    PRN__PAR_SETUP(ctx, outer * inner * n);
    if (n == 0) return PRN_OK;
    if (dtype == PRN_F32) prn__softmax_f32(logsm, outer, n, inner, (const float *)x, (float *)y, prn__nt, prn__par);
    else prn__softmax_f64(logsm, outer, n, inner, (const double *)x, (double *)y, prn__nt, prn__par);
    return PRN_OK;
}

PRN__FN prn_status prn__ref_random(prn_context *ctx, prn_random_dist dist, prn_dtype dtype, size_t n,
                                   uint64_t seed, uint64_t counter, double p0, double p1, void *y) {
    size_t i;
    PRN__PAR_SETUP(ctx, n * 16);
    if (dtype == PRN_F32) {
        float *yp = (float *)y;
        PRN__PARFOR for (i = 0; i < n; ++i) yp[i] = (float)prn__random_value(dist, dtype, seed, counter + i, p0, p1);
    } else {
        double *yp = (double *)y;
        PRN__PARFOR for (i = 0; i < n; ++i) yp[i] = prn__random_value(dist, dtype, seed, counter + i, p0, p1);
    }
    return PRN_OK;
}

#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__ref_sgd_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param,
                                       const void *grad, void *velocity, const prn_optim_params *p) {
    PRN__PAR_SETUP(ctx, n);
    if (dtype == PRN_F32) prn__sgd_f32(n, (float *)param, (const float *)grad, (float *)velocity, p, prn__nt, prn__par);
    else prn__sgd_f64(n, (double *)param, (const double *)grad, (double *)velocity, p, prn__nt, prn__par);
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__ref_adam_update(prn_context *ctx, prn_dtype dtype, size_t n, void *param,
                                        const void *grad, void *m_, void *v_, const prn_optim_params *p) {
    PRN__PAR_SETUP(ctx, n);
    if (dtype == PRN_F32)
        prn__adam_f32(n, (float *)param, (const float *)grad, (float *)m_, (float *)v_, p, prn__nt, prn__par);
    else
        prn__adam_f64(n, (double *)param, (const double *)grad, (double *)m_, (double *)v_, p, prn__nt, prn__par);
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

/* ------------------------------------------------------------------------
 * Reference scans of linear recurrences
 *
 * Diagonal, AUTO picks:
 *  - SEQUENTIAL when there are at least as many sequences as threads, when
 *    the work is too small to share (T < 4096 or T * C < PRN__PAR_MIN), or
 *    when rows are so wide that a chunk holds fewer than 4 per thread: each
 *    thread walks whole sequences (or, for fewer sequences than threads, a
 *    share of their channels) once in time -- read a and b, write h,
 *    nothing else;
 *  - CHUNKED otherwise: the three phases (reduce each chunk to an affine
 *    map, scan the carries, expand each chunk from its carry), arranged so
 *    that memory sees one pass: chunks are sized for a core's L2 cache and
 *    the carry moves from superblock to superblock (prn__scan_chunked_*).
 *    With two threads on one sequence it moved 1.1-1.3 times the triad's
 *    counted bandwidth for C = 1 .. 1024 (bench_scan), against 0.7-0.9
 *    for one thread's pass (SEQUENTIAL).
 * With one channel, a thread's pass takes four steps per SSE2 register,
 * eight per AVX2 one (prn__scan1_*), so that one multiply-add latency per
 * step does not bound it; with more, the loop over channels vectorises.
 * Block-diagonal and dense: SEQUENTIAL (a chunk's reduction composes k x k
 * matrices, k times the work of the sequential pass); CHUNKED on request.
 * TREE is the textbook Blelloch scan, per sequence, never chosen by AUTO.
 * f32 data accumulates in f32.
 * ---------------------------------------------------------------------- */
#ifdef _OPENMP
#define PRN__OMP(x) PRN__PRAGMA(x)
#define PRN__THREAD_NUM() omp_get_thread_num()
#define PRN__NUM_THREADS() omp_get_num_threads()
#else
#define PRN__OMP(x)
#define PRN__THREAD_NUM() 0
#define PRN__NUM_THREADS() 1
#endif
/* Waiting threads (see "Threads and busy machines" in the API section).
 * The OpenMP runtime's barrier spins for a long time by default (libgomp:
 * 300000 pauses, milliseconds on recent x86, unless OMP_WAIT_POLICY says
 * otherwise -- which a library cannot set). A waiter that spins while the
 * thread it waits for has been preempted by another process holds a core
 * that thread needs; with a barrier per time step that cost 10-50x. So
 * the barriers inside the library's parallel regions are its own: a spin
 * of PRN__SPIN pauses (tens of microseconds: a step's imbalance), then a
 * sleep on a condition variable, woken by the last thread to arrive.
 * Without POSIX threads (or OpenMP), the OpenMP barrier. The object lives
 * on the stack of the function that opens the region; m: the team's size,
 * the same in every thread. */
#if defined(_OPENMP) && (defined(__GNUC__) || defined(__clang__)) && (defined(__unix__) || defined(__APPLE__))
#include <pthread.h>
#define PRN__SPIN 2000
typedef struct prn__barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count, sleepers; /* arrived in this round; asleep on cv */
    unsigned gen;        /* rounds completed */
} prn__barrier;
PRN__FN void prn__barrier_init(prn__barrier *b) {
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
}
PRN__FN void prn__barrier_destroy(prn__barrier *b) {
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
}
PRN__FN void prn__barrier_wait(prn__barrier *b, size_t m) {
    unsigned g;
    int i;
    if (m < 2) return;
    g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
    if ((size_t)__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == m) { /* the last: release the others */
        __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
        pthread_mutex_lock(&b->mu);
        __atomic_store_n(&b->gen, g + 1, __ATOMIC_RELEASE);
        if (b->sleepers) pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        return;
    }
    for (i = 0; i < PRN__SPIN; ++i) {
        if (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) != g) return;
#ifdef PRN__HAVE_SSE2
        _mm_pause();
#endif
    }
    pthread_mutex_lock(&b->mu);
    ++b->sleepers;
    while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g) pthread_cond_wait(&b->cv, &b->mu);
    --b->sleepers;
    pthread_mutex_unlock(&b->mu);
}
#define PRN__BARRIER(b, m) prn__barrier_wait((b), (m))
#else
typedef struct prn__barrier { int unused; } prn__barrier;
#define prn__barrier_init(b) ((void)(b))
#define prn__barrier_destroy(b) ((void)(b))
#define PRN__BARRIER(b, m) do { if ((m) > 1) { PRN__OMP(omp barrier) } } while (0)
#endif
#define PRN__SCAN_MIN_CHUNKED 4096
/* Bytes of a and b in a chunk that is reduced and then expanded: read
 * twice, so it should stay in a core's L2 cache between the two. Thread 0's
 * chunk, which it only expands, is twice as long. Both measured best of
 * 128 KiB .. 1 MiB and ratios 1 .. 4 on a 2-core Zen 4 (bench_scan). */
#define PRN__SCAN_CHUNK_BYTES ((size_t)512 << 10)
/* logical step t of a sequence lives in row ROW(t) */
#define PRN__ROW(t) (rev ? T - 1 - (t) : (t))

/* One step of a row of channels: st = a * st + b, stored to h too.
 * stream: the output is far larger than the caches, so h is written with
 * non-temporal stores (x86 SSE2), which skip the read-for-ownership a
 * normal store pays -- a quarter of a scan's memory traffic; whoever
 * streams calls prn__stream_fence before its results are read. Both paths
 * do the same arithmetic (a multiply, then an add). */
#ifdef PRN__HAVE_SSE2
#define prn__stream_fence() _mm_sfence()
#define PRN__STREAM_HEAD(align)                                                  \
    if (stream) for (; c < n && ((size_t)(h + c) & (align)) != 0; ++c) { st[c] = a[c] * st[c] + b[c]; h[c] = st[c]; }
PRN__FN void prn__scan_row_f32(size_t n, const float *a, const float *b, float *st, float *h, int stream) {
    size_t c = 0, i;
    PRN__STREAM_HEAD(15)
    if (stream) for (; c + 4 <= n; c += 4) {
        __m128 v = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(a + c), _mm_loadu_ps(st + c)), _mm_loadu_ps(b + c));
        _mm_storeu_ps(st + c, v);
        _mm_stream_ps(h + c, v);
    }
    PRN__SIMD for (i = c; i < n; ++i) { st[i] = a[i] * st[i] + b[i]; h[i] = st[i]; }
}
PRN__FN void prn__scan_row_f64(size_t n, const double *a, const double *b, double *st, double *h, int stream) {
    size_t c = 0, i;
    PRN__STREAM_HEAD(15)
    if (stream) for (; c + 2 <= n; c += 2) {
        __m128d v = _mm_add_pd(_mm_mul_pd(_mm_loadu_pd(a + c), _mm_loadu_pd(st + c)), _mm_loadu_pd(b + c));
        _mm_storeu_pd(st + c, v);
        _mm_stream_pd(h + c, v);
    }
    PRN__SIMD for (i = c; i < n; ++i) { st[i] = a[i] * st[i] + b[i]; h[i] = st[i]; }
}
#else
#define prn__stream_fence() ((void)0)
/* prn__scan_row_f32, prn__scan_row_f64: TEMPLATE SCAN_ROW */
#define PRN__TPL_SCAN_ROW
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_SCAN_ROW
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#endif
/* outputs from this size up are streamed: well past what the caches keep */
#define PRN__STREAM_MIN ((size_t)16 << 20)

/* One channel: h = a * h + b over n contiguous steps from h = c, walking
 * up (rev = 0) or down (rev = 1) from a, b, h; returns the last state.
 * h == NULL: only the end state (a chunk's reduction: c = 0 gives its B);
 * prod != NULL: also the product of a (its P). A loop of h = a * h + b
 * waits a multiply and an add per step, so with SSE2 a register holds
 * four steps, scanned in two shift-multiply-add rounds into the maps
 * (A_i, B_i) from the register's start (Hillis-Steele); then h_i =
 * A_i * c + B_i, and c moves on by one multiply-add per 8 steps. These
 * functions are called with constant rev, h and prod, and inlined, so the
 * branches on them fold away. */
#ifdef PRN__HAVE_SSE2
/* shift lanes towards later time (zeros fill the earliest lanes) */
#define PRN__LATER_PS(v, n) _mm_castsi128_ps(rev ? _mm_srli_si128(_mm_castps_si128(v), 4 * (n)) \
                                                 : _mm_slli_si128(_mm_castps_si128(v), 4 * (n)))
/* an aligned store: streaming, or kept in cache */
#define PRN__PUT_PS(p, v) do { if (stream) _mm_stream_ps(p, v); else _mm_store_ps(p, v); } while (0)
#define PRN__PUT_PD(p, v) do { if (stream) _mm_stream_pd(p, v); else _mm_store_pd(p, v); } while (0)
/* the latest lane of a register, in every lane */
#define PRN__LAST_PS(v) (rev ? _mm_shuffle_ps(v, v, 0x00) : _mm_shuffle_ps(v, v, 0xff))
PRN__FN_INLINE void prn__maps4(int rev, __m128 *A, __m128 *B) {
    /* bit patterns of 1.0f in the one (two) earliest lanes: the identity's m */
    const __m128 one1 = _mm_castsi128_ps(rev ? _mm_set_epi32(0x3f800000, 0, 0, 0) : _mm_set_epi32(0, 0, 0, 0x3f800000));
    const __m128 one2 = _mm_castsi128_ps(rev ? _mm_set_epi32(0x3f800000, 0x3f800000, 0, 0)
                                             : _mm_set_epi32(0, 0, 0x3f800000, 0x3f800000));
    __m128 a = *A, b = *B;
    b = _mm_add_ps(_mm_mul_ps(a, PRN__LATER_PS(b, 1)), b);
    a = _mm_mul_ps(a, _mm_or_ps(PRN__LATER_PS(a, 1), one1));
    b = _mm_add_ps(_mm_mul_ps(a, PRN__LATER_PS(b, 2)), b);
    a = _mm_mul_ps(a, _mm_or_ps(PRN__LATER_PS(a, 2), one2));
    *A = a; *B = b;
}
#ifdef PRN__HAVE_AVX2
/* The same with AVX2 and FMA: each 128-bit half of a register scans its
 * four steps as above (the byte shifts act per half), then the later half
 * takes the earlier half's last map. */
PRN__FN_INLINE PRN__AVX2 void prn__maps8(int rev, __m256 *A, __m256 *B) {
    const int o = 0x3f800000; /* 1.0f */
    const __m256 one1 = _mm256_castsi256_ps(rev ? _mm256_setr_epi32(0, 0, 0, o, 0, 0, 0, o)
                                                : _mm256_setr_epi32(o, 0, 0, 0, o, 0, 0, 0));
    const __m256 one2 = _mm256_castsi256_ps(rev ? _mm256_setr_epi32(0, 0, o, o, 0, 0, o, o)
                                                : _mm256_setr_epi32(o, o, 0, 0, o, o, 0, 0));
    const __m256 oneh = _mm256_castsi256_ps(rev ? _mm256_setr_epi32(0, 0, 0, 0, o, o, o, o)
                                                : _mm256_setr_epi32(o, o, o, o, 0, 0, 0, 0));
    __m256 a = *A, b = *B, ta, tb;
#define PRN__LATER8(v, n) _mm256_castsi256_ps(rev ? _mm256_srli_si256(_mm256_castps_si256(v), 4 * (n)) \
                                                  : _mm256_slli_si256(_mm256_castps_si256(v), 4 * (n)))
    b = _mm256_fmadd_ps(a, PRN__LATER8(b, 1), b);
    a = _mm256_mul_ps(a, _mm256_or_ps(PRN__LATER8(a, 1), one1));
    b = _mm256_fmadd_ps(a, PRN__LATER8(b, 2), b);
    a = _mm256_mul_ps(a, _mm256_or_ps(PRN__LATER8(a, 2), one2));
#undef PRN__LATER8
    /* the earlier half's last lane, in every lane of the later half */
    tb = rev ? _mm256_permute_ps(b, 0x00) : _mm256_permute_ps(b, 0xff);
    ta = rev ? _mm256_permute_ps(a, 0x00) : _mm256_permute_ps(a, 0xff);
    tb = rev ? _mm256_permute2f128_ps(tb, tb, 0x81) : _mm256_permute2f128_ps(tb, tb, 0x08);
    ta = _mm256_or_ps(rev ? _mm256_permute2f128_ps(ta, ta, 0x81) : _mm256_permute2f128_ps(ta, ta, 0x08), oneh);
    *B = _mm256_fmadd_ps(a, tb, b);
    *A = _mm256_mul_ps(a, ta);
}
PRN__FN_INLINE PRN__AVX2 float prn__scan8_f32(int rev, size_t n, const float *a, const float *b, float *h, float c,
                                             float *prod, int stream) {
    const __m256i last = _mm256_set1_epi32(rev ? 0 : 7);
    size_t i = 0, j;
    float p = 1;
    __m256 cv, pv = _mm256_set1_ps(1.0f);
    for (; i < n && ((size_t)((h ? h : a) + (rev ? n - i : i)) & 31) != 0; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    cv = _mm256_set1_ps(c);
    for (; i + 16 <= n; i += 16) {
        const size_t o0 = rev ? n - i - 8 : i, o1 = rev ? n - i - 16 : i + 8;
        __m256 A0 = _mm256_loadu_ps(a + o0), B0 = _mm256_loadu_ps(b + o0);
        __m256 A1 = _mm256_loadu_ps(a + o1), B1 = _mm256_loadu_ps(b + o1);
        if (prod) pv = _mm256_mul_ps(pv, _mm256_mul_ps(A0, A1));
        prn__maps8(rev, &A0, &B0);
        prn__maps8(rev, &A1, &B1);
        B1 = _mm256_fmadd_ps(A1, _mm256_permutevar8x32_ps(B0, last), B1);
        A1 = _mm256_mul_ps(A1, _mm256_permutevar8x32_ps(A0, last));
        if (h) {
            const __m256 h0 = _mm256_fmadd_ps(A0, cv, B0);
            if (stream) _mm256_stream_ps(h + o0, h0);
            else _mm256_store_ps(h + o0, h0);
        }
        B1 = _mm256_fmadd_ps(A1, cv, B1);
        if (h) {
            if (stream) _mm256_stream_ps(h + o1, B1);
            else _mm256_store_ps(h + o1, B1);
        }
        cv = _mm256_permutevar8x32_ps(B1, last);
    }
    c = _mm256_cvtss_f32(cv);
    if (prod) {
        float q[8];
        _mm256_storeu_ps(q, pv);
        p *= ((q[0] * q[1]) * (q[2] * q[3])) * ((q[4] * q[5]) * (q[6] * q[7]));
    }
    for (; i < n; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    if (prod) *prod = p;
    return c;
}
/* the two uses, compiled once each */
PRN__FN PRN__AVX2 float prn__scan8_expand_f32(int rev, size_t n, const float *a, const float *b, float *h, float c,
                                             int stream) {
    return rev ? prn__scan8_f32(1, n, a, b, h, c, NULL, stream) : prn__scan8_f32(0, n, a, b, h, c, NULL, stream);
}
PRN__FN PRN__AVX2 float prn__scan8_reduce_f32(int rev, size_t n, const float *a, const float *b, float *prod) {
    return rev ? prn__scan8_f32(1, n, a, b, NULL, 0.0f, prod, 0) : prn__scan8_f32(0, n, a, b, NULL, 0.0f, prod, 0);
}
PRN__FN_INLINE int prn__cpu_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif
PRN__FN_INLINE float prn__scan1_f32(int rev, size_t n, const float *a, const float *b, float *h, float c, float *prod,
                                    int stream) {
    size_t i = 0, j;
    float p = 1;
    __m128 cv, pv = _mm_set1_ps(1.0f);
#ifdef PRN__HAVE_AVX2
    if (n >= 64 && prn__cpu_avx2())
        return h ? prn__scan8_expand_f32(rev, n, a, b, h, c, stream) : prn__scan8_reduce_f32(rev, n, a, b, prod);
#endif
    /* single steps up to an aligned register (for the streaming stores) */
    for (; i < n && ((size_t)((h ? h : a) + (rev ? n - i : i)) & 15) != 0; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    cv = _mm_set1_ps(c);
    for (; i + 8 <= n; i += 8) {
        const size_t o0 = rev ? n - i - 4 : i, o1 = rev ? n - i - 8 : i + 4;
        __m128 A0 = _mm_loadu_ps(a + o0), B0 = _mm_loadu_ps(b + o0);
        __m128 A1 = _mm_loadu_ps(a + o1), B1 = _mm_loadu_ps(b + o1), l;
        if (prod) pv = _mm_mul_ps(pv, _mm_mul_ps(A0, A1));
        prn__maps4(rev, &A0, &B0);
        prn__maps4(rev, &A1, &B1);
        /* the second register's maps from the first register's start */
        l = PRN__LAST_PS(B0);
        B1 = _mm_add_ps(_mm_mul_ps(A1, l), B1);
        A1 = _mm_mul_ps(A1, PRN__LAST_PS(A0));
        if (h) PRN__PUT_PS(h + o0, _mm_add_ps(_mm_mul_ps(A0, cv), B0));
        B1 = _mm_add_ps(_mm_mul_ps(A1, cv), B1);
        if (h) PRN__PUT_PS(h + o1, B1);
        cv = PRN__LAST_PS(B1);
    }
    c = _mm_cvtss_f32(cv);
    if (prod) {
        float q[4];
        _mm_storeu_ps(q, pv);
        p *= (q[0] * q[1]) * (q[2] * q[3]);
    }
    for (; i < n; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    if (prod) *prod = p;
    return c;
}
#define PRN__LATER_PD(v) _mm_castsi128_pd(rev ? _mm_srli_si128(_mm_castpd_si128(v), 8) \
                                              : _mm_slli_si128(_mm_castpd_si128(v), 8))
#define PRN__LAST_PD(v) (rev ? _mm_unpacklo_pd(v, v) : _mm_unpackhi_pd(v, v))
PRN__FN_INLINE void prn__maps2(int rev, __m128d *A, __m128d *B) {
    const __m128d one1 = _mm_castsi128_pd(rev ? _mm_set_epi32(0x3ff00000, 0, 0, 0) : _mm_set_epi32(0, 0, 0x3ff00000, 0));
    __m128d a = *A, b = *B;
    *B = _mm_add_pd(_mm_mul_pd(a, PRN__LATER_PD(b)), b);
    *A = _mm_mul_pd(a, _mm_or_pd(PRN__LATER_PD(a), one1));
}
PRN__FN_INLINE double prn__scan1_f64(int rev, size_t n, const double *a, const double *b, double *h, double c,
                                     double *prod, int stream) {
    size_t i = 0, j, k;
    double p = 1;
    __m128d cv, pv = _mm_set1_pd(1.0);
    for (; i < n && ((size_t)((h ? h : a) + (rev ? n - i : i)) & 15) != 0; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    cv = _mm_set1_pd(c);
    for (; i + 8 <= n; i += 8) {
        /* four registers of two steps; their maps from the first one's start */
        __m128d A[4], B[4];
        size_t o[4];
        for (k = 0; k < 4; ++k) {
            o[k] = rev ? n - i - 2 * k - 2 : i + 2 * k;
            A[k] = _mm_loadu_pd(a + o[k]); B[k] = _mm_loadu_pd(b + o[k]);
            if (prod) pv = _mm_mul_pd(pv, A[k]);
            prn__maps2(rev, &A[k], &B[k]);
            if (k) {
                B[k] = _mm_add_pd(_mm_mul_pd(A[k], PRN__LAST_PD(B[k - 1])), B[k]);
                A[k] = _mm_mul_pd(A[k], PRN__LAST_PD(A[k - 1]));
            }
        }
        if (h) for (k = 0; k < 3; ++k) PRN__PUT_PD(h + o[k], _mm_add_pd(_mm_mul_pd(A[k], cv), B[k]));
        B[3] = _mm_add_pd(_mm_mul_pd(A[3], cv), B[3]);
        if (h) PRN__PUT_PD(h + o[3], B[3]);
        cv = PRN__LAST_PD(B[3]);
    }
    c = _mm_cvtsd_f64(cv);
    if (prod) p *= _mm_cvtsd_f64(pv) * _mm_cvtsd_f64(_mm_unpackhi_pd(pv, pv));
    for (; i < n; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    if (prod) *prod = p;
    return c;
}
#else
/* prn__scan1_f32 and prn__scan1_f64 without intrinsics: TEMPLATE SCAN1 */
#define PRN__TPL_SCAN1
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_SCAN1
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#endif

/* prn__rows_expand_f32, prn__rows_reduce_f32, prn__rows_expand_f64, prn__rows_reduce_f64: TEMPLATE DIAG_ROWS */
#define PRN__TPL_DIAG_ROWS
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_DIAG_ROWS
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH

/* prn__scan_seq_diag_f32, prn__scan_seq_diag_f64: TEMPLATE SCAN_SEQ_DIAG */
#define PRN__TPL_SCAN_SEQ_DIAG
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_SCAN_SEQ_DIAG
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH

/* prn__scan_chunked_f32, prn__scan_chunked_f64: TEMPLATE DIAG_CHUNKED */
#define PRN__TPL_DIAG_CHUNKED
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_DIAG_CHUNKED
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH

/* prn__scan_tree_diag_f32, prn__scan_tree_diag_f64: TEMPLATE SCAN_TREE_DIAG */
#define PRN__TPL_SCAN_TREE_DIAG
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_SCAN_TREE_DIAG
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH

PRN__FN prn_status prn__ref_scan_diag(prn_context *ctx, prn_dtype dtype, int rev, prn_scan_algo algo,
                                      size_t batch, size_t T, size_t C, const void *a, const void *b,
                                      const void *h0, void *h) {
    static const char fn[] = "scan_diag";
    size_t grp = 16, ngrp = (C + grp - 1) / grp, es = prn_dtype_size(dtype);
    size_t R1 = PRN__SCAN_CHUNK_BYTES / (2 * es * (C ? C : 1));
    void *ws = NULL;
    int nt = prn_context_num_threads(ctx), stream;
    if (batch == 0 || T == 0 || C == 0) return PRN_OK;
    /* large outputs are written with streaming stores */
    stream = batch * T * C * es >= PRN__STREAM_MIN;
    if (algo == PRN_SCAN_AUTO)
        algo = batch >= (size_t)nt || T < PRN__SCAN_MIN_CHUNKED || T * C < PRN__PAR_MIN || R1 < 4 * (size_t)nt
                   ? PRN_SCAN_SEQUENTIAL : PRN_SCAN_CHUNKED;
    if (algo == PRN_SCAN_SEQUENTIAL) {
        PRN__PAR_SETUP(ctx, batch * T * C);
        /* Each thread walks whole rows of as many channels as possible: a unit
         * is a sequence, or for fewer sequences than threads, a share of its
         * channels (a multiple of 16, so rows stay cache-line sized). */
        if (batch >= (size_t)prn__nt) grp = C;
        else {
            size_t per = (size_t)prn__nt / batch;
            grp = (C + per - 1) / per;
            grp = (grp + 15) / 16 * 16;
        }
        ngrp = (C + grp - 1) / grp;
        if (grp > 16 && !(ws = prn_alloc(ctx, batch * C * es)))
            return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the state workspace", fn);
        if (dtype == PRN_F32) prn__scan_seq_diag_f32(rev, batch, T, C, grp, ngrp, a, b, h0, h, ws, stream,
                                                      prn__nt, prn__par);
        else prn__scan_seq_diag_f64(rev, batch, T, C, grp, ngrp, a, b, h0, h, ws, stream, prn__nt, prn__par);
        prn_free(ctx, ws);
        return PRN_OK;
    }
    if (algo == PRN_SCAN_CHUNKED) {
        const size_t Cp = (C + 15) / 16 * 16;
        size_t R0, n;
        if (T * C < PRN__PAR_MIN) nt = 1;
        if (R1 < 1) R1 = 1;
        R0 = 2 * R1;
        void *wa;
        /* cache-line aligned: each thread's rows sit on lines of their own */
        ws = prn_alloc(ctx, (5 * (size_t)nt + 2) * Cp * es + 64);
        if (!ws) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the chunk workspace", fn);
        wa = (char *)ws + (64 - (uintptr_t)ws % 64) % 64;
        for (n = 0; n < batch; ++n) {
            if (dtype == PRN_F32)
                prn__scan_chunked_f32(rev, T, C, (const float *)a + n * T * C, (const float *)b + n * T * C,
                                      h0 ? (const float *)h0 + n * C : NULL, (float *)h + n * T * C, R0, R1, nt,
                                      stream, (float *)wa);
            else
                prn__scan_chunked_f64(rev, T, C, (const double *)a + n * T * C, (const double *)b + n * T * C,
                                      h0 ? (const double *)h0 + n * C : NULL, (double *)h + n * T * C, R0, R1, nt,
                                      stream, (double *)wa);
        }
        prn_free(ctx, ws);
        return PRN_OK;
    }
    if (algo == PRN_SCAN_TREE) {
        size_t np = 1, n, c;
        PRN__PAR_SETUP(ctx, T);
        while (np < T) np *= 2;
        ws = prn_alloc(ctx, 2 * np * es);
        if (!ws) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the tree workspace", fn);
        for (n = 0; n < batch; ++n)
            for (c = 0; c < C; ++c) {
                if (dtype == PRN_F32) prn__scan_tree_diag_f32(rev, T, C, np, n, c, a, b, h0, h, ws, prn__nt, prn__par);
                else prn__scan_tree_diag_f64(rev, T, C, np, n, c, a, b, h0, h, ws, prn__nt, prn__par);
            }
        prn_free(ctx, ws);
        return PRN_OK;
    }
    return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: unknown algorithm %d", fn, (int)algo);
}

/* Block scans. A step's matrix entry (i, m) of block j, honouring transpose. */
#define PRN__AM(ar, i, m) (tr ? (ar)[(j0 + (m)) * k + (i)] : (ar)[(j0 + (i)) * k + (m)])


/* prn__scan_block_chunked_f32, prn__scan_block_compose_f32, prn__scan_block_seq_f32, prn__scan_block_tree_f32, prn__scan_block_chunked_f64, prn__scan_block_compose_f64, prn__scan_block_seq_f64, prn__scan_block_tree_f64: TEMPLATE BLOCK_SCAN */
#define PRN__TPL_BLOCK_SCAN
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_BLOCK_SCAN
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH

PRN__FN prn_status prn__ref_scan_block(prn_context *ctx, prn_dtype dtype, int rev, int tr, prn_scan_algo algo,
                                       size_t batch, size_t T, size_t C, size_t k, const void *a, const void *b,
                                       const void *h0, void *h) {
    static const char fn[] = "scan_block";
    size_t nblk, units, u, es = prn_dtype_size(dtype);
    int nt = prn_context_num_threads(ctx);
    if (batch == 0 || T == 0 || C == 0) return PRN_OK;
    if (k == 0 || k > 64 || C % k != 0)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: block size %lu must be 1..64 and divide C = %lu", fn,
                        (unsigned long)k, (unsigned long)C);
    nblk = C / k;
    units = batch * nblk;
    /* a chunk's reduction composes k x k matrices (k times the sequential
     * work), which two cores do not win back: AUTO stays sequential */
    if (algo == PRN_SCAN_AUTO) algo = PRN_SCAN_SEQUENTIAL;
    if (algo == PRN_SCAN_SEQUENTIAL) {
        /* units: whole sequences, or shares of a sequence's blocks when there
         * are fewer sequences than threads */
        size_t per = batch >= (size_t)nt ? 1 : ((size_t)nt + batch - 1) / batch;
        size_t bpu = (nblk + per - 1) / per, nu;
        long w;
        if (per > nblk) { per = nblk; bpu = 1; }
        nu = batch * per;
        {
            PRN__PAR_SETUP(ctx, nu > 1 ? batch * T * C * k : 0);
            PRN__PARFOR for (w = 0; w < (long)nu; ++w) {
                size_t n = (size_t)w / per, jb0 = ((size_t)w % per) * bpu, jb1 = jb0 + bpu < nblk ? jb0 + bpu : nblk;
                if (jb0 >= jb1) continue;
                if (dtype == PRN_F32)
                    prn__scan_block_seq_f32(rev, tr, T, C, k, (const float *)a + n * T * C * k, (const float *)b + n * T * C,
                                            h0 ? (const float *)h0 + n * C : NULL, (float *)h + n * T * C, jb0, jb1);
                else
                    prn__scan_block_seq_f64(rev, tr, T, C, k, (const double *)a + n * T * C * k, (const double *)b + n * T * C,
                                            h0 ? (const double *)h0 + n * C : NULL, (double *)h + n * T * C, jb0, jb1);
            }
        }
        return PRN_OK;
    }
    if (algo == PRN_SCAN_CHUNKED || algo == PRN_SCAN_TREE) {
        size_t nch = (size_t)nt * 4, np = 1, words;
        void *ws;
        if (nch > T) nch = T;
        while (np < T) np *= 2;
        words = algo == PRN_SCAN_CHUNKED ? nch * (k * k + 2 * k) + k * k + 2 * k : np * (k * k + k) + k * k + k;
        ws = prn_alloc(ctx, words * es);
        if (!ws) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the scan workspace", fn);
        for (u = 0; u < units; ++u) {
            size_t n = u / nblk, j0 = (u % nblk) * k;
            if (dtype == PRN_F32) {
                const float *an = (const float *)a + n * T * C * k, *bn = (const float *)b + n * T * C;
                const float *hz = h0 ? (const float *)h0 + n * C : NULL;
                float *hn = (float *)h + n * T * C;
                if (algo == PRN_SCAN_CHUNKED) prn__scan_block_chunked_f32(ctx, rev, tr, T, C, k, an, bn, hz, hn, j0, nch, (float *)ws);
                else prn__scan_block_tree_f32(rev, tr, T, C, k, an, bn, hz, hn, j0, np, (float *)ws);
            } else {
                const double *an = (const double *)a + n * T * C * k, *bn = (const double *)b + n * T * C;
                const double *hz = h0 ? (const double *)h0 + n * C : NULL;
                double *hn = (double *)h + n * T * C;
                if (algo == PRN_SCAN_CHUNKED) prn__scan_block_chunked_f64(ctx, rev, tr, T, C, k, an, bn, hz, hn, j0, nch, (double *)ws);
                else prn__scan_block_tree_f64(rev, tr, T, C, k, an, bn, hz, hn, j0, np, (double *)ws);
            }
        }
        prn_free(ctx, ws);
        return PRN_OK;
    }
    return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: unknown algorithm %d", fn, (int)algo);
}

/* --- fused cell steps (rnn_gates_forward / _backward) ------------------- */
PRN__DEF prn_status prn_backend_rnn_gates_check(prn_context *ctx, const char *fn, int kind, size_t H, size_t *k) {
    if (kind != PRN_RNN_ELMAN && kind != PRN_RNN_LSTM && kind != PRN_RNN_GRU && kind != PRN_RNN_MHGRU)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: kind %d has no fused step", fn, kind);
    if (kind == PRN_RNN_LSTM || kind == PRN_RNN_ELMAN) *k = H;
    if (!*k || H % *k)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: head size %lu does not divide %lu", fn,
                             (unsigned long)*k, (unsigned long)H);
    return PRN_OK;
}
PRN__DEF prn_status prn_backend_rnn_layer_check(prn_context *ctx, const char *fn, int kind, int backward,
                                                const void *saved) {
    if (kind != PRN_RNN_ELMAN && kind != PRN_RNN_LSTM && kind != PRN_RNN_GRU)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: kind %d has no fused layer (ELMAN, LSTM and GRU do)",
                             fn, kind);
    if (backward && prn__gates_saved(kind) && !saved)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT,
                             "%s: saved is NULL (kind %s runs backward from the forward's saved values)", fn,
                             prn_rnn_kind_name((prn_rnn_kind)kind));
    return PRN_OK;
}
PRN__DEF prn_status prn_backend_deer_check(prn_context *ctx, const char *fn, const prn_deer_fused *a, int adjoint,
                                           size_t *kb) {
    size_t S;
    if (!a) return prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'a' is NULL", fn);
    if (a->dtype != PRN_F32 && a->dtype != PRN_F64)
        return prn_set_error(ctx, PRN_ERR_DTYPE, "%s: dtype %s is not f32 or f64", fn, prn_dtype_name(a->dtype));
    if (a->kind < 0 || a->kind >= PRN_RNN_KIND_COUNT || (int)a->mode < 0 || a->mode > PRN_JACOBIAN_DIAG)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: kind %d or mode %d is not valid", fn, a->kind, (int)a->mode);
    S = a->S;
    if (!a->H || S != (a->kind == PRN_RNN_LSTM ? 2 * a->H : a->H) ||
        ((a->kind == PRN_RNN_GRU || a->kind == PRN_RNN_MHGRU) && (!a->hk || a->H % a->hk)) ||
        (a->kind == PRN_RNN_GRU && a->hk != a->H) || ((a->kind == PRN_RNN_SHPLRNN || a->kind == PRN_RNN_CLIPPED_SHPLRNN) && !a->L) ||
        (a->kind == PRN_RNN_ALRNN && a->L > a->H))
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: sizes H %lu, S %lu, hk %lu, L %lu do not fit kind %d", fn,
                             (unsigned long)a->H, (unsigned long)S, (unsigned long)a->hk, (unsigned long)a->L, a->kind);
    if (adjoint && a->dxp && (a->kind > PRN_RNN_MHGRU || !(a->dq || (a->dw && a->db))))
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: dxp and dq are for the torch kinds, and both or neither", fn);
    if (!adjoint && (a->iters < 0 || (a->iters > 1 && a->y2 && a->y2 == a->ynew)))
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: iters %d is negative or y2 is ynew", fn, a->iters);
    if (kb) {
        const size_t heads = a->kind == PRN_RNN_MHGRU ? a->hk : S;
        *kb = adjoint ? heads : a->mode == PRN_JACOBIAN_DIAG ? 1 : a->mode == PRN_JACOBIAN_BLOCK ? heads : S;
    }
    return PRN_OK;
}
#define PRN__SIGM(T, EXP, x) ((T)1 / ((T)1 + EXP(-(x))))
/* prn__elman_fw_f32, prn__lstm_fw_f32, prn__gru_fw_f32, prn__elman_bw_f32,
 * prn__lstm_bw_f32, prn__gru_bw_f32: TEMPLATE CELL_UNITS */
#define PRN__TPL_CELL_UNITS
#define PRN__T float
#define PRN__SFX f32
#define PRN__EXP prn__expf
#define PRN__TANH prn__tanhf
#include PARRNN_SELF_PATH
/* prn__elman_fw_f64, prn__lstm_fw_f64, prn__gru_fw_f64, prn__elman_bw_f64,
 * prn__lstm_bw_f64, prn__gru_bw_f64: TEMPLATE CELL_UNITS */
#define PRN__TPL_CELL_UNITS
#define PRN__T double
#define PRN__SFX f64
#define PRN__EXP exp
#define PRN__TANH tanh
#include PARRNN_SELF_PATH
/* the fused layers' LSTM gates: h also copied to h2 (prn__lstm_fw2_f32x
 * writes it from the gate loop where it can) */
PRN__FN_INLINE void prn__lstm_fw2_f32(size_t n, const float *x, size_t xs, const float *q, size_t qs, const float *bb,
                                      size_t bs, const float *cp, float *h, float *h2, float *c, float *v, size_t vs) {
    prn__lstm_fw_f32(n, x, xs, q, qs, bb, bs, cp, h, c, v, vs);
    memcpy(h2, h, n * sizeof(float));
}
PRN__FN_INLINE void prn__lstm_fw2_f64(size_t n, const double *x, size_t xs, const double *q, size_t qs, const double *bb,
                                      size_t bs, const double *cp, double *h, double *h2, double *c, double *v, size_t vs) {
    prn__lstm_fw_f64(n, x, xs, q, qs, bb, bs, cp, h, c, v, vs);
    memcpy(h2, h, n * sizeof(double));
}

/* prn__cell_fwd_f32, prn__cell_bwd_f32, prn__cell_fwd_f64, prn__cell_bwd_f64:
 * TEMPLATE CELL_STEP */
#define PRN__TPL_CELL_STEP
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_CELL_STEP
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
PRN__FN prn_status prn__ref_rnn_gates_forward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B, size_t H,
                                             size_t k, const void *xp, const void *q, const void *bias, const void *s,
                                             void *next, void *saved) {
    PRN__PAR_SETUP(ctx, B * H * 2); /* per-step sizes stay serial: a thread team per step costs more */
    PRN__TRY(prn_backend_rnn_gates_check(ctx, "rnn_gates_forward", kind, H, &k));
    if (dtype == PRN_F64) prn__cell_fwd_f64(kind, relu, B, H, k, xp, q, bias, s, next, saved, prn__nt, prn__par);
    else prn__cell_fwd_f32(kind, relu, B, H, k, xp, q, bias, s, next, saved, prn__nt, prn__par);
    return PRN_OK;
}
#ifndef PARRNN_NO_TRAINING /* the backward entries: only the training table has them */
PRN__FN prn_status prn__ref_rnn_gates_backward(prn_context *ctx, prn_dtype dtype, int kind, int relu, size_t B, size_t H,
                                              size_t k, const void *g, const void *s, const void *next, const void *saved,
                                              void *dxp, void *dq, void *ds) {
    PRN__PAR_SETUP(ctx, B * H * 2); /* per-step sizes stay serial: a thread team per step costs more */
    PRN__TRY(prn_backend_rnn_gates_check(ctx, "rnn_gates_backward", kind, H, &k));
    if (dtype == PRN_F64) prn__cell_bwd_f64(kind, relu, B, H, k, g, s, next, saved, dxp, dq, ds, prn__nt, prn__par);
    else prn__cell_bwd_f32(kind, relu, B, H, k, g, s, next, saved, dxp, dq, ds, prn__nt, prn__par);
    return PRN_OK;
}
#endif

/* --- fused layers (rnn_layer_forward / _backward) ----------------------- */
/* A layer's T steps in one parallel region, so that a step costs a matrix
 * product and a barrier rather than a team of threads, a CBLAS call that
 * packs the weights again, and tensors. Each thread owns a range of units
 * (hidden positions): forward, it multiplies the previous h by the rows of
 * W_hh of its units' gates and runs their gates; backward, it runs its
 * units' gates backward and multiplies the step's d loss / d q by the
 * columns of W_hh of its units, which gives d loss / d h_prev of exactly
 * the units it takes next. So one barrier per step: h (forward) or d q
 * (backward) of the step complete, in a compact buffer [B, *] that
 * alternates between two halves. The weights each thread needs are packed
 * once per call into blocks of 16 columns [K][16] that its L2 cache holds
 * (W_hh of H = 256 is 1 MiB in f32, half of it per thread on 2).
 * With two rows or more (by_rows, prn__layer_begin) the threads split the
 * batch instead: each runs the loop above with every unit (m = 1) over
 * rows of its own, and no thread waits for another until the end. */
typedef struct prn__layer {
    int kind, relu, rev;
    size_t B, Tn, H, G, P, S, V; /* Tn: steps */
    const void *xp, *w, *bias, *s0, *g;
    void *states, *saved, *dxp, *dq, *ds0;
    void *ws; /* cache-line aligned */
    size_t lanes_C, lanes_Bp; /* the one-thread loop over lanes (prn__lanes_plan) when lanes_C > 0 */
    int by_rows;              /* threads split the batch: each runs every step of its rows, no barriers */
    prn__barrier *bar;        /* the per-step barrier when threads split the units */
    /* rnn_layer_backward_dw (prn__layer_dwc): dw, db its outputs; dwa
     * [P][Hq] the sums, then db's [P]; rq [2][dwC][dwB][Pq] and rh [2][dwC][dwB][Hq] the
     * rings of dq and h_{t-1} (set when dwC > 0); r0 the layer's first row
     * in the whole batch of dwB; with by_rows, thread tj of tm and the
     * barrier dbar that the team passes at the end of each chunk */
    void *dw, *db, *dwa, *rq, *rh;
    size_t dwC, dwB, Pq, Hq, r0, tj, tm;
    prn__barrier *dbar;
    /* rnn_layer_backward_x (x set): each ring row of h is [h_{t-1} | x_t]
     * (Rq = Hq + the input padded to 16; Rq = Hq without x), so that one
     * product per chunk gives [dW_hh | dW_ih]; dwi, dbi its outputs */
    size_t Rq;
    void *dwi, *dbi;
    /* forward with the input projection inside (rnn_layer_forward_x; xp
     * NULL): x [B, T, I], w_ih [P, I], b_ih [P] or NULL */
    const void *x, *w_ih, *b_ih;
    size_t NI;
    /* rnn_layer_forward_y (LSTM; states NULL): y [B, T, H] each step's h,
     * fin [B, S] the last step's state; c in the workspace's two rows.
     * rnn_layer_forward_yc / _backward_yc (LSTM; cs set, states NULL): y
     * and cs [B, T, H] each step's h and c; the backward's g is then
     * d loss / d y [B, T, H] */
    void *y, *fin, *cs;
} prn__layer;
/* Steps per chunk of the input projections a thread computes itself (x
 * set), for B rows and ldq values per row: with 8 rows or more one product
 * of B rows per step, right before the step's own (C = 1: B ldq values
 * that stay in L1/L2 next to the weights); with fewer, one product per row
 * over C steps (a product of 1 .. 7 rows leaves the kernel's 8-row tile
 * mostly empty), C up to 64 within 32768 values. */
PRN__FN size_t prn__layer_xchunk(const prn__layer *L, size_t B, size_t ldq) {
    size_t C;
    if (!L->x || B >= 8) return 1;
    C = B && ldq ? 32768 / (B * ldq) : 64;
    if (C < 8) C = 8;
    if (C > 64) C = 64;
    return C;
}
/* Thread j of m: units [*u0, *u1) -- nu per thread, a multiple of 8 -- and
 * the thread's 16-column blocks per gate; returns the elements of its
 * workspace (panel, then product tile and carries). */
PRN__FN size_t prn__layer_plan(const prn__layer *L, int bw, size_t m, size_t j, size_t *u0, size_t *u1, size_t *nb) {
    size_t nu = ((L->H + m - 1) / m + 7) / 8 * 8;
    *u0 = j * nu < L->H ? j * nu : L->H;
    *u1 = *u0 + nu < L->H ? *u0 + nu : L->H;
    *nb = (nu + 15) / 16;
    if (bw) return *nb * 16 * (L->P + 2 * L->B);
    /* forward: W_hh's panel [G nb][H][16], the product [B][G nb 16]; with x
     * also W_ih's panel [G nb][I][16] and a chunk of projections */
    return L->G * *nb * 16 * (L->H + L->B) +
           (L->x ? L->G * *nb * 16 * (L->NI + prn__layer_xchunk(L, L->B, L->G * *nb * 16) * L->B) : 0);
}
/* Asks the caches for n values at p (gcc and clang; elsewhere nothing).
 * The layer loops touch a row of each of B sequences per step, B * (a few)
 * streams T * S apart: more than the hardware prefetchers follow, so each
 * step asks for the next step's rows before its matrix product. */
#if defined(__GNUC__) || defined(__clang__)
#define PRN__PREFETCH(p) __builtin_prefetch(p)
#else
#define PRN__PREFETCH(p) ((void)0)
#endif
PRN__FN_INLINE void prn__prefetch_run(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    size_t i;
    for (i = 0; i < bytes; i += 64) PRN__PREFETCH(c + i);
    if (bytes) PRN__PREFETCH(c + bytes - 1);
}
/* prn__panel_mm_f32, prn__panel_mmz_f32, prn__panel_mm_f64, prn__panel_mmz_f64:
 * TEMPLATE PANEL_MM */
#define PRN__TPL_PANEL_MM
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
#define PRN__TPL_PANEL_MM
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX512
/* With AVX-512: 8 rows x 16 columns, one register a row, so that eight
 * FMA chains are in flight (an AVX2 register holds half a row). Each
 * entry is the same chain of FMAs over k as prn__panel_mm_f32x's: the
 * same bits. */
PRN__FN PRN__AVX512 size_t prn__panel_mm_f32z(size_t B, size_t K, const float *a, size_t lda, const float *p,
                                             float *out, size_t ldo) {
    size_t b = 0, k;
    for (; b + 8 <= B; b += 8) {
        const float *a0 = a + b * lda;
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
        float *o = out + b * ldo;
        for (k = 0; k < K; ++k) {
            const __m512 w = _mm512_loadu_ps(p + k * 16);
            const float *ak = a0 + k;
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(ak[0]), w, c0);
            c1 = _mm512_fmadd_ps(_mm512_set1_ps(ak[lda]), w, c1);
            c2 = _mm512_fmadd_ps(_mm512_set1_ps(ak[2 * lda]), w, c2);
            c3 = _mm512_fmadd_ps(_mm512_set1_ps(ak[3 * lda]), w, c3);
            c4 = _mm512_fmadd_ps(_mm512_set1_ps(ak[4 * lda]), w, c4);
            c5 = _mm512_fmadd_ps(_mm512_set1_ps(ak[5 * lda]), w, c5);
            c6 = _mm512_fmadd_ps(_mm512_set1_ps(ak[6 * lda]), w, c6);
            c7 = _mm512_fmadd_ps(_mm512_set1_ps(ak[7 * lda]), w, c7);
        }
        _mm512_storeu_ps(o, c0); _mm512_storeu_ps(o + ldo, c1);
        _mm512_storeu_ps(o + 2 * ldo, c2); _mm512_storeu_ps(o + 3 * ldo, c3);
        _mm512_storeu_ps(o + 4 * ldo, c4); _mm512_storeu_ps(o + 5 * ldo, c5);
        _mm512_storeu_ps(o + 6 * ldo, c6); _mm512_storeu_ps(o + 7 * ldo, c7);
    }
    return b;
}
/* Z blocks of 16 columns at once, block z at p + z K 16 and its output at
 * out + z 16 (a layer step's whole product): threes of blocks by 8 rows,
 * then a pair, so that each broadcast of a feeds three FMAs (two: loads
 * were the limit with one block, 9 per 8 FMAs) and 24 (16) chains cover
 * the FMA latency with room to spare; the rows past the last multiple of
 * 8 one at a time over 8 blocks (8 chains, where one block gives a row 1: a step of batch 1
 * waited on the FMA latency). Every entry is still the one chain of FMAs
 * over k = 0, 1, ... from zero: the bits of prn__panel_mm_f32x. */
#define PRN__ZFMA2(i)                                                            \
    { const __m512 x = _mm512_set1_ps(ak[(i) * lda]);                            \
      c##i##0 = _mm512_fmadd_ps(x, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(x, w1, c##i##1); }
#define PRN__ZST2(i) { _mm512_storeu_ps(o + (i) * ldo, c##i##0); _mm512_storeu_ps(o + (i) * ldo + 16, c##i##1); }
/* three blocks: 24 accumulators, each broadcast feeding three FMAs (11
 * loads per 24 FMAs, where pairs take 10 per 16): a call on one block of
 * 8 rows, its panel streamed from L2, 5-9% faster; level with several
 * (bench/results/issue28_tile48_before_after_...) */
#define PRN__ZFMA3(i)                                                            \
    { const __m512 x = _mm512_set1_ps(ak[(i) * lda]);                            \
      c##i##0 = _mm512_fmadd_ps(x, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(x, w1, c##i##1); \
      c##i##2 = _mm512_fmadd_ps(x, w2, c##i##2); }
#define PRN__ZST3(i) { PRN__ZST2(i) _mm512_storeu_ps(o + (i) * ldo + 32, c##i##2); }
/* where the threes of Z blocks end: before a last 4, which go as two pairs
 * (one block alone would take the 8 x 16 kernel, 9 loads per 8 FMAs) */
PRN__FN_INLINE size_t prn__threes_end(size_t Z) { return Z % 3 == 1 && Z >= 4 ? Z - 4 : Z; }
#define PRN__ZFMA1(j) d##j = _mm512_fmadd_ps(x, _mm512_loadu_ps(pz + (j) * bs + k * 16), d##j)
PRN__FN PRN__AVX512 void prn__panel_mmz_f32z(size_t B, size_t K, const float *a, size_t lda, const float *p, size_t Z,
                                            float *out, size_t ldo) {
    const size_t B8 = B / 8 * 8, bs = K * 16, Z3 = prn__threes_end(Z);
    size_t z = 0, b, k;
    for (; z + 3 <= Z3; z += 3)
        for (b = 0; b < B8; b += 8) {
            const float *p0 = p + z * bs, *p1 = p0 + bs, *p2 = p1 + bs, *a0 = a + b * lda;
            float *o = out + b * ldo + z * 16;
            __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00, c20 = c00, c21 = c00;
            __m512 c22 = c00, c30 = c00, c31 = c00, c32 = c00, c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00;
            __m512 c52 = c00, c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
            for (k = 0; k < K; ++k) {
                const __m512 w0 = _mm512_loadu_ps(p0 + k * 16), w1 = _mm512_loadu_ps(p1 + k * 16), w2 = _mm512_loadu_ps(p2 + k * 16);
                const float *ak = a0 + k;
                PRN__ZFMA3(0) PRN__ZFMA3(1) PRN__ZFMA3(2) PRN__ZFMA3(3)
                PRN__ZFMA3(4) PRN__ZFMA3(5) PRN__ZFMA3(6) PRN__ZFMA3(7)
            }
            PRN__ZST3(0) PRN__ZST3(1) PRN__ZST3(2) PRN__ZST3(3) PRN__ZST3(4) PRN__ZST3(5) PRN__ZST3(6) PRN__ZST3(7)
        }
    for (; z + 2 <= Z; z += 2)
        for (b = 0; b < B8; b += 8) {
            const float *p0 = p + z * bs, *p1 = p0 + bs, *a0 = a + b * lda;
            float *o = out + b * ldo + z * 16;
            __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
            __m512 c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
            for (k = 0; k < K; ++k) {
                const __m512 w0 = _mm512_loadu_ps(p0 + k * 16), w1 = _mm512_loadu_ps(p1 + k * 16);
                const float *ak = a0 + k;
                PRN__ZFMA2(0) PRN__ZFMA2(1) PRN__ZFMA2(2) PRN__ZFMA2(3)
                PRN__ZFMA2(4) PRN__ZFMA2(5) PRN__ZFMA2(6) PRN__ZFMA2(7)
            }
            PRN__ZST2(0) PRN__ZST2(1) PRN__ZST2(2) PRN__ZST2(3) PRN__ZST2(4) PRN__ZST2(5) PRN__ZST2(6) PRN__ZST2(7)
        }
    if (z < Z && B8) prn__panel_mm_f32z(B8, K, a, lda, p + z * bs, out + z * 16, ldo);
    for (b = B8; b < B; ++b) {
        const float *ab = a + b * lda;
        float *o = out + b * ldo;
        for (z = 0; z + 8 <= Z; z += 8) {
            const float *pz = p + z * bs;
            __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0, d3 = d0, d4 = d0, d5 = d0, d6 = d0, d7 = d0;
            for (k = 0; k < K; ++k) {
                const __m512 x = _mm512_set1_ps(ab[k]);
                PRN__ZFMA1(0); PRN__ZFMA1(1); PRN__ZFMA1(2); PRN__ZFMA1(3);
                PRN__ZFMA1(4); PRN__ZFMA1(5); PRN__ZFMA1(6); PRN__ZFMA1(7);
            }
            _mm512_storeu_ps(o + z * 16, d0); _mm512_storeu_ps(o + z * 16 + 16, d1);
            _mm512_storeu_ps(o + z * 16 + 32, d2); _mm512_storeu_ps(o + z * 16 + 48, d3);
            _mm512_storeu_ps(o + z * 16 + 64, d4); _mm512_storeu_ps(o + z * 16 + 80, d5);
            _mm512_storeu_ps(o + z * 16 + 96, d6); _mm512_storeu_ps(o + z * 16 + 112, d7);
        }
        for (; z + 2 <= Z; z += 2) {
            const float *pz = p + z * bs;
            __m512 d0 = _mm512_setzero_ps(), d1 = d0;
            for (k = 0; k < K; ++k) {
                const __m512 x = _mm512_set1_ps(ab[k]);
                PRN__ZFMA1(0); PRN__ZFMA1(1);
            }
            _mm512_storeu_ps(o + z * 16, d0); _mm512_storeu_ps(o + z * 16 + 16, d1);
        }
        for (; z < Z; ++z) {
            const float *pz = p + z * bs;
            __m512 d0 = _mm512_setzero_ps();
            for (k = 0; k < K; ++k) {
                const __m512 x = _mm512_set1_ps(ab[k]);
                PRN__ZFMA1(0);
            }
            _mm512_storeu_ps(o + z * 16, d0);
        }
    }
}
#undef PRN__ZFMA2
#undef PRN__ZFMA3
#undef PRN__ZFMA1
#endif
#ifdef PRN__HAVE_AVX2
/* Four rows of 16 floats (two registers each) to out, ldo apart. */
PRN__FN_INLINE PRN__AVX2 void prn__st4x16_f32x(float *o, size_t ldo, __m256 c00, __m256 c01, __m256 c10, __m256 c11,
                                               __m256 c20, __m256 c21, __m256 c30, __m256 c31) {
    _mm256_storeu_ps(o, c00); _mm256_storeu_ps(o + 8, c01); o += ldo;
    _mm256_storeu_ps(o, c10); _mm256_storeu_ps(o + 8, c11); o += ldo;
    _mm256_storeu_ps(o, c20); _mm256_storeu_ps(o + 8, c21); o += ldo;
    _mm256_storeu_ps(o, c30); _mm256_storeu_ps(o + 8, c31);
}
/* The same with AVX2 and FMA: 4 rows x 16 columns in 8 registers (groups
 * of 8 rows by prn__panel_mm_f32z where the processor has AVX-512). */
PRN__FN PRN__AVX2 void prn__panel_mm_f32x(size_t B, size_t K, const float *a, size_t lda, const float *p, float *out,
                                         size_t ldo) {
    size_t b = 0, k;
#ifdef PRN__HAVE_AVX512
    if (B >= 8 && __builtin_cpu_supports("avx512f")) b = prn__panel_mm_f32z(B, K, a, lda, p, out, ldo);
#endif
    for (; b + 4 <= B; b += 4) {
        const float *a0 = a + b * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        float *o = out + b * ldo;
        for (k = 0; k < K; ++k) {
            const __m256 w0 = _mm256_loadu_ps(p + k * 16), w1 = _mm256_loadu_ps(p + k * 16 + 8);
            __m256 x = _mm256_broadcast_ss(a0 + k);
            c00 = _mm256_fmadd_ps(x, w0, c00); c01 = _mm256_fmadd_ps(x, w1, c01);
            x = _mm256_broadcast_ss(a1 + k);
            c10 = _mm256_fmadd_ps(x, w0, c10); c11 = _mm256_fmadd_ps(x, w1, c11);
            x = _mm256_broadcast_ss(a2 + k);
            c20 = _mm256_fmadd_ps(x, w0, c20); c21 = _mm256_fmadd_ps(x, w1, c21);
            x = _mm256_broadcast_ss(a3 + k);
            c30 = _mm256_fmadd_ps(x, w0, c30); c31 = _mm256_fmadd_ps(x, w1, c31);
        }
        prn__st4x16_f32x(o, ldo, c00, c01, c10, c11, c20, c21, c30, c31);
    }
    for (; b < B; ++b) {
        const float *a0 = a + b * lda;
        __m256 c00 = _mm256_setzero_ps(), c01 = c00;
        for (k = 0; k < K; ++k) {
            const __m256 x = _mm256_broadcast_ss(a0 + k);
            c00 = _mm256_fmadd_ps(x, _mm256_loadu_ps(p + k * 16), c00);
            c01 = _mm256_fmadd_ps(x, _mm256_loadu_ps(p + k * 16 + 8), c01);
        }
        _mm256_storeu_ps(out + b * ldo, c00); _mm256_storeu_ps(out + b * ldo + 8, c01);
    }
}
/* Z blocks (block z at p + z K 16, its output at out + z 16): with AVX-512
 * by prn__panel_mmz_f32z, the same bits. */
PRN__FN PRN__AVX2 void prn__panel_mmz_f32x(size_t B, size_t K, const float *a, size_t lda, const float *p, size_t Z,
                                          float *out, size_t ldo) {
    size_t z;
#ifdef PRN__HAVE_AVX512
    if (__builtin_cpu_supports("avx512f")) {
        prn__panel_mmz_f32z(B, K, a, lda, p, Z, out, ldo);
        return;
    }
#endif
    for (z = 0; z < Z; ++z) prn__panel_mm_f32x(B, K, a, lda, p + z * K * 16, out + z * 16, ldo);
}
#endif

#ifdef PRN__HAVE_AVX2
/* The forward gates with AVX2 and FMA, eight units at a time, for the
 * fused layers: e^x as prn__expf (same reduction and polynomial, by FMAs),
 * and 1 / y by the reciprocal estimate and one Newton step (relative error
 * about 2^-22). NaN stays NaN (max and min return their second operand
 * for NaN). The units past the last multiple of 8 take the f32 helpers. */
PRN__FN_INLINE PRN__AVX2 __m256 prn__exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(87.0f);
    __m256 n, r, p;
    __m256i e;
    x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
PRN__FN_INLINE PRN__AVX2 __m256 prn__recip8(__m256 y) {
    const __m256 r = _mm256_rcp_ps(y);
    return _mm256_fmadd_ps(r, _mm256_fnmadd_ps(r, y, _mm256_set1_ps(1.0f)), r);
}
PRN__FN_INLINE PRN__AVX2 __m256 prn__sigm8(__m256 x) {
    return prn__recip8(_mm256_add_ps(_mm256_set1_ps(1.0f), prn__exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
PRN__FN_INLINE PRN__AVX2 __m256 prn__tanh8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = prn__exp8(_mm256_add_ps(x, x));
    return _mm256_fnmadd_ps(_mm256_set1_ps(2.0f), prn__recip8(_mm256_add_ps(one, e)), one);
}
#define PRN__L8(p) _mm256_loadu_ps(p)
#define PRN__PRE8(g) _mm256_add_ps(_mm256_add_ps(PRN__L8(x + (g) * xs + i), PRN__L8(q + (g) * qs + i)), PRN__L8(bb + (g) * bs + i))
PRN__FN_INLINE PRN__AVX2 void prn__lstm_fw_f32x(size_t n, const float *x, size_t xs, const float *q, size_t qs,
                                               const float *bb, size_t bs, const float *cp, float *h, float *c, float *v,
                                               size_t vs) {
    size_t i = 0;
    /* c's tanh waits on three gates' exponentials: two rows of eight in
     * flight, so that the processor has independent work meanwhile */
    for (; i + 16 <= n; i += 16) {
        const __m256 ig = prn__sigm8(PRN__PRE8(0)), fg = prn__sigm8(PRN__PRE8(1)), gg = prn__tanh8(PRN__PRE8(2));
        const __m256 cn = _mm256_fmadd_ps(fg, PRN__L8(cp + i), _mm256_mul_ps(ig, gg));
        __m256 og, tc, ig2, fg2, gg2, cn2, og2, tc2;
        i += 8;
        ig2 = prn__sigm8(PRN__PRE8(0)); fg2 = prn__sigm8(PRN__PRE8(1)); gg2 = prn__tanh8(PRN__PRE8(2));
        cn2 = _mm256_fmadd_ps(fg2, PRN__L8(cp + i), _mm256_mul_ps(ig2, gg2));
        og2 = prn__sigm8(PRN__PRE8(3));
        i -= 8;
        og = prn__sigm8(PRN__PRE8(3));
        tc = prn__tanh8(cn);
        tc2 = prn__tanh8(cn2);
        _mm256_storeu_ps(h + i, _mm256_mul_ps(og, tc)); _mm256_storeu_ps(h + i + 8, _mm256_mul_ps(og2, tc2));
        _mm256_storeu_ps(c + i, cn); _mm256_storeu_ps(c + i + 8, cn2);
        if (v) {
            _mm256_storeu_ps(v + i, ig); _mm256_storeu_ps(v + vs + i, fg); _mm256_storeu_ps(v + 2 * vs + i, gg);
            _mm256_storeu_ps(v + 3 * vs + i, og); _mm256_storeu_ps(v + 4 * vs + i, tc);
            _mm256_storeu_ps(v + i + 8, ig2); _mm256_storeu_ps(v + vs + i + 8, fg2); _mm256_storeu_ps(v + 2 * vs + i + 8, gg2);
            _mm256_storeu_ps(v + 3 * vs + i + 8, og2); _mm256_storeu_ps(v + 4 * vs + i + 8, tc2);
        }
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 ig = prn__sigm8(PRN__PRE8(0)), fg = prn__sigm8(PRN__PRE8(1));
        const __m256 gg = prn__tanh8(PRN__PRE8(2)), og = prn__sigm8(PRN__PRE8(3));
        const __m256 cn = _mm256_fmadd_ps(fg, PRN__L8(cp + i), _mm256_mul_ps(ig, gg)), tc = prn__tanh8(cn);
        _mm256_storeu_ps(h + i, _mm256_mul_ps(og, tc));
        _mm256_storeu_ps(c + i, cn);
        if (v) {
            _mm256_storeu_ps(v + i, ig); _mm256_storeu_ps(v + vs + i, fg); _mm256_storeu_ps(v + 2 * vs + i, gg);
            _mm256_storeu_ps(v + 3 * vs + i, og); _mm256_storeu_ps(v + 4 * vs + i, tc);
        }
    }
    if (i < n) prn__lstm_fw_f32(n - i, x + i, xs, q + i, qs, bb + i, bs, cp + i, h + i, c + i, v ? v + i : NULL, vs);
}
PRN__FN_INLINE PRN__AVX2 void prn__gru_fw_f32x(size_t n, const float *x, size_t xs, const float *q, size_t qs,
                                              const float *bb, size_t bs, const float *hp, float *h, float *v, size_t vs) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 r = prn__sigm8(PRN__PRE8(0)), z = prn__sigm8(PRN__PRE8(1));
        const __m256 hn = _mm256_add_ps(PRN__L8(q + 2 * qs + i), PRN__L8(bb + 2 * bs + i));
        const __m256 nn = prn__tanh8(_mm256_fmadd_ps(r, hn, PRN__L8(x + 2 * xs + i)));
        _mm256_storeu_ps(h + i, _mm256_fmadd_ps(z, _mm256_sub_ps(PRN__L8(hp + i), nn), nn));
        if (v) {
            _mm256_storeu_ps(v + i, r); _mm256_storeu_ps(v + vs + i, z);
            _mm256_storeu_ps(v + 2 * vs + i, nn); _mm256_storeu_ps(v + 3 * vs + i, hn);
        }
    }
    if (i < n) prn__gru_fw_f32(n - i, x + i, xs, q + i, qs, bb + i, bs, hp + i, h + i, v ? v + i : NULL, vs);
}
PRN__FN_INLINE PRN__AVX2 void prn__elman_fw_f32x(size_t n, int relu, const float *x, const float *q, const float *bb,
                                                float *h) {
    size_t i = 0;
    if (!relu)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(h + i,
                             prn__tanh8(_mm256_add_ps(_mm256_add_ps(PRN__L8(x + i), PRN__L8(q + i)), PRN__L8(bb + i))));
    if (i < n) prn__elman_fw_f32(n - i, relu, x + i, q + i, bb + i, h + i);
}
#undef PRN__PRE8
#undef PRN__L8
#ifdef PRN__HAVE_AVX512
/* The LSTM forward gates with AVX-512, sixteen units at a time: per lane
 * the very instructions of prn__exp8 / prn__recip8 (the reciprocal
 * estimate taken by halves with the AVX one, whose bits differ from
 * AVX-512's own), so every lane gives prn__lstm_fw_f32x's bits; the
 * units past the last multiple of 16 by a masked vector, not the scalar
 * helper, so that a unit's bits never depend on where a range of units
 * starts or ends (the threads' split, a row alone or in a batch). h is
 * also written to h2 (the step's compact copy, when not NULL). */
PRN__FN_INLINE PRN__AVX512 __m512 prn__exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(87.0f);
    __m512 n, r, p;
    __m512i e;
    x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
    n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}
PRN__FN_INLINE PRN__AVX512 __m512 prn__recip16(__m512 y) {
    const __m512d yd = _mm512_castps_pd(y);
    const __m256 r0 = _mm256_rcp_ps(_mm256_castpd_ps(_mm512_castpd512_pd256(yd)));
    const __m256 r1 = _mm256_rcp_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(yd, 1)));
    const __m512 r = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(r0)), _mm256_castps_pd(r1), 1));
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(r, y, _mm512_set1_ps(1.0f)), r);
}
PRN__FN_INLINE PRN__AVX512 __m512 prn__sigm16(__m512 x) {
    return prn__recip16(_mm512_add_ps(_mm512_set1_ps(1.0f), prn__exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
PRN__FN_INLINE PRN__AVX512 __m512 prn__tanh16(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = prn__exp16(_mm512_add_ps(x, x));
    return _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), prn__recip16(_mm512_add_ps(one, e)), one);
}
#define PRN__L16(p) _mm512_maskz_loadu_ps(mk, p)
#define PRN__PRE16(g, i) _mm512_add_ps(_mm512_add_ps(PRN__L16(x + (g) * xs + (i)), PRN__L16(q + (g) * qs + (i))), PRN__L16(bb + (g) * bs + (i)))
#define PRN__ST16(p, a) _mm512_mask_storeu_ps(p, mk, a)
/* one vector of units at i (mask mk), its results stored */
PRN__FN_INLINE PRN__AVX512 void prn__lstm16(const float *x, size_t xs, const float *q, size_t qs, const float *bb,
                                            size_t bs, const float *cp, float *h, float *h2, float *c, float *v,
                                            size_t vs, __mmask16 mk, size_t i) {
    const __m512 ig = prn__sigm16(PRN__PRE16(0, i)), fg = prn__sigm16(PRN__PRE16(1, i));
    const __m512 gg = prn__tanh16(PRN__PRE16(2, i)), og = prn__sigm16(PRN__PRE16(3, i));
    const __m512 cn = _mm512_fmadd_ps(fg, PRN__L16(cp + i), _mm512_mul_ps(ig, gg)), tc = prn__tanh16(cn);
    const __m512 hv = _mm512_mul_ps(og, tc);
    PRN__ST16(h + i, hv); PRN__ST16(c + i, cn);
    if (h2) PRN__ST16(h2 + i, hv);
    if (v) {
        PRN__ST16(v + i, ig); PRN__ST16(v + vs + i, fg); PRN__ST16(v + 2 * vs + i, gg);
        PRN__ST16(v + 3 * vs + i, og); PRN__ST16(v + 4 * vs + i, tc);
    }
}
PRN__FN PRN__AVX512 void prn__lstm_fw_f32z(size_t n, const float *x, size_t xs, const float *q, size_t qs,
                                           const float *bb, size_t bs, const float *cp, float *h, float *h2, float *c,
                                           float *v, size_t vs) {
    size_t i = 0;
    __mmask16 mk = (__mmask16)0xFFFF;
    /* two vectors per pass: c's tanh waits on three gates' exponentials,
     * the other vector's work fills that wait */
    for (; i + 32 <= n; i += 32) {
        prn__lstm16(x, xs, q, qs, bb, bs, cp, h, h2, c, v, vs, mk, i);
        prn__lstm16(x, xs, q, qs, bb, bs, cp, h, h2, c, v, vs, mk, i + 16);
    }
    for (; i + 16 <= n; i += 16) prn__lstm16(x, xs, q, qs, bb, bs, cp, h, h2, c, v, vs, mk, i);
    if (i < n) {
        mk = (__mmask16)((1u << (n - i)) - 1u);
        prn__lstm16(x, xs, q, qs, bb, bs, cp, h, h2, c, v, vs, mk, i);
    }
}
#undef PRN__ST16
#undef PRN__PRE16
#undef PRN__L16
#endif
/* The fused layers' LSTM gates: h also copied to h2 (the step's compact
 * copy of h), by the AVX-512 loop where the processor has it. */
PRN__FN_INLINE PRN__AVX2 void prn__lstm_fw2_f32x(size_t n, const float *x, size_t xs, const float *q, size_t qs,
                                                const float *bb, size_t bs, const float *cp, float *h, float *h2,
                                                float *c, float *v, size_t vs) {
#ifdef PRN__HAVE_AVX512
    if (__builtin_cpu_supports("avx512f")) {
        prn__lstm_fw_f32z(n, x, xs, q, qs, bb, bs, cp, h, h2, c, v, vs);
        return;
    }
#endif
    prn__lstm_fw_f32x(n, x, xs, q, qs, bb, bs, cp, h, c, v, vs);
    memcpy(h2, h, n * sizeof(float));
}
/* the backward gates need no exponentials: the plain ones */
#define prn__elman_bw_f32x prn__elman_bw_f32
#define prn__lstm_bw_f32x prn__lstm_bw_f32
#define prn__gru_bw_f32x prn__gru_bw_f32
#endif

#ifndef PARRNN_NO_TRAINING /* only the layer backward takes the weight gradients */
/* The weight gradients inside the layer backward (rnn_layer_backward_dw):
 * each step the threads put every row's dq and h_{t-1} into a ring of
 * dwC steps (rq, rh; h padded with zeros to a multiple of 16 columns); at
 * the end of the chunk, after a barrier, thread j of m adds the chunk's
 * dq^T h to its rows of dwa, and dq's sums to db's, while the ring is in
 * the caches -- no pass over dq
 * (B T P) and h (B T H) in memory afterwards, nor their copies and
 * packings. Two rings alternate by chunk, so that a thread that goes on
 * with the next chunk's steps never writes one that another still reads.
 * Each entry's sum runs over the steps in the order the backward takes
 * them and, within a step, over the rows in order: an order set by B and T
 * alone, whatever the threads' split. */
/* Thread j's rows of dw: segment s < G of [*p0, *p1). Threads that split
 * the units (no dbar) take their units' rows of each gate, whose dq they
 * wrote themselves (no transfer between cores); threads that split the
 * batch a range of P / m rows. */
PRN__FN void prn__layer_dw_rows(const prn__layer *L, size_t j, size_t m, size_t u0, size_t u1, size_t s, size_t *p0,
                                size_t *p1) {
    const size_t pr = ((L->P + m - 1) / m + 7) / 8 * 8;
    if (!L->dbar) { *p0 = s * L->H + u0; *p1 = s * L->H + u1; return; }
    *p0 = j * pr < L->P ? j * pr : L->P;
    *p1 = *p0 + pr < L->P ? *p0 + pr : L->P;
    if (s) *p1 = *p0;
}
/* prn__tnacc_f32: TEMPLATE TNACC */
#define PRN__TPL_TNACC
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
/* prn__tnacc_f64: TEMPLATE TNACC */
#define PRN__TPL_TNACC
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
PRN__FN PRN__AVX2 void prn__panel_tnz_f32x(size_t R, size_t K, const float *a, size_t lda, size_t ts, const float *p,
                                          size_t pk, size_t ps, size_t Z, float *out, size_t ldo, int acc);
PRN__FN PRN__AVX2 void prn__tnacc_f32x(size_t R, size_t K, const float *a, size_t lda, const float *p, size_t N,
                                      float *out, int acc) {
    prn__panel_tnz_f32x(R, K, a, lda, 8, p, N, 16, N / 16, out, N, acc);
}
#endif
/* prn__layer_dwc_f32, prn__layer_dwput_f32: TEMPLATE LAYER_DW */
#define PRN__TPL_LAYER_DW
#define PRN__T float
#define PRN__SFX f32
#define PRN__ATTR
#include PARRNN_SELF_PATH
/* prn__layer_dwc_f64, prn__layer_dwput_f64: TEMPLATE LAYER_DW */
#define PRN__TPL_LAYER_DW
#define PRN__T double
#define PRN__SFX f64
#define PRN__ATTR
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* prn__layer_dwc_f32x, prn__layer_dwput_f32x: TEMPLATE LAYER_DW */
#define PRN__TPL_LAYER_DW
#define PRN__T float
#define PRN__SFX f32x
#define PRN__ATTR PRN__AVX2
#include PARRNN_SELF_PATH
#endif
#endif /* PARRNN_NO_TRAINING */

/* prn__layer_fw_f32, prn__layer_bw_f32: TEMPLATE LAYER */
#define PRN__TPL_LAYER
#define PRN__T float
#define PRN__SFX f32
#define PRN__UNIT f32
#define PRN__ATTR
#define PRN__MM prn__panel_mmz_f32
#include PARRNN_SELF_PATH
/* prn__layer_fw_f64, prn__layer_bw_f64: TEMPLATE LAYER */
#define PRN__TPL_LAYER
#define PRN__T double
#define PRN__SFX f64
#define PRN__UNIT f64
#define PRN__ATTR
#define PRN__MM prn__panel_mmz_f64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* prn__layer_fw_f32x, prn__layer_bw_f32x: TEMPLATE LAYER */
#define PRN__TPL_LAYER
#define PRN__T float
#define PRN__SFX f32x
#define PRN__UNIT f32x
#define PRN__ATTR PRN__AVX2
#define PRN__MM prn__panel_mmz_f32x
#include PARRNN_SELF_PATH
#endif

#if defined(PARRNN_USE_CBLAS) && defined(PRN__HAVE_AVX2)
/* OpenBLAS built with DYNAMIC_ARCH picks its kernels by the processor's
 * model, and on one it does not know (a virtual machine's "Intel Xeon
 * Processor", AVX-512 inside) falls back to its SSE3 kernels (core
 * "Prescott"): 26 GFLOP/s on one core where its AVX-512 ones run 80 and
 * this AVX2 panel kernel about 50, and the RNN layers' input projection is
 * such a product. A product of f32 (op(A) = A or A^T) then runs here, when
 * it is large enough to matter (M N K >= 2^18) and the processor has AVX2
 * and FMA. PARRNN_CBLAS_ALWAYS=1 in the environment keeps CBLAS. */
PRN__FN int prn__cblas_weak_f32(prn_context *ctx, size_t M, size_t N, size_t K, size_t batch) {
#ifdef OPENBLAS_VERSION
    static const char *const weak[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai",
                                       "Coppermine", "Northwood", "Banias", "Sandybridge", "Unknown"};
    const char *core = openblas_get_corename(), *env = getenv("PARRNN_CBLAS_ALWAYS");
    size_t i;
    (void)ctx;
    if (!prn__gemm_f32x_pays(PRN_F32, M, N, K, batch) || (env && env[0] == '1') || !core) return 0;
    for (i = 0; i < sizeof weak / sizeof weak[0]; ++i)
        if (strcmp(core, weak[i]) == 0) return 1;
#else
    (void)ctx; (void)M; (void)N; (void)K; (void)batch;
#endif
    return 0;
}
#endif

#ifdef PRN__HAVE_AVX2
/* prn__panel_mm_f32x for op(A) = A^T: out[r, 0..15] (+)= sum_k a[k * lda +
 * r] p[k * pk + 0..15], r < R -- a weight gradient's product (X^T dY, K
 * the batch rows times the steps; p packed, pk = 16, or B itself, pk its
 * ldb): the four rows of a step are adjacent in
 * memory, so A needs no packing. acc: add to out (the caller's earlier
 * block of K). Each entry sums k = 0, 1, ... by FMAs, as
 * prn__panel_mm_f32x's do. */
PRN__FN PRN__AVX2 void prn__panel_tn_f32x(size_t R, size_t K, const float *a, size_t lda, const float *p, size_t pk,
                                         float *out, size_t ldo, int acc) {
    size_t r = 0, k;
    for (; r + 4 <= R; r += 4) {
        const float *ar = a + r;
        float *o = out + r * ldo;
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        if (acc) {
            c00 = _mm256_loadu_ps(o); c01 = _mm256_loadu_ps(o + 8);
            c10 = _mm256_loadu_ps(o + ldo); c11 = _mm256_loadu_ps(o + ldo + 8);
            c20 = _mm256_loadu_ps(o + 2 * ldo); c21 = _mm256_loadu_ps(o + 2 * ldo + 8);
            c30 = _mm256_loadu_ps(o + 3 * ldo); c31 = _mm256_loadu_ps(o + 3 * ldo + 8);
        }
        for (k = 0; k < K; ++k) {
            const float *ak = ar + k * lda;
            const __m256 w0 = _mm256_loadu_ps(p + k * pk), w1 = _mm256_loadu_ps(p + k * pk + 8);
            __m256 x = _mm256_broadcast_ss(ak);
            c00 = _mm256_fmadd_ps(x, w0, c00); c01 = _mm256_fmadd_ps(x, w1, c01);
            x = _mm256_broadcast_ss(ak + 1);
            c10 = _mm256_fmadd_ps(x, w0, c10); c11 = _mm256_fmadd_ps(x, w1, c11);
            x = _mm256_broadcast_ss(ak + 2);
            c20 = _mm256_fmadd_ps(x, w0, c20); c21 = _mm256_fmadd_ps(x, w1, c21);
            x = _mm256_broadcast_ss(ak + 3);
            c30 = _mm256_fmadd_ps(x, w0, c30); c31 = _mm256_fmadd_ps(x, w1, c31);
        }
        prn__st4x16_f32x(o, ldo, c00, c01, c10, c11, c20, c21, c30, c31);
    }
    for (; r < R; ++r) {
        __m256 c00 = _mm256_setzero_ps(), c01 = c00;
        if (acc) { c00 = _mm256_loadu_ps(out + r * ldo); c01 = _mm256_loadu_ps(out + r * ldo + 8); }
        for (k = 0; k < K; ++k) {
            const __m256 x = _mm256_broadcast_ss(a + k * lda + r);
            c00 = _mm256_fmadd_ps(x, _mm256_loadu_ps(p + k * pk), c00);
            c01 = _mm256_fmadd_ps(x, _mm256_loadu_ps(p + k * pk + 8), c01);
        }
        _mm256_storeu_ps(out + r * ldo, c00); _mm256_storeu_ps(out + r * ldo + 8, c01);
    }
}
/* prn__panel_tn_f32x over Z blocks (block z at p + z ps, its output at out
 * + z 16): with AVX-512 8 rows by threes of blocks in 24 accumulators,
 * then a pair, as prn__panel_mmz_f32z, the rows past a multiple of 8 and
 * a last odd block by prn__panel_tn_f32x. The same chains of FMAs over k: the same bits. */
#ifdef PRN__HAVE_AVX512
#define PRN__TFMA2(i)                                                            \
    { const __m512 x = _mm512_set1_ps(ak[i]);                                    \
      c##i##0 = _mm512_fmadd_ps(x, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(x, w1, c##i##1); }
#define PRN__TLD2(i)                                                             \
    { c##i##0 = acc ? _mm512_loadu_ps(o + (i) * ldo) : _mm512_setzero_ps();       \
      c##i##1 = acc ? _mm512_loadu_ps(o + (i) * ldo + 16) : _mm512_setzero_ps(); }
#define PRN__TFMA3(i)                                                            \
    { const __m512 x = _mm512_set1_ps(ak[i]);                                    \
      c##i##0 = _mm512_fmadd_ps(x, w0, c##i##0); c##i##1 = _mm512_fmadd_ps(x, w1, c##i##1); \
      c##i##2 = _mm512_fmadd_ps(x, w2, c##i##2); }
#define PRN__TLD3(i) { PRN__TLD2(i) c##i##2 = acc ? _mm512_loadu_ps(o + (i) * ldo + 32) : _mm512_setzero_ps(); }
/* Returns the blocks it did: by threes (as prn__panel_mmz_f32z), then a
 * pair; a last odd one is the caller's.
 * PRN__TN_AHEAD: each k asks for the line of a PRN__TN_AHEAD rows on (and,
 * in a group's first tile, those of p): in the layer backward's weight
 * gradients (rnn_layer_backward_dw) a and p are the chunk's rings, half of
 * their rows just written by the other core, and a tile waited on each of
 * those lines in turn -- 48-55% of the FMA peak there against 67-76% for
 * the same call on lines already in this core's caches. 8 ahead: that part
 * 7-14% faster (LSTM fwd+bwd, H 64-256, B 16-64, 2 threads); 4 a little
 * less, 12 no better than 4. prn__gemm_f32x's packed a (lda 8) is level.
 * With acc, the first 8 k also ask for the next tile's 8 rows of out: a
 * tile began by waiting on its 24 lines of them, from L3 at H 512 (the
 * layer's sums: 2.4 MiB a thread). The kernel alone 1.00-1.04x on the
 * layer's shapes, most at H 512; all 24 asked for at a tile's start: level.
 * Hints only: the same FMAs, the same bits. */
#define PRN__TN_AHEAD 8
/* the hints of one k of a tile of W blocks (2 or 3): a's line ahead; Q p's
 * lines (the group's first tile); E the next tile's row k of out (k < 8) */
#define PRN__TN_HINTS(W, E, Q)                                                   \
    if (k + PRN__TN_AHEAD < K) {                                                 \
        PRN__PREFETCH(ak + PRN__TN_AHEAD * lda);                                 \
        if (Q) {                                                                 \
            PRN__PREFETCH(p0 + (k + PRN__TN_AHEAD) * pk); PRN__PREFETCH(p1 + (k + PRN__TN_AHEAD) * pk); \
            if (W == 3) PRN__PREFETCH(p1 + (k + PRN__TN_AHEAD) * pk + ps);       \
        }                                                                        \
    }                                                                            \
    if (E) {                                                                     \
        PRN__PREFETCH(no + k * ldo); PRN__PREFETCH(no + k * ldo + 16);           \
        if (W == 3) PRN__PREFETCH(no + k * ldo + 32);                            \
    }
/* one k of a tile of 3 and of 2 blocks */
#define PRN__TN_K3(E, Q)                                                         \
    {   const float *ak = ar + k * lda;                                          \
        const __m512 w0 = _mm512_loadu_ps(p0 + k * pk), w1 = _mm512_loadu_ps(p1 + k * pk), \
                     w2 = _mm512_loadu_ps(p1 + k * pk + ps);                     \
        PRN__TN_HINTS(3, E, Q)                                                   \
        PRN__TFMA3(0) PRN__TFMA3(1) PRN__TFMA3(2) PRN__TFMA3(3)                  \
        PRN__TFMA3(4) PRN__TFMA3(5) PRN__TFMA3(6) PRN__TFMA3(7)                  \
    }
#define PRN__TN_K2(E, Q)                                                         \
    {   const float *ak = ar + k * lda;                                          \
        const __m512 w0 = _mm512_loadu_ps(p0 + k * pk), w1 = _mm512_loadu_ps(p1 + k * pk); \
        PRN__TN_HINTS(2, E, Q)                                                   \
        PRN__TFMA2(0) PRN__TFMA2(1) PRN__TFMA2(2) PRN__TFMA2(3)                  \
        PRN__TFMA2(4) PRN__TFMA2(5) PRN__TFMA2(6) PRN__TFMA2(7)                  \
    }
/* a tile's k loop: the first 8 with the next tile's rows of out asked for
 * (when there is one and out is read), the group's first tile with p's.
 * Four loops rather than one with the two tests inside: that one was
 * 3-5% slower (the kernel alone, H 256-512 shapes). */
#define PRN__TN_LOOP(W)                                                          \
    {   const size_t k8 = acc && no ? (K < 8 ? K : 8) : 0;                       \
        if (r == 0) {                                                            \
            for (k = 0; k < k8; ++k) PRN__TN_K##W(1, 1)                          \
            for (; k < K; ++k) PRN__TN_K##W(0, 1)                                \
        } else {                                                                 \
            for (k = 0; k < k8; ++k) PRN__TN_K##W(1, 0)                          \
            for (; k < K; ++k) PRN__TN_K##W(0, 0)                                \
        }                                                                        \
    }
PRN__FN PRN__AVX512 size_t prn__panel_tnz_f32z(size_t R, size_t K, const float *a, size_t lda, size_t ts, const float *p,
                                              size_t pk, size_t ps, size_t Z, float *out, size_t ldo, int acc) {
    const size_t R8 = R / 8 * 8, Z3 = prn__threes_end(Z);
    size_t z = 0, r, k;
    for (; z + 3 <= Z3; z += 3)
        for (r = 0; r < R8; r += 8) {
            const float *p0 = p + z * ps, *p1 = p0 + ps, *ar = a + r / 8 * ts;
            float *o = out + r * ldo + z * 16;
            /* the next tile: 8 rows down, or the next group's first */
            const float *no = r + 8 < R8 ? o + 8 * ldo : z + 6 <= Z3 ? out + (z + 3) * 16 : NULL;
            __m512 c00, c01, c02, c10, c11, c12, c20, c21, c22, c30, c31, c32, c40, c41, c42, c50, c51, c52;
            __m512 c60, c61, c62, c70, c71, c72;
            PRN__TLD3(0) PRN__TLD3(1) PRN__TLD3(2) PRN__TLD3(3) PRN__TLD3(4) PRN__TLD3(5) PRN__TLD3(6) PRN__TLD3(7)
            PRN__TN_LOOP(3)
            PRN__ZST3(0) PRN__ZST3(1) PRN__ZST3(2) PRN__ZST3(3) PRN__ZST3(4) PRN__ZST3(5) PRN__ZST3(6) PRN__ZST3(7)
        }
    for (; z + 2 <= Z; z += 2)
        for (r = 0; r < R8; r += 8) {
            const float *p0 = p + z * ps, *p1 = p0 + ps, *ar = a + r / 8 * ts;
            float *o = out + r * ldo + z * 16;
            const float *no = r + 8 < R8 ? o + 8 * ldo : z + 4 <= Z ? out + (z + 2) * 16 : NULL;
            __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
            PRN__TLD2(0) PRN__TLD2(1) PRN__TLD2(2) PRN__TLD2(3) PRN__TLD2(4) PRN__TLD2(5) PRN__TLD2(6) PRN__TLD2(7)
            PRN__TN_LOOP(2)
            PRN__ZST2(0) PRN__ZST2(1) PRN__ZST2(2) PRN__ZST2(3) PRN__ZST2(4) PRN__ZST2(5) PRN__ZST2(6) PRN__ZST2(7)
        }
    return z;
}
#undef PRN__TN_HINTS
#undef PRN__TN_K3
#undef PRN__TN_K2
#undef PRN__TN_LOOP
#undef PRN__TFMA2
#undef PRN__TFMA3
#undef PRN__TN_AHEAD
#undef PRN__TLD2
#undef PRN__TLD3
#undef PRN__ZST2 /* the 8 x 32 and 8 x 48 tile stores of both AVX-512 panel kernels */
#undef PRN__ZST3
#endif
PRN__FN PRN__AVX2 void prn__panel_tnz_f32x(size_t R, size_t K, const float *a, size_t lda, size_t ts, const float *p,
                                          size_t pk, size_t ps, size_t Z, float *out, size_t ldo, int acc) {
    size_t z = 0, r;
#ifdef PRN__HAVE_AVX512
    const size_t zd = R >= 8 && __builtin_cpu_supports("avx512f") ? prn__panel_tnz_f32z(R, K, a, lda, ts, p, pk, ps, Z, out, ldo, acc) : 0;
    z = zd;
#endif
    /* blocks the AVX-512 loop left (or all): by 8 rows, then the rest; rows
     * [r, r + 8) of a at a + r / 8 ts */
    for (; z < Z; ++z)
        for (r = 0; r < R; r += 8)
            prn__panel_tn_f32x(R - r < 8 ? R - r : 8, K, a + r / 8 * ts, lda, p + z * ps, pk, out + r * ldo + z * 16, ldo, acc);
    /* the rows past a multiple of 8 of the blocks it did */
#ifdef PRN__HAVE_AVX512
    if (R % 8) /* (zd > 0: R >= 8, with AVX-512) */
        for (z = 0; z < zd; ++z)
            prn__panel_tn_f32x(R % 8, K, a + R / 8 * ts, lda, p + z * ps, pk, out + R / 8 * 8 * ldo + z * 16, ldo, acc);
#endif
}
#endif

#ifdef PRN__HAVE_AVX2
/* C = alpha op(A) op(B) + beta C by prn__panel_mm_f32x (op(A) = A) or
 * prn__panel_tn_f32x (A^T): op(B) packed once per matrix into blocks of 16
 * columns [K][16] (zero past N), then tiles of 64 rows x 16 columns over
 * prn__team's threads, each combined into C. Every entry is one kernel's
 * sum over all of K: the same bits with any number of threads, so that
 * the team may follow the machine's load (unlike a CBLAS's threads). Fails
 * (C untouched) when the packing buffer cannot be allocated. */
PRN__FN PRN__AVX2 prn_status prn__gemm_f32x(prn_context *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                                            float alpha, const float *A, size_t lda, size_t sa, const float *B,
                                            size_t ldb, size_t sb, float beta, float *C, size_t ldc, size_t sc,
                                            size_t batch) {
    const size_t nb = (N + 15) / 16, nb2 = (nb + 1) / 2, nr = (M + 63) / 64;
    /* A^T with B as it is (whole blocks of 16 columns along its rows): the
     * kernel reads B in place, its rows ldb apart -- no packing pass over K
     * N of it (a weight gradient's K is the batch times the steps: the pass
     * and its buffer, 16 MiB at B 64 T 1000 N 64, cost a serial trip
     * through memory). Rows of 512 bytes at most: at ldb = 256 (1 KiB) a
     * chunk's rows crowd a few L1 sets, 5% slower than packed (N = 256). */
    const int direct = trans_a && !trans_b && N % 16 == 0 && ldb <= 128;
    float *pan = direct ? NULL : (float *)prn__alloc_quiet(ctx, nb * K * 16 * sizeof(float));
    /* A^T: its sums [M][nb 16], then each thread's chunk of A (256 x its
     * slab of rows, a multiple of 8: M + 8 per thread at most) */
    const size_t wn = trans_a ? M * nb * 16 + 256 * (M + 8 * (size_t)prn_context_num_threads(ctx)) : 0;
    float *wk = wn ? (float *)prn__alloc_quiet(ctx, wn * sizeof(float)) : NULL;
    size_t bi;
    PRN__PAR_SETUP(ctx, M * N * K / 8);
    if ((!direct && !pan) || (wn && !wk)) {
        prn_free(ctx, pan);
        prn_free(ctx, wk);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "gemm: out of memory for the packed matrices (%lu bytes)",
                        (unsigned long)(((direct ? 0 : nb * K * 16) + wn) * sizeof(float)));
    }
    for (bi = 0; bi < batch; ++bi) {
        const float *Bb = B + bi * sb, *Ab = A + bi * sa;
        float *Cb = C + bi * sc;
        size_t blk, task;
        for (blk = 0; !direct && blk < nb; ++blk) {
            size_t k, c;
            for (k = 0; k < K; ++k)
                for (c = 0; c < 16; ++c) {
                    const size_t j = blk * 16 + c;
                    pan[(blk * K + k) * 16 + c] = j >= N ? 0.0f : trans_b ? Bb[j * ldb + k] : Bb[k * ldb + j];
                }
        }
        if (trans_a) {
            /* A^T (a weight gradient: K the batch rows times the steps, long):
             * a slab of rows per thread, K in chunks of 256 outermost, so that
             * the chunk of A (its rows) and of the panel stay in L2 while every
             * column block uses them; by 64-row tiles per column block (K whole)
             * both streamed from memory once per tile. Each entry runs on in
             * order through acc: the same chain of FMAs, the same bits. */
            const size_t slabs = prn__par ? (size_t)prn__nt : 1, sr = ((M + slabs - 1) / slabs + 7) / 8 * 8;
            size_t sl;
            PRN__PARFOR
            for (sl = 0; sl < slabs; ++sl) {
                const size_t i0 = sl * sr < M ? sl * sr : M, rows = M - i0 < sr ? M - i0 : sr;
                float *acc = wk + i0 * nb * 16, *ap = wk + M * nb * 16 + sl * sr * 256;
                size_t k0, r, c, k;
                for (k0 = 0; rows && k0 < K; k0 += 256) {
                    const size_t kc = K - k0 < 256 ? K - k0 : 256;
                    /* the chunk of A by 8 rows [k][8]: rows of A are lda apart, and
                     * at lda = 1024 (4 KiB) every k fell in the same L1 set */
                    for (k = 0; k < kc; ++k) { /* along A's rows: each read once, in order */
                        const float *sk = Ab + (k0 + k) * lda + i0;
                        for (r = 0; r + 8 <= rows; r += 8) memcpy(ap + (r / 8 * kc + k) * 8, sk + r, 8 * sizeof(float));
                        for (c = 0; r < rows && c < 8; ++c) ap[(r / 8 * kc + k) * 8 + c] = r + c < rows ? sk[r + c] : 0.0f;
                    }
                    if (direct) prn__panel_tnz_f32x(rows, kc, ap, 8, kc * 8, Bb + k0 * ldb, ldb, 16, nb, acc, nb * 16, k0 > 0);
                    else prn__panel_tnz_f32x(rows, kc, ap, 8, kc * 8, pan + k0 * 16, 16, K * 16, nb, acc, nb * 16, k0 > 0);
                }
                for (r = 0; r < rows; ++r) {
                    float *cr = Cb + (i0 + r) * ldc;
                    const float *tr = acc + r * nb * 16;
                    if (beta == 0.0f) { for (c = 0; c < N; ++c) cr[c] = alpha * tr[c]; }
                    else { for (c = 0; c < N; ++c) cr[c] = alpha * tr[c] + beta * cr[c]; }
                }
            }
            continue;
        }
        /* tasks: a tile of 64 rows x 32 columns (two blocks: one broadcast
         * of A feeds both, prn__panel_mmz_f32x) each, row tiles outer, so
         * that a thread's consecutive tasks share their rows of A */
        PRN__PARFOR
        for (task = 0; task < nr * nb2; ++task) {
            float tile[64 * 32];
            const size_t i0 = task / nb2 * 64, rows = M - i0 < 64 ? M - i0 : 64, jb = task % nb2 * 2;
            const size_t j0 = jb * 16, cols = N - j0 < 32 ? N - j0 : 32, z = nb - jb < 2 ? 1 : 2;
            size_t r, c;
            prn__panel_mmz_f32x(rows, K, Ab + i0 * lda, lda, pan + jb * K * 16, z, tile, 32);
            for (r = 0; r < rows; ++r) {
                float *cr = Cb + (i0 + r) * ldc + j0;
                const float *tr = tile + r * 32;
                if (beta == 0.0f) { for (c = 0; c < cols; ++c) cr[c] = alpha * tr[c]; }
                else { for (c = 0; c < cols; ++c) cr[c] = alpha * tr[c] + beta * cr[c]; }
            }
        }
    }
    prn_free(ctx, pan);
    prn_free(ctx, wk);
    return PRN_OK;
}
#endif

/* Small steps: one thread, the batch across the vector lanes. A step whose
 * work does not pay a barrier (prn__layer_begin), with H < 8 (or H = 8 and
 * B >= 8), runs on the calling thread with every buffer laid out
 * [feature][lane], lane = batch row, the rows
 * rounded up to a multiple of 8 (Bp) so that the gate loops run whole
 * vectors: one call of the gate loop per step covers every unit of every
 * row (the rows' dependency chains in flight side by side), and W_hh h is
 * G H H multiply-adds of a broadcast weight over the lanes. No per-row
 * calls, panels, prefetches or copies inside a step: below H = 8 those cost
 * more than the step. Inputs and outputs move between [B, T, *] and this
 * layout in chunks of C steps that stay in the L1/L2 caches; the copies do
 * not depend on the recurrence, so the processor overlaps them with it.
 * Padded lanes compute on zeros and are never written back. */
#define PRN__LANES_MAX_H 8     /* above, the threaded loop (on one thread) is as fast or faster */
#define PRN__LANES_BUDGET 8192 /* elements of a chunk's buffers */
/* Workspace elements of the lanes loop; *C steps per chunk, *Bp lanes. */
PRN__FN size_t prn__lanes_plan(const prn__layer *L, int bw, size_t *C, size_t *Bp) {
    const size_t VH = L->V * L->H;
    const size_t per = bw ? 2 * L->S + VH + 2 * L->P : L->P + L->S + VH; /* per step and lane */
    const size_t fixed = bw ? 2 * L->H : 2 * L->P + L->S;                 /* carries; q, bias, state */
    *Bp = (L->B + 7) / 8 * 8;
    *C = PRN__LANES_BUDGET / (per * *Bp);
    if (*C > L->Tn) *C = L->Tn;
    if (*C > 256) *C = 256;
    if (*C < 1) *C = 1;
    return (*C * per + fixed) * *Bp;
}
/* prn__tr8_f32: TEMPLATE TR8 */
#define PRN__TPL_TR8
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
/* prn__tr8_f64: TEMPLATE TR8 */
#define PRN__TPL_TR8
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* The same in registers: rows interleaved in pairs, then quadruples, then
 * the 128-bit halves exchanged. */
PRN__FN_INLINE PRN__AVX2 void prn__tr8_f32x(const float *s, size_t ls, float *d, size_t ld) {
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ls), r2 = _mm256_loadu_ps(s + 2 * ls);
    __m256 r3 = _mm256_loadu_ps(s + 3 * ls), r4 = _mm256_loadu_ps(s + 4 * ls), r5 = _mm256_loadu_ps(s + 5 * ls);
    __m256 r6 = _mm256_loadu_ps(s + 6 * ls), r7 = _mm256_loadu_ps(s + 7 * ls);
    __m256 a0 = _mm256_unpacklo_ps(r0, r1), a1 = _mm256_unpackhi_ps(r0, r1), a2 = _mm256_unpacklo_ps(r2, r3);
    __m256 a3 = _mm256_unpackhi_ps(r2, r3), a4 = _mm256_unpacklo_ps(r4, r5), a5 = _mm256_unpackhi_ps(r4, r5);
    __m256 a6 = _mm256_unpacklo_ps(r6, r7), a7 = _mm256_unpackhi_ps(r6, r7);
    __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xee);
    __m256 b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xee);
    __m256 b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xee);
    __m256 b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xee);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(b0, b4, 0x20));
    _mm256_storeu_ps(d + ld, _mm256_permute2f128_ps(b1, b5, 0x20));
    _mm256_storeu_ps(d + 2 * ld, _mm256_permute2f128_ps(b2, b6, 0x20));
    _mm256_storeu_ps(d + 3 * ld, _mm256_permute2f128_ps(b3, b7, 0x20));
    _mm256_storeu_ps(d + 4 * ld, _mm256_permute2f128_ps(b0, b4, 0x31));
    _mm256_storeu_ps(d + 5 * ld, _mm256_permute2f128_ps(b1, b5, 0x31));
    _mm256_storeu_ps(d + 6 * ld, _mm256_permute2f128_ps(b2, b6, 0x31));
    _mm256_storeu_ps(d + 7 * ld, _mm256_permute2f128_ps(b3, b7, 0x31));
}
#endif
/* prn__lanes_in_f32, prn__lanes_out_f32, prn__lanes_get_f32, prn__lanes_put_f32: TEMPLATE LANES_COPY */
#define PRN__TPL_LANES_COPY
#define PRN__T float
#define PRN__SFX f32
#define PRN__TR f32
#define PRN__ATTR
#include PARRNN_SELF_PATH
/* prn__lanes_in_f64, prn__lanes_out_f64, prn__lanes_get_f64, prn__lanes_put_f64: TEMPLATE LANES_COPY */
#define PRN__TPL_LANES_COPY
#define PRN__T double
#define PRN__SFX f64
#define PRN__TR f64
#define PRN__ATTR
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* prn__lanes_in_f32x, prn__lanes_out_f32x, prn__lanes_get_f32x, prn__lanes_put_f32x: TEMPLATE LANES_COPY */
#define PRN__TPL_LANES_COPY
#define PRN__T float
#define PRN__SFX f32x
#define PRN__TR f32x
#define PRN__ATTR PRN__AVX2
#include PARRNN_SELF_PATH
#endif
/* c + a b as the threaded loop's product computes it: with AVX2 one FMA
 * (prn__panel_mm_f32x), else a product and a sum (prn__panel_mm_f32/f64) */
#define PRN__LANES_MAC_f32(a, b, c) ((c) + (a) * (b))
#define PRN__LANES_MAC_f64(a, b, c) ((c) + (a) * (b))
#define PRN__LANES_MAC_f32x(a, b, c) __builtin_fmaf((a), (b), (c))
/* prn__lanes_fw_f32, prn__lanes_bw_f32: TEMPLATE LANES */
#define PRN__TPL_LANES
#define PRN__T float
#define PRN__SFX f32
#define PRN__UNIT f32
#define PRN__CP f32
#define PRN__ATTR
#include PARRNN_SELF_PATH
/* prn__lanes_fw_f64, prn__lanes_bw_f64: TEMPLATE LANES */
#define PRN__TPL_LANES
#define PRN__T double
#define PRN__SFX f64
#define PRN__UNIT f64
#define PRN__CP f64
#define PRN__ATTR
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* prn__lanes_fw_f32x, prn__lanes_bw_f32x: TEMPLATE LANES */
#define PRN__TPL_LANES
#define PRN__T float
#define PRN__SFX f32x
#define PRN__UNIT f32x
#define PRN__CP f32x
#define PRN__ATTR PRN__AVX2
#include PARRNN_SELF_PATH
#endif
#ifdef PRN__HAVE_AVX2
/* prn__lanes_fw_f32x for a GRU of one unit (the smallest networks, where a
 * step is one chain of exponentials and its latency is the layer's time):
 * each group of 8 lanes keeps its state in a register across the steps of
 * a chunk, with no store and reload of q and h per step, and two groups'
 * chains run interleaved. The operations are prn__gru_fw_f32x's with q =
 * w h, in the same order: the same bits as the general loop. */
PRN__FN_INLINE PRN__AVX2 __m256 prn__gru1_step(__m256 h, const float *xg, float *og, float *vg, const float *Sv,
                                               size_t Bp, __m256 w0, __m256 w1, __m256 w2, __m256 b0, __m256 b1,
                                               __m256 b2) {
    const __m256 r_ = prn__sigm8(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(xg), _mm256_mul_ps(w0, h)), b0));
    const __m256 z_ = prn__sigm8(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(xg + Bp), _mm256_mul_ps(w1, h)), b1));
    const __m256 hn_ = _mm256_add_ps(_mm256_mul_ps(w2, h), b2);
    const __m256 nn_ = prn__tanh8(_mm256_fmadd_ps(r_, hn_, _mm256_loadu_ps(xg + 2 * Bp)));
    h = _mm256_fmadd_ps(z_, _mm256_sub_ps(h, nn_), nn_);
    _mm256_storeu_ps(og, h);
    if (Sv) {
        _mm256_storeu_ps(vg, r_); _mm256_storeu_ps(vg + Bp, z_);
        _mm256_storeu_ps(vg + 2 * Bp, nn_); _mm256_storeu_ps(vg + 3 * Bp, hn_);
    }
    return h;
}
PRN__FN PRN__AVX2 void prn__lanes_gru1_fw_f32x(const prn__layer *L, size_t C, size_t Bp) {
    const size_t B = L->B, TT = L->Tn, P = 3, VH = 4; /* S = H = 1 */
    const float *W = (const float *)L->w, *bias = (const float *)L->bias;
    float *xt = (float *)L->ws, *ot = xt + C * P * Bp, *vt = ot + C * Bp, *q = vt + C * VH * Bp, *bl = q + P * Bp;
    float *pv = bl + P * Bp, *Sv = L->saved ? (float *)L->saved : NULL;
    const __m256 w0 = _mm256_set1_ps(W[0]), w1 = _mm256_set1_ps(W[1]), w2 = _mm256_set1_ps(W[2]);
    const __m256 b0 = _mm256_set1_ps(bias[0]), b1 = _mm256_set1_ps(bias[1]), b2 = _mm256_set1_ps(bias[2]);
    const int rev = L->rev;
    size_t k0, i, c, l0, cn, ta;
    prn__lanes_get_f32x((const float *)L->s0, B, 1, 1, 0, 1, Bp, pv);
    for (k0 = 0; k0 < TT; k0 += C) {
        cn = TT - k0 < C ? TT - k0 : C;
        ta = rev ? TT - k0 - cn : k0;
        prn__lanes_get_f32x((const float *)L->xp, B, TT, P, ta, cn, Bp, xt);
        for (l0 = 0; l0 + 16 <= Bp; l0 += 16) {
            __m256 ha = _mm256_loadu_ps(pv + l0), hb = _mm256_loadu_ps(pv + l0 + 8);
            for (i = 0; i < cn; ++i) {
                float *xg = xt + (c = rev ? cn - 1 - i : i) * P * Bp + l0, *og = ot + c * Bp + l0, *vg = vt + c * VH * Bp + l0;
                ha = prn__gru1_step(ha, xg, og, vg, Sv, Bp, w0, w1, w2, b0, b1, b2);
                hb = prn__gru1_step(hb, xg + 8, og + 8, vg + 8, Sv, Bp, w0, w1, w2, b0, b1, b2);
            }
        }
        for (; l0 < Bp; l0 += 8) {
            __m256 ha = _mm256_loadu_ps(pv + l0);
            for (i = 0; i < cn; ++i) {
                float *xg = xt + (c = rev ? cn - 1 - i : i) * P * Bp + l0, *og = ot + c * Bp + l0, *vg = vt + c * VH * Bp + l0;
                ha = prn__gru1_step(ha, xg, og, vg, Sv, Bp, w0, w1, w2, b0, b1, b2);
            }
        }
        prn__lanes_put_f32x(ot, B, TT, 1, ta, cn, Bp, (float *)L->states);
        if (Sv) prn__lanes_put_f32x(vt, B, TT, VH, ta, cn, Bp, Sv);
        memcpy(pv, ot + (rev ? 0 : cn - 1) * Bp, Bp * sizeof(float));
    }
}
#endif

/* The threads' split of the batch (prn__layer.by_rows): rows [r0, r1) of
 * L as a layer of their own (its buffers moved to row r0, ws not set), and
 * the elements of workspace a thread needs for r rows, a multiple of 16
 * (each thread's part starts on a cache line). */
#define PRN__LAYER_ROWS_MIN ((size_t)1 << 20) /* B T P H: a fork per call pays */
#define PRN__LAYER_ROWS_MAX_W ((size_t)2 << 20) /* bytes of W_hh: past them, few rows split by units */
PRN__FN void prn__layer_rows(const prn__layer *L, size_t es, size_t r0, size_t r1, prn__layer *R) {
    const size_t T = L->Tn;
#define PRN__MOVE(p, per) ((p) ? (void *)((char *)(uintptr_t)(p) + r0 * (per) * es) : NULL)
    *R = *L;
    R->B = r1 - r0;
    R->by_rows = 0;
    R->xp = PRN__MOVE(L->xp, T * L->P); R->x = PRN__MOVE(L->x, T * L->NI); R->s0 = PRN__MOVE(L->s0, L->S); R->g = PRN__MOVE(L->g, T * (L->cs ? L->H : L->S));
    R->states = PRN__MOVE(L->states, T * L->S); R->saved = PRN__MOVE(L->saved, T * L->V * L->H);
    R->dxp = PRN__MOVE(L->dxp, T * L->P); R->dq = PRN__MOVE(L->dq, T * L->P); R->ds0 = PRN__MOVE(L->ds0, L->S);
    R->y = PRN__MOVE(L->y, T * L->H); R->fin = PRN__MOVE(L->fin, L->S); R->cs = PRN__MOVE(L->cs, T * L->H);
#undef PRN__MOVE
}
PRN__FN size_t prn__layer_rows_ws(const prn__layer *L, int bw, size_t r) {
    prn__layer R = *L;
    size_t u0, u1, nb;
    R.B = r;
    return (prn__layer_plan(&R, bw, 1, 0, &u0, &u1, &nb) + 2 * r * (bw ? L->P : 2 * L->H) + 15) / 16 * 16;
}
/* Checks and workspace shared by both entries; *run is the thread body. */
PRN__FN prn_status prn__layer_begin(prn_context *ctx, const char *fn, prn__layer *L, int bw, prn_dtype dtype, int *nt,
                                    void **raw) {
    size_t m, need = 0, es = prn_dtype_size(dtype), u0, u1, nb, off = 0;
    PRN__TRY(prn_backend_rnn_layer_check(ctx, fn, L->kind, bw, L->saved));
    if (dtype != PRN_F32 && dtype != PRN_F64)
        return prn_set_error(ctx, PRN_ERR_DTYPE, "%s: dtype %s is not f32 or f64", fn, prn_dtype_name(dtype));
    L->G = L->kind == PRN_RNN_LSTM ? 4 : L->kind == PRN_RNN_GRU ? 3 : 1;
    L->P = L->G * L->H;
    L->S = L->kind == PRN_RNN_LSTM ? 2 * L->H : L->H;
    L->V = prn__gates_saved(L->kind);
    /* With rows enough, the threads split the batch: each runs every step
     * of its rows, with no barrier (a barrier per step stalls for as long
     * as another process holds the thread it waits for). Else a thread per
     * 16 units at most, and none but one for small steps: a barrier costs
     * about what 10^4 multiply-adds do. The lanes loop (below) keeps its
     * one thread. Every split computes the same bits. */
    *nt = prn__team(ctx);
    L->by_rows = *nt > 1 && L->B >= 2 && !(L->H <= PRN__LANES_MAX_H && (L->H < 8 || L->B >= 8)) &&
                 L->B * L->Tn * L->P * L->H >= PRN__LAYER_ROWS_MIN;
    /* With W_hh larger than a core's L2 (H 512 in f32): each thread of the
     * batch split streams all of it from L3 every step, and with fewer than
     * 16 rows each its product waits on that stream; split by units, each
     * thread streams its half (forward, H 512, B 16: 0.21 -> 0.17 s LSTM,
     * 0.16 -> 0.12 s GRU; the backward's product dq W_hh likewise: LSTM
     * fwd+bwd 0.53 -> 0.50 s, GRU 0.46 -> 0.42 s; T 1000, 2 threads). */
    if (L->by_rows && L->P * L->H * es > PRN__LAYER_ROWS_MAX_W && L->B < 16 * (size_t)*nt) L->by_rows = 0;
    if (L->by_rows) {
        if ((size_t)*nt > L->B) *nt = (int)L->B;
    } else {
        if ((size_t)*nt > L->H / 16) *nt = (int)(L->H / 16);
        if (*nt < 1 || L->B * L->P * L->H < 32768) *nt = 1;
    }
    /* the lanes loop pads the batch to 8 lanes, the threaded loop the units
     * to 16: at H = 8 one row in 8 lanes is slower (36 vs 31 ms, T = 1e5) */
    if (*nt == 1 && L->H <= PRN__LANES_MAX_H && (L->H < 8 || L->B >= 8) && L->B && L->Tn)
        need = prn__lanes_plan(L, bw, &L->lanes_C, &L->lanes_Bp);
    /* OpenMP may give fewer threads than asked: room for any team size */
    for (m = 1; !L->lanes_C && m <= (size_t)*nt; ++m) {
        /* after the threads' parts: the last step's h (forward; its c too,
         * forward_y) or dq (backward), two rows of [B, H] or [B, P] each */
        size_t per = prn__layer_plan(L, bw, m, 0, &u0, &u1, &nb), all = m * per + 2 * L->B * (bw ? L->P : 2 * L->H);
        if (L->by_rows) all = m * prn__layer_rows_ws(L, bw, (L->B + m - 1) / m);
        if (all > need) need = all;
    }
    /* rnn_layer_backward_dw: the rings of dq and h, 64 to 256 rows (the
     * steps of a chunk times B) of at most 512 KiB each, so that both with
     * W_hh's panels stay in L2 (the 1.3 MiB of 256 rows at H = 256 made
     * one row 5% slower than the product after the layer); then the sums,
     * after the threads' parts */
    if (bw && L->dw && !L->lanes_C && L->B && L->Tn && L->H) {
        size_t rows;
        L->Pq = (L->P + 15) / 16 * 16 + 16; /* not a multiple of 4 KiB: the rows of a chunk spread over L1's sets */
        L->Hq = (L->H + 15) / 16 * 16;
        L->Rq = L->Hq + (L->x ? (L->NI + 15) / 16 * 16 : 0);
        rows = ((size_t)512 << 10) / ((L->Pq + L->Rq) * es);
        rows = rows > 256 ? 256 : rows < 64 ? 64 : rows;
        L->dwC = L->B >= rows ? 1 : rows / L->B < L->Tn ? rows / L->B : L->Tn;
        L->dwB = L->B;
        off = (need + 15) / 16 * 16;
        need = off + 2 * L->dwC * L->B * (L->Pq + L->Rq) + L->P * (L->Rq + 1);
    }
    *raw = prn_alloc(ctx, need * es + 64);
    if (!*raw) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the workspace (%lu bytes)", fn,
                                    (unsigned long)(need * es + 64));
    L->ws = (char *)*raw + (64 - (uintptr_t)*raw % 64) % 64;
    if (L->lanes_C) memset(L->ws, 0, need * es);
    if (L->dwC) { /* h's (and x's) columns past H (past the input): zeros */
        size_t r, c, rows = 2 * L->dwC * L->B;
        L->rq = (char *)L->ws + off * es;
        L->rh = (char *)L->rq + rows * L->Pq * es;
        L->dwa = (char *)L->rh + rows * L->Rq * es;
        for (r = 0; r < rows; ++r)
            for (c = L->H; c < L->Rq; ++c) {
                if (c >= L->Hq && c < L->Hq + L->NI) continue;
                if (dtype == PRN_F64) ((double *)L->rh)[r * L->Rq + c] = 0.0;
                else ((float *)L->rh)[r * L->Rq + c] = 0.0f;
            }
    }
    return PRN_OK;
}
#ifdef PARRNN_NO_TRAINING
/* No tape, no rnn_layer_backward: bw is always 0 in prn__layer_run, whose
 * references to the backward kernels name the forward ones instead, so
 * that nothing refers to the backward kernels and the compiler drops them
 * (a branch that is dead only after optimisation would keep them). */
#define prn__layer_bw_f32 prn__layer_fw_f32
#define prn__layer_bw_f64 prn__layer_fw_f64
#define prn__layer_bw_f32x prn__layer_fw_f32x
#define prn__lanes_bw_f32 prn__lanes_fw_f32
#define prn__lanes_bw_f64 prn__lanes_fw_f64
#define prn__lanes_bw_f32x prn__lanes_fw_f32x
#endif
PRN__FN void prn__layer_run(const prn__layer *L, int bw, prn_dtype dtype, int nt) {
    void (*run)(const prn__layer *, size_t, size_t) = dtype == PRN_F64 ? (bw ? prn__layer_bw_f64 : prn__layer_fw_f64)
                                                                        : (bw ? prn__layer_bw_f32 : prn__layer_fw_f32);
#ifdef PRN__HAVE_AVX2
    if (dtype == PRN_F32 && prn__cpu_avx2()) run = bw ? prn__layer_bw_f32x : prn__layer_fw_f32x;
#endif
    (void)nt;
    if (L->lanes_C) {
        void (*lanes)(const prn__layer *, size_t, size_t) = dtype == PRN_F64 ? (bw ? prn__lanes_bw_f64 : prn__lanes_fw_f64)
                                                                             : (bw ? prn__lanes_bw_f32 : prn__lanes_fw_f32);
#ifdef PRN__HAVE_AVX2
        if (dtype == PRN_F32 && prn__cpu_avx2())
            lanes = bw ? prn__lanes_bw_f32x : L->kind == PRN_RNN_GRU && L->H == 1 ? prn__lanes_gru1_fw_f32x : prn__lanes_fw_f32x;
#endif
        lanes(L, L->lanes_C, L->lanes_Bp);
        return;
    }
    if (L->by_rows) {
        const size_t es = prn_dtype_size(dtype);
        prn__barrier dbar; /* the chunks' of rnn_layer_backward_dw */
        prn__barrier_init(&dbar);
        PRN__OMP(omp parallel num_threads(nt) if(nt > 1))
        {
            const size_t j = (size_t)PRN__THREAD_NUM(), m = (size_t)PRN__NUM_THREADS(), r = (L->B + m - 1) / m;
            const size_t r0 = j * r < L->B ? j * r : L->B, r1 = r0 + r < L->B ? r0 + r : L->B;
            prn__layer R;
            prn__layer_rows(L, es, r0, r1, &R);
            R.ws = (char *)L->ws + j * prn__layer_rows_ws(L, bw, r) * es;
            R.r0 = r0; R.tj = j; R.tm = m; R.dbar = &dbar;
            if (r1 > r0 || L->dwC) run(&R, 0, 1); /* every thread of the team passes the chunks' barriers */
        }
        prn__barrier_destroy(&dbar);
        return;
    }
    {
        prn__barrier bar;
        prn__layer U = *L;
        prn__barrier_init(&bar);
        U.bar = &bar;
        PRN__OMP(omp parallel num_threads(nt) if(nt > 1))
        run(&U, (size_t)PRN__THREAD_NUM(), (size_t)PRN__NUM_THREADS());
        prn__barrier_destroy(&bar);
    }
}
/* Both entries: checks, workspace, the threads' run, its release. */
#ifdef PARRNN_NO_TRAINING
#undef prn__layer_bw_f32
#undef prn__layer_bw_f64
#undef prn__layer_bw_f32x
#undef prn__lanes_bw_f32
#undef prn__lanes_bw_f64
#undef prn__lanes_bw_f32x
#endif
PRN__FN prn_status prn__layer_call(prn_context *ctx, const char *fn, prn__layer *L, int bw, prn_dtype dtype) {
    void *raw = NULL;
    int nt = 1;
    PRN__TRY(prn__layer_begin(ctx, fn, L, bw, dtype, &nt, &raw));
    if (L->B && L->Tn && L->H) prn__layer_run(L, bw, dtype, nt);
    prn_free(ctx, raw);
    return PRN_OK;
}
PRN__FN prn_status prn__ref_rnn_layer_forward(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse, size_t B,
                                              size_t T, size_t H, const void *xp, const void *w_hh, const void *b_hh,
                                              const void *s0, void *states, void *saved) {
    prn__layer L;
    memset(&L, 0, sizeof L);
    L.kind = kind; L.relu = relu; L.rev = reverse != 0;
    L.B = B; L.Tn = T; L.H = H;
    L.xp = xp; L.w = w_hh; L.bias = b_hh; L.s0 = s0; L.states = states; L.saved = saved;
    return prn__layer_call(ctx, "rnn_layer_forward", &L, 0, dtype);
}
/* prn__layer_xproj_f32: TEMPLATE XPROJ */
#define PRN__TPL_XPROJ
#define PRN__T float
#define PRN__SFX f32
#define PRN__ATTR
#define PRN__MM prn__panel_mmz_f32
#include PARRNN_SELF_PATH
/* prn__layer_xproj_f64: TEMPLATE XPROJ */
#define PRN__TPL_XPROJ
#define PRN__T double
#define PRN__SFX f64
#define PRN__ATTR
#define PRN__MM prn__panel_mmz_f64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* prn__layer_xproj_f32x: TEMPLATE XPROJ */
#define PRN__TPL_XPROJ
#define PRN__T float
#define PRN__SFX f32x
#define PRN__ATTR PRN__AVX2
#define PRN__MM prn__panel_mmz_f32x
#include PARRNN_SELF_PATH
#endif
PRN__FN int prn__layer_xproj(prn_context *ctx, const prn__layer *L, prn_dtype dtype, void *xp) {
    const size_t nbp = (L->P + 15) / 16, es = prn_dtype_size(dtype);
    PRN__PAR_SETUP(ctx, L->B * L->Tn * L->P * (L->NI + 1));
    char *ws = (char *)prn__alloc_quiet(ctx, nbp * 16 * (L->NI + 64 * (size_t)prn__nt) * es);
    if (!ws) return 0;
    if (dtype == PRN_F64)
        prn__layer_xproj_f64(L, (double *)ws, (double *)ws + nbp * 16 * L->NI, (double *)xp, prn__nt, prn__par);
#ifdef PRN__HAVE_AVX2
    else if (prn__cpu_avx2())
        prn__layer_xproj_f32x(L, (float *)ws, (float *)ws + nbp * 16 * L->NI, (float *)xp, prn__nt, prn__par);
#endif
    else prn__layer_xproj_f32(L, (float *)ws, (float *)ws + nbp * 16 * L->NI, (float *)xp, prn__nt, prn__par);
    prn_free(ctx, ws);
    return 1;
}
/* With the input projection: each thread computes the projections of its
 * rows (by_rows) or of its units' gate columns (the units split) a chunk of
 * steps at a time (prn__layer_xchunk) right before stepping through them,
 * so that xp [B, T, P] (262 MB at H 256, B 64, T 1000 in f32) is neither
 * written nor read back: four passes over it (the bias broadcast, the
 * gemm's read and write, the layer's read) were a quarter to a third of
 * the forward. Each entry is the product kernel's chain of FMAs from zero
 * plus b_ih: the bits of the composition through prn__gemm_f32x (f32 with
 * AVX2). The lanes loop (H <= 8) reads xp whole: it gets it computed
 * first.
 * rnn_layer_forward_x (states, saved) and rnn_layer_forward_y (y, fin;
 * states and saved NULL) in one: an LSTM's forward_y keeps c in the
 * workspace (prn__layer.y) except in the lanes loop (H <= 8), which writes
 * states, here a buffer of its own that y and fin are copied out of; the
 * other kinds' states are y, fin copied out of its last step. */
PRN__FN prn_status prn__ref_layer_fwx(prn_context *ctx, const char *fn, prn_dtype dtype, int kind, int relu,
                                      int reverse, size_t B, size_t T, size_t H, size_t In, const void *x,
                                      const void *w_ih, const void *b_ih, const void *w_hh, const void *b_hh,
                                      const void *s0, void *states, void *saved, void *y, void *fin, void *cs) {
    prn__layer L;
    void *raw = NULL, *xp = NULL, *tmp = NULL;
    int nt = 1, fy = fin != NULL, yc = cs != NULL;
    memset(&L, 0, sizeof L);
    L.kind = kind; L.relu = relu; L.rev = reverse != 0;
    L.B = B; L.Tn = T; L.H = H; L.NI = In;
    L.x = x; L.w_ih = w_ih; L.b_ih = b_ih; L.w = w_hh; L.bias = b_hh; L.s0 = s0; L.states = states; L.saved = saved;
    PRN__TRY(prn__layer_begin(ctx, fn, &L, 0, dtype, &nt, &raw));
    if (!(B && T && H)) {
        if (fy && B && H) memcpy(fin, s0, B * L.S * prn_dtype_size(dtype)); /* no steps: the state stays s0 */
        prn_free(ctx, raw);
        return PRN_OK;
    }
    if ((fy || yc) && kind == PRN_RNN_LSTM && L.lanes_C) {
        tmp = prn_alloc(ctx, B * T * L.S * prn_dtype_size(dtype));
        if (!tmp) {
            prn_free(ctx, raw);
            return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the states (%lu bytes)", fn,
                                 (unsigned long)(B * T * L.S * prn_dtype_size(dtype)));
        }
        L.states = tmp;
    } else if (yc) { /* rnn_layer_forward_yc (LSTM) */
        L.y = y;
        L.cs = cs;
    } else if (fy && kind == PRN_RNN_LSTM) {
        L.y = y;
        L.fin = fin;
    } else if (fy)
        L.states = y;
    /* xp stored first (by the whole team) where computing it inside pays
     * nothing: the lanes loop; a layer on one thread of several (the
     * projection, up to half the work at H 64, would run on one); W_hh
     * past a core's L2 split by units with fewer than 8 rows (H 512 B 1:
     * W_ih's panel and the chunks crowd W_hh's stream, 2-8% slower; with
     * 16 rows computing inside is 10% faster) */
    if (L.lanes_C || (!L.by_rows && ((nt == 1 && prn_context_num_threads(ctx) > 1) ||
                                     (B < 8 && L.P * L.H * prn_dtype_size(dtype) > PRN__LAYER_ROWS_MAX_W)))) {
        const size_t n = B * T;
        xp = prn_alloc(ctx, n * L.P * prn_dtype_size(dtype));
        if (!xp) {
            prn_free(ctx, tmp);
            prn_free(ctx, raw);
            return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the projections (%lu bytes)", fn,
                                 (unsigned long)(n * L.P * prn_dtype_size(dtype)));
        }
        if (!prn__layer_xproj(ctx, &L, dtype, xp)) {
            prn_free(ctx, xp);
            prn_free(ctx, tmp);
            prn_free(ctx, raw);
            return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the packed W_ih", fn);
        }
        L.xp = xp;
        L.x = NULL;
    }
    prn__layer_run(&L, 0, dtype, nt);
    if ((fy || yc) && !L.y) { /* y and c (from tmp), fin out of the states */
        const size_t es = prn_dtype_size(dtype), S = L.S, tl = reverse ? 0 : T - 1;
        const char *st = (const char *)L.states;
        size_t b, r;
        for (r = 0; tmp && r < B * T; ++r) {
            memcpy((char *)y + r * H * es, st + r * S * es, H * es);
            if (yc) memcpy((char *)cs + r * H * es, st + (r * S + H) * es, H * es);
        }
        for (b = 0; fy && b < B; ++b) memcpy((char *)fin + b * S * es, st + (b * T + tl) * S * es, S * es);
    }
    prn_free(ctx, tmp);
    prn_free(ctx, xp);
    prn_free(ctx, raw);
    return PRN_OK;
}
PRN__FN prn_status prn__ref_rnn_layer_forward_x(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                size_t B, size_t T, size_t H, size_t In, const void *x,
                                                const void *w_ih, const void *b_ih, const void *w_hh,
                                                const void *b_hh, const void *s0, void *states, void *saved) {
    return prn__ref_layer_fwx(ctx, "rnn_layer_forward_x", dtype, kind, relu, reverse, B, T, H, In, x, w_ih, b_ih, w_hh,
                              b_hh, s0, states, saved, NULL, NULL, NULL);
}
PRN__FN prn_status prn__ref_rnn_layer_forward_y(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                size_t B, size_t T, size_t H, size_t In, const void *x,
                                                const void *w_ih, const void *b_ih, const void *w_hh,
                                                const void *b_hh, const void *s0, void *y, void *fin) {
    static const char fn[] = "rnn_layer_forward_y";
    if (B && H && (!fin || (T && !y)))
        return prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, !fin ? "fin" : "y");
    return prn__ref_layer_fwx(ctx, fn, dtype, kind, relu, reverse, B, T, H, In, x, w_ih, b_ih, w_hh, b_hh, s0, NULL,
                              NULL, y, fin, NULL);
}
#ifndef PARRNN_NO_TRAINING /* the backward entries: only the training table has them */
/* rnn_layer_forward_yc (a forward for the training path alone): ELMAN's
 * states are y; an LSTM's c goes to c (prn__layer.cs) beside y. */
PRN__FN prn_status prn__ref_rnn_layer_forward_yc(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                 size_t B, size_t T, size_t H, size_t In, const void *x,
                                                 const void *w_ih, const void *b_ih, const void *w_hh,
                                                 const void *b_hh, const void *s0, void *y, void *c, void *saved) {
    static const char fn[] = "rnn_layer_forward_yc";
    if (kind != PRN_RNN_ELMAN && kind != PRN_RNN_LSTM)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'kind' is %d; only PRN_RNN_ELMAN and PRN_RNN_LSTM",
                             fn, kind);
    if (B && T && H && (!y || (kind == PRN_RNN_LSTM && !c)))
        return prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, !y ? "y" : "c");
    if (kind == PRN_RNN_ELMAN)
        return prn__ref_layer_fwx(ctx, fn, dtype, kind, relu, reverse, B, T, H, In, x, w_ih, b_ih, w_hh, b_hh, s0, y,
                                  saved, NULL, NULL, NULL);
    return prn__ref_layer_fwx(ctx, fn, dtype, kind, relu, reverse, B, T, H, In, x, w_ih, b_ih, w_hh, b_hh, s0, NULL,
                              saved, y, NULL, B && T && H ? c : NULL);
}
PRN__FN prn_status prn__ref_rnn_layer_backward(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                               size_t B, size_t T, size_t H, const void *g, const void *w_hh,
                                               const void *s0, const void *states, const void *saved, void *dxp,
                                               void *dq, void *ds0) {
    prn__layer L;
    memset(&L, 0, sizeof L);
    L.kind = kind; L.relu = relu; L.rev = reverse != 0;
    L.B = B; L.Tn = T; L.H = H;
    L.g = g; L.w = w_hh; L.s0 = s0; L.states = (void *)(uintptr_t)states; L.saved = (void *)(uintptr_t)saved;
    L.dxp = dxp; L.dq = dq; L.ds0 = ds0;
    PRN__TRY(prn__layer_call(ctx, "rnn_layer_backward", &L, 1, dtype));
    if (!T && B && H) memset(ds0, 0, B * L.S * prn_dtype_size(dtype)); /* no steps: s0 reaches nothing */
    return PRN_OK;
}
/* prn__layer_dw_plain_f32: TEMPLATE LAYER_DW_PLAIN */
#define PRN__TPL_LAYER_DW_PLAIN
#define PRN__T float
#define PRN__SFX f32
#include PARRNN_SELF_PATH
/* prn__layer_dw_plain_f64: TEMPLATE LAYER_DW_PLAIN */
#define PRN__TPL_LAYER_DW_PLAIN
#define PRN__T double
#define PRN__SFX f64
#include PARRNN_SELF_PATH
/* The end of a layer backward that sums the weights' gradients
 * (rnn_layer_backward_dw, _x): ds0 when there are no steps, and the sums
 * the chunks did not take (no rings: the lanes loop). */
PRN__FN void prn__layer_bw_finish(const prn__layer *L, prn_dtype dtype) {
    if (!L->Tn && L->B && L->H) memset(L->ds0, 0, L->B * L->S * prn_dtype_size(dtype)); /* s0 reaches nothing */
    if (!L->dwC) {
        if (dtype == PRN_F64) prn__layer_dw_plain_f64(L);
        else prn__layer_dw_plain_f32(L);
    }
}
PRN__FN prn_status prn__ref_rnn_layer_backward_dw(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                  size_t B, size_t T, size_t H, const void *g, const void *w_hh,
                                                  const void *s0, const void *states, const void *saved, void *dxp,
                                                  void *dq, void *ds0, void *dw, void *db) {
    prn__layer L;
    if (!dq || !dw)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "rnn_layer_backward_dw: argument '%s' is NULL",
                             dq ? "dw" : "dq");
    memset(&L, 0, sizeof L);
    L.kind = kind; L.relu = relu; L.rev = reverse != 0;
    L.B = B; L.Tn = T; L.H = H;
    L.g = g; L.w = w_hh; L.s0 = s0; L.states = (void *)(uintptr_t)states; L.saved = (void *)(uintptr_t)saved;
    L.dxp = dxp; L.dq = dq; L.ds0 = ds0; L.dw = dw; L.db = db;
    PRN__TRY(prn__layer_call(ctx, "rnn_layer_backward_dw", &L, 1, dtype));
    prn__layer_bw_finish(&L, dtype);
    return PRN_OK;
}
/* rnn_layer_backward_dw with x's row beside h's in the ring: dW_ih and
 * db_ih out of the same chunks (a product and a reduce over dxp in memory
 * were a sixth of an LSTM's training step at H 64, B 16), and dxp stored
 * only when asked. Without the rings (the lanes loop) dxp goes through
 * memory, a buffer of its own when the caller passes none. */
/* rnn_layer_backward_yc too (cs set: an LSTM's states as y and cs, g d loss
 * / d y alone); the lanes loop, which reads the states whole, gets them
 * and g [B, T, S] put together in buffers of its own. */
PRN__FN prn_status prn__ref_layer_bwx(prn_context *ctx, const char *fn, prn_dtype dtype, int kind, int relu, int reverse,
                                      size_t B, size_t T, size_t H, size_t In, const void *g, const void *x,
                                      const void *w_hh, const void *s0, const void *states, const void *y,
                                      const void *cs, const void *saved, void *dxp, void *ds0, void *dw_hh, void *db_hh,
                                      void *dw_ih, void *db_ih) {
    prn__layer L;
    void *raw = NULL, *tmp = NULL, *whole = NULL;
    int nt = 1;
    if (kind != PRN_RNN_ELMAN && kind != PRN_RNN_LSTM)
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'kind' is %d; only PRN_RNN_ELMAN and PRN_RNN_LSTM",
                             fn, kind);
    if (!dw_hh || !dw_ih || (In && !x))
        return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", fn,
                             !dw_hh ? "dw_hh" : !dw_ih ? "dw_ih" : "x");
    memset(&L, 0, sizeof L);
    L.kind = kind; L.relu = relu; L.rev = reverse != 0;
    L.B = B; L.Tn = T; L.H = H; L.NI = In; L.x = x;
    L.g = g; L.w = w_hh; L.s0 = s0; L.states = (void *)(uintptr_t)states; L.saved = (void *)(uintptr_t)saved;
    L.dxp = dxp; L.dq = dxp; L.ds0 = ds0; L.dw = dw_hh; L.db = db_hh; L.dwi = dw_ih; L.dbi = db_ih;
    L.y = (void *)(uintptr_t)y; L.cs = (void *)(uintptr_t)cs;
    PRN__TRY(prn__layer_begin(ctx, fn, &L, 1, dtype, &nt, &raw));
    if (L.cs && L.lanes_C && B && T && H) { /* [g | 0] and [y | c] for the lanes loop */
        const size_t es = prn_dtype_size(dtype), S = L.S, n = B * T;
        size_t r;
        whole = prn_alloc(ctx, 2 * n * S * es);
        if (!whole) {
            prn_free(ctx, raw);
            return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the states (%lu bytes)", fn,
                                 (unsigned long)(2 * n * S * es));
        }
        memset(whole, 0, n * S * es);
        for (r = 0; r < n; ++r) {
            char *gw = (char *)whole + r * S * es, *sw = (char *)whole + (n + r) * S * es;
            memcpy(gw, (const char *)g + r * H * es, H * es);
            memcpy(sw, (const char *)y + r * H * es, H * es);
            memcpy(sw + H * es, (const char *)cs + r * H * es, H * es);
        }
        L.g = whole;
        L.states = (char *)whole + n * S * es;
        L.y = L.cs = NULL;
    }
    if (!L.dwC && !dxp && B && T && H) {
        tmp = prn_alloc(ctx, B * T * L.P * prn_dtype_size(dtype));
        if (!tmp) {
            prn_free(ctx, whole);
            prn_free(ctx, raw);
            return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for dxp (%lu bytes)", fn,
                                 (unsigned long)(B * T * L.P * prn_dtype_size(dtype)));
        }
        L.dxp = L.dq = tmp;
    }
    if (B && T && H) prn__layer_run(&L, 1, dtype, nt);
    prn_free(ctx, raw);
    prn__layer_bw_finish(&L, dtype);
    prn_free(ctx, tmp);
    prn_free(ctx, whole);
    return PRN_OK;
}
PRN__FN prn_status prn__ref_rnn_layer_backward_x(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                 size_t B, size_t T, size_t H, size_t In, const void *g, const void *x,
                                                 const void *w_hh, const void *s0, const void *states, const void *saved,
                                                 void *dxp, void *ds0, void *dw_hh, void *db_hh, void *dw_ih,
                                                 void *db_ih) {
    return prn__ref_layer_bwx(ctx, "rnn_layer_backward_x", dtype, kind, relu, reverse, B, T, H, In, g, x, w_hh, s0,
                              states, NULL, NULL, saved, dxp, ds0, dw_hh, db_hh, dw_ih, db_ih);
}
/* ELMAN's states are y (and g d loss / d y): rnn_layer_backward_x's call. */
PRN__FN prn_status prn__ref_rnn_layer_backward_yc(prn_context *ctx, prn_dtype dtype, int kind, int relu, int reverse,
                                                  size_t B, size_t T, size_t H, size_t In, const void *gy,
                                                  const void *x, const void *w_hh, const void *s0, const void *y,
                                                  const void *c, const void *saved, void *dxp, void *ds0, void *dw_hh,
                                                  void *db_hh, void *dw_ih, void *db_ih) {
    static const char fn[] = "rnn_layer_backward_yc";
    if (kind == PRN_RNN_LSTM && B && T && H && (!y || !c || !gy))
        return prn_set_error(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, !y ? "y" : !c ? "c" : "gy");
    return prn__ref_layer_bwx(ctx, fn, dtype, kind, relu, reverse, B, T, H, In, gy, x, w_hh, s0,
                              kind == PRN_RNN_LSTM ? NULL : y, kind == PRN_RNN_LSTM ? y : NULL,
                              kind == PRN_RNN_LSTM && B && T && H ? c : NULL,
                              saved, dxp, ds0, dw_hh, db_hh, dw_ih, db_ih);
}
#endif /* PARRNN_NO_TRAINING */

#ifndef PARRNN_NO_SCYFI /* solve_batched: SCYFI's candidates (LEAVING PARTS OUT) */
/* --- batched LU solves (solve_batched) ----------------------------------- */
/* One system: prn__lu_solve_double / _float (TEMPLATE LU_SOLVE), threaded
 * by PRN__LU_ROWS_PAR; a batch of them by PRN__LU_BATCH_PAR. */
#ifdef _OPENMP
/* A column's elimination is (n - j)^2 multiply-adds: a region of threads
 * only where each gets PRN__PAR_MIN of them (a region per column of a
 * 100 x 100 system on 16 threads cost 28x the serial solve on a 16-core
 * machine: 36 forks and joins of microseconds each per solve). */
#define PRN__LU_ROWS_PAR PRN__PRAGMA(omp parallel for num_threads(lnt) schedule(static) if(par && lnt > 1))
#define PRN__LU_BATCH_PAR PRN__PRAGMA(omp parallel for num_threads(prn__nt) schedule(dynamic) if(prn__par && !inner))
#else
#define PRN__LU_ROWS_PAR
#define PRN__LU_BATCH_PAR
#endif
/* prn__lu_solve_double: TEMPLATE LU_SOLVE */
#define PRN__TPL_LU_SOLVE
#define PRN__T double
#define PRN__SFX double
#include PARRNN_SELF_PATH
/* prn__lu_solve_float: TEMPLATE LU_SOLVE */
#define PRN__TPL_LU_SOLVE
#define PRN__T float
#define PRN__SFX float
#include PARRNN_SELF_PATH

PRN__FN prn_status prn__ref_solve_batched(prn_context *ctx, prn_dtype dtype, size_t batch, size_t n, void *a,
                                          void *r, int *info) {
    long b;
    int inner;
    PRN__PAR_SETUP(ctx, batch * n * n * (n / 8 + 1));
    /* Enough systems: one per thread; else the threads share each one's rows. */
    inner = prn__par && batch < (size_t)prn__nt;
    if (n == 0) return prn_set_error(ctx, PRN_ERR_INVALID_ARGUMENT, "solve_batched: argument 'n' is 0");
    PRN__LU_BATCH_PAR
    for (b = 0; b < (long)batch; ++b) {
        if (dtype == PRN_F64)
            info[b] = prn__lu_solve_double(n, (double *)a + (size_t)b * n * n, (double *)r + (size_t)b * n, inner, prn__nt);
        else
            info[b] = prn__lu_solve_float(n, (float *)a + (size_t)b * n * n, (float *)r + (size_t)b * n, inner, prn__nt);
    }
    return PRN_OK;
}

#endif /* PARRNN_NO_SCYFI */
#ifndef PARRNN_NO_DEER /* the fused DEER kernels (LEAVING PARTS OUT) */
/* --- fused DEER iterations (deer_iterate / deer_adjoint) ----------------
 * A thread takes PRN__DZW batch rows at once (lanes; the last group repeats
 * its first row in the unused lanes and writes nothing from them) and walks
 * their sequences in time: every value of a step is a [.][PRN__DZW] array,
 * so the cell's loops vectorise across the lanes, and the recurrence's
 * latency is hidden behind the lanes' independent chains. Nothing of a row
 * is kept beyond the row after it: f and J of step t are made, used for the
 * residual and the new iterate (or the adjoint), and forgotten, so memory is
 * a few rows per thread whatever T is. Chunks of rows are gathered into
 * lane order (and scattered back) so that memory sees contiguous runs.
 * Lanes never mix, so the result does not depend on the thread count. */
/* Compile time: the lane kernels below are inlined into a copy per element
 * type and small GRU, most of the implementation's compile time. gcc -O3
 * unswitches the time segments' step loop on each run-time flag (pass, Y,
 * YN): twice the code for branches that stay the same through a call
 * (PRN__DZ_TS). gcc's variable tracking for -g is a large part of the rest
 * (PRN__DZ_DBG; -g does not change the code; a debugger still has the
 * template's lines, only fewer locals' locations). Its assignments part only: gcc 12
 * rejects "no-var-tracking" without -g under -Werror ("variable tracking
 * requested, but useless"), as tests/compile_check.sh builds. */
#if defined(__GNUC__) && !defined(__clang__)
#define PRN__DZ_TS __attribute__((optimize("no-unswitch-loops")))
#define PRN__DZ_DBG __attribute__((optimize("no-var-tracking-assignments")))
#else
#define PRN__DZ_TS
#define PRN__DZ_DBG
#endif
#define PRN__DZW 8
/* time segments' pass 2: where the carry's part of a lane is negligible */
#define PRN__DZ_CUT 1e-3
typedef struct prn__dz {
    const prn_deer_fused *a;
    size_t P, kb, Tc, per, nwk; /* per: scratch values per thread */
    size_t wkn;                 /* the cell's scratch values             */
    int adj, dxq;               /* dxq: the adjoint writes dxp and dq    */
    int dwb;                    /* the adjoint sums dw and db itself     */
    size_t wc;                  /* dw's columns: H (MHGRU: k)            */
    double *gpart;              /* dwb: per lane group, dw then db       */
    size_t C, Ls, ntask;        /* time segments: C per row of Ls steps  */
    int pass;                   /* time segments: 1 or 2                 */
    void *tv;                   /* per task: v [S], M [S, S], carry [S]  */
    void *ws;
    double *res;                /* per thread: largest residual, and */
    int *bad;                   /* a non-finite one seen             */
} prn__dz;

/* Lanes' contiguous runs into lane order, dst[k W + l] = src[l][k] for
 * k < K, and back (tout: dst[l][k] = src[k W + l]). */
PRN__FN_INLINE void prn__dz_tin_f32(float *dst, const float *const *src, size_t K) {
    size_t l, k;
    for (l = 0; l < PRN__DZW; ++l) for (k = 0; k < K; ++k) dst[k * PRN__DZW + l] = src[l][k];
}
PRN__FN_INLINE void prn__dz_tout_f32(float *const *dst, const float *src, size_t K) {
    size_t l, k;
    for (l = 0; l < PRN__DZW; ++l) for (k = 0; k < K; ++k) dst[l][k] = src[k * PRN__DZW + l];
}
PRN__FN_INLINE void prn__dz_tin_f64(double *dst, const double *const *src, size_t K) {
    size_t l, k;
    for (l = 0; l < PRN__DZW; ++l) for (k = 0; k < K; ++k) dst[k * PRN__DZW + l] = src[l][k];
}
PRN__FN_INLINE void prn__dz_tout_f64(double *const *dst, const double *src, size_t K) {
    size_t l, k;
    for (l = 0; l < PRN__DZW; ++l) for (k = 0; k < K; ++k) dst[l][k] = src[k * PRN__DZW + l];
}
#ifdef PRN__HAVE_AVX2
/* 8 x 8 floats transposed in registers (the scalar copies cost a load and a
 * store per value, a third of a DEER iteration at S = 2) */
PRN__FN_INLINE PRN__AVX2 void prn__dz_t8_f32x(__m256 *r) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20); r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20); r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31); r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31); r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}
PRN__FN_INLINE PRN__AVX2 void prn__dz_tin_f32x(float *dst, const float *const *src, size_t K) {
    size_t l, k, q;
    __m256 r[8];
    for (k = 0; k + 8 <= K; k += 8) {
        for (q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src[q] + k);
        prn__dz_t8_f32x(r);
        for (q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (k + q) * 8, r[q]);
    }
    for (l = 0; l < 8; ++l) for (q = k; q < K; ++q) dst[q * 8 + l] = src[l][q];
}
PRN__FN_INLINE PRN__AVX2 void prn__dz_tout_f32x(float *const *dst, const float *src, size_t K) {
    size_t l, k, q;
    __m256 r[8];
    for (k = 0; k + 8 <= K; k += 8) {
        for (q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src + (k + q) * 8);
        prn__dz_t8_f32x(r);
        for (q = 0; q < 8; ++q) _mm256_storeu_ps(dst[q] + k, r[q]);
    }
    for (l = 0; l < 8; ++l) for (q = k; q < K; ++q) dst[l][q] = src[q * 8 + l];
}
#endif
#ifdef PRN__HAVE_AVX2
#define PRN__DZ_SPEC_F32 0 /* the f32x copy below runs where AVX2 does */
#else
#define PRN__DZ_SPEC_F32 1
#endif
#define PRN__DZ_SPEC_F64 1
/* prn__dz_sig_f32, prn__dz_cell_f32, prn__dz_body_f32, prn__dz_group_f32: TEMPLATE DEER */
#define PRN__TPL_DEER
#define PRN__T float
#define PRN__SFX f32
#define PRN__ATTR
#define PRN__EXP prn__expf
#define PRN__TANH prn__tanhf
#define PRN__SPEC PRN__DZ_SPEC_F32
#include PARRNN_SELF_PATH
/* prn__dz_ts_body_f32, prn__dz_ts_chain_f32, prn__dz_ts_group_f32: TEMPLATE DEER_TS */
#define PRN__TPL_DEER_TS
#define PRN__T float
#define PRN__SFX f32
#define PRN__ATTR
#define PRN__SPEC PRN__DZ_SPEC_F32
#include PARRNN_SELF_PATH
/* prn__dz_sig_f64, prn__dz_cell_f64, prn__dz_body_f64, prn__dz_group_f64: TEMPLATE DEER */
#define PRN__TPL_DEER
#define PRN__T double
#define PRN__SFX f64
#define PRN__ATTR
#define PRN__EXP exp
#define PRN__TANH tanh
#define PRN__SPEC PRN__DZ_SPEC_F64
#include PARRNN_SELF_PATH
/* prn__dz_ts_body_f64, prn__dz_ts_chain_f64, prn__dz_ts_group_f64: TEMPLATE DEER_TS */
#define PRN__TPL_DEER_TS
#define PRN__T double
#define PRN__SFX f64
#define PRN__ATTR
#define PRN__SPEC PRN__DZ_SPEC_F64
#include PARRNN_SELF_PATH
#ifdef PRN__HAVE_AVX2
/* gcc keeps a * b + c unfused under -std=c99; clang fuses it by default */
#if defined(__clang__)
#define PRN__DZ_AVX2 PRN__AVX2
#else
#define PRN__DZ_AVX2 __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#endif
/* prn__dz_sig_f32x, prn__dz_cell_f32x, prn__dz_body_f32x, prn__dz_group_f32x: TEMPLATE DEER */
#define PRN__TPL_DEER
#define PRN__T float
#define PRN__SFX f32x
#define PRN__ATTR PRN__DZ_AVX2
#define PRN__EXP prn__expf
#define PRN__TANH prn__tanhf
#define PRN__SPEC 1
#include PARRNN_SELF_PATH
/* prn__dz_ts_body_f32x, prn__dz_ts_chain_f32x, prn__dz_ts_group_f32x: TEMPLATE DEER_TS */
#define PRN__TPL_DEER_TS
#define PRN__T float
#define PRN__SFX f32x
#define PRN__ATTR PRN__DZ_AVX2
#define PRN__SPEC 1
#include PARRNN_SELF_PATH
#endif

PRN__FN prn_status prn__ref_deer_run(prn_context *ctx, const char *fn, const prn_deer_fused *a, int adj) {
    prn__dz z;
    size_t ng, g, es, kb, G, S, wkn, rowv;
    int nt, j, bad = 0;
    void *raw;
    double res = 0;
    PRN__TRY(prn_backend_deer_check(ctx, fn, a, adj, &kb));
    S = a->S;
    if (!a->B || !a->T) {
        if (!adj) { ((prn_deer_fused *)(uintptr_t)a)->residual = 0; ((prn_deer_fused *)(uintptr_t)a)->finite = 1; }
        return PRN_OK;
    }
    memset(&z, 0, sizeof z);
    z.a = a; z.adj = adj;
    G = a->kind == PRN_RNN_LSTM ? 4 : a->kind == PRN_RNN_GRU || a->kind == PRN_RNN_MHGRU ? 3 : 1;
    z.P = G * a->H;
    z.dxq = adj && a->dxp != NULL; /* the torch kinds (checked above) */
    z.dwb = z.dxq && a->dw && a->db;
    z.wc = a->kind == PRN_RNN_MHGRU ? a->hk : a->H;
    z.kb = kb;
    es = prn_dtype_size(a->dtype);
    /* rows of a chunk: its gathered values (about 64 KiB) stay in L2 */
    rowv = (z.P + 4 * S) * PRN__DZW;
    z.Tc = ((size_t)65536 / es) / rowv;
    if (z.Tc < 4) z.Tc = 4;
    if (z.Tc > 1024) z.Tc = 1024;
    wkn = (9 * S + 3 * a->L + z.P + 8) * PRN__DZW;
    z.wkn = wkn;
    z.per = z.Tc * rowv + S * PRN__DZW + (2 + kb) * S * PRN__DZW + S * PRN__DZW + wkn + 16;
    if (z.dxq) z.per += 2 * z.Tc * z.P * PRN__DZW;
    if (z.dwb) z.per += (z.P * z.wc + z.P) * PRN__DZW;
    ng = (a->B + PRN__DZW - 1) / PRN__DZW;
    /* a few rows: lanes (and threads) over time segments too, at least 512
     * steps each, 16 tasks in all (a function of B and T alone, so the
     * result does not depend on the threads) */
    if (!adj && a->B < PRN__DZW && S <= 8 && a->T >= 1024) {
        size_t C = (16 + a->B - 1) / a->B;
        if (C > a->T / 512) C = a->T / 512;
        if (C >= 2) {
            z.Ls = (a->T + C - 1) / C;
            z.C = (a->T + z.Ls - 1) / z.Ls;
            z.ntask = a->B * z.C;
            ng = (z.ntask + PRN__DZW - 1) / PRN__DZW;
            z.per = (z.Tc * (z.P + 3 * S) + 3 * S + S * kb + 2 * S * S) * PRN__DZW + wkn + 16;
        }
    }
    /* the team, not the cap: a region held up by a preempted thread costs
     * a time slice per pass, and the lanes make the result the same bits
     * with any count */
    nt = prn__team(ctx);
    if ((size_t)nt > ng) nt = (int)ng;
    if (nt < 1) nt = 1;
    raw = prn_alloc(ctx, (size_t)nt * z.per * es + 64 + (size_t)nt * (sizeof(double) + sizeof(int)) +
                             z.ntask * (2 * S + S * S + 1) * es + (z.dwb ? ng * (z.P * z.wc + z.P) * sizeof(double) + 8 : 0));
    if (!raw) return prn_set_error(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for the workspace", fn);
    z.res = (double *)raw;
    z.bad = (int *)(z.res + nt);
    z.ws = (char *)raw + (size_t)nt * (sizeof(double) + sizeof(int));
    z.ws = (char *)z.ws + (64 - (uintptr_t)z.ws % 64) % 64;
    z.tv = (char *)z.ws + (size_t)nt * z.per * es;
    if (z.dwb) { /* doubles: the workspace before them is a multiple of 8 bytes past 64-byte alignment */
        z.gpart = (double *)(void *)((char *)z.ws + (((size_t)nt * z.per * es + 7) & ~(size_t)7));
        memset(z.gpart, 0, ng * (z.P * z.wc + z.P) * sizeof(double));
    }
    for (j = 0; j < nt; ++j) { z.res[j] = 0; z.bad[j] = 0; }
    {
#ifdef PRN__HAVE_AVX2
        const int avx = a->dtype == PRN_F32 && prn__cpu_avx2();
#endif
        for (z.pass = 1; z.C && z.pass <= (a->ynew ? 2 : 1); ++z.pass) {
            if (z.pass == 2 && a->discard_converged) { /* converged: ynew is not read */
                int conv = 1;
                for (j = 0; j < nt; ++j) conv &= !z.bad[j] && z.res[j] <= 1;
                if (conv) break;
            }
            if (z.pass == 2) {
                if (a->dtype == PRN_F64) prn__dz_ts_chain_f64(&z);
#ifdef PRN__HAVE_AVX2
                else if (avx) prn__dz_ts_chain_f32x(&z);
#endif
                else prn__dz_ts_chain_f32(&z);
            }
            PRN__OMP(omp parallel for num_threads(nt) schedule(dynamic, 1) if(nt > 1))
            for (g = 0; g < ng; ++g) {
                const int th = PRN__THREAD_NUM();
                char *w = (char *)z.ws + (size_t)th * z.per * es;
                if (a->dtype == PRN_F64) prn__dz_ts_group_f64(&z, g * PRN__DZW, (double *)w, &z.res[th], &z.bad[th]);
#ifdef PRN__HAVE_AVX2
                else if (avx) prn__dz_ts_group_f32x(&z, g * PRN__DZW, (float *)w, &z.res[th], &z.bad[th]);
#endif
                else prn__dz_ts_group_f32(&z, g * PRN__DZW, (float *)w, &z.res[th], &z.bad[th]);
            }
        }
        if (z.C) ng = 0; /* done above */
        PRN__OMP(omp parallel for num_threads(nt) schedule(dynamic, 1) if(nt > 1 && ng > 1))
        for (g = 0; g < ng; ++g) {
            const int th = PRN__THREAD_NUM();
            char *w = (char *)z.ws + (size_t)th * z.per * es;
            if (a->dtype == PRN_F64) prn__dz_group_f64(&z, g * PRN__DZW, (double *)w, &z.res[th], &z.bad[th]);
#ifdef PRN__HAVE_AVX2
            else if (avx) prn__dz_group_f32x(&z, g * PRN__DZW, (float *)w, &z.res[th], &z.bad[th]);
#endif
            else prn__dz_group_f32(&z, g * PRN__DZW, (float *)w, &z.res[th], &z.bad[th]);
        }
    }
    for (j = 0; j < nt; ++j) { if (z.res[j] > res) res = z.res[j]; bad |= z.bad[j]; }
    if (z.dwb) { /* the groups' partials in group order: the same sums whatever the threads */
        const size_t nv = z.P * z.wc + z.P;
        size_t q;
        for (q = 0; q < nv; ++q) {
            double v = 0;
            for (g = 0; g < ng; ++g) v += z.gpart[g * nv + q];
            if (q < z.P * z.wc) {
                if (a->dtype == PRN_F64) ((double *)a->dw)[q] = v;
                else ((float *)a->dw)[q] = (float)v;
            } else {
                if (a->dtype == PRN_F64) ((double *)a->db)[q - z.P * z.wc] = v;
                else ((float *)a->db)[q - z.P * z.wc] = (float)v;
            }
        }
    }
    prn_free(ctx, raw);
    if (!adj) { ((prn_deer_fused *)(uintptr_t)a)->residual = res; ((prn_deer_fused *)(uintptr_t)a)->finite = !bad; }
    return PRN_OK;
}
/* Up to a->iters iterations, each one call of prn__ref_deer_run on the
 * pointers the contract gives it (the same results as one call each). */
PRN__FN prn_status prn__ref_deer_iterate(prn_context *ctx, prn_deer_fused *a) {
    prn_deer_fused b;
    int j, n;
    PRN__TRY(prn_backend_deer_check(ctx, "deer_iterate", a, 0, NULL));
    n = a->iters > 1 && a->ynew && a->y2 ? a->iters : 1;
    b = *a;
    b.iters = 1; b.y2 = NULL;
    for (j = 0; j < n; ++j) {
        b.y = j == 0 ? a->y : j % 2 ? a->ynew : a->y2;
        b.ynew = j % 2 ? a->y2 : a->ynew;
        PRN__TRY(prn__ref_deer_run(ctx, "deer_iterate", &b, 0));
        if (!b.finite || b.residual <= 1) { ++j; break; }
    }
    a->residual = b.residual;
    a->finite = b.finite;
    a->done = j;
    return PRN_OK;
}
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__ref_deer_adjoint(prn_context *ctx, const prn_deer_fused *a) {
    return prn__ref_deer_run(ctx, "deer_adjoint", a, 1);
}
#endif /* PARRNN_NO_TRAINING */
#endif /* PARRNN_NO_DEER */
PRN__FN int prn__all_finite_f64(const double *x, size_t n) {
    uint64_t u, bad = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        memcpy(&u, x + i, sizeof u);
        bad |= (uint64_t)((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
    }
    return !bad;
}
/* Blocks of 64 Ki elements over the team: a pass at memory speed, which
 * two cores make in about half one core's time (prn_rnn_forward checks
 * every y it returns: 16 MB at H 256, B 16, T 1000). */
PRN__FN prn_status prn__ref_all_finite(prn_context *ctx, prn_dtype dtype, size_t n, const void *x, int *finite) {
    const size_t blk = 65536, nb = (n + blk - 1) / blk;
    unsigned bad = 0;
    size_t i;
    PRN__PAR_SETUP(ctx, n / 4);
    PRN__PARFOR_OR(bad)
    for (i = 0; i < nb; ++i) {
        const size_t lo = i * blk, m = n - lo < blk ? n - lo : blk;
        if (dtype == PRN_F32) bad |= (unsigned)!prn__all_finite_f32((const float *)x + lo, m);
        else if (dtype == PRN_F64) bad |= (unsigned)!prn__all_finite_f64((const double *)x + lo, m);
    }
    *finite = !bad;
    return PRN_OK;
}

/* The reference backend's entries (PRN_BACKEND_TABLE), in groups: a
 * configuration that leaves a part of the library out can define its
 * group empty (its slots are then NULL). gemm is added by each of the two
 * tables. */
#define PRN__REF_CORE_ENTRIES(E)                                                                   \
    E(create, prn__ref_create) E(destroy, prn__ref_destroy)                                        \
    E(buf_alloc, prn__ref_buf_alloc) E(buf_free, prn__ref_buf_free)                                \
    E(buf_upload, prn__ref_buf_upload) E(buf_download, prn__ref_buf_download)                      \
    E(buf_copy, prn__ref_buf_copy)                                                                 \
    E(fill, prn__ref_fill) E(unary, prn__ref_unary) E(binary, prn__ref_binary)                     \
    E(strided_copy, prn__ref_strided_copy) E(reduce, prn__ref_reduce) E(argmax, prn__ref_argmax)  \
    E(softmax, prn__ref_softmax) E(random, prn__ref_random)                                        \
    E(scan_diag, prn__ref_scan_diag) E(scan_block, prn__ref_scan_block) E(all_finite, prn__ref_all_finite)
#define PRN__REF_RNN_ENTRIES(E)                                                                    \
    E(rnn_gates_forward, prn__ref_rnn_gates_forward) E(rnn_layer_forward, prn__ref_rnn_layer_forward) \
    E(rnn_layer_forward_x, prn__ref_rnn_layer_forward_x) E(rnn_layer_forward_y, prn__ref_rnn_layer_forward_y)
#ifndef PARRNN_NO_TRAINING
#define PRN__REF_OPTIM_ENTRIES(E) E(sgd_update, prn__ref_sgd_update) E(adam_update, prn__ref_adam_update)
#define PRN__REF_RNN_BACKWARD_ENTRIES(E)                                                           \
    E(rnn_gates_backward, prn__ref_rnn_gates_backward) E(rnn_layer_backward, prn__ref_rnn_layer_backward) \
    E(rnn_layer_backward_dw, prn__ref_rnn_layer_backward_dw) E(rnn_layer_backward_x, prn__ref_rnn_layer_backward_x) \
    E(rnn_layer_forward_yc, prn__ref_rnn_layer_forward_yc) E(rnn_layer_backward_yc, prn__ref_rnn_layer_backward_yc)
#else
#define PRN__REF_OPTIM_ENTRIES(E)
#define PRN__REF_RNN_BACKWARD_ENTRIES(E)
#endif
#ifndef PARRNN_NO_SCYFI
#define PRN__REF_SCYFI_ENTRIES(E) E(solve_batched, prn__ref_solve_batched)
#else
#define PRN__REF_SCYFI_ENTRIES(E)
#endif
#if !defined(PARRNN_NO_DEER) && !defined(PARRNN_NO_TRAINING)
#define PRN__REF_DEER_ENTRIES(E) E(deer_iterate, prn__ref_deer_iterate) E(deer_adjoint, prn__ref_deer_adjoint)
#elif !defined(PARRNN_NO_DEER)
#define PRN__REF_DEER_ENTRIES(E) E(deer_iterate, prn__ref_deer_iterate)
#else
#define PRN__REF_DEER_ENTRIES(E)
#endif
#define PRN__REF_ENTRIES(E)                                                                        \
    PRN__REF_CORE_ENTRIES(E) PRN__REF_OPTIM_ENTRIES(E) PRN__REF_RNN_ENTRIES(E) PRN__REF_RNN_BACKWARD_ENTRIES(E) \
    PRN__REF_SCYFI_ENTRIES(E) PRN__REF_DEER_ENTRIES(E)
#define PRN__REF_NOBLAS_ENTRIES(E) PRN__REF_ENTRIES(E) E(gemm, prn__ref_gemm_loops)
#ifdef PARRNN_USE_CBLAS
#define PRN__REF_BLAS_ENTRIES(E) PRN__REF_ENTRIES(E) E(gemm, prn__ref_gemm_cblas)
#else
#define PRN__REF_BLAS_ENTRIES(E) PRN__REF_ENTRIES(E) E(gemm, prn__ref_gemm_panel)
#endif

PRN__DEF const prn_backend *prn_reference_noblas_backend(void) {
    PRN_BACKEND_TABLE(b, "reference-noblas", PRN__REF_NOBLAS_ENTRIES);
    return &b;
}
PRN__DEF const prn_backend *prn_reference_backend(void) {
    PRN_BACKEND_TABLE(b, "reference", PRN__REF_BLAS_ENTRIES);
    return &b;
}

/* ------------------------------------------------------------------------
 * The slot list's introspection (PRN_BACKEND_SLOTS)
 * ---------------------------------------------------------------------- */
PRN__DEF int prn_backend_slot_count(void) { return (int)PRN_SLOT_COUNT; }
PRN__DEF const char *prn_backend_slot_name(int slot) {
#define PRN__SLOT_NAME(ret, name, args, kind) #name,
    static const char *const names[PRN_SLOT_COUNT] = {PRN_BACKEND_SLOTS(PRN__SLOT_NAME)};
#undef PRN__SLOT_NAME
    return slot >= 0 && slot < (int)PRN_SLOT_COUNT ? names[slot] : NULL;
}
PRN__DEF int prn_backend_slot_kind(int slot) {
#define PRN__SLOT_KIND(ret, name, args, kind) (unsigned char)kind,
    static const unsigned char kinds[PRN_SLOT_COUNT] = {PRN_BACKEND_SLOTS(PRN__SLOT_KIND)};
#undef PRN__SLOT_KIND
    return slot >= 0 && slot < (int)PRN_SLOT_COUNT ? (int)kinds[slot] : -1;
}
PRN__DEF int prn_backend_has(const prn_backend *be, int slot) {
    if (!be) return 0;
    switch (slot) {
#define PRN__SLOT_HAS(ret, name, args, kind) \
    case PRN_SLOT_##name: return be->name != NULL;
        PRN_BACKEND_SLOTS(PRN__SLOT_HAS)
#undef PRN__SLOT_HAS
    default: return 0;
    }
}
/* The one gate of the generic code's fused paths. */
PRN__DEF int prn_backend_supports(prn_context *ctx, prn_backend_slot slot, const void *args) {
    const prn_backend *be = ctx ? ctx->be : NULL;
    if (!prn_backend_has(be, (int)slot)) return 0;
    if (prn_backend_slot_kind((int)slot) != PRN_SLOT_KIND_FUSED || !be->supports) return 1;
    return be->supports(ctx, slot, args) != 0;
}

/* ------------------------------------------------------------------------
 * Context
 * ---------------------------------------------------------------------- */
PRN__FN const prn_backend *prn__builtin_backend(int i) {
    const prn_backend *list[4];
    int n = 0;
    list[n++] = prn_reference_backend();
    list[n++] = prn_reference_noblas_backend();
#ifdef PARRNN_WITH_OPENCL
    list[n++] = prn_opencl_backend();
#endif
#ifdef PARRNN_WITH_CUDA
    list[n++] = prn_cuda_backend();
#endif
    return i >= 0 && i < n ? list[i] : NULL;
}

PRN__DEF const char *prn_context_device(const prn_context *ctx) { return ctx ? ctx->device : NULL; }

PRN__DEF int prn_backend_list(const prn_config *config, const char **names, int max) {
    int n = 0, i;
    if (config)
        for (i = 0; i < config->num_backends; ++i)
            if (config->backends && config->backends[i] && config->backends[i]->name) {
                if (names && n < max) names[n] = config->backends[i]->name;
                ++n;
            }
    for (i = 0; prn__builtin_backend(i); ++i) {
        if (names && n < max) names[n] = prn__builtin_backend(i)->name;
        ++n;
    }
    return n;
}

PRN__FN prn_status prn__create_fail(char *err_buf, size_t err_size, prn_status st, const char *fmt, ...) {
    va_list ap;
    if (err_buf && err_size) {
        va_start(ap, fmt);
        vsnprintf(err_buf, err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

PRN__DEF prn_status prn_context_create(const prn_config *config, prn_context **out, char *err_buf,
                                       size_t err_size) {
    prn_config cfg;
    const prn_backend *be = NULL;
    const char *name;
    prn_context *ctx;
    int i;
    if (!out)
        return prn__create_fail(err_buf, err_size, PRN_ERR_NULL_ARGUMENT,
                                "prn_context_create: argument 'out' is NULL");
    memset(&cfg, 0, sizeof cfg);
    if (config) cfg = *config;
    if ((cfg.allocator.alloc == NULL) != (cfg.allocator.free == NULL))
        return prn__create_fail(err_buf, err_size, PRN_ERR_INVALID_ARGUMENT,
                                "prn_context_create: argument 'config->allocator': set both alloc and free, or neither");
    if (cfg.num_threads < 0 || cfg.num_backends < 0 || (cfg.num_backends > 0 && !cfg.backends))
        return prn__create_fail(err_buf, err_size, PRN_ERR_INVALID_ARGUMENT,
                                "prn_context_create: argument 'config': negative num_threads/num_backends or backends NULL");
    name = cfg.backend;
    if (!name || !*name) name = getenv("PARRNN_BACKEND");
    if (!name || !*name) name = "reference";
    for (i = 0; i < cfg.num_backends && !be; ++i)
        if (cfg.backends[i] && cfg.backends[i]->name && strcmp(cfg.backends[i]->name, name) == 0)
            be = cfg.backends[i];
    for (i = 0; prn__builtin_backend(i) && !be; ++i)
        if (strcmp(prn__builtin_backend(i)->name, name) == 0) be = prn__builtin_backend(i);
    if (!be) {
        char list[256];
        const char *names[16];
        int n = prn_backend_list(&cfg, names, 16), k;
        size_t len = 0;
        list[0] = 0;
        for (k = 0; k < n && k < 16; ++k)
            if (len < sizeof list)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", names[k]);
        return prn__create_fail(err_buf, err_size, PRN_ERR_NOT_FOUND,
                                "prn_context_create: backend '%s' not found (available: %s)", name, list);
    }
    if (be->abi_version != PARRNN_BACKEND_ABI)
        return prn__create_fail(err_buf, err_size, PRN_ERR_INVALID_ARGUMENT,
                                "prn_context_create: backend '%s' was written for ABI %d, this header is ABI %d",
                                be->name, be->abi_version, PARRNN_BACKEND_ABI);
    for (i = 0; i < (int)PRN_SLOT_COUNT; ++i)
        if (prn_backend_slot_kind(i) == PRN_SLOT_KIND_BUFFER && !prn_backend_has(be, i))
            return prn__create_fail(err_buf, err_size, PRN_ERR_INVALID_ARGUMENT,
                                    "prn_context_create: backend '%s' lacks a required buffer entry (%s)", be->name,
                                    prn_backend_slot_name(i));
    ctx = (prn_context *)(cfg.allocator.alloc ? cfg.allocator.alloc(cfg.allocator.user, sizeof *ctx)
                                              : PARRNN_MALLOC(sizeof *ctx));
    if (!ctx)
        return prn__create_fail(err_buf, err_size, PRN_ERR_OUT_OF_MEMORY,
                                "prn_context_create: allocating the context failed");
    memset(ctx, 0, sizeof *ctx);
    ctx->be = be;
    ctx->al = cfg.allocator;
    ctx->seed = cfg.seed;
    ctx->num_threads = cfg.num_threads;
    ctx->max_file_bytes = cfg.max_file_bytes ? cfg.max_file_bytes : PRN_DEFAULT_MAX_FILE_BYTES;
    ctx->log = cfg.log;
    ctx->log_user = cfg.log_user;
    if (be->create) {
        prn_status st;
        ctx->device = cfg.device && *cfg.device ? cfg.device : NULL;
        st = be->create(ctx, &ctx->bstate);
        ctx->device = NULL;
        if (st != PRN_OK) {
            prn_status r = prn__create_fail(err_buf, err_size, prn__in_fn(ctx, "prn_context_create", st), "%s", ctx->msg);
            prn_free(ctx, ctx);
            return r;
        }
    }
    *out = ctx;
    return PRN_OK;
}

PRN__FN void prn__storage_release(prn_context *ctx, prn__storage *st) {
    if (st && --st->refs == 0) {
        ctx->be->buf_free(ctx, st->buf);
        prn_free(ctx, st);
    }
}

PRN__FN void prn__unlink(prn_tensor *t) {
    prn_context *ctx = t->ctx;
    if (t->prev) t->prev->next = t->next;
    else ctx->live = t->next;
    if (t->next) t->next->prev = t->prev;
    ctx->n_live--;
}

PRN__DEF void prn_context_free(prn_context *ctx) {
    prn_tensor *t;
    if (!ctx) return;
    prn_tape_clear(ctx);
    prn_free(ctx, ctx->tape);
    /* Whatever the caller did not free: gradients are in the list too, so
     * drop the links first and free each tensor exactly once. */
    for (t = ctx->live; t; t = t->next) t->grad = t->pending = NULL;
    while ((t = ctx->live) != NULL) {
        prn__unlink(t);
        prn__storage_release(ctx, t->st);
        prn_free(ctx, t);
    }
    if (ctx->be->destroy) ctx->be->destroy(ctx, ctx->bstate);
    prn_free(ctx, ctx);
}

/* ------------------------------------------------------------------------
 * Tensors
 * ---------------------------------------------------------------------- */
PRN__FN int prn__mul_overflows(size_t a, size_t b, size_t *r) {
    if (a != 0 && b > (size_t)-1 / a) return 1;
    *r = a * b;
    return 0;
}

/* Validates (ndim, shape) for function fn; computes numel and bytes. */
PRN__FN prn_status prn__check_shape(prn_context *ctx, const char *fn, const char *arg, prn_dtype dtype,
                                    int ndim, const size_t *shape, size_t *numel) {
    size_t n = 1, bytes;
    int i;
    if (dtype != PRN_F32 && dtype != PRN_F64 && dtype != PRN_I32)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'dtype': unknown dtype %d", fn, (int)dtype);
    if (ndim < 0 || ndim > PRN_MAX_DIMS)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'ndim': %d is outside 0..%d", fn,
                        ndim, PRN_MAX_DIMS);
    if (ndim > 0 && !shape)
        return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL with ndim %d", fn, arg, ndim);
    for (i = 0; i < ndim; ++i)
        if (prn__mul_overflows(n, shape[i], &n))
            return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: argument '%s': element count overflows size_t", fn, arg);
    if (prn__mul_overflows(n, prn_dtype_size(dtype), &bytes))
        return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: argument '%s': byte size overflows size_t", fn, arg);
    *numel = n;
    return PRN_OK;
}

PRN__FN prn_tensor *prn__tensor_struct(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                       size_t numel) {
    prn_tensor *t = (prn_tensor *)prn_alloc(ctx, sizeof *t);
    int i;
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (i = 0; i < PRN_MAX_DIMS; ++i) t->shape[i] = shape && i < ndim ? shape[i] : 1;
    t->numel = numel;
    t->refs = 1;
    t->is_leaf = 1;
    t->next = ctx->live;
    if (ctx->live) ctx->live->prev = t;
    ctx->live = t;
    ctx->n_live++;
    return t;
}

/* A new tensor with uninitialised contents (checked shape). */
PRN__FN prn_status prn__tensor_new(prn_context *ctx, const char *fn, prn_dtype dtype, int ndim,
                                   const size_t *shape, prn_tensor **out) {
    size_t numel = 0;
    prn_tensor *t;
    prn__storage *st;
    prn_status bst;
    PRN__TRY(prn__check_shape(ctx, fn, "shape", dtype, ndim, shape, &numel));
    st = (prn__storage *)prn_alloc(ctx, sizeof *st);
    if (!st) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for a tensor", fn);
    st->refs = 1;
    st->version = 0;
    st->bytes = numel * prn_dtype_size(dtype);
    bst = ctx->status; /* to tell whether buf_alloc leaves a message of its own */
    ctx->status = PRN_OK;
    if (ctx->be->buf_alloc(ctx, st->bytes, &st->buf) != PRN_OK) {
        size_t bytes = st->bytes; /* st is freed before the message is written */
        int own = ctx->status != PRN_OK;
        prn_free(ctx, st);
        /* with the backend's message, which names the device call */
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for a tensor of %lu bytes%s%s", fn,
                        (unsigned long)bytes, own ? ": " : "", own ? prn_last_error(ctx) : "");
    }
    ctx->status = bst;
    t = prn__tensor_struct(ctx, dtype, ndim, shape, numel);
    if (!t) {
        prn__storage_release(ctx, st);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for a tensor", fn);
    }
    t->st = st;
    *out = t;
    return PRN_OK;
}

PRN__FN prn_status prn__tensor_like(prn_context *ctx, const char *fn, const prn_tensor *x, prn_tensor **out) {
    return prn__tensor_new(ctx, fn, x->dtype, x->ndim, x->shape, out);
}

PRN__DEF void prn_tensor_free(prn_tensor *t) {
    prn_context *ctx;
    if (!t || --t->refs > 0) return;
    ctx = t->ctx;
    prn_tensor_free(t->grad);
    prn_tensor_free(t->pending);
    prn__unlink(t);
    prn__storage_release(ctx, t->st);
    prn_free(ctx, t);
}
PRN__DEF prn_tensor *prn_tensor_retain(prn_tensor *t) {
    if (t) t->refs++;
    return t;
}

PRN__FN prn_status prn__fill(prn_tensor *t, double v, const char *fn) {
    prn_context *ctx = t->ctx;
    if (t->dtype == PRN_I32 && !(v >= -2147483648.0 && v <= 2147483647.0 && v == (double)(long)v))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'value' %g is not an int32", fn, v);
    PRN__NEED(ctx, fill, fn);
    return prn__in_fn(ctx, fn, ctx->be->fill(ctx, t->dtype, t->st->buf, t->numel, v));
}

PRN__DEF prn_status prn_tensor_full(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                    double value, prn_tensor **out) {
    prn_tensor *t = NULL;
    prn_status st;
    PRN__CTX(ctx, "prn_tensor_full");
    if (!out) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_full: argument 'out' is NULL");
    PRN__TRY(prn__tensor_new(ctx, "prn_tensor_full", dtype, ndim, shape, &t));
    if ((st = prn__fill(t, value, "prn_tensor_full")) != PRN_OK) { prn_tensor_free(t); return st; }
    *out = t;
    return PRN_OK;
}
PRN__DEF prn_status prn_tensor_create(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                      prn_tensor **out) {
    prn_tensor *t = NULL;
    prn_status st;
    PRN__CTX(ctx, "prn_tensor_create");
    if (!out) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_create: argument 'out' is NULL");
    PRN__TRY(prn__tensor_new(ctx, "prn_tensor_create", dtype, ndim, shape, &t));
    if ((st = prn__fill(t, 0.0, "prn_tensor_create")) != PRN_OK) { prn_tensor_free(t); return st; }
    *out = t;
    return PRN_OK;
}

PRN__DEF prn_status prn_tensor_from_host(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                         const void *data, prn_tensor **out) {
    prn_tensor *t = NULL;
    prn_status st;
    PRN__CTX(ctx, "prn_tensor_from_host");
    if (!out) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_from_host: argument 'out' is NULL");
    PRN__TRY(prn__tensor_new(ctx, "prn_tensor_from_host", dtype, ndim, shape, &t));
    if (!data && t->numel) {
        prn_tensor_free(t);
        return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_from_host: argument 'data' is NULL");
    }
    st = prn__in_fn(ctx, "prn_tensor_from_host", ctx->be->buf_upload(ctx, t->st->buf, 0, data, t->st->bytes));
    if (st != PRN_OK) { prn_tensor_free(t); return st; }
    *out = t;
    return PRN_OK;
}

PRN__FN prn_status prn__random_tensor(prn_context *ctx, const char *fn, prn_random_dist dist, prn_dtype dtype,
                                      int ndim, const size_t *shape, double p0, double p1, prn_tensor **out) {
    prn_tensor *t = NULL;
    prn_status st;
    PRN__CTX(ctx, fn);
    if (!out) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    if (dtype == PRN_I32) return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'dtype': must be f32 or f64", fn);
    /* finite, and so is hi - lo: an infinite range draws Inf and NaN */
    if (!(fabs(p0) <= DBL_MAX) || !(fabs(p1) <= DBL_MAX) || (dist == PRN_RANDOM_NORMAL && p1 < 0) ||
        (dist == PRN_RANDOM_UNIFORM && !(p1 >= p0 && p1 - p0 <= DBL_MAX)))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: arguments (%g, %g) are not a valid %s", fn, p0, p1,
                        dist == PRN_RANDOM_NORMAL ? "(mean, stddev >= 0, both finite)"
                                                  : "range lo <= hi (finite, hi - lo finite)");
    PRN__NEED(ctx, random, fn);
    PRN__TRY(prn__tensor_new(ctx, fn, dtype, ndim, shape, &t));
    st = prn__in_fn(ctx, fn, ctx->be->random(ctx, dist, dtype, t->numel, ctx->seed, ctx->counter, p0, p1, t->st->buf));
    if (st != PRN_OK) { prn_tensor_free(t); return st; }
    ctx->counter += t->numel;
    *out = t;
    return PRN_OK;
}
PRN__DEF prn_status prn_tensor_uniform(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                       double lo, double hi, prn_tensor **out) {
    return prn__random_tensor(ctx, "prn_tensor_uniform", PRN_RANDOM_UNIFORM, dtype, ndim, shape, lo, hi, out);
}
PRN__DEF prn_status prn_tensor_normal(prn_context *ctx, prn_dtype dtype, int ndim, const size_t *shape,
                                      double mean, double stddev, prn_tensor **out) {
    return prn__random_tensor(ctx, "prn_tensor_normal", PRN_RANDOM_NORMAL, dtype, ndim, shape, mean, stddev, out);
}

/* Tensor-argument validation shared by every entry point. */
PRN__FN prn_status prn__check_t(prn_context *ctx, const char *fn, const char *arg, const prn_tensor *t,
                                int float_only) {
    if (!t) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, arg);
    if (t->ctx != ctx)
        return PRN__ERR(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: argument '%s' belongs to another context (backend '%s')",
                        fn, arg, t->ctx->be->name);
    if (float_only && t->dtype == PRN_I32)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument '%s' is i32; this op needs f32 or f64", fn, arg);
    return PRN_OK;
}

PRN__DEF prn_status prn_tensor_upload(prn_tensor *t, const void *src, size_t count) {
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    if (!src) return PRN__ERR(t->ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_upload: argument 'src' is NULL");
    if (count != t->numel)
        return PRN__ERR(t->ctx, PRN_ERR_SHAPE, "prn_tensor_upload: argument 'count' is %lu but the tensor has %lu elements",
                        (unsigned long)count, (unsigned long)t->numel);
    t->st->version++; /* before the write: a failed upload may have written part of it */
    return prn__in_fn(t->ctx, "prn_tensor_upload",
                      t->ctx->be->buf_upload(t->ctx, t->st->buf, 0, src, t->numel * prn_dtype_size(t->dtype)));
}
PRN__DEF prn_status prn_tensor_download(const prn_tensor *t, void *dst, size_t count) {
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    if (!dst) return PRN__ERR(t->ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_download: argument 'dst' is NULL");
    if (count != t->numel)
        return PRN__ERR(t->ctx, PRN_ERR_SHAPE, "prn_tensor_download: argument 'count' is %lu but the tensor has %lu elements",
                        (unsigned long)count, (unsigned long)t->numel);
    return prn__in_fn(t->ctx, "prn_tensor_download",
                      t->ctx->be->buf_download(t->ctx, t->st->buf, 0, dst, t->numel * prn_dtype_size(t->dtype)));
}
PRN__DEF prn_status prn_tensor_item(const prn_tensor *t, double *value) {
    union { float f; double d; int32_t i; } u;
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    if (!value) return PRN__ERR(t->ctx, PRN_ERR_NULL_ARGUMENT, "prn_tensor_item: argument 'value' is NULL");
    if (t->numel == 0) return PRN__ERR(t->ctx, PRN_ERR_SHAPE, "prn_tensor_item: argument 't' is empty");
    PRN__TRY(prn__in_fn(t->ctx, "prn_tensor_item", t->ctx->be->buf_download(t->ctx, t->st->buf, 0, &u, prn_dtype_size(t->dtype))));
    *value = t->dtype == PRN_F32 ? (double)u.f : t->dtype == PRN_F64 ? u.d : (double)u.i;
    return PRN_OK;
}
PRN__DEF prn_status prn_tensor_fill(prn_tensor *t, double value) {
    prn_status st;
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    st = prn__fill(t, value, "prn_tensor_fill");
    /* written, or perhaps partly written by a failing backend call */
    if (st != PRN_ERR_INVALID_ARGUMENT && st != PRN_ERR_UNSUPPORTED) t->st->version++;
    return st;
}
PRN__DEF prn_dtype prn_tensor_dtype(const prn_tensor *t) { return t ? t->dtype : PRN_F32; }
PRN__DEF int prn_tensor_ndim(const prn_tensor *t) { return t ? t->ndim : 0; }
PRN__DEF size_t prn_tensor_dim(const prn_tensor *t, int axis) {
    if (!t) return 0;
    if (axis < 0) axis += t->ndim;
    return axis >= 0 && axis < t->ndim ? t->shape[axis] : 0;
}
PRN__DEF size_t prn_tensor_numel(const prn_tensor *t) { return t ? t->numel : 0; }
PRN__DEF prn_context *prn_tensor_context(const prn_tensor *t) { return t ? t->ctx : NULL; }
PRN__DEF void *prn_tensor_buffer(const prn_tensor *t) { return t ? t->st->buf : NULL; }
PRN__DEF int prn_tensor_requires_grad(const prn_tensor *t) { return t ? t->requires_grad : 0; }
PRN__DEF prn_tensor *prn_tensor_grad(const prn_tensor *t) { return t ? t->grad : NULL; }
PRN__DEF void prn_tensor_zero_grad(prn_tensor *t) {
    if (!t) return;
    prn_tensor_free(t->grad);
    t->grad = NULL;
}
PRN__DEF prn_status prn_tensor_set_grad(prn_tensor *t, prn_tensor *g) {
    static const char *fn = "prn_tensor_set_grad";
    prn_tensor *c = NULL;
    prn_status st;
    int i, same;
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    if (!g) return PRN__ERR(t->ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'g' is NULL", fn);
    if (g->ctx != t->ctx) return PRN__ERR(t->ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: 'g' is from another context", fn);
    if (g->dtype != t->dtype || t->dtype == PRN_I32)
        return PRN__ERR(t->ctx, PRN_ERR_DTYPE, "%s: argument 'g' is %s, 't' is %s", fn, prn_dtype_name(g->dtype),
                        prn_dtype_name(t->dtype));
    same = g->ndim == t->ndim;
    for (i = 0; same && i < t->ndim; ++i) same = g->shape[i] == t->shape[i];
    if (!same) return PRN__ERR(t->ctx, PRN_ERR_SHAPE, "%s: argument 'g' does not have t's shape", fn);
    prn_no_grad_begin(t->ctx);
    st = prn_copy(t->ctx, g, &c);
    prn_no_grad_end(t->ctx);
    if (st != PRN_OK) return st;
    prn_tensor_free(t->grad);
    t->grad = c;
    return PRN_OK;
}
PRN__DEF prn_status prn_tensor_set_requires_grad(prn_tensor *t, int rg) {
    if (!t) return PRN_ERR_NULL_ARGUMENT;
    if (t->dtype == PRN_I32)
        return PRN__ERR(t->ctx, PRN_ERR_DTYPE, "prn_tensor_set_requires_grad: argument 't' is i32 and cannot have a gradient");
    if (!t->is_leaf)
        return PRN__ERR(t->ctx, PRN_ERR_STATE, "prn_tensor_set_requires_grad: argument 't' is the output of a recorded op, not a leaf");
    t->requires_grad = rg != 0;
    return PRN_OK;
}

/* ------------------------------------------------------------------------
 * The tape
 * ---------------------------------------------------------------------- */
PRN__DEF void prn_no_grad_begin(prn_context *ctx) { if (ctx) ctx->no_grad++; }
PRN__DEF void prn_no_grad_end(prn_context *ctx) { if (ctx && ctx->no_grad > 0) ctx->no_grad--; }
#ifdef PARRNN_NO_TRAINING /* nothing is ever recorded */
PRN__DEF int prn_grad_enabled(const prn_context *ctx) { (void)ctx; return 0; }
#else
PRN__DEF int prn_grad_enabled(const prn_context *ctx) { return ctx && ctx->no_grad == 0; }
#endif
PRN__DEF size_t prn_tape_size(const prn_context *ctx) { return ctx ? ctx->tape_n : 0; }

PRN__FN void prn__node_release(prn__node *nd) {
    int k;
    for (k = 0; k < nd->n_in; ++k) prn_tensor_free(nd->in[k]);
    prn_tensor_free(nd->out);
    if (nd->free_user) nd->free_user(nd->user);
}

/* Drops the records after the first n (newest first, so outputs die before
 * the inputs they came from). Composite ops use it to undo a partial record. */
PRN__FN void prn__tape_truncate(prn_context *ctx, size_t n) {
    while (ctx->tape_n > n) prn__node_release(&ctx->tape[--ctx->tape_n]);
}
PRN__DEF void prn_tape_clear(prn_context *ctx) {
    if (!ctx) return;
    if (ctx->in_backward) { /* the engine is walking the tape */
        prn_set_error(ctx, PRN_ERR_STATE, "prn_tape_clear: called from a backward function; ignored");
        return;
    }
    prn__tape_truncate(ctx, 0);
}

/* Records op with saved scalars; does nothing when nothing needs a gradient. */
PRN__FN prn_status prn__record(prn_context *ctx, const char *fn, const char *name, prn_tensor *const *in, int n_in,
                               prn_tensor *out, prn_backward_fn bw, void *user, void (*free_user)(void *),
                               const double *f, int nf, const int *iv, int ni, int *recorded) {
    prn__node *nd;
    int k, any = 0;
    *recorded = 0;
#ifdef PARRNN_NO_TRAINING /* no tape: nothing to record (bw is NULL) */
    return PRN_OK;
#endif
    if (ctx->no_grad) return PRN_OK;
    if (ctx->in_backward) /* recording was switched back on inside a backward function */
        return PRN__ERR(ctx, PRN_ERR_STATE, "%s: cannot record on the tape from a backward function", fn);
    for (k = 0; k < n_in; ++k) any |= in[k]->requires_grad;
    if (!any) return PRN_OK;
    if (ctx->tape_n == ctx->tape_cap) {
        size_t cap = ctx->tape_cap ? ctx->tape_cap * 2 : 64;
        prn__node *nt = (prn__node *)prn_alloc(ctx, cap * sizeof *nt);
        if (!nt) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory growing the tape", fn);
        if (ctx->tape_n) memcpy(nt, ctx->tape, ctx->tape_n * sizeof *nt);
        prn_free(ctx, ctx->tape);
        ctx->tape = nt;
        ctx->tape_cap = cap;
    }
    nd = &ctx->tape[ctx->tape_n++];
    memset(nd, 0, sizeof *nd);
    nd->name = name;
    nd->backward = bw;
    nd->user = user;
    nd->free_user = free_user;
    nd->n_in = n_in;
    for (k = 0; k < n_in; ++k) {
        nd->in[k] = prn_tensor_retain(in[k]);
        nd->needs[k] = in[k]->requires_grad;
        nd->ver[k] = in[k]->st->version;
    }
    nd->out = prn_tensor_retain(out);
    nd->ver[n_in] = out->st->version;
    for (k = 0; k < nf && k < 4; ++k) nd->f[k] = f[k];
    for (k = 0; k < ni && k < 8; ++k) nd->i[k] = iv[k];
    out->requires_grad = 1;
    out->is_leaf = 0;
    *recorded = 1;
    return PRN_OK;
}

#ifndef PARRNN_NO_TRAINING /* the tape's backward (LEAVING PARTS OUT) */
PRN__DEF prn_status prn_tape_record(prn_context *ctx, const char *name, prn_tensor *const *inputs, int num_inputs,
                                    prn_tensor *output, prn_backward_fn backward, void *user,
                                    void (*free_user)(void *)) {
    static const char fn[] = "prn_tape_record";
    int k, rec;
    PRN__CTX(ctx, fn);
    if (!name) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'name' is NULL", fn);
    if (!backward) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'backward' is NULL", fn);
    if (num_inputs < 1 || num_inputs > PRN_MAX_OP_INPUTS)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'num_inputs' is %d, must be 1..%d", fn,
                        num_inputs, PRN_MAX_OP_INPUTS);
    if (!inputs) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'inputs' is NULL", fn);
    for (k = 0; k < num_inputs; ++k) {
        PRN__TRY(prn__check_t(ctx, fn, "inputs[k]", inputs[k], 0));
        if (inputs[k] == output)
            return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'output' is also inputs[%d]", fn, k);
    }
    PRN__TRY(prn__check_t(ctx, fn, "output", output, 1));
    if (!output->is_leaf || output->requires_grad)
        return PRN__ERR(ctx, PRN_ERR_STATE, "%s: argument 'output' already has a gradient history (recorded "
                        "before, or a parameter)", fn);
    PRN__TRY(prn__record(ctx, fn, name, inputs, num_inputs, output, backward, user, free_user, NULL, 0, NULL, 0, &rec));
    if (!rec && free_user) free_user(user);
    return PRN_OK;
}

/* Adds g into *slot (taking g over when the slot is empty); g is consumed.
 * like gives the shape the slot must have. */
PRN__FN prn_status prn__accumulate(prn_context *ctx, prn_tensor **slot, prn_tensor *g, const prn_tensor *like) {
    size_t shape[4] = {1, 1, 1, 1}, strides[4] = {0, 0, 0, 1};
    prn_status st;
    if (!*slot) {
        if (g->refs != 1 || g->st->refs != 1) {
            /* Shared with someone else (a custom backward returned a view,
             * its grad_output or an input): accumulate into a private copy. */
            prn_tensor *c;
            st = prn__tensor_like(ctx, "prn_backward", like, &c);
            if (st != PRN_OK) { prn_tensor_free(g); return st; } /* g is consumed on failure too */
            st = prn__in_fn(ctx, "prn_backward", ctx->be->buf_copy(ctx, c->st->buf, 0, g->st->buf, 0, c->st->bytes));
            prn_tensor_free(g);
            if (st != PRN_OK) { prn_tensor_free(c); return st; }
            g = c;
        }
        g->ndim = like->ndim;
        memcpy(g->shape, like->shape, sizeof g->shape);
        *slot = g;
        return PRN_OK;
    }
    if (!ctx->be->binary) {
        prn_tensor_free(g);
        return PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "prn_backward: backend '%s' does not implement primitive 'binary'",
                        ctx->be->name);
    }
    shape[3] = g->numel;
    (*slot)->st->version++; /* a leaf's .grad is a tensor the caller may have used in recorded ops */
    st = ctx->be->binary(ctx, PRN_BINARY_ADD, g->dtype, shape, (*slot)->st->buf, strides, g->st->buf, strides,
                         (*slot)->st->buf);
    prn_tensor_free(g);
    return prn__in_fn(ctx, "prn_backward", st);
}

/* A backward function may hand back, in grad_inputs, tensors the engine
 * already holds without taking a reference of its own: its grad_output, the
 * op's inputs or output (an identity op passes g through). The engine frees
 * one reference per slot, so it takes the missing ones here: for each
 * tensor, slots naming it minus the references the call added (held[] were
 * the counts before the call; a tensor not among the known ones is new and
 * had none). Without this, such a slot would free a tensor still in use. */
PRN__FN void prn__own_grads(prn_tensor **gin, int n, prn_tensor *const *known, const int *held, int n_known) {
    int j, k;
    for (j = 0; j < n; ++j) {
        prn_tensor *t = gin[j];
        int slots = 0, before = 0, added;
        if (!t) continue;
        for (k = 0; k < j; ++k) if (gin[k] == t) break;
        if (k < j) continue; /* counted at its first slot */
        for (k = j; k < n; ++k) slots += gin[k] == t;
        for (k = 0; k < n_known; ++k) if (known[k] == t) { before = held[k]; break; }
        for (added = t->refs - before; added < slots; ++added) prn_tensor_retain(t);
    }
}

/* Releases the records marked drop and then every record that no backward
 * can reach any more: its output is held by the record alone (not by the
 * caller, a later record or anyone's user data), e.g. a final state nobody
 * asked for. Newest first, so outputs die before the inputs they came from
 * and a released record's inputs may become unreachable in turn. Then
 * closes the gaps, keeping the order. */
PRN__FN void prn__tape_release(prn_context *ctx) {
    size_t i, j = 0;
    for (i = ctx->tape_n; i-- > 0;) {
        prn__node *nd = &ctx->tape[i];
        if (nd->drop || nd->out->refs == 1) { nd->drop = 1; prn__node_release(nd); }
    }
    for (i = 0; i < ctx->tape_n; ++i)
        if (!ctx->tape[i].drop) ctx->tape[j++] = ctx->tape[i];
    ctx->tape_n = j;
}

/* The backward pass. Phase 1 walks the tape from the newest record and
 * marks what the loss depends on; it fails, before running anything, when
 * a tensor on that path is an op's output whose record is gone (released by
 * an earlier prn_backward, or by prn_tape_clear) or when a tensor a reached
 * record saved was written since. Phase 2 runs the reached records' backward
 * functions into pending gradients; phase 3 adds the leaves' pending
 * gradients to their .grad; phase 4 releases the reached records (unless
 * retain) and every record no one can reach any more (its output held by
 * the tape alone). Records not reaching the loss stay for their own pass. */
PRN__FN prn_status prn__backward(prn_context *ctx, const char *fn, prn_tensor *loss, int retain) {
    prn_tensor **touched = NULL, *seed = NULL;
    size_t *reached = NULL, n_touched = 0, n_reached = 0, cap, i, r;
    prn_status st = PRN_OK;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "loss", loss, 1));
    if (loss->numel != 1)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'loss' has %lu elements; backward starts from a scalar", fn,
                        (unsigned long)loss->numel);
    if (!loss->requires_grad)
        return PRN__ERR(ctx, PRN_ERR_STATE, "%s: argument 'loss' does not depend on any tensor that requires grad", fn);
    if (ctx->in_backward) return PRN__ERR(ctx, PRN_ERR_STATE, "%s: called from a backward function", fn);
    /* Every tensor that can be reached: inputs of records and the loss. */
    cap = ctx->tape_n * PRN_MAX_OP_INPUTS + 1;
    touched = (prn_tensor **)prn_alloc(ctx, cap * sizeof *touched);
    reached = (size_t *)prn_alloc(ctx, (ctx->tape_n + 1) * sizeof *reached);
    if (!touched || !reached) {
        prn_free(ctx, touched); prn_free(ctx, reached);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    /* Phase 1: reach (the tape is in recording order, so a record comes
     * after the records of its inputs). */
    loss->mark = 1;
    touched[n_touched++] = loss;
    for (i = ctx->tape_n; i-- > 0;) {
        prn__node *nd = &ctx->tape[i];
        int k;
        if (!nd->out->mark) continue;
        nd->out->mark = 2;
        reached[n_reached++] = i;
        for (k = 0; k < nd->n_in; ++k)
            if (nd->needs[k] && !nd->in[k]->mark) { nd->in[k]->mark = 1; touched[n_touched++] = nd->in[k]; }
    }
    if (loss->mark == 1 && !loss->is_leaf)
        st = PRN__ERR(ctx, PRN_ERR_STATE, "%s: argument 'loss' is the output of an op whose record is no longer on "
                      "the tape (an earlier prn_backward through it released it, or prn_tape_clear dropped it): "
                      "nothing to differentiate; record the forward again", fn);
    for (r = 0; r < n_reached && st == PRN_OK; ++r) {
        const prn__node *nd = &ctx->tape[reached[r]];
        int k;
        for (k = 0; k <= nd->n_in && st == PRN_OK; ++k) {
            const prn_tensor *x = k < nd->n_in ? nd->in[k] : nd->out;
            if (k < nd->n_in && nd->needs[k] && x->mark == 1 && !x->is_leaf)
                st = PRN__ERR(ctx, PRN_ERR_STATE, "%s: argument 'loss' depends on input %d of op '%s', the output of "
                              "an op whose record is no longer on the tape (released by an earlier prn_backward "
                              "through a shared part of the graph, or by prn_tape_clear); record the forward again, "
                              "or use prn_backward_retain for the earlier pass", fn, k, nd->name);
            else if (x->st->version != nd->ver[k]) {
                char what[32];
                if (k < nd->n_in) snprintf(what, sizeof what, "input %d", k);
                else snprintf(what, sizeof what, "the output");
                st = PRN__ERR(ctx, PRN_ERR_STATE, "%s: %s of op '%s' was written in place (prn_tensor_upload, "
                              "prn_tensor_fill, an optimiser step, ...) after the op was recorded: its data version "
                              "is %lu, the op saved version %lu; no gradient changed; record the forward again", fn,
                              what, nd->name, x->st->version, nd->ver[k]);
            }
        }
    }
    if (st == PRN_OK) st = prn__in_fn(ctx, fn, prn_tensor_full(ctx, loss->dtype, loss->ndim, loss->shape, 1.0, &seed));
    if (st != PRN_OK) {
        for (i = 0; i < n_touched; ++i) touched[i]->mark = 0;
        prn_free(ctx, touched); prn_free(ctx, reached);
        return st;
    }
    /* Phase 2: the reached records, newest first. */
    loss->pending = seed;
    ctx->no_grad++;
    ctx->in_backward = 1;
    for (r = 0; r < n_reached && st == PRN_OK; ++r) {
        prn__node *nd = &ctx->tape[reached[r]];
        prn_tensor *gin[PRN_MAX_OP_INPUTS], *known[PRN_MAX_OP_INPUTS + 2];
        int held[PRN_MAX_OP_INPUTS + 2];
        prn_op op;
        int k;
        if (!nd->out->pending) continue; /* no gradient flowed into it */
        memset(gin, 0, sizeof gin);
        op.name = nd->name;
        op.inputs = nd->in;
        op.num_inputs = nd->n_in;
        op.needs_grad = nd->needs;
        op.output = nd->out;
        op.user = nd->user;
        op.f = nd->f;
        op.i = nd->i;
        for (k = 0; k < nd->n_in; ++k) { known[k] = nd->in[k]; held[k] = nd->in[k]->refs; }
        known[nd->n_in] = nd->out; held[nd->n_in] = nd->out->refs;
        known[nd->n_in + 1] = nd->out->pending; held[nd->n_in + 1] = nd->out->pending->refs;
        st = nd->backward(ctx, &op, nd->out->pending, gin);
        prn__own_grads(gin, nd->n_in, known, held, nd->n_in + 2);
        /* An op output's gradient is not needed once its record has run:
         * released before the input gradients are accumulated, so that one
         * that shares its storage (a view's or reshape's backward) is taken
         * over by prn__accumulate rather than copied. */
        if (st == PRN_OK) { prn_tensor_free(nd->out->pending); nd->out->pending = NULL; }
        for (k = 0; k < nd->n_in; ++k) {
            prn_tensor *x = nd->in[k], *g = gin[k];
            if (!g) continue;
            if (st == PRN_OK && nd->needs[k]) {
                if (g->ctx != ctx || g->dtype != x->dtype || g->numel != x->numel)
                    st = PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: backward of op '%s' returned a gradient for input %d that "
                                  "does not match it (dtype/size)", fn, nd->name, k);
                else {
                    st = prn__accumulate(ctx, &x->pending, g, x);
                    continue;
                }
            }
            prn_tensor_free(g);
        }
    }
    ctx->no_grad--;
    ctx->in_backward = 0;
    /* Phase 3: commit. Pending gradients are private tensors, so taking one
     * over cannot fail; only the backend's addition can. */
    for (i = 0; i < n_touched && st == PRN_OK; ++i) {
        prn_tensor *t = touched[i];
        if (t->pending && t->is_leaf && t->requires_grad) {
            st = prn__accumulate(ctx, &t->grad, t->pending, t);
            t->pending = NULL;
        }
    }
    for (i = 0; i < n_touched; ++i) {
        prn_tensor_free(touched[i]->pending);
        touched[i]->pending = NULL;
        touched[i]->mark = 0;
    }
    /* Phase 4: release. */
    if (st == PRN_OK) {
        if (!retain)
            for (r = 0; r < n_reached; ++r) ctx->tape[reached[r]].drop = 1;
        prn__tape_release(ctx);
    }
    prn_free(ctx, touched);
    prn_free(ctx, reached);
    return prn__in_fn(ctx, fn, st);
}

PRN__DEF prn_status prn_backward(prn_context *ctx, prn_tensor *loss) {
    return prn__backward(ctx, "prn_backward", loss, 0);
}
PRN__DEF prn_status prn_backward_retain(prn_context *ctx, prn_tensor *loss) {
    return prn__backward(ctx, "prn_backward_retain", loss, 1);
}
#endif /* PARRNN_NO_TRAINING */

/* ------------------------------------------------------------------------
 * Shape helpers and raw (unrecorded) operations
 * ---------------------------------------------------------------------- */
PRN__FN void prn__pad4(int ndim, const size_t *shape, size_t s[4]) {
    int i;
    for (i = 0; i < 4; ++i) s[i] = i < 4 - ndim ? 1 : shape[i - (4 - ndim)];
}
PRN__FN void prn__strides4(const size_t s[4], size_t st[4]) {
    st[3] = 1;
    st[2] = s[3];
    st[1] = s[3] * s[2];
    st[0] = s[3] * s[2] * s[1];
}
/* Strides that read x (ndim, shape) broadcast to the 4-D shape out4. */
PRN__FN void prn__bstrides(const prn_tensor *x, const size_t out4[4], size_t st[4]) {
    size_t x4[4];
    int i;
    prn__pad4(x->ndim, x->shape, x4);
    prn__strides4(x4, st);
    for (i = 0; i < 4; ++i) if (x4[i] == 1 && out4[i] != 1) st[i] = 0;
}
PRN__FN int prn__same_shape(const prn_tensor *a, const prn_tensor *b) {
    int i;
    if (a->ndim != b->ndim) return 0;
    for (i = 0; i < a->ndim; ++i) if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}
PRN__FN void prn__shape_str(const prn_tensor *t, char *buf, size_t n) {
    size_t len = 0;
    int i;
    len += (size_t)snprintf(buf, n, "[");
    for (i = 0; i < t->ndim && len < n; ++i)
        len += (size_t)snprintf(buf + len, n - len, "%s%lu", i ? "," : "", (unsigned long)t->shape[i]);
    if (len < n) snprintf(buf + len, n - len, "]");
}
PRN__FN prn_status prn__same_dtype(prn_context *ctx, const char *fn, const prn_tensor *a, const prn_tensor *b) {
    if (a->dtype != b->dtype)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: arguments 'a' (%s) and 'b' (%s) have different dtypes", fn,
                        prn_dtype_name(a->dtype), prn_dtype_name(b->dtype));
    return PRN_OK;
}
/* Broadcast shape of a and b; an and bn name them in the message. */
PRN__FN prn_status prn__bcast_shape(prn_context *ctx, const char *fn, const prn_tensor *a, const char *an,
                                    const prn_tensor *b, const char *bn, int *ndim, size_t shape[4]) {
    size_t a4[4], b4[4];
    int i, nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    prn__pad4(a->ndim, a->shape, a4);
    prn__pad4(b->ndim, b->shape, b4);
    for (i = 0; i < 4; ++i) {
        if (a4[i] != b4[i] && a4[i] != 1 && b4[i] != 1) {
            char sa[64], sb[64];
            prn__shape_str(a, sa, sizeof sa);
            prn__shape_str(b, sb, sizeof sb);
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument '%s': shape %s does not broadcast with '%s' shape %s", fn,
                            bn, sb, an, sa);
        }
    }
    for (i = 0; i < nd; ++i) {
        int k = 4 - nd + i;
        shape[i] = a4[k] == 1 ? b4[k] : a4[k];
    }
    *ndim = nd;
    return PRN_OK;
}
PRN__FN prn_status prn__norm_axis(prn_context *ctx, const char *fn, const prn_tensor *x, int *axis) {
    int a = *axis;
    if (a < 0) a += x->ndim;
    if (a < 0 || a >= x->ndim)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'axis' is %d but the tensor has %d axes", fn,
                        *axis, x->ndim);
    *axis = a;
    return PRN_OK;
}

/* A tensor sharing x's storage with another shape of the same numel. */
PRN__FN prn_status prn__view(prn_context *ctx, const char *fn, prn_tensor *x, int ndim, const size_t *shape,
                             prn_tensor **out) {
    prn_tensor *t = prn__tensor_struct(ctx, x->dtype, ndim, shape, x->numel);
    if (!t) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->st = x->st;
    x->st->refs++;
    *out = t;
    return PRN_OK;
}

PRN__FN prn_status prn__binary_raw(prn_context *ctx, const char *fn, prn_binary_op op, prn_tensor *a,
                                   prn_tensor *b, prn_tensor **out) {
    size_t shape[4] = {0, 0, 0, 0}, o4[4], as[4], bs[4];
    int nd;
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, binary, fn);
    PRN__TRY(prn__bcast_shape(ctx, fn, a, "a", b, "b", &nd, shape));
    PRN__TRY(prn__tensor_new(ctx, fn, a->dtype, nd, shape, &y));
    prn__pad4(nd, shape, o4);
    prn__bstrides(a, o4, as);
    prn__bstrides(b, o4, bs);
    st = prn__in_fn(ctx, fn, ctx->be->binary(ctx, op, a->dtype, o4, a->st->buf, as, b->st->buf, bs, y->st->buf));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

PRN__FN prn_status prn__unary_raw(prn_context *ctx, const char *fn, prn_unary_op op, prn_tensor *x, double alpha,
                                  double beta, prn_tensor **out) {
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, unary, fn);
    PRN__TRY(prn__tensor_like(ctx, fn, x, &y));
    st = prn__in_fn(ctx, fn, ctx->be->unary(ctx, op, x->dtype, x->numel, x->st->buf, y->st->buf, alpha, beta));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* x broadcast (materialised) to (ndim, shape); shapes already validated. */
PRN__FN prn_status prn__expand_raw(prn_context *ctx, const char *fn, prn_tensor *x, int ndim, const size_t *shape,
                                   prn_tensor **out) {
    size_t o4[4], xs[4], ys[4];
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, strided_copy, fn);
    PRN__TRY(prn__tensor_new(ctx, fn, x->dtype, ndim, shape, &y));
    prn__pad4(ndim, shape, o4);
    prn__bstrides(x, o4, xs);
    prn__strides4(o4, ys);
    st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, o4, x->st->buf, 0, xs, y->st->buf, 0, ys));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* Output shape of a reduction; axis already normalised or PRN_ALL_AXES. */
PRN__FN void prn__reduced_shape(const prn_tensor *x, int axis, int keepdim, int *ndim, size_t shape[4]) {
    int i, n = 0;
    for (i = 0; i < x->ndim; ++i) {
        int reduced = axis == PRN_ALL_AXES || axis == i;
        if (reduced && !keepdim) continue;
        shape[n++] = reduced ? 1 : x->shape[i];
    }
    *ndim = n;
}
PRN__FN void prn__split3(const prn_tensor *x, int axis, size_t *outer, size_t *n, size_t *inner) {
    int i;
    *outer = *inner = 1;
    if (axis == PRN_ALL_AXES) { *n = x->numel; return; }
    for (i = 0; i < axis; ++i) *outer *= x->shape[i];
    for (i = axis + 1; i < x->ndim; ++i) *inner *= x->shape[i];
    *n = x->shape[axis];
}

PRN__FN prn_status prn__reduce_raw(prn_context *ctx, const char *fn, prn_reduce_op op, prn_tensor *x, int axis,
                                   int keepdim, prn_tensor **out) {
    size_t shape[4] = {0, 0, 0, 0}, outer, n, inner;
    int nd;
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, reduce, fn);
    prn__reduced_shape(x, axis, keepdim, &nd, shape);
    prn__split3(x, axis, &outer, &n, &inner);
    PRN__TRY(prn__tensor_new(ctx, fn, x->dtype, nd, shape, &y));
    st = prn__in_fn(ctx, fn, ctx->be->reduce(ctx, op, x->dtype, outer, n, inner, x->st->buf, y->st->buf));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* *finite = 1 when every element of x is finite, on any backend: its
 * all_finite entry, else x * 0 + 0 (NaN exactly where x is NaN or Inf)
 * and a sum, which keeps a NaN. */
PRN__FN prn_status prn__all_finite(prn_context *ctx, const char *fn, prn_tensor *x, int *finite) {
    prn_tensor *z = NULL, *zv = NULL, *sm = NULL;
    double v = 0;
    size_t n;
    prn_status st;
    *finite = 1;
    if (!x->numel) return PRN_OK;
    if (prn_backend_supports(ctx, PRN_SLOT_all_finite, NULL))
        return prn__in_fn(ctx, fn, ctx->be->all_finite(ctx, x->dtype, x->numel, x->st->buf, finite));
    n = x->numel;
    st = prn__unary_raw(ctx, fn, PRN_UNARY_AFFINE, x, 0.0, 0.0, &z);
    if (st == PRN_OK) st = prn__view(ctx, fn, z, 1, &n, &zv);
    if (st == PRN_OK) st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, zv, 0, 0, &sm);
    if (st == PRN_OK) st = prn_tensor_item(sm, &v);
    prn_tensor_free(z); prn_tensor_free(zv); prn_tensor_free(sm);
    *finite = v == v;
    return prn__in_fn(ctx, fn, st);
}

/* g summed over the axes along which like was broadcast, shaped like like.
 * Returns g itself (retained) when nothing is to be done. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__sum_to(prn_context *ctx, prn_tensor *g, const prn_tensor *like, prn_tensor **out) {
    static const char fn[] = "prn_backward";
    size_t g4[4], l4[4];
    prn_tensor *cur = g;
    int i;
    if (prn__same_shape(g, like)) { *out = prn_tensor_retain(g); return PRN_OK; }
    prn__pad4(g->ndim, g->shape, g4);
    prn__pad4(like->ndim, like->shape, l4);
    for (i = 0; i < 4; ++i) {
        if (l4[i] == 1 && g4[i] != 1) {
            size_t outer = 1, inner = 1, s[4];
            int k;
            prn_tensor *t = NULL;
            prn_status st;
            PRN__NEED(ctx, reduce, fn);
            for (k = 0; k < i; ++k) outer *= g4[k];
            for (k = i + 1; k < 4; ++k) inner *= g4[k];
            memcpy(s, g4, sizeof s);
            s[i] = 1;
            st = prn__tensor_new(ctx, fn, g->dtype, 4, s, &t);
            if (st == PRN_OK)
                st = prn__in_fn(ctx, fn, ctx->be->reduce(ctx, PRN_REDUCE_SUM, g->dtype, outer, g4[i], inner,
                                                         cur->st->buf, t->st->buf));
            if (cur != g) prn_tensor_free(cur);
            if (st != PRN_OK) { prn_tensor_free(t); return st; }
            cur = t;
            g4[i] = 1;
        }
    }
    if (cur == g) return prn__view(ctx, fn, g, like->ndim, like->shape, out);
    cur->ndim = like->ndim;
    memcpy(cur->shape, like->shape, sizeof cur->shape);
    *out = cur;
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

/* ------------------------------------------------------------------------
 * Recorded ops: forward, then backward functions (prn_backward_fn)
 * ---------------------------------------------------------------------- */
/* Common tail: record y or free it; hands y to the caller on success. */
PRN__FN prn_status prn__finish(prn_context *ctx, const char *fn, prn_tensor *y, prn_tensor *const *in, int n_in,
                               prn_backward_fn bw, const double *f, int nf, const int *iv, int ni,
                               prn_tensor **out) {
    int rec;
    prn_status st = prn__record(ctx, fn, fn + 4, in, n_in, y, bw, NULL, NULL, f, nf, iv, ni, &rec);
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

#define PRN__CHECK_OUT(ctx, fn, out)                                            \
    do { if (!(out)) return PRN__ERR((ctx), PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", (fn)); } while (0)

/* --- binary ----------------------------------------------------------- */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_binary(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn_tensor *a = op->inputs[0], *b = op->inputs[1], *y = op->output, *t = NULL, *u = NULL, *v = NULL;
    prn_binary_op kind = (prn_binary_op)op->i[0];
    prn_status st = PRN_OK;
    if (op->needs_grad[0]) {
        switch (kind) {
        case PRN_BINARY_ADD: case PRN_BINARY_SUB: st = prn__sum_to(ctx, g, a, &gin[0]); break;
        case PRN_BINARY_MUL:
            st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, b, &t);
            if (st == PRN_OK) st = prn__sum_to(ctx, t, a, &gin[0]);
            break;
        case PRN_BINARY_DIV:
            st = prn__binary_raw(ctx, fn, PRN_BINARY_DIV, g, b, &t);
            if (st == PRN_OK) st = prn__sum_to(ctx, t, a, &gin[0]);
            break;
        default: /* POW: g * b * a^(b-1), with exponent b-1 replaced by 0 where
                  * b = 0 so that 0 * 0^-1 does not make NaN */
            st = prn__unary_raw(ctx, fn, PRN_UNARY_AFFINE, b, 0.0, 0.0, &v); /* zeros */
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_EQ, b, v, &t);          /* b == 0 */
            if (st == PRN_OK) { prn_tensor_free(v); v = NULL; st = prn__binary_raw(ctx, fn, PRN_BINARY_ADD, b, t, &v); }
            if (st == PRN_OK) st = prn__unary_raw(ctx, fn, PRN_UNARY_AFFINE, v, 1.0, -1.0, &u);
            prn_tensor_free(t); prn_tensor_free(v); t = v = NULL;
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_POW, a, u, &v);
            if (st == PRN_OK) { prn_tensor_free(u); u = NULL; st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, v, b, &u); }
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, u, &t);
            if (st == PRN_OK) st = prn__sum_to(ctx, t, a, &gin[0]);
            break;
        }
        prn_tensor_free(t); prn_tensor_free(u); prn_tensor_free(v);
        t = u = v = NULL;
        if (st != PRN_OK) return st;
    }
    if (op->needs_grad[1]) {
        switch (kind) {
        case PRN_BINARY_ADD: st = prn__sum_to(ctx, g, b, &gin[1]); break;
        case PRN_BINARY_SUB:
            st = prn__sum_to(ctx, g, b, &t);
            if (st == PRN_OK) st = prn__unary_raw(ctx, fn, PRN_UNARY_NEG, t, 0, 0, &gin[1]);
            break;
        case PRN_BINARY_MUL:
            st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, a, &t);
            if (st == PRN_OK) st = prn__sum_to(ctx, t, b, &gin[1]);
            break;
        case PRN_BINARY_DIV: /* -g * y / b */
            st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, y, &u);
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_DIV, u, b, &v);
            if (st == PRN_OK) st = prn__sum_to(ctx, v, b, &t);
            if (st == PRN_OK) st = prn__unary_raw(ctx, fn, PRN_UNARY_NEG, t, 0, 0, &gin[1]);
            break;
        default: /* POW: g * y * ln a */
            st = prn__unary_raw(ctx, fn, PRN_UNARY_LOG, a, 0, 0, &u);
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, y, u, &v);
            if (st == PRN_OK) { prn_tensor_free(u); u = NULL; st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, v, &u); }
            if (st == PRN_OK) st = prn__sum_to(ctx, u, b, &gin[1]);
            break;
        }
        prn_tensor_free(t); prn_tensor_free(u); prn_tensor_free(v);
    }
    return st;
}
#endif /* PARRNN_NO_TRAINING */

PRN__FN prn_status prn__binary_op(prn_context *ctx, const char *fn, prn_binary_op op, prn_tensor *a, prn_tensor *b,
                                  prn_tensor **out) {
    prn_tensor *in[2], *y = NULL;
    int iv = (int)op;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "a", a, 1));
    PRN__TRY(prn__check_t(ctx, fn, "b", b, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__same_dtype(ctx, fn, a, b));
    PRN__TRY(prn__binary_raw(ctx, fn, op, a, b, &y));
    in[0] = a;
    in[1] = b;
    return prn__finish(ctx, fn, y, in, 2, PRN__IF_TRAINING(prn__bw_binary), NULL, 0, &iv, 1, out);
}
PRN__DEF prn_status prn_add(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn__binary_op(ctx, "prn_add", PRN_BINARY_ADD, a, b, out);
}
PRN__DEF prn_status prn_sub(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn__binary_op(ctx, "prn_sub", PRN_BINARY_SUB, a, b, out);
}
PRN__DEF prn_status prn_mul(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn__binary_op(ctx, "prn_mul", PRN_BINARY_MUL, a, b, out);
}
PRN__DEF prn_status prn_div(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn__binary_op(ctx, "prn_div", PRN_BINARY_DIV, a, b, out);
}
PRN__DEF prn_status prn_pow(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn__binary_op(ctx, "prn_pow", PRN_BINARY_POW, a, b, out);
}

/* --- unary ------------------------------------------------------------ */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_unary(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn_tensor *x = op->inputs[0], *y = op->output, *t = NULL;
    prn_status st;
    switch ((prn_unary_op)op->i[0]) {
    case PRN_UNARY_NEG: return prn__unary_raw(ctx, fn, PRN_UNARY_NEG, g, 0, 0, &gin[0]);
    case PRN_UNARY_EXP: return prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, y, &gin[0]);
    case PRN_UNARY_LOG: return prn__binary_raw(ctx, fn, PRN_BINARY_DIV, g, x, &gin[0]);
    case PRN_UNARY_RELU: return prn__binary_raw(ctx, fn, PRN_BINARY_RELU_GRAD, g, x, &gin[0]);
    case PRN_UNARY_SIGMOID: return prn__binary_raw(ctx, fn, PRN_BINARY_SIGMOID_GRAD, g, y, &gin[0]);
    case PRN_UNARY_TANH: return prn__binary_raw(ctx, fn, PRN_BINARY_TANH_GRAD, g, y, &gin[0]);
    case PRN_UNARY_POWS: /* g * p * x^(p-1); x^0 is constant (even at x = 0) */
        if (op->f[0] == 0) return prn_tensor_create(ctx, x->dtype, x->ndim, x->shape, &gin[0]);
        st = prn__unary_raw(ctx, fn, PRN_UNARY_POWS, x, op->f[0] - 1.0, 0, &t);
        if (st == PRN_OK) st = prn__in_fn(ctx, fn, ctx->be->unary(ctx, PRN_UNARY_AFFINE, t->dtype, t->numel, t->st->buf, t->st->buf,
                                              op->f[0], 0.0));
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, t, &gin[0]);
        prn_tensor_free(t);
        return st;
    case PRN_UNARY_AFFINE: return prn__unary_raw(ctx, fn, PRN_UNARY_AFFINE, g, op->f[0], 0.0, &gin[0]);
    default: return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: no gradient for unary op %d", fn, op->i[0]);
    }
}
#endif /* PARRNN_NO_TRAINING */

PRN__FN prn_status prn__unary_op(prn_context *ctx, const char *fn, prn_unary_op op, prn_tensor *x, double alpha,
                                 double beta, prn_tensor **out) {
    prn_tensor *y = NULL;
    double f[2];
    int iv = (int)op;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    if (!(alpha == alpha) || !(beta == beta))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: scalar argument is NaN", fn);
    /* alpha x + beta with an infinite coefficient is NaN where x is 0 */
    if (op == PRN_UNARY_AFFINE && !(fabs(alpha) <= DBL_MAX && fabs(beta) <= DBL_MAX))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: scalar argument %g is not finite", fn,
                        fabs(alpha) <= DBL_MAX ? beta : alpha);
    PRN__TRY(prn__unary_raw(ctx, fn, op, x, alpha, beta, &y));
    f[0] = alpha;
    f[1] = beta;
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_unary), f, 2, &iv, 1, out);
}
PRN__DEF prn_status prn_neg(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_neg", PRN_UNARY_NEG, x, 0, 0, out);
}
PRN__DEF prn_status prn_exp(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_exp", PRN_UNARY_EXP, x, 0, 0, out);
}
PRN__DEF prn_status prn_log(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_log", PRN_UNARY_LOG, x, 0, 0, out);
}
PRN__DEF prn_status prn_relu(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_relu", PRN_UNARY_RELU, x, 0, 0, out);
}
PRN__DEF prn_status prn_sigmoid(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_sigmoid", PRN_UNARY_SIGMOID, x, 0, 0, out);
}
PRN__DEF prn_status prn_tanh(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_tanh", PRN_UNARY_TANH, x, 0, 0, out);
}
PRN__DEF prn_status prn_pow_scalar(prn_context *ctx, prn_tensor *x, double p, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_pow_scalar", PRN_UNARY_POWS, x, p, 0, out);
}
PRN__DEF prn_status prn_scale(prn_context *ctx, prn_tensor *x, double alpha, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_scale", PRN_UNARY_AFFINE, x, alpha, 0, out);
}
PRN__DEF prn_status prn_add_scalar(prn_context *ctx, prn_tensor *x, double c, prn_tensor **out) {
    return prn__unary_op(ctx, "prn_add_scalar", PRN_UNARY_AFFINE, x, 1.0, c, out);
}

/* --- copy, broadcast, reshape, transpose ------------------------------ */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_identity(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    /* copy: g; broadcast: g summed back; reshape: g viewed in x's shape */
    return prn__sum_to(ctx, g, op->inputs[0], &gin[0]);
}
PRN__FN prn_status prn__bw_reshape(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    return prn__view(ctx, "prn_backward", g, op->inputs[0]->ndim, op->inputs[0]->shape, &gin[0]);
}
#endif /* PARRNN_NO_TRAINING */

PRN__DEF prn_status prn_copy(prn_context *ctx, prn_tensor *x, prn_tensor **out) {
    static const char fn[] = "prn_copy";
    prn_tensor *y = NULL;
    prn_status st;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 0));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__tensor_like(ctx, fn, x, &y));
    st = prn__in_fn(ctx, fn, ctx->be->buf_copy(ctx, y->st->buf, 0, x->st->buf, 0, x->st->bytes < y->st->bytes ? x->st->bytes : y->st->bytes));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    if (x->dtype == PRN_I32) { *out = y; return PRN_OK; }
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_identity), NULL, 0, NULL, 0, out);
}

PRN__DEF prn_status prn_broadcast(prn_context *ctx, prn_tensor *x, int ndim, const size_t *shape, prn_tensor **out) {
    static const char fn[] = "prn_broadcast";
    size_t numel = 0, x4[4], o4[4];
    prn_tensor *y = NULL;
    int i;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__check_shape(ctx, fn, "shape", x->dtype, ndim, shape, &numel));
    if (ndim < x->ndim)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'ndim' (%d) is smaller than x's (%d)", fn, ndim, x->ndim);
    prn__pad4(x->ndim, x->shape, x4);
    prn__pad4(ndim, shape, o4);
    for (i = 0; i < 4; ++i)
        if (x4[i] != o4[i] && x4[i] != 1)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'shape': axis %d has size %lu where x has %lu (not 1)",
                            fn, i - (4 - ndim), (unsigned long)o4[i], (unsigned long)x4[i]);
    PRN__TRY(prn__expand_raw(ctx, fn, x, ndim, shape, &y));
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_identity), NULL, 0, NULL, 0, out);
}

PRN__DEF prn_status prn_reshape(prn_context *ctx, prn_tensor *x, int ndim, const size_t *shape, prn_tensor **out) {
    static const char fn[] = "prn_reshape";
    size_t numel = 0;
    prn_tensor *y = NULL;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 0));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__check_shape(ctx, fn, "shape", x->dtype, ndim, shape, &numel));
    if (numel != x->numel)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'shape' has %lu elements but x has %lu", fn,
                        (unsigned long)numel, (unsigned long)x->numel);
    PRN__TRY(prn__view(ctx, fn, x, ndim, shape, &y));
    if (x->dtype == PRN_I32) { *out = y; return PRN_OK; }
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_reshape), NULL, 0, NULL, 0, out);
}

PRN__FN prn_status prn__transpose_raw(prn_context *ctx, const char *fn, prn_tensor *x, int a0, int a1,
                                      prn_tensor **out) {
    size_t shape[4] = {0, 0, 0, 0}, x4[4], xs[4], o4[4], ys[4], tmp;
    prn_tensor *y = NULL;
    prn_status st;
    int off = 4 - x->ndim;
    PRN__NEED(ctx, strided_copy, fn);
    memcpy(shape, x->shape, sizeof shape);
    tmp = shape[a0]; shape[a0] = shape[a1]; shape[a1] = tmp;
    PRN__TRY(prn__tensor_new(ctx, fn, x->dtype, x->ndim, shape, &y));
    prn__pad4(x->ndim, x->shape, x4);
    prn__strides4(x4, xs);
    tmp = xs[a0 + off]; xs[a0 + off] = xs[a1 + off]; xs[a1 + off] = tmp;
    prn__pad4(x->ndim, shape, o4);
    prn__strides4(o4, ys);
    st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, o4, x->st->buf, 0, xs, y->st->buf, 0, ys));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_transpose(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    return prn__transpose_raw(ctx, "prn_backward", g, op->i[0], op->i[1], &gin[0]);
}
#endif /* PARRNN_NO_TRAINING */
PRN__DEF prn_status prn_transpose(prn_context *ctx, prn_tensor *x, int axis0, int axis1, prn_tensor **out) {
    static const char fn[] = "prn_transpose";
    prn_tensor *y = NULL;
    int iv[2];
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 0));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__norm_axis(ctx, fn, x, &axis0));
    PRN__TRY(prn__norm_axis(ctx, fn, x, &axis1));
    PRN__TRY(prn__transpose_raw(ctx, fn, x, axis0, axis1, &y));
    if (x->dtype == PRN_I32) { *out = y; return PRN_OK; }
    iv[0] = axis0;
    iv[1] = axis1;
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_transpose), NULL, 0, iv, 2, out);
}

/* Matrices in a batch: the product of the axes before the last two. */
PRN__FN size_t prn__batch_of(const prn_tensor *t) {
    size_t n = 1;
    int k;
    for (k = 0; k < t->ndim - 2; ++k) n *= t->shape[k];
    return n;
}

/* --- matmul ----------------------------------------------------------- */
/* op(a) @ op(b) over the last two axes. With reduce_batch the batch is
 * summed into one [M, N] result (gradients of broadcast operands). */
PRN__FN prn_status prn__matmul_raw(prn_context *ctx, const char *fn, prn_tensor *a, int ta, prn_tensor *b, int tb,
                                   int reduce_batch, prn_tensor **out) {
    size_t ar = a->shape[a->ndim - 2], ac = a->shape[a->ndim - 1];
    size_t br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
    size_t M = ta ? ac : ar, K = ta ? ar : ac, Kb = tb ? bc : br, N = tb ? br : bc;
    size_t batch_a = prn__batch_of(a), batch_b = prn__batch_of(b);
    size_t batch, shape[4] = {0, 0, 0, 0};
    int nd, k;
    prn_tensor *y = NULL;
    prn_status st = PRN_OK;
    PRN__NEED(ctx, gemm, fn);
    if (K != Kb) {
        char sa[64], sb[64];
        prn__shape_str(a, sa, sizeof sa);
        prn__shape_str(b, sb, sizeof sb);
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b' %s%s: inner sizes differ from 'a' %s%s (%lu vs %lu)", fn,
                        sb, tb ? "^T" : "", sa, ta ? "^T" : "", (unsigned long)K, (unsigned long)Kb);
    }
    /* One side a single matrix (batch 1): the other's batch, 0 included
     * (an empty batch times one matrix is an empty batch). */
    batch = batch_a == 1 ? batch_b : batch_a;
    if (reduce_batch) {
        nd = 2;
        shape[0] = M;
        shape[1] = N;
    } else {
        /* Batch axes: equal (aligned at the right), or one side a single matrix. */
        nd = a->ndim > b->ndim ? a->ndim : b->ndim;
        for (k = 0; k < nd - 2; ++k) {
            int ka = k - (nd - a->ndim), kb = k - (nd - b->ndim);
            size_t da = ka >= 0 ? a->shape[ka] : 1, db = kb >= 0 ? b->shape[kb] : 1;
            if (batch_a != 1 && batch_b != 1 && da != db) {
                char sa[64], sb[64];
                prn__shape_str(a, sa, sizeof sa);
                prn__shape_str(b, sb, sizeof sb);
                return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b': batch axes of %s and 'a' %s differ (batches "
                                "must be equal or one of them a single matrix)", fn, sb, sa);
            }
            shape[k] = batch_a == 1 ? db : da;
        }
        shape[nd - 2] = M;
        shape[nd - 1] = N;
    }
    if ((batch_a != batch && batch_a != 1) || (batch_b != batch && batch_b != 1))
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: batch sizes %lu and %lu do not broadcast", fn,
                        (unsigned long)batch_a, (unsigned long)batch_b);
    PRN__TRY(prn__tensor_new(ctx, fn, a->dtype, nd, shape, &y));
    if (y->numel == 0) {
        /* an empty result */
    } else if (K == 0 || batch == 0) { /* sums over nothing (a batch of 0 summed: reduce_batch) */
        st = prn__fill(y, 0.0, fn);
    } else if (!reduce_batch) {
        st = prn__in_fn(ctx, fn, ctx->be->gemm(ctx, a->dtype, ta, tb, M, N, K, 1.0, a->st->buf, ac, batch_a == 1 ? 0 : ar * ac,
                           b->st->buf, bc, batch_b == 1 ? 0 : br * bc, 0.0, y->st->buf, N, M * N, batch));
    } else {
        /* Batched products into a temporary, then summed over the batch:
         * buffers are opaque handles, so there is no per-matrix offset. */
        size_t tshape[3];
        prn_tensor *tmp;
        tshape[0] = batch; tshape[1] = M; tshape[2] = N;
        st = prn__tensor_new(ctx, fn, a->dtype, 3, tshape, &tmp);
        if (st == PRN_OK) {
            st = prn__in_fn(ctx, fn, ctx->be->gemm(ctx, a->dtype, ta, tb, M, N, K, 1.0, a->st->buf, ac, batch_a == 1 ? 0 : ar * ac,
                               b->st->buf, bc, batch_b == 1 ? 0 : br * bc, 0.0, tmp->st->buf, N, M * N, batch));
            if (st == PRN_OK) {
                if (ctx->be->reduce)
                    st = prn__in_fn(ctx, fn, ctx->be->reduce(ctx, PRN_REDUCE_SUM, a->dtype, 1, batch, M * N, tmp->st->buf, y->st->buf));
                else
                    st = PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "%s: backend '%s' does not implement primitive 'reduce'",
                                  fn, ctx->be->name);
            }
            prn_tensor_free(tmp);
        }
    }
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* Gradient for operand x (shape like) from a product computed with the
 * batch of g: summed over the batch when x was a single broadcast matrix. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__mm_grad(prn_context *ctx, prn_tensor *p, int tp, prn_tensor *q, int tq, const prn_tensor *like,
                                size_t gbatch, prn_tensor **out) {
    static const char fn[] = "prn_backward";
    prn_tensor *r;
    prn_status st;
    int reduce = prn__batch_of(like) == 1 && gbatch > 1;
    PRN__TRY(prn__matmul_raw(ctx, fn, p, tp, q, tq, reduce, &r));
    if (prn__same_shape(r, like)) { *out = r; return PRN_OK; }
    st = prn__view(ctx, fn, r, like->ndim, like->shape, out);
    prn_tensor_free(r);
    return st;
}
PRN__FN prn_status prn__bw_matmul(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    prn_tensor *a = op->inputs[0], *b = op->inputs[1];
    int ta = op->i[0], tb = op->i[1];
    size_t gb = prn__batch_of(g);
    if (op->needs_grad[0]) {
        if (!ta) PRN__TRY(prn__mm_grad(ctx, g, 0, b, !tb, a, gb, &gin[0]));  /* g op(B)^T   */
        else PRN__TRY(prn__mm_grad(ctx, b, tb, g, 1, a, gb, &gin[0]));       /* op(B) g^T   */
    }
    if (op->needs_grad[1]) {
        if (!tb) PRN__TRY(prn__mm_grad(ctx, a, !ta, g, 0, b, gb, &gin[1]));  /* op(A)^T g   */
        else PRN__TRY(prn__mm_grad(ctx, g, 1, a, ta, b, gb, &gin[1]));       /* g^T op(A)   */
    }
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */
PRN__DEF prn_status prn_matmul_ex(prn_context *ctx, prn_tensor *a, int trans_a, prn_tensor *b, int trans_b,
                                  prn_tensor **out) {
    static const char fn[] = "prn_matmul";
    prn_tensor *in[2], *y = NULL;
    int iv[2];
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "a", a, 1));
    PRN__TRY(prn__check_t(ctx, fn, "b", b, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__same_dtype(ctx, fn, a, b));
    if (a->ndim < 2) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'a' has %d axes; matmul needs at least 2", fn, a->ndim);
    if (b->ndim < 2) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b' has %d axes; matmul needs at least 2", fn, b->ndim);
    iv[0] = trans_a != 0;
    iv[1] = trans_b != 0;
    PRN__TRY(prn__matmul_raw(ctx, fn, a, iv[0], b, iv[1], 0, &y));
    in[0] = a;
    in[1] = b;
    return prn__finish(ctx, fn, y, in, 2, PRN__IF_TRAINING(prn__bw_matmul), NULL, 0, iv, 2, out);
}
PRN__DEF prn_status prn_matmul(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor **out) {
    return prn_matmul_ex(ctx, a, 0, b, 0, out);
}

/* y = x W^T + b for x [N, I], W [P, I], b [P] or NULL, as one recorded op
 * (the layers' input projections): b is copied into y's rows and the
 * product added onto it by one gemm with beta = 1, instead of a product
 * into zeros and a pass that adds the bias. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_linear(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    if (op->needs_grad[0]) PRN__TRY(prn__matmul_raw(ctx, fn, g, 0, op->inputs[1], 0, 0, &gin[0])); /* g W   */
    if (op->needs_grad[1]) PRN__TRY(prn__matmul_raw(ctx, fn, g, 1, op->inputs[0], 0, 0, &gin[1])); /* g^T x */
    if (op->num_inputs > 2 && op->needs_grad[2]) PRN__TRY(prn__sum_to(ctx, g, op->inputs[2], &gin[2]));
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */
PRN__FN prn_status prn__linear(prn_context *ctx, const char *fn, prn_tensor *x, prn_tensor *W, prn_tensor *b,
                               prn_tensor **out) {
    size_t N = x->shape[0], In = x->shape[1], P = W->shape[0], shape[2];
    prn_tensor *in[3], *y = NULL;
    prn_status st = PRN_OK;
    PRN__NEED(ctx, gemm, fn);
    PRN__NEED(ctx, strided_copy, fn);
    shape[0] = N; shape[1] = P;
    PRN__TRY(prn__tensor_new(ctx, fn, x->dtype, 2, shape, &y));
    if (N && P) {
        if (b) {
            const size_t sh4[4] = {1, 1, N, P}, bs[4] = {0, 0, 0, 1}, ys[4] = {0, 0, P, 1};
            st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, sh4, b->st->buf, 0, bs, y->st->buf, 0, ys));
        }
        if (st == PRN_OK && In)
            st = prn__in_fn(ctx, fn, ctx->be->gemm(ctx, x->dtype, 0, 1, N, P, In, 1.0, x->st->buf, In, 0, W->st->buf, In, 0,
                                                  b ? 1.0 : 0.0, y->st->buf, P, N * P, 1));
        else if (st == PRN_OK && !b) st = prn__fill(y, 0.0, fn);
    }
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    in[0] = x; in[1] = W; in[2] = b;
    return prn__finish(ctx, fn, y, in, b ? 3 : 2, PRN__IF_TRAINING(prn__bw_linear), NULL, 0, NULL, 0, out);
}

/* --- reductions ------------------------------------------------------- */
#ifndef PARRNN_NO_TRAINING
PRN__FN void prn__keep_shape(const prn_tensor *x, int axis, size_t shape[4]) {
    int i;
    for (i = 0; i < x->ndim; ++i) shape[i] = (axis == PRN_ALL_AXES || axis == i) ? 1 : x->shape[i];
}
#endif /* PARRNN_NO_TRAINING */
/* op->i = {axis, kind}: kind 0 sum, 1 mean, 2 max. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_reduce(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn_tensor *x = op->inputs[0], *gk = NULL, *yk = NULL, *mask = NULL, *cnt = NULL, *w = NULL;
    int axis = op->i[0], kind = op->i[1];
    size_t ks[4];
    prn_status st;
    prn__keep_shape(x, axis, ks);
    PRN__TRY(prn__view(ctx, fn, g, x->ndim, ks, &gk));
    if (kind != 2) {
        st = prn__expand_raw(ctx, fn, gk, x->ndim, x->shape, &gin[0]);
        if (st == PRN_OK && kind == 1) {
            size_t outer, n, inner;
            prn__split3(x, axis, &outer, &n, &inner);
            st = prn__in_fn(ctx, fn, ctx->be->unary(ctx, PRN_UNARY_AFFINE, x->dtype, x->numel, gin[0]->st->buf, gin[0]->st->buf,
                                1.0 / (double)n, 0.0));
        }
    } else {
        /* max: gradient to the elements equal to the maximum, split between ties */
        st = prn__view(ctx, fn, op->output, x->ndim, ks, &yk);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_EQ, x, yk, &mask);
        if (st == PRN_OK) st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, mask, axis, 1, &cnt);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_DIV, gk, cnt, &w);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, mask, w, &gin[0]);
    }
    prn_tensor_free(gk); prn_tensor_free(yk); prn_tensor_free(mask); prn_tensor_free(cnt); prn_tensor_free(w);
    return st;
}
#endif /* PARRNN_NO_TRAINING */
PRN__FN prn_status prn__reduce_op(prn_context *ctx, const char *fn, int kind, prn_tensor *x, int axis, int keepdim,
                                  prn_tensor **out) {
    prn_tensor *y = NULL;
    int iv[2];
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    if (axis != PRN_ALL_AXES) PRN__TRY(prn__norm_axis(ctx, fn, x, &axis));
    /* a max or mean of nothing has no value (the mean would be 0 / 0) */
    if (kind != 0 && (axis == PRN_ALL_AXES ? x->numel : x->shape[axis]) == 0)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x': %s over an empty axis", fn, kind == 2 ? "max" : "mean");
    PRN__TRY(prn__reduce_raw(ctx, fn, kind == 2 ? PRN_REDUCE_MAX : PRN_REDUCE_SUM, x, axis, keepdim, &y));
    if (kind == 1) {
        size_t outer, n, inner;
        prn_status st;
        prn__split3(x, axis, &outer, &n, &inner);
        st = ctx->be->unary ? prn__in_fn(ctx, fn, ctx->be->unary(ctx, PRN_UNARY_AFFINE, x->dtype, y->numel, y->st->buf, y->st->buf,
                                             n ? 1.0 / (double)n : NAN, 0.0))
                            : PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "%s: backend '%s' does not implement primitive 'unary'",
                                       fn, ctx->be->name);
        if (st != PRN_OK) { prn_tensor_free(y); return st; }
    }
    iv[0] = axis;
    iv[1] = kind;
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_reduce), NULL, 0, iv, 2, out);
}
PRN__DEF prn_status prn_sum(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out) {
    return prn__reduce_op(ctx, "prn_sum", 0, x, axis, keepdim, out);
}
PRN__DEF prn_status prn_mean(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out) {
    return prn__reduce_op(ctx, "prn_mean", 1, x, axis, keepdim, out);
}
PRN__DEF prn_status prn_max(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out) {
    return prn__reduce_op(ctx, "prn_max", 2, x, axis, keepdim, out);
}
PRN__DEF prn_status prn_argmax(prn_context *ctx, prn_tensor *x, int axis, int keepdim, prn_tensor **out) {
    static const char fn[] = "prn_argmax";
    size_t shape[4] = {0, 0, 0, 0}, outer, n, inner;
    int nd;
    prn_tensor *y = NULL;
    prn_status st;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    if (axis != PRN_ALL_AXES) PRN__TRY(prn__norm_axis(ctx, fn, x, &axis));
    prn__split3(x, axis, &outer, &n, &inner);
    if (n == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x': argmax over an empty axis", fn);
    if (n > 2147483647u) return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: argument 'axis': more than 2^31-1 elements", fn);
    PRN__NEED(ctx, argmax, fn);
    prn__reduced_shape(x, axis, keepdim, &nd, shape);
    PRN__TRY(prn__tensor_new(ctx, fn, PRN_I32, nd, shape, &y));
    st = prn__in_fn(ctx, fn, ctx->be->argmax(ctx, x->dtype, outer, n, inner, x->st->buf, y->st->buf));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

/* --- softmax ---------------------------------------------------------- */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_softmax(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn_tensor *y = op->output, *t = NULL, *s = NULL, *u = NULL;
    int axis = op->i[0];
    prn_status st;
    if (!op->i[1]) { /* softmax: y * (g - sum(g*y)) */
        st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, g, y, &t);
        if (st == PRN_OK) st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, t, axis, 1, &s);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_SUB, g, s, &u);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, y, u, &gin[0]);
    } else {         /* log-softmax: g - e^y * sum(g) */
        st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, g, axis, 1, &s);
        if (st == PRN_OK) st = prn__unary_raw(ctx, fn, PRN_UNARY_EXP, y, 0, 0, &t);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, t, s, &u);
        if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_SUB, g, u, &gin[0]);
    }
    prn_tensor_free(t); prn_tensor_free(s); prn_tensor_free(u);
    return st;
}
#endif /* PARRNN_NO_TRAINING */
PRN__FN prn_status prn__softmax_op(prn_context *ctx, const char *fn, int log, prn_tensor *x, int axis, prn_tensor **out) {
    size_t outer, n, inner;
    prn_tensor *y = NULL;
    prn_status st;
    int iv[2];
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__norm_axis(ctx, fn, x, &axis));
    PRN__NEED(ctx, softmax, fn);
    prn__split3(x, axis, &outer, &n, &inner);
    PRN__TRY(prn__tensor_like(ctx, fn, x, &y));
    st = x->numel ? prn__in_fn(ctx, fn, ctx->be->softmax(ctx, x->dtype, log, outer, n, inner, x->st->buf, y->st->buf)) : PRN_OK;
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    iv[0] = axis;
    iv[1] = log;
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_softmax), NULL, 0, iv, 2, out);
}
PRN__DEF prn_status prn_softmax(prn_context *ctx, prn_tensor *x, int axis, prn_tensor **out) {
    return prn__softmax_op(ctx, "prn_softmax", 0, x, axis, out);
}
PRN__DEF prn_status prn_log_softmax(prn_context *ctx, prn_tensor *x, int axis, prn_tensor **out) {
    return prn__softmax_op(ctx, "prn_log_softmax", 1, x, axis, out);
}

/* --- losses: compositions of recorded ops, so their gradients follow -- */
PRN__DEF prn_status prn_cross_entropy(prn_context *ctx, prn_tensor *logits, prn_tensor *target, prn_tensor **out) {
    static const char fn[] = "prn_cross_entropy";
    prn_tensor *ls = NULL, *p = NULL, *s = NULL;
    prn_status st;
    size_t rows;
    size_t mark;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "logits", logits, 1));
    PRN__TRY(prn__check_t(ctx, fn, "target", target, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    if (logits->dtype != target->dtype)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'target' is %s but 'logits' is %s", fn,
                        prn_dtype_name(target->dtype), prn_dtype_name(logits->dtype));
    if (logits->ndim < 1 || !prn__same_shape(logits, target)) {
        char sl[64], stt[64];
        prn__shape_str(logits, sl, sizeof sl);
        prn__shape_str(target, stt, sizeof stt);
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'target' has shape %s; it must equal logits' %s (at least 1-D)",
                        fn, stt, sl);
    }
    if (logits->numel == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'logits' is empty", fn);
    rows = logits->numel / logits->shape[logits->ndim - 1];
    mark = ctx->tape_n;
    st = prn_log_softmax(ctx, logits, -1, &ls);
    if (st == PRN_OK) st = prn_mul(ctx, target, ls, &p);
    if (st == PRN_OK) st = prn_sum(ctx, p, PRN_ALL_AXES, 0, &s);
    if (st == PRN_OK) st = prn_scale(ctx, s, -1.0 / (double)rows, out);
    prn_tensor_free(ls); prn_tensor_free(p); prn_tensor_free(s);
    if (st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, st);
}

PRN__DEF prn_status prn_mse(prn_context *ctx, prn_tensor *pred, prn_tensor *target, prn_tensor **out) {
    static const char fn[] = "prn_mse";
    prn_tensor *d = NULL, *sq = NULL;
    prn_status st;
    int nd;
    size_t shape[4] = {0, 0, 0, 0};
    size_t mark;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "pred", pred, 1));
    PRN__TRY(prn__check_t(ctx, fn, "target", target, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    if (pred->dtype != target->dtype)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'target' is %s but 'pred' is %s", fn,
                        prn_dtype_name(target->dtype), prn_dtype_name(pred->dtype));
    PRN__TRY(prn__bcast_shape(ctx, fn, pred, "pred", target, "target", &nd, shape));
    {
        size_t n = 1;
        int i;
        for (i = 0; i < nd; ++i) n *= shape[i];
        if (n == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: arguments 'pred' and 'target' are empty: no mean", fn);
    }
    mark = ctx->tape_n;
    st = prn_sub(ctx, pred, target, &d);
    if (st == PRN_OK) st = prn_pow_scalar(ctx, d, 2.0, &sq);
    if (st == PRN_OK) st = prn_mean(ctx, sq, PRN_ALL_AXES, 0, out);
    prn_tensor_free(d); prn_tensor_free(sq);
    if (st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, st);
}

/* --- slices ----------------------------------------------------------- */
/* x viewed as [outer, n, inner]; y = x[:, start:start+len, :] */
PRN__FN prn_status prn__slice_raw(prn_context *ctx, const char *fn, prn_tensor *x, int axis, size_t start, size_t len,
                                  prn_tensor **out) {
    size_t outer, n, inner, shape[4] = {0, 0, 0, 0}, sh4[4], xs[4], ys[4];
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, strided_copy, fn);
    prn__split3(x, axis, &outer, &n, &inner);
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = len;
    PRN__TRY(prn__tensor_new(ctx, fn, x->dtype, x->ndim, shape, &y));
    sh4[0] = 1; sh4[1] = outer; sh4[2] = len; sh4[3] = inner;
    xs[0] = 0; xs[1] = n * inner; xs[2] = inner; xs[3] = 1;
    ys[0] = 0; ys[1] = len * inner; ys[2] = inner; ys[3] = 1;
    st = y->numel ? prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, sh4, x->st->buf, start * inner, xs, y->st->buf, 0, ys)) : PRN_OK;
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}
/* g placed at [:, start:start+len, :] of zeros shaped like x */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__unslice_raw(prn_context *ctx, const char *fn, prn_tensor *g, const prn_tensor *like, int axis,
                                    size_t start, prn_tensor **out) {
    size_t outer, n, inner, len = g->shape[axis], sh4[4], gs[4], ys[4];
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, strided_copy, fn);
    prn__split3(like, axis, &outer, &n, &inner);
    PRN__TRY(prn__tensor_new(ctx, fn, like->dtype, like->ndim, like->shape, &y));
    sh4[0] = 1; sh4[1] = outer; sh4[2] = len; sh4[3] = inner;
    gs[0] = 0; gs[1] = len * inner; gs[2] = inner; gs[3] = 1;
    ys[0] = 0; ys[1] = n * inner; ys[2] = inner; ys[3] = 1;
    st = prn__fill(y, 0.0, fn);
    if (st == PRN_OK && g->numel)
        st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, g->dtype, sh4, g->st->buf, 0, gs, y->st->buf,
                                                       start * inner, ys));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}
PRN__FN prn_status prn__bw_slice(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    return prn__unslice_raw(ctx, "prn_backward", g, op->inputs[0], op->i[0], (size_t)op->f[0], &gin[0]);
}
#endif /* PARRNN_NO_TRAINING */
PRN__DEF prn_status prn_slice(prn_context *ctx, prn_tensor *x, int axis, size_t start, size_t len, prn_tensor **out) {
    static const char fn[] = "prn_slice";
    prn_tensor *y = NULL;
    double f;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 0));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__norm_axis(ctx, fn, x, &axis));
    if (start > x->shape[axis] || len > x->shape[axis] - start)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: arguments 'start' %lu and 'len' %lu exceed axis %d of size %lu",
                        fn, (unsigned long)start, (unsigned long)len, axis, (unsigned long)x->shape[axis]);
    PRN__TRY(prn__slice_raw(ctx, fn, x, axis, start, len, &y));
    if (x->dtype == PRN_I32) { *out = y; return PRN_OK; }
    f = (double)start; /* exact below 2^53 */
    return prn__finish(ctx, fn, y, &x, 1, PRN__IF_TRAINING(prn__bw_slice), &f, 1, &axis, 1, out);
}

/* --- concatenation ---------------------------------------------------- */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_concat(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    int axis = op->i[0];
    size_t na = op->inputs[0]->shape[axis];
    if (op->needs_grad[0]) PRN__TRY(prn__slice_raw(ctx, "prn_backward", g, axis, 0, na, &gin[0]));
    if (op->needs_grad[1])
        PRN__TRY(prn__slice_raw(ctx, "prn_backward", g, axis, na, op->inputs[1]->shape[axis], &gin[1]));
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */
PRN__DEF prn_status prn_concat(prn_context *ctx, prn_tensor *a, prn_tensor *b, int axis, prn_tensor **out) {
    static const char fn[] = "prn_concat";
    size_t outer, na, nb, inner, shape[4] = {0, 0, 0, 0}, sh4[4], xs[4], ys[4];
    prn_tensor *in[2], *y = NULL;
    prn_status st = PRN_OK;
    int i;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "a", a, 0));
    PRN__TRY(prn__check_t(ctx, fn, "b", b, 0));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__same_dtype(ctx, fn, a, b));
    PRN__TRY(prn__norm_axis(ctx, fn, a, &axis));
    for (i = 0; i < a->ndim; ++i)
        if (a->ndim != b->ndim || (i != axis && a->shape[i] != b->shape[i])) {
            char sa[64], sb[64];
            prn__shape_str(a, sa, sizeof sa);
            prn__shape_str(b, sb, sizeof sb);
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b' has shape %s, which does not fit 'a' %s outside axis %d",
                            fn, sb, sa, axis);
        }
    if (a->shape[axis] + b->shape[axis] < a->shape[axis])
        return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: the joined axis overflows size_t", fn);
    PRN__NEED(ctx, strided_copy, fn);
    prn__split3(a, axis, &outer, &na, &inner);
    nb = b->shape[axis];
    memcpy(shape, a->shape, sizeof shape);
    shape[axis] = na + nb;
    PRN__TRY(prn__tensor_new(ctx, fn, a->dtype, a->ndim, shape, &y));
    /* x viewed as [outer, n, inner] written at offset 0 (a) or na * inner (b) */
    sh4[0] = 1; sh4[1] = outer; sh4[3] = inner;
    ys[0] = 0; ys[1] = (na + nb) * inner; ys[2] = inner; ys[3] = 1;
    xs[0] = 0; xs[2] = inner; xs[3] = 1;
    sh4[2] = na; xs[1] = na * inner;
    if (a->numel) st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, a->dtype, sh4, a->st->buf, 0, xs, y->st->buf, 0, ys));
    sh4[2] = nb; xs[1] = nb * inner;
    if (st == PRN_OK && b->numel)
        st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, b->dtype, sh4, b->st->buf, 0, xs, y->st->buf, na * inner, ys));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    if (a->dtype == PRN_I32) { *out = y; return PRN_OK; }
    in[0] = a;
    in[1] = b;
    return prn__finish(ctx, fn, y, in, 2, PRN__IF_TRAINING(prn__bw_concat), NULL, 0, &axis, 1, out);
}

/* --- scans ------------------------------------------------------------ */
/* x [B, T, F] shifted one step along time: towards later steps (dir > 0:
 * y[t] = x[t-1]) or earlier ones (y[t] = x[t+1]); the freed end is edge
 * ([B, F]) or zero. */
#if !defined(PARRNN_NO_TRAINING) || !defined(PARRNN_NO_DEER) /* gradients of scans and DEER */
PRN__FN prn_status prn__shift_time(prn_context *ctx, const char *fn, prn_tensor *x, size_t B, size_t T, size_t F,
                                   int dir, prn_tensor *edge, prn_tensor **out) {
    size_t sh[4], xs[4], ys[4];
    prn_tensor *y = NULL;
    prn_status st;
    PRN__NEED(ctx, strided_copy, fn);
    PRN__TRY(prn__tensor_like(ctx, fn, x, &y));
    st = prn__fill(y, 0.0, fn);
    sh[0] = 1; sh[1] = B; sh[2] = T - 1; sh[3] = F;
    xs[0] = 0; xs[1] = T * F; xs[2] = F; xs[3] = 1;
    if (st == PRN_OK && T > 1)
        st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, sh, x->st->buf, dir > 0 ? 0 : F, xs, y->st->buf, dir > 0 ? F : 0, xs));
    if (st == PRN_OK && edge) {
        sh[2] = 1;
        ys[0] = 0; ys[1] = F; ys[2] = F; ys[3] = 1;
        st = prn__in_fn(ctx, fn, ctx->be->strided_copy(ctx, x->dtype, sh, edge->st->buf, 0, ys, y->st->buf, dir > 0 ? 0 : (T - 1) * F, xs));
    }
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}
#endif

/* The adjoint of a forward (rev: reverse) scan with a [B, T, C] (block:
 * [B, T, C, k]) for the gradient g of its output: lam[t] = g[t] +
 * A[t+1]^T lam[t+1], run the other way in time. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__scan_adjoint(prn_context *ctx, const char *fn, prn_tensor *a, int block, int rev, prn_scan_algo algo,
                                     size_t B, size_t T, size_t C, size_t k, prn_tensor *g, prn_tensor **lam) {
    prn_tensor *ash = NULL, *l = NULL;
    prn_status st = prn__shift_time(ctx, fn, a, B, T, block ? C * k : C, rev ? 1 : -1, NULL, &ash);
    if (st == PRN_OK) st = prn__tensor_like(ctx, fn, g, &l);
    if (st == PRN_OK)
        st = block ? prn__in_fn(ctx, fn, ctx->be->scan_block(ctx, g->dtype, !rev, 1, algo, B, T, C, k, ash->st->buf, g->st->buf, NULL,
                                         l->st->buf))
                   : prn__in_fn(ctx, fn, ctx->be->scan_diag(ctx, g->dtype, !rev, algo, B, T, C, ash->st->buf, g->st->buf, NULL, l->st->buf));
    prn_tensor_free(ash);
    if (st != PRN_OK) { prn_tensor_free(l); return st; }
    *lam = l;
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

/* op->i = {reverse, block (0: diagonal), B, T, C, k, algo}: the adjoint runs with the forward's algorithm */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_scan(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn_tensor *a = op->inputs[0], *h = op->output, *h0 = op->num_inputs > 2 ? op->inputs[2] : NULL;
    int rev = op->i[0], block = op->i[1];
    prn_scan_algo algo = (prn_scan_algo)op->i[6];
    size_t B = (size_t)op->i[2], T = (size_t)op->i[3], C = (size_t)op->i[4], k = (size_t)op->i[5];
    size_t first = rev ? T - 1 : 0;
    prn_tensor *lam = NULL, *hsh = NULL, *af = NULL, *lf = NULL, *p = NULL, *s = NULL;
    prn_status st = prn__scan_adjoint(ctx, fn, a, block, rev, algo, B, T, C, k, g, &lam);
    if (st != PRN_OK) return st;
    if (op->needs_grad[0]) { /* dA[t] = lam[t] (outer) h[t-1] */
        st = prn__shift_time(ctx, fn, h, B, T, C, rev ? -1 : 1, h0, &hsh);
        if (st == PRN_OK && !block) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, lam, hsh, &gin[0]);
        if (st == PRN_OK && block) {
            prn_tensor *lv = NULL, *hv = NULL;
            size_t sl[4], shv[4];
            sl[0] = B * T; sl[1] = C / k; sl[2] = k; sl[3] = 1;
            shv[0] = B * T; shv[1] = C / k; shv[2] = 1; shv[3] = k;
            st = prn__view(ctx, fn, lam, 4, sl, &lv);
            if (st == PRN_OK) st = prn__view(ctx, fn, hsh, 4, shv, &hv);
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, lv, hv, &p);
            if (st == PRN_OK) st = prn__view(ctx, fn, p, a->ndim, a->shape, &gin[0]);
            prn_tensor_free(lv); prn_tensor_free(hv); prn_tensor_free(p); p = NULL;
        }
        prn_tensor_free(hsh);
    }
    if (st == PRN_OK && h0 && op->needs_grad[2]) { /* dh0 = A[first]^T lam[first] */
        size_t sa[4], sv[4];
        prn_tensor *av = NULL, *lv = NULL;
        int ta = h0->ndim - 1; /* the time axis: 1 of [B, T, ...], 0 of [T, ...] */
        st = prn__slice_raw(ctx, fn, a, ta, first, 1, &af);
        if (st == PRN_OK) st = prn__slice_raw(ctx, fn, lam, ta, first, 1, &lf);
        if (st == PRN_OK && !block) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, af, lf, &p);
        if (st == PRN_OK && block) {
            sa[0] = B; sa[1] = C / k; sa[2] = k; sa[3] = k;
            sv[0] = B; sv[1] = C / k; sv[2] = k; sv[3] = 1;
            st = prn__view(ctx, fn, af, 4, sa, &av);
            if (st == PRN_OK) st = prn__view(ctx, fn, lf, 4, sv, &lv);
            if (st == PRN_OK) st = prn__binary_raw(ctx, fn, PRN_BINARY_MUL, av, lv, &s);
            if (st == PRN_OK) st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, s, 2, 1, &p);
            prn_tensor_free(av); prn_tensor_free(lv);
        }
        if (st == PRN_OK) st = prn__view(ctx, fn, p, h0->ndim, h0->shape, &gin[2]);
    }
    prn_tensor_free(af); prn_tensor_free(lf); prn_tensor_free(p); prn_tensor_free(s);
    if (st == PRN_OK && op->needs_grad[1]) gin[1] = lam; /* db = lam */
    else prn_tensor_free(lam);
    return st;
}
#endif /* PARRNN_NO_TRAINING */

PRN__FN prn_status prn__scan_op(prn_context *ctx, const char *fn, int block, prn_tensor *a, prn_tensor *b, prn_tensor *h0,
                                int reverse, prn_scan_algo algo, prn_tensor **out) {
    prn_tensor *in[3], *y = NULL;
    size_t B, T, C, k = 1;
    int iv[7], i;
    prn_status st;
    PRN__CTX(ctx, fn);
    PRN__TRY(prn__check_t(ctx, fn, "a", a, 1));
    PRN__TRY(prn__check_t(ctx, fn, "b", b, 1));
    if (h0) PRN__TRY(prn__check_t(ctx, fn, "h0", h0, 1));
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__same_dtype(ctx, fn, a, b));
    if (h0 && h0->dtype != b->dtype)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'h0' is %s but 'b' is %s", fn, prn_dtype_name(h0->dtype),
                        prn_dtype_name(b->dtype));
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'algo' is %d", fn, (int)algo);
    if (b->ndim != 2 && b->ndim != 3)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b' has %d axes; want [batch, T, C] or [T, C]", fn, b->ndim);
    B = b->ndim == 3 ? b->shape[0] : 1;
    T = b->shape[b->ndim - 2];
    C = b->shape[b->ndim - 1];
    if (a->ndim != b->ndim + block)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'a' has %d axes; want %d", fn, a->ndim, b->ndim + block);
    for (i = 0; i < b->ndim; ++i)
        if (a->shape[i] != b->shape[i]) {
            char sa[64], sb[64];
            prn__shape_str(a, sa, sizeof sa);
            prn__shape_str(b, sb, sizeof sb);
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'a' has shape %s, which does not fit 'b' %s", fn, sa, sb);
        }
    if (block) {
        k = a->shape[a->ndim - 1];
        if (k < 1 || k > 64 || C % k != 0)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'a': block size %lu must be 1..64 and divide C = %lu", fn,
                            (unsigned long)k, (unsigned long)C);
    }
    if (T == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'b' has T = 0 steps", fn);
    if (h0 && (h0->ndim != b->ndim - 1 || h0->numel != B * C || h0->shape[h0->ndim - 1] != C))
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'h0' must be [batch, C] ([C] for one sequence)", fn);
    if (B > 2147483647u || T > 2147483647u || C > 2147483647u)
        return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: batch, T and C must each be below 2^31", fn);
    if (block) PRN__NEED(ctx, scan_block, fn);
    else PRN__NEED(ctx, scan_diag, fn);
    PRN__NEED(ctx, strided_copy, fn); /* backward */
    PRN__TRY(prn__tensor_like(ctx, fn, b, &y));
    st = B * C == 0 ? PRN_OK
         : block ? prn__in_fn(ctx, fn, ctx->be->scan_block(ctx, b->dtype, reverse != 0, 0, algo, B, T, C, k, a->st->buf, b->st->buf,
                                       h0 ? h0->st->buf : NULL, y->st->buf))
                 : prn__in_fn(ctx, fn, ctx->be->scan_diag(ctx, b->dtype, reverse != 0, algo, B, T, C, a->st->buf, b->st->buf,
                                      h0 ? h0->st->buf : NULL, y->st->buf));
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    in[0] = a; in[1] = b; in[2] = h0;
    iv[0] = reverse != 0; iv[1] = block; iv[2] = (int)B; iv[3] = (int)T; iv[4] = (int)C; iv[5] = (int)k; iv[6] = (int)algo;
    return prn__finish(ctx, fn, y, in, h0 ? 3 : 2, PRN__IF_TRAINING(prn__bw_scan), NULL, 0, iv, 7, out);
}
PRN__DEF prn_status prn_scan_diag(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor *h0, int reverse,
                                  prn_scan_algo algo, prn_tensor **out) {
    return prn__scan_op(ctx, "prn_scan_diag", 0, a, b, h0, reverse, algo, out);
}
PRN__DEF prn_status prn_scan_block(prn_context *ctx, prn_tensor *a, prn_tensor *b, prn_tensor *h0, int reverse,
                                   prn_scan_algo algo, prn_tensor **out) {
    return prn__scan_op(ctx, "prn_scan_block", 1, a, b, h0, reverse, algo, out);
}

/* ------------------------------------------------------------------------
 * Linear-recurrence RNN cells: compositions of recorded ops (API section)
 * ---------------------------------------------------------------------- */
typedef enum prn__cell_kind { PRN__MINGRU, PRN__MINLSTM, PRN__QRNN, PRN__SRU, PRN__GILR } prn__cell_kind;

struct prn_cell {
    prn_context *ctx;
    prn__cell_kind kind;
    prn_dtype dtype;
    size_t in, hid, gates;  /* gates: column blocks of W                 */
    int width;              /* rows of W = width * in (QRNN; else 1)     */
    prn_scan_algo algo;
    prn_tensor *W, *U, *b;  /* U: GILR-LSTM only                         */
};

/* The temporaries of one cell evaluation. Each helper below runs one op
 * unless an earlier one failed (then it does nothing and returns NULL; the
 * first failure stays in st) and keeps the result here until released. */
typedef struct prn__cw {
    prn_context *ctx;
    prn_status st;
    size_t n, cap;
    prn_tensor **t;
} prn__cw;

PRN__FN prn_tensor *prn__cw_keep(prn__cw *w, prn_status st, prn_tensor *y) {
    if (st != PRN_OK) { w->st = st; return NULL; }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 32;
        prn_tensor **nt = (prn_tensor **)prn_alloc(w->ctx, cap * sizeof *nt);
        if (!nt) {
            prn_tensor_free(y);
            w->st = PRN__ERR(w->ctx, PRN_ERR_OUT_OF_MEMORY, "out of memory for the cell's intermediate tensors");
            return NULL;
        }
        if (w->n) memcpy(nt, w->t, w->n * sizeof *nt);
        prn_free(w->ctx, w->t);
        w->t = nt;
        w->cap = cap;
    }
    w->t[w->n++] = y;
    return y;
}
PRN__FN void prn__cw_release(prn__cw *w, size_t mark) {
    while (w->n > mark) prn_tensor_free(w->t[--w->n]);
}
typedef prn_status (*prn__cw_op1)(prn_context *, prn_tensor *, prn_tensor **);
typedef prn_status (*prn__cw_op2)(prn_context *, prn_tensor *, prn_tensor *, prn_tensor **);
PRN__FN prn_tensor *prn__cw1(prn__cw *w, prn__cw_op1 f, prn_tensor *x) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = f(w->ctx, x, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw2(prn__cw *w, prn__cw_op2 f, prn_tensor *a, prn_tensor *b) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = f(w->ctx, a, b, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw_slice(prn__cw *w, prn_tensor *x, int axis, size_t start, size_t len) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_slice(w->ctx, x, axis, start, len, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw_cat(prn__cw *w, prn_tensor *a, prn_tensor *b, int axis) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_concat(w->ctx, a, b, axis, &y);
    return prn__cw_keep(w, st, y);
}
/* x reshaped to [d0, d1] (nd 2) or [d0, d1, d2] (nd 3); zeros (x NULL) of dtype dt */
PRN__FN prn_tensor *prn__cw_shape(prn__cw *w, prn_tensor *x, prn_dtype dt, int nd, size_t d0, size_t d1, size_t d2) {
    size_t s[3];
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    s[0] = d0; s[1] = d1; s[2] = d2;
    st = x ? prn_reshape(w->ctx, x, nd, s, &y) : prn_tensor_create(w->ctx, dt, nd, s, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw_scan(prn__cw *w, prn_tensor *a, prn_tensor *b, prn_tensor *h0, prn_scan_algo algo) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_scan_diag(w->ctx, a, b, h0, 0, algo, &y);
    return prn__cw_keep(w, st, y);
}
/* 1 - s(p), as s(-p) */
PRN__FN prn_tensor *prn__cw_sigc(prn__cw *w, prn_tensor *p) {
    return prn__cw1(w, prn_sigmoid, prn__cw1(w, prn_neg, p));
}
/* X [B, T, F] delayed one step: row 0 is first ([B, F]; NULL: zeros). */
PRN__FN prn_tensor *prn__cw_delay(prn__cw *w, prn_tensor *X, prn_dtype dt, size_t B, size_t T, size_t F,
                                  prn_tensor *first) {
    prn_tensor *f3 = prn__cw_shape(w, first, dt, 3, B, 1, F);
    return T == 1 ? f3 : prn__cw_cat(w, f3, prn__cw_slice(w, X, 1, 0, T - 1), 1);
}
/* The last step of X [B, T, F], as [B, F]. */
PRN__FN prn_tensor *prn__cw_last(prn__cw *w, prn_tensor *X, size_t B, size_t T, size_t F) {
    return prn__cw_shape(w, prn__cw_slice(w, X, 1, T - 1, 1), PRN_F32, 2, B, F, 0);
}

/* Pre-activations x W + b of rows X [rows, width * I] (SRU: x W; its bias
 * covers f and r only and is added in prn__cell_coef). */
PRN__FN prn_tensor *prn__cell_gates(prn__cw *w, const prn_cell *c, prn_tensor *X) {
    prn_tensor *g = prn__cw2(w, prn_matmul, X, c->W);
    return c->kind == PRN__SRU ? g : prn__cw2(w, prn_add, g, c->b);
}
/* Coefficients of c_t = a_t c_{t-1} + b_t and the output gate *o (cells
 * that have one) from pre-activations P with the gate blocks along the last
 * axis: [B, T, n H] for every step at once, [B, n H] for one step. gilr1:
 * the h~ recurrence of the GILR-LSTM (P = its g | j blocks); for the
 * GILR-LSTM's c recurrence P is f | i | o | z with the U term added. */
PRN__FN void prn__cell_coef(prn__cw *w, const prn_cell *c, int gilr1, prn_tensor *P, prn_tensor **a, prn_tensor **b,
                            prn_tensor **o) {
    size_t H = c->hid;
    prn_tensor *p0 = prn__cw_slice(w, P, -1, 0, H), *p1, *f, *i, *s;
    *o = NULL;
    if (gilr1) { /* g | j */
        p1 = prn__cw_slice(w, P, -1, H, H);
        *a = prn__cw1(w, prn_sigmoid, p0);
        *b = prn__cw2(w, prn_mul, prn__cw_sigc(w, p0), prn__cw1(w, prn_tanh, p1));
        return;
    }
    switch (c->kind) {
    case PRN__MINGRU: /* z | h~ */
        p1 = prn__cw_slice(w, P, -1, H, H);
        *a = prn__cw_sigc(w, p0);
        *b = prn__cw2(w, prn_mul, prn__cw1(w, prn_sigmoid, p0), p1);
        break;
    case PRN__MINLSTM: /* f | i | h~ */
        f = prn__cw1(w, prn_sigmoid, p0);
        i = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, P, -1, H, H));
        s = prn__cw2(w, prn_add, f, i);
        *a = prn__cw2(w, prn_div, f, s);
        *b = prn__cw2(w, prn_mul, prn__cw2(w, prn_div, i, s), prn__cw_slice(w, P, -1, 2 * H, H));
        break;
    case PRN__QRNN: /* z | f | o */
        p1 = prn__cw_slice(w, P, -1, H, H);
        *a = prn__cw1(w, prn_sigmoid, p1);
        *b = prn__cw2(w, prn_mul, prn__cw_sigc(w, p1), prn__cw1(w, prn_tanh, p0));
        *o = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, P, -1, 2 * H, H));
        break;
    case PRN__SRU: /* x~ | f | r (| p) */
        s = prn__cw2(w, prn_add, prn__cw_slice(w, P, -1, H, 2 * H), c->b);
        f = prn__cw_slice(w, s, -1, 0, H);
        *a = prn__cw1(w, prn_sigmoid, f);
        *b = prn__cw2(w, prn_mul, prn__cw_sigc(w, f), p0);
        *o = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, s, -1, H, H));
        break;
    default: /* GILR-LSTM c: f | i | o | z */
        *a = prn__cw1(w, prn_sigmoid, p0);
        *b = prn__cw2(w, prn_mul, prn__cw1(w, prn_sigmoid, prn__cw_slice(w, P, -1, H, H)),
                      prn__cw1(w, prn_tanh, prn__cw_slice(w, P, -1, 3 * H, H)));
        *o = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, P, -1, 2 * H, H));
        break;
    }
}
/* The output h from the state c (skip: SRU's highway input x'). */
PRN__FN prn_tensor *prn__cell_out(prn__cw *w, const prn_cell *c, prn_tensor *cs, prn_tensor *o, prn_tensor *skip) {
    if (c->kind == PRN__MINGRU || c->kind == PRN__MINLSTM) return cs;
    if (c->kind == PRN__SRU) /* r c + (1 - r) x' = r (c - x') + x' */
        return prn__cw2(w, prn_add, prn__cw2(w, prn_mul, o, prn__cw2(w, prn_sub, cs, skip)), skip);
    return prn__cw2(w, prn_mul, o, cs);
}
/* state0 [B, S] split into c0, h~0 (GILR-LSTM) and x_{-1} (QRNN width 2). */
PRN__FN void prn__cell_split(prn__cw *w, const prn_cell *c, prn_tensor *s0, prn_tensor **c0, prn_tensor **ht0,
                             prn_tensor **xp0) {
    *c0 = *ht0 = *xp0 = NULL;
    if (!s0) return;
    if (c->kind == PRN__GILR) {
        *ht0 = prn__cw_slice(w, s0, 1, 0, c->hid);
        *c0 = prn__cw_slice(w, s0, 1, c->hid, c->hid);
    } else if (c->width == 2) {
        *c0 = prn__cw_slice(w, s0, 1, 0, c->hid);
        *xp0 = prn__cw_slice(w, s0, 1, c->hid, c->in);
    } else {
        *c0 = s0;
    }
}
/* The state [B, S] from its parts ([B, H], [B, H], [B, I]). */
PRN__FN prn_tensor *prn__cell_join(prn__cw *w, const prn_cell *c, prn_tensor *cT, prn_tensor *htT, prn_tensor *xT) {
    if (c->kind == PRN__GILR) return prn__cw_cat(w, htT, cT, 1);
    if (c->width == 2) return prn__cw_cat(w, cT, xT, 1);
    return cT;
}

/* Every step at once: x [B, T, I]; s0 [B, S] or NULL. */
PRN__FN void prn__cell_par(prn__cw *w, const prn_cell *c, prn_tensor *x, prn_tensor *s0, size_t B, size_t T,
                           int want_state, prn_tensor **h, prn_tensor **sT) {
    size_t H = c->hid, In = c->in; /* not I: <complex.h> (via cblas.h) defines it */
    prn_tensor *c0, *ht0, *xp0, *xin = x, *G, *P, *a = NULL, *b = NULL, *o = NULL, *cs, *ht = NULL, *skip = NULL;
    prn__cell_split(w, c, s0, &c0, &ht0, &xp0);
    if (c->width == 2) /* rows x_{t-1} | x_t */
        xin = prn__cw_cat(w, prn__cw_delay(w, x, c->dtype, B, T, In, xp0), x, 2);
    G = prn__cw_shape(w, prn__cell_gates(w, c, prn__cw_shape(w, xin, c->dtype, 2, B * T, c->width * In, 0)),
                      c->dtype, 3, B, T, c->gates * H);
    P = G;
    if (c->kind == PRN__GILR) {
        prn_tensor *hp, *u;
        prn__cell_coef(w, c, 1, prn__cw_slice(w, G, 2, 0, 2 * H), &a, &b, &o);
        ht = prn__cw_scan(w, a, b, ht0, c->algo);
        hp = prn__cw_delay(w, ht, c->dtype, B, T, H, ht0); /* h~_{t-1} */
        u = prn__cw2(w, prn_matmul, prn__cw_shape(w, hp, c->dtype, 2, B * T, H, 0), c->U);
        P = prn__cw2(w, prn_add, prn__cw_slice(w, G, 2, 2 * H, 4 * H), prn__cw_shape(w, u, c->dtype, 3, B, T, 4 * H));
    }
    prn__cell_coef(w, c, 0, P, &a, &b, &o);
    cs = prn__cw_scan(w, a, b, c0, c->algo);
    if (c->kind == PRN__SRU) skip = In == H ? x : prn__cw_slice(w, P, 2, 3 * H, H);
    *h = prn__cell_out(w, c, cs, o, skip);
    if (want_state)
        *sT = prn__cell_join(w, c, prn__cw_last(w, cs, B, T, H), ht ? prn__cw_last(w, ht, B, T, H) : NULL,
                             c->width == 2 ? prn__cw_last(w, x, B, T, In) : NULL);
}

/* One step at a time with ordinary ops; h joined by pairwise prn_concat. */
PRN__FN void prn__cell_seq(prn__cw *w, const prn_cell *c, prn_tensor *x, prn_tensor *s0, size_t B, size_t T,
                           int want_state, prn_tensor **h, prn_tensor **sT) {
    size_t H = c->hid, In = c->in, t, k, n;
    prn_tensor *c0, *ht0, *xp0, *car[3], **hs;  /* carried (own references): c, h~, x_{t-1} */
    prn__cell_split(w, c, s0, &c0, &ht0, &xp0);
    car[0] = c0 ? prn_tensor_retain(c0) : NULL;
    car[1] = ht0 ? prn_tensor_retain(ht0) : NULL;
    car[2] = xp0 ? prn_tensor_retain(xp0) : NULL;
    hs = w->st == PRN_OK ? (prn_tensor **)prn_alloc(w->ctx, T * sizeof *hs) : NULL;
    if (hs) memset(hs, 0, T * sizeof *hs);
    else if (w->st == PRN_OK) w->st = PRN_ERR_OUT_OF_MEMORY;
    for (t = 0; t < T && w->st == PRN_OK; ++t) {
        size_t mark = w->n;
        prn_tensor *xt, *xin, *G, *P, *a = NULL, *b = NULL, *o = NULL, *nc, *nh = NULL, *y, *skip = NULL, *keep[3];
        xt = prn__cw_shape(w, prn__cw_slice(w, x, 1, t, 1), c->dtype, 2, B, In, 0);
        xin = c->width == 2 ? prn__cw_cat(w, car[2] ? car[2] : prn__cw_shape(w, NULL, c->dtype, 2, B, In, 0), xt, 1) : xt;
        G = prn__cell_gates(w, c, xin);
        P = G;
        if (c->kind == PRN__GILR) {
            prn__cell_coef(w, c, 1, prn__cw_slice(w, G, 1, 0, 2 * H), &a, &b, &o);
            nh = car[1] ? prn__cw2(w, prn_add, prn__cw2(w, prn_mul, a, car[1]), b) : b;
            P = prn__cw_slice(w, G, 1, 2 * H, 4 * H);
            if (car[1]) P = prn__cw2(w, prn_add, P, prn__cw2(w, prn_matmul, car[1], c->U));
        }
        prn__cell_coef(w, c, 0, P, &a, &b, &o);
        nc = car[0] ? prn__cw2(w, prn_add, prn__cw2(w, prn_mul, a, car[0]), b) : b;
        if (c->kind == PRN__SRU) skip = In == H ? xt : prn__cw_slice(w, P, 1, 3 * H, H);
        y = prn__cw_shape(w, prn__cell_out(w, c, nc, o, skip), c->dtype, 3, B, 1, H);
        if (w->st != PRN_OK) break;
        hs[t] = prn_tensor_retain(y);
        keep[0] = nc;
        keep[1] = c->kind == PRN__GILR ? nh : NULL;
        keep[2] = c->width == 2 ? xt : NULL;
        for (k = 0; k < 3; ++k) if (keep[k]) prn_tensor_retain(keep[k]);
        prn__cw_release(w, mark);
        for (k = 0; k < 3; ++k) { prn_tensor_free(car[k]); car[k] = keep[k]; }
    }
    /* h: the steps joined pairwise, ceil(log2 T) rounds */
    for (n = T; n > 1 && w->st == PRN_OK; n = (n + 1) / 2) {
        for (k = 0; k < n / 2; ++k) {
            prn_tensor *y = NULL;
            prn_status st = prn_concat(w->ctx, hs[2 * k], hs[2 * k + 1], 1, &y);
            if (st != PRN_OK) { w->st = st; break; }
            prn_tensor_free(hs[2 * k]);
            prn_tensor_free(hs[2 * k + 1]);
            hs[2 * k] = hs[2 * k + 1] = NULL;
            hs[k] = y;
        }
        if (w->st == PRN_OK && n % 2) { hs[n / 2] = hs[n - 1]; hs[n - 1] = NULL; }
    }
    if (w->st == PRN_OK) { *h = prn__cw_keep(w, PRN_OK, hs[0]); hs[0] = NULL; }
    for (k = 0; k < 3; ++k) { /* handed to the scratch list, which frees them */
        if (car[k] && w->st == PRN_OK) prn__cw_keep(w, PRN_OK, car[k]);
        else prn_tensor_free(car[k]);
    }
    if (want_state && w->st == PRN_OK) *sT = prn__cell_join(w, c, car[0], car[1], car[2]);
    for (k = 0; hs && k < T; ++k) prn_tensor_free(hs[k]);
    prn_free(w->ctx, hs);
}

PRN__FN prn_status prn__cell_run(prn_context *ctx, const char *fn, const prn_cell *c, prn_tensor *x,
                                 prn_tensor *state0, int seq, prn_tensor **h, prn_tensor **state) {
    prn__cw w;
    size_t B, T, S, mark;
    prn_tensor *xb, *s0 = NULL, *hh = NULL, *ss = NULL;
    prn_status st;
    int one;
    PRN__CTX(ctx, fn);
    if (!c) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'cell' is NULL", fn);
    if (c->ctx != ctx)
        return PRN__ERR(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: argument 'cell' belongs to another context", fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    if (state0) PRN__TRY(prn__check_t(ctx, fn, "state0", state0, 1));
    if (!h) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'h' is NULL", fn);
    if (x->dtype != c->dtype || (state0 && state0->dtype != c->dtype))
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument '%s' is %s but the cell's parameters are %s", fn,
                        x->dtype != c->dtype ? "x" : "state0",
                        prn_dtype_name(x->dtype != c->dtype ? x->dtype : state0->dtype), prn_dtype_name(c->dtype));
    if (x->ndim != 2 && x->ndim != 3)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has %d axes; want [batch, T, input_size] or "
                        "[T, input_size]", fn, x->ndim);
    one = x->ndim == 2;
    B = one ? 1 : x->shape[0];
    T = x->shape[x->ndim - 2];
    S = prn_cell_state_size(c);
    if (x->shape[x->ndim - 1] != c->in)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has %lu features per step but the cell (%s) has "
                        "input_size %lu", fn, (unsigned long)x->shape[x->ndim - 1], prn_cell_name(c),
                        (unsigned long)c->in);
    if (T == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has T = 0 steps", fn);
    if (state0 && (state0->ndim != x->ndim - 1 || state0->shape[state0->ndim - 1] != S ||
                   (!one && state0->shape[0] != B))) {
        char s[64];
        prn__shape_str(state0, s, sizeof s);
        if (one)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'state0' has shape %s; want [%lu] (state_size of %s) "
                            "for an x of [T, input_size]", fn, s, (unsigned long)S, prn_cell_name(c));
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'state0' has shape %s; want [%lu, %lu] (batch, state_size "
                        "of %s)", fn, s, (unsigned long)B, (unsigned long)S, prn_cell_name(c));
    }
    mark = ctx->tape_n;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.st = PRN_OK;
    xb = one ? prn__cw_shape(&w, x, c->dtype, 3, 1, T, c->in) : x;
    if (state0) s0 = one ? prn__cw_shape(&w, state0, c->dtype, 2, 1, S, 0) : state0;
    if (seq) prn__cell_seq(&w, c, xb, s0, B, T, state != NULL, &hh, &ss);
    else prn__cell_par(&w, c, xb, s0, B, T, state != NULL, &hh, &ss);
    if (one) {
        hh = prn__cw_shape(&w, hh, c->dtype, 2, T, c->hid, 0);
        if (state) ss = prn__cw_shape(&w, ss, c->dtype, 1, S, 0, 0);
    }
    st = w.st;
    if (st == PRN_OK) {
        *h = prn_tensor_retain(hh);
        if (state) *state = prn_tensor_retain(ss);
    }
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    if (st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, st);
}
PRN__DEF prn_status prn_cell_forward(prn_context *ctx, const prn_cell *cell, prn_tensor *x, prn_tensor *state0,
                                     prn_tensor **h, prn_tensor **state) {
    return prn__cell_run(ctx, "prn_cell_forward", cell, x, state0, 0, h, state);
}
PRN__DEF prn_status prn_cell_forward_sequential(prn_context *ctx, const prn_cell *cell, prn_tensor *x,
                                                prn_tensor *state0, prn_tensor **h, prn_tensor **state) {
    return prn__cell_run(ctx, "prn_cell_forward_sequential", cell, x, state0, 1, h, state);
}

PRN__FN prn_status prn__cell_create(prn_context *ctx, const char *fn, prn__cell_kind kind, prn_dtype dtype, size_t in,
                                    size_t hid, int width, prn_cell **out) {
    prn_cell *c;
    size_t shape[2];
    double r;
    prn_status st;
    PRN__CTX(ctx, fn);
    PRN__CHECK_OUT(ctx, fn, out);
    if (dtype != PRN_F32 && dtype != PRN_F64)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'dtype' is %s (%d); cells need f32 or f64", fn,
                        prn_dtype_name(dtype), (int)dtype);
    if (in < 1 || hid < 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument '%s' is 0; must be at least 1", fn,
                        in < 1 ? "input_size" : "hidden_size");
    if (in > 0x3fffffff || hid > 0x7fffffff / 6)
        return PRN__ERR(ctx, PRN_ERR_OVERFLOW, "%s: argument '%s' is too large", fn,
                        in > 0x3fffffff ? "input_size" : "hidden_size");
    if (kind == PRN__QRNN && width != 1 && width != 2)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'width' is %d; QRNN filter widths 1 and 2 are "
                        "supported", fn, width);
    c = (prn_cell *)prn_alloc(ctx, sizeof *c);
    if (!c) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->kind = kind;
    c->dtype = dtype;
    c->in = in;
    c->hid = hid;
    c->width = kind == PRN__QRNN ? width : 1;
    c->algo = PRN_SCAN_AUTO;
    c->gates = kind == PRN__MINGRU ? 2 : kind == PRN__GILR ? 6 : kind == PRN__SRU && in != hid ? 4 : 3;
    shape[0] = (size_t)c->width * in;
    shape[1] = c->gates * hid;
    r = 1.0 / sqrt((double)shape[0]);
    st = prn_tensor_uniform(ctx, dtype, 2, shape, -r, r, &c->W);
    if (st == PRN_OK && kind == PRN__GILR) {
        shape[0] = hid;
        shape[1] = 4 * hid;
        r = 1.0 / sqrt((double)hid);
        st = prn_tensor_uniform(ctx, dtype, 2, shape, -r, r, &c->U);
    }
    shape[0] = (kind == PRN__SRU ? 2 : c->gates) * hid;
    if (st == PRN_OK) st = prn_tensor_create(ctx, dtype, 1, shape, &c->b);
    if (st == PRN_OK) st = prn_tensor_set_requires_grad(c->W, 1);
    if (st == PRN_OK && c->U) st = prn_tensor_set_requires_grad(c->U, 1);
    if (st == PRN_OK) st = prn_tensor_set_requires_grad(c->b, 1);
    if (st != PRN_OK) {
        prn_cell_free(c);
        return prn__in_fn(ctx, fn, st);
    }
    *out = c;
    return PRN_OK;
}
PRN__DEF prn_status prn_mingru_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                      prn_cell **out) {
    return prn__cell_create(ctx, "prn_mingru_create", PRN__MINGRU, dtype, input_size, hidden_size, 1, out);
}
PRN__DEF prn_status prn_minlstm_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                       prn_cell **out) {
    return prn__cell_create(ctx, "prn_minlstm_create", PRN__MINLSTM, dtype, input_size, hidden_size, 1, out);
}
PRN__DEF prn_status prn_qrnn_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                    int width, prn_cell **out) {
    return prn__cell_create(ctx, "prn_qrnn_create", PRN__QRNN, dtype, input_size, hidden_size, width, out);
}
PRN__DEF prn_status prn_sru_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                   prn_cell **out) {
    return prn__cell_create(ctx, "prn_sru_create", PRN__SRU, dtype, input_size, hidden_size, 1, out);
}
PRN__DEF prn_status prn_gilr_lstm_create(prn_context *ctx, prn_dtype dtype, size_t input_size, size_t hidden_size,
                                         prn_cell **out) {
    return prn__cell_create(ctx, "prn_gilr_lstm_create", PRN__GILR, dtype, input_size, hidden_size, 1, out);
}
PRN__DEF void prn_cell_free(prn_cell *c) {
    if (!c) return;
    prn_tensor_free(c->W);
    prn_tensor_free(c->U);
    prn_tensor_free(c->b);
    prn_free(c->ctx, c);
}
PRN__DEF prn_status prn_cell_set_scan_algo(prn_cell *c, prn_scan_algo algo) {
    if (!c) return PRN_ERR_NULL_ARGUMENT;
    if ((int)algo < 0 || algo >= PRN_SCAN_ALGO_COUNT)
        return PRN__ERR(c->ctx, PRN_ERR_INVALID_ARGUMENT, "prn_cell_set_scan_algo: argument 'algo' is %d", (int)algo);
    c->algo = algo;
    return PRN_OK;
}
PRN__DEF int prn_cell_params(const prn_cell *c, prn_tensor **params, int max) {
    prn_tensor *p[3];
    int n = 0, k;
    if (!c) return 0;
    p[n++] = c->W;
    if (c->U) p[n++] = c->U;
    p[n++] = c->b;
    for (k = 0; params && k < n && k < max; ++k) params[k] = p[k];
    return n;
}
PRN__DEF const char *prn_cell_param_name(const prn_cell *c, int index) {
    int n = prn_cell_params(c, NULL, 0);
    if (!c || index < 0 || index >= n) return NULL;
    return index == 0 ? "W" : index == n - 1 ? "b" : "U";
}
PRN__DEF const char *prn_cell_name(const prn_cell *c) {
    static const char *const names[] = {"mingru", "minlstm", "qrnn", "sru", "gilr_lstm"};
    return c ? names[c->kind] : "";
}
PRN__DEF size_t prn_cell_input_size(const prn_cell *c) { return c ? c->in : 0; }
PRN__DEF size_t prn_cell_hidden_size(const prn_cell *c) { return c ? c->hid : 0; }
PRN__DEF size_t prn_cell_state_size(const prn_cell *c) {
    if (!c) return 0;
    return c->kind == PRN__GILR ? 2 * c->hid : c->width == 2 ? c->hid + c->in : c->hid;
}

/* ------------------------------------------------------------------------
 * Recurrent networks (API section): each layer's recurrence is one recorded
 * op (prn__recur_*) over ops of the table; its backward walks time in
 * reverse with the saved gate values and ends with one matrix product per
 * weight over all steps.
 * ---------------------------------------------------------------------- */
/* --- host <-> tensor as doubles ------------------------------------------ */
PRN__FN prn_status prn__upload_f64(prn_tensor *t, const double *src) {
    prn_context *ctx = t->ctx;
    prn_status st;
    size_t i;
    float *f;
    if (t->dtype == PRN_F64) return prn_tensor_upload(t, src, t->numel);
    f = (float *)prn_alloc(ctx, (t->numel ? t->numel : 1) * sizeof *f);
    if (!f) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "out of memory for a host copy of %lu values", (unsigned long)t->numel);
    for (i = 0; i < t->numel; ++i) f[i] = (float)src[i];
    st = prn_tensor_upload(t, f, t->numel);
    prn_free(ctx, f);
    return st;
}
PRN__FN prn_status prn__download_f64(const prn_tensor *t, double *dst) {
    prn_context *ctx = t->ctx;
    prn_status st;
    size_t i;
    float *f;
    if (t->dtype == PRN_F64) return prn_tensor_download(t, dst, t->numel);
    f = (float *)prn_alloc(ctx, (t->numel ? t->numel : 1) * sizeof *f);
    if (!f) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "out of memory for a host copy of %lu values", (unsigned long)t->numel);
    st = prn_tensor_download(t, f, t->numel);
    for (i = 0; st == PRN_OK && i < t->numel; ++i) dst[i] = f[i];
    prn_free(ctx, f);
    return st;
}


/* Parameter roles of one layer and direction. */
enum { PRN__R_WIN, PRN__R_BIN, PRN__R_WHH, PRN__R_BHH, PRN__R_A, PRN__R_W2, PRN__R_H2, PRN__R_COUNT };

struct prn_rnn {
    prn_context *ctx;
    prn_rnn_config cfg;
    int L, D;
    size_t H, S, P, hk;             /* P: width of a layer's input projection; hk: head size */
    prn_tensor *(*role)[PRN__R_COUNT]; /* [L*D][role], NULL where absent                  */
    prn_tensor **p;                 /* every parameter, in prn_rnn_params order         */
    char (*names)[32];
    int np;
    prn_tensor *ro_w, *ro_b;        /* readout                                           */
    prn_tensor *m2, *m2c;           /* ALRNN: indicator of the relu units, and 1 - it     */
    int zero_init;                  /* parameters start at zero (prn_rnn_load fills them) */
};

PRN__FN int prn__rnn_torch(prn_rnn_kind k) { return k <= PRN_RNN_MHGRU; }
PRN__FN int prn__rnn_shallow(prn_rnn_kind k) { return k == PRN_RNN_SHPLRNN || k == PRN_RNN_CLIPPED_SHPLRNN; }

/* What one step needs besides tensors. */
typedef struct prn__rk {
    prn_rnn_kind kind;
    int relu;
    int fused;              /* the backend's rnn_gates_forward/_backward run the gates */
    int layer;              /* and its rnn_layer_forward/_backward the whole recurrence */
    int flat;               /* W_hh is one [G H, H] matrix: every kind but MHGRU, whose
                               W_hh is [nh, 3k, k] even for one head */
    size_t H, S, nh, hk;
    prn_tensor *m2, *m2c;
} prn__rk;

PRN__FN void prn__rk_of(const prn_rnn *r, prn__rk *k) {
    k->kind = r->cfg.kind;
    k->relu = r->cfg.relu;
    k->H = r->H;
    k->S = r->S;
    k->nh = r->cfg.kind == PRN_RNN_MHGRU ? r->cfg.num_heads : 1;
    k->flat = r->cfg.kind != PRN_RNN_MHGRU;
    k->hk = r->hk;
    k->m2 = r->m2;
    k->m2c = r->m2c;
#ifdef PARRNN_NO_TRAINING /* no backward is ever asked: the forward entries suffice */
    k->fused = prn__rnn_torch(k->kind) && prn_backend_supports(r->ctx, PRN_SLOT_rnn_gates_forward, NULL);
    k->layer = k->fused && k->nh == 1 && prn_backend_supports(r->ctx, PRN_SLOT_rnn_layer_forward, NULL);
#else
    k->fused = prn__rnn_torch(k->kind) && prn_backend_supports(r->ctx, PRN_SLOT_rnn_gates_forward, NULL) &&
               prn_backend_supports(r->ctx, PRN_SLOT_rnn_gates_backward, NULL);
    k->layer = k->fused && k->nh == 1 && prn_backend_supports(r->ctx, PRN_SLOT_rnn_layer_forward, NULL) &&
               prn_backend_supports(r->ctx, PRN_SLOT_rnn_layer_backward, NULL);
#endif
}
/* The kind a fused layer is asked for: a one-head MHGRU is a GRU (the same
 * gate layout), which rnn_layer_* know. */
PRN__FN int prn__rk_layer_kind(const prn__rk *k) { return (int)(k->kind == PRN_RNN_MHGRU ? PRN_RNN_GRU : k->kind); }
/* Tensors saved per step for the backward. */
PRN__FN int prn__rk_saved(const prn__rk *k) {
    if (k->fused) return k->kind == PRN_RNN_ELMAN ? 0 : 1; /* one [B, V H] tensor */
    switch (k->kind) {
    case PRN_RNN_LSTM: return 5;
    case PRN_RNN_GRU: case PRN_RNN_MHGRU: return 4;
    case PRN_RNN_SHPLRNN: return 1;
    case PRN_RNN_CLIPPED_SHPLRNN: return 2;
    default: return 0;
    }
}
/* Recurrent parameters (inputs of the layer op after xp and s0). */
PRN__FN int prn__rk_params(prn_rnn_kind kind) { return prn__rnn_shallow(kind) ? 4 : 2; }

/* --- more workspace helpers (prn__cw) --------------------------------- */
PRN__FN prn_tensor *prn__cw_mm(prn__cw *w, prn_tensor *a, int ta, prn_tensor *b, int tb) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_matmul_ex(w->ctx, a, ta, b, tb, &y);
    return prn__cw_keep(w, st, y);
}
/* Table binary op without the tape (the gradient helpers *_GRAD). */
PRN__FN prn_tensor *prn__cw_bin(prn__cw *w, prn_binary_op op, prn_tensor *a, prn_tensor *b) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn__binary_raw(w->ctx, "prn_rnn", op, a, b, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw_tr(prn__cw *w, prn_tensor *x, int a0, int a1) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_transpose(w->ctx, x, a0, a1, &y);
    return prn__cw_keep(w, st, y);
}
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__cw_sum0(prn__cw *w, prn_tensor *x) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_sum(w->ctx, x, 0, 0, &y);
    return prn__cw_keep(w, st, y);
}
#endif /* PARRNN_NO_TRAINING */
PRN__FN prn_tensor *prn__cw_view(prn__cw *w, prn_tensor *x, int nd, const size_t *shape) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_reshape(w->ctx, x, nd, shape, &y);
    return prn__cw_keep(w, st, y);
}
PRN__FN prn_tensor *prn__cw_v2(prn__cw *w, prn_tensor *x, size_t d0, size_t d1) {
    size_t s[2];
    s[0] = d0; s[1] = d1;
    return prn__cw_view(w, x, 2, s);
}
PRN__FN prn_tensor *prn__cw_v3(prn__cw *w, prn_tensor *x, size_t d0, size_t d1, size_t d2) {
    size_t s[3];
    s[0] = d0; s[1] = d1; s[2] = d2;
    return prn__cw_view(w, x, 3, s);
}
PRN__FN prn_tensor *prn__cw_new(prn__cw *w, prn_dtype dt, int nd, const size_t *shape, double v) {
    prn_tensor *y = NULL;
    prn_status st;
    if (w->st != PRN_OK) return NULL;
    st = prn_tensor_full(w->ctx, dt, nd, shape, v, &y);
    return prn__cw_keep(w, st, y);
}
/* Copies src [B, X] into row t of dst [B, T, X] (no tape). */
PRN__FN void prn__cw_put(prn__cw *w, prn_tensor *dst, size_t t, prn_tensor *src) {
    size_t B, T, X, sh4[4], ss[4], ds[4];
    if (w->st != PRN_OK) return;
    B = dst->shape[0]; T = dst->shape[1]; X = dst->shape[2];
    if (!B || !X) return;
    sh4[0] = 1; sh4[1] = B; sh4[2] = 1; sh4[3] = X;
    ss[0] = 0; ss[1] = X; ss[2] = X; ss[3] = 1;
    ds[0] = 0; ds[1] = T * X; ds[2] = X; ds[3] = 1;
    w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->strided_copy(w->ctx, dst->dtype, sh4, src->st->buf, 0, ss,
                                                                    dst->st->buf, t * X, ds));
}
/* Row t of x [B, T, X] as [B, X] (no tape). */
PRN__FN prn_tensor *prn__cw_row(prn__cw *w, prn_tensor *x, size_t t) {
    prn_tensor *y = NULL;
    prn_status st;
    size_t s[2];
    if (w->st != PRN_OK) return NULL;
    st = prn__slice_raw(w->ctx, "prn_rnn", x, 1, t, 1, &y);
    if (st == PRN_OK) {
        s[0] = x->shape[0]; s[1] = x->shape[2];
        y->ndim = 2;
        y->shape[0] = s[0]; y->shape[1] = s[1]; y->shape[2] = y->shape[3] = 1;
    }
    return prn__cw_keep(w, st, y);
}
/* v [N, S] placed on the diagonals of z [N, S, S] (z += diag v, no tape; z
 * zeros or any). Also the k x k blocks b [N, nh, k, k] on z's diagonal. */
PRN__FN void prn__cw_put_diag(prn__cw *w, prn_tensor *z, prn_tensor *v) {
    size_t N, S, sh4[4], ss[4], ds[4];
    if (w->st != PRN_OK) return;
    N = z->shape[0];
    S = z->shape[1];
    if (!N || !S) return;
    sh4[0] = 1; sh4[1] = 1; sh4[2] = N; sh4[3] = S;
    ss[0] = 0; ss[1] = 0; ss[2] = S; ss[3] = 1;
    ds[0] = 0; ds[1] = 0; ds[2] = S * S; ds[3] = S + 1;
    w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->strided_copy(w->ctx, z->dtype, sh4, v->st->buf, 0, ss,
                                                                    z->st->buf, 0, ds));
}
PRN__FN void prn__cw_put_blocks(prn__cw *w, prn_tensor *z, prn_tensor *b, size_t nh, size_t k) {
    size_t N, S, sh4[4], ss[4], ds[4];
    if (w->st != PRN_OK) return;
    N = z->shape[0];
    S = z->shape[1];
    if (!N || !S) return;
    sh4[0] = N; sh4[1] = nh; sh4[2] = k; sh4[3] = k;
    ss[0] = nh * k * k; ss[1] = k * k; ss[2] = k; ss[3] = 1;
    ds[0] = S * S; ds[1] = k * S + k; ds[2] = S; ds[3] = 1;
    w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->strided_copy(w->ctx, z->dtype, sh4, b->st->buf, 0, ss,
                                                                    z->st->buf, 0, ds));
}
/* The diagonal of each of x's last-two-axes square matrices [.., S, S] as [.., S]. */
PRN__FN prn_tensor *prn__cw_diag_of(prn__cw *w, prn_tensor *x) {
    size_t S, N, sh4[4], ss[4], ds[4], shape[3];
    prn_tensor *y;
    int nd;
    if (w->st != PRN_OK) return NULL;
    nd = x->ndim;
    S = x->shape[nd - 1];
    N = nd == 3 ? x->shape[0] : 1;
    shape[0] = N; shape[1] = S;
    y = nd == 3 ? prn__cw_new(w, x->dtype, 2, shape, 0.0) : prn__cw_new(w, x->dtype, 1, shape + 1, 0.0);
    if (!y || !N || !S) return y;
    sh4[0] = 1; sh4[1] = 1; sh4[2] = N; sh4[3] = S;
    ss[0] = 0; ss[1] = 0; ss[2] = S * S; ss[3] = S + 1;
    ds[0] = 0; ds[1] = 0; ds[2] = S; ds[3] = 1;
    w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->strided_copy(w->ctx, x->dtype, sh4, x->st->buf, 0, ss,
                                                                    y->st->buf, 0, ds));
    return y;
}

PRN__FN prn_tensor *prn__cw_empty(prn__cw *w, prn_dtype dt, size_t d0, size_t d1) {
    prn_tensor *y = NULL;
    prn_status st;
    size_t shape[2];
    if (w->st != PRN_OK) return NULL;
    shape[0] = d0; shape[1] = d1;
    st = prn__tensor_new(w->ctx, "prn_rnn", dt, 2, shape, &y);
    return prn__cw_keep(w, st, y);
}

/* --- one step ----------------------------------------------------------- */
/* GRU gate g (0 r, 1 z, 2 n) of p [B, 3H] laid out by head: [B, nh, 3k]. */
PRN__FN prn_tensor *prn__gru_gate(prn__cw *w, const prn__rk *k, prn_tensor *p, int g) {
    size_t B;
    if (w->st != PRN_OK) return NULL;
    B = p->shape[0];
    if (k->nh == 1) return prn__cw_slice(w, p, 1, (size_t)g * k->H, k->H);
    return prn__cw_v2(w, prn__cw_slice(w, prn__cw_v3(w, p, B, k->nh, 3 * k->hk), 2, (size_t)g * k->hk, k->hk), B, k->H);
}
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__gru_join(prn__cw *w, const prn__rk *k, prn_tensor *r, prn_tensor *z, prn_tensor *n) {
    size_t B;
    if (w->st != PRN_OK) return NULL;
    B = r->shape[0];
    if (k->nh == 1) return prn__cw_cat(w, prn__cw_cat(w, r, z, 1), n, 1);
    return prn__cw_v2(w, prn__cw_cat(w, prn__cw_cat(w, prn__cw_v3(w, r, B, k->nh, k->hk), prn__cw_v3(w, z, B, k->nh, k->hk), 2),
                                     prn__cw_v3(w, n, B, k->nh, k->hk), 2), B, 3 * k->H);
}
#endif /* PARRNN_NO_TRAINING */
/* h W_hh^T per head: h [B, H] -> [B, G H] (heads: W_hh [nh, 3k, k]). */
PRN__FN prn_tensor *prn__hh(prn__cw *w, const prn__rk *k, prn_tensor *h, prn_tensor *Whh) {
    size_t B;
    prn_tensor *t;
    if (w->st != PRN_OK) return NULL;
    B = h->shape[0];
    if (k->flat) return prn__cw_mm(w, h, 0, Whh, 1);
    t = prn__cw_tr(w, prn__cw_v3(w, h, B, k->nh, k->hk), 0, 1);           /* [nh, B, k]  */
    t = prn__cw_tr(w, prn__cw_mm(w, t, 0, Whh, 1), 0, 1);                  /* [B, nh, 3k] */
    return prn__cw_v2(w, t, B, 3 * k->H);
}
/* The transposed product: d [B, G H] -> d W_hh [B, H]. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__hh_t(prn__cw *w, const prn__rk *k, prn_tensor *d, prn_tensor *Whh) {
    size_t B;
    prn_tensor *t;
    if (w->st != PRN_OK) return NULL;
    B = d->shape[0];
    if (k->flat) return prn__cw_mm(w, d, 0, Whh, 0);
    t = prn__cw_tr(w, prn__cw_v3(w, d, B, k->nh, 3 * k->hk), 0, 1);       /* [nh, B, 3k] */
    t = prn__cw_tr(w, prn__cw_mm(w, t, 0, Whh, 0), 0, 1);                  /* [B, nh, k]  */
    return prn__cw_v2(w, t, B, k->H);
}
#endif /* PARRNN_NO_TRAINING */
/* ALRNN: phi'(s), 1 on the identity units and (s > 0) on the relu units. */
PRN__FN prn_tensor *prn__alrnn_d(prn__cw *w, const prn__rk *k, prn_tensor *s) {
    return prn__cw2(w, prn_add, prn__cw_bin(w, PRN_BINARY_RELU_GRAD, k->m2, s), k->m2c);
}

/* next = f(s, xp) for xp the step's input projection [B, P]; prm the
 * recurrent parameters; sv (may be NULL) receives prn__rk_saved tensors.
 * Every result lives in w. */
PRN__FN prn_tensor *prn__rstep(prn__cw *w, const prn__rk *k, prn_tensor *const *prm, prn_tensor *xp, prn_tensor *s,
                               prn_tensor **sv) {
    size_t H = k->H;
    prn_tensor *pre, *h, *c, *i, *f, *g, *o, *cn, *tc, *hn, *r, *z, *n, *u, *v, *q;
    if (k->fused) { /* hidden product, then the backend's fused gates */
        size_t B;
        if (w->st != PRN_OK) return NULL;
        B = s->shape[0];
        prn_tensor *nx, *sv0 = NULL;
        q = prn__hh(w, k, k->kind == PRN_RNN_LSTM ? prn__cw_slice(w, s, 1, 0, H) : s, prm[0]);
        nx = prn__cw_empty(w, s->dtype, B, k->S);
        if (k->kind != PRN_RNN_ELMAN) sv0 = prn__cw_empty(w, s->dtype, B, prn__gates_saved((int)k->kind) * H);
        if (w->st == PRN_OK)
            w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->rnn_gates_forward(w->ctx, s->dtype, (int)k->kind, k->relu, B, H,
                                                                             k->hk, xp->st->buf, q->st->buf, prm[1]->st->buf,
                                                                             s->st->buf, nx->st->buf,
                                                                             sv0 ? sv0->st->buf : NULL));
        if (sv) sv[0] = sv0;
        return w->st == PRN_OK ? nx : NULL;
    }
    switch (k->kind) {
    case PRN_RNN_ELMAN:
        pre = prn__cw2(w, prn_add, prn__cw2(w, prn_add, xp, prn__cw_mm(w, s, 0, prm[0], 1)), prm[1]);
        return prn__cw1(w, k->relu ? prn_relu : prn_tanh, pre);
    case PRN_RNN_LSTM:
        h = prn__cw_slice(w, s, 1, 0, H);
        c = prn__cw_slice(w, s, 1, H, H);
        pre = prn__cw2(w, prn_add, prn__cw2(w, prn_add, xp, prn__cw_mm(w, h, 0, prm[0], 1)), prm[1]);
        i = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, pre, 1, 0, H));
        f = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, pre, 1, H, H));
        g = prn__cw1(w, prn_tanh, prn__cw_slice(w, pre, 1, 2 * H, H));
        o = prn__cw1(w, prn_sigmoid, prn__cw_slice(w, pre, 1, 3 * H, H));
        cn = prn__cw2(w, prn_add, prn__cw2(w, prn_mul, f, c), prn__cw2(w, prn_mul, i, g));
        tc = prn__cw1(w, prn_tanh, cn);
        if (sv) { sv[0] = i; sv[1] = f; sv[2] = g; sv[3] = o; sv[4] = tc; }
        return prn__cw_cat(w, prn__cw2(w, prn_mul, o, tc), cn, 1);
    case PRN_RNN_GRU: case PRN_RNN_MHGRU:
        q = prn__cw2(w, prn_add, prn__hh(w, k, s, prm[0]), prm[1]);
        r = prn__cw1(w, prn_sigmoid, prn__cw2(w, prn_add, prn__gru_gate(w, k, xp, 0), prn__gru_gate(w, k, q, 0)));
        z = prn__cw1(w, prn_sigmoid, prn__cw2(w, prn_add, prn__gru_gate(w, k, xp, 1), prn__gru_gate(w, k, q, 1)));
        hn = prn__gru_gate(w, k, q, 2);
        n = prn__cw1(w, prn_tanh, prn__cw2(w, prn_add, prn__gru_gate(w, k, xp, 2), prn__cw2(w, prn_mul, r, hn)));
        if (sv) { sv[0] = r; sv[1] = z; sv[2] = n; sv[3] = hn; }
        return prn__cw2(w, prn_add, n, prn__cw2(w, prn_mul, z, prn__cw2(w, prn_sub, s, n)));
    case PRN_RNN_PLRNN:
        return prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], s),
                                             prn__cw_mm(w, prn__cw1(w, prn_relu, s), 0, prm[1], 1)), xp);
    case PRN_RNN_ALRNN:
        return prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], s),
                                             prn__cw_mm(w, prn__cw2(w, prn_mul, s, prn__alrnn_d(w, k, s)), 0, prm[1], 1)), xp);
    default: /* shallow */
        v = prn__cw_mm(w, s, 0, prm[2], 1);
        u = prn__cw2(w, prn_add, v, prm[3]);
        r = prn__cw1(w, prn_relu, u);
        if (k->kind == PRN_RNN_CLIPPED_SHPLRNN) r = prn__cw2(w, prn_sub, r, prn__cw1(w, prn_relu, v));
        if (sv) { sv[0] = u; if (k->kind == PRN_RNN_CLIPPED_SHPLRNN) sv[1] = v; }
        return prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], s),
                                             prn__cw_mm(w, r, 0, prm[1], 1)), xp);
    }
}

/* Backward of one step: gs = d loss / d next [B, S] -> *dxp [B, P] and the
 * return value d loss / d s; *dq receives what the weight gradients need
 * per step (torch kinds: d of the hidden projection [B, G H]; shallow:
 * d u (and d v)). */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__rstep_bw(prn__cw *w, const prn__rk *k, prn_tensor *const *prm, prn_tensor *s,
                                  prn_tensor *const *sv, prn_tensor *next, prn_tensor *gs, prn_tensor **dxp,
                                  prn_tensor **dq) {
    size_t H = k->H;
    prn_tensor *dpre, *gh, *gc, *dc, *dpr, *dpz, *dpn, *dz, *dr, *du, *dv, *ds;
    if (k->fused) {
        size_t B;
        if (w->st != PRN_OK) return NULL;
        B = s->shape[0];
        prn_tensor *dx = prn__cw_empty(w, s->dtype, B, prm[1]->shape[0]), *dqq = prn__cw_empty(w, s->dtype, B, prm[1]->shape[0]);
        prn_tensor *dd = prn__cw_empty(w, s->dtype, B, k->S), *back;
        if (w->st == PRN_OK)
            w->st = prn__in_fn(w->ctx, "prn_rnn", w->ctx->be->rnn_gates_backward(w->ctx, s->dtype, (int)k->kind, k->relu, B, H,
                                                                              k->hk, gs->st->buf, s->st->buf, next->st->buf,
                                                                              sv[0] ? sv[0]->st->buf : NULL, dx->st->buf,
                                                                              dqq->st->buf, dd->st->buf));
        *dxp = dx;
        dq[0] = dqq;
        back = prn__hh_t(w, k, dqq, prm[0]);
        if (k->kind == PRN_RNN_ELMAN) return back;
        if (k->kind == PRN_RNN_LSTM) return prn__cw_cat(w, back, prn__cw_slice(w, dd, 1, H, H), 1);
        return prn__cw2(w, prn_add, back, dd);
    }
    switch (k->kind) {
    case PRN_RNN_ELMAN:
        dpre = prn__cw_bin(w, k->relu ? PRN_BINARY_RELU_GRAD : PRN_BINARY_TANH_GRAD, gs, next);
        *dxp = dq[0] = dpre;
        return prn__cw_mm(w, dpre, 0, prm[0], 0);
    case PRN_RNN_LSTM: { /* sv: i f g o tanh(c) */
        prn_tensor *c = prn__cw_slice(w, s, 1, H, H);
        gh = prn__cw_slice(w, gs, 1, 0, H);
        gc = prn__cw_slice(w, gs, 1, H, H);
        dc = prn__cw2(w, prn_add, gc, prn__cw_bin(w, PRN_BINARY_TANH_GRAD, prn__cw2(w, prn_mul, gh, sv[3]), sv[4]));
        dpre = prn__cw_cat(w, prn__cw_cat(w, prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_mul, dc, sv[2]), sv[0]),
                                          prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_mul, dc, c), sv[1]), 1),
                           prn__cw_cat(w, prn__cw_bin(w, PRN_BINARY_TANH_GRAD, prn__cw2(w, prn_mul, dc, sv[0]), sv[2]),
                                       prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_mul, gh, sv[4]), sv[3]), 1), 1);
        *dxp = dq[0] = dpre;
        return prn__cw_cat(w, prn__cw_mm(w, dpre, 0, prm[0], 0), prn__cw2(w, prn_mul, dc, sv[1]), 1);
    }
    case PRN_RNN_GRU: case PRN_RNN_MHGRU: /* sv: r z n hn */
        dz = prn__cw2(w, prn_mul, gs, prn__cw2(w, prn_sub, s, sv[2]));
        dpn = prn__cw_bin(w, PRN_BINARY_TANH_GRAD, prn__cw2(w, prn_sub, gs, prn__cw2(w, prn_mul, gs, sv[1])), sv[2]);
        dpr = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_mul, dpn, sv[3]), sv[0]);
        dpz = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, dz, sv[1]);
        *dxp = prn__gru_join(w, k, dpr, dpz, dpn);
        dq[0] = prn__gru_join(w, k, dpr, dpz, prn__cw2(w, prn_mul, dpn, sv[0]));
        return prn__cw2(w, prn_add, prn__cw2(w, prn_mul, gs, sv[1]), prn__hh_t(w, k, dq[0], prm[0]));
    case PRN_RNN_PLRNN:
        *dxp = gs;
        return prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], gs),
                        prn__cw_bin(w, PRN_BINARY_RELU_GRAD, prn__cw_mm(w, gs, 0, prm[1], 0), s));
    case PRN_RNN_ALRNN:
        *dxp = gs;
        return prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], gs),
                        prn__cw2(w, prn_mul, prn__cw_mm(w, gs, 0, prm[1], 0), prn__alrnn_d(w, k, s)));
    default: /* shallow; sv: u (v) */
        *dxp = gs;
        dr = prn__cw_mm(w, gs, 0, prm[1], 0);
        du = prn__cw_bin(w, PRN_BINARY_RELU_GRAD, dr, sv[0]);
        dv = k->kind == PRN_RNN_CLIPPED_SHPLRNN ? prn__cw2(w, prn_sub, du, prn__cw_bin(w, PRN_BINARY_RELU_GRAD, dr, sv[1])) : du;
        dq[0] = du;
        dq[1] = dv;
        ds = prn__cw_mm(w, dv, 0, prm[2], 0);
        return prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prm[0], gs), ds);
    }
}
#endif /* PARRNN_NO_TRAINING */

/* --- one layer's recurrence as a recorded op --------------------------- */
typedef struct prn__recur {
    prn_context *ctx;
    prn__rk k;          /* k.m2, k.m2c retained */
    size_t T;
    int rev, nsv;
    prn_tensor **sv;    /* per time index t: nsv saved tensors */
    prn_tensor *svall;  /* fused layer (k.layer): every step's saved values [B, T, V H] */
    prn_tensor *cs;     /* rnn_layer_forward_yc (LSTM): every step's c [B, T, H] beside y */
} prn__recur;

PRN__FN void prn__recur_free(void *user) {
    prn__recur *r = (prn__recur *)user;
    size_t i;
    if (!r) return;
    if (r->sv)
        for (i = 0; i < r->T * (size_t)r->nsv; ++i) prn_tensor_free(r->sv[i]);
    prn_tensor_free(r->k.m2);
    prn_tensor_free(r->k.m2c);
    prn_tensor_free(r->svall);
    prn_tensor_free(r->cs);
    prn_free(r->ctx, r->sv);
    prn_free(r->ctx, r);
}

/* A new record of a recurrence over T steps (k's masks retained); NULL:
 * out of memory, with the message set. */
PRN__FN prn__recur *prn__recur_new(prn_context *ctx, const char *fn, const prn__rk *k, size_t T, int rev) {
    prn__recur *r = (prn__recur *)prn_alloc(ctx, sizeof *r);
    if (!r) { PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn); return NULL; }
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->k = *k;
    r->k.m2 = prn_tensor_retain(k->m2);
    r->k.m2c = prn_tensor_retain(k->m2c);
    r->T = T;
    r->rev = rev;
    return r;
}

/* Assembles the saved tensor j of every step into [B * T, X]. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__recur_stack(prn__cw *w, const prn__recur *r, int j) {
    prn_tensor *first = r->sv[j], *y;
    size_t B = first->shape[0], X = first->shape[1], t, shape[3];
    shape[0] = B; shape[1] = r->T; shape[2] = X;
    y = prn__cw_new(w, first->dtype, 3, shape, 0.0);
    for (t = 0; t < r->T; ++t) prn__cw_put(w, y, t, r->sv[t * (size_t)r->nsv + j]);
    return prn__cw_v2(w, y, B * r->T, X);
}
#endif /* PARRNN_NO_TRAINING */

/* h before each step, in time order, as [B T, H]: the first H of each
 * state of Sall [B, T, S] one step earlier, s0's where there is none. One
 * copy of B T H (the states' concatenation and its slice were two, of B T S
 * and B T H). */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_tensor *prn__bw_hprev(prn__cw *w, prn_tensor *s0, prn_tensor *Sall, size_t B, size_t T, size_t H, size_t S,
                                  int rev, size_t E) {
    const size_t L = H + E; /* E > 0: E columns of ones after h ([B T, H + E]) */
    prn_tensor *y;
    size_t sh4[4], ss[4], ds[4], shape[2];
    shape[0] = B * T; shape[1] = L;
    y = E ? prn__cw_new(w, Sall->dtype, 2, shape, 1.0) : prn__cw_empty(w, Sall->dtype, B * T, H);
    if (!y || !B || !T || !H) return y;
    sh4[0] = 1; sh4[1] = 1; sh4[2] = B; sh4[3] = H;
    ss[0] = 0; ss[1] = 0; ss[2] = S; ss[3] = 1;
    ds[0] = 0; ds[1] = 0; ds[2] = T * L; ds[3] = 1;
    w->st = prn__in_fn(w->ctx, "prn_backward", w->ctx->be->strided_copy(w->ctx, Sall->dtype, sh4, s0->st->buf, 0, ss,
                                                                        y->st->buf, rev ? (T - 1) * L : 0, ds));
    if (w->st != PRN_OK || T < 2) return w->st == PRN_OK ? y : NULL;
    sh4[0] = 1; sh4[1] = B; sh4[2] = T - 1; sh4[3] = H;
    ss[0] = 0; ss[1] = T * S; ss[2] = S; ss[3] = 1;
    ds[0] = 0; ds[1] = T * L; ds[2] = L; ds[3] = 1;
    w->st = prn__in_fn(w->ctx, "prn_backward", w->ctx->be->strided_copy(w->ctx, Sall->dtype, sh4, Sall->st->buf,
                                                                        rev ? S : 0, ss, y->st->buf, rev ? 0 : L, ds));
    return w->st == PRN_OK ? y : NULL;
}
#endif /* PARRNN_NO_TRAINING */

#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_recur(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    prn__recur *r = (prn__recur *)op->user;
    const prn__rk *k = &r->k;
    prn_tensor *xp = op->inputs[0], *s0 = op->inputs[1], *const *prm = op->inputs + 2, *Sall = op->output;
    size_t B = xp->shape[0], T = xp->shape[1], P = xp->shape[2], S = k->S, BT = B * T, step, t, mark, shape[3];
    int nq = prn__rnn_torch(k->kind) ? 1 : prn__rnn_shallow(k->kind) ? 2 : 0, j, np;
    /* the fused layer of ELMAN, LSTM, GRU: h before each step built for the
     * weight gradient alone (prn__bw_hprev), with 16 columns of ones when
     * b_hh's gradient is wanted too: dq's column sums come out of the same
     * product (one pass over dq, B T P, instead of two) */
    const int flat = k->layer && (k->kind == PRN_RNN_ELMAN || k->kind == PRN_RNN_LSTM || k->kind == PRN_RNN_GRU);
    prn_tensor *DXP, *DQ[2] = {NULL, NULL}, *Sprev, *carry = NULL, *res[4] = {NULL, NULL, NULL, NULL};
    /* the backend's layer backward with the sums of dW_hh and db_hh inside
     * (rnn_layer_backward_dw), when it has one and W_hh's gradient is asked */
    const int indw = flat && op->needs_grad[2] && prn_backend_supports(ctx, PRN_SLOT_rnn_layer_backward_dw, NULL);
    prn__cw w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    np = prn__rk_params(k->kind);
    shape[0] = B; shape[1] = T; shape[2] = P;
    /* The fused layer writes every element of dxp and dq: no zeros first
     * (a pass over B T P each). Its ELMAN and LSTM dq is dxp itself (the
     * gates' pre-activations take xp and q + b_hh alike): one buffer, which
     * rnn_layer_backward allows for these kinds. */
    DXP = k->layer ? prn__cw_v3(&w, prn__cw_empty(&w, xp->dtype, BT, P), B, T, P) : prn__cw_new(&w, xp->dtype, 3, shape, 0.0);
    for (j = 0; j < nq; ++j) {
        shape[2] = prn__rnn_torch(k->kind) ? P : prm[3]->shape[0];
        DQ[j] = !k->layer ? prn__cw_new(&w, xp->dtype, 3, shape, 0.0)
                : k->kind == PRN_RNN_ELMAN || k->kind == PRN_RNN_LSTM ? DXP
                : prn__cw_v3(&w, prn__cw_empty(&w, xp->dtype, BT, shape[2]), B, T, shape[2]);
    }
    /* states before each step, in time order; the fused layer needs only
     * their h (below): not built then (for LSTM a copy of B T S) */
    if (flat) Sprev = NULL;
    else {
        prn_tensor *s03 = prn__cw_v3(&w, s0, B, 1, S);
        Sprev = T == 1 ? s03
                : r->rev ? prn__cw_cat(&w, prn__cw_slice(&w, Sall, 1, 1, T - 1), s03, 1)
                         : prn__cw_cat(&w, s03, prn__cw_slice(&w, Sall, 1, 0, T - 1), 1);
    }
    if (k->layer) { /* the backend's fused layer: every step in one call */
        carry = prn_tensor_retain(prn__cw_empty(&w, xp->dtype, B, S)); /* d loss / d s0; freed below */
        if (indw) {
            res[0] = prn__cw_empty(&w, xp->dtype, P, k->H);
            if (op->needs_grad[3]) res[1] = prn__cw_empty(&w, xp->dtype, P, 1);
        }
        if (w.st == PRN_OK && indw)
            w.st = prn__in_fn(ctx, "prn_backward",
                              ctx->be->rnn_layer_backward_dw(ctx, xp->dtype, prn__rk_layer_kind(k), k->relu, r->rev, B, T,
                                                             k->H, g->st->buf, prm[0]->st->buf, s0->st->buf,
                                                             Sall->st->buf, r->svall ? r->svall->st->buf : NULL,
                                                             DXP->st->buf, DQ[0]->st->buf, carry->st->buf,
                                                             res[0]->st->buf, res[1] ? res[1]->st->buf : NULL));
        else if (w.st == PRN_OK)
            w.st = prn__in_fn(ctx, "prn_backward",
                              ctx->be->rnn_layer_backward(ctx, xp->dtype, prn__rk_layer_kind(k), k->relu, r->rev, B, T, k->H,
                                                          g->st->buf, prm[0]->st->buf, s0->st->buf, Sall->st->buf,
                                                          r->svall ? r->svall->st->buf : NULL, DXP->st->buf,
                                                          DQ[0]->st->buf, carry->st->buf));
    }
    for (step = 0; step < T && w.st == PRN_OK && !k->layer; ++step) {
        prn_tensor *gs, *s, *nx, *dxp = NULL, *dq[2] = {NULL, NULL}, *ds, *svt[5] = {NULL, NULL, NULL, NULL, NULL};
        mark = w.n;
        t = r->rev ? step : T - 1 - step;
        gs = prn__cw_row(&w, g, t);
        if (carry) gs = prn__cw2(&w, prn_add, gs, carry);
        s = prn__cw_row(&w, Sprev, t);
        nx = prn__cw_row(&w, Sall, t);
        for (j = 0; j < r->nsv; ++j) svt[j] = r->sv[t * (size_t)r->nsv + j];
        ds = prn__rstep_bw(&w, k, prm, s, svt, nx, gs, &dxp, dq);
        if (w.st != PRN_OK) break;
        prn__cw_put(&w, DXP, t, dxp);
        for (j = 0; j < nq; ++j) prn__cw_put(&w, DQ[j], t, dq[j]);
        if (w.st != PRN_OK) break;
        prn_tensor_retain(ds);
        prn__cw_release(&w, mark);
        prn_tensor_free(carry);
        carry = ds;
    }
    if (w.st == PRN_OK && op->needs_grad[0]) w.st = prn__view(ctx, "prn_backward", DXP, 3, xp->shape, &gin[0]);
    if (w.st == PRN_OK && op->needs_grad[1]) w.st = prn__view(ctx, "prn_backward", carry, s0->ndim, s0->shape, &gin[1]);
    if (w.st == PRN_OK) {
        prn_tensor *D2 = prn__cw_v2(&w, DXP, BT, P), *Sp2 = Sprev ? prn__cw_v2(&w, Sprev, BT, S) : NULL, *Hp, *Q2, *R;
        switch (k->kind) {
        case PRN_RNN_ELMAN: case PRN_RNN_LSTM: case PRN_RNN_GRU: case PRN_RNN_MHGRU:
            Q2 = prn__cw_v2(&w, DQ[0], BT, P);
            if (indw) break; /* both sums came with the layer */
            if (flat && op->needs_grad[2] && op->needs_grad[3]) { /* [dW_hh | db_hh x 16] */
                prn_tensor *M2 = prn__cw_mm(&w, Q2, 1, prn__bw_hprev(&w, s0, Sall, B, T, k->H, S, r->rev, 16), 0);
                res[0] = prn__cw_slice(&w, M2, 1, 0, k->H);
                res[1] = prn__cw_slice(&w, M2, 1, k->H, 1);
                break;
            }
            Hp = flat ? (op->needs_grad[2] ? prn__bw_hprev(&w, s0, Sall, B, T, k->H, S, r->rev, 0) : NULL)
                 : k->kind == PRN_RNN_LSTM ? prn__cw_slice(&w, Sp2, 1, 0, k->H) : Sp2;
            if (op->needs_grad[2]) {
                if (k->flat) res[0] = prn__cw_mm(&w, Q2, 1, Hp, 0);
                else res[0] = prn__cw_mm(&w, prn__cw_tr(&w, prn__cw_v3(&w, Q2, BT, k->nh, 3 * k->hk), 0, 1), 1,
                                         prn__cw_tr(&w, prn__cw_v3(&w, Hp, BT, k->nh, k->hk), 0, 1), 0);
            }
            if (op->needs_grad[3]) res[1] = prn__cw_sum0(&w, Q2);
            break;
        case PRN_RNN_PLRNN: case PRN_RNN_ALRNN:
            if (op->needs_grad[2]) res[0] = prn__cw_sum0(&w, prn__cw2(&w, prn_mul, D2, Sp2));
            if (op->needs_grad[3])
                res[1] = prn__cw_mm(&w, D2, 1,
                                    k->kind == PRN_RNN_PLRNN ? prn__cw1(&w, prn_relu, Sp2)
                                                             : prn__cw2(&w, prn_mul, Sp2, prn__alrnn_d(&w, k, Sp2)), 0);
            break;
        default: { /* shallow: prm A, W1, W2, h2 */
            size_t Lw = prm[3]->shape[0];
            prn_tensor *U = prn__recur_stack(&w, r, 0);
            R = prn__cw1(&w, prn_relu, U);
            if (k->kind == PRN_RNN_CLIPPED_SHPLRNN) R = prn__cw2(&w, prn_sub, R, prn__cw1(&w, prn_relu, prn__recur_stack(&w, r, 1)));
            if (op->needs_grad[2]) res[0] = prn__cw_sum0(&w, prn__cw2(&w, prn_mul, D2, Sp2));
            if (op->needs_grad[3]) res[1] = prn__cw_mm(&w, D2, 1, R, 0);
            if (op->needs_grad[4]) res[2] = prn__cw_mm(&w, prn__cw_v2(&w, DQ[1], BT, Lw), 1, Sp2, 0);
            if (op->needs_grad[5]) res[3] = prn__cw_sum0(&w, prn__cw_v2(&w, DQ[0], BT, Lw));
            break;
        }
        }
        for (j = 0; j < np && w.st == PRN_OK; ++j)
            if (res[j]) w.st = prn__view(ctx, "prn_backward", res[j], prm[j]->ndim, prm[j]->shape, &gin[2 + j]);
    }
    prn_tensor_free(carry);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    return w.st;
}
#endif /* PARRNN_NO_TRAINING */

/* The states after every step, Sall [B, T, S], of the recurrence with
 * input projections xp [B, T, P] from s0 [B, S]; recorded as one op. */
PRN__FN prn_status prn__recur_op(prn_context *ctx, const char *fn, const prn__rk *k, prn_tensor *xp, prn_tensor *s0,
                                 prn_tensor *const *prm, int rev, prn_tensor **out) {
    size_t B = xp->shape[0], T = xp->shape[1], step, t, mark, shape[3];
    int np = prn__rk_params(k->kind), nsv = prn__rk_saved(k), i, j, need = 0;
    prn_tensor *in[PRN_MAX_OP_INPUTS], *Sall = NULL, *s = s0;
    prn__recur *r = NULL;
    prn__cw w;
    prn_status st;
    in[0] = xp;
    in[1] = s0;
    for (i = 0; i < np; ++i) in[2 + i] = prm[i];
    if (prn_grad_enabled(ctx))
        for (i = 0; i < np + 2; ++i) need |= in[i]->requires_grad;
    if (need) {
        if (!(r = prn__recur_new(ctx, fn, k, T, rev))) return PRN_ERR_OUT_OF_MEMORY;
        r->nsv = k->layer ? 0 : nsv;
        if (nsv && !k->layer) {
            r->sv = (prn_tensor **)prn_alloc(ctx, T * (size_t)nsv * sizeof *r->sv);
            if (!r->sv) { prn__recur_free(r); return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn); }
            memset(r->sv, 0, T * (size_t)nsv * sizeof *r->sv);
        }
    }
    shape[0] = B; shape[1] = T; shape[2] = k->S;
    st = prn__tensor_new(ctx, fn, xp->dtype, 3, shape, &Sall);
    if (st != PRN_OK) { prn__recur_free(r); return st; }
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    if (k->layer) { /* the backend's fused layer: every step in one call */
        size_t V = prn__gates_saved((int)k->kind) * k->H;
        if (r && V) {
            shape[2] = V;
            st = prn__tensor_new(ctx, fn, xp->dtype, 3, shape, &r->svall);
        }
        if (st == PRN_OK)
            st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_forward(ctx, xp->dtype, prn__rk_layer_kind(k), k->relu, rev, B, T, k->H,
                                                                 xp->st->buf, prm[0]->st->buf, prm[1]->st->buf,
                                                                 s0->st->buf, Sall->st->buf,
                                                                 r && r->svall ? r->svall->st->buf : NULL));
        w.st = st;
    }
    prn_no_grad_begin(ctx);
    for (step = 0; step < T && !k->layer; ++step) {
        prn_tensor *svt[5] = {NULL, NULL, NULL, NULL, NULL}, *nx;
        t = rev ? T - 1 - step : step;
        mark = w.n;
        nx = prn__rstep(&w, k, prm, prn__cw_row(&w, xp, t), s, r ? svt : NULL);
        prn__cw_put(&w, Sall, t, nx);
        if (w.st != PRN_OK) break;
        if (r)
            for (j = 0; j < nsv; ++j) r->sv[t * (size_t)nsv + j] = prn_tensor_retain(svt[j]);
        prn_tensor_retain(nx);
        prn__cw_release(&w, mark);
        if (s != s0) prn_tensor_free(s);
        s = nx;
    }
    if (s != s0) prn_tensor_free(s);
    prn_no_grad_end(ctx);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    st = w.st;
#ifndef PARRNN_NO_TRAINING /* else r is NULL: prn_grad_enabled is 0 */
    if (st == PRN_OK && r) {
        st = prn_tape_record(ctx, "rnn_layer", in, np + 2, Sall, prn__bw_recur, r, prn__recur_free);
        if (st == PRN_OK) r = NULL; /* the tape owns it */
    }
#endif
    prn__recur_free(r);
    if (st != PRN_OK) { prn_tensor_free(Sall); return st; }
    *out = Sall;
    return PRN_OK;
}

/* --- construction ------------------------------------------------------ */
PRN__DEF const char *prn_rnn_kind_name(prn_rnn_kind kind) {
    static const char *const names[] = {"elman", "lstm", "gru", "mhgru", "plrnn", "shplrnn", "clipped_shplrnn", "alrnn"};
    return (int)kind >= 0 && kind < PRN_RNN_KIND_COUNT ? names[kind] : "";
}

/* Checks a configuration and fills in the defaults. */
PRN__FN prn_status prn__rnn_check(prn_context *ctx, const char *fn, const prn_rnn_config *in, prn_rnn_config *c) {
    const size_t big = (size_t)1 << 28;
    *c = *in;
    if (c->num_layers == 0) c->num_layers = 1;
    if (c->num_heads == 0) c->num_heads = 1;
    if ((int)c->kind < 0 || c->kind >= PRN_RNN_KIND_COUNT)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->kind' is %d, not a prn_rnn_kind", fn, (int)c->kind);
    if (c->dtype != PRN_F32 && c->dtype != PRN_F64)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'config->dtype' is %s (%d); networks need f32 or f64", fn,
                        prn_dtype_name(c->dtype), (int)c->dtype);
    if (c->hidden_size < 1 || c->hidden_size > big)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->hidden_size' is %lu; must be 1 .. 2^28", fn,
                        (unsigned long)c->hidden_size);
    if (c->input_size > big || (c->input_size == 0 && prn__rnn_torch(c->kind)))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->input_size' is %lu; must be %s .. 2^28", fn,
                        (unsigned long)c->input_size, prn__rnn_torch(c->kind) ? "1" : "0");
    if (c->num_layers < 1 || c->num_layers > 64)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->num_layers' is %d; must be 0 .. 64", fn,
                        c->num_layers);
    if (c->bidirectional != 0 && c->bidirectional != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->bidirectional' is %d; must be 0 or 1", fn,
                        c->bidirectional);
    if (c->relu != 0 && c->relu != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->relu' is %d; must be 0 or 1", fn, c->relu);
    if (c->kind == PRN_RNN_MHGRU && c->hidden_size % c->num_heads)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->num_heads' %lu does not divide hidden_size %lu",
                        fn, (unsigned long)c->num_heads, (unsigned long)c->hidden_size);
    if (c->kind != PRN_RNN_MHGRU && c->num_heads != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->num_heads' is %lu; only MHGRU has heads", fn,
                        (unsigned long)c->num_heads);
    if (prn__rnn_shallow(c->kind) && (c->shallow_size < 1 || c->shallow_size > big))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->shallow_size' is %lu; must be 1 .. 2^28", fn,
                        (unsigned long)c->shallow_size);
    if (!prn__rnn_shallow(c->kind) && c->shallow_size)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->shallow_size' is set for a %s network", fn,
                        prn_rnn_kind_name(c->kind));
    if (c->kind == PRN_RNN_ALRNN ? c->num_relu > c->hidden_size : c->num_relu != 0)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->num_relu' is %lu; %s", fn,
                        (unsigned long)c->num_relu, c->kind == PRN_RNN_ALRNN ? "must be at most hidden_size" : "only ALRNN has it");
    if (c->relu && c->kind != PRN_RNN_ELMAN)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->relu' is set for a %s network", fn,
                        prn_rnn_kind_name(c->kind));
    if (c->output_size > big)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config->output_size' is %lu; must be 0 .. 2^28", fn,
                        (unsigned long)c->output_size);
    return PRN_OK;
}

PRN__DEF void prn_rnn_free(prn_rnn *rnn) {
    int i;
    if (!rnn) return;
    for (i = 0; i < rnn->np; ++i) prn_tensor_free(rnn->p[i]);
    prn_tensor_free(rnn->m2);
    prn_tensor_free(rnn->m2c);
    prn_free(rnn->ctx, rnn->p);
    prn_free(rnn->ctx, rnn->names);
    prn_free(rnn->ctx, rnn->role);
    prn_free(rnn->ctx, rnn);
}

/* Adds a parameter of the given shape, uniform in [lo, hi] (zeros when lo == hi == 0). */
PRN__FN prn_status prn__rnn_param(prn_rnn *r, const char *name, int ld, int role, int nd, size_t d0, size_t d1,
                                  size_t d2, double lo, double hi) {
    size_t shape[3];
    prn_tensor *t = NULL;
    prn_status st;
    shape[0] = d0; shape[1] = d1; shape[2] = d2;
    st = r->zero_init || (lo == 0.0 && hi == 0.0) ? prn_tensor_create(r->ctx, r->cfg.dtype, nd, shape, &t)
                                : prn_tensor_uniform(r->ctx, r->cfg.dtype, nd, shape, lo, hi, &t);
    if (st == PRN_OK) st = prn_tensor_set_requires_grad(t, 1);
    if (st != PRN_OK) { prn_tensor_free(t); return st; }
    r->p[r->np] = t;
    if (ld >= 0) {
        snprintf(r->names[r->np], sizeof r->names[0], "%s_l%d%s", name, ld / r->D, ld % r->D ? "_reverse" : "");
        r->role[ld][role] = t;
    } else {
        snprintf(r->names[r->np], sizeof r->names[0], "%s", name);
    }
    r->np++;
    return PRN_OK;
}

/* One parameter of a network's layout: its name (without the layer
 * suffix), layer-direction (-1: the readout), role, shape and the bounds
 * of its uniform initialisation. */
typedef struct prn__pspec {
    const char *name;
    int ld, role, nd;
    size_t d[3];
    double lo, hi;
} prn__pspec;
/* Most parameters of a checked configuration (specs to pass to
 * prn__rnn_layout). */
PRN__FN size_t prn__rnn_max_params(const prn_rnn_config *c) {
    return (size_t)c->num_layers * (c->bidirectional ? 2u : 1u) * 6 + 2;
}
PRN__FN void prn__pspec_set(prn__pspec *p, const char *name, int ld, int role, int nd, size_t d0, size_t d1, size_t d2,
                            double lo, double hi) {
    p->name = name; p->ld = ld; p->role = role; p->nd = nd;
    p->d[0] = d0; p->d[1] = d1; p->d[2] = d2;
    p->lo = lo; p->hi = hi;
}
/* The parameters of a checked configuration, in prn_rnn_params order:
 * the one description prn_rnn_create builds from and prn_rnn_load checks
 * a file against before it allocates anything. Returns their number. */
PRN__FN int prn__rnn_layout(const prn_rnn_config *c, prn__pspec *sp) {
    size_t H = c->hidden_size, M = H, Lw = c->shallow_size, In, hk = H / c->num_heads;
    size_t G = c->kind == PRN_RNN_LSTM ? 4 : c->kind == PRN_RNN_GRU || c->kind == PRN_RNN_MHGRU ? 3 : 1;
    int D = c->bidirectional ? 2 : 1, ld, n = 0, sh = prn__rnn_shallow(c->kind);
    for (ld = 0; ld < c->num_layers * D; ++ld) {
        double k = 1.0 / sqrt((double)H), km = 0.5 / sqrt((double)M);
        In = ld < D ? c->input_size : (size_t)D * H;
        if (prn__rnn_torch(c->kind)) {
            prn__pspec_set(&sp[n++], "weight_ih", ld, PRN__R_WIN, 2, G * H, In, 0, -k, k);
            if (c->kind == PRN_RNN_MHGRU) prn__pspec_set(&sp[n++], "weight_hh", ld, PRN__R_WHH, 3, c->num_heads, 3 * hk, hk, -k, k);
            else prn__pspec_set(&sp[n++], "weight_hh", ld, PRN__R_WHH, 2, G * H, H, 0, -k, k);
            prn__pspec_set(&sp[n++], "bias_ih", ld, PRN__R_BIN, 1, G * H, 0, 0, -k, k);
            prn__pspec_set(&sp[n++], "bias_hh", ld, PRN__R_BHH, 1, G * H, 0, 0, -k, k);
        } else {
            prn__pspec_set(&sp[n++], "A", ld, PRN__R_A, 1, M, 0, 0, 0.5, 0.9);
            if (sh) {
                prn__pspec_set(&sp[n++], "W1", ld, PRN__R_WHH, 2, M, Lw, 0, -0.5 / sqrt((double)Lw), 0.5 / sqrt((double)Lw));
                prn__pspec_set(&sp[n++], "W2", ld, PRN__R_W2, 2, Lw, M, 0, -1.0 / sqrt((double)M), 1.0 / sqrt((double)M));
            } else {
                prn__pspec_set(&sp[n++], "W", ld, PRN__R_WHH, 2, M, M, 0, -km, km);
            }
            prn__pspec_set(&sp[n++], sh ? "h1" : "h", ld, PRN__R_BIN, 1, M, 0, 0, 0.0, 0.0);
            if (sh) prn__pspec_set(&sp[n++], "h2", ld, PRN__R_H2, 1, Lw, 0, 0, -1.0, 1.0);
            if (In > 0)
                prn__pspec_set(&sp[n++], "C", ld, PRN__R_WIN, 2, M, In, 0, -1.0 / sqrt((double)In), 1.0 / sqrt((double)In));
        }
    }
    if (c->output_size) {
        double k = 1.0 / sqrt((double)((size_t)D * H));
        prn__pspec_set(&sp[n++], "readout_weight", -1, 0, 2, c->output_size, (size_t)D * H, 0, -k, k);
        prn__pspec_set(&sp[n++], "readout_bias", -1, 0, 1, c->output_size, 0, 0, -k, k);
    }
    return n;
}
/* Elements of a parameter (no overflow: each size is at most 2^28). */
PRN__FN uint64_t prn__pspec_numel(const prn__pspec *p) {
    uint64_t n = 1;
    int i;
    for (i = 0; i < p->nd; ++i) n *= (uint64_t)p->d[i];
    return n;
}

PRN__FN prn_status prn__rnn_build(prn_context *ctx, const char *fn, const prn_rnn_config *config, int init,
                                  prn_rnn **out) {
    prn_rnn_config c;
    prn_rnn *r;
    prn_status st = PRN_OK;
    uint64_t counter0 = ctx ? ctx->counter : 0;
    size_t H, M, G, maxp;
    prn__pspec *sp;
    int j, nsp;
    PRN__CTX(ctx, fn);
    PRN__CHECK_OUT(ctx, fn, out);
    if (!config) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'config' is NULL", fn);
    PRN__TRY(prn__rnn_check(ctx, fn, config, &c));
    r = (prn_rnn *)prn_alloc(ctx, sizeof *r);
    if (!r) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->cfg = c;
    r->zero_init = !init;
    r->L = c.num_layers;
    r->D = c.bidirectional ? 2 : 1;
    H = M = r->H = c.hidden_size;
    r->S = c.kind == PRN_RNN_LSTM ? 2 * H : H;
    r->hk = H / c.num_heads;
    G = c.kind == PRN_RNN_LSTM ? 4 : c.kind == PRN_RNN_GRU || c.kind == PRN_RNN_MHGRU ? 3 : 1;
    r->P = G * H;
    maxp = prn__rnn_max_params(&c);
    r->p = (prn_tensor **)prn_alloc(ctx, maxp * sizeof *r->p);
    r->names = (char (*)[32])prn_alloc(ctx, maxp * sizeof *r->names);
    r->role = (prn_tensor *(*)[PRN__R_COUNT])prn_alloc(ctx, (size_t)r->L * (size_t)r->D * sizeof *r->role);
    sp = (prn__pspec *)prn_alloc(ctx, maxp * sizeof *sp);
    if (!r->p || !r->names || !r->role || !sp) {
        prn_free(ctx, sp);
        prn_rnn_free(r);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    memset(r->role, 0, (size_t)r->L * (size_t)r->D * sizeof *r->role);
    nsp = prn__rnn_layout(&c, sp);
    for (j = 0; j < nsp && st == PRN_OK; ++j) {
        const prn__pspec *p = &sp[j];
        st = prn__rnn_param(r, p->name, p->ld, p->role, p->nd, p->d[0], p->d[1], p->d[2], p->lo, p->hi);
        if (st == PRN_OK && p->ld < 0) {
            if (!strcmp(p->name, "readout_weight")) r->ro_w = r->p[r->np - 1];
            else r->ro_b = r->p[r->np - 1];
        }
    }
    prn_free(ctx, sp);
    if (st == PRN_OK && c.kind == PRN_RNN_ALRNN) { /* m2: 1 on the last P units */
        size_t shape[1], i;
        double *h = (double *)prn_alloc(ctx, M * sizeof *h);
        shape[0] = M;
        if (!h) st = PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        else {
            for (i = 0; i < M; ++i) h[i] = i >= M - c.num_relu ? 1.0 : 0.0;
            st = prn_tensor_create(ctx, c.dtype, 1, shape, &r->m2);
            if (st == PRN_OK) st = prn__upload_f64(r->m2, h);
            for (i = 0; i < M; ++i) h[i] = 1.0 - h[i];
            if (st == PRN_OK) st = prn_tensor_create(ctx, c.dtype, 1, shape, &r->m2c);
            if (st == PRN_OK) st = prn__upload_f64(r->m2c, h);
            prn_free(ctx, h);
        }
    }
    if (st != PRN_OK) { /* as if never called: the generator too */
        prn_rnn_free(r);
        ctx->counter = counter0;
        return prn__in_fn(ctx, fn, st);
    }
    *out = r;
    return PRN_OK;
}

PRN__DEF prn_status prn_rnn_create(prn_context *ctx, const prn_rnn_config *config, prn_rnn **out) {
    return prn__rnn_build(ctx, "prn_rnn_create", config, 1, out);
}
PRN__DEF const prn_rnn_config *prn_rnn_get_config(const prn_rnn *rnn) { return rnn ? &rnn->cfg : NULL; }
PRN__DEF int prn_rnn_params(const prn_rnn *rnn, prn_tensor **params, int max) {
    int i;
    if (!rnn) return 0;
    for (i = 0; params && i < rnn->np && i < max; ++i) params[i] = rnn->p[i];
    return rnn->np;
}
PRN__DEF const char *prn_rnn_param_name(const prn_rnn *rnn, int index) {
    return rnn && index >= 0 && index < rnn->np ? rnn->names[index] : NULL;
}
PRN__DEF prn_tensor *prn_rnn_param(const prn_rnn *rnn, const char *name) {
    int i;
    if (!rnn || !name) return NULL;
    for (i = 0; i < rnn->np; ++i)
        if (!strcmp(rnn->names[i], name)) return rnn->p[i];
    return NULL;
}
PRN__DEF size_t prn_rnn_state_size(const prn_rnn *rnn) { return rnn ? rnn->S : 0; }
PRN__DEF size_t prn_rnn_output_size(const prn_rnn *rnn) { return rnn ? (size_t)rnn->D * rnn->H : 0; }
PRN__DEF size_t prn_rnn_jacobian_block(const prn_rnn *rnn) {
    return rnn ? (rnn->cfg.kind == PRN_RNN_MHGRU ? rnn->hk : rnn->S) : 0;
}

/* --- evaluation --------------------------------------------------------- */
/* The recurrent parameters of layer-direction ld, in prn__rk_params order. */
PRN__FN int prn__rnn_rprm(const prn_rnn *r, int ld, prn_tensor **prm) {
    prn_tensor *const *ro = r->role[ld];
    if (prn__rnn_torch(r->cfg.kind)) { prm[0] = ro[PRN__R_WHH]; prm[1] = ro[PRN__R_BHH]; return 2; }
    prm[0] = ro[PRN__R_A];
    prm[1] = ro[PRN__R_WHH];
    if (!prn__rnn_shallow(r->cfg.kind)) return 2;
    prm[2] = ro[PRN__R_W2];
    prm[3] = ro[PRN__R_H2];
    return 4;
}
/* x [B, T, I] -> the input projections [B, T, P] of layer-direction ld. */
PRN__FN prn_tensor *prn__rnn_proj(prn__cw *w, const prn_rnn *r, int ld, prn_tensor *x) {
    size_t B = x->shape[0], T = x->shape[1], In = x->shape[2], shape[3];
    prn_tensor *const *ro = r->role[ld];
    if (In == 0) { /* autonomous PLRNN: the bias alone */
        prn_tensor *y = NULL;
        prn_status st;
        if (w->st != PRN_OK) return NULL;
        shape[0] = B; shape[1] = T; shape[2] = r->P;
        st = prn_broadcast(w->ctx, ro[PRN__R_BIN], 3, shape, &y);
        return prn__cw_keep(w, st, y);
    }
    {
        prn_tensor *y = NULL, *x2 = prn__cw_v2(w, x, B * T, In);
        prn_status st;
        if (w->st != PRN_OK) return NULL;
        st = prn__linear(w->ctx, "prn_rnn", x2, ro[PRN__R_WIN], ro[PRN__R_BIN], &y); /* before y is read */
        return prn__cw_v3(w, prn__cw_keep(w, st, y), B, T, r->P);
    }
}

/* Whether layer-direction ld's forward takes its input projection into the
 * backend's fused layer (rnn_layer_forward_x): a one-head layer the backend
 * fuses, an input to project, and nothing to record (no gradient asked for
 * any input or parameter): the backward needs xp's op on the tape. */
PRN__FN int prn__rnn_xfused(prn_context *ctx, const prn_rnn *r, const prn__rk *k, int ld, const prn_tensor *X,
                            const prn_tensor *s0, prn_tensor *const *prm) {
    prn_tensor *const *ro = r->role[ld];
    if (!k->layer || X->shape[2] == 0 || !prn_backend_supports(ctx, PRN_SLOT_rnn_layer_forward_x, NULL)) return 0;
    if (!prn_grad_enabled(ctx)) return 1;
    return !(X->requires_grad || s0->requires_grad || ro[PRN__R_WIN]->requires_grad ||
             (ro[PRN__R_BIN] && ro[PRN__R_BIN]->requires_grad) || prm[0]->requires_grad || prm[1]->requires_grad);
}
/* The states Sall [B, T, S] of layer-direction ld from its input X [B, T,
 * I] by rnn_layer_forward_x; saved: the values its backward needs, or
 * NULL (prn__rnn_xfused: nothing recorded; prn__recur_xop records). */
PRN__FN prn_status prn__recur_x(prn_context *ctx, const char *fn, const prn_rnn *r, const prn__rk *k, int ld,
                                prn_tensor *X, prn_tensor *s0, prn_tensor *const *prm, int rev, prn_tensor *saved,
                                prn_tensor **out) {
    prn_tensor *const *ro = r->role[ld];
    prn_tensor *Sall = NULL;
    size_t shape[3];
    prn_status st;
    shape[0] = X->shape[0]; shape[1] = X->shape[1]; shape[2] = k->S;
    PRN__TRY(prn__tensor_new(ctx, fn, X->dtype, 3, shape, &Sall));
    st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_forward_x(ctx, X->dtype, prn__rk_layer_kind(k), k->relu, rev, shape[0],
                                                          shape[1], k->H, X->shape[2], X->st->buf,
                                                          ro[PRN__R_WIN]->st->buf,
                                                          ro[PRN__R_BIN] ? ro[PRN__R_BIN]->st->buf : NULL,
                                                          prm[0]->st->buf, prm[1]->st->buf, s0->st->buf,
                                                          Sall->st->buf, saved ? saved->st->buf : NULL));
    if (st != PRN_OK) { prn_tensor_free(Sall); return st; }
    *out = Sall;
    return PRN_OK;
}

/* y [B, T, H] and the last state f [1, B, S] of layer-direction ld from X
 * by rnn_layer_forward_y (prn__rnn_xfused, on a backend that has it): the
 * states [B, T, S] are never made (an LSTM's y needs no copy out of them,
 * its c never goes to memory). On failure both NULL. */
PRN__FN prn_status prn__recur_y(prn_context *ctx, const char *fn, const prn_rnn *r, const prn__rk *k, int ld,
                                prn_tensor *X, prn_tensor *s0, prn_tensor *const *prm, int rev, prn_tensor **y,
                                prn_tensor **f) {
    prn_tensor *const *ro = r->role[ld];
    size_t shape[3];
    prn_status st;
    *y = *f = NULL;
    shape[0] = X->shape[0]; shape[1] = X->shape[1]; shape[2] = k->H;
    PRN__TRY(prn__tensor_new(ctx, fn, X->dtype, 3, shape, y));
    shape[0] = 1; shape[1] = X->shape[0]; shape[2] = k->S;
    st = prn__tensor_new(ctx, fn, X->dtype, 3, shape, f);
    if (st == PRN_OK)
        st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_forward_y(ctx, X->dtype, prn__rk_layer_kind(k), k->relu, rev,
                                                              X->shape[0], X->shape[1], k->H, X->shape[2],
                                                              X->st->buf, ro[PRN__R_WIN]->st->buf,
                                                              ro[PRN__R_BIN] ? ro[PRN__R_BIN]->st->buf : NULL,
                                                              prm[0]->st->buf, prm[1]->st->buf, s0->st->buf,
                                                              (*y)->st->buf, (*f)->st->buf));
    if (st != PRN_OK) {
        prn_tensor_free(*y); prn_tensor_free(*f);
        *y = *f = NULL;
    }
    return st;
}

#ifndef PARRNN_NO_TRAINING
/* Whether layer-direction ld, recorded for a backward, takes its input
 * projection into the backend's fused layer both ways (rnn_layer_forward_x,
 * rnn_layer_backward_x): a one-head ELMAN or LSTM layer (whose d loss / d
 * xp is dq), an input to project and b_ih. One recorded op from x to the
 * states: xp [B, T, P] is neither stored by the forward nor its gradient by
 * the backward, and dW_ih, db_ih come out of the layer backward's chunks
 * (the projection's op, its product and its sum over dxp were a third of
 * an LSTM's training step at H 64, B 16). */
PRN__FN int prn__rnn_xtrain(prn_context *ctx, const prn_rnn *r, const prn__rk *k, int ld, const prn_tensor *X) {
    return k->layer && (k->kind == PRN_RNN_ELMAN || k->kind == PRN_RNN_LSTM) && X->shape[2] > 0 &&
           r->role[ld][PRN__R_BIN] && prn_backend_supports(ctx, PRN_SLOT_rnn_layer_forward_x, NULL) &&
           prn_backend_supports(ctx, PRN_SLOT_rnn_layer_backward_x, NULL);
}
/* Its backward: inputs x, s0, W_ih, b_ih, W_hh, b_hh; d loss / d x is dxp
 * W_ih, dxp stored only then. Also prn__recur_xop's with yc (r->cs set:
 * the output is y, g d loss / d y; rnn_layer_backward_yc). */
PRN__FN prn_status prn__bw_recur_x(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    const prn__recur *r = (const prn__recur *)op->user;
    const prn__rk *k = &r->k;
    prn_tensor *X = op->inputs[0], *s0 = op->inputs[1], *const *in = op->inputs, *Sall = op->output; /* y with r->cs */
    prn_tensor *res[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *dxp = NULL;
    const size_t B = X->shape[0], T = X->shape[1], In = X->shape[2], P = in[2]->shape[0];
    size_t sh[2];
    prn_status st = PRN_OK;
    int i;
    sh[0] = B * T; sh[1] = P;
    if (op->needs_grad[0]) st = prn__tensor_new(ctx, fn, X->dtype, 2, sh, &dxp);
    for (i = 1; i < 6 && st == PRN_OK; ++i)
        if (i != 3 && i != 5 ? 1 : op->needs_grad[i]) /* the weights' sums are required */
            st = prn__tensor_new(ctx, fn, X->dtype, in[i]->ndim, in[i]->shape, &res[i]);
    if (st == PRN_OK && r->cs)
        st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_backward_yc(
                                     ctx, X->dtype, prn__rk_layer_kind(k), k->relu, r->rev, B, T, k->H, In, g->st->buf,
                                     X->st->buf, in[4]->st->buf, s0->st->buf, Sall->st->buf, r->cs->st->buf,
                                     r->svall ? r->svall->st->buf : NULL, dxp ? dxp->st->buf : NULL, res[1]->st->buf,
                                     res[4]->st->buf, res[5] ? res[5]->st->buf : NULL, res[2]->st->buf,
                                     res[3] ? res[3]->st->buf : NULL));
    else if (st == PRN_OK)
        st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_backward_x(
                                     ctx, X->dtype, prn__rk_layer_kind(k), k->relu, r->rev, B, T, k->H, In, g->st->buf,
                                     X->st->buf, in[4]->st->buf, s0->st->buf, Sall->st->buf,
                                     r->svall ? r->svall->st->buf : NULL, dxp ? dxp->st->buf : NULL, res[1]->st->buf,
                                     res[4]->st->buf, res[5] ? res[5]->st->buf : NULL, res[2]->st->buf,
                                     res[3] ? res[3]->st->buf : NULL));
    if (st == PRN_OK && dxp) {
        prn_tensor *dx = NULL;
        st = prn__matmul_raw(ctx, fn, dxp, 0, in[2], 0, 0, &dx); /* dxp W_ih */
        if (st == PRN_OK) st = prn__view(ctx, fn, dx, 3, X->shape, &res[0]);
        prn_tensor_free(dx);
    }
    prn_tensor_free(dxp);
    for (i = 0; i < 6; ++i) {
        if (st == PRN_OK && op->needs_grad[i]) gin[i] = res[i];
        else prn_tensor_free(res[i]);
    }
    return st;
}
/* Whether a recorded layer-direction that prn__rnn_xtrain takes gives y
 * itself, its cell states apart (rnn_layer_forward_yc / _backward_yc): an
 * LSTM whose final state the caller does not take. Its y is then not
 * copied out of the states [B, T, 2H], nor d loss / d y into a zero
 * gradient of them (at H 128, B 16 the copies and the zeros were 5% of a
 * training step). */
PRN__FN int prn__rnn_yctrain(prn_context *ctx, const prn__rk *k, int want_state) {
    return !want_state && k->kind == PRN_RNN_LSTM && prn_backend_supports(ctx, PRN_SLOT_rnn_layer_forward_yc, NULL) &&
           prn_backend_supports(ctx, PRN_SLOT_rnn_layer_backward_yc, NULL);
}
/* The states Sall [B, T, S] of layer-direction ld from its input X by
 * rnn_layer_forward_x, recorded as one op (prn__rnn_xtrain); with yc
 * (prn__rnn_yctrain) y [B, T, H] by rnn_layer_forward_yc, its c kept by
 * the op for the backward. */
PRN__FN prn_status prn__recur_xop(prn_context *ctx, const char *fn, const prn_rnn *rnn, const prn__rk *k, int ld,
                                  prn_tensor *X, prn_tensor *s0, prn_tensor *const *prm, int rev, int yc,
                                  prn_tensor **out) {
    prn_tensor *const *ro = rnn->role[ld];
    prn_tensor *in[6], *Sall = NULL;
    prn__recur *r;
    size_t shape[3], V = prn__gates_saved((int)k->kind) * k->H;
    prn_status st = PRN_OK;
    in[0] = X; in[1] = s0; in[2] = ro[PRN__R_WIN]; in[3] = ro[PRN__R_BIN]; in[4] = prm[0]; in[5] = prm[1];
    if (!(r = prn__recur_new(ctx, fn, k, X->shape[1], rev))) return PRN_ERR_OUT_OF_MEMORY;
    shape[0] = X->shape[0]; shape[1] = X->shape[1]; shape[2] = V;
    if (V) st = prn__tensor_new(ctx, fn, X->dtype, 3, shape, &r->svall);
    shape[2] = k->H;
    if (st == PRN_OK && yc) st = prn__tensor_new(ctx, fn, X->dtype, 3, shape, &r->cs);
    if (st == PRN_OK && yc) st = prn__tensor_new(ctx, fn, X->dtype, 3, shape, &Sall);
    if (st == PRN_OK && yc)
        st = prn__in_fn(ctx, fn, ctx->be->rnn_layer_forward_yc(ctx, X->dtype, prn__rk_layer_kind(k), k->relu, rev,
                                                               shape[0], shape[1], k->H, X->shape[2], X->st->buf,
                                                               ro[PRN__R_WIN]->st->buf, ro[PRN__R_BIN]->st->buf,
                                                               prm[0]->st->buf, prm[1]->st->buf, s0->st->buf,
                                                               Sall->st->buf, r->cs->st->buf,
                                                               r->svall ? r->svall->st->buf : NULL));
    else if (st == PRN_OK) st = prn__recur_x(ctx, fn, rnn, k, ld, X, s0, prm, rev, r->svall, &Sall);
    if (st == PRN_OK) {
        st = prn_tape_record(ctx, yc ? "rnn_layer_yc" : "rnn_layer_x", in, 6, Sall, prn__bw_recur_x, r, prn__recur_free);
        if (st == PRN_OK) r = NULL; /* the tape owns it */
    }
    prn__recur_free(r);
    if (st != PRN_OK) { prn_tensor_free(Sall); return st; }
    *out = Sall;
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

PRN__FN prn_status prn__rnn_arg(prn_context *ctx, const char *fn, const prn_rnn *rnn) {
    PRN__CTX(ctx, fn);
    if (!rnn) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'rnn' is NULL", fn);
    if (rnn->ctx != ctx)
        return PRN__ERR(ctx, PRN_ERR_CONTEXT_MISMATCH, "%s: argument 'rnn' belongs to another context", fn);
    return PRN_OK;
}
PRN__FN prn_status prn__rnn_tensor(prn_context *ctx, const char *fn, const char *arg, const prn_rnn *rnn,
                                   const prn_tensor *t, int nd, size_t d0, size_t d1, size_t d2) {
    size_t want[3];
    int i;
    PRN__TRY(prn__check_t(ctx, fn, arg, t, 1));
    if (t->dtype != rnn->cfg.dtype)
        return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument '%s' is %s; the network is %s", fn, arg,
                        prn_dtype_name(t->dtype), prn_dtype_name(rnn->cfg.dtype));
    want[0] = d0; want[1] = d1; want[2] = d2;
    for (i = 0; i < nd && t->ndim == nd; ++i)
        if (want[i] != (size_t)-1 && t->shape[i] != want[i]) break;
    if (t->ndim != nd || i < nd) {
        char got[64], exp[64];
        int n = 0, k;
        prn__shape_str(t, got, sizeof got);
        n += snprintf(exp + n, sizeof exp - (size_t)n, "[");
        for (k = 0; k < nd; ++k)
            n += want[k] == (size_t)-1 ? snprintf(exp + n, sizeof exp - (size_t)n, "%s*", k ? ", " : "")
                                       : snprintf(exp + n, sizeof exp - (size_t)n, "%s%lu", k ? ", " : "", (unsigned long)want[k]);
        snprintf(exp + n, sizeof exp - (size_t)n, "]");
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument '%s' has shape %s; expected %s", fn, arg, got, exp);
    }
    return PRN_OK;
}

/* The one treatment of NaN and Inf by every function that runs a network
 * (prn_rnn_forward, prn_rnn_step, prn_rnn_jacobian, prn_deer_rnn; the
 * frames check the same on their host copies): the parameters, x and the
 * state must be finite, else PRN_ERR_NONFINITE names the tensor. */
PRN__FN prn_status prn__rnn_finite_args(prn_context *ctx, const char *fn, const prn_rnn *rnn, prn_tensor *x,
                                        prn_tensor *state, const char *state_name) {
    int i, ok = 1;
    for (i = 0; i < rnn->np; ++i) {
        PRN__TRY(prn__all_finite(ctx, fn, rnn->p[i], &ok));
        if (!ok) return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: parameter '%s' holds NaN or Inf", fn, rnn->names[i]);
    }
    if (x) {
        PRN__TRY(prn__all_finite(ctx, fn, x, &ok));
        if (!ok) return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: argument 'x' holds NaN or Inf", fn);
    }
    if (state) {
        PRN__TRY(prn__all_finite(ctx, fn, state, &ok));
        if (!ok) return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: argument '%s' holds NaN or Inf", fn, state_name);
    }
    return PRN_OK;
}
/* A result of finite parameters and inputs that is not finite: the
 * recurrence overflowed. */
PRN__FN prn_status prn__rnn_finite_result(prn_context *ctx, const char *fn, prn_tensor *t, const char *what) {
    int ok = 1;
    PRN__TRY(prn__all_finite(ctx, fn, t, &ok));
    if (!ok)
        return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: the result '%s' holds NaN or Inf (the recurrence overflows)", fn, what);
    return PRN_OK;
}

/* The argument checks of prn_rnn_forward and prn_deer_rnn: x [B, T, I] or
 * [T, I] with T >= 1, state0 [L*D, B, S] ([L*D, S]) or NULL, y not NULL. */
PRN__FN prn_status prn__rnn_seq_args(prn_context *ctx, const char *fn, const prn_rnn *rnn, prn_tensor *x,
                                     prn_tensor *state0, prn_tensor **y, int *batched, size_t *B, size_t *T) {
    size_t LD;
    PRN__TRY(prn__rnn_arg(ctx, fn, rnn));
    if (!y) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'y' is NULL", fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    *batched = x->ndim == 3;
    if (x->ndim != 2 && x->ndim != 3)
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has %d axes; expected [B, T, I] or [T, I]", fn, x->ndim);
    *B = *batched ? x->shape[0] : 1;
    *T = x->shape[*batched ? 1 : 0];
    LD = (size_t)rnn->L * (size_t)rnn->D;
    PRN__TRY(*batched ? prn__rnn_tensor(ctx, fn, "x", rnn, x, 3, (size_t)-1, (size_t)-1, rnn->cfg.input_size)
                      : prn__rnn_tensor(ctx, fn, "x", rnn, x, 2, (size_t)-1, rnn->cfg.input_size, 0));
    if (*T == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has T = 0 steps; need at least 1", fn);
    if (state0)
        PRN__TRY(*batched ? prn__rnn_tensor(ctx, fn, "state0", rnn, state0, 3, LD, *B, rnn->S)
                          : prn__rnn_tensor(ctx, fn, "state0", rnn, state0, 2, LD, rnn->S, 0));
    return prn__rnn_finite_args(ctx, fn, rnn, x, state0, "state0");
}

PRN__DEF prn_status prn_rnn_forward(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state0,
                                    prn_tensor **y, prn_tensor **state) {
    static const char fn[] = "prn_rnn_forward";
    /* set by prn__rnn_seq_args on success; zeros for gcc -O2, which, with
     * DEER left out (PARRNN_NO_DEER), inlines it and cannot tell */
    size_t B = 0, T = 0, LD, S, mark;
    int batched = 0, l, d;
    prn_tensor *X, *s03 = NULL, *fin = NULL, *prm[4];
    prn__rk k;
    prn__cw w;
    PRN__TRY(prn__rnn_seq_args(ctx, fn, rnn, x, state0, y, &batched, &B, &T));
    LD = (size_t)rnn->L * (size_t)rnn->D;
    S = rnn->S;
    prn__rk_of(rnn, &k);
    mark = ctx->tape_n;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    X = prn__cw_v3(&w, x, B, T, rnn->cfg.input_size);
    if (state0) s03 = prn__cw_v3(&w, state0, LD, B, S);
    for (l = 0; l < rnn->L; ++l) {
        prn_tensor *Y = NULL;
        for (d = 0; d < rnn->D; ++d) {
            int ld = l * rnn->D + d;
            prn_tensor *s0, *Sall = NULL, *Yd = NULL, *f = NULL;
            size_t shape[2];
            int xf;
            shape[0] = B; shape[1] = S;
            s0 = s03 ? prn__cw_v2(&w, prn__cw_slice(&w, s03, 0, (size_t)ld, 1), B, S) : prn__cw_new(&w, rnn->cfg.dtype, 2, shape, 0.0);
            prn__rnn_rprm(rnn, ld, prm);
            xf = w.st == PRN_OK && prn__rnn_xfused(ctx, rnn, &k, ld, X, s0, prm);
            if (xf && prn_backend_supports(ctx, PRN_SLOT_rnn_layer_forward_y, NULL)) {
                prn_status rs = prn__recur_y(ctx, fn, rnn, &k, ld, X, s0, prm, d, &Yd, &f);
                prn__cw_keep(&w, rs, Yd);
                prn__cw_keep(&w, rs, f);
            } else if (xf) {
                prn_status rs = prn__recur_x(ctx, fn, rnn, &k, ld, X, s0, prm, d, NULL, &Sall);
                prn__cw_keep(&w, rs, Sall);
#ifndef PARRNN_NO_TRAINING
            } else if (w.st == PRN_OK && prn__rnn_xtrain(ctx, rnn, &k, ld, X)) {
                const int yc = prn__rnn_yctrain(ctx, &k, state != NULL); /* y itself, no final state */
                prn_status rs = prn__recur_xop(ctx, fn, rnn, &k, ld, X, s0, prm, d, yc, yc ? &Yd : &Sall);
                prn__cw_keep(&w, rs, yc ? Yd : Sall);
#endif
            } else if (w.st == PRN_OK) {
                prn_tensor *xp = prn__rnn_proj(&w, rnn, ld, X);
                if (w.st == PRN_OK) {
                    prn_status rs = prn__recur_op(ctx, fn, &k, xp, s0, prm, d, &Sall);
                    prn__cw_keep(&w, rs, Sall);
                }
            }
            if (w.st != PRN_OK) break;
            if (!Yd) { /* out of the states */
                Yd = k.kind == PRN_RNN_LSTM ? prn__cw_slice(&w, Sall, 2, 0, rnn->H) : Sall;
                f = prn__cw_v3(&w, prn__cw_slice(&w, Sall, 1, d ? 0 : T - 1, 1), 1, B, S);
            }
            if (f) fin = fin ? prn__cw_cat(&w, fin, f, 0) : f;
            Y = Y ? prn__cw_cat(&w, Y, Yd, 2) : Yd;
        }
        X = Y;
        if (w.st != PRN_OK) break;
    }
    if (w.st == PRN_OK) {
        prn_tensor *yo = batched ? X : prn__cw_v2(&w, X, T, (size_t)rnn->D * rnn->H);
        /* no final state (prn__rnn_yctrain: not asked for) when an LSTM
         * gave y alone: its c, bounded by the steps (|c_t| <= |c_{t-1}| + 1),
         * holds NaN only where h does */
        prn_tensor *so = !fin || batched ? fin : prn__cw_v2(&w, fin, LD, S);
        if (w.st == PRN_OK) w.st = prn__rnn_finite_result(ctx, fn, yo, "y");
        if (w.st == PRN_OK && so) w.st = prn__rnn_finite_result(ctx, fn, so, "state");
        if (w.st == PRN_OK) {
            *y = prn_tensor_retain(yo);
            if (state) *state = prn_tensor_retain(so);
        }
    }
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    if (w.st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, w.st);
}

PRN__DEF prn_status prn_rnn_readout(prn_context *ctx, const prn_rnn *rnn, prn_tensor *y, prn_tensor **out) {
    static const char fn[] = "prn_rnn_readout";
    size_t F, rows, shape[4], mark;
    prn__cw w;
    prn_tensor *o;
    PRN__TRY(prn__rnn_arg(ctx, fn, rnn));
    PRN__CHECK_OUT(ctx, fn, out);
    if (!rnn->ro_w) return PRN__ERR(ctx, PRN_ERR_STATE, "%s: the network has no readout (config.output_size is 0)", fn);
    PRN__TRY(prn__check_t(ctx, fn, "y", y, 1));
    F = (size_t)rnn->D * rnn->H;
    if (y->ndim < 1 || y->shape[y->ndim - 1] != F || y->dtype != rnn->cfg.dtype)
        return PRN__ERR(ctx, y->dtype != rnn->cfg.dtype ? PRN_ERR_DTYPE : PRN_ERR_SHAPE,
                        "%s: argument 'y' must be %s with last axis %lu (the network's output size)", fn,
                        prn_dtype_name(rnn->cfg.dtype), (unsigned long)F);
    rows = y->numel / (F ? F : 1);
    mark = ctx->tape_n;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    o = prn__cw2(&w, prn_add, prn__cw_mm(&w, prn__cw_v2(&w, y, rows, F), 0, rnn->ro_w, 1), rnn->ro_b);
    if (w.st == PRN_OK) {
        memcpy(shape, y->shape, sizeof shape);
        shape[y->ndim - 1] = rnn->cfg.output_size;
        o = prn__cw_view(&w, o, y->ndim, shape);
    }
    if (w.st == PRN_OK) *out = prn_tensor_retain(o);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    if (w.st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, w.st);
}

/* Checks for the one-step functions: x [N, I] (NULL when I = 0), state [N, S]. */
PRN__FN prn_status prn__rnn_step_args(prn_context *ctx, const char *fn, const prn_rnn *rnn, prn_tensor *x,
                                      prn_tensor *state) {
    PRN__TRY(prn__rnn_arg(ctx, fn, rnn));
    if (rnn->L != 1 || rnn->D != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'rnn' has %d layers and %d directions; steps need 1 and 1",
                        fn, rnn->L, rnn->D);
    PRN__TRY(prn__rnn_tensor(ctx, fn, "state", rnn, state, 2, (size_t)-1, rnn->S, 0));
    if (x) PRN__TRY(prn__rnn_tensor(ctx, fn, "x", rnn, x, 2, state->shape[0], rnn->cfg.input_size, 0));
    else if (rnn->cfg.input_size)
        return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'x' is NULL but input_size is %lu", fn,
                        (unsigned long)rnn->cfg.input_size);
    return prn__rnn_finite_args(ctx, fn, rnn, x, state, "state");
}
/* x as [N, 1, I] (zero columns when NULL). */
PRN__FN prn_tensor *prn__rnn_x3(prn__cw *w, const prn_rnn *rnn, prn_tensor *x, size_t N) {
    size_t shape[3];
    if (x) return prn__cw_v3(w, x, N, 1, rnn->cfg.input_size);
    shape[0] = N; shape[1] = 1; shape[2] = 0;
    return prn__cw_new(w, rnn->cfg.dtype, 3, shape, 0.0);
}

PRN__DEF prn_status prn_rnn_step(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state,
                                 prn_tensor **next) {
    static const char fn[] = "prn_rnn_step";
    prn_tensor *prm[4], *Sall = NULL, *xp;
    prn__rk k;
    prn__cw w;
    size_t N, mark;
    PRN__TRY(prn__rnn_step_args(ctx, fn, rnn, x, state));
    PRN__CHECK_OUT(ctx, fn, next);
    N = state->shape[0];
    prn__rk_of(rnn, &k);
    prn__rnn_rprm(rnn, 0, prm);
    mark = ctx->tape_n;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    xp = prn__rnn_proj(&w, rnn, 0, prn__rnn_x3(&w, rnn, x, N));
    if (w.st == PRN_OK) {
        prn_status rs = prn__recur_op(ctx, fn, &k, xp, state, prm, 0, &Sall);
        prn__cw_keep(&w, rs, Sall);
    }
    xp = prn__cw_v2(&w, Sall, N, rnn->S);
    if (w.st == PRN_OK) w.st = prn__rnn_finite_result(ctx, fn, xp, "next");
    if (w.st == PRN_OK) *next = prn_tensor_retain(xp);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    if (w.st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, w.st);
}

/* --- step Jacobians ----------------------------------------------------- */
/* v [N, a] scaling the rows of m [.., a, b]: v[:, :, None] * m. */
PRN__FN prn_tensor *prn__cw_rows(prn__cw *w, prn_tensor *v, prn_tensor *m) {
    if (w->st != PRN_OK) return NULL;
    return prn__cw2(w, prn_mul, prn__cw_v3(w, v, v->shape[0], v->shape[1], 1), m);
}
/* z [N, S, S] = m + diag(v). */
PRN__FN prn_tensor *prn__cw_plus_diag(prn__cw *w, prn_tensor *m, prn_tensor *v) {
    prn_tensor *z;
    if (w->st != PRN_OK) return NULL;
    z = prn__cw_new(w, m->dtype, 3, m->shape, 0.0);
    prn__cw_put_diag(w, z, v);
    return prn__cw2(w, prn_add, m, z);
}

/* The step and d next / d state of layer-direction ld for N rows, from the
 * input projections xp [N, P] (with bias) and state [N, S], as mode says;
 * temporaries and results stay in w. No tape (the caller turns it off). */
PRN__FN prn_tensor *prn__rnn_jac(prn__cw *w, const prn_rnn *rnn, int ld, prn_tensor *xp, prn_tensor *state,
                                 prn_jacobian_mode mode, prn_tensor **next) {
    prn_tensor *prm[4], *sv[5] = {NULL, NULL, NULL, NULL, NULL}, *nx, *J = NULL, *one, *s = state;
    prn__rk k;
    size_t N, H, shape[4];
    *next = NULL;
    if (w->st != PRN_OK) return NULL;
    N = state->shape[0];
    H = rnn->H;
    prn__rk_of(rnn, &k);
    k.fused = 0; /* the closed forms below read the gates one by one */
    prn__rnn_rprm(rnn, ld, prm);
    nx = prn__rstep(w, &k, prm, xp, s, sv);
    shape[0] = N; shape[1] = H;
    one = prn__cw_new(w, rnn->cfg.dtype, 2, shape, 1.0);
    switch (k.kind) {
    case PRN_RNN_ELMAN: {
        prn_tensor *d = prn__cw_bin(w, k.relu ? PRN_BINARY_RELU_GRAD : PRN_BINARY_TANH_GRAD, one, nx);
        J = mode == PRN_JACOBIAN_DIAG ? prn__cw2(w, prn_mul, d, prn__cw_diag_of(w, prm[0])) : prn__cw_rows(w, d, prm[0]);
        break;
    }
    case PRN_RNN_LSTM: { /* sv: i f g o tanh(c) */
        prn_tensor *c = prn__cw_slice(w, s, 1, H, H), *Wk[4], *ai, *af, *ag, *ao, *q;
        int g;
        for (g = 0; g < 4; ++g) Wk[g] = prn__cw_slice(w, prm[0], 0, (size_t)g * H, H);
        ai = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, sv[2], sv[0]);
        af = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, c, sv[1]);
        ag = prn__cw_bin(w, PRN_BINARY_TANH_GRAD, sv[0], sv[2]);
        ao = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, sv[4], sv[3]);
        q = prn__cw_bin(w, PRN_BINARY_TANH_GRAD, sv[3], sv[4]);
        if (mode == PRN_JACOBIAN_DIAG) {
            prn_tensor *dc = prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw2(w, prn_mul, ai, prn__cw_diag_of(w, Wk[0])),
                                                           prn__cw2(w, prn_mul, af, prn__cw_diag_of(w, Wk[1]))),
                                      prn__cw2(w, prn_mul, ag, prn__cw_diag_of(w, Wk[2])));
            prn_tensor *dh = prn__cw2(w, prn_add, prn__cw2(w, prn_mul, ao, prn__cw_diag_of(w, Wk[3])), prn__cw2(w, prn_mul, q, dc));
            J = prn__cw_cat(w, dh, sv[1], 1);
        } else {
            prn_tensor *dc = prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw_rows(w, ai, Wk[0]), prn__cw_rows(w, af, Wk[1])),
                                      prn__cw_rows(w, ag, Wk[2]));
            prn_tensor *dh = prn__cw2(w, prn_add, prn__cw_rows(w, ao, Wk[3]), prn__cw_rows(w, q, dc));
            size_t z3[3];
            prn_tensor *zh, *zc;
            z3[0] = N; z3[1] = H; z3[2] = H;
            zh = prn__cw_new(w, rnn->cfg.dtype, 3, z3, 0.0);
            zc = prn__cw_new(w, rnn->cfg.dtype, 3, z3, 0.0);
            prn__cw_put_diag(w, zh, prn__cw2(w, prn_mul, q, sv[1]));
            prn__cw_put_diag(w, zc, sv[1]);
            J = prn__cw_cat(w, prn__cw_cat(w, dh, zh, 2), prn__cw_cat(w, dc, zc, 2), 1);
        }
        break;
    }
    case PRN_RNN_GRU: case PRN_RNN_MHGRU: { /* sv: r z n hn; blocks [N, nh, k, k] */
        size_t nh = k.nh, hk = k.hk;
        prn_tensor *Wg[3], *a, *b, *cc, *tz, *blk, *zb, *v4[3];
        int g;
        for (g = 0; g < 3; ++g)
            Wg[g] = k.flat ? prn__cw_v3(w, prn__cw_slice(w, prm[0], 0, (size_t)g * H, H), 1, H, H)
                            : prn__cw_slice(w, prm[0], 1, (size_t)g * hk, hk);
        tz = prn__cw_bin(w, PRN_BINARY_TANH_GRAD, prn__cw2(w, prn_sub, one, sv[1]), sv[2]); /* (1-z)(1-n^2) */
        a = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_sub, s, sv[2]), sv[1]);
        b = prn__cw_bin(w, PRN_BINARY_SIGMOID_GRAD, prn__cw2(w, prn_mul, tz, sv[3]), sv[0]);
        cc = prn__cw2(w, prn_mul, tz, sv[0]);
        if (mode == PRN_JACOBIAN_DIAG) {
            for (g = 0; g < 3; ++g) v4[g] = prn__cw_v2(w, prn__cw_diag_of(w, prn__cw_v3(w, Wg[g], nh, hk, hk)), 1, H);
            J = prn__cw2(w, prn_add, prn__cw2(w, prn_add, sv[1], prn__cw2(w, prn_mul, a, v4[1])),
                         prn__cw2(w, prn_add, prn__cw2(w, prn_mul, b, v4[0]), prn__cw2(w, prn_mul, cc, v4[2])));
            break;
        }
        shape[0] = N; shape[1] = nh; shape[2] = hk; shape[3] = 1;
        blk = prn__cw2(w, prn_add, prn__cw2(w, prn_add, prn__cw2(w, prn_mul, prn__cw_view(w, a, 4, shape), Wg[1]),
                                             prn__cw2(w, prn_mul, prn__cw_view(w, b, 4, shape), Wg[0])),
                       prn__cw2(w, prn_mul, prn__cw_view(w, cc, 4, shape), Wg[2]));
        blk = prn__cw_v3(w, blk, N * nh, hk, hk);
        blk = prn__cw_plus_diag(w, blk, prn__cw_v2(w, sv[1], N * nh, hk));
        if ((mode == PRN_JACOBIAN_BLOCK && k.kind == PRN_RNN_MHGRU) || nh == 1) { /* one head: blk is the dense J */
            J = prn__cw_v3(w, blk, N, H, hk);
        } else {
            shape[0] = N; shape[1] = H; shape[2] = H;
            zb = prn__cw_new(w, rnn->cfg.dtype, 3, shape, 0.0);
            if (w->st == PRN_OK) prn__cw_put_blocks(w, zb, blk, nh, hk);
            J = zb;
        }
        break;
    }
    default: { /* the PLRNN family: J = diag(A) + W diag(m) (shallow: W1 diag(m) W2) */
        prn_tensor *A = prn__cw2(w, prn_mul, one, prm[0]), *m, *Q;
        if (prn__rnn_shallow(k.kind)) {
            prn_tensor *oneL;
            shape[0] = N; shape[1] = sv[0]->shape[1];
            oneL = prn__cw_new(w, rnn->cfg.dtype, 2, shape, 1.0);
            m = prn__cw_bin(w, PRN_BINARY_RELU_GRAD, oneL, sv[0]);
            if (k.kind == PRN_RNN_CLIPPED_SHPLRNN) m = prn__cw2(w, prn_sub, m, prn__cw_bin(w, PRN_BINARY_RELU_GRAD, oneL, sv[1]));
            if (mode == PRN_JACOBIAN_DIAG) {
                Q = prn__cw2(w, prn_mul, prn__cw_tr(w, prm[1], 0, 1), prm[2]); /* Q[j][i] = W1[i][j] W2[j][i] */
                J = prn__cw2(w, prn_add, A, prn__cw_mm(w, m, 0, Q, 0));
            } else {
                J = prn__cw_plus_diag(w, prn__cw_mm(w, prn__cw2(w, prn_mul, prm[1], prn__cw_v3(w, m, N, 1, m ? m->shape[1] : 0)), 0,
                                                     prm[2], 0), A);
            }
        } else {
            m = k.kind == PRN_RNN_PLRNN ? prn__cw_bin(w, PRN_BINARY_RELU_GRAD, one, s) : prn__alrnn_d(w, &k, s);
            if (mode == PRN_JACOBIAN_DIAG) J = prn__cw2(w, prn_add, A, prn__cw2(w, prn_mul, m, prn__cw_diag_of(w, prm[1])));
            else J = prn__cw_plus_diag(w, prn__cw2(w, prn_mul, prm[1], prn__cw_v3(w, m, N, 1, H)), A);
        }
        break;
    }
    }
    if (w->st == PRN_OK) *next = nx;
    return w->st == PRN_OK ? J : NULL;
}

PRN__DEF prn_status prn_rnn_jacobian(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state,
                                     prn_jacobian_mode mode, prn_tensor **next, prn_tensor **jac) {
    static const char fn[] = "prn_rnn_jacobian";
    prn_tensor *xp, *nx = NULL, *J;
    prn__cw w;
    size_t N;
    PRN__TRY(prn__rnn_step_args(ctx, fn, rnn, x, state));
    PRN__CHECK_OUT(ctx, fn, jac);
    if ((int)mode < 0 || mode > PRN_JACOBIAN_DIAG)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'mode' is %d, not a prn_jacobian_mode", fn, (int)mode);
    N = state->shape[0];
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    prn_no_grad_begin(ctx);
    xp = prn__cw_v2(&w, prn__rnn_proj(&w, rnn, 0, prn__rnn_x3(&w, rnn, x, N)), N, rnn->P);
    J = prn__rnn_jac(&w, rnn, 0, xp, state, mode, &nx);
    prn_no_grad_end(ctx);
    if (w.st == PRN_OK) {
        *jac = prn_tensor_retain(J);
        if (next) *next = prn_tensor_retain(nx);
    }
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    return prn__in_fn(ctx, fn, w.st);
}

/* --- per-frame inference ------------------------------------------------- */
struct prn_rnn_frame {
    const prn_rnn *rnn;
    size_t B, nin, npar, bytes;
    double *par;                      /* every parameter, prn_rnn_params order */
    const double *(*role)[PRN__R_COUNT];
    const double *ro_w, *ro_b;
    double *state, *next;             /* [L, B, S] each: the state, and the next one while a step runs
                                       * (swapped when the step succeeds) */
    double *u, *xp, *hp, *yo, *tmp;   /* workspace (u owns it): [B, P], [B, P], [B, max(S, O)], [B, ltmp] */
    size_t ltmp;
};

PRN__DEF void prn_rnn_frame_free(prn_rnn_frame *f) {
    prn_context *ctx;
    if (!f) return;
    ctx = f->rnn->ctx;
    prn_free(ctx, f->par);
    prn_free(ctx, f->role);
    prn_free(ctx, f->state);
    prn_free(ctx, f->next);
    prn_free(ctx, f->u);
    prn_free(ctx, f);
}
PRN__DEF size_t prn_rnn_frame_memory(const prn_rnn_frame *f) { return f ? f->bytes : 0; }

/* Copies the parameters, refusing non-finite ones (checked first, so a
 * refused sync leaves the frame's copy as it was). */
PRN__FN prn_status prn__frame_sync(prn_rnn_frame *f, const char *fn) {
    size_t off = 0;
    int i;
    PRN__TRY(prn__rnn_finite_args(f->rnn->ctx, fn, f->rnn, NULL, NULL, NULL));
    for (i = 0; i < f->rnn->np; ++i) {
        PRN__TRY(prn__in_fn(f->rnn->ctx, fn, prn__download_f64(f->rnn->p[i], f->par + off)));
        off += f->rnn->p[i]->numel;
    }
    return PRN_OK;
}
PRN__DEF prn_status prn_rnn_frame_sync(prn_rnn_frame *f) {
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    return prn__frame_sync(f, "prn_rnn_frame_sync");
}
/* 1 when the n values are finite. */
PRN__FN int prn__host_finite(const double *v, size_t n) {
    size_t i;
    double acc = 0.0;
    for (i = 0; i < n; ++i) acc += v[i] * 0.0; /* NaN exactly when some v[i] is NaN or Inf */
    return acc == acc;
}

PRN__DEF prn_status prn_rnn_frame_create(const prn_rnn *rnn, size_t batch, prn_rnn_frame **out) {
    static const char fn[] = "prn_rnn_frame_create";
    prn_context *ctx;
    prn_rnn_frame *f;
    size_t n = 0, ws, i, LB, yw;
    int ld, r, j;
    prn_status st;
    if (!rnn) return PRN_ERR_NULL_ARGUMENT;
    ctx = rnn->ctx;
    PRN__CHECK_OUT(ctx, fn, out);
    if (rnn->D != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'rnn' is bidirectional; frames step forward in time only", fn);
    if (batch < 1 || batch > ((size_t)1 << 32))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'batch' is %lu; must be 1 .. 2^32", fn, (unsigned long)batch);
    f = (prn_rnn_frame *)prn_alloc(ctx, sizeof *f);
    if (!f) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(f, 0, sizeof *f);
    f->rnn = rnn;
    f->B = batch;
    for (i = 0; i < (size_t)rnn->np; ++i) n += rnn->p[i]->numel;
    f->npar = n;
    f->ltmp = rnn->cfg.shallow_size > rnn->H ? rnn->cfg.shallow_size : rnn->H;
    yw = rnn->cfg.output_size > rnn->S ? rnn->cfg.output_size : rnn->S;
    ws = batch * (2 * rnn->P + yw + f->ltmp);
    LB = (size_t)rnn->L * batch * rnn->S;
    f->par = (double *)prn_alloc(ctx, (n ? n : 1) * sizeof *f->par);
    f->role = (const double *(*)[PRN__R_COUNT])prn_alloc(ctx, (size_t)rnn->L * sizeof *f->role);
    f->state = (double *)prn_alloc(ctx, LB * sizeof *f->state);
    f->next = (double *)prn_alloc(ctx, LB * sizeof *f->next);
    f->u = (double *)prn_alloc(ctx, ws * sizeof *f->u);
    if (!f->par || !f->role || !f->state || !f->next || !f->u) {
        prn_rnn_frame_free(f);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for %lu parameters and state", fn, (unsigned long)n);
    }
    f->bytes = sizeof *f + n * sizeof(double) + (size_t)rnn->L * sizeof *f->role + 2 * LB * sizeof(double) +
               ws * sizeof(double);
    f->xp = f->u;
    f->hp = f->xp + batch * rnn->P;
    f->yo = f->hp + batch * rnn->P;
    f->tmp = f->yo + batch * yw;
    /* where each role's values sit in par */
    n = 0;
    for (ld = 0; ld < rnn->L; ++ld)
        for (r = 0; r < PRN__R_COUNT; ++r) f->role[ld][r] = NULL;
    for (j = 0; j < rnn->np; ++j) {
        for (ld = 0; ld < rnn->L; ++ld)
            for (r = 0; r < PRN__R_COUNT; ++r)
                if (rnn->role[ld][r] == rnn->p[j]) f->role[ld][r] = f->par + n;
        if (rnn->p[j] == rnn->ro_w) f->ro_w = f->par + n;
        if (rnn->p[j] == rnn->ro_b) f->ro_b = f->par + n;
        n += rnn->p[j]->numel;
    }
    prn_rnn_frame_reset(f);
    st = prn__frame_sync(f, fn);
    if (st != PRN_OK) { prn_rnn_frame_free(f); return st; }
    *out = f;
    return PRN_OK;
}

PRN__DEF void prn_rnn_frame_reset(prn_rnn_frame *f) {
    size_t i, n;
    if (!f) return;
    n = (size_t)f->rnn->L * f->B * f->rnn->S;
    for (i = 0; i < n; ++i) f->state[i] = 0.0;
}
PRN__DEF prn_status prn_rnn_frame_set_state(prn_rnn_frame *f, const double *state) {
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (!state) return PRN__ERR(f->rnn->ctx, PRN_ERR_NULL_ARGUMENT, "prn_rnn_frame_set_state: argument 'state' is NULL");
    if (!prn__host_finite(state, (size_t)f->rnn->L * f->B * f->rnn->S))
        return PRN__ERR(f->rnn->ctx, PRN_ERR_NONFINITE, "prn_rnn_frame_set_state: argument 'state' holds NaN or Inf");
    memcpy(f->state, state, (size_t)f->rnn->L * f->B * f->rnn->S * sizeof *state);
    return PRN_OK;
}
PRN__DEF prn_status prn_rnn_frame_get_state(const prn_rnn_frame *f, double *state) {
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (!state) return PRN__ERR(f->rnn->ctx, PRN_ERR_NULL_ARGUMENT, "prn_rnn_frame_get_state: argument 'state' is NULL");
    memcpy(state, f->state, (size_t)f->rnn->L * f->B * f->rnn->S * sizeof *state);
    return PRN_OK;
}

PRN__FN double prn__sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
/* Four partial sums: independent chains the compiler can vectorise. */
PRN__FN double prn__dot(const double *a, const double *b, size_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        s0 += a[j] * b[j];
        s1 += a[j + 1] * b[j + 1];
        s2 += a[j + 2] * b[j + 2];
        s3 += a[j + 3] * b[j + 3];
    }
    for (; j < n; ++j) s0 += a[j] * b[j];
    return (s0 + s1) + (s2 + s3);
}
/* Y[b][i] = bias[i] + W[i] . X[b] for every row b: each weight row is read
 * once for the whole batch (X rows xs apart, Y rows ys apart). */
PRN__FN void prn__matmat(const double *W, const double *bias, const double *X, size_t xs, size_t B, size_t rows,
                         size_t cols, double *Y, size_t ys) {
    size_t i, b;
    for (i = 0; i < rows; ++i) {
        const double *w = W + i * cols;
        double bi = bias ? bias[i] : 0.0;
        for (b = 0; b < B; ++b) Y[b * ys + i] = bi + (cols ? prn__dot(w, X + b * xs, cols) : 0.0);
    }
}

/* One layer for every row: input rows in (xs apart, nin values each); the
 * layer's next states go to f->next + l B S (f->state is only read). */
PRN__FN void prn__frame_layer(prn_rnn_frame *f, int l, const double *in, size_t xs, size_t nin) {
    const prn_rnn *r = f->rnn;
    const double *const *ro = f->role[l];
    size_t H = r->H, P = r->P, S = r->S, B = f->B, i, j, b;
    double *xp = f->xp, *hp = f->hp, *sn = f->next + (size_t)l * B * S, *st = f->state + (size_t)l * B * S;
    prn_rnn_kind kind = r->cfg.kind;
    if (prn__rnn_torch(kind)) {
        prn__matmat(ro[PRN__R_WIN], ro[PRN__R_BIN], in, xs, B, P, nin, xp, P);
        if (kind == PRN_RNN_MHGRU) {
            size_t k = r->hk, hd;
            for (hd = 0; hd < r->cfg.num_heads; ++hd)
                prn__matmat(ro[PRN__R_WHH] + hd * 3 * k * k, ro[PRN__R_BHH] + hd * 3 * k, st + hd * k, S, B, 3 * k, k,
                            hp + hd * 3 * k, P);
        } else {
            prn__matmat(ro[PRN__R_WHH], ro[PRN__R_BHH], st, S, B, P, H, hp, P);
        }
    }
    for (b = 0; b < B; ++b) {
        const double *x = xp + b * P, *q = hp + b * P, *s = st + b * S;
        double *o = sn + b * S;
        switch (kind) {
        case PRN_RNN_ELMAN:
            for (i = 0; i < H; ++i) { double p = x[i] + q[i]; o[i] = r->cfg.relu ? (p > 0 ? p : 0.0) : tanh(p); }
            break;
        case PRN_RNN_LSTM:
            for (i = 0; i < H; ++i) {
                double ig = prn__sigm(x[i] + q[i]), fg = prn__sigm(x[H + i] + q[H + i]);
                double gg = tanh(x[2 * H + i] + q[2 * H + i]), og = prn__sigm(x[3 * H + i] + q[3 * H + i]);
                double c = fg * s[H + i] + ig * gg;
                o[H + i] = c;
                o[i] = og * tanh(c);
            }
            break;
        case PRN_RNN_GRU: case PRN_RNN_MHGRU: {
            size_t k = r->hk;
            for (i = 0; i < H; ++i) {
                size_t base = (i / k) * 3 * k + i % k; /* gates grouped by head */
                double rg = prn__sigm(x[base] + q[base]), zg = prn__sigm(x[base + k] + q[base + k]);
                double n = tanh(x[base + 2 * k] + rg * q[base + 2 * k]);
                o[i] = n + zg * (s[i] - n);
            }
            break;
        }
        default: break;
        }
    }
    if (!prn__rnn_torch(kind)) { /* the PLRNN family */
        const double *A = ro[PRN__R_A], *W = ro[PRN__R_WHH], *hb = ro[PRN__R_BIN], *C = ro[PRN__R_WIN];
        size_t M = H, Lw = r->cfg.shallow_size, P0 = M - r->cfg.num_relu, Lt = f->ltmp;
        double *phi = f->tmp; /* [B, Lt] */
        if (prn__rnn_shallow(kind)) {
            prn__matmat(ro[PRN__R_W2], NULL, st, S, B, Lw, M, phi, Lt);
            for (b = 0; b < B; ++b)
                for (j = 0; j < Lw; ++j) {
                    double v = phi[b * Lt + j], u = v + ro[PRN__R_H2][j];
                    phi[b * Lt + j] = (u > 0 ? u : 0.0) - (kind == PRN_RNN_CLIPPED_SHPLRNN ? (v > 0 ? v : 0.0) : 0.0);
                }
            prn__matmat(W, hb, phi, Lt, B, M, Lw, sn, S);
        } else {
            for (b = 0; b < B; ++b)
                for (i = 0; i < M; ++i) {
                    double z = st[b * S + i];
                    phi[b * Lt + i] = kind == PRN_RNN_ALRNN && i < P0 ? z : (z > 0 ? z : 0.0);
                }
            prn__matmat(W, hb, phi, Lt, B, M, M, sn, S);
        }
        if (C) prn__matmat(C, NULL, in, xs, B, M, nin, xp, M);
        for (b = 0; b < B; ++b)
            for (i = 0; i < M; ++i) sn[b * S + i] += A[i] * st[b * S + i] + (C ? xp[b * M + i] : 0.0);
    }
}

PRN__DEF prn_status prn_rnn_frame_step(prn_rnn_frame *f, const double *x, double *y) {
    const prn_rnn *r;
    size_t In, H, S, O, b;
    const double *top;
    int l;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    r = f->rnn;
    In = r->cfg.input_size;
    H = r->H;
    S = r->S;
    O = r->cfg.output_size;
    if (!x && In)
        return PRN__ERR(r->ctx, PRN_ERR_NULL_ARGUMENT, "prn_rnn_frame_step: argument 'x' is NULL but input_size is %lu",
                        (unsigned long)In);
    if (In && !prn__host_finite(x, f->B * In))
        return PRN__ERR(r->ctx, PRN_ERR_NONFINITE, "prn_rnn_frame_step: argument 'x' holds NaN or Inf");
    prn__frame_layer(f, 0, x, In, In);
    for (l = 1; l < r->L; ++l) /* the previous layer's new h: the first H values of its state rows */
        prn__frame_layer(f, l, f->next + (size_t)(l - 1) * f->B * S, S, H);
    top = f->next + (size_t)(r->L - 1) * f->B * S;
    if (O) prn__matmat(f->ro_w, f->ro_b, top, S, f->B, O, H, f->yo, O);
    /* Finite parameters, state and x, yet NaN or Inf: an overflow. The
     * state stays as it was (the next one is dropped). */
    if (!prn__host_finite(f->next, (size_t)r->L * f->B * S) || (O && !prn__host_finite(f->yo, f->B * O)))
        return PRN__ERR(r->ctx, PRN_ERR_NONFINITE, "prn_rnn_frame_step: the %s holds NaN or Inf (the recurrence "
                        "overflows); the state is unchanged", O && prn__host_finite(f->next, (size_t)r->L * f->B * S)
                        ? "readout's output" : "next state");
    {
        double *t = f->state;
        f->state = f->next;
        f->next = t;
    }
    if (y) {
        if (O) memcpy(y, f->yo, f->B * O * sizeof *y);
        else for (b = 0; b < f->B; ++b) memcpy(y + b * H, top + b * S, H * sizeof *y);
    }
    return PRN_OK;
}

PRN__DEF prn_status prn_rnn_frame_reset_row(prn_rnn_frame *f, size_t row) {
    size_t l, i, S;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (row >= f->B)
        return PRN__ERR(f->rnn->ctx, PRN_ERR_INVALID_ARGUMENT, "prn_rnn_frame_reset_row: argument 'row' is %lu; the batch has %lu",
                        (unsigned long)row, (unsigned long)f->B);
    S = f->rnn->S;
    for (l = 0; l < (size_t)f->rnn->L; ++l)
        for (i = 0; i < S; ++i) f->state[(l * f->B + row) * S + i] = 0.0;
    return PRN_OK;
}

/* --- per-frame inference in f32 ------------------------------------------ */
/* A layer's weights are repacked at creation as a [K, N] matrix, K = the
 * layer's inputs then its hidden units (x rows, then h rows), N = the gates'
 * units, each gate padded to Hp (a multiple of 8) so that a register of
 * eight holds eight units of one gate, stored by blocks of eight columns:
 * block v is [K][8], contiguous, so a tile of blocks streams through memory
 * in order. Each unit has two preactivations, as in PyTorch: the input's,
 * b_ih[i] + W[0][i] x0 + ..., and the state's, b_hh[i] + W[nin][i] h0 + ...,
 * each one chain of fused multiply-adds in the order of k, whichever path
 * computes it. Padded units have zero weights and biases, so their state
 * stays zero. */
struct prn_rnn_framef {
    const prn_rnn *rnn;
    size_t B, bytes, In, H, Hp, N, O, Op, bw; /* N = G Hp; bw: block width, 8 or 16 (AVX-512) */
    int L, kind, relu, path;                  /* path: 0 portable, 1 AVX2, 2 AVX-512 */
    void *mem;            /* owns everything below                           */
    float *w, *bias;      /* layer l at w + woff(l) [K_l, N], bias + 2 l N (b_ih, b_hh) */
    float *wo, *bo;       /* readout [H, Op], [Op]                           */
    float *h, *c;         /* state [L, B, Hp] each (c: LSTM only)            */
    float *a;             /* workspace [4, 2N] (a tile's input and state preactivations) */
    float *yo;            /* workspace [4, Op]                               */
};

/* Floats of layer l's weights: N K. */
PRN__FN size_t prn__fr_wsize(const prn_rnn_framef *f, int l) {
    return f->N * ((l == 0 ? f->In : f->H) + f->H);
}
PRN__FN size_t prn__fr_woff(const prn_rnn_framef *f, int l) {
    return l == 0 ? 0 : prn__fr_wsize(f, 0) + (size_t)(l - 1) * prn__fr_wsize(f, 1);
}
/* Where W[k][col] of layer l (nin inputs) is stored, relative to its weights. */
PRN__FN size_t prn__fr_at(const prn_rnn_framef *f, size_t nin, size_t k, size_t col) {
    size_t K = nin + f->H, w = f->bw;
    return (col / w * K + k) * w + col % w;
}
PRN__FN int prn__fr_finite(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x7f800000u) != 0x7f800000u;
}

/* e^x, sigmoid and tanh for the float frames, written so that they give
 * the same bits in the AVX2 path and the portable one under any compiler
 * flags short of -ffast-math: every product that meets a sum is an explicit
 * fused multiply-add (fmaf, _mm256_fmadd_ps), so there is nothing left for
 * a compiler to contract, and the comparisons are written as MAXPS/MINPS
 * evaluate them. e^x = p 2^n, returned as its two factors: the callers add
 * 1 to p 2^n by one more fused multiply-add. Reduction and polynomial as
 * prn__expf's (within 1 ulp on [-87, 87]; x is clamped there). */
/* e^(-x) (dbl = 0) or e^(2x) (dbl = 1): the clamp acts on x (+-87, +-10),
 * and -x or 2x (exact) is formed beside the rounding to n, off the chain
 * of dependent operations that the step waits on. tanh's clamp at 10
 * gives the same tanh as a wider one (beyond 8.7, e^2x +- 1 rounds to
 * e^2x: the quotient is exactly +-1) and keeps e^2x + 1 below 5e8, so that
 * the LSTM's products of two denominators stay finite where they matter. */
PRN__FN_INLINE void prn__fr_exp(float x, int dbl, float *p_out, float *s_out) {
    const float magic = 12582912.0f, lim = dbl ? 10.0f : 87.0f;
    float t, n, r, r2, a, b, c, p, sc, kx;
    uint32_t ut, um, e;
    x = x > -lim ? x : -lim;
    x = x < lim ? x : lim;
    t = fmaf(x, dbl ? 2.0f * 1.44269504088896341f : -1.44269504088896341f, magic);
    kx = dbl ? x + x : x;
    n = t - magic;
    /* dbl = 0: r holds -r, and the odd coefficients change sign: the same
     * bits (rounding is symmetric) without negating x first */
    r = fmaf(n, dbl ? -0.693359375f : 0.693359375f, kx);
    r = fmaf(n, dbl ? 2.12194440e-4f : -2.12194440e-4f, r);
    /* e^r = 1 + r + r^2 (a + r^2 (b + r^2 c)) by Estrin's scheme: a shorter
     * chain of dependent operations than Horner's (the step waits on it) */
    r2 = r * r;
    a = fmaf(dbl ? 1.6666665459e-1f : -1.6666665459e-1f, r, 5.0000001201e-1f);
    b = fmaf(dbl ? 8.3334519073e-3f : -8.3334519073e-3f, r, 4.1665795894e-2f);
    c = fmaf(dbl ? 1.9875691500e-4f : -1.9875691500e-4f, r, 1.3981999507e-3f);
    p = fmaf(r2, fmaf(r2, c, b), a);
    p = fmaf(r2, p, dbl ? r + 1.0f : 1.0f - r);
    memcpy(&ut, &t, sizeof ut);
    memcpy(&um, &magic, sizeof um);
    e = (ut - um + 127u) << 23;
    memcpy(&sc, &e, sizeof sc);
    *p_out = p;
    *s_out = sc;
}
PRN__FN_INLINE float prn__fr_sigm(float x) {
    float p, s;
    prn__fr_exp(x, 0, &p, &s);
    return 1.0f / fmaf(p, s, 1.0f);
}
/* (e^2x - 1) / (e^2x + 1): numerator and denominator side by side */
PRN__FN_INLINE float prn__fr_tanh(float x) {
    float p, s;
    prn__fr_exp(x, 1, &p, &s);
    return fmaf(p, s, -1.0f) / fmaf(p, s, 1.0f);
}
/* a[r][i] = bias[i] + sum_k<nx W[k][i] x_r[k] and a2[r][i] = bias2[i] +
 * sum_k<nh W[nx+k][i] h_r[k] for R rows and nb blocks of bw columns
 * ([nx + nh][bw] each, contiguous): two chains of fused multiply-adds in k
 * order (bias2 NULL: from zero), whichever path computes them; a2 NULL:
 * a = their sum. */
PRN__FN void prn__fr_mv_ref(size_t bw, const float *W, size_t nb, const float *bias, const float *bias2, const float *x,
                            size_t xs, size_t nx, const float *h, size_t hs, size_t nh, size_t R, float *a, float *a2,
                            size_t as) {
    size_t r, v, i, k;
    for (r = 0; r < R; ++r)
        for (v = 0; v < nb; ++v) {
            const float *w = W + v * (nx + nh) * bw;
            float acc[16], acc2[16];
            for (i = 0; i < bw; ++i) acc[i] = bias[bw * v + i], acc2[i] = bias2 ? bias2[bw * v + i] : 0.0f;
            for (k = 0; k < nx; ++k, w += bw)
                for (i = 0; i < bw; ++i) acc[i] = fmaf(w[i], x[r * xs + k], acc[i]);
            for (k = 0; k < nh; ++k, w += bw)
                for (i = 0; i < bw; ++i) acc2[i] = fmaf(w[i], h[r * hs + k], acc2[i]);
            for (i = 0; i < bw; ++i)
                if (a2) a[r * as + bw * v + i] = acc[i], a2[r * as + bw * v + i] = acc2[i];
                else a[r * as + bw * v + i] = acc[i] + acc2[i];
        }
}
/* The gates of one row: a [N] the input's preactivations, q [N] the
 * state's (GRU, MHGRU; Elman and LSTM: a holds their sums and q is not
 * read); h and c [Hp] updated in place. */
PRN__FN void prn__fr_gates_ref(int kind, int relu, size_t Hp, const float *a, const float *q, float *h, float *c) {
    size_t i;
    for (i = 0; i < Hp; ++i) {
        if (kind == PRN_RNN_ELMAN) {
            float p = a[i]; /* the two preactivations' sum (prn__fr_mv_ref with a2 NULL) */
            h[i] = relu ? (p > 0.0f ? p : 0.0f) : prn__fr_tanh(p);
        } else if (kind == PRN_RNN_LSTM) {
            /* three divisions, not five (division is the slowest operation
             * of the step): with sigmoid 1 / Dx and tanh Nx / Dx,
             * c' = c / Df + Ng / (Di Dg) and h = Nc / (Do Dc). A product
             * of denominators beyond FLT_MAX (Di or Do above 7e29, as Dg and
             * Dc stay below 5e8) gives 0 where the exact value is below
             * 1.5e-30. */
            float pi, si, pf, sf, pg, sg, po, so, pc, sc, cn;
            prn__fr_exp(a[i], 0, &pi, &si); /* a: the sums, as for Elman */
            prn__fr_exp(a[Hp + i], 0, &pf, &sf);
            prn__fr_exp(a[2 * Hp + i], 1, &pg, &sg);
            prn__fr_exp(a[3 * Hp + i], 0, &po, &so);
            cn = c[i] / fmaf(pf, sf, 1.0f) + fmaf(pg, sg, -1.0f) / (fmaf(pi, si, 1.0f) * fmaf(pg, sg, 1.0f));
            c[i] = cn;
            prn__fr_exp(cn, 1, &pc, &sc);
            h[i] = fmaf(pc, sc, -1.0f) / (fmaf(po, so, 1.0f) * fmaf(pc, sc, 1.0f));
        } else { /* GRU, MHGRU */
            float rg = prn__fr_sigm(a[i] + q[i]), zg = prn__fr_sigm(a[Hp + i] + q[Hp + i]);
            float n = prn__fr_tanh(fmaf(rg, q[2 * Hp + i], a[2 * Hp + i]));
            h[i] = fmaf(zg, h[i] - n, n);
        }
    }
}

#if defined(PRN__HAVE_AVX2) || defined(PRN__HAVE_AVX512)
/* the tiles' type: a tile of prn__fr_mv<w>'s (see FR_SIMD in TEMPLATES) */
typedef void (*prn__fr_tile_fn)(const float *, size_t, const float *, const float *, const float *, size_t, size_t, const float *,
                                size_t, size_t, float *, float *, size_t);
#endif
#ifdef PRN__HAVE_AVX2
/* The same operations eight units at a time: prn__fr_exp8, _sigm8,
 * _tanh8, _gates8, the tiles prn__fr_tile<NV>x<NR>_8 and prn__fr_mv8:
 * TEMPLATE FR_SIMD */
#define PRN__TPL_FR_SIMD
#define PRN__SFX 8
#define PRN__ATTR PRN__AVX2
#include PARRNN_SELF_PATH
#endif
#ifdef PRN__HAVE_AVX512
/* sixteen at a time (prn__fr_exp16 ... prn__fr_mv16): TEMPLATE FR_SIMD */
#define PRN__TPL_FR_SIMD
#define PRN__SFX 16
#define PRN__ATTR PRN__AVX512
#include PARRNN_SELF_PATH
#endif

/* nb: blocks of f->bw columns */
PRN__FN_INLINE void prn__fr_mv(const prn_rnn_framef *f, const float *W, size_t nb, const float *bias, const float *bias2, const float *x, size_t xs,
                        size_t nx, const float *h, size_t hs, size_t nh, size_t R, float *a, float *a2, size_t as) {
#ifdef PRN__HAVE_AVX512
    if (f->path == 2) { prn__fr_mv16(W, nb, bias, bias2, x, xs, nx, h, hs, nh, R, a, a2, as); return; }
#endif
#ifdef PRN__HAVE_AVX2
    if (f->path == 1) { prn__fr_mv8(W, nb, bias, bias2, x, xs, nx, h, hs, nh, R, a, a2, as); return; }
#endif
    prn__fr_mv_ref(f->bw, W, nb, bias, bias2, x, xs, nx, h, hs, nh, R, a, a2, as);
}
PRN__FN void prn__fr_gates(const prn_rnn_framef *f, const float *a, const float *q, float *h, float *c) {
#ifdef PRN__HAVE_AVX512
    if (f->path == 2) { prn__fr_gates16(f->kind, f->relu, f->Hp, a, q, h, c); return; }
#endif
#ifdef PRN__HAVE_AVX2
    if (f->path == 1) { prn__fr_gates8(f->kind, f->relu, f->Hp, a, q, h, c); return; }
#endif
    prn__fr_gates_ref(f->kind, f->relu, f->Hp, a, q, h, c);
}

PRN__DEF void prn_rnn_framef_free(prn_rnn_framef *f) {
    if (!f) return;
    prn_free(f->rnn->ctx, f->mem);
    prn_free(f->rnn->ctx, f);
}
PRN__DEF size_t prn_rnn_framef_memory(const prn_rnn_framef *f) { return f ? f->bytes : 0; }
PRN__DEF const char *prn_rnn_framef_path(const prn_rnn_framef *f) {
    return !f ? "" : f->path == 2 ? "avx512" : f->path == 1 ? "avx2" : "portable";
}

/* Downloads every parameter as doubles (an allocation: sync is not a
 * per-frame call), checks them, and repacks them; nothing changes unless
 * every value is finite and fits a float. */
PRN__DEF prn_status prn_rnn_framef_sync(prn_rnn_framef *f) {
    static const char fn[] = "prn_rnn_framef_sync";
    const prn_rnn *r;
    prn_context *ctx;
    double *tmp;
    size_t n = 0, off, i, j, g, G, H, Hp, N, In;
    int p, l;
    prn_status st = PRN_OK;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    r = f->rnn;
    ctx = r->ctx;
    for (p = 0; p < r->np; ++p) n += r->p[p]->numel;
    tmp = (double *)prn_alloc(ctx, (n ? n : 1) * sizeof *tmp);
    if (!tmp) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for a host copy of %lu parameters", fn, (unsigned long)n);
    for (p = 0, off = 0; p < r->np && st == PRN_OK; off += r->p[p]->numel, ++p) {
        st = prn__in_fn(ctx, fn, prn__download_f64(r->p[p], tmp + off));
        for (i = 0; st == PRN_OK && i < r->p[p]->numel; ++i)
            if (!(fabs(tmp[off + i]) <= (double)FLT_MAX))
                st = PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: parameter '%s' [%lu] is %g: not a finite float", fn, r->names[p],
                              (unsigned long)i, tmp[off + i]);
    }
    if (st != PRN_OK) { prn_free(ctx, tmp); return st; }
    H = f->H, Hp = f->Hp, N = f->N, In = f->In;
    G = f->kind == PRN_RNN_LSTM ? 4 : f->kind == PRN_RNN_ELMAN ? 1 : 3;
    memset(f->w, 0, (prn__fr_woff(f, f->L) + 2 * (size_t)f->L * N) * sizeof *f->w); /* bias follows w */
#define PRN__FR_W(k_, col_) W[prn__fr_at(f, nin, (k_), (col_))]
    for (l = 0; l < f->L; ++l) {
        size_t nin = l == 0 ? In : H, k = r->hk;
        const double *role[PRN__R_COUNT];
        float *W = f->w + prn__fr_woff(f, l), *b = f->bias + 2 * (size_t)l * N;
        int q;
        for (q = 0; q < PRN__R_COUNT; ++q) {
            role[q] = NULL;
            for (p = 0, off = 0; p < r->np; off += r->p[p]->numel, ++p)
                if (r->role[l][q] == r->p[p]) role[q] = tmp + off;
        }
        for (g = 0; g < G; ++g) {
            size_t cx = g * Hp, ch = cx;
            for (i = 0; i < H; ++i) {
                /* the row of unit i of gate g: gate-major (torch) within each
                 * head; MHGRU's weight_hh is [heads, 3k, k] */
                size_t hd = i / k, row = hd * G * k + g * k + i % k;
                for (j = 0; j < nin; ++j) PRN__FR_W(j, cx + i) = (float)role[PRN__R_WIN][row * nin + j];
                if (f->kind == PRN_RNN_MHGRU)
                    for (j = 0; j < k; ++j) PRN__FR_W(nin + hd * k + j, ch + i) = (float)role[PRN__R_WHH][row * k + j];
                else
                    for (j = 0; j < H; ++j) PRN__FR_W(nin + j, ch + i) = (float)role[PRN__R_WHH][row * H + j];
                b[cx + i] = (float)role[PRN__R_BIN][row];
                b[N + cx + i] = (float)role[PRN__R_BHH][row];
            }
        }
    }
    if (f->O) {
        const double *ro_w = NULL, *ro_b = NULL;
        for (p = 0, off = 0; p < r->np; off += r->p[p]->numel, ++p) {
            if (r->p[p] == r->ro_w) ro_w = tmp + off;
            if (r->p[p] == r->ro_b) ro_b = tmp + off;
        }
#undef PRN__FR_W
        memset(f->wo, 0, (H + 1) * f->Op * sizeof *f->wo); /* bo follows wo */
        for (i = 0; i < f->O; ++i) {
            for (j = 0; j < H; ++j) f->wo[(i / f->bw * H + j) * f->bw + i % f->bw] = (float)ro_w[i * H + j];
            f->bo[i] = ro_b ? (float)ro_b[i] : 0.0f;
        }
    }
    prn_free(ctx, tmp);
    return PRN_OK;
}

PRN__DEF prn_status prn_rnn_framef_create(const prn_rnn *rnn, size_t batch, prn_rnn_framef **out) {
    static const char fn[] = "prn_rnn_framef_create";
    prn_context *ctx;
    prn_rnn_framef *f;
    size_t nw, nst, nf, G;
    prn_status st;
    if (!rnn) return PRN_ERR_NULL_ARGUMENT;
    ctx = rnn->ctx;
    PRN__CHECK_OUT(ctx, fn, out);
    if (rnn->D != 1)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'rnn' is bidirectional; frames step forward in time only", fn);
    if (!prn__rnn_torch(rnn->cfg.kind))
        return PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "%s: argument 'rnn' is a %s; float frames step Elman, GRU, MHGRU and LSTM "
                        "networks (prn_rnn_frame_create steps every kind in doubles)", fn, prn_rnn_kind_name(rnn->cfg.kind));
    if (batch < 1 || batch > ((size_t)1 << 32))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'batch' is %lu; must be 1 .. 2^32", fn, (unsigned long)batch);
    f = (prn_rnn_framef *)prn_alloc(ctx, sizeof *f);
    if (!f) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(f, 0, sizeof *f);
    f->rnn = rnn;
    f->B = batch;
    f->L = rnn->L;
    f->kind = (int)rnn->cfg.kind;
    f->relu = rnn->cfg.relu;
    f->In = rnn->cfg.input_size;
    f->H = rnn->H;
    f->Hp = (rnn->H + 7) / 8 * 8;
    G = rnn->cfg.kind == PRN_RNN_LSTM ? 4 : rnn->cfg.kind == PRN_RNN_ELMAN ? 1 : 3;
    f->N = G * f->Hp;
    f->O = rnn->cfg.output_size;
    f->bw = 8;
#ifdef PRN__HAVE_AVX2
    if (prn__cpu_avx2()) f->path = 1;
#endif
#ifdef PRN__HAVE_AVX512
    /* sixteen-unit blocks where the padded gates are whole blocks of 16 */
    if (f->path == 1 && f->Hp % 16 == 0 && __builtin_cpu_supports("avx512f")) f->path = 2, f->bw = 16;
#endif
    f->Op = (f->O + f->bw - 1) / f->bw * f->bw;
    nw = prn__fr_woff(f, f->L) + 2 * (size_t)f->L * f->N + (f->O ? (f->H + 1) * f->Op : 0);
    nst = (size_t)f->L * batch * f->Hp * (rnn->cfg.kind == PRN_RNN_LSTM ? 2 : 1);
    nf = nw + nst + 8 * f->N + 4 * f->Op;
    f->mem = prn_alloc(ctx, nf * sizeof(float) + 64);
    if (!f->mem) {
        prn_free(ctx, f);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for %lu floats of weights, state and workspace", fn,
                        (unsigned long)nf);
    }
    f->bytes = sizeof *f + nf * sizeof(float) + 64;
    f->w = (float *)(((uintptr_t)f->mem + 63) & ~(uintptr_t)63); /* every block a multiple of bw floats: aligned */
    f->bias = f->w + prn__fr_woff(f, f->L);
    f->wo = f->bias + 2 * (size_t)f->L * f->N;
    f->bo = f->wo + f->H * f->Op;
    f->h = f->w + nw;
    f->c = rnn->cfg.kind == PRN_RNN_LSTM ? f->h + (size_t)f->L * batch * f->Hp : NULL;
    f->a = f->h + nst;
    f->yo = f->a + 8 * f->N;
    prn_rnn_framef_reset(f);
    st = prn_rnn_framef_sync(f);
    if (st != PRN_OK) {
        prn_rnn_framef_free(f);
        return prn__in_fn(ctx, fn, st);
    }
    *out = f;
    return PRN_OK;
}

PRN__DEF void prn_rnn_framef_reset(prn_rnn_framef *f) {
    if (!f) return;
    memset(f->h, 0, (size_t)f->L * f->B * f->Hp * (f->c ? 2 : 1) * sizeof *f->h);
}
PRN__DEF prn_status prn_rnn_framef_reset_row(prn_rnn_framef *f, size_t row) {
    int l;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (row >= f->B)
        return PRN__ERR(f->rnn->ctx, PRN_ERR_INVALID_ARGUMENT, "prn_rnn_framef_reset_row: argument 'row' is %lu; the batch has %lu",
                        (unsigned long)row, (unsigned long)f->B);
    for (l = 0; l < f->L; ++l) {
        size_t o = ((size_t)l * f->B + row) * f->Hp;
        memset(f->h + o, 0, f->Hp * sizeof *f->h);
        if (f->c) memset(f->c + o, 0, f->Hp * sizeof *f->c);
    }
    return PRN_OK;
}
/* The state in the double frames' layout: [L, B, S], S = H (h) or 2H (h, c). */
PRN__DEF prn_status prn_rnn_framef_set_state(prn_rnn_framef *f, const float *state) {
    size_t n, i, lb, H;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (!state) return PRN__ERR(f->rnn->ctx, PRN_ERR_NULL_ARGUMENT, "prn_rnn_framef_set_state: argument 'state' is NULL");
    H = f->H;
    n = (size_t)f->L * f->B * f->rnn->S;
    for (i = 0; i < n; ++i)
        if (!prn__fr_finite(state[i]))
            return PRN__ERR(f->rnn->ctx, PRN_ERR_NONFINITE, "prn_rnn_framef_set_state: argument 'state' [%lu] is %g", (unsigned long)i,
                            (double)state[i]);
    for (lb = 0; lb < (size_t)f->L * f->B; ++lb) {
        memcpy(f->h + lb * f->Hp, state + lb * f->rnn->S, H * sizeof *state);
        if (f->c) memcpy(f->c + lb * f->Hp, state + lb * f->rnn->S + H, H * sizeof *state);
    }
    return PRN_OK;
}
PRN__DEF prn_status prn_rnn_framef_get_state(const prn_rnn_framef *f, float *state) {
    size_t lb, H;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    if (!state) return PRN__ERR(f->rnn->ctx, PRN_ERR_NULL_ARGUMENT, "prn_rnn_framef_get_state: argument 'state' is NULL");
    H = f->H;
    for (lb = 0; lb < (size_t)f->L * f->B; ++lb) {
        memcpy(state + lb * f->rnn->S, f->h + lb * f->Hp, H * sizeof *state);
        if (f->c) memcpy(state + lb * f->rnn->S + H, f->c + lb * f->Hp, H * sizeof *state);
    }
    return PRN_OK;
}

PRN__DEF prn_status prn_rnn_framef_step(prn_rnn_framef *f, const float *x, float *y) {
    static const char fn[] = "prn_rnn_framef_step";
    size_t In, H, Hp, N, B, b0, R, i, r;
    int l;
    if (!f) return PRN_ERR_NULL_ARGUMENT;
    In = f->In, H = f->H, Hp = f->Hp, N = f->N, B = f->B;
    if (!x && In) return PRN__ERR(f->rnn->ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'x' is NULL but input_size is %lu", fn, (unsigned long)In);
    /* before any change: a refused frame leaves the state as it was. One
     * test of the whole input (a loop the compiler can vectorise), then the
     * search for the value to name */
    if (!prn__all_finite_f32(x, B * In))
        for (i = 0; i < B * In; ++i)
            if (!prn__fr_finite(x[i]))
                return PRN__ERR(f->rnn->ctx, PRN_ERR_NONFINITE, "%s: argument 'x' [%lu] (row %lu) is %g", fn, (unsigned long)i,
                            (unsigned long)(i / In), (double)x[i]);
    for (l = 0; l < f->L; ++l) {
        const float *W = f->w + prn__fr_woff(f, l), *bias = f->bias + 2 * (size_t)l * N;
        float *hl = f->h + (size_t)l * B * Hp, *cl = f->c ? f->c + (size_t)l * B * Hp : NULL;
        const float *in = l == 0 ? x : f->h + (size_t)(l - 1) * B * Hp;
        size_t nin = l == 0 ? In : H, is = l == 0 ? In : Hp;
        for (b0 = 0; b0 < B; b0 += R) {
            R = B - b0 >= 4 ? 4 : B - b0 >= 2 ? 2 : 1;
            const float *xr = in ? in + b0 * is : NULL, *hr = hl + b0 * Hp;
            /* a [R, N] the input's preactivations, then [R, N] the state's;
             * Elman and LSTM need only their sums (the same additions) */
            prn__fr_mv(f, W, N / f->bw, bias, bias + N, xr, is, nin, hr, Hp, H, R, f->a,
                       f->kind == PRN_RNN_ELMAN || f->kind == PRN_RNN_LSTM ? NULL : f->a + 4 * N, N);
            for (r = 0; r < R; ++r)
                prn__fr_gates(f, f->a + r * N, f->a + (4 + r) * N, hl + (b0 + r) * Hp, cl ? cl + (b0 + r) * Hp : NULL);
        }
    }
    if (y) {
        const float *top = f->h + (size_t)(f->L - 1) * B * Hp;
        for (b0 = 0; b0 < B; b0 += R) {
            R = B - b0 >= 4 ? 4 : B - b0 >= 2 ? 2 : 1;
            if (f->O) {
                prn__fr_mv(f, f->wo, f->Op / f->bw, f->bo, NULL, top + b0 * Hp, Hp, H, NULL, 0, 0, R, f->yo, NULL, f->Op);
                for (r = 0; r < R; ++r) memcpy(y + (b0 + r) * f->O, f->yo + r * f->Op, f->O * sizeof *y);
            } else {
                for (r = 0; r < R; ++r) memcpy(y + (b0 + r) * H, top + (b0 + r) * Hp, H * sizeof *y);
            }
        }
    }
    return PRN_OK;
}

/* --- model files ----------------------------------------------------------- */
/* A file or stream read in pieces, never more than ctx->max_file_bytes:
 * the buffer grows with the bytes that arrive, not with what a header
 * claims. */
typedef struct prn__rd {
    FILE *fp;
    const char *path;
    unsigned char *buf;
    size_t n, cap, limit;
    int eof, nul;  /* end of the stream; a NUL byte was read (stop_at_nul) */
} prn__rd;
PRN__FN prn_status prn__rd_open(prn_context *ctx, const char *fn, const char *path, prn__rd *rd) {
    memset(rd, 0, sizeof *rd);
    rd->path = path;
    rd->limit = ctx->max_file_bytes < SIZE_MAX ? ctx->max_file_bytes : SIZE_MAX - 1;
    rd->fp = fopen(path, "rb");
    if (!rd->fp) return PRN__ERR(ctx, PRN_ERR_IO, "%s: cannot open '%s'", fn, path);
    return PRN_OK;
}
PRN__FN void prn__rd_close(prn_context *ctx, prn__rd *rd) {
    if (rd->fp) fclose(rd->fp);
    prn_free(ctx, rd->buf);
    memset(rd, 0, sizeof *rd);
}
/* Reads until rd->n >= want, the end, or (stop_at_nul) a NUL byte. More
 * than the limit: PRN_ERR_FORMAT. */
PRN__FN prn_status prn__rd_fill(prn_context *ctx, const char *fn, prn__rd *rd, size_t want, int stop_at_nul) {
    if (want > rd->limit + 1) want = rd->limit + 1;
    while (!rd->eof && !rd->nul && rd->n < want) {
        size_t got, room;
        if (rd->n == rd->cap) {
            size_t nc = rd->cap ? (rd->cap < want - rd->cap ? 2 * rd->cap : want) : (want < 4096 ? want : 4096);
            unsigned char *nb = (unsigned char *)prn_alloc(ctx, nc);
            if (!nb) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory reading '%s'", fn, rd->path);
            if (rd->n) memcpy(nb, rd->buf, rd->n);
            prn_free(ctx, rd->buf);
            rd->buf = nb;
            rd->cap = nc;
        }
        room = rd->cap - rd->n < want - rd->n ? rd->cap - rd->n : want - rd->n;
        got = fread(rd->buf + rd->n, 1, room, rd->fp);
        if (stop_at_nul && got && memchr(rd->buf + rd->n, 0, got)) rd->nul = 1;
        rd->n += got;
        if (got == 0) {
            if (ferror(rd->fp)) return PRN__ERR(ctx, PRN_ERR_IO, "%s: reading '%s' failed", fn, rd->path);
            rd->eof = 1;
        }
    }
    if (rd->n > rd->limit)
        return PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' is longer than %lu bytes, the limit (prn_config.max_file_bytes)",
                        fn, rd->path, (unsigned long)rd->limit);
    return PRN_OK;
}
PRN__FN uint32_t prn__crc32(uint32_t crc, const unsigned char *p, size_t n) {
    size_t i;
    int k;
    crc = ~crc;
    for (i = 0; i < n; ++i) {
        crc ^= p[i];
        for (k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
PRN__FN void prn__le(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
PRN__FN uint64_t prn__rd_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    int i;
    for (i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
#define PRN__RNN_MAGIC "PRNRNN\r\n"
#define PRN__RNN_HEAD (8 + 4 + 6 * 4 + 6 * 8)

PRN__DEF prn_status prn_rnn_save(const prn_rnn *rnn, const char *path) {
    static const char fn[] = "prn_rnn_save";
    prn_context *ctx;
    size_t total = PRN__RNN_HEAD + 4, i, off, es;
    unsigned char *buf;
    double *host = NULL;
    prn_status st = PRN_OK;
    FILE *fp;
    int j;
    if (!rnn) return PRN_ERR_NULL_ARGUMENT;
    ctx = rnn->ctx;
    if (!path) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'path' is NULL", fn);
    es = prn_dtype_size(rnn->cfg.dtype);
    for (j = 0; j < rnn->np; ++j) total += 8 + rnn->p[j]->numel * es;
    buf = (unsigned char *)prn_alloc(ctx, total);
    if (!buf) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory for %lu bytes", fn, (unsigned long)total);
    memcpy(buf, PRN__RNN_MAGIC, 8);
    prn__le(buf + 8, PRN_RNN_FILE_VERSION, 4);
    prn__le(buf + 12, (uint64_t)rnn->cfg.kind, 4);
    prn__le(buf + 16, (uint64_t)rnn->cfg.dtype, 4);
    prn__le(buf + 20, (uint64_t)rnn->cfg.num_layers, 4);
    prn__le(buf + 24, (uint64_t)rnn->cfg.bidirectional, 4);
    prn__le(buf + 28, (uint64_t)rnn->cfg.relu, 4);
    prn__le(buf + 32, (uint64_t)rnn->np, 4);
    prn__le(buf + 36, rnn->cfg.input_size, 8);
    prn__le(buf + 44, rnn->cfg.hidden_size, 8);
    prn__le(buf + 52, rnn->cfg.num_heads, 8);
    prn__le(buf + 60, rnn->cfg.shallow_size, 8);
    prn__le(buf + 68, rnn->cfg.num_relu, 8);
    prn__le(buf + 76, rnn->cfg.output_size, 8);
    off = PRN__RNN_HEAD;
    for (j = 0; j < rnn->np && st == PRN_OK; ++j) {
        const prn_tensor *t = rnn->p[j];
        host = (double *)prn_alloc(ctx, (t->numel ? t->numel : 1) * sizeof *host);
        if (!host) { st = PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn); break; }
        st = prn__in_fn(ctx, fn, prn__download_f64(t, host));
        prn__le(buf + off, t->numel, 8);
        off += 8;
        for (i = 0; st == PRN_OK && i < t->numel; ++i, off += es) {
            if (es == 8) { uint64_t u; memcpy(&u, &host[i], 8); prn__le(buf + off, u, 8); }
            else { float v = (float)host[i]; uint32_t u; memcpy(&u, &v, 4); prn__le(buf + off, u, 4); }
        }
        prn_free(ctx, host);
        host = NULL;
    }
    if (st == PRN_OK) {
        prn__le(buf + off, prn__crc32(0, buf, off), 4);
        fp = fopen(path, "wb");
        if (!fp) st = PRN__ERR(ctx, PRN_ERR_IO, "%s: cannot open '%s' for writing", fn, path);
        else {
            if (fwrite(buf, 1, total, fp) != total) st = PRN__ERR(ctx, PRN_ERR_IO, "%s: writing '%s' failed", fn, path);
            if (fclose(fp) != 0 && st == PRN_OK) st = PRN__ERR(ctx, PRN_ERR_IO, "%s: closing '%s' failed", fn, path);
        }
    }
    prn_free(ctx, buf);
    return st;
}


PRN__DEF prn_status prn_rnn_load(prn_context *ctx, const char *path, prn_rnn **out) {
    static const char fn[] = "prn_rnn_load";
    prn__rd rd;
    prn_rnn_config c;
    prn_rnn *r = NULL;
    prn_status st = PRN_OK;
    uint64_t v = 0, need = 0;
    size_t off, i, es, maxp;
    prn__pspec *sp = NULL;
    double *host = NULL;
    int j, np = 0, nsp = 0;
    PRN__CTX(ctx, fn);
    PRN__CHECK_OUT(ctx, fn, out);
    if (!path) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'path' is NULL", fn);
    PRN__TRY(prn__rd_open(ctx, fn, path, &rd));
    /* The header first: what it claims is checked against the bytes that
     * are there before anything is allocated for it. */
    st = prn__rd_fill(ctx, fn, &rd, PRN__RNN_HEAD + 4, 0);
    if (st == PRN_OK) {
        if (rd.n < 8 || memcmp(rd.buf, PRN__RNN_MAGIC, 8) != 0)
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' is not a parrnn model file (bad magic)", fn, path);
        else if (rd.n < PRN__RNN_HEAD + 4)
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' is truncated (%lu bytes, shorter than the header)", fn, path,
                          (unsigned long)rd.n);
        else if ((v = prn__rd_le(rd.buf + 8, 4)) != PRN_RNN_FILE_VERSION)
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' has format version %lu; this library reads version %d", fn, path,
                          (unsigned long)v, PRN_RNN_FILE_VERSION);
    }
    memset(&c, 0, sizeof c);
    if (st == PRN_OK) {
        prn_rnn_config raw;
        const unsigned char *buf = rd.buf;
        memset(&raw, 0, sizeof raw);
        raw.kind = (prn_rnn_kind)prn__rd_le(buf + 12, 4);
        raw.dtype = (prn_dtype)prn__rd_le(buf + 16, 4);
        raw.num_layers = (int)prn__rd_le(buf + 20, 4);
        raw.bidirectional = (int)prn__rd_le(buf + 24, 4);
        raw.relu = (int)prn__rd_le(buf + 28, 4);
        np = (int)prn__rd_le(buf + 32, 4);
        raw.input_size = (size_t)prn__rd_le(buf + 36, 8);
        raw.hidden_size = (size_t)prn__rd_le(buf + 44, 8);
        raw.num_heads = (size_t)prn__rd_le(buf + 52, 8);
        raw.shallow_size = (size_t)prn__rd_le(buf + 60, 8);
        raw.num_relu = (size_t)prn__rd_le(buf + 68, 8);
        raw.output_size = (size_t)prn__rd_le(buf + 76, 8);
        st = prn__rnn_check(ctx, fn, &raw, &c);
        if (st != PRN_OK) {
            char why[512];
            strncpy(why, prn_last_error(ctx), sizeof why - 1);
            why[sizeof why - 1] = 0;
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' holds an invalid configuration: %s", fn, path, why);
        } else {
            maxp = prn__rnn_max_params(&c);
            sp = (prn__pspec *)prn_alloc(ctx, maxp * sizeof *sp);
            if (!sp) st = PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
            else nsp = prn__rnn_layout(&c, sp);
            if (st == PRN_OK && np != nsp)
                st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' has %d parameters; its configuration has %d", fn, path, np, nsp);
        }
    }
    es = prn_dtype_size(c.dtype);
    if (st == PRN_OK) {
        /* The file's length as the configuration says (the sum saturates:
         * a length past the limit is refused below either way). */
        need = PRN__RNN_HEAD + 4;
        for (j = 0; j < nsp; ++j) {
            uint64_t n = prn__pspec_numel(&sp[j]), add = 8 + n * es;
            need = need + add < need || n > ((uint64_t)1 << 60) ? UINT64_MAX : need + add;
        }
        st = prn__rd_fill(ctx, fn, &rd, need < (uint64_t)rd.limit ? (size_t)need + 1 : rd.limit + 1, 0);
        if (st == PRN_OK && rd.n < need)
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' is truncated: %lu bytes; its configuration needs %.0f", fn, path,
                          (unsigned long)rd.n, (double)need);
        else if (st == PRN_OK && rd.n > need)
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' has bytes after its parameters (its configuration needs %.0f)",
                          fn, path, (double)need);
    }
    if (st == PRN_OK && prn__rd_le(rd.buf + rd.n - 4, 4) != prn__crc32(0, rd.buf, rd.n - 4))
        st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s' fails its checksum (corrupted or truncated)", fn, path);
    /* Every count and value is checked before the network is built. */
    off = PRN__RNN_HEAD;
    for (j = 0; st == PRN_OK && j < nsp; ++j) {
        uint64_t n = prn__pspec_numel(&sp[j]);
        char name[40];
        snprintf(name, sizeof name, sp[j].ld < 0 ? "%s" : "%s_l%d%s", sp[j].name, sp[j].ld / (c.bidirectional ? 2 : 1),
                 sp[j].ld % 2 && c.bidirectional ? "_reverse" : "");
        if ((v = prn__rd_le(rd.buf + off, 8)) != n) {
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: '%s': parameter %s does not have the %lu values its shape needs", fn,
                          path, name, (unsigned long)n);
            break;
        }
        off += 8;
        for (i = 0; i < n; ++i, off += es) {
            double x;
            if (es == 8) { uint64_t u = prn__rd_le(rd.buf + off, 8); memcpy(&x, &u, 8); }
            else { uint32_t u = (uint32_t)prn__rd_le(rd.buf + off, 4); float fv; memcpy(&fv, &u, 4); x = fv; }
            if (!(x - x == 0)) {
                st = PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: '%s': parameter %s holds NaN or Inf (value %lu)", fn, path,
                              name, (unsigned long)i);
                break;
            }
        }
    }
    prn_free(ctx, sp);
    if (st == PRN_OK) st = prn__rnn_build(ctx, fn, &c, 0, &r);
    off = PRN__RNN_HEAD;
    for (j = 0; st == PRN_OK && j < r->np; ++j) {
        prn_tensor *t = r->p[j];
        off += 8;
        host = (double *)prn_alloc(ctx, (t->numel ? t->numel : 1) * sizeof *host);
        if (!host) { st = PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn); break; }
        for (i = 0; i < t->numel; ++i, off += es) {
            if (es == 8) { uint64_t u = prn__rd_le(rd.buf + off, 8); memcpy(&host[i], &u, 8); }
            else { uint32_t u = (uint32_t)prn__rd_le(rd.buf + off, 4); float fv; memcpy(&fv, &u, 4); host[i] = fv; }
        }
        st = prn__in_fn(ctx, fn, prn__upload_f64(t, host));
        prn_free(ctx, host);
        host = NULL;
    }
    prn__rd_close(ctx, &rd);
    if (st != PRN_OK) { prn_rnn_free(r); return st; }
    *out = r;
    return PRN_OK;
}

#ifndef PARRNN_NO_DEER
/* ------------------------------------------------------------------------
 * DEER (API section): Newton iterations of batched cell evaluations and
 * scans, all through the table; the adjoint op for the gradients
 * ---------------------------------------------------------------------- */
/* The adaptive trust region rejects an iterate whose residual grew more
 * than this: the residual of converging iterations is not monotone (the
 * converged prefix grows while the tail moves), so only blow-ups count. */
#define PRN__DEER_GROWTH 10.0
/* One recurrence being solved. */
typedef struct prn__deer {
    prn_context *ctx;
    const char *fn;
    const prn_deer_system *cell;
    /* unrecorded sequential evaluation of x [B, T, X] from h0 [B, S] (NULL:
     * step by step through the cell's callbacks) */
    prn_status (*seq)(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *h0, int rev, prn_tensor **y);
    int rev;
    size_t B, T, S, k;  /* k: the exact Jacobian's block size (S: dense) */
    prn_dtype dt;
    prn_deer_options o;  /* defaults filled in */
    /* a built-in cell that the backend's deer_iterate / deer_adjoint can run
     * (NULL: the cell's callbacks): the cell's part of the arguments, and
     * the recurrent parameters that fz->w points into */
    const prn_deer_fused *fz;
    prn_tensor *fzp[4];
} prn__deer;

PRN__FN prn_status prn__deer_view(prn__deer *d, prn_tensor *x, size_t d0, size_t d1, size_t d2, size_t d3, int nd,
                                  prn_tensor **out) {
    size_t s[4];
    s[0] = d0; s[1] = d1; s[2] = d2; s[3] = d3;
    return prn__view(d->ctx, d->fn, x, nd, s, out);
}
/* Block size of J in mode m. */
PRN__FN size_t prn__deer_kb(const prn__deer *d, prn_jacobian_mode m) {
    return m == PRN_JACOBIAN_DIAG ? 1 : m == PRN_JACOBIAN_BLOCK ? d->k : d->S;
}

/* f and its Jacobian at (x rows, state rows) through the cell, checked. */
PRN__FN prn_status prn__deer_jac(prn__deer *d, prn_tensor *xr, prn_tensor *s, prn_jacobian_mode m, prn_tensor **fy,
                                 prn_tensor **J) {
    size_t N = d->B * d->T, want = m == PRN_JACOBIAN_DIAG ? N * d->S : N * d->S * prn__deer_kb(d, m);
    prn_status st;
    *fy = *J = NULL;
    st = d->cell->jacobian(d->ctx, d->cell->user, xr, s, m, fy, J);
    if (st != PRN_OK) {
        prn_tensor_free(*fy); prn_tensor_free(*J); *fy = *J = NULL;
        return prn__in_fn(d->ctx, d->fn, st);
    }
    if (!*fy || !*J || (*fy)->dtype != d->dt || (*J)->dtype != d->dt || (*fy)->numel != N * d->S || (*J)->numel != want) {
        prn_tensor_free(*fy); prn_tensor_free(*J); *fy = *J = NULL;
        return PRN__ERR(d->ctx, PRN_ERR_SHAPE, "%s: the cell's jacobian callback returned next/jac of the wrong dtype "
                        "or size (want %lu and %lu %s values)", d->fn, (unsigned long)(N * d->S), (unsigned long)want,
                        prn_dtype_name(d->dt));
    }
    return PRN_OK;
}

/* 1 when every element of x is finite (x * 0 + 0 is NaN exactly where x is
 * NaN or Inf, and a sum keeps a NaN). */
PRN__FN prn_status prn__deer_finite(prn__deer *d, prn_tensor *x, int *finite) {
    prn_tensor *z = NULL, *zv = NULL, *sm = NULL;
    double v = 0;
    prn_status st;
    *finite = 1;
    if (!x->numel) return PRN_OK;
    if (prn_backend_supports(d->ctx, PRN_SLOT_all_finite, NULL))
        return prn__in_fn(d->ctx, d->fn, d->ctx->be->all_finite(d->ctx, x->dtype, x->numel, x->st->buf, finite));
    st = prn__unary_raw(d->ctx, d->fn, PRN_UNARY_AFFINE, x, 0.0, 0.0, &z);
    if (st == PRN_OK) st = prn__deer_view(d, z, z->numel, 0, 0, 0, 1, &zv);
    if (st == PRN_OK) st = prn__reduce_raw(d->ctx, d->fn, PRN_REDUCE_SUM, zv, 0, 0, &sm);
    if (st == PRN_OK) st = prn_tensor_item(sm, &v);
    prn_tensor_free(z); prn_tensor_free(zv); prn_tensor_free(sm);
    *finite = v == v;
    return st;
}

/* r = max |y - fy| / (atol + rtol |fy|); finite is 0 when any term is not. */
PRN__FN prn_status prn__deer_resid(prn__deer *d, prn_tensor *y, prn_tensor *fy, double *r, int *finite) {
    prn_context *ctx = d->ctx;
    prn_tensor *fv = NULL, *df = NULL, *den = NULL, *q = NULL, *qv = NULL, *mx = NULL;
    prn_status st;
    *r = 0; *finite = 1;
    st = prn__view(ctx, d->fn, fy, y->ndim, y->shape, &fv);
    if (st == PRN_OK) st = prn__binary_raw(ctx, d->fn, PRN_BINARY_SUB, y, fv, &df);
    if (st == PRN_OK) st = prn__in_fn(ctx, d->fn, ctx->be->unary(ctx, PRN_UNARY_ABS, d->dt, df->numel, df->st->buf, df->st->buf, 0, 0));
    if (st == PRN_OK) st = prn__unary_raw(ctx, d->fn, PRN_UNARY_ABS, fv, 0, 0, &den);
    if (st == PRN_OK) st = prn__in_fn(ctx, d->fn, ctx->be->unary(ctx, PRN_UNARY_AFFINE, d->dt, den->numel, den->st->buf, den->st->buf,
                                                                 d->o.rtol, d->o.atol));
    if (st == PRN_OK) st = prn__binary_raw(ctx, d->fn, PRN_BINARY_DIV, df, den, &q);
    if (st == PRN_OK) st = prn__deer_finite(d, q, finite);
    if (st == PRN_OK && *finite) st = prn__deer_view(d, q, q->numel, 0, 0, 0, 1, &qv);
    if (st == PRN_OK && *finite) st = prn__reduce_raw(ctx, d->fn, PRN_REDUCE_MAX, qv, 0, 0, &mx);
    if (st == PRN_OK && *finite) st = prn_tensor_item(mx, r);
    prn_tensor_free(fv); prn_tensor_free(df); prn_tensor_free(den); prn_tensor_free(q); prn_tensor_free(qv); prn_tensor_free(mx);
    return st;
}

/* The previous states of trajectory y [B, T, S] (h0 first) as rows [B*T, S]. */
PRN__FN prn_status prn__deer_prev(prn__deer *d, prn_tensor *y, prn_tensor *h0, prn_tensor **out) {
    prn_tensor *sh = NULL;
    prn_status st = prn__shift_time(d->ctx, d->fn, y, d->B, d->T, d->S, d->rev ? -1 : 1, h0, &sh);
    if (st == PRN_OK) st = prn__deer_view(d, sh, d->B * d->T, d->S, 0, 0, 2, out);
    prn_tensor_free(sh);
    return st;
}

/* One Newton step: y' = scan(A, fy - A yprev) with A = (1 - kappa) J, then
 * NaN -> 0 and clipping. */
PRN__FN prn_status prn__deer_newton(prn__deer *d, prn_tensor *yprev, prn_tensor *fy, prn_tensor *J, double kappa,
                                    prn_tensor *h0, prn_tensor **ynew) {
    prn_context *ctx = d->ctx;
    size_t B = d->B, T = d->T, S = d->S, N = B * T, kb = prn__deer_kb(d, d->o.mode);
    int diag = d->o.mode == PRN_JACOBIAN_DIAG;
    prn_tensor *A = NULL, *Ay = NULL, *Am = NULL, *ym = NULL, *p = NULL, *a = NULL, *a3 = NULL, *fv = NULL, *An = NULL, *y = NULL;
    prn_status st = PRN_OK;
    if (kappa > 0) st = prn__unary_raw(ctx, d->fn, PRN_UNARY_AFFINE, J, 1.0 - kappa, 0.0, &A);
    else A = prn_tensor_retain(J);
    if (st == PRN_OK && diag) st = prn__binary_raw(ctx, d->fn, PRN_BINARY_MUL, A, yprev, &Ay);
    if (st == PRN_OK && !diag) { /* batched k x k matrix-vector products, one per row and block */
        st = prn__deer_view(d, A, N * (S / kb), kb, kb, 0, 3, &Am);
        if (st == PRN_OK) st = prn__deer_view(d, yprev, N * (S / kb), kb, 1, 0, 3, &ym);
        if (st == PRN_OK) st = prn_matmul(ctx, Am, ym, &p);
        if (st == PRN_OK) st = prn__deer_view(d, p, N, S, 0, 0, 2, &Ay);
    }
    if (st == PRN_OK) st = prn__deer_view(d, fy, N, S, 0, 0, 2, &fv);
    if (st == PRN_OK) st = prn__binary_raw(ctx, d->fn, PRN_BINARY_SUB, fv, Ay, &a);
    if (st == PRN_OK) st = prn__deer_view(d, a, B, T, S, 0, 3, &a3);
    if (st == PRN_OK) st = diag ? prn__deer_view(d, A, B, T, S, 0, 3, &An) : prn__deer_view(d, A, B, T, S, kb, 4, &An);
    if (st == PRN_OK) st = diag ? prn_scan_diag(ctx, An, a3, h0, d->rev, d->o.algo, &y)
                                : prn_scan_block(ctx, An, a3, h0, d->rev, d->o.algo, &y);
    if (st == PRN_OK)
        st = prn__in_fn(ctx, d->fn, ctx->be->unary(ctx, PRN_UNARY_CLAMP, d->dt, y->numel, y->st->buf, y->st->buf, d->o.clip, 0.0));
    prn_tensor_free(A); prn_tensor_free(Ay); prn_tensor_free(Am); prn_tensor_free(ym); prn_tensor_free(p);
    prn_tensor_free(a); prn_tensor_free(a3); prn_tensor_free(fv); prn_tensor_free(An);
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *ynew = y;
    return PRN_OK;
}

/* Sequential evaluation (the fall-back), tape off. */
PRN__FN prn_status prn__deer_sequential(prn__deer *d, prn_tensor *x, prn_tensor *h0, prn_tensor **out) {
    prn_context *ctx = d->ctx;
    size_t B = d->B, T = d->T, S = d->S, X = x->shape[2], t, shape[3];
    prn_tensor *y = NULL, *s;
    prn_status st;
    if (d->seq) return d->seq(ctx, d->cell->user, x, h0, d->rev, out);
    s = prn_tensor_retain(h0);
    shape[0] = B; shape[1] = T; shape[2] = S;
    st = prn__tensor_new(ctx, d->fn, d->dt, 3, shape, &y);
    for (t = 0; st == PRN_OK && t < T; ++t) {
        size_t tt = d->rev ? T - 1 - t : t;
        prn_tensor *xs = NULL, *xt = NULL, *nx = NULL, *J = NULL;
        st = prn__slice_raw(ctx, d->fn, x, 1, tt, 1, &xs);
        if (st == PRN_OK) st = prn__deer_view(d, xs, B, X, 0, 0, 2, &xt);
        if (st == PRN_OK) {
            st = d->cell->step ? d->cell->step(ctx, d->cell->user, xt, s, &nx)
                               : d->cell->jacobian(ctx, d->cell->user, xt, s, PRN_JACOBIAN_DIAG, &nx, &J);
            st = prn__in_fn(ctx, d->fn, st);
            if (st == PRN_OK && (!nx || nx->dtype != d->dt || nx->numel != B * S)) {
                st = PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: the cell's %s callback returned a next state of the wrong dtype or size",
                              d->fn, d->cell->step ? "step" : "jacobian");
            }
        }
        if (st == PRN_OK) {
            prn__cw w;
            memset(&w, 0, sizeof w);
            w.ctx = ctx;
            prn__cw_put(&w, y, tt, nx);
            st = prn__in_fn(ctx, d->fn, w.st);
        }
        prn_tensor_free(xs); prn_tensor_free(xt); prn_tensor_free(J);
        prn_tensor_free(s);
        s = nx;
    }
    prn_tensor_free(s);
    if (st != PRN_OK) { prn_tensor_free(y); return st; }
    *out = y;
    return PRN_OK;
}

PRN__FN void prn__deer_stats_merge(prn_deer_stats *to, const prn_deer_stats *s, int first) {
    if (first) { *to = *s; return; }
    if (s->iterations > to->iterations) to->iterations = s->iterations;
    to->converged = to->converged && s->converged;
    to->fell_back |= s->fell_back;
    to->nonfinite |= s->nonfinite;
    to->rejected += s->rejected;
    if (s->residual > to->residual) to->residual = s->residual;
    if (s->damping > to->damping) to->damping = s->damping;
}

/* The iterations of prn__deer_solve by the backend's deer_iterate: each
 * call evaluates the residual of y and the Newton step from y in one pass,
 * with the k the step takes when it is accepted; the decisions (converged,
 * rejected, accepted) are prn__deer_solve's, in the same order. */
/* y = h0 at every step, [B, T, S] */
PRN__FN prn_status prn__deer_h0_guess(prn__deer *d, prn_tensor *h0, prn_tensor **y) {
    prn_tensor *h3 = NULL;
    size_t shape[3];
    prn_status st = prn__deer_view(d, h0, d->B, 1, d->S, 0, 3, &h3);
    shape[0] = d->B; shape[1] = d->T; shape[2] = d->S;
    if (st == PRN_OK) st = prn__expand_raw(d->ctx, d->fn, h3, 3, shape, y);
    prn_tensor_free(h3);
    return st;
}
/* *yio NULL: the default guess, which deer_iterate takes as y = NULL (made
 * only when it is kept) */
/* Whether the backend's fused entry (adjoint 0: deer_iterate, 1:
 * deer_adjoint, which is used only with deer_iterate) takes this cell at
 * these sizes (prn_backend_supports: a backend may take only some sizes). */
PRN__FN int prn__deer_fused_takes(const prn__deer *d, int adjoint) {
    prn_deer_fused a;
    if (!d->fz || !prn_backend_has(d->ctx->be, PRN_SLOT_deer_iterate)) return 0;
    a = *d->fz;
    a.dtype = d->dt; a.mode = d->o.mode; a.reverse = d->rev; a.B = d->B; a.T = d->T;
    return prn_backend_supports(d->ctx, adjoint ? PRN_SLOT_deer_adjoint : PRN_SLOT_deer_iterate, &a);
}
PRN__FN prn_status prn__deer_iters_fused(prn__deer *d, prn_tensor *x, prn_tensor *h0, prn_tensor **yio, int *itp,
                                         double *rp, int *finp, double *kp, prn_deer_stats *stats) {
    prn_context *ctx = d->ctx;
    prn_deer_fused a = *d->fz;
    prn_tensor *y = *yio, *ysave = NULL, *spare = NULL; /* spare: the iterate before, written again */
    double kappa = *kp, rprev = 0, r = 0;
    int it = 0, fin = 1, rejected = 0, K = 1;
    prn_status st = PRN_OK;
    a.dtype = d->dt; a.mode = d->o.mode; a.reverse = d->rev; a.B = d->B; a.T = d->T;
    a.xp = x->st->buf; a.h0 = h0->st->buf;
    a.clip = d->o.clip; a.atol = d->o.atol; a.rtol = d->o.rtol;
    a.g = NULL; a.lam = NULL;
    a.discard_converged = 1; /* a converged call's yn is freed below */
    for (;;) {
        prn_tensor *yn = NULL;
        int step = it < d->o.max_iter;
        /* a success halves k, except right after a rejection (as prn__deer_solve) */
        double kacc = d->o.adaptive && ysave && !rejected ? (0.5 * kappa > d->o.damping + 1e-3 ? 0.5 * kappa : d->o.damping)
                                                          : kappa;
        if (step && spare) { yn = spare; spare = NULL; }
        else if (step) {
            size_t shape[3];
            shape[0] = d->B; shape[1] = d->T; shape[2] = d->S;
            st = prn__tensor_new(ctx, d->fn, d->dt, 3, shape, &yn);
        }
        if (st != PRN_OK) break;
        a.y = y ? y->st->buf : NULL; a.ynew = yn ? yn->st->buf : NULL; a.damping = kacc;
        /* Without adaptive damping the decisions between iterations are the
         * backend's stop rule (converged or not finite), so it may make
         * several in one call: 1, 2, 4, .. 16 a call (few wasted when it
         * stops early), y's buffer the second one, never past max_iter. */
        a.iters = !d->o.adaptive && step && y ? (K < d->o.max_iter - it ? K : d->o.max_iter - it) : 1;
        a.y2 = a.iters > 1 ? y->st->buf : NULL;
        a.done = 0;
        st = prn__in_fn(ctx, d->fn, ctx->be->deer_iterate(ctx, &a));
        if (st == PRN_OK && (a.done < 0 || a.done > (a.iters > 1 ? a.iters : 1)))
            st = PRN__ERR(ctx, PRN_ERR_BACKEND, "%s: the backend's deer_iterate made %d iterations of at most %d", d->fn,
                          a.done, a.iters);
        if (st != PRN_OK) { prn_tensor_free(yn); break; }
        if (!d->o.adaptive && K < 16) K *= 2;
        if (a.done > 1) { /* the ones before the last were accepted steps */
            it += a.done - 1;
            if (a.done % 2 == 0) { prn_tensor *t = y; y = yn; yn = t; } /* the last wrote y2 (y's buffer) */
        }
        r = a.residual; fin = a.finite;
        if (!fin) stats->nonfinite = 1;
        if ((fin && r <= 1) || !step) {
            stats->converged = fin && r <= 1;
            prn_tensor_free(yn);
            if (!y) st = prn__deer_h0_guess(d, h0, &y);
            break;
        }
        if (!y && d->o.adaptive) st = prn__deer_h0_guess(d, h0, &y); /* kept as the last accepted iterate */
        if (st != PRN_OK) { prn_tensor_free(yn); break; }
        if (d->o.adaptive && ysave && (!fin || r > PRN__DEER_GROWTH * rprev) && kappa < 1) {
            prn_tensor_free(yn);
            prn_tensor_free(y);
            y = prn_tensor_retain(ysave);
            kappa = kappa > 0.999 ? 1.0 : 0.5 * (1.0 + kappa);
            stats->rejected++;
            rejected = 1;
        } else {
            if (d->o.adaptive) {
                kappa = kacc;
                rejected = 0;
                prn_tensor_free(ysave);
                ysave = prn_tensor_retain(y);
                rprev = r;
            }
            if (d->o.adaptive || !y) prn_tensor_free(y);
            else spare = y; /* only this loop holds it */
            y = yn;
        }
        ++it;
    }
    prn_tensor_free(spare);
    prn_tensor_free(ysave);
    *yio = y; *itp = it; *rp = r; *finp = fin; *kp = kappa;
    return st;
}

/* The iterations (tape off): y [B, T, S] from x [B, T, X], h0 [B, S] and an
 * optional guess; *Jx gets the exact Jacobians at y ([B, T, S, k]) when the
 * last iteration computed them, else NULL (always with deer_iterate). */
PRN__FN prn_status prn__deer_solve(prn__deer *d, prn_tensor *x, prn_tensor *h0, prn_tensor *guess, prn_tensor **out,
                                   prn_tensor **Jx, prn_deer_stats *stats) {
    prn_context *ctx = d->ctx;
    size_t B = d->B, T = d->T, S = d->S, N = B * T, shape[3];
    prn_tensor *y = NULL, *ysave = NULL, *xr = NULL, *yprev = NULL, *fy = NULL, *J = NULL, *h3 = NULL;
    double kappa = d->o.damping, rprev = 0, r = 0;
    prn_status st;
    int it = 0, fin = 1, rejected = 0, fused = prn__deer_fused_takes(d, 0);
    memset(stats, 0, sizeof *stats);
    *Jx = NULL;
    shape[0] = B; shape[1] = T; shape[2] = S;
    if (guess) st = prn__tensor_like(ctx, d->fn, guess, &y);
    else st = prn__deer_view(d, h0, B, 1, S, 0, 3, &h3);
    if (st == PRN_OK && guess) st = prn__in_fn(ctx, d->fn, ctx->be->buf_copy(ctx, y->st->buf, 0, guess->st->buf, 0, y->st->bytes));
    if (st == PRN_OK && !guess && !fused) st = prn__expand_raw(ctx, d->fn, h3, 3, shape, &y);
    if (st == PRN_OK) st = prn__deer_view(d, x, N, x->shape[2], 0, 0, 2, &xr);
    if (st == PRN_OK && fused) {
        st = prn__deer_iters_fused(d, x, h0, &y, &it, &r, &fin, &kappa, stats);
        if (st != PRN_OK) { prn_tensor_free(y); y = NULL; }
    }
    while (st == PRN_OK && !fused) {
        st = prn__deer_prev(d, y, h0, &yprev);
        if (st == PRN_OK) st = prn__deer_jac(d, xr, yprev, d->o.mode, &fy, &J);
        if (st == PRN_OK) st = prn__deer_resid(d, y, fy, &r, &fin);
        if (st != PRN_OK) break;
        if (!fin) stats->nonfinite = 1;
        if (fin && r <= 1) { stats->converged = 1; break; }
        if (it >= d->o.max_iter) break;
        if (d->o.adaptive && ysave && (!fin || r > PRN__DEER_GROWTH * rprev) && kappa < 1) { /* worse: back to the last accepted iterate */
            prn_tensor_free(y);
            y = prn_tensor_retain(ysave);
            kappa = kappa > 0.999 ? 1.0 : 0.5 * (1.0 + kappa);
            stats->rejected++;
            rejected = 1;
        } else {
            prn_tensor *yn = NULL;
            if (d->o.adaptive) {
                /* a success halves k, except right after a rejection (the same iterate again: try the larger k) */
                if (ysave && !rejected) kappa = 0.5 * kappa > d->o.damping + 1e-3 ? 0.5 * kappa : d->o.damping;
                rejected = 0;
                prn_tensor_free(ysave);
                ysave = prn_tensor_retain(y);
                rprev = r;
            }
            st = prn__deer_newton(d, yprev, fy, J, kappa, h0, &yn);
            if (st == PRN_OK) { prn_tensor_free(y); y = yn; }
        }
        ++it;
        prn_tensor_free(yprev); prn_tensor_free(fy); prn_tensor_free(J);
        yprev = fy = J = NULL;
    }
    stats->iterations = it;
    stats->residual = fin ? r : HUGE_VAL;
    stats->damping = kappa;
    if (st == PRN_OK && stats->converged && J && (d->o.mode != PRN_JACOBIAN_DIAG || S == 1))
        st = prn__deer_view(d, J, B, T, S, prn__deer_kb(d, d->o.mode), 4, Jx);
    prn_tensor_free(yprev); prn_tensor_free(fy); prn_tensor_free(J); prn_tensor_free(ysave); prn_tensor_free(xr);
    prn_tensor_free(h3);
    if (st == PRN_OK && !stats->converged && !d->o.no_fallback) {
        prn_tensor *ys = NULL;
        int ok = 1;
        st = prn__deer_sequential(d, x, h0, &ys);
        if (st == PRN_OK) { prn_tensor_free(y); y = ys; stats->fell_back = 1; stats->residual = 0; }
        if (st == PRN_OK) st = prn__deer_finite(d, y, &ok);
        if (st == PRN_OK && !ok) {
            stats->nonfinite = 1;
            st = PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: the recurrence itself produces NaN or Inf (evaluated sequentially "
                          "after %d iterations did not converge): the model overflows or its parameters are not finite",
                          d->fn, it);
        }
    }
    if (st != PRN_OK) { prn_tensor_free(y); prn_tensor_free(*Jx); *Jx = NULL; return st; }
    *out = y;
    return PRN_OK;
}

/* The adjoint op: its output is the solution, its input the recorded step
 * f(y_prev, x) over every row; op->user holds the exact Jacobians
 * [B, T, S, k]; op->i = {rev, B, T, S, k, algo}. */
PRN__FN void prn__deer_free_user(void *p) { prn_tensor_free((prn_tensor *)p); }
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_deer(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    /* the gradient of fy: lam[t] = g[t] + J[t+1]^T lam[t+1], the other way in time */
    return prn__scan_adjoint(ctx, fn, (prn_tensor *)op->user, 1, op->i[0], (prn_scan_algo)op->i[5], (size_t)op->i[1],
                             (size_t)op->i[2], (size_t)op->i[3], (size_t)op->i[4], g, &gin[0]);
}
#endif /* PARRNN_NO_TRAINING */

/* The adjoint op by the backend's deer_adjoint: op->user holds the
 * arguments and references to what they point into. */
typedef struct prn__deer_adj {
    prn_context *ctx;
    prn_deer_fused a;
    prn_tensor *keep[7]; /* xp rows, h0, the solution, the parameters */
} prn__deer_adj;
PRN__FN void prn__deer_adj_free(void *p) {
    prn__deer_adj *u = (prn__deer_adj *)p;
    int i;
    if (!u) return;
    for (i = 0; i < 7; ++i) prn_tensor_free(u->keep[i]);
    prn_free(u->ctx, u);
}
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_deer_fused(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    prn__deer_adj *u = (prn__deer_adj *)op->user;
    prn_deer_fused a = u->a;
    prn_tensor *lam = NULL;
    prn_status st = prn__tensor_like(ctx, fn, g, &lam);
    if (st != PRN_OK) return st;
    a.g = g->st->buf; a.lam = lam->st->buf;
    st = prn__in_fn(ctx, fn, ctx->be->deer_adjoint(ctx, &a));
    if (st != PRN_OK) { prn_tensor_free(lam); return st; }
    gin[0] = lam;
    return PRN_OK;
}
#endif /* PARRNN_NO_TRAINING */

/* The whole backward by the backend's deer_adjoint (the torch kinds): lam,
 * and in the same pass dxp, dq and dh0; the weight gradients are then dq's
 * sums over the rows (a GEMM and a sum: a fixed order whatever the
 * threads). op->inputs: xp rows [B*T, P], h0 [B, S], w_hh, b_hh; the
 * output is the solution. No step of f is recorded or evaluated again. */
#ifndef PARRNN_NO_TRAINING
PRN__FN prn_status prn__bw_deer_fgrad(prn_context *ctx, const prn_op *op, prn_tensor *g, prn_tensor **gin) {
    static const char fn[] = "prn_backward";
    const prn__deer_adj *u = (const prn__deer_adj *)op->user;
    prn_deer_fused a = u->a;
    const size_t B = a.B, T = a.T, S = a.S, H = a.H, N = B * T, P = op->inputs[0]->shape[1];
    const size_t nh = a.kind == PRN_RNN_MHGRU ? H / a.hk : 1;
    prn_tensor *ys = op->output, *h0 = op->inputs[1], *lam, *DXP, *DQ = NULL, *DH, *res[2] = {NULL, NULL};
    /* small weights: the pass sums them itself (per lane group, in a fixed order) */
    const int sums = P * (a.kind == PRN_RNN_MHGRU ? a.hk : H) <= 1024;
    int j;
    prn__cw w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    lam = prn__cw_empty(&w, a.dtype, N, S);
    DXP = prn__cw_empty(&w, a.dtype, N, P);
    if (!sums) DQ = prn__cw_empty(&w, a.dtype, N, P);
    DH = prn__cw_empty(&w, a.dtype, B, S);
    if (sums) {
        res[0] = prn__cw_empty(&w, a.dtype, op->inputs[2]->numel, 1);
        res[1] = prn__cw_empty(&w, a.dtype, op->inputs[3]->numel, 1);
    }
    if (w.st == PRN_OK) {
        a.g = g->st->buf; a.lam = lam->st->buf; a.dxp = DXP->st->buf; a.dh0 = DH->st->buf;
        a.dq = sums ? NULL : DQ->st->buf;
        a.dw = sums ? res[0]->st->buf : NULL;
        a.db = sums ? res[1]->st->buf : NULL;
        w.st = prn__in_fn(ctx, fn, ctx->be->deer_adjoint(ctx, &a));
    }
    if (w.st == PRN_OK && op->needs_grad[0]) w.st = prn__view(ctx, fn, DXP, 2, op->inputs[0]->shape, &gin[0]);
    if (w.st == PRN_OK && op->needs_grad[1]) w.st = prn__view(ctx, fn, DH, h0->ndim, h0->shape, &gin[1]);
    if (w.st == PRN_OK && op->needs_grad[2] && !sums) { /* sum over rows of dq_t h_{t-1}^T (MHGRU: per head) */
        prn_tensor *s03 = prn__cw_v3(&w, h0, B, 1, S), *Sp, *Hp;
        Sp = T == 1 ? s03
             : a.reverse ? prn__cw_cat(&w, prn__cw_slice(&w, ys, 1, 1, T - 1), s03, 1)
                         : prn__cw_cat(&w, s03, prn__cw_slice(&w, ys, 1, 0, T - 1), 1);
        Sp = prn__cw_v2(&w, Sp, N, S);
        Hp = a.kind == PRN_RNN_LSTM ? prn__cw_slice(&w, Sp, 1, 0, H) : Sp;
        if (nh == 1) res[0] = prn__cw_mm(&w, DQ, 1, Hp, 0);
        else res[0] = prn__cw_mm(&w, prn__cw_tr(&w, prn__cw_v3(&w, DQ, N, nh, 3 * a.hk), 0, 1), 1,
                                 prn__cw_tr(&w, prn__cw_v3(&w, Hp, N, nh, a.hk), 0, 1), 0);
    }
    if (w.st == PRN_OK && op->needs_grad[3] && !sums) res[1] = prn__cw_sum0(&w, DQ);
    for (j = 0; j < 2 && w.st == PRN_OK; ++j)
        if (res[j] && op->needs_grad[2 + j]) w.st = prn__view(ctx, fn, res[j], op->inputs[2 + j]->ndim, op->inputs[2 + j]->shape, &gin[2 + j]);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    return w.st;
}
#endif /* PARRNN_NO_TRAINING */

/* Records the solution ystar for gradients: fy = f(y_prev, x) as one
 * batched recorded step (y_prev from ystar, h0 first, recorded through h0),
 * then the adjoint op from fy to ystar. Nothing is recorded when nothing
 * needs a gradient. xr: the recorded x as rows [B*T, X]. */
PRN__FN prn_status prn__deer_record(prn__deer *d, prn_tensor *xr, prn_tensor *h0, prn_tensor *ystar, prn_tensor *Jx) {
    prn_context *ctx = d->ctx;
    size_t B = d->B, T = d->T, S = d->S, N = B * T, k = Jx ? Jx->shape[3] : d->k, sh[3];
    prn_tensor *J = prn_tensor_retain(Jx), *h3 = NULL, *part = NULL, *yp3 = NULL, *yp = NULL, *fy = NULL;
    int iv[6], rec = 0;
    prn_status st = PRN_OK;
    prn__deer_adj *adj = NULL;
    if (!prn_grad_enabled(ctx) || !d->cell->step) { prn_tensor_free(J); return PRN_OK; }
    if (prn__deer_fused_takes(d, 1)) { /* the adjoint recomputes the Jacobians row by row */
        int i;
        prn_tensor_free(J);
        J = NULL;
        adj = (prn__deer_adj *)prn_alloc(ctx, sizeof *adj);
        if (!adj) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->fn);
        memset(adj, 0, sizeof *adj);
        adj->ctx = ctx;
        adj->a = *d->fz;
        adj->a.dtype = d->dt; adj->a.mode = d->o.mode; adj->a.reverse = d->rev; adj->a.B = B; adj->a.T = T;
        adj->a.xp = xr->st->buf; adj->a.h0 = h0->st->buf; adj->a.y = ystar->st->buf;
        adj->keep[0] = prn_tensor_retain(xr); adj->keep[1] = prn_tensor_retain(h0); adj->keep[2] = prn_tensor_retain(ystar);
        for (i = 0; i < 4; ++i) adj->keep[3 + i] = prn_tensor_retain(d->fzp[i]);
        if (d->fz->kind <= (int)PRN_RNN_MHGRU) { /* the torch kinds: one op, its backward fused whole */
            prn_tensor *in[4];
            in[0] = xr; in[1] = h0; in[2] = d->fzp[0]; in[3] = d->fzp[1];
            iv[0] = d->rev; iv[1] = (int)B; iv[2] = (int)T; iv[3] = (int)S; iv[4] = (int)k; iv[5] = (int)d->o.algo;
            st = prn__record(ctx, d->fn, "deer", in, 4, ystar, PRN__IF_TRAINING(prn__bw_deer_fgrad), adj, prn__deer_adj_free, NULL, 0, iv, 6, &rec);
            if (st == PRN_OK && rec) adj = NULL;
            prn__deer_adj_free(adj);
            return st;
        }
    } else if (!J) { /* the iterations did not leave the exact Jacobians at the solution */
        prn_tensor *yprev = NULL, *fv = NULL, *Jr = NULL;
        prn_jacobian_mode m = k == S ? PRN_JACOBIAN_DENSE : PRN_JACOBIAN_BLOCK;
        if (k > 64)
            return PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "%s: gradients need the exact Jacobians in a block scan, whose blocks "
                            "are at most 64 wide; this cell's are %lu (use prn_no_grad_begin, or a cell with smaller "
                            "blocks)", d->fn, (unsigned long)k);
        prn_no_grad_begin(ctx);
        st = prn__deer_prev(d, ystar, h0, &yprev);
        if (st == PRN_OK) {
            prn_tensor *xv = NULL;
            st = prn__deer_view(d, xr, N, xr->shape[1], 0, 0, 2, &xv); /* a view without the tape */
            if (st == PRN_OK) st = prn__deer_jac(d, xv, yprev, m, &fv, &Jr);
            prn_tensor_free(xv);
        }
        if (st == PRN_OK) st = prn__deer_view(d, Jr, B, T, S, k, 4, &J);
        prn_no_grad_end(ctx);
        prn_tensor_free(yprev); prn_tensor_free(fv); prn_tensor_free(Jr);
        if (st != PRN_OK) return st;
    }
    /* y_prev = [h0, ystar[:, :T-1]] (reverse: [ystar[:, 1:], h0]), recorded through h0 */
    sh[0] = B; sh[1] = 1; sh[2] = S;
    st = prn_reshape(ctx, h0, 3, sh, &h3);
    if (st == PRN_OK && T > 1) st = prn__slice_raw(ctx, d->fn, ystar, 1, d->rev ? 1 : 0, T - 1, &part);
    if (st == PRN_OK) {
        if (T == 1) yp3 = prn_tensor_retain(h3);
        else st = d->rev ? prn_concat(ctx, part, h3, 1, &yp3) : prn_concat(ctx, h3, part, 1, &yp3);
    }
    sh[0] = N; sh[1] = S;
    if (st == PRN_OK) st = prn_reshape(ctx, yp3, 2, sh, &yp);
    if (st == PRN_OK) st = prn__in_fn(ctx, d->fn, d->cell->step(ctx, d->cell->user, xr, yp, &fy));
    if (st == PRN_OK && (!fy || fy->dtype != d->dt || fy->numel != N * S))
        st = PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: the cell's step callback returned a next state of the wrong dtype or size", d->fn);
    if (st == PRN_OK) {
        iv[0] = d->rev; iv[1] = (int)B; iv[2] = (int)T; iv[3] = (int)S; iv[4] = (int)k; iv[5] = (int)d->o.algo;
        if (adj) {
            st = prn__record(ctx, d->fn, "deer", &fy, 1, ystar, PRN__IF_TRAINING(prn__bw_deer_fused), adj, prn__deer_adj_free, NULL, 0, iv, 6, &rec);
            if (st == PRN_OK && rec) adj = NULL;
        } else {
            st = prn__record(ctx, d->fn, "deer", &fy, 1, ystar, PRN__IF_TRAINING(prn__bw_deer), J, prn__deer_free_user, NULL, 0, iv, 6, &rec);
            if (st == PRN_OK && rec) J = NULL; /* the tape owns it now */
        }
    }
    prn__deer_adj_free(adj);
    prn_tensor_free(J); prn_tensor_free(h3); prn_tensor_free(part); prn_tensor_free(yp3); prn_tensor_free(yp);
    prn_tensor_free(fy);
    return st;
}

/* Options with the defaults filled in, checked. */
PRN__FN prn_status prn__deer_opts(prn_context *ctx, const char *fn, const prn_deer_options *opt, prn_dtype dt,
                                  prn_deer_options *o) {
    if (opt) *o = *opt;
    else memset(o, 0, sizeof *o);
    if ((int)o->mode < 0 || o->mode > PRN_JACOBIAN_DIAG)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt->mode' is %d, not a prn_jacobian_mode", fn, (int)o->mode);
    if ((int)o->algo < 0 || o->algo >= PRN_SCAN_ALGO_COUNT)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt->algo' is %d, not a prn_scan_algo", fn, (int)o->algo);
    if (o->max_iter < 0)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt->max_iter' is %d; must be >= 0", fn, o->max_iter);
    /* An infinite tolerance would pass any residual: "converged" after
     * zero iterations, whatever the result. */
    if (!(o->atol >= 0 && o->atol <= DBL_MAX) || !(o->rtol >= 0 && o->rtol <= DBL_MAX) || !(o->clip >= 0))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: arguments 'opt->atol' (%g) and 'opt->rtol' (%g) must be "
                        "finite and >= 0, 'opt->clip' (%g) >= 0", fn, o->atol, o->rtol, o->clip);
    if (!(o->damping >= 0 && o->damping <= 1))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt->damping' is %g; must be in [0, 1]", fn, o->damping);
    if (!o->max_iter) o->max_iter = 100;
    if (o->atol == 0 && o->rtol == 0) o->atol = o->rtol = dt == PRN_F64 ? 1e-10 : 1e-5;
    if (o->clip == 0) o->clip = 1e8;
    return PRN_OK;
}

/* Checks shared by prn_deer and prn_deer_rnn once B, T, S and k are known. */
PRN__FN prn_status prn__deer_check(prn__deer *d, prn_tensor *x, prn_tensor *state0) {
    int ok;
    size_t kb = prn__deer_kb(d, d->o.mode);
    if (kb > 64)
        return PRN__ERR(d->ctx, PRN_ERR_UNSUPPORTED, "%s: mode %s scans %lu x %lu Jacobian blocks; the block scan takes at "
                        "most 64 (use PRN_JACOBIAN_DIAG, or a cell with smaller blocks)", d->fn,
                        d->o.mode == PRN_JACOBIAN_DENSE ? "PRN_JACOBIAN_DENSE" : "PRN_JACOBIAN_BLOCK", (unsigned long)kb,
                        (unsigned long)kb);
    if (d->B * d->T > 2147483647u || d->S * kb > 2147483647u)
        return PRN__ERR(d->ctx, PRN_ERR_OVERFLOW, "%s: batch * T and the Jacobian's row size must be below 2^31", d->fn);
    PRN__TRY(prn__deer_finite(d, x, &ok));
    if (!ok) return PRN__ERR(d->ctx, PRN_ERR_NONFINITE, "%s: argument 'x' holds NaN or Inf", d->fn);
    if (state0) {
        PRN__TRY(prn__deer_finite(d, state0, &ok));
        if (!ok) return PRN__ERR(d->ctx, PRN_ERR_NONFINITE, "%s: argument 'state0' holds NaN or Inf", d->fn);
    }
    return PRN_OK;
}

PRN__DEF prn_status prn_deer(prn_context *ctx, const prn_deer_system *cell, prn_tensor *x, prn_tensor *state0,
                             const prn_deer_options *opt, prn_tensor **y, prn_deer_stats *stats) {
    static const char fn[] = "prn_deer";
    prn__deer d;
    prn_deer_stats sd;
    prn_tensor *h0 = NULL, *ys = NULL, *Jx = NULL, *xr = NULL, *guess = NULL;
    size_t mark, s2[2];
    prn_status st;
    PRN__CTX(ctx, fn);
    if (!cell) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'cell' is NULL", fn);
    if (!cell->jacobian) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'cell->jacobian' is NULL", fn);
    if (!y) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'y' is NULL", fn);
    PRN__TRY(prn__check_t(ctx, fn, "x", x, 1));
    if (cell->state_size == 0) return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'cell->state_size' is 0", fn);
    if (cell->block && (cell->block > cell->state_size || cell->state_size % cell->block))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'cell->block' (%lu) must divide state_size (%lu)", fn,
                        (unsigned long)cell->block, (unsigned long)cell->state_size);
    if (x->ndim != 3 || x->shape[2] != cell->input_size || x->shape[1] == 0) {
        char sx[64];
        prn__shape_str(x, sx, sizeof sx);
        return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has shape %s; expected [B, T >= 1, %lu]", fn, sx,
                        (unsigned long)cell->input_size);
    }
    if (x->dtype == PRN_I32) return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'x' is i32; want f32 or f64", fn);
    memset(&d, 0, sizeof d);
    d.ctx = ctx; d.fn = fn; d.cell = cell; d.dt = x->dtype;
    d.B = x->shape[0]; d.T = x->shape[1]; d.S = cell->state_size; d.k = cell->block ? cell->block : cell->state_size;
    if (state0) {
        PRN__TRY(prn__check_t(ctx, fn, "state0", state0, 1));
        if (state0->dtype != d.dt) return PRN__ERR(ctx, PRN_ERR_DTYPE, "%s: argument 'state0' is %s but 'x' is %s", fn,
                                                   prn_dtype_name(state0->dtype), prn_dtype_name(d.dt));
        if (state0->ndim != 2 || state0->shape[0] != d.B || state0->shape[1] != d.S)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'state0' must be [B, S] = [%lu, %lu]", fn, (unsigned long)d.B,
                            (unsigned long)d.S);
    }
    PRN__TRY(prn__deer_opts(ctx, fn, opt, d.dt, &d.o));
    if (d.o.warm && *d.o.warm) {
        guess = *d.o.warm;
        PRN__TRY(prn__check_t(ctx, fn, "*opt->warm", guess, 1));
        if (guess->dtype != d.dt || guess->ndim != 3 || guess->shape[0] != d.B || guess->shape[1] != d.T || guess->shape[2] != d.S)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument '*opt->warm' must be a %s [B, T, S] = [%lu, %lu, %lu] tensor", fn,
                            prn_dtype_name(d.dt), (unsigned long)d.B, (unsigned long)d.T, (unsigned long)d.S);
    }
    PRN__TRY(prn__deer_check(&d, x, state0));
    if (d.B == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has batch 0", fn);
    mark = ctx->tape_n;
    s2[0] = d.B; s2[1] = d.S;
    st = state0 ? PRN_OK : prn_tensor_full(ctx, d.dt, 2, s2, 0.0, &h0);
    if (st == PRN_OK) {
        prn_no_grad_begin(ctx);
        st = prn__deer_solve(&d, x, state0 ? state0 : h0, guess, &ys, &Jx, &sd);
        prn_no_grad_end(ctx);
    }
    if (st == PRN_OK) {
        s2[0] = d.B * d.T; s2[1] = cell->input_size;
        st = prn_reshape(ctx, x, 2, s2, &xr);
    }
    if (st == PRN_OK) st = prn__deer_record(&d, xr, state0 ? state0 : h0, ys, Jx);
    prn_tensor_free(h0); prn_tensor_free(Jx); prn_tensor_free(xr);
    if (stats) *stats = sd; /* also on failure: what the iterations found */
    if (st != PRN_OK) { prn_tensor_free(ys); prn__tape_truncate(ctx, mark); return prn__in_fn(ctx, fn, st); }
    if (d.o.warm) { prn_tensor_free(*d.o.warm); *d.o.warm = prn_tensor_retain(ys); }
    *y = ys;
    return PRN_OK;
}

/* --- the built-in networks as DEER systems ------------------------------------ */
typedef struct prn__deer_rnn_system {
    const prn_rnn *rnn;
    int ld;
} prn__deer_rnn_system;
/* x rows are the input projections [N, P] */
PRN__FN prn_status prn__deer_rnn_jacobian(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state,
                                          prn_jacobian_mode mode, prn_tensor **next, prn_tensor **jac) {
    const prn__deer_rnn_system *c = (const prn__deer_rnn_system *)user;
    prn_tensor *nx = NULL, *J;
    prn__cw w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    J = prn__rnn_jac(&w, c->rnn, c->ld, x, state, mode, &nx);
    if (w.st == PRN_OK) { *next = prn_tensor_retain(nx); *jac = prn_tensor_retain(J); }
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    return w.st;
}
PRN__FN prn_status prn__deer_rnn_step(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *state, prn_tensor **next) {
    const prn__deer_rnn_system *c = (const prn__deer_rnn_system *)user;
    prn_tensor *prm[4], *Sall = NULL, *o;
    prn__rk k;
    prn__cw w;
    size_t N = state->shape[0];
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    prn__rk_of(c->rnn, &k);
    prn__rnn_rprm(c->rnn, c->ld, prm);
    o = prn__cw_v3(&w, x, N, 1, c->rnn->P);
    if (w.st == PRN_OK) {
        prn_status rs = prn__recur_op(ctx, "prn_deer_rnn", &k, o, state, prm, 0, &Sall);
        prn__cw_keep(&w, rs, Sall);
    }
    o = prn__cw_v2(&w, Sall, N, c->rnn->S);
    if (w.st == PRN_OK) *next = prn_tensor_retain(o);
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    return w.st;
}
PRN__FN prn_status prn__deer_rnn_seq(prn_context *ctx, void *user, prn_tensor *x, prn_tensor *h0, int rev, prn_tensor **y) {
    const prn__deer_rnn_system *c = (const prn__deer_rnn_system *)user;
    prn_tensor *prm[4];
    prn__rk k;
    prn__rk_of(c->rnn, &k);
    prn__rnn_rprm(c->rnn, c->ld, prm);
    return prn__recur_op(ctx, "prn_deer_rnn", &k, x, h0, prm, rev, y);
}

PRN__DEF prn_status prn_deer_rnn(prn_context *ctx, const prn_rnn *rnn, prn_tensor *x, prn_tensor *state0,
                                 const prn_deer_options *opt, prn_tensor **y, prn_tensor **state, prn_deer_stats *stats) {
    static const char fn[] = "prn_deer_rnn";
    size_t B, T, LD, S, mark, sh[4];
    int batched, l, dir, first = 1;
    prn_tensor *X, *s03 = NULL, *fin = NULL, *guess = NULL, *warm_out = NULL;
    prn_deer_options o;
    prn_deer_stats agg;
    prn__cw w;
    PRN__TRY(prn__rnn_seq_args(ctx, fn, rnn, x, state0, y, &batched, &B, &T));
    LD = (size_t)rnn->L * (size_t)rnn->D;
    S = rnn->S;
    if (B == 0) return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument 'x' has batch 0", fn);
    PRN__TRY(prn__deer_opts(ctx, fn, opt, rnn->cfg.dtype, &o));
    if (o.warm && *o.warm) {
        guess = *o.warm;
        PRN__TRY(prn__check_t(ctx, fn, "*opt->warm", guess, 1));
        if (guess->dtype != rnn->cfg.dtype || guess->numel != LD * B * T * S || guess->shape[guess->ndim - 1] != S)
            return PRN__ERR(ctx, PRN_ERR_SHAPE, "%s: argument '*opt->warm' must be a %s [L*D, B, T, S] = [%lu, %lu, %lu, %lu] "
                            "tensor", fn, prn_dtype_name(rnn->cfg.dtype), (unsigned long)LD, (unsigned long)B,
                            (unsigned long)T, (unsigned long)S);
    }
    memset(&agg, 0, sizeof agg);
    mark = ctx->tape_n;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    X = prn__cw_v3(&w, x, B, T, rnn->cfg.input_size);
    if (state0) s03 = prn__cw_v3(&w, state0, LD, B, S);
    for (l = 0; l < rnn->L && w.st == PRN_OK; ++l) {
        prn_tensor *Yl = NULL;
        for (dir = 0; dir < rnn->D && w.st == PRN_OK; ++dir) {
            int ld = l * rnn->D + dir;
            prn__deer_rnn_system rc;
            prn_deer_system cell;
            prn_deer_fused fz;
            prn__deer d;
            prn_deer_stats sd;
            prn_tensor *s0, *xp, *xr, *ys = NULL, *Jx = NULL, *g = NULL, *Yd, *f;
            prn_status st;
            sh[0] = B; sh[1] = S;
            s0 = s03 ? prn__cw_v2(&w, prn__cw_slice(&w, s03, 0, (size_t)ld, 1), B, S) : prn__cw_new(&w, rnn->cfg.dtype, 2, sh, 0.0);
            xp = prn__rnn_proj(&w, rnn, ld, X); /* recorded: the gradients reach W_ih through it */
            xr = prn__cw_v2(&w, xp, B * T, rnn->P);
            if (w.st != PRN_OK) break;
            rc.rnn = rnn; rc.ld = ld;
            memset(&cell, 0, sizeof cell);
            cell.state_size = S; cell.input_size = rnn->P; cell.block = prn_rnn_jacobian_block(rnn);
            cell.jacobian = prn__deer_rnn_jacobian; cell.step = prn__deer_rnn_step; cell.user = &rc;
            memset(&d, 0, sizeof d);
            d.ctx = ctx; d.fn = fn; d.cell = &cell; d.seq = prn__deer_rnn_seq; d.rev = dir;
            d.B = B; d.T = T; d.S = S; d.k = cell.block;
            d.dt = rnn->cfg.dtype; d.o = o;
            {
                prn_tensor *prm[4] = {NULL, NULL, NULL, NULL};
                int np = prn__rnn_rprm(rnn, ld, prm), i;
                memset(&fz, 0, sizeof fz);
                fz.kind = (int)rnn->cfg.kind; fz.relu = rnn->cfg.relu;
                fz.H = rnn->H; fz.S = S; fz.hk = rnn->cfg.kind == PRN_RNN_MHGRU ? rnn->hk : rnn->H;
                fz.L = prn__rnn_shallow(rnn->cfg.kind) ? rnn->cfg.shallow_size
                       : rnn->cfg.kind == PRN_RNN_ALRNN ? rnn->cfg.num_relu : 0;
                for (i = 0; i < np; ++i) { fz.w[i] = prm[i]->st->buf; d.fzp[i] = prm[i]; }
                d.fz = &fz;
            }
            if (l == 0 && dir == 0) w.st = prn__deer_check(&d, X, state0);
            if (w.st == PRN_OK && guess) g = prn__cw_v3(&w, prn__cw_slice(&w, prn__cw_v2(&w, guess, LD, B * T * S), 0, (size_t)ld, 1), B, T, S);
            if (w.st != PRN_OK) break;
            prn_no_grad_begin(ctx);
            st = prn__deer_solve(&d, xp, s0, g, &ys, &Jx, &sd);
            prn_no_grad_end(ctx);
            prn__deer_stats_merge(&agg, &sd, first);
            first = 0;
            if (st == PRN_OK) st = prn__deer_record(&d, xr, s0, ys, Jx);
            prn_tensor_free(Jx);
            prn__cw_keep(&w, st, ys);
            if (st != PRN_OK) { prn_tensor_free(ys); break; }
            if (o.warm) { /* off the tape: the guess carries no gradient */
                prn_no_grad_begin(ctx);
                f = prn__cw_v3(&w, ys, 1, B * T, S);
                warm_out = warm_out ? prn__cw_cat(&w, warm_out, f, 0) : f;
                prn_no_grad_end(ctx);
            }
            Yd = rnn->cfg.kind == PRN_RNN_LSTM ? prn__cw_slice(&w, ys, 2, 0, rnn->H) : ys;
            f = prn__cw_v3(&w, prn__cw_slice(&w, ys, 1, dir ? 0 : T - 1, 1), 1, B, S);
            fin = fin ? prn__cw_cat(&w, fin, f, 0) : f;
            Yl = Yl ? prn__cw_cat(&w, Yl, Yd, 2) : Yd;
        }
        X = Yl;
    }
    if (w.st == PRN_OK) {
        prn_tensor *yo = batched ? X : prn__cw_v2(&w, X, T, (size_t)rnn->D * rnn->H);
        prn_tensor *so = batched ? fin : prn__cw_v2(&w, fin, LD, S);
        prn_tensor *wo = NULL;
        if (o.warm) {
            sh[0] = LD; sh[1] = B; sh[2] = T; sh[3] = S;
            prn_no_grad_begin(ctx);
            wo = prn__cw1(&w, prn_copy, prn__cw_view(&w, warm_out, 4, sh)); /* its own storage */
            prn_no_grad_end(ctx);
        }
        if (w.st == PRN_OK) {
            *y = prn_tensor_retain(yo);
            if (state) *state = prn_tensor_retain(so);
            if (o.warm) { prn_tensor_free(*o.warm); *o.warm = prn_tensor_retain(wo); }
        }
    }
    if (stats) *stats = agg;
    prn__cw_release(&w, 0);
    prn_free(ctx, w.t);
    if (w.st != PRN_OK) prn__tape_truncate(ctx, mark);
    return prn__in_fn(ctx, fn, w.st);
}

#endif /* PARRNN_NO_DEER */
#ifndef PARRNN_NO_SCYFI
/* ------------------------------------------------------------------------
 * Piecewise-linear models and SCYFI
 * ---------------------------------------------------------------------- */
#define PRN__PWL_MAX_DIM 65536 /* M, H: M*M doubles must fit in memory */

/* Indicator bits of one pattern. */
PRN__FN size_t prn__pwl_bits(const prn_pwl_model *m) {
    switch (m->kind) {
    case PRN_PWL_PLRNN: return m->M;
    case PRN_PWL_ALRNN: return m->P;
    case PRN_PWL_SHPLRNN: return m->H;
    default: return 2 * m->H;
    }
}
PRN__FN int prn__pwl_shallow(const prn_pwl_model *m) {
    return m->kind == PRN_PWL_SHPLRNN || m->kind == PRN_PWL_CLIPPED_SHPLRNN;
}
/* The hidden size every buffer is sized by: m->H for the shallow kinds
 * (checked 1 .. PRN__PWL_MAX_DIM), 0 for the others, whose H is not read
 * and may hold anything. */
PRN__FN size_t prn__pwl_hidden(const prn_pwl_model *m) {
    return prn__pwl_shallow(m) ? m->H : 0;
}
PRN__FN const char *prn__pwl_kind_name(prn_pwl_kind k) {
    switch (k) {
    case PRN_PWL_PLRNN: return "plrnn";
    case PRN_PWL_SHPLRNN: return "shplrnn";
    case PRN_PWL_CLIPPED_SHPLRNN: return "clipped_shplrnn";
    default: return "alrnn";
    }
}

PRN__FN prn_status prn__pwl_array(prn_context *ctx, const char *fn, const char *name, const double *x, size_t n) {
    size_t i;
    if (!x) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'm->%s' is NULL", fn, name);
    for (i = 0; i < n; ++i)
        if (!(x[i] - x[i] == 0))
            return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: m->%s[%lu] is not finite", fn, name, (unsigned long)i);
    return PRN_OK;
}

PRN__FN prn_status prn__pwl_check(prn_context *ctx, const char *fn, const prn_pwl_model *m) {
    size_t M, H;
    PRN__CTX(ctx, fn);
    if (!m) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'm' is NULL", fn);
    if ((int)m->kind < 0 || (int)m->kind > (int)PRN_PWL_ALRNN)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: m->kind is %d, not a prn_pwl_kind", fn, (int)m->kind);
    if (m->M < 1 || m->M > PRN__PWL_MAX_DIM)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: m->M is %lu; need 1 .. %d", fn, (unsigned long)m->M, PRN__PWL_MAX_DIM);
    M = m->M;
    PRN__TRY(prn__pwl_array(ctx, fn, "A", m->A, m->full_A ? M * M : M));
    if (prn__pwl_shallow(m)) {
        if (m->H < 1 || m->H > PRN__PWL_MAX_DIM)
            return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: m->H is %lu; need 1 .. %d for kind %s", fn, (unsigned long)m->H,
                            PRN__PWL_MAX_DIM, prn__pwl_kind_name(m->kind));
        H = m->H;
        PRN__TRY(prn__pwl_array(ctx, fn, "W1", m->W1, M * H));
        PRN__TRY(prn__pwl_array(ctx, fn, "W2", m->W2, H * M));
        PRN__TRY(prn__pwl_array(ctx, fn, "h1", m->h1, M));
        PRN__TRY(prn__pwl_array(ctx, fn, "h2", m->h2, H));
    } else {
        if (m->kind == PRN_PWL_ALRNN && m->P > m->M)
            return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: m->P is %lu; need 0 .. M = %lu", fn, (unsigned long)m->P,
                            (unsigned long)m->M);
        PRN__TRY(prn__pwl_array(ctx, fn, "W", m->W, M * M));
        PRN__TRY(prn__pwl_array(ctx, fn, "h", m->h, M));
    }
    return PRN_OK;
}
PRN__DEF prn_status prn_pwl_check(prn_context *ctx, const prn_pwl_model *m) {
    return prn__pwl_check(ctx, "prn_pwl_check", m);
}

/* out = F(z) (out != z) and, when pat is not NULL, z's pattern (one byte
 * per indicator bit). tmp holds 2 H doubles (shallow kinds). */
PRN__FN void prn__pwl_next(const prn_pwl_model *m, const double *z, double *out, unsigned char *pat, double *tmp) {
    size_t M = m->M, i, j;
    if (m->full_A) {
        for (i = 0; i < M; ++i) {
            const double *a = m->A + i * M;
            double s = 0;
            for (j = 0; j < M; ++j) s += a[j] * z[j];
            out[i] = s;
        }
    } else {
        for (i = 0; i < M; ++i) out[i] = m->A[i] * z[i];
    }
    if (!prn__pwl_shallow(m)) {
        size_t lin = m->kind == PRN_PWL_ALRNN ? M - m->P : 0;
        for (j = 0; j < M; ++j) {
            double pj = j < lin ? z[j] : (z[j] > 0 ? z[j] : 0);
            if (pat && j >= lin) pat[j - lin] = z[j] > 0;
            if (pj != 0)
                for (i = 0; i < M; ++i) out[i] += m->W[i * M + j] * pj;
        }
        for (i = 0; i < M; ++i) out[i] += m->h[i];
    } else {
        size_t H = m->H, q;
        int clipped = m->kind == PRN_PWL_CLIPPED_SHPLRNN;
        for (q = 0; q < H; ++q) {
            const double *w = m->W2 + q * M;
            double s = 0, u;
            for (j = 0; j < M; ++j) s += w[j] * z[j];
            u = s + m->h2[q];
            tmp[q] = (u > 0 ? u : 0) - (clipped && s > 0 ? s : 0);
            if (pat) {
                pat[q] = u > 0;
                if (clipped) pat[H + q] = s > 0;
            }
        }
        for (i = 0; i < M; ++i) {
            const double *w = m->W1 + i * H;
            double s = m->h1[i];
            for (q = 0; q < H; ++q) s += w[q] * tmp[q];
            out[i] += s;
        }
    }
}

PRN__DEF prn_status prn_pwl_step(prn_context *ctx, const prn_pwl_model *m, const double *z, double *out) {
    static const char *fn = "prn_pwl_step";
    double *tmp;
    size_t M;
    PRN__TRY(prn__pwl_check(ctx, fn, m));
    if (!z) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'z' is NULL", fn);
    if (!out) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    M = m->M;
    tmp = (double *)prn_alloc(ctx, (M + 2 * prn__pwl_hidden(m) + 1) * sizeof(double));
    if (!tmp) return prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY);
    prn__pwl_next(m, z, tmp, NULL, tmp + M);
    memcpy(out, tmp, M * sizeof(double));
    prn_free(ctx, tmp);
    return PRN_OK;
}

/* --- model files ----------------------------------------------------------- */
enum { PRN__PF_KIND, PRN__PF_M, PRN__PF_H, PRN__PF_P, PRN__PF_A, PRN__PF_W, PRN__PF_h, PRN__PF_W1, PRN__PF_W2,
       PRN__PF_h1, PRN__PF_h2, PRN__PF_COUNT };
static const char *const prn__pf_names[PRN__PF_COUNT] = { "kind", "M", "H", "P", "A", "W", "h", "W1", "W2", "h1", "h2" };

typedef struct prn__pf_field {
    int seen, line;   /* line of the keyword */
    size_t first, n;  /* its numbers: vals[first .. first + n) */
} prn__pf_field;

PRN__FN int prn__pf_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

PRN__FN prn_status prn__pf_error(prn_context *ctx, int line, const char *field, const char *fmt, const char *a,
                                 const char *b) {
    char msg[200];
    snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
    if (field) return PRN__ERR(ctx, PRN_ERR_FORMAT, "prn_pwl_parse: line %d, field '%s': %s", line, field, msg);
    return PRN__ERR(ctx, PRN_ERR_FORMAT, "prn_pwl_parse: line %d: %s", line, msg);
}

/* Needed count of a field as text ("M*M"), and its value. */
PRN__FN int prn__pf_needs(int f, prn_pwl_kind kind, size_t M, size_t H, size_t *n, const char **what) {
    int shallow = kind == PRN_PWL_SHPLRNN || kind == PRN_PWL_CLIPPED_SHPLRNN;
    switch (f) {
    case PRN__PF_KIND: case PRN__PF_M: *n = 1; *what = "1"; return 1;
    case PRN__PF_H: *n = 1; *what = "1"; return shallow;
    case PRN__PF_P: *n = 1; *what = "1"; return kind == PRN_PWL_ALRNN;
    case PRN__PF_A: *n = M; *what = "M (diagonal) or M*M (full)"; return 1;
    case PRN__PF_W: *n = M * M; *what = "M*M"; return !shallow;
    case PRN__PF_h: *n = M; *what = "M"; return !shallow;
    case PRN__PF_W1: *n = M * H; *what = "M*H"; return shallow;
    case PRN__PF_W2: *n = H * M; *what = "H*M"; return shallow;
    case PRN__PF_h1: *n = M; *what = "M"; return shallow;
    default: *n = H; *what = "H"; return shallow;
    }
}

/* A positive integer field (M, H) or P (may be 0). */
PRN__FN prn_status prn__pf_int(prn_context *ctx, const prn__pf_field *fl, const double *vals, const char *name,
                               int lo, int *out) {
    double v = vals[fl->first];
    char buf[64];
    if (!(v >= lo && v <= PRN__PWL_MAX_DIM && v == (double)(int)v)) {
        snprintf(buf, sizeof buf, "%.17g", v);
        return prn__pf_error(ctx, fl->line, name, lo ? "%s is not an integer in 1 .. 65536%s"
                                                     : "%s is not an integer in 0 .. 65536%s", buf, "");
    }
    *out = (int)v;
    return PRN_OK;
}

PRN__DEF prn_status prn_pwl_parse(prn_context *ctx, const char *text, size_t len, prn_pwl_model **out) {
    static const char *fn = "prn_pwl_parse";
    prn__pf_field fl[PRN__PF_COUNT];
    double *vals = NULL, *dst;
    size_t nvals = 0, cap = 0, pos = 0, M = 0, H = 0, total, n;
    int line = 1, cur = -1, kind = -1, f, Mi = 0, Hi = 0, Pi = 0, full_A = 0;
    prn_status st = PRN_OK;
    prn_pwl_model *m;
    const char *what;
    PRN__CTX(ctx, fn);
    if (!text && len) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'text' is NULL", fn);
    PRN__CHECK_OUT(ctx, fn, out);
    memset(fl, 0, sizeof fl);
    while (pos < len && st == PRN_OK) {
        char tok[512]; /* longer tokens are no number or name we read */
        size_t b, e, tl;
        char c = text[pos];
        if (c == '\n') { ++line; ++pos; continue; }
        if (prn__pf_space(c)) { ++pos; continue; }
        if (c == '#') { while (pos < len && text[pos] != '\n') ++pos; continue; }
        if (c == '\0') { st = prn__pf_error(ctx, line, NULL, "a NUL byte in the text%s%s", NULL, NULL); break; }
        b = pos;
        while (pos < len && !prn__pf_space(text[pos]) && text[pos] != '#' && text[pos] != '\0') ++pos;
        e = pos;
        tl = e - b < sizeof tok - 1 ? e - b : sizeof tok - 1;
        memcpy(tok, text + b, tl);
        tok[tl] = '\0';
        if (e - b >= sizeof tok - 1) memcpy(tok + sizeof tok - 4, "...", 4);
        if ((tok[0] >= 'a' && tok[0] <= 'z') || (tok[0] >= 'A' && tok[0] <= 'Z')) {
            /* A keyword, or the kind's value, or a word where a number belongs. */
            if (cur == PRN__PF_KIND && fl[cur].n == 0) {
                int k;
                for (k = 0; k <= (int)PRN_PWL_ALRNN; ++k)
                    if (e - b < sizeof tok - 1 && strcmp(tok, prn__pwl_kind_name((prn_pwl_kind)k)) == 0) kind = k;
                if (kind < 0) {
                    st = prn__pf_error(ctx, line, "kind",
                                       "'%s' is not a kind (plrnn, shplrnn, clipped_shplrnn, alrnn)%s", tok, NULL);
                    break;
                }
                fl[cur].n = 1;
                continue;
            }
            for (f = 0; f < PRN__PF_COUNT; ++f)
                if (e - b < sizeof tok - 1 && strcmp(tok, prn__pf_names[f]) == 0) break;
            if (f == PRN__PF_COUNT) {
                /* strtod also reads nan and inf: name them as what they are. */
                char *end;
                double v = strtod(tok, &end);
                if (cur >= 0 && *end == '\0' && end != tok && !(v - v == 0))
                    st = prn__pf_error(ctx, line, prn__pf_names[cur], "'%s' is not a finite number%s", tok, NULL);
                else if (cur >= 0)
                    st = prn__pf_error(ctx, line, prn__pf_names[cur], "'%s' is neither a number nor a field name%s",
                                       tok, NULL);
                else
                    st = prn__pf_error(ctx, line, NULL, "unknown field '%s'%s", tok, NULL);
                break;
            }
            if (fl[f].seen) {
                char prev[32];
                snprintf(prev, sizeof prev, "%d", fl[f].line);
                st = prn__pf_error(ctx, line, prn__pf_names[f], "repeated (first on line %s)%s", prev, NULL);
                break;
            }
            fl[f].seen = 1;
            fl[f].line = line;
            fl[f].first = nvals;
            cur = f;
            continue;
        }
        {
            char *end;
            double v;
            if (cur < 0) { st = prn__pf_error(ctx, line, NULL, "a number ('%s') before any field name%s", tok, NULL); break; }
            if (cur == PRN__PF_KIND) {
                st = prn__pf_error(ctx, line, "kind", "'%s' is not a kind (plrnn, shplrnn, clipped_shplrnn, alrnn)%s",
                                   tok, NULL);
                break;
            }
            v = e - b < sizeof tok - 1 ? strtod(tok, &end) : 0;
            if (e - b >= sizeof tok - 1 || *end != '\0' || end == tok) {
                st = prn__pf_error(ctx, line, prn__pf_names[cur], "'%s' is not a number%s", tok, NULL);
                break;
            }
            if (!(v - v == 0)) {
                st = prn__pf_error(ctx, line, prn__pf_names[cur], "'%s' is not a finite number%s", tok, NULL);
                break;
            }
            if (nvals == cap) {
                size_t nc = cap ? cap * 2 : 256;
                double *nv = (double *)prn_alloc(ctx, nc * sizeof(double));
                if (!nv) { st = prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY); break; }
                if (nvals) memcpy(nv, vals, nvals * sizeof(double));
                prn_free(ctx, vals);
                vals = nv;
                cap = nc;
            }
            vals[nvals++] = v;
            fl[cur].n++;
        }
    }
    if (st != PRN_OK) { prn_free(ctx, vals); return st; }
    /* Which fields the kind needs, and their counts. */
    if (!fl[PRN__PF_KIND].seen || kind < 0) {
        st = fl[PRN__PF_KIND].seen ? prn__pf_error(ctx, fl[PRN__PF_KIND].line, "kind", "no value%s%s", NULL, NULL)
                                   : prn__pf_error(ctx, line, "kind", "missing (end of text)%s%s", NULL, NULL);
        prn_free(ctx, vals);
        return st;
    }
    for (f = PRN__PF_M; f < PRN__PF_COUNT && st == PRN_OK; ++f) {
        int need = prn__pf_needs(f, (prn_pwl_kind)kind, 0, 0, &n, &what);
        if (need && !fl[f].seen) {
            char ln[32];
            snprintf(ln, sizeof ln, "%d", line);
            st = PRN__ERR(ctx, PRN_ERR_FORMAT, "%s: line %s (end of text), field '%s': missing (kind %s needs it)", fn,
                          ln, prn__pf_names[f], prn__pwl_kind_name((prn_pwl_kind)kind));
        } else if (!need && fl[f].seen) {
            st = prn__pf_error(ctx, fl[f].line, prn__pf_names[f], "kind %s has no such field%s",
                               prn__pwl_kind_name((prn_pwl_kind)kind), NULL);
        } else if (need && f <= PRN__PF_P && fl[f].n != 1) {
            st = prn__pf_error(ctx, fl[f].line, prn__pf_names[f], fl[f].n ? "one integer, not several%s%s"
                                                                           : "no value%s%s", NULL, NULL);
        }
    }
    if (st == PRN_OK) st = prn__pf_int(ctx, &fl[PRN__PF_M], vals, "M", 1, &Mi);
    if (st == PRN_OK && fl[PRN__PF_H].seen) st = prn__pf_int(ctx, &fl[PRN__PF_H], vals, "H", 1, &Hi);
    if (st == PRN_OK && fl[PRN__PF_P].seen) {
        st = prn__pf_int(ctx, &fl[PRN__PF_P], vals, "P", 0, &Pi);
        if (st == PRN_OK && Pi > Mi) {
            char b1[32], b2[32];
            snprintf(b1, sizeof b1, "%d", Pi);
            snprintf(b2, sizeof b2, "%d", Mi);
            st = prn__pf_error(ctx, fl[PRN__PF_P].line, "P", "%s is larger than M = %s", b1, b2);
        }
    }
    M = (size_t)Mi;
    H = (size_t)Hi;
    total = 0;
    for (f = PRN__PF_A; f < PRN__PF_COUNT && st == PRN_OK; ++f) {
        if (!prn__pf_needs(f, (prn_pwl_kind)kind, M, H, &n, &what)) continue;
        if (f == PRN__PF_A && fl[f].n == M * M && M > 1) { full_A = 1; n = M * M; }
        if (fl[f].n != n) {
            char b1[32], b2[96];
            snprintf(b1, sizeof b1, "%lu", (unsigned long)fl[f].n);
            if (f == PRN__PF_A) snprintf(b2, sizeof b2, "%lu (M, diagonal) or %lu (M*M, full)", (unsigned long)M,
                                         (unsigned long)(M * M));
            else snprintf(b2, sizeof b2, "%lu (%s)", (unsigned long)n, what);
            st = prn__pf_error(ctx, fl[f].line, prn__pf_names[f], "%s numbers, need %s", b1, b2);
        }
        total += n;
    }
    if (st != PRN_OK) { prn_free(ctx, vals); return st; }
    m = (prn_pwl_model *)prn_alloc(ctx, sizeof *m + total * sizeof(double));
    if (!m) { prn_free(ctx, vals); return prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY); }
    memset(m, 0, sizeof *m);
    m->kind = (prn_pwl_kind)kind;
    m->M = (size_t)Mi; /* prn__pf_int checked each: 0 (1 for M, H) .. PRN__PWL_MAX_DIM */
    m->H = (size_t)Hi;
    m->P = (size_t)Pi;
    m->full_A = full_A;
    dst = (double *)(void *)(m + 1);
    for (f = PRN__PF_A; f < PRN__PF_COUNT; ++f) {
        double **slot;
        if (!prn__pf_needs(f, (prn_pwl_kind)kind, M, H, &n, &what)) continue;
        n = fl[f].n;
        memcpy(dst, vals + fl[f].first, n * sizeof(double));
        slot = f == PRN__PF_A ? &m->A : f == PRN__PF_W ? &m->W : f == PRN__PF_h ? &m->h : f == PRN__PF_W1 ? &m->W1
             : f == PRN__PF_W2 ? &m->W2 : f == PRN__PF_h1 ? &m->h1 : &m->h2;
        *slot = dst;
        dst += n;
    }
    prn_free(ctx, vals);
    *out = m;
    return PRN_OK;
}

PRN__DEF prn_status prn_pwl_load(prn_context *ctx, const char *path, prn_pwl_model **out) {
    static const char *fn = "prn_pwl_load";
    prn__rd rd;
    prn_status st;
    PRN__CTX(ctx, fn);
    if (!path) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'path' is NULL", fn);
    PRN__CHECK_OUT(ctx, fn, out);
    PRN__TRY(prn__rd_open(ctx, fn, path, &rd));
    /* Up to the limit, or to the first NUL byte: the parser refuses the
     * text there, so a stream of zeros is not read on. */
    st = prn__rd_fill(ctx, fn, &rd, SIZE_MAX, 1);
    if (st != PRN_OK) { prn__rd_close(ctx, &rd); return st; }
    st = prn_pwl_parse(ctx, (const char *)rd.buf, rd.n, out);
    prn__rd_close(ctx, &rd);
    if (st != PRN_OK) {
        /* Keep the line/field message, say which file. */
        char msg[sizeof ctx->msg];
        snprintf(msg, sizeof msg, "%s", ctx->msg);
        PRN__ERR(ctx, st, "%s: %s: %s", fn, path, msg);
    }
    return st;
}

PRN__DEF void prn_pwl_free(prn_context *ctx, prn_pwl_model *m) {
    if (ctx && m) prn_free(ctx, m);
}

/* --- SCYFI search ---------------------------------------------------------- */
#define PRN__SC_MAX_COUNT 2147483647 /* the most of any count in prn_scyfi_options */
#ifdef PARRNN_USE_CBLAS
#define PRN__SC_CBLAS 1
#else
#define PRN__SC_CBLAS 0
#endif
/* A chain's random stream: Philox blocks (key, (j << 32) + i). */
typedef struct prn__sc_rng {
    uint64_t key, ctr;
    uint32_t w[4];
    int left;
} prn__sc_rng;
PRN__FN uint32_t prn__sc_u32(prn__sc_rng *r) {
    if (r->left == 0) { prn_philox4x32(r->key, r->ctr++, r->w); r->left = 4; }
    return r->w[--r->left];
}

/* One chain of guesses. */
/* A cycle a chain met: k x M points, then its k x R patterns. */
typedef struct prn__sc_met {
    struct prn__sc_met *next;
} prn__sc_met;

typedef struct prn__sc_chain {
    int64_t j;            /* index; -1: slot free */
    size_t step;          /* guesses tried since the start or its last new cycle */
    int state;            /* 0 running, 1 candidate to judge, 2 ended */
    prn__sc_met *met, *met_tail; /* the distinct cycles it met, in order */
    prn__sc_rng rng;
    uint64_t recent[8];   /* hashes of the last guesses: a chain that comes
                           * back to one is in a loop and re-randomises */
    unsigned char *guess; /* k x R */
    unsigned char *seen;  /* k x R: patterns the candidate visits */
    double *pts;          /* (k + 1) x M */
} prn__sc_chain;

typedef struct prn__sc_cycle_node {
    struct prn__sc_cycle_node *next;
    prn_scyfi_cycle c;
} prn__sc_cycle_node;

typedef struct prn__sc {
    prn_context *ctx;
    const prn_backend *be;
    const prn_pwl_model *m;
    prn_scyfi_options o;
    size_t M, R, k;
    int nt;
    unsigned char *pool;  /* npool x R distinct patterns (shallow kinds) */
    size_t npool;
    /* per thread: J, T (M x M), c, v, tmp (M + 2 H + M) */
    double *scratch;
    size_t scratch_per;
    double *sys, *rhs;    /* batch x M x M, batch x M (host staging) */
    int *info;
    void *dsys, *drhs;    /* backend buffers */
    void *dP, *dT;        /* device products (batch x M x M each) */
    int dev;              /* form the products by the backend's GEMM */
    prn__sc_chain *chains;
    size_t batch;
    prn__sc_cycle_node *head, *tail;
    size_t ncycles, found_k;
    double solves, singular;
    int part_told;        /* partitioned: the other processes know of a failure */
} prn__sc;

/* J and c of one pattern d. */
PRN__FN void prn__sc_affine(const prn_pwl_model *m, const unsigned char *d, double *J, double *c) {
    size_t M = m->M, i, j, q;
    if (m->full_A) memcpy(J, m->A, M * M * sizeof(double));
    else {
        memset(J, 0, M * M * sizeof(double));
        for (i = 0; i < M; ++i) J[i * M + i] = m->A[i];
    }
    if (!prn__pwl_shallow(m)) {
        size_t lin = m->kind == PRN_PWL_ALRNN ? M - m->P : 0;
        for (i = 0; i < M; ++i) {
            const double *w = m->W + i * M;
            double *Ji = J + i * M;
            for (j = 0; j < M; ++j)
                if (j < lin || d[j - lin]) Ji[j] += w[j];
            c[i] = m->h[i];
        }
    } else {
        size_t H = m->H;
        int clipped = m->kind == PRN_PWL_CLIPPED_SHPLRNN;
        for (i = 0; i < M; ++i) {
            const double *w1 = m->W1 + i * H;
            double *Ji = J + i * M, ci = m->h1[i];
            for (q = 0; q < H; ++q) {
                double g = (double)d[q] - (clipped ? (double)d[H + q] : 0.0), s = w1[q] * g;
                const double *w2 = m->W2 + q * M;
                if (d[q]) ci += w1[q] * m->h2[q];
                if (s == 0) continue;
                PRN__SIMD for (j = 0; j < M; ++j) Ji[j] += s * w2[j];
            }
            c[i] = ci;
        }
    }
}

/* C = A B for M x M row-major (C distinct). par: thread the rows. */
PRN__FN void prn__sc_gemm(size_t M, const double *A, const double *B, double *C, int par, int nt) {
    long i;
#ifdef PARRNN_USE_CBLAS
    /* Only for large M, where the chains are not threaded (CBLAS threads
     * itself): the same arithmetic for any batch and thread count. */
    if (M >= 128) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)M, (int)M, 1.0, A, (int)M, B, (int)M, 0.0,
                    C, (int)M);
        return;
    }
#endif
    (void)nt; (void)par;
    nt = prn__work_nt((double)M * M * M, nt); /* a fork per product: only where it pays */
#ifdef _OPENMP
    PRN__PRAGMA(omp parallel for num_threads(nt) schedule(static) if(par && nt > 1))
#endif
    for (i = 0; i < (long)M; ++i) {
        double *Ci = C + (size_t)i * M;
        const double *Ai = A + (size_t)i * M;
        size_t q, j;
        memset(Ci, 0, M * sizeof(double));
        for (q = 0; q < M; ++q) {
            double a = Ai[q];
            const double *Bq = B + q * M;
            if (a == 0) continue;
            PRN__SIMD for (j = 0; j < M; ++j) Ci[j] += a * Bq[j];
        }
    }
}

/* v <- J v + c (M x M row-major J; tv: M doubles of scratch). */
PRN__FN void prn__sc_affine_step(size_t M, const double *J, const double *c, double *v, double *tv) {
    size_t i, j;
    for (i = 0; i < M; ++i) {
        const double *Ji = J + i * M;
        double a = c[i];
        for (j = 0; j < M; ++j) a += Ji[j] * v[j];
        tv[i] = a;
    }
    memcpy(v, tv, M * sizeof(double));
}

/* FNV-1a of n bytes: patterns as hash keys. */
PRN__FN uint64_t prn__sc_hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* P = J_k ... J_1 into P, v = the affine part, for patterns g (k x R). */
PRN__FN void prn__sc_product(prn__sc *s, const unsigned char *g, double *P, double *v, double *scr, int par) {
    size_t M = s->M, l;
    double *J = scr, *T = scr + M * M, *c = T + M * M, *tv = c + M;
    prn__sc_affine(s->m, g, P, v);
    for (l = 1; l < s->k; ++l) {
        prn__sc_affine(s->m, g + l * s->R, J, c);
        prn__sc_gemm(M, J, P, T, par, s->nt);
        memcpy(P, T, M * M * sizeof(double));
        prn__sc_affine_step(M, J, c, v, tv);
    }
}

/* A random guess (k patterns) for chain ch. */
PRN__FN void prn__sc_random_guess(prn__sc *s, prn__sc_chain *ch) {
    size_t l, i, R = s->R;
    for (l = 0; l < s->k; ++l) {
        unsigned char *d = ch->guess + l * R;
        if (s->pool) {
            memcpy(d, s->pool + (size_t)(prn__sc_u32(&ch->rng) % (uint32_t)s->npool) * R, R);
        } else {
            uint32_t w = 0;
            for (i = 0; i < R; ++i) {
                if (i % 32 == 0) w = prn__sc_u32(&ch->rng);
                d[i] = (unsigned char)((w >> (i % 32)) & 1u);
            }
        }
    }
}

PRN__FN void prn__sc_start(prn__sc *s, prn__sc_chain *ch, int64_t j) {
    ch->j = j;
    ch->step = 0;
    ch->state = 0;
    ch->met = ch->met_tail = NULL;
    memset(ch->recent, 0, sizeof ch->recent);
    if (s->o.exhaustive) {
        /* Sequence j: bit b of j is bit b of the concatenated patterns. */
        size_t b, n = s->k * s->R;
        for (b = 0; b < n; ++b) ch->guess[b] = (unsigned char)(((uint64_t)j >> b) & 1u);
        return;
    }
    ch->rng.key = s->o.seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(s->k + 1));
    ch->rng.ctr = (uint64_t)j << 32;
    ch->rng.left = 0;
    prn__sc_random_guess(s, ch);
}

PRN__FN double prn__sc_inf_norm(const double *x, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}
PRN__FN int prn__sc_same(const double *a, const double *b, size_t n, double tol) {
    size_t i;
    double d = 0;
    for (i = 0; i < n; ++i) d = fabs(a[i] - b[i]) > d ? fabs(a[i] - b[i]) : d;
    return d <= tol * (1 + prn__sc_inf_norm(a, n));
}

/* After the solve: x is z_1. Iterates the model, compares patterns. */
PRN__FN void prn__sc_next_guess(prn__sc *s, prn__sc_chain *ch, int ok);
PRN__FN void prn__sc_check(prn__sc *s, prn__sc_chain *ch, const double *x, int info, double *scr) {
    size_t M = s->M, R = s->R, k = s->k, l, i;
    int ok = info == 0;
    for (i = 0; ok && i < M; ++i) ok = x[i] - x[i] == 0;
    ch->step++;
    if (ok) {
        memcpy(ch->pts, x, M * sizeof(double));
        for (l = 0; l < k; ++l) prn__pwl_next(s->m, ch->pts + l * M, ch->pts + (l + 1) * M, ch->seen + l * R, scr);
        if (memcmp(ch->seen, ch->guess, k * R) == 0 &&
            prn__sc_same(ch->pts, ch->pts + k * M, M, 1e-6)) { /* closes: consistent */
            ch->state = 1; /* judged serially: prn__sc_candidate */
            return;
        }
        for (i = 0; ok && i < (k + 1) * M; ++i) ok = ch->pts[i] - ch->pts[i] == 0;
    }
    prn__sc_next_guess(s, ch, ok);
}

/* The next guess: the patterns visited, unless the candidate was singular,
 * overflowed or the chain came back to a recent guess (re-randomise). */
PRN__FN void prn__sc_next_guess(prn__sc *s, prn__sc_chain *ch, int ok) {
    size_t i, k = s->k, R = s->R;
    if (s->o.exhaustive || ch->step >= s->o.inner) { ch->state = 2; return; }
    if (ok) {
        uint64_t h = prn__sc_hash(ch->seen, k * R);
        for (i = 0; i < 8 && ch->recent[i] != h; ++i) {}
        ok = i == 8;
        ch->recent[ch->step % 8] = h;
    }
    if (ok) memcpy(ch->guess, ch->seen, k * R);
    else prn__sc_random_guess(s, ch); /* singular, overflowing or looping: re-randomise */
}

PRN__FN int prn__sc_cmp_eig(double ra, double ia, double rb, double ib) {
    double ma = hypot(ra, ia), mb = hypot(rb, ib); /* squares overflow */
    if (ma != mb) return ma > mb ? -1 : 1;
    if (ra != rb) return ra > rb ? -1 : 1;
    if (ia != ib) return ia > ib ? -1 : 1;
    return 0;
}
PRN__FN void prn__sc_sort_eig(size_t n, double *re, double *im) {
    size_t i, j; /* insertion sort: n is small next to the n^3 of the QR */
    for (i = 1; i < n; ++i) {
        double r = re[i], m = im[i];
        for (j = i; j > 0 && prn__sc_cmp_eig(r, m, re[j - 1], im[j - 1]) < 0; --j) {
            re[j] = re[j - 1];
            im[j] = im[j - 1];
        }
        re[j] = r;
        im[j] = m;
    }
}

PRN__FN int prn__sc_close(const prn__sc *s, const double *a, const double *b) {
    return prn__sc_same(a, b, s->M, s->o.tol);
}

/* A consistent candidate of chain ch (serially, after the solves): kept
 * when it is not a lower-order cycle repeated and new to the chain, which
 * then starts its count of steps again; either way the chain goes on from
 * a random guess, as the reference implementation's inner loop does. */
PRN__FN prn_status prn__sc_candidate(prn__sc *s, prn__sc_chain *ch) {
    size_t M = s->M, k = s->k, R = s->R, d, p;
    prn__sc_met *n;
    int keep = 1;
    for (d = 1; d < k && keep; ++d)
        if (k % d == 0 && prn__sc_close(s, ch->pts, ch->pts + d * M)) keep = 0;
    for (n = ch->met; n && keep; n = n->next) {
        const double *q = (const double *)(void *)(n + 1);
        for (p = 0; p < k && keep; ++p)
            if (prn__sc_close(s, q + p * M, ch->pts)) keep = 0;
    }
    if (keep) {
        n = (prn__sc_met *)prn_alloc(s->ctx, sizeof *n + k * M * sizeof(double) + k * R);
        if (!n) return PRN_ERR_OUT_OF_MEMORY;
        n->next = NULL;
        memcpy(n + 1, ch->pts, k * M * sizeof(double));
        memcpy((unsigned char *)(void *)(n + 1) + k * M * sizeof(double), ch->seen, k * R);
        if (ch->met_tail) ch->met_tail->next = n;
        else ch->met = n;
        ch->met_tail = n;
        ch->step = 0;
    }
    ch->state = 0;
    if (s->o.exhaustive) ch->state = 2;
    else prn__sc_random_guess(s, ch);
    if (ch->step >= s->o.inner) ch->state = 2;
    return PRN_OK;
}

PRN__FN void prn__sc_free_met(prn__sc *s, prn__sc_chain *ch) {
    while (ch->met) {
        prn__sc_met *nx = ch->met->next;
        prn_free(s->ctx, ch->met);
        ch->met = nx;
    }
    ch->met_tail = NULL;
}

/* A chain's end, judged in index order: its cycles that are new to the
 * search are kept. *fresh counts them. */
PRN__FN prn_status prn__sc_commit(prn__sc *s, prn__sc_chain *ch, size_t *fresh) {
    size_t M = s->M, k = s->k;
    prn__sc_met *mt;
    double *scr = s->scratch;
    *fresh = 0;
    for (mt = ch->met; mt; mt = mt->next) {
        const double *pts = (const double *)(void *)(mt + 1);
        const unsigned char *pat = (const unsigned char *)(pts + k * M);
        prn__sc_cycle_node *n;
        int dup = 0;
        if (s->o.max_cycles > 0 && *fresh + s->found_k >= s->o.max_cycles) break;
        for (n = s->head; n && !dup; n = n->next) {
            size_t p;
            if (n->c.k != k) continue;
            for (p = 0; p < k && !dup; ++p) dup = prn__sc_close(s, n->c.points + p * M, pts);
        }
        if (dup) continue;
        /* The points and eigenvalues are one block of their own: the result
         * takes it over as is (prn_scyfi_free frees points). */
        n = (prn__sc_cycle_node *)prn_alloc(s->ctx, sizeof *n);
        if (!n) return PRN_ERR_OUT_OF_MEMORY;
        memset(n, 0, sizeof *n);
        n->c.k = k;
        n->c.points = (double *)prn_alloc(s->ctx, (k * M + 2 * M) * sizeof(double));
        if (!n->c.points) { prn_free(s->ctx, n); return PRN_ERR_OUT_OF_MEMORY; }
        n->c.eig_re = n->c.points + k * M;
        n->c.eig_im = n->c.eig_re + M;
        memcpy(n->c.points, pts, k * M * sizeof(double));
        {   /* The k-step Jacobian at the cycle (its own patterns) and its spectrum. */
            double *P = scr + 2 * M * M + 2 * M, *v = P + M * M, lo = HUGE_VAL, hi = 0;
            size_t i;
            prn_status st;
            prn__sc_product(s, pat, P, v, scr, 1);
            st = prn_eigenvalues(s->ctx, M, P, n->c.eig_re, n->c.eig_im);
            if (st != PRN_OK) { prn_free(s->ctx, n->c.points); prn_free(s->ctx, n); return st; }
            for (i = 0; i < M; ++i) {
                double a = sqrt(n->c.eig_re[i] * n->c.eig_re[i] + n->c.eig_im[i] * n->c.eig_im[i]);
                lo = a < lo ? a : lo;
                hi = a > hi ? a : hi;
            }
            n->c.type = hi < 1 ? PRN_CYCLE_STABLE : lo > 1 ? PRN_CYCLE_UNSTABLE : PRN_CYCLE_SADDLE;
        }
        if (s->tail) s->tail->next = n;
        else s->head = n;
        s->tail = n;
        s->ncycles++;
        ++*fresh;
    }
    return PRN_OK;
}

/* The pool of patterns that occur (shallow kinds): sampled points and
 * short trajectories from the first of them. */
PRN__FN prn_status prn__sc_make_pool(prn__sc *s) {
    size_t M = s->M, R = s->R, cap, nslots, i, t, npts = (size_t)s->o.pool_size, ntraj = npts < 20 ? npts : 20;
    size_t steps = 200, want = npts + ntraj * steps;
    size_t *slot;
    double *z, *z2, *tmp;
    unsigned char *pat;
    prn__sc_rng rng;
    for (nslots = 64; nslots < 2 * want; nslots *= 2) {}
    cap = want;
    s->pool = (unsigned char *)prn_alloc(s->ctx, cap * R + R);
    slot = (size_t *)prn_alloc(s->ctx, nslots * sizeof(size_t));
    z = (double *)prn_alloc(s->ctx, (3 * M + 2 * prn__pwl_hidden(s->m)) * sizeof(double));
    pat = (unsigned char *)prn_alloc(s->ctx, R);
    if (!s->pool || !slot || !z || !pat) {
        prn_free(s->ctx, slot); prn_free(s->ctx, z); prn_free(s->ctx, pat);
        return PRN_ERR_OUT_OF_MEMORY;
    }
    z2 = z + M;
    tmp = z2 + M;
    for (i = 0; i < nslots; ++i) slot[i] = (size_t)-1;
    rng.key = s->o.seed ^ 0xD1B54A32D192ED03ull;
    rng.ctr = 0;
    rng.left = 0;
    for (i = 0; i < npts; ++i) {
        size_t q;
        /* Every other point further out (up to 100 x pool_range, log-uniform):
         * cycles may lie in regions that do not reach the box. */
        double scale = s->o.pool_range * (i % 2 ? exp(4.605170186 * ((double)prn__sc_u32(&rng) + 0.5) / 4294967296.0) : 1.0);
        for (q = 0; q < M; ++q)
            z[q] = scale * (2.0 * ((double)prn__sc_u32(&rng) + 0.5) / 4294967296.0 - 1.0);
        for (t = 0; t <= (i < ntraj ? steps : 0); ++t) {
            uint64_t hsh;
            size_t b, hpos;
            prn__pwl_next(s->m, z, z2, pat, tmp);
            hsh = prn__sc_hash(pat, R);
            for (hpos = (size_t)(hsh & (nslots - 1)); slot[hpos] != (size_t)-1; hpos = (hpos + 1) & (nslots - 1))
                if (memcmp(s->pool + slot[hpos] * R, pat, R) == 0) break;
            if (slot[hpos] == (size_t)-1) {
                slot[hpos] = s->npool;
                memcpy(s->pool + s->npool * R, pat, R);
                s->npool++;
            }
            for (b = 0; b < M && z2[b] - z2[b] == 0; ++b) {}
            if (b < M) break; /* the trajectory left the finite numbers */
            memcpy(z, z2, M * sizeof(double));
        }
    }
    prn_free(s->ctx, slot);
    prn_free(s->ctx, z);
    prn_free(s->ctx, pat);
    return PRN_OK;
}

/* Default loop counts by order, as the reference implementation's. */
PRN__FN void prn__sc_default_loops(size_t k, size_t *outer, size_t *inner) {
    if (k < 3) { *outer = 10; *inner = 20; }
    else if (k < 6) { *outer = 10; *inner = 60; }
    else if (k < 8) { *outer = 10; *inner = 300; }
    else if (k < 20) { *outer = 40; *inner = 1080; }
    else if (k < 30) { *outer = 40; *inner = 1115; }
    else { *outer = 100; *inner = 1115; }
}

/* The systems of the running chains with the products on the backend:
 * level by level, the host builds J_l of every chain (and the affine part
 * v), one upload and one batched GEMM P <- J_l P; the last GEMM forms
 * I - J_k P in dsys. The M^3 work of a candidate runs where the solve
 * does, and only M^2 numbers per level cross. */
PRN__FN prn_status prn__sc_build_device(prn__sc *s, const int *run, int nrun, int par) {
    size_t M = s->M, k = s->k, R = s->R, MM = M * M, l;
    prn_status st = PRN_OK;
    void *P = s->dP, *T = s->dT;
    long r;
    (void)par;
    for (l = 0; l < k && st == PRN_OK; ++l) {
#ifdef _OPENMP
        PRN__PRAGMA(omp parallel for num_threads(s->nt) schedule(static) if(par))
#endif
        for (r = 0; r < nrun; ++r) {
            int tid = 0;
            double *J = s->sys + (size_t)r * MM, *v = s->rhs + (size_t)r * M, *c, *tv;
#ifdef _OPENMP
            if (par) tid = omp_get_thread_num();
#endif
            c = s->scratch + (size_t)tid * s->scratch_per;
            tv = c + M;
            prn__sc_affine(s->m, s->chains[run[r]].guess + l * R, J, c);
            if (l == 0) memcpy(v, c, M * sizeof(double));
            else prn__sc_affine_step(M, J, c, v, tv);
        }
        if (l == 0) { st = s->be->buf_upload(s->ctx, P, 0, s->sys, (size_t)nrun * MM * sizeof(double)); continue; }
        if (l + 1 < k) {
            void *t;
            st = s->be->buf_upload(s->ctx, s->dsys, 0, s->sys, (size_t)nrun * MM * sizeof(double));
            if (st == PRN_OK)
                st = s->be->gemm(s->ctx, PRN_F64, 0, 0, M, M, M, 1.0, s->dsys, M, MM, P, M, MM, 0.0, T, M, MM, (size_t)nrun);
            t = P; P = T; T = t;
        } else {
            size_t i;
            st = s->be->buf_upload(s->ctx, T, 0, s->sys, (size_t)nrun * MM * sizeof(double));
            memset(s->sys, 0, (size_t)nrun * MM * sizeof(double));
            for (r = 0; r < nrun; ++r)
                for (i = 0; i < M; ++i) s->sys[(size_t)r * MM + i * M + i] = 1.0;
            if (st == PRN_OK) st = s->be->buf_upload(s->ctx, s->dsys, 0, s->sys, (size_t)nrun * MM * sizeof(double));
            if (st == PRN_OK)
                st = s->be->gemm(s->ctx, PRN_F64, 0, 0, M, M, M, -1.0, T, M, MM, P, M, MM, 1.0, s->dsys, M, MM, (size_t)nrun);
        }
    }
    return st;
}

/* Every chain of order s->k. */
/* One guess of every running chain: the systems built, solved in one
 * batched call, checked; consistent candidates go to their chains. */
PRN__FN prn_status prn__sc_round(prn__sc *s) {
    size_t M = s->M, k = s->k, H = prn__pwl_hidden(s->m);
    int nrun = 0, *run = s->info + s->batch; /* indices of running slots (batch < 2^31) */
    size_t b;
    long r;
    prn_status st = PRN_OK;
    /* Work of one candidate, to decide whether threads pay. */
    double work = (double)k * ((double)M * M * M + (double)M * M * H + 64.0);
    int par_chains;
    for (b = 0; b < s->batch; ++b)
        if (s->chains[b].j >= 0 && s->chains[b].state == 0) run[nrun++] = (int)b;
    if (nrun == 0) return PRN_OK;
    /* Threads over chains when there is enough work, except for large M
     * with CBLAS, whose GEMMs thread themselves. */
    par_chains = nrun > 1 && s->nt > 1 && work * nrun >= 1048576.0 && !(PRN__SC_CBLAS && M >= 128);
    if (s->dev && k >= 2) {
        st = prn__sc_build_device(s, run, nrun, nrun > 1 && s->nt > 1 && (double)nrun * M * M * (H + 1) >= 1048576.0);
        if (st == PRN_OK) st = s->be->buf_upload(s->ctx, s->drhs, 0, s->rhs, (size_t)nrun * M * sizeof(double));
        goto solve;
    }
#ifdef _OPENMP
    PRN__PRAGMA(omp parallel for num_threads(s->nt) schedule(dynamic) if(par_chains))
#endif
    for (r = 0; r < nrun; ++r) {
        int tid = 0;
        size_t i;
        double *P = s->sys + (size_t)r * M * M, *v = s->rhs + (size_t)r * M;
#ifdef _OPENMP
        if (par_chains) tid = omp_get_thread_num();
#endif
        prn__sc_product(s, s->chains[run[r]].guess, P, v, s->scratch + (size_t)tid * s->scratch_per, !par_chains);
        for (i = 0; i < M * M; ++i) P[i] = -P[i];
        for (i = 0; i < M; ++i) P[i * M + i] += 1.0;
    }
    st = s->be->buf_upload(s->ctx, s->dsys, 0, s->sys, (size_t)nrun * M * M * sizeof(double));
    if (st == PRN_OK) st = s->be->buf_upload(s->ctx, s->drhs, 0, s->rhs, (size_t)nrun * M * sizeof(double));
solve:
    if (st == PRN_OK) st = s->be->solve_batched(s->ctx, PRN_F64, (size_t)nrun, M, s->dsys, s->drhs, s->info);
    if (st == PRN_OK) st = s->be->buf_download(s->ctx, s->drhs, 0, s->rhs, (size_t)nrun * M * sizeof(double));
    if (st != PRN_OK) return st;
    s->solves += nrun;
    for (r = 0; r < nrun; ++r) s->singular += s->info[r] != 0;
#ifdef _OPENMP
    PRN__PRAGMA(omp parallel for num_threads(s->nt) schedule(dynamic) if(par_chains))
#endif
    for (r = 0; r < nrun; ++r) {
        int tid = 0;
#ifdef _OPENMP
        if (par_chains) tid = omp_get_thread_num();
#endif
        prn__sc_check(s, &s->chains[run[r]], s->rhs + (size_t)r * M, s->info[r],
                      s->scratch + (size_t)tid * s->scratch_per);
    }
    for (r = 0; r < nrun; ++r)
        if (s->chains[run[r]].state == 1 && (st = prn__sc_candidate(s, &s->chains[run[r]])) != PRN_OK) return st;
    return PRN_OK;
}

/* Judges one ended chain (the next in index order); *end: the order ends. */
PRN__FN prn_status prn__sc_judge(prn__sc *s, prn__sc_chain *ch, int64_t total, int64_t *done, size_t *fruitless,
                                 int *end) {
    size_t fresh = 0;
    prn_status st = prn__sc_commit(s, ch, &fresh);
    prn__sc_free_met(s, ch);
    if (st != PRN_OK) return st;
    ch->j = -1;
    ++*done;
    s->found_k += fresh;
    if (fresh) *fruitless = 0;
    else ++*fruitless;
    *end = (total < 0 && *fruitless >= s->o.outer) || (total >= 0 && *done == total) ||
           (s->o.max_cycles > 0 && s->found_k >= s->o.max_cycles);
    return PRN_OK;
}

/* A chain's result as exchanged between processes: j, the number of cycles
 * met, then each one's points (k x M doubles) and patterns (k x R bytes,
 * padded to 8). */
PRN__FN size_t prn__sc_met_bytes(const prn__sc *s) {
    return s->k * s->M * sizeof(double) + (s->k * s->R + 7) / 8 * 8;
}

/* The partitioned search (prn_scyfi_options.part_*): in each round every
 * process runs its block of `batch` chains to their ends, the blocks are
 * exchanged and every process judges all of them in index order, exactly
 * as one process would; so the result does not depend on the processes. */
PRN__FN prn_status prn__sc_order_parts(prn__sc *s, int64_t total) {
    size_t mb = prn__sc_met_bytes(s), kM = s->k * s->M, kR = s->k * s->R, cap, used, pos, all_bytes = 0;
    int64_t base = 0, done = 0, j;
    size_t fruitless = 0, b, nch;
    int end = 0;
    unsigned char *buf = NULL, *all = NULL;
    prn_status st = PRN_OK;
    for (;;) {
        int64_t lo = base + (int64_t)s->o.part_rank * (int64_t)s->batch;
        prn__sc_met *mt;
        for (b = 0; b < s->batch; ++b) {
            s->chains[b].j = -1;
            if (total < 0 || lo + (int64_t)b < total) prn__sc_start(s, &s->chains[b], lo + (int64_t)b);
        }
        for (;;) {
            int running = 0;
            for (b = 0; b < s->batch; ++b) running += s->chains[b].j >= 0 && s->chains[b].state == 0;
            if (!running) break;
            if ((st = prn__sc_round(s)) != PRN_OK) goto out;
        }
        /* This block's message: solves, singular, chains, then the chains. */
        cap = 3 * sizeof(double);
        for (b = 0; b < s->batch; ++b) {
            if (s->chains[b].j < 0) continue;
            cap += 2 * sizeof(int64_t);
            for (mt = s->chains[b].met; mt; mt = mt->next) cap += mb;
        }
        if (!(buf = (unsigned char *)prn_alloc(s->ctx, cap))) { st = PRN_ERR_OUT_OF_MEMORY; goto out; }
        memset(buf, 0, cap);
        {
            double h[3];
            h[0] = s->solves; h[1] = s->singular; h[2] = 0;
            for (b = 0; b < s->batch; ++b) h[2] += s->chains[b].j >= 0;
            memcpy(buf, h, sizeof h);
        }
        s->solves = s->singular = 0; /* counted again from every process's messages */
        used = 3 * sizeof(double);
        for (b = 0; b < s->batch; ++b) {
            int64_t hd[2];
            if (s->chains[b].j < 0) continue;
            hd[0] = s->chains[b].j;
            hd[1] = 0;
            for (mt = s->chains[b].met; mt; mt = mt->next) hd[1]++;
            memcpy(buf + used, hd, sizeof hd);
            used += sizeof hd;
            for (mt = s->chains[b].met; mt; mt = mt->next) {
                memcpy(buf + used, mt + 1, kM * sizeof(double) + kR);
                used += mb;
            }
            prn__sc_free_met(s, &s->chains[b]);
            s->chains[b].j = -1;
        }
        st = s->o.part_exchange(s->ctx, s->o.part_user, 0, buf, used, (void **)&all, &all_bytes);
        prn_free(s->ctx, buf);
        buf = NULL;
        if (st != PRN_OK) { s->part_told = 1; goto out; }
        /* Judge every process's chains in index order (the messages come
         * in process order, each in index order); the chains after the
         * order's end are skipped, their solves still counted. */
        pos = 0;
        while (pos + 3 * sizeof(double) <= all_bytes) {
            double h[3];
            memcpy(h, all + pos, sizeof h);
            pos += sizeof h;
            s->solves += h[0];
            s->singular += h[1];
            nch = (size_t)h[2];
            for (b = 0; b < nch; ++b) {
                int64_t hd[2], c;
                prn__sc_chain *ch = &s->chains[0];
                memcpy(hd, all + pos, sizeof hd);
                pos += sizeof hd;
                if (end) { pos += (size_t)hd[1] * mb; continue; }
                j = hd[0];
                ch->j = j;
                ch->met = ch->met_tail = NULL;
                for (c = 0; c < hd[1]; ++c, pos += mb) {
                    prn__sc_met *n = (prn__sc_met *)prn_alloc(s->ctx, sizeof *n + kM * sizeof(double) + kR);
                    if (!n) { st = PRN_ERR_OUT_OF_MEMORY; goto out; }
                    n->next = NULL;
                    memcpy(n + 1, all + pos, kM * sizeof(double) + kR);
                    if (ch->met_tail) ch->met_tail->next = n;
                    else ch->met = n;
                    ch->met_tail = n;
                }
                if (j != done) {
                    st = PRN__ERR(s->ctx, PRN_ERR_STATE, "prn_scyfi: chain %ld arrived out of order", (long)j);
                    goto out;
                }
                if ((st = prn__sc_judge(s, ch, total, &done, &fruitless, &end)) != PRN_OK) goto out;
            }
        }
        prn_free(s->ctx, all);
        all = NULL;
        if (end) break;
        base += (int64_t)s->o.part_size * (int64_t)s->batch;
    }
out:
    prn__sc_free_met(s, &s->chains[0]);
    prn_free(s->ctx, buf);
    prn_free(s->ctx, all);
    return st;
}

PRN__FN prn_status prn__sc_order(prn__sc *s, const prn_scyfi_options *user) {
    size_t k = s->k;
    int64_t next = 0, done = 0, total = -1;
    size_t fruitless = 0, b, dout, din;
    int end = 0;
    prn_status st;
    prn__sc_default_loops(k, &dout, &din);
    s->o.outer = user && user->outer > 0 ? user->outer : dout;
    s->o.inner = user && user->inner > 0 ? user->inner : din;
    s->found_k = 0;
    if (s->o.exhaustive) total = (int64_t)1 << (k * s->R);
    for (b = 0; b < s->batch; ++b) { prn__sc_free_met(s, &s->chains[b]); s->chains[b].j = -1; }
    if (s->o.part_exchange) return prn__sc_order_parts(s, total);
    for (;;) {
        /* Fill free slots with the next chains. */
        for (b = 0; b < s->batch; ++b)
            if (s->chains[b].j < 0 && (total < 0 || next < total)) prn__sc_start(s, &s->chains[b], next++);
        if ((st = prn__sc_round(s)) != PRN_OK) return st;
        /* Judge the ended chains in index order. */
        for (;;) {
            for (b = 0; b < s->batch && s->chains[b].j != done; ++b) {}
            if (b == s->batch || s->chains[b].state != 2) break;
            if ((st = prn__sc_judge(s, &s->chains[b], total, &done, &fruitless, &end)) != PRN_OK) return st;
            if (end) return PRN_OK;
        }
    }
}

PRN__FN void prn__sc_release(prn__sc *s) {
    prn__sc_cycle_node *n = s->head;
    size_t b;
    for (b = 0; s->chains && b < s->batch; ++b) prn__sc_free_met(s, &s->chains[b]);
    if (s->dsys) s->be->buf_free(s->ctx, s->dsys);
    if (s->drhs) s->be->buf_free(s->ctx, s->drhs);
    if (s->dP) s->be->buf_free(s->ctx, s->dP);
    if (s->dT) s->be->buf_free(s->ctx, s->dT);
    prn_free(s->ctx, s->sys);
    prn_free(s->ctx, s->scratch);
    prn_free(s->ctx, s->pool);
    prn_free(s->ctx, s->chains);
    while (n) {
        prn__sc_cycle_node *nx = n->next;
        prn_free(s->ctx, n->c.points); /* NULL once handed to the result */
        prn_free(s->ctx, n);
        n = nx;
    }
}

PRN__DEF void prn_scyfi_free(prn_context *ctx, prn_scyfi_result *r) {
    size_t i;
    if (!ctx || !r) return;
    for (i = 0; i < r->num_cycles; ++i) prn_free(ctx, r->cycles[i].points);
    prn_free(ctx, r);
}

PRN__FN prn_status prn__scyfi(prn_context *ctx, const prn_pwl_model *m, const prn_scyfi_options *opt,
                              prn_scyfi_result **out, int *told);
PRN__DEF prn_status prn_scyfi(prn_context *ctx, const prn_pwl_model *m, const prn_scyfi_options *opt,
                              prn_scyfi_result **out) {
    prn_scyfi_result *r = NULL;
    int told = 0;
    prn_status st = out ? prn__scyfi(ctx, m, opt, &r, &told)
                        : PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "prn_scyfi: argument 'out' is NULL");
    if (opt && opt->part_exchange && !told) {
        /* The closing exchange: every process learns whether all succeeded. */
        void *all = NULL;
        size_t n = 0;
        prn_status se = opt->part_exchange(ctx, opt->part_user, st != PRN_OK, NULL, 0, &all, &n);
        prn_free(ctx, all);
        if (st == PRN_OK && se != PRN_OK) { prn_scyfi_free(ctx, r); r = NULL; st = se; }
    }
    if (st == PRN_OK) *out = r;
    return st;
}
PRN__FN prn_status prn__scyfi(prn_context *ctx, const prn_pwl_model *m, const prn_scyfi_options *opt,
                              prn_scyfi_result **out, int *told) {
    static const char *fn = "prn_scyfi";
    prn__sc s;
    prn_scyfi_result *res;
    prn_status st = PRN_OK;
    size_t M, R, per_chain, chain_bytes, i, b, maxout, k;
    PRN__TRY(prn__pwl_check(ctx, fn, m));
    PRN__CHECK_OUT(ctx, fn, out);
    memset(&s, 0, sizeof s);
    if (opt) s.o = *opt;
    if (s.o.kmax == 0) s.o.kmax = 1;
    if (s.o.kmax > PRN_SCYFI_MAX_KMAX)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt->kmax' is %lu; need 1 .. %d", fn,
                        (unsigned long)s.o.kmax, PRN_SCYFI_MAX_KMAX);
    /* Counts past PRN__SC_MAX_COUNT (INT_MAX) are refused (a negative int converted to size_t
     * lands there): the search indexes its chains with int, and the
     * buffers a batch needs stay within what size_t can count. */
    if (s.o.outer > PRN__SC_MAX_COUNT || s.o.inner > PRN__SC_MAX_COUNT || s.o.batch > PRN__SC_MAX_COUNT ||
        s.o.pool_size > PRN__SC_MAX_COUNT || s.o.max_cycles > PRN__SC_MAX_COUNT)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: a count in 'opt' (outer %lu, inner %lu, batch %lu, pool_size "
                        "%lu, max_cycles %lu) is above %d", fn, (unsigned long)s.o.outer, (unsigned long)s.o.inner,
                        (unsigned long)s.o.batch, (unsigned long)s.o.pool_size, (unsigned long)s.o.max_cycles,
                        PRN__SC_MAX_COUNT);
    if (s.o.tol == 0) s.o.tol = 1e-6;
    if (s.o.exhaustive_limit == 0) s.o.exhaustive_limit = (uint64_t)1 << 22;
    if (s.o.pool_size == 0) s.o.pool_size = 1000;
    if (s.o.pool_range == 0) s.o.pool_range = 10;
    if (!(s.o.tol > 0 && s.o.tol < 1) || !(s.o.pool_range > 0 && s.o.pool_range < 1e300))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt': tol %g must be in (0, 1), pool_range %g "
                        "positive", fn, s.o.tol, s.o.pool_range);
    if (s.o.part_exchange && !(s.o.part_size >= 1 && s.o.part_rank >= 0 && s.o.part_rank < s.o.part_size))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'opt': part_rank %d must be in [0, part_size %d)",
                        fn, s.o.part_rank, s.o.part_size);
    s.ctx = ctx;
    s.be = prn_context_backend(ctx);
    s.m = m;
    s.M = M = m->M;
    s.R = R = prn__pwl_bits(m);
    s.nt = prn__team(ctx); /* one thread while the machine is busy: the cycles are the same for any count */
    if (!s.be->solve_batched)
        return PRN__ERR(ctx, PRN_ERR_UNSUPPORTED, "%s: the backend '%s' has no solve_batched", fn, s.be->name);
    if (s.o.exhaustive) {
        double n = pow(2.0, (double)R * (double)s.o.kmax);
        if (!(n <= (double)s.o.exhaustive_limit) || (double)R * (double)s.o.kmax > 62)
            return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: exhaustive search of order %lu needs 2^(%lu * %lu) = %g "
                            "pattern sequences, more than opt->exhaustive_limit = %.0f", fn, (unsigned long)s.o.kmax,
                            (unsigned long)R, (unsigned long)s.o.kmax, n, (double)s.o.exhaustive_limit);
    }
    /* Chains at once: enough to keep every thread busy and, by default, no
     * more than an order's fruitless limit (the rest would be speculative);
     * systems of at most 64 MiB. */
    maxout = 0;
    for (k = 1; k <= s.o.kmax; ++k) {
        size_t o, in;
        prn__sc_default_loops(k, &o, &in);
        if (s.o.outer > 0) o = s.o.outer;
        maxout = o > maxout ? o : maxout;
    }
    s.batch = s.o.batch > 0 ? s.o.batch : (maxout > 4 * (size_t)s.nt ? maxout : 4 * (size_t)s.nt);
    if (!s.o.batch && s.o.exhaustive) s.batch = 256;
    if (!s.o.batch) {
        size_t cap = ((size_t)64 << 20) / ((M * M + M) * sizeof(double));
        if (s.batch > cap) s.batch = cap > 0 ? cap : 1;
    }
    per_chain = (s.o.kmax * R * 2 + (s.o.kmax + 1) * M * sizeof(double) + 31) / 16 * 16;
    chain_bytes = sizeof(prn__sc_chain) + per_chain;
    /* What a chain of the batch takes (its system and right side, twice
     * more M^2 doubles on a device, info, the chain) must be countable
     * with room to spare: a large opt->batch with a large M would wrap
     * the sizes below and allocate too little. */
    if (s.batch > ((size_t)-1 >> 4) / (3 * (M * M + M) * sizeof(double) + 2 * sizeof(int) + chain_bytes))
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: opt->batch = %lu chains of M = %lu need more memory than "
                        "can be addressed", fn, (unsigned long)s.batch, (unsigned long)M);
    s.scratch_per = 3 * M * M + 4 * M + 2 * prn__pwl_hidden(m) + 8;
    s.scratch = (double *)prn_alloc(ctx, (size_t)s.nt * s.scratch_per * sizeof(double));
    s.sys = (double *)prn_alloc(ctx, s.batch * (M * M + M) * sizeof(double) + 2 * s.batch * sizeof(int));
    s.chains = (prn__sc_chain *)prn_alloc(ctx, s.batch * chain_bytes);
    if (s.chains) memset(s.chains, 0, s.batch * sizeof(prn__sc_chain));
    if (!s.scratch || !s.sys || !s.chains) { st = PRN_ERR_OUT_OF_MEMORY; goto fail; }
    s.rhs = s.sys + s.batch * M * M;
    s.info = (int *)(void *)(s.rhs + s.batch * M);
    for (b = 0; b < s.batch; ++b) {
        unsigned char *base = (unsigned char *)(s.chains + s.batch) + (size_t)b * per_chain;
        s.chains[b].met = s.chains[b].met_tail = NULL;
        s.chains[b].j = -1;
        s.chains[b].pts = (double *)(void *)base;
        s.chains[b].guess = base + (s.o.kmax + 1) * M * sizeof(double);
        s.chains[b].seen = s.chains[b].guess + s.o.kmax * R;
    }
    if ((st = s.be->buf_alloc(ctx, s.batch * M * M * sizeof(double), &s.dsys)) != PRN_OK) goto fail;
    if ((st = s.be->buf_alloc(ctx, s.batch * M * sizeof(double), &s.drhs)) != PRN_OK) goto fail;
    /* Backends other than the reference form the products themselves
     * (products of order 2 and up; o.host_products keeps them here). */
    s.dev = strncmp(s.be->name, "reference", 9) != 0 && s.be->gemm && !s.o.host_products && s.o.kmax >= 2;
    if (s.dev && ((st = s.be->buf_alloc(ctx, s.batch * M * M * sizeof(double), &s.dP)) != PRN_OK ||
                  (st = s.be->buf_alloc(ctx, s.batch * M * M * sizeof(double), &s.dT)) != PRN_OK))
        goto fail;
    if (prn__pwl_shallow(m) && !s.o.exhaustive && (st = prn__sc_make_pool(&s)) != PRN_OK) goto fail;
    for (k = 1; k <= s.o.kmax && st == PRN_OK; ++k) {
        s.k = k;
        st = prn__sc_order(&s, opt);
    }
    if (st != PRN_OK) goto fail;
    res = (prn_scyfi_result *)prn_alloc(ctx, sizeof *res + (size_t)s.ncycles * sizeof(prn_scyfi_cycle) +
                                                 (s.o.kmax + 1) * sizeof(size_t));
    if (!res) { st = PRN_ERR_OUT_OF_MEMORY; goto fail; }
    memset(res, 0, sizeof *res);
    res->M = m->M;
    res->kmax = s.o.kmax;
    res->cycles = (prn_scyfi_cycle *)(void *)(res + 1);
    res->count = (size_t *)(void *)(res->cycles + s.ncycles);
    memset(res->count, 0, (s.o.kmax + 1) * sizeof(size_t));
    res->solves = (uint64_t)s.solves; /* counted in doubles: the MPI messages carry them */
    res->singular = (uint64_t)s.singular;
    {   /* Hand each cycle's block over. */
        prn__sc_cycle_node *n;
        i = 0;
        for (n = s.head; n; n = n->next) {
            res->cycles[i++] = n->c;
            res->count[n->c.k]++;
            n->c.points = NULL;
        }
        res->num_cycles = i;
    }
    prn__sc_release(&s);
    *out = res;
    return PRN_OK;
fail:
    *told = s.part_told;
    prn__sc_release(&s);
    return prn__in_fn(ctx, fn, st);
}

/* --- eigenvalues ------------------------------------------------------------ */
#ifdef PARRNN_USE_LAPACK
#ifdef __cplusplus
extern "C" {
#endif
void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr, double *wi,
            double *vl, const int *ldvl, double *vr, const int *ldvr, double *work, const int *lwork, int *info);
#ifdef __cplusplus
}
#endif
#endif

/* the header's own QR iteration: not compiled where LAPACK's dgeev does the work */
#ifndef PARRNN_USE_LAPACK
/* ------------------------------------------------------------------------
 * Eigenvalues of a real nonsymmetric matrix (no eigenvectors)
 *
 *   1. A power-of-2 rescaling of the whole matrix when its largest entry
 *      is outside [2^-400, 2^400] (exact but for entries pushed into the
 *      subnormals; undone on the eigenvalues), so that no product of two
 *      entries can overflow or underflow badly. n = 2 goes straight to a
 *      scaled closed form (rescaled only near overflow).
 *   2. Balancing (Parlett-Reinsch): symmetric row/column permutations that
 *      isolate eigenvalues (rows/columns that are zero off the diagonal),
 *      then a diagonal similarity by powers of 2 that evens out the
 *      off-diagonal row and column 2-norms of the remaining block [lo, hi]
 *      (a step is taken only if it shrinks the full norms, diagonal
 *      included, by 5%).
 *   3. Householder reduction of the block to upper Hessenberg form.
 *   4. Francis implicit double-shift QR on the Hessenberg block, in
 *      eigenvalues-only mode (each step updates only the active window),
 *      with the conservative (Ahues-Tisseur) deflation test, a start at two
 *      consecutive small subdiagonals, exceptional shifts every 10 steps
 *      without deflation, and a cap of 30 * max(10, size) steps in all.
 *
 * No allocation: re/im serve as work space for the Hessenberg reduction.
 * Returns 1 (re/im NaN where not found) when the iteration cap is reached,
 * or for a non-finite entry.
 * ---------------------------------------------------------------------- */

/* Eigenvalues of [a b; c d]: (r1, i1) and (r2, i2); a complex pair is
 * returned with i1 > 0 and i2 = -i1. Scaled so that nothing overflows,
 * and arranged so that no root is found by a cancelling subtraction of
 * the square root. */
PRN__FN void prn__eig_2x2(double a, double b, double c, double d, double *r1, double *i1, double *r2,
                         double *i2) {
    double p, bmax, bmin, sc, z, sq, t;
    *i1 = 0;
    *i2 = 0;
    if (b == 0 || c == 0) { /* triangular */
        *r1 = a;
        *r2 = d;
        return;
    }
    p = 0.5 * (a - d);
    bmax = fabs(b) > fabs(c) ? fabs(b) : fabs(c);
    bmin = fabs(b) > fabs(c) ? fabs(c) : fabs(b);
    if ((b < 0) != (c < 0)) bmin = -bmin; /* bmax * bmin == b * c */
    sc = fabs(p) > bmax ? fabs(p) : bmax;
    z = p / sc * p + bmax / sc * bmin; /* (p^2 + bc) / sc: the discriminant */
    if (z >= 0) {                      /* two real roots d + p +- sqrt(p^2 + bc) */
        sq = sqrt(sc) * sqrt(z);
        t = p >= 0 ? p + sq : p - sq;  /* |t| >= |p|, so t != 0 */
        *r1 = d + t;
        *r2 = d - bmax / t * bmin;     /* product of the roots' offsets is -bc */
    } else {
        *r1 = d + p;
        *r2 = d + p;
        *i1 = sqrt(sc) * sqrt(-z);
        *i2 = -*i1;
    }
}

/* sqrt(x^2 + y^2) without overflow or underflow */
PRN__FN double prn__eig_hyp(double x, double y) {
    double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    if (m == 0) return 0;
    x /= m;
    y /= m;
    return m * sqrt(x * x + y * y);
}

/* Reflector P = I - tau v v^T, v = (1, v1, v2), with P (x, y, z)^T =
 * (beta, 0, 0)^T. tau = 0 (P = I) when y = z = 0. */
PRN__FN void prn__eig_refl3(double x, double y, double z, double *tau, double *v1, double *v2, double *beta) {
    double s = fabs(x) + fabs(y) + fabs(z), nrm, den;
    if (fabs(y) + fabs(z) == 0) {
        *tau = 0;
        *v1 = 0;
        *v2 = 0;
        *beta = x;
        return;
    }
    nrm = s * sqrt((x / s) * (x / s) + (y / s) * (y / s) + (z / s) * (z / s));
    *beta = x >= 0 ? -nrm : nrm;
    *tau = (*beta - x) / *beta;
    den = x - *beta; /* |den| >= nrm: no cancellation */
    *v1 = y / den;
    *v2 = z / den;
}

/* The first column of (H - s1 I)(H - s2 I), rows m..m+2, divided by a
 * positive scale; shifts s1, s2 = sr1, sr2 (si = 0) or the conjugate pair
 * sr1 +- i si (then sr1 == sr2). h = &H(m, m), ld = row stride. */
PRN__FN void prn__eig_col1(const double *h, ptrdiff_t ld, double sr1, double sr2, double si, double *x, double *y,
                          double *z) {
    double h00 = h[0], h01 = h[1], h10 = h[ld], h11 = h[ld + 1], h21 = h[2 * ld + 1];
    double d2 = h00 - sr2, s = fabs(d2) + fabs(si) + fabs(h10), q;
    if (s == 0) { /* h10 == 0: cannot happen inside an unreduced block */
        *x = 1;
        *y = 0;
        *z = 0;
        return;
    }
    q = h10 / s;
    *x = (h00 - sr1) * (d2 / s) + si * (si / s) + h01 * q; /* (h00-s1)(h00-s2) + h01 h10 */
    *y = q * ((h00 - sr1) + (h11 - sr2));                  /* h10 (h00 + h11 - s1 - s2) */
    *z = q * h21;                                          /* h10 h21 */
}

/* Swaps rows i, j and columns i, j of the n x n matrix a: a permutation
 * similarity, which keeps the eigenvalues. */
PRN__FN void prn__eig_swap(double *a, size_t n, size_t i, size_t j) {
    size_t k;
    for (k = 0; k < n; ++k) { double t = a[i * n + k]; a[i * n + k] = a[j * n + k]; a[j * n + k] = t; }
    for (k = 0; k < n; ++k) { double t = a[k * n + i]; a[k * n + i] = a[k * n + j]; a[k * n + j] = t; }
}

PRN__FN int prn__eig_real(size_t n, double *a, double *re, double *im) {
#define PRN__EH(r, c) a[(size_t)(r) * n + (size_t)(c)]
    const double ulp = DBL_EPSILON, safmin = DBL_MIN;
    const ptrdiff_t N = (ptrdiff_t)n, ld = (ptrdiff_t)n;
    ptrdiff_t i, j, k, lo, hi, l, m, nh, its, total, itmax;
    size_t q, nn = n * n;
    int sexp = 0, found, pass, changed;
    double amax = 0, smlnum;

    if (n == 0) return 0;
    for (q = 0; q < nn; ++q) {
        double v = fabs(a[q]);
        if (!(v <= DBL_MAX)) { /* NaN or Inf */
            for (q = 0; q < n; ++q) re[q] = im[q] = NAN;
            return 1;
        }
        if (v > amax) amax = v;
    }
    for (q = 0; q < n; ++q) re[q] = im[q] = 0;
    if (amax == 0) return 0;
    {
        /* n = 2 needs it only near overflow: the 2x2 formula is scaled.
         * A large matrix is scaled down only as far as the iteration needs
         * (largest entry below 2^emax), not to 1: its small entries would
         * underflow, and balancing needs them (entries 1e200 and 1e-200
         * can have eigenvalues of 1e66). A tiny one is scaled up to 1. */
        int e, emax = n == 2 ? 1000 : 400, emin = n == 2 ? -2000 : -400;
        (void)frexp(amax, &e);
        if (e > emax) sexp = e - emax;
        else if (e < emin) sexp = e;
        if (sexp)
            for (q = 0; q < nn; ++q) a[q] = ldexp(a[q], -sexp);
    }
    if (n == 1) {
        re[0] = a[0];
    } else if (n == 2) {
        prn__eig_2x2(a[0], a[1], a[2], a[3], &re[0], &im[0], &re[1], &im[1]);
    } else {
        /* ---- balancing: permutations isolating eigenvalues ---- */
        lo = 0;
        hi = N - 1;
        for (found = 1; found && hi > lo;) { /* a row zero off the diagonal -> bottom */
            found = 0;
            for (j = hi; j >= lo; --j) {
                for (k = lo; k <= hi; ++k)
                    if (k != j && PRN__EH(j, k) != 0) break;
                if (k > hi) {
                    found = 1;
                    break;
                }
            }
            if (found) {
                if (j != hi) prn__eig_swap(a, n, (size_t)j, (size_t)hi); /* whole rows and columns */
                --hi;
            }
        }
        for (found = 1; found && hi > lo;) { /* a column zero off the diagonal -> top */
            found = 0;
            for (j = lo; j <= hi; ++j) {
                for (k = lo; k <= hi; ++k)
                    if (k != j && PRN__EH(k, j) != 0) break;
                if (k > hi) {
                    found = 1;
                    break;
                }
            }
            if (found) {
                if (j != lo) prn__eig_swap(a, n, (size_t)j, (size_t)lo);
                ++lo;
            }
        }
        for (i = 0; i < N; ++i)
            if (i < lo || i > hi) re[i] = PRN__EH(i, i); /* isolated */

        /* ---- balancing: scaling by powers of 2 (block lo..hi only) ----
         * Row/column i is scaled by f = 2^k that makes the off-diagonal
         * 2-norms of column i (times f) and row i (over f) about equal,
         * but only when that shrinks the sum of the two full norms
         * (diagonal included) by 5%: a row and column dominated by the
         * diagonal are left alone, since scaling them does not help and
         * can hurt the accuracy of ill-conditioned eigenvalues. */
        for (pass = 0, changed = 1; changed && pass < 100 && hi > lo; ++pass) {
            changed = 0;
            for (i = lo; i <= hi; ++i) {
                double cm = 0, rm = 0, cs = 0, rs = 0, c, r, d = fabs(PRN__EH(i, i)), f;
                int ec, er, e2;
                for (k = lo; k <= hi; ++k)
                    if (k != i) {
                        if (fabs(PRN__EH(k, i)) > cm) cm = fabs(PRN__EH(k, i));
                        if (fabs(PRN__EH(i, k)) > rm) rm = fabs(PRN__EH(i, k));
                    }
                if (cm == 0 || rm == 0) continue;
                for (k = lo; k <= hi; ++k)
                    if (k != i) {
                        double tc = PRN__EH(k, i) / cm, tr = PRN__EH(i, k) / rm;
                        cs += tc * tc;
                        rs += tr * tr;
                    }
                c = cm * sqrt(cs); /* off-diagonal 2-norms */
                r = rm * sqrt(rs);
                (void)frexp(c, &ec);
                (void)frexp(r, &er);
                e2 = (er - ec) / 2; /* f = 2^e2 makes c f and r / f about equal */
                if (e2 == 0) continue;
                if (e2 > 1000) e2 = 1000;
                if (e2 < -1000) e2 = -1000;
                f = ldexp(1.0, e2);
                if (!(prn__eig_hyp(c * f, d) + prn__eig_hyp(r / f, d) < 0.95 * (prn__eig_hyp(c, d) + prn__eig_hyp(r, d))))
                    continue;
                for (k = lo; k <= hi; ++k)
                    if (k != i) {
                        PRN__EH(k, i) *= f;
                        PRN__EH(i, k) /= f;
                    }
                changed = 1;
            }
        }

        /* ---- Householder reduction of the block to Hessenberg form ----
         * v lives in im[k+1..hi], the row sums w in re[k+1..hi]. */
        for (k = lo; k + 1 < hi; ++k) {
            double tmax = 0, s, ssq, alpha, beta, tau, den;
            for (i = k + 2; i <= hi; ++i)
                if (fabs(PRN__EH(i, k)) > tmax) tmax = fabs(PRN__EH(i, k));
            if (tmax == 0) continue; /* column already reduced */
            alpha = PRN__EH(k + 1, k);
            s = tmax > fabs(alpha) ? tmax : fabs(alpha);
            ssq = 0;
            for (i = k + 1; i <= hi; ++i) {
                double t = PRN__EH(i, k) / s;
                ssq += t * t;
            }
            beta = alpha >= 0 ? -s * sqrt(ssq) : s * sqrt(ssq);
            tau = (beta - alpha) / beta;
            den = alpha - beta;
            im[k + 1] = 1;
            for (i = k + 2; i <= hi; ++i) {
                im[i] = PRN__EH(i, k) / den;
                PRN__EH(i, k) = 0;
            }
            PRN__EH(k + 1, k) = beta;
            /* left: rows k+1..hi, columns k+1..hi: A -= tau v (v^T A) */
            for (j = k + 1; j <= hi; ++j) re[j] = 0;
            for (i = k + 1; i <= hi; ++i) {
                double vi = im[i], *row = &PRN__EH(i, 0);
                for (j = k + 1; j <= hi; ++j) re[j] += vi * row[j];
            }
            for (i = k + 1; i <= hi; ++i) {
                double tv = tau * im[i], *row = &PRN__EH(i, 0);
                for (j = k + 1; j <= hi; ++j) row[j] -= tv * re[j];
            }
            /* right: rows lo..hi, columns k+1..hi: A -= tau (A v) v^T,
             * four rows at a time (independent sums) */
            for (i = lo; i + 3 <= hi; i += 4) {
                double *r0 = &PRN__EH(i, 0), *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
                double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
                for (j = k + 1; j <= hi; ++j) {
                    double vj = im[j];
                    t0 += r0[j] * vj;
                    t1 += r1[j] * vj;
                    t2 += r2[j] * vj;
                    t3 += r3[j] * vj;
                }
                t0 *= tau;
                t1 *= tau;
                t2 *= tau;
                t3 *= tau;
                for (j = k + 1; j <= hi; ++j) {
                    double vj = im[j];
                    r0[j] -= t0 * vj;
                    r1[j] -= t1 * vj;
                    r2[j] -= t2 * vj;
                    r3[j] -= t3 * vj;
                }
            }
            for (; i <= hi; ++i) {
                double *row = &PRN__EH(i, 0), t = 0;
                for (j = k + 1; j <= hi; ++j) t += row[j] * im[j];
                t *= tau;
                for (j = k + 1; j <= hi; ++j) row[j] -= t * im[j];
            }
        }
        for (i = lo; i <= hi; ++i) re[i] = im[i] = 0;

        /* ---- Francis double-shift QR, eigenvalues only ---- */
        nh = hi - lo + 1;
        smlnum = safmin * ((double)nh / ulp);
        itmax = 30 * (nh > 10 ? nh : 10);
        total = 0;
        its = 0;
        while (hi >= lo) {
            double sr1, sr2, si, x, y, z;
            /* deflation: the last negligible subdiagonal H(l, l-1) */
            for (l = hi; l > lo; --l) {
                double hs = fabs(PRN__EH(l, l - 1)), tst;
                if (hs <= smlnum) break;
                tst = fabs(PRN__EH(l - 1, l - 1)) + fabs(PRN__EH(l, l));
                if (tst == 0) {
                    if (l - 2 >= lo) tst += fabs(PRN__EH(l - 1, l - 2));
                    if (l + 1 <= hi) tst += fabs(PRN__EH(l + 1, l));
                }
                if (hs <= ulp * tst) {
                    /* Ahues & Tisseur: also small relative to the local
                     * eigenvalue separation */
                    double hu = fabs(PRN__EH(l - 1, l)), dd = fabs(PRN__EH(l - 1, l - 1) - PRN__EH(l, l));
                    double hl = fabs(PRN__EH(l, l)), ab, ba, aa, bb, sab, lim;
                    ab = hs > hu ? hs : hu;
                    ba = hs > hu ? hu : hs;
                    aa = hl > dd ? hl : dd;
                    bb = hl > dd ? dd : hl;
                    sab = aa + ab;
                    lim = ulp * (bb * (aa / sab));
                    if (lim < smlnum) lim = smlnum;
                    if (ba * (ab / sab) <= lim) break;
                }
            }
            if (l > lo) PRN__EH(l, l - 1) = 0;
            if (l == hi) { /* 1x1 block */
                re[hi] = PRN__EH(hi, hi);
                im[hi] = 0;
                --hi;
                its = 0;
                continue;
            }
            if (l == hi - 1) { /* 2x2 block */
                prn__eig_2x2(PRN__EH(hi - 1, hi - 1), PRN__EH(hi - 1, hi), PRN__EH(hi, hi - 1), PRN__EH(hi, hi),
                             &re[hi - 1], &im[hi - 1], &re[hi], &im[hi]);
                hi -= 2;
                its = 0;
                continue;
            }
            if (total >= itmax) { /* no convergence */
                for (i = lo; i <= hi; ++i) re[i] = im[i] = NAN;
                break;
            }
            ++total;
            ++its;

            /* shifts */
            if (its % 10 == 0) { /* exceptional: a complex pair at distance w */
                double w, c0;
                if (its % 20 == 10) {
                    w = fabs(PRN__EH(hi, hi - 1)) + fabs(PRN__EH(hi - 1, hi - 2));
                    c0 = PRN__EH(hi, hi) + 0.75 * w;
                } else {
                    w = fabs(PRN__EH(l + 1, l)) + fabs(PRN__EH(l + 2, l + 1));
                    c0 = PRN__EH(l, l) + 0.75 * w;
                }
                sr1 = sr2 = c0;
                si = 0.6614378277661477 * w; /* sqrt(7/16): |shift - c0 + 0.75 w| = w */
            } else {
                double r1, i1, r2, i2;
                prn__eig_2x2(PRN__EH(hi - 1, hi - 1), PRN__EH(hi - 1, hi), PRN__EH(hi, hi - 1), PRN__EH(hi, hi),
                             &r1, &i1, &r2, &i2);
                if (i1 != 0) {
                    sr1 = sr2 = r1;
                    si = i1;
                } else { /* two real shifts: the one nearer H(hi,hi), twice */
                    double d = PRN__EH(hi, hi);
                    sr1 = sr2 = fabs(r1 - d) <= fabs(r2 - d) ? r1 : r2;
                    si = 0;
                }
            }

            /* start of the bulge: two consecutive small subdiagonals */
            for (m = hi - 2;; --m) {
                double h1, h2;
                prn__eig_col1(&PRN__EH(m, m), ld, sr1, sr2, si, &x, &y, &z);
                if (m == l) break;
                h1 = fabs(PRN__EH(m, m - 1)) * (fabs(y) + fabs(z));
                h2 = ulp * fabs(x) *
                     (fabs(PRN__EH(m - 1, m - 1)) + fabs(PRN__EH(m, m)) + fabs(PRN__EH(m + 1, m + 1)));
                if (h1 <= h2) break;
            }

            /* chase the bulge down to row hi */
            for (k = m; k <= hi - 1; ++k) {
                ptrdiff_t nr = hi - k + 1 < 3 ? hi - k + 1 : 3, rmax;
                double tau, v1, v2, beta;
                if (k > m) {
                    x = PRN__EH(k, k - 1);
                    y = PRN__EH(k + 1, k - 1);
                    z = nr == 3 ? PRN__EH(k + 2, k - 1) : 0;
                }
                prn__eig_refl3(x, y, z, &tau, &v1, &v2, &beta);
                if (tau == 0) continue;
                if (k > m) {
                    PRN__EH(k, k - 1) = beta;
                    PRN__EH(k + 1, k - 1) = 0;
                    if (nr == 3) PRN__EH(k + 2, k - 1) = 0;
                } else if (m > l) {
                    PRN__EH(k, k - 1) *= 1 - tau; /* the fill below it is negligible */
                }
                if (nr == 3) {
                    double *r0 = &PRN__EH(k, 0), *r1 = &PRN__EH(k + 1, 0), *r2 = &PRN__EH(k + 2, 0);
                    for (j = k; j <= hi; ++j) {
                        double s = tau * (r0[j] + v1 * r1[j] + v2 * r2[j]);
                        r0[j] -= s;
                        r1[j] -= s * v1;
                        r2[j] -= s * v2;
                    }
                    rmax = k + 3 < hi ? k + 3 : hi;
                    for (i = l; i <= rmax; ++i) {
                        double *row = &PRN__EH(i, 0);
                        double s = tau * (row[k] + v1 * row[k + 1] + v2 * row[k + 2]);
                        row[k] -= s;
                        row[k + 1] -= s * v1;
                        row[k + 2] -= s * v2;
                    }
                } else {
                    double *r0 = &PRN__EH(k, 0), *r1 = &PRN__EH(k + 1, 0);
                    for (j = k; j <= hi; ++j) {
                        double s = tau * (r0[j] + v1 * r1[j]);
                        r0[j] -= s;
                        r1[j] -= s * v1;
                    }
                    for (i = l; i <= hi; ++i) {
                        double *row = &PRN__EH(i, 0);
                        double s = tau * (row[k] + v1 * row[k + 1]);
                        row[k] -= s;
                        row[k + 1] -= s * v1;
                    }
                }
            }
        }
        if (hi >= lo) {
            if (sexp)
                for (q = 0; q < n; ++q) re[q] = ldexp(re[q], sexp);
            return 1;
        }
    }
    if (sexp)
        for (q = 0; q < n; ++q) {
            re[q] = ldexp(re[q], sexp);
            im[q] = ldexp(im[q], sexp);
        }
    return 0;
#undef PRN__EH
}
#endif /* PARRNN_USE_LAPACK */

PRN__DEF prn_status prn_eigenvalues(prn_context *ctx, size_t n, const double *a, double *re, double *im) {
    static const char *fn = "prn_eigenvalues";
    size_t N, i;
    double *w;
    int bad;
    PRN__CTX(ctx, fn);
    if (n > PRN__PWL_MAX_DIM)
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'n' is %lu; at most %d", fn, (unsigned long)n,
                        PRN__PWL_MAX_DIM);
    if (n == 0) return PRN_OK;
    if (!a) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'a' is NULL", fn);
    if (!re) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 're' is NULL", fn);
    if (!im) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'im' is NULL", fn);
    N = n;
    for (i = 0; i < N * N; ++i)
        if (!(a[i] - a[i] == 0))
            return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: a[%lu] is not finite", fn, (unsigned long)i);
#ifdef PARRNN_USE_LAPACK
    {
        int lwork = -1, info = 0, one = 1, ni = (int)n; /* n <= PRN__PWL_MAX_DIM */
        double q = 0, dummy = 0;
        size_t r, c;
        double *wr, *wi, *work;
        w = (double *)prn_alloc(ctx, (N * N + 2 * N) * sizeof(double));
        if (!w) return prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY);
        wr = w + N * N;
        wi = wr + N;
        for (r = 0; r < N; ++r)
            for (c = 0; c < N; ++c) w[c * N + r] = a[r * N + c]; /* LAPACK is column-major */
        dgeev_("N", "N", &ni, w, &ni, wr, wi, &dummy, &one, &dummy, &one, &q, &lwork, &info);
        lwork = info == 0 && q >= 1 ? (int)q : 4 * ni;
        work = (double *)prn_alloc(ctx, (size_t)lwork * sizeof(double));
        if (!work) { prn_free(ctx, w); return prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY); }
        dgeev_("N", "N", &ni, w, &ni, wr, wi, &dummy, &one, &dummy, &one, work, &lwork, &info);
        prn_free(ctx, work);
        bad = info != 0;
        if (!bad) { memcpy(re, wr, N * sizeof(double)); memcpy(im, wi, N * sizeof(double)); }
        prn_free(ctx, w);
    }
#else
    w = (double *)prn_alloc(ctx, (N * N + 2 * N) * sizeof(double));
    if (!w) return prn__in_fn(ctx, fn, PRN_ERR_OUT_OF_MEMORY);
    memcpy(w, a, N * N * sizeof(double));
    bad = prn__eig_real(N, w, w + N * N, w + N * N + N) != 0;
    if (!bad) { memcpy(re, w + N * N, N * sizeof(double)); memcpy(im, w + N * N + N, N * sizeof(double)); }
    prn_free(ctx, w);
#endif
    if (bad) return PRN__ERR(ctx, PRN_ERR_NONFINITE, "%s: the QR iteration did not converge (n = %lu)", fn, (unsigned long)n);
    prn__sc_sort_eig(N, re, im);
    return PRN_OK;
}

#endif /* PARRNN_NO_SCYFI */
#ifndef PARRNN_NO_TRAINING
/* ------------------------------------------------------------------------
 * Optimisers
 * ---------------------------------------------------------------------- */
struct prn_optim {
    prn_context *ctx;
    int adam;
    int n;
    prn_tensor **params;
    prn_tensor **s1, **s2;  /* sgd: velocity; adam: m, v */
    prn_optim_params p;
    long *steps;            /* updates made to each parameter (Adam's bias correction) */
};

PRN__FN prn_status prn__optim_create(prn_context *ctx, const char *fn, int adam, prn_tensor *const *params, int n,
                                     const prn_optim_params *p, prn_optim **out) {
    prn_optim *o;
    int k;
    PRN__CTX(ctx, fn);
    PRN__CHECK_OUT(ctx, fn, out);
    if (n < 1) return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'num_params' is %d; need at least 1", fn, n);
    if (!params) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'params' is NULL", fn);
    for (k = 0; k < n; ++k) {
        PRN__TRY(prn__check_t(ctx, fn, "params[k]", params[k], 1));
        if (!params[k]->is_leaf)
            return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'params[%d]' is not a leaf tensor", fn, k);
    }
    /* Each storage once: a parameter listed twice would take two steps per
     * step (and two Adam states). Quadratic, for the tens of tensors of a
     * model; creation is rare. */
    for (k = 1; k < n; ++k) {
        int j;
        for (j = 0; j < k; ++j)
            if (params[j]->st == params[k]->st)
                return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'params': params[%d] %s params[%d]; "
                                "list each parameter once", fn, k,
                                params[j] == params[k] ? "is the same tensor as" : "shares its storage with", j);
    }
    if (!(p->lr > 0 && p->lr < HUGE_VAL) || !(p->momentum >= 0 && p->momentum < HUGE_VAL) ||
        !(p->weight_decay >= 0 && p->weight_decay < HUGE_VAL) || !(p->beta1 >= 0 && p->beta1 < 1) ||
        !(p->beta2 >= 0 && p->beta2 < 1) || !(p->eps >= 0 && p->eps < HUGE_VAL))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'config': lr must be > 0, momentum/weight_decay/eps "
                        ">= 0, betas in [0,1)", fn);
    o = (prn_optim *)prn_alloc(ctx, sizeof *o);
    if (!o) return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(o, 0, sizeof *o);
    o->params = (prn_tensor **)prn_alloc(ctx, (size_t)n * 3 * sizeof(prn_tensor *));
    o->steps = (long *)prn_alloc(ctx, (size_t)n * sizeof(long));
    if (!o->params || !o->steps) {
        prn_free(ctx, o->params); prn_free(ctx, o->steps); prn_free(ctx, o);
        return PRN__ERR(ctx, PRN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    memset(o->params, 0, (size_t)n * 3 * sizeof(prn_tensor *));
    memset(o->steps, 0, (size_t)n * sizeof(long));
    o->s1 = o->params + n;
    o->s2 = o->params + 2 * n;
    o->ctx = ctx;
    o->adam = adam;
    o->n = n;
    o->p = *p;
    for (k = 0; k < n; ++k) o->params[k] = prn_tensor_retain(params[k]);
    *out = o;
    return PRN_OK;
}

PRN__DEF prn_status prn_optim_sgd_create(prn_context *ctx, prn_tensor *const *params, int num_params,
                                  const prn_sgd_config *config, prn_optim **out) {
    prn_optim_params p;
    memset(&p, 0, sizeof p);
    p.lr = 0.01;
    if (config) {
        if (config->lr != 0) p.lr = config->lr;
        p.momentum = config->momentum;
        p.weight_decay = config->weight_decay;
        p.nesterov = config->nesterov != 0;
    }
    return prn__optim_create(ctx, "prn_optim_sgd_create", 0, params, num_params, &p, out);
}
PRN__DEF prn_status prn_optim_adam_create(prn_context *ctx, prn_tensor *const *params, int num_params,
                                   const prn_adam_config *config, prn_optim **out) {
    prn_optim_params p;
    memset(&p, 0, sizeof p);
    p.lr = 1e-3; p.beta1 = 0.9; p.beta2 = 0.999; p.eps = 1e-8;
    if (config) {
        if (config->lr != 0) p.lr = config->lr;
        if (config->beta1 != 0) p.beta1 = config->beta1;
        if (config->beta2 != 0) p.beta2 = config->beta2;
        if (config->eps != 0) p.eps = config->eps;
        p.weight_decay = config->weight_decay;
        p.decoupled = config->decoupled != 0;
    }
    return prn__optim_create(ctx, "prn_optim_adam_create", 1, params, num_params, &p, out);
}

PRN__DEF prn_status prn_optim_step(prn_optim *o) {
    static const char fn[] = "prn_optim_step";
    prn_context *ctx;
    prn_status st = PRN_OK;
    prn_optim_params p;
    int k;
    if (!o) return PRN_ERR_NULL_ARGUMENT;
    ctx = o->ctx;
    if (o->adam) PRN__NEED(ctx, adam_update, fn);
    else PRN__NEED(ctx, sgd_update, fn);
    /* Allocate every missing state before updating anything, so a failure
     * changes no parameter. A zero state left behind by a failed call is the
     * same as none, so there is nothing to undo. */
    for (k = 0; k < o->n && st == PRN_OK; ++k) {
        prn_tensor *w = o->params[k];
        if (!w->grad || !(o->adam || o->p.momentum > 0)) continue;
        if (!o->s1[k]) st = prn_tensor_create(ctx, w->dtype, w->ndim, w->shape, &o->s1[k]);
        if (st == PRN_OK && o->adam && !o->s2[k]) st = prn_tensor_create(ctx, w->dtype, w->ndim, w->shape, &o->s2[k]);
    }
    if (st != PRN_OK) return prn__in_fn(ctx, fn, st);
    p = o->p;
    for (k = 0; k < o->n && st == PRN_OK; ++k) {
        prn_tensor *w = o->params[k];
        if (!w->grad) continue;
        /* bias correction counts this parameter's own updates (as PyTorch) */
        p.bias1 = 1.0 - pow(p.beta1, (double)(o->steps[k] + 1));
        p.bias2 = 1.0 - pow(p.beta2, (double)(o->steps[k] + 1));
        w->st->version++; /* records that saved w see the step (prn_backward refuses them) */
        if (o->adam)
            st = prn__in_fn(ctx, fn, ctx->be->adam_update(ctx, w->dtype, w->numel, w->st->buf, w->grad->st->buf, o->s1[k]->st->buf,
                                      o->s2[k]->st->buf, &p));
        else
            st = prn__in_fn(ctx, fn, ctx->be->sgd_update(ctx, w->dtype, w->numel, w->st->buf, w->grad->st->buf,
                                     o->s1[k] ? o->s1[k]->st->buf : NULL, &p));
        if (st == PRN_OK) o->steps[k]++;
    }
    return st;
}
PRN__DEF void prn_optim_zero_grad(prn_optim *o) {
    int k;
    if (!o) return;
    for (k = 0; k < o->n; ++k) prn_tensor_zero_grad(o->params[k]);
}
PRN__DEF prn_status prn_optim_set_lr(prn_optim *o, double lr) {
    if (!o) return PRN_ERR_NULL_ARGUMENT;
    if (!(lr > 0 && lr < HUGE_VAL))
        return PRN__ERR(o->ctx, PRN_ERR_INVALID_ARGUMENT, "prn_optim_set_lr: argument 'lr' is %g; must be finite and > 0", lr);
    o->p.lr = lr;
    return PRN_OK;
}
PRN__DEF void prn_optim_free(prn_optim *o) {
    int k;
    if (!o) return;
    for (k = 0; k < o->n; ++k) {
        prn_tensor_free(o->params[k]); prn_tensor_free(o->s1[k]); prn_tensor_free(o->s2[k]);
    }
    prn_free(o->ctx, o->params);
    prn_free(o->ctx, o->steps);
    prn_free(o->ctx, o);
}

/* Does params[k] also appear at an index below k? (counted there) */
PRN__FN int prn__listed_before(prn_tensor *const *params, int k) {
    int j;
    for (j = 0; j < k; ++j) if (params[j] == params[k]) return 1;
    return 0;
}

PRN__DEF prn_status prn_clip_grad_norm(prn_context *ctx, prn_tensor *const *params, int n, double max_norm,
                                       double *total_norm) {
    static const char fn[] = "prn_clip_grad_norm";
    double sum = 0.0, norm;
    int k;
    PRN__CTX(ctx, fn);
    if (n < 0) return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'num_params' is %d", fn, n);
    if (n > 0 && !params) return PRN__ERR(ctx, PRN_ERR_NULL_ARGUMENT, "%s: argument 'params' is NULL", fn);
    if (!(max_norm > 0))
        return PRN__ERR(ctx, PRN_ERR_INVALID_ARGUMENT, "%s: argument 'max_norm' is %g; must be > 0", fn, max_norm);
    for (k = 0; k < n; ++k) PRN__TRY(prn__check_t(ctx, fn, "params[k]", params[k], 1));
    PRN__NEED(ctx, unary, fn);
    PRN__NEED(ctx, reduce, fn);
    /* Norm first (temporaries only), scaling after: a failure changes nothing. */
    for (k = 0; k < n; ++k) {
        prn_tensor *g = params[k]->grad, *sq = NULL, *s = NULL;
        double v = 0;
        prn_status st;
        if (!g || prn__listed_before(params, k)) continue;
        st = prn__unary_raw(ctx, fn, PRN_UNARY_SQUARE, g, 0, 0, &sq);
        if (st == PRN_OK) st = prn__reduce_raw(ctx, fn, PRN_REDUCE_SUM, sq, PRN_ALL_AXES, 0, &s);
        if (st == PRN_OK) st = prn_tensor_item(s, &v);
        prn_tensor_free(sq); prn_tensor_free(s);
        if (st != PRN_OK) return prn__in_fn(ctx, fn, st);
        sum += v;
    }
    norm = sqrt(sum);
    if (total_norm) *total_norm = norm;
    if (norm > max_norm) {
        double scale = max_norm / (norm + 1e-12);
        for (k = 0; k < n; ++k) {
            prn_tensor *g = params[k]->grad;
            if (!g || prn__listed_before(params, k)) continue;
            g->st->version++;
            PRN__TRY(prn__in_fn(ctx, fn, ctx->be->unary(ctx, PRN_UNARY_AFFINE, g->dtype, g->numel, g->st->buf,
                                                        g->st->buf, scale, 0.0)));
        }
    }
    return PRN_OK;
}

#endif /* PARRNN_NO_TRAINING */
#endif /* PARRNN_IMPLEMENTATION_DONE */
#endif /* PARRNN_IMPLEMENTATION */


/* ========================================================================
 * TEMPLATES (part of the implementation)
 * A function that exists once per element type (or per instruction set)
 * is written once here, as plain code over the parameters below, and the
 * implementation instantiates it where it is needed by defining the
 * template's switch PRN__TPL_<NAME> and its parameters, then including
 * this file again:
 *       #define PRN__TPL_SCAN1
 *       #define PRN__T float        (element type)
 *       #define PRN__SFX f32        (suffix of the generated names)
 *       #include PARRNN_SELF_PATH
 * Such a pass skips everything else in the file (PARRNN_H and
 * PARRNN_IMPLEMENTATION_DONE are defined by then) and compiles only the
 * switched-on section, which then undefines its switch; the parameters
 * are undefined at the end of every pass. Bodies are real lines of this
 * file, so a debugger steps through them and a compiler error names them.
 * Within a template a generated name is spelt <name>_T (grep finds it as
 * "prn__scan1_"), mapped to <name>_<sfx> by PRN__TNAME at its top.
 * Other parameters a template may take: PRN__ATTR (a target attribute,
 * empty when none), and those its own comment lists.
 * ====================================================================== */
#if defined(PARRNN_IMPLEMENTATION) && defined(PARRNN_IMPLEMENTATION_DONE)
#ifndef PRN__TNAME
#define PRN__TPASTE_(a, b) a##b
#define PRN__TPASTE(a, b) PRN__TPASTE_(a, b)
/* prn__name_T -> prn__name_<PRN__SFX> */
#define PRN__TNAME(stem) PRN__TPASTE(stem, PRN__SFX)
#endif

/* ======== scans and elementwise ops ======== */

/* ---- SCAN1: one channel's sequential scan, plain C (parameters: T, SFX).
 * Generates prn__scan1_<sfx>. The SSE2/AVX2 builds have their own
 * prn__scan1_f32/_f64 above. */
#ifdef PRN__TPL_SCAN1
#undef PRN__TPL_SCAN1
#define prn__scan1_T PRN__TNAME(prn__scan1_)
PRN__FN_INLINE PRN__T prn__scan1_T(int rev, size_t n, const PRN__T *a, const PRN__T *b, PRN__T *h, PRN__T c,
                                  PRN__T *prod, int stream) {
    size_t i, j;
    PRN__T p = 1;
    (void)stream;
    for (i = 0; i < n; ++i) {
        j = rev ? n - 1 - i : i;
        c = a[j] * c + b[j]; p *= a[j];
        if (h) h[j] = c;
    }
    if (prod) *prod = p;
    return c;
}
#undef prn__scan1_T
#endif /* PRN__TPL_SCAN1 */

/* ---- SCAN_ROW (parameters: T, SFX). Generates prn__scan_row_<sfx>. */
#ifdef PRN__TPL_SCAN_ROW
#undef PRN__TPL_SCAN_ROW
#define prn__scan_row_T PRN__TNAME(prn__scan_row_)
PRN__FN void prn__scan_row_T(size_t n, const PRN__T *a, const PRN__T *b, PRN__T *st, PRN__T *h, int stream) {
    size_t i; (void)stream;
    PRN__SIMD for (i = 0; i < n; ++i) { st[i] = a[i] * st[i] + b[i]; h[i] = st[i]; }
}
#undef prn__scan_row_T
#endif /* PRN__TPL_SCAN_ROW */

/* ---- DIAG_ROWS (parameters: T, SFX). Generates prn__rows_expand_<sfx>, prn__rows_reduce_<sfx>. */
/* A chunk of n steps of C > 1 channels from row pointer a, b (h), ds apart
 * (negative in reverse): its maps (P, B) per channel, or its expansion
 * from st (which ends as the chunk's last state). */
#ifdef PRN__TPL_DIAG_ROWS
#undef PRN__TPL_DIAG_ROWS
#define prn__rows_expand_T PRN__TNAME(prn__rows_expand_)
#define prn__rows_reduce_T PRN__TNAME(prn__rows_reduce_)
#define prn__scan_row_T PRN__TNAME(prn__scan_row_)
PRN__FN void prn__rows_reduce_T(size_t C, size_t n, ptrdiff_t ds, const PRN__T *a, const PRN__T *b, PRN__T *P, PRN__T *B) {
    size_t i, c;
    for (c = 0; c < C; ++c) { P[c] = 1; B[c] = 0; }
    for (i = 0; i < n; ++i) {
        const PRN__T *ar = a + (ptrdiff_t)i * ds, *br = b + (ptrdiff_t)i * ds;
        PRN__SIMD for (c = 0; c < C; ++c) { B[c] = ar[c] * B[c] + br[c]; P[c] *= ar[c]; }
    }
}
PRN__FN void prn__rows_expand_T(size_t C, size_t n, ptrdiff_t ds, const PRN__T *a, const PRN__T *b, PRN__T *h, PRN__T *st,
                                    int stream) {
    size_t i;
    for (i = 0; i < n; ++i)
        prn__scan_row_T(C, a + (ptrdiff_t)i * ds, b + (ptrdiff_t)i * ds, st, h + (ptrdiff_t)i * ds, stream);
}
#undef prn__rows_expand_T
#undef prn__rows_reduce_T
#undef prn__scan_row_T
#endif /* PRN__TPL_DIAG_ROWS */

/* ---- DIAG_CHUNKED (parameters: T, SFX). Generates prn__scan_chunked_<sfx>. */
/* Chunked diagonal scan of one sequence: reduce, scan the carries, expand,
 * with memory traffic of a single pass.
 *
 * Time is cut into superblocks of one chunk per thread: thread 0's chunk of
 * R0 steps first, then a chunk of R1 steps for each other thread j. A
 * superblock starts from a known carry, so thread 0 expands its chunk at
 * once (a sequential pass). Meanwhile each thread j reduces its chunk to
 * one affine map per channel, h -> P h + B (P the product of a, B the end
 * of the chunk's scan from zero). After a barrier, the end of chunk 0 and
 * the maps give every carry: thread j composes the maps of the chunks
 * between chunk 0 and its own to get its carry and expands its chunk --
 * read again from its L2 cache, since R1 steps of a and b are
 * PRN__SCAN_CHUNK_BYTES -- while thread 0 composes all of them into the
 * next superblock's carry and goes on. So phase p of the loop expands chunk
 * 0 of superblock p, and chunks j of superblock p - 1 after reducing those
 * of superblock p; maps and ends alternate between two slots by the
 * parity of p, and one barrier ends each phase. Thread 0's chunk is longer
 * (R0 > R1) because it skips the reduction.
 *
 * ws: 5 * nt + 2 rows of Cp values (maps, ends, states). */
#ifdef PRN__TPL_DIAG_CHUNKED
#undef PRN__TPL_DIAG_CHUNKED
#define prn__rows_expand_T PRN__TNAME(prn__rows_expand_)
#define prn__rows_reduce_T PRN__TNAME(prn__rows_reduce_)
#define prn__scan1_T PRN__TNAME(prn__scan1_)
#define prn__scan_chunked_T PRN__TNAME(prn__scan_chunked_)
PRN__FN void prn__scan_chunked_T(int rev, size_t T, size_t C, const PRN__T *an, const PRN__T *bn, const PRN__T *h0n,
                                     PRN__T *hn, size_t R0, size_t R1, int nt, int stream, PRN__T *ws) {
    const size_t Cp = (C + 15) / 16 * 16; /* rows of a cache line or more */
    const ptrdiff_t ds = rev ? -(ptrdiff_t)C : (ptrdiff_t)C;
    PRN__T *Pm = ws, *Bm = Pm + 2 * (size_t)nt * Cp, *E = Bm + 2 * (size_t)nt * Cp, *St = E + 2 * Cp;
    prn__barrier bar;
    (void)nt;
    prn__barrier_init(&bar);
    PRN__OMP(omp parallel num_threads(nt) if(nt > 1))
    {
        const size_t j = (size_t)PRN__THREAD_NUM(), m = (size_t)PRN__NUM_THREADS();
        const size_t r0 = m > 1 ? R0 : T, S = r0 + (m - 1) * R1, nsb = (T + S - 1) / S;
        PRN__T *st = St + j * Cp;
        size_t p, c, q;
        for (p = 0; p <= nsb; ++p) {
            const size_t now = (p & 1) * Cp, was = ((p & 1) ^ 1) * Cp;
            if (j == 0 && p < nsb) {
                const size_t t0 = p * S, len = T - t0 < r0 ? T - t0 : r0;
                const size_t row = rev ? T - 1 - t0 : t0;
                if (p == 0) for (c = 0; c < C; ++c) st[c] = h0n ? h0n[c] : (PRN__T)0;
                else {
                    for (c = 0; c < C; ++c) st[c] = E[was + c];
                    for (q = 1; q < m; ++q) {
                        const PRN__T *P = Pm + 2 * q * Cp + was, *B = Bm + 2 * q * Cp + was;
                        PRN__SIMD for (c = 0; c < C; ++c) st[c] = P[c] * st[c] + B[c]; }
                }
                if (C == 1)
                    st[0] = prn__scan1_T(rev, len, an + (rev ? row + 1 - len : row),
                                             bn + (rev ? row + 1 - len : row), hn + (rev ? row + 1 - len : row),
                                             st[0], NULL, stream);
                else prn__rows_expand_T(C, len, ds, an + row * C, bn + row * C, hn + row * C, st, stream);
                for (c = 0; c < C; ++c) E[now + c] = st[c];
            }
            if (j > 0 && p > 0) { /* expand chunk j of superblock p - 1 */
                const size_t t0 = (p - 1) * S + r0 + (j - 1) * R1;
                if (t0 < T) {
                    const size_t len = T - t0 < R1 ? T - t0 : R1, row = rev ? T - 1 - t0 : t0;
                    for (c = 0; c < C; ++c) st[c] = E[was + c];
                    for (q = 1; q < j; ++q) {
                        const PRN__T *P = Pm + 2 * q * Cp + was, *B = Bm + 2 * q * Cp + was;
                        PRN__SIMD for (c = 0; c < C; ++c) st[c] = P[c] * st[c] + B[c]; }
                    if (C == 1)
                        prn__scan1_T(rev, len, an + (rev ? row + 1 - len : row), bn + (rev ? row + 1 - len : row),
                                         hn + (rev ? row + 1 - len : row), st[0], NULL, stream);
                    else prn__rows_expand_T(C, len, ds, an + row * C, bn + row * C, hn + row * C, st, stream);
                }
            }
            if (j > 0 && p < nsb) { /* reduce chunk j of superblock p */
                const size_t t0 = p * S + r0 + (j - 1) * R1;
                PRN__T *P = Pm + 2 * j * Cp + now, *B = Bm + 2 * j * Cp + now;
                if (t0 >= T) for (c = 0; c < C; ++c) { P[c] = 1; B[c] = 0; }
                else {
                    const size_t len = T - t0 < R1 ? T - t0 : R1, row = rev ? T - 1 - t0 : t0;
                    if (C == 1)
                        B[0] = prn__scan1_T(rev, len, an + (rev ? row + 1 - len : row),
                                                bn + (rev ? row + 1 - len : row), NULL, (PRN__T)0, P, 0);
                    else prn__rows_reduce_T(C, len, ds, an + row * C, bn + row * C, P, B);
                }
            }
            PRN__BARRIER(&bar, m);
        }
        if (stream) prn__stream_fence();
    }
    prn__barrier_destroy(&bar);
}
#undef prn__rows_expand_T
#undef prn__rows_reduce_T
#undef prn__scan1_T
#undef prn__scan_chunked_T
#endif /* PRN__TPL_DIAG_CHUNKED */

/* ---- BLOCK_SCAN (parameters: T, SFX). Generates prn__scan_block_chunked_<sfx>, prn__scan_block_compose_<sfx>, prn__scan_block_seq_<sfx>, prn__scan_block_tree_<sfx>. */
#ifdef PRN__TPL_BLOCK_SCAN
#undef PRN__TPL_BLOCK_SCAN
#define prn__scan_block_chunked_T PRN__TNAME(prn__scan_block_chunked_)
#define prn__scan_block_compose_T PRN__TNAME(prn__scan_block_compose_)
#define prn__scan_block_seq_T PRN__TNAME(prn__scan_block_seq_)
#define prn__scan_block_tree_T PRN__TNAME(prn__scan_block_tree_)
/* sequential: one unit = (sequence, range of blocks [jb0, jb1)), time outside
 * so each row of the unit is read once */
PRN__FN void prn__scan_block_seq_T(int rev, int tr, size_t T, size_t C, size_t k, const PRN__T *an,
                                       const PRN__T *bn, const PRN__T *h0n, PRN__T *hn, size_t jb0, size_t jb1) {
    size_t t, i, m, jb;
    for (t = 0; t < T; ++t) {
        size_t r = PRN__ROW(t);
        const PRN__T *ar = an + r * C * k, *prev = t ? hn + PRN__ROW(t - 1) * C : h0n;
        for (jb = jb0; jb < jb1; ++jb) {
            const size_t j0 = jb * k;
            for (i = 0; i < k; ++i) {
                PRN__T acc = bn[r * C + j0 + i];
                if (prev) for (m = 0; m < k; ++m) acc += PRN__AM(ar, i, m) * prev[j0 + m];
                hn[r * C + j0 + i] = acc;
            }
        }
    }
}
/* (M, v) <- step r after (M, v): M = A M, v = A v + b; tmp holds k*k + k */
PRN__FN void prn__scan_block_compose_T(int tr, size_t C, size_t k, const PRN__T *ar, const PRN__T *br,
                                           PRN__T *M, PRN__T *v, PRN__T *tmp, size_t j0) {
    size_t i, m, q;
    for (i = 0; i < k; ++i) {
        PRN__T acc = br[j0 + i];
        for (m = 0; m < k; ++m) acc += PRN__AM(ar, i, m) * v[m];
        tmp[k * k + i] = acc;
        for (q = 0; q < k; ++q) {
            PRN__T s = 0;
            for (m = 0; m < k; ++m) s += PRN__AM(ar, i, m) * M[m * k + q];
            tmp[i * k + q] = s;
        }
    }
    memcpy(M, tmp, k * k * sizeof(PRN__T));
    memcpy(v, tmp + k * k, k * sizeof(PRN__T));
    (void)C;
}
/* chunked, one unit; ws holds nch*(k*k + 2k) + k*k + 2k elements */
PRN__FN void prn__scan_block_chunked_T(prn_context *ctx, int rev, int tr, size_t T, size_t C, size_t k,
                                           const PRN__T *an, const PRN__T *bn, const PRN__T *h0n, PRN__T *hn,
                                           size_t j0, size_t nch, PRN__T *ws) {
    size_t per = k * k + 2 * k, S = (T + nch - 1) / nch, i, m;
    PRN__T *carry = ws + nch * per;
    long j;
    PRN__PAR_SETUP(ctx, T * k * k * k);
    PRN__PARFOR for (j = 0; j < (long)nch; ++j) {
        PRN__T *M = ws + (size_t)j * per, *v = M + k * k;
        PRN__T tl[64 * 64 + 64]; /* k <= 64 */
        size_t t, t1 = ((size_t)j + 1) * S < T ? ((size_t)j + 1) * S : T;
        for (i = 0; i < k * k; ++i) M[i] = 0;
        for (i = 0; i < k; ++i) { M[i * k + i] = 1; v[i] = 0; }
        for (t = (size_t)j * S; t < t1; ++t) {
            size_t r = PRN__ROW(t);
            prn__scan_block_compose_T(tr, C, k, an + r * C * k, bn + r * C, M, v, tl, j0);
        }
    }
    for (i = 0; i < k; ++i) carry[i] = h0n ? h0n[j0 + i] : (PRN__T)0;
    for (j = 0; j < (long)nch; ++j) { /* carries: c_j in, c_{j+1} = M_j c_j + v_j */
        PRN__T *M = ws + (size_t)j * per, *v = M + k * k, *cin = v + k, nx[64];
        for (i = 0; i < k; ++i) cin[i] = carry[i];
        for (i = 0; i < k; ++i) { PRN__T s = v[i]; for (m = 0; m < k; ++m) s += M[i * k + m] * carry[m]; nx[i] = s; }
        for (i = 0; i < k; ++i) carry[i] = nx[i];
    }
    PRN__PARFOR for (j = 0; j < (long)nch; ++j) {
        const PRN__T *cin = ws + (size_t)j * per + k * k + k;
        size_t t, t1 = ((size_t)j + 1) * S < T ? ((size_t)j + 1) * S : T, ii, mm;
        for (t = (size_t)j * S; t < t1; ++t) {
            size_t r = PRN__ROW(t);
            const PRN__T *ar = an + r * C * k, *prev = t > (size_t)j * S ? hn + PRN__ROW(t - 1) * C + j0 : cin;
            PRN__T nx[64];
            for (ii = 0; ii < k; ++ii) {
                PRN__T acc = bn[r * C + j0 + ii];
                for (mm = 0; mm < k; ++mm) acc += PRN__AM(ar, ii, mm) * prev[mm];
                nx[ii] = acc;
            }
            for (ii = 0; ii < k; ++ii) hn[r * C + j0 + ii] = nx[ii];
        }
    }
}
/* Blelloch tree, one unit; ws holds np*(k*k + k) + k*k + k elements */
PRN__FN void prn__scan_block_tree_T(int rev, int tr, size_t T, size_t C, size_t k, const PRN__T *an,
                                        const PRN__T *bn, const PRN__T *h0n, PRN__T *hn, size_t j0, size_t np, PRN__T *ws) {
    size_t per = k * k + k, d, i, t, q, m;
    PRN__T *tmp = ws + np * per;
    for (t = 0; t < np; ++t) { /* leaves: step t's map, identity as padding */
        PRN__T *M = ws + t * per, *v = M + k * k;
        for (i = 0; i < k; ++i) for (q = 0; q < k; ++q)
            M[i * k + q] = t < T ? PRN__AM(an + PRN__ROW(t) * C * k, i, q) : (PRN__T)(i == q);
        for (i = 0; i < k; ++i) v[i] = t < T ? bn[PRN__ROW(t) * C + j0 + i] : (PRN__T)0;
    }
    /* combine(later L into place of L, earlier E): L = L after E */
    for (d = 1; d < np; d *= 2)
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            PRN__T *L = ws + i * per, *E = ws + (i - d) * per;
            for (q = 0; q < k; ++q) { PRN__T s = L[k * k + q]; for (m = 0; m < k; ++m) s += L[q * k + m] * E[k * k + m]; tmp[k * k + q] = s; }
            for (q = 0; q < k * k; ++q) { PRN__T s = 0; for (m = 0; m < k; ++m) s += L[(q / k) * k + m] * E[m * k + q % k]; tmp[q] = s; }
            memcpy(L, tmp, per * sizeof(PRN__T));
        }
    { PRN__T *R = ws + (np - 1) * per; for (q = 0; q < per; ++q) R[q] = 0; for (q = 0; q < k; ++q) R[q * k + q] = 1; }
    for (d = np / 2; d >= 1; d /= 2)
        for (i = 2 * d - 1; i < np; i += 2 * d) {
            PRN__T *R = ws + i * per, *Lf = ws + (i - d) * per;
            /* left child gets the prefix before it; the right gets left-subtree after prefix */
            for (q = 0; q < k; ++q) { PRN__T s = Lf[k * k + q]; for (m = 0; m < k; ++m) s += Lf[q * k + m] * R[k * k + m]; tmp[k * k + q] = s; }
            for (q = 0; q < k * k; ++q) { PRN__T s = 0; for (m = 0; m < k; ++m) s += Lf[(q / k) * k + m] * R[m * k + q % k]; tmp[q] = s; }
            memcpy(Lf, R, per * sizeof(PRN__T));
            memcpy(R, tmp, per * sizeof(PRN__T));
        }
    for (t = 0; t < T; ++t) { /* h_t = step t after (exclusive prefix applied to h0) */
        size_t r = PRN__ROW(t);
        const PRN__T *P = ws + t * per, *ar = an + r * C * k;
        PRN__T hp[64];
        for (q = 0; q < k; ++q) { PRN__T s = P[k * k + q]; if (h0n) for (m = 0; m < k; ++m) s += P[q * k + m] * h0n[j0 + m]; hp[q] = s; }
        for (q = 0; q < k; ++q) { PRN__T s = bn[r * C + j0 + q]; for (m = 0; m < k; ++m) s += PRN__AM(ar, q, m) * hp[m]; hn[r * C + j0 + q] = s; }
    }
}
#undef prn__scan_block_chunked_T
#undef prn__scan_block_compose_T
#undef prn__scan_block_seq_T
#undef prn__scan_block_tree_T
#endif /* PRN__TPL_BLOCK_SCAN */

/* ---- SCAN_SEQ_DIAG (parameters: T, SFX). Generates prn__scan_seq_diag_<sfx>; prn__nt, prn__par
 * are the caller's PRN__PAR_SETUP team for PRN__PARFOR. */
/* Sequential diagonal scan: one unit per (sequence, group of channels).
 * One channel takes prn__scan1; otherwise the state lives in registers for
 * narrow groups, in st (C values per sequence) for wide ones, so h is only
 * ever written. */
#ifdef PRN__TPL_SCAN_SEQ_DIAG
#undef PRN__TPL_SCAN_SEQ_DIAG
#define prn__scan_seq_diag_T PRN__TNAME(prn__scan_seq_diag_)
#define prn__scan1_T PRN__TNAME(prn__scan1_)
#define prn__scan_row_T PRN__TNAME(prn__scan_row_)
PRN__FN_INLINE void prn__scan_seq_diag_T(int rev, size_t batch, size_t T, size_t C, size_t grp, size_t ngrp, const void *a,
                                      const void *b, const void *h0, void *h, void *ws, int stream, int prn__nt,
                                      int prn__par) {
    const PRN__T *A = (const PRN__T *)a, *Bv = (const PRN__T *)b, *H0 = (const PRN__T *)h0;
    PRN__T *H = (PRN__T *)h, *ST = (PRN__T *)ws; long w;
    PRN__PARFOR for (w = 0; w < (long)(batch * ngrp); ++w) {
        size_t n = (size_t)w / ngrp, c0 = ((size_t)w % ngrp) * grp, c1 = c0 + grp < C ? c0 + grp : C, t, c;
        const PRN__T *an = A + n * T * C, *bn = Bv + n * T * C; PRN__T *hn = H + n * T * C;
        if (C == 1) {
            prn__scan1_T(rev, T, an, bn, hn, H0 ? H0[n] : (PRN__T)0, NULL, stream);
        } else if (c1 - c0 <= 16) {
            PRN__T st[16]; const size_t wd = c1 - c0;
            for (c = 0; c < wd; ++c) st[c] = H0 ? H0[n * C + c0 + c] : (PRN__T)0;
            for (t = 0; t < T; ++t) {
                const size_t r = PRN__ROW(t) * C + c0;
                for (c = 0; c < wd; ++c) { st[c] = an[r + c] * st[c] + bn[r + c]; hn[r + c] = st[c]; }
            }
        } else {
            PRN__T *st = ST + n * C + c0;
            for (c = 0; c < c1 - c0; ++c) st[c] = H0 ? H0[n * C + c0 + c] : (PRN__T)0;
            for (t = 0; t < T; ++t) {
                const size_t r = PRN__ROW(t) * C + c0;
                prn__scan_row_T(c1 - c0, an + r, bn + r, st, hn + r, stream);
            }
        }
        if (stream) prn__stream_fence();
    }
    (void)prn__nt; (void)prn__par;
}
#undef prn__scan1_T
#undef prn__scan_row_T
#undef prn__scan_seq_diag_T
#endif /* PRN__TPL_SCAN_SEQ_DIAG */

/* ---- SCAN_TREE_DIAG (parameters: T, SFX). Generates prn__scan_tree_diag_<sfx>; prn__nt, prn__par
 * are the caller's PRN__PAR_SETUP team for PRN__PARFOR. */
/* Blelloch tree over one (sequence, channel): elements are affine maps
 * (m, o): h -> m*h + o; "later after earlier" is (m_l*m_e, m_l*o_e + o_l). */
#ifdef PRN__TPL_SCAN_TREE_DIAG
#undef PRN__TPL_SCAN_TREE_DIAG
#define prn__scan_tree_diag_T PRN__TNAME(prn__scan_tree_diag_)
PRN__FN_INLINE void prn__scan_tree_diag_T(int rev, size_t T, size_t C, size_t np, size_t n, size_t c, const void *a,
                                       const void *b, const void *h0, void *h, void *ws, int prn__nt, int prn__par) {
    PRN__T *M = (PRN__T *)ws, *O = M + np; size_t d, i, t;
    const PRN__T *an = (const PRN__T *)a + n * T * C, *bn = (const PRN__T *)b + n * T * C;
    PRN__T *hn = (PRN__T *)h + n * T * C, hz = h0 ? ((const PRN__T *)h0)[n * C + c] : (PRN__T)0;
    for (t = 0; t < np; ++t) { M[t] = t < T ? an[PRN__ROW(t) * C + c] : (PRN__T)1; O[t] = t < T ? bn[PRN__ROW(t) * C + c] : (PRN__T)0; }
    for (d = 1; d < np; d *= 2) { /* up-sweep: node i holds its subtree */
        PRN__PARFOR for (i = 2 * d - 1; i < np; i += 2 * d) {
            O[i] = M[i] * O[i - d] + O[i]; M[i] = M[i] * M[i - d]; } }
    M[np - 1] = 1; O[np - 1] = 0;
    for (d = np / 2; d >= 1; d /= 2) { /* down-sweep: exclusive prefixes */
        PRN__PARFOR for (i = 2 * d - 1; i < np; i += 2 * d) {
            PRN__T lm = M[i - d], lo = O[i - d];
            M[i - d] = M[i]; O[i - d] = O[i];
            O[i] = lm * O[i] + lo; M[i] = lm * M[i]; } }
    for (t = 0; t < T; ++t) { /* h_t = element t after its exclusive prefix */
        size_t r = PRN__ROW(t);
        hn[r * C + c] = an[r * C + c] * (M[t] * hz + O[t]) + bn[r * C + c]; }
    (void)prn__nt; (void)prn__par;
}
#undef prn__scan_tree_diag_T
#endif /* PRN__TPL_SCAN_TREE_DIAG */

/* ---- COPY: fill and strided copy of one element type (parameters: T, SFX;
 * float, double and int32_t). Generates prn__fill_<sfx>,
 * prn__scopy_rows_<sfx>, prn__scopy_tiles_<sfx>; the caller's
 * PRN__PAR_SETUP passes prn__nt/prn__par on. */
#ifdef PRN__TPL_COPY
#undef PRN__TPL_COPY
#define prn__fill_T PRN__TNAME(prn__fill_)
#define prn__scopy_rows_T PRN__TNAME(prn__scopy_rows_)
#define prn__scopy_tiles_T PRN__TNAME(prn__scopy_tiles_)
PRN__FN void prn__fill_T(PRN__T *yp, size_t n, double value, int prn__nt, int prn__par) {
    const PRN__T v = (PRN__T)value;
    size_t i;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = v;
}
/* Short rows (s3 <= PRN__TILE): blocks of rows of one (i0, i1), so that a
 * row costs its copy and no index divisions (a bias broadcast over 10^6
 * rows of 3 spent most of its time dividing). */
PRN__FN void prn__scopy_rows_T(const size_t shp[4], const PRN__T *x0, const size_t xs[4], PRN__T *y0,
                               const size_t ys[4], int prn__nt, int prn__par) {
    const size_t s1 = shp[1], s2 = shp[2], s3 = shp[3], xs3 = xs[3], ys3 = ys[3];
    const size_t per = PRN__TILE / s3, nb = (s2 + per - 1) / per;
    size_t t;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (t = 0; t < shp[0] * s1 * nb; ++t) {
        size_t o = t / nb, i2 = (t % nb) * per, e = i2 + per < s2 ? i2 + per : s2, i3;
        const PRN__T *xp = x0 + (o / s1) * xs[0] + (o % s1) * xs[1] + i2 * xs[2];
        PRN__T *yp = y0 + (o / s1) * ys[0] + (o % s1) * ys[1] + i2 * ys[2];
        for (; i2 < e; ++i2, xp += xs[2], yp += ys[2]) {
            if (xs3 == 1 && ys3 == 1) { PRN__SIMD for (i3 = 0; i3 < s3; ++i3) yp[i3] = xp[i3]; }
            else { for (i3 = 0; i3 < s3; ++i3) yp[i3 * ys3] = xp[i3 * xs3]; }
        }
    }
}
/* Any layout: tiles of PRN__TILE elements of the innermost axis, so that a
 * single long row still uses every thread. */
PRN__FN void prn__scopy_tiles_T(const size_t shp[4], const PRN__T *x0, const size_t xs[4], PRN__T *y0,
                                const size_t ys[4], int prn__nt, int prn__par) {
    const size_t s1 = shp[1], s2 = shp[2], s3 = shp[3], xs3 = xs[3], ys3 = ys[3];
    const size_t rows = shp[0] * s1 * s2, nch = (s3 + PRN__TILE - 1) / PRN__TILE;
    size_t t;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (t = 0; t < rows * nch; ++t) {
        size_t r = t / nch, lo = (t % nch) * PRN__TILE;
        size_t len = s3 - lo < PRN__TILE ? s3 - lo : PRN__TILE;
        size_t i0 = r / (s1 * s2), i1 = (r / s2) % s1, i2 = r % s2, i3;
        const PRN__T *xp = x0 + i0 * xs[0] + i1 * xs[1] + i2 * xs[2] + lo * xs3;
        PRN__T *yp = y0 + i0 * ys[0] + i1 * ys[1] + i2 * ys[2] + lo * ys3;
        if (xs3 == 1 && ys3 == 1) { PRN__SIMD for (i3 = 0; i3 < len; ++i3) yp[i3] = xp[i3]; }
        else { for (i3 = 0; i3 < len; ++i3) yp[i3 * ys3] = xp[i3 * xs3]; }
    }
}
#undef prn__fill_T
#undef prn__scopy_rows_T
#undef prn__scopy_tiles_T
#endif /* PRN__TPL_COPY */

/* ---- OPS: the reference backend's elementwise ops, reductions, plain
 * GEMM and optimiser steps of one float type (parameters: T, SFX, and the
 * type's libm functions PRN__EXP, PRN__LOG, PRN__TANH, PRN__SQRT, PRN__POW,
 * PRN__FABS). Every function takes the caller's prn__nt/prn__par. */
#ifdef PRN__TPL_OPS
#undef PRN__TPL_OPS
#define prn__unary_T PRN__TNAME(prn__unary_)
#define prn__bin1_T PRN__TNAME(prn__bin1_)
#define prn__bin_tile_op_T PRN__TNAME(prn__bin_tile_op_)
#define prn__bin_tile_T PRN__TNAME(prn__bin_tile_)
#define prn__binary_T PRN__TNAME(prn__binary_)
#define prn__gemm_loops_T PRN__TNAME(prn__gemm_loops_)
#define prn__reduce_sum_T PRN__TNAME(prn__reduce_sum_)
#define prn__reduce_max_T PRN__TNAME(prn__reduce_max_)
#define prn__chunk_sum_T PRN__TNAME(prn__chunk_sum_)
#define prn__chunk_max_T PRN__TNAME(prn__chunk_max_)
#define prn__argmax_T PRN__TNAME(prn__argmax_)
#define prn__softmax_T PRN__TNAME(prn__softmax_)
#define prn__sgd_T PRN__TNAME(prn__sgd_)
#define prn__adam_T PRN__TNAME(prn__adam_)
/* One loop per op, so each inner loop is branch-free. */
PRN__FN int prn__unary_T(prn_unary_op op, size_t n, const PRN__T *xp, PRN__T *yp, double alpha, double beta,
                         int prn__nt, int prn__par) {
    const PRN__T al = (PRN__T)alpha, be = (PRN__T)beta;
    size_t i;
    (void)prn__nt; (void)prn__par;
    switch (op) {
    case PRN_UNARY_NEG: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = -xp[i]; break;
    case PRN_UNARY_EXP: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__EXP(xp[i]); break;
    case PRN_UNARY_LOG: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__LOG(xp[i]); break;
    case PRN_UNARY_RELU: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) { const PRN__T v = xp[i]; yp[i] = v > 0 ? v : (PRN__T)0; } break;
    case PRN_UNARY_SIGMOID:
        PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = (PRN__T)1 / ((PRN__T)1 + PRN__EXP(-xp[i]));
        break;
    case PRN_UNARY_TANH: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__TANH(xp[i]); break;
    case PRN_UNARY_SQUARE: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = xp[i] * xp[i]; break;
    case PRN_UNARY_SQRT: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__SQRT(xp[i]); break;
    case PRN_UNARY_ABS: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__FABS(xp[i]); break;
    case PRN_UNARY_POWS: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = PRN__POW(xp[i], al); break;
    case PRN_UNARY_AFFINE: PRN__PARFOR_SIMD for (i = 0; i < n; ++i) yp[i] = al * xp[i] + be; break;
    case PRN_UNARY_CLAMP:
        PRN__PARFOR_SIMD for (i = 0; i < n; ++i) {
            const PRN__T v = xp[i];
            yp[i] = v != v ? be : v > al ? al : v < -al ? -al : v;
        }
        break;
    default: return 0;
    }
    return 1;
}
/* A binary op on one element; called with a constant op from
 * prn__bin_tile_T's cases, where it folds to the one expression. */
PRN__FN_INLINE PRN__T prn__bin1_T(prn_binary_op op, PRN__T A, PRN__T B) {
    switch (op) {
    case PRN_BINARY_ADD: return A + B;
    case PRN_BINARY_SUB: return A - B;
    case PRN_BINARY_MUL: return A * B;
    case PRN_BINARY_DIV: return A / B;
    case PRN_BINARY_POW: return PRN__POW(A, B);
    case PRN_BINARY_MAX: return A > B ? A : B;
    case PRN_BINARY_MIN: return A < B ? A : B;
    case PRN_BINARY_EQ: return A == B ? (PRN__T)1 : (PRN__T)0;
    case PRN_BINARY_RELU_GRAD: return B > 0 ? A : (PRN__T)0;
    case PRN_BINARY_SIGMOID_GRAD: return A * B * ((PRN__T)1 - B);
    case PRN_BINARY_TANH_GRAD: return A * ((PRN__T)1 - B * B);
    default: return 0;
    }
}
/* One tile of a row: fast paths for contiguous and scalar operands let the
 * common cases vectorise. */
PRN__FN_INLINE void prn__bin_tile_op_T(prn_binary_op op, size_t len, const PRN__T *ap, size_t as3, const PRN__T *bp,
                                      size_t bs3, PRN__T *yp) {
    size_t i3;
    if (as3 == 1 && bs3 == 1) {
        PRN__SIMD for (i3 = 0; i3 < len; ++i3) yp[i3] = prn__bin1_T(op, ap[i3], bp[i3]);
    } else if (as3 == 1 && bs3 == 0) {
        const PRN__T B = bp[0];
        PRN__SIMD for (i3 = 0; i3 < len; ++i3) yp[i3] = prn__bin1_T(op, ap[i3], B);
    } else if (as3 == 0 && bs3 == 1) {
        const PRN__T A = ap[0];
        PRN__SIMD for (i3 = 0; i3 < len; ++i3) yp[i3] = prn__bin1_T(op, A, bp[i3]);
    } else {
        for (i3 = 0; i3 < len; ++i3) yp[i3] = prn__bin1_T(op, ap[i3 * as3], bp[i3 * bs3]);
    }
}
/* A switch per tile (PRN__TILE elements), each case a copy of the tile's
 * loops for its op */
PRN__FN void prn__bin_tile_T(prn_binary_op op, size_t len, const PRN__T *ap, size_t as3, const PRN__T *bp, size_t bs3,
                             PRN__T *yp) {
    switch (op) {
    case PRN_BINARY_ADD: prn__bin_tile_op_T(PRN_BINARY_ADD, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_SUB: prn__bin_tile_op_T(PRN_BINARY_SUB, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_MUL: prn__bin_tile_op_T(PRN_BINARY_MUL, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_DIV: prn__bin_tile_op_T(PRN_BINARY_DIV, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_POW: prn__bin_tile_op_T(PRN_BINARY_POW, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_MAX: prn__bin_tile_op_T(PRN_BINARY_MAX, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_MIN: prn__bin_tile_op_T(PRN_BINARY_MIN, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_EQ: prn__bin_tile_op_T(PRN_BINARY_EQ, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_RELU_GRAD: prn__bin_tile_op_T(PRN_BINARY_RELU_GRAD, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_SIGMOID_GRAD: prn__bin_tile_op_T(PRN_BINARY_SIGMOID_GRAD, len, ap, as3, bp, bs3, yp); break;
    case PRN_BINARY_TANH_GRAD: prn__bin_tile_op_T(PRN_BINARY_TANH_GRAD, len, ap, as3, bp, bs3, yp); break;
    default: break;
    }
}
/* Broadcasting walk: the three outer axes and chunks of the innermost one
 * form the tiles of one parallel loop (so a single long row still uses
 * every thread). The op is checked by the caller. */
PRN__FN void prn__binary_T(prn_binary_op op, const size_t shape[4], const PRN__T *a0, const size_t as[4],
                           const PRN__T *b0, const size_t bs[4], PRN__T *y0, int prn__nt, int prn__par) {
    const size_t s1 = shape[1], s2 = shape[2], s3 = shape[3], as3 = as[3], bs3 = bs[3];
    const size_t rows = shape[0] * s1 * s2, nch = (s3 + PRN__TILE - 1) / PRN__TILE;
    size_t t;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (t = 0; t < rows * nch; ++t) {
        size_t r = t / nch, lo = (t % nch) * PRN__TILE;
        size_t len = s3 - lo < PRN__TILE ? s3 - lo : PRN__TILE;
        size_t i0 = r / (s1 * s2), i1 = (r / s2) % s1, i2 = r % s2;
        const PRN__T *ap = a0 + i0 * as[0] + i1 * as[1] + i2 * as[2] + lo * as3;
        const PRN__T *bp = b0 + i0 * bs[0] + i1 * bs[1] + i2 * bs[2] + lo * bs3;
        prn__bin_tile_T(op, len, ap, as3, bp, bs3, y0 + r * s3 + lo);
    }
}
/* GEMM without BLAS. Row i of C is built as a sum of rows of B scaled by
 * op(A)[i,k] (contiguous, vectorises) when B is not transposed; with B
 * transposed each C[i,j] is a dot product of contiguous rows. */
PRN__FN void prn__gemm_loops_T(int trans_a, int trans_b, size_t M, size_t N, size_t K, double alpha,
                               const PRN__T *A0, size_t lda, size_t sa, const PRN__T *B0, size_t ldb, size_t sb,
                               double beta, PRN__T *C0, size_t ldc, size_t sc, size_t batch, int prn__nt,
                               int prn__par) {
    const PRN__T al = (PRN__T)alpha, bt = (PRN__T)beta;
    size_t r;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (r = 0; r < batch * M; ++r) {
        size_t bi = r / M, i = r % M, j, k;
        const PRN__T *Ab = A0 + bi * sa, *Bb = B0 + bi * sb;
        PRN__T *c = C0 + bi * sc + i * ldc;
        if (beta == 0) { for (j = 0; j < N; ++j) c[j] = 0; }
        else if (beta != 1) { for (j = 0; j < N; ++j) c[j] *= bt; }
        if (!trans_b) {
            for (k = 0; k < K; ++k) {
                const PRN__T aik = al * (trans_a ? Ab[k * lda + i] : Ab[i * lda + k]);
                const PRN__T *brow = Bb + k * ldb;
                PRN__SIMD for (j = 0; j < N; ++j) c[j] += aik * brow[j];
            }
        } else {
            for (j = 0; j < N; ++j) {
                const PRN__T *brow = Bb + j * ldb;
                PRN__T s = 0;
                if (!trans_a) {
                    const PRN__T *arow = Ab + i * lda;
                    PRN__SIMD_SUM(s) for (k = 0; k < K; ++k) s += arow[k] * brow[k];
                } else {
                    for (k = 0; k < K; ++k) s += Ab[k * lda + i] * brow[k];
                }
                c[j] += al * s;
            }
        }
    }
}
/* A chunk of a row summed in double: PRN__SUM_LANES interleaved partial
 * sums (the compiler keeps them in vector registers), then folded in
 * halves. One add per element in a single chain ran at 3-8 GB/s, bound by
 * the add's latency. */
PRN__FN_INLINE double prn__chunk_sum_T(const PRN__T *x, size_t n) {
    double a[PRN__SUM_LANES];
    size_t k = 0, j, w;
    for (j = 0; j < PRN__SUM_LANES; ++j) a[j] = 0.0;
    for (; k + PRN__SUM_LANES <= n; k += PRN__SUM_LANES)
        for (j = 0; j < PRN__SUM_LANES; ++j) a[j] += (double)x[k + j];
    for (j = 0; k < n; ++k, ++j) a[j] += (double)x[k];
    for (w = PRN__SUM_LANES / 2; w; w /= 2)
        for (j = 0; j < w; ++j) a[j] += a[j + w];
    return a[0];
}
/* A chunk's maximum, NaNs skipped: the first element, in order, that no
 * later one exceeds (as the one loop over it gave). Eight lanes, named
 * variables that the compiler vectorises (the one loop's compare chain ran
 * at 8 GB/s; an array of lanes stayed on the stack in f64), give the
 * value; values that compare equal have the same bits except zeros, so a
 * maximum of zero is the chunk's first zero, with its sign. */
#define PRN__MAX1(m, i) { const PRN__T v = x[k + (i)]; m = v > m ? v : m; }
PRN__FN_INLINE PRN__T prn__chunk_max_T(const PRN__T *x, size_t n) {
    PRN__T m0 = -INFINITY, m1 = m0, m2 = m0, m3 = m0, m4 = m0, m5 = m0, m6 = m0, m7 = m0, acc = m0;
    size_t k = 0;
    if (sizeof(PRN__T) == sizeof(double)) { /* f64: the SSE2 loop (the f32 one vectorises as it is) */
        double md[8];
        size_t j;
        for (j = 0; j < 8; ++j) md[j] = -INFINITY;
        k = prn__max8_f64((const double *)(const void *)x, n, md);
        m0 = (PRN__T)md[0]; m1 = (PRN__T)md[1]; m2 = (PRN__T)md[2]; m3 = (PRN__T)md[3];
        m4 = (PRN__T)md[4]; m5 = (PRN__T)md[5]; m6 = (PRN__T)md[6]; m7 = (PRN__T)md[7];
    }
    for (; k + 8 <= n; k += 8) {
        PRN__MAX1(m0, 0) PRN__MAX1(m1, 1) PRN__MAX1(m2, 2) PRN__MAX1(m3, 3)
        PRN__MAX1(m4, 4) PRN__MAX1(m5, 5) PRN__MAX1(m6, 6) PRN__MAX1(m7, 7)
    }
    { const PRN__T a[8] = {m0, m1, m2, m3, m4, m5, m6, m7};
      size_t j;
      for (j = 0; j < 8; ++j) acc = a[j] > acc ? a[j] : acc; }
    for (; k < n; ++k) { const PRN__T v = x[k]; acc = v > acc ? v : acc; }
    if (acc == 0)
        for (k = 0; k < n; ++k)
            if (x[k] == 0) return x[k];
    return acc;
}
#undef PRN__MAX1
/* Sums: a row (inner == 1) accumulates in double, so long f32 rows keep
 * their accuracy, chunk by chunk (prn__sum_chunk: a split set by n alone,
 * so the bits do not depend on the threads) and the chunks' sums in order;
 * one long row (outer 1: a loss, a sum over all axes) takes its chunks on
 * the team. Strided ones vectorise across inner in T (in registers for
 * inner <= 16: no store and reload per row). */
PRN__FN void prn__reduce_sum_T(size_t outer, size_t n, size_t inner, const PRN__T *x0, PRN__T *y0, int prn__nt,
                               int prn__par) {
    const size_t ch = prn__sum_chunk(n);
    size_t o;
    (void)prn__nt; (void)prn__par;
    if (outer == 1 && inner == 1 && n > ch) {
        double part[PRN__SUM_CHUNKS], acc = 0.0;
        const size_t nc = (n + ch - 1) / ch;
        size_t c;
        PRN__PARFOR for (c = 0; c < nc; ++c) part[c] = prn__chunk_sum_T(x0 + c * ch, c + 1 < nc ? ch : n - c * ch);
        for (c = 0; c < nc; ++c) acc += part[c];
        y0[0] = (PRN__T)acc;
        return;
    }
    PRN__PARFOR for (o = 0; o < outer; ++o) {
        const PRN__T *xo = x0 + o * n * inner;
        PRN__T *yo = y0 + o * inner;
        size_t k, i;
        if (inner == 1) { /* the chunks of the branch above, in the same order */
            double acc = 0.0;
            for (k = 0; k < n; k += ch) acc += prn__chunk_sum_T(xo + k, n - k < ch ? n - k : ch);
            yo[0] = (PRN__T)acc;
        } else if (inner <= 16) {
            PRN__T a[16];
            for (i = 0; i < inner; ++i) a[i] = 0;
            for (k = 0; k < n; ++k) {
                const PRN__T *xk = xo + k * inner;
                for (i = 0; i < inner; ++i) a[i] = a[i] + xk[i];
            }
            for (i = 0; i < inner; ++i) yo[i] = a[i];
        } else {
            for (i = 0; i < inner; ++i) yo[i] = 0;
            for (k = 0; k < n; ++k) {
                const PRN__T *xk = xo + k * inner;
                PRN__SIMD for (i = 0; i < inner; ++i) yo[i] = yo[i] + xk[i];
            }
        }
    }
}
/* Maxima, the same walk in T (one long row's chunks on the team too: a
 * maximum is exact, in any split). */
PRN__FN void prn__reduce_max_T(size_t outer, size_t n, size_t inner, const PRN__T *x0, PRN__T *y0, int prn__nt,
                               int prn__par) {
    const size_t ch = prn__sum_chunk(n);
    size_t o;
    (void)prn__nt; (void)prn__par;
    if (outer == 1 && inner == 1 && n > ch) {
        PRN__T part[PRN__SUM_CHUNKS], acc = -INFINITY;
        const size_t nc = (n + ch - 1) / ch;
        size_t c;
        PRN__PARFOR for (c = 0; c < nc; ++c) part[c] = prn__chunk_max_T(x0 + c * ch, c + 1 < nc ? ch : n - c * ch);
        for (c = 0; c < nc; ++c) acc = part[c] > acc ? part[c] : acc;
        y0[0] = acc;
        return;
    }
    PRN__PARFOR for (o = 0; o < outer; ++o) {
        const PRN__T *xo = x0 + o * n * inner;
        PRN__T *yo = y0 + o * inner;
        size_t k, i;
        if (inner == 1) {
            yo[0] = prn__chunk_max_T(xo, n);
        } else if (inner <= 16) {
            PRN__T a[16];
            for (i = 0; i < inner; ++i) a[i] = -INFINITY;
            for (k = 0; k < n; ++k) {
                const PRN__T *xk = xo + k * inner;
                for (i = 0; i < inner; ++i) { const PRN__T acc = a[i], v = xk[i]; a[i] = v > acc ? v : acc; }
            }
            for (i = 0; i < inner; ++i) yo[i] = a[i];
        } else {
            for (i = 0; i < inner; ++i) yo[i] = -INFINITY;
            for (k = 0; k < n; ++k) {
                const PRN__T *xk = xo + k * inner;
                PRN__SIMD for (i = 0; i < inner; ++i) { const PRN__T acc = yo[i], v = xk[i]; yo[i] = v > acc ? v : acc; }
            }
        }
    }
}
PRN__FN void prn__argmax_T(size_t outer, size_t n, size_t inner, const PRN__T *x0, int32_t *y0, int prn__nt,
                           int prn__par) {
    size_t r;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (r = 0; r < outer * inner; ++r) {
        size_t o = r / inner, i = r % inner, k, best = 0;
        const PRN__T *xo = x0 + o * n * inner + i;
        PRN__T bv = xo[0];
        for (k = 1; k < n; ++k)
            if (xo[k * inner] > bv) { bv = xo[k * inner]; best = k; }
        y0[r] = (int32_t)best;
    }
}
PRN__FN void prn__softmax_T(int logsm, size_t outer, size_t n, size_t inner, const PRN__T *x0, PRN__T *y0,
                            int prn__nt, int prn__par) {
    size_t r;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR for (r = 0; r < outer * inner; ++r) {
        size_t o = r / inner, i = r % inner, k;
        const PRN__T *xo = x0 + o * n * inner + i;
        PRN__T *yo = y0 + o * n * inner + i;
        PRN__T mx = xo[0], s = 0;
        for (k = 1; k < n; ++k) if (xo[k * inner] > mx) mx = xo[k * inner];
        for (k = 0; k < n; ++k) s += PRN__EXP(xo[k * inner] - mx);
        if (logsm) {
            const PRN__T ls = PRN__LOG(s) + mx;
            for (k = 0; k < n; ++k) yo[k * inner] = xo[k * inner] - ls;
        } else {
            const PRN__T inv = (PRN__T)1 / s;
            for (k = 0; k < n; ++k) yo[k * inner] = PRN__EXP(xo[k * inner] - mx) * inv;
        }
    }
}
#ifndef PARRNN_NO_TRAINING
PRN__FN void prn__sgd_T(size_t n, PRN__T *w, const PRN__T *g, PRN__T *v, const prn_optim_params *p, int prn__nt,
                        int prn__par) {
    const PRN__T lr = (PRN__T)p->lr, mom = (PRN__T)p->momentum, wd = (PRN__T)p->weight_decay;
    size_t i;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR_SIMD for (i = 0; i < n; ++i) {
        PRN__T d = g[i] + wd * w[i];
        if (v) { v[i] = mom * v[i] + d; d = p->nesterov ? d + mom * v[i] : v[i]; }
        w[i] -= lr * d;
    }
}
PRN__FN void prn__adam_T(size_t n, PRN__T *w, const PRN__T *g, PRN__T *m, PRN__T *v, const prn_optim_params *p,
                         int prn__nt, int prn__par) {
    const PRN__T lr = (PRN__T)p->lr, b1 = (PRN__T)p->beta1, b2 = (PRN__T)p->beta2, eps = (PRN__T)p->eps;
    const PRN__T wd = (PRN__T)p->weight_decay, ib1 = (PRN__T)(1.0 / p->bias1), ib2 = (PRN__T)(1.0 / p->bias2);
    const int dec = p->decoupled;
    size_t i;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR_SIMD for (i = 0; i < n; ++i) {
        const PRN__T gi = dec ? g[i] : g[i] + wd * w[i];
        m[i] = b1 * m[i] + ((PRN__T)1 - b1) * gi;
        v[i] = b2 * v[i] + ((PRN__T)1 - b2) * gi * gi;
        w[i] -= lr * ((m[i] * ib1) / (PRN__SQRT(v[i] * ib2) + eps) + (dec ? wd * w[i] : (PRN__T)0));
    }
}
#endif /* PARRNN_NO_TRAINING */
#undef prn__unary_T
#undef prn__bin1_T
#undef prn__bin_tile_op_T
#undef prn__bin_tile_T
#undef prn__binary_T
#undef prn__gemm_loops_T
#undef prn__reduce_sum_T
#undef prn__reduce_max_T
#undef prn__chunk_sum_T
#undef prn__chunk_max_T
#undef prn__argmax_T
#undef prn__softmax_T
#undef prn__sgd_T
#undef prn__adam_T
#undef PRN__EXP
#undef PRN__LOG
#undef PRN__TANH
#undef PRN__SQRT
#undef PRN__POW
#undef PRN__FABS
#endif /* PRN__TPL_OPS */

/* (end of the scans and elementwise ops) */

/* ======== cells and fused layers ======== */

/* ---- CELL_UNITS (parameters: T, SFX, EXP, TANH).
 * Generates prn__elman_fw_<sfx>, prn__lstm_fw_<sfx>, prn__gru_fw_<sfx>,
 * prn__elman_bw_<sfx>, prn__lstm_bw_<sfx>, prn__gru_bw_<sfx>. */
/* The gates of n consecutive units of one batch row. Gate g of unit i is
 * at x[g * xs + i], q[g * qs + i] and bb[g * bs + i] (input projection,
 * hidden projection, b_hh); saved value m at v[m * vs + i] (v may be
 * NULL: nothing saved). The backward ones write d loss / d xp to dx and
 * d loss / d (q + b_hh) to dq, gate g at [g * ds + i]. Shared by the
 * one-step entries (rnn_gates_*) and the fused layers (rnn_layer_*). */
#ifdef PRN__TPL_CELL_UNITS
#undef PRN__TPL_CELL_UNITS
#define prn__elman_fw_T PRN__TNAME(prn__elman_fw_)
#define prn__lstm_fw_T PRN__TNAME(prn__lstm_fw_)
#define prn__gru_fw_T PRN__TNAME(prn__gru_fw_)
#define prn__elman_bw_T PRN__TNAME(prn__elman_bw_)
#define prn__lstm_bw_T PRN__TNAME(prn__lstm_bw_)
#define prn__gru_bw_T PRN__TNAME(prn__gru_bw_)
PRN__FN_INLINE void prn__elman_fw_T(size_t n, int relu, const PRN__T *x, const PRN__T *q, const PRN__T *bb, PRN__T *h) {
    size_t i;
    if (relu) { for (i = 0; i < n; ++i) { PRN__T p = x[i] + q[i] + bb[i]; h[i] = p > 0 ? p : (PRN__T)0; } }
    else { PRN__SIMD for (i = 0; i < n; ++i) h[i] = PRN__TANH(x[i] + q[i] + bb[i]); }
}
PRN__FN_INLINE void prn__lstm_fw_T(size_t n, const PRN__T *x, size_t xs, const PRN__T *q, size_t qs, const PRN__T *bb,
                                   size_t bs, const PRN__T *cp, PRN__T *h, PRN__T *c, PRN__T *v, size_t vs) {
    size_t i;
    if (v) {
        PRN__SIMD for (i = 0; i < n; ++i) {
            PRN__T ig = PRN__SIGM(PRN__T, PRN__EXP, x[i] + q[i] + bb[i]);
            PRN__T fg = PRN__SIGM(PRN__T, PRN__EXP, x[xs + i] + q[qs + i] + bb[bs + i]);
            PRN__T gg = PRN__TANH(x[2 * xs + i] + q[2 * qs + i] + bb[2 * bs + i]);
            PRN__T og = PRN__SIGM(PRN__T, PRN__EXP, x[3 * xs + i] + q[3 * qs + i] + bb[3 * bs + i]);
            PRN__T cn = fg * cp[i] + ig * gg, tc = PRN__TANH(cn);
            h[i] = og * tc; c[i] = cn;
            v[i] = ig; v[vs + i] = fg; v[2 * vs + i] = gg; v[3 * vs + i] = og; v[4 * vs + i] = tc;
        }
    } else {
        PRN__SIMD for (i = 0; i < n; ++i) {
            PRN__T ig = PRN__SIGM(PRN__T, PRN__EXP, x[i] + q[i] + bb[i]);
            PRN__T fg = PRN__SIGM(PRN__T, PRN__EXP, x[xs + i] + q[qs + i] + bb[bs + i]);
            PRN__T gg = PRN__TANH(x[2 * xs + i] + q[2 * qs + i] + bb[2 * bs + i]);
            PRN__T og = PRN__SIGM(PRN__T, PRN__EXP, x[3 * xs + i] + q[3 * qs + i] + bb[3 * bs + i]);
            PRN__T cn = fg * cp[i] + ig * gg;
            h[i] = og * PRN__TANH(cn); c[i] = cn;
        }
    }
}
/* GRU: gates r | z | n; the saved values r z n and q_n + b_hn */
PRN__FN_INLINE void prn__gru_fw_T(size_t n, const PRN__T *x, size_t xs, const PRN__T *q, size_t qs, const PRN__T *bb,
                                  size_t bs, const PRN__T *hp, PRN__T *h, PRN__T *v, size_t vs) {
    size_t i;
    if (v) {
        PRN__SIMD for (i = 0; i < n; ++i) {
            PRN__T r = PRN__SIGM(PRN__T, PRN__EXP, x[i] + q[i] + bb[i]);
            PRN__T z = PRN__SIGM(PRN__T, PRN__EXP, x[xs + i] + q[qs + i] + bb[bs + i]);
            PRN__T hn = q[2 * qs + i] + bb[2 * bs + i], nn = PRN__TANH(x[2 * xs + i] + r * hn);
            h[i] = nn + z * (hp[i] - nn);
            v[i] = r; v[vs + i] = z; v[2 * vs + i] = nn; v[3 * vs + i] = hn;
        }
    } else {
        PRN__SIMD for (i = 0; i < n; ++i) {
            PRN__T r = PRN__SIGM(PRN__T, PRN__EXP, x[i] + q[i] + bb[i]);
            PRN__T z = PRN__SIGM(PRN__T, PRN__EXP, x[xs + i] + q[qs + i] + bb[bs + i]);
            PRN__T nn = PRN__TANH(x[2 * xs + i] + r * (q[2 * qs + i] + bb[2 * bs + i]));
            h[i] = nn + z * (hp[i] - nn);
        }
    }
}
#ifndef PARRNN_NO_TRAINING /* the backward ones */
/* g: d loss / d h; nx: the step's output */
PRN__FN_INLINE void prn__elman_bw_T(size_t n, int relu, const PRN__T *g, const PRN__T *nx, PRN__T *dx, PRN__T *dq) {
    size_t i;
    if (relu) { for (i = 0; i < n; ++i) { PRN__T dp = nx[i] > 0 ? g[i] : (PRN__T)0; dx[i] = dp; dq[i] = dp; } }
    else { PRN__SIMD for (i = 0; i < n; ++i) { PRN__T dp = g[i] * ((PRN__T)1 - nx[i] * nx[i]); dx[i] = dp; dq[i] = dp; } }
}
/* gh, gc: d loss / d (h, c); cp: the previous c; writes dcp = d loss / d cp
 * through the cell (dc * f; may alias gc) */
PRN__FN_INLINE void prn__lstm_bw_T(size_t n, const PRN__T *gh, const PRN__T *gc, const PRN__T *cp, const PRN__T *v,
                                   size_t vs, PRN__T *dx, PRN__T *dq, size_t ds, PRN__T *dcp) {
    size_t i;
    PRN__SIMD for (i = 0; i < n; ++i) {
        PRN__T ig = v[i], fg = v[vs + i], gt = v[2 * vs + i], og = v[3 * vs + i], tc = v[4 * vs + i];
        PRN__T gu = gh[i], dc = gc[i] + gu * og * ((PRN__T)1 - tc * tc);
        PRN__T di = dc * gt * ig * ((PRN__T)1 - ig), df = dc * cp[i] * fg * ((PRN__T)1 - fg);
        PRN__T dg = dc * ig * ((PRN__T)1 - gt * gt), dO = gu * tc * og * ((PRN__T)1 - og);
        dx[i] = di; dq[i] = di; dx[ds + i] = df; dq[ds + i] = df;
        dx[2 * ds + i] = dg; dq[2 * ds + i] = dg; dx[3 * ds + i] = dO; dq[3 * ds + i] = dO;
        dcp[i] = dc * fg;
    }
}
/* g: d loss / d h; hp: the previous h; writes dh = the part of d loss / d hp
 * that does not go through q (may alias g) */
PRN__FN_INLINE void prn__gru_bw_T(size_t n, const PRN__T *g, const PRN__T *hp, const PRN__T *v, size_t vs, PRN__T *dx,
                                  PRN__T *dq, size_t ds, PRN__T *dh) {
    size_t i;
    PRN__SIMD for (i = 0; i < n; ++i) {
        PRN__T r = v[i], z = v[vs + i], nn = v[2 * vs + i], hn = v[3 * vs + i], gu = g[i];
        PRN__T dpn = (gu - gu * z) * ((PRN__T)1 - nn * nn);
        PRN__T dpr = dpn * hn * r * ((PRN__T)1 - r), dpz = gu * (hp[i] - nn) * z * ((PRN__T)1 - z);
        dx[i] = dpr; dq[i] = dpr; dx[ds + i] = dpz; dq[ds + i] = dpz;
        dx[2 * ds + i] = dpn; dq[2 * ds + i] = dpn * r;
        dh[i] = gu * z;
    }
}
#endif
#undef prn__elman_fw_T
#undef prn__lstm_fw_T
#undef prn__gru_fw_T
#undef prn__elman_bw_T
#undef prn__lstm_bw_T
#undef prn__gru_bw_T
#undef PRN__EXP
#undef PRN__TANH
#endif /* PRN__TPL_CELL_UNITS */

/* ---- CELL_STEP (parameters: T, SFX). Generates prn__cell_fwd_<sfx>,
 * prn__cell_bwd_<sfx>. */
/* One step of B rows (rnn_gates_forward / _backward, arguments checked by
 * the callers): the rows over the team of prn__nt threads (prn__par), the
 * gates of a row by the units above. */
#ifdef PRN__TPL_CELL_STEP
#undef PRN__TPL_CELL_STEP
#define prn__cell_fwd_T PRN__TNAME(prn__cell_fwd_)
#define prn__cell_bwd_T PRN__TNAME(prn__cell_bwd_)
#define prn__elman_fw_T PRN__TNAME(prn__elman_fw_)
#define prn__lstm_fw_T PRN__TNAME(prn__lstm_fw_)
#define prn__gru_fw_T PRN__TNAME(prn__gru_fw_)
#define prn__elman_bw_T PRN__TNAME(prn__elman_bw_)
#define prn__lstm_bw_T PRN__TNAME(prn__lstm_bw_)
#define prn__gru_bw_T PRN__TNAME(prn__gru_bw_)
PRN__FN_INLINE void prn__cell_fwd_T(int kind, int relu, size_t B, size_t H, size_t k, const void *xp, const void *q,
                                    const void *bias, const void *s, void *next, void *saved, int prn__nt,
                                    int prn__par) {
    const PRN__T *X = (const PRN__T *)xp, *Q = (const PRN__T *)q, *bb = (const PRN__T *)bias, *S0 = (const PRN__T *)s;
    PRN__T *N = (PRN__T *)next, *V = (PRN__T *)saved;
    size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H, S = kind == PRN_RNN_LSTM ? 2 * H : H, b;
    PRN__PARFOR
    for (b = 0; b < B; ++b) {
        const PRN__T *x = X + b * P, *qq = Q + b * P, *sp = S0 + b * S;
        PRN__T *n = N + b * S, *v = V ? V + b * prn__gates_saved(kind) * H : NULL;
        size_t hd;
        if (kind == PRN_RNN_ELMAN) prn__elman_fw_T(H, relu, x, qq, bb, n);
        else if (kind == PRN_RNN_LSTM) prn__lstm_fw_T(H, x, H, qq, H, bb, H, sp + H, n, n + H, v, H);
        else /* GRU: heads of k units, gates r | z | n inside a head */
            for (hd = 0; hd < H / k; ++hd)
                prn__gru_fw_T(k, x + hd * 3 * k, k, qq + hd * 3 * k, k, bb + hd * 3 * k, k, sp + hd * k,
                                  n + hd * k, v ? v + hd * k : NULL, H);
    }
    (void)prn__nt; (void)prn__par;
}
#ifndef PARRNN_NO_TRAINING /* (rnn_gates_backward, the training table's) */
PRN__FN_INLINE void prn__cell_bwd_T(int kind, int relu, size_t B, size_t H, size_t k, const void *g, const void *s,
                                    const void *next, const void *saved, void *dxp, void *dq, void *ds, int prn__nt,
                                    int prn__par) {
    const PRN__T *Gr = (const PRN__T *)g, *S0 = (const PRN__T *)s, *N = (const PRN__T *)next, *V = (const PRN__T *)saved;
    PRN__T *DX = (PRN__T *)dxp, *DQ = (PRN__T *)dq, *DS = (PRN__T *)ds;
    size_t G = kind == PRN_RNN_LSTM ? 4 : kind == PRN_RNN_ELMAN ? 1 : 3, P = G * H, b;
    size_t S = kind == PRN_RNN_LSTM ? 2 * H : H;
    PRN__PARFOR
    for (b = 0; b < B; ++b) {
        const PRN__T *gg = Gr + b * S, *sp = S0 + b * S, *n = N + b * S;
        PRN__T *dx = DX + b * P, *dqq = DQ + b * P, *d = DS + b * S;
        size_t i, hd;
        if (kind == PRN_RNN_ELMAN) {
            prn__elman_bw_T(H, relu, gg, n, dx, dqq);
            for (i = 0; i < H; ++i) d[i] = 0;
        } else if (kind == PRN_RNN_LSTM) {
            prn__lstm_bw_T(H, gg, gg + H, sp + H, V + b * 5 * H, H, dx, dqq, H, d + H);
            for (i = 0; i < H; ++i) d[i] = 0;
        } else {
            for (hd = 0; hd < H / k; ++hd)
                prn__gru_bw_T(k, gg + hd * k, sp + hd * k, V + b * 4 * H + hd * k, H, dx + hd * 3 * k,
                                  dqq + hd * 3 * k, k, d + hd * k);
        }
    }
    (void)prn__nt; (void)prn__par;
}
#endif
#undef prn__cell_fwd_T
#undef prn__cell_bwd_T
#undef prn__elman_fw_T
#undef prn__lstm_fw_T
#undef prn__gru_fw_T
#undef prn__elman_bw_T
#undef prn__lstm_bw_T
#undef prn__gru_bw_T
#endif /* PRN__TPL_CELL_STEP */

/* ---- PANEL_MM (parameters: T, SFX). Generates prn__panel_mm_<sfx>,
 * prn__panel_mmz_<sfx>. */
/* out[b, 0..15] = sum_k a[b * lda + k] p[k * 16 + 0..15], b < B (16 columns
 * of a packed block): by 4 rows, then the rest one at a time */
#ifdef PRN__TPL_PANEL_MM
#undef PRN__TPL_PANEL_MM
#define prn__panel_mm_T PRN__TNAME(prn__panel_mm_)
#define prn__panel_mmz_T PRN__TNAME(prn__panel_mmz_)
PRN__FN void prn__panel_mm_T(size_t B, size_t K, const PRN__T *a, size_t lda, const PRN__T *p, PRN__T *out, size_t ldo) {
    size_t b = 0, k, i, c;
    for (; b + 4 <= B; b += 4) {
        PRN__T acc[4][16];
        memset(acc, 0, sizeof acc);
        for (k = 0; k < K; ++k) {
            const PRN__T *w = p + k * 16;
            for (i = 0; i < 4; ++i) {
                const PRN__T x = a[(b + i) * lda + k];
                PRN__SIMD for (c = 0; c < 16; ++c) acc[i][c] += x * w[c];
            }
        }
        for (i = 0; i < 4; ++i) memcpy(out + (b + i) * ldo, acc[i], sizeof acc[i]);
    }
    for (; b < B; ++b) {
        PRN__T acc[16];
        memset(acc, 0, sizeof acc);
        for (k = 0; k < K; ++k) {
            const PRN__T *w = p + k * 16, x = a[b * lda + k];
            PRN__SIMD for (c = 0; c < 16; ++c) acc[c] += x * w[c];
        }
        memcpy(out + b * ldo, acc, sizeof acc);
    }
}
/* Z blocks: block z at p + z K 16, its output at out + z 16 */
PRN__FN void prn__panel_mmz_T(size_t B, size_t K, const PRN__T *a, size_t lda, const PRN__T *p, size_t Z, PRN__T *out,
                              size_t ldo) {
    size_t z;
    for (z = 0; z < Z; ++z) prn__panel_mm_T(B, K, a, lda, p + z * K * 16, out + z * 16, ldo);
}
#undef prn__panel_mm_T
#undef prn__panel_mmz_T
#endif /* PRN__TPL_PANEL_MM */

/* ---- TNACC (parameters: T, SFX). Generates prn__tnacc_<sfx>. */
/* out[r, 0..N) (+)= sum_k a[k lda + r] p[k N + 0..N), r < R: each entry
 * by one chain over k (the AVX kernels' order) */
#ifdef PRN__TPL_TNACC
#undef PRN__TPL_TNACC
#define prn__tnacc_T PRN__TNAME(prn__tnacc_)
PRN__FN void prn__tnacc_T(size_t R, size_t K, const PRN__T *a, size_t lda, const PRN__T *p, size_t N, PRN__T *out, int acc) {
    size_t r, k, c;
    for (r = 0; r < R; ++r) {
        PRN__T *o = out + r * N;
        if (!acc) for (c = 0; c < N; ++c) o[c] = 0;
        for (k = 0; k < K; ++k) {
            const PRN__T x = a[k * lda + r], *pk = p + k * N;
            PRN__SIMD for (c = 0; c < N; ++c) o[c] += x * pk[c];
        }
    }
}
#undef prn__tnacc_T
#endif /* PRN__TPL_TNACC */

/* ---- LAYER_DW (parameters: T, SFX, ATTR).
 * Generates prn__layer_dwc_<sfx>, prn__layer_dwput_<sfx>. */
/* chunk's sums (its steps, whose ring is chunk & 1), and the end's copy
 * of thread j's rows of dwa into dw and db */
#ifdef PRN__TPL_LAYER_DW
#undef PRN__TPL_LAYER_DW
#define prn__layer_dwc_T PRN__TNAME(prn__layer_dwc_)
#define prn__tnacc_T PRN__TNAME(prn__tnacc_)
#define prn__layer_dwput_T PRN__TNAME(prn__layer_dwput_)
PRN__FN PRN__ATTR void prn__layer_dwc_T(const prn__layer *L, size_t chunk, size_t steps, size_t j, size_t m,
                                        size_t u0, size_t u1) {
    const size_t ring = (chunk & 1) * L->dwC * L->dwB;
    size_t p0, p1, sg;
    for (sg = 0; sg < L->G; ++sg) {
        prn__layer_dw_rows(L, j, m, u0, u1, sg, &p0, &p1);
        if (p1 <= p0) continue;
      {
        const PRN__T *a = (const PRN__T *)L->rq + ring * L->Pq;
        PRN__T *db = (PRN__T *)L->dwa + L->P * L->Rq;
        size_t k, r;
        prn__tnacc_T(p1 - p0, steps * L->dwB, a + p0, L->Pq, (const PRN__T *)L->rh + ring * L->Rq, L->Rq,
                         (PRN__T *)L->dwa + p0 * L->Rq, chunk > 0);
        /* db: plain adds, each the bits of the FMA by a column of ones
         * (an odd 16-column block fell to the AVX2 kernel: 2% of the time)
         */
        if (!chunk) for (r = p0; r < p1; ++r) db[r] = 0;
        for (k = 0; (L->db || L->dbi) && k < steps * L->dwB; ++k)
            PRN__SIMD for (r = p0; r < p1; ++r) db[r] += a[k * L->Pq + r];
      }
    }
}
PRN__FN void prn__layer_dwput_T(const prn__layer *L, size_t j, size_t m, size_t u0, size_t u1) {
    const PRN__T *s = (const PRN__T *)L->dwa;
    PRN__T *dw = (PRN__T *)L->dw, *db = (PRN__T *)L->db, *dwi = (PRN__T *)L->dwi, *dbi = (PRN__T *)L->dbi;
    size_t p0, p1, r, sg;
    for (sg = 0; sg < L->G; ++sg) {
        prn__layer_dw_rows(L, j, m, u0, u1, sg, &p0, &p1);
        for (r = p0; r < p1; ++r) {
            memcpy(dw + r * L->H, s + r * L->Rq, L->H * sizeof(PRN__T));
            if (dwi && L->NI) memcpy(dwi + r * L->NI, s + r * L->Rq + L->Hq, L->NI * sizeof(PRN__T));
            if (db) db[r] = s[L->P * L->Rq + r];
            if (dbi) dbi[r] = s[L->P * L->Rq + r];
        }
    }
}
#undef prn__layer_dwc_T
#undef prn__tnacc_T
#undef prn__layer_dwput_T
#endif /* PRN__TPL_LAYER_DW */

/* ---- LAYER (parameters: T, SFX, UNIT, ATTR, MM).
 * Generates prn__layer_fw_<sfx>, prn__layer_bw_<sfx>. */
/* Thread j's part of a layer, forward and backward; called inside the
 * parallel region (the barriers are the region's). ATTR and MM: compiled
 * plainly with the C product, or for AVX2 with its product (the gate
 * loops then vectorise with AVX2 too). */
#ifdef PRN__TPL_LAYER
#undef PRN__TPL_LAYER
#define prn__layer_fw_T PRN__TNAME(prn__layer_fw_)
#define prn__layer_bw_T PRN__TNAME(prn__layer_bw_)
#define prn__layer_dwc_T PRN__TNAME(prn__layer_dwc_)
#define prn__layer_dwput_T PRN__TNAME(prn__layer_dwput_)
#define prn__lstm_fw2_U PRN__TPASTE(prn__lstm_fw2_, PRN__UNIT)
#define prn__elman_fw_U PRN__TPASTE(prn__elman_fw_, PRN__UNIT)
#define prn__gru_fw_U PRN__TPASTE(prn__gru_fw_, PRN__UNIT)
#define prn__elman_bw_U PRN__TPASTE(prn__elman_bw_, PRN__UNIT)
#define prn__lstm_bw_U PRN__TPASTE(prn__lstm_bw_, PRN__UNIT)
#define prn__gru_bw_U PRN__TPASTE(prn__gru_bw_, PRN__UNIT)
#define prn__layer_mm_T PRN__TNAME(prn__layer_mm_)
/* A step's product over Z blocks; on odd steps (odd) from the last group of
 * blocks to the first. A panel a little larger than a cache, read in the
 * same order every step, misses on every line (the cache holds the least
 * recently used part, read next); read in alternating order, the lines
 * the last step read last are read first. LSTM at hidden 512, batch 1, 2
 * threads (2 MiB of panel each, a 2 MiB L2): 1.5x forward; other shapes
 * level (medians 0.99-1.05 in three A/B runs).
 * Groups of 3 blocks (8: rows one at a time), those of the kernel. Same
 * bits: each entry is still its own chain over k. */
PRN__FN_INLINE PRN__ATTR void prn__layer_mm_T(int odd, size_t B, size_t K, const PRN__T *a, size_t lda, const PRN__T *p,
                                             size_t Z, PRN__T *out, size_t ldo) {
    const size_t zg = B >= 8 ? 3 : 8, r = zg == 3 && Z % 3 == 1 && Z >= 4 ? 4 : Z % zg; /* 4: two pairs (prn__threes_end) */
    size_t z1 = Z;
    if (!odd) {
        PRN__MM(B, K, a, lda, p, Z, out, ldo);
        return;
    }
    for (; z1 > r; z1 -= zg) PRN__MM(B, K, a, lda, p + (z1 - zg) * K * 16, zg, out + (z1 - zg) * 16, ldo);
    if (r) PRN__MM(B, K, a, lda, p, r, out, ldo);
}
PRN__FN PRN__ATTR void prn__layer_fw_T(const prn__layer *L, size_t j, size_t m) {
    const size_t B = L->B, TT = L->Tn, H = L->H, G = L->G, P = L->P, S = L->S, V = L->V, NI = L->NI;
    size_t u0, u1, nb, per = prn__layer_plan(L, 0, m, j, &u0, &u1, &nb), n = u1 - u0, qs = nb * 16, ldq = G * qs;
    const size_t C = prn__layer_xchunk(L, B, ldq);
    size_t g, blk, k, i, step, b, c, tlo = 0;
    const PRN__T *W = (const PRN__T *)L->w, *X = (const PRN__T *)L->xp, *bias = (const PRN__T *)L->bias, *s0 = (const PRN__T *)L->s0;
    const PRN__T *Xi = (const PRN__T *)L->x, *Wi = (const PRN__T *)L->w_ih, *Bi = (const PRN__T *)L->b_ih;
    PRN__T *St = (PRN__T *)L->states, *Sv = (PRN__T *)L->saved, *pan = (PRN__T *)L->ws + j * per, *qt = pan + G * nb * 16 * H;
    PRN__T *pih = qt + B * ldq, *xc = pih + G * nb * 16 * NI; /* with x: W_ih's panel, the chunk's xp */
    PRN__T *hb = (PRN__T *)L->ws + m * per; /* [2][B, H]: h of the last step, compact */
    PRN__T *cb = hb + 2 * B * H, *Y = (PRN__T *)L->y; /* rnn_layer_forward_y: c's rows; y */
    PRN__T *CS = (PRN__T *)L->cs; /* rnn_layer_forward_yc: c [B, T, H] in place of the rows */
    for (g = 0; g < G; ++g)
        for (blk = 0; blk < nb; ++blk) {
            for (k = 0; k < H; ++k)
                for (i = 0; i < 16; ++i) {
                    const size_t u = u0 + blk * 16 + i;
                    pan[((g * nb + blk) * H + k) * 16 + i] = u < u1 ? W[(g * H + u) * H + k] : (PRN__T)0; }
            for (k = 0; Xi && k < NI; ++k)
                for (i = 0; i < 16; ++i) {
                    const size_t u = u0 + blk * 16 + i;
                    pih[((g * nb + blk) * NI + k) * 16 + i] = u < u1 ? Wi[(g * H + u) * NI + k] : (PRN__T)0; }
        }
    for (step = 0; step < TT; ++step) {
        const size_t t = L->rev ? TT - 1 - step : step, tp = L->rev ? t + 1 : t - 1;
        const PRN__T *a = step ? hb + ((step - 1) & 1) * B * H : s0;
        PRN__T *hn = hb + (step & 1) * B * H;
        if (Xi && n && step % C == 0) {
            /* the next C steps' projections, [t - tlo][b][ldq] in the
             * product's layout (gate g of the thread's units at g qs): each
             * entry the chain of the product kernel plus b_ih, as the
             * composition's gemm (beta 1 onto the broadcast bias) has it */
            const size_t cn = TT - step < C ? TT - step : C;
            tlo = L->rev ? TT - step - cn : step;
            if (C == 1) PRN__MM(B, NI, Xi + tlo * NI, TT * NI, pih, G * nb, xc, ldq);
            else for (b = 0; b < B; ++b) PRN__MM(cn, NI, Xi + (b * TT + tlo) * NI, NI, pih, G * nb, xc + b * ldq, B * ldq);
            for (c = 0; Bi && c < cn * B; ++c)
                for (g = 0; g < G; ++g) {
                    PRN__T *r = xc + c * ldq + g * qs;
                    const PRN__T *bi = Bi + g * H + u0;
                    PRN__SIMD for (i = 0; i < n; ++i) r[i] += bi[i];
                }
        }
        /* block (g, blk) at pan + (g nb + blk) H 16, its output at qt + g qs +
         * blk 16 = qt + (g nb + blk) 16: the G nb blocks in one call */
        if (n) prn__layer_mm_T((int)(step & 1), B, H, a, step ? H : S, pan, G * nb, qt, ldq);
        for (b = 0; n && b < B; ++b) {
            const PRN__T *x = Xi ? xc + ((t - tlo) * B + b) * ldq : X + (b * TT + t) * P + u0;
            const PRN__T *q = qt + b * ldq, *bb = bias + u0;
            const size_t xs = Xi ? qs : H; /* x's gates apart */
            PRN__T *v = Sv && V ? Sv + (b * TT + t) * V * H + u0 : NULL;
            if (Y) { /* rnn_layer_forward_y (LSTM): h into y, c into its row (_yc: into cs) */
                const PRN__T *cp = !step ? s0 + b * S + H : CS ? CS + (b * TT + tp) * H : cb + ((step - 1) & 1) * B * H + b * H;
                PRN__T *cn = CS ? CS + (b * TT + t) * H : cb + (step & 1) * B * H + b * H;
                prn__lstm_fw2_U(n, x, xs, q, qs, bb, H, cp + u0, Y + (b * TT + t) * H + u0, hn + b * H + u0, cn + u0, v, H);
            } else {
                const PRN__T *sp = step ? St + (b * TT + tp) * S : s0 + b * S;
                PRN__T *nx = St + (b * TT + t) * S;
                if (L->kind == PRN_RNN_LSTM) /* h into hn by the gate loop */
                    prn__lstm_fw2_U(n, x, xs, q, qs, bb, H, sp + H + u0, nx + u0, hn + b * H + u0, nx + H + u0, v, H);
                else {
                    if (L->kind == PRN_RNN_ELMAN) prn__elman_fw_U(n, L->relu, x, q, bb, nx + u0);
                    else prn__gru_fw_U(n, x, xs, q, qs, bb, H, sp + u0, nx + u0, v, H);
                    memcpy(hn + b * H + u0, nx + u0, n * sizeof(PRN__T));
                }
            }
            /* the row's next step, asked for here between the rows' gates
             * (a burst of them all before the product stalled on the line
             * fill buffers: a quarter of this loop's time at H 256 B 16) */
            if (step + 1 < TT) {
                const size_t tn = L->rev ? t - 1 : t + 1;
                if (Xi && C == 1) prn__prefetch_run(Xi + (b * TT + tn) * NI, NI * sizeof(PRN__T));
                for (g = 0; !Xi && g < G; ++g) prn__prefetch_run(X + (b * TT + tn) * P + g * H + u0, n * sizeof(PRN__T));
                if (Y) prn__prefetch_run(Y + (b * TT + tn) * H + u0, n * sizeof(PRN__T));
                if (CS) prn__prefetch_run(CS + (b * TT + tn) * H + u0, n * sizeof(PRN__T));
                for (g = 0; !Y && g < S / H; ++g) prn__prefetch_run(St + (b * TT + tn) * S + g * H + u0, n * sizeof(PRN__T));
            }
        }
        PRN__BARRIER(L->bar, m);
    }
    if (Y && TT && L->fin) { /* fin: the thread's units of the last step's h and c */
        const PRN__T *hl = hb + ((TT - 1) & 1) * B * H, *cl = cb + ((TT - 1) & 1) * B * H;
        PRN__T *F = (PRN__T *)L->fin;
        for (b = 0; n && b < B; ++b) {
            memcpy(F + b * S + u0, hl + b * H + u0, n * sizeof(PRN__T));
            memcpy(F + b * S + H + u0, cl + b * H + u0, n * sizeof(PRN__T));
        }
    }
}
#ifndef PARRNN_NO_TRAINING /* (prn__layer_run names the forward instead) */
PRN__FN PRN__ATTR void prn__layer_bw_T(const prn__layer *L, size_t j, size_t m) {
    const size_t B = L->B, TT = L->Tn, H = L->H, G = L->G, P = L->P, S = L->S, V = L->V;
    size_t u0, u1, nb, per = prn__layer_plan(L, 1, m, j, &u0, &u1, &nb), n = u1 - u0, qs = nb * 16;
    size_t g, blk, k, i, step, b;
    const PRN__T *W = (const PRN__T *)L->w, *Gr = (const PRN__T *)L->g, *s0 = (const PRN__T *)L->s0;
    const PRN__T *St = (const PRN__T *)L->states, *Sv = (const PRN__T *)L->saved, *Xi = (const PRN__T *)L->x;
    const PRN__T *Yh = (const PRN__T *)L->y, *Cs = (const PRN__T *)L->cs; /* rnn_layer_backward_yc: the states apart */
    const size_t lg = Cs ? H : S; /* g's row: d loss / d y alone (_yc) or / d state */
    PRN__T *DX = (PRN__T *)L->dxp, *DQ = (PRN__T *)L->dq, *D0 = (PRN__T *)L->ds0;
    PRN__T *pan = (PRN__T *)L->ws + j * per, *ct = pan + nb * 16 * P, *dd = ct + B * qs;
    PRN__T *qb = (PRN__T *)L->ws + m * per; /* [2][B, P]: d q of the last step, compact */
    for (blk = 0; blk < nb; ++blk)
        for (k = 0; k < P; ++k)
            for (i = 0; i < 16; ++i) {
                const size_t u = u0 + blk * 16 + i;
                pan[(blk * P + k) * 16 + i] = u < u1 ? W[k * H + u] : (PRN__T)0; }
    for (i = 0; i < 2 * B * qs; ++i) ct[i] = 0; /* and dd */
    for (step = 0; step < TT; ++step) {
        /* the forward's steps in reverse; its first has s0 before it */
        const size_t t = L->rev ? step : TT - 1 - step, tp = L->rev ? t + 1 : t - 1;
        /* with the rings, the step's dq goes straight into its rows of the
         * chunk's ring (a copy per row and gate was 5-8% of an LSTM's
         * training step at H 64), and the product reads it there */
        const size_t ldn = L->dwC ? L->Pq : P;
        PRN__T *qn = L->dwC ? (PRN__T *)L->rq + (((step / L->dwC & 1) * L->dwC + step % L->dwC) * L->dwB + L->r0) * L->Pq
                            : qb + (step & 1) * B * P;
        for (b = 0; n && b < B; ++b) {
            /* sp: h_{t-1} (the previous state), cp: an LSTM's c_{t-1} */
            const PRN__T *gr = Gr + (b * TT + t) * lg, *nx = St ? St + (b * TT + t) * S : NULL;
            const PRN__T *sp = step == TT - 1 ? s0 + b * S : Cs ? Yh + (b * TT + tp) * H : St + (b * TT + tp) * S;
            const PRN__T *cp = step == TT - 1 || !Cs ? sp + H : Cs + (b * TT + tp) * H;
            const PRN__T *v = Sv && V ? Sv + (b * TT + t) * V * H + u0 : NULL;
            PRN__T *c = ct + b * qs, *e = dd + b * qs, *dq = qn + b * ldn + u0;
            PRN__T *dx = DX ? DX + (b * TT + t) * P + u0 : dq; /* rnn_layer_backward_x: dxp not stored */
            /* c: d loss / d h of the step (the later step's d q W_hh, plus
             * what reached h directly); e: the rest of d loss / d state */
            PRN__SIMD for (i = 0; i < n; ++i) c[i] += gr[u0 + i];
            if (L->kind == PRN_RNN_ELMAN) prn__elman_bw_U(n, L->relu, c, nx + u0, dx, dq);
            else if (L->kind == PRN_RNN_LSTM) {
                if (!Cs) PRN__SIMD for (i = 0; i < n; ++i) e[i] += gr[H + u0 + i];
                prn__lstm_bw_U(n, c, e, cp + u0, v, H, dx, dq, H, e);
            } else {
                PRN__SIMD for (i = 0; i < n; ++i) c[i] += e[i];
                prn__gru_bw_U(n, c, sp + u0, v, H, dx, dq, H, e);
            }
            /* DQ may be DX (ELMAN and LSTM: the same values) */
            for (g = 0; DQ != DX && g < G; ++g) memcpy(DQ + (b * TT + t) * P + g * H + u0, dq + g * H, n * sizeof(PRN__T));
            if (L->dwC) { /* the row's h_{t-1} into the chunk's ring beside its dq */
                const size_t slot = ((step / L->dwC & 1) * L->dwC + step % L->dwC) * L->dwB + L->r0 + b;
                memcpy((PRN__T *)L->rh + slot * L->Rq + u0, sp + u0, n * sizeof(PRN__T));
                if (Xi && u0 == 0) /* x_t after h (one thread's copy) */
                    memcpy((PRN__T *)L->rh + slot * L->Rq + L->Hq, Xi + (b * TT + t) * L->NI, L->NI * sizeof(PRN__T));
            }
        }
        PRN__BARRIER(L->bar, m);
        if (L->dwC && (step % L->dwC == L->dwC - 1 || step + 1 == TT)) {
            if (L->dbar) PRN__BARRIER(L->dbar, L->tm); /* by rows: the team's */
            prn__layer_dwc_T(L, step / L->dwC, step % L->dwC + 1, L->dbar ? L->tj : j, L->dbar ? L->tm : m, u0, u1);
        }
        for (b = 0; n && step + 1 < TT && b < B; ++b) {
            const size_t tn = L->rev ? t + 1 : t - 1;
            prn__prefetch_run(Gr + (b * TT + tn) * lg + u0, n * sizeof(PRN__T));
            if (lg > H) prn__prefetch_run(Gr + (b * TT + tn) * S + H + u0, n * sizeof(PRN__T));
            if (!Cs) prn__prefetch_run(St + (b * TT + tn) * S + u0, n * sizeof(PRN__T));
            else if (step + 2 < TT) { /* the next step's h_{t-1} and c_{t-1} (s0 at the last step) */
                const size_t tq = L->rev ? tn + 1 : tn - 1;
                prn__prefetch_run(Yh + (b * TT + tq) * H + u0, n * sizeof(PRN__T));
                prn__prefetch_run(Cs + (b * TT + tq) * H + u0, n * sizeof(PRN__T));
            }
            for (g = 0; Sv && g < V; ++g) prn__prefetch_run(Sv + ((b * TT + tn) * V + g) * H + u0, n * sizeof(PRN__T));
            if (Xi && L->dwC && u0 == 0) prn__prefetch_run(Xi + (b * TT + tn) * L->NI, L->NI * sizeof(PRN__T));
        }
        if (n) prn__layer_mm_T((int)(step & 1), B, P, qn, ldn, pan, nb, ct, qs);
    }
    for (b = 0; n && b < B; ++b) {
        const PRN__T *c = ct + b * qs, *e = dd + b * qs;
        PRN__T *d = D0 + b * S + u0;
        if (L->kind == PRN_RNN_LSTM) for (i = 0; i < n; ++i) { d[i] = c[i]; d[H + i] = e[i]; }
        else if (L->kind == PRN_RNN_GRU) for (i = 0; i < n; ++i) d[i] = c[i] + e[i];
        else for (i = 0; i < n; ++i) d[i] = c[i];
    }
    if (L->dwC) prn__layer_dwput_T(L, L->dbar ? L->tj : j, L->dbar ? L->tm : m, u0, u1);
}
#endif
#undef prn__layer_fw_T
#undef prn__layer_bw_T
#undef prn__layer_dwc_T
#undef prn__layer_dwput_T
#undef prn__lstm_fw2_U
#undef prn__layer_mm_T
#undef prn__elman_fw_U
#undef prn__gru_fw_U
#undef prn__elman_bw_U
#undef prn__lstm_bw_U
#undef prn__gru_bw_U
#undef PRN__UNIT
#undef PRN__MM
#endif /* PRN__TPL_LAYER */

/* ---- TR8 (parameters: T, SFX). Generates prn__tr8_<sfx>. */
/* d[c ld + r] = s[r ls + c], r, c < 8: one tile of the lanes' transposes,
 * with constant bounds that let the compiler unroll it (a loop per element
 * costs more than the element's load and store). */
#ifdef PRN__TPL_TR8
#undef PRN__TPL_TR8
#define prn__tr8_T PRN__TNAME(prn__tr8_)
PRN__FN_INLINE void prn__tr8_T(const PRN__T *s, size_t ls, PRN__T *d, size_t ld) {
    size_t r, c;
    for (c = 0; c < 8; ++c)
        for (r = 0; r < 8; ++r) d[c * ld + r] = s[r * ls + c];
}
#undef prn__tr8_T
#endif /* PRN__TPL_TR8 */

/* ---- LANES_COPY (parameters: T, SFX, TR, ATTR).
 * Generates prn__lanes_in_<sfx>, prn__lanes_out_<sfx>, prn__lanes_get_<sfx>, prn__lanes_put_<sfx>. */
#ifdef PRN__TPL_LANES_COPY
#undef PRN__TPL_LANES_COPY
#define prn__lanes_in_T PRN__TNAME(prn__lanes_in_)
#define prn__lanes_out_T PRN__TNAME(prn__lanes_out_)
#define prn__lanes_get_T PRN__TNAME(prn__lanes_get_)
#define prn__lanes_put_T PRN__TNAME(prn__lanes_put_)
#define prn__tr8_TR PRN__TPASTE(prn__tr8_, PRN__TR)
/* d[i Bp + l] = s[l ls + i] for l < nl <= 8, i < len, by tiles of 8 x 8. */
PRN__FN_INLINE PRN__ATTR void prn__lanes_in_T(const PRN__T *s, size_t ls, size_t nl, size_t len, size_t Bp, PRN__T *d) {
    size_t i = 0, l;
    if (nl == 8)
        for (; i + 8 <= len; i += 8) prn__tr8_TR(s + i, ls, d + i * Bp, Bp);
    for (; i < len; ++i)
        for (l = 0; l < nl; ++l) d[i * Bp + l] = s[l * ls + i];
}
PRN__FN_INLINE PRN__ATTR void prn__lanes_out_T(const PRN__T *s, size_t Bp, size_t nl, size_t len, PRN__T *d, size_t ls) {
    size_t i = 0, l;
    if (nl == 8)
        for (; i + 8 <= len; i += 8) prn__tr8_TR(s + i * Bp, Bp, d + i, ls);
    for (; i < len; ++i)
        for (l = 0; l < nl; ++l) d[l * ls + i] = s[i * Bp + l];
}
/* dst[(c K + e) Bp + b] = src[(b TT + t0 + c) K + e] for c < C, e < K:
 * rows t0 .. t0 + C - 1, one run of C K elements per lane. */
PRN__FN PRN__ATTR void prn__lanes_get_T(const PRN__T *src, size_t B, size_t TT, size_t K, size_t t0, size_t C,
                                        size_t Bp, PRN__T *dst) {
    size_t b;
    for (b = 0; b < B; b += 8)
        prn__lanes_in_T(src + (b * TT + t0) * K, TT * K, B - b < 8 ? B - b : 8, C * K, Bp, dst + b);
}
/* The inverse. */
PRN__FN PRN__ATTR void prn__lanes_put_T(const PRN__T *src, size_t B, size_t TT, size_t K, size_t t0, size_t C,
                                        size_t Bp, PRN__T *dst) {
    size_t b;
    for (b = 0; b < B; b += 8)
        prn__lanes_out_T(src + b, Bp, B - b < 8 ? B - b : 8, C * K, dst + (b * TT + t0) * K, TT * K);
}
#undef prn__lanes_in_T
#undef prn__lanes_out_T
#undef prn__lanes_get_T
#undef prn__lanes_put_T
#undef prn__tr8_TR
#undef PRN__TR
#endif /* PRN__TPL_LANES_COPY */

/* ---- LANES (parameters: T, SFX, UNIT, CP, ATTR).
 * Generates prn__lanes_fw_<sfx>, prn__lanes_bw_<sfx>. */
/* The two loops; the workspace L->ws is zeroed (padded lanes, carries).
 * Chunk k holds the steps at times ta .. ta + cn - 1 in memory order (the
 * copies are runs), and its steps run up or down through it. */
#ifdef PRN__TPL_LANES
#undef PRN__TPL_LANES
#define prn__lanes_fw_T PRN__TNAME(prn__lanes_fw_)
#define PRN__LANES_MAC_T PRN__TNAME(PRN__LANES_MAC_)
#define prn__lanes_bw_T PRN__TNAME(prn__lanes_bw_)
#define prn__lanes_get_CP PRN__TPASTE(prn__lanes_get_, PRN__CP)
#define prn__lanes_put_CP PRN__TPASTE(prn__lanes_put_, PRN__CP)
#define prn__elman_fw_U PRN__TPASTE(prn__elman_fw_, PRN__UNIT)
#define prn__lstm_fw_U PRN__TPASTE(prn__lstm_fw_, PRN__UNIT)
#define prn__gru_fw_U PRN__TPASTE(prn__gru_fw_, PRN__UNIT)
#define prn__elman_bw_U PRN__TPASTE(prn__elman_bw_, PRN__UNIT)
#define prn__lstm_bw_U PRN__TPASTE(prn__lstm_bw_, PRN__UNIT)
#define prn__gru_bw_U PRN__TPASTE(prn__gru_bw_, PRN__UNIT)
PRN__FN PRN__ATTR void prn__lanes_fw_T(const prn__layer *L, size_t C, size_t Bp) {
    const size_t B = L->B, TT = L->Tn, H = L->H, P = L->P, S = L->S, VH = L->V * L->H, n = H * Bp;
    const PRN__T *W = (const PRN__T *)L->w, *bias = (const PRN__T *)L->bias;
    PRN__T *xt = (PRN__T *)L->ws, *ot = xt + C * P * Bp, *vt = ot + C * S * Bp, *q = vt + C * VH * Bp, *bl = q + P * Bp;
    PRN__T *pv = bl + P * Bp, *Sv = L->saved && VH ? (PRN__T *)L->saved : NULL;
    const int rev = L->rev;
    size_t k0, i, c, j, k, l, l0, cn, ta;
    for (j = 0; j < P; ++j)
        for (l = 0; l < Bp; ++l) bl[j * Bp + l] = bias[j];
    prn__lanes_get_CP((const PRN__T *)L->s0, B, 1, S, 0, 1, Bp, pv);
    for (k0 = 0; k0 < TT; k0 += C) {
        cn = TT - k0 < C ? TT - k0 : C;
        ta = rev ? TT - k0 - cn : k0;
        prn__lanes_get_CP((const PRN__T *)L->xp, B, TT, P, ta, cn, Bp, xt);
        for (i = 0; i < cn; ++i) {
            const PRN__T *hp, *x;
            PRN__T *o, *v;
            c = rev ? cn - 1 - i : i;
            hp = i ? ot + (rev ? c + 1 : c - 1) * S * Bp : pv;
            x = xt + c * P * Bp; o = ot + c * S * Bp; v = Sv ? vt + c * VH * Bp : NULL;
            for (l0 = 0; l0 < Bp; l0 += 8) /* q = W_hh h: 8 lanes in registers,
                 * each the threaded loop's chain over k from zero (its bits) */
                for (j = 0; j < P; ++j) {
                    const PRN__T *wj = W + j * H, *h0 = hp + l0;
                    PRN__T acc[8];
                    PRN__SIMD for (l = 0; l < 8; ++l) acc[l] = (PRN__T)0;
                    for (k = 0; k < H; ++k) {
                        const PRN__T wk = wj[k], *hk = h0 + k * Bp;
                        PRN__SIMD for (l = 0; l < 8; ++l) acc[l] = PRN__LANES_MAC_T(hk[l], wk, acc[l]);
                    }
                    PRN__SIMD for (l = 0; l < 8; ++l) q[j * Bp + l0 + l] = acc[l];
                }
            if (L->kind == PRN_RNN_ELMAN) prn__elman_fw_U(n, L->relu, x, q, bl, o);
            else if (L->kind == PRN_RNN_LSTM) prn__lstm_fw_U(n, x, n, q, n, bl, n, hp + n, o, o + n, v, n);
            else prn__gru_fw_U(n, x, n, q, n, bl, n, hp, o, v, n);
        }
        prn__lanes_put_CP(ot, B, TT, S, ta, cn, Bp, (PRN__T *)L->states);
        if (Sv) prn__lanes_put_CP(vt, B, TT, VH, ta, cn, Bp, Sv);
        memcpy(pv, ot + (rev ? 0 : cn - 1) * S * Bp, S * Bp * sizeof(PRN__T));
    }
}
#ifndef PARRNN_NO_TRAINING /* (prn__layer_run names the forward instead) */
PRN__FN PRN__ATTR void prn__lanes_bw_T(const prn__layer *L, size_t C, size_t Bp) {
    const size_t B = L->B, TT = L->Tn, H = L->H, P = L->P, S = L->S, VH = L->V * L->H, n = H * Bp;
    const PRN__T *W = (const PRN__T *)L->w, *St = (const PRN__T *)L->states, *s0 = (const PRN__T *)L->s0;
    PRN__T *gt = (PRN__T *)L->ws, *pt = gt + C * S * Bp, *vt = pt + C * S * Bp, *dxt = vt + C * VH * Bp, *dqt = dxt + C * P * Bp;
    PRN__T *cc = dqt + C * P * Bp, *ee = cc + n, *D0 = (PRN__T *)L->ds0;
    const int rev = L->rev; /* the forward's direction: this loop runs the other way */
    size_t k0, i, c, j, k, l, l0, b, cn, ta;
    for (k0 = 0; k0 < TT; k0 += C) {
        cn = TT - k0 < C ? TT - k0 : C;
        ta = rev ? k0 : TT - k0 - cn;
        prn__lanes_get_CP((const PRN__T *)L->g, B, TT, S, ta, cn, Bp, gt);
        if (VH) prn__lanes_get_CP((const PRN__T *)L->saved, B, TT, VH, ta, cn, Bp, vt);
        /* pt: Elman the steps' own states; LSTM, GRU the states before them
         * (s0 before the forward's first step) */
        if (L->kind == PRN_RNN_ELMAN) prn__lanes_get_CP(St, B, TT, S, ta, cn, Bp, pt);
        else if (!rev) {
            if (ta) prn__lanes_get_CP(St, B, TT, S, ta - 1, cn, Bp, pt);
            else {
                prn__lanes_get_CP(s0, B, 1, S, 0, 1, Bp, pt);
                prn__lanes_get_CP(St, B, TT, S, 0, cn - 1, Bp, pt + S * Bp);
            }
        } else {
            if (ta + cn < TT) prn__lanes_get_CP(St, B, TT, S, ta + 1, cn, Bp, pt);
            else {
                prn__lanes_get_CP(St, B, TT, S, ta + 1, cn - 1, Bp, pt);
                prn__lanes_get_CP(s0, B, 1, S, 0, 1, Bp, pt + (cn - 1) * S * Bp);
            }
        }
        for (i = 0; i < cn; ++i) {
            const PRN__T *g, *sp, *v;
            PRN__T *dx, *dq;
            c = rev ? i : cn - 1 - i;
            g = gt + c * S * Bp; sp = pt + c * S * Bp + (L->kind == PRN_RNN_LSTM ? n : 0); v = vt + c * VH * Bp;
            dx = dxt + c * P * Bp; dq = dqt + c * P * Bp;
            /* cc: d loss / d h of the step; ee: the rest of d loss / d state */
            PRN__SIMD for (j = 0; j < n; ++j) cc[j] += g[j];
            if (L->kind == PRN_RNN_ELMAN) prn__elman_bw_U(n, L->relu, cc, sp, dx, dq);
            else if (L->kind == PRN_RNN_LSTM) {
                PRN__SIMD for (j = 0; j < n; ++j) ee[j] += g[n + j];
                prn__lstm_bw_U(n, cc, ee, sp, v, n, dx, dq, n, ee);
            } else {
                PRN__SIMD for (j = 0; j < n; ++j) cc[j] += ee[j];
                prn__gru_bw_U(n, cc, sp, v, n, dx, dq, n, ee);
            }
            for (l0 = 0; l0 < Bp; l0 += 8) /* cc = d q W_hh, by columns */
                for (k = 0; k < H; ++k) {
                    const PRN__T *d0 = dq + l0;
                    PRN__T acc[8];
                    PRN__SIMD for (l = 0; l < 8; ++l) acc[l] = W[k] * d0[l];
                    for (j = 1; j < P; ++j) {
                        const PRN__T wj = W[j * H + k], *dj = d0 + j * Bp;
                        PRN__SIMD for (l = 0; l < 8; ++l) acc[l] += wj * dj[l];
                    }
                    PRN__SIMD for (l = 0; l < 8; ++l) cc[k * Bp + l0 + l] = acc[l];
                }
        }
        prn__lanes_put_CP(dxt, B, TT, P, ta, cn, Bp, (PRN__T *)L->dxp);
        prn__lanes_put_CP(dqt, B, TT, P, ta, cn, Bp, (PRN__T *)L->dq);
    }
    for (b = 0; b < B; ++b)
        for (i = 0; i < H; ++i) {
            PRN__T *d = D0 + b * S;
            if (L->kind == PRN_RNN_LSTM) { d[i] = cc[i * Bp + b]; d[H + i] = ee[i * Bp + b]; }
            else if (L->kind == PRN_RNN_GRU) d[i] = cc[i * Bp + b] + ee[i * Bp + b];
            else d[i] = cc[i * Bp + b];
        }
}
#endif
#undef prn__lanes_fw_T
#undef PRN__LANES_MAC_T
#undef prn__lanes_bw_T
#undef prn__lanes_get_CP
#undef prn__lanes_put_CP
#undef prn__elman_fw_U
#undef prn__lstm_fw_U
#undef prn__gru_fw_U
#undef prn__elman_bw_U
#undef prn__lstm_bw_U
#undef prn__gru_bw_U
#undef PRN__UNIT
#undef PRN__CP
#endif /* PRN__TPL_LANES */

/* ---- XPROJ (parameters: T, SFX, ATTR, MM). Generates prn__layer_xproj_<sfx>. */
/* xp [B T, P] = x W_ih^T + b_ih whole (the lanes loop, and layers that
 * run better from a stored xp: prn__ref_rnn_layer_forward_x), tiles of 64
 * rows over the team: by the threaded loop's own product kernel over a
 * panel of W_ih, each entry plus b_ih, so that a row's bits do not depend
 * on which loop its batch takes (H = 8: the lanes with 8 rows or more, the
 * threaded loop with fewer) nor on the threads. 0: out of memory. */
#ifdef PRN__TPL_XPROJ
#undef PRN__TPL_XPROJ
#define prn__layer_xproj_T PRN__TNAME(prn__layer_xproj_)
PRN__FN PRN__ATTR void prn__layer_xproj_T(const prn__layer *L, PRN__T *pan, PRN__T *tiles, PRN__T *xp, int prn__nt, int prn__par) {
    const size_t n = L->B * L->Tn, P = L->P, NI = L->NI, nbp = (P + 15) / 16;
    const PRN__T *w = (const PRN__T *)L->w_ih, *x = (const PRN__T *)L->x, *bi = (const PRN__T *)L->b_ih;
    size_t z, k, c, ti;
    for (z = 0; z < nbp; ++z)
        for (k = 0; k < NI; ++k)
            for (c = 0; c < 16; ++c)
                pan[(z * NI + k) * 16 + c] = z * 16 + c < P ? w[(z * 16 + c) * NI + k] : (PRN__T)0;
    (void)prn__nt; (void)prn__par;
    PRN__PARFOR
    for (ti = 0; ti < (n + 63) / 64; ++ti) {
        const size_t r0 = ti * 64, rows = n - r0 < 64 ? n - r0 : 64;
        PRN__T *tile = tiles + (size_t)PRN__THREAD_NUM() * 64 * nbp * 16;
        size_t r, p;
        PRN__MM(rows, NI, x + r0 * NI, NI, pan, nbp, tile, nbp * 16);
        for (r = 0; r < rows; ++r)
            for (p = 0; p < P; ++p) xp[(r0 + r) * P + p] = bi ? tile[r * nbp * 16 + p] + bi[p] : tile[r * nbp * 16 + p];
    }
}
#undef prn__layer_xproj_T
#undef PRN__MM
#endif /* PRN__TPL_XPROJ */

/* ---- LAYER_DW_PLAIN (parameters: T, SFX). Generates prn__layer_dw_plain_<sfx>. */
/* The sums of rnn_layer_backward_dw from dq in memory, in the order of the
 * layer's (steps as the backward takes them, then rows): for the cases
 * without its rings (the lanes loop, no rows or steps). */
#ifdef PRN__TPL_LAYER_DW_PLAIN
#undef PRN__TPL_LAYER_DW_PLAIN
#define prn__layer_dw_plain_T PRN__TNAME(prn__layer_dw_plain_)
PRN__FN void prn__layer_dw_plain_T(const prn__layer *L) {
    const size_t B = L->B, TT = L->Tn, H = L->H, P = L->P, S = L->S, NI = L->NI;
    const PRN__T *DQ = (const PRN__T *)L->dq, *St = (const PRN__T *)L->states, *s0 = (const PRN__T *)L->s0;
    const PRN__T *X = (const PRN__T *)L->x;
    PRN__T *dw = (PRN__T *)L->dw, *db = (PRN__T *)L->db, *dwi = (PRN__T *)L->dwi, *dbi = (PRN__T *)L->dbi;
    size_t step, b, r, c;
    for (r = 0; r < P * H; ++r) dw[r] = 0;
    for (r = 0; db && r < P; ++r) db[r] = 0;
    for (r = 0; dwi && r < P * NI; ++r) dwi[r] = 0; /* rnn_layer_backward_x: dq^T x and dq's sums too */
    for (r = 0; dbi && r < P; ++r) dbi[r] = 0;
    for (step = 0; step < TT; ++step) {
        const size_t t = L->rev ? step : TT - 1 - step, tp = L->rev ? t + 1 : t - 1;
        for (b = 0; b < B; ++b) {
            const PRN__T *dq = DQ + (b * TT + t) * P, *h = step == TT - 1 ? s0 + b * S : St + (b * TT + tp) * S;
            for (r = 0; r < P; ++r) {
                for (c = 0; c < H; ++c) dw[r * H + c] += dq[r] * h[c];
                if (db) db[r] += dq[r];
                for (c = 0; dwi && c < NI; ++c) dwi[r * NI + c] += dq[r] * X[(b * TT + t) * NI + c];
                if (dbi) dbi[r] += dq[r];
            }
        }
    }
}
#undef prn__layer_dw_plain_T
#endif /* PRN__TPL_LAYER_DW_PLAIN */

/* (end of the cells and fused layers) */

/* ======== DEER and the frames' kernels ======== */

/* ---- LU_SOLVE: one system a x = r by LU with partial pivoting, in place,
 * elimination by rows so the inner loop runs along contiguous memory. par
 * threads the row loop (for few large systems; up to nt threads, by
 * PRN__LU_ROWS_PAR). Returns 0, or 1 + the column whose pivot is 0 or not
 * finite. Parameters: T, SFX (the type's name: prn__lu_solve_double, _float). */
#ifdef PRN__TPL_LU_SOLVE
#undef PRN__TPL_LU_SOLVE
#define prn__lu_solve_T PRN__TNAME(prn__lu_solve_)
PRN__FN int prn__lu_solve_T(size_t n, PRN__T *a, PRN__T *r, int par, int nt) {
    size_t j;
    long i;
    int lnt; /* the column's threads (prn__work_nt) */
    (void)par; (void)nt;
    for (j = 0; j < n; ++j) {
        size_t p = j, c;
        PRN__T best = a[j * n + j] < 0 ? -a[j * n + j] : a[j * n + j], piv;
        for (c = j + 1; c < n; ++c) {
            PRN__T v = a[c * n + j] < 0 ? -a[c * n + j] : a[c * n + j];
            if (v > best) { best = v; p = c; }
        }
        if (!(best > 0) || best - best != 0) return (int)j + 1;
        if (p != j) {
            PRN__T tr = r[p]; r[p] = r[j]; r[j] = tr;
            for (c = j; c < n; ++c) { PRN__T t = a[p * n + c]; a[p * n + c] = a[j * n + c]; a[j * n + c] = t; }
        }
        piv = a[j * n + j];
        lnt = prn__work_nt((double)(n - j) * (n - j), nt); (void)lnt;
        PRN__LU_ROWS_PAR
        for (i = (long)j + 1; i < (long)n; ++i) {
            PRN__T *ai = a + (size_t)i * n, *aj = a + j * n, l = ai[j] / piv;
            size_t q;
            if (l == 0) continue;
            PRN__SIMD for (q = j + 1; q < n; ++q) ai[q] -= l * aj[q];
            r[i] -= l * r[j];
        }
    }
    for (i = (long)n - 1; i >= 0; --i) {
        const PRN__T *ai = a + (size_t)i * n;
        PRN__T s = r[i];
        size_t q;
        for (q = (size_t)i + 1; q < n; ++q) s -= ai[q] * r[q];
        r[i] = s / ai[i];
    }
    return 0;
}
#undef prn__lu_solve_T
#endif /* PRN__TPL_LU_SOLVE */

/* ---- DEER: the fused DEER iterations' lane kernels (see "fused DEER
 * iterations" above). Parameters: T, SFX, ATTR, PRN__EXP and PRN__TANH (the
 * element type's exp and tanh), PRN__SPEC (0: no copies of the body for small
 * GRUs). Uses prn__dz_tin_<sfx> and prn__dz_tout_<sfx>. */
#ifdef PRN__TPL_DEER
#undef PRN__TPL_DEER
#define prn__dz_sig_T PRN__TNAME(prn__dz_sig_)
#define prn__dz_cell_T PRN__TNAME(prn__dz_cell_)
#define prn__dz_body_T PRN__TNAME(prn__dz_body_)
#define prn__dz_group_T PRN__TNAME(prn__dz_group_)
#define prn__dz_tin_T PRN__TNAME(prn__dz_tin_)
#define prn__dz_tout_T PRN__TNAME(prn__dz_tout_)
PRN__FN_INLINE PRN__T prn__dz_sig_T(PRN__T x) { return (PRN__T)1 / ((PRN__T)1 + PRN__EXP(-x)); }
/* f [S][W] and J [S][kb][W] (row i's block starts at column (i / kb) kb) at
 * the previous state s [S][W] and the projections x [P][W]; wk scratch */
PRN__FN_INLINE PRN__ATTR PRN__DZ_DBG void prn__dz_cell_T(const prn_deer_fused *a, const int kind, const size_t S, const size_t H,
                                            const size_t hk, const size_t kb, const PRN__T *s, const PRN__T *x, PRN__T *F, PRN__T *J,
                                            PRN__T *wk, const PRN__T *lam, PRN__T *DX, PRN__T *DQ) {
    const size_t W = PRN__DZW;
    size_t i, jj, u, v, l, h;
    switch (kind) {
    case PRN_RNN_GRU: case PRN_RNN_MHGRU: {
        const size_t k = hk, nh = H / k;
        const PRN__T *Wh = (const PRN__T *)a->w[0], *bh = (const PRN__T *)a->w[1];
        PRN__T *q = wk, *cz = q + 3 * k * W, *ca = cz + k * W, *cb = ca + k * W, *cc = cb + k * W, *cd = cc + k * W;
        for (h = 0; h < nh; ++h) {
            const PRN__T *Wg = Wh + h * 3 * k * k;
            for (u = 0; u < 3 * k; ++u) {
                const PRN__T *wr = Wg + u * k, bb = bh[h * 3 * k + u];
                PRN__T *qu = q + u * W;
                PRN__SIMD for (l = 0; l < W; ++l) qu[l] = bb;
                for (v = 0; v < k; ++v) {
                    const PRN__T wv = wr[v], *sv = s + (h * k + v) * W;
                    PRN__SIMD for (l = 0; l < W; ++l) qu[l] += wv * sv[l];
                }
            }
            for (u = 0; u < k; ++u) {
                const PRN__T *xr = x + (h * 3 * k + u) * W, *xz = xr + k * W, *xn = xz + k * W, *si = s + (h * k + u) * W;
                const PRN__T *qr = q + u * W, *qz = q + (k + u) * W, *qn = q + (2 * k + u) * W;
                PRN__T *fi = F + (h * k + u) * W, *za = cz + u * W, *aa = ca + u * W, *ba = cb + u * W, *ccu = cc + u * W, *cdu = cd + u * W;
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T r = prn__dz_sig_T(xr[l] + qr[l]), z = prn__dz_sig_T(xz[l] + qz[l]);
                    const PRN__T hn = qn[l], n = PRN__TANH(xn[l] + r * hn), d = si[l] - n;
                    const PRN__T tz = ((PRN__T)1 - z) * ((PRN__T)1 - n * n);
                    fi[l] = n + z * d;
                    za[l] = z; aa[l] = d * z * ((PRN__T)1 - z); ba[l] = tz * hn * r * ((PRN__T)1 - r); ccu[l] = tz * r;
                    cdu[l] = tz;
                }
            }
            if (lam) /* the gates' gradients: d f / d (x + q) of r and z; n: x and r q apart */
                for (u = 0; u < k; ++u) {
                    const PRN__T *lm = lam + (h * k + u) * W, *aa = ca + u * W, *ba = cb + u * W, *ccu = cc + u * W, *cdu = cd + u * W;
                    PRN__T *dxr = DX + (h * 3 * k + u) * W, *dxz = dxr + k * W, *dxn = dxz + k * W;
                    PRN__T *dqr = DQ + (h * 3 * k + u) * W, *dqz = dqr + k * W, *dqn = dqz + k * W;
                    PRN__SIMD for (l = 0; l < W; ++l) {
                        dxr[l] = dqr[l] = lm[l] * ba[l]; dxz[l] = dqz[l] = lm[l] * aa[l];
                        dxn[l] = lm[l] * cdu[l]; dqn[l] = lm[l] * ccu[l];
                    }
                }
            for (u = 0; u < k; ++u) {
                const size_t row = h * k + u, j0 = row / kb * kb;
                const PRN__T *za = cz + u * W, *aa = ca + u * W, *ba = cb + u * W, *ccu = cc + u * W;
                for (jj = 0; jj < kb; ++jj) {
                    const size_t j = j0 + jj;
                    PRN__T *Jp = J + (row * kb + jj) * W;
                    if (kb == 1) v = u;
                    else if (j < h * k || j >= h * k + k) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = 0; continue; }
                    else v = j - h * k;
                    {
                        const PRN__T wr = Wg[u * k + v], wz = Wg[(k + u) * k + v], wn = Wg[(2 * k + u) * k + v];
                        if (v == u) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = za[l] + aa[l] * wz + ba[l] * wr + ccu[l] * wn; }
                        else { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = aa[l] * wz + ba[l] * wr + ccu[l] * wn; }
                    }
                }
            }
        }
        break;
    }
    case PRN_RNN_ELMAN: {
        const PRN__T *Wh = (const PRN__T *)a->w[0], *bh = (const PRN__T *)a->w[1];
        PRN__T *dd = wk;
        for (i = 0; i < H; ++i) {
            PRN__T *fi = F + i * W, *di = dd + i * W;
            const PRN__T *xi = x + i * W, bb = bh[i];
            PRN__SIMD for (l = 0; l < W; ++l) fi[l] = xi[l] + bb;
            for (v = 0; v < H; ++v) {
                const PRN__T wv = Wh[i * H + v], *sv = s + v * W;
                PRN__SIMD for (l = 0; l < W; ++l) fi[l] += wv * sv[l];
            }
            if (a->relu) { PRN__SIMD for (l = 0; l < W; ++l) { fi[l] = fi[l] > 0 ? fi[l] : 0; di[l] = fi[l] > 0 ? (PRN__T)1 : (PRN__T)0; } }
            else { PRN__SIMD for (l = 0; l < W; ++l) { fi[l] = PRN__TANH(fi[l]); di[l] = (PRN__T)1 - fi[l] * fi[l]; } }
            if (lam) { PRN__T *dx = DX + i * W, *dq = DQ + i * W; const PRN__T *lm = lam + i * W; PRN__SIMD for (l = 0; l < W; ++l) dx[l] = dq[l] = lm[l] * di[l]; }
            for (jj = 0; jj < kb; ++jj) {
                const PRN__T wv = Wh[i * H + (kb == 1 ? i : i / kb * kb + jj)];
                PRN__T *Jp = J + (i * kb + jj) * W;
                PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = di[l] * wv;
            }
        }
        break;
    }
    case PRN_RNN_LSTM: { /* gates i f g o; s = [h, c] */
        const PRN__T *Wh = (const PRN__T *)a->w[0], *bh = (const PRN__T *)a->w[1];
        PRN__T *pre = wk, *ai = pre + 4 * H * W, *af = ai + H * W, *ag = af + H * W, *ao = ag + H * W, *qq = ao + H * W, *fg = qq + H * W;
        for (u = 0; u < 4 * H; ++u) {
            PRN__T *pu = pre + u * W;
            const PRN__T *xu = x + u * W, bb = bh[u];
            PRN__SIMD for (l = 0; l < W; ++l) pu[l] = xu[l] + bb;
            for (v = 0; v < H; ++v) {
                const PRN__T wv = Wh[u * H + v], *sv = s + v * W;
                PRN__SIMD for (l = 0; l < W; ++l) pu[l] += wv * sv[l];
            }
        }
        for (u = 0; u < H; ++u) {
            const PRN__T *pi = pre + u * W, *pf = pre + (H + u) * W, *pg = pre + (2 * H + u) * W, *po = pre + (3 * H + u) * W;
            const PRN__T *cp = s + (H + u) * W;
            PRN__T *fh = F + u * W, *fc = F + (H + u) * W;
            PRN__T *a1 = ai + u * W, *a2 = af + u * W, *a3 = ag + u * W, *a4 = ao + u * W, *a5 = qq + u * W, *a6 = fg + u * W;
            PRN__SIMD for (l = 0; l < W; ++l) {
                const PRN__T ig = prn__dz_sig_T(pi[l]), ff = prn__dz_sig_T(pf[l]), gg = PRN__TANH(pg[l]);
                const PRN__T og = prn__dz_sig_T(po[l]), cn = ff * cp[l] + ig * gg, tc = PRN__TANH(cn);
                fh[l] = og * tc; fc[l] = cn;
                a1[l] = gg * ig * ((PRN__T)1 - ig); a2[l] = cp[l] * ff * ((PRN__T)1 - ff); a3[l] = ig * ((PRN__T)1 - gg * gg);
                a4[l] = tc * og * ((PRN__T)1 - og); a5[l] = og * ((PRN__T)1 - tc * tc); a6[l] = ff;
            }
            if (lam) { /* through c: the h gradient by tanh(c) and the c gradient */
                const PRN__T *lh = lam + u * W, *lc = lam + (H + u) * W;
                PRN__T *d1 = DX + u * W, *d2 = DX + (H + u) * W, *d3 = DX + (2 * H + u) * W, *d4 = DX + (3 * H + u) * W;
                PRN__T *e1 = DQ + u * W, *e2 = DQ + (H + u) * W, *e3 = DQ + (2 * H + u) * W, *e4 = DQ + (3 * H + u) * W;
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T dc = lc[l] + lh[l] * a5[l];
                    e1[l] = d1[l] = dc * a1[l]; e2[l] = d2[l] = dc * a2[l]; e3[l] = d3[l] = dc * a3[l];
                    e4[l] = d4[l] = lh[l] * a4[l];
                }
            }
        }
        for (i = 0; i < S; ++i) {
            const size_t u0 = i < H ? i : i - H, j0 = i / kb * kb;
            const PRN__T *a1 = ai + u0 * W, *a2 = af + u0 * W, *a3 = ag + u0 * W, *a4 = ao + u0 * W, *a5 = qq + u0 * W, *a6 = fg + u0 * W;
            for (jj = 0; jj < kb; ++jj) {
                const size_t j = kb == 1 ? i : j0 + jj;
                PRN__T *Jp = J + (i * kb + jj) * W;
                if (j >= H) { /* d / d c: diagonal */
                    if (j - H != u0) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = 0; }
                    else if (i < H) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = a5[l] * a6[l]; }
                    else { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = a6[l]; }
                } else {
                    const PRN__T wi = Wh[u0 * H + j], wf = Wh[(H + u0) * H + j], wg = Wh[(2 * H + u0) * H + j];
                    if (i >= H) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = a1[l] * wi + a2[l] * wf + a3[l] * wg; }
                    else {
                        const PRN__T wo = Wh[(3 * H + u0) * H + j];
                        PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = a4[l] * wo + a5[l] * (a1[l] * wi + a2[l] * wf + a3[l] * wg);
                    }
                }
            }
        }
        break;
    }
    case PRN_RNN_PLRNN: case PRN_RNN_ALRNN: { /* f = A s + W phi(s) + xp */
        const PRN__T *A = (const PRN__T *)a->w[0], *Wm = (const PRN__T *)a->w[1];
        PRN__T *m = wk, *ph = m + S * W;
        const size_t lin = kind == PRN_RNN_ALRNN ? S - a->L : 0;
        for (v = 0; v < S; ++v) {
            const PRN__T *sv = s + v * W;
            PRN__T *mv = m + v * W, *pv = ph + v * W;
            if (v < lin) { PRN__SIMD for (l = 0; l < W; ++l) { mv[l] = 1; pv[l] = sv[l]; } }
            else if (kind == PRN_RNN_ALRNN) { PRN__SIMD for (l = 0; l < W; ++l) { mv[l] = sv[l] > 0 ? (PRN__T)1 : (PRN__T)0; pv[l] = sv[l] * mv[l]; } }
            else { PRN__SIMD for (l = 0; l < W; ++l) { mv[l] = sv[l] > 0 ? (PRN__T)1 : (PRN__T)0; pv[l] = sv[l] > 0 ? sv[l] : (PRN__T)0; } }
        }
        for (i = 0; i < S; ++i) {
            const PRN__T ai_ = A[i], *si = s + i * W, *xi = x + i * W;
            PRN__T *fi = F + i * W;
            PRN__SIMD for (l = 0; l < W; ++l) fi[l] = 0;
            for (v = 0; v < S; ++v) {
                const PRN__T wv = Wm[i * S + v], *pv = ph + v * W;
                PRN__SIMD for (l = 0; l < W; ++l) fi[l] += wv * pv[l];
            }
            PRN__SIMD for (l = 0; l < W; ++l) fi[l] = ai_ * si[l] + fi[l] + xi[l];
            for (jj = 0; jj < kb; ++jj) {
                const size_t j = kb == 1 ? i : i / kb * kb + jj;
                const PRN__T wv = Wm[i * S + j], *mj = m + j * W;
                PRN__T *Jp = J + (i * kb + jj) * W;
                if (j == i) { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = ai_ + wv * mj[l]; }
                else { PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = wv * mj[l]; }
            }
        }
        break;
    }
    default: { /* shallow: f = A s + W1 rho(W2 s) + xp */
        const size_t Lh = a->L;
        const int clipped = kind == PRN_RNN_CLIPPED_SHPLRNN;
        const PRN__T *A = (const PRN__T *)a->w[0], *W1 = (const PRN__T *)a->w[1], *W2 = (const PRN__T *)a->w[2], *h2 = (const PRN__T *)a->w[3];
        PRN__T *m = wk, *rho = m + Lh * W, *vv = rho + Lh * W;
        for (v = 0; v < Lh; ++v) {
            PRN__T *mv = m + v * W, *rv = rho + v * W;
            const PRN__T hb = h2[v];
            PRN__SIMD for (l = 0; l < W; ++l) vv[l] = 0;
            for (u = 0; u < S; ++u) {
                const PRN__T wv = W2[v * S + u], *su = s + u * W;
                PRN__SIMD for (l = 0; l < W; ++l) vv[l] += wv * su[l];
            }
            if (clipped) {
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T uu = vv[l] + hb;
                    rv[l] = (uu > 0 ? uu : (PRN__T)0) - (vv[l] > 0 ? vv[l] : (PRN__T)0);
                    mv[l] = (uu > 0 ? (PRN__T)1 : (PRN__T)0) - (vv[l] > 0 ? (PRN__T)1 : (PRN__T)0);
                }
            } else {
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T uu = vv[l] + hb;
                    rv[l] = uu > 0 ? uu : (PRN__T)0; mv[l] = uu > 0 ? (PRN__T)1 : (PRN__T)0;
                }
            }
        }
        for (i = 0; i < S; ++i) {
            const PRN__T ai_ = A[i], *si = s + i * W, *xi = x + i * W;
            PRN__T *fi = F + i * W;
            PRN__SIMD for (l = 0; l < W; ++l) fi[l] = 0;
            for (v = 0; v < Lh; ++v) {
                const PRN__T wv = W1[i * Lh + v], *rv = rho + v * W;
                PRN__SIMD for (l = 0; l < W; ++l) fi[l] += wv * rv[l];
            }
            PRN__SIMD for (l = 0; l < W; ++l) fi[l] = ai_ * si[l] + fi[l] + xi[l];
            for (jj = 0; jj < kb; ++jj) {
                const size_t j = kb == 1 ? i : i / kb * kb + jj;
                PRN__T *Jp = J + (i * kb + jj) * W;
                PRN__SIMD for (l = 0; l < W; ++l) Jp[l] = j == i ? ai_ : (PRN__T)0;
                for (v = 0; v < Lh; ++v) {
                    const PRN__T wv = W1[i * Lh + v] * W2[v * S + j], *mv = m + v * W;
                    PRN__SIMD for (l = 0; l < W; ++l) Jp[l] += wv * mv[l];
                }
            }
        }
        break;
    }
    }
}
/* One group of lanes (batch rows b0 ..): the iteration, or the adjoint. The
 * sizes are arguments so that the common small cells get copies of their own
 * (constant trip counts: the short loops unroll). */
PRN__FN_INLINE PRN__ATTR PRN__DZ_DBG void prn__dz_body_T(const prn__dz *z, size_t b0, PRN__T *ws, double *res, int *bad, const int kind,
                                            const size_t S, const size_t H, const size_t hk, const size_t P,
                                            const size_t kb, const int fwo) {
    const prn_deer_fused *a = z->a;
    const size_t B = a->B, TT = a->T, Tc = z->Tc, W = PRN__DZW;
    const PRN__T *XP = (const PRN__T *)a->xp, *Y = (const PRN__T *)a->y, *H0 = (const PRN__T *)a->h0; /* Y NULL: h0 at every step */
    const PRN__T *G = (const PRN__T *)a->g;
    PRN__T *YN = (PRN__T *)(z->adj ? a->lam : a->ynew);
    const PRN__T one_k = (PRN__T)(1.0 - a->damping), atol = (PRN__T)a->atol, rtol = (PRN__T)a->rtol, clip = (PRN__T)a->clip;
    PRN__T *Xc = ws, *Yc = Xc + Tc * P * W, *Gc = Yc + (Tc + 1) * S * W, *Yn = Gc + Tc * S * W;
    PRN__T *F = Yn + Tc * S * W, *J = F + S * W, *cy = J + S * kb * W, *tmp = cy + S * W, *wk = tmp + S * W;
    PRN__T *Dx = wk + z->wkn, *Dq = Dx + Tc * P * W; /* the adjoint's dxp, dq (z->dxq) */
    PRN__T *aW = Dq + Tc * P * W, *aB = aW + P * z->wc * W; /* z->dwb: dw, db of this chunk per lane */
    const int dwb = z->adj && z->dwb;
    const size_t wc = z->wc;
    double *gp = dwb ? z->gpart + b0 / W * (P * wc + P) : NULL;
    PRN__T *DXP = (PRN__T *)a->dxp, *DQP = (PRN__T *)a->dq, *DH0 = (PRN__T *)a->dh0;
    const int dxq = z->adj && z->dxq;
    PRN__T mx[PRN__DZW], nf[PRN__DZW];
    size_t bl[PRN__DZW], l, c0, r, i, jj, p;
    const int rev = a->reverse;
    for (l = 0; l < W; ++l) { bl[l] = b0 + l < B ? b0 + l : b0; mx[l] = 0; nf[l] = 0; }
    if (fwo || !z->adj) { /* fwo: a copy that never runs the adjoint */
        for (i = 0; i < S; ++i)
            for (l = 0; l < W; ++l) Yc[i * W + l] = cy[i * W + l] = H0[bl[l] * S + i];
        for (c0 = 0; c0 < TT; c0 += Tc) {
            const size_t n = TT - c0 < Tc ? TT - c0 : Tc;
            for (l = 0; l < W; ++l) { /* a run of rows of each lane, into lane order */
                const size_t t0 = rev ? TT - 1 - c0 : c0;
                const PRN__T *xs = XP + (bl[l] * TT + t0) * P, *ys = Y ? Y + (bl[l] * TT + t0) * S : H0 + bl[l] * S;
                const ptrdiff_t xst = rev ? -(ptrdiff_t)P : (ptrdiff_t)P, yst = !Y ? 0 : rev ? -(ptrdiff_t)S : (ptrdiff_t)S;
                PRN__T *xd = Xc + l, *yd = Yc + S * W + l;
                for (r = 0; r < n; ++r, xs += xst, ys += yst, xd += P * W, yd += S * W) {
                    for (p = 0; p < P; ++p) xd[p * W] = xs[p];
                    for (i = 0; i < S; ++i) yd[i * W] = ys[i];
                }
            }
            for (r = 0; r < n; ++r) {
                const PRN__T *sp = Yc + r * S * W, *yc = sp + S * W;
                PRN__T *yn = Yn + r * S * W;
                prn__dz_cell_T(a, kind, S, H, hk, kb, sp, Xc + r * P * W, F, J, wk, NULL, NULL, NULL);
                for (i = 0; i < S; ++i)
                    PRN__SIMD for (l = 0; l < W; ++l) {
                        const PRN__T fv = F[i * W + l], d = yc[i * W + l] - fv;
                        const PRN__T q = (d < 0 ? -d : d) / (atol + rtol * (fv < 0 ? -fv : fv));
                        mx[l] = q > mx[l] ? q : mx[l];
                        const PRN__T u = q - q; /* NaN for NaN and Inf */
                        nf[l] += u == u ? (PRN__T)0 : (PRN__T)1;
                    }
                if (!YN) continue;
                /* y'_t = A (y'_{t-1} - y_{t-1}) + f: the same as A y' + (f - A y) */
                for (i = 0; i < S; ++i) {
                    const size_t j0 = kb == 1 ? i : i / kb * kb;
                    PRN__T *ti = tmp + i * W;
                    const PRN__T *fi = F + i * W;
                    PRN__T acc[PRN__DZW], ay[PRN__DZW];
                    PRN__SIMD for (l = 0; l < W; ++l) { acc[l] = 0; ay[l] = 0; }
                    for (jj = 0; jj < kb; ++jj) {
                        const PRN__T *Jp = J + (i * kb + jj) * W, *cj = cy + (j0 + jj) * W, *pj = sp + (j0 + jj) * W;
                        PRN__SIMD for (l = 0; l < W; ++l) { const PRN__T aj = one_k * Jp[l]; acc[l] += aj * cj[l]; ay[l] += aj * pj[l]; }
                    }
                    PRN__SIMD for (l = 0; l < W; ++l) ti[l] = acc[l] + (fi[l] - ay[l]);
                }
                PRN__SIMD for (i = 0; i < S * W; ++i) {
                    PRN__T v = tmp[i];
                    cy[i] = v;
                    v = v > clip ? clip : v;
                    v = v < -clip ? -clip : v;
                    yn[i] = v == v ? v : (PRN__T)0;
                }
            }
            if (YN)
                for (l = 0; l < W && b0 + l < B; ++l) {
                    const size_t t0 = rev ? TT - 1 - c0 : c0;
                    const ptrdiff_t yst = rev ? -(ptrdiff_t)S : (ptrdiff_t)S;
                    PRN__T *yo = YN + (bl[l] * TT + t0) * S;
                    const PRN__T *ysrc = Yn + l;
                    for (r = 0; r < n; ++r, yo += yst, ysrc += S * W)
                        for (i = 0; i < S; ++i) yo[i] = ysrc[i * W];
                }
            memcpy(Yc, Yc + n * S * W, S * W * sizeof(PRN__T));
        }
        for (l = 0; l < W; ++l) {
            if (nf[l] != 0) *bad = 1;
            if ((double)mx[l] > *res) *res = (double)mx[l];
        }
        return;
    }
    /* the adjoint: walk back; lam_t = g_t + c, then c = J_t^PRN__T lam_t */
    for (i = 0; i < S * W; ++i) cy[i] = 0;
    if (dwb) for (i = 0; i < (P * wc + P) * W; ++i) aW[i] = 0;
    for (c0 = TT; c0 > 0;) {
        const size_t n = c0 < Tc ? c0 : Tc, w0 = c0 - n;
        for (l = 0; l < W; ++l)
            for (r = 0; r < n; ++r) {
                const size_t w = w0 + r, t = rev ? TT - 1 - w : w, row = bl[l] * TT + t;
                const size_t tp = rev ? t + 1 : t - 1;
                for (p = 0; p < P; ++p) Xc[(r * P + p) * W + l] = XP[row * P + p];
                for (i = 0; i < S; ++i) {
                    Yc[(r * S + i) * W + l] = w ? Y[(bl[l] * TT + tp) * S + i] : H0[bl[l] * S + i];
                    Gc[(r * S + i) * W + l] = G[row * S + i];
                }
            }
        for (r = n; r-- > 0;) {
            const PRN__T *gc = Gc + r * S * W;
            PRN__T *yn = Yn + r * S * W;
            for (i = 0; i < S * W; ++i) { yn[i] = gc[i] + cy[i]; cy[i] = 0; }
            prn__dz_cell_T(a, kind, S, H, hk, kb, Yc + r * S * W, Xc + r * P * W, F, J, wk, dxq ? yn : NULL,
                               Dx + r * P * W, Dq + r * P * W);
            if (dwb) /* dw += dq h_prev^T (MHGRU: gate rows of head h with its k states), db += dq */
                for (p = 0; p < P; ++p) {
                    const PRN__T *dqp = Dq + (r * P + p) * W, *hp = Yc + (r * S + (wc == H ? 0 : p / (3 * wc) * wc)) * W;
                    PRN__T *ap = aW + p * wc * W, *bp = aB + p * W;
                    PRN__SIMD for (l = 0; l < W; ++l) bp[l] += dqp[l];
                    for (jj = 0; jj < wc; ++jj) {
                        const PRN__T *hv = hp + jj * W;
                        PRN__T *av = ap + jj * W;
                        PRN__SIMD for (l = 0; l < W; ++l) av[l] += dqp[l] * hv[l];
                    }
                }
            for (i = 0; i < S; ++i) {
                const size_t j0 = kb == 1 ? i : i / kb * kb;
                const PRN__T *li = yn + i * W;
                for (jj = 0; jj < kb; ++jj) {
                    const PRN__T *Jp = J + (i * kb + jj) * W;
                    PRN__T *cj = cy + (j0 + jj) * W;
                    PRN__SIMD for (l = 0; l < W; ++l) cj[l] += Jp[l] * li[l];
                }
            }
        }
        for (l = 0; l < W && b0 + l < B; ++l)
            for (r = 0; r < n; ++r) {
                const size_t w = w0 + r, t = rev ? TT - 1 - w : w, row = bl[l] * TT + t;
                for (i = 0; i < S; ++i) YN[row * S + i] = Yn[(r * S + i) * W + l];
                if (dxq)
                    for (p = 0; p < P; ++p) DXP[row * P + p] = Dx[(r * P + p) * W + l];
                if (dxq && DQP)
                    for (p = 0; p < P; ++p) DQP[row * P + p] = Dq[(r * P + p) * W + l];
            }
        if (dwb) /* the chunk's sums, lanes in order, into the group's partials */
            for (i = 0; i < P * wc + P; ++i) {
                PRN__T *av = aW + i * W;
                for (l = 0; l < W && b0 + l < B; ++l) gp[i] += (double)av[l];
                for (l = 0; l < W; ++l) av[l] = 0;
            }
        c0 = w0;
    }
    if (DH0) /* the carry past the first step: d loss / d h0 */
        for (l = 0; l < W && b0 + l < B; ++l)
            for (i = 0; i < S; ++i) DH0[bl[l] * S + i] = cy[i * W + l];
    (void)res; (void)bad;
}
/* PRN__SPEC 0: no copies for small GRUs (the f32 copy where the AVX2 one runs
 * instead: the copies cost compile time, not run time). The copies for
 * the quasi-DEER forward (kb 1, S > 1: the adjoint takes kb = S) leave the
 * adjoint out (fwo), a third of their code. */
PRN__FN PRN__ATTR PRN__DZ_DBG void prn__dz_group_T(const prn__dz *z, size_t b0, PRN__T *ws, double *res, int *bad) {
    const prn_deer_fused *a = z->a;
    const size_t S = a->S, kb = z->kb;
    const int gru = (PRN__SPEC) && a->kind == PRN_RNN_GRU, fw = !z->adj;
    if (gru && S == 1) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 1, 1, 1, 3, 1, 0);
    else if (gru && S == 2 && kb == 2) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 2, 2, 2, 6, 2, 0);
    else if (gru && S == 2 && kb == 1 && fw) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 2, 2, 2, 6, 1, 1);
    else if (gru && S == 4 && kb == 4) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 4, 4, 4, 12, 4, 0);
    else if (gru && S == 4 && kb == 1 && fw) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 4, 4, 4, 12, 1, 1);
    else if (gru && S == 8 && kb == 8) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 8, 8, 8, 24, 8, 0);
    else if (gru && S == 8 && kb == 1 && fw) prn__dz_body_T(z, b0, ws, res, bad, PRN_RNN_GRU, 8, 8, 8, 24, 1, 1);
    else prn__dz_body_T(z, b0, ws, res, bad, a->kind, S, a->H, a->hk, z->P, kb, 0);
}
#undef prn__dz_sig_T
#undef prn__dz_cell_T
#undef prn__dz_body_T
#undef prn__dz_group_T
#undef prn__dz_tin_T
#undef prn__dz_tout_T
#undef PRN__EXP
#undef PRN__TANH
#undef PRN__SPEC
#endif /* PRN__TPL_DEER */

/* ---- DEER_TS: the fused DEER iterations over time segments. Parameters: T,
 * SFX, ATTR, PRN__SPEC (as DEER's). Uses DEER's prn__dz_cell_<sfx> and
 * prn__dz_tin_/prn__dz_tout_<sfx>. */
#ifdef PRN__TPL_DEER_TS
#undef PRN__TPL_DEER_TS
#define prn__dz_ts_body_T PRN__TNAME(prn__dz_ts_body_)
#define prn__dz_ts_chain_T PRN__TNAME(prn__dz_ts_chain_)
#define prn__dz_ts_group_T PRN__TNAME(prn__dz_ts_group_)
#define prn__dz_cell_T PRN__TNAME(prn__dz_cell_)
#define prn__dz_tin_T PRN__TNAME(prn__dz_tin_)
#define prn__dz_tout_T PRN__TNAME(prn__dz_tout_)
/* Time segments (prn__ref_deer_run with B < PRN__DZW): a lane takes one
 * segment of one row's time, so a few rows still fill the lanes and the
 * threads. Pass 1 solves each segment's recurrence from a zero carry (v),
 * writes v, multiplies its A_t (M) and takes the residual; the carries are
 * then chained across the segments of a row. Pass 2 adds the carry's part
 * c_t = A_t c_{t-1} (c_{-1} the segment's true carry) to v, and stops in a
 * lane once every |c_t,i| <= PRN__DZ_CUT (atol + rtol |v_t,i|): where A
 * contracts, c fades within a few hundred steps, so pass 2 costs a small
 * part of pass 1. The rest of the segment keeps v: an inexact Newton step
 * (the correction left out is below a thousandth of the tolerance where it
 * stops, and only grows again where J amplifies); the next iteration's
 * residual still decides convergence. A segment whose v was clipped or not
 * finite in pass 1 is solved again from its true carry instead (v is then
 * not known). Task j is row j / C, segment j % C. */
PRN__FN_INLINE PRN__ATTR PRN__DZ_DBG PRN__DZ_TS void prn__dz_ts_body_T(const prn__dz *z, size_t j0, PRN__T *ws, double *res, int *bad, const int kind,
                                               const size_t S, const size_t H, const size_t hk, const size_t P,
                                               const size_t kb) {
    const prn_deer_fused *a = z->a;
    const size_t TT = a->T, W = PRN__DZW, Ls = z->Ls, SS = 2 * S + S * S + 1;
    const PRN__T *XP = (const PRN__T *)a->xp, *Y = (const PRN__T *)a->y, *H0 = (const PRN__T *)a->h0;
    PRN__T *YN = (PRN__T *)a->ynew, *TV = (PRN__T *)z->tv;
    const PRN__T one_k = (PRN__T)(1.0 - a->damping), atol = (PRN__T)a->atol, rtol = (PRN__T)a->rtol, clip = (PRN__T)a->clip;
    const PRN__T cut = (PRN__T)PRN__DZ_CUT;
    const int rev = a->reverse, pass = z->pass;
    /* pass 2 usually ends early: short chunks gather little in vain */
    const size_t Tc = pass == 1 || z->Tc < 32 ? z->Tc : 32;
    PRN__T *Pc = ws, *Cc = Pc + z->Tc * S * W, *Xc = Cc + z->Tc * S * W, *On = Xc + z->Tc * P * W, *F = On + z->Tc * S * W;
    PRN__T *J = F + S * W, *cy = J + S * kb * W;
    PRN__T *tmp = cy + S * W, *M = tmp + S * W, *Mn = M + S * S * W, *wk = Mn + S * S * W;
    PRN__T mx[PRN__DZW], nf[PRN__DZW], vl[PRN__DZW], fm[PRN__DZW], ck[PRN__DZW], sm[PRN__DZW];
    size_t bl[PRN__DZW], sl[PRN__DZW], nl[PRN__DZW], jl[PRN__DZW], ne[PRN__DZW], l, r, i, jj, c, p, nmax = 0, r0, rr, nc;
    int dn[PRN__DZW], live = 1, fast;
    const PRN__T *pxl[PRN__DZW], *pcl[PRN__DZW], *psl[PRN__DZW];
    PRN__T *pol[PRN__DZW];
    const ptrdiff_t ost = rev ? -(ptrdiff_t)S : (ptrdiff_t)S;
    const ptrdiff_t xst = rev ? -(ptrdiff_t)P : (ptrdiff_t)P, yst = !Y ? 0 : rev ? -(ptrdiff_t)S : (ptrdiff_t)S;
    for (l = 0; l < W; ++l) {
        const size_t j = j0 + l < z->ntask ? j0 + l : j0;
        size_t t;
        jl[l] = j; bl[l] = j / z->C; sl[l] = (j % z->C) * Ls;
        nl[l] = j0 + l < z->ntask && sl[l] < TT ? (TT - sl[l] < Ls ? TT - sl[l] : Ls) : 0;
        if (nl[l] > nmax) nmax = nl[l];
        mx[l] = 0; nf[l] = 0; ck[l] = 0; dn[l] = 0;
        /* pass 2: 1 where the segment is solved again in full, 0 where c is added to v */
        fm[l] = pass == 1 || TV[j * SS + 2 * S + S * S] != 0 ? (PRN__T)1 : (PRN__T)0;
        t = rev ? TT - 1 - sl[l] : sl[l]; /* the lane's first step, its inputs */
        pxl[l] = XP + (bl[l] * TT + t) * P;
        pcl[l] = Y ? Y + (bl[l] * TT + t) * S : H0 + bl[l] * S;
        psl[l] = !Y || sl[l] == 0 ? H0 + bl[l] * S : pcl[l] - yst;
        pol[l] = YN ? YN + (bl[l] * TT + t) * S : NULL;
    }
    for (i = 0; i < S; ++i)
        for (l = 0; l < W; ++l) cy[i * W + l] = pass == 1 ? (PRN__T)0 : TV[jl[l] * SS + S + S * S + i];
    if (pass == 1)
        for (i = 0; i < S * S; ++i)
            for (l = 0; l < W; ++l) M[i * W + l] = i % (S + 1) == 0 ? (PRN__T)1 : (PRN__T)0;
    for (r0 = 0; r0 < nmax && live; r0 += nc) {
      nc = nmax - r0 < Tc ? nmax - r0 : Tc;
      fast = !rev; /* forward, every lane inside its segment: transposes */
      for (l = 0; l < W && fast; ++l) fast = r0 + nc < nl[l] && fm[l] == (pass == 1 ? 1 : 0);
      if (fast) {
        const PRN__T *src[PRN__DZW];
        for (l = 0; l < W; ++l) { src[l] = pxl[l]; pxl[l] += nc * P; }
        prn__dz_tin_T(Xc, src, nc * P);
        for (l = 0; l < W; ++l)
            for (i = 0; i < S; ++i) Pc[i * W + l] = psl[l][i];
        if (Y) { /* the previous states: the one before, then this run's but its last */
            PRN__T *cb = pass == 1 ? Cc : On;
            for (l = 0; l < W; ++l) { src[l] = pcl[l]; psl[l] = pcl[l] + (nc - 1) * S; pcl[l] += nc * S; }
            prn__dz_tin_T(cb, src, nc * S);
            memcpy(Pc + S * W, cb, (nc - 1) * S * W * sizeof(PRN__T));
        } else { /* h0 at every step */
            for (rr = 1; rr < nc; ++rr) memcpy(Pc + rr * S * W, Pc, S * W * sizeof(PRN__T));
            if (pass == 1) memcpy(Cc, Pc, nc * S * W * sizeof(PRN__T));
        }
        if (pass == 2) {
            for (l = 0; l < W; ++l) src[l] = pol[l];
            prn__dz_tin_T(Cc, src, nc * S);
        }
      } else
      for (l = 0; l < W; ++l) { /* a run of steps of each lane's segment, in lane order */
        const int addv = pass == 2 && fm[l] == 0; /* pass 2 reads v where it adds c */
        for (rr = 0, r = r0; rr < nc; ++rr, ++r) {
            const PRN__T *ps = psl[l], *pc = pcl[l], *px = pxl[l];
            PRN__T *sd = Pc + rr * S * W + l, *cd = Cc + rr * S * W + l, *xd = Xc + rr * P * W + l;
            for (i = 0; i < S; ++i) sd[i * W] = ps[i];
            if (pass == 1) for (i = 0; i < S; ++i) cd[i * W] = pc[i];
            else if (addv && r < nl[l]) { const PRN__T *pv = pol[l] + (ptrdiff_t)rr * ost; for (i = 0; i < S; ++i) cd[i * W] = pv[i]; }
            else for (i = 0; i < S; ++i) cd[i * W] = 0;
            for (p = 0; p < P; ++p) xd[p * W] = px[p];
            if (r + 1 < nl[l]) { psl[l] = Y ? pc : ps; pcl[l] = pc + yst; pxl[l] = px + xst; }
        }
      }
      for (l = 0; l < W; ++l) ne[l] = 0;
      for (rr = 0, r = r0; rr < nc; ++rr, ++r) {
        const PRN__T *sp = Pc + rr * S * W, *yc = Cc + rr * S * W, *x = Xc + rr * P * W;
        PRN__T *on = On + rr * S * W;
        live = 0;
        for (l = 0; l < W; ++l) {
            const int act = r < nl[l] && !dn[l];
            vl[l] = act ? (PRN__T)1 : (PRN__T)0;
            ne[l] += (size_t)act;
            live |= act;
        }
        if (!live) break;
        prn__dz_cell_T(a, kind, S, H, hk, kb, sp, x, F, J, wk, NULL, NULL, NULL);
        if (pass == 1)
            for (i = 0; i < S; ++i)
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T fv = F[i * W + l], d = yc[i * W + l] - fv;
                    PRN__T q = (d < 0 ? -d : d) / (atol + rtol * (fv < 0 ? -fv : fv));
                    const PRN__T u = q - q;
                    q = vl[l] != 0 ? q : (PRN__T)0;
                    mx[l] = q > mx[l] ? q : mx[l];
                    nf[l] += u != u ? vl[l] : (PRN__T)0; /* no &&: it vectorises */
                }
        if (!YN) continue;
        /* y'_t = A (y'_{t-1} - y_{t-1}) + f (full), or c_t = A c_{t-1} */
        for (i = 0; i < S; ++i) {
            const size_t j0b = kb == 1 ? i : i / kb * kb;
            PRN__T acc[PRN__DZW];
            PRN__SIMD for (l = 0; l < W; ++l) acc[l] = fm[l] * F[i * W + l];
            for (jj = 0; jj < kb; ++jj) {
                const PRN__T *Jp = J + (i * kb + jj) * W, *cj = cy + (j0b + jj) * W, *pj = sp + (j0b + jj) * W;
                PRN__SIMD for (l = 0; l < W; ++l) acc[l] += one_k * Jp[l] * (cj[l] - fm[l] * pj[l]);
            }
            PRN__SIMD for (l = 0; l < W; ++l) tmp[i * W + l] = vl[l] != 0 ? acc[l] : cy[i * W + l];
        }
        if (pass == 1) { /* M = A M (held where the lane has ended) */
            for (i = 0; i < S; ++i) {
                const size_t j0b = kb == 1 ? i : i / kb * kb;
                for (c = 0; c < S; ++c) {
                    PRN__T acc[PRN__DZW];
                    PRN__SIMD for (l = 0; l < W; ++l) acc[l] = 0;
                    for (jj = 0; jj < kb; ++jj) {
                        const PRN__T *Jp = J + (i * kb + jj) * W, *mj = M + ((j0b + jj) * S + c) * W;
                        PRN__SIMD for (l = 0; l < W; ++l) acc[l] += one_k * Jp[l] * mj[l];
                    }
                    PRN__SIMD for (l = 0; l < W; ++l) Mn[(i * S + c) * W + l] = vl[l] != 0 ? acc[l] : M[(i * S + c) * W + l];
                }
            }
            memcpy(M, Mn, S * S * W * sizeof(PRN__T));
            for (i = 0; i < S; ++i) /* the value, clipped; ck counts the changed ones */
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T v = tmp[i * W + l];
                    PRN__T w = v > clip ? clip : v;
                    w = w < -clip ? -clip : w;
                    ck[l] += w != v ? vl[l] : (PRN__T)0;
                    on[i * W + l] = w == w ? w : (PRN__T)0;
                }
        } else {
            PRN__SIMD for (l = 0; l < W; ++l) sm[l] = 0;
            for (i = 0; i < S; ++i)
                PRN__SIMD for (l = 0; l < W; ++l) {
                    const PRN__T cv = tmp[i * W + l], vv = yc[i * W + l];
                    PRN__T v = cv + vv; /* yc: v (0 where solved in full) */
                    sm[l] += (cv < 0 ? -cv : cv) <= cut * (atol + rtol * (vv < 0 ? -vv : vv)) ? (PRN__T)0 : (PRN__T)1;
                    v = v > clip ? clip : v;
                    v = v < -clip ? -clip : v;
                    on[i * W + l] = v == v ? v : (PRN__T)0;
                }
            for (l = 0; l < W; ++l) dn[l] |= vl[l] != 0 && fm[l] == 0 && sm[l] == 0;
        }
        memcpy(cy, tmp, S * W * sizeof(PRN__T));
      }
      fast = !rev;
      for (l = 0; l < W && fast; ++l) fast = ne[l] == nc;
      if (YN && fast) {
        prn__dz_tout_T(pol, On, nc * S);
        for (l = 0; l < W; ++l) pol[l] += nc * S;
      } else if (YN)
        for (l = 0; l < W; ++l)
            for (rr = 0; rr < ne[l]; ++rr, pol[l] += ost)
                for (i = 0; i < S; ++i) pol[l][i] = On[(rr * S + i) * W + l];
    }
    if (pass == 1) {
        for (l = 0; l < W; ++l) {
            if (nf[l] != 0) *bad = 1;
            if ((double)mx[l] > *res) *res = (double)mx[l];
            if (j0 + l >= z->ntask || !YN) continue;
            for (i = 0; i < S; ++i) TV[jl[l] * SS + i] = cy[i * W + l];
            for (i = 0; i < S * S; ++i) TV[jl[l] * SS + S + i] = M[i * W + l];
            TV[jl[l] * SS + 2 * S + S * S] = ck[l] != 0 ? (PRN__T)1 : (PRN__T)0;
        }
    }
}
/* The carries into each segment: chained along each row from h0. */
PRN__FN void prn__dz_ts_chain_T(const prn__dz *z) {
    const prn_deer_fused *a = z->a;
    const size_t S = a->S, SS = 2 * S + S * S + 1, C = z->C; /* v, M, carry, clipped */
    PRN__T *TV = (PRN__T *)z->tv, cur[64], nx[64];
    size_t b, c, i, k;
    for (b = 0; b < a->B; ++b) {
        for (i = 0; i < S; ++i) cur[i] = ((const PRN__T *)a->h0)[b * S + i];
        for (c = 0; c < C; ++c) {
            PRN__T *e = TV + (b * C + c) * SS;
            for (i = 0; i < S; ++i) e[S + S * S + i] = cur[i];
            for (i = 0; i < S; ++i) {
                PRN__T v = e[i];
                for (k = 0; k < S; ++k) v += e[S + i * S + k] * cur[k];
                nx[i] = v;
            }
            for (i = 0; i < S; ++i) cur[i] = nx[i];
        }
    }
}
PRN__FN PRN__ATTR PRN__DZ_DBG PRN__DZ_TS void prn__dz_ts_group_T(const prn__dz *z, size_t j0, PRN__T *ws, double *res, int *bad) {
    const prn_deer_fused *a = z->a;
    const size_t S = a->S, kb = z->kb;
    const int gru = (PRN__SPEC) && a->kind == PRN_RNN_GRU;
    if (gru && S == 1) prn__dz_ts_body_T(z, j0, ws, res, bad, PRN_RNN_GRU, 1, 1, 1, 3, 1);
    else if (gru && S == 2 && kb == 2) prn__dz_ts_body_T(z, j0, ws, res, bad, PRN_RNN_GRU, 2, 2, 2, 6, 2);
    else if (gru && S == 2) prn__dz_ts_body_T(z, j0, ws, res, bad, PRN_RNN_GRU, 2, 2, 2, 6, 1);
    else prn__dz_ts_body_T(z, j0, ws, res, bad, a->kind, S, a->H, a->hk, z->P, kb);
}
#undef prn__dz_ts_body_T
#undef prn__dz_ts_chain_T
#undef prn__dz_ts_group_T
#undef prn__dz_cell_T
#undef prn__dz_tin_T
#undef prn__dz_tout_T
#undef PRN__SPEC
#endif /* PRN__TPL_DEER_TS */

/* ---- FR_SIMD: the frames' SIMD kernels, PRN__SFX units at a time
 * (parameters: SFX, the vector width in floats and the names' suffix: 8
 * for AVX2, 16 for AVX-512; ATTR). Generates prn__fr_exp<sfx>,
 * prn__fr_sigm<sfx>, prn__fr_tanh<sfx>, prn__fr_gates<sfx>, the register
 * tiles prn__fr_tile<NV>x<NR>_<sfx> and prn__fr_mv<sfx>, each the scalar
 * kernel's (prn__fr_exp, prn__fr_gates_ref, prn__fr_mv_ref) operations on
 * vectors of SFX units. The width picks the intrinsics (PRN__FV_*) and
 * how many accumulators a tile may hold (PRN__FV_MAXV<R>). */
#ifdef PRN__TPL_FR_SIMD
#undef PRN__TPL_FR_SIMD
#if PRN__SFX == 8
#define PRN__FV __m256
#define PRN__FVI __m256i
#define PRN__FV_SET1 _mm256_set1_ps
#define PRN__FV_ZERO _mm256_setzero_ps
#define PRN__FV_LOADU _mm256_loadu_ps
#define PRN__FV_LOAD _mm256_load_ps
#define PRN__FV_STOREU _mm256_storeu_ps
#define PRN__FV_FMADD _mm256_fmadd_ps
#define PRN__FV_ADD _mm256_add_ps
#define PRN__FV_SUB _mm256_sub_ps
#define PRN__FV_MUL _mm256_mul_ps
#define PRN__FV_DIV _mm256_div_ps
#define PRN__FV_MAX _mm256_max_ps
#define PRN__FV_MIN _mm256_min_ps
#define PRN__FV_AS_INT _mm256_castps_si256
#define PRN__FV_AS_FLOAT _mm256_castsi256_ps
#define PRN__FV_ADD_I32 _mm256_add_epi32
#define PRN__FV_SUB_I32 _mm256_sub_epi32
#define PRN__FV_SET1_I32 _mm256_set1_epi32
#define PRN__FV_SHL_I32 _mm256_slli_epi32
/* at most 6 accumulators of each chain in a one-row tile: 12 of the 16 registers */
#define PRN__FV_MAXV1 6
#define PRN__FV_MAXV2 3
#define PRN__FV_MAXV4 1
#else
#define PRN__FV __m512
#define PRN__FVI __m512i
#define PRN__FV_SET1 _mm512_set1_ps
#define PRN__FV_ZERO _mm512_setzero_ps
#define PRN__FV_LOADU _mm512_loadu_ps
#define PRN__FV_LOAD _mm512_load_ps
#define PRN__FV_STOREU _mm512_storeu_ps
#define PRN__FV_FMADD _mm512_fmadd_ps
#define PRN__FV_ADD _mm512_add_ps
#define PRN__FV_SUB _mm512_sub_ps
#define PRN__FV_MUL _mm512_mul_ps
#define PRN__FV_DIV _mm512_div_ps
#define PRN__FV_MAX _mm512_max_ps
#define PRN__FV_MIN _mm512_min_ps
#define PRN__FV_AS_INT _mm512_castps_si512
#define PRN__FV_AS_FLOAT _mm512_castsi512_ps
#define PRN__FV_ADD_I32 _mm512_add_epi32
#define PRN__FV_SUB_I32 _mm512_sub_epi32
#define PRN__FV_SET1_I32 _mm512_set1_epi32
#define PRN__FV_SHL_I32 _mm512_slli_epi32
/* 32 registers: at most 8 accumulators of each chain, 16 of them */
#define PRN__FV_MAXV1 8
#define PRN__FV_MAXV2 4
#define PRN__FV_MAXV4 2
#endif
#define prn__fr_exp_T PRN__TNAME(prn__fr_exp)
#define prn__fr_sigm_T PRN__TNAME(prn__fr_sigm)
#define prn__fr_tanh_T PRN__TNAME(prn__fr_tanh)
#define prn__fr_gates_T PRN__TNAME(prn__fr_gates)
#define prn__fr_tile_T PRN__TNAME(prn__fr_tile)
#define prn__fr_tile1x1_T PRN__TNAME(prn__fr_tile1x1_)
#define prn__fr_tile2x1_T PRN__TNAME(prn__fr_tile2x1_)
#define prn__fr_tile3x1_T PRN__TNAME(prn__fr_tile3x1_)
#define prn__fr_tile4x1_T PRN__TNAME(prn__fr_tile4x1_)
#define prn__fr_tile5x1_T PRN__TNAME(prn__fr_tile5x1_)
#define prn__fr_tile6x1_T PRN__TNAME(prn__fr_tile6x1_)
#define prn__fr_tile7x1_T PRN__TNAME(prn__fr_tile7x1_)
#define prn__fr_tile8x1_T PRN__TNAME(prn__fr_tile8x1_)
#define prn__fr_tile1x2_T PRN__TNAME(prn__fr_tile1x2_)
#define prn__fr_tile2x2_T PRN__TNAME(prn__fr_tile2x2_)
#define prn__fr_tile3x2_T PRN__TNAME(prn__fr_tile3x2_)
#define prn__fr_tile4x2_T PRN__TNAME(prn__fr_tile4x2_)
#define prn__fr_tile1x4_T PRN__TNAME(prn__fr_tile1x4_)
#define prn__fr_tile2x4_T PRN__TNAME(prn__fr_tile2x4_)
#define prn__fr_mv_T PRN__TNAME(prn__fr_mv)
/* exp(x) (dbl = 0: exp(-x); dbl = 1: exp(2x)) as p * s, s a power of two, as prn__fr_exp */
PRN__FN_INLINE PRN__ATTR void prn__fr_exp_T(PRN__FV x, int dbl, PRN__FV *p_out, PRN__FV *s_out) {
    const PRN__FV magic = PRN__FV_SET1(12582912.0f), lim = PRN__FV_SET1(dbl ? 10.0f : 87.0f);
    PRN__FV t, n, r, r2, a, b, c, p, kx;
    PRN__FVI e;
    x = PRN__FV_MAX(x, PRN__FV_SUB(PRN__FV_ZERO(), lim));
    x = PRN__FV_MIN(x, lim);
    t = PRN__FV_FMADD(x, PRN__FV_SET1(dbl ? 2.0f * 1.44269504088896341f : -1.44269504088896341f), magic);
    kx = dbl ? PRN__FV_ADD(x, x) : x; /* dbl = 0: r holds -r, as in prn__fr_exp */
    n = PRN__FV_SUB(t, magic);
    r = PRN__FV_FMADD(n, PRN__FV_SET1(dbl ? -0.693359375f : 0.693359375f), kx);
    r = PRN__FV_FMADD(n, PRN__FV_SET1(dbl ? 2.12194440e-4f : -2.12194440e-4f), r);
    r2 = PRN__FV_MUL(r, r);
    a = PRN__FV_FMADD(PRN__FV_SET1(dbl ? 1.6666665459e-1f : -1.6666665459e-1f), r, PRN__FV_SET1(5.0000001201e-1f));
    b = PRN__FV_FMADD(PRN__FV_SET1(dbl ? 8.3334519073e-3f : -8.3334519073e-3f), r, PRN__FV_SET1(4.1665795894e-2f));
    c = PRN__FV_FMADD(PRN__FV_SET1(dbl ? 1.9875691500e-4f : -1.9875691500e-4f), r, PRN__FV_SET1(1.3981999507e-3f));
    p = PRN__FV_FMADD(r2, PRN__FV_FMADD(r2, c, b), a);
    p = PRN__FV_FMADD(r2, p, dbl ? PRN__FV_ADD(r, PRN__FV_SET1(1.0f)) : PRN__FV_SUB(PRN__FV_SET1(1.0f), r));
    e = PRN__FV_SHL_I32(PRN__FV_ADD_I32(PRN__FV_SUB_I32(PRN__FV_AS_INT(t), PRN__FV_AS_INT(magic)), PRN__FV_SET1_I32(127)), 23);
    *p_out = p;
    *s_out = PRN__FV_AS_FLOAT(e);
}
PRN__FN_INLINE PRN__ATTR PRN__FV prn__fr_sigm_T(PRN__FV x) {
    PRN__FV p, s;
    prn__fr_exp_T(x, 0, &p, &s);
    return PRN__FV_DIV(PRN__FV_SET1(1.0f), PRN__FV_FMADD(p, s, PRN__FV_SET1(1.0f)));
}
PRN__FN_INLINE PRN__ATTR PRN__FV prn__fr_tanh_T(PRN__FV x) {
    PRN__FV p, s;
    prn__fr_exp_T(x, 1, &p, &s);
    return PRN__FV_DIV(PRN__FV_FMADD(p, s, PRN__FV_SET1(-1.0f)), PRN__FV_FMADD(p, s, PRN__FV_SET1(1.0f)));
}
PRN__FN PRN__ATTR void prn__fr_gates_T(int kind, int relu, size_t Hp, const float *a, const float *q, float *h, float *c) {
    size_t i;
    for (i = 0; i < Hp; i += PRN__SFX) {
        if (kind == PRN_RNN_ELMAN) {
            PRN__FV p = PRN__FV_LOADU(a + i); /* the sums */
            PRN__FV_STOREU(h + i, relu ? PRN__FV_MAX(p, PRN__FV_ZERO()) : prn__fr_tanh_T(p));
        } else if (kind == PRN_RNN_LSTM) { /* as prn__fr_gates_ref's: three divisions */
            const PRN__FV one = PRN__FV_SET1(1.0f), mone = PRN__FV_SET1(-1.0f);
            PRN__FV pi, si, pf, sf, pg, sg, po, so, pc, sc, cn;
            prn__fr_exp_T(PRN__FV_LOADU(a + i), 0, &pi, &si);
            prn__fr_exp_T(PRN__FV_LOADU(a + Hp + i), 0, &pf, &sf);
            prn__fr_exp_T(PRN__FV_LOADU(a + 2 * Hp + i), 1, &pg, &sg);
            prn__fr_exp_T(PRN__FV_LOADU(a + 3 * Hp + i), 0, &po, &so);
            cn = PRN__FV_ADD(PRN__FV_DIV(PRN__FV_LOADU(c + i), PRN__FV_FMADD(pf, sf, one)),
                             PRN__FV_DIV(PRN__FV_FMADD(pg, sg, mone), PRN__FV_MUL(PRN__FV_FMADD(pi, si, one), PRN__FV_FMADD(pg, sg, one))));
            PRN__FV_STOREU(c + i, cn);
            prn__fr_exp_T(cn, 1, &pc, &sc);
            PRN__FV_STOREU(h + i, PRN__FV_DIV(PRN__FV_FMADD(pc, sc, mone), PRN__FV_MUL(PRN__FV_FMADD(po, so, one), PRN__FV_FMADD(pc, sc, one))));
        } else {
            PRN__FV rg = prn__fr_sigm_T(PRN__FV_ADD(PRN__FV_LOADU(a + i), PRN__FV_LOADU(q + i)));
            PRN__FV zg = prn__fr_sigm_T(PRN__FV_ADD(PRN__FV_LOADU(a + Hp + i), PRN__FV_LOADU(q + Hp + i)));
            PRN__FV n = prn__fr_tanh_T(PRN__FV_FMADD(rg, PRN__FV_LOADU(q + 2 * Hp + i), PRN__FV_LOADU(a + 2 * Hp + i)));
            PRN__FV_STOREU(h + i, PRN__FV_FMADD(zg, PRN__FV_SUB(PRN__FV_LOADU(h + i), n), n));
        }
    }
}
/* The tiles' parameter list and the call that passes it on (prn__fr_tile_fn) */
#define PRN__FR_TILE_PARAMS const float *W, size_t bs, const float *bias, const float *bias2, const float *x, size_t xs, size_t nx, const float *h, size_t hs, size_t nh, float *a, float *a2, size_t as
#define PRN__FR_TILE_ARGS W, bs, bias, bias2, x, xs, nx, h, hs, nh, a, a2, as
#define PRN__FR_RV(M) M(0, 0) M(0, 1) M(0, 2) M(0, 3) M(0, 4) M(0, 5) M(0, 6) M(0, 7) \
                      M(1, 0) M(1, 1) M(1, 2) M(1, 3) M(2, 0) M(2, 1) M(3, 0) M(3, 1)
#define PRN__FR_INIT(r, v) if ((r) < NR_ && (v) < NV_) acc[r][v] = PRN__FV_LOADU(bias + PRN__SFX * (v)), acc2[r][v] = bias2 ? PRN__FV_LOADU(bias2 + PRN__SFX * (v)) : PRN__FV_ZERO();
#define PRN__FR_FMA(r, v) if ((r) < NR_ && (v) < NV_) acc[r][v] = PRN__FV_FMADD(PRN__FV_LOAD(w + (v) * bs), s[r], acc[r][v]);
#define PRN__FR_FMA2(r, v) if ((r) < NR_ && (v) < NV_) acc2[r][v] = PRN__FV_FMADD(PRN__FV_LOAD(w + (v) * bs), s[r], acc2[r][v]);
#define PRN__FR_STORE(r, v) if ((r) < NR_ && (v) < NV_) { if (a2) PRN__FV_STOREU(a + (r) * as + PRN__SFX * (v), acc[r][v]), PRN__FV_STOREU(a2 + (r) * as + PRN__SFX * (v), acc2[r][v]); else PRN__FV_STOREU(a + (r) * as + PRN__SFX * (v), PRN__FV_ADD(acc[r][v], acc2[r][v])); }
/* A tile of NR rows x NV registers of SFX columns, its accumulators in
 * registers: NV_ and NR_ are constants where it is inlined (the tiles
 * below), so the conditions on them fold away and every acc[r][v] has
 * constant indices (a register); each row's chains as prn__fr_mv_ref's.
 * PRN__FR_RV lists the (r, v) pairs, the helpers one step of one pair. */
PRN__FN_INLINE PRN__ATTR void prn__fr_tile_T(const int NV_, const int NR_, PRN__FR_TILE_PARAMS) {
    PRN__FV acc[4][8], acc2[4][8], s[4];
    const float *w = W;
    size_t k;
    PRN__FR_RV(PRN__FR_INIT)
    for (k = 0; k < nx; ++k, w += PRN__SFX) {
        s[0] = PRN__FV_SET1(x[k]);
        if (NR_ > 1) s[1] = PRN__FV_SET1(x[xs + k]);
        if (NR_ > 2) s[2] = PRN__FV_SET1(x[2 * xs + k]);
        if (NR_ > 3) s[3] = PRN__FV_SET1(x[3 * xs + k]);
        PRN__FR_RV(PRN__FR_FMA)
    }
    for (k = 0; k < nh; ++k, w += PRN__SFX) {
        s[0] = PRN__FV_SET1(h[k]);
        if (NR_ > 1) s[1] = PRN__FV_SET1(h[hs + k]);
        if (NR_ > 2) s[2] = PRN__FV_SET1(h[2 * hs + k]);
        if (NR_ > 3) s[3] = PRN__FV_SET1(h[3 * hs + k]);
        PRN__FR_RV(PRN__FR_FMA2)
    }
    PRN__FR_RV(PRN__FR_STORE)
}
/* the tiles prn__fr_tile<NV>x<NR>_<sfx> */
PRN__FN PRN__ATTR void prn__fr_tile1x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(1, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile2x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(2, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile3x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(3, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile4x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(4, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile5x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(5, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile6x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(6, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile7x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(7, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile8x1_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(8, 1, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile1x2_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(1, 2, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile2x2_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(2, 2, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile3x2_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(3, 2, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile4x2_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(4, 2, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile1x4_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(1, 4, PRN__FR_TILE_ARGS); }
PRN__FN PRN__ATTR void prn__fr_tile2x4_T(PRN__FR_TILE_PARAMS) { prn__fr_tile_T(2, 4, PRN__FR_TILE_ARGS); }
/* R rows (1, 2 or 4) in tiles of at most PRN__FV_MAXV<R> blocks of columns. */
PRN__FN PRN__ATTR void prn__fr_mv_T(const float *W, size_t nv, const float *bias, const float *bias2, const float *x, size_t xs, size_t nx,
                                    const float *h, size_t hs, size_t nh, size_t R, float *a, float *a2, size_t as) {
    static const prn__fr_tile_fn t1[8] = {prn__fr_tile1x1_T, prn__fr_tile2x1_T, prn__fr_tile3x1_T, prn__fr_tile4x1_T,
                                          prn__fr_tile5x1_T, prn__fr_tile6x1_T, prn__fr_tile7x1_T, prn__fr_tile8x1_T};
    static const prn__fr_tile_fn t2[4] = {prn__fr_tile1x2_T, prn__fr_tile2x2_T, prn__fr_tile3x2_T, prn__fr_tile4x2_T};
    static const prn__fr_tile_fn t4[2] = {prn__fr_tile1x4_T, prn__fr_tile2x4_T};
    size_t bs = (nx + nh) * PRN__SFX, maxv = R == 4 ? PRN__FV_MAXV4 : R == 2 ? PRN__FV_MAXV2 : PRN__FV_MAXV1, v0, m;
    for (v0 = 0; v0 < nv; v0 += m) {
        m = nv - v0 < maxv ? nv - v0 : maxv;
        /* the tile from its own table: indexing a ?: of arrays of different
         * lengths reads as out of bounds to UBSan's object-size check */
        const prn__fr_tile_fn fn = R == 4 ? t4[m - 1] : R == 2 ? t2[m - 1] : t1[m - 1];
        fn(W + bs * v0, bs, bias + PRN__SFX * v0, bias2 ? bias2 + PRN__SFX * v0 : NULL, x, xs, nx, h, hs, nh, a + PRN__SFX * v0,
           a2 ? a2 + PRN__SFX * v0 : NULL, as);
    }
}
#undef PRN__FR_TILE_PARAMS
#undef PRN__FR_TILE_ARGS
#undef PRN__FR_RV
#undef PRN__FR_INIT
#undef PRN__FR_FMA
#undef PRN__FR_FMA2
#undef PRN__FR_STORE
#undef prn__fr_exp_T
#undef prn__fr_sigm_T
#undef prn__fr_tanh_T
#undef prn__fr_gates_T
#undef prn__fr_tile_T
#undef prn__fr_tile1x1_T
#undef prn__fr_tile2x1_T
#undef prn__fr_tile3x1_T
#undef prn__fr_tile4x1_T
#undef prn__fr_tile5x1_T
#undef prn__fr_tile6x1_T
#undef prn__fr_tile7x1_T
#undef prn__fr_tile8x1_T
#undef prn__fr_tile1x2_T
#undef prn__fr_tile2x2_T
#undef prn__fr_tile3x2_T
#undef prn__fr_tile4x2_T
#undef prn__fr_tile1x4_T
#undef prn__fr_tile2x4_T
#undef prn__fr_mv_T
#undef PRN__FV
#undef PRN__FVI
#undef PRN__FV_SET1
#undef PRN__FV_ZERO
#undef PRN__FV_LOADU
#undef PRN__FV_LOAD
#undef PRN__FV_STOREU
#undef PRN__FV_FMADD
#undef PRN__FV_ADD
#undef PRN__FV_SUB
#undef PRN__FV_MUL
#undef PRN__FV_DIV
#undef PRN__FV_MAX
#undef PRN__FV_MIN
#undef PRN__FV_AS_INT
#undef PRN__FV_AS_FLOAT
#undef PRN__FV_ADD_I32
#undef PRN__FV_SUB_I32
#undef PRN__FV_SET1_I32
#undef PRN__FV_SHL_I32
#undef PRN__FV_MAXV1
#undef PRN__FV_MAXV2
#undef PRN__FV_MAXV4
#endif /* PRN__TPL_FR_SIMD */

/* (end of DEER and the frames' kernels) */

/* end of every template pass */
#undef PRN__T
#undef PRN__SFX
#undef PRN__ATTR
#endif /* PARRNN_IMPLEMENTATION && PARRNN_IMPLEMENTATION_DONE (templates) */

/*
------------------------------------------------------------------------------
This software is available under the MIT License.
Copyright (c) 2026 the parrnn authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
