//! A server that dies in the middle of a cell fails that cell's remaining pairs with the error,
//! and the run goes on: the private server is restarted for the next cell. Needs the
//! `fault-injection` feature (its hook stops the server); `make test` runs it with it.

mod common;

use common::{assert_every_pair_listed, processes_mentioning, rows_of, run_matrix, server_dirs};
use kvbench_bench_suite::results::{Row, Status};

/// The client the server dies under: the suite's first hand-written Redis client over TCP that is
/// not slow by design, whichever that is.
fn victim() -> &'static str {
    kvbench_clients::all()
        .into_iter()
        .find(|spec| {
            spec.kind == kvbench_core::Kind::HandWritten
                && spec.backend == kvbench_core::Backend::Redis
                && spec.supports(kvbench_core::Transport::Tcp)
                && spec.slow_round_trip.is_none()
        })
        .expect("a hand-written Redis client over TCP")
        .name
}

#[test]
fn a_server_dying_mid_cell_fails_that_cell_and_the_run_goes_on() {
    let killed_cell = "redis/get/3B/tcp";
    let victim = victim();
    // Split placement where there are two CPUs: the restart must then happen from a benchmark
    // pinned to another CPU than the one the server is pinned to.
    let placement = if kvbench_bench_suite::environment::online_cpus() >= 2 {
        "split"
    } else {
        "same-core"
    };
    let run = run_matrix(
        "server-dies",
        &[
            ("PLACEMENT", placement.to_string()),
            ("CELLS", "get/3B".to_string()),
            // One caller per cell: the many-callers cells would add nothing to what this checks.
            ("CONCURRENCY", "1".to_string()),
            (
                "KVBENCH_FAULT_STOP_SERVER",
                format!("{killed_cell}@{victim}"),
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

    // Every contender of the cell is connected and verified before any is timed, so the pairs
    // verified before the fault meet the dead server when they warm up, and those after it when
    // they connect: every pair that needs the server fails, with why. The loopback floor, which
    // has a server of its own, is still measured.
    let killed = rows_of(results, killed_cell);
    assert!(
        killed.iter().any(|row| row.client == victim),
        "{victim} ran in the cell"
    );
    for row in killed.iter().filter(|row| !row.is_floor()) {
        assert_eq!(row.status, Status::Failed, "{} {}", row.cell, row.client);
        let error = row.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("the redis server is no longer running"),
            "{}: {error}",
            row.client
        );
    }
    let victim_error = (killed.iter())
        .find(|row| row.client == victim)
        .and_then(|row| row.error.as_deref())
        .unwrap_or_default();
    assert!(
        victim_error.starts_with("warming up") || victim_error.starts_with("during timing"),
        "{victim} was verified, then met the dead server before or while it was timed: \
         {victim_error}"
    );
    assert!(
        (killed.iter()).any(|row| row.is_floor() && row.is_ok()),
        "the loopback floor needs no server: {killed:?}"
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
            "memcached/get/3B/tcp/c256/open",
            "memcached/get/3B/unix",
            // The cluster is other processes: the single Redis's death does not reach it.
            "redis-cluster/get/3B/tcp",
            // The open-loop cell runs on the restarted server.
            "redis/get/3B/tcp/c256/open",
            "redis/get/3B/unix"
        ]
    );
    // Every pair the plan ran (not those it declines, such as the slow-by-design client in the
    // open-loop cell) is measured.
    for row in others
        .into_iter()
        .filter(|row| row.status != Status::Unsupported)
    {
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
