#pragma once
// --check-input NAME=FILE.npy for optimize and compile: inputs the numerical check takes
// as given instead of drawing them. Models with a mode input (a sample rate, a flag that
// picks a branch) run only at some values; random ones would test a path nobody takes.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "eval/host_tensor.h"
#include "ir/graph.h"

namespace geopt::cli {

struct CheckInputOption {
  std::vector<std::string> entries;

  void add_to(CLI::App* cmd);
  // The files read, as the model's inputs declare them (bf16 from '<u2'); throws
  // geopt::Error naming a bad entry or a name that is not an input.
  std::map<std::string, HostTensor> read(const Model& model) const;
};

}  // namespace geopt::cli
