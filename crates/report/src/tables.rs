//! The report's tables as rows of cells: the headline, a cost table per cell, the pipeline
//! depths and the callers in flight. Each cell carries its text and, for numbers, the raw value tables sort by; the page
//! prints it as a `<td>`, the summary as a Markdown table cell.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::format;
use crate::model::{
    self, CallersPanel, Cell, DepthChart, OPEN_P99_NS, OpenCell, leader_names, status_class,
    status_word,
};
use crate::paired;
use crate::results::{Kind, Row};
use crate::svg;
use kvbench_results::verdict::Judgement;

/// One table cell: what `td` in `templates/macros.html` prints.
#[derive(Serialize, Default)]
pub struct Td {
    /// Style class (`num`: a number).
    pub class: &'static str,
    /// The raw number the table sorts by (`Some("")` for a number cell without a number).
    pub v: Option<String>,
    /// Tooltip.
    pub title: Option<String>,
    /// What the cell shows.
    pub text: String,
}

impl Td {
    /// A right-aligned number, `f` for people and the raw value for sorting.
    pub fn num(value: Option<f64>, f: impl Fn(f64) -> String) -> Td {
        let value = value.filter(|v| v.is_finite());
        Td {
            class: "num",
            v: Some(value.map_or(String::new(), |v| v.to_string())),
            text: value.map_or("–".to_string(), f),
            ..Td::default()
        }
    }

    /// The same cell showing `text` instead (its sort value kept).
    pub fn with_text(self, text: impl Into<String>) -> Td {
        Td {
            text: text.into(),
            ..self
        }
    }

    /// Plain text.
    pub fn text(text: impl Into<String>) -> Td {
        Td {
            text: text.into(),
            ..Td::default()
        }
    }

    /// A ratio to another row of the cell (`judged`: this row against it), quoted as `text`,
    /// sorting by the bare ratio; the tooltip says what the rule made of it and what it stood on.
    fn judged(row: &Row, judged: Option<Judgement>, text: String) -> Td {
        let title = (judged.as_ref()).filter(|j| j.ratio.is_some()).map(|j| {
            format!(
                "{}; {}",
                paired::verdict_word(j),
                paired::basis_text(j, row)
            )
        });
        Td {
            title,
            ..Td::num(judged.and_then(|j| j.ratio), |_| text.clone())
        }
    }

    /// The ratio to the baseline tool with its interval.
    fn baseline_ratio(cell: &Cell, row: Option<&Row>) -> Td {
        let text = cell.baseline_ratio_text(row);
        match (row, cell.baseline) {
            (Some(row), Some(baseline)) if std::ptr::eq(row, baseline) => {
                Td::num(Some(1.0), |_| text.clone())
            }
            (Some(row), _) => Td::judged(row, cell.against_baseline(row), text),
            (None, _) => Td::num(None, |_| text.clone()),
        }
    }

    /// The ratio to the fastest client of the cell with its interval.
    fn fastest_ratio(cell: &Cell, row: &Row) -> Td {
        let text = cell.fastest_ratio_text(row);
        match cell.fastest {
            Some(fastest) if std::ptr::eq(row, fastest) => Td::num(Some(1.0), |_| text.clone()),
            _ => Td::judged(row, cell.against_fastest(row), text),
        }
    }

    /// A row's counted instructions per operation (with the phases' spread where it exceeds
    /// 0.1 %), the split by owner as tooltip; `not counted` and why for a measured row without a
    /// count, `–` for a row that was not measured.
    fn instructions(row: &Row, measured: bool) -> Td {
        match (&row.instructions_per_op, measured) {
            (_, false) => Td::num(None, format::grouped),
            (Some(counted), true) => Td {
                title: Some(model::instructions_title(counted)),
                ..Td::num(Some(counted.per_op), |_| format::instructions(counted))
            },
            (None, true) => Td {
                class: "num",
                v: Some(String::new()),
                title: Some(model::not_counted_reason(row).to_string()),
                text: format::NOT_COUNTED.to_string(),
            },
        }
    }

    /// The row's paired ratio to the cell's reference, sorting by its median (1 for the
    /// reference itself).
    fn reference_ratio(cell: &Cell, row: &Row) -> Td {
        let is_reference = cell.reference.is_some_and(|r| std::ptr::eq(r, row));
        let value = match row.ratio_to_reference {
            Some(paired) => Some(paired.median),
            None if is_reference => Some(1.0),
            None => None,
        };
        let title = row
            .ratio_to_reference
            .map(|paired| format!("{} rounds; {}", paired.rounds, cell.aa_text()));
        Td {
            title,
            ..Td::num(value, |_| cell.reference_ratio_text(row))
        }
    }
}

#[derive(Serialize)]
pub struct HeadlineRow {
    pub index: usize,
    pub label: String,
    pub cells: Vec<Td>,
}

#[derive(Serialize)]
pub struct CostRow {
    pub client: String,
    pub kind: &'static str,
    pub colour: &'static str,
    /// The row's flags, `; `-joined (empty: none).
    pub flags: String,
    /// Why the row has no throughput, for the note under the table (empty: it has one).
    pub reason: String,
    /// What the row is, for a note under the table (empty: nothing to add).
    pub about: &'static str,
    pub cells: Vec<Td>,
}

/// A row of the depth table (`series`: backend/transport) or of a callers table.
#[derive(Serialize)]
pub struct SeriesRow {
    pub client: String,
    pub kind: &'static str,
    pub series: String,
    pub cells: Vec<Td>,
}

/// The headline's row of the `index`-th cell: its leaders, their ratios to the baseline tool,
/// and the A/A figure every verdict of the row was read against.
pub fn headline_row((index, cell): (usize, &Cell)) -> HeadlineRow {
    let mut cells = vec![
        Td::text(leader_names(&cell.leaders(None))),
        Td::num(cell.best(None).and_then(Row::ops), format::grouped),
    ];
    for kind in [Kind::HandWritten, Kind::Library] {
        let row = cell.best(Some(kind));
        cells.extend([
            Td::text(leader_names(&cell.leaders(Some(kind)))),
            Td::num(row.and_then(Row::ops), format::grouped),
            Td::baseline_ratio(cell, row),
        ]);
    }
    cells.extend([
        Td::num(cell.baseline.and_then(Row::ops), format::grouped),
        Td::num(
            cell.best(Some(Kind::HandWritten))
                .and_then(|r| cell.time_over_floor(r)),
            format::ratio,
        ),
        Td::text(match cell.reference {
            Some(reference) => format!("{} ({})", cell.aa_text(), reference.client),
            None => cell.aa_text(),
        }),
    ]);
    HeadlineRow {
        index,
        label: cell.label.clone(),
        cells,
    }
}

/// A client's costs in a cell. A row without a throughput shows its status word in the ops/s
/// column and its reason in a note under the table: a sentence in a cell would squeeze the
/// columns. A failed or unsupported row shows no other number (nothing was measured).
pub fn cost_row(cell: &Cell, row: &Row) -> CostRow {
    let measured = row.is_ok();
    let num = |value: Option<f64>, f: fn(f64) -> String| Td::num(value.filter(|_| measured), f);
    let reason = row.unmeasured_reason();
    let ops = match &reason {
        None => num(row.ops(), format::grouped),
        Some(why) => Td {
            class: if status_class(row) == "failed" {
                "num failed"
            } else {
                "num unsupported"
            },
            v: Some(String::new()),
            title: Some(why.clone()),
            text: status_word(row).to_string(),
        },
    };
    let interval = row.ops_interval().filter(|_| measured);
    let latency = row.latency_ns.filter(|_| measured);
    let text = |value: String| Td::text(if measured { value } else { "–".to_string() });
    let cells = vec![
        ops,
        Td::num(interval.map(|(low, _)| low), |low| {
            let high = interval.map_or(low, |(_, high)| high);
            format!("{} – {}", format::short(low), format::short(high))
        }),
        text(row.measured_text()),
        num(row.spread, kvbench_results::verdict::percent),
        Td::reference_ratio(cell, row),
        Td::text(cell.reference_verdict(row)),
        match measured {
            true => Td::fastest_ratio(cell, row),
            false => Td::num(None, format::ratio),
        },
        Td::baseline_ratio(cell, Some(row).filter(|_| measured)),
        num(cell.time_over_floor(row), format::ratio),
        num(row.cpu_ns_per_op, format::duration_ns),
        num(row.user_ns_per_op, format::duration_ns),
        num(row.sys_ns_per_op, format::duration_ns),
        Td::instructions(row, measured),
        num(row.syscalls_per_op, |v| format::significant(v, 3)),
        num(row.bytes_read_per_op, format::bytes),
        num(row.bytes_written_per_op, format::bytes),
        num(row.allocs_per_op, |v| format::significant(v, 3)),
        num(row.alloc_bytes_per_op, format::bytes),
        num(latency.map(|l| l.p50 as f64), format::duration_ns),
        num(latency.map(|l| l.p99 as f64), format::duration_ns),
        num(
            latency.and_then(|l| l.p999).map(|v| v as f64),
            format::duration_ns,
        ),
    ];
    CostRow {
        client: row.client.clone(),
        kind: row.kind.as_str(),
        colour: svg::kind_colour(row.kind),
        flags: row.flags.join("; "),
        reason: reason.map_or(String::new(), |why| format!("{}: {why}", status_word(row))),
        about: model::floor_note(row),
        cells,
    }
}

/// The depth chart's numbers: a row per client and series that has any.
pub fn depth_rows(depth: &DepthChart) -> Vec<SeriesRow> {
    let mut rows = Vec::new();
    for client in &depth.clients {
        for series in &depth.series {
            let found: Vec<Option<&Row>> = (depth.depths.iter())
                .map(|d| client.rows.get(&(series.clone(), *d)).copied())
                .collect();
            if found.iter().any(Option::is_some) {
                rows.push(SeriesRow {
                    client: client.client.clone(),
                    kind: client.kind.as_str(),
                    series: series.clone(),
                    cells: found.into_iter().map(ops_td).collect(),
                });
            }
        }
    }
    rows
}

/// A callers panel's numbers, a row per line: the client's model and connections at the most
/// callers it was measured with, then its ops/s at each of `levels`.
pub fn callers_rows(levels: &BTreeSet<u32>, panel: &CallersPanel) -> Vec<SeriesRow> {
    (panel.lines.iter())
        .map(|line| {
            let most = line.rows.values().rev().find(|row| row.ops().is_some());
            let mut cells = vec![
                Td::text(most.map_or("–".to_string(), |row| row.model.to_string())),
                Td::num(most.map(|row| f64::from(row.connections)), format::grouped),
            ];
            cells.extend(levels.iter().map(|c| ops_td(line.rows.get(c).copied())));
            SeriesRow {
                client: line.client.to_string(),
                kind: line.kind.as_str(),
                series: format!("{}/{}", panel.backend, panel.transport),
                cells,
            }
        })
        .collect()
}

/// A row's throughput, else its status word (the reason as tooltip); `–` without a row.
fn ops_td(row: Option<&Row>) -> Td {
    match row {
        Some(row) if row.ops().is_some() => Td::num(row.ops(), format::grouped),
        Some(row) => Td {
            class: status_class(row),
            v: Some(String::new()),
            title: row.unmeasured_reason(),
            text: status_word(row).to_string(),
        },
        None => Td::num(None, format::grouped),
    }
}

/// An open-loop cell's table: a row per client, its p99 at each offered rate (saturated: the
/// rate it achieved instead), then the highest rate at which its p99 stayed at or below 1 ms,
/// and the highest it kept up with at any p99.
pub fn open_rows(cell: &OpenCell) -> Vec<SeriesRow> {
    (cell.lines.iter())
        .map(|line| {
            let mut cells: Vec<Td> = (cell.rates.iter())
                .map(|rate| open_td(line.rows.get(rate).copied()))
                .collect();
            let within = line.highest_within(OPEN_P99_NS);
            cells.push(Td::num(within.map(|r| r as f64), format::grouped));
            let kept_up = line.highest_kept_up();
            cells.push(Td::num(kept_up.map(|r| r as f64), format::grouped));
            SeriesRow {
                client: line.client.to_string(),
                kind: line.kind.as_str(),
                series: cell.label.clone(),
                cells,
            }
        })
        .collect()
}

/// Every (client, rate) of an open-loop cell with all it measured: offered and achieved rates,
/// p50, p99 (and the range of the repeats' p99s), p99.9, the maximum and the generator's floor
/// (its p50 and p99).
pub fn open_detail_rows(cell: &OpenCell) -> Vec<SeriesRow> {
    let ms = |ns: u64| ns as f64;
    (cell.lines.iter())
        .flat_map(|line| line.rows.iter().map(move |(rate, row)| (line, *rate, *row)))
        .map(|(line, rate, row)| {
            let open = row.open_loop.filter(|_| row.is_ok());
            let latency = open.and_then(|o| o.latency_ns);
            let floor = open.and_then(|o| o.floor_ns);
            let status = match (open, &row.error) {
                (_, Some(error)) => Td {
                    title: Some(error.clone()),
                    ..Td::text(status_word(row))
                },
                (Some(o), _) if o.saturated => Td {
                    title: svg::open_saturation(row),
                    ..Td::text("saturated")
                },
                (Some(_), _) => Td::text("kept up"),
                (None, None) => Td::text("–"),
            };
            SeriesRow {
                client: line.client.to_string(),
                kind: line.kind.as_str(),
                series: cell.label.clone(),
                cells: vec![
                    Td::num(Some(rate as f64), format::grouped),
                    Td::num(open.and_then(|o| o.achieved_rate), format::grouped),
                    status,
                    Td::num(latency.map(|l| ms(l.p50)), format::duration_ns),
                    Td::num(latency.map(|l| ms(l.p99)), format::duration_ns),
                    p99_range_td(open.and_then(|o| o.p99_range_ns)),
                    Td::num(latency.map(|l| ms(l.p999)), format::duration_ns),
                    Td::num(latency.map(|l| ms(l.max)), format::duration_ns),
                    Td::num(floor.map(|f| ms(f.p50)), format::duration_ns),
                    Td::num(floor.map(|f| ms(f.p99)), format::duration_ns),
                ],
            }
        })
        .collect()
}

/// The lowest and highest of a row's repeats' p99s, sorted by the highest; `–` for one repeat.
fn p99_range_td(range: Option<kvbench_results::OpenRange>) -> Td {
    let td = Td::num(range.map(|r| r.highest as f64), format::duration_ns);
    match range {
        Some(r) => {
            let text = format!(
                "{} – {}",
                format::duration_ns(r.lowest as f64),
                format::duration_ns(r.highest as f64)
            );
            td.with_text(text)
        }
        None => td,
    }
}

/// An open-loop row's p99, or `saturated` with what it achieved, or its status.
fn open_td(row: Option<&Row>) -> Td {
    let Some(row) = row else {
        return Td::num(None, format::duration_ns);
    };
    match (model::open_p99(row), svg::open_saturation(row)) {
        (Some(p99), _) => Td::num(Some(p99 as f64), format::duration_ns),
        (None, Some(saturated)) => {
            let achieved = row.open_loop.and_then(|o| o.achieved_rate);
            Td {
                class: "saturated",
                v: Some(String::new()),
                text: achieved.map_or("saturated".to_string(), |a| {
                    format!("saturated ({}/s)", format::short(a))
                }),
                title: Some(saturated),
            }
        }
        (None, None) => Td {
            class: status_class(row),
            v: Some(String::new()),
            title: row.error.clone(),
            text: status_word(row).to_string(),
        },
    }
}
