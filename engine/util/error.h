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

// A command line whose options contradict each other (two exclusive ones, one that
// needs another) or whose values are malformed (an unknown profile name, a dim that is
// no number): the CLI exits 2, as for any usage error, not 1 as for bad input.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A broken invariant of geopt itself (a bug, not bad input): the CLI reports it as an
// internal error and exits 3. Not an Error, so nothing handling bad input swallows it.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal: " + what) {}
};

}  // namespace geopt
