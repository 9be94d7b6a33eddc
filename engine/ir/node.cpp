#include "ir/node.h"

namespace geopt {

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

bool Node::is_nondeterministic() const {
  if (!domain.empty()) return false;
  if (op_type == "Dropout") return input(2) != nullptr;
  return op_type == "RandomNormal" || op_type == "RandomUniform" || op_type == "RandomNormalLike" || op_type == "RandomUniformLike" ||
         op_type == "Bernoulli" || op_type == "Multinomial";
}

std::string Node::describe() const {
  std::string op = domain.empty() ? op_type : domain + "::" + op_type;
  if (!name.empty()) return op + " '" + name + "'";
  return op + " (unnamed node #" + std::to_string(index_hint_) + ")";
}

}  // namespace geopt
