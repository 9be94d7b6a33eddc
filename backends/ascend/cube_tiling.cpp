#include "cube_tiling.h"

#include <algorithm>
#include <cmath>

namespace geopt::ascend {
namespace {

double ceil_div(int64_t a, int64_t b) { return static_cast<double>((a + b - 1) / b); }
int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// The largest tile side worth trying: past the product's own (padded) size a larger
// tile only pads more.
int64_t side_limit(int64_t extent, int64_t fractal) {
  return std::min<int64_t>(256, std::max(fractal, round_up(extent, fractal)));
}

// Cycles of one 16x16x16 fractal product at the sustained rate.
double fractal_cycles(const HardwareProfile& p, double rate) {
  return static_cast<double>(p.cube_m) * p.cube_n * p.cube_k /
         (p.fp16_macs_per_cycle * rate * p.cube_efficiency);
}

}  // namespace

CubeTime cube_time(const CubeProduct& prod, const HardwareProfile& p, double rate, double operand_bytes) {
  CubeTime best;
  if (!(prod.count > 0) || prod.m <= 0 || prod.n <= 0 || prod.k <= 0) return best;
  const double hz = p.frequency_mhz * 1e6;
  const double k_steps = ceil_div(prod.k, p.cube_k);
  const double per_fractal = fractal_cycles(p, rate);
  // A core fills L1 at its share of the L2 bandwidth.
  const double load_bytes_per_cycle = p.l2_gbps * 1e9 / hz / p.ai_cores;
  // A tile's fp32 accumulators, double-buffered, must fit L0C.
  const int64_t accumulators = p.l0c / (2 * 4);
  double best_cycles = -1;
  for (int64_t tm = p.cube_m; tm <= side_limit(prod.m, p.cube_m); tm *= 2)
    for (int64_t tn = p.cube_n; tn <= side_limit(prod.n, p.cube_n); tn *= 2) {
      if (tm * tn > accumulators && !(tm == p.cube_m && tn == p.cube_n)) continue;
      const double tiles = prod.count * ceil_div(prod.m, tm) * ceil_div(prod.n, tn);
      const double waves = std::ceil(tiles / p.ai_cores);
      const double compute =
          static_cast<double>(tm / p.cube_m) * static_cast<double>(tn / p.cube_n) * k_steps * per_fractal;
      const double load =
          static_cast<double>(tm + tn) * k_steps * p.cube_k * operand_bytes / load_bytes_per_cycle;
      const double cycles = waves * (std::max(compute, load) + p.cube_tile_overhead_cycles);
      if (best_cycles < 0 || cycles < best_cycles) {
        best_cycles = cycles;
        best = {cycles / hz * 1e6, tm, tn, tiles, waves};
      }
    }
  return best;
}

CubeTime attention_time(const AttentionShape& a, const HardwareProfile& p, double rate) {
  CubeTime t;
  if (!(a.heads > 0) || a.s <= 0 || a.t <= 0 || a.d <= 0 || a.dv <= 0) return t;
  const double hz = p.frequency_mhz * 1e6;
  const int64_t bq = std::min<int64_t>(p.attention_block_q, round_up(a.s, p.cube_m));
  const int64_t bk = std::min<int64_t>(p.attention_block_kv, round_up(a.t, p.cube_n));
  const double tiles = a.heads * ceil_div(a.s, bq);
  const double waves = std::ceil(tiles / p.ai_cores);
  const double iterations = ceil_div(a.t, bk);
  // Per block pair: Q K^T and P V on the Cube (fractals of both products), the block's
  // softmax in fp32 on the core's share of the Vector units, pipelined; then the handoff.
  const double fractals = static_cast<double>(bq / p.cube_m) * static_cast<double>(bk / p.cube_n) *
                          (ceil_div(a.d, p.cube_k) + ceil_div(a.dv, p.cube_k));
  const double cube = fractals * fractal_cycles(p, rate);
  const double vector_share = static_cast<double>(p.vector_cores) / p.ai_cores;
  const double vector = static_cast<double>(bq) * static_cast<double>(bk) * p.attention_vector_ops * 4.0 /
                        (p.vector_bytes_per_cycle * vector_share * p.vector_efficiency);
  const double cycles =
      waves * (iterations * (std::max(cube, vector) + p.attention_sync_cycles) + p.cube_tile_overhead_cycles);
  t.us = cycles / hz * 1e6;
  t.tile_m = bq;
  t.tile_n = bk;
  t.tiles = tiles;
  t.waves = waves;
  return t;
}

}  // namespace geopt::ascend
