#include "ops/op_traits.h"

#include <map>
#include <string>
#include <utility>

#include "ir/domain.h"
#include "ir/node.h"
#include "ops/op_registry.h"

namespace geopt {
namespace {

using Table = std::map<std::pair<std::string, std::string>, OpTraits, std::less<>>;

Table build() {
  Table t;
  auto set = [&t](std::string_view domain, std::initializer_list<const char*> ops, auto&& apply) {
    for (const char* op : ops) apply(t[{std::string(domain), op}]);
  };
  set(kOnnxDomain, {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout"},
      [](OpTraits& o) { o.view = true; });
  set(kOnnxDomain, {"Shape", "Size", "Constant"}, [](OpTraits& o) { o.shape_only = true; });
  t[{std::string(kOnnxDomain), "Constant"}].constant = true;
  t[{std::string(kOnnxDomain), "If"}].control_flow = ControlFlow::If;
  t[{std::string(kOnnxDomain), "Loop"}].control_flow = ControlFlow::Loop;
  t[{std::string(kOnnxDomain), "Scan"}].control_flow = ControlFlow::Scan;
  set(kOnnxDomain, {"Add", "Sub",  "Mul",         "Div",       "Relu",     "Sigmoid", "Tanh",       "Exp",
                    "Log", "Sqrt", "Neg",         "Abs",       "Erf",      "Clip",    "LeakyRelu",  "Pow",
                    "Max", "Min",  "HardSigmoid", "HardSwish", "Softplus", "Elu",     "Reciprocal", "Where"},
      [](OpTraits& o) { o.elementwise = true; });
  set(kOnnxDomain,
      {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal", "BitwiseAnd", "BitwiseOr",
       "BitwiseXor"},
      [](OpTraits& o) { o.commutative = true; });
  set(kOnnxDomain,
      {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"},
      [](OpTraits& o) { o.random = true; });
  set(kOnnxDomain, {"Conv", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool"},
      [](OpTraits& o) { o.sliding_window = true; });
  set(kOnnxDomain,
      {"Conv",
       "ConvTranspose",
       "ConvInteger",
       "QLinearConv",
       "MaxPool",
       "AveragePool",
       "LpPool",
       "GlobalAveragePool",
       "GlobalMaxPool",
       "BatchNormalization",
       "InstanceNormalization",
       "LayerNormalization",
       "GroupNormalization",
       "Softmax",
       "LogSoftmax",
       "Concat",
       "Split",
       "Resize",
       "DepthToSpace",
       "SpaceToDepth",
       "MatMul",
       "ReduceMean",
       "ReduceSum",
       "ReduceMax",
       "ReduceMin",
       "Cast"},
      [](OpTraits& o) { o.per_sample = true; });
  set(kGeoptDomain, {"AddLayerNorm", "RMSNorm", "QuantConv", "QuantMatMul"},
      [](OpTraits& o) { o.per_sample = true; });
  set(kOnnxDomain, {"Conv", "ConvInteger"}, [](OpTraits& o) { o.window_weights = 1; });
  set(kOnnxDomain, {"Gather", "GatherND", "GatherElements", "Slice"},
      [](OpTraits& o) { o.reads_what_it_writes = true; });
  set(kOnnxDomain, {"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"},
      [](OpTraits& o) { o.integer_products = true; });
  set(kGeoptDomain, {"QuantConv", "QuantMatMul"}, [](OpTraits& o) { o.integer_products = true; });
  t[{std::string(kOnnxDomain), "QLinearConv"}].window_weights = 3;  // after x's scale and zero point
  return t;
}

const Table& table() {
  static const Table t = build();
  return t;
}

}  // namespace

void register_standard_traits(OpRegistry& registry) {
  for (const auto& [op, traits] : table()) registry.set_traits(op.first, op.second, traits);
}

ControlFlow control_flow_of(const Node& n) { return standard_op_traits(n.domain, n.op_type).control_flow; }

bool is_constant_node(const Node& n) { return standard_op_traits(n.domain, n.op_type).constant; }

const OpTraits& standard_op_traits(std::string_view domain, std::string_view op) {
  static const OpTraits none;
  auto it = table().find(std::make_pair(canonical_domain(domain), std::string(op)));
  return it == table().end() ? none : it->second;
}

}  // namespace geopt
