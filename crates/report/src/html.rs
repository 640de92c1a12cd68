//! The run's `index.html` and `summary.md`: `templates/report.html` and `templates/summary.md`
//! filled from one [`Page`] built here. Numbers are formatted in Rust ([`crate::format`]); the
//! templates escape every string (HTML automatically, Markdown with its `md` filter).

use std::path::Path;

use serde::Serialize;

use crate::check;
use crate::format;
use crate::model::{self, Callers, Cell, DepthChart, KINDS, Model, OpenCell};
use crate::paired;
use crate::results::{Op, Results, Row, Run};
use crate::svg::{self, Chart, LineChart, RatioChart};
use crate::tables::{self, CostRow, HeadlineRow, SeriesRow};
use crate::{Section, template};

/// Criterion's own summary of every group, linked from the environment section when present.
const CRITERION_INDEX: &str = "criterion/report/index.html";

/// Everything `templates/report.html` shows.
#[derive(Serialize)]
struct Page<'a> {
    title: String,
    summary: String,
    mode: String,
    charts: usize,
    baseline: &'static str,
    /// (kind, colour) in legend order.
    kinds: Vec<(&'static str, &'static str)>,
    headline: Vec<HeadlineRow>,
    /// What the network floor is, when a server is on another host (empty: none is).
    network_floor: String,
    /// The run's A/A check, in a sentence.
    aa: String,
    /// The open-loop cells, first after the headline: the picture a reader should see first.
    open: Vec<OpenView>,
    sections: Vec<SectionView>,
    problems: Vec<Problem<'a>>,
    environment: Vec<(&'static str, String)>,
    servers: Vec<(&'static str, kvbench_results::Server)>,
    defects: &'a [kvbench_results::KnownDefect],
    criterion_index: Option<String>,
    rows: usize,
    lessons: Vec<Section>,
}

#[derive(Serialize)]
struct SectionView {
    index: usize,
    title: &'static str,
    op: &'static str,
    /// What a cell of many items per call counts (empty for single operations).
    per_item: &'static str,
    variants: Vec<VariantView>,
    callers: Vec<CallersView>,
    depth: Option<DepthView>,
}

/// An open-loop cell (`open-<index>`): p99 against the offered rate, its table beside it, and
/// every (client, rate) in a table of its own.
#[derive(Serialize)]
struct OpenView {
    index: usize,
    label: String,
    backend: &'static str,
    transport: &'static str,
    /// The offered rates, for the table's columns.
    rates: Vec<String>,
    chart: LineChart,
    rows: Vec<SeriesRow>,
    detail: Vec<SeriesRow>,
}

#[derive(Serialize)]
struct VariantView {
    title: String,
    cells: Vec<CellView>,
}

/// A cell's chart (`cell-<index>`) and its cost table (`table-<index>`).
#[derive(Serialize)]
struct CellView {
    index: usize,
    label: String,
    backend: &'static str,
    transport: &'static str,
    link: Option<String>,
    chart: Chart,
    /// Each row's paired ratio to the cell's reference (none without paired rounds).
    ratios: Option<RatioChart>,
    /// Each row's counted instructions per operation (none where nothing was counted).
    work: Option<Chart>,
    /// What the instructions and CPU columns are, and why a count is missing, for a note above
    /// its table.
    counted: String,
    /// How the cell was timed and its A/A figure, for a note above its table.
    paired: String,
    rows: Vec<CostRow>,
}

/// One size's callers figures (`callers-<index>-<panel>`); `levels` are the tables' columns.
#[derive(Serialize)]
struct CallersView {
    index: usize,
    title: String,
    levels: Vec<u32>,
    figures: Vec<CallersFigure>,
}

/// A backend and transport: the ops/s and p99 charts side by side, and their lines' numbers
/// (also the legend).
#[derive(Serialize)]
struct CallersFigure {
    backend: &'static str,
    transport: &'static str,
    charts: [LineChart; 2],
    rows: Vec<SeriesRow>,
}

#[derive(Serialize)]
struct DepthView {
    /// (name, colour) of each backend/transport series.
    series: Vec<(String, &'static str)>,
    depths: Vec<String>,
    figures: Vec<DepthFigure>,
    rows: Vec<SeriesRow>,
}

#[derive(Serialize)]
struct DepthFigure {
    client: String,
    kind: &'static str,
    chart: Chart,
}

#[derive(Serialize)]
struct Problem<'a> {
    row: &'a Row,
    class: &'static str,
    status: &'a str,
    reason: &'a str,
}

/// Display name of an operation, backend or transport.
fn title(name: &str) -> &str {
    match name {
        "get" => "GET (hit)",
        "get_miss" => "GET (miss)",
        "set" => "SET",
        "set_ex" => "SET with expiry",
        "pipeline_set" => "Pipelined SET",
        "incr" => "INCR",
        "get_many" => "Many keys, one command (MGET, multi-get)",
        "get_many_pipelined" => "Many keys, pipelined GETs",
        "hash" => "Hash: HSET of many fields, then HGETALL",
        "transaction_plain" => "SETs one by one",
        "transaction_multi" => "SETs in MULTI … EXEC",
        "transaction_pipeline" => "SETs pipelined (set_many)",
        "pipeline_set_distinct" => "Pipelined SET of distinct keys",
        "redis" => "Redis",
        "tcp" => "TCP",
        "unix" => "Unix socket",
        other => other,
    }
}

/// How the cells of an operation with many items per call count, so that the ways of doing the
/// same work (one command, pipelined commands, a transaction) compare per item.
fn per_item(op: Op) -> &'static str {
    match op {
        Op::GetMany | Op::GetManyPipelined => {
            "A call reads as many keys as the cell names; ops/s, the costs and the ratios count \
             keys (the two ways of reading many keys compare key for key)."
        }
        Op::Hash => {
            "A call is one HSET of the cell's fields and one HGETALL of them; ops/s, the costs \
             and the ratios count fields."
        }
        Op::TransactionPlain | Op::TransactionMulti | Op::TransactionPipeline => {
            "A call writes as many SETs as the cell names; ops/s, the costs and the ratios count \
             SETs (the three ways compare SET for SET)."
        }
        Op::PipelineSetDistinct => {
            "A call writes as many distinct keys as the cell names, each its own value: the Redis \
             Cluster's pipelined SET on one server; ops/s and the costs count SETs."
        }
        Op::Get | Op::GetMiss | Op::Set | Op::SetEx | Op::PipelineSet | Op::Incr => "",
    }
}

/// Renders `(index.html, summary.md)`, both from one [`Page`]. `dir` is the run folder (links
/// are emitted only to files inside it).
pub fn render(
    results: &Results,
    model: &Model,
    dir: &Path,
    lessons: &[Section],
) -> (String, String) {
    let run = &results.run;
    let mut cells = (0..).zip(model.cells());
    let sections = (0..)
        .zip(&model.sections)
        .map(|(index, section)| SectionView {
            index,
            title: title(section.op.as_str()),
            op: section.op.as_str(),
            per_item: per_item(section.op),
            variants: (section.variants.iter())
                .map(|variant| {
                    let work_max = svg::work_scale(variant.cells.iter().flat_map(|c| &c.rows));
                    let scales = (variant.scale_max, work_max);
                    VariantView {
                        title: variant.title.clone(),
                        cells: (cells.by_ref().take(variant.cells.len()))
                            .map(|(index, cell)| cell_view(index, cell, scales, run))
                            .collect(),
                    }
                })
                .collect(),
            callers: ((0..).zip(&model.callers))
                .filter(|(_, c)| c.op == section.op)
                .map(callers_view)
                .collect(),
            depth: (model.depth.as_ref())
                .filter(|_| section.op == Op::PipelineSet)
                .map(depth_view),
        });
    let page = Page {
        title: model::run_id(results, dir),
        summary: [
            format!("mode {}", run.mode),
            format!("started {}", run.started_at),
            format!("git {}", run.git_sha.chars().take(12).collect::<String>()),
            format!("placement {}", run.placement.mode),
            run.cpu_model.clone(),
        ]
        .join(" · "),
        mode: run.mode.to_string(),
        charts: model.cells().count()
            + model.open.len()
            + model.depth.as_ref().map_or(0, |d| d.clients.len())
            + model.callers.iter().map(|c| c.panels.len()).sum::<usize>(),
        baseline: "baseline tool",
        kinds: (KINDS.iter())
            .map(|kind| (kind.as_str(), svg::kind_colour(*kind)))
            .collect(),
        headline: (0..).zip(model.cells()).map(tables::headline_row).collect(),
        network_floor: model::network_floor_words(results),
        aa: paired::aa_summary_text(results),
        open: (0..).zip(&model.open).map(open_view).collect(),
        sections: sections.collect(),
        problems: (model.problems.iter())
            .map(|(row, why)| Problem {
                row,
                class: model::status_class(row),
                status: model::status_word(row),
                reason: why,
            })
            .collect(),
        environment: model::environment(results),
        servers: servers(&run.servers),
        defects: &run.known_defects,
        criterion_index: check::existing_inside(dir, CRITERION_INDEX)
            .then(|| format::url_path(CRITERION_INDEX)),
        rows: results.rows.len(),
        lessons: (lessons.iter())
            .map(|lesson| Section {
                id: format!("lesson-{}", format::safe_name(&lesson.id, "-", '-')),
                ..lesson.clone()
            })
            .collect(),
    };
    (
        template::render("report.html", &page),
        template::render("summary.md", &page),
    )
}

/// The run's servers for the environment table: the Redis Cluster's row also says how it was
/// joined and which slots each node served.
fn servers(servers: &kvbench_results::Servers) -> Vec<(&'static str, kvbench_results::Server)> {
    let mut rows = vec![
        ("Redis", servers.redis.clone()),
        ("memcached", servers.memcached.clone()),
    ];
    if let Some(cluster) = &servers.redis_cluster {
        let slots = (cluster.nodes.iter())
            .map(|node| format!("{} slots {}", node.addr, node.slots.join(",")))
            .collect::<Vec<_>>()
            .join("; ");
        let created = (cluster.create_command.as_deref())
            .map(|command| format!(" ; joined by {command}"))
            .unwrap_or_default();
        let config = format!("{}{created} ; {slots}", cluster.server.config);
        rows.push((
            "Redis Cluster",
            kvbench_results::Server {
                config,
                ..cluster.server.clone()
            },
        ));
    }
    rows
}

/// `scales`: the variant's shared axes, ops/s and instructions per operation.
fn cell_view(index: usize, cell: &Cell, scales: (f64, f64), run: &Run) -> CellView {
    let first = cell.rows[0];
    CellView {
        index,
        label: cell.label.clone(),
        backend: title(first.backend.as_str()),
        transport: title(first.transport.as_str()),
        link: cell.criterion_link.as_deref().map(format::url_path),
        chart: svg::cell_chart(cell, scales.0),
        ratios: svg::ratio_chart(cell),
        work: svg::work_chart(cell, scales.1),
        counted: counted_note(cell, run),
        paired: cell.aa_note(),
        rows: (cell.by_speed().into_iter())
            .map(|row| tables::cost_row(cell, row))
            .collect(),
    }
}

fn open_view((index, cell): (usize, &OpenCell)) -> OpenView {
    OpenView {
        index,
        label: cell.label.clone(),
        backend: title(cell.backend.as_str()),
        transport: title(cell.transport.as_str()),
        rates: (cell.rates.iter())
            .map(|&r| format::grouped(r as f64))
            .collect(),
        chart: svg::open_chart(cell),
        rows: tables::open_rows(cell),
        detail: tables::open_detail_rows(cell),
    }
}

fn callers_view((index, callers): (usize, &Callers)) -> CallersView {
    let levels = &callers.levels;
    CallersView {
        index,
        title: format::size(callers.value_size),
        levels: levels.iter().copied().collect(),
        figures: (callers.panels.iter())
            .map(|panel| CallersFigure {
                backend: title(panel.backend.as_str()),
                transport: title(panel.transport.as_str()),
                charts: svg::callers_charts(levels, panel),
                rows: tables::callers_rows(levels, panel),
            })
            .collect(),
    }
}

fn depth_view(depth: &DepthChart) -> DepthView {
    DepthView {
        series: (depth.series.iter().enumerate())
            .map(|(index, name)| (name.clone(), svg::series_colour(name, index)))
            .collect(),
        depths: depth.depths.iter().map(|d| format::depth(*d)).collect(),
        figures: (depth.clients.iter())
            .map(|client| DepthFigure {
                client: client.client.clone(),
                kind: client.kind.as_str(),
                chart: svg::depth_chart(depth, client),
            })
            .collect(),
        rows: tables::depth_rows(depth),
    }
}

/// The note above a cost table on its two measures of the client's own cost: instructions/op,
/// counted (or why not, in this run or this cell), and the CPU columns, tick-sampled.
fn counted_note(cell: &Cell, run: &Run) -> String {
    let cpu = "The CPU columns are getrusage's process time, split into user and system by the \
               kernel's timer ticks: context, not a verdict on the client's own work.";
    let counted = (cell.rows.iter()).any(|r| r.is_ok() && r.instructions_per_op.is_some());
    let instructions = match (&run.valgrind, counted) {
        (Some(valgrind), true) => format!(
            "Instructions/op: the user-space instructions the client's process ran per \
             operation, counted under {valgrind} (the kernel and the server not counted), with \
             the spread of the counted phases where it exceeds 0.1 %; hover for the split by \
             owner."
        ),
        (None, true) => "Instructions/op: the user-space instructions the client's process ran \
                         per operation, counted under valgrind."
            .to_string(),
        (Some(_), false) => "Instructions/op: not counted in this cell.".to_string(),
        (None, false) => "Instructions/op: not counted in this run (no valgrind count: the \
                          run's notes say why)."
            .to_string(),
    };
    format!("{instructions} {cpu}")
}
