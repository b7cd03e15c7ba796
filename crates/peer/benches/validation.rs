//! What the server's validation duty (docs/peer-protocol.md, "Validation duties";
//! `stacks::validate`) costs per request message, next to what a server does anyway for the
//! message: decoding the request and building the response.
//!
//! ```text
//! cargo bench -p rpcarena-peer-rust --bench validation
//! ```
//!
//! Each benchmark handles `MESSAGES` request messages of one bidi call (seq 0..MESSAGES-1, so the
//! stream checks run too) per iteration; the time per message is the iteration time / MESSAGES.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;
use rpcarena_peer_rust::stacks::validate::RequestCheck;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{Payload, Shape, request, response_to};
use std::hint::black_box;

/// Request messages per iteration: one bidi call of 128 messages, as the campaigns run.
const MESSAGES: u64 = 128;

fn requests(kind: Payload, size: u32) -> Vec<pb::Request> {
    (0..MESSAGES)
        .map(|seq| request(kind, seq, size, size, 0))
        .collect()
}

fn validation(c: &mut Criterion) {
    let mut group = c.benchmark_group("server validation");
    group.throughput(Throughput::Elements(MESSAGES));
    for (kind, size) in [
        (Payload::Zeros, 256),
        (Payload::Zeros, 16_384),
        (Payload::Structured, 256),
    ] {
        let calls = requests(kind, size);
        group.bench_function(format!("check ({kind}, {size} B)"), |b| {
            b.iter(|| {
                let mut check = RequestCheck::new(Shape::Bidi);
                for request in &calls {
                    check.check(black_box(request)).expect("well-formed");
                }
                check.finish().expect("not empty");
            })
        });
        let encoded: Vec<Vec<u8>> = calls.iter().map(|r| r.encode_to_vec()).collect();
        group.bench_function(format!("decode and answer ({kind}, {size} B)"), |b| {
            b.iter(|| {
                for bytes in &encoded {
                    let request = pb::Request::decode(black_box(bytes.as_slice())).expect("valid");
                    black_box(response_to(&request, request.seq).encode_to_vec());
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, validation);
criterion_main!(benches);
