// Ascend's device layouts on the host: the copies TransData makes and the kernels that
// read packed weights undo (docs/OPS.md, TransData).
#include "device_ops/layout_conversions.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "layout.h"
#include "util/error.h"
#include "util/team_region.h"

namespace geopt::ascend {

namespace {

struct Bytes16 {
  uint64_t low, high;
};

// Calls f.template operator()<T>() with T an unsigned type of the element's size: the
// layout copies move bytes, whatever the dtype.
template <class F>
void by_element_size(DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      f.template operator()<uint8_t>();
      break;
    case 2:
      f.template operator()<uint16_t>();
      break;
    case 4:
      f.template operator()<uint32_t>();
      break;
    case 8:
      f.template operator()<uint64_t>();
      break;
    case 16:
      f.template operator()<Bytes16>();
      break;  // complex128
    default:
      throw Error("layout conversion: unsupported element size");
  }
}

// Copies between the two layouts (`to5` picks the direction): each (batch, C1 block) is
// [HW, C0] on one side and C0 planes of HW on the other, copied a tile of kTile positions
// at a time, plane by plane: the side read or written across the lanes stays in L1 while
// the planes are read or written in runs. One position at a time across the lanes, each
// element went to another plane's line: a 96-channel 112 x 112 map back to NCHW took 1.48
// ms, now 1.23 (one thread; medians of 10 rounds; 16 channels into NC1HWC0 0.30 -> 0.24).
// Channels past C are left as they are (zero).
void convert_5hd(const HostTensor& src, HostTensor& dst, const std::vector<int64_t>& nchw, int64_t c0,
                 bool to5) {
  constexpr int64_t kTile = 64;
  const int64_t n = nchw[0], c = nchw[1], hw = nchw[2] * nchw[3], c1 = (c + c0 - 1) / c0;
  const int64_t tiles = (hw + kTile - 1) / kTile;
  by_element_size(src.dtype(), [&]<class T>() {
    const T* in = reinterpret_cast<const T*>(src.raw());
    T* out = reinterpret_cast<T*>(dst.mutable_raw());
    team_region(n * c * hw > (1 << 16), [&] {
#pragma omp for collapse(3)
      for (int64_t b = 0; b < n; ++b)
        for (int64_t blk = 0; blk < c1; ++blk)
          for (int64_t t = 0; t < tiles; ++t) {
            const int64_t lanes = std::min(c0, c - blk * c0), first = t * kTile,
                          last = std::min(hw, first + kTile);
            const int64_t blocked = (b * c1 + blk) * hw * c0, plain = (b * c + blk * c0) * hw;
            if (to5) {
              for (int64_t l = 0; l < lanes; ++l)
                for (int64_t p = first; p < last; ++p) out[blocked + p * c0 + l] = in[plain + l * hw + p];
            } else {
              for (int64_t l = 0; l < lanes; ++l)
                for (int64_t p = first; p < last; ++p) out[plain + l * hw + p] = in[blocked + p * c0 + l];
            }
          }
    });
  });
}

}  // namespace

HostTensor to_nc1hwc0(const HostTensor& x) {
  if (x.rank() != 4) throw Error("NCHW -> NC1HWC0 needs a 4-D tensor, got " + x.shape_string());
  const int64_t c0 = c0_for(x.dtype());
  HostTensor y(x.dtype(),
               {x.dims()[0], (x.dims()[1] + c0 - 1) / c0, x.dims()[2], x.dims()[3], c0});  // zero padding
  convert_5hd(x, y, x.dims(), c0, true);
  return y;
}

HostTensor from_nc1hwc0(const HostTensor& x, int64_t channels) {
  const int64_t c0 = c0_for(x.dtype());
  if (x.rank() != 5 || x.dims()[4] != c0 || channels <= 0 || (channels + c0 - 1) / c0 != x.dims()[1])
    throw Error("NC1HWC0 -> NCHW: " + x.shape_string() + " does not hold " + std::to_string(channels) +
                " channels");
  std::vector<int64_t> nchw{x.dims()[0], channels, x.dims()[2], x.dims()[3]};
  HostTensor y = HostTensor::uninitialized(x.dtype(), nchw);
  convert_5hd(x, y, nchw, c0, false);
  return y;
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// FRACTAL_Z index of weight element (n, c, h, w): row (c1, h, w), then (n1, n0, c0).
struct FractalZ {
  int64_t n, c, h, w, c0, c1, n1;
  FractalZ(const std::vector<int64_t>& oihw, int64_t c0_)
      : n(oihw[0]), c(oihw[1]), h(oihw[2]), w(oihw[3]), c0(c0_), c1(ceil_div(c, c0_)), n1(ceil_div(n, 16)) {}
  std::vector<int64_t> dims() const { return {c1 * h * w, n1, 16, c0}; }
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    const int64_t row = ((ic / c0) * h + ih) * w + iw;
    return ((row * n1 + in / 16) * 16 + in % 16) * c0 + ic % c0;
  }
};

// Copies between the plain and the FRACTAL_Z tensor (`to_z` picks the direction), one
// row (C1 block, h, w) at a time: for each output channel, C0 input channels.
void convert_fractal_z(const HostTensor& src, HostTensor& dst, const FractalZ& f, int64_t channels,
                       bool to_z) {
  const int64_t kernel = f.h * f.w, rows = ceil_div(channels, f.c0) * kernel;
  by_element_size(src.dtype(), [&]<class T>() {
    const T* in = reinterpret_cast<const T*>(src.raw());
    T* out = reinterpret_cast<T*>(dst.mutable_raw());
    team_region(rows * f.n * f.c0 > (1 << 16), [&] {
#pragma omp for
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t blk = row / kernel, k = row % kernel, lanes = std::min(f.c0, channels - blk * f.c0);
        for (int64_t on = 0; on < f.n; ++on) {
          const int64_t blocked = ((row * f.n1 + on / 16) * 16 + on % 16) * f.c0,
                        plain = (on * channels + blk * f.c0) * kernel + k;
          for (int64_t l = 0; l < lanes; ++l) {
            if (to_z)
              out[blocked + l] = in[plain + l * kernel];
            else
              out[plain + l * kernel] = in[blocked + l];
          }
        }
      }
    });
  });
}

// FRACTAL_NZ: each run of C0 columns of one row is contiguous on both sides.
void convert_fractal_nz(const HostTensor& src, HostTensor& dst, int64_t batches, int64_t rows, int64_t cols,
                        int64_t c0, bool to_nz) {
  const size_t esz = dtype_size(src.dtype());
  const int64_t w1 = ceil_div(cols, c0), h1 = ceil_div(rows, 16);
  const int64_t plain_size = rows * cols, blocked_size = w1 * h1 * 16 * c0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < w1; ++j) {
        const int64_t run = std::min(c0, cols - j * c0);
        const int64_t plain = b * plain_size + r * cols + j * c0;
        const int64_t blocked = b * blocked_size + ((j * h1 + r / 16) * 16 + r % 16) * c0;
        const int64_t from = to_nz ? plain : blocked, to = to_nz ? blocked : plain;
        std::memcpy(dst.mutable_raw() + to * static_cast<int64_t>(esz),
                    src.raw() + from * static_cast<int64_t>(esz), static_cast<size_t>(run) * esz);
      }
}

}  // namespace

HostTensor to_fractal_z(const HostTensor& x) {
  if (x.rank() != 4) throw Error("NCHW -> FRACTAL_Z needs 4-D weights, got " + x.shape_string());
  FractalZ f(x.dims(), c0_for(x.dtype()));
  HostTensor y(x.dtype(), f.dims());  // zero padding
  convert_fractal_z(x, y, f, f.c, true);
  return y;
}

HostTensor from_fractal_z(const HostTensor& z, const std::vector<int64_t>& oihw) {
  if (oihw.size() != 4) throw Error("FRACTAL_Z -> NCHW needs the 4-D weight shape");
  const int64_t c0 = c0_for(z.dtype());
  // The plain channels may include padding (up to ceil(C/C0) * C0): those read as zero.
  FractalZ f({oihw[0], oihw[1], oihw[2], oihw[3]}, c0);
  if (z.dims() != f.dims())
    throw Error("FRACTAL_Z " + z.shape_string() + " does not hold weights [" + std::to_string(oihw[0]) + "," +
                std::to_string(oihw[1]) + "," + std::to_string(oihw[2]) + "," + std::to_string(oihw[3]) +
                "]");
  HostTensor y(z.dtype(), oihw);
  convert_fractal_z(z, y, f, oihw[1], false);
  return y;
}

HostTensor to_fractal_nz(const HostTensor& x) {
  if (x.rank() < 2) throw Error("ND -> FRACTAL_NZ needs rank >= 2, got " + x.shape_string());
  const int64_t c0 = c0_for(x.dtype()), rows = x.dim(-2), cols = x.dim(-1);
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end() - 2);
  int64_t batches = 1;
  for (int64_t d : dims) batches *= d;
  dims.insert(dims.end(), {ceil_div(cols, c0), ceil_div(rows, 16), 16, c0});
  HostTensor y(x.dtype(), dims);  // zero padding
  convert_fractal_nz(x, y, batches, rows, cols, c0, true);
  return y;
}

HostTensor from_fractal_nz(const HostTensor& z, int64_t rows, int64_t cols) {
  const int64_t c0 = c0_for(z.dtype());
  if (z.rank() < 4 || z.dim(-1) != c0 || z.dim(-2) != 16 || z.dim(-3) != ceil_div(rows, 16) ||
      z.dim(-4) != ceil_div(cols, c0))
    throw Error("FRACTAL_NZ " + z.shape_string() + " does not hold a " + std::to_string(rows) + "x" +
                std::to_string(cols) + " matrix");
  std::vector<int64_t> dims(z.dims().begin(), z.dims().end() - 4);
  int64_t batches = 1;
  for (int64_t d : dims) batches *= d;
  dims.insert(dims.end(), {rows, cols});
  HostTensor y = HostTensor::uninitialized(z.dtype(), dims);
  convert_fractal_nz(z, y, batches, rows, cols, c0, false);
  return y;
}

namespace {

// Plain weights by their packed copy (its bytes and plain dims), held while the packed
// copy lives: a reused address cannot match a dead entry. A weight read back from its
// packed copy is owned by the entry; a remembered source (remember_plain) is its owner's,
// held weakly, so the cache keeps no model's weights alive.
struct PlainEntry {
  std::weak_ptr<const void> owner;
  HostTensor plain;                    // without a keep-alive of its own
  std::shared_ptr<const void> strong;  // an unpacked copy's storage
  std::weak_ptr<const void> weak;      // a remembered source's owner
  std::shared_ptr<const void> alive() const { return strong ? strong : weak.lock(); }
};
using PlainKey = std::pair<const std::byte*, std::vector<int64_t>>;

std::mutex& plain_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<PlainKey, PlainEntry>& plain_cache() {
  static std::map<PlainKey, PlainEntry> cache;
  return cache;
}

void sweep(std::map<PlainKey, PlainEntry>& cache) {
  std::erase_if(cache, [](const auto& kv) { return kv.second.owner.expired() || !kv.second.alive(); });
}

HostTensor without_keep(const HostTensor& t) {
  return HostTensor::borrowed(t.dtype(), t.dims(), t.raw(), nullptr, true);
}

}  // namespace

void remember_plain(const HostTensor& packed, const HostTensor& plain) {
  if (!plain.is_constant() || !plain.storage() || !packed.storage()) return;
  std::lock_guard lock(plain_mutex());
  auto& cache = plain_cache();
  sweep(cache);  // weights freed since
  cache.insert_or_assign(PlainKey{packed.raw(), plain.dims()},
                         PlainEntry{packed.storage(), without_keep(plain), nullptr, plain.storage()});
}

HostTensor unpacked_weight(const HostTensor& packed, const std::vector<int64_t>& plain, bool nz) {
  auto unpack = [&] {
    return nz ? from_fractal_nz(packed, plain[0], plain[1]) : from_fractal_z(packed, plain);
  };
  if (!packed.is_constant()) return unpack();
  std::vector<int64_t> dims = plain;  // FRACTAL_NZ keeps its batch dims in front
  if (nz && packed.rank() >= 4) dims.insert(dims.begin(), packed.dims().begin(), packed.dims().end() - 4);
  std::lock_guard lock(plain_mutex());
  auto& cache = plain_cache();
  const PlainKey key{packed.raw(), dims};
  auto it = cache.find(key);
  std::shared_ptr<const void> keep =
      it == cache.end() || it->second.owner.lock() != packed.storage() ? nullptr : it->second.alive();
  if (!keep) {
    sweep(cache);
    HostTensor fresh = unpack();
    keep = fresh.storage();
    it = cache.insert_or_assign(key, PlainEntry{packed.storage(), without_keep(fresh), keep, {}}).first;
  }
  const HostTensor& t = it->second.plain;
  return HostTensor::borrowed(t.dtype(), t.dims(), t.raw(), std::move(keep), true);
}

}  // namespace geopt::ascend
