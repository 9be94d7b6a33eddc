#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"

int main(int argc, char** argv) {
  geopt::ascend::register_op_schemas();  // as the CLI and the API do before reading anything
  doctest::Context context(argc, argv);
  return context.run();
}
