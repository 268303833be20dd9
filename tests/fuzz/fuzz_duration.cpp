// libFuzzer entry point for the "duration" target (tests/fuzz/targets.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return redisgo::fuzz::duration(data, size);
}
