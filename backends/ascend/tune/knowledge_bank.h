#pragma once
// The knowledge bank (AOE's, TensorRT's timing cache): what tuning measured, kept for
// later compiles. Operator tuning (--job_type 2) files a tactic per op signature; subgraph
// tuning (--job_type 1) files strategy settings per model. Every entry is keyed by what
// the measurement depends on: the soc version the plan is for, the geopt version, the
// host's instruction set and the kernels' thread count. A compile reads the entries of
// its own key and counts the others as ignored.
//
// The file is JSON (docs/TUNING.md, "The bank"): {"format": "geopt-knowledge-bank",
// "version": 1, "op_entries": [...], "model_entries": [...]}. A bank that is not one (bytes, another format
// or version, a field of the wrong type, a tactic geopt does not know) is refused whole.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace geopt::ascend {

struct BankKey {
  std::string soc_version;    // the hardware profile's (Ascend910B1, ...)
  std::string geopt_version;  // a new geopt may run its kernels otherwise
  std::string isa;            // host_cpu_isa()
  int threads = 1;            // the kernels' team when measured
  bool operator==(const BankKey&) const = default;
  std::string text() const;  // "Ascend910B1, geopt 0.1.0, avx512_core_amx, 2 threads"
};

// Operator tuning's choice for one op signature.
struct OpEntry {
  BankKey key;
  std::string signature;  // op_signature()
  std::string op_type;
  std::string tactic;     // tactic_text(): "" keeps the kernel's own choice
  double default_us = 0;  // median of the kernel's own choice
  double tuned_us = 0;    // median of the tactic
  std::string model;      // the model it was measured in (for the report)
};

// Subgraph tuning's choice for one model (its strategy settings).
struct ModelEntry {
  BankKey key;
  std::string model_signature;       // model_signature(): the graph and its input shapes
  std::string model;                 // the file it was tuned from (for the report)
  std::vector<std::string> disable;  // rule tags or names turned off
  size_t max_streams = 4;
  std::string topo_sorting_mode;         // "": geopt's memory-aware order; else a TopoSortingMode name
  std::vector<std::string> keep_format;  // nodes the layout rules leave alone (regions kept out of NC1HWC0)
  std::string extraction;                // "": the default (auto); else an ExtractionMode name
  double default_us = 0, tuned_us = 0;   // the measure the tuning judged by
  std::string judged_by;                 // "host" (measured ms as us) or "simulated"
};

class KnowledgeBank {
 public:
  // The bank file a path names: the path itself where it is a file, else
  // PATH/<soc_version>/<kind>_bank.json (kind "op" or "model"; AOE's custom bank folders).
  static std::string file_for(const std::string& path, const std::string& soc_version,
                              const std::string& kind);
  // An empty bank where the file does not exist and `missing_ok`; else the file's entries.
  // Throws geopt::Error naming the file and what is wrong with it.
  static KnowledgeBank load(const std::string& file, bool missing_ok);
  // Writes the whole bank atomically (a reader never sees half of it).
  void save(const std::string& file) const;

  const OpEntry* find_op(const BankKey& key, const std::string& signature) const;
  const ModelEntry* find_model(const BankKey& key, const std::string& model_signature) const;
  void put(OpEntry entry);     // replaces the entry of the same key and signature
  void put(ModelEntry entry);  // replaces the entry of the same key and model

  const std::vector<OpEntry>& ops() const { return ops_; }
  const std::vector<ModelEntry>& models() const { return models_; }
  // Entries filed under another key than `key` (another soc, version, ISA or thread count).
  size_t other_keys(const BankKey& key) const;

 private:
  std::vector<OpEntry> ops_;
  std::vector<ModelEntry> models_;
  // Positions by key text and signature: a bank of many entries loads and answers in
  // n log n, not n squared.
  std::map<std::string, size_t> op_index_, model_index_;
};

// The largest bank file read: about 40,000 entries. JSON is parsed whole, and a hostile
// file of empty objects takes some twenty times its size in memory.
inline constexpr size_t kMaxBankBytes = size_t{16} << 20;

}  // namespace geopt::ascend
