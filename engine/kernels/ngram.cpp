// TfIdfVectorizer: counts the n-grams of a pool in each row of token ids (or strings),
// with skips between a gram's tokens, and weighs them as TF, IDF or TF-IDF.
#include <algorithm>
#include <map>

#include "eval/kernel.h"

namespace geopt {
namespace {

void tfidf_vectorizer(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("the input must be [C] or [N, C]");
  const int64_t min_n = ctx.attr_int("min_gram_length", 0), max_n = ctx.attr_int("max_gram_length", 0);
  const int64_t max_skip = ctx.attr_int("max_skip_count", 0);
  const std::string mode = ctx.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    ctx.fail("mode must be TF, IDF or TFIDF, not '" + mode + "'");
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    ctx.fail("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  const auto counts = ctx.attr_ints("ngram_counts"), indexes = ctx.attr_ints("ngram_indexes");
  const auto weights = ctx.attr_floats("weights");
  const bool strings = x.dtype() == DType::String;
  const Attribute* pool_attr = ctx.node().attr(strings ? "pool_strings" : "pool_int64s");
  if (!pool_attr) ctx.fail(strings ? "string input needs pool_strings" : "integer input needs pool_int64s");
  // Tokens as keys: strings as they are, integers by value.
  auto token = [&](int64_t i) {
    return strings ? x.strings[static_cast<size_t>(i)] : std::to_string(x.int_at(i));
  };
  std::vector<std::string> pool;
  if (strings)
    pool = pool_attr->strings;
  else
    for (int64_t v : pool_attr->ints) pool.push_back(std::to_string(v));
  if (counts.empty() || static_cast<int64_t>(counts.size()) < max_n)
    ctx.fail("ngram_counts needs a start for every gram length up to max_gram_length");
  std::map<std::vector<std::string>, int64_t> slot;  // n-gram -> output index
  size_t gram = 0;
  for (size_t len = 1; len <= counts.size(); ++len) {
    const int64_t start = counts[len - 1];
    const int64_t end = len < counts.size() ? counts[len] : static_cast<int64_t>(pool.size());
    if (start < 0 || end < start || end > static_cast<int64_t>(pool.size()) ||
        (end - start) % static_cast<int64_t>(len) != 0)
      ctx.fail("ngram_counts does not split the pool into whole grams");
    for (int64_t at = start; at < end; at += static_cast<int64_t>(len), ++gram) {
      if (gram >= indexes.size()) ctx.fail("ngram_indexes needs one entry per gram in the pool");
      slot[std::vector<std::string>(pool.begin() + at, pool.begin() + at + static_cast<int64_t>(len))] =
          indexes[gram];
    }
  }
  if (gram != indexes.size()) ctx.fail("ngram_indexes has more entries than the pool has grams");
  for (int64_t i : indexes)
    if (i < 0) ctx.fail("ngram_indexes holds the negative index " + std::to_string(i));
  if (!weights.empty() && weights.size() != indexes.size()) ctx.fail("weights needs one entry per gram");
  int64_t width = 0;
  for (int64_t i : indexes) width = std::max(width, i + 1);
  const int64_t rows = x.rank() == 2 ? x.dims()[0] : 1, cols = x.dims().back();
  std::vector<float> out(static_cast<size_t>(rows * width), 0.0f);
  std::vector<std::string> key;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out.data() + r * width;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t n = min_n; n <= max_n; ++n)
        // A unigram has no gaps to skip: it is counted once per position.
        for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
          if (i + (n - 1) * (skip + 1) >= cols) break;
          key.clear();
          for (int64_t k = 0; k < n; ++k) key.push_back(token(r * cols + i + k * (skip + 1)));
          auto it = slot.find(key);
          if (it != slot.end()) row[it->second] += 1.0f;
        }
  }
  // Weights are per gram; a gram's output index may be shared, so weigh by index.
  std::vector<float> weight_of(static_cast<size_t>(width), 1.0f);
  for (size_t g = 0; g < weights.size(); ++g) weight_of[static_cast<size_t>(indexes[g])] = weights[g];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < width; ++j) {
      float& v = out[static_cast<size_t>(r * width + j)];
      if (mode == "IDF")
        v = v > 0 ? weight_of[static_cast<size_t>(j)] : 0.0f;
      else if (mode == "TFIDF")
        v *= weight_of[static_cast<size_t>(j)];
    }
  std::vector<int64_t> dims = x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width};
  ctx.outputs[0] = HostTensor::from_vector(DType::F32, dims, out);
}

}  // namespace

void register_ngram_kernel(OpRegistry& r) {
  r.add("", "TfIdfVectorizer", tfidf_vectorizer, /*half_via_f32=*/false);
}

}  // namespace geopt
