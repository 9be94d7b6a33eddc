#include "profile_options.h"

#include "util/error.h"

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
}

ascend::HardwareProfile ProfileOptions::load() const {
  std::map<std::string, std::string> overrides;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw UsageError("--profile-set " + s + ": expected SECTION.KEY=VALUE");
    overrides[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return ascend::load_profile(soc, overrides);
}

ascend::Precision ProfileOptions::precision_for(const ascend::HardwareProfile& profile) const {
  ascend::Precision p;
  p.mode = ascend::parse_precision_mode(precision);
  const bool mixed = p.mode == ascend::PrecisionMode::AllowMixPrecision ||
                     p.mode == ascend::PrecisionMode::AllowMixPrecisionBf16;
  if (!mix_list.empty()) {
    if (!mixed)
      throw UsageError("--modify_mixlist changes allow_mix_precision's lists; --precision_mode is " +
                       precision);
    p.mix_list = std::make_shared<const ascend::MixList>(ascend::load_mix_list(mix_list));
  }
  if (p.low() == DType::BF16 && !profile.cube_bf16)
    throw Error("--precision_mode " + precision + ": " + profile.soc_version + " computes no bf16 (" +
                profile.source + ": cube.bf16 = false); the Ascend910B profiles do");
  return p;
}

ascend::CostOptions ProfileOptions::cost_options(const ascend::HardwareProfile& profile,
                                                 int64_t symbolic_dim_value) const {
  ascend::CostOptions c;
  c.precision = precision_for(profile);
  c.symbolic_dim_value = symbolic_dim_value;
  c.small_channel = small_channel;
  return c;
}

ascend::OptimizeOptions ProfileOptions::optimize_options(const ascend::HardwareProfile& profile,
                                                         const SaturationLimitOptions& limits) const {
  ascend::OptimizeOptions opts;
  opts.cost = cost_options(profile);
  opts.write_precision = computes_precision();
  limits.apply_to(opts.limits);
  return opts;
}

}  // namespace geopt::cli
