#pragma once
// The API's Tensor (numpy's dtype names, bytes kept by an owner) and the host tensors
// the evaluator and the plan executor take, converted without copying.
#include <string>

#include "eval/host_tensor.h"
#include "geopt/geopt.h"

namespace geopt::api {

// "float32", "int64", "bfloat16", ...: numpy's names (bfloat16 as ml_dtypes names it).
std::string dtype_to_api(DType dtype);
// Throws geopt::Error naming `what` for a dtype geopt does not run.
DType dtype_from_api(const std::string& name, const std::string& what);

// A read-only view of the tensor's bytes (checked against its dtype and shape).
HostTensor host_view(const std::string& name, const Tensor& t);
// The host tensor's bytes, kept alive by the returned tensor.
Tensor api_tensor(HostTensor t);

}  // namespace geopt::api
