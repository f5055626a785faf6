# The two-run test program of tests/integration/diff.bats (tests/kernels/diff_run.c) and the naive
# kernels it calls (tests/kernels/knaive.c, libknaive.so). Neither is sanitized, so the test runs
# under SAN=1 too. Built -O0 like the other test programs: every call and allocation happens.
DIFF_FILES := $(BUILD)/progs/diff_run $(BUILD)/progs/libknaive.so
all: $(DIFF_FILES)

$(BUILD)/progs/libknaive.so: tests/kernels/knaive.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -fPIC -shared -o $@ $<

$(BUILD)/progs/diff_run: tests/kernels/diff_run.c include/tprof.h $(BUILD)/progs/libknaive.so
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -D_GNU_SOURCE -fno-builtin -Iinclude -o $@ $< \
		-L$(BUILD)/progs -lknaive -Wl,-rpath,'$$ORIGIN' -ldl
