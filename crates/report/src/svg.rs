//! Inline SVG charts, drawn by hand: a few rectangles, lines and labels need no plotting crate,
//! and inline SVG needs no file, no script and no network to show.
//!
//! Every bar is a `<rect class="bar">` with a `<title>` (the browser's tooltip) that gives the
//! exact numbers; the page's self-check counts these bars against the figure's `data-bars`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::format;
use crate::model::{Cell, DepthChart, DepthClient, series_name, status_class};
use crate::results::{Kind, Row};

// The lessons read this through this module.
pub use crate::model::status_word;

/// A drawn chart and how many bars it holds.
#[derive(Serialize)]
pub struct Chart {
    /// `<svg>…</svg>`.
    pub svg: String,
    /// Number of `rect.bar` elements.
    pub bars: usize,
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

const CELL_WIDTH: f64 = 380.0;
const LABEL_WIDTH: f64 = 124.0;
const VALUE_WIDTH: f64 = 52.0;
const ROW_HEIGHT: f64 = 22.0;
const BAR_HEIGHT: f64 = 14.0;
const TOP: f64 = 6.0;
const AXIS_HEIGHT: f64 = 26.0;
const LABEL_CHARS: usize = 19;

/// One bar per client (ops/s, confidence interval as an error bar), on a shared axis up to
/// `scale_max` so that the cells of one variant compare by eye.
pub fn cell_chart(cell: &Cell, scale_max: f64) -> Chart {
    let max = nice_ceiling(scale_max);
    let plot_x0 = LABEL_WIDTH;
    let plot_width = CELL_WIDTH - LABEL_WIDTH - VALUE_WIDTH;
    let x = |v: f64| plot_x0 + (v / max).clamp(0.0, 1.0) * plot_width;
    let plot_height = cell.rows.len() as f64 * ROW_HEIGHT;
    let height = TOP + plot_height + AXIS_HEIGHT;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="bars" viewBox="0 0 {CELL_WIDTH} {height}" width="{CELL_WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        format::html(&format!("ops/s per client, {}", cell.label))
    );
    axis_x(&mut svg, max, plot_x0, plot_width, TOP, TOP + plot_height);

    let mut bars = 0;
    for (i, row) in cell.rows.iter().enumerate() {
        let y = TOP + i as f64 * ROW_HEIGHT;
        let middle = y + ROW_HEIGHT / 2.0;
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{middle}" dy="0.35em" text-anchor="end"><title>{}</title>{}</text>"#,
            LABEL_WIDTH - 6.0,
            format::html(&format!("{} ({})", row.client, row.kind)),
            format::html(&truncate(&row.client, LABEL_CHARS)),
        );
        match row.ops() {
            Some(ops) => {
                bars += 1;
                let interval = row.ops_interval();
                let _ = write!(
                    svg,
                    r#"<rect class="bar" data-kind="{}" x="{plot_x0}" y="{}" width="{:.1}" height="{BAR_HEIGHT}" fill="{}"{}><title>{}</title></rect>"#,
                    format::html(row.kind.as_str()),
                    y + (ROW_HEIGHT - BAR_HEIGHT) / 2.0,
                    (x(ops) - plot_x0).max(1.0),
                    kind_colour(row.kind),
                    if row.kind == Kind::Baseline {
                        r##" stroke="#333" stroke-dasharray="3 2""##
                    } else {
                        ""
                    },
                    format::html(&tooltip(row, ops, interval)),
                );
                if let Some((low, high)) = interval {
                    error_bar_horizontal(&mut svg, x(low), x(high), middle);
                }
                let _ = write!(
                    svg,
                    r#"<text class="value" x="{}" y="{middle}" dy="0.35em">{}</text>"#,
                    CELL_WIDTH - VALUE_WIDTH + 4.0,
                    format::short(ops)
                );
            }
            None => {
                let _ = write!(
                    svg,
                    r#"<text class="status status-{}" x="{}" y="{middle}" dy="0.35em"><title>{}</title>{}</text>"#,
                    status_class(row),
                    plot_x0 + 4.0,
                    format::html(&row.unmeasured_reason().unwrap_or_default()),
                    format::html(status_word(row)),
                );
            }
        }
    }
    let _ = write!(
        svg,
        r#"<text class="axis-title" x="{}" y="{}" text-anchor="end">ops/s</text></svg>"#,
        CELL_WIDTH - 2.0,
        height - 4.0
    );
    Chart { svg, bars }
}

const DEPTH_WIDTH: f64 = 320.0;
const DEPTH_HEIGHT: f64 = 190.0;
const DEPTH_LEFT: f64 = 46.0;
const DEPTH_BOTTOM: f64 = 30.0;

/// Pipelined-SET throughput of one client: a group of bars per depth, one bar per
/// backend/transport, on the axis shared by every client.
pub fn depth_chart(chart: &DepthChart, client: &DepthClient) -> Chart {
    let max = nice_ceiling(chart.scale_max);
    let plot_top = TOP + 4.0;
    let plot_bottom = DEPTH_HEIGHT - DEPTH_BOTTOM;
    let plot_height = plot_bottom - plot_top;
    let plot_width = DEPTH_WIDTH - DEPTH_LEFT - 8.0;
    let y = |v: f64| plot_bottom - (v / max).clamp(0.0, 1.0) * plot_height;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="depth" viewBox="0 0 {DEPTH_WIDTH} {DEPTH_HEIGHT}" width="{DEPTH_WIDTH}" height="{DEPTH_HEIGHT}" role="img" aria-label="{}">"#,
        format::html(&format!("pipelined SET ops/s by depth, {}", client.client))
    );
    for tick in ticks(max) {
        let ty = y(tick);
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{DEPTH_LEFT}" x2="{}" y1="{ty:.1}" y2="{ty:.1}"/><text class="tick" x="{}" y="{ty:.1}" dy="0.35em" text-anchor="end">{}</text>"#,
            DEPTH_LEFT + plot_width,
            DEPTH_LEFT - 4.0,
            format::short(tick)
        );
    }
    let groups = chart.depths.len().max(1) as f64;
    let group_width = plot_width / groups;
    let bar_width = group_width * 0.8 / chart.series.len().max(1) as f64;
    let mut bars = 0;
    for (d, depth) in chart.depths.iter().enumerate() {
        let group_x = DEPTH_LEFT + d as f64 * group_width + group_width * 0.1;
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            DEPTH_LEFT + (d as f64 + 0.5) * group_width,
            plot_bottom + 14.0,
            format::depth(*depth)
        );
        for (s, series) in chart.series.iter().enumerate() {
            let Some(row) = client.rows.get(&(series.clone(), *depth)) else {
                continue;
            };
            let bar_x = group_x + s as f64 * bar_width;
            match row.ops() {
                Some(ops) => {
                    bars += 1;
                    let top = y(ops);
                    let interval = row.ops_interval();
                    let _ = write!(
                        svg,
                        r#"<rect class="bar" data-series="{}" x="{bar_x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                        format::html(series),
                        bar_width * 0.92,
                        (plot_bottom - top).max(1.0),
                        series_colour(series, s),
                        format::html(&format!(
                            "{} · depth {}\n{}",
                            series_name(row),
                            format::depth(*depth),
                            tooltip(row, ops, interval)
                        )),
                    );
                    if let Some((low, high)) = interval {
                        error_bar_vertical(&mut svg, bar_x + bar_width * 0.46, y(low), y(high));
                    }
                }
                None => {
                    let _ = write!(
                        svg,
                        r#"<text class="status status-{}" x="{:.1}" y="{}" text-anchor="middle"><title>{}</title>✗</text>"#,
                        status_class(row),
                        bar_x + bar_width * 0.46,
                        plot_bottom - 3.0,
                        format::html(&format!(
                            "{} · depth {}: {}",
                            series_name(row),
                            format::depth(*depth),
                            row.unmeasured_reason().unwrap_or_default()
                        )),
                    );
                }
            }
        }
    }
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{DEPTH_LEFT}" x2="{}" y1="{plot_bottom}" y2="{plot_bottom}"/><text class="axis-title" x="{}" y="{}" text-anchor="end">depth → (ops/s ↑)</text></svg>"#,
        DEPTH_LEFT + plot_width,
        DEPTH_WIDTH - 2.0,
        DEPTH_HEIGHT - 3.0
    );
    Chart { svg, bars }
}

/// Vertical grid lines with tick labels under the plot.
fn axis_x(svg: &mut String, max: f64, x0: f64, width: f64, top: f64, bottom: f64) {
    for tick in ticks(max) {
        let tx = x0 + tick / max * width;
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{tx:.1}" x2="{tx:.1}" y1="{top}" y2="{bottom}"/><text class="tick" x="{tx:.1}" y="{}" text-anchor="middle">{}</text>"#,
            bottom + 12.0,
            format::short(tick)
        );
    }
}

fn error_bar_horizontal(svg: &mut String, x1: f64, x2: f64, y: f64) {
    let _ = write!(
        svg,
        r#"<path class="ci" d="M{x1:.1} {y1:.1}V{y2:.1}M{x1:.1} {y:.1}H{x2:.1}M{x2:.1} {y1:.1}V{y2:.1}"/>"#,
        y1 = y - 4.0,
        y2 = y + 4.0
    );
}

fn error_bar_vertical(svg: &mut String, x: f64, y_low: f64, y_high: f64) {
    let _ = write!(
        svg,
        r#"<path class="ci" d="M{x1:.1} {y_low:.1}H{x2:.1}M{x:.1} {y_low:.1}V{y_high:.1}M{x1:.1} {y_high:.1}H{x2:.1}"/>"#,
        x1 = x - 3.0,
        x2 = x + 3.0
    );
}

fn tooltip(row: &Row, ops: f64, interval: Option<(f64, f64)>) -> String {
    let mut text = format!(
        "{} ({}): {} ops/s",
        row.client,
        row.kind,
        format::grouped(ops)
    );
    if let Some((low, high)) = interval {
        let _ = write!(
            text,
            "\nconfidence interval {} – {} ops/s",
            format::grouped(low),
            format::grouped(high)
        );
    }
    text
}

/// 0, max/2 and max: enough to read a bar against, few enough to stay legible when narrow.
fn ticks(max: f64) -> [f64; 3] {
    [0.0, max / 2.0, max]
}

/// The smallest of 1, 2, 2.5, 3, 4, 5 or 10 × 10^k that is at least `value` (1 for nothing to show).
pub fn nice_ceiling(value: f64) -> f64 {
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
