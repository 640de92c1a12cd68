//! Paired verdicts in every output that names a faster side: a small v3 run with one cell, timed
//! in 20 paired rounds on a machine whose speed drifts by ±20 % from round to round. Timed apart,
//! every interval would overlap every other and no run-to-run spread was measured, so the old rule
//! could name nothing; paired, a client 30 times slower is named, with its paired ratio and the
//! cell's A/A figure, and a client 0.2 % from the fastest (inside the cell's 0.5 % A/A deviation)
//! is not.

mod common;

use std::path::Path;

use kvbench_report::lessons::{self, Code, RunRef, Runs};
use kvbench_report::results::verdict::{self, paired_ratio};
use kvbench_report::results::{
    Backend, ConcurrencyModel, Interval, IntervalKind, Kind, Op, Results, Row, RowKey, Transport,
    Wall,
};
use serde_json::json;

const CELL: &str = "redis/get/3B/tcp";
const ROUNDS: usize = 20;

/// The machine's speed in round `i`: slow periods of up to 20 %.
fn machine(i: usize) -> f64 {
    1.0 + 0.2 * (i as f64 * 1.7).sin()
}

/// `client`'s throughput in each round: `speed` × 30,000 ops/s on that round's machine, with a
/// jitter of 0.1 % of its own.
fn rounds(client: &str, speed: f64) -> Vec<f64> {
    let seed = client.len() as f64;
    (0..ROUNDS)
        .map(|i| 30_000.0 * speed * machine(i) * (1.0 + 0.001 * (i as f64 * 2.3 + seed).cos()))
        .collect()
}

/// A row of the cell, timed in the paired rounds unless `paired` is false (a floor), with its
/// time's interval as wide as the machine's drift: what timing it alone would give.
fn row(client: &str, kind: Kind, speed: f64, paired: bool) -> Row {
    let key = RowKey {
        backend: Backend::Redis,
        op: Op::Get,
        value_size: 3,
        pipeline: 1,
        transport: Transport::Tcp,
        concurrency: 1,
        offered_rate: None,
        client: client.to_string(),
    };
    let mut row = Row::new(CELL.to_string(), key, kind);
    let rounds = rounds(client, speed);
    let ops = kvbench_report::results::median(&rounds).unwrap();
    let median = 1e9 / ops;
    row.ops_per_sec = Some(ops);
    row.wall_ns_per_op = Some(Wall {
        median,
        mean: Some(median),
        interval: Some(Interval {
            kind: IntervalKind::Ci95,
            n: ROUNDS as u32,
            lower: median * 0.8,
            upper: median * 1.25,
        }),
    });
    row.runs = 1;
    row.model = match kind {
        Kind::Baseline => ConcurrencyModel::EventLoop,
        _ => ConcurrencyModel::Threads,
    };
    if paired {
        row.round_ops_per_sec = rounds;
    }
    row
}

/// The run: `raw-tcp` the reference, `raw-tcp/nagle` 0.2 % slower, `buffered` 4 % slower,
/// `raw-tcp/per-token/nagle` 30 times slower, two libraries, redis-benchmark, and the loopback
/// floor (not in the rounds). Without `nagle`, `raw-tcp` is the one fastest hand-written client.
fn run(nagle: bool) -> Results {
    let mut rows = vec![
        row("raw-tcp", Kind::HandWritten, 1.0, true),
        row("buffered", Kind::HandWritten, 0.96, true),
        row(
            "raw-tcp/per-token/nagle",
            Kind::HandWritten,
            1.0 / 30.0,
            true,
        ),
        row("redis-rs", Kind::Library, 0.85, true),
        row("fred", Kind::Library, 0.6, true),
        row("redis-benchmark", Kind::Baseline, 0.9, true),
        row("loopback-floor", Kind::Baseline, 1.2, false),
    ];
    if nagle {
        rows.push(row("raw-tcp/nagle", Kind::HandWritten, 0.998, true));
    }
    // The A/A check: raw-tcp timed twice in the same rounds, 0.5 % apart.
    let reference = rows[0].round_ops_per_sec.clone();
    let twice: Vec<f64> = (reference.iter().enumerate())
        .map(|(i, ops)| ops * 1.005 * (1.0 + 0.0005 * (i as f64).sin()))
        .collect();
    let aa = paired_ratio(&twice, &reference).unwrap();
    for row in &mut rows {
        row.reference = Some("raw-tcp".to_string());
        row.aa_ratio = Some(aa);
        if row.client != "raw-tcp" && !row.round_ops_per_sec.is_empty() {
            row.ratio_to_reference = paired_ratio(&row.round_ops_per_sec, &reference);
        }
    }
    let mut value = common::fixture();
    value["run"]["repeat"] = json!(1);
    value["run"]["aa"] = json!(verdict::aa_summary(&rows));
    value["rows"] = json!(rows);
    Results::parse(&value.to_string(), Path::new("paired.json")).unwrap()
}

fn readme_headline(results: &Results) -> String {
    lessons::headline_markdown(&runs(results))
}

fn runs(results: &Results) -> Runs<'_> {
    Runs {
        main: RunRef::new(results, Path::new("paired"), "paired.json".into()),
        split: None,
    }
}

/// The line of a Markdown table that starts with `start`.
fn line<'t>(text: &'t str, start: &str) -> &'t str {
    (text.lines())
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in:\n{text}"))
}

#[test]
fn a_client_thirty_times_slower_is_named_with_its_paired_ratio_and_the_aa() {
    let results = run(true);
    let (page, summary) = kvbench_report::render(&results, Path::new("paired"), &[]);

    // The lesson comparing write strategies reads the cell's fastest against its slowest.
    let pages = lessons::lessons_markdown(&runs(&results), &Code::lenient(None), "##", None);
    let writes = &pages[1];
    let sentence = line(writes, "In this run, ");
    assert!(
        sentence.starts_with("In this run, the fastest is `raw-tcp` (`redis/get/3B/tcp`)"),
        "{sentence}"
    );
    assert!(
        sentence.contains("the slowest `raw-tcp/per-token/nagle`"),
        "{sentence}"
    );
    assert!(
        sentence
            .contains(": 30.00× (29.97–30.04×) the throughput (paired over 20 rounds, A/A 0.5 %)"),
        "{sentence}"
    );
    // Its table quotes the paired ratios, and says which cell's A/A they stand on.
    assert!(
        line(writes, "| `raw-tcp/per-token/nagle` |").contains("| 0.033× (0.033–0.033×) |"),
        "{writes}"
    );
    assert!(writes.contains("A ratio with an interval is paired"));
    assert!(writes.contains("`redis/get/3B/tcp` (A/A 0.5 %)"));

    // summary.md: the 30x-slower row's ratio to the fastest is paired, and the rule calls it
    // slower than the reference; the A/A figure is in the note above the table and the headline.
    let row = line(&summary, "| raw-tcp/per-token/nagle |");
    assert!(row.contains("| 0.033× (0.033–0.033×) | slower |"), "{row}");
    assert!(summary.contains(
        "A/A: raw-tcp timed twice in the same rounds, 1.005× (1.005–1.005×) (A/A 0.5 %)"
    ));
    assert!(summary.contains(
        "A/A check: each cell's reference timed twice in the same rounds was 0.5 % from itself"
    ));
    let headline = line(&summary, "| redis/get/3B/tcp |");
    assert!(headline.ends_with("| A/A 0.5 % (raw-tcp) |"), "{headline}");

    // The HTML: the ratio chart, a point per paired row (the reference at its A/A ratio), and the
    // tooltip of the ratio to the fastest gives the verdict and what it stood on.
    assert!(page.contains("<svg class=\"ratios\""));
    assert!(
        page.contains("data-points=\"7\""),
        "7 paired rows, the floor is not"
    );
    assert!(page.contains("× raw-tcp (paired, log scale)"));
    assert!(
        page.contains("title=\"slower; paired over 20 rounds, A/A 0.5 %\">0.033× (0.033–0.033×)<")
    );
    assert!(page.contains("<p id=\"aa-summary\">A/A check: each cell"));
}

#[test]
fn a_pair_inside_the_aa_deviation_is_not_named() {
    let results = run(true);
    let (_, summary) = kvbench_report::render(&results, Path::new("paired"), &[]);

    // raw-tcp/nagle is 0.2 % behind raw-tcp, inside the cell's 0.5 % A/A: both are named.
    let headline = line(&summary, "| redis/get/3B/tcp |");
    assert!(
        headline.starts_with(
            "| redis/get/3B/tcp | raw-tcp, raw-tcp/nagle (indistinguishable in this run) |"
        ),
        "{headline}"
    );
    let nagle = line(&summary, "| raw-tcp/nagle |");
    assert!(nagle.contains(" | not separated | "), "{nagle}");

    // The README headline names both, with raw-tcp/nagle's paired ratio to the fastest, and the
    // libraries' paired ratios to it; redis-benchmark was in the rounds: its ratios are paired.
    let readme = readme_headline(&results);
    let fastest = line(&readme, "| fastest hand-written |");
    assert!(
        fastest.contains(": `raw-tcp`, `raw-tcp/nagle` (indistinguishable in this run) | 1.00×; raw-tcp/nagle 0.998× (0.998–0.998×)"),
        "{fastest}"
    );
    assert!(!fastest.contains("timed apart"), "{fastest}");
    let fred = line(&readme, "| `fred` |");
    assert!(
        fred.contains("| 0.60× (0.60–0.60×) | 0.67× (0.67–0.67×) |"),
        "{fred}"
    );
    let aa = line(&readme, "| A/A: the cell's reference against itself |");
    assert!(
        aa.contains("| 0.5 %: `raw-tcp` against itself, 1.005× (1.005–1.005×) |"),
        "{aa}"
    );
    // The floor was not in the rounds: its ratios are of rows timed apart, and say so.
    let floor = line(&readme, "| loopback floor");
    assert!(floor.contains(", timed apart) |"), "{floor}");
}

#[test]
fn the_one_fastest_client_is_named_where_the_paired_interval_separates_it() {
    let results = run(false);
    let readme = readme_headline(&results);
    // buffered is 4 % behind, beyond the 0.5 % A/A: raw-tcp alone.
    let fastest = line(&readme, "| fastest hand-written |");
    assert!(
        fastest.starts_with("| fastest hand-written | `raw-tcp` 29,696 |"),
        "{fastest}"
    );
    assert!(!fastest.contains("indistinguishable"), "{fastest}");
    let (_, summary) = kvbench_report::render(&results, Path::new("paired"), &[]);
    let headline = line(&summary, "| redis/get/3B/tcp |");
    assert!(
        headline.starts_with("| redis/get/3B/tcp | raw-tcp |"),
        "{headline}"
    );
}

#[test]
fn the_same_rows_timed_apart_name_nothing() {
    // Without their rounds, the rows fall back to the unpaired rule: the intervals (the machine's
    // drift) overlap, and no spread was measured.
    let mut results = run(true);
    for row in &mut results.rows {
        row.round_ops_per_sec.clear();
    }
    let pages = lessons::lessons_markdown(&runs(&results), &Code::lenient(None), "##", None);
    let sentence = line(&pages[1], "In this run, ");
    assert!(
        sentence.starts_with("In this run, no faster side can be named"),
        "{sentence}"
    );
    assert!(sentence.contains("timed apart"), "{sentence}");
}
