//! Run-to-run comparison, after checking that the two runs were made on comparable machines.
//!
//! Rows of two runs never shared rounds, so they are not paired with each other. What two runs
//! can compare fairly is each row's paired ratio to its cell's reference, measured within each
//! run ("redis-rs went from 0.94× to 0.90× of raw-tcp"): a slow period of either machine fell on
//! both sides of every round of that run. That change is the primary figure ([`Change`]), and it
//! is called a change only when the two runs' paired intervals are apart and it exceeds the two
//! runs' A/A deviations for the cell together. The ratio of ops/s, B over A, is kept as context,
//! judged by [`verdict::judge_unpaired`](kvbench_results::verdict::judge_unpaired) (disjoint
//! intervals and a difference beyond the run-to-run spread).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format;
use crate::model::run_id;
use crate::paired;
use crate::results::{Kind, PairedRatio, Results, Row, RowKey};
use crate::tables::Td;
use crate::{Error, template};
use kvbench_results::verdict::{self as rule, Judgement};

/// What became of a row's paired ratio to its cell's reference, from run A to run B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// B's ratio is higher: the row gained on the reference.
    Gained,
    /// B's ratio is lower: the row lost ground to the reference.
    Lost,
    /// The two ratios cannot be told apart: their intervals overlap, or the change is within the
    /// two runs' A/A deviations for the cell. The reason says which.
    WithinAa(String),
    /// No paired ratio to compare: the reference's own row, a row outside the rounds, another
    /// reference in the other run, or too few rounds.
    NotPaired(String),
}

impl Change {
    /// Short word for tables.
    pub fn word(&self) -> &str {
        match self {
            Change::Gained => "gained",
            Change::Lost => "lost",
            Change::WithinAa(_) => "within A/A",
            Change::NotPaired(_) => "not paired",
        }
    }

    /// The word with its reason, where it has one.
    pub fn text(&self) -> String {
        match self {
            Change::Gained | Change::Lost => self.word().to_string(),
            Change::WithinAa(why) | Change::NotPaired(why) => format!("{} ({why})", self.word()),
        }
    }
}

/// What the ratio of ops/s B/A means (the context beside the paired figure).
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
    /// The cell's reference contender in B, the side of both paired ratios (when A's is the same).
    pub reference: Option<String>,
    /// The row's paired ratio to the reference in A.
    pub a_ratio: Option<PairedRatio>,
    /// The row's paired ratio to the reference in B.
    pub b_ratio: Option<PairedRatio>,
    /// B's paired ratio over A's.
    pub ratio_change: Option<f64>,
    /// Whether that change is outside both runs' A/A deviations: the primary figure.
    pub change: Change,
    /// Throughput in A.
    pub a_ops: Option<f64>,
    /// Throughput in B.
    pub b_ops: Option<f64>,
    /// `b_ops / a_ops`.
    pub ratio: Option<f64>,
    /// The ratio's range from both rows' intervals.
    pub range: Option<(f64, f64)>,
    /// Whether the ops/s difference is outside the run-to-run noise (rows timed apart).
    pub verdict: Verdict,
    /// Counted instructions per operation in A and B (exact, so comparable across runs and
    /// machines for one Cargo.lock; an async client's within its spread).
    pub instructions: [Option<f64>; 2],
}

impl Compared {
    /// Counted instructions per operation, A → B, with B's over A's: `1,398 → 1,402 (1.003×)`;
    /// `not counted` where either run has no count.
    pub fn instructions_text(&self) -> String {
        match self.instructions {
            [Some(a), Some(b)] => format!(
                "{} → {} ({})",
                format::grouped(a),
                format::grouped(b),
                ratio_text(Some(b / a))
            ),
            _ => format::NOT_COUNTED.to_string(),
        }
    }
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
    // Two runs never share rounds: the unpaired rule, whatever the rows' cells are called.
    let judged: Judgement = rule::judge_unpaired(b, noise.1, a, noise.0);
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
    let (a_ratio, b_ratio) = (a.ratio_to_reference, b.ratio_to_reference);
    Compared {
        cell: b.cell.clone(),
        kind: b.kind,
        reference: b.reference.clone(),
        ratio_change: (a_ratio.zip(b_ratio)).map(|(x, y)| y.median / x.median),
        change: change(a, b),
        a_ratio,
        b_ratio,
        ratio: a_ops.zip(b_ops).map(|(x, y)| y / x),
        range: judged.range,
        a_ops,
        b_ops,
        verdict,
        key: b.key(),
        instructions: [a, b].map(|row| {
            let counted = row.instructions_per_op.as_ref().filter(|_| row.is_ok())?;
            Some(counted.per_op)
        }),
    }
}

/// The rule on a row's paired ratio to its reference, from A to B: the two runs' intervals must
/// be apart, and the change must exceed the two runs' A/A deviations for the cell added (each
/// run's ratio carries its own noise floor).
fn change(a: &Row, b: &Row) -> Change {
    let (Some(a_ratio), Some(b_ratio)) = (a.ratio_to_reference, b.ratio_to_reference) else {
        let why = match (&a.reference, &b.reference) {
            (None, None) => "no paired rounds in either run".to_string(),
            (Some(x), _) if *x == a.client => "the cell's reference".to_string(),
            (_, Some(y)) if *y == b.client => "the cell's reference".to_string(),
            _ => match (a.ratio_to_reference, b.ratio_to_reference) {
                (None, None) => "no paired ratio in either run".to_string(),
                (None, _) => "no paired ratio in A".to_string(),
                _ => "no paired ratio in B".to_string(),
            },
        };
        return Change::NotPaired(why);
    };
    if a.reference != b.reference {
        return Change::NotPaired(format!(
            "another reference: A {}, B {}",
            a.reference.as_deref().unwrap_or("none"),
            b.reference.as_deref().unwrap_or("none")
        ));
    }
    let rounds = a_ratio.rounds.min(b_ratio.rounds);
    if rounds < rule::MIN_ROUNDS {
        return Change::NotPaired(format!(
            "{rounds} paired round(s): fewer than {} to judge by",
            rule::MIN_ROUNDS
        ));
    }
    let (a_aa, b_aa) = (rule::cell_threshold(a).0, rule::cell_threshold(b).0);
    let change = b_ratio.median / a_ratio.median;
    let difference = if change >= 1.0 {
        change - 1.0
    } else {
        1.0 / change - 1.0
    };
    if a_ratio.lower <= b_ratio.upper && b_ratio.lower <= a_ratio.upper {
        Change::WithinAa("the two runs' paired intervals overlap".to_string())
    } else if difference <= a_aa + b_aa {
        Change::WithinAa(format!(
            "the change ({}) is within the two runs' A/A deviations ({} + {})",
            paired::percent(difference),
            paired::percent(a_aa),
            paired::percent(b_aa)
        ))
    } else if change > 1.0 {
        Change::Gained
    } else {
        Change::Lost
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
    ratio_mean: Option<String>,
    rows: Vec<ComparedRow<'a>>,
    only_in: [(&'static str, &'a Vec<(String, String)>); 2],
}

#[derive(Serialize)]
struct ComparedRow<'a> {
    class: &'static str,
    cell: &'a str,
    client: &'a str,
    kind: &'static str,
    reference: String,
    /// A's and B's paired ratios to the reference, and B's over A's.
    paired: [Td; 3],
    change: String,
    /// A's and B's ops/s, and B's over A's.
    cells: [Td; 3],
    /// A's and B's counted instructions per operation, and B's over A's.
    instructions: [Td; 3],
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

/// A paired ratio with its interval, or `–`.
fn paired_text(ratio: Option<PairedRatio>) -> String {
    ratio.map_or("–".to_string(), |r| paired::paired_text(&r))
}

/// The geometric mean of the finite positive `ratios`.
fn geometric_mean(ratios: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(f64::ln)
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

impl Compared {
    /// The row's paired figure in a sentence: `redis-rs went from 0.94× (0.92–0.96×) to 0.90×
    /// (0.89–0.91×) of raw-tcp: lost`, or why it has none.
    pub fn change_text(&self) -> String {
        match (self.a_ratio, self.b_ratio, &self.reference) {
            (Some(a), Some(b), Some(reference)) => format!(
                "{} went from {} to {} of {reference}: {}",
                self.key.client,
                paired::paired_text(&a),
                paired::paired_text(&b),
                self.change.text()
            ),
            _ => self.change.text(),
        }
    }
}

impl Comparison {
    /// Counts per word, paired figure first, in a fixed order.
    fn tally(&self) -> String {
        let changes = |word: &str| (self.rows.iter().filter(|r| r.change.word() == word)).count();
        let count = |word: &str| (self.rows.iter().filter(|r| r.verdict.word() == word)).count();
        format!(
            "{} rows in both runs. Against their cell's reference (paired, the primary figure): \
             {} gained in B, {} lost in B, {} within the A/A deviations, {} not paired. Their \
             ops/s (timed apart, context): {} faster in B, {} slower in B, {} within noise, {} \
             unknown (measured once: no interval), {} not measured in one of the runs",
            self.rows.len(),
            changes("gained"),
            changes("lost"),
            changes("within A/A"),
            changes("not paired"),
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

    /// The rule, in a few sentences.
    const RULE: &'static str = "Rows of two runs never shared rounds, so they are not paired \
        with each other. The primary figure is each row's paired ratio to its cell's reference \
        in A and in B (the median of the per-round ratios, with its 95 % bootstrap interval): a \
        row \"gained\" or \"lost\" on the reference only when the two intervals are apart and \
        the change exceeds the two runs' A/A deviations for the cell together (a prior of 1 % \
        where a cell has none); otherwise \"within A/A\". B/A = B's ops/s over A's, context: \
        \"faster\" or \"slower\" only when the rows' intervals do not overlap and the difference \
        exceeds the run-to-run spread (each row's own, else its run's median spread); otherwise \
        \"within noise\". A row measured once has no interval: \"unknown\".";

    /// Geometric mean of B/A (ops/s) over the rows both runs measured.
    pub fn geometric_mean(&self) -> Option<f64> {
        geometric_mean(self.rows.iter().filter_map(|r| r.ratio))
    }

    /// Geometric mean of B's paired ratio over A's, over the rows paired in both runs.
    pub fn paired_geometric_mean(&self) -> Option<f64> {
        geometric_mean(self.rows.iter().filter_map(|r| r.ratio_change))
    }

    /// The comparison as an aligned text table, for the terminal.
    pub fn text(&self) -> String {
        let mut out = format!("kvbench compare: A = {}, B = {}\n", self.a_id, self.b_id);
        if let Some(warning) = self.warning() {
            let _ = writeln!(out, "{warning}");
        }
        let _ = writeln!(out, "{}\n", Self::RULE);
        let header = [
            "cell",
            "client",
            "reference",
            "A × ref",
            "B × ref",
            "change",
            "A ops/s",
            "B ops/s",
            "B/A",
            "instructions/op",
            "verdict",
        ]
        .map(String::from);
        let mut table: Vec<[String; 11]> = vec![header];
        for row in &self.rows {
            table.push([
                row.cell.clone(),
                row.key.client.clone(),
                row.reference.clone().unwrap_or_else(|| "–".to_string()),
                paired_text(row.a_ratio),
                paired_text(row.b_ratio),
                row.change.text(),
                format::opt(row.a_ops, format::grouped),
                format::opt(row.b_ops, format::grouped),
                range_text(row.ratio, row.range),
                row.instructions_text(),
                row.verdict.text(),
            ]);
        }
        let mut widths = [0usize; 11];
        for line in &table {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let [w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, _] = widths;
        for [
            cell,
            client,
            reference,
            a_ref,
            b_ref,
            change,
            a,
            b,
            ratio,
            instructions,
            verdict,
        ] in &table
        {
            // Numbers right-aligned, words left-aligned; the last column is not padded.
            let line = format!(
                "{cell:<w0$}  {client:<w1$}  {reference:<w2$}  {a_ref:>w3$}  {b_ref:>w4$}  \
                 {change:<w5$}  {a:>w6$}  {b:>w7$}  {ratio:>w8$}  {instructions:>w9$}  {verdict}"
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "\n{}.", self.tally());
        if let Some(mean) = self.paired_geometric_mean() {
            let _ = writeln!(
                out,
                "Geometric mean of B's ratio to the reference over A's, over the rows paired in \
                 both runs: {}.",
                ratio_text(Some(mean))
            );
        }
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
                class: match (&row.change, &row.verdict) {
                    (Change::Gained, _) => "faster",
                    (Change::Lost, _) => "slower",
                    (Change::WithinAa(_), _) => "noise",
                    (Change::NotPaired(_), Verdict::Faster) => "faster",
                    (Change::NotPaired(_), Verdict::Slower) => "slower",
                    (Change::NotPaired(_), Verdict::WithinNoise(_) | Verdict::Unknown(_)) => {
                        "noise"
                    }
                    (Change::NotPaired(_), Verdict::NotMeasured(_)) => "failed",
                },
                cell: &row.cell,
                client: &row.key.client,
                kind: row.kind.as_str(),
                reference: row.reference.clone().unwrap_or_else(|| "–".to_string()),
                paired: [
                    Td::num(row.a_ratio.map(|r| r.median), |_| paired_text(row.a_ratio)),
                    Td::num(row.b_ratio.map(|r| r.median), |_| paired_text(row.b_ratio)),
                    Td::num(row.ratio_change, |r| ratio_text(Some(r))),
                ],
                change: row.change.text(),
                cells: [
                    Td::num(row.a_ops, format::grouped),
                    Td::num(row.b_ops, format::grouped),
                    Td::num(row.ratio, |_| range_text(row.ratio, row.range)),
                ],
                instructions: {
                    let [a, b] = row.instructions;
                    let counted = |value: Option<f64>| match value {
                        Some(_) => Td::num(value, format::grouped),
                        None => Td::num(None, format::grouped).with_text(format::NOT_COUNTED),
                    };
                    let ratio = a.zip(b).map(|(a, b)| b / a);
                    [
                        counted(a),
                        counted(b),
                        Td::num(ratio, |r| ratio_text(Some(r))),
                    ]
                },
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
                ratio_mean: (self.paired_geometric_mean()).map(|mean| ratio_text(Some(mean))),
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
