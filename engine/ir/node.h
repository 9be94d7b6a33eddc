#pragma once
// An operator application. Inputs may hold nullptr for an omitted optional
// input (ONNX's empty name ""); likewise outputs.
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/domain.h"

namespace geopt {

class Value;

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<Attribute> attributes;  // in their original order
  std::string doc_string;

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }

  const Attribute* attr(std::string_view attr_name) const;
  // "Add 'name'" or "Add (unnamed, #12)" for messages.
  std::string describe() const;
  // Its outputs are not a function of its inputs (random ops, a Dropout told at run
  // time whether it trains, a control-flow node whose body draws): never folded, merged
  // or computed ahead of time.
  bool is_nondeterministic() const;

 private:
  friend class Graph;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  size_t index_hint_ = 0;  // position when added; used only to describe unnamed nodes
};

}  // namespace geopt
