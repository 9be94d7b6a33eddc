// Sliding-window ops as every exporter writes them: tf2onnx's auto_pad and left-out
// defaults, explicit Pads before VALID convs, asymmetric pads, dilated and strided
// depthwise convs. Each conv attribute combination ONNX allows computes the plain Conv's
// values through each FusedConv path the optimizer takes (NC1HWC0 with FRACTAL_Z weights,
// the NCHW input read directly, NCHW), and none is left unfused.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <random>
#include <string>
#include <vector>

#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "passes/window_attributes.h"
#include "test_support.h"
#include "util/error.h"

namespace geopt {
namespace {

struct ConvCase {
  int k = 3, stride = 1, dilation = 1, channels = 24, group = 1;
  std::string pads;  // "sym", "end", "begin", "omitted", or an auto_pad value
  bool padded_before = false;
  std::string name() const {
    return "k" + std::to_string(k) + " s" + std::to_string(stride) + " d" + std::to_string(dilation) + " c" +
           std::to_string(channels) + " g" + std::to_string(group) + " " + pads +
           (padded_before ? " after a Pad" : "");
  }
};

void add_floats(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims,
                std::mt19937& rng) {
  onnx::TensorProto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (int64_t i = 0; i < n; ++i) t->add_float_data(normal(rng));
}

void add_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// x [1, C, 17, 15] (odd sizes: stride 2 leaves a remainder) -> [Pad] -> Conv -> Relu.
Model conv_model(const ConvCase& c) {
  std::mt19937 rng(7);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("conv");
  auto* x = g.add_input();
  x->set_name("x");
  auto* xt = x->mutable_type()->mutable_tensor_type();
  xt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {int64_t{1}, int64_t{c.channels}, int64_t{17}, int64_t{15}})
    xt->mutable_shape()->add_dim()->set_dim_value(d);
  std::string in = "x";
  if (c.padded_before) {
    onnx::TensorProto* p = g.add_initializer();
    p->set_name("pads");
    p->set_data_type(onnx::TensorProto::INT64);
    p->add_dims(8);
    for (int64_t v : {0, 0, 0, 1, 0, 0, 1, 2}) p->add_int64_data(v);
    onnx::NodeProto* pad = g.add_node();
    pad->set_op_type("Pad");
    pad->add_input("x");
    pad->add_input("pads");
    pad->add_output("xp");
    in = "xp";
  }
  const int out_channels = c.group == 1 ? 16 : c.channels;
  add_floats(g, "w", {out_channels, c.channels / c.group, c.k, c.k}, rng);
  add_floats(g, "b", {out_channels}, rng);
  onnx::NodeProto* conv = g.add_node();
  conv->set_op_type("Conv");
  conv->add_input(in);
  conv->add_input("w");
  conv->add_input("b");
  conv->add_output("c");
  if (c.stride != 1) add_ints(*conv, "strides", {c.stride, c.stride});
  if (c.dilation != 1) add_ints(*conv, "dilations", {c.dilation, c.dilation});
  if (c.group != 1) {
    onnx::AttributeProto* a = conv->add_attribute();
    a->set_name("group");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(c.group);
  }
  const int extent = (c.k - 1) * c.dilation;
  if (c.pads == "sym")
    add_ints(*conv, "pads", std::vector<int64_t>(4, extent / 2));
  else if (c.pads == "end")
    add_ints(*conv, "pads", {0, 0, std::max(extent, 1), std::max(extent, 1)});
  else if (c.pads == "begin")
    add_ints(*conv, "pads", {std::max(extent, 1), std::max(extent, 1), 0, 0});
  else if (c.pads != "omitted") {
    onnx::AttributeProto* a = conv->add_attribute();
    a->set_name("auto_pad");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(c.pads);
  }
  onnx::NodeProto* relu = g.add_node();
  relu->set_op_type("Relu");
  relu->add_input("c");
  relu->add_output("y");
  auto* y = g.add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return import_onnx_proto(std::move(m), c.name());
}

std::vector<ConvCase> every_case() {
  std::vector<ConvCase> cases;
  for (int k : {1, 3})
    for (int stride : {1, 2})
      for (int dilation : {1, 2, 5}) {
        if (k == 1 && dilation > 1) continue;
        for (const char* pads :
             {"sym", "end", "begin", "omitted", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"})
          for (auto [channels, group] : {std::pair{3, 1}, std::pair{24, 1}, std::pair{24, 24}})
            for (bool padded : {false, true})
              cases.push_back({k, stride, dilation, channels, group, pads, padded});
      }
  return cases;
}

bool has_nc1hwc0_conv(const Model& m) {
  for (const auto& n : m.graph->nodes())
    if (n->op_type == "FusedConv")
      if (const Attribute* f = n->attr("data_format"); f && f->s == "NC1HWC0") return true;
  return false;
}

}  // namespace

TEST_CASE(
    "every conv attribute combination ONNX allows (pads, auto_pad, left-out defaults, dilations, strides, "
    "groups, a Pad before) computes the plain Conv's values through each FusedConv layout path, and fuses" *
    doctest::test_suite("sweep")) {
  auto rules = test::load_rules({test::shipped_rules()});
  const ascend::HardwareProfile profile = ascend::load_profile("Ascend910B1");
  // The paths: all rules (NC1HWC0, FRACTAL_Z weights, an image read in NCHW), no layout
  // conversion (FusedConv in NCHW), NC1HWC0 with the weights converted at run time.
  const std::vector<std::vector<std::string>> paths = {{}, {"ConvToNC1HWC0"}, {"ConvWeightsToFractalZ"}};
  size_t cases = 0, in_nc1hwc0 = 0;
  for (const ConvCase& c : every_case()) {
    INFO(c.name());
    const Model original = conv_model(c);
    for (const auto& disabled : paths) {
      INFO("disabled: " << (disabled.empty() ? "none" : disabled[0]));
      for (const auto& name : disabled) REQUIRE(rules->set_enabled(name, false));
      ascend::OptimizeResult r = ascend::optimize(original, *rules, profile);
      for (const auto& name : disabled) rules->set_enabled(name, true);
      CHECK(test::max_output_error(original, r.model) <= 1e-4);
      if (!disabled.empty()) continue;
      // With every rule: every form fuses, the Pad before it becomes its padding, in NC1HWC0.
      CHECK(test::count_op(r.model, "Conv") == 0);
      CHECK(test::count_op(r.model, "Pad") == 0);
      in_nc1hwc0 += has_nc1hwc0_conv(r.model);
    }
    ++cases;
  }
  CHECK(cases == 384);
  CHECK(in_nc1hwc0 == cases);  // with every rule, each conv runs in NC1HWC0
}

TEST_CASE(
    "tf2onnx's window attributes are made explicit: auto_pad resolved where the shapes allow, defaults "
    "written") {
  ConvCase same{4, 2, 1, 24, 24, "SAME_LOWER", false};
  Model m = conv_model(same);
  const Model before = m.clone();
  CHECK(make_window_attributes_explicit(*m.graph) == 1);
  const Node& conv = *m.graph->nodes()[0];
  CHECK(conv.attr("auto_pad") == nullptr);
  // A 4-wide window at stride 2: 17 rows make 9 and 15 columns 8, each with 3 of padding,
  // the odd one first (LOWER).
  REQUIRE(conv.attr("pads") != nullptr);
  CHECK(conv.attr("pads")->ints == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(conv.attr("dilations")->ints == std::vector<int64_t>{1, 1});
  CHECK(conv.attr("kernel_shape")->ints == std::vector<int64_t>{4, 4});
  CHECK(test::max_output_error(before, m) == 0);
  CHECK(make_window_attributes_explicit(*m.graph) == 0);  // already in the one form
}

TEST_CASE(
    "an empty auto_pad reads as NOTSET, as ONNX Runtime reads it, and an unknown one is refused, named") {
  const ConvCase empty{3, 2, 1, 24, 1, "", false}, omitted{3, 2, 1, 24, 1, "omitted", false},
      unknown{3, 2, 1, 24, 1, "SAME", false};
  const Model with_empty = conv_model(empty);
  CHECK(test::max_output_error(conv_model(omitted), with_empty) == 0);
  Model explicit_form = with_empty.clone();
  make_window_attributes_explicit(*explicit_form.graph);
  CHECK(explicit_form.graph->nodes()[0]->attr("pads") != nullptr);
  CHECK(test::max_output_error(with_empty, explicit_form) == 0);
  CHECK_THROWS_WITH_AS(
      [&] {
        const Model m = conv_model(unknown);
        Evaluator(m, ascend::op_registry()).run(random_inputs(m, 1));
      }(),
      doctest::Contains("SAME"), Error);
}

}  // namespace geopt
