#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace geopt::cli {

api::Progress progress_bar(bool enabled) {
  if (!enabled) return {};
  using Clock = std::chrono::steady_clock;
  struct Stage {
    std::string name;
    Clock::time_point started;
  };
  auto stage = std::make_shared<Stage>();
  const bool tty = isatty(fileno(stderr)) != 0;
  return [tty, stage](std::string_view name, size_t done, size_t total) {
    if (stage->name != name) *stage = {std::string(name), Clock::now()};
    done = std::min(done, total);
    const double elapsed = std::chrono::duration<double>(Clock::now() - stage->started).count();
    if (tty) {
      const size_t width = 30, filled = total ? done * width / total : width;
      std::string eta;
      if (done > 0 && done < total) {
        const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
        eta = " ETA " + std::to_string(static_cast<long>(left + 0.5)) + " s";
      }
      std::fprintf(stderr, "\r%-40.40s [%s%s] %zu/%zu%-12s", stage->name.c_str(),
                   std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done, total,
                   eta.c_str());
      if (done == total) std::fputc('\n', stderr);
    } else if (done == total) {
      std::fprintf(stderr, "%s: %zu step(s), %.1f s\n", stage->name.c_str(), total, elapsed);
    }
    std::fflush(stderr);
  };
}

}  // namespace geopt::cli
