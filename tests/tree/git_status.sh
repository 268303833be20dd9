#!/bin/sh
# The suite writes nothing into the source tree (it writes under its build directory and
# $TMPDIR): `git status` after the suite shows nothing that it did not show before.
#   git_status.sh snapshot SOURCE FILE   before the suite (ctest: the fixture's setup)
#   git_status.sh compare SOURCE FILE    after it (the fixture's cleanup, once every test of
#                                        the fixture has ended)
# Compared with the snapshot, not with a clean tree, so that a developer's own uncommitted
# edits and new files never fail it. Untracked files are listed one by one
# (--untracked-files=all), so that a file written into a directory that was already
# untracked is seen too. Exit 77 (skipped) outside a git work tree, e.g. in the tree that
# the Debian package is built from.
set -eu
mode=$1 source=$2 snapshot=$3

if ! git -C "$source" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "$source is not a git work tree: nothing to compare"
  exit 77
fi
status() {
  git -C "$source" status --porcelain=v1 --untracked-files=all | LC_ALL=C sort
}

case "$mode" in
  snapshot)
    status >"$snapshot.tmp"
    mv "$snapshot.tmp" "$snapshot"
    echo "git status before the suite: $(wc -l <"$snapshot") entries (changes of the developer's, left alone)"
    ;;
  compare)
    if [ ! -f "$snapshot" ]; then
      echo "no snapshot $snapshot: the fixture's setup (tree_status_before) did not run"
      exit 1
    fi
    new=$(status | LC_ALL=C comm -13 "$snapshot" -)
    if [ -n "$new" ]; then
      echo "git status shows what it did not before the suite: a test wrote into the source tree"
      echo "(or a file was edited while the suite ran):"
      echo "$new"
      echo "Write under the build directory or \$TMPDIR instead, or ignore what a run must leave (.gitignore)."
      exit 1
    fi
    echo "ok: git status shows nothing new since the suite started"
    ;;
  *)
    echo "usage: git_status.sh snapshot|compare SOURCE FILE" >&2
    exit 2
    ;;
esac
