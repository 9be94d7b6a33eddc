#include "util/input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace geopt {

InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    const int err = errno;
    ::close(fd_);
    throw Error(path.string() + ": cannot open: " + std::strerror(err));
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t InputFile::read(void* data, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, static_cast<char*>(data) + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(path_.string() + ": cannot read: " + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace geopt
