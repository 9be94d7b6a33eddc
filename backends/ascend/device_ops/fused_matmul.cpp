// FusedMatMul: activation(A x B + Bias), B plain (ND) or laid out for the Cube
// (FRACTAL_NZ, read back as the K x N matrix on the host).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <optional>
#include <string>

#include "device_ops/device_ops.h"
#include "device_ops/layout_conversions.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "kernels/fused.h"
#include "layout.h"
#include "onnx/schema_helpers.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;
using onnx_io::add_activation_attrs;
using onnx_io::base;
using onnx_io::infer_like;

void fused_matmul(KernelContext& ctx) {
  const std::optional<Format> b_format = parse_format(ctx.attr_string("b_format", "ND"));
  if (b_format != Format::ND && b_format != Format::FRACTAL_NZ) ctx.fail("b_format must be ND or FRACTAL_NZ");
  if (b_format == Format::ND) {
    ctx.outputs[0] = fused_matmul_output(ctx, ctx.input(1));
    return;
  }
  const HostTensor& a = ctx.input(0);
  if (a.rank() < 1 || ctx.attr_int("n", 0) <= 0) ctx.fail("a FRACTAL_NZ operand needs `n` (its columns)");
  ctx.outputs[0] =
      fused_matmul_output(ctx, unpacked_weight(ctx.input(1), {a.dim(-1), ctx.attr_int("n", 0)}, true));
}

}  // namespace

void register_fused_matmul_schema() {
  OpSchema s = base("FusedMatMul", "Y = activation(MatMul(A, B) + Bias) with ONNX MatMul broadcasting.");
  add_activation_attrs(s);
  s.Attr("b_format", "ND, or FRACTAL_NZ (B a K x N matrix, or a stack of them, laid out for the Cube).",
         AttributeProto::STRING, std::string("ND"));
  s.Attr("n", "Columns of B: needed with FRACTAL_NZ, whose dims are padded.", AttributeProto::INT,
         int64_t{0});
  s.Input(0, "A", "Left operand.", "T").Input(1, "B", "Right operand.", "T");
  s.Input(2, "Bias", "Bias broadcast to the product.", "T", OpSchema::Optional);
  s.Output(0, "Y", "Output.", "T");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* bf = ctx.getAttribute("b_format");
    const std::optional<Format> b_format = parse_format(bf ? bf->s() : "ND");
    if (b_format != Format::ND && b_format != Format::FRACTAL_NZ)
      fail_shape_inference("b_format must be ND or FRACTAL_NZ");
    if (b_format == Format::ND) {
      infer_like("MatMul", 13, ctx);
      return;
    }
    const auto* n = ctx.getAttribute("n");
    if (!n || n->i() <= 0) fail_shape_inference("a FRACTAL_NZ B needs `n`");
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& a = ctx.getInputType(0)->tensor_type().shape();
    if (a.dim_size() < 2) fail_shape_inference("a FRACTAL_NZ B needs A of rank >= 2");
    // Batch dims: A's and those in front of B's four fractal dims (a stack of weights), broadcast.
    onnx::TensorShapeProto a_batch, b_batch, out;
    for (int i = 0; i + 2 < a.dim_size(); ++i) *a_batch.add_dim() = a.dim(i);
    if (onnx::hasInputShape(ctx, 1)) {
      const auto& b = ctx.getInputType(1)->tensor_type().shape();
      if (b.dim_size() < 4) fail_shape_inference("a FRACTAL_NZ B has rank >= 4");
      for (int i = 0; i + 4 < b.dim_size(); ++i) *b_batch.add_dim() = b.dim(i);
    }
    onnx::bidirectionalBroadcastShapeInference(a_batch, b_batch, out);
    *out.add_dim() = a.dim(a.dim_size() - 2);
    out.add_dim()->set_dim_value(n->i());
    onnx::updateOutputShape(ctx, 0, out);
  });
  onnx::RegisterSchema(std::move(s));
}

void add_fused_matmul(OpRegistry& r) {
  add_device_op(r, "FusedMatMul", fused_matmul, /*half_via_f32=*/true);
  r.set_tactic_knobs(kGeoptDomain, "FusedMatMul", kTacticPacking);  // fused_matmul_f32 reads it
}

}  // namespace geopt::ascend
