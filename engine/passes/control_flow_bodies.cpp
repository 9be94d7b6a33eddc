#include "passes/control_flow_bodies.h"
#include "ops/op_traits.h"

#include <spdlog/spdlog.h>

#include "passes/control_flow_types.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt {

std::string body_scope(const Node& n, const std::string& attr) { return n.describe() + " " + attr; }

std::string nested_scope(const std::string& outer, const std::string& inner) {
  if (outer.empty() || inner.empty()) return outer + inner;
  return outer + " > " + inner;
}

namespace {

void collect(const Model& model, const std::string& outer, BodyShapes shapes, const OpRegistry* ops,
             std::vector<ScopedBody>& out) {
  for (const auto& np : model.graph->nodes()) {
    const Node& n = *np;
    if (!is_control_flow(n) || (control_flow_of(n) == ControlFlow::Scan && model.opset_version("") < 9))
      continue;
    for (const auto& a : n.attributes) {
      if (a.kind != AttrKind::Graph || a.opaque.size() != 1) continue;
      const std::string scope = nested_scope(outer, body_scope(n, a.name));
      try {
        Model body = body_as_model(n, model, a.name.c_str(), body_input_types(n));
        if (shapes == BodyShapes::Propagated) propagate_static_shapes(body, *ops);
        std::vector<ScopedBody> nested;
        collect(body, scope, shapes, ops, nested);
        out.push_back({scope, std::move(body)});
        for (auto& b : nested) out.push_back(std::move(b));
      } catch (const Error& e) {
        spdlog::debug("{}: not read as a model of its own: {}", scope, e.what());
      }
    }
  }
}

}  // namespace

std::vector<ScopedBody> control_flow_bodies(const Model& model, BodyShapes shapes, const OpRegistry* ops) {
  if (shapes == BodyShapes::Propagated && !ops) throw Error("control_flow_bodies: propagating needs the ops");
  std::vector<ScopedBody> out;
  collect(model, "", shapes, ops, out);
  return out;
}

}  // namespace geopt
