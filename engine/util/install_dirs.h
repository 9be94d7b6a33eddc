#pragma once
// Where an installed geopt keeps its data: <prefix>/share/geopt/SUB (the rules, the
// hardware profiles). The prefix is found from the executable (<prefix>/bin/geopt) and
// from the shared object holding this code (<prefix>/lib/libgeopt.so, which Python or a
// C++ program loads), so either finds the files installed beside it.
#include <filesystem>
#include <string>
#include <vector>

namespace geopt {

// The candidate folders, most specific first; callers take the first that exists and
// fall back to the source tree's copy.
std::vector<std::filesystem::path> installed_data_dirs(const std::string& sub);

}  // namespace geopt
