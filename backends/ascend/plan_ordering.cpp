#include "plan_ordering.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "device_ops/device_ops.h"
#include "ir/domain.h"
#include "ops/op_traits.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

// Happens-before between a plan's kernels, as vector clocks: clock[k][s] is the last
// position on stream s (1-based; 0: none) that has finished when kernel k starts, k's own
// position included. Edges run from a stream's previous kernel and from the recorder of
// each event k waits on; both point back in kernel order, so one pass in that order
// computes every clock.
class Ordering {
 public:
  Ordering(const plan::Plan& p, const std::string& where) : kernels_(static_cast<size_t>(p.kernels_size())) {
    std::map<uint32_t, uint32_t> dense;  // only the streams kernels use, numbered densely
    for (const auto& k : p.kernels()) dense.emplace(k.stream(), 0);
    uint32_t next = 0;
    for (auto& [stream, index] : dense) index = next++;
    streams_ = dense.size();
    // Clocks grow as kernels x streams; a real plan has a handful of streams.
    if (streams_ && kernels_ > (size_t{1} << 25) / streams_)
      throw Error(where + ": " + std::to_string(kernels_) + " kernels on " + std::to_string(streams_) +
                  " streams are more than the ordering check follows (2^25 kernel-streams)");
    clock_.assign(kernels_ * streams_, 0);
    stream_.resize(kernels_);
    position_.resize(kernels_);
    std::vector<uint32_t> length(streams_, 0);
    std::vector<int64_t> previous(streams_, -1);
    for (size_t k = 0; k < kernels_; ++k) {
      const auto& kernel = p.kernels(static_cast<int>(k));
      const uint32_t s = dense.at(kernel.stream());
      stream_[k] = s;
      position_[k] = ++length[s];
      uint32_t* mine = &clock_[k * streams_];
      auto join = [&](size_t before) {
        const uint32_t* theirs = &clock_[before * streams_];
        for (size_t i = 0; i < streams_; ++i) mine[i] = std::max(mine[i], theirs[i]);
      };
      if (previous[s] >= 0) join(static_cast<size_t>(previous[s]));
      for (uint32_t e : kernel.wait_events())
        join(p.events(static_cast<int>(e)).from_kernel());  // check_plan: e < k
      mine[s] = position_[k];
      previous[s] = static_cast<int64_t>(k);
    }
  }

  // `before` has finished whenever `after` starts, or is `after` itself. Kernel -1 is the
  // caller binding the inputs, before every kernel.
  bool finished_by(int64_t before, int64_t after) const {
    if (before < 0) return true;
    if (after < 0) return false;
    return position_[static_cast<size_t>(before)] <=
           clock_[static_cast<size_t>(after) * streams_ + stream_[static_cast<size_t>(before)]];
  }
  uint32_t stream(size_t k) const { return stream_[k]; }
  uint32_t position(size_t k) const { return position_[k]; }
  uint32_t clock(size_t k, uint32_t stream) const { return clock_[k * streams_ + stream]; }

 private:
  size_t kernels_;
  size_t streams_ = 0;
  std::vector<uint32_t> clock_, stream_, position_;
};

std::optional<onnx::AttributeProto> attribute(const plan::Kernel& k, const std::string& name) {
  for (const auto& bytes : k.attributes()) {
    onnx::AttributeProto a;
    if (a.ParseFromString(bytes) && a.name() == name) return a;
  }
  return std::nullopt;
}

bool same_place(const plan::TensorRef& a, const plan::TensorRef& b) {
  return a.offset() == b.offset() && a.size() == b.size();
}

// The input whose bytes output `o` of `k` leaves as they are (it lies where its input's
// bytes are, and a view writes them unchanged), or none: then the output is a write.
std::optional<int> viewed_input(const plan::Kernel& k, int o) {
  if (!is_onnx_domain(k.domain()) || k.inputs_size() == 0) return std::nullopt;
  const plan::TensorRef& in = k.inputs(0);
  const plan::TensorRef& out = k.outputs(o);
  if (in.absent() || in.region() != plan::ACTIVATION) return std::nullopt;
  if (op_registry().traits(k.domain(), k.op_type()).view)
    return same_place(in, out) ? std::optional<int>(0) : std::nullopt;
  const int64_t rank = in.dims_size();
  if (k.op_type() == "Transpose") {
    std::vector<int64_t> perm;
    if (auto a = attribute(k, "perm"))
      perm.assign(a->ints().begin(), a->ints().end());
    else
      for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
    if (static_cast<int64_t>(perm.size()) != rank || !same_place(in, out)) return std::nullopt;
    std::vector<bool> used(static_cast<size_t>(rank), false);
    int64_t last = -1;  // the non-unit axes keep their order
    for (int64_t axis : perm) {
      if (axis < 0 || axis >= rank || used[static_cast<size_t>(axis)]) return std::nullopt;
      used[static_cast<size_t>(axis)] = true;
      if (in.dims(static_cast<int>(axis)) == 1) continue;
      if (axis < last) return std::nullopt;
      last = axis;
    }
    return 0;
  }
  if (k.op_type() == "Split") {
    int64_t axis = 0;
    if (auto a = attribute(k, "axis")) axis = a->i() < 0 ? a->i() + rank : a->i();
    if (axis < 0 || axis >= rank) return std::nullopt;
    for (int64_t d = 0; d < axis; ++d)
      if (in.dims(static_cast<int>(d)) != 1) return std::nullopt;
    // With only unit axes before the split one, piece o is the input's bytes after pieces 0..o-1.
    uint64_t start = in.offset();
    for (int j = 0; j < o; ++j) {
      if (k.outputs(j).absent()) return std::nullopt;
      start += k.outputs(j).size();
    }
    const uint64_t in_end = in.offset() + in.size();  // check_plan: inside the pool, no overflow
    return out.offset() == start && start <= in_end && out.size() <= in_end - start ? std::optional<int>(0)
                                                                                    : std::nullopt;
  }
  return std::nullopt;
}

std::string kernel_text(const plan::Plan& p, int64_t k) {
  if (k < 0) return "the caller (an input)";
  const auto& kernel = p.kernels(static_cast<int>(k));
  return "kernel " + std::to_string(k) + " (" + kernel.op_type() + " '" + kernel.name() + "', stream " +
         std::to_string(kernel.stream()) + ")";
}

// One write of a pool tensor, or a view of one, and who reads it.
struct Tensor {
  std::string name;
  int64_t writer;  // -1: an input the caller binds
  uint64_t begin, end;
  size_t root;  // the write whose bytes a view reads; itself for a write
  std::vector<std::pair<uint32_t, int64_t>> last_read;  // per stream: the last reader (position, kernel)
  bool read_by_caller = false;                          // an output of the plan
  std::vector<size_t> views;                            // a write's: itself and every view of its bytes
};

}  // namespace

void check_plan_ordering(const plan::Plan& p, const std::string& where) {
  const Ordering order(p, where);
  std::vector<Tensor> tensors;
  std::map<std::pair<std::string, uint64_t>, size_t> latest;  // as the dataflow check binds reads
  auto add = [&](const plan::TensorRef& r, int64_t writer, std::optional<size_t> root) {
    const size_t id = tensors.size();
    tensors.push_back(
        {r.name(), writer, r.offset(), r.offset() + r.size(), root.value_or(id), {}, false, {}});
    tensors[root.value_or(id)].views.push_back(id);
    latest[{r.name(), r.offset()}] = id;
    return id;
  };
  auto bound = [&](const plan::TensorRef& r) -> std::optional<size_t> {
    if (r.absent() || r.region() != plan::ACTIVATION) return std::nullopt;
    auto it = latest.find({r.name(), r.offset()});
    return it == latest.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  for (const auto& r : p.inputs())
    if (!r.absent()) add(r, -1, std::nullopt);
  for (int k = 0; k < p.kernels_size(); ++k) {
    const auto& kernel = p.kernels(k);
    std::vector<std::optional<size_t>> reads;
    for (const auto& r : kernel.inputs()) {
      reads.push_back(bound(r));
      if (!reads.back()) continue;
      const Tensor& t = tensors[*reads.back()];
      if (!order.finished_by(t.writer, k))
        throw Error(where + ": " + kernel_text(p, k) + " reads '" + r.name() + "', which " +
                    kernel_text(p, t.writer) +
                    " writes, but no stream or event orders the write first (a race)");
      // Recorded on the view read: a write over another piece of a Split need not wait for it.
      Tensor& read = tensors[*reads.back()];
      const uint32_t s = order.stream(static_cast<size_t>(k));
      auto seen = std::find_if(read.last_read.begin(), read.last_read.end(), [&](const auto& e) {
        return order.stream(static_cast<size_t>(e.second)) == s;
      });
      if (seen == read.last_read.end())
        read.last_read.emplace_back(order.position(static_cast<size_t>(k)), k);
      else
        *seen = {order.position(static_cast<size_t>(k)), k};  // kernel order is each stream's order
    }
    for (int o = 0; o < kernel.outputs_size(); ++o) {
      const auto& r = kernel.outputs(o);
      if (r.absent()) continue;
      const std::optional<int> viewed = viewed_input(kernel, o);
      const std::optional<size_t> source = viewed ? reads[static_cast<size_t>(*viewed)] : std::nullopt;
      add(r, k, source ? std::optional<size_t>(tensors[*source].root) : std::nullopt);
    }
  }
  for (const auto& r : p.outputs())
    if (auto id = bound(r)) tensors[*id].read_by_caller = true;

  // The pool in kernel order: which write's bytes lie where. A write over bytes another
  // write left must come after that write and after all of its readers, in every order.
  std::map<uint64_t, std::pair<uint64_t, size_t>> occupant;  // begin -> (end, tensor)
  auto write = [&](size_t id) {
    const Tensor& w = tensors[id];
    if (w.begin == w.end) return;
    auto it = occupant.upper_bound(w.begin);
    if (it != occupant.begin()) --it;
    std::vector<std::pair<uint64_t, std::pair<uint64_t, size_t>>> kept;
    while (it != occupant.end() && it->first < w.end) {
      const uint64_t begin = it->first, end = it->second.first;
      const size_t over = it->second.second;
      if (end <= w.begin) {
        ++it;
        continue;
      }
      const Tensor& t = tensors[over];
      const uint64_t from = std::max(begin, w.begin), to = std::min(end, w.end);
      const std::string clash = where + ": " + kernel_text(p, w.writer) + " writes '" + w.name +
                                "' over bytes " + std::to_string(from) + "-" + std::to_string(to) + " of '" +
                                t.name + "', which " + kernel_text(p, t.writer) + " writes";
      if (!(t.writer < w.writer && order.finished_by(t.writer, w.writer)))
        throw Error(clash + ", and no stream or event orders the two writes");
      for (size_t v : t.views) {  // the write itself and its views that hold these bytes
        const Tensor& view = tensors[v];
        if (view.end <= from || to <= view.begin) continue;
        const std::string what = v == over ? std::string() : " (through its view '" + view.name + "')";
        for (const auto& [position, reader] : view.last_read)
          if (position >
              order.clock(static_cast<size_t>(w.writer), order.stream(static_cast<size_t>(reader))))
            throw Error(clash + ", while " + kernel_text(p, reader) + " may still read it" + what +
                        ": no stream or event orders the read first");
        if (view.read_by_caller) throw Error(clash + " as an output of the plan" + what);
      }
      if (begin < w.begin) kept.push_back({begin, {w.begin, over}});
      if (end > w.end) kept.push_back({w.end, {end, over}});
      it = occupant.erase(it);
    }
    for (const auto& piece : kept) occupant.insert(piece);
    occupant[w.begin] = {w.end, id};
  };
  for (size_t id = 0; id < tensors.size(); ++id)
    if (tensors[id].root == id) write(id);
}

}  // namespace geopt::ascend
