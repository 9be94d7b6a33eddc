#include "eval/derived_constant.h"

#include <map>
#include <mutex>
#include <utility>

namespace geopt {
namespace {

struct Entry {
  std::weak_ptr<const void> owner;
  std::shared_ptr<const void> value;
};

struct Cache {
  std::mutex mutex;
  std::map<std::pair<const void*, std::string>, Entry> entries;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

std::shared_ptr<const void> derived_constant(const void* address, const std::shared_ptr<const void>& owner,
                                             const std::string& key,
                                             const std::function<std::shared_ptr<const void>()>& make) {
  Cache& c = cache();
  std::pair<const void*, std::string> at{address, key};
  {
    std::lock_guard lock(c.mutex);
    auto it = c.entries.find(at);
    if (it != c.entries.end() && !it->second.owner.expired() && it->second.owner.lock() == owner)
      return it->second.value;
  }
  // Made outside the lock: a reorder of a large weight must not stall other kernels.
  std::shared_ptr<const void> value = make();
  std::lock_guard lock(c.mutex);
  std::erase_if(c.entries, [](const auto& kv) { return kv.second.owner.expired(); });  // models freed since
  auto [it, fresh] = c.entries.try_emplace(std::move(at), Entry{owner, value});
  if (!fresh) {
    if (it->second.owner.lock() == owner) return it->second.value;  // another thread made it meanwhile
    it->second = Entry{owner, value};
  }
  return value;
}

}  // namespace geopt
