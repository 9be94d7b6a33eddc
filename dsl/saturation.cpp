#include "dsl/saturation.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "dsl/rewrite_constant.h"
#include "dsl/schema_lookup.h"
#include "dsl/value_facts.h"
#include "eval/kernel.h"
#include "eval/kernel_call.h"
#include "ir/domain.h"
#include "onnx/node_inference.h"

namespace geopt::dsl {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

BoundLookup bound_in(const EGraph& g, const EMatch& m) {
  auto cls = [&g, &m](const std::string& var) -> const EClass* {
    auto it = m.values.find(var);
    return it == m.values.end() ? nullptr : &g.eclass(it->second);
  };
  return {[cls](const std::string& var) -> const ValueType* {
            const EClass* c = cls(var);
            return c ? &c->data.type : nullptr;
          },
          [&m](const std::string& var) -> const Attribute* {
            auto it = m.attrs.find(var);
            return it == m.attrs.end() ? nullptr : &it->second;
          },
          [cls](const std::string& var) -> const Tensor* {
            const EClass* c = cls(var);
            return c ? c->data.constant : nullptr;
          },
          [&g, &m](const std::string& var) -> std::optional<std::vector<double>> {
            std::vector<double> out;
            if (auto it = m.attr_lists.find(var); it != m.attr_lists.end()) {
              for (const Attribute& a : it->second) {
                auto v = attr_number(a);
                if (!v) return std::nullopt;
                out.push_back(*v);
              }
            } else if (auto lt = m.lists.find(var); lt != m.lists.end()) {
              for (ClassId c : lt->second) {
                auto v = constant_scalar(g.eclass(c).data.constant);
                if (!v) return std::nullopt;
                out.push_back(*v);
              }
            }
            return out;  // a list variable no input bound is empty
          }};
}

// Builds a replacement's e-nodes, typed by ONNX's inference. Returns kAbsent, saying
// why in `refusal`, when inference rejects an op it makes or the inferred dtype
// contradicts the value being replaced (an unsound rewrite).
ClassId build(EGraph& g, const Rule& ast, const Replacement& r, const EMatch& m, int rule, int site,
              const ClassData& root_data, bool is_root, const EMatcher& matcher, std::string& refusal) {
  if (r.kind == Replacement::Kind::Var) return g.find(m.values.at(r.var));
  if (r.kind == Replacement::Kind::Const) {
    auto h = rewrite_constant(r, bound_in(g, m));  // buildable() checked it
    ClassData data;
    data.name = g.eclass(m.roots.front()).data.name + "_const";
    return g.add_constant(h->to_constant(data.name), data);
  }
  std::vector<ClassId> children;
  for (const auto& a : r.args) {
    if (a->kind == Replacement::Kind::Absent) {  // `_`: an optional input left out
      children.push_back(kAbsent);
      continue;
    }
    if (a->splice) {  // %xs...: every value the list variable bound, in input order
      if (auto it = m.lists.find(a->var); it != m.lists.end())
        for (ClassId c : it->second) children.push_back(g.find(c));
      continue;
    }
    children.push_back(build(g, ast, *a, m, rule, site, {}, false, matcher, refusal));
    if (children.back() == kAbsent) return kAbsent;
  }
  // Hash-consing makes the same call in two rewrites one e-node (its outputs projected).
  OpSignature sig{canonical_domain(r.domain), r.op, {}, static_cast<size_t>(replacement_outputs(ast, r)), ""};
  const OpInfo* info = find_op(r.domain, r.op);
  const int inputs = static_cast<int>(children.size());
  if (inputs < info->min_inputs || inputs > info->max_inputs) {  // a splice gave too few or too many
    refusal = "its " + r.op + " (" + r.loc.to_string() + ") would take " + std::to_string(inputs) +
              " inputs; it takes " + std::to_string(info->min_inputs) +
              (info->max_inputs == INT_MAX ? " or more" : " to " + std::to_string(info->max_inputs));
    return kAbsent;
  }
  for (const auto& a : r.attrs) {
    AttrKind kind = info->attrs.at(a.name).kind;
    if (a.term) {
      sig.attributes.push_back(Attribute::make_int(
          a.name, *shape_term_value(*a.term, &g.eclass(m.values.at(a.term->var)).data.type)));
    } else if (!a.list.empty()) {
      sig.attributes.push_back(list_attribute(a.name, kind, *list_value(a.list, bound_in(g, m))));
    } else if (a.value) {
      sig.attributes.push_back(literal_attribute(a.name, kind, *a.value));
    } else if (auto it = m.attrs.find(a.var); it != m.attrs.end() && a.factor.empty() && !a.numerator) {
      if (it->second.kind == AttrKind::Undefined) continue;  // unset in the match: unset here too
      Attribute copy = it->second;
      copy.name = a.name;
      sig.attributes.push_back(std::move(copy));
    } else {
      // A bound scalar: a numeric attribute, or a constant whose elements are all equal.
      auto scalar = [&](const std::string& var) {
        if (auto at = m.attrs.find(var); at != m.attrs.end())
          return at->second.kind == AttrKind::Int ? static_cast<double>(at->second.i)
                                                  : static_cast<double>(at->second.f);
        return constant_scalar(g.eclass(m.values.at(var)).data.constant).value_or(0);
      };
      Literal l;
      const double v = scalar(a.var);
      if (a.numerator && v == 0) {  // folded here, so refused here: an attribute of inf helps no kernel
        refusal = "its " + r.op + " (" + a.loc.to_string() + ") would set " + a.name + " = " +
                  format_number(*a.numerator) + " / %" + a.var + " with %" + a.var +
                  " = 0: a division by zero";
        return kAbsent;
      }
      l.number = a.numerator ? *a.numerator / v : a.factor.empty() ? v : v * scalar(a.factor);
      if (!std::isfinite(l.number) && std::isfinite(v)) {
        refusal = "its " + r.op + " (" + a.loc.to_string() + ") would set " + a.name + " to " +
                  format_number(l.number) + " (the arithmetic overflows)";
        return kAbsent;
      }
      sig.attributes.push_back(literal_attribute(a.name, kind, l));
    }
  }
  // An attribute the op takes as an input at the model's opset (ReduceMean's axes since
  // 18) is written as that input, a constant: one rule serves every opset.
  if (sig.domain.empty())
    for (auto it = sig.attributes.begin(); it != sig.attributes.end();) {
      const auto k = attribute_input("", sig.op_type, it->name, matcher.opset(""));
      if (!k) {
        ++it;
        continue;
      }
      if (children.size() <= *k) children.resize(*k + 1, kAbsent);
      if (children[*k] != kAbsent) {
        refusal = "its " + r.op + " (" + r.loc.to_string() + ") sets " + it->name +
                  " both as an attribute and as input " + std::to_string(*k);
        return kAbsent;
      }
      const DType data_type =
          children.front() == kAbsent ? DType::F32 : g.eclass(children.front()).data.type.dtype;
      ClassData data;
      data.name = g.eclass(m.roots.front()).data.name + "_" + it->name;
      children[*k] = g.add_constant(attribute_as_input(*it, data_type).to_constant(data.name), data);
      it = sig.attributes.erase(it);
    }
  // Named only when a refusal says so: building is the hot path of a rewrite.
  auto op = [&] { return (sig.domain.empty() ? "" : sig.domain + "::") + sig.op_type; };
  // Where both types are known, the replacement's must be the replaced value's: its dtype,
  // and its shape where both are static (an attention mask larger than the scores
  // broadcasts the original, not the fused kernel).
  auto contradicts = [&](const ValueType& mine) {
    if (!is_root) return false;
    if (mine.dtype != DType::Undefined && root_data.type.dtype != DType::Undefined &&
        mine.dtype != root_data.type.dtype) {
      refusal = "its " + op() + " (" + r.loc.to_string() + ") gives " + dtype_name(mine.dtype) +
                ", the value it would replace ('" + root_data.name + "') is " +
                dtype_name(root_data.type.dtype);
      return true;
    }
    if (mine.shape && root_data.type.shape && mine.shape->is_static() && root_data.type.shape->is_static() &&
        !(*mine.shape == *root_data.type.shape)) {
      refusal = "its " + op() + " (" + r.loc.to_string() + ") gives " + mine.to_string() +
                ", the value it would replace ('" + root_data.name + "') is " + root_data.type.to_string();
      return true;
    }
    return false;
  };
  ENode node;
  node.kind = ENode::Kind::Op;
  node.op = g.intern(sig);
  node.children = std::move(children);
  node.origin = rule;
  node.site = site;
  // The same op of the same values is in the e-graph already (an earlier match built it,
  // or the input has it): its type is known, and ONNX's inference, most of a rewrite's
  // cost, is not run again.
  if (sig.num_outputs == 1)
    if (std::optional<ClassId> existing = g.lookup(node)) {
      if (contradicts(g.eclass(*existing).data.type)) return kAbsent;
      return *existing;
    }
  std::vector<const ValueType*> in_types;
  std::vector<const Tensor*> in_constants;
  for (ClassId c : node.children) {
    in_types.push_back(c == kAbsent ? nullptr : &g.eclass(c).data.type);
    in_constants.push_back(c == kAbsent ? nullptr : g.eclass(c).data.constant);
  }
  auto inferred = onnx_io::infer_output_types(sig.domain, sig.op_type, sig.attributes, in_types, in_constants,
                                              sig.num_outputs, sig.domain.empty() ? matcher.opset("") : 1);
  if (!inferred.error.empty()) {
    refusal = "ONNX inference rejects the " + op() + " it would make (" + r.loc.to_string() +
              "): " + inferred.error;
    return kAbsent;
  }
  const std::optional<ValueType>& mine = inferred.types[static_cast<size_t>(r.output_index)];
  if (mine && contradicts(*mine)) return kAbsent;
  ClassData data = is_root ? root_data : ClassData{};
  if (!is_root && mine) data.type = *mine;
  data.constant = nullptr;
  if (sig.num_outputs == 1) return g.add(std::move(node), data);
  ClassId tuple = g.add(std::move(node));
  ENode proj;
  proj.kind = ENode::Kind::Proj;
  proj.op = static_cast<uint32_t>(r.output_index);
  proj.children = {tuple};
  proj.origin = rule;
  proj.site = site;
  return g.add(std::move(proj), data);
}

// Folds larger than this stay ops while exploring: a weight laid out for the Cube or
// scaled by a rule would otherwise be copied for every alternative the e-graph keeps.
// Their classes are constants computed at compile time, once extraction keeps them.
constexpr int64_t kMaterializeElements = 1 << 16;

std::optional<int64_t> static_elements(const ValueType& t) {
  return t.shape ? t.shape->element_count() : std::nullopt;
}

// Evaluates an all-constant op e-node with its kernel and merges the result into its
// class, or marks the class compile-time (too large to materialize now, or over
// constants not computed yet). A fold that would grow the constants past the cap (an
// Expand, a Tile) is never made; one no larger than its inputs always is.
bool fold(EGraph& g, const OpRegistry& ops, const EMatch& m, int64_t max_elements, const EMatcher& matcher) {
  ClassId cls = g.find(m.roots.front());
  for (const ENode& n : g.eclass(cls).nodes)
    if (n.kind == ENode::Kind::Const) return false;  // already folded
  const bool deferred = g.eclass(cls).data.compile_time;
  for (const ENode& n : std::vector<ENode>(g.eclass(cls).nodes)) {
    if (n.kind != ENode::Kind::Op) continue;
    const OpSignature& sig = g.signature(n.op);
    if (sig.num_outputs != 1) continue;
    const KernelInfo* k = ops.find(sig.domain, sig.op_type);
    if (!k) continue;
    // The op as a one-node graph (its inputs where the e-node has them, its output of the
    // class's type), so the kernel is called as the evaluator calls it and a Dropout given
    // a training_mode is seen to draw.
    Graph scratch;
    std::vector<Value*> inputs;
    for (size_t i = 0; i < n.children.size(); ++i)
      inputs.push_back(n.children[i] == kAbsent ? nullptr : scratch.add_value("in" + std::to_string(i)));
    Value* result = scratch.add_value("folded");
    result->type = g.eclass(cls).data.type;
    Node& temp = *scratch.add_node(sig.op_type, sig.domain, "fold", inputs, {result});
    temp.attributes = sig.attributes;
    if (temp.is_nondeterministic()) continue;  // a random op's values are drawn at run time
    bool all_const = true, all_computed = true;
    std::optional<int64_t> input_elements = 0;
    for (ClassId c : n.children) {
      if (c == kAbsent) continue;
      const ClassData& d = g.eclass(c).data;
      all_const = all_const && d.is_constant();
      all_computed = all_computed && d.constant;
      auto e = d.constant ? std::optional<int64_t>(d.constant->element_count()) : static_elements(d.type);
      input_elements = input_elements && e ? std::optional<int64_t>(*input_elements + *e) : std::nullopt;
    }
    if (!all_const) continue;
    const std::optional<int64_t> out = static_elements(g.eclass(cls).data.type);
    if (out && *out > max_elements && (!input_elements || *out > *input_elements)) continue;
    if (!out && !all_computed) continue;  // nothing says it fits the cap
    if (out && (!all_computed || *out > kMaterializeElements)) {
      if (deferred) return false;
      g.mark_compile_time(cls);
      return true;
    }
    std::vector<HostTensor> ins;
    ins.reserve(n.children.size());
    std::vector<const HostTensor*> ptrs;
    for (ClassId c : n.children) {
      if (c == kAbsent) {
        ptrs.push_back(nullptr);
        continue;
      }
      ins.push_back(HostTensor::view(*g.eclass(c).data.constant));
      ptrs.push_back(&ins.back());
    }
    // As the evaluator calls it (call_kernel: fp16 and bf16 widened where the kernel asks,
    // the result narrowed to the class's type).
    std::vector<HostTensor> outputs;
    try {
      outputs = call_kernel(ops, *k, temp, matcher.opset(sig.domain), std::move(ptrs));
    } catch (const std::exception& e) {
      spdlog::debug("fold of {} ({}) not made: {}", sig.op_type, g.eclass(cls).data.name, e.what());
      continue;
    }
    if (outputs.empty()) continue;
    HostTensor& h = outputs[0];
    if (!h.defined() || h.dtype() == DType::String) continue;
    if (!out && h.size() > max_elements && input_elements && h.size() > *input_elements) continue;
    auto t = std::move(h).into_constant(g.eclass(cls).data.name + "_folded");
    ClassId c = g.add_constant(std::move(t), g.eclass(cls).data);
    g.merge(cls, c);
    return true;
  }
  return false;
}

// How far from a change a rule can match anew. One root: its pattern's depth, counted
// up through parents from the change. Several roots (found among the consumers of values
// bound before them): the sum of each root's depth plus one, counted both ways.
struct Reach {
  int depth = 0;
  bool both_ways = false;
};

std::vector<Reach> rule_reach(const RuleSet& rules) {
  std::vector<Reach> out;
  for (const auto& r : rules.rules()) {
    Reach reach;
    for (const auto& alt : r.alternatives) {
      if (alt.roots.size() == 1) {
        reach.depth = std::max(reach.depth, alt.root_depth.front());
        continue;
      }
      int sum = 0;
      for (int d : alt.root_depth) sum += d + 1;
      reach.depth = std::max(reach.depth, sum);
      reach.both_ways = true;
    }
    out.push_back(reach);
  }
  return out;
}

// Distance (in edges) of each class from the nearest touched one, up to `max_depth`:
// up through parents only, or both ways (children too).
std::unordered_map<ClassId, int> near_touched(const EGraph& g, const std::vector<ClassId>& touched,
                                              int max_depth, bool both_ways) {
  std::unordered_map<ClassId, int> dist;
  std::vector<ClassId> frontier;
  for (ClassId c : touched)
    if (dist.emplace(g.find(c), 0).second) frontier.push_back(g.find(c));
  for (int d = 1; d <= max_depth && !frontier.empty(); ++d) {
    std::vector<ClassId> next;
    auto reach = [&](ClassId c) {
      if (dist.emplace(g.find(c), d).second) next.push_back(g.find(c));
    };
    for (ClassId c : frontier) {
      for (const auto& [node, parent] : g.eclass(c).parents) reach(parent);
      if (both_ways)
        for (const ENode& n : g.eclass(c).nodes)
          for (ClassId child : n.children)
            if (child != kAbsent) reach(child);
    }
    frontier = std::move(next);
  }
  return dist;
}

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Saturated:
      return "saturated";
    case StopReason::IterationLimit:
      return "iteration limit";
    case StopReason::NodeLimit:
      return "e-node limit";
    case StopReason::TimeLimit:
      return "time limit";
  }
  return "?";
}

static bool buildable(const EGraph& g, const Replacement& r, const EMatch& m) {
  if (r.kind == Replacement::Kind::Const) return rewrite_constant(r, bound_in(g, m)).has_value();
  for (const auto& a : r.attrs) {
    if (a.term && !shape_term_value(*a.term, &g.eclass(m.values.at(a.term->var)).data.type)) return false;
    if (!a.list.empty() && !list_value(a.list, bound_in(g, m))) return false;
  }
  for (const auto& a : r.args)
    if (!buildable(g, *a, m)) return false;
  return true;
}

bool apply_ematch(EGraph& g, const RuleSet& rules, const OpRegistry& ops, const EMatcher& matcher,
                  const EMatch& m, SiteRecord* record,
                  std::map<std::pair<int, int32_t>, std::vector<std::string>>* site_replaced,
                  const std::vector<NodeExclusion>* exclusions) {
  const CompiledRule& cr = rules.rules()[static_cast<size_t>(m.rule)];
  if (cr.ast->fold) return fold(g, ops, m, cr.ast->fold_max_elements, matcher);
  for (const auto& w : cr.ast->rewrites)
    if (!buildable(g, *w.replacement, m)) return false;  // a shape it reads is not static here
  bool changed = false;
  const size_t created_before = g.nodes_created();
  // The input nodes this match stands for: an input graph's node by its name, a node a
  // rule made by what that rule's site replaced (Conv -> FusedConv -> FusedConv+Relu).
  std::vector<std::string> replaced;
  for (size_t i = 0; i < m.op_classes.size(); ++i) {
    const auto [origin_rule, origin_site] =
        i < m.op_origins.size() ? m.op_origins[i] : std::make_pair(-1, -1);
    std::vector<std::string> names;
    if (origin_rule < 0) {
      if (!g.eclass(m.op_classes[i]).data.node_name.empty())
        names.push_back(g.eclass(m.op_classes[i]).data.node_name);
    } else if (site_replaced) {
      if (auto it = site_replaced->find({origin_rule, origin_site}); it != site_replaced->end())
        names = it->second;
    }
    for (const std::string& name : names)
      if (std::find(replaced.begin(), replaced.end(), name) == replaced.end()) replaced.push_back(name);
  }
  if (exclusions)
    for (const NodeExclusion& e : *exclusions)
      if (cr.ast->has_tag(e.tag))
        for (const std::string& name : replaced)
          if (e.nodes.count(name)) return false;
  const int32_t site = g.new_site();  // one site per match, however many values it rewrites
  if (site_replaced) (*site_replaced)[{m.rule, site}] = replaced;
  for (const auto& w : cr.ast->rewrites) {
    ClassId target = g.find(w.target.empty() ? m.roots.front() : m.values.at(w.target));
    ClassData data = g.eclass(target).data;
    std::string refusal;
    ClassId made = build(g, *cr.ast, *w.replacement, m, m.rule, site, data, true, matcher, refusal);
    if (made == kAbsent) {  // ONNX's inference rejects it, or disagrees with the replaced value's type
      if (record)
        record->refusal = "rule " + cr.ast->name + " (" + cr.ast->loc.to_string() + ") refused at '" +
                          data.name + "': " + refusal;
      continue;
    }
    if (record) {
      record->rule = m.rule;
      record->site = site;
      record->target = target;
      if (std::find(record->targets.begin(), record->targets.end(), target) == record->targets.end())
        record->targets.push_back(target);
      record->replaced = replaced;
      record->matched_root = m.root_node;
      record->built_on.clear();
      for (const auto& o : m.op_origins)
        if (o.first >= 0 &&
            std::find(record->built_on.begin(), record->built_on.end(), o) == record->built_on.end())
          record->built_on.push_back(o);
    }
    if (g.find(made) != g.find(target)) {
      g.merge(target, made);
      changed = true;
    }
  }
  return changed || g.nodes_created() != created_before;
}

namespace {

// The rules this run applies: the enabled ones (with only_tags, those carrying one), each
// given its line in the report.
std::vector<bool> active_rules(const RuleSet& rules, const SaturationLimits& limits,
                               SaturationReport& report) {
  std::vector<bool> active(rules.rules().size());
  for (size_t r = 0; r < rules.rules().size(); ++r) {
    const CompiledRule& cr = rules.rules()[r];
    active[r] = cr.enabled && (limits.only_tags.empty() ||
                               std::any_of(limits.only_tags.begin(), limits.only_tags.end(),
                                           [&](const std::string& t) { return cr.ast->has_tag(t); }));
    if (active[r]) report.per_rule[cr.ast->name];
  }
  return active;
}

// The ops the chosen rules' patterns can root at ((domain, op)), or `any` where a root
// is a wildcard.
struct RootOps {
  std::set<std::pair<std::string, std::string>> ops;
  bool any = false;
};

RootOps root_ops(const RuleSet& rules, const std::vector<bool>& chosen) {
  RootOps roots;
  for (size_t r = 0; r < rules.rules().size(); ++r) {
    if (!chosen[r]) continue;
    for (const auto& alt : rules.rules()[r].alternatives) {
      const Pattern* root = alt.roots.front().get();
      if (root->kind == Pattern::Kind::Var && alt.lets.count(root->var)) root = alt.lets.at(root->var).get();
      if (root->kind != Pattern::Kind::Op || root->op == "*")
        roots.any = true;
      else
        roots.ops.emplace(canonical_domain(root->domain), root->op);
    }
  }
  return roots;
}

// Applies one rule's matches of this iteration; returns how many changed the e-graph,
// each recorded in `sites`. A refusal is said once per rule (a rule wrong for one value
// is usually wrong for all of them).
size_t apply_matches(EGraph& g, const RuleSet& rules, const OpRegistry& ops, const EMatcher& matcher,
                     const std::vector<EMatch>& matches, RuleRunStats& rs, std::vector<SiteRecord>& sites,
                     std::map<std::pair<int, int32_t>, std::vector<std::string>>& site_replaced,
                     const std::vector<NodeExclusion>& exclusions) {
  size_t applied = 0;
  for (const EMatch& m : matches) {
    SiteRecord rec;
    const bool changed = apply_ematch(g, rules, ops, matcher, m, &rec, &site_replaced, &exclusions);
    if (!rec.refusal.empty() && rs.refused++ == 0) {
      spdlog::warn("{}", rec.refusal);
      rs.refusal = rec.refusal;
    }
    if (changed) {
      ++rs.applied;
      ++applied;
      if (rec.rule >= 0) sites.push_back(std::move(rec));
    }
  }
  return applied;
}

}  // namespace

SaturationReport saturate(EGraph& g, const RuleSet& rules, const OpRegistry& ops,
                          const std::vector<OpsetImport>& opsets, const SaturationLimits& limits,
                          const BackoffConfig& backoff) {
  SaturationReport report;
  const auto start = Clock::now();
  struct Ban {
    size_t times = 0;
    int until = -1;
    // When banned while searching near changes: the iteration whose changes its dropped
    // matches were near. Back from the ban, it searches near every change since then.
    int since = -1;
  };
  std::vector<Ban> bans(rules.rules().size());
  std::set<std::pair<int, ClassId>>
      sites;  // (rule, root class): a site counts once however often it is re-found
  std::map<std::pair<int, int32_t>, std::vector<std::string>> site_replaced;
  const std::vector<bool> active = active_rules(rules, limits, report);
  g.rebuild();
  report.stop = StopReason::IterationLimit;
  // Incremental search: after the first iteration a rule is tried only at classes within
  // its reach of a class that changed (a new match needs a new e-node, a merge, a new use
  // or new data somewhere inside it). A rule whose matches were dropped (banned) searches
  // everywhere again when it comes back if it was searching everywhere then, else near
  // every class changed since the iteration it was banned in.
  const std::vector<Reach> reach = rule_reach(rules);
  int max_up = 0, max_both = -1;
  for (const Reach& r : reach)
    (r.both_ways ? max_both : max_up) = std::max(r.both_ways ? max_both : max_up, r.depth);
  std::vector<bool> search_all(rules.rules().size(), true);
  std::vector<std::vector<ClassId>> touched_log;  // per iteration: the classes changed before it
  g.take_touched();
  for (int it = 0; it < limits.iterations; ++it) {
    if (ms_since(start) > limits.seconds * 1000) {
      report.stop = StopReason::TimeLimit;
      break;
    }
    if (g.node_count() > limits.enodes) {
      report.stop = StopReason::NodeLimit;
      break;
    }
    ++report.iterations;
    IterationStats is;
    EMatcher matcher(rules, g, opsets);
    // Search: every e-node is a candidate root; the automaton names the rules to try.
    auto t0 = Clock::now();
    touched_log.push_back(g.take_touched());
    const std::vector<ClassId>& touched = touched_log.back();
    const std::unordered_map<ClassId, int> near = near_touched(g, touched, max_up, false);
    // Rules back from a ban they took while searching near changes: near all changes since.
    std::map<size_t, std::unordered_map<ClassId, int>> back_near;
    for (size_t r = 0; r < rules.rules().size(); ++r) {
      if (bans[r].since < 0 || bans[r].until >= it || !active[r]) continue;
      std::vector<ClassId> since;
      for (size_t i = static_cast<size_t>(bans[r].since); i < touched_log.size(); ++i)
        since.insert(since.end(), touched_log[i].begin(), touched_log[i].end());
      back_near[r] = near_touched(g, since, reach[r].depth, reach[r].both_ways);
    }
    const std::unordered_map<ClassId, int> near_both =
        max_both >= 0 ? near_touched(g, touched, max_both, true) : std::unordered_map<ClassId, int>{};
    std::vector<std::vector<EMatch>> found(rules.rules().size());
    std::vector<bool> over(rules.rules().size(), false);
    // Away from every change only rules searching everywhere can match: skip e-nodes
    // none of them can root (asking the automaton about them costs as much as a search).
    std::vector<bool> everywhere(rules.rules().size());
    for (size_t r = 0; r < rules.rules().size(); ++r)
      everywhere[r] = active[r] && (search_all[r] || back_near.count(r));
    const RootOps everywhere_roots = root_ops(rules, everywhere);
    const bool everywhere_any = everywhere_roots.any;
    for (ClassId c : g.class_ids()) {
      auto close = near.find(c);
      auto close_both = near_both.find(c);
      for (const ENode& n : g.eclass(c).nodes) {  // searching reads the e-graph only: no copy
        if (n.kind != ENode::Kind::Op) continue;
        if (close == near.end() && close_both == near_both.end() && !everywhere_any) {
          const OpSignature& sig = g.signature(n.op);
          if (!everywhere_roots.ops.count({sig.domain, sig.op_type})) continue;
        }
        for (const auto& [rule, alt] : matcher.candidates(c, n)) {
          if (!active[static_cast<size_t>(rule)] || bans[static_cast<size_t>(rule)].until >= it ||
              over[static_cast<size_t>(rule)])
            continue;
          if (auto back = back_near.find(static_cast<size_t>(rule)); back != back_near.end()) {
            if (!back->second.count(c)) continue;  // its own region, within its reach
          } else if (!search_all[static_cast<size_t>(rule)]) {
            const Reach& rr = reach[static_cast<size_t>(rule)];
            const auto& where = rr.both_ways ? close_both : close;
            if (where == (rr.both_ways ? near_both.end() : near.end()) || where->second > rr.depth) continue;
          }
          const size_t limit = backoff.match_limit << bans[static_cast<size_t>(rule)].times;
          auto& list = found[static_cast<size_t>(rule)];
          auto rule_start = Clock::now();
          matcher.match(rule, alt, c, n, list, limit + 1);
          report.per_rule[rules.rules()[static_cast<size_t>(rule)].ast->name].search_ms +=
              ms_since(rule_start);
          if (list.size() > limit) over[static_cast<size_t>(rule)] = true;
        }
      }
    }
    is.search_ms = ms_since(t0);
    // Apply (rules over their limit are banned and their matches dropped, as in egg).
    t0 = Clock::now();
    bool banned_any = false;
    for (size_t r = 0; r < found.size(); ++r) {
      RuleRunStats& rs = report.per_rule[rules.rules()[r].ast->name];
      const bool searched = bans[r].until < it;
      if (over[r]) {
        Ban& b = bans[r];
        b.until = it + (backoff.ban_length << b.times);
        ++b.times;
        ++rs.banned;
        rs.bans.emplace_back(it + 1, b.until + 2);
        banned_any = true;
        // Its matches are dropped: found again once it is back, near the changes its
        // search covered (and every change after), or everywhere if it searched everywhere.
        if (!search_all[r] && b.since < 0) b.since = it;
        continue;
      }
      if (searched) {
        search_all[r] = !limits.incremental;
        bans[r].since = -1;
      }
      for (const EMatch& m : found[r]) sites.emplace(m.rule, m.roots.front());
      auto rule_start = Clock::now();
      is.applied +=
          apply_matches(g, rules, ops, matcher, found[r], rs, report.sites, site_replaced, limits.exclusions);
      rs.apply_ms += ms_since(rule_start);
    }
    is.apply_ms = ms_since(t0);
    t0 = Clock::now();
    g.rebuild();
    is.rebuild_ms = ms_since(t0);
    if (limits.check_invariants) g.check_invariants();
    is.enodes = g.node_count();
    is.classes = g.class_count();
    spdlog::debug(
        "saturation iteration {}: {} applied, {} e-nodes in {} classes; search {:.1f} ms, apply {:.1f} ms, "
        "rebuild {:.1f} ms",
        it + 1, is.applied, is.enodes, is.classes, is.search_ms, is.apply_ms, is.rebuild_ms);
    report.per_iteration.push_back(is);
    // A rule skipped this iteration (banned until this one or later) has not searched
    // the e-graph as it is now: nothing applied is then no proof of saturation.
    bool any_banned_now = banned_any;
    for (const Ban& b : bans) any_banned_now = any_banned_now || b.until >= it;
    if (is.applied == 0 && !any_banned_now) {
      report.stop = StopReason::Saturated;
      break;
    }
  }
  std::set<std::pair<int, ClassId>> distinct;
  for (const auto& [rule, cls] : sites) distinct.emplace(rule, g.find(cls));
  for (const auto& [rule, cls] : distinct)
    ++report.per_rule[rules.rules()[static_cast<size_t>(rule)].ast->name].matched;
  report.total_ms = ms_since(start);
  return report;
}

}  // namespace geopt::dsl
