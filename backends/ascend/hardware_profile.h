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
  double fp16_macs_per_cycle = 0;     // per AI core
  bool cube_bf16 = false;             // the Cube computes bf16 (Atlas A2: Ascend910B*), at the fp16 rate
  double vector_bytes_per_cycle = 0;  // per vector core
  int64_t l0a = 0, l0b = 0, l0c = 0, l1 = 0, ub = 0;  // bytes per core
  int64_t l2_bytes = 0, hbm_bytes = 0;
  double hbm_gbps = 0;
  double launch_overhead_us = 0;
  // What one kernel timed on its own from the host pays besides its run: the launch and
  // the synchronisation a graph's kernels do not each wait for. The compiler never adds
  // it; bench/cost_fidelity.sh does, for published single-kernel figures.
  double launch_standalone_us = 0;

  // What the chip sustains, fitted to published measurements (bench/cost_fidelity.sh,
  // docs/COSTMODEL.md): the Cube's fraction of its peak in a tile's K loop, the cycles
  // each output tile adds (fill, drain, write-out), the Vector units' fraction of theirs,
  // and the fraction of device-memory bandwidth that streaming kernels reach.
  double cube_efficiency = 1;
  double cube_tile_overhead_cycles = 0;
  double vector_efficiency = 1;
  double memory_efficiency = 1;
  // Vector operations per element a Transpose permutes (it gathers through UB; a plain
  // copy is the transfer engines' and costs none).
  double vector_transpose_ops = 0;
  // L2: its bandwidth, and the share of it one tensor may take and still be read back
  // from L2 by its consumer (producer and consumer outputs both live there).
  double l2_gbps = 0;
  double l2_resident_share = 0;
  // FlashAttention's blocking: query and key block rows, Vector operations per score
  // (scale, mask, max, exp, sum, rescale) and the Cube-to-Vector handoff per block pair.
  bool flash_attention = true;  // the chip's kernel library has a fused attention kernel
  int attention_block_q = 128, attention_block_kv = 128;
  double attention_vector_ops = 6;
  double attention_sync_cycles = 0;

  // Peak fp16 cube throughput of the whole chip, in TFLOP/s (2 flops per MAC).
  double peak_fp16_tflops() const {
    return 2.0 * fp16_macs_per_cycle * ai_cores * frequency_mhz * 1e6 / 1e12;
  }
};

// The folder of shipped profiles (next to the binary, in the install prefix, or the source tree).
std::string default_profiles_dir();
// The soc versions available there.
std::vector<std::string> available_profiles();
// Loads "Ascend910B1" from the profiles folder, or a path to a .toml file. `overrides`
// set dotted keys ("memory.hbm_gbps" = "1200"). Throws geopt::Error naming the file
// and key on a missing file, a missing key or a bad value.
HardwareProfile load_profile(const std::string& name_or_path,
                             const std::map<std::string, std::string>& overrides = {});

}  // namespace geopt::ascend
