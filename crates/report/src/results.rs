//! The `results.json` schema (fixed by the bench-suite issue; documented in `reports/README.md`).
//!
//! Reading is lenient on purpose: every number may be `null` (a failed or unsupported row has no
//! measurements), every field may be missing, and fields this crate does not know are kept
//! (`extra`) and shown in the report's environment section, so the bench can add fields freely.
//! Only a value of the wrong JSON type is an error.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::Error;

/// File name of a run's results inside its folder.
pub const RESULTS_FILE: &str = "results.json";

/// The whole file: what ran and where, then one row per (cell, client) pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The run's environment.
    #[serde(default, deserialize_with = "null_default")]
    pub run: Run,
    /// One row per (cell, client) pair, in the bench's order.
    #[serde(default, deserialize_with = "null_default")]
    pub rows: Vec<Row>,
}

/// What ran, on which machine, with which settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Run id, also the folder name under `reports/`.
    pub id: Option<String>,
    /// When the run started (RFC 3339).
    pub started_at: Option<String>,
    /// When the run finished (RFC 3339).
    pub finished_at: Option<String>,
    /// Commit of the suite that ran.
    pub git_sha: Option<String>,
    /// `full`, `quick` or `test`.
    pub mode: Option<String>,
    /// `rustc --version`.
    pub rustc: Option<String>,
    /// `uname -r` (or more).
    pub kernel: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs.
    pub cores: Option<u64>,
    /// Where the server(s) and the bench ran.
    pub placement: Option<Placement>,
    /// Per backend (`redis`, `memcached`): version and configuration.
    #[serde(default, deserialize_with = "null_default")]
    pub servers: BTreeMap<String, ServerInfo>,
    /// Wall time of the whole run, seconds.
    pub duration_s: Option<f64>,
    /// Arguments given to criterion (a string or a list).
    pub criterion_args: Option<Value>,
    /// Fields this crate does not know, shown as they are.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// CPU placement of servers and bench (a measured setting: see shared/FACTS.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// `same-core`, `split` or `none`.
    pub mode: Option<String>,
    /// CPU the servers were pinned to (a number, a list, or null).
    pub server_cpu: Option<Value>,
    /// CPU the bench was pinned to (a number, a list, or null).
    pub client_cpu: Option<Value>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One backend's server as the run saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Version the server reported.
    pub version: Option<String>,
    /// Command line or settings (a string, a list or an object).
    pub config: Option<Value>,
    /// Whether the server was external (`REDIS_URL` / `MEMCACHED_URL`).
    pub external: Option<bool>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One (cell, client) pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Criterion group name, for example `redis/get/3B/unix`.
    pub cell: Option<String>,
    /// `redis` or `memcached`.
    #[serde(default, deserialize_with = "null_default")]
    pub backend: String,
    /// `get`, `get_miss`, `set`, `set_ex` or `pipeline_set`.
    #[serde(default, deserialize_with = "null_default")]
    pub op: String,
    /// Value size in bytes.
    pub value_size: Option<u64>,
    /// Pipeline depth (1 outside pipelines).
    pub pipeline: Option<u64>,
    /// `tcp` or `unix`.
    #[serde(default, deserialize_with = "null_default")]
    pub transport: String,
    /// Client name as registered with the contract.
    #[serde(default, deserialize_with = "null_default")]
    pub client: String,
    /// `hand-written`, `library` or `baseline`.
    #[serde(default, deserialize_with = "null_default")]
    pub kind: String,
    /// `ok`, `failed` or `unsupported`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: String,
    /// Why the pair failed or is unsupported.
    pub error: Option<String>,
    /// Throughput (operations, or pipelined commands, per second).
    pub ops_per_sec: Option<f64>,
    /// Wall time per operation with criterion's confidence interval.
    pub wall_ns_per_op: Option<Interval>,
    /// Process CPU time per operation (all threads).
    pub cpu_ns_per_op: Option<f64>,
    /// read/write system calls per operation.
    pub syscalls_per_op: Option<f64>,
    /// Heap allocations per operation.
    pub allocs_per_op: Option<f64>,
    /// Heap bytes allocated per operation.
    pub alloc_bytes_per_op: Option<f64>,
    /// Latency percentiles of single operations (null for pipelines).
    pub latency_ns: Option<Latency>,
    /// Relative path, inside the run folder, of criterion's report for this cell.
    pub criterion_report: Option<String>,
    /// Fields this crate does not know.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Criterion's estimate and confidence interval, nanoseconds per operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Point estimate.
    pub mean: Option<f64>,
    /// Lower bound of the confidence interval.
    pub lower: Option<f64>,
    /// Upper bound of the confidence interval.
    pub upper: Option<f64>,
}

/// Latency percentiles, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
}

/// What identifies a row across runs: the matrix coordinates and the client.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    /// `redis` or `memcached`.
    pub backend: String,
    /// Operation.
    pub op: String,
    /// Value size in bytes (0 when unknown).
    pub value_size: u64,
    /// Pipeline depth (1 when unknown).
    pub pipeline: u64,
    /// `tcp` or `unix`.
    pub transport: String,
    /// Client name.
    pub client: String,
}

impl Results {
    /// Reads and parses `<dir>/results.json`.
    pub fn load(dir: &Path) -> Result<Results, Error> {
        let path = dir.join(RESULTS_FILE);
        let text = fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| Error::Parse { path, source })
    }

    /// The run id, or `fallback` (usually the folder name) when the file has none.
    pub fn id_or<'a>(&'a self, fallback: &'a str) -> &'a str {
        match self.run.id.as_deref() {
            Some(id) if !id.is_empty() => id,
            _ => fallback,
        }
    }
}

impl Row {
    /// The row's matrix coordinates and client.
    pub fn key(&self) -> RowKey {
        RowKey {
            backend: self.backend.clone(),
            op: self.op.clone(),
            value_size: self.value_size.unwrap_or(0),
            pipeline: self.pipeline.unwrap_or(1),
            transport: self.transport.clone(),
            client: self.client.clone(),
        }
    }

    /// The criterion group name: `cell` when the bench wrote it, else built the same way
    /// (`backend/op/size/transport`, with the depth for pipelines).
    pub fn cell_label(&self) -> String {
        match self.cell.as_deref() {
            Some(cell) if !cell.is_empty() => cell.to_string(),
            _ => self.key().cell_label(),
        }
    }

    /// Whether the pair was measured (status `ok`).
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    /// Throughput, if the row has one: `ops_per_sec`, else derived from the mean time per op.
    pub fn ops(&self) -> Option<f64> {
        if !self.is_ok() {
            return None;
        }
        let direct = self.ops_per_sec.filter(|v| v.is_finite() && *v > 0.0);
        direct.or_else(|| {
            let mean = self.wall_ns_per_op.and_then(|w| w.mean)?;
            (mean.is_finite() && mean > 0.0).then(|| 1e9 / mean)
        })
    }

    /// Throughput interval `(low, high)` from the wall-time interval.
    ///
    /// Scaled through the mean (`ops × mean / upper`, `ops × mean / lower`), so it holds whether
    /// the bench counts time per command or per batch, as long as `ops_per_sec` and
    /// `wall_ns_per_op` describe the same measurement.
    pub fn ops_interval(&self) -> Option<(f64, f64)> {
        let ops = self.ops()?;
        let wall = self.wall_ns_per_op?;
        let (lower, upper) = (wall.lower?, wall.upper?);
        let mean = wall.mean.unwrap_or_else(|| (lower + upper) / 2.0);
        let valid = |v: f64| v.is_finite() && v > 0.0;
        if !(valid(lower) && valid(upper) && valid(mean)) || lower > upper {
            return None;
        }
        Some((ops * mean / upper, ops * mean / lower))
    }

    /// Why the pair was not measured, for the failures list: the bench's error for a failed or
    /// unsupported row (or a reason of our own when it gave none). `None` for an `ok` row.
    pub fn problem(&self) -> Option<String> {
        if self.is_ok() {
            return None;
        }
        Some(match (&self.error, self.status.as_str()) {
            (Some(error), _) if !error.is_empty() => error.clone(),
            (_, "") => "no status".to_string(),
            (_, status) => format!("{status} (no reason given)"),
        })
    }

    /// Why the row has no throughput: [`Row::problem`], or for an `ok` row without numbers
    /// (a `--test` run verifies every pair but times none) "not timed". `None` when it has one.
    pub fn unmeasured_reason(&self) -> Option<String> {
        if self.ops().is_some() {
            return None;
        }
        Some(self.problem().unwrap_or_else(|| {
            "not timed (no ops_per_sec or wall_ns_per_op; a --test run times nothing)".to_string()
        }))
    }
}

impl RowKey {
    /// `backend/op/size/transport`, with `/<depth>` after the size for pipelines.
    pub fn cell_label(&self) -> String {
        let size = crate::format::size_token(self.value_size);
        if self.pipeline > 1 {
            format!(
                "{}/{}/{}/{}/{}",
                self.backend, self.op, self.pipeline, size, self.transport
            )
        } else {
            format!("{}/{}/{}/{}", self.backend, self.op, size, self.transport)
        }
    }
}

/// `null` reads as the type's default (serde's `default` covers only a missing field).
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_may_be_null_or_missing() {
        let results: Results = serde_json::from_str(
            r#"{"run": {"id": null, "servers": null, "placement": null},
                "rows": [{}, {"backend": null, "ops_per_sec": null, "wall_ns_per_op": null,
                          "latency_ns": {"p50": null}}]}"#,
        )
        .unwrap();
        assert_eq!(results.rows.len(), 2);
        assert_eq!(results.rows[1].backend, "");
        assert_eq!(results.rows[1].ops(), None);
        assert_eq!(results.id_or("folder"), "folder");
        let empty: Results = serde_json::from_str("{}").unwrap();
        assert!(empty.rows.is_empty());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let results: Results =
            serde_json::from_str(r#"{"run": {"host": "vm1"}, "rows": [{"note": 1}]}"#).unwrap();
        assert_eq!(results.run.extra["host"], "vm1");
        assert_eq!(results.rows[0].extra["note"], 1);
    }

    #[test]
    fn throughput_interval_follows_wall_interval() {
        let row = Row {
            status: "ok".into(),
            ops_per_sec: Some(100_000.0),
            wall_ns_per_op: Some(Interval {
                mean: Some(10_000.0),
                lower: Some(8_000.0),
                upper: Some(12_500.0),
            }),
            ..Row::default()
        };
        let (low, high) = row.ops_interval().unwrap();
        assert!((low - 80_000.0).abs() < 1e-6, "{low}");
        assert!((high - 125_000.0).abs() < 1e-6, "{high}");
    }

    #[test]
    fn ops_falls_back_to_mean_time() {
        let row = Row {
            status: "ok".into(),
            wall_ns_per_op: Some(Interval {
                mean: Some(8_000.0),
                ..Interval::default()
            }),
            ..Row::default()
        };
        assert_eq!(row.ops(), Some(125_000.0));
        assert_eq!(row.ops_interval(), None);
        let failed = Row {
            status: "failed".into(),
            ops_per_sec: Some(1.0),
            ..Row::default()
        };
        assert_eq!(failed.ops(), None, "a failed row's numbers are not shown");
        assert_eq!(failed.problem().unwrap(), "failed (no reason given)");
        let untimed = Row {
            status: "ok".into(),
            cpu_ns_per_op: Some(1.0),
            ..Row::default()
        };
        assert_eq!(untimed.problem(), None, "not a failure");
        assert!(untimed.unmeasured_reason().unwrap().contains("not timed"));
    }

    #[test]
    fn cell_label_is_built_when_missing() {
        let mut row = Row {
            backend: "redis".into(),
            op: "get".into(),
            value_size: Some(3),
            pipeline: Some(1),
            transport: "unix".into(),
            ..Row::default()
        };
        assert_eq!(row.cell_label(), "redis/get/3B/unix");
        row.op = "pipeline_set".into();
        row.pipeline = Some(1000);
        assert_eq!(row.cell_label(), "redis/pipeline_set/1000/3B/unix");
        row.cell = Some("given".into());
        assert_eq!(row.cell_label(), "given");
    }
}
