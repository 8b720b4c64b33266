/* The reference backend's cache of freed buffers, seen from the allocator
 * hooks (prn_config.allocator) with a counting allocator:
 *   - an op repeated on arrays above 512 MiB (the cache's old fixed bound),
 *     as a training loop repeats it, takes no new allocation after its
 *     first call: its output reuses the buffer the previous call freed
 *     (before, each call got fresh pages from the system: 200k page faults
 *     and 0.15 of the memory bandwidth for a scan of 819 MB per array);
 *   - the same for a diagonal scan of a smaller size (64 MiB per array);
 *   - what the cache keeps stays within the documented bound: after every
 *     tensor is freed, the allocator's outstanding bytes are at most the
 *     larger of 512 MiB and the peak of the live buffers; after
 *     prn_context_free, none.
 * Not timed. The large cases need about 1.7 GB and skip with a message
 * where MemAvailable is short, or under valgrind (PRNT_QUICK). */
#include "parrnn.h"
#include "prn_test.h"
#include <stdint.h>
#include "prn_meminfo.h"

/* allocs and frees count the blocks of 1 MiB and more (the buffers; tensor
 * handles and the tape are small allocations of their own on every op) */
#define CA_BIG ((size_t)1 << 20)
typedef struct ca_state {
    long allocs, frees;
    size_t live_bytes, peak_bytes;
} ca_state;

#define CA_HDR 32
static void *ca_alloc(void *user, size_t size) {
    ca_state *ca = (ca_state *)user;
    unsigned char *p;
    if (size > SIZE_MAX - CA_HDR) return NULL;
    p = (unsigned char *)malloc(size + CA_HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    if (size >= CA_BIG) ca->allocs++;
    ca->live_bytes += size;
    if (ca->live_bytes > ca->peak_bytes) ca->peak_bytes = ca->live_bytes;
    return p + CA_HDR;
}
static void ca_free(void *user, void *ptr) {
    ca_state *ca = (ca_state *)user;
    size_t size;
    if (!ptr) return;
    memcpy(&size, (unsigned char *)ptr - CA_HDR, sizeof size);
    if (size >= CA_BIG) ca->frees++;
    ca->live_bytes -= size;
    free((unsigned char *)ptr - CA_HDR);
}

static prn_context *make_ctx(ca_state *ca) {
    prn_config cfg;
    prn_context *ctx = NULL;
    memset(&cfg, 0, sizeof cfg);
    memset(ca, 0, sizeof *ca);
    cfg.backend = "reference";
    cfg.allocator.alloc = ca_alloc;
    cfg.allocator.free = ca_free;
    cfg.allocator.user = ca;
    if (prn_context_create(&cfg, &ctx, NULL, 0) != PRN_OK) return NULL;
    prn_no_grad_begin(ctx);
    return ctx;
}


static int skip_large(double need) {
    const char *q = getenv("PRNT_QUICK");
    double avail = prn_mem_available();
    if (q && *q == '1') {
        PRNT_SKIP("PRNT_QUICK (valgrind): arrays of 560 MB");
        return 1;
    }
    if (avail < need) {
        PRNT_SKIP("MemAvailable %.2f GB, the test needs %.2f GB", avail * 1e-9, need * 1e-9);
        return 1;
    }
    return 0;
}

/* y = -x on 140e6 floats (560 MB, above 512 MiB), four times. */
static void test_repeat_large_unary(void) {
    ca_state ca;
    prn_context *ctx;
    prn_tensor *x = NULL, *y = NULL;
    size_t shape[1] = {140000000};
    long allocs_after_first = 0, frees_after_first = 0;
    int i;
    if (skip_large(2.5e9)) return;
    ctx = make_ctx(&ca);
    PRNT_CHECK(ctx != NULL, "context");
    if (!ctx) return;
    PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 1, shape, &x));
    for (i = 0; i < 4 && x; ++i) {
        PRNT_OK(ctx, prn_neg(ctx, x, &y));
        prn_tensor_free(y);
        y = NULL;
        if (i == 0) {
            allocs_after_first = ca.allocs;
            frees_after_first = ca.frees;
        }
    }
    PRNT_CHECK(ca.allocs == allocs_after_first, "calls 2-4 allocated %ld buffers from the allocator (want 0)",
               ca.allocs - allocs_after_first);
    PRNT_CHECK(ca.frees == frees_after_first, "calls 2-4 freed %ld blocks to the allocator (want 0)",
               ca.frees - frees_after_first);
    prn_tensor_free(x);
    /* everything freed: the cache holds at most max(512 MiB, peak live) */
    PRNT_CHECK(ca.live_bytes <= (ca.peak_bytes > ((size_t)512 << 20) ? ca.peak_bytes : ((size_t)512 << 20)) +
                                    ((size_t)1 << 20),
               "%lu bytes outstanding after freeing every tensor (peak %lu)", (unsigned long)ca.live_bytes,
               (unsigned long)ca.peak_bytes);
    prn_context_free(ctx);
    PRNT_CHECK(ca.live_bytes == 0, "%lu bytes outstanding after prn_context_free", (unsigned long)ca.live_bytes);
}

/* Buffers of changing sizes above 512 MiB: the cache never holds more than
 * the peak of the live buffers (one 600 MB buffer live at a time here). */
static void test_bound_follows_peak(void) {
    ca_state ca;
    prn_context *ctx;
    size_t sizes[3] = {140000000, 150000000, 160000000};
    int i;
    if (skip_large(2.5e9)) return;
    ctx = make_ctx(&ca);
    PRNT_CHECK(ctx != NULL, "context");
    if (!ctx) return;
    for (i = 0; i < 3; ++i) {
        prn_tensor *t = NULL;
        PRNT_OK(ctx, prn_tensor_create(ctx, PRN_F32, 1, &sizes[i], &t));
        prn_tensor_free(t);
        /* live: none; cached: at most the peak (the largest one so far) */
        PRNT_CHECK(ca.live_bytes <= sizes[i] * sizeof(float) + ((size_t)1 << 20),
                   "after size %d: %lu bytes outstanding, the largest buffer was %lu", i,
                   (unsigned long)ca.live_bytes, (unsigned long)(sizes[i] * sizeof(float)));
    }
    prn_context_free(ctx);
    PRNT_CHECK(ca.live_bytes == 0, "%lu bytes outstanding after prn_context_free", (unsigned long)ca.live_bytes);
}

/* A scan of 16 x 1024 x 1024 f32 (64 MiB per array), repeated: no
 * allocation after the first call. */
static void test_repeat_scan(void) {
    ca_state ca;
    prn_context *ctx = make_ctx(&ca);
    prn_tensor *a = NULL, *b = NULL, *y = NULL;
    size_t shape[3] = {16, 1024, 1024};
    long allocs_after_first = 0;
    int i;
    if (getenv("PRNT_QUICK") && getenv("PRNT_QUICK")[0] == '1') shape[1] = 64;
    PRNT_CHECK(ctx != NULL, "context");
    if (!ctx) return;
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F32, 3, shape, 0.9, 0.99, &a));
    PRNT_OK(ctx, prn_tensor_uniform(ctx, PRN_F32, 3, shape, -1.0, 1.0, &b));
    for (i = 0; i < 3 && a && b; ++i) {
        PRNT_OK(ctx, prn_scan_diag(ctx, a, b, NULL, 0, PRN_SCAN_AUTO, &y));
        prn_tensor_free(y);
        y = NULL;
        if (i == 0) allocs_after_first = ca.allocs;
    }
    PRNT_CHECK(ca.allocs == allocs_after_first, "calls 2-3 allocated %ld buffers from the allocator (want 0)",
               ca.allocs - allocs_after_first);
    prn_tensor_free(a);
    prn_tensor_free(b);
    prn_context_free(ctx);
    PRNT_CHECK(ca.live_bytes == 0, "%lu bytes outstanding after prn_context_free", (unsigned long)ca.live_bytes);
}

int main(void) {
    PRNT_RUN(test_repeat_scan);
    PRNT_RUN(test_repeat_large_unary);
    PRNT_RUN(test_bound_follows_peak);
    return prnt_summary();
}
