//! Samples outside any run, for `rpcarena profile`: one configuration of a prepared campaign
//! started exactly as a run starts it (the same CA, CPU plan and network, the same spec through
//! `run::sample_spec`, the same sample shell and machine), with an optional [`WindowObserver`]
//! told the window's edges. Nothing is appended to a `samples.jsonl`: the records are returned.

use crate::certs::Authority;
use crate::error::{Error, Result};
use crate::network::RunNetwork;
use crate::noise::{self, PinPlan};
use crate::prepare::Prepared;
use crate::run::{Place, SpecParts, sample_spec};
use crate::sample::{self, SampleIo, WindowObserver};
use rpcarena_model::matrix::{self, SampleConfig};
use rpcarena_model::network::NetworkBackend;
use rpcarena_model::record::SampleRecord;
use rpcarena_model::schedule::Slot;
use std::path::{Path, PathBuf};

/// One configuration ready to run samples of, with its network built.
pub struct Probe<'a> {
    prepared: &'a Prepared,
    config: SampleConfig,
    dir: PathBuf,
    ca: Authority,
    pins: PinPlan,
    net: RunNetwork,
    count: usize,
}

/// The configuration of `cell` to probe: the one whose key is `key`, or the cell's only one.
pub fn select_config(prepared: &Prepared, cell: &str, key: Option<&str>) -> Result<SampleConfig> {
    let all: Vec<SampleConfig> = matrix::expand(&prepared.campaign)
        .into_iter()
        .filter(|c| c.cell == cell)
        .collect();
    let keys = || {
        all.iter()
            .map(|c| c.key.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if all.is_empty() {
        return Err(Error::Probe(format!(
            "cell {cell} has no configuration in {}",
            prepared.source.origin
        )));
    }
    match key {
        Some(key) => all.iter().find(|c| c.key == key).cloned().ok_or_else(|| {
            Error::Probe(format!(
                "cell {cell} has no configuration {key}; its configurations: {}",
                keys()
            ))
        }),
        None if all.len() == 1 => Ok(all[0].clone()),
        None => Err(Error::Probe(format!(
            "cell {cell} has {} configurations: choose one with --config (one of: {})",
            all.len(),
            keys()
        ))),
    }
}

impl<'a> Probe<'a> {
    /// Builds what a run builds before its first sample (certificates under `dir`, the CPU plan,
    /// the network) for `config`.
    pub fn open(
        prepared: &'a Prepared,
        config: SampleConfig,
        dir: &Path,
        warn: &mut dyn FnMut(&str),
    ) -> Result<Probe<'a>> {
        let campaign = &prepared.campaign;
        let ca = Authority::create(
            &dir.join("certificates"),
            &dir.join("private"),
            &campaign.name,
        )?;
        let emulated = campaign.network.backend == NetworkBackend::Emulated;
        let pins = noise::plan(&noise::allowed_cpus(), campaign.noise.pinning, emulated);
        let net = RunNetwork::create(&campaign.network, campaign.seed, &ca, &pins.emulator, warn)?;
        Ok(Probe {
            prepared,
            config,
            dir: dir.to_path_buf(),
            ca,
            pins,
            net,
            count: 0,
        })
    }

    /// The configuration probed.
    pub fn config(&self) -> &SampleConfig {
        &self.config
    }

    /// Runs one sample (after the load gate, as a run does) named `label`; its peers' output
    /// goes to `raw/<label>/` under the probe's directory.
    pub fn sample<'s>(
        &'s mut self,
        label: &str,
        observer: Option<&'s mut dyn WindowObserver>,
        warn: &'s mut dyn FnMut(&str),
    ) -> SampleRecord {
        let noise = &self.prepared.campaign.noise;
        let gate = sample::wait_at_gate(noise, noise::allowed_cpus().len());
        let rel = format!("raw/{label}");
        let place = Place {
            slot: Slot {
                round: 1,
                position: self.count as u32,
                config: 0,
            },
            index: self.count,
            id: label.to_string(),
            raw_rel: rel.clone(),
        };
        self.count += 1;
        let parts = SpecParts {
            prepared: self.prepared,
            ca_cert: &self.ca.ca_cert,
            pins: &self.pins,
        };
        let spec = sample_spec(&parts, &self.config, place, &self.net, gate);
        sample::run_sample(
            spec,
            SampleIo {
                raw_dir: self.dir.join(rel),
                network: &mut self.net,
                warn,
                observer,
            },
        )
    }
}
