#pragma once
// Work derived from a constant's bytes (a weight reordered into a primitive's layout, a
// widened or unpacked copy), done once while the constant lives and shared by every
// kernel call that asks for the same thing.
//
// Entries are keyed by the bytes' address and a caller's key, and hold the constant's
// owner weakly: the cache keeps no model's weights alive, an entry dies with its model,
// and an address reused by a later model cannot match a dead entry.
#include <functional>
#include <memory>
#include <string>

#include "eval/host_tensor.h"

namespace geopt {

// The value make() returns for (address, key) while `owner` lives, made on the first
// call. Two threads asking at once may both make it; one copy is kept.
std::shared_ptr<const void> derived_constant(const void* address, const std::shared_ptr<const void>& owner,
                                             const std::string& key,
                                             const std::function<std::shared_ptr<const void>()>& make);

// The same for a whole constant tensor: its bytes, its owner. The tensor must be
// constant (HostTensor::is_constant) and owned (storage() set).
template <class T>
std::shared_ptr<const T> derived_constant(const HostTensor& constant, const std::string& key,
                                          const std::function<std::shared_ptr<const T>()>& make) {
  return std::static_pointer_cast<const T>(derived_constant(
      constant.raw(), constant.storage(), key, [&] { return std::shared_ptr<const void>(make()); }));
}

// Whether a tensor's derived work may be cached: constant and owned.
inline bool cacheable_constant(const HostTensor& t) { return t.is_constant() && t.storage() != nullptr; }

}  // namespace geopt
