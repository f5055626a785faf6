# Top-level build for tprof. `make` builds the preload library, the analyzer, the bundled workloads and
# the test programs into $(BUILD) (default build/). Knobs: SAN=1 builds with ASan+UBSan into $(BUILD)/san,
# DEBUG=1 builds -O0 -Werror. Targets: all, test, bench, demo, deps, clean, fuzz, install, uninstall
# (PREFIX, default /usr/local, and DESTDIR), deb (the Debian package, into $(BUILD)/deb).

CC      ?= gcc
BUILD   ?= build
ifeq ($(SAN),1)
BUILD   := $(BUILD)/san
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wundef \
           -Wno-missing-field-initializers
OPT     := -O2
ifeq ($(DEBUG),1)
OPT     := -O0 -Werror
endif
CFLAGS_COMMON := -std=gnu11 -g $(OPT) $(WARN) -Iinclude -D_GNU_SOURCE -pthread
VERSION := $(shell cat VERSION)

# The analyzer, tests and tools: ordinary executables, sanitized under SAN=1.
SANFLAGS :=
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif
CFLAGS  := $(CFLAGS_COMMON) $(SANFLAGS)
LDLIBS  := -lm -lpthread
ANALYZER_LIBS := -lzstd

# The preload library lives inside other programs: hidden visibility, initial-exec TLS, no runtime
# that would need its own preload. Under SAN=1 it traps on undefined behaviour (no UBSan runtime).
PRELOAD_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
                  -fno-omit-frame-pointer -fno-strict-aliasing
ifeq ($(SAN),1)
PRELOAD_CFLAGS += -fsanitize=undefined -fsanitize-undefined-trap-on-error
endif

# On x86-64 the stack walk is preload/unwind.c's own: libunwind is loaded (dlopen) only to check
# it (TPROF_VERIFY_STACKS=1), never linked into every traced process. Elsewhere it walks stacks.
PRELOAD_UNWIND := $(if $(filter x86_64,$(shell uname -m)),,-lunwind)
# The allocator's hooks carry the C library's versions of those names (x86-64's, in the map).
PRELOAD_MAP  := $(if $(filter x86_64,$(shell uname -m)),preload/libtprof.map)
PRELOAD_SRC  := $(wildcard preload/*.c)
PRELOAD_OBJ  := $(PRELOAD_SRC:%.c=$(BUILD)/obj/%.o)
# The analyzer in layers (docs/ARCHITECTURE.md): base/, trace/, analysis/ and out/ make a static
# library that the commands (cmd/), the unit tests and the fuzz target link.
ANALYZER_LIB_SRC := $(wildcard analyzer/base/*.c analyzer/trace/*.c analyzer/analysis/*.c analyzer/out/*.c)
ANALYZER_LIB_OBJ := $(ANALYZER_LIB_SRC:%.c=$(BUILD)/obj/%.o)
ANALYZER_SRC := $(ANALYZER_LIB_SRC) $(wildcard analyzer/cmd/*.c)
CMD_OBJ      := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard analyzer/cmd/*.c))
ANALYZER_A   := $(BUILD)/libtprof-analyzer.a
# The commands but main (tprof.c), for the unit tests of the command line.
CMD_A        := $(BUILD)/libtprof-cmd.a
# The recorder: tprof-recorder (started by libtprof.so), and tprof record, which serves itself.
RECORDER_SRC := recorder/server.c recorder/writer.c recorder/leakscan.c
RECORDER_OBJ := $(RECORDER_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC     := $(wildcard tests/unit/test_*.c)
TEST_BINS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
PROG_SRC     := $(wildcard tests/progs/*.c)
PROG_BINS    := $(PROG_SRC:tests/progs/%.c=$(BUILD)/progs/%) \
                $(patsubst tests/progs/%.cpp,$(BUILD)/progs/%,$(wildcard tests/progs/*.cpp))
BENCH_SRC    := $(wildcard bench/*.c)
BENCH_BINS   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# Objects depend on the headers they include (-MMD); the preload and recorder on all of theirs.
DEPFLAGS     := -MMD -MP
HEADERS      := $(wildcard include/*.h preload/*.h recorder/*.h)

.PHONY: all test bench demo deps clean fuzz install uninstall deb
all: $(BUILD)/libtprof.so $(BUILD)/tprof-recorder $(BUILD)/tprof $(PROG_BINS) $(BENCH_BINS) $(TEST_BINS)

$(BUILD)/obj/preload/%.o: preload/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -c $< -o $@

$(BUILD)/libtprof.so: $(PRELOAD_OBJ) $(PRELOAD_MAP)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,nodelete -Wl,-z,now -Wl,-z,defs $(PRELOAD_MAP:%=-Wl,--version-script=%) \
		-o $@ $(PRELOAD_OBJ) $(PRELOAD_UNWIND) -ldl -lpthread

# the release, for tprof --version
$(BUILD)/obj/analyzer/cmd/tprof.o: CFLAGS += -DTPROF_RELEASE='"$(VERSION)"'
$(BUILD)/obj/analyzer/cmd/tprof.o: VERSION
# tprof summary's replay, which every event goes through: GCC's SLP vectorizer turns the update of a
# site's live bytes and blocks on a free into one 16-byte load and store, while an allocation writes
# the two fields one by one; the 16-byte load of what two 8-byte stores just wrote waits for both to
# leave the store buffer. The summary of the 2 M-pair storm took 4% longer so.
$(BUILD)/obj/analyzer/cmd/cmd_summary.o: CFLAGS += -fno-tree-slp-vectorize
$(BUILD)/obj/analyzer/cmd/cmd_summary.o: Makefile

$(BUILD)/obj/recorder/%.o: recorder/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ipreload -c $< -o $@

$(BUILD)/tprof-recorder: $(BUILD)/obj/recorder/main.o $(RECORDER_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ -lzstd $(LDLIBS)

$(BUILD)/obj/analyzer/%.o: analyzer/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Ianalyzer -Irecorder -Ipreload -c $< -o $@

$(ANALYZER_A): $(ANALYZER_LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(CMD_A): $(filter-out %/tprof.o,$(CMD_OBJ))
	@rm -f $@
	$(AR) rcs $@ $^

# The recorder's objects as an archive, for the unit tests: a test that includes one of its sources
# takes nothing else from it.
RECORDER_A := $(BUILD)/librecorder.a
$(RECORDER_A): $(RECORDER_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/tprof: $(CMD_OBJ) $(RECORDER_OBJ) $(ANALYZER_A)
	$(CC) $(CFLAGS) -o $@ $^ $(ANALYZER_LIBS) $(LDLIBS)

# Unit tests link the analyzer's library; the recorder's and the preload's tests include the
# sources they test (to reach static functions), so they depend on those.
$(BUILD)/tests/test_%: tests/unit/test_%.c tests/unittest.h $(HEADERS) $(PRELOAD_SRC) $(RECORDER_SRC) $(CMD_A) $(ANALYZER_A) \
		       $(RECORDER_A)
	@mkdir -p $(dir $@) $(BUILD)/obj/tests
	$(CC) $(CFLAGS) $(DEPFLAGS) -MF $(BUILD)/obj/tests/$*.d -Ipreload -Ianalyzer -Irecorder -o $@ $< $(CMD_A) $(ANALYZER_A) \
		$(RECORDER_A) $(ANALYZER_LIBS) -lunwind $(LDLIBS)

# Test programs with known heap behaviour: unoptimized so every call really happens.
$(BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -D_GNU_SOURCE -pthread -fno-builtin -o $@ $< -lpthread

# ... and one that is not position-independent, as Debian's python3 is: its PLT entries are the
# addresses of the functions whose addresses it takes
$(BUILD)/progs/canon_plt: tests/progs/canon_plt.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -D_GNU_SOURCE -fno-builtin -fno-pic -no-pie -o $@ $<

# ... and two that speak the recorder's protocol themselves (preload/shm.h)
$(BUILD)/progs/rogue_memfd $(BUILD)/progs/rogue_scan: $(BUILD)/progs/%: tests/progs/%.c preload/shm.h preload/ring.h \
		include/tprof_trace.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O0 -Wall -Wextra -D_GNU_SOURCE -Ipreload -Iinclude -o $@ $<

$(BUILD)/progs/%: tests/progs/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -g -O0 -Wall -Wextra -fno-builtin -o $@ $<

$(BUILD)/bench/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -Wall -Wextra -D_GNU_SOURCE -pthread -o $@ $< -lpthread

# The overhead benchmark's storm, built as Debian builds its packages: optimized, no frame pointers.
all: $(BUILD)/bench/storm_nofp
$(BUILD)/bench/storm_nofp: tests/progs/storm.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O2 -fomit-frame-pointer -fno-builtin -Wall -Wextra -D_GNU_SOURCE -pthread -o $@ $< -lpthread

# The fuzz target (libFuzzer, in clang): every command that reads a trace, with ASan and UBSan, over
# tests/fuzz/corpus. `make fuzz` builds it; tests/integration/fuzz.bats runs it for a short while.
FUZZ_CC    ?= clang
FUZZ_FLAGS := -std=gnu11 -g -O1 -Iinclude -Ipreload -Irecorder -Ianalyzer -D_GNU_SOURCE -pthread \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_SRC   := $(filter-out analyzer/cmd/tprof.c,$(ANALYZER_SRC)) $(RECORDER_SRC)
fuzz: build/fuzz/fuzz_trace build/fuzz/fuzz_symcache build/fuzz/fuzz_supp
build/fuzz/fuzz_supp: tests/fuzz/fuzz_supp.c analyzer/analysis/suppress.c analyzer/base/util.c \
                      analyzer/analysis/suppress.h $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_supp.c analyzer/analysis/suppress.c analyzer/base/util.c
build/fuzz/fuzz_symcache: tests/fuzz/fuzz_symcache.c analyzer/trace/symcache.c analyzer/base/util.c \
                          analyzer/trace/symcache.h $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_symcache.c analyzer/trace/symcache.c analyzer/base/util.c
build/fuzz/fuzz_trace: tests/fuzz/fuzz_trace.c $(FUZZ_SRC) $(HEADERS) $(wildcard analyzer/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_trace.c $(FUZZ_SRC) $(ANALYZER_LIBS) $(LDLIBS)

-include $(shell find $(BUILD)/obj/analyzer $(BUILD)/obj/tests -name '*.d' 2>/dev/null)
-include workloads/workloads.mk
# Further build rules that belong to one part (test fixtures and the like).
-include $(wildcard mk/*.mk)

test: all
	@BUILD=$(BUILD) bash tests/run.sh

bench: all
	@BUILD=$(BUILD) bash bench/run.sh

demo: deps all
	@BUILD=$(BUILD) bash scripts/demo.sh

deps:
	@bash scripts/deps.sh

clean:
	rm -rf build

# make install: PREFIX/bin/tprof finds PREFIX/lib/tprof/libtprof.so, which starts tprof-recorder
# beside itself; the header and its pkg-config file for annotated programs; tprof(1), made from what
# the built tprof says of itself (scripts/mkman.sh); bash and zsh completion; the documentation.
PREFIX  ?= /usr/local
INSTALL_FILES := bin/tprof lib/tprof/libtprof.so lib/tprof/tprof-recorder include/tprof.h \
                 share/pkgconfig/tprof.pc share/man/man1/tprof.1 share/bash-completion/completions/tprof \
                 share/zsh/vendor-completions/_tprof \
                 share/doc/tprof/README.md $(addprefix share/doc/tprof/,$(notdir $(wildcard docs/*.md)))
install: $(BUILD)/libtprof.so $(BUILD)/tprof-recorder $(BUILD)/tprof
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/tprof $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/share/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions \
		$(DESTDIR)$(PREFIX)/share/doc/tprof
	install -m 755 $(BUILD)/tprof $(DESTDIR)$(PREFIX)/bin/tprof
	install -m 644 $(BUILD)/libtprof.so $(DESTDIR)$(PREFIX)/lib/tprof/libtprof.so
	install -m 755 $(BUILD)/tprof-recorder $(DESTDIR)$(PREFIX)/lib/tprof/tprof-recorder
	install -m 644 include/tprof.h $(DESTDIR)$(PREFIX)/include/tprof.h
	printf 'prefix=%s\nincludedir=$${prefix}/include\n\nName: tprof\nDescription: %s\nVersion: %s\nCflags: -I$${includedir}\nLibs: -ldl\n' \
		'$(PREFIX)' "tprof's annotation API (steps, ranges, marks; no-ops without the preload)" \
		'$(VERSION)' >$(DESTDIR)$(PREFIX)/share/pkgconfig/tprof.pc
	bash scripts/mkman.sh $(BUILD)/tprof README.md >$(DESTDIR)$(PREFIX)/share/man/man1/tprof.1
	install -m 644 scripts/tprof.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tprof
	install -m 644 scripts/tprof.zsh-completion $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_tprof
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/tprof/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALL_FILES))
	-rmdir $(DESTDIR)$(PREFIX)/lib/tprof $(DESTDIR)$(PREFIX)/share/doc/tprof 2>/dev/null

# make deb: dpkg-buildpackage (debian/) on a copy of the sources, so that its clean step leaves this
# build alone; the package, its .changes and .buildinfo land in $(BUILD)/deb.
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/tprof-$(VERSION)
	tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $(BUILD)/deb/tprof-$(VERSION)
	cd $(BUILD)/deb/tprof-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b \
		>../build.log 2>&1 || \
		{ tail -30 ../build.log; exit 1; }
	rm -rf $(BUILD)/deb/tprof-$(VERSION)
