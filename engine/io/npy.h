#pragma once
// NumPy .npy files (format 1.0-3.0, C order, little-endian), for model inputs,
// outputs and reference data.
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "eval/host_tensor.h"

namespace geopt {

// Throws geopt::Error naming the file on any malformed or unsupported content.
HostTensor read_npy(const std::filesystem::path& path);
// Written atomically. bf16 is written as '<u2' bit patterns (NumPy has no bfloat16).
void write_npy(const std::filesystem::path& path, const HostTensor& t);
// A tensor read from .npy, as the dtype the model declares where the file can only hold
// it as bits: '<u2' read where bf16 is declared becomes bf16. Anything else as it is.
HostTensor as_declared_dtype(HostTensor t, DType declared);

// The file a tensor of this name is kept in inside a folder of .npy files: the name with
// '/', ':' and other characters unsafe in file names as '_' (exporters name values after
// modules), then ".npy". `geopt run --save-inputs` and `--output-dir` write these.
std::string npy_file_name(const std::string& value_name);

// The file of each value in one folder: npy_file_name, made unique. Where two names map
// to one file ('a/b' and 'a_b'), those after the first in name order get "~2", "~3", ...
// before ".npy" ('~' is in no npy_file_name).
std::map<std::string, std::string> npy_file_names(const std::vector<std::string>& value_names);

// Writes each (value name, tensor) as FOLDER/<npy_file_names>, all of them or none: into a
// temporary folder inside FOLDER first, then each renamed into place. Returns a line per
// value whose file name had to be made unique, for the caller to say so.
std::vector<std::string> write_npy_folder(
    const std::filesystem::path& folder,
    const std::vector<std::pair<std::string, const HostTensor*>>& tensors);

// Every FOLDER/<stem>.npy, by stem (other files are ignored). Throws geopt::Error naming
// the folder when it is not one.
std::map<std::string, HostTensor> read_npy_folder(const std::filesystem::path& folder);

}  // namespace geopt
