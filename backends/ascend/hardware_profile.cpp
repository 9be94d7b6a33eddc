#include "hardware_profile.h"

#include <cstdio>

#include <cmath>

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>

#include "util/error.h"
#include "util/input_file.h"
#include "util/install_dirs.h"

namespace geopt::ascend {
namespace fs = std::filesystem;

std::string default_profiles_dir() {
  if (const char* env = std::getenv("GEOPT_PROFILES_DIR")) return env;
  std::error_code ec;
  std::vector<fs::path> candidates = installed_data_dirs("profiles");
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
  // A number in [lo, hi] (lo excluded where `above`): every cost is a rate or a size of
  // the chip, and a zero, negative or non-finite one makes latencies NaN, negative or
  // infinite (a negative launch overhead once made extraction loop for ever).
  double number_in(const char* key, double lo, double hi, bool above) {
    const double v = number(key);
    if (!std::isfinite(v) || v > hi || (above ? !(v > lo) : !(v >= lo)))
      throw Error(file_ + ": '" + key + "' is " + format(v) + "; it must be " +
                  (above ? "above " : "at least ") + format(lo) + " and at most " + format(hi));
    return v;
  }
  int64_t integer_in(const char* key, int64_t lo, int64_t hi) {
    const int64_t v = integer(key);
    if (v < lo || v > hi)
      throw Error(file_ + ": '" + key + "' is " + std::to_string(v) + "; it must be " + std::to_string(lo) +
                  " to " + std::to_string(hi));
    return v;
  }

 private:
  static std::string format(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

 public:
 private:
  toml::table& table_;
  std::string file_;
};

void set_override(toml::table& t, const std::string& key, const std::string& value, const std::string& file) {
  auto dot = key.find('.');
  if (dot == std::string::npos)
    throw UsageError("--profile-set " + key + ": use SECTION.KEY (e.g. memory.hbm_gbps)");
  toml::table* section = t[key.substr(0, dot)].as_table();
  std::string leaf = key.substr(dot + 1);
  if (!section || !section->contains(leaf))
    throw UsageError("--profile-set " + key + ": " + file + " has no such key");
  if ((*section)[leaf].is_boolean()) {
    if (value != "true" && value != "false")
      throw UsageError("--profile-set " + key + "=" + value + ": expected true or false");
    section->insert_or_assign(leaf, value == "true");
    return;
  }
  try {
    size_t used = 0;
    double v = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    if ((*section)[leaf].is_integer()) {
      if (!(v >= -9.2e18 && v <= 9.2e18) || v != std::floor(v))
        throw std::invalid_argument(value);  // no NaN, inf or fraction cast
      section->insert_or_assign(leaf, static_cast<int64_t>(v));
    } else
      section->insert_or_assign(leaf, v);
  } catch (const std::exception&) {
    throw UsageError("--profile-set " + key + "=" + value + ": not a number");
  }
}

}  // namespace

HardwareProfile load_profile(const std::string& name_or_path,
                             const std::map<std::string, std::string>& overrides) {
  fs::path path = name_or_path;
  if (path.extension() != ".toml") {
    path = fs::path(default_profiles_dir()) / (name_or_path + ".toml");
    if (!fs::exists(path)) {
      std::string known;
      for (const auto& p : available_profiles()) known += (known.empty() ? "" : ", ") + p;
      throw UsageError("unknown --soc-version '" + name_or_path + "' (known: " + known +
                       "; or give a profile .toml)");
    }
  }
  toml::table t;
  try {
    t = toml::parse(read_regular_file(path, kOptionFileCap, "a hardware profile"), path.string());
  } catch (const toml::parse_error& e) {
    throw Error(path.string() + ":" + std::to_string(e.source().begin.line) + ":" +
                std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
  }
  for (const auto& [k, v] : overrides) set_override(t, k, v, path.string());
  Reader r(t, path.string());
  HardwareProfile p;
  p.source = path.string();
  p.soc_version = t["soc_version"].value_or(path.stem().string());
  constexpr int64_t kTiB = int64_t{1} << 40;
  p.ai_cores = static_cast<int>(r.integer_in("cores.ai_cores", 1, 4096));
  p.vector_cores = static_cast<int>(r.integer_in("cores.vector_cores", 1, 4096));
  p.frequency_mhz = r.number_in("cores.frequency_mhz", 0, 1e5, true);
  p.cube_m = static_cast<int>(r.integer_in("cube.m", 1, 256));
  p.cube_n = static_cast<int>(r.integer_in("cube.n", 1, 256));
  p.cube_k = static_cast<int>(r.integer_in("cube.k", 1, 256));
  p.fp16_macs_per_cycle = r.number_in("cube.fp16_macs_per_cycle", 0, 1e7, true);
  p.cube_bf16 = r.flag("cube.bf16");
  p.vector_bytes_per_cycle = r.number_in("vector.bytes_per_cycle", 0, 1e6, true);
  p.l0a = r.integer_in("buffers.l0a", 1024, kTiB);
  p.l0b = r.integer_in("buffers.l0b", 1024, kTiB);
  p.l0c = r.integer_in("buffers.l0c", 1024, kTiB);
  p.l1 = r.integer_in("buffers.l1", 1024, kTiB);
  p.ub = r.integer_in("buffers.ub", 1024, kTiB);
  p.l2_bytes = r.integer_in("memory.l2_bytes", 0, 1024 * kTiB);
  p.hbm_bytes = r.integer_in("memory.hbm_bytes", 1, 1024 * kTiB);
  p.hbm_gbps = r.number_in("memory.hbm_gbps", 0, 1e6, true);
  p.launch_overhead_us = r.number_in("launch.overhead_us", 0, 1e6, false);
  p.launch_standalone_us = r.number_in("launch.standalone_us", 0, 1e6, false);
  p.cube_efficiency = r.number_in("cube.efficiency", 0, 1, true);
  p.cube_tile_overhead_cycles = r.number_in("cube.tile_overhead_cycles", 0, 1e9, false);
  p.vector_efficiency = r.number_in("vector.efficiency", 0, 1, true);
  p.memory_efficiency = r.number_in("memory.efficiency", 0, 1, true);
  p.vector_transpose_ops = r.number_in("vector.transpose_ops", 0, 1e4, false);
  p.l2_gbps = r.number_in("memory.l2_gbps", 0, 1e7, true);
  p.l2_resident_share = r.number_in("memory.l2_resident_share", 0, 1, false);
  p.flash_attention = r.flag("attention.flash_attention");
  p.attention_block_q = static_cast<int>(r.integer_in("attention.block_q", p.cube_m, 4096));
  p.attention_block_kv = static_cast<int>(r.integer_in("attention.block_kv", p.cube_n, 4096));
  if (p.attention_block_q % p.cube_m || p.attention_block_kv % p.cube_n)
    throw Error(p.source +
                ": 'attention.block_q' and 'attention.block_kv' must be multiples of the cube's m and n");
  p.attention_vector_ops = r.number_in("attention.vector_ops_per_score", 0, 1e4, true);
  p.attention_sync_cycles = r.number_in("attention.sync_cycles", 0, 1e9, false);
  return p;
}

}  // namespace geopt::ascend
