#pragma once
// Sliding-window ops (Conv, ConvInteger, QLinearConv, MaxPool, AveragePool, LpPool) with
// ONNX's defaults left out or with auto_pad, rewritten to one form: explicit strides and
// pads (and for the convs dilations and kernel_shape), and auto_pad's VALID, SAME_UPPER
// and SAME_LOWER resolved into the pads they mean where the input's spatial dims are
// static. tf2onnx writes auto_pad and leaves pads out
// where torch writes them all; in one form, a rule that reads `pads == %p` (a pool moving
// into a device layout) matches both exporters' graphs.
#include <cstddef>

#include "ir/graph.h"

namespace geopt {

// Rewrites the graph's window ops in place (not its bodies); returns how many changed.
size_t make_window_attributes_explicit(Graph& graph);

}  // namespace geopt
