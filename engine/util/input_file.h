#pragma once
// A file opened for reading without ever blocking on the open: opening a named pipe
// (FIFO) waits for a writer, which a hostile or mistaken path never provides. Opened
// non-blocking, then switched back to blocking reads: a pipe with a writer reads as it
// is written, one without reads as empty (and the caller reports a short file).
#include <cstddef>
#include <filesystem>

namespace geopt {

class InputFile {
 public:
  // Throws geopt::Error "<path>: cannot open: <reason>".
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  // Reads up to `n` bytes, fewer only at the end of the file. Throws geopt::Error on a
  // read error.
  size_t read(void* data, size_t n);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace geopt
