#pragma once
// What the fuzzers share: the bytes as a file (the readers under test take paths, as
// users give them), and the one rule for what may escape: geopt::Error is a refusal;
// anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace geopt::fuzz {

// A file of this process's own holding `bytes` (the same path each call), with `suffix`.
std::filesystem::path as_file(const uint8_t* data, size_t size, const std::string& suffix);

// Runs `f`, swallowing geopt::Error (bad input, refused: the expected outcome).
void refused_or_fine(const std::function<void()>& f);

}  // namespace geopt::fuzz
