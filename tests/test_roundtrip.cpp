// Import -> export -> import keeps every node, name, attribute and weight bit.
#include <doctest/doctest.h>
#include <onnx/checker.h>

#include <cstring>

#include "ir/graph_text.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.strings == b.strings && a.byte_size() == b.byte_size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byte_size()) == 0;
}

// Every initializer and every tensor attribute is bit-identical.
void check_bit_identical(const Model& a, const Model& b) {
  const Graph& ga = *a.graph;
  const Graph& gb = *b.graph;
  REQUIRE(ga.initializers().size() == gb.initializers().size());
  for (size_t i = 0; i < ga.initializers().size(); ++i) {
    INFO("initializer " << ga.initializers()[i]->name());
    CHECK(ga.initializers()[i]->name() == gb.initializers()[i]->name());
    CHECK(same_bytes(*ga.initializers()[i]->initializer, *gb.initializers()[i]->initializer));
  }
  REQUIRE(ga.nodes().size() == gb.nodes().size());
  for (size_t n = 0; n < ga.nodes().size(); ++n) {
    const auto& an = ga.nodes()[n]->attributes;
    const auto& bn = gb.nodes()[n]->attributes;
    REQUIRE(an.size() == bn.size());
    for (size_t k = 0; k < an.size(); ++k) {
      REQUIRE(an[k].tensors.size() == bn[k].tensors.size());
      for (size_t t = 0; t < an[k].tensors.size(); ++t)
        CHECK(same_bytes(*an[k].tensors[t], *bn[k].tensors[t]));
    }
  }
}

void check_passes_onnx_checker(const fs::path& p) {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(test::read_file(p)));
  // Checked on a loaded proto: check_model(path) can rewrite the file.
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(m.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
  ctx.set_opset_imports(opsets);
  ctx.set_model_dir(p.parent_path().string());
  onnx::checker::LexicalScopeContext lex;
  CHECK_NOTHROW(onnx::checker::check_graph(m.graph(), ctx, lex));
}

}  // namespace

TEST_CASE("every example model round-trips through export") {
  auto models = test::example_models();
  REQUIRE(models.size() >= 12);
  for (const auto& path : models) {
    SUBCASE(path.filename().string().c_str()) {
      Model original = import_onnx(path);
      fs::path dir = test::scratch_dir("roundtrip");
      fs::path out = dir / "out.onnx";
      export_onnx(original, out);
      check_passes_onnx_checker(out);
      Model again = import_onnx(out);
      CHECK(to_text(original) == to_text(again));
      check_bit_identical(original, again);

      // Export is deterministic: the same model gives byte-identical files.
      fs::path out2 = dir / "out2.onnx";
      export_onnx(again, out2);
      CHECK(test::read_file(out) == test::read_file(out2));
      // No temporary files are left next to the output.
      size_t files = 0;
      for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
      CHECK(files == 2);
    }
  }
}

TEST_CASE("names and symbolic dims survive the round trip") {
  Model m = import_onnx(test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx");
  fs::path out = test::scratch_dir("names") / "m.onnx";
  export_onnx(m, out);
  Model again = import_onnx(out);
  const Value* ids = again.graph->find_value("input_ids");
  REQUIRE(ids != nullptr);
  REQUIRE(ids->type.shape.has_value());
  CHECK(ids->type.shape->to_string() == "[batch,seq]");
  CHECK(ids->type.dtype == DType::I64);
  for (const auto& n : m.graph->nodes()) CHECK(again.graph->find_node(n->name) != nullptr);
}

TEST_CASE("external data written by ONNX's Python API is mapped, not copied") {
  fs::path path = test::examples_dir() / "resnet18_narrow_external_op13.onnx";
  Model ext = import_onnx(path);
  Model inl = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  size_t mapped = 0;
  for (const Value* v : ext.graph->initializers())
    if (dynamic_cast<const MappedFile*>(v->initializer->data.owner().get())) ++mapped;
  CHECK(mapped > 10);
  // Same weights as the inline original, bit for bit.
  check_bit_identical(ext, inl);
}

TEST_CASE("export with external data, then import, is bit-identical") {
  Model m = import_onnx(test::examples_dir() / "mobilenetv2_half_op13.onnx");
  fs::path dir = test::scratch_dir("external");
  ExportOptions opts;
  opts.external_data = "weights.bin";
  export_onnx(m, dir / "m.onnx", opts);
  REQUIRE(fs::exists(dir / "weights.bin"));
  CHECK(fs::file_size(dir / "m.onnx") < 200 * 1024);  // the weights are in the side file
  check_passes_onnx_checker(dir / "m.onnx");
  Model again = import_onnx(dir / "m.onnx");
  CHECK(to_text(m) == to_text(again));
  check_bit_identical(m, again);

  // Re-export the externally backed model inline: a third file identical to the original's export.
  export_onnx(again, dir / "inline.onnx");
  export_onnx(m, dir / "inline_ref.onnx");
  CHECK(test::read_file(dir / "inline.onnx") == test::read_file(dir / "inline_ref.onnx"));
}

TEST_CASE("typed data fields import as the same bytes as raw_data") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y) {
      y = Add(x, w)
    })");
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float f : {1.5f, -2.0f, 3.25f}) w->add_float_data(f);
  auto* h = m.mutable_graph()->add_initializer();  // f16 bits live in int32_data
  h->set_name("h");
  h->set_data_type(onnx::TensorProto::FLOAT16);
  h->add_dims(2);
  h->add_int32_data(0x3C00);  // 1.0
  h->add_int32_data(0xC000);  // -2.0
  fs::path p = test::scratch_dir("typed") / "m.onnx";
  test::save_model(m, p);
  Model ir = import_onnx(p);
  CHECK(ir.graph->find_value("w")->initializer->to_vector<float>() == std::vector<float>{1.5f, -2.0f, 3.25f});
  CHECK(ir.graph->find_value("h")->initializer->to_vector<uint16_t>() ==
        std::vector<uint16_t>{0x3C00, 0xC000});
  CHECK(ir.graph->find_value("y")->type.to_string() == "f32[3]");
}
