#include "settings.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <set>

#include "dsl/diagnostic.h"
#include "io/npy.h"
#include "ir/value.h"
#include "util/error.h"
#include "util/text.h"

namespace geopt::api {

std::vector<std::string> rule_paths(const RuleOptions& o) {
  if (!o.paths.empty()) return o.paths;
  std::string dir = dsl::default_rules_dir();
  if (dir.empty())
    throw geopt::Error("no rules/ folder found next to geopt or in its install prefix; pass --rules DIR");
  return {dir};
}

std::unique_ptr<dsl::RuleSet> load_rules(const RuleOptions& o) {
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(rule_paths(o), errors);
  if (!set) {
    std::string text = dsl::format_diagnostics(errors);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    throw geopt::Error(std::to_string(errors.size()) + " error(s) in the rules:\n" + text);
  }
  if (!o.fusion_switch_file.empty()) set->apply_switch_file(o.fusion_switch_file);
  for (const auto& d : o.disable)
    if (!set->set_enabled(d, false)) throw geopt::Error("--disable " + d + ": no rule or tag has that name");
  return set;
}

dsl::SaturationLimits saturation_limits(const RuleOptions& o) {
  dsl::SaturationLimits limits;
  if (o.iter_limit) {
    if (*o.iter_limit < 0)
      throw geopt::UsageError("--iter-limit " + std::to_string(*o.iter_limit) + ": must be >= 0");
    limits.iterations = *o.iter_limit;
  }
  if (o.node_limit) limits.enodes = *o.node_limit;
  if (o.time_limit) {
    if (!(*o.time_limit >= 0)) throw geopt::UsageError("--time-limit must be a number of seconds >= 0");
    limits.seconds = *o.time_limit;
  }
  return limits;
}

ascend::HardwareProfile load_profile(const TargetOptions& o) {
  std::map<std::string, std::string> overrides;
  for (const auto& s : o.profile_set) {
    auto eq = s.find('=');
    if (eq == std::string::npos)
      throw geopt::UsageError("--profile-set " + s + ": expected SECTION.KEY=VALUE");
    overrides[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return ascend::load_profile(o.soc_version, overrides);
}

ascend::Precision precision_for(const TargetOptions& o, const ascend::HardwareProfile& profile) {
  const std::string mode = o.precision_mode.value_or("force_fp16");
  ascend::Precision p;
  p.mode = ascend::parse_precision_mode(mode);
  const bool mixed = p.mode == ascend::PrecisionMode::AllowMixPrecision ||
                     p.mode == ascend::PrecisionMode::AllowMixPrecisionBf16;
  if (!o.modify_mixlist.empty()) {
    if (!mixed)
      throw geopt::UsageError("--modify_mixlist changes allow_mix_precision's lists; --precision_mode is " +
                              mode);
    p.mix_list = std::make_shared<const ascend::MixList>(ascend::load_mix_list(o.modify_mixlist));
  }
  if (p.low() == DType::BF16 && !profile.cube_bf16)
    throw geopt::Error("--precision_mode " + mode + ": " + profile.soc_version + " computes no bf16 (" +
                       profile.source + ": cube.bf16 = false); the Ascend910B profiles do");
  return p;
}

ascend::CostOptions cost_options(const TargetOptions& o, const ascend::HardwareProfile& profile,
                                 int64_t symbolic_dim_value) {
  ascend::CostOptions c;
  c.precision = precision_for(o, profile);
  c.symbolic_dim_value = symbolic_dim_value;
  c.small_channel = o.enable_small_channel;
  // ATC documents l1_optimize as not implemented, the same as off_optimize.
  if (o.buffer_optimize == "off_optimize" || o.buffer_optimize == "l1_optimize")
    c.l2_buffer_optimize = false;
  else if (o.buffer_optimize != "l2_optimize")
    throw geopt::UsageError("--buffer_optimize " + o.buffer_optimize +
                            ": expected l2_optimize, l1_optimize or off_optimize");
  return c;
}

dsl::NodeExclusion kept_format(const RuleOptions& rules, const Model& model) {
  dsl::NodeExclusion e{"layout", {}};
  if (rules.keep_format.empty()) return e;
  std::set<std::string> names;
  std::function<void(const onnx::GraphProto&)> body = [&](const onnx::GraphProto& g) {
    for (const auto& n : g.node()) {
      names.insert(n.name());
      for (const auto& a : n.attribute()) {
        if (a.has_g()) body(a.g());
        for (const auto& sub : a.graphs()) body(sub);
      }
    }
  };
  for (const auto& n : model.graph->nodes()) {
    names.insert(n->name);
    for (const auto& a : n->attributes)
      if (a.kind == AttrKind::Graph || a.kind == AttrKind::Graphs)
        for (const std::string& bytes : a.opaque) {
          onnx::GraphProto g;
          if (g.ParseFromString(bytes)) body(g);
        }
  }
  names.erase("");  // unnamed nodes
  for (const std::string& name : rules.keep_format) {
    if (!names.count(name))
      throw geopt::Error("--keep_format " + as_text(name) + ": the model has no node of that name");
    e.nodes.insert(name);
  }
  return e;
}

ascend::OptimizeOptions optimize_options(const TargetOptions& target, const RuleOptions& rules,
                                         const ascend::HardwareProfile& profile, const Model* model) {
  ascend::OptimizeOptions opts;
  opts.cost = cost_options(target, profile);
  opts.write_precision = computes_precision(target);
  opts.limits = saturation_limits(rules);
  const auto mode = parse_extraction_mode(rules.extraction);
  if (!mode)
    throw geopt::UsageError("--extraction " + as_text(rules.extraction) + ": expected auto, greedy or exact");
  opts.extraction = *mode;
  if (!rules.keep_format.empty()) {
    if (!model) throw geopt::InternalError("keep_format given where no model is known");
    opts.limits.exclusions.push_back(kept_format(rules, *model));
  }
  return opts;
}

ImportOptions import_options(const std::string& input_shape) {
  ImportOptions options;
  if (!input_shape.empty()) options.input_shapes = parse_input_shapes(input_shape);
  return options;
}

Model import_model(const ModelSource& source, const ImportOptions& options) {
  if (!source.path.empty()) return import_onnx(source.path, options);
  onnx::ModelProto proto;
  if (source.bytes.empty() || !proto.ParseFromString(source.bytes))
    throw geopt::Error("<bytes>: not a valid ONNX model (protobuf parse failed: " +
                       std::string(source.bytes.empty() ? "no bytes" : "truncated or corrupt") + ")");
  return import_onnx_proto(std::move(proto), "<bytes>", options);
}

Tolerance check_tolerance(const CheckOptions& o, const ascend::Precision& precision, bool computed,
                          const Model& model) {
  Tolerance t = precision.check_tolerance(computed, model_precision(model));
  if (o.atol && o.rtol) t.basis.clear();  // the user's
  if (o.atol) t.atol = *o.atol;
  if (o.rtol) t.rtol = *o.rtol;
  if (!(t.atol >= 0) || !(t.rtol >= 0))
    throw geopt::UsageError("--check-atol and --check-rtol must be finite numbers >= 0");
  return t;
}

std::map<std::string, HostTensor> check_inputs(const CheckOptions& o, const Model& model) {
  std::map<std::string, HostTensor> out;
  for (const auto& e : o.inputs) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
      throw geopt::Error("--check-input '" + e + "': expected NAME=FILE.npy");
    const std::string name = e.substr(0, eq);
    const Value* input = nullptr;
    for (const Value* v : model.graph->inputs())
      if (!v->initializer && v->name() == name) input = v;
    if (!input) throw geopt::Error("--check-input names '" + name + "', which is not an input of the model");
    if (!out.emplace(name, as_declared_dtype(read_npy(e.substr(eq + 1)), input->type.dtype)).second)
      throw geopt::Error("--check-input " + name + " is given twice");
  }
  return out;
}

}  // namespace geopt::api
