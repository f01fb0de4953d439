// quantize: converts a checkpoint people have into a hearth checkpoint of a chosen type.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/tensor_type.h"
#include "model/checkpoint_writer.h"
#include "model/import.h"

static const char* kUsage =
    "usage: quantize INPUT OUTPUT [--type TYPE] [-q|--quiet]\n"
    "       quantize INPUT OUTPUT TYPE\n"
    "\n"
    "Converts a checkpoint into a hearth checkpoint (docs/format.md) that `run` memory-maps.\n"
    "\n"
    "INPUT   a Hugging Face Llama folder (config.json, model.safetensors or sharded\n"
    "        model-*.safetensors with model.safetensors.index.json, tokenizer.model),\n"
    "        or a hearth checkpoint (to change its type)\n"
    "OUTPUT  the file to write; it appears only once complete (written to OUTPUT.partial-PID\n"
    "        first), and an existing file of that name is replaced only on success\n"
    "TYPE    f32 or f16 (default f16). Norm weights always stay f32.\n"
    "\n"
    "  -t, --type TYPE   the element type of the weight matrices\n"
    "  -q, --quiet       no per-tensor progress lines\n"
    "  -h, --help        this text\n";

static int fail(const std::string& msg) {
    std::fprintf(stderr, "quantize: %s\n", msg.c_str());
    return 1;
}

static void on_signal(int sig) {
    remove_unfinished_checkpoints();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

static bool parse_type(const std::string& s, uint32_t* type) {
    std::string t;
    for (char ch : s) t += char(std::tolower(static_cast<unsigned char>(ch)));
    if (t == "f32") *type = TYPE_F32;
    else if (t == "f16") *type = TYPE_F16;
    else return false;
    return true;
}

int main(int argc, char** argv) {
    std::vector<std::string> positional;
    uint32_t type = TYPE_F16;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "-t" || a == "--type") {
            if (i + 1 >= argc) return fail(a + " needs a value (f32 or f16)");
            if (!parse_type(argv[++i], &type)) return fail(std::string("unknown type '") + argv[i] + "' (f32 or f16)");
        } else if (a == "-q" || a == "--quiet") {
            quiet = true;
        } else if (a.size() > 1 && a[0] == '-') {
            return fail("unknown option " + a + " (see --help)");
        } else {
            positional.push_back(a);
        }
    }
    if (positional.size() == 3) {
        if (!parse_type(positional[2], &type)) return fail("unknown type '" + positional[2] + "' (f32 or f16)");
        positional.pop_back();
    }
    if (positional.size() != 2) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    const std::string& in_path = positional[0];
    const std::string& out_path = positional[1];

    struct stat st;
    if (stat(in_path.c_str(), &st) != 0) return fail("cannot find " + in_path);
    ImportedCheckpoint src;
    std::string err;
    if (S_ISDIR(st.st_mode)) {
        err = import_hf_folder(in_path, &src);
    } else {
        char magic[8] = {};
        FILE* f = std::fopen(in_path.c_str(), "rb");
        size_t got = f ? std::fread(magic, 1, sizeof magic, f) : 0;
        if (f) std::fclose(f);
        if (got == sizeof magic && std::memcmp(magic, kCheckpointMagic, sizeof magic) == 0)
            err = import_hearth_file(in_path, &src);
        else if (got >= 4 && std::memcmp(magic, "GGUF", 4) == 0)
            err = in_path + " is a GGUF file; GGUF input is not supported yet";
        else
            err = in_path + " is neither a Hugging Face folder nor a hearth checkpoint";
    }
    if (!err.empty()) return fail(err);
    if (same_file(in_path, out_path)) return fail("the output would overwrite the input " + in_path);

    // Norms are tiny and feed fp32 arithmetic directly; everything else takes the chosen type.
    std::vector<TensorSpec> specs;
    for (const SourceTensor& t : src.tensors) {
        TensorSpec s;
        s.name = t.name;
        s.type = t.n_dims == 1 ? uint32_t(TYPE_F32) : type;
        s.n_dims = t.n_dims;
        for (int d = 0; d < kMaxDims; d++) s.shape[d] = t.shape[d];
        specs.push_back(s);
    }

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);
    CheckpointWriter writer;
    if (!(err = writer.open(out_path, src.config, src.tokenizer, specs)).empty()) return fail(err);

    const ModelConfig& c = src.config;
    std::fprintf(stderr, "quantize: %s -> %s (%s): dim %d, hidden %d, %d layers, %d/%d heads, head dim %d, vocab %d\n",
                 in_path.c_str(), out_path.c_str(), type_name(type), c.dim, c.hidden_dim, c.n_layers, c.n_heads,
                 c.n_kv_heads, c.head_dim, c.vocab_size);
    auto start = std::chrono::steady_clock::now();
    std::vector<float> row;
    std::vector<uint8_t> buf;
    uint64_t total = 0;
    for (size_t i = 0; i < src.tensors.size(); i++) {
        const SourceTensor& t = src.tensors[i];
        auto t0 = std::chrono::steady_clock::now();
        const uint64_t cols = t.cols(), rows = t.rows();
        const uint64_t row_bytes = specs[i].type == TYPE_F32 ? cols * 4 : cols * 2;
        row.resize(cols);
        buf.resize(row_bytes);
        for (uint64_t r = 0; r < rows; r++) {
            read_source_row(t, r, row.data());
            if (specs[i].type == TYPE_F32) {
                std::memcpy(buf.data(), row.data(), row_bytes);
            } else {
                uint16_t* h = reinterpret_cast<uint16_t*>(buf.data());
                for (uint64_t j = 0; j < cols; j++) h[j] = fp32_to_fp16(row[j]);
            }
            if (!(err = writer.write(buf.data(), row_bytes)).empty()) return fail(err);
        }
        total += rows * row_bytes;
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!quiet)
            std::fprintf(stderr, "[%4zu/%4zu] %-28s %-4s %9.2f MB %8.0f MB/s\n", i + 1, src.tensors.size(), t.name.c_str(),
                         type_name(specs[i].type), rows * row_bytes / 1e6, rows * row_bytes / 1e6 / std::max(secs, 1e-6));
    }
    if (!(err = writer.commit()).empty()) return fail(err);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "quantize: wrote %s, %.1f MB in %.1f s (%.0f MB/s)\n", out_path.c_str(), writer.file_bytes() / 1e6, secs,
                 total / 1e6 / std::max(secs, 1e-6));
    return 0;
}
