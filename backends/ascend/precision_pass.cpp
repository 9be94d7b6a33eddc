#include "ascend/precision_pass.h"
#include "ops/op_traits.h"

#include <onnx/defs/schema.h>
#include <climits>
#include <cmath>
#include <set>
#include <unordered_map>

#include "ascend/cost_model.h"
#include "eval/half.h"
#include "ir/domain.h"
#include "passes/control_flow_types.h"
#include "util/error.h"

namespace geopt::ascend {

namespace {

constexpr float kHalfMax = 65504.0f;

bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }
// The dtypes the pass moves between (f64 is left alone: nothing lowers it).
bool is_movable(DType t) { return t == DType::F32 || is_half(t); }

std::string onnx_type_string(DType t) {
  switch (t) {
    case DType::F16:
      return "tensor(float16)";
    case DType::BF16:
      return "tensor(bfloat16)";
    default:
      return "tensor(float)";
  }
}

float read_element(const std::byte* p, DType t) {
  uint16_t h;
  switch (t) {
    case DType::F16:
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    case DType::BF16:
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    default: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
  }
}

// A constant's elements in dtype `to`, rounded to nearest even. Finite values beyond
// fp16's range saturate at +-65504 instead of becoming infinite (an attention mask of
// -3.4e38 stays a large negative number, not -inf that turns a masked row into NaN).
std::shared_ptr<const Tensor> convert_constant(const Tensor& t, DType to, std::string name,
                                               size_t& saturated) {
  const size_t n = static_cast<size_t>(t.element_count());
  const size_t from_size = dtype_size(t.dtype), to_size = dtype_size(to);
  std::string bytes(n * to_size, '\0');
  const std::byte* src = t.bytes().data();
  for (size_t i = 0; i < n; ++i) {
    float f = read_element(src + i * from_size, t.dtype);
    if (to == DType::F16 && std::isfinite(f) && std::fabs(f) > kHalfMax) {
      ++saturated;
      f = std::copysign(kHalfMax, f);
    }
    char* out = bytes.data() + i * to_size;
    if (to == DType::F32) {
      std::memcpy(out, &f, 4);
    } else {
      const uint16_t h = to == DType::F16 ? float_to_half(f) : float_to_bf16(f);
      std::memcpy(out, &h, 2);
    }
  }
  auto c = std::make_shared<Tensor>();
  c->name = std::move(name);
  c->dtype = to;
  c->dims = t.dims;
  c->data = BufferSlice(std::move(bytes));
  return c;
}

// The type parameter an input or output is bound to ("T"), or its fixed type
// ("tensor(float)") when the schema names one; empty past the last formal parameter.
std::string formal_type(const std::vector<onnx::OpSchema::FormalParameter>& formals, size_t index) {
  if (formals.empty()) return {};
  if (index < formals.size()) return formals[index].GetTypeStr();
  const auto& last = formals.back();
  return last.GetOption() == onnx::OpSchema::Variadic ? last.GetTypeStr() : std::string{};
}

class PrecisionPass {
 public:
  PrecisionPass(Model& model, const Precision& precision) : m_(model), g_(*model.graph), p_(precision) {}

  PrecisionReport run() {
    for (const auto& v : g_.values()) origin_[v.get()] = v->type.dtype;
    std::vector<Node*> nodes;
    for (const auto& n : g_.nodes()) nodes.push_back(n.get());
    for (Node* n : nodes) visit(*n);
    restore_outputs();
    g_.remove_dead_code();  // the constants stored again leave their originals unread
    if (!g_.topological_sort()) throw Error("precision: the graph has a cycle after inserting Casts");
    count_kernels();
    return report_;
  }

 private:
  DType origin(const Value* v) const {
    auto it = origin_.find(v);
    return it == origin_.end() ? v->type.dtype : it->second;
  }

  bool is_constant(const Value* v) const { return g_.constant_value(v) != nullptr; }

  // `x` in dtype `to`: itself, a constant stored again, or the output of a Cast.
  Value* convert(Value* x, DType to) {
    if (x->type.dtype == to) return x;
    auto key = std::make_pair(x, to);
    if (auto it = converted_.find(key); it != converted_.end()) return it->second;
    Value* v = g_.add_value(g_.unique_name(x->name() + "_" + dtype_name(to)));
    v->type = x->type;
    v->type.dtype = to;
    if (const Tensor* t = g_.constant_value(x)) {
      g_.add_initializer(v, convert_constant(*t, to, v->name(), report_.saturated));
      ++report_.constants;
    } else {
      add_cast(x, v, "Cast_");
    }
    origin_[v] = to;  // a value the pass made is where it should be
    converted_[key] = v;
    return v;
  }

  // A Cast node from `x` into `y` (whose dtype it casts to).
  void add_cast(Value* x, Value* y, const std::string& prefix) {
    Node* cast = g_.add_node("Cast", "", g_.unique_name(prefix + dtype_name(y->type.dtype)), {x}, {y});
    cast->attributes.push_back(Attribute::make_int("to", static_cast<int64_t>(y->type.dtype)));
    cast->doc_string = "geopt: precision " + p_.name();
    ++report_.casts;
  }

  void set_input(Node& n, size_t i, DType to) {
    Value* x = n.input(i);
    if (!x || !x->type.is_tensor() || !is_movable(x->type.dtype) || x->type.dtype == to) return;
    g_.set_input(&n, i, convert(x, to));
  }

  // An op the pass does not change: its float inputs go back to the model's dtype.
  void keep(Node& n) {
    for (size_t i = 0; i < n.inputs().size(); ++i)
      if (const Value* x = n.input(i)) set_input(n, i, origin(x));
  }

  // The dtype the op computes in. `o` is the model's dtype for it.
  DType decide(const Node& n, DType o) const {
    const bool cube = is_cube_op(n.op_type);
    switch (p_.mode) {
      case PrecisionMode::MustKeepOriginDtype:
        return o;
      case PrecisionMode::ForceFp16:
        return DType::F16;
      case PrecisionMode::ForceFp32:
        return DType::F32;  // Cube ops read fp16: visit()
      case PrecisionMode::AllowFp32ToFp16:
      case PrecisionMode::AllowFp32ToBf16:
        return cube && o == DType::F32 ? p_.low() : o;
      case PrecisionMode::AllowMixPrecision:
      case PrecisionMode::AllowMixPrecisionBf16: {
        const MixClass c = p_.list().classify(n.op_type);
        if (c == MixClass::White) return p_.low();
        if (c == MixClass::Black) return DType::F32;
        // Gray follows what it reads: low when every computed float input is.
        for (const Value* x : n.inputs())
          if (x && x->type.is_tensor() && is_movable(x->type.dtype) && !is_constant(x) &&
              x->type.dtype != p_.low())
            return DType::F32;
        return p_.low();
      }
    }
    return o;
  }

  void visit(Node& n) {
    if (is_constant_node(n)) return;  // its readers convert the tensor
    bool has_float = false;
    DType o = DType::Undefined;
    for (const Value* v : n.outputs())
      if (v && v->type.is_tensor() && is_movable(v->type.dtype)) {
        has_float = true;
        if (o == DType::Undefined) o = v->type.dtype;
      }
    for (const Value* v : n.inputs())
      if (v && v->type.is_tensor() && is_movable(v->type.dtype)) {
        has_float = true;
        if (o == DType::Undefined) o = origin(v);
      }
    if (!has_float) return;
    const std::string domain = canonical_domain(n.domain);
    const int64_t opset = m_.opset_version(domain);
    const onnx::OpSchema* schema =
        opset > 0 ? onnx::OpSchemaRegistry::Schema(n.op_type, static_cast<int>(opset), domain) : nullptr;
    if (!schema || is_control_flow(n) || n.is_nondeterministic()) return keep(n);
    const DType target = decide(n, o);

    if (n.op_type == "Cast") {
      // A Cast to a float type casts to the op's precision instead.
      Attribute* to = nullptr;
      for (auto& a : n.attributes)
        if (a.name == "to") to = &a;
      Value* out = n.output(0);
      // A Cast from integers keeps its type: shape arithmetic and positions done in
      // float would lose their exactness in fp16 (2049 -> 2048); readers cast its output.
      const Value* in = n.input(0);
      const bool from_float = in && in->type.is_tensor() && is_movable(in->type.dtype);
      if (to && out && from_float && is_movable(static_cast<DType>(to->i)) && is_movable(target)) {
        to->i = static_cast<int64_t>(target);
        out->type.dtype = target;
      }
      return;
    }

    // Each type parameter takes one dtype: the target where it is bound to an output
    // and allows it; otherwise inputs stay as the model has them.
    std::map<std::string, std::vector<size_t>> inputs_of, outputs_of;
    for (size_t i = 0; i < n.inputs().size(); ++i)
      if (const Value* x = n.input(i); x && x->type.is_tensor() && is_movable(x->type.dtype))
        inputs_of[formal_type(schema->inputs(), i)].push_back(i);
    for (size_t i = 0; i < n.outputs().size(); ++i)
      if (const Value* y = n.output(i); y && y->type.is_tensor() && is_movable(y->type.dtype))
        outputs_of[formal_type(schema->outputs(), i)].push_back(i);
    std::map<std::string, std::set<std::string>> allowed;
    for (const auto& c : schema->typeConstraintParams())
      allowed[c.type_param_str] =
          std::set<std::string>(c.allowed_type_strs.begin(), c.allowed_type_strs.end());

    const bool round_cube_inputs = p_.mode == PrecisionMode::ForceFp32 && is_cube_op(n.op_type);
    std::set<std::string> params;
    for (const auto& [t, _] : inputs_of) params.insert(t);
    for (const auto& [t, _] : outputs_of) params.insert(t);
    for (const std::string& t : params) {
      // A type only outputs carry is set by an attribute (ConstantOfShape's value,
      // EyeLike's dtype): the kernel makes what the attribute says.
      if (!inputs_of.count(t)) continue;
      auto a = allowed.find(t);
      if (a == allowed.end()) {  // a fixed type ("tensor(float)") or none known: the model's
        for (size_t i : inputs_of[t]) set_input(n, i, origin(n.input(i)));
        continue;
      }
      const bool bound = outputs_of.count(t) > 0;
      DType want = a->second.count(onnx_type_string(target)) ? target : DType::Undefined;
      if (!bound) {
        // Inputs that only meet each other (Equal, Where's condition-free sides): one dtype.
        std::set<DType> seen;
        // They stay unless they differ or the schema does not take their dtype
        // (QuantizeLinear at opset 13 reads f32 only).
        for (size_t i : inputs_of[t]) seen.insert(n.input(i)->type.dtype);
        if (seen.size() == 1 && a->second.count(onnx_type_string(*seen.begin()))) continue;
      }
      if (want == DType::Undefined)
        want = bound ? n.output(outputs_of[t].front())->type.dtype : origin(n.input(inputs_of[t].front()));
      for (size_t i : inputs_of[t]) {
        if (round_cube_inputs) set_input(n, i, DType::F16);  // the Cube reads fp16 ...
        set_input(n, i, want);                               // ... and writes fp32
      }
      for (size_t i : outputs_of[t]) n.output(i)->type.dtype = want;
    }
  }

  // The model's outputs in their own dtypes again.
  void restore_outputs() {
    for (size_t k = 0; k < g_.outputs().size(); ++k) {
      Value* v = g_.outputs()[k];
      const DType want = origin(v);
      if (!v->type.is_tensor() || v->type.dtype == want || !v->producer()) continue;
      const std::string name = v->name();
      g_.rename_value(v, g_.unique_name(name + "_" + dtype_name(v->type.dtype)));
      Value* out = g_.add_value(name);
      out->type = v->type;
      out->type.dtype = want;
      out->doc_string = v->doc_string;
      add_cast(v, out, "Cast_output_");
      g_.set_output(k, out);
    }
  }

  void count_kernels() {
    CostOptions real;
    real.precision.applied = true;
    for (const auto& n : g_.nodes()) {
      const Value* y = nullptr;
      for (const Value* v : n->outputs())
        if (v && v->type.is_tensor() && is_float(v->type.dtype)) {
          y = v;
          break;
        }
      if (!y || n->op_type == "Cast" || !work_of(*n, real).is_kernel) continue;
      ++report_.by_dtype[dtype_name(y->type.dtype)];
      const bool mixed =
          p_.mode == PrecisionMode::AllowMixPrecision || p_.mode == PrecisionMode::AllowMixPrecisionBf16;
      const bool lowers =
          p_.mode != PrecisionMode::MustKeepOriginDtype && p_.mode != PrecisionMode::ForceFp32;
      // In fp32 by the black list, or because its schema has no half type.
      if (y->type.dtype == DType::F32 && lowers &&
          (mixed || p_.planned(n->op_type, DType::F32) != DType::F32))
        ++report_.kept_f32[n->op_type];
    }
  }

  Model& m_;
  Graph& g_;
  const Precision& p_;
  std::unordered_map<const Value*, DType> origin_;
  std::map<std::pair<Value*, DType>, Value*> converted_;
  PrecisionReport report_;
};

}  // namespace

PrecisionReport apply_precision(Model& model, const Precision& precision) {
  if (precision.mode == PrecisionMode::MustKeepOriginDtype) return {};
  return PrecisionPass(model, precision).run();
}

}  // namespace geopt::ascend
