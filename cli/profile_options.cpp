#include "profile_options.h"

#include "util/error.h"

namespace geopt::cli {

void ProfileOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--soc-version", soc, "Hardware profile (ATC's name) or a profile .toml")->capture_default_str();
  cmd->add_option("--profile-set", sets, "Override a profile value: SECTION.KEY=VALUE (e.g. memory.hbm_gbps=1200)");
  std::vector<std::string> modes;
  for (const auto& [name, mode] : ascend::precision_mode_names()) modes.push_back(name);
  precision_option = cmd->add_option("--precision_mode,--precision-mode", precision,
                  "ATC's precision mode: the dtype each op computes in on the device (docs/PRECISION.md)")
      ->check(CLI::IsMember(modes))
      ->capture_default_str();
  cmd->add_option("--modify_mixlist,--modify-mixlist", mix_list,
                  "allow_mix_precision's lists changed by a JSON file: {\"black-list\": {\"to-add\": [...], \"to-remove\": [...]}, \"white-list\": ..., \"gray-list\": ...}");
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
  const bool mixed = p.mode == ascend::PrecisionMode::AllowMixPrecision || p.mode == ascend::PrecisionMode::AllowMixPrecisionBf16;
  if (!mix_list.empty()) {
    if (!mixed) throw UsageError("--modify_mixlist changes allow_mix_precision's lists; --precision_mode is " + precision);
    p.mix_list = std::make_shared<const ascend::MixList>(ascend::load_mix_list(mix_list));
  }
  if (p.low() == DType::BF16 && !profile.cube_bf16)
    throw Error("--precision_mode " + precision + ": " + profile.soc_version + " computes no bf16 (" + profile.source +
                ": cube.bf16 = false); the Ascend910B profiles do");
  return p;
}

ascend::OptimizeOptions ProfileOptions::optimize_options(const ascend::HardwareProfile& profile, int iterations, size_t enodes, double seconds) const {
  ascend::OptimizeOptions opts;
  opts.cost.precision = precision_for(profile);
  opts.write_precision = computes_precision();
  opts.limits.iterations = iterations;
  opts.limits.enodes = enodes;
  opts.limits.seconds = seconds;
  return opts;
}

}  // namespace geopt::cli
