// Random kernels: RandomUniform(Like), RandomNormal(Like), Bernoulli and Multinomial.
// Draws come from a 64-bit Mersenne Twister seeded by the `seed` attribute, or, when
// it is absent, by a hash of the node's first output name, so a model's outputs are
// the same on every run and two random nodes draw differently. These nodes are never
// folded (Node::is_nondeterministic): their values exist only at run time.
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "eval/kernel.h"
#include "ir/value.h"
#include "kernels/dispatch.h"

namespace geopt {
namespace {

std::mt19937_64 generator(const KernelContext& ctx) {
  if (ctx.has_attr("seed")) {
    const float seed = ctx.attr_float("seed", 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &seed, sizeof bits);
    return std::mt19937_64(bits);
  }
  const Value* out = ctx.node().output(0);
  return std::mt19937_64(std::hash<std::string>{}(out ? out->name() : ctx.node().describe()));
}

template <class Draw>
HostTensor fill(const KernelContext& ctx, DType dtype, const std::vector<int64_t>& dims, Draw&& draw) {
  if (!is_float(dtype)) ctx.fail("the output dtype must be a float type, not " + dtype_name(dtype));
  HostTensor values(DType::F64, dims);
  for (int64_t i = 0; i < values.size(); ++i) values.mutable_data<double>()[i] = draw(i);
  return dispatch_all(
      dtype,
      [&]<class T>() {
        HostTensor y(dtype, dims);
        for (int64_t i = 0; i < y.size(); ++i)
          y.mutable_data<T>()[i] = convert_value<T>(values.data<double>()[i]);
        return y;
      },
      "random");
}

DType output_dtype(const KernelContext& ctx, DType fallback) {
  return ctx.has_attr("dtype") ? static_cast<DType>(ctx.attr_int("dtype", 1)) : fallback;
}

// RandomUniform/RandomNormal (shape and dtype from attributes) and their *Like forms
// (from the input): one draw of `distribution` per element.
template <class Distribution>
void random_tensor_op(KernelContext& ctx, bool like, Distribution distribution) {
  const std::vector<int64_t> dims = like ? ctx.input(0).dims() : ctx.attr_ints("shape");
  const DType dtype = output_dtype(ctx, like ? ctx.input(0).dtype() : DType::F32);
  auto rng = generator(ctx);
  ctx.outputs[0] = fill(ctx, dtype, dims, [&](int64_t) { return distribution(rng); });
}

void random_uniform(KernelContext& ctx, bool like) {
  random_tensor_op(
      ctx, like,
      std::uniform_real_distribution<double>(ctx.attr_float("low", 0.0f), ctx.attr_float("high", 1.0f)));
}

void random_normal(KernelContext& ctx, bool like) {
  random_tensor_op(
      ctx, like,
      std::normal_distribution<double>(ctx.attr_float("mean", 0.0f), ctx.attr_float("scale", 1.0f)));
}

// Bernoulli: 1 with probability p (the input), else 0, in the input's dtype or `dtype`.
void bernoulli(KernelContext& ctx) {
  const HostTensor& p = ctx.input(0);
  const DType dtype = output_dtype(ctx, p.dtype());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto rng = generator(ctx);
  HostTensor draws(DType::F64, p.dims());
  for (int64_t i = 0; i < p.size(); ++i) {
    const double prob = p.real_at(i);
    if (!(prob >= 0.0 && prob <= 1.0)) ctx.fail("probability " + std::to_string(prob) + " is outside [0, 1]");
    draws.mutable_data<double>()[i] = u(rng) < prob ? 1.0 : 0.0;
  }
  ctx.outputs[0] = dispatch_all(
      dtype,
      [&]<class T>() {
        HostTensor y(dtype, p.dims());
        for (int64_t i = 0; i < y.size(); ++i)
          y.mutable_data<T>()[i] = convert_value<T>(draws.data<double>()[i]);
        return y;
      },
      "Bernoulli");
}

// Multinomial: sample_size class indices per batch row from unnormalized log-probabilities.
void multinomial(KernelContext& ctx) {
  const HostTensor& logits = ctx.input(0);
  if (logits.rank() != 2) ctx.fail("the input must be [batch, classes]");
  const int64_t batch = logits.dims()[0], classes = logits.dims()[1];
  const int64_t samples = ctx.attr_int("sample_size", 1);
  const DType dtype = static_cast<DType>(ctx.attr_int("dtype", static_cast<int64_t>(DType::I32)));
  if (dtype != DType::I32 && dtype != DType::I64) ctx.fail("dtype must be int32 or int64");
  if (samples < 1 || classes < 1) ctx.fail("sample_size and the class count must be positive");
  auto rng = generator(ctx);
  HostTensor y(dtype, {batch, samples});
  std::vector<double> weights(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    double top = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) top = std::max(top, logits.real_at(b * classes + c));
    for (int64_t c = 0; c < classes; ++c)
      weights[static_cast<size_t>(c)] = std::exp(logits.real_at(b * classes + c) - top);
    std::discrete_distribution<int64_t> d(weights.begin(), weights.end());
    for (int64_t s = 0; s < samples; ++s) {
      const int64_t v = d(rng);
      if (dtype == DType::I32)
        y.mutable_data<int32_t>()[b * samples + s] = static_cast<int32_t>(v);
      else
        y.mutable_data<int64_t>()[b * samples + s] = v;
    }
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_random_kernels(OpRegistry& r) {
  r.add(
      "", "RandomUniform", [](KernelContext& ctx) { random_uniform(ctx, false); }, false);
  r.add(
      "", "RandomUniformLike", [](KernelContext& ctx) { random_uniform(ctx, true); }, false);
  r.add(
      "", "RandomNormal", [](KernelContext& ctx) { random_normal(ctx, false); }, false);
  r.add(
      "", "RandomNormalLike", [](KernelContext& ctx) { random_normal(ctx, true); }, false);
  r.add("", "Bernoulli", bernoulli, false);
  r.add("", "Multinomial", multinomial, false);
}

}  // namespace geopt
