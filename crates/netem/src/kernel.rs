//! veth pairs, and kernel netem on them where the kernel has `sch_netem`.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

use rpcarena_netem_core::{DirectionSpec, Granularity};

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

/// The offloads that decide what kernel netem sees on a veth's egress, per granularity:
/// "packet" switches segmentation (TSO, GSO) and receive (GRO) offloads off, so netem sees (and
/// delays, drops and rate-limits) wire-sized packets; "offload" switches TSO and GSO on (a
/// veth's default, set explicitly so a host's other default cannot change the result), so netem
/// sees the 64 KiB bundles, as on a veth nobody tuned.
pub(crate) fn offload_settings(granularity: Granularity) -> &'static [(&'static str, bool)] {
    match granularity {
        Granularity::Packet => &[("tso", false), ("gso", false), ("gro", false)],
        Granularity::Offload => &[("tso", true), ("gso", true)],
    }
}

/// Sets the offloads of `device` in `namespace` for `granularity` with `ethtool -K`, then reads
/// them back with `ethtool -k`: a setting the driver did not take is an error that names it.
pub(crate) fn set_offloads(
    namespace: &str,
    device: &str,
    granularity: Granularity,
) -> Result<(), NetemError> {
    let ethtool = cmd::require_tool(
        "ethtool",
        "to set TSO/GSO/GRO on the veth for kernel netem",
        "ethtool",
    )?;
    let ethtool = ethtool.to_string_lossy().into_owned();
    let wanted = offload_settings(granularity);
    let mut args = vec!["netns", "exec", namespace, &ethtool, "-K", device];
    for (name, on) in wanted {
        args.extend([*name, if *on { "on" } else { "off" }]);
    }
    cmd::ip(&args)?;
    let shown = cmd::ip(&["netns", "exec", namespace, &ethtool, "-k", device])?;
    let state = parse_offloads(&shown);
    for (name, on) in wanted {
        let long = long_offload_name(name);
        if state.get(long) != Some(on) {
            return Err(NetemError::Offloads {
                namespace: namespace.to_string(),
                device: device.to_string(),
                granularity: granularity.as_str().to_string(),
                detail: format!(
                    "`ethtool -K {device} {name} {}` did not take ({long} is {})",
                    if *on { "on" } else { "off" },
                    state
                        .get(long)
                        .map_or("not listed", |v| if *v { "on" } else { "off" }),
                ),
            });
        }
    }
    Ok(())
}

/// `ethtool -k` names the offloads `-K` takes by their short names.
fn long_offload_name(short: &str) -> &str {
    match short {
        "tso" => "tcp-segmentation-offload",
        "gso" => "generic-segmentation-offload",
        "gro" => "generic-receive-offload",
        other => other,
    }
}

/// Parses `ethtool -k` output (`name: on`, `name: off [fixed]`) into each offload's state.
fn parse_offloads(text: &str) -> std::collections::BTreeMap<&str, bool> {
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            let on = match value.split_whitespace().next()? {
                "on" => true,
                "off" => false,
                _ => return None,
            };
            Some((name.trim(), on))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ethtool_offload_states() {
        let text = "Features for rpa-c:\nrx-checksumming: on\n\
                    tcp-segmentation-offload: off\n\ttx-tcp-segmentation: off\n\
                    generic-segmentation-offload: on\ngeneric-receive-offload: off [fixed]\n\
                    highdma: on [fixed]\n";
        let state = parse_offloads(text);
        assert_eq!(state.get("tcp-segmentation-offload"), Some(&false));
        assert_eq!(state.get("generic-segmentation-offload"), Some(&true));
        assert_eq!(state.get("generic-receive-offload"), Some(&false));
        assert_eq!(state.get("Features for rpa-c"), None);
    }

    /// The kernel backend's granularity knob on a real veth (no `sch_netem` needed for this
    /// half): each granularity's settings are applied and read back, in both orders.
    #[test]
    fn each_granularity_sets_and_reads_back_the_veth_offloads() {
        if !crate::privileges::required_by_test("each_granularity_sets_the_veth_offloads") {
            return;
        }
        if cmd::find_tool("ethtool").is_none() {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI installs ethtool (.ci/run); it is missing"
            );
            println!("SKIP: ethtool is not installed (package ethtool)");
            return;
        }
        let name = format!("{}-o", netns::unique_stem());
        let _scratch = netns::Namespace::create(&name).unwrap();
        cmd::ip(&[
            "-n", &name, "link", "add", "rpa-p0", "type", "veth", "peer", "name", "rpa-p1",
        ])
        .unwrap();
        let ethtool = cmd::find_tool("ethtool").unwrap();
        let ethtool = ethtool.to_string_lossy();
        for granularity in [
            Granularity::Packet,
            Granularity::Offload,
            Granularity::Packet,
        ] {
            set_offloads(&name, "rpa-p0", granularity).unwrap();
            let shown = cmd::ip(&["netns", "exec", &name, &ethtool, "-k", "rpa-p0"]).unwrap();
            let state = parse_offloads(&shown);
            for (short, on) in offload_settings(granularity) {
                assert_eq!(
                    state.get(long_offload_name(short)),
                    Some(on),
                    "{granularity:?}: {short}\n{shown}"
                );
            }
        }
    }
}
