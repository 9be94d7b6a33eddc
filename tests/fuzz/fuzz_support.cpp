#include "fuzz_support.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "ascend/device_ops/device_ops.h"
#include "util/error.h"

namespace geopt::fuzz {

std::filesystem::path as_file(const uint8_t* data, size_t size, const std::string& suffix) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("geopt-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() / ("geopt-fuzz-" + std::to_string(::getpid())), ignored);
    });
    return d;
  }();
  const auto path = dir / ("input" + suffix);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

void refused_or_fine(const std::function<void()>& f) {
  ascend::register_op_schemas();  // as every entry point does before reading anything
  try {
    f();
  } catch (const Error&) {
  }
}

}  // namespace geopt::fuzz
