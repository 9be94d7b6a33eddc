#pragma once
// An Ascend SoC as the cost model sees it: cores, clock, cube shape, on-chip
// buffer sizes and memory bandwidth. One TOML file per SoC in profiles/,
// selected by ATC's name (--soc-version Ascend910B1).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace geopt::ascend {

struct HardwareProfile {
  std::string soc_version;
  std::string source;  // the file it came from
  int ai_cores = 0;
  int vector_cores = 0;
  double frequency_mhz = 0;
  int cube_m = 16, cube_n = 16, cube_k = 16;
  double fp16_macs_per_cycle = 0;   // per AI core
  bool cube_bf16 = false;           // the Cube computes bf16 (Atlas A2: Ascend910B*), at the fp16 rate
  double vector_bytes_per_cycle = 0;  // per vector core
  int64_t l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;  // bytes per core
  int64_t l2_bytes = 0, hbm_bytes = 0;
  double hbm_gbps = 0;
  double launch_overhead_us = 0;

  // Peak fp16 cube throughput of the whole chip, in TFLOP/s (2 flops per MAC).
  double peak_fp16_tflops() const { return 2.0 * fp16_macs_per_cycle * ai_cores * frequency_mhz * 1e6 / 1e12; }
};

// The folder of shipped profiles (next to the binary, in the install prefix, or the source tree).
std::string default_profiles_dir();
// The soc versions available there.
std::vector<std::string> available_profiles();
// Loads "Ascend910B1" from the profiles folder, or a path to a .toml file. `overrides`
// set dotted keys ("memory.hbm_gbps" = "1200"). Throws geopt::Error naming the file
// and key on a missing file, a missing key or a bad value.
HardwareProfile load_profile(const std::string& name_or_path, const std::map<std::string, std::string>& overrides = {});

}  // namespace geopt::ascend
