//! Process measurements for the harness. A global allocator that counts live heap bytes and remembers the peak, so the harness can
//! tell an input that makes the parser or builder allocate without bound. Past the limit it
//! still serves requests (the input is reported once it returns) up to four times the limit,
//! beyond which it refuses, and the process aborts with Rust's allocation-failure message.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The counting allocator; install it with `#[global_allocator]`.
pub(crate) struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
static EXCEEDED: AtomicBool = AtomicBool::new(false);

/// Inputs whose live heap goes past `bytes` are reported.
pub(crate) fn set_limit(bytes: u64) {
    LIMIT.store(
        usize::try_from(bytes).unwrap_or(usize::MAX),
        Ordering::Relaxed,
    );
}

/// Start measuring the peak afresh (before each input).
pub(crate) fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// The largest live heap since `reset_peak`.
pub(crate) fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Whether the live heap went past the limit since `clear_exceeded`.
pub(crate) fn exceeded() -> bool {
    EXCEEDED.load(Ordering::Relaxed)
}

pub(crate) fn clear_exceeded() {
    EXCEEDED.store(false, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's layout and pointer unchanged;
// the counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size();
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        let limit = LIMIT.load(Ordering::Relaxed);
        if live > limit {
            EXCEEDED.store(true, Ordering::Relaxed);
            if live / 4 > limit {
                LIVE.fetch_sub(size, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
        }
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: same layout as requested.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            LIVE.fetch_sub(size, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// A thread's CPU clock, readable from another thread (the watchdog reads the main thread's).
#[derive(Clone, Copy)]
pub(crate) struct CpuClock(libc::clockid_t);

impl CpuClock {
    /// The calling thread's clock.
    pub(crate) fn this_thread() -> CpuClock {
        let mut id: libc::clockid_t = libc::CLOCK_THREAD_CPUTIME_ID;
        // SAFETY: `pthread_self` is always valid for the caller; `id` is writable.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        if rc != 0 {
            id = libc::CLOCK_THREAD_CPUTIME_ID; // then only the thread itself can read it
        }
        CpuClock(id)
    }

    /// CPU time the thread has used. Wall time would count the time other processes held the
    /// CPU; this does not.
    pub(crate) fn now(self) -> std::time::Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and the clock id came from the kernel.
        let rc = unsafe { libc::clock_gettime(self.0, &mut ts) };
        if rc != 0 {
            return std::time::Duration::ZERO;
        }
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}
