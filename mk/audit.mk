# The audit module of the LD_AUDIT test of tests/integration/lifecycle.bats: a shared library, which
# the generic tests/progs rule cannot build.
all: $(BUILD)/progs/libaudit_bind.so
$(BUILD)/progs/libaudit_bind.so: tests/progs/plugin/audit_bind.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -fPIC -shared -o $@ $<
