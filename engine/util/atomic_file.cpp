#include "util/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/input_file.h"

namespace geopt {
namespace {

// The temporary files open now, for the signal handler: a fixed table of pointers to
// their names (a handler may not allocate or lock).
constexpr size_t kSlots = 256;
std::atomic<const char*> open_temporaries[kSlots];

void remember(const char* name) {
  for (auto& slot : open_temporaries) {
    const char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, name)) return;
  }  // more than kSlots at once: that one is not cleaned on a signal
}

void forget(const char* name) {
  for (auto& slot : open_temporaries) {
    const char* mine = name;
    if (slot.compare_exchange_strong(mine, nullptr)) return;
  }
}

extern "C" void on_fatal_signal(int sig) {
  for (auto& slot : open_temporaries)
    if (const char* name = slot.load()) ::unlink(name);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void remove_temporaries_on_signals() {
  std::signal(SIGINT, on_fatal_signal);
  std::signal(SIGTERM, on_fatal_signal);
}

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  // The rename below replaces whatever is at the target: a device (/dev/null) or a pipe
  // would become a regular file, so only a regular file or nothing may be there.
  struct stat st {};
  if (::lstat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    throw Error(target_.string() + ": cannot write there: it is " + file_kind(st.st_mode) +
                ", not a regular file");
  if (S_ISLNK(st.st_mode) && ::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(target_.string() + ": cannot write there: it links to something that is not a regular file");
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  std::string pattern = (dir / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0)
    throw Error(target_.string() + ": cannot create a file in '" + dir.string() +
                "': " + std::strerror(errno));
  temp_ = buf.data();
  remember(temp_.c_str());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
  forget(temp_.c_str());
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
  // No fsync: the rename makes the replacement atomic for every reader (the old file or
  // the new one, never a part), which is what "no half-written file" needs. What it does
  // not give is durability across an OS crash or power loss, nor the report of a
  // write-back error the kernel meets after close (EIO; a full disk shows at write()
  // where the file system reserves blocks, as ext4 and XFS do): as for a compiler's
  // outputs and ONNX Runtime's saved models. An fsync of BERT-base's 418 MiB cost 0.45 s
  // here, a quarter of the optimize (docs/BENCHMARKS.md).
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
  forget(temp_.c_str());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

}  // namespace geopt
