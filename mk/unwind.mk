# The stack walk's check program (tests/progs/unwind), which the generic tests/progs rule cannot
# build: optimized as distributions build (frame pointers only where a function asks for one), and
# unoptimized (frame pointers everywhere).

UNWIND_TEST_FILES := $(BUILD)/progs/unwind_check $(BUILD)/progs/unwind_check_O0

all: $(UNWIND_TEST_FILES)

$(BUILD)/progs/unwind_check: tests/progs/unwind/unwind_check.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O2 -Wall -Wextra -pthread -o $@ $< -ldl

$(BUILD)/progs/unwind_check_O0: tests/progs/unwind/unwind_check.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O0 -Wall -Wextra -pthread -o $@ $< -ldl
