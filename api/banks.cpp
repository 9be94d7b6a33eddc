#include "banks.h"

#include <cinttypes>
#include <cstdio>

#include "eval/kernel.h"
#include "util/error.h"
#include "util/input_file.h"

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
  if (!o.op_bank_path.empty()) {
    b.op_file = KnowledgeBank::file_for(o.op_bank_path, profile.soc_version, "op");
    b.op_bank = KnowledgeBank::load(b.op_file, false);
    b.op_other_keys = b.op_bank->other_keys(b.key);
  }
  if (!o.mdl_bank_path.empty()) {
    b.model_file = KnowledgeBank::file_for(o.mdl_bank_path, profile.soc_version, "model");
    b.model_bank = KnowledgeBank::load(b.model_file, false);
    b.model_other_keys = b.model_bank->other_keys(b.key);
    b.model_entry = b.model_bank->find_model(b.key, model_signature(source, o.input_shape));
    if (b.model_entry) {
      for (const std::string& d : b.model_entry->disable) o.rules.disable.push_back(d);
      o.max_streams = b.model_entry->max_streams;
    }
  }
  return b;
}

}  // namespace geopt::api
