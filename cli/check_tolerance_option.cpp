#include "check_tolerance_option.h"

#include "finite_number.h"

#include <string>

namespace geopt::cli {

void CheckToleranceOption::add_to(CLI::App* cmd, const char* what) {
  const std::string text =
      std::string("The check allows |") + what +
      " - original| <= atol + rtol |original| (numpy.allclose); default 1e-4, or with "
      "--precision_mode the mode's "
      "(1e-4 for must_keep_origin_dtype, 0.05 for the fp16 modes, 0.25 for the bf16 "
      "ones; at least 0.05 for a QDQ model, and for a model that computes in fp16 or bf16 "
      "the unit roundoff x the ops on its longest path)";
  cmd->add_option("--check-atol", atol, text)->check(CLI::NonNegativeNumber & kFiniteNumber);
  cmd->add_option("--check-rtol", rtol, "Relative part of the check's tolerance (default as --check-atol)")
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
}

}  // namespace geopt::cli
