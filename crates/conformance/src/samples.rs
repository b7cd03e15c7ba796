//! Short samples of every advertised combination, in both roles against the Rust peer. They run
//! through the campaign runner itself (a generated loopback campaign per stack), so the sample
//! state machine and every count check of a real run judge them: what passes here passes there.

use crate::check::CheckResult;
use anyhow::Result;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_protocol::event::{Capabilities, Role, StackCapability};
use rpcarena_runner::{BuildInfo, CampaignSource, RunOptions};
use std::path::{Path, PathBuf};

/// The models the kit samples, as campaign entries (small, to stay short).
fn load_entry(model: &str) -> Option<&'static str> {
    Some(match model {
        "closed" => "\"closed\"",
        "window" => "{ model = \"window\", in_flight = 4 }",
        "backpressure" => "{ model = \"backpressure\", max_in_flight = 64 }",
        "open" => "{ model = \"open\", rate = 2000 }",
        _ => return None,
    })
}

/// What both peers offer for `stack` in the two directions.
struct Common {
    shapes: Vec<String>,
    loads: Vec<String>,
    payloads: Vec<String>,
}

fn payloads(s: &StackCapability) -> Vec<String> {
    if s.payloads.is_empty() {
        vec!["zeros".to_string()]
    } else {
        s.payloads.clone()
    }
}

fn both(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

/// The combinations of `stack` both directions can run: shapes and payloads every involved role
/// offers, the peer's client models (the Rust client runs every one).
fn common(peer: &Capabilities, rust: &Capabilities, stack: &str) -> Option<(Common, bool, bool)> {
    let pc = peer.roles.stack(Role::Client, stack);
    let ps = peer.roles.stack(Role::Server, stack);
    let rc = rust.roles.stack(Role::Client, stack)?;
    let rs = rust.roles.stack(Role::Server, stack)?;
    let mut shapes: Vec<String> = rc.shapes.clone();
    let mut pays: Vec<String> = payloads(rc);
    let mut loads: Vec<String> = rc.load_models.clone();
    for s in [pc, ps].into_iter().flatten() {
        shapes = both(&shapes, &s.shapes);
        pays = both(&pays, &payloads(s));
    }
    shapes = both(&shapes, &rs.shapes);
    if let Some(c) = pc {
        loads = both(&loads, &c.load_models);
    } else {
        loads = vec!["closed".to_string()];
    }
    Some((
        Common {
            shapes,
            loads,
            payloads: pays,
        },
        pc.is_some(),
        ps.is_some(),
    ))
}

fn quoted(v: &[String]) -> String {
    v.iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A campaign of `stack`'s cells: the peer as client and as server, the Rust peer opposite.
fn campaign(
    name: &str,
    stack: &str,
    cells: &[(String, &str, &str)],
    shapes: &[String],
    loads: &[&str],
    payloads: &[String],
    (peer, rust): (&[String], &[String]),
) -> String {
    let mut text = format!(
        "name = {name:?}\nseed = 1\nrepetitions = 1\nnetwork = \"loopback\"\n\n[[peers]]\nid = \"peer\"\ncommand = [{}]\n\n[[peers]]\nid = \"rust\"\ncommand = [{}]\n",
        quoted(peer),
        quoted(rust)
    );
    for (id, client, server) in cells {
        text.push_str(&format!(
            "\n[[cells]]\nid = {id:?}\nclient = {client:?}\nserver = {server:?}\nstack = {stack:?}\n"
        ));
    }
    text.push_str(&format!(
        "\n[workload]\nshapes = [{}]\nconcurrency = [2]\nrequest_size = [64]\nresponse_size = [64]\nmessages_per_stream = 4\npayload = [{}]\nload = [{}]\n\n[timing]\nwarmup = \"100ms\"\nwindow = \"200ms\"\ndrain = \"2s\"\n\n[timeouts]\nready = \"10s\"\narmed = \"30s\"\nsample = \"10s\"\nshutdown = \"5s\"\n\n[noise]\npinning = \"off\"\nmax_load = 1000.0\ngate_timeout = \"1s\"\n",
        quoted(shapes),
        quoted(payloads),
        loads.join(", ")
    ));
    text
}

struct Collect<'a> {
    rows: &'a mut Vec<CheckResult>,
    log: &'a mut dyn FnMut(&str),
}

impl rpcarena_runner::Progress for Collect<'_> {
    fn begin(&mut self, dir: &Path, total: usize) {
        (self.log)(&format!("{total} samples, raw output in {}", dir.display()));
    }
    fn sample_started(&mut self, _: usize, _: &str, _: &SampleConfig) {}
    fn sample_finished(&mut self, _: usize, record: &SampleRecord) {
        let c = &record.config;
        let role = if c.client == "peer" && c.server == "peer" {
            "client+server"
        } else if c.client == "peer" {
            "client"
        } else {
            "server"
        };
        let name = format!("{role} {} {} {} {}", c.stack, c.shape, c.load, c.payload);
        let received = match record.status {
            SampleStatus::Ok => Ok(format!(
                "{} completed",
                record.client.as_ref().map_or(0, |r| r.completed)
            )),
            SampleStatus::Failed => Err(record.reason.clone().unwrap_or_default()),
        };
        self.rows.push(CheckResult::new(
            "sample",
            name,
            "events in order, every field and count as \"sample\" defines, exits 0",
            received,
        ));
    }
    fn warning(&mut self, text: &str) {
        (self.log)(text);
    }
}

/// Runs the short samples of `stack`; one row per sample.
pub(crate) fn run(
    dir: &Path,
    stack: &str,
    peer: (&[String], &Capabilities),
    rust: (&[String], &Capabilities),
    log: &mut dyn FnMut(&str),
) -> Result<Vec<CheckResult>> {
    let Some((common, as_client, as_server)) = common(peer.1, rust.1, stack) else {
        return Ok(Vec::new());
    };
    let mut cells = Vec::new();
    if as_client {
        cells.push((format!("peer-rust-{stack}"), "peer", "rust"));
    }
    if as_server {
        cells.push((format!("rust-peer-{stack}"), "rust", "peer"));
    }
    let mut rows = Vec::new();
    let whole: Vec<&str> = common.loads.iter().filter_map(|l| load_entry(l)).collect();
    let mut campaigns = Vec::new();
    if !common.shapes.is_empty() && !whole.is_empty() {
        campaigns.push((format!("conformance-{stack}"), common.shapes.clone(), whole));
    }
    // Send-saturation runs on client streams alone (a campaign of its own).
    if common.loads.iter().any(|l| l == "send-saturation")
        && common.shapes.iter().any(|s| s == "client_stream")
    {
        campaigns.push((
            format!("conformance-{stack}-saturation"),
            vec!["client_stream".to_string()],
            vec!["{ model = \"send-saturation\", streams = 4, settle = \"2s\" }"],
        ));
    }
    for (name, shapes, loads) in campaigns {
        let text = campaign(
            &name,
            stack,
            &cells,
            &shapes,
            &loads,
            &common.payloads,
            (peer.0, rust.0),
        );
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, &text)?;
        let source = CampaignSource::from_file(&file)?;
        let prepared = match rpcarena_runner::prepare(source, &[]) {
            Ok(p) => p,
            Err(e) => {
                rows.push(CheckResult::new(
                    "sample",
                    format!("{stack}: campaign {name}"),
                    "the peers accept the campaign",
                    Err(format!("{e:#}")),
                ));
                continue;
            }
        };
        let options = RunOptions {
            out: Some(PathBuf::from(dir).join(&name)),
            fail_fast: false,
            resume: false,
        };
        let build = BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            revision: "conformance".to_string(),
            dirty: false,
        };
        let mut collect = Collect {
            rows: &mut rows,
            log,
        };
        rpcarena_runner::run(&prepared, &options, &build, &mut collect)?;
    }
    Ok(rows)
}
