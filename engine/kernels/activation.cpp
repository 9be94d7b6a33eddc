#include "kernels/activation.h"

#include <algorithm>
#include <cmath>

#include "kernels/row_math.h"

namespace geopt {

void gelu_in_place(HostTensor& y, bool tanh_approximation) {
  float* p = y.mutable_data<float>();
  const int64_t n = y.size();
  constexpr int64_t kChunk = 4096;
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t first = 0; first < n; first += kChunk)
    gelu_row(p + first, std::min(kChunk, n - first), tanh_approximation);
}

void apply_activation(const KernelContext& ctx, HostTensor& y, const std::string& name,
                      const std::vector<float>& params) {
  if (name == "none" || name.empty()) return;
  float* p = y.mutable_data<float>();
  const int64_t n = y.size();
  auto each = [&](auto f) {
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
  };
  if (name == "Relu") {
    each([](float v) { return v < 0 ? 0.0f : v; });  // NaN stays NaN, as ONNX's max(x, 0)
  } else if (name == "Clip") {
    if (params.size() != 2) ctx.fail("Clip activation needs 2 params (min, max)");
    float lo = params[0], hi = params[1];
    each([lo, hi](float v) { return v < lo ? lo : (v > hi ? hi : v); });
  } else if (name == "LeakyRelu") {
    float a = params.empty() ? 0.01f : params[0];
    each([a](float v) { return v >= 0 ? v : a * v; });
  } else if (name == "HardSwish") {
    each([](float v) { return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f)); });
  } else if (name == "Sigmoid") {
    each([](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  } else if (name == "SiLU") {
    each([](float v) { return v / (1.0f + std::exp(-v)); });
  } else if (name == "Mish") {  // x * tanh(softplus(x)); softplus is x itself past 20, as ONNX's Softplus
                                // kernel has it
    each([](float v) { return v * std::tanh(v > 20.0f ? v : std::log1p(std::exp(v))); });
  } else if (name == "QuickGelu") {  // x * sigmoid(alpha x), CLIP's GELU approximation
    const float a = params.empty() ? 1.702f : params[0];
    each([a](float v) { return v / (1.0f + std::exp(-a * v)); });
  } else if (name == "Gelu") {
    gelu_in_place(y, false);
  } else if (name == "GeluTanh") {
    gelu_in_place(y, true);
  } else if (name == "Tanh") {
    each([](float v) { return std::tanh(v); });
  } else {
    ctx.fail("unknown activation '" + name + "'");
  }
}

}  // namespace geopt
