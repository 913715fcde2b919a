//! `pwref_reno`: the kernel's own Reno behind a BPF `struct_ops` table
//! (`src/bpf/reno_ref.bpf.c`), so that the BPF run-time statistics can time kernel Reno's
//! increase beside a `pw_*` controller's on the same transfer (`make bench-kernel`).
//!
//! It registers while the [`ReferenceReno`] lives and unregisters when it drops or the
//! process ends (nothing is pinned).

use crate::error::KernelError;
use crate::loader::{available, bpf_err, preflight};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Link;
use std::mem::MaybeUninit;

// The generated skeleton of reno_ref.bpf.c.
bpf_skeleton!(skel, "reno_ref.skel.rs");

use skel::{RenoRefSkel, RenoRefSkelBuilder};

/// The name the reference Reno registers under.
pub const NAME: &str = "pwref_reno";

/// The registered reference Reno.
pub struct ReferenceReno {
    _skel: RenoRefSkel<'static>,
    _link: Link,
}

impl ReferenceReno {
    /// Loads and registers `pwref_reno` (root, BTF, struct_ops support); refuses if the name
    /// is registered already.
    pub fn register() -> Result<ReferenceReno, KernelError> {
        preflight()?;
        if available().iter().any(|n| n == NAME) {
            return Err(KernelError::NameTaken(NAME.to_string()));
        }
        // As in the loader: the skeleton borrows its object for its whole life, so the few
        // bytes are leaked on purpose.
        let object: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let open = RenoRefSkelBuilder::default()
            .open(object)
            .map_err(bpf_err("opening the reference Reno"))?;
        let mut skel = open
            .load()
            .map_err(bpf_err("loading the reference Reno (verifier)"))?;
        let link = skel
            .maps
            .pwref_reno
            .attach_struct_ops()
            .map_err(bpf_err(format!("registering {NAME}")))?;
        Ok(ReferenceReno {
            _skel: skel,
            _link: link,
        })
    }
}
