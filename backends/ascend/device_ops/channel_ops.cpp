// Channel data movement in NC1HWC0 ([N, C1, H, W, C0], `channels` of them real, the
// rest of the last block zero): the concatenation, split and shuffle of channels that
// ShuffleNet-style blocks do, without leaving the Cube's layout, as one op (ChannelMove).
// A real channel c sits in block c / C0 at lane c % C0; the kernel moves whole H x W
// planes of lanes and leaves every padding lane zero, as a device kernel does.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "device_ops/device_ops.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "ir/node.h"
#include "layout.h"
#include "onnx/schema_helpers.h"
#include "util/cpu_features.h"
#include "util/team_region.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

struct Blocked {
  int64_t n = 0, c1 = 0, h = 0, w = 0, c0 = 0;
};

Blocked blocked_dims(const KernelContext& ctx, const HostTensor& x, int64_t channels, const char* what) {
  if (x.rank() != 5) ctx.fail(std::string(what) + " must be NC1HWC0 (rank 5), not " + x.shape_string());
  Blocked b{x.dim(0), x.dim(1), x.dim(2), x.dim(3), x.dim(4)};
  // channels in (c1 - 1) * c0 + 1 .. c1 * c0: compared against the (small) tensor dims, no overflow.
  if (channels <= 0 || b.c0 <= 0 || b.c1 <= 0 || channels > b.c1 * b.c0 || channels <= (b.c1 - 1) * b.c0)
    ctx.fail(std::string(what) + " " + x.shape_string() + " does not hold " + std::to_string(channels) +
             " channels in blocks of " + std::to_string(b.c0));
  return b;
}

// One output block of 16 four-byte lanes at every position, as AVX-512 moves it: per
// source block a masked lane permute into one register, then one masked store of the
// lanes this move writes. A shuffle's block draws on two or three source blocks, of one
// input or of several: three instructions a position where the word loop moves sixteen
// lanes one by one (ShuffleNet v2's 116-channel shuffles).
struct LanePermute {
  const uint32_t* src_block;  // the source block of this image, any input
  uint16_t mask;              // the output lanes it gives
  int32_t index[16];          // for each of them, its lane in the source block
};

__attribute__((target("avx512f"))) void permute_block(uint32_t* block, int64_t plane,
                                                      const std::vector<LanePermute>& sources,
                                                      uint16_t written) {
  const uint32_t* from[16];
  __mmask16 mask[16];
  __m512i index[16];
  const size_t n = std::min<size_t>(sources.size(), 16);  // at most one source block per lane
  for (size_t k = 0; k < n; ++k) {
    from[k] = sources[k].src_block;
    mask[k] = sources[k].mask;
    index[k] = _mm512_loadu_si512(sources[k].index);
  }
  for (int64_t p = 0; p < plane; ++p) {
    __m512i lanes = _mm512_setzero_si512();
    for (size_t k = 0; k < n; ++k)
      lanes = _mm512_mask_permutexvar_epi32(lanes, mask[k], index[k], _mm512_loadu_si512(from[k] + p * 16));
    _mm512_mask_storeu_epi32(block + p * 16, written, lanes);
  }
}

// Where an output channel comes from: an input and its channel.
struct ChannelSource {
  size_t input;
  int64_t channel;
};

// Output channel k <- pick(k) (k < count), for each image and position. Lanes that come
// from consecutive lanes of one input block form a run (a concatenation or a slice moves
// runs of up to C0 lanes; a shuffle, runs of one), and each position copies its runs: C0
// lanes apart in both tensors. Every output lane past `count` is left as it is.
void move_channels(const std::vector<const HostTensor*>& xs, const std::vector<Blocked>& in, HostTensor& out,
                   int64_t count, const std::function<ChannelSource(int64_t)>& pick, ChannelMoves how) {
  struct Run {
    size_t src;
    int64_t src_block, src_lane, dst_block, dst_lane, len;
  };
  const int64_t c0 = out.dim(4);
  std::vector<Run> runs;
  for (int64_t k = 0; k < count; ++k) {
    const ChannelSource from = pick(k);
    Run next{from.input, from.channel / c0, from.channel % c0, k / c0, k % c0, 1};
    if (!runs.empty()) {
      Run& last = runs.back();
      if (last.src == next.src && last.src_block == next.src_block && last.dst_block == next.dst_block &&
          last.src_lane + last.len == next.src_lane && last.dst_lane + last.len == next.dst_lane) {
        ++last.len;
        continue;
      }
    }
    runs.push_back(next);
  }
  // Each output block's runs are copied position by position: the output is written in
  // order and each position's source lanes are read together (run by run over the whole
  // plane, a shuffle's runs of one lane would sweep the tensor once per channel). The
  // blocks of all images are shared among the threads. Runs are made in output order, so
  // each output block's runs are consecutive.
  std::vector<std::pair<size_t, size_t>> groups;  // [first, end) of each output block's runs
  for (size_t first = 0, end; first < runs.size(); first = end) {
    for (end = first; end < runs.size() && runs[end].dst_block == runs[first].dst_block;) ++end;
    groups.emplace_back(first, end);
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(out.dtype()));
  const int64_t plane = out.dim(2) * out.dim(3), out_c1 = out.dim(1), images = out.dim(0);
  // The start of image n of input i.
  auto image = [&](size_t i, int64_t n) { return xs[i]->raw() + n * in[i].c1 * plane * c0 * elem; };
  std::byte* dst = out.mutable_raw();
  const auto blocks = static_cast<int64_t>(groups.size());
  const bool permute = elem == 4 && c0 == 16 && how != ChannelMoves::words && cpu_has_avx512f();
  team_region(plane * c0 * blocks * images > (1 << 15), [&] {
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < blocks * images; ++task) {
      const int64_t n = task / blocks;
      const auto [first, end] = groups[static_cast<size_t>(task % blocks)];
      std::byte* block = dst + (n * out_c1 + runs[first].dst_block) * plane * c0 * elem;
      auto source = [&](const Run& r) { return image(r.src, n) + r.src_block * plane * c0 * elem; };
      if (end == first + 1 &&
          runs[first].len == c0) {  // a whole block (DenseNet's 32-channel features): one copy
        std::memcpy(block, source(runs[first]), static_cast<size_t>(plane * c0 * elem));
        continue;
      }
      if (permute) {  // this block's source blocks, the lanes each gives and from where
        std::vector<LanePermute> sources;
        uint16_t written = 0;
        for (size_t r = first; r < end; ++r) {
          const auto* from = reinterpret_cast<const uint32_t*>(source(runs[r]));
          auto it = std::find_if(sources.begin(), sources.end(),
                                 [&](const LanePermute& s) { return s.src_block == from; });
          if (it == sources.end()) it = sources.insert(sources.end(), LanePermute{from, 0, {}});
          for (int64_t i = 0; i < runs[r].len; ++i) {
            const int64_t lane = runs[r].dst_lane + i;
            it->mask = static_cast<uint16_t>(it->mask | (1u << lane));
            it->index[lane] = static_cast<int32_t>(runs[r].src_lane + i);
            written = static_cast<uint16_t>(written | (1u << lane));
          }
        }
        permute_block(reinterpret_cast<uint32_t*>(block), plane, sources, written);
        continue;
      }
      if (elem == 4) {  // f32, i32: each lane from its own source, copied as words
        std::vector<int64_t> lane;
        std::vector<const uint32_t*> from;
        for (size_t r = first; r < end; ++r)
          for (int64_t i = 0; i < runs[r].len; ++i) {
            lane.push_back(runs[r].dst_lane + i);
            from.push_back(reinterpret_cast<const uint32_t*>(source(runs[r])) + runs[r].src_lane + i);
          }
        auto* d32 = reinterpret_cast<uint32_t*>(block);
        const size_t lanes = lane.size();
        for (int64_t p = 0; p < plane; ++p)
          for (size_t k = 0; k < lanes; ++k) d32[p * c0 + lane[k]] = from[k][p * c0];
        continue;
      }
      for (int64_t p = 0; p < plane; ++p)
        for (size_t r = first; r < end; ++r)
          std::memcpy(block + (p * c0 + runs[r].dst_lane) * elem,
                      source(runs[r]) + (p * c0 + runs[r].src_lane) * elem,
                      static_cast<size_t>(runs[r].len * elem));
    }
  });
}

// Zeroes the lanes past `channels` in the last block of every image and position.
void zero_padding(HostTensor& y, int64_t channels) {
  const int64_t n = y.dim(0), c1 = y.dim(1), plane = y.dim(2) * y.dim(3), c0 = y.dim(4),
                real = channels - (c1 - 1) * c0;
  if (real >= c0) return;
  const size_t elem = dtype_size(y.dtype());
  std::byte* base = y.mutable_raw();
  for (int64_t b = 0; b < n; ++b) {
    std::byte* block = base + ((b * c1 + c1 - 1) * plane * c0 + real) * static_cast<int64_t>(elem);
    for (int64_t p = 0; p < plane; ++p)
      std::memset(block + p * c0 * static_cast<int64_t>(elem), 0, static_cast<size_t>(c0 - real) * elem);
  }
}

// The one channel movement of NC1HWC0: the inputs' channels concatenated (input i holds
// channels[i]), shuffled across `group` groups (the concatenation seen as [group, total /
// group] and transposed), and channels [start, start + count) of that taken (count 0: to
// the end). A Concat, a Slice and ShuffleNet's shuffle are each one case; a unit's
// concatenation, shuffle and split is one pass, where three kernels write the tensor three
// times.
void channel_move(KernelContext& ctx) {
  const std::vector<int64_t> channels = ctx.attr_ints("channels", {});
  const int64_t group = ctx.attr_int("group", 1), start = ctx.attr_int("start", 0);
  if (channels.size() != ctx.input_count() || channels.empty())
    ctx.fail("`channels` lists " + std::to_string(channels.size()) + " counts for " +
             std::to_string(ctx.input_count()) + " inputs");
  int64_t total = 0;
  std::vector<Blocked> dims;
  std::vector<const HostTensor*> xs;
  std::vector<int64_t> offset;  // the first concatenated channel of each input
  for (size_t i = 0; i < channels.size(); ++i) {
    xs.push_back(&ctx.input(i));
    dims.push_back(blocked_dims(ctx, ctx.input(i), channels[i], ("input " + std::to_string(i)).c_str()));
    const Blocked& a = dims.front();
    const Blocked& d = dims.back();
    if (d.n != a.n || d.h != a.h || d.w != a.w || d.c0 != a.c0 ||
        ctx.input(i).dtype() != ctx.input(0).dtype())
      ctx.fail("input " + std::to_string(i) + " " + ctx.input(i).shape_string() + " does not fit input 0 " +
               ctx.input(0).shape_string());
    offset.push_back(total);
    total += channels[i];
  }
  if (group <= 0 || total % group != 0)
    ctx.fail("group " + std::to_string(group) + " does not divide " + std::to_string(total) + " channels");
  const int64_t given = ctx.attr_int("count", 0);
  // Compared without forming start + count: a hostile plan's may overflow.
  if (start < 0 || start >= total || given < 0 || given > total - start)
    ctx.fail("channels from " + std::to_string(start) + " (count " + std::to_string(given) +
             ") are not within the " + std::to_string(total) + " moved");
  const int64_t count = given == 0 ? total - start : given;
  const int64_t per_group = total / group;
  const Blocked& b = dims.front();
  HostTensor y = ctx.new_output(0, ctx.input(0).dtype(), {b.n, (count + b.c0 - 1) / b.c0, b.h, b.w, b.c0});
  zero_padding(y, count);  // every lane is written: the real channels below, the padding here
  move_channels(
      xs, dims, y, count,
      [&](int64_t k) {
        const int64_t j = start + k, c = (j % group) * per_group + j / group;
        const size_t i =
            static_cast<size_t>(std::upper_bound(offset.begin(), offset.end(), c) - offset.begin() - 1);
        return ChannelSource{i, c - offset[i]};
      },
      ctx.tactic().moves);
  ctx.outputs[0] = std::move(y);
}

}  // namespace

// Channel movement in NC1HWC0: each input holds `channels` real channels in
// ceil(channels / C0) blocks; the output's blocks hold the count taken.
void register_channel_ops_schemas() {
  auto numeric = [](OpSchema& s) { s.TypeConstraint("T", onnx_io::kNumericTypes, "Any numeric tensor."); };
  // The output of an NC1HWC0 op: input 0's N, H, W and C0, blocks for `channels`.
  auto blocked_like_first = [](InferenceContext& ctx, int64_t channels) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = ctx.getInputType(0)->tensor_type().shape();
    if (in.dim_size() != 5) fail_shape_inference("an NC1HWC0 input has rank 5");
    const int64_t c0 = in.dim(4).has_dim_value()
                           ? in.dim(4).dim_value()
                           : c0_for(static_cast<DType>(ctx.getInputType(0)->tensor_type().elem_type()));
    onnx::TensorShapeProto out;
    *out.add_dim() = in.dim(0);
    out.add_dim()->set_dim_value((channels + c0 - 1) / c0);
    *out.add_dim() = in.dim(2);
    *out.add_dim() = in.dim(3);
    out.add_dim()->set_dim_value(c0);
    onnx::updateOutputShape(ctx, 0, out);
  };
  OpSchema s = onnx_io::geopt_op(
      "ChannelMove",
      "Channel movement in NC1HWC0: the inputs' real channels concatenated (input i holds channels[i]), "
      "shuffled across `group` groups (the concatenation seen as [group, total / group] and transposed, so "
      "channel j = a * group + b is concatenated channel b * (total / group) + a), and channels [start, "
      "start + "
      "count) of that taken, repacked from block 0 (count 0: to the end). A channel Concat of inputs that "
      "are "
      "not whole C0 blocks, a Slice along C at any offset, ShuffleNet's shuffle, and any of them one after "
      "the "
      "other, in one pass.");
  numeric(s);
  s.Attr("channels", "Real channels of each input.", AttributeProto::INTS);
  s.Attr("group", "Groups the concatenated channels are shuffled across (1: none); divides their total.",
         AttributeProto::INT, int64_t{1});
  s.Attr("start", "First channel taken, after the shuffle.", AttributeProto::INT, int64_t{0});
  s.Attr("count", "Channels taken (0: every one from `start`).", AttributeProto::INT, int64_t{0});
  s.Input(0, "X", "NC1HWC0 inputs of one N, H, W and C0.", "T", OpSchema::Variadic);
  s.Output(0, "Y", "NC1HWC0 output holding the channels taken.", "T");
  s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
    const auto* channels = ctx.getAttribute("channels");
    if (!channels || static_cast<size_t>(channels->ints_size()) != ctx.getNumInputs())
      fail_shape_inference("`channels` must give one count per input");
    int64_t total = 0;
    for (int64_t c : channels->ints()) {
      // Positive, and far from overflowing their sum (a hostile model's counts).
      if (c <= 0 || c > (int64_t{1} << 40)) fail_shape_inference("channel counts must be from 1 to 2^40");
      total += c;
    }
    const int64_t group = onnx::getAttribute(ctx, "group", int64_t{1}),
                  start = onnx::getAttribute(ctx, "start", int64_t{0}),
                  given = onnx::getAttribute(ctx, "count", int64_t{0});
    if (group <= 0 || total % group != 0) fail_shape_inference("`group` must divide the channels' total");
    if (start < 0 || start >= total || given < 0 || given > total - start)
      fail_shape_inference("[start, start + count) must lie within the channels' total");
    blocked_like_first(ctx, given == 0 ? total - start : given);
  });
  onnx::RegisterSchema(std::move(s));
}

void add_channel_ops(OpRegistry& r) {
  add_device_op(r, "ChannelMove", channel_move, /*half_via_f32=*/false);
  r.set_tactic_knobs(kGeoptDomain, "ChannelMove", kTacticMoves);
}

}  // namespace geopt::ascend
