//! The machine and the checkout a run records: git commit, toolchain, kernel, CPU, time, and
//! where reports go.

use std::path::{Path, PathBuf};
use std::process::Command;

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// `git rev-parse HEAD`, with `-dirty` when tracked files outside reports/ have changed.
pub fn git_sha() -> String {
    let Some(sha) = command_output("git", &["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    // `-dirty` when tracked code differs from the commit. Changes under reports/ do not count:
    // the suite writes there itself (regenerating the committed reference run rewrites it).
    let dirty = command_output(
        "git",
        &[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ":/",
            ":(top,exclude)reports",
        ],
    )
    .is_some_and(|status| !status.is_empty());
    if dirty { format!("{sha}-dirty") } else { sha }
}

/// `rustc --version` (the toolchain that cargo uses).
pub fn rustc_version() -> String {
    command_output("rustc", &["--version"]).unwrap_or_else(|| "unknown".into())
}

/// The kernel release.
pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|model| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Now, as RFC 3339 UTC (`2026-11-30T09:15:02Z`), from `date` so no time crate is needed.
pub fn now_utc() -> String {
    command_output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]).unwrap_or_else(|| "unknown".into())
}

/// The workspace's `reports/` folder (the bench runs with the package folder as its cwd), or
/// `KVBENCH_REPORTS_DIR` when set (the tests that run whole matrices write elsewhere).
pub fn reports_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KVBENCH_REPORTS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("reports");
    dir.canonicalize().unwrap_or(dir)
}

/// CPUs online on the machine (not just those this process is pinned to).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf only reads a system setting.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}
