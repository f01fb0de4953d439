// quantize: converts a checkpoint people have into a hearth checkpoint of a chosen type.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "frontend/options.h"
#include "model/checkpoint_writer.h"
#include "model/convert.h"
#include "model/gguf.h"
#include "model/import.h"

static const char* kUsage =
    "usage: quantize INPUT OUTPUT [--type TYPE] [-q|--quiet]\n"
    "       quantize INPUT OUTPUT TYPE\n"
    "\n"
    "Converts a checkpoint into a hearth checkpoint (docs/format.md) that `run` memory-maps.\n"
    "\n"
    "INPUT   a Hugging Face Llama folder (config.json, model.safetensors or sharded\n"
    "        model-*.safetensors with model.safetensors.index.json, tokenizer.model),\n"
    "        or a hearth checkpoint in f32/f16 (to quantize it)\n"
    "OUTPUT  the file to write; it appears only once complete (written to OUTPUT.partial-PID\n"
    "        first), and an existing file of that name is replaced only on success\n"
    "TYPE    f32, f16 (default), q8_0, q4_0, q4_k, q6_k, or the mix q4_k_m: q4_k with q6_k for\n"
    "        the embedding, the output and half of attn_v/ffn_down, as llama.cpp's Q4_K_M.\n"
    "        q4_0 keeps the output matrix in q6_k, as llama.cpp's Q4_0 does.\n"
    "        Norm weights always stay f32; a matrix whose rows the block size does not\n"
    "        divide falls back to q8_0, then f16.\n";

static int fail(const std::string& msg) {
    std::fprintf(stderr, "quantize: %s\n", msg.c_str());
    return 1;
}

static void on_signal(int sig) {
    remove_unfinished_checkpoints();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

int main(int argc, char** argv) {
    std::string type;
    bool quiet = false;
    const CommandLine cl = {
        "quantize",
        kUsage,
        {{"",
          {
              {"-t", "--type", "TYPE", &type, "the element type of the weight matrices", 0, 0,
               "f16, or a hearth input's own types"},
              {"-q", "--quiet", "", &quiet, "no per-tensor lines (size before/after, relative RMS error, MB/s)"},
          }}},
        ""};
    Arguments args;
    if (int exit_code = parse_command_line(cl, argc, argv, &args); exit_code >= 0) return exit_code;
    std::vector<std::string>& positional = args.positional;
    bool type_given = args.was_given("--type");
    if (positional.size() == 3) {
        type = positional[2];
        type_given = true;
        positional.pop_back();
    }
    OutputMix mix = OutputMix::F16;
    if (type_given && !parse_output_mix(type, &mix)) return fail("unknown type '" + type + "' (see --help)");
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
        if ((got == sizeof magic && std::memcmp(magic, kCheckpointMagic, sizeof magic) == 0) || is_gguf(magic, got)) {
            err = import_model_file(in_path, &src);
            if (!type_given) mix = OutputMix::Keep;
        } else {
            err = in_path + " is neither a Hugging Face folder, a hearth checkpoint nor a GGUF file";
        }
    }
    if (!err.empty()) return fail(err);
    if (same_file(in_path, out_path)) return fail("the output would overwrite the input " + in_path);

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);
    std::fprintf(stderr, "quantize: reading %s\n", in_path.c_str());
    if (!(err = convert_checkpoint(src, out_path, mix, quiet)).empty()) return fail(err);
    return 0;
}
