#pragma once
// The one registry of what geopt can run and what its passes must know of each op, keyed
// by (domain, op): its host kernel and its traits. engine/ registers the standard ops and
// its own fused ops (register_standard_ops, eval/kernel.h); a backend adds its ops to a copy (the Ascend
// backend's ascend::op_registry()). The registry is passed to whatever runs or prices
// ops (the evaluator, folding, static shapes, the plan executor, the cost model, the
// memory planner): there is no global one. Schemas (inputs, attributes, types, shape
// inference) live in ONNX's schema registry, where engine/onnx and each backend register
// theirs, because import, ONNX's checker and the rule checker read them there.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_traits.h"

namespace geopt {

class KernelContext;
using KernelFn = std::function<void(KernelContext&)>;

struct KernelInfo {
  KernelFn fn;
  // f16/bf16 inputs are widened to f32 and f32 outputs narrowed back: for ops
  // whose arithmetic is defined for half types but computed in f32 here.
  bool half_via_f32 = false;
  // The HostTactic knobs it honours (TacticKnob bits): what operator tuning may try.
  unsigned tactic_knobs = 0;
};

class OpRegistry {
 public:
  // The host kernel of an op (replacing any registered before).
  void add(std::string_view domain, std::string_view op, KernelFn fn, bool half_via_f32 = true);
  // The tactic knobs an op's kernel honours (after add(); TacticKnob bits).
  void set_tactic_knobs(std::string_view domain, std::string_view op, unsigned knobs);
  // An op's traits (replacing any set before).
  void set_traits(std::string_view domain, std::string_view op, const OpTraits& traits);
  // Null when the op has no kernel.
  const KernelInfo* find(std::string_view domain, std::string_view op) const;
  // All false for an op with none ("" and "ai.onnx" are one domain).
  const OpTraits& traits(std::string_view domain, std::string_view op) const;
  std::vector<std::string> op_names() const;  // the ops with kernels: "Add", "ai.geopt::Gelu", ...

 private:
  struct Entry {
    std::optional<KernelInfo> kernel;
    OpTraits traits;
  };
  Entry& entry(std::string_view domain, std::string_view op);
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace geopt
