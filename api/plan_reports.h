#pragma once
// The JSON views of a plan: `geopt plan dump --json` and `geopt profile --json`.
#include <nlohmann/json.hpp>
#include <string>

#include "ascend/plan_profile.h"
#include "plan.pb.h"

namespace geopt::api {

// The plan as JSON (protobuf's mapping, field names as in plan.proto), weight bytes left out.
std::string plan_dump_json(plan::Plan plan, const std::string& where);

// The simulated device profile of a plan (of gear `gear` of a plan of gears); `where`
// names the plan in the report. With `trace`, writes Chrome's trace format there.
nlohmann::ordered_json plan_profile_json(const plan::Plan& file, int gear, const std::string& where,
                                         const std::string& trace = "");

// The seed's tuning hints for a profile (ascend/tune/tuning_hints.h): metric, value,
// threshold, job type, and the command that tunes `model`.
nlohmann::ordered_json tuning_hints_json(const ascend::PlanProfile& profile, const std::string& model);

}  // namespace geopt::api
