#pragma once
// The fused computations of engine's kernels that a backend's ops wrap with operands in
// layouts of their own (a backend's matmul whose B is packed for its matrix unit).
#include "eval/kernel.h"

namespace geopt {

// activation(A x B + Bias) with ONNX MatMul broadcasting: A is input 0, the optional
// Bias input 2, the activation from the attributes `activation` and `activation_params`;
// B as given (plain [..., K, N]).
HostTensor fused_matmul_output(KernelContext& ctx, const HostTensor& b);

}  // namespace geopt
