#include "optimizer.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include <spdlog/spdlog.h>

#include "device_ops/device_ops.h"
#include "dsl/rule_run.h"
#include "onnx/captures.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "ops/op_traits.h"
#include "passes/control_flow_bodies.h"
#include "passes/control_flow_types.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

// An e-node as the cost model sees it: its op, the types of its children (which of them
// are constants) and of its outputs (a tuple's are on the classes of its projections).
KernelDesc describe(const EGraph& g, ClassId cls, const ENode& n) {
  const OpSignature& s = g.signature(n.op);
  KernelDesc d{s.domain, s.op_type, &s.attributes, {}, {}};
  for (ClassId c : n.children) {
    if (c != kAbsent && d.inputs.size() < 64 && g.eclass(c).data.is_constant())
      d.constant_inputs |= uint64_t{1} << d.inputs.size();
    d.inputs.push_back(c == kAbsent ? nullptr : &g.eclass(c).data.type);
  }
  if (s.num_outputs == 1) {
    d.outputs.push_back(&g.eclass(cls).data.type);
  } else {
    d.outputs.assign(s.num_outputs, nullptr);
    for (const auto& [parent, parent_class] : g.eclass(cls).parents)
      if (parent.kind == ENode::Kind::Proj && parent.op < s.num_outputs)
        d.outputs[parent.op] = &g.eclass(g.find(parent_class)).data.type;
  }
  return d;
}

}  // namespace

NodeCost egraph_cost(const HardwareProfile& profile, const CostOptions& options) {
  return [profile, options](const EGraph& g, ClassId cls, const ENode& n) -> double {
    if (n.kind != ENode::Kind::Op) return 0.0;
    // An op of constants the e-graph left to compile time (a weight laid out for the
    // Cube, too large to fold while exploring) is computed when the model is compiled:
    // no kernel at run time. Where the class holds the folded constant, that is taken.
    bool of_constants = !n.children.empty() && !g.eclass(cls).data.constant;
    for (ClassId c : n.children)
      of_constants = of_constants && (c == kAbsent || g.eclass(c).data.is_constant());
    if (of_constants) return 0.0;
    const KernelDesc d = describe(g, cls, n);
    // A Transpose that moves only axes of size 1 is a view, free at run time; the
    // Reshape it equals (the elimination rules) wins the tie by a hair, so the graph
    // says it moves nothing and every kernel counter agrees.
    if (is_view_transpose(d)) return 1e-6;
    KernelCost c = cost_of(work_of(d, options), profile);
    // Kernels a rule proposed must fit; the input's own kernels always stay
    // available, so the input program can always be extracted.
    if (!c.feasible && n.origin >= 0) return kInfeasible;
    return c.total_us;
  };
}

namespace {

// The names every body of the model's graph defines.
std::set<std::string> body_names(const Model& m) {
  std::set<std::string> names;
  for (const auto& n : m.graph->nodes())
    for (const auto& a : n->attributes)
      if (a.kind == AttrKind::Graph && a.opaque.size() == 1) names.merge(names_defined(a.opaque[0]));
  return names;
}

// A rewrite names the values it makes after their op ("const", "FusedConv_output"); two
// graphs optimized alike (an If's branches, or a branch and the graph around it) would
// define the same names, and ONNX's inference reads a body's name as the outer value's.
// Those the optimized graph did not have before and that are defined elsewhere in the
// model are renamed (under `scope`, where given).
void rename_apart(Graph& body, const std::set<std::string>& before, const std::set<std::string>& taken,
                  const std::string& scope) {
  std::vector<Value*> made;
  std::set<const Value*> seen;
  auto consider = [&](Value* v) {
    if (v && seen.insert(v).second && !before.count(v->name()) && taken.count(v->name())) made.push_back(v);
  };
  for (const auto& n : body.nodes()) {
    for (Value* v : n->outputs()) consider(v);
    for (Value* v : n->inputs())
      if (v && v->initializer) consider(v);
  }
  const std::string prefix = scope.empty() ? "" : scope + "/";
  for (Value* v : made) {
    std::string name = body.unique_name(prefix + v->name());
    for (int i = 1; taken.count(name); ++i)
      name = body.unique_name(prefix + v->name() + "_" + std::to_string(i));
    body.rename_value(v, name);
  }
}

// Each control-flow body is optimized as a model of its own (what it reads of the
// enclosing graph's constants as constants) and written back into its attribute: the
// values it reads of the enclosing graph become references by name again, and the
// node's captures stay as they are (a body optimized reads no outer value it did not
// read before). A body that cannot be written back as it is optimized (an output of
// unknown type, or a new name the enclosing graph has: ONNX's single assignment spans
// nested graphs) stays as it was. Returns the results of the bodies that changed.
std::vector<OptimizeResult> optimize_bodies(Model& m, const dsl::RuleSet& rules,
                                            const HardwareProfile& profile, const OptimizeOptions& options) {
  std::vector<OptimizeResult> changed;
  std::set<std::string> taken = body_names(m);
  for (const auto& np : m.graph->nodes()) {
    Node& n = *np;
    if (!is_control_flow(n) || (control_flow_of(n) == ControlFlow::Scan && m.opset_version("") < 9)) continue;
    const Attribute* captures = n.attr(kCapturesAttr);
    for (auto& a : n.attributes) {
      if (a.kind != AttrKind::Graph || a.opaque.size() != 1) continue;
      try {
        const size_t own_inputs = import_subgraph(a.opaque[0], n.describe() + " " + a.name)->inputs().size();
        Model body = body_as_model(n, m, a.name.c_str(), body_input_types(n));
        std::set<std::string> captured_constants;
        if (captures)
          for (const auto& name : captures->strings)
            if (const Value* v = body.graph->find_value(name); v && v->initializer)
              captured_constants.insert(name);
        OptimizeResult r = optimize(body, rules, profile, options);
        const std::set<std::string> before = names_defined(a.opaque[0]);
        rename_apart(*r.model.graph, before, taken, n.name + "/" + a.name);
        onnx::GraphProto gp = graph_to_proto(r.model);
        while (gp.input_size() > static_cast<int>(own_inputs)) gp.mutable_input()->RemoveLast();
        for (int i = gp.initializer_size(); i-- > 0;)
          if (captured_constants.count(gp.initializer(i).name()))
            gp.mutable_initializer()->DeleteSubrange(i, 1);
        bool clash = false;
        for (const auto& node : gp.node())
          for (const auto& out : node.output()) clash = clash || (m.graph->find_value(out) != nullptr);
        for (const auto& t : gp.initializer()) clash = clash || (m.graph->find_value(t.name()) != nullptr);
        if (clash) {
          spdlog::debug("optimize: {} {} stays as it was: a name of the optimized body is taken outside it",
                        n.describe(), a.name);
          continue;
        }
        std::string bytes = gp.SerializeAsString();
        taken.merge(names_defined(bytes));
        if (bytes != a.opaque[0]) {
          a.opaque[0] = std::move(bytes);
          // The body may now use ops of domains the model did not import (ai.geopt's).
          for (const auto& o : r.model.opsets)
            if (m.opset_version(o.domain) == 0) m.opsets.push_back(o);
          r.model = Model{};  // only the report is kept
          for (SiteOutcome& site : r.sites) site.scope = nested_scope(body_scope(n, a.name), site.scope);
          changed.push_back(std::move(r));
        }
      } catch (const Error& e) {
        spdlog::debug("optimize: {} {} stays as it was: {}", n.describe(), a.name, e.what());
      }
    }
  }
  return changed;
}

using SiteRecords = std::map<std::pair<int32_t, int32_t>, const dsl::SiteRecord*>;

// Each applied site: kept, or why not. A site's alternative is costed as a whole
// program: the chosen one with that class switched to the site's e-node (classes it
// newly needs take their cheapest tree choice).
std::vector<SiteOutcome> site_outcomes(const dsl::RuleRun& run, const std::vector<dsl::SiteRecord>& applied,
                                       const SiteRecords& records, const dsl::RuleSet& rules,
                                       const HardwareProfile& profile, const CostOptions& cost_options) {
  const GraphEGraph& geg = run.egraph;
  const Extraction& x = run.extraction;
  const NodeCost& cost = run.cost;
  const auto& sites = run.kept_sites;
  const Selection kept(geg.egraph, geg.roots, cost, x.choice);
  std::vector<SiteOutcome> outcomes;
  const Extraction fill = extract_greedy_tree(geg.egraph, geg.roots, cost);
  auto program_with = [&](ClassId c, size_t node_index) {
    return kept.cost_with(c, node_index, &fill.choice);
  };
  // Operand orders of one commutative pattern rewrite the same value: one site.
  std::map<std::pair<int, ClassId>, size_t> site_index;
  for (const auto& rec : applied) {
    const auto key = std::make_pair(rec.rule, geg.egraph.find(rec.target));
    if (auto it = site_index.find(key); it != site_index.end()) {
      SiteOutcome& prev = outcomes[it->second];
      if (!prev.selected && sites.count({rec.rule, rec.site})) {
        prev.selected = true;
        prev.reason.clear();
      }
      continue;
    }
    site_index[key] = outcomes.size();
    SiteOutcome o;
    o.rule = rules.rules()[static_cast<size_t>(rec.rule)].ast->name;
    o.replaced = rec.replaced;
    o.node = rec.replaced.empty() ? geg.egraph.eclass(rec.target).data.name : rec.replaced.front();
    o.selected = sites.count({rec.rule, rec.site}) > 0;
    if (!o.selected) {
      ClassId c = geg.egraph.find(rec.target);
      const size_t chosen = x.choice.at(c);
      const ENode* mine = nullptr;
      size_t mine_index = 0;
      const auto& class_nodes = geg.egraph.eclass(c).nodes;
      for (size_t i = 0; i < class_nodes.size(); ++i)
        if (class_nodes[i].origin == rec.rule && class_nodes[i].site == rec.site) {
          mine = &class_nodes[i];
          mine_index = i;
        }
      if (chosen == kNoChoice || !kept.computes(c)) {
        o.reason = "its value is not needed in the chosen program (another rewrite replaced what uses it)";
      } else if (!mine) {
        o.reason = "the extraction kept the input's form of this value";
      } else if (const ENode& further = geg.egraph.eclass(c).nodes.at(chosen);
                 further.origin >= 0 && further.origin != rec.rule &&
                 records.count({further.origin, further.site}) &&
                 std::all_of(rec.replaced.begin(), rec.replaced.end(), [&](const std::string& name) {
                   const auto& covered_further = records.at({further.origin, further.site})->replaced;
                   return std::find(covered_further.begin(), covered_further.end(), name) !=
                          covered_further.end();
                 })) {
        const std::string& later = rules.rules()[static_cast<size_t>(further.origin)].ast->name;
        o.reason = "superseded: " + later + " fused these nodes further, into " +
                   geg.egraph.signature(further.op).op_type;
      } else {
        const ENode& kept_node = geg.egraph.eclass(c).nodes.at(chosen);
        const OpSignature& s = geg.egraph.signature(mine->op);
        KernelCost kc = cost_of(work_of(describe(geg.egraph, c, *mine), cost_options), profile);
        if (!kc.feasible) {
          o.reason = "infeasible: " + kc.reason;
        } else {
          const std::string kept_op = kept_node.kind == ENode::Kind::Op
                                          ? geg.egraph.signature(kept_node.op).op_type
                                          : "a constant or input";
          const double with_it = program_with(c, mine_index);
          char buf[320];
          if (with_it == kInfeasible)
            std::snprintf(buf, sizeof buf,
                          "rejected: taking its %s here would make the program cyclic (the e-graph proved it "
                          "equal to a value it uses)",
                          s.op_type.c_str());
          else if (with_it > x.cost + 1e-9)
            std::snprintf(buf, sizeof buf,
                          "rejected by cost: the program with its %s models %.2f us, the chosen program "
                          "(with %s here) %.2f us",
                          s.op_type.c_str(), with_it, kept_op.c_str(), x.cost);
          else
            std::snprintf(buf, sizeof buf,
                          "a tie: the program with its %s models %.2f us, as does the chosen program (with "
                          "%s here); ties keep the input's form",
                          s.op_type.c_str(), with_it, kept_op.c_str());
          o.reason = buf;
        }
      }
    }
    outcomes.push_back(std::move(o));
  }
  return outcomes;
}

// Provenance: fused nodes are named after the module they replace and record the
// rule and the input nodes, on the node (doc string) and in the model's metadata.
void record_provenance(Model& model, const std::map<std::string, std::pair<int32_t, int32_t>>& origins,
                       const SiteRecords& records, const dsl::RuleSet& rules) {
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  for (auto& node : model.graph->nodes()) {
    auto it = origins.find(node->name);
    if (it == origins.end()) continue;
    auto rec = records.find(it->second);
    const std::string rule = rules.rules()[static_cast<size_t>(it->second.first)].ast->name;
    std::vector<std::string> replaced =
        rec == records.end() ? std::vector<std::string>{} : rec->second->replaced;
    auto scope_of = [](const std::string& name) {
      std::vector<std::string> parts;
      size_t start = 0;
      for (size_t slash; (slash = name.find('/', start)) != std::string::npos; start = slash + 1)
        parts.push_back(name.substr(start, slash - start));
      return parts;
    };
    std::vector<std::string> scope_parts;
    bool first = true;
    for (const auto& name : replaced) {
      std::vector<std::string> parts = scope_of(name);
      if (first) {
        scope_parts = parts;
        first = false;
      } else {
        size_t i = 0;
        while (i < scope_parts.size() && i < parts.size() && scope_parts[i] == parts[i]) ++i;
        scope_parts.resize(i);
      }
    }
    // Nodes from different modules (a residual Add and the next module's norm): the
    // module of the node whose value it replaces (listed first).
    if (scope_parts.size() <= 1 && !replaced.empty()) scope_parts = scope_of(replaced.front());
    std::string scope;
    for (size_t i = 0; i < scope_parts.size(); ++i) scope += (i ? "/" : "") + scope_parts[i];
    std::string wanted = (scope.empty() ? "" : scope + "/") + node->op_type;
    if (wanted != node->name && !model.graph->find_node(wanted)) model.graph->rename_node(node.get(), wanted);
    node->doc_string = "geopt: rule " + rule;
    provenance[node->name] = {{"rule", rule}, {"replaced", replaced}};
  }
  if (!provenance.empty()) model.metadata.emplace_back("geopt.provenance", provenance.dump());
}

struct KernelCount {
  size_t kernels = 0, absorbed = 0;
};

// The input's kernels, and those whose node is gone from the result because a kept
// rewrite covered it (the fusion rate's terms); the input's kernels left unfused go to
// r.unfused. Only fusion rules whose rewrite merges two or more input kernels fuse; a
// Conv that merely changes form (FusedConv, NC1HWC0) or an op moved through a layout
// conversion is not counted.
KernelCount count_fused_kernels(const Model& input, OptimizeResult& r, const dsl::RuleSet& rules,
                                const CostOptions& cost_options) {
  auto is_fusion = [&](const std::string& rule) {
    const dsl::CompiledRule* cr = rules.find(rule);
    return cr && cr->ast->has_tag("fusion");
  };
  std::set<std::string> covered;
  for (const auto& s : r.sites) {
    if (!s.selected || !is_fusion(s.rule)) continue;
    size_t kernels_replaced = 0;
    for (const auto& name : std::set<std::string>(s.replaced.begin(), s.replaced.end()))
      if (const Node* n = input.graph->find_node(name))
        kernels_replaced += work_of(*n, cost_options).is_kernel;
    if (kernels_replaced >= 2) covered.insert(s.replaced.begin(), s.replaced.end());
  }
  // Ops of constants run when the plan is built (cost_of_graph's kernels leave them out
  // too): a Mul of a weight by a layer scale folded into it is no kernel left unfused.
  const std::unordered_set<const Value*> known = compile_time_values(*input.graph);
  const std::unordered_set<const Value*> folded = compile_time_values(*r.model.graph);
  // A fused node may inherit the name of the input node it grew from (the Conv of a
  // Conv+Relu): that input node counts as absorbed when its op changed.
  auto same_op_survives = [&](const Node& n) {
    const Node* kept = r.model.graph->find_node(n.name);
    return kept && kept->op_type == n.op_type && kept->domain == n.domain &&
           !runs_at_compile_time(*kept, folded);
  };
  KernelCount count;
  for (const auto& n : input.graph->nodes()) {
    if (runs_at_compile_time(*n, known) || !work_of(*n, cost_options).is_kernel) continue;
    ++count.kernels;
    if (covered.count(n->name) && !same_op_survives(*n)) ++count.absorbed;
  }
  for (const auto& n : r.model.graph->nodes())
    if (const Node* was = input.graph->find_node(n->name);
        was && n->domain.empty() && !runs_at_compile_time(*n, folded) &&
        work_of(*n, cost_options).is_kernel && was->op_type == n->op_type)
      ++r.unfused[n->op_type];
  return count;
}

// The bodies' rewrites count in the report too: the rules they kept, their sites, and
// their kernels in the fusion rate and in what is left unfused.
void add_body_reports(OptimizeResult& r, const std::vector<OptimizeResult>& bodies, KernelCount& count) {
  for (const OptimizeResult& b : bodies) {
    for (const auto& [rule, n] : b.selected) r.selected[rule] += n;
    for (const auto& [rule, n] : b.fused) r.fused[rule] += n;
    for (const auto& [rule, n] : b.rewritten) r.rewritten[rule] += n;
    for (const auto& [op, n] : b.unfused) r.unfused[op] += n;
    r.sites.insert(r.sites.end(), b.sites.begin(), b.sites.end());
    count.kernels += b.before.kernels;
    count.absorbed += static_cast<size_t>(std::lround(b.fusion_rate * static_cast<double>(b.before.kernels)));
  }
}

// Names the result's new values apart from every name the input uses, once every value
// of the result is named (the precision pass names its casts too).
void name_apart_from_input(const Model& shaped, Model& result) {
  std::set<std::string> before;
  for (const Value* v : shaped.graph->inputs()) before.insert(v->name());
  for (const auto& n : shaped.graph->nodes()) {
    for (const Value* v : n->outputs())
      if (v) before.insert(v->name());
    for (const Value* v : n->inputs())
      if (v && v->initializer) before.insert(v->name());
  }
  rename_apart(*result.graph, before, body_names(result), "");
}

}  // namespace

Model shapes_for_rules(const Model& model) {
  Model shaped = model.clone();
  propagate_static_shapes(shaped, op_registry());
  return shaped;
}

OptimizeResult optimize(const Model& given, const dsl::RuleSet& rules, const HardwareProfile& profile,
                        const OptimizeOptions& options) {
  OptimizeResult r;
  // The report's "before" is the model as given; shape computations on static shapes
  // fold first (GE's graph prepare), so rules see the shapes they read.
  r.nodes_before = given.graph->nodes().size();
  r.before = cost_of_model(given, profile, options.cost);
  Model shaped = given.clone();
  r.shapes_folded = propagate_static_shapes(shaped, op_registry()).folded > 0;  // as shapes_for_rules
  std::vector<OptimizeResult> bodies = optimize_bodies(shaped, rules, profile, options);
  if (!bodies.empty()) spdlog::info("optimize: {} control-flow bodies optimized", bodies.size());
  const Model& input = shaped;
  dsl::RuleRun run =
      dsl::run_rules(input, rules, op_registry(), egraph_cost(profile, options.cost),
                     {options.limits, options.backoff, options.exact_limit, options.extraction});
  r.saturation = std::move(run.saturation);
  r.egraph_ms = run.egraph_ms;
  r.saturate_ms = run.saturate_ms;
  r.extract_ms = run.extract_ms;
  const GraphEGraph& geg = run.egraph;
  const Extraction& x = run.extraction;
  r.enodes = geg.egraph.node_count();
  r.eclasses = geg.egraph.class_count();
  r.extraction_method = x.method;
  r.extraction_steps = x.steps;
  r.extraction_optimal = x.optimal;
  r.model = std::move(run.model);
  r.selected = run.selected;
  for (const auto& [rule, n] : r.selected)
    (rules.find(rule)->ast->has_tag("fusion") ? r.fused : r.rewritten)[rule] = n;
  SiteRecords records;
  for (const auto& rec : r.saturation.sites) records[{rec.rule, rec.site}] = &rec;
  r.sites = site_outcomes(run, r.saturation.sites, records, rules, profile, options.cost);
  record_provenance(r.model, run.origins, records, rules);
  KernelCount count = count_fused_kernels(input, r, rules, options.cost);
  add_body_reports(r, bodies, count);
  r.fusion_rate =
      count.kernels ? static_cast<double>(count.absorbed) / static_cast<double>(count.kernels) : 0;
  // The device's precision, written into the graph after fusion (as ATC does), so
  // every fused kernel gets the dtype its class computes in.
  if (options.write_precision) r.precision = apply_precision(r.model, options.cost.precision);
  name_apart_from_input(shaped, r.model);
  r.nodes_after = r.model.graph->nodes().size();
  r.after = cost_of_model(r.model, profile,
                          options.write_precision ? with_precision_applied(options.cost) : options.cost);
  return r;
}

}  // namespace geopt::ascend
