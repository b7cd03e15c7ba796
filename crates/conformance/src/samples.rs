//! Short samples of every advertised combination, in both roles against the chosen partners. They run
//! through the campaign runner itself (a generated loopback campaign per stack), so the sample
//! state machine and every count check of a real run judge them: what passes here passes there.

use crate::check::CheckResult;
use crate::error::Result;
use crate::partners::{self, Candidate};
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_protocol::event::{Role, StackCapability};
use rpcarena_protocol::workload::ClientMode;
use rpcarena_runner::FileContext;
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

/// One direction of a stack's samples: the peer under test in one role, its partner in the
/// other, and the combinations both offer.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// (client, server) campaign peer ids of each cell.
    cells: Vec<(String, String)>,
    shapes: Vec<String>,
    loads: Vec<String>,
    payloads: Vec<String>,
    /// TLS on when both sides take it (every stack but zmq), else plaintext (revision 1.3).
    tls: bool,
    /// (1.4) The client takes `--client-mode replay`: its samples run once more, replayed.
    replay: bool,
}

/// One generated campaign of a plan: its name, shapes, load entries, payload kinds and client
/// mode.
struct Generated {
    name: String,
    shapes: Vec<String>,
    loads: Vec<&'static str>,
    payloads: Vec<String>,
    replay: bool,
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

/// The campaign id of `who`: `peer` for the peer under test (also when it is its own partner),
/// `partner-<id>` for another.
fn campaign_id(who: &Candidate, peer: &Candidate) -> String {
    if std::ptr::eq(who, peer) {
        "peer".to_string()
    } else {
        format!("partner-{}", who.id)
    }
}

/// The plan of the peer as `role` against `partner` on `stack`: the shapes and payloads both
/// offer; the load models the client runs (as a server, those both the partner's client and the
/// peer's own client run, `closed` when the peer drives no client of the stack).
fn plan(peer: &Candidate, partner: &Candidate, role: Role, stack: &str) -> Option<Plan> {
    let ours = peer.caps.roles.stack(role, stack)?;
    let theirs = partners::entry(partner, partners::opposite(role), stack)?;
    let (client, server) = match role {
        Role::Client => (peer, partner),
        Role::Server => (partner, peer),
    };
    let loads = match (role, peer.caps.roles.stack(Role::Client, stack)) {
        (Role::Client, _) => ours.load_models.clone(),
        (Role::Server, Some(own)) => both(&theirs.load_models, &own.load_models),
        (Role::Server, None) => both(&theirs.load_models, &["closed".to_string()]),
    };
    let client_entry = match role {
        Role::Client => ours,
        Role::Server => theirs,
    };
    Some(Plan {
        cells: vec![(campaign_id(client, peer), campaign_id(server, peer))],
        shapes: both(&ours.shapes, &theirs.shapes),
        loads,
        payloads: both(&payloads(ours), &payloads(theirs)),
        tls: ours.takes_tls(true) && theirs.takes_tls(true),
        replay: client_entry.takes_client_mode(ClientMode::Replay),
    })
}

/// The plans of `stack`, one per direction, merged into one campaign when their combinations
/// agree (the same partner both ways, as a rule).
fn plans(
    peer: &Candidate,
    server: Option<&Candidate>,
    client: Option<&Candidate>,
    stack: &str,
) -> Vec<Plan> {
    let mut out: Vec<Plan> = Vec::new();
    let directions = [(Role::Client, server), (Role::Server, client)];
    for (role, partner) in directions {
        let Some(p) = partner.and_then(|partner| plan(peer, partner, role, stack)) else {
            continue;
        };
        let same = |o: &Plan| {
            (&o.shapes, &o.loads, &o.payloads, o.tls, o.replay)
                == (&p.shapes, &p.loads, &p.payloads, p.tls, p.replay)
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(same) => {
                for cell in p.cells {
                    if !same.cells.contains(&cell) {
                        same.cells.push(cell);
                    }
                }
            }
            None => out.push(p),
        }
    }
    out
}

fn quoted(v: &[String]) -> String {
    v.iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A campaign of `stack`'s cells between `peers` (campaign id, command).
fn campaign(stack: &str, peers: &[(String, Vec<String>)], plan: &Plan, g: &Generated) -> String {
    let mut text = format!(
        "name = {:?}\nseed = 1\nrepetitions = 1\ntls = {}\nnetwork = \"loopback\"\n",
        g.name, plan.tls
    );
    for (id, command) in peers {
        text.push_str(&format!(
            "\n[[peers]]\nid = {id:?}\ncommand = [{}]\n",
            quoted(command)
        ));
    }
    for (client, server) in &plan.cells {
        text.push_str(&format!(
            "\n[[cells]]\nid = \"{client}-{server}-{stack}\"\nclient = {client:?}\nserver = {server:?}\nstack = {stack:?}\n"
        ));
    }
    text.push_str(&format!(
        "\n[workload]\nshapes = [{}]\nconcurrency = [2]\nrequest_size = [64]\nresponse_size = [64]\nmessages_per_stream = 4\npayload = [{}]\nload = [{}]\nclient_mode = {:?}\n\n[timing]\nwarmup = \"100ms\"\nwindow = \"200ms\"\ndrain = \"2s\"\n\n[timeouts]\nready = \"10s\"\narmed = \"30s\"\nsample = \"10s\"\nshutdown = \"5s\"\n\n[noise]\npinning = \"off\"\nmax_load = 1000.0\ngate_timeout = \"1s\"\n",
        quoted(&g.shapes),
        quoted(&g.payloads),
        g.loads.join(", "),
        if g.replay { "replay" } else { "official" }
    ));
    text
}

/// Rows' names from campaign peer ids: "client tcp vs rust", "server grpc vs go",
/// "client+server netrpc-gob vs go" (the peer paired with itself).
struct Names {
    /// Campaign id to the id shown.
    shown: Vec<(String, String)>,
}

impl Names {
    fn shown<'a>(&'a self, id: &'a str) -> &'a str {
        self.shown
            .iter()
            .find(|(c, _)| c == id)
            .map_or(id, |(_, s)| s.as_str())
    }

    fn pair(&self, client: &str, server: &str, stack: &str) -> String {
        let (role, partner) = match (client == "peer", server == "peer") {
            (true, true) => ("client+server", server),
            (true, false) => ("client", server),
            _ => ("server", client),
        };
        format!("{role} {stack} vs {}", self.shown(partner))
    }
}

struct Collect<'a> {
    rows: &'a mut Vec<CheckResult>,
    names: &'a Names,
    log: &'a mut dyn FnMut(&str),
}

impl rpcarena_runner::Progress for Collect<'_> {
    fn begin(&mut self, dir: &Path, total: usize) {
        (self.log)(&format!("{total} samples, raw output in {}", dir.display()));
    }
    fn sample_started(&mut self, _: usize, _: &str, _: &SampleConfig) {}
    fn sample_finished(&mut self, _: usize, record: &SampleRecord) {
        let c = &record.config;
        let mode = match c.client_mode {
            ClientMode::Official => String::new(),
            other => format!(" {other}"),
        };
        let name = format!(
            "{}: {} {} {}{mode}",
            self.names.pair(&c.client, &c.server, &c.stack),
            c.shape,
            c.load,
            c.payload
        );
        let received = match record.status {
            SampleStatus::Ok => Ok(format!(
                "{} completed",
                record.client.as_ref().map_or(0, |r| r.completed)
            )),
            SampleStatus::Failed => Err(record.reason.clone().unwrap_or_default()),
        };
        self.rows
            .push(CheckResult::new("sample", name, EXPECTED, received));
    }
    fn command_finished(&mut self, _: usize, _: &rpcarena_model::command::CommandRecord) {
        // conformance campaigns list no commands
    }
    fn warning(&mut self, text: &str) {
        (self.log)(text);
    }
}

const EXPECTED: &str = "events in order, every field and count as \"sample\" defines, exits 0";

/// The campaigns of one plan; none when nothing is in common. The main one runs every shape,
/// load model and payload kind but `dated`; send-saturation runs on client streams and on send
/// commands in campaigns of their own; (1.4) `dated`, the unary procedure, runs in one of its
/// own, and a client that takes `replay` runs its unary samples once more, replayed.
fn campaigns_of(stack: &str, n: usize, plan: &Plan) -> Vec<Generated> {
    let mut campaigns = Vec::new();
    let whole: Vec<&str> = plan.loads.iter().filter_map(|l| load_entry(l)).collect();
    let (dated, sized): (Vec<String>, Vec<String>) =
        plan.payloads.iter().cloned().partition(|p| p == "dated");
    let unary = plan.shapes.iter().any(|s| s == "unary");
    let generated = |name: String, shapes: Vec<String>, loads: Vec<&'static str>| Generated {
        name,
        shapes,
        loads,
        payloads: sized.clone(),
        replay: false,
    };
    if !plan.shapes.is_empty() && !whole.is_empty() && !sized.is_empty() {
        let name = format!("conformance-{stack}-{n}");
        campaigns.push(generated(name, plan.shapes.clone(), whole.clone()));
    }
    // On send the settle is the quiet time the controller waits for on the server's count.
    let saturation = [
        (
            "client_stream",
            "{ model = \"send-saturation\", streams = 4, settle = \"2s\" }",
        ),
        (
            "send",
            "{ model = \"send-saturation\", streams = 4, settle = \"200ms\" }",
        ),
    ];
    for (shape, entry) in saturation {
        if plan.loads.iter().any(|l| l == "send-saturation")
            && plan.shapes.iter().any(|s| s == shape)
            && !sized.is_empty()
        {
            let name = format!("conformance-{stack}-{n}-saturation-{shape}");
            campaigns.push(generated(name, vec![shape.to_string()], vec![entry]));
        }
    }
    if unary && !whole.is_empty() && !dated.is_empty() {
        campaigns.push(Generated {
            payloads: dated,
            ..generated(
                format!("conformance-{stack}-{n}-dated"),
                vec!["unary".into()],
                whole.clone(),
            )
        });
    }
    if unary && !whole.is_empty() && plan.replay {
        campaigns.push(Generated {
            payloads: plan.payloads.clone(),
            replay: true,
            ..generated(
                format!("conformance-{stack}-{n}-replay"),
                vec!["unary".into()],
                whole,
            )
        });
    }
    campaigns
}

/// Runs the short samples of `stack`: the peer as client against `server`, and as server
/// against `client` (either absent when the kit has no such partner; `lib` reports that). One
/// row per sample; a direction with nothing in common with its partner is one row not checked.
pub(crate) fn run(
    dir: &Path,
    stack: &str,
    peer: &Candidate,
    (server, client): (Option<&Candidate>, Option<&Candidate>),
    log: &mut dyn FnMut(&str),
) -> Result<Vec<CheckResult>> {
    let mut peers = vec![("peer".to_string(), peer.command.clone())];
    let mut names = Names {
        shown: vec![("peer".to_string(), peer.id.clone())],
    };
    for partner in [server, client].into_iter().flatten() {
        let id = campaign_id(partner, peer);
        if !peers.iter().any(|(p, _)| *p == id) {
            peers.push((id.clone(), partner.command.clone()));
            names.shown.push((id, partner.id.clone()));
        }
    }
    let mut rows = Vec::new();
    for (n, plan) in plans(peer, server, client, stack).iter().enumerate() {
        let campaigns = campaigns_of(stack, n + 1, plan);
        if campaigns.is_empty() {
            for (c, s) in &plan.cells {
                rows.push(CheckResult::not_checked(
                    "sample",
                    names.pair(c, s, stack),
                    EXPECTED,
                    format!(
                        "nothing in common with the partner: shapes [{}], load models [{}], payloads [{}]",
                        plan.shapes.join(", "),
                        plan.loads.join(", "),
                        plan.payloads.join(", ")
                    ),
                ));
            }
        }
        for generated in campaigns {
            let text = campaign(stack, &peers, plan, &generated);
            run_campaign(dir, &generated.name, &text, &names, &mut rows, log)?;
        }
    }
    Ok(rows)
}

/// Writes and runs one generated campaign; its samples become rows (a campaign the runner
/// refuses is one failed row).
fn run_campaign(
    dir: &Path,
    name: &str,
    text: &str,
    names: &Names,
    rows: &mut Vec<CheckResult>,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).file("writing", &file)?;
    let source = CampaignSource::from_file(&file)?;
    let prepared = match rpcarena_runner::prepare(source, &[]) {
        Ok(p) => p,
        Err(e) => {
            rows.push(CheckResult::new(
                "sample",
                format!("campaign {name}"),
                "the peers accept the campaign",
                Err(e.chain()),
            ));
            return Ok(());
        }
    };
    let options = RunOptions {
        out: Some(PathBuf::from(dir).join(name)),
        fail_fast: false,
        resume: false,
    };
    let build = BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        revision: "conformance".to_string(),
        dirty: false,
    };
    let mut collect = Collect { rows, names, log };
    rpcarena_runner::run(&prepared, &options, &build, &mut collect)?;
    Ok(())
}
