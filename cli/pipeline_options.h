#pragma once
// The options geopt optimize and geopt compile share (the model, the rules, the target,
// the input shapes, the numerical check, where to write and dump), turned into the API's,
// and how both end: the report printed, exit 1 with the API's error when the check failed.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "check_input_option.h"
#include "check_tolerance_option.h"
#include "geopt/geopt.h"
#include "input_shape_option.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"

namespace geopt::cli {

struct PipelineOptions {
  std::string model, output;
  RuleOptions rules;
  ProfileOptions profile;
  InputShapeOption input_shape;
  CheckInputOption check_inputs;
  bool no_check = false;
  CheckToleranceOption tolerance;
  std::string dump_dir;
  SaturationLimitOptions limits;
  std::vector<std::string> keep_format;
  std::string extraction = "auto";
  bool json = false;

  // --keep_format and --extraction: where the layout rules stay out, how extraction chooses.
  void add_extraction_options(CLI::App* cmd);
  void fill(api::OptimizeOptions& a) const;
  // Prints the report (JSON with --json); returns the exit code.
  int finish(const std::string& report_json, const std::string& report_text, bool check_ok,
             const std::string& error) const;
};

}  // namespace geopt::cli
