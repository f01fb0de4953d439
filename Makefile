# hearth: `make` builds ./run and ./quantize for this machine.
#   make deps   install missing Debian packages (apt-get)
#   make demo   install, build, and generate text with the default model
#   make test   install, build, and run every test (host, and NEON under qemu)
#   make bench  speed and memory bandwidth figures (docs/benchmarks.md)

CXX      ?= g++
UNAME_S  := $(shell uname -s)
ifeq ($(UNAME_S),Darwin)
# macOS (untested: README, "Build on your machine"). Apple clang has no OpenMP runtime of its
# own: the preprocessor flag, and Homebrew's libomp, which is keg-only (not on the default
# paths). Nothing is linked statically there, and libedit is the system's (no libedit.pc).
LIBOMP_PREFIX := $(shell brew --prefix libomp 2>/dev/null)
OPENMP_FLAGS := -Xpreprocessor -fopenmp $(if $(LIBOMP_PREFIX),-I$(LIBOMP_PREFIX)/include)
OPENMP_LIBS := $(if $(LIBOMP_PREFIX),-L$(LIBOMP_PREFIX)/lib) -lomp
CXXFLAGS ?= -O3 $(if $(filter arm64,$(shell uname -m)),-mcpu=native,-march=native)
else
OPENMP_FLAGS := -fopenmp
OPENMP_LIBS :=
CXXFLAGS ?= -O3 -march=native
endif

# The libraries by pkg-config where it knows them (each of Debian's -dev packages ships a .pc;
# Homebrew's too, with the include and lib paths of its prefix), else by their plain -l names.
# $(call pc,PKG_CONFIG,MODULE,--libs or --cflags,FALLBACK)
PKG_CONFIG ?= pkg-config
pc = $(if $(shell $(1) --exists $(2) 2>/dev/null && echo y),$(shell $(1) $(3) $(2)),$(4))
# What each program links beyond its objects: the model library needs SentencePiece, and
# for byte-level BPE PCRE2 (the pre-tokenizer's Unicode regexes) and utf8proc (NFC); only
# run's terminal chat needs libedit, and only the pseudo-terminal test needs -lutil (forkpty).
MODEL_LIBS := $(call pc,$(PKG_CONFIG),sentencepiece,--libs,-lsentencepiece) $(call pc,$(PKG_CONFIG),libpcre2-8,--libs,-lpcre2-8) \
              $(call pc,$(PKG_CONFIG),libutf8proc,--libs,-lutf8proc) -lpthread $(OPENMP_LIBS)
EDIT_LIBS := $(call pc,$(PKG_CONFIG),libedit,--libs,-ledit)
LIB_CFLAGS := $(foreach m,sentencepiece libpcre2-8 libutf8proc libedit,$(call pc,$(PKG_CONFIG),$(m),--cflags,))
# hearth's own headers are included by their path from the repository root: "model/forward.h".
override CXXFLAGS += -std=c++17 $(OPENMP_FLAGS) -ffp-contract=off -Wall -Wextra -MMD -MP -I. $(LIB_CFLAGS)

# The cross toolchain for the NEON kernels; their tests run under qemu-user.
AARCH64_CXX ?= aarch64-linux-gnu-g++
QEMU_AARCH64 ?= qemu-aarch64

# The kernels by folder: the operations and the tables in kernels/, scalar references in ref/, the
# ISA files in x86/ and arm/ (each compiles to nothing where its ISA is not built).
KERNEL_SRCS := $(wildcard kernels/*.cpp kernels/*/*.cpp)
# The one file of base/ the kernels use (the CPU's features), for the builds of the kernels alone.
KERNEL_BASE_SRCS := base/platform.cpp
KERNEL_HDRS := $(wildcard kernels/*.h kernels/*/*.h)
# The library by folder (docs/architecture.md): base, tokenizer, formats, model, chat; convert/ is
# quantize's alone (run does not link the importers); cli/ holds the programs' front ends.
MODEL_SRCS  := $(wildcard base/*.cpp tokenizer/*.cpp formats/*.cpp model/*.cpp model/*/*.cpp chat/*.cpp)
CONVERT_SRCS := $(wildcard convert/*.cpp)
LIB_OBJS    := $(patsubst %.cpp,build/%.o,$(KERNEL_SRCS) $(MODEL_SRCS))
CONVERT_OBJS := $(patsubst %.cpp,build/%.o,$(CONVERT_SRCS))
# The code only run uses: terminal chat, benchmark, perplexity, CPU probe, and the options
# table (which quantize links too).
FRONTEND_SRCS := $(wildcard cli/*.cpp)
FRONTEND_OBJS := $(patsubst %.cpp,build/%.o,$(FRONTEND_SRCS))
# run --server (server/): the HTTP layer is Debian's cpp-httplib, a compiled library whose header
# must see the same options it was built with (its pkg-config Cflags); the request parser alone
# is pure, and the unit tests and the fuzz targets link it.
SERVER_SRCS := $(wildcard server/*.cpp)
SERVER_OBJS := $(patsubst %.cpp,build/%.o,$(SERVER_SRCS))
HTTPLIB_FLAGS := $(call pc,$(PKG_CONFIG),cpp-httplib,--cflags,-DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT)
SERVER_LIBS := $(call pc,$(PKG_CONFIG),cpp-httplib,--libs,-lcpp-httplib)

# Tests that need only the kernels: built for the host and for aarch64.
KERNEL_TEST_SRCS := $(wildcard tests/kernels/*.cpp)
KERNEL_TEST_HDRS := $(wildcard tests/kernels/*.h)
# Everything else.
# Everything else: the tests of each folder, in tests/FOLDER/ (tests/kernels/ aside).
TEST_SRCS := tests/test_main.cpp $(filter-out tests/kernels/%,$(wildcard tests/*/test_*.cpp))

.PHONY: all deps demo test test-host test-neon bench fuzz clean
# $$* in prerequisites (the aarch64 builds' rules).
.SECONDEXPANSION:
all: run quantize

build/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@
# The tests' own code (doctest's and nlohmann-json's templates, mostly) takes -Og: it compiles in
# half of -O1's time (test_hostile_inputs.o: 13 s, not 23) and ran the unit tests as fast (109 s,
# 111; -O0: 129), and what it checks, the library and the programs, keeps their flags.
build/tests/%.o: tests/%.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -Og -c $< -o $@

run: build/run.o $(FRONTEND_OBJS) $(SERVER_OBJS) $(LIB_OBJS)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(MODEL_LIBS) $(EDIT_LIBS) $(SERVER_LIBS)

# The chat page is compiled into run: the HTML inside a C++ raw string literal.
build/server/chat_page.inc: server/chat_page.html
	@mkdir -p $(dir $@)
	@if grep -q ')chat_page_html"' $<; then echo "$< contains the raw string's delimiter"; exit 1; fi
	{ printf 'R"chat_page_html('; cat $<; printf ')chat_page_html"\n'; } > $@.tmp && mv $@.tmp $@
build/server/server.o build/asan/server/server.o: build/server/chat_page.inc

# What --version prints: the commit the programs are built from (git describe; "unknown"
# outside a git clone), rewritten only when it changes, so that nothing is compiled again
# for the same commit.
HEARTH_VERSION := $(or $(shell git describe --always --dirty 2>/dev/null),unknown)
build/version.inc: FORCE
	@mkdir -p $(dir $@)
	@echo '"$(HEARTH_VERSION)"' > $@.tmp; if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi
build/cli/options.o build/asan/cli/options.o build/aarch64/common/cli/options.o: build/version.inc
.PHONY: FORCE
FORCE:
build/server/server.o build/server/connection.o: override CXXFLAGS += $(HTTPLIB_FLAGS)
build/asan/server/server.o build/asan/server/connection.o: ASAN_FLAGS += $(HTTPLIB_FLAGS)

quantize: build/quantize.o build/cli/options.o $(CONVERT_OBJS) $(LIB_OBJS)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(MODEL_LIBS)

# tests/tokenizer/test_sentencepiece_model.cpp trains small models with SentencePiece's own trainer
# (libsentencepiece-dev ships it), to test normalizer charsmaps the library made itself.
build/tests/unit_tests: override LDLIBS += -lsentencepiece_train
build/tests/unit_tests: $(patsubst %.cpp,build/%.o,$(TEST_SRCS)) build/server/request.o $(CONVERT_OBJS) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(MODEL_LIBS) -lutil

# The unit tests' fault injection (tests/cli/fail_thread_malloc.cpp): malloc failing on the
# OpenMP threads of ./run and ./quantize, preloaded into them. Order-only: not linked in.
build/tests/unit_tests: | build/tests/fail_thread_malloc.so
build/tests/fail_thread_malloc.so: tests/cli/fail_thread_malloc.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) -O2 -shared -fPIC $< -o $@

build/tests/kernel_tests: $(patsubst %.cpp,build/%.o,$(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(OPENMP_LIBS)

# The same tests, run and quantize again with AddressSanitizer and UndefinedBehaviorSanitizer
# (build/asan/). The unit tests then drive build/asan/run and build/asan/quantize
# (HEARTH_BIN_DIR, tests/test_helpers.h), so every damaged and crafted file the tests feed
# them runs under the sanitizers too; any report fails the run. The test binaries link the
# tests' objects of the plain build with the sanitized library: what is under test is
# instrumented, and the tests' own code (a third of the build's time when it was compiled
# twice, sanitized) is not. -g1: line tables for the reports, at less cost than -g. -Og, not -O1:
# the sanitized objects compile in 60% of the time (355 s of one core, all of them, against 211)
# and the sanitized unit tests ran within 3% (221 s, 215). The programs are linked -no-pie: a
# sanitized binary's start-up relocated it page by page (40% of its page faults), and most test
# cases start them, many of them again and again (the one that starts most ran in 14 s, not 18).
ASAN_FLAGS := -Og -g1 -march=native -std=c++17 $(OPENMP_FLAGS) -ffp-contract=off -fno-omit-frame-pointer -I. $(LIB_CFLAGS) \
              -fsanitize=address,undefined -fno-sanitize-recover=all -MMD -MP
ASAN_LIB_OBJS := $(patsubst %.cpp,build/asan/%.o,$(KERNEL_SRCS) $(MODEL_SRCS))
build/asan/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_FLAGS) -c $< -o $@
build/asan/run: build/asan/run.o $(patsubst %.cpp,build/asan/%.o,$(FRONTEND_SRCS) $(SERVER_SRCS)) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) -no-pie $^ -o $@ $(MODEL_LIBS) $(EDIT_LIBS) $(SERVER_LIBS)
ASAN_CONVERT_OBJS := $(patsubst %.cpp,build/asan/%.o,$(CONVERT_SRCS))
build/asan/quantize: build/asan/quantize.o build/asan/cli/options.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) -no-pie $^ -o $@ $(MODEL_LIBS)
build/asan/unit_tests: $(patsubst %.cpp,build/%.o,$(TEST_SRCS)) build/asan/server/request.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) -no-pie $^ -o $@ $(MODEL_LIBS) -lsentencepiece_train -lutil
build/asan/kernel_tests: $(patsubst %.cpp,build/%.o,$(KERNEL_TEST_SRCS)) $(patsubst %.cpp,build/asan/%.o,$(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	$(CXX) $(ASAN_FLAGS) -no-pie $^ -o $@ $(OPENMP_LIBS)
# The fuzz targets (tests/fuzz/), built with g++ and the sanitizers into one binary that runs
# each committed seed and crash reproducer through its target once (tests/fuzz/replay_main.cpp);
# `make fuzz` (clang, libFuzzer) is the fuzzing itself.
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
build/asan/fuzz/fuzz_%.o: tests/fuzz/fuzz_%.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_FLAGS) -DLLVMFuzzerTestOneInput=fuzz_entry_$* -DLLVMFuzzerCustomMutator=fuzz_mutator_$* -c $< -o $@
# The replay's own code (doctest's runner, mostly) is the tests' code: compiled as theirs are,
# without the sanitizers, which took twenty seconds on doctest's implementation alone. It names
# the targets, so it depends on the folder too (whose time changes when a target is added).
build/asan/fuzz/replay_main.o: tests/fuzz/replay_main.cpp tests/fuzz Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -Og '-DHEARTH_FUZZ_TARGETS=$(foreach t,$(FUZZ_NAMES),X($(t)))' -c $< -o $@
build/asan/fuzz_replay: build/asan/fuzz/replay_main.o $(patsubst %,build/asan/fuzz/fuzz_%.o,$(FUZZ_NAMES)) build/asan/server/request.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) -no-pie $^ -o $@ $(MODEL_LIBS)
# Under the sanitizers the unit tests skip the slowest checks against references, which compute
# on the repository's own fixtures only (the PyTorch parity goldens and logits, perplexity and
# quantization error budgets, the Llama-3 and Qwen3 vocabularies against their reference ids and
# their round trips, llama2.c's formats against the reference logits, a SentencePiece vocabulary
# against the library's ids): every test that feeds a damaged, crafted or foreign input still runs. This
# keeps `make test` near 15 minutes on 2 cores.
ASAN_UNIT_TEST_EXCLUDE := '--test-case-exclude=parity:*,kv cache:*,families: q8_0 and q4_0*,bpe hostile: real text never meets*,bpe: GGUF round trip*,bpe: quantize a Hugging Face folder*,bpe: Llama-3 and Qwen3 folders*,bpe: encode equals the reference*,gguf: a converted checkpoint keeps*,quantize: quantized default models stay close*,gguf: logits of each file*,llama2c: every format converted to f32*,bpe: run --tokenize on a SentencePiece*'
ASAN_BINS := build/asan/run build/asan/quantize build/asan/unit_tests build/asan/kernel_tests build/asan/fuzz_replay

# aarch64 under qemu-user, in two builds: with dotprod and i8mm (the SMMLA GEMMs,
# kernels/arm/gemm_neon_i8mm.cpp), run on a CPU model that has them (max), and without either,
# run on one that lacks them (cortex-a53). Two, because SDOT is chosen when the kernels are
# compiled (HEARTH_ISA_DOTPROD, kernels/isa.h), not at run time: only the i8mm rows are asked
# of the CPU (kernels/table.cpp), so a +dotprod build must not run on a CPU without it. The
# kernels (-O2) and their tests (-O1) are compiled once per build; everything else (-Og: it is
# checked, not timed) once, the same objects in both. Each build's kernel tests, run and
# quantize link those objects: the first build holds the dotprod kernels to their references
# too (the kernel table test runs every row the CPU can, the NEON rows beside the i8mm ones),
# and tests/aarch64/run_e2e.sh compares run's greedy ids and quantize's files with the host's.
AARCH64_FLAGS := -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -MMD -MP -I.
AARCH64_MARCH_plain := -march=armv8-a
AARCH64_MARCH_i8mm := -march=armv8.2-a+dotprod+i8mm
build/aarch64/plain/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) -O2 $(AARCH64_MARCH_plain) $(AARCH64_FLAGS) -c $< -o $@
build/aarch64/i8mm/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) -O2 $(AARCH64_MARCH_i8mm) $(AARCH64_FLAGS) -c $< -o $@
build/aarch64/common/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) -Og $(AARCH64_MARCH_plain) $(AARCH64_FLAGS) $(AARCH64_LIB_CFLAGS) -c $< -o $@
# The kernel tests' own code takes -O1 in each build (under qemu they ran no slower than at
# -O2, and at -Og 20% slower, where the host's ran as fast): it needs the build's -march, which
# says which kernels it tests; doctest's runner does not, and is compiled once.
build/aarch64/plain/tests/%.o: tests/%.cpp Makefile
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) -O1 $(AARCH64_MARCH_plain) $(AARCH64_FLAGS) -c $< -o $@
build/aarch64/i8mm/tests/%.o: tests/%.cpp Makefile
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) -O1 $(AARCH64_MARCH_i8mm) $(AARCH64_FLAGS) -c $< -o $@
AARCH64_KERNEL_TEST_MAIN := tests/kernels/kernel_test_main.cpp
# The kernel tests alone need no library: linked statically, as before the programs were built.
build/aarch64/kernel_tests_%: $(patsubst %.cpp,build/aarch64/$$*/%.o,$(filter-out $(AARCH64_KERNEL_TEST_MAIN),$(KERNEL_TEST_SRCS)) $(KERNEL_SRCS)) \
                              $(patsubst %.cpp,build/aarch64/common/%.o,$(AARCH64_KERNEL_TEST_MAIN) base/platform.cpp)
	$(AARCH64_CXX) -fopenmp -static $^ -o $@

# run and quantize for aarch64 link Debian's arm64 libraries (multiarch: make deps installs them
# with apt-get, and their .pc files are found by pointing pkg-config at their folder), dynamically:
# qemu-aarch64 runs the arm64 loader, /lib/ld-linux-aarch64.so.1, which finds them in
# /usr/lib/aarch64-linux-gnu. SentencePiece's packages are not multiarch (the amd64 and arm64 ones
# cannot both be installed): make deps unpacks the arm64 ones into AARCH64_SENTENCEPIECE, which
# the programs find by their rpath. Without the libraries, the end-to-end test says it skipped.
AARCH64_PKG_CONFIG ?= env PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig $(PKG_CONFIG)
AARCH64_SENTENCEPIECE ?= /opt/hearth-arm64/usr/lib/aarch64-linux-gnu
AARCH64_LIBS_FOUND := $(and $(wildcard $(AARCH64_SENTENCEPIECE)/libsentencepiece.so),$(shell $(AARCH64_PKG_CONFIG) --exists libpcre2-8 libutf8proc libedit cpp-httplib 2>/dev/null && echo y))
AARCH64_LIB_CFLAGS := $(foreach m,libpcre2-8 libutf8proc libedit,$(call pc,$(AARCH64_PKG_CONFIG),$(m),--cflags,))
AARCH64_MODEL_LIBS := -L$(AARCH64_SENTENCEPIECE) -Wl,-rpath,$(AARCH64_SENTENCEPIECE) -lsentencepiece \
                      $(call pc,$(AARCH64_PKG_CONFIG),libpcre2-8,--libs,-lpcre2-8) $(call pc,$(AARCH64_PKG_CONFIG),libutf8proc,--libs,-lutf8proc) -lpthread
build/aarch64/common/server/server.o: build/server/chat_page.inc
build/aarch64/common/server/server.o build/aarch64/common/server/connection.o: AARCH64_LIB_CFLAGS += \
    $(call pc,$(AARCH64_PKG_CONFIG),cpp-httplib,--cflags,-DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT)
AARCH64_COMMON_SRCS := $(MODEL_SRCS) $(FRONTEND_SRCS) $(SERVER_SRCS) run.cpp
build/aarch64/run_%: $(patsubst %.cpp,build/aarch64/common/%.o,$(AARCH64_COMMON_SRCS)) $(patsubst %.cpp,build/aarch64/$$*/%.o,$(KERNEL_SRCS))
	$(AARCH64_CXX) -fopenmp $^ -o $@ $(AARCH64_MODEL_LIBS) $(call pc,$(AARCH64_PKG_CONFIG),libedit,--libs,-ledit) \
		$(call pc,$(AARCH64_PKG_CONFIG),cpp-httplib,--libs,-lcpp-httplib)
# quantize computes nothing the CPU's extensions change (its quantizers are the scalar
# references): one build, run on both CPUs.
build/aarch64/quantize: $(patsubst %.cpp,build/aarch64/common/%.o,$(MODEL_SRCS) $(CONVERT_SRCS) cli/options.cpp quantize.cpp) \
                        $(patsubst %.cpp,build/aarch64/plain/%.o,$(KERNEL_SRCS))
	$(AARCH64_CXX) -fopenmp $^ -o $@ $(AARCH64_MODEL_LIBS)
AARCH64_KERNEL_TESTS := build/aarch64/kernel_tests_i8mm build/aarch64/kernel_tests_plain
# Their objects are made by pattern rules through $$*: kept, not deleted as intermediate files.
.SECONDARY: $(foreach b,plain i8mm,$(patsubst %.cpp,build/aarch64/$(b)/%.o,$(KERNEL_TEST_SRCS) $(KERNEL_SRCS))) \
            $(patsubst %.cpp,build/aarch64/common/%.o,$(AARCH64_COMMON_SRCS) $(CONVERT_SRCS) quantize.cpp $(AARCH64_KERNEL_TEST_MAIN))
ifneq ($(AARCH64_LIBS_FOUND),)
AARCH64_E2E_BINS := build/aarch64/run_i8mm build/aarch64/run_plain build/aarch64/quantize
endif

# clang++, where it is installed (make deps installs it), for two builds that make test has
# anyway: the plain AVX2 kernel tests below and the AVX-VNNI check after them. So the default
# make test keeps the code clang-clean (its warnings, its intrinsics headers, its libomp) at no
# cost in time, with g++ building everything else; `make CXX=clang++ test` builds it all with clang.
CLANG_CXX := $(or $(shell command -v clang++ 2>/dev/null),$(CXX))
# With VNNI on the host (AVX512-VNNI or AVX-VNNI), the native build's GEMM tiles use it
# (kernels/x86/avx2_util.h); a second build for a plain AVX2 CPU keeps the AVX2 tiles tested here.
HOST_VNNI := $(shell $(CXX) $(filter-out -MMD -MP,$(CXXFLAGS)) -dM -E -x c++ /dev/null 2>/dev/null | grep -cE '__AVX512VNNI__|__AVXVNNI__')
# One object per file (the kernels -O2, their tests -O1, as the other builds), so that make's
# two jobs share the work: in one compiler process it held one core for about a minute.
AVX2_FLAGS := -march=haswell -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -MMD -MP -I.
build/avx2/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(CLANG_CXX) -O2 $(AVX2_FLAGS) -c $< -o $@
build/avx2/tests/%.o: tests/%.cpp Makefile
	@mkdir -p $(dir $@)
	$(CLANG_CXX) -O1 $(AVX2_FLAGS) -c $< -o $@
build/tests/kernel_tests_avx2: $(patsubst %.cpp,build/avx2/%.o,$(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	@mkdir -p $(dir $@)
	$(CLANG_CXX) -fopenmp $^ -o $@
ifneq ($(HOST_VNNI),0)
AVX2_TEST_BIN := build/tests/kernel_tests_avx2
AVX2_TEST_RUN := "host, plain AVX2 build (no VNNI): kernel tests" "build/tests/kernel_tests_avx2"
endif
# The x86 kernels this CPU may lack are compiled, not run: for AVX-VNNI without AVX-512 (ymm
# dpbusd: Intel client CPUs, -march=alderlake) and for AVX-512 VNNI with AMX (the zmm GEMMs,
# kernels/x86/gemm_avx512.cpp, and the tile GEMMs, kernels/x86/gemm_amx.cpp: one
# -march=sapphirerapids check covers both), the kernels and their tests are checked
# by the compiler (-fsyntax-only: every error and warning, without the time code generation
# takes; the first with clang, the second with g++). On a CPU that has them, the native build
# compiles and runs them. Two targets, which make test names first: each takes half a minute
# in one process, and they ran last, one after the other, while the other core had nothing left.
build/tests/kernels_alderlake.checked: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(CLANG_CXX) -fsyntax-only -march=alderlake -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -I. $(filter %.cpp,$^)
	@touch $@
build/tests/kernels_sapphirerapids.checked: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(CXX) -fsyntax-only -march=sapphirerapids -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -I. $(filter %.cpp,$^)
	@touch $@
ifneq ($(filter x86_64,$(shell uname -m)),)
OTHER_X86_CHECKS := build/tests/kernels_alderlake.checked build/tests/kernels_sapphirerapids.checked
endif

# llama.cpp's GGUF files the tests read, kept compressed in the repository.
GGUF_MINI := $(patsubst tests/data/gguf-mini/%.xz,build/tests/gguf-mini/%,$(wildcard tests/data/gguf-mini/*.gguf.xz))
build/tests/gguf-mini/%: tests/data/gguf-mini/%.xz
	@mkdir -p $(dir $@)
	xz -dc $< > $@.tmp && mv $@.tmp $@

# The Llama-3 and Qwen3 tokenizer.json files the BPE tests read, kept compressed too.
BPE_TOKENIZERS := $(patsubst tests/data/bpe/%.xz,build/tests/bpe/%,$(wildcard tests/data/bpe/*.json.xz))
build/tests/bpe/%: tests/data/bpe/%.xz
	@mkdir -p $(dir $@)
	xz -dc $< > $@.tmp && mv $@.tmp $@

deps:
	@tools/install_deps.sh

demo: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	./run models/tiny-shakespeare.hearth -p "ROMEO:" -n 200 --seed 42

test: deps
	@$(MAKE) --no-print-directory -j$$(nproc) $(OTHER_X86_CHECKS) all build/tests/unit_tests build/tests/kernel_tests $(GGUF_MINI) \
		$(BPE_TOKENIZERS) $(AARCH64_KERNEL_TESTS) $(AARCH64_E2E_BINS) $(AVX2_TEST_BIN) $(ASAN_BINS)
	@tools/run_tests.sh \
		"the code follows .clang-format (clang-format 14)" "tools/check_format.sh" \
		"host: unit tests" "build/tests/unit_tests" \
		"host: kernel tests" "build/tests/kernel_tests" $(AVX2_TEST_RUN) \
		"host: the chat page in headless chromium against run --server (skipped when chromium is missing)" "tests/server/run_browser_test.sh" \
		"host, AddressSanitizer + UBSan: unit tests of tests/cli/, formats/ and architecture/ (driving build/asan/run and quantize)" \
			"env HEARTH_BIN_DIR=build/asan build/asan/unit_tests $(ASAN_UNIT_TEST_EXCLUDE) '--source-file=$(ASAN_LANE1_FILES)'" \
		"host, AddressSanitizer + UBSan: kernel tests" "build/asan/kernel_tests" \
		"host, AddressSanitizer + UBSan: the fuzz targets' seeds and crash reproducers" "build/asan/fuzz_replay" \
		--lane \
		"aarch64 with dotprod and i8mm (qemu -cpu max): kernel tests" "$(QEMU_AARCH64) -cpu max build/aarch64/kernel_tests_i8mm" \
		"aarch64 without dotprod (qemu -cpu cortex-a53): kernel tests" "$(QEMU_AARCH64) -cpu cortex-a53 build/aarch64/kernel_tests_plain" \
		"aarch64 end to end (qemu -cpu max and cortex-a53): run's greedy ids and quantize's files against the host's" \
			"env QEMU_AARCH64=$(QEMU_AARCH64) tests/aarch64/run_e2e.sh" \
		"host, AddressSanitizer + UBSan: unit tests of the other folders, in a tree of their own (driving build/asan/run and quantize)" \
			"tools/in_own_tree.sh build/lane2 env HEARTH_BIN_DIR=build/asan build/asan/unit_tests $(ASAN_UNIT_TEST_EXCLUDE) '--source-file-exclude=$(ASAN_LANE1_FILES)'"
# make test runs in two lanes at once (tools/run_tests.sh): CI has 2 cores, and most tests keep
# one busy. The sanitized unit tests, the longest run, are split between the lanes by folder,
# about evenly; the second lane's run in a tree of their own (tools/in_own_tree.sh), so that
# the two never write the same scratch file in build/tests/. Every test case runs in one of them.
ASAN_LANE1_FILES := *tests/cli/*,*tests/formats/*,*tests/architecture/*

bench: deps
	@tools/install_deps.sh --bench
	@$(MAKE) --no-print-directory -j$$(nproc) all build/membw $(BPE_TOKENIZERS)
	tools/bench.sh

build/bench_kernels: tools/bench_kernels.cpp $(patsubst %.cpp,build/%.o,$(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cpp %.o,$^) -o $@ $(OPENMP_LIBS)

build/membw: tools/membw.cpp base/platform.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cpp,$^) -o $@ $(OPENMP_LIBS)

build/vnni_ports: tools/vnni_ports.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $< -o $@

# Fuzzing (docs/robustness.md): every parser has a libFuzzer target in tests/fuzz/, built with
# Debian's clang, AddressSanitizer and UndefinedBehaviorSanitizer against the whole library.
FUZZ_CXX ?= clang++
FUZZ_FLAGS := -g -O1 -march=native -std=c++17 -fopenmp -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. $(LIB_CFLAGS)
# FUZZ_TARGETS="gguf metadata" (tools/fuzz.sh's names, from the environment) builds and fuzzes
# those alone. The Makefile must not assign that name itself: make hands a variable that came
# from the environment to its recipes with the Makefile's value, so tools/fuzz.sh got the list
# of binaries here in place of the user's names and ran none of them.
FUZZ_BINS := $(if $(FUZZ_TARGETS),$(patsubst %,build/fuzz/fuzz_%,$(FUZZ_TARGETS)),$(patsubst tests/fuzz/%.cpp,build/fuzz/%,$(wildcard tests/fuzz/fuzz_*.cpp)))
FUZZ_LIB_OBJS := $(patsubst %.cpp,build/fuzz/obj/%.o,$(KERNEL_SRCS) $(MODEL_SRCS) $(CONVERT_SRCS) server/request.cpp)
build/fuzz/obj/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
build/fuzz/fuzz_%: build/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $^ -o $@ $(MODEL_LIBS)
# Only the crash reproducers of tests/fuzz/regressions/ (each passes once its bug is fixed);
# `make fuzz` replays them too before fuzzing.
.PHONY: fuzz-regressions
fuzz-regressions: deps
	@tools/install_deps.sh --fuzz
	@$(MAKE) --no-print-directory -j$$(nproc) $(FUZZ_BINS)
	tools/fuzz.sh --replay
fuzz: deps
	@tools/install_deps.sh --fuzz
	@$(MAKE) --no-print-directory -j$$(nproc) $(FUZZ_BINS)
	tools/fuzz.sh

clean:
	rm -rf build run quantize

-include $(shell find build -name '*.d' 2>/dev/null)
