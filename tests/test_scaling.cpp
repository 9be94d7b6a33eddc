// Compile cost at depth: the incremental parts of extraction and lowering (which
// keep them near-linear in the model) must give the answers the direct, quadratic
// computations give, and nothing may recurse over the graph's depth.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "ascend/cost_model.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/execution_order.h"
#include "ascend/hardware_profile.h"
#include "ascend/memory_plan.h"
#include "ascend/optimizer.h"
#include "ascend/plan_profile.h"
#include "ascend/stream_plan.h"
#include "dsl_support.h"
#include "egraph/extract.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

// A text model: x -> Relu -> `count` times `op` -> y.
Model chain(const std::string& op, size_t count) {
  std::ostringstream text;
  text << "<ir_version: 8, opset_import: [\"\" : 13]>\n g (float[4, 8] x) => (float[4, 8] y) {\n t0 = "
          "Relu(x)\n";
  for (size_t i = 1; i <= count; ++i)
    text << (i == count ? "y" : "t" + std::to_string(i)) << " = " << op << "(t" << i - 1 << ")\n";
  text << "}";
  return import_onnx_proto(test::parse_text_model(text.str().c_str()), op + "_chain.onnx");
}

std::unique_ptr<dsl::RuleSet> rules_from(const std::string& text) {
  fs::path dir = test::scratch_dir("scaling-rules");
  std::ofstream(dir / "r.gerule") << text;
  return test::load_rules({(dir / "r.gerule").string()});
}

}  // namespace

TEST_CASE(
    "a rule the backoff scheduler bans comes back: 2,400 Identity nodes all go, and the report shows the "
    "bans") {
  auto rules = rules_from("rule DropIdentity { match %y = Identity(%x) rewrite %y => %x }");
  Model m = chain("Identity", 2400);
  GraphEGraph geg = egraph_from_graph(*m.graph);
  // More than 1,000 sites: banned, then banned again at a limit of 2,000, then applied.
  dsl::SaturationLimits limits;
  limits.seconds = 600;  // the same iterations whatever the machine's speed (a sanitizer build under load)
  dsl::SaturationReport r = dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, limits);
  CHECK(r.per_rule["DropIdentity"].banned == 2);
  CHECK(r.per_rule["DropIdentity"].applied == 2400);
  CHECK(r.stop == dsl::StopReason::Saturated);
  auto cost = ascend::egraph_cost(ascend::load_profile("Ascend910B1"), {});
  Model out = extraction_to_model(m, geg, extract_best(geg.egraph, geg.roots, cost));
  CHECK(test::count_op(out, "Identity") == 0);
  CHECK(out.graph->nodes().size() == 1);
  CHECK(test::max_output_error(m, out) == 0);
}

TEST_CASE("a rule banned while searching near changes comes back and finds every site it dropped") {
  // MakeIdentities fires 150 times in the first iteration, within its limit; the next
  // iteration DropIdentity, searching only near those changes, finds 300 Identity nodes:
  // over its limit of 200, banned. Back from the ban it must search near every change
  // since, not only the latest.
  auto rules = rules_from(R"(rule MakeIdentities { match %y = Tanh(%x) rewrite %y => Identity(Identity(%x)) }
rule DropIdentity { match %y = Identity(%x) rewrite %y => %x })");
  Model m = chain("Tanh", 150);
  GraphEGraph geg = egraph_from_graph(*m.graph);
  dsl::SaturationReport r = dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, {}, {200, 2});
  CHECK(r.per_rule["MakeIdentities"].banned == 0);
  CHECK(r.per_rule["DropIdentity"].banned == 1);
  CHECK(r.per_rule["DropIdentity"].applied == 300);
  CHECK(r.stop == dsl::StopReason::Saturated);
  auto cost = ascend::egraph_cost(ascend::load_profile("Ascend910B1"), {});
  Model out = extraction_to_model(m, geg, extract_best(geg.egraph, geg.roots, cost));
  CHECK(out.graph->nodes().size() == 1);  // the Relu: every Tanh is proved equal to its input
}

TEST_CASE(
    "pricing a switch incrementally agrees with pricing the whole program anew, before and after switches") {
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  NodeCost cost = ascend::egraph_cost(profile, {});
  for (const char* name : {"bert_tiny_op13.onnx", "gpt2_tiny_op17.onnx", "resnet18_narrow_op13.onnx"}) {
    INFO(std::string(name));
    Model m = import_onnx(test::examples_dir() / name);
    propagate_static_shapes(m, ascend::op_registry());
    GraphEGraph geg = egraph_from_graph(*m.graph);
    dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets);
    const EGraph& g = geg.egraph;
    const Extraction fill = extract_greedy_tree(g, geg.roots, cost);
    Selection s(g, geg.roots, cost, extract_greedy_dag(g, geg.roots, cost).choice);
    REQUIRE(s.feasible());
    size_t compared = 0, switched = 0, cyclic = 0, eligible = 0, adding = 0;
    for (int round = 0; round < 3; ++round) {
      const std::vector<ClassId> classes = s.order();
      for (ClassId c : classes) {
        if (!s.computes(c)) continue;
        for (size_t i = 0; i < g.eclass(c).nodes.size(); ++i) {
          if (i == s.choice()[c]) continue;
          Choice whole = s.choice();
          whole[c] = i;
          for (size_t k = 0; k < whole.size(); ++k)
            if (whole[k] == kNoChoice) whole[k] = fill.choice[k];
          const double direct = dag_cost(g, geg.roots, whole, cost);
          const double incremental = s.cost_with(c, i, &fill.choice);
          ++compared;
          cyclic += direct == kInfeasible;
          if (direct == kInfeasible || incremental == kInfeasible) {
            CHECK(direct == incremental);
            continue;
          }
          CHECK(incremental == doctest::Approx(direct).epsilon(1e-9));
          // Take every other feasible switch, so the order is repaired in place (classes
          // a switch computes anew are placed below the switched one), then check it
          // against a selection built anew.
          bool computed = true;
          for (ClassId ch : g.eclass(c).nodes[i].children)
            computed = computed && (ch == kAbsent || s.computes(ch));
          if (eligible++ % 2) continue;
          s.switch_to(c, i, &fill.choice);
          ++switched;
          adding += !computed;
          const Selection anew(g, geg.roots, cost, s.choice());
          REQUIRE(anew.cost() == doctest::Approx(s.cost()).epsilon(1e-9));
          REQUIRE(anew.order().size() == s.order().size());  // the same classes computed
          std::vector<size_t> position(g.id_bound(), SIZE_MAX);
          for (size_t k = 0; k < s.order().size(); ++k) position[s.order()[k]] = k;
          for (ClassId x : anew.order()) {
            REQUIRE(s.computes(x));
            for (ClassId ch : g.eclass(x).nodes[s.choice()[x]].children)
              if (ch != kAbsent) REQUIRE(position[g.find(ch)] < position[x]);  // children first, still
          }
          break;
        }
      }
    }
    CHECK(compared > 20);
    CHECK(switched > 3);
    CHECK(adding > 3);
    MESSAGE(std::string(name) << ": " << compared << " switches priced (" << cyclic << " cyclic), "
                              << switched << " taken, " << adding << " of them computing classes anew");
  }
}

TEST_CASE(
    "a 20,000-op chain optimizes, extracts, plans memory and streams, and simulates with no recursion over "
    "its depth") {
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  // Sigmoid and Tanh alternate: no rule fires, every walk goes the chain's whole length.
  std::ostringstream text;
  text << "<ir_version: 8, opset_import: [\"\" : 13]>\n g (float[4, 8] x) => (float[4, 8] y) {\n t0 = "
          "Relu(x)\n";
  const size_t n = 20000;
  for (size_t i = 1; i <= n; ++i)
    text << (i == n ? "y" : "t" + std::to_string(i)) << " = " << (i % 2 ? "Sigmoid" : "Tanh") << "(t" << i - 1
         << ")\n";
  text << "}";
  Model m = import_onnx_proto(test::parse_text_model(text.str().c_str()), "deep_chain.onnx");
  ascend::OptimizeResult r = ascend::optimize(m, *rules, profile);
  REQUIRE(r.model.graph->nodes().size() == n + 1);
  const Graph& g = *r.model.graph;
  std::vector<size_t> order = ascend::memory_aware_order(g);
  ascend::MemoryPlan memory = ascend::plan_memory(g, order);
  ascend::validate_memory_plan(memory);
  CHECK(memory.pool_bytes == memory.load_bytes);
  ascend::StreamPlan streams = ascend::plan_streams(g, order, memory, {.max_streams = 4});
  ascend::validate_stream_plan(streams);
  CHECK(streams.stream_count == 1);  // a chain has no branch to run beside it
}

TEST_CASE(
    "every reuse of bytes is ordered: each access of a tensor happens before the write of the next tensor on "
    "its bytes") {
  // The stream plan keeps only the reuse dependencies on each byte's latest holder; the
  // rest must follow through events. Checked here against every pair of buffers.
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  size_t pairs = 0, cross = 0;
  for (const char* name : {"resnet18_narrow_op13.onnx", "bert_tiny_op13.onnx", "mobilenetv2_half_op17.onnx",
                           "llama_tiny_op13.onnx"}) {
    INFO(std::string(name));
    Model m = import_onnx(test::examples_dir() / name);
    propagate_static_shapes(m, ascend::op_registry());
    ascend::OptimizeResult r = ascend::optimize(m, *rules, profile);
    for (const Model* model : {&m, &r.model}) {
      const Graph& g = *model->graph;
      std::vector<size_t> order = ascend::memory_aware_order(g);
      ascend::MemoryPlan memory = ascend::plan_memory(g, order);
      ascend::StreamPlan sp = ascend::plan_streams(g, order, memory, {.max_streams = 4});
      // Vector clocks from the streams and events alone.
      const size_t k = order.size();
      std::vector<size_t> index(k), count(sp.stream_count, 0);
      for (size_t i = 0; i < k; ++i) index[i] = ++count[sp.stream_of[i]];
      std::vector<std::vector<size_t>> waits(k), after(k);
      for (const auto& e : sp.events) waits[e.to].push_back(e.from);
      std::vector<std::vector<size_t>> clock_of_stream(sp.stream_count,
                                                       std::vector<size_t>(sp.stream_count, 0));
      for (size_t i = 0; i < k; ++i) {
        std::vector<size_t> clock = clock_of_stream[sp.stream_of[i]];
        for (size_t p : waits[i])
          for (size_t s = 0; s < clock.size(); ++s) clock[s] = std::max(clock[s], after[p][s]);
        clock[sp.stream_of[i]] = index[i];
        after[i] = clock_of_stream[sp.stream_of[i]] = clock;
      }
      std::unordered_map<const Node*, size_t> pos;
      for (size_t i = 0; i < k; ++i) pos[g.nodes()[order[i]].get()] = i;
      auto before = [&](size_t a, size_t b) { return a == b || after[b][sp.stream_of[a]] >= index[a]; };
      const auto& bufs = memory.buffers;
      for (const auto& a : bufs)
        for (const auto& b : bufs) {
          if (a.last_step >= b.first_step ||
              !(a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes))
            continue;
          const Node* writer = b.values.front()->producer();
          if (!writer) continue;
          ++pairs;
          for (const Value* v : a.values) {
            std::vector<const Node*> accesses;
            if (v->producer()) accesses.push_back(v->producer());
            for (const Use& u : v->uses()) accesses.push_back(u.node);
            for (const Node* x : accesses) {
              cross += sp.stream_of[pos.at(x)] != sp.stream_of[pos.at(writer)];
              CHECK(before(pos.at(x), pos.at(writer)));
            }
          }
        }
    }
  }
  CHECK(pairs > 100);
  CHECK(cross > 0);  // some reuse crosses streams, so events (not stream order) carry it
}

TEST_CASE("unique names count per prefix and never repeat a name in use") {
  Graph g;
  std::set<std::string> names;
  for (int i = 0; i < 5000; ++i) {
    std::string name = g.unique_name("const");
    CHECK(names.insert(name).second);
    g.add_value(name);
  }
  CHECK(names.count("const"));
  CHECK(names.count("const_4999"));
  g.add_value("other_1");  // taken before its prefix is asked for
  CHECK(g.unique_name("other") == "other");
  g.add_value("other");
  CHECK(g.unique_name("other") == "other_2");
  Node* n = g.add_node("Relu", "", "node", {g.find_value("const")}, {g.add_value("r")});
  CHECK(g.unique_name("node") == "node_1");
  g.rename_node(n, "renamed");
  CHECK(g.find_node("node") == nullptr);
  CHECK(g.find_node("renamed") == n);
}

namespace {

// A GPT-2-style decoder of `layers` blocks (hidden 16, 2 heads, sequence 8): LayerNorm
// written out, Q, K and V projections of one input, causal-free attention, a GELU MLP,
// residual adds. Each block has its own weights (values from the layer and position).
Model decoder(size_t layers) {
  constexpr int h = 16, f = 32;
  std::ostringstream text, init;
  int weights = 0;  // each weight its own values (equal constants would be one e-class)
  auto weight = [&](const std::string& name, int rows, int cols, size_t layer) {
    init << (init.tellp() > 0 ? ", " : "") << "float[" << rows << "," << cols << "] " << name << " = {";
    ++weights;
    for (int i = 0; i < rows * cols; ++i)
      init << (i ? "," : "")
           << (static_cast<double>((i * 7 + static_cast<int>(layer) * 13 + weights * 5) % 17) - 8.0) / 64.0;
    init << "}";
  };
  text << "<ir_version: 8, opset_import: [\"\" : 13]>\n g (float[1,8," << h << "] x) => (float[1,8," << h
       << "] y) ";
  std::ostringstream body;
  body << "{\n eps = Constant <value = float {1e-5}> ()\n scale = Constant <value = float {4.0}> ()\n"
       << " heads = Constant <value = int64[4] {1, 8, 2, 8}> ()\n flat = Constant <value = int64[3] {1, 8, "
          "16}> ()\n"
       << " half = Constant <value = float {0.5}> ()\n one = Constant <value = float {1.0}> ()\n"
       << " k0 = Constant <value = float {0.7978845}> ()\n k1 = Constant <value = float {0.044715}> ()\n "
          "three = Constant <value = float {3.0}> ()\n";
  std::string in = "x";
  auto layer_norm = [&](const std::string& p, const std::string& x) {
    body << " " << p << "m = ReduceMean <axes = [-1]> (" << x << ")\n " << p << "d = Sub(" << x << ", " << p
         << "m)\n " << p << "q = Mul(" << p << "d, " << p << "d)\n " << p << "v = ReduceMean <axes = [-1]> ("
         << p << "q)\n " << p << "e = Add(" << p << "v, eps)\n " << p << "s = Sqrt(" << p << "e)\n " << p
         << "n = Div(" << p << "d, " << p << "s)\n";
    return p + "n";
  };
  for (size_t l = 0; l < layers; ++l) {
    const std::string L = "l" + std::to_string(l) + "_";
    for (const char* w : {"wq", "wk", "wv", "wo"}) weight(L + w, h, h, l);
    weight(L + "w1", h, f, l);
    weight(L + "w2", f, h, l);
    const std::string a = layer_norm(L + "a", in);
    body << " " << L << "q = MatMul(" << a << ", " << L << "wq)\n " << L << "k = MatMul(" << a << ", " << L
         << "wk)\n " << L << "v = MatMul(" << a << ", " << L << "wv)\n";
    body << " " << L << "qr = Reshape(" << L << "q, heads)\n " << L
         << "qt = Transpose <perm = [0, 2, 1, 3]> (" << L << "qr)\n";
    body << " " << L << "kr = Reshape(" << L << "k, heads)\n " << L
         << "kt = Transpose <perm = [0, 2, 3, 1]> (" << L << "kr)\n";
    body << " " << L << "vr = Reshape(" << L << "v, heads)\n " << L
         << "vt = Transpose <perm = [0, 2, 1, 3]> (" << L << "vr)\n";
    body << " " << L << "s = MatMul(" << L << "qt, " << L << "kt)\n " << L << "sd = Div(" << L
         << "s, scale)\n " << L << "p = Softmax <axis = -1> (" << L << "sd)\n " << L << "c = MatMul(" << L
         << "p, " << L << "vt)\n " << L << "ct = Transpose <perm = [0, 2, 1, 3]> (" << L << "c)\n " << L
         << "cf = Reshape(" << L << "ct, flat)\n " << L << "o = MatMul(" << L << "cf, " << L << "wo)\n " << L
         << "r = Add(" << in << ", " << L << "o)\n";
    const std::string b = layer_norm(L + "b", L + "r");
    // GELU, tanh form: 0.5 x (1 + tanh(0.7978845 (x + 0.044715 x^3)))
    body << " " << L << "u = MatMul(" << b << ", " << L << "w1)\n " << L << "u3 = Pow(" << L << "u, three)\n "
         << L << "u4 = Mul(" << L << "u3, k1)\n " << L << "u5 = Add(" << L << "u, " << L << "u4)\n " << L
         << "u6 = Mul(" << L << "u5, k0)\n " << L << "u7 = Tanh(" << L << "u6)\n " << L << "u8 = Add(" << L
         << "u7, one)\n " << L << "u9 = Mul(" << L << "u, " << L << "u8)\n " << L << "g = Mul(" << L
         << "u9, half)\n " << L << "dn = MatMul(" << L << "g, " << L << "w2)\n";
    const std::string out = l + 1 == layers ? "y" : L + "out";
    body << " " << out << " = Add(" << L << "r, " << L << "dn)\n";
    in = out;
  }
  body << "}";
  text << "<" << init.str() << "> " << body.str();
  return import_onnx_proto(test::parse_text_model(text.str().c_str()),
                           "decoder_" + std::to_string(layers) + ".onnx");
}

}  // namespace

namespace {

// Optimizes the model of each size and checks that extraction's classes visited per
// e-class stay within a band as the model grows 8x (quadratic work would grow them 8x);
// the first size sets the band. `check` looks at each result (what must have fused).
void check_extraction_grows_linearly(
    const std::function<Model(size_t)>& make,
    const std::function<void(size_t, const ascend::OptimizeResult&)>& check) {
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  std::vector<double> per_class;
  for (size_t size : {4, 8, 16, 32}) {
    Model m = make(size);
    ascend::OptimizeOptions options;
    options.limits.seconds = 600;  // the same saturation on a slow machine: iterations and e-nodes bound it
    const ascend::OptimizeResult r = ascend::optimize(m, *rules, profile, options);
    INFO(size << " blocks: " << r.eclasses << " e-classes, " << r.extraction_steps << " classes visited ("
              << r.extraction_method << ")");
    check(size, r);
    REQUIRE(r.eclasses > 0);
    per_class.push_back(static_cast<double>(r.extraction_steps) / static_cast<double>(r.eclasses));
    MESSAGE(size << " blocks: " << r.eclasses << " e-classes, " << r.extraction_steps << " steps, "
                 << per_class.back() << " per class");
  }
  for (size_t i = 1; i < per_class.size(); ++i) CHECK(per_class[i] <= 1.5 * per_class[0]);
}

}  // namespace

TEST_CASE(
    "extraction's work grows with the graph, not faster: a decoder of 4 to 32 blocks, classes visited per "
    "e-class") {
  check_extraction_grows_linearly(decoder, [](size_t, const ascend::OptimizeResult& r) {
    CHECK(r.selected.count("QKVMerge"));  // the sharing share_work looks for is there to find
  });
}

TEST_CASE(
    "a residual CNN of 20 blocks reaches NC1HWC0 end to end: saturation runs until the layout has crossed "
    "every block") {
  // Moving the NC1HWC0 conversion through a residual Add takes an iteration per block, so a
  // deep ResNet needs about one per block and more (ResNet-152: 76); with egg's 30 a third of
  // ResNet-101 stayed in NCHW behind 21 conversions, its Adds and Relus unfused.
  auto rules = test::load_rules({test::shipped_rules()});
  std::ostringstream text;
  text << "<ir_version: 8, opset_import: [\"\" : 13]>\n g (float[1, 16, 8, 8] x) => (float[1, 16, 8, 8] y) "
          "{\n";
  auto weight = [&](const std::string& name, int taps) {
    text << " " << name << " = Constant <value = float[16, 16, " << taps << ", " << taps << "] {";
    for (int k = 0; k < 256 * taps * taps; ++k)
      text << (k ? ", " : "") << (k % 17 == 0 ? 0.5 : 0.01 * (k % 3));
    text << "}> ()\n";
  };
  weight("w0", 3);  // the stem, as in a ResNet: the residual path starts after a conv
  text << " c0 = Conv <pads = [1, 1, 1, 1]> (x, w0)\n t0 = Relu(c0)\n";
  const size_t blocks = 20;
  for (size_t i = 1; i <= blocks; ++i) {
    for (const char* w : {"wa", "wb"}) weight(w + std::to_string(i), 1);
    text << " c" << i << " = Conv(t" << i - 1 << ", wa" << i << ")\n r" << i << " = Relu(c" << i << ")\n";
    text << " d" << i << " = Conv(r" << i << ", wb" << i << ")\n s" << i << " = Add(d" << i << ", t" << i - 1
         << ")\n";
    text << " " << (i == blocks ? "y" : "t" + std::to_string(i)) << " = Relu(s" << i << ")\n";
  }
  text << "}";
  Model m = import_onnx_proto(test::parse_text_model(text.str().c_str()), "deep_resnet.onnx");
  ascend::OptimizeOptions options;
  options.limits.seconds = 600;  // the iterations, not the clock, are under test (a sanitizer build is slow)
  ascend::OptimizeResult r = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"), options);
  CHECK(r.saturation.stop == dsl::StopReason::Saturated);
  CHECK(r.saturation.iterations > 30);
  CHECK(test::count_op(r.model, "TransData") == 2);  // one conversion in, one out
  CHECK(test::count_op(r.model, "Relu") == 0);       // each fused into its conv, with the residual Add
  CHECK(test::count_op(r.model, "Add") == 0);
  CHECK(test::max_output_error(m, r.model) <= 1e-4);
}

namespace {

// An int8 mobile CNN in QDQ form, `blocks` blocks of PP-LCNet's and the OCR detector's
// kind: a 1x1 conv, HardSwish and a learnable affine, a depthwise 3x3 conv, ReLU, a
// squeeze-and-excitation gate and a residual Add, every conv's input and weight quantized.
// Its e-graph holds every int8 conv in NCHW and in NC1HWC0, and every quantization
// before a conv and inside it: the two layouts' programs side by side.
Model int8_cnn(size_t blocks) {
  std::ostringstream text;
  auto values = [&](size_t n, auto f) {
    for (size_t i = 0; i < n; ++i) text << (i ? ", " : "") << f(i);
  };
  text << "<ir_version: 8, opset_import: [\"\" : 14]>\n g (float[1, 16, 8, 8] x) => (float[1, 16, 8, 8] y) "
          "{\n";
  text << " s = Constant <value = float {0.05}> ()\n z = Constant <value = uint8 {128}> ()\n";
  text << " sc = Constant <value = float {1.25}> ()\n sh = Constant <value = float {-0.125}> ()\n";
  text << " ws = Constant <value = float[16] {";
  values(16, [](size_t i) { return 0.002 + 0.0001 * static_cast<double>(i % 5); });
  text << "}> ()\n wz = Constant <value = int8[16] {";
  values(16, [](size_t) { return 0; });
  text << "}> ()\n";
  for (const auto& [name, dims, n] : {std::tuple{"w1", "16,16,1,1", 256}, std::tuple{"wd", "16,1,3,3", 144},
                                      std::tuple{"we", "16,16,1,1", 256}}) {
    text << " " << name << "q = Constant <value = int8[" << dims << "] {";
    values(static_cast<size_t>(n), [](size_t i) { return static_cast<int>((i * 37) % 255) - 127; });
    text << "}> ()\n " << name << " = DequantizeLinear <axis = 0> (" << name << "q, ws, wz)\n";
  }
  std::string in = "x";
  for (size_t b = 0; b < blocks; ++b) {
    const std::string p = "b" + std::to_string(b) + "_";
    const std::string out = b + 1 == blocks ? "y" : p + "out";
    auto qdq = [&](const std::string& v) {
      text << " " << v << "q = QuantizeLinear(" << v << ", s, z)\n " << v << "d = DequantizeLinear(" << v
           << "q, s, z)\n";
      return v + "d";
    };
    const std::string xd = qdq(in);
    text << " " << p << "c = Conv(" << xd << ", w1)\n " << p << "h = HardSwish(" << p << "c)\n " << p
         << "m = Mul(" << p << "h, sc)\n " << p << "a = Add(" << p << "m, sh)\n";
    const std::string ad = qdq(p + "a");
    text << " " << p << "dw = Conv <group = 16, pads = [1, 1, 1, 1]> (" << ad << ", wd)\n " << p
         << "r = Relu(" << p << "dw)\n " << p << "g = GlobalAveragePool(" << p << "r)\n";
    const std::string gd = qdq(p + "g");
    text << " " << p << "e = Conv(" << gd << ", we)\n " << p << "hs = HardSigmoid(" << p << "e)\n " << p
         << "se = Mul(" << p << "r, " << p << "hs)\n " << out << " = Add(" << p << "se, " << in << ")\n";
    in = out;
  }
  text << "}";
  return import_onnx_proto(test::parse_text_model(text.str().c_str()),
                           "int8_cnn_" + std::to_string(blocks) + ".onnx");
}

}  // namespace

TEST_CASE(
    "extraction's work on an int8 CNN with both layouts grows with the graph, not faster: 4 to 32 blocks, "
    "classes visited per e-class") {
  // PaddleOCR's INT8 detector once took 5e9 steps (7 minutes) to extract: the alternatives
  // of one layout priced against a program in the other, each over much of the model.
  check_extraction_grows_linearly(int8_cnn, [](size_t blocks, const ascend::OptimizeResult& r) {
    CHECK(test::count_op(r.model, "FusedQuantConv") >= 2 * blocks);  // the int8 convs in NC1HWC0
  });
}
