//! `compare`: a ratio for every row present in both runs, noise flagged, the rest listed.

mod common;

use std::collections::BTreeSet;

use common::{fixture, write_run};
use kvbench_report::check::{scan, well_formed};
use kvbench_report::compare::{Change, Verdict};
use kvbench_report::compare_runs;
use serde_json::{Value, json};

/// Run B: every row's time scaled by a factor that depends on its position — ×1.01 (inside the
/// noise: the intervals are -2 %/+3 %), ×0.5 (faster) or ×2 (slower) — minus A's first row,
/// plus a row A does not have.
fn run_b(a: &Value) -> (Value, Vec<(&'static str, f64)>) {
    let mut b = a.clone();
    b["run"]["id"] = json!("run-b");
    let rows = b["rows"].as_array_mut().unwrap();
    let mut expected = Vec::new();
    for (i, row) in rows.iter_mut().enumerate() {
        let (scale, verdict) = match i % 3 {
            0 => (1.01, "within noise"),
            1 => (0.5, "faster"),
            _ => (2.0, "slower"),
        };
        let measured = row["ops_per_sec"].is_number();
        if measured {
            row["ops_per_sec"] = json!(row["ops_per_sec"].as_f64().unwrap() / scale);
            let wall = &mut row["wall_ns_per_op"];
            for bound in ["median", "mean"] {
                if let Some(ns) = wall[bound].as_f64() {
                    wall[bound] = json!(ns * scale);
                }
            }
            for bound in ["lower", "upper"] {
                if let Some(ns) = wall["interval"][bound].as_f64() {
                    wall["interval"][bound] = json!(ns * scale);
                }
            }
        }
        expected.push((verdict, scale));
    }
    rows.remove(0);
    expected.remove(0);
    let mut newcomer = rows[0].clone();
    newcomer["client"] = json!("newcomer");
    rows.push(newcomer);
    (b, expected)
}

#[test]
fn a_ratio_for_every_common_row_and_noise_flagged() {
    let a = fixture();
    let (b, expected) = run_b(&a);
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_run(dirs.0.path(), &a);
    write_run(dirs.1.path(), &b);
    let comparison = compare_runs(dirs.0.path(), dirs.1.path()).unwrap();

    let a_rows = a["rows"].as_array().unwrap();
    assert_eq!(comparison.rows.len(), a_rows.len() - 1);
    assert_eq!(comparison.only_in_a.len(), 1);
    assert_eq!(comparison.only_in_a[0].1, a_rows[0]["client"]);
    assert_eq!(comparison.only_in_b.len(), 1);
    assert_eq!(comparison.only_in_b[0].1, "newcomer");

    let mut verdicts = BTreeSet::new();
    for (row, expected) in comparison.rows.iter().zip(&expected) {
        match row.verdict {
            Verdict::NotMeasured(ref reason) => {
                assert!(row.ratio.is_none());
                assert!(
                    reason.starts_with("A, B: "),
                    "same reason in both: {reason}"
                );
            }
            Verdict::Unknown(_) => {
                assert!(row.ratio.is_some());
                assert_eq!(
                    row.kind,
                    kvbench_report::results::Kind::Library,
                    "only fred's 1 MiB row lacks an interval"
                );
            }
            ref verdict => {
                let (word, scale) = expected;
                let ratio = row.ratio.expect("a ratio for every measured row");
                assert_eq!(verdict.word(), *word, "{:?}", row.key);
                assert!((ratio - 1.0 / scale).abs() < 1e-9, "{:?}: {ratio}", row.key);
                verdicts.insert(verdict.word().to_string());
            }
        }
    }
    assert_eq!(
        verdicts.into_iter().collect::<Vec<_>>(),
        ["faster", "slower", "within noise"]
    );

    // Text: one line per common row, with its ratio (or why there is none).
    let text = comparison.text();
    for row in &comparison.rows {
        let line = text
            .lines()
            .find(|l| {
                l.starts_with(&format!("{} ", row.cell))
                    && l.split_whitespace().nth(1) == Some(row.key.client.as_str())
            })
            .unwrap_or_else(|| panic!("no line for {} {}", row.cell, row.key.client));
        match row.ratio {
            Some(ratio) => assert!(line.contains(&format!("{ratio:.3}×")), "{line}"),
            None => assert!(line.contains("not measured (A, B: "), "{line}"),
        }
    }
    assert!(text.contains("within noise"));
    assert!(text.contains("Only in A (1):"));
    assert!(text.contains("Only in B (1):"));
    assert!(text.contains("Geometric mean of B/A"));

    // HTML: well formed, escaped, one table row per common row.
    let html = comparison.html();
    well_formed(&scan(&html).unwrap()).unwrap();
    assert_eq!(html.matches("<tr class=").count(), comparison.rows.len());
    assert!(!html.contains(common::EVIL_CLIENT));
    assert!(
        comparison
            .default_html_path(dirs.1.path())
            .ends_with("compare-2026-11-30T09-00-00Z-fixture.html")
    );
}

#[test]
fn identical_runs_are_all_within_noise() {
    let a = fixture();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_run(dirs.0.path(), &a);
    write_run(dirs.1.path(), &a);
    let comparison = compare_runs(dirs.0.path(), dirs.1.path()).unwrap();
    assert!(comparison.only_in_a.is_empty() && comparison.only_in_b.is_empty());
    for row in &comparison.rows {
        match &row.verdict {
            Verdict::WithinNoise(_) | Verdict::Unknown(_) => assert_eq!(row.ratio, Some(1.0)),
            Verdict::NotMeasured(_) => assert_eq!(row.ratio, None),
            other => panic!("{:?}: {other:?}", row.key),
        }
    }
    assert_eq!(comparison.geometric_mean(), Some(1.0));
}

#[test]
fn runs_of_different_machines_are_compared_with_a_warning() {
    let a = fixture();
    let mut b = fixture();
    b["run"]["id"] = json!("other-machine");
    b["run"]["cpu_model"] = json!("Intel Xeon @ 2.8GHz");
    b["run"]["placement"]["mode"] = json!("split");
    b["run"]["placement"]["client_cpu"] = json!(0);
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_run(dirs.0.path(), &a);
    write_run(dirs.1.path(), &b);
    let comparison = compare_runs(dirs.0.path(), dirs.1.path()).unwrap();
    assert_eq!(
        comparison.differences.len(),
        2,
        "{:?}",
        comparison.differences
    );
    let text = comparison.text();
    let warning = text.lines().nth(1).unwrap();
    assert!(
        warning.starts_with("WARNING: the two runs differ in CPU model"),
        "{warning}"
    );
    assert!(warning.contains("placement: same-core"), "{warning}");
    let html = comparison.html();
    assert!(html.contains("<p class=\"warning\" id=\"not-comparable\">WARNING"));

    // The same machine and settings: no warning.
    write_run(dirs.1.path(), &a);
    let comparison = compare_runs(dirs.0.path(), dirs.1.path()).unwrap();
    assert!(comparison.warning().is_none());
    assert!(!comparison.text().contains("WARNING"));
}

/// The index of `client`'s row in `cell` of a fixture.
fn find(value: &Value, cell: &str, client: &str) -> usize {
    (value["rows"].as_array().unwrap().iter())
        .position(|r| r["cell"] == cell && r["client"] == client)
        .unwrap()
}

#[test]
fn the_primary_figure_is_each_rows_ratio_to_its_reference_and_aa_bounds_a_change() {
    let a = fixture();
    let mut b = a.clone();
    b["run"]["id"] = json!("run-b");
    let cell = "redis/get/3B/tcp";
    let ratio = |median: f64, half: f64| json!({"median": median, "lower": median - half, "upper": median + half, "rounds": 11});
    // Both runs' A/A deviation in the cell: 0.2 %.
    let aa = json!({"median": 1.002, "lower": 1.001, "upper": 1.003, "rounds": 11});
    let mut a = a;
    for run in [&mut a, &mut b] {
        for row in run["rows"].as_array_mut().unwrap() {
            if row["cell"] == cell {
                row["aa_ratio"] = aa.clone();
            }
        }
    }
    // buffered lost 10 % on raw-tcp; redis-rs moved 0.3 %, apart but inside 0.2 % + 0.2 %;
    // inline did not move.
    let (buffered, redis_rs) = (find(&a, cell, "buffered"), find(&a, cell, "redis-rs"));
    a["rows"][buffered]["ratio_to_reference"] = ratio(0.95, 0.005);
    b["rows"][buffered]["ratio_to_reference"] = ratio(0.855, 0.005);
    a["rows"][redis_rs]["ratio_to_reference"] = ratio(0.70, 0.0005);
    b["rows"][redis_rs]["ratio_to_reference"] = ratio(0.70 * 1.003, 0.0005);
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_run(dirs.0.path(), &a);
    write_run(dirs.1.path(), &b);
    let comparison = compare_runs(dirs.0.path(), dirs.1.path()).unwrap();
    let row = |client: &str| {
        (comparison.rows.iter())
            .find(|r| r.cell == cell && r.key.client == client)
            .unwrap()
    };
    assert_eq!(row("buffered").change, Change::Lost);
    assert_eq!(
        row("buffered").change_text(),
        "buffered went from 0.950× (0.945–0.955×) to 0.85× (0.85–0.86×) of raw-tcp: lost"
    );
    match &row("redis-rs").change {
        Change::WithinAa(why) => assert_eq!(
            why,
            "the change (0.3 %) is within the two runs' A/A deviations (0.2 % + 0.2 %)"
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(&row("inline").change, Change::WithinAa(why) if why.contains("overlap")));
    assert!(
        matches!(&row("raw-tcp").change, Change::NotPaired(why) if why == "the cell's reference")
    );
    // A cell without paired rounds has no primary figure; its ops/s are still compared.
    let apart = (comparison.rows.iter())
        .find(|r| r.cell == "redis/get/2KiB/tcp" && r.key.client == "buffered")
        .unwrap();
    assert_eq!(
        apart.change,
        Change::NotPaired("no paired rounds in either run".into())
    );
    assert_eq!(apart.verdict.word(), "within noise");

    let text = comparison.text();
    let line = (text.lines())
        .find(|l| l.starts_with(cell) && l.split_whitespace().nth(1) == Some("buffered"))
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words[2..9],
        [
            "raw-tcp",
            "0.950×",
            "(0.945–0.955×)",
            "0.85×",
            "(0.85–0.86×)",
            "lost",
            "112,603"
        ],
        "{line}"
    );
    assert!(text.contains("1 lost in B"), "{text}");
    let html = comparison.html();
    well_formed(&scan(&html).unwrap()).unwrap();
    assert!(html.contains("<td>lost</td>"));
}

/// Counted instructions compare exactly: A → B with B's over A's where both runs counted the
/// row, `not counted` where either did not; in the text and in the page.
#[test]
fn counted_instructions_compare_a_to_b() {
    let a = fixture();
    let mut b = a.clone();
    b["run"]["id"] = json!("run-b");
    for row in b["rows"].as_array_mut().unwrap() {
        if row["cell"] == "redis/get/3B/tcp" && row["client"] == "raw-tcp" {
            row["instructions_per_op"] = common::counted(1_402.4, 0.0, &[("ours", 929.0)]);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    write_run(&dir.path().join("a"), &a);
    write_run(&dir.path().join("b"), &b);
    let comparison = compare_runs(&dir.path().join("a"), &dir.path().join("b")).unwrap();
    let row = |client: &str| {
        (comparison.rows.iter())
            .find(|r| r.cell == "redis/get/3B/tcp" && r.key.client == client)
            .unwrap()
    };
    assert_eq!(row("raw-tcp").instructions_text(), "1,398 → 1,402 (1.003×)");
    assert_eq!(row("buffered").instructions_text(), "not counted");
    let text = comparison.text();
    assert!(text.contains("instructions/op"), "{text}");
    assert!(text.contains("1,398 → 1,402 (1.003×)"), "{text}");
    let html = comparison.html();
    well_formed(&scan(&html).unwrap()).unwrap();
    assert!(html.contains(">1,398</td><td class=\"num\" data-v=\"1402.4\">1,402</td>"));
    assert!(html.contains(">1.003×</td>"));
    assert!(html.contains(">not counted</td>"));
}
