// redisgo_lease_bench: latency of one acquire+release cycle of the lease backend
// (lock::make_redis_backend) against 1..N Redis nodes, for docs/BENCHMARKS.md.
//
//   redisgo_lease_bench --nodes 127.0.0.1:7001,127.0.0.1:7002,... [--rounds 2000]
//                       [--warmup 100] [--key bench:lease] [--io-timeout-ms 500]
//                       [--samples FILE] [--renew] [--restart-guard-ms MS] [--latency-ms MS]
//
// Prints one JSON object: nodes, rounds, failures (rounds that did not reach a quorum),
// median_us, p99_us, mean_us, max_us. A cycle is acquire() (SET NX PX + fence INCR on
// every node in parallel) followed by release() (compare-and-DEL + PUBLISH on every
// node), timed on steady_clock around both, as a oneshot holder pays them. --samples
// also writes every measured cycle as "cycle_us acquire_us release_us" lines, so that
// runs made in turns can be pooled.
//
// --latency-ms MS: every node is reached through the test suite's fault proxy
// (tests/support/fault_proxy.h), one per node, each chunk delayed MS ms in each direction:
// nodes on other hosts, where a cycle's round trips rather than the servers' CPU count.
//
// --renew: acquire once, then time `rounds` renew() calls (a leader's renewal latency:
// from sending to a quorum's confirmation); median_us/p99_us are the renewals'.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lock/lease.h"
#include "redis/connection.h"
#include "support/fault_proxy.h"

namespace {

using redisgo::lock::LeaseOptions;
using redisgo::lock::Millis;

struct Args {
  std::vector<std::string> nodes;
  int rounds = 2000;
  int warmup = 100;
  std::string key = "bench:lease";
  long io_timeout_ms = 500;
  std::string samples;
  bool renew = false;
  long restart_guard_ms = 0;
  long latency_ms = -1;  // -1: no proxy
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "redisgo_lease_bench: %s\n"
               "usage: redisgo_lease_bench --nodes H:P[,H:P...] [--rounds N] [--warmup N] [--key K]"
                " [--io-timeout-ms MS] [--samples FILE] [--renew] [--restart-guard-ms MS] [--latency-ms MS]\n",
               why);
  std::exit(2);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

long to_long(const char* text, const char* what) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) usage(what);
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--renew") {
      a.renew = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value");
    const char* value = argv[++i];
    if (arg == "--nodes") {
      a.nodes = split(value, ',');
    } else if (arg == "--rounds") {
      a.rounds = static_cast<int>(to_long(value, "bad --rounds"));
    } else if (arg == "--warmup") {
      a.warmup = static_cast<int>(to_long(value, "bad --warmup"));
    } else if (arg == "--key") {
      a.key = value;
    } else if (arg == "--samples") {
      a.samples = value;
    } else if (arg == "--io-timeout-ms") {
      a.io_timeout_ms = to_long(value, "bad --io-timeout-ms");
    } else if (arg == "--latency-ms") {
      a.latency_ms = to_long(value, "bad --latency-ms");
    } else if (arg == "--restart-guard-ms") {
      a.restart_guard_ms = to_long(value, "bad --restart-guard-ms");
    } else {
      usage("unknown option");
    }
  }
  if (a.nodes.empty()) usage("--nodes is required");
  if (a.rounds < 1) usage("--rounds must be >= 1");
  return a;
}

/// Nearest-rank percentile of sorted samples (p in 0..100).
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  LeaseOptions opts;
  std::vector<std::unique_ptr<redisgo::testing::FaultProxy>> proxies;
  for (const auto& n : args.nodes) {
    std::string why;
    auto ep = redisgo::redis::Endpoint::parse(n, &why);
    if (!ep) usage(("bad node " + n + ": " + why).c_str());
    if (args.latency_ms >= 0) {
      proxies.push_back(std::make_unique<redisgo::testing::FaultProxy>(ep->port));
      proxies.back()->latency(std::chrono::milliseconds(args.latency_ms));
      ep = redisgo::redis::Endpoint::parse(proxies.back()->address(), &why);
    }
    redisgo::redis::ConnectionOptions c;
    c.endpoint = *ep;
    c.io_timeout = Millis(args.io_timeout_ms);
    c.connect_timeout = Millis(args.io_timeout_ms);
    opts.nodes.push_back(c);
  }
  opts.key = args.key;
  opts.holder = "lease-bench";
  opts.ttl = Millis(5000);
  opts.restart_guard = Millis(args.restart_guard_ms);
  auto backend = redisgo::lock::make_redis_backend(opts);

  if (args.renew) {
    auto acq = backend->acquire();
    if (!acq.acquired) {
      std::fprintf(stderr, "redisgo_lease_bench: acquire failed\n");
      return 1;
    }
    std::vector<double> renew_us;
    int unconfirmed = 0;
    for (int i = 0; i < args.warmup + args.rounds; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = backend->renew();
      auto t1 = std::chrono::steady_clock::now();
      if (i < args.warmup) continue;
      if (!r.confirmed) ++unconfirmed;
      renew_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    backend->release();
    std::sort(renew_us.begin(), renew_us.end());
    std::printf("{\"nodes\":%zu,\"rounds\":%d,\"unconfirmed\":%d,\"median_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
                args.nodes.size(), args.rounds, unconfirmed, percentile(renew_us, 50), percentile(renew_us, 99),
                renew_us.back());
    return unconfirmed == 0 ? 0 : 1;
  }

  std::vector<double> cycle_us, acquire_us, release_us;
  int failures = 0;
  int fence_raised = 0;  // acquisitions whose nodes' tokens differed (one more round)
  for (int i = 0; i < args.warmup + args.rounds; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto acq = backend->acquire();
    auto t1 = std::chrono::steady_clock::now();
    backend->release();
    auto t2 = std::chrono::steady_clock::now();
    if (i < args.warmup) continue;
    if (!acq.acquired) ++failures;
    for (auto t : acq.node_tokens) {
      if (t != 0 && t != acq.token) {
        ++fence_raised;
        break;
      }
    }
    acquire_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    release_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    cycle_us.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
  }
  if (!args.samples.empty()) {
    std::FILE* f = std::fopen(args.samples.c_str(), "w");
    if (f == nullptr) {
      std::perror(args.samples.c_str());
      return 1;
    }
    for (std::size_t i = 0; i < cycle_us.size(); ++i) {
      std::fprintf(f, "%.1f %.1f %.1f\n", cycle_us[i], acquire_us[i], release_us[i]);
    }
    std::fclose(f);
  }
  for (auto* v : {&cycle_us, &acquire_us, &release_us}) std::sort(v->begin(), v->end());
  double sum = 0;
  for (double v : cycle_us) sum += v;
  std::printf(
      "{\"nodes\":%zu,\"rounds\":%d,\"failures\":%d,\"fence_raised\":%d,\"median_us\":%.1f,\"p99_us\":%.1f,"
      "\"mean_us\":%.1f,\"max_us\":%.1f,\"acquire_median_us\":%.1f,\"release_median_us\":%.1f}\n",
      args.nodes.size(), args.rounds, failures, fence_raised, percentile(cycle_us, 50), percentile(cycle_us, 99),
      sum / static_cast<double>(cycle_us.size()), cycle_us.back(), percentile(acquire_us, 50),
      percentile(release_us, 50));
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "redisgo_lease_bench: %s\n", e.what());
  return 1;
}
