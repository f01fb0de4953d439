// Every limit hearth holds untrusted input to, in one place. docs/robustness.md lists them
// with what a user sees when one is hit. Each is far above what any real model, tokenizer or
// prompt needs, and low enough that a file or request crafted to exceed it is refused before
// it costs unbounded time or memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hearth {

namespace limits {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

// ---- Small input files, read whole into memory (base/input_file.h): the most bytes each
// kind may have. Larger files are refused before anything is read.
constexpr uint64_t kConfigJsonBytes = 16 * MiB;           // config.json (real ones: a few KB)
constexpr uint64_t kTokenizerConfigJsonBytes = 64 * MiB;  // tokenizer_config.json (chat templates, added tokens)
constexpr uint64_t kTokenizerJsonBytes = 128 * MiB;       // tokenizer.json (Gemma-3's: 33 MB)
constexpr uint64_t kSafetensorsIndexBytes = 64 * MiB;     // model.safetensors.index.json
constexpr uint64_t kSentencePieceModelBytes = 64 * MiB;   // tokenizer.model (Gemma's: 4 MB)
constexpr uint64_t kTextFileBytes = 1 * GiB;              // a prompt (--file) or a text to score (--perplexity)
// A text given as a FIFO (mkfifo) that no one has opened for writing yet: how long a reader
// waits for a writer (as cat would, but not for ever) before it refuses the file.
constexpr int kFifoWriterWaitSeconds = 10;
// A bracketed paste at --chat's prompt: the bytes kept of it (more is read and dropped).
constexpr size_t kChatPasteBytes = 16 * MiB;

// ---- JSON (base/json_input.h): nesting deeper than this is refused while parsing, so no
// later copy, comparison or printing of a value can recurse deeply. Real files nest 6 deep.
constexpr int kJsonDepth = 64;

// ---- safetensors
constexpr uint64_t kSafetensorsHeaderBytes = 100 * MiB;
constexpr uint64_t kSafetensorsElements = uint64_t(1) << 48;

// ---- Model files (hearth and GGUF) and their key/value metadata
constexpr uint64_t kMaxTensors = 100000;
constexpr uint64_t kTensorBytes = 1024 * GiB;  // one tensor
constexpr uint64_t kMetaKeyBytes = 1 * KiB;
constexpr uint64_t kMetaStringBytes = 64 * MiB;          // one string, or a byte array
constexpr uint64_t kMetaArrayCount = uint64_t(1) << 24;  // 16M elements
constexpr uint64_t kMetaEntries = 1 << 16;
constexpr int kMetaArrayDepth = 4;  // arrays of arrays

// ---- Model configuration (model/config.cpp)
constexpr int kDim = 1 << 16, kHiddenDim = 1 << 18, kLayers = 1024, kHeads = 1024, kHeadDim = 1024;
constexpr int kVocabSize = 1 << 21;      // the embedding's rows; a BPE vocabulary padded to them must fit kBpeTokens
constexpr int kContextLength = 1 << 24;  // also the largest sliding window
constexpr int kLlama2cGroupSize = 1 << 20;

// ---- SentencePiece models (tokenizer/sentencepiece_model.cpp)
constexpr size_t kSentencePiecePieces = size_t(1) << 22;
constexpr size_t kSentencePiecePieceBytes = size_t(1) << 16;
constexpr size_t kSentencePieceStringBytes = size_t(1) << 20;    // names, unk_surface
constexpr size_t kSentencePieceCharsmapBytes = size_t(1) << 22;  // also normalization_rule_tsv

// ---- Byte-level BPE vocabularies (tokenizer/bpe.cpp)
constexpr size_t kBpeTokens = size_t(kVocabSize);  // Llama-3: 128256, Qwen3: 151669
constexpr size_t kBpeMerges = size_t(1) << 22;     // Llama-3: 280147
constexpr size_t kBpeTokenBytes = 1024;            // one token's text
constexpr size_t kBpeAddedTokenBytes = 4 * MiB;    // all added (control, user-defined) tokens' text together
constexpr size_t kBpeRegexes = 16;                 // pre-tokenizer regexes
constexpr size_t kBpeRegexBytes = 4096;            // one regex
constexpr uint32_t kBpeRegexCaptureGroups = 64;    // real pre-tokenizer regexes have none
// The pre-tokenizer's regexes share one budget per encode, counted in PCRE2's match-limit
// units (backtracking steps): per regex, a base plus an amount per byte of text. Real
// regexes use under 3 units per byte; a regex built to backtrack exhausts the budget and the
// encode fails with a message instead of running for minutes.
constexpr uint64_t kBpeRegexBudgetBase = 256 * 1024;
constexpr uint64_t kBpeRegexBudgetPerByte = 1024;
// A unit may scan the rest of the text, though (a lookahead over it, tried at every
// position), which the budget cannot see: the time the regexes take is limited too, as a
// last resort. Real text takes under 100 ns a byte; these allow 1 s and 10,000 ns a byte.
constexpr uint64_t kBpeRegexTimeBaseMs = 1000;
constexpr uint64_t kBpeRegexTimePerKiBMs = 10;
constexpr uint32_t kBpeRegexHeapKiB = 16 * 1024;  // PCRE2's backtracking memory per match
constexpr uint32_t kBpeRegexDepth = 100000;       // PCRE2's nested backtracking per match (the interpreter's)
constexpr size_t kBpeJitStackBytes = 4 * MiB;

// ---- A prompt against its context: a text of more than this many bytes per token of the
// context is refused before it is tokenized (tokenizer.h, check_text_for_context). Tokenizing
// costs memory in proportion to the text (~230 bytes per byte in the SentencePiece library:
// a 7.5 MiB prompt to the server took 1.8 GB, to be refused as longer than the context);
// prose takes 3-5 bytes a token, code with long runs of spaces a few tens at most.
constexpr size_t kPromptBytesPerContextToken = 64;

// ---- The server (server/): what one HTTP request may carry. A request over a limit gets an
// OpenAI-shaped error (413 for the body, 400 for the rest) and the server goes on serving.
constexpr uint64_t kServerBodyBytes = 8 * MiB;   // a request body; a prompt of 2M tokens would not fit any context anyway
constexpr size_t kServerHeaderLineBytes = 8192;  // each header line (cpp-httplib's, compiled in)
// A request's head: its request line and all its header lines together, and how many header
// lines (each is a map entry: 16K of them would take MBs). Over either: 431, and the
// connection is closed. Browsers and SDKs send 1-2 KiB in 10-20 lines.
constexpr size_t kServerHeadBytes = 64 * KiB;
constexpr size_t kServerHeaderLines = 256;
// A request's head must be whole within this (or --timeout, if shorter): a slow client holds one
// of the server's connection threads for no longer (408).
constexpr int kServerHeadSeconds = 10;
constexpr size_t kServerQueuedJobs = 16;       // generations waiting for a slot; one more is 503
constexpr size_t kServerMessages = 4096;       // messages in one chat request
constexpr size_t kServerStopStrings = 4;       // stop strings, as OpenAI's API allows
constexpr size_t kServerStopBytes = 256;       // one stop string
constexpr size_t kServerTokenIds = 1 << 20;    // ids in a /detokenize request
constexpr int kServerTopLogprobs = 20;         // alternatives per token with logprobs, as OpenAI's API allows
constexpr int kServerKeepAliveRequests = 100;  // requests on one connection before it is closed
constexpr int kServerTimeoutSeconds = 600;     // --timeout's default: reading a request, writing a reply
// A streamed reply with nothing to send for this long (waiting for a slot, or for a long prompt
// to be read) sends an event-stream comment, ": keep-alive": proxies drop connections idle for a
// minute (nginx's proxy_read_timeout), and the event-stream standard advises one every 15 s.
constexpr int kServerStreamIdleSeconds = 15;

// ---- Messages. A string from a file (a name, a key) is shown escaped and cut to
// kShownStringBytes; a path to kShownPathBytes; a whole error line to kMessageBytes.
constexpr size_t kShownStringBytes = 80;
constexpr size_t kShownPathBytes = 300;
constexpr size_t kMessageBytes = 1000;

}  // namespace limits

}  // namespace hearth
