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

/// The kernel's TCP congestion control for new connections (`net.ipv4.tcp_congestion_control`).
pub fn tcp_congestion_control() -> Option<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// What a congestion control other than Linux's default does to this suite's TCP cells, for the
/// run's notes and the start of the run; `None` for `cubic` and `reno`, which send a reply as
/// fast as the receiver takes it.
pub fn congestion_control_warning(congestion_control: &str) -> Option<String> {
    if matches!(congestion_control, "cubic" | "reno") {
        return None;
    }
    Some(format!(
        "TCP congestion control is {congestion_control}, not Linux's default cubic. A pacing \
         one such as bbr sends each connection's data at that connection's own bandwidth \
         estimate, which differs from connection to connection: over loopback, two connections \
         of one client answered GET 1 MiB up to 1.6 times apart (the cell's A/A check shows \
         it), so TCP cells with large values compare connections, not clients. Before the run: \
         `sysctl -w net.ipv4.tcp_congestion_control=cubic`, as root"
    ))
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

#[cfg(test)]
mod tests {
    use super::congestion_control_warning;

    #[test]
    fn only_a_pacing_congestion_control_is_warned_of() {
        assert_eq!(congestion_control_warning("cubic"), None);
        assert_eq!(congestion_control_warning("reno"), None);
        let warning = congestion_control_warning("bbr").expect("bbr paces each connection");
        assert!(
            warning.contains("TCP congestion control is bbr"),
            "{warning}"
        );
        assert!(
            warning.contains("sysctl -w net.ipv4.tcp_congestion_control=cubic"),
            "{warning}"
        );
    }
}
