//! Records the commit the binary is built from (`PIECEWISE_COMMIT`, read by `provenance`):
//! `--version`, every run's `summary.json` and the reports name it. A build outside a git
//! checkout says `unknown`; a packager may set `PIECEWISE_COMMIT` itself. A tree whose sources
//! differ from the commit is marked `-modified`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PIECEWISE_COMMIT");
    // Again when the commit, the index or the sources change (the library rebuilds then anyway).
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for f in ["HEAD", "index", "refs/heads", "packed-refs"] {
            println!("cargo:rerun-if-changed={dir}/{f}");
        }
    }
    let commit = std::env::var("PIECEWISE_COMMIT").ok().unwrap_or_else(|| {
        match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(c) => {
                let clean = Command::new("git")
                    .args([
                        "diff",
                        "--quiet",
                        "HEAD",
                        "--",
                        "src",
                        "Cargo.toml",
                        "Cargo.lock",
                    ])
                    .status()
                    .is_ok_and(|s| s.success());
                if clean {
                    c
                } else {
                    format!("{c}-modified")
                }
            }
            None => "unknown".into(),
        }
    });
    println!("cargo:rustc-env=PIECEWISE_COMMIT={commit}");
}
