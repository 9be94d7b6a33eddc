#include "rule_options.h"

#include "dsl/diagnostic.h"
#include "util/error.h"

namespace geopt::cli {

void RuleOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--rules", paths,
                  "A .gerule file or a folder of them (repeatable; default: the shipped rules/)");
  cmd->add_option("--disable", disabled, "Turn off a rule, or every rule with this tag (repeatable)");
  cmd->add_option("--fusion-switch-file", switch_file,
                  "TOML file: [rules] NAME = \"on\"|\"off\", [tags] TAG = \"on\"|\"off\"");
}

std::vector<std::string> RuleOptions::resolved_paths() const {
  if (!paths.empty()) return paths;
  std::string dir = dsl::default_rules_dir();
  if (dir.empty())
    throw Error("no rules/ folder found next to geopt or in its install prefix; pass --rules DIR");
  return {dir};
}

std::unique_ptr<dsl::RuleSet> RuleOptions::load() const {
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(resolved_paths(), errors);
  if (!set) {
    std::string text = dsl::format_diagnostics(errors);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    throw Error(std::to_string(errors.size()) + " error(s) in the rules:\n" + text);
  }
  if (!switch_file.empty()) set->apply_switch_file(switch_file);
  for (const auto& d : disabled)
    if (!set->set_enabled(d, false)) throw Error("--disable " + d + ": no rule or tag has that name");
  return set;
}

}  // namespace geopt::cli
