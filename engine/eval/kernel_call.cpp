#include "eval/kernel_call.h"

#include "eval/derived_constant.h"
#include "ir/value.h"
#include "kernels/cast.h"
#include "util/error.h"

namespace geopt {

namespace {

// A constant's f32 copy, made once while the constant lives: a model in fp16 widens
// its weights for every kernel call otherwise, and the copy, itself constant, lets the
// kernels' own caches (reordered conv weights, unpacked matrix layouts) key on it.
HostTensor widened_constant(const HostTensor& t) {
  std::string key = "f32 of " + dtype_name(t.dtype());
  for (int64_t d : t.dims()) key += ' ' + std::to_string(d);
  return *derived_constant<HostTensor>(
      t, key, [&] { return std::make_shared<const HostTensor>(cast_tensor(t, DType::F32).frozen()); });
}

}  // namespace

std::vector<HostTensor> call_kernel(const OpRegistry& ops, const KernelInfo& kernel, const Node& node,
                                    int64_t opset, std::vector<const HostTensor*> inputs, const Scope* scope,
                                    std::vector<OutputPlacement> placements, const HostTactic& tactic) {
  DType half = DType::Undefined;
  for (const HostTensor* t : inputs)
    if (t && (t->dtype() == DType::F16 || t->dtype() == DType::BF16)) half = t->dtype();
  std::vector<HostTensor> widened;
  if (kernel.half_via_f32 && half != DType::Undefined) {
    widened.reserve(inputs.size());
    for (auto& p : inputs)
      if (p && (p->dtype() == DType::F16 || p->dtype() == DType::BF16)) {
        widened.push_back(cacheable_constant(*p) ? widened_constant(*p) : cast_tensor(*p, DType::F32));
        p = &widened.back();
      }
  }
  // A widened kernel computes f32 outputs: they cannot go where the half ones are kept.
  if (!widened.empty()) placements.clear();
  KernelContext ctx(ops, node, opset, std::move(inputs), scope, std::move(placements));
  ctx.set_tactic(tactic);
  try {
    kernel.fn(ctx);
  } catch (const Error& e) {
    // A kernel's own failures name the node (ctx.fail); one from a helper (a tensor too
    // large to allocate) is given the node and the values it was making.
    const std::string what = e.what();
    if (what.find(node.describe()) != std::string::npos) throw;
    std::string outputs;
    for (const Value* v : node.outputs())
      if (v) outputs += (outputs.empty() ? "'" : ", '") + v->name() + "'";
    throw Error(node.describe() + (outputs.empty() ? "" : " making " + outputs) + ": " + what);
  } catch (const std::exception& e) {
    throw Error(node.describe() + ": " + e.what());
  }
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    if (!node.outputs()[o]) continue;
    HostTensor& t = ctx.outputs[o];
    if (!t.defined() && t.dtype() != DType::String)
      ctx.fail("kernel produced no value for output '" + node.outputs()[o]->name() + "'");
    // Narrowed to the dtype the graph declares (an op may read half inputs into an
    // f32 output: a Pow with a half exponent); to the inputs' half type where unknown.
    const DType declared = node.outputs()[o]->type.dtype;
    const DType narrow_to = declared == DType::Undefined ? half : declared;
    if (kernel.half_via_f32 && half != DType::Undefined && t.dtype() == DType::F32 && narrow_to != DType::F32)
      t = cast_tensor(t, narrow_to);
  }
  return std::move(ctx.outputs);
}

}  // namespace geopt
