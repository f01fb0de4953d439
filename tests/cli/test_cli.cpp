// ./run and ./quantize as a user meets them: help, defaults, and a clear one-line error
// with a non-zero exit for every kind of bad input.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>

#include "tests/test_helpers.h"

static int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

static bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

static const std::string kModel = "build/tests/cli-model.hearth";

static void make_cli_model() {
    if (!exists(kModel)) REQUIRE(run_command("./quantize tests/data/parity/gqa " + kModel + " -q").exit_code == 0);
}

TEST_CASE("cli: --help documents the options and exits 0") {
    CommandResult r = run_command("./run --help");
    CHECK(r.exit_code == 0);
    for (const char* opt : {"--prompt", "--prompt-ids", "--n-predict", "--ctx-size", "--threads", "--temp", "--top-k", "--top-p",
                            "--min-p", "--repeat-penalty", "--frequency-penalty", "--presence-penalty", "--seed", "--print-ids"})
        CHECK(r.out.find(opt) != std::string::npos);
    CommandResult q = run_command("./quantize --help");
    CHECK(q.exit_code == 0);
    CHECK(q.out.find("--type") != std::string::npos);
    // Within the 100 columns the option lines are wrapped to, the text around them too.
    for (const std::string& text : {r.out, q.out}) {
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            INFO(line);
            CHECK(line.size() <= 100);
        }
    }
}

TEST_CASE("cli: a -c past the model's context runs, with a note on stderr") {
    // The default model declares 512 positions (models/README.md); llama.cpp warns alike.
    CommandResult r = run_command("./run models/tiny-shakespeare.hearth -p ROMEO: -n 2 -c 4096 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("run: note: -c gives 4096 positions, past the model's context of 512\n") != std::string::npos);
    r = run_command("./run models/tiny-shakespeare.hearth -p ROMEO: -n 2 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("past the model's context") == std::string::npos);
}

TEST_CASE("cli: the prompt echoed and the reply are written whole, NUL bytes too") {
    // SentencePiece's byte fallback gives a NUL its own token (<0x00>); echoed through fputs,
    // the text after it was lost while the model still read it.
    const std::string path = "build/tests/cli-nul-prompt.txt";
    write_file(path, std::string("hello\0world ROMEO", 17));
    const CommandResult r = run_command("./run models/tiny-shakespeare.hearth -f " + path + " -n 0 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out == std::string("hello\0world ROMEO\n", 18));
}

TEST_CASE("cli: an option given twice takes its last value, as --help says") {
    for (const std::string program : {"run", "quantize"})
        CHECK(run_command("./" + program + " --help").out.find("An option given more than once takes its last value.") !=
              std::string::npos);
    const CommandResult r =
        run_command("./run models/tiny-shakespeare.hearth --bench --bench-pp 0 --bench-tg 7 --bench-tg 3 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("tg3: ") != std::string::npos);
    CHECK(r.out.find("tg7: ") == std::string::npos);
}

TEST_CASE("cli: quantize --help shows a value after = with options quantize takes") {
    // Both programs' --help shared one footer, whose examples were run's (--n-predict=5,
    // --prompt=): options quantize refuses.
    const CommandResult refused = run_command("./quantize --n-predict=5");
    CHECK(refused.exit_code == 1);
    const CommandResult help = run_command("./quantize --help");
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("--n-predict") == std::string::npos);
    CHECK(help.out.find("--prompt=") == std::string::npos);
    CHECK(help.out.find("(--type=q8_0, --format=gguf)") != std::string::npos);
    const std::string out = "build/tests/cli-equals-example.bin";
    std::remove(out.c_str());
    const CommandResult r = run_command("./quantize models/tiny-shakespeare.hearth " + out + " --type=q8_0 --format=gguf -q");
    CHECK(r.exit_code == 0);
    CHECK(exists(out));
    std::remove(out.c_str());
    CHECK(run_command("./run --help").out.find("(--n-predict=5, --prompt=)") != std::string::npos);
}

TEST_CASE("cli: run given what quantize converts says to convert it") {
    // run reads hearth and GGUF files only (README, The files hearth takes); a Hugging Face
    // folder or a llama2.c checkpoint was refused as "a folder, not a regular file" or as
    // "wrong magic", with nothing about quantize.
    for (const std::string input : {"tests/data/parity/gqa", "tests/data/llama2c/stories260K.bin"}) {
        CAPTURE(input);
        const CommandResult r = run_command("./run " + input + " -p hi -n 1");
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("convert it first: quantize " + input + " MODEL.hearth") != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    // What quantize tells apart from them is left as it was: a damaged hearth file.
    const std::string damaged = "build/tests/cli-damaged.hearth";
    write_file(damaged, std::string("HEARTHCK") + std::string(56, '\0'));
    const CommandResult r = run_command("./run " + damaged + " -p hi -n 1");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("quantize") == std::string::npos);
    std::remove(damaged.c_str());
}

TEST_CASE("cli: --chat's /help says where a message ending in a backslash goes on") {
    // README: "a line ending in `\\` continues the message on the next line"; /help said "on
    // the next" and broke the line there.
    const CommandResult r = run_command("printf '/help\\n' | ./run models/tiny-shakespeare.hearth --chat -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("to continue the message on the next line\n") != std::string::npos);
}

// The conventions of GNU getopt_long and POSIX (Utility Syntax Guideline 10), which coreutils
// follow: `head --lines=2` is `head --lines 2`, `head --verbose=1` is refused ("option '--verbose'
// doesn't allow an argument"), and `--` ends the options.
TEST_CASE("cli: a long option's value may follow '=', and -- ends the options") {
    make_cli_model();
    const std::string args = " -n 5 --temp 0 --ignore-eos --print-ids --prompt-ids 1,5,6";
    const CommandResult spaced = run_command("./run " + kModel + args);
    const CommandResult joined =
        run_command("./run " + kModel + " --n-predict=5 --temp=0 --ignore-eos --print-ids --prompt-ids=1,5,6");
    INFO(spaced.err << joined.err);
    REQUIRE(spaced.exit_code == 0);
    CHECK(joined.exit_code == 0);
    CHECK(joined.out == spaced.out);
    // The value is all after the first '=': empty, or holding '=' itself.
    const CommandResult tokens = run_command("./run " + kModel + " --tokenize -p 'a=b'");
    CHECK(run_command("./run " + kModel + " --tokenize --prompt=a=b").out == tokens.out);
    CHECK(run_command("./run " + kModel + " --tokenize --prompt=").out ==
          run_command("./run " + kModel + " --tokenize -p ''").out);

    auto refused = [](const std::string& cmd, const std::string& expect) {
        const CommandResult r = run_command(cmd);
        INFO(cmd << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.find(expect) != std::string::npos);
        CHECK(r.out.empty());
    };
    // Every option of both tables: a number's bad value is refused as with a space; a flag takes no value.
    for (const std::string program : {"./run", "./quantize"}) {
        const CommandResult list = run_command(program + " --list-options");
        REQUIRE(list.exit_code == 0);
        std::istringstream lines(list.out);
        for (std::string line; std::getline(lines, line);) {
            std::istringstream fields(line);
            std::string long_name, short_name, kind;
            fields >> long_name >> short_name >> kind;
            if (kind == "flag")
                refused(program + " " + long_name + "=1", long_name + " takes no value");
            else if (kind != "text")
                refused(program + " " + long_name + "=abc", "invalid value 'abc' for " + long_name);
            // Only long options take '=': getopt would give -n the value "=5", never what was meant.
            if (short_name != "-" && kind != "flag")
                refused(program + " " + short_name + "=5", "only a long option takes =VALUE");
        }
        refused(program + " --help=1", "--help takes no value");
        refused(program + " --no-such-option=1", "unknown option --no-such-option=1");
    }

    // After --, an argument that begins with - is the model's file name, not an option (options come first).
    const std::string dir = "build/tests/cli-dashes";
    REQUIRE(run_command("rm -rf " + dir + " && mkdir -p " + dir + " && cp " + kModel + " " + dir + "/-n.hearth").exit_code == 0);
    std::string run = with_programs_of_build("./run ");
    run.pop_back();
    char* absolute = realpath(run.c_str(), nullptr);
    REQUIRE(absolute);
    const std::string in_dir = "(cd " + dir + " && " + absolute + " ";
    std::free(absolute);
    const CommandResult dashed = run_command(in_dir + args + " -- -n.hearth)");
    INFO(dashed.err);
    CHECK(dashed.exit_code == 0);
    CHECK(dashed.out == spaced.out);
    refused(in_dir + args + " -n.hearth)", "unknown option -n.hearth");
    // Options after -- are operands: here a second model, which run refuses by name.
    refused("./run -- " + kModel + args, "unexpected argument '-n'");
    // A -- that is an option's value is that value (POSIX: "the first -- argument that is not an
    // option-argument").
    CHECK(run_command("./run " + kModel + " --tokenize -p --").out == run_command("./run " + kModel + " --tokenize -p '--'").out);
    CHECK(run_command("./run " + kModel + " --tokenize -p --").exit_code == 0);
}

TEST_CASE("cli: --version names the commit the programs were built from, as git does") {
    // "unknown" when the tree is not a git clone; else git describe's, which holds the commit.
    const CommandResult head = run_command("git rev-parse --short=7 HEAD 2>/dev/null");
    for (const std::string program : {"run", "quantize"}) {
        CommandResult r = run_command("./" + program + " --version");
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.rfind(program + " (hearth) ", 0) == 0);
        if (head.exit_code == 0 && head.out.size() > 1)
            CHECK(r.out.find(head.out.substr(0, 7)) != std::string::npos);
        else
            CHECK(r.out == program + " (hearth) unknown\n");
        CHECK(run_command("./" + program + " --help").out.find("--version") != std::string::npos);
    }
}

// The options tables themselves, as `--list-options` prints them: each option is in
// --help, and a value that is missing, malformed or out of range is refused before
// anything is loaded, with one line on stderr and exit code 1.
TEST_CASE("cli: every option of run and quantize is in --help and refuses a bad value") {
    for (const std::string program : {"./run", "./quantize"}) {
        CommandResult list = run_command(program + " --list-options");
        REQUIRE(list.exit_code == 0);
        const std::string help = run_command(program + " --help").out;
        CHECK(help.find("--list-options") == std::string::npos);  // for tests, not users
        auto refused = [&](const std::string& args, const std::string& expect) {
            CommandResult r = run_command(program + " " + args);
            INFO(program << " " << args << " -> " << r.err);
            CHECK(r.exit_code == 1);
            CHECK(count_lines(r.err) == 1);
            CHECK(r.err.find(expect) != std::string::npos);
            CHECK(r.out.empty());
        };
        std::istringstream lines(list.out);
        int options = 0;
        for (std::string line; std::getline(lines, line); options++) {
            INFO(program << " --list-options: " << line);
            std::istringstream fields(line);
            std::string long_name, short_name, kind, min, max;
            fields >> long_name >> short_name >> kind >> min >> max;
            REQUIRE(long_name.compare(0, 2, "--") == 0);
            // Its line in --help starts with its names.
            const std::string names = "\n  " + (short_name == "-" ? "    " : short_name + ", ") + long_name;
            const size_t at = help.find(names);
            CHECK((at != std::string::npos && (help[at + names.size()] == ' ' || help[at + names.size()] == '\n')));

            REQUIRE((kind == "flag" || kind == "integer" || kind == "real" || kind == "text"));
            if (kind == "flag") continue;
            refused(long_name, "needs a value");
            if (short_name != "-") refused(short_name, "needs a value");
            if (kind == "text") continue;
            REQUIRE(!max.empty());
            for (const char* bad : {"abc", "''", "5x"}) refused(long_name + " " + bad, "invalid value");
            if (kind == "integer") {
                refused(long_name + " 1.5", "invalid value");
                refused(long_name + " " + std::to_string(std::stoll(min) - 1), "invalid value");
                refused(long_name + " " + max + "0", "invalid value");
            } else {
                refused(long_name + " " + std::to_string(std::stod(min) - 1), "invalid value");
                refused(long_name + " " + std::to_string(std::stod(max) + 1), "invalid value");
            }
        }
        CHECK(options >= 2);
    }
}

TEST_CASE("cli: run refuses bad input with one line on stderr") {
    make_cli_model();
    // 16 MiB of text: tokenized whole it took gigabytes (the SentencePiece library's ~230
    // bytes per byte) and seconds, to be refused as longer than the context after all.
    {
        std::FILE* f = std::fopen("build/tests/cli-huge-prompt.txt", "wb");
        REQUIRE(f);
        const std::string mib(1 << 20, 'a');
        for (int i = 0; i < 16; i++) std::fwrite(mib.data(), 1, mib.size(), f);
        std::fclose(f);
    }
    write_file("build/tests/cli-empty.txt", "");
    write_file("build/tests/cli-one-line.txt", "ROMEO: Good morrow, my lord, and how fare you?\n");
    struct Case {
        std::string args, expect;
    } cases[] = {
        {"build/tests/no-such.hearth", "cannot open"},
        {"tests/data/parity/gqa/config.json", "magic"},
        // A Hugging Face folder, as README's quantize examples convert them: it said only "is a folder".
        {"tests/data/parity/gqa -p hi", "convert it first: quantize tests/data/parity/gqa MODEL.hearth"},
        // An empty path names no file (cat '' says so): it ran the default model.
        {"'' -p hi -n 1", "the model's path is empty"},
        {"-m '' -p hi -n 1", "the model's path is empty"},
        {kModel + " --bogus", "unknown option"},
        {kModel + " -n abc", "invalid value"},
        {kModel + " -t 0", "invalid value"},
        {kModel + " --temp -1", "invalid value"},
        {kModel + " -n", "needs"},
        {kModel + " --prompt-ids 1,99999", "outside"},
        {kModel + " --prompt-ids 1,,2", "list"},
        {kModel + " --prompt-ids 1,2,", "list"},
        {kModel + " --prompt-ids 1,2 -p hi", "give either --prompt or --prompt-ids, not both"},
        {kModel + " --prompt-ids 1,2 -f build/tests/cli-one-line.txt", "give either --file or --prompt-ids, not both"},
        {kModel + " -c 4 -p 'a prompt much longer than four tokens of context'", "longer than the context"},
        {kModel + " --chat --print-ids", "--chat writes its replies as text"},
        // The option given is the one named: it said "not --prompt" to -f and --prompt-ids too.
        {kModel + " --chat -p hi", "--chat reads its messages from the terminal or stdin, not --prompt"},
        {kModel + " --chat -f build/tests/cli-one-line.txt", "--chat reads its messages from the terminal or stdin, not --file"},
        {kModel + " --chat --prompt-ids 1,2", "--chat reads its messages from the terminal or stdin, not --prompt-ids"},
        // Messages that cannot be read are an error, as `cat < DIR` says "Is a directory": it left at once, exit 0.
        {kModel + " --chat < build/tests", "cannot read the messages: Is a directory"},
        // A closed stdin is not an empty one: `cat <&-` and `cat - <&-` say "Bad file descriptor".
        // The /dev/null put in its place was read as an empty prompt, and as a chat with no message.
        {kModel + " --chat <&-", "cannot read the messages: Bad file descriptor"},
        {kModel + " --tokenize -f - <&-", "--file: cannot read standard input: Bad file descriptor"},
        {kModel + " --perplexity - <&-", "--perplexity: cannot read standard input: Bad file descriptor"},
        {kModel + " --bench --bench-pp 0 --bench-tg 0", "nothing to measure"},
        {kModel + " --server --api-key ''", "--api-key is empty"},
        {kModel + " --server --host ''", "--host is empty"},
        {kModel + " --server --allowed-hosts ''", "--allowed-hosts is empty"},
        {kModel + " --server --cors-origins ''", "--cors-origins is empty"},
        {kModel + " --server --allowed-hosts my.lan:8080", "without its port"},
        {kModel + " --server --allowed-hosts 'a.lan,,b.lan'", "an item of the list is empty"},
        {kModel + " --server --allowed-hosts '*.example.com'", "not a host name or address"},
        // Over 64 bytes a token of the context: refused before tokenizing (base/limits.h).
        {kModel + " -c 4 -p " + std::string(300, 'a'), "too long to be tokenized"},
        {kModel + " -f build/tests/cli-huge-prompt.txt", "too long to be tokenized"},
        {kModel + " --perplexity tests/data/tinyshakespeare-valid.txt -c 2", "at least 3"},
        // Too short for a window: the -c that fits it is named (it said "lower -c", also for
        // an empty text, where no -c would do).
        {kModel + " --perplexity build/tests/cli-empty.txt", "perplexity needs at least 3"},
        {kModel + " --perplexity build/tests/cli-one-line.txt", " or less fits it)"},
        // 68 GB of KV cache for the default model: more than this machine (and CI's) has.
        {"models/tiny-shakespeare.hearth -c 16777216 -p hi", "largest -c that fits"},
    };
    for (const Case& c : cases) {
        CommandResult r = run_command("./run " + c.args);
        INFO(c.args << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.find(c.expect) != std::string::npos);
        CHECK(r.out.empty());
    }
}

// What a new user gives run first: the Hugging Face folder they downloaded, its
// model.safetensors, or a llama2.c checkpoint. run said only "is a folder, not a regular file"
// or "neither a hearth checkpoint nor a GGUF file (wrong magic)"; it names the quantize command
// that converts each now (the folder for a safetensors file, as quantize takes it), and quantize
// given a safetensors file asks for its folder.
TEST_CASE("cli: run given a folder, a safetensors file or a llama2.c file names the quantize command that converts it") {
    for (auto [model, command] :
         {std::pair{"tests/data/parity/mha", "quantize tests/data/parity/mha MODEL.hearth"},
          std::pair{"tests/data/parity/mha/model.safetensors", "quantize tests/data/parity/mha MODEL.hearth"},
          std::pair{"tests/data/llama2c/stories260K.bin", "quantize tests/data/llama2c/stories260K.bin MODEL.hearth"}}) {
        CAPTURE(model);
        CommandResult r = run_command(std::string("./run ") + model + " -p hi -n 1");
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.find(command) != std::string::npos);
    }
    CommandResult q = run_command("./quantize tests/data/parity/mha/model.safetensors build/tests/cli-st.hearth");
    CHECK(q.exit_code == 1);
    CHECK(count_lines(q.err) == 1);
    CHECK(q.err.find("give quantize the folder that holds it") != std::string::npos);
    CHECK(!exists("build/tests/cli-st.hearth"));
}

TEST_CASE("cli: a model whose weights hold a NaN is refused when its output is sampled or scored, not run to id 0") {
    // The GQA parity model's folder with one NaN in the final norm's weights (F32 safetensors).
    REQUIRE(run_command("rm -rf build/tests/nan-model && cp -r tests/data/parity/gqa build/tests/nan-model").exit_code == 0);
    std::string st = read_text("build/tests/nan-model/model.safetensors");
    uint64_t header = 0;
    std::memcpy(&header, st.data(), 8);
    const nlohmann::json h = nlohmann::json::parse(st.substr(8, header));
    REQUIRE(h["model.norm.weight"]["dtype"] == "F32");
    const float nan = std::nanf("");
    std::memcpy(&st[8 + header + h["model.norm.weight"]["data_offsets"][0].get<size_t>()], &nan, 4);
    {
        std::FILE* f = std::fopen("build/tests/nan-model/model.safetensors", "wb");
        REQUIRE(f);
        std::fwrite(st.data(), 1, st.size(), f);
        std::fclose(f);
    }
    REQUIRE(run_command("./quantize build/tests/nan-model build/tests/nan-model.hearth f32 -q").exit_code == 0);
    for (const std::string args :
         {"-p hi -n 4 --temp 0", "-p hi -n 4", "--perplexity tests/data/tinyshakespeare-valid.txt -c 64"}) {
        const CommandResult r = run_command("./run build/tests/nan-model.hearth " + args);
        INFO(args << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("not a number") != std::string::npos);
    }
}

TEST_CASE("cli: padding ids past the tokenizer (vocab 520, 512 pieces) print as nothing") {
    make_cli_model();
    CommandResult r = run_command("./run " + kModel + " --prompt-ids 1,515,519 -n 4 --temp 0 --ignore-eos");
    CHECK(r.exit_code == 0);
}

TEST_CASE("cli: --prompt-ids takes llama-tokenize's [a, b] as it prints them") {
    make_cli_model();
    const std::string args = " -n 6 --temp 0 --ignore-eos --print-ids";
    const CommandResult plain = run_command("./run " + kModel + " --prompt-ids 1,5,6" + args);
    const CommandResult bracketed = run_command("./run " + kModel + " --prompt-ids '[1, 5, 6]'" + args);
    INFO(plain.err << bracketed.err);
    CHECK(plain.exit_code == 0);
    CHECK(bracketed.exit_code == 0);
    CHECK(!plain.out.empty());
    CHECK(bracketed.out == plain.out);
    for (const char* bad : {"'[1, 5'", "'1,  5'", "'[]'", "' 1'"}) {
        const CommandResult r = run_command("./run " + kModel + " --prompt-ids " + bad + args);
        INFO(bad << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("--prompt-ids") != std::string::npos);
    }
}

TEST_CASE("cli: -f waits for a FIFO's writer, and reads no more of a pipe than the context could take") {
    make_cli_model();
    const std::string fifo = "build/tests/cli-prompt.fifo";
    unlink(fifo.c_str());
    REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
    // The writer opens the FIFO a second after run has: run must wait for it, not read an empty prompt.
    const CommandResult late = run_command("(sleep 1; timeout 10 sh -c \"printf 'Hi there' > " + fifo + "\") & ./run " + kModel +
                                           " --tokenize -f " + fifo + "; wait");
    const CommandResult direct = run_command("./run " + kModel + " --tokenize -p 'Hi there'");
    INFO(late.err << direct.err);
    CHECK(late.exit_code == 0);
    CHECK(direct.exit_code == 0);
    CHECK(direct.out.size() > 1);
    CHECK(late.out == direct.out);
    unlink(fifo.c_str());
    // 50 MB through a pipe with -c 512: refused having read 64 bytes a token of the context (the
    // limit generation would apply), not the 1 GiB a text file may have.
    const CommandResult big = run_command("head -c 50000000 /dev/zero | tr '\\0' a | ./run " + kModel + " -c 512 -f /dev/stdin");
    INFO(big.err);
    CHECK(big.exit_code == 1);
    CHECK(big.err.find("more than 32768 bytes") != std::string::npos);
    CHECK(big.err.find("raise -c") != std::string::npos);
}

TEST_CASE("cli: --print-margins names each generated id and the runner-up, the runner-up's logit below") {
    make_cli_model();
    const CommandResult r =
        run_command("./run " + kModel + " --prompt-ids 1,5,6 -n 6 --temp 0 --draft 0 --ignore-eos --print-ids --print-margins");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<std::string> generated;
    std::stringstream ids(r.out);
    for (std::string item; std::getline(ids, item, ',');) generated.push_back(item.substr(0, item.find('\n')));
    std::stringstream err(r.err);
    size_t n = 0;
    for (std::string line; std::getline(err, line);) {
        int id = -1, other = -1;
        double top1 = 0, top2 = 0;
        if (std::sscanf(line.c_str(), "run: margin: id %d logit %lf runner-up %d logit %lf", &id, &top1, &other, &top2) != 4)
            continue;
        INFO(line);
        REQUIRE(n < generated.size());
        CHECK(std::to_string(id) == generated[n++]);
        CHECK(other >= 0);
        CHECK(other != id);
        CHECK(top2 <= top1);
    }
    CHECK(n == 6);
}

TEST_CASE("cli: -s -1 is a seed from the clock, as llama.cpp's -1, and undoes an earlier -s") {
    make_cli_model();
    const std::string args = " --prompt-ids 1,5,6 -n 24 --temp 1.5 --top-k 0 --top-p 1 --min-p 0 --ignore-eos --print-ids";
    const CommandResult fixed = run_command("./run " + kModel + args + " -s 5");
    const CommandResult again = run_command("./run " + kModel + args + " -s 5");
    const CommandResult a = run_command("./run " + kModel + args + " -s -1");
    const CommandResult b = run_command("./run " + kModel + args + " -s 5 -s -1");
    INFO(a.err << b.err);
    REQUIRE(fixed.exit_code == 0);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    CHECK(again.out == fixed.out);  // a seed reproduces its ids
    // 24 tokens sampled from 520 at temperature 1.5: the same ids twice by chance is out of reach.
    CHECK(a.out != fixed.out);
    CHECK(b.out != fixed.out);
    CHECK(a.out != b.out);
}

TEST_CASE("cli: -t -1 is the default thread count, as llama.cpp's -t takes -1, and --help says so") {
    // llama.cpp's -t handler (common/arg.cpp) takes a value <= 0 for "choose for me"; scripts
    // written for it pass -t -1, which run refused as out of range.
    auto threads_used = [](const std::string& args) {
        const CommandResult r = run_command("./run models/tiny-shakespeare.hearth -p ROMEO: -n 2" + args);
        INFO(args << " -> " << r.err);
        CHECK(r.exit_code == 0);
        const size_t at = r.err.rfind(" | ");
        return at == std::string::npos ? -1 : std::atoi(r.err.c_str() + at + 3);  // "| N threads"
    };
    const int by_default = threads_used("");
    REQUIRE(by_default >= 1);
    CHECK(threads_used(" -t -1") == by_default);
    CHECK(threads_used(" -t 1 -t -1") == by_default);  // and undoes an earlier -t, as -s -1 does
    std::string help, word;                            // --help's words, its lines joined
    for (std::istringstream words(run_command("./run --help").out); words >> word;) help += word + " ";
    CHECK(help.find("(default, or -1: the number of physical cores") != std::string::npos);
    for (const char* bad : {"-2", "0"}) {
        const CommandResult r = run_command(std::string("./run models/tiny-shakespeare.hearth -p hi -t ") + bad);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("expected an integer from 1 to 1024, or -1") != std::string::npos);
    }
}

TEST_CASE("cli: -c 0 is the model's whole context, as llama.cpp's -c 0 (\"loaded from model\")") {
    // llama.cpp's -c help: "0 = loaded from model"; run refused 0 as out of range. A model that
    // declares 8192 positions, more than the 4096 run takes without -c.
    const std::string dir = "build/tests/cli-long-context", model = "build/tests/cli-long-context.hearth";
    REQUIRE(run_command("rm -rf " + dir + " && cp -r tests/data/parity/gqa " + dir +
                        " && sed -i 's/\"max_position_embeddings\": *256/\"max_position_embeddings\": 8192/' " + dir +
                        "/config.json && ./quantize " + dir + " " + model + " -q")
                .exit_code == 0);
    auto context_of = [&](const std::string& args) {
        const CommandResult r = run_command("printf '/stats\\n' | ./run " + model + " --chat -t 1" + args);
        INFO(args << " -> " << r.out << r.err);
        CHECK(r.exit_code == 0);
        const size_t at = r.out.find(" of ");
        return at == std::string::npos ? -1 : std::atoi(r.out.c_str() + at + 4);  // "context: 0 of N tokens"
    };
    CHECK(context_of("") == 4096);
    CHECK(context_of(" -c 0") == 8192);
    CHECK(context_of(" -c 100") == 100);
    // --perplexity's window too (named by the refusal of a text shorter than one, so as not to score 8192 tokens).
    write_file("build/tests/cli-short.txt", "ROMEO: Good morrow, my lord, and how fare you?\n");
    const CommandResult ppl = run_command("./run " + model + " --perplexity build/tests/cli-short.txt -c 0 -t 1");
    CHECK(ppl.err.find("less than one window of 8192") != std::string::npos);
}

TEST_CASE("cli: output that cannot be written is an error, not a silent success") {
    make_cli_model();
    // /dev/full: every write fails with ENOSPC, as on a full disk.
    for (const char* args : {" -p hi -n 4", " --prompt-ids 1,5 -n 4 --print-ids", " --tokenize -p hi"}) {
        const CommandResult r = run_command("./run " + kModel + args + " > /dev/full");
        INFO(args << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("cannot write the output: No space left on device") != std::string::npos);
    }
    // A closed stdout (`>&-`): coreutils' `cat >&-` says "Bad file descriptor" and exits 1. It was
    // opened on /dev/null for writing, and the text went there with exit 0.
    for (const char* args : {" -p hi -n 4", " --prompt-ids 1,5 -n 4 --print-ids", " --tokenize -p hi"}) {
        const CommandResult r = run_command("./run " + kModel + args + " >&-");
        INFO(args << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("cannot write the output: Bad file descriptor") != std::string::npos);
    }
    // --chat from a pipe: the first reply that cannot be written ends the chat, with the system's
    // words for why (cat stops at its first failed write too); it replied to every message, for
    // nobody, and said "Input/output error".
    for (const auto& [to, says] :
         {std::pair<std::string, std::string>{" > /dev/full", "No space left on device"}, {" >&-", "Bad file descriptor"}}) {
        const CommandResult r = run_command("printf 'a\\nb\\nc\\n' | ./run " + kModel + " --chat -n 4 --ignore-eos" + to);
        INFO(to << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("cannot write the output: " + says) != std::string::npos);
        CHECK(r.err.find("[reply stopped") == std::string::npos);
    }
    // --help, --version and --list-options too, in both programs, once (`ls --help >&-` fails alike).
    for (const std::string program : {"./run", "./quantize"})
        for (const char* what : {" --help", " --version", " --list-options"})
            for (const char* to : {" >&-", " >/dev/full"}) {
                const CommandResult r = run_command(program + what + to);
                INFO(program << what << to << " -> " << r.err);
                CHECK(r.exit_code == 1);
                CHECK(count_lines(r.err) == 1);
                CHECK(r.err.find("cannot write the output: ") != std::string::npos);
            }
    // A closed pipe with SIGPIPE ignored (as some shells and services leave it): the generation
    // stops at the first failed write rather than running to the end of the context for nobody.
    const CommandResult r =
        run_command("sh -c \"trap '' PIPE; ./run " + kModel + " -p hi -n -1 -c 4096 --ignore-eos -t 1 | head -c 1 >/dev/null\"");
    INFO(r.err);
    CHECK(r.err.find("cannot write the output: Broken pipe") != std::string::npos);
    CHECK(r.err.find("generation ") == std::string::npos);  // no summary of a generation that went on
}

TEST_CASE("cli: Ctrl-C during generation ends the line and prints the timing, then ends by SIGINT") {
    // llama.cpp's llama-cli, interrupted while it generates, prints a newline and its timings and
    // exits 130; a program that handles SIGINT still ends by it, so that a shell or a script sees
    // the interrupt (exit 128 + 2). run ended with the text cut mid-line and no timing line.
    // The Ctrl-C comes once generated text has arrived (a Ctrl-C before generation ends run at
    // once), however long loading takes on a busy machine or under the sanitizers. A background
    // job of a script has SIGINT ignored, which run keeps: env gives it back its default.
    const std::string out = "build/tests/cli-ctrl-c.out", err = "build/tests/cli-ctrl-c.err";
    const CommandResult r = run_command(
        "env --default-signal=INT ./run models/tiny-shakespeare.hearth -p ROMEO: -n -1 -c 65536 "
        "--ignore-eos -t 1 > " +
        out + " 2> " + err + " & pid=$!; for i in $(seq 1200); do [ $(wc -c < " + out +
        ") -gt 40 ] && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo $?");
    const std::string text = read_text(out), messages = read_text(err);
    INFO(messages);
    CHECK(r.out == "130\n");
    REQUIRE(text.size() > 40);
    CHECK(text.back() == '\n');
    CHECK(messages.find("run: load ") != std::string::npos);
    CHECK(messages.find(" | generation ") != std::string::npos);
}

TEST_CASE("cli: a chat command that takes no argument refuses one, and /help lists every command's names") {
    // A word after /reset was dropped and the conversation reset anyway: "/reset now" may be a
    // message as much as a typo, so neither is done, and stderr says why. /clear and /exit are
    // llama-cli's names for the same commands (its banner: "/exit or Ctrl+C", "/clear").
    const std::string chat = " | ./run models/tiny-shakespeare.hearth --chat -n 4 --temp 0 -t 1";
    const CommandResult r =
        run_command("printf 'hello\\n/reset now\\n/stats\\n/clear\\n/stats\\n/help\\n/exit\\nnot read\\n'" + chat);
    INFO(r.out << "---\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("[/reset takes no argument") != std::string::npos);
    CHECK(r.out.find(" tokens, 2 messages") != std::string::npos);    // one turn: neither reset nor sent
    CHECK(r.out.find("context: 0 messages (") != std::string::npos);  // /clear resets
    CHECK(r.out.find("/exit") != std::string::npos);                  // in /help's list
    CHECK(r.out.find("/clear") != std::string::npos);
    CHECK(r.out.find("context: ", r.out.find("/exit")) == std::string::npos);  // nothing after /exit

    for (const std::string command : {"/help", "/stats", "/quit", "/exit", "/clear"}) {
        const CommandResult extra = run_command("printf '" + command + " please\\n/system\\n'" + chat);
        INFO(command << ": " << extra.err);
        CHECK(extra.exit_code == 0);
        CHECK(extra.err.find("takes no argument") != std::string::npos);
        CHECK(extra.out == "system prompt: (none)\n");  // the chat went on, and printed nothing else
    }
}

TEST_CASE("cli: -f drops the newline that ends the file's last line, as llama.cpp's -f does") {
    make_cli_model();
    write_file("build/tests/cli-line.txt", "ROMEO: Good morrow\n");
    write_file("build/tests/cli-two-newlines.txt", "ROMEO: Good morrow\n\n");
    const CommandResult p = run_command("./run " + kModel + " --tokenize -p 'ROMEO: Good morrow'");
    const CommandResult line = run_command("./run " + kModel + " --tokenize -f build/tests/cli-line.txt");
    const CommandResult two = run_command("./run " + kModel + " --tokenize -f build/tests/cli-two-newlines.txt");
    REQUIRE(p.exit_code == 0);
    CHECK(line.out == p.out);
    CHECK(two.out != p.out);  // only one newline goes
}

TEST_CASE("cli: -f - and --perplexity - read standard input, as grep -f - does") {
    make_cli_model();
    // POSIX's guideline 13: "-" names standard input; a file named - is ./-. It was a file named -.
    const CommandResult p = run_command("./run " + kModel + " --tokenize -p 'ROMEO: Good morrow'");
    const CommandResult f = run_command("printf 'ROMEO: Good morrow\\n' | ./run " + kModel + " --tokenize -f -");
    INFO(f.err);
    REQUIRE(p.exit_code == 0);
    CHECK(f.exit_code == 0);
    CHECK(f.out == p.out);
    write_file("build/tests/cli-ppl-stdin.txt", read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 4096));
    const CommandResult file = run_command("./run " + kModel + " --perplexity build/tests/cli-ppl-stdin.txt -c 64 -t 1");
    const CommandResult piped = run_command("./run " + kModel + " --perplexity - -c 64 -t 1 < build/tests/cli-ppl-stdin.txt");
    INFO(piped.err);
    REQUIRE(file.exit_code == 0);
    CHECK(piped.exit_code == 0);
    CHECK(piped.out.substr(0, piped.out.find(" (")) == file.out.substr(0, file.out.find(" (")));  // the same perplexity
}

TEST_CASE("cli: what -f - and --perplexity - say of their input names it standard input, not /dev/stdin") {
    // POSIX names the file an operand "-" stands for "the standard input"; /dev/stdin is only how
    // run opens it, and the user never typed it.
    make_cli_model();
    const std::string many_bytes = "printf '%0300d' 0 | ";
    struct Case {
        std::string command, expect;
    } cases[] = {
        {"./run " + kModel + " -f - < build/tests", "run: --file: standard input is a folder"},
        {"./run " + kModel + " --perplexity - < build/tests", "run: --perplexity: standard input is a folder"},
        {many_bytes + "./run " + kModel + " -f - -c 4", "run: --file: standard input holds more than 256 bytes"},
        {"printf '' | ./run " + kModel + " -f - -n 1 --temp 0", "run: note: --file: standard input is empty"},
    };
    for (const Case& c : cases) {
        const CommandResult r = run_command(c.command);
        INFO(c.command << " -> " << r.err);
        CHECK(r.err.find(c.expect) == 0);
        CHECK(r.err.find("/dev/stdin") == std::string::npos);
    }
}

TEST_CASE("cli: an option that has no effect in the mode chosen is named in a warning, and run goes on") {
    // --temp with --perplexity, --port without --server: ignored without a word, they looked as
    // if they had changed the figure or served. A warning, as gcc's "linker input file unused
    // because linking not done", and not a refusal, so that a script passing the same options
    // to every mode keeps working.
    const std::string model = "./run models/tiny-shakespeare.hearth ";
    write_file("build/tests/cli-ppl-modes.txt", read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 2048));
    const std::string ppl = "--perplexity build/tests/cli-ppl-modes.txt -c 64 -t 1";
    const CommandResult plain = run_command(model + ppl);
    // -f's file is not even read: it would be a prompt, and there is none here.
    const CommandResult extra = run_command(model + ppl + " --temp 0.5 --temp 0.7 -n 5 -f build/tests/no-such.txt");
    INFO(extra.err);
    REQUIRE(plain.exit_code == 0);
    CHECK(plain.err.find("warning") == std::string::npos);
    CHECK(extra.exit_code == 0);
    CHECK(extra.out.substr(0, extra.out.find(" (")) == plain.out.substr(0, plain.out.find(" (")));  // the same perplexity
    CHECK(extra.err.find("run: warning: --temp has no effect with --perplexity; it is for generating text, --chat and "
                         "--server\n") != std::string::npos);
    CHECK(extra.err.find("--temp has no effect", extra.err.find("--temp has no effect") + 1) == std::string::npos);  // once
    CHECK(extra.err.find("run: warning: --n-predict has no effect with --perplexity") != std::string::npos);
    CHECK(extra.err.find("run: warning: --file has no effect with --perplexity") != std::string::npos);

    const CommandResult port = run_command(model + "-p ROMEO: -n 2 -t 1 --port 9000 --bench-reps 3");
    INFO(port.err);
    CHECK(port.exit_code == 0);
    CHECK(port.err.find("run: warning: --port has no effect when generating text; it is for --server\n") == 0);
    CHECK(port.err.find("run: warning: --bench-reps has no effect when generating text; it is for --bench\n") !=
          std::string::npos);
    const CommandResult fitting = run_command(model + "-p ROMEO: -n 2 -t 1 --temp 0 -c 64 -s 3 --draft 0");
    CHECK(fitting.exit_code == 0);
    CHECK(fitting.err.find("warning") == std::string::npos);
}

TEST_CASE("cli: --perplexity into a log writes a progress line every tenth of the windows, no carriage returns") {
    // 8 KB of the held-out text: about 2,500 tokens, some 40 windows of 64.
    write_file("build/tests/cli-ppl.txt", read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 8192));
    const CommandResult r = run_command("./run models/tiny-shakespeare.hearth --perplexity build/tests/cli-ppl.txt -c 64 -t 1");
    REQUIRE(r.exit_code == 0);
    INFO(r.err);
    CHECK(r.err.find('\r') == std::string::npos);
    size_t progress = 0;
    for (size_t at = r.err.find("] perplexity "); at != std::string::npos; at = r.err.find("] perplexity ", at + 1)) progress++;
    CHECK(progress == 10);  // one as each tenth of the windows is done, the last at the end
    CHECK(r.out.find("perplexity: ") == 0);
}

TEST_CASE("cli: --perplexity without -c scores windows of 512, or of the model's context when shorter") {
    // llama.cpp's perplexity figures are quoted at -c 512; a model that declares fewer positions
    // (the GQA parity model: 256) gets its own.
    make_cli_model();
    write_file("build/tests/cli-ppl-default.txt", read_text("tests/data/tinyshakespeare-valid.txt").substr(0, 8192));
    for (const auto& [model, window] : {std::pair<std::string, int>{"models/tiny-shakespeare.hearth", 512}, {kModel, 256}}) {
        const CommandResult r = run_command("./run " + model + " --perplexity build/tests/cli-ppl-default.txt -t 1");
        INFO(model << " -> " << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find(" windows of " + std::to_string(window) + ";") != std::string::npos);
    }
}

TEST_CASE("cli: a truncated checkpoint is refused, not run") {
    make_cli_model();
    std::string data = read_text(kModel);
    for (size_t len : {size_t(10), size_t(300), data.size() / 2, data.size() - 1}) {
        std::string path = "build/tests/cli-truncated.hearth";
        FILE* f = std::fopen(path.c_str(), "wb");
        std::fwrite(data.data(), 1, len, f);
        std::fclose(f);
        CommandResult r = run_command("./run " + path + " -n 4");
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
    }
}

TEST_CASE("cli: a model file truncated while run has it mapped ends run with a clear message") {
    const std::string copy = "build/tests/cli-truncated-later.hearth";
    REQUIRE(run_command("cp models/tiny-shakespeare.hearth " + copy).exit_code == 0);
    // run loads the model at once and then waits for the message; meanwhile the file shrinks, so
    // the weights the reply reads are gone (the f16 default model is read from the mapping).
    CommandResult r = run_command("{ sleep 2; truncate -s 65536 " + copy + "; echo ROMEO:; } | ./run " + copy + " --chat -n 8");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("the model file was changed or truncated while in use") != std::string::npos);
}

TEST_CASE("cli: generation stops when the context is full, and says so") {
    make_cli_model();
    CommandResult r = run_command("./run " + kModel + " --prompt-ids 1,5,6,7 -c 10 -n 100 --temp 0 --ignore-eos --print-ids");
    CHECK(r.exit_code == 0);
    CHECK(count_lines(r.out) == 1);
    int ids = 1;
    for (char c : r.out) ids += c == ',';
    CHECK(ids == 6);  // 4 prompt + 6 generated = 10 positions
    CHECK(r.err.find("context") != std::string::npos);
    // -n -1 (llama.cpp's "no limit") runs to the same end; -2 is no count.
    const CommandResult all =
        run_command("./run " + kModel + " --prompt-ids 1,5,6,7 -c 10 -n -1 --temp 0 --ignore-eos --print-ids");
    CHECK(all.exit_code == 0);
    CHECK(all.out == r.out);
    CHECK(run_command("./run " + kModel + " --prompt-ids 1,5,6,7 -n -2").exit_code == 1);
}

TEST_CASE("cli: more threads than the CPUs run may use are cut to that number, and it says so") {
    make_cli_model();
    // The CPUs this process may run on, as coreutils counts them (nproc also reads OMP_NUM_THREADS).
    const CommandResult nproc = run_command("env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc");
    REQUIRE(nproc.exit_code == 0);
    const int cpus = std::atoi(nproc.out.c_str());
    REQUIRE(cpus > 0);
    if (cpus >= 1000) {
        MESSAGE("not tested: this machine has " << cpus << " CPUs, as many as -t 1000 asks for");
        return;
    }
    CommandResult r = run_command("./run " + kModel + " --prompt-ids 1,5,6 -n 2 --temp 0 -t 1000 --print-ids");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(count_lines(r.out) == 1);
    CHECK(r.err.find("run: -t 1000 is more than the " + std::to_string(cpus) + " CPUs") != std::string::npos);
    CHECK(r.err.find("| " + std::to_string(cpus) + " threads\n") != std::string::npos);
}

TEST_CASE("cli: --bench-seqs measures several sequences generated together") {
    CommandResult r =
        run_command("./run models/tiny-shakespeare.hearth --bench --bench-pp 0 --bench-tg 6 --bench-seqs 3 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    double all = 0, per = 0;
    const size_t at = r.out.find("tg6 x 3 sequences: ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(r.out.c_str() + at, "tg6 x 3 sequences: %lf tok/s in all, %lf per sequence", &all, &per) == 2);
    CHECK(all > 0);
    CHECK(per == doctest::Approx(all / 3).epsilon(0.01));
    // More sequences than a batch holds are refused.
    r = run_command("./run models/tiny-shakespeare.hearth --bench --bench-seqs 65");
    CHECK(r.exit_code != 0);
    CHECK(count_lines(r.err) == 1);
}

TEST_CASE("cli: --bench-depth starts both parts after that many cached positions") {
    CommandResult r = run_command(
        "./run models/tiny-shakespeare.hearth --bench --bench-pp 8 --bench-tg 4 --bench-seqs 2 --bench-depth 70 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("pp8 @ d70: ") != std::string::npos);
    CHECK(r.out.find("tg4 @ d70 x 2 sequences: ") != std::string::npos);
    CHECK(r.err.find("past the model's context") == std::string::npos);
    // Past the model's context (the default model's is far below 4000) it runs, and says so first.
    r = run_command(
        "./run models/tiny-shakespeare.hearth --bench --bench-pp 8 --bench-tg 0 --bench-depth 4000 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("run: note: the bench runs to 4008 positions, past the model's context of ") != std::string::npos);
    CHECK(r.out.find("pp8 @ d4000: ") != std::string::npos);
    // Without a depth the rows keep their names.
    r = run_command("./run models/tiny-shakespeare.hearth --bench --bench-pp 8 --bench-tg 4 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("pp8: ") != std::string::npos);
    CHECK(r.out.find("tg4: ") != std::string::npos);
    r = run_command("./run models/tiny-shakespeare.hearth --bench --bench-depth -1");
    CHECK(r.exit_code != 0);
    CHECK(count_lines(r.err) == 1);
}

// The kernel rows chosen at start-up from the CPU are named: each entry "TYPE[ x8] ISA (from N)",
// one per kind of matrix, the file's q4_0 first.
TEST_CASE("cli: --bench and --verbose name the kernel rows the CPU runs") {
    const std::string model = "build/tests/cli-model-q4_0.hearth";
    if (!exists(model)) REQUIRE(run_command("./quantize tests/data/parity/gqa " + model + " q4_0 -q").exit_code == 0);
    auto check_entries = [](const std::string& text, const std::string& label) {
        const size_t at = text.find(label);
        REQUIRE(at != std::string::npos);
        const std::string line = text.substr(at + label.size(), text.find('\n', at) - at - label.size());
        CAPTURE(line);
        CHECK(line.rfind("q4_0 ", 0) == 0);  // the first kind of matrix the tensor table lists is q4_0
        size_t entries = 0;
        for (size_t p = 0; p < line.size(); entries++) {
            const size_t end = std::min(line.find(", ", p), line.size());
            const std::string e = line.substr(p, end - p);
            CAPTURE(e);
            CHECK(e.find(" (from ") != std::string::npos);
            CHECK(e.back() == ')');
            p = end + 2;
        }
        CHECK(entries >= 1);
    };
    CommandResult r = run_command("./run " + model + " --bench --bench-pp 8 --bench-tg 4 --bench-seqs 2 --bench-reps 1 -t 1");
    CHECK(r.exit_code == 0);
    check_entries(r.out, "kernels for pp8: ");
    check_entries(r.out, "kernels for tg (2 tokens a pass): ");
    r = run_command("./run " + model + " -p 'a' -n 2 --verbose");
    CHECK(r.exit_code == 0);
    check_entries(r.err, "run: kernels for one token: ");
}

TEST_CASE("cli: the same seed samples the same text, and timing goes to stderr") {
    make_cli_model();
    std::string cmd = "./run " + kModel + " -p 'To be' -n 20 --temp 1 --seed 5 --ignore-eos --print-ids";
    CommandResult a = run_command(cmd), b = run_command(cmd);
    CHECK(a.exit_code == 0);
    CHECK(a.out == b.out);
    CommandResult c = run_command("./run " + kModel + " -p 'To be' -n 20 --temp 1 --seed 6 --ignore-eos --print-ids");
    CHECK(c.out != a.out);
    CHECK(a.err.find("tok/s") != std::string::npos);
    CHECK(a.err.find("load") != std::string::npos);
}

TEST_CASE("cli: quantize refuses bad input and leaves no output behind") {
    make_cli_model();
    const std::string out = "build/tests/cli-out.hearth";
    std::remove(out.c_str());
    CHECK(run_command("./quantize build/tests/no-such-folder " + out).exit_code == 1);
    CHECK(run_command("./quantize tests/data/parity/gqa " + out + " --type q9").exit_code == 1);
    // Too many arguments, too few, an empty path, or two types: one line that says so, before any
    // work. A missing operand is one line as in coreutils (`cp a`: "missing destination file
    // operand after 'a'"), not the whole usage; a type given both ways was the operand's, silently.
    for (const auto& [args, says] :
         {std::pair<std::string, std::string>{"tests/data/parity/gqa " + out + " q8_0 extra", "too many"},
          {"", "missing INPUT and OUTPUT"},
          {"tests/data/parity/gqa", "missing OUTPUT after 'tests/data/parity/gqa'"},
          {"-q tests/data/parity/gqa", "missing OUTPUT"},
          {"tests/data/parity/gqa " + out + " --type q4_0 q8_0", "two types, --type q4_0 and TYPE q8_0"},
          {"tests/data/parity/gqa " + out + " q8_0 -t q4_0", "two types"},
          {"tests/data/parity/gqa '' q8_0", "OUTPUT is empty"},
          {"'' " + out, "INPUT is empty"}}) {
        const CommandResult r = run_command("./quantize " + args);
        INFO(args << " -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.find(says) != std::string::npos);
    }
    CHECK(!exists(out));
    // The same type both ways is one type.
    CHECK(run_command("./quantize tests/data/parity/gqa " + out + " q8_0 --type q8_0 -q").exit_code == 0);
    std::remove(out.c_str());

    // The output may not replace the input.
    std::string before = read_text(kModel);
    CommandResult same = run_command("./quantize " + kModel + " " + kModel + " --type f32");
    CHECK(same.exit_code == 1);
    CHECK(read_text(kModel) == before);

    // A damaged Hugging Face folder: truncated weights, then an unsupported config.
    REQUIRE(run_command("rm -rf build/tests/broken && cp -r tests/data/parity/mha build/tests/broken").exit_code == 0);
    REQUIRE(run_command("truncate -s 300000 build/tests/broken/model.safetensors").exit_code == 0);
    CommandResult t = run_command("./quantize build/tests/broken " + out);
    CHECK(t.exit_code == 1);
    CHECK(count_lines(t.err) == 1);
    CHECK(t.err.find("model.safetensors") != std::string::npos);
    CHECK(!exists(out));

    REQUIRE(run_command("rm -rf build/tests/broken && cp -r tests/data/parity/mha build/tests/broken").exit_code == 0);
    REQUIRE(run_command("sed -i 's/\"rope_theta\"/\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}, \"rope_theta\"/' "
                        "build/tests/broken/config.json")
                .exit_code == 0);
    CommandResult s = run_command("./quantize build/tests/broken " + out);
    CHECK(s.exit_code == 1);
    CHECK(s.err.find("rope_scaling") != std::string::npos);
    CHECK(!exists(out));

    REQUIRE(run_command("rm -rf build/tests/broken && cp -r tests/data/parity/mha build/tests/broken && "
                        "echo '{not json' > build/tests/broken/config.json")
                .exit_code == 0);
    CommandResult j = run_command("./quantize build/tests/broken " + out);
    CHECK(j.exit_code == 1);
    CHECK(count_lines(j.err) == 1);
    CHECK(!exists(out));
}

// A std::bad_alloc inside an OpenMP parallel region (a kernel's thread_scratch, quantize's rows)
// left the region and ended the process in std::terminate: libstdc++'s "terminate called after
// throwing an instance of 'std::bad_alloc'", an abort, exit 134, where the same failure on the
// main thread is one line and exit 1. The q4_0 kernels take their activations' scratch inside
// the region; the default model's f16 ones take none.
static const std::string kQ4Model = "build/tests/cli-tiny-q4_0.hearth";
static const std::string kLongPrompt = "\"" + [] {  // double-quoted: it goes inside sh -c '...' too
    std::string p;
    for (int i = 0; i < 60; i++) p += "ROMEO: ";
    return p;
}() + "\"";

static bool sanitized_build() {
    const char* dir = std::getenv("HEARTH_BIN_DIR");
    return dir && *dir;
}

TEST_CASE("cli: memory that runs out inside a parallel region (ulimit -v) is one line and exit 1, not an abort") {
    if (sanitized_build()) {
        MESSAGE("skipped: AddressSanitizer reserves terabytes of address space, so ulimit -v cannot be used");
        return;
    }
    if (!exists(kQ4Model))
        REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + kQ4Model + " q4_0 -q").exit_code == 0);
    // One thread: the allocations inside the region are the main thread's (no worker to start, whose
    // stack would be the largest piece of address space left to fail). Small stacks for the rest.
    auto run_limited = [](uint64_t kib) {
        return run_command("sh -c 'ulimit -s 1024; ulimit -v " + std::to_string(kib) + "; exec ./run " + kQ4Model + " -p " +
                           kLongPrompt + " -n 2 -t 1 > /dev/null'");
    };
    // The least address space the run needs, to a KiB. Its scratch is taken last, at the first
    // matmul of the prompt: just below the least, that is what fails.
    uint64_t fails = 1 << 10, runs = 64 << 20;
    REQUIRE(run_limited(runs).exit_code == 0);
    while (runs - fails > 1) {
        const uint64_t mid = (fails + runs) / 2;
        (run_limited(mid).exit_code == 0 ? runs : fails) = mid;
    }
    for (uint64_t less : {1, 2, 4, 8, 16, 32, 64}) {
        const CommandResult r = run_limited(runs - less);
        INFO("ulimit -v " << runs - less << " (the least that runs: " << runs << ") -> " << r.err);
        CHECK(r.exit_code == 1);
        CHECK(count_lines(r.err) == 1);
        CHECK(r.err.find("memory") != std::string::npos);
    }
}

TEST_CASE("cli: an allocation that fails on an OpenMP worker thread is one line and exit 1; quantize leaves no file") {
    if (sanitized_build()) {
        MESSAGE("skipped: a preloaded malloc cannot stand in front of AddressSanitizer's");
        return;
    }
    const std::string shim = "build/tests/fail_thread_malloc.so";
    REQUIRE(exists(shim));
    if (!exists(kQ4Model))
        REQUIRE(run_command("./quantize models/tiny-shakespeare.hearth " + kQ4Model + " q4_0 -q").exit_code == 0);
    // Every malloc on a thread other than the main one fails (tests/cli/fail_thread_malloc.cpp).
    const std::string inject = "env HEARTH_FAIL_THREAD_MALLOC=1 LD_PRELOAD=" + shim + " ";
    CommandResult r = run_command("./run " + kQ4Model + " -p " + kLongPrompt + " -n 2 -t 2 > /dev/null");
    REQUIRE(r.exit_code == 0);  // without the injection it runs
    r = run_command(inject + "./run " + kQ4Model + " -p " + kLongPrompt + " -n 2 -t 2");
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("run: out of memory") == 0);

    const std::string dir = "build/tests/cli-oom-quantize", out = dir + "/out.hearth";
    REQUIRE(run_command("rm -rf " + dir + " && mkdir -p " + dir).exit_code == 0);
    r = run_command("env OMP_NUM_THREADS=2 " + inject + "./quantize models/tiny-shakespeare.hearth " + out + " q4_0 -q");
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("quantize: out of memory") != std::string::npos);
    CHECK(r.err.find("terminate") == std::string::npos);
    CHECK(run_command("ls -A " + dir).out.empty());  // neither OUT nor OUT.partial-*
}

TEST_CASE("cli: quantize converts a hearth file to another type") {
    make_cli_model();
    const std::string out = "build/tests/cli-f32.hearth";
    CommandResult r = run_command("./quantize " + kModel + " " + out + " f32 -q");
    CHECK(r.exit_code == 0);
    CommandResult a = run_command("./run " + out + " --prompt-ids 1,5,6 -n 8 --temp 0 --print-ids --ignore-eos");
    CHECK(a.exit_code == 0);
    CHECK(count_lines(a.out) == 1);
}
