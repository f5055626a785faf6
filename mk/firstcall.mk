# The malloc preloaded after libtprof.so by the first-call test of tests/integration/invisible.bats
# (with tests/progs/inv_firstcall.c): a shared library, which the generic tests/progs rule cannot
# build.
all: $(BUILD)/progs/libfirst_call_spy.so
$(BUILD)/progs/libfirst_call_spy.so: tests/progs/plugin/first_call_spy.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -fPIC -shared -fno-builtin -o $@ $<
