#pragma once
/// The Lua scripts of the lease (docs/DESIGN.md: owned renewal and release, fencing, keys,
/// the restart guard, the waiting line). Every ownership check runs inside Redis, atomically
/// with the write it guards: a holder never extends, deletes or raises the fence of a lease
/// that is not its own.
///
/// The scripts live in src/lock/lua/, one file per script; each opens with what it does, its
/// KEYS and ARGV as named locals, and its reply, element by element, by the field names of
/// its reply type (one per script, in lock/replies*.h, which its header names). Their shared
/// functions are in src/lock/lua/lib/, pulled in by "-- @include" lines. The build
/// (cmake/embed_lua.cmake) expands the includes, drops the comments and defines the objects
/// declared here; a script's text is its `source`.
/// They are the lease's logic, so they live in `lock`; the transport only sends them.
///
/// Each script runs as EVAL on its first use on a connection, by SHA after
/// (redis::AsyncConnection). A text, and so its SHA-1, changes with any edit of its file, and
/// daemons of two versions may share a key: what a script writes and answers is the contract
/// between them, never its text.

#include <vector>

#include "lock/once_scripts.h"
#include "redis/connection.h"

namespace redisgo::lock {

using redis::Script;

extern const Script kAcquireFair;      ///< lua/acquire_fair.lua
extern const Script kAcquireSlotFair;  ///< lua/acquire_slot_fair.lua
extern const Script kRenew;            ///< lua/renew.lua
extern const Script kRelease;          ///< lua/release.lua
extern const Script kReleaseFair;      ///< lua/release_fair.lua
extern const Script kUndo;             ///< lua/undo.lua
extern const Script kRaiseFence;       ///< lua/raise_fence.lua
extern const Script kInspect;          ///< lua/inspect.lua
extern const Script kPublish;          ///< lua/publish.lua
extern const Script kPassTurn;         ///< lua/pass_turn.lua
extern const Script kReadLine;         ///< lua/read_line.lua
extern const Script kPause;            ///< lua/pause.lua
extern const Script kResume;           ///< lua/resume.lua
extern const Script kReadPause;        ///< lua/read_pause.lua
extern const Script kProbeRights;      ///< lua/probe_rights.lua
extern const Script kReadRefusal;      ///< lua/read_refusal.lua
extern const Script kCheckRights;      ///< lua/check_rights.lua
extern const Script kSlotsBeyond;      ///< lua/slots_beyond.lua
extern const Script kListKey;          ///< lua/list_key.lua

/// Every script of src/lock/lua/, the once_per ones included.
extern const std::vector<const Script*> kLeaseScripts;

}  // namespace redisgo::lock
