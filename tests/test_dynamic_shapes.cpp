// Dynamic shapes, ATC style: a plan of gears (--dynamic_dims, --dynamic_image_size) and
// a range plan (--input_shape_range), each compiled once from a model with symbolic dims
// and run at several sizes against torch's outputs at those sizes (examples/models:
// bert_tiny_dynamic_seq_op17/seq_N, conv_dynamic_hw_op13/hw_HxW, made by
// examples/export_models.py --dynamic).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "ascend/dynamic_compile.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "passes/symbolic_shapes.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

// The largest difference of the plan's outputs from torch's at the reference in `dir`.
double error_against_torch(const ascend::PlanExecutor& executor, const fs::path& dir) {
  const NamedTensors got = executor.run(read_npy_folder(dir / "inputs"));
  const auto outputs = read_npy_folder(dir / "outputs");
  NamedTensors want;
  for (const auto& [name, t] : got) {
    REQUIRE(outputs.count(name));
    want.emplace_back(name, outputs.at(name));
  }
  OutputsDiff d = diff_outputs(got, want);
  REQUIRE(d.mismatch.empty());
  return d.error();
}

const fs::path kBert = test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx";
const fs::path kConv = test::examples_dir() / "conv_dynamic_hw_op13.onnx";

ascend::CompileOptions compile_options(const dsl::RuleSet* rules) {
  ascend::CompileOptions o;
  o.rules = rules;
  return o;
}

const ascend::HardwareProfile& profile() {
  static const ascend::HardwareProfile p = ascend::load_profile("Ascend910B1");
  return p;
}

}  // namespace

TEST_CASE(
    "dynamic shapes: a BERT with a symbolic sequence compiles to one plan of three gears that runs each gear "
    "as torch does") {
  auto rules = test::load_rules({test::shipped_rules()});
  const ImportOptions open{.input_shapes = parse_input_shapes("input_ids:1,-1;attention_mask:1,-1")};
  const Model given = import_onnx(kBert, open);
  // One value per symbol behind the -1s: both inputs' dim is 'seq'.
  const auto gears =
      ascend::parse_gears(given, "input_ids:1,-1;attention_mask:1,-1", ascend::GearKind::dims, "32;64;128");
  REQUIRE(gears.size() == 3);
  CHECK(ascend::input_shapes_text(given, gears[1]) == "input_ids:1,64;attention_mask:1,64");
  ascend::GearedCompileResult g =
      ascend::compile_gears(given, gears, profile(), compile_options(rules.get()));
  REQUIRE(g.plan.gears_size() == 3);
  for (const auto& c : g.gears) {
    CHECK(c.checked);
    CHECK(c.check_ok);
    CHECK(c.memory.pool_bytes == c.memory.load_bytes);  // each gear at 1.000x its LOAD
    CHECK(c.optimized->after.kernels < c.optimized->before.kernels);
  }
  // Weights stored once, whatever the gear count: only the constants folded per gear
  // (the positions' rows, 0..seq-1, a slice of the largest gear's) could differ.
  const uint64_t largest = std::max(
      {g.gears[0].memory.weight_bytes, g.gears[1].memory.weight_bytes, g.gears[2].memory.weight_bytes});
  MESSAGE("shared weights " << g.plan.weight_bytes() << " B, largest gear's " << largest
                            << " B, the gears' summed " << g.gear_weight_bytes << " B");
  CHECK(g.plan.weight_bytes() * 2 < g.gear_weight_bytes);
  CHECK(g.plan.weight_bytes() <=
        largest + 4096);  // the other gears' folded shape constants, 512-byte aligned each

  const fs::path dir = test::scratch_dir("gears");
  ascend::write_plan(g.plan, dir / "bert.plan");
  const plan::Plan back = ascend::read_plan(dir / "bert.plan");
  ascend::PlanExecutor executor(back);
  for (int seq : {32, 64, 128}) {
    INFO("seq " << seq);
    CHECK(error_against_torch(executor,
                              kBert.parent_path() / kBert.stem() / ("seq_" + std::to_string(seq))) <= 1e-4);
  }
  // A length outside the gears is refused, naming them.
  CHECK_THROWS_WITH_AS(
      executor.run(read_npy_folder(kBert.parent_path() / kBert.stem() / "seq_37" / "inputs")),
      doctest::Contains(
          "match no gear of the plan; its gears: 0) input_ids:1,32;attention_mask:1,32; 1) input_ids:1,64"),
      Error);

  // The plan of gears against a plan of its largest gear alone (which holds the largest
  // constants folded from the sequence, the positions' rows): the two more kernel
  // sequences add little. (BERT-base against its middle gear: docs/BENCHMARKS.md.)
  const Model at128 =
      import_onnx(kBert, {.input_shapes = parse_input_shapes("input_ids:1,128;attention_mask:1,128")});
  ascend::CompileResult single = ascend::compile(at128, profile(), compile_options(rules.get()));
  ascend::write_plan(single.plan, dir / "single.plan");
  const double ratio = double(fs::file_size(dir / "bert.plan")) / double(fs::file_size(dir / "single.plan"));
  MESSAGE("3-gear plan / single-gear plan: " << ratio);
  CHECK(ratio <= 1.1);
}

TEST_CASE(
    "dynamic shapes: a range plan of the BERT runs at any length in its range as torch does, and refuses one "
    "outside it") {
  auto rules = test::load_rules({test::shipped_rules()});
  const Model given =
      import_onnx(kBert, {.input_shapes = parse_input_shapes("input_ids:1,-1;attention_mask:1,-1")});
  const auto ranges = ascend::parse_input_shape_range(given, "input_ids:[1,1~128];attention_mask:[1,1~128]");
  ascend::RangeCompileResult r =
      ascend::compile_range(given, ranges, profile(), compile_options(rules.get()));
  CHECK(r.compiled.checked);
  CHECK(r.compiled.check_ok);
  REQUIRE(r.checked_at.size() == 3);  // 1, 64 and 128
  CHECK(r.compiled.plan.input_ranges_size() == 2);
  // Planned at the upper bound: the pool is LOAD there, and above LOAD at the smaller sizes.
  CHECK(r.compiled.memory.pool_bytes == r.load_at.back());
  CHECK(r.load_at.front() < r.load_at.back());
  CHECK(r.compiled.optimized->after.kernels < r.compiled.optimized->before.kernels);
  // The rules that compare dims fire on the symbolic sequence as on a static one: every
  // residual sum joins its LayerNorm, and each attention is one kernel.
  CHECK(r.compiled.optimized->fused.at("AddLayerNormFusion") == 5);
  CHECK(r.compiled.optimized->fused.at("AttentionFusion") == 2);

  const fs::path dir = test::scratch_dir("range");
  ascend::write_plan(r.compiled.plan, dir / "bert.plan");
  const plan::Plan back = ascend::read_plan(dir / "bert.plan");
  ascend::PlanExecutor executor(back);
  for (int seq : {37, 64, 128, 32}) {
    INFO("seq " << seq);
    CHECK(error_against_torch(executor,
                              kBert.parent_path() / kBert.stem() / ("seq_" + std::to_string(seq))) <= 1e-4);
    auto feeds =
        read_npy_folder(kBert.parent_path() / kBert.stem() / ("seq_" + std::to_string(seq)) / "inputs");
    const NamedTensors outs = executor.run(feeds, ascend::StreamSchedule::adversarial);
    CHECK(outs[0].second.dims() == std::vector<int64_t>{1, seq, 64});
  }
  std::map<std::string, HostTensor> longer;
  longer["input_ids"] = HostTensor(DType::I64, {1, 129});
  longer["attention_mask"] = HostTensor(DType::I64, {1, 129});
  CHECK_THROWS_WITH_AS(executor.run(longer),
                       doctest::Contains("input 'input_ids': got i64[1,129], outside the range the plan was "
                                         "compiled for (input_ids:[1,1~128], i64)"),
                       Error);
  // Both inputs are 'seq' long: the plan was compiled for one length, so two are refused.
  std::map<std::string, HostTensor> unequal;
  unequal["input_ids"] = HostTensor(DType::I64, {1, 64});
  unequal["attention_mask"] = HostTensor(DType::I64, {1, 32});
  CHECK_THROWS_WITH_AS(executor.run(unequal),
                       doctest::Contains("input 'attention_mask': dim 1 is 32, but 'seq' is 64 in input "
                                         "'input_ids'; the plan was compiled for one size of 'seq'"),
                       Error);
}

TEST_CASE(
    "dynamic shapes: a CNN with dynamic H and W compiles to image-size gears and to a range, and matches "
    "torch at each size") {
  auto rules = test::load_rules({test::shipped_rules()});
  const fs::path refs = kConv.parent_path() / kConv.stem();
  const Model given = import_onnx(kConv);
  const auto gears =
      ascend::parse_gears(given, "image:1,3,-1,-1", ascend::GearKind::image_size, "32,32;64,64");
  ascend::GearedCompileResult g =
      ascend::compile_gears(given, gears, profile(), compile_options(rules.get()));
  ascend::PlanExecutor geared(g.plan);
  for (const char* hw : {"hw_32x32", "hw_64x64"}) {
    INFO(hw);
    CHECK(error_against_torch(geared, refs / hw) <= 1e-4);
  }
  for (const auto& c : g.gears) CHECK(c.memory.pool_bytes == c.memory.load_bytes);
  CHECK_THROWS_WITH_AS(geared.run(read_npy_folder(refs / "hw_40x56" / "inputs")),
                       doctest::Contains("1) image:1,3,64,64"), Error);

  const auto ranges = ascend::parse_input_shape_range(given, "image:[1,3,32~96,32~96]");
  ascend::RangeCompileResult r =
      ascend::compile_range(given, ranges, profile(), compile_options(rules.get()));
  CHECK(r.compiled.check_ok);
  // The strided dims keep names ("floor((height-1)/2)+1"), so the skip sum's two sides
  // are one shape and the range plan fuses as each gear does.
  CHECK(r.compiled.optimized->after.kernels == g.gears[0].optimized->after.kernels);
  CHECK(r.compiled.optimized->after.kernels == g.gears[1].optimized->after.kernels);
  ascend::PlanExecutor ranged(r.compiled.plan);
  for (const char* hw : {"hw_32x32", "hw_40x56", "hw_64x64", "hw_96x96"}) {
    INFO(hw);
    CHECK(error_against_torch(ranged, refs / hw) <= 1e-4);
  }
}

TEST_CASE(
    "dynamic shapes: shapes computed from Shape keep the sequence's symbol, and each is computed once") {
  Model m = import_onnx(kBert, {.input_shapes = parse_input_shapes("input_ids:1,-1;attention_mask:1,-1")});
  size_t placeholders_before = 0;
  for (const auto& v : m.graph->values())
    if (v->type.shape)
      for (const Dim& d : v->type.shape->dims()) placeholders_before += is_placeholder_dim(d);
  CHECK(placeholders_before > 0);  // ONNX's inference names the Reshapes' and the positions' dims unk__N
  const size_t shapes_before = test::count_op(m, "Shape");
  propagate_static_shapes(m, ascend::op_registry());
  for (const auto& n : m.graph->nodes())
    for (const Value* v : n->outputs())
      if (v && v->type.shape)
        for (const Dim& d : v->type.shape->dims()) {
          INFO(n->describe() << " -> " << v->name() << " " << v->type.to_string());
          CHECK(!is_placeholder_dim(d));
          CHECK(!d.is_unknown());
        }
  // The head split's [1,seq,4,16] and the positions' [seq] are known symbolically.
  size_t split = 0;
  for (const auto& n : m.graph->nodes())
    if (n->op_type == "Reshape" && n->output(0)->type.shape &&
        n->output(0)->type.shape->to_string() == "[1,seq,4,16]")
      ++split;
  CHECK(split == 6);  // Q, K and V in each of the 2 layers
  CHECK(test::count_op(m, "Shape") < shapes_before);

  // A Conv or pooling names what it makes of a symbolic dim by its formula.
  Model cnn = import_onnx(kConv);
  propagate_static_shapes(cnn, ascend::op_registry());
  std::set<std::string> conv_shapes;
  for (const auto& n : cnn.graph->nodes())
    if (n->op_type == "Conv") conv_shapes.insert(n->output(0)->type.shape->to_string());
  CHECK(conv_shapes.count("[1,8,floor((height-1)/2)+1,floor((width-1)/2)+1]"));
  CHECK(window_output(Dim::symbol("h"), 3, 1, 1, 2) == Dim::symbol("h"));  // 3x3, pad 1: the same size
  CHECK(window_output(Dim::symbol("h"), 1, 2, 1, 0) ==
        window_output(Dim::symbol("h"), 3, 2, 1, 2));  // 1x1 s2 and 3x3 s2 pad 1 agree
  CHECK(window_output(Dim::symbol("h"), 3, 2, 1, 0) != window_output(Dim::symbol("h"), 3, 2, 1, 2));
  CHECK(window_output(Dim(7), 3, 2, 1, 0) == Dim(3));
  CHECK(window_output(Dim(7), 2, 2, 1, 0, /*ceil_mode=*/true) == Dim(4));
}

TEST_CASE("dynamic shapes: ATC's options are read against the model, and a mistake is named") {
  const Model bert =
      import_onnx(kBert, {.input_shapes = parse_input_shapes("input_ids:1,-1;attention_mask:1,-1")});
  const std::string shape = "input_ids:1,-1;attention_mask:1,-1";
  // Positional: one value per -1.
  auto two = ascend::parse_gears(bert, shape, ascend::GearKind::dims, "16,16;8,8");
  CHECK(ascend::input_shapes_text(bert, two[1]) == "input_ids:1,8;attention_mask:1,8");
  CHECK_THROWS_WITH_AS(
      ascend::parse_gears(bert, shape, ascend::GearKind::dims, "16,16,16"),
      doctest::Contains("gives 3 value(s); --input_shape marks 2 dim(s) as -1 (1 distinct: seq)"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, shape, ascend::GearKind::dims, "16;x"),
                       doctest::Contains("'x' is not a size"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, shape, ascend::GearKind::dims, "16;16"),
                       doctest::Contains("is given twice"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, "", ascend::GearKind::dims, "16"),
                       doctest::Contains("needs --input_shape with -1"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, "input_ids:1,16", ascend::GearKind::dims, "16"),
                       doctest::Contains("input 'attention_mask' is i64[1,seq]"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, shape, ascend::GearKind::image_size, "16,16"),
                       doctest::Contains("an image size sets two (H and W)"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, shape, ascend::GearKind::batch_size, "1,2"),
                       doctest::Contains("a batch size sets dim 0 only"), Error);
  CHECK_THROWS_WITH_AS(
      ascend::parse_gears(bert, "input_ids:-1,-1;attention_mask:1,-1", ascend::GearKind::dims, "4"),
      doctest::Contains("marks dim 0 of input 'input_ids' dynamic (-1), but the model fixes it at 1"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_gears(bert, shape, ascend::GearKind::dims, "16,8"),
                       doctest::Contains("which the model names alike ('seq'): one size"), Error);
  const Model open_batch = import_onnx(kBert);
  const auto batches = ascend::parse_gears(open_batch, "input_ids:-1,16;attention_mask:-1,16",
                                           ascend::GearKind::batch_size, "1,2");
  REQUIRE(batches.size() == 2);
  CHECK(ascend::input_shapes_text(open_batch, batches[1]) == "input_ids:2,16;attention_mask:2,16");
  CHECK_THROWS_WITH_AS(ascend::parse_gears(open_batch, "input_ids:-1,16;attention_mask:-1,16",
                                           ascend::GearKind::batch_size, "1,0"),
                       doctest::Contains("'0' is not a batch size"), Error);
  CHECK_THROWS_WITH_AS(
      ascend::parse_input_shape_range(bert, "input_ids:[1,1~9999999999];attention_mask:[1,1~4]"),
      doctest::Contains("larger than a dim can be"), Error);

  CHECK_THROWS_WITH_AS(ascend::parse_input_shape_range(bert, "input_ids:[1,1~-1];attention_mask:[1,1~-1]"),
                       doctest::Contains("is unbounded; geopt plans memory at the range's upper bound"),
                       Error);
  CHECK_THROWS_WITH_AS(ascend::parse_input_shape_range(bert, "input_ids:[1,9~4];attention_mask:[1,4]"),
                       doctest::Contains("'9~4' has its minimum above its maximum"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_input_shape_range(bert, "input_ids:1,1~4"),
                       doctest::Contains("expected NAME:[D1,D2,...]"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_input_shape_range(bert, "input_ids:[1~4]"),
                       doctest::Contains("gives input 'input_ids' 1 dims"), Error);
  CHECK_THROWS_WITH_AS(ascend::parse_input_shape_range(bert, "input_ids:[1,1~4]"),
                       doctest::Contains("input 'attention_mask' is i64[1,seq]"), Error);
  const auto r = ascend::parse_input_shape_range(bert, "input_ids:[1,1~4];attention_mask:[1,1~4]");
  CHECK(ascend::input_ranges_text(bert, r) == "input_ids:[1,1~4];attention_mask:[1,1~4]");
}

TEST_CASE(
    "dynamic shapes: geopt compile writes a plan of gears that run, plan dump and profile --gear read") {
  const fs::path dir = test::scratch_dir("gears_cli");
  const std::string plan = (dir / "bert.plan").string();
  auto c = test::run_cli({"compile", kBert.string(), "--input_shape", "input_ids:1,-1;attention_mask:1,-1",
                          "--dynamic_dims", "32;64", "-o", plan});
  CHECK_MESSAGE(c.exit_code == 0, c.err);
  CHECK(c.out.find("gear 1           input_ids:1,64;attention_mask:1,64") != std::string::npos);
  CHECK(c.out.find("shared by the 2 gears") != std::string::npos);
  const fs::path seq64 = kBert.parent_path() / kBert.stem() / "seq_64";
  auto run =
      test::run_cli({"run", plan, "--input", "input_ids=" + (seq64 / "inputs" / "input_ids.npy").string(),
                     "--input", "attention_mask=" + (seq64 / "inputs" / "attention_mask.npy").string(),
                     "--compare", (seq64 / "outputs").string()});
  CHECK_MESSAGE(run.exit_code == 0, run.err);
  CHECK(run.out.find("gear 1 (input_ids:1,64;attention_mask:1,64)") != std::string::npos);
  const fs::path seq37 = kBert.parent_path() / kBert.stem() / "seq_37" / "inputs";
  auto outside = test::run_cli({"run", plan, "--input", "input_ids=" + (seq37 / "input_ids.npy").string(),
                                "--input", "attention_mask=" + (seq37 / "attention_mask.npy").string()});
  CHECK(outside.exit_code == 1);
  CHECK(outside.err.find("match no gear of the plan; its gears: 0) input_ids:1,32;attention_mask:1,32; 1) "
                         "input_ids:1,64;attention_mask:1,64") != std::string::npos);
  auto dump = test::run_cli({"plan", "dump", plan});
  CHECK(dump.exit_code == 0);
  CHECK(dump.out.find("gears            2, sharing weights") != std::string::npos);
  auto profile = test::run_cli({"profile", plan, "--gear", "1", "--json"});
  CHECK(profile.exit_code == 0);
  CHECK(profile.out.find("\"input_shape\": \"input_ids:1,64;attention_mask:1,64\"") != std::string::npos);
  auto random = test::run_cli({"run", plan, "--random-inputs", "--gear", "0"});
  CHECK(random.exit_code == 0);
  CHECK(random.out.find("gear 0") != std::string::npos);
  auto both = test::run_cli(
      {"compile", kBert.string(), "--dynamic_dims", "32", "--input_shape_range", "input_ids:[1,1~4]"});
  CHECK(both.exit_code == 2);  // a usage error, not bad input
  CHECK(both.err.find("are exclusive") != std::string::npos);
  auto range = test::run_cli({"compile", kBert.string(), "--input_shape_range",
                              "input_ids:[1,1~64];attention_mask:[1,1~64]", "-o", (dir / "r.plan").string()});
  CHECK_MESSAGE(range.exit_code == 0, range.err);
  CHECK(range.out.find("at               input_ids:1,32;attention_mask:1,32: LOAD") != std::string::npos);
  auto ranged = test::run_cli({"run", (dir / "r.plan").string(), "--input",
                               "input_ids=" + (seq37 / "input_ids.npy").string(), "--input",
                               "attention_mask=" + (seq37 / "attention_mask.npy").string(), "--compare",
                               (seq37.parent_path() / "outputs").string()});
  CHECK_MESSAGE(ranged.exit_code == 0, ranged.err);
  // explain sees what optimize sees: the sequence's symbol through the shape computations
  // (every residual LayerNorm fuses), and a range for the rules' conditions.
  auto explained =
      test::run_cli({"explain", kBert.string(), "--input_shape_range",
                     "input_ids:[1,1~64];attention_mask:[1,1~64]", "--rule", "AddLayerNormFusion"});
  CHECK_MESSAGE(explained.exit_code == 0, explained.err);
  CHECK(explained.out.find("5 rewrite(s) in the e-graph, 5 kept") != std::string::npos);
  auto unbounded = test::run_cli(
      {"explain", kBert.string(), "--input_shape_range", "input_ids:[1,1~-1];attention_mask:[1,1~-1]"});
  CHECK(unbounded.exit_code == 1);
  CHECK(unbounded.err.find("is unbounded") != std::string::npos);
  auto ranged_dump = test::run_cli({"plan", "dump", (dir / "r.plan").string()});
  CHECK(ranged_dump.out.find("range            input_ids:[1,1~64] (memory planned at the upper bound)") !=
        std::string::npos);
}

TEST_CASE(
    "dynamic shapes: a plan of gears or a range plan that does not hang together is refused, naming what is "
    "wrong") {
  const Model given = import_onnx(kConv);
  ascend::CompileOptions o = compile_options(nullptr);
  o.check = false;
  const auto gears =
      ascend::parse_gears(given, "image:1,3,-1,-1", ascend::GearKind::image_size, "32,32;64,64");
  const plan::Plan good = ascend::compile_gears(given, gears, profile(), o).plan;
  CHECK_NOTHROW(ascend::check_plan(good, "p"));
  auto refused = [](const plan::Plan& p, const char* why) {
    CHECK_THROWS_WITH_AS(ascend::check_plan(p, "p"), doctest::Contains(why), Error);
  };
  plan::Plan own = good;
  own.mutable_gears(1)->mutable_plan()->set_weights("abcd");
  own.mutable_gears(1)->mutable_plan()->set_weight_bytes(4);
  refused(own, "p: gear 1 (image:1,3,64,64): a gear has a weight region of its own");
  plan::Plan twice = good;
  *twice.mutable_gears(1) = twice.gears(0);
  refused(twice, "takes the same input shapes as an earlier gear");
  plan::Plan mixed = good;
  *mixed.add_kernels() = good.gears(0).plan().kernels(0);
  refused(mixed, "a plan of gears has kernels, bindings or ranges of its own");
  plan::Plan renamed = good;
  renamed.mutable_gears(1)->mutable_plan()->mutable_outputs(0)->set_name("other");
  refused(renamed, "binds other inputs or outputs than gear 0");
  plan::Plan outside = good;
  for (auto& k : *outside.mutable_gears(0)->mutable_plan()->mutable_kernels())
    for (auto& r : *k.mutable_inputs())
      if (r.region() == plan::WEIGHT) r.set_offset(good.weight_bytes());
  refused(outside, "lies outside its region");

  const plan::Plan ranged =
      ascend::compile_range(given, ascend::parse_input_shape_range(given, "image:[1,3,32~64,32~64]"),
                            profile(), o)
          .compiled.plan;
  CHECK_NOTHROW(ascend::check_plan(ranged, "p"));
  plan::Plan wider = ranged;
  wider.mutable_input_ranges(0)->mutable_dims(2)->set_max(128);
  refused(wider, "input 'image' dim 2 has the range 32~128, planned at 64");
  plan::Plan unranged = ranged;
  unranged.clear_input_ranges();
  refused(unranged, "input 'image' is bounded but has no range");
  plan::Plan inverted = ranged;
  inverted.mutable_input_ranges(0)->mutable_dims(3)->set_min(65);
  refused(inverted, "input 'image' dim 3 has the range 65~64");
  plan::Plan twice_bound = ranged;
  *twice_bound.add_inputs() = ranged.inputs(0);
  refused(twice_bound, "input 'image' is bound twice");
  // A bounded output given fewer bytes than its writer's: refused when read, never copied past them.
  plan::Plan short_output = ranged;
  auto* out = short_output.mutable_outputs(0);
  out->clear_dims();
  out->add_dims(1);
  out->set_size(4);
  CHECK_NOTHROW(ascend::check_plan(short_output, "p"));
  std::map<std::string, HostTensor> feeds;
  feeds["image"] = HostTensor(DType::F32, {1, 3, 40, 56});
  CHECK_THROWS_WITH_AS(ascend::PlanExecutor(short_output).run(feeds),
                       doctest::Contains("larger than the 4 bytes the plan gives it"), Error);
}
