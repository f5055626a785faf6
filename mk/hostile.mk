# The hostile-names test program (tests/kernels/hostile_names.c): annotation and thread names built to
# break JSON, CSV and gnuplot output, used by the export and plot tests.
all: $(BUILD)/progs/hostile_names
$(BUILD)/progs/hostile_names: tests/kernels/hostile_names.c include/tnn.h include/tprof.h $(BUILD)/libtnn.so
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD) -ltnn \
		-Wl,-rpath,'$$ORIGIN/..' -ldl $(LDLIBS)
