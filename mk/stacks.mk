# Test inputs of tests/integration/stacks.bats that the generic tests/progs rule cannot build: the
# plugin that stacks_dlopen loads (a shared library, built -O0 -g like the test programs), and a
# stripped copy of stacks_leak (no symbols, no debug information: frames must show module+offset).

STACKS_TEST_FILES := $(BUILD)/progs/libstacks_plugin.so $(BUILD)/progs/stacks_leak_stripped

all: $(STACKS_TEST_FILES)

$(BUILD)/progs/libstacks_plugin.so: tests/progs/plugin/stacks_plugin.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -fPIC -shared -fno-builtin -o $@ $<

$(BUILD)/progs/stacks_leak_stripped: $(BUILD)/progs/stacks_leak
	strip --strip-all -o $@ $<
