#include "rule_options.h"

#include "settings.h"

namespace geopt::cli {

void RuleOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--rules", paths,
                  "A .gerule file or a folder of them (repeatable; default: the shipped rules/)");
  cmd->add_option("--disable", disabled, "Turn off a rule, or every rule with this tag (repeatable)");
  cmd->add_option("--fusion-switch-file", switch_file,
                  "TOML file: [rules] NAME = \"on\"|\"off\", [tags] TAG = \"on\"|\"off\"");
}

api::RuleOptions RuleOptions::api() const {
  api::RuleOptions o;
  o.paths = paths;
  o.disable = disabled;
  o.fusion_switch_file = switch_file;
  return o;
}

std::vector<std::string> RuleOptions::resolved_paths() const { return api::rule_paths(api()); }

std::unique_ptr<dsl::RuleSet> RuleOptions::load() const { return api::load_rules(api()); }

}  // namespace geopt::cli
