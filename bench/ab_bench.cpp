// Two sides timed like for like: the same machine minute, inputs and thread count, their
// runs interleaved in blocks (A, B, B, A, A, B, ...) so a slow spell of a shared machine
// falls on both. A side is
//   PATH.plan        the plan executor (what `geopt run PATH.plan` runs)
//   PATH.onnx        geopt's evaluator on the model (what `geopt run PATH.onnx` runs)
//   ort:PATH.onnx    ONNX Runtime (CPU provider, level 'all') in a node child process
//                    (bench/ort/serve.js), which times its own runs with its monotonic clock
// Each block runs one side RUNS times back to back (as a user's loop would); each pair of
// blocks gives the ratio of their medians. Prints JSON: each side's median run time over
// all its runs and the median of the per-pair ratios B/A.
//   geopt_ab_bench SIDE_A SIDE_B INPUT_DIR THREADS PAIRS [RUNS] [PAUSE_MS]
// PAUSE_MS (default 0) sleeps between blocks, so that neither side's spinning threads
// (OpenMP's, ONNX Runtime's) are still on the cores when the other starts.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ascend/device_ops/device_ops.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "eval/evaluator.h"
#include "eval/kernel.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "util/error.h"

extern char** environ;

using namespace geopt;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Each of `times` runs of f, in milliseconds.
std::vector<double> timed_runs(int times, const auto& f) {
  std::vector<double> ms;
  for (int i = 0; i < times; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

class Side {
 public:
  virtual ~Side() = default;
  virtual std::vector<double> run(int times) = 0;  // each run's milliseconds
};

class PlanSide : public Side {
 public:
  PlanSide(const std::string& path, std::map<std::string, HostTensor> feeds)
      : plan_(ascend::read_plan(path)), executor_(plan_), feeds_(std::move(feeds)) {}
  std::vector<double> run(int times) override {
    return timed_runs(times, [&] { executor_.run(feeds_); });
  }

 private:
  plan::Plan plan_;
  ascend::PlanExecutor executor_;
  std::map<std::string, HostTensor> feeds_;
};

class ModelSide : public Side {
 public:
  ModelSide(const std::string& path, std::map<std::string, HostTensor> feeds)
      : model_(import_onnx(path)), evaluator_(model_, ascend::op_registry()), feeds_(std::move(feeds)) {}
  std::vector<double> run(int times) override {
    return timed_runs(times, [&] { evaluator_.run(feeds_); });
  }

 private:
  Model model_;
  Evaluator evaluator_;
  std::map<std::string, HostTensor> feeds_;
};

// bench/ort/serve.js in a child process, talked to through two pipes (close-on-exec, so
// a second child does not hold the first one's input open).
class OrtSide : public Side {
 public:
  OrtSide(const std::string& model, const std::string& input_dir, int threads) {
    try {
      start(model, input_dir, threads);
    } catch (...) {
      end_child();
      throw;
    }
  }
  ~OrtSide() override { end_child(); }
  std::vector<double> run(int times) override {
    if (std::fprintf(to_, "run %d\n", times) < 0 || std::fflush(to_) != 0)
      throw Error("ONNX Runtime's server is gone (" + std::string(GEOPT_ORT_SERVER) + ")");
    std::istringstream line(read_line());
    std::vector<double> ms;
    for (double t; line >> t;) ms.push_back(t);
    if (static_cast<int>(ms.size()) != times)
      throw Error("ONNX Runtime's server gave " + std::to_string(ms.size()) + " times for " +
                  std::to_string(times) + " runs");
    return ms;
  }

 private:
  void start(const std::string& model, const std::string& input_dir, int threads) {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC)) throw Error("pipe failed");
    to_ = fdopen(to_child[1], "w");
    if (!to_) {
      close(to_child[0]), close(to_child[1]);
      throw Error("fdopen failed");
    }
    if (pipe2(from_child, O_CLOEXEC)) {
      close(to_child[0]);
      throw Error("pipe failed");
    }
    from_ = fdopen(from_child[0], "r");
    if (!from_) {
      close(to_child[0]), close(from_child[0]), close(from_child[1]);
      throw Error("fdopen failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);  // dup2 clears close-on-exec
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    const std::string script = GEOPT_ORT_SERVER, thread_text = std::to_string(threads);
    std::vector<char*> argv{const_cast<char*>("node"),
                            const_cast<char*>(script.c_str()),
                            const_cast<char*>(model.c_str()),
                            const_cast<char*>(input_dir.c_str()),
                            const_cast<char*>(thread_text.c_str()),
                            nullptr};
    const int spawned = posix_spawnp(&child_, "node", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    if (spawned) {
      child_ = -1;
      throw Error("cannot start node (" + script + ")");
    }
    if (read_line() != "ready")
      throw Error("ONNX Runtime's server (" + script + ") did not start on " + model +
                  " (its error is above)");
  }
  // End of input ends the server; then it is reaped.
  void end_child() {
    if (to_) std::fclose(to_), to_ = nullptr;
    if (from_) std::fclose(from_), from_ = nullptr;
    if (child_ > 0) waitpid(child_, nullptr, 0), child_ = -1;
  }
  std::string read_line() {
    std::string s;
    int c;
    while ((c = std::fgetc(from_)) != EOF && c != '\n') s.push_back(static_cast<char>(c));
    if (c == EOF)
      throw Error("ONNX Runtime's server ended (" + std::string(GEOPT_ORT_SERVER) + "; its error is above)");
    return s;
  }
  pid_t child_ = -1;
  std::FILE* to_ = nullptr;
  std::FILE* from_ = nullptr;
};

std::unique_ptr<Side> open_side(const std::string& spec, const std::string& input_dir, int threads) {
  if (spec.starts_with("ort:")) return std::make_unique<OrtSide>(spec.substr(4), input_dir, threads);
  if (std::filesystem::path(spec).extension() == ".plan")
    return std::make_unique<PlanSide>(spec, read_npy_folder(input_dir));
  return std::make_unique<ModelSide>(spec, read_npy_folder(input_dir));
}

}  // namespace

int main(int argc, char** argv) {
  geopt::ascend::register_op_schemas();  // an optimized model names Ascend's ops
  if (argc < 6 || argc > 8) {
    std::fprintf(stderr,
                 "usage: %s SIDE_A SIDE_B INPUT_DIR THREADS PAIRS [RUNS] [PAUSE_MS]\n  a side: PATH.plan, "
                 "PATH.onnx (geopt), ort:PATH.onnx (ONNX Runtime)\n",
                 argv[0]);
    return 1;
  }
  try {
    const int threads = std::atoi(argv[4]), pairs = std::atoi(argv[5]),
              runs = argc > 6 ? std::atoi(argv[6]) : 1, pause_ms = argc > 7 ? std::atoi(argv[7]) : 0;
    if (threads <= 0 || pairs <= 0 || runs <= 0 || pause_ms < 0)
      throw Error("THREADS, PAIRS and RUNS must be positive, PAUSE_MS not negative");
    set_kernel_threads(threads);
    std::signal(SIGPIPE, SIG_IGN);  // a server that died is an error from fflush, not the end of this process
    auto a = open_side(argv[1], argv[3], threads), b = open_side(argv[2], argv[3], threads);
    auto block = [&](Side& side) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      return side.run(runs);
    };
    block(*a), block(*b), block(*a), block(*b);  // weights packed, primitives made, pools warm
    std::vector<double> ta, tb, ratio;
    for (int i = 0; i < pairs; ++i) {
      // Alternate which goes first, so neither always follows the other.
      std::vector<double> x, y;
      if (i % 2)
        y = block(*b), x = block(*a);
      else
        x = block(*a), y = block(*b);
      ta.insert(ta.end(), x.begin(), x.end());
      tb.insert(tb.end(), y.begin(), y.end());
      ratio.push_back(median(y) / median(x));
    }
    std::printf(
        "{\"a_median_ms\": %.3f, \"b_median_ms\": %.3f, \"b_over_a\": %.4f, \"pairs\": %d, \"runs\": %d, "
        "\"threads\": %d}\n",
        median(ta), median(tb), median(ratio), pairs, runs, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
