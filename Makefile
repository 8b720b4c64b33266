# parrnn build: header-only library, so this builds tests, examples and
# benchmarks. `make demo` and `make test` are the two set-up commands.
#
# Options:  OPENMP=0   build without -fopenmp
#           BLAS=0     do not use OpenBLAS (CBLAS) for the reference GEMM
#           CC=clang   any C99 compiler
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
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null)
ifneq ($(BLAS_LIBS),)
CFLAGS_ALL += -DPARRNN_USE_CBLAS $(BLAS_CFLAGS)
LDLIBS_ALL += $(BLAS_LIBS)
endif
endif

TESTS    = test_ops test_autodiff test_scan test_conformance test_bad_input test_alloc_fail test_cells
EXAMPLES = mlp_train scan_explain
BENCHES  = bench_ops bench_scan scan_error
TEST_BINS    = $(addprefix $(BUILD)/tests/,$(TESTS))
EXAMPLE_BINS = $(addprefix $(BUILD)/examples/,$(EXAMPLES))
BENCH_BINS   = $(addprefix $(BUILD)/bench/,$(BENCHES))

.PHONY: all test test-sanitize test-valgrind demo bench examples clean
all: $(TEST_BINS) $(EXAMPLE_BINS) $(BENCH_BINS)
examples: $(EXAMPLE_BINS)

$(BUILD)/tests/%: tests/%.c parrnn.h tests/prn_test.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS_ALL)
$(BUILD)/examples/%: examples/%.c parrnn.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS_ALL)
$(BUILD)/bench/%: bench/%.c parrnn.h bench/bench_common.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS_ALL)

# The whole suite; the last line reads "N passed, N failed, N skipped".
test: $(TEST_BINS)
	@sh tests/run.sh tests/compile_check.sh $(TEST_BINS)

# Same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) BUILD=build-san OPENMP=0 OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    EXTRA_LDLIBS="-fsanitize=address,undefined" $(addprefix build-san/tests/,$(TESTS))
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    sh tests/run.sh $(addprefix build-san/tests/,$(TESTS))

# Same suite under valgrind: any leak or memory error fails the program.
test-valgrind:
	$(MAKE) BUILD=build-vg OPENMP=0 OPT="-O1 -g" $(addprefix build-vg/tests/,$(TESTS))
	@PRNT_WRAP="valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99" \
	    sh tests/run.sh $(addprefix build-vg/tests/,$(TESTS))

demo: $(BUILD)/examples/mlp_train
	$(BUILD)/examples/mlp_train

bench: $(BENCH_BINS)
	$(BUILD)/bench/bench_ops
	$(BUILD)/bench/bench_scan
	$(BUILD)/bench/scan_error

clean:
	rm -rf build build-san build-vg
