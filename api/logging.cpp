// geopt's log: spdlog to stderr, so a report on stdout stays clean.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "guard.h"
#include "util/error.h"

namespace geopt::api {
namespace {

std::shared_ptr<spdlog::logger> geopt_logger() {
  auto logger = spdlog::get("geopt");
  if (!logger) {
    logger = spdlog::stderr_color_mt("geopt");
    logger->set_pattern("geopt: %^%l%$: %v");
  }
  return logger;
}

// A program or a Python script hears of geopt's warnings and errors only, on stderr, as
// the CLI's users do, until it asks for more. geopt logs through spdlog's default logger:
// it takes it at load unless the program has set its own.
const bool quiet_by_default = [] {
  auto logger = geopt_logger();
  logger->set_level(spdlog::level::warn);
  if (spdlog::default_logger_raw()->name().empty()) spdlog::set_default_logger(logger);
  return true;
}();

}  // namespace

void set_log_level(const std::string& level) {
  guarded([&] {
    const auto lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off")
      throw geopt::UsageError("log level '" + level + "': expected trace, debug, info, warn, error or off");
    auto logger = geopt_logger();
    logger->set_level(lvl);
    spdlog::set_default_logger(logger);
  });
}

}  // namespace geopt::api
