// libFuzzer entry point for the "config" target (tests/fuzz/targets.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return redisgo::fuzz::config(data, size);
}
