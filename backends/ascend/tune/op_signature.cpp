#include "tune/op_signature.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>

#include "ir/dtype.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

std::string tensor_text(const plan::TensorRef& r) {
  if (r.absent()) return "-";
  std::string t = dtype_name(static_cast<DType>(r.dtype())) + "[";
  for (int i = 0; i < r.dims_size(); ++i) t += (i ? "," : "") + std::to_string(r.dims(i));
  t += "]";
  if (!r.format().empty()) t += ":" + r.format();
  if (r.region() == plan::WEIGHT) t += ":W";
  return t;
}

std::string float_text(float f) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(f));
  return text;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// One attribute as text; a tensor or graph by its kind only (its contents do not
// change the kernel's speed, and a plan's control-flow kernels are not tuned).
std::string attribute_text(const onnx::AttributeProto& a) {
  std::string v;
  auto list = [&](const auto& items, auto text) {
    v = "[";
    for (int i = 0; i < items.size(); ++i) v += (i ? "," : "") + text(items.Get(i));
    v += "]";
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      v = std::to_string(a.i());
      break;
    case onnx::AttributeProto::FLOAT:
      v = float_text(a.f());
      break;
    case onnx::AttributeProto::STRING:
      v = quoted(a.s());
      break;
    case onnx::AttributeProto::INTS:
      list(a.ints(), [](int64_t i) { return std::to_string(i); });
      break;
    case onnx::AttributeProto::FLOATS:
      list(a.floats(), float_text);
      break;
    case onnx::AttributeProto::STRINGS:
      list(a.strings(), quoted);
      break;
    case onnx::AttributeProto::TENSOR:
      v = "tensor";
      break;
    default:
      v = "<" + onnx::AttributeProto::AttributeType_Name(a.type()) + ">";
      break;
  }
  return a.name() + "=" + v;
}

}  // namespace

std::string op_signature(const plan::Kernel& kernel) {
  std::string s = kernel.domain().empty() ? kernel.op_type() : kernel.domain() + "::" + kernel.op_type();
  s += "(";
  for (int i = 0; i < kernel.inputs_size(); ++i) s += (i ? ", " : "") + tensor_text(kernel.inputs(i));
  s += ") -> (";
  for (int i = 0; i < kernel.outputs_size(); ++i) s += (i ? ", " : "") + tensor_text(kernel.outputs(i));
  s += ")";
  std::map<std::string, std::string> attributes;  // by name: the plan's order is the rules' order
  for (const std::string& bytes : kernel.attributes()) {
    onnx::AttributeProto a;
    if (!a.ParseFromString(bytes))
      throw Error("kernel '" + kernel.name() + "': an attribute does not decode");
    attributes[a.name()] = attribute_text(a);
  }
  std::string listed;
  for (const auto& [name, text] : attributes) listed += (listed.empty() ? "" : ", ") + text;
  if (!listed.empty()) s += " {" + listed + "}";
  return s;
}

}  // namespace geopt::ascend
