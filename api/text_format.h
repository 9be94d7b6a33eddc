#pragma once
// printf into a std::string: the text reports are built as the CLI printed them.
#include <cstdarg>
#include <cstdio>
#include <string>

namespace geopt::api {

__attribute__((format(printf, 2, 3))) inline void appendf(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data() + at, static_cast<size_t>(n) + 1, format, again);
    out.resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

}  // namespace geopt::api
