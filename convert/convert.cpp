#include "convert/convert.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/printable.h"
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "kernels/quant.h"
#include "kernels/quant_types.h"
#include "kernels/rows_x8.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "model/tokenizer_metadata.h"

namespace hearth {

// Each mix's name and llama.cpp's LLAMA_FTYPE for it (include/llama.h), which a GGUF file
// states as general.file_type. q4_k (q5_k) is all Q4_K (Q5_K) but where a row needs a fallback:
// llama.cpp has no such type, and its nearest, "mostly Q4_K" ("Q5_K"), is Q4_K_S (Q5_K_S).
static const struct {
    const char* name;
    OutputMix mix;
    int llama_ftype;
} kMixes[] = {{"f32", OutputMix::F32, 0},    {"f16", OutputMix::F16, 1},        {"q8_0", OutputMix::Q8_0, 7},
              {"q4_0", OutputMix::Q4_0, 2},  {"q4_k", OutputMix::Q4_K, 14},     {"q5_k", OutputMix::Q5_K, 16},
              {"q6_k", OutputMix::Q6_K, 18}, {"q4_k_m", OutputMix::Q4_K_M, 15}, {"q5_k_m", OutputMix::Q5_K_M, 17},
              {"keep", OutputMix::Keep, -1}};

bool parse_output_mix(const std::string& name, OutputMix* out) {
    const std::string lower = ascii_lower(name);
    for (auto& m : kMixes)
        if (lower == m.name) {
            *out = m.mix;
            return true;
        }
    return false;
}

const char* output_mix_name(OutputMix mix) {
    for (auto& m : kMixes)
        if (m.mix == mix) return m.name;
    return "?";
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third
// one between, get more bits in attn_v and ffn_down under Q4_K_M and Q5_K_M.
static bool use_more_bits(int layer, int n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

static int layer_of(const std::string& name) {
    if (name.compare(0, 4, "blk.") != 0) return -1;
    return std::atoi(name.c_str() + 4);
}

// For `keep`: the type a tensor is stored in. Every quantized type quantize reads, and bf16, run
// computes with as it is (kernels/quant_types.h; bf16 was once made f16, which has less range).
// A type read but not computed with would become q8_0: its values lie on another format's grid,
// which no 4-6 bit format holds (re-quantized to q6_K, a q5_K tensor once gained as much error
// again, 1.7% relative RMS, as quantizing the original weights to q6_K gives; q8_0 adds 0.4%).
static uint32_t nearest_storage_type(uint32_t type) { return type_is_storage(type) ? type : TYPE_Q8_0; }

// The mix's type for a tensor, before the fallback for rows its blocks do not divide.
static uint32_t mix_type_for(OutputMix mix, const SourceTensor& t, int n_layers, CheckpointFormat format, bool tied_embeddings) {
    if (t.n_dims == 1) return TYPE_F32;
    // The output projection: output.weight, or the token embedding that stands in for it.
    const bool is_output = t.name == "output.weight" || (tied_embeddings && t.name == "token_embd.weight");
    uint32_t want = TYPE_F16;
    switch (mix) {
        case OutputMix::Keep: want = format == CheckpointFormat::gguf ? t.type : nearest_storage_type(t.type); break;
        case OutputMix::F32: want = TYPE_F32; break;
        case OutputMix::F16: want = TYPE_F16; break;
        case OutputMix::Q8_0: want = TYPE_Q8_0; break;
        case OutputMix::Q4_0:
            // As llama.cpp's Q4_0: the output projection, the most sensitive matrix, in Q6_K.
            want = is_output ? TYPE_Q6_K : TYPE_Q4_0;
            break;
        case OutputMix::Q4_K: want = TYPE_Q4_K; break;
        case OutputMix::Q5_K: want = TYPE_Q5_K; break;
        case OutputMix::Q6_K: want = TYPE_Q6_K; break;
        case OutputMix::Q4_K_M:
        case OutputMix::Q5_K_M: {
            want = mix == OutputMix::Q4_K_M ? TYPE_Q4_K : TYPE_Q5_K;
            const int layer = layer_of(t.name);
            if (is_output || t.name == "token_embd.weight") want = TYPE_Q6_K;
            if ((ends_with(t.name, "attn_v.weight") || ends_with(t.name, "ffn_down.weight")) && use_more_bits(layer, n_layers))
                want = TYPE_Q6_K;
            break;
        }
    }
    return want;
}

uint32_t tensor_type_for(OutputMix mix, const SourceTensor& t, int n_layers, CheckpointFormat format, bool tied_embeddings) {
    uint32_t want = mix_type_for(mix, t, n_layers, format, tied_embeddings);
    const uint64_t cols = t.cols();
    if (cols % type_block_size(want) != 0)
        want = cols % type_block_size(TYPE_Q8_0) == 0 && want != TYPE_F32 ? TYPE_Q8_0 : TYPE_F16;
    return want;
}

// A hearth file stores the matrices of every type with an interleaved row in the kernel table
// (kernel_layout: q4_0, q8_0, q4_K and q5_K now) with their rows interleaved by 8, the layout
// the kernels of every ISA read (docs/format.md): run computes from the mapping in
// place, with nothing to copy at load. Not the token embedding, whose rows are looked up one
// at a time (and which, tied, is the output projection too). GGUF has the plain layout only.
Layout tensor_layout_for(const std::string& name, uint32_t type, CheckpointFormat format) {
    if (format != CheckpointFormat::hearth || name == "token_embd.weight") return Layout::rows;
    return kernel_layout(type);
}

// The LLAMA_FTYPE llama.cpp's loader guesses when a file has no general.file_type, from its
// most common type (src/llama-model-loader.cpp); -1 for a type it has none for.
static int llama_ftype_guess(uint32_t type) {
    switch (type) {
        case TYPE_F32: return 0;
        case TYPE_F16: return 1;
        case TYPE_BF16: return 32;
        case TYPE_Q4_0: return 2;
        case TYPE_Q4_1: return 3;
        case TYPE_Q5_0: return 8;
        case TYPE_Q5_1: return 9;
        case TYPE_Q8_0: return 7;
        case TYPE_Q2_K: return 10;
        case TYPE_Q3_K: return 12;  // Q3_K_M
        case TYPE_Q4_K: return 15;  // Q4_K_M
        case TYPE_Q5_K: return 17;  // Q5_K_M
        case TYPE_Q6_K: return 18;
        case TYPE_IQ4_NL: return 25;
        case TYPE_IQ4_XS: return 30;
    }
    return -1;
}

int llama_file_type(OutputMix mix, const std::vector<TensorSpec>& tensors) {
    for (auto& m : kMixes)
        if (m.mix == mix && m.llama_ftype >= 0) return m.llama_ftype;
    // keep: the matrices' most common type. llama.cpp counts the f32 norms too, which in a
    // small model can outnumber the matrices of any one type; they say nothing of the mix.
    std::vector<std::pair<uint32_t, int>> counts;
    std::pair<uint32_t, int> most{0, 0};
    for (const TensorSpec& t : tensors) {
        if (t.n_dims < 2) continue;
        auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == t.type; });
        if (it == counts.end()) it = counts.insert(counts.end(), {t.type, 0});
        if (++it->second > most.second) most = *it;
    }
    return most.second ? llama_ftype_guess(most.first) : -1;
}

// Converts rows [r0, r1) of a tensor into `out` (row_bytes each) and accumulates the
// squared error of the stored values against the source values.
static void convert_rows(const SourceTensor& t, uint32_t type, uint64_t r0, uint64_t r1, uint8_t* out, double* err2,
                         double* ref2) {
    const int cols = int(t.cols());
    const size_t row_bytes = type_row_bytes(type, cols);
    std::vector<float> row(cols), back(cols);
    double e2 = 0, x2 = 0;
    for (uint64_t r = r0; r < r1; r++) {
        read_source_row(t, r, row.data());
        uint8_t* dst = out + (r - r0) * row_bytes;
        type_traits(type)->quantize(row.data(), dst, cols);
        dequantize_row(type, dst, cols, 0, back.data());
        for (int j = 0; j < cols; j++) {
            e2 += double(back[j] - row[j]) * (back[j] - row[j]);
            x2 += double(row[j]) * row[j];
        }
    }
    *err2 += e2;
    *ref2 += x2;
}

// The file's metadata: the configuration and the tokenizer, and for GGUF what llama.cpp reads
// besides (general.file_type, general.quantization_version).
static std::string file_metadata(const ImportedCheckpoint& src, CheckpointFormat format, OutputMix mix,
                                 const std::vector<TensorSpec>& specs, Metadata* meta, std::string* caveat) {
    config_to_metadata(src.config, meta);
    if (format == CheckpointFormat::hearth) {
        tokenizer_to_metadata(src.tokenizer, meta);
        return "";
    }
    std::string err = tokenizer_to_gguf_metadata(src.tokenizer, src.config.vocab_size, meta, caveat);
    if (!err.empty()) return err;
    const int file_type = llama_file_type(mix, specs);
    if (file_type >= 0) meta->set_u32("general.file_type", uint32_t(file_type));
    // ggml's GGML_QNT_VERSION, the version of the quantized blocks' layout; llama.cpp's
    // quantizer writes it into every file it quantizes.
    if (std::any_of(specs.begin(), specs.end(), [](const TensorSpec& t) { return type_block_size(t.type) > 1; }))
        meta->set_u32("general.quantization_version", 2);
    return "";
}

std::string convert_checkpoint(const ImportedCheckpoint& src, const std::string& out_path, CheckpointFormat format, OutputMix mix,
                               bool quiet) {
    const ModelConfig& c = src.config;
    std::string err = validate_config(c);
    if (!err.empty()) return "bad model configuration: " + err;
    std::vector<TensorSpec> specs;
    int fallbacks = 0;  // matrices whose rows the mix's blocks do not divide
    for (const SourceTensor& t : src.tensors) {
        TensorSpec s;
        s.name = t.name;
        s.type = tensor_type_for(mix, t, c.n_layers, format, c.tied_embeddings);
        fallbacks += s.type != mix_type_for(mix, t, c.n_layers, format, c.tied_embeddings);
        s.layout = tensor_layout_for(t.name, s.type, format);
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }
    Metadata meta;
    std::string caveat;
    if (!(err = file_metadata(src, format, mix, specs, &meta, &caveat)).empty()) return err;
    // Refused now if run would refuse the file, before gigabytes of tensors are written;
    // commit()'s check covers the whole file at the end.
    if (!(err = check_model_metadata(meta)).empty()) return "the output would not load: " + err;
    CheckpointWriter writer;
    if (!(err = writer.open(out_path, format, meta, specs)).empty()) return err;

    // The first line quantize prints: a refusal before this point is its only line.
    // The chat template --chat and the server will use: a built-in one, or none (raw text).
    const std::string chat = !c.chat_template.empty()         ? printable(c.chat_template)  // a file's string
                             : !c.chat_template_jinja.empty() ? "none hearth knows (chats are raw text)"
                                                              : "none";
    std::fprintf(stderr,
                 "quantize: %s -> %s (%s, %s): dim %d, hidden %d, %d layers, %d/%d heads, head dim %d, vocab %d, chat template "
                 "%s\n",
                 shown_path(src.source).c_str(), shown_path(out_path).c_str(), checkpoint_format_name(format),
                 output_mix_name(mix), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab_size,
                 chat.c_str());
    // Warnings once the conversion is sure to start (names from the file escaped).
    if (!caveat.empty()) std::fprintf(stderr, "quantize: warning: %s\n", message_line(caveat).c_str());
    const auto start = std::chrono::steady_clock::now();
    uint64_t bytes_in = 0, bytes_out = 0, elements = 0;
    double err2_all = 0, ref2_all = 0;
    std::vector<uint8_t> buf, packed;
    for (size_t i = 0; i < src.tensors.size(); i++) {
        const SourceTensor& t = src.tensors[i];
        const uint32_t type = specs[i].type;
        const Layout layout = specs[i].layout;
        const auto t0 = std::chrono::steady_clock::now();
        const uint64_t rows = t.rows(), cols = t.cols();
        const size_t row_bytes = type_row_bytes(type, int64_t(cols));
        // The same blocks in the same row order: stored as they are (a GGUF file must compute
        // what its blocks mean; re-quantizing could change them), or only moved between the plain
        // and the interleaved layout, which loses nothing.
        const bool same_blocks = t.type == type && t.hf_rope_heads == 0;
        // Rows go a chunk at a time, a multiple of 8 rows (whole groups of the interleaved
        // layout), converted in parallel and written in order.
        const uint64_t chunk = std::max<uint64_t>(8, (uint64_t(16) << 20) / std::max<size_t>(row_bytes, 1) / 8 * 8);
        double err2 = 0, ref2 = 0;
        for (uint64_t r = 0; r < rows; r += chunk) {
            const uint64_t n = std::min(chunk, rows - r);
            const uint8_t* stored = t.data + r * row_bytes;  // when same_blocks, the source's rows are this size too
            if (same_blocks && t.layout == layout) {
                if (!(err = writer.write(stored, n * row_bytes)).empty()) return err;
                continue;
            }
            buf.resize(n * row_bytes);
            if (same_blocks && t.layout == Layout::rows_x8) {
                repack_x8_to_rows(type, stored, buf.data(), int64_t(n), int64_t(cols));
            } else if (same_blocks) {
                std::memcpy(buf.data(), stored, n * row_bytes);
            } else {
                const int n_parts = 64;
                // convert_rows allocates its rows on each thread: a std::bad_alloc is carried out of the region.
                ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : err2, ref2)
                for (int part = 0; part < n_parts; part++) {
                    const uint64_t p0 = r + n * part / n_parts, p1 = r + n * (part + 1) / n_parts;
                    if (p0 < p1)
                        errors.run([&] { convert_rows(t, type, p0, p1, buf.data() + (p0 - r) * row_bytes, &err2, &ref2); });
                }
                errors.rethrow();
            }
            if (layout == Layout::rows_x8) {  // the rows of this chunk are whole groups (and the tail)
                packed.resize(buf.size());
                repack_rows_to_x8(type, buf.data(), packed.data(), int64_t(n), int64_t(cols));
                buf.swap(packed);
            }
            if (!(err = writer.write(buf.data(), buf.size())).empty()) return err;
        }
        const uint64_t in = rows * type_row_bytes(t.type, int64_t(cols)), out = rows * row_bytes;
        bytes_in += in;
        bytes_out += out;
        elements += rows * cols;
        err2_all += err2;
        ref2_all += ref2;
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!quiet)
            std::fprintf(stderr, "[%4zu/%4zu] %-26s %-4s -> %-4s %9.2f -> %8.2f MB  rel. RMS error %.2e  %6.0f MB/s\n", i + 1,
                         src.tensors.size(), t.name.c_str(), type_name(t.type), type_name(type), in / 1e6, out / 1e6,
                         ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0, in / 1e6 / std::max(secs, 1e-6));
    }
    // The file must load as run loads it before it takes its name.
    if (!(err = writer.commit(check_model_file)).empty()) return err;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "quantize: wrote %s in %.1f s: tensors %.2f MB -> %.2f MB, relative RMS error %.2e, %.3f bits per weight\n",
                 shown_path(out_path).c_str(), secs, bytes_in / 1e6, bytes_out / 1e6,
                 ref2_all > 0 ? std::sqrt(err2_all / ref2_all) : 0.0, 8.0 * bytes_out / std::max<uint64_t>(elements, 1));
    // Said with -q too: the file is then larger than the type's name promises.
    if (fallbacks > 0)
        std::fprintf(stderr,
                     "quantize: note: %d matrices are in q8_0 or f16 instead: the type's blocks do not divide their rows\n",
                     fallbacks);
    return "";
}

}  // namespace hearth
