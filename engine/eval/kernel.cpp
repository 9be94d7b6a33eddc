#include "eval/kernel.h"

#include "ir/domain.h"
#include "util/error.h"

namespace geopt {

const HostTensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  return *inputs_[i];
}

int64_t KernelContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = node_.attr(name);
  return a ? a->i : fallback;
}

float KernelContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = node_.attr(name);
  return a ? a->f : fallback;
}

std::string KernelContext::attr_string(std::string_view name, const std::string& fallback) const {
  const Attribute* a = node_.attr(name);
  return a ? a->s : fallback;
}

std::vector<int64_t> KernelContext::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* a = node_.attr(name);
  return a ? a->ints : fallback;
}

std::vector<float> KernelContext::attr_floats(std::string_view name, std::vector<float> fallback) const {
  const Attribute* a = node_.attr(name);
  return a ? a->floats : fallback;
}

const Tensor* KernelContext::attr_tensor(std::string_view name) const {
  const Attribute* a = node_.attr(name);
  return a && !a->tensors.empty() ? a->tensors[0].get() : nullptr;
}

void KernelContext::check_planned_dims(size_t i, const std::vector<int64_t>& dims) const {
  if (i < placements_.size() && placements_[i].at && placements_[i].dims != dims) {
    std::string want, got;
    for (int64_t d : placements_[i].dims) want += (want.empty() ? "" : ",") + std::to_string(d);
    for (int64_t d : dims) got += (got.empty() ? "" : ",") + std::to_string(d);
    fail("output " + std::to_string(i) + " would be [" + got + "], where the plan keeps it at [" + want +
         "]");
  }
}

HostTensor KernelContext::new_output(size_t i, DType dtype, const std::vector<int64_t>& dims,
                                     std::optional<size_t> in_place_input) const {
  if (i < placements_.size() && placements_[i].at && placements_[i].dtype == dtype &&
      placements_[i].dims == dims) {
    HostTensor placed = HostTensor::placed(dtype, dims, placements_[i].at, nullptr);
    const std::byte* begin = placed.raw();
    const std::byte* end = begin + placed.nbytes();
    bool shared = false;
    for (size_t j = 0; j < inputs_.size(); ++j) {
      const HostTensor* in = inputs_[j];
      const bool exactly_over =
          in_place_input == j && in && in->raw() == begin && in->nbytes() == placed.nbytes();
      shared = shared ||
               (in && in->nbytes() && !exactly_over && in->raw() < end && begin < in->raw() + in->nbytes());
    }
    if (!shared) return placed;
  }
  return HostTensor::uninitialized(dtype, dims);
}

void KernelContext::fail(const std::string& message) const { throw Error(node_.describe() + ": " + message); }

void register_standard_ops(OpRegistry& r) {
  register_standard_traits(r);
  register_elementwise_kernels(r);
  register_linalg_kernels(r);
  register_conv_pool_kernels(r);
  register_deform_conv_kernel(r);
  register_norm_kernels(r);
  register_reduce_kernels(r);
  register_softmax_kernels(r);
  register_shape_kernels(r);
  register_fused_kernels(r);
  register_roll_kernel(r);
  register_indexing_kernels(r);
  register_quantize_kernels(r);
  register_quant_elementwise_kernels(r);
  register_quant_pool_kernels(r);
  register_quant_row_kernels(r);
  register_quantized_cube_kernels(r);
  register_spatial_kernels(r);
  register_signal_kernels(r);
  register_random_kernels(r);
  register_einsum_kernel(r);
  register_recurrent_kernels(r);
  register_control_flow_kernels(r);
  register_ngram_kernel(r);
}

}  // namespace geopt
