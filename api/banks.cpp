#include "banks.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "eval/kernel.h"
#include "settings.h"
#include "util/error.h"
#include "util/input_file.h"
#include "util/text.h"

namespace geopt::api {

ascend::BankKey bank_key(const ascend::HardwareProfile& profile) {
  return {profile.soc_version, GEOPT_VERSION, host_cpu_isa(), default_kernel_threads()};
}

std::string model_signature(const ModelSource& source, const std::string& input_shape) {
  uint64_t h = 14695981039346656037ull;
  auto add = [&](const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  };
  if (!source.path.empty()) {
    InputFile file(source.path);
    std::string chunk(1 << 20, '\0');
    while (const size_t n = file.read(chunk.data(), chunk.size())) add(chunk.data(), n);
  } else {
    add(source.bytes.data(), source.bytes.size());
  }
  add("|", 1);
  add(input_shape.data(), input_shape.size());
  char text[20];
  std::snprintf(text, sizeof text, "%016" PRIx64, h);
  return text;
}

CompileBanks load_compile_banks(const ModelSource& source, const ascend::HardwareProfile& profile,
                                CompileOptions& o) {
  using ascend::KnowledgeBank;
  CompileBanks b;
  b.key = bank_key(profile);
  // A bank folder that holds no bank for this soc version (never tuned for it) is an
  // empty bank, as AOE's custom bank path is; a path that is not there is a mistake.
  auto load = [&](const std::string& path, const std::string& kind, std::string& file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    file = KnowledgeBank::file_for(path, profile.soc_version, kind);
    const bool folder = fs::is_directory(path, ec);
    if (!folder && !fs::exists(path, ec))
      throw geopt::Error(path + ": no knowledge bank there (no such file or folder)");
    return KnowledgeBank::load(file, folder);
  };
  if (!o.op_bank_path.empty()) {
    b.op_bank = load(o.op_bank_path, "op", b.op_file);
    b.op_other_keys = b.op_bank->other_keys(b.key);
  }
  if (!o.mdl_bank_path.empty()) {
    b.model_bank = load(o.mdl_bank_path, "model", b.model_file);
    b.model_other_keys = b.model_bank->other_keys(b.key);
    b.model_entry = b.model_bank->find_model(b.key, model_signature(source, o.input_shape));
    if (b.model_entry) {
      // The entry's rule names and tags must be the loaded rules' (rules edited since the
      // tuning may have dropped one): said here, naming the bank, not as a --disable typo.
      if (o.optimize && !b.model_entry->disable.empty()) {
        const std::unique_ptr<dsl::RuleSet> rules = load_rules(o.rules);
        for (const std::string& d : b.model_entry->disable)
          if (!rules->set_enabled(d, false))
            throw geopt::Error(b.model_file + ": the entry for this model turns off '" + as_text(d) +
                               "', which no rule or tag of the loaded rules has; tune the model again");
      }
      for (const std::string& d : b.model_entry->disable) o.rules.disable.push_back(d);
      o.max_streams = b.model_entry->max_streams;  // the settings tuned replace --max_streams
      if (!b.model_entry->topo_sorting_mode.empty()) o.topo_sorting_mode = b.model_entry->topo_sorting_mode;
      // Regions kept out of NC1HWC0: the model's node names, checked against it by compile
      // (a model edited since has another signature, so its entry is not found).
      for (const std::string& k : b.model_entry->keep_format) o.rules.keep_format.push_back(k);
      if (!b.model_entry->extraction.empty()) o.rules.extraction = b.model_entry->extraction;
    }
  }
  return b;
}

}  // namespace geopt::api
