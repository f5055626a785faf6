# The kernel-interposition test program of tests/integration/ops.bats and bench/kernels.sh: it calls
# every op-table kernel (libtnn.so) and, through libkcall_blas.so (opened RTLD_LOCAL, linked against
# the system BLAS and LAPACK), every wrapped BLAS and LAPACK routine.

KCALL_FILES := $(BUILD)/progs/kernel_calls $(BUILD)/progs/libkcall_blas.so
all: $(KCALL_FILES)

$(BUILD)/progs/kernel_calls: tests/kernels/kernel_calls.c include/tnn.h $(BUILD)/libtnn.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD) -ltnn \
		-Wl,-rpath,'$$ORIGIN/..' -Wl,-rpath,'$$ORIGIN' -ldl $(LDLIBS)

$(BUILD)/progs/libkcall_blas.so: tests/kernels/kcall_blas.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -fPIC -shared -o $@ $< -llapack -lblas

# bench/kernels.sh's microbenchmark: a trivial tnn_add in libktrivial.so, called from kernel_bench.
KBENCH_FILES := $(BUILD)/progs/kernel_bench $(BUILD)/progs/libktrivial.so
all: $(KBENCH_FILES)

$(BUILD)/progs/libktrivial.so: tests/kernels/ktrivial.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -fPIC -shared -o $@ $<

$(BUILD)/progs/kernel_bench: tests/kernels/kernel_bench.c $(BUILD)/progs/libktrivial.so
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -o $@ $< -L$(BUILD)/progs -lktrivial -Wl,-rpath,'$$ORIGIN'

# Shapes in both ring layouts (a 64-bit value; more than four values): tests/integration/ops.bats.
all: $(BUILD)/progs/kernel_wide
$(BUILD)/progs/kernel_wide: tests/kernels/kernel_wide.c include/tnn.h $(BUILD)/libtnn.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD) -ltnn \
		-Wl,-rpath,'$$ORIGIN/..' $(LDLIBS)
