//! Compiles the workload contract with protox (pure Rust), so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let file = "rpcarena/bench/v1/bench.proto";
    println!("cargo:rerun-if-changed={proto_root}/{file}");
    let descriptors = protox::compile([file], [proto_root])?;
    tonic_prost_build::configure()
        // A BTreeMap encodes its entries in key order, so a structured payload's bytes are the
        // same on every run (a HashMap's order is random; sizes would not change, bytes would).
        .btree_map(".rpcarena.bench.v1.Structured.attributes")
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
