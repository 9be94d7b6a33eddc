#pragma once
// The one oneDNN CPU engine every oneDNN kernel runs on, and what the kernels share
// to describe their work to it.
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

dnnl::engine& cpu_engine();
// This thread's stream on cpu_engine() (oneDNN streams are not shared across threads).
dnnl::stream& cpu_stream();

// A scratchpad for one primitive call on this thread: a buffer kept per thread and grown
// as needed, so a call pays no allocation (a fresh one of a few MB is page-faulted in
// on every call). Valid until this thread's next call; primitives run to completion
// (stream wait) before their kernel returns, so one buffer per thread suffices.
dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc);

// A primitive's operand in the layout it wants, when the caller's is another (the
// converted input, the output before it is converted back): kept per thread like the
// scratchpad, one buffer per role, so a call neither allocates nor page-faults a fresh
// tensor. Valid until this thread's next call for the same role.
enum class ThreadOperand { source, destination, weights, scaled_input };
dnnl::memory thread_operand(ThreadOperand role, const dnnl::memory::desc& desc);

// A primitive's plan (its descriptor, the primitive, what the kernel keeps of them) made
// once per key (shapes, layouts, post-ops, thread count) and shared: primitive
// descriptors are costly to create and a model repeats a few shapes. make() may return
// null (no plan worth using); that answer is kept too. One cache per Plan type.
template <class Plan, class Make>
std::shared_ptr<const Plan> cached_plan(const std::string& key, Make&& make) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Plan>> plans;
  std::lock_guard lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, std::shared_ptr<const Plan>(make())).first;
  return it->second;
}

// A conversion of one memory into another's layout (a oneDNN reorder by default).
using MemoryConvert = std::function<void(dnnl::memory from, dnnl::memory to)>;
void reorder_memory(dnnl::memory from, dnnl::memory to);  // on this thread's stream, waited for

// A primitive's input in the layout it wants: the caller's bytes where `user` is that
// layout, else converted into this thread's operand buffer (thread_operand: valid until
// this thread's next call).
dnnl::memory input_in_layout(const dnnl::memory::desc& want, const dnnl::memory::desc& user, const void* data,
                             const MemoryConvert& convert = reorder_memory);
// Weights in the layout a primitive wants: converted once per weight and layout while a
// constant weight lives (derived_constant, under `key`), on every call otherwise.
dnnl::memory weights_in_layout(const HostTensor& w, const std::string& key, const dnnl::memory::desc& want,
                               const dnnl::memory::desc& user, const MemoryConvert& convert = reorder_memory);

// The dense row-major layout of a tensor of `rank` dims (1 to 6): ab, abc, ... (a grouped
// conv's goihw is abcde).
dnnl::memory::format_tag row_major_tag(size_t rank);

// A fused kernel's activation (docs/OPS.md) as a oneDNN eltwise post-op; "none" adds
// nothing. Unknown names and wrong parameter counts fail as the kernel's error.
void append_activation(const KernelContext& ctx, dnnl::post_ops& ops, const std::string& name,
                       const std::vector<float>& params);
// The bytes of a memory descriptor (a plain C struct in oneDNN 2.x), for cache keys: two
// descriptors with the same bytes describe the same layout.
std::string desc_bytes(const dnnl::memory::desc& d);
// Dims as text ("1,3,224,224,;"), for primitive cache keys.
std::string dims_key(const dnnl::memory::dims& d);
// A stable text of a fused kernel's activation, for primitive cache keys.
std::string activation_key(const std::string& name, const std::vector<float>& params);

}  // namespace geopt
