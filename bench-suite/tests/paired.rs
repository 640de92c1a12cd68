//! A small paired cell on private servers, through the `kvbench-matrix` binary: two clients, the
//! slow-by-design one, the floor and redis-benchmark timed in the same rounds, with the
//! reference's A/A twin. Every measured row carries its rounds, a paired ratio to the reference
//! with an interval, and the cell's A/A ratio; the ratios are what the rounds say; and the
//! contender a thousand times slower is named from this one run.

mod common;

use common::{assert_every_pair_listed, rows_of, run_matrix};
use kvbench_results::verdict::{self, Verdict};

const CELL: &str = "redis/get/3B/tcp";

#[test]
fn a_paired_cell_carries_ratios_intervals_and_an_aa_check() {
    let run = run_matrix(
        "paired",
        &[
            ("CLIENTS", "raw-tcp,redis-rs,raw-tcp/per-token/nagle".into()),
            ("CELLS", CELL.into()),
            // One caller only: the cell's concurrency levels are other cells.
            ("CONCURRENCY", "1".into()),
        ],
    );
    assert!(run.status.success(), "stderr:\n{}", run.stderr);
    assert_every_pair_listed(&run);
    let rows = rows_of(&run.results, CELL);
    let names: Vec<&str> = rows.iter().map(|row| row.client.as_str()).collect();
    assert_eq!(
        names,
        [
            "raw-tcp",
            "raw-tcp/per-token/nagle",
            "redis-rs",
            "loopback-floor",
            "redis-benchmark"
        ],
        "{}",
        run.stderr
    );
    let reference = rows.iter().find(|row| row.client == "raw-tcp").unwrap();
    let aa = reference.aa_ratio.expect("the cell's A/A ratio");
    assert!(aa.lower <= aa.median && aa.median <= aa.upper);
    assert_eq!(aa.rounds as usize, reference.round_ops_per_sec.len());
    assert!(
        reference.ratio_to_reference.is_none(),
        "the reference is not its own ratio"
    );
    for row in &rows {
        assert!(row.is_ok(), "{}: {:?}", row.client, row.error);
        assert_eq!(row.reference.as_deref(), Some("raw-tcp"), "{}", row.client);
        assert_eq!(row.aa_ratio, Some(aa), "{}: one A/A per cell", row.client);
        assert_eq!(
            row.round_ops_per_sec.len(),
            reference.round_ops_per_sec.len(),
            "{}: every contender runs every round",
            row.client
        );
        assert!(
            row.round_ops_per_sec
                .iter()
                .all(|r| r.is_finite() && *r > 0.0)
        );
        let wall = row.wall_ns_per_op.expect("a time per operation");
        let interval = wall.interval.expect("its interval over the rounds");
        assert!(interval.lower <= wall.median && wall.median <= interval.upper);
        if row.client != "raw-tcp" {
            let ratio = row.ratio_to_reference.expect("a paired ratio");
            let recomputed =
                verdict::paired_ratio(&row.round_ops_per_sec, &reference.round_ops_per_sec)
                    .expect("rounds that pair");
            // Equal to the last bits a JSON round trip keeps.
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
            assert!(
                close(ratio.median, recomputed.median)
                    && close(ratio.lower, recomputed.lower)
                    && close(ratio.upper, recomputed.upper)
                    && ratio.rounds == recomputed.rounds,
                "{}: {ratio:?} from the rounds is {recomputed:?}",
                row.client
            );
            assert!(ratio.lower <= ratio.median && ratio.median <= ratio.upper);
        }
    }
    // The slow-by-design client waits ~40 ms per round trip for a delayed ACK: named slower in
    // this single run, by the paired rule.
    let slow = rows
        .iter()
        .find(|row| row.client == "raw-tcp/per-token/nagle")
        .unwrap();
    let judged = verdict::judge(reference, None, slow, None);
    assert_eq!(judged.verdict, Verdict::FirstFaster, "{judged:?}");
    assert!(judged.ratio.unwrap() > 50.0, "{judged:?}");
    // The run's A/A summary counts the cell.
    let summary = run.results.run.aa.as_ref().expect("the run's A/A summary");
    assert_eq!((summary.cells, summary.worst_cell.as_str()), (1, CELL));
}
