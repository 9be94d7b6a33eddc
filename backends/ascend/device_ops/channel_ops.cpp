// Channel data movement in NC1HWC0 ([N, C1, H, W, C0], `channels` of them real, the
// rest of the last block zero): the concatenation, split and shuffle of channels that
// ShuffleNet-style blocks do, without leaving the Cube's layout. A real channel c sits
// in block c / C0 at lane c % C0; these kernels move whole H x W planes of lanes and
// leave every padding lane zero, as a device kernel does.
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
// lanes this move writes (a concatenation's other input writes the rest). A shuffle's
// block draws on two or three source blocks: three instructions a position where the
// word loop moves sixteen lanes one by one (ShuffleNet v2's 116-channel shuffles).
struct LanePermute {
  int64_t src_block;  // its offset in blocks of the image
  uint16_t mask;      // the output lanes it gives
  int32_t index[16];  // for each of them, its lane in the source block
};

struct BlockPermute {
  std::vector<LanePermute> sources;  // at most one per lane
  uint16_t written = 0;              // the lanes this move writes
};

__attribute__((target("avx512f"))) void permute_block(const uint32_t* image, uint32_t* block, int64_t plane,
                                                      const BlockPermute& permute) {
  const std::vector<LanePermute>& sources = permute.sources;
  const uint16_t written = permute.written;
  const uint32_t* from[16];
  __m512i index[16];
  const size_t n = sources.size();  // at most one source block per lane
  for (size_t k = 0; k < n; ++k) {
    from[k] = image + sources[k].src_block * plane * 16;
    index[k] = _mm512_loadu_si512(sources[k].index);
  }
  for (int64_t p = 0; p < plane; ++p) {
    __m512i lanes = _mm512_setzero_si512();
    for (size_t k = 0; k < n; ++k)
      lanes = _mm512_mask_permutexvar_epi32(lanes, sources[k].mask, index[k],
                                            _mm512_loadu_si512(from[k] + p * 16));
    _mm512_mask_storeu_epi32(block + p * 16, written, lanes);
  }
}

bool has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// out channel first_out + k <- channel pick(k) of x (k < count), for each image and
// position. Lanes that come from consecutive lanes of one input block form a run (a
// concatenation or a slice moves runs of up to C0 lanes; a shuffle, runs of one), and
// each position copies its runs: C0 lanes apart in both tensors.
void move_channels(const HostTensor& x, const Blocked& in, HostTensor& out, int64_t count,
                   const std::function<int64_t(int64_t)>& pick, ChannelMoves how, int64_t first_out = 0) {
  struct Run {
    int64_t src_block, src_lane, dst_block, dst_lane, len;
  };
  std::vector<Run> runs;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t c = pick(k), ko = first_out + k;
    Run next{c / in.c0, c % in.c0, ko / in.c0, ko % in.c0, 1};
    if (!runs.empty()) {
      Run& last = runs.back();
      if (last.src_block == next.src_block && last.dst_block == next.dst_block &&
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
  // blocks of all images are shared among the threads.
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Run& a, const Run& b) { return a.dst_block < b.dst_block; });
  std::vector<std::pair<size_t, size_t>> groups;  // [first, end) of each output block's runs
  for (size_t first = 0, end; first < runs.size(); first = end) {
    for (end = first; end < runs.size() && runs[end].dst_block == runs[first].dst_block;) ++end;
    groups.emplace_back(first, end);
  }
  const int64_t elem = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t plane = in.h * in.w, out_c1 = out.dim(1), c0 = in.c0;
  const std::byte* src = x.raw();
  std::byte* dst = out.mutable_raw();
  const auto tasks = static_cast<int64_t>(groups.size()) * in.n;
  // Each output block's permutes, made once for every image: its source blocks, the lanes
  // each gives and from where.
  const bool permute = elem == 4 && c0 == 16 && how != ChannelMoves::words && has_avx512f();
  std::vector<BlockPermute> permutes(permute ? groups.size() : 0);
  for (size_t g = 0; g < permutes.size(); ++g)
    for (size_t r = groups[g].first; r < groups[g].second; ++r)
      for (int64_t i = 0; i < runs[r].len; ++i) {
        std::vector<LanePermute>& sources = permutes[g].sources;
        const int64_t lane = runs[r].dst_lane + i;
        auto it = std::find_if(sources.begin(), sources.end(),
                               [&](const LanePermute& s) { return s.src_block == runs[r].src_block; });
        if (it == sources.end()) it = sources.insert(sources.end(), LanePermute{runs[r].src_block, 0, {}});
        it->mask = static_cast<uint16_t>(it->mask | (1u << lane));
        it->index[lane] = static_cast<int32_t>(runs[r].src_lane + i);
        permutes[g].written = static_cast<uint16_t>(permutes[g].written | (1u << lane));
      }
#pragma omp parallel for schedule(dynamic) if (plane * c0 * tasks > (1 << 15))
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t n = task / static_cast<int64_t>(groups.size());
    const auto [first, end] = groups[static_cast<size_t>(task % static_cast<int64_t>(groups.size()))];
    std::byte* block = dst + (n * out_c1 + runs[first].dst_block) * plane * c0 * elem;
    const std::byte* image = src + n * in.c1 * plane * c0 * elem;
    if (end == first + 1 &&
        runs[first].len == c0) {  // a whole block (DenseNet's 32-channel features): one copy
      std::memcpy(block, image + runs[first].src_block * plane * c0 * elem,
                  static_cast<size_t>(plane * c0 * elem));
      continue;
    }
    if (permute) {
      permute_block(reinterpret_cast<const uint32_t*>(image), reinterpret_cast<uint32_t*>(block), plane,
                    permutes[static_cast<size_t>(task % static_cast<int64_t>(groups.size()))]);
      continue;
    }
    if (elem == 4) {  // f32, i32: each lane from its own source, copied as words
      std::vector<int64_t> lane, from;
      for (size_t r = first; r < end; ++r)
        for (int64_t i = 0; i < runs[r].len; ++i) {
          lane.push_back(runs[r].dst_lane + i);
          from.push_back(runs[r].src_block * plane * c0 + runs[r].src_lane + i);
        }
      const auto* s32 = reinterpret_cast<const uint32_t*>(image);
      auto* d32 = reinterpret_cast<uint32_t*>(block);
      const size_t lanes = lane.size();
      for (int64_t p = 0; p < plane; ++p)
        for (size_t k = 0; k < lanes; ++k) d32[p * c0 + lane[k]] = s32[from[k] + p * c0];
      continue;
    }
    for (int64_t p = 0; p < plane; ++p)
      for (size_t r = first; r < end; ++r)
        std::memcpy(block + (p * c0 + runs[r].dst_lane) * elem,
                    image + ((runs[r].src_block * plane + p) * c0 + runs[r].src_lane) * elem,
                    static_cast<size_t>(runs[r].len * elem));
  }
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

// Every lane is written: the real channels by the kernel, the padding by zero_padding.
HostTensor blocked_output(const KernelContext& ctx, const HostTensor& like, const Blocked& b,
                          int64_t channels) {
  HostTensor y = ctx.new_output(0, like.dtype(), {b.n, (channels + b.c0 - 1) / b.c0, b.h, b.w, b.c0});
  zero_padding(y, channels);
  return y;
}

// ShuffleNet's channel shuffle: the channels seen as [group, C / group], transposed.
void shuffle_channel(KernelContext& ctx) {
  const int64_t channels = ctx.attr_int("channels", 0), group = ctx.attr_int("group", 0);
  const HostTensor& x = ctx.input(0);
  const Blocked b = blocked_dims(ctx, x, channels, "X");
  if (group <= 0 || channels % group != 0)
    ctx.fail("group " + std::to_string(group) + " does not divide " + std::to_string(channels) + " channels");
  const int64_t per_group = channels / group;
  HostTensor y = blocked_output(ctx, x, b, channels);
  move_channels(
      x, b, y, channels, [&](int64_t k) { return (k % group) * per_group + k / group; }, ctx.tactic().moves);
  ctx.outputs[0] = std::move(y);
}

// Channels [start, start + count) of X.
void channel_slice(KernelContext& ctx) {
  const int64_t channels = ctx.attr_int("channels", 0), start = ctx.attr_int("start", 0),
                count = ctx.attr_int("count", 0);
  const HostTensor& x = ctx.input(0);
  const Blocked b = blocked_dims(ctx, x, channels, "X");
  if (start < 0 || count <= 0 || start > channels - count)
    ctx.fail("channels [" + std::to_string(start) + ", " + std::to_string(start + count) +
             ") are not within the input's " + std::to_string(channels));
  HostTensor y = blocked_output(ctx, x, b, count);
  move_channels(
      x, b, y, count, [&](int64_t k) { return start + k; }, ctx.tactic().moves);
  ctx.outputs[0] = std::move(y);
}

// The inputs' channels one after another (input i holds channels[i]).
void channel_concat(KernelContext& ctx) {
  const std::vector<int64_t> channels = ctx.attr_ints("channels", {});
  if (channels.size() != ctx.input_count())
    ctx.fail("`channels` lists " + std::to_string(channels.size()) + " counts for " +
             std::to_string(ctx.input_count()) + " inputs");
  int64_t total = 0;
  std::vector<Blocked> dims;
  for (size_t i = 0; i < channels.size(); ++i) {
    dims.push_back(blocked_dims(ctx, ctx.input(i), channels[i], ("input " + std::to_string(i)).c_str()));
    const Blocked& a = dims.front();
    const Blocked& d = dims.back();
    if (d.n != a.n || d.h != a.h || d.w != a.w || d.c0 != a.c0 ||
        ctx.input(i).dtype() != ctx.input(0).dtype())
      ctx.fail("input " + std::to_string(i) + " " + ctx.input(i).shape_string() + " does not fit input 0 " +
               ctx.input(0).shape_string());
    total += channels[i];
  }
  if (dims.empty()) ctx.fail("needs at least one input");
  HostTensor y = blocked_output(ctx, ctx.input(0), dims.front(), total);
  int64_t at = 0;
  for (size_t i = 0; i < channels.size(); ++i) {
    move_channels(
        ctx.input(i), dims[i], y, channels[i], [](int64_t k) { return k; }, ctx.tactic().moves, at);
    at += channels[i];
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

// Channel movement in NC1HWC0: each input holds `channels` real channels in
// ceil(channels / C0) blocks; the output's blocks hold its own count.
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
  auto positive = [](InferenceContext& ctx, const char* name) {
    const auto* a = ctx.getAttribute(name);
    if (!a || a->i() <= 0) fail_shape_inference(std::string("`") + name + "` must be positive");
    return a->i();
  };
  {
    OpSchema s = onnx_io::geopt_op(
        "ShuffleChannel",
        "ShuffleNet's channel shuffle on an NC1HWC0 tensor: its `channels` seen as [group, channels / group] "
        "and transposed, "
        "so output channel j = a * group + b is input channel b * (channels / group) + a.");
    numeric(s);
    s.Attr("group", "Groups the channels are shuffled across; divides `channels`.", AttributeProto::INT);
    s.Attr("channels", "Real channels of the input (and output).", AttributeProto::INT);
    s.Input(0, "X", "NC1HWC0 input.", "T").Output(0, "Y", "NC1HWC0 output, the shape of X.", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const int64_t channels = positive(ctx, "channels"), group = positive(ctx, "group");
      if (channels % group != 0) fail_shape_inference("`group` must divide `channels`");
      blocked_like_first(ctx, channels);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = onnx_io::geopt_op(
        "ChannelSlice",
        "Channels [start, start + count) of an NC1HWC0 tensor, repacked from block 0 (a split or slice along "
        "C at any offset).");
    numeric(s);
    s.Attr("channels", "Real channels of the input.", AttributeProto::INT);
    s.Attr("start", "First channel taken.", AttributeProto::INT, int64_t{0});
    s.Attr("count", "Channels taken.", AttributeProto::INT);
    s.Input(0, "X", "NC1HWC0 input.", "T").Output(0, "Y", "NC1HWC0 output holding `count` channels.", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const int64_t channels = positive(ctx, "channels"), count = positive(ctx, "count");
      const auto* start = ctx.getAttribute("start");
      const int64_t first = start ? start->i() : 0;
      if (first < 0 || first > channels - count)
        fail_shape_inference("[start, start + count) must lie within `channels`");
      blocked_like_first(ctx, count);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = onnx_io::geopt_op(
        "ChannelConcat",
        "NC1HWC0 tensors concatenated along their real channels (input i holds channels[i]), repacked so "
        "that no padding sits "
        "inside the result: a concatenation along C of inputs that are not whole C0 blocks.");
    numeric(s);
    s.Attr("channels", "Real channels of each input.", AttributeProto::INTS);
    s.Input(0, "X", "NC1HWC0 inputs of one N, H, W and C0.", "T", OpSchema::Variadic);
    s.Output(0, "Y", "NC1HWC0 output holding sum(channels).", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const auto* channels = ctx.getAttribute("channels");
      if (!channels || static_cast<size_t>(channels->ints_size()) != ctx.getNumInputs())
        fail_shape_inference("`channels` must give one count per input");
      int64_t total = 0;
      for (int64_t c : channels->ints()) {
        if (c <= 0) fail_shape_inference("channel counts must be positive");
        total += c;
      }
      blocked_like_first(ctx, total);
    });
    onnx::RegisterSchema(std::move(s));
  }
}

void add_channel_ops(OpRegistry& r) {
  add_device_op(r, "ShuffleChannel", shuffle_channel, /*half_via_f32=*/false);
  add_device_op(r, "ChannelSlice", channel_slice, /*half_via_f32=*/false);
  add_device_op(r, "ChannelConcat", channel_concat, /*half_via_f32=*/false);
  for (const char* op : {"ShuffleChannel", "ChannelSlice", "ChannelConcat"})
    r.set_tactic_knobs(kGeoptDomain, op, kTacticMoves);
}

}  // namespace geopt::ascend
