// ONNX's own per-operator conformance tests (Debian's libonnx-testdata): every
// test whose ops all have kernels must pass, except those listed with a reason
// in tests/conformance_excluded.txt.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "eval/evaluator.h"
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

// numpy.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-7), as ONNX's backend tests use.
std::string compare(const HostTensor& got, const HostTensor& want) {
  if (got.dtype() != want.dtype()) return "dtype " + dtype_name(got.dtype()) + " != " + dtype_name(want.dtype());
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
      return "element " + std::to_string(i) + ": " + std::to_string(got.int_at(i)) + " != " + std::to_string(want.int_at(i));
    }
  }
  return "";
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns.
HostTensor as_declared(const HostTensor& t, DType declared) {
  if (t.dtype() == DType::U16 && declared == DType::BF16) {
    HostTensor r(DType::BF16, t.dims());
    std::memcpy(r.mutable_raw(), t.raw(), t.nbytes());
    return r;
  }
  return t;
}

// Empty string on success, else the reason.
std::string run_case(const fs::path& dir) {
  Model model = import_onnx(dir / "model.onnx");
  Evaluator ev(model);
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
      feeds[inputs[k]->name()] = as_declared(t, inputs[k]->type.dtype);
    }
    NamedTensors outs = ev.run(feeds);
    for (size_t k = 0; k < outs.size(); ++k) {
      fs::path p = entry.path() / ("output_" + std::to_string(k) + ".pb");
      HostTensor want = HostTensor::view(*import_tensor(p));
      std::string why = compare(outs[k].second, as_declared(want, outs[k].second.dtype()));
      if (!why.empty()) return entry.path().filename().string() + " output '" + outs[k].first + "': " + why;
    }
  }
  return sets ? "" : "no test data";
}

}  // namespace

TEST_CASE("ONNX node conformance (libonnx-testdata)") {
  REQUIRE_MESSAGE(fs::is_directory(kNodeTests), "install libonnx-testdata (scripts/install-deps.sh)");
  const auto excluded = load_exclusions();
  const KernelRegistry& kernels = KernelRegistry::builtin();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeTests))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  int passed = 0, unsupported = 0, skipped = 0;
  std::map<std::string, int> missing_ops;  // op -> tests it keeps from running
  std::vector<std::string> failures;
  std::set<std::string> stale_exclusions;
  for (const auto& [name, why] : excluded) stale_exclusions.insert(name);
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    stale_exclusions.erase(name);
    if (excluded.count(name)) {
      ++skipped;
      continue;
    }
    // Only tests whose every op has a kernel count (the model is read without inference for this look).
    bool supported = true;
    try {
      Model m = import_onnx(dir / "model.onnx", {.infer_shapes = false, .input_shapes = {}});
      std::set<std::string> missing;
      for (const auto& n : m.graph->nodes())
        if (!kernels.find(n->domain, n->op_type)) missing.insert((n->domain.empty() ? "" : n->domain + "::") + n->op_type);
      for (const auto& op : missing) ++missing_ops[op];
      supported = missing.empty();
    } catch (const Error&) {
      supported = true;  // let run_case report the import failure
    }
    if (!supported) {
      ++unsupported;
      continue;
    }
    try {
      std::string why = run_case(dir);
      if (why.empty()) ++passed;
      else failures.push_back(name + ": " + why);
    } catch (const std::exception& e) {
      failures.push_back(name + ": " + e.what());
    }
  }
  MESSAGE("conformance: " << passed << " passed, " << failures.size() << " failed, " << skipped << " excluded, "
                          << unsupported << " with ops geopt has no kernel for, of " << dirs.size());
  for (const auto& f : failures) MESSAGE(f);
  std::string ops;
  for (const auto& [op, count] : missing_ops) ops += (ops.empty() ? "" : ", ") + op + " (" + std::to_string(count) + ")";
  MESSAGE("ops without a kernel (tests they keep out): " << ops);
  CHECK(failures.empty());
  CHECK_MESSAGE(stale_exclusions.empty(), "exclusions that name no test: " << stale_exclusions.size());
  CHECK(passed > 0);
}
