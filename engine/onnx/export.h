#pragma once
// IR -> ONNX. Writes a .onnx file that passes onnx::checker. Weights are
// streamed from their buffers straight to disk, never copied into a protobuf,
// and every file is written atomically.
#include <cstddef>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"

namespace geopt {

struct ExportOptions {
  // When set, tensors of at least external_threshold bytes go to this side file
  // (a file name, relative to the model's folder) as ONNX external data.
  std::string external_data;
  size_t external_threshold = 1024;
};

void export_onnx(const Model& model, const std::filesystem::path& path, const ExportOptions& options = {});

// The model as a ModelProto, weights inline (for a pass over the protobuf in memory).
onnx::ModelProto model_to_proto(const Model& model);

// The model's graph as a GraphProto, weights inline (for a control-flow body, which
// lives in its node's attribute).
onnx::GraphProto graph_to_proto(const Model& model);

}  // namespace geopt
