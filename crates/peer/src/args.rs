//! Command-line arguments, exactly as docs/peer-protocol.md lists them.
//!
//! Parsing uses clap's `try_parse` so that a bad argument never reaches clap's own printing (which
//! would write to stdout and exit with clap's code): it becomes an [`ArgError`] whose message names
//! the argument, and `main` turns that into an `error` event (phase `startup`, code `config`) and
//! exit code 2.

use crate::fault::{ClientFault, ServerFault};
use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use rpcarena_protocol::workload::{ClientMode, Payload, Shape};
use rustls_pki_types::ServerName;
use std::ffi::OsString;
use std::path::PathBuf;

/// Largest request or response payload, in bytes (16 MiB).
pub const MAX_PAYLOAD: u32 = 16 * 1024 * 1024;
/// Largest number of messages in one streamed direction of an operation.
pub const MAX_MESSAGES: u32 = 1_000_000;
/// Largest number of lanes.
pub const MAX_CONCURRENCY: u32 = 10_000;

/// `rpcarena-peer-rust COMMAND --name value ...`
#[derive(Parser, Debug)]
#[command(
    name = "rpcarena-peer-rust",
    version,
    about = "The Rust peer of rpcarena (peer protocol v1, see docs/peer-protocol.md)",
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What the peer was asked to do.
#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// Print what this peer offers per role, then exit.
    Capabilities,
    /// Serve the workload until SHUTDOWN.
    Server(ServerArgs),
    /// Drive the workload against a server and report one sample.
    Client(ClientArgs),
}

/// The transport stacks (docs/stacks.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Stack {
    /// tonic: gRPC over HTTP/2 over TLS over TCP.
    Grpc,
    /// Native framing, one QUIC stream per RPC on quinn.
    Quic,
    /// Native framing over TLS over TCP, one connection per lane.
    Tcp,
    /// ZeroMQ ROUTER to ROUTER over TCP, plaintext only (revision 1.3).
    Zmq,
}

impl Stack {
    /// Every stack, in report order.
    pub const ALL: [Stack; 4] = [Stack::Grpc, Stack::Quic, Stack::Tcp, Stack::Zmq];

    /// The name used in arguments and capabilities.
    pub fn as_str(self) -> &'static str {
        match self {
            Stack::Grpc => "grpc",
            Stack::Quic => "quic",
            Stack::Tcp => "tcp",
            Stack::Zmq => "zmq",
        }
    }
}

/// `--tls` (revision 1.3): TLS 1.3 as docs/stacks.md says (`on`, the default) or plaintext
/// (`off`: h2c prior knowledge on grpc, the native framing straight on TCP on tcp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum TlsMode {
    /// TLS 1.3 with the private CA (`--cert`/`--key`, `--ca`/`--server-name` required).
    #[default]
    On,
    /// Plaintext TCP; the TLS arguments are refused.
    Off,
}

impl TlsMode {
    /// The name used in arguments and capabilities.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::On => "on",
            TlsMode::Off => "off",
        }
    }
}

/// Largest `--in-flight` (window lanes; tcp opens that many connections).
pub const MAX_IN_FLIGHT: u32 = 100_000;
/// Largest `--max-in-flight`: only a safety cap, far above any transport's own limit (10,000
/// streams per connection here).
pub const MAX_CAP: u32 = 1_000_000;
/// Largest `--streams` (each stream keeps its own histograms until its summary confirms them).
pub const MAX_STREAMS: u32 = 1_000;
/// Largest `--rate`, operations per second.
pub const MAX_RATE: f64 = 10_000_000.0;

/// Load models (docs/peer-protocol.md, "Load models").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Load {
    /// `--concurrency` lanes, each with one operation in flight.
    Closed,
    /// `--in-flight N` operations always outstanding.
    Window,
    /// A new operation whenever the transport accepts one, at most `--max-in-flight`.
    Backpressure,
    /// `--streams S` client streams of one-way messages, settled for `--settle-ms`.
    #[value(name = "send-saturation")]
    SendSaturation,
    /// Operations at intended start times: `--rate`, `--arrival`, `--seed`.
    Open,
}

/// Arrival processes of the open model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    /// Starts exactly 1/rate apart.
    Constant,
    /// Exponential gaps of mean 1/rate from a seeded ChaCha8 generator.
    Poisson,
}

/// `server` arguments.
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Stack to serve.
    #[arg(long, value_enum)]
    pub stack: Stack,
    /// Address to bind, HOST:PORT; port 0 asks for any free port.
    #[arg(long, value_parser = parse_host_port)]
    pub listen: String,
    /// on (default) or off: plaintext, without --cert and --key.
    #[arg(long, value_enum, default_value = "on")]
    pub tls: TlsMode,
    /// PEM certificate chain, leaf first (--tls on only).
    #[arg(long)]
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8) (--tls on only).
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Diagnostic, not part of the protocol: stall every this many milliseconds (with
    /// `--stall-ms`), holding every response for the stall's length (docs/stacks.md).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..), requires = "stall_ms")]
    pub stall_every_ms: Option<u64>,
    /// Diagnostic: the length of each stall, in milliseconds (less than `--stall-every-ms`).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..), requires = "stall_every_ms")]
    pub stall_ms: Option<u64>,
    /// Conformance kit only, hidden: misbehave on every call in this way (crate::fault).
    #[arg(long, value_enum, hide = true)]
    pub conformance_fault: Option<ServerFault>,
}

/// `client` arguments.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Stack to drive.
    #[arg(long, value_enum)]
    pub stack: Stack,
    /// HOST:PORT from the server's `ready` event.
    #[arg(long, value_parser = parse_host_port)]
    pub server: String,
    /// on (default) or off: plaintext, without --ca and --server-name.
    #[arg(long, value_enum, default_value = "on")]
    pub tls: TlsMode,
    /// DNS name or IP address to verify the server certificate against (--tls on only).
    #[arg(long, value_parser = parse_server_name)]
    pub server_name: Option<ServerName<'static>>,
    /// PEM certificate of the private CA, the only trust anchor (--tls on only).
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// unary, client_stream, server_stream or bidi.
    #[arg(long, value_parser = parse_shape)]
    pub shape: Shape,
    /// Lanes (1 to 10000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_CONCURRENCY)))]
    pub concurrency: u32,
    /// Payload bytes of every request message (0 to 16 MiB).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_PAYLOAD)))]
    pub request_size: u32,
    /// Payload bytes of every response message (0 to 16 MiB).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_PAYLOAD)))]
    pub response_size: u32,
    /// Messages in each streamed direction (1 to 1000000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_MESSAGES)))]
    pub messages_per_stream: u32,
    /// Load model.
    #[arg(long, value_enum)]
    pub load: Load,
    /// Payload kind: zeros (default) or structured.
    #[arg(long, value_parser = parse_payload, default_value = "zeros")]
    pub payload: Payload,
    /// (1.4) What sends the calls: official (the default, and the only mode of this peer's
    /// stacks: they have no library client apart from the one they call through).
    #[arg(long, value_parser = parse_client_mode, default_value = "official")]
    pub client_mode: ClientMode,
    /// window: operations always outstanding (1 to 100000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_IN_FLIGHT)))]
    pub in_flight: Option<u32>,
    /// backpressure: safety cap on operations in flight (1 to 1000000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_CAP)))]
    pub max_in_flight: Option<u32>,
    /// send-saturation: client streams (1 to 1000).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_STREAMS)))]
    pub streams: Option<u32>,
    /// send-saturation: how long after the window the summaries may take, in milliseconds.
    #[arg(long, allow_negative_numbers = true)]
    pub settle_ms: Option<u64>,
    /// open: target rate in operations per second (above 0, at most 10000000).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// open: constant (default) or poisson.
    #[arg(long, value_enum)]
    pub arrival: Option<ArrivalArg>,
    /// open: seed of the Poisson arrivals (default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Untimed warmup, in milliseconds (0 allowed).
    #[arg(long, allow_negative_numbers = true)]
    pub warmup_ms: u64,
    /// Admission window, in milliseconds (at least 1).
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub window_ms: u64,
    /// How long admitted operations may take to finish after the window, in milliseconds.
    #[arg(long, allow_negative_numbers = true)]
    pub drain_ms: u64,
    /// Conformance kit only, hidden: send one malformed call of this kind and report whether the
    /// server refused it (crate::fault).
    #[arg(long, value_enum, hide = true)]
    pub conformance_fault: Option<ClientFault>,
}

/// Why the arguments were not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgError {
    /// `--help` or `--version` was asked for: print this on stderr and exit 0.
    Info(String),
    /// The arguments are wrong; the message names the argument.
    Invalid(String),
}

/// Parses the command line (including the program name in `args[0]`).
pub fn parse<I, T>(args: I) -> Result<Command, ArgError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => {
            check(&cli.command).map_err(ArgError::Invalid)?;
            Ok(cli.command)
        }
        Err(err) => match err.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                Err(ArgError::Info(err.render().to_string()))
            }
            // clap renders the whole help for a missing subcommand; one sentence is enough here.
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
                Err(ArgError::Invalid(
                    "no command given; expected capabilities, server or client".to_string(),
                ))
            }
            _ => Err(ArgError::Invalid(one_line(&err.render().to_string()))),
        },
    }
}

/// Checks what clap cannot: which arguments each load model needs and allows, payload sizes a
/// structured payload can have, and a stall shorter than its period.
fn check(command: &Command) -> Result<(), String> {
    match command {
        Command::Client(args) => {
            let given = [
                ("--ca", args.ca.is_some()),
                ("--server-name", args.server_name.is_some()),
            ];
            check_tls(args.stack, args.tls, &given)?;
            check_client(args)
        }
        Command::Server(args) => check_server(args),
        Command::Capabilities => Ok(()),
    }
}

/// The TLS arguments (`given`: name and whether it is there) against `--tls` and the stack
/// (revision 1.3, "Plaintext"): required with `on`, refused with `off`; quic has no plaintext.
fn check_tls(stack: Stack, tls: TlsMode, given: &[(&str, bool)]) -> Result<(), String> {
    if stack == Stack::Quic && tls == TlsMode::Off {
        return Err(
            "QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic".to_string(),
        );
    }
    if stack == Stack::Zmq && tls == TlsMode::On {
        return Err(
            "ZeroMQ has no TLS (CurveZMQ is another protocol); --stack zmq needs --tls off"
                .to_string(),
        );
    }
    for (name, present) in given {
        match (tls, present) {
            (TlsMode::Off, true) => return Err(format!("{name} does not apply to --tls off")),
            (TlsMode::On, false) => {
                return Err(format!(
                    "--tls on needs {name} (or give --tls off for plaintext)"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_server(args: &ServerArgs) -> Result<(), String> {
    let given = [
        ("--cert", args.cert.is_some()),
        ("--key", args.key.is_some()),
    ];
    check_tls(args.stack, args.tls, &given)?;
    match (args.stall_every_ms, args.stall_ms) {
        (Some(every), Some(length)) if length >= every => Err(format!(
            "--stall-ms {length} must be shorter than --stall-every-ms {every}"
        )),
        _ => Ok(()),
    }
}

fn check_client(args: &ClientArgs) -> Result<(), String> {
    if let Some((_, why)) = crate::capabilities::not_offered(args.stack)
        .into_iter()
        .find(|(shape, _)| *shape == args.shape)
    {
        return Err(format!(
            "--stack {} does not carry --shape {}: {why}",
            args.stack.as_str(),
            args.shape
        ));
    }
    for (name, size) in [
        ("--request-size", args.request_size),
        ("--response-size", args.response_size),
    ] {
        args.payload
            .check_size(size)
            .map_err(|e| format!("{name} {size} with --payload {}: {e}", args.payload))?;
    }
    let model = match args.load {
        Load::Closed => "closed",
        Load::Window => "window",
        Load::Backpressure => "backpressure",
        Load::SendSaturation => "send-saturation",
        Load::Open => "open",
    };
    // (argument, given, the model that uses it, required by it)
    let specific = [
        ("--in-flight", args.in_flight.is_some(), Load::Window, true),
        (
            "--max-in-flight",
            args.max_in_flight.is_some(),
            Load::Backpressure,
            true,
        ),
        (
            "--streams",
            args.streams.is_some(),
            Load::SendSaturation,
            true,
        ),
        (
            "--settle-ms",
            args.settle_ms.is_some(),
            Load::SendSaturation,
            true,
        ),
        ("--rate", args.rate.is_some(), Load::Open, true),
        ("--arrival", args.arrival.is_some(), Load::Open, false),
        ("--seed", args.seed.is_some(), Load::Open, false),
    ];
    for (name, given, owner, required) in specific {
        if given && owner != args.load {
            return Err(format!("{name} does not apply to --load {model}"));
        }
        if !given && required && owner == args.load {
            return Err(format!("--load {model} needs {name}"));
        }
    }
    if let Some(fault) = args.conformance_fault {
        fault.check(&crate::stacks::Workload {
            shape: args.shape,
            request_size: args.request_size,
            response_size: args.response_size,
            messages: args.messages_per_stream,
            payload: args.payload,
        })?;
    }
    if args.load == Load::SendSaturation && !matches!(args.shape, Shape::ClientStream | Shape::Send)
    {
        return Err(format!(
            "--load send-saturation runs client streams or commands (--shape client_stream or \
             send) only, not --shape {}",
            args.shape
        ));
    }
    Ok(())
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of operations per second"))?;
    if rate.is_finite() && rate > 0.0 && rate <= MAX_RATE {
        Ok(rate)
    } else {
        Err(format!(
            "{text} is outside (0, {MAX_RATE}] operations per second"
        ))
    }
}

/// clap's rendered error without the `error: ` prefix, the usage and the help hint, on one line:
/// an event message must be one JSON string and should read as one sentence.
fn one_line(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let line = line.trim();
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    parts.join(" ")
}

fn parse_host_port(text: &str) -> Result<String, String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("expected HOST:PORT, got {text:?}"))?;
    if host.is_empty() {
        return Err(format!("expected HOST:PORT with a host, got {text:?}"));
    }
    port.parse::<u16>()
        .map_err(|_| format!("port {port:?} is not a number from 0 to 65535"))?;
    Ok(text.to_string())
}

fn parse_server_name(text: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(text.to_string())
        .map_err(|_| format!("{text:?} is neither a DNS name nor an IP address"))
}

fn parse_shape(text: &str) -> Result<Shape, String> {
    text.parse()
}

fn parse_client_mode(text: &str) -> Result<ClientMode, String> {
    match text.parse()? {
        ClientMode::Replay => Err(
            "replay (1.4) is for library clients with a lean stand-in; every stack of this peer takes official only"
                .to_string(),
        ),
        mode => Ok(mode),
    }
}

fn parse_payload(text: &str) -> Result<Payload, String> {
    match text.parse()? {
        Payload::Dated => Err(
            "dated (1.4) is the JSON stacks' procedure; no stack of this peer carries it (use zeros or structured)"
                .to_string(),
        ),
        kind => Ok(kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_args() -> Vec<&'static str> {
        vec![
            "peer",
            "client",
            "--stack",
            "quic",
            "--server",
            "127.0.0.1:4000",
            "--server-name",
            "127.0.0.1",
            "--ca",
            "ca.pem",
            "--shape",
            "bidi",
            "--concurrency",
            "4",
            "--request-size",
            "256",
            "--response-size",
            "0",
            "--messages-per-stream",
            "128",
            "--load",
            "closed",
            "--warmup-ms",
            "0",
            "--window-ms",
            "5000",
            "--drain-ms",
            "1000",
        ]
    }

    fn invalid(args: Vec<&str>) -> String {
        match parse(args) {
            Err(ArgError::Invalid(message)) => message,
            other => panic!("expected an invalid-argument error, got {other:?}"),
        }
    }

    fn with(name: &str, value: &str) -> Vec<&'static str> {
        let mut args = client_args();
        let pos = args
            .iter()
            .position(|a| *a == name)
            .expect("known argument");
        args[pos + 1] = Box::leak(value.to_string().into_boxed_str());
        args
    }

    #[test]
    fn a_full_client_command_parses() {
        let Ok(Command::Client(args)) = parse(client_args()) else {
            panic!("client arguments should parse");
        };
        assert_eq!(args.stack, Stack::Quic);
        assert_eq!(args.shape, Shape::Bidi);
        assert_eq!(args.concurrency, 4);
        assert_eq!(args.messages_per_stream, 128);
        assert_eq!(
            args.server_name.as_ref().map(|n| n.to_str()).as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(args.tls, TlsMode::On);
    }

    #[test]
    fn server_and_capabilities_parse() {
        let args = [
            "peer", "server", "--listen", "[::1]:0", "--cert", "c.pem", "--key", "k.pem",
            "--stack", "grpc",
        ];
        let Ok(Command::Server(server)) = parse(args) else {
            panic!("server arguments should parse");
        };
        assert_eq!(server.listen, "[::1]:0");
        assert!(matches!(
            parse(["peer", "capabilities"]),
            Ok(Command::Capabilities)
        ));
    }

    #[test]
    fn out_of_range_values_name_the_argument() {
        assert!(invalid(with("--concurrency", "0")).contains("--concurrency"));
        assert!(invalid(with("--concurrency", "10001")).contains("--concurrency"));
        assert!(invalid(with("--request-size", "16777217")).contains("--request-size"));
        assert!(invalid(with("--messages-per-stream", "0")).contains("--messages-per-stream"));
        assert!(invalid(with("--window-ms", "0")).contains("--window-ms"));
        assert!(invalid(with("--warmup-ms", "-1")).contains("--warmup-ms"));
    }

    #[test]
    fn unknown_values_name_the_argument() {
        assert!(invalid(with("--stack", "http3")).contains("--stack"));
        let shape = invalid(with("--shape", "stream"));
        assert!(
            shape.contains("--shape") && shape.contains("client_stream"),
            "{shape}"
        );
        assert!(invalid(with("--load", "poisson")).contains("--load"));
        assert!(invalid(with("--server", "localhost")).contains("--server"));
        assert!(invalid(with("--server", "host:99999")).contains("--server"));
        assert!(invalid(with("--server-name", "not a name")).contains("--server-name"));
    }

    #[test]
    fn unknown_and_missing_arguments_are_named() {
        let mut args = client_args();
        args.extend(["--bogus", "1"]);
        assert!(invalid(args).contains("--bogus"));
        let mut args = client_args();
        let pos = args.iter().position(|a| *a == "--ca").expect("present");
        args.drain(pos..pos + 2);
        let message = invalid(args);
        assert!(message.contains("--ca"), "{message}");
        assert!(!message.contains('\n'), "one line: {message}");
        assert!(invalid(vec!["peer"]).contains("no command"));
        assert!(invalid(vec!["peer", "dance"]).contains("dance"));
    }

    fn with_extra(load: &str, extra: &[&'static str]) -> Vec<&'static str> {
        let mut args = with("--load", load);
        args.extend_from_slice(extra);
        args
    }

    #[test]
    fn every_load_model_parses_with_its_arguments() {
        let parsed = |args: Vec<&'static str>| match parse(args) {
            Ok(Command::Client(client)) => client,
            other => panic!("should parse: {other:?}"),
        };
        let window = parsed(with_extra("window", &["--in-flight", "100"]));
        assert_eq!((window.load, window.in_flight), (Load::Window, Some(100)));
        let bp = parsed(with_extra("backpressure", &["--max-in-flight", "5000"]));
        assert_eq!(bp.max_in_flight, Some(5000));
        let mut sat = with_extra("send-saturation", &["--streams", "8", "--settle-ms", "500"]);
        let pos = sat.iter().position(|a| *a == "--shape").expect("present");
        sat[pos + 1] = "client_stream";
        let sat = parsed(sat);
        assert_eq!((sat.streams, sat.settle_ms), (Some(8), Some(500)));
        let open = parsed(with_extra(
            "open",
            &["--rate", "1000.5", "--arrival", "poisson", "--seed", "7"],
        ));
        assert_eq!(open.rate, Some(1000.5));
        assert_eq!(open.arrival, Some(ArrivalArg::Poisson));
        assert_eq!(open.seed, Some(7));
        let open = parsed(with_extra("open", &["--rate", "10"]));
        assert_eq!((open.arrival, open.seed), (None, None));
        let structured = parsed({
            let mut args = client_args();
            args.extend(["--payload", "structured"]);
            args
        });
        assert_eq!(structured.payload, Payload::Structured);
        assert_eq!(parsed(client_args()).payload, Payload::Zeros);
    }

    #[test]
    fn model_arguments_are_required_where_needed_and_refused_elsewhere() {
        assert!(invalid(with("--load", "window")).contains("needs --in-flight"));
        assert!(invalid(with("--load", "open")).contains("needs --rate"));
        assert!(invalid(with_extra("closed", &["--rate", "5"])).contains("--rate does not apply"));
        assert!(
            invalid(with_extra("window", &["--in-flight", "3", "--seed", "1"]))
                .contains("--seed does not apply")
        );
        let sat = invalid(with_extra(
            "send-saturation",
            &["--streams", "8", "--settle-ms", "5"],
        ));
        assert!(sat.contains("client streams or commands"), "{sat}");
        for rate in ["0", "-1", "nan", "inf", "20000000"] {
            assert!(
                invalid(with_extra("open", &["--rate", rate])).contains("--rate"),
                "{rate}"
            );
        }
        assert!(invalid(with_extra("window", &["--in-flight", "0"])).contains("--in-flight"));
        let mut tiny = with("--request-size", "2");
        tiny.extend(["--payload", "structured"]);
        assert!(invalid(tiny).contains("--request-size 2"));
        assert!(
            invalid({
                let mut args = client_args();
                args.extend(["--payload", "json"]);
                args
            })
            .contains("--payload")
        );
        let dated = invalid({
            let mut args = client_args();
            args.extend(["--payload", "dated"]);
            args
        });
        assert!(
            dated.contains("no stack of this peer carries it"),
            "{dated}"
        );
        let replay = invalid({
            let mut args = client_args();
            args.extend(["--client-mode", "replay"]);
            args
        });
        assert!(replay.contains("--client-mode"), "{replay}");
        let mut official = client_args();
        official.extend(["--client-mode", "official"]);
        match parse(official) {
            Ok(Command::Client(client)) => assert_eq!(client.client_mode, ClientMode::Official),
            other => panic!("should parse: {other:?}"),
        }
    }

    fn server_args(extra: &[&'static str]) -> Vec<&'static str> {
        let mut args = vec![
            "peer",
            "server",
            "--stack",
            "tcp",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            "c",
            "--key",
            "k",
        ];
        args.extend_from_slice(extra);
        args
    }

    #[test]
    fn the_stall_options_go_together() {
        let server = |extra: &[&'static str]| parse(server_args(extra));
        let Ok(Command::Server(stalling)) =
            server(&["--stall-every-ms", "500", "--stall-ms", "50"])
        else {
            panic!("stall options parse");
        };
        assert_eq!(
            (stalling.stall_every_ms, stalling.stall_ms),
            (Some(500), Some(50))
        );
        assert!(
            matches!(server(&["--stall-ms", "50"]), Err(ArgError::Invalid(m)) if m.contains("--stall-every-ms"))
        );
        assert!(
            matches!(server(&["--stall-every-ms", "50", "--stall-ms", "50"]), Err(ArgError::Invalid(m)) if m.contains("shorter"))
        );
    }

    #[test]
    fn a_repeated_argument_is_refused_and_named() {
        let mut args = client_args();
        args.extend(["--concurrency", "8"]);
        let message = invalid(args);
        assert!(message.contains("--concurrency"), "{message}");
        let mut args = client_args();
        args.extend(["--payload", "zeros", "--payload", "zeros"]);
        assert!(invalid(args).contains("--payload"));
    }

    #[test]
    fn conformance_faults_parse_hidden_and_are_checked_against_the_workload() {
        let mut args = client_args();
        args.extend(["--conformance-fault", "seq-order"]);
        let Ok(Command::Client(client)) = parse(args) else {
            panic!("a client fault parses");
        };
        assert_eq!(client.conformance_fault, Some(ClientFault::SeqOrder));
        let mut unary = with("--shape", "unary");
        unary.extend(["--conformance-fault", "seq-order"]);
        assert!(invalid(unary).contains("--conformance-fault seq-order applies to --shape"));
        let mut unknown = client_args();
        unknown.extend(["--conformance-fault", "wrong-seq"]);
        assert!(invalid(unknown).contains("--conformance-fault"));
        let Ok(Command::Server(server)) =
            parse(server_args(&["--conformance-fault", "early-status"]))
        else {
            panic!("a server fault parses");
        };
        assert_eq!(server.conformance_fault, Some(ServerFault::EarlyStatus));
        let Err(ArgError::Info(help)) = parse(["peer", "server", "--help"]) else {
            panic!("help");
        };
        assert!(!help.contains("conformance"), "{help}");
    }

    /// `args` without `name` and its value.
    fn without(mut args: Vec<&'static str>, name: &str) -> Vec<&'static str> {
        let pos = args.iter().position(|a| *a == name).expect("present");
        args.drain(pos..pos + 2);
        args
    }

    #[test]
    fn plaintext_refuses_the_tls_arguments_and_tls_requires_them() {
        let plain = with("--stack", "tcp");
        let plain = without(without(plain, "--ca"), "--server-name");
        let mut off = plain.clone();
        off.extend(["--tls", "off"]);
        let Ok(Command::Client(client)) = parse(off.clone()) else {
            panic!("a plaintext client parses");
        };
        assert_eq!(
            (client.tls, client.ca, client.server_name),
            (TlsMode::Off, None, None)
        );
        // --tls on (the default) needs both
        assert!(invalid(plain.clone()).contains("--tls on needs --ca"));
        let mut with_ca = off.clone();
        with_ca.extend(["--ca", "ca.pem"]);
        assert_eq!(invalid(with_ca), "--ca does not apply to --tls off");
        let mut with_name = off.clone();
        with_name.extend(["--server-name", "127.0.0.1"]);
        assert!(invalid(with_name).contains("--server-name does not apply to --tls off"));
        let mut quic = off.clone();
        let pos = quic.iter().position(|a| *a == "--stack").expect("present");
        quic[pos + 1] = "quic";
        assert!(invalid(quic).contains("QUIC has TLS 1.3 inside"));
        let mut bad = plain;
        bad.extend(["--tls", "maybe"]);
        assert!(invalid(bad).contains("--tls"));
        // servers: the same rules for --cert and --key
        let server = |extra: &[&'static str]| {
            let mut args = vec![
                "peer",
                "server",
                "--stack",
                "grpc",
                "--listen",
                "127.0.0.1:0",
            ];
            args.extend_from_slice(extra);
            parse(args)
        };
        let Ok(Command::Server(plain)) = server(&["--tls", "off"]) else {
            panic!("a plaintext server parses");
        };
        assert_eq!(
            (plain.tls, plain.cert, plain.key),
            (TlsMode::Off, None, None)
        );
        assert!(
            matches!(server(&["--tls", "off", "--key", "k"]), Err(ArgError::Invalid(m)) if m == "--key does not apply to --tls off")
        );
        assert!(
            matches!(server(&["--cert", "c"]), Err(ArgError::Invalid(m)) if m.contains("needs --key"))
        );
        assert!(
            matches!(parse(server_args(&["--tls", "on"])), Ok(Command::Server(s)) if s.tls == TlsMode::On)
        );
    }

    #[test]
    fn help_is_information_not_an_error() {
        assert!(matches!(parse(["peer", "--help"]), Err(ArgError::Info(_))));
    }
}
