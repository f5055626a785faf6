# Shared libraries of tests/progs/plugin/ that tests/integration/lifecycle.bats preloads or loads as
# an audit module, which the generic tests/progs rule (executables) cannot build: libNAME.so from
# NAME.c. (libfirst_call_spy.so and libstacks_plugin.so have rules of their own: other flags.)
PLUGIN_LIBS := $(addprefix $(BUILD)/progs/lib,$(addsuffix .so,dlsym_spy audit_bind fake_clock))
all: $(PLUGIN_LIBS)
$(PLUGIN_LIBS): $(BUILD)/progs/lib%.so: tests/progs/plugin/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -fPIC -shared -o $@ $< -ldl
