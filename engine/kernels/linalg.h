#pragma once
// Matrix products shared by MatMul, Gemm and the fused kernels.
#include "eval/kernel.h"

namespace geopt {

// Row-major C = alpha * op(A) op(B) + beta * C on oneDNN's sgemm.
void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, const float* b,
              float beta, float* c);
// numpy matmul semantics (vector promotion, batch broadcasting).
HostTensor matmul(const KernelContext& ctx, const HostTensor& a, const HostTensor& b);

}  // namespace geopt
