# hearth: `make` builds ./run and ./quantize for this machine.
#   make deps   install missing Debian packages (apt-get)
#   make demo   install, build, and generate text with the default model
#   make test   install, build, and run every test (host, and NEON under qemu)
#   make bench  speed and memory bandwidth figures (docs/benchmarks.md)

CXX      ?= g++
CXXFLAGS ?= -O3 -march=native
# hearth's own headers are included by their path from the repository root: "model/forward.h".
override CXXFLAGS += -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -MMD -MP -I.
# What each program links beyond its objects: the model library needs SentencePiece, and
# for byte-level BPE PCRE2 (the pre-tokenizer's Unicode regexes) and utf8proc (NFC); only
# run's terminal chat needs libedit, and only the pseudo-terminal test needs -lutil (forkpty).
MODEL_LIBS := -lsentencepiece -lpcre2-8 -lutf8proc -lpthread

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
HTTPLIB_FLAGS := -DCPPHTTPLIB_OPENSSL_SUPPORT -DCPPHTTPLIB_ZLIB_SUPPORT -DCPPHTTPLIB_BROTLI_SUPPORT
SERVER_LIBS := -lcpp-httplib

# Tests that need only the kernels: built for the host and for aarch64.
KERNEL_TEST_SRCS := $(wildcard tests/kernels/*.cpp)
KERNEL_TEST_HDRS := $(wildcard tests/kernels/*.h)
# Everything else.
# Everything else: the tests of each folder, in tests/FOLDER/ (tests/kernels/ aside).
TEST_SRCS := tests/test_main.cpp $(filter-out tests/kernels/%,$(wildcard tests/*/test_*.cpp))

.PHONY: all deps demo test test-host test-neon bench fuzz clean
all: run quantize

build/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@
# The tests' own code (doctest's and nlohmann-json's templates, mostly) takes -O1: it compiles in
# a fraction of -O3's time, and what it checks, the library and the programs, keeps their flags.
build/tests/%.o: tests/%.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -O1 -c $< -o $@

run: build/run.o $(FRONTEND_OBJS) $(SERVER_OBJS) $(LIB_OBJS)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS) $(MODEL_LIBS) -ledit $(SERVER_LIBS)

# The chat page is compiled into run: the HTML inside a C++ raw string literal.
build/server/chat_page.inc: server/chat_page.html
	@mkdir -p $(dir $@)
	@if grep -q ')chat_page_html"' $<; then echo "$< contains the raw string's delimiter"; exit 1; fi
	{ printf 'R"chat_page_html('; cat $<; printf ')chat_page_html"\n'; } > $@.tmp && mv $@.tmp $@
build/server/server.o build/asan/server/server.o: build/server/chat_page.inc
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

build/tests/kernel_tests: $(patsubst %.cpp,build/%.o,$(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@

# The same tests, run and quantize again with AddressSanitizer and UndefinedBehaviorSanitizer
# (build/asan/). The unit tests then drive build/asan/run and build/asan/quantize
# (HEARTH_BIN_DIR, tests/test_helpers.h), so every damaged and crafted file the tests feed
# them runs under the sanitizers too; any report fails the run. The test binaries link the
# tests' objects of the plain build with the sanitized library: what is under test is
# instrumented, and the tests' own code (a third of the build's time when it was compiled
# twice, sanitized) is not. -g1: line tables for the reports, at less cost than -g.
ASAN_FLAGS := -O1 -g1 -march=native -std=c++17 -fopenmp -ffp-contract=off -fno-omit-frame-pointer -I. \
              -fsanitize=address,undefined -fno-sanitize-recover=all -MMD -MP
ASAN_LIB_OBJS := $(patsubst %.cpp,build/asan/%.o,$(KERNEL_SRCS) $(MODEL_SRCS))
build/asan/%.o: %.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_FLAGS) -c $< -o $@
build/asan/run: build/asan/run.o $(patsubst %.cpp,build/asan/%.o,$(FRONTEND_SRCS) $(SERVER_SRCS)) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) $^ -o $@ $(MODEL_LIBS) -ledit $(SERVER_LIBS)
ASAN_CONVERT_OBJS := $(patsubst %.cpp,build/asan/%.o,$(CONVERT_SRCS))
build/asan/quantize: build/asan/quantize.o build/asan/cli/options.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) $^ -o $@ $(MODEL_LIBS)
build/asan/unit_tests: $(patsubst %.cpp,build/%.o,$(TEST_SRCS)) build/asan/server/request.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) $^ -o $@ $(MODEL_LIBS) -lsentencepiece_train -lutil
build/asan/kernel_tests: $(patsubst %.cpp,build/%.o,$(KERNEL_TEST_SRCS)) $(patsubst %.cpp,build/asan/%.o,$(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	$(CXX) $(ASAN_FLAGS) $^ -o $@
# The fuzz targets (tests/fuzz/), built with g++ and the sanitizers into one binary that runs
# each committed seed and crash reproducer through its target once (tests/fuzz/replay_main.cpp);
# `make fuzz` (clang, libFuzzer) is the fuzzing itself.
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
build/asan/fuzz/fuzz_%.o: tests/fuzz/fuzz_%.cpp Makefile
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_FLAGS) -DLLVMFuzzerTestOneInput=fuzz_entry_$* -DLLVMFuzzerCustomMutator=fuzz_mutator_$* -c $< -o $@
build/asan/fuzz_replay: tests/fuzz/replay_main.cpp $(patsubst %,build/asan/fuzz/fuzz_%.o,$(FUZZ_NAMES)) build/asan/server/request.o $(ASAN_CONVERT_OBJS) $(ASAN_LIB_OBJS)
	$(CXX) $(ASAN_FLAGS) '-DHEARTH_FUZZ_TARGETS=$(foreach t,$(FUZZ_NAMES),X($(t)))' $^ -o $@ $(MODEL_LIBS)
# Under the sanitizers the unit tests skip the slowest checks against references, which compute
# on the repository's own fixtures only (the PyTorch parity goldens and logits, perplexity and
# quantization error budgets, the Llama-3 and Qwen3 vocabularies against their reference ids and
# their round trips): every test that feeds a damaged, crafted or foreign input still runs. This
# keeps `make test` near 15 minutes on 2 cores.
ASAN_UNIT_TEST_EXCLUDE := '--test-case-exclude=parity:*,kv cache:*,families: q8_0 and q4_0*,bpe hostile: real text never meets*,bpe: GGUF round trip*,bpe: quantize a Hugging Face folder*,bpe: Llama-3 and Qwen3 folders*,bpe: encode equals the reference*,gguf: a converted checkpoint keeps*,quantize: quantized default models stay close*,gguf: logits of each file*'
ASAN_BINS := build/asan/run build/asan/quantize build/asan/unit_tests build/asan/kernel_tests build/asan/fuzz_replay

# Two aarch64 builds: with dotprod and i8mm (the SMMLA GEMMs, kernels/arm/gemm_neon_i8mm.cpp),
# run on a CPU model that has them (max), and without either, run on one that lacks them
# (cortex-a53). The first build holds the dotprod kernels to their references too: the kernel
# table test runs every row the CPU can, the NEON rows beside the i8mm ones.
AARCH64_FLAGS := -O2 -std=c++17 -fopenmp -ffp-contract=off -static -Wall -Wextra -I.
build/aarch64/kernel_tests_i8mm: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) $(AARCH64_FLAGS) -march=armv8.2-a+dotprod+i8mm $(filter %.cpp,$^) -o $@
build/aarch64/kernel_tests_plain: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(AARCH64_CXX) $(AARCH64_FLAGS) -march=armv8-a $(filter %.cpp,$^) -o $@

# With VNNI on the host (AVX512-VNNI or AVX-VNNI), the native build's GEMM tiles use it
# (kernels/x86/avx2_util.h); a second build for a plain AVX2 CPU keeps the AVX2 tiles tested here.
HOST_VNNI := $(shell $(CXX) $(filter-out -MMD -MP,$(CXXFLAGS)) -dM -E -x c++ /dev/null 2>/dev/null | grep -cE '__AVX512VNNI__|__AVXVNNI__')
build/tests/kernel_tests_avx2: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(CXX) -O2 -march=haswell -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -I. $(filter %.cpp,$^) -o $@
ifneq ($(HOST_VNNI),0)
AVX2_TEST_BIN := build/tests/kernel_tests_avx2
AVX2_TEST_RUN := "host, plain AVX2 build (no VNNI): kernel tests" "build/tests/kernel_tests_avx2"
endif
# The x86 kernels this CPU may lack are compiled, not run: for AVX-VNNI without AVX-512 (ymm
# dpbusd: Intel client CPUs, -march=alderlake) and for AVX-512 VNNI with AMX (the zmm GEMMs,
# kernels/x86/gemm_avx512.cpp, and the tile GEMMs, kernels/x86/gemm_amx.cpp: one
# -march=sapphirerapids check covers both), the kernels and their tests are checked
# by the compiler (-fsyntax-only: every error and warning, without the time code generation
# takes). On a CPU that has them, the native build compiles and runs them.
build/tests/kernels_other_x86.checked: $(KERNEL_TEST_SRCS) $(KERNEL_SRCS) $(KERNEL_BASE_SRCS) $(KERNEL_HDRS) $(KERNEL_TEST_HDRS)
	@mkdir -p $(dir $@)
	$(CXX) -fsyntax-only -march=alderlake -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -I. $(filter %.cpp,$^)
	$(CXX) -fsyntax-only -march=sapphirerapids -std=c++17 -fopenmp -ffp-contract=off -Wall -Wextra -Werror -I. $(filter %.cpp,$^)
	@touch $@
ifneq ($(filter x86_64,$(shell uname -m)),)
ALDERLAKE_TEST_BIN := build/tests/kernels_other_x86.checked
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
	@$(MAKE) --no-print-directory -j$$(nproc) all build/tests/unit_tests build/tests/kernel_tests $(GGUF_MINI) $(BPE_TOKENIZERS) \
		build/aarch64/kernel_tests_i8mm build/aarch64/kernel_tests_plain $(AVX2_TEST_BIN) $(ALDERLAKE_TEST_BIN) $(ASAN_BINS)
	@tools/run_tests.sh \
		"the code follows .clang-format (clang-format 14)" "tools/check_format.sh" \
		"host: unit tests" "build/tests/unit_tests" \
		"host: kernel tests" "build/tests/kernel_tests" $(AVX2_TEST_RUN) \
		"host: the chat page in headless chromium against run --server (skipped when chromium is missing)" "tests/server/run_browser_test.sh" \
		"host, AddressSanitizer + UBSan: unit tests (driving build/asan/run and quantize)" "env HEARTH_BIN_DIR=build/asan build/asan/unit_tests $(ASAN_UNIT_TEST_EXCLUDE)" \
		"host, AddressSanitizer + UBSan: kernel tests" "build/asan/kernel_tests" \
		"host, AddressSanitizer + UBSan: the fuzz targets' seeds and crash reproducers" "build/asan/fuzz_replay" \
		"aarch64 with dotprod and i8mm (qemu -cpu max): kernel tests" "$(QEMU_AARCH64) -cpu max build/aarch64/kernel_tests_i8mm" \
		"aarch64 without dotprod (qemu -cpu cortex-a53): kernel tests" "$(QEMU_AARCH64) -cpu cortex-a53 build/aarch64/kernel_tests_plain"

bench: deps
	@tools/install_deps.sh --bench
	@$(MAKE) --no-print-directory -j$$(nproc) all build/membw $(BPE_TOKENIZERS)
	tools/bench.sh

build/bench_kernels: tools/bench_kernels.cpp $(patsubst %.cpp,build/%.o,$(KERNEL_SRCS) $(KERNEL_BASE_SRCS))
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cpp %.o,$^) -o $@

build/membw: tools/membw.cpp base/platform.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.cpp,$^) -o $@

# Fuzzing (docs/robustness.md): every parser has a libFuzzer target in tests/fuzz/, built with
# Debian's clang, AddressSanitizer and UndefinedBehaviorSanitizer against the whole library.
FUZZ_CXX ?= clang++
FUZZ_FLAGS := -g -O1 -march=native -std=c++17 -fopenmp -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -I.
FUZZ_TARGETS := $(patsubst tests/fuzz/%.cpp,build/fuzz/%,$(wildcard tests/fuzz/fuzz_*.cpp))
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
	@$(MAKE) --no-print-directory -j$$(nproc) $(FUZZ_TARGETS)
	tools/fuzz.sh --replay
fuzz: deps
	@tools/install_deps.sh --fuzz
	@$(MAKE) --no-print-directory -j$$(nproc) $(FUZZ_TARGETS)
	tools/fuzz.sh

clean:
	rm -rf build run quantize

-include $(shell find build -name '*.d' 2>/dev/null)
