//! Run-to-run comparison: per-row throughput ratios B/A, with differences inside the noise
//! (overlapping wall-time confidence intervals) marked as such.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::format::{self, html as esc};
use crate::html;
use crate::results::{Results, Row, RowKey};

/// What a ratio means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// B is faster and the intervals do not overlap.
    Faster,
    /// B is slower and the intervals do not overlap.
    Slower,
    /// The wall-time confidence intervals overlap: the difference is inside the noise.
    WithinNoise,
    /// Both runs measured the row, but at least one has no interval to judge the noise by.
    NoInterval,
    /// One of the runs has no measurement for the row (failed, unsupported, no data).
    NotMeasured(String),
}

impl Verdict {
    /// Short word for tables.
    pub fn word(&self) -> &str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::NoInterval => "no interval",
            Verdict::NotMeasured(_) => "not measured",
        }
    }
}

/// One row present in both runs.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Matrix coordinates and client.
    pub key: RowKey,
    /// Criterion group name (from B).
    pub cell: String,
    /// Client kind (from B).
    pub kind: String,
    /// Throughput in A.
    pub a_ops: Option<f64>,
    /// Throughput in B.
    pub b_ops: Option<f64>,
    /// `b_ops / a_ops`.
    pub ratio: Option<f64>,
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
    /// Rows present in both, in B's order.
    pub rows: Vec<Compared>,
    /// Rows only A has.
    pub only_in_a: Vec<RowKey>,
    /// Rows only B has.
    pub only_in_b: Vec<RowKey>,
}

/// Compares two results files. Rows match on (backend, op, value_size, pipeline, transport,
/// client); when a run lists the same row twice, its first occurrence counts.
pub fn compare(a: &Results, b: &Results, a_id: &str, b_id: &str) -> Comparison {
    let mut a_rows: HashMap<RowKey, &Row> = HashMap::new();
    for row in &a.rows {
        a_rows.entry(row.key()).or_insert(row);
    }
    let mut seen_in_b = HashMap::new();
    let mut rows = Vec::new();
    let mut only_in_b = Vec::new();
    for row in &b.rows {
        let key = row.key();
        if seen_in_b.insert(key.clone(), ()).is_some() {
            continue;
        }
        match a_rows.get(&key) {
            Some(a_row) => rows.push(compare_row(key, a_row, row)),
            None => only_in_b.push(key),
        }
    }
    let mut listed = HashMap::new();
    let only_in_a: Vec<RowKey> = a
        .rows
        .iter()
        .map(Row::key)
        .filter(|key| !seen_in_b.contains_key(key) && listed.insert(key.clone(), ()).is_none())
        .collect();
    Comparison {
        a_id: a_id.to_string(),
        b_id: b_id.to_string(),
        rows,
        only_in_a,
        only_in_b,
    }
}

/// Loads `<a_dir>/results.json` and `<b_dir>/results.json` and compares them.
pub fn compare_runs(a_dir: &Path, b_dir: &Path) -> Result<Comparison, Error> {
    let a = Results::load(a_dir)?;
    let b = Results::load(b_dir)?;
    Ok(compare(
        &a,
        &b,
        &html::run_id(&a, a_dir),
        &html::run_id(&b, b_dir),
    ))
}

fn compare_row(key: RowKey, a: &Row, b: &Row) -> Compared {
    let (a_ops, b_ops) = (a.ops(), b.ops());
    let verdict = match (a_ops, b_ops) {
        (Some(x), Some(y)) => match (interval(a), interval(b)) {
            (Some((a_low, a_high)), Some((b_low, b_high))) => {
                if a_low <= b_high && b_low <= a_high {
                    Verdict::WithinNoise
                } else if y > x {
                    Verdict::Faster
                } else {
                    Verdict::Slower
                }
            }
            _ => Verdict::NoInterval,
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
        cell: b.cell_label(),
        kind: b.kind.clone(),
        ratio: a_ops.zip(b_ops).map(|(x, y)| y / x),
        a_ops,
        b_ops,
        verdict,
        key,
    }
}

/// The wall-time interval `[lower, upper]`, when both ends are valid.
fn interval(row: &Row) -> Option<(f64, f64)> {
    let wall = row.wall_ns_per_op?;
    let (lower, upper) = (wall.lower?, wall.upper?);
    (lower.is_finite() && upper.is_finite() && lower <= upper).then_some((lower, upper))
}

fn ratio_text(ratio: Option<f64>) -> String {
    format::opt(ratio, |r| format!("{r:.3}×"))
}

impl Comparison {
    /// Counts per verdict word, in a fixed order.
    fn tally(&self) -> String {
        let count = |word: &str| {
            self.rows
                .iter()
                .filter(|r| r.verdict.word() == word)
                .count()
        };
        format!(
            "{} rows in both runs: {} faster in B, {} slower in B, {} within noise, {} without an \
             interval, {} not measured in one of the runs",
            self.rows.len(),
            count("faster"),
            count("slower"),
            count("within noise"),
            count("no interval"),
            count("not measured")
        )
    }

    /// Geometric mean of B/A over the rows both runs measured.
    pub fn geometric_mean(&self) -> Option<f64> {
        let logs: Vec<f64> = self
            .rows
            .iter()
            .filter_map(|r| r.ratio)
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(f64::ln)
            .collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }

    /// The comparison as an aligned text table, for the terminal.
    pub fn text(&self) -> String {
        let mut out = format!(
            "kvbench compare: A = {}, B = {}\nB/A = B's ops/s over A's; \"within noise\": the \
             wall-time confidence intervals overlap.\n\n",
            self.a_id, self.b_id
        );
        let header = ["cell", "client", "A ops/s", "B ops/s", "B/A", "verdict"].map(String::from);
        let mut table: Vec<[String; 6]> = vec![header];
        for row in &self.rows {
            let verdict = match &row.verdict {
                Verdict::NotMeasured(reason) => format!("not measured ({reason})"),
                other => other.word().to_string(),
            };
            table.push([
                row.cell.clone(),
                row.key.client.clone(),
                format::opt(row.a_ops, format::grouped),
                format::opt(row.b_ops, format::grouped),
                ratio_text(row.ratio),
                verdict,
            ]);
        }
        let mut widths = [0usize; 6];
        for line in &table {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for line in &table {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                // Numbers right-aligned, words left-aligned; the last column is not padded.
                if (2..=4).contains(&i) {
                    let _ = write!(text, "{}{cell}  ", " ".repeat(pad));
                } else if i == 5 {
                    text.push_str(cell);
                } else {
                    let _ = write!(text, "{cell}{}  ", " ".repeat(pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
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
                for key in keys {
                    let _ = writeln!(out, "  {} {}", key.cell_label(), key.client);
                }
            }
        }
        out
    }

    /// The comparison as a standalone HTML page (no links, so it can live in either folder).
    pub fn html(&self) -> String {
        let mut body = format!(
            "<h1>kvbench · compare <code>{}</code> → <code>{}</code></h1>\n<p>B/A = throughput of B \
             (<code>{}</code>) over A (<code>{}</code>). A difference is <em>within noise</em> when the \
             two runs' confidence intervals of the time per operation overlap.</p>\n<p>{}.",
            esc(&self.a_id),
            esc(&self.b_id),
            esc(&self.b_id),
            esc(&self.a_id),
            esc(&self.tally())
        );
        if let Some(mean) = self.geometric_mean() {
            let _ = write!(
                body,
                " Geometric mean of B/A over the rows both runs measured: <strong>{}</strong>.",
                esc(&ratio_text(Some(mean)))
            );
        }
        body.push_str(
            "</p>\n<table class=\"sortable\" id=\"comparison\">\n<thead><tr><th>cell</th>\
             <th>client</th><th>kind</th><th data-type=\"num\">A ops/s</th>\
             <th data-type=\"num\">B ops/s</th><th data-type=\"num\">B/A</th><th>verdict</th>\
             </tr></thead>\n<tbody>\n",
        );
        for row in &self.rows {
            let (class, verdict) = match &row.verdict {
                Verdict::Faster => ("faster", "faster".to_string()),
                Verdict::Slower => ("slower", "slower".to_string()),
                Verdict::WithinNoise => ("noise", "within noise".to_string()),
                Verdict::NoInterval => ("noise", "no interval".to_string()),
                Verdict::NotMeasured(reason) => ("failed", format!("not measured: {reason}")),
            };
            let _ = writeln!(
                body,
                "<tr class=\"{class}\"><td><code>{}</code></td><td>{}</td><td>{}</td>{}{}{}<td>{}</td></tr>",
                esc(&row.cell),
                esc(&row.key.client),
                esc(&row.kind),
                html::number_cell(row.a_ops, format::grouped),
                html::number_cell(row.b_ops, format::grouped),
                html::number_cell(row.ratio, |r| ratio_text(Some(r))),
                esc(&verdict)
            );
        }
        body.push_str("</tbody></table>\n");
        for (name, keys) in [("A", &self.only_in_a), ("B", &self.only_in_b)] {
            if !keys.is_empty() {
                let _ = writeln!(body, "<h2>Only in {name}</h2>\n<ul>");
                for key in keys {
                    let _ = writeln!(
                        body,
                        "<li><code>{}</code> {}</li>",
                        esc(&key.cell_label()),
                        esc(&key.client)
                    );
                }
                body.push_str("</ul>\n");
            }
        }
        html::standalone(
            &format!("kvbench · compare {} → {}", self.a_id, self.b_id),
            "tr.faster td { background: #eaf7ea; } tr.slower td { background: #fdecea; } \
             tr.noise td { color: #555; } tr.failed td { color: #b00020; }",
            &body,
        )
    }

    /// Where `compare` writes its page by default: `<b_dir>/compare-<A-id>.html`.
    pub fn default_html_path(&self, b_dir: &Path) -> PathBuf {
        let safe: String = self
            .a_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        b_dir.join(format!("compare-{}.html", safe.trim_start_matches('.')))
    }
}
