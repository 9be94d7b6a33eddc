#include "check_tolerance_option.h"

#include "finite_number.h"
#include "settings.h"

#include <string>

namespace geopt::cli {

void CheckToleranceOption::add_to(CLI::App* cmd, const char* what) {
  const std::string text = std::string("The check allows |") + what +
                           " - original| <= atol + rtol |original| (numpy.allclose); default 1e-4, or with "
                           "--precision_mode the mode's "
                           "(1e-4 for must_keep_origin_dtype, 0.05 for the fp16 modes, 0.25 for the bf16 "
                           "ones; at least 0.05 for a QDQ model)";
  cmd->add_option("--check-atol", atol, text)->check(CLI::NonNegativeNumber & kFiniteNumber);
  cmd->add_option("--check-rtol", rtol, "Relative part of the check's tolerance (default as --check-atol)")
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
}

Tolerance CheckToleranceOption::resolve(const ascend::Precision& precision, bool computed,
                                        bool quantized) const {
  api::CheckOptions check;
  check.atol = atol;
  check.rtol = rtol;
  return api::check_tolerance(check, precision, computed, quantized);
}

}  // namespace geopt::cli
