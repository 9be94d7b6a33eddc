#include "kernels/onednn.h"

#include "eval/derived_constant.h"
#include "kernels/activation.h"

#include <omp.h>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <new>

namespace geopt {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

namespace {

// A page-aligned buffer of one thread, grown as needed and never shrunk.
class ThreadBuffer {
 public:
  dnnl::memory view(const dnnl::memory::desc& desc) {
    const size_t need = desc.get_size();
    if (need > size_) {
      const size_t size = (need + 4095) / 4096 * 4096;  // aligned_alloc wants a multiple of the alignment
      bytes_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, size)));
      if (!bytes_) {
        size_ = 0;
        throw std::bad_alloc();
      }
      size_ = size;
    }
    return dnnl::memory(desc, cpu_engine(), need ? bytes_.get() : nullptr);
  }

 private:
  std::unique_ptr<std::byte, void (*)(void*)> bytes_{nullptr, std::free};
  size_t size_ = 0;
};

}  // namespace

dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc) {
  thread_local ThreadBuffer buffer;
  return buffer.view(desc);
}

dnnl::memory thread_operand(ThreadOperand role, const dnnl::memory::desc& desc) {
  thread_local ThreadBuffer source, destination, weights, scaled_input;
  switch (role) {
    case ThreadOperand::source:
      return source.view(desc);
    case ThreadOperand::destination:
      return destination.view(desc);
    case ThreadOperand::weights:
      return weights.view(desc);
    case ThreadOperand::scaled_input:
      break;
  }
  return scaled_input.view(desc);
}

void reorder_memory(dnnl::memory from, dnnl::memory to) {
  dnnl::reorder(from, to).execute(cpu_stream(), from, to);
  cpu_stream().wait();
}

dnnl::memory input_in_layout(const dnnl::memory::desc& want, const dnnl::memory::desc& user, const void* data,
                             const MemoryConvert& convert) {
  dnnl::memory given(user, cpu_engine(), const_cast<void*>(data));
  if (want == user) return given;
  dnnl::memory converted = thread_operand(ThreadOperand::source, want);
  convert(given, converted);
  return converted;
}

dnnl::memory weights_in_layout(const HostTensor& w, const std::string& key, const dnnl::memory::desc& want,
                               const dnnl::memory::desc& user, const MemoryConvert& convert) {
  dnnl::memory given(user, cpu_engine(), const_cast<std::byte*>(w.raw()));
  if (want == user) return given;
  auto converted = [&] {
    dnnl::memory m(want, cpu_engine());
    convert(given, m);
    return m;
  };
  if (!cacheable_constant(w)) return converted();
  return *derived_constant<dnnl::memory>(w, key,
                                         [&] { return std::make_shared<const dnnl::memory>(converted()); });
}

dnnl::memory::format_tag row_major_tag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  static const tag tags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};
  return tags[rank - 1];
}

void append_activation(const KernelContext& ctx, dnnl::post_ops& ops, const std::string& name,
                       const std::vector<float>& params) {
  using dnnl::algorithm;
  auto add = [&](algorithm a, float alpha = 0.0f, float beta = 0.0f) {
    ops.append_eltwise(1.0f, a, alpha, beta);
  };
  switch (parse_activation(ctx, name)) {
    case Activation::None:
      return;
    case Activation::Relu:
      return add(algorithm::eltwise_relu);
    case Activation::Clip:
      if (params.size() != 2) ctx.fail("Clip activation needs 2 params (min, max)");
      return add(algorithm::eltwise_clip_v2, params[0],
                 params[1]);  // v2: min(max(x, lo), hi), as ONNX's Clip
    case Activation::LeakyRelu:
      return add(algorithm::eltwise_relu, params.empty() ? 0.01f : params[0]);
    case Activation::HardSwish:  // x * max(0, min(1, x/6 + 1/2)); 2.6 ignores the two
      return add(algorithm::eltwise_hardswish, 1.0f / 6.0f, 0.5f);
    case Activation::Sigmoid:
      return add(algorithm::eltwise_logistic);
    case Activation::SiLU:
      return add(algorithm::eltwise_swish, 1.0f);
    case Activation::Mish:
      return add(algorithm::eltwise_mish);
    case Activation::QuickGelu:  // x * sigmoid(alpha x)
      return add(algorithm::eltwise_swish, params.empty() ? 1.702f : params[0]);
    case Activation::Gelu:
      return add(algorithm::eltwise_gelu_erf);
    case Activation::GeluTanh:
      return add(algorithm::eltwise_gelu_tanh);
    case Activation::Tanh:
      return add(algorithm::eltwise_tanh);
  }
}

std::string desc_bytes(const dnnl::memory::desc& d) {
  return std::string(reinterpret_cast<const char*>(&d.data), sizeof(d.data));
}

std::string dims_key(const dnnl::memory::dims& d) {
  std::string s;
  for (auto v : d) s += std::to_string(v) + ',';
  return s + ';';
}

std::string activation_key(const std::string& name, const std::vector<float>& params) {
  std::string key = name;
  for (float p : params) {  // in hex: exact, two params never share a key
    char text[32];
    key += ',';
    key.append(text, std::to_chars(text, text + sizeof text, p, std::chars_format::hex).ptr);
  }
  return key;
}

namespace {
// OMP_NUM_THREADS, else every core: read as the library loads, before any kernel or
// caller changes the team (set_kernel_threads, KernelThreadLimit).
const int kStartedWith = omp_get_max_threads();
}  // namespace

int default_kernel_threads() { return kStartedWith; }

void set_kernel_threads(int threads) { omp_set_num_threads(threads > 0 ? threads : kStartedWith); }

std::string host_cpu_isa() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

KernelThreadLimit::KernelThreadLimit(int threads) {
  const int team = omp_get_max_threads();
  if (threads > 0 && threads < team) {
    restore_ = team;
    omp_set_num_threads(threads);
  }
}

KernelThreadLimit::~KernelThreadLimit() {
  if (restore_) omp_set_num_threads(restore_);
}

}  // namespace geopt
