#include "dsl/rewriter.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "dsl/rewrite_constant.h"
#include "dsl/schema_lookup.h"
#include "passes/cse.h"
#include "dsl/value_facts.h"
#include "onnx/node_inference.h"
#include "eval/kernel.h"
#include "util/error.h"

namespace geopt::dsl {
namespace {

// The longest '/'-separated prefix shared by the matched nodes' names: exporters
// name nodes after modules, so this is the module the fused op stands for.
std::string common_scope(const std::vector<Node*>& nodes) {
  std::vector<std::string> common;
  bool first = true;
  for (const Node* n : nodes) {
    if (n->name.empty()) continue;
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t slash; (slash = n->name.find('/', start)) != std::string::npos; start = slash + 1) parts.push_back(n->name.substr(start, slash - start));
    if (first) {
      common = parts;
      first = false;
    } else {
      size_t i = 0;
      while (i < common.size() && i < parts.size() && common[i] == parts[i]) ++i;
      common.resize(i);
    }
  }
  std::string scope;
  for (size_t i = 0; i < common.size(); ++i) scope += (i ? "/" : "") + common[i];
  return scope;
}

// Does `v` depend on `target` (would replacing target by something computed from v make a cycle)?
bool depends_on(const Value* v, const Value* target, std::unordered_set<const Value*>& seen) {
  if (!v || !seen.insert(v).second) return false;
  if (v == target) return true;
  const Node* p = v->producer();
  if (!p) return false;
  for (const Value* in : p->inputs())
    if (depends_on(in, target, seen)) return true;
  return false;
}

// A rewrite that cannot be built at this match (a shape it reads is not static).
struct Unbuildable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Builder {
 public:
  Builder(Model& model, const Matcher& matcher, const Match& match, std::string scope, const Rule& rule)
      : g_(*model.graph), matcher_(matcher), match_(match), scope_(std::move(scope)), rule_(rule), opset_(model.opset_version("")) {}

  Value* build(const Replacement& r) {
    if (r.kind == Replacement::Kind::Var) return match_.values.at(r.var);
    if (r.kind == Replacement::Kind::Const) return build_constant(r);
    std::vector<Value*> inputs;
    for (const auto& a : r.args) inputs.push_back(build(*a));
    std::vector<Attribute> attributes = attributes_of(r);
    // The same call in two rewrites (`Op(...)[0]`, `Op(...)[1]`) is one node.
    for (Node* made : created_)
      if (made->op_type == r.op && made->domain == (r.domain == "ai.onnx" ? "" : r.domain) && made->inputs() == inputs &&
          same_attributes(made->attributes, attributes))
        return made->output(static_cast<size_t>(r.output_index));
    std::string base = (scope_.empty() ? "" : scope_ + "/") + r.op;
    // A root it replaces by the same name (a FusedMatMul rewritten into another
    // FusedMatMul) gives the name up: the module keeps the name users know.
    for (Node* root : match_.roots)
      if (root->name == base) g_.rename_node(root, g_.unique_name(base + "_replaced"));
    std::string node_name = g_.unique_name(base);
    std::vector<Value*> outputs;
    for (int k = 0; k < replacement_outputs(rule_, r); ++k)
      outputs.push_back(g_.add_value(g_.unique_name(node_name + ":" + std::to_string(k))));
    Node* n = g_.add_node(r.op, r.domain, node_name, inputs, outputs);
    n->doc_string = "geopt rule " + rule_.name;
    n->attributes = std::move(attributes);
    created_.push_back(n);
    // Type the outputs with ONNX's inference (attributes are in place now).
    std::vector<const ValueType*> in_types;
    std::vector<const Tensor*> in_constants;
    for (Value* in : inputs) {
      in_types.push_back(in ? &in->type : nullptr);
      in_constants.push_back(in ? matcher_.constant_of(in) : nullptr);
    }
    auto types = onnx_io::infer_output_types(n->domain, n->op_type, n->attributes, in_types, in_constants, outputs.size(),
                                             n->domain.empty() ? opset_ : 1);
    for (size_t k = 0; k < outputs.size(); ++k)
      if (types[k]) outputs[k]->type = *types[k];
    return outputs[static_cast<size_t>(r.output_index)];
  }

  static bool same_attributes(const std::vector<Attribute>& a, const std::vector<Attribute>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].kind != b[i].kind || a[i].i != b[i].i || a[i].f != b[i].f || a[i].s != b[i].s ||
          a[i].ints != b[i].ints || a[i].floats != b[i].floats || a[i].strings != b[i].strings)
        return false;
    return true;
  }

  std::vector<Attribute> attributes_of(const Replacement& r) {
    std::vector<Attribute> out;
    const OpInfo* info = find_op(r.domain, r.op);
    for (const auto& a : r.attrs) {
      AttrKind kind = info->attrs.at(a.name).kind;
      if (a.term) {
        auto v = shape_term_value(*a.term, &match_.values.at(a.term->var)->type);
        if (!v) throw Unbuildable(a.term->to_string() + " is not a static number here");
        out.push_back(Attribute::make_int(a.name, *v));
      } else if (!a.list.empty()) {
        std::string why;
        auto v = list_value(a.list, bound(), &why);
        if (!v) throw Unbuildable(why);
        out.push_back(list_attribute(a.name, kind, *v));
      } else if (a.value) {
        out.push_back(literal_attribute(a.name, kind, *a.value));
      } else if (auto it = match_.attrs.find(a.var); it != match_.attrs.end()) {
        Attribute copy = it->second;
        copy.name = a.name;
        out.push_back(std::move(copy));
      } else {  // a bound scalar constant (or n / it)
        const Tensor* t = matcher_.constant_of(match_.values.at(a.var));
        HostTensor h = HostTensor::view(*t);
        Literal l;
        l.number = a.numerator ? *a.numerator / h.real_at(0) : h.real_at(0);
        out.push_back(literal_attribute(a.name, kind, l));
      }
    }
    return out;
  }

  const std::vector<Node*>& created() const { return created_; }
  BoundLookup bound() const {
    auto value = [this](const std::string& var) -> Value* {
      auto it = match_.values.find(var);
      return it == match_.values.end() ? nullptr : it->second;
    };
    return {[value](const std::string& var) -> const ValueType* {
              Value* v = value(var);
              return v ? &v->type : nullptr;
            },
            [this](const std::string& var) -> const Attribute* {
              auto it = match_.attrs.find(var);
              return it == match_.attrs.end() ? nullptr : &it->second;
            },
            [this, value](const std::string& var) { return matcher_.constant_of(value(var)); }};
  }

 private:
  // `const DTYPE VALUE`: a new initializer, named after the module like the nodes.
  Value* build_constant(const Replacement& r) {
    std::string why;
    auto h = rewrite_constant(r, bound(), &why);
    if (!h) throw Unbuildable(why);
    // The same constant in two rewrites is one value, so the ops reading it are one node too.
    const std::string name = g_.unique_name((scope_.empty() ? "" : scope_ + "/") + "const");
    auto t = std::move(*h).into_constant(name);
    for (Value* made : constants_)
      if (made->initializer->same_contents(*t)) return made;
    Value* c = g_.add_value(name);
    c->type.dtype = t->dtype;
    c->type.shape = Shape(std::vector<Dim>(t->dims.begin(), t->dims.end()));
    g_.add_initializer(c, std::move(t));
    constants_.push_back(c);
    return c;
  }

  Graph& g_;
  const Matcher& matcher_;
  const Match& match_;
  std::string scope_;
  const Rule& rule_;
  int64_t opset_;
  std::vector<Node*> created_;
  std::vector<Value*> constants_;
};

// Replaces `target` by `with` everywhere; a graph output keeps its name.
void substitute(Graph& g, Value* target, Value* with) {
  bool is_output = std::find(g.outputs().begin(), g.outputs().end(), target) != g.outputs().end();
  if (with->type.dtype == DType::Undefined) with->type = target->type;
  g.replace_all_uses(target, with);
  if (is_output) {
    std::string name = target->name();
    g.rename_value(target, g.unique_name(name + "_replaced"));
    g.rename_value(with, name);
  }
}

bool fold(Model& model, const Match& match, int64_t max_elements, const Matcher& matcher, std::string* why) {
  Node* n = match.roots.front();
  if (n->is_nondeterministic()) {
    if (why) *why = n->describe() + " draws new values at every run";
    return false;
  }
  const KernelInfo* k = KernelRegistry::builtin().find(n->domain, n->op_type);
  if (!k) {
    if (why) *why = "no kernel to fold " + n->describe();
    return false;
  }
  std::vector<HostTensor> ins;
  ins.reserve(n->inputs().size());
  std::vector<const HostTensor*> ptrs;
  for (const Value* in : n->inputs()) {
    if (!in) {
      ptrs.push_back(nullptr);
      continue;
    }
    const Tensor* t = matcher.constant_of(in);
    if (!t) {
      if (why) *why = "input '" + in->name() + "' of " + n->describe() + " is not constant";
      return false;
    }
    ins.push_back(HostTensor::view(*t));
    ptrs.push_back(&ins.back());
  }
  KernelContext ctx(*n, model.opset_version(n->domain), ptrs);
  try {
    k->fn(ctx);
  } catch (const std::exception& e) {
    if (why) *why = std::string("folding failed: ") + e.what();
    return false;
  }
  int64_t input_elements = 0;
  for (const HostTensor& in : ins) input_elements += in.size();
  for (size_t o = 0; o < n->outputs().size(); ++o)
    if (n->output(o) && ctx.outputs[o].size() > max_elements && ctx.outputs[o].size() > input_elements) {
      if (why) *why = "folded " + n->describe() + " would have " + std::to_string(ctx.outputs[o].size()) + " elements, over the cap of " + std::to_string(max_elements);
      return false;
    }
  Graph& g = *model.graph;
  for (size_t o = 0; o < n->outputs().size(); ++o) {
    Value* out = n->output(o);
    if (!out || ctx.outputs[o].dtype() == DType::String) continue;
    Value* c = g.add_value(g.unique_name(out->name() + "_folded"));
    auto t = std::move(ctx.outputs[o]).into_constant(c->name());
    c->type.dtype = t->dtype;
    c->type.shape = Shape(std::vector<Dim>(t->dims.begin(), t->dims.end()));
    g.add_initializer(c, std::move(t));
    substitute(g, out, c);
  }
  return true;
}

}  // namespace

bool apply_match(Model& model, const RuleSet& rules, const Match& match, std::string* why) {
  const CompiledRule& cr = rules.rules()[static_cast<size_t>(match.rule)];
  Matcher matcher(rules, model);
  if (cr.ast->fold) return fold(model, match, cr.ast->fold_max_elements, matcher, why);
  const Alternative& alt = cr.alternatives[static_cast<size_t>(match.alternative)];
  // Targets first, then a cycle check, then build: a refused rewrite leaves the graph as it was.
  std::vector<Value*> targets;
  for (const auto& w : cr.ast->rewrites) {
    Value* target = nullptr;
    if (w.target.empty()) {
      const Pattern& root = *alt.roots.front();
      const Pattern& op = root.kind == Pattern::Kind::Var ? *alt.lets.at(root.var) : root;
      target = match.roots.front()->output(static_cast<size_t>(op.output_index));
    } else {
      target = match.values.at(w.target);
    }
    std::function<bool(const Replacement&)> cyclic = [&](const Replacement& r) {
      if (r.kind == Replacement::Kind::Var) {
        std::unordered_set<const Value*> seen;
        Value* v = match.values.at(r.var);
        return v != target && depends_on(v, target, seen);
      }
      for (const auto& a : r.args)
        if (cyclic(*a)) return true;
      return false;
    };
    if (cyclic(*w.replacement)) {
      if (why) *why = "the rewrite of '" + target->name() + "' would use a value computed from it (a cycle)";
      return false;
    }
    // A graph output keeps its name, so it cannot become a graph input, an
    // initializer or another output: that would rename the model's interface.
    if (w.replacement->kind == Replacement::Kind::Var) {
      const Graph& g = *model.graph;
      Value* with = match.values.at(w.replacement->var);
      auto listed = [](const std::vector<Value*>& vs, const Value* v) { return std::find(vs.begin(), vs.end(), v) != vs.end(); };
      if (listed(g.outputs(), target) && (listed(g.inputs(), with) || with->initializer || listed(g.outputs(), with))) {
        if (why) *why = "graph output '" + target->name() + "' would become '" + with->name() + "', which the model's interface names";
        return false;
      }
    }
    targets.push_back(target);
  }
  // Shape-derived attributes are checked before anything is built.
  Builder builder(model, matcher, match, common_scope(match.nodes), *cr.ast);
  std::function<bool(const Replacement&)> buildable = [&](const Replacement& r) {
    if (r.kind == Replacement::Kind::Const) return rewrite_constant(r, builder.bound(), why).has_value();
    for (const auto& a : r.attrs) {
      if (a.term && !shape_term_value(*a.term, &match.values.at(a.term->var)->type)) {
        if (why) *why = a.term->to_string() + " is not a static number at this match";
        return false;
      }
      if (!a.list.empty() && !list_value(a.list, builder.bound(), why)) return false;
    }
    for (const auto& a : r.args)
      if (!buildable(*a)) return false;
    return true;
  };
  for (const auto& w : cr.ast->rewrites)
    if (!buildable(*w.replacement)) return false;
  std::vector<Value*> replacements;
  for (const auto& w : cr.ast->rewrites) replacements.push_back(builder.build(*w.replacement));
  for (size_t i = 0; i < targets.size(); ++i) substitute(*model.graph, targets[i], replacements[i]);
  // A new op's domain must be imported (ai.geopt and friends are at version 1).
  for (const Node* n : builder.created())
    if (model.opset_version(n->domain) == 0) model.opsets.push_back({n->domain, 1});
  return true;
}

RewriteStats apply_rules(Model& model, const RuleSet& rules, const RewriteOptions& options) {
  RewriteStats stats;
  Graph& g = *model.graph;
  stats.nodes_before = g.nodes().size();
  for (const auto& r : rules.rules()) stats.per_rule[r.ast->name];
  // Rules tagged `late` (Div by a constant as Mul, Sqrt into Rsqrt) rewrite the inside
  // of patterns other rules match; greedily they would hide them, so they run only in
  // a pass after one where nothing else matched. The e-graph keeps both forms anyway.
  auto is_late = [&](int rule) { return rules.rules()[static_cast<size_t>(rule)].ast->has_tag("late"); };
  bool any_late = false;
  for (size_t r = 0; r < rules.rules().size(); ++r) any_late = any_late || is_late(static_cast<int>(r));
  bool late_allowed = false;
  for (int pass = 0; pass < options.max_passes; ++pass) {
    ++stats.passes;
    bool changed = false, late_fired = false;
    // Duplicates merged first, as the e-graph's hash-consing merges them (an exporter's
    // two `x - mean` are the one value a LayerNorm pattern shares).
    eliminate_common_subexpressions(g);
    std::vector<Node*> snapshot;
    for (const auto& n : g.nodes()) snapshot.push_back(n.get());
    std::unordered_set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
    for (Node* n : snapshot) {
      bool live = false;
      for (const Value* out : n->outputs()) live = live || (out && (!out->uses().empty() || outputs.count(out)));
      if (!live) continue;  // replaced earlier in this pass
      Matcher matcher(rules, model);
      const bool only_first = pass == 0 && !options.first_rule.empty();
      for (const Match& m : matcher.match_at(n)) {
        if (only_first && rules.rules()[static_cast<size_t>(m.rule)].ast->name != options.first_rule) continue;
        if (!only_first && (!late_allowed || options.skip_late) && is_late(m.rule)) continue;
        RuleStats& rs = stats.per_rule[rules.rules()[static_cast<size_t>(m.rule)].ast->name];
        ++rs.matched;
        if (apply_match(model, rules, m, nullptr)) {
          ++rs.applied;
          changed = true;
          late_fired = late_fired || is_late(m.rule);
          break;
        }
      }
      outputs = std::unordered_set<const Value*>(g.outputs().begin(), g.outputs().end());
    }
    g.remove_dead_code();
    if (!g.topological_sort()) throw Error("internal: a rewrite created a cycle");
    if (pass == 0 && !options.first_rule.empty()) continue;
    if (changed) {
      if (late_fired) late_allowed = false;  // what it made may let the others match again
      continue;
    }
    if (late_allowed || !any_late || options.skip_late) break;
    late_allowed = true;
  }
  stats.nodes_after = g.nodes().size();
  return stats;
}

}  // namespace geopt::dsl
