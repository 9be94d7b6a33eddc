#pragma once
// NumPy .npy files (format 1.0-3.0, C order, little-endian), for model inputs,
// outputs and reference data.
#include <filesystem>

#include "eval/host_tensor.h"

namespace geopt {

// Throws geopt::Error naming the file on any malformed or unsupported content.
HostTensor read_npy(const std::filesystem::path& path);
// Written atomically. bf16 is written as '<u2' bit patterns (NumPy has no bfloat16).
void write_npy(const std::filesystem::path& path, const HostTensor& t);
// A tensor read from .npy, as the dtype the model declares where the file can only hold
// it as bits: '<u2' read where bf16 is declared becomes bf16. Anything else as it is.
HostTensor as_declared_dtype(HostTensor t, DType declared);

}  // namespace geopt
