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
    let ok = result.is_ok();
    DoctorCheck {
        name: name.to_string(),
        ok,
        detail: result.unwrap_or_else(|detail| detail),
    }
}

/// Pushes `result` onto `checks` under `name` and hands it back for the verdicts.
fn record(
    checks: &mut Vec<DoctorCheck>,
    name: &str,
    result: Result<String, String>,
) -> Result<String, String> {
    checks.push(check(name, result.clone()));
    result
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
    let found = Findings::probe(&mut checks);
    let backends = found.backends();
    let auto_emulator = auto_emulator(&backends);
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

/// The check results the backend verdicts depend on.
struct Findings {
    privileges: Result<String, String>,
    ip: Result<String, String>,
    dev_tun: Result<String, String>,
    scratch: Scratch,
    kernel: Result<String, String>,
}

impl Findings {
    /// Runs the checks in report order, pushing each onto `checks`.
    fn probe(checks: &mut Vec<DoctorCheck>) -> Findings {
        let privileges = record(checks, "privileges", privileges_probe());
        let ip = record(checks, "ip (iproute2)", ip_probe());
        let dev_tun = record(checks, "/dev/net/tun", dev_tun_probe());
        let scratch = if privileges.is_ok() && ip.is_ok() {
            scratch_probes(dev_tun.is_ok())
        } else {
            Scratch::not_tried()
        };
        checks.push(check("network namespaces", scratch.namespace.clone()));
        checks.push(check("tun device", scratch.tun.clone()));
        checks.push(check("veth", scratch.veth.clone()));
        checks.push(check("timer slack", timer_slack_probe()));
        let tc = tool_path("tc", "`tc` not found; install iproute2");
        checks.push(check("tc", tc));
        let ethtool = tool_path(
            "ethtool",
            "`ethtool` not found; install ethtool (kernel backend only)",
        );
        checks.push(check("ethtool", ethtool));
        let kernel = record(checks, "kernel netem", kernel_probe(&scratch));
        Findings {
            privileges,
            ip,
            dev_tun,
            scratch,
            kernel,
        }
    }

    /// What each backend needs, and whether it has it.
    fn backends(&self) -> Vec<BackendSupport> {
        let Findings {
            privileges,
            ip,
            dev_tun,
            scratch,
            kernel,
        } = self;
        let (namespace, tun, veth) = (&scratch.namespace, &scratch.tun, &scratch.veth);
        vec![
            support(BackendKind::Netns, &[privileges, ip, namespace, veth]),
            support(
                BackendKind::Userspace,
                &[privileges, ip, namespace, dev_tun, tun],
            ),
            support(
                BackendKind::Kernel,
                &[privileges, ip, namespace, veth, kernel],
            ),
        ]
    }
}

/// What `emulator = "auto"` picks: the kernel's netem when it works, else the userspace one.
fn auto_emulator(backends: &[BackendSupport]) -> Option<BackendKind> {
    let supported = |b: BackendKind| backends.iter().any(|s| s.backend == b && s.supported);
    [BackendKind::Kernel, BackendKind::Userspace]
        .into_iter()
        .find(|&b| supported(b))
}

fn privileges_probe() -> Result<String, String> {
    privileges::check()
        .map(|()| "CAP_NET_ADMIN and CAP_SYS_ADMIN present".to_string())
        .map_err(|e| e.to_string())
}

fn ip_probe() -> Result<String, String> {
    cmd::find_tool("ip")
        .ok_or_else(|| "`ip` not found; install iproute2".to_string())
        .and_then(|path| {
            cmd::run(&path, &["-V"], None)
                .map(|v| format!("{} ({})", path.display(), v.trim()))
                .map_err(|e| e.to_string())
        })
}

fn dev_tun_probe() -> Result<String, String> {
    if std::path::Path::new("/dev/net/tun").exists() {
        Ok("/dev/net/tun present".to_string())
    } else {
        Err(
            "/dev/net/tun missing: load the tun module or pass the device into the container"
                .to_string(),
        )
    }
}

fn timer_slack_probe() -> Result<String, String> {
    if crate::timing::set_precise_timer_slack() {
        Ok("PR_SET_TIMERSLACK 1 ns accepted".to_string())
    } else {
        Err("PR_SET_TIMERSLACK refused: release timing will be coarser".to_string())
    }
}

/// Where `tool` is on PATH, or `missing` when it is not.
fn tool_path(tool: &str, missing: &str) -> Result<String, String> {
    cmd::find_tool(tool)
        .map(|p| p.display().to_string())
        .ok_or_else(|| missing.to_string())
}

/// Adds a netem qdisc to a scratch veth, when the scratch namespace could make one.
fn kernel_probe(scratch: &Scratch) -> Result<String, String> {
    if scratch.namespace.is_ok() && scratch.veth.is_ok() {
        kernel::kernel_netem_support().map(|()| "netem qdisc added to a scratch veth".to_string())
    } else {
        Err("not tried: needs namespaces and veth".to_string())
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
