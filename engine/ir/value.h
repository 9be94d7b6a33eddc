#pragma once
// A value: one tensor flowing along graph edges (graph input, initializer, or a
// node output). Its name is the ONNX name and survives every pass.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace geopt {

class Node;

struct ValueType {
  DType dtype = DType::Undefined;
  std::optional<Shape> shape;  // nullopt: rank unknown
  std::string opaque;          // serialized TypeProto for sequence/map/optional values

  bool is_tensor() const { return opaque.empty(); }
  std::string to_string() const;  // "f32[batch,128]", "f32[?]" ...
  bool operator==(const ValueType&) const = default;
};

struct Use {
  Node* node;
  size_t input_index;
  bool operator==(const Use&) const = default;
};

// Producer and uses are maintained by Graph; everything else is plain data.
class Value {
 public:
  explicit Value(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  ValueType type;
  std::string doc_string;
  std::shared_ptr<const Tensor> initializer;  // set when the value is a graph initializer

  Node* producer() const { return producer_; }
  size_t producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }

 private:
  friend class Graph;
  std::string name_;
  Node* producer_ = nullptr;
  size_t producer_output_ = 0;
  std::vector<Use> uses_;
};

}  // namespace geopt
