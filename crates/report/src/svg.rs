//! The charts: what each bar shows, here; how it is drawn, as inline SVG, in
//! `templates/charts.html`. A few rectangles, lines and labels need no plotting crate, and inline
//! SVG needs no file, no script and no network to show.
//!
//! Positions are fractions of the axis (0 to 1), so the template alone knows the chart's size.
//! Every bar is a `<rect class="bar">` with a `<title>` (the browser's tooltip) that gives the
//! exact numbers; the page's self-check counts these bars against the figure's `data-bars`.

use serde::Serialize;

use crate::format;
use crate::model::{Cell, DepthChart, DepthClient, series_name, status_class, status_word};
use crate::results::{Kind, Row};

/// One chart: a bar per client of a cell (`marks`), or a group of bars per pipeline depth, one
/// per backend/transport series (`groups`).
#[derive(Serialize)]
pub struct Chart {
    /// Number of bars (`rect.bar` elements).
    pub bars: usize,
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

/// Client labels longer than this are cut (the tooltip has the whole name).
const LABEL_CHARS: usize = 19;

/// One bar per client (ops/s, confidence interval as an error bar), on a shared axis up to
/// `scale_max` so that the cells of one variant compare by eye.
pub fn cell_chart(cell: &Cell, scale_max: f64) -> Chart {
    let max = nice_ceiling(scale_max);
    let marks: Vec<Mark> = cell
        .rows
        .iter()
        .map(|row| Mark {
            name: truncate(&row.client, LABEL_CHARS),
            title: format!("{} ({})", row.client, row.kind),
            ..mark(row, max, kind_colour(row.kind), None)
        })
        .collect();
    Chart {
        bars: marks.iter().filter(|m| m.bar.is_some()).count(),
        label: format!("ops/s per client, {}", cell.label),
        ticks: ticks(max),
        marks,
        groups: Vec::new(),
        series: 0,
    }
}

/// Pipelined-SET throughput of one client: a group of bars per depth, one bar per
/// backend/transport, on the axis shared by every client.
pub fn depth_chart(chart: &DepthChart, client: &DepthClient) -> Chart {
    let max = nice_ceiling(chart.scale_max);
    let groups: Vec<Group> = chart
        .depths
        .iter()
        .map(|depth| Group {
            label: format::depth(*depth),
            marks: chart
                .series
                .iter()
                .enumerate()
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
        bars: groups
            .iter()
            .flat_map(|g| g.marks.iter().flatten())
            .filter(|m| m.bar.is_some())
            .count(),
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
        let mut title = format!(
            "{} ({}): {} ops/s",
            row.client,
            row.kind,
            format::grouped(ops)
        );
        if let Some((low, high)) = interval {
            title += &format!(
                "\nconfidence interval {} – {} ops/s",
                format::grouped(low),
                format::grouped(high)
            );
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
