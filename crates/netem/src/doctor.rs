//! `doctor`: which network backends this host supports, why not, and what killed runs left.
//!
//! Every check is done for real where it can be (a scratch namespace, a scratch TUN device, netem
//! on a scratch veth), because capabilities, seccomp filters and missing kernel modules only show
//! when one tries.

use std::fmt;

use serde::{Deserialize, Serialize};

use rpcarena_netem_core::BackendKind;

use crate::netns::{self, Leftover};
use crate::{cmd, kernel, privileges};

/// One thing doctor looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoctorCheck {
    /// Short name, e.g. `tun device`.
    pub name: String,
    /// Whether it is usable.
    pub ok: bool,
    /// What was seen, or what to do about it.
    pub detail: String,
}

/// Whether a backend can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendSupport {
    /// The backend.
    pub backend: BackendKind,
    /// Whether it can run here.
    pub supported: bool,
    /// What is missing when it cannot.
    pub missing: Vec<String>,
}

/// Everything doctor found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// Individual checks, in the order they ran.
    pub checks: Vec<DoctorCheck>,
    /// Per-backend verdicts (loopback needs nothing and is not listed).
    pub backends: Vec<BackendSupport>,
    /// What `emulator = "auto"` resolves to here, if anything.
    pub auto_emulator: Option<BackendKind>,
    /// Namespaces left by runs that were killed.
    pub leftovers: Vec<Leftover>,
}

impl DoctorReport {
    /// Whether `backend` can run here.
    pub fn supports(&self, backend: BackendKind) -> bool {
        self.backends
            .iter()
            .any(|b| b.backend == backend && b.supported)
    }
}

fn check(name: &str, result: Result<String, String>) -> DoctorCheck {
    match result {
        Ok(detail) => DoctorCheck {
            name: name.to_string(),
            ok: true,
            detail,
        },
        Err(detail) => DoctorCheck {
            name: name.to_string(),
            ok: false,
            detail,
        },
    }
}

/// What a scratch namespace showed: whether namespaces, TUN devices and veth pairs can be made.
struct Scratch {
    namespace: Result<String, String>,
    tun: Result<String, String>,
    veth: Result<String, String>,
}

impl Scratch {
    fn not_tried() -> Scratch {
        Scratch {
            namespace: Err("not tried: needs privileges and ip".to_string()),
            tun: Err("not tried: needs a namespace and /dev/net/tun".to_string()),
            veth: Err("not tried: needs a namespace".to_string()),
        }
    }
}

/// Creates a scratch namespace, a TUN device (when `/dev/net/tun` is there) and a veth pair in
/// it, and removes it again.
fn scratch_probes(dev_tun: bool) -> Scratch {
    let mut probes = Scratch::not_tried();
    let name = format!("{}-x", netns::unique_stem());
    let mut scratch = match netns::Namespace::create(&name) {
        Ok(scratch) => scratch,
        Err(e) => {
            probes.namespace = Err(format!("could not create a namespace: {e}"));
            return probes;
        }
    };
    probes.namespace = Ok(format!("created and removed scratch namespace {name}"));
    if dev_tun {
        probes.tun = netns::in_namespace(&name, || {
            tun_rs::DeviceBuilder::new()
                .name("rpa-probe")
                .packet_information(false)
                .build_sync()
                .map(drop)
        })
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| format!("opening a TUN device failed: {e}")))
        .map(|()| "created a scratch TUN device".to_string());
    }
    probes.veth = cmd::ip(&[
        "-n", &name, "link", "add", "rpa-p0", "type", "veth", "peer", "name", "rpa-p1",
    ])
    .map(|_| "created a scratch veth pair".to_string())
    .map_err(|e| format!("veth creation failed: {e}"));
    if let Err(e) = scratch.remove() {
        probes.namespace = Err(format!("created {name} but could not remove it: {e}"));
    }
    probes
}

/// Whether `backend` can run, given the checks it needs: the failed ones are what is missing.
fn support(backend: BackendKind, needs: &[&Result<String, String>]) -> BackendSupport {
    let missing: Vec<String> = needs
        .iter()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    BackendSupport {
        backend,
        supported: missing.is_empty(),
        missing,
    }
}

/// Runs every check. Creates and removes one scratch namespace; never fails as a whole.
pub fn doctor() -> DoctorReport {
    let mut checks = Vec::new();

    let privileges = privileges::check()
        .map(|()| "CAP_NET_ADMIN and CAP_SYS_ADMIN present".to_string())
        .map_err(|e| e.to_string());
    checks.push(check("privileges", privileges.clone()));

    let ip = cmd::find_tool("ip")
        .ok_or_else(|| "`ip` not found; install iproute2".to_string())
        .and_then(|path| {
            cmd::run(&path, &["-V"], None)
                .map(|v| format!("{} ({})", path.display(), v.trim()))
                .map_err(|e| e.to_string())
        });
    checks.push(check("ip (iproute2)", ip.clone()));

    let dev_tun = if std::path::Path::new("/dev/net/tun").exists() {
        Ok("/dev/net/tun present".to_string())
    } else {
        Err(
            "/dev/net/tun missing: load the tun module or pass the device into the container"
                .to_string(),
        )
    };
    checks.push(check("/dev/net/tun", dev_tun.clone()));

    let Scratch {
        namespace: namespace_ok,
        tun: tun_ok,
        veth: veth_ok,
    } = if privileges.is_ok() && ip.is_ok() {
        scratch_probes(dev_tun.is_ok())
    } else {
        Scratch::not_tried()
    };
    checks.push(check("network namespaces", namespace_ok.clone()));
    checks.push(check("tun device", tun_ok.clone()));
    checks.push(check("veth", veth_ok.clone()));

    let slack = if crate::timing::set_precise_timer_slack() {
        Ok("PR_SET_TIMERSLACK 1 ns accepted".to_string())
    } else {
        Err("PR_SET_TIMERSLACK refused: release timing will be coarser".to_string())
    };
    checks.push(check("timer slack", slack));

    let tc = cmd::find_tool("tc")
        .map(|p| p.display().to_string())
        .ok_or_else(|| "`tc` not found; install iproute2".to_string());
    checks.push(check("tc", tc));
    let ethtool = cmd::find_tool("ethtool")
        .map(|p| p.display().to_string())
        .ok_or_else(|| "`ethtool` not found; install ethtool (kernel backend only)".to_string());
    checks.push(check("ethtool", ethtool));
    let kernel = if namespace_ok.is_ok() && veth_ok.is_ok() {
        kernel::kernel_netem_support().map(|()| "netem qdisc added to a scratch veth".to_string())
    } else {
        Err("not tried: needs namespaces and veth".to_string())
    };
    checks.push(check("kernel netem", kernel.clone()));

    let backends = vec![
        support(
            BackendKind::Netns,
            &[&privileges, &ip, &namespace_ok, &veth_ok],
        ),
        support(
            BackendKind::Userspace,
            &[&privileges, &ip, &namespace_ok, &dev_tun, &tun_ok],
        ),
        support(
            BackendKind::Kernel,
            &[&privileges, &ip, &namespace_ok, &veth_ok, &kernel],
        ),
    ];
    let supported = |b: BackendKind| backends.iter().any(|s| s.backend == b && s.supported);
    let auto_emulator = if supported(BackendKind::Kernel) {
        Some(BackendKind::Kernel)
    } else if supported(BackendKind::Userspace) {
        Some(BackendKind::Userspace)
    } else {
        None
    };

    let leftovers = match netns::leftovers() {
        Ok(l) => l,
        Err(e) => {
            checks.push(check("leftovers", Err(format!("could not list: {e}"))));
            Vec::new()
        }
    };

    DoctorReport {
        checks,
        backends,
        auto_emulator,
        leftovers,
    }
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "network emulation doctor")?;
        for c in &self.checks {
            writeln!(
                f,
                "  [{}] {:<20} {}",
                if c.ok { " ok " } else { "FAIL" },
                c.name,
                c.detail
            )?;
        }
        writeln!(f, "backends:")?;
        writeln!(f, "  loopback   supported")?;
        for b in &self.backends {
            if b.supported {
                writeln!(f, "  {:<10} supported", b.backend.to_string())?;
            } else {
                writeln!(
                    f,
                    "  {:<10} NOT supported: {}",
                    b.backend.to_string(),
                    b.missing.join("; ")
                )?;
            }
        }
        match self.auto_emulator {
            Some(b) => writeln!(f, "emulator = \"auto\" uses: {b}")?,
            None => writeln!(f, "emulator = \"auto\" cannot run here")?,
        }
        if self.leftovers.is_empty() {
            writeln!(f, "leftovers: none")
        } else {
            writeln!(
                f,
                "leftovers (creator gone; remove_leftovers() deletes them):"
            )?;
            for l in &self.leftovers {
                writeln!(
                    f,
                    "  {} (pid {}) devices [{}] processes {:?}",
                    l.namespace,
                    l.creator_pid,
                    l.devices.join(", "),
                    l.processes
                )?;
            }
            Ok(())
        }
    }
}
