#include "plan_file.h"

#include <sys/stat.h>
#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include <onnx/defs/schema.h>
#include <zlib.h>
#include "device_ops/device_ops.h"
#include "eval/host_tactic.h"
#include "execution_order.h"
#include "memory_plan.h"
#include "onnx/proto_types.h"
#include "onnx/validate.h"
#include "plan_ordering.h"
#include "util/input_file.h"
#include "util/memory.h"

#include "ir/domain.h"
#include "util/atomic_file.h"
#include "util/checked_size.h"
#include "util/error.h"
#include "util/text.h"

namespace geopt::ascend {
namespace {

// The format a value is in, as the plan records it: NC1HWC0 where its producer writes
// that (an NC1HWC0 conv, a layout conversion, the channel ops), else NCHW for a 4-D
// value and ND for any other (weights packed for the Cube are constants, not values).
std::string format_of(const Value& v) {
  if (const Node* p = v.producer(); p && written_format(*p) == Format::NC1HWC0)
    return format_name(Format::NC1HWC0);
  return v.type.shape && v.type.shape->rank() == 4 ? "NCHW" : "ND";
}

}  // namespace

plan::Plan lower_to_plan(const LoweringInputs& in) {
  const Graph& g = *in.model.graph;
  plan::Plan p;
  p.set_magic(kPlanMagic);
  p.set_format_version(kPlanFormatVersion);
  p.set_producer("geopt");
  p.set_soc_version(in.soc_version);
  for (const auto& o : in.model.opsets) {
    auto* op = p.add_opsets();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  auto ref = [&](const Value* v, plan::TensorRef* r) {
    if (!v) {
      r->set_absent(true);
      return;
    }
    r->set_name(v->name());
    r->set_dtype(static_cast<int32_t>(v->type.dtype));
    r->set_size(static_bytes(*v));
    for (const Dim& d : v->type.shape->dims()) r->add_dims(d.value());
    r->set_format(format_of(*v));
    if (in.bounded.count(v->name())) r->set_bounded(true);
    if (v->initializer) {
      r->set_region(plan::WEIGHT);
      r->set_offset(in.memory.weight_offset.at(v));
    } else {
      r->set_region(plan::ACTIVATION);
      r->set_offset(in.memory.offset_of(v));
    }
  };
  for (size_t k = 0; k < in.order.size(); ++k) {
    const Node& n = *g.nodes()[in.order[k]];
    auto* kernel = p.add_kernels();
    kernel->set_name(n.name);
    kernel->set_op_type(n.op_type);
    kernel->set_domain(n.domain);
    bool has_body = false;
    for (const Attribute& a : n.attributes) {
      // Bodies travel lowered (plan.proto Body), not as graphs.
      if (a.kind == AttrKind::Graph || a.kind == AttrKind::Graphs) {
        has_body = true;
        continue;
      }
      onnx::AttributeProto ap;
      onnx_io::attribute_to_proto(a, &ap);
      kernel->add_attributes(ap.SerializeAsString());
    }
    for (const Value* v : n.inputs()) ref(v, kernel->add_inputs());
    for (const Value* v : n.outputs()) ref(v, kernel->add_outputs());
    kernel->set_stream(static_cast<uint32_t>(in.streams.stream_of[k]));
    if (k < in.costs.size()) {
      const KernelCost& c = in.costs[k];
      kernel->set_modeled_us(c.total_us);
      kernel->set_cube_us(c.cube_us);
      kernel->set_vector_us(c.vector_us);
      kernel->set_memory_us(c.memory_us);
      kernel->set_launch_us(c.launch_us);
    }
    if (has_body) {
      if (!in.lower_bodies) throw Error(n.describe() + ": a control-flow node needs its bodies lowered");
      in.lower_bodies(n, *kernel);
    }
  }
  p.set_stream_count(static_cast<uint32_t>(in.streams.stream_count));
  for (size_t e = 0; e < in.streams.events.size(); ++e) {
    const auto& ev = in.streams.events[e];
    auto* pe = p.add_events();
    pe->set_id(static_cast<uint32_t>(e));
    pe->set_from_kernel(static_cast<uint32_t>(ev.from));
    pe->set_to_kernel(static_cast<uint32_t>(ev.to));
    p.mutable_kernels(static_cast<int>(ev.from))->add_record_events(static_cast<uint32_t>(e));
    p.mutable_kernels(static_cast<int>(ev.to))->add_wait_events(static_cast<uint32_t>(e));
  }
  for (const Value* v : g.inputs())
    if (!v->initializer) ref(v, p.add_inputs());
  for (const Value* v : g.outputs()) ref(v, p.add_outputs());
  p.set_activation_bytes(in.memory.pool_bytes);
  p.set_weight_bytes(in.memory.weight_bytes);
  if (in.with_weights) set_plan_weights(p, in.memory);
  auto* m = p.mutable_memory();
  m->set_pool_bytes(in.memory.pool_bytes);
  m->set_load_bytes(in.memory.load_bytes);
  m->set_no_reuse_bytes(in.memory.no_reuse_bytes);
  m->set_strategy(in.memory.strategy);
  m->set_views(static_cast<uint32_t>(in.memory.views));
  m->set_in_place(static_cast<uint32_t>(in.memory.in_place));
  return p;
}

void set_plan_weights(plan::Plan& p, const MemoryPlan& memory) {
  std::string weights(memory.weight_bytes, '\0');
  for (const auto& [v, offset] : memory.weight_offset) {
    auto bytes = v->initializer->bytes();
    if (!bytes.empty()) std::memcpy(weights.data() + offset, bytes.data(), bytes.size());
  }
  p.set_weights(std::move(weights));
}

namespace {

uint32_t crc_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < bytes.size();) {  // zlib takes at most 4 GiB a call
    const auto n = static_cast<uInt>(std::min<size_t>(bytes.size() - at, size_t{1} << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), n);
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

// The checksum of everything but the weight region and the checksums themselves.
uint32_t structure_crc(plan::Plan& plan) {
  std::string weights;
  weights.swap(*plan.mutable_weights());
  const uint32_t s = plan.structure_crc(), w = plan.weights_crc();
  plan.clear_structure_crc();
  plan.clear_weights_crc();
  std::string bytes;
  const bool ok = plan.SerializeToString(&bytes);
  plan.set_structure_crc(s);
  plan.set_weights_crc(w);
  plan.mutable_weights()->swap(weights);
  if (!ok) throw Error("the plan cannot be serialized (a protobuf message cannot exceed 2 GB)");
  return crc_of(bytes);
}

// Writes the plan with its weight region streamed from the message rather than
// serialized into a second copy: the rest of the message, then field 13 (the
// region) as its own length-delimited field. Protobuf reads fields in any order,
// so the file is an ordinary serialized Plan.
void write_plan_file(plan::Plan& plan, const std::filesystem::path& path) {
  plan.set_structure_crc(structure_crc(plan));
  std::string weights;
  weights.swap(*plan.mutable_weights());
  std::string head;
  const bool serialized = plan.SerializeToString(&head);
  plan.mutable_weights()->swap(weights);
  if (!serialized)
    throw Error(path.string() + ": the plan cannot be serialized (a protobuf message cannot exceed 2 GB)");
  AtomicFile file(path);
  file.write(head);
  const std::string& region = plan.weights();
  if (!region.empty()) {
    std::string tag;
    tag.push_back(static_cast<char>((plan::Plan::kWeightsFieldNumber << 3) | 2));  // length-delimited
    for (uint64_t n = region.size();; n >>= 7) {
      if (n < 0x80) {
        tag.push_back(static_cast<char>(n));
        break;
      }
      tag.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    file.write(tag);
    file.write(region);
  }
  file.commit();
}

}  // namespace

std::filesystem::path write_plan(plan::Plan& plan, const std::filesystem::path& path,
                                 const PlanWriteOptions& options) {
  // The file carries the checksums; the caller's plan is left as it was.
  struct Restore {
    plan::Plan& p;
    uint32_t s, w;
    ~Restore() {
      p.set_structure_crc(s);
      p.set_weights_crc(w);
    }
  } restore{plan, plan.structure_crc(), plan.weights_crc()};
  plan.clear_weights_file();
  plan.set_weights_crc(crc_of(plan.weights()));
  if (plan.weight_bytes() <= options.inline_weight_limit && options.inline_weight_limit > 0) {
    write_plan_file(plan, path);
    return {};
  }
  const std::filesystem::path side = path.string() + ".weights";
  write_file_atomically(side, plan.weights());
  std::string weights;
  weights.swap(*plan.mutable_weights());
  plan.set_weights_file(side.filename().string());
  try {
    write_plan_file(plan, path);
  } catch (...) {
    plan.mutable_weights()->swap(weights);
    plan.clear_weights_file();
    std::error_code ec;
    std::filesystem::remove(side, ec);
    throw;
  }
  plan.mutable_weights()->swap(weights);
  plan.clear_weights_file();
  return side;
}

namespace {

void check_header(const plan::Plan& p, const std::string& where) {
  if (p.magic() != kPlanMagic) throw Error(where + ": not a geopt plan file");
  if (p.format_version() < kOldestPlanFormatVersion || p.format_version() > kPlanFormatVersion)
    throw Error(where + ": plan format version " + std::to_string(p.format_version()) +
                ", this geopt reads versions " + std::to_string(kOldestPlanFormatVersion) + " to " +
                std::to_string(kPlanFormatVersion) + "; recompile the model with `geopt compile`");
  // A profile's name, shown in reports and traces as it is.
  if (p.soc_version().size() > 128 || escaped(p.soc_version()) != p.soc_version())
    throw Error(where + ": its soc_version '" + escaped(p.soc_version().substr(0, 128)) +
                "' is no profile name (printable, at most 128 bytes)");
}

// Names and messages a plan carries are printed as they are: text, no control bytes.
void check_text(const std::string& s, const std::string& what, bool lines = false) {
  auto control = [&](char c) {
    return (static_cast<unsigned char>(c) < 0x20 && !(lines && c == '\n')) || c == 0x7f;
  };
  if (!valid_utf8(s) || std::any_of(s.begin(), s.end(), control))
    throw Error(what + " '" + escaped(s.substr(0, 256)) + "' is not text (UTF-8 without control bytes)");
}

void check_input_ranges(const plan::Plan& p, const std::string& where) {
  std::set<std::string> seen;
  for (const auto& range : p.input_ranges()) {
    for (const auto& d : range.dims())
      check_text(d.symbol(), where + ": input '" + range.name() + "' has a dim symbol");
    auto it = std::find_if(p.inputs().begin(), p.inputs().end(),
                           [&](const plan::TensorRef& r) { return r.name() == range.name(); });
    if (it == p.inputs().end())
      throw Error(where + ": it gives a range for '" + range.name() + "', which is not one of its inputs");
    if (!seen.insert(range.name()).second)
      throw Error(where + ": it gives input '" + range.name() + "' two ranges");
    if (!it->bounded() || range.dims_size() != it->dims_size())
      throw Error(where + ": input '" + range.name() + "' has a range of rank " +
                  std::to_string(range.dims_size()) + " but is planned as " +
                  (it->bounded() ? "rank " + std::to_string(it->dims_size()) : std::string("static dims")));
    for (int d = 0; d < range.dims_size(); ++d)
      if (range.dims(d).min() < 0 || range.dims(d).min() > range.dims(d).max() ||
          range.dims(d).max() != it->dims(d))
        throw Error(where + ": input '" + range.name() + "' dim " + std::to_string(d) + " has the range " +
                    std::to_string(range.dims(d).min()) + "~" + std::to_string(range.dims(d).max()) +
                    ", planned at " + std::to_string(it->dims(d)));
  }
  for (const auto& r : p.inputs())
    if (r.bounded() && !seen.count(r.name()))
      throw Error(where + ": input '" + r.name() + "' is bounded but has no range");
}

// The opset a plan imports for `domain` ("" and "ai.onnx" are one); 0 when none.
int64_t opset_of(const google::protobuf::RepeatedPtrField<plan::OpsetImport>& opsets,
                 const std::string& domain) {
  for (const auto& o : opsets)
    if (canonical_domain(o.domain()) == canonical_domain(domain)) return o.version();
  return 0;
}

// A kernel against its op's schema: it names an op that exists at the plan's opset, has
// as many inputs and outputs as the op takes (required ones present), and each attribute
// is one the op has, of the op's type. A plan's kernel is built from these alone, so a
// kernel that writes an output the plan omits, or reads a string as a permutation, is
// refused here rather than run.
void check_kernel_schema(const plan::Kernel& kernel,
                         const google::protobuf::RepeatedPtrField<plan::OpsetImport>& opsets,
                         const std::string& what) {
  register_op_schemas();
  const std::string domain = canonical_domain(kernel.domain());
  // geopt's own domains are versioned by the plan format, not by an import.
  const int64_t imported = opset_of(opsets, domain);
  const int64_t opset = imported > 0 ? imported : domain.empty() ? 0 : INT_MAX;
  if (opset <= 0 || opset > INT_MAX)
    throw Error(what + ": the plan imports no opset for domain '" + domain + "'");
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(kernel.op_type(), static_cast<int>(opset), domain);
  if (!schema)
    throw Error(what + ": no op " + kernel.op_type() + " in domain '" + domain + "' at opset " +
                std::to_string(opset));
  auto count_range = [&](const char* side, int n, int lo, int hi) {
    if (n < lo || n > hi)
      throw Error(what + ": has " + std::to_string(n) + " " + side + "s; " + kernel.op_type() + " takes " +
                  std::to_string(lo) +
                  (hi == lo        ? ""
                   : hi == INT_MAX ? " or more"
                                   : " to " + std::to_string(hi)));
  };
  // A control-flow kernel's inputs end with the values its bodies capture from outside.
  count_range("input", kernel.inputs_size(), schema->min_input(),
              kernel.bodies_size() ? INT_MAX : schema->max_input());
  count_range("output", kernel.outputs_size(), schema->min_output(), schema->max_output());
  auto required_present = [&](const char* side,
                              const google::protobuf::RepeatedPtrField<plan::TensorRef>& refs,
                              const std::vector<onnx::OpSchema::FormalParameter>& formal) {
    for (int i = 0; i < refs.size(); ++i) {
      const size_t f = std::min(static_cast<size_t>(i), formal.empty() ? 0 : formal.size() - 1);
      if (!formal.empty() && formal[f].GetOption() == onnx::OpSchema::Single && refs[i].absent())
        throw Error(what + ": " + side + " " + std::to_string(i) + " (" + formal[f].GetName() +
                    ") is required but absent");
    }
  };
  required_present("input", kernel.inputs(), schema->inputs());
  required_present("output", kernel.outputs(), schema->outputs());
  std::set<std::string> seen;
  for (int i = 0; i < kernel.attributes_size(); ++i) {
    onnx::AttributeProto a;
    if (!a.ParseFromString(kernel.attributes(i)))
      throw Error(what + ": attribute " + std::to_string(i) + " is not an AttributeProto");
    if (!seen.insert(a.name()).second) throw Error(what + ": attribute '" + a.name() + "' is given twice");
    const auto& declared = schema->attributes();
    auto it = declared.find(a.name());
    if (it == declared.end()) {
      if (a.name().rfind("geopt.", 0) == 0)
        continue;  // geopt's own annotations (a body's captures), not the op's
      throw Error(what + ": " + kernel.op_type() + " has no attribute '" + a.name() + "'");
    }
    if (a.type() != static_cast<onnx::AttributeProto::AttributeType>(it->second.type))
      throw Error(what + ": attribute '" + a.name() + "' is of type " +
                  onnx::AttributeProto::AttributeType_Name(a.type()) + ", " + kernel.op_type() + " takes " +
                  onnx::AttributeProto::AttributeType_Name(
                      static_cast<onnx::AttributeProto::AttributeType>(it->second.type)));
  }
  for (const auto& [name, attr] : schema->attributes())
    if (attr.required && !seen.count(name) && attr.type != onnx::AttributeProto::GRAPH &&
        attr.type != onnx::AttributeProto::GRAPHS)
      throw Error(what + ": lacks the required attribute '" + name + "'");
  // Bodies stand for the op's graph attributes: one each, and none for an op without them.
  std::set<std::string> bodies;
  for (const auto& body : kernel.bodies()) {
    auto it = schema->attributes().find(body.attribute());
    if (it == schema->attributes().end() || it->second.type != onnx::AttributeProto::GRAPH)
      throw Error(what + ": has a body for '" + escaped(body.attribute()) +
                  "', which is no graph attribute of " + kernel.op_type());
    if (!bodies.insert(body.attribute()).second)
      throw Error(what + ": has two bodies for '" + body.attribute() + "'");
  }
  for (const auto& [name, attr] : schema->attributes())
    if (attr.type == onnx::AttributeProto::GRAPH && !bodies.count(name))
      throw Error(what + ": lacks its body '" + name + "'");
}

// The end of the furthest tensor a plan places in `region` (its gears' too), rounded up
// to the planner's alignment: no pool or weight region the compiler writes is larger.
uint64_t referenced_extent(const plan::Plan& p, plan::Region region) {
  uint64_t end = 0;
  auto see = [&](const plan::TensorRef& r) {
    if (!r.absent() && r.region() == region && r.offset() <= UINT64_MAX - r.size())
      end = std::max(end, r.offset() + r.size());
  };
  for (const auto& k : p.kernels()) {
    for (const auto& r : k.inputs()) see(r);
    for (const auto& r : k.outputs()) see(r);
  }
  for (const auto& r : p.inputs()) see(r);
  for (const auto& r : p.outputs()) see(r);
  for (const auto& g : p.gears()) end = std::max(end, referenced_extent(g.plan(), region));
  return end > UINT64_MAX - kMemoryAlignment
             ? end
             : (end + kMemoryAlignment - 1) / kMemoryAlignment * kMemoryAlignment;
}

// Sizes against what the plan places there: a pool or region larger than its furthest
// tensor is a claim nothing needs (a plan of a few hundred bytes asking for gigabytes).
void check_extents(const plan::Plan& p, const std::string& where, const uint64_t* shared_weights) {
  if (!shared_weights && p.weight_bytes() > referenced_extent(p, plan::WEIGHT))
    throw Error(where + ": weight_bytes is " + std::to_string(p.weight_bytes()) +
                " but its tensors reach only " + std::to_string(referenced_extent(p, plan::WEIGHT)) +
                " bytes of the weight region");
  if (p.activation_bytes() > referenced_extent(p, plan::ACTIVATION))
    throw Error(where + ": activation_bytes is " + std::to_string(p.activation_bytes()) +
                " but its tensors reach only " + std::to_string(referenced_extent(p, plan::ACTIVATION)) +
                " bytes of the pool");
}

// The checks that differ between a plan read from a file and one built in memory.
struct PlanChecks {
  const uint64_t* shared_weights = nullptr;  // the enclosing plan's weight region's size, for a gear
  bool weights_loaded = true;                // false while a side file is not read yet
  const google::protobuf::RepeatedPtrField<plan::OpsetImport>* opsets =
      nullptr;  // an enclosing plan's, for a body
};

void check_plan_in(const plan::Plan& p, const std::string& where, const PlanChecks& checks);

void check_gears(const plan::Plan& p, const std::string& where, const PlanChecks& checks) {
  if (p.kernels_size() || p.inputs_size() || p.outputs_size() || p.events_size() || p.input_ranges_size())
    throw Error(where + ": a plan of gears has kernels, bindings or ranges of its own");
  const uint64_t shared = p.weight_bytes();
  std::set<std::string> names;
  for (int i = 0; i < p.gears_size(); ++i) {
    const plan::Plan& gear = p.gears(i).plan();
    const std::string what = where + ": gear " + std::to_string(i) + " (" + p.gears(i).name() + ")";
    if (gear.gears_size() || gear.input_ranges_size()) throw Error(what + " has gears or ranges of its own");
    const plan::Plan& first = p.gears(0).plan();
    bool same = gear.inputs_size() == first.inputs_size() && gear.outputs_size() == first.outputs_size();
    for (int k = 0; same && k < gear.inputs_size(); ++k)
      same = gear.inputs(k).name() == first.inputs(k).name() &&
             gear.inputs(k).dtype() == first.inputs(k).dtype();
    for (int k = 0; same && k < gear.outputs_size(); ++k)
      same = gear.outputs(k).name() == first.outputs(k).name() &&
             gear.outputs(k).dtype() == first.outputs(k).dtype();
    if (!same) throw Error(what + " binds other inputs or outputs than gear 0");
    PlanChecks gear_checks = checks;
    gear_checks.shared_weights = &shared;
    if (!gear_checks.opsets || gear.opsets_size())
      gear_checks.opsets = gear.opsets_size() ? &gear.opsets() : &p.opsets();
    check_plan_in(gear, what, gear_checks);
    if (p.gears(i).name() != gear_name(gear))
      throw Error(what + " is named for other input shapes than its inputs have (" + gear_name(gear) + ")");
    if (!names.insert(gear_name(gear)).second)
      throw Error(what + " takes the same input shapes as an earlier gear");
  }
}

// Dataflow, in kernel order (every event points forward, so a kernel's writers come
// before it): each pool tensor a kernel reads was written by an earlier kernel or bound
// as an input, by name and offset, with the dtype and dims its writer gave it. A plan
// edited to read before a write, or to bind an input away from where it is read, or to read
// 64x64 what the binding says is 32x128, would compute on the pool's poison bytes. (An
// input nobody reads is legal: a model may ignore one.)
void check_dataflow(const plan::Plan& p, const std::string& where) {
  struct Written {
    int32_t dtype;
    std::vector<int64_t> dims;
    bool bounded;
  };
  std::map<std::pair<std::string, uint64_t>, Written> written;
  auto same = [](const Written& w, const plan::TensorRef& r) {
    return w.dtype == r.dtype() &&
           (w.bounded || r.bounded() ||
            std::equal(w.dims.begin(), w.dims.end(), r.dims().begin(), r.dims().end()));
  };
  auto describe_ref = [](const plan::TensorRef& r) {
    std::string dims;
    for (int64_t d : r.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    return "'" + r.name() + "' (" + dtype_name(static_cast<DType>(r.dtype())) + "[" + dims + "] at offset " +
           std::to_string(r.offset()) + ")";
  };
  for (const auto& r : p.inputs())
    if (!r.absent())
      written[{r.name(), r.offset()}] = {r.dtype(), {r.dims().begin(), r.dims().end()}, r.bounded()};
  for (int k = 0; k < p.kernels_size(); ++k) {
    const auto& kernel = p.kernels(k);
    for (const auto& r : kernel.inputs()) {
      if (r.absent() || r.region() != plan::ACTIVATION) continue;
      auto it = written.find({r.name(), r.offset()});
      if (it == written.end())
        throw Error(where + ": kernel " + std::to_string(k) + " (" + kernel.op_type() + " '" + kernel.name() +
                    "') reads " + describe_ref(r) + ", which no earlier kernel writes and no input binds");
      if (!same(it->second, r))
        throw Error(where + ": kernel " + std::to_string(k) + " (" + kernel.op_type() + " '" + kernel.name() +
                    "') reads " + describe_ref(r) + " with another dtype or shape than it was written with");
    }
    for (const auto& r : kernel.outputs())
      if (!r.absent())
        written[{r.name(), r.offset()}] = {r.dtype(), {r.dims().begin(), r.dims().end()}, r.bounded()};
  }
  for (const auto& r : p.outputs()) {
    if (r.absent() || r.name().empty()) throw Error(where + ": an output binding names no tensor");
    if (r.region() != plan::ACTIVATION) continue;
    auto it = written.find({r.name(), r.offset()});
    if (it == written.end())
      throw Error(where + ": output '" + r.name() + "' is no tensor a kernel writes or an input binds");
    if (!same(it->second, r))
      throw Error(where + ": output " + describe_ref(r) +
                  " has another dtype or shape than the kernel that writes it gives it");
  }
}

void check_plan_in(const plan::Plan& p, const std::string& where, const PlanChecks& checks) {
  const uint64_t* shared_weights = checks.shared_weights;
  check_header(p, where);
  if (checks.weights_loaded && p.weights().size() != p.weight_bytes())
    throw Error(where + ": the weight region is truncated");
  if (shared_weights && p.weight_bytes()) throw Error(where + ": a gear has a weight region of its own");
  const auto& opsets = p.opsets_size() || !checks.opsets ? p.opsets() : *checks.opsets;
  if (p.gears_size()) {
    PlanChecks gear_checks = checks;
    gear_checks.opsets = &opsets;
    check_gears(p, where, gear_checks);
    check_extents(p, where, shared_weights);
    return;
  }
  check_extents(p, where, shared_weights);
  check_input_ranges(p, where);
  if (p.outputs_size() == 0) throw Error(where + ": it has no outputs");
  const auto& stats = p.compile();
  if (!(stats.fusion_rate() >= 0 && stats.fusion_rate() <= 1) ||
      !(stats.latency_before_us() >= 0 && stats.latency_before_us() <= 1e18) ||
      !(stats.latency_after_us() >= 0 && stats.latency_after_us() <= 1e18))
    throw Error(
        where +
        ": its compile statistics are no figures (fusion rate 0 to 1, latencies finite and not negative)");
  const uint64_t weight_limit = shared_weights ? *shared_weights : p.weight_bytes();
  if (p.stream_count() == 0 && p.kernels_size() > 0)
    throw Error(where + ": the plan has kernels but no stream");
  if (p.stream_count() > static_cast<uint64_t>(std::max(p.kernels_size(), 1)))
    throw Error(where + ": it claims " + std::to_string(p.stream_count()) + " streams for " +
                std::to_string(p.kernels_size()) + " kernels");
  auto check_ref = [&](const plan::TensorRef& r, const std::string& what) {
    if (r.absent()) return;
    check_text(r.name(), where + ": " + what);
    // The executor binds tensors by name: one that is there has one (an absent one says so).
    if (r.name().empty()) throw Error(where + ": " + what + " has no name and is not marked absent");
    static const std::set<std::string> formats = {"", "ND", "NCHW",
                                                  "NC1HWC0"};  // what lowering writes (format_of)
    if (!formats.count(r.format()))
      throw Error(where + ": " + what + " '" + r.name() + "' is in format '" + escaped(r.format()) +
                  "', which is none of ND, NCHW, NC1HWC0");
    uint64_t limit = r.region() == plan::WEIGHT ? weight_limit : p.activation_bytes();
    const std::string tensor = where + ": " + what + " '" + r.name() + "'";
    const int64_t elements = checked_element_count({r.dims().begin(), r.dims().end()}, tensor);
    size_t elem = r.dtype() > 0 && r.dtype() <= 16 ? dtype_size(static_cast<DType>(r.dtype())) : 0;
    if (elem == 0 || checked_byte_count(elements, elem, tensor) != r.size())
      throw Error(where + ": " + what + " '" + r.name() + "': its dims and dtype do not match its size");
    if (r.offset() > limit || r.size() > limit - r.offset())
      throw Error(where + ": " + what + " '" + r.name() + "' lies outside its region");
    // Kernels read elements in place: a float at an odd offset is a misaligned load.
    if (r.offset() % elem)
      throw Error(where + ": " + what + " '" + r.name() + "' lies at offset " + std::to_string(r.offset()) +
                  ", not a multiple of its " + std::to_string(elem) + "-byte elements");
  };
  std::vector<uint32_t> records(static_cast<size_t>(p.events_size()), 0),
      waits(static_cast<size_t>(p.events_size()), 0);
  for (int k = 0; k < p.kernels_size(); ++k) {
    const auto& kernel = p.kernels(k);
    check_text(kernel.name(), where + ": kernel " + std::to_string(k) + "'s name");
    check_text(kernel.op_type(), where + ": kernel " + std::to_string(k) + "'s op type");
    check_text(kernel.domain(), where + ": kernel " + std::to_string(k) + "'s domain");
    for (const auto& body : kernel.bodies())
      check_text(body.unrunnable(),
                 where + ": kernel " + std::to_string(k) + "'s message for a body it cannot run", true);
    const std::string what =
        "kernel " + std::to_string(k) + " (" + kernel.op_type() + " '" + kernel.name() + "')";
    if (kernel.stream() >= p.stream_count())
      throw Error(where + ": " + what + " is on a stream the plan lacks");
    for (const auto& r : kernel.inputs()) check_ref(r, what + " input");
    for (const auto& r : kernel.outputs()) {
      check_ref(r, what + " output");
      if (r.region() == plan::WEIGHT) throw Error(where + ": " + what + " writes into the weight region");
    }
    if (std::none_of(kernel.outputs().begin(), kernel.outputs().end(),
                     [](const plan::TensorRef& r) { return !r.absent(); }))
      throw Error(where + ": " + what + " has no output");
    check_kernel_schema(kernel, opsets, where + ": " + what);
    try {
      parse_tactic(kernel.host_tactic());
    } catch (const Error& e) {
      throw Error(where + ": " + what + ": " + e.what());
    }
    if (!kernel.tactic_source().empty() && kernel.tactic_source() != "bank")
      throw Error(where + ": " + what + "'s tactic source '" + escaped(kernel.tactic_source().substr(0, 64)) +
                  "' is neither empty nor \"bank\"");
    // Modeled figures are printed and summed by profile: finite and not negative.
    for (const auto& [field, value] : {std::pair<const char*, double>{"modeled_us", kernel.modeled_us()},
                                       {"cube_us", kernel.cube_us()},
                                       {"vector_us", kernel.vector_us()},
                                       {"memory_us", kernel.memory_us()},
                                       {"launch_us", kernel.launch_us()},
                                       {"trips", kernel.trips()}})
      if (!(value >= 0 && value <= 1e18))
        throw Error(where + ": " + what + " has " + field + " " + std::to_string(value) +
                    " (a modeled figure is finite, 0 to 1e18)");
    for (const auto& body : kernel.bodies()) {
      if (!body.unrunnable().empty()) continue;
      PlanChecks body_checks;
      body_checks.opsets = &opsets;
      check_plan_in(body.plan(), where + ": " + what + " body '" + body.attribute() + "'", body_checks);
    }
    for (uint32_t e : kernel.wait_events()) {
      if (e >= static_cast<uint64_t>(p.events_size()))
        throw Error(where + ": " + what + " waits on a missing event " + std::to_string(e));
      if (p.events(static_cast<int>(e)).to_kernel() != static_cast<uint32_t>(k))
        throw Error(where + ": " + what + " waits on event " + std::to_string(e) +
                    ", which is another kernel's");
      ++waits[e];
    }
    for (uint32_t e : kernel.record_events()) {
      if (e >= static_cast<uint64_t>(p.events_size()))
        throw Error(where + ": " + what + " records a missing event " + std::to_string(e));
      if (p.events(static_cast<int>(e)).from_kernel() != static_cast<uint32_t>(k))
        throw Error(where + ": " + what + " records event " + std::to_string(e) +
                    ", which is another kernel's");
      ++records[e];
    }
  }
  // Each event waited on at most once, and then recorded exactly once, by a kernel
  // before the waiting one: every wait follows its record in the kernel order, so no
  // interleaving of the streams can wait forever. (An event nobody waits on orders
  // nothing; a wait dropped from a plan is a race, which the fault-injection tests show.)
  for (int i = 0; i < p.events_size(); ++i) {
    const auto& e = p.events(i);
    if (e.id() != static_cast<uint32_t>(i))
      throw Error(where + ": event " + std::to_string(i) + " carries id " + std::to_string(e.id()));
    if (e.to_kernel() >= static_cast<uint64_t>(p.kernels_size()) || e.from_kernel() >= e.to_kernel())
      throw Error(where + ": event " + std::to_string(e.id()) + " does not point forward between kernels");
    const uint32_t recorded = records[static_cast<size_t>(i)], waited = waits[static_cast<size_t>(i)];
    if (recorded > 1 || waited > 1 || (waited == 1 && recorded == 0))
      throw Error(where + ": event " + std::to_string(i) + " is recorded " + std::to_string(recorded) +
                  " time(s) and waited on " + std::to_string(waited) +
                  " time(s) (a wait needs exactly one record)");
  }
  std::set<std::string> input_names;
  for (const auto& r : p.inputs()) {
    check_ref(r, "input");
    if (r.absent()) continue;
    if (!input_names.insert(r.name()).second)
      throw Error(where + ": input '" + r.name() + "' is bound twice");
    if (r.region() != plan::ACTIVATION)
      throw Error(where + ": input '" + r.name() +
                  "' lies in the weight region (inputs are copied into the pool)");
  }
  for (const auto& r : p.outputs()) check_ref(r, "output");
  check_dataflow(p, where);
  check_plan_ordering(p, where);
}

}  // namespace

void check_plan(const plan::Plan& p, const std::string& where) { check_plan_in(p, where, PlanChecks{}); }

std::string gear_name(const plan::Plan& gear) {
  std::string text;
  for (const auto& r : gear.inputs()) {
    text += (text.empty() ? "" : ";") + r.name() + ":";
    for (int d = 0; d < r.dims_size(); ++d) text += (d ? "," : "") + std::to_string(r.dims(d));
  }
  return text;
}

std::string range_text(const plan::InputRange& range) {
  std::string dims;
  for (const auto& d : range.dims())
    dims += (dims.empty() ? "" : ",") + std::to_string(d.min()) +
            (d.min() == d.max() ? "" : "~" + std::to_string(d.max()));
  return range.name() + ":[" + dims + "]";
}

plan::Plan read_plan(const std::filesystem::path& path) {
  // Opened without blocking (a named pipe never blocks the open) and refused unless a
  // regular file, whose size is then known before anything is read.
  const std::string where = path.string();
  std::string bytes = read_regular_file(path, size_t{INT_MAX}, "a plan file", "its weights go beside it");
  plan::Plan p;
  const bool parsed = p.ParseFromString(bytes);
  std::string().swap(bytes);
  if (!parsed) throw Error(where + ": not a valid plan file (protobuf parse failed: truncated or corrupt)");
  check_header(p, where);
  // The structure is checked before the weights are read: the sizes it claims decide
  // what is read and allocated, so they must be the plan's own first.
  if (structure_crc(p) != p.structure_crc())
    throw Error(where +
                ": its kernels, tensors and events do not match their checksum: the file is corrupt (compile "
                "the model again)");
  const bool side = !p.weights_file().empty();
  if (side && !p.weights().empty()) throw Error(where + ": it has inline weights and a weights file");
  PlanChecks checks;
  checks.weights_loaded = !side;
  check_plan_in(p, where, checks);
  const uint64_t needed = p.weight_bytes() + p.activation_bytes();
  if (p.weight_bytes() > physical_memory_bytes() || needed > physical_memory_bytes())
    throw Error(where + ": its weights (" + std::to_string(p.weight_bytes()) +
                " bytes) and activation pool (" + std::to_string(p.activation_bytes()) +
                " bytes) need more than this machine's memory (" + std::to_string(physical_memory_bytes()) +
                " bytes)");
  if (side) {
    const std::string& name = p.weights_file();
    if (name.find('/') != std::string::npos || name == ".." || name == "." || name.size() > 255 ||
        escaped(name) != name)
      throw Error(where + ": its weights file '" + escaped(name) +
                  "' must be a name beside the plan (printable, at most 255 bytes)");
    const std::filesystem::path file = path.parent_path() / p.weights_file();
    std::optional<InputFile> opened;
    try {
      opened.emplace(file);
    } catch (const Error& e) {
      throw Error(where + ": its weights file " + file.string() + " cannot be read (" + e.what() + ")");
    }
    InputFile& weights = *opened;
    struct stat st {};
    if (::fstat(weights.fd(), &st) != 0 || !S_ISREG(st.st_mode))
      throw Error(where + ": its weights file " + file.string() + " cannot be read (not a regular file)");
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size != p.weight_bytes())
      throw Error(where + ": its weights file " + file.string() + " holds " + std::to_string(size) +
                  " bytes, the plan needs " + std::to_string(p.weight_bytes()));
    std::string* region = p.mutable_weights();
    try {
      region->resize(size);
    } catch (const std::bad_alloc&) {
      throw Error(where + ": cannot allocate " + std::to_string(size) +
                  " bytes for its weights (out of memory)");
    }
    if (weights.read(region->data(), size) != size)
      throw Error(where + ": its weights file " + file.string() + " is shorter than it was");
  }
  if (crc_of(p.weights()) != p.weights_crc())
    throw Error(
        where +
        ": its weight region does not match its checksum: the file is corrupt (compile the model again)");
  return p;
}

}  // namespace geopt::ascend
