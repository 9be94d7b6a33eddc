#include "tune/knowledge_bank.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "egraph/extract.h"
#include "eval/host_tactic.h"
#include "execution_order.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt::ascend {
namespace {

constexpr const char* kFormat = "geopt-knowledge-bank";
constexpr int kVersion = 1;
constexpr size_t kMaxText = 1 << 16;  // one signature, name or tactic

using json = nlohmann::ordered_json;

// Reading one bank file: every complaint names it and the entry.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Error(file_ + ": not a geopt knowledge bank: " + where + (where.empty() ? "" : ": ") + why);
  }

  const json& field(const json& object, const char* name, const std::string& where) const {
    auto it = object.find(name);
    if (it == object.end()) fail(where, std::string("no \"") + name + "\"");
    return *it;
  }
  std::string text(const json& object, const char* name, const std::string& where,
                   bool may_be_empty = true) const {
    const json& v = field(object, name, where);
    if (!v.is_string()) fail(where, std::string("\"") + name + "\" is not a string");
    std::string s = v.get<std::string>();
    if (s.size() > kMaxText) fail(where, std::string("\"") + name + "\" is longer than 64 KiB");
    if (!may_be_empty && s.empty()) fail(where, std::string("\"") + name + "\" is empty");
    return s;
  }
  double microseconds(const json& object, const char* name, const std::string& where) const {
    const json& v = field(object, name, where);
    if (!v.is_number()) fail(where, std::string("\"") + name + "\" is not a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > 1e15) fail(where, std::string("\"") + name + "\" is no time in us");
    return d;
  }
  int64_t count(const json& object, const char* name, const std::string& where, int64_t lo,
                int64_t hi) const {
    const json& v = field(object, name, where);
    if (!v.is_number_integer()) fail(where, std::string("\"") + name + "\" is not an integer");
    const int64_t n = v.get<int64_t>();
    if (n < lo || n > hi)
      fail(where, std::string("\"") + name + "\" is " + std::to_string(n) + ", not from " +
                      std::to_string(lo) + " to " + std::to_string(hi));
    return n;
  }
  BankKey key(const json& e, const std::string& where) const {
    BankKey k;
    k.soc_version = text(e, "soc_version", where, false);
    k.geopt_version = text(e, "geopt_version", where, false);
    k.isa = text(e, "isa", where, false);
    k.threads = static_cast<int>(count(e, "threads", where, 1, kMaxTacticThreads));
    return k;
  }

 private:
  std::string file_;
};

json key_json(const BankKey& k) {
  return {{"soc_version", k.soc_version},
          {"geopt_version", k.geopt_version},
          {"isa", k.isa},
          {"threads", k.threads}};
}

}  // namespace

std::string BankKey::text() const {
  return soc_version + ", geopt " + geopt_version + ", " + isa + ", " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s");
}

std::string KnowledgeBank::file_for(const std::string& path, const std::string& soc_version,
                                    const std::string& kind) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (path.ends_with(".json")) return path;  // a file to be made
  return (fs::path(path) / soc_version / (kind + "_bank.json")).string();
}

KnowledgeBank KnowledgeBank::load(const std::string& file, bool missing_ok) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (missing_ok && !fs::exists(file, ec)) return {};
  const std::string bytes = read_regular_file(file, kMaxBankBytes, "the knowledge bank");
  Reader r(file);
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    r.fail("", std::string("it is no JSON (") + e.what() + ")");
  }
  if (!j.is_object()) r.fail("", "it is no JSON object");
  if (r.text(j, "format", "") != kFormat) r.fail("", std::string("\"format\" is not \"") + kFormat + "\"");
  const int64_t version = r.count(j, "version", "", 0, 1 << 30);
  if (version != kVersion)
    r.fail("", "it is of version " + std::to_string(version) + "; this geopt reads version " +
                   std::to_string(kVersion));
  KnowledgeBank bank;
  auto list = [&](const char* name) -> const json& {
    static const json empty = json::array();
    auto it = j.find(name);
    if (it == j.end()) return empty;
    if (!it->is_array()) r.fail("", std::string("\"") + name + "\" is not a list");
    return *it;
  };
  size_t index = 0;
  for (const json& e : list("op_entries")) {
    const std::string where = "op entry " + std::to_string(index++);
    if (!e.is_object()) r.fail(where, "it is not an object");
    OpEntry o;
    o.key = r.key(e, where);
    o.signature = r.text(e, "signature", where, false);
    o.op_type = r.text(e, "op_type", where, false);
    o.tactic = r.text(e, "tactic", where);
    try {
      o.tactic = tactic_text(parse_tactic(o.tactic));
    } catch (const Error& err) {
      r.fail(where, err.what());
    }
    o.default_us = r.microseconds(e, "default_us", where);
    o.tuned_us = r.microseconds(e, "tuned_us", where);
    o.model = r.text(e, "model", where);
    bank.put(std::move(o));
  }
  index = 0;
  for (const json& e : list("model_entries")) {
    const std::string where = "model entry " + std::to_string(index++);
    if (!e.is_object()) r.fail(where, "it is not an object");
    ModelEntry m;
    m.key = r.key(e, where);
    m.model_signature = r.text(e, "model_signature", where, false);
    m.model = r.text(e, "model", where);
    const json& disable = r.field(e, "disable", where);
    if (!disable.is_array()) r.fail(where, "\"disable\" is not a list");
    for (const json& d : disable) {
      if (!d.is_string() || d.get<std::string>().empty() || d.get<std::string>().size() > 256)
        r.fail(where, "\"disable\" holds something other than a rule or tag name");
      m.disable.push_back(d.get<std::string>());
    }
    m.max_streams = static_cast<size_t>(r.count(e, "max_streams", where, 1, 64));
    if (e.contains("topo_sorting_mode")) {  // absent in banks from before it was tuned
      m.topo_sorting_mode = r.text(e, "topo_sorting_mode", where);
      if (!m.topo_sorting_mode.empty() && !parse_topo_sorting_mode(m.topo_sorting_mode))
        r.fail(where, "\"topo_sorting_mode\" is none of bfs, dfs, rdfs, stable_rdfs, memory");
    }
    if (e.contains("keep_format")) {  // absent in banks from before regions were tuned
      const json& keep = e.at("keep_format");
      if (!keep.is_array()) r.fail(where, "\"keep_format\" is not a list");
      for (const json& k : keep) {
        if (!k.is_string() || k.get<std::string>().empty() || k.get<std::string>().size() > 4096)
          r.fail(where, "\"keep_format\" holds something other than a node name");
        m.keep_format.push_back(k.get<std::string>());
      }
    }
    if (e.contains("extraction")) {
      m.extraction = r.text(e, "extraction", where);
      if (!parse_extraction_mode(m.extraction))
        r.fail(where, "\"extraction\" is none of auto, greedy, exact");
    }
    m.default_us = r.microseconds(e, "default_us", where);
    m.tuned_us = r.microseconds(e, "tuned_us", where);
    m.judged_by = r.text(e, "judged_by", where, false);
    if (m.judged_by != "host" && m.judged_by != "simulated")
      r.fail(where, "\"judged_by\" is neither host nor simulated");
    bank.put(std::move(m));
  }
  return bank;
}

void KnowledgeBank::save(const std::string& file) const {
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  json ops = json::array();
  for (const OpEntry& o : ops_) {
    json e = key_json(o.key);
    e["signature"] = o.signature;
    e["op_type"] = o.op_type;
    e["tactic"] = o.tactic;
    e["default_us"] = o.default_us;
    e["tuned_us"] = o.tuned_us;
    e["model"] = o.model;
    ops.push_back(std::move(e));
  }
  j["op_entries"] = std::move(ops);
  json models = json::array();
  for (const ModelEntry& m : models_) {
    json e = key_json(m.key);
    e["model_signature"] = m.model_signature;
    e["model"] = m.model;
    e["disable"] = m.disable;
    e["max_streams"] = m.max_streams;
    if (!m.topo_sorting_mode.empty()) e["topo_sorting_mode"] = m.topo_sorting_mode;
    if (!m.keep_format.empty()) e["keep_format"] = m.keep_format;
    if (!m.extraction.empty()) e["extraction"] = m.extraction;
    e["default_us"] = m.default_us;
    e["tuned_us"] = m.tuned_us;
    e["judged_by"] = m.judged_by;
    models.push_back(std::move(e));
  }
  j["model_entries"] = std::move(models);
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(file).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw Error(file + ": cannot make its folder: " + ec.message());
  write_file_atomically(file, j.dump(1) + "\n");
}

namespace {

// Each field behind its length: no two keys share a text, whatever their fields hold.
std::string index_key(const BankKey& key, const std::string& signature) {
  std::string k;
  for (const std::string* field : {&key.soc_version, &key.geopt_version, &key.isa, &signature})
    k += std::to_string(field->size()) + ':' + *field;
  return k + std::to_string(key.threads);
}

template <class Entry>
void put_indexed(std::vector<Entry>& entries, std::map<std::string, size_t>& index, const std::string& key,
                 Entry entry) {
  auto [it, fresh] = index.emplace(key, entries.size());
  if (fresh)
    entries.push_back(std::move(entry));
  else
    entries[it->second] = std::move(entry);
}

}  // namespace

const OpEntry* KnowledgeBank::find_op(const BankKey& key, const std::string& signature) const {
  auto it = op_index_.find(index_key(key, signature));
  return it == op_index_.end() ? nullptr : &ops_[it->second];
}

const ModelEntry* KnowledgeBank::find_model(const BankKey& key, const std::string& model_signature) const {
  auto it = model_index_.find(index_key(key, model_signature));
  return it == model_index_.end() ? nullptr : &models_[it->second];
}

void KnowledgeBank::put(OpEntry entry) {
  const std::string k = index_key(entry.key, entry.signature);
  put_indexed(ops_, op_index_, k, std::move(entry));
}

void KnowledgeBank::put(ModelEntry entry) {
  const std::string k = index_key(entry.key, entry.model_signature);
  put_indexed(models_, model_index_, k, std::move(entry));
}

size_t KnowledgeBank::other_keys(const BankKey& key) const {
  size_t n = 0;
  for (const OpEntry& o : ops_) n += !(o.key == key);
  for (const ModelEntry& m : models_) n += !(m.key == key);
  return n;
}

}  // namespace geopt::ascend
