#pragma once
// The API's options (geopt/geopt.h, ATC's names) turned into what the pipelines take:
// the rule set, the hardware profile, the precision, the cost and saturation options,
// the check's tolerance and given inputs. The CLI's options fill the same structs, so a
// flag and its Python keyword mean one thing.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ascend/cost_model.h"
#include "ascend/optimizer.h"
#include "dsl/rule_set.h"
#include "eval/compare.h"
#include "eval/host_tensor.h"
#include "geopt/geopt.h"
#include "onnx/import.h"

namespace geopt::api {

// The rule files or folders (the shipped rules/ when none are given).
std::vector<std::string> rule_paths(const RuleOptions& o);
// Loads, checks and switches the rules; throws geopt::Error with every diagnostic.
std::unique_ptr<dsl::RuleSet> load_rules(const RuleOptions& o);
dsl::SaturationLimits saturation_limits(const RuleOptions& o);

// Throws geopt::Error on an unknown profile or a bad override.
ascend::HardwareProfile load_profile(const TargetOptions& o);
// The precision mode with its mix list; throws on a bad mix list, a mix list without
// allow_mix_precision, or a bf16 mode on a profile without bf16.
ascend::Precision precision_for(const TargetOptions& o, const ascend::HardwareProfile& profile);
// The mode is computed (written into the model), not only priced.
inline bool computes_precision(const TargetOptions& o) { return o.precision_mode.has_value(); }
ascend::CostOptions cost_options(const TargetOptions& o, const ascend::HardwareProfile& profile,
                                 int64_t symbolic_dim_value = 1);
// `model`: the model the rules run on, which rules.keep_format must name nodes of (where
// keep_format is empty it may be null).
ascend::OptimizeOptions optimize_options(const TargetOptions& target, const RuleOptions& rules,
                                         const ascend::HardwareProfile& profile, const Model* model);
// rules.keep_format as an exclusion of the `layout` rules; throws naming a node `model`
// (or a control-flow body in it) does not have.
dsl::NodeExclusion kept_format(const RuleOptions& rules, const Model& model);

ImportOptions import_options(const std::string& input_shape);
Model import_model(const ModelSource& source, const ImportOptions& options);

// The check's tolerance: the precision mode's, widened for what `model` computes in
// (model_precision: a QDQ model, an fp16 export), with atol/rtol where given.
Tolerance check_tolerance(const CheckOptions& o, const ascend::Precision& precision, bool computed,
                          const Model& model);
// The inputs the check takes as given, read as the model declares them.
std::map<std::string, HostTensor> check_inputs(const CheckOptions& o, const Model& model);

}  // namespace geopt::api
