// The .npy reader (engine/io/npy.cpp): any bytes are refused or read as a tensor whose
// size its header implies.
#include "fuzz_support.h"
#include "io/npy.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = geopt::fuzz::as_file(data, size, ".npy");
  geopt::fuzz::refused_or_fine([&] {
    const geopt::HostTensor t = geopt::read_npy(path);
    if (t.nbytes() > size) throw geopt::InternalError("read_npy returned more bytes than the file holds");
  });
  return 0;
}
