// SentencePiece's ModelProto (the bytes of a tokenizer.model) without protoc: a reader and
// a writer of the protobuf wire format for the part of the schema that decides how text
// is tokenized, plus a builder for the vocabulary arrays a GGUF file holds instead.
//
// Field numbers and defaults are those of google/sentencepiece's src/sentencepiece_model.proto.
// Fields that only steer training (input, character_coverage, split_digits,
// allow_whitespace_only_pieces, ...) are skipped: SentencePieceProcessor (0.1.97, and the
// current sources) reads nothing of TrainerSpec but model_type, byte_fallback,
// treat_whitespace_as_suffix, unk_surface and the four *_piece names. The ids are kept
// because GGUF export needs them; the library itself finds bos/eos/unk/pad by piece name.
// self_test_data is skipped too, so a model written back has no self test.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

struct SentencePieceModel {
    // ModelProto.SentencePiece.Type; GGUF's tokenizer.ggml.token_type uses the same numbers.
    enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
    // TrainerSpec.ModelType; hearth accepts only these two (WORD = 3 and CHAR = 4 are refused).
    enum ModelType { kUnigram = 1, kBpe = 2 };

    struct Piece {
        std::string piece;
        float score = 0.0f;
        int type = kNormal;
    };

    // NormalizerSpec; the defaults are the proto's.
    struct Normalizer {
        std::string name;
        // u32 trie size, darts-clone double array, NUL-terminated replacement strings.
        std::string precompiled_charsmap;
        bool add_dummy_prefix = true;
        bool remove_extra_whitespaces = true;
        bool escape_whitespaces = true;
        std::string normalization_rule_tsv;  // training only, kept for a faithful copy
    };

    std::vector<Piece> pieces;

    // TrainerSpec, with the proto's defaults.
    int model_type = kUnigram;
    int vocab_size = 8000;  // what training asked for; pieces.size() is what there is
    bool byte_fallback = false;
    bool treat_whitespace_as_suffix = false;
    int unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // -1: none (not allowed for unk)
    // The library reads an empty name as the default, so the parser stores the default then.
    std::string unk_piece = "<unk>", bos_piece = "<s>", eos_piece = "</s>", pad_piece = "<pad>";
    std::string unk_surface = " \xE2\x81\x87 ";  // what decoding prints for <unk>

    Normalizer normalizer;
    bool has_denormalizer = false;  // the library uses it only if its charsmap is non-empty
    Normalizer denormalizer;
};

// The byte of a piece spelled "<0xXX>" with upper-case hex digits (the only spelling
// SentencePiece's PieceToByte accepts, and the only one parse_sentencepiece_model lets a
// byte piece have), else -1.
int byte_piece_value(const std::string& piece);

// Reads a serialized ModelProto and checks it (check_sentencepiece_model). "" on success,
// else a one-line reason; *out is then unspecified. Never reads out of bounds, whatever
// the bytes: meant to run on untrusted files before SentencePiece sees them.
std::string parse_sentencepiece_model(const std::string& bytes, SentencePieceModel* out);

// The checks parse applies after reading: everything that would make SentencePiece fail to
// load, crash, or report other special ids than the model states (the library finds them by
// name: bos/eos/pad must be control pieces named bos_piece/eos_piece/pad_piece, except that
// pad may be the unknown piece). "" if the model is sound.
std::string check_sentencepiece_model(const SentencePieceModel& m);

// Checks a NormalizerSpec.precompiled_charsmap as the library's normalizer will walk it.
// "" if it is empty (no normalization) or sound.
std::string check_precompiled_charsmap(const std::string& blob);

// Writes the model as a serialized ModelProto, every kept field explicitly (no reliance on
// defaults). It does not check: run check_sentencepiece_model first for a loadable result.
std::string serialize_sentencepiece_model(const SentencePieceModel& m);

// A tokenizer.model made from a GGUF vocabulary: tokenizer.ggml.tokens, .scores,
// .token_type, the special ids (-1 for none; unk must be set) and
// tokenizer.ggml.add_space_prefix / .remove_extra_whitespaces (GGUF defaults: true, false;
// the caller applies them). The model is what a Llama tokenizer.model is: BPE, identity
// normalizer, whitespace escaped to U+2581, byte_fallback exactly when there are byte
// pieces. The special pieces are named after the tokens at those ids. bos and eos must be
// control pieces; pad may also be the unknown piece (GGUFs often give unk's id as pad's),
// which SentencePiece's pad_id() then reports as -1.
// "" and the model in *out, or why the arrays cannot make one.
std::string sentencepiece_model_from_vocab(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                                           const std::vector<int32_t>& types, int unk_id, int bos_id, int eos_id, int pad_id,
                                           bool add_dummy_prefix, bool remove_extra_whitespaces, SentencePieceModel* out);
// The same, serialized, ready for SentencePieceProcessor::LoadFromSerializedProto.
std::string sentencepiece_model_from_vocab(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                                           const std::vector<int32_t>& types, int unk_id, int bos_id, int eos_id, int pad_id,
                                           bool add_dummy_prefix, bool remove_extra_whitespaces, std::string* out);

}  // namespace hearth
