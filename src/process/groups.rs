//! The process groups of the programs running now (tools, finish gates, MCP servers), kept where
//! a signal handler can reach them. Each program runs in its own group, so a terminal's Ctrl-C
//! never reaches it: when looptrace ends at once (a second Ctrl-C or SIGTERM), it takes the
//! groups with it instead of leaving them running with no one to enforce their timeouts.

use std::sync::atomic::{AtomicI32, Ordering};

/// More programs at once than any `--jobs` runs; a group beyond them goes unrecorded.
const SLOTS: usize = 1024;

/// Group ids, 0 for a free slot. Atomics, so the signal handler reads them without a lock.
static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// Records the running group `group` (the pid of its leader).
pub fn register(group: i32) {
    if group <= 0 {
        return;
    }
    for slot in &GROUPS {
        if slot
            .compare_exchange(0, group, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Forgets `group`: it was killed, and its leader is about to be reaped.
pub fn unregister(group: i32) {
    for slot in &GROUPS {
        if slot
            .compare_exchange(group, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Kills the group `group` (grandchildren included) and forgets it: its leader is reaped next,
/// after which its id may be reused. A group that is gone already is no error. Linux does not
/// hand out a group's id as a new pid while any member lives, so the id cannot name someone
/// else's processes.
pub fn kill(group: i32) {
    if group <= 0 {
        return;
    }
    // SAFETY: `kill` has no memory-safety preconditions; a group that is gone gives ESRCH.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    unregister(group);
}

/// Kills every recorded group. Safe in a signal handler: atomic loads and `kill` only.
pub fn kill_all() {
    for slot in &GROUPS {
        let group = slot.load(Ordering::Acquire);
        if group > 0 {
            // SAFETY: `kill` has no memory-safety preconditions; a group that is gone gives ESRCH.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
    }
}

/// Ends the process at once with `code` when a signal arrives and `stop` is already set (the
/// first signal sets it; see `eval`), killing the running programs' groups first. With `stop`
/// absent, the first signal ends the process so.
pub fn exit_on_signal(
    signals: &[(i32, i32)],
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
) {
    for &(signal, code) in signals {
        let stop = stop.clone();
        let action = move || {
            if stop.as_ref().is_none_or(|s| s.load(Ordering::SeqCst)) {
                kill_all();
                signal_hook::low_level::exit(code);
            }
        };
        // SAFETY: the action only loads atomics, calls `kill` and `_exit`, all async-signal-safe.
        let _ = unsafe { signal_hook::low_level::register(signal, action) };
    }
}
