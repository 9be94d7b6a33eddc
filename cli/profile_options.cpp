#include "profile_options.h"

#include "util/error.h"

namespace geopt::cli {

void ProfileOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--soc-version", soc, "Hardware profile (ATC's name) or a profile .toml")->capture_default_str();
  cmd->add_option("--profile-set", sets, "Override a profile value: SECTION.KEY=VALUE (e.g. memory.hbm_gbps=1200)");
  cmd->add_option("--precision-mode", precision, "ATC's precision mode: force_fp16 or must_keep_origin_dtype")
      ->check(CLI::IsMember({"force_fp16", "must_keep_origin_dtype"}))
      ->capture_default_str();
}

ascend::HardwareProfile ProfileOptions::load() const {
  std::map<std::string, std::string> overrides;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw Error("--profile-set " + s + ": expected SECTION.KEY=VALUE");
    overrides[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return ascend::load_profile(soc, overrides);
}

ascend::OptimizeOptions ProfileOptions::optimize_options(int iterations, size_t enodes, double seconds) const {
  ascend::OptimizeOptions opts;
  opts.cost.precision_mode = precision;
  opts.limits.iterations = iterations;
  opts.limits.enodes = enodes;
  opts.limits.seconds = seconds;
  return opts;
}

}  // namespace geopt::cli
