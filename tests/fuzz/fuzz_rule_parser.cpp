// The .gerule parser and checker (dsl/): any text parses to rules or to diagnostics that
// carry a location, and what parses is checked without crashing.
#include "dsl/checker.h"
#include "dsl/parser.h"
#include "fuzz_support.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  geopt::fuzz::refused_or_fine([&] {
    geopt::dsl::ParseResult r = geopt::dsl::parse_rules(text, "fuzz.gerule");
    for (const auto& d : r.errors)
      if (d.loc.file != "fuzz.gerule") throw geopt::InternalError("a diagnostic without the file's location");
    if (!r.errors.empty()) return;
    std::vector<geopt::dsl::Diagnostic> diagnostics;
    geopt::dsl::check_rules({&r.file}, diagnostics);
  });
  return 0;
}
