#pragma once
// Matrix products shared by MatMul, Gemm and the fused kernels.
#include <optional>
#include <string>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

// Row-major C = alpha * op(A) op(B) + beta * C on oneDNN's sgemm.
void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              const float* b, float beta, float* c);
// The same with leading dimensions (rows of A, B and C lda, ldb, ldc elements apart).
void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// numpy matmul semantics (vector promotion, batch broadcasting).
HostTensor matmul(const KernelContext& ctx, const HostTensor& a, const HostTensor& b);
// act(A B + bias) on one oneDNN matmul primitive (engine/kernels/matmul_primitive.cpp),
// for f32 matrices (rank >= 2) and a bias of one value per column; nullopt otherwise,
// for the caller's plain path. Unknown activations fail as the kernel's error.
// `is_output`: the result is the kernel's output 0 (written where the caller keeps it).
std::optional<HostTensor> fused_matmul_f32(const KernelContext& ctx, const HostTensor& a, const HostTensor& b,
                                           const HostTensor* bias, const std::string& activation,
                                           const std::vector<float>& params, bool is_output = true);

}  // namespace geopt
