// Optimizes and compiles the model given on the command line, prints the kernels and the
// modeled latency, and runs the plan once on zeros: geopt as a C++ library.
#include <geopt/geopt.h>

#include <cstdio>
#include <map>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [SOC_VERSION]\n", argv[0]);
    return 2;
  }
  namespace api = geopt::api;
  try {
    api::CompileOptions options;
    if (argc > 2) options.target.soc_version = argv[2];
    const api::CompileResult compiled = api::compile(api::ModelSource::file(argv[1]), options);
    if (!compiled.check_ok) {
      std::fprintf(stderr, "error: %s\n", compiled.error.c_str());
      return 1;
    }
    const api::Summary& s = compiled.summary;
    std::printf("geopt %s, %s on %s\n", api::version().c_str(), argv[1], options.target.soc_version.c_str());
    std::printf("kernels          %zu -> %zu\n", s.kernels_before, s.kernels_after);
    std::printf("modeled latency  %.1f us -> %.1f us\n", s.latency_us_before, s.latency_us_after);
    for (const auto& [rule, sites] : s.fused) std::printf("fused            %s x%zu\n", rule.c_str(), sites);

    std::map<std::string, api::Tensor> feeds;
    for (const auto& input : compiled.plan.inputs())
      feeds[input.name] = api::Tensor::zeros(input.dtype, input.shape);
    for (const auto& [name, t] : compiled.plan.run(feeds)) {
      std::string dims;
      for (int64_t d : t.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      std::printf("output           %s %s[%s]\n", name.c_str(), t.dtype.c_str(), dims.c_str());
    }
  } catch (const api::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
