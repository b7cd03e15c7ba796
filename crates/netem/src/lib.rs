//! Network emulation for rpcarena: client and server in network namespaces of their own,
//! joined by a link that behaves exactly like Linux netem, and a self-check of its accuracy.
//!
//! Three layers, each usable alone:
//!
//! - [`core`]: a pure, per-direction link emulator with netem's rules (loss first, then the
//!   queue limit counting every held packet, then delay and jitter, with a rate
//!   `tts = max(now + delay, tts of the last held packet) + serialization`). No clock, no I/O:
//!   it is fed packets with arrival times and polled for releases, and tested on a virtual
//!   clock.
//! - [`shell`]: a [`Topology`] per sample or run: two namespaces named `rpa-<pid>-...`, and a
//!   plain veth ([`BackendKind::Netns`]), kernel netem on a veth ([`BackendKind::Kernel`]) or
//!   two TUN devices with one forwarding thread per direction running the core
//!   ([`BackendKind::Userspace`]). Dropping the topology removes everything; [`leftovers`]
//!   and [`remove_leftovers`] clean up after killed runs; [`doctor()`] says what the host
//!   supports.
//! - [`netcheck()`]: measures an emulated path (RTT distribution, loss, rate, queue overflow,
//!   release lateness, plain forwarding) against what the profile implies.
//!
//! Profiles are data ([`LinkProfile`], [`DirectionSpec`]), serializable with nanosecond
//! durations, bit-per-second rates and fractional probabilities; [`profile_by_name`] knows
//! `lan`, `regional-wan`, `continental`, `lossy-mobile` and `satellite`.
//!
//! # Example
//!
//! The core on a virtual clock: 100 Mbit/s, 15 ms, two packets arriving together leave one
//! serialization time apart.
//!
//! ```
//! use rpcarena_netem::{DirectionSpec, LinkEmulator, Verdict};
//!
//! let spec = DirectionSpec {
//!     delay_ns: 15_000_000,
//!     rate_bps: Some(100_000_000),
//!     ..DirectionSpec::default()
//! };
//! let mut link = LinkEmulator::new(&spec, 42)?;
//! assert!(matches!(link.handle_packet(0, 1500, "a"), Verdict::Queued { release_at_ns: 15_121_120 }));
//! assert!(matches!(link.handle_packet(0, 1500, "b"), Verdict::Queued { release_at_ns: 15_242_240 }));
//! assert_eq!(link.next_release_time(), Some(15_121_120));
//! assert!(link.poll_release(15_000_000).is_none());
//! assert_eq!(link.poll_release(15_121_120).unwrap().payload, "a");
//! # Ok::<(), rpcarena_netem::ProfileError>(())
//! ```
//!
//! A sample on an emulated network (needs root and /dev/net/tun):
//!
//! ```no_run
//! use rpcarena_netem::{EmulatorChoice, Side, Topology, TopologyConfig, profile_by_name};
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

pub mod core;
pub mod doctor;
pub mod error;
pub mod netcheck;
pub mod profile;
pub mod shell;

pub use crate::core::{Counters, LinkEmulator, Released, Verdict};
pub use doctor::{BackendSupport, DoctorCheck, DoctorReport, doctor};
pub use error::{DeviceDrop, NetemError, ProfileError};
pub use netcheck::{Figure, Judgement, NetcheckOptions, NetcheckReport, Phase, netcheck};
pub use profile::{
    DelayDistribution, Direction, DirectionOverrides, DirectionSpec, LinkProfile, LossModel,
    PROFILE_NAMES, Reorder, profile_by_name,
};
pub use shell::{
    BackendKind, DeviceCounters, DirectionSeeds, DirectionStats, EmulatorChoice, EmulatorInfo,
    LatencySummary, Leftover, LinkStats, NetworkRequest, SampleCheck, Side, ThreadPriority,
    TimingOptions, Topology, TopologyConfig, TopologyInfo, in_namespace, kernel_netem_support,
    leftovers, remove_leftovers,
};
