#pragma once
// A file opened for reading without ever blocking on the open: opening a named pipe
// (FIFO) waits for a writer, which a hostile or mistaken path never provides. Opened
// non-blocking, then switched back to blocking reads: a pipe with a writer reads as it
// is written, one without reads as empty (and the caller reports a short file).
#include <cstddef>
#include <filesystem>
#include <string>

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

// "a folder", "a pipe" or "a device or socket": what a path that is not a regular file is,
// by its st_mode, for a message refusing it.
const char* file_kind(unsigned mode);

// The whole of a regular file of at most `cap` bytes, opened as InputFile opens it: a
// folder, a pipe, a device (/dev/zero) or a larger file is refused before anything is
// read, naming the path and `what` it was to be ("the --modify_mixlist file"); `hint`,
// when given, says why there is a cap. Throws geopt::Error.
std::string read_regular_file(const std::filesystem::path& path, size_t cap, const std::string& what,
                              const std::string& hint = {});

// The cap for option files (mix lists, switch files, hardware profiles, op lists): far
// above any real one, far below what a mistaken path (a log, a disk image) holds.
inline constexpr size_t kOptionFileCap = size_t{16} << 20;

}  // namespace geopt
