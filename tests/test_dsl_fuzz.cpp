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
  // Each file as its rules, each from its `rule` line to the next one's. A mutant is one
  // to three consecutive rules: every construct the files use, at a cost per mutant that
  // does not grow with the files (whole files took 118 s under the sanitizers, CI's
  // longest test, once quantize.gerule held 60 rules).
  std::vector<std::vector<std::string>> files;
  for (const auto& e : fs::directory_iterator(test::shipped_rules())) {
    if (e.path().extension() != ".gerule") continue;
    const std::string text = test::read_file(e.path());
    std::vector<std::string> rules;
    size_t at = text.rfind("rule ", 0) == 0 ? 0 : text.find("\nrule ");
    while (at != std::string::npos) {
      const size_t next = text.find("\nrule ", at + 1);
      rules.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
      at = next;
    }
    if (!rules.empty()) files.push_back(std::move(rules));
  }
  REQUIRE(!files.empty());
  const std::string alphabet = "(){}[],%=<>!~.#\"\n\t 0123456789eE+-_*abcxyzMatchRule";
  const std::vector<std::string> tokens = {"rule",  "match", "let",  "where", "rewrite", "=>",     "...",
                                           "const", "fold",  "test", "model", "expect",  "\"\"\"", "in",
                                           "..",    "+-",    "[0]",  "{",     "}"};
  std::mt19937 rng(20261129);
  int parsed_clean = 0, with_errors = 0;
  const int iterations = 10000;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    const std::vector<std::string>& rules = files[rng() % files.size()];
    const size_t first = rng() % rules.size(), count = 1 + rng() % 3;
    std::string text;
    for (size_t i = first; i < std::min(rules.size(), first + count); ++i) text += rules[i];
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
