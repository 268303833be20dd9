// redisgo_simulate: see scripts/simulate.
#include <cstdio>

int main() {
  std::puts("redisgo_simulate: not yet");
  return 0;
}
