// A program's command line as one table of options: parsing, --help and the CLI test
// (through the hidden --list-options) all read the table, so they cannot disagree.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hearth {

// Where an option's value goes. The pointer's type is the option's kind: bool* a flag
// (set to true, takes no value), int* or uint64_t* an integer, float* a real number,
// std::string* text.
using OptionTarget = std::variant<bool*, int*, uint64_t*, float*, std::string*>;

// Whether a number option takes -1 for its default, outside its range, as llama.cpp's scripts
// pass it (-s -1, -t -1): the value before parsing is kept, or put back after an earlier one.
enum class MinusOne { in_range_only, means_default };

struct Option {
    const char* short_name;  // "-n", or "" when there is none
    const char* long_name;   // "--n-predict"
    const char* value_name;  // what --help calls the value ("N", "FILE"); "" for a flag
    OptionTarget target;
    std::string help;
    double min, max;            // the accepted range of a number, inclusive; a uint64_t takes all of its own
    std::string default_shown;  // --help's "(default: ...)"; "" shows a number's value before parsing
    MinusOne minus_one;         // --help says "(default, or -1: ...)" when it means the default
    unsigned modes = 0;         // the program's modes (bits it defines) in which the option has an effect; 0: all

    // A table row in this order; what a row does not need may be left out.
    Option(const char* short_name, const char* long_name, const char* value_name, OptionTarget target, std::string help,
           double min = 0, double max = 0, std::string default_shown = "", MinusOne minus_one = MinusOne::in_range_only)
        : short_name(short_name),
          long_name(long_name),
          value_name(value_name),
          target(target),
          help(std::move(help)),
          min(min),
          max(max),
          default_shown(std::move(default_shown)),
          minus_one(minus_one) {}
    // A row for some modes only: Option{...}.only_in(kChat | kServer), as llama.cpp's
    // common_arg(...).set_examples({...}).
    Option& only_in(unsigned mode_bits) {
        modes = mode_bits;
        return *this;
    }
};

struct OptionSection {
    std::string title;  // --help's heading; "" for none
    std::vector<Option> options;
};

struct CommandLine {
    std::string program;  // prefixes error messages: "run: ..."
    std::string usage;    // --help's text before the options
    std::vector<OptionSection> sections;
    std::string epilogue;  // --help's text after the options
    // --help's examples of a long option's value after '=', options of this program's own
    // ("--n-predict=5, --prompt="); none when empty.
    std::string equals_examples;
};

struct Arguments {
    std::vector<std::string> positional;  // the arguments that are not options, in order
    std::vector<std::string> given;       // the long names of the options that appeared
    bool was_given(const std::string& long_name) const;
};

// Sets the target of every option given and collects the rest in *args. A value follows its
// option as the next argument, or for a long option after '=' in the same one (--temp=0.5, as
// GNU getopt_long); a flag given "=..." is an error. "--" ends the options: the arguments after
// it are positional, whatever they begin with. Returns -1 when
// the program should go on, else its exit code: 0 after printing --help, --version (the
// commit built) or the table for --list-options on stdout; 1 after a one-line error on
// stderr (an unknown option, a missing value, a value that is not a number in range).
//
// --list-options prints a line per option: its long name, its short name or "-", its kind
// (flag, integer, real, text) and, for numbers, the least and greatest value of its range (a
// uint64_t's least is -1, its default; an int's -1 for its default is not listed).
int parse_command_line(const CommandLine& cl, int argc, char** argv, Arguments* args);

// The options given that have no effect in `mode` (one of the bits of Option::modes), once each,
// in the order they were first given.
std::vector<const Option*> options_without_effect(const CommandLine& cl, const Arguments& args, unsigned mode);

}  // namespace hearth
