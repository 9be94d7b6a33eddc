#include "input_shape_option.h"

#include "settings.h"

namespace geopt::cli {

void InputShapeOption::add_to(CLI::App* cmd) {
  cmd->add_option("--input_shape,--input-shape", text,
                  "Fix symbolic input dims, ATC style: \"input_ids:1,128;attention_mask:1,128\"");
}

ImportOptions InputShapeOption::import_options() const { return api::import_options(text); }

}  // namespace geopt::cli
