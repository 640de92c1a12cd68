//! Synthetic but realistic results.json for the report tests (tests only: real numbers come from
//! real runs). It covers every operation, both backends and transports, hand-written, library
//! and baseline clients, failed and unsupported rows, nulls, and hostile strings.

#![allow(dead_code)] // Each test binary uses a different part of this module.

use std::fs;
use std::path::Path;

use kvbench_report::results::verdict;
use serde_json::{Value, json};

/// A client name that must never reach the page as markup.
pub const EVIL_CLIENT: &str = "<script>alert(\"pwned\")</script>";
/// An error text with markup and Markdown table syntax in it.
pub const EVIL_ERROR: &str = "timeout after 5 s <b>waiting</b> for reply | & more";

/// (op, value_size, pipeline) of the full matrix.
pub const VARIANTS: &[(&str, u64, u64)] = &[
    ("get", 3, 1),
    ("get", 2048, 1),
    ("get", 102_400, 1),
    ("get", 1_048_576, 1),
    ("get_miss", 3, 1),
    ("set", 3, 1),
    ("set", 102_400, 1),
    ("set_ex", 102_400, 1),
    ("pipeline_set", 3, 1_000),
    ("pipeline_set", 3, 100_000),
    ("pipeline_set", 3, 1_000_000),
    ("incr", 0, 1),
    ("get_many", 3, 100),
    ("get_many_pipelined", 3, 100),
    ("get_many", 2048, 100),
    ("get_many_pipelined", 2048, 100),
    ("hash", 3, 100),
    ("transaction_plain", 3, 100),
    ("transaction_multi", 3, 100),
    ("transaction_pipeline", 3, 100),
];

/// Operations only Redis has: the fixture has no memcached cells of them.
const REDIS_ONLY: &[&str] = &[
    "hash",
    "transaction_plain",
    "transaction_multi",
    "transaction_pipeline",
];

/// (client, kind, backend, time factor relative to the cell's base).
const CLIENTS: &[(&str, &str, &str, f64)] = &[
    ("raw-tcp", "hand-written", "redis", 0.70),
    ("raw-unix", "hand-written", "redis", 0.68),
    ("buffered", "hand-written", "redis", 0.74),
    ("inline", "hand-written", "redis", 0.80),
    ("redis-rs", "library", "redis", 1.00),
    ("fred", "library", "redis", 1.60),
    ("redis-benchmark", "baseline", "redis", 0.95),
    ("loopback-floor", "baseline", "redis", 0.50),
    ("memcached-text", "hand-written", "memcached", 0.75),
    ("memcache", "library", "memcached", 1.10),
];

/// Callers in flight of the concurrency cells (GET 3 B and SET 3 B), above the plain cell's one.
pub const CALLERS: &[u32] = &[16, 256];

/// `plain`'s row in its cell's twin with `callers` in flight, served the way the client would: a
/// thread each, one multiplexed connection, a pool, or the baseline tool's event loop. `inline`
/// fails with 256 callers and `fred` is unsupported with 16: gaps in their lines; `memcache` is
/// unsupported with many callers over Unix: no line at all.
fn with_callers(plain: &Value, callers: u32) -> Value {
    let mut row = plain.clone();
    let cell = format!("{}/c{callers}", plain["cell"].as_str().unwrap());
    let report = format!("criterion/{}/report/index.html", criterion_folder(&cell));
    let client = plain["client"].as_str().unwrap();
    let (model, connections, speedup) = match client {
        "redis-rs" => ("multiplexed", 1, f64::from(callers).sqrt()),
        "fred" | "memcache" => ("pool", 4, 3.0),
        "redis-benchmark" => ("event-loop", callers, f64::from(callers).powf(0.6)),
        _ => ("threads", callers, 1.4),
    };
    for (key, value) in [
        ("cell", json!(cell)),
        ("criterion_report", json!(report)),
        ("concurrency", json!(callers)),
        ("model", json!(model)),
        ("connections", json!(connections)),
    ] {
        row[key] = value;
    }
    match (client, callers) {
        ("memcache", _) if plain["transport"] == "unix" => {
            row["status"] = json!("unsupported");
            row["error"] = json!("not run with many callers");
        }
        ("inline", 256) => {
            row["status"] = json!("failed");
            row["error"] = json!("connecting 256 callers: too many open files");
        }
        ("fred", 16) => {
            row["status"] = json!("unsupported");
            row["error"] = json!("not run with 16 callers");
        }
        _ => {}
    }
    if row["status"] != "ok" {
        for key in ["ops_per_sec", "wall_ns_per_op", "latency_ns"] {
            row[key] = Value::Null;
        }
        return row;
    }
    let Some(ops) = plain["ops_per_sec"].as_f64() else {
        return row;
    };
    // Time per operation over all callers; each caller waits behind the others.
    let wall = &mut row["wall_ns_per_op"];
    for key in ["median", "mean"] {
        wall[key] = json!(wall[key].as_f64().unwrap() / speedup);
    }
    for key in ["lower", "upper"] {
        let bound = wall["interval"][key].as_f64().unwrap() / speedup;
        wall["interval"][key] = json!(bound);
    }
    let caller_ns = 1e9 / (ops * speedup) * f64::from(callers);
    row["ops_per_sec"] = json!(ops * speedup);
    row["latency_ns"] = json!({
        "p50": caller_ns.round() as u64,
        "p99": (caller_ns * 1.8).round() as u64,
        "p999": (caller_ns * 4.2).round() as u64
    });
    row["memory_per_caller_bytes"] = json!(if model == "threads" {
        16_384.0
    } else {
        2_048.0
    });
    row
}

/// The cell id the bench gives a cell (also its criterion group name).
pub fn cell_label(backend: &str, op: &str, size: u64, pipeline: u64, transport: &str) -> String {
    let size = match size {
        _ if op == "get_miss" => "none".to_string(),
        _ if op == "incr" => "counter".to_string(),
        s if s >= 1_048_576 => format!("{}MiB", s / 1_048_576),
        s if s >= 1024 => format!("{}KiB", s / 1024),
        s => format!("{s}B"),
    };
    match op {
        "get_many" | "get_many_pipelined" => {
            format!("{backend}/{op}/{pipeline}/{size}/{transport}")
        }
        _ if pipeline > 1 => format!("{backend}/{op}/{pipeline}/{transport}"),
        _ => format!("{backend}/{op}/{size}/{transport}"),
    }
}

/// Criterion's folder for a group (its `make_filename_safe`: `/` becomes `_`).
pub fn criterion_folder(label: &str) -> String {
    label.replace('/', "_")
}

/// The fixture run.
pub fn fixture() -> Value {
    let mut rows = Vec::new();
    for &(op, size, pipeline) in VARIANTS {
        for backend in ["redis", "memcached"] {
            if backend == "memcached" && REDIS_ONLY.contains(&op) {
                continue;
            }
            for transport in ["tcp", "unix"] {
                let cell = cell_label(backend, op, size, pipeline, transport);
                for &(client, kind, client_backend, factor) in CLIENTS {
                    if client_backend != backend {
                        continue;
                    }
                    if client == "loopback-floor" && !(size == 3 && (op == "get" || op == "set")) {
                        continue;
                    }
                    rows.push(row(
                        &cell, op, size, pipeline, backend, transport, client, kind, factor,
                    ));
                }
                if backend == "redis" && transport == "tcp" && op == "get" && size == 3 {
                    rows.push(row(
                        &cell,
                        op,
                        size,
                        pipeline,
                        backend,
                        transport,
                        EVIL_CLIENT,
                        "library",
                        1.2,
                    ));
                }
            }
        }
    }
    // GET 3 B and SET 3 B with many callers: each client's plain row, served its way.
    let plain: Vec<Value> = (rows.iter())
        .filter(|r| r["value_size"] == 3 && (r["op"] == "get" || r["op"] == "set"))
        .filter(|r| r["client"] != "loopback-floor")
        .cloned()
        .collect();
    for callers in CALLERS {
        rows.extend(plain.iter().map(|row| with_callers(row, *callers)));
    }
    pair_rounds(&mut rows);
    json!({
        "schema_version": 3,
        "run": {
            "id": "2026-11-30T09-00-00Z-fixture",
            "started_at": "2026-11-30T09:00:00Z",
            "finished_at": "2026-11-30T09:17:41Z",
            "git_sha": "0123456789abcdef0123456789abcdef01234567",
            "mode": "full",
            "rustc": "rustc 1.95.0 (fixture)",
            "kernel": "6.1.0-fixture",
            "cpu_model": "Fixture CPU @ 2.0GHz <with markup>",
            "cores": 2,
            "placement": {"mode": "same-core", "server_cpu": 1, "client_cpu": 1},
            "servers": {
                "redis": {"version": "7.0.15", "config": "redis-server --port 40001 --save \"\" --appendonly no", "external": false},
                "memcached": {"version": "1.6.18", "config": "memcached -m 256 -I 2m", "external": false}
            },
            "duration_s": 1061.5,
            "method": "paired rounds: 11 rounds of 10 ms blocks, contenders in a fresh random order each round",
            "aa": null,
            "valgrind": "valgrind-3.19.0",
            "filters": "CLIENTS= CELLS=",
            "repeat": 3,
            "order_seed": 7,
            "notes": ["a note the report should show"],
            "known_defects": [
                {"client": "fred", "library": "fred 10.1.0", "input": "deeply nested arrays", "outcome": "stack overflow <kills the process>"}
            ]
        },
        "rows": rows
    })
}

#[allow(clippy::too_many_arguments)]
fn row(
    cell: &str,
    op: &str,
    size: u64,
    pipeline: u64,
    backend: &str,
    transport: &str,
    client: &str,
    kind: &str,
    factor: f64,
) -> Value {
    let mut row = json!({
        "cell": cell,
        "backend": backend,
        "op": op,
        "value_size": size,
        "pipeline": pipeline,
        "transport": transport,
        "client": client,
        "kind": kind,
        "status": "ok",
        "error": null,
        "concurrency": 1,
        "connections": 1,
        "model": "threads",
        "ops_per_sec": null,
        "wall_ns_per_op": null,
        "timing": null,
        "runs": 0,
        "spread": null,
        "cpu_ns_per_op": null,
        "user_ns_per_op": null,
        "sys_ns_per_op": null,
        "syscalls_per_op": null,
        "all_syscalls_per_op": null,
        "allocs_per_op": null,
        "alloc_bytes_per_op": null,
        "bytes_read_per_op": null,
        "bytes_written_per_op": null,
        "latency_ns": null,
        "flags": [],
        "criterion_report": format!("criterion/{}/report/index.html", criterion_folder(cell)),
        "seconds": 2.5,
        "reference": null,
        "ratio_to_reference": null,
        "aa_ratio": null,
        "round_ops_per_sec": [],
        "round_indices": [],
    });
    let unsupported = |why: &str| json!({"status": "unsupported", "error": why});
    let failed = |why: &str| json!({"status": "failed", "error": why});
    let outcome = match (client, transport, op, size, pipeline) {
        ("raw-tcp", "unix", ..) => Some(unsupported("raw-tcp speaks TCP only")),
        ("raw-unix", "tcp", ..) => Some(unsupported("raw-unix speaks Unix sockets only")),
        ("redis-benchmark", _, "get_miss", ..) => {
            Some(unsupported("redis-benchmark cannot express a GET miss"))
        }
        ("inline", _, "set" | "set_ex", 102_400, _) => Some(failed(
            "verification failed: the inline protocol cannot carry a 100 KiB value",
        )),
        ("memcache", "unix", "pipeline_set", _, 1_000_000) => Some(failed(EVIL_ERROR)),
        ("inline", _, "get_many" | "hash" | "transaction_multi", ..) => Some(unsupported(
            "not run: the client does not implement get_many (not among its spec's operations)",
        )),
        ("redis-benchmark", _, "transaction_multi", ..) => Some(unsupported(
            "not run: redis-benchmark cannot send MULTI, the SETs and EXEC as one transaction",
        )),
        // A failure without a reason: the report must still list it.
        ("memcache", "tcp", "get_miss", ..) => Some(json!({"status": "failed"})),
        _ => None,
    };
    if let Some(outcome) = outcome {
        for (key, value) in outcome.as_object().unwrap() {
            row[key] = value.clone();
        }
        return row;
    }

    let per_op = if pipeline > 1 {
        // Per pipelined command: the server is the limit.
        480.0 * (1.0 + (pipeline as f64).log10() / 20.0)
    } else {
        let transport_ns = if transport == "tcp" {
            12_000.0
        } else {
            9_500.0
        };
        let size_ns = size as f64 * if op == "get" { 0.35 } else { 0.5 };
        let miss = if op == "get_miss" { 0.9 } else { 1.0 };
        (transport_ns + size_ns) * miss
    };
    let mean = per_op * factor;
    let noisy = client == "fred";
    let (lower, upper) = if noisy {
        (mean * 0.85, mean * 1.25)
    } else {
        (mean * 0.98, mean * 1.03)
    };
    // Three runs of the cell: the interval is their range, the spread its width.
    row["ops_per_sec"] = json!(1e9 / mean);
    row["runs"] = json!(3);
    row["spread"] = json!(upper / lower);
    row["timing"] = json!("median of 3 runs");
    row["wall_ns_per_op"] = json!({
        "median": mean,
        "mean": mean * 1.01,
        "interval": {"kind": "range", "n": 3, "lower": lower, "upper": upper}
    });
    // Nulls a real run produces: a client the CPU pass skipped, a library without a latency
    // pass, an ok row without an interval.
    if client != "buffered" {
        row["cpu_ns_per_op"] = json!(mean * 0.42);
        row["user_ns_per_op"] = json!(mean * 0.12);
        row["sys_ns_per_op"] = json!(mean * 0.30);
    }
    if client != "fred" {
        row["syscalls_per_op"] = json!(if pipeline > 1 { 0.004 } else { 2.0 });
    }
    // Bytes on the wire come from the server's counters: none for a baseline.
    if kind != "baseline" {
        row["bytes_read_per_op"] = json!(if pipeline > 1 { 5.0 } else { 9.0 });
        row["bytes_written_per_op"] = json!(27.0 + size as f64);
    }
    row["allocs_per_op"] = json!(if kind == "library" { 3.0 } else { 0.0 });
    row["alloc_bytes_per_op"] = json!(if kind == "library" {
        96.0 + size as f64
    } else {
        0.0
    });
    if pipeline == 1 && kind != "baseline" {
        row["latency_ns"] = json!({
            "p50": (mean * 0.95).round() as u64,
            "p99": (mean * 1.8).round() as u64,
            "p999": (mean * 4.2).round() as u64
        });
    }
    if client == "fred" && size == 1_048_576 && transport == "unix" {
        // Measured once: no interval.
        row["wall_ns_per_op"] = json!({"median": mean, "mean": mean, "interval": null});
        row["runs"] = json!(1);
        row["spread"] = Value::Null;
    }
    if client == "inline" && op == "get" && size == 1_048_576 && transport == "unix" {
        // Verified, cost pass done, but not timed (as every row of a `--test` run).
        row["ops_per_sec"] = Value::Null;
        row["wall_ns_per_op"] = Value::Null;
    }
    if client == "redis-rs" && op == "set" && size == 3 && transport == "tcp" {
        row["criterion_report"] = json!("../../etc/passwd");
    }
    // Counted instructions in one cell only, as a run of the counted pass on a few cells gives:
    // raw-tcp exact, redis-rs with a spread; every other row (buffered included) not counted.
    if cell == "redis/get/3B/tcp" {
        row["instructions_per_op"] = match client {
            "raw-tcp" => counted(1_398.2, 0.0, &[("ours", 925.0), ("libc", 192.0)]),
            "redis-rs" => counted(8_986.0, 0.384, &[("libc", 5_571.0), ("library", 2_081.0)]),
            _ => Value::Null,
        };
    }
    row
}

/// An `instructions_per_op`: `per_op` with its spread, split by `owners`, each owner's share
/// also its one top function.
pub fn counted(per_op: f64, spread: f64, owners: &[(&str, f64)]) -> Value {
    let shares = |names: &dyn Fn(&str) -> String| -> Vec<Value> {
        (owners.iter())
            .map(|(name, share)| json!({"name": names(name), "per_op": share}))
            .collect()
    };
    json!({
        "per_op": per_op,
        "spread": spread,
        "calls": 2_000,
        "owners": shares(&|name| name.to_string()),
        "functions": shares(&|name| format!("{name}::hottest")),
    })
}

/// The machine's speed in each paired round: slow periods of up to 20 %, median 1.
pub const MACHINE: [f64; 11] = [1.0, 0.84, 1.12, 0.9, 1.05, 0.8, 1.16, 0.95, 1.0, 1.09, 0.88];

/// A timed row's throughput in each round: its ops/s, times the machine's speed, times a jitter
/// of a few tenths of a percent of its own.
pub fn rounds(ops: f64, seed: f64) -> Vec<f64> {
    (MACHINE.iter().enumerate())
        .map(|(i, machine)| ops * machine * (1.0 + 0.004 * (i as f64 * 2.1 + seed).sin()))
        .collect()
}

/// The cells [`pair_rounds`] gives paired rounds: GET and SET of 3 B over TCP (with many
/// callers too), GET 3 B over Redis's Unix socket, and Redis INCR over TCP (no A/A check there).
/// The others stay without, as cells the bench timed apart; a paired interval is a bootstrap,
/// slow enough in a debug build that pairing every cell of this fixture would slow every test
/// that renders it.
pub const PAIRED_CELLS: &[&str] = &[
    "redis/get/3B/tcp",
    "redis/get/3B/tcp/c16",
    "redis/get/3B/tcp/c256",
    "redis/set/3B/tcp",
    "redis/get/3B/unix",
    "redis/incr/counter/tcp",
    "memcached/get/3B/tcp",
];

/// Gives the [`PAIRED_CELLS`] paired rounds: a round series per timed client (floors excepted),
/// the first timed hand-written client as the reference, each row's paired ratio to it, and the
/// cell's A/A ratio (none in the INCR cells: the prior stands in).
pub fn pair_rounds(rows: &mut [Value]) {
    let mut cells: Vec<String> = rows
        .iter()
        .map(|r| r["cell"].as_str().unwrap().into())
        .collect();
    cells.dedup();
    cells.sort();
    cells.dedup();
    for cell in cells {
        let members: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i]["cell"] == cell)
            .collect();
        if !PAIRED_CELLS.contains(&cell.as_str()) {
            continue;
        }
        let timed = |row: &Value| {
            row["status"] == "ok"
                && row["ops_per_sec"].is_number()
                && row["client"] != "loopback-floor"
        };
        let Some(&reference) = members
            .iter()
            .find(|&&i| rows[i]["kind"] == "hand-written" && timed(&rows[i]))
        else {
            continue;
        };
        let series = |row: &Value| {
            let seed = row["client"].as_str().unwrap().len() as f64;
            rounds(row["ops_per_sec"].as_f64().unwrap(), seed)
        };
        let reference_rounds = series(&rows[reference]);
        let twice: Vec<f64> = (reference_rounds.iter().enumerate())
            .map(|(i, ops)| ops * (1.0 + 0.003 * (i as f64 * 1.3).cos()))
            .collect();
        let aa = match rows[reference]["op"] == "incr" {
            true => Value::Null,
            false => json!(verdict::paired_ratio(&twice, &reference_rounds).unwrap()),
        };
        let name = rows[reference]["client"].clone();
        for &i in &members {
            rows[i]["reference"] = name.clone();
            rows[i]["aa_ratio"] = aa.clone();
            if !timed(&rows[i]) {
                continue;
            }
            let own = series(&rows[i]);
            if i != reference {
                let ratio = verdict::paired_ratio(&own, &reference_rounds).unwrap();
                rows[i]["ratio_to_reference"] = json!(ratio);
            }
            rows[i]["round_ops_per_sec"] = json!(own);
        }
    }
}

/// Writes `value` as `<dir>/results.json`, and criterion reports for the Redis cells only (the
/// memcached cells' `criterion_report` then names files that do not exist).
/// Renders `value` as a run in a fresh folder: (the folder, `index.html`, `summary.md`).
pub fn rendered(value: &Value) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), value);
    kvbench_report::render_run(dir.path()).unwrap();
    let page = fs::read_to_string(dir.path().join("index.html")).unwrap();
    let summary = fs::read_to_string(dir.path().join("summary.md")).unwrap();
    (dir, page, summary)
}

pub fn write_run(dir: &Path, value: &Value) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(value).unwrap(),
    )
    .unwrap();
    for row in value["rows"].as_array().unwrap() {
        let cell = row["cell"].as_str().unwrap();
        if row["backend"] == "redis" {
            write_criterion_group(dir, cell);
        }
    }
}

/// A minimal criterion group report: its page links to its violin plot and to a per-function
/// page, as criterion's do, plus one network link (criterion's footer has one).
fn write_criterion_group(dir: &Path, cell: &str) {
    let group = dir.join("criterion").join(criterion_folder(cell));
    let report = group.join("report");
    if report.join("index.html").exists() {
        return;
    }
    fs::create_dir_all(&report).unwrap();
    fs::create_dir_all(group.join("raw-tcp/report")).unwrap();
    fs::write(report.join("violin.svg"), "<svg></svg>").unwrap();
    fs::write(
        group.join("raw-tcp/report/index.html"),
        "<!DOCTYPE html><html><body><a href=\"../../report/index.html\">group</a></body></html>",
    )
    .unwrap();
    fs::write(
        report.join("index.html"),
        format!(
            "<!DOCTYPE html><html><body><h1>{cell}</h1><a href=\"violin.svg\"><img src=\"violin.svg\"></a>\
             <a href=\"../../{}/raw-tcp/report/index.html\">raw-tcp</a>\
             <a href=\"https://github.com/criterion-rs/criterion.rs\">Criterion.rs</a></body></html>",
            criterion_folder(cell)
        ),
    )
    .unwrap();
}

/// Every distinct cell label of a fixture.
pub fn cells(value: &Value) -> Vec<String> {
    let mut cells: Vec<String> = value["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cell"].as_str().unwrap().to_string())
        .collect();
    cells.sort();
    cells.dedup();
    cells
}
