# SPDX-License-Identifier: MIT
# corokit - one plain Makefile (liburing's model).
#   make            libraries and samples (corokit.pc is written by make install)
#   make check      between edits, from a built tree (under a minute on 2 CPUs):
#                   the unit tests without those of tests/slow.txt, beside
#                   check-docs, check-layers, check-hooks, check-compile-fail
#                   and check-locals
#   make test       before a push; CI (.ci/run) runs it, then check-scale:
#                   dependencies, then the suite but its scale tests (both coroutine back ends),
#                   the scenarios in both park modes, check-docs, check-layers,
#                   check-build, check-compile-fail, check-locals, check-valgrind,
#                   check-model (search.pml bounded), fuzz-smoke and
#                   check-doc-commands, all in one make run over every CPU (JOBS=N)
#   make check-scale the suite's scale tests (tests/slow.txt: a million jobs or
#                   frames, 10,000 connections, ...), which make test leaves out
#   make check-full the long runs: search.pml's whole supertrace and the
#                   large model instances, fuzz (ASan) for 10 minutes, make
#                   stress, check-scale, tools/bench/scale.sh
#   make quick      the unit tests of make check and the compile-fail cases
#   make demo       build and run samples/demo; draw its trace (tools/timeline)
#   make check-asan the suite under AddressSanitizer + UBSan, without the tests
#                   that only repeat at scale; make check-asan-full: all of it
#   make check-tsan the concurrency scenarios under ThreadSanitizer
#   make stress     the long opt-in runs of tests/stress
#   make bench      benchmarks against the peers (tools/bench)
#   make install    PREFIX=/usr/local DESTDIR= (libraries, headers, corokit.pc, man pages,
#                   the trace timeline tool as bin/corokit-timeline, the locals
#                   checker tools/check-locals.sh as bin/corokit-check-locals)
#   make uninstall  the same PREFIX and DESTDIR: removes what install put there
#   make check-build  install into a scratch DESTDIR, build C and C++ programs
#                   against it through pkg-config (static and shared), run them
#   make check-docs every exported function has a man page and a test (make
#                   test-index writes docs/tests.md); docs/api.md is current;
#                   a header comment and its man page name the same error codes;
#                   lib/'s comments carry no benchmark figures or history;
#                   docs/architecture.md's which-file table names every lib/ file
#   make check-layers lib/'s layers: no upward include or symbol use (nm);
#                   no lib/ .c over 800 lines, no function over 80 (check-lengths.sh)
#   make check-model the spin models of tools/model/ (in make test; MODEL_BITS=N:
#                   search.pml's bitstate table, 24 in make test, 30 in check-full;
#                   MODEL_LARGE=1, as check-full: the larger instances, rwlock.pml's)
#   make check-model-full  the same, every mode exhaustively (hours, 9 GB)
#   make fuzz       libFuzzer on the API and the cpuset parser, lib/ under ASan,
#                   FUZZ_SECONDS=60 (check-full: 600); make test runs fuzz-smoke:
#                   the seeds and 2 s of each harness, lib/ uninstrumented
#   make check-compile-fail  each misuse in tests/compile_fail/ is refused, its twin compiles
#   make check-clang  clang -Werror on every C file of lib/, samples/ and tests/
#                   (its front end alone: -fsyntax-only; CI runs it)
#   make check-hooks  no test hook in the shipped libraries: they live in
#                   the test library alone (in make test)
#   make check-valgrind  samples under memcheck: nothing leaked or still
#                   reachable after coro_sched_destroy (in make test)
#   make check-locals FILES='a.c b.c' [CHECK_LOCALS_FLAGS='-I... -D...']
#                   C locals used across an await or yield in those bodies
#                   (default: samples/*.c, after the checker's self-test)
#   make bench-http samples/httpd against nginx-light under wrk
#   make check-doc-commands  every shell command of README.md and docs/*.md,
#                   run in a scratch copy (in make test)
#   make bench-proxy samples/proxy against nginx as a proxy under wrk
# V=1 shows full command lines; CC=clang builds with clang.

VERSION_H := include/corokit/version.h
MAJOR := $(shell sed -n 's/^\#define CORO_VERSION_MAJOR //p' $(VERSION_H))
MINOR := $(shell sed -n 's/^\#define CORO_VERSION_MINOR //p' $(VERSION_H))
PATCH := $(shell sed -n 's/^\#define CORO_VERSION_PATCH //p' $(VERSION_H))
VERSION := $(MAJOR).$(MINOR).$(PATCH)

CC ?= cc
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share

ifeq ($(ASAN),1)
B ?= build-asan
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(TSAN),1)
B ?= build-tsan
SAN := -fsanitize=thread -fno-omit-frame-pointer
else
B ?= build
SAN :=
endif

# python3, resolved once: a version manager's shim first on the PATH
# (pyenv's runs a few shell scripts before the interpreter: 0.3 s a start
# on the 2-vCPU machine, against 0.04 s) would run at each of make test's
# many starts of python3 - the trace tests' JSON checks, tools/ci's
# scripts.  The interpreter the shim picks (its sys.executable) is linked
# as $(B)/.py/python3 and put ahead of the PATH for every recipe and what
# it runs; a recursive make keeps the link (COROKIT_PY_DIR)
ifeq ($(origin COROKIT_PY_DIR),undefined)
PY_EXE := $(shell python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
ifneq ($(PY_EXE),)
COROKIT_PY_DIR := $(abspath $(B))/.py
$(shell mkdir -p '$(COROKIT_PY_DIR)' && ln -sfn '$(PY_EXE)' '$(COROKIT_PY_DIR)/python3')
export COROKIT_PY_DIR
export PATH := $(COROKIT_PY_DIR):$(PATH)
endif
endif

OPT ?= -O2 -g
# -z defs: no undefined symbol in the .so (not with sanitizers: clang leaves
# their runtime symbols to the executable)
ZDEFS := $(if $(SAN),,-Wl,-z,defs)
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=gnu11 $(OPT) $(WARN) -pthread -Iinclude $(SAN)
LIB_CFLAGS := $(BASE_CFLAGS) -Ilib -fvisibility=hidden -D_GNU_SOURCE
CFLAGS ?=
LDFLAGS ?=
LIBS := -lck -pthread

ifeq ($(V),1)
Q :=
else
Q := @
endif
# "  CC  file" lines, unless V=1 or make -s
SAY = $(if $(or $(Q:@=),$(findstring s,$(firstword -$(MAKEFLAGS)))),:,echo)

LIB_SRC := $(wildcard lib/*/*.c)
# lib/ compiles once (pic/), for the static and the shared library alike:
# position-independent, so that the static library links into a shared
# object of the user's too, with the initial-exec TLS model, so that a
# thread-local (the worker's record, the running job) is one %fs-relative
# load in both libraries, not a __tls_get_addr call (the general-dynamic
# model a -fPIC compile picks): the library's thread-locals take a few
# hundred bytes, which glibc's static TLS reserve holds for a dlopen too.
# Instruction counts of the shapes stay within 1 % of the position-
# dependent objects the static library was built from before
# (docs/benchmarks.md, "Instruction counts of the shapes")
PIC := -fPIC -ftls-model=initial-exec
PIC_OBJ := $(patsubst lib/%.c,$(B)/pic/%.o,$(LIB_SRC))
STATIC := $(B)/libcorokit.a
# the test library: lib/ with CORO_TEST_HOOKS (lib/base/base.h TEST
# HOOKS: the knobs and counters of the white-box tests and scenarios),
# linked by the test binaries alone; check-hooks finds none of the hooks in
# the shipped libraries.  Only the files whose code the hooks change
# (tools/dev/hook-files.sh says which) are built again with it (tobj/);
# every other file compiles to the same code either way (a header's hook
# part only declares: check-hooks fails otherwise), so the test library
# takes its shipped object (pic/)
TEST_HOOK_SRC := $(shell tools/dev/hook-files.sh)
TEST_LIB_OBJ := $(patsubst lib/%.c,$(B)/tobj/%.o,$(TEST_HOOK_SRC)) \
	$(patsubst lib/%.c,$(B)/pic/%.o,$(filter-out $(TEST_HOOK_SRC),$(LIB_SRC)))
TEST_LIB := $(B)/libcorokit_test.a
# libcorokit.so.MAJOR.MINOR.PATCH, soname libcorokit.so.MAJOR, and the
# development link libcorokit.so (build/ holds the same three names)
SONAME := libcorokit.so.$(MAJOR)
REALNAME := libcorokit.so.$(VERSION)
SHARED := $(B)/$(REALNAME)

SAMPLE_SRC := $(wildcard samples/*.c)
SAMPLES := $(patsubst samples/%.c,$(B)/samples/%,$(SAMPLE_SRC))

# tests/api/: the public API alone (built without -Ilib, so a lib/ header
# there fails the build); tests/internal/: white-box tests that read lib/'s
# headers and test hooks; a tests/test_*.c dropped at the top builds as an
# internal one until it is filed under one of the two
TEST_SRC := $(wildcard tests/api/test_*.c tests/internal/test_*.c tests/test_*.c)
# tests/criterion_git.c: Criterion's libgit2 initialized on demand (the
# file says why), linked into the suite beside the tests
TEST_HARNESS_SRC := tests/criterion_git.c
TEST_OBJ := $(patsubst tests/%.c,$(B)/tests/%.o,$(TEST_SRC) $(TEST_HARNESS_SRC)) \
	$(B)/tests/api/test_coro_switch.o
TEST_BIN := $(B)/tests/corokit_tests
SCEN_SRC := $(wildcard tests/stress/*.c)
SCEN_BIN := $(patsubst tests/stress/%.c,$(B)/stress/%,$(SCEN_SRC))

TOOL_BIN := $(B)/tools/spawn_cost $(B)/tools/frame_cost $(B)/tools/scale_cost $(B)/tools/spawn_threads
TOOL_BIN += $(B)/tools/gen_bench


.PHONY: check-layers
.PHONY: all lib samples tools test quick run-tests check check-unit check-scale check-full test-build test-suite test-scenarios test-scenarios-fence model-runs test-index demo check-asan check-tsan stress bench bench-http bench-proxy install clean deps
all: lib samples

lib: $(STATIC) $(SHARED)

$(B)/pic/%.o: lib/%.c
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(PIC) -MMD -MP -c $< -o $@

$(STATIC): $(PIC_OBJ)
	@$(SAY) "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/tobj/%.o: lib/%.c
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) $(PIC) -DCORO_TEST_HOOKS -MMD -MP -c $< -o $@

$(TEST_LIB): $(TEST_LIB_OBJ)
	@$(SAY) "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(SHARED): $(PIC_OBJ) lib/corokit.map
	@$(SAY) "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/corokit.map \
		$(ZDEFS) $(SAN) $(LDFLAGS) -o $@ $(PIC_OBJ) $(LIBS)
	$(Q)ln -sf $(REALNAME) $(B)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/libcorokit.so

samples: $(SAMPLES)

tools: $(TOOL_BIN)

$(B)/tools/%: tools/bench/%.c $(STATIC)
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -MMD -MP $< -o $@ $(STATIC) $(LIBS) $(LDFLAGS)

$(B)/samples/%: samples/%.c $(STATIC)
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -MMD -MP $< -o $@ $(STATIC) $(LIBS) $(LDFLAGS)

# ---- tests --------------------------------------------------------------------
# the test files compile with -Og (after OPT's -O2): 40 % less compile
# time than -O2, and the suite, whose time goes to lib/ (the test library
# keeps OPT), ran no slower; and with -g1 (after OPT's -g): line tables
# alone, which a backtrace, ASan's reports and gdb's break FILE:LINE need,
# without the variables' descriptions, for a quarter less compile time;
# TEST_OPT= builds them with OPT (gdb's print of a test's locals)
TEST_OPT ?= -Og -g1
TEST_CFLAGS := $(BASE_CFLAGS) $(TEST_OPT) -Itests $(CFLAGS) -DCORO_BUILD_DIR='"$(B)"' -DCORO_TEST_HOOKS -MMD -MP

$(B)/tests/api/%.o: tests/api/%.c
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -c $< -o $@

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -Ilib -c $< -o $@

# the same coroutine tests, on the portable switch back end
$(B)/tests/api/test_coro_switch.o: tests/api/test_coro.c
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(TEST_CFLAGS) -DCORO_USE_SWITCH -c $< -o $@

$(TEST_BIN): $(TEST_OBJ) $(TEST_LIB)
	@$(SAY) "  LD      $@"
	$(Q)$(CC) $(BASE_CFLAGS) -o $@ $(TEST_OBJ) $(TEST_LIB) -lcriterion $(LIBS) $(LDFLAGS)

$(B)/stress/%: tests/stress/%.c tests/stress/scenario.h $(TEST_LIB)
	@mkdir -p $(@D)
	@$(SAY) "  CC      $@"
	$(Q)$(CC) $(BASE_CFLAGS) -Ilib $(CFLAGS) -DCORO_TEST_HOOKS -MMD -MP $< -o $@ $(TEST_LIB) \
		$(LIBS) $(LDFLAGS)

deps:
	@tools/dev/deps.sh

# Three tiers (README.md, "Testing"):
#   make check       between edits, from a built tree: the unit tests but
#                    those of tests/slow.txt, beside the static checks
#   make test        before a push, and CI (.ci/run, which runs
#                    check-scale after it): everything below but the
#                    suite's scale tests, every model exhaustive but
#                    search.pml (bounded: MODEL_BITS), fuzz-smoke
#   make check-full  the long runs: the full supertrace and the large
#                    model instances (MODEL_LARGE), fuzz under ASan for 10
#                    minutes, the stress scenarios, the suite's scale tests
#                    (check-scale), tools/bench/scale.sh
# make test builds the libraries, the samples and the suite first (every
# CPU compiling: the suite's builds and its run are the longest chain),
# then runs its parts in one make run, so that the suite, the scenarios,
# each spin search (a make job each), the other parts and the builds left
# (the scenarios', the fuzz harnesses') share every CPU; each part's
# output is printed whole when it ends (-Otarget).  The parts start in
# the order listed: the suite first, then the longest one-CPU jobs (the
# doc commands, the spin searches, the longest first), which fill the CPU
# the suite's waits leave, then the shorter ones.  A part whose programs
# this second run builds (the scenarios, the fuzz smoke) runs once every
# later part has started: make comes back to a goal's own recipe after
# starting the goals that follow (so one make run for the builds too
# would start the suite last), which makes them the short jobs the run
# ends on.  JOBS=N overrides the CPU count; a -jN given to make itself is
# kept.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PAR = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS))
# search.pml in make test: a 2^24-bit table (tools/ci/check-model.sh says
# why a bitstate search is sound enough there); check-full: 2^30
TEST_MODEL_BITS ?= 24
TEST_PARTS := test-suite check-doc-commands model-runs fuzz-smoke test-scenarios test-scenarios-fence \
	check-build check-valgrind check-docs check-locals check-layers check-hooks check-compile-fail
test: deps
	$(Q)tools/dev/deps.sh $(FUZZ_DEPS) $(DOC_DEPS)
	$(Q)$(MAKE) --no-print-directory $(PAR) all $(TEST_BIN)
	$(Q)$(MAKE) --no-print-directory $(PAR) -Otarget MODEL_BITS=$(TEST_MODEL_BITS) \
		TEST_FILTER='!($(SCALE_TESTS))' $(TEST_PARTS)
	@echo "make test: every part passed (the scale tests: make check-scale)"

# the suite's processes take malloc's memory in transparent huge pages
# where the kernel offers them on request (glibc 2.35 and later; ignored
# before, and by ASan's allocator): Criterion starts a process a test, and
# the tests that allocate a million jobs or frames fault their memory in
# 2 MB at a time, not 4 kB - the suite takes about a ninth less CPU here
# (the scenarios and the compiles gained nothing measurable, so they
# keep the default).  The tests assert nothing about page sizes.
SUITE_ENV = GLIBC_TUNABLES=$${GLIBC_TUNABLES:+$$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1
# the Criterion suite, whole (tests/api/test_samples.c runs the samples),
# or what TEST_FILTER (a Criterion --filter) selects; no test uses the
# shared library (check-build, check-docs and the doc commands do)
test-suite: $(STATIC) $(SAMPLES) $(TEST_BIN)
	$(Q)$(SUITE_ENV) $(TEST_BIN) -j2 $(if $(TEST_FILTER),--filter '$(TEST_FILTER)') $(TEST_ARGS)

# the scenarios of tests/stress, in both park modes
test-scenarios: $(SCEN_BIN)
	$(Q)tools/ci/run-scenarios.sh $(B) quick
test-scenarios-fence: $(SCEN_BIN)
	$(Q)echo "scenarios with COROKIT_MEMBARRIER=0 (the park protocol's full-fence mode)"
	$(Q)COROKIT_MEMBARRIER=0 tools/ci/run-scenarios.sh $(B) quick

# the tests of tests/slow.txt: make check leaves out every kind of them,
# check-asan the scale ones
slow_tests = $(shell awk '$$1 ~ /^($(1))$$/ { print $$2 }' tests/slow.txt | paste -sd'|')
QUICK_SKIP = $(call slow_tests,program|scale|slow)
ASAN_SKIP = $(call slow_tests,scale)
# make test leaves the scale ones to make check-scale, which CI runs after
# it and make check-full runs too: each repeats at scale (a million jobs
# or frames, 10,000 connections, 100,000 round trips) what a smaller test
# of make test checks, and together they take about a fifth of the
# suite's CPU (13 of its 656 runs)
SCALE_TESTS = $(call slow_tests,scale)
check-scale: lib $(TEST_BIN)
	$(Q)$(SUITE_ENV) $(TEST_BIN) -j2 --filter '@($(SCALE_TESTS))' $(TEST_ARGS)

# make check: the unit tests without the slow ones beside the static
# checks, each a make job (under a minute on 2 CPUs from a built tree)
CHECK_PARTS := check-unit check-docs check-layers check-hooks check-compile-fail check-locals
check: deps
	$(Q)$(MAKE) --no-print-directory $(PAR) -Otarget $(CHECK_PARTS)
	@echo "make check: every part passed"
check-unit: lib $(TEST_BIN)
	$(Q)$(SUITE_ENV) $(TEST_BIN) -j2 --filter '!($(QUICK_SKIP))' $(TEST_ARGS)

# the long runs, one after another: the whole supertrace of search.pml
# and the large model instances (rwlock.pml's two rounds), 10 minutes of
# fuzzing lib/ under ASan, the stress scenarios (minutes), the suite's scale
# tests (check-scale), tools/bench/scale.sh
# (under the benchmark lock that tools/bench/run.sh takes on a shared machine)
check-full: deps
	$(Q)$(MAKE) --no-print-directory MODEL_BITS=30 MODEL_LARGE=1 check-model
	$(Q)$(MAKE) --no-print-directory FUZZ_SECONDS=600 fuzz
	$(Q)$(MAKE) --no-print-directory stress
	$(Q)$(MAKE) --no-print-directory check-scale
	$(Q)$(MAKE) --no-print-directory tools $(TEST_BIN)
	$(Q)flock /tmp/corokit-bench.lock tools/bench/scale.sh $(B)

# make quick: the unit tests of make check and the compile-fail cases,
# without the static checks
quick: lib $(TEST_BIN)
	$(Q)$(SUITE_ENV) $(TEST_BIN) -j$$(nproc) --filter '!($(QUICK_SKIP))' $(TEST_ARGS)
	$(Q)tools/ci/check-compile-fail.sh $(CC) >/dev/null || tools/ci/check-compile-fail.sh $(CC)

# the spin models of tools/model/: each verifies, each broken variant is
# rejected; JOBS searches at a time (each on one CPU); MODEL_BITS: the
# bitstate table of the largest model (tools/ci/check-model.sh)
MODEL_BITS ?= $(TEST_MODEL_BITS)
# MODEL_LARGE=1 (check-full): the larger instance a model names
# (tools/ci/check-model.sh: rwlock.pml's two rounds)
MODEL_LARGE ?=
check-model: deps
	$(Q)MODEL_BITS=$(MODEL_BITS) MODEL_LARGE=$(MODEL_LARGE) MODEL_JOBS=$(JOBS) tools/ci/check-model.sh $(B)

# the same as make jobs (make test): one target a search, in the order
# tools/ci/check-model.sh --list gives (the longest first), then the report
# (the list is asked for only by a make that builds model-runs: a rule's
# prerequisites expand when make reads it, and every other make, the
# recursive ones and make -n included, would pay for the script)
MODEL_VERDICTS = $(if $(filter model-runs,$(MAKECMDGOALS)),$(addprefix $(B)/model/,$(addsuffix /verdict,$(shell tools/ci/check-model.sh --list))))
$(B)/model/%/verdict: FORCE
	$(Q)s='$*'; m=$${s%%-D*}; MODEL_BITS=$(MODEL_BITS) tools/ci/check-model.sh --one $(B) $$m $${s#$$m}
model-runs: $(MODEL_VERDICTS)
	$(Q)tools/ci/check-model.sh --report $(B)

# every mode of every model exhaustively (search.pml's membarrier mode:
# about 8.7 GB and 84 minutes of CPU; make test checks it by supertrace),
# one search at a time, for the memory
check-model-full: deps
	$(Q)MODEL_FULL=1 MODEL_JOBS=1 tools/ci/check-model.sh $(B)

# libFuzzer (Debian clang): tests/fuzz/fuzz_api.c drives random API sequences
# on a single-threaded scheduler, fuzz_cpuset.c feeds coro_cpuset_parse raw
# bytes.  FUZZ_SECONDS for the API harness (the cpuset one gets a sixth);
# new inputs go to build-fuzz/corpus/, the committed seeds stay as they are.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_B := build-fuzz
FUZZ_FLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Iinclude -Ilib -D_GNU_SOURCE -pthread \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJ := $(patsubst lib/%.c,$(FUZZ_B)/obj/%.o,$(LIB_SRC))
.SECONDARY: $(FUZZ_LIB_OBJ)
$(FUZZ_B)/obj/%.o: lib/%.c $(wildcard lib/*/*.h include/corokit/*.h)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fvisibility=hidden -c $< -o $@
$(FUZZ_B)/%: tests/fuzz/%.c $(FUZZ_LIB_OBJ)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -lck -o $@
FUZZ_DEPS := clang libclang-rt-14-dev
fuzz: deps
	$(Q)tools/dev/deps.sh $(FUZZ_DEPS)
	$(Q)$(MAKE) --no-print-directory $(FUZZ_B)/fuzz_api $(FUZZ_B)/fuzz_cpuset
	$(Q)mkdir -p $(FUZZ_B)/corpus/api $(FUZZ_B)/corpus/cpuset
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(FUZZ_B)/fuzz_cpuset -max_total_time=$$(( $(FUZZ_SECONDS) / 6 + 1 )) \
		-print_final_stats=1 $(FUZZ_B)/corpus/cpuset tests/fuzz/corpus/cpuset >$(FUZZ_B)/fuzz_cpuset.log 2>&1 || \
		{ tail -40 $(FUZZ_B)/fuzz_cpuset.log; exit 1; }
	$(Q)grep -E 'stat::number_of_executed_runs|Done' $(FUZZ_B)/fuzz_cpuset.log
	$(Q)ASAN_OPTIONS=detect_leaks=1 $(FUZZ_B)/fuzz_api -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
		-print_final_stats=1 $(FUZZ_B)/corpus/api tests/fuzz/corpus/api >$(FUZZ_B)/fuzz_api.log 2>&1 || \
		{ tail -40 $(FUZZ_B)/fuzz_api.log; exit 1; }
	$(Q)grep -E 'stat::number_of_executed_runs|Done' $(FUZZ_B)/fuzz_api.log
	$(Q)echo "fuzz: no crash, leak, hang or oracle failure in $(FUZZ_SECONDS) s"

# make test's fuzzing: the harnesses built against the plain static library
# (clang instruments the harness alone: a build of lib/ under ASan is make
# fuzz's, in check-full), each run over the committed seeds, then for
# FUZZ_SMOKE_SECONDS: the harness's oracles on every result, and
# LeakSanitizer (ASan's malloc sees every allocation lib/ makes)
FUZZ_SMOKE_SECONDS ?= 2
FUZZ_SMOKE := $(B)/fuzz/fuzz_api $(B)/fuzz/fuzz_cpuset
$(B)/fuzz/%: tests/fuzz/%.c $(STATIC)
	@mkdir -p $(@D)
	@$(SAY) "  FUZZCC  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(STATIC) -lck -o $@
fuzz-smoke: $(FUZZ_SMOKE)
	$(Q)for h in api cpuset; do rm -rf $(B)/fuzz/corpus-$$h && mkdir -p $(B)/fuzz/corpus-$$h && \
		ASAN_OPTIONS=detect_leaks=1 $(B)/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SMOKE_SECONDS) \
			-timeout=20 $(B)/fuzz/corpus-$$h tests/fuzz/corpus/$$h >$(B)/fuzz/$$h.log 2>&1 || \
		{ tail -40 $(B)/fuzz/$$h.log; echo "fuzz-smoke: fuzz_$$h failed ($(B)/fuzz/$$h.log)"; exit 1; }; \
		echo "fuzz-smoke: fuzz_$$h: $$(grep -E '^Done' $(B)/fuzz/$$h.log)"; done
	$(Q)echo "fuzz-smoke: the seeds and $(FUZZ_SMOKE_SECONDS) s of each harness: no crash, leak or oracle failure"

# the programs the suite runs: the tests, the samples (tests/api/
# test_samples.c runs them), the scenarios; the shared library only in the
# plain tree (check-build and check-docs use it; no sanitizer run does)
RUN_BIN := $(STATIC) $(if $(SAN),,$(SHARED)) $(SAMPLES) $(TEST_BIN) $(SCEN_BIN)
# what make test runs (the fuzz harnesses too), built (make test builds
# each part's programs as that part comes)
test-build: $(RUN_BIN) $(FUZZ_SMOKE)
# TEST_FILTER: a Criterion --filter; SCEN_FENCE=1: the scenarios again in
# the full-fence mode (the plain tree's default)
TEST_FILTER ?=
SCEN_FENCE ?= $(if $(SAN),,1)
# the parts of make test that a sanitizer tree runs, one after another
run-tests:
	$(Q)$(MAKE) --no-print-directory $(PAR) $(RUN_BIN)
	$(Q)$(MAKE) --no-print-directory -j1 test-suite test-scenarios $(if $(SCEN_FENCE),test-scenarios-fence)

# check-asan leaves out the tests that only repeat at scale what smaller
# tests run under it too (tests/slow.txt's scale ones: a fifth of its
# time), and runs the scenarios in the default park mode only: a bad
# access shows the first time its path runs, and the plain suite runs
# them all.  check-asan-full
# runs everything, the scenarios in both modes.
ASAN_ENV := LSAN_OPTIONS="suppressions=$(CURDIR)/tools/ci/lsan.supp print_suppressions=0" \
	ASAN_OPTIONS="detect_leaks=1 abort_on_error=0"
check-asan: deps
	$(Q)$(ASAN_ENV) $(MAKE) --no-print-directory ASAN=1 \
		TEST_FILTER='!($(ASAN_SKIP))' run-tests

check-asan-full: deps
	$(Q)$(ASAN_ENV) $(MAKE) --no-print-directory ASAN=1 SCEN_FENCE=1 run-tests

check-tsan: deps
	$(Q)$(MAKE) --no-print-directory $(PAR) TSAN=1 $(patsubst build/%,build-tsan/%,$(SCEN_BIN))
	$(Q)TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/tools/ci/tsan.supp" \
		tools/ci/run-scenarios.sh build-tsan full

stress: deps all $(SCEN_BIN)
	$(Q)tools/ci/run-scenarios.sh $(B) stress

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(B)/samples/demo $(B)/demo-trace.json
	$(Q)tools/timeline $(B)/demo-trace.json $(B)/demo-timeline.png
	@echo "demo: the trace's picture is $(B)/demo-timeline.png (docs/observability.md)"

bench: deps all
	$(Q)tools/bench/run.sh

# samples/httpd against nginx-light under wrk (installs both if missing)
bench-http: all
	$(Q)tools/bench/http.sh

# samples/proxy against nginx as a proxy, before one nginx backend, under
# wrk: req/s, CPU and context switches per request (installs both if missing)
bench-proxy: all
	$(Q)tools/bench/proxy.sh

# ---- install, uninstall, corokit.pc, man pages, packaging checks ----------------
# corokit.pc is written at install time from PREFIX, with paths relative to
# ${prefix} where they lie under it.  Requires.private names ck only when the
# static library really calls a ck function that is not inline (nm decides,
# so the file stays right whatever lib/ comes to use).
# Libs: carries -Wl,-rpath,${libdir} (PC_RPATH=auto) unless LIBDIR is one the
# dynamic loader searches by itself: a program built through pkg-config
# against PREFIX=$HOME/opt then runs without LD_LIBRARY_PATH or ldconfig.
# PC_RPATH=yes always writes it, PC_RPATH=no never (distribution packages).
PC_RPATH ?= auto
PC_SYSLIBDIRS := /lib /usr/lib /lib64 /usr/lib64 $(addprefix /usr/lib/,$(shell $(CC) -print-multiarch 2>/dev/null))
PC_RPATH_ON = $(or $(filter yes,$(PC_RPATH)),$(and $(filter auto,$(PC_RPATH)),$(if $(filter $(LIBDIR),$(PC_SYSLIBDIRS)),,yes)))
MAN3 := $(wildcard man/man3/*.3)
MAN7 := $(wildcard man/man7/*.7)
PC_REL = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

$(B)/corokit.pc: corokit.pc.in $(VERSION_H) $(STATIC) FORCE
	@mkdir -p $(@D)
	$(Q)req=; if nm -u $(STATIC) | grep -q ' ck_'; then req='Requires.private: ck'; fi; \
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call PC_REL,$(LIBDIR))|' \
		-e 's|@INCDIR@|$(call PC_REL,$(INCDIR))|' -e 's|@VERSION@|$(VERSION)|' \
		-e "s|@REQUIRES_PRIVATE@|$$req|" \
		-e 's|@RPATH@|$(if $(PC_RPATH_ON),-Wl$(,)-rpath$(,)$${libdir} )|' $< > $@

FORCE:
, := ,
space := $(subst ,, )

install: lib $(B)/corokit.pc
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/corokit \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	install -m 644 include/corokit.h $(DESTDIR)$(INCDIR)/
	install -m 644 include/corokit/*.h $(DESTDIR)$(INCDIR)/corokit/
	install -m 644 $(STATIC) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libcorokit.so
	install -m 644 $(B)/corokit.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/
	@# the trace timeline tool (tools/timeline), which finds its timeline.py in DATADIR/corokit
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/corokit
	install -m 755 tools/timeline $(DESTDIR)$(BINDIR)/corokit-timeline
	install -m 644 tools/timeline.py $(DESTDIR)$(DATADIR)/corokit/
	@# the locals checker (guide.md), and the files of its --self-test
	install -d $(DESTDIR)$(DATADIR)/corokit/check_locals
	install -m 755 tools/check-locals.sh $(DESTDIR)$(BINDIR)/corokit-check-locals
	install -m 644 tests/check_locals/bad.c tests/check_locals/good.c \
		$(DESTDIR)$(DATADIR)/corokit/check_locals/
	@# a real install as root: refresh the loader's cache for LIBDIR
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(INCDIR)/corokit.h
	rm -f $(addprefix $(DESTDIR)$(INCDIR)/corokit/,$(notdir $(wildcard include/corokit/*.h)))
	-rmdir $(DESTDIR)$(INCDIR)/corokit
	rm -f $(DESTDIR)$(LIBDIR)/libcorokit.a $(DESTDIR)$(LIBDIR)/$(REALNAME) \
		$(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libcorokit.so \
		$(DESTDIR)$(LIBDIR)/pkgconfig/corokit.pc
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(MAN3)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7)))
	rm -f $(DESTDIR)$(BINDIR)/corokit-timeline $(DESTDIR)$(DATADIR)/corokit/timeline.py
	rm -f $(DESTDIR)$(BINDIR)/corokit-check-locals \
		$(DESTDIR)$(DATADIR)/corokit/check_locals/bad.c $(DESTDIR)$(DATADIR)/corokit/check_locals/good.c
	-rmdir $(DESTDIR)$(DATADIR)/corokit/check_locals
	-rmdir $(DESTDIR)$(DATADIR)/corokit

# lib/ in layers (docs/architecture.md): no upward include or symbol, no
# circle of more than 2 object files; no lib/ .c over 800 lines and no
# function of lib/ over 80 (tools/ci/check-lengths.sh says how it counts)
check-layers: lib
	$(Q)CC=$(CC) tools/ci/check-layers.sh --self-test
	$(Q)tools/ci/check-layers.sh $(B)
	$(Q)tools/ci/check-lengths.sh --self-test
	$(Q)tools/ci/check-lengths.sh lib

# the test hooks (lib/base/base.h TEST HOOKS) are in the test library alone
check-hooks: lib $(TEST_LIB)
	$(Q)CC=$(CC) tools/ci/check-hooks.sh --self-test
	$(Q)tools/ci/check-hooks.sh $(B)

# docs/tests.md: each public function and the tests that call it; fails
# when one has none, or a test is away from its home (a suite's name is
# its file's name: tools/dev/rename-tests.py)
test-index: lib $(TEST_BIN)
	$(Q)tools/ci/test-index.py --self-test
	$(Q)tools/ci/test-index.py $(B)

check-docs: lib test-index
	$(Q)tools/ci/check-man.sh $(B)/$(SONAME)
	$(Q)tools/dev/gen-man.sh --check
	$(Q)tools/ci/check-errors.sh
	$(Q)tools/ci/check-doc-errors.py --self-test
	$(Q)tools/ci/check-doc-errors.py
	$(Q)tools/dev/add-spdx.sh --check
	$(Q)tools/ci/check-comments.py --self-test
	$(Q)tools/ci/check-comments.py
	$(Q)tools/ci/check-arch-table.py --self-test
	$(Q)tools/ci/check-arch-table.py

check-build: lib
	+$(Q)CC=$(CC) tools/ci/check-build.sh $(B)

check-compile-fail:
	$(Q)tools/ci/check-compile-fail.sh $(CC)

# clang's -Werror verdict on every C file the build compiles (lib/,
# samples/, tests/), each with the flags its build rule gives it, without
# a second build: clang's warnings come from its front end, which
# -fsyntax-only runs whole; only code generation is left out, and that is
# the gcc build's (CI builds and tests with gcc).  CLANG=clang-N for
# another clang.
CLANG ?= clang
CLANG_B := $(B)/clang-syntax
CLANG_OK := $(patsubst %.c,$(CLANG_B)/%.ok,$(LIB_SRC) $(SAMPLE_SRC) $(TEST_SRC) $(TEST_HARNESS_SRC) $(SCEN_SRC)) \
	$(patsubst lib/%.c,$(CLANG_B)/tlib/%.ok,$(LIB_SRC)) $(CLANG_B)/tests/api/test_coro_switch.ok
CLANG_SYNTAX = @mkdir -p $(@D); $(SAY) "  CLANG   $<"; \
	$(CLANG) -fsyntax-only -MMD -MP -MF $(@:.ok=.d) -MT $@
$(CLANG_B)/lib/%.ok: lib/%.c
	$(Q)$(CLANG_SYNTAX) $(LIB_CFLAGS) $(CFLAGS) $< && touch $@
$(CLANG_B)/tlib/%.ok: lib/%.c
	$(Q)$(CLANG_SYNTAX) $(LIB_CFLAGS) $(CFLAGS) -DCORO_TEST_HOOKS $< && touch $@
$(CLANG_B)/samples/%.ok: samples/%.c
	$(Q)$(CLANG_SYNTAX) $(BASE_CFLAGS) $(CFLAGS) $< && touch $@
$(CLANG_B)/tests/stress/%.ok: tests/stress/%.c
	$(Q)$(CLANG_SYNTAX) $(BASE_CFLAGS) -Ilib $(CFLAGS) -DCORO_TEST_HOOKS $< && touch $@
$(CLANG_B)/tests/api/test_coro_switch.ok: tests/api/test_coro.c
	$(Q)$(CLANG_SYNTAX) $(TEST_CFLAGS) -DCORO_USE_SWITCH $< && touch $@
$(CLANG_B)/tests/api/%.ok: tests/api/%.c
	$(Q)$(CLANG_SYNTAX) $(TEST_CFLAGS) $< && touch $@
$(CLANG_B)/tests/%.ok: tests/%.c
	$(Q)$(CLANG_SYNTAX) $(TEST_CFLAGS) -Ilib $< && touch $@
check-clang:
	$(Q)$(MAKE) --no-print-directory $(PAR) -Otarget $(CLANG_OK)
	@echo "check-clang: $(words $(CLANG_OK)) files, no warning from $(CLANG) -Werror"

check-valgrind: all
	$(Q)tools/dev/deps.sh valgrind
	$(Q)tools/ci/check-valgrind.sh $(B)

# a body's C local read after a suspension (tools/check-locals.sh; guide.md)
FILES ?= $(SAMPLE_SRC)
CHECK_LOCALS_FLAGS ?=
check-locals:
	$(Q)tools/check-locals.sh --self-test
	$(Q)tools/check-locals.sh $(CHECK_LOCALS_FLAGS) $(FILES)

# every shell command shown in README.md and docs/*.md, run in a scratch
# copy of the tree (tools/ci/check-doc-commands.py says what runs, how
# servers are probed, the markers, and the meta and slow commands)
# what the documents' commands need besides the build's tools: curl and
# wrk (the servers' blocks), matplotlib (make demo's picture, tools/timeline,
# which would install it itself, within a block's time limit); make test
# installs them with the rest, before its first part starts
DOC_DEPS := curl wrk python3-matplotlib
check-doc-commands: all
	$(Q)tools/dev/deps.sh $(DOC_DEPS)
	$(Q)tools/ci/check-doc-commands.py --self-test
	$(Q)tools/ci/check-doc-commands.py --build $(B)

.PHONY: check-doc-commands
.PHONY: fuzz-smoke
.PHONY: uninstall check-asan-full check-docs check-hooks check-build check-clang check-compile-fail check-locals check-valgrind check-model check-model-full fuzz FORCE
# ---- end of install block ---------------------------------------------------------

clean:
	rm -rf build build-asan build-tsan build-fuzz corokit.pc

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d $(B)/*/*/*/*.d)
