#pragma once
// Lifetime-based memory planning, as GE's memory assigner does it: every
// activation gets an offset in ONE pool (512-byte aligned), tensors whose
// lifetimes do not overlap share bytes, views (Reshape, Squeeze, Unsqueeze,
// Flatten; a Split along an outer axis, piece by piece) share their input's bytes, and elementwise ops write
// in place over an input that dies there. Weights live in their own region.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace geopt::ascend {

inline constexpr size_t kMemoryAlignment = 512;  // GE's alignment

// Bytes shared by one or more values (a value, its views, in-place results).
struct PlannedBuffer {
  std::vector<const Value*> values;  // first is the one that allocates
  size_t bytes = 0;                  // aligned
  int first_step = 0;                // step 0: graph inputs; node k of the order runs at step k+1
  int last_step = 0;
  size_t offset = 0;
};

struct MemoryPlanOptions {
  bool reuse = true;  // false: --disable-reuse-memory
  // GE's OP_NO_REUSE_MEM: outputs of the nodes with these names or op types keep bytes
  // of their own for the whole run (no other tensor shares them, none is written in
  // place over them, and they are not written in place over an input).
  std::set<std::string> no_reuse;
  // Values whose dims are set at run time (a range plan's), planned at their upper
  // bound: a Split over one is no view (its pieces' offsets depend on the dims).
  std::set<std::string> runtime_shaped;
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  std::unordered_map<const Value*, size_t> buffer_of;  // activation value -> buffers index
  std::unordered_map<const Value*, size_t>
      offset_in_buffer;  // a piece of a view Split (and its views): bytes from the buffer's start
  std::unordered_map<const Value*, size_t> weight_offset;  // initializer -> offset in the weight region
  size_t pool_bytes = 0;
  size_t weight_bytes = 0;
  size_t load_bytes = 0;      // lower bound: most bytes alive at one step
  size_t no_reuse_bytes = 0;  // every activation in its own bytes
  std::string strategy;       // the one kept
  std::map<std::string, size_t> strategy_pool_bytes;
  size_t views = 0, in_place = 0;
  size_t kept_apart = 0;                     // buffers given their own bytes by MemoryPlanOptions::no_reuse
  std::set<std::string> no_reuse_unmatched;  // entries of no_reuse that name no node

  // Where an activation value's bytes start in the pool.
  size_t offset_of(const Value* v) const {
    auto it = offset_in_buffer.find(v);
    return buffers.at(buffer_of.at(v)).offset + (it == offset_in_buffer.end() ? 0 : it->second);
  }

  // 1 - pool / sum of activation sizes (the seed's memory-reuse rate).
  double reuse_rate() const {
    return no_reuse_bytes ? 1.0 - double(pool_bytes) / double(no_reuse_bytes) : 0.0;
  }
};

// Ops whose output shares its input's bytes (Reshape, Squeeze, Unsqueeze,
// Flatten, Identity, a Transpose of size-1 axes only, a Split along an outer axis,
// each piece at its offset): they copy nothing.
bool is_view_op(const Node& n);

// `order` indexes graph.nodes() (see memory_aware_order).
MemoryPlan plan_memory(const Graph& graph, const std::vector<size_t>& order,
                       const MemoryPlanOptions& options = {});

// Throws geopt::Error naming both values when two buffers with overlapping
// lifetimes share bytes, or a buffer leaves the pool.
void validate_memory_plan(const MemoryPlan& plan);

}  // namespace geopt::ascend
