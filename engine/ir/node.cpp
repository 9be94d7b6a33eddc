#include "ir/node.h"

namespace geopt {

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::describe() const {
  std::string op = domain.empty() ? op_type : domain + "::" + op_type;
  if (!name.empty()) return op + " '" + name + "'";
  return op + " (unnamed node #" + std::to_string(index_hint_) + ")";
}

}  // namespace geopt
