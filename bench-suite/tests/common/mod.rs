//! What the whole-run tests share: running the `kvbench-matrix` binary in criterion's `--test`
//! mode (every pair once, verification included) and reading what it wrote.
#![allow(dead_code)] // Each test binary uses a different part.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use kvbench_bench_suite::results::{Results, Row};
/// A whole `--test` run takes seconds; a hang must fail the test, not stall CI.
const RUN_DEADLINE: Duration = Duration::from_secs(600);

pub struct Run {
    pub status: ExitStatus,
    pub stderr: String,
    pub results: Results,
}

/// Runs the matrix binary with `env`, writing its report under a fresh temporary folder.
pub fn run_matrix(name: &str, env: &[(&str, String)]) -> Run {
    let reports =
        std::env::temp_dir().join(format!("kvbench-whole-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&reports);
    let mut command = Command::new(env!("CARGO_BIN_EXE_kvbench-matrix"));
    command
        .arg("--test")
        .env("KVBENCH_REPORTS_DIR", &reports)
        .env("RUN_ID", name)
        .env("PLACEMENT", "none")
        .env_remove("REDIS_URL")
        .env_remove("MEMCACHED_URL")
        .env_remove(kvbench_bench_suite::network_floor::TREAT_AS_REMOTE_VAR)
        .env_remove("CLIENTS")
        .env_remove("CELLS")
        .env_remove("MODE");
    for (key, value) in env {
        command.env(key, value);
    }
    let finished = kvbench_bench_suite::child::run_within(&mut command, RUN_DEADLINE)
        .expect("start kvbench-matrix");
    let Some(status) = finished.status else {
        panic!("kvbench-matrix ran for more than {RUN_DEADLINE:?}");
    };
    let stderr = finished.stderr;
    let path = reports.join(name).join("results.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err}\nstderr:\n{stderr}", path.display()));
    let results = serde_json::from_str(&text).expect("results.json parses");
    let _ = std::fs::remove_dir_all(&reports);
    Run {
        status,
        stderr,
        results,
    }
}

/// Every row of the run was listed on stderr as it was recorded (`--test` must account for every
/// pair, not only those criterion times).
pub fn assert_every_pair_listed(run: &Run) {
    assert!(!run.results.rows.is_empty());
    for row in &run.results.rows {
        let line = kvbench_bench_suite::runner::pair_line(row);
        assert!(
            run.stderr.lines().any(|printed| printed == line),
            "{line:?} not listed; stderr:\n{}",
            run.stderr
        );
    }
}

pub fn rows_of<'a>(results: &'a Results, cell: &str) -> Vec<&'a Row> {
    results.rows.iter().filter(|row| row.cell == cell).collect()
}

/// The private folder a run's servers lived in, from their recorded command lines.
pub fn server_dirs(results: &Results) -> Vec<PathBuf> {
    let configs = [
        &results.run.servers.redis.config,
        &results.run.servers.memcached.config,
    ];
    configs
        .iter()
        .flat_map(|config| config.split_whitespace())
        .filter_map(|word| {
            word.strip_prefix("/tmp/")
                .map(|rest| Path::new("/tmp").join(rest))
        })
        .filter_map(|path| {
            path.ancestors()
                .find(|dir| {
                    dir.file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with("kvbench-servers-"))
                })
                .map(Path::to_path_buf)
        })
        .collect()
}

/// Pids of processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(needle)
        {
            pids.push(pid);
        }
    }
    pids
}
