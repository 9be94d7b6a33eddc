#include "ascend/dynamic_compile.h"
#include "device_ops/device_ops.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include <zlib.h>
#include "ascend/execution_order.h"
#include "ascend/layout.h"
#include "ascend/plan_file.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

uint64_t align_up(uint64_t n) { return (n + kMemoryAlignment - 1) / kMemoryAlignment * kMemoryAlignment; }

// The check inputs that fit a gear or size: --check-input feeds are given at one shape.
std::map<std::string, HostTensor> fixed_for(const std::map<std::string, HostTensor>& fixed,
                                            const InputShapes& shapes) {
  for (const auto& [name, t] : fixed)
    if (auto it = shapes.find(name); it != shapes.end() && it->second != t.dims()) return {};
  return fixed;
}

// Every value's type with the inputs at `shapes`, by name: the model's shape computations
// folded at those sizes (in a copy) and its types re-inferred.
std::unordered_map<std::string, ValueType> types_at(const Model& model, const InputShapes& shapes) {
  Model m = with_input_dims(model, shapes);
  StaticShapeOptions compile_time;
  compile_time.always_fold = is_weight_layout;
  compile_time.remove_dead_code = false;
  try {
    propagate_static_shapes(m, op_registry(), compile_time);
  } catch (const Error& e) {
    throw Error("the model's shapes at " + input_shapes_text(model, shapes) + ": " + e.what());
  }
  std::unordered_map<std::string, ValueType> types;
  for (const auto& v : m.graph->values()) types[v->name()] = v->type;
  return types;
}

// The values of `model` whose type is not static, each given its type at `shapes`.
// Returns their names. Throws naming a value whose type stays open there.
std::set<std::string> type_open_values_at(Model& model, const Model& source, const InputShapes& shapes,
                                          const std::string& where) {
  const auto types = types_at(source, shapes);
  std::set<std::string> open;
  auto settle = [&](Value* v) {
    if (!v || v->initializer || (v->type.shape && v->type.shape->is_static())) return;
    auto it = types.find(v->name());
    if (it == types.end() || !it->second.shape || !it->second.shape->is_static())
      throw Error("a range plan needs every value's shape at the range's bounds, but '" + v->name() + "' (" +
                  v->type.to_string() + ") is " +
                  (it == types.end() ? std::string("not known") : it->second.to_string()) + " at " + where +
                  " (its size depends on the data, not only on the input shapes)");
    v->type = it->second;
    open.insert(v->name());
  };
  for (Value* v : model.graph->inputs()) settle(v);
  for (const auto& n : model.graph->nodes())
    for (Value* v : n->outputs()) settle(v);
  return open;
}

}  // namespace

plan::Plan share_gear_weights(std::vector<plan::Plan> gears, const std::vector<std::string>& names) {
  plan::Plan top;
  if (gears.empty()) throw Error("a plan of gears needs at least one gear");
  top.set_magic(kPlanMagic);
  top.set_format_version(kPlanFormatVersion);
  top.set_producer("geopt");
  top.set_soc_version(gears.front().soc_version());
  *top.mutable_opsets() = gears.front().opsets();
  std::string shared;
  // Stored runs by the CRC of their first kKey bytes (a shorter run: of all of it), so that a
  // run equal to the start of one stored already (a gear's slice of a table another gear
  // takes more of: positions 0..seq-1) reuses its bytes too.
  constexpr size_t kKey = 64;
  struct Stored {
    uint64_t offset, size;
  };
  std::map<std::pair<uint32_t, bool>, std::vector<Stored>> stored;  // (crc, short run) -> runs
  auto key_of = [&](std::string_view bytes) {
    const size_t n = std::min(bytes.size(), kKey);
    return std::make_pair(
        static_cast<uint32_t>(
            crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n))),
        bytes.size() < kKey);
  };
  // The gear with the most weight bytes first: its tables hold the smaller gears' slices.
  std::vector<size_t> by_size(gears.size());
  for (size_t g = 0; g < gears.size(); ++g) by_size[g] = g;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return gears[a].weights().size() > gears[b].weights().size(); });
  for (size_t g : by_size) {
    plan::Plan& gear = gears[g];
    std::vector<plan::TensorRef*> refs;
    auto collect = [&](google::protobuf::RepeatedPtrField<plan::TensorRef>* list) {
      for (auto& r : *list)
        if (!r.absent() && r.region() == plan::WEIGHT) refs.push_back(&r);
    };
    for (auto& k : *gear.mutable_kernels()) collect(k.mutable_inputs());
    collect(gear.mutable_outputs());
    // Runs of bytes that references overlap (a reference may lie inside another) move together.
    std::sort(refs.begin(), refs.end(),
              [](const plan::TensorRef* a, const plan::TensorRef* b) { return a->offset() < b->offset(); });
    const std::string& region = gear.weights();
    for (size_t i = 0; i < refs.size();) {
      const uint64_t start = refs[i]->offset();
      uint64_t end = start + refs[i]->size();
      size_t j = i + 1;
      while (j < refs.size() && refs[j]->offset() < end)
        end = std::max<uint64_t>(end, refs[j]->offset() + refs[j]->size()), ++j;
      const std::string_view bytes(region.data() + start, end - start);
      auto& candidates = stored[key_of(bytes)];
      uint64_t at = UINT64_MAX;
      for (const Stored& c : candidates)
        if (c.size >= bytes.size() &&
            std::memcmp(shared.data() + c.offset, bytes.data(), bytes.size()) == 0) {
          at = c.offset;
          break;
        }
      if (at == UINT64_MAX) {
        at = align_up(shared.size());
        shared.resize(at);
        shared.append(bytes);
        candidates.push_back({at, bytes.size()});
      }
      for (; i < j; ++i) refs[i]->set_offset(at + (refs[i]->offset() - start));
    }
    gear.clear_weights();
    gear.set_weight_bytes(0);
  }
  for (size_t g = 0; g < gears.size(); ++g) {
    auto* entry = top.add_gears();
    entry->set_name(g < names.size() ? names[g] : gear_name(gears[g]));
    *entry->mutable_plan() = std::move(gears[g]);
  }
  top.set_weight_bytes(shared.size());
  top.set_weights(std::move(shared));
  return top;
}

GearedCompileResult compile_gears(const Model& given, const std::vector<InputShapes>& gears,
                                  const HardwareProfile& profile, const CompileOptions& options) {
  GearedCompileResult result;
  std::vector<plan::Plan> plans;
  std::vector<std::string> names;
  // --check-input feeds are given at one shape: they must be one gear's.
  if (!options.check_inputs.empty() && std::none_of(gears.begin(), gears.end(), [&](const InputShapes& g) {
        return !fixed_for(options.check_inputs, g).empty();
      }))
    throw Error("--check-input: the inputs' shapes are none of the gears' (the gears are " + [&] {
      std::string listed;
      for (const InputShapes& g : gears) listed += (listed.empty() ? "" : "; ") + input_shapes_text(given, g);
      return listed;
    }() + ")");
  for (const InputShapes& shapes : gears) {
    const std::string name = input_shapes_text(given, shapes);
    spdlog::info("compile: gear {}", name);
    CompileOptions gear_options = options;
    gear_options.check_inputs = fixed_for(options.check_inputs, shapes);
    CompileResult r;
    try {
      r = compile(with_input_dims(given, shapes), profile, gear_options);
    } catch (const Error& e) {
      throw Error("gear " + name + ": " + e.what());
    }
    result.gear_weight_bytes += r.plan.weight_bytes();
    plans.push_back(std::move(r.plan));
    r.plan = plan::Plan{};
    names.push_back(name);
    result.shapes.push_back(shapes);
    result.gears.push_back(std::move(r));
  }
  result.plan = share_gear_weights(std::move(plans), names);
  return result;
}

RangeCompileResult compile_range(const Model& given, const InputRanges& ranges,
                                 const HardwareProfile& profile, const CompileOptions& options) {
  RangeCompileResult result;
  result.ranges = ranges;
  // The check runs at each range's minimum, middle and maximum (all inputs at once).
  InputShapes low, middle, high;
  int64_t representative = 1;
  for (const Value* v : given.graph->inputs()) {
    if (v->initializer) continue;
    auto it = ranges.find(v->name());
    std::vector<int64_t> lo, mid, hi;
    for (size_t a = 0; a < v->type.shape->rank(); ++a) {
      if (it != ranges.end()) {
        const DimRange& r = it->second[a];
        lo.push_back(r.min), mid.push_back(r.min + (r.max - r.min) / 2), hi.push_back(r.max);
        if (r.min != r.max) representative = std::max(representative, r.max);
      } else {
        const int64_t d = (*v->type.shape)[a].value();  // parse_input_shape_range: the others are static
        lo.push_back(d), mid.push_back(d), hi.push_back(d);
      }
    }
    low[v->name()] = lo, middle[v->name()] = mid, high[v->name()] = hi;
  }
  const std::string where = input_shapes_text(given, high);
  CompileResult& r = result.compiled;
  // The symbolic model: what folds at every size folds, the rest stays computed.
  const auto started = std::chrono::steady_clock::now();
  Model prepared = given.clone();
  // The rules prove conditions on a symbolic dim over its range (docs/RULES.md).
  set_dim_ranges(prepared, ranges);
  StaticShapeOptions compile_time;
  compile_time.always_fold = is_weight_layout;
  propagate_static_shapes(prepared, op_registry(), compile_time);
  if (options.dump) options.dump("2_static_shapes", prepared, {});
  CompileOptions range_options = options;
  // The cost model prices symbolic dims at the range's upper bound (the size the memory is planned for).
  range_options.optimize.cost.symbolic_dim_value = representative;
  r.optimize_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  optimize_for_plan(r, given, std::move(prepared), profile, range_options);
  const Model symbolic = r.model.clone();
  const std::set<std::string> bounded = type_open_values_at(r.model, symbolic, high, where);
  lower_for_plan(r, profile, range_options, bounded);
  for (const auto& [name, dims] : ranges) {
    if (!bounded.count(name)) continue;  // fixed in every dim
    const Value* input = given.graph->find_value(name);
    auto* entry = r.plan.add_input_ranges();
    entry->set_name(name);
    for (size_t a = 0; a < dims.size(); ++a) {
      auto* pd = entry->add_dims();
      pd->set_min(dims[a].min);
      pd->set_max(dims[a].max);
      if (input && input->type.shape && a < input->type.shape->rank() &&
          (*input->type.shape)[a].is_symbolic())
        pd->set_symbol((*input->type.shape)[a].symbol_name());
    }
  }
  // The pool is planned at the upper bound; LOAD (the most bytes alive at one step) of
  // the same kernel sequence at each checked size, for comparison.
  std::vector<InputShapes> points = {low, middle, high};
  points.erase(std::unique(points.begin(), points.end()), points.end());
  MemoryPlanOptions memory = options.memory;  // as lower_for_plan planned the pool
  memory.runtime_shaped.insert(bounded.begin(), bounded.end());
  for (const InputShapes& at : points) {
    result.checked_at.push_back(at);
    if (at == high) {  // planned there already
      result.load_at.push_back(r.memory.load_bytes);
      continue;
    }
    Model sized = symbolic.clone();
    type_open_values_at(sized, symbolic, at, input_shapes_text(given, at));
    result.load_at.push_back(plan_memory(*sized.graph, r.order, memory).load_bytes);
  }
  if (options.check) {
    bool fixed_used = options.check_inputs.empty();
    for (const InputShapes& at : points) {
      auto fixed = fixed_for(options.check_inputs, at);
      fixed_used = fixed_used || !fixed.empty();
      try {
        check_plan_against(r, with_input_dims(given, at), options, fixed);
      } catch (const Error& e) {
        throw Error("the range plan at " + input_shapes_text(given, at) + ": " + e.what());
      }
    }
    if (!fixed_used) check_plan_against(r, given, options, options.check_inputs);
  }
  return result;
}

}  // namespace geopt::ascend
