# The bundled neural-network workloads, included by the top-level Makefile: libtnn.so (kernels), the
# mlp/cnn/transformer benchmarks, bench_gemm (peak and GEMM throughput for bench/workloads.sh) and the
# tnn_* unit tests. BLAS=openblas routes tnn_matmul to OpenBLAS's cblas_sgemm.
# The kernels are built -O3 without -march: AVX2/FMA code is selected per function at run time.

TNN_SRC := workloads/tnn_gemm.c workloads/tnn_ops.c
TNN_OBJ := $(TNN_SRC:%.c=$(BUILD)/obj/%.o)
TNN_HDR := include/tnn.h workloads/tnn_internal.h
TNN_OPT := -O3
ifeq ($(DEBUG),1)
TNN_OPT :=
endif
TNN_CFLAGS := $(CFLAGS) $(TNN_OPT) -fPIC -fopenmp -fno-math-errno
TNN_LIBS :=
ifeq ($(BLAS),openblas)
TNN_CFLAGS += -DTNN_OPENBLAS
TNN_LIBS += -lopenblas
endif
# Rebuild the library when the BLAS choice changes.
TNN_CONF := $(BUILD)/obj/workloads/tnn.conf
$(shell mkdir -p $(BUILD)/obj/workloads && (echo 'BLAS=$(BLAS)' | cmp -s - $(TNN_CONF) || echo 'BLAS=$(BLAS)' >$(TNN_CONF)))

TNN_BENCHES := $(patsubst workloads/%.c,$(BUILD)/%,$(wildcard workloads/*_bench.c)) $(BUILD)/bench_gemm
TNN_TEST_SRC := $(wildcard tests/unit/tnn_*.c)
TNN_TESTS := $(TNN_TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TNN_RPATH := -Wl,-rpath,'$$ORIGIN'

all: $(BUILD)/libtnn.so $(TNN_BENCHES) $(TNN_TESTS)

$(BUILD)/obj/workloads/%.o: workloads/%.c $(TNN_HDR) $(TNN_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(TNN_CFLAGS) -c $< -o $@

$(BUILD)/libtnn.so: $(TNN_OBJ)
	$(CC) $(TNN_CFLAGS) -shared -o $@ $^ $(TNN_LIBS) $(LDLIBS)

$(BUILD)/%_bench: workloads/%_bench.c workloads/bench_util.h include/tnn.h $(BUILD)/libtnn.so
	$(CC) $(CFLAGS) -o $@ $< -L$(BUILD) -ltnn $(TNN_RPATH) $(LDLIBS)

$(BUILD)/bench_gemm: workloads/bench_gemm.c workloads/bench_util.h include/tnn.h $(BUILD)/libtnn.so
	$(CC) $(CFLAGS) -fopenmp -o $@ $< -L$(BUILD) -ltnn $(TNN_RPATH) -ldl $(LDLIBS)

$(BUILD)/tests/tnn_%: tests/unit/tnn_%.c tests/unit/tnn_rand.h workloads/tnn_ref.c workloads/tnn_ref.h tests/unittest.h include/tnn.h \
		      $(BUILD)/libtnn.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iworkloads -Itests -o $@ $< workloads/tnn_ref.c -L$(BUILD) -ltnn -Wl,-rpath,'$$ORIGIN/..' $(LDLIBS)
