// toml++'s implementation, compiled once for the whole program (REDISGO_SELF_CONTAINED).
//
// Header-only, toml++ gives every file that includes it its own copy of the parser's
// internals (they live in an unnamed namespace): with the loader in six files the binary
// carried 80 KB of identical copies. Built this way (TOML_HEADER_ONLY=0 for the config
// module, TOML_IMPLEMENTATION here only) every other file sees declarations, and the
// linker drops what nothing calls (--gc-sections, CMakeLists.txt).
#if TOML_HEADER_ONLY
#error "toml_build.cpp is for TOML_HEADER_ONLY=0 builds (REDISGO_SELF_CONTAINED)"
#endif

#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
