// quantize: converts a checkpoint people have into a hearth checkpoint or a GGUF file of a
// chosen type.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/input_file.h"
#include "base/platform.h"
#include "base/printable.h"
#include "cli/options.h"
#include "formats/writer.h"
#include "convert/convert.h"
#include "formats/gguf.h"
#include "convert/import.h"

using namespace hearth;

static const char* kUsage =
    "usage: quantize INPUT OUTPUT [--type TYPE] [--format hearth|gguf] [--tokenizer FILE] [-q|--quiet]\n"
    "       quantize INPUT OUTPUT TYPE\n"
    "\n"
    "Converts a checkpoint into a hearth checkpoint (docs/format.md) that `run` memory-maps,\n"
    "or into a GGUF v3 file that llama.cpp runs (docs/gguf.md).\n"
    "\n"
    "INPUT   a Hugging Face folder of a Llama, Mistral, Qwen2 or Qwen3 model (config.json,\n"
    "        model.safetensors or sharded model-*.safetensors with model.safetensors.index.json,\n"
    "        tokenizer.model or a byte-level BPE tokenizer.json),\n"
    "        a GGUF file (llama.cpp's), a llama2.c checkpoint (legacy, or \"ak42\" version 1\n"
    "        or 2: MODEL.bin), or a hearth checkpoint\n"
    "OUTPUT  the file to write: GGUF when its name ends in .gguf, else hearth (--format\n"
    "        overrides). It appears only once complete (written to OUTPUT.partial-XXXXXX\n"
    "        first), and an existing file of that name is replaced only on success\n"
    "TYPE    f32, f16, q8_0, q4_0, q4_k, q5_k, q6_k, or the mixes q4_k_m and q5_k_m: q4_k\n"
    "        (q5_k) with q6_k for the output and half of attn_v/ffn_down, as llama.cpp's Q4_K_M\n"
    "        (Q5_K_M), and for the embedding too, which llama.cpp leaves in q4_k (q5_k) when\n"
    "        it is not tied to the output.\n"
    "        q4_0 keeps the output matrix in q6_k, as llama.cpp's Q4_0 does. keep leaves each\n"
    "        matrix's blocks as they are, copied bit for bit.\n"
    "        Default: f16 for a folder or a llama2.c fp32 file; keep for a hearth or GGUF\n"
    "        file; q8_0 for a llama2.c int8 (version 2) file, which keeps its int8 groups\n"
    "        as they are when they are groups of 32 and re-quantizes other group sizes.\n"
    "        Norm weights always stay f32; a matrix whose rows the block size does not\n"
    "        divide falls back to q8_0, then f16.\n";

// One line, whatever the message carries from a file: control characters are escaped.
static int fail(const std::string& msg) {
    std::fprintf(stderr, "quantize: %s\n", message_line(msg).c_str());
    return 1;
}

// Any signal that ends quantize first removes the unfinished output: an interrupt, a closed
// pipe on stderr (`quantize ... 2>&1 | head -1`), and SIGBUS, which is how an input file
// truncated while it is mapped shows itself (then with a message). A file size limit
// (ulimit -f) is not a signal here: SIGXFSZ is ignored, so the write fails with EFBIG and
// quantize says "File too large" in one line.
extern "C" void on_signal(int sig) {
    remove_unfinished_checkpoints();
    if (sig == SIGBUS) {
        static const char msg[] = "\nquantize: an input file was changed or truncated while it was read\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(1);
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

int quantize_main(int argc, char** argv) {
    std::string type, format_name;
    bool quiet = false;
    std::string tokenizer_path;
    const CommandLine cl = {
        "quantize",
        kUsage,
        {{"",
          {
              {"-t", "--type", "TYPE", &type, "the element type of the weight matrices", 0, 0, "see TYPE above"},
              {"", "--format", "FORMAT", &format_name, "the output file's format: hearth or gguf", 0, 0,
               "gguf for an OUTPUT ending in .gguf, else hearth"},
              {"", "--tokenizer", "FILE", &tokenizer_path,
               "for a llama2.c input: its SentencePiece tokenizer.model, whose piece count must be the vocabulary size (the "
               "stories models use Llama-2's); without it the output has no tokenizer and runs only with --prompt-ids and "
               "--print-ids"},
              {"-q", "--quiet", "", &quiet, "no per-tensor lines (size before/after, relative RMS error, MB/s)"},
          }}},
        "",
        "--type=q8_0, --format=gguf"};
    Arguments args;
    if (int exit_code = parse_command_line(cl, argc, argv, &args); exit_code >= 0) return exit_code;
    std::vector<std::string>& positional = args.positional;
    bool type_given = args.was_given("--type");
    // Two types, one of them silently dropped (the operand won, whichever came last).
    if (positional.size() == 3 && type_given && type != positional[2])
        return fail("two types, --type " + type + " and TYPE " + positional[2] + ": give one");
    if (positional.size() == 3) {
        type = positional[2];
        type_given = true;
        positional.pop_back();
    }
    OutputMix mix = OutputMix::F16;
    if (type_given && !parse_output_mix(type, &mix)) return fail("unknown type '" + type + "' (see --help)");
    if (positional.size() > 2)  // INPUT OUTPUT TYPE, and more
        return fail("too many arguments, from '" + positional[3] + "' (see --help)");
    // A missing operand is one line, as cp says "missing destination file operand after 'a'": the
    // whole usage is --help's.
    if (positional.empty()) return fail("missing INPUT and OUTPUT (usage: quantize INPUT OUTPUT [TYPE]; see --help)");
    if (positional.size() == 1)
        return fail("missing OUTPUT after '" + positional[0] + "' (usage: quantize INPUT OUTPUT [TYPE]; see --help)");
    const std::string& in_path = positional[0];
    const std::string& out_path = positional[1];
    if (in_path.empty() || out_path.empty()) return fail(std::string(in_path.empty() ? "INPUT" : "OUTPUT") + " is empty");
    // A checkpoint is written in place and renamed when whole: a pipe cannot take one.
    if (out_path == "-") return fail("OUTPUT '-': quantize writes a file, not to stdout (give a file name, ./- for one named -)");
    CheckpointFormat format = checkpoint_format_for_path(out_path);
    if (args.was_given("--format") && !parse_checkpoint_format(format_name, &format))
        return fail("unknown format '" + format_name + "' (hearth or gguf)");
    // Found out now rather than after a conversion that can take minutes.
    const size_t slash = out_path.rfind('/');
    const std::string out_dir = slash == std::string::npos ? "." : out_path.substr(0, slash + 1);
    struct stat st;
    if (stat(out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return fail("cannot write " + out_path + ": there is no folder " + out_dir);

    if (stat(in_path.c_str(), &st) != 0) return fail("cannot find " + in_path);
    ImportedCheckpoint src;
    std::string err, not_llama2c;
    bool llama2c = false;
    if (S_ISDIR(st.st_mode)) {
        err = import_hf_folder(in_path, &src);
    } else {
        // The magic, or the whole of a file small enough to be a Git LFS pointer.
        char head[kGitLfsPointerMaxBytes + 1] = {};
        const int fd = open_regular_file(in_path, &err);  // a FIFO or device: refused, not waited on
        if (fd < 0) return fail(err);
        const ssize_t n = read(fd, head, sizeof head);
        close(fd);
        const size_t got = n > 0 ? size_t(n) : 0;
        if (is_git_lfs_pointer(head, got)) {
            err = git_lfs_pointer_error(shown_path(in_path));
        } else if ((got >= sizeof kCheckpointMagic && std::memcmp(head, kCheckpointMagic, sizeof kCheckpointMagic) == 0) ||
                   is_gguf(head, got)) {
            err = import_model_file(in_path, &src);
            if (!type_given) mix = OutputMix::Keep;
        } else if (detect_llama2c(in_path, &not_llama2c) != Llama2cFormat::none) {
            llama2c = true;
            err = import_llama2c(in_path, tokenizer_path, &src);
            // An int8 (version 2) file stays 8-bit unless asked otherwise: q8_0 holds its groups
            // of 32 as they are, and re-quantizes other group sizes.
            bool int8 = false;
            for (const SourceTensor& t : src.tensors) int8 = int8 || t.group_size > 0;
            if (!type_given && int8) mix = OutputMix::Q8_0;
        } else if (!not_llama2c.empty())
            err = in_path + ": " + not_llama2c;
        else if (in_path.size() > 12 && ends_with(in_path, ".safetensors"))
            err = in_path + " is one file of a Hugging Face folder: give quantize the folder that holds it, with its config.json";
        else
            err = in_path + " is neither a Hugging Face folder, a hearth checkpoint, a GGUF file nor a llama2.c checkpoint";
    }
    if (!err.empty()) return fail(err);
    if (!tokenizer_path.empty() && !llama2c)
        return fail("--tokenizer is for llama2.c checkpoints; " + in_path + " brings its own tokenizer");
    if (llama2c && tokenizer_path.empty())
        std::fprintf(
            stderr,
            "quantize: warning: no --tokenizer: %s will have no tokenizer and run only with --prompt-ids and --print-ids\n",
            shown_path(out_path).c_str());
    // An existing output is replaced by a rename: never a device, a FIFO or a folder.
    if (stat(out_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return fail(out_path + " exists and is not a regular file");
    // The output may be none of the files read, whatever path names it (a symlink, a hard
    // link, DIR/config.json): compared by device and inode.
    FileId out_id;
    if (file_id_of(out_path, &out_id))
        for (const ImportedCheckpoint::Input& read : src.inputs)
            if (read.id == out_id) return fail("the output " + out_path + " would overwrite the input " + read.path);

    // A signal the caller ignores (nohup's SIGHUP, a shell's trap '') stays ignored. Every signal
    // whose default ends the process is here: an abort (an allocation failing on a thread),
    // timers, a CPU time limit (ulimit -t), the user signals.
    for (int sig :
         {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGBUS, SIGABRT, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGUSR1, SIGUSR2})
        if (std::signal(sig, on_signal) == SIG_IGN) std::signal(sig, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
    // An exit() in a library (libgomp when it cannot start its threads) is an end too.
    std::atexit(remove_unfinished_checkpoints);
    if (!(err = convert_checkpoint(src, out_path, format, mix, quiet)).empty()) return fail(err);
    return 0;
}

int main(int argc, char** argv) {
    open_missing_standard_files();  // `quantize ... 2>&-`: the output file would take descriptor 2
    try {
        return quantize_main(argc, argv);
    } catch (const std::bad_alloc&) {
        remove_unfinished_checkpoints();
        return fail("out of memory (a limit such as ulimit -v, or too little RAM)");
    }
}
