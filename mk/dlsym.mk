# The dlsym preloaded after libtprof.so by the dlsym test of tests/integration/lifecycle.bats: a
# shared library, which the generic tests/progs rule cannot build.
all: $(BUILD)/progs/libdlsym_spy.so
$(BUILD)/progs/libdlsym_spy.so: tests/progs/plugin/dlsym_spy.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -fPIC -shared -o $@ $< -ldl
