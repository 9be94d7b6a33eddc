#pragma once
// What the API's handles hold: the optimized model, and a plan with its executor.
#include <memory>
#include <mutex>

#include "ascend/optimizer.h"
#include "ascend/plan_executor.h"
#include "geopt/geopt.h"
#include "ir/graph.h"
#include "plan.pb.h"

namespace geopt::api {

struct OptimizedModel::Impl {
  Model model;
};

struct Plan::Impl {
  plan::Plan plan;
  std::string source;  // the file it was read from, or "<compiled>"
  // Built on the first run (a plan that is only saved never builds one).
  mutable std::once_flag built;
  mutable std::unique_ptr<ascend::PlanExecutor> executor;
};

Summary summary_of(const ascend::OptimizeResult& r);

}  // namespace geopt::api
