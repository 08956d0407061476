//! Finds libbacklot (Backlot's C library) and tells cargo how to link it. Standard library only.
//!
//! In order:
//!  1. `BACKLOT_LIB_DIR`: the folder holding `libbacklot.so` (or `.dylib`, `.dll.lib`/`backlot.lib`).
//!  2. `pkg-config --libs-only-L backlot` (the `backlot.pc` of the Debian package, or of a build
//!     tree through `PKG_CONFIG_PATH`), run as a process.
//!  3. The system's library folders (the linker's defaults).
//!
//! Nothing found panics with what to install. The crate's own tests and examples get an rpath to
//! the folder found, so they run without `LD_LIBRARY_PATH`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIB_DIR_VARIABLE: &str = "BACKLOT_LIB_DIR";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Whether there are tests and examples to give an rpath to (see below).
    println!("cargo:rerun-if-changed=tests");
    println!("cargo:rerun-if-changed=examples");
    for variable in [
        LIB_DIR_VARIABLE,
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
        "LIBRARY_PATH",
    ] {
        println!("cargo:rerun-if-env-changed={variable}");
    }

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let names = library_file_names(&target_os);

    // docs.rs (and anyone documenting without the library) builds the docs without linking.
    if env::var_os("DOCS_RS").is_some() {
        return;
    }

    let folder = match env::var_os(LIB_DIR_VARIABLE).filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if !holds_library(&dir, &names) {
                panic!(
                    "\n{LIB_DIR_VARIABLE}={} holds no {}.\n  hint: point {LIB_DIR_VARIABLE} at the folder \
                     of libbacklot's development link (libbacklot.so beside libbacklot.so.0), or unset it to \
                     search pkg-config and the system\n",
                    dir.display(),
                    names.join(" or ")
                );
            }
            Some(dir)
        }
        None => match pkg_config_dirs() {
            PkgConfig::Found(dirs) => {
                // pkg-config leaves system folders out of -L: an empty answer means "the default".
                let found = dirs.iter().find(|d| holds_library(d, &names)).cloned();
                if found.is_none() && !dirs.is_empty() {
                    println!(
                        "cargo:warning=pkg-config names {} but no {} is there; trying the system's folders",
                        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
                        names.join(" or ")
                    );
                }
                found.or_else(|| system_dir(&names, &target_os))
            }
            PkgConfig::Unavailable(why) => {
                if let Some(dir) = system_dir(&names, &target_os) {
                    Some(dir)
                } else {
                    not_found(&names, &why)
                }
            }
        },
    };

    match folder {
        Some(dir) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            if target_os != "windows" {
                // For this crate's tests and examples only (an application sets its own rpath).
                // Cargo refuses these for a package without such targets (a trimmed copy).
                let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
                if has_rust_files(&manifest.join("tests")) {
                    println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir.display());
                }
                if has_rust_files(&manifest.join("examples")) {
                    println!("cargo:rustc-link-arg-examples=-Wl,-rpath,{}", dir.display());
                }
            }
            // What dependents' build scripts see as DEP_BACKLOT_LIB_DIR.
            println!("cargo:lib_dir={}", dir.display());
        }
        None => {
            not_found(&names, "pkg-config found backlot.pc, but no folder it or the system names holds the library")
        }
    }
    println!("cargo:rustc-link-lib=dylib=backlot");
}

/// The files the linker takes for `-lbacklot` on the target.
fn library_file_names(target_os: &str) -> Vec<&'static str> {
    match target_os {
        "macos" | "ios" => vec!["libbacklot.dylib"],
        "windows" => vec!["backlot.lib", "libbacklot.dll.a"],
        _ => vec!["libbacklot.so"],
    }
}

fn has_rust_files(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "rs")))
        .unwrap_or(false)
}

fn holds_library(dir: &Path, names: &[&str]) -> bool {
    names.iter().any(|n| dir.join(n).exists())
}

enum PkgConfig {
    /// The -L folders of backlot.pc (possibly none).
    Found(Vec<PathBuf>),
    /// pkg-config is missing or knows no backlot.pc: why.
    Unavailable(String),
}

fn pkg_config_dirs() -> PkgConfig {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    match Command::new(&program).args(["--libs-only-L", "backlot"]).output() {
        Err(error) => PkgConfig::Unavailable(format!("{program} could not be run ({error})")),
        Ok(out) if !out.status.success() => PkgConfig::Unavailable(format!(
            "{program} --libs-only-L backlot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let dirs = text
                .split_whitespace()
                .filter_map(|t| t.strip_prefix("-L"))
                .filter(|t| !t.is_empty())
                .map(PathBuf::from)
                .collect();
            PkgConfig::Found(dirs)
        }
    }
}

/// A folder of the system's (the linker's default search) that holds the library.
fn system_dir(names: &[&str], target_os: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(paths) = env::var_os("LIBRARY_PATH") {
        dirs.extend(env::split_paths(&paths));
    }
    if target_os == "windows" {
        return dirs.into_iter().find(|d| holds_library(d, names));
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "arm" => "arm-linux-gnueabihf",
        "x86" => "i386-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        _ => "",
    };
    for base in ["/usr/local/lib", "/usr/lib", "/lib"] {
        if !multiarch.is_empty() {
            dirs.push(Path::new(base).join(multiarch));
        }
        dirs.push(PathBuf::from(base));
    }
    dirs.extend(["/usr/lib64", "/usr/local/lib64", "/opt/homebrew/lib"].map(PathBuf::from));
    dirs.into_iter().find(|d| holds_library(d, names))
}

fn not_found(names: &[&str], why: &str) -> ! {
    panic!(
        "\nlibbacklot (Backlot's C library) was not found: no {} in {LIB_DIR_VARIABLE}, pkg-config or the \
         system's library folders ({why}).\n  hint: install Backlot's library with its development files \
         (the Debian package from `make deb`: libbacklot.so.0, the libbacklot.so link and backlot.pc), or \
         set PKG_CONFIG_PATH to the folder of a backlot.pc, or {LIB_DIR_VARIABLE} to the folder of \
         libbacklot.so\n",
        names.join(" or ")
    );
}
