//! Prints what this host supports for network emulation, until the CLI wires it up.
//!
//! ```text
//! cargo run -p rpcarena-netem --example doctor -- [--remove-leftovers] [--json]
//! ```

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--remove-leftovers") {
        match rpcarena_netem::remove_leftovers() {
            Ok(removed) => {
                for l in &removed {
                    println!("removed {} (creator pid {})", l.namespace, l.creator_pid);
                }
                println!("{} leftover namespaces removed", removed.len());
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    let report = rpcarena_netem::doctor();
    if args.iter().any(|a| a == "--json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{report}");
    }
}
