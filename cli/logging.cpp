#include "logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace geopt::cli {

void setup_logging(const std::string& level, int verbosity) {
  auto logger = spdlog::stderr_color_mt("geopt");
  logger->set_pattern("geopt: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  int lvl = static_cast<int>(spdlog::level::from_str(level));
  if (verbosity > 0) lvl = std::min(lvl, static_cast<int>(spdlog::level::info) - (verbosity - 1));
  spdlog::set_level(static_cast<spdlog::level::level_enum>(std::max(lvl, 0)));
}

}  // namespace geopt::cli
