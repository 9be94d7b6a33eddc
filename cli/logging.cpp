#include "logging.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "geopt/geopt.h"

namespace geopt::cli {

void setup_logging(const std::string& level, int verbosity) {
  int lvl = static_cast<int>(spdlog::level::from_str(level));
  if (verbosity > 0) lvl = std::min(lvl, static_cast<int>(spdlog::level::info) - (verbosity - 1));
  const auto chosen = static_cast<spdlog::level::level_enum>(std::max(lvl, 0));
  api::set_log_level(std::string(spdlog::level::to_string_view(chosen).data(),
                                 spdlog::level::to_string_view(chosen).size()));
}

}  // namespace geopt::cli
