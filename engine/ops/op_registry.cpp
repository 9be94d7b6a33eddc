#include "ops/op_registry.h"

#include "ir/domain.h"
#include "util/error.h"

namespace geopt {
namespace {

// ONNX's default domain keys as the bare op, any other as "domain::op".
std::string key(std::string_view domain, std::string_view op) {
  std::string k;
  if (!is_onnx_domain(domain)) k.append(domain).append("::");
  return k.append(op);
}

}  // namespace

OpRegistry::Entry& OpRegistry::entry(std::string_view domain, std::string_view op) {
  return entries_[key(domain, op)];
}

void OpRegistry::add(std::string_view domain, std::string_view op, KernelFn fn, bool half_via_f32) {
  entry(domain, op).kernel = KernelInfo{std::move(fn), half_via_f32};
}

void OpRegistry::set_tactic_knobs(std::string_view domain, std::string_view op, unsigned knobs) {
  Entry& e = entry(domain, op);
  if (!e.kernel) throw InternalError("set_tactic_knobs: " + key(domain, op) + " has no kernel");
  e.kernel->tactic_knobs = knobs;
}

void OpRegistry::set_traits(std::string_view domain, std::string_view op, const OpTraits& traits) {
  entry(domain, op).traits = traits;
}

const KernelInfo* OpRegistry::find(std::string_view domain, std::string_view op) const {
  auto it = entries_.find(key(domain, op));
  return it == entries_.end() || !it->second.kernel ? nullptr : &*it->second.kernel;
}

const OpTraits& OpRegistry::traits(std::string_view domain, std::string_view op) const {
  static const OpTraits none;
  auto it = entries_.find(key(domain, op));
  return it == entries_.end() ? none : it->second.traits;
}

std::vector<std::string> OpRegistry::op_names() const {
  std::vector<std::string> names;
  for (const auto& [k, e] : entries_)
    if (e.kernel) names.push_back(k);
  return names;
}

}  // namespace geopt
