//! Whole runs of the matrix, driven from outside through the `kvbench-matrix` binary (the same
//! code as `cargo bench --bench matrix`), in criterion's `--test` mode: every pair once,
//! verification included.
//!
//! - A server that dies in the middle of a cell fails that cell's remaining pairs with the
//!   error, and the run goes on: the private server is restarted for the next cell.
//! - Pointed at someone else's servers (`REDIS_URL` / `MEMCACHED_URL`), the quick matrix leaves
//!   every foreign key and value as it was, and no key of its own behind.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kvbench_bench_suite::results::{Results, Row, Status};
use kvbench_conformance::Reference;
use kvbench_core::{Backend, Endpoint, Transport};
use kvbench_results::Kind;
use kvbench_servers::{Servers, StartOptions};

/// A whole `--test` run takes seconds; a hang must fail the test, not stall CI.
const RUN_DEADLINE: Duration = Duration::from_secs(600);

struct Run {
    status: ExitStatus,
    stderr: String,
    results: Results,
}

/// Runs the matrix binary with `env`, writing its report under a fresh temporary folder.
fn run_matrix(name: &str, env: &[(&str, String)]) -> Run {
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
        .env_remove("CLIENTS")
        .env_remove("CELLS")
        .env_remove("MODE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start kvbench-matrix");
    let stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for kvbench-matrix") {
            break status;
        }
        if started.elapsed() > RUN_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kvbench-matrix ran for more than {RUN_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap_or_default();
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
fn assert_every_pair_listed(run: &Run) {
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

fn rows_of<'a>(results: &'a Results, cell: &str) -> Vec<&'a Row> {
    results.rows.iter().filter(|row| row.cell == cell).collect()
}

/// The private folder a run's servers lived in, from their recorded command lines.
fn server_dirs(results: &Results) -> Vec<PathBuf> {
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
fn processes_mentioning(needle: &str) -> Vec<u32> {
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

#[test]
fn a_server_dying_mid_cell_fails_that_cell_and_the_run_goes_on() {
    let killed_cell = "redis/get/3B/tcp";
    // Split placement where there are two CPUs: the restart must then happen from a benchmark
    // pinned to another CPU than the one the server is pinned to.
    let placement = if kvbench_bench_suite::results::online_cpus() >= 2 {
        "split"
    } else {
        "same-core"
    };
    let run = run_matrix(
        "server-dies",
        &[
            ("PLACEMENT", placement.to_string()),
            ("CELLS", "get/3B".to_string()),
            (
                "KVBENCH_FAULT_STOP_SERVER",
                format!("{killed_cell}@raw-tcp"),
            ),
        ],
    );
    let results = &run.results;
    let stderr = &run.stderr;
    assert_eq!(
        run.status.code(),
        Some(1),
        "failed pairs fail the run; stderr:\n{stderr}"
    );
    assert_every_pair_listed(&run);

    // The pair the server died under, and every pair of the cell that ran after it (clients run
    // in a shuffled order; rows are listed in the order they ran): failed, with why. The pairs
    // before it were served, and the loopback floor needs no server.
    let killed = rows_of(results, killed_cell);
    let at = killed
        .iter()
        .position(|row| row.client == "raw-tcp")
        .expect("raw-tcp ran in the cell");
    for row in &killed[..at] {
        assert_eq!(
            row.status,
            Status::Ok,
            "{} ran before the fault: {:?}",
            row.client,
            row.error
        );
    }
    for row in killed[at..].iter().filter(|row| !row.is_floor()) {
        assert_eq!(row.status, Status::Failed, "{} {}", row.cell, row.client);
        let error = row.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("the redis server is no longer running"),
            "{}: {error}",
            row.client
        );
    }
    assert!(
        killed[at]
            .error
            .as_deref()
            .unwrap_or_default()
            .starts_with("during timing"),
        "raw-tcp was verified, then met the dead server while timed: {:?}",
        killed[at].error
    );
    assert!(
        killed[at..]
            .iter()
            .any(|row| row.kind != Kind::Baseline && row.client != "raw-tcp")
            || killed[at + 1..]
                .iter()
                .all(|row| row.kind == Kind::Baseline),
        "every client after raw-tcp is accounted for"
    );

    // The run went on: the server was restarted, and every other cell was served in full.
    assert!(
        results
            .run
            .notes
            .iter()
            .any(|note| note.contains("restarted before redis/get/3B/unix")),
        "notes: {:?}",
        results.run.notes
    );
    let others: Vec<&Row> = results
        .rows
        .iter()
        .filter(|row| row.cell != killed_cell)
        .collect();
    let cells: std::collections::BTreeSet<&str> =
        others.iter().map(|row| row.cell.as_str()).collect();
    assert_eq!(
        cells.into_iter().collect::<Vec<_>>(),
        [
            "memcached/get/3B/tcp",
            "memcached/get/3B/unix",
            "redis/get/3B/unix"
        ]
    );
    for row in others {
        assert_eq!(
            row.status,
            Status::Ok,
            "{} {}: {:?}",
            row.cell,
            row.client,
            row.error
        );
    }
    assert!(results.run.finished_at.is_some(), "the run finished");

    // Nothing of the servers outlives the run: their folder is gone, no process mentions it.
    let dirs = server_dirs(results);
    assert!(
        !dirs.is_empty(),
        "server folders recorded: {:?}",
        results.run.servers
    );
    for dir in dirs {
        assert!(!dir.exists(), "{} still exists", dir.display());
        let left = processes_mentioning(&dir.to_string_lossy());
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}

/// Keys a careless suite would collide with: the cells' own key names without a run prefix,
/// redis-benchmark's key, and plain user data.
fn foreign_keys() -> Vec<(Vec<u8>, Vec<u8>)> {
    let named = [
        "foo",
        "missing",
        "value:1048576",
        "setex:102400",
        "key:__rand_int__",
    ];
    named
        .iter()
        .map(|key| key.to_string())
        .chain((0..50).map(|i| format!("user:{i}")))
        .map(|key| {
            let value = format!("user data under {key}");
            (key.into_bytes(), value.into_bytes())
        })
        .collect()
}

fn redis_dbsize(endpoint: &Endpoint) -> i64 {
    let Endpoint::Tcp(addr) = endpoint else {
        panic!("the test reaches redis over TCP")
    };
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut con = client.get_connection().unwrap();
    redis::cmd("DBSIZE").query(&mut con).unwrap()
}

fn memcached_items(endpoint: &Endpoint) -> u64 {
    let Endpoint::Unix(path) = endpoint else {
        panic!("the test reaches memcached over its Unix socket")
    };
    let client = memcache::connect(format!("memcache://{}", path.display())).unwrap();
    let stats = client.stats().unwrap();
    stats[0].1["curr_items"].parse().unwrap()
}

#[test]
fn the_quick_matrix_on_external_servers_leaves_foreign_data_untouched() {
    // These play the user's servers: the run is told about them only through URLs.
    let owner = Servers::start_private(&StartOptions::default()).expect("start the user's servers");
    let redis_endpoint = owner.endpoint(Backend::Redis, Transport::Tcp).unwrap();
    let memcached_endpoint = owner.endpoint(Backend::Memcached, Transport::Unix).unwrap();
    let foreign = foreign_keys();
    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            reference.set(key, value).unwrap();
        }
    }
    assert_eq!(redis_dbsize(&redis_endpoint), foreign.len() as i64);
    assert_eq!(memcached_items(&memcached_endpoint), foreign.len() as u64);

    let Endpoint::Tcp(redis_addr) = &redis_endpoint else {
        unreachable!()
    };
    let Endpoint::Unix(memcached_path) = &memcached_endpoint else {
        unreachable!()
    };
    let run = run_matrix(
        "external",
        &[
            ("MODE", "quick".to_string()),
            ("REDIS_URL", format!("redis://{redis_addr}/")),
            (
                "MEMCACHED_URL",
                format!("unix://{}", memcached_path.display()),
            ),
        ],
    );
    let results = &run.results;
    assert!(
        run.status.success(),
        "the run passes; stderr:\n{}",
        run.stderr
    );
    assert_every_pair_listed(&run);
    assert!(results.run.servers.redis.external && results.run.servers.memcached.external);

    // Every quick cell the URLs reach ran, with every client; the others say why not.
    let served: Vec<&Row> = results
        .rows
        .iter()
        .filter(|row| row.status == Status::Ok)
        .collect();
    for cell in [
        "redis/get/3B/tcp",
        "redis/pipeline_set/100000/tcp",
        "memcached/set_ex/100KiB/unix",
    ] {
        assert!(
            served
                .iter()
                .any(|row| row.cell == cell && row.kind == Kind::HandWritten),
            "{cell} ran"
        );
    }
    for row in &results.rows {
        match row.status.as_str() {
            "ok" => {}
            "unsupported" => assert!(row.error.is_some(), "{} {}", row.cell, row.client),
            other => panic!("{} {}: {other}: {:?}", row.cell, row.client, row.error),
        }
    }
    let unreachable = results
        .rows
        .iter()
        .find(|row| row.cell == "redis/get/3B/unix")
        .expect("the Unix Redis cell is listed");
    assert!(
        unreachable
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("not reachable over unix")
    );

    for (backend, endpoint) in [
        (Backend::Redis, &redis_endpoint),
        (Backend::Memcached, &memcached_endpoint),
    ] {
        let mut reference = Reference::connect(backend, endpoint).unwrap();
        for (key, value) in &foreign {
            assert_eq!(
                reference.get(key).unwrap().as_deref(),
                Some(&value[..]),
                "{backend} foreign key {}",
                key.escape_ascii()
            );
        }
    }
    assert_eq!(
        redis_dbsize(&redis_endpoint),
        foreign.len() as i64,
        "redis holds the foreign keys and nothing else"
    );
    assert_eq!(
        memcached_items(&memcached_endpoint),
        foreign.len() as u64,
        "memcached holds the foreign keys and nothing else"
    );
}
