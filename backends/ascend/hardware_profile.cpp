#include "hardware_profile.h"

#include <algorithm>
#include <filesystem>
#include <toml++/toml.h>

#include "util/error.h"
#include "util/input_file.h"

namespace geopt::ascend {
namespace fs = std::filesystem;

std::string default_profiles_dir() {
  if (const char* env = std::getenv("GEOPT_PROFILES_DIR")) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "geopt" / "profiles");
  candidates.push_back(fs::path(GEOPT_SOURCE_PROFILES_DIR));
  for (const auto& c : candidates)
    if (fs::is_directory(c, ec)) return c.string();
  return {};
}

std::vector<std::string> available_profiles() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(default_profiles_dir(), ec))
    if (e.path().extension() == ".toml") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

class Reader {
 public:
  Reader(toml::table& t, std::string file) : table_(t), file_(std::move(file)) {}

  double number(const char* key) {
    auto node = table_.at_path(key);
    if (auto v = node.value<double>()) return *v;
    if (auto v = node.value<int64_t>()) return static_cast<double>(*v);
    throw Error(file_ + ": '" + key + "' is missing or not a number");
  }
  // Optional: absent means false (a profile written before the key existed).
  bool flag(const char* key) {
    auto node = table_.at_path(key);
    if (!node) return false;
    if (auto v = node.value<bool>()) return *v;
    throw Error(file_ + ": '" + key + "' is not true or false");
  }
  int64_t integer(const char* key) {
    auto node = table_.at_path(key);
    if (auto v = node.value<int64_t>()) return *v;
    throw Error(file_ + ": '" + key + "' is missing or not an integer");
  }

 private:
  toml::table& table_;
  std::string file_;
};

void set_override(toml::table& t, const std::string& key, const std::string& value, const std::string& file) {
  auto dot = key.find('.');
  if (dot == std::string::npos) throw Error("--profile-set " + key + ": use SECTION.KEY (e.g. memory.hbm_gbps)");
  toml::table* section = t[key.substr(0, dot)].as_table();
  std::string leaf = key.substr(dot + 1);
  if (!section || !section->contains(leaf)) throw Error("--profile-set " + key + ": " + file + " has no such key");
  if ((*section)[leaf].is_boolean()) {
    if (value != "true" && value != "false") throw Error("--profile-set " + key + "=" + value + ": expected true or false");
    section->insert_or_assign(leaf, value == "true");
    return;
  }
  try {
    size_t used = 0;
    double v = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    if ((*section)[leaf].is_integer()) section->insert_or_assign(leaf, static_cast<int64_t>(v));
    else section->insert_or_assign(leaf, v);
  } catch (const std::exception&) {
    throw Error("--profile-set " + key + "=" + value + ": not a number");
  }
}

}  // namespace

HardwareProfile load_profile(const std::string& name_or_path, const std::map<std::string, std::string>& overrides) {
  fs::path path = name_or_path;
  if (path.extension() != ".toml") {
    path = fs::path(default_profiles_dir()) / (name_or_path + ".toml");
    if (!fs::exists(path)) {
      std::string known;
      for (const auto& p : available_profiles()) known += (known.empty() ? "" : ", ") + p;
      throw Error("unknown --soc-version '" + name_or_path + "' (known: " + known + "; or give a profile .toml)");
    }
  }
  toml::table t;
  try {
    t = toml::parse(read_regular_file(path, kOptionFileCap, "a hardware profile"), path.string());
  } catch (const toml::parse_error& e) {
    throw Error(path.string() + ":" + std::to_string(e.source().begin.line) + ":" + std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
  }
  for (const auto& [k, v] : overrides) set_override(t, k, v, path.string());
  Reader r(t, path.string());
  HardwareProfile p;
  p.source = path.string();
  p.soc_version = t["soc_version"].value_or(path.stem().string());
  p.ai_cores = static_cast<int>(r.integer("cores.ai_cores"));
  p.vector_cores = static_cast<int>(r.integer("cores.vector_cores"));
  p.frequency_mhz = r.number("cores.frequency_mhz");
  p.cube_m = static_cast<int>(r.integer("cube.m"));
  p.cube_n = static_cast<int>(r.integer("cube.n"));
  p.cube_k = static_cast<int>(r.integer("cube.k"));
  p.fp16_macs_per_cycle = r.number("cube.fp16_macs_per_cycle");
  p.cube_bf16 = r.flag("cube.bf16");
  p.vector_bytes_per_cycle = r.number("vector.bytes_per_cycle");
  p.l0a = r.integer("buffers.l0a");
  p.l0b = r.integer("buffers.l0b");
  p.l0c = r.integer("buffers.l0c");
  p.l1 = r.integer("buffers.l1");
  p.ub = r.integer("buffers.ub");
  p.l2_bytes = r.integer("memory.l2_bytes");
  p.hbm_bytes = r.integer("memory.hbm_bytes");
  p.hbm_gbps = r.number("memory.hbm_gbps");
  p.launch_overhead_us = r.number("launch.overhead_us");
  if (p.ai_cores <= 0 || p.vector_cores <= 0 || p.frequency_mhz <= 0 || p.hbm_gbps <= 0 || p.ub <= 0)
    throw Error(path.string() + ": core counts, clock, UB size and bandwidth must be positive");
  return p;
}

}  // namespace geopt::ascend
