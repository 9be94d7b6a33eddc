#include "util/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "util/error.h"

namespace geopt {

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  std::string pattern = (dir / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) throw Error(target_.string() + ": cannot create a file in '" + dir.string() + "': " + std::strerror(errno));
  temp_ = buf.data();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(target_.string() + ": write failed: " + std::strerror(errno));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw Error(target_.string() + ": fsync failed: " + std::strerror(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) throw Error(target_.string() + ": close failed: " + std::strerror(errno));
  // mkstemp creates 0600; give the result the permissions a plain create would.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp_.c_str(), 0666 & ~mask);
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    throw Error(target_.string() + ": cannot rename into place: " + std::strerror(errno));
  committed_ = true;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

}  // namespace geopt
