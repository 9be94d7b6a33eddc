// geopt: an ONNX graph compiler for Ascend NPUs. This file only wires the
// subcommands together; each lives in its own *_command.cpp.
#include <google/protobuf/stubs/common.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <new>
#include <vector>

#include "ascend/device_ops/device_ops.h"
#include "compile_command.h"
#include "cost_command.h"
#include "explain_command.h"
#include "geopt/geopt.h"
#include "info_command.h"
#include "logging.h"
#include "optimize_command.h"
#include "plan_command.h"
#include "profile_command.h"
#include "quantize_command.h"
#include "rules_command.h"
#include "run_command.h"
#include "tune_command.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/memory.h"

namespace {

std::string version_text() {
  int pb = GOOGLE_PROTOBUF_VERSION;
  return std::string("geopt ") + GEOPT_VERSION + " (onnx " + GEOPT_ONNX_VERSION + ", protobuf " +
         std::to_string(pb / 1000000) + "." + std::to_string(pb / 1000 % 1000) + "." +
         std::to_string(pb % 1000) + ")";
}

}  // namespace

int main(int argc, char** argv) {
  geopt::ascend::register_op_schemas();  // before any command reads a model, a rule file or a plan
  geopt::remove_temporaries_on_signals();
  geopt::install_out_of_memory_handler();  // a failed allocation throws, even under mimalloc  // an
                                           // interrupted write leaves no .NAME.tmp-XXXXXX behind
  CLI::App app{"geopt: optimize ONNX models for Ascend NPUs and compile them to execution plans"};
  app.name("geopt");
  app.set_version_flag("--version", version_text());
  std::string log_level = "warn";
  int verbosity = 0;
  app.add_option("--log-level", log_level, "Log level: trace, debug, info, warn, error, off")
      ->check(CLI::IsMember(
          std::vector<std::string>(std::begin(geopt::cli::kLogLevels), std::end(geopt::cli::kLogLevels))))
      ->capture_default_str();
  app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug, -vvv trace)");
  app.require_subcommand(1);

  std::vector<std::function<int()>> commands;
  commands.push_back(geopt::cli::add_info_command(app));
  commands.push_back(geopt::cli::add_run_command(app));
  commands.push_back(geopt::cli::add_rules_command(app));
  commands.push_back(geopt::cli::add_cost_command(app));
  commands.push_back(geopt::cli::add_optimize_command(app));
  commands.push_back(geopt::cli::add_explain_command(app));
  commands.push_back(geopt::cli::add_compile_command(app));
  commands.push_back(geopt::cli::add_plan_command(app));
  commands.push_back(geopt::cli::add_profile_command(app));
  commands.push_back(geopt::cli::add_quantize_command(app));
  commands.push_back(geopt::cli::add_tune_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help, version or the usage error
    return rc == 0 ? 0 : 2;
  }
  geopt::cli::setup_logging(log_level, verbosity);
  try {
    for (const auto& run : commands) {
      int rc = run();
      if (rc >= 0) return rc;
    }
  } catch (const geopt::api::UsageError& e) {
    std::fprintf(stderr, "geopt: error: %s\n", e.what());
    return 2;
  } catch (const geopt::api::InternalError& e) {
    std::fprintf(stderr, "geopt: %s\n", e.what());
    return 3;
  } catch (const geopt::api::Error& e) {
    std::fprintf(stderr, "geopt: error: %s\n", e.what());
    return 1;
  } catch (const geopt::UsageError& e) {
    std::fprintf(stderr, "geopt: error: %s\n", e.what());
    return 2;
  } catch (const geopt::Error& e) {
    std::fprintf(stderr, "geopt: error: %s\n", e.what());
    return 1;
  } catch (const geopt::InternalError& e) {
    std::fprintf(stderr, "geopt: %s (a bug in geopt: please report it with the command and the model)\n",
                 e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "geopt: error: out of memory: the model, its inputs or the plan ask for more memory than "
                 "this machine has\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "geopt: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
