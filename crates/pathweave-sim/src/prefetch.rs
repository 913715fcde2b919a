//! A software prefetch hint: ask the cache for a line that the event loop will read a few
//! events from now, so that the misses of several events overlap instead of each waiting in
//! turn (see `Simulation::run_until`). A hint only: it never faults, changes no memory and no
//! result, and compiles to nothing on targets other than x86-64.
#![allow(unsafe_code)]

/// Start loading the cache line holding `p` into every cache level.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetch` is a hint to the memory system: it reads nothing into a register,
    // writes nothing and does not fault on any address, valid or not (the intrinsic is
    // `unsafe` only because it takes a raw pointer).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
