// The Plan handle: a plan file in memory, its executor built on the first run.
#include <cstring>
#include <mutex>

#include "ascend/plan_file.h"
#include "eval/kernel.h"
#include "eval/run_limits.h"
#include "guard.h"
#include "json_text.h"
#include "model_handles.h"
#include "plan_reports.h"
#include "tensor_convert.h"
#include "util/error.h"

namespace geopt::api {
namespace {

std::vector<Plan::Binding> bindings(const google::protobuf::RepeatedPtrField<plan::TensorRef>& refs) {
  std::vector<Plan::Binding> out;
  for (const auto& r : refs)
    out.push_back({.name = r.name(),
                   .dtype = dtype_to_api(static_cast<DType>(r.dtype())),
                   .shape = {r.dims().begin(), r.dims().end()}});
  return out;
}

// The bindings' plan: the plan's own, or (a plan of gears) its first gear's.
const plan::Plan& bindings_plan(const plan::Plan& p) { return p.gears_size() ? p.gears(0).plan() : p; }

}  // namespace

Plan::Plan() = default;
Plan::~Plan() = default;
Plan::Plan(const Plan&) = default;
Plan& Plan::operator=(const Plan&) = default;
Plan::Plan(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Plan Plan::load(const std::string& path) {
  return guarded([&] {
    auto impl = std::make_shared<Impl>();
    impl->plan = ascend::read_plan(path);
    impl->source = path;
    return Plan(std::move(impl));
  });
}

std::string Plan::save(const std::string& path, bool external_weights) const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    // write_plan notes the side file in the plan it writes; a copy keeps this one as it is.
    plan::Plan copy = impl_->plan;
    ascend::PlanWriteOptions options;
    if (external_weights) options.inline_weight_limit = 0;
    const auto side = ascend::write_plan(copy, path, options);
    return side.empty() ? path : path + " (weights in " + side.string() + ")";
  });
}

std::map<std::string, Tensor> Plan::run(const std::map<std::string, Tensor>& feeds,
                                        const RunOptions& options) const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    std::call_once(impl_->built,
                   [&] { impl_->executor = std::make_unique<ascend::PlanExecutor>(impl_->plan); });
    if (options.threads < 0 || options.threads > 1024)
      throw geopt::UsageError("threads " + std::to_string(options.threads) +
                              ": must be from 1 to 1024 (0: OMP_NUM_THREADS, else every core)");
    set_kernel_threads(options.threads);
    RunLimits limits;
    if (options.max_loop_trips) limits.loop_trips = options.max_loop_trips;
    limits.hint = "raise max_loop_trips if the model needs more";
    const RunLimitsScope bounded(limits);
    std::map<std::string, HostTensor> inputs;
    for (const auto& [name, t] : feeds) inputs.emplace(name, host_view(name, t));
    std::map<std::string, Tensor> outputs;
    for (auto& [name, t] : impl_->executor->run(inputs)) outputs.emplace(name, api_tensor(std::move(t)));
    return outputs;
  });
}

std::vector<Plan::Binding> Plan::inputs() const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    return bindings(bindings_plan(impl_->plan).inputs());
  });
}

std::vector<Plan::Binding> Plan::outputs() const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    return bindings(bindings_plan(impl_->plan).outputs());
  });
}

std::string Plan::dump_json() const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    return plan_dump_json(impl_->plan, impl_->source);
  });
}

std::string Plan::profile_json(int gear) const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no plan: this Plan holds none");
    return json_text(plan_profile_json(impl_->plan, gear, impl_->source));
  });
}

}  // namespace geopt::api
