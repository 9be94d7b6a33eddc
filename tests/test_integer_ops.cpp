// ONNX's integer products as quantizers write them. ConvInteger and MatMulInteger against
// the same sums computed independently: the operands cast to float, centred and
// multiplied by a float Conv / MatMul, exact while the sums stay below 2^24. QLinearConv
// and QLinearMatMul against those sums requantized by ONNX's formula.
// Every attribute combination the kernels treat apart (pads, strides, dilations, groups,
// zero points of either sign, uint8 and int8 weights, one zero point or one per channel)
// must give the same integers, whichever way the machine sums them: oneDNN's int8
// primitives where they are exact, the loops elsewhere (CTest runs this file a second
// time under ONEDNN_MAX_CPU_ISA=AVX2, where only the loops apply).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ascend/device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "kernels/int8_output_stage.h"
#include "onnx/import.h"
#include "test_support.h"

namespace geopt {
namespace {

std::string list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// Random 8-bit values in the type's range.
std::vector<int> draw(size_t n, bool is_unsigned, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(is_unsigned ? 0 : -128, is_unsigned ? 255 : 127);
  std::vector<int> v(n);
  for (int& x : v) x = d(rng);
  return v;
}

HostTensor bytes_tensor(DType t, const std::vector<int64_t>& dims, const std::vector<int>& v) {
  HostTensor x(t, dims);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::U8)
      x.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
    else
      x.mutable_data<int8_t>()[i] = static_cast<int8_t>(v[i]);
  }
  return x;
}

struct IntegerConv {
  int k, stride, dilation, channels, group;
  std::vector<int> pads;
  bool x_unsigned, w_unsigned, w_per_channel;
  int x_zero;
  bool weights_as_quantized;
  std::string name() const {
    return "k" + std::to_string(k) + " s" + std::to_string(stride) + " d" + std::to_string(dilation) + " c" +
           std::to_string(channels) + " g" + std::to_string(group) + " pads [" + list(pads) + "] x " +
           (x_unsigned ? "u8" : "s8") + " zero " + std::to_string(x_zero) + ", w " +
           (w_unsigned ? "u8" : "s8") + (w_per_channel ? " per channel" : "") +
           (weights_as_quantized ? "" : ", full-range weights and zero points");
  }
};

// The ConvInteger model and its float twin over the same constant weights and zero points.
std::pair<Model, Model> conv_models(const IntegerConv& c, std::mt19937& rng) {
  const int m = c.group == 1 ? 8 : c.channels, cg = c.channels / c.group;
  const char* xt = c.x_unsigned ? "uint8" : "int8";
  const char* wt = c.w_unsigned ? "uint8" : "int8";
  // Weights as quantizers write them (int8 within +-127 about a small zero point, uint8
  // about 128: centred, they fit int8 and oneDNN sums them) or anywhere in the range.
  std::vector<int> w = draw(static_cast<size_t>(m * cg * c.k * c.k), c.w_unsigned, rng);
  std::vector<int> wz = draw(c.w_per_channel ? static_cast<size_t>(m) : 1, c.w_unsigned, rng);
  if (c.weights_as_quantized) {
    for (int& v : w) v = c.w_unsigned ? v : std::clamp(v, -120, 120);
    for (size_t i = 0; i < wz.size(); ++i) wz[i] = c.w_unsigned ? 128 : static_cast<int>(i % 7) - 3;
  }
  const std::string wz_type = std::string(wt) + (c.w_per_channel ? "[" + std::to_string(m) + "]" : "");
  const std::string attrs = "kernel_shape = [" + list({c.k, c.k}) + "], strides = [" +
                            list({c.stride, c.stride}) + "], dilations = [" + list({c.dilation, c.dilation}) +
                            "], pads = [" + list(c.pads) + "], group = " + std::to_string(c.group);
  const std::string x_dims = "[1," + std::to_string(c.channels) + ",11,9]";
  const std::string w_dims = "[" + list({m, cg, c.k, c.k}) + "]";
  const std::string head = "<ir_version: 8, opset_import: [\"\" : 13]>\n";
  const std::string constants = "  w = Constant <value = " + std::string(wt) + w_dims + " {" + list(w) +
                                "}> ()\n" + "  xz = Constant <value = " + xt + " {" +
                                std::to_string(c.x_zero) + "}> ()\n" + "  wz = Constant <value = " + wz_type +
                                " {" + list(wz) + "}> ()\n";
  const std::string integer = head + "g (" + xt + x_dims + " x) => (int32[?,?,?,?] y) {\n" + constants +
                              "  y = ConvInteger <" + attrs + "> (x, w, xz, wz)\n}";
  const std::string wz_shape = c.w_per_channel ? "  s = Constant <value = int64[4] {" + list({m, 1, 1, 1}) +
                                                     "}> ()\n  wzs = Reshape(wzf, s)\n"
                                               : "  wzs = Identity(wzf)\n";
  const std::string twin = head + "g (" + xt + x_dims + " x) => (int32[?,?,?,?] y) {\n" + constants +
                           "  xf = Cast <to = 1> (x)\n  xzf = Cast <to = 1> (xz)\n  xc = Sub(xf, xzf)\n"
                           "  wf = Cast <to = 1> (w)\n  wzf = Cast <to = 1> (wz)\n" +
                           wz_shape + "  wc = Sub(wf, wzs)\n  yf = Conv <" + attrs +
                           "> (xc, wc)\n  y = Cast <to = 6> (yf)\n}";
  return {import_onnx_proto(test::parse_text_model(integer.c_str()), "ConvInteger " + c.name()),
          import_onnx_proto(test::parse_text_model(twin.c_str()), "float twin " + c.name())};
}

void require_equal_int32(const HostTensor& a, const HostTensor& b, const std::string& what) {
  REQUIRE(a.dtype() == DType::I32);
  REQUIRE(b.dtype() == DType::I32);
  REQUIRE(a.dims() == b.dims());
  int64_t differ = 0;
  for (int64_t i = 0; i < a.size(); ++i) differ += a.data<int32_t>()[i] != b.data<int32_t>()[i];
  INFO(what);
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE(
    "ConvInteger sums exactly what a float conv of the centred operands does, for every attribute "
    "combination, zero point and weight type") {
  std::mt19937 rng(5);
  int cases = 0;
  for (int k : {1, 3})
    for (int stride : {1, 2})
      for (int dilation : {1, 2}) {
        if (k == 1 && dilation > 1) continue;
        for (const std::vector<int>& pads : {std::vector<int>{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 2, 1, 0}})
          for (auto [channels, group] :
               {std::pair{3, 1}, std::pair{20, 1}, std::pair{16, 16}, std::pair{8, 2}})
            for (bool x_unsigned : {true, false})
              for (bool w_unsigned : {false, true}) {
                const bool per_channel = (cases % 2) == 1;
                const int x_zero = x_unsigned ? (cases % 3 == 0 ? 0 : 131) : (cases % 3 == 0 ? 0 : -17);
                const IntegerConv c{k,          stride,     dilation,    channels, group,         pads,
                                    x_unsigned, w_unsigned, per_channel, x_zero,   cases % 4 != 3};
                auto [integer, twin] = conv_models(c, rng);
                const HostTensor x =
                    bytes_tensor(x_unsigned ? DType::U8 : DType::I8, {1, channels, 11, 9},
                                 draw(static_cast<size_t>(channels * 11 * 9), x_unsigned, rng));
                const NamedTensors got = Evaluator(integer, ascend::op_registry()).run({{"x", x}});
                const NamedTensors want = Evaluator(twin, ascend::op_registry()).run({{"x", x}});
                require_equal_int32(got.at(0).second, want.at(0).second, c.name());
                ++cases;
              }
      }
  CHECK(cases == 288);
}

TEST_CASE(
    "MatMulInteger sums exactly what a float MatMul of the centred operands does: batched and 1-D A, "
    "zero points of either sign, one per column") {
  std::mt19937 rng(9);
  for (const char* a_dims : {"[2,5,70]", "[33,70]", "[70]"})
    for (bool a_unsigned : {true, false})
      for (bool b_unsigned : {false, true})
        for (bool per_column : {false, true})
          for (bool as_quantized : {true, false}) {
            const char* at = a_unsigned ? "uint8" : "int8";
            const char* bt = b_unsigned ? "uint8" : "int8";
            // As quantizers write B (centred, it fits int8: oneDNN sums it), or anywhere.
            std::vector<int> b = draw(70 * 12, b_unsigned, rng);
            std::vector<int> bz = draw(per_column ? 12 : 1, b_unsigned, rng);
            if (as_quantized) {
              for (int& v : b) v = b_unsigned ? v : std::clamp(v, -120, 120);
              for (size_t i = 0; i < bz.size(); ++i) bz[i] = b_unsigned ? 128 : static_cast<int>(i % 7) - 3;
            }
            const int a_zero = a_unsigned ? 77 : -3;
            const std::string constants =
                std::string("  b = Constant <value = ") + bt + "[70,12] {" + list(b) + "}> ()\n" +
                "  az = Constant <value = " + at + " {" + std::to_string(a_zero) + "}> ()\n" +
                "  bz = Constant <value = " + bt + (per_column ? "[12]" : "") + " {" + list(bz) + "}> ()\n";
            const std::string out_dims = std::string(a_dims) == "[70]"      ? "[12]"
                                         : std::string(a_dims) == "[33,70]" ? "[33,12]"
                                                                            : "[2,5,12]";
            const std::string head = std::string("<ir_version: 8, opset_import: [\"\" : 13]>\ng (") + at +
                                     a_dims + " a) => (int32" + out_dims + " y) {\n" + constants;
            const std::string integer = head + "  y = MatMulInteger(a, b, az, bz)\n}";
            const std::string twin =
                head +
                "  af = Cast <to = 1> (a)\n  azf = Cast <to = 1> (az)\n  ac = Sub(af, azf)\n"
                "  bf = Cast <to = 1> (b)\n  bzf = Cast <to = 1> (bz)\n  bc = Sub(bf, bzf)\n"
                "  yf = MatMul(ac, bc)\n  y = Cast <to = 6> (yf)\n}";
            const std::string name = std::string(a_dims) + " a " + at + " b " + bt +
                                     (per_column ? " per column" : "") +
                                     (as_quantized ? "" : ", full-range B and zero points");
            const Model mi =
                import_onnx_proto(test::parse_text_model(integer.c_str()), "MatMulInteger " + name);
            const Model mt = import_onnx_proto(test::parse_text_model(twin.c_str()), "float twin " + name);
            std::vector<int64_t> dims;
            int64_t n = 1;
            for (const char* p = a_dims + 1; *p;) {
              dims.push_back(std::strtol(p, const_cast<char**>(&p), 10));
              n *= dims.back();
              if (*p) ++p;
            }
            const HostTensor a = bytes_tensor(a_unsigned ? DType::U8 : DType::I8, dims,
                                              draw(static_cast<size_t>(n), a_unsigned, rng));
            require_equal_int32(Evaluator(mi, ascend::op_registry()).run({{"a", a}}).at(0).second,
                                Evaluator(mt, ascend::op_registry()).run({{"a", a}}).at(0).second, name);
          }
}

// A ConvInteger (x [1, C, 5, 5], 3x3 weights, pads 1) or MatMulInteger (a [3, K], b [K, 4])
// model whose weight and zero point are initializers: too many values for the text format.
Model big_integer_model(bool conv, DType x_type, int64_t depth, const std::vector<int8_t>& w, int x_zero) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("big");
  const int elem = x_type == DType::U8 ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  auto* x = g.add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  const std::vector<int64_t> x_dims =
      conv ? std::vector<int64_t>{1, depth / 9, 5, 5} : std::vector<int64_t>{3, depth};
  for (int64_t d : x_dims)
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  onnx::TensorProto* wt = g.add_initializer();
  wt->set_name("w");
  wt->set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : conv ? std::vector<int64_t>{4, depth / 9, 3, 3} : std::vector<int64_t>{depth, 4})
    wt->add_dims(d);
  wt->set_raw_data(std::string(reinterpret_cast<const char*>(w.data()), w.size()));
  onnx::TensorProto* zt = g.add_initializer();
  zt->set_name("xz");
  zt->set_data_type(elem);
  zt->set_raw_data(std::string(1, static_cast<char>(x_zero)));
  onnx::NodeProto* node = g.add_node();
  node->set_op_type(conv ? "ConvInteger" : "MatMulInteger");
  for (const char* in : {"x", "w", "xz"}) node->add_input(in);
  node->add_output("y");
  if (conv) {
    onnx::AttributeProto* pads = node->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) pads->add_ints(1);
  }
  g.add_output()->set_name("y");
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
  return import_onnx_proto(std::move(m), "big integer product");
}

// ONNX's requantization of an int32 sum: saturate(round_half_even(sum x scale / y_scale) + y_zero).
int requantized(int64_t sum, double scale, double y_scale, int y_zero, bool is_unsigned) {
  const double v = std::nearbyint(static_cast<double>(sum) * scale / y_scale) + y_zero;
  return static_cast<int>(std::clamp(v, is_unsigned ? 0.0 : -128.0, is_unsigned ? 255.0 : 127.0));
}

TEST_CASE("QLinearConv and QLinearMatMul requantize exactly the sums ConvInteger and MatMulInteger give") {
  std::mt19937 rng(13);
  for (bool as_quantized : {true, false})  // oneDNN's sums, then the loops'
    for (bool per_channel : {false, true}) {
      const std::vector<int> w = draw(6 * 4 * 3 * 3, true, rng);
      std::vector<int> wz = draw(per_channel ? 6 : 1, true, rng);
      if (as_quantized) std::fill(wz.begin(), wz.end(), 128);
      const std::vector<int> bias = {-500, 0, 17, 900, -3, 41};
      const std::string ws =
          per_channel ? "float[6] {0.01, 0.02, 0.005, 0.03, 0.012, 0.007}" : "float {0.011}";
      const std::string wzt = std::string("uint8") + (per_channel ? "[6]" : "") + " {" + list(wz) + "}";
      const std::string head = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[1,4,9,7] x) => (";
      const std::string constants =
          "  w = Constant <value = uint8[6,4,3,3] {" + list(w) + "}> ()\n" +
          "  xz = Constant <value = uint8 {121}> ()\n  wz = Constant <value = " + wzt +
          "> ()\n  xs = Constant <value = float {0.02}> ()\n  ws = Constant <value = " + ws +
          "> ()\n  ys = Constant <value = float {0.37}> ()\n"
          "  yz = Constant <value = uint8 {99}> ()\n  b = Constant <value = int32[6] {" +
          list(bias) + "}> ()\n";
      const std::string attrs = "<pads = [1, 0, 1, 2], strides = [2, 1]>";
      const Model q = import_onnx_proto(
          test::parse_text_model((head + "uint8[1,6,5,7] y) {\n" + constants + "  y = QLinearConv " + attrs +
                                  " (x, xs, xz, w, ws, wz, ys, yz, b)\n}")
                                     .c_str()),
          "QLinearConv");
      const Model sums =
          import_onnx_proto(test::parse_text_model((head + "int32[1,6,5,7] y) {\n" + constants +
                                                    "  y = ConvInteger " + attrs + " (x, w, xz, wz)\n}")
                                                       .c_str()),
                            "ConvInteger");
      const HostTensor x = bytes_tensor(DType::U8, {1, 4, 9, 7}, draw(4 * 9 * 7, true, rng));
      const HostTensor y = Evaluator(q, ascend::op_registry()).run({{"x", x}}).at(0).second;
      const HostTensor acc = Evaluator(sums, ascend::op_registry()).run({{"x", x}}).at(0).second;
      const double w_scales[] = {0.01, 0.02, 0.005, 0.03, 0.012, 0.007};
      int64_t differ = 0;
      for (int64_t i = 0; i < acc.size(); ++i) {
        const int64_t c = i / 35 % 6;
        const double scale =
            static_cast<double>(0.02f) * (per_channel ? static_cast<double>(static_cast<float>(w_scales[c]))
                                                      : static_cast<double>(0.011f));
        differ += y.data<uint8_t>()[i] != requantized(acc.data<int32_t>()[i] + bias[static_cast<size_t>(c)],
                                                      scale, static_cast<double>(0.37f), 99, true);
      }
      INFO((as_quantized ? "weights as quantized" : "full-range zero points"),
           (per_channel ? ", per channel" : ""));
      CHECK(differ == 0);
    }
  for (bool as_quantized : {true, false}) {
    const std::vector<int> b = draw(40 * 5, false, rng);
    std::vector<int> bz = draw(5, false, rng);
    if (as_quantized) std::fill(bz.begin(), bz.end(), 0);
    const std::string head = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (uint8[3,40] a) => (";
    const std::string constants =
        "  b = Constant <value = int8[40,5] {" + list(b) + "}> ()\n  az = Constant <value = uint8 {7}> ()\n" +
        "  bz = Constant <value = int8[5] {" + list(bz) +
        "}> ()\n  as = Constant <value = float {0.05}> ()\n  bs = Constant <value = float[5] {0.01, 0.02, "
        "0.03, 0.04, "
        "0.05}> ()\n  ys = Constant <value = float {0.9}> ()\n  yz = Constant <value = int8 {-5}> ()\n";
    const Model q =
        import_onnx_proto(test::parse_text_model((head + "int8[3,5] y) {\n" + constants +
                                                  "  y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz)\n}")
                                                     .c_str()),
                          "QLinearMatMul");
    const Model sums = import_onnx_proto(
        test::parse_text_model(
            (head + "int32[3,5] y) {\n" + constants + "  y = MatMulInteger(a, b, az, bz)\n}").c_str()),
        "MatMulInteger");
    const HostTensor a = bytes_tensor(DType::U8, {3, 40}, draw(3 * 40, true, rng));
    const HostTensor y = Evaluator(q, ascend::op_registry()).run({{"a", a}}).at(0).second;
    const HostTensor acc = Evaluator(sums, ascend::op_registry()).run({{"a", a}}).at(0).second;
    const float b_scales[] = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f};
    int64_t differ = 0;
    for (int64_t i = 0; i < acc.size(); ++i)
      differ += y.data<int8_t>()[i] !=
                requantized(acc.data<int32_t>()[i],
                            static_cast<double>(0.05f) * static_cast<double>(b_scales[i % 5]),
                            static_cast<double>(0.9f), -5, false);
    INFO(std::string(as_quantized ? "B as quantized" : "full-range zero points"));
    CHECK(differ == 0);
  }
}

TEST_CASE(
    "integer products past 2^24 stay exact: a 3x3 conv over 512 channels and a matmul of depth 4608, "
    "zero points 0 and not, uint8 and int8 activations") {
  const int64_t depth = 512 * 9;
  for (bool conv : {true, false})
    for (DType x_type : {DType::U8, DType::I8})
      for (int x_zero : {0, 1}) {
        const bool is_unsigned = x_type == DType::U8;
        const int zero = x_zero == 0 ? 0 : is_unsigned ? 7 : -5;
        // Channel (or column) 0: +127 but one 126 (odd sums); 1: -128; 2 and 3: a pattern.
        std::vector<int8_t> w(static_cast<size_t>(depth * 4));
        for (int64_t i = 0; i < depth * 4; ++i) {
          const int64_t channel = conv ? i / depth : i % 4, at = conv ? i % depth : i / 4;
          w[static_cast<size_t>(i)] = static_cast<int8_t>(channel == 0   ? (at == 0 ? 126 : 127)
                                                          : channel == 1 ? -128
                                                                         : (at * 37 + channel) % 255 - 127);
        }
        const Model m = big_integer_model(conv, x_type, depth, w, zero);
        const std::vector<int64_t> dims =
            conv ? std::vector<int64_t>{1, 512, 5, 5} : std::vector<int64_t>{3, depth};
        HostTensor x(x_type, dims);
        for (int64_t i = 0; i < x.size(); ++i) {
          const int v = (is_unsigned ? 255 : 127) - (i % 97 == 0 ? 1 : 0);
          if (is_unsigned)
            x.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
          else
            x.mutable_data<int8_t>()[i] = static_cast<int8_t>(v);
        }
        const HostTensor y = Evaluator(m, ascend::op_registry()).run({{"x", x}}).at(0).second;
        auto x_at = [&](int64_t i) {
          return static_cast<int64_t>(is_unsigned ? x.data<uint8_t>()[i] : x.data<int8_t>()[i]) - zero;
        };
        int64_t differ = 0, largest = 0;
        for (int64_t i = 0; i < y.size(); ++i) {
          int64_t want = 0;
          if (conv) {  // y [1, 4, 5, 5]
            const int64_t oc = i / 25, oy = i / 5 % 5, ox = i % 5;
            for (int64_t c = 0; c < 512; ++c)
              for (int64_t ky = 0; ky < 3; ++ky)
                for (int64_t kx = 0; kx < 3; ++kx) {
                  const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                  if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5) continue;
                  want += x_at((c * 5 + iy) * 5 + ix) *
                          w[static_cast<size_t>(((oc * 512 + c) * 3 + ky) * 3 + kx)];
                }
          } else {  // y [3, 4]
            const int64_t r = i / 4, col = i % 4;
            for (int64_t kk = 0; kk < depth; ++kk)
              want += x_at(r * depth + kk) * w[static_cast<size_t>(kk * 4 + col)];
          }
          largest = std::max(largest, std::abs(want));
          differ += y.data<int32_t>()[i] != want;
        }
        INFO((conv ? "conv, " : "matmul, ") << dtype_name(x_type) << " zero point " << zero);
        CHECK(largest > (int64_t{1} << 24));
        CHECK(differ == 0);
      }
}

TEST_CASE("an int8 QuantMatMul deeper than int32 sums hold (K = 70000 of 255 x 127) sums in int64") {
  const int64_t k = 70000;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* geopt_opset = m.add_opset_import();
  geopt_opset->set_domain("ai.geopt");
  geopt_opset->set_version(1);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("deep");
  auto* a = g.add_input();
  a->set_name("a");
  a->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  for (int64_t d : {int64_t{1}, k})
    a->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto add = [&](const char* name, int type, std::vector<int64_t> dims, std::string bytes) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::move(bytes));
  };
  add("b", onnx::TensorProto::INT8, {k, 1}, std::string(static_cast<size_t>(k), static_cast<char>(127)));
  const float a_scale = 0.5f, b_scale = 0.25f;
  add("as", onnx::TensorProto::FLOAT, {}, std::string(reinterpret_cast<const char*>(&a_scale), 4));
  add("az", onnx::TensorProto::UINT8, {}, std::string(1, '\0'));
  add("bs", onnx::TensorProto::FLOAT, {}, std::string(reinterpret_cast<const char*>(&b_scale), 4));
  add("bz", onnx::TensorProto::INT8, {}, std::string(1, '\0'));
  onnx::NodeProto* n = g.add_node();
  n->set_op_type("QuantMatMul");
  n->set_domain("ai.geopt");
  for (const char* in : {"a", "b", "as", "az", "bs", "bz"}) n->add_input(in);
  n->add_output("y");
  g.add_output()->set_name("y");
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const Model model = import_onnx_proto(std::move(m), "deep QuantMatMul");
  HostTensor x(DType::U8, {1, k});
  for (int64_t i = 0; i < k; ++i) x.mutable_data<uint8_t>()[i] = 255;
  const HostTensor y = Evaluator(model, ascend::op_registry()).run({{"a", x}}).at(0).second;
  const double want = static_cast<double>(k * 255 * 127) * 0.5 * 0.25;  // the sum, 2.3e9, is past int32
  CHECK(static_cast<double>(y.data<float>()[0]) == doctest::Approx(want).epsilon(1e-7));
}

TEST_CASE(
    "QuantizeLinear rounds half to even and saturates as ONNX defines: ties, extremes, infinities, NaN") {
  const float scale = 0.5f;
  std::vector<float> values = {0.25f,  0.75f,    -0.25f,    -0.75f, 1.25f, 63.25f, 63.75f, -64.25f, 1e30f,
                               -1e30f, INFINITY, -INFINITY, NAN,    -0.0f, 127.0f, 127.5f, -200.0f, 3.0e-39f};
  for (int i = 0; i < 300; ++i) values.push_back(static_cast<float>(i - 150) * 0.37f);  // the vectorized body
  const std::string n = std::to_string(values.size());
  for (bool is_unsigned : {true, false}) {
    const char* t = is_unsigned ? "uint8" : "int8";
    const int zero = is_unsigned ? 128 : -3;
    const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[" + n + "] x) => (" + t +
                             "[" + n +
                             "] y) {\n  s = Constant <value = float {0.5}> ()\n  z = Constant <value = " + t +
                             " {" + std::to_string(zero) + "}> ()\n  y = QuantizeLinear(x, s, z)\n}";
    const Model m = import_onnx_proto(test::parse_text_model(text.c_str()), "QuantizeLinear");
    HostTensor x(DType::F32, {static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), x.mutable_data<float>());
    const HostTensor y = Evaluator(m, ascend::op_registry()).run({{"x", x}}).at(0).second;
    int64_t differ = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float q = values[i] / scale;  // in the scale's precision, as ONNX divides
      const double lo = is_unsigned ? 0 : -128, hi = is_unsigned ? 255 : 127;
      const double want =
          std::isnan(q) ? 0 : std::clamp(static_cast<double>(std::nearbyint(q)) + zero, lo, hi);
      const double got = is_unsigned ? y.data<uint8_t>()[i] : y.data<int8_t>()[i];
      differ += got != want;
    }
    INFO(t);
    CHECK(differ == 0);
  }
}

TEST_CASE(
    "a requantizing QuantConv writes exactly what QuantizeLinear makes of its float output: uint8 and "
    "int8, no activation, ReLU and HardSwish, groups, a residual, batch 2") {
  std::mt19937 rng(17);
  const std::vector<int> w = draw(4 * 4 * 3 * 3, false, rng);
  for (bool is_unsigned : {true, false})
    for (const char* activation : {"none", "Relu", "HardSwish"})
      for (int group : {1, 2})
        for (bool residual : {false, true}) {
          const int cg = 4 / group;
          const std::vector<int> wg(w.begin(), w.begin() + 4 * cg * 9);
          const char* yt = is_unsigned ? "uint8" : "int8";
          const std::string yz = is_unsigned ? "3" : "-2";
          const std::string attrs =
              std::string("activation = \"") + activation + "\", group = " + std::to_string(group) +
              ", kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1], dilations = [1, 1]";
          const std::string head =
              std::string(
                  "<ir_version: 8, opset_import: [\"\" : 13, \"ai.geopt\" : 1]>\ng (uint8[2,4,6,6] x") +
              (residual ? ", float[2,4,6,6] z" : "") + ") => (" + yt + "[2,4,6,6] y) {\n" +
              "  w = Constant <value = int8[4," + std::to_string(cg) + ",3,3] {" + list(wg) + "}> ()\n" +
              "  xs = Constant <value = float {0.03}> ()\n  xz = Constant <value = uint8 {5}> ()\n" +
              "  ws = Constant <value = float[4] {0.01, 0.02, 0.015, 0.005}> ()\n" +
              "  wz = Constant <value = int8[4] {0, 0, 0, 0}> ()\n" +
              "  b = Constant <value = float[4] {0.5, -0.25, 0.1, -1}> ()\n" +
              "  ys = Constant <value = float {0.05}> ()\n  yz = Constant <value = " + yt + " {" + yz +
              "}> ()\n";
          const std::string inputs = residual ? "(x, w, xs, xz, ws, wz, b, z)" : "(x, w, xs, xz, ws, wz, b)";
          const std::string apart = head + "  c = ai.geopt.QuantConv <" + attrs + "> " + inputs +
                                    "\n  y = QuantizeLinear(c, ys, yz)\n}";
          const std::string fused =
              head + "  y = ai.geopt.QuantConv <" + attrs + ", output_dtype = " + (is_unsigned ? "2" : "3") +
              ", output_scale = 0.05, output_zero_point = " + yz + "> " + inputs + "\n}";
          const Model a =
              import_onnx_proto(test::parse_text_model(apart.c_str()), "QuantConv, QuantizeLinear");
          const Model f = import_onnx_proto(test::parse_text_model(fused.c_str()), "requantizing QuantConv");
          std::map<std::string, HostTensor> feeds{
              {"x", bytes_tensor(DType::U8, {2, 4, 6, 6}, draw(2 * 4 * 36, true, rng))}};
          if (residual) {
            HostTensor z(DType::F32, {2, 4, 6, 6});
            std::normal_distribution<float> normal(0.0f, 2.0f);
            for (int64_t i = 0; i < z.size(); ++i) z.mutable_data<float>()[i] = normal(rng);
            feeds["z"] = z;
          }
          const HostTensor want = Evaluator(a, ascend::op_registry()).run(feeds).at(0).second;
          const HostTensor got = Evaluator(f, ascend::op_registry()).run(feeds).at(0).second;
          INFO(yt << " " << activation << " group " << group << (residual ? " residual" : ""));
          REQUIRE(got.dtype() == want.dtype());
          CHECK(std::memcmp(got.raw(), want.raw(), got.nbytes()) == 0);
        }
}

TEST_CASE(
    "the int8 conv's output stage gives the same bits in AVX-512 instructions as in vectorized loops, and "
    "what its formula gives: uint8, int8 and float outputs, partial blocks, residuals blocked and NCHW, "
    "zero-point offsets, clamps, another activation, a post affine, sums past 2^24, NaN") {
  std::mt19937 rng(29);
  const int64_t batch = 2, spatial = 7;
  for (DType out : {DType::U8, DType::I8, DType::F32})
    for (int64_t m : {16, 40, 96})
      for (int64_t z_block : {-1, 0, 16, 32})  // -1: no residual; 0: an NCHW residual
        for (bool offsets : {false, true})
          for (int activation = 0; activation < 5; ++activation)  // none, ReLU, Clip, another, Clip(2, -1)
            for (bool affine : {false, true})
              for (bool odd_block : {false, true}) {  // C0 (16 float, 32 int8), or 8 and 24: runs end inside
                const int64_t block = out == DType::F32 ? (odd_block ? 8 : 16) : (odd_block ? 24 : 32),
                              blocks = (m + block - 1) / block;
                std::uniform_int_distribution<int32_t> big(-(1 << 26), 1 << 26);
                std::vector<int32_t> sums(static_cast<size_t>(batch * spatial * m)),
                    offs(static_cast<size_t>(m));
                for (int32_t& v : sums) v = big(rng);
                for (int32_t& v : offs) v = big(rng) / 8;
                std::vector<double> scale(static_cast<size_t>(m));
                std::vector<float> bias(static_cast<size_t>(m));
                std::uniform_real_distribution<double> unit(0.0, 1.0);
                for (int64_t c = 0; c < m; ++c) {
                  scale[static_cast<size_t>(c)] = 1e-7 * (0.5 + unit(rng));
                  bias[static_cast<size_t>(c)] = static_cast<float>(unit(rng) * 4 - 2);
                }
                const int64_t z_blocks = z_block > 0 ? (m + z_block - 1) / z_block : 0;
                std::vector<float> z(
                    z_block < 0 ? 0 : static_cast<size_t>(batch * spatial * std::max(m, z_blocks * z_block)));
                std::normal_distribution<float> normal(0.0f, 3.0f);
                for (float& v : z) v = normal(rng);
                if (!z.empty()) z[z.size() / 2] = NAN;
                // Where channel c of image b at position p is in the residual.
                auto z_at = [&](int64_t b, int64_t c, int64_t p) {
                  return z_block > 0 ? ((b * z_blocks + c / z_block) * spatial + p) * z_block + c % z_block
                                     : (b * m + c) * spatial + p;
                };
                const std::function<void(float*, int64_t)> other = [](float* v, int64_t n) {
                  for (int64_t i = 0; i < n; ++i) v[i] = v[i] * std::clamp(v[i] + 3.0f, 0.0f, 6.0f) / 6.0f;
                };
                BlockedStage s;
                s.sums = sums.data();
                s.offsets = offsets ? offs.data() : nullptr;
                s.m = m, s.spatial = spatial, s.block = block, s.blocks = blocks;
                s.scale = scale.data(), s.bias = bias.data();
                s.z = z.empty() ? nullptr : z.data(), s.z_block = std::max<int64_t>(z_block, 0),
                s.z_blocks = z_blocks;
                s.lo = activation == 1 ? 0.0f : activation == 2 ? -1.0f : activation == 4 ? 2.0f : -INFINITY;
                s.hi = activation == 2 ? 6.0f : activation == 4 ? -1.0f : INFINITY;
                s.activate = activation == 3 ? &other : nullptr;
                if (affine) s.affine = PostAffine{0.75f, 0.125f};
                s.q_scale = 0.05f, s.q_zero = out == DType::U8 ? 3.0f : -2.0f;
                const size_t element = dtype_size(out),
                             size = static_cast<size_t>(batch * blocks * spatial * block);
                std::vector<std::byte> padding(static_cast<size_t>(block) * element, std::byte{0});
                if (out != DType::F32)
                  for (int64_t i = 0; i < block; ++i)
                    padding[static_cast<size_t>(i)] = static_cast<std::byte>(static_cast<int8_t>(s.q_zero));
                s.padding = padding.data();
                // The formula, value by value.
                std::vector<std::byte> want(size * element);
                for (int64_t b = 0; b < batch; ++b)
                  for (int64_t ob = 0; ob < blocks; ++ob)
                    for (int64_t p = 0; p < spatial; ++p)
                      for (int64_t lane = 0; lane < block; ++lane) {
                        const int64_t c = ob * block + lane,
                                      at = ((b * blocks + ob) * spatial + p) * block + lane;
                        std::byte* to = want.data() + at * static_cast<int64_t>(element);
                        if (c >= m) {
                          std::memcpy(to, padding.data(), element);
                          continue;
                        }
                        const int32_t sum = sums[static_cast<size_t>((b * spatial + p) * m + c)] -
                                            (offsets ? offs[static_cast<size_t>(c)] : 0);
                        float v =
                            static_cast<float>(static_cast<double>(sum) * scale[static_cast<size_t>(c)]) +
                            bias[static_cast<size_t>(c)];
                        if (!z.empty()) v += z[static_cast<size_t>(z_at(b, c, p))];
                        v = v < s.lo ? s.lo : (v > s.hi ? s.hi : v);  // lo wins where lo > hi
                        if (activation == 3) other(&v, 1);
                        if (affine) v = std::fma(v, 0.75f, 0.125f);
                        if (out == DType::F32) {
                          std::memcpy(to, &v, sizeof(float));
                          continue;
                        }
                        const float q = v / s.q_scale;
                        const double lo = out == DType::U8 ? 0 : -128, hi = out == DType::U8 ? 255 : 127;
                        const int level =
                            std::isnan(q) ? 0
                                          : static_cast<int>(std::clamp(
                                                std::nearbyint(static_cast<double>(q)) + s.q_zero, lo, hi));
                        *to = static_cast<std::byte>(static_cast<uint8_t>(level));
                      }
                for (StageInstructions instructions : {StageInstructions::loops, StageInstructions::best}) {
                  std::vector<std::byte> got(size * element, std::byte{0x5a});
                  s.y = got.data();
                  // Two threads' halves, split inside an image.
                  write_blocked_positions(s, out, 0, 5, instructions);
                  write_blocked_positions(s, out, 5, batch * spatial, instructions);
                  int64_t differ = 0;
                  for (size_t i = 0; i < size; ++i) {
                    if (out == DType::F32) {
                      float g, w;
                      std::memcpy(&g, got.data() + i * 4, 4);
                      std::memcpy(&w, want.data() + i * 4, 4);
                      differ += std::isnan(w) ? !std::isnan(g) : std::memcmp(&g, &w, 4) != 0;
                    } else {
                      differ += got[i] != want[i];
                    }
                  }
                  INFO(dtype_name(out) << " m " << m << " block " << block << " residual block " << z_block
                                       << (offsets ? " offsets" : "") << " activation " << activation
                                       << (affine ? " affine" : "")
                                       << (instructions == StageInstructions::best ? " best" : " loops"));
                  CHECK(differ == 0);
                }
              }
}

TEST_CASE("DynamicQuantizeLinear rounds half to even and saturates as ONNX defines") {
  const Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[8] x) => (uint8[8] y, float s, uint8 z) { y, s, z = DynamicQuantizeLinear(x) })"),
                                    "dql");
  // Range [-1, 1.55]: scale 0.01, zero point 100; x / scale lands on halves.
  HostTensor x(DType::F32, {8});
  const float values[] = {-1.0f, 1.55f, 0.005f, 0.015f, -0.005f, 0.025f, 1.545f, -0.995f};
  for (int i = 0; i < 8; ++i) x.mutable_data<float>()[i] = values[i];
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run({{"x", x}});
  const float scale = out.at(1).second.data<float>()[0];
  CHECK(scale == doctest::Approx(0.01f).epsilon(1e-6));
  CHECK(out.at(2).second.data<uint8_t>()[0] == 100);
  const HostTensor& y = out.at(0).second;
  for (int i = 0; i < 8; ++i) {
    const double v = std::nearbyint(static_cast<double>(values[i] / scale)) + 100;  // float division, as ONNX
    CHECK(static_cast<int>(y.data<uint8_t>()[i]) == static_cast<int>(std::clamp(v, 0.0, 255.0)));
  }
}

TEST_CASE("DynamicQuantizeLinear takes the range of a tensor the threads share, NaN passed over") {
  // 3 x 40000 values (shared by the threads above 65536), all in [-0.5, 0.5] but the
  // minimum -2 in the last run of 16384 values, the maximum 3 in the first, and a NaN
  // between: scale 5 / 255, zero point round(2 / scale) = 102.
  const Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,40000] x) => (uint8[3,40000] y, float s, uint8 z) { y, s, z = DynamicQuantizeLinear(x) })"),
                                    "dql_wide");
  HostTensor x(DType::F32, {3, 40000});
  float* px = x.mutable_data<float>();
  for (int64_t i = 0; i < x.size(); ++i) px[i] = static_cast<float>(i % 1001) / 1000.0f - 0.5f;
  px[x.size() - 7] = -2.0f;
  px[5] = 3.0f;
  px[50000] = std::numeric_limits<float>::quiet_NaN();
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run({{"x", x}});
  CHECK(out.at(1).second.data<float>()[0] == 5.0f / 255.0f);
  CHECK(out.at(2).second.data<uint8_t>()[0] == 102);
  CHECK(out.at(0).second.data<uint8_t>()[x.size() - 7] == 0);
  CHECK(out.at(0).second.data<uint8_t>()[5] == 255);
}

}  // namespace geopt

namespace geopt {
namespace {

// Every pair of 8-bit values through QuantAdd or QuantMul and through the DequantizeLinears,
// Add or Mul and QuantizeLinear it replaces: the same bytes, on equal shapes (the vectorized
// pass) and broadcast ([256, 1] against [1, 256]).
void check_quant_binary(const char* op, const char* onnx_op, const char* ta, const char* tb, const char* tc,
                        const char* scales) {
  const std::string types = std::string("(") + ta + "[256,1] a, " + tb + "[1,256] b, " + ta + "[65536] af, " +
                            tb + "[65536] bf) => (" + tc + "[256,256] y, " + tc + "[256,256] yb, " + tc +
                            "[65536] yf, " + tc + "[65536] yr)";
  const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g )") + types + " {\n" +
                           scales + R"(
      y = ai.geopt.)" + op +
                           R"((a, sa, za, b, sb, zb, sc, zc)
      da = DequantizeLinear(a, sa, za)
      db = DequantizeLinear(b, sb, zb)
      s = )" + onnx_op + R"((da, db)
      yb = QuantizeLinear(s, sc, zc)
      yf = ai.geopt.)" + op +
                           R"((af, sa, za, bf, sb, zb, sc, zc)
      daf = DequantizeLinear(af, sa, za)
      dbf = DequantizeLinear(bf, sb, zb)
      sf = )" + onnx_op + R"((daf, dbf)
      yr = QuantizeLinear(sf, sc, zc)
    })";
  const Model m = import_onnx_proto(test::parse_text_model(text.c_str()), "m.onnx");
  auto values = [](const char* t) {
    std::vector<int> v(256);
    for (int i = 0; i < 256; ++i) v[static_cast<size_t>(i)] = std::string(t) == "uint8" ? i : i - 128;
    return v;
  };
  const DType da = std::string(ta) == "uint8" ? DType::U8 : DType::I8;
  const DType db = std::string(tb) == "uint8" ? DType::U8 : DType::I8;
  std::vector<int> af, bf;
  for (int x : values(ta))
    for (int y : values(tb)) af.push_back(x), bf.push_back(y);
  const NamedTensors out = Evaluator(m, ascend::op_registry())
                               .run({{"a", bytes_tensor(da, {256, 1}, values(ta))},
                                     {"b", bytes_tensor(db, {1, 256}, values(tb))},
                                     {"af", bytes_tensor(da, {65536}, af)},
                                     {"bf", bytes_tensor(db, {65536}, bf)}});
  for (const auto& [fused, reference] : {std::pair<size_t, size_t>{0, 1}, {2, 3}}) {
    const HostTensor& x = out[fused].second;
    const HostTensor& y = out[reference].second;
    REQUIRE(x.nbytes() == 65536);
    REQUIRE(y.nbytes() == 65536);
    size_t differ = 0;
    for (int64_t i = 0; i < 65536; ++i) differ += x.int_at(i) != y.int_at(i);
    CHECK(differ == 0);
  }
}

}  // namespace

TEST_CASE("QuantAdd and QuantMul give the bytes of the ops they replace for every pair of 8-bit values") {
  // Scales where sums land on halves (ties: sa == sb, sc == 2 sa) and scales of no pattern.
  const char* ties = R"(
      sa = Constant <value = float {0.0375}> ()
      sb = Constant <value = float {0.0375}> ()
      sc = Constant <value = float {0.075}> ())";
  const char* odd = R"(
      sa = Constant <value = float {0.0173}> ()
      sb = Constant <value = float {0.0419}> ()
      sc = Constant <value = float {0.0291}> ())";
  for (const char* scales : {ties, odd})
    for (const char* ta : {"uint8", "int8"})
      for (const char* tb : {"uint8", "int8"})
        for (const char* tc : {"uint8", "int8"}) {
          const std::string zeros =
              std::string(scales) + "\n      za = Constant <value = " + ta +
              (std::string(ta) == "uint8" ? " {131}" : " {-7}") + "> ()\n      zb = Constant <value = " + tb +
              (std::string(tb) == "uint8" ? " {100}" : " {3}") + "> ()\n      zc = Constant <value = " + tc +
              (std::string(tc) == "uint8" ? " {128}" : " {0}") + "> ()";
          INFO(ta << " " << tb << " -> " << tc);
          check_quant_binary("QuantAdd", "Add", ta, tb, tc, zeros.c_str());
          check_quant_binary("QuantMul", "Mul", ta, tb, tc, zeros.c_str());
        }
}

}  // namespace geopt
