//! The one rule for naming a faster side, used by every sentence that does: the report's
//! headlines, the lessons, the README headline and `make compare`.
//!
//! **Two rows of one cell of one run** were timed in paired rounds: in every round each
//! contender ran one short block, in a fresh random order, against the same server. Each round
//! gives one ratio of the two throughputs, and a slow period of the machine (seconds long here)
//! lands on both sides of a round alike. The ratio is the median of the per-round ratios, with a
//! 95 % bootstrap interval over the rounds ([`paired_ratio`]). A side is named faster only when
//! both hold:
//! 1. the paired interval excludes 1;
//! 2. the difference exceeds the cell's A/A deviation: how far the cell's reference contender,
//!    timed twice in the same rounds, was from itself ([`aa_deviation`]). Where the cell has no
//!    A/A check (a quick run may leave it out), [`PRIOR_AA_DEVIATION`] stands in for it.
//!
//! **Rows that were not paired** (different cells, different runs, or a row without rounds) are
//! judged by the older, weaker rule: their intervals must not overlap and the ratio must exceed
//! the measured run-to-run spread ([`spread_of`]). Timed apart, the two rows may have met
//! different machines; that rule often cannot decide, and says so.
//!
//! Otherwise the two are *indistinguishable in this run*, and the reason says which condition
//! failed. A row without a throughput, or without an interval, gives no verdict at all
//! ([`Verdict::Unknown`]).

use crate::{PairedRatio, Row, median};

/// The A/A deviation assumed for a cell that has no A/A check of its own: 1 %. The committed
/// reference run measured a median of 0.5 % and a worst of 1.5 % over its cells (see
/// `reports/README.md`); 1 % keeps a quick run from naming a difference that a full run could
/// not resolve, without refusing the 3 % ones a full run resolves.
pub const PRIOR_AA_DEVIATION: f64 = 0.01;

/// Fewest paired rounds a verdict stands on: with fewer, a bootstrap interval says little.
pub const MIN_ROUNDS: u32 = 3;

/// Bootstrap resamples of a paired interval.
const RESAMPLES: usize = 2_000;

/// What may be said of two rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The first row is faster ([`Judgement::ratio`] says by how much).
    FirstFaster,
    /// The second row is faster.
    SecondFaster,
    /// No faster side may be named; the reason says why.
    Indistinguishable(String),
    /// One of the rows cannot be judged (no throughput or no interval).
    Unknown(String),
}

/// What a judgement stands on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Basis {
    /// Paired rounds of one cell: the interval is the paired one, and the threshold the cell's
    /// A/A deviation (`measured_aa`), or the prior where the cell had none.
    Paired {
        /// Rounds the ratio stands on.
        rounds: u32,
        /// Whether the threshold is the cell's own A/A deviation (else [`PRIOR_AA_DEVIATION`]).
        measured_aa: bool,
    },
    /// Timed apart: the two rows' own intervals and the run-to-run spread.
    Unpaired,
}

/// Two rows judged side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// First row's ops/s over the second's (both measured): the median of the per-round ratios
    /// when paired.
    pub ratio: Option<f64>,
    /// The ratio's interval: the paired 95 % interval, or, unpaired, first's low over second's
    /// high to first's high over second's low.
    pub range: Option<(f64, f64)>,
    /// The ratio a difference must exceed (1.05 = 5 %), if known: 1 + the A/A deviation when
    /// paired, the run-to-run spread when not.
    pub spread: Option<f64>,
    /// Paired or not.
    pub basis: Basis,
    /// What may be said.
    pub verdict: Verdict,
}

impl Judgement {
    /// Whether a faster side may be named.
    pub fn is_decided(&self) -> bool {
        matches!(self.verdict, Verdict::FirstFaster | Verdict::SecondFaster)
    }
}

/// The ratio `first / second` from paired rounds: `first[i]` and `second[i]` are the two sides'
/// throughputs in round `i`. The median of the per-round ratios, and a 95 % percentile-bootstrap
/// interval of that median over the rounds (fixed seed: the same rounds give the same interval).
/// `None` when the two do not have the same rounds, or a round has no positive throughput.
pub fn paired_ratio(first: &[f64], second: &[f64]) -> Option<PairedRatio> {
    if first.len() != second.len() || first.is_empty() {
        return None;
    }
    let valid = |v: f64| v.is_finite() && v > 0.0;
    let ratios: Vec<f64> = first
        .iter()
        .zip(second)
        .map(|(&a, &b)| (valid(a) && valid(b)).then(|| a / b))
        .collect::<Option<_>>()?;
    let (lower, upper) = median_interval(&ratios);
    Some(PairedRatio {
        median: median(&ratios)?,
        lower,
        upper,
        rounds: ratios.len() as u32,
    })
}

/// Two rows' rounds lined up, so that `first[i]` and `second[i]` are of the same time: both
/// rows' own when both ran in every round (or in the same rounds); where one side ran in some
/// rounds only (a baseline tool), each of its rounds against the other side's median over the
/// rounds since its previous one, which is the stretch of time its run stands for. Where both
/// ran in some rounds only (a baseline tool and a client of hundreds of callers that runs in
/// every other round), the side with fewer runs is the one lined up against the other's
/// stretches. `None` when the rounds cannot be lined up.
pub fn align(first: &Row, second: &Row) -> Option<(Vec<f64>, Vec<f64>)> {
    let (a, b) = (&first.round_ops_per_sec, &second.round_ops_per_sec);
    let (ai, bi) = (&first.round_indices, &second.round_indices);
    let miscounted = |values: &[f64], ran: &[u32]| !ran.is_empty() && ran.len() != values.len();
    if a.is_empty() || b.is_empty() || miscounted(a, ai) || miscounted(b, bi) {
        return None;
    }
    match (ai.is_empty(), bi.is_empty()) {
        _ if ai == bi => (a.len() == b.len()).then(|| (a.clone(), b.clone())),
        (false, true) => Some((a.clone(), segment_medians(b, ai)?)),
        (true, false) => Some((segment_medians(a, bi)?, b.clone())),
        (false, false) if ai.len() <= bi.len() => Some((a.clone(), stretch_medians(b, bi, ai)?)),
        (false, false) => Some((stretch_medians(a, ai, bi)?, b.clone())),
        // Both empty is the first arm.
        (true, true) => None,
    }
}

/// [`segment_medians`] of a side that ran in some rounds only (`ran`, ascending, one per value):
/// for each round in `at`, the median of its runs after the previous round in `at` up to and
/// including it; where it ran in none of them, its run nearest in time (the earlier of two as
/// near), so that a tool's two runs in rounds 3 and 4 each meet a run of a client that ran in
/// the even rounds.
fn stretch_medians(values: &[f64], ran: &[u32], at: &[u32]) -> Option<Vec<f64>> {
    if values.len() != ran.len() || values.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(at.len());
    let mut after: Option<u32> = None;
    for &round in at {
        let inside: Vec<f64> = (ran.iter().zip(values))
            .filter(|&(&r, _)| after.is_none_or(|after| r > after) && r <= round)
            .map(|(_, &v)| v)
            .collect();
        let value = match inside.is_empty() {
            false => median(&inside)?,
            true => {
                let nearest = (0..ran.len()).min_by_key(|&i| (ran[i].abs_diff(round), ran[i]))?;
                values[nearest]
            }
        };
        out.push(value);
        after = Some(round);
    }
    Some(out)
}

/// For each round in `at` (ascending), the median of `dense` over the rounds after the previous
/// one in `at` up to and including it.
fn segment_medians(dense: &[f64], at: &[u32]) -> Option<Vec<f64>> {
    let mut from = 0usize;
    let mut out = Vec::with_capacity(at.len());
    for &round in at {
        let to = round as usize + 1;
        if to > dense.len() || to <= from {
            return None;
        }
        out.push(median(&dense[from..to])?);
        from = to;
    }
    Some(out)
}

/// The paired ratio of two rows of one cell ([`align`], then [`paired_ratio`]).
pub fn paired_rows(first: &Row, second: &Row) -> Option<PairedRatio> {
    let (a, b) = align(first, second)?;
    paired_ratio(&a, &b)
}

/// A 95 % percentile-bootstrap interval of the median of `values` (at least one): the 2.5th and
/// 97.5th percentiles of the medians of `values` resampled with replacement, with a fixed seed.
pub fn median_interval(values: &[f64]) -> (f64, f64) {
    let mut rng = fastrand::Rng::with_seed(0x6b76_6265_6e63_6833);
    let mut resample = vec![0.0; values.len()];
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            for slot in resample.iter_mut() {
                *slot = values[rng.usize(..values.len())];
            }
            median(&resample).unwrap_or(f64::NAN)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[((RESAMPLES - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

/// How far an A/A ratio's median is from 1, either way, as a fraction: 1.004 and 1/1.004 are
/// both 0.004.
pub fn aa_deviation(aa: &PairedRatio) -> f64 {
    let distance = |r: f64| if r >= 1.0 { r - 1.0 } else { 1.0 / r - 1.0 };
    distance(aa.median)
}

/// The threshold a paired difference of `row`'s cell must exceed, and whether it was measured in
/// the cell (else the prior).
pub fn cell_threshold(row: &Row) -> (f64, bool) {
    match row.aa_ratio {
        Some(aa) => (aa_deviation(&aa), true),
        None => (PRIOR_AA_DEVIATION, false),
    }
}

/// The spread a row's unpaired difference must exceed: its own if measured in several runs,
/// else the run's noise figure (`run_noise`, the median spread of the run's repeated rows).
pub fn spread_of(row: &Row, run_noise: Option<f64>) -> Option<f64> {
    row.spread
        .or(run_noise)
        .filter(|s| s.is_finite() && *s >= 1.0)
}

/// Whether two rows of one run were timed in the same paired rounds: one cell, and rounds that
/// line up ([`align`]).
pub fn are_paired(first: &Row, second: &Row) -> bool {
    first.cell == second.cell && align(first, second).is_some()
}

/// `first` against `second`, two rows of one run (the lessons, the report): paired when they
/// were timed in the same rounds ([`are_paired`]), else by the unpaired rule with the run's
/// noise figures (`first_noise`, `second_noise`: the same value when both rows come from one
/// run).
pub fn judge(
    first: &Row,
    first_noise: Option<f64>,
    second: &Row,
    second_noise: Option<f64>,
) -> Judgement {
    if let Some(unknown) = unmeasured(first, second) {
        return unknown;
    }
    if are_paired(first, second) {
        return judge_paired(first, second);
    }
    judge_unpaired(first, first_noise, second, second_noise)
}

/// A judgement that cannot be made because a row has no throughput.
fn unmeasured(first: &Row, second: &Row) -> Option<Judgement> {
    if first.ops().is_some() && second.ops().is_some() {
        return None;
    }
    let missing = if first.ops().is_none() { first } else { second };
    Some(Judgement {
        ratio: None,
        range: None,
        spread: None,
        basis: Basis::Unpaired,
        verdict: Verdict::Unknown(format!(
            "{} has no throughput: {}",
            missing.client,
            missing.unmeasured_reason().unwrap_or_default()
        )),
    })
}

/// Two rows of one cell from its paired rounds (see the module's rule).
fn judge_paired(first: &Row, second: &Row) -> Judgement {
    let (threshold, measured_aa) = cell_threshold(first);
    let Some(paired) = paired_rows(first, second) else {
        return Judgement {
            ratio: None,
            range: None,
            spread: None,
            basis: Basis::Unpaired,
            verdict: Verdict::Unknown("a round without a throughput".to_string()),
        };
    };
    let basis = Basis::Paired {
        rounds: paired.rounds,
        measured_aa,
    };
    let verdict = decide(&paired, threshold, measured_aa);
    Judgement {
        ratio: Some(paired.median),
        range: Some((paired.lower, paired.upper)),
        spread: Some(1.0 + threshold),
        basis,
        verdict,
    }
}

/// The paired rule on a ratio of the first side over the second, with the A/A `threshold`.
pub fn decide(paired: &PairedRatio, threshold: f64, measured_aa: bool) -> Verdict {
    if paired.rounds < MIN_ROUNDS {
        return Verdict::Unknown(format!(
            "{} paired round(s): fewer than {MIN_ROUNDS} to judge by",
            paired.rounds
        ));
    }
    let difference = if paired.median >= 1.0 {
        paired.median - 1.0
    } else {
        1.0 / paired.median - 1.0
    };
    let noise = if measured_aa {
        "the cell's A/A deviation"
    } else {
        "the prior A/A deviation (this cell had no A/A check)"
    };
    if paired.lower <= 1.0 && 1.0 <= paired.upper {
        Verdict::Indistinguishable(format!(
            "the paired interval ({:.3}–{:.3}) includes 1",
            paired.lower, paired.upper
        ))
    } else if difference <= threshold {
        Verdict::Indistinguishable(format!(
            "the difference ({}) is within {noise} ({})",
            percent(1.0 + difference),
            percent(1.0 + threshold)
        ))
    } else if paired.median > 1.0 {
        Verdict::FirstFaster
    } else {
        Verdict::SecondFaster
    }
}

/// Rows timed apart (different cells or runs): their intervals must not overlap, and the ratio
/// must exceed the run-to-run spread.
pub fn judge_unpaired(
    first: &Row,
    first_noise: Option<f64>,
    second: &Row,
    second_noise: Option<f64>,
) -> Judgement {
    if let Some(unknown) = unmeasured(first, second) {
        return unknown;
    }
    let (Some(a), Some(b)) = (first.ops(), second.ops()) else {
        unreachable!("both rows have a throughput")
    };
    let ratio = Some(a / b);
    let spread = match (
        spread_of(first, first_noise),
        spread_of(second, second_noise),
    ) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    let (Some((a_low, a_high)), Some((b_low, b_high))) =
        (first.ops_interval(), second.ops_interval())
    else {
        let once = if first.ops_interval().is_none() {
            first
        } else {
            second
        };
        return Judgement {
            ratio,
            range: None,
            spread,
            basis: Basis::Unpaired,
            verdict: Verdict::Unknown(format!(
                "{} was measured once: no interval to judge by",
                once.client
            )),
        };
    };
    let range = Some((a_low / b_high, a_high / b_low));
    let verdict = if a_low <= b_high && b_low <= a_high {
        Verdict::Indistinguishable("the intervals overlap (timed apart, not paired)".to_string())
    } else {
        let difference = if a > b { a / b } else { b / a };
        match spread {
            None => Verdict::Indistinguishable(
                "timed apart, and the run-to-run spread was not measured (REPEAT=1)".to_string(),
            ),
            Some(spread) if difference <= spread => Verdict::Indistinguishable(format!(
                "the difference ({}) is within the run-to-run spread ({})",
                percent(difference),
                percent(spread)
            )),
            Some(_) if a > b => Verdict::FirstFaster,
            Some(_) => Verdict::SecondFaster,
        }
    };
    Judgement {
        ratio,
        range,
        spread,
        basis: Basis::Unpaired,
        verdict,
    }
}

/// A ratio as a percentage difference: 1.043 → `4.3 %`; from twice on, as a factor, which
/// reads better than thousands of percent: 310.87 → `311×`.
pub fn percent(ratio: f64) -> String {
    let p = (ratio - 1.0) * 100.0;
    if p.abs() < 10.0 {
        format!("{p:.1} %")
    } else if ratio < 2.0 {
        format!("{p:.0} %")
    } else if ratio < 10.0 {
        format!("{ratio:.1}×")
    } else {
        format!("{ratio:.0}×")
    }
}

/// A ratio with its range, as every ratio is quoted: `1.32× (1.26–1.37×)`, or `1.32× (1 run)`
/// without a range.
pub fn ratio_with_range(ratio: f64, range: Option<(f64, f64)>) -> String {
    match range {
        Some((low, high)) => format!("{ratio:.2}× ({low:.2}–{high:.2}×)"),
        None => format!("{ratio:.2}× (no range: measured once)"),
    }
}

/// Whether a ratio target is met: only when the lower end of its range meets it.
pub fn target_met(range: Option<(f64, f64)>, target: f64) -> bool {
    range.is_some_and(|(low, _)| low >= target)
}

/// The run's A/A summary from its rows (one A/A ratio per cell), or `None` when no cell had one.
pub fn aa_summary(rows: &[Row]) -> Option<crate::AaSummary> {
    let mut cells: Vec<(&str, f64)> = Vec::new();
    for row in rows {
        if let Some(aa) = row.aa_ratio
            && !cells.iter().any(|(cell, _)| *cell == row.cell)
        {
            cells.push((&row.cell, aa_deviation(&aa)));
        }
    }
    let deviations: Vec<f64> = cells.iter().map(|(_, d)| *d).collect();
    let (worst_cell, worst) = cells.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let within = |limit: f64| deviations.iter().filter(|&&d| d <= limit).count() as u32;
    Some(crate::AaSummary {
        cells: cells.len() as u32,
        median_deviation: median(&deviations)?,
        worst_deviation: worst,
        worst_cell: worst_cell.to_string(),
        within_1_percent: within(0.01),
        within_2_percent: within(0.02),
    })
}
