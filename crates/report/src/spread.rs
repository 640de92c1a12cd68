//! Whether a paired ratio holds from run to run: each row's ratio to its cell's reference in
//! several runs of the same cells (separate invocations: fresh servers, a fresh process), and
//! the largest of them over the smallest (`make reproduce`).
//!
//! Inside one run a ratio carries a bootstrap interval over its rounds; that interval cannot see
//! what changes between runs (which slow periods fell where, a server's start, the order of the
//! cells). max/min across runs does. The cell's A/A ratio gets a line of its own per cell: its
//! max/min is the smallest spread any other row of the cell could show.
//!
//! The two together say why a ratio moved. When the runs' intervals all share a value, the
//! spread is what each run's own rounds allow: more rounds would narrow it. When they do not
//! (the intervals lie *apart*), the ratio moved between runs by more than its rounds' noise: the
//! machine or the server was in another state (a slower period that lasted the whole run moves
//! 256 threads more than one multiplexed connection), and more rounds would not help.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::Error;
use crate::model::run_id;
use crate::results::{PairedRatio, Results};

/// The name the A/A ratio's line takes in place of a client's.
pub const AA_LINE: &str = "A/A";

/// One row's ratio to its cell's reference in each run.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadRow {
    /// Cell id.
    pub cell: String,
    /// Client (or baseline) name; [`AA_LINE`] for the cell's A/A ratio.
    pub client: String,
    /// The cell's reference contender in the first run that has one.
    pub reference: String,
    /// The paired ratio (median and 95 % interval) in each run, in the order of the runs
    /// (`None`: no paired ratio in that run).
    pub ratios: Vec<Option<PairedRatio>>,
    /// The largest ratio over the smallest, where every run has one.
    pub max_over_min: Option<f64>,
}

/// Every paired row of several runs of the same cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// The runs' ids, in order.
    pub runs: Vec<String>,
    /// One line per (cell, client), in cell order, each cell's A/A line first.
    pub rows: Vec<SpreadRow>,
}

/// A line being gathered: the cell's reference, and the ratio in each run.
type Line = (String, Vec<Option<PairedRatio>>);

/// Reads every run folder's `results.json` and lines up their paired ratios.
pub fn spread_runs(dirs: &[&Path]) -> Result<Spread, Error> {
    let runs = dirs
        .iter()
        .map(|dir| Results::load(dir).map(|results| (run_id(&results, dir), results)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(spread(&runs))
}

/// Lines up the paired ratios of `runs` (id, results) by cell and client. Open-loop rows (one
/// per offered rate) have no paired ratio and are left out, as are rows no run has a ratio for
/// (the reference's own).
pub fn spread(runs: &[(String, Results)]) -> Spread {
    // (cell, not the A/A line, client) → (reference, ratio per run): each cell's A/A line
    // sorts first.
    let mut lines: BTreeMap<(String, bool, String), Line> = BTreeMap::new();
    for (i, (_, results)) in runs.iter().enumerate() {
        for row in results.rows.iter().filter(|row| row.offered_rate.is_none()) {
            let Some(reference) = &row.reference else {
                continue;
            };
            let paired = [
                (AA_LINE, row.aa_ratio),
                (row.client.as_str(), row.ratio_to_reference),
            ];
            for (client, ratio) in paired {
                let Some(ratio) = ratio else { continue };
                let key = (row.cell.clone(), client != AA_LINE, client.to_string());
                let (_, ratios) = lines
                    .entry(key)
                    .or_insert_with(|| (reference.clone(), vec![None; runs.len()]));
                ratios[i] = Some(ratio);
            }
        }
    }
    let rows = lines
        .into_iter()
        .map(|((cell, _, client), (reference, ratios))| {
            let every: Option<Vec<f64>> = (ratios.iter())
                .map(|ratio| ratio.map(|ratio| ratio.median))
                .collect();
            let max_over_min = every.and_then(|values| {
                let max = values.iter().copied().fold(f64::MIN, f64::max);
                let min = values.iter().copied().fold(f64::MAX, f64::min);
                (min > 0.0).then(|| max / min)
            });
            SpreadRow {
                cell,
                client,
                reference,
                ratios,
                max_over_min,
            }
        })
        .collect();
    Spread {
        runs: runs.iter().map(|(id, _)| id.clone()).collect(),
        rows,
    }
}

impl SpreadRow {
    /// Whether one value lies in every run's 95 % interval (`None`: not in every run). `false`
    /// means the runs disagree by more than their rounds' noise.
    pub fn intervals_share_a_value(&self) -> Option<bool> {
        let every: Vec<PairedRatio> = self.ratios.iter().copied().collect::<Option<_>>()?;
        let highest_lower = every
            .iter()
            .map(|ratio| ratio.lower)
            .fold(f64::MIN, f64::max);
        let lowest_upper = every
            .iter()
            .map(|ratio| ratio.upper)
            .fold(f64::MAX, f64::min);
        Some(highest_lower <= lowest_upper)
    }
}

impl Spread {
    /// The rows whose max/min is known (every run has their ratio), the A/A lines left out.
    pub fn contenders(&self) -> impl Iterator<Item = &SpreadRow> {
        (self.rows.iter()).filter(|row| row.client != AA_LINE && row.max_over_min.is_some())
    }

    /// How many contenders' max/min is at most `limit`, of how many known.
    pub fn within(&self, limit: f64) -> (usize, usize) {
        let known: Vec<f64> = self
            .contenders()
            .filter_map(|row| row.max_over_min)
            .collect();
        let within = known.iter().filter(|&&spread| spread <= limit).count();
        (within, known.len())
    }

    /// Of the contenders past `limit`: how many have runs whose intervals share a value (more
    /// rounds would narrow them), and how many have runs whose intervals lie apart.
    pub fn past(&self, limit: f64) -> (usize, usize) {
        let past: Vec<bool> = (self.contenders())
            .filter(|row| row.max_over_min.is_some_and(|spread| spread > limit))
            .filter_map(SpreadRow::intervals_share_a_value)
            .collect();
        let sharing = past.iter().filter(|&&shares| shares).count();
        (sharing, past.len() - sharing)
    }

    /// The table as Markdown, then a summary.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let runs: Vec<String> = self.runs.iter().map(|id| format!(" {id} |")).collect();
        let _ = writeln!(
            out,
            "| cell | client | reference |{} max/min | runs' intervals |",
            runs.concat()
        );
        let _ = writeln!(
            out,
            "|---|---|---|{}--:|---|",
            "--:|".repeat(self.runs.len())
        );
        for row in &self.rows {
            let ratios: Vec<String> = (row.ratios.iter())
                .map(|ratio| match ratio {
                    Some(ratio) => format!(" {:.3} |", ratio.median),
                    None => " – |".to_string(),
                })
                .collect();
            let spread = match row.max_over_min {
                Some(spread) => format!("{spread:.3}"),
                None => "not in every run".to_string(),
            };
            let intervals = match row.intervals_share_a_value() {
                Some(true) => "share a value",
                Some(false) => "apart",
                None => "–",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} |{} {spread} | {intervals} |",
                row.cell,
                row.client,
                row.reference,
                ratios.concat()
            );
        }
        let (within, known) = self.within(1.03);
        let worst = (self.contenders())
            .filter_map(|row| Some((row.max_over_min?, row)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let _ = write!(
            out,
            "\n{within} of {known} contenders' ratios to their cell's reference have max/min at \
             most 1.03 across {} runs",
            self.runs.len()
        );
        match worst {
            Some((spread, row)) => {
                let _ = writeln!(
                    out,
                    "; the largest is {spread:.3} ({} in {}).",
                    row.client, row.cell
                );
            }
            None => out.push_str(".\n"),
        }
        let (sharing, apart) = self.past(1.03);
        if sharing + apart > 0 {
            let _ = writeln!(
                out,
                "Of the {} past 1.03, {sharing} have runs whose 95 % intervals share a value (the \
                 spread is what their rounds allow: more rounds would narrow it) and {apart} have \
                 runs whose intervals lie apart (the ratio moved between runs by more than its \
                 rounds' noise: the machine or the server was in another state).",
                sharing + apart
            );
        }
        out
    }
}
