//! A hostile histogram inside a line under 1 MiB (issue 26): refused before it is inflated, so
//! the process's peak memory does not grow. In a test binary of its own, so that no other test
//! moves the peak it reads.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rpcarena_protocol::histogram::{self, COMPRESSED_COOKIE, HIGHEST_NS, PAYLOAD_COOKIE};
use std::io::Write;

/// The process's peak resident set (VmHWM), in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_zlib_bomb_in_a_small_line_is_refused_without_a_large_allocation() {
    // A V2 header with the protocol's bounds declaring 512 MiB of counts, then 512 MiB of
    // zeros, deflated a MiB at a time: about 700 KB of base64.
    let mut header = PAYLOAD_COOKIE.to_be_bytes().to_vec();
    header.extend_from_slice(&(512u32 << 20).to_be_bytes());
    header.extend_from_slice(&0u32.to_be_bytes());
    header.extend_from_slice(&3u32.to_be_bytes());
    header.extend_from_slice(&1u64.to_be_bytes());
    header.extend_from_slice(&HIGHEST_NS.to_be_bytes());
    header.extend_from_slice(&1.0f64.to_be_bytes());
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&header).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..512 {
        z.write_all(&zeros).unwrap();
    }
    let zlib = z.finish().unwrap();
    let mut bytes = COMPRESSED_COOKIE.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&zlib);
    let text = STANDARD.encode(bytes);
    assert!(text.len() < 1 << 20, "{} bytes of base64", text.len());

    let before = peak_kib();
    let started = std::time::Instant::now();
    let err = histogram::decode(&text).unwrap_err().to_string();
    let took = started.elapsed();
    let grew = peak_kib() - before;
    println!("refused in {took:?}; peak grew {grew} KiB: {err}");
    // Before the fix: the library allocated and inflated 512 MiB, then failed on the counts.
    assert!(
        err.contains("declares a payload of 536870912 bytes")
            && err.contains("refused before inflating it"),
        "{err}"
    );
    assert!(grew < 16 * 1024, "peak memory grew {grew} KiB");
    assert!(took < std::time::Duration::from_millis(200), "{took:?}");
}
