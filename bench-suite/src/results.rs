//! `reports/<run-id>/results.json`: the schema (documented in `reports/README.md`) and the
//! run's environment.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::costs::Costs;
use crate::matrix::Cell;

/// The whole file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// When, where and how the run was made.
    pub run: Run,
    /// One row per (cell, client), baselines included.
    pub rows: Vec<Row>,
}

/// The run's environment and settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// Folder name under `reports/`.
    pub id: String,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// RFC 3339 UTC end time (null while running).
    pub finished_at: Option<String>,
    /// `git rev-parse HEAD` (with `-dirty` if the tree had changes).
    pub git_sha: String,
    /// full, quick or test.
    pub mode: String,
    /// `rustc --version`.
    pub rustc: String,
    /// Kernel release.
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: String,
    /// CPUs available to the process.
    pub cores: usize,
    /// CPU placement.
    pub placement: PlacementRecord,
    /// Server versions and configuration.
    pub servers: ServersRecord,
    /// Run time so far, seconds.
    pub duration_s: f64,
    /// criterion's warm-up and measurement time and sample size.
    pub criterion_args: String,
    /// Filters the run was given (`CLIENTS`, `CELLS`).
    pub filters: String,
    /// Why a measurement is missing from every row (for example, no syscall counters).
    pub notes: Vec<String>,
}

/// Placement as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlacementRecord {
    /// same-core, split or none.
    pub mode: String,
    /// CPU the servers were pinned to.
    pub server_cpu: Option<usize>,
    /// CPU the benchmark was pinned to.
    pub client_cpu: Option<usize>,
}

/// Both servers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServersRecord {
    /// Redis.
    pub redis: ServerRecord,
    /// memcached.
    pub memcached: ServerRecord,
}

/// One server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Version it reported.
    pub version: String,
    /// Command lines it was started with, or the external URL.
    pub config: String,
    /// True if given by URL.
    pub external: bool,
}

/// Mean and 95% confidence interval of wall time per operation, ns.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Interval {
    /// Point estimate.
    pub mean: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// Latency percentiles, ns.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile (redis-benchmark does not report it).
    pub p999: Option<u64>,
}

/// One (cell, client) pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Group id, e.g. `redis/get/3B/unix`.
    pub cell: String,
    /// redis or memcached.
    pub backend: String,
    /// get, get_miss, set, set_ex or pipeline_set.
    pub op: String,
    /// Value size, bytes.
    pub value_size: usize,
    /// Commands per call (1 outside pipelines).
    pub pipeline: usize,
    /// tcp or unix.
    pub transport: String,
    /// Client name.
    pub client: String,
    /// hand-written, library or baseline.
    pub kind: String,
    /// ok, failed or unsupported.
    pub status: String,
    /// Why it failed or is unsupported.
    pub error: Option<String>,
    /// Operations (commands) per second.
    pub ops_per_sec: Option<f64>,
    /// Wall time per operation.
    pub wall_ns_per_op: Option<Interval>,
    /// How the wall time was measured: `criterion`, `single-shot` or the baseline tool.
    pub timing: Option<String>,
    /// Process CPU time per op.
    pub cpu_ns_per_op: Option<f64>,
    /// Socket read/write-family syscalls per op.
    pub syscalls_per_op: Option<f64>,
    /// All syscalls per op.
    pub all_syscalls_per_op: Option<f64>,
    /// Allocations per op.
    pub allocs_per_op: Option<f64>,
    /// Bytes allocated per op.
    pub alloc_bytes_per_op: Option<f64>,
    /// Percentiles of single operations (request/response cells).
    pub latency_ns: Option<Latency>,
    /// criterion's report for the cell, relative to the run folder.
    pub criterion_report: Option<String>,
    /// Wall-clock seconds the run spent on this pair: connect, verify, time, cost pass.
    #[serde(default)]
    pub seconds: Option<f64>,
}

impl Row {
    /// A row for `client` in `cell` with nothing measured yet.
    pub fn new(cell: &Cell, client: &str, kind: &str) -> Row {
        Row {
            cell: cell.id(),
            backend: cell.backend.to_string(),
            op: cell.op.as_str().to_string(),
            value_size: cell.value_size,
            pipeline: cell.pipeline,
            transport: cell.transport.to_string(),
            client: client.to_string(),
            kind: kind.to_string(),
            status: "ok".to_string(),
            error: None,
            ops_per_sec: None,
            wall_ns_per_op: None,
            timing: None,
            cpu_ns_per_op: None,
            syscalls_per_op: None,
            all_syscalls_per_op: None,
            allocs_per_op: None,
            alloc_bytes_per_op: None,
            latency_ns: None,
            criterion_report: None,
            seconds: None,
        }
    }

    /// Marks the row failed (or unsupported) with a reason.
    pub fn fail(mut self, status: &str, error: impl ToString) -> Row {
        self.status = status.to_string();
        self.error = Some(error.to_string());
        self
    }

    /// Sets wall time per op (and ops/s from it).
    pub fn with_wall(mut self, wall: Interval, timing: &str) -> Row {
        self.ops_per_sec = Some(1e9 / wall.mean);
        self.wall_ns_per_op = Some(wall);
        self.timing = Some(timing.to_string());
        self
    }

    /// Copies the cost pass into the row.
    pub fn with_costs(mut self, costs: &Costs) -> Row {
        self.cpu_ns_per_op = costs.cpu_ns_per_op;
        self.syscalls_per_op = costs.syscalls_per_op;
        self.all_syscalls_per_op = costs.all_syscalls_per_op;
        self.allocs_per_op = costs.allocs_per_op;
        self.alloc_bytes_per_op = costs.alloc_bytes_per_op;
        self.latency_ns = costs.latency_ns.map(|[p50, p99, p999]| Latency {
            p50,
            p99,
            p999: Some(p999),
        });
        self
    }
}

/// The folder name criterion gives a group or function id: the characters `?"/\*<>:|^` become
/// `_` (criterion's `make_filename_safe`, which it does not export). Ids here are ASCII and short,
/// so its length truncation never applies.
pub fn criterion_dir_name(id: &str) -> String {
    id.replace(['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'], "_")
}

/// criterion's estimates for one function: mean and its confidence interval, ns per iteration.
pub fn criterion_estimate(criterion_dir: &Path, group: &str, function: &str) -> Result<Interval> {
    let path = criterion_dir
        .join(criterion_dir_name(group))
        .join(criterion_dir_name(function))
        .join("new/estimates.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    let mean = &json["mean"];
    let number = |v: &serde_json::Value| v.as_f64().context("estimates.json: not a number");
    Ok(Interval {
        mean: number(&mean["point_estimate"])?,
        lower: number(&mean["confidence_interval"]["lower_bound"])?,
        upper: number(&mean["confidence_interval"]["upper_bound"])?,
    })
}

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

/// Writes `results.json` atomically (write then rename), so a reader never sees half a file.
pub fn write(dir: &Path, results: &Results) -> Result<()> {
    let tmp = dir.join("results.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(results)?)?;
    std::fs::rename(&tmp, dir.join("results.json"))?;
    Ok(())
}

/// Points `reports/latest` at this run.
pub fn update_latest(reports: &Path, id: &str) -> Result<()> {
    let latest = reports.join("latest");
    let _ = std::fs::remove_file(&latest);
    std::os::unix::fs::symlink(id, &latest).context("updating reports/latest")
}
