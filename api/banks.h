#pragma once
// What compile and tune share of the knowledge banks (docs/TUNING.md): this machine's
// bank key, a model's signature, and the banks a compile reads (--op_bank_path,
// --mdl_bank_path) with what it took from them.
#include <optional>
#include <string>

#include "ascend/hardware_profile.h"
#include "ascend/tune/knowledge_bank.h"
#include "geopt/geopt.h"

namespace geopt::api {

// The key this machine's measurements are filed under: the profile's soc version,
// geopt's version, the host ISA and the kernels' default thread count.
ascend::BankKey bank_key(const ascend::HardwareProfile& profile);

// A model's identity in the model bank: a 64-bit FNV-1a of its file's bytes (or the
// given bytes) and the --input_shape it is compiled at, in hex.
std::string model_signature(const ModelSource& source, const std::string& input_shape);

// The banks one compile reads, loaded (a missing or corrupt bank is an error).
struct CompileBanks {
  ascend::BankKey key;
  std::optional<ascend::KnowledgeBank> op_bank;
  std::string op_file, model_file;
  const ascend::ModelEntry* model_entry = nullptr;  // in model_bank
  std::optional<ascend::KnowledgeBank> model_bank;
  size_t op_other_keys = 0, model_other_keys = 0;
};
// Loads the banks `o` names; applies the model bank's entry for this model to `o`
// (its rule tags and names turned off, its stream count).
CompileBanks load_compile_banks(const ModelSource& source, const ascend::HardwareProfile& profile,
                                CompileOptions& o);

}  // namespace geopt::api
