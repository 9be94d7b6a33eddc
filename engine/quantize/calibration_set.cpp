#include "quantize/calibration_set.h"

#include <algorithm>
#include <cmath>

#include "eval/evaluator.h"
#include "io/npy.h"
#include "util/error.h"

namespace geopt::quantize {

std::vector<CalibrationSample> read_calibration_set(const std::filesystem::path& dir, const Model& model,
                                                    const OpRegistry& ops) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir.string() + ": no such calibration folder");
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  if (folders.empty())
    throw Error(dir.string() +
                ": the calibration folder holds no sample folders (one folder per sample, NAME.npy per "
                "input, as `geopt run --save-inputs` writes)");
  const Evaluator evaluator(model, ops);
  const std::vector<const Value*> needed = evaluator.required_inputs();
  std::vector<CalibrationSample> samples;
  for (const fs::path& folder : folders) {
    std::map<std::string, HostTensor> files = read_npy_folder(folder);
    CalibrationSample s;
    s.name = folder.filename().string();
    for (const Value* input : needed) {
      auto f = files.find(fs::path(npy_file_name(input->name())).stem().string());
      if (f == files.end())
        throw Error((folder / npy_file_name(input->name())).string() + ": missing: the model's input '" +
                    input->name() + "'");
      HostTensor t = as_declared_dtype(std::move(f->second), input->type.dtype);
      files.erase(f);
      if (t.dtype() != input->type.dtype)
        throw Error((folder / npy_file_name(input->name())).string() + ": holds " + t.shape_string() +
                    ", the input is " + input->type.to_string());
      if (input->type.shape && input->type.shape->rank() != t.rank())
        throw Error((folder / npy_file_name(input->name())).string() + ": holds " + t.shape_string() +
                    ", the input is " + input->type.to_string());
      // A NaN or an infinity has no range: it would make a scale of NaN or 0 and a model
      // that quantizes everything to one value.
      if (t.dtype() == DType::F32 || t.dtype() == DType::F16 || t.dtype() == DType::BF16 ||
          t.dtype() == DType::F64)
        for (int64_t i = 0; i < t.size(); ++i)
          if (!std::isfinite(t.real_at(i)))
            throw Error((folder / npy_file_name(input->name())).string() + ": element " + std::to_string(i) +
                        " is " + (std::isnan(t.real_at(i)) ? "NaN" : "infinite") +
                        ": calibration samples must be finite");
      s.inputs.emplace(input->name(), std::move(t));
    }
    if (!files.empty())
      throw Error((folder / (files.begin()->first + ".npy")).string() + ": names no input the model needs");
    samples.push_back(std::move(s));
  }
  return samples;
}

}  // namespace geopt::quantize
