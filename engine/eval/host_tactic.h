#pragma once
// How a host kernel runs where it has a choice that changes its speed, not its result
// beyond an fp32 sum's rounding: which convolution algorithm and memory layout oneDNN
// runs, whether a product packs its constant weight, and how many threads the kernel takes. Each kernel's own
// choice is the default; operator tuning (geopt tune --job_type 2) measures the others, and a plan's kernel
// carries the one it chose (plan.proto Kernel.host_tactic).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace geopt {

enum class ConvAlgorithm : uint8_t {
  automatic,  // the kernel's rule: Winograd for a dense 3x3 stride-1 conv of 48 channels and more,
              // geopt's own loops for a 1x1 conv over a 1x1 image, and for a depthwise conv
              // of more than one tap whose activation is Sigmoid, SiLU or QuickGelu
  direct,
  winograd,  // where oneDNN has no Winograd kernel for the shape, the direct conv runs
  geopt,     // geopt's own loops: a depthwise conv between channel-blocked tensors, a 1x1 conv over a 1x1
             // image (elsewhere, direct)
};

enum class ConvLayout : uint8_t {
  automatic,  // the caller's layouts (blocked; a first conv's NCHW image) where oneDNN has a jit kernel for
              // them, else oneDNN picks
  caller,     // the caller's layout (NCHW or nChw16c), converted nowhere
  onednn,     // what oneDNN picks (usually NHWC), converted to and from the caller's
  nhwc,       // channels last, converted to and from the caller's
  blocked,    // nChw16c, converted to and from the caller's
};

enum class ChannelMoves : uint8_t {
  automatic,  // permute where the machine has AVX-512, else words
  words,      // each lane copied as a word
  permute,    // per source block one vector lane permute (AVX-512; words elsewhere)
};

enum class WeightPacking : uint8_t {
  automatic,  // a constant B packed once into the layout oneDNN's matmul prefers, from its second product on
  plain,      // B read where it lies (row-major): the primitive packs the panels it needs on every call
};

// The knobs a kernel honours beyond `threads` (which the plan executor applies to every
// kernel), as bits of KernelInfo::tactic_knobs.
enum TacticKnob : unsigned {
  kTacticConv = 1u << 0,     // ConvAlgorithm and ConvLayout (a 2-D convolution; others ignore the layout)
  kTacticMoves = 1u << 1,    // ChannelMoves (a backend's channel moves in channel-blocked layouts)
  kTacticPacking = 1u << 2,  // WeightPacking (a product on oneDNN's matmul whose B is a constant)
};

struct HostTactic {
  ConvAlgorithm conv_algorithm = ConvAlgorithm::automatic;
  ConvLayout conv_layout = ConvLayout::automatic;
  ChannelMoves moves = ChannelMoves::automatic;
  int threads = 0;  // 0: the run's team; else this many, where the run has at least as many
  WeightPacking packing = WeightPacking::automatic;

  bool operator==(const HostTactic&) const = default;
};

// "algorithm=winograd,layout=nhwc,moves=words,threads=1,packing=plain", the knobs that differ from the
// default in that order; "" for the default.
std::string tactic_text(const HostTactic& tactic);
// The inverse of tactic_text; throws geopt::Error naming the text and the knob or
// value it does not know (a plan or knowledge bank from elsewhere).
HostTactic parse_tactic(std::string_view text);

// The values each knob takes, for the tuner's candidates and the docs.
const std::vector<std::pair<ConvAlgorithm, std::string_view>>& conv_algorithm_names();
const std::vector<std::pair<ConvLayout, std::string_view>>& conv_layout_names();
const std::vector<std::pair<ChannelMoves, std::string_view>>& channel_moves_names();
const std::vector<std::pair<WeightPacking, std::string_view>>& weight_packing_names();

// The most threads a tactic may ask for (a plan file is not trusted with more).
inline constexpr int kMaxTacticThreads = 1024;

}  // namespace geopt
