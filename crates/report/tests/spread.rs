//! `spread`: each paired row's ratio to its cell's reference across runs, and max/min.

mod common;

use common::{fixture, write_run};
use kvbench_report::spread::{AA_LINE, spread_runs};
use serde_json::{Value, json};

/// The fixture as run `id`, every paired median (the rows' and the cells' A/A) times `factor`.
fn scaled(id: &str, factor: f64) -> Value {
    let mut run = fixture();
    run["run"]["id"] = json!(id);
    for row in run["rows"].as_array_mut().unwrap() {
        for field in ["ratio_to_reference", "aa_ratio"] {
            if let Some(median) = row[field]["median"].as_f64() {
                row[field]["median"] = json!(median * factor);
            }
        }
    }
    run
}

fn written(runs: &[Value]) -> Vec<tempfile::TempDir> {
    (runs.iter())
        .map(|run| {
            let dir = tempfile::tempdir().unwrap();
            write_run(dir.path(), run);
            dir
        })
        .collect()
}

#[test]
fn every_paired_row_gets_its_ratio_per_run_and_max_over_min() {
    let dirs = written(&[
        scaled("one", 1.0),
        scaled("two", 1.02),
        scaled("three", 0.99),
    ]);
    let paths: Vec<&std::path::Path> = dirs.iter().map(|dir| dir.path()).collect();
    let spread = spread_runs(&paths).unwrap();
    assert_eq!(spread.runs, ["one", "two", "three"]);

    let paired_rows = fixture()["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["ratio_to_reference"].is_object() && row["offered_rate"].is_null())
        .count();
    let (within, known) = spread.within(1.031);
    assert!(paired_rows > 10, "the fixture has paired rows");
    assert_eq!((within, known), (paired_rows, paired_rows));
    assert_eq!(
        spread.within(1.03),
        (0, paired_rows),
        "1.02 / 0.99 is past 1.03"
    );
    for row in &spread.rows {
        assert_eq!(row.ratios.len(), 3);
        let spread = row.max_over_min.unwrap();
        assert!((spread - 1.02 / 0.99).abs() < 1e-9, "{row:?}");
    }
    assert!(spread.rows.iter().any(|row| row.client == AA_LINE));

    let text = spread.text();
    assert!(text.starts_with("| cell | client | reference | one | two | three | max/min |"));
    assert!(
        text.contains(&format!("0 of {paired_rows} contenders")),
        "{text}"
    );
}

#[test]
fn a_row_missing_from_one_run_is_listed_without_max_over_min() {
    let one = scaled("one", 1.0);
    let mut two = scaled("two", 1.0);
    let rows = two["rows"].as_array_mut().unwrap();
    let gone = rows
        .iter()
        .position(|row| row["ratio_to_reference"].is_object())
        .unwrap();
    let (cell, client) = (rows[gone]["cell"].clone(), rows[gone]["client"].clone());
    rows.remove(gone);
    let dirs = written(&[one, two]);
    let spread = spread_runs(&[dirs[0].path(), dirs[1].path()]).unwrap();
    let row = (spread.rows.iter())
        .find(|row| row.cell == cell && row.client == client)
        .unwrap();
    assert_eq!(row.ratios[1], None);
    assert_eq!(row.intervals_share_a_value(), None);
    assert_eq!(row.max_over_min, None);
    assert!(spread.text().contains("not in every run"));
}

/// The fixture as run `id`, every paired median times `factor`, with an interval `half_width`
/// (a fraction of the median) either side.
fn with_interval(id: &str, factor: f64, half_width: f64) -> Value {
    let mut run = scaled(id, factor);
    for row in run["rows"].as_array_mut().unwrap() {
        for field in ["ratio_to_reference", "aa_ratio"] {
            if let Some(median) = row[field]["median"].as_f64() {
                row[field]["lower"] = json!(median * (1.0 - half_width));
                row[field]["upper"] = json!(median * (1.0 + half_width));
            }
        }
    }
    run
}

#[test]
fn a_spread_within_the_runs_intervals_is_told_from_runs_that_lie_apart() {
    // 5 % apart: with intervals of ±4 % the runs share a value (too few rounds); with ±1 % they
    // do not (the ratio itself moved).
    let noisy = written(&[
        with_interval("one", 1.0, 0.04),
        with_interval("two", 1.05, 0.04),
    ]);
    let moved = written(&[
        with_interval("one", 1.0, 0.01),
        with_interval("two", 1.05, 0.01),
    ]);
    let spread_of = |dirs: &[tempfile::TempDir]| {
        let paths: Vec<&std::path::Path> = dirs.iter().map(|dir| dir.path()).collect();
        spread_runs(&paths).unwrap()
    };
    let (noisy, moved) = (spread_of(&noisy), spread_of(&moved));
    let (_, known) = noisy.within(1.03);
    assert!(known > 10, "the fixture has paired rows");

    assert!(
        (noisy.contenders()).all(|row| row.intervals_share_a_value() == Some(true)),
        "{noisy:?}"
    );
    assert_eq!(noisy.past(1.03), (known, 0));
    assert!(
        (moved.contenders()).all(|row| row.intervals_share_a_value() == Some(false)),
        "{moved:?}"
    );
    assert_eq!(moved.past(1.03), (0, known));
    // Within 1.03, a row counts in neither.
    assert_eq!(moved.past(1.06), (0, 0));

    let text = moved.text();
    assert!(text.contains("| max/min | runs' intervals |"), "{text}");
    assert!(text.contains("| apart |"), "{text}");
    assert!(
        text.contains(&format!(
            "Of the {known} past 1.03, 0 have runs whose 95 % intervals share a value"
        )),
        "{text}"
    );
    assert!(noisy.text().contains("| share a value |"));
}
