#pragma once
// Every entry point of the API runs its work through guarded(): geopt's internal
// exceptions leave as geopt::api errors (util/error.h's kinds mapped one to one).
#include <utility>

#include "ascend/device_ops/device_ops.h"
#include "geopt/geopt.h"

namespace geopt::api {

// Rethrows the exception being handled as the API's kind of it. Call inside catch.
[[noreturn]] void rethrow_as_api_error();

template <class F>
auto guarded(F&& work) -> decltype(work()) {
  try {
    ascend::register_op_schemas();  // before any model, rule file or plan is read
    return std::forward<F>(work)();
  } catch (...) {
    rethrow_as_api_error();
  }
}

}  // namespace geopt::api
