#include "report_text.h"
#include <cstdio>

namespace geopt::api {

std::string kernel_counts(const ascend::GraphCost& before, const ascend::GraphCost& after) {
  std::string text = std::to_string(before.kernels) + " -> " + std::to_string(after.kernels);
  if (before.body_kernels || after.body_kernels)
    text += " (in bodies " + std::to_string(before.body_kernels) + " -> " +
            std::to_string(after.body_kernels) + ")";
  return text;
}

}  // namespace geopt::api

namespace geopt::api {

namespace {

std::string counts(const std::map<std::string, size_t>& m) {
  std::string text;
  for (const auto& [name, n] : m) text += (text.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return text;
}

}  // namespace

std::string precision_text(const ascend::PrecisionReport& r) {
  if (r.by_dtype.empty() && r.casts == 0) return "as the model's dtypes (must_keep_origin_dtype)";
  std::string text = "kernels " + counts(r.by_dtype);
  if (!r.kept_f32.empty()) text += " (kept in fp32: " + counts(r.kept_f32) + ")";
  text += "; " + std::to_string(r.casts) + " Cast(s) inserted, " + std::to_string(r.constants) +
          " constant(s) stored again";
  if (r.saturated)
    text += ", " + std::to_string(r.saturated) + " constant element(s) beyond fp16 saturated at +-65504";
  return text;
}

nlohmann::ordered_json precision_json(const ascend::PrecisionReport& r) {
  return {{"kernels", r.by_dtype},
          {"kept_f32", r.kept_f32},
          {"casts", r.casts},
          {"constants", r.constants},
          {"saturated", r.saturated}};
}

std::string output_error_text(const OutputError& e) {
  char text[256];
  std::snprintf(text, sizeof text,
                "output '%s': max abs %.3g (%.3g of its largest |value|), max rel %.3g, cosine %.6f",
                e.name.c_str(), e.max_abs, e.relative(), e.max_rel, e.cosine);
  return text;
}

nlohmann::ordered_json output_errors_json(const std::vector<OutputError>& errors) {
  auto j = nlohmann::ordered_json::array();
  for (const auto& e : errors)
    j.push_back({{"name", e.name},
                 {"max_abs", e.max_abs},
                 {"relative", e.relative()},
                 {"max_rel", e.max_rel},
                 {"cosine", e.cosine}});
  return j;
}

std::string tolerance_text(const Tolerance& t, const char* reference) {
  char text[160];
  std::snprintf(text, sizeof text, "%g + %g x |%s|", t.atol, t.rtol, reference);
  std::string s = text;
  if (t.min_cosine > 0) {
    std::snprintf(text, sizeof text, ", or cosine >= %g per output", t.min_cosine);
    s += text;
  }
  if (!t.basis.empty()) s += "; " + t.basis;
  return s;
}

}  // namespace geopt::api
