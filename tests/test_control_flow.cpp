// Control flow (If, Loop, Scan), recurrent ops and the rest of the inference op set,
// end to end: the committed models of examples/control_flow (examples/control_flow.py)
// run, optimize and compile + run as plans within 1e-4 of torch or numpy; bodies are
// sub-plans whose events the executor honours; random ops are seeded and never folded;
// bf16 passes through .npy files.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "ascend/compile.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "ascend/optimizer.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "ascend/plan_profile.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "eval/numerical_check.h"
#include "io/npy.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "test_support.h"
#include "util/error.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

fs::path control_flow_dir() { return test::examples_dir().parent_path() / "control_flow"; }

// NAME/<inputs>/*.npy as feeds (bf16 read as declared).
std::map<std::string, HostTensor> read_folder(const Model& m, const fs::path& dir) {
  std::map<std::string, HostTensor> out;
  for (const Value* v : m.graph->inputs())
    if (!v->initializer)
      out[v->name()] = as_declared_dtype(read_npy(dir / (v->name() + ".npy")), v->type.dtype);
  return out;
}

NamedTensors read_outputs(const Model& m, const fs::path& dir) {
  NamedTensors out;
  for (const Value* v : m.graph->outputs()) out.emplace_back(v->name(), read_npy(dir / (v->name() + ".npy")));
  return out;
}

void check_close(const NamedTensors& got, const NamedTensors& want, const std::string& what) {
  OutputsDiff d = diff_outputs(got, want, Tolerance{1e-4, 1e-4});
  INFO(what << ": " << d.mismatch << " worst " << d.worst);
  CHECK(d.within());
}

ascend::CompileOptions compile_options(const dsl::RuleSet* rules) {
  ascend::CompileOptions options;
  options.rules = rules;
  return options;
}

TEST_CASE(
    "control flow and recurrent models match their references: run, optimize, compile and run the plan") {
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  // Each model with its reference sets (inputs folder, outputs folder).
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> cases = {
      {"loop_scan", {{"inputs", "outputs"}}},
      {"lstm_gru", {{"inputs", "outputs"}}},
      {"window_mask", {{"inputs", "outputs"}}},
      {"if_branch_shapes", {{"inputs", "outputs"}, {"inputs_else", "outputs_else"}}},
  };
  for (const auto& [name, sets] : cases) {
    const std::string& model_name = name;  // a lambda (CAPTURE) cannot name a structured binding in clang 14
    CAPTURE(model_name);
    const fs::path dir = control_flow_dir() / name;
    Model model = import_onnx(control_flow_dir() / (name + ".onnx"));
    ascend::OptimizeResult optimized = ascend::optimize(model, *rules, profile);
    // What `geopt optimize --check` runs: the optimized model against the original on the
    // inputs the check chooses.
    CHECK(check_same_outputs(ascend::op_registry(), model, optimized.model, Tolerance{1e-4, 1e-4})
              .diff.within());
    ascend::CompileResult compiled = ascend::compile(model, profile, compile_options(rules.get()));
    CHECK(compiled.check_ok);
    ascend::PlanExecutor executor(compiled.plan);
    for (const auto& [in_dir, out_dir] : sets) {
      const std::string& inputs = in_dir;  // a lambda (CAPTURE) cannot name a structured binding in clang 14
      CAPTURE(inputs);
      const auto feeds = read_folder(model, dir / in_dir);
      const NamedTensors want = read_outputs(model, dir / out_dir);
      check_close(Evaluator(model, ascend::op_registry()).run(feeds), want, "run");
      check_close(Evaluator(optimized.model, ascend::op_registry()).run(feeds), want, "optimized");
      for (auto schedule : {ascend::StreamSchedule::in_order, ascend::StreamSchedule::adversarial})
        check_close(executor.run(feeds, schedule), want, "plan");
    }
  }
}

TEST_CASE(
    "optimize rewrites inside bodies: the If's Linear layers become FusedMatMul kernels, and the model stays "
    "valid ONNX") {
  auto rules = test::load_rules({test::shipped_rules()});
  Model model = import_onnx(control_flow_dir() / "if_branch_shapes.onnx");
  ascend::OptimizeResult r = ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"));
  const Node* control = nullptr;
  for (const auto& n : r.model.graph->nodes())
    if (n->op_type == "If") control = n.get();
  REQUIRE(control);
  for (const char* branch : {"then_branch", "else_branch"}) {
    CAPTURE(branch);
    onnx::GraphProto body;
    REQUIRE(body.ParseFromString(control->attr(branch)->opaque.at(0)));
    std::multiset<std::string> ops;
    for (const auto& n : body.node()) ops.insert(n.op_type());
    CHECK(ops.count("FusedMatMul") == 1);
    CHECK(ops.count("Gemm") + ops.count("MatMul") == 0);
    CHECK(body.input_size() == 0);  // x is read from the enclosing graph again, by name
  }
  // The report counts them: the model's own graph has nothing to fuse, its branches do.
  CHECK(!r.fused.empty());
  CHECK(r.fusion_rate > 0.3);
  const fs::path path = test::scratch_dir("cf_opt_bodies") / "opt.onnx";
  export_onnx(r.model, path);
  Model back = import_onnx(path);  // ONNX's checker accepts the rewritten bodies
  const fs::path dir = control_flow_dir() / "if_branch_shapes";
  for (const auto& [in_dir, out_dir] :
       {std::pair{"inputs", "outputs"}, std::pair{"inputs_else", "outputs_else"}})
    check_close(Evaluator(back, ascend::op_registry()).run(read_folder(back, dir / in_dir)),
                read_outputs(back, dir / out_dir), "optimized and re-imported");
}

TEST_CASE(
    "a plan holds each body as a sub-plan: LSTM and GRU as single kernels, Loop and If bodies lowered") {
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  ascend::CompileResult lstm = ascend::compile(import_onnx(control_flow_dir() / "lstm_gru.onnx"), profile,
                                               compile_options(rules.get()));
  size_t recurrent = 0;
  for (const auto& k : lstm.plan.kernels())
    if (k.op_type() == "LSTM" || k.op_type() == "GRU") {
      ++recurrent;
      CHECK(k.cube_us() > 0);  // priced as the products they are
    }
  CHECK(recurrent == 4);  // 2 layers of each, both directions in one kernel

  ascend::CompileResult loop = ascend::compile(import_onnx(control_flow_dir() / "loop_scan.onnx"), profile,
                                               compile_options(rules.get()));
  const plan::Kernel* control = nullptr;
  for (const auto& k : loop.plan.kernels())
    if (k.op_type() == "Loop") control = &k;
  REQUIRE(control);
  REQUIRE(control->bodies_size() == 1);
  CHECK(control->bodies(0).attribute() == "body");
  // The body reads the outer weight W from its own weight region and x from the parent pool.
  const plan::Plan& body = control->bodies(0).plan();
  CHECK(body.kernels_size() >= 3);
  CHECK(body.weight_bytes() > 0);
  bool reads_x = false;
  for (const auto& r : body.inputs()) reads_x = reads_x || r.name() == "x";
  CHECK(reads_x);
  // Five trips of the body: its kernel is modeled at more than four times one body's.
  double body_us = 0;
  for (const auto& k : body.kernels()) body_us += k.modeled_us();
  CHECK(control->modeled_us() > 4 * body_us / static_cast<double>(body.stream_count()));

  const fs::path dir = test::scratch_dir("cf_dump");
  CHECK(ascend::write_plan(loop.plan, dir / "loop.plan").empty());
  test::CliResult dump = test::run_cli({"plan", "dump", (dir / "loop.plan").string()});
  CHECK(dump.exit_code == 0);
  CHECK(dump.out.find("body   body:") != std::string::npos);
}

// An If whose captured values come from two streams, and whose then-branch has two
// independent products: events cross the switch and run inside the body.
const char* kParallelIf = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x, bool c) => (float[64,64] y) {
    a = MatMul(x, x)
    b = Sigmoid(x)
    t = Tanh(x)
    y = If(c) <then_branch = th () => (float[64,64] r) { p = MatMul(a, t)  q = MatMul(b, t)  r = Add(p, q) },
               else_branch = el () => (float[64,64] s) { s = Sub(a, b) }>
  })";

double plan_error(const plan::Plan& p, const Model& original,
                  const std::map<std::string, HostTensor>& feeds) {
  return diff_outputs(ascend::PlanExecutor(p).run(feeds, ascend::StreamSchedule::adversarial),
                      Evaluator(original, ascend::op_registry()).run(feeds))
      .error();
}

// Refused when the plan loads (they once showed as wrong numbers in adversarial order).
TEST_CASE("fault injection across a switch: a dropped event before the If or inside its body is refused") {
  const fs::path path = test::scratch_dir("cf_events") / "parallel_if.onnx";
  test::save_model(test::parse_text_model(kParallelIf), path);
  Model model = import_onnx(path);
  ascend::CompileOptions options;
  options.max_streams = 4;
  options.choose_streams = false;  // keep the streams as planned: the test drops their events
  ascend::CompileResult r = ascend::compile(model, ascend::load_profile("Ascend910B1"), options);
  auto feeds = random_inputs(model, 3);
  feeds["c"] = HostTensor::scalar<bool>(DType::Bool, true);
  REQUIRE(plan_error(r.plan, model, feeds) <= 1e-4);

  int control = -1;
  for (int k = 0; k < r.plan.kernels_size(); ++k)
    if (r.plan.kernels(k).op_type() == "If") control = k;
  REQUIRE(control >= 0);
  SUBCASE("the event the switch waits on") {
    REQUIRE(r.plan.kernels(control).wait_events_size() > 0);
    plan::Plan faulty = r.plan;
    faulty.mutable_kernels(control)->mutable_wait_events()->Clear();
    CHECK_THROWS_WITH_AS(plan_error(faulty, model, feeds), doctest::Contains("no stream or event orders"),
                         Error);
  }
  SUBCASE("an event inside the then-branch") {
    plan::Plan faulty = r.plan;
    plan::Body* then_branch = nullptr;
    for (auto& b : *faulty.mutable_kernels(control)->mutable_bodies())
      if (b.attribute() == "then_branch") then_branch = &b;
    REQUIRE(then_branch);
    plan::Plan& body = *then_branch->mutable_plan();
    REQUIRE(body.events_size() > 0);
    auto* waits = body.mutable_kernels(static_cast<int>(body.events(0).to_kernel()))->mutable_wait_events();
    waits->erase(std::find(waits->begin(), waits->end(), body.events(0).id()));
    CHECK_THROWS_WITH_AS(plan_error(faulty, model, feeds), doctest::Contains("no stream or event orders"),
                         Error);
  }
}

TEST_CASE("random ops are seeded, deterministic and never folded") {
  const fs::path path = test::scratch_dir("cf_random") / "random.onnx";
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[4,8] p) => (float[4,8] u, float[4,8] v, float[4,8] w, float[4,8] zeros, float[4,8] ones, float[2,3] fixed) {
      u = RandomUniformLike <seed = 3.0> (p)
      v = RandomUniformLike <seed = 3.0> (p)
      w = RandomUniformLike (p)
      zero_p = Mul(p, p)
      z = Sub(zero_p, zero_p)
      zeros = Bernoulli <seed = 1.0> (z)
      one = Constant <value = float {1.0}> ()
      o = Add(z, one)
      ones = Bernoulli <seed = 1.0> (o)
      drawn = RandomNormal <shape = [2, 3], seed = 5.0> ()
      zero = Constant <value = float {0.0}> ()
      fixed = Add(drawn, zero)
    })"),
                   path);
  Model m = import_onnx(path);
  Evaluator ev(m, ascend::op_registry());
  auto feeds = random_inputs(m, 1);
  NamedTensors a = ev.run(feeds), b = ev.run(feeds);
  auto values = [&](const NamedTensors& t, size_t i) { return t[i].second.to_vector<float>(); };
  CHECK(values(a, 0) == values(a, 1));                                 // one seed, one draw
  CHECK(values(a, 0) != values(a, 2));                                 // unseeded: a draw of its own
  for (size_t i = 0; i < 6; ++i) CHECK(values(a, i) == values(b, i));  // and the same on every run
  for (float x : values(a, 0)) CHECK((x >= 0.0f && x < 1.0f));
  for (float x : values(a, 3)) CHECK(x == 0.0f);
  for (float x : values(a, 4)) CHECK(x == 1.0f);
  // RandomNormal has no inputs at all, yet it stays a node (and so does the Add reading it):
  // its values exist at run time only.
  Model prepared = m.clone();
  propagate_static_shapes(prepared, ascend::op_registry());
  CHECK(test::count_op(prepared, "RandomNormal") == 1);
}

TEST_CASE("a Loop whose body draws is never folded, though every input it reads is a constant") {
  Model m = import_onnx_proto(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2] x) => (float[2] y) {
      trips = Constant <value = int64 {3}> ()
      go = Constant <value = bool {1}> ()
      start = Constant <value = float[2] {0.0, 0.0}> ()
      acc = Loop (trips, go, start) <body = step (int64 i, bool c, float[2] s) => (bool c_out, float[2] s_out) {
        c_out = Identity(c)
        noise = RandomUniform <shape = [2], seed = 7.0> ()
        s_out = Add(s, noise)
      }>
      y = Add(x, acc)
    })"),
                              "loop.onnx");
  CHECK(test::count_op(m, "Loop") == 1);
  auto rules = test::load_rules({test::shipped_rules()});
  ascend::OptimizeResult r = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"));
  CHECK(test::count_op(r.model, "Loop") == 1);       // its values exist at run time only
  CHECK(test::max_output_error(m, r.model) < 1e-6);  // and it draws what the model draws
}

TEST_CASE("bf16 passes through .npy as its bit patterns") {
  const fs::path dir = test::scratch_dir("cf_bf16");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (bfloat16[3] x) => (bfloat16[3] y) {
      f = Cast <to = 1> (x)
      d = Add(f, f)
      y = Cast <to = 16> (d)
    })"),
                   dir / "bf16.onnx");
  // 1.5, -2.0 and 0.25 as bf16 bit patterns, in a '<u2' array.
  HostTensor bits = HostTensor::from_vector<uint16_t>(DType::U16, {3}, {0x3FC0, 0xC000, 0x3E80});
  write_npy(dir / "x.npy", bits);
  CHECK(test::read_file(dir / "x.npy").find("'descr': '<u2'") != std::string::npos);
  test::CliResult r =
      test::run_cli({"run", (dir / "bf16.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                     "--output-dir", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  HostTensor y = read_npy(dir / "out" / "y.npy");
  CHECK(y.dtype() == DType::U16);                                                   // written as bits too
  CHECK(y.to_vector<uint16_t>() == std::vector<uint16_t>{0x4040, 0xC080, 0x3F00});  // 3.0, -4.0, 0.5
  // And compared as bf16 against a '<u2' reference.
  fs::create_directories(dir / "ref");
  write_npy(dir / "ref" / "y.npy", y);
  r = test::run_cli({"run", (dir / "bf16.onnx").string(), "--input", "x=" + (dir / "x.npy").string(),
                     "--compare", (dir / "ref").string()});
  CHECK(r.exit_code == 0);
}

TEST_CASE("an If whose condition and captured values are constants folds away") {
  const fs::path path = test::scratch_dir("cf_fold") / "const_if.onnx";
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      c = Constant <value = bool {1}> ()
      k = Constant <value = float[2] {2.0, 3.0}> ()
      branch = If(c) <then_branch = th () => (float[2] r) { r = Mul(k, k) },
                      else_branch = el () => (float[2] s) { s = Neg(k) }>
      y = Add(x, branch)
    })"),
                   path);
  Model m = import_onnx(path);
  Model folded = m.clone();
  propagate_static_shapes(folded, ascend::op_registry());
  CHECK(test::count_op(folded, "If") == 0);
  auto feeds = random_inputs(m, 2);
  CHECK(diff_outputs(Evaluator(folded, ascend::op_registry()).run(feeds),
                     Evaluator(m, ascend::op_registry()).run(feeds))
            .error() == 0);
}

TEST_CASE(
    "a branch that cannot run at the compiled shapes is refused at run time, and --check-input picks the "
    "path the check runs") {
  // The else branch reshapes x to [mode + 10] elements: never its 4, so it fails, as Silero VAD's 8 kHz path
  // does at 16 kHz chunk sizes. Its shape is not static, so compile cannot lower it either.
  const fs::path dir = test::scratch_dir("cf_mode");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, int64 mode) => (float[4] y) {
      seven = Constant <value = int64 {7}> ()
      c = Equal(mode, seven)
      y = If(c) <then_branch = th () => (float[4] r) { r = Relu(x) },
                 else_branch = el () => (float[n] s) { axes = Constant <value = int64[1] {0}> ()  ten = Constant <value = int64[1] {10}> ()  m = Unsqueeze(mode, axes)  n = Add(m, ten)  s = Reshape(x, n) }>
    })"),
                   dir / "mode.onnx");
  write_npy(dir / "seven.npy", HostTensor::scalar<int64_t>(DType::I64, 7));
  write_npy(dir / "zero.npy", HostTensor::scalar<int64_t>(DType::I64, 0));
  // The check draws mode at random (0 or 1): the original itself fails there.
  test::CliResult r =
      test::run_cli({"compile", (dir / "mode.onnx").string(), "-o", (dir / "a.plan").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("Reshape") != std::string::npos);
  r = test::run_cli({"compile", (dir / "mode.onnx").string(), "-o", (dir / "m.plan").string(),
                     "--check-input", "mode=" + (dir / "seven.npy").string()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("else_branch cannot run at the compiled shapes") != std::string::npos);
  write_npy(dir / "x.npy", HostTensor::from_vector<float>(DType::F32, {4}, {-1, 2, -3, 4}));
  r = test::run_cli({"run", (dir / "m.plan").string(), "--input", "x=" + (dir / "x.npy").string(), "--input",
                     "mode=" + (dir / "seven.npy").string()});
  CHECK(r.exit_code == 0);
  r = test::run_cli({"run", (dir / "m.plan").string(), "--input", "x=" + (dir / "x.npy").string(), "--input",
                     "mode=" + (dir / "zero.npy").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("its else_branch was not compiled") != std::string::npos);
  test::CliResult dump = test::run_cli({"plan", "dump", (dir / "m.plan").string()});
  CHECK(dump.out.find("else_branch: not compiled") != std::string::npos);
}

TEST_CASE(
    "captured values survive export: a renamed one is referenced by its new name, even one its body "
    "defines") {
  const fs::path dir = test::scratch_dir("cf_export");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, bool c) => (float[3] y) {
      a = Relu(x)
      y = If(c) <then_branch = th () => (float[3] r) { r = Sigmoid(a) },
                 else_branch = el () => (float[3] s) { s = Neg(a) }>
    })"),
                   dir / "m.onnx");
  Model m = import_onnx(dir / "m.onnx");
  const Node* control = nullptr;
  for (const auto& n : m.graph->nodes())
    if (n->op_type == "If") control = n.get();
  REQUIRE(control);
  REQUIRE(control->inputs().size() == 2);  // c, then the captured a
  CHECK(control->input(1)->name() == "a");
  auto feeds = random_inputs(m, 5);
  for (bool branch : {true, false}) {
    feeds["c"] = HostTensor::scalar<bool>(DType::Bool, branch);
    const NamedTensors expected = Evaluator(m, ascend::op_registry()).run(feeds);
    // A pass renames the captured value, once to a free name and once to the name the
    // then-branch gives its own result.
    for (const char* new_name : {"activated", "r"}) {
      CAPTURE(new_name);
      Model renamed = m.clone();
      renamed.graph->rename_value(renamed.graph->find_value("a"), new_name);
      export_onnx(renamed, dir / "renamed.onnx");
      Model back = import_onnx(dir / "renamed.onnx");  // ONNX's checker and inference pass it
      CHECK(diff_outputs(Evaluator(back, ascend::op_registry()).run(feeds), expected).error() == 0);
    }
  }
}

TEST_CASE("an If whose condition is a constant is inlined, whatever its branch reads") {
  // The condition depends on a shape only (as torch.jit.script's `if x.dim() == 2` exports),
  // and the branch taken reads a graph input.
  const fs::path path = test::scratch_dir("cf_inline") / "shape_if.onnx";
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,4] x) => (float[3,4] y, float[3,4] z) {
      s = Shape(x)
      r = Size(s)
      two = Constant <value = int64 {2}> ()
      c = Equal(r, two)
      y, z = If(c) <then_branch = th () => (float[3,4] a, float[3,4] b) { a = Relu(x)  b = Sigmoid(a) },
                    else_branch = el () => (float[3,4] d, float[3,4] e) { d = Neg(x)  e = Identity(x) }>
    })"),
                   path);
  Model m = import_onnx(path);
  Model inlined = m.clone();
  propagate_static_shapes(inlined, ascend::op_registry());
  CHECK(test::count_op(inlined, "If") == 0);
  CHECK(test::count_op(inlined, "Relu") == 1);
  CHECK(test::count_op(inlined, "Neg") == 0);
  CHECK(inlined.graph->outputs()[0]->name() == "y");
  CHECK(inlined.graph->outputs()[1]->name() == "z");
  auto feeds = random_inputs(m, 4);
  CHECK(diff_outputs(Evaluator(inlined, ascend::op_registry()).run(feeds),
                     Evaluator(m, ascend::op_registry()).run(feeds))
            .error() == 0);
}

}  // namespace
}  // namespace geopt

namespace geopt {
namespace {

// Nodes of the bodies of a model file that launch work (not Constants), nested ones too.
size_t body_nodes(const onnx::GraphProto& g, bool inside = false) {
  size_t count = 0;
  for (const auto& n : g.node()) {
    if (inside && n.op_type() != "Constant") ++count;
    for (const auto& a : n.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH) count += body_nodes(a.g(), true);
  }
  return count;
}

size_t body_nodes(const fs::path& model) {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(test::read_file(model)));
  return body_nodes(m.graph());
}

}  // namespace
TEST_CASE(
    "an If whose branches and enclosing graph take the same rewrite reads back: the values each graph makes "
    "are "
    "named apart") {
  // Each branch and the graph around them get a MatMul's weight laid out as FRACTAL_NZ, a
  // value the rewrite names after its op in each graph; ONNX's inference would read a
  // branch's name as the enclosing graph's value.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,32] x, bool c) => (float[1,16] y) <float[32,16] w1 = {)";
  std::string model_text = text;
  auto numbers = [](int count, double scale) {
    std::string s;
    for (int i = 0; i < count; ++i) s += (i ? ", " : "") + std::to_string(scale * ((i * 37) % 11 - 5));
    return s;
  };
  model_text += numbers(32 * 16, 0.01) + "}, float[32,16] w2 = {" + numbers(32 * 16, 0.02) +
                "}, float[16,16] w3 = {" + numbers(16 * 16, 0.03) + R"(}> {
      h = If (c) <then_branch = g1 () => (float[1,16] t) { t = MatMul(x, w1) },
                  else_branch = g2 () => (float[1,16] e) { e = MatMul(x, w2) }>
      y = MatMul(h, w3)
    })";
  Model model = import_onnx_proto(test::parse_text_model(model_text.c_str()), "if_same_rewrite.onnx");
  auto rules = test::load_rules({test::shipped_rules()});
  ascend::OptimizeResult r = ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"));
  REQUIRE(test::count_op(r.model, "FusedMatMul") >= 1);
  const fs::path path = test::scratch_dir("cf_names_apart") / "opt.onnx";
  export_onnx(r.model, path);
  Model back = import_onnx(path);
  CHECK(test::max_output_error(model, back) <= 1e-4);
}

}  // namespace geopt

TEST_CASE("explain looks inside control-flow bodies, and optimize and compile count the bodies' kernels") {
  using namespace geopt;
  const fs::path model = control_flow_dir() / "if_branch_shapes.onnx";
  const std::string then_branch = "If '/If' then_branch";

  // Sites in a branch carry its scope, and the rewrite that fused them is paired with them.
  test::CliResult json = test::run_cli({"explain", model.string(), "--json"});
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.out);
  bool relu_site = false, relu_fused = false;
  for (const auto& rule : j["rules"]) {
    for (const auto& s : rule["sites"])
      relu_site = relu_site || (s["node"] == "/Relu" && s.value("scope", "") == then_branch);
    if (rule["rule"] == "FusedMatMulRelu")
      for (const auto& e : rule["extraction"])
        relu_fused = relu_fused ||
                     (e["node"] == "/Relu" && e.value("scope", "") == then_branch && e["selected"] == true);
  }
  CHECK(relu_site);
  CHECK(relu_fused);
  test::CliResult text = test::run_cli({"explain", model.string()});
  CHECK(text.out.find("@ /Sigmoid (in If '/If' else_branch)") != std::string::npos);

  // --node finds a node of a branch, says where it is and what fused it.
  test::CliResult node = test::run_cli({"explain", model.string(), "--node", "/Relu"});
  CHECK(node.exit_code == 0);
  CHECK(node.out.find("/Relu (in " + then_branch + ") (Relu)") != std::string::npos);
  CHECK(node.out.find("fused by FusedMatMulRelu") != std::string::npos);
  test::CliResult missing = test::run_cli({"explain", model.string(), "--node", "/NoSuchNode"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("its control-flow bodies included") != std::string::npos);

  // The kernel counts hold the bodies' kernels, before and after, as the files have them.
  const fs::path dir = test::scratch_dir("cf_body_kernels");
  test::CliResult opt =
      test::run_cli({"optimize", model.string(), "-o", (dir / "opt.onnx").string(), "--json"});
  REQUIRE(opt.exit_code == 0);
  const auto o = nlohmann::json::parse(opt.out);
  CHECK(o["body_kernels"]["before"] == body_nodes(model));
  CHECK(o["body_kernels"]["after"] == body_nodes(dir / "opt.onnx"));
  CHECK(o["body_kernels"]["after"] < o["body_kernels"]["before"]);  // the branches' Gemm + activation fused
  CHECK(o["kernels"]["before"].get<size_t>() > o["body_kernels"]["before"].get<size_t>());
  test::CliResult compiled =
      test::run_cli({"compile", model.string(), "-o", (dir / "m.plan").string(), "--json"});
  REQUIRE(compiled.exit_code == 0);
  const auto c = nlohmann::json::parse(compiled.out);
  CHECK(c["kernels"] == o["kernels"]);
  CHECK(c["body_kernels"] == o["body_kernels"]);
  test::CliResult report = test::run_cli({"optimize", model.string(), "-o", (dir / "opt2.onnx").string()});
  CHECK(report.out.find("(in bodies ") != std::string::npos);
}

TEST_CASE(
    "profile simulates control-flow bodies: a Loop takes trips x its body, an If its slower branch, and "
    "report and trace show each body") {
  using namespace geopt;
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  ascend::CompileResult loop = ascend::compile(import_onnx(control_flow_dir() / "loop_scan.onnx"), profile,
                                               compile_options(rules.get()));
  const ascend::PlanProfile p = ascend::simulate_plan(loop.plan);
  REQUIRE(p.bodies.size() == 1);
  const ascend::BodyProfile& body = p.bodies[0];
  const plan::Kernel& control = loop.plan.kernels(static_cast<int>(body.kernel));
  CHECK(control.op_type() == "Loop");
  CHECK(body.trips == 5);  // the model's constant trip count
  CHECK(body.profile.spans.size() == static_cast<size_t>(control.bodies(0).plan().kernels_size()));
  const ascend::KernelSpan& span = p.spans[body.kernel];
  CHECK(span.end_us - span.start_us == doctest::Approx(control.launch_us() + 5 * body.profile.latency_us));
  CHECK(p.latency_us >= span.end_us);
  CHECK(p.one_stream_us > 5 * body.profile.latency_us);

  // The If: its slower branch, both listed.
  ascend::CompileResult branches = ascend::compile(import_onnx(control_flow_dir() / "if_branch_shapes.onnx"),
                                                   profile, compile_options(rules.get()));
  const ascend::PlanProfile q = ascend::simulate_plan(branches.plan);
  REQUIRE(q.bodies.size() == 2);
  const double slower = std::max(q.bodies[0].profile.latency_us, q.bodies[1].profile.latency_us);
  const plan::Kernel& if_kernel = branches.plan.kernels(static_cast<int>(q.bodies[0].kernel));
  CHECK(q.spans[q.bodies[0].kernel].end_us - q.spans[q.bodies[0].kernel].start_us ==
        doctest::Approx(if_kernel.launch_us() + slower));

  // geopt profile: the bodies in the report, in JSON and as tracks of the trace, the
  // body's kernels inside the Loop's span.
  const fs::path dir = test::scratch_dir("cf_profile");
  REQUIRE(ascend::write_plan(loop.plan, dir / "loop.plan").empty());
  test::CliResult text =
      test::run_cli({"profile", (dir / "loop.plan").string(), "--trace", (dir / "trace.json").string()});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("Loop 'Loop' body: ") != std::string::npos);  // the unnamed Loop named after its op
  CHECK(text.out.find("x 5 trip(s)") != std::string::npos);
  test::CliResult json = test::run_cli({"profile", (dir / "loop.plan").string(), "--json"});
  const auto j = nlohmann::json::parse(json.out);
  REQUIRE(j["bodies"].size() == 1);
  CHECK(j["bodies"][0]["trips"] == 5);
  CHECK(j["bodies"][0]["total_us"].get<double>() == doctest::Approx(5 * body.profile.latency_us));
  const auto trace = nlohmann::json::parse(test::read_file(dir / "trace.json"));
  std::set<int> body_tracks;
  double loop_start = -1, loop_end = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" &&
        e["args"]["name"].get<std::string>().find("Loop 'Loop' body") != std::string::npos)
      body_tracks.insert(e["tid"].get<int>());
    if (e["ph"] == "X" && e["name"] == "Loop") {
      loop_start = e["ts"].get<double>();
      loop_end = loop_start + e["dur"].get<double>();
    }
  }
  CHECK(body_tracks.size() == control.bodies(0).plan().stream_count());
  size_t inside = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && body_tracks.count(e["tid"].get<int>())) {
      CHECK(e["ts"].get<double>() >= loop_start);
      CHECK(e["ts"].get<double>() + e["dur"].get<double>() <= loop_end + 1e-6);
      ++inside;
    }
  CHECK(inside == static_cast<size_t>(control.bodies(0).plan().kernels_size()));
}
