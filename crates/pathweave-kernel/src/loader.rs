//! Loads the controllers with libbpf-rs from the skeleton build.rs generates, registers them
//! under a prefix, pins their links and maps under `/sys/fs/bpf/pathweave/PREFIX/` so they
//! outlive the process, unloads them and reports what is loaded.
//!
//! A load that is not pinned (tests, one emulation run) unregisters when [`Loaded`] drops.

use crate::error::KernelError;
use crate::maps::{self, Conn, Stat};
use crate::names::{Algorithm, Prefix, PIN_ROOT};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::path::PathBuf;

// The generated skeleton: maps, programs and the six struct_ops tables of pw.bpf.c.
bpf_skeleton!(skel, "pw.skel.rs");

use skel::{PwSkel, PwSkelBuilder};

const BTF: &str = "/sys/kernel/btf/vmlinux";
const BPFFS: &str = "/sys/fs/bpf";
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const MAP_CONNS: &str = "conns";
const MAP_WEIGHTS: &str = "bmc_weights";
const MAP_STATS: &str = "stats";
/// The pinned link of `pw_conn_close`.
const LINK_CLOSE: &str = "conn_close";

pub(crate) fn bpf_err(context: impl Into<String>) -> impl FnOnce(libbpf_rs::Error) -> KernelError {
    let context = context.into();
    move |e| KernelError::Bpf {
        context,
        source: Box::new(e),
    }
}

/// Whether the process runs with effective uid 0 (read from /proc, no unsafe call).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The congestion controls the kernel has registered.
pub fn available() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Checks what loading needs: root, BTF, struct_ops support for tcp_congestion_ops.
pub fn preflight() -> Result<(), KernelError> {
    if !is_root() {
        return Err(KernelError::NotRoot("loading"));
    }
    let btf = std::fs::read(BTF).map_err(|_| KernelError::NoBtf)?;
    let needle = b"bpf_struct_ops_tcp_congestion_ops";
    if !btf.windows(needle.len()).any(|w| w == needle) {
        return Err(KernelError::NoStructOps(
            "the kernel's BTF has no bpf_struct_ops_tcp_congestion_ops".into(),
        ));
    }
    Ok(())
}

/// Where `load` notes that it mounted the BPF file system (which holds no regular files), so
/// that `unload` unmounts it again once nothing is pinned there.
const MOUNTED_NOTE_DIR: &str = "/run/pathweave-kernel";
const MOUNTED_NOTE: &str = "/run/pathweave-kernel/mounted-bpffs";
/// What the kernel itself shows in every BPF file system (its preloaded iterators).
const BPFFS_OWN: [&str; 2] = ["maps.debug", "progs.debug"];

/// Whether the BPF file system is mounted at /sys/fs/bpf.
fn bpffs_mounted() -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(BPFFS) && l.contains(" bpf "))
}

/// Mounts the BPF file system at /sys/fs/bpf if it is not mounted, noting that it did.
fn ensure_bpffs() -> Result<(), KernelError> {
    if bpffs_mounted() {
        return Ok(());
    }
    let st = std::process::Command::new("mount")
        .args(["-t", "bpf", "bpf", BPFFS])
        .status()
        .map_err(|e| KernelError::io("running mount -t bpf", e))?;
    if st.success() {
        let noted = std::fs::create_dir_all(MOUNTED_NOTE_DIR)
            .and_then(|()| std::fs::write(MOUNTED_NOTE, format!("{BPFFS}\n")));
        if let Err(e) = noted {
            eprintln!(
                "pathweave kernel: note: mounted the BPF file system at {BPFFS} but could not \
                 note it in {MOUNTED_NOTE} ({e}); `unload` will leave it mounted"
            );
        }
        Ok(())
    } else {
        Err(KernelError::io(
            format!("mounting the BPF file system at {BPFFS}"),
            std::io::Error::other("mount failed"),
        ))
    }
}

/// The controllers of one prefix, loaded and registered by this process.
pub struct Loaded {
    prefix: Prefix,
    skel: PwSkel<'static>,
    links: Vec<(Algorithm, Link)>,
    /// `pw_conn_close` on the `inet_sock_set_state` tracepoint: records closing connections.
    closer: Link,
}

impl Loaded {
    /// Loads the programs and registers the six controllers as `PREFIX_lia` … `PREFIX_kv`.
    /// Refuses names that are registered already.
    pub fn load(prefix: &Prefix) -> Result<Loaded, KernelError> {
        preflight()?;
        let taken = available();
        for a in Algorithm::ALL {
            let name = prefix.name(a);
            if taken.contains(&name) {
                return Err(if prefix.pin_dir().join(a.suffix()).exists() {
                    KernelError::AlreadyLoaded(prefix.to_string())
                } else {
                    KernelError::NameTaken(name)
                });
            }
        }
        // The skeleton borrows its object for as long as it lives; a load lives until the
        // process ends or the value drops, so the few bytes are leaked on purpose.
        let object: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = PwSkelBuilder::default()
            .open(object)
            .map_err(bpf_err("opening the BPF object"))?;
        for a in Algorithm::ALL {
            let name = prefix.name(a);
            let ops = match a {
                Algorithm::Lia => open.struct_ops.pw_lia_mut(),
                Algorithm::Olia => open.struct_ops.pw_olia_mut(),
                Algorithm::Balia => open.struct_ops.pw_balia_mut(),
                Algorithm::Coupled => open.struct_ops.pw_coupled_mut(),
                Algorithm::Bmc => open.struct_ops.pw_bmc_mut(),
                Algorithm::Kv => open.struct_ops.pw_kv_mut(),
            };
            ops.name = [0; 16];
            for (d, s) in ops.name.iter_mut().zip(name.bytes()) {
                *d = s as _;
            }
        }
        let mut skel = open
            .load()
            .map_err(bpf_err("loading the BPF programs (verifier)"))?;
        let key = (Stat::Version as u32).to_ne_bytes();
        skel.maps
            .pw_stats
            .update(&key, &crate::PROGRAM_VERSION.to_ne_bytes(), MapFlags::ANY)
            .map_err(bpf_err("writing the program version"))?;
        let mut links = Vec::new();
        for a in Algorithm::ALL {
            let map = match a {
                Algorithm::Lia => &mut skel.maps.pw_lia,
                Algorithm::Olia => &mut skel.maps.pw_olia,
                Algorithm::Balia => &mut skel.maps.pw_balia,
                Algorithm::Coupled => &mut skel.maps.pw_coupled,
                Algorithm::Bmc => &mut skel.maps.pw_bmc,
                Algorithm::Kv => &mut skel.maps.pw_kv,
            };
            let link = map
                .attach_struct_ops()
                .map_err(bpf_err(format!("registering {}", prefix.name(a))))?;
            links.push((a, link));
        }
        let closer = skel
            .progs
            .pw_conn_close
            .attach()
            .map_err(bpf_err("attaching pw_conn_close to inet_sock_set_state"))?;
        Ok(Loaded {
            prefix: prefix.clone(),
            skel,
            links,
            closer,
        })
    }

    /// The prefix.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// Pins the links and maps so the controllers stay registered after this process.
    /// Refuses a pin directory that holds anything already (what an earlier load left, see
    /// [`check_pin_dir`]); a pin that fails undoes the ones made before it, so the load
    /// stays unpinned and unregisters when it drops.
    pub fn pin(&mut self) -> Result<PathBuf, KernelError> {
        check_pin_dir(&self.prefix)?;
        ensure_bpffs()?;
        let dir = self.prefix.pin_dir();
        let made_root = !std::path::Path::new(PIN_ROOT).exists();
        let made_dir = !dir.exists();
        std::fs::create_dir_all(&dir)
            .map_err(|e| KernelError::io(format!("creating {}", dir.display()), e))?;
        let mut pinned = Vec::new();
        let result = self.pin_all(&dir, &mut pinned);
        if result.is_err() {
            for p in pinned.iter().rev() {
                let _ = std::fs::remove_file(p);
            }
            if made_dir {
                let _ = std::fs::remove_dir(&dir);
            }
            if made_root {
                let _ = std::fs::remove_dir(PIN_ROOT);
            }
            release_bpffs();
        }
        result.map(|()| dir)
    }

    /// Pins every link and map under `dir`, recording each path pinned in `pinned`.
    fn pin_all(
        &mut self,
        dir: &std::path::Path,
        pinned: &mut Vec<PathBuf>,
    ) -> Result<(), KernelError> {
        for (a, link) in &mut self.links {
            let p = dir.join(a.suffix());
            link.pin(&p)
                .map_err(bpf_err(format!("pinning {}", p.display())))?;
            pinned.push(p);
        }
        let p = dir.join(LINK_CLOSE);
        self.closer
            .pin(&p)
            .map_err(bpf_err(format!("pinning {}", p.display())))?;
        pinned.push(p);
        let maps = [
            (MAP_CONNS, &mut self.skel.maps.pw_conns),
            (MAP_WEIGHTS, &mut self.skel.maps.pw_bmc_weights),
            (MAP_STATS, &mut self.skel.maps.pw_stats),
        ];
        for (name, map) in maps {
            let p = dir.join(name);
            map.pin(&p)
                .map_err(bpf_err(format!("pinning {}", p.display())))?;
            pinned.push(p);
        }
        Ok(())
    }

    /// Every connection entry.
    pub fn connections(&self) -> Result<Vec<Conn>, KernelError> {
        read_conns(&self.skel.maps.pw_conns)
    }

    /// The counters.
    pub fn stats(&self) -> Result<Vec<(Stat, u64)>, KernelError> {
        read_stats(&self.skel.maps.pw_stats)
    }

    /// Writes BMC weights for connection `id`.
    pub fn set_weights(&self, id: u64, w: &[u32; maps::SLOTS]) -> Result<(), KernelError> {
        write_weights(&self.skel.maps.pw_bmc_weights, id, w)
    }

    /// Runs of `pw_conn_close` the kernel skipped because the program would have nested in
    /// itself on one CPU: connection closes not recorded, whose entries a sweep then cannot
    /// reclaim (see docs/kernel.md, "How connection state lives and dies").
    pub fn closes_not_recorded(&self) -> Result<u64, KernelError> {
        let id = libbpf_rs::Program::id_from_fd(self.skel.progs.pw_conn_close.as_fd())
            .map_err(bpf_err("reading pw_conn_close's id"))?;
        Ok(libbpf_rs::query::ProgInfoIter::default()
            .find(|info| info.id == id)
            .map_or(0, |info| info.recursion_misses))
    }

    /// Writes the entry `c` at `c.key`, under the entry's lock. The controllers own this map:
    /// this is for tests that stand in for the kernel, leaving an entry as a subflow freed
    /// without `release` or an earlier connection at a reused address would.
    pub fn write_connection(&self, c: &Conn) -> Result<(), KernelError> {
        self.skel
            .maps
            .pw_conns
            .update(&c.key.to_ne_bytes(), &c.encode(), MapFlags::LOCK)
            .map_err(bpf_err("writing a connection entry"))
    }

    /// Deletes the entry at `key` and the BMC weights of connection `id`, if there are any;
    /// whether an entry was there.
    pub fn delete_connection(&self, key: u64, id: u64) -> bool {
        let _ = self.skel.maps.pw_bmc_weights.delete(&id.to_ne_bytes());
        self.skel.maps.pw_conns.delete(&key.to_ne_bytes()).is_ok()
    }

    /// The BMC weights held, by connection number.
    pub fn weights(&self) -> Result<Vec<(u64, [u32; maps::SLOTS])>, KernelError> {
        let m = &self.skel.maps.pw_bmc_weights;
        let mut out = Vec::new();
        for key in m.keys() {
            let mut k = [0u8; 8];
            if key.len() == 8 {
                k.copy_from_slice(&key);
            }
            if let Some(v) = m
                .lookup(&key, MapFlags::ANY)
                .map_err(bpf_err("reading BMC weights"))?
            {
                if let Some(w) = maps::decode_weights(&v) {
                    out.push((u64::from_ne_bytes(k), w));
                }
            }
        }
        Ok(out)
    }
}

fn read_conns<M: MapCore>(m: &M) -> Result<Vec<Conn>, KernelError> {
    let mut out = Vec::new();
    for key in m.keys() {
        // BPF_F_LOCK: a consistent copy, taken under the entry's spin lock.
        if let Some(v) = m
            .lookup(&key, MapFlags::LOCK)
            .map_err(bpf_err("reading a connection entry"))?
        {
            let mut k = [0u8; 8];
            if key.len() == 8 {
                k.copy_from_slice(&key);
            }
            if let Some(c) = Conn::decode(u64::from_ne_bytes(k), &v) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

fn read_stats<M: MapCore>(m: &M) -> Result<Vec<(Stat, u64)>, KernelError> {
    let mut out = Vec::new();
    for s in Stat::ALL {
        let v = m
            .lookup(&(s as u32).to_ne_bytes(), MapFlags::ANY)
            .map_err(bpf_err("reading the counters"))?
            .unwrap_or_default();
        let mut b = [0u8; 8];
        if v.len() == 8 {
            b.copy_from_slice(&v);
        }
        out.push((s, u64::from_ne_bytes(b)));
    }
    Ok(out)
}

fn write_weights<M: MapCore>(m: &M, id: u64, w: &[u32; maps::SLOTS]) -> Result<(), KernelError> {
    m.update(&id.to_ne_bytes(), &maps::encode_weights(w), MapFlags::ANY)
        .map_err(bpf_err("writing BMC weights"))
}

/// The names a load pins under its directory: one link per controller, `pw_conn_close`'s
/// link and the three maps.
fn pin_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.suffix()).collect();
    names.extend([LINK_CLOSE, MAP_CONNS, MAP_WEIGHTS, MAP_STATS]);
    names
}

/// Refuses to pin `prefix` where its pin directory holds anything already: what is left of an
/// earlier load (some pins removed by hand, or a load that failed part-way), which a new load
/// can neither complete nor replace. `unload` removes it.
pub fn check_pin_dir(prefix: &Prefix) -> Result<(), KernelError> {
    let dir = prefix.pin_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let mut found: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    let expected = pin_names();
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|n| !found.iter().any(|f| f == n))
        .collect();
    Err(KernelError::StalePins {
        dir: dir.display().to_string(),
        found: found.join(", "),
        missing: if missing.is_empty() {
            "nothing, but it is not registered".to_string()
        } else {
            missing.join(", ")
        },
        prefix: prefix.to_string(),
    })
}

/// Unmounts the BPF file system at /sys/fs/bpf if `load` mounted it and nothing is pinned
/// there any more; returns whether it did. One that was mounted before, or that holds
/// anyone's pins, stays.
pub fn release_bpffs() -> bool {
    if !std::path::Path::new(MOUNTED_NOTE).exists() {
        return false;
    }
    let forget = || {
        let _ = std::fs::remove_file(MOUNTED_NOTE);
        let _ = std::fs::remove_dir(MOUNTED_NOTE_DIR);
    };
    if !bpffs_mounted() {
        forget();
        return false;
    }
    let pinned = std::fs::read_dir(BPFFS).map_or(true, |rd| {
        rd.flatten()
            .any(|e| !BPFFS_OWN.iter().any(|own| e.file_name() == **own))
    });
    if pinned {
        return false;
    }
    let unmounted = std::process::Command::new("umount")
        .arg(BPFFS)
        .status()
        .is_ok_and(|s| s.success());
    if unmounted {
        forget();
    }
    unmounted
}

/// The maps of a pinned load.
pub struct Pinned {
    /// The prefix.
    pub prefix: Prefix,
    conns: MapHandle,
    weights: MapHandle,
    stats: MapHandle,
}

impl Pinned {
    /// Opens the maps pinned for `prefix`.
    pub fn open(prefix: &Prefix) -> Result<Pinned, KernelError> {
        let dir = prefix.pin_dir();
        if !dir.join(MAP_CONNS).exists() {
            return Err(KernelError::NotLoaded(prefix.to_string()));
        }
        let open = |n: &str| {
            let p = dir.join(n);
            MapHandle::from_pinned_path(&p).map_err(bpf_err(format!("opening {}", p.display())))
        };
        Ok(Pinned {
            prefix: prefix.clone(),
            conns: open(MAP_CONNS)?,
            weights: open(MAP_WEIGHTS)?,
            stats: open(MAP_STATS)?,
        })
    }

    /// Every connection entry.
    pub fn connections(&self) -> Result<Vec<Conn>, KernelError> {
        read_conns(&self.conns)
    }

    /// The counters.
    pub fn stats(&self) -> Result<Vec<(Stat, u64)>, KernelError> {
        read_stats(&self.stats)
    }

    /// Writes BMC weights for connection `id`.
    pub fn set_weights(&self, id: u64, w: &[u32; maps::SLOTS]) -> Result<(), KernelError> {
        write_weights(&self.weights, id, w)
    }
}

/// Removes the pins of `prefix`: the controllers unregister once no socket uses them.
/// Returns the algorithms that were pinned.
pub fn unload(prefix: &Prefix) -> Result<Vec<Algorithm>, KernelError> {
    if !is_root() {
        return Err(KernelError::NotRoot("unloading"));
    }
    let dir = prefix.pin_dir();
    if !dir.exists() {
        return Err(KernelError::NotLoaded(prefix.to_string()));
    }
    let mut removed = Vec::new();
    for a in Algorithm::ALL {
        let p = dir.join(a.suffix());
        if p.exists() {
            std::fs::remove_file(&p)
                .map_err(|e| KernelError::io(format!("removing {}", p.display()), e))?;
            removed.push(a);
        }
    }
    for n in [LINK_CLOSE, MAP_CONNS, MAP_WEIGHTS, MAP_STATS] {
        let p = dir.join(n);
        if p.exists() {
            std::fs::remove_file(&p)
                .map_err(|e| KernelError::io(format!("removing {}", p.display()), e))?;
        }
    }
    std::fs::remove_dir(&dir)
        .map_err(|e| KernelError::io(format!("removing {}", dir.display()), e))?;
    let _ = std::fs::remove_dir(PIN_ROOT); // only succeeds when no other prefix is pinned
    release_bpffs();
    Ok(removed)
}

/// One pinned prefix as `status` shows it.
#[derive(Clone, Debug)]
pub struct PrefixStatus {
    /// The prefix.
    pub prefix: Prefix,
    /// Each algorithm, whether its link is pinned, whether its name is registered, and how
    /// many connections its entries hold.
    pub algorithms: Vec<(Algorithm, bool, bool, usize)>,
    /// Connection entries in the map.
    pub connections: usize,
    /// The counters.
    pub stats: Vec<(Stat, u64)>,
}

/// A directory under /sys/fs/bpf/pathweave that `status` could not read as a load.
#[derive(Debug)]
pub struct BrokenPrefix {
    /// The directory's name.
    pub name: String,
    /// Why it could not be read.
    pub error: KernelError,
}

/// What `status` found: the loads it read and the directories it could not.
#[derive(Debug, Default)]
pub struct Status {
    /// The loads, by prefix.
    pub prefixes: Vec<PrefixStatus>,
    /// Directories that are not a readable load (a stale or partly removed one), by name.
    pub broken: Vec<BrokenPrefix>,
}

/// The status of the load pinned for `p`.
fn prefix_status(p: &Prefix, registered: &[String]) -> Result<PrefixStatus, KernelError> {
    let pinned = Pinned::open(p)?;
    let conns = pinned.connections()?;
    let algorithms = Algorithm::ALL
        .into_iter()
        .map(|a| {
            let n = conns.iter().filter(|c| c.algo == a.id()).count();
            (
                a,
                p.pin_dir().join(a.suffix()).exists(),
                registered.contains(&p.name(a)),
                n,
            )
        })
        .collect();
    Ok(PrefixStatus {
        connections: conns.len(),
        stats: pinned.stats()?,
        algorithms,
        prefix: p.clone(),
    })
}

/// The prefixes pinned under /sys/fs/bpf/pathweave (or only `only`, whose failure is the
/// error). Listing them all, a directory that cannot be read as a load is reported in
/// [`Status::broken`] and the others are still read.
pub fn status(only: Option<&Prefix>) -> Result<Status, KernelError> {
    if !is_root() {
        return Err(KernelError::NotRoot("reading the status of"));
    }
    let registered = available();
    if let Some(p) = only {
        return Ok(Status {
            prefixes: vec![prefix_status(p, &registered)?],
            broken: Vec::new(),
        });
    }
    let mut names: Vec<String> = match std::fs::read_dir(PIN_ROOT) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    let mut out = Status::default();
    for name in names {
        let read = Prefix::new(&name).and_then(|p| prefix_status(&p, &registered));
        match read {
            Ok(s) => out.prefixes.push(s),
            Err(error) => out.broken.push(BrokenPrefix { name, error }),
        }
    }
    Ok(out)
}
