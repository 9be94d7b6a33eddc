#include "util/install_dirs.h"

#include <dlfcn.h>

namespace geopt {
namespace fs = std::filesystem;

std::vector<fs::path> installed_data_dirs(const std::string& sub) {
  std::vector<fs::path> binaries;
  std::error_code ec;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    binaries.push_back(fs::weakly_canonical(exe, ec));
  // The shared object holding this code, as the loader found it: through a RUNPATH such as
  // $ORIGIN/../../.., so its name is made canonical before going up from it. Linked into
  // the executable, dladdr names argv[0] (which may not even name a file here): the first
  // entry covers it.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&installed_data_dirs), &info) && info.dli_fname &&
      *info.dli_fname) {
    fs::path object = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
    const bool is_file = !ec && fs::is_regular_file(object, ec);
    if (is_file && (binaries.empty() || !fs::equivalent(object, binaries.front(), ec)))
      binaries.push_back(object);
  }
  std::vector<fs::path> dirs;
  for (const fs::path& b : binaries) {
    // Installed: <prefix>/bin/geopt, <prefix>/lib/libgeopt.so or <prefix>/lib/<multiarch>/libgeopt.so.
    fs::path prefix = b.parent_path().parent_path();
    for (int up = 0; up < 2 && !prefix.empty(); ++up, prefix = prefix.parent_path())
      dirs.push_back(prefix / "share" / "geopt" / sub);
    dirs.push_back(b.parent_path() / sub);  // beside it
  }
  return dirs;
}

}  // namespace geopt
