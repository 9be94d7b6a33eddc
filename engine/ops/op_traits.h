#pragma once
// What the compiler's passes must know of an op beyond its schema, held in each op's
// entry of the op registry (ops/op_registry.h) instead of a list of names beside each
// pass: the cost model and the memory planner agree on what a view is, the matcher and
// the memory planner on what an elementwise op is.
#include <optional>
#include <string_view>

namespace geopt {

// The graphs an op runs (ONNX's control flow): passes that type, lower or inline its
// bodies handle each kind.
enum class ControlFlow { None, If, Loop, Scan };

struct OpTraits {
  // Output 0 holds input 0's bytes as they are, under another shape (Reshape, Squeeze,
  // Unsqueeze, Flatten, Identity, Dropout at inference): no kernel moves them, and the
  // memory plan places the output where the input is. (A Transpose or Split is a view only
  // for some shapes: ascend::is_view_transpose and is_view_split decide those.)
  bool view = false;
  // Its outputs follow from shapes and attributes (Shape, Size, Constant): folded or
  // computed on the host, never a device kernel.
  bool shape_only = false;
  // Each output element reads only the inputs' elements at its own (broadcast) position, so
  // its output may take the bytes of any input that dies at it.
  bool elementwise = false;
  // An input whose bytes the output may take when it dies at the node, read element by
  // element where the output is written (a fused conv's residual).
  std::optional<size_t> in_place_input;
  // Two operands that may swap (Add, Mul, Max, ...): the matcher tries both orders.
  bool commutative = false;
  // Draws random values: never folded, never merged with another node.
  bool random = false;
  // Computes each index of its output's axis 0 from the same index of its inputs' axis 0
  // alone, unless an axis attribute names axis 0 (convs, pools, norms, softmax, concat,
  // resize, batched products): a batch may run slice by slice. Elementwise ops too.
  bool per_sample = false;
  // Slides a window over dims 2.. of input 0 (kernel_shape, strides, dilations, pads,
  // auto_pad): the convs and pools (not ConvTranspose, whose pads crop its output).
  bool sliding_window = false;
  // The input whose dims 2.. are the window where kernel_shape is not given (Conv's W: 1).
  std::optional<size_t> window_weights;
  // Runs graphs of its own, and how (its inputs and outputs differ by kind).
  ControlFlow control_flow = ControlFlow::None;
  // ONNX's Constant: its output is its attribute's value (folded, priced as a weight).
  bool constant = false;
  // Reads only the input elements it copies out (Gather, Slice): an embedding lookup
  // reads its rows, not the table.
  bool reads_what_it_writes = false;
  // Multiplies 8-bit operands (input 0 and a weight) and sums the products in int32
  // (ConvInteger, QLinearMatMul, QuantConv, ...): the Cube's int8 rate.
  bool integer_products = false;

  // Whether output 0 may take input `input`'s bytes.
  bool may_run_in_place(size_t input) const { return elementwise || in_place_input == input; }
};

class OpRegistry;

// Sets the traits of engine's ops (ONNX's standard ops and the hardware-independent
// ai.geopt ops) in `registry`; a backend sets its own ops'.
void register_standard_traits(OpRegistry& registry);

// The traits of one of engine's ops, for code that asks before any registry exists (a
// node's nondeterminism, the rule checker's commutative operands, window attributes):
// what register_standard_traits sets ("" and "ai.onnx" are one domain).
const OpTraits& standard_op_traits(std::string_view domain, std::string_view op);

class Node;
// The control flow of a node's op, and whether it is ONNX's Constant (standard_op_traits).
ControlFlow control_flow_of(const Node& n);
bool is_constant_node(const Node& n);

}  // namespace geopt
