#include "pipeline_options.h"

#include <cstdio>
#include <iostream>

namespace geopt::cli {

void PipelineOptions::add_extraction_options(CLI::App* cmd) {
  cmd->add_option("--keep_format,--keep-format", keep_format,
                  "Nodes (\"name,name,...\", as the model names them) the layout rules leave in the model's "
                  "format: a region kept out of NC1HWC0, as geopt tune --job_type 1 may choose")
      ->delimiter(',');
  cmd->add_option("--extraction", extraction,
                  "How extraction chooses the program: auto (exact on small e-graphs), greedy, or exact "
                  "(branch and bound from the greedy program, within a state budget)")
      ->check(CLI::IsMember({"auto", "greedy", "exact"}))
      ->capture_default_str();
}

void PipelineOptions::fill(api::OptimizeOptions& a) const {
  a.target = profile.target();
  a.rules = rules.api();
  limits.apply_to(a.rules);
  a.rules.keep_format = keep_format;
  a.rules.extraction = extraction;
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
