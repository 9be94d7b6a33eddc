#include <filesystem>
#include <new>
#include <regex>

#include "guard.h"
#include "util/error.h"

namespace geopt::api {
namespace {

// The place a message names, as geopt phrases it: "FILE:LINE:COL: " (rule files),
// "FILE: ..." (a model or plan file), "node 'NAME'" (a model's node).
void locate(Error& e, const std::string& message) {
  static const std::regex at_col(R"((?:^|\n)([^:\n]+):(\d+):(\d+): )");
  static const std::regex node(R"(node '([^']*)')");
  std::smatch m;
  if (std::regex_search(message, m, at_col)) {
    e.file = m[1];
    e.line = std::stoi(m[2]);
    e.col = std::stoi(m[3]);
  } else if (auto colon = message.find(": "); colon != std::string::npos && colon > 0) {
    std::error_code ec;
    const std::string head = message.substr(0, colon);
    if (head.find('\n') == std::string::npos && std::filesystem::exists(head, ec)) e.file = head;
  }
  if (std::regex_search(message, m, node)) e.node = m[1];
}

template <class Kind>
[[noreturn]] void raise(const std::string& message) {
  Kind e(message);
  locate(e, message);
  throw e;
}

}  // namespace

Error::Error(const std::string& message) : std::runtime_error(message) {}
Error::~Error() = default;
BadInput::~BadInput() = default;
UsageError::~UsageError() = default;
InternalError::~InternalError() = default;

void rethrow_as_api_error() {
  try {
    throw;
  } catch (const Error&) {
    throw;  // already the API's
  } catch (const geopt::UsageError& e) {
    raise<UsageError>(e.what());
  } catch (const geopt::Error& e) {
    raise<BadInput>(e.what());
  } catch (const geopt::InternalError& e) {
    raise<InternalError>(std::string(e.what()) +
                         " (a bug in geopt: please report it with the command and the model)");
  } catch (const std::bad_alloc&) {
    raise<BadInput>(
        "out of memory: the model, its inputs or the plan ask for more memory than this machine has");
  } catch (const std::exception& e) {
    raise<InternalError>(std::string("internal error: ") + e.what() +
                         " (a bug in geopt: please report it with the command and the model)");
  }
}

}  // namespace geopt::api
