//! The I/O shell of rpcarena's link emulator: client and server in network namespaces of their
//! own, joined by a plain veth, kernel netem on a veth, or two TUN devices with one forwarding
//! thread per direction running the pure core (`rpcarena-netem-core`).
//!
//! - [`Topology`] (per run or per sample): two namespaces named `rpa-<pid>-...` and the link
//!   between them, built from a [`TopologyConfig`]. Dropping it stops and joins the forwarding
//!   threads, deletes the TUN devices and the namespaces; [`Topology::check_after_sample`]
//!   verifies that the devices dropped nothing on their own.
//! - [`leftovers`] and [`remove_leftovers`] clean up after killed runs; [`doctor()`] says what
//!   the host supports.
//! - [`timing`]: the clocks and sleep-then-spin waits the forwarders (and netcheck's probes) use.
//!
//! The data a topology describes itself with, and the emulator it runs, live in
//! `rpcarena-netem-core`; this crate only does the I/O.
//!
//! # Example
//!
//! A sample on an emulated network (needs root and /dev/net/tun):
//!
//! ```no_run
//! use rpcarena_netem::{Side, Topology, TopologyConfig};
//! use rpcarena_netem_core::{EmulatorChoice, profile_by_name};
//!
//! let profile = profile_by_name("regional-wan")?;
//! let mut topo = Topology::create(&TopologyConfig::emulated(profile, EmulatorChoice::Auto, 7))?;
//! let mut server = std::process::Command::new(&topo.exec_prefix(Side::Server)[0]);
//! server.args(&topo.exec_prefix(Side::Server)[1..]).arg("my-server");
//! // ... spawn peers, run the sample ...
//! topo.check_after_sample()?; // devices dropped nothing on their own, threads alive
//! let manifest_entry = serde_json::to_string(topo.info())?;
//! drop(topo); // threads joined, TUN devices and namespaces gone
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod cmd;
pub mod doctor;
pub mod error;
mod forwarder;
mod kernel;
pub mod netns;
pub mod privileges;
pub mod sched;
pub mod timing;
pub mod topology;
mod tun;

pub use doctor::{BackendSupport, DoctorCheck, DoctorReport, doctor};
pub use error::{DeviceDrop, NetemError};
pub use kernel::kernel_netem_support;
pub use netns::{Leftover, enter_namespace, in_namespace, leftovers, remove_leftovers};
pub use topology::{
    CLIENT_ADDR, NetworkRequest, SERVER_ADDR, Side, Topology, TopologyConfig, resolve_emulator,
};
