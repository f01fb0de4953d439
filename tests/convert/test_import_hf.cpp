// The Hugging Face importer on crafted folders: config.json values must be what they say
// (integers in range, finite numbers), safetensors headers must describe the data of the file
// exactly, and every refusal is one line naming the problem.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>
#include <nlohmann/json.hpp>

#include "convert/import.h"
#include "tests/safetensors_crafted.h"
#include "tests/test_helpers.h"

using namespace hearth;

static const std::string kDir = "build/tests/crafted-hf";

// A copy of the mha parity folder whose config.json has each key of `patch` set to its value
// (null: removed).
static std::string import_with_config(const nlohmann::json& patch) {
    REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir).exit_code == 0);
    auto cfg = nlohmann::json::parse(read_text(kDir + "/config.json"));
    for (auto& [key, value] : patch.items()) {
        if (value.is_null())
            cfg.erase(key);
        else
            cfg[key] = value;
    }
    std::ofstream(kDir + "/config.json") << cfg.dump();
    ImportedCheckpoint out;
    return import_hf_folder(kDir, &out);
}
static std::string import_with_config(const std::string& key, const nlohmann::json& value) {
    nlohmann::json patch;
    patch[key] = value;
    return import_with_config(patch);
}

TEST_CASE("import_hf: config.json integers must be integers in range") {
    REQUIRE(import_with_config("hidden_size", 64) == "");
    const nlohmann::json bad[] = {256.9, 4294967552ull, -64, "64", nlohmann::json::array({64}), true, 0};
    for (const auto& v : bad) {
        CAPTURE(v.dump());
        const std::string err = import_with_config("hidden_size", v);
        CHECK(err.find("hidden_size") != std::string::npos);
        CHECK(err.find('\n') == std::string::npos);
    }
    CHECK(import_with_config("num_hidden_layers", nullptr).find("num_hidden_layers") != std::string::npos);
    CHECK(import_with_config("num_key_value_heads", 3).find("kv head") != std::string::npos);
    CHECK(import_with_config("rms_norm_eps", "tiny").find("rms_norm_eps") != std::string::npos);
    CHECK(import_with_config("rope_theta", nlohmann::json::object()).find("rope_theta") != std::string::npos);
    CHECK(import_with_config("tie_word_embeddings", "yes").find("tie_word_embeddings") != std::string::npos);
    // The file is named once, as the importer names it (FOLDER/config.json: ...): the messages of
    // the config's own checks said "config.json: " again after it.
    for (const auto& [key, value] : {std::pair<const char*, nlohmann::json>{"hidden_size", 256.9},
                                     {"rope_theta", -1.0},
                                     {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}},
                                     {"tie_word_embeddings", "yes"}}) {
        CAPTURE(key);
        const std::string err = import_with_config(key, value);
        CHECK(err.find("config.json") == err.rfind("config.json"));
        CHECK(err.find("/config.json: ") != std::string::npos);
    }
    // A special id beyond the vocabulary is an error, not "no such token".
    CHECK(import_with_config("bos_token_id", 512).find("BOS/EOS") != std::string::npos);
    CHECK(import_with_config("eos_token_id", nlohmann::json::array({4096, 2})).find("BOS/EOS") != std::string::npos);
    CHECK(import_with_config("eos_token_id", -1).find("eos_token_id") != std::string::npos);
    {
        // A tokenizer larger than the model names the value to look at.
        const std::string err = import_with_config("vocab_size", 300);
        INFO(err);
        CHECK(err.find("vocab_size") != std::string::npos);
    }
    // transformers' default RoPE rotates head_dim * partial_rotary_factor dims of each head
    // (modeling_rope_utils._compute_default_rope_parameters: getattr(config,
    // "partial_rotary_factor", 1.0)), LlamaForCausalLM's too: a part is refused, not run whole.
    CHECK(import_with_config("partial_rotary_factor", 1.0) == "");
    // Linear scaling divides RoPE's frequencies by its factor (transformers'
    // _compute_linear_scaling_rope_parameters): by 1 it is no scaling, by 2 it is refused.
    CHECK(import_with_config("rope_scaling", {{"type", "linear"}, {"factor", 1.0}}) == "");
    CHECK(import_with_config("rope_scaling", {{"type", "linear"}, {"factor", 2.0}}).find("'linear' is not supported") !=
          std::string::npos);
    CHECK(import_with_config("partial_rotary_factor", 0.5).find("partial_rotary_factor 0.5 is not supported") !=
          std::string::npos);
    CHECK(import_with_config("rope_parameters",
                             {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.25}})
              .find("partial_rotary_factor") != std::string::npos);
    CHECK(import_with_config({{"architectures", {7}}, {"model_type", nullptr}}).find("not a Llama") != std::string::npos);
    CHECK(import_with_config({{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"}}).find("GPT2LMHeadModel") !=
          std::string::npos);
}

// A copy of a parity folder (in kDir) with its model.safetensors header changed by `change`
// and padded with `pad` spaces more than it needs to end on a multiple of 8 (the data kept after it).
static void write_with_header(const std::string& folder, const std::function<void(nlohmann::json&)>& change, size_t pad) {
    REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/" + folder + " " + kDir).exit_code == 0);
    std::string file = read_text(kDir + "/model.safetensors");
    uint64_t len;
    std::memcpy(&len, file.data(), 8);
    auto header = nlohmann::json::parse(file.substr(8, len));
    change(header);
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8 + pad, ' ');  // the format pads with spaces
    const uint64_t new_len = text.size();
    std::string out(reinterpret_cast<const char*>(&new_len), 8);
    out += text + file.substr(8 + len);
    std::ofstream(kDir + "/model.safetensors", std::ios::binary) << out;
}

static std::string import_with_header(const std::function<void(nlohmann::json&)>& change, size_t pad = 0) {
    write_with_header("mha", change, pad);
    ImportedCheckpoint imported;
    return import_hf_folder(kDir, &imported);
}

TEST_CASE("import_hf: safetensors headers are checked against the file") {
    const std::string embed = "model.embed_tokens.weight";
    REQUIRE(import_with_header([](nlohmann::json&) {}) == "");
    // A tensor the model looks for, renamed: its bytes stay covered (the format forbids holes),
    // under a name the importer ignores.
    auto remove = [](nlohmann::json& h, const std::string& name) {
        h["unused." + name] = h[name];
        h.erase(name);
    };
    // An untied model without its output matrix: the message names the config key a user would fix.
    const std::string no_head = import_with_header([&](nlohmann::json& h) { remove(h, "lm_head.weight"); });
    CHECK(no_head.find("lm_head.weight is missing") != std::string::npos);
    CHECK(no_head.find("\"tie_word_embeddings\": true") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) {
              h[embed]["shape"] = {512.5, 64};
          }).find("whole numbers") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) {
              h[embed]["shape"] = {-512, 64};
          }).find("whole numbers") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) {
              h[embed]["shape"] = {1ull << 40, 1ull << 40};
          }).find("absurd") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) {
              h[embed]["data_offsets"] = {0, 1ull << 60};
          }).find("outside") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) { h[embed]["data_offsets"] = {8, 4}; }).find("outside") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) {
              h[embed]["data_offsets"] = {0, 4};
          }).find("does not match") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) { h[embed]["dtype"] = "F128"; }).find("dtype") != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) { h[embed]["dtype"] = 5; }).find(embed) != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) { h[embed] = "nothing"; }).find(embed) != std::string::npos);
    CHECK(import_with_header([&](nlohmann::json& h) { remove(h, embed); }).find("missing") != std::string::npos);
    const std::string err = import_with_header([&](nlohmann::json& h) { h["bad\nname"] = {{"dtype", "F32"}}; });
    CHECK(err.find("bad\\x0aname") != std::string::npos);  // escaped, not printed raw
    CHECK(err.find('\n') == std::string::npos);
}

// The safetensors spec: "the byte buffer needs to be entirely indexed, and cannot contain holes.
// This prevents the creation of polyglot files." Its reference reader (safetensors'
// Metadata::validate and read_metadata) sorts the tensors by offset and refuses a tensor that
// does not start where the one before ended (InvalidOffset, naming it) and bytes after the
// last (MetadataIncompleteBuffer). hearth read all three files below. quantize refuses each
// in one line naming the file and the tensor, and leaves no output.
TEST_CASE("import_hf: safetensors data with a hole, an overlap or bytes after the last tensor is refused") {
    const std::string out = "build/tests/crafted-hf-cover.hearth";
    auto refused = [&](const std::string& what) {
        CommandResult q = run_command("rm -f " + out + " && ./quantize " + kDir + " " + out + " -q");
        CHECK(q.exit_code == 1);
        CHECK(q.err.find(kDir + "/model.safetensors") != std::string::npos);
        CHECK(q.err.find(what) != std::string::npos);
        CHECK(std::count(q.err.begin(), q.err.end(), '\n') == 1);
        CHECK_FALSE(std::filesystem::exists(out));
    };
    // The data's length, the end of the last tensor in the unchanged file.
    uint64_t data_end = 0;
    write_with_header(
        "mha",
        [&](nlohmann::json& h) {
            for (auto& [name, info] : h.items())
                if (name != "__metadata__") data_end = std::max(data_end, info["data_offsets"][1].get<uint64_t>());
        },
        0);
    REQUIRE(run_command("./quantize " + kDir + " " + out + " -q").exit_code == 0);
    {
        CAPTURE("4 bytes after the last tensor");
        std::ofstream(kDir + "/model.safetensors", std::ios::binary | std::ios::app) << "abcd";
        refused("4 bytes follow the data of the last tensor");
    }
    {
        CAPTURE("a tensor 4 bytes after the end of the others, leaving a hole");
        write_with_header(
            "mha",
            [&](nlohmann::json& h) {
                h["extra"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {data_end + 4, data_end + 8}}};
            },
            0);
        std::ofstream(kDir + "/model.safetensors", std::ios::binary | std::ios::app) << "abcdefgh";
        refused("tensor 'extra' starts at byte " + std::to_string(data_end + 4) + " of the data, leaving a hole");
    }
    {
        CAPTURE("a tensor over the first 4 bytes of another");
        write_with_header(
            "mha",
            [&](nlohmann::json& h) {
                h["extra"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
            },
            0);
        refused("tensors must not overlap");
    }
    {
        CAPTURE("two tensors on the same bytes");
        write_with_header(
            "mha",
            [&](nlohmann::json& h) { h["lm_head.weight"]["data_offsets"] = h["model.embed_tokens.weight"]["data_offsets"]; }, 0);
        refused("tensors must not overlap");
    }
}

// A clone of a Hugging Face repository made without git-lfs holds, in place of the weights and
// tokenizer.model, Git LFS pointers: the small text files of Git LFS's spec (docs/spec.md; this
// is its example). hearth read them as the formats they stand for and said "safetensors header
// length 2336927755350992246 does not fit the file", "ModelProto byte 0: field 14 has invalid
// wire type 6", or that a .gguf was no model file at all. Each is named a pointer now, with the fix.
TEST_CASE("import_hf: a Git LFS pointer in place of a file is named as one, with the fix") {
    const std::string pointer =
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
        "size 12345\n";
    const std::string out = "build/tests/crafted-hf-lfs.hearth";
    auto refused = [&](const std::string& command, const std::string& path) {
        CommandResult r = run_command("rm -f " + out + " && " + command);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find(path + " is a Git LFS pointer") != std::string::npos);
        CHECK(r.err.find("git lfs pull") != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_FALSE(std::filesystem::exists(out));
    };
    for (const std::string file : {"model.safetensors", "tokenizer.model"}) {
        CAPTURE(file);
        REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir).exit_code == 0);
        write_file(kDir + "/" + file, pointer);
        refused("./quantize " + kDir + " " + out + " -q", kDir + "/" + file);
    }
    // A sharded folder's shard, and a model file given alone, to quantize and to run.
    REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/odd " + kDir).exit_code == 0);
    write_file(kDir + "/model-00002-of-00002.safetensors", pointer);
    refused("./quantize " + kDir + " " + out + " -q", kDir + "/model-00002-of-00002.safetensors");
    const std::string model = "build/tests/crafted-lfs-model.gguf";
    write_file(model, pointer);
    refused("./quantize " + model + " " + out + " -q", model);
    refused("./run " + model + " -p hi -n 1", model);
    // A file that is not one (the version line later, or 1024 bytes long) is still read as what it claims.
    write_file(model, "x" + pointer);
    CHECK(run_command("./run " + model + " -p hi -n 1").err.find("Git LFS") == std::string::npos);
    write_file(model, pointer + std::string(1024 - pointer.size(), '\n'));
    CHECK(run_command("./run " + model + " -p hi -n 1").err.find("Git LFS") == std::string::npos);
}

// A Llama-2-style folder with tokenizer.json only: transformers' LlamaConverter saves the
// SentencePiece model as a BPE with byte_fallback, which hearth does not read; it reads the
// tokenizer.model such folders usually have. The message said only "BPE with byte_fallback is
// not supported"; it names the file to add now.
TEST_CASE("import_hf: a SentencePiece tokenizer.json without its tokenizer.model names the file to add") {
    REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir + " && rm " + kDir + "/tokenizer.model")
                .exit_code == 0);
    write_file(kDir + "/tokenizer.json",
               R"({"model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>", )"
               R"("vocab": {"<unk>": 0, "<s>": 1, "</s>": 2}, "merges": []}})");
    CommandResult q = run_command("./quantize " + kDir + " build/tests/crafted-hf-fallback.hearth -q");
    CHECK(q.exit_code == 1);
    CHECK(q.err.find(kDir + "/tokenizer.json: BPE with byte_fallback") != std::string::npos);
    CHECK(q.err.find("put the model's tokenizer.model beside it") != std::string::npos);
    CHECK(std::count(q.err.begin(), q.err.end(), '\n') == 1);
}

// What a user may have instead of a Hugging Face folder: Meta's own download of Llama
// (params.json, consolidated.00.pth, tokenizer.model), a LoRA adapter (peft's adapter_config.json
// and adapter_model.safetensors), or a folder whose weights are PyTorch pickles
// (pytorch_model.bin). hearth said "cannot find config.json" and "has neither
// model.safetensors nor model.safetensors.index.json"; it names what it has found now, and
// how to get what it reads.
TEST_CASE("import_hf: Meta's original download, a LoRA adapter and pytorch_model.bin are named, with what to use instead") {
    const std::string out = "build/tests/crafted-hf-pickle.hearth";
    auto refused = [&](const std::string& what) {
        CommandResult q = run_command("rm -f " + out + " && ./quantize " + kDir + " " + out + " -q");
        CHECK(q.exit_code == 1);
        CHECK(q.err.find(what) != std::string::npos);
        CHECK(std::count(q.err.begin(), q.err.end(), '\n') == 1);
        CHECK_FALSE(std::filesystem::exists(out));
    };
    REQUIRE(run_command("rm -rf " + kDir + " && mkdir -p " + kDir + " && cp tests/data/parity/mha/tokenizer.model " + kDir)
                .exit_code == 0);
    write_file(kDir + "/params.json", R"({"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 512, "norm_eps": 1e-05})");
    write_file(kDir + "/consolidated.00.pth", "PK");
    refused(kDir + " is Meta's original download (params.json, consolidated.*.pth: PyTorch pickles)");
    // A LoRA adapter as peft saves it: adapter_config.json and adapter_model.safetensors.
    REQUIRE(run_command("rm -rf " + kDir + " && mkdir -p " + kDir).exit_code == 0);
    write_file(kDir + "/adapter_config.json", R"({"peft_type": "LORA", "base_model_name_or_path": "x", "r": 8})");
    write_f16_zeros_safetensors(kDir + "/adapter_model.safetensors",
                                {{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {8, 64}}});
    refused(kDir + " is a LoRA adapter (adapter_config.json), not a model: merge it into its base model first");
    for (const std::string file : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
        CAPTURE(file);
        REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir + " && mv " + kDir +
                            "/model.safetensors " + kDir + "/" + file)
                    .exit_code == 0);
        refused(kDir + " has its weights in pytorch_model.bin (a PyTorch pickle, which hearth does not read)");
    }
}

// kDir as quantize's f32 file at `out`, run greedy on the prompt of tests/data/parity/FOLDER's
// golden.json: the ids must be PyTorch's (tests/reference/hf_llama.py).
void check_greedy_ids_are_golden(const std::string& folder, const std::string& out) {
    const auto golden = nlohmann::json::parse(read_text("tests/data/parity/" + folder + "/golden.json"));
    std::string prompt, want;
    for (int id : golden.at("prompt_ids").get<std::vector<int>>()) prompt += (prompt.empty() ? "" : ",") + std::to_string(id);
    const auto greedy = golden.at("greedy_ids").get<std::vector<int>>();
    for (int id : greedy) want += (want.empty() ? "" : ",") + std::to_string(id);
    CommandResult q = run_command("./quantize " + kDir + " " + out + " f32 -q");
    INFO(q.err);
    REQUIRE(q.exit_code == 0);
    CommandResult r = run_command("./run " + out + " --prompt-ids " + prompt + " -n " + std::to_string(greedy.size()) +
                                  " --temp 0 --ignore-eos --print-ids -t 2");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == want + "\n");
}

// The safetensors format does not align its data: files written before safetensors 0.3.1 (whose
// 0.3.0 padded the header by the wrong amount) and by MLX's save_safetensors have a header of
// any length and tensors packed back to back, so a tensor may start at any byte. Such a folder
// converts to the model PyTorch computes (the parity goldens, tests/reference/hf_llama.py):
// BF16 and F16 data at odd addresses, F32 data at addresses of 2 mod 4.
TEST_CASE("import_hf: safetensors data at unaligned offsets converts to the reference's model") {
    for (auto [folder, pad] : {std::pair{"bf16", size_t(1)}, std::pair{"mha", size_t(2)}, std::pair{"tied", size_t(3)}}) {
        CAPTURE(folder);
        write_with_header(
            folder, [](nlohmann::json&) {}, pad);
        std::string file = read_text(kDir + "/model.safetensors");
        uint64_t len;
        std::memcpy(&len, file.data(), 8);
        REQUIRE((8 + len) % 8 == pad);
        check_greedy_ids_are_golden(folder, "build/tests/crafted-hf-unaligned.hearth");
    }
}

// Hugging Face's LlamaTokenizer adds BOS as tokenizer_config.json's add_bos_token says (Yi's
// folders say false); llama.cpp's converter writes it as tokenizer.ggml.add_bos_token (gguf-py's
// SpecialVocab reads {'bos': False} from this folder), and llama-tokenize on the GGUF file
// quantize makes of it gives 383,479,489,478,479,471,269,355,303 for "ROMEO: the king", no BOS.
// hearth ignored the key for a tokenizer.model and put BOS first.
TEST_CASE("import_hf: tokenizer_config.json's add_bos_token false keeps BOS out of a SentencePiece model's prompts") {
    for (bool add_bos : {false, true}) {
        CAPTURE(add_bos);
        REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir).exit_code == 0);
        std::ofstream(kDir + "/tokenizer_config.json")
            << R"({"add_bos_token": )" << (add_bos ? "true" : "false") << R"(, "bos_token": "<s>", "eos_token": "</s>"})";
        for (const char* out : {"build/tests/crafted-hf-bos.hearth", "build/tests/crafted-hf-bos.gguf"}) {
            CAPTURE(out);
            CommandResult q = run_command("./quantize " + kDir + " " + out + " f32 -q");
            INFO(q.err);
            REQUIRE(q.exit_code == 0);
            CommandResult r = run_command(std::string("./run ") + out + " -p 'ROMEO: the king' -n 1 --temp 0 --verbose -t 1");
            INFO(r.err);
            REQUIRE(r.exit_code == 0);
            CHECK(r.err.find(add_bos ? "prompt 10 tokens" : "prompt 9 tokens") != std::string::npos);
        }
    }
}

// A one-layer Llama of dim 64 on the Llama-3 vocabulary (zero weights: only the configuration
// is looked at), with Llama-3.x-Instruct's EOS keys: config.json's eos_token_id lists
// [128001, 128008, 128009] and tokenizer_config.json's eos_token is <|eot_id|>. gguf-py's
// SpecialVocab (llama.cpp's converter) reads {'bos': 128000, 'eos': 128009} from such a folder,
// so llama.cpp's file ends a reply at <|eot_id|>; hearth took the list's first, <|end_of_text|>,
// and `run -p` on an Instruct model went on past the end of its reply.
TEST_CASE("import_hf: a BPE tokenizer_config.json's eos_token decides EOS over config.json's list") {
    const std::string dir = "build/tests/crafted-hf-eos";
    REQUIRE(run_command("rm -rf " + dir + " && mkdir -p " + dir + " && xz -dc tests/data/bpe/llama3-tokenizer.json.xz > " + dir +
                        "/tokenizer.json")
                .exit_code == 0);
    const uint64_t vocab = 128256, dim = 64, hidden = 128;
    const SafetensorsShapes tensors = one_layer_llama_tensors(vocab, dim, hidden);
    write_f16_zeros_safetensors(dir + "/model.safetensors", tensors);
    const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"hidden_size", dim},
                                   {"intermediate_size", hidden},
                                   {"num_hidden_layers", 1},
                                   {"num_attention_heads", 2},
                                   {"vocab_size", vocab},
                                   {"tie_word_embeddings", true},
                                   {"bos_token_id", 128000},
                                   {"eos_token_id", {128001, 128008, 128009}}};
    std::ofstream(dir + "/config.json") << config.dump();
    for (const char* eos : {"<|eot_id|>", "<|end_of_text|>"}) {
        CAPTURE(eos);
        auto tc = nlohmann::json::parse(read_text("tests/data/bpe/llama3-tokenizer_config.json"));
        tc["eos_token"] = eos;
        std::ofstream(dir + "/tokenizer_config.json") << tc.dump();
        ImportedCheckpoint imported;
        REQUIRE(import_hf_folder(dir, &imported) == "");
        CHECK(imported.config.bos_id == 128000);
        CHECK(imported.config.eos_id == (std::string(eos) == "<|eot_id|>" ? 128009 : 128001));
    }
}

// transformers loads model.safetensors when a folder has it, before it looks for
// model.safetensors.index.json (and so does the reference, tests/reference/hf_llama.py): a folder
// whose shards were merged into one file and whose old index stayed is that one file. hearth
// read the index first and failed on its missing shards.
TEST_CASE("import_hf: model.safetensors is read before a model.safetensors.index.json beside it") {
    REQUIRE(run_command("rm -rf " + kDir + " && cp -r tests/data/parity/mha " + kDir).exit_code == 0);
    std::ofstream(kDir + "/model.safetensors.index.json")
        << R"({"metadata": {}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",)"
        << R"( "lm_head.weight": "model-00002-of-00002.safetensors"}})";
    check_greedy_ids_are_golden("mha", "build/tests/crafted-hf-stale-index.hearth");
}
