#include "ir/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace geopt {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  // Non-blocking: opening a named pipe would wait for a writer (and it is refused below).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(path.string() + ": cannot map: " + std::strerror(err));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

BufferSlice::BufferSlice(std::shared_ptr<const Buffer> owner, size_t offset, size_t size)
    : owner_(std::move(owner)), offset_(offset), size_(size) {
  if (!owner_ || offset_ + size_ > owner_->bytes().size() || offset_ + size_ < offset_)
    throw InternalError("buffer slice out of range");
}

BufferSlice::BufferSlice(std::string bytes) {
  size_ = bytes.size();
  owner_ = std::make_shared<StringBuffer>(std::move(bytes));
}

std::span<const std::byte> BufferSlice::bytes() const {
  if (!owner_) return {};
  return owner_->bytes().subspan(offset_, size_);
}

}  // namespace geopt
