# Fixtures of tests/unit/test_symbolize.c, included by the top-level Makefile: a C++ shared object
# built -O2 -g, a stripped copy of it (only .dynsym names left), and a stripped copy whose
# .gnu_debuglink names a separate debug file next to it. The test finds them in $(BUILD)/fixtures.

SYMFX_DIR := $(BUILD)/fixtures/symbolize
SYMFX     := $(SYMFX_DIR)/libsymcxx.so $(SYMFX_DIR)/libsymcxx-stripped.so \
             $(SYMFX_DIR)/libsymcxx.debug $(SYMFX_DIR)/libsymcxx-linked.so

$(SYMFX_DIR)/libsymcxx.so: tests/fixtures/symbolize/cxx_fixture.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O2 -fPIC -shared -Wall -Wextra -Wl,--build-id -o $@ $<

$(SYMFX_DIR)/libsymcxx-stripped.so: $(SYMFX_DIR)/libsymcxx.so
	strip --strip-all -o $@ $<

$(SYMFX_DIR)/libsymcxx.debug: $(SYMFX_DIR)/libsymcxx.so
	objcopy --only-keep-debug $< $@

$(SYMFX_DIR)/libsymcxx-linked.so: $(SYMFX_DIR)/libsymcxx.so $(SYMFX_DIR)/libsymcxx.debug
	objcopy --strip-all --add-gnu-debuglink=$(SYMFX_DIR)/libsymcxx.debug $< $@

# The test checks build-ids against its own file, so make sure it has one.
$(BUILD)/tests/test_symbolize: $(SYMFX)
$(BUILD)/tests/test_symbolize: LDLIBS += -Wl,--build-id
