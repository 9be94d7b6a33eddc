#pragma once
// ATC's --input_shape, shared by every command that reads a model: fixes symbolic
// input dims at import, so shapes downstream are static (rules that need a shape fire,
// the cost model sees sizes, the check runs at those sizes).
#include <CLI/CLI.hpp>
#include <string>

#include "onnx/import.h"

namespace geopt::cli {

struct InputShapeOption {
  std::string text;

  void add_to(CLI::App* cmd);
  // Throws geopt::Error naming the bad entry.
  ImportOptions import_options() const;
};

}  // namespace geopt::cli
