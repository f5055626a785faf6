# The clock-faking library of the tprof record test of tests/integration/lifecycle.bats: a shared
# library, which the generic tests/progs rule cannot build.
all: $(BUILD)/progs/libfake_clock.so
$(BUILD)/progs/libfake_clock.so: tests/progs/plugin/fake_clock.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -fPIC -shared -o $@ $< -ldl
