//! Compiles the workload contract's messages with protox (pure Rust, no system `protoc`) and
//! prost. The tonic service is generated where it is used, in the Rust peer's build script, so
//! that crates reading artifacts do not compile a gRPC stack.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let file = "rpcarena/bench/v1/bench.proto";
    println!("cargo:rerun-if-changed={proto_root}/{file}");
    let descriptors = protox::compile([file], [proto_root])?;
    prost_build::Config::new()
        // A BTreeMap encodes its entries in key order, so a structured payload's bytes are the
        // same on every run (a HashMap's order is random; sizes would not change, bytes would).
        .btree_map([".rpcarena.bench.v1.Structured.attributes"])
        .compile_fds(descriptors)?;
    Ok(())
}
