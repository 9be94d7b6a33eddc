#pragma once
// The one exception type geopt throws for bad input. Its message already names
// where the problem is (file, file:line:col, or node), so callers print it as is.
#include <stdexcept>
#include <string>

namespace geopt {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace geopt
