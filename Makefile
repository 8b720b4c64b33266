# parrnn build: header-only library, so this builds tests, examples and
# benchmarks. `make demo` and `make test` are the two set-up commands.
#
# Options:  OPENMP=0   build without -fopenmp
#           BLAS=0     do not use OpenBLAS (CBLAS) for the reference GEMM
#           OPENCL=0   do not build the OpenCL backend (default: built when
#                      the OpenCL headers, the ICD loader and CLBlast are
#                      installed; the tests skip it where no device exists)
#           CC=clang   any C99 compiler
#           MPI=0      do not build the MPI programs (default: built when
#                      `mpicc` compiles a program that includes mpi.h;
#                      `make test-mpi` runs them under mpirun)
# `make` alone builds with one job per core (give -jN to choose).
NPROC   := $(shell nproc 2>/dev/null || echo 2)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(NPROC)
endif
CC      ?= cc
CXX     ?= c++
OPENMP  ?= 1
BLAS    ?= 1
BUILD   ?= build
OPT     ?= -O3 -g
WARN     = -Wall -Wextra -Wpedantic -Werror
CFLAGS_ALL = -std=c99 $(OPT) $(WARN) -I. $(EXTRA_CFLAGS)
LDLIBS_ALL = -lm -lpthread $(EXTRA_LDLIBS)

ifeq ($(OPENMP),1)
CFLAGS_ALL += -fopenmp
LDLIBS_ALL += -fopenmp
endif
ifeq ($(BLAS),1)
# With OpenMP, the OpenMP build of OpenBLAS when it is installed (Debian:
# libopenblas-openmp-dev): it runs on OpenMP's threads, where the pthreads
# build keeps its own workers spinning for about 0.1 s after each call,
# taking cores from parrnn's threads (the fused RNN layers lost 2x to it).
# rpath: the loader would otherwise take whichever build the system's
# alternatives name.
OPENBLAS_OMP_PC := $(if $(filter 1,$(OPENMP)),$(firstword $(wildcard /usr/lib/*/openblas-openmp/pkgconfig/openblas.pc)))
ifneq ($(OPENBLAS_OMP_PC),)
BLAS_PC_ENV := PKG_CONFIG_PATH=$(dir $(OPENBLAS_OMP_PC))
BLAS_RPATH  := -Wl,-rpath,$(shell $(BLAS_PC_ENV) pkg-config --variable=libdir openblas)
endif
BLAS_CFLAGS := $(shell $(BLAS_PC_ENV) pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(strip $(shell $(BLAS_PC_ENV) pkg-config --libs openblas 2>/dev/null) $(BLAS_RPATH))
ifneq ($(BLAS_LIBS),)
CFLAGS_ALL += -DPARRNN_USE_CBLAS $(BLAS_CFLAGS)
LDLIBS_ALL += $(BLAS_LIBS)
endif
endif

# The OpenCL backend: compiled as a translation unit of its own and linked
# into every program; parrnn.h then lists "opencl" among its backends.
ifndef OPENCL  # probe only when not given (sub-makes pass OPENCL=0)
OPENCL := $(shell printf '\043include <CL/cl.h>\n\043include <clblast_c.h>\nint main(void){return 0;}\n' | \
    $(CC) -x c - -o /dev/null -lclblast -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
endif
OCL_KERNELS = $(sort $(filter-out kernels_opencl/common.cl,$(wildcard kernels_opencl/*.cl)))
OCL_HEADER  = backends/parrnn_opencl_kernels.h
ifeq ($(OPENCL),1)
CFLAGS_ALL += -DPARRNN_WITH_OPENCL
BACKEND_OBJS += $(BUILD)/parrnn_opencl.o
LDLIBS_ALL += -lclblast -lOpenCL
EXTRA_BACKENDS += opencl
endif

# LAPACK (liblapack-dev): test_eig checks prn_eigenvalues against dgeev, in
# both of its builds (the header's QR, and PARRNN_USE_LAPACK).
ifndef LAPACK
LAPACK := $(shell printf 'void dgeev_(void);\nint main(void){dgeev_();return 0;}\n' | \
    $(CC) -x c - -o /dev/null -llapack >/dev/null 2>&1 && echo 1 || echo 0)
endif

# MPI (Debian: openmpi-bin, libopenmpi-dev): backends/parrnn_mpi.h and the
# programs that use it, compiled with $(MPICC) and the flags of the others.
# `make test-mpi` runs tests/test_mpi under mpirun with 1, 2 and 4 ranks.
MPICC   ?= mpicc
MPIRUN  ?= mpirun
ifndef MPI
MPI := $(shell printf '\043include <mpi.h>\nint main(int c,char**v){MPI_Init(&c,&v);return MPI_Finalize();}\n' | \
    $(MPICC) -x c - -o /dev/null >/dev/null 2>&1 && echo 1 || echo 0)
endif
# --oversubscribe: more ranks than cores (4 ranks on a 2-core machine);
# Open MPI refuses to run as root without --allow-run-as-root.
ifndef MPIRUN_FLAGS
MPIRUN_FLAGS := --oversubscribe$(if $(filter 0,$(shell id -u 2>/dev/null)), --allow-run-as-root)
endif
MPI_NPS      ?= 1 2 4
MPI_BINS      = $(BUILD)/tests/test_mpi $(BUILD)/examples/mpi_deer $(BUILD)/bench/bench_mpi

TESTS    = test_frames test_ops test_autodiff test_scan test_scan_sse2 test_scan_plain test_conformance test_conformance_sse2 test_bad_input test_alloc_fail test_buf_cache test_gemm_f32 test_gemm_f32_noblas test_cells test_opencl test_cuda test_rnn test_rnn_golden test_deer \
           test_pwl_parse test_scyfi test_tape_prop
EXAMPLES = mlp_train scan_explain char_rnn game_agent deer_demo engine_frames rnn_train_small
BENCHES  = bench_ops bench_scan scan_error bench_rnn bench_deer bench_scyfi bench_jax bench_frames bench_contended fma_peak
ifeq ($(LAPACK),1)
TESTS   += test_eig test_eig_lapack
endif
TEST_BINS    = $(addprefix $(BUILD)/tests/,$(TESTS))
TOOLS        = $(BUILD)/parrnn-scyfi
EXAMPLE_BINS = $(addprefix $(BUILD)/examples/,$(EXAMPLES))
BENCH_BINS   = $(addprefix $(BUILD)/bench/,$(BENCHES))

.PHONY: all test optout-check test-mpi test-sanitize test-valgrind demo bench examples clean fuzz fuzz-replay fuzz-corpus-rnn teach teach-shots bench-frames
all: $(TEST_BINS) $(BUILD)/tests/backend_probe $(BUILD)/tests/fuzz_corpus_rnn_gen $(EXAMPLE_BINS) $(BENCH_BINS) $(TOOLS) $(if $(filter 1,$(MPI)),$(MPI_BINS))
examples: $(EXAMPLE_BINS)

# ---------------------------------------------------------------------------
# The implementation is compiled once per set of flags (parrnn_impl.c, the
# two-line file the README shows) and every program links it; a program's
# own file includes the declarations only. Configurations: $(BUILD)/parrnn.o
# (the flags above), $(BUILD)/parrnn-sse2.o (no AVX2), -plain (no
# intrinsics), -lapack (PARRNN_USE_LAPACK), -noblas (no CBLAS); the sanitizer, valgrind, fuzz,
# CUDA and emulator builds are the same rules under another BUILD or below.
# Program objects depend on the header's declarations (everything before its
# implementation section, kept in a stamp that changes only when they do),
# so editing the implementation recompiles each configuration's object once
# and relinks; editing a test recompiles that test.
IMPL         = $(BUILD)/parrnn.o
# objects made by pattern rules are kept (make would delete them as
# intermediates, and then recompile them for the next relink)
.SECONDARY:
API_STAMP    = $(BUILD)/parrnn_api.stamp
VFLAGS_sse2   = -DPARRNN_NO_AVX2
VFLAGS_plain  = -DPARRNN_NO_INTRINSICS
VFLAGS_lapack = -DPARRNN_USE_LAPACK
VFLAGS_noblas = -UPARRNN_USE_CBLAS
TEST_DEPS    = tests/prn_test.h tests/prn_test_device.h tests/prn_crc32.h tests/prn_meminfo.h

$(API_STAMP): parrnn.h
	@mkdir -p $(@D)
	@sed '/^#ifdef PARRNN_IMPLEMENTATION$$/q' parrnn.h > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/parrnn.o: parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<
$(BUILD)/parrnn-%.o: parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(VFLAGS_$*) -c -o $@ $<

$(BUILD)/obj/tests/%.o: tests/%.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<
$(BUILD)/obj/bench/%.o: bench/%.c bench/bench_common.h bench/fma_peak.h tests/prn_meminfo.h $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<
$(BUILD)/obj/%.o: %.c $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<
# the variants: the same test sources, built against the variant's object
$(BUILD)/obj-%/tests/test_scan.o: tests/test_scan.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(VFLAGS_$*) -c -o $@ $<
$(BUILD)/obj-%/tests/test_conformance.o: tests/test_conformance.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(VFLAGS_$*) -c -o $@ $<
$(BUILD)/obj-%/tests/test_eig.o: tests/test_eig.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(VFLAGS_$*) -c -o $@ $<
$(BUILD)/obj-%/tests/test_gemm_f32.o: tests/test_gemm_f32.c $(TEST_DEPS) $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(VFLAGS_$*) -c -o $@ $<

LINK = $(CC) -o $@ $(filter %.o,$^) $(LDLIBS_ALL)
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
$(BUILD)/tools/%: $(BUILD)/obj/tools/%.o $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
# The SCYFI command-line tool.
$(BUILD)/parrnn-scyfi: $(BUILD)/obj/tools/parrnn_scyfi.o $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
%/tests/test_eig: LDLIBS_ALL += -llapack
$(BUILD)/tests/test_eig_lapack: $(BUILD)/obj-lapack/tests/test_eig.o $(BUILD)/parrnn-lapack.o $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK) -llapack
# test_scan again without the AVX2 path (SSE2 only), and without intrinsics:
# the reference scans' code paths for processors without AVX2, and not x86;
# test_conformance without AVX2: the reference's other paths (the scans and
# the fused RNN layers) against the oracle's host math.
$(BUILD)/tests/test_conformance_sse2: $(BUILD)/obj-sse2/tests/test_conformance.o $(BUILD)/parrnn-sse2.o $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
$(BUILD)/tests/test_scan_sse2: $(BUILD)/obj-sse2/tests/test_scan.o $(BUILD)/parrnn-sse2.o $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
$(BUILD)/tests/test_scan_plain: $(BUILD)/obj-plain/tests/test_scan.o $(BUILD)/parrnn-plain.o $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
# test_gemm_f32 with the implementation built without CBLAS (-noblas):
# "reference"'s own AVX2 panel GEMM against the plain loops, as a user who
# drops the header in without a BLAS gets it.
$(BUILD)/tests/test_gemm_f32_noblas: $(BUILD)/obj-noblas/tests/test_gemm_f32.o $(BUILD)/parrnn-noblas.o $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(LINK)
# The MPI programs (explicit rules: they win over the patterns above),
# compiled and linked with $(MPICC); backends/parrnn_mpi.h's implementation
# is compiled once too.
MPI_IMPL = $(BUILD)/parrnn_mpi.o
$(MPI_IMPL): backends/parrnn_mpi.h parrnn.h
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS_ALL) -x c -DPARRNN_MPI_IMPLEMENTATION -c -o $@ backends/parrnn_mpi.h
$(BUILD)/obj-mpi/%.o: %.c backends/parrnn_mpi.h $(TEST_DEPS) bench/bench_common.h $(API_STAMP)
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS_ALL) -c -o $@ $<
$(MPI_BINS): $(BUILD)/%: $(BUILD)/obj-mpi/%.o $(MPI_IMPL) $(IMPL) $(BACKEND_OBJS)
	@mkdir -p $(@D)
	$(MPICC) -o $@ $(filter %.o,$^) $(LDLIBS_ALL)

# The interactive page of scan_explain --html, embedded (checked in, like
# the kernels below, so the example builds without make).
PAGE_HEADER = examples/scan_explain_page.h
$(PAGE_HEADER): examples/scan_explain_page.html examples/embed_page.sh
	sh examples/embed_page.sh $@ examples/scan_explain_page.html
$(BUILD)/obj/examples/scan_explain.o: $(PAGE_HEADER)

# The kernels, embedded (checked in, so the header works without make).
$(OCL_HEADER): kernels_opencl/common.cl $(OCL_KERNELS) kernels_opencl/embed.sh
	sh kernels_opencl/embed.sh $@ kernels_opencl/common.cl $(OCL_KERNELS)
$(BUILD)/parrnn_opencl.o: backends/parrnn_opencl.h $(OCL_HEADER) parrnn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -x c -DPARRNN_OPENCL_IMPLEMENTATION -c -o $@ backends/parrnn_opencl.h

# The whole suite; the last line reads "N passed, N failed, N skipped".
# It builds every example too (the README's commands run them after the
# two set-up commands) and runs examples/rnn_train_small (compile_check.sh).
# With the OpenCL backend built, every test program runs a second time
# with PARRNN_BACKEND=opencl (skipped, and counted so, where no device is).
# Then the conformance test and test_cuda run on the CUDA backend built
# against the CUDA emulator (cuda.mk; `make test-cuda-emu`: every test).
test: $(TEST_BINS) $(BUILD)/tests/backend_probe $(TOOLS) $(EXAMPLE_BINS) $(BUILD)/tests/export_check
	@$(if $(filter 1,$(OPENCL)),,echo "note: the OpenCL backend is not built (no OpenCL headers, ICD loader or CLBlast); its tests are skipped";) \
	$(if $(filter 1,$(LAPACK)),,echo "note: LAPACK (liblapack-dev) is not installed: test_eig, which compares prn_eigenvalues with dgeev, is not built";) \
	$(if $(filter 1,$(CUDA_EMU)),,echo "note: no C++ compiler ($(CXX)): the CUDA backend is not run on the CUDA emulator";) \
	PRNT_PROBE=$(BUILD)/tests/backend_probe PRNT_BACKENDS="$(EXTRA_BACKENDS)" PRNT_SCYFI=$(BUILD)/parrnn-scyfi \
	    PRNT_SCAN_EXPLAIN=$(BUILD)/examples/scan_explain PRNT_RNN_TRAIN_SMALL=$(BUILD)/examples/rnn_train_small PRNT_ALSO="$(addprefix cuda:,$(EMU_IN_TEST))" PRNT_JOBS=$${PRNT_JOBS:-$(NPROC)} \
	    PRNT_FULL_OBJ=$(BUILD)/parrnn.o \
	    sh tests/run.sh tests/compile_check.sh tests/optout_check.sh tests/tool_scyfi.sh tests/teach_page.sh tests/frame_bits.sh tests/export_torch.sh \
	    $(TEST_BINS) $(if $(filter 1,$(CUDA_EMU)),tests/gpu_check_flow.sh)

# The opt-out macros (LEAVING PARTS OUT in parrnn.h): each macro and the
# three together built with gcc and clang as C99 and C++, a program on what
# remains run, and nm shows none of the left-out functions (part of `make
# test`; about 110 s of CPU, a minute on two idle cores).
optout-check: $(BUILD)/parrnn.o
	@PRNT_FULL_OBJ=$(BUILD)/parrnn.o sh tests/run.sh tests/optout_check.sh

# The MPI tests: tests/test_mpi under `mpirun -np N` for N in MPI_NPS (each
# run limited to 300 s; one that dies or hangs counts as a failure); the
# last line reads "N passed, N failed, N skipped". Without MPI: one skip.
ifeq ($(MPI),1)
test-mpi: $(BUILD)/tests/test_mpi
	@MPIRUN="$(MPIRUN)" MPIRUN_FLAGS="$(MPIRUN_FLAGS)" MPI_NPS="$(MPI_NPS)" sh tests/run_mpi.sh $(BUILD)/tests/test_mpi
else
test-mpi:
	@echo "skip test-mpi: the MPI programs are not built (MPI=0: '$(MPICC)' was not found or cannot compile"; \
	echo "    a program that includes mpi.h; Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev)"; \
	echo "0 passed, 0 failed, 1 skipped"
endif

# Same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) BUILD=build-san OPENMP=0 OPENCL=0 OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDLIBS="-fsanitize=address,undefined" $(addprefix build-san/tests/,$(TESTS))
	@PRNT_QUICK=1 PRNT_JOBS=$(NPROC) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    sh tests/run.sh $(addprefix build-san/tests/,$(TESTS))

# Same suite under valgrind: any leak or memory error fails the program.
test-valgrind:
	$(MAKE) BUILD=build-vg OPENMP=0 OPENCL=0 OPT="-O1 -g" $(addprefix build-vg/tests/,$(TESTS))
	@PRNT_QUICK=1 PRNT_JOBS=$(NPROC) PRNT_WRAP="valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99" \
	    sh tests/run.sh $(addprefix build-vg/tests/,$(TESTS))

# The float and double frames' per-step table (bench/bench_frames.c); with
# RTNEURAL_DIR (a checkout of RTNeural, which ships Eigen in modules/Eigen)
# also RTNeural's GRU and LSTM at the same shapes, side by side. RTNeural is
# compiled here only, never part of parrnn.
RTNEURAL_FLAGS = -std=c++17 -O3 -march=native -DNDEBUG -DRTNEURAL_USE_EIGEN=1 -DRTNEURAL_DEFAULT_ALIGNMENT=32 \
                 -I$(RTNEURAL_DIR)/RTNeural -I$(RTNEURAL_DIR) -I$(RTNEURAL_DIR)/modules/Eigen
$(BUILD)/bench/bench_rtneural: bench/bench_rtneural.cpp $(IMPL) $(BACKEND_OBJS) $(API_STAMP)
	@test -n "$(RTNEURAL_DIR)" || { echo "set RTNEURAL_DIR to a checkout of RTNeural"; exit 1; }
	@mkdir -p $(@D)
	$(CXX) $(RTNEURAL_FLAGS) -I. -o $@ $< $(IMPL) $(BACKEND_OBJS) $(LDLIBS_ALL)
bench-frames: $(BUILD)/bench/bench_frames $(if $(RTNEURAL_DIR),$(BUILD)/bench/bench_rtneural)
	$(BUILD)/bench/bench_frames

demo: $(BUILD)/examples/deer_demo
	$(BUILD)/examples/deer_demo

# The interactive page on scans and DEER (one self-contained HTML file:
# open it in a browser; add #selftest to its address for its self-test).
# teach-shots renews the README's two screenshots (needs chromium).
teach: $(BUILD)/examples/scan_explain
	$(BUILD)/examples/scan_explain --html $(BUILD)/scan_explain.html
teach-shots: $(BUILD)/examples/scan_explain
	TEACH_SHOTS_DIR=examples/img sh tests/teach_page.sh $(BUILD)/examples/scan_explain

bench: $(BENCH_BINS)
	$(BUILD)/bench/bench_ops
	$(BUILD)/bench/bench_scan
	$(BUILD)/bench/scan_error
	$(BUILD)/bench/bench_rnn
	$(BUILD)/bench/bench_deer
	$(BUILD)/bench/bench_scyfi
	$(BUILD)/bench/bench_frames

# Fuzzing the two loaders with libFuzzer: the model-file parser
# (prn_pwl_parse, tests/fuzz_pwl_parse.c) and the network loader
# (prn_rnn_load, tests/fuzz_rnn_load.c, which fixes up each input's CRC so
# the fuzzer reaches the body). clang and compiler-rt's libFuzzer (Debian:
# libclang-rt-14-dev, which clang only recommends). FUZZ_TIME seconds
# each; new inputs go to $(BUILD)/fuzz/work-*, the seeds in
# tests/fuzz_corpus and tests/fuzz_corpus_rnn stay as they are; a crash is
# saved as $(BUILD)/fuzz/crash-* (keep it as a regression input in
# tests/fuzz_corpus or tests/fuzz_regress_rnn). `make fuzz-replay` runs the
# targets over the seeds and the regression inputs without libFuzzer (any
# C99 compiler, under ASan and UBSan). `make fuzz-corpus-rnn` writes the
# seeds of the loader again (tests/fuzz_corpus_rnn_gen.c).
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_FLAGS  = -std=c99 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
              $(WARN) -I.
FUZZ_TARGETS = fuzz_pwl_parse fuzz_rnn_load
# The library is compiled once for each: instrumented for coverage
# (-fsanitize=fuzzer-no-link) under libFuzzer, plainly for the replay.
$(BUILD)/fuzz/parrnn.o: parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(BUILD)/fuzz/%.o: tests/%.c tests/prn_crc32.h $(API_STAMP)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<
$(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS)): $(BUILD)/fuzz/%: $(BUILD)/fuzz/%.o $(BUILD)/fuzz/parrnn.o
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ -lm
$(BUILD)/fuzz/replay/parrnn.o: parrnn_impl.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(FUZZ_FLAGS) -c -o $@ $<
$(BUILD)/fuzz/replay/%.o: tests/%.c tests/fuzz_replay.h tests/prn_crc32.h $(API_STAMP)
	@mkdir -p $(@D)
	$(CC) $(FUZZ_FLAGS) -DPRN_FUZZ_STANDALONE -c -o $@ $<
$(BUILD)/fuzz/%_replay: $(BUILD)/fuzz/replay/%.o $(BUILD)/fuzz/replay/parrnn.o
	$(CC) $(FUZZ_FLAGS) -o $@ $^ -lm
fuzz: $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))
	@mkdir -p $(BUILD)/fuzz/work $(BUILD)/fuzz/work-rnn
	$(BUILD)/fuzz/fuzz_pwl_parse -max_total_time=$(FUZZ_TIME) -max_len=4096 -dict=tests/fuzz_pwl_parse.dict \
	    -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/work tests/fuzz_corpus
	$(BUILD)/fuzz/fuzz_rnn_load -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/work-rnn tests/fuzz_corpus_rnn
fuzz-replay: $(addprefix $(BUILD)/fuzz/,$(addsuffix _replay,$(FUZZ_TARGETS)))
	$(BUILD)/fuzz/fuzz_pwl_parse_replay tests/fuzz_corpus
	$(BUILD)/fuzz/fuzz_rnn_load_replay tests/fuzz_corpus_rnn tests/fuzz_regress_rnn
fuzz-corpus-rnn: $(BUILD)/tests/fuzz_corpus_rnn_gen
	@mkdir -p tests/fuzz_corpus_rnn
	$(BUILD)/tests/fuzz_corpus_rnn_gen tests/fuzz_corpus_rnn

clean:
	rm -rf build build-san build-vg build-cuda build-cuda-emu build-gpu build-gpu-work

# The CUDA backend: `make cuda` (nvcc), see cuda.mk.
include cuda.mk
