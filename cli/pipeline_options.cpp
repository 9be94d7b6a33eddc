#include "pipeline_options.h"

#include <cstdio>
#include <iostream>

namespace geopt::cli {

void PipelineOptions::fill(api::OptimizeOptions& a) const {
  a.target = profile.target();
  a.rules = rules.api();
  limits.apply_to(a.rules);
  a.input_shape = input_shape.text;
  a.check.enabled = !no_check;
  a.check.atol = tolerance.atol;
  a.check.rtol = tolerance.rtol;
  a.check.inputs = check_inputs.entries;
  a.output = output;
  a.dump_graph = dump_dir;
}

int PipelineOptions::finish(const std::string& report_json, const std::string& report_text, bool check_ok,
                            const std::string& error) const {
  std::cout << (json ? report_json + "\n" : report_text) << std::flush;
  if (check_ok) return 0;
  std::fprintf(stderr, "geopt: error: %s\n", error.c_str());
  return 1;
}

}  // namespace geopt::cli
