#include "base/json_input.h"

#include "base/limits.h"
#include "base/printable.h"

namespace hearth {

namespace {
struct TooDeep {};
}  // namespace

std::string parse_json(std::string_view text, nlohmann::json* out) {
    // The callback sees every value start with its depth; throwing stops the parser there.
    auto depth_check = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
            depth >= limits::kJsonDepth)
            throw TooDeep{};
        return true;
    };
    try {
        *out = nlohmann::json::parse(text.begin(), text.end(), depth_check);
        return "";
    } catch (const TooDeep&) {
        *out = nullptr;
        return "JSON nested more than " + std::to_string(limits::kJsonDepth) + " levels deep";
    } catch (const nlohmann::json::exception& e) {
        *out = nullptr;
        return "not valid JSON: " + printable(e.what(), 200);
    }
}

}  // namespace hearth
