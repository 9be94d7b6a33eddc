#include "info_command.h"
#include "json_text.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/model_summary.h"
#include "onnx/import.h"

namespace geopt::cli {
using api::json_text;
namespace {

struct InfoOptions {
  std::string model;
  bool json = false;
};

std::string shape_text(const ValueSummary& v) {
  if (!v.rank_known) return v.dtype + "[*]";
  std::string s = v.dtype + "[";
  for (size_t i = 0; i < v.dims.size(); ++i) s += (i ? "," : "") + v.dims[i];
  return s + "]";
}

std::string human_bytes(int64_t bytes) {
  char buf[32];
  if (bytes >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

std::string opset_text(const std::vector<OpsetImport>& opsets) {
  std::string s;
  for (const auto& o : opsets)
    s +=
        (s.empty() ? "" : ", ") + (o.domain.empty() ? "ai.onnx" : o.domain) + " " + std::to_string(o.version);
  return s;
}

nlohmann::ordered_json to_json(const std::string& path, const ModelSummary& s) {
  auto values = [](const std::vector<ValueSummary>& vs) {
    auto arr = nlohmann::ordered_json::array();
    for (const auto& v : vs) {
      nlohmann::ordered_json j{{"name", v.name}, {"dtype", v.dtype}};
      j["shape"] = v.rank_known ? nlohmann::ordered_json(v.dims) : nlohmann::ordered_json(nullptr);
      arr.push_back(j);
    }
    return arr;
  };
  nlohmann::ordered_json j;
  j["model"] = path;
  j["producer"] = s.producer;
  j["ir_version"] = s.ir_version;
  auto opsets = nlohmann::ordered_json::object();
  for (const auto& o : s.opsets) opsets[o.domain.empty() ? "ai.onnx" : o.domain] = o.version;
  j["opsets"] = opsets;
  j["inputs"] = values(s.inputs);
  j["outputs"] = values(s.outputs);
  j["node_count"] = s.node_count;
  auto hist = nlohmann::ordered_json::object();
  for (const auto& [op, n] : s.op_histogram) hist[op] = n;
  j["op_histogram"] = hist;
  j["parameter_count"] = s.parameter_count;
  j["parameter_bytes"] = s.parameter_bytes;
  j["initializer_count"] = s.initializer_count;
  j["external_data_bytes"] = s.external_bytes;
  j["symbolic_dims"] = s.symbolic_dims;
  return j;
}

std::string to_text(const std::string& path, const ModelSummary& s) {
  std::ostringstream os;
  auto row = [&](const char* key, const std::string& value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%-14s", key);
    os << buf << value << "\n";
  };
  row("model", path);
  row("producer", s.producer.empty() ? "(unknown)" : s.producer);
  row("ir_version", std::to_string(s.ir_version));
  row("opsets", opset_text(s.opsets));
  row("nodes", std::to_string(s.node_count));
  row("parameters", std::to_string(s.parameter_count) + " (" + human_bytes(s.parameter_bytes) + ", " +
                        std::to_string(s.initializer_count) + " initializers" +
                        (s.external_bytes ? ", " + human_bytes(s.external_bytes) + " external" : "") + ")");
  if (!s.symbolic_dims.empty()) {
    std::string dims;
    for (const auto& d : s.symbolic_dims) dims += (dims.empty() ? "" : ", ") + d;
    row("symbolic dims", dims);
  }
  size_t width = 0;
  for (const auto& v : s.inputs) width = std::max(width, v.name.size());
  for (const auto& v : s.outputs) width = std::max(width, v.name.size());
  for (const auto& [op, n] : s.op_histogram) width = std::max(width, op.size());
  auto list = [&](const char* title, const std::vector<ValueSummary>& vs) {
    os << title << "\n";
    for (const auto& v : vs)
      os << "  " << v.name << std::string(width + 2 - v.name.size(), ' ') << shape_text(v) << "\n";
  };
  list("inputs", s.inputs);
  list("outputs", s.outputs);
  os << "op types\n";
  for (const auto& [op, n] : s.op_histogram)
    os << "  " << op << std::string(width + 2 - op.size(), ' ') << n << "\n";
  return os.str();
}

}  // namespace

std::function<int()> add_info_command(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Print a model's inputs, outputs, size and op mix");
  cmd->add_option("model", opts->model, "ONNX model file")->required();
  cmd->add_flag("--json", opts->json, "Print JSON instead of text");
  return [cmd, opts]() -> int {
    if (!*cmd) return -1;
    ModelSummary s = summarize(import_onnx(opts->model));
    if (opts->json)
      std::cout << json_text(to_json(opts->model, s)) << "\n";
    else
      std::cout << to_text(opts->model, s);
    return 0;
  };
}

}  // namespace geopt::cli
