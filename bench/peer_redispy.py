#!/usr/bin/env python3
"""The redis-py peer of the benchmarks: what `redisgo_task task -- CMD` does, written the
way a redis-py user would, with `redis.lock.Lock` and its defaults.

    peer_redispy.py --port PORT --key KEY [--timeout 5] -- CMD [ARG...]

Acquire `Lock(key, timeout=5, blocking=True)` (library defaults otherwise: sleep=0.1 s
between attempts, blocking_timeout=None, i.e. poll forever; SET NX PX per attempt), run
CMD in its own process group, renew with `Lock.reacquire()` every timeout/3 while it runs
(redis-py has no renewal of its own; redisgo_task renews every expire/3), stop the child
if a renewal finds the lock gone, release (`Lock.release()`, a compare-and-delete script)
when it ends, exit with its status (128+N for signal N). SIGTERM: stop the child, release,
exit 0 (while waiting: exit at once).

The only deviation from a bare `lock.acquire()`: the first attempt is made with
blocking=False so that "lease busy" can be printed on stderr (the benchmark waits for it);
then it sleeps `lock.sleep` and calls `lock.acquire()`: attempts stay 0.1 s apart, exactly
as in the library's own loop. Runs under the interpreter that has python3-redis
(/usr/bin/python3 on Debian).
"""

import os
import signal
import subprocess
import sys
import time

import redis
from redis.exceptions import LockError

child = None
lock = None


def say(msg):
    print(f"peer_redispy[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


def stop_child():
    if child is not None and child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            child.wait(timeout=2)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def on_term(_signum, _frame):
    stop_child()
    if lock is not None:
        try:
            lock.release()
        except (LockError, redis.RedisError):
            pass
    os._exit(0)


def main():
    global child, lock
    args = sys.argv[1:]
    if "--" not in args:
        print(__doc__, file=sys.stderr)
        return 2
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    kv = dict(zip(opts[::2], opts[1::2]))
    timeout = float(kv.get("--timeout", "5"))
    signal.signal(signal.SIGTERM, on_term)
    r = redis.Redis(host="127.0.0.1", port=int(kv["--port"]))
    lk = redis.lock.Lock(r, kv["--key"], timeout=timeout, blocking=True)
    if not lk.acquire(blocking=False):
        say("lease busy")
        time.sleep(lk.sleep)
        lk.acquire()
    lock = lk
    say("acquired")
    child = subprocess.Popen(cmd, start_new_session=True)
    rc = None
    while rc is None:
        try:
            rc = child.wait(timeout=timeout / 3)
        except subprocess.TimeoutExpired:
            try:
                lk.reacquire()
            except LockError:
                say("lock lost: stopping the child")
                stop_child()
                rc = child.returncode
                lock = None
                return 75
    lock = None
    try:
        lk.release()
    except LockError:
        say("lock lost before release")
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
