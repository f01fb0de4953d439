#include "server/server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <random>
#include <regex>
#include <thread>
#include <vector>

#include "base/limits.h"
#include "base/printable.h"
#include "chat/chat_template.h"
#include "model/generate.h"
#include "server/connection.h"
#include "server/request.h"

namespace hearth {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The chat page, compiled in (the Makefile wraps server/chat_page.html in a raw string).
const char kChatPage[] =
#include "build/server/chat_page.inc"
    ;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- Jobs: one generation, shared by the HTTP thread that waits for it and the scheduler.

// A token's log-probability and its most likely alternatives', for `logprobs`: a reply's, or
// with a completion's echo the prompt's (whose first token has none: has_logprob false).
struct TokenReport {
    std::string bytes;  // Tokenizer::token_bytes: may end inside a UTF-8 character
    float logprob = 0;
    bool has_logprob = true;
    std::vector<std::pair<std::string, float>> top;
    long text_offset = 0;  // completions: the characters of the prompt's and reply's text before this token
};

// The characters (code points) of UTF-8 text: the bytes that do not continue one.
long utf8_chars(const std::string& text) {
    long n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80;
    return n;
}

// What the scheduler sends at once: reply text, and the reports of the tokens that made it
// (with logprobs; a piece may hold reports and no text, when a token's text is held back).
struct Piece {
    std::string text;
    std::vector<TokenReport> tokens;
};

struct Job {
    CompletionRequest req;
    std::vector<int> prompt;  // the ids to evaluate (the templated dialog, or the prompt with BOS)
    std::string echo_text;    // with req.echo: the prompt's text, which the reply's begins with
    bool prefill = false;     // chat: the last message is the assistant's, the start of the reply
    int max_tokens = 0;       // capped by the slot's context
    std::string id;
    long created = 0;
    Clock::time_point queued;

    std::atomic<bool> cancelled{false};  // the client went away: free the slot at the next step

    // The channel, under m: text pieces not yet taken, and the end.
    std::mutex m;
    std::condition_variable cv;
    std::deque<Piece> pieces;
    bool finished = false;
    std::string finish_reason;  // "stop" or "length"
    ApiError error;             // a failure after the job was accepted
    int prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    double first_token_seconds = 0;
};

void push_piece(Job& job, Piece piece) {
    if (piece.text.empty() && piece.tokens.empty()) return;
    {
        std::lock_guard<std::mutex> lk(job.m);
        job.pieces.push_back(std::move(piece));
    }
    // A reply that is not streamed is sent whole at the end (finish_job wakes its thread):
    // waking that thread for every token would take a core from the step's threads for nothing.
    if (job.req.stream) job.cv.notify_all();
}

void finish_job(Job& job, const std::string& reason, const ApiError& error = {}) {
    {
        std::lock_guard<std::mutex> lk(job.m);
        job.finished = true;
        job.finish_reason = reason;
        job.error = error;
    }
    job.cv.notify_all();
}

ApiError server_error(int status, const std::string& message, const std::string& type) {
    ApiError e;
    e.status = status;
    e.message = message;
    e.type = type;
    return e;
}

// ---- The scheduler: owns the model's slots, steps them in turn.

class Scheduler {
public:
    Scheduler(const LoadedModel& lm, int n_slots, int n_ctx_slot, KvCacheTypes types, int draft)
        : lm_(lm),
          n_ctx_slot_(n_ctx_slot),
          types_(types),
          draft_(draft),
          chat_end_ids_(chat_end_of_turn_ids(lm.template_name, lm.tok, lm.model.config.eos_id)),
          completion_end_ids_(end_of_generation_ids(lm.tok, lm.model.config.eos_id)),
          slots_(n_slots) {}

    std::string init() {
        for (size_t i = 0; i < slots_.size(); i++) {
            slots_[i].id = int(i);
            // One set of activations serves every step (step_all's batches): slot 0's; the
            // others hold their caches only.
            std::string err = make_run_state(lm_.model.config, n_ctx_slot_, &slots_[i].state, types_, i == 0 ? kMaxBatch : 0);
            if (!err.empty()) return err;
            slots_[i].logits.resize(lm_.model.config.vocab_size);
        }
        return "";
    }

    // Queues a job; a 503 error when the queue is full or the server is stopping.
    ApiError submit(const std::shared_ptr<Job>& job) {
        {
            std::lock_guard<std::mutex> lk(m_);
            if (stopping_) return server_error(503, "the server is shutting down", "unavailable_error");
            if (queue_.size() >= limits::kServerQueuedJobs)
                return server_error(
                    503,
                    "the server is busy: " + std::to_string(queue_.size()) + " requests are waiting for a slot; try again later",
                    "unavailable_error");
            queue_.push_back(job);
        }
        cv_.notify_all();
        return {};
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lk(m_);
            stopping_ = true;
        }
        cv_.notify_all();
    }

    // Slot states for GET /slots (llama-server has one too): which are busy, what each caches.
    json slots_json() {
        std::lock_guard<std::mutex> lk(status_m_);
        json a = json::array();
        for (const SlotStatus& s : status_)
            a.push_back({{"id", s.id}, {"is_processing", s.busy}, {"n_ctx", n_ctx_slot_}, {"n_cached", s.cached}});
        return a;
    }

    // The loop, on the calling thread, until stop().
    void run() {
        publish_status();
        for (;;) {
            {
                std::unique_lock<std::mutex> lk(m_);
                if (stopping_) break;
                admit_locked();
                if (!any_busy()) {
                    publish_status();
                    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
                    continue;
                }
            }
            step_all();
            publish_status();
        }
        // Stopping: whatever runs or waits ends now.
        for (Slot& s : slots_)
            if (s.job) end_job(s, "", server_error(503, "the server is shutting down", "unavailable_error"));
        std::lock_guard<std::mutex> lk(m_);
        for (auto& j : queue_) finish_job(*j, "", server_error(503, "the server is shutting down", "unavailable_error"));
        queue_.clear();
    }

private:
    struct Slot {
        int id = 0;
        RunState state;
        std::vector<int> cache;  // the ids whose keys and values the cache holds, positions 0, 1, ...
        std::vector<float> logits;
        uint64_t last_used = 0;
        std::shared_ptr<Job> job;
        size_t prompt_pos = 0;  // the next prompt id to evaluate
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<Generator> gen;
        GenerationCallbacks cb;            // gen's, for the whole job
        uint64_t order = 0;                // when the job started: prompts are read first come, first served
        int most_shared = 0;               // the most other slots a step of this job was evaluated with
        std::string held;                  // text held back: it may be the start of a stop string
        std::vector<TokenReport> reports;  // with logprobs: the tokens not yet sent with a piece
        // A completion's logprobs: where each token's text starts (TokenReport::text_offset),
        // counted through a decoder of its own that has seen the prompt and the reply so far.
        std::unique_ptr<TextStreamer> offsets;
        long text_chars = 0;
        // With echo and logprobs, the prompt's tokens (each logprob from the logits before it,
        // filled in as the prompt is read), and the logits of a prompt chunk's every position.
        std::vector<TokenReport> prompt_reports;
        std::vector<float> chunk_logits;
        bool stop_hit = false;
        std::string emitted;  // the reply's text so far, as sent
        Clock::time_point started;
    };
    struct SlotStatus {
        int id;
        bool busy;
        size_t cached;
    };

    bool any_busy() const {
        for (const Slot& s : slots_)
            if (s.job) return true;
        return false;
    }

    static size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
        size_t n = 0;
        while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
        return n;
    }

    // Queued jobs to free slots, first come first served. A job goes to the free slot that
    // caches the longest prefix of its prompt when that prefix is at least half the prompt (a
    // follow-up turn of the conversation that slot holds); otherwise to the least recently used
    // free slot, so that a prompt sharing only BOS or a short system prompt does not evict
    // another conversation that a free slot could have kept.
    void admit_locked() {
        while (!queue_.empty()) {
            std::shared_ptr<Job> job = queue_.front();
            if (job->cancelled) {
                queue_.pop_front();
                finish_job(*job, "", server_error(499, "the client went away", "cancelled"));
                continue;
            }
            Slot *best = nullptr, *lru = nullptr;
            size_t best_len = 0;
            for (Slot& s : slots_) {
                if (s.job) continue;
                const size_t len = common_prefix(s.cache, job->prompt);
                if (!best || len > best_len || (len == best_len && s.last_used < best->last_used)) {
                    best = &s;
                    best_len = len;
                }
                if (!lru || s.last_used < lru->last_used) lru = &s;
            }
            if (!best) return;
            if (2 * best_len < job->prompt.size()) best = lru;
            queue_.pop_front();
            start(*best, job, common_prefix(best->cache, job->prompt));
        }
    }

    static bool wants_prompt_logprobs(const Job& job) { return job.req.echo && job.req.logprobs >= 0; }

    void start(Slot& s, const std::shared_ptr<Job>& job, size_t prefix) {
        // At least the prompt's last id is evaluated: its logits pick the first token. The
        // prompt's own logprobs need the logits of all its positions: the whole prompt then.
        const size_t keep = wants_prompt_logprobs(*job) ? 0 : std::min(prefix, job->prompt.size() - 1);
        s.cache.resize(keep);
        s.prompt_pos = keep;
        s.job = job;
        s.held.clear();
        s.emitted.clear();
        s.stop_hit = false;
        s.started = Clock::now();
        s.sampler = std::make_unique<Sampler>(job->req.sampler);
        const std::vector<int>& end_ids = job->req.ignore_eos ? std::vector<int>{}
                                          : job->req.chat     ? chat_end_ids_
                                                              : completion_end_ids_;
        s.gen = std::make_unique<Generator>(lm_.model, lm_.tok, *s.sampler, end_ids);
        s.gen->set_draft(draft_);
        // A reply's text writes bytes that are no UTF-8 as llama-server's does (its JSON writer's
        // replacement): a character cut short is one U+FFFD, as in the token's own logprobs entry.
        s.gen->set_invalid_utf8(InvalidUtf8::per_subpart);
        s.cb.on_token = [this, &s](int, const std::string& text) { on_text(s, text); };
        s.reports.clear();
        s.prompt_reports.clear();
        s.offsets.reset();
        s.text_chars = 0;
        if (!job->req.chat && job->req.logprobs >= 0) {
            // Offsets count from the prompt's start: its tokens' first (echoed or not).
            s.offsets = std::make_unique<TextStreamer>(lm_.tok, InvalidUtf8::per_subpart);
            for (size_t i = 0; i < job->prompt.size(); i++) {
                const int id = job->prompt[i];
                if (job->req.echo) {
                    TokenReport r;
                    r.bytes = lm_.tok.token_bytes(id);
                    r.has_logprob = false;  // until the logits before it are known; the first never
                    r.text_offset = s.text_chars;
                    s.prompt_reports.push_back(std::move(r));
                }
                s.text_chars += utf8_chars(s.offsets->push(id));
            }
        }
        s.cb.on_logits = nullptr;
        if (job->req.logprobs >= 0) s.cb.on_logits = [this, &s](int id, const float* logits) { report(s, id, logits); };
        s.cb.interrupted = [&s] { return s.stop_hit || s.job->cancelled.load(); };
        s.order = ++use_counter_;
        s.most_shared = 0;
        // A completion continues its prompt's text as `run -p` prints it: the first token's
        // text joins the prompt's (SentencePiece drops the space of a text's first piece).
        // A chat reply starts afresh, as ChatSession's do; one begun in the request (a prefill)
        // goes on from its text, where a SentencePiece piece keeps its leading space.
        if (!job->req.chat || job->prefill) s.gen->text_before(job->prompt);
        std::lock_guard<std::mutex> lk(job->m);
        job->prompt_tokens = int(job->prompt.size());
        job->cached_tokens = int(keep);
    }

    // New reply text: sent at once, except for a tail that could begin a stop string.
    void on_text(Slot& s, const std::string& text) {
        if (s.stop_hit) return;
        s.held += text;
        const std::vector<std::string>& stops = s.job->req.stop;
        size_t at = std::string::npos;
        for (const std::string& st : stops) at = std::min(at, s.held.find(st));
        if (at != std::string::npos) {
            s.held.resize(at);
            s.stop_hit = true;
            emit(s, s.held);
            s.held.clear();
            return;
        }
        size_t hold = 0;  // the longest tail of held that is a proper prefix of a stop string
        for (const std::string& st : stops)
            for (size_t n = std::min(st.size() - 1, s.held.size()); n > hold; n--)
                if (s.held.compare(s.held.size() - n, n, st, 0, n) == 0) {
                    hold = n;
                    break;
                }
        emit(s, s.held.substr(0, s.held.size() - hold));
        s.held.erase(0, s.held.size() - hold);
    }

    void emit(Slot& s, const std::string& text) {
        if (text.empty()) return;
        if (s.emitted.empty()) s.job->first_token_seconds = seconds_since(s.job->queued);
        s.emitted += text;
        push_piece(*s.job, {text, std::move(s.reports)});
        s.reports.clear();
    }

    // Token id's log-probability under `logits`, and the job's number of alternatives, into r.
    void fill_report(const Slot& s, int id, const float* logits, TokenReport* r) const {
        std::vector<TokenLogprob> top;
        // OpenAI's floor for tokens the model all but rules out (JSON has no -inf).
        constexpr float kFloor = -9999.0f;
        r->logprob = std::max(kFloor, log_probabilities(logits, lm_.model.config.vocab_size, id, s.job->req.logprobs, &top));
        r->has_logprob = true;
        r->top.clear();
        for (const TokenLogprob& t : top) r->top.emplace_back(lm_.tok.token_bytes(t.id), std::max(kFloor, t.logprob));
    }

    // A kept token's report.
    void report(Slot& s, int id, const float* logits) {
        TokenReport r;
        r.bytes = lm_.tok.token_bytes(id);
        fill_report(s, id, logits, &r);
        if (s.offsets) {
            r.text_offset = s.text_chars;
            s.text_chars += utf8_chars(s.offsets->push(id));
        }
        s.reports.push_back(std::move(r));
    }

    // The prompt is read: with echo, its text (and its tokens' reports) go out before the reply;
    // with max_tokens 0 (echo only) that is all.
    void prompt_read(Slot& s) {
        if (s.job->req.echo) {
            push_piece(*s.job, {s.job->echo_text, std::move(s.prompt_reports)});
            s.prompt_reports.clear();
            std::vector<float>().swap(s.chunk_logits);
        }
        if (s.job->max_tokens == 0) end_job(s, "length");
    }

    bool reading_prompt(const Slot& s) const { return s.prompt_pos < s.job->prompt.size(); }

    // One step of every busy slot, in one forward_batch call (continuous batching): the next
    // token of each generating slot, with its draft, and then chunks of the prompts still
    // being read, first come first served, as far as the batch has room (max_batch tokens).
    // The weights are read once for all of them, so four conversations cost little more than
    // one; a new request joins at the next step, its prompt read beside the others' replies
    // (forward_batch evaluates the replies' tokens, which come first, apart from a prompt's,
    // so that a reply's tokens do not depend on who else is served).
    void step_all() {
        for (Slot& s : slots_)
            if (s.job && s.job->cancelled) end_job(s, "", server_error(499, "the client went away", "cancelled"));
        int room = slots_[0].state.max_batch;
        std::vector<SequenceChunk> chunks;
        std::vector<Slot*> owners;
        // Generating slots from a starting point that turns, so that when there are more of
        // them than the batch has room for, each has its turn. Each leaves one token of room
        // for every one after it.
        std::vector<Slot*> generating, reading;
        for (size_t i = 0; i < slots_.size(); i++) {
            Slot& s = slots_[(first_ + i) % slots_.size()];
            if (s.job) (reading_prompt(s) ? reading : generating).push_back(&s);
        }
        first_ = (first_ + 1) % slots_.size();
        // Drafted tokens are checked for free only while the pass is memory-bound, up to
        // kDraftStepTokens tokens in all (the few-token kernels' range, kernels/table.cpp). With
        // more slots generating the step is compute-bound, and rejected drafts cost real time: at
        // 8 streams they took 15-20% of the aggregate (docs/benchmarks.md, "Continuous
        // batching"). So the slots draft only within what the step has left below that.
        constexpr int kDraftStepTokens = 8;
        int draft_budget = std::max(0, kDraftStepTokens - int(generating.size()));
        for (size_t i = 0; i < generating.size() && room > 0; i++) {
            Slot& s = *generating[i];
            const int after = int(std::min<size_t>(generating.size() - i - 1, size_t(room - 1)));
            SequenceChunk c;
            GenerationEnd end;
            if (!s.gen->begin_step(s.state, s.cache, s.logits, s.job->max_tokens, s.cb, &end, &c,
                                   std::min(room - after, 1 + draft_budget))) {
                end_generation(s, end);
                continue;
            }
            chunks.push_back(c);
            owners.push_back(&s);
            room -= c.n;
            draft_budget -= c.n - 1;
        }
        std::sort(reading.begin(), reading.end(), [](const Slot* a, const Slot* b) { return a->order < b->order; });
        for (Slot* s : reading) {
            if (room == 0) break;
            const std::vector<int>& prompt = s->job->prompt;
            const int n = std::min(room, int(prompt.size() - s->prompt_pos));
            // Only the prompt's last chunk needs logits: they pick the first token. With echo
            // and logprobs every position's do: each gives the next prompt token's logprob.
            const bool last = s->prompt_pos + n == prompt.size();
            if (wants_prompt_logprobs(*s->job)) {
                s->chunk_logits.resize(size_t(n) * size_t(lm_.model.config.vocab_size));
                chunks.push_back({&s->state, &prompt[s->prompt_pos], n, int(s->prompt_pos), s->chunk_logits.data(), true});
            } else {
                chunks.push_back(
                    {&s->state, &prompt[s->prompt_pos], n, int(s->prompt_pos), last ? s->logits.data() : nullptr, false});
            }
            owners.push_back(s);
            room -= n;
        }
        if (chunks.empty()) return;
        const std::string err = forward_batch(lm_.model, slots_[0].state, chunks.data(), int(chunks.size()));
        for (size_t i = 0; i < chunks.size(); i++) {
            Slot& s = *owners[i];
            s.most_shared = std::max(s.most_shared, int(chunks.size()) - 1);
            if (!err.empty()) {  // nothing was evaluated (forward_batch checks first); the caches are as they were
                if (!reading_prompt(s)) s.gen->fail_step(err);
                end_job(s, "", server_error(500, err, "server_error"));
            } else if (reading_prompt(s)) {
                const SequenceChunk& c = chunks[i];
                if (c.all_logits) {
                    const size_t vocab = size_t(lm_.model.config.vocab_size);
                    for (int j = 0; j < c.n; j++) {
                        const size_t next = size_t(c.pos + j + 1);  // the prompt token these logits predict
                        if (next < s.prompt_reports.size())
                            fill_report(s, s.job->prompt[next], c.logits + j * vocab, &s.prompt_reports[next]);
                    }
                    if (size_t(c.pos + c.n) == s.job->prompt.size())
                        std::copy(c.logits + (c.n - 1) * vocab, c.logits + c.n * vocab, s.logits.begin());
                }
                s.cache.insert(s.cache.end(), c.tokens, c.tokens + c.n);
                s.prompt_pos += c.n;
                if (!reading_prompt(s)) prompt_read(s);
            } else {
                GenerationEnd end;
                if (!s.gen->end_step(s.cache, s.logits, s.cb, &end))
                    end_generation(s, end);
                else if (s.stop_hit)
                    end_job(s, "stop");
            }
        }
    }

    // The job of a slot whose generation ended, as its Generator says.
    void end_generation(Slot& s, GenerationEnd end) {
        switch (end) {
            case GenerationEnd::end_id: return end_job(s, "stop");
            case GenerationEnd::length_limit:
            case GenerationEnd::context_full: return end_job(s, s.stop_hit ? "stop" : "length");
            case GenerationEnd::interrupted:
                if (s.stop_hit) return end_job(s, "stop");
                return end_job(s, "", server_error(499, "the client went away", "cancelled"));
            case GenerationEnd::error: s.cache.clear(); return end_job(s, "", server_error(500, s.gen->error(), "server_error"));
        }
    }

    void end_job(Slot& s, std::string reason, const ApiError& error = {}) {
        Job& job = *s.job;
        if (!error) {
            // What the decoder and the stop-string check still hold.
            if (!s.stop_hit) on_text(s, s.gen->finish());
            if (!s.stop_hit) emit(s, s.held);
            push_piece(job, {"", std::move(s.reports)});  // tokens whose text was held back, or ended nothing
            s.reports.clear();
            if (s.stop_hit) reason = "stop";
        }
        {
            std::lock_guard<std::mutex> lk(job.m);
            job.completion_tokens = s.gen ? int(s.gen->tokens().size()) : 0;
        }
        const double secs = seconds_since(s.started);
        const std::string drafts = draft_ && s.gen ? ", " + draft_summary(s.gen->draft_stats()) : "";
        const std::string shared = s.most_shared ? ", batched with up to " + std::to_string(s.most_shared) + " other slots" : "";
        std::fprintf(stderr, "run: slot %d: %s, prompt %d tokens (%d cached), %d generated%s%s, %.2f s, ended: %s\n", s.id,
                     job.req.chat ? "chat" : "completion", job.prompt_tokens, job.cached_tokens, job.completion_tokens,
                     drafts.c_str(), shared.c_str(), secs, error ? message_line(error.message).c_str() : reason.c_str());
        // The slot is free before the client hears the end, so that what it asks next sees it free.
        const std::shared_ptr<Job> keep = s.job;
        s.job.reset();
        s.gen.reset();
        s.sampler.reset();
        s.last_used = ++use_counter_;
        publish_status();
        finish_job(*keep, error ? "" : reason, error);
    }

    void publish_status() {
        std::lock_guard<std::mutex> lk(status_m_);
        status_.clear();
        for (const Slot& s : slots_) status_.push_back({s.id, bool(s.job), s.cache.size()});
    }

    const LoadedModel& lm_;
    const int n_ctx_slot_;
    const KvCacheTypes types_;
    const int draft_;  // --draft
    // The ids that end a reply, found once (each a scan of the vocabulary): a chat's turn, and
    // any generation (end_of_generation_ids).
    const std::vector<int> chat_end_ids_, completion_end_ids_;
    std::vector<Slot> slots_;
    uint64_t use_counter_ = 0;
    size_t first_ = 0;  // the generating slot step_all takes first

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stopping_ = false;

    std::mutex status_m_;
    std::vector<SlotStatus> status_;
};

// cpp-httplib's task queue with a bound: when every thread is busy and `backlog` connections
// wait, accepting waits too (the kernel's listen backlog holds the rest), so that a flood of
// connections costs no unbounded memory.
class BoundedPool : public httplib::TaskQueue {
public:
    BoundedPool(size_t threads, size_t backlog) : backlog_(backlog) {
        for (size_t i = 0; i < threads; i++) threads_.emplace_back([this] { work(); });
    }
    void enqueue(std::function<void()> fn) override {
        std::unique_lock<std::mutex> lk(m_);
        room_.wait(lk, [&] { return jobs_.size() < backlog_ || shutdown_; });
        jobs_.push_back(std::move(fn));
        lk.unlock();
        cv_.notify_one();
    }
    void shutdown() override {
        {
            std::lock_guard<std::mutex> lk(m_);
            shutdown_ = true;
        }
        cv_.notify_all();
        room_.notify_all();
        for (std::thread& t : threads_) t.join();
    }

private:
    void work() {
        for (;;) {
            std::function<void()> fn;
            {
                std::unique_lock<std::mutex> lk(m_);
                cv_.wait(lk, [&] { return !jobs_.empty() || shutdown_; });
                if (jobs_.empty()) return;
                fn = std::move(jobs_.front());
                jobs_.pop_front();
            }
            room_.notify_one();
            fn();
        }
    }
    size_t backlog_;
    std::vector<std::thread> threads_;
    std::mutex m_;
    std::condition_variable cv_, room_;
    std::deque<std::function<void()>> jobs_;
    bool shutdown_ = false;
};

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    // A full queue, a model loading: a client may come back in a second (RFC 9110 10.2.3; the
    // openai clients' retries wait as long as it says rather than by their own backoff).
    if (e.status == 503) res.set_header("Retry-After", "1");
    res.set_content(error_body(e), "application/json; charset=utf-8");
}

// Compares without stopping at the first difference, so the time does not tell how much of
// a guessed key was right.
bool same_key(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() != b.size();
    for (size_t i = 0; i < a.size(); i++) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
    return diff == 0;
}

std::string random_id() {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard<std::mutex> lk(m);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)rng());
    return buf;
}

uint64_t random_seed() {
    static std::mutex m;
    static std::mt19937_64 rng(std::random_device{}());
    std::lock_guard<std::mutex> lk(m);
    return rng();
}

json usage_json(const Job& j) {
    return {{"prompt_tokens", j.prompt_tokens},
            {"completion_tokens", j.completion_tokens},
            {"total_tokens", j.prompt_tokens + j.completion_tokens}};
}

// A choice's "logprobs" for these tokens, in the shape of the job's API (null without logprobs):
// chat {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]}; completions {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}]}.
json logprobs_json(const Job& j, const std::vector<TokenReport>& tokens) {
    if (j.req.logprobs < 0) return nullptr;
    auto bytes_json = [](const std::string& b) {
        json a = json::array();
        for (unsigned char c : b) a.push_back(int(c));
        return a;
    };
    if (j.req.chat) {
        json content = json::array();
        for (const TokenReport& t : tokens) {
            json top = json::array();
            for (const auto& a : t.top)
                top.push_back({{"token", a.first}, {"logprob", a.second}, {"bytes", bytes_json(a.first)}});
            content.push_back(
                {{"token", t.bytes}, {"logprob", t.logprob}, {"bytes", bytes_json(t.bytes)}, {"top_logprobs", top}});
        }
        return {{"content", content}, {"refusal", nullptr}};
    }
    json texts = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenReport& t : tokens) {
        texts.push_back(t.bytes);
        offsets.push_back(t.text_offset);
        if (!t.has_logprob) {  // an echoed prompt's first token: nothing comes before it
            lps.push_back(nullptr);
            tops.push_back(nullptr);
            continue;
        }
        lps.push_back(t.logprob);
        json top = json::object();
        for (const auto& a : t.top)
            if (!top.contains(a.first)) top[a.first] = a.second;  // ids of the same text: the likelier
        tops.push_back(top);
    }
    return {{"tokens", texts}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// One chunk of a stream: content (or finish) for chat, text for completions.
json chunk_json(const Job& j, const std::string& model, const json* delta, const Piece& piece, const std::string& finish) {
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish.empty() ? json(nullptr) : json(finish)}};
    if (!piece.tokens.empty()) choice["logprobs"] = logprobs_json(j, piece.tokens);
    if (j.req.chat)
        choice["delta"] = delta ? *delta : json{{"content", piece.text}};
    else
        choice["text"] = piece.text;
    json c = {{"id", j.id},
              {"object", j.req.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", j.created},
              {"model", model},
              {"system_fingerprint", "hearth"},
              {"choices", json::array({choice})}};
    if (j.req.include_usage) c["usage"] = nullptr;
    return c;
}

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

// A token's text as llama-server shows it in /detokenize and /tokenize's pieces (llama.cpp's
// token_to_piece with special tokens rendered): a control token's own text (<s>, <|eot_id|>),
// SentencePiece's unknown piece as it is spelled (<unk>), else the token's bytes, a
// SentencePiece piece's leading space included.
std::string shown_piece(const Tokenizer& tok, int id) {
    if (tok.is_control(id) || tok.is_unknown(id)) return tok.piece(id);
    return tok.token_bytes(id);
}

// Whether every address `host` (--host) stands for is a loopback one: a server that listens
// there is reached from this machine only, by its loopback names.
bool listens_on_loopback(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
    bool loopback = found != nullptr;
    for (const addrinfo* a = found; a; a = a->ai_next) {
        if (a->ai_family == AF_INET)
            loopback &= (ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        else if (a->ai_family == AF_INET6)
            loopback &= IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
        else
            loopback = false;
    }
    freeaddrinfo(found);
    return loopback;
}

std::atomic<bool> g_stop_requested{false};

}  // namespace

int serve(const ServerOptions& o, const ModelLoader& load) {
    // SIGINT and SIGTERM go to one thread that waits for them; every other thread (the HTTP
    // pool, OpenMP's) is created with them blocked.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone: the write fails, the process lives

    LoadedModel lm;
    std::atomic<bool> loaded{false};
    std::unique_ptr<Scheduler> sched;
    std::mutex sched_m;
    int n_ctx_slot = 0;
    const long started = long(std::time(nullptr));

    GuardedServer svr;  // cpp-httplib's, reading each request within bounds (server/connection.h)
    svr.set_cors_origins(o.cors_origins);
    const size_t n_threads = size_t(o.n_parallel) + limits::kServerQueuedJobs + 4;
    svr.new_task_queue = [n_threads] { return new BoundedPool(n_threads, 64); };
    svr.set_payload_max_length(limits::kServerBodyBytes);
    svr.set_read_timeout(o.timeout_seconds, 0);
    svr.set_write_timeout(o.timeout_seconds, 0);
    svr.set_keep_alive_max_count(limits::kServerKeepAliveRequests);
    svr.set_keep_alive_timeout(5);
    svr.set_tcp_nodelay(true);
    // SO_REUSEADDR (a restart binds while the last run's connections close) but not cpp-httplib's
    // SO_REUSEPORT, with which a second server on the same port started and took half the requests.
    svr.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
    });

    // Every endpoint is registered through these, which also note its method by its pattern
    // (cpp-httplib matches a request's path against each route's pattern as a regex): OPTIONS and
    // a 405 then name the methods that path takes, and a known path asked with another method is
    // told 405, not "no such endpoint". The routes are all registered before the server listens.
    std::vector<std::pair<std::regex, std::string>> routes;
    auto get = [&](const char* path, httplib::Server::Handler h) {
        routes.emplace_back(std::regex(path), "GET");
        svr.Get(path, std::move(h));
    };
    auto post = [&](const char* path, httplib::Server::Handler h) {
        routes.emplace_back(std::regex(path), "POST");
        svr.Post(path, std::move(h));
    };
    // The methods a path takes, as its Allow header lists them (RFC 9110 10.2.1): a GET route
    // answers HEAD too (cpp-httplib routes HEAD to it), and every path OPTIONS; "" for no route.
    auto allowed_methods = [&routes](const std::string& path) {
        bool takes_get = false, takes_post = false;
        for (const auto& [pattern, method] : routes)
            if (std::regex_match(path, pattern)) (method == "GET" ? takes_get : takes_post) = true;
        if (!takes_get && !takes_post) return std::string();
        return std::string(takes_get ? "GET, HEAD, " : "") + (takes_post ? "POST, " : "") + "OPTIONS";
    };
    const std::string& key = o.api_key;
    // A page on another origin (CORS, by the Fetch standard): one that --cors-origins lets in
    // gets Access-Control-Allow-Origin on every answer (errors too, so that it can read them),
    // and its preflight (OPTIONS, which carries no key) is answered before the key is asked for,
    // naming the method and each header it asked for (Authorization must be named: a * does not
    // cover it). Any other origin gets no such header, and its browser shows the page nothing.
    // By default only pages on this machine's loopback names are let in: with llama-server's
    // default (*), any web page the user visits could use the server.
    //
    // DNS rebinding: a page on evil.example whose name the attacker then points at 127.0.0.1
    // calls the server as its own origin (no CORS involved) and reads the replies. The page's
    // requests carry its name in Host, so a server that listens on a loopback address, reached
    // by loopback names only, refuses any other Host (--allowed-hosts names more), before any
    // work, as Ollama (allowedHostsMiddleware) and Vite (server.allowedHosts) do. On another
    // address (0.0.0.0) the names clients use are this machine's many names and addresses,
    // which the server does not know: the Host is checked there only with --allowed-hosts.
    // A request without Host (HTTP/1.0) comes from no browser, which always sends one: let in.
    const bool check_host = listens_on_loopback(o.host) || !o.allowed_hosts.empty();
    svr.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
        const std::string origin = req.get_header_value("Origin");
        const bool cors = origin_allowed(origin, o.cors_origins);
        if (!origin.empty()) {
            res.set_header("Vary", "Origin");  // the answer depends on it: a cache must not give it to another origin
            if (cors) res.set_header("Access-Control-Allow-Origin", origin);
        }
        // RFC 9112 3.2: an HTTP/1.1 request without Host, or with more than one, is a 400.
        const size_t hosts = req.get_header_value_count("Host");
        if (hosts > 1 || (hosts == 0 && req.version != "HTTP/1.0")) {
            send_error(res, bad_request(hosts > 1 ? "the request has more than one Host header"
                                                  : "the request has no Host header (HTTP/1.1 requires one)"));
            return httplib::Server::HandlerResponse::Handled;
        }
        const std::string host = req.get_header_value("Host");
        if (check_host && hosts == 1 && !host_allowed(host, o.allowed_hosts)) {
            send_error(res, server_error(403,
                                         "the Host '" + printable(host, 200) +
                                             "' is not a name of this server: only this machine's loopback names "
                                             "(localhost, 127.0.0.1, [::1]) reach it, unless it is started with "
                                             "--allowed-hosts naming the host (a page on a name pointed at this machine "
                                             "could otherwise use it: DNS rebinding)",
                                         "permission_error"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (req.method == "OPTIONS") {
            // The methods the path takes (RFC 9110 9.3.7), "OPTIONS *" the server's; no such path, 404.
            const std::string allow = req.path == "*" ? "GET, HEAD, POST, OPTIONS" : allowed_methods(req.path);
            if (allow.empty()) {
                send_error(res, server_error(404, "no such endpoint: OPTIONS " + printable(req.path, 200), "not_found_error"));
                return httplib::Server::HandlerResponse::Handled;
            }
            res.status = 204;
            res.set_header("Allow", allow);
            if (cors && req.has_header("Access-Control-Request-Method")) {
                res.set_header("Access-Control-Allow-Methods", allow);
                const std::string asked = req.get_header_value("Access-Control-Request-Headers");
                if (!asked.empty()) res.set_header("Access-Control-Allow-Headers", asked);
                res.set_header("Access-Control-Max-Age", "600");
            }
            return httplib::Server::HandlerResponse::Handled;
        }
        // A page on an origin not let in can still send a POST without a preflight when its body
        // is of a type a form can send (Fetch's CORS-safelisted Content-Types): it cannot read the
        // reply, but the server would generate it. Refused before any work; the server's own
        // page, and clients that are no browser (curl -d sends a form's type), send no such Origin.
        if (!origin.empty() && !cors && req.method == "POST") {
            std::string type = ascii_lower(req.get_header_value("Content-Type"));
            type = type.substr(0, type.find(';'));
            type.erase(type.find_last_not_of(" \t") + 1);
            if (type == "text/plain" || type == "application/x-www-form-urlencoded" || type == "multipart/form-data") {
                send_error(res, server_error(403,
                                             "a page on " + printable(origin, 200) +
                                                 " may not use this server (start it with --cors-origins naming that origin "
                                                 "to let it in), and a request's body is JSON: 'Content-Type: "
                                                 "application/json'",
                                             "permission_error"));
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        const bool open = req.path == "/" || req.path == "/index.html" || req.path == "/health";
        if (!key.empty() && !open) {
            const std::string bearer = bearer_token(req.get_header_value("Authorization"));
            const std::string given = !bearer.empty() ? bearer : req.get_header_value("X-Api-Key");
            if (!same_key(given, key)) {
                ApiError e = server_error(
                    401, given.empty() ? "no API key: send it as 'Authorization: Bearer KEY'" : "the API key is wrong",
                    "invalid_request_error");
                e.code = "invalid_api_key";
                send_error(res, e);
                // A 401 names the scheme it takes (RFC 9110 15.5.2; RFC 6750 3 for Bearer's error).
                res.set_header("WWW-Authenticate", given.empty() ? "Bearer" : "Bearer error=\"invalid_token\"");
                return httplib::Server::HandlerResponse::Handled;
            }
        }
        if (!loaded && !open) {
            send_error(res, server_error(503, "the model is loading", "unavailable_error"));
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Statuses cpp-httplib sets itself (404, 413, 400 for a malformed request line...) get a body
    // in OpenAI's shape.
    svr.set_error_handler([&allowed_methods](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        const std::string allow = res.status == 404 ? allowed_methods(req.path) : "";
        if (!allow.empty()) {
            res.status = 405;
            res.set_header("Allow", allow);  // RFC 9110 15.5.6
        }
        std::string msg =
            res.status == 405   ? printable(req.method, 20) + " " + req.path + ": this endpoint takes " + allow
            : res.status == 404 ? "no such endpoint: " + printable(req.method, 20) + " " + printable(req.path, 200)
            : res.status == 413 && req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0
                // cpp-httplib's own limit for such bodies (curl -d sends that type)
                ? "a body sent as application/x-www-form-urlencoded may hold 8 KiB: send JSON with "
                  "'Content-Type: application/json'"
                : res.status == 413 ? "the request body is larger than " + std::to_string(limits::kServerBodyBytes >> 20) + " MiB"
                                    : "the request could not be read (HTTP " + std::to_string(res.status) + ")";
        ApiError e = server_error(res.status, msg, res.status == 404 ? "not_found_error" : "invalid_request_error");
        res.set_content(error_body(e), "application/json; charset=utf-8");
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {}
        send_error(res, server_error(500, "internal error: " + printable(what, 200), "server_error"));
    });

    get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(kChatPage, sizeof kChatPage - 1, "text/html; charset=utf-8");
    });
    get("/index.html", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(kChatPage, sizeof kChatPage - 1, "text/html; charset=utf-8");
    });
    get("/health", [&](const httplib::Request&, httplib::Response& res) {
        if (!loaded) return send_error(res, server_error(503, "the model is loading", "unavailable_error"));
        send_json(res, 200, {{"status", "ok"}});
    });
    // The one model, as OpenAI's model object (with llama-server's "meta" of hearth's own).
    auto model_json = [&] {
        return json{{"id", o.model_name},
                    {"object", "model"},
                    {"created", started},
                    {"owned_by", "hearth"},
                    {"meta", {{"n_ctx_slot", n_ctx_slot}, {"n_parallel", o.n_parallel}, {"chat_template", lm.template_name}}}};
    };
    auto list_models = [&](const httplib::Request&, httplib::Response& res) {
        send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
    };
    get("/v1/models", list_models);
    get("/models", list_models);
    // GET /v1/models/{model} (the openai clients' models.retrieve): the model, or OpenAI's 404.
    // The id may hold slashes (an --alias such as org/name); cpp-httplib gives the path decoded.
    auto retrieve_model = [&](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        if (id == o.model_name) return send_json(res, 200, model_json());
        ApiError e = server_error(
            404, "the model '" + printable(id, 200) + "' does not exist: this server has '" + printable(o.model_name, 200) + "'",
            "invalid_request_error");
        e.param = "model";
        e.code = "model_not_found";
        send_error(res, e);
    };
    get(R"(/v1/models/(.+))", retrieve_model);
    get(R"(/models/(.+))", retrieve_model);
    get("/slots", [&](const httplib::Request&, httplib::Response& res) {
        std::lock_guard<std::mutex> lk(sched_m);
        send_json(res, 200, sched ? sched->slots_json() : json::array());
    });
    post("/tokenize", [&](const httplib::Request& req, httplib::Response& res) {
        TokenizeRequest t;
        if (ApiError e = parse_tokenize_request(req.body, &t)) return send_error(res, e);
        std::vector<int> ids;
        for (const TokenizeRequest::Part& part : t.content) {
            if (part.id >= 0) {
                if (part.id >= lm.tok.vocab_size())
                    return send_error(
                        res, bad_request("token id " + std::to_string(part.id) + " in 'content' is outside the vocabulary 0.." +
                                             std::to_string(lm.tok.vocab_size() - 1),
                                         "content"));
                ids.push_back(part.id);
                continue;
            }
            // BOS only before the first part, when it is a text (llama-server's tokenize_mixed).
            const bool bos = t.add_special && &part == &t.content.front();
            const std::string err =
                t.parse_special ? lm.tok.encode_special(part.text, bos, &ids) : lm.tok.encode(part.text, bos, &ids);
            if (!err.empty()) return send_error(res, bad_request("the content cannot be tokenized: " + err, "content"));
        }
        if (!t.with_pieces) return send_json(res, 200, {{"tokens", ids}});
        // llama-server's pieces: a piece that is valid UTF-8 as a string, else its bytes.
        json tokens = json::array();
        for (int id : ids) {
            const std::string piece = shown_piece(lm.tok, id);
            json p = piece;
            if (!is_valid_utf8(piece)) {
                p = json::array();
                for (unsigned char c : piece) p.push_back(int(c));
            }
            tokens.push_back({{"id", id}, {"piece", p}});
        }
        send_json(res, 200, {{"tokens", tokens}});
    });
    post("/detokenize", [&](const httplib::Request& req, httplib::Response& res) {
        std::vector<int> ids;
        if (ApiError e = parse_detokenize_request(req.body, lm.tok.vocab_size(), &ids)) return send_error(res, e);
        // Each token's piece as it is, as llama-server joins them: control tokens' texts too, and
        // the first piece's leading space. Bytes that are no UTF-8 become U+FFFD in the JSON.
        std::string text;
        for (int id : ids) text += shown_piece(lm.tok, id);
        send_json(res, 200, {{"content", text}});
    });

    auto completion = [&](const httplib::Request& req, httplib::Response& res, bool chat) {
        auto job = std::make_shared<Job>();
        if (ApiError e = parse_completion_request(req.body, chat, o.sampler, &job->req)) return send_error(res, e);
        CompletionRequest& r = job->req;
        std::string err;
        size_t text_bytes = r.prompt.size();
        for (const ChatMessage& m : r.messages) text_bytes += m.content.size();
        if (std::string why = check_text_for_context(text_bytes, n_ctx_slot); !why.empty())
            return send_error(
                res, bad_request("the " + std::string(chat ? "messages are " : "prompt is ") + why + " (a slot's: -c / -np)",
                                 chat ? "messages" : "prompt", "context_length_exceeded"));
        if (chat) {
            // As the model's Jinja template renders a dialog without a system message (Qwen2.5's).
            if (!lm.default_system.empty() && (r.messages.empty() || r.messages[0].role != "system"))
                r.messages.insert(r.messages.begin(), ChatMessage{"system", lm.default_system, {}});
            err = format_chat(lm.template_name, lm.tok, r.messages, true, &job->prompt, r.continue_last);
            if (!err.empty()) return send_error(res, bad_request("the messages: " + err, "messages"));
        } else if (r.prompt_is_ids) {
            // Both the embedding and the tokenizer (which decodes the prompt's tail) must know each id.
            const int vocab = std::min(lm.tok.vocab_size(), lm.model.config.vocab_size);
            for (int id : r.prompt_ids)
                if (id >= vocab)
                    return send_error(
                        res, bad_request("token id " + std::to_string(id) + " in 'prompt' is outside the vocabulary 0.." +
                                             std::to_string(vocab - 1),
                                         "prompt"));
            job->prompt = r.prompt_ids;
        } else {
            err = lm.tok.encode(r.prompt, true, &job->prompt);
            if (!err.empty()) return send_error(res, bad_request("the prompt: " + err, "prompt"));
        }
        if (job->prompt.empty()) job->prompt.push_back(lm.model.config.bos_id >= 0 ? lm.model.config.bos_id : 0);
        const int n = int(job->prompt.size());
        if (n >= n_ctx_slot)
            return send_error(res, bad_request("the " + std::string(chat ? "messages are " : "prompt is ") + std::to_string(n) +
                                                   " tokens, and a slot's context is " + std::to_string(n_ctx_slot) + " (-c " +
                                                   std::to_string(lm.n_ctx_total) + " split among " +
                                                   std::to_string(o.n_parallel) + " slots): nothing is left for a reply",
                                               chat ? "messages" : "prompt", "context_length_exceeded"));
        job->max_tokens = n_ctx_slot - n;
        if (r.max_tokens >= 0) job->max_tokens = std::min(job->max_tokens, r.max_tokens);  // 0: echo only
        if (r.echo) job->echo_text = r.prompt_is_ids ? lm.tok.decode(r.prompt_ids) : r.prompt;
        // A reply begun in the request (a prefill) is continued, and its text is the start of the
        // reply's content, streamed or not, as llama-server answers; logprobs and usage count
        // the generated tokens.
        job->prefill = chat && r.continue_last && r.messages.back().role == "assistant";
        if (job->prefill) push_piece(*job, {r.messages.back().content, {}});
        if (!r.seed_given) r.sampler.seed = random_seed();
        job->id = (chat ? "chatcmpl-" : "cmpl-") + random_id();
        job->created = long(std::time(nullptr));
        job->queued = Clock::now();
        {
            std::lock_guard<std::mutex> lk(sched_m);
            if (ApiError e = sched->submit(job)) return send_error(res, e);
        }
        const std::string model = o.model_name;

        if (!r.stream) {
            // Nothing is written until the reply is whole, so no failed write would tell that
            // the client left: its socket is looked at while the job runs, and a client gone
            // cancels the job (the scheduler frees the slot at its next step).
            std::unique_lock<std::mutex> lk(job->m);
            while (!job->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return job->finished; }))
                if (!job->cancelled && client_gone()) job->cancelled = true;
            if (job->error) return send_error(res, job->error);
            std::string text;
            std::vector<TokenReport> tokens;
            for (Piece& p : job->pieces) {
                text += p.text;
                for (TokenReport& t : p.tokens) tokens.push_back(std::move(t));
            }
            json choice = {{"index", 0}, {"logprobs", logprobs_json(*job, tokens)}, {"finish_reason", job->finish_reason}};
            if (chat)
                choice["message"] = {{"role", "assistant"}, {"content", text}};
            else
                choice["text"] = text;
            return send_json(res, 200,
                             {{"id", job->id},
                              {"object", chat ? "chat.completion" : "text_completion"},
                              {"created", job->created},
                              {"model", model},
                              {"system_fingerprint", "hearth"},
                              {"choices", json::array({choice})},
                              {"usage", usage_json(*job)}});
        }

        // Server-sent events: a chunk per piece of text as it comes, then the finish, the usage
        // if asked, and [DONE]. A failed write means the client is gone: the job is cancelled.
        auto began = std::make_shared<bool>(false);
        auto last_write = std::make_shared<Clock::time_point>(Clock::now());
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        // An HTTP/1.0 client knows no chunked coding (RFC 9112 6.1 forbids sending it one): its
        // stream is the events themselves, ended by closing the connection, which cpp-httplib
        // does after an HTTP/1.0 request.
        httplib::ContentProviderWithoutLength provider = [job, began, last_write, model](size_t, httplib::DataSink& sink) {
            auto write = [&](const std::string& s) {
                *last_write = Clock::now();
                if (sink.write(s.data(), s.size())) return true;
                job->cancelled = true;
                return false;
            };
            if (!*began) {
                *began = true;
                if (job->req.chat) {
                    const json delta = {{"role", "assistant"}, {"content", ""}};
                    if (!write(sse(chunk_json(*job, model, &delta, Piece(), "")))) return false;
                }
            }
            std::deque<Piece> pieces;
            bool finished;
            {
                std::unique_lock<std::mutex> lk(job->m);
                job->cv.wait_for(lk, std::chrono::seconds(1), [&] { return job->finished || !job->pieces.empty(); });
                pieces.swap(job->pieces);
                finished = job->finished;
            }
            for (const Piece& p : pieces)
                if (!write(sse(chunk_json(*job, model, nullptr, p, "")))) return false;
            // Nothing to send for a while (a queue, a long prompt): a comment, which clients
            // skip, keeps proxies from taking the connection for idle (limits.h).
            if (!finished && seconds_since(*last_write) >= limits::kServerStreamIdleSeconds) return write(": keep-alive\n\n");
            if (!finished) return true;
            if (job->error) {
                write(sse(json::parse(error_body(job->error))));
                sink.done();
                return true;
            }
            const json empty = json::object();
            if (!write(sse(chunk_json(*job, model, &empty, Piece(), job->finish_reason)))) return false;
            if (job->req.include_usage) {
                json u = {{"id", job->id},
                          {"object", job->req.chat ? "chat.completion.chunk" : "text_completion"},
                          {"created", job->created},
                          {"model", model},
                          {"system_fingerprint", "hearth"},
                          {"choices", json::array()},
                          {"usage", usage_json(*job)}};
                if (!write(sse(u))) return false;
            }
            if (!write("data: [DONE]\n\n")) return false;
            sink.done();
            return true;
        };
        httplib::ContentProviderResourceReleaser releaser = [job](bool) {
            std::lock_guard<std::mutex> lk(job->m);
            if (!job->finished) job->cancelled = true;  // however the response ended
        };
        // Exactly this type: cpp-httplib compresses other text/* types, which would hold the
        // stream back until its end.
        if (req.version == "HTTP/1.0")
            res.set_content_provider("text/event-stream", std::move(provider), std::move(releaser));
        else
            res.set_chunked_content_provider("text/event-stream", std::move(provider), std::move(releaser));
    };
    post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) { completion(req, res, true); });
    post("/chat/completions", [&](const httplib::Request& req, httplib::Response& res) { completion(req, res, true); });
    post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) { completion(req, res, false); });
    post("/completions", [&](const httplib::Request& req, httplib::Response& res) { completion(req, res, false); });

    if (!svr.bind_to_port(o.host, o.port)) {
        std::fprintf(stderr, "run: cannot listen on %s port %d (in use, or not an address of this machine)\n",
                     printable(o.host).c_str(), o.port);
        return 1;
    }
    std::thread http([&] { svr.listen_after_bind(); });
    // svr.stop() only stops a server that runs: wait until it does.
    for (int i = 0; i < 500 && !svr.is_running(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));

    // Stopping: the scheduler cancels what runs and waits (their handlers then answer), and
    // the HTTP server closes its socket and joins its threads.
    auto stop_all = [&] {
        g_stop_requested = true;
        std::lock_guard<std::mutex> lk(sched_m);
        if (sched) sched->stop();
    };
    // Woken by a signal, or at the end by end_signals(), so that it is joined before the
    // objects it uses go away.
    std::atomic<bool> ending{false};
    std::thread signals([&] {
        int sig = 0;
        sigwait(&sigs, &sig);
        if (ending) return;
        std::fprintf(stderr, "run: %s: stopping the server\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        stop_all();
    });
    auto end_signals = [&] {
        ending = true;
        if (!g_stop_requested) pthread_kill(signals.native_handle(), SIGTERM);
        signals.join();
    };

    const std::string host_shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
    std::fprintf(stderr, "run: listening on http://%s:%d (loading the model)\n", printable(host_shown).c_str(), o.port);
    const auto t_load = Clock::now();
    std::string err = load(&lm);
    if (err.empty()) {
        n_ctx_slot = lm.n_ctx_total / std::max(o.n_parallel, 1);
        if (n_ctx_slot < 2)
            err = "-c " + std::to_string(lm.n_ctx_total) + " split among " + std::to_string(o.n_parallel) +
                  " slots leaves fewer than 2 positions each";
    }
    if (err.empty()) {
        auto s = std::make_unique<Scheduler>(lm, o.n_parallel, n_ctx_slot, o.cache_types, o.draft);
        err = s->init();
        std::lock_guard<std::mutex> lk(sched_m);
        sched = std::move(s);
        if (g_stop_requested) sched->stop();
    }
    if (!err.empty()) {
        svr.stop();
        http.join();
        end_signals();
        std::fprintf(stderr, "run: %s\n", message_line(err).c_str());
        return 1;
    }
    loaded = true;
    std::fprintf(stderr,
                 "run: ready in %.1f s: %s, chat template %s, %d slots of %d tokens (-c %d); http://%s:%d/ is the chat page\n",
                 seconds_since(t_load), printable(o.model_name).c_str(), lm.template_name.c_str(), o.n_parallel, n_ctx_slot,
                 lm.n_ctx_total, printable(host_shown).c_str(), o.port);
    sched->run();  // until a signal; on this thread, which OpenMP's settings are for
    svr.stop();
    http.join();
    end_signals();
    std::fprintf(stderr, "run: the server stopped\n");
    return 0;
}

}  // namespace hearth
