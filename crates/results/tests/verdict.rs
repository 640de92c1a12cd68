//! The one rule for naming a faster side, on rows built by hand.

use kvbench_results::verdict::{
    Basis, PRIOR_AA_DEVIATION, Verdict, aa_summary, align, judge, paired_ratio, percent,
    ratio_with_range, target_met,
};
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
        offered_rate: None,
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
        Verdict::Indistinguishable("the intervals overlap (timed apart, not paired)".into())
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
fn a_difference_reads_as_a_percentage_up_to_twice_then_as_a_factor() {
    let quoted = [0.935, 1.043, 1.29, 1.994, 2.5, 310.87].map(percent);
    assert_eq!(quoted, ["-6.5 %", "4.3 %", "29 %", "99 %", "2.5×", "311×"]);
}

#[test]
fn the_noise_figure_is_the_median_spread_and_names_the_largest() {
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
    assert_eq!(noise.largest_at, format!("b in {}", results.rows[1].cell));
}

/// A row of the paired cell `redis/get/3B/tcp` whose rounds are `rounds` (ops/s), with the
/// cell's A/A ratio `aa` (its median; a tight interval around it).
fn paired(client: &str, rounds: &[f64], aa: Option<f64>) -> Row {
    let mut row = row(client, 1e9 / median(rounds).unwrap(), Some(0.01), None);
    row.round_ops_per_sec = rounds.to_vec();
    row.aa_ratio = aa.map(|median| PairedRatio {
        median,
        lower: median - 0.001,
        upper: median + 0.001,
        rounds: rounds.len() as u32,
    });
    row
}

/// Rounds of a machine whose speed drifts by ±15 % from round to round (the slow periods that
/// make unpaired timing useless here), times `factor`, with a per-round jitter of ±`jitter`.
fn drifting(factor: f64, jitter: f64, rounds: usize) -> Vec<f64> {
    (0..rounds)
        .map(|i| {
            let machine = 1.0 + 0.15 * ((i as f64) * 1.7).sin();
            let wobble = 1.0 + jitter * ((i as f64) * 2.9 + factor).cos();
            30_000.0 * machine * factor * wobble
        })
        .collect()
}

#[test]
fn a_contender_a_thousand_times_slower_is_named_in_a_single_run() {
    // One run, REPEAT=1, no A/A check: the unpaired rule could say nothing here.
    let fast = paired("raw-tcp", &drifting(1.0, 0.01, 10), None);
    let slow = paired("raw-tcp/per-token/nagle", &drifting(0.001, 0.01, 10), None);
    let judged = judge(&fast, None, &slow, None);
    assert_eq!(judged.verdict, Verdict::FirstFaster, "{judged:?}");
    assert_eq!(
        judged.basis,
        Basis::Paired {
            rounds: 10,
            measured_aa: false
        }
    );
    assert!((judged.ratio.unwrap() - 1000.0).abs() < 50.0);
    assert_eq!(judged.spread, Some(1.0 + PRIOR_AA_DEVIATION));
}

#[test]
fn three_percent_apart_with_a_half_percent_aa_and_tight_intervals_is_named() {
    let a = paired("buffered", &drifting(1.03, 0.002, 30), Some(1.005));
    let b = paired("raw-tcp", &drifting(1.0, 0.002, 30), Some(1.005));
    let judged = judge(&a, None, &b, None);
    assert_eq!(judged.verdict, Verdict::FirstFaster, "{judged:?}");
    let (low, high) = judged.range.unwrap();
    assert!(low > 1.0 && high < 1.06, "{low}–{high}");
    // And the other way round.
    assert_eq!(judge(&b, None, &a, None).verdict, Verdict::SecondFaster);
}

#[test]
fn three_percent_apart_with_a_five_percent_aa_is_not_named() {
    let a = paired("buffered", &drifting(1.03, 0.002, 30), Some(1.05));
    let b = paired("raw-tcp", &drifting(1.0, 0.002, 30), Some(1.05));
    let judged = judge(&a, None, &b, None);
    match &judged.verdict {
        Verdict::Indistinguishable(why) => assert!(why.contains("A/A deviation"), "{why}"),
        other => panic!("{other:?}"),
    }
    // The paired interval itself excludes 1: only the A/A check holds the verdict back.
    assert!(judged.range.unwrap().0 > 1.0);
}

#[test]
fn a_paired_interval_that_includes_one_decides_nothing() {
    // Equal clients, each round's jitter larger than their difference.
    let a = paired("a", &drifting(1.0, 0.03, 20), Some(1.001));
    let b = paired("b", &drifting(1.0, 0.0, 20), Some(1.001));
    match judge(&a, None, &b, None).verdict {
        Verdict::Indistinguishable(why) => assert!(why.contains("includes 1"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_paired_ratio_survives_a_slow_period_that_the_unpaired_one_does_not() {
    // B is 2 % faster than A in every round; the machine halves its speed for half the rounds.
    let machine: Vec<f64> = (0..20).map(|i| if i < 10 { 1.0 } else { 0.5 }).collect();
    let a: Vec<f64> = machine.iter().map(|m| 10_000.0 * m).collect();
    let b: Vec<f64> = machine.iter().map(|m| 10_200.0 * m).collect();
    let ratio = paired_ratio(&b, &a).unwrap();
    assert!((ratio.median - 1.02).abs() < 1e-9);
    assert!((ratio.lower - 1.02).abs() < 1e-9 && (ratio.upper - 1.02).abs() < 1e-9);
    assert_eq!(ratio.rounds, 20);
    // Rounds that do not line up are not paired.
    assert_eq!(paired_ratio(&a[..3], &b), None);
    assert_eq!(paired_ratio(&[0.0], &[1.0]), None);
}

#[test]
fn rows_of_different_cells_fall_back_to_the_unpaired_rule() {
    let a = paired("a", &drifting(2.0, 0.0, 10), None);
    let mut b = paired("b", &drifting(1.0, 0.0, 10), None);
    b.cell = "redis/get/3B/unix".into();
    assert_eq!(judge(&a, None, &b, None).basis, Basis::Unpaired);
}

#[test]
fn two_sides_that_each_ran_in_some_rounds_only_line_up() {
    // A client of hundreds of callers in the even rounds of ten, a baseline tool in rounds 3, 4
    // and 9: each tool run against the client's runs in the stretch it stands for, or its
    // nearest run where it had none there.
    let mut client = paired("raw-tcp", &[10.0, 12.0, 14.0, 16.0, 18.0], None);
    client.round_indices = vec![0, 2, 4, 6, 8];
    let mut tool = paired("redis-benchmark", &[1.0, 2.0, 3.0], None);
    tool.round_indices = vec![3, 4, 9];
    let (tool_side, client_side) = align(&tool, &client).expect("lined up");
    assert_eq!(tool_side, [1.0, 2.0, 3.0]);
    // Rounds 0-3: 10 and 12; round 4: 14; rounds 5-9: 16 and 18.
    assert_eq!(client_side, [11.0, 14.0, 17.0]);
    let (client_side, tool_side) = align(&client, &tool).expect("either way round");
    assert_eq!(
        (client_side, tool_side),
        (vec![11.0, 14.0, 17.0], vec![1.0, 2.0, 3.0])
    );
    // A tool run in a round the client skipped, right after another: its nearest run.
    tool.round_indices = vec![0, 1, 3];
    let (_, client_side) = align(&tool, &client).expect("lined up");
    assert_eq!(client_side, [10.0, 10.0, 12.0]);
    // A side whose rounds do not match its values lines up with nothing.
    tool.round_indices = vec![0, 1];
    assert_eq!(align(&tool, &client), None);
}

#[test]
fn too_few_rounds_are_unknown() {
    let a = paired("a", &drifting(2.0, 0.0, 2), None);
    let b = paired("b", &drifting(1.0, 0.0, 2), None);
    assert!(matches!(
        judge(&a, None, &b, None).verdict,
        Verdict::Unknown(_)
    ));
}

#[test]
fn the_run_aa_summary_counts_each_cell_once() {
    let mut rows = vec![
        paired("a", &[1.0; 5], Some(1.004)),
        paired("b", &[1.0; 5], Some(1.004)),
        paired("c", &[1.0; 5], Some(1.0 / 1.03)),
    ];
    rows[2].cell = "redis/get/3B/unix".into();
    let summary = aa_summary(&rows).unwrap();
    assert_eq!(summary.cells, 2);
    assert_eq!(summary.worst_cell, "redis/get/3B/unix");
    assert!((summary.worst_deviation - 0.03).abs() < 1e-9);
    assert_eq!((summary.within_1_percent, summary.within_2_percent), (1, 1));
    assert_eq!(aa_summary(&[row("x", 1.0, None, None)]), None);
}
