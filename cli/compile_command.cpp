#include "compile_command.h"

#include <memory>

#include "pipeline_options.h"

namespace geopt::cli {
namespace {

struct CompileOptions : PipelineOptions {
  bool no_optimize = false;
  bool disable_reuse = false;
  std::vector<std::string> no_reuse;  // OP_NO_REUSE_MEM: "name,OpType,..."
  bool single_stream = false;
  size_t max_streams = 4;
  std::string topo_sorting_mode;
  bool external_weights = false;
  // ATC's dynamic-shape options (docs/LOWERING.md, "Dynamic shapes")
  std::string dynamic_batch_size, dynamic_image_size, dynamic_dims, input_shape_range;
  std::string op_bank_path, mdl_bank_path;  // geopt tune's knowledge banks
};

int run(const CompileOptions& o) {
  api::CompileOptions a;
  o.fill(a);
  a.optimize = !o.no_optimize;
  a.disable_reuse_memory = o.disable_reuse;
  a.op_no_reuse_mem = o.no_reuse;
  a.enable_single_stream = o.single_stream;
  a.max_streams = o.max_streams;
  a.topo_sorting_mode = o.topo_sorting_mode;
  a.external_weights = o.external_weights;
  a.dynamic_batch_size = o.dynamic_batch_size;
  a.dynamic_image_size = o.dynamic_image_size;
  a.dynamic_dims = o.dynamic_dims;
  a.input_shape_range = o.input_shape_range;
  a.op_bank_path = o.op_bank_path;
  a.mdl_bank_path = o.mdl_bank_path;
  const api::CompileResult r = api::compile(api::ModelSource::file(o.model), a);
  return o.finish(r.report_json, r.report_text, r.check_ok, r.error);
}

}  // namespace

std::function<int()> add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Optimize a model and compile it to an execution plan (memory, streams, events)");
  cmd->add_option("model", o->model, "ONNX model")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the plan");
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  o->input_shape.add_to(cmd);
  o->check_inputs.add_to(cmd);
  cmd->add_flag("--no-optimize", o->no_optimize, "Lower the model as it is, without the rules");
  cmd->add_flag("--disable_reuse_memory,--disable-reuse-memory", o->disable_reuse,
                "Give every tensor its own bytes (ATC's option, for debugging; =1 or =0)");
  cmd->add_option("--op_no_reuse_mem,--op-no-reuse-mem", o->no_reuse,
                  "Outputs of these nodes or op types (\"name,OpType,...\", as plan dump names them) keep "
                  "their own bytes; GE's OP_NO_REUSE_MEM, read from the environment when unset")
      ->delimiter(',')
      ->envname("OP_NO_REUSE_MEM");
  cmd->add_flag("--enable_single_stream,--enable-single-stream", o->single_stream,
                "Put every kernel on one stream (ATC's option; =true or =false)");
  cmd->add_option("--max-streams", o->max_streams, "Streams at most")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option(
      "--topo_sorting_mode,--topo-sorting-mode", o->topo_sorting_mode,
      "The order kernels are issued in, ATC's option: 0 BFS, 1 DFS, 2 reverse DFS, 3 stable reverse "
      "DFS (the model's own order); unset, geopt's memory-aware order");
  cmd->add_flag("--no-check", o->no_check, "Skip running the plan against the original");
  o->tolerance.add_to(cmd, "plan");
  o->limits.add_to(cmd);
  o->add_extraction_options(cmd);
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->add_flag("--external-weights", o->external_weights,
                "Write the weights to PLAN.weights beside the plan (automatic above 1 GiB: a protobuf "
                "message cannot exceed 2 GB)");
  cmd->add_option("--dynamic_batch_size,--dynamic-batch-size", o->dynamic_batch_size,
                  "Gears of batch size, ATC style: \"1,2,4,8\", with --input_shape marking the batch dims "
                  "-1; one plan holds every gear");
  cmd->add_option(
      "--dynamic_image_size,--dynamic-image-size", o->dynamic_image_size,
      "Gears of image size, ATC style: \"320,320;640,640\" (H,W), with --input_shape marking H and W -1");
  cmd->add_option("--dynamic_dims,--dynamic-dims", o->dynamic_dims,
                  "Gears of any dims, ATC style: \"32;64;128\" or \"20,20;40,40\", a value per -1 of "
                  "--input_shape (or per symbol behind them)");
  cmd->add_option("--input_shape_range,--input-shape-range", o->input_shape_range,
                  "Shape ranges, ATC style: \"input_ids:[1,1~512];attention_mask:[1,1~512]\": one plan for "
                  "every shape in range, memory planned at the upper bound");
  cmd->add_option(
         "--op_bank_path,--op-bank-path", o->op_bank_path,
         "Kernels take the tactics geopt tune --job_type 2 filed for their op signatures on this machine: "
         "the bank folder or file; TUNE_BANK_PATH when unset")
      ->envname("TUNE_BANK_PATH");
  cmd->add_option(
      "--mdl_bank_path,--mdl-bank-path", o->mdl_bank_path,
      "The model takes the strategy settings geopt tune --job_type 1 filed for it: the bank folder or "
      "file");
  cmd->add_option("--dump-graph", o->dump_dir,
                  "Write each stage (import; static shapes; saturation + extraction + layout; lowering) as "
                  "ONNX, DOT and SVG");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
