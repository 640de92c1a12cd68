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

/// Keeps the memory this process frees in its allocator rather than handing it back to the
/// kernel, so that every run's allocator behaves the same. Returns the run record's note, or
/// why it could not.
///
/// glibc gives the top of its heap back to the kernel once it exceeds a threshold that glibc
/// itself moves as the program runs. Whether a 1 MiB reply's buffer goes back after each GET
/// then depends on what else the run has left near the top of the heap, and when it does, the
/// next GET faults its 256 pages in again: on this suite's 2-CPU VM, forcing that on every free
/// made Redis GET 1 MiB over TCP about six times slower for every client (1.4 ms of kernel
/// time a GET against 0.1). Fixed thresholds give what a long-running program's heap settles
/// at: blocks below 32 MiB come from the heap and stay there.
pub fn keep_freed_memory() -> Result<String, String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        /// glibc's largest mmap threshold on 64-bit: blocks above it are always mapped afresh.
        const MMAP_THRESHOLD: libc::c_int = 32 << 20;
        // SAFETY: mallopt only sets the allocator's parameters; it takes its own locks.
        let set = unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
        };
        if set {
            Ok(
                "the bench's allocator keeps what it frees (glibc mallopt: M_MMAP_THRESHOLD \
                32 MiB, M_TRIM_THRESHOLD 2 GiB), so that whether a large reply's pages are \
                faulted in again does not depend on the run's history"
                    .to_string(),
            )
        } else {
            Err("glibc's mallopt refused the fixed thresholds".to_string())
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        Err("not glibc: the allocator's thresholds are its own".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{congestion_control_warning, keep_freed_memory};

    /// Minor page faults of the calling thread so far.
    fn thread_page_faults() -> i64 {
        // SAFETY: getrusage writes the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
            0
        );
        usage.ru_minflt
    }

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

    /// 100 rounds of: allocate 1 MiB, touch each page, free. Returns the page faults they took.
    fn faults_of_large_blocks() -> i64 {
        let before = thread_page_faults();
        for round in 0..100u8 {
            let mut block = vec![0u8; 1 << 20];
            for page in block.chunks_mut(4096) {
                page[0] = round;
            }
            std::hint::black_box(&block);
        }
        thread_page_faults() - before
    }

    /// A freed 1 MiB block is reused, not handed back and faulted in again. First the allocator
    /// is made to map every such block afresh, to show that the count sees the difference.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn a_freed_large_block_keeps_its_pages() {
        // SAFETY: mallopt only sets the allocator's parameters; the other tests of this process
        // are only slowed for the moment.
        assert_eq!(
            unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 10) },
            1
        );
        let handed_back = faults_of_large_blocks();
        assert!(
            handed_back > 20_000,
            "{handed_back} page faults when mapped afresh"
        );
        let note = keep_freed_memory().expect("glibc takes the thresholds");
        assert!(note.contains("M_TRIM_THRESHOLD"), "{note}");
        // At most the first round's 256 faults and some, against about 25,600.
        let kept = faults_of_large_blocks();
        assert!(kept < 1000, "{kept} page faults with the pages kept");
    }
}
