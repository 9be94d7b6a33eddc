#pragma once
// The numerical check of a changed model (optimized, compiled) against its original, on
// random inputs at sizes the model accepts. A model exported with
// symbolic dims (batch, sequence, image height and width) says nothing about which
// sizes it runs at: a pooling window or a stride chain needs a minimum, a Reshape to a
// constant needs one exact size, and size 1 everywhere hides errors (a Softmax over one
// element is always 1). The check draws batch-like dims at 1 and the others at common
// sizes (check_size_candidates, in order: 16 upwards, 1 last) and keeps the first the
// model runs at.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/compare.h"
#include "eval/evaluator.h"

namespace geopt {

// A QDQ model quantizes computed values (a QuantizeLinear of an activation; a
// DynamicQuantizeLinear, which onnxruntime's dynamic quantizer writes). Rewriting it
// changes how sums round, and a value near a rounding boundary then lands one
// quantization step away, which later layers carry on: in a deep network this adds noise
// of the size of quantization's own. PaddleOCR's detector in INT8 (60 quantized convs):
// ONNX Runtime and geopt's evaluator on the same QDQ model differ by 0.4 at single pixels
// of the probability map; geopt's int8 kernels against the QDQ model reach cosine 0.997
// on a page of text and 0.98 on random noise, while INT8 itself is at 0.93 against fp32.
// So the check passes an output within fp16's tolerance, or whole at cosine 0.98: it
// catches a rewrite that costs more than quantization's noise, not a subtle one.
bool quantizes_activations(const Model& model);
inline constexpr double kQuantizedAtol = 0.05, kQuantizedRtol = 0.05, kQuantizedMinCosine = 0.98;

// What the model itself computes in, which the check must allow for: whether it quantizes
// activations, and the longest chain of ops that compute in fp16 or bf16 (an fp16 export:
// each rounds its output once, and the errors add along a chain). Rewriting such a model
// reorders its roundings: ONNX Runtime and geopt's evaluator already differ by about the
// unit roundoff times that depth on it.
struct ModelPrecision {
  bool quantized = false;
  DType low = DType::Undefined;  // F16 or BF16 (the coarser) when some op computes in it
  size_t low_depth = 0;          // the longest chain of such ops, input to output
};
ModelPrecision model_precision(const Model& model);
// The check's tolerance for such a model, never narrower than `base`: a quantized one
// kQuantized*; an fp16 or bf16 one the unit roundoff (2^-11, 2^-8) x max(8, depth), at
// most 0.05 (fp16) or 0.25 (bf16); its `basis` says which.
Tolerance tolerance_for(const ModelPrecision& model, Tolerance base);

// The time a check's loops may take (eval/run_limits.h): past it, the check stops and
// the model is refused with what was not checked.
inline constexpr double kCheckSeconds = 120;

struct CheckInputs {
  std::map<std::string, HostTensor> feeds;
  NamedTensors reference;                // the model's outputs on the feeds
  std::map<std::string, int64_t> sizes;  // each open dim -> the size drawn ("x:2" for an unnamed one)
  bool only_at_one = false;              // every candidate above 1 failed
  // "p2o.DynamicDimension.0=1, p2o.DynamicDimension.1=32"; empty when every dim is static.
  std::string describe() const;
};

// An --input_shape for the model's inputs, quoted: static dims as they are, open ones from
// `known` (by open_dim_key, evaluator.h) or as <symbol> (<size> for an unknown one) to fill in.
std::string example_input_shape(const Model& model, const std::map<std::string, int64_t>& known = {});

// The sizes tried, in order, for dims that are not batch-like.
const std::vector<int64_t>& check_size_candidates();

// Random inputs (from `seed`) at the first candidate size the model runs at, with its
// outputs. Sizes whose inputs would take more than `max_input_bytes` are not tried.
// Throws geopt::Error when the model runs at none: the dims, the sizes tried, the
// failure at the smallest, and what to pass instead (--input_shape). Inputs in `fixed`
// are taken as given (--check-input), their open dims at the sizes they have.
CheckInputs choose_check_inputs(const OpRegistry& ops, const Model& model, uint64_t seed,
                                size_t max_input_bytes = size_t{256} << 20,
                                const std::map<std::string, HostTensor>& fixed = {});

struct NumericalCheck {
  OutputsDiff diff;
  size_t outputs = 0;
  std::string sizes;  // CheckInputs::describe() of the inputs used
};

// `changed` against `original` on choose_check_inputs(original, seed). Throws
// geopt::Error when an output's dtype or shape differs (the change broke the interface).
NumericalCheck check_same_outputs(const OpRegistry& ops, const Model& original, const Model& changed,
                                  const Tolerance& tolerance, uint64_t seed = 0,
                                  const std::map<std::string, HostTensor>& fixed = {});

}  // namespace geopt
