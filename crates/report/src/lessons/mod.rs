//! Lessons: one short explanation per trade-off the suite measures, with the numbers of a run.
//!
//! The prose of each lesson (question, set-up, what the faster side gives up, which code causes
//! the difference) lives once, in [`catalogue`]. Numbers come only from a run's results.json:
//! a row is found by (backend, op, value size, depth, transport, client), and a row the run does
//! not have is shown as "not measured in this run" (a failed or unsupported row as its status and
//! reason), never filled in. Ratios are computed from the numbers shown.
//!
//! Rendered three ways from one model:
//! - the Lessons section of every run's `index.html` (through [`crate::render_run`]);
//! - `make lessons RUN=<id>` ([`generate`]): `reports/<id>/lessons.md`, the generated blocks of
//!   `docs/lessons.md`, the "Measured" block of each client crate's README and the headline block
//!   of the top-level README (see [`markers`] for the block format), then `index.html` again.
//!
//! Code references are (file, anchor) pairs resolved to line numbers at generation time
//! ([`source`]); `make lessons` fails if an anchor no longer exists, the report only omits the link.

pub mod catalogue;
pub mod markers;
pub mod source;

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::format::{self, html as esc};
use crate::results::{Backend, Kind, Op, Results, Row, Transport};
use crate::{Section, model};
use catalogue::{CRATES, LESSONS, Lesson, MAIN_CELLS, Pick, Table, Which};
use kvbench_results::verdict;
use source::{CodeRef, Resolved};

/// Name of a run's lessons page inside its folder.
pub const LESSONS_FILE: &str = "lessons.md";
/// Folder inside a run folder where a split-placement run is found by default.
pub const SPLIT_DIR: &str = "split";
/// The hand-written page whose generated blocks `make lessons` rewrites.
pub const DOCS_FILE: &str = "docs/lessons.md";
/// Block name of the headline in the top-level README.
pub const HEADLINE_BLOCK: &str = "headline";
/// Block name of the table in each client crate's README.
pub const MEASURED_BLOCK: &str = "measured";

/// Everything that can go wrong generating the lessons.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A run's results could not be read.
    #[error(transparent)]
    Results(#[from] crate::Error),
    /// A run's results file is not of this schema.
    #[error(transparent)]
    Schema(#[from] kvbench_results::Error),
    /// No source tree (a folder with a workspace `Cargo.toml` and `crates/`) around the run.
    #[error("no kvbench source tree found around {}: pass --root", start.display())]
    NoSourceTree {
        /// Where the search started.
        start: PathBuf,
    },
    /// A referenced source file could not be read.
    #[error("cannot read source file {}: {source}", path.display())]
    Source {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A code anchor no longer matches the source.
    #[error("code anchor {anchor:?} not found in {path}")]
    Anchor {
        /// Path from the repository root.
        path: String,
        /// The anchor (the chain, joined).
        anchor: String,
    },
    /// A document's generated block has a marker problem.
    #[error("{}: block lessons:{name}: {problem}", path.display())]
    Marker {
        /// The document.
        path: PathBuf,
        /// The block.
        name: String,
        /// What is wrong.
        problem: markers::MarkerProblem,
    },
    /// A document could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// A run the lessons read, and how documents name its results file.
pub struct RunRef<'a> {
    /// Its results.
    pub results: &'a Results,
    /// Run id (from results.json, else the folder name).
    pub id: String,
    /// How a document names the file, e.g. `reports/reference/results.json`.
    pub source: String,
}

impl<'a> RunRef<'a> {
    /// `results` as read from `dir`, named `source` in documents.
    pub fn new(results: &'a Results, dir: &Path, source: String) -> RunRef<'a> {
        RunRef {
            id: crate::html::run_id(results, dir),
            results,
            source,
        }
    }

    /// `same-core, servers on CPU 1, bench on CPU 1`.
    fn placement(&self) -> String {
        let p = &self.results.run.placement;
        let cpu = |cpu: Option<u32>| cpu.map_or("any".to_string(), |c| c.to_string());
        format!(
            "{}, servers on CPU {}, bench on CPU {}",
            p.mode,
            cpu(p.server_cpu),
            cpu(p.client_cpu)
        )
    }

    fn placement_mode(&self) -> Option<&str> {
        Some(self.results.run.placement.mode.as_str())
    }

    /// `run `<id>` (mode full; placement same-core (…)), `<source>``.
    fn describe(&self) -> Vec<Span> {
        vec![
            Span::Prose("run ".into()),
            Span::Code(self.id.clone()),
            Span::Text(format!(
                " (mode {}; placement {}), from ",
                self.results.run.mode,
                self.placement()
            )),
            Span::Code(self.source.clone()),
        ]
    }
}

/// Where code links point: the repository root and the relative prefix from the document to it.
pub struct Code {
    /// Resolved references per lesson (same order as the catalogue); `None` where an anchor did
    /// not resolve or no source tree was found.
    resolved: Vec<Vec<Option<Resolved>>>,
}

impl Code {
    /// Resolves every lesson's references under `root`: the first failure is an error.
    pub fn strict(root: &Path) -> Result<Code, Error> {
        let resolved = LESSONS
            .iter()
            .map(|lesson| {
                lesson
                    .code
                    .iter()
                    .map(|code| source::resolve(root, code).map(Some))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Code { resolved })
    }

    /// Resolves what it can; a reference that does not resolve is shown without lines.
    pub fn lenient(root: Option<&Path>) -> Code {
        Code {
            resolved: LESSONS
                .iter()
                .map(|lesson| {
                    lesson
                        .code
                        .iter()
                        .map(|code| root.and_then(|root| source::resolve(root, code).ok()))
                        .collect()
                })
                .collect(),
        }
    }
}

/// Inline content. `Prose` is ours (trusted, `code` spans allowed); `Text` may come from
/// results.json and is always escaped.
#[derive(Debug, Clone, PartialEq)]
enum Span {
    Prose(String),
    /// Prose in bold.
    Bold(String),
    Text(String),
    Code(String),
    /// A link to source lines: `path` shown as code, then `lines`.
    Link {
        shown: String,
        lines: String,
        path: String,
        fragment: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Heading {
        id: String,
        text: String,
    },
    Para(Vec<Span>),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<Vec<Span>>>,
    },
    List(Vec<Vec<Span>>),
}

/// A row as a lesson sees it.
enum Lookup<'a> {
    Found(&'a Row),
    Missing,
    NoRun,
}

impl Lookup<'_> {
    fn ops(&self) -> Option<f64> {
        match self {
            Lookup::Found(row) => row.ops(),
            _ => None,
        }
    }
}

fn find<'a>(results: &'a Results, pick: &Pick) -> Option<&'a Row> {
    results.rows.iter().find(|row| {
        row.backend.as_str() == pick.backend
            && row.op.as_str() == pick.op
            && row.value_size == pick.size
            && row.pipeline == pick.pipeline
            && row.transport.as_str() == pick.transport
            && row.concurrency == 1
            && row.client == pick.client
    })
}

/// The bench's name for a pick's cell (`redis/get/3B/tcp`, `redis/pipeline_set/100000/tcp`).
fn cell_name(backend: &str, op: &str, size: Option<u64>, pipeline: u64, transport: &str) -> String {
    let middle = match (op, size) {
        ("pipeline_set", _) => pipeline.to_string(),
        ("get_miss", _) | (_, None) => "none".to_string(),
        (_, Some(size)) => format::size_token(size),
    };
    format!("{backend}/{op}/{middle}/{transport}")
}

/// Why a row shows no throughput, for its table cell.
fn status_text(lookup: &Lookup) -> Option<String> {
    match lookup {
        Lookup::Missing => Some("not measured in this run".to_string()),
        Lookup::NoRun => Some("no split run given".to_string()),
        Lookup::Found(row) if row.ops().is_some() => None,
        Lookup::Found(row) => Some(match row.unmeasured_reason() {
            Some(why) if !row.is_ok() => format!("{}: {why}", crate::svg::status_word(row)),
            _ => "not timed".to_string(),
        }),
    }
}

/// The metric cells shared by every table: CPU/op (user + sys), syscalls/op, allocs/op, p99.
fn cost_cells(row: Option<&Row>) -> Vec<Vec<Span>> {
    let ok = row.filter(|r| r.is_ok());
    let number =
        |value: Option<f64>, f: &dyn Fn(f64) -> String| vec![Span::Text(format::opt(value, f))];
    let cpu = match ok.map(|r| (r.cpu_ns_per_op, r.user_ns_per_op, r.sys_ns_per_op)) {
        Some((Some(cpu), Some(user), Some(sys))) => format!(
            "{} ({} + {})",
            format::duration_ns(cpu),
            format::duration_ns(user),
            format::duration_ns(sys)
        ),
        Some((cpu, _, _)) => format::opt(cpu, format::duration_ns),
        None => "–".to_string(),
    };
    vec![
        vec![Span::Text(cpu)],
        number(ok.and_then(|r| r.syscalls_per_op), &|v| {
            format::significant(v, 3)
        }),
        number(ok.and_then(|r| r.allocs_per_op), &|v| {
            format::significant(v, 3)
        }),
        number(
            ok.and_then(|r| r.latency_ns.map(|l| l.p99 as f64)),
            &format::duration_ns,
        ),
    ]
}

/// Header of the ratio column: throughput over the first row of the table that has one.
const RATIO_HEAD: &str = "× first measured row";

/// A ratio as the report writes it (`1.38×`), with two significant digits below 0.01
/// (`0.00041×`) so a collapse does not read as zero.
fn ratio_text(value: f64) -> String {
    if value.is_finite() && value > 0.0 && value < 0.01 {
        format!("{}×", format::significant(value, 2))
    } else {
        format::ratio(value)
    }
}

const COST_HEAD: [&str; 4] = ["CPU/op (user + sys)", "syscalls/op", "allocs/op", "p99"];

/// The two runs a lesson may read.
pub struct Runs<'a> {
    /// The run the lessons are generated from.
    pub main: RunRef<'a>,
    /// The split-placement run, if any.
    pub split: Option<RunRef<'a>>,
}

impl Runs<'_> {
    fn get(&self, which: Which) -> Option<&RunRef<'_>> {
        match which {
            Which::Main => Some(&self.main),
            Which::Split => self.split.as_ref(),
        }
    }

    fn lookup(&self, pick: &Pick) -> Lookup<'_> {
        match self.get(pick.run) {
            None => Lookup::NoRun,
            Some(run) => find(run.results, pick).map_or(Lookup::Missing, Lookup::Found),
        }
    }
}

fn table_blocks(table: &Table, runs: &Runs) -> Vec<Block> {
    let two_runs = table.rows.iter().any(|p| p.run == Which::Split);
    let found: Vec<Lookup> = table.rows.iter().map(|p| runs.lookup(p)).collect();
    let first = found.iter().find_map(Lookup::ops);
    let mut head: Vec<String> = Vec::new();
    if two_runs {
        head.push("run (placement)".into());
    }
    head.extend(["client", "cell", "ops/s", RATIO_HEAD].map(String::from));
    head.extend(COST_HEAD.map(String::from));
    let mut rows = Vec::new();
    for (pick, lookup) in table.rows.iter().zip(&found) {
        let mut cells = Vec::new();
        if two_runs {
            cells.push(vec![Span::Text(match runs.get(pick.run) {
                Some(run) => format!("{} ({})", run.id, run.placement_mode().unwrap_or("?")),
                None => "split: none given".to_string(),
            })]);
        }
        cells.push(vec![Span::Code(pick.client.to_string())]);
        let cell = match lookup {
            Lookup::Found(row) => row.cell.clone(),
            _ => cell_name(
                pick.backend,
                pick.op,
                Some(pick.size),
                pick.pipeline,
                pick.transport,
            ),
        };
        cells.push(vec![Span::Code(cell)]);
        match status_text(lookup) {
            Some(status) => cells.push(vec![Span::Text(status)]),
            None => cells.push(vec![Span::Text(format::opt(lookup.ops(), format::grouped))]),
        }
        let ratio = match (lookup.ops(), first) {
            (Some(ops), Some(first)) => Some(ops / first),
            _ => None,
        };
        cells.push(vec![Span::Text(format::opt(ratio, ratio_text))]);
        let row = match lookup {
            Lookup::Found(row) => Some(*row),
            _ => None,
        };
        cells.extend(cost_cells(row));
        rows.push(cells);
    }
    vec![
        Block::Para(vec![Span::Bold(table.title.to_string())]),
        Block::Table { head, rows },
        Block::Para(reading(table, &found, runs, two_runs)),
    ]
}

/// What a table with fewer than two measured rows says instead of a ratio.
const NO_RATIO: &str =
    "Fewer than two of these rows have a throughput in this run: no ratio to read.";

/// The computed sentence under a table: fastest against slowest measured row.
fn reading(table: &Table, found: &[Lookup], runs: &Runs, two_runs: bool) -> Vec<Span> {
    let measured: Vec<(&Pick, &Row, f64)> = table
        .rows
        .iter()
        .zip(found)
        .filter_map(|(pick, lookup)| match lookup {
            Lookup::Found(row) => Some((pick, *row, row.ops()?)),
            _ => None,
        })
        .collect();
    let fastest = measured.iter().max_by(|a, b| a.2.total_cmp(&b.2));
    let slowest = measured.iter().min_by(|a, b| a.2.total_cmp(&b.2));
    let (Some(fast), Some(slow), true) = (fastest, slowest, measured.len() >= 2) else {
        return vec![Span::Prose(NO_RATIO.into())];
    };
    let describe = |(pick, row, ops): &(&Pick, &Row, f64)| {
        let mut spans = vec![
            Span::Code(pick.client.to_string()),
            Span::Prose(" (".into()),
        ];
        spans.push(Span::Code(row.cell.clone()));
        if two_runs && let Some(run) = runs.get(pick.run) {
            spans.push(Span::Text(format!(
                ", {} placement",
                run.placement_mode().unwrap_or("unknown")
            )));
        }
        spans.push(Span::Text(format!(") at {} ops/s", format::grouped(*ops))));
        spans
    };
    let noise = |pick: &Pick| {
        runs.get(pick.run)
            .and_then(|run| run.results.noise())
            .map(|noise| noise.median_spread)
    };
    let judged = verdict::judge(fast.1, noise(fast.0), slow.1, noise(slow.0));
    if !judged.is_decided() {
        let why = match &judged.verdict {
            verdict::Verdict::Indistinguishable(why) | verdict::Verdict::Unknown(why) => {
                why.clone()
            }
            _ => String::new(),
        };
        let mut spans = vec![Span::Prose(
            "In this run, no faster side can be named: ".into(),
        )];
        spans.extend(describe(fast));
        spans.push(Span::Prose(" and ".into()));
        spans.extend(describe(slow));
        spans.push(Span::Text(format!(
            " are indistinguishable ({why}; measured ratio {}).",
            ratio_text(fast.2 / slow.2)
        )));
        return spans;
    }
    let mut spans = vec![Span::Prose("In this run, the fastest is ".into())];
    spans.extend(describe(fast));
    spans.push(Span::Prose(", the slowest ".into()));
    spans.extend(describe(slow));
    spans.push(Span::Text(format!(
        ": {} the throughput{}.",
        ratio_text(fast.2 / slow.2),
        judged.range.map_or(String::new(), |(low, high)| format!(
            " (range {}–{})",
            ratio_text(low),
            ratio_text(high)
        ))
    )));
    spans
}

fn code_item(code: &CodeRef, resolved: Option<&Resolved>, prefix: Option<&str>) -> Vec<Span> {
    let mut spans = match (resolved, prefix) {
        (Some(at), Some(prefix)) => vec![Span::Link {
            shown: code.path.to_string(),
            lines: at.lines_text(),
            path: format!("{prefix}{}", code.path),
            fragment: at.fragment(),
        }],
        (Some(at), None) => vec![
            Span::Code(code.path.to_string()),
            Span::Text(format!(" {}", at.lines_text())),
        ],
        (None, _) => vec![
            Span::Code(code.path.to_string()),
            Span::Text(" at ".into()),
            Span::Code(code.anchors.join(" … ")),
        ],
    };
    spans.push(Span::Prose(format!(": {}.", code.what)));
    spans
}

fn lesson_blocks(
    index: usize,
    lesson: &Lesson,
    runs: &Runs,
    resolved: &[Option<Resolved>],
    prefix: Option<&str>,
) -> Vec<Block> {
    let mut blocks = vec![
        Block::Heading {
            id: format!("lesson-{}", lesson.id),
            text: format!("{}. {}", index + 1, lesson.title),
        },
        Block::Para(vec![
            Span::Bold("Question.".into()),
            Span::Prose(format!(" {}", lesson.question)),
        ]),
        Block::Para(vec![Span::Prose(lesson.setup.to_string())]),
    ];
    let mut measured = vec![Span::Bold("Measured".into()), Span::Prose(" in ".into())];
    measured.extend(runs.main.describe());
    if lesson
        .tables
        .iter()
        .any(|t| t.rows.iter().any(|p| p.run == Which::Split))
    {
        match &runs.split {
            Some(split) => {
                measured.push(Span::Prose(", and split placement in ".into()));
                measured.extend(split.describe());
                measured.push(Span::Prose(".".into()));
                if runs.main.placement_mode() == split.placement_mode() {
                    measured.push(Span::Text(format!(
                        " Both runs record placement {}: these tables show run-to-run noise, \
                         not placement.",
                        split.placement_mode().unwrap_or("unknown")
                    )));
                }
            }
            None => {
                measured.push(Span::Prose(
                    ". No split-placement run was given, so the second row of each table is \
                     empty. Make one with `PLACEMENT=split make bench-quick`, then run \
                     `make lessons RUN=<this run> SPLIT_RUN=<that run>`; a run folder that holds \
                     `split/results.json` is used without being named."
                        .into(),
                ));
            }
        }
    } else {
        measured.push(Span::Prose(".".into()));
    }
    blocks.push(Block::Para(measured));
    for table in lesson.tables {
        blocks.extend(table_blocks(table, runs));
    }
    blocks.push(Block::Para(vec![
        Span::Bold("The code.".into()),
        Span::Prose(" The lines that make the difference:".into()),
    ]));
    blocks.push(Block::List(
        lesson
            .code
            .iter()
            .zip(resolved)
            .map(|(code, at)| code_item(code, at.as_ref(), prefix))
            .collect(),
    ));
    blocks.push(Block::Para(vec![
        Span::Bold("Given up for the faster side.".into()),
        Span::Prose(format!(" {}", lesson.gives_up)),
    ]));
    blocks
}

// --- Markdown ----------------------------------------------------------------------------------

fn md_spans(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Prose(text) => out.push_str(text),
            Span::Bold(text) => {
                let _ = write!(out, "**{text}**");
            }
            Span::Text(text) => out.push_str(&format::markdown(text)),
            Span::Code(text) => out.push_str(&md_code(text)),
            Span::Link {
                shown,
                lines,
                path,
                fragment,
            } => {
                let _ = write!(
                    out,
                    "[{} {lines}]({}{fragment})",
                    md_code(shown),
                    format::url_path(path)
                );
            }
        }
    }
    out
}

/// A code span; text holding a backtick or a line break is escaped as plain text instead.
fn md_code(text: &str) -> String {
    if text.contains(['`', '\n', '\r', '|']) {
        format::markdown(text)
    } else {
        format!("`{text}`")
    }
}

fn markdown(blocks: &[Block], heading: &str) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading { text, .. } => {
                let _ = writeln!(out, "{heading} {text}\n");
            }
            Block::Para(spans) => {
                let _ = writeln!(out, "{}\n", md_spans(spans));
            }
            Block::Table { head, rows } => {
                let _ = writeln!(out, "| {} |", head.join(" | "));
                let aligns: Vec<&str> = head
                    .iter()
                    .map(|h| if is_numeric(h) { "--:" } else { "---" })
                    .collect();
                let _ = writeln!(out, "|{}|", aligns.join("|"));
                for row in rows {
                    let cells: Vec<String> = row.iter().map(|c| md_spans(c)).collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
                out.push('\n');
            }
            Block::List(items) => {
                for item in items {
                    let _ = writeln!(out, "- {}", md_spans(item));
                }
                out.push('\n');
            }
        }
    }
    out
}

fn is_numeric(head: &str) -> bool {
    !matches!(head, "client" | "cell" | "run (placement)" | "")
}

// --- HTML --------------------------------------------------------------------------------------

/// Prose to HTML: escaped, `code` spans turned into elements.
fn prose_html(text: &str) -> String {
    let mut out = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", esc(part));
        } else {
            out.push_str(&esc(part));
        }
    }
    out
}

fn html_spans(spans: &[Span]) -> String {
    let mut out = String::new();
    for span in spans {
        match span {
            Span::Prose(text) => out.push_str(&prose_html(text)),
            Span::Bold(text) => {
                let _ = write!(out, "<strong>{}</strong>", prose_html(text));
            }
            Span::Text(text) => out.push_str(&esc(text)),
            Span::Code(text) => {
                let _ = write!(out, "<code>{}</code>", esc(text));
            }
            Span::Link {
                shown,
                lines,
                path,
                fragment,
            } => {
                let _ = write!(
                    out,
                    "<a class=\"{}\" href=\"{}{}\"><code>{}</code> {}</a>",
                    crate::check::SOURCE_LINK_CLASS,
                    esc(&format::url_path(path)),
                    esc(fragment),
                    esc(shown),
                    esc(lines)
                );
            }
        }
    }
    out
}

fn html(blocks: &[Block]) -> String {
    let mut out = String::new();
    let mut open = false;
    for block in blocks {
        match block {
            Block::Heading { id, text } => {
                if open {
                    out.push_str("</article>\n");
                }
                let _ = writeln!(
                    out,
                    "<article class=\"lesson-item\" id=\"{}\">\n<h3>{}</h3>",
                    esc(id),
                    esc(text)
                );
                open = true;
            }
            Block::Para(spans) => {
                let _ = writeln!(out, "<p>{}</p>", html_spans(spans));
            }
            Block::Table { head, rows } => {
                out.push_str("<div class=\"scroll\"><table class=\"lesson-table\">\n<thead><tr>");
                for h in head {
                    let _ = write!(out, "<th>{}</th>", esc(h));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr>");
                    for (h, cell) in head.iter().zip(row) {
                        let class = if is_numeric(h) { " class=\"num\"" } else { "" };
                        let _ = write!(out, "<td{class}>{}</td>", html_spans(cell));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody></table></div>\n");
            }
            Block::List(items) => {
                out.push_str("<ul>\n");
                for item in items {
                    let _ = writeln!(out, "<li>{}</li>", html_spans(item));
                }
                out.push_str("</ul>\n");
            }
        }
    }
    if open {
        out.push_str("</article>\n");
    }
    out
}

// --- Outputs -----------------------------------------------------------------------------------

/// Every lesson in Markdown, headings at `heading` (`##`); links relative to `prefix` (the path
/// from the document's folder to the repository root), or none.
pub fn lessons_markdown(
    runs: &Runs,
    code: &Code,
    heading: &str,
    prefix: Option<&str>,
) -> Vec<String> {
    LESSONS
        .iter()
        .enumerate()
        .map(|(index, lesson)| {
            markdown(
                &lesson_blocks(index, lesson, runs, &code.resolved[index], prefix),
                heading,
            )
        })
        .collect()
}

/// The Lessons section of a run's `index.html`.
pub fn section(runs: &Runs, code: &Code, prefix: Option<&str>) -> Section {
    let mut body = String::from(
        "<p>One short lesson per trade-off the suite measures, with this run's numbers (the same \
         text as <code>docs/lessons.md</code>, which <code>make lessons</code> fills from a \
         reference run). Each table's ratio is to its first measured row.",
    );
    if prefix.is_none() {
        body.push_str(
            " Code references name a file and an anchor: this folder is not inside a kvbench \
             checkout, so there are no line links.",
        );
    }
    body.push_str("</p>\n");
    for (index, lesson) in LESSONS.iter().enumerate() {
        body.push_str(&html(&lesson_blocks(
            index,
            lesson,
            runs,
            &code.resolved[index],
            prefix,
        )));
    }
    Section {
        id: "trade-offs".to_string(),
        title: "Lessons: the trade-offs, measured".to_string(),
        html: body,
    }
}

/// The section for `render_run`: this run, its `split/` run if it has one, code resolved in the
/// checkout around `dir` if there is one (no line links otherwise).
pub fn default_section(results: &Results, dir: &Path) -> Section {
    let split_dir = dir.join(SPLIT_DIR);
    let split = Results::load(&split_dir).ok();
    let root = source::find_root(dir);
    let prefix = root
        .as_deref()
        .and_then(|root| source::prefix_to_root(dir, root));
    let name = |d: &Path| match &root {
        Some(root) => relative_source(d, root),
        None => format!("{}", d.join(crate::results::RESULTS_FILE).display()),
    };
    let runs = Runs {
        main: RunRef::new(results, dir, name(dir)),
        split: split
            .as_ref()
            .map(|split| RunRef::new(split, &split_dir, name(&split_dir))),
    };
    section(&runs, &Code::lenient(root.as_deref()), prefix.as_deref())
}

/// `reports/<id>/results.json`: the results file of `dir` as seen from `root` (else as given).
fn relative_source(dir: &Path, root: &Path) -> String {
    let file = dir.join(crate::results::RESULTS_FILE);
    match (file.canonicalize(), root.canonicalize()) {
        (Ok(file), Ok(root)) => match file.strip_prefix(&root) {
            Ok(inside) => inside.display().to_string(),
            Err(_) => file.display().to_string(),
        },
        _ => file.display().to_string(),
    }
}

/// The table of one client crate's README: its clients' rows in the main cells.
pub fn measured_markdown(runs: &Runs, clients: &[&str]) -> String {
    let results = runs.main.results;
    let mut out = md_spans(&{
        let mut spans = vec![Span::Prose("Measured in ".into())];
        spans.extend(runs.main.describe());
        spans.push(Span::Prose(
            ". Every number below is that file's; `make lessons` rewrites them.".into(),
        ));
        spans
    });
    out.push_str(
        "\n\n| client | cell | ops/s | CPU/op (user + sys) | syscalls/op | allocs/op | p99 |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|--:|\n");
    let mut absent = Vec::new();
    for &(op, size, depth) in MAIN_CELLS {
        let mut rows: Vec<&Row> = results
            .rows
            .iter()
            .filter(|r| {
                r.op.as_str() == op
                    && size.is_none_or(|s| r.value_size == s)
                    && r.pipeline == depth
                    && r.concurrency == 1
                    && clients.contains(&r.client.as_str())
            })
            .collect();
        if rows.is_empty() {
            absent.push(main_cell_title(op, size, depth));
            continue;
        }
        rows.sort_by_key(|r| (r.transport, clients.iter().position(|c| *c == r.client)));
        for row in rows {
            let lookup = Lookup::Found(row);
            let mut cells = vec![
                vec![Span::Code(row.client.clone())],
                vec![Span::Code(row.cell.clone())],
                vec![Span::Text(
                    status_text(&lookup).unwrap_or_else(|| format::opt(row.ops(), format::grouped)),
                )],
            ];
            cells.extend(cost_cells(Some(row)));
            let cells: Vec<String> = cells.iter().map(|c| md_spans(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    if !absent.is_empty() {
        let _ = writeln!(out, "\nNot measured in this run: {}.", absent.join("; "));
    }
    out
}

fn main_cell_title(op: &str, size: Option<u64>, depth: u64) -> String {
    let mut title = match op {
        "get" => "GET (hit)",
        "get_miss" => "GET (miss)",
        "set" => "SET",
        "set_ex" => "SET with expiry",
        "pipeline_set" => "Pipelined SET",
        other => other,
    }
    .to_string();
    if depth > 1 {
        let _ = write!(title, ", depth {}", format::depth(depth));
    }
    if let (Some(size), false) = (size, op == "pipeline_set") {
        let _ = write!(title, " {}", format::size(size));
    }
    title
}

/// The headline block of the top-level README: Redis over TCP, GET 3 B and the deepest
/// pipelined SET of the run, for the best hand-written client, the libraries and the baselines.
pub fn headline_markdown(runs: &Runs) -> String {
    let results = runs.main.results;
    let depth = results
        .rows
        .iter()
        .filter(|r| {
            r.backend == Backend::Redis && r.transport == Transport::Tcp && r.op == Op::PipelineSet
        })
        .map(|r| r.pipeline)
        .max();
    let noise = results.noise().map(|n| n.median_spread);
    let cells: [(Op, u64, u64); 2] = [
        (Op::Get, 3, 1),
        (Op::PipelineSet, 3, depth.unwrap_or(1_000_000)),
    ];
    let in_cell = |(op, size, depth): (Op, u64, u64)| -> Vec<&Row> {
        results
            .rows
            .iter()
            .filter(|r| {
                r.backend == Backend::Redis
                    && r.transport == Transport::Tcp
                    && r.op == op
                    && r.value_size == size
                    && r.pipeline == depth
                    && r.concurrency == 1
            })
            .collect()
    };
    fn baseline<'r>(rows: &[&'r Row]) -> Option<&'r Row> {
        rows.iter()
            .copied()
            .find(|r| r.client == model::BASELINE_CLIENT && r.ops().is_some())
    }
    let mut out = md_spans(&{
        let mut spans = vec![Span::Prose("Redis over TCP, one connection, in ".into())];
        spans.extend(runs.main.describe());
        spans.push(Span::Prose(".".into()));
        spans
    });
    let _ = write!(
        out,
        "\n\n| client | GET 3 B, ops/s | × redis-benchmark | pipelined SET, depth {}, ops/s | × redis-benchmark |\n|---|--:|--:|--:|--:|\n",
        depth.map_or("1M".to_string(), format::depth)
    );
    let roles = [
        ("fastest hand-written", Role::BestHandWritten),
        ("`redis-rs` (sync)", Role::Client("redis-rs")),
        ("`redis-rs/async`", Role::Client("redis-rs/async")),
        ("`fred`", Role::Client("fred")),
        (
            "`redis-benchmark` (shipped with Redis; C)",
            Role::Client(model::BASELINE_CLIENT),
        ),
        ("loopback floor (the transport alone)", Role::Floor),
    ];
    let columns: Vec<Vec<&Row>> = cells.iter().map(|c| in_cell(*c)).collect();
    for (label, role) in roles {
        let _ = write!(out, "| {label} |");
        for (index, rows) in columns.iter().enumerate() {
            let chosen = if index == 1 && depth.is_none() {
                None
            } else {
                role.choose(rows)
            };
            let lookup = chosen.map_or(Lookup::Missing, Lookup::Found);
            let value = match status_text(&lookup) {
                Some(status) => format::markdown(&status),
                None => {
                    let ops = format::opt(lookup.ops(), format::grouped);
                    match (role, chosen) {
                        (Role::Client(_), _) | (_, None) => ops,
                        (Role::BestHandWritten, Some(best)) => {
                            // Every hand-written client this run cannot tell apart from the best.
                            let mut names = vec![md_code(&best.client)];
                            names.extend(
                                rows.iter()
                                    .filter(|r| {
                                        r.kind == Kind::HandWritten
                                            && r.ops().is_some()
                                            && !std::ptr::eq(**r, best)
                                            && !verdict::judge(best, noise, r, noise).is_decided()
                                    })
                                    .map(|r| md_code(&r.client)),
                            );
                            if names.len() == 1 {
                                format!("{} {ops}", names[0])
                            } else {
                                format!(
                                    "{ops}: {} (indistinguishable in this run)",
                                    names.join(", ")
                                )
                            }
                        }
                        (_, Some(row)) => format!("{} {ops}", md_code(&row.client)),
                    }
                }
            };
            let ratio = match (chosen, baseline(rows)) {
                (Some(row), Some(base)) if row.ops().is_some() && !std::ptr::eq(row, base) => {
                    let judged = verdict::judge(row, noise, base, noise);
                    judged.ratio.map_or("–".to_string(), |r| {
                        verdict::ratio_with_range(r, judged.range)
                            .replace("no range: measured once", "1 run")
                    })
                }
                (Some(row), Some(_)) if row.ops().is_some() => "1.00×".to_string(),
                _ => "–".to_string(),
            };
            let _ = write!(out, " {value} | {ratio} |");
        }
        out.push('\n');
    }
    let took = format!(
        " (this run took {})",
        format::run_duration(results.run.duration_s)
    );
    let _ = write!(
        out,
        "\nRatios are quoted with their range (from each side's interval: criterion's confidence \
         interval, or the range of its runs). Run-to-run noise: {}.\n",
        crate::html::noise_text(results)
    );
    let _ = write!(
        out,
        "\nGet your own numbers: `make bench`{took}, then `make lessons RUN=<run-id>`. What each \
         difference comes from, with these numbers and the code that causes it: \
         [docs/lessons.md](docs/lessons.md).\n"
    );
    out
}

/// A row of the headline table.
#[derive(Clone, Copy)]
enum Role {
    /// The hand-written client with the highest throughput in the cell (named in the cell).
    BestHandWritten,
    /// A client by name.
    Client(&'static str),
    /// The loopback floor (named in the cell).
    Floor,
}

impl Role {
    fn choose<'r>(self, rows: &[&'r Row]) -> Option<&'r Row> {
        match self {
            Role::BestHandWritten => rows
                .iter()
                .copied()
                .filter(|r| r.kind == Kind::HandWritten && r.ops().is_some())
                .max_by(|a, b| a.ops().unwrap_or(0.0).total_cmp(&b.ops().unwrap_or(0.0))),
            Role::Client(name) => rows.iter().copied().find(|r| r.client == name),
            Role::Floor => rows.iter().copied().find(|r| model::is_floor(r)),
        }
    }
}

// --- make lessons ------------------------------------------------------------------------------

/// What [`generate`] wrote.
#[derive(Debug, Default)]
pub struct Generated {
    /// Every file written, in order.
    pub written: Vec<PathBuf>,
}

/// `make lessons`: reads `<run_dir>/results.json` (and the split run: `split_dir`, else
/// `<run_dir>/split/` if it exists) and rewrites, under the repository `root` (default: found
/// around `run_dir`): the blocks of `docs/lessons.md`, each client crate's README block, the
/// top-level README's headline block, `<run_dir>/lessons.md`, and `<run_dir>/index.html` (with
/// `summary.md`). Every code anchor must resolve; every marker must be there exactly once.
pub fn generate(
    run_dir: &Path,
    split_dir: Option<&Path>,
    root: Option<&Path>,
) -> Result<Generated, Error> {
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => source::find_root(run_dir).ok_or_else(|| Error::NoSourceTree {
            start: run_dir.to_path_buf(),
        })?,
    };
    let results = Results::load(run_dir)?;
    let default_split = run_dir.join(SPLIT_DIR);
    let split_dir = match split_dir {
        Some(dir) => Some(dir.to_path_buf()),
        None => default_split
            .join(crate::results::RESULTS_FILE)
            .is_file()
            .then_some(default_split),
    };
    let split = split_dir.as_deref().map(Results::load).transpose()?;
    let runs = Runs {
        main: RunRef::new(&results, run_dir, relative_source(run_dir, &root)),
        split: match (&split, &split_dir) {
            (Some(split), Some(dir)) => Some(RunRef::new(split, dir, relative_source(dir, &root))),
            _ => None,
        },
    };
    let code = Code::strict(&root)?;
    let mut generated = Generated::default();
    let source = runs.main.source.clone();

    // docs/lessons.md: one block per lesson.
    let docs = root.join(DOCS_FILE);
    let docs_prefix = source::prefix_to_root(docs.parent().unwrap_or(&root), &root);
    let bodies = lessons_markdown(&runs, &code, "##", docs_prefix.as_deref());
    let blocks: Vec<(&str, String)> = LESSONS.iter().map(|l| l.id).zip(bodies).collect();
    rewrite(&docs, &source, &blocks, &mut generated)?;

    // Each client crate's README.
    for (folder, clients) in CRATES {
        let readme = root.join("crates").join(folder).join("README.md");
        rewrite(
            &readme,
            &source,
            &[(MEASURED_BLOCK, measured_markdown(&runs, clients))],
            &mut generated,
        )?;
    }

    // The top-level README's headline.
    rewrite(
        &root.join("README.md"),
        &source,
        &[(HEADLINE_BLOCK, headline_markdown(&runs))],
        &mut generated,
    )?;

    // The run's own lessons page, and its report.
    let run_prefix = source::prefix_to_root(run_dir, &root);
    let mut page = format!(
        "# Lessons from run {}\n\nGenerated by `make lessons` from `{}`; do not edit (the text \
         is in `crates/report/src/lessons/catalogue.rs`, the explanation of the page in \
         `docs/lessons.md`).\n\n",
        format::markdown(&runs.main.id),
        source
    );
    for body in lessons_markdown(&runs, &code, "##", run_prefix.as_deref()) {
        page.push_str(&body);
    }
    let page_path = run_dir.join(LESSONS_FILE);
    crate::write(&page_path, &page)?;
    generated.written.push(page_path);
    crate::render_run_sections(
        run_dir,
        &results,
        &[section(&runs, &code, run_prefix.as_deref())],
    )?;
    generated.written.push(run_dir.join(crate::INDEX_FILE));
    generated.written.push(run_dir.join(crate::SUMMARY_FILE));
    Ok(generated)
}

/// Replaces `blocks` in `path`, failing (and writing nothing) on any marker problem.
fn rewrite(
    path: &Path,
    source: &str,
    blocks: &[(&str, String)],
    generated: &mut Generated,
) -> Result<(), Error> {
    let io_error = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut text = fs::read_to_string(path).map_err(io_error)?;
    for (name, body) in blocks {
        text =
            markers::replace_block(&text, name, source, body).map_err(|problem| Error::Marker {
                path: path.to_path_buf(),
                name: name.to_string(),
                problem,
            })?;
    }
    crate::write(path, &text)?;
    generated.written.push(path.to_path_buf());
    Ok(())
}

#[cfg(test)]
mod tests;
