# cuda.mk - the CUDA backend's build: `make -f Makefile -f cuda.mk cuda`,
# or `include cuda.mk` at the end of the Makefile and `make cuda`.
#
#   cuda       kernels_cuda/*.cu (nvcc, sm_80 + sm_90) and the host side of
#              backends/parrnn_cuda.h into build-cuda/libparrnn_cuda.a, then
#              every test, example and benchmark into build-cuda/, built
#              with -DPARRNN_WITH_CUDA ("cuda" becomes a backend name)
#   test-cuda  the suite on the default backend, then again with
#              PARRNN_BACKEND=cuda where build-cuda/tests/backend_probe can
#              create a CUDA context (otherwise that pass counts as skipped)
#
# Options:  CUDA_HOME=/path   the toolkit (default /usr/local/cuda)
#           CUDA_GENCODE=...  the architectures nvcc builds code for
#
# Uses the Makefile's CFLAGS_ALL, LDLIBS_ALL, TESTS, EXAMPLES and BENCHES.
# The OpenCL backend is left out of these programs (its flags are filtered
# out): one device backend per build keeps the link line simple.
CUDA_HOME    ?= /usr/local/cuda
NVCC         ?= $(CUDA_HOME)/bin/nvcc
CUDA_BUILD   ?= build-cuda
# SASS for sm_80 and sm_90, plus sm_90 PTX so newer GPUs can JIT it
CUDA_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS   ?= -O3 -std=c++14 -I. $(CUDA_GENCODE) -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings

CUDA_CFLAGS  = $(filter-out -DPARRNN_WITH_OPENCL,$(CFLAGS_ALL)) -DPARRNN_WITH_CUDA -I$(CUDA_HOME)/include
CUDA_LIB     = $(CUDA_BUILD)/libparrnn_cuda.a
CUDART_LIB   ?= -lcudart
ifeq ($(GPU_RPATH),1)
CUDA_RPATH    = -Wl,-rpath,'$$ORIGIN/../lib'
endif
CUDA_LDLIBS  = $(CUDA_LIB) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 $(CUDA_RPATH) -lcublas $(CUDART_LIB) -lstdc++ \
               $(filter-out -lclblast -lOpenCL,$(LDLIBS_ALL))

CUDA_KERNELS = $(sort $(wildcard kernels_cuda/*.cu))
# the kernels' objects depend on NVCC_FLAGS alone, not on the host flags:
# the GPU bundle shares build-cuda's (CUDA_KDIR)
CUDA_KDIR   ?= $(CUDA_BUILD)/kernels
CUDA_OBJS    = $(patsubst kernels_cuda/%.cu,$(CUDA_KDIR)/%.o,$(CUDA_KERNELS)) $(CUDA_BUILD)/parrnn_cuda.o
CUDA_DEPS    = parrnn.h kernels_cuda/prn_cuda_launch.h

CUDA_TESTS        = $(filter-out test_eig_lapack test_scan_sse2 test_scan_plain test_conformance_sse2 test_gemm_f32_noblas,$(TESTS))  # host-only variants: not rebuilt
CUDA_TEST_BINS    = $(addprefix $(CUDA_BUILD)/tests/,$(CUDA_TESTS)) $(CUDA_BUILD)/tests/backend_probe
CUDA_EXAMPLE_BINS = $(addprefix $(CUDA_BUILD)/examples/,$(EXAMPLES))
CUDA_BENCH_BINS   = $(addprefix $(CUDA_BUILD)/bench/,$(BENCHES))

.PHONY: cuda test-cuda cuda-resources cuda-resources-check
# the kernels' registers, spills, shared memory and blocks per SM (ptxas -v,
# sm_80 and sm_90) into kernels_cuda/README.md; -check: fail on spills
cuda-resources:
	NVCC=$(NVCC) python3 tools/cuda_resources.py --write
cuda-resources-check:
	NVCC=$(NVCC) python3 tools/cuda_resources.py --check > /dev/null
cuda: $(CUDA_LIB) $(CUDA_TEST_BINS) $(CUDA_EXAMPLE_BINS) $(CUDA_BENCH_BINS)

$(CUDA_KDIR)/%.o: kernels_cuda/%.cu kernels_cuda/common.cuh $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<
$(CUDA_BUILD)/parrnn_cuda.o: backends/parrnn_cuda.h $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -x c -DPARRNN_CUDA_IMPLEMENTATION -c -o $@ backends/parrnn_cuda.h
$(CUDA_LIB): $(CUDA_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $(CUDA_OBJS)

# the implementation compiled once with the CUDA build's flags; programs link it
CUDA_IMPL = $(CUDA_BUILD)/parrnn.o
$(CUDA_IMPL): parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -c -o $@ $<
$(CUDA_BUILD)/obj/tests/%.o: tests/%.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -c -o $@ $<
$(CUDA_BUILD)/obj/bench/%.o: bench/%.c bench/bench_common.h $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -c -o $@ $<
$(CUDA_BUILD)/obj/%.o: %.c $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -c -o $@ $<
# GPU_SHARED=1 (the GPU bundle): the implementation, the backend and the
# CUDA runtime in one shared library, lib/libparrnn.so, that every program
# loads through $$ORIGIN: 23 programs then weigh about as much as one.
ifeq ($(GPU_SHARED),1)
CUDA_SO        = $(CUDA_BUILD)/lib/libparrnn.so
CUDA_PROG_DEPS = $(CUDA_SO)
CUDA_LINK      = $(CC) -o $@ $(filter %.o,$^) -L$(CUDA_BUILD)/lib -lparrnn -Wl,-rpath,'$$ORIGIN/../lib' -lm -lpthread \
                 $(if $(filter 1,$(OPENMP)),-fopenmp)
$(CUDA_SO): $(CUDA_IMPL) $(CUDA_LIB)
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(CUDA_IMPL) -Wl,--whole-archive $(CUDA_LIB) -Wl,--no-whole-archive \
	    $(filter-out $(CUDA_LIB),$(CUDA_LDLIBS))
else
CUDA_PROG_DEPS = $(CUDA_IMPL) $(CUDA_LIB)
CUDA_LINK      = $(CC) -o $@ $(filter %.o,$^) $(CUDA_LDLIBS)
endif
$(CUDA_BUILD)/tests/%: $(CUDA_BUILD)/obj/tests/%.o $(CUDA_PROG_DEPS)
	@mkdir -p $(@D)
	$(CUDA_LINK)
$(CUDA_BUILD)/examples/%: $(CUDA_BUILD)/obj/examples/%.o $(CUDA_PROG_DEPS)
	@mkdir -p $(@D)
	$(CUDA_LINK)
$(CUDA_BUILD)/bench/%: $(CUDA_BUILD)/obj/bench/%.o $(CUDA_PROG_DEPS)
	@mkdir -p $(@D)
	$(CUDA_LINK)
$(CUDA_BUILD)/tools/%: $(CUDA_BUILD)/obj/tools/%.o $(CUDA_PROG_DEPS)
	@mkdir -p $(@D)
	$(CUDA_LINK)

# ---------------------------------------------------------------------------
# The GPU bundle (bench/README.md, "On a GPU machine"): `make gpu-bundle`
# builds here, with nvcc and no GPU, the folder a GPU machine runs as it
# is, so that none of its scarce minutes go to building:
#   build-gpu/tests/*   every CUDA test program and backend_probe
#   build-gpu/bench/*   bench_scan, bench_deer, bench_ops, bench_scyfi, bench_rnn
#   build-gpu/tools/gpu_probe   small cases of every kernel family (sanitizers)
#   build-gpu/lib/libparrnn.so  the implementation, the CUDA backend and
#                       runtime (GPU_SHARED=1: the programs load it)
#   build-gpu/lib/libgomp.so.1  OpenMP's runtime, found through $$ORIGIN
#   build-gpu/BUNDLE    the commit and flags it was built from
# Linked against nothing such a machine may lack: no OpenBLAS, LAPACK,
# OpenCL or MPI, the CUDA runtime statically; cuBLAS is the machine's
# (tools/gpu_check.sh finds it). No -g: the folder travels (at most 64 MiB,
# checked here and in CI). Objects stay in build-gpu-work/.
GPU_BUNDLE    = build-gpu
GPU_WORK      = build-gpu-work
GPU_BENCHES   = bench_scan bench_deer bench_ops bench_scyfi bench_rnn
GPU_MAKEFLAGS = CUDA_BUILD=$(GPU_WORK) BUILD=$(GPU_WORK)/host BLAS=0 LAPACK=0 OPENCL=0 MPI=0 OPT=-O2 \
                EXTRA_CFLAGS=-fPIC CUDART_LIB='-lcudart_static -ldl -lrt' GPU_RPATH=1 GPU_SHARED=1 \
                CUDA_KDIR=build-cuda/kernels
GPU_PROGRAMS  = $(addprefix tests/,$(filter-out test_eig,$(CUDA_TESTS)) backend_probe) $(addprefix bench/,$(GPU_BENCHES)) tools/gpu_probe
GPU_LIBGOMP  := $(shell $(CC) -print-file-name=libgomp.so.1)
.PHONY: gpu-bundle
gpu-bundle:
	@# make does not track flags: a work folder built with others starts over
	@echo "$(GPU_MAKEFLAGS)" | cmp -s - $(GPU_WORK)/FLAGS || { rm -rf $(GPU_WORK); mkdir -p $(GPU_WORK); echo "$(GPU_MAKEFLAGS)" > $(GPU_WORK)/FLAGS; }
	$(MAKE) --no-print-directory $(GPU_MAKEFLAGS) $(addprefix $(GPU_WORK)/,$(GPU_PROGRAMS))
	rm -rf $(GPU_BUNDLE)
	mkdir -p $(GPU_BUNDLE)/tests $(GPU_BUNDLE)/bench $(GPU_BUNDLE)/tools $(GPU_BUNDLE)/lib
	for p in $(GPU_PROGRAMS); do cp $(GPU_WORK)/$$p $(GPU_BUNDLE)/$$p || exit 1; done
	cp $(GPU_WORK)/lib/libparrnn.so $(GPU_BUNDLE)/lib/
	cp -L $(GPU_LIBGOMP) $(GPU_BUNDLE)/lib/libgomp.so.1
	echo "built $$(date -u +%FT%TZ) on $$(hostname) from git $$(git rev-parse --short HEAD 2>/dev/null)$$(git diff --quiet HEAD 2>/dev/null || echo +changes)" > $(GPU_BUNDLE)/BUNDLE
	echo "flags: $(GPU_MAKEFLAGS)" >> $(GPU_BUNDLE)/BUNDLE
	echo "nvcc: $$($(NVCC) --version | tail -n 1)" >> $(GPU_BUNDLE)/BUNDLE
	sh tools/gpu_bundle_check.sh $(GPU_BUNDLE)

test-cuda: $(CUDA_TEST_BINS)
	PRNT_PROBE=$(CUDA_BUILD)/tests/backend_probe PRNT_BACKENDS=cuda \
	    sh tests/run.sh $(addprefix $(CUDA_BUILD)/tests/,$(CUDA_TESTS))

# ---------------------------------------------------------------------------
# The CUDA emulator (tests/cuda_emu/README.md): the same host code and
# kernels, built with the host compilers against tests/cuda_emu's runtime,
# so the backend runs -- and the conformance test checks it against the
# reference -- on machines without a GPU. Not a performance model.
#   cuda-emu       build-cuda-emu/: the kernels (launch syntax rewritten by
#                  sed into prn_emu::launch calls), the host side, the tests
#   test-cuda-emu  every test program with PARRNN_BACKEND=cuda (`make test`
#                  runs two of them: test_conformance and test_cuda)
EMU_BUILD     = build-cuda-emu
EMU_DIR       = tests/cuda_emu
EMU_CXXFLAGS  = -std=c++14 -O2 -g -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas -I$(EMU_DIR) -Ikernels_cuda -I.
# the fibers' switch returns into them: not for a shadow stack (cuda_emu.cpp)
EMU_NOCET    := $(shell $(CXX) -fcf-protection=none -x c++ -c /dev/null -o /dev/null >/dev/null 2>&1 && echo -fcf-protection=none)
EMU_CFLAGS    = $(filter-out -DPARRNN_WITH_OPENCL,$(CFLAGS_ALL)) -DPARRNN_WITH_CUDA -DPRNT_CUDA_EMU -I$(EMU_DIR)
EMU_LIB       = $(EMU_BUILD)/libparrnn_cuda_emu.a
EMU_LDLIBS    = $(EMU_LIB) -lstdc++ $(filter-out -lclblast -lOpenCL,$(LDLIBS_ALL))
EMU_HEADERS   = $(wildcard $(EMU_DIR)/*.h)
EMU_OBJS      = $(patsubst kernels_cuda/%.cu,$(EMU_BUILD)/kernels/%.o,$(CUDA_KERNELS)) $(EMU_BUILD)/parrnn_cuda.o \
                $(EMU_BUILD)/cuda_emu.o
EMU_TESTS     = $(CUDA_TESTS)
EMU_TEST_BINS = $(addprefix $(EMU_BUILD)/tests/,$(EMU_TESTS)) $(EMU_BUILD)/tests/backend_probe

.PHONY: cuda-emu test-cuda-emu
cuda-emu: $(EMU_LIB) $(EMU_TEST_BINS)

# k<<<grid, block, shared, stream>>>(args)  ->  prn_emu::launch(grid, block, shared, stream, k)(args)
# (the rewritten sources are kept: compiler messages point into them)
.PRECIOUS: $(EMU_BUILD)/kernels/%.cpp
$(EMU_BUILD)/kernels/%.cpp: kernels_cuda/%.cu
	@mkdir -p $(@D)
	sed -E 's/([A-Za-z_][A-Za-z_0-9]*(<[A-Za-z_0-9, ]*>)?)<<<([^>]*)>>>\(/prn_emu::launch(\3, \1)(/g' $< > $@
	@if grep -n '<<<' $@; then echo "$<: a launch the rewrite did not match"; rm -f $@; exit 1; fi
$(EMU_BUILD)/kernels/%.o: $(EMU_BUILD)/kernels/%.cpp kernels_cuda/common.cuh $(CUDA_DEPS) $(EMU_HEADERS)
	$(CXX) $(EMU_CXXFLAGS) -c -o $@ $<
$(EMU_BUILD)/cuda_emu.o: $(EMU_DIR)/cuda_emu.cpp $(EMU_HEADERS)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_NOCET) -c -o $@ $<
$(EMU_BUILD)/parrnn_cuda.o: backends/parrnn_cuda.h $(CUDA_DEPS) $(EMU_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(EMU_CFLAGS) -x c -DPARRNN_CUDA_IMPLEMENTATION -c -o $@ backends/parrnn_cuda.h
$(EMU_LIB): $(EMU_OBJS)
	rm -f $@
	ar rcs $@ $(EMU_OBJS)
EMU_IMPL = $(EMU_BUILD)/parrnn.o
$(EMU_IMPL): parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(EMU_CFLAGS) -c -o $@ $<
$(EMU_BUILD)/obj/tests/%.o: tests/%.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(EMU_CFLAGS) -c -o $@ $<
$(EMU_BUILD)/obj/bench/%.o: bench/%.c bench/bench_common.h $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(EMU_CFLAGS) -c -o $@ $<
$(EMU_BUILD)/obj/tools/%.o: tools/%.c $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(EMU_CFLAGS) -c -o $@ $<
$(EMU_BUILD)/tests/%: $(EMU_BUILD)/obj/tests/%.o $(EMU_IMPL) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(EMU_LDLIBS)
$(EMU_BUILD)/bench/%: $(EMU_BUILD)/obj/bench/%.o $(EMU_IMPL) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(EMU_LDLIBS)
$(EMU_BUILD)/tools/%: $(EMU_BUILD)/obj/tools/%.o $(EMU_IMPL) $(EMU_LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(EMU_LDLIBS)

# tools/gpu_check.sh's flow on the emulator (tests/gpu_check_flow.sh, run
# by `make test`): build-cuda-emu laid out as the GPU bundle is
EMU_GPU_PROGRAMS = $(addprefix $(EMU_BUILD)/,tests/test_cuda tests/test_ops tests/test_scan tests/backend_probe \
                   bench/bench_scan bench/bench_ops bench/bench_scyfi bench/bench_deer bench/bench_rnn tools/gpu_probe)

# every test program once, with PARRNN_BACKEND=cuda
test-cuda-emu: $(EMU_TEST_BINS)
	PRNT_JOBS=$${PRNT_JOBS:-$(NPROC)} PRNT_ALSO="$(addprefix cuda:$(EMU_BUILD)/tests/,$(EMU_TESTS))" sh tests/run.sh

# `make test` runs the conformance test and test_cuda on the emulator, where
# a C++ compiler exists (CUDA_EMU=0: not).
ifndef CUDA_EMU
CUDA_EMU := $(shell printf 'int main(){return 0;}\n' | $(CXX) -x c++ - -o /dev/null >/dev/null 2>&1 && echo 1 || echo 0)
endif
ifeq ($(CUDA_EMU),1)
EMU_IN_TEST = $(EMU_BUILD)/tests/test_conformance $(EMU_BUILD)/tests/test_cuda
test: $(EMU_IN_TEST) $(EMU_GPU_PROGRAMS)
endif
