#pragma once
// Shared helpers for the test suites: example models, scratch folders, CLI runs.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "eval/host_tensor.h"
#include "ir/graph.h"

namespace geopt::test {

std::filesystem::path examples_dir();
// Every committed example model (*.onnx), sorted.
std::vector<std::filesystem::path> example_models();
// examples/zoo: the small versions of the zoo (examples/zoo.py), each with torch's
// reference inputs and outputs; its models, sorted.
std::filesystem::path zoo_dir();
std::vector<std::filesystem::path> zoo_models();
// examples/exporters: models in other exporters' idioms (examples/exporters.py), each with
// its inputs and ONNX Runtime's outputs; its models, sorted.
std::filesystem::path exporters_dir();
std::vector<std::filesystem::path> exporter_models();
// A fresh empty folder under the system temp dir, removed at exit.
std::filesystem::path scratch_dir(const std::string& tag);

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& bytes);
// Parses ONNX's textual model syntax (onnx/defs/parser.h); fails the test on a syntax error.
onnx::ModelProto parse_text_model(const char* text);
void save_model(const onnx::ModelProto& m, const std::filesystem::path& p);

// Nodes of this op type (any domain).
size_t count_op(const Model& m, const std::string& op);
// Largest abs difference of `candidate`'s outputs from `reference`'s on the same
// random inputs; infinity when a shape differs or a NaN appears on one side only.
double max_output_error(const Model& reference, const Model& candidate, uint64_t seed = 11);

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the geopt binary with these arguments (shell-quoted for you).
CliResult run_cli(const std::vector<std::string>& args);

}  // namespace geopt::test
