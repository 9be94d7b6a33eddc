#include "layout.h"

#include "ir/domain.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* format_name(Format f) {
  switch (f) {
    case Format::ND:
      return "ND";
    case Format::NCHW:
      return "NCHW";
    case Format::NC1HWC0:
      return "NC1HWC0";
    case Format::FRACTAL_Z:
      return "FRACTAL_Z";
    case Format::FRACTAL_NZ:
      return "FRACTAL_NZ";
  }
  return "?";
}

std::optional<Format> parse_format(std::string_view name) {
  for (Format f : {Format::ND, Format::NCHW, Format::NC1HWC0, Format::FRACTAL_Z, Format::FRACTAL_NZ})
    if (name == format_name(f)) return f;
  return std::nullopt;
}

int64_t c0_for(DType t) { return dtype_size(t) == 1 ? 32 : 16; }

std::vector<int64_t> device_shape(const std::vector<int64_t>& dims, Format format, DType t) {
  const int64_t c0 = c0_for(t);
  switch (format) {
    case Format::ND:
    case Format::NCHW:
      return dims;
    case Format::NC1HWC0:
      if (dims.size() != 4) throw Error("NC1HWC0 needs a 4-D NCHW shape");
      return {dims[0], ceil_div(dims[1], c0), dims[2], dims[3], c0};
    case Format::FRACTAL_Z:
      if (dims.size() != 4) throw Error("FRACTAL_Z needs 4-D NCHW weights");
      return {ceil_div(dims[1], c0) * dims[2] * dims[3], ceil_div(dims[0], 16), 16, c0};
    case Format::FRACTAL_NZ: {
      if (dims.size() < 2) throw Error("FRACTAL_NZ needs rank >= 2");
      std::vector<int64_t> out(dims.begin(), dims.end() - 2);
      int64_t h = dims[dims.size() - 2], w = dims.back();
      out.insert(out.end(), {ceil_div(w, c0), ceil_div(h, 16), 16, c0});
      return out;
    }
  }
  return dims;
}

int64_t padded_elements(const std::vector<int64_t>& dims, Format format, DType t) {
  int64_t n = 1;
  for (int64_t d : device_shape(dims, format, t)) n *= d;
  return n;
}

bool is_weight_layout(const Node& n) {
  if (n.domain != kGeoptDomain || n.op_type != "TransData") return false;
  const Attribute* dst = n.attr("dst_format");
  const std::optional<Format> f = dst ? parse_format(dst->s) : std::nullopt;
  return f == Format::FRACTAL_Z || f == Format::FRACTAL_NZ;
}

}  // namespace geopt::ascend
