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
CUDA_BUILD    = build-cuda
# SASS for sm_80 and sm_90, plus sm_90 PTX so newer GPUs can JIT it
CUDA_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                -gencode arch=compute_90,code=compute_90
NVCC_FLAGS   ?= -O3 -std=c++14 -I. $(CUDA_GENCODE) -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Werror all-warnings

CUDA_CFLAGS  = $(filter-out -DPARRNN_WITH_OPENCL,$(CFLAGS_ALL)) -DPARRNN_WITH_CUDA -I$(CUDA_HOME)/include
CUDA_LIB     = $(CUDA_BUILD)/libparrnn_cuda.a
CUDA_LDLIBS  = $(CUDA_LIB) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++ \
               $(filter-out -lclblast -lOpenCL,$(LDLIBS_ALL))

CUDA_KERNELS = $(sort $(wildcard kernels_cuda/*.cu))
CUDA_OBJS    = $(patsubst kernels_cuda/%.cu,$(CUDA_BUILD)/kernels/%.o,$(CUDA_KERNELS)) $(CUDA_BUILD)/parrnn_cuda.o
CUDA_DEPS    = parrnn.h kernels_cuda/prn_cuda_launch.h

CUDA_TESTS        = $(filter-out test_eig_lapack test_scan_sse2 test_scan_plain test_conformance_sse2,$(TESTS))  # host-only variants: not rebuilt
CUDA_TEST_BINS    = $(addprefix $(CUDA_BUILD)/tests/,$(CUDA_TESTS)) $(CUDA_BUILD)/tests/backend_probe
CUDA_EXAMPLE_BINS = $(addprefix $(CUDA_BUILD)/examples/,$(EXAMPLES))
CUDA_BENCH_BINS   = $(addprefix $(CUDA_BUILD)/bench/,$(BENCHES))

.PHONY: cuda test-cuda
cuda: $(CUDA_LIB) $(CUDA_TEST_BINS) $(CUDA_EXAMPLE_BINS) $(CUDA_BENCH_BINS)

$(CUDA_BUILD)/kernels/%.o: kernels_cuda/%.cu kernels_cuda/common.cuh $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -c -o $@ $<
$(CUDA_BUILD)/parrnn_cuda.o: backends/parrnn_cuda.h $(CUDA_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -x c -DPARRNN_CUDA_IMPLEMENTATION -c -o $@ backends/parrnn_cuda.h
$(CUDA_LIB): $(CUDA_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $(CUDA_OBJS)

$(CUDA_BUILD)/tests/%: tests/%.c parrnn.h tests/prn_test.h $(CUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -o $@ $< $(CUDA_LDLIBS)
$(CUDA_BUILD)/examples/%: examples/%.c parrnn.h $(CUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -o $@ $< $(CUDA_LDLIBS)
$(CUDA_BUILD)/bench/%: bench/%.c parrnn.h bench/bench_common.h $(CUDA_LIB)
	@mkdir -p $(@D)
	$(CC) $(CUDA_CFLAGS) -o $@ $< $(CUDA_LDLIBS)

test-cuda: $(CUDA_TEST_BINS)
	PRNT_PROBE=$(CUDA_BUILD)/tests/backend_probe PRNT_BACKENDS=cuda \
	    sh tests/run.sh $(addprefix $(CUDA_BUILD)/tests/,$(CUDA_TESTS))
