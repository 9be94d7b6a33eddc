#pragma once
// The one oneDNN CPU engine every oneDNN kernel runs on.
#include <oneapi/dnnl/dnnl.hpp>

namespace geopt {

dnnl::engine& cpu_engine();

}  // namespace geopt
