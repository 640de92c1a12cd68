//! The charts: what each bar shows, here; how it is drawn, as inline SVG, in
//! `templates/charts.html`. A few rectangles, lines and labels need no plotting crate, and inline
//! SVG needs no file, no script and no network to show.
//!
//! Positions are fractions of the axis (0 to 1), so the template alone knows the chart's size.
//! Every bar is a `<rect class="bar">`, every point of a line a `<circle class="point">`, with a
//! `<title>` (the browser's tooltip) that gives the exact numbers; the page's self-check counts
//! them against the figure's `data-bars` and each line chart's `data-points`.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::format;
use crate::model::{
    self, CallersPanel, Cell, DepthChart, DepthClient, OpenCell, series_name, status_class,
    status_word,
};
use crate::paired;
use crate::results::{Kind, Row};
use kvbench_results::verdict;

/// One chart: a bar per client of a cell (`marks`), or a group of bars per pipeline depth, one
/// per backend/transport series (`groups`).
#[derive(Serialize)]
pub struct Chart {
    /// Number of bars (`rect.bar` elements; in a work chart, `rect.work`).
    pub bars: usize,
    /// `bars` for throughput, `work` for counted instructions: the class of the chart and of
    /// its bars, which the page's self-check counts apart.
    class: &'static str,
    /// The value axis' title.
    axis: &'static str,
    label: String,
    /// Tick labels at 0, half and the whole axis.
    ticks: [String; 3],
    marks: Vec<Mark>,
    groups: Vec<Group>,
    series: usize,
}

/// A depth's bars, at their series' places.
#[derive(Serialize)]
struct Group {
    label: String,
    marks: Vec<Option<Mark>>,
}

/// One row of a chart: a bar where it was measured, else its status.
#[derive(Serialize)]
struct Mark {
    name: String,
    title: String,
    kind: &'static str,
    colour: &'static str,
    baseline: bool,
    /// The throughput, short, beside the bar.
    value: String,
    bar: Option<Bar>,
    status: Option<Status>,
}

#[derive(Serialize)]
struct Bar {
    at: f64,
    interval: Option<(f64, f64)>,
    title: String,
}

#[derive(Serialize)]
struct Status {
    class: &'static str,
    word: String,
    title: String,
}

/// Fill colour of a client kind (the legend uses the same).
pub fn kind_colour(kind: Kind) -> &'static str {
    match kind {
        Kind::HandWritten => "#1f77b4",
        Kind::Library => "#ff7f0e",
        Kind::Baseline => "#8c8c8c",
    }
}

/// Fill colour of a depth-chart series (`backend/transport`).
pub fn series_colour(series: &str, index: usize) -> &'static str {
    match series {
        "redis/tcp" => "#c0392b",
        "redis/unix" => "#f1948a",
        "memcached/tcp" => "#1e8449",
        "memcached/unix" => "#82e0aa",
        _ => ["#6c3483", "#b7950b", "#2e86c1", "#7f8c8d"][index % 4],
    }
}

/// A line chart: a value against the callers in flight, or against an open-loop cell's offered
/// rate (log axes), a line per client with a marker per measured point; an x where the client
/// has no measurement is a gap in its line.
#[derive(Serialize)]
pub struct LineChart {
    /// Number of points (`circle.point` elements).
    pub points: usize,
    /// The value axis' title, which names its scale.
    axis: &'static str,
    /// The x axis' title.
    x_axis: &'static str,
    /// (position, label) along each axis.
    x_ticks: Vec<(f64, String)>,
    y_ticks: Vec<(f64, String)>,
    /// Also the figure's legend.
    lines: Vec<Line>,
}

#[derive(Serialize)]
struct Line {
    client: String,
    kind: &'static str,
    colour: &'static str,
    points: Vec<Point>,
    /// Where the client was saturated (an open-loop chart): a mark at the top of the plot,
    /// at its x (`y` unused).
    saturated: Vec<Point>,
}

/// `join`: drawn from the previous x (not after a gap).
#[derive(Serialize)]
struct Point {
    x: f64,
    y: f64,
    join: bool,
    title: String,
}

/// What a line chart plots: a row's value, and how it reads on a tick and in a tooltip.
struct Measure {
    axis: &'static str,
    value: fn(&Row) -> Option<f64>,
    tick: fn(f64) -> String,
    tip: fn(f64) -> String,
}

/// Both on log axes: with many callers, throughput and latency part by orders of magnitude (a
/// thread per caller against one multiplexed connection), and a linear axis would flatten all
/// but the fastest line.
const MEASURES: [Measure; 2] = [
    Measure {
        axis: "ops/s (log scale)",
        value: Row::ops,
        tick: format::short,
        tip: |v| format!("{} ops/s", format::grouped(v)),
    },
    Measure {
        axis: "p99 latency (log scale)",
        value: |row| Some(row.latency_ns?.p99 as f64).filter(|v| row.is_ok() && *v > 0.0),
        tick: format::duration_ns,
        tip: |v| format!("p99 {}", format::duration_ns(v)),
    },
];

/// An open-loop row's p99 from each request's intended start.
const OPEN_P99: Measure = Measure {
    axis: "p99 latency from the intended start (log scale)",
    value: |row| crate::model::open_p99(row).map(|ns| ns as f64),
    tick: format::duration_ns,
    tip: |v| format!("p99 {}", format::duration_ns(v)),
};

/// Line colours by a client's place among its backend's clients (the baseline tools: grey, dashed).
const LINE_COLOURS: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#393b79", "#637939", "#e7969c",
];

/// One client's line before it is placed: its row at each x of the chart (`None`: a gap).
struct Series<'r> {
    client: &'r str,
    kind: Kind,
    index: usize,
    rows: Vec<Option<&'r Row>>,
}

/// `m` of every series at `xs` (log axis, `labels` its ticks); `title` words a point's tooltip
/// and `saturated` marks an x where the row could not keep up.
fn line_chart(
    m: &Measure,
    (xs, labels, x_axis): (&[f64], Vec<String>, &'static str),
    series: &[Series],
    title: impl Fn(&Series, &Row, String) -> String,
    saturated: impl Fn(&Row) -> Option<String>,
) -> LineChart {
    let values: Vec<f64> = (series.iter())
        .flat_map(|line| line.rows.iter().flatten().filter_map(|row| (m.value)(row)))
        .collect();
    let (range, y_ticks) = decades(&values, m.tick);
    let ends = [xs.first(), xs.last()].map(|x| *x.unwrap_or(&1.0));
    let lines: Vec<Line> = (series.iter())
        .map(|line| {
            let mut join = false;
            let at = || xs.iter().zip(&line.rows);
            let points = (at())
                .filter_map(|(&x, row)| {
                    let value = row.and_then(m.value);
                    let join = std::mem::replace(&mut join, value.is_some());
                    let (x, y) = (fraction(x, ends), fraction(value?, range));
                    let title = title(line, (*row)?, (m.tip)(value?));
                    Some(Point { x, y, join, title })
                })
                .collect();
            let saturated = (at())
                .filter_map(|(&x, row)| {
                    let words = saturated((*row)?)?;
                    Some(Point {
                        x: fraction(x, ends),
                        y: 1.0,
                        join: false,
                        title: format!("{} ({}): {words}", line.client, line.kind),
                    })
                })
                .collect();
            let colour = match line.kind {
                Kind::Baseline => "#555",
                _ => LINE_COLOURS[line.index % LINE_COLOURS.len()],
            };
            let (client, kind) = (line.client.to_string(), line.kind.as_str());
            Line {
                client,
                kind,
                colour,
                points,
                saturated,
            }
        })
        .collect();
    LineChart {
        points: values.len(),
        axis: m.axis,
        x_axis,
        x_ticks: (xs.iter().zip(labels))
            .map(|(&x, label)| (fraction(x, ends), label))
            .collect(),
        y_ticks,
        lines,
    }
}

/// A panel's ops/s and p99 latency against the callers in flight, at `levels` (its op's).
pub fn callers_charts(levels: &BTreeSet<u32>, panel: &CallersPanel) -> [LineChart; 2] {
    let xs: Vec<f64> = levels.iter().map(|&c| f64::from(c)).collect();
    let series: Vec<Series> = (panel.lines.iter())
        .map(|line| Series {
            client: line.client,
            kind: line.kind,
            index: line.index,
            rows: levels.iter().map(|c| line.rows.get(c).copied()).collect(),
        })
        .collect();
    MEASURES.map(|m| {
        let labels = levels.iter().map(u32::to_string).collect();
        let x_axis = "callers in flight, C (log scale)";
        line_chart(&m, (&xs, labels, x_axis), &series, point_title, |_| None)
    })
}

/// An open-loop cell's p99 against the offered rate, a line per client; a client saturated at
/// a rate is marked there (✗, at the top), with what it achieved.
pub fn open_chart(cell: &OpenCell) -> LineChart {
    let xs: Vec<f64> = cell.rates.iter().map(|&r| r as f64).collect();
    let labels = cell
        .rates
        .iter()
        .map(|&r| format::short(r as f64))
        .collect();
    let series: Vec<Series> = (cell.lines.iter())
        .map(|line| Series {
            client: line.client,
            kind: line.kind,
            index: line.index,
            rows: cell
                .rates
                .iter()
                .map(|r| line.rows.get(r).copied())
                .collect(),
        })
        .collect();
    let x_axis = "offered rate, requests/s (log scale)";
    let title = |line: &Series, row: &Row, value: String| {
        let rate = format::grouped(row.offered_rate.unwrap_or(0) as f64);
        format!(
            "{} ({}) · {rate} requests/s offered: {value}",
            line.client, line.kind
        )
    };
    line_chart(
        &OPEN_P99,
        (&xs, labels, x_axis),
        &series,
        title,
        open_saturation,
    )
}

/// How an open-loop row fell over, if it did: `saturated at 83,000 requests/s (achieved
/// 61,200/s)`.
pub fn open_saturation(row: &Row) -> Option<String> {
    let open = row.open_loop.filter(|o| o.saturated && row.is_ok())?;
    let rate = format::grouped(row.offered_rate.unwrap_or(0) as f64);
    Some(match open.achieved_rate {
        Some(achieved) => format!(
            "saturated at {rate} requests/s (achieved {}/s)",
            format::grouped(achieved)
        ),
        None => format!("saturated at a lower rate than {rate} requests/s (not run)"),
    })
}

/// `fred (library) · 16 callers: 95,000 ops/s`, then how it served them.
fn point_title(line: &Series, row: &Row, value: String) -> String {
    let (client, kind, c, n) = (line.client, line.kind, row.concurrency, row.connections);
    let s = |n: u32| if n == 1 { "" } else { "s" };
    let mut title = format!("{client} ({kind}) · {c} caller{}: {value}", s(c));
    title += &format!("\nmodel {}, {n} connection{}", row.model, s(n));
    if let Some(bytes) = row.memory_per_caller_bytes {
        title += &format!("\nmemory per caller {}", format::bytes(bytes));
    }
    title
}

/// A log axis over the decades around `values` (all positive), with a tick at each decade.
fn decades(values: &[f64], tick: fn(f64) -> String) -> ([f64; 2], Vec<(f64, String)>) {
    let max = values.iter().copied().fold(1.0, f64::max);
    let min = values.iter().copied().fold(max, f64::min);
    let (low, high) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    let high = high.max(low + 1);
    let at = |k: i32| f64::from(k - low) / f64::from(high - low);
    let ticks = (low..=high).map(|k| (at(k), tick(10f64.powi(k)))).collect();
    ([10f64.powi(low), 10f64.powi(high)], ticks)
}

/// Where `value` lies on a log axis from `low` to `high`, from 0 to 1 (the middle when the axis
/// has no length).
fn fraction(value: f64, [low, high]: [f64; 2]) -> f64 {
    let span = (high / low).ln();
    match span > 0.0 {
        true => ((value / low).ln() / span).clamp(0.0, 1.0),
        false => 0.5,
    }
}

/// Client labels longer than this are cut (the tooltip has the whole name).
const LABEL_CHARS: usize = 19;

/// One bar per client (ops/s, confidence interval as an error bar), on a shared axis up to
/// `scale_max` so that the cells of one variant compare by eye.
pub fn cell_chart(cell: &Cell, scale_max: f64) -> Chart {
    let max = nice_ceiling(scale_max);
    let marks: Vec<Mark> = (cell.rows.iter())
        .map(|row| Mark {
            name: truncate(&row.client, LABEL_CHARS),
            title: format!("{} ({})", row.client, row.kind),
            ..mark(row, max, kind_colour(row.kind), None)
        })
        .collect();
    Chart {
        bars: marks.iter().filter(|m| m.bar.is_some()).count(),
        class: "bars",
        axis: "ops/s",
        label: format!("ops/s per client, {}", cell.label),
        ticks: ticks(max),
        marks,
        groups: Vec::new(),
        series: 0,
    }
}

/// The largest count among `rows`: a work chart's shared axis.
pub fn work_scale<'r>(rows: impl IntoIterator<Item = &'r &'r Row>) -> f64 {
    (rows.into_iter())
        .filter(|row| row.is_ok())
        .filter_map(|row| Some(row.instructions_per_op.as_ref()?.per_op))
        .fold(0.0, f64::max)
}

/// One cell's counted instructions per operation, drawn as its throughput chart is: a bar per
/// client that has a count, on an axis shared by the cells of its variant; a client without one
/// says `not counted` (and why, as tooltip). `None` where no client of the cell was counted.
/// Failed and unsupported rows, which ran nothing, are left out.
pub fn work_chart(cell: &Cell, scale_max: f64) -> Option<Chart> {
    let rows: Vec<&Row> = (cell.rows.iter().copied()).filter(|r| r.is_ok()).collect();
    if !rows.iter().any(|r| r.instructions_per_op.is_some()) {
        return None;
    }
    let max = nice_ceiling(scale_max);
    let marks: Vec<Mark> = (rows.iter())
        .map(|row| {
            let who = format!("{} ({})", row.client, row.kind);
            let counted = row.instructions_per_op.as_ref();
            let bar = counted.map(|counted| Bar {
                at: (counted.per_op / max).clamp(0.0, 1.0),
                interval: None,
                title: format!(
                    "{who}: {} instructions/op\n{}",
                    format::instructions(counted),
                    model::instructions_title(counted)
                ),
            });
            let status = counted.is_none().then(|| Status {
                class: "unsupported",
                word: format::NOT_COUNTED.to_string(),
                title: format!("{who}: {}", model::not_counted_reason(row)),
            });
            Mark {
                name: truncate(&row.client, LABEL_CHARS),
                title: who,
                kind: row.kind.as_str(),
                colour: kind_colour(row.kind),
                baseline: false,
                value: counted.map_or(String::new(), |c| format::short(c.per_op)),
                bar,
                status,
            }
        })
        .collect();
    Some(Chart {
        bars: marks.iter().filter(|m| m.bar.is_some()).count(),
        class: "work",
        axis: "instructions/op (counted, valgrind)",
        label: format!("instructions per operation per client, {}", cell.label),
        ticks: ticks(max),
        marks,
        groups: Vec::new(),
        series: 0,
    })
}

/// One cell's ratios to its reference: a point per row at its paired ratio's median, whiskers
/// from its interval, on a log axis around 1 (the reference), with the cell's A/A deviation as a
/// band around 1. Ratios of rows timed in the same rounds do not inherit the machine's slow
/// periods, so their intervals separate where the ops/s bars' overlap.
#[derive(Serialize)]
pub struct RatioChart {
    /// Number of points (`circle.point` elements).
    pub points: usize,
    label: String,
    /// The axis' title: `× raw-tcp (paired, log scale)`.
    axis: String,
    /// (position, label) of the ticks.
    ticks: Vec<(f64, String)>,
    /// Where 1 lies, and the A/A band around it.
    one: f64,
    band: (f64, f64),
    marks: Vec<RatioMark>,
}

/// One row of a ratio chart: a point with whiskers, or why there is none.
#[derive(Serialize)]
struct RatioMark {
    name: String,
    title: String,
    colour: &'static str,
    /// Median, lower and upper, as positions on the axis.
    point: Option<(f64, f64, f64)>,
    /// The ratio, short, beside the point; or why there is no point.
    value: String,
}

/// The ratio chart of a cell with paired rounds (`None` without a reference).
pub fn ratio_chart(cell: &Cell) -> Option<RatioChart> {
    let reference = cell.reference?;
    let (deviation, _) = verdict::cell_threshold(reference);
    let aa = reference.aa_ratio;
    // The reference's own point is its A/A ratio: the ratio it has to itself.
    let ratio_of = |row: &Row| match row.ratio_to_reference {
        Some(paired) => Some(paired),
        None if std::ptr::eq(row, reference) => aa,
        None => None,
    };
    let rows: Vec<&Row> = (cell.rows.iter().copied())
        .filter(|row| !row.is_floor() || row.ratio_to_reference.is_some())
        .collect();
    let (mut low, mut high) = (1.0 / (1.0 + deviation), 1.0 + deviation);
    for paired in rows.iter().filter_map(|row| ratio_of(row)) {
        low = f64::min(low, paired.lower.min(paired.median));
        high = f64::max(high, paired.upper.max(paired.median));
    }
    // A little room beyond the extremes, so no whisker ends on the frame.
    let range = [low / 1.15, high * 1.15];
    let at = |value: f64| fraction(value, range);
    let marks: Vec<RatioMark> = (rows.iter())
        .map(|row| {
            let name = truncate(&row.client, LABEL_CHARS);
            let colour = kind_colour(row.kind);
            let Some(paired) = ratio_of(row) else {
                let why = match row.unmeasured_reason() {
                    Some(why) => why,
                    None => "not in the paired rounds".to_string(),
                };
                return RatioMark {
                    name,
                    title: format!("{} ({}): {why}", row.client, row.kind),
                    colour,
                    point: None,
                    value: match row.ops() {
                        Some(_) => "not paired".to_string(),
                        None => status_word(row).to_string(),
                    },
                };
            };
            let is_reference = std::ptr::eq(*row, reference);
            let what = match is_reference {
                true => format!("the reference against itself (A/A), {}", cell.aa_text()),
                false => format!(
                    "× {}, {}: {}",
                    reference.client,
                    cell.aa_text(),
                    cell.reference_verdict(row)
                ),
            };
            RatioMark {
                name,
                title: format!(
                    "{} ({}): {} over {} rounds\n{what}",
                    row.client,
                    row.kind,
                    paired::paired_text(&paired),
                    paired.rounds
                ),
                colour,
                point: Some((at(paired.median), at(paired.lower), at(paired.upper))),
                value: paired::ratio(paired.median),
            }
        })
        .collect();
    // 1 and the extremes; an extreme too close to 1 for its label to fit is left out.
    let ticks: Vec<(f64, String)> = [low, 1.0, high]
        .into_iter()
        .filter(|&value| value == 1.0 || (at(value) - at(1.0)).abs() > 0.12)
        .map(|value| (at(value), paired::ratio(value)))
        .collect();
    Some(RatioChart {
        points: marks.iter().filter(|m| m.point.is_some()).count(),
        label: format!(
            "throughput over {}'s, paired, {}",
            reference.client, cell.label
        ),
        axis: format!("× {} (paired, log scale)", reference.client),
        ticks,
        one: at(1.0),
        band: (at(1.0 / (1.0 + deviation)), at(1.0 + deviation)),
        marks,
    })
}

/// Pipelined-SET throughput of one client: a group of bars per depth, one bar per
/// backend/transport, on the axis shared by every client.
pub fn depth_chart(chart: &DepthChart, client: &DepthClient) -> Chart {
    let max = nice_ceiling(chart.scale_max);
    let groups: Vec<Group> = (chart.depths.iter())
        .map(|depth| Group {
            label: format::depth(*depth),
            marks: (chart.series.iter().enumerate())
                .map(|(s, series)| {
                    let row = client.rows.get(&(series.clone(), *depth))?;
                    let place = format!("{} · depth {}", series_name(row), format::depth(*depth));
                    Some(Mark {
                        name: series.clone(),
                        ..mark(row, max, series_colour(series, s), Some(&place))
                    })
                })
                .collect(),
        })
        .collect();
    Chart {
        bars: (groups.iter().flat_map(|g| g.marks.iter().flatten()))
            .filter(|m| m.bar.is_some())
            .count(),
        class: "depth",
        axis: "depth → (ops/s ↑)",
        label: format!("pipelined SET ops/s by depth, {}", client.client),
        ticks: ticks(max),
        marks: Vec::new(),
        series: chart.series.len(),
        groups,
    }
}

/// A row's bar on an axis up to `max`, or its status; `place` (series and depth) opens its
/// tooltips in a depth chart.
fn mark(row: &Row, max: f64, colour: &'static str, place: Option<&str>) -> Mark {
    let at = |v: f64| (v / max).clamp(0.0, 1.0);
    let interval = row.ops_interval();
    let bar = row.ops().map(|ops| {
        let (client, kind) = (&row.client, row.kind);
        let mut title = format!("{client} ({kind}): {} ops/s", format::grouped(ops));
        if let Some((low, high)) = interval.map(|(l, h)| (format::grouped(l), format::grouped(h))) {
            title += &format!("\nconfidence interval {low} – {high} ops/s");
        }
        Bar {
            at: at(ops),
            interval: interval.map(|(low, high)| (at(low), at(high))),
            title: place.map_or(title.clone(), |place| format!("{place}\n{title}")),
        }
    });
    let status = bar.is_none().then(|| {
        let why = row.unmeasured_reason().unwrap_or_default();
        Status {
            class: status_class(row),
            word: status_word(row).to_string(),
            title: place.map_or(why.clone(), |place| format!("{place}: {why}")),
        }
    });
    Mark {
        name: String::new(),
        title: String::new(),
        kind: row.kind.as_str(),
        colour,
        baseline: row.kind == Kind::Baseline,
        value: row.ops().map_or(String::new(), format::short),
        bar,
        status,
    }
}

/// 0, max/2 and max: enough to read a bar against, few enough to stay legible when narrow.
fn ticks(max: f64) -> [String; 3] {
    [0.0, max / 2.0, max].map(format::short)
}

/// The smallest of 1, 2, 2.5, 3, 4, 5 or 10 × 10^k that is at least `value` (1 for nothing to show).
fn nice_ceiling(value: f64) -> f64 {
    if !(value.is_finite() && value > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    let fraction = value / power;
    let nice = [1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 10.0]
        .into_iter()
        .find(|n| fraction <= *n + 1e-9)
        .unwrap_or(10.0);
    nice * power
}

fn truncate(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_string()
    } else {
        let mut short: String = text.chars().take(chars - 1).collect();
        short.push('…');
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(nice_ceiling(82_000.0), 100_000.0);
        assert_eq!(nice_ceiling(120_000.0), 200_000.0);
        assert_eq!(nice_ceiling(2_100_000.0), 2_500_000.0);
        assert_eq!(nice_ceiling(1_000.0), 1_000.0);
        assert_eq!(nice_ceiling(2_660_000.0), 3_000_000.0);
        assert_eq!(nice_ceiling(0.45), 0.5);
    }

    #[test]
    fn truncates_long_names() {
        assert_eq!(truncate("short", 19), "short");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
