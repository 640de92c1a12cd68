//! How every output quotes a ratio and the noise it is read against: a paired ratio with its
//! interval, a ratio of rows timed apart marked as such, and the cell's A/A figure beside them.
//!
//! The rule itself is [`kvbench_results::verdict`]; this module only words its results, so that
//! the report, `summary.md`, the lessons, the README headline and `make compare` say the same
//! thing the same way.

use kvbench_results::verdict::{self, Basis, Judgement, Verdict};
use kvbench_results::{AaSummary, PairedRatio, Results, Row};

use crate::format;

/// A ratio for people: two decimals (`0.94×`, `31.20×`, none from 100 on), three within 5 % of
/// 1 (`0.998×`: an A/A deviation is a few tenths of a percent), two significant digits below 0.1
/// (`0.033×`), so that a client 30 times slower does not read as `0.03×`.
pub fn ratio(value: f64) -> String {
    format!("{}×", number(value, near_one(value)))
}

/// Whether a ratio is close enough to 1 to need a third decimal.
fn near_one(value: f64) -> bool {
    (0.95..=1.05).contains(&value) && value != 1.0
}

/// A ratio's number, with three decimals when `fine`.
fn number(value: f64, fine: bool) -> String {
    if fine {
        format!("{value:.3}")
    } else if value.is_finite() && value > 0.0 && value < 0.1 {
        format::significant(value, 2)
    } else {
        format::ratio(value).trim_end_matches('×').to_string()
    }
}

/// `0.94× (0.92–0.96×)`; the bounds with the precision the median needs (`0.998× (0.996–1.001×)`).
pub fn with_interval(median: f64, (low, high): (f64, f64)) -> String {
    let fine = near_one(median);
    format!(
        "{}× ({}–{}×)",
        number(median, fine),
        number(low, fine),
        number(high, fine)
    )
}

/// A paired ratio from the bench or [`verdict::paired_ratio`]: `0.94× (0.92–0.96×)`.
pub fn paired_text(paired: &PairedRatio) -> String {
    with_interval(paired.median, (paired.lower, paired.upper))
}

/// A judgement's ratio as quoted: paired, `0.94× (0.92–0.96×)`; timed apart, the range of the
/// two rows' intervals and the words `timed apart`; `–` without a ratio.
pub fn quote(judged: &Judgement) -> String {
    let text = interval_text(judged);
    match (judged.range, judged.basis) {
        (Some(_), Basis::Unpaired) => format!("{}, timed apart)", text.trim_end_matches(')')),
        _ => text,
    }
}

/// [`quote`] without saying whether the ratio is paired, for a sentence that says it after.
pub fn interval_text(judged: &Judgement) -> String {
    match (judged.ratio, judged.range) {
        (Some(r), Some(range)) => with_interval(r, range),
        (Some(r), None) => format!("{} (measured once)", ratio(r)),
        (None, _) => "–".to_string(),
    }
}

/// The A/A figure of `row`'s cell: `A/A 0.4 %`, or `A/A not measured: prior 1 %`.
pub fn aa_text(row: &Row) -> String {
    match verdict::cell_threshold(row) {
        (deviation, true) => format!("A/A {}", percent(deviation)),
        (prior, false) => format!("A/A not measured: prior {}", percent(prior)),
    }
}

/// What a judgement stood on, in words: `paired over 30 rounds, A/A 0.4 %`, or `timed apart`
/// with the run-to-run spread it was read against.
pub fn basis_text(judged: &Judgement, row: &Row) -> String {
    match judged.basis {
        Basis::Paired { rounds, .. } => {
            format!("paired over {rounds} rounds, {}", aa_text(row))
        }
        Basis::Unpaired => match judged.spread {
            Some(spread) => format!(
                "timed apart, run-to-run spread {}",
                verdict::percent(spread)
            ),
            None => "timed apart, run-to-run spread not measured".to_string(),
        },
    }
}

/// A deviation given as a fraction (0.004) as a percentage: `0.4 %`.
pub fn percent(deviation: f64) -> String {
    verdict::percent(1.0 + deviation)
}

/// The word a verdict of `first` against `second` gives `first`: `faster`, `slower`, or why
/// neither may be said.
pub fn verdict_word(judged: &Judgement) -> String {
    match &judged.verdict {
        Verdict::FirstFaster => "faster".to_string(),
        Verdict::SecondFaster => "slower".to_string(),
        Verdict::Indistinguishable(why) => format!("not separated: {why}"),
        Verdict::Unknown(why) => format!("unknown: {why}"),
    }
}

/// The run's A/A check (as written by the bench, else from its rows), or `None` when no cell
/// had one.
pub fn aa_summary(results: &Results) -> Option<AaSummary> {
    results
        .run
        .aa
        .clone()
        .or_else(|| verdict::aa_summary(&results.rows))
}

/// The run's A/A check in a sentence.
pub fn aa_summary_text(results: &Results) -> String {
    match aa_summary(results) {
        Some(aa) => format!(
            "each cell's reference timed twice in the same rounds was {} from itself (median over \
             {} cells; worst {}, in {}); {} cells within 1 %, {} within 2 %. A difference inside \
             its cell's A/A deviation is not called a difference",
            percent(aa.median_deviation),
            aa.cells,
            percent(aa.worst_deviation),
            aa.worst_cell,
            aa.within_1_percent,
            aa.within_2_percent
        ),
        None => format!(
            "not measured in this run: paired verdicts read against a prior A/A deviation of {}",
            percent(verdict::PRIOR_AA_DEVIATION)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_their_digits_when_small() {
        assert_eq!(ratio(0.0333), "0.033×");
        assert_eq!(ratio(0.94), "0.94×");
        assert_eq!(ratio(31.2), "31.20×");
        assert_eq!(with_interval(0.94, (0.92, 0.961)), "0.94× (0.92–0.96×)");
        assert_eq!(
            with_interval(0.0333, (0.0329, 0.0338)),
            "0.033× (0.033–0.034×)"
        );
        assert_eq!(
            with_interval(0.998, (0.9965, 1.0005)),
            "0.998× (0.997–1.000×)"
        );
        assert_eq!(ratio(1.0), "1.00×");
        assert_eq!(percent(0.004), "0.4 %");
    }
}
