//! Installs a pack and writes one of its files to standard output: the Rust twin of
//! Examples/c/install_pack.c.
//!
//!     cargo run --offline --example install_pack -- CONTAINER CATALOG_URL ROOT_PUB PACK FILE [CA]

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 || args.len() > 6 {
        eprintln!("usage: install_pack CONTAINER CATALOG_URL ROOT_PUB PACK FILE [CA_FILE]");
        return ExitCode::from(2);
    }
    let mut config = backlot::Config::new().container_path(&args[0]).catalog_url(&args[1]).trusted_key_path(&args[2]);
    if let Some(ca) = args.get(5) {
        config = config.ca_path(ca);
    }
    let run = || -> backlot::Result<Vec<u8>> {
        let manager = config.open()?;
        manager.ensure_local_availability(
            &args[3],
            Some(&mut |done: u64, total: u64| eprint!("\r{done} of {total} bytes")),
        )?;
        eprintln!();
        manager.contents(&args[4], Some(&args[3]))
    };
    match run() {
        Ok(bytes) => {
            let _ = std::io::stdout().write_all(&bytes);
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("install_pack: {error}");
            ExitCode::FAILURE
        }
    }
}
