//! `rpcarena run --dry-run`: the expanded plan and its estimated duration, and whether this
//! host can run it, without running a sample. The estimate is a pure function of the campaign
//! ([`Estimate::of`]); the progress bar's ETA starts from the same figure and corrects it with
//! each sample's measured wall time ([`Estimate::remaining`]).

use rpcarena_model::campaign::Campaign;
use rpcarena_model::matrix;
use rpcarena_model::schedule;
use serde::Serialize;
use std::time::Duration;

/// Wall time a sample takes beyond its warmup and window: spawning both peers, connecting (TLS
/// handshakes), the validation operation, draining, teardown and the network check. Measured on
/// this project's 2-vCPU VM with the Rust peer on loopback (debug build): `rpcarena run
/// campaigns/quick.toml` ran 36 samples of 0.5 s warmup + 2 s window in 93.7 s of wall time
/// (manifest start to end), 2.60 s per sample, so 0.10 s beyond warmup and window. Other peers
/// cost more: a JVM peer's samples took a median of 4.9 s beyond them (Kotlin interop runs on
/// the same VM), and an emulated WAN adds round trips to every connection. The ETA replaces
/// this prior with the measured wall time per sample as samples end.
pub const OVERHEAD_PER_SAMPLE: Duration = Duration::from_millis(100);

/// A `[[commands]]` entry's length before it has run (the ETA then uses what samples took).
pub const COMMAND_PRIOR: Duration = Duration::from_secs(1);

/// What a campaign will run and roughly how long it takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Cells (after `--cell`).
    pub cells: usize,
    /// Configurations, each `[[commands]]` entry counted as one.
    pub configurations: usize,
    /// Rounds.
    pub rounds: u32,
    /// Samples.
    pub samples: usize,
    /// Estimated wall time of one sample, seconds.
    pub per_sample_s: f64,
    /// Estimated wall time of the run, seconds.
    pub total_s: f64,
    /// The most the run can take if every drain ran to its bound, seconds (timeouts aside).
    pub at_most_s: f64,
}

impl Estimate {
    /// The plan of `campaign` (already restricted to the selected cells): each configuration
    /// at its cell's warmup plus the window and [`OVERHEAD_PER_SAMPLE`], each command at
    /// [`COMMAND_PRIOR`] (at most its timeout).
    pub fn of(campaign: &Campaign) -> Estimate {
        let configs = matrix::expand(campaign);
        let t = &campaign.timing;
        let sample = |cell: &str| campaign.timing_of(cell).warmup + t.window + OVERHEAD_PER_SAMPLE;
        let peers: Duration = configs.iter().map(|c| sample(&c.cell)).sum();
        let commands: Duration = campaign
            .commands
            .iter()
            .map(|c| COMMAND_PRIOR.min(c.timeout))
            .sum();
        let bounds: Duration = campaign.commands.iter().map(|c| c.timeout).sum();
        let configurations = configs.len() + campaign.commands.len();
        let rounds = campaign.repetitions;
        let samples = configurations * rounds as usize;
        let total_s = (peers + commands).as_secs_f64() * rounds as f64;
        let drains = t.drain * configs.len() as u32;
        Estimate {
            cells: campaign.cells.len(),
            configurations,
            rounds,
            samples,
            per_sample_s: if samples == 0 {
                0.0
            } else {
                total_s / samples as f64
            },
            total_s,
            at_most_s: (peers + drains + bounds).as_secs_f64() * rounds as f64,
        }
    }

    /// Seconds left after `done` samples that took `elapsed_s` in all: the estimate per sample
    /// until samples have finished, then their measured mean (weighted in as they come, so a
    /// first slow sample does not swing it).
    pub fn remaining(&self, done: usize, elapsed_s: f64) -> f64 {
        let left = self.samples.saturating_sub(done) as f64;
        if done == 0 {
            return left * self.per_sample_s;
        }
        let measured = elapsed_s / done as f64;
        // Weight of the measurement grows with samples seen; the prior counts as 3 samples.
        let w = done as f64 / (done as f64 + 3.0);
        left * (w * measured + (1.0 - w) * self.per_sample_s)
    }
}

/// "1 h 02 min", "3 min 20 s", "45 s", "2.6 s".
pub fn human(seconds: f64) -> String {
    if seconds < 9.95 {
        return format!("{:.1} s", seconds.max(0.0));
    }
    let s = seconds.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// The plan as text: every configuration, then the schedule's size and duration.
pub fn describe(campaign: &Campaign, estimate: &Estimate) -> String {
    let mut out = String::new();
    // the schedule numbers the configurations first, then the commands (as the runner does)
    let keys: Vec<String> = matrix::expand(campaign)
        .into_iter()
        .map(|c| c.key)
        .chain(
            campaign
                .commands
                .iter()
                .map(|c| format!("command/{}", c.id)),
        )
        .collect();
    for key in &keys {
        out.push_str(&format!("  {key}\n"));
    }
    let slots = schedule::schedule(keys.len(), campaign.repetitions, campaign.seed);
    let first: Vec<String> = slots
        .iter()
        .take(5)
        .map(|s| keys[s.config].clone())
        .collect();
    out.push_str(&format!(
        "{} cells, {} configurations x {} rounds = {} samples (seeded order; round 1 starts with {}{})\n",
        estimate.cells,
        estimate.configurations,
        estimate.rounds,
        estimate.samples,
        first.join(", "),
        if slots.len() > 5 { ", ..." } else { "" }
    ));
    let t = &campaign.timing;
    out.push_str(&format!(
        "estimated duration: about {} ({} per sample: {} + {} window + {} measured overhead{}); at most {} if every drain ran its {} bound{}\n",
        human(estimate.total_s),
        human(estimate.per_sample_s),
        warmups(campaign),
        rpcarena_model::duration::format(&t.window),
        rpcarena_model::duration::format(&OVERHEAD_PER_SAMPLE),
        if campaign.commands.is_empty() {
            String::new()
        } else {
            format!(
                "; commands at {} each until they have run",
                rpcarena_model::duration::format(&COMMAND_PRIOR)
            )
        },
        human(estimate.at_most_s),
        rpcarena_model::duration::format(&t.drain),
        if campaign.commands.is_empty() {
            ""
        } else {
            " and every command its timeout"
        },
    ));
    out
}

/// "1s warmup", or "10s to 30s warmup" when cells give their own.
fn warmups(campaign: &Campaign) -> String {
    let all: Vec<Duration> = std::iter::once(campaign.timing.warmup)
        .chain(campaign.cells.iter().filter_map(|c| c.warmup))
        .collect();
    let (low, high) = (all.iter().min(), all.iter().max());
    match (low, high) {
        (Some(l), Some(h)) if l != h => format!(
            "{} to {} warmup (cells' own)",
            rpcarena_model::duration::format(l),
            rpcarena_model::duration::format(h)
        ),
        _ => format!(
            "{} warmup",
            rpcarena_model::duration::format(&campaign.timing.warmup)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: &str = include_str!("../../../campaigns/quick.toml");

    #[test]
    fn the_quick_campaign_is_planned_from_its_timing() {
        let campaign = Campaign::parse(QUICK, "quick.toml").unwrap();
        let e = Estimate::of(&campaign);
        assert_eq!(
            (e.cells, e.configurations, e.rounds, e.samples),
            (3, 12, 5, 60)
        );
        // 0.4 s warmup + 1 s window + the measured overhead
        assert!((e.per_sample_s - 1.5).abs() < 1e-9, "{e:?}");
        assert!((e.total_s - 60.0 * 1.5).abs() < 1e-9);
        assert!((e.at_most_s - 60.0 * 6.5).abs() < 1e-9);
        let text = describe(&campaign, &e);
        assert!(
            text.contains("3 cells, 12 configurations x 5 rounds = 60 samples"),
            "{text}"
        );
        assert!(
            text.contains("estimated duration: about 1 min 30 s (1.5 s per sample"),
            "{text}"
        );
    }

    #[test]
    fn the_eta_moves_from_the_estimate_to_what_samples_took() {
        let campaign = Campaign::parse(QUICK, "quick.toml").unwrap();
        let e = Estimate::of(&campaign);
        assert!((e.remaining(0, 0.0) - e.total_s).abs() < 1e-9);
        // samples take twice the estimate: after many, the ETA is close to twice
        let slow = e.per_sample_s * 2.0;
        let after = e.remaining(54, 54.0 * slow);
        assert!((after - 6.0 * slow).abs() < 6.0 * slow * 0.1, "{after}");
        assert_eq!(e.remaining(60, 100.0), 0.0);
        assert_eq!(human(3725.0), "1 h 02 min");
        assert_eq!(human(200.0), "3 min 20 s");
    }

    #[test]
    fn a_cells_own_warmup_and_the_commands_enter_the_estimate() {
        let text = format!(
            "{}\n[[commands]]\nid = \"tsc\"\ncommand = [\"true\"]\ntimeout = \"20s\"\n",
            QUICK.replacen("[[cells]]", "[[cells]]\nwarmup = \"10s 400ms\"", 1)
        );
        let campaign = Campaign::parse(&text, "quick.toml").unwrap();
        let e = Estimate::of(&campaign);
        // 4 of the 12 configurations belong to the first cell, now 10 s longer each; the
        // command adds its 1 s prior per round, and its 20 s timeout to the bound
        assert_eq!(e.samples, 65);
        assert!(
            (e.total_s - 5.0 * (12.0 * 1.5 + 4.0 * 10.0 + 1.0)).abs() < 1e-9,
            "{e:?}"
        );
        assert!(
            (e.at_most_s - 5.0 * (12.0 * 6.5 + 4.0 * 10.0 + 20.0)).abs() < 1e-9,
            "{e:?}"
        );
        let described = describe(&campaign, &e);
        assert!(
            described.contains("400ms to 10s 400ms warmup (cells' own)"),
            "{described}"
        );
        assert!(
            described.contains("every command its timeout"),
            "{described}"
        );
    }
}
