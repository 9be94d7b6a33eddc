#include "profile_options.h"

#include "settings.h"

namespace geopt::cli {

void ProfileOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--soc-version", soc, "Hardware profile (ATC's name) or a profile .toml")
      ->capture_default_str();
  cmd->add_option("--profile-set", sets,
                  "Override a profile value: SECTION.KEY=VALUE (e.g. memory.hbm_gbps=1200)");
  std::vector<std::string> modes;
  for (const auto& [name, mode] : ascend::precision_mode_names()) modes.push_back(name);
  precision_option =
      cmd->add_option("--precision_mode,--precision-mode", precision,
                      "ATC's precision mode: the dtype each op computes in on the device (docs/PRECISION.md)")
          ->check(CLI::IsMember(modes))
          ->capture_default_str();
  cmd->add_option("--modify_mixlist,--modify-mixlist", mix_list,
                  "allow_mix_precision's lists changed by a JSON file: {\"black-list\": {\"to-add\": [...], "
                  "\"to-remove\": [...]}, \"white-list\": ..., \"gray-list\": ...}");
  cmd->add_flag("--enable_small_channel,--enable-small-channel", small_channel,
                "ATC's option: convs of at most 4 input channels (an image) read them in blocks of 4, not C0 "
                "= 16 (=1 or =0)");
  cmd->add_option("--buffer_optimize,--buffer-optimize", buffer_optimize,
                  "ATC's option: l2_optimize runs kernels whose activations exceed L2 in batch slices that "
                  "stay in L2; off_optimize (or l1_optimize, which ATC treats as off) does not")
      ->check(CLI::IsMember({"l2_optimize", "l1_optimize", "off_optimize"}))
      ->capture_default_str();
}

api::TargetOptions ProfileOptions::target() const {
  api::TargetOptions t;
  t.soc_version = soc;
  t.profile_set = sets;
  if (computes_precision()) t.precision_mode = precision;
  t.modify_mixlist = mix_list;
  t.enable_small_channel = small_channel;
  t.buffer_optimize = buffer_optimize;
  return t;
}

ascend::HardwareProfile ProfileOptions::load() const { return api::load_profile(target()); }

ascend::Precision ProfileOptions::precision_for(const ascend::HardwareProfile& profile) const {
  return api::precision_for(target(), profile);
}

ascend::CostOptions ProfileOptions::cost_options(const ascend::HardwareProfile& profile,
                                                 int64_t symbolic_dim_value) const {
  return api::cost_options(target(), profile, symbolic_dim_value);
}

ascend::OptimizeOptions ProfileOptions::optimize_options(const ascend::HardwareProfile& profile,
                                                         const SaturationLimitOptions& limits) const {
  api::RuleOptions rules;
  limits.apply_to(rules);
  return api::optimize_options(target(), rules, profile, nullptr);
}

}  // namespace geopt::cli
