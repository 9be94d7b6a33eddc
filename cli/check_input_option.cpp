#include "check_input_option.h"

#include "settings.h"

namespace geopt::cli {

void CheckInputOption::add_to(CLI::App* cmd) {
  cmd->add_option("--check-input", entries,
                  "An input the check takes from a file instead of drawing it, as NAME=FILE.npy "
                  "(repeatable): for mode inputs "
                  "such as a sample rate; its open dims take the file's sizes");
}

std::map<std::string, HostTensor> CheckInputOption::read(const Model& model) const {
  api::CheckOptions check;
  check.inputs = entries;
  return api::check_inputs(check, model);
}

}  // namespace geopt::cli
