# Test programs on libknaive.so (tests/kernels/knaive.c), naive kernels built without sanitizers, so
# that the tests using them run under SAN=1 too (libtnn.so is ASan-instrumented there and cannot be
# preloaded into): diff_run, the two-run program of tests/integration/diff.bats, and
# hostile_names_naive, the hostile-names program of tests/integration/csv.bats linked against them
# (it calls only tnn_add and tnn_relu_fwd). Built like the other test programs: every call happens.
KNAIVE_FILES := $(BUILD)/progs/libknaive.so $(BUILD)/progs/diff_run $(BUILD)/progs/hostile_names_naive
all: $(KNAIVE_FILES)

$(BUILD)/progs/libknaive.so: tests/kernels/knaive.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -fPIC -shared -o $@ $<

$(BUILD)/progs/diff_run: tests/kernels/diff_run.c include/tprof.h $(BUILD)/progs/libknaive.so
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -D_GNU_SOURCE -fno-builtin -Iinclude -o $@ $< \
		-L$(BUILD)/progs -lknaive -Wl,-rpath,'$$ORIGIN' -ldl

$(BUILD)/progs/hostile_names_naive: tests/kernels/hostile_names.c include/tnn.h include/tprof.h \
		$(BUILD)/progs/libknaive.so
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD)/progs -lknaive \
		-Wl,-rpath,'$$ORIGIN' -ldl $(LDLIBS)

# OpenMP tasks run at a region's closing barrier (tests/integration/ops.bats): libkomp_task.so's
# tnn_linear_fwd, gcc -fopenmp, calling libknaive.so's tnn_add from its tasks; kernel_tasks calls it.
KTASK_FILES := $(BUILD)/progs/libkomp_task.so $(BUILD)/progs/kernel_tasks
all: $(KTASK_FILES)

$(BUILD)/progs/libkomp_task.so: tests/kernels/komp_task.c $(BUILD)/progs/libknaive.so
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -fopenmp -fPIC -shared -o $@ $< -L$(BUILD)/progs -lknaive \
		-Wl,-rpath,'$$ORIGIN'

$(BUILD)/progs/kernel_tasks: tests/kernels/kernel_tasks.c include/tprof.h $(BUILD)/progs/libkomp_task.so
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD)/progs -lkomp_task \
		-Wl,-rpath,'$$ORIGIN' -ldl
all: $(BUILD)/progs/komp_detach
$(BUILD)/progs/komp_detach: tests/kernels/komp_detach.c
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -fopenmp -o $@ $<
