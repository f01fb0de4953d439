// run: memory-maps a hearth checkpoint and generates text from a prompt.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "model/bench.h"
#include "model/chat.h"
#include "model/cpu_info.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/perplexity.h"
#include "model/sampler.h"
#include "tokenizer/tokenizer.h"

static const char* kUsage =
    "usage: run [MODEL] [options]\n"
    "\n"
    "Generates text with a hearth checkpoint (made by `quantize`). Without MODEL, runs the\n"
    "default model models/tiny-shakespeare.hearth shipped beside this program.\n"
    "\n"
    "input and output:\n"
    "  -m, --model FILE         the checkpoint (same as the first argument)\n"
    "  -p, --prompt TEXT        prompt text; SentencePiece-encoded with BOS prepended (default: just BOS)\n"
    "      --prompt-ids IDS     prompt as raw token ids, comma-separated (nothing is added)\n"
    "  -n, --n-predict N        tokens to generate at most (default 256); stops earlier at EOS\n"
    "      --ignore-eos         keep generating past EOS\n"
    "      --print-ids          print the generated ids, comma-separated, instead of text\n"
    "  -c, --ctx-size N         context length in tokens (default: the model's, at most 4096)\n"
    "  -t, --threads N          threads (default: the number of physical cores, here %d)\n"
    "\n"
    "sampling (applied in this order, as llama.cpp does):\n"
    "      --repeat-penalty X   divide logits of recently seen tokens by X (default 1.0 = off)\n"
    "      --repeat-last-n N    how many recent tokens the penalty looks at (default 64)\n"
    "      --top-k N            keep the N most likely tokens (default 40, 0 = off)\n"
    "      --top-p X            keep the smallest set with probability mass >= X (default 0.95, 1 = off)\n"
    "      --min-p X            drop tokens less likely than X times the top one (default 0.05, 0 = off)\n"
    "      --temp X             temperature (default 0.8); 0 is greedy: always the most likely token\n"
    "  -s, --seed N             random seed, for reproducible sampling (default: from the clock)\n"
    "\n"
    "perplexity (instead of generating):\n"
    "      --perplexity FILE    perplexity of a text file, as llama.cpp computes it: windows of -c\n"
    "                           tokens (default 512), the second half of each window scored\n"
    "\n"
    "benchmark (instead of generating):\n"
    "      --bench              print prompt processing (ppN) and generation (tgN) speed in tok/s,\n"
    "                           medians of --bench-reps runs, and the weight bandwidth of tg\n"
    "      --bench-pp N         prompt tokens evaluated in one batch (default 512)\n"
    "      --bench-tg N         tokens generated one by one (default 128)\n"
    "      --bench-reps N       repetitions (default 3)\n"
    "\n"
    "chat (instead of a single prompt):\n"
    "  -i, --chat               a conversation: read a message, write the reply, again, keeping the\n"
    "                           KV cache between turns. In a terminal: line editing, history, /help\n"
    "                           for commands; Ctrl-C stops a reply, Ctrl-D leaves. From a pipe: one\n"
    "                           message a line (`echo question | run MODEL --chat`). -n caps a reply.\n"
    "      --template NAME      chat template: llama2, zephyr, chatml, vicuna or raw (default: the one\n"
    "                           quantize stored; when none, raw, or chatml if the vocabulary has its\n"
    "                           tokens)\n"
    "      --system TEXT        the system prompt\n"
    "      --verbose            print each reply's timing (prompt, time to first token, tok/s) on stderr\n"
    "\n"
    "  -h, --help               this text\n"
    "\n"
    "Timing (load, prompt and generation speed) is printed on stderr at the end.\n";

static int fail(const std::string& msg) {
    std::fprintf(stderr, "run: %s\n", msg.c_str());
    return 1;
}

// Strict number parsing: the whole argument must be a number in range.
static bool parse_long(const char* s, long lo, long hi, long* out) {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}
static bool parse_float(const char* s, float lo, float hi, float* out) {
    char* end = nullptr;
    errno = 0;
    float v = std::strtof(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

static std::string default_model_path() {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::string dir = ".";
    if (n > 0) {
        exe[n] = 0;
        dir = exe;
        dir = dir.substr(0, dir.rfind('/'));
    }
    return dir + "/models/tiny-shakespeare.hearth";
}

static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char** argv) {
    bound_openmp_spin_wait(argv);
    std::string model_path, prompt;
    std::string prompt_ids_arg;
    bool have_prompt = false, have_prompt_ids = false, print_ids = false, ignore_eos = false;
    long n_predict = 256, n_ctx = 0, n_threads = physical_core_count();
    SamplerParams sp;
    bool seed_given = false;
    bool bench = false;
    std::string perplexity_file;
    long bench_pp = 512, bench_tg = 128, bench_reps = 3;
    bool chat = false;
    ChatOptions chat_opt;

    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&](const char* what) -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "run: %s needs %s\n", a.c_str(), what);
                std::exit(1);
            }
            return argv[++i];
        };
        auto bad = [&](const char* v) { return fail("invalid value '" + std::string(v) + "' for " + a); };
        long l;
        if (a == "-h" || a == "--help") {
            std::printf(kUsage, physical_core_count());
            return 0;
        } else if (a == "-m" || a == "--model") {
            model_path = value("a file");
        } else if (a == "-p" || a == "--prompt") {
            prompt = value("text");
            have_prompt = true;
        } else if (a == "--prompt-ids") {
            prompt_ids_arg = value("comma-separated ids");
            have_prompt_ids = true;
        } else if (a == "-n" || a == "--n-predict") {
            const char* v = value("a number");
            if (!parse_long(v, 0, 1 << 30, &n_predict)) return bad(v);
        } else if (a == "-c" || a == "--ctx-size") {
            const char* v = value("a number");
            if (!parse_long(v, 1, 1 << 24, &n_ctx)) return bad(v);
        } else if (a == "-t" || a == "--threads") {
            const char* v = value("a number");
            if (!parse_long(v, 1, 1024, &n_threads)) return bad(v);
        } else if (a == "--temp") {
            const char* v = value("a number");
            if (!parse_float(v, 0.0f, 100.0f, &sp.temperature)) return bad(v);
        } else if (a == "--top-k") {
            const char* v = value("a number");
            if (!parse_long(v, 0, 1 << 30, &l)) return bad(v);
            sp.top_k = int(l);
        } else if (a == "--top-p") {
            const char* v = value("a number");
            if (!parse_float(v, 0.0f, 1.0f, &sp.top_p)) return bad(v);
        } else if (a == "--min-p") {
            const char* v = value("a number");
            if (!parse_float(v, 0.0f, 1.0f, &sp.min_p)) return bad(v);
        } else if (a == "--repeat-penalty") {
            const char* v = value("a number");
            if (!parse_float(v, 0.01f, 100.0f, &sp.repeat_penalty)) return bad(v);
        } else if (a == "--repeat-last-n") {
            const char* v = value("a number");
            if (!parse_long(v, 0, 1 << 24, &l)) return bad(v);
            sp.repeat_last_n = int(l);
        } else if (a == "-s" || a == "--seed") {
            const char* v = value("a number");
            char* end = nullptr;
            errno = 0;
            unsigned long long s = std::strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') return bad(v);
            sp.seed = s;
            seed_given = true;
        } else if (a == "--perplexity") {
            perplexity_file = value("a text file");
        } else if (a == "--bench") {
            bench = true;
        } else if (a == "--bench-pp" || a == "--bench-tg" || a == "--bench-reps") {
            const char* v = value("a number");
            long* target = a == "--bench-pp" ? &bench_pp : a == "--bench-tg" ? &bench_tg : &bench_reps;
            if (!parse_long(v, a == "--bench-reps" ? 1 : 0, 1 << 20, target)) return bad(v);
        } else if (a == "-i" || a == "--chat") {
            chat = true;
        } else if (a == "--template") {
            chat_opt.template_name = value("a template name");
        } else if (a == "--system") {
            chat_opt.system_prompt = value("text");
        } else if (a == "--verbose") {
            chat_opt.verbose = true;
        } else if (a == "--print-ids") {
            print_ids = true;
        } else if (a == "--ignore-eos") {
            ignore_eos = true;
        } else if (a.size() > 1 && a[0] == '-') {
            return fail("unknown option " + a + " (see --help)");
        } else if (model_path.empty()) {
            model_path = a;
        } else {
            return fail("unexpected argument '" + a + "' (the model is already " + model_path + ")");
        }
    }
    if (have_prompt && have_prompt_ids) return fail("give either --prompt or --prompt-ids, not both");
    if (chat && (have_prompt || have_prompt_ids)) return fail("--chat reads its messages from the terminal or stdin, not --prompt");
    if (model_path.empty()) model_path = default_model_path();
    if (!seed_given) sp.seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
    omp_set_num_threads(int(n_threads));

    auto t_load = std::chrono::steady_clock::now();
    Model model;
    std::string err = load_model(model_path, &model);
    if (!err.empty()) return fail(err);
    Tokenizer tok;
    const ModelConfig& c = model.config;
    if (model.tokenizer.kind == TokenizerKind::none) {
        // A llama2.c model converted without --tokenizer: ids in, ids out (or --bench).
        if (!bench && !(have_prompt_ids && print_ids && !chat && perplexity_file.empty()))
            return fail(model_path + " has no tokenizer: give the prompt as ids (--prompt-ids) and print ids (--print-ids)");
    } else {
        if (!(err = tok.load(model.tokenizer)).empty()) return fail(model_path + ": embedded tokenizer: " + err);
        if (tok.vocab_size() > c.vocab_size) return fail(model_path + ": tokenizer is larger than the model's vocabulary");
    }

    if (chat) {
        chat_opt.n_ctx = int(n_ctx ? n_ctx : std::min(c.max_seq_len, 4096));
        chat_opt.n_predict = int(n_predict);
        chat_opt.sampler = sp;
        chat_opt.ignore_eos = ignore_eos;
        return run_chat(model, tok, chat_opt);
    }

    if (!perplexity_file.empty()) {
        std::FILE* f = std::fopen(perplexity_file.c_str(), "rb");
        if (!f) return fail("cannot read " + perplexity_file);
        std::string text;
        char buf[65536];
        for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
        std::fclose(f);
        const int window = int(n_ctx ? n_ctx : std::min(512, c.max_seq_len));
        if (window > c.max_seq_len) std::fprintf(stderr, "run: warning: -c %d is longer than the model's context of %d\n", window, c.max_seq_len);
        std::vector<int> ids = tok.encode(text, true);
        std::fprintf(stderr, "run: %zu tokens, %zu windows of %d\n", ids.size(), ids.size() / window, window);
        PerplexityResult r;
        auto t0 = std::chrono::steady_clock::now();
        err = compute_perplexity(model, ids, window, &r, [&](int w, int total, double ppl) {
            std::fprintf(stderr, "\r[%d/%d] perplexity %.4f, %.1f s", w, total, ppl, seconds_since(t0));
            if (w == total) std::fputc('\n', stderr);
        });
        if (!err.empty()) return fail(err);
        std::printf("perplexity: %.4f (%ld tokens scored in %d windows of %d; mean NLL %.5f nats)\n", r.perplexity, r.scored,
                    r.windows, window, r.mean_nll);
        return 0;
    }

    if (bench) {
        BenchResult b;
        if (!(err = bench_model(model, int(bench_pp), int(bench_tg), int(bench_reps), &b)).empty()) return fail(err);
        std::printf("model: %s, %.1f MB of weights per generated token, %ld threads\n", model_path.c_str(), b.bytes_per_token / 1e6, n_threads);
        if (bench_pp > 0) std::printf("pp%ld: %.2f tok/s\n", bench_pp, b.pp_tok_s);
        if (bench_tg > 0) std::printf("tg%ld: %.2f tok/s (%.2f GB/s of weights)\n", bench_tg, b.tg_tok_s, b.tg_tok_s * b.bytes_per_token / 1e9);
        return 0;
    }

    std::vector<int> tokens;
    if (have_prompt_ids) {
        const char* p = prompt_ids_arg.c_str();
        while (*p) {
            char* end = nullptr;
            errno = 0;
            long id = std::strtol(p, &end, 10);
            if (errno || end == p || *p == '-' || *p == '+' || *p == ' ')
                return fail("--prompt-ids: '" + prompt_ids_arg + "' is not a comma-separated list of ids");
            if (id >= c.vocab_size)
                return fail("--prompt-ids: id " + std::to_string(id) + " is outside the vocabulary 0.." + std::to_string(c.vocab_size - 1));
            tokens.push_back(int(id));
            p = end;
            if (*p == ',') p++;
            else if (*p) return fail("--prompt-ids: '" + prompt_ids_arg + "' is not a comma-separated list of ids");
        }
        if (tokens.empty()) return fail("--prompt-ids is empty");
    } else {
        tokens = tok.encode(prompt, true);
        if (tokens.empty()) tokens.push_back(c.bos_id >= 0 ? c.bos_id : 0);
    }
    if (n_ctx == 0) n_ctx = std::min(c.max_seq_len, 4096);
    if (long(tokens.size()) > n_ctx)
        return fail("the prompt is " + std::to_string(tokens.size()) + " tokens, longer than the context of " + std::to_string(n_ctx) +
                    " (raise -c)");
    RunState state;
    if (!(err = make_run_state(c, int(n_ctx), &state)).empty()) return fail(err);
    const double load_s = seconds_since(t_load);

    Sampler sampler(sp);
    TextStreamer streamer(tok);
    std::vector<float> logits(c.vocab_size);
    if (!print_ids) {
        for (int id : tokens) std::fputs(streamer.push(id).c_str(), stdout);
        std::fflush(stdout);
    }

    auto t_prompt = std::chrono::steady_clock::now();
    if (!(err = forward(model, state, tokens.data(), int(tokens.size()), 0, logits.data())).empty()) return fail(err);
    const double prompt_s = seconds_since(t_prompt);
    const size_t n_prompt = tokens.size();

    auto t_gen = std::chrono::steady_clock::now();
    int generated = 0;
    bool context_full = false;
    while (generated < n_predict) {
        int next = sampler.sample(logits.data(), c.vocab_size, tokens);
        if (next == c.eos_id && !ignore_eos) break;
        tokens.push_back(next);
        if (print_ids) {
            std::printf(generated ? ",%d" : "%d", next);
        } else {
            std::fputs(streamer.push(next).c_str(), stdout);
        }
        std::fflush(stdout);
        if (++generated == n_predict) break;
        if (long(tokens.size()) >= n_ctx) {
            context_full = true;
            break;
        }
        if (!(err = forward(model, state, &next, 1, int(tokens.size()) - 1, logits.data())).empty()) return fail(err);
    }
    const double gen_s = seconds_since(t_gen);
    if (!print_ids) std::fputs(streamer.finish().c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);

    if (context_full) std::fprintf(stderr, "run: stopped: the context of %ld tokens is full (raise -c)\n", n_ctx);
    std::fprintf(stderr, "run: load %.0f ms | prompt %zu tokens, %.1f tok/s | generation %d tokens, %.1f tok/s | %ld threads\n",
                 load_s * 1e3, n_prompt, n_prompt / std::max(prompt_s, 1e-9), generated,
                 generated / std::max(gen_s, 1e-9), n_threads);
    return 0;
}
