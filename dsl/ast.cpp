#include "dsl/ast.h"

#include <algorithm>
#include <functional>
#include <sstream>

namespace geopt::dsl {

const char* cmp_op_text(CmpOp op) {
  switch (op) {
    case CmpOp::Eq:
      return "==";
    case CmpOp::Ne:
      return "!=";
    case CmpOp::Lt:
      return "<";
    case CmpOp::Le:
      return "<=";
    case CmpOp::Gt:
      return ">";
    case CmpOp::Ge:
      return ">=";
    case CmpOp::Approx:
      return "~=";
    case CmpOp::In:
      return "in";
  }
  return "?";
}

std::string Literal::to_string() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::Number:
      os << number;
      break;
    case Kind::String:
      os << '"' << text << '"';
      break;
    case Kind::Ident:
      os << text;
      break;
    case Kind::List:
      os << "[";
      for (size_t i = 0; i < items.size(); ++i) os << (i ? ", " : "") << items[i].to_string();
      os << "]";
      break;
  }
  return os.str();
}

std::string Term::to_string() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::Number:
      os << number;
      break;
    case Kind::Var:
      os << var;
      break;
    case Kind::Rank:
      os << "rank(" << var << ")";
      break;
    case Kind::Dim:
      os << "dim(" << var << ", " << axis << ")";
      break;
    case Kind::DType:
      os << "dtype(" << var << ")";
      break;
    case Kind::Shape:
      os << "shape(" << var << ")";
      break;
    case Kind::Zeros:
      os << "zeros(" << var << ")";
      break;
    case Kind::ZeroRows:
      os << "zero_rows(" << var << ")";
      break;
    case Kind::FullRows:
      os << "full_rows(" << var << ")";
      break;
    case Kind::Element:
      os << var << "[" << axis << "]";
      break;
    case Kind::Ident:
      os << ident;
      break;
  }
  if (modulo) os << " % " << *modulo;
  return os.str();
}

std::string Predicate::to_string() const {
  if (kind == Kind::IsConst) return "is_const(" + var + ")";
  if (kind == Kind::OneUse) return "one_use(" + var + ")";
  if (kind == Kind::IsStatic) return "is_static(" + var + ")";
  std::ostringstream os;
  os << lhs.to_string() << " " << cmp_op_text(op) << " ";
  if (op == CmpOp::In) {
    if (is_range) {
      os << lo << " .. " << hi;
    } else {
      os << "{";
      for (size_t i = 0; i < set.size(); ++i) os << (i ? ", " : "") << set[i].to_string();
      os << "}";
    }
  } else {
    os << rhs.to_string();
    if (op == CmpOp::Approx) os << " +- " << tolerance;
  }
  return os.str();
}

int replacement_outputs(const Rule& rule, const Replacement& r) {
  int outputs = r.output_index + 1;
  std::function<void(const Replacement&)> visit = [&](const Replacement& x) {
    if (x.kind != Replacement::Kind::Op) return;
    if (x.domain == r.domain && x.op == r.op) outputs = std::max(outputs, x.output_index + 1);
    for (const auto& a : x.args) visit(*a);
  };
  for (const auto& w : rule.rewrites) visit(*w.replacement);
  return outputs;
}

}  // namespace geopt::dsl
