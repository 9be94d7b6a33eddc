#include "check_input_option.h"

#include "io/npy.h"
#include "ir/value.h"
#include "util/error.h"

namespace geopt::cli {

void CheckInputOption::add_to(CLI::App* cmd) {
  cmd->add_option("--check-input", entries,
                  "An input the check takes from a file instead of drawing it, as NAME=FILE.npy "
                  "(repeatable): for mode inputs "
                  "such as a sample rate; its open dims take the file's sizes");
}

std::map<std::string, HostTensor> CheckInputOption::read(const Model& model) const {
  std::map<std::string, HostTensor> out;
  for (const auto& e : entries) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
      throw Error("--check-input '" + e + "': expected NAME=FILE.npy");
    const std::string name = e.substr(0, eq);
    const Value* input = nullptr;
    for (const Value* v : model.graph->inputs())
      if (!v->initializer && v->name() == name) input = v;
    if (!input) throw Error("--check-input names '" + name + "', which is not an input of the model");
    if (!out.emplace(name, as_declared_dtype(read_npy(e.substr(eq + 1)), input->type.dtype)).second)
      throw Error("--check-input " + name + " is given twice");
  }
  return out;
}

}  // namespace geopt::cli
