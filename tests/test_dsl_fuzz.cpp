// Mutated rule files never crash the parser or the checker, and every error
// they report has a real location. Deterministic (fixed seed, fixed count); CI
// also runs it under ASan and UBSan.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "dsl/checker.h"
#include "dsl/parser.h"
#include "dsl_support.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

TEST_CASE("fuzz: mutated rule files give located errors, never a crash") {
  std::vector<std::string> sources;
  for (const auto& e : fs::directory_iterator(test::shipped_rules()))
    if (e.path().extension() == ".gerule") sources.push_back(test::read_file(e.path()));
  REQUIRE(!sources.empty());
  const std::string alphabet = "(){}[],%=<>!~.#\"\n\t 0123456789eE+-_*abcxyzMatchRule";
  const std::vector<std::string> tokens = {"rule",  "match", "let",  "where", "rewrite", "=>",     "...",
                                           "const", "fold",  "test", "model", "expect",  "\"\"\"", "in",
                                           "..",    "+-",    "[0]",  "{",     "}"};
  std::mt19937 rng(20261129);
  int parsed_clean = 0, with_errors = 0;
  // 4000 mutants: each parses and checks every rule of a shipped file, and under the
  // sanitizers (where this test matters most) that is the longest test CI runs.
  const int iterations = 4000;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    std::string text = sources[rng() % sources.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      size_t at = rng() % text.size();
      switch (rng() % 5) {
        case 0:
          text.erase(at, 1 + rng() % 12);
          break;
        case 1:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 2:
          text.insert(at, tokens[rng() % tokens.size()]);
          break;
        case 3:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 4: {
          size_t len = std::min<size_t>(1 + rng() % 40, text.size() - at);
          text.insert(rng() % text.size(), text.substr(at, len));
          break;
        }
      }
    }
    dsl::ParseResult r = dsl::parse_rules(text, "fuzz.gerule");
    std::vector<dsl::Diagnostic> errors = r.errors;
    dsl::check_rules({&r.file}, errors);
    for (const auto& d : errors) {
      INFO("iteration " << iteration << ": " << d.message);
      REQUIRE(d.loc.line >= 1);
      REQUIRE(d.loc.column >= 1);
      REQUIRE(!dsl::format_diagnostic(d, text).empty());
    }
    (errors.empty() ? parsed_clean : with_errors)++;
  }
  MESSAGE("fuzz: " << with_errors << " mutants with errors, " << parsed_clean << " still valid");
  CHECK(with_errors > iterations * 3 / 10);  // the mutations really break things
}
