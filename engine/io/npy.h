#pragma once
// NumPy .npy files (format 1.0-3.0, C order, little-endian), for model inputs,
// outputs and reference data.
#include <filesystem>

#include "eval/host_tensor.h"

namespace geopt {

// Throws geopt::Error naming the file on any malformed or unsupported content.
HostTensor read_npy(const std::filesystem::path& path);
// Written atomically.
void write_npy(const std::filesystem::path& path, const HostTensor& t);

}  // namespace geopt
