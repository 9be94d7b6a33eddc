#pragma once
// spdlog set-up for the CLI: everything goes to stderr so stdout stays the report.
#include <string>

namespace geopt::cli {

inline const char* const kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};

// level: one of kLogLevels; verbosity (-v count) lowers it further: -v info, -vv debug, -vvv trace.
void setup_logging(const std::string& level, int verbosity);

}  // namespace geopt::cli
