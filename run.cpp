// run: memory-maps a hearth checkpoint and generates text from a prompt, chats, measures
// the perplexity of a text or the model's speed. This file is the command line: the
// options table, loading the model, picking the mode and reporting; the work is done in
// model/ (generation) and cli/ (chat in the terminal, perplexity, benchmark).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <omp.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "base/input_file.h"
#include "base/limits.h"
#include "base/platform.h"
#include "base/printable.h"
#include "cli/bench.h"
#include "cli/chat_terminal.h"
#include "cli/cpu_info.h"
#include "cli/options.h"
#include "cli/perplexity.h"
#include "server/request.h"
#include "server/server.h"
#include "chat/chat_template.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/sampler.h"
#include "tokenizer/tokenizer.h"

using namespace hearth;

namespace {

using Clock = std::chrono::steady_clock;

// Without -c, the context is the model's, at most this many positions (a model's declared
// context may be 128k, whose KV cache a laptop does not hold).
constexpr int kDefaultContextCap = 4096;
// --perplexity's window without -c: llama.cpp's perplexity tool's (its figures are quoted at
// -c 512), or the model's context when that is shorter.
constexpr int kDefaultPerplexityWindow = 512;

struct Options {
    std::string model_path;
    std::string prompt, prompt_file, prompt_ids;
    int n_predict = 256;
    bool ignore_eos = false, print_ids = false, print_margins = false, tokenize = false;
    // -c. -1 (not given): the model's, at most kDefaultContextCap (for --perplexity: perplexity_window);
    // 0: the model's whole context, as llama.cpp's -c 0 ("loaded from model").
    int n_ctx = -1;
    int threads = physical_core_count();
    SamplerParams sampler;  // the seed is the clock's unless -s sets it
    int draft = 4;          // --draft; the default is measured: docs/benchmarks.md, "Prompt-lookup drafts"
    std::string perplexity_file;
    bool bench = false;
    BenchSpec bench_spec;
    bool chat = false;
    ChatOptions chat_options;  // --template, --system, --verbose; the rest is copied in
    // -ctk / -ctv as given, and as types once checked; the defaults are KvCacheTypes's.
    std::string cache_type_k = type_name(KvCacheTypes{}.k), cache_type_v = type_name(KvCacheTypes{}.v);
    KvCacheTypes cache_types;
    bool server = false;
    ServerOptions server_options;  // --host, --port, --parallel, --api-key, --cors-origins, --allowed-hosts, --timeout, --alias
};

// run's modes. An option's row in the table says in which it has an effect (only_in), and one
// given in another mode is named in a warning: ignored without a word, `--temp 0.5` with
// --perplexity looks like it changed the figure. A warning, not a refusal, so that a script
// that passes the same options to every mode goes on working.
enum Mode : unsigned { kGenerate = 1, kTokenize = 2, kChat = 4, kPerplexity = 8, kBench = 16, kServer = 32 };
constexpr unsigned kSampling = kGenerate | kChat | kServer;                           // the modes that sample tokens
constexpr unsigned kEvaluating = kGenerate | kChat | kPerplexity | kBench | kServer;  // all that run the model

// How a warning names each mode: in "has no effect ...", and in "it is for ...".
struct ModeName {
    Mode mode;
    const char* in_it;
    const char* for_it;
};
const ModeName kModeNames[] = {
    {kGenerate, "when generating text", "generating text"},
    {kTokenize, "with --tokenize", "--tokenize"},
    {kChat, "with --chat", "--chat"},
    {kPerplexity, "with --perplexity", "--perplexity"},
    {kBench, "with --bench", "--bench"},
    {kServer, "with --server", "--server"},
};

// "run: warning: --temp has no effect with --perplexity; it is for generating text, --chat and --server"
std::string no_effect_warning(const Option& option, Mode mode) {
    std::string in_it, for_it;
    std::vector<const char*> uses;
    for (const ModeName& m : kModeNames) {
        if (m.mode == mode) in_it = m.in_it;
        if (option.modes & m.mode) uses.push_back(m.for_it);
    }
    for (size_t i = 0; i < uses.size(); i++)
        for_it += (i == 0 ? "" : i + 1 < uses.size() ? ", " : " and ") + std::string(uses[i]);
    return std::string("run: warning: ") + option.long_name + " has no effect " + in_it + "; it is for " + for_it;
}

std::string template_names() {
    const std::vector<std::string>& names = chat_template_names();
    std::string s;
    for (size_t i = 0; i < names.size(); i++) s += (i == 0 ? "" : i + 1 < names.size() ? ", " : " or ") + names[i];
    return s;
}

// Every option of run, as llama.cpp names them: parsing, --help and the CLI test
// (through --list-options) all read this table.
CommandLine command_line(Options& o) {
    return {
        "run",
        "usage: run [MODEL] [options]\n"
        "\n"
        "Generates text with a hearth checkpoint (made by `quantize`). Without MODEL, runs the\n"
        "default model models/tiny-shakespeare.hearth shipped beside this program.\n",
        {
            {"input and output",
             {
                 {"-m", "--model", "FILE", &o.model_path, "the checkpoint (same as the first argument)"},
                 Option{"-p", "--prompt", "TEXT", &o.prompt,
                        "prompt text; encoded with BOS prepended (when the tokenizer adds one). Taken as it is: \\n is a "
                        "backslash and an n (llama.cpp turns it into a newline; in a shell, write $'a\\nb')",
                        0, 0, "just BOS"}
                     .only_in(kGenerate | kTokenize),
                 Option{"-f", "--file", "FILE", &o.prompt_file,
                        "prompt text read from a file (instead of --prompt), without the newline that ends its last line "
                        "(as llama.cpp reads it); - is standard input"}
                     .only_in(kGenerate | kTokenize),
                 Option{"", "--prompt-ids", "IDS", &o.prompt_ids,
                        "prompt as raw token ids, comma-separated (nothing is added); llama-tokenize's [1, 15043] too"}
                     .only_in(kGenerate),
                 Option{"-n", "--n-predict", "N", &o.n_predict,
                        "tokens to generate at most; stops earlier at EOS or a full context; -1: no limit but those (as "
                        "llama.cpp's -1)",
                        -1, 1 << 30}
                     .only_in(kGenerate | kChat),
                 Option{
                     "", "--ignore-eos", "", &o.ignore_eos,
                     "keep generating past EOS and the other end markers llama.cpp stops at (<|eot_id|>, <|im_end|>, ...; in --chat, past the end of a turn too)"}
                     .only_in(kGenerate | kChat),
                 Option{"", "--print-ids", "", &o.print_ids, "print the generated ids, comma-separated, instead of text"}.only_in(
                     kGenerate),
                 Option{"", "--print-margins", "", &o.print_margins,
                        "greedy only (--temp 0 --draft 0): on stderr, each generated id with its logit, and the runner-up id "
                        "with its logit, to tell a near-tie from a difference when two builds disagree"}
                     .only_in(kGenerate),
                 Option{
                     "", "--tokenize", "", &o.tokenize,
                     "print the ids of the --prompt (or --file) text alone (no BOS; control tokens are never matched in it), "
                     "comma-separated on one line (the ids llama.cpp's llama-tokenize --ids --no-bos --no-parse-special prints "
                     "as [a, b, ...]), and exit"}
                     .only_in(kTokenize),
                 Option{"-c", "--ctx-size", "N", &o.n_ctx,
                        "context length in tokens; with --server, the total that the --parallel slots share evenly (as "
                        "llama-server does); 0: the model's whole context (as llama.cpp's 0)",
                        0, 1 << 24,
                        "the model's, at most " + std::to_string(kDefaultContextCap) + "; for --perplexity, " +
                            std::to_string(kDefaultPerplexityWindow) + " or the model's if shorter"}
                     .only_in(kGenerate | kChat | kPerplexity | kServer),
                 Option{"-t", "--threads", "N", &o.threads,
                        "threads; more than the physical cores makes generation slower, and more than the CPUs this process may "
                        "run on are cut to that number",
                        1, 1024, "the number of physical cores, here " + std::to_string(o.threads), MinusOne::means_default}
                     .only_in(kEvaluating),
             }},
            {"KV cache (as llama.cpp names them; every mode uses them)",
             {
                 Option{"-ctk", "--cache-type-k", "TYPE", &o.cache_type_k,
                        "type of the cached keys: f32, f16 or q8_0 (blocks of 32 along each head's dims; needs a head "
                        "dimension that is a multiple of 32). f16 and q8_0 take 1/2 and 17/64 of f32's memory",
                        0, 0, o.cache_type_k}
                     .only_in(kEvaluating),
                 Option{"-ctv", "--cache-type-v", "TYPE", &o.cache_type_v, "type of the cached values: f32, f16 or q8_0", 0, 0,
                        o.cache_type_v}
                     .only_in(kEvaluating),
             }},
            {"sampling (applied in this order, as llama.cpp does)",
             {
                 Option{"", "--repeat-penalty", "X", &o.sampler.repeat_penalty,
                        "divide logits of recently seen tokens by X; 1 = off", 0.01, 100}
                     .only_in(kSampling),
                 Option{"", "--frequency-penalty", "X", &o.sampler.frequency_penalty,
                        "subtract X times a recent token's count from its logit; 0 = off", -2, 2}
                     .only_in(kSampling),
                 Option{"", "--presence-penalty", "X", &o.sampler.presence_penalty,
                        "subtract X from the logit of each recently seen token; 0 = off", -2, 2}
                     .only_in(kSampling),
                 Option{"", "--repeat-last-n", "N", &o.sampler.repeat_last_n, "how many recent tokens the penalties look at", 0,
                        1 << 24}
                     .only_in(kSampling),
                 Option{"", "--top-k", "N", &o.sampler.top_k, "keep the N most likely tokens; 0 = off", 0, 1 << 30}.only_in(
                     kSampling),
                 Option{"", "--top-p", "X", &o.sampler.top_p, "keep the smallest set with probability mass >= X; 1 = off", 0, 1}
                     .only_in(kSampling),
                 Option{"", "--min-p", "X", &o.sampler.min_p, "drop tokens less likely than X times the top one; 0 = off", 0, 1}
                     .only_in(kSampling),
                 Option{"", "--temp", "X", &o.sampler.temperature, "temperature; 0 is greedy: always the most likely token", 0,
                        100}
                     .only_in(kSampling),
                 Option{"-s", "--seed", "N", &o.sampler.seed, "random seed, for reproducible sampling", 0, 0, "from the clock",
                        MinusOne::means_default}
                     .only_in(kSampling),
             }},
            {"prompt-lookup drafts (every mode that generates)",
             {
                 Option{"", "--draft", "N", &o.draft,
                        "guess up to N tokens at a step from earlier text (what followed the last 2-4 tokens where they "
                        "occurred before) and check them in the same forward pass: faster when the output repeats the "
                        "prompt, and the same ids as without (greedy, or sampled with the same seed); drafting backs off "
                        "while guesses are rejected, and the server drafts only while a step has fewer than 8 tokens "
                        "in all. 0 = off",
                        0, 64}
                     .only_in(kSampling),
             }},
            {"perplexity (instead of generating)",
             {
                 Option{"", "--perplexity", "FILE", &o.perplexity_file,
                        "perplexity of a text file, as llama.cpp computes it: windows of -c tokens (default " +
                            std::to_string(kDefaultPerplexityWindow) +
                            "), the second half of each window scored; - is standard input"}
                     .only_in(kPerplexity),
             }},
            {"benchmark (instead of generating)",
             {
                 Option{"", "--bench", "", &o.bench,
                        "print prompt processing (ppN) and generation (tgN) speed in tok/s, medians of --bench-reps runs, "
                        "the weight bandwidth of tg, and the kernel rows this CPU runs for each"}
                     .only_in(kBench),
                 Option{"", "--bench-pp", "N", &o.bench_spec.n_pp, "prompt tokens evaluated in one batch", 0, 1 << 20}.only_in(
                     kBench),
                 Option{"", "--bench-tg", "N", &o.bench_spec.n_tg, "tokens generated one by one", 0, 1 << 20}.only_in(kBench),
                 Option{"", "--bench-depth", "N", &o.bench_spec.depth,
                        "positions already in each sequence's cache before pp and tg (as llama-bench's -d): attention reads "
                        "them for every token, as a reply does after its prompt",
                        0, 1 << 20}
                     .only_in(kBench),
                 Option{"", "--bench-seqs", "N", &o.bench_spec.n_seqs,
                        "sequences generated together, one token of each per pass over the weights (as the server batches its "
                        "slots); tg counts all of their tokens",
                        1, kMaxBatch}
                     .only_in(kBench),
                 Option{"", "--bench-reps", "N", &o.bench_spec.reps, "repetitions", 1, 1 << 20}.only_in(kBench),
             }},
            {"chat (instead of a single prompt)",
             {
                 Option{"-i", "--chat", "", &o.chat,
                        "a conversation: read a message, write the reply, again, keeping the KV cache between turns. In a "
                        "terminal: line editing, history, /help for commands; Ctrl-C stops a reply, Ctrl-D leaves. From a "
                        "pipe: one message a line (`echo question | run MODEL --chat`). -n caps a reply."}
                     .only_in(kChat),
                 Option{"", "--template", "NAME", &o.chat_options.template_name, "chat template: " + template_names(), 0, 0,
                        "the one quantize stored; when none, raw, or chatml if the vocabulary has its tokens"}
                     .only_in(kChat | kServer),
                 Option{"", "--system", "TEXT", &o.chat_options.system_prompt,
                        "the system prompt; without it, the one the model's chat template puts first when a dialog has none "
                        "(Qwen2.5's), if any"}
                     .only_in(kChat),
                 Option{"", "--verbose", "", &o.chat_options.verbose,
                        "print each reply's timing (prompt, time to first token, tok/s) on stderr, and with -p too the "
                        "drafts' acceptance rate and the kernel rows of one token"}
                     .only_in(kGenerate | kChat),
             }},
            {"server (instead of a single prompt): an OpenAI-compatible HTTP API and a chat page",
             {
                 Option{"", "--server", "", &o.server,
                        "serve the model over HTTP: POST /v1/chat/completions and /v1/completions (streamed or not), GET "
                        "/v1/models, /health, POST /tokenize and /detokenize, and the chat page at /. The sampling options "
                        "above are the defaults a request's own fields override; --template picks the chat template"}
                     .only_in(kServer),
                 Option{"", "--host", "HOST", &o.server_options.host, "address to listen on; 0.0.0.0 serves the network", 0, 0,
                        o.server_options.host}
                     .only_in(kServer),
                 Option{"", "--port", "N", &o.server_options.port, "TCP port to listen on", 1, 65535}.only_in(kServer),
                 Option{"-np", "--parallel", "N", &o.server_options.n_parallel,
                        "slots: conversations generated at once, each with its own KV cache of -c / N tokens; more requests "
                        "wait in a queue of " +
                            std::to_string(limits::kServerQueuedJobs),
                        1, 256}
                     .only_in(kServer),
                 Option{"", "--api-key", "KEY", &o.server_options.api_key,
                        "require 'Authorization: Bearer KEY' (or 'X-Api-Key: KEY') on every endpoint but / and /health", 0, 0,
                        "none"}
                     .only_in(kServer),
                 Option{"", "--cors-origins", "ORIGINS", &o.server_options.cors_origins,
                        "comma-separated origins (scheme://host[:port]) whose browser pages may call the server; 'localhost' "
                        "is any page on this machine's loopback names, '*' any web page",
                        0, 0, "localhost"}
                     .only_in(kServer),
                 Option{"", "--allowed-hosts", "HOSTS", &o.server_options.allowed_hosts,
                        "comma-separated host names or addresses ('.example.com': it and the names under it) that requests "
                        "may name in their Host header, besides this machine's loopback names (localhost, 127.0.0.1, [::1]), "
                        "which always may; any other is refused with 403, against DNS rebinding. '*' lets any Host in. On a "
                        "non-loopback --host (0.0.0.0) the Host is checked only when this option is given",
                        0, 0, "the loopback names"}
                     .only_in(kServer),
                 Option{"", "--timeout", "SECONDS", &o.server_options.timeout_seconds,
                        "read and write timeout of a connection: a client that stalls this long is dropped", 1, 86400}
                     .only_in(kServer),
                 Option{"-a", "--alias", "NAME", &o.server_options.model_name, "the model's name in /v1/models and the replies",
                        0, 0, "the model file's name"}
                     .only_in(kServer),
             }},
        },
        "Timing (load, prompt and generation speed) is printed on stderr at the end. An option that has no\n"
        "effect in the mode chosen (--temp with --perplexity, --port without --server) is named in a warning\n"
        "on stderr, and ignored.\n",
        "--n-predict=5, --prompt="};
}

// One line, whatever the message carries from a file: control characters are escaped.
int fail(const std::string& msg) {
    std::fprintf(stderr, "run: %s\n", message_line(msg).c_str());
    return 1;
}

// Beside the program, so that ./run finds its model from any working directory.
std::string default_model_path() {
    const std::string exe = executable_path();
    const size_t slash = exe.rfind('/');
    return (slash == std::string::npos ? std::string(".") : exe.substr(0, slash)) + "/models/tiny-shakespeare.hearth";
}

// A text file as given to -f or --perplexity: "-" is standard input, as in grep -f - (and
// POSIX's guideline 13 for operands); a file named - is ./-. "" or why not.
std::string read_text(const std::string& given, std::string* out, uint64_t read_at_most = 0) {
    return given == "-" ? read_standard_input(InputKind::text, out, read_at_most)
                        : read_input_file(given, InputKind::text, out, nullptr, read_at_most);
}

// Such a file's name in messages.
std::string text_name(const std::string& given) { return given == "-" ? "standard input" : shown_path(given); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int context_length(const Options& o, const ModelConfig& c) {
    return o.n_ctx > 0 ? o.n_ctx : o.n_ctx == 0 ? c.max_seq_len : std::min(c.max_seq_len, kDefaultContextCap);
}

// --perplexity's window: -c, else kDefaultPerplexityWindow or the model's context if shorter.
int perplexity_window(const Options& o, const ModelConfig& c) {
    return o.n_ctx > 0 ? o.n_ctx : o.n_ctx == 0 ? c.max_seq_len : std::min(kDefaultPerplexityWindow, c.max_seq_len);
}

// Positions past the context the model declares (as a rule, its training's) give text and
// perplexity it was never trained for: said on stderr before the work, as llama.cpp warns.
void note_past_context(const std::string& lead, int positions, const ModelConfig& c) {
    if (positions > c.max_seq_len)
        std::fprintf(stderr, "run: note: %s %d positions, past the model's context of %d\n", lead.c_str(), positions,
                     c.max_seq_len);
}

// --prompt-ids: comma-separated ids, each inside the vocabulary, a space allowed after each
// comma and the whole in brackets or not (llama-tokenize --ids prints "[1, 15043]"). "" on success.
std::string parse_prompt_ids(const std::string& given, int vocab, std::vector<int>* ids) {
    const std::string not_a_list = "--prompt-ids: '" + given + "' is not a list of ids like 1,15043 or [1, 15043]";
    std::string s = given;
    if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
    for (const char* p = s.c_str(); *p;) {
        char* end = nullptr;
        errno = 0;
        const long id = std::strtol(p, &end, 10);
        if (errno || end == p || *p == '-' || *p == '+' || *p == ' ') return not_a_list;
        if (id >= vocab)
            return "--prompt-ids: id " + std::to_string(id) + " is outside the vocabulary 0.." + std::to_string(vocab - 1);
        ids->push_back(int(id));
        p = end;
        if (*p == ',' && p[1]) {  // a comma between ids, not at the end
            p++;
            if (*p == ' ' && p[1]) p++;
        } else if (*p) {
            return not_a_list;
        }
    }
    return ids->empty() ? "--prompt-ids is empty" : "";
}

// Ctrl-C while tokens are generated (llama.cpp's llama-cli does the same): the generation
// stops after the token under way, the output gets its last newline and the timing line, and
// then run ends by SIGINT as it would have (the shell sees an interrupted program). Before
// generation (a long prompt) and at a second Ctrl-C, the default: at once. Only
// async-signal-safe work in the handler.
volatile std::sig_atomic_t g_generating = 0, g_interrupted = 0;
extern "C" void on_generation_sigint(int sig) {
    std::signal(sig, SIG_DFL);
    if (!g_generating) std::raise(sig);
    g_interrupted = 1;
}

// The prompt's text (or ids) and what follows it, on stdout as it is generated.
int generate(const Model& model, const Tokenizer& tok, const Options& o, bool ids_given, Clock::time_point t_load) {
    const ModelConfig& c = model.config;
    std::vector<int> tokens;  // the prompt, then each generated token once it is evaluated
    if (ids_given) {
        std::string err = parse_prompt_ids(o.prompt_ids, c.vocab_size, &tokens);
        if (!err.empty()) return fail(err);
    } else {
        if (std::string why = check_text_for_context(o.prompt.size(), context_length(o, c)); !why.empty())
            return fail("the prompt is " + why + " (raise -c)");
        std::string err = tok.encode(o.prompt, true, &tokens);
        if (!err.empty()) return fail("the prompt: " + err);
        if (tokens.empty()) tokens.push_back(c.bos_id >= 0 ? c.bos_id : 0);
    }
    const int n_ctx = context_length(o, c);
    if (int(tokens.size()) > n_ctx)
        return fail("the prompt is " + std::to_string(tokens.size()) + " tokens, longer than the context of " +
                    std::to_string(n_ctx) + " (raise -c)");
    RunState state;
    std::string err = make_run_state(c, n_ctx, &state, o.cache_types);
    if (!err.empty()) return fail(err);
    const double load_s = seconds_since(t_load);

    Sampler sampler(o.sampler);
    // EOS and the other tokens that end a generation (a Llama-3-Instruct reply's <|eot_id|>), as llama.cpp stops at them.
    const std::vector<int> end_ids = o.ignore_eos ? std::vector<int>{} : end_of_generation_ids(tok, c.eos_id);
    Generator gen(model, tok, sampler, end_ids);
    gen.set_draft(o.draft);
    if (!o.print_ids) write_text(gen.text_before(tokens));
    flush_stdout();

    std::vector<float> logits(c.vocab_size);
    const size_t n_prompt = tokens.size();
    const auto t_prompt = Clock::now();
    if (!(err = forward(model, state, tokens.data(), int(n_prompt), 0, logits.data())).empty()) return fail(err);
    const double prompt_s = seconds_since(t_prompt);

    GenerationCallbacks cb;
    // Output that cannot be written (a closed pipe with SIGPIPE ignored, a full disk) ends the
    // generation: nobody would read the rest. main says why.
    cb.interrupted = [&] { return std::ferror(stdout) != 0 || g_interrupted; };
    cb.on_token = [&](int id, const std::string& text) {
        if (o.print_ids)
            std::printf(gen.tokens().size() > 1 ? ",%d" : "%d", id);
        else
            write_text(text);
        flush_stdout();
        if (o.print_margins) {
            // The logits id was chosen from (padding ids masked): the largest and the second, with
            // the second's id, so that two builds whose top two swap can be matched.
            float top1 = -INFINITY, top2 = -INFINITY;
            int first = -1, second = -1;
            for (int i = 0; i < int(logits.size()); i++) {
                const float l = logits[i];
                if (l > top1) {
                    top2 = top1, second = first;
                    top1 = l, first = i;
                } else if (l > top2) {
                    top2 = l, second = i;
                }
            }
            std::fprintf(stderr, "run: margin: id %d logit %.9g runner-up %d logit %.9g\n", id, top1, second, top2);
        }
    };
    // A caller that ignores SIGINT (a background job of a script) keeps it ignored.
    if (std::signal(SIGINT, on_generation_sigint) == SIG_IGN) std::signal(SIGINT, SIG_IGN);
    g_generating = 1;
    const auto t_gen = Clock::now();
    const GenerationEnd end = gen.generate(state, tokens, logits, o.n_predict, cb);
    const double gen_s = seconds_since(t_gen);
    if (!o.print_ids) write_text(gen.finish());
    std::fputs("\n", stdout);
    flush_stdout();

    if (end == GenerationEnd::error) return fail(gen.error());
    if (std::ferror(stdout)) return 1;  // main says why
    if (end == GenerationEnd::context_full)
        std::fprintf(stderr, "run: stopped: the context of %d tokens is full (raise -c)\n", n_ctx);
    const size_t n_gen = gen.tokens().size();
    std::fprintf(stderr, "run: load %.0f ms | prompt %zu tokens, %.1f tok/s | generation %zu tokens, %.1f tok/s | %d threads\n",
                 load_s * 1e3, n_prompt, n_prompt / std::max(prompt_s, 1e-9), n_gen, n_gen / std::max(gen_s, 1e-9), o.threads);
    if (o.chat_options.verbose) {
        std::fprintf(stderr, "run: %s; %ld forward calls for %zu tokens\n",
                     o.draft ? draft_summary(gen.draft_stats()).c_str() : "drafts: off (--draft 0)", gen.evaluated(), n_gen);
        std::fprintf(stderr, "run: kernels for one token: %s\n", kernel_choices(model, 1, true).c_str());
    }
    if (g_interrupted) std::raise(SIGINT);  // the handler has put the default back
    return 0;
}

// A context whose KV cache and buffers the machine cannot hold is refused before anything
// large is allocated, with the figures and the largest -c that fits.
std::string check_context_memory(const ModelConfig& c, int n_ctx, KvCacheTypes types) {
    const RunStateBytes need = run_state_bytes(c, types);
    const uint64_t available = available_memory_bytes();
    if (available == 0 || need.total(n_ctx) <= available) return "";
    const uint64_t largest = available > need.fixed ? (available - need.fixed) / need.per_position : 0;
    return "a context of " + std::to_string(n_ctx) + " tokens needs " + std::to_string(need.total(n_ctx) >> 20) +
           " MiB for its KV cache and buffers, and this machine has " + std::to_string(available >> 20) +
           " MiB available: the largest -c that fits is " + std::to_string(largest);
}

int perplexity(const Model& model, const Tokenizer& tok, const Options& o) {
    std::string text;
    std::string err = read_text(o.perplexity_file, &text);
    if (!err.empty()) return fail("--perplexity: " + err);
    const int window = perplexity_window(o, model.config);
    std::vector<int> ids;
    if (!(err = tok.encode(text, true, &ids)).empty()) return fail("--perplexity: " + text_name(o.perplexity_file) + ": " + err);
    int windows = 0;
    err = perplexity_windows(ids.size(), window, &windows);
    if (!err.empty()) return fail(err);
    std::fprintf(stderr, "run: %zu tokens, %d windows of %d\n", ids.size(), windows, window);
    PerplexityResult r;
    const auto t0 = Clock::now();
    // On a terminal one line redrawn after each window; into a file or a pipe (a log), a line of
    // its own every tenth of the windows and at the end, not carriage returns on one line.
    const bool redraw = isatty(STDERR_FILENO);
    err = compute_perplexity(model, ids, window, o.cache_types, &r, [&](int w, int total, double ppl) {
        if (!redraw && w * 10 / total == (w - 1) * 10 / total) return;  // a line as each tenth is done
        std::fprintf(stderr, "%s[%d/%d] perplexity %.4f, %.1f s%s", redraw ? "\r" : "", w, total, ppl, seconds_since(t0),
                     !redraw || w == total ? "\n" : "");
    });
    if (!err.empty()) return fail(err);
    std::printf("perplexity: %.4f (%ld tokens scored in %d windows of %d; mean NLL %.5f nats)\n", r.perplexity, r.scored,
                r.windows, window, r.mean_nll);
    return 0;
}

int bench(const Model& model, const Options& o) {
    BenchSpec spec = o.bench_spec;
    spec.cache_types = o.cache_types;
    // Also because a run past the context may take minutes: attention's cost grows with the positions.
    note_past_context("the bench runs to", bench_context(spec, 0), model.config);
    BenchResult b;
    std::string err = bench_model(model, spec, &b);
    if (!err.empty()) return fail(err);
    std::printf("model: %s, %.1f MB of weights per generated token, %d threads, KV cache %s/%s\n", o.model_path.c_str(),
                b.bytes_per_token / 1e6, o.threads, type_name(o.cache_types.k), type_name(o.cache_types.v));
    if (spec.n_pp > 0) std::printf("kernels for pp%d: %s\n", spec.n_pp, kernel_choices(model, spec.n_pp, false).c_str());
    if (spec.n_tg > 0)
        std::printf("kernels for tg%s: %s\n",
                    spec.n_seqs > 1 ? (" (" + std::to_string(spec.n_seqs) + " tokens a pass)").c_str() : "",
                    kernel_choices(model, spec.n_seqs, true).c_str());
    // After a depth, the rows are named as llama-bench names them: pp512 @ d256.
    const std::string at = spec.depth ? " @ d" + std::to_string(spec.depth) : "";
    if (spec.n_pp > 0) std::printf("pp%d%s: %.2f tok/s\n", spec.n_pp, at.c_str(), b.pp_tok_s);
    if (spec.n_tg > 0 && spec.n_seqs == 1)
        std::printf("tg%d%s: %.2f tok/s (%.2f GB/s of weights)\n", spec.n_tg, at.c_str(), b.tg_tok_s,
                    b.tg_tok_s * b.bytes_per_token / 1e9);
    else if (spec.n_tg > 0)
        std::printf("tg%d%s x %d sequences: %.2f tok/s in all, %.2f per sequence\n", spec.n_tg, at.c_str(), spec.n_seqs,
                    b.tg_tok_s, b.tg_tok_s / spec.n_seqs);
    // Generation reads the weights faster from 2 MB pages (docs/benchmarks.md, "Weights in 2 MB
    // pages"), and a file the page cache already holds keeps the pages it has: said here, since
    // it can change the figures above by a fifth.
    HugePageBytes huge;
    if (huge_page_bytes(&huge))
        std::printf("in 2 MB pages: %.0f MB of mapped files, %.0f MB of anonymous memory (of %.0f MB of weights)\n",
                    huge.file / 1e6, huge.anonymous / 1e6, b.bytes_per_token / 1e6);
    return 0;
}

// run --server: the server listens first, then loads the model (so /health can say it is
// loading), with the same checks as the other modes.
int serve_model(Options& o) {
    ServerOptions& so = o.server_options;
    if (so.model_name.empty()) so.model_name = o.model_path.substr(o.model_path.rfind('/') + 1);
    so.sampler = o.sampler;
    so.template_name = o.chat_options.template_name;
    so.cache_types = o.cache_types;
    so.draft = o.draft;
    return serve(so, [&](LoadedModel* lm) -> std::string {
        std::string err = load_model(o.model_path, &lm->model);
        if (!err.empty()) return err;
        if (!(err = check_kv_cache_types(lm->model.config, o.cache_types)).empty()) return err;
        if (lm->model.tokenizer.kind == TokenizerKind::none) return o.model_path + " has no tokenizer: the server needs one";
        if (!(err = load_tokenizer(lm->model, &lm->tok)).empty()) return o.model_path + ": " + err;
        std::string why;
        lm->template_name = resolve_chat_template(lm->model.config, lm->tok, so.template_name, &why);
        if (!is_chat_template(lm->template_name)) return "unknown chat template " + in_quotes(lm->template_name);
        lm->default_system = default_system_message(lm->model.config, lm->template_name);
        lm->n_ctx_total = context_length(o, lm->model.config);
        note_past_context(
            "-c " + std::to_string(lm->n_ctx_total) + " split among " + std::to_string(so.n_parallel) + " slots gives each",
            lm->n_ctx_total / std::max(so.n_parallel, 1), lm->model.config);
        return check_context_memory(lm->model.config, lm->n_ctx_total, o.cache_types);
    });
}

}  // namespace

// A page of the mapped model that its file no longer has (truncated, or rewritten in place, by
// another program) raises SIGBUS when it is read: say so instead of dying without a word. Only
// async-signal-safe calls here.
extern "C" void on_sigbus(int) {
    static const char reset[] = "\033[0m", msg[] = "\nrun: the model file was changed or truncated while in use\n";
    if (isatty(STDOUT_FILENO)) (void)!write(STDOUT_FILENO, reset, sizeof reset - 1);  // a reply's colour
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(1);
}

int run_main(int argc, char** argv) {
    bound_openmp_spin_wait(argv);
    std::signal(SIGBUS, on_sigbus);
    Options o;
    o.sampler.seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
    Arguments args;
    const CommandLine options = command_line(o);
    if (int exit_code = parse_command_line(options, argc, argv, &args); exit_code >= 0) return exit_code;
    bool model_given = args.was_given("--model");
    for (const std::string& a : args.positional) {
        if (model_given) return fail("unexpected argument '" + a + "' (the model is already " + o.model_path + ")");
        model_given = true;
        o.model_path = a;
    }
    // An empty path (an unset $MODEL) names no file, as for cat '': not the default model.
    if (model_given && o.model_path.empty())
        return fail("the model's path is empty: give a file, or leave MODEL out for the default model");
    if (o.n_predict < 0) o.n_predict = 1 << 30;  // -1: the context (or EOS) ends it
    if (args.was_given("--file") && args.was_given("--prompt")) return fail("give either --prompt or --file, not both");
    const bool prompt_given = args.was_given("--prompt") || args.was_given("--file"), ids_given = args.was_given("--prompt-ids");
    // The prompt's option as given, for the messages that refuse it.
    const std::string prompt_option = args.was_given("--file")     ? "--file"
                                      : ids_given && !prompt_given ? "--prompt-ids"
                                                                   : "--prompt";
    const bool perplexity_given = args.was_given("--perplexity");
    if (int(o.chat) + int(o.bench) + int(perplexity_given) + int(o.tokenize) > 1)
        return fail("give only one of --chat, --bench, --perplexity and --tokenize");
    if (o.server && (o.chat || o.bench || perplexity_given || o.tokenize || prompt_given || ids_given))
        return fail(
            "--server takes its prompts from HTTP requests: give none of --chat, --bench, --perplexity, --tokenize, "
            "--prompt, --file, --prompt-ids");
    if (o.tokenize && ids_given) return fail("--tokenize encodes --prompt text, not --prompt-ids");
    if (prompt_given && ids_given) return fail("give either " + prompt_option + " or --prompt-ids, not both");
    if (o.chat && (prompt_given || ids_given))
        return fail("--chat reads its messages from the terminal or stdin, not " + prompt_option);
    if (o.chat && (o.print_ids || o.print_margins))
        return fail(std::string(o.print_ids ? "--print-ids" : "--print-margins") +
                    " is for a generation from --prompt or --prompt-ids; --chat writes its replies as text");
    if (o.bench && o.bench_spec.n_pp == 0 && o.bench_spec.n_tg == 0)
        return fail("--bench-pp 0 and --bench-tg 0 leave nothing to measure");
    // An empty key (an unset $KEY) would serve without one, silently; an empty host would bind
    // to whatever the resolver gives for "".
    if (args.was_given("--api-key") && o.server_options.api_key.empty())
        return fail("--api-key is empty: give a key, or leave the option out to serve without one");
    if (args.was_given("--host") && o.server_options.host.empty()) return fail("--host is empty");
    // An empty list (an unset $ORIGINS) would let no page in, silently.
    if (args.was_given("--cors-origins") && o.server_options.cors_origins.empty())
        return fail(
            "--cors-origins is empty: name the origins whose pages may call the server, 'localhost' (the default) for "
            "this machine's, or '*' for any");
    if (args.was_given("--allowed-hosts")) {
        if (o.server_options.allowed_hosts.empty())
            return fail("--allowed-hosts is empty: name the hosts to let in besides the loopback names, or '*' for any");
        if (std::string why = check_allowed_hosts(o.server_options.allowed_hosts); !why.empty())
            return fail("--allowed-hosts: " + why);
    }
    const Mode mode = o.server           ? kServer
                      : o.chat           ? kChat
                      : o.bench          ? kBench
                      : perplexity_given ? kPerplexity
                      : o.tokenize       ? kTokenize
                                         : kGenerate;
    for (const Option* option : options_without_effect(options, args, mode))
        std::fprintf(stderr, "%s\n", no_effect_warning(*option, mode).c_str());
    if (args.was_given("--file") && (mode == kGenerate || mode == kTokenize)) {
        // A prompt over 64 bytes a token of its context is refused before tokenizing (generate):
        // read no more of a pipe than that, not a text file's 1 GiB. The context is -c, or the
        // model's of at most kDefaultContextCap (not loaded yet). --tokenize has no context, and -c 0's
        // is known once the model is: then generate() refuses a prompt too long for it.
        const int n_ctx = o.n_ctx > 0 ? o.n_ctx : kDefaultContextCap;
        const uint64_t most = o.tokenize || o.n_ctx == 0 ? 0 : uint64_t(n_ctx) * limits::kPromptBytesPerContextToken + 1;
        std::string err = read_text(o.prompt_file, &o.prompt, most);
        if (!err.empty()) return fail("--file: " + err);
        if (most && o.prompt.size() == most)
            return fail("--file: " + text_name(o.prompt_file) + " holds more than " + std::to_string(most - 1) +
                        " bytes: more than " + std::to_string(limits::kPromptBytesPerContextToken) +
                        " per token of a context of " + std::to_string(n_ctx) +
                        (o.n_ctx > 0 ? "" : " (the most -c defaults to)") + ", too long to be tokenized (raise -c)");
        if (o.prompt.empty()) std::fprintf(stderr, "run: note: --file: %s is empty\n", text_name(o.prompt_file).c_str());
        // The newline that ends a file's last line is not part of the prompt, as in llama.cpp.
        if (!o.prompt.empty() && o.prompt.back() == '\n') o.prompt.pop_back();
    }
    std::string err;
    // The logits the callback sees are the step's own only without drafts (model/generate.cpp).
    if (o.print_margins && (o.sampler.temperature > 0 || o.draft != 0))
        return fail("--print-margins needs --temp 0 and --draft 0");
    if (!(err = kv_cache_type_from_name(o.cache_type_k, &o.cache_types.k)).empty()) return fail("--cache-type-k: " + err);
    if (!(err = kv_cache_type_from_name(o.cache_type_v, &o.cache_types.v)).empty()) return fail("--cache-type-v: " + err);
    if (o.model_path.empty()) o.model_path = default_model_path();
    // More threads than the CPUs this process may run on only makes OpenMP's workers wait for each
    // other's turn on a CPU at every barrier (and -t 1000 would start 1000 of them).
    if (o.threads > omp_get_num_procs()) {
        std::fprintf(stderr, "run: -t %d is more than the %d CPUs this process may run on; using %d\n", o.threads,
                     omp_get_num_procs(), omp_get_num_procs());
        o.threads = omp_get_num_procs();
    }
    omp_set_num_threads(o.threads);
    if (o.server) return serve_model(o);

    const auto t_load = Clock::now();
    Model model;
    if (!(err = load_model(o.model_path, &model)).empty()) return fail(err);
    if (!(err = check_kv_cache_types(model.config, o.cache_types)).empty()) return fail(err);
    if (model.repacked_bytes)
        std::fprintf(stderr,
                     "run: %s stores %.0f MB of weights in the plain layout: they were repacked for the kernels at load; "
                     "`quantize %s OUT.hearth` stores them repacked, so that loading is instant and the pages are shared\n",
                     o.model_path.c_str(), model.repacked_bytes / 1e6, o.model_path.c_str());
    Tokenizer tok;
    if (model.tokenizer.kind == TokenizerKind::none) {
        // A llama2.c model converted without --tokenizer: ids in, ids out (or --bench).
        if (!o.bench && !(ids_given && o.print_ids && !o.chat && !perplexity_given))
            return fail(o.model_path + " has no tokenizer: give the prompt as ids (--prompt-ids) and print ids (--print-ids)");
    } else if (!(err = load_tokenizer(model, &tok)).empty()) {
        return fail(o.model_path + ": " + err);
    }
    if (o.tokenize) {
        if (model.tokenizer.kind == TokenizerKind::none) return fail(o.model_path + " has no tokenizer");
        std::vector<int> ids;
        if (!(err = tok.encode(o.prompt, false, &ids)).empty()) return fail("the text: " + err);
        std::string line;
        for (size_t i = 0; i < ids.size(); i++) line += (i ? "," : "") + std::to_string(ids[i]);
        std::printf("%s\n", line.c_str());
        return 0;
    }

    // The context each mode will allocate, checked against the machine before it is.
    const int n_ctx = o.chat || !(perplexity_given || o.bench) ? context_length(o, model.config)
                      : o.bench                                ? bench_positions(o.bench_spec)
                                                               : perplexity_window(o, model.config);
    if (!(err = check_context_memory(model.config, n_ctx, o.cache_types)).empty()) return fail(err);
    if (!o.bench) note_past_context("-c gives", n_ctx, model.config);

    if (o.chat) {
        ChatOptions& c = o.chat_options;
        c.n_ctx = context_length(o, model.config);
        c.n_predict = o.n_predict;
        c.sampler = o.sampler;
        c.ignore_eos = o.ignore_eos;
        c.cache_types = o.cache_types;
        c.draft = o.draft;
        return run_chat(model, tok, c);
    }
    if (perplexity_given) return perplexity(model, tok, o);
    if (o.bench) return bench(model, o);
    return generate(model, tok, o, ids_given, t_load);
}

int main(int argc, char** argv) {
    open_missing_standard_files();
    int code;
    try {
        code = run_main(argc, argv);
    } catch (const std::bad_alloc&) {
        return fail("out of memory (a limit such as ulimit -v, or too little RAM)");
    }
    // What was written to stdout must have arrived: a full disk, /dev/full or a closed pipe
    // are an error, not a silent success.
    flush_stdout();
    if (const int err = stdout_error()) return fail(std::string("cannot write the output: ") + std::strerror(err));
    return code;
}
