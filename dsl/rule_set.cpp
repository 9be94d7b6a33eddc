#include "dsl/rule_set.h"

#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>

#include "dsl/checker.h"
#include "dsl/parser.h"
#include "dsl/schema_lookup.h"
#include "util/error.h"
#include "util/input_file.h"
#include "util/install_dirs.h"

namespace geopt::dsl {
namespace fs = std::filesystem;
namespace {

bool is_commutative(const Pattern& p) {
  if (p.kind != Pattern::Kind::Op || p.args.size() != 2 || p.rest || p.rest_any) return false;
  const OpInfo* info = find_op(p.domain, p.op);
  return info && info->commutative;
}

int count_commutative(const Pattern& p) {
  int n = is_commutative(p) ? 1 : 0;
  for (const auto& a : p.args) n += count_commutative(*a);
  return n;
}

// Deep copy; the k-th commutative op (in depth-first order) swaps its operands when bit k of mask is set.
PatternPtr clone(const PatternPtr& p, unsigned mask, int& counter) {
  auto c = std::make_shared<Pattern>(*p);
  c->args.clear();
  for (const auto& a : p->args) c->args.push_back(clone(a, mask, counter));
  if (is_commutative(*p) && ((mask >> counter++) & 1u)) std::swap(c->args[0], c->args[1]);
  return c;
}

void count_vars(const Pattern& p, std::map<std::string, int>& uses) {
  if (!p.var.empty()) ++uses[p.var];
  for (const auto& a : p.args) count_vars(*a, uses);
  if (p.rest) count_vars(*p.rest, uses);
}

// Same structure; a variable is the same name in both, or one used only in its own root on each side.
bool alike(const Pattern& a, const Pattern& b, const std::map<std::string, int>& all_uses,
           const std::map<std::string, int>& a_uses, const std::map<std::string, int>& b_uses) {
  if (a.kind != b.kind || a.domain != b.domain || a.op != b.op || a.number != b.number ||
      a.output_index != b.output_index || a.args.size() != b.args.size() || a.rest_any != b.rest_any ||
      bool(a.rest) != bool(b.rest) || a.attrs.size() != b.attrs.size())
    return false;
  if (a.var != b.var) {
    auto local = [&](const std::string& v, const std::map<std::string, int>& own) {
      return !v.empty() && own.count(v) && own.at(v) == all_uses.at(v);
    };
    if (!local(a.var, a_uses) || !local(b.var, b_uses)) return false;
  }
  for (size_t i = 0; i < a.attrs.size(); ++i) {
    const AttrPred& x = a.attrs[i];
    const AttrPred& y = b.attrs[i];
    if (x.name != y.name || x.op != y.op || x.absent != y.absent || !x.bind_var.empty() ||
        !y.bind_var.empty() ||
        (x.value ? x.value->to_string() : "") != (y.value ? y.value->to_string() : "") ||
        x.tolerance != y.tolerance || x.lo != y.lo || x.hi != y.hi || x.set.size() != y.set.size())
      return false;
  }
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!alike(*a.args[i], *b.args[i], all_uses, a_uses, b_uses)) return false;
  return !a.rest || alike(*a.rest, *b.rest, all_uses, a_uses, b_uses);
}

int pattern_depth(const Pattern& p, const Alternative& alt, int guard = 0) {
  if (guard > 64) return 64;
  switch (p.kind) {
    case Pattern::Kind::Op: {
      int d = 0;
      for (const auto& a : p.args) d = std::max(d, 1 + pattern_depth(*a, alt, guard + 1));
      if (p.rest) d = std::max(d, 1 + pattern_depth(*p.rest, alt, guard + 1));
      return d;
    }
    case Pattern::Kind::Var: {
      auto let = alt.lets.find(p.var);
      return let == alt.lets.end() ? 0 : pattern_depth(*let->second, alt, guard + 1);
    }
    default:
      return 0;
  }
}

void mark_alike_roots(Alternative& alt) {
  std::map<std::string, int> all;
  std::vector<std::map<std::string, int>> per_root(alt.roots.size());
  for (size_t r = 0; r < alt.roots.size(); ++r) {
    count_vars(*alt.roots[r], per_root[r]);
    for (const auto& [v, n] : per_root[r]) all[v] += n;
  }
  for (const auto& [name, let] : alt.lets) {
    ++all[name];
    count_vars(*let, all);
  }
  alt.alike_previous.assign(alt.roots.size(), false);
  for (size_t r = 1; r < alt.roots.size(); ++r)
    alt.alike_previous[r] = alike(*alt.roots[r - 1], *alt.roots[r], all, per_root[r - 1], per_root[r]);
}

std::vector<Alternative> expand(const Rule& r) {
  int k = 0;
  for (const auto& root : r.roots) k += count_commutative(*root);
  for (const auto& let : r.lets) k += count_commutative(*let.pattern);
  std::vector<Alternative> alts;
  for (unsigned mask = 0; mask < (1u << k); ++mask) {
    Alternative a;
    int counter = 0;
    for (const auto& root : r.roots) a.roots.push_back(clone(root, mask, counter));
    for (const auto& let : r.lets) a.lets[let.var] = clone(let.pattern, mask, counter);
    mark_alike_roots(a);
    for (const auto& root : a.roots) a.root_depth.push_back(pattern_depth(*root, a));
    alts.push_back(std::move(a));
  }
  return alts;
}

std::vector<std::string> rule_files(const std::string& path, std::vector<Diagnostic>& errors) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".gerule") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  if (!fs::exists(path, ec)) {
    errors.push_back({{path, 0, 0}, "no such rule file or folder"});
    return {};
  }
  return {path};
}

}  // namespace

std::unique_ptr<RuleSet> RuleSet::load(const std::vector<std::string>& paths,
                                       std::vector<Diagnostic>& errors) {
  auto set = std::unique_ptr<RuleSet>(new RuleSet());
  const size_t errors_before = errors.size();
  for (const auto& path : paths)
    for (const auto& file : rule_files(path, errors)) {
      ParseResult parsed = parse_rule_file(file);
      errors.insert(errors.end(), parsed.errors.begin(), parsed.errors.end());
      set->files_.push_back(std::make_unique<RuleFile>(std::move(parsed.file)));
    }
  std::vector<const RuleFile*> files;
  for (const auto& f : set->files_) files.push_back(f.get());
  check_rules(files, errors);
  if (errors.size() != errors_before) return nullptr;
  for (const auto& f : set->files_)
    for (const Rule& r : f->rules) set->rules_.push_back({&r, f->path, r.enabled, expand(r)});
  set->rebuild_automaton();
  return set;
}

void RuleSet::rebuild_automaton() {
  std::vector<Automaton::Entry> entries;
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (!rules_[r].enabled) continue;
    for (size_t a = 0; a < rules_[r].alternatives.size(); ++a) {
      const Alternative& alt = rules_[r].alternatives[a];
      entries.push_back({static_cast<int>(r), static_cast<int>(a), alt.roots.front().get(), &alt.lets});
    }
  }
  automaton_.build(entries);
}

bool RuleSet::set_enabled(const std::string& name_or_tag, bool enabled) {
  bool hit = false;
  for (auto& r : rules_) {
    bool tagged = r.ast->has_tag(name_or_tag);
    if (r.ast->name == name_or_tag || tagged) {
      r.enabled = enabled;
      hit = true;
    }
  }
  if (hit) rebuild_automaton();
  return hit;
}

void RuleSet::apply_switch_file(const std::string& path) {
  toml::table table;
  try {
    table = toml::parse(read_regular_file(path, kOptionFileCap, "the --fusion-switch-file"), path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw Error(path + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " +
                std::string(e.description()));
  }
  auto apply = [&](const char* section, bool tags) {
    const toml::table* t = table[section].as_table();
    if (!t) return;
    for (const auto& [key, value] : *t) {
      const auto* s = value.as_string();
      const auto line = std::to_string(value.source().begin.line);
      if (!s || (s->get() != "on" && s->get() != "off"))
        throw Error(path + ":" + line + ": " + std::string(key.str()) + " must be \"on\" or \"off\"");
      if (!set_enabled(std::string(key.str()), s->get() == "on"))
        throw Error(path + ":" + line + ": no rule " + (tags ? "tag" : "name") + " '" +
                    std::string(key.str()) + "'");
    }
  };
  for (const auto& [key, value] : table)
    if (key.str() != "rules" && key.str() != "tags")
      throw Error(path + ":" + std::to_string(value.source().begin.line) + ": unknown section '" +
                  std::string(key.str()) + "' (expected [rules] or [tags])");
  apply("tags", true);  // tags first, so a rule named in [rules] wins
  apply("rules", false);
}

const CompiledRule* RuleSet::find(const std::string& name) const {
  for (const auto& r : rules_)
    if (r.ast->name == name) return &r;
  return nullptr;
}

std::string default_rules_dir() {
  if (const char* env = std::getenv("GEOPT_RULES_DIR")) return env;
  std::vector<fs::path> candidates = installed_data_dirs("rules");
  candidates.push_back(fs::path(GEOPT_SOURCE_RULES_DIR));  // a build tree
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::is_directory(c, ec)) return c.string();
  return {};
}

}  // namespace geopt::dsl
