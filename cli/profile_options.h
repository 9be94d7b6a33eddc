#pragma once
// The options every cost-model command shares: which hardware profile
// (--soc-version, ATC's name, or a .toml), overrides of its values
// (--profile-set SECTION.KEY=VALUE), ATC's --precision_mode and --modify_mixlist.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ascend/cost_model.h"
#include "ascend/optimizer.h"
#include "geopt/geopt.h"
#include "saturation_limit_options.h"

namespace geopt::cli {

struct ProfileOptions {
  std::string soc = "Ascend910B1";
  std::vector<std::string> sets;
  std::string precision = "force_fp16";
  std::string mix_list;  // --modify_mixlist FILE.json
  CLI::Option* precision_option = nullptr;
  bool small_channel = false;                   // ATC's --enable_small_channel
  std::string buffer_optimize = "l2_optimize";  // ATC's --buffer_optimize
  // The mode is computed (written into the graph), not only priced: --precision_mode given.
  bool computes_precision() const { return precision_option && precision_option->count() > 0; }

  void add_to(CLI::App* cmd);
  // The same options as the API takes them.
  api::TargetOptions target() const;
  // Throws geopt::Error on an unknown profile or a bad override.
  ascend::HardwareProfile load() const;
  // The precision mode with its mix list. Throws geopt::Error on a bad mix list, a mix
  // list without allow_mix_precision, or a bf16 mode on a profile without bf16.
  ascend::Precision precision_for(const ascend::HardwareProfile& profile) const;
  // What the cost model prices with: the precision, --enable_small_channel, the value of symbolic dims.
  ascend::CostOptions cost_options(const ascend::HardwareProfile& profile,
                                   int64_t symbolic_dim_value = 1) const;
  // What ascend::optimize takes: the precision and the saturation limits.
  ascend::OptimizeOptions optimize_options(const ascend::HardwareProfile& profile,
                                           const SaturationLimitOptions& limits) const;
};

}  // namespace geopt::cli
