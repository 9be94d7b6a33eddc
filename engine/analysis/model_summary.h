#pragma once
// What `geopt info` reports about a model: interface, size and op mix.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace geopt {

struct ValueSummary {
  std::string name;
  std::string dtype;
  std::vector<std::string> dims;  // "1", "batch", "?"; empty for a scalar
  bool rank_known = true;
};

struct ModelSummary {
  std::string producer;  // "pytorch 1.13.0"
  int64_t ir_version = 0;
  std::vector<OpsetImport> opsets;
  std::vector<ValueSummary> inputs;  // graph inputs that are not initializers
  std::vector<ValueSummary> outputs;
  size_t node_count = 0;
  std::vector<std::pair<std::string, size_t>> op_histogram;  // most frequent first, then by name
  int64_t parameter_count = 0;  // elements of initializers and Constant-node tensors
  int64_t parameter_bytes = 0;
  size_t initializer_count = 0;
  int64_t external_bytes = 0;              // of parameter_bytes, how many live in external-data files
  std::vector<std::string> symbolic_dims;  // distinct, sorted
};

ModelSummary summarize(const Model& model);

}  // namespace geopt
