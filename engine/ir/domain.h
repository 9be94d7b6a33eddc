#pragma once
// Op domains as geopt stores them.
#include <string>
#include <string_view>

namespace geopt {

// The default ONNX domain is stored as "" (ONNX also accepts "ai.onnx").
inline constexpr std::string_view kOnnxDomain = "";
// The project's own fused ops (see docs/OPS.md).
inline constexpr std::string_view kGeoptDomain = "ai.geopt";

// Whether a domain names ONNX's default one ("" or "ai.onnx").
inline bool is_onnx_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }
// The domain as geopt stores it: ONNX's default one as "", any other as written.
inline std::string canonical_domain(std::string_view domain) {
  return is_onnx_domain(domain) ? std::string() : std::string(domain);
}

}  // namespace geopt
