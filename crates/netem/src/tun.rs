//! TUN devices for the userspace emulator.
//!
//! Each device is opened by a thread that has entered the target namespace, because the kernel
//! creates a TUN device in the network namespace of the task that opens it. The settings avoid
//! the TUN pitfalls: `IFF_NO_PI` (raw IP packets), one queue, no `IFF_VNET_HDR` offload (which
//! would hand over 64 KiB GSO bundles that must not be lost or delayed as one packet), and a
//! long `tx_queue_len` because the device drops silently when its queue is full.
//! The device is not persistent: it vanishes when its file descriptor closes, including when
//! the process is killed.

use std::net::Ipv4Addr;

use tun_rs::{DeviceBuilder, SyncDevice};

use crate::error::NetemError;
use crate::{cmd, netns};

/// Name of the TUN device inside each namespace (namespaces keep it from clashing).
pub const TUN_NAME: &str = "rpa-tun";

/// IPv6 would send router solicitations and MLD reports through the emulator; our links are
/// IPv4 only. Writing under /proc/sys/net acts on the writing thread's namespace.
pub(crate) fn disable_ipv6() {
    for scope in ["all", "default"] {
        let path = format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6");
        // Absent when the kernel has no IPv6, which is just as good.
        let _ = std::fs::write(path, "1");
    }
}

/// Creates the TUN device in `namespace` with `local` <-> `peer` point-to-point addresses,
/// brings it up, and returns it in non-blocking mode; `offload` makes it hand over and take GSO
/// bundles behind a virtio-net header.
pub(crate) fn create_tun(
    namespace: &str,
    mtu: u32,
    tx_queue_len: u32,
    local: Ipv4Addr,
    peer: Ipv4Addr,
    offload: bool,
) -> Result<SyncDevice, NetemError> {
    let device = netns::in_namespace(namespace, || {
        disable_ipv6();
        DeviceBuilder::new()
            .name(TUN_NAME)
            .mtu(mtu.min(u16::MAX as u32) as u16)
            .packet_information(false)
            .multi_queue(false)
            // With offloads (granularity "offload"): IFF_VNET_HDR and TUNSETOFFLOAD (checksum,
            // TSO4/6, USO4/6 where the kernel has it), so reads and writes carry a virtio-net
            // header and GSO bundles of up to 64 KiB.
            .offload(offload)
            .tx_queue_len(tx_queue_len)
            .build_sync()
    })?
    .map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV) {
            NetemError::NoTun {
                detail: format!("opening /dev/net/tun for namespace {namespace}: {e}"),
            }
        } else {
            NetemError::io(
                format!("creating TUN device {TUN_NAME} in namespace {namespace}"),
                e,
            )
        }
    })?;
    device
        .set_nonblocking(true)
        .map_err(|e| NetemError::io(format!("making {TUN_NAME} in {namespace} non-blocking"), e))?;
    cmd::ip_batch(
        namespace,
        &format!(
            "addr add {local}/32 peer {peer}/32 dev {TUN_NAME}\n\
             link set dev {TUN_NAME} up\n"
        ),
    )?;
    Ok(device)
}
