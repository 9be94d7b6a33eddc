// geopt's log: spdlog to stderr, so a report on stdout stays clean.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "guard.h"
#include "util/error.h"

namespace geopt::api {
namespace {

// A program or a Python script hears of warnings and errors only, as the CLI's users do,
// until it asks for more.
const bool quiet_by_default = [] {
  spdlog::set_level(spdlog::level::warn);
  return true;
}();

}  // namespace

void set_log_level(const std::string& level) {
  guarded([&] {
    const auto lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off")
      throw geopt::UsageError("log level '" + level + "': expected trace, debug, info, warn, error or off");
    auto logger = spdlog::get("geopt");
    if (!logger) {
      logger = spdlog::stderr_color_mt("geopt");
      logger->set_pattern("geopt: %^%l%$: %v");
    }
    spdlog::set_default_logger(logger);
    spdlog::set_level(lvl);
  });
}

}  // namespace geopt::api
