#pragma once
// Phrases the optimize and compile reports share.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ascend/cost_model.h"
#include "ascend/precision_pass.h"
#include "eval/compare.h"

namespace geopt::api {

// "12 -> 8", and where control-flow bodies hold kernels "12 -> 8 (in bodies 5 -> 3)".
std::string kernel_counts(const ascend::GraphCost& before, const ascend::GraphCost& after);

// "kernels f16 84, f32 6 (kept in fp32: LayerNorm 4, Softmax 2); 14 Cast(s) inserted, 52 constant(s) stored
// as f16"
std::string precision_text(const ascend::PrecisionReport& report);
nlohmann::ordered_json precision_json(const ascend::PrecisionReport& report);

// "0.0001 + 0.0001 x |original|", and ", or cosine >= 0.999 per output" where the
// tolerance takes a cosine (a quantized model).
std::string tolerance_text(const Tolerance& t, const char* reference);

// "output 'logits': max abs 0.0123, max rel 0.0042, cosine 0.999998"
std::string output_error_text(const OutputError& e);
nlohmann::ordered_json output_errors_json(const std::vector<OutputError>& errors);

}  // namespace geopt::api
