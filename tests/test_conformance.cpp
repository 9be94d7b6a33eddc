// ONNX's own per-operator conformance tests (Debian's libonnx-testdata): every
// test whose ops all have kernels must pass, except those listed with a reason
// in tests/conformance_excluded.txt.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

std::map<std::string, std::string> load_exclusions() {
  std::map<std::string, std::string> out;
  std::ifstream in(fs::path(GEOPT_TESTS_DIR) / "conformance_excluded.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto hash = line.find('#');
    std::string name = line.substr(0, line.find_first_of(" \t#"));
    out[name] = hash == std::string::npos ? "" : line.substr(hash + 1);
  }
  return out;
}

// What a test's model uses, bodies of If/Loop/Scan included: its ops ("domain::Op") and
// whether any value is a string, sequence or optional.
struct ModelUse {
  std::set<std::string> ops;
  bool strings = false, sequences = false, optionals = false;
};

void note_type(const onnx::TypeProto& t, ModelUse& use) {
  if (t.has_sequence_type()) use.sequences = true;
  if (t.has_optional_type()) use.optionals = true;
  if (t.has_tensor_type() && t.tensor_type().elem_type() == onnx::TensorProto::STRING) use.strings = true;
}

void walk(const onnx::GraphProto& g, ModelUse& use) {
  for (const auto& v : g.input()) note_type(v.type(), use);
  for (const auto& v : g.output()) note_type(v.type(), use);
  for (const auto& n : g.node()) {
    use.ops.insert((n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + "::") + n.op_type());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) walk(a.g(), use);
      for (const auto& sub : a.graphs()) walk(sub, use);
    }
  }
}

// Why a test is outside the count the conformance target is set on (training, loss,
// sequence, optional and string tests), or "" when it counts.
std::string out_of_scope(const std::string& name, const ModelUse& use) {
  if (name.find("training") != std::string::npos) return "training";
  for (const auto& op : use.ops) {
    if (op.rfind("ai.onnx.preview.training::", 0) == 0) return "training";
    if (op == "NegativeLogLikelihoodLoss" || op == "SoftmaxCrossEntropyLoss") return "loss";
    if (op.rfind("Sequence", 0) == 0 || op == "SplitToSequence" || op == "ConcatFromSequence")
      return "sequence";
    if (op.rfind("Optional", 0) == 0) return "optional";
    if (op == "StringNormalizer" || op == "RegexFullMatch" || op == "StringConcat" || op == "StringSplit")
      return "string";
  }
  if (use.sequences) return "sequence";
  if (use.optionals) return "optional";
  if (use.strings) return "string";
  return "";
}

// numpy.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-7), as ONNX's backend tests use.
std::string compare(const HostTensor& got, const HostTensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + dtype_name(got.dtype()) + " != " + dtype_name(want.dtype());
  if (got.dims() != want.dims()) return "shape " + got.shape_string() + " != " + want.shape_string();
  if (got.dtype() == DType::String) return got.strings == want.strings ? "" : "strings differ";
  for (int64_t i = 0; i < got.size(); ++i) {
    if (is_float(got.dtype())) {
      double a = got.real_at(i), b = want.real_at(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      if (!(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)))
        return "element " + std::to_string(i) + ": " + std::to_string(a) + " != " + std::to_string(b);
    } else if (got.int_at(i) != want.int_at(i)) {
      return "element " + std::to_string(i) + ": " + std::to_string(got.int_at(i)) +
             " != " + std::to_string(want.int_at(i));
    }
  }
  return "";
}

// Empty string on success, else the reason.
std::string run_case(const fs::path& dir) {
  Model model = import_onnx(dir / "model.onnx");
  Evaluator ev(model, ascend::op_registry());
  auto inputs = ev.required_inputs();
  int sets = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    ++sets;
    std::map<std::string, HostTensor> feeds;
    for (size_t k = 0; k < inputs.size(); ++k) {
      fs::path p = entry.path() / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) continue;  // an omitted optional input
      HostTensor t = HostTensor::view(*import_tensor(p)).clone();
      feeds[inputs[k]->name()] = as_declared_dtype(t, inputs[k]->type.dtype);
    }
    NamedTensors outs = ev.run(feeds);
    for (size_t k = 0; k < outs.size(); ++k) {
      fs::path p = entry.path() / ("output_" + std::to_string(k) + ".pb");
      HostTensor want = HostTensor::view(*import_tensor(p));
      std::string why = compare(outs[k].second, as_declared_dtype(want, outs[k].second.dtype()));
      if (!why.empty()) return entry.path().filename().string() + " output '" + outs[k].first + "': " + why;
    }
  }
  return sets ? "" : "no test data";
}

}  // namespace

TEST_CASE("ONNX node conformance (libonnx-testdata)") {
  REQUIRE_MESSAGE(fs::is_directory(kNodeTests), "install libonnx-testdata (scripts/install-deps.sh)");
  const auto excluded = load_exclusions();
  const OpRegistry& kernels = ascend::op_registry();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeTests))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  // Counted tests (in scope) must pass unless excluded with a reason; out-of-scope
  // tests run where geopt has every kernel they need, and must pass too.
  int passed = 0, counted = 0, counted_passed = 0, skipped = 0, outside = 0;
  std::map<std::string, int> outside_by_kind;
  std::vector<std::string> failures;
  std::set<std::string> stale_exclusions;
  for (const auto& [name, why] : excluded) stale_exclusions.insert(name);
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    stale_exclusions.erase(name);
    ModelUse use;
    {
      onnx::ModelProto proto;
      std::ifstream in(dir / "model.onnx", std::ios::binary);
      if (proto.ParseFromIstream(&in)) walk(proto.graph(), use);
    }
    const std::string kind = out_of_scope(name, use);
    if (kind.empty())
      ++counted;
    else
      ++outside_by_kind[kind];
    if (excluded.count(name)) {
      ++skipped;
      continue;
    }
    std::string missing;
    for (const auto& op : use.ops) {
      const auto sep = op.find("::");
      const std::string domain = sep == std::string::npos ? "" : op.substr(0, sep);
      const std::string type = sep == std::string::npos ? op : op.substr(sep + 2);
      if (!kernels.find(domain, type)) missing += (missing.empty() ? "" : ", ") + op;
    }
    if (!missing.empty()) {
      if (kind.empty())
        failures.push_back(name + ": no kernel for " + missing);
      else
        ++outside;
      continue;
    }
    std::string why;
    try {
      why = run_case(dir);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty()) {
      ++passed;
      if (kind.empty()) ++counted_passed;
    } else {
      failures.push_back(name + ": " + why);
    }
  }
  const double percent = counted ? 100.0 * counted_passed / counted : 0.0;
  char percent_text[16];
  std::snprintf(percent_text, sizeof percent_text, "%.1f%%", percent);
  std::string kinds;
  for (const auto& [k, n] : outside_by_kind)
    kinds += (kinds.empty() ? "" : ", ") + k + " " + std::to_string(n);
  MESSAGE("conformance: " << counted_passed << " of " << counted << " counted tests pass (" << percent_text
                          << "); not counted: " << kinds << "; " << skipped << " excluded with a reason; "
                          << passed << " pass in all, " << outside
                          << " uncounted tests need ops geopt has no kernel for; of " << dirs.size());
  for (const auto& f : failures) MESSAGE(f);
  CHECK(failures.empty());
  CHECK_MESSAGE(stale_exclusions.empty(), "exclusions that name no test: " << stale_exclusions.size());
  CHECK(percent >= 95.0);
}
