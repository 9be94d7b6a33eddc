#include "analysis/model_summary.h"
#include "ops/op_traits.h"

#include <algorithm>
#include <map>
#include <set>

namespace geopt {
namespace {

ValueSummary summarize_value(const Value& v, std::set<std::string>& symbols) {
  ValueSummary s;
  s.name = v.name();
  s.dtype = v.type.is_tensor() ? dtype_name(v.type.dtype) : "non-tensor";
  s.rank_known = v.type.shape.has_value();
  if (v.type.shape)
    for (const Dim& d : v.type.shape->dims()) {
      s.dims.push_back(d.to_string());
      if (d.is_symbolic()) symbols.insert(d.symbol_name());
    }
  return s;
}

bool is_external(const Tensor& t) { return dynamic_cast<const MappedFile*>(t.data.owner().get()) != nullptr; }

}  // namespace

ModelSummary summarize(const Model& m) {
  ModelSummary s;
  const Graph& g = *m.graph;
  s.producer = m.producer_name + (m.producer_version.empty() ? "" : " " + m.producer_version);
  s.ir_version = m.ir_version;
  s.opsets = m.opsets;
  std::set<std::string> symbols;
  for (const Value* v : g.inputs())
    if (!v->initializer) s.inputs.push_back(summarize_value(*v, symbols));
  for (const Value* v : g.outputs()) s.outputs.push_back(summarize_value(*v, symbols));
  s.node_count = g.nodes().size();

  std::map<std::string, size_t> histogram;
  auto count_tensor = [&](const Tensor& t) {
    s.parameter_count += t.element_count();
    s.parameter_bytes += static_cast<int64_t>(t.byte_size());
    if (is_external(t)) s.external_bytes += static_cast<int64_t>(t.byte_size());
  };
  for (const auto& n : g.nodes()) {
    histogram[n->domain.empty() ? n->op_type : n->domain + "::" + n->op_type]++;
    if (is_constant_node(*n))
      for (const auto& a : n->attributes)
        for (const auto& t : a.tensors) count_tensor(*t);
  }
  for (const Value* v : g.initializers()) count_tensor(*v->initializer);
  s.initializer_count = g.initializers().size();
  s.op_histogram.assign(histogram.begin(), histogram.end());
  std::stable_sort(s.op_histogram.begin(), s.op_histogram.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  s.symbolic_dims.assign(symbols.begin(), symbols.end());
  return s;
}

}  // namespace geopt
