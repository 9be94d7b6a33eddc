// Signal-processing kernels: DFT and STFT (complex values as a trailing axis of 2),
// the Hann, Hamming and Blackman windows and the mel filter bank, as ONNX defines
// them. Transforms are direct sums in double: exact enough for any length, and the
// sizes these ops see in audio front ends keep them cheap.
#include <cmath>
#include <complex>
#include <numbers>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"

namespace geopt {
namespace {

using Complex = std::complex<double>;

// Transforms `n_in` samples (zero-padded or cut to `length`) into `n_out` bins.
void dft_line(const std::vector<Complex>& in, int64_t length, int64_t n_out, bool inverse,
              std::vector<Complex>& out) {
  out.assign(static_cast<size_t>(n_out), Complex(0, 0));
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t used = std::min<int64_t>(length, static_cast<int64_t>(in.size()));
  for (int64_t k = 0; k < n_out; ++k) {
    Complex acc(0, 0);
    for (int64_t t = 0; t < used; ++t) {
      const double angle =
          sign * 2.0 * std::numbers::pi * static_cast<double>((k * t) % length) / static_cast<double>(length);
      acc += in[static_cast<size_t>(t)] * Complex(std::cos(angle), std::sin(angle));
    }
    out[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(length) : acc;
  }
}

HostTensor as_float_output(const KernelContext& ctx, DType t, std::vector<int64_t> dims) {
  if (t != DType::F32 && t != DType::F64) ctx.fail("runs on f32 or f64, not " + dtype_name(t));
  return HostTensor(t, std::move(dims));
}

// DFT (opset 17): input [batch, n_1, ..., 1 or 2]; the transform runs along `axis`.
void dft(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    ctx.fail("the input needs a last axis of 1 (real) or 2 (complex)");
  const int64_t rank = static_cast<int64_t>(x.rank());
  // Opset 17: an attribute (default 1), never the batch axis; since 20: a scalar input
  // (default -2) that may name any axis but the complex one.
  const bool axis_input = ctx.opset() >= 20;
  const int64_t axis = normalize_axis(
      axis_input ? (ctx.has_input(2) ? scalar_int_input(ctx, 2, "axis") : -2) : ctx.attr_int("axis", 1),
      rank);
  if (axis == rank - 1 || (axis == 0 && !axis_input))
    ctx.fail("axis must be a signal axis (neither the batch nor the complex axis)");
  const bool inverse = ctx.attr_int("inverse", 0) != 0, onesided = ctx.attr_int("onesided", 0) != 0;
  const int64_t n = x.dims()[static_cast<size_t>(axis)];
  const int64_t length = ctx.has_input(1) && ctx.input(1).size() ? scalar_int_input(ctx, 1, "dft_length") : n;
  if (length < 1 || length > (int64_t{1} << 20)) ctx.fail("dft_length must be in 1..2^20");
  const int64_t bins = onesided ? length / 2 + 1 : length;
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(axis)] = bins;
  out.back() = 2;
  HostTensor y = as_float_output(ctx, x.dtype(), out);
  const bool complex_in = x.dim(-1) == 2;
  const auto xs = strides_of(x.dims()), ys = strides_of(out);
  // Every line along `axis`: iterate the other coordinates (the last, complex axis excluded).
  std::vector<int64_t> lead(x.dims().begin(), x.dims().end() - 1);
  lead[static_cast<size_t>(axis)] = 1;
  int64_t lines = 1;
  for (int64_t d : lead) lines *= d;
  std::vector<Complex> line, result;
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        for (int64_t l = 0; l < lines; ++l) {
          int64_t xo = 0, yo = 0;
          for (size_t a = lead.size(), rest = static_cast<size_t>(l); a-- > 0;) {
            const int64_t c = static_cast<int64_t>(rest) % lead[a];
            rest /= static_cast<size_t>(lead[a]);
            xo += c * xs[a];
            yo += c * ys[a];
          }
          line.assign(static_cast<size_t>(n), Complex(0, 0));
          for (int64_t t = 0; t < n; ++t) {
            const int64_t at = xo + t * xs[static_cast<size_t>(axis)];
            line[static_cast<size_t>(t)] = Complex(px[at], complex_in ? px[at + 1] : 0.0);
          }
          dft_line(line, length, bins, inverse, result);
          for (int64_t k = 0; k < bins; ++k) {
            const int64_t at = yo + k * ys[static_cast<size_t>(axis)];
            py[at] = static_cast<T>(result[static_cast<size_t>(k)].real());
            py[at + 1] = static_cast<T>(result[static_cast<size_t>(k)].imag());
          }
        }
      },
      "DFT");
  ctx.outputs[0] = std::move(y);
}

// STFT: signal [batch, length, 1 or 2], frame_step, optional window and frame_length;
// output [batch, frames, bins, 2].
void stft(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    ctx.fail("the signal must be [batch, length, 1 or 2]");
  const int64_t step = scalar_int_input(ctx, 1, "frame_step");
  const HostTensor* window = ctx.has_input(2) && ctx.input(2).size() ? &ctx.input(2) : nullptr;
  int64_t frame = ctx.has_input(3) && ctx.input(3).size() ? scalar_int_input(ctx, 3, "frame_length")
                                                          : (window ? window->size() : 0);
  if (frame > (int64_t{1} << 20)) ctx.fail("frame_length must be at most 2^20");
  if (frame < 1 || step < 1)
    ctx.fail("frame_step and the frame length (frame_length or the window's) must be positive");
  if (window && window->size() != frame)
    ctx.fail("the window has " + std::to_string(window->size()) + " samples for frames of " +
             std::to_string(frame));
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  const int64_t batch = x.dims()[0], len = x.dims()[1];
  if (len < frame) ctx.fail("the signal is shorter than one frame");
  const int64_t frames = (len - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  HostTensor y = as_float_output(ctx, x.dtype(), {batch, frames, bins, 2});
  const bool complex_in = x.dim(-1) == 2;
  std::vector<Complex> line(static_cast<size_t>(frame)), result;
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t f = 0; f < frames; ++f) {
            for (int64_t t = 0; t < frame; ++t) {
              const int64_t at = (b * len + f * step + t) * x.dim(-1);
              const double w = window ? window->real_at(t) : 1.0;
              line[static_cast<size_t>(t)] = Complex(px[at] * w, complex_in ? px[at + 1] * w : 0.0);
            }
            dft_line(line, frame, bins, false, result);
            for (int64_t k = 0; k < bins; ++k) {
              const int64_t at = ((b * frames + f) * bins + k) * 2;
              py[at] = static_cast<T>(result[static_cast<size_t>(k)].real());
              py[at + 1] = static_cast<T>(result[static_cast<size_t>(k)].imag());
            }
          }
      },
      "STFT");
  ctx.outputs[0] = std::move(y);
}

// A generalized cosine window sum_k a_k cos(2 pi k n / N), N = size (periodic) or size - 1.
void cosine_window(KernelContext& ctx, const std::vector<double>& a) {
  const int64_t size = scalar_int_input(ctx, 0, "size");
  if (size < 0 || size > (int64_t{1} << 28)) ctx.fail("size must be in 0..2^28");
  const DType out = static_cast<DType>(ctx.attr_int("output_datatype", 1));
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? size : size - 1);
  HostTensor values(DType::F64, {size});
  for (int64_t i = 0; i < size; ++i) {
    double v = 0;
    for (size_t k = 0; k < a.size(); ++k)
      v += a[k] * std::cos(2.0 * std::numbers::pi * static_cast<double>(k) * static_cast<double>(i) / period);
    values.mutable_data<double>()[i] = v;
  }
  ctx.outputs[0] = dispatch_all(
      out,
      [&]<class T>() {
        HostTensor y(out, {size});
        for (int64_t i = 0; i < size; ++i)
          y.mutable_data<T>()[i] = convert_value<T>(values.data<double>()[i]);
        return y;
      },
      "window");
}

// MelWeightMatrix [dft_length / 2 + 1, num_mel_bins]: triangular filters spaced on the mel scale.
void mel_weight_matrix(KernelContext& ctx) {
  const int64_t mel_bins = scalar_int_input(ctx, 0, "num_mel_bins"),
                dft_length = scalar_int_input(ctx, 1, "dft_length");
  const int64_t rate = scalar_int_input(ctx, 2, "sample_rate");
  const float lower = static_cast<float>(scalar_real_input(ctx, 3, "lower_edge_hertz")),
              upper = static_cast<float>(scalar_real_input(ctx, 4, "upper_edge_hertz"));
  if (mel_bins < 1 || dft_length < 1 || rate < 1 || mel_bins > 65536 || dft_length > (int64_t{1} << 20))
    ctx.fail("num_mel_bins (at most 65536), dft_length (at most 2^20) and sample_rate must be positive");
  if (!std::isfinite(lower) || !std::isfinite(upper) || lower < 0 || upper < lower)
    ctx.fail("the edges must be finite with 0 <= lower <= upper");
  const int64_t spectrum_bins = dft_length / 2 + 1;
  const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0),
               high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
  const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
    if (!(bin >= 0 && bin < 1e12)) ctx.fail("upper_edge_hertz lies far above the spectrum");
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  HostTensor w(DType::F64, {spectrum_bins, mel_bins});
  double* pw = w.mutable_data<double>();
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row < 0 || row >= spectrum_bins)
      ctx.fail("a filter edge falls outside the spectrum (upper_edge_hertz above sample_rate / 2?)");
    pw[row * mel_bins + col] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], mid = edge[static_cast<size_t>(i + 1)],
                  hi = edge[static_cast<size_t>(i + 2)];
    if (mid == lo)
      set(mid, i, 1.0);
    else
      for (int64_t j = lo; j <= mid; ++j)
        set(j, i, static_cast<double>(j - lo) / static_cast<double>(mid - lo));
    if (hi > mid)
      for (int64_t j = mid; j < hi; ++j)
        set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - mid));
  }
  const DType out = static_cast<DType>(ctx.attr_int("output_datatype", 1));
  ctx.outputs[0] = dispatch_all(
      out,
      [&]<class T>() {
        HostTensor y(out, w.dims());
        for (int64_t i = 0; i < w.size(); ++i) y.mutable_data<T>()[i] = convert_value<T>(pw[i]);
        return y;
      },
      "MelWeightMatrix");
}

}  // namespace

void register_signal_kernels(OpRegistry& r) {
  r.add("", "DFT", dft);
  r.add("", "STFT", stft);
  r.add(
      "", "HannWindow",
      [](KernelContext& ctx) {
        cosine_window(ctx, {0.5, -0.5});
      },
      false);
  r.add(
      "", "HammingWindow",
      [](KernelContext& ctx) {
        cosine_window(ctx, {25.0 / 46.0, -21.0 / 46.0});
      },
      false);
  r.add(
      "", "BlackmanWindow",
      [](KernelContext& ctx) {
        cosine_window(ctx, {0.42, -0.5, 0.08});
      },
      false);
  r.add("", "MelWeightMatrix", mel_weight_matrix, false);
}

}  // namespace geopt
