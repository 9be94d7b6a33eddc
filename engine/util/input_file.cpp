#include "util/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
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

const char* file_kind(unsigned mode) {
  return S_ISDIR(mode) ? "a folder" : S_ISFIFO(mode) ? "a pipe" : "a device or socket";
}

std::string read_regular_file(const std::filesystem::path& path, size_t cap, const std::string& what,
                              const std::string& hint) {
  InputFile file(path);
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0)
    throw Error(path.string() + ": cannot read " + what + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(path.string() + ": cannot read " + what + " (not a regular file: " + file_kind(st.st_mode) +
                ")");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > cap)
    throw Error(path.string() + ": " + std::to_string(size) + " bytes, larger than " + what + " can be (" +
                std::to_string(cap) + " bytes" + (hint.empty() ? "" : "; " + hint) + ")");
  std::string bytes(static_cast<size_t>(size), '\0');
  if (file.read(bytes.data(), bytes.size()) != bytes.size())
    throw Error(path.string() + ": cannot read " + what + " (it got shorter while read)");
  return bytes;
}

}  // namespace geopt
