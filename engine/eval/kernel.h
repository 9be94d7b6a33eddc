#pragma once
// The kernel interface shared by the reference evaluator and, later, the plan
// executor: a kernel reads its node's attributes and input tensors and fills
// its outputs (allocating them with the shapes it computes).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/host_tactic.h"
#include "eval/host_tensor.h"
#include "ir/node.h"
#include "ops/op_registry.h"

namespace geopt {

struct Model;

// Where a node runs, as control-flow kernels (If, Loop, Scan) need it: the model (its
// opsets), the kernels, and the values of the enclosing graphs by name, for the
// outer-scope references of their bodies.
class Scope {
 public:
  virtual ~Scope() = default;
  virtual const Model& model() const = 0;
  virtual const OpRegistry& kernels() const = 0;
  // The value of that name visible here (this graph, then the enclosing ones); null if none.
  virtual const HostTensor* find(std::string_view name) const = 0;
  // Runs body `attribute` of `node` with `inputs` bound to its first graph inputs, where
  // this scope runs bodies itself (the plan executor: each body is a sub-plan). nullopt:
  // the kernel runs the body graph with the reference evaluator.
  virtual std::optional<std::vector<HostTensor>> run_body(const Node& node, const std::string& attribute,
                                                          const std::vector<HostTensor>& inputs) const {
    (void)node, (void)attribute, (void)inputs;
    return std::nullopt;
  }
};

// Where the caller keeps an output's bytes (the plan executor: the pool at the planned
// offset), so a kernel can write it there instead of into storage of its own.
struct OutputPlacement {
  std::byte* at = nullptr;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
};

class KernelContext {
 public:
  KernelContext(const OpRegistry& ops, const Node& node, int64_t opset, std::vector<const HostTensor*> inputs,
                const Scope* scope = nullptr, std::vector<OutputPlacement> placements = {})
      : outputs(node.outputs().size()),
        ops_(ops),
        node_(node),
        opset_(opset),
        inputs_(std::move(inputs)),
        scope_(scope),
        placements_(std::move(placements)) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  // The ops the caller runs with (a control-flow kernel runs its bodies with them).
  const OpRegistry& ops() const { return ops_; }
  // Null where the caller runs single nodes with no enclosing graph (constant folding).
  const Scope* scope() const { return scope_; }
  size_t input_count() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const HostTensor& input(size_t i) const;  // throws a node-named Error when absent
  bool wants_output(size_t i) const { return i < outputs.size() && node_.output(i) != nullptr; }
  // Throws (naming the node) when the caller keeps output i at other dims than `dims`
  // (a plan's tensor): a kernel whose work grows with its output asks before doing it.
  void check_planned_dims(size_t i, const std::vector<int64_t>& dims) const;
  // Sets output i where the node has it; an optional trailing output the node omits
  // (Unique's indices, a Dropout mask) is dropped instead of written past `outputs`.
  void set_output(size_t i, HostTensor t) {
    if (i < outputs.size()) outputs[i] = std::move(t);
  }
  // Storage for output i that the kernel fills whole: the caller's placement when it
  // has one of this dtype and dims whose bytes no input shares, else new storage.
  // `in_place_input`: an input the kernel reads element by element at the position it
  // writes (a residual it adds), so the output may lie exactly over it.
  HostTensor new_output(size_t i, DType dtype, const std::vector<int64_t>& dims,
                        std::optional<size_t> in_place_input = std::nullopt) const;

  bool has_attr(std::string_view name) const { return node_.attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(std::string_view name) const;

  // How the caller asks this kernel to run (a plan's tuned kernel); the default elsewhere.
  const HostTactic& tactic() const { return tactic_; }
  void set_tactic(const HostTactic& tactic) { tactic_ = tactic; }

  // Throws geopt::Error("<node>: <message>").
  [[noreturn]] void fail(const std::string& message) const;

  std::vector<HostTensor> outputs;

 private:
  const OpRegistry& ops_;
  const Node& node_;
  int64_t opset_;
  std::vector<const HostTensor*> inputs_;
  const Scope* scope_;
  std::vector<OutputPlacement> placements_;
  HostTactic tactic_;
};

// How many threads each kernel may use (OpenMP's team size; oneDNN follows it); the
// default (and `threads` <= 0) is what OpenMP started with: OMP_NUM_THREADS, else every core. The kernels are
// the only part of geopt that runs threads this way.
void set_kernel_threads(int threads);
// The team each kernel gets by default: OMP_NUM_THREADS, else every core.
int default_kernel_threads();
// The instruction set the kernels run with (oneDNN's effective ISA: "avx512_core_amx",
// "avx2", ...), which decides which of their tactics is fastest.
std::string host_cpu_isa();
// While it lives, kernels run on this thread take at most `threads` threads (a tactic's
// `threads`); 0, or more than the team has, changes nothing.
class KernelThreadLimit {
 public:
  explicit KernelThreadLimit(int threads);
  ~KernelThreadLimit();
  KernelThreadLimit(const KernelThreadLimit&) = delete;
  KernelThreadLimit& operator=(const KernelThreadLimit&) = delete;

 private:
  int restore_ = 0;  // the team size to restore, 0 when unchanged
};

// Adds every op engine/ knows to `registry`: ONNX's standard ops and the
// hardware-independent ai.geopt ops (docs/OPS.md), their kernels and traits.
void register_standard_ops(OpRegistry& registry);

// Registration functions, one per kernel family (engine/kernels/*.cpp).
void register_elementwise_kernels(OpRegistry& r);
void register_linalg_kernels(OpRegistry& r);
void register_conv_pool_kernels(OpRegistry& r);
void register_deform_conv_kernel(OpRegistry& r);
void register_norm_kernels(OpRegistry& r);
void register_reduce_kernels(OpRegistry& r);
void register_softmax_kernels(OpRegistry& r);
void register_shape_kernels(OpRegistry& r);
void register_fused_kernels(OpRegistry& r);
void register_roll_kernel(OpRegistry& r);
void register_indexing_kernels(OpRegistry& r);
void register_quantize_kernels(OpRegistry& r);
void register_quant_elementwise_kernels(OpRegistry& r);
void register_quant_pool_kernels(OpRegistry& r);
void register_quant_row_kernels(OpRegistry& r);
void register_quantized_cube_kernels(OpRegistry& r);
void register_spatial_kernels(OpRegistry& r);
void register_signal_kernels(OpRegistry& r);
void register_random_kernels(OpRegistry& r);
void register_einsum_kernel(OpRegistry& r);
void register_recurrent_kernels(OpRegistry& r);
void register_control_flow_kernels(OpRegistry& r);
void register_ngram_kernel(OpRegistry& r);

}  // namespace geopt
