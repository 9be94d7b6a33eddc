#pragma once
// ATC's --precision_mode: which dtype each op of a float model computes in on the
// device, and the mix list that allow_mix_precision reads (--modify_mixlist).
// The precision pass (precision_pass.h) writes the choice into the graph as Casts and
// half-precision values; the cost model prices the same choice before the pass runs.
// docs/PRECISION.md describes the modes and the lists.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "eval/compare.h"
#include "eval/numerical_check.h"
#include "ir/dtype.h"

namespace geopt::ascend {

enum class PrecisionMode {
  MustKeepOriginDtype,    // every op in the model's own dtype
  ForceFp16,              // every float op in fp16 (ATC's inference default)
  ForceFp32,              // Cube ops read fp16 and write fp32 (cube_fp16in_fp32out); Vector ops in fp32
  AllowFp32ToFp16,        // Cube ops in fp16; Vector ops keep their dtype
  AllowFp32ToBf16,        // the same in bf16
  AllowMixPrecision,      // the mix list: white in fp16, black in fp32, gray follows its inputs
  AllowMixPrecisionBf16,  // the same in bf16
};

// Where an op stands in the mix list.
enum class MixClass { White, Black, Gray };

// GE's three lists by op type (ONNX's names and ai.geopt's: "MatMul", "FusedMatMul",
// "LayerNorm"). An op in no list is gray.
struct MixList {
  std::set<std::string> white, black, gray;
  MixClass classify(std::string_view op_type) const;
};

// The built-in list: Cube ops and pooling white; normalizations, Softmax, Exp/Log/Pow,
// reductions, cumulative sums, Range and Sin/Cos (large magnitudes) black.
const MixList& default_mix_list();

// `base` changed by an ATC --modify_mixlist JSON file:
//   {"black-list": {"to-add": ["Gelu"], "to-remove": ["Softmax"]}, "white-list": {...}, "gray-list": {...}}
// An op added to a list leaves the others; an op removed from a list becomes gray.
// Throws geopt::Error naming the file (and line:col for malformed JSON), the key or the
// op type on a bad file: unknown lists or keys, op types no schema knows.
MixList load_mix_list(const std::string& path, const MixList& base = default_mix_list());

// Cube ops: the matrix products. Their precision is the Cube's; the other float ops
// run on the Vector unit.
bool is_cube_op(std::string_view op_type);

struct Precision {
  PrecisionMode mode = PrecisionMode::ForceFp16;
  std::shared_ptr<const MixList> mix_list;  // null: default_mix_list()
  // The graph already carries the choice (after the precision pass): the cost model
  // prices the dtypes it finds.
  bool applied = false;

  DType low() const;  // F16, or BF16 for the bf16 modes
  const MixList& list() const { return mix_list ? *mix_list : default_mix_list(); }
  // The dtype an op computes in, on inputs of dtype `origin`, before the pass decides
  // (a gray op under the mix list is assumed low). `origin` when nothing changes.
  DType planned(std::string_view op_type, DType origin) const;
  // The check's default tolerance for plans in this mode against the fp32 model.
  Tolerance tolerance() const;
  // The check's default for a model compiled in this mode: the mode's tolerance where the
  // mode is computed (`computed`), fp32's otherwise, widened for what the model itself
  // computes in (tolerance_for: a QDQ model, an fp16 export).
  Tolerance check_tolerance(bool computed, const ModelPrecision& model) const;
  std::string name() const;
};

// ATC's names (and aliases: cube_fp16in_fp32out, allow_mix_precision_fp16). Throws
// geopt::Error listing the accepted names.
PrecisionMode parse_precision_mode(std::string_view name);
std::string precision_mode_name(PrecisionMode mode);
// Every accepted name, for --help.
const std::map<std::string, PrecisionMode>& precision_mode_names();

}  // namespace geopt::ascend
