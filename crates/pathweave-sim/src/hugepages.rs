//! Transparent huge pages for the heap of a many-flow run.
//!
//! A run of thousands of flows reads its per-flow records in no order the caches or the TLB
//! can follow: at 10,000 flows some 150 MB of records, tens of thousands of 4 kB pages, each
//! packet touching a few dozen of them. Where the kernel hands out 2 MB pages only on request
//! (`/sys/kernel/mm/transparent_hugepage/enabled` set to `madvise`, the usual default), every
//! such read can also miss the TLB, and on a virtual machine a page walk goes through two
//! levels of tables. [`HugePages`] is a global allocator that passes every request to the
//! system allocator and, once [`enable`]d, asks the kernel (`madvise(MADV_HUGEPAGE)`) for
//! huge pages behind the heap as it grows and behind every large block. It changes no
//! allocation and so no result: only which pages back the memory.
//!
//! A binary opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: pathweave_sim::hugepages::HugePages = pathweave_sim::hugepages::HugePages;
//! ```
//!
//! and [`crate::Simulation::new`] enables it for runs of at least [`MIN_FLOWS`] flows or
//! subflows ([`wanted`]; smaller runs stay in the caches and the TLB's reach, where huge
//! pages would only add resident memory). Without the
//! allocator installed, or off glibc Linux, [`enable`] does nothing.
//!
//! How the heap gets huge pages: the kernel backs a 2 MB-aligned range with a huge page when
//! the range is first touched after the advice, so the advice must come before the memory is
//! written. glibc's allocator writes a block's header as it hands the block out, so a range
//! advised after the fact stays in small pages. [`enable`] therefore makes glibc grow its
//! heap 32 MB beyond each request (`M_TOP_PAD`; untouched memory is not resident), and after
//! each allocation the allocator advises the heap's new whole 2 MB ranges up to the program
//! break, which lie ahead of anything written. Large blocks (1 MB or more, which glibc maps
//! on their own) get their interior advised as they are returned.
//!
//! Only the main thread's heap is advised: a simulation run on another thread (a Dask
//! worker's, say) takes its small blocks from one of glibc's per-thread arenas and keeps
//! small pages there. The command line and `pathweave sweep`'s worker processes run
//! simulations on their main threads.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Runs with at least this many flows enable huge pages (see the module's text). The
/// 10,000-flow dumbbells gain 9-13 % (docs/performance.md); 1,000 multipath connections, whose
/// 17 MB of records largely stay in the last-level cache, gained nothing measurable.
pub const MIN_FLOWS: usize = 4096;

/// Whether a run of `flows` flows with `subflows` subflows in all should ask for huge pages:
/// at least [`MIN_FLOWS`] of either. A FatTree of k = 16 under permutation traffic with 8
/// subflows per connection (1,024 connections, 8,192 subflows, about 400 MB) spent 13 % less
/// CPU time with them (three paired runs of its first 30 ms); k = 8 (1,024 subflows, 41 MB)
/// and 1,000 two-subflow connections stay below the bound.
pub fn wanted(flows: usize, subflows: usize) -> bool {
    flows >= MIN_FLOWS || subflows >= MIN_FLOWS
}

/// The size of a transparent huge page on x86-64 and the usual arm64 configuration.
const HUGE: usize = 2 << 20;
/// Blocks of at least this size have their own interior advised.
const LARGE: usize = 1 << 20;
/// How far glibc grows its heap beyond a request once enabled.
const TOP_PAD: i32 = 32 << 20;

static ENABLED: AtomicBool = AtomicBool::new(false);
/// The end of the heap range advised so far (0: none yet).
static ADVISED: AtomicUsize = AtomicUsize::new(0);
/// Whether a [`HugePages`] allocator served an allocation, that is, is installed.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The global allocator described in the module's text.
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePages;

/// Ask for huge pages from now on, if the allocator is installed and the platform has them.
/// Returns whether it did. Calling it again changes nothing.
pub fn enable() -> bool {
    if !INSTALLED.load(Ordering::Relaxed) || !sys::AVAILABLE {
        return false;
    }
    if !ENABLED.swap(true, Ordering::Relaxed) {
        sys::pad_heap(TOP_PAD);
    }
    true
}

/// Whether [`enable`] has taken effect.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The 2 MB-aligned ranges inside `[start, end)`: the first boundary at or after `start`
/// and the last at or before `end`, if the one precedes the other.
fn whole_huge_pages(start: usize, end: usize) -> Option<(usize, usize)> {
    let from = start.checked_add(HUGE - 1)? & !(HUGE - 1);
    let to = end & !(HUGE - 1);
    (to > from).then_some((from, to))
}

/// Advise what a returned block of `size` bytes at `p` newly exposes.
#[inline]
fn after_alloc(p: *mut u8, size: usize) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let start = p as usize;
    if size >= LARGE {
        if let Some((from, to)) = whole_huge_pages(start, start.saturating_add(size)) {
            sys::advise(from, to - from);
        }
        return;
    }
    let brk = sys::program_break();
    let done = ADVISED.load(Ordering::Relaxed);
    if brk < done {
        // The heap shrank (glibc trimmed it): what grows back is new memory, to be advised
        // again from the break on.
        ADVISED.store(brk & !(HUGE - 1), Ordering::Relaxed);
        return;
    }
    // Nothing new in the heap, or a block outside it (a small block from another arena, which
    // glibc maps for other threads): the heap's advice stays as it is.
    if brk == done || start >= brk {
        return;
    }
    // The first time, from the block just returned: the heap below it is written already.
    let from = if done == 0 { start } else { done };
    if let Some((from, to)) = whole_huge_pages(from, brk) {
        sys::advise(from, to - from);
        ADVISED.fetch_max(to, Ordering::Relaxed);
    }
}

// SAFETY: every request is passed unchanged to `System`, whose blocks are returned as they
// are; the advice only changes which pages back memory the process already owns.
unsafe impl GlobalAlloc for HugePages {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is the same as `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        if !p.is_null() {
            after_alloc(p, layout.size());
        }
        p
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            after_alloc(p, layout.size());
        }
        p
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the rest is the caller's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            after_alloc(p, new_size);
        }
        p
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod sys {
    use std::ffi::{c_int, c_void};

    pub(super) const AVAILABLE: bool = true;

    /// `MADV_HUGEPAGE` and glibc's `M_TOP_PAD` (`<sys/mman.h>`, `<malloc.h>`).
    const MADV_HUGEPAGE: c_int = 14;
    const M_TOP_PAD: c_int = -2;

    extern "C" {
        fn sbrk(increment: isize) -> *mut c_void;
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }

    /// The current end of the heap.
    pub(super) fn program_break() -> usize {
        // SAFETY: `sbrk(0)` only reads the break (glibc keeps it cached).
        unsafe { sbrk(0) as usize }
    }

    /// Advise huge pages for `[addr, addr + len)`, which is mapped and 2 MB-aligned. A
    /// refusal (a kernel without transparent huge pages, or with them off) is ignored: the
    /// memory then stays in small pages, as without the advice.
    pub(super) fn advise(addr: usize, len: usize) {
        // SAFETY: the range lies inside memory the process owns (a block the allocator just
        // returned, or the heap below the break), and MADV_HUGEPAGE changes no contents.
        unsafe {
            madvise(addr as *mut c_void, len, MADV_HUGEPAGE);
        }
    }

    /// Have glibc grow its heap `pad` bytes beyond each request.
    pub(super) fn pad_heap(pad: c_int) {
        // SAFETY: `mallopt` takes the allocator's lock itself; M_TOP_PAD accepts any
        // non-negative size.
        unsafe {
            mallopt(M_TOP_PAD, pad);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod sys {
    pub(super) const AVAILABLE: bool = false;
    pub(super) fn program_break() -> usize {
        usize::MAX
    }
    pub(super) fn advise(_addr: usize, _len: usize) {}
    pub(super) fn pad_heap(_pad: std::ffi::c_int) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: usize = 1 << 20;

    #[test]
    fn whole_huge_pages_lie_inside_the_range() {
        assert_eq!(whole_huge_pages(0, 2 * MB), Some((0, 2 * MB)));
        assert_eq!(whole_huge_pages(1, 4 * MB + 5), Some((2 * MB, 4 * MB)));
        assert_eq!(whole_huge_pages(1, 2 * MB), None);
        assert_eq!(whole_huge_pages(3 * MB, 4 * MB), None);
        assert_eq!(whole_huge_pages(usize::MAX - 5, usize::MAX), None);
    }

    #[test]
    fn many_flows_or_subflows_want_huge_pages() {
        // The 10,000-flow dumbbells and a k = 16 FatTree of 8-subflow connections do; the
        // 8-flow dumbbell, 1,000 two-subflow connections and a k = 8 FatTree do not.
        assert!(wanted(10_000, 10_000));
        assert!(wanted(1024, 8192));
        assert!(!wanted(8, 8));
        assert!(!wanted(1000, 2000));
        assert!(!wanted(128, 1024));
    }

    #[test]
    fn without_the_allocator_installed_enable_does_nothing() {
        // The unit tests run on the default allocator.
        assert!(!enable());
        assert!(!enabled());
    }
}
