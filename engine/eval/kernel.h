#pragma once
// The kernel interface shared by the reference evaluator and, later, the plan
// executor: a kernel reads its node's attributes and input tensors and fills
// its outputs (allocating them with the shapes it computes).
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "eval/host_tensor.h"
#include "ir/node.h"

namespace geopt {

class KernelContext {
 public:
  KernelContext(const Node& node, int64_t opset, std::vector<const HostTensor*> inputs)
      : outputs(node.outputs().size()), node_(node), opset_(opset), inputs_(std::move(inputs)) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t input_count() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const HostTensor& input(size_t i) const;  // throws a node-named Error when absent
  bool wants_output(size_t i) const { return i < outputs.size() && node_.output(i) != nullptr; }

  bool has_attr(std::string_view name) const { return node_.attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;

  // Throws geopt::Error("<node>: <message>").
  [[noreturn]] void fail(const std::string& message) const;

  std::vector<HostTensor> outputs;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<const HostTensor*> inputs_;
};

using KernelFn = std::function<void(KernelContext&)>;

struct KernelInfo {
  KernelFn fn;
  // f16/bf16 inputs are widened to f32 and f32 outputs narrowed back: for ops
  // whose arithmetic is defined for half types but computed in f32 here.
  bool half_via_f32 = false;
};

class KernelRegistry {
 public:
  // The registry with every built-in kernel.
  static const KernelRegistry& builtin();
  void add(std::string_view domain, std::string_view op, KernelFn fn, bool half_via_f32 = true);
  const KernelInfo* find(std::string_view domain, std::string_view op) const;
  std::vector<std::string> op_names() const;  // "Add", "ai.geopt::Gelu", ...

 private:
  std::map<std::string, KernelInfo, std::less<>> kernels_;
};

// Registration functions, one per kernel family (engine/kernels/*.cpp).
void register_elementwise_kernels(KernelRegistry& r);
void register_linalg_kernels(KernelRegistry& r);
void register_conv_pool_kernels(KernelRegistry& r);
void register_norm_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_fused_kernels(KernelRegistry& r);
void register_channel_kernels(KernelRegistry& r);

}  // namespace geopt
