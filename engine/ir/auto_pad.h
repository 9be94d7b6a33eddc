#pragma once
// ONNX's auto_pad attribute of convs and pools, read once into a value instead of
// compared as text at each window computation.
#include <optional>
#include <string_view>

namespace geopt {

enum class AutoPad {
  NotSet,     // the explicit `pads` (also an empty string)
  SameUpper,  // output = ceil(input / stride), the odd padding at the end
  SameLower,  // the same, the odd padding at the start
  Valid,      // no padding
};

// nullopt for a value ONNX does not define.
std::optional<AutoPad> parse_auto_pad(std::string_view text);

inline bool is_same(AutoPad p) { return p == AutoPad::SameUpper || p == AutoPad::SameLower; }

}  // namespace geopt
