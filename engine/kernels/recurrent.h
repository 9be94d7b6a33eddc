#pragma once
// ONNX's RNN, GRU and LSTM as one validated problem, shared by the two ways of
// computing it: oneDNN's RNN primitives where the node's attributes fit them, and
// a general loop over the steps for everything ONNX allows beyond that.
#include <string>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

enum class Cell { Rnn, Gru, Lstm };

struct ActivationSpec {
  std::string name;
  float alpha = 0, beta = 0;
  bool has_alpha = false, has_beta = false;
};

// Everything sequence-first: X [T, B, I], states [dirs, B, H].
struct RecurrentProblem {
  Cell cell = Cell::Rnn;
  int64_t gates = 1;
  int dirs = 1;
  bool reverse_only = false;  // direction "reverse"
  int64_t steps = 0, batch = 0, input = 0, hidden = 0;
  HostTensor x, h0, c0;
  const HostTensor* w = nullptr;     // [dirs, G*H, I], ONNX's gate order
  const HostTensor* r = nullptr;     // [dirs, G*H, H]
  const HostTensor* bias = nullptr;  // [dirs, 2*G*H] (Wb then Rb), or none
  const HostTensor* peep = nullptr;  // LSTM [dirs, 3*H] (i, o, f), or none
  std::vector<int64_t> lens;         // per batch entry
  bool has_clip = false;
  float clip = 0;
  bool linear_before_reset = false, input_forget = false;
  std::vector<std::vector<ActivationSpec>> activations;  // per direction
};

// Outputs, sequence-first: Y [T, dirs, B, H], Y_h and Y_c [dirs, B, H].
struct RecurrentResult {
  HostTensor y, yh, yc;
};

// Whether oneDNN's primitives compute this problem exactly as ONNX defines it:
// f32, the default activations (or Relu/Tanh/Sigmoid for RNN), no clip, no coupled
// input-forget gate, and every sequence at full length.
bool recurrent_primitive_fits(const RecurrentProblem& p);
// One primitive per direction; constant weights reordered into its layout once per model
// and layout (primitives are cached per shape, as the conv's are).
RecurrentResult run_recurrent_primitive(const RecurrentProblem& p);

}  // namespace geopt
