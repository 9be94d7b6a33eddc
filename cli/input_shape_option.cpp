#include "input_shape_option.h"

namespace geopt::cli {

void InputShapeOption::add_to(CLI::App* cmd) {
  cmd->add_option("--input_shape,--input-shape", text,
                  "Fix symbolic input dims, ATC style: \"input_ids:1,128;attention_mask:1,128\"");
}

ImportOptions InputShapeOption::import_options() const {
  ImportOptions options;
  if (!text.empty()) options.input_shapes = parse_input_shapes(text);
  return options;
}

}  // namespace geopt::cli
