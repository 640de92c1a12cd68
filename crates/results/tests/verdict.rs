//! The one rule for naming a faster side, on rows built by hand.

use kvbench_results::verdict::{Verdict, judge, ratio_with_range, target_met};
use kvbench_results::*;

/// A timed row: `median` ns per op, an interval of ±`half` (none when `half` is `None`), and a
/// spread when measured in several runs.
fn row(client: &str, median: f64, half: Option<f64>, spread: Option<f64>) -> Row {
    let key = RowKey {
        backend: Backend::Redis,
        op: Op::Get,
        value_size: 3,
        pipeline: 1,
        transport: Transport::Tcp,
        concurrency: 1,
        client: client.into(),
    };
    let mut row = Row::new("redis/get/3B/tcp".into(), key, Kind::HandWritten);
    row.ops_per_sec = Some(1e9 / median);
    row.wall_ns_per_op = Some(Wall {
        median,
        mean: Some(median),
        interval: half.map(|h| Interval {
            kind: IntervalKind::Range,
            n: 3,
            lower: median * (1.0 - h),
            upper: median * (1.0 + h),
        }),
    });
    row.runs = if spread.is_some() { 3 } else { 1 };
    row.spread = spread;
    row
}

#[test]
fn overlapping_intervals_decide_nothing() {
    let a = row("a", 17_250.0, Some(0.005), Some(1.01));
    let b = row("b", 17_280.0, Some(0.005), Some(1.01));
    let judged = judge(&a, None, &b, None);
    assert_eq!(
        judged.verdict,
        Verdict::Indistinguishable("the intervals overlap".into())
    );
    assert!(!judged.is_decided());
}

#[test]
fn disjoint_but_within_the_spread_decides_nothing() {
    // CI-like intervals that do not overlap, but the pair moves 10 % from run to run.
    let a = row("a", 12_000.0, Some(0.01), Some(1.10));
    let b = row("b", 12_800.0, Some(0.01), None);
    let judged = judge(&a, None, &b, None);
    match judged.verdict {
        Verdict::Indistinguishable(why) => assert!(why.contains("within the run-to-run"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn disjoint_and_beyond_the_spread_names_the_faster() {
    let fast = row("fast", 10_000.0, Some(0.01), Some(1.02));
    let slow = row("slow", 13_000.0, Some(0.01), Some(1.03));
    assert_eq!(
        judge(&fast, None, &slow, None).verdict,
        Verdict::FirstFaster
    );
    let judged = judge(&slow, None, &fast, None);
    assert_eq!(judged.verdict, Verdict::SecondFaster);
    let (low, high) = judged.range.unwrap();
    assert!(low < judged.ratio.unwrap() && judged.ratio.unwrap() < high);
}

#[test]
fn the_run_noise_stands_in_for_a_row_measured_in_one_run() {
    let fast = row("fast", 10_000.0, Some(0.01), None);
    let slow = row("slow", 10_600.0, Some(0.01), None);
    // No spread at all: nothing may be named.
    assert!(matches!(
        judge(&fast, None, &slow, None).verdict,
        Verdict::Indistinguishable(ref why) if why.contains("not measured")
    ));
    // The run's noise figure of 3 %: 6 % is beyond it; of 8 %: it is not.
    assert!(judge(&fast, Some(1.03), &slow, Some(1.03)).is_decided());
    assert!(!judge(&fast, Some(1.08), &slow, Some(1.08)).is_decided());
}

#[test]
fn a_row_measured_once_is_unknown() {
    let once = row("once", 10_000.0, None, None);
    let other = row("other", 20_000.0, Some(0.01), Some(1.01));
    assert!(matches!(
        judge(&once, None, &other, None).verdict,
        Verdict::Unknown(ref why) if why.contains("once")
    ));
}

#[test]
fn ratios_carry_their_range_and_targets_need_the_lower_end() {
    assert_eq!(
        ratio_with_range(1.32, Some((1.26, 1.37))),
        "1.32× (1.26–1.37×)"
    );
    assert!(target_met(Some((1.31, 1.40)), 1.30));
    assert!(
        !target_met(Some((1.26, 1.37)), 1.30),
        "the lower end misses"
    );
    assert!(!target_met(None, 1.0), "no range, no claim");
}

#[test]
fn the_noise_figure_is_the_median_spread() {
    let results_rows = [
        row("a", 1.0, Some(0.01), Some(1.02)),
        row("b", 1.0, Some(0.01), Some(1.10)),
        row("c", 1.0, Some(0.01), Some(1.04)),
        row("d", 1.0, Some(0.01), None),
    ];
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../reports/reference/results.json"),
    )
    .unwrap();
    let mut results = Results::parse(&text, std::path::Path::new("reference")).unwrap();
    results.rows = results_rows.to_vec();
    let noise = results.noise().unwrap();
    assert_eq!(noise.rows, 3);
    assert_eq!(noise.median_spread, 1.04);
    assert_eq!(noise.max_spread, 1.10);
}
