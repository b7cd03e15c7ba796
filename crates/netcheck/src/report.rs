//! What netcheck found: one [`Figure`] per measured quantity, expected against measured, and
//! the report's text form.

use std::fmt;

use rpcarena_netem_core::{BackendKind, EmulatorInfo, LinkProfile};
use serde::{Deserialize, Serialize};

/// How a figure came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// Within tolerance.
    Pass,
    /// Outside tolerance.
    Fail,
    /// Reported, not judged.
    Info,
}

/// One line of the report: expected against measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// Unit of `expected` and `measured`.
    pub unit: String,
    /// What the profile implies, when it implies a number.
    pub expected: Option<f64>,
    /// What was measured, when the phase produced a number.
    pub measured: Option<f64>,
    /// The tolerance in words (`+-0.100`, `<= 100`, `in [0.0925, 0.1083]`).
    pub tolerance: String,
    /// The verdict.
    pub judgement: Judgement,
    /// Anything the reader needs to interpret it.
    pub note: String,
}

/// Everything netcheck measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetcheckReport {
    /// The profile checked.
    pub profile: LinkProfile,
    /// Backend checked.
    pub backend: BackendKind,
    /// Emulator kind and version.
    pub emulator: EmulatorInfo,
    /// Kernel release of this host.
    pub kernel: String,
    /// CPUs available.
    pub cpus: usize,
    /// Whether this was a quick run.
    pub quick: bool,
    /// Master seed.
    pub seed: u64,
    /// Wall time of the whole check, s.
    pub seconds: f64,
    /// 1-minute load average before and after the check: timing figures degrade when other
    /// work competes for the CPUs, and this says how much there was.
    pub load_average: (f64, f64),
    /// What the UDP phases sent: single datagrams (granularity `packet`) or UDP GSO bundles
    /// (`offload`), in words.
    #[serde(default)]
    pub udp_probes: String,
    /// The figures, in phase order.
    pub figures: Vec<Figure>,
}

impl NetcheckReport {
    /// True when no judged figure failed.
    pub fn passed(&self) -> bool {
        self.figures.iter().all(|f| f.judgement != Judgement::Fail)
    }

    /// The figures that failed.
    pub fn failures(&self) -> Vec<&Figure> {
        self.figures
            .iter()
            .filter(|f| f.judgement == Judgement::Fail)
            .collect()
    }
}

pub(crate) fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if v.abs() < 1e-12 => "0".to_string(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.3}"),
        Some(v) => format!("{v:.4}"),
    }
}

impl fmt::Display for NetcheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "netcheck {} (loss granularity: {})",
            self.profile,
            self.profile.granularity.as_str()
        )?;
        writeln!(
            f,
            "backend {} ({}), linux {}, {} CPUs, load {:.2} -> {:.2}, seed {}, {:.1} s{}",
            self.backend,
            self.emulator.version,
            self.kernel,
            self.cpus,
            self.load_average.0,
            self.load_average.1,
            self.seed,
            self.seconds,
            if self.quick { ", QUICK run" } else { "" }
        )?;
        if !self.udp_probes.is_empty() {
            writeln!(f, "udp probes: {}", self.udp_probes)?;
        }
        writeln!(
            f,
            "{:<38} {:>12} {:>12}  {:<26} verdict",
            "figure", "expected", "measured", "tolerance"
        )?;
        for fig in &self.figures {
            let name = format!("{} [{}]", fig.name, fig.unit);
            let verdict = match fig.judgement {
                Judgement::Pass => "pass",
                Judgement::Fail => "FAIL",
                Judgement::Info => "info",
            };
            writeln!(
                f,
                "{:<38} {:>12} {:>12}  {:<26} {}",
                name,
                fmt_value(fig.expected),
                fmt_value(fig.measured),
                fig.tolerance,
                verdict
            )?;
            if !fig.note.is_empty() {
                writeln!(f, "    {}", fig.note)?;
            }
        }
        let judged = self
            .figures
            .iter()
            .filter(|f| f.judgement != Judgement::Info)
            .count();
        let failed = self.failures().len();
        writeln!(
            f,
            "result: {} ({judged} judged figures, {failed} outside tolerance)",
            if failed == 0 { "PASS" } else { "FAIL" }
        )
    }
}
