//! No winner inside the noise: two synthetic results files built from one real run's rows. In the
//! first every interval overlaps the others, so neither the README headline, the report's
//! headline nor any lesson may name a faster side; in the second the intervals are disjoint and
//! the differences exceed the measured spread, so they do.

use std::path::Path;

use kvbench_report::lessons::{self, Code, RunRef, Runs};
use kvbench_report::results::Results;
use serde_json::{Value, json};

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lessons/a.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every timed row gets a time per operation of `median(i)` ns (i: the row's index) with a range
/// of ±`half_width` over three runs, and a run-to-run spread to match.
fn with_times(half_width: f64, median: impl Fn(usize) -> f64) -> Results {
    let mut value = fixture();
    value["run"]["repeat"] = json!(3);
    for (i, row) in value["rows"].as_array_mut().unwrap().iter_mut().enumerate() {
        if row["status"] != "ok" || row["wall_ns_per_op"].is_null() {
            continue;
        }
        let m = median(i);
        let (lower, upper) = (m * (1.0 - half_width), m * (1.0 + half_width));
        row["wall_ns_per_op"] = json!({
            "median": m,
            "mean": m,
            "interval": {"kind": "range", "n": 3, "lower": lower, "upper": upper}
        });
        row["ops_per_sec"] = json!(1e9 / m);
        row["runs"] = json!(3);
        row["spread"] = json!(upper / lower);
    }
    Results::parse(&value.to_string(), Path::new("synthetic.json")).unwrap()
}

fn outputs(results: &Results) -> (String, Vec<String>, String) {
    let runs = Runs {
        main: RunRef::new(results, Path::new("synthetic"), "synthetic.json".into()),
        split: None,
    };
    let headline = lessons::headline_markdown(&runs);
    let lessons = lessons::lessons_markdown(&runs, &Code::lenient(None), "##", None);
    let (page, _) = kvbench_report::render(results, Path::new("synthetic"), &[]);
    (headline, lessons, page)
}

#[test]
fn overlapping_intervals_name_no_winner() {
    // Every row within 2 % of 20 µs, each ±5 %: every pair of intervals overlaps.
    let results = with_times(0.05, |i| 20_000.0 * (1.0 + 0.02 * ((i % 3) as f64 - 1.0)));
    let (headline, lessons, page) = outputs(&results);

    let best_line = headline
        .lines()
        .find(|line| line.starts_with("| fastest hand-written"))
        .expect("the headline's hand-written row");
    assert!(
        best_line.contains("indistinguishable in this run"),
        "{best_line}"
    );
    for lesson in &lessons {
        assert!(
            !lesson.contains("the fastest is"),
            "a winner named:\n{lesson}"
        );
    }
    let undecided = lessons
        .iter()
        .filter(|l| l.contains("no faster side can be named"))
        .count();
    assert!(undecided >= 5, "{undecided} lessons said so");
    assert!(page.contains("(indistinguishable in this run)"));
}

#[test]
fn disjoint_intervals_beyond_the_spread_name_the_winner() {
    // Each row 5 % slower than the one before it, each ±1 %: every two rows are apart by more
    // than their intervals and their spread (2 %).
    let results = with_times(0.01, |i| 5_000.0 * 1.05f64.powi(i as i32));
    let (headline, lessons, page) = outputs(&results);

    let best_line = headline
        .lines()
        .find(|line| line.starts_with("| fastest hand-written"))
        .expect("the headline's hand-written row");
    assert!(!best_line.contains("indistinguishable"), "{best_line}");
    let decided = lessons
        .iter()
        .filter(|l| l.contains("the fastest is"))
        .count();
    assert!(decided >= 5, "{decided} lessons named a winner");
    for lesson in &lessons {
        assert!(
            !lesson.contains("the intervals overlap"),
            "no interval overlaps here:\n{lesson}"
        );
    }
    // Ratios to redis-benchmark carry their range.
    assert!(
        best_line.contains("× (") && best_line.contains("–"),
        "{best_line}"
    );
    assert!(page.contains("Run-to-run noise") || page.contains("run-to-run noise"));
}

#[test]
fn a_run_without_measured_spread_names_no_winner_and_says_why() {
    let mut value = fixture();
    for row in value["rows"].as_array_mut().unwrap() {
        row["spread"] = Value::Null;
    }
    let results = Results::parse(&value.to_string(), Path::new("once.json")).unwrap();
    let (headline, lessons, _) = outputs(&results);
    assert!(headline.contains("not measured (REPEAT=1)"), "{headline}");
    for lesson in &lessons {
        assert!(!lesson.contains("the fastest is"), "{lesson}");
    }
}
