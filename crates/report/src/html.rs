//! The run's `index.html` and `summary.md`: `templates/report.html` and `templates/summary.md`
//! filled from one [`Page`] built here. Numbers are formatted in Rust ([`crate::format`]); the
//! templates escape every string (HTML automatically, Markdown with its `md` filter).

use std::path::Path;

use serde::Serialize;

use crate::check;
use crate::format;
use crate::model::{
    BASELINE_CLIENT, Cell, DepthChart, KINDS, Model, backend_title, status_class, status_word,
    transport_title,
};
use crate::results::Results;
use crate::svg::{self, Chart};
use crate::tables::{self, CostRow, DepthRow, HeadlineRow, cell_id};
use crate::{Section, template};

use crate::model::environment;
// The lessons read these through this module.
pub use crate::model::{noise_text, run_id};

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
    kinds: Vec<Swatch>,
    headline: Vec<HeadlineRow>,
    sections: Vec<SectionView>,
    problems: Vec<Problem<'a>>,
    environment: Vec<(&'static str, String)>,
    servers: [(&'static str, &'a kvbench_results::Server); 2],
    defects: &'a [kvbench_results::KnownDefect],
    criterion_index: Option<String>,
    rows: usize,
    lessons: Vec<Section>,
}

#[derive(Serialize)]
struct Swatch {
    kind: &'static str,
    colour: &'static str,
}

#[derive(Serialize)]
struct SectionView {
    id: String,
    title: String,
    op: &'static str,
    variants: Vec<VariantView>,
    depth: Option<DepthView>,
}

#[derive(Serialize)]
struct VariantView {
    title: String,
    figures: Vec<Figure>,
    tables: Vec<CostTable>,
}

#[derive(Serialize)]
struct Figure {
    id: String,
    label: String,
    backend: &'static str,
    transport: &'static str,
    link: Option<String>,
    chart: Chart,
}

#[derive(Serialize)]
struct CostTable {
    id: String,
    label: String,
    rows: Vec<CostRow>,
}

#[derive(Serialize)]
struct DepthView {
    series: Vec<SeriesView>,
    depths: Vec<String>,
    figures: Vec<DepthFigure>,
    rows: Vec<DepthRow>,
}

#[derive(Serialize)]
struct SeriesView {
    name: String,
    colour: &'static str,
}

#[derive(Serialize)]
struct DepthFigure {
    client: String,
    kind: &'static str,
    chart: Chart,
}

#[derive(Serialize)]
struct Problem<'a> {
    cell: &'a str,
    client: &'a str,
    kind: &'static str,
    class: &'static str,
    status: &'a str,
    reason: &'a str,
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
    let mut sections = Vec::new();
    let mut cell_index = 0;
    for (index, section) in model.sections.iter().enumerate() {
        let mut variants = Vec::new();
        for variant in &section.variants {
            let ids = cell_index..cell_index + variant.cells.len();
            cell_index = ids.end;
            variants.push(VariantView {
                title: variant.title.clone(),
                figures: variant
                    .cells
                    .iter()
                    .zip(ids.clone())
                    .map(|(cell, i)| figure(cell, i, variant.scale_max))
                    .collect(),
                tables: variant
                    .cells
                    .iter()
                    .zip(ids)
                    .map(|(cell, i)| cost_table(cell, i))
                    .collect(),
            });
        }
        sections.push(SectionView {
            id: format!("op-{index}"),
            title: section.title.clone(),
            op: section.op.as_str(),
            variants,
            depth: model
                .depth
                .as_ref()
                .filter(|_| section.op == crate::results::Op::PipelineSet)
                .map(depth_view),
        });
    }
    let page = Page {
        title: run_id(results, dir),
        summary: [
            format!("mode {}", run.mode),
            format!("started {}", run.started_at),
            format!("git {}", run.git_sha.chars().take(12).collect::<String>()),
            format!("placement {}", run.placement.mode),
            run.cpu_model.clone(),
        ]
        .join(" · "),
        mode: run.mode.to_string(),
        charts: model.cells().count() + model.depth.as_ref().map_or(0, |d| d.clients.len()),
        baseline: BASELINE_CLIENT,
        kinds: KINDS
            .iter()
            .map(|kind| Swatch {
                kind: kind.as_str(),
                colour: svg::kind_colour(*kind),
            })
            .collect(),
        headline: model
            .cells()
            .enumerate()
            .map(tables::headline_row)
            .collect(),
        sections,
        problems: model
            .problems
            .iter()
            .map(|(row, why)| Problem {
                cell: &row.cell,
                client: &row.client,
                kind: row.kind.as_str(),
                class: status_class(row),
                status: status_word(row),
                reason: why,
            })
            .collect(),
        environment: environment(results),
        servers: [
            ("Redis", &run.servers.redis),
            ("memcached", &run.servers.memcached),
        ],
        defects: &run.known_defects,
        criterion_index: check::existing_inside(dir, CRITERION_INDEX)
            .then(|| format::url_path(CRITERION_INDEX)),
        rows: results.rows.len(),
        lessons: lessons
            .iter()
            .map(|lesson| Section {
                id: lesson_id(&lesson.id),
                ..lesson.clone()
            })
            .collect(),
    };
    (
        template::render("report.html", &page),
        template::render("summary.md", &page),
    )
}

/// `lesson-` and the id reduced to `[A-Za-z0-9-]`.
fn lesson_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("lesson-{clean}")
}

fn figure(cell: &Cell, index: usize, scale_max: f64) -> Figure {
    Figure {
        id: cell_id(index),
        label: cell.label.clone(),
        backend: backend_title(cell.backend),
        transport: transport_title(cell.transport),
        link: cell.criterion_link.as_deref().map(format::url_path),
        chart: svg::cell_chart(cell, scale_max),
    }
}

fn cost_table(cell: &Cell, index: usize) -> CostTable {
    CostTable {
        id: format!("table-{index}"),
        label: cell.label.clone(),
        rows: cell
            .by_speed()
            .into_iter()
            .map(|row| tables::cost_row(cell, row))
            .collect(),
    }
}

fn depth_view(depth: &DepthChart) -> DepthView {
    let rows = tables::depth_rows(depth);
    DepthView {
        series: depth
            .series
            .iter()
            .enumerate()
            .map(|(index, name)| SeriesView {
                name: name.clone(),
                colour: svg::series_colour(name, index),
            })
            .collect(),
        depths: depth.depths.iter().map(|d| format::depth(*d)).collect(),
        figures: depth
            .clients
            .iter()
            .map(|client| DepthFigure {
                client: client.client.clone(),
                kind: client.kind.as_str(),
                chart: svg::depth_chart(depth, client),
            })
            .collect(),
        rows,
    }
}
