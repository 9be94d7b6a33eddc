// A bounded mutation fuzzer over every kind of file geopt reads: models (.onnx, then
// optimized), inputs (.npy), plans (.plan, read as given and also resealed so that the
// checks below the checksums and the executor see the mutation) and rule files. Seeded
// and reproducible; each case runs in a child process, so a crash, an abort of the
// sanitizers or a hang (past 30 s) is caught, reported, and its input kept in
// tests/fuzz_regressions/, which every run replays first. The only acceptable outcomes
// are success and geopt::Error. GEOPT_FUZZ_CASES sets the cases per seed file (default 40).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <google/protobuf/stubs/common.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>

#include "ascend/compile.h"
#include "ascend/hardware_profile.h"
#include "ascend/optimizer.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "dsl/rule_set.h"
#include "dsl_support.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

fs::path regressions_dir() { return fs::path(GEOPT_SOURCE_DIR_STR) / "tests" / "fuzz_regressions"; }

std::string mutate(std::string bytes, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const size_t at = rng() % bytes.size();
    switch (rng() % 6) {
      case 0:
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        break;   // a bit
      case 1: {  // a telling byte
        const char values[] = {'\0', '\x7f', '\x80', '\xff', '\x01'};
        bytes[at] = values[rng() % sizeof values];
        break;
      }
      case 2:
        bytes.erase(at, 1 + rng() % 64);
        break;
      case 3:
        bytes.insert(at, bytes.substr(rng() % bytes.size(), 1 + rng() % 64));
        break;
      case 4:
        bytes.resize(at);
        break;  // truncated
      case 5:
        bytes.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
    }
  }
  return bytes;
}

// Runs `body` in a child: "ok" or "refused" (geopt::Error) when it ended well, else how it ended.
std::string run_isolated(const std::function<void()>& body) {
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    ::alarm(30);
    google::protobuf::SetLogHandler(
        nullptr);  // protobuf's complaints about mutated strings are expected here
    int code = 0;
    try {
      body();
    } catch (const Error&) {
      code = 10;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: unexpected exception: %s\n", e.what());
      code = 3;
    }
    std::fflush(nullptr);
    std::_Exit(code);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return "waitpid failed";
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM ? "hung (30 s)" : "died of signal " + std::to_string(WTERMSIG(status));
  if (WEXITSTATUS(status) == 0) return "ok";
  if (WEXITSTATUS(status) == 10) return "refused";
  return "exited " + std::to_string(WEXITSTATUS(status)) + " (an exception that is not geopt::Error)";
}

struct Kind {
  std::string ext;
  std::function<void(const fs::path&)> load;  // what a user's command does with such a file
};

}  // namespace

TEST_CASE(
    "fuzz: mutated models, inputs, plans and rule files give geopt::Error or a result, never a crash or a "
    "hang") {
  const fs::path scratch = test::scratch_dir("fuzz-files");
  const int cases = std::getenv("GEOPT_FUZZ_CASES") ? std::atoi(std::getenv("GEOPT_FUZZ_CASES")) : 40;
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  ascend::OptimizeOptions optimize;
  optimize.limits.iterations = 4;

  const fs::path bert = test::examples_dir() / "bert_tiny_op13.onnx";
  ascend::CompileOptions compile;
  compile.check = false;
  const fs::path plan_seed = scratch / "seed.plan";
  ascend::CompileResult compiled = ascend::compile(import_onnx(bert), profile, compile);
  ascend::write_plan(compiled.plan, plan_seed);

  std::map<std::string, Kind> kinds;
  kinds[".onnx"] = {".onnx", [&](const fs::path& p) {
                      Model m = import_onnx(p);
                      ascend::optimize(m, *rules, profile, optimize);
                    }};
  kinds[".npy"] = {".npy", [](const fs::path& p) { read_npy(p); }};
  kinds[".plan"] = {".plan", [](const fs::path& p) {
                      // As read, then resealed: a mutation the checksums refuse is also
                      // tried against the structural checks and the executor.
                      try {
                        ascend::PlanExecutor(ascend::read_plan(p)).run({});
                      } catch (const Error&) {
                      }
                      plan::Plan parsed;
                      if (!parsed.ParseFromString(test::read_file(p))) return;
                      const fs::path resealed = p.string() + ".resealed";
                      ascend::write_plan(parsed, resealed);
                      plan::Plan back = ascend::read_plan(resealed);
                      ascend::PlanExecutor executor(back);
                      std::map<std::string, HostTensor> feeds;
                      for (const auto& r : back.inputs())
                        feeds.emplace(r.name(), HostTensor(static_cast<DType>(r.dtype()),
                                                           {r.dims().begin(), r.dims().end()}));
                      executor.run(feeds);
                    }};
  kinds[".gerule"] = {".gerule", [](const fs::path& p) {
                        std::vector<dsl::Diagnostic> errors;
                        dsl::RuleSet::load({p.string()}, errors);
                      }};

  // The regressions first: each once crashed or hung.
  size_t replayed = 0;
  if (fs::is_directory(regressions_dir()))
    for (const auto& e : fs::directory_iterator(regressions_dir())) {
      auto kind = kinds.find(e.path().extension().string());
      if (kind == kinds.end()) continue;
      INFO("regression " << e.path().filename().string());
      const fs::path copy = scratch / ("regression" + kind->first);
      fs::copy_file(e.path(), copy, fs::copy_options::overwrite_existing);
      const std::string outcome = run_isolated([&] { kind->second.load(copy); });
      CHECK((outcome == "ok" || outcome == "refused"));
      ++replayed;
    }

  const std::vector<std::pair<fs::path, std::string>> seeds = {
      {bert, ".onnx"},
      {test::examples_dir() / "resnet18_narrow_op13.onnx", ".onnx"},
      {test::examples_dir() / "bert_tiny_op13" / "inputs" / "input_ids.npy", ".npy"},
      {test::examples_dir() / "resnet18_narrow_op13" / "inputs" / "image.npy", ".npy"},
      {plan_seed, ".plan"},
      {test::shipped_rules() + "/layout.gerule", ".gerule"},
  };
  std::mt19937_64 rng(20261201);
  size_t ran = 0, failed = 0;
  std::map<std::string, std::map<std::string, size_t>> outcomes;  // per kind: ok / refused
  for (const auto& [seed, ext] : seeds) {
    const std::string original = test::read_file(seed);
    for (int c = 0; c < cases; ++c) {
      const std::string bytes = mutate(original, rng);
      const fs::path file = scratch / ("case" + ext);
      test::write_file(file, bytes);
      const std::string outcome = run_isolated([&, &kind = kinds[ext]] { kind.load(file); });
      ++ran;
      if (outcome == "ok" || outcome == "refused") {
        ++outcomes[ext][outcome];
        continue;
      }
      ++failed;
      fs::create_directories(regressions_dir());
      const fs::path kept =
          regressions_dir() /
          (seed.stem().string() + "-" + std::to_string(std::hash<std::string>{}(bytes) % 1000000007) + ext);
      test::write_file(kept, bytes);
      FAIL_CHECK(seed.filename().string()
                 << " case " << c << " " << outcome << "; kept as " << kept.string());
    }
  }
  std::string summary;
  for (const auto& [ext, counts] : outcomes)
    summary += " " + ext + ": " + std::to_string(counts.count("ok") ? counts.at("ok") : 0) + " read, " +
               std::to_string(counts.count("refused") ? counts.at("refused") : 0) + " refused;";
  MESSAGE("fuzz: " << ran << " mutated files, " << replayed << " regressions replayed, " << failed
                   << " failures;" << summary);
  CHECK(ran == seeds.size() * static_cast<size_t>(cases));
}
