#pragma once
// ONNX -> IR. Reads a .onnx file (and its external-data side files), checks it,
// runs ONNX's own type and shape inference, and builds the IR without copying
// weights: raw bytes move out of the protobuf, external data is memory-mapped.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt {

struct ImportOptions {
  bool infer_shapes = true;  // run onnx::shape_inference (strict: type errors are rejected)
  // Fixes graph inputs' dims before inference (ATC's --input_shape), so the
  // shapes inferred downstream are static. Input name -> dims (-1: left open).
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Parses ATC's --input_shape syntax: "input_ids:1,128;attention_mask:1,128". A dim of
// -1 stays as the model declares it (ATC marks the dims a gear or range sets so). Text
// that does not parse throws UsageError (the CLI exits 2).
std::map<std::string, std::vector<int64_t>> parse_input_shapes(const std::string& text);
// The same, in the order written.
std::vector<std::pair<std::string, std::vector<int64_t>>> parse_input_shape_entries(const std::string& text);

// Throws geopt::Error with a message that names the file and, where it applies,
// the node and the reason.
Model import_onnx(const std::filesystem::path& path, const ImportOptions& options = {});

// The same, from a protobuf already in memory (consumed). `where` names it in
// messages; external data resolves against its parent folder.
Model import_onnx_proto(onnx::ModelProto proto, const std::filesystem::path& where,
                        const ImportOptions& options = {});

// A control-flow body (an If branch, a Loop or Scan body) from its serialized
// GraphProto. Names it uses without defining become values with no producer and no
// initializer: references to the enclosing graphs, resolved by name when it runs.
std::unique_ptr<Graph> import_subgraph(const std::string& serialized, const std::string& where);

// One attribute (tensor values inline), as plan files store kernel attributes.
Attribute import_attribute(onnx::AttributeProto proto, const std::string& where);

// Reads one serialized onnx.TensorProto (as ONNX's test data stores them).
std::shared_ptr<const Tensor> import_tensor(const std::filesystem::path& path);

}  // namespace geopt
