#pragma once
// A dataflow graph: owns its nodes and values and keeps producer/use links
// consistent. Nodes are kept in a topological order.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/node.h"
#include "ir/value.h"

namespace geopt {

class Graph {
 public:
  std::string name;
  std::string doc_string;
  // Graph-level parts geopt does not interpret, kept as serialized ONNX for round trips.
  std::vector<std::string> opaque_sparse_initializers;
  std::vector<std::string> opaque_quantization_annotations;
  // The sizes a symbolic dim takes, where the compile knows them (a range plan's
  // --input_shape_range): symbol -> [min, max]. Rules' conditions are proven over them.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Creates a value; names are unique within the graph (throws geopt::Error otherwise).
  Value* add_value(std::string value_name);
  Value* find_value(std::string_view value_name) const;
  // A fresh name "prefix", "prefix_1", ... not used by any value or node. Each prefix
  // keeps a counter, so asking for many names with one prefix costs linear time.
  std::string unique_name(std::string_view prefix) const;

  void add_input(Value* v) { inputs_.push_back(v); }
  void add_output(Value* v) { outputs_.push_back(v); }
  // Makes `v` the graph's output at `index` (a pass that puts a node after an output).
  void set_output(size_t index, Value* v) { outputs_.at(index) = v; }
  void add_initializer(Value* v, std::shared_ptr<const Tensor> data);

  // Appends a node; its outputs must not have a producer yet.
  Node* add_node(std::string op_type, std::string_view domain, std::string node_name,
                 const std::vector<Value*>& inputs, const std::vector<Value*>& outputs);
  void set_input(Node* n, size_t index, Value* v);
  // Removes a node whose outputs are unused.
  void remove_node(Node* n);
  // Replaces a node by constants: each output keeps its name, type and uses and
  // becomes an initializer holding the matching tensor (one per output).
  void fold_node(Node* n, std::vector<std::shared_ptr<const Tensor>> output_data);
  // Points every use of `old` (node inputs and graph outputs) at `with`.
  void replace_all_uses(Value* old, Value* with);
  // Renames a value (names are unique; throws geopt::Error if taken).
  void rename_value(Value* v, std::string new_name);
  // Renames a node. Rename nodes only through this: find_node reads an index.
  void rename_node(Node* n, std::string new_name);
  // Removes nodes whose outputs nobody uses (graph outputs count as uses), then
  // initializers and values left unused. Returns the number of nodes removed.
  size_t remove_dead_code();
  // Reorders nodes topologically (stable: keeps the given order where legal).
  // Returns false, leaving the order unchanged, when the graph has a cycle.
  bool topological_sort();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  // Every value, in creation order.
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // The node of that name (the earliest added where names repeat); null when none.
  const Node* find_node(std::string_view node_name) const;
  // The value's tensor when it is a constant: an initializer that is not a graph input
  // (those can be fed), or the output of a Constant node. Null otherwise.
  const Tensor* constant_value(const Value* v) const;

 private:
  void unindex_node(Node* n);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
  std::unordered_multimap<std::string, Node*> node_by_name_;     // named nodes only
  mutable std::unordered_map<std::string, size_t> next_suffix_;  // unique_name's counter per prefix
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Value*> initializers_;
  size_t nodes_added_ = 0;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
  bool operator==(const OpsetImport&) const = default;
};

struct Model {
  int64_t ir_version = 8;
  std::vector<OpsetImport> opsets;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> opaque_functions;      // serialized FunctionProto
  std::vector<std::string> opaque_training_info;  // serialized TrainingInfoProto
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();

  // Version of an imported domain ("" and "ai.onnx" are the same); 0 if not imported.
  int64_t opset_version(std::string_view domain) const;
  // A deep copy of the graph (nodes, values, names, types) sharing the constant tensors,
  // which are immutable: a pass may rewrite the copy without reading the file again.
  Model clone() const;
  // A model with everything but the graph's nodes and values: opsets, producer,
  // metadata, functions, training info, and the graph's name, doc string, sparse
  // initializers and quantization annotations. Every pass that builds a new model
  // starts here, so what geopt does not understand is kept.
  Model header_copy() const;
};

}  // namespace geopt
