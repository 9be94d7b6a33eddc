// Schemas of the standard ONNX ops new or changed in opsets 18-21, registered with
// libonnx (Debian's onnx 1.12 stops at opset 17) so that its checker and shape
// inference understand models of those opsets. Each follows the ONNX operator
// specification of its version; where an older version's inference function is
// exact for the new one, it is reused rather than written again. Training, string,
// sequence, optional, float8 and int4 forms are left out (their ops stay unknown,
// their types are refused at import). docs/OPS.md lists what is covered.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>

#include "onnx/validate.h"

namespace geopt::onnx_io {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;
using onnx::TensorShapeProto;

constexpr int kNewestOpset = 21;

const std::vector<std::string> kFloat = {"tensor(float16)", "tensor(float)", "tensor(double)",
                                         "tensor(bfloat16)"};
const std::vector<std::string> kInts = {"tensor(uint8)", "tensor(uint16)", "tensor(uint32)", "tensor(uint64)",
                                        "tensor(int8)",  "tensor(int16)",  "tensor(int32)",  "tensor(int64)"};

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const std::vector<std::string> kNumeric = join(kFloat, kInts);
const std::vector<std::string> kAll =
    join(kNumeric, {"tensor(bool)", "tensor(complex64)", "tensor(complex128)"});

// onnx 1.12 registers the standard domain up to opset 17 and refuses a schema past its
// range; the range is raised once, before the first schema of 18-21 is registered.
void raise_standard_opset_range() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  auto& map = const_cast<std::unordered_map<std::string, std::pair<int, int>>&>(ranges.Map());
  auto& range = map[onnx::ONNX_DOMAIN];
  range.second = std::max(range.second, kNewestOpset);
}

OpSchema schema(const char* name, int since, const char* doc) {
  OpSchema s;
  s.SetName(name).SetDomain(onnx::ONNX_DOMAIN).SinceVersion(since).SetDoc(doc);
  return s;
}

// The inference function of an older version of an op (or of another op) that is exact here.
onnx::InferenceFunction borrowed(const char* op, int version) {
  const OpSchema* s = onnx::OpSchemaRegistry::Schema(op, version);
  if (!s || !s->GetTypeAndShapeInferenceFunction()) return onnx::propagateShapeAndTypeFromFirstInput;
  return s->GetTypeAndShapeInferenceFunction();
}

// A small constant input's int64 values, or nullopt when it is absent or not constant.
std::optional<std::vector<int64_t>> constant_ints(InferenceContext& ctx, size_t input) {
  if (input >= ctx.getNumInputs()) return std::nullopt;
  const onnx::TensorProto* t = ctx.getInputData(input);
  if (!t) return std::nullopt;
  if (t->data_type() == onnx::TensorProto::INT64) return onnx::ParseData<int64_t>(t);
  if (t->data_type() == onnx::TensorProto::INT32) {
    auto v = onnx::ParseData<int32_t>(t);
    return std::vector<int64_t>(v.begin(), v.end());
  }
  return std::nullopt;
}

bool has_input(InferenceContext& ctx, size_t i) {
  return i < ctx.getNumInputs() && ctx.getInputType(i) != nullptr;
}

// Axes given as data, normalised to [0, rank) and checked.
std::vector<int64_t> normalised_axes(const std::vector<int64_t>& axes, int64_t rank, const char* what) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) fail_shape_inference(what, " axis ", a, " is out of range for rank ", rank);
    int64_t n = a < 0 ? a + rank : a;
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail_shape_inference(what, " axis ", a, " is repeated");
    out.push_back(n);
  }
  return out;
}

// The axes an op's `axes` attribute lists (normalized, each once), or every axis.
std::vector<int64_t> attribute_axes_or_all(InferenceContext& ctx, int64_t rank, const char* what) {
  std::vector<int64_t> given;
  if (onnx::getRepeatedAttribute(ctx, "axes", given)) return normalised_axes(given, rank, what);
  std::vector<int64_t> all(static_cast<size_t>(rank));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

void set_dim(TensorShapeProto::Dimension* d, int64_t value) {
  if (value >= 0) d->set_dim_value(value);
}

// What shape_from_first's `dim` returns for a dimension it does not know, and for one it
// keeps as the input has it (its symbol too).
constexpr int64_t kUnknownDim = -1;
constexpr int64_t kKeepDim = INT64_MIN;

// The first input's shape with each dimension mapped by `dim` (kUnknownDim, kKeepDim or a
// size, which must not be negative).
void shape_from_first(InferenceContext& ctx, size_t output,
                      const std::function<int64_t(int64_t axis, const TensorShapeProto::Dimension&)>& dim) {
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = onnx::getInputShape(ctx, 0);
  auto* out = ctx.getOutputType(output)->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < in.dim_size(); ++i) {
    const int64_t v = dim(i, in.dim(i));
    auto* d = out->add_dim();
    if (v == kKeepDim)
      *d = in.dim(i);
    else if (v >= 0)
      d->set_dim_value(v);
    else if (v != kUnknownDim)
      fail_shape_inference("axis ", i, " would get the negative size ", v);
  }
}

void register_split() {
  OpSchema s = schema("Split", 18,
                      "Splits a tensor along `axis`: by the `split` sizes, or into `num_outputs` chunks of "
                      "ceil(dim / n), the last smaller.");
  s.Input(0, "input", "The tensor to split.", "T")
      .Input(1, "split", "Sizes of the outputs along axis.", "tensor(int64)", OpSchema::Optional);
  s.Output(0, "outputs", "The pieces.", "T", OpSchema::Variadic, true, 1);
  s.Attr("axis", "Axis to split on.", AttributeProto::INT, int64_t{0});
  s.Attr("num_outputs", "Number of equal-sized outputs (the last may be smaller).", AttributeProto::INT,
         false);
  s.TypeConstraint("T", kAll, "Any tensor type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const size_t n = ctx.getNumOutputs();
    for (size_t i = 0; i < n; ++i) onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = onnx::getInputShape(ctx, 0);
    const int64_t rank = in.dim_size();
    const int64_t axis = normalised_axes({onnx::getAttribute(ctx, "axis", int64_t{0})}, rank, "Split")[0];
    const auto* num = ctx.getAttribute("num_outputs");
    if (num && has_input(ctx, 1)) fail_shape_inference("Split takes `split` or `num_outputs`, not both");
    if (num && num->i() != static_cast<int64_t>(n))
      fail_shape_inference("Split: num_outputs is ", num->i(), " but the node has ", n, " outputs");
    std::vector<int64_t> sizes(n, -1);
    if (auto split = constant_ints(ctx, 1)) {
      if (split->size() != n)
        fail_shape_inference("Split: `split` has ", split->size(), " sizes for ", n, " outputs");
      sizes = *split;
      if (in.dim(axis).has_dim_value() &&
          std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != in.dim(axis).dim_value())
        fail_shape_inference("Split: the sizes do not add up to dim ", in.dim(axis).dim_value());
    } else if (!has_input(ctx, 1) && in.dim(axis).has_dim_value()) {
      const int64_t dim = in.dim(axis).dim_value(), count = static_cast<int64_t>(n);
      const int64_t chunk = num ? (dim + count - 1) / count : dim / count;
      if (num && count > 1 && (count - 1) * chunk >= dim)
        fail_shape_inference("Split: dim ", dim, " does not split into ", count,
                             " parts of ceil(dim / num_outputs) (the last would be empty)");
      if (!num && dim % count != 0)
        fail_shape_inference("Split: dim ", dim, " is not divisible into ", n, " outputs");
      for (int64_t i = 0; i < count; ++i) sizes[i] = std::max<int64_t>(0, std::min(chunk, dim - chunk * i));
    }
    for (size_t k = 0; k < n; ++k) {
      auto* out = ctx.getOutputType(k)->mutable_tensor_type()->mutable_shape();
      for (int64_t i = 0; i < rank; ++i) {
        auto* d = out->add_dim();
        if (i == axis)
          set_dim(d, sizes[k]);
        else
          *d = in.dim(static_cast<int>(i));
      }
    }
  });
  onnx::RegisterSchema(std::move(s));
}

// ReduceMean, ReduceMax, ... at 18 take their axes as an input, as ReduceSum did at 13.
void register_reductions() {
  struct Reduce {
    const char* name;
    int since;
    std::vector<std::string> types;
  };
  const std::vector<std::string> minmax = join(kNumeric, {});
  const std::vector<Reduce> ops = {{"ReduceMean", 18, kNumeric},
                                   {"ReduceProd", 18, kNumeric},
                                   {"ReduceL1", 18, kNumeric},
                                   {"ReduceL2", 18, kNumeric},
                                   {"ReduceLogSum", 18, kNumeric},
                                   {"ReduceLogSumExp", 18, kNumeric},
                                   {"ReduceSumSquare", 18, kNumeric},
                                   {"ReduceMax", 18, minmax},
                                   {"ReduceMin", 18, minmax},
                                   {"ReduceMax", 20, join(minmax, {"tensor(bool)"})},
                                   {"ReduceMin", 20, join(minmax, {"tensor(bool)"})}};
  for (const auto& op : ops) {
    OpSchema s = schema(op.name, op.since,
                        "Reduces `data` over `axes` (an input since opset 18; none: all axes, or none with "
                        "noop_with_empty_axes).");
    s.Input(0, "data", "Input tensor.", "T")
        .Input(1, "axes", "Axes to reduce.", "tensor(int64)", OpSchema::Optional);
    s.Output(0, "reduced", "Reduced tensor.", "T");
    s.Attr("keepdims", "Keep the reduced axes as 1.", AttributeProto::INT, int64_t{1});
    s.Attr("noop_with_empty_axes", "With no axes: the identity instead of reducing all.", AttributeProto::INT,
           int64_t{0});
    s.TypeConstraint("T", op.types, "Reduced types.");
    s.TypeAndShapeInferenceFunction(borrowed("ReduceSum", 13));
    onnx::RegisterSchema(std::move(s));
  }
}

void register_pad(int since) {
  OpSchema s = schema(
      "Pad", since,
      "Pads `data` by `pads` on `axes` (all axes when absent): constant, reflect, edge or (since 19) wrap.");
  s.Input(0, "data", "Input tensor.", "T")
      .Input(1, "pads", "Begin pads of each axis, then end pads.", "tensor(int64)");
  s.Input(2, "constant_value", "Value of constant padding.", "T", OpSchema::Optional);
  s.Input(3, "axes", "Axes that `pads` applies to.", "Tind", OpSchema::Optional);
  s.Output(0, "output", "Padded tensor.", "T");
  s.Attr("mode", since >= 19 ? "constant, reflect, edge or wrap." : "constant, reflect or edge.",
         AttributeProto::STRING, std::string("constant"));
  s.TypeConstraint("T", kAll, "Any tensor type.");
  s.TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "Axes type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const int64_t rank = onnx::getInputShape(ctx, 0).dim_size();
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    if (has_input(ctx, 3)) {
      auto given = constant_ints(ctx, 3);
      if (!given) {  // the rank is known, the padded axes are not
        auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
        for (int64_t i = 0; i < rank; ++i) out->add_dim();
        return;
      }
      axes = normalised_axes(*given, rank, "Pad");
    }
    auto pads = constant_ints(ctx, 1);
    if (pads && pads->size() != 2 * axes.size())
      fail_shape_inference("Pad: `pads` has ", pads->size(), " values for ", axes.size(), " axes");
    shape_from_first(ctx, 0, [&](int64_t axis, const TensorShapeProto::Dimension& d) -> int64_t {
      auto it = std::find(axes.begin(), axes.end(), axis);
      if (it == axes.end()) return kKeepDim;
      if (!pads || !d.has_dim_value()) return kUnknownDim;
      const size_t k = static_cast<size_t>(it - axes.begin());
      int64_t v = d.dim_value() + (*pads)[k] + (*pads)[k + axes.size()];
      if (v < 0) fail_shape_inference("Pad: padding makes axis ", axis, " negative");
      return v;
    });
  });
  onnx::RegisterSchema(std::move(s));
}

// Resize's output size on each axis, as the specification of opset 18 computes it.
void register_resize() {
  OpSchema s =
      schema("Resize", 18,
             "Resizes X by `scales` or to `sizes` on `axes`, with antialiasing and an aspect-ratio policy.");
  s.Input(0, "X", "Input tensor.", "T1")
      .Input(1, "roi", "Crop region (tf_crop_and_resize).", "T2", OpSchema::Optional);
  s.Input(2, "scales", "Scale of each axis.", "tensor(float)", OpSchema::Optional);
  s.Input(3, "sizes", "Output size of each axis.", "tensor(int64)", OpSchema::Optional);
  s.Output(0, "Y", "Resized tensor.", "T1");
  s.Attr("antialias", "Antialiasing filter when downscaling (linear and cubic).", AttributeProto::INT,
         int64_t{0});
  s.Attr("axes", "Axes that roi, scales and sizes apply to.", AttributeProto::INTS, false);
  s.Attr("coordinate_transformation_mode", "As Resize-13.", AttributeProto::STRING,
         std::string("half_pixel"));
  s.Attr("cubic_coeff_a", "As Resize-13.", AttributeProto::FLOAT, -0.75f);
  s.Attr("exclude_outside", "As Resize-13.", AttributeProto::INT, int64_t{0});
  s.Attr("extrapolation_value", "As Resize-13.", AttributeProto::FLOAT, 0.0f);
  s.Attr("keep_aspect_ratio_policy", "stretch, not_larger or not_smaller (with sizes).",
         AttributeProto::STRING, std::string("stretch"));
  s.Attr("mode", "nearest, linear or cubic.", AttributeProto::STRING, std::string("nearest"));
  s.Attr("nearest_mode", "As Resize-13.", AttributeProto::STRING, std::string("round_prefer_floor"));
  s.TypeConstraint("T1", kAll, "Any tensor type.");
  s.TypeConstraint("T2", {"tensor(float16)", "tensor(float)", "tensor(double)"}, "roi type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const int64_t rank = onnx::getInputShape(ctx, 0).dim_size();
    const std::vector<int64_t> axes = attribute_axes_or_all(ctx, rank, "Resize");
    const bool has_sizes = has_input(ctx, 3), has_scales = has_input(ctx, 2);
    // Plain vectors (empty: not given or not constant): gcc 12 misreads optional<vector> here.
    const std::vector<int64_t> sizes = constant_ints(ctx, 3).value_or(std::vector<int64_t>{});
    std::vector<float> scales;
    if (has_scales && ctx.getInputData(2)) scales = onnx::ParseData<float>(ctx.getInputData(2));
    if (!sizes.empty() && sizes.size() != axes.size())
      fail_shape_inference("Resize: `sizes` has ", sizes.size(), " values for ", axes.size(), " axes");
    if (!scales.empty() && scales.size() != axes.size())
      fail_shape_inference("Resize: `scales` has ", scales.size(), " values for ", axes.size(), " axes");
    const auto& in = onnx::getInputShape(ctx, 0);
    const std::string policy = onnx::getAttribute(ctx, "keep_aspect_ratio_policy", std::string("stretch"));
    // not_larger / not_smaller: one scale for every axis, the smallest or largest of sizes / input.
    for (float scale : scales)
      if (!(scale > 0) || !std::isfinite(scale))
        fail_shape_inference("Resize: scales must be positive and finite");
    double common = 0.0;
    bool have_common = false;
    if (!sizes.empty() && policy != "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) {
        const auto& d = in.dim(static_cast<int>(axes[k]));
        if (!d.has_dim_value() || d.dim_value() == 0) return;
        double r = static_cast<double>(sizes[k]) / static_cast<double>(d.dim_value());
        common = k == 0 ? r : policy == "not_larger" ? std::min(common, r) : std::max(common, r);
      }
      have_common = true;
    }
    shape_from_first(ctx, 0, [&](int64_t axis, const TensorShapeProto::Dimension& d) -> int64_t {
      auto it = std::find(axes.begin(), axes.end(), axis);
      if (it == axes.end()) return kKeepDim;
      const size_t k = static_cast<size_t>(it - axes.begin());
      if (!sizes.empty() && !have_common) return sizes[k];
      if (!d.has_dim_value()) return kUnknownDim;
      const double size = have_common       ? std::round(common * static_cast<double>(d.dim_value()))
                          : !scales.empty() ? std::floor(static_cast<double>(d.dim_value()) * scales[k])
                                            : -1.0;
      if (size > 9.0e18) fail_shape_inference("Resize: axis ", axis, " would be larger than a dim can be");
      if (have_common || !scales.empty()) return static_cast<int64_t>(size);
      return has_sizes || has_scales ? kUnknownDim : kKeepDim;
    });
  });
  onnx::RegisterSchema(std::move(s));
}

void add_pool_attrs(OpSchema& s) {
  s.Attr("auto_pad", "NOTSET, SAME_UPPER, SAME_LOWER or VALID.", AttributeProto::STRING,
         std::string("NOTSET"));
  s.Attr("ceil_mode", "Ceil instead of floor for the output size.", AttributeProto::INT, int64_t{0});
  s.Attr("dilations", "Dilation of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("kernel_shape", "Window size.", AttributeProto::INTS);
  s.Attr("pads", "Begin and end pads of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("strides", "Stride of each spatial axis.", AttributeProto::INTS, false);
  s.Input(0, "X", "Input, N x C x spatial.", "T").Output(0, "Y", "Pooled output.", "T");
  s.TypeConstraint("T", {"tensor(float16)", "tensor(float)", "tensor(double)"}, "Float tensors.");
  // MaxPool-12's inference honours dilations and ceil_mode, as these versions now do.
  s.TypeAndShapeInferenceFunction(borrowed("MaxPool", 12));
}

void register_pools() {
  OpSchema lp = schema("LpPool", 18, "Lp pooling with dilations and ceil_mode.");
  lp.Attr("p", "The p of the Lp norm.", AttributeProto::INT, int64_t{2});
  add_pool_attrs(lp);
  onnx::RegisterSchema(std::move(lp));
  OpSchema avg = schema("AveragePool", 19, "Average pooling with dilations.");
  avg.Attr("count_include_pad", "Count the pads in the divisor.", AttributeProto::INT, int64_t{0});
  add_pool_attrs(avg);
  onnx::RegisterSchema(std::move(avg));
}

void register_quantization() {
  const std::vector<std::string> q8 = {"tensor(int8)", "tensor(uint8)", "tensor(int16)", "tensor(uint16)",
                                       "tensor(int32)"};
  for (int since : {19, 21}) {
    OpSchema dq = schema("DequantizeLinear", since,
                         "y = (x - x_zero_point) * x_scale: per tensor, per axis, or (since 21) per block of "
                         "`block_size` along axis.");
    dq.Input(0, "x", "Quantized tensor.", "T1").Input(1, "x_scale", "Scale(s).", "T2");
    dq.Input(2, "x_zero_point", "Zero point(s).", "T1", OpSchema::Optional)
        .Output(0, "y", "Dequantized tensor.", "T2");
    dq.Attr("axis", "Axis of per-axis or blocked quantization.", AttributeProto::INT, int64_t{1});
    if (since >= 21)
      dq.Attr("block_size", "Size of a block along axis (0: per axis or per tensor).", AttributeProto::INT,
              int64_t{0});
    dq.TypeConstraint("T1", q8, "Quantized types.");
    dq.TypeConstraint("T2", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"},
                      "Scale and output type.");
    dq.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    });
    onnx::RegisterSchema(std::move(dq));

    OpSchema q = schema(
        "QuantizeLinear", since,
        "y = saturate(round(x / y_scale) + y_zero_point): per tensor, per axis, or (since 21) per block.");
    q.Input(0, "x", "Tensor to quantize.", "T1").Input(1, "y_scale", "Scale(s).", "T1");
    q.Input(2, "y_zero_point", "Zero point(s); their type is the output's.", "T2", OpSchema::Optional)
        .Output(0, "y", "Quantized tensor.", "T2");
    q.Attr("axis", "Axis of per-axis or blocked quantization.", AttributeProto::INT, int64_t{1});
    q.Attr("saturate", "Float8 outputs only: saturate instead of overflowing.", AttributeProto::INT,
           int64_t{1});
    if (since >= 21) {
      q.Attr("block_size", "Size of a block along axis (0: per axis or per tensor).", AttributeProto::INT,
             int64_t{0});
      q.Attr("output_dtype", "Output type when there is no zero point (0: uint8).", AttributeProto::INT,
             int64_t{0});
    }
    q.TypeConstraint("T1", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(int32)"},
                     "Input type.");
    q.TypeConstraint("T2", {"tensor(int8)", "tensor(uint8)", "tensor(int16)", "tensor(uint16)"},
                     "Quantized type.");
    q.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      const int64_t dtype = onnx::getAttribute(ctx, "output_dtype", int64_t{0});
      if (dtype != 0 && dtype != onnx::TensorProto::UINT8 && dtype != onnx::TensorProto::INT8 &&
          dtype != onnx::TensorProto::UINT16 && dtype != onnx::TensorProto::INT16)
        fail_shape_inference("QuantizeLinear: output_dtype must be uint8, int8, uint16 or int16");
      if (has_input(ctx, 2)) {
        onnx::propagateElemTypeFromInputToOutput(ctx, 2, 0);
        if (dtype != 0 && dtype != ctx.getInputType(2)->tensor_type().elem_type())
          fail_shape_inference("QuantizeLinear: output_dtype differs from the zero point's type");
      } else {
        onnx::updateOutputElemType(ctx, 0,
                                   dtype != 0 ? static_cast<int32_t>(dtype) : onnx::TensorProto::UINT8);
      }
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    });
    onnx::RegisterSchema(std::move(q));
  }
}

// Ops whose opset-19 or -21 versions add only float8/int4 types or an attribute for
// them (Cast's saturate): the previous schema with the new attribute.
void register_casts() {
  for (int since : {19, 21}) {
    for (const char* op : {"Cast", "CastLike"}) {
      const bool cast = std::string(op) == "Cast";
      OpSchema s = schema(op, since, cast ? "Casts to the type `to`." : "Casts to the type of target_type.");
      s.Input(0, "input", "Input tensor.", "T1");
      if (!cast) s.Input(1, "target_type", "Tensor of the type to cast to.", "T2");
      s.Output(0, "output", "Cast tensor.", "T2");
      if (cast) s.Attr("to", "Target type (TensorProto.DataType).", AttributeProto::INT);
      s.Attr("saturate", "Float8 targets only: saturate instead of overflowing.", AttributeProto::INT,
             int64_t{1});
      const auto types = join(kAll, {"tensor(string)"});
      s.TypeConstraint("T1", types, "Input types.").TypeConstraint("T2", types, "Output types.");
      s.TypeAndShapeInferenceFunction(borrowed(op, cast ? 13 : 15));
      onnx::RegisterSchema(std::move(s));
    }
  }
}

void register_scatters() {
  for (const char* op : {"ScatterElements", "ScatterND"}) {
    const bool elements = std::string(op) == "ScatterElements";
    OpSchema s =
        schema(op, 18, "Scatters updates into a copy of data; reduction none, add, mul, max or min.");
    s.Input(0, "data", "Input tensor.", "T")
        .Input(1, "indices", "Where to scatter.", "Tind")
        .Input(2, "updates", "Values to scatter.", "T");
    s.Output(0, "output", "Scattered tensor.", "T");
    if (elements) s.Attr("axis", "Axis to scatter on.", AttributeProto::INT, int64_t{0});
    s.Attr("reduction", "none, add, mul, max or min.", AttributeProto::STRING, std::string("none"));
    s.TypeConstraint("T", kAll, "Any tensor type.");
    s.TypeConstraint("Tind",
                     elements ? std::vector<std::string>{"tensor(int32)", "tensor(int64)"}
                              : std::vector<std::string>{"tensor(int64)"},
                     "Index type.");
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
}

void register_group_normalization() {
  for (int since : {18, 21}) {
    OpSchema s = schema(
        "GroupNormalization", since,
        since >= 21
            ? "Normalizes each group of channels; scale and bias per channel, statistics in stash_type."
            : "Normalizes each group of channels; scale and bias per group.");
    s.Input(0, "X", "Input, N x C x spatial.", "T")
        .Input(1, "scale", since >= 21 ? "Scale of each channel." : "Scale of each group.", "T");
    s.Input(2, "bias", since >= 21 ? "Bias of each channel." : "Bias of each group.", "T")
        .Output(0, "Y", "Normalized output.", "T");
    s.Attr("epsilon", "Added to the variance.", AttributeProto::FLOAT, 1e-5f);
    s.Attr("num_groups", "Number of groups; divides C.", AttributeProto::INT);
    if (since >= 21)
      s.Attr("stash_type", "Type of the statistics (1: float).", AttributeProto::INT, int64_t{1});
    s.TypeConstraint("T", kFloat, "Float tensors.");
    s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
    onnx::RegisterSchema(std::move(s));
  }
}

void register_col2im() {
  OpSchema s = schema("Col2Im", 18,
                      "Rearranges column blocks [N, C x prod(block_shape), L] into an image [N, C, "
                      "image_shape...], summing overlaps.");
  s.Input(0, "input", "Column blocks.", "T")
      .Input(1, "image_shape", "Spatial shape of the image.", "tensor(int64)");
  s.Input(2, "block_shape", "Spatial shape of a block.", "tensor(int64)").Output(0, "output", "Image.", "T");
  s.Attr("dilations", "Dilation of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("pads", "Begin and end pads of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("strides", "Stride of each spatial axis.", AttributeProto::INTS, false);
  s.TypeConstraint("T", kAll, "Any tensor type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    auto image = constant_ints(ctx, 1);
    auto block = constant_ints(ctx, 2);
    if (!image || !onnx::hasInputShape(ctx, 0)) return;
    const auto& in = onnx::getInputShape(ctx, 0);
    if (in.dim_size() != 3)
      fail_shape_inference("Col2Im: the input must be 3-D [N, C x prod(block_shape), L]");
    if (block && block->size() != image->size())
      fail_shape_inference("Col2Im: image_shape and block_shape differ in length");
    auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
    *out->add_dim() = in.dim(0);
    auto* c = out->add_dim();
    if (block && in.dim(1).has_dim_value()) {
      int64_t per = 1;
      for (int64_t b : *block)
        if (b <= 0 || __builtin_mul_overflow(per, b, &per))
          fail_shape_inference("Col2Im: block_shape must be positive, its product within 64 bits");
      if (per <= 0 || in.dim(1).dim_value() % per != 0)
        fail_shape_inference("Col2Im: dim 1 is not a multiple of prod(block_shape)");
      c->set_dim_value(in.dim(1).dim_value() / per);
    }
    for (int64_t v : *image) {
      if (v < 0) fail_shape_inference("Col2Im: image_shape must not be negative");
      out->add_dim()->set_dim_value(v);
    }
  });
  onnx::RegisterSchema(std::move(s));
}

void register_center_crop_pad() {
  OpSchema s = schema("CenterCropPad", 18, "Center-crops or zero-pads each of `axes` to `shape`.");
  s.Input(0, "input_data", "Input tensor.", "T")
      .Input(1, "shape", "Target size of each axis.", "Tind")
      .Output(0, "output_data", "Result.", "T");
  s.Attr("axes", "Axes `shape` applies to (default: all).", AttributeProto::INTS, false);
  s.TypeConstraint("T", kAll, "Any tensor type.")
      .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "Shape type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const int64_t rank = onnx::getInputShape(ctx, 0).dim_size();
    const std::vector<int64_t> axes = attribute_axes_or_all(ctx, rank, "CenterCropPad");
    auto shape = constant_ints(ctx, 1);
    if (shape && shape->size() != axes.size())
      fail_shape_inference("CenterCropPad: `shape` has ", shape->size(), " values for ", axes.size(),
                           " axes");
    shape_from_first(ctx, 0, [&](int64_t axis, const TensorShapeProto::Dimension&) -> int64_t {
      auto it = std::find(axes.begin(), axes.end(), axis);
      if (it == axes.end()) return kKeepDim;
      return shape ? (*shape)[static_cast<size_t>(it - axes.begin())] : kUnknownDim;
    });
  });
  onnx::RegisterSchema(std::move(s));
}

void register_unary(const char* name, int since, const char* doc, const std::vector<std::string>& types) {
  OpSchema s = schema(name, since, doc);
  s.Input(0, "X", "Input tensor.", "T").Output(0, "Y", "Output tensor.", "T");
  if (std::string(name) == "Gelu")
    s.Attr("approximate", "none or tanh.", AttributeProto::STRING, std::string("none"));
  s.TypeConstraint("T", types, "Input and output types.");
  s.TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  onnx::RegisterSchema(std::move(s));
}

void register_bitwise() {
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    OpSchema s = schema(op, 18, "Bitwise operation, with multidirectional broadcasting.");
    s.Input(0, "A", "First operand.", "T")
        .Input(1, "B", "Second operand.", "T")
        .Output(0, "C", "Result.", "T");
    s.TypeConstraint("T", kInts, "Integer tensors.");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (onnx::hasNInputShapes(ctx, 2))
        onnx::bidirectionalBroadcastShapeInference(
            ctx.getInputType(0)->tensor_type().shape(), ctx.getInputType(1)->tensor_type().shape(),
            *ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape());
    });
    onnx::RegisterSchema(std::move(s));
  }
  register_unary("BitwiseNot", 18, "Bitwise NOT.", kInts);
}

void register_grid_ops() {
  OpSchema grid = schema("GridSample", 20,
                         "Samples X at the grid's normalized coordinates: linear, nearest or cubic; N-D.");
  grid.Input(0, "X", "Input, N x C x D1 x ... x Dr.", "T1")
      .Input(1, "grid", "Coordinates, N x D1' x ... x Dr' x r.", "T2");
  grid.Output(0, "Y", "Samples, N x C x D1' x ... x Dr'.", "T1");
  grid.Attr("align_corners", "Whether -1 and 1 are the corner pixels' centers.", AttributeProto::INT,
            int64_t{0});
  grid.Attr("mode", "linear, nearest or cubic.", AttributeProto::STRING, std::string("linear"));
  grid.Attr("padding_mode", "zeros, border or reflection.", AttributeProto::STRING, std::string("zeros"));
  grid.TypeConstraint("T1", kAll, "Input type.").TypeConstraint("T2", kFloat, "Grid type.");
  grid.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasNInputShapes(ctx, 2)) return;
    const auto& x = onnx::getInputShape(ctx, 0);
    const auto& g = onnx::getInputShape(ctx, 1);
    if (x.dim_size() < 3 || g.dim_size() != x.dim_size())
      fail_shape_inference("GridSample: X and grid must have one rank, at least 3");
    auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
    *out->add_dim() = x.dim(0);
    *out->add_dim() = x.dim(1);
    for (int i = 1; i + 1 < g.dim_size(); ++i) *out->add_dim() = g.dim(i);
  });
  onnx::RegisterSchema(std::move(grid));

  OpSchema affine =
      schema("AffineGrid", 20, "The sampling grid of affine matrices theta for an output of `size`.");
  affine.Input(0, "theta", "N x 2 x 3 (2-D) or N x 3 x 4 (3-D) matrices.", "T1")
      .Input(1, "size", "[N, C, H, W] or [N, C, D, H, W].", "T2");
  affine.Output(0, "grid", "N x H x W x 2 or N x D x H x W x 3.", "T1");
  affine.Attr("align_corners", "Whether -1 and 1 are the corner pixels' centers.", AttributeProto::INT,
              int64_t{0});
  affine.TypeConstraint("T1", kFloat, "Float tensors.").TypeConstraint("T2", {"tensor(int64)"}, "Size type.");
  affine.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    auto size = constant_ints(ctx, 1);
    if (!size) return;
    if (size->size() != 4 && size->size() != 5)
      fail_shape_inference("AffineGrid: `size` must have 4 or 5 values");
    for (int64_t v : *size)
      if (v < 0) fail_shape_inference("AffineGrid: size must not be negative");
    auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
    out->add_dim()->set_dim_value((*size)[0]);
    for (size_t i = 2; i < size->size(); ++i) out->add_dim()->set_dim_value((*size)[i]);
    out->add_dim()->set_dim_value(static_cast<int64_t>(size->size()) - 2);
  });
  onnx::RegisterSchema(std::move(affine));
}

void register_deform_conv() {
  OpSchema s =
      schema("DeformConv", 19,
             "Convolution whose taps are moved by learned offsets (and weighted by an optional mask).");
  s.Input(0, "X", "Input, N x C x spatial.", "T").Input(1, "W", "Weights, oC x C/group x kernel.", "T");
  s.Input(2, "offset", "Offsets, N x (offset_group x 2 x prod(kernel)) x output spatial.", "T");
  s.Input(3, "B", "Bias, oC.", "T", OpSchema::Optional)
      .Input(4, "mask", "Mask, N x (offset_group x prod(kernel)) x output spatial.", "T", OpSchema::Optional);
  s.Output(0, "Y", "Output, N x oC x output spatial.", "T");
  s.Attr("dilations", "Dilation of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("group", "Groups of input and output channels.", AttributeProto::INT, int64_t{1});
  s.Attr("kernel_shape", "Kernel shape (default: from W).", AttributeProto::INTS, false);
  s.Attr("offset_group", "Groups of input channels sharing offsets.", AttributeProto::INT, int64_t{1});
  s.Attr("pads", "Begin and end pads of each spatial axis.", AttributeProto::INTS, false);
  s.Attr("strides", "Stride of each spatial axis.", AttributeProto::INTS, false);
  s.TypeConstraint("T", kFloat, "Float tensors.");
  s.TypeAndShapeInferenceFunction(borrowed("Conv", 11));  // X and W give the shape, as for Conv
  onnx::RegisterSchema(std::move(s));
}

void register_dft() {
  OpSchema s = schema("DFT", 20, "Discrete Fourier transform along the axis given as an input.");
  s.Input(0, "input", "[batch, signal..., 1 or 2] (real or complex).", "T1");
  s.Input(1, "dft_length", "Length of the transform (pads or trims).", "T2", OpSchema::Optional);
  s.Input(2, "axis", "Signal axis (scalar; default -2).", "tensor(int64)", OpSchema::Optional);
  s.Output(0, "output", "[batch, signal..., 2].", "T1");
  s.Attr("inverse", "Inverse transform.", AttributeProto::INT, int64_t{0});
  s.Attr("onesided", "Keep floor(n/2)+1 frequencies (real input).", AttributeProto::INT, int64_t{0});
  s.TypeConstraint("T1", kFloat, "Float tensors.")
      .TypeConstraint("T2", {"tensor(int32)", "tensor(int64)"}, "Length type.");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = onnx::getInputShape(ctx, 0);
    const int64_t rank = in.dim_size();
    if (rank < 2) fail_shape_inference("DFT: the input needs rank >= 2");
    int64_t axis = -2;
    if (has_input(ctx, 2)) {
      auto a = constant_ints(ctx, 2);
      if (!a) {
        auto* out = ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape();
        for (int64_t i = 0; i < rank; ++i) out->add_dim();
        return;
      }
      if (a->size() != 1) fail_shape_inference("DFT: `axis` must be a scalar");
      axis = (*a)[0];
    }
    if (axis < -rank || axis >= rank - 1 || axis == -1)
      fail_shape_inference("DFT: axis ", axis, " is out of range [-", rank, ", -2] or [0, ", rank - 2, "]");
    if (axis < 0) axis += rank;
    std::optional<int64_t> length;
    if (has_input(ctx, 1)) {
      auto l = constant_ints(ctx, 1);
      if (l && l->size() == 1) {
        if ((*l)[0] < 1) fail_shape_inference("DFT: dft_length must be positive, not ", (*l)[0]);
        length = (*l)[0];
      } else {
        length = kUnknownDim;
      }
    }
    const bool onesided = onnx::getAttribute(ctx, "onesided", int64_t{0}) != 0;
    shape_from_first(ctx, 0, [&](int64_t i, const TensorShapeProto::Dimension& d) -> int64_t {
      if (i == rank - 1) return 2;
      if (i != axis) return kKeepDim;
      int64_t n = length ? *length : d.has_dim_value() ? d.dim_value() : kUnknownDim;
      if (n < 0) return kUnknownDim;
      return onesided ? n / 2 + 1 : n;
    });
  });
  onnx::RegisterSchema(std::move(s));
}

void register_standard_18_21() {
  raise_standard_opset_range();
  register_split();
  register_reductions();
  register_pad(18);
  register_pad(19);
  register_resize();
  register_pools();
  register_quantization();
  register_casts();
  register_scatters();
  register_group_normalization();
  register_col2im();
  register_center_crop_pad();
  register_unary("Mish", 18, "x * tanh(softplus(x)).", kFloat);
  register_unary("Gelu", 20, "Gaussian error linear unit: x * Phi(x), or its tanh approximation.", kFloat);
  register_bitwise();
  register_grid_ops();
  register_deform_conv();
  register_dft();
}

}  // namespace

void register_standard_schemas_18_21() {
  static std::once_flag once;
  std::call_once(once, register_standard_18_21);
}

}  // namespace geopt::onnx_io
