#pragma once
// The reference evaluator: runs an IR graph on the host, node by node in
// topological order, with the built-in kernels. No hardware knowledge.
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "eval/host_tensor.h"
#include "eval/kernel.h"
#include "ir/graph.h"

namespace geopt {

using NamedTensors = std::vector<std::pair<std::string, HostTensor>>;

// Time spent per op type over the runs that had profiling on, and the implementations
// its kernels noted (kernel_implementation.h).
struct OpProfile {
  struct Kernel {
    std::string op;
    double ms = 0;  // in all
    int64_t calls = 0;
    std::map<std::string, int64_t> implementations;  // what ran it, as noted -> calls
  };
  // Per kernel, by its node's name (its first output's where the node has none).
  std::map<std::string, Kernel> by_kernel;

  // One call of `node`'s kernel that took `ms`, with the implementation it noted.
  void add(const Node& node, double ms);
  // Per op type, its kernels summed.
  std::map<std::string, Kernel> by_op() const;
};

// The nodes of a graph that read constants only, computed once, and those of their
// values that the other nodes (or the graph's outputs) read.
struct PrecomputedValues {
  std::unordered_set<const Node*> nodes;
  std::unordered_map<const Value*, HostTensor> values;
};

class Evaluator {
 public:
  // Throws geopt::Error listing every node whose op has no kernel.
  Evaluator(const Model& model, const OpRegistry& kernels);

  // Graph inputs the caller must feed (those without an initializer).
  std::vector<const Value*> required_inputs() const;
  // Checks the feeds (names, dtypes, shapes, symbolic dims) and runs the graph.
  // Returns the graph outputs in their declared order. The first run also computes
  // the nodes that depend on constants only (a weight's layout conversion, a Constant), once:
  // later runs reuse them, as a session does after loading a model, and kernels may
  // cache what they derive from them (they are constants).
  NamedTensors run(const std::map<std::string, HostTensor>& inputs, OpProfile* profile = nullptr) const;

 private:
  void check_inputs(const std::map<std::string, HostTensor>& inputs) const;
  void precompute_constants() const;

  const Model& model_;
  const OpRegistry& kernels_;
  mutable std::once_flag precomputed_once_;
  mutable PrecomputedValues precomputed_;
};

// Runs a control-flow body (If branch, Loop or Scan body): `inputs` bind its graph
// inputs in order (trailing ones may be left out); names it does not define resolve in
// `outer`. Returns its outputs in their declared order.
std::vector<HostTensor> run_body(const Graph& body, const std::vector<HostTensor>& inputs,
                                 const Scope& outer);

// A random tensor as random_inputs makes them.
HostTensor random_tensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& rng);

// The key of an input's dim that is not static: its symbol, or "input:axis" for an
// unknown one (a dim with neither a value nor a name).
std::string open_dim_key(const Value& input, size_t axis);
// Those keys of every required input, sorted: what `run --dim NAME=N` may name.
std::set<std::string> open_dim_keys(const Model& model);

// Every required input's dims: static ones as declared, the others from `symbol_values`
// by open_dim_key (default 1).
std::map<std::string, std::vector<int64_t>> input_dims(
    const Model& model, const std::map<std::string, int64_t>& symbol_values = {});

// Random inputs of the given dims for every required graph input, in the graph's input
// order from one generator (uniform [-1,1) floats; 8-bit integers each value of their
// type in a random order; other integers 0 or 1).
std::map<std::string, HostTensor> random_inputs_of(const Model& model, uint64_t seed,
                                                   const std::map<std::string, std::vector<int64_t>>& dims);

// random_inputs_of at input_dims(model, symbol_values).
std::map<std::string, HostTensor> random_inputs(const Model& model, uint64_t seed,
                                                const std::map<std::string, int64_t>& symbol_values = {});

}  // namespace geopt
