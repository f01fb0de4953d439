// The chat session: the KV cache kept between turns (a turn evaluates only what it adds,
// and replies equal those of evaluating the whole dialog afresh), interruption, and
// dropping old turns when the context fills.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sys/stat.h>

#include "chat/chat_session.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

// f32, so that evaluating a token alone or in a batch gives bit-identical logits.
const std::string kModel = "build/tests/chat-session.hearth";

struct Fixture {
    Model model;
    Tokenizer tok;
    RunState state;
    explicit Fixture(int n_ctx) {
        struct stat st;
        if (stat(kModel.c_str(), &st) != 0)
            REQUIRE(run_command("./quantize tests/data/parity/gqa " + kModel + " --type f32 -q").exit_code == 0);
        REQUIRE(load_model(kModel, &model) == "");
        REQUIRE(tok.load(model.tokenizer) == "");
        REQUIRE(make_run_state(model.config, n_ctx, &state) == "");
    }
};

Sampler greedy() {
    SamplerParams p;
    p.temperature = 0;
    return Sampler(p);
}

std::vector<int> enc(const Tokenizer& tok, const std::string& s) { return encoded(tok, s, false); }

// The prompt of the last reply: the dialog without that reply, formatted for generation.
std::vector<int> last_prompt(const ChatSession& s, const Tokenizer& tok) {
    std::vector<ChatMessage> d = s.dialog();
    d.pop_back();
    std::vector<int> ids;
    REQUIRE(format_chat(s.template_name(), tok, d, true, &ids) == "");
    return ids;
}

// Greedy ids after evaluating `prompt` in a fresh KV cache, `n` of them.
std::vector<int> fresh_greedy(Fixture& f, const std::vector<int>& prompt, int n) {
    RunState st;
    REQUIRE(make_run_state(f.model.config, f.state.n_ctx, &st) == "");
    std::vector<float> logits(f.model.config.vocab_size);
    REQUIRE(forward(f.model, st, prompt.data(), int(prompt.size()), 0, logits.data()) == "");
    std::vector<int> out;
    int pos = int(prompt.size());
    while (int(out.size()) < n) {
        for (int id = f.tok.vocab_size(); id < f.model.config.vocab_size; id++) logits[id] = -INFINITY;
        int next = Sampler::argmax(logits.data(), f.model.config.vocab_size);
        out.push_back(next);
        REQUIRE(forward(f.model, st, &next, 1, pos++, logits.data()) == "");
    }
    return out;
}

bool starts_with(const std::vector<int>& v, const std::vector<int>& prefix) {
    return v.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), v.begin());
}

}  // namespace

TEST_CASE("chat session: the second turn evaluates only its new tokens") {
    Fixture f(256);
    ChatSession s(f.model, f.tok, f.state, "llama2");
    s.set_system_prompt("Be brief.");
    Sampler g = greedy();
    ReplyStats a = s.reply("Hello", g, 6, {});
    REQUIRE((a.end == ReplyEnd::end_of_turn || a.end == ReplyEnd::length_limit));
    CHECK(a.reused_tokens == 0);
    CHECK(a.prompt_tokens == 1 + int(enc(f.tok, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHello [/INST]").size()));

    const int in_cache = int(s.context().size());
    const long evaluated_before = s.evaluated_tokens();
    ReplyStats b = s.reply("How are you?", g, 6, {});
    REQUIRE((b.end == ReplyEnd::end_of_turn || b.end == ReplyEnd::length_limit));
    // New: the last reply token when the reply was cut at the limit (it was sampled but
    // not evaluated), EOS closing the reply, and BOS + "[INST] How are you? [/INST]".
    const int expected_new =
        (a.end == ReplyEnd::length_limit ? 1 : 0) + 2 + int(enc(f.tok, "[INST] How are you? [/INST]").size());
    CHECK(b.prompt_tokens == expected_new);
    CHECK(b.reused_tokens == in_cache);
    // Counted independently by the session's counter: the prompt, then one evaluation per
    // reply token except one (the end-of-turn token, or the last one at the limit).
    CHECK(s.evaluated_tokens() - evaluated_before ==
          expected_new + std::max(0, b.reply_tokens - 1) + (b.end == ReplyEnd::end_of_turn ? 1 : 0));
    // The cache holds exactly the template's formatting of the dialog.
    CHECK(starts_with(s.context(), last_prompt(s, f.tok)));
}

TEST_CASE("chat session: replies from the kept cache equal those from evaluating the dialog afresh") {
    Fixture f(256);
    for (const std::string& name : chat_template_names()) {
        INFO(name);
        // Their markers are not in this Llama-2 vocabulary: as text they make three turns
        // outgrow the context (turns would be dropped).
        if (name == "llama3" || name == "llama3.1" || name == "llama3.2" || name == "qwen3") continue;
        ChatSession s(f.model, f.tok, f.state, name);
        s.set_system_prompt("Be brief.");
        s.set_ignore_end_of_turn(true);  // replies of a known length
        Sampler g = greedy();
        for (const char* msg : {"Hello", "How are you?", "Tell me a story."}) {
            ReplyStats r = s.reply(msg, g, 8, {});
            REQUIRE(r.end == ReplyEnd::length_limit);
            CHECK(s.turns().back().ids == fresh_greedy(f, last_prompt(s, f.tok), 8));
        }
        CHECK(s.turns().size() == 6);
    }
}

TEST_CASE("chat session: an interrupted prompt withdraws the message, an interrupted reply stays") {
    Fixture f(256);
    ChatSession s(f.model, f.tok, f.state, "chatml");
    s.set_ignore_end_of_turn(true);
    Sampler g = greedy();
    REQUIRE(s.reply("Hello", g, 5, {}).end == ReplyEnd::length_limit);
    const std::vector<ChatMessage> before = s.dialog();

    // Ctrl-C before the prompt is evaluated: the message never happened.
    ChatCallbacks stop_now;
    stop_now.interrupted = [] { return true; };
    ReplyStats c = s.reply("Never mind", g, 5, stop_now);
    CHECK(c.end == ReplyEnd::cancelled);
    CHECK(c.reply_tokens == 0);
    CHECK(s.dialog().size() == before.size());

    // Ctrl-C after three tokens of the reply: they stay, and the cache stays consistent.
    int tokens_seen = 0;
    ChatCallbacks stop_after_3;
    stop_after_3.on_text = [&](const std::string&) { tokens_seen++; };
    stop_after_3.interrupted = [&] { return tokens_seen >= 3; };
    ReplyStats i = s.reply("Tell me a long story", g, 100, stop_after_3);
    CHECK(i.end == ReplyEnd::interrupted);
    CHECK(i.reply_tokens == 3);
    REQUIRE(s.turns().size() == 4);
    CHECK(s.turns().back().ids.size() == 3);
    CHECK(starts_with(s.context(), last_prompt(s, f.tok)));

    // The next turn evaluates the reply's end and the new message only, and answers as a
    // fresh evaluation of the whole dialog would.
    const int in_cache = int(s.context().size());
    ReplyStats n = s.reply("Go on", g, 6, {});
    REQUIRE(n.end == ReplyEnd::length_limit);
    CHECK(n.reused_tokens == in_cache);
    CHECK(s.turns().back().ids == fresh_greedy(f, last_prompt(s, f.tok), 6));
}

TEST_CASE("chat session: when the context fills, old turns go, the system prompt stays, and the chat carries on") {
    const int n_ctx = 128;
    Fixture f(n_ctx);
    ChatSession s(f.model, f.tok, f.state, "llama2");
    s.set_system_prompt("Be brief.");
    s.set_ignore_end_of_turn(true);
    Sampler g = greedy();
    std::vector<std::string> notices;
    ChatCallbacks cb;
    cb.on_notice = [&](const std::string& m) { notices.push_back(m); };
    const std::string sys_prefix = "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n";
    int dropped = 0;
    for (int turn = 0; turn < 8; turn++) {
        ReplyStats r = s.reply("Tell me more, turn " + std::to_string(turn), g, 12, cb);
        INFO("turn " << turn);
        REQUIRE(r.end == ReplyEnd::length_limit);
        CHECK(r.reply_tokens == 12);
        dropped += r.dropped_turns;
        CHECK(s.context().size() <= size_t(n_ctx));
        CHECK(f.tok.decode(s.context()).compare(0, sys_prefix.size(), sys_prefix) == 0);
        CHECK(s.turns().back().role == "assistant");
        CHECK(s.turns()[s.turns().size() - 2].content == "Tell me more, turn " + std::to_string(turn));
        CHECK(starts_with(s.context(), last_prompt(s, f.tok)));
    }
    CHECK(dropped > 0);
    CHECK(s.turns().size() < 16);
    REQUIRE(!notices.empty());
    CHECK(notices[0].find("dropped") != std::string::npos);
    CHECK(notices[0].find("system prompt stays") != std::string::npos);
    // Dropped before the turn, for the room its reply of 12 tokens needs, not because it was full.
    CHECK(notices[0].find("no room left for a reply of 12 tokens") != std::string::npos);

    // A reply that runs out of room in the middle: the oldest turn is dropped there and
    // then, and the reply runs to its full length.
    ChatSession s2(f.model, f.tok, f.state, "llama2");
    s2.set_system_prompt("Be brief.");
    s2.set_ignore_end_of_turn(true);
    REQUIRE(s2.reply("Hi", g, 12, cb).end == ReplyEnd::length_limit);
    const int in_cache = int(s2.context().size());
    const size_t notices_before = notices.size();
    ReplyStats longer = s2.reply("Hello there", g, 80, cb);
    CHECK(longer.end == ReplyEnd::length_limit);
    CHECK(longer.reply_tokens == 80);
    CHECK(longer.dropped_turns == 1);
    CHECK(longer.reused_tokens == in_cache);  // nothing was dropped before the reply began
    CHECK(notices.size() == notices_before + 1);
    CHECK(notices.back().find("is full") != std::string::npos);
    CHECK(s2.turns().size() == 2);
    CHECK(f.tok.decode(s2.context()).compare(0, sys_prefix.size(), sys_prefix) == 0);
    CHECK(s2.context().size() <= size_t(n_ctx));

    // A reply that cannot fit even alone stops at the full context and says why.
    s.reset();
    ReplyStats full = s.reply("Once more", g, 1000, cb);
    CHECK(full.end == ReplyEnd::context_full);
    CHECK(s.context().size() == size_t(n_ctx));
    // ... and the chat still goes on after it.
    ReplyStats after = s.reply("Short", g, 4, cb);
    CHECK(after.end == ReplyEnd::length_limit);
}

TEST_CASE("chat session: a message longer than the context is refused and changes nothing") {
    Fixture f(64);
    ChatSession s(f.model, f.tok, f.state, "raw");
    Sampler g = greedy();
    REQUIRE(s.reply("Hi", g, 4, {}).end != ReplyEnd::refused);
    const size_t turns = s.turns().size();
    ReplyStats r = s.reply(std::string(300, 'x'), g, 4, {});
    CHECK(r.end == ReplyEnd::refused);
    CHECK(r.error.find("too long for the context") != std::string::npos);
    CHECK(s.turns().size() == turns);
    CHECK(s.reply("Hi again", g, 4, {}).end != ReplyEnd::refused);
}

TEST_CASE("chat session: run --chat over a pipe, with a context small enough to drop turns") {
    Fixture f(64);  // makes the checkpoint
    CommandResult r = run_command("printf 'one\\ntwo\\nthree\\nfour\\nfive\\n' | ./run " + kModel +
                                  " --chat -c 96 -n 16 --ignore-eos --temp 0 --template llama2 --system 'Be brief.' -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("dropped") != std::string::npos);
    CHECK(r.err.find("the system prompt stays") != std::string::npos);
    CHECK(r.out.find("\033[") == std::string::npos);  // no colour in a pipe

    // One-shot use, and the commands.
    CommandResult one = run_command("echo 'To be' | ./run " + kModel + " --chat -n 5 --temp 0 -t 1");
    CHECK(one.exit_code == 0);
    CHECK(!one.out.empty());
    // The first two lines are one message: a trailing backslash continues it.
    CommandResult cmds =
        run_command("printf 'hello \\\\\\nthere\\n/stats\\n/reset\\n/stats\\n/help\\n/quit\\nnot read\\n' | ./run " + kModel +
                    " --chat -n 5 --temp 0 -t 1");
    CHECK(cmds.exit_code == 0);
    CHECK(cmds.out.find(" of 256 tokens, 2 messages") != std::string::npos);
    CHECK(cmds.out.find("context: 0 messages (") != std::string::npos);  // after /reset
    CHECK(cmds.out.find("/reset") != std::string::npos);                 // the help text
    CHECK(cmds.err.find("conversation reset") != std::string::npos);

    CommandResult help = run_command("./run --help");
    for (const char* opt : {"--chat", "--template", "--system", "--verbose", "llama2, zephyr, chatml, vicuna"})
        CHECK(help.out.find(opt) != std::string::npos);
    CommandResult both = run_command("./run " + kModel + " --chat -p hi");
    CHECK(both.exit_code == 1);
}
