#pragma once
// Memory the host can give, and what happens when it cannot.
#include <cstddef>
#include <memory>
#include <string>

namespace geopt {

// The machine's physical memory in bytes (SIZE_MAX where the system does not say).
size_t physical_memory_bytes();

// `bytes` aligned to `alignment` (a power of two), or null when the allocation fails;
// freed with free_aligned. Through malloc's family, not operator new: mimalloc's operator
// new aborts on failure where its malloc returns null, so a size an input asks for
// (a tensor, a plan's pool) is refused with its size in every build. Built with mimalloc
// (GEOPT_MIMALLOC), tensors come from mimalloc's heap even where it is not the process's
// malloc (libgeopt.so in a Python process): glibc's malloc gives the top of its heap back
// after each large free and faults it in again, a third of BERT-base's run.
std::byte* allocate_aligned(size_t bytes, size_t alignment);
void free_aligned(std::byte* p);

// Makes a failed operator new throw std::bad_alloc where the allocator consults the
// new-handler (glibc's, the sanitizers'), so main reports it as bad input. Debian's
// mimalloc does not consult it (its operator new aborts); allocate_aligned is the way
// around it for the sizes inputs control. Call once at start-up.
void install_out_of_memory_handler();

// `bytes` of storage aligned to `alignment`, every byte set to `fill`. A size past the
// machine's memory, or an allocation that fails, throws geopt::Error naming `what` and
// the size.
std::shared_ptr<std::byte> allocate_filled(size_t bytes, size_t alignment, int fill, const std::string& what);

}  // namespace geopt
