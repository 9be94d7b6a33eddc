#include "ir/auto_pad.h"

#include <array>
#include <utility>

namespace geopt {

std::optional<AutoPad> parse_auto_pad(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, AutoPad>, 5> kNames = {{
      {"", AutoPad::NotSet},
      {"NOTSET", AutoPad::NotSet},
      {"SAME_UPPER", AutoPad::SameUpper},
      {"SAME_LOWER", AutoPad::SameLower},
      {"VALID", AutoPad::Valid},
  }};
  for (const auto& [name, value] : kNames)
    if (name == text) return value;
  return std::nullopt;
}

}  // namespace geopt
