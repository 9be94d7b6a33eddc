// Lowering: execution order, memory plan, streams/events, plan file, executor.
// The executor computes at the planned offsets with the planned events, so
// these tests also prove that corrupting a plan changes the numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "ascend/compile.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/execution_order.h"
#include "ascend/hardware_profile.h"
#include "ascend/memory_plan.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "ascend/plan_profile.h"
#include "ascend/stream_plan.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "test_support.h"
#include "util/error.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

// What geopt compile lowers, the stream plan kept as planned (the tests
// below corrupt events and compare stream counts).
using Lowered = ascend::CompileResult;
Lowered lower(const Model& m, const dsl::RuleSet* rules = nullptr, bool reuse = true,
              size_t max_streams = 4) {
  ascend::CompileOptions options;
  options.rules = rules;
  options.memory.reuse = reuse;
  options.max_streams = max_streams;
  options.choose_streams = false;
  options.check = false;
  return ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
}

// Largest abs difference of the plan's outputs from the reference on `original`;
// infinity when a shape differs or a NaN appears on one side only.
double plan_error(const plan::Plan& p, const Model& original, ascend::StreamSchedule schedule) {
  auto feeds = random_inputs(original, 7);
  return diff_outputs(ascend::PlanExecutor(p).run(feeds, schedule),
                      Evaluator(original, ascend::op_registry()).run(feeds))
      .error();
}

// Every symbolic input dim fixed at 5 (as --input_shape does; odd on purpose).
ImportOptions fixed_inputs(const fs::path& path) {
  ImportOptions options;
  Model m = import_onnx(path);
  for (const Value* v : m.graph->inputs()) {
    if (v->initializer || !v->type.shape || v->type.shape->is_static()) continue;
    std::vector<int64_t> dims;
    for (const Dim& d : v->type.shape->dims()) dims.push_back(d.is_static() ? d.value() : 5);
    options.input_shapes[v->name()] = dims;
  }
  return options;
}

TEST_CASE("every example model compiles, optimized or not, and its plan computes what the model computes") {
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  size_t multi_stream = 0, dynamic = 0;
  for (const auto& path : test::example_models()) {
    INFO(path.filename().string());
    ImportOptions options = fixed_inputs(path);
    dynamic += !options.input_shapes.empty();
    Model original = import_onnx(path, options);
    // What geopt compile runs, optimized and not: its own check must pass; and with
    // the stream plan kept as planned (up to 4 streams), the plan computes what the
    // model does on threads and in the adversarial order.
    for (const dsl::RuleSet* with :
         {static_cast<const dsl::RuleSet*>(nullptr), static_cast<const dsl::RuleSet*>(rules.get())}) {
      ascend::CompileOptions co;
      co.rules = with;
      ascend::CompileResult c = ascend::compile(original, profile, co);
      CHECK(c.checked);
      CHECK(c.check_ok);
      CHECK(c.memory.pool_bytes >= c.memory.load_bytes);
      co.choose_streams = false;
      co.check = false;
      Lowered l = ascend::compile(original, profile, co);
      ascend::validate_memory_plan(l.memory);
      ascend::validate_stream_plan(l.streams);
      CHECK(l.memory.pool_bytes >= l.memory.load_bytes);
      CHECK(l.memory.pool_bytes <= l.memory.strategy_pool_bytes.at("greedy by size"));
      if (l.model.graph->nodes().size() > 2)
        CHECK(l.memory.pool_bytes < l.memory.no_reuse_bytes);  // the seed case fuses to one kernel
      CHECK(plan_error(l.plan, original, ascend::StreamSchedule::in_order) <= 1e-4);
      CHECK(plan_error(l.plan, original, ascend::StreamSchedule::adversarial) <= 1e-4);
      multi_stream += l.streams.stream_count > 1 && !l.streams.events.empty();
    }
  }
  CHECK(dynamic == 2);       // bert_tiny_dynamic_seq_op17, conv_dynamic_hw_op13
  CHECK(multi_stream >= 4);  // the transformers and ResNet branch
}

TEST_CASE(
    "--input_shape fixes symbolic input dims so the shapes downstream are static and the model compiles") {
  fs::path dir = test::scratch_dir("input-shape");
  test::save_model(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,16] x, float[16,8] w) => (float[N,8] y) {
      h = MatMul(x, w)
      r = Relu(h)
      s = Sigmoid(h)
      y = Add(r, s)
    })"),
                   dir / "dyn.onnx");
  ImportOptions options;
  options.input_shapes = parse_input_shapes("x:4,16;w:16,8");
  Model m = import_onnx(dir / "dyn.onnx", options);
  for (const auto& v : m.graph->values()) {
    INFO(v->name());
    REQUIRE(v->type.shape);
    CHECK(v->type.shape->is_static());
  }
  CHECK(m.graph->outputs()[0]->type.to_string() == "f32[4,8]");
  Lowered l = lower(m);
  CHECK(plan_error(l.plan, m, ascend::StreamSchedule::adversarial) <= 1e-4);

  auto shapes = parse_input_shapes("input_ids:1,128;attention_mask:1,128");
  CHECK(shapes["attention_mask"] == std::vector<int64_t>{1, 128});
  CHECK_THROWS_WITH_AS(parse_input_shapes("input_ids:1,x"), doctest::Contains("'x' is not a dimension"),
                       Error);
  CHECK_THROWS_WITH_AS(parse_input_shapes("input_ids"), doctest::Contains("expected NAME:D1,D2"), Error);
  ImportOptions wrong;
  wrong.input_shapes = {{"image", {1, 3}}};
  CHECK_THROWS_WITH_AS(import_onnx(dir / "dyn.onnx", wrong),
                       doctest::Contains("'image', which is not an input of the model"), Error);
  wrong.input_shapes = {{"x", {1, 2, 3}}};
  CHECK_THROWS_WITH_AS(import_onnx(dir / "dyn.onnx", wrong),
                       doctest::Contains("gives input 'x' 3 dims, the model declares 2"), Error);
  wrong.input_shapes = {{"x", {4, 17}}};
  CHECK_THROWS_WITH_AS(import_onnx(dir / "dyn.onnx", wrong), doctest::Contains("the model fixes it at 16"),
                       Error);

  // Positions computed with Range over Shape stay unknown to ONNX inference; the
  // planner refuses them with a clear message, and geopt compile folds them first.
  ImportOptions bert;
  bert.input_shapes = {{"input_ids", {1, 16}}, {"attention_mask", {1, 16}}};
  Model dynamic = import_onnx(test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx", bert);
  CHECK_THROWS_WITH_AS(ascend::plan_memory(*dynamic.graph, ascend::memory_aware_order(*dynamic.graph), {}),
                       doctest::Contains("'/Range_output_0' has shape i64[unk__0]"), Error);
  CHECK(plan_error(lower(dynamic).plan, dynamic, ascend::StreamSchedule::adversarial) <= 1e-4);
  StaticShapeReport report = propagate_static_shapes(dynamic, ascend::op_registry());
  CHECK(report.folded > 0);
  CHECK(report.dynamic.empty());
}

TEST_CASE("the execution order is topological and frees a wide branch before starting the next") {
  Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,4096] x) => (float[1,1] y) {
      a1 = Relu(x)
      b1 = Sigmoid(x)
      a2 = ReduceSum(a1)
      b2 = ReduceSum(b1)
      y = Add(a2, b2)
    })"),
                              "order.onnx");
  auto order = ascend::memory_aware_order(*m.graph);
  std::vector<std::string> names;
  for (size_t k : order) names.push_back(m.graph->nodes()[k]->op_type);
  // Each 16 KiB branch is reduced before the other starts, so two never live at once.
  CHECK(names == std::vector<std::string>{"Relu", "ReduceSum", "Sigmoid", "ReduceSum", "Add"});
}

TEST_CASE("GE's topological sorting modes issue two branches as ATC describes them") {
  Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,64] x) => (float[1,64] y) {
      a1 = Relu(x)
      b1 = Sigmoid(x)
      a2 = Neg(a1)
      b2 = Neg(b1)
      a3 = Abs(a2)
      b3 = Abs(b2)
      y = Add(a3, b3)
    })"),
                              "branches.onnx");
  auto order = [&](const char* mode) {
    std::string names;
    for (size_t k : ascend::execution_order(*m.graph, *ascend::parse_topo_sorting_mode(mode)))
      names += m.graph->nodes()[k]->outputs()[0]->name() + " ";
    return names;
  };
  // Level by level; each branch to its end before the next; from the output back, its
  // inputs in order, depth first; the model's own order.
  CHECK(order("0") == "a1 b1 a2 b2 a3 b3 y ");
  CHECK(order("1") == "a1 a2 a3 b1 b2 b3 y ");
  CHECK(order("2") == "a1 a2 a3 b1 b2 b3 y ");
  CHECK(order("3") == "a1 b1 a2 b2 a3 b3 y ");
  CHECK(order("bfs") == order("0"));
  CHECK(!ascend::parse_topo_sorting_mode("4"));
}

TEST_CASE("every topological sorting mode gives a plan that computes the model, on ResNet-18 and BERT") {
  auto rules = test::load_rules({test::shipped_rules()});
  // ResNet-18's branches (a block's conv and its shortcut) meet at once, so every mode
  // issues them alike; BERT's attention and residual branches are ordered three ways.
  for (const auto& [model, distinct] :
       {std::pair{"resnet18_narrow_op13.onnx", size_t{1}}, std::pair{"bert_tiny_op13.onnx", size_t{3}}}) {
    Model m = import_onnx(test::examples_dir() / model);
    std::set<std::vector<std::string>> orders;
    for (const char* mode : {"memory", "0", "1", "2", "3"}) {
      const std::string name = model;
      INFO(name << " --topo_sorting_mode " << mode);
      ascend::CompileOptions options;
      options.rules = rules.get();
      options.check = false;
      options.topo_sorting_mode = *ascend::parse_topo_sorting_mode(mode);
      options.optimize.limits.seconds = 600;  // one saturation whatever the machine's load
      const Lowered l = ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
      std::vector<std::string> kernels;
      for (const auto& k : l.plan.kernels()) kernels.push_back(k.name());
      orders.insert(kernels);
      CHECK(plan_error(l.plan, m, ascend::StreamSchedule::adversarial) <= 1e-4);
    }
    const size_t expected = distinct;  // named: clang 14's doctest captures no structured binding
    CHECK(orders.size() == expected);
  }
}

TEST_CASE(
    "the memory plan: views share bytes, in-place reuse, no reuse when disabled, validator catches overlap") {
  Model m = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(m);
  CHECK(l.memory.views > 0);
  CHECK(l.memory.in_place > 0);
  for (const auto& b : l.memory.buffers) CHECK(b.offset % ascend::kMemoryAlignment == 0);
  Lowered none = lower(m, nullptr, false);
  CHECK(none.memory.pool_bytes == none.memory.no_reuse_bytes);
  CHECK(none.memory.in_place == 0);
  CHECK(plan_error(none.plan, m, ascend::StreamSchedule::adversarial) <= 1e-4);

  // Two buffers alive together moved onto the same bytes.
  ascend::MemoryPlan broken = l.memory;
  auto& bufs = broken.buffers;
  size_t a = 0, b = 0;
  for (size_t i = 0; i < bufs.size() && !b; ++i)
    for (size_t j = i + 1; j < bufs.size(); ++j)
      if (bufs[i].first_step <= bufs[j].last_step && bufs[j].first_step <= bufs[i].last_step) {
        a = i, b = j;
        break;
      }
  REQUIRE(b != 0);
  bufs[b].offset = bufs[a].offset;
  CHECK_THROWS_WITH_AS(ascend::validate_memory_plan(broken),
                       doctest::Contains("are alive together and share bytes"), Error);
}

TEST_CASE(
    "a FusedConv's output takes its residual's bytes: a ResNet's residual stream stays in one buffer, and "
    "the plan computes the model") {
  Model m = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  auto rules = test::load_rules({test::shipped_rules()});
  Lowered l = lower(m, rules.get());
  int residual_convs = 0, over_residual = 0;
  for (const auto& k : l.plan.kernels()) {
    if (k.op_type() != "FusedConv" || k.inputs_size() < 4 || k.inputs(3).absent()) continue;
    ++residual_convs;
    const auto& residual = k.inputs(3);
    const auto& out = k.outputs(0);
    if (residual.region() == out.region() && residual.offset() == out.offset()) ++over_residual;
  }
  REQUIRE(residual_convs > 0);
  // Every residual dies at its conv in a ResNet's basic blocks.
  CHECK(over_residual == residual_convs);
  CHECK(l.memory.in_place >= static_cast<size_t>(residual_convs));
  for (auto schedule : {ascend::StreamSchedule::in_order, ascend::StreamSchedule::adversarial})
    CHECK(plan_error(l.plan, m, schedule) <= 1e-4);
}

TEST_CASE(
    "a Split along an outer axis is a view: each piece at its offset in the input's bytes, the plan still "
    "computes the model") {
  // BERT's Q, K and V as one product [3, S, H] (QKVMergeBiased), split along the first axis.
  auto rules = test::load_rules({test::shipped_rules()});
  Model original = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(original, rules.get());
  size_t splits = 0;
  for (const auto& k : l.plan.kernels()) {
    if (k.op_type() != "Split") continue;
    ++splits;
    uint64_t at = k.inputs(0).offset();
    for (const auto& piece : k.outputs()) {
      CHECK(piece.offset() == at);  // one after another, inside the product's bytes
      at += piece.size();
    }
    CHECK(at == k.inputs(0).offset() + k.inputs(0).size());
  }
  CHECK(splits == 2);  // one per layer
  CHECK(plan_error(l.plan, original, ascend::StreamSchedule::adversarial) <= 1e-4);

  // Along an inner axis the pieces are strided: each gets bytes of its own.
  Model inner = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x) => (float[2,3] a, float[2,3] b) {
      n = Neg(x)
      a, b = Split <axis = 1> (n)
    })"),
                                  "split.onnx", {});
  Lowered li = lower(inner);
  size_t inner_splits = 0;
  for (const auto& k : li.plan.kernels())
    if (k.op_type() == "Split") {
      CHECK(k.outputs(0).offset() != k.inputs(0).offset());
      ++inner_splits;
    }
  CHECK(inner_splits == 1);
  CHECK(plan_error(li.plan, inner, ascend::StreamSchedule::adversarial) == 0);
}

TEST_CASE(
    "OP_NO_REUSE_MEM: the named kernels' outputs keep bytes of their own, and the plan still computes the "
    "model") {
  Model m = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  auto rules = test::load_rules({test::shipped_rules()});
  ascend::CompileOptions options;
  options.rules = rules.get();
  options.memory.no_reuse = {"MaxPool", "Add", "NoSuchKernel"};
  ascend::CompileResult apart = ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
  options.memory.no_reuse.clear();
  ascend::CompileResult shared = ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
  CHECK(apart.check_ok);
  CHECK(apart.memory.no_reuse_unmatched ==
        std::set<std::string>{"Add", "NoSuchKernel"});  // Adds all fused into convs
  REQUIRE(apart.memory.kept_apart == 1);
  CHECK(apart.memory.pool_bytes > shared.memory.pool_bytes);
  size_t checked = 0;
  const auto& bufs = apart.memory.buffers;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Node* producer = bufs[i].values.front()->producer();
    if (!producer || producer->op_type != "MaxPool") continue;
    ++checked;
    for (size_t j = 0; j < bufs.size(); ++j)
      if (j != i)
        CHECK((bufs[j].offset >= bufs[i].offset + bufs[i].bytes ||
               bufs[i].offset >= bufs[j].offset + bufs[j].bytes));
  }
  CHECK(checked == 1);
  for (auto schedule : {ascend::StreamSchedule::in_order, ascend::StreamSchedule::adversarial})
    CHECK(plan_error(apart.plan, m, schedule) <= 1e-4);
  // The op type as plan dump prints it, domain first.
  options.memory.no_reuse = {"ai.geopt::FusedConv"};
  ascend::CompileResult qualified = ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
  CHECK(qualified.memory.no_reuse_unmatched.empty());
  size_t conv_outputs = 0;  // the last conv also writes its channels' means (the pool's)
  for (const auto& n : qualified.model.graph->nodes())
    if (n->op_type == "FusedConv")
      conv_outputs += static_cast<size_t>(std::count_if(n->outputs().begin(), n->outputs().end(),
                                                        [](const Value* v) { return v != nullptr; }));
  CHECK(conv_outputs > test::count_op(qualified.model, "FusedConv"));
  CHECK(qualified.memory.kept_apart == conv_outputs);
  CHECK(qualified.check_ok);
}

// Moves every reference to tensor `name` to `offset`.
void move_tensor(plan::Plan& p, const std::string& name, uint64_t offset) {
  for (auto& k : *p.mutable_kernels()) {
    for (auto& r : *k.mutable_inputs())
      if (r.name() == name) r.set_offset(offset);
    for (auto& r : *k.mutable_outputs())
      if (r.name() == name) r.set_offset(offset);
  }
  for (auto& r : *p.mutable_outputs())
    if (r.name() == name) r.set_offset(offset);
}

// The executor computes what the plan says, so these faults once showed as wrong numbers
// (adversarial order); the loader now refuses them, naming the kernels (plan_ordering.h).
TEST_CASE(
    "fault injection: a tensor moved onto a live one, or a dropped event, is refused when the plan loads") {
  auto rules = test::load_rules({test::shipped_rules()});
  Model original = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(original, rules.get());
  REQUIRE(plan_error(l.plan, original, ascend::StreamSchedule::adversarial) <= 1e-4);

  SUBCASE("offset shifted onto a live tensor") {
    // A kernel's output moved onto the bytes of a tensor produced earlier and read after it.
    const auto& ks = l.plan.kernels();
    bool injected = false;
    for (int k = 1; k < ks.size() && !injected; ++k) {
      const auto& out = ks[k].outputs(0);
      for (int e = 0; e < k && !injected; ++e) {
        const auto& live = ks[e].outputs(0);
        bool read_later = false;
        for (int r = k + 1; r < ks.size(); ++r)
          for (const auto& in : ks[r].inputs()) read_later = read_later || in.name() == live.name();
        if (!read_later || live.region() != plan::ACTIVATION ||
            live.offset() + out.size() > l.plan.activation_bytes())
          continue;
        // Not a view of it (a Reshape, a piece of a Split): those share its bytes by design.
        if (out.offset() < live.offset() + live.size() && live.offset() < out.offset() + out.size()) continue;
        plan::Plan faulty = l.plan;
        move_tensor(faulty, out.name(), live.offset());
        CHECK_THROWS_WITH_AS(plan_error(faulty, original, ascend::StreamSchedule::adversarial),
                             doctest::Contains("over bytes"), Error);
        injected = true;
      }
    }
    CHECK(injected);
  }
  SUBCASE("one event dropped") {
    REQUIRE(l.plan.events_size() > 0);
    plan::Plan faulty = l.plan;
    const auto& ev = faulty.events(0);
    auto* waiter = faulty.mutable_kernels(static_cast<int>(ev.to_kernel()))->mutable_wait_events();
    waiter->erase(std::find(waiter->begin(), waiter->end(), ev.id()));
    CHECK_THROWS_WITH_AS(plan_error(faulty, original, ascend::StreamSchedule::adversarial),
                         doctest::Contains("no stream or event orders"), Error);

    ascend::StreamPlan missing = l.streams;
    missing.events.erase(missing.events.begin());
    CHECK_THROWS_WITH_AS(ascend::validate_stream_plan(missing), doctest::Contains("no event orders them"),
                         Error);
  }
}

TEST_CASE("streams: independent branches get their own streams, and --enable-single-stream needs no events") {
  Model m = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(m);
  CHECK(l.streams.stream_count > 1);
  CHECK(l.streams.events.size() < l.streams.cross_stream_dependencies);  // implied ones pruned
  for (const auto& e : l.streams.events) CHECK(l.streams.stream_of[e.from] != l.streams.stream_of[e.to]);
  Lowered one = lower(m, nullptr, true, 1);
  CHECK(one.streams.stream_count == 1);
  CHECK(one.streams.events.empty());
  CHECK(plan_error(one.plan, m, ascend::StreamSchedule::in_order) <= 1e-4);
}

TEST_CASE(
    "one executor runs a plan on several streams again and again, from two threads at once, and a failing "
    "kernel ends a run with its error") {
  Model m = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(m);
  REQUIRE(l.plan.stream_count() > 1);
  // The op of a kernel off stream 0 fails when told to: every kernel of that op does,
  // wherever it runs.
  const plan::Kernel* off_main = nullptr;
  for (const auto& k : l.plan.kernels())
    if (k.stream() > 0 && !off_main) off_main = &k;
  REQUIRE(off_main);
  const KernelInfo* real = ascend::op_registry().find(off_main->domain(), off_main->op_type());
  REQUIRE(real);
  std::atomic<bool> fail{false};
  OpRegistry registry = ascend::op_registry();
  registry.add(
      off_main->domain(), off_main->op_type(),
      [real, &fail](KernelContext& ctx) {
        if (fail) throw Error("injected failure");
        real->fn(ctx);
      },
      real->half_via_f32);
  auto feeds = random_inputs(m, 7);
  auto expected = Evaluator(m, ascend::op_registry()).run(feeds);
  // The plan as lowered, and with a stream that has no kernels (a plan file may say so):
  // it takes no part in a run, and must not stall one either.
  plan::Plan with_empty_stream = l.plan;
  with_empty_stream.set_stream_count(l.plan.stream_count() + 1);
  for (const plan::Plan* p : {&l.plan, &with_empty_stream}) {
    CAPTURE(p->stream_count());
    ascend::PlanExecutor executor(*p, registry);
    auto error = [&] { return diff_outputs(executor.run(feeds), expected).error(); };
    for (int i = 0; i < 3; ++i) CHECK(error() <= 1e-4);
    fail = true;
    for (int i = 0; i < 2; ++i)
      CHECK_THROWS_WITH_AS(executor.run(feeds), doctest::Contains("injected failure"), Error);
    fail = false;
    CHECK(error() <= 1e-4);
    // Runs at once each take their own pool.
    std::vector<double> errors(2, 0);
    std::vector<std::string> failures(2);
    std::vector<std::thread> callers;
    for (size_t t = 0; t < errors.size(); ++t)
      callers.emplace_back([&, t] {
        try {
          for (int i = 0; i < 5; ++i) errors[t] = std::max(errors[t], error());
        } catch (const std::exception& e) {
          failures[t] = e.what();
        }
      });
    for (auto& c : callers) c.join();
    for (size_t t = 0; t < errors.size(); ++t) {
      CHECK(failures[t].empty());
      CHECK(errors[t] <= 1e-4);
    }
  }
}

TEST_CASE("plan files round-trip byte for byte, and corrupt and foreign ones get a clear error") {
  Model m = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  Lowered l = lower(m);
  fs::path dir = test::scratch_dir("plan");
  ascend::write_plan(l.plan, dir / "a.plan");
  plan::Plan back = ascend::read_plan(dir / "a.plan");
  CHECK(back.structure_crc() != 0);  // the file is sealed; the plan in memory is left as it was
  CHECK(back.weights_crc() != 0);
  CHECK(fs::file_size(dir / "a.plan") == back.ByteSizeLong());
  back.clear_structure_crc();
  back.clear_weights_crc();
  CHECK(back.SerializeAsString() == l.plan.SerializeAsString());
  CHECK(plan_error(back, m, ascend::StreamSchedule::in_order) <= 1e-4);
  Lowered again = lower(m);
  ascend::write_plan(again.plan, dir / "b.plan");
  CHECK(test::read_file(dir / "a.plan") == test::read_file(dir / "b.plan"));  // deterministic
  // The weight region is streamed after the rest of the message: still one plain Plan.
  plan::Plan plain;
  REQUIRE(plain.ParseFromString(test::read_file(dir / "a.plan")));
  CHECK(plain.weights() == l.plan.weights());

  std::string bytes = test::read_file(dir / "a.plan");
  test::write_file(dir / "cut.plan", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH_AS(ascend::read_plan(dir / "cut.plan"), doctest::Contains("cut.plan"), Error);
  plan::Plan old = l.plan;
  old.set_format_version(0);
  ascend::write_plan(old, dir / "old.plan");
  CHECK_THROWS_WITH_AS(ascend::read_plan(dir / "old.plan"), doctest::Contains("format version 0"), Error);
  CHECK_THROWS_WITH_AS(ascend::read_plan(test::examples_dir() / "resnet18_narrow_op13.onnx"),
                       doctest::Contains("plan"), Error);
  plan::Plan outside = l.plan;
  outside.mutable_kernels(0)->mutable_outputs(0)->set_offset(outside.activation_bytes());
  CHECK_THROWS_WITH_AS(ascend::PlanExecutor{outside}, doctest::Contains("lies outside its region"), Error);
}

TEST_CASE("weights over the inline limit go to a side file that reading loads and checks") {
  Model m = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  Lowered l = lower(m);
  fs::path dir = test::scratch_dir("plan-side");
  const std::string inline_bytes = l.plan.SerializeAsString();
  fs::path side = ascend::write_plan(l.plan, dir / "s.plan", {.inline_weight_limit = 1024});
  CHECK(side == dir / "s.plan.weights");
  CHECK(l.plan.SerializeAsString() == inline_bytes);  // the weights were moved back
  CHECK(fs::file_size(side) == l.plan.weight_bytes());
  CHECK(fs::file_size(dir / "s.plan") < l.plan.weight_bytes() / 2);
  plan::Plan back = ascend::read_plan(dir / "s.plan");
  CHECK(back.weights_file() == "s.plan.weights");
  CHECK(back.weights() == l.plan.weights());
  CHECK(plan_error(back, m, ascend::StreamSchedule::adversarial) <= 1e-4);
  CHECK(ascend::write_plan(l.plan, dir / "i.plan").empty());  // 1 GiB by default: inline
  CHECK(!fs::exists(dir / "i.plan.weights"));

  std::string weights = test::read_file(side);
  test::write_file(side, weights.substr(0, weights.size() - 1));
  const std::string short_by_one = "holds " + std::to_string(weights.size() - 1) + " bytes, the plan needs";
  CHECK_THROWS_WITH_AS(ascend::read_plan(dir / "s.plan"), doctest::Contains(short_by_one.c_str()), Error);
  fs::remove(side);
  CHECK_THROWS_WITH_AS(ascend::read_plan(dir / "s.plan"), doctest::Contains("s.plan.weights cannot be read"),
                       Error);
}

TEST_CASE(
    "the simulated profile: streams overlap within the bounds, and the Chrome trace holds every kernel and "
    "event") {
  Model m = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Lowered l = lower(m);
  ascend::PlanProfile p = ascend::simulate_plan(l.plan);
  REQUIRE(l.plan.stream_count() > 1);
  CHECK(p.latency_us > 0);
  CHECK(p.latency_us < p.one_stream_us);             // parallel branches overlap
  CHECK(p.latency_us >= p.critical_path_us - 1e-9);  // never faster than the longest chain
  CHECK(p.memory_reuse_rate == doctest::Approx(l.memory.reuse_rate()));
  CHECK(p.cube_utilization > 0);
  CHECK(p.vector_utilization > 0);
  for (const auto& s : p.spans)  // views (Reshape, Unsqueeze) launch nothing and take no time
    CHECK(s.end_us - s.start_us >= l.plan.kernels(static_cast<int>(s.kernel)).modeled_us() - 1e-9);
  for (const auto& e : l.plan.events())
    CHECK(p.spans[e.to_kernel()].start_us >= p.spans[e.from_kernel()].end_us);

  auto trace = nlohmann::json::parse(ascend::chrome_trace(l.plan, p));
  size_t complete = 0, flows = 0;
  for (const auto& e : trace["traceEvents"]) {
    complete += e["ph"] == "X";
    flows += e["ph"] == "s" || e["ph"] == "f";
  }
  CHECK(complete == static_cast<size_t>(l.plan.kernels_size()));
  CHECK(flows == 2 * static_cast<size_t>(l.plan.events_size()));
  CHECK(trace["metadata"]["latency_us"].get<double>() == doctest::Approx(p.latency_us));

  // One stream: the simulation is the kernels back to back.
  Lowered one = lower(m, nullptr, true, 1);
  ascend::PlanProfile serial = ascend::simulate_plan(one.plan);
  CHECK(serial.latency_us == doctest::Approx(serial.one_stream_us));
}

}  // namespace
}  // namespace geopt
