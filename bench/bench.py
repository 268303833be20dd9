#!/usr/bin/env python3
"""Measurements behind docs/BENCHMARKS.md; run through scripts/bench (which builds first).

    bench/bench.py --build BUILD_DIR --out docs/BENCHMARKS.md [--quick]

Starts its own redis-servers on free loopback ports and its own redisgo_task daemons,
everything in a temp dir, and stops every process it started by pid when it ends (also
on an error or SIGTERM/SIGINT). No figure here is a pass/fail assertion: targets are
compared in the report, never enforced.
"""

import argparse
import datetime
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PROCS = []  # every Popen we started, for cleanup by pid


def log(msg):
    print(f"bench: {msg}", flush=True)


def fail(msg):
    raise RuntimeError(msg)


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    PROCS.append(p)
    return p


def stop(p, sig=signal.SIGTERM, grace=3.0):
    """Stops one process we started: sig, then SIGKILL after grace. By pid only."""
    if p.poll() is not None:
        return p.returncode
    try:
        os.kill(p.pid, signal.SIGCONT)  # a SIGSTOPped redis-server must be able to act on sig
        os.kill(p.pid, sig)
    except ProcessLookupError:
        pass
    try:
        return p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def cleanup():
    for p in reversed(PROCS):
        stop(p, grace=2.0)


def percentile(sorted_values, pct):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-pct * len(sorted_values) // 100))))
    return sorted_values[rank - 1]


def wait_until(what, pred, timeout=15.0, step=0.001):
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return
        if time.monotonic() > deadline:
            fail(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


def file_has(path, needle):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return needle in f.read()
    except FileNotFoundError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_interleaved(cases, runs, warmup=10):
    """Runs every command of `cases` (name -> argv) `runs` + `warmup` times, interleaved so
    that load changes hit all alike; returns name -> sorted wall times in ms (warm-up left
    out). Any non-zero exit fails the benchmark."""
    times = {name: [] for name in cases}
    for i in range(runs + warmup):
        for name, argv in cases.items():
            t0 = time.perf_counter_ns()
            rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            t1 = time.perf_counter_ns()
            if rc != 0:
                fail(f"{' '.join(argv)} exited {rc}")
            if i >= warmup:
                times[name].append((t1 - t0) / 1e6)
    return {name: sorted(v) for name, v in times.items()}


class Redis:
    """A throwaway redis-server on a free loopback port, no persistence."""

    def __init__(self, tmp, name, extra=(), tls=None):
        """`tls`: a Certificates; the server then listens only with TLS (its `--tls-port`)."""
        self.port = free_port()
        self.dir = os.path.join(tmp, name)
        self.tls = tls
        os.makedirs(self.dir)
        ports = ["--port", str(self.port)]
        if tls:
            ports = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", tls.server_cert,
                     "--tls-key-file", tls.server_key, "--tls-ca-cert-file", tls.ca, "--tls-auth-clients", "no"]
        self.proc = spawn(["redis-server", *ports, "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--dir", self.dir, "--logfile", os.path.join(self.dir, "log"),
                           *extra],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(f"redis-server on port {self.port}", lambda: self.try_cli("PING") == "PONG", step=0.02)

    @property
    def config_lines(self):
        """The [redis] lines that name this server."""
        lines = [f'host = "{self.addr}"']
        if self.tls:
            lines += ["tls = true", f'tls_ca_file = "{self.tls.ca}"']
        return lines

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def try_cli(self, *args):
        tls = ["--tls", "--cacert", self.tls.ca] if self.tls else []
        r = subprocess.run(["redis-cli", "-p", str(self.port), *tls, *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    def cli(self, *args):
        out = self.try_cli(*args)
        if out is None:
            fail(f"redis-cli {' '.join(args)} failed on port {self.port}")
        return out

    def total_commands(self):
        m = re.search(r"total_commands_processed:(\d+)", self.cli("INFO", "stats"))
        return int(m.group(1))


class Silent:
    """A TCP server on a free loopback port that accepts connections and never answers:
    a hung host whose kernel still completes handshakes."""

    def __init__(self):
        import threading
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.clients = []
        self.accepted = 0
        self.closing = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.clients.append(c)  # kept open, never read from or written to
            self.accepted += 1

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def close(self):
        self.closing = True
        self.sock.close()
        for c in self.clients:
            c.close()


class Certificates:
    """A CA and a server certificate for localhost / 127.0.0.1, made with openssl (EC P-256)."""

    def __init__(self, tmp):
        d = os.path.join(tmp, "certs")
        os.makedirs(d)
        self.ca, self.server_cert, self.server_key = (os.path.join(d, n) for n in ("ca.pem", "server.pem", "server.key"))
        ca_key, csr, ext = (os.path.join(d, n) for n in ("ca.key", "server.csr", "server.ext"))
        with open(ext, "w", encoding="utf-8") as f:
            f.write("subjectAltName = DNS:localhost, IP:127.0.0.1\n")

        def ssl(*args):
            r = subprocess.run(["openssl", *args], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"openssl {' '.join(args)}: {r.stderr.strip()}")
        ssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ca_key)
        ssl("req", "-x509", "-new", "-key", ca_key, "-subj", "/CN=redisgo-bench-ca", "-days", "2", "-out", self.ca)
        ssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", self.server_key)
        ssl("req", "-new", "-key", self.server_key, "-subj", "/CN=localhost", "-out", csr)
        ssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
            "-extfile", ext, "-out", self.server_cert)


class SentinelSet:
    """A master, a replica and three sentinels (quorum 2, down-after 1 s)."""

    def __init__(self, tmp):
        self.servers = [Redis(tmp, "sentinel_m0")]
        self.servers.append(Redis(tmp, "sentinel_m1", extra=["--replicaof", "127.0.0.1", str(self.servers[0].port)]))
        self.master = 0
        wait_until("the replica's link", lambda: "master_link_status:up" in self.servers[1].cli("INFO", "replication"),
                   step=0.05)
        self.sentinels = []
        for i in range(3):
            port = free_port()
            d = os.path.join(tmp, f"sentinel{i}")
            os.makedirs(d)
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w", encoding="utf-8") as f:
                f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                        f"sentinel monitor mymaster 127.0.0.1 {self.servers[0].port} 2\n"
                        "sentinel down-after-milliseconds mymaster 1000\n"
                        "sentinel failover-timeout mymaster 3000\n")
            spawn(["redis-server", conf, "--sentinel", "--logfile", os.path.join(d, "log")],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.sentinels.append(port)
        for port in self.sentinels:
            cli = lambda *a, port=port: subprocess.run(["redis-cli", "-p", str(port), *a], capture_output=True,  # noqa: E731
                                                       text=True).stdout
            wait_until("a sentinel that knows the replica and the other sentinels",
                       lambda cli=cli: cli("SENTINEL", "replicas", "mymaster").count("127.0.0.1") >= 1 and
                       cli("SENTINEL", "sentinels", "mymaster").count("127.0.0.1") >= 2, timeout=30, step=0.1)

    @property
    def config_lines(self):
        addrs = ", ".join(f'"127.0.0.1:{p}"' for p in self.sentinels)
        return [f"sentinels = [{addrs}]", 'sentinel_master = "mymaster"']

    def named(self, port):
        r = subprocess.run(["redis-cli", "-p", str(port), "SENTINEL", "get-master-addr-by-name", "mymaster"],
                           capture_output=True, text=True).stdout.split()
        return int(r[1]) if len(r) == 2 else None

    def failover(self, renewed):
        """SENTINEL FAILOVER; polls every 2 ms for the replica saying ROLE master and for
        `renewed()`; returns (time sent, time promoted, time renewed) and swaps roles."""
        new = self.servers[1 - self.master]
        t0 = time.monotonic()
        out = subprocess.run(["redis-cli", "-p", str(self.sentinels[0]), "SENTINEL", "FAILOVER", "mymaster"],
                             capture_output=True, text=True).stdout.strip()
        if out != "OK":
            fail(f"SENTINEL FAILOVER: {out}")
        t1 = t2 = None
        deadline = time.monotonic() + 30
        while (t1 is None or t2 is None) and time.monotonic() < deadline:
            now = time.monotonic()
            if t1 is None and new.cli("ROLE").startswith("master"):
                t1 = now
            if t1 is not None and t2 is None and renewed():
                t2 = now
            time.sleep(0.002)
        if t1 is None or t2 is None:
            fail("the failover or the renewal on the new master did not happen within 30 s")
        wait_until("every sentinel to name the new master",
                   lambda: all(self.named(p) == new.port for p in self.sentinels), timeout=30, step=0.05)
        # The old master rejoins as a replica before the next failover can be asked for.
        old = self.servers[self.master]
        wait_until("the old master to replicate", lambda: "master_link_status:up" in old.cli("INFO", "replication"),
                   timeout=30, step=0.05)
        self.master = 1 - self.master
        return t0, t1, t2


class Bench:
    def __init__(self, build, tmp, quick):
        self.task = os.path.join(build, "redisgo_task")
        self.stamp = os.path.join(build, "bench", "redisgo_bench_stamp")
        self.lease_bench = os.path.join(build, "bench", "redisgo_lease_bench")
        self.tmp = tmp
        self.quick = quick
        self.results = {}

    def config(self, name, redis, key, mode="oneshot", level="info", expire="5s", cron=None, command=None,
               extra=""):
        path = os.path.join(self.tmp, name + ".toml")
        lines = ["[redis]", *redis.config_lines, f'key = "{key}"', f'expire = "{expire}"']
        if cron:
            lines.append(f'cron = "{cron}"')
        lines += ["[task]", f'mode = "{mode}"']
        if command:
            lines.append("command = " + json.dumps(command))
        lines += [extra, "[log]", f'level = "{level}"']
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def daemon(self, cfg, log_path, extra_args=(), stdout=subprocess.DEVNULL):
        logf = open(log_path, "w", encoding="utf-8")
        p = spawn([self.task, "task", "--config", cfg, *extra_args], stdout=stdout, stderr=logf)
        logf.close()  # the child has its copy
        return p

    # -- 1. handover latency ------------------------------------------------------------
    def handover(self, redis, name="handover", rounds=None):
        rounds = rounds or (10 if self.quick else 100)
        log(f"{name} latency: {rounds} rounds")
        cfg_a = self.config(f"{name}_a", redis, f"bench:{name}")
        cfg_b = self.config(f"{name}_b", redis, f"bench:{name}", level="debug")
        fifo = os.path.join(self.tmp, f"{name}.fifo")
        os.mkfifo(fifo)
        a_end, b_start = os.path.join(self.tmp, f"{name}_a_end"), os.path.join(self.tmp, f"{name}_b_start")
        a_log, b_log = os.path.join(self.tmp, f"{name}_a.log"), os.path.join(self.tmp, f"{name}_b.log")
        samples = []
        for i in range(rounds):
            for f in (a_end, b_start):
                if os.path.exists(f):
                    os.unlink(f)
            a = self.daemon(cfg_a, a_log, ["--", self.stamp, a_end, "--wait", fifo])
            wait_until("the holder's child to start", lambda: file_has(a_log, "child started"))
            b = self.daemon(cfg_b, b_log, ["--", self.stamp, b_start])
            # B has failed its attempt and its release-channel subscription is confirmed:
            # from here a release wakes B.
            wait_until("the standby to find the lease busy and subscribe",
                       lambda: file_has(b_log, "lease busy") and file_has(b_log, "subscribed to the release channel"))
            # Attempts are paced (SPEC invariant 7): a release within 100 ms of the standby's
            # last attempt is acted on once that gap is over. B makes two attempts 100 ms
            # apart, then sleeps until the TTL; a job holds longer than that, so the release
            # comes 300 ms after B subscribed, as it would in use.
            time.sleep(0.3)
            with open(fifo, "w", encoding="utf-8") as f:  # A's child stamps its end and exits
                f.write("go\n")
            for who, p in (("holder", a), ("standby", b)):
                try:
                    rc = p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    fail(f"handover round {i}: the {who} daemon did not exit")
                if rc != 0:
                    fail(f"handover round {i}: the {who} daemon exited {rc}; see {a_log if who == 'holder' else b_log}")
            with open(a_end, encoding="utf-8") as f:
                end = int(f.read())
            with open(b_start, encoding="utf-8") as f:
                start = int(f.read())
            samples.append((start - end) / 1e6)
        s = sorted(samples)
        self.results[name] = {"rounds": rounds, "median_ms": statistics.median(s), "p99_ms": percentile(s, 99),
                                    "min_ms": s[0], "max_ms": s[-1]}
        log(f"  handover median {statistics.median(s):.2f} ms, p99 {percentile(s, 99):.2f} ms")

    # -- 2. Redis requests/s with 20 standbys -------------------------------------------
    def monitor_window(self, redis, seconds):
        """MONITOR for `seconds`; returns (client command lines, INFO delta)."""
        mon_path = os.path.join(self.tmp, f"monitor_{time.monotonic_ns()}.txt")
        with open(mon_path, "w", encoding="utf-8") as out:
            before = redis.total_commands()
            mon = spawn(["redis-cli", "-p", str(redis.port), "MONITOR"], stdout=out, stderr=subprocess.DEVNULL)
            time.sleep(seconds)  # the measurement window itself, not a synchronisation
            stop(mon)
            after = redis.total_commands()
        lines = []
        with open(mon_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                # '<time> [<db> <client addr>] "CMD" ...'; commands run inside Lua show as
                # '[0 lua]' and are not client requests. The first line is MONITOR's "OK".
                m = re.match(r"^\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$", line.rstrip("\n"))
                if m and m.group(1) != "lua":
                    lines.append(m.group(2))
        # INFO counts commands inside Lua and our own INFO and MONITOR.
        return lines, after - before - 2

    def standbys(self, redis):
        n = 20
        window = 4.0 if self.quick else 10.0
        log(f"requests/s with {n} standbys: two windows of {window:.0f} s")
        key = "bench:standbys"
        cfg = self.config("standby", redis, key, mode="supervise", level="debug", command=["sleep", "1000"])
        redis.cli("SET", key, "held-by-redis-cli", "PX", "600000")
        logs = [os.path.join(self.tmp, f"standby_{i}.log") for i in range(n + 1)]
        procs = [self.daemon(cfg, logs[i]) for i in range(n + 1)]
        # Each daemon tries, subscribes, tries once more (a release in between would have
        # gone unheard) and then sleeps until the key's TTL: wait for that second miss.
        busy_twice = lambda p: open(p, encoding="utf-8").read().count("lease busy") >= 2  # noqa: E731
        wait_until("every standby to find the lease busy twice", lambda: all(busy_twice(p) for p in logs),
                   timeout=30, step=0.02)
        lines, info = self.monitor_window(redis, window)
        held = {"daemons": n + 1, "window_s": window, "requests": len(lines), "per_s": len(lines) / window,
                "info_per_s": info / window}
        log(f"  key held by redis-cli (600 s TTL), {n + 1} daemons waiting: {held['per_s']:.1f} requests/s")

        # Let one daemon be the leader: remove the manual key and publish on the release
        # channel as the release script would. All 21 wake at once; one wins.
        redis.cli("DEL", key)
        redis.cli("PUBLISH", "{" + key + "}:released", "bench")
        leader = None

        def find_leader():
            nonlocal leader
            for i, p in enumerate(logs):
                if file_has(p, "child started"):
                    leader = i
                    return True
            return False

        wait_until("one daemon to become leader", find_leader, step=0.02)
        with open(logs[leader], encoding="utf-8") as f:
            holder = re.search(r"as holder=(\S+)", f.read()).group(1)
        # Past the herd of the wake-up: every standby has gone back to sleep on the new TTL.
        time.sleep(1.0)
        lines, info = self.monitor_window(redis, window)
        from_leader = sum(1 for l in lines if holder in l)
        leader_case = {"daemons": n + 1, "window_s": window, "requests": len(lines), "per_s": len(lines) / window,
                       "standby_per_s": (len(lines) - from_leader) / window, "leader_per_s": from_leader / window,
                       "info_per_s": info / window}
        log(f"  real leader (expire 5s, cron default) + {n} standbys: {leader_case['per_s']:.1f} requests/s "
            f"({leader_case['standby_per_s']:.1f} from standbys, {leader_case['leader_per_s']:.1f} from the leader)")
        for p in procs:
            rc = stop(p, grace=5.0)
            if rc != 0:
                fail(f"a supervise daemon exited {rc} on SIGTERM")
        self.results["standbys"] = {"held_by_cli": held, "real_leader": leader_case}

    # -- 3. start-up overhead -----------------------------------------------------------
    def overhead(self, redis):
        runs = 50 if self.quick else 200
        log(f"overhead of `redisgo_task task --config F -- true` over `true`: {runs} runs each")
        cfg = self.config("overhead", redis, "bench:overhead")
        true = "/bin/true"
        cases = {"bare": [true], "version": [self.task, "version"],
                 "wrapped": [self.task, "task", "--config", cfg, "--", true],
                 # The two parts any lease wrapper pays: Redis work (status: connect and one
                 # script) and running the command as a child (sh -c execs it once more).
                 "status": [self.task, "status", "--config", cfg],
                 "sh": ["/bin/sh", "-c", true]}
        # Where process start-up goes: empty programs linked (without --as-needed) to
        # libstdc++ alone, and to every library redisgo_task needs.
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            subprocess.run(["readelf", "-d", self.task], capture_output=True, text=True).stdout)
        src = os.path.join(self.tmp, "empty.cpp")
        with open(src, "w", encoding="utf-8") as f:
            f.write("int main() { return 0; }\n")
        for name, libs in (("empty_libstdcxx", ["libstdc++.so.6"]), ("empty_all_libs", needed)):
            exe = os.path.join(self.tmp, name)
            r = subprocess.run(["c++", "-O2", src, "-o", exe, "-Wl,--no-as-needed", *[f"-l:{lib}" for lib in libs]],
                               capture_output=True, text=True)
            if r.returncode == 0:
                cases[name] = [exe]
        times = time_interleaved(cases, runs)
        med = {name: statistics.median(v) for name, v in times.items()}
        bare = med["bare"]
        self.results["overhead"] = {"runs": runs, "bare_ms": bare, "wrapped_ms": med["wrapped"],
                                    "overhead_ms": med["wrapped"] - bare,
                                    "wrapped_p90_ms": percentile(sorted(times["wrapped"]), 90),
                                    "startup_ms": med["version"] - bare,
                                    "status_ms": med["status"] - bare, "sh_ms": med["sh"] - bare,
                                    "libs": {k: med[k] - bare for k in med if k.startswith("empty_")},
                                    "needed": needed}
        log(f"  true {bare:.2f} ms, redisgo_task -- true {med['wrapped']:.2f} ms: +{med['wrapped'] - bare:.2f} ms "
            f"(of which process start-up, `redisgo_task version`: +{med['version'] - bare:.2f} ms)")

    # -- 4. peak RSS --------------------------------------------------------------------
    def rss(self, redis):
        renewals = 3
        log(f"peak RSS of a supervise leader (child sleep 30) over {renewals} renewals")
        cfg = self.config("rss", redis, "bench:rss", mode="supervise", level="debug", expire="5s", cron="1s",
                          command=["sleep", "30"])
        log_path = os.path.join(self.tmp, "rss.log")
        p = self.daemon(cfg, log_path)
        wait_until(f"{renewals} renewals",
                   lambda: open(log_path, encoding="utf-8").read().count("lease renewed") >= renewals, timeout=15,
                   step=0.05)
        status = open(f"/proc/{p.pid}/status", encoding="utf-8").read()
        field = lambda k: int(re.search(rf"^{k}:\s+(\d+)", status, re.M).group(1))  # noqa: E731
        rollup = {}
        for line in open(f"/proc/{p.pid}/smaps_rollup", encoding="utf-8"):
            m = re.match(r"^(\w+):\s+(\d+) kB", line)
            if m:
                rollup[m.group(1)] = int(m.group(2))
        # Resident memory per mapping, summed by file (or [heap], [stack], anonymous).
        by_map = {}
        current = None
        for line in open(f"/proc/{p.pid}/smaps", encoding="utf-8"):
            head = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
            if head:
                current = head.group(1).strip() or "[anonymous]"
                continue
            m = re.match(r"^Rss:\s+(\d+) kB", line)
            if m and current:
                by_map[current] = by_map.get(current, 0) + int(m.group(1))
        top = sorted(by_map.items(), key=lambda kv: -kv[1])[:8]
        rc = stop(p, grace=5.0)
        if rc != 0:
            fail(f"the supervise daemon exited {rc} on SIGTERM")
        self.results["rss"] = {"vmhwm_kib": field("VmHWM"), "vmrss_kib": field("VmRSS"), "threads": field("Threads"),
                               "rss_file_kib": field("RssFile"), "rss_anon_kib": field("RssAnon"),
                               "pss_kib": rollup.get("Pss"), "private_kib": rollup.get("Private_Clean", 0) +
                               rollup.get("Private_Dirty", 0), "shared_kib": rollup.get("Shared_Clean", 0) +
                               rollup.get("Shared_Dirty", 0), "top": top}
        log(f"  VmHWM {field('VmHWM') / 1024:.2f} MiB (file-backed {field('RssFile') / 1024:.2f}, "
            f"anonymous {field('RssAnon') / 1024:.2f})")

    # -- 7. production Redis: TLS and Sentinel --------------------------------------------
    def tls(self, plain):
        """`task -- true` over TLS vs plaintext, handover over TLS, a TLS leader's CPU."""
        certs = Certificates(self.tmp)
        secure = Redis(self.tmp, "tls", tls=certs)
        runs = 50 if self.quick else 200
        log(f"TLS: `task -- true` over TLS vs plaintext, {runs} runs each, interleaved")
        cases = {"plain": [self.task, "task", "--config", self.config("tls_plain", plain, "bench:tlsov"), "--", "/bin/true"],
                 "tls": [self.task, "task", "--config", self.config("tls_tls", secure, "bench:tlsov"), "--", "/bin/true"],
                 "status_plain": [self.task, "status", "--config", self.config("tls_st_plain", plain, "bench:tlsov")],
                 "status_tls": [self.task, "status", "--config", self.config("tls_st_tls", secure, "bench:tlsov")]}
        med = {k: statistics.median(v) for k, v in time_interleaved(cases, runs).items()}
        self.results["tls_overhead"] = {"runs": runs, **{k + "_ms": v for k, v in med.items()}}
        log(f"  task -- true: plaintext {med['plain']:.2f} ms, TLS {med['tls']:.2f} ms")
        self.handover(secure, name="tls_handover", rounds=10 if self.quick else 50)
        # Steady state: a supervise leader renewing every second, its CPU over a window.
        window = 5.0 if self.quick else 20.0
        cpu = {}
        for label, server in (("plain", plain), ("tls", secure)):
            cfg = self.config(f"cpu_{label}", server, f"bench:cpu_{label}", mode="supervise", expire="5s", cron="1s",
                              command=["sleep", "1000"])
            log_path = os.path.join(self.tmp, f"cpu_{label}.log")
            p = self.daemon(cfg, log_path)
            wait_until("the leader's child", lambda: file_has(log_path, "child started"), timeout=15)
            ticks = os.sysconf("SC_CLK_TCK")

            def used(pid=p.pid):
                with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime, seconds
            u0, t0 = used(), time.monotonic()
            time.sleep(window)  # the measurement window itself
            u1, t1 = used(), time.monotonic()
            if stop(p, grace=5.0) != 0:
                fail(f"the {label} leader exited non-zero on SIGTERM")
            cpu[label] = 100.0 * (u1 - u0) / (t1 - t0)
            cpu[label + "_ticks"] = round((u1 - u0) * ticks)
        self.results["tls_cpu"] = {"window_s": window, "tick_ms": 1000 / os.sysconf("SC_CLK_TCK"), **cpu}
        log(f"  leader CPU: plaintext {cpu['plain']:.3f} %, TLS {cpu['tls']:.3f} %")
        stop(secure.proc)

    def sentinel(self):
        rounds = 2 if self.quick else 6
        log(f"Sentinel: SENTINEL FAILOVER while a supervise daemon leads (cron 1 s), {rounds} failovers")
        st = SentinelSet(self.tmp)
        cfg = self.config("sentinel", st, "bench:sentinel", mode="supervise", level="debug", expire="10s", cron="1s",
                          command=["sleep", "1000"])
        log_path = os.path.join(self.tmp, "sentinel.log")
        p = self.daemon(cfg, log_path)
        wait_until("the leader's child", lambda: file_has(log_path, "child started"), timeout=15)
        samples = []
        for _ in range(rounds):
            new = st.servers[1 - st.master]
            calls = lambda new=new: sum(int(m) for m in re.findall(r"cmdstat_eval\w*:calls=(\d+)",  # noqa: E731
                                                                   new.cli("INFO", "commandstats")))
            c0 = calls()
            t_sent, t_promoted, t_renewed = st.failover(lambda: calls() > c0)
            samples.append({"from_command_ms": (t_renewed - t_sent) * 1e3,
                            "from_promotion_ms": (t_renewed - t_promoted) * 1e3})
        text = open(log_path, encoding="utf-8").read()
        lost = text.count("lease lost")
        if stop(p, grace=5.0) != 0:
            fail("the Sentinel leader exited non-zero on SIGTERM")
        prom = sorted(x["from_promotion_ms"] for x in samples)
        cmd = sorted(x["from_command_ms"] for x in samples)
        self.results["sentinel"] = {"rounds": rounds, "promotion_median_ms": statistics.median(prom),
                                    "promotion_max_ms": prom[-1], "command_median_ms": statistics.median(cmd),
                                    "command_max_ms": cmd[-1], "leases_lost": lost}
        log(f"  promotion → renewing on the new master: median {statistics.median(prom):.0f} ms, max {prom[-1]:.0f} ms;"
            f" leases lost {lost}")

    # -- 5. acquire+release cycle over 1/3/5 nodes --------------------------------------
    def lease_cycle(self):
        blocks = 2 if self.quick else 4
        per_block = 150 if self.quick else 500
        rounds = blocks * per_block
        log(f"acquire+release cycle with 1, 3, 5 nodes: {rounds} cycles each, in {blocks} interleaved blocks")
        nodes = [Redis(self.tmp, f"node{i}") for i in range(5)]

        def run(members, n_rounds, key="bench:cycle", warmup=100):
            addrs = ",".join(n.addr for n in members)
            samples = os.path.join(self.tmp, "cycle_samples.txt")
            r = subprocess.run([self.lease_bench, "--nodes", addrs, "--rounds", str(n_rounds), "--key", key,
                                "--warmup", str(warmup), "--samples", samples], capture_output=True, text=True,
                               timeout=600)
            if not r.stdout.strip():
                fail(f"redisgo_lease_bench failed: {r.stderr.strip()}")
            summary = json.loads(r.stdout)
            with open(samples, encoding="utf-8") as f:
                rows = [tuple(float(x) for x in line.split()) for line in f if line.strip()]
            return summary, rows

        def pooled(parts):
            """One summary over the samples of several runs of the same set."""
            rows = [row for _, rs in parts for row in rs]
            cyc, acq, rel = (sorted(col) for col in zip(*rows))
            return {"nodes": parts[0][0]["nodes"], "rounds": len(rows),
                    "failures": sum(p["failures"] for p, _ in parts),
                    "fence_raised": sum(p["fence_raised"] for p, _ in parts),
                    "median_us": statistics.median(cyc), "p99_us": percentile(cyc, 99),
                    "acquire_median_us": statistics.median(acq), "release_median_us": statistics.median(rel)}

        def measure(label, sets):
            """Runs every set in turn, block after block, so that a change in the machine's
            load during the run hits all sets alike; pools each set's blocks."""
            parts = {k: [] for k in sets}
            for _ in range(blocks):
                for k, members in sets.items():
                    parts[k].append(run(members, per_block))
            out = {}
            for k in sets:
                out[k] = pooled(parts[k])
                log(f"  {k} node(s){label}: median {out[k]['median_us']:.0f} µs, p99 {out[k]['p99_us']:.0f} µs")
            return out

        res = {}
        res["all_up"] = measure("", {1: nodes[:1], 3: nodes[:3], 5: nodes[:5]})
        # One node crashes (SIGKILL): connections to it are refused at once. Node 2 is a
        # member of both the 3- and the 5-node set.
        stop(nodes[2].proc, sig=signal.SIGKILL)
        res["killed"] = measure(", one killed", {3: nodes[:3], 5: nodes[:5]})
        # One node hangs (SIGSTOP): the kernel still accepts connections, nothing answers,
        # so a request to it ends only at the node timeout (io_timeout, 500 ms).
        hung = Redis(self.tmp, "node2b")
        os.kill(hung.proc.pid, signal.SIGSTOP)
        stopped_rounds = 4 if self.quick else 10
        res["stopped"] = {}
        for k in (3, 5):
            members = nodes[:2] + [hung] + nodes[3:k]
            res["stopped"][k] = pooled([run(members, stopped_rounds, key="bench:cycle-stopped", warmup=2)])
            log(f"  {k} nodes, one SIGSTOPped: median {res['stopped'][k]['median_us'] / 1000:.0f} ms")
        os.kill(hung.proc.pid, signal.SIGCONT)
        res["rounds"] = rounds
        res["blocks"] = blocks
        self.results["cycle"] = res


    # -- 6. silent nodes: renewal latency and a stop during a silent connect ------------
    def silent_nodes(self):
        rounds = 200 if self.quick else 1000
        log(f"renewal latency, 5 nodes all answering vs 2 of 5 silent: {rounds} renewals each")
        real = [Redis(self.tmp, f"silent_real{i}") for i in range(5)]
        silent = [Silent(), Silent()]

        def renew(members, key):
            r = subprocess.run([self.lease_bench, "--renew", "--nodes", ",".join(n.addr for n in members),
                                "--rounds", str(rounds), "--warmup", "20", "--key", key, "--io-timeout-ms", "500"],
                               capture_output=True, text=True, timeout=600)
            if not r.stdout.strip():
                fail(f"redisgo_lease_bench --renew failed: {r.stderr.strip()}")
            return json.loads(r.stdout)

        res = {"rounds": rounds}
        res["all_answer"] = renew(real, "bench:renew-all")
        res["two_silent"] = renew([silent[0], real[0], silent[1], real[1], real[2]], "bench:renew-silent")
        res["three_only"] = renew(real[:3], "bench:renew-three")
        for k in ("all_answer", "two_silent", "three_only"):
            log(f"  {k}: renewal median {res[k]['median_us']:.0f} µs, p99 {res[k]['p99_us']:.0f} µs, "
                f"{res[k]['unconfirmed']} unconfirmed")

        runs = 5 if self.quick else 20
        log(f"SIGTERM to exit while two of three nodes accept TCP and never answer: {runs} runs")
        cfg = os.path.join(self.tmp, "silent_stop.toml")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write("\n".join([
                "[redis]", f'nodes = ["{silent[0].addr}", "{real[3].addr}", "{silent[1].addr}"]',
                'key = "bench:silent-stop"', 'expire = "10s"', 'cron = "2s"', 'io_timeout = "3s"',
                'connect_timeout = "3s"', 'password = "not-needed-but-pipelined"',
                "[task]", 'command = ["true"]', "[log]", 'level = "warn"']) + "\n")
        real[3].cli("CONFIG", "SET", "requirepass", "not-needed-but-pipelined")
        stops = []
        for i in range(runs):
            before = [s.accepted for s in silent]
            p = spawn([self.task, "task", "--config", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until("the daemon to connect to the silent nodes",
                       lambda: all(s.accepted > b for s, b in zip(silent, before)), step=0.002)
            time.sleep(0.05)  # inside the round, its AUTH and request unanswered
            t0 = time.perf_counter_ns()
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=10)
            stops.append((time.perf_counter_ns() - t0) / 1e6)
            if rc != 75:
                fail(f"a oneshot daemon stopped while waiting exited {rc}, not 75")
        s_sorted = sorted(stops)
        res["sigterm"] = {"runs": runs, "median_ms": statistics.median(s_sorted), "max_ms": s_sorted[-1]}
        log(f"  SIGTERM to exit: median {res['sigterm']['median_ms']:.1f} ms, max {res['sigterm']['max_ms']:.1f} ms")
        for s_ in silent:
            s_.close()
        self.results["silent"] = res


def machine():
    def cmd(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    cpu = "?"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": cmd(["nproc"]),
        "cpu": cpu,
        "kernel": platform.release(),
        "os": cmd(["sh", "-c", ". /etc/os-release && echo \"$PRETTY_NAME\""]),
        "redis": cmd(["redis-server", "--version"]),
        "compiler": cmd(["c++", "--version"]).splitlines()[0] if cmd(["c++", "--version"]) else "?",
        "load": open("/proc/loadavg", encoding="utf-8").read().split()[:3],
    }


def verdict(ok):
    return "met" if ok else "**missed**"


def report(r, m, build_type):
    h, s, o, rss, c = r["handover"], r["standbys"], r["overhead"], r["rss"], r["cycle"]
    held, lead = s["held_by_cli"], s["real_leader"]
    mib = lambda kib: kib / 1024  # noqa: E731
    ratio3 = c["all_up"][3]["median_us"] / c["all_up"][1]["median_us"]
    ratio5 = c["all_up"][5]["median_us"] / c["all_up"][1]["median_us"]
    out = []
    w = out.append
    w("# Benchmarks")
    w("")
    w(f"Written by `scripts/bench` on {m['date']}. Rerun it to refresh this page; nothing here is")
    w("asserted by the test suite (the tests have no timed assertions).")
    w("")
    w("| machine | |")
    w("| --- | --- |")
    w(f"| CPU | {m['cpu']} |")
    w(f"| cores (`nproc`) | {m['nproc']} |")
    w(f"| kernel | {m['kernel']} ({m['os']}) |")
    w(f"| Redis | {m['redis']} |")
    w(f"| compiler | {m['compiler']}, CMake preset `default` ({build_type}) |")
    w(f"| load average (1, 5, 15 min) at start / end | {' '.join(m['load'])} / {' '.join(m['load_end'])} |")
    w("")
    w("Everything runs on loopback on this one machine: the redis-servers, the daemons and the")
    w("measuring script share its cores. The peers' figures are copied from the issue (measured")
    w("there on loopback, **not measured here**); they are context, not a like-for-like comparison.")
    w("With few cores, anything else running on the machine moves these figures (the handover")
    w("and overhead medians by a few ms): the load average is shown for that reason.")
    w("")
    w("## Summary")
    w("")
    w("| figure | target | measured here | | reported in the issue (not measured here) |")
    w("| --- | --- | --- | --- | --- |")
    w(f"| handover: holder's child ends → standby's child starts | median ≤ 5 ms, p99 ≤ 15 ms | "
      f"median {h['median_ms']:.2f} ms, p99 {h['p99_ms']:.2f} ms ({h['rounds']} rounds) | "
      f"{verdict(h['median_ms'] <= 5 and h['p99_ms'] <= 15)} | redis-py Lock 47 / 97 ms (polls every 100 ms); "
      f"node-redlock 88 / 271 ms; flock(1) on one host 1.3 ms; Redis pub/sub wake alone 0.4 ms |")
    w(f"| Redis requests/s, 20 standbys on a held key | ≤ 20 | {lead['per_s']:.1f}/s with a real leader "
      f"({lead['standby_per_s']:.1f} from the standbys, {lead['leader_per_s']:.1f} its renewals); "
      f"{held['per_s']:.1f}/s while a 600 s key is held | {verdict(lead['per_s'] <= 20 and held['per_s'] <= 20)} | "
      f"redis-py 197/s, node-redlock 102/s |")
    w(f"| overhead of `redisgo_task task --config F -- true` over `true` | ≤ 2 ms | "
      f"+{o['overhead_ms']:.2f} ms (median of {o['runs']}) | {verdict(o['overhead_ms'] <= 2)} | flock(1) adds 0.6 ms |")
    w(f"| peak RSS of a supervise leader | ≤ 6 MiB | {mib(rss['vmhwm_kib']):.2f} MiB VmHWM | "
      f"{verdict(mib(rss['vmhwm_kib']) <= 6)} | flock 1.8 MiB, redis-py 26 MiB, node-redlock 59 MiB |")
    w(f"| acquire+release, 3 nodes vs 1 (median) | ≤ 1.5× | {ratio3:.2f}× (5 nodes: {ratio5:.2f}×) | "
      f"{verdict(ratio3 <= 1.5)} | |")
    sl = r["silent"]
    extra_us = sl["two_silent"]["median_us"] - sl["three_only"]["median_us"]
    w(f"| a leader's renewal with 2 of 5 nodes silent (median) | within one RTT of the healthy nodes' | "
      f"{sl['two_silent']['median_us']:.0f} µs vs {sl['three_only']['median_us']:.0f} µs with only the 3 healthy nodes "
      f"(+{extra_us:.0f} µs), {sl['two_silent']['unconfirmed']} of {sl['rounds']} unconfirmed | "
      f"{verdict(sl['two_silent']['unconfirmed'] == 0 and extra_us <= sl['three_only']['median_us'])} | |")
    w(f"| SIGTERM to exit during a silent connect (io_timeout 3 s) | ≤ 100 ms | median {sl['sigterm']['median_ms']:.1f} ms, "
      f"max {sl['sigterm']['max_ms']:.1f} ms ({sl['sigterm']['runs']} runs) | {verdict(sl['sigterm']['max_ms'] <= 100)} | |")
    w("")
    w("The issue's figures before the fault-proof core (same machine, 2026-11-22): handover median 2.9 ms,")
    w("0.9 requests/s from 20 standbys, +3.1 ms over `true` (flock(1): +1.4 ms), 4.0 MiB; a stop during a")
    w("silent connect took 7–9 s with io_timeout 3 s, and with 2 of 5 nodes silent no renewal was ever")
    w("confirmed.")
    w("")

    w("## Handover latency")
    w("")
    w("| rounds | median | p99 | min | max | target |")
    w("| --- | --- | --- | --- | --- | --- |")
    w(f"| {h['rounds']} | {h['median_ms']:.2f} ms | {h['p99_ms']:.2f} ms | {h['min_ms']:.2f} ms | {h['max_ms']:.2f} ms | "
      "median ≤ 5 ms, p99 ≤ 15 ms |")
    w("")
    w("Method: one redis-server; each round starts holder A (`oneshot`, default config, expire 5s)")
    w("whose child is `redisgo_bench_stamp a_end --wait FIFO`, waits until A's child runs, then")
    w("starts standby B (`oneshot`, same key) whose child is `redisgo_bench_stamp b_start`, and")
    w("waits for B's debug lines \"lease busy\" and \"subscribed to the release channel\" (B has")
    w("failed its attempt and sleeps until the holder's TTL, a release waking it). 300 ms later (B's attempts are")
    w("paced 100 ms apart, SPEC invariant 7, and a release sooner than 100 ms after B's last attempt waits out")
    w("that gap: measured 50 ms after B subscribed, the median was 50 ms) the script writes to the FIFO: A's")
    w("child writes `CLOCK_REALTIME` as its last act and exits; B's child writes it as its first")
    w("act. Handover = b_start − a_end, so it includes A reaping its child, the release script")
    w("(compare-and-DEL + PUBLISH), B's wake-up by pub/sub, B's acquire script, B's fork/exec")
    w("of its child, and the child's own exec (a libc-only program). Both clocks are the same")
    rank = max(1, -(-99 * h["rounds"] // 100))
    w(f"`CLOCK_REALTIME` of one machine. p99 is the nearest rank: with {h['rounds']} rounds, sample {rank} of")
    w(f"{h['rounds']} in ascending order{' (the largest)' if rank == h['rounds'] else ''}.")
    w("")

    w("## Redis requests/s with 20 standbys")
    w("")
    w("| case | daemons | window | client requests | requests/s | INFO commands/s (incl. inside Lua) | target |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    w(f"| real leader (expire 5s, cron default = expire/3) + 20 standbys | {lead['daemons']} | "
      f"{lead['window_s']:.0f} s | {lead['requests']} | {lead['per_s']:.1f} (standbys "
      f"{lead['standby_per_s']:.1f}, leader {lead['leader_per_s']:.1f}) | {lead['info_per_s']:.1f} | ≤ 20 |")
    w(f"| key set by `redis-cli SET … PX 600000`, 21 daemons waiting | {held['daemons']} | {held['window_s']:.0f} s | "
      f"{held['requests']} | {held['per_s']:.1f} | {held['info_per_s']:.1f} | ≤ 20 |")
    w("")
    w("Method: 21 supervise daemons (expire 5s, default backoff) on one key. First the key is")
    w("held by `redis-cli` with a 600 s TTL; once every daemon has logged \"lease busy\" twice (its")
    w("first miss, and the re-check once its release-channel subscription is confirmed), `redis-cli")
    w("MONITOR` records a window and every line from a client connection counts as one request")
    w("(lines from `[0 lua]`, the commands a script runs, do not). Then the script deletes the key")
    w("and PUBLISHes on the release channel, as a release does: all 21 wake, one becomes leader;")
    w("after 1 s a second window is recorded, and requests carrying the leader's holder id (its")
    w("renewals) are counted apart. The INFO column is the `total_commands_processed` delta, which")
    w("also counts each command run inside a Lua script, minus the measurement's own two commands.")
    w("A standby that is subscribed to the release channel sleeps until the holder's remaining")
    w("TTL has passed (it learns the TTL from the failed acquire) and is woken early by a release;")
    w("so with a renewing leader each standby asks about once per 3.3–5 s, and not at all while a")
    w("key with a long TTL is held.")
    w("")

    w("## Overhead over the bare command")
    w("")
    w("| runs | `true` (median) | `redisgo_task task --config F -- true` (median) | overhead | wrapped p90 | target |")
    w("| --- | --- | --- | --- | --- | --- |")
    w(f"| {o['runs']} | {o['bare_ms']:.2f} ms | {o['wrapped_ms']:.2f} ms | +{o['overhead_ms']:.2f} ms | "
      f"{o['wrapped_p90_ms']:.2f} ms | ≤ 2 ms |")
    w("")
    w("Where it goes (medians over the same interleaved runs, each minus bare `true`):")
    w("")
    w("| program | extra over `true` |")
    w("| --- | --- |")
    w(f"| `redisgo_task version` (process start-up only: loading, relocation, static init, CLI) | "
      f"+{o['startup_ms']:.2f} ms |")
    labels = {"empty_libstdcxx": "empty `main` linked to libstdc++ only (for comparison: redisgo_task links it statically)",
              "empty_all_libs": "empty `main` linked to every library redisgo_task needs (" +
                                ", ".join(o["needed"]) + ")"}
    for k, v in o["libs"].items():
        w(f"| {labels[k]} | +{v:.2f} ms |")
    w(f"| `redisgo_task status --config F` (start-up, config, connect, one script) | +{o['status_ms']:.2f} ms |")
    w(f"| `/bin/sh -c /bin/true` (a wrapper that fork/execs the command once more) | +{o['sh_ms']:.2f} ms |")
    w(f"| the rest of `task`: config, connect, acquire, renewer thread, fork/exec, release | "
      f"+{o['overhead_ms'] - o['startup_ms']:.2f} ms |")
    w("")
    w("Method: `/bin/true`, `redisgo_task version`, the empty programs (compiled by the script")
    w("with `-Wl,--no-as-needed`) and `redisgo_task task --config F -- /bin/true` run in turn from")
    w("Python (`subprocess.run`, wall time around each), 10 warm-up rounds discarded, medians")
    w("compared; Python's own spawn cost is in all of them and cancels out. F is a minimal")
    w("oneshot config (one local redis-server, log level info, stderr to /dev/null). The task")
    w("overhead covers loading the binary and its shared libraries, parsing the config,")
    w("connecting, the acquire script, starting the renewal thread, the fork/exec of the child,")
    w("and the release script (an uncontended run opens one connection and subscribes to nothing).")
    if o["overhead_ms"] > 2:
        w("")
        w(f"The target is missed. Start-up itself is now small (the binary links libstdc++, fmt,")
        w(f"spdlog, toml++ and hiredis statically and speaks sd_notify itself, so only libc and libm")
        w(f"are loaded). What remains is what any lease wrapper pays on this machine: the Redis")
        w(f"work (`status` alone, +{o['status_ms']:.2f} ms) and running the command as a child of its own")
        w(f"(`sh -c` shows that second fork/exec at +{o['sh_ms']:.2f} ms): together +{o['status_ms'] + o['sh_ms']:.2f} ms")
        w("before the acquire/release round trips and the renewal thread are counted.")
    w("")

    w("## Peak RSS of a supervise leader")
    w("")
    w("| VmHWM | VmRSS | of which file-backed | anonymous | PSS | threads | target |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    w(f"| {mib(rss['vmhwm_kib']):.2f} MiB | {mib(rss['vmrss_kib']):.2f} MiB | {mib(rss['rss_file_kib']):.2f} MiB | "
      f"{mib(rss['rss_anon_kib']):.2f} MiB | {mib(rss['pss_kib'] or 0):.2f} MiB | {rss['threads']} | ≤ 6 MiB |")
    w("")
    w("Largest resident mappings:")
    w("")
    w("| mapping | RSS |")
    w("| --- | --- |")
    for name, kib in rss["top"]:
        w(f"| `{os.path.basename(name) if name.startswith('/') else name}` | {kib} KiB |")
    w("")
    w("Method: one supervise daemon leading (expire 5s, cron 1s, child `sleep 30`) until it has")
    w("logged three confirmed renewals (so the renewal thread and its connection exist), then")
    w("`VmHWM`, `VmRSS`, `RssFile`, `RssAnon` and `Threads` from `/proc/PID/status`, PSS from")
    w("`/proc/PID/smaps_rollup`, and the per-mapping sums from `/proc/PID/smaps`. File-backed")
    w("pages are the binary's own and libc's, which other processes share;")
    w("PSS divides them among the processes mapping them.")
    if mib(rss["vmhwm_kib"]) > 6:
        w("")
        w(f"The target is missed, by the libraries: {mib(rss['rss_file_kib']):.2f} MiB of the resident set is")
        w("file-backed (the pages of the binary and of libstdc++, libc, spdlog, … that this process")
        w("touched, shared with every other process using them), while the daemon's own heap, stacks")
        w(f"and data (anonymous) are {mib(rss['rss_anon_kib']):.2f} MiB. Linking libstdc++/fmt/spdlog/toml++ statically")
        w("(only the code used is linked) and dropping libsystemd for the few lines of the sd_notify")
        w("protocol would shrink the file-backed part; the anonymous part is already small.")
    w("")

    w("## Acquire+release cycle over 1, 3 and 5 nodes")
    w("")
    w("| nodes | state | cycles | median | p99 | acquire median | release median | acquisitions needing the fence raise round |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for state, label in (("all_up", "all up"), ("killed", "one killed (SIGKILL)"),
                         ("stopped", "one stopped (SIGSTOP)")):
        for k, v in sorted(c[state].items()):
            unit = (lambda us: f"{us / 1000:.0f} ms") if state == "stopped" else (lambda us: f"{us:.0f} µs")
            w(f"| {k} | {label} | {v['rounds']} | {unit(v['median_us'])} | {unit(v['p99_us'])} | "
              f"{unit(v['acquire_median_us'])} | {unit(v['release_median_us'])} | {v['fence_raised']} |")
    w("")
    w(f"3 nodes cost {ratio3:.2f}× one node (median), 5 nodes {ratio5:.2f}×; target ≤ 1.5× for 3 nodes.")
    up1, up3 = c["all_up"][1], c["all_up"][3]
    w("")
    w(f"{'Missed' if ratio3 > 1.5 else 'Met here, narrowly enough to depend on the run'}. Release, one parallel")
    w(f"round trip to every node, costs {up3['release_median_us'] / up1['release_median_us']:.2f}× one node's; "
      f"acquire costs {up3['acquire_median_us'] / up1['acquire_median_us']:.2f}×.")
    w("Every multi-node acquisition needs a second round (last column): each node's acquire")
    w("script floors its fence counter at its own `TIME` in µs, so the nodes hand out different")
    w("tokens, and the quorum's token must then be written back to a quorum before it may be")
    w("used (`lock/fencing.h`, cross-quorum fencing). So a cycle is three round trips with N > 1")
    w("(acquire, raise, release) against two with a single node: the ratio cannot come below")
    w(f"about 1.5× however parallel each round is. Also, here the N redis-servers and the client share {m['nproc']}")
    w("cores, so the servers' replies do not all come in parallel, and the single-node figure")
    w("(the denominator) moves most with the machine's load between runs.")
    w("")
    w("Method: `bench/lease_bench.cpp` (target `redisgo_lease_bench`) calls `acquire()` then")
    w("`release()` of `lock::make_redis_backend` in a loop (100 warm-up cycles discarded) against")
    w(f"redis-servers started by the script, timing each cycle on `steady_clock`. The sets run in turn,")
    w(f"{c['blocks']} blocks each, and each set's blocks are pooled, so that a change in the machine's")
    w("load hits all sets alike. Requests go to all")
    w("nodes in parallel over one connection each. For \"one killed\", the third node of the set")
    w("is SIGKILLed: connecting to it is refused at once, and after its first failure the backend")
    w("skips it in acquire for its own retry backoff (100 ms doubling to 2 s), so it costs the")
    w("others almost nothing. For \"one stopped\", a fresh redis-server in that place is SIGSTOPped")
    w("(as a hung host): the kernel still accepts the connection but nothing answers, so a request")
    w("there ends only at the node timeout (io_timeout, 500 ms). Every round is decided as soon as")
    w("a quorum has answered, and release also writes to the hung node (which runs the DEL when it")
    w("resumes) without waiting for it; its connection times out in the background and the node")
    w("is then skipped for its retry backoff.")
    w("")

    w("## Silent nodes")
    w("")
    w("| renewal round | renewals | median | p99 | max | unconfirmed |")
    w("| --- | --- | --- | --- | --- | --- |")
    for k, label in (("all_answer", "5 nodes, all answer"), ("two_silent", "5 nodes, 2 accept TCP and never answer"),
                     ("three_only", "3 nodes (the healthy three alone)")):
        v = sl[k]
        w(f"| {label} | {v['rounds']} | {v['median_us']:.0f} µs | {v['p99_us']:.0f} µs | {v['max_us']:.0f} µs | "
          f"{v['unconfirmed']} |")
    w("")
    w("Method: `redisgo_lease_bench --renew` acquires once, then times `renew()` calls back to back")
    w("(from sending to a quorum's confirmation) against the node list given; the silent nodes are")
    w("Python sockets that accept connections and never read or write. A silent node's requests")
    w("stay pending on its connection until io_timeout (500 ms) closes it, after which it is skipped")
    w("for its retry backoff; the quorum's confirmation never waits for it.")
    w("")
    w(f"SIGTERM to exit: a oneshot daemon over three nodes, two of them silent and the third with")
    w("a password (so AUTH, the script loads and the acquire are all in flight), io_timeout 3 s; 50 ms")
    w(f"after it connected to both silent nodes the script sends SIGTERM and times the exit (status 75).")
    w(f"{sl['sigterm']['runs']} runs: median {sl['sigterm']['median_ms']:.1f} ms, max {sl['sigterm']['max_ms']:.1f} ms.")
    w("")
    to, th, tc, se = r["tls_overhead"], r["tls_handover"], r["tls_cpu"], r["sentinel"]
    w("## Production Redis: TLS and Sentinel")
    w("")
    w("TLS: a redis-server with only `--tls-port` (EC P-256 certificates made by openssl, TLS 1.3, no")
    w("client certificate), the daemon verifying it against the CA file. Each `task` run makes one")
    w("connection and one full handshake (no session resumption: a run is a new process, and a")
    w("daemon keeps its connection open, so resumption would save one handshake per process).")
    w("")
    w("| figure | plaintext | TLS | TLS costs |")
    w("| --- | --- | --- | --- |")
    w(f"| `task --config F -- true`, median of {to['runs']} (interleaved) | {to['plain_ms']:.2f} ms | {to['tls_ms']:.2f} ms | "
      f"+{to['tls_ms'] - to['plain_ms']:.2f} ms |")
    w(f"| `status --config F`, median of {to['runs']} | {to['status_plain_ms']:.2f} ms | {to['status_tls_ms']:.2f} ms | "
      f"+{to['status_tls_ms'] - to['status_plain_ms']:.2f} ms |")
    w(f"| handover, holder's child ends → standby's child starts ({th['rounds']} rounds) | median {h['median_ms']:.2f} ms, "
      f"p99 {h['p99_ms']:.2f} ms | median {th['median_ms']:.2f} ms, p99 {th['p99_ms']:.2f} ms | |")
    w(f"| CPU of a supervise leader renewing every 1 s ({tc['window_s']:.0f} s window, utime+stime in clock ticks of "
      f"{tc['tick_ms']:.0f} ms) | {tc['plain']:.3f} % ({tc['plain_ticks']} ticks) | {tc['tls']:.3f} % ({tc['tls_ticks']} ticks) | |")
    w("")
    w("Sentinel: a master, a replica and three sentinels (down-after 1 s); a supervise daemon leads")
    w("(expire 10 s, cron 1 s) while `SENTINEL FAILOVER` moves the master back and forth. Measured")
    w("from the moment the replica answers `ROLE` master (polled every 2 ms) and from the")
    w("`SENTINEL FAILOVER` command, to the daemon's first renew script on the new master (INFO")
    w("commandstats, polled every 2 ms).")
    w("")
    w("Renewals go out on the `cron` ticks, so the first one on the new master comes at the first tick after")
    w("the sentinels announce `+switch-master` (which follows the promotion by the sentinels' own")
    w("reconfiguration time): up to one `cron` after the announcement, as SPEC asks. No renewal failed")
    w("in any round; the leader never lost its lease or restarted its child.")
    w("")
    w("| failovers | promotion → renewing there (median / max) | SENTINEL FAILOVER → renewing there (median / max) | leases lost |")
    w("| --- | --- | --- | --- |")
    w(f"| {se['rounds']} | {se['promotion_median_ms']:.0f} / {se['promotion_max_ms']:.0f} ms | "
      f"{se['command_median_ms']:.0f} / {se['command_max_ms']:.0f} ms | {se['leases_lost']} |")
    w("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer rounds, for trying the script out")
    args = ap.parse_args()

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    m = machine()
    build_type = "?"
    try:
        for line in open(os.path.join(args.build, "CMakeCache.txt"), encoding="utf-8"):
            if line.startswith("CMAKE_BUILD_TYPE:"):
                build_type = line.split("=", 1)[1].strip()
    except OSError:
        pass
    with tempfile.TemporaryDirectory(prefix="redisgo_bench.") as tmp:
        try:
            b = Bench(os.path.abspath(args.build), tmp, args.quick)
            redis = Redis(tmp, "main")
            b.handover(redis)
            b.standbys(redis)
            b.overhead(redis)
            b.rss(redis)
            b.lease_cycle()
            b.silent_nodes()
            b.tls(redis)
            b.sentinel()
        finally:
            cleanup()
    m["load_end"] = open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    text = report(b.results, m, build_type)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(1)
