/* cuda_emu.cpp - the CUDA emulator's runtime (tests/cuda_emu/README.md):
 * devices, streams, memory, copies, kernel launches and the cuBLAS GEMMs
 * that parrnn's CUDA backend uses, carried out on the host so that the
 * backend's host code and its kernels run -- and are checked against the
 * reference by the conformance test -- on machines without a GPU.
 *
 * What it checks beyond running the code: launch configurations (block
 * and grid limits), barriers reached by only some threads of a block,
 * copies and GEMM operands that leave their device allocation, writes
 * past either end of an allocation (guard bytes, checked after every
 * kernel and at every free), frees of what was never allocated, and
 * allocations still live at exit. Fresh allocations hold NaN bytes, as
 * device memory holds garbage. A fault prints one line on stderr and
 * becomes a sticky error, as a kernel fault is on a GPU.
 *
 * Environment, read at each call: PRN_CUDA_EMU_DEVICES=0 (no device),
 * PRN_CUDA_EMU_NO_POOLS=1 (no memory pools: cudaMalloc/cudaFree),
 * PRN_CUDA_EMU_FAIL_ALLOC=n (the n-th device allocation of the process
 * fails; with PRN_CUDA_EMU_FAIL_MODE=from, every one from the n-th on),
 * PRN_CUDA_EMU_ORDER=reverse (a block's threads run in reverse order
 * between barriers), PRN_CUDA_EMU_SMS=n (multiprocessors reported; 2),
 * PRN_CUDA_EMU_RESIDENT=n (n blocks at a time, each on a
 * host thread, yielding at their barriers: blocks that wait for others,
 * as a look-back scan does, meet them still running). */
#include "cuda_runtime.h"
#include "cublas_v2.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace {

/* ---- errors ---- */
std::mutex g_lock; /* the process-wide state below, as the real runtime's */
cudaError_t g_sticky = cudaSuccess;
thread_local cudaError_t t_last = cudaSuccess;

cudaError_t ret(cudaError_t e) {
    if (e != cudaSuccess) t_last = e;
    return e;
}
cudaError_t sticky() {
    std::lock_guard<std::mutex> g(g_lock);
    return g_sticky;
}
void fault(cudaError_t e, const char *msg, const char *detail) {
    std::lock_guard<std::mutex> g(g_lock);
    std::fprintf(stderr, "cuda emulator: %s%s%s\n", msg, detail ? ": " : "", detail ? detail : "");
    if (g_sticky == cudaSuccess) g_sticky = e;
}

long env_long(const char *name, long dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtol(v, NULL, 10) : dflt;
}

/* ---- memory ---- */
const size_t GUARD = 64;        /* bytes before and after each allocation */
const unsigned char GUARD_BYTE = 0xA5;
const size_t LIMIT = (size_t)16 << 30; /* the emulated device's memory */

struct allocation {
    size_t bytes;
    cudaMemPool_t pool;
};
std::map<const char *, allocation> g_allocs; /* by user pointer */
size_t g_live_bytes = 0;
long g_alloc_count = 0;

/* At exit: live allocations, or a fault that nobody reported (one found
 * while tearing down, say), fail the program. */
struct report_at_exit {
    ~report_at_exit() {
        bool bad = false;
        if (!g_allocs.empty()) {
            std::fprintf(stderr, "cuda emulator: %lu device allocation(s), %lu bytes, never freed\n",
                         (unsigned long)g_allocs.size(), (unsigned long)g_live_bytes);
            bad = true;
        }
        if (g_sticky != cudaSuccess) {
            std::fprintf(stderr, "cuda emulator: the program ran into a fault (%d; see above)\n", (int)g_sticky);
            bad = true;
        }
        if (bad) {
            std::fflush(NULL);
            std::_Exit(3);
        }
    }
} g_report_at_exit;

bool guards_ok(const char *p, size_t bytes) {
    for (size_t i = 0; i < GUARD; ++i)
        if ((unsigned char)p[-1 - (long)i] != GUARD_BYTE || (unsigned char)p[bytes + i] != GUARD_BYTE) return false;
    return true;
}

/* The allocation holding [p, p + bytes), or end(); caller holds g_lock. */
std::map<const char *, allocation>::iterator find_range(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    auto it = g_allocs.upper_bound(c);
    if (it == g_allocs.begin()) return g_allocs.end();
    --it;
    if (c < it->first || bytes > it->second.bytes || (size_t)(c - it->first) > it->second.bytes - bytes)
        return g_allocs.end();
    return it;
}
bool in_device(const void *p, size_t bytes) {
    std::lock_guard<std::mutex> g(g_lock);
    return find_range(p, bytes) != g_allocs.end();
}

cudaError_t device_alloc(void **p, size_t bytes, cudaMemPool_t pool) {
    if (!p) return ret(cudaErrorInvalidValue);
    *p = NULL;
    if (cudaError_t s = sticky()) return ret(s);
    std::lock_guard<std::mutex> g(g_lock);
    const long fail_at = env_long("PRN_CUDA_EMU_FAIL_ALLOC", 0);
    const char *mode = std::getenv("PRN_CUDA_EMU_FAIL_MODE");
    ++g_alloc_count;
    if ((fail_at > 0 && (g_alloc_count == fail_at || (mode && !std::strcmp(mode, "from") && g_alloc_count > fail_at))) ||
        bytes > LIMIT - g_live_bytes)
        return ret(cudaErrorMemoryAllocation);
    size_t n = bytes ? bytes : 1;
    char *raw = (char *)std::malloc(n + 2 * GUARD);
    if (!raw) return ret(cudaErrorMemoryAllocation);
    std::memset(raw, GUARD_BYTE, GUARD);
    std::memset(raw + GUARD, 0xFF, n); /* NaN in f32 and f64: unwritten memory shows */
    std::memset(raw + GUARD + n, GUARD_BYTE, GUARD);
    g_allocs[raw + GUARD] = allocation{n, pool};
    g_live_bytes += n;
    *p = raw + GUARD;
    return cudaSuccess;
}

cudaError_t device_free(void *p) {
    if (!p) return cudaSuccess;
    std::unique_lock<std::mutex> g(g_lock);
    auto it = g_allocs.find((const char *)p);
    if (it == g_allocs.end()) {
        g.unlock();
        fault(cudaErrorInvalidDevicePointer, "free of a pointer that is not a live device allocation", NULL);
        return ret(cudaErrorInvalidDevicePointer);
    }
    bool ok = guards_ok(it->first, it->second.bytes);
    size_t bytes = it->second.bytes;
    g_live_bytes -= bytes;
    g_allocs.erase(it);
    g.unlock();
    std::free((char *)p - GUARD);
    if (!ok) {
        char d[64];
        std::snprintf(d, sizeof d, "allocation of %lu bytes", (unsigned long)bytes);
        fault(cudaErrorIllegalAddress, "a write before or past the end of a device allocation, found at its free", d);
        return ret(cudaErrorIllegalAddress);
    }
    return cudaSuccess;
}

/* After a kernel: every live allocation's guards intact? */
void check_guards(const char *what) {
    std::unique_lock<std::mutex> g(g_lock);
    for (auto &a : g_allocs)
        if (!guards_ok(a.first, a.second.bytes)) {
            char d[96];
            std::snprintf(d, sizeof d, "%s, allocation of %lu bytes", what, (unsigned long)a.second.bytes);
            g.unlock();
            fault(cudaErrorIllegalAddress, "a kernel wrote before or past the end of a device allocation", d);
            return;
        }
}

/* ---- streams, pools, handles ---- */
std::set<cudaStream_t> g_streams;
std::set<cudaMemPool_t> g_pools;
thread_local int t_device = 0;

bool stream_ok(cudaStream_t s) {
    std::lock_guard<std::mutex> g(g_lock);
    return s == NULL || g_streams.count(s) != 0;
}

/* ---- kernels: a block's threads are fibers ----
 * On x86-64 a fiber switch is the few instructions below (callee-saved
 * registers and the stack pointer); ucontext's swapcontext makes a system
 * call per switch, 100x slower, and serves other systems. The switch
 * returns into a fiber by `ret`, which a shadow stack (CET) would refuse:
 * cuda.mk compiles this file with -fcf-protection=none where the compiler
 * knows the option, so the program is not marked for one. */
#if defined(__x86_64__) && defined(__ELF__) && !defined(PRN_CUDA_EMU_UCONTEXT)
} /* namespace */
extern "C" void prn_emu_switch(void **save, void *load);
__asm__(".text\n"
        ".globl prn_emu_switch\n"
        ".type prn_emu_switch, @function\n"
        "prn_emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size prn_emu_switch, .-prn_emu_switch\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");
namespace {
struct context {
    void *sp;
};
void ctx_switch(context *save, context *load) { prn_emu_switch(&save->sp, load->sp); }
/* A new context starts in entry: its stack holds six zero registers, then
 * entry as the return address, then a zero return address for entry, so
 * that entry starts with the stack aligned as after a call. */
void ctx_make(context *c, char *stack, size_t size, void (*entry)(void)) {
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;
    *--sp = (void *)entry;
    for (int i = 0; i < 6; ++i) *--sp = NULL;
    c->sp = sp;
}
#else
struct context {
    ucontext_t uc;
};
void ctx_switch(context *save, context *load) { swapcontext(&save->uc, &load->uc); }
void ctx_make(context *c, char *stack, size_t size, void (*entry)(void)) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, entry, 0);
}
#endif

enum { F_READY, F_BARRIER, F_DONE };
const size_t FIBER_STACK = 256 * 1024, GUARD_PAGE = 64 * 1024; /* 64 KiB: any page size up to it */

struct fiber {
    context ctx;
    char *stack;
    int state;
};

struct scheduler {
    context main;
    std::vector<fiber> f;
    size_t cur = 0;
    const std::function<void()> *body = NULL;
    bool plain = false;   /* threads run as plain calls, one after another */
    bool synced = false;  /* a thread of this launch reached a barrier */
    bool reverse = false; /* run threads in reverse order between barriers */
    long resident = 1;    /* blocks that run at once (each on its own host thread) */
    long spins = 0;       /* __nanosleep calls since the block's last barrier or start */
    std::chrono::steady_clock::time_point spin_start;
    ~scheduler() {
        for (auto &x : f) munmap(x.stack - GUARD_PAGE, FIBER_STACK + GUARD_PAGE);
    }
};
thread_local scheduler S;
std::set<void (*)(void)> g_plain; /* kernels seen to run a whole launch without a barrier */
std::map<void (*)(void), int> g_dyn_max; /* cudaFuncAttributeMaxDynamicSharedMemorySize by kernel */
thread_local std::vector<unsigned char> t_dyn; /* the running block's dynamic shared memory */
const size_t SMEM_OPTIN = 227 * 1024, SMEM_SM = 228 * 1024; /* sm_90's */

void fiber_main(void) {
    for (;;) { /* one run of the body per block; the fiber is kept for the next */
        (*S.body)();
        fiber &me = S.f[S.cur];
        me.state = F_DONE;
        ctx_switch(&me.ctx, &S.main);
    }
}

/* A fiber's stack, with an inaccessible page below it: an overflow faults
 * rather than overwriting the heap. */
char *stack_alloc(void) {
    void *p = mmap(NULL, FIBER_STACK + GUARD_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (mprotect(p, GUARD_PAGE, PROT_NONE) != 0) {
        munmap(p, FIBER_STACK + GUARD_PAGE);
        return NULL;
    }
    return (char *)p + GUARD_PAGE;
}

bool make_fibers(size_t n) {
    S.f.reserve(1024); /* fibers never move: their contexts are saved in place */
    while (S.f.size() < n) {
        fiber x;
        x.stack = stack_alloc();
        if (!x.stack) return false;
        x.state = F_DONE;
        S.f.push_back(x);
        ctx_make(&S.f.back().ctx, S.f.back().stack, FIBER_STACK, fiber_main);
    }
    return true;
}

void set_thread(size_t i) {
    threadIdx.x = (unsigned)(i % blockDim.x);
    threadIdx.y = (unsigned)(i / blockDim.x % blockDim.y);
    threadIdx.z = (unsigned)(i / blockDim.x / blockDim.y);
}

/* One block with fibers; false when its threads split between a barrier
 * and their end. */
bool run_block_fibers(size_t n) {
    bool diverged = false;
    for (size_t i = 0; i < n; ++i) S.f[i].state = F_READY;
    for (;;) {
        size_t waiting = 0, done = 0;
        for (size_t r = 0; r < n; ++r) {
            size_t i = S.reverse ? n - 1 - r : r;
            if (S.f[i].state == F_DONE) continue;
            S.cur = i;
            set_thread(i);
            ctx_switch(&S.main, &S.f[i].ctx);
        }
        for (size_t i = 0; i < n; ++i) {
            if (S.f[i].state == F_BARRIER) ++waiting;
            else ++done;
        }
        if (!waiting) break;
        if (done) diverged = true; /* run the waiting ones on, so every fiber ends */
        if (S.resident > 1) std::this_thread::yield(); /* let the other blocks run between this one's barriers */
        for (size_t i = 0; i < n; ++i)
            if (S.f[i].state == F_BARRIER) S.f[i].state = F_READY;
    }
    return !diverged;
}

} /* namespace */

void __syncthreads(void) {
    if (S.plain) { /* cannot happen unless a kernel's barriers depend on its data */
        fault(cudaErrorLaunchFailure, "a kernel run without fibers (it had reached no barrier before) reached one", NULL);
        return;
    }
    S.synced = true;
    S.spins = 0;
    fiber &me = S.f[S.cur];
    me.state = F_BARRIER;
    ctx_switch(&me.ctx, &S.main);
}

/* A spinning thread waits for another block. Fibers switch only at
 * barriers, so it can only be one running on another host thread: with one
 * block at a time, or after a minute of waiting, the wait cannot end, and
 * since a kernel cannot be unwound the program stops. */
void __nanosleep(unsigned ns) {
    (void)ns;
    if (S.spins++ == 0) S.spin_start = std::chrono::steady_clock::now();
    const bool alone = S.plain || S.resident <= 1; /* plain: threads, too, run one after another */
    if (alone ? S.spins > 1000
              : (S.spins & 1023) == 0 && std::chrono::steady_clock::now() - S.spin_start > std::chrono::seconds(60)) {
        fault(cudaErrorLaunchFailure,
              alone ? "a thread waits for another block, but blocks run one at a time (PRN_CUDA_EMU_RESIDENT=n runs n)"
                    : "a thread has waited a minute for other blocks: no forward progress",
              NULL);
        std::fflush(NULL);
        std::_Exit(3);
    }
    if (!alone) std::this_thread::yield();
}

namespace prn_emu {
unsigned char *dyn_shared(void) { return t_dyn.data(); }
cudaError_t set_max_dyn_shared(void (*key)(void), int bytes) {
    if (bytes < 0 || (size_t)bytes > SMEM_OPTIN) return ret(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> g(g_lock);
    g_dyn_max[key] = bytes;
    return cudaSuccess;
}
cudaError_t occupancy(int *n, void (*key)(void), int threads, size_t dyn) {
    (void)key;
    if (!n || threads <= 0 || threads > 1024) return ret(cudaErrorInvalidValue);
    const size_t by_smem = dyn ? SMEM_SM / (dyn + 1024) : 32; /* 1 KiB reserved per block, as on sm_80/90 */
    size_t by_threads = 2048 / (size_t)threads;
    *n = (int)std::min(std::min(by_smem, by_threads), (size_t)32);
    return cudaSuccess;
}
cudaError_t run(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, void (*key)(void),
                const std::function<void()> &body) {
    const size_t nt = (size_t)block.x * block.y * block.z;
    if (cudaError_t s = sticky()) return ret(s);
    if (nt == 0 || nt > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu ||
        grid.y > 65535 || grid.z > 65535 || shared > SMEM_OPTIN)
        return ret(cudaErrorInvalidConfiguration);
    if (shared > 48 * 1024) { /* beyond 48 KiB only with the kernel's opt-in */
        std::lock_guard<std::mutex> g(g_lock);
        auto it = g_dyn_max.find(key);
        if (it == g_dyn_max.end() || (size_t)it->second < shared) {
            fault(cudaErrorInvalidConfiguration, "dynamic shared memory above 48 KiB without the kernel's opt-in", NULL);
            return ret(cudaErrorInvalidConfiguration);
        }
    }
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    if (S.body) { /* a launch from inside a kernel */
        fault(cudaErrorLaunchFailure, "a launch from device code is not emulated", NULL);
        return ret(cudaErrorLaunchFailure);
    }
    const char *order = std::getenv("PRN_CUDA_EMU_ORDER");
    const bool reverse = order && !std::strcmp(order, "reverse");
    bool plain;
    {
        std::lock_guard<std::mutex> g(g_lock);
        plain = !reverse && g_plain.count(key) != 0; /* plain calls run in index order only */
    }
    const long resident = env_long("PRN_CUDA_EMU_RESIDENT", 1);
    const size_t nblocks = (size_t)grid.x * grid.y * grid.z;
    std::atomic<size_t> next(0);
    std::atomic<bool> diverged(false), synced(false), nomem(false);
    /* runs blocks on this host thread, taking the next index until none is left */
    auto worker = [&](long res) {
        if (!plain && !make_fibers(nt)) {
            nomem = true;
            return;
        }
        S.body = &body;
        S.plain = plain;
        S.synced = false;
        S.reverse = reverse;
        S.resident = res;
        gridDim = grid;
        blockDim = block;
        t_dyn.assign(shared, 0xff); /* NaN bytes: reads of what no thread wrote show */
        for (size_t bi; (bi = next++) < nblocks;) {
            S.spins = 0;
            if (shared) std::memset(t_dyn.data(), 0xff, shared);
            blockIdx.x = (unsigned)(bi % grid.x);
            blockIdx.y = (unsigned)(bi / grid.x % grid.y);
            blockIdx.z = (unsigned)(bi / grid.x / grid.y);
            if (plain) {
                for (size_t i = 0; i < nt; ++i) {
                    set_thread(i);
                    body();
                }
            } else if (!run_block_fibers(nt)) {
                diverged = true;
            }
        }
        if (S.synced) synced = true;
        S.body = NULL;
        S.plain = false;
    };
    if (!plain && resident > 1 && nblocks > 1) { /* n blocks at a time, each on a host thread */
        std::vector<std::thread> ws;
        for (long r = 0; r < resident && (size_t)r < nblocks; ++r) ws.emplace_back(worker, resident);
        for (auto &w : ws) w.join();
    } else {
        worker(1);
    }
    if (nomem) return ret(cudaErrorMemoryAllocation);
    if (!plain && !synced) {
        std::lock_guard<std::mutex> g(g_lock);
        g_plain.insert(key);
    }
    if (diverged)
        fault(cudaErrorLaunchFailure, "some threads of a block ended while others waited at __syncthreads", NULL);
    check_guards("after a kernel");
    return sticky();
}
} /* namespace prn_emu */

/* ------------------------------------------------------------------------
 * The runtime API
 * ---------------------------------------------------------------------- */
extern "C" {

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
#define PRN_EMU_NAME(x) \
    case x: return #x;
        PRN_EMU_NAME(cudaSuccess)
        PRN_EMU_NAME(cudaErrorInvalidValue)
        PRN_EMU_NAME(cudaErrorMemoryAllocation)
        PRN_EMU_NAME(cudaErrorInitializationError)
        PRN_EMU_NAME(cudaErrorInvalidConfiguration)
        PRN_EMU_NAME(cudaErrorInvalidDevicePointer)
        PRN_EMU_NAME(cudaErrorInvalidMemcpyDirection)
        PRN_EMU_NAME(cudaErrorStubLibrary)
        PRN_EMU_NAME(cudaErrorInsufficientDriver)
        PRN_EMU_NAME(cudaErrorDevicesUnavailable)
        PRN_EMU_NAME(cudaErrorNoDevice)
        PRN_EMU_NAME(cudaErrorInvalidDevice)
        PRN_EMU_NAME(cudaErrorNoKernelImageForDevice)
        PRN_EMU_NAME(cudaErrorUnsupportedPtxVersion)
        PRN_EMU_NAME(cudaErrorInvalidResourceHandle)
        PRN_EMU_NAME(cudaErrorIllegalAddress)
        PRN_EMU_NAME(cudaErrorLaunchFailure)
        PRN_EMU_NAME(cudaErrorCooperativeLaunchTooLarge)
        PRN_EMU_NAME(cudaErrorSystemDriverMismatch)
        PRN_EMU_NAME(cudaErrorCompatNotSupportedOnDevice)
#undef PRN_EMU_NAME
    }
    return "cudaErrorUnknown";
}
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (emulator: PRN_CUDA_EMU_DEVICES=0)";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    default: return "error (see cudaGetErrorName)";
    }
}
cudaError_t cudaGetLastError(void) {
    cudaError_t e = t_last, s = sticky();
    t_last = cudaSuccess;
    return s ? s : e;
}
cudaError_t cudaPeekAtLastError(void) {
    cudaError_t s = sticky();
    return s ? s : t_last;
}

static int device_count(void) { return (int)env_long("PRN_CUDA_EMU_DEVICES", 1); }

cudaError_t cudaGetDeviceCount(int *count) {
    if (!count) return ret(cudaErrorInvalidValue);
    *count = 0;
    if (device_count() <= 0) return ret(cudaErrorNoDevice);
    *count = device_count();
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device) {
    if (!device) return ret(cudaErrorInvalidValue);
    *device = t_device;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= device_count()) return ret(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    if (!prop) return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count()) return ret(cudaErrorInvalidDevice);
    std::memset(prop, 0, sizeof *prop);
    std::snprintf(prop->name, sizeof prop->name, "parrnn CUDA emulator (host)");
    prop->totalGlobalMem = LIMIT;
    prop->major = 9;
    prop->minor = 0;
    /* small: the scans cut time into chunks at small sizes; more, to size
     * grids of kernels that keep a block per tile slot (the look-back) or
     * spread over many multiprocessors (the persistent layers) */
    prop->multiProcessorCount = (int)std::min(std::max(env_long("PRN_CUDA_EMU_SMS", 2), 1L), 1024L);
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->sharedMemPerBlockOptin = SMEM_OPTIN;
    prop->sharedMemPerMultiprocessor = SMEM_SM;
    return cudaSuccess;
}
long prn_cuda_emu_resident(void) { return std::max(env_long("PRN_CUDA_EMU_RESIDENT", 1), 1L); }
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    if (!value) return ret(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count()) return ret(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrMemoryPoolsSupported: *value = env_long("PRN_CUDA_EMU_NO_POOLS", 0) ? 0 : 1; return cudaSuccess;
    }
    return ret(cudaErrorInvalidValue);
}
cudaError_t cudaDeviceSynchronize(void) { return ret(sticky()); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
    if (!stream || flags > 1) return ret(cudaErrorInvalidValue);
    if (cudaError_t s = sticky()) return ret(s);
    cudaStream_t st = (cudaStream_t)std::malloc(1);
    if (!st) return ret(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> g(g_lock);
    g_streams.insert(st);
    *stream = st;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    std::unique_lock<std::mutex> g(g_lock);
    if (!stream || !g_streams.erase(stream)) return ret(cudaErrorInvalidResourceHandle);
    g.unlock();
    std::free(stream);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    return ret(sticky()); /* everything ran when it was queued */
}

cudaError_t cudaMalloc(void **p, size_t bytes) { return device_alloc(p, bytes, NULL); }
cudaError_t cudaFree(void *p) { return device_free(p); }

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props) {
    if (!pool || !props || props->allocType != cudaMemAllocationTypePinned ||
        props->location.type != cudaMemLocationTypeDevice || props->location.id < 0 ||
        props->location.id >= device_count())
        return ret(cudaErrorInvalidValue);
    cudaMemPool_t p = (cudaMemPool_t)std::malloc(1);
    if (!p) return ret(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> g(g_lock);
    g_pools.insert(p);
    *pool = p;
    return cudaSuccess;
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
    std::unique_lock<std::mutex> g(g_lock);
    if (!pool || !g_pools.erase(pool)) return ret(cudaErrorInvalidValue);
    g.unlock();
    std::free(pool); /* blocks still allocated from it stay valid until freed */
    return cudaSuccess;
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
    (void)keep;
    std::lock_guard<std::mutex> g(g_lock);
    return g_pools.count(pool) ? cudaSuccess : ret(cudaErrorInvalidValue);
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_pools.count(pool) || !value || attr != cudaMemPoolAttrReleaseThreshold) return ret(cudaErrorInvalidValue);
    return cudaSuccess;
}
cudaError_t cudaMallocFromPoolAsync(void **p, size_t bytes, cudaMemPool_t pool, cudaStream_t stream) {
    {
        std::lock_guard<std::mutex> g(g_lock);
        if (!g_pools.count(pool)) return ret(cudaErrorInvalidValue);
    }
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    return device_alloc(p, bytes, pool);
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t stream) {
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    return device_free(p);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind) {
    return cudaMemcpyAsync(dst, src, bytes, kind, NULL);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    if (cudaError_t s = sticky()) return ret(s);
    if (!bytes) return cudaSuccess;
    if (!dst || !src) return ret(cudaErrorInvalidValue);
    bool dd = in_device(dst, bytes), sd = in_device(src, bytes), ok;
    switch (kind) {
    case cudaMemcpyHostToDevice: ok = dd; break;
    case cudaMemcpyDeviceToHost: ok = sd; break;
    case cudaMemcpyDeviceToDevice: ok = dd && sd; break;
    case cudaMemcpyHostToHost: ok = true; break;
    default: return ret(cudaErrorInvalidMemcpyDirection);
    }
    if (!ok) {
        fault(cudaErrorInvalidValue, "cudaMemcpy: a device range that is not inside one live device allocation", NULL);
        return ret(cudaErrorInvalidValue);
    }
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream) {
    if (!stream_ok(stream)) return ret(cudaErrorInvalidResourceHandle);
    if (cudaError_t s = sticky()) return ret(s);
    if (!bytes) return cudaSuccess;
    if (!in_device(dst, bytes)) {
        fault(cudaErrorInvalidValue, "cudaMemset: a range that is not inside one live device allocation", NULL);
        return ret(cudaErrorInvalidValue);
    }
    std::memset(dst, value, bytes);
    return cudaSuccess;
}

size_t prn_cuda_emu_live_allocations(void) {
    std::lock_guard<std::mutex> g(g_lock);
    return g_allocs.size();
}
long prn_cuda_emu_allocation_count(void) {
    std::lock_guard<std::mutex> g(g_lock);
    return g_alloc_count;
}

} /* extern "C" */

/* ------------------------------------------------------------------------
 * cuBLAS
 * ---------------------------------------------------------------------- */
struct prn_emu_blas {
    cudaStream_t stream;
};

namespace {
std::set<cublasHandle_t> g_handles;

bool handle_ok(cublasHandle_t h) {
    std::lock_guard<std::mutex> g(g_lock);
    return g_handles.count(h) != 0;
}

/* Is the strided batch of rows x cols column-major matrices (leading
 * dimension ld, stride s) inside one device allocation? */
bool operand_ok(const void *p, size_t es, int64_t rows, int64_t cols, int64_t ld, long long s, int64_t batch) {
    if (rows == 0 || cols == 0 || batch == 0) return true;
    if (!p || s < 0) return false;
    size_t last = (size_t)(batch - 1) * (size_t)s + (size_t)(cols - 1) * (size_t)ld + (size_t)(rows - 1);
    return in_device(p, (last + 1) * es);
}

template <typename T>
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                    const T *alpha, const T *A, int64_t lda, long long sa, const T *B, int64_t ldb, long long sb,
                    const T *beta, T *C, int64_t ldc, long long sc, int64_t batch) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T) || m < 0 || n < 0 ||
        k < 0 || batch < 0 || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    const int64_t ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
    const int64_t br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
    if (lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    if (sticky()) return CUBLAS_STATUS_EXECUTION_FAILED;
    const bool use_ab = k > 0 && *alpha != (T)0;
    if ((use_ab && (!operand_ok(A, sizeof(T), ar, ac, lda, sa, batch) ||
                    !operand_ok(B, sizeof(T), br, bc, ldb, sb, batch))) ||
        !operand_ok(C, sizeof(T), m, n, ldc, sc, batch)) {
        fault(cudaErrorIllegalAddress, "cublas gemm: an operand reaches outside its device allocation", NULL);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    for (int64_t q = 0; q < batch; ++q) {
        const T *Aq = A + q * sa, *Bq = B + q * sb;
        T *Cq = C + q * sc;
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < m; ++i) {
                T acc = 0;
                if (use_ab)
                    for (int64_t l = 0; l < k; ++l) {
                        const T a = ta == CUBLAS_OP_N ? Aq[i + l * lda] : Aq[l + i * lda];
                        const T b = tb == CUBLAS_OP_N ? Bq[l + j * ldb] : Bq[j + l * ldb];
                        acc += a * b;
                    }
                T &c = Cq[i + j * ldc];
                /* beta == 0: C is not read (it may hold NaN), as cuBLAS */
                c = *beta == (T)0 ? *alpha * acc : *alpha * acc + *beta * c;
            }
    }
    check_guards("after a cuBLAS GEMM");
    return sticky() ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS;
}
} /* namespace */

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasHandle_t h = (cublasHandle_t)std::malloc(sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->stream = NULL;
    std::lock_guard<std::mutex> g(g_lock);
    g_handles.insert(h);
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    std::unique_lock<std::mutex> g(g_lock);
    if (!g_handles.erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    g.unlock();
    std::free(handle);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!stream_ok(stream)) return CUBLAS_STATUS_INVALID_VALUE;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}
const char *cublasGetStatusString(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS ? "success" : "failure (see cublasGetStatusName)";
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch) {
    return gemm<float>(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch) {
    return gemm<double>(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                                            int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda,
                                            long long sa, const float *B, int64_t ldb, long long sb,
                                            const float *beta, float *C, int64_t ldc, long long sc, int64_t batch) {
    return gemm<float>(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                                            int64_t n, int64_t k, const double *alpha, const double *A, int64_t lda,
                                            long long sa, const double *B, int64_t ldb, long long sb,
                                            const double *beta, double *C, int64_t ldc, long long sc, int64_t batch) {
    return gemm<double>(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
}

} /* extern "C" */
