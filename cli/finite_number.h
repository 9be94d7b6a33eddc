#pragma once
// A CLI11 check that a number option is finite: NonNegativeNumber lets NaN through
// (NaN < 0 is false), and a NaN tolerance fails every comparison.
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace geopt::cli {

inline const CLI::Validator kFiniteNumber(
    [](std::string& text) -> std::string {
      try {
        size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size() && std::isfinite(v)) return {};
      } catch (const std::exception&) {
      }
      return "'" + text + "' is not a finite number";
    },
    "FINITE");

}  // namespace geopt::cli
