//! `reports/<run-id>/results.json`: the schema (documented in `reports/README.md`) and the
//! run's environment.

use std::path::Path;

use anyhow::{Context, Result};

use kvbench_core::{Backend, Kind, Transport};

use crate::costs::Costs;
use crate::matrix::Cell;

pub use kvbench_results::{
    Interval, IntervalKind, Latency, Results, Row, Run, SCHEMA_VERSION, Status, Wall, median,
};

/// The schema's name for a core enum.
pub fn backend(backend: Backend) -> kvbench_results::Backend {
    match backend {
        Backend::Redis => kvbench_results::Backend::Redis,
        Backend::Memcached => kvbench_results::Backend::Memcached,
        Backend::RedisCluster => kvbench_results::Backend::RedisCluster,
    }
}

/// The schema's name for a core enum.
pub fn transport(transport: Transport) -> kvbench_results::Transport {
    match transport {
        Transport::Tcp => kvbench_results::Transport::Tcp,
        Transport::Unix => kvbench_results::Transport::Unix,
    }
}

/// The schema's name for a core enum.
pub fn kind(kind: Kind) -> kvbench_results::Kind {
    match kind {
        Kind::HandWritten => kvbench_results::Kind::HandWritten,
        Kind::Library => kvbench_results::Kind::Library,
    }
}

/// A row for `client` in `cell` with nothing measured yet.
pub fn new_row(cell: &Cell, client: &str, kind: kvbench_results::Kind) -> Row {
    let key = kvbench_results::RowKey {
        backend: backend(cell.backend),
        op: cell.op,
        value_size: cell.value_size as u64,
        pipeline: cell.pipeline as u64,
        transport: transport(cell.transport),
        concurrency: cell.concurrency as u32,
        offered_rate: None,
        client: client.to_string(),
    };
    Row::new(cell.id(), key, kind)
}

/// Building a row as a pair goes through verification, timing and the cost pass.
pub trait RowExt: Sized {
    /// Marks the row failed (or unsupported) with a reason.
    fn fail(self, status: Status, error: impl ToString) -> Self;
    /// Sets the time per operation (and ops/s from its median), measured once.
    fn with_wall(self, wall: Wall, timing: &str) -> Self;
    /// Copies the cost pass into the row.
    fn with_costs(self, costs: &Costs) -> Self;
}

impl RowExt for Row {
    fn fail(mut self, status: Status, error: impl ToString) -> Row {
        self.status = status;
        self.error = Some(error.to_string());
        self
    }

    fn with_wall(mut self, wall: Wall, timing: &str) -> Row {
        self.ops_per_sec = Some(1e9 / wall.median);
        self.wall_ns_per_op = Some(wall);
        self.timing = Some(timing.to_string());
        self.runs = 1;
        self
    }

    fn with_costs(mut self, costs: &Costs) -> Row {
        self.cpu_ns_per_op = costs.cpu_ns_per_op;
        self.user_ns_per_op = costs.user_ns_per_op;
        self.sys_ns_per_op = costs.sys_ns_per_op;
        self.syscalls_per_op = costs.syscalls_per_op;
        self.all_syscalls_per_op = costs.all_syscalls_per_op;
        self.allocs_per_op = costs.allocs_per_op;
        self.alloc_bytes_per_op = costs.alloc_bytes_per_op;
        self.bytes_read_per_op = costs.bytes_read_per_op;
        self.bytes_written_per_op = costs.bytes_written_per_op;
        if let Some(why) = &costs.wire_error {
            self.flags
                .push(format!("bytes on the wire not measured: {why}"));
        }
        self.latency_ns = costs.latency_ns.map(|[p50, p99, p999]| Latency {
            p50,
            p99,
            p999: Some(p999),
        });
        self
    }
}

/// A time per operation from a few separate measurements (single calls, baseline runs, runs of
/// a cell), ns: their median, their mean, and their range; no interval for just one.
pub fn wall_of(measurements: &[f64]) -> Option<Wall> {
    let median = median(measurements)?;
    let n = measurements.len();
    let (lower, upper) = measurements
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    Some(Wall {
        median,
        mean: Some(measurements.iter().sum::<f64>() / n as f64),
        interval: (n >= 2).then_some(Interval {
            kind: IntervalKind::Range,
            n: n as u32,
            lower,
            upper,
        }),
    })
}

/// A time per operation from paired rounds' throughputs (ops/s, one per round), ns: the median
/// over the rounds, its 95 % bootstrap interval, and the mean.
pub fn wall_of_rounds(rates: &[f64]) -> Option<Wall> {
    let per_op: Vec<f64> = rates.iter().map(|rate| 1e9 / rate).collect();
    let median = median(&per_op)?;
    let (lower, upper) = kvbench_results::verdict::median_interval(&per_op);
    Some(Wall {
        median,
        mean: Some(per_op.iter().sum::<f64>() / per_op.len() as f64),
        interval: Some(Interval {
            kind: IntervalKind::Ci95,
            n: per_op.len() as u32,
            lower,
            upper,
        }),
    })
}

/// One row from the K runs of a pair: every run's rounds pooled (the headline is their median,
/// the interval its bootstrap interval over all rounds), the spread (max/min of the runs'
/// ops/s), the median of each cost, every flag. A run that failed fails the row, with its error.
/// The paired ratios are recomputed over the pooled rounds by the runner, which has the cell's
/// reference and A/A twin.
pub fn merge(runs: &[Row]) -> Row {
    let mut row = runs[0].clone();
    if runs.len() == 1 {
        return row;
    }
    row.seconds = Some(runs.iter().filter_map(|r| r.seconds).sum());
    if let Some((i, failed)) = runs.iter().enumerate().find(|(_, r)| !r.is_ok()) {
        let mut failed = failed.clone();
        failed.error = Some(format!(
            "visit {} of {}: {}",
            i + 1,
            runs.len(),
            failed.error.clone().unwrap_or_default()
        ));
        failed.seconds = row.seconds;
        return failed;
    }
    let medians: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.wall_ns_per_op.map(|w| w.median))
        .collect();
    let pooled: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.round_ops_per_sec.clone())
        .collect();
    // The runner gives every run's rows their rounds' indices over all runs.
    let indices: Vec<u32> = runs.iter().flat_map(|r| r.round_indices.clone()).collect();
    if medians.len() == runs.len() {
        // Rounds pooled where every run has them; a baseline measured otherwise keeps the runs'
        // medians and their range.
        let paired = runs.iter().all(|r| !r.round_ops_per_sec.is_empty());
        let mut wall = match paired {
            true => wall_of_rounds(&pooled).expect("at least one round"),
            false => wall_of(&medians).expect("at least one run"),
        };
        if !paired {
            let means: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.wall_ns_per_op.and_then(|w| w.mean))
                .collect();
            wall.mean =
                (means.len() == runs.len()).then(|| means.iter().sum::<f64>() / means.len() as f64);
        }
        let (low, high) = medians
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        row.ops_per_sec = Some(1e9 / wall.median);
        row.spread = Some(high / low);
        row.wall_ns_per_op = Some(wall);
        row.runs = runs.len() as u32;
        row.round_ops_per_sec = pooled;
        row.round_indices = indices;
        row.timing = Some(format!(
            "{} visits, each against freshly started servers, their rounds pooled; each: {}",
            runs.len(),
            runs[0].timing.clone().unwrap_or_default()
        ));
    }
    let each = |field: fn(&Row) -> Option<f64>| {
        let values: Vec<f64> = runs.iter().filter_map(field).collect();
        median(&values)
    };
    row.cpu_ns_per_op = each(|r| r.cpu_ns_per_op);
    row.user_ns_per_op = each(|r| r.user_ns_per_op);
    row.sys_ns_per_op = each(|r| r.sys_ns_per_op);
    row.syscalls_per_op = each(|r| r.syscalls_per_op);
    row.all_syscalls_per_op = each(|r| r.all_syscalls_per_op);
    row.allocs_per_op = each(|r| r.allocs_per_op);
    row.alloc_bytes_per_op = each(|r| r.alloc_bytes_per_op);
    row.bytes_read_per_op = each(|r| r.bytes_read_per_op);
    row.bytes_written_per_op = each(|r| r.bytes_written_per_op);
    // From the runs that had a cost pass (a cell's later parts have none).
    let latencies: Vec<Latency> = runs.iter().filter_map(|r| r.latency_ns).collect();
    if !latencies.is_empty() {
        let pick = |field: fn(&Latency) -> Option<u64>| {
            let values: Vec<f64> = latencies
                .iter()
                .filter_map(|l| field(l).map(|v| v as f64))
                .collect();
            median(&values).map(|v| v.round() as u64)
        };
        row.latency_ns = Some(Latency {
            p50: pick(|l| Some(l.p50)).unwrap_or_default(),
            p99: pick(|l| Some(l.p99)).unwrap_or_default(),
            p999: pick(|l| l.p999),
        });
    }
    row.flags = runs.iter().flat_map(|r| r.flags.clone()).collect();
    row.flags.dedup();
    row
}

/// Flags a request/response row whose cost-pass median latency disagrees with its headline time
/// per operation by more than the run-to-run spread (the row's own, else the run's noise figure,
/// else 5 %): one of the two saw a different machine than the other. With many callers the two
/// measure different things (each caller waits behind the others: its latency is about the
/// callers times the time per operation), so only one-caller rows are compared.
pub fn flag_disagreement(row: &mut Row, run_noise: Option<f64>) {
    let (Some(wall), Some(latency)) = (row.wall_ns_per_op, row.latency_ns) else {
        return;
    };
    if row.pipeline != 1 || row.concurrency != 1 || latency.p50 == 0 {
        return;
    }
    let p50 = latency.p50 as f64;
    let disagreement = p50.max(wall.median) / p50.min(wall.median);
    let allowed = kvbench_results::verdict::spread_of(row, run_noise).unwrap_or(1.05);
    if disagreement > allowed {
        row.flags.push(format!(
            "the cost pass's p50 ({:.0} ns) and the headline median ({:.0} ns) differ by {}, more \
             than the run-to-run spread ({})",
            p50,
            wall.median,
            kvbench_results::verdict::percent(disagreement),
            kvbench_results::verdict::percent(allowed)
        ));
    }
}

/// The folder name criterion gives a group or function id: the characters `?"/\*<>:|^` become
/// `_` (criterion's `make_filename_safe`, which it does not export). Ids here are ASCII and short,
/// so its length truncation never applies.
pub fn criterion_dir_name(id: &str) -> String {
    id.replace(['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'], "_")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Cell, Op};

    fn timed(median: f64) -> Row {
        let cell = Cell {
            backend: Backend::Redis,
            op: Op::Get,
            value_size: 3,
            pipeline: 1,
            transport: Transport::Tcp,
            concurrency: 1,
            open: false,
        };
        new_row(&cell, "a-client", kvbench_results::Kind::HandWritten).with_wall(
            wall_of(&[median * 0.99, median, median * 1.01]).unwrap(),
            "calls",
        )
    }

    #[test]
    fn runs_merge_into_their_median_range_and_spread() {
        let merged = merge(&[timed(100.0), timed(110.0), timed(104.0)]);
        let wall = merged.wall_ns_per_op.unwrap();
        assert_eq!(wall.median, 104.0);
        let interval = wall.interval.unwrap();
        assert_eq!((interval.kind, interval.n), (IntervalKind::Range, 3));
        assert_eq!((interval.lower, interval.upper), (100.0, 110.0));
        assert_eq!(merged.runs, 3);
        assert!((merged.spread.unwrap() - 1.1).abs() < 1e-12);
        assert!((merged.ops_per_sec.unwrap() - 1e9 / 104.0).abs() < 1e-6);
    }

    #[test]
    fn a_cost_only_the_first_part_measured_is_kept() {
        // A cell's later parts make no cost pass: their rows have no latency or syscalls.
        let mut costed = timed(100.0);
        costed.latency_ns = Some(Latency {
            p50: 90,
            p99: 200,
            p999: None,
        });
        costed.syscalls_per_op = Some(2.0);
        let merged = merge(&[costed, timed(104.0), timed(110.0)]);
        assert_eq!(merged.latency_ns.map(|l| (l.p50, l.p99)), Some((90, 200)));
        assert_eq!(merged.syscalls_per_op, Some(2.0));
        assert_eq!(merged.runs, 3);
    }

    #[test]
    fn one_failed_run_fails_the_row_and_says_which() {
        let failed = timed(100.0).fail(Status::Failed, "connect: refused");
        let merged = merge(&[timed(100.0), failed]);
        assert_eq!(merged.status, Status::Failed);
        assert_eq!(
            merged.error.as_deref(),
            Some("visit 2 of 2: connect: refused")
        );
    }

    #[test]
    fn one_measurement_has_no_interval() {
        let wall = wall_of(&[5.0]).unwrap();
        assert_eq!((wall.median, wall.interval), (5.0, None));
        assert_eq!(timed(100.0).runs, 1);
        assert_eq!(merge(&[timed(100.0)]).spread, None);
    }
}
