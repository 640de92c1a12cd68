//! Run-to-run comparison: per-row throughput ratios B/A, judged by the one rule of
//! [`kvbench_results::verdict`] (disjoint intervals and a difference beyond the run-to-run
//! spread), after checking that the two runs were made on comparable machines.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format;
use crate::model::run_id;
use crate::results::{Kind, Results, Row, RowKey};
use crate::tables::Td;
use crate::{Error, template};
use kvbench_results::verdict::{self as rule, Judgement};

/// What a ratio means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// B is faster: disjoint intervals, and a difference beyond the run-to-run spread.
    Faster,
    /// B is slower, by the same rule.
    Slower,
    /// No side can be named: the intervals overlap, or the difference is within the spread (or
    /// the spread was not measured). The reason says which.
    WithinNoise(String),
    /// Both runs measured the row, but at least one measured it once: no interval, unknown.
    Unknown(String),
    /// One of the runs has no measurement for the row (failed, unsupported, no data).
    NotMeasured(String),
}

impl Verdict {
    /// Short word for tables.
    pub fn word(&self) -> &str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise(_) => "within noise",
            Verdict::Unknown(_) => "unknown",
            Verdict::NotMeasured(_) => "not measured",
        }
    }

    /// The word with its reason, where it has one.
    pub fn text(&self) -> String {
        match self {
            Verdict::Faster | Verdict::Slower => self.word().to_string(),
            Verdict::WithinNoise(why) | Verdict::Unknown(why) | Verdict::NotMeasured(why) => {
                format!("{} ({why})", self.word())
            }
        }
    }
}

/// One row present in both runs.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Matrix coordinates and client.
    pub key: RowKey,
    /// Cell id (from B).
    pub cell: String,
    /// Client kind (from B).
    pub kind: Kind,
    /// Throughput in A.
    pub a_ops: Option<f64>,
    /// Throughput in B.
    pub b_ops: Option<f64>,
    /// `b_ops / a_ops`.
    pub ratio: Option<f64>,
    /// The ratio's range from both rows' intervals.
    pub range: Option<(f64, f64)>,
    /// Whether the difference is outside the noise.
    pub verdict: Verdict,
}

/// Two runs side by side.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Run id of A.
    pub a_id: String,
    /// Run id of B.
    pub b_id: String,
    /// What differs between the two runs' machines and settings (empty when comparable).
    pub differences: Vec<String>,
    /// Rows present in both, in B's order.
    pub rows: Vec<Compared>,
    /// Rows only A has: (cell, client).
    pub only_in_a: Vec<(String, String)>,
    /// Rows only B has: (cell, client).
    pub only_in_b: Vec<(String, String)>,
}

/// Compares two results files. Rows match on (backend, op, value_size, pipeline, transport,
/// concurrency, client); when a run lists the same row twice, its first occurrence counts.
pub fn compare(a: &Results, b: &Results, a_id: &str, b_id: &str) -> Comparison {
    let noise = |run: &Results| run.noise().map(|n| n.median_spread);
    let mut a_rows: HashMap<RowKey, &Row> = HashMap::new();
    for row in &a.rows {
        a_rows.entry(row.key()).or_insert(row);
    }
    let mut seen = HashSet::new();
    let (mut rows, mut only_in_b) = (Vec::new(), Vec::new());
    for row in b.rows.iter().filter(|row| seen.insert(row.key())) {
        match a_rows.get(&row.key()) {
            Some(a_row) => rows.push(compare_row(a_row, row, (noise(a), noise(b)))),
            None => only_in_b.push((row.cell.clone(), row.client.clone())),
        }
    }
    let only_in_a = (a.rows.iter())
        .filter(|row| seen.insert(row.key()))
        .map(|row| (row.cell.clone(), row.client.clone()))
        .collect();
    Comparison {
        a_id: a_id.to_string(),
        b_id: b_id.to_string(),
        differences: a.run.differences(&b.run),
        rows,
        only_in_a,
        only_in_b,
    }
}

/// Loads `<a_dir>/results.json` and `<b_dir>/results.json` and compares them.
pub fn compare_runs(a_dir: &Path, b_dir: &Path) -> Result<Comparison, Error> {
    let a = Results::load(a_dir)?;
    let b = Results::load(b_dir)?;
    Ok(compare(&a, &b, &run_id(&a, a_dir), &run_id(&b, b_dir)))
}

fn compare_row(a: &Row, b: &Row, noise: (Option<f64>, Option<f64>)) -> Compared {
    let (a_ops, b_ops) = (a.ops(), b.ops());
    let judged: Judgement = rule::judge(b, noise.1, a, noise.0);
    let verdict = match (a_ops, b_ops) {
        (Some(_), Some(_)) => match judged.verdict {
            rule::Verdict::FirstFaster => Verdict::Faster,
            rule::Verdict::SecondFaster => Verdict::Slower,
            rule::Verdict::Indistinguishable(why) => Verdict::WithinNoise(why),
            rule::Verdict::Unknown(why) => Verdict::Unknown(why),
        },
        _ => Verdict::NotMeasured(match (a.unmeasured_reason(), b.unmeasured_reason()) {
            (Some(x), Some(y)) if x == y => format!("A, B: {x}"),
            (Some(x), Some(y)) => format!("A: {x}; B: {y}"),
            (Some(x), None) => format!("A: {x}"),
            (None, Some(y)) => format!("B: {y}"),
            (None, None) => String::new(),
        }),
    };
    Compared {
        cell: b.cell.clone(),
        kind: b.kind,
        ratio: a_ops.zip(b_ops).map(|(x, y)| y / x),
        range: judged.range,
        a_ops,
        b_ops,
        verdict,
        key: b.key(),
    }
}

/// What `templates/compare.html` shows.
#[derive(Serialize)]
struct ComparePage<'a> {
    a_id: &'a str,
    b_id: &'a str,
    warning: Option<String>,
    rule: &'static str,
    tally: String,
    mean: Option<String>,
    rows: Vec<ComparedRow<'a>>,
    only_in: [(&'static str, &'a Vec<(String, String)>); 2],
}

#[derive(Serialize)]
struct ComparedRow<'a> {
    class: &'static str,
    cell: &'a str,
    client: &'a str,
    kind: &'static str,
    cells: [Td; 3],
    verdict: String,
}

fn ratio_text(ratio: Option<f64>) -> String {
    format::opt(ratio, |r| format!("{r:.3}×"))
}

/// `1.042× (0.98–1.10×)`, or the ratio alone when a row has no interval.
fn range_text(ratio: Option<f64>, range: Option<(f64, f64)>) -> String {
    match (ratio, range) {
        (Some(r), Some((low, high))) => format!("{r:.3}× ({low:.2}–{high:.2}×)"),
        (ratio, _) => ratio_text(ratio),
    }
}

impl Comparison {
    /// Counts per verdict word, in a fixed order.
    fn tally(&self) -> String {
        let count = |word: &str| (self.rows.iter().filter(|r| r.verdict.word() == word)).count();
        format!(
            "{} rows in both runs: {} faster in B, {} slower in B, {} within noise, {} unknown \
             (measured once: no interval), {} not measured in one of the runs",
            self.rows.len(),
            count("faster"),
            count("slower"),
            count("within noise"),
            count("unknown"),
            count("not measured")
        )
    }

    /// The warning a comparison of different machines or settings opens with, if any.
    pub fn warning(&self) -> Option<String> {
        (!self.differences.is_empty()).then(|| {
            format!(
                "WARNING: the two runs differ in {}. Their ratios describe these differences as \
                 much as the code: read \"faster\" and \"slower\" as machines and settings, not \
                 as changes to the clients.",
                self.differences.join("; ")
            )
        })
    }

    /// The rule, in one sentence.
    const RULE: &'static str = "B/A = B's ops/s over A's. A side is faster only when the two \
        rows' intervals do not overlap and the difference exceeds the run-to-run spread (each \
        row's own, else its run's median spread); otherwise \"within noise\". A row measured \
        once has no interval: \"unknown\".";

    /// Geometric mean of B/A over the rows both runs measured.
    pub fn geometric_mean(&self) -> Option<f64> {
        let logs: Vec<f64> = (self.rows.iter().filter_map(|r| r.ratio))
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(f64::ln)
            .collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }

    /// The comparison as an aligned text table, for the terminal.
    pub fn text(&self) -> String {
        let mut out = format!("kvbench compare: A = {}, B = {}\n", self.a_id, self.b_id);
        if let Some(warning) = self.warning() {
            let _ = writeln!(out, "{warning}");
        }
        let _ = writeln!(out, "{}\n", Self::RULE);
        let header = ["cell", "client", "A ops/s", "B ops/s", "B/A", "verdict"].map(String::from);
        let mut table: Vec<[String; 6]> = vec![header];
        for row in &self.rows {
            table.push([
                row.cell.clone(),
                row.key.client.clone(),
                format::opt(row.a_ops, format::grouped),
                format::opt(row.b_ops, format::grouped),
                range_text(row.ratio, row.range),
                row.verdict.text(),
            ]);
        }
        let mut widths = [0usize; 6];
        for line in &table {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let [w0, w1, w2, w3, w4, _] = widths;
        for [cell, client, a, b, ratio, verdict] in &table {
            // Numbers right-aligned, words left-aligned; the last column is not padded.
            let line =
                format!("{cell:<w0$}  {client:<w1$}  {a:>w2$}  {b:>w3$}  {ratio:>w4$}  {verdict}");
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "\n{}.", self.tally());
        if let Some(mean) = self.geometric_mean() {
            let _ = writeln!(
                out,
                "Geometric mean of B/A over the rows both runs measured: {}.",
                ratio_text(Some(mean))
            );
        }
        for (name, keys) in [("A", &self.only_in_a), ("B", &self.only_in_b)] {
            if !keys.is_empty() {
                let _ = writeln!(out, "Only in {name} ({}):", keys.len());
                for (cell, client) in keys {
                    let _ = writeln!(out, "  {cell} {client}");
                }
            }
        }
        out
    }

    /// The comparison as a standalone HTML page (no links, so it can live in either folder).
    pub fn html(&self) -> String {
        let rows = (self.rows.iter())
            .map(|row| ComparedRow {
                class: match &row.verdict {
                    Verdict::Faster => "faster",
                    Verdict::Slower => "slower",
                    Verdict::WithinNoise(_) | Verdict::Unknown(_) => "noise",
                    Verdict::NotMeasured(_) => "failed",
                },
                cell: &row.cell,
                client: &row.key.client,
                kind: row.kind.as_str(),
                cells: [
                    Td::num(row.a_ops, format::grouped),
                    Td::num(row.b_ops, format::grouped),
                    Td::num(row.ratio, |_| range_text(row.ratio, row.range)),
                ],
                verdict: row.verdict.text(),
            })
            .collect();
        template::render(
            "compare.html",
            &ComparePage {
                a_id: &self.a_id,
                b_id: &self.b_id,
                warning: self.warning(),
                rule: Self::RULE,
                tally: self.tally(),
                mean: self.geometric_mean().map(|mean| ratio_text(Some(mean))),
                rows,
                only_in: [("A", &self.only_in_a), ("B", &self.only_in_b)],
            },
        )
    }

    /// Where `compare` writes its page by default: `<b_dir>/compare-<A-id>.html`.
    pub fn default_html_path(&self, b_dir: &Path) -> PathBuf {
        let safe = format::safe_name(&self.a_id, "-_.", '_');
        b_dir.join(format!("compare-{}.html", safe.trim_start_matches('.')))
    }
}
