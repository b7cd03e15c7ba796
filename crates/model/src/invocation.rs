//! The peer command line of docs/peer-protocol.md, built in one place: what the controller
//! appends to a peer's `command` for each role, from the sample's configuration and load model.

use crate::campaign::Timing;
use crate::load::{LoadSpec, Payload, format_rate};
use crate::matrix::SampleConfig;
use std::path::Path;
use std::time::Duration;

/// `server --stack S --listen HOST:PORT --cert FILE --key FILE`, or (revision 1.3, `tls`
/// false) `server --stack S --listen HOST:PORT --tls off`.
pub fn server_args(stack: &str, listen: &str, tls: bool, cert: &Path, key: &Path) -> Vec<String> {
    let mut args = vec![
        "server".to_string(),
        "--stack".into(),
        stack.into(),
        "--listen".into(),
        listen.into(),
    ];
    if tls {
        args.extend([
            "--cert".into(),
            cert.display().to_string(),
            "--key".into(),
            key.display().to_string(),
        ]);
    } else {
        args.extend(["--tls".into(), "off".into()]);
    }
    args
}

/// Where a client finds its server and how it verifies it.
#[derive(Debug, Clone, Copy)]
pub struct ServerTarget<'a> {
    /// `host:port` from the server's `ready` event.
    pub address: &'a str,
    /// The name the server's certificate is for.
    pub server_name: &'a str,
    /// The CA certificate the client trusts.
    pub ca: &'a Path,
}

/// `client --stack S --server ... --shape ... --load MODEL [model arguments]`: everything a
/// client needs for one sample. `seed` seeds the open model's Poisson arrivals.
pub fn client_args(
    config: &SampleConfig,
    timing: &Timing,
    target: ServerTarget<'_>,
    seed: u64,
) -> Vec<String> {
    let ms = |d: Duration| d.as_millis().to_string();
    let mut args = vec![
        "client".to_string(),
        "--stack".into(),
        config.stack.clone(),
        "--server".into(),
        target.address.into(),
    ];
    if config.tls {
        args.extend([
            "--server-name".into(),
            target.server_name.into(),
            "--ca".into(),
            target.ca.display().to_string(),
        ]);
    } else {
        // Only 1.3 peers know the argument; TLS on is the default.
        args.extend(["--tls".into(), "off".into()]);
    }
    // A one-way command has no response and no stream (docs/peer-protocol.md, "Shapes").
    let (response_size, messages) = if config.shape.is_one_way() {
        (0, 1)
    } else {
        (config.response_size, config.messages_per_stream)
    };
    args.extend([
        "--shape".into(),
        config.shape.to_string(),
        "--concurrency".into(),
        config.concurrency.to_string(),
        "--request-size".into(),
        config.request_size.to_string(),
        "--response-size".into(),
        response_size.to_string(),
        "--messages-per-stream".into(),
        messages.to_string(),
        "--warmup-ms".into(),
        ms(timing.warmup),
        "--window-ms".into(),
        ms(timing.window),
        "--drain-ms".into(),
        ms(timing.drain),
    ]);
    if config.payload != Payload::Zeros {
        // Only peers that offer other payloads know the argument; zeros is the default.
        args.extend(["--payload".to_string(), config.payload.to_string()]);
    }
    if !config.client_mode.is_official() {
        // Only 1.4 peers know the argument; official is the default.
        args.extend(["--client-mode".to_string(), config.client_mode.to_string()]);
    }
    args.extend(load_args(&config.load, seed));
    args
}

/// `--load MODEL` and the model's own arguments.
fn load_args(load: &LoadSpec, seed: u64) -> Vec<String> {
    let mut args = vec!["--load".to_string(), load.model().to_string()];
    match load {
        LoadSpec::Closed => {}
        LoadSpec::Window { in_flight } => {
            args.extend(["--in-flight".into(), in_flight.to_string()]);
        }
        LoadSpec::Backpressure { max_in_flight } => {
            args.extend(["--max-in-flight".into(), max_in_flight.to_string()]);
        }
        LoadSpec::SendSaturation { streams, settle } => {
            args.extend([
                "--streams".into(),
                streams.to_string(),
                "--settle-ms".into(),
                settle.as_millis().to_string(),
            ]);
        }
        LoadSpec::Open { rate, arrival } => {
            args.extend([
                "--rate".into(),
                format_rate(*rate),
                "--arrival".into(),
                arrival.as_str().into(),
                "--seed".into(),
                seed.to_string(),
            ]);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;
    use rpcarena_protocol::workload::Shape;

    fn config(load: LoadSpec, payload: Payload) -> SampleConfig {
        SampleConfig {
            key: "k".into(),
            cell: "c".into(),
            client: "p".into(),
            server: "p".into(),
            stack: "quic".into(),
            shape: Shape::Bidi,
            concurrency: 4,
            request_size: 256,
            response_size: 0,
            messages_per_stream: 128,
            payload,
            load,
            tls: true,
            client_mode: Default::default(),
        }
    }

    #[test]
    fn a_client_gets_the_documented_arguments_in_order() {
        let target = ServerTarget {
            address: "10.77.0.2:4000",
            server_name: "10.77.0.2",
            ca: Path::new("/run/ca.pem"),
        };
        let args = client_args(
            &config(LoadSpec::Closed, Payload::Zeros),
            &Timing::default(),
            target,
            7,
        );
        assert_eq!(
            args.join(" "),
            "client --stack quic --server 10.77.0.2:4000 --server-name 10.77.0.2 --ca /run/ca.pem \
             --shape bidi --concurrency 4 --request-size 256 --response-size 0 \
             --messages-per-stream 128 --warmup-ms 1000 --window-ms 5000 --drain-ms 5000 \
             --load closed"
        );
        let open = LoadSpec::Open {
            rate: 1000.0,
            arrival: Arrival::Poisson,
        };
        let args = client_args(
            &config(open, Payload::Structured),
            &Timing::default(),
            target,
            9,
        );
        assert!(
            args.join(" ").ends_with(
                "--payload structured --load open --rate 1000 --arrival poisson --seed 9"
            ),
            "{args:?}"
        );
    }

    #[test]
    fn every_load_model_passes_its_parameters() {
        let cases = [
            (
                LoadSpec::Window { in_flight: 8 },
                "--load window --in-flight 8",
            ),
            (
                LoadSpec::Backpressure { max_in_flight: 100 },
                "--load backpressure --max-in-flight 100",
            ),
            (
                LoadSpec::SendSaturation {
                    streams: 2,
                    settle: Duration::from_millis(200),
                },
                "--load send-saturation --streams 2 --settle-ms 200",
            ),
        ];
        for (load, expected) in cases {
            assert_eq!(load_args(&load, 0).join(" "), expected);
        }
    }

    #[test]
    fn a_server_listens_with_its_certificate() {
        let (cert, key) = (Path::new("s.pem"), Path::new("s.key"));
        assert_eq!(
            server_args("grpc", "127.0.0.1:0", true, cert, key).join(" "),
            "server --stack grpc --listen 127.0.0.1:0 --cert s.pem --key s.key"
        );
    }

    #[test]
    fn replay_and_dated_are_passed_and_official_is_not() {
        let target = ServerTarget {
            address: "127.0.0.1:4000",
            server_name: "127.0.0.1",
            ca: Path::new("/run/ca.pem"),
        };
        let official = config(LoadSpec::Closed, Payload::Zeros);
        let args = client_args(&official, &Timing::default(), target, 0);
        assert!(!args.iter().any(|a| a == "--client-mode"), "{args:?}");
        let replay = SampleConfig {
            client_mode: rpcarena_protocol::workload::ClientMode::Replay,
            request_size: 0,
            ..config(LoadSpec::Closed, Payload::Dated)
        };
        let args = client_args(&replay, &Timing::default(), target, 0).join(" ");
        assert!(
            args.contains("--payload dated --client-mode replay"),
            "{args}"
        );
        assert!(
            args.contains("--request-size 0 --response-size 0"),
            "{args}"
        );
    }

    #[test]
    fn plaintext_passes_tls_off_and_no_certificate_or_ca() {
        let (cert, key) = (Path::new("s.pem"), Path::new("s.key"));
        assert_eq!(
            server_args("zmq", "127.0.0.1:0", false, cert, key).join(" "),
            "server --stack zmq --listen 127.0.0.1:0 --tls off"
        );
        let target = ServerTarget {
            address: "127.0.0.1:4000",
            server_name: "127.0.0.1",
            ca: Path::new("/run/ca.pem"),
        };
        let plain = SampleConfig {
            tls: false,
            ..config(LoadSpec::Closed, Payload::Zeros)
        };
        let args = client_args(&plain, &Timing::default(), target, 0).join(" ");
        assert!(
            args.starts_with("client --stack quic --server 127.0.0.1:4000 --tls off --shape bidi"),
            "{args}"
        );
        assert!(
            !args.contains("--ca") && !args.contains("--server-name"),
            "{args}"
        );
    }
}
