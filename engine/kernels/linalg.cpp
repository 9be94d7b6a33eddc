// MatMul and Gemm. f32 runs on oneDNN's sgemm; other real types on a plain loop.
#include <oneapi/dnnl/dnnl.h>

#include <cmath>

#include "kernels/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/linalg.h"

namespace geopt {

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    throw Error("oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)));
}

void gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              const float* b, float beta, float* c) {
  gemm_f32(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b, trans_b ? k : n, beta, c, n);
}

namespace {

template <class T>
void gemm_plain(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, const T* b,
                double beta, T* c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(a[ta ? p * m + i : i * k + p]) *
               static_cast<double>(b[tb ? j * k + p : p * n + j]);
      double prev = beta == 0 ? 0.0 : beta * static_cast<double>(c[i * n + j]);
      c[i * n + j] = static_cast<T>(alpha * acc + prev);
    }
}

template <class T>
void gemm_any(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, const T* b,
              double beta, T* c) {
  if constexpr (std::is_same_v<T, float>)
    gemm_f32(ta, tb, m, n, k, static_cast<float>(alpha), a, b, static_cast<float>(beta), c);
  else
    gemm_plain(ta, tb, m, n, k, alpha, a, b, beta, c);
}

}  // namespace

HostTensor matmul(const KernelContext& ctx, const HostTensor& a_in, const HostTensor& b_in) {
  if (a_in.dtype() != b_in.dtype()) ctx.fail("MatMul operands differ in dtype");
  if (a_in.rank() == 0 || b_in.rank() == 0) ctx.fail("MatMul operands must have rank >= 1");
  // Promote vectors to matrices as numpy does; their unit axes are dropped again below.
  std::vector<int64_t> ad = a_in.dims(), bd = b_in.dims();
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (bd[bd.size() - 2] != k)
    ctx.fail("MatMul inner dims differ: " + a_in.shape_string() + " x " + b_in.shape_string());
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2), batch;
  if (!broadcast_shape({a_batch, b_batch}, batch)) ctx.fail("MatMul batch dims do not broadcast");
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  HostTensor y = HostTensor::uninitialized(a_in.dtype(), out);  // GEMM with beta 0 writes every element
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  auto sa = broadcast_strides(a_batch, batch), sb = broadcast_strides(b_batch, batch);
  dispatch_real(
      a_in.dtype(),
      [&]<class T>() {
        const T* pa = a_in.data<T>();
        const T* pb = b_in.data<T>();
        T* py = y.mutable_data<T>();
        bool b_shared = true;
        for (int64_t s : sb) b_shared = b_shared && s == 0;
        bool a_dense = a_batch.size() == batch.size();
        for (size_t i = 0; a_dense && i < batch.size(); ++i) a_dense = a_batch[i] == batch[i];
        if (b_shared && a_dense) {  // one weight for every batch: a single tall GEMM
          gemm_any<T>(false, false, batches * m, n, k, 1.0, pa, pb, 0.0, py);
          return;
        }
        std::vector<int64_t> c(batch.size(), 0);
        for (int64_t bi = 0; bi < batches; ++bi) {
          int64_t oa = 0, ob = 0;
          for (size_t d = 0; d < batch.size(); ++d) {
            oa += c[d] * sa[d];
            ob += c[d] * sb[d];
          }
          gemm_any<T>(false, false, m, n, k, 1.0, pa + oa * m * k, pb + ob * k * n, 0.0, py + bi * m * n);
          for (size_t d = batch.size(); d-- > 0;) {
            if (++c[d] < batch[d]) break;
            c[d] = 0;
          }
        }
      },
      "MatMul");
  return y;
}

namespace {

void gemm_kernel(KernelContext& ctx) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2) ctx.fail("Gemm needs 2-D A and B");
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const int64_t m = ta ? a.dims()[1] : a.dims()[0], k = ta ? a.dims()[0] : a.dims()[1];
  const int64_t n = tb ? b.dims()[0] : b.dims()[1];
  if ((tb ? b.dims()[1] : b.dims()[0]) != k) ctx.fail("Gemm inner dims differ");
  const double alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  HostTensor y(a.dtype(), {m, n});
  dispatch_real(
      a.dtype(),
      [&]<class T>() {
        T* py = y.mutable_data<T>();
        bool has_c = ctx.has_input(2) && beta != 0;
        if (has_c) {  // y = beta * broadcast(C), then y += alpha * A B
          const HostTensor& c = ctx.input(2);
          std::vector<int64_t> dims;
          if (!broadcast_shape({c.dims(), {m, n}}, dims) || dims != std::vector<int64_t>{m, n})
            ctx.fail("C does not broadcast to [M, N]");
          std::vector<int64_t> strides[1] = {broadcast_strides(c.dims(), dims)};
          const T* pc = c.data<T>();
          for_each_broadcast(dims, strides, [&](int64_t i, const int64_t* o) {
            py[i] = static_cast<T>(beta * static_cast<double>(pc[o[0]]));
          });
        }
        gemm_any<T>(ta, tb, m, n, k, alpha, a.data<T>(), b.data<T>(), has_c ? 1.0 : 0.0, py);
      },
      "Gemm");
  ctx.outputs[0] = std::move(y);
}

// Det of [..., M, M] by LU decomposition with partial pivoting, in double.
void det_kernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2)) ctx.fail("Det needs [..., M, M], not " + x.shape_string());
  const int64_t m = x.dim(-1);
  std::vector<int64_t> out(x.dims().begin(), x.dims().end() - 2);
  HostTensor y(x.dtype(), out);
  const int64_t count = y.size();
  std::vector<double> a(static_cast<size_t>(m * m));
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        for (int64_t b = 0; b < count; ++b) {
          for (int64_t i = 0; i < m * m; ++i)
            a[static_cast<size_t>(i)] = static_cast<double>(x.data<T>()[b * m * m + i]);
          double det = 1;
          for (int64_t col = 0; col < m && det != 0; ++col) {
            int64_t pivot = col;
            for (int64_t r = col + 1; r < m; ++r)
              if (std::fabs(a[static_cast<size_t>(r * m + col)]) >
                  std::fabs(a[static_cast<size_t>(pivot * m + col)]))
                pivot = r;
            if (a[static_cast<size_t>(pivot * m + col)] == 0) {
              det = 0;
              break;
            }
            if (pivot != col) {
              for (int64_t k = 0; k < m; ++k)
                std::swap(a[static_cast<size_t>(pivot * m + k)], a[static_cast<size_t>(col * m + k)]);
              det = -det;
            }
            const double d = a[static_cast<size_t>(col * m + col)];
            det *= d;
            for (int64_t r = col + 1; r < m; ++r) {
              const double f = a[static_cast<size_t>(r * m + col)] / d;
              for (int64_t k = col; k < m; ++k)
                a[static_cast<size_t>(r * m + k)] -= f * a[static_cast<size_t>(col * m + k)];
            }
          }
          y.mutable_data<T>()[b] = static_cast<T>(det);
        }
      },
      "Det");
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_linalg_kernels(OpRegistry& r) {
  r.add("", "Det", det_kernel);
  r.add("", "MatMul", [](KernelContext& ctx) { ctx.outputs[0] = matmul(ctx, ctx.input(0), ctx.input(1)); });
  r.add("", "Gemm", gemm_kernel);
}

}  // namespace geopt
