#pragma once
// The Ascend cost model: what a kernel costs on a hardware profile. Each kernel's
// work is split between the Cube unit (matrix MACs), the Vector unit (elementwise
// and reduction lanes) and HBM traffic; its modeled time is the slowest of the
// three (they pipeline) plus a launch overhead. A kernel whose smallest legal tile
// does not fit UB/L1/L0 is infeasible on that profile, with the reason recorded.
// docs/COSTMODEL.md gives the formulas and the source of every number.
#include <string>
#include <unordered_set>

#include "ascend/precision_mode.h"
#include "cube_tiling.h"
#include "hardware_profile.h"
#include "ir/graph.h"

namespace geopt::ascend {

// What one kernel does, independent of the hardware.
struct KernelWork {
  std::string op;
  DType dtype = DType::F32;  // the compute type
  // The Vector unit's lane type where it is not `dtype`: an int8 Cube op multiplies 8-bit
  // values but dequantizes, adds its bias, activates and (re)quantizes in float.
  DType vector_dtype = DType::Undefined;
  bool is_kernel = true;  // false for views (Reshape, Squeeze, ...), which launch nothing
  double cube_macs = 0;
  double vector_ops = 0;  // element operations (a transcendental counts several)
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;
  int64_t min_ub_bytes = 0;  // working set of the smallest legal tile
  int64_t min_l1_bytes = 0;
  int64_t spills_row = 0;        // standard row kernels: the row's working set; over UB it runs in two passes
  int extra_launches = 0;        // implicit layout conversions the kernel needs (NCHW convs)
  double permuted_elements = 0;  // elements a Transpose permutes on the Vector unit
  // The Cube's work as products (tiled over the cores) or, for FlashAttention, its blocked
  // loop; cube_macs is their sum of useful MACs.
  std::vector<CubeProduct> products;
  AttentionShape attention;
  bool fused_attention =
      false;  // FlashAttention and its variants: needs the profile's fused attention kernel
  // Each tensor the kernel reads or writes (the two totals above add them up). Weights
  // come from device memory; an activation small enough stays in L2 between its producer
  // and its consumer.
  struct Traffic {
    double bytes = 0;
    bool constant = false;
    bool read = true;
  };
  std::vector<Traffic> traffic;
  // Samples along axis 0 the kernel computes independently (an op that works per sample,
  // its activations and output sharing axis 0, no axis attribute naming it), so ATC's L2
  // buffer optimization may run it slice by slice; 1 when it cannot or the option is off.
  int64_t independent_samples = 1;
};

struct KernelCost {
  double cube_us = 0, vector_us = 0, memory_us = 0, launch_us = 0, total_us = 0;
  double dram_bytes = 0, l2_bytes = 0;  // the traffic, split by where it is served from
  std::string bound;                    // "cube", "vector", "memory" or "none"
  bool feasible = true;
  std::string reason;  // why not, e.g. "working set 288 KiB exceeds UB 192 KiB on Ascend910B1"
};

struct CostOptions {
  // ATC's --precision_mode: the dtype each op computes in (Precision::planned), fp16
  // for every op under force_fp16 (ATC's default for inference); must_keep_origin_dtype
  // keeps f32 (Cube at a quarter of the fp16 rate). Once the precision pass has run
  // (precision.applied), the dtypes in the graph.
  Precision precision;
  // The value assumed for symbolic dims (batch, seq) when costing.
  int64_t symbolic_dim_value = 1;
  // ATC's --enable_small_channel: a conv of at most 4 input channels (an image) reads them
  // in blocks of 4 instead of C0 = 16, so its reduction is 4 x its window, not 16 x.
  bool small_channel = false;
  // ATC's --buffer_optimize: l2_optimize (its default) runs a kernel whose activations
  // exceed L2 in slices along the batch that stay in L2; off_optimize (and l1_optimize,
  // which ATC documents as off) does not.
  bool l2_buffer_optimize = true;
};

// The same options for a graph the precision pass has rewritten: its dtypes are priced as they are.
inline CostOptions with_precision_applied(CostOptions o) {
  o.precision.applied = true;
  return o;
}

// A kernel as the cost model needs it: op, attributes, and the types of its
// inputs and outputs (null where absent or unknown). IR nodes and e-nodes both give one.
struct KernelDesc {
  std::string domain, op_type;
  const std::vector<Attribute>* attributes = nullptr;
  std::vector<const ValueType*> inputs, outputs;
  uint64_t constant_inputs = 0;  // bit i: input i is a constant (a weight), read from device memory
};
KernelDesc describe(const Node& node);
// The same, with the values known at compile time (weights and what ops of them compute)
// marked constant: cost_of_graph's view.
KernelDesc describe(const Node& node, const std::unordered_set<const Value*>& constants);

// A Transpose that only moves size-1 axes ([1, S, H] -> [S, 1, H]) leaves every byte
// where it was: a view, like Reshape (GE turns it into one).
bool is_view_transpose(const KernelDesc& kernel);
// A Split along an axis with only size-1 axes before it ([3, M, H] into three [1, M, H])
// cuts its input into contiguous pieces: each output is a view of its bytes at an offset.
bool is_view_split(const KernelDesc& kernel);
KernelWork work_of(const KernelDesc& kernel, const CostOptions& options = {});
KernelWork work_of(const Node& node, const CostOptions& options = {});
KernelCost cost_of(const KernelWork& work, const HardwareProfile& profile);

struct GraphCost {
  double latency_us = 0;  // kernels one after another on one stream
  double hbm_bytes = 0;
  size_t kernels = 0;       // nodes that launch a kernel
  size_t body_kernels = 0;  // of those, in control-flow bodies (cost_of_model; once per body, not per trip)
  size_t infeasible = 0;
  std::map<std::string, std::pair<double, size_t>> by_op;  // op -> (us, kernels)
  struct Kernel {
    const Node* node = nullptr;
    KernelWork work;
    KernelCost cost;
  };
  std::vector<Kernel>
      per_kernel;  // every kernel, in graph order (cost_of_graph's own graph; not the bodies')
};

// Values known when the model is compiled: initializers (not graph inputs), and what ops
// of them compute. Such an op runs at compile time (ATC folds it), not as a kernel: the
// cost model counts no kernel for it, nor does the fusion rate.
std::unordered_set<const Value*> compile_time_values(const Graph& graph);
bool runs_at_compile_time(const Node& node, const std::unordered_set<const Value*>& constants);
GraphCost cost_of_graph(const Graph& graph, const HardwareProfile& profile, const CostOptions& options = {});
// cost_of_graph of the model's graph, with the kernels of its control-flow bodies
// (nested ones too) counted in `kernels` and `body_kernels`. The time stays the
// graph's, where a control-flow node is priced as a kernel of its own: compile prices
// it from its bodies' sub-plans (trips x body), which only lowering has.
GraphCost cost_of_model(const Model& model, const HardwareProfile& profile, const CostOptions& options = {});

}  // namespace geopt::ascend
