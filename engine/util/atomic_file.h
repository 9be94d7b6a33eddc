#pragma once
// Writes a file atomically: bytes go to a temporary file in the same folder,
// which is renamed over the target only on commit(). A failure (or an exception
// unwinding past this object) leaves no half-written file behind.
#include <cstddef>
#include <filesystem>
#include <string_view>

namespace geopt {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  void write(const void* data, size_t size);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Close and rename onto the target (no fsync: atomic for readers; atomic_file.cpp says
  // why). Throws geopt::Error on failure.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Removes every temporary file still open when SIGINT or SIGTERM arrives, then lets the
// signal end the process as it would have: an interrupted write leaves nothing behind.
// Call once, early (the CLI does).
void remove_temporaries_on_signals();

// Convenience: atomically replace `path` with `contents`.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace geopt
