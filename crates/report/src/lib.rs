//! Turns a benchmark run's `results.json` into what people look at: an HTML report that opens
//! from disk, a Markdown summary, and run-to-run comparisons.
//!
//! The bench suite (sibling `bench-suite`) measures; this crate only reads its `results.json`
//! (schema in [`results`] and `reports/README.md`) and writes next to it:
//!
//! - `index.html` ([`render_run`]): one section per operation; per cell (backend × transport ×
//!   operation × size) a bar chart with one bar per client and the interval as whiskers, Redis
//!   beside memcached and TCP beside Unix on one shared axis, and under it each client's paired
//!   ratio to the cell's reference with its interval and the cell's A/A band; a pipeline-depth
//!   chart per client; for each operation and size run with many callers, per backend ×
//!   transport, ops/s and p99 latency against the callers in flight (a line per client, the
//!   baseline tools dashed) over a table of each client's model, connections and ops/s at each
//!   number of callers; a sortable cost table per cell (ops/s, × reference, × fastest,
//!   × redis-benchmark, CPU, syscalls, allocations, latency percentiles) under its timing and A/A
//!   figure; failed and unsupported pairs with their reason; the run's environment and A/A check;
//!   links into criterion's own per-group reports.
//!   Each open-loop cell comes first after the headline: p99 from the intended start against
//!   the offered rate (log scales), a line per client, saturation marked, and its table.
//! - `summary.md`: the same tables in Markdown.
//! - [`compare::compare_runs`]: each row's ratio to its reference in both runs, a change called
//!   only beyond both runs' A/A deviations, and B/A of ops/s as context.
//!
//! Every ratio between two rows of one cell is the paired one ([`paired`] words it), and every
//! faster side is named by the one rule of `kvbench_results::verdict`.
//! - [`check::check_run_dir`]: the static half of `make test-report` (charts present, no dead
//!   link, well-formed page); `crates/report/browser-test.sh` adds headless Chromium.
//!
//! # What it gives up
//!
//! Charts are drawn by hand as inline SVG (bars, whiskers, lines, a few ticks): no plotting
//! crate, no script library, no CDN, so the folder can be zipped and opened anywhere, offline.
//! The price is plain charts: no zoom, and log axes only in the callers charts, where throughput
//! and latency part by orders of magnitude (the depth chart shares one linear axis, so a slow
//! client shows as a short bar, which is the point). The page's only scripts are small and inline:
//! sortable tables and a self-check of its own charts; without JavaScript everything still shows.
//!
//! Links are emitted only to files that exist inside the run folder, and every string from
//! results.json is escaped, in HTML and in Markdown.

#![deny(missing_docs)]

pub mod check;
pub mod compare;
mod format;
mod html;
pub mod lessons;
mod model;
pub mod paired;
pub mod results;
pub mod spread;
mod svg;
mod tables;
mod template;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use compare::{Comparison, compare, compare_runs};
pub use results::Results;

/// The report's file name inside a run folder.
pub const INDEX_FILE: &str = "index.html";
/// The Markdown summary's file name inside a run folder.
pub const SUMMARY_FILE: &str = "summary.md";

/// Everything that can go wrong reading results, writing a report or generating the lessons.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A results file could not be read, or is not of this schema.
    #[error(transparent)]
    Results(#[from] kvbench_results::Error),
    /// A report or document could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// No source tree (a folder with a workspace `Cargo.toml` and `crates/`) around the run.
    #[error("no kvbench source tree found around {}: pass --root", start.display())]
    NoSourceTree {
        /// Where the search started.
        start: PathBuf,
    },
    /// A code anchor is missing from its file, or its markers are out of order.
    #[error(
        "code anchor {anchor:?} not found in {path}: no `// ANCHOR: {anchor}` … `// ANCHOR_END: {anchor}` around its lines"
    )]
    Anchor {
        /// Path from the repository root.
        path: String,
        /// The anchor.
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
        problem: lessons::markers::MarkerProblem,
    },
}

/// Reads a file, naming it in the error.
fn read(path: &Path) -> Result<String, Error> {
    fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// An extra section of the report, supplied by a later stage (the "Lessons" hook).
///
/// `html` is inserted verbatim: the caller owns its escaping (use it for markup you generated,
/// never for text straight from results.json). `title` is escaped; `id` is reduced to
/// `[A-Za-z0-9-]` and prefixed with `lesson-`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Section {
    /// Anchor id (made safe, prefixed with `lesson-`).
    pub id: String,
    /// Heading, plain text.
    pub title: String,
    /// Body, trusted HTML.
    pub html: String,
}

/// Writes `<dir>/index.html` and `<dir>/summary.md` from `<dir>/results.json`.
///
/// The bench suite calls this at the end of every run (`make bench`, `make bench-quick`), and
/// `make report RUN=<id>` calls it on an existing run. It reads the run folder (and
/// `<dir>/split/results.json`, a split-placement run, if there is one) and needs no network;
/// criterion's own reports, which the bench writes into `<dir>/criterion/`, are linked when present. The page ends with
/// the Lessons section ([`lessons`]) computed from this run; when the folder sits inside a kvbench
/// checkout (`reports/<run>/`), its code references link to the source lines.
pub fn render_run(dir: &Path) -> Result<(), Error> {
    render_run_with_lessons(dir, &[])
}

/// [`render_run`] plus extra sections after the Lessons section, at the place marked
/// `LESSONS HOOK` in the HTML.
pub fn render_run_with_lessons(dir: &Path, extra: &[Section]) -> Result<(), Error> {
    let results = Results::load(dir)?;
    let mut sections = vec![lessons::default_section(&results, dir)];
    sections.extend_from_slice(extra);
    render_run_sections(dir, &results, &sections)
}

/// Writes the report of `results` (read from `dir`) with exactly these sections.
fn render_run_sections(dir: &Path, results: &Results, sections: &[Section]) -> Result<(), Error> {
    let (page, summary) = render(results, dir, sections);
    write(&dir.join(INDEX_FILE), &page)?;
    write(&dir.join(SUMMARY_FILE), &summary)
}

/// Renders without writing: `(index.html, summary.md)`. `dir` is only used to decide which
/// links to criterion's reports exist (and as the fallback run id).
pub fn render(results: &Results, dir: &Path, lessons: &[Section]) -> (String, String) {
    html::render(results, &model::Model::new(results, dir), dir, lessons)
}

/// Writes through a temporary file and a rename, so a reader never sees half a report.
fn write(path: &Path, contents: &str) -> Result<(), Error> {
    let error = |source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    fs::write(&temporary, contents).map_err(error)?;
    fs::rename(&temporary, path).map_err(error)
}
