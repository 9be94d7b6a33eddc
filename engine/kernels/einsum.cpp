// Einsum: any number of operands, ellipsis broadcasting, repeated labels (diagonals),
// explicit or implicit outputs. Each output element sums the product of the operands
// over the labels the output leaves out, accumulated in double (int64 for integers).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "eval/kernel.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"

namespace geopt {
namespace {

// Labels are letters; ellipsis dims become labels from 1000 on, right-aligned.
constexpr int kEllipsisLabel = 1000;

struct Term {
  std::vector<int> labels;  // one per axis of the operand
};

std::vector<int> parse_term(const KernelContext& ctx, const std::string& text, int64_t rank,
                            int ellipsis_rank, bool operand) {
  std::vector<int> letters_before, letters_after;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || seen_ellipsis)
        ctx.fail("malformed ellipsis in equation term '" + text + "'");
      seen_ellipsis = true;
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      ctx.fail("equation term '" + text + "' has '" + std::string(1, c) + "', not a letter");
    (seen_ellipsis ? letters_after : letters_before).push_back(c);
  }
  const int letters = static_cast<int>(letters_before.size() + letters_after.size());
  int own_ellipsis = 0;
  if (operand) {
    own_ellipsis = static_cast<int>(rank) - letters;
    if (own_ellipsis < 0 || (!seen_ellipsis && own_ellipsis != 0))
      ctx.fail("equation term '" + text + "' has " + std::to_string(letters) +
               " labels for an operand of rank " + std::to_string(rank));
  } else {
    own_ellipsis = seen_ellipsis ? ellipsis_rank : 0;
  }
  std::vector<int> labels = letters_before;
  for (int e = 0; e < own_ellipsis; ++e) labels.push_back(kEllipsisLabel + ellipsis_rank - own_ellipsis + e);
  labels.insert(labels.end(), letters_after.begin(), letters_after.end());
  return labels;
}

void einsum(KernelContext& ctx) {
  std::string eq = ctx.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> texts;
  for (size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    texts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (texts.size() != ctx.input_count())
    ctx.fail("the equation has " + std::to_string(texts.size()) + " terms for " +
             std::to_string(ctx.input_count()) + " operands");
  const DType dtype = ctx.input(0).dtype();
  int ellipsis_rank = 0;
  for (size_t k = 0; k < texts.size(); ++k) {
    if (ctx.input(k).dtype() != dtype) ctx.fail("operands differ in dtype");
    int letters = 0;
    for (char c : texts[k]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
    if (texts[k].find("...") != std::string::npos)
      ellipsis_rank = std::max(ellipsis_rank, static_cast<int>(ctx.input(k).rank()) - letters);
  }
  std::vector<Term> terms;
  std::map<int, int64_t> extent;  // label -> dim
  std::map<int, int> uses;
  for (size_t k = 0; k < texts.size(); ++k) {
    const HostTensor& x = ctx.input(k);
    Term t{parse_term(ctx, texts[k], static_cast<int64_t>(x.rank()), ellipsis_rank, true)};
    for (size_t a = 0; a < t.labels.size(); ++a) {
      const int l = t.labels[a];
      const int64_t d = x.dims()[a];
      auto [it, fresh] = extent.emplace(l, d);
      if (!fresh && it->second != d) {
        if (l >= kEllipsisLabel && it->second == 1)
          it->second = d;  // a 1 broadcasts (to 0 as well)
        else if (!(l >= kEllipsisLabel && d == 1))
          ctx.fail("label '" + std::string(1, static_cast<char>(l)) + "' has dims " +
                   std::to_string(it->second) + " and " + std::to_string(d));
      }
      ++uses[l];
    }
    terms.push_back(std::move(t));
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    out_labels = parse_term(ctx, eq.substr(arrow + 2), 0, ellipsis_rank, false);
    std::set<int> once;
    for (int l : out_labels) {
      if (!extent.count(l))
        ctx.fail("output label '" + std::string(1, static_cast<char>(l)) + "' is in no operand");
      // "ij->ii" names no tensor (numpy refuses it too): an output axis per label.
      if (!once.insert(l).second)
        ctx.fail("output label '" + std::string(1, static_cast<char>(l)) + "' is given twice");
    }
  } else {
    for (int e = 0; e < ellipsis_rank; ++e) out_labels.push_back(kEllipsisLabel + e);
    for (const auto& [l, n] : uses)
      if (l < kEllipsisLabel && n == 1) out_labels.push_back(l);
  }
  std::vector<int> sum_labels;
  for (const auto& [l, d] : extent)
    if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) sum_labels.push_back(l);

  // Per operand, the element stride of each label (repeated labels add: a diagonal; broadcast dims 0).
  auto label_strides = [&](const std::vector<int>& labels) {
    std::vector<std::vector<int64_t>> s(terms.size(), std::vector<int64_t>(labels.size(), 0));
    for (size_t k = 0; k < terms.size(); ++k) {
      const auto st = strides_of(ctx.input(k).dims());
      for (size_t a = 0; a < terms[k].labels.size(); ++a) {
        if (ctx.input(k).dims()[a] == 1) continue;
        auto it = std::find(labels.begin(), labels.end(), terms[k].labels[a]);
        if (it != labels.end()) s[k][static_cast<size_t>(it - labels.begin())] += st[a];
      }
    }
    return s;
  };
  const auto out_strides = label_strides(out_labels);
  const auto sum_strides = label_strides(sum_labels);
  std::vector<int64_t> out_dims, sum_dims;
  for (int l : out_labels) out_dims.push_back(extent[l]);
  for (int l : sum_labels) sum_dims.push_back(extent[l]);
  int64_t sum_count = 1;
  for (int64_t d : sum_dims) sum_count *= d;

  HostTensor y(dtype, out_dims);
  dispatch_real(
      dtype,
      [&]<class T>() {
        using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
        std::vector<const T*> in;
        for (size_t k = 0; k < terms.size(); ++k) in.push_back(ctx.input(k).data<T>());
        T* py = y.mutable_data<T>();
        std::vector<int64_t> oc(out_dims.size(), 0), sc(sum_dims.size(), 0), base(terms.size()),
            off(terms.size());
        for (int64_t i = 0; i < y.size(); ++i) {
          for (size_t k = 0; k < terms.size(); ++k) {
            base[k] = 0;
            for (size_t a = 0; a < oc.size(); ++a) base[k] += oc[a] * out_strides[k][a];
          }
          Acc acc = 0;
          std::fill(sc.begin(), sc.end(), 0);
          for (int64_t s = 0; s < sum_count; ++s) {
            Acc prod = 1;
            for (size_t k = 0; k < terms.size(); ++k) {
              int64_t o = base[k];
              for (size_t a = 0; a < sc.size(); ++a) o += sc[a] * sum_strides[k][a];
              prod *= static_cast<Acc>(in[k][o]);
            }
            acc += prod;
            for (size_t a = sc.size(); a-- > 0;) {
              if (++sc[a] < sum_dims[a]) break;
              sc[a] = 0;
            }
          }
          py[i] = static_cast<T>(acc);
          for (size_t a = oc.size(); a-- > 0;) {
            if (++oc[a] < out_dims[a]) break;
            oc[a] = 0;
          }
        }
      },
      "Einsum");
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_einsum_kernel(OpRegistry& r) { r.add("", "Einsum", einsum); }

}  // namespace geopt
