#include "kernels/activation.h"

#include <algorithm>
#include <cmath>

#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {

void gelu_in_place(HostTensor& y, bool tanh_approximation) {
  float* p = y.mutable_data<float>();
  const int64_t n = y.size();
  constexpr int64_t kChunk = 4096;
  team_region(n > (1 << 16), [&] {
#pragma omp for
    for (int64_t first = 0; first < n; first += kChunk)
      gelu_row(p + first, std::min(kChunk, n - first), tanh_approximation);
  });
}

Activation parse_activation(const KernelContext& ctx, std::string_view name) {
  static constexpr std::pair<std::string_view, Activation> kNames[] = {{"none", Activation::None},
                                                                       {"", Activation::None},
                                                                       {"Relu", Activation::Relu},
                                                                       {"Clip", Activation::Clip},
                                                                       {"LeakyRelu", Activation::LeakyRelu},
                                                                       {"HardSwish", Activation::HardSwish},
                                                                       {"Sigmoid", Activation::Sigmoid},
                                                                       {"SiLU", Activation::SiLU},
                                                                       {"Mish", Activation::Mish},
                                                                       {"QuickGelu", Activation::QuickGelu},
                                                                       {"Gelu", Activation::Gelu},
                                                                       {"GeluTanh", Activation::GeluTanh},
                                                                       {"Tanh", Activation::Tanh}};
  for (const auto& [text, activation] : kNames)
    if (text == name) return activation;
  ctx.fail("unknown activation '" + std::string(name) + "'");
}

void apply_activation(const KernelContext& ctx, float* p, int64_t n, Activation activation,
                      const std::vector<float>& params) {
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
  };
  switch (activation) {
    case Activation::None:
      return;
    case Activation::Relu:
      each([](float v) { return v < 0 ? 0.0f : v; });  // NaN stays NaN, as ONNX's max(x, 0)
      return;
    case Activation::Clip: {
      if (params.size() != 2) ctx.fail("Clip activation needs 2 params (min, max)");
      const float lo = params[0], hi = params[1];
      each([lo, hi](float v) { return v < lo ? lo : (v > hi ? hi : v); });
      return;
    }
    case Activation::LeakyRelu: {
      const float a = params.empty() ? 0.01f : params[0];
      each([a](float v) { return v >= 0 ? v : a * v; });
      return;
    }
    case Activation::HardSwish:
      each([](float v) { return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f)); });
      return;
    case Activation::Sigmoid:
      sigmoid_row(p, p, n);
      return;
    case Activation::SiLU:
      swish_row(p, p, n, 1.0f);
      return;
    case Activation::Mish:  // x * tanh(softplus(x)); softplus is x itself past 20, as ONNX's Softplus kernel
                            // has it
      each([](float v) { return v * std::tanh(v > 20.0f ? v : std::log1p(std::exp(v))); });
      return;
    case Activation::QuickGelu: {  // x * sigmoid(alpha x), CLIP's GELU approximation
      swish_row(p, p, n, params.empty() ? 1.702f : params[0]);
      return;
    }
    case Activation::Gelu:
      gelu_row(p, n, false);
      return;
    case Activation::GeluTanh:
      gelu_row(p, n, true);
      return;
    case Activation::Tanh:
      each([](float v) { return std::tanh(v); });
      return;
  }
}

bool activation_rows_beat_post_ops(Activation a) {
  return a == Activation::Sigmoid || a == Activation::SiLU || a == Activation::QuickGelu;
}

void apply_activation_tail(const KernelContext& ctx, float* p, int64_t n, Activation activation,
                           const std::vector<float>& params, float post_scale, float post_shift) {
  apply_activation(ctx, p, n, activation, params);
  if (post_scale != 1.0f || post_shift != 0.0f)
    for (int64_t i = 0; i < n; ++i) p[i] = p[i] * post_scale + post_shift;
}

void apply_activation(const KernelContext& ctx, HostTensor& y, const std::string& name,
                      const std::vector<float>& params) {
  const Activation activation = parse_activation(ctx, name);
  if (activation == Activation::None) return;
  if (activation == Activation::Clip && params.size() != 2)
    ctx.fail("Clip activation needs 2 params (min, max)");
  float* p = y.mutable_data<float>();
  const int64_t n = y.size();
  constexpr int64_t kChunk = 4096;
  team_region(n > (1 << 16), [&] {
#pragma omp for
    for (int64_t first = 0; first < n; first += kChunk)
      apply_activation(ctx, p + first, std::min(kChunk, n - first), activation, params);
  });
}

}  // namespace geopt
