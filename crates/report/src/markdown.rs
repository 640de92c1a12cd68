//! `summary.md`: the report's tables in Markdown, to paste into a README or a pull request.
//! `templates/summary.md` lays it out; every string is escaped here, with [`format::markdown`].

use std::path::Path;

use serde::Serialize;

use crate::format::{self, markdown as md};
use crate::model::{Model, backend_title, environment, run_id, status_word};
use crate::results::Results;
use crate::tables::{self, Td};
use crate::template;

/// Everything `templates/summary.md` shows, escaped.
#[derive(Serialize)]
struct Summary {
    title: String,
    mode: String,
    environment: Vec<[String; 2]>,
    headline: Vec<Vec<String>>,
    sections: Vec<SectionTables>,
    depths: Option<Vec<String>>,
    depth_rows: Vec<Vec<String>>,
    problems: Vec<Vec<String>>,
}

#[derive(Serialize)]
struct SectionTables {
    title: String,
    cells: Vec<CellTable>,
}

#[derive(Serialize)]
struct CellTable {
    title: String,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

/// Renders the summary.
pub fn summary(results: &Results, model: &Model, dir: &Path) -> String {
    let run = &results.run;
    let mut environment = environment(results);
    for (name, server) in [
        ("Redis", &run.servers.redis),
        ("memcached", &run.servers.memcached),
    ] {
        let external = if server.external { " (external)" } else { "" };
        environment.push((
            name,
            format!("{}{external} — {}", server.version, server.config),
        ));
    }
    environment.extend(run.known_defects.iter().map(|defect| {
        (
            "known defect",
            format!(
                "{} ({}): {} → {}",
                defect.client, defect.library, defect.input, defect.outcome
            ),
        )
    }));

    let texts = |cells: Vec<Td>| cells.into_iter().map(|c| md(&c.text)).collect::<Vec<_>>();
    let headline = model
        .cells()
        .enumerate()
        .map(|cell| {
            let row = tables::headline_row(cell);
            let mut line = vec![md(&row.label)];
            line.extend(texts(row.cells));
            line
        })
        .collect();
    let sections = model
        .sections
        .iter()
        .map(|section| SectionTables {
            title: format!("{} ({})", md(&section.title), md(section.op.as_str())),
            cells: section
                .variants
                .iter()
                .flat_map(|variant| &variant.cells)
                .map(|cell| {
                    let rows: Vec<_> = cell
                        .by_speed()
                        .into_iter()
                        .map(|row| tables::cost_row(cell, row))
                        .collect();
                    let notes = rows
                        .iter()
                        .flat_map(|row| [("⚑ ", &row.flags), ("", &row.reason)].map(|n| (row, n)))
                        .filter(|(_, (_, text))| !text.is_empty())
                        .map(|(row, (mark, text))| {
                            format!("{mark}{}: {}", md(&row.client), md(text))
                        })
                        .collect();
                    CellTable {
                        title: [
                            cell.label.as_str(),
                            backend_title(cell.backend),
                            crate::model::transport_title(cell.transport),
                        ]
                        .map(md)
                        .join(" · "),
                        rows: rows
                            .into_iter()
                            .map(|row| {
                                let flag = if row.flags.is_empty() { "" } else { " ⚑" };
                                let mut line = vec![md(&row.client) + flag, md(row.kind)];
                                line.extend(texts(row.cells));
                                line
                            })
                            .collect(),
                        notes,
                    }
                })
                .collect(),
        })
        .collect();
    let depth_rows = model.depth.as_ref().map_or_else(Vec::new, |depth| {
        tables::depth_rows(depth)
            .into_iter()
            .map(|row| {
                let mut line = vec![md(&row.client), md(row.kind), md(&row.series)];
                line.extend(texts(row.cells));
                line
            })
            .collect()
    });
    template::render(
        "summary.md",
        &Summary {
            title: md(&run_id(results, dir)),
            mode: run.mode.to_string(),
            environment: environment
                .into_iter()
                .map(|(name, value)| [name.to_string(), md(&value)])
                .collect(),
            headline,
            sections,
            depths: model
                .depth
                .as_ref()
                .map(|depth| depth.depths.iter().map(|d| format::depth(*d)).collect()),
            depth_rows,
            problems: model
                .problems
                .iter()
                .map(|(row, why)| {
                    [
                        &row.cell,
                        &row.client,
                        row.kind.as_str(),
                        status_word(row),
                        why,
                    ]
                    .map(md)
                    .to_vec()
                })
                .collect(),
        },
    )
}
