// Parsing JSON from a file or a request (nlohmann-json), with the nesting depth bounded while
// parsing (limits::kJsonDepth): a value 200,000 arrays deep is refused before it exists, so
// nothing that later copies, compares or prints a value can overflow the stack.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hearth {

// "" and the value in *out, or a one-line reason (where the text stops being JSON, or that it
// nests too deeply). Invalid UTF-8 inside strings is an error, as nlohmann-json's parser says.
std::string parse_json(std::string_view text, nlohmann::json* out);

}  // namespace hearth
