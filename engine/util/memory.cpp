#include "util/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "util/error.h"

#ifdef GEOPT_MIMALLOC_API
#include <mimalloc.h>
#endif

namespace geopt {

size_t physical_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : SIZE_MAX;
  }();
  return bytes;
}

#ifdef GEOPT_MIMALLOC_API
namespace {

// The first number in a file (0 where there is none: "max", no file).
size_t number_in(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  unsigned long long v = 0;
  const bool read = std::fscanf(f, "%llu", &v) == 1;
  std::fclose(f);
  return read ? static_cast<size_t>(v) : 0;
}

// Gives mimalloc an arena of half the memory this process may use (the machine's, or its
// container's limit): address space the kernel fills in as it is touched, as any
// allocation. Without one, mimalloc maps each allocation past its largest size class (16
// MiB: an activation of a high-resolution CNN) from the OS and unmaps it when freed, so
// every such tensor is faulted in page by page again: a 1024 x 1024 U-Net spent 6 of its
// 7.6 s in the kernel. Freed arena blocks are reused as they are, and the process keeps
// its peak (ONNX Runtime's arena does the same). Committed: mimalloc 2.0 decommits the
// blocks of an uncommitted arena when they are freed, which faults them in again. Not
// under strict overcommit (vm.overcommit_memory 2), where a committed reservation would
// take the commit budget the rest of the process needs; where the system refuses it,
// allocations come from the OS as before.
bool reserve_arena() {
  if (number_in("/proc/sys/vm/overcommit_memory") == 2) return false;
  size_t usable = physical_memory_bytes();
  for (const char* limit : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (const size_t bytes = number_in(limit); bytes > 0) usable = std::min(usable, bytes);
  constexpr size_t kMost = size_t{64} << 30;
  return mi_reserve_os_memory(std::min(usable / 2, kMost), /*commit=*/true, /*allow_large=*/false) == 0;
}

}  // namespace
#endif

std::byte* allocate_aligned(size_t bytes, size_t alignment) {
#ifdef GEOPT_MIMALLOC_API
  static const bool arena = reserve_arena();  // once; without it, allocations still work
  (void)arena;
  return static_cast<std::byte*>(
      mi_malloc_aligned(std::max<size_t>(bytes, 1), std::max(alignment, sizeof(void*))));
#else
  void* p = nullptr;
  return ::posix_memalign(&p, std::max(alignment, sizeof(void*)), std::max<size_t>(bytes, 1)) == 0
             ? static_cast<std::byte*>(p)
             : nullptr;
#endif
}

void free_aligned(std::byte* p) {
#ifdef GEOPT_MIMALLOC_API
  mi_free(p);
#else
  std::free(p);
#endif
}

void install_out_of_memory_handler() {
  std::set_new_handler([] { throw std::bad_alloc(); });
}

std::shared_ptr<std::byte> allocate_filled(size_t bytes, size_t alignment, int fill,
                                           const std::string& what) {
  const size_t n = std::max<size_t>(bytes, 1);
  if (n > physical_memory_bytes())
    throw Error(what + ": " + std::to_string(n) + " bytes is more than this machine's memory (" +
                std::to_string(physical_memory_bytes()) + " bytes)");
  std::byte* p = allocate_aligned(n, alignment);
  if (!p) throw Error(what + ": cannot allocate " + std::to_string(n) + " bytes (out of memory)");
  std::memset(p, fill, n);
  return std::shared_ptr<std::byte>(p, [](std::byte* q) { free_aligned(q); });
}

}  // namespace geopt
