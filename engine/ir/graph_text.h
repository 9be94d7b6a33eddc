#pragma once
// A deterministic, human-readable listing of a model: every value, node and
// attribute, with a hash of each tensor's bytes. Two models with equal listings
// have the same graph, names, attributes and (up to the hash) weights.
#include <string>

#include "ir/graph.h"

namespace geopt {

std::string to_text(const Model& model);
// FNV-1a 64 of a byte span, as 16 hex digits.
std::string bytes_digest(std::span<const std::byte> bytes);

}  // namespace geopt
