//! The one rule for naming a faster side, used by every sentence that does: the report's
//! headlines, the lessons, the README headline and `make compare`.
//!
//! A side is called faster only when both hold:
//! 1. the two rows' intervals do not overlap (the throughput bounds from [`Row::ops_interval`]);
//! 2. the ratio of their throughputs exceeds the measured run-to-run spread: the larger of the two
//!    rows' own spreads where they were measured in several runs, else the run's noise figure
//!    ([`Results::noise`](crate::Results::noise)).
//!
//! Otherwise the two are *indistinguishable in this run*, and the reason says which condition
//! failed. A row without an interval (measured once) or without a throughput gives no verdict at
//! all ([`Verdict::Unknown`]). Criterion's confidence interval describes one run's samples; on a
//! shared machine the same pair moves more than that from run to run, which is why condition 2
//! exists.

use crate::Row;

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

/// Two rows judged side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// First row's ops/s over the second's (both measured).
    pub ratio: Option<f64>,
    /// The ratio's range: first's low over second's high to first's high over second's low.
    pub range: Option<(f64, f64)>,
    /// The spread a difference must exceed (1.05 = 5 %), if measured.
    pub spread: Option<f64>,
    /// What may be said.
    pub verdict: Verdict,
}

impl Judgement {
    /// Whether a faster side may be named.
    pub fn is_decided(&self) -> bool {
        matches!(self.verdict, Verdict::FirstFaster | Verdict::SecondFaster)
    }
}

/// The spread a row's difference must exceed: its own if measured in several runs, else the
/// run's noise figure (`run_noise`, the median spread of the run's repeated rows).
pub fn spread_of(row: &Row, run_noise: Option<f64>) -> Option<f64> {
    row.spread
        .or(run_noise)
        .filter(|s| s.is_finite() && *s >= 1.0)
}

/// `first` against `second`. `first_noise` and `second_noise` are their runs' noise figures (the
/// same value when both rows come from one run).
pub fn judge(
    first: &Row,
    first_noise: Option<f64>,
    second: &Row,
    second_noise: Option<f64>,
) -> Judgement {
    let (Some(a), Some(b)) = (first.ops(), second.ops()) else {
        let missing = if first.ops().is_none() { first } else { second };
        return Judgement {
            ratio: None,
            range: None,
            spread: None,
            verdict: Verdict::Unknown(format!(
                "{} has no throughput: {}",
                missing.client,
                missing.unmeasured_reason().unwrap_or_default()
            )),
        };
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
            verdict: Verdict::Unknown(format!(
                "{} was measured once: no interval to judge by",
                once.client
            )),
        };
    };
    let range = Some((a_low / b_high, a_high / b_low));
    let verdict = if a_low <= b_high && b_low <= a_high {
        Verdict::Indistinguishable("the intervals overlap".to_string())
    } else {
        let difference = if a > b { a / b } else { b / a };
        match spread {
            None => Verdict::Indistinguishable(
                "run-to-run spread not measured in this run (REPEAT=1)".to_string(),
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
        verdict,
    }
}

/// A ratio as a percentage difference: 1.043 → `4.3 %`.
pub fn percent(ratio: f64) -> String {
    let p = (ratio - 1.0) * 100.0;
    if p.abs() < 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// A ratio with its range, as every "× redis-benchmark" figure is quoted: `1.32× (1.26–1.37×)`,
/// or `1.32× (1 run)` without a range.
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
