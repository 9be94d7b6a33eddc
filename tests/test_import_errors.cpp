// Bad models get a clear geopt::Error naming the file and the node, never a crash.
#include <doctest/doctest.h>

#include <random>

#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

fs::path save_text_model(const char* text, const std::string& first_node_name = "") {
  onnx::ModelProto m = test::parse_text_model(text);
  if (!first_node_name.empty()) m.mutable_graph()->mutable_node(0)->set_name(first_node_name);
  fs::path p = test::scratch_dir("bad") / "model.onnx";
  test::save_model(m, p);
  return p;
}

std::string import_error(const fs::path& p) {
  try {
    import_onnx(p);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("import succeeded on a bad model: " << p);
  return {};
}

}  // namespace

TEST_CASE("a truncated model is rejected at every cut point") {
  std::string bytes = test::read_file(test::examples_dir() / "bert_tiny_op13.onnx");
  fs::path p = test::scratch_dir("truncated") / "cut.onnx";
  for (size_t cut :
       {size_t{1}, size_t{17}, bytes.size() / 7, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    CAPTURE(cut);
    test::write_file(p, bytes.substr(0, cut));
    std::string msg = import_error(p);
    CHECK(msg.find(p.string()) == 0);  // names the file first
  }
  test::write_file(p, bytes.substr(0, bytes.size() / 2));
  CHECK(import_error(p).find("truncated or corrupt") != std::string::npos);
}

TEST_CASE("random garbage and empty files are rejected") {
  fs::path p = test::scratch_dir("garbage") / "g.onnx";
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::string junk(64 + round * 13, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    test::write_file(p, junk);
    import_error(p);
  }
  test::write_file(p, "");
  CHECK(import_error(p).find("no graph") != std::string::npos);
  CHECK(import_error(test::scratch_dir("missing") / "nope.onnx").find("cannot open") != std::string::npos);
}

TEST_CASE("a dangling input names the node and the missing value") {
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = Add(x, ghost)
    })",
                               "the_add");
  std::string msg = import_error(p);
  CHECK(msg.find("node 'the_add' (Add)") != std::string::npos);
  CHECK(msg.find("input 'ghost' is not a graph input") != std::string::npos);
}

TEST_CASE("an unknown op in the default domain names the node, op and opset") {
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = FancyRelu(x)
    })",
                               "act");
  std::string msg = import_error(p);
  CHECK(msg.find("node 'act' (FancyRelu): unknown operator 'FancyRelu' in domain 'ai.onnx' at opset 13") !=
        std::string::npos);
}

TEST_CASE("an op newer than the model's opset is unknown at that opset") {
  // LayerNormalization exists from opset 17.
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4] x, float[4] s) => (float[2,4] y) {
      y = LayerNormalization(x, s)
    })",
                               "ln");
  CHECK(import_error(p).find("unknown operator 'LayerNormalization' in domain 'ai.onnx' at opset 13") !=
        std::string::npos);
}

TEST_CASE("a type mismatch is reported with the node") {
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, int64[2] z) => (float[2] y) {
      y = Add(x, z)
    })",
                               "mixed_add");
  std::string msg = import_error(p);
  CHECK(msg.find("type/shape inference failed") != std::string::npos);
  CHECK(msg.find("mixed_add") != std::string::npos);
}

TEST_CASE("a declared output type that contradicts inference is rejected") {
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (int64[2] y) {
      y = Relu(x)
    })",
                               "relu");
  CHECK(import_error(p).find("type/shape inference failed") != std::string::npos);
}

TEST_CASE("an output nobody produces, a duplicate definition and a cycle are rejected") {
  CHECK(import_error(save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y, float[2] nowhere) {
      y = Relu(x)
    })"))
            .find("graph output 'nowhere' is not produced") != std::string::npos);

  CHECK(import_error(save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = Relu(x)
      y = Neg(x)
    })",
                                     "first"))
            .find("output 'y' is already defined by node 'first' (Relu)") != std::string::npos);

  CHECK(import_error(save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      a = Add(x, b)
      b = Relu(a)
      y = Neg(b)
    })",
                                     "loop_add"))
            .find("node 'loop_add' (Add): is part of a cycle") != std::string::npos);
}

TEST_CASE("nodes out of topological order are reordered, not rejected") {
  fs::path p = save_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = Neg(a)
      a = Relu(x)
    })");
  Model m = import_onnx(p);
  REQUIRE(m.graph->nodes().size() == 2);
  CHECK(m.graph->nodes()[0]->op_type == "Relu");
  CHECK(m.graph->find_value("y")->type.to_string() == "f32[2]");
}

TEST_CASE("bad external data is reported with the tensor's name") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Add(x, w)
    })");
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto set_location = [&](const std::string& loc, const std::string& offset) {
    w->clear_external_data();
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(loc);
    kv = w->add_external_data();
    kv->set_key("offset");
    kv->set_value(offset);
  };
  fs::path dir = test::scratch_dir("extbad");
  test::write_file(dir / "w.bin", std::string(16, '\0'));

  set_location("w.bin", "8");  // 16 bytes needed, 8 left
  test::save_model(m, dir / "m.onnx");
  std::string msg = import_error(dir / "m.onnx");
  CHECK(msg.find("initializer 'w'") != std::string::npos);
  CHECK(msg.find("beyond the end of 'w.bin'") != std::string::npos);

  set_location("../w.bin", "0");
  test::save_model(m, dir / "m.onnx");
  CHECK(import_error(dir / "m.onnx").find("leaves the model's folder") != std::string::npos);

  set_location("missing.bin", "0");
  test::save_model(m, dir / "m.onnx");
  CHECK(import_error(dir / "m.onnx").find("missing.bin") != std::string::npos);

  set_location("w.bin", "0");  // fits exactly
  test::save_model(m, dir / "m.onnx");
  CHECK(import_onnx(dir / "m.onnx").graph->find_value("w")->initializer->byte_size() == 16);
}

TEST_CASE("an initializer whose data does not match its dims is rejected") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Add(x, w)
    })");
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_raw_data(std::string(12, '\0'));
  fs::path p = test::scratch_dir("short") / "m.onnx";
  test::save_model(m, p);
  std::string msg = import_error(p);
  CHECK(msg.find("initializer 'w'") != std::string::npos);
  CHECK(msg.find("holds 12 bytes") != std::string::npos);
}

namespace {

// One node from x to y at an opset of 18-21, built directly (onnx 1.12's text parser
// knows no type past bfloat16).
onnx::ModelProto one_node_model(const std::string& op, int32_t in_type, int32_t out_type, int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(opset >= 21 ? 10 : 9);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  auto value = [](onnx::ValueInfoProto* v, const char* name, int32_t type, bool with_shape) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    if (with_shape) t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  value(g->add_input(), "x", in_type, true);
  value(g->add_output(), "y", out_type, false);  // no shape: ONNX since 1.13 allows it
  return m;
}

std::string import_error(const onnx::ModelProto& m) {
  fs::path p = test::scratch_dir("newer") / "model.onnx";
  test::save_model(m, p);
  return import_error(p);
}

}  // namespace

TEST_CASE("tensor types and ops newer than geopt's are refused by name") {
  std::string msg = import_error(one_node_model("Identity", 22, 22, 21));
  CHECK(msg.find("graph input 'x' has type int4") != std::string::npos);
  onnx::ModelProto cast = one_node_model("Cast", onnx::TensorProto::FLOAT, 17, 19);
  auto* to = cast.mutable_graph()->mutable_node(0)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(17);
  msg = import_error(cast);
  CHECK(msg.find("graph output 'y' has type float8e4m3fn") != std::string::npos);
  msg = import_error(one_node_model("ImageDecoder", onnx::TensorProto::UINT8, onnx::TensorProto::UINT8, 20));
  CHECK(msg.find("unknown operator 'ImageDecoder' in domain 'ai.onnx' at opset 20") != std::string::npos);
}

TEST_CASE("an output without a shape imports (ONNX since 1.13 and ONNX Runtime allow it)") {
  fs::path p = test::scratch_dir("shapeless") / "model.onnx";
  test::save_model(one_node_model("Relu", onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT, 18), p);
  Model m = import_onnx(p);
  REQUIRE(m.graph->outputs().size() == 1);
  const ValueType& t = m.graph->outputs()[0]->type;
  REQUIRE(t.shape);
  CHECK(t.shape->dims().size() == 1);  // inferred from the input
}
