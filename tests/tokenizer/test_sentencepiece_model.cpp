// The hand-written ModelProto reader, writer and GGUF-vocabulary builder
// (tokenizer/sentencepiece_model.h), against the SentencePiece library reading the same
// bytes, python sentencepiece's ids (tests/data/tokenizer_goldens.json), models and
// normalizer charsmaps made by SentencePiece's own trainer, and damaged input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "tokenizer/sentencepiece_model.h"
#include "tests/test_helpers.h"

using namespace hearth;

namespace {

using Processor = sentencepiece::SentencePieceProcessor;
using SPM = SentencePieceModel;

const char* kLlama2 = "tests/data/llama2-tokenizer.model";
const char* kSmall = "tests/data/parity/mha/tokenizer.model";  // 512 pieces, BPE with byte fallback

std::unique_ptr<Processor> load_library(const std::string& bytes) {
    auto sp = std::make_unique<Processor>();
    auto status = sp->LoadFromSerializedProto(bytes);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    return sp;
}

bool library_loads(const std::string& bytes) {
    Processor sp;
    return sp.LoadFromSerializedProto(bytes).ok();
}

SPM parse_ok(const std::string& bytes) {
    SPM m;
    std::string err = parse_sentencepiece_model(bytes, &m);
    REQUIRE_MESSAGE(err == "", err);
    return m;
}

// The type the library reports; it has no IsUserDefined, such pieces look normal.
int library_piece_type(const Processor& sp, int id) {
    if (sp.IsUnknown(id)) return SPM::kUnknown;
    if (sp.IsControl(id)) return SPM::kControl;
    if (sp.IsUnused(id)) return SPM::kUnused;
    if (sp.IsByte(id)) return SPM::kByte;
    return SPM::kNormal;
}

// Every piece, score, type and special id of m is what the library reports.
void check_same_as_library(const SPM& m, const Processor& sp) {
    REQUIRE(int(m.pieces.size()) == sp.GetPieceSize());
    int mismatches = 0;
    for (int id = 0; id < sp.GetPieceSize(); id++) {
        const SPM::Piece& p = m.pieces[id];
        const int type = p.type == SPM::kUserDefined ? SPM::kNormal : p.type;
        if (p.piece != sp.IdToPiece(id) || p.score != sp.GetScore(id) || type != library_piece_type(sp, id)) {
            if (++mismatches <= 5)
                FAIL_CHECK("id " << id << ": '" << p.piece << "' " << p.score << " type " << p.type << " vs library '"
                                 << sp.IdToPiece(id) << "' " << sp.GetScore(id) << " type " << library_piece_type(sp, id));
        }
    }
    CHECK(mismatches == 0);
    CHECK(m.unk_id == sp.unk_id());
    CHECK(m.bos_id == sp.bos_id());
    CHECK(m.eos_id == sp.eos_id());
    CHECK(m.pad_id == sp.pad_id());
    bool any_byte = false;
    for (int id = 0; id < sp.GetPieceSize(); id++) any_byte |= sp.IsByte(id);
    CHECK(m.byte_fallback == any_byte);  // the library refuses byte pieces otherwise, and needs all 256
}

// Encodes and decodes the goldens python sentencepiece made for the original file.
void check_goldens(const Processor& sp, const std::string& model_name) {
    auto goldens = nlohmann::json::parse(read_text("tests/data/tokenizer_goldens.json"));
    const auto& cases = goldens.at(model_name);
    REQUIRE(cases.size() >= 10);
    for (const auto& c : cases) {
        const std::string text = c.at("text").get<std::string>();
        const std::vector<int> ids = c.at("ids").get<std::vector<int>>();
        INFO(model_name << ": '" << text << "'");
        CHECK(sp.EncodeAsIds(text) == ids);
        CHECK(sp.EncodeAsPieces(text) == c.at("pieces").get<std::vector<std::string>>());
        CHECK(sp.DecodeIds(ids) == c.at("decoded").get<std::string>());
    }
}

// Text that exercises whitespace handling, byte fallback and normalization.
std::string random_text(std::mt19937& rng) {
    static const std::vector<std::string> parts = {"the",
                                                   "Hello",
                                                   "world",
                                                   "ROMEO:",
                                                   "x",
                                                   "1234",
                                                   "3.14",
                                                   ".",
                                                   ",",
                                                   "!",
                                                   "'",
                                                   "\"",
                                                   " ",
                                                   "  ",
                                                   "   ",
                                                   "\t",
                                                   "\n",
                                                   "\r\n",
                                                   "café",
                                                   "naïve",
                                                   "Ærøskøbing",
                                                   "日本語",
                                                   "中文",
                                                   "😀",
                                                   "👍🏽",
                                                   "ＡＢＣ",
                                                   "ｶﾀｶﾅ",
                                                   "ﬁ",
                                                   "①",
                                                   "e\xCC\x81",
                                                   "\xC2\xA0",
                                                   "\xE3\x80\x80",
                                                   "\xE2\x96\x81",
                                                   "<s>",
                                                   "</s>",
                                                   "<unk>",
                                                   "<0x41>",
                                                   "\xff",
                                                   "\xc3",
                                                   "\x80",
                                                   std::string(1, '\0')};
    std::string text;
    const int n = rng() % 14;
    for (int i = 0; i < n; i++) text += parts[rng() % parts.size()];
    return text;
}

// The two processors encode and decode varied text the same.
void check_same_encoding(const Processor& want, const Processor& got, int texts, unsigned seed) {
    std::mt19937 rng(seed);
    int mismatches = 0;
    for (int i = 0; i < texts; i++) {
        const std::string text = random_text(rng);
        const std::vector<int> ids = want.EncodeAsIds(text);
        if (got.EncodeAsIds(text) != ids || got.DecodeIds(ids) != want.DecodeIds(ids)) {
            if (++mismatches <= 5) FAIL_CHECK("text '" << text << "' encodes or decodes differently");
        }
    }
    CHECK(mismatches == 0);
}

// The arrays a GGUF file holds for a vocabulary, read from the library, not from our parser.
struct GgufVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    int unk_id, bos_id, eos_id, pad_id;
};
GgufVocab gguf_vocab_from_library(const Processor& sp) {
    GgufVocab v;
    for (int id = 0; id < sp.GetPieceSize(); id++) {
        v.tokens.push_back(sp.IdToPiece(id));
        v.scores.push_back(sp.GetScore(id));
        v.types.push_back(library_piece_type(sp, id));
    }
    v.unk_id = sp.unk_id();
    v.bos_id = sp.bos_id();
    v.eos_id = sp.eos_id();
    v.pad_id = sp.pad_id();
    return v;
}
std::string build(const GgufVocab& v, bool add_space_prefix = true, bool remove_extra_whitespaces = false,
                  std::string* model = nullptr) {
    std::string bytes;
    std::string err = sentencepiece_model_from_vocab(v.tokens, v.scores, v.types, v.unk_id, v.bos_id, v.eos_id, v.pad_id,
                                                     add_space_prefix, remove_extra_whitespaces, &bytes);
    if (model) *model = bytes;
    return err;
}

// Models trained by SentencePiece's own trainer on Shakespeare, so that their normalizer
// charsmaps (nmt_nfkc: a 240 KB double array) are the library's.
class LinesIterator : public sentencepiece::SentenceIterator {
public:
    explicit LinesIterator(const std::string& text) : in_(text) { Next(); }
    bool done() const override { return done_; }
    void Next() override { done_ = !std::getline(in_, line_); }
    const std::string& value() const override { return line_; }
    sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

private:
    std::istringstream in_;
    std::string line_;
    bool done_ = false;
};
std::string train(const std::string& args) {
    LinesIterator lines(read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 60000));
    std::string model;
    auto status = sentencepiece::SentencePieceTrainer::Train(args + " --minloglevel=2", &lines, &model);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    return model;
}
const std::string& unigram_nfkc_model() {
    static const std::string model =
        train("--model_type=unigram --vocab_size=400 --hard_vocab_limit=false --normalization_rule_name=nmt_nfkc");
    return model;
}
const std::string& bpe_nfkc_cf_model() {
    // Every setting the model keeps that Llama's leaves at its default.
    static const std::string model = train(
        "--model_type=bpe --vocab_size=400 --normalization_rule_name=nmt_nfkc_cf --byte_fallback=true "
        "--user_defined_symbols=<sep>,ROMEO --control_symbols=<ctl> --pad_id=3 --unk_id=4 --bos_id=0 --eos_id=1 "
        "--unk_piece=[UNK] --bos_piece=[BOS] --eos_piece=[EOS] --pad_piece=[PAD] --unk_surface=<?> "
        "--treat_whitespace_as_suffix=true --remove_extra_whitespaces=true");
    return model;
}

// The precompiled_charsmap inside serialized bytes (found by content, to damage it in place).
size_t charsmap_offset(const std::string& bytes, const std::string& charsmap) {
    const size_t at = bytes.find(charsmap);
    REQUIRE(at != std::string::npos);
    return at;
}

// darts-clone double arrays made by hand, to test the charsmap check on shapes the trainer
// never makes. Unused units get a label that no base of these tries (all multiples of 256)
// can match, as darts-clone does.
struct HandTrie {
    std::vector<uint32_t> units;
    explicit HandTrie(size_t blocks) : units(256 * blocks) {
        for (size_t i = 0; i < units.size(); i++) units[i] = (uint32_t(i) & 0xFF) ^ 1;
    }
    void root(size_t base) { units[0] = uint32_t(base) << 10; }
    // From `base`, byte c leads to `next`; with a match whose replacement is at strings + value.
    void edge(size_t base, uint8_t c, size_t next, bool match, uint32_t value = 0) {
        const size_t child = base ^ c;
        units[child] = uint32_t(child ^ next) << 10 | (match ? 1u << 8 : 0) | c;
        if (match) units[next] = (1u << 31) | value;
    }
    std::string blob(const std::string& strings) const {
        std::string out;
        auto put = [&](uint32_t v) {
            for (int i = 0; i < 4; i++) out.push_back(char(uint8_t(v >> (8 * i))));
        };
        put(uint32_t(4 * units.size()));
        for (uint32_t u : units) put(u);
        return out + strings;
    }
};
// A trie that maps "a" repeated 1..length times: each repeat one more match, all to strings[0].
std::string chain_of_a(int length) {
    HandTrie t(length + 2);
    t.root(256);
    for (int j = 0; j < length; j++) t.edge(256 * (j + 1), 'a', 256 * (j + 2), true);
    return t.blob(std::string("x\0", 2));
}

SPM small_model() {
    static const SPM m = parse_ok(read_text(kSmall));
    return m;
}

// The model fails our checks; and if `library_refuses`, the library refuses it too.
void check_refused(const SPM& m, bool library_refuses) {
    const std::string bytes = serialize_sentencepiece_model(m);
    SPM parsed;
    CHECK(parse_sentencepiece_model(bytes, &parsed) != "");
    CHECK(check_sentencepiece_model(m) != "");
    if (library_refuses) CHECK_FALSE(library_loads(bytes));
}

}  // namespace

TEST_CASE("sentencepiece_model: the Llama-2 vocabulary parses as the library reads it") {
    const std::string bytes = read_text(kLlama2);
    SPM m = parse_ok(bytes);
    auto sp = load_library(bytes);
    REQUIRE(m.pieces.size() == 32000);
    check_same_as_library(m, *sp);
    // Facts of the file, read from it with a throwaway wire-format decoder in python.
    CHECK(m.model_type == SPM::kBpe);
    CHECK(m.byte_fallback);
    CHECK(m.vocab_size == 32000);
    CHECK(m.normalizer.name == "identity");
    CHECK(m.normalizer.precompiled_charsmap.empty());
    CHECK(m.normalizer.add_dummy_prefix);
    CHECK_FALSE(m.normalizer.remove_extra_whitespaces);
    CHECK(m.normalizer.escape_whitespaces);  // absent from the file: the proto default
    CHECK_FALSE(m.has_denormalizer);
    CHECK(m.pad_id == -1);  // stored as a 10-byte varint
}

TEST_CASE("sentencepiece_model: the other committed tokenizers parse as the library reads them") {
    for (const char* path : {kSmall, "tests/data/tiny-shakespeare-tokenizer.model"}) {
        INFO(path);
        const std::string bytes = read_text(path);
        check_same_as_library(parse_ok(bytes), *load_library(bytes));
    }
}

TEST_CASE("sentencepiece_model: a written-back model tokenizes the goldens as python sentencepiece did") {
    for (const char* name : {"llama2-tokenizer.model", "tiny-shakespeare-tokenizer.model"}) {
        const std::string original = read_text(std::string("tests/data/") + name);
        SPM m = parse_ok(original);
        const std::string written = serialize_sentencepiece_model(m);
        auto sp = load_library(written);
        check_same_as_library(m, *sp);
        check_goldens(*sp, name);
        check_same_encoding(*load_library(original), *sp, 300, 1);
        // Our own reader reads our writing back unchanged.
        SPM again = parse_ok(written);
        CHECK(serialize_sentencepiece_model(again) == written);
    }
}

TEST_CASE("sentencepiece_model: a GGUF vocabulary becomes a model that tokenizes the goldens") {
    for (const char* name : {"llama2-tokenizer.model", "tiny-shakespeare-tokenizer.model"}) {
        INFO(name);
        auto original = load_library(read_text(std::string("tests/data/") + name));
        GgufVocab v = gguf_vocab_from_library(*original);
        std::string bytes;
        // tokenizer.ggml.add_space_prefix true, .remove_extra_whitespaces false: Llama's.
        REQUIRE(build(v, true, false, &bytes) == "");
        auto sp = load_library(bytes);
        check_goldens(*sp, name);
        check_same_encoding(*original, *sp, 300, 2);
        SPM m = parse_ok(bytes);
        CHECK(m.model_type == SPM::kBpe);
        CHECK(m.byte_fallback);
        check_same_as_library(m, *sp);
    }
}

TEST_CASE("sentencepiece_model: a GGUF vocabulary of the small parity tokenizer encodes as the original") {
    auto original = load_library(read_text(kSmall));
    std::string bytes;
    REQUIRE(build(gguf_vocab_from_library(*original), true, false, &bytes) == "");
    check_same_encoding(*original, *load_library(bytes), 3000, 3);
}

TEST_CASE("sentencepiece_model: the GGUF whitespace flags reach the library") {
    auto original = load_library(read_text(kLlama2));
    GgufVocab v = gguf_vocab_from_library(*original);
    std::string bytes;
    // Without the space prefix, "Hello" is what " Hello" is with it.
    REQUIRE(build(v, false, false, &bytes) == "");
    auto no_prefix = load_library(bytes);
    CHECK(no_prefix->EncodeAsIds(" Hello world") == original->EncodeAsIds("Hello world"));
    CHECK(no_prefix->EncodeAsIds("Hello world") != original->EncodeAsIds("Hello world"));
    // Removing extra whitespace, "  a   b  " is what "a b" is without.
    REQUIRE(build(v, true, true, &bytes) == "");
    auto squeezed = load_library(bytes);
    CHECK(squeezed->EncodeAsIds("  Hello   big\t world  ") == original->EncodeAsIds("Hello big\t world"));
    CHECK(original->EncodeAsIds("  Hello   big\t world  ") != original->EncodeAsIds("Hello big\t world"));
}

TEST_CASE("sentencepiece_model: a GGUF pad id may name the unknown or the end piece") {
    auto original = load_library(read_text(kSmall));
    GgufVocab v = gguf_vocab_from_library(*original);
    std::string bytes;
    v.pad_id = v.unk_id;  // as many Llama GGUFs say
    REQUIRE(build(v, true, false, &bytes) == "");
    CHECK(parse_ok(bytes).pad_id == v.unk_id);
    CHECK(load_library(bytes)->pad_id() == -1);  // SentencePiece only reports control pieces
    v.pad_id = v.eos_id;
    REQUIRE(build(v, true, false, &bytes) == "");
    CHECK(load_library(bytes)->pad_id() == v.eos_id);
}

TEST_CASE("sentencepiece_model: GGUF vocabularies that cannot make a model are refused") {
    auto original = load_library(read_text(kSmall));
    const GgufVocab good = gguf_vocab_from_library(*original);
    REQUIRE(build(good) == "");
    auto refused = [&](auto change) {
        GgufVocab v = good;
        change(v);
        return build(v) != "";
    };
    CHECK(refused([](GgufVocab& v) { v.scores.pop_back(); }));
    CHECK(refused([](GgufVocab& v) { v.types.push_back(1); }));
    CHECK(refused([](GgufVocab& v) { v.tokens.clear(), v.scores.clear(), v.types.clear(); }));
    CHECK(refused([](GgufVocab& v) { v.unk_id = -1; }));
    CHECK(refused([](GgufVocab& v) { v.unk_id = int(v.tokens.size()); }));
    CHECK(refused([](GgufVocab& v) { v.bos_id = int(v.tokens.size()); }));
    CHECK(refused([](GgufVocab& v) { v.eos_id = -2; }));
    CHECK(refused([](GgufVocab& v) { v.bos_id = 300; }));  // a normal piece
    CHECK(refused([](GgufVocab& v) { v.pad_id = 300; }));
    CHECK(refused([](GgufVocab& v) { v.unk_id = v.bos_id; }));  // not the unknown piece
    CHECK(refused([](GgufVocab& v) { v.types[0] = 1; }));       // no unknown piece at all
    CHECK(refused([](GgufVocab& v) { v.types[300] = 2; }));     // two
    CHECK(refused([](GgufVocab& v) { v.types[300] = 0; }));     // llama.cpp's "undefined"
    CHECK(refused([](GgufVocab& v) { v.types[300] = 7; }));
    CHECK(refused([](GgufVocab& v) { v.tokens[301] = v.tokens[300]; }));
    CHECK(refused([](GgufVocab& v) { v.tokens[300] = ""; }));
    CHECK(refused([](GgufVocab& v) { v.tokens[300] = std::string("a\0b", 3); }));
    CHECK(refused([](GgufVocab& v) { v.scores[300] = std::nanf(""); }));
    CHECK(refused([](GgufVocab& v) { v.tokens[3 + 0x4a] = "<0x4a>"; }));  // lower case
    CHECK(refused([](GgufVocab& v) { v.types[3 + 0x4a] = 1; }));          // 255 byte pieces
    // A byte piece's text as a normal piece too is what the library allows: separate maps.
    CHECK_FALSE(refused([](GgufVocab& v) { v.tokens[300] = "<0x4A>"; }));
    CHECK_FALSE(refused([](GgufVocab& v) { v.scores[300] = -std::numeric_limits<float>::infinity(); }));
}

TEST_CASE("sentencepiece_model: trained models with nmt_nfkc charsmaps parse and write back exactly") {
    for (const std::string* model : {&unigram_nfkc_model(), &bpe_nfkc_cf_model()}) {
        auto trained = load_library(*model);
        SPM m = parse_ok(*model);
        check_same_as_library(m, *trained);
        CHECK(m.normalizer.precompiled_charsmap.size() > 100000);
        CHECK(check_precompiled_charsmap(m.normalizer.precompiled_charsmap) == "");
        auto written = load_library(serialize_sentencepiece_model(m));
        check_same_as_library(m, *written);
        check_same_encoding(*trained, *written, 1000, 4);
        // Full-width letters are what the charsmap is for.
        CHECK(written->EncodeAsIds("ＨＥＬＬＯ ｗｏｒｌｄ") == trained->EncodeAsIds("HELLO world"));
    }
    SPM bpe = parse_ok(bpe_nfkc_cf_model());
    CHECK(bpe.model_type == SPM::kBpe);
    CHECK(bpe.treat_whitespace_as_suffix);
    CHECK(bpe.unk_surface == "<?>");
    CHECK(bpe.unk_piece == "[UNK]");
    CHECK(parse_ok(unigram_nfkc_model()).model_type == SPM::kUnigram);
}

TEST_CASE("sentencepiece_model: a denormalizer is kept") {
    SPM m = small_model();
    m.has_denormalizer = true;
    m.denormalizer.name = "nfkc_as_denormalizer";
    m.denormalizer.precompiled_charsmap = parse_ok(unigram_nfkc_model()).normalizer.precompiled_charsmap;
    m.denormalizer.add_dummy_prefix = false;
    const std::string bytes = serialize_sentencepiece_model(m);
    SPM back = parse_ok(bytes);
    CHECK(back.has_denormalizer);
    CHECK(back.denormalizer.name == m.denormalizer.name);
    CHECK(back.denormalizer.precompiled_charsmap == m.denormalizer.precompiled_charsmap);
    CHECK_FALSE(back.denormalizer.add_dummy_prefix);
    // Decoding now runs the pieces through NFKC: a full-width piece comes out narrow.
    auto sp = load_library(bytes);
    const std::vector<int> ids = sp->EncodeAsIds("ＡＢＣ");
    CHECK(sp->DecodeIds(ids) == "ABC");
    CHECK(load_library(read_text(kSmall))->DecodeIds(ids) == "ＡＢＣ");
}

TEST_CASE("sentencepiece_model: a second occurrence of a message merges into the first, as protobuf does") {
    const std::string bytes = read_text(kSmall);
    // NormalizerSpec { add_dummy_prefix: false } appended: the name stays, the flag changes.
    const std::string merged = bytes + std::string("\x1a\x02\x18\x00", 4);
    SPM m = parse_ok(merged);
    CHECK(m.normalizer.name == "identity");
    CHECK_FALSE(m.normalizer.add_dummy_prefix);
    auto sp = load_library(merged);
    CHECK(sp->EncodeAsIds(" Hello") == load_library(bytes)->EncodeAsIds("Hello"));
    CHECK(load_library(serialize_sentencepiece_model(m))->EncodeAsIds("Hello") == sp->EncodeAsIds("Hello"));
    // Unknown fields of every wire type but groups are skipped, as the library skips them.
    const std::string unknown = bytes + std::string("\x38\x05", 2) + "\x39" + std::string(8, '\x7f') + "\x3d\x01\x02\x03\x04" +
                                std::string(
                                    "\xc2\x0c\x03"
                                    "abc",
                                    6);
    check_same_as_library(parse_ok(unknown), *load_library(unknown));
}

TEST_CASE("sentencepiece_model: every truncation of a model is refused or loads in the library") {
    const std::string bytes = read_text(kSmall);
    int accepted = 0;
    for (size_t length = 0; length < bytes.size(); length++) {
        const std::string cut = bytes.substr(0, length);
        SPM m;
        if (parse_sentencepiece_model(cut, &m) != "") continue;
        accepted++;
        INFO("length " << length);
        check_same_as_library(m, *load_library(cut));
    }
    // A cut just before the NormalizerSpec leaves a model with the default normalizer.
    CHECK(accepted >= 1);
}

TEST_CASE("sentencepiece_model: random bit flips are refused or load in the library") {
    const std::string bytes = read_text(kSmall);
    std::mt19937 rng(5);
    int accepted = 0;
    for (int trial = 0; trial < 3000; trial++) {
        std::string damaged = bytes;
        const int flips = 1 + rng() % 4;
        for (int i = 0; i < flips; i++) damaged[rng() % damaged.size()] ^= char(1 << (rng() % 8));
        SPM m;
        if (parse_sentencepiece_model(damaged, &m) != "") continue;
        accepted++;
        INFO("trial " << trial);
        auto sp = load_library(damaged);
        check_same_as_library(m, *sp);
        std::mt19937 text_rng(trial);
        for (int i = 0; i < 5; i++) sp->DecodeIds(sp->EncodeAsIds(random_text(text_rng)));
    }
    CHECK(accepted > 0);  // flips in scores and piece text keep a model sound
}

TEST_CASE("sentencepiece_model: malformed wire format is refused") {
    const std::vector<std::string> malformed = {
        std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10),  // a piece of 2^63 bytes
        std::string("\x0a\x80\x80\x80\x80\x10", 6),                   // 2^32 bytes
        std::string("\x0a", 1),                                       // no length
        std::string("\x0a\x05"
                    "ab",
                    4),                                          // 5 bytes claimed, 2 there
        std::string("\x38") + std::string(10, '\xff') + "\x01",  // an 11-byte varint
        std::string("\x38") + std::string(9, '\xff') + "\x02",   // a 10-byte varint past 64 bits
        std::string("\x80\x80\x80\x80\x80\x01\x00", 7),          // a tag past 32 bits
        std::string("\x00\x00", 2),                              // field number 0
        std::string("\x0b\x0c", 2),                              // a group (wire type 3 ... 4)
        std::string("\x0c", 1),                                  // a lone end-group
        std::string("\x0e\x00", 2),
        std::string("\x0f\x00", 2),                              // wire types 6 and 7
        std::string("\x39\x01\x02", 3),                          // truncated fixed64
        std::string("\x3d\x01", 2),                              // truncated fixed32
        std::string("\x08\x01", 2),                              // pieces as a varint
        std::string("\x0a\x02\x10\x01", 4),                      // a score as a varint
        std::string("\x0a\x03\x1a\x01x", 5),                     // a type as bytes
        std::string("\x0a\x03\x0a\x05x", 5),                     // a piece's own length wrong
        std::string("\x12\x03\xca\x02\x00", 5),                  // bos_id as bytes
        std::string("\x12\x07\xc8\x02\x80\x80\x80\x80\x20", 9),  // bos_id = 2^33: not an int32
        std::string("\x12\x02\xa8\x02", 4),                      // a truncated TrainerSpec field
        std::string("\x1a\x02\x12\x05", 4),                      // a charsmap longer than its message
        std::string(""),                                         // no pieces
    };
    for (const std::string& bytes : malformed) {
        SPM m;
        std::string err = parse_sentencepiece_model(bytes, &m);
        INFO("bytes of size " << bytes.size());
        CHECK(err != "");
        CHECK(err.find('\n') == std::string::npos);
    }
    // The same damage at the end of a sound model.
    const std::string good = read_text(kSmall);
    for (const std::string& bytes : malformed) {
        SPM m;
        if (bytes.empty()) continue;
        CHECK(parse_sentencepiece_model(good + bytes, &m) != "");
    }
}

TEST_CASE("sentencepiece_model: more pieces than the cap are refused") {
    // 2^22 + 1 empty pieces, two bytes each.
    std::string bytes;
    for (int i = 0; i < (1 << 22) + 1; i++) bytes += std::string("\x0a\x00", 2);
    SPM m;
    std::string err = parse_sentencepiece_model(bytes, &m);
    CHECK(err.find("more than") != std::string::npos);
}

TEST_CASE("sentencepiece_model: unsound models are refused, where the library would fail or mislead") {
    const SPM good = small_model();
    REQUIRE(check_sentencepiece_model(good) == "");
    auto with = [&](auto change) {
        SPM m = good;
        change(m);
        return m;
    };
    check_refused(with([](SPM& m) { m.model_type = 3; }), false);  // WORD: the library would run it
    // protobuf reads an enum value it does not know as absent: UNIGRAM, for the library.
    check_refused(with([](SPM& m) { m.model_type = 0; }), false);
    check_refused(with([](SPM& m) { m.pieces.clear(); }), true);
    check_refused(with([](SPM& m) { m.pieces[300].piece = ""; }), true);
    check_refused(with([](SPM& m) { m.pieces[301].piece = m.pieces[300].piece; }), true);
    check_refused(with([](SPM& m) { m.pieces[300].type = SPM::kUnknown; }), true);
    check_refused(with([](SPM& m) {
                      m.pieces[0].type = SPM::kControl;
                      m.unk_id = 300;
                      m.pieces[300].type = SPM::kUnknown;
                  }),
                  false);
    check_refused(with([](SPM& m) { m.pieces[0].type = SPM::kNormal; }), true);
    check_refused(with([](SPM& m) { m.byte_fallback = false; }), true);
    check_refused(with([](SPM& m) { m.pieces[3 + 0x4a].piece = "<0x4a>"; }), true);
    check_refused(with([](SPM& m) { m.pieces[3 + 0x4a].type = SPM::kNormal; }), true);
    check_refused(with([](SPM& m) { m.pieces[300].type = 0; }), false);
    check_refused(with([](SPM& m) { m.pieces[300].type = 7; }), false);
    check_refused(with([](SPM& m) { m.pieces[300].score = std::nanf(""); }), false);
    check_refused(with([](SPM& m) { m.pieces[300].piece += std::string(1, '\0'); }), false);
    check_refused(with([](SPM& m) { m.unk_id = -1; }), false);
    check_refused(with([](SPM& m) { m.bos_id = 512; }), false);
    check_refused(with([](SPM& m) { m.eos_id = -3; }), false);
    check_refused(with([](SPM& m) { m.bos_id = 300; }), false);
    check_refused(with([](SPM& m) { m.pad_id = 300; }), false);
    check_refused(with([](SPM& m) { m.pad_id = 0; }), false);  // the unknown piece, but named "<pad>"
    // bos_id -1 while "<s>" is a control piece: the library would report 1.
    SPM no_bos = with([](SPM& m) { m.bos_id = -1; });
    check_refused(no_bos, false);
    CHECK(load_library(serialize_sentencepiece_model(no_bos))->bos_id() == 1);
    // Renaming a special piece: the library would look for "<bos>" and report no BOS at all.
    SPM renamed = with([](SPM& m) { m.bos_piece = "<bos>"; });
    check_refused(renamed, false);
    CHECK(load_library(serialize_sentencepiece_model(renamed))->bos_id() == -1);
    check_refused(with([](SPM& m) {
                      m.normalizer.precompiled_charsmap = std::string(
                          "\x10\x00\x00\x00"
                          "abc",
                          7);
                  }),
                  false);
    check_refused(with([](SPM& m) {
                      m.has_denormalizer = true;
                      m.denormalizer.precompiled_charsmap = "junk";
                  }),
                  false);
    // What is allowed: pad as the unknown piece or as eos, and bos the same as eos.
    CHECK(check_sentencepiece_model(with([](SPM& m) { m.pad_id = 0, m.pad_piece = "<unk>"; })) == "");
    CHECK(check_sentencepiece_model(with([](SPM& m) { m.pad_id = 2, m.pad_piece = "</s>"; })) == "");
    CHECK(check_sentencepiece_model(with([](SPM& m) { m.bos_id = 2, m.bos_piece = "</s>"; })) == "");
}

TEST_CASE("sentencepiece_model: a hand-made charsmap is read the way the library reads it") {
    // "a" -> "x": with it, the small model encodes "a" and "bab" as it encodes "x" and "bxb".
    SPM m = small_model();
    m.normalizer.precompiled_charsmap = chain_of_a(1);
    REQUIRE(check_precompiled_charsmap(m.normalizer.precompiled_charsmap) == "");
    auto original = load_library(read_text(kSmall));
    auto mapped = load_library(serialize_sentencepiece_model(m));
    CHECK(mapped->EncodeAsIds("a") == original->EncodeAsIds("x"));
    CHECK(mapped->EncodeAsIds("bab ca") == original->EncodeAsIds("bxb cx"));
    // 32 matches along one input are what the library's normalizer has room for.
    m.normalizer.precompiled_charsmap = chain_of_a(32);
    REQUIRE(check_precompiled_charsmap(m.normalizer.precompiled_charsmap) == "");
    mapped = load_library(serialize_sentencepiece_model(m));
    CHECK(mapped->EncodeAsIds(std::string(40, 'a')) == original->EncodeAsIds("xx"));  // 32 a's, then 8
}

TEST_CASE("sentencepiece_model: damaged charsmaps are refused") {
    auto refused = [](const std::string& blob) {
        std::string err = check_precompiled_charsmap(blob);
        INFO(err);
        return err != "" && err.find('\n') == std::string::npos;
    };
    CHECK(check_precompiled_charsmap("") == "");
    CHECK(refused("abc"));  // no room for the trie size
    CHECK(
        refused(std::string("\x00\x00\x00\x00"
                            "x\0",
                            6)));  // an empty trie
    CHECK(
        refused(std::string("\x06\x00\x00\x00"
                            "123456",
                            10)));  // not whole units
    CHECK(
        refused(std::string("\x08\x00\x00\x00"
                            "1234",
                            8)));    // more trie than blob
    CHECK(refused(chain_of_a(33)));  // more matches than the library holds
    {                                // the root's block lies past the array
        HandTrie t(1);
        t.root(256);
        CHECK(refused(t.blob(std::string("x\0", 2))));
    }
    {  // an edge to a base past the array
        HandTrie t(2);
        t.root(256);
        t.edge(256, 'a', 512, false);
        CHECK(refused(t.blob(std::string("x\0", 2))));
    }
    {  // a cycle: "aaaa..." would match without end
        HandTrie t(2);
        t.root(256);
        t.edge(256, 'a', 256, true);
        CHECK(refused(t.blob(std::string("x\0", 2))));
    }
    {  // a replacement outside the strings, or not NUL-terminated inside them
        HandTrie t(3);
        t.root(256);
        t.edge(256, 'a', 512, true, 2);
        CHECK(refused(t.blob(std::string("x\0", 2))));
        CHECK(refused(t.blob(std::string("x\0yz", 4))));
        CHECK_FALSE(refused(t.blob(std::string("x\0y\0", 4))));
        CHECK(refused(t.blob("")));
    }
    // SentencePiece's own charsmap, cut short or with its last NUL gone.
    const std::string genuine = parse_ok(unigram_nfkc_model()).normalizer.precompiled_charsmap;
    CHECK(refused(genuine.substr(0, genuine.size() - 1)));
    CHECK(refused(genuine.substr(0, genuine.size() / 2)));
    std::string no_trailing_nul = genuine;
    no_trailing_nul.back() = 'x';
    CHECK(refused(no_trailing_nul));
}

TEST_CASE("sentencepiece_model: bit flips in a real charsmap are refused or safe to run") {
    const std::string& bytes = unigram_nfkc_model();
    const std::string charsmap = parse_ok(bytes).normalizer.precompiled_charsmap;
    const size_t at = charsmap_offset(bytes, charsmap);
    std::mt19937 rng(6);
    int accepted = 0, refused = 0;
    for (int trial = 0; trial < 150; trial++) {
        std::string damaged = bytes;
        // In the trie, where the offsets and labels are.
        const size_t trie_bytes = uint8_t(charsmap[0]) | uint8_t(charsmap[1]) << 8 | uint8_t(charsmap[2]) << 16;
        for (int i = 0; i < 3; i++) damaged[at + 4 + rng() % trie_bytes] ^= char(1 << (rng() % 8));
        SPM m;
        if (parse_sentencepiece_model(damaged, &m) != "") {
            refused++;
            continue;
        }
        accepted++;
        auto sp = load_library(damaged);
        std::mt19937 text_rng(trial);
        for (int i = 0; i < 20; i++) sp->EncodeAsIds(random_text(text_rng));
    }
    CHECK(accepted > 0);
    CHECK(refused > 0);
}
