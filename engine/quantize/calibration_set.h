#pragma once
// A calibration set on disk: a folder holding one folder per sample, each with
// NAME.npy for every input the model needs (the layout `geopt run --save-inputs DIR`
// writes). Samples are taken in the order of their folders' names.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "eval/host_tensor.h"
#include "ir/graph.h"
#include "ops/op_registry.h"

namespace geopt::quantize {

struct CalibrationSample {
  std::string name;  // the sample's folder
  std::map<std::string, HostTensor> inputs;
};

// Throws geopt::Error naming the folder or file: no such folder, no samples, an input
// missing from a sample, a file that names no input, a dtype or rank the model does not take.
std::vector<CalibrationSample> read_calibration_set(const std::filesystem::path& dir, const Model& model,
                                                    const OpRegistry& ops);

}  // namespace geopt::quantize
