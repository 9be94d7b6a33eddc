#pragma once
// Typed node attributes. Subgraphs (If/Loop/Scan bodies), sparse tensors and
// type protos are kept opaque as their serialized ONNX bytes: they survive a
// round trip unchanged, and later passes may open them.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace geopt {

enum class AttrKind : int32_t {  // values equal ONNX's AttributeProto.AttributeType
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

const char* attr_kind_name(AttrKind k);

struct Attribute {
  std::string name;
  AttrKind kind = AttrKind::Undefined;
  float f = 0;  // ONNX stores float attributes as 32-bit
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<std::shared_ptr<const Tensor>> tensors;  // Tensor: one element
  std::vector<std::string> opaque;  // serialized GraphProto / SparseTensorProto / TypeProto
  std::string ref_attr_name;        // set inside function bodies
  std::string doc_string;

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, std::shared_ptr<const Tensor> t);

  // A short rendering for reports: "axes=[-1]", "epsilon=1e-05", "value=<f32[1]>".
  // Not an identity: tensors show only dtype and dims (see identity_key).
  std::string to_string() const;
  // The value's identity, name left out: equal keys are equal values (tensor and
  // subgraph bytes digested in), for hashing ops and answering automaton questions.
  std::string identity_key() const;
  // Exact equality of kind and value (tensor bytes compared), name left out.
  bool same_value(const Attribute& other) const;
};

}  // namespace geopt
