#pragma once
// What geopt tune shares with geopt compile: the API's compile options turned into the
// pipeline's (api/compile.cpp), so a tuned plan is the plan compile makes.
#include "ascend/compile.h"
#include "ascend/hardware_profile.h"
#include "dsl/rule_set.h"
#include "geopt/geopt.h"
#include "ir/graph.h"

namespace geopt::api {

ascend::CompileOptions pipeline_options(const CompileOptions& o, const Model& given,
                                        const dsl::RuleSet* rules, const ascend::HardwareProfile& profile);

}  // namespace geopt::api
