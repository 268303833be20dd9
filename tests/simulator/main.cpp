// redisgo_simulate (scripts/simulate; docs/DESIGN.md "Simulation"):
//   --seeds N [--first S]   runs seeds S..S+N-1 (S = 1 by default); on a violation it prints the
//                           seed, the scenario and the trace of the run that led to it, exit 1
//   --seed S                replays one run and prints its whole trace
//   --mutant NAME           brings a historic defect back (--list-mutants names them): with
//                           --seeds, runs until the first seed that catches it (whose verdict
//                           the mutant changes: a seed that fails unmutated too is passed over)
//                           and says after how many runs and seconds
//   --tail N                lines of trace shown with a violation (default 200; 0: all)
//   --family NAME           every run draws its scenario from one family (mixed, restarts,
//                           herd, stalls, deletes: tests/simulator/scenario.cpp) instead of its own
//   --keep-going            does not stop at a violation: one line for each, and on to the last seed
// Prints what it ran: runs, simulated time, lease operations and their rate per wall second.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "simulator/sim.h"

using namespace redisgo::simulator;

namespace {

std::string tail_of(const std::string& text, std::size_t lines) {
  if (lines == 0) return text;
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= lines && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) return text;
  }
  return "...\n" + text.substr(at + 1);
}

void report_violation(const RunResult& r, const RunOptions& options, std::size_t tail) {
  RunOptions traced = options;
  traced.trace = true;
  const RunResult again = run_seed(r.seed, traced);
  std::printf("seed %llu: VIOLATION %s\n  scenario: %s\n  replay: scripts/simulate --seed %llu%s\n",
              static_cast<unsigned long long>(r.seed), r.violation->c_str(), r.scenario.c_str(),
              static_cast<unsigned long long>(r.seed),
              options.mutant ? (" --mutant " + options.mutant->name).c_str() : "");
  std::printf("%s", tail_of(again.trace, tail).c_str());
}

int usage() {
  std::fprintf(stderr, "usage: redisgo_simulate (--seeds N [--first S] | --seed S) [--mutant NAME] [--tail N]\n"
                       "       redisgo_simulate --list-mutants\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seeds = 0, first = 1;
  std::optional<std::uint64_t> one;
  std::size_t tail = 200;
  bool keep_going = false;
  RunOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--seeds") {
      seeds = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--first") {
      first = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--seed") {
      one = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--tail") {
      tail = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--mutant") {
      const std::string name = value();
      options.mutant = find_mutant(name);
      if (!options.mutant) {
        std::fprintf(stderr, "redisgo_simulate: no mutant '%s' (--list-mutants)\n", name.c_str());
        return 2;
      }
    } else if (a == "--family") {
      options.family = value();
      if (std::find(families().begin(), families().end(), options.family) == families().end()) {
        std::fprintf(stderr, "redisgo_simulate: no family '%s' (mixed, restarts, herd, stalls, deletes)\n", options.family.c_str());
        return 2;
      }
    } else if (a == "--keep-going") {
      keep_going = true;
    } else if (a == "--list-mutants") {
      for (const auto& m : mutants()) std::printf("%-32s %s\n", m.name.c_str(), m.what.c_str());
      return 0;
    } else {
      return usage();
    }
  }
  if (one) {
    options.trace = true;
    const RunResult r = run_seed(*one, options);
    std::printf("seed %llu: %s\n%s", static_cast<unsigned long long>(*one), r.scenario.c_str(), r.trace.c_str());
    std::printf("seed %llu: %s\n", static_cast<unsigned long long>(*one),
                r.violation ? ("VIOLATION " + *r.violation).c_str() : "ok");
    return r.violation ? 1 : 0;
  }
  if (seeds == 0) return usage();
  if (options.mutant) {
    const Catch c = hunt(*options.mutant, first, seeds, options.family);
    if (!c.seed) {
      std::printf("mutant %s NOT caught in %llu run(s) from seed %llu (%.2f s)\n", options.mutant->name.c_str(),
                  static_cast<unsigned long long>(c.runs), static_cast<unsigned long long>(first), c.seconds);
      return 1;
    }
    std::printf("mutant %s caught by seed %llu, run %llu from seed %llu, in %.2f s: %s\n", options.mutant->name.c_str(),
                static_cast<unsigned long long>(*c.seed), static_cast<unsigned long long>(c.runs),
                static_cast<unsigned long long>(first), c.seconds, c.violation->c_str());
    return 0;
  }
  const auto began = std::chrono::steady_clock::now();
  Stats total;
  std::uint64_t runs = 0;
  int status = 0;
  for (std::uint64_t s = first; s < first + seeds; ++s) {
    const RunResult r = run_seed(s, options);
    total += r.stats;
    ++runs;
    if (r.violation) {
      status = 1;
      if (keep_going) {
        std::printf("seed %llu: VIOLATION %s\n", static_cast<unsigned long long>(s), r.violation->c_str());
        continue;
      }
      report_violation(r, options, tail);
      break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("%llu run(s), %.1f simulated s, %llu lease operations (%llu acquisition attempts, %llu renewals, "
              "%llu releases), %llu leases, %llu children, %llu faults, %llu commands; %.2f wall s, %.0f lease "
              "operations per wall s\n",
              static_cast<unsigned long long>(runs), static_cast<double>(total.simulated) / 1e6,
              static_cast<unsigned long long>(total.operations()), static_cast<unsigned long long>(total.acquires),
              static_cast<unsigned long long>(total.renewals), static_cast<unsigned long long>(total.releases),
              static_cast<unsigned long long>(total.leases), static_cast<unsigned long long>(total.children),
              static_cast<unsigned long long>(total.faults), static_cast<unsigned long long>(total.commands), secs,
              secs > 0 ? static_cast<double>(total.operations()) / secs : 0.0);
  return status;
}
