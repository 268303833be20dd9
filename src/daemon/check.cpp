#include "daemon/check.h"

namespace redisgo::daemon {

int run_check(const config::Config&, bool, std::ostream&) { return 0; }

}  // namespace redisgo::daemon
