//! veth pairs, and kernel netem on them where the kernel has `sch_netem`.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

use rpcarena_netem_core::DirectionSpec;

use crate::error::NetemError;
use crate::{cmd, netns};

/// veth end in the client namespace.
pub const VETH_CLIENT: &str = "rpa-c";
/// veth end in the server namespace.
pub const VETH_SERVER: &str = "rpa-s";

/// Kernel netem on a veth counts the 14-byte Ethernet header itself.
const VETH_L2_HEADER: i64 = 14;

/// Creates the veth pair directly inside the two namespaces (nothing ever appears in the
/// root namespace) with `/30` addresses and the MTU.
pub(crate) fn create_veth(
    client_ns: &str,
    server_ns: &str,
    mtu: u32,
    client_addr: Ipv4Addr,
    server_addr: Ipv4Addr,
) -> Result<(), NetemError> {
    cmd::ip(&[
        "link",
        "add",
        "name",
        VETH_CLIENT,
        "netns",
        client_ns,
        "type",
        "veth",
        "peer",
        "name",
        VETH_SERVER,
        "netns",
        server_ns,
    ])?;
    for (ns, dev, addr) in [
        (client_ns, VETH_CLIENT, client_addr),
        (server_ns, VETH_SERVER, server_addr),
    ] {
        cmd::ip_batch(
            ns,
            &format!("addr add {addr}/30 dev {dev}\nlink set dev {dev} mtu {mtu} up\n"),
        )?;
    }
    Ok(())
}

/// Switches segmentation and receive offloads off, so netem sees (and delays, drops and
/// rate-limits) wire-sized packets instead of 64 KiB bundles.
pub(crate) fn disable_offloads(namespace: &str, device: &str) -> Result<(), NetemError> {
    let ethtool = cmd::require_tool(
        "ethtool",
        "to switch TSO/GSO/GRO off on the veth for kernel netem",
        "ethtool",
    )?;
    let ethtool = ethtool.to_string_lossy().into_owned();
    cmd::ip(&[
        "netns", "exec", namespace, &ethtool, "-K", device, "tso", "off", "gso", "off", "gro",
        "off",
    ])
    .map(drop)
}

/// `tc qdisc add dev DEVICE root netem ...` inside `namespace`.
pub(crate) fn add_netem(
    namespace: &str,
    device: &str,
    spec: &DirectionSpec,
) -> Result<(), NetemError> {
    let args = spec.netem_args(-VETH_L2_HEADER);
    let mut full = vec![
        "-n", namespace, "qdisc", "add", "dev", device, "root", "netem",
    ];
    full.extend(args.iter().map(String::as_str));
    cmd::tc(&full).map(drop)
}

/// `tc [-s] qdisc show dev DEVICE` inside `namespace`.
pub(crate) fn qdisc_text(namespace: &str, device: &str, stats: bool) -> String {
    let mut args = vec!["-n", namespace];
    if stats {
        args.push("-s");
    }
    args.extend(["qdisc", "show", "dev", device]);
    match cmd::tc(&args) {
        Ok(text) => text.trim().to_string(),
        Err(e) => format!("(tc failed: {e})"),
    }
}

/// Whether kernel netem can be used here; the error says what is missing. Probed once per
/// process by adding netem to a veth in a scratch namespace.
pub fn kernel_netem_support() -> Result<(), String> {
    static RESULT: OnceLock<Result<(), String>> = OnceLock::new();
    RESULT.get_or_init(probe_kernel_netem).clone()
}

fn probe_kernel_netem() -> Result<(), String> {
    if cmd::find_tool("tc").is_none() {
        return Err("`tc` (package iproute2) is not installed".to_string());
    }
    let mut missing = Vec::new();
    if let Err(e) = probe_netem_qdisc() {
        missing.push(e);
    }
    if cmd::find_tool("ethtool").is_none() {
        missing.push(
            "`ethtool` (package ethtool) is not installed; it is needed to switch veth offloads off"
                .to_string(),
        );
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("; "))
    }
}

/// Adds netem to a veth in a scratch namespace.
fn probe_netem_qdisc() -> Result<(), String> {
    let name = format!("{}-x", netns::unique_stem());
    let mut scratch = netns::Namespace::create(&name)
        .map_err(|e| format!("could not create a scratch namespace: {e}"))?;
    let result = cmd::ip(&[
        "-n", &name, "link", "add", "rpa-p0", "type", "veth", "peer", "name", "rpa-p1",
    ])
    .map_err(|e| format!("could not create a scratch veth: {e}"))
    .and_then(|_| {
        cmd::tc(&[
            "-n", &name, "qdisc", "add", "dev", "rpa-p0", "root", "netem", "delay", "1ms",
        ])
        .map(drop)
        .map_err(|e| match e {
            NetemError::Command { stderr, .. } if stderr.contains("qdisc kind is unknown") => {
                format!("the kernel has no sch_netem (CONFIG_NET_SCH_NETEM); tc said: {stderr}")
            }
            other => format!("adding netem to a scratch veth failed: {other}"),
        })
    });
    if let Err(e) = scratch.remove() {
        let _ = writeln!(
            std::io::stderr(),
            "rpcarena-netem: could not remove scratch namespace {name}: {e}"
        );
    }
    result
}
