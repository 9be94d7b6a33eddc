#include "dsl/automaton.h"

#include "dsl/schema_lookup.h"
#include "ir/domain.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

namespace geopt::dsl {
namespace {

struct Pred {
  int question;
  std::string answer;
};

std::string path_text(const std::vector<int>& path) {
  std::string s = "root";
  for (int i : path) s += "." + std::to_string(i);
  return s;
}

class Collector {
 public:
  Collector(std::vector<Question>& questions, std::map<std::string, int>& index)
      : questions_(questions), index_(index) {}

  int question(Question q) {
    auto [it, inserted] = index_.emplace(q.key, static_cast<int>(questions_.size()));
    if (inserted) questions_.push_back(std::move(q));
    return it->second;
  }

  void collect(const Pattern& p, const std::vector<int>& path, const std::map<std::string, PatternPtr>& lets,
               std::set<std::string>& seen_lets, std::vector<Pred>& out) {
    const std::string where = path_text(path);
    switch (p.kind) {
      case Pattern::Kind::Var: {
        auto it = lets.find(p.var);
        if (it != lets.end() && seen_lets.insert(p.var).second)
          collect(*it->second, path, lets, seen_lets, out);
        break;
      }
      case Pattern::Kind::Const:
      case Pattern::Kind::Number:
        if (!path.empty())
          out.push_back({question({Question::Kind::IsConst, path, "", "const@" + where}), "1"});
        break;
      case Pattern::Kind::Op: {
        if (!p.var.empty() && lets.count(p.var)) seen_lets.insert(p.var);
        if (p.op != "*") {
          std::string op = (is_onnx_domain(p.domain) ? "" : p.domain + "::") + p.op;
          out.push_back({question({Question::Kind::Op, path, "", "op@" + where}), op});
          const OpInfo* info = find_op(p.domain, p.op);
          for (const auto& a : p.attrs) {
            if (a.absent || !a.bind_var.empty() || a.op != CmpOp::Eq || !a.value || !info) continue;
            auto kind = info->attrs.find(a.name);
            if (kind == info->attrs.end()) continue;
            std::string key = "attr@" + where + ":" + a.name;
            out.push_back({question({Question::Kind::AttrValue, path, a.name, key}),
                           attribute_answer(literal_attribute(a.name, kind->second.kind, *a.value))});
          }
        }
        if (!path.empty())
          out.push_back({question({Question::Kind::OutputIndex, path, "", "output@" + where}),
                         std::to_string(p.output_index)});
        for (size_t i = 0; i < p.args.size(); ++i) {
          std::vector<int> child = path;
          child.push_back(static_cast<int>(i));
          collect(*p.args[i], child, lets, seen_lets, out);
        }
        break;
      }
    }
  }

 private:
  std::vector<Question>& questions_;
  std::map<std::string, int>& index_;
};

size_t count_nodes(const AutomatonNode* n) {
  if (!n) return 0;
  size_t c = 1 + count_nodes(n->otherwise.get());
  for (const auto& [a, child] : n->on_answer) c += count_nodes(child.get());
  return c;
}

}  // namespace

std::string attribute_answer(const Attribute& a) { return a.identity_key(); }

void Automaton::build(const std::vector<Entry>& entries) {
  questions_.clear();
  std::map<std::string, int> index;
  Collector collector(questions_, index);
  std::vector<std::vector<Pred>> preds(entries.size());
  for (size_t e = 0; e < entries.size(); ++e) {
    std::set<std::string> seen;
    collector.collect(*entries[e].root, {}, *entries[e].lets, seen, preds[e]);
  }
  // Order questions by how many alternatives ask them, then by depth, then by kind
  // and key (PDL's order): shared, shallow questions come first and are asked once,
  // and a node's attribute checks come after its op type.
  std::vector<int> share(questions_.size(), 0);
  total_predicates_ = 0;
  for (auto& ps : preds) {
    std::set<int> distinct;
    for (const auto& p : ps) distinct.insert(p.question);
    for (int q : distinct) ++share[static_cast<size_t>(q)];
    total_predicates_ += ps.size();
  }
  std::vector<int> rank(questions_.size());
  std::vector<int> order(questions_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const Question& qa = questions_[static_cast<size_t>(a)];
    const Question& qb = questions_[static_cast<size_t>(b)];
    if (share[static_cast<size_t>(a)] != share[static_cast<size_t>(b)])
      return share[static_cast<size_t>(a)] > share[static_cast<size_t>(b)];
    if (qa.path.size() != qb.path.size()) return qa.path.size() < qb.path.size();
    if (qa.kind != qb.kind) return qa.kind < qb.kind;  // an op's own question before its attribute checks
    return qa.key < qb.key;
  });
  for (size_t r = 0; r < order.size(); ++r) rank[static_cast<size_t>(order[r])] = static_cast<int>(r);

  root_ = std::make_unique<AutomatonNode>();
  for (size_t e = 0; e < entries.size(); ++e) {
    auto& ps = preds[e];
    std::stable_sort(ps.begin(), ps.end(), [&](const Pred& a, const Pred& b) {
      return rank[static_cast<size_t>(a.question)] < rank[static_cast<size_t>(b.question)];
    });
    ps.erase(std::unique(ps.begin(), ps.end(),
                         [](const Pred& a, const Pred& b) {
                           return a.question == b.question && a.answer == b.answer;
                         }),
             ps.end());
    AutomatonNode* node = root_.get();
    size_t i = 0;
    while (i < ps.size()) {
      if (node->question < 0) node->question = ps[i].question;
      if (node->question == ps[i].question) {
        auto& child = node->on_answer[ps[i].answer];
        if (!child) child = std::make_unique<AutomatonNode>();
        node = child.get();
        ++i;
      } else {
        if (!node->otherwise) node->otherwise = std::make_unique<AutomatonNode>();
        node = node->otherwise.get();
      }
    }
    node->accept.emplace_back(entries[e].rule, entries[e].alternative);
  }
}

size_t Automaton::node_count() const { return count_nodes(root_.get()); }

std::vector<std::pair<int, int>> Automaton::run(
    const std::function<const std::vector<std::string>&(int question)>& answers) const {
  std::vector<std::pair<int, int>> out;
  std::vector<const AutomatonNode*> stack{root_.get()};
  while (!stack.empty()) {
    const AutomatonNode* n = stack.back();
    stack.pop_back();
    if (!n) continue;
    out.insert(out.end(), n->accept.begin(), n->accept.end());
    if (n->otherwise) stack.push_back(n->otherwise.get());
    if (n->question < 0) continue;
    for (const auto& answer : answers(n->question)) {
      auto it = n->on_answer.find(answer);
      if (it != n->on_answer.end()) stack.push_back(it->second.get());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Automaton::dump(const std::vector<std::string>& rule_names) const {
  std::ostringstream os;
  os << "automaton: " << questions_.size() << " distinct predicates (" << total_predicates_
     << " before sharing), " << node_count() << " nodes\n";
  std::function<void(const AutomatonNode*, int, const std::string&)> walk =
      [&](const AutomatonNode* n, int depth, const std::string& label) {
        std::string indent(static_cast<size_t>(depth) * 2, ' ');
        os << indent << label;
        if (n->question >= 0) os << "ask " << questions_[static_cast<size_t>(n->question)].key;
        if (!n->accept.empty()) {
          os << (n->question >= 0 ? "; " : "") << "accept";
          for (const auto& [r, a] : n->accept) os << " " << rule_names[static_cast<size_t>(r)] << "#" << a;
        }
        os << "\n";
        for (const auto& [answer, child] : n->on_answer) walk(child.get(), depth + 1, "= " + answer + ": ");
        if (n->otherwise) walk(n->otherwise.get(), depth + 1, "otherwise: ");
      };
  walk(root_.get(), 0, "");
  return os.str();
}

}  // namespace geopt::dsl
