// The parsers of option values and option files: --input_shape, --input_shape_range's
// dims, a --modify_mixlist JSON, a --fusion-switch-file TOML and a --soc-version profile
// TOML. The first byte picks the parser; the rest is its text.
#include "ascend/hardware_profile.h"
#include "ascend/precision_mode.h"
#include "dsl/rule_set.h"
#include "fuzz_support.h"
#include "onnx/import.h"
#include "util/error.h"

namespace {

using namespace geopt;

// One rule set for the process: a switch file only turns its rules on and off.
dsl::RuleSet& shipped_rules() {
  static const std::unique_ptr<dsl::RuleSet> rules = [] {
    std::vector<dsl::Diagnostic> errors;
    auto r = dsl::RuleSet::load({std::string(GEOPT_SOURCE_DIR_STR) + "/rules"}, errors);
    if (!r || !errors.empty()) throw InternalError("the shipped rules do not load");
    return r;
  }();
  return *rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 4;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  fuzz::refused_or_fine([&] {
    switch (which) {
      case 0:
        parse_input_shape_entries(text);
        break;
      case 1:
        ascend::load_mix_list(fuzz::as_file(data + 1, size - 1, ".json").string());
        break;
      case 2: {
        shipped_rules().apply_switch_file(fuzz::as_file(data + 1, size - 1, ".toml").string());
        break;
      }
      default:
        ascend::load_profile(fuzz::as_file(data + 1, size - 1, ".toml").string());
    }
  });
  return 0;
}
