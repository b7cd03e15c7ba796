//! The pure core of rpcarena's link emulator: no clock, no I/O, no devices.
//!
//! - [`emulator`]: one direction of a link with netem's rules (loss first, then the queue limit
//!   counting every held packet, then delay and jitter, with a rate
//!   `tts = max(now + delay, tts of the last held packet) + serialization`). It is fed packets
//!   with arrival times and polled for releases, and tested on a virtual clock. This is where a
//!   packet is delayed.
//! - [`profile`]: what each direction does, as serializable data with units in the field names
//!   (`*_ns`, `rate_bps`, fractions); [`profile_by_name`] knows `lan`, `regional-wan`,
//!   `continental`, `lossy-mobile` and `satellite`.
//! - [`info`]: the emulated network as the artifacts record it: emulator choice and backend,
//!   forwarder timing, the topology description and the counters checked after each sample.
//! - [`lateness`]: the forwarders' release-lateness histogram.
//!
//! The shell that runs this core between two TUN devices in network namespaces is
//! `rpcarena-netem`; the measurement of how well it keeps its promises is `rpcarena-netcheck`.
//!
//! # Example
//!
//! 100 Mbit/s, 15 ms, two packets arriving together leave one serialization time apart.
//!
//! ```
//! use rpcarena_netem_core::{DirectionSpec, LinkEmulator, Verdict};
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
//! # Ok::<(), rpcarena_netem_core::ProfileError>(())
//! ```

pub mod emulator;
pub mod error;
pub mod info;
pub mod lateness;
pub mod profile;
pub mod vnet;

pub use emulator::{Counters, DelaySampler, LinkEmulator, Released, Verdict};
pub use error::ProfileError;
pub use info::{
    BackendKind, DeviceCounters, DirectionSeeds, DirectionStats, EmulatorChoice, EmulatorInfo,
    LinkStats, LinkWindow, SampleCheck, ThreadPriority, TimingOptions, TopologyInfo,
};
pub use lateness::LatencyHistogram;
pub use profile::{
    DelayDistribution, Direction, DirectionOverrides, DirectionSpec, Granularity, LinkProfile,
    LossModel, PROFILE_NAMES, Reorder, profile_by_name,
};
