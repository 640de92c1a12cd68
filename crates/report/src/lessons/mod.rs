//! Lessons: one short explanation per trade-off the suite measures, with the numbers of a run.
//!
//! The prose of each lesson lives once, in a Markdown file under `crates/report/lessons/` (see
//! [`catalogue`] for its format). Numbers come only from a run's results.json: a row is found by
//! client and cell (backend, op, value size or depth, transport), and a row the run does not have
//! is shown as "not measured in this run" (a failed or unsupported row as its status and reason),
//! never filled in. Ratios are computed from the numbers shown.
//!
//! One renderer: each lesson's template is filled in (minijinja) to Markdown, which goes as it is
//! into `reports/<id>/lessons.md` and the generated blocks of `docs/lessons.md`
//! ([`generate`], `make lessons`; see [`markers`] for the block format), and through pulldown-cmark
//! into the Lessons section of every run's `index.html` ([`section`]). `make lessons` also
//! rewrites the "Measured" block of each client crate's README and the headline block of the
//! top-level README.
//!
//! Code references are anchors in the source (`// ANCHOR: name` … `// ANCHOR_END: name`) resolved
//! to line numbers at generation time ([`source`]); `make lessons` fails if an anchor no longer
//! exists, the report only omits the link.

pub mod catalogue;
pub mod markers;
pub mod source;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::format::{self, html as esc};
use crate::results::{Backend, Kind, Op, Results, Row, Transport};
use crate::{Section, model};
use catalogue::{CRATES, CodeRef, LESSONS, Lesson, MAIN_CELLS, Pick, Which};
use kvbench_results::verdict;
use source::Resolved;

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
    /// A code anchor is missing from its file, or its markers are out of order.
    #[error(
        "code anchor {anchor:?} not found in {path}: no `// ANCHOR: {anchor}` … `// ANCHOR_END: {anchor}` around its lines"
    )]
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
    /// A document or a source file could not be read, or a document written.
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

    fn placement_mode(&self) -> &str {
        self.results.run.placement.mode.as_str()
    }

    /// `run `<id>` (mode full; placement same-core, servers on CPU 1, bench on CPU 1), from
    /// `<source>``, in Markdown.
    fn describe(&self) -> String {
        let p = &self.results.run.placement;
        let cpu = |cpu: Option<u32>| cpu.map_or("any".to_string(), |c| c.to_string());
        let text = format!(
            " (mode {}; placement {}, servers on CPU {}, bench on CPU {}), from ",
            self.results.run.mode,
            p.mode,
            cpu(p.server_cpu),
            cpu(p.client_cpu)
        );
        format!(
            "run {}{}{}",
            md_code(&self.id),
            format::markdown(&text),
            md_code(&self.source)
        )
    }
}

/// Line links into the repository: each anchor's lines, where it resolved.
pub struct Code {
    /// Lines of each reference; absent where it did not resolve or no source tree was found.
    resolved: BTreeMap<CodeRef, Resolved>,
}

impl Code {
    /// Resolves every lesson's references under `root`: the first failure is an error.
    pub fn strict(root: &Path) -> Result<Code, Error> {
        let mut resolved = BTreeMap::new();
        for code in LESSONS.iter().flat_map(|l| &l.code) {
            resolved.insert(code.clone(), source::resolve(root, code)?);
        }
        Ok(Code { resolved })
    }

    /// Resolves what it can; a reference that does not resolve is shown without lines.
    pub fn lenient(root: Option<&Path>) -> Code {
        let resolved = LESSONS
            .iter()
            .flat_map(|l| &l.code)
            .filter_map(|code| Some((code.clone(), source::resolve(root?, code).ok()?)))
            .collect();
        Code { resolved }
    }

    /// The Markdown naming `code`: a link to its lines relative to `prefix` (the path from the
    /// document's folder to the repository root), its lines without a link, or its anchor.
    fn markdown(&self, code: &CodeRef, prefix: Option<&str>) -> String {
        let path = md_code(&code.path);
        match (self.resolved.get(code), prefix) {
            (Some(at), Some(prefix)) => format!(
                "[{path} {}]({}{})",
                at.lines_text(),
                format::url_path(&format!("{prefix}{}", code.path)),
                at.fragment()
            ),
            (Some(at), None) => format!("{path} {}", at.lines_text()),
            (None, _) => format!("{path} at anchor {}", md_code(&code.anchor)),
        }
    }
}

/// A row as a lesson sees it.
enum Lookup<'a> {
    Found(&'a Row),
    Missing,
    NoRun,
}

impl Lookup<'_> {
    fn row(&self) -> Option<&Row> {
        match self {
            Lookup::Found(row) => Some(row),
            _ => None,
        }
    }

    fn ops(&self) -> Option<f64> {
        self.row().and_then(Row::ops)
    }

    /// Why a row shows no throughput, for its table cell.
    fn status(&self) -> Option<String> {
        match self {
            Lookup::Missing => Some("not measured in this run".to_string()),
            Lookup::NoRun => Some("no split run given".to_string()),
            Lookup::Found(row) if row.ops().is_some() => None,
            Lookup::Found(row) => Some(match row.unmeasured_reason() {
                Some(why) if !row.is_ok() => format!("{}: {why}", crate::svg::status_word(row)),
                _ => "not timed".to_string(),
            }),
        }
    }

    /// The ops/s cell of a one-line table: the throughput, else why there is none.
    fn ops_cell(&self) -> String {
        self.status().map_or_else(
            || format::opt(self.ops(), format::grouped),
            |status| format::markdown(&status),
        )
    }

    /// The ops/s cell of a lesson table: the throughput, else why there is none. A failed or unsupported row's
    /// reason is long: the cell says `unsupported (note n)` and `note` gets the reason, for a
    /// line under the table (a reason inside the cell crushes the table's other columns).
    fn ops_cell_noted(&self, notes: &mut Vec<String>) -> String {
        match (self, self.status()) {
            (_, None) => format::opt(self.ops(), format::grouped),
            (Lookup::Found(row), Some(status)) if !row.is_ok() => {
                notes.push(format!(
                    "{} ({}): {}",
                    md_code(&row.client),
                    md_code(&row.cell),
                    format::markdown(&status)
                ));
                format!("{} (note {})", crate::svg::status_word(row), notes.len())
            }
            (_, Some(status)) => format::markdown(&status),
        }
    }
}

/// The metric cells shared by every table, in Markdown: CPU/op (user + sys), syscalls/op,
/// allocs/op, p99.
fn cost_cells(row: Option<&Row>) -> String {
    let ok = row.filter(|r| r.is_ok());
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
    let count = |value: Option<f64>| format::opt(value, |v| format::significant(v, 3));
    format!(
        "{cpu} | {} | {} | {}",
        count(ok.and_then(|r| r.syscalls_per_op)),
        count(ok.and_then(|r| r.allocs_per_op)),
        format::opt(
            ok.and_then(|r| r.latency_ns.map(|l| l.p99 as f64)),
            format::duration_ns
        )
    )
}

/// Header of the ratio column: throughput over the first row of the table that has one.
const RATIO_HEAD: &str = "× first measured row";

/// Header and alignment of the metric columns every table ends with.
const COST_HEAD: &str = "CPU/op (user + sys) | syscalls/op | allocs/op | p99";
const COST_ALIGN: &str = "--:|--:|--:|--:";

/// A ratio as the report writes it (`1.38×`), with two significant digits below 0.01
/// (`0.00041×`) so a collapse does not read as zero.
fn ratio_text(value: f64) -> String {
    if value.is_finite() && value > 0.0 && value < 0.01 {
        format!("{}×", format::significant(value, 2))
    } else {
        format::ratio(value)
    }
}

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
        let Some(run) = self.get(pick.run) else {
            return Lookup::NoRun;
        };
        run.results
            .rows
            .iter()
            .find(|row| row.cell == pick.cell && row.client == pick.client && row.concurrency == 1)
            .map_or(Lookup::Missing, Lookup::Found)
    }

    /// `**Measured** in run …`: the paragraph naming the run(s) a lesson's tables come from.
    fn measured(&self, lesson: &Lesson) -> String {
        let mut out = format!("**Measured** in {}", self.main.describe());
        match (&self.split, lesson.uses_split()) {
            (_, false) => out.push('.'),
            (Some(split), true) => {
                let _ = write!(out, ", and split placement in {}.", split.describe());
                if self.main.placement_mode() == split.placement_mode() {
                    let _ = write!(
                        out,
                        " Both runs record placement {}: these tables show run-to-run noise, not \
                         placement.",
                        format::markdown(split.placement_mode())
                    );
                }
            }
            (None, true) => out.push_str(
                ". No split-placement run was given, so the second row of each table is empty. \
                 Make one with `PLACEMENT=split make bench-quick`, then run \
                 `make lessons RUN=<this run> SPLIT_RUN=<that run>`; a run folder that holds \
                 `split/results.json` is used without being named.",
            ),
        }
        out
    }

    /// A lesson's table in Markdown, then the sentence that reads it.
    fn table(&self, picks: &[Pick]) -> String {
        let two_runs = picks.iter().any(|p| p.run == Which::Split);
        let found: Vec<Lookup> = picks.iter().map(|p| self.lookup(p)).collect();
        let first = found.iter().find_map(Lookup::ops);
        let (run_head, run_align) = if two_runs {
            ("run (placement) | ", "---|")
        } else {
            ("", "")
        };
        let mut out = format!(
            "| {run_head}client | cell | ops/s | {RATIO_HEAD} | {COST_HEAD} |\n\
             |{run_align}---|---|--:|--:|{COST_ALIGN}|\n"
        );
        let mut notes = Vec::new();
        for (pick, lookup) in picks.iter().zip(&found) {
            out.push_str("| ");
            if two_runs {
                let run = self
                    .get(pick.run)
                    .map_or("split: none given".to_string(), |run| {
                        format!("{} ({})", run.id, run.placement_mode())
                    });
                let _ = write!(out, "{} | ", format::markdown(&run));
            }
            let ratio = lookup.ops().zip(first).map(|(ops, first)| ops / first);
            let _ = writeln!(
                out,
                "{} | {} | {} | {} | {} |",
                md_code(&pick.client),
                md_code(lookup.row().map_or(&pick.cell, |row| &row.cell)),
                lookup.ops_cell_noted(&mut notes),
                format::opt(ratio, ratio_text),
                cost_cells(lookup.row())
            );
        }
        out.push('\n');
        for (index, note) in notes.iter().enumerate() {
            let _ = writeln!(out, "Note {}: {note}\n", index + 1);
        }
        out.push_str(&self.reading(picks, &found, two_runs));
        out
    }

    /// The computed sentence under a table: fastest against slowest measured row, named only as
    /// [`verdict::judge`] allows.
    fn reading(&self, picks: &[Pick], found: &[Lookup], two_runs: bool) -> String {
        let measured: Vec<(&Pick, &Row, f64)> = picks
            .iter()
            .zip(found)
            .filter_map(|(pick, lookup)| Some((pick, lookup.row()?, lookup.ops()?)))
            .collect();
        let fastest = measured.iter().max_by(|a, b| a.2.total_cmp(&b.2));
        let slowest = measured.iter().min_by(|a, b| a.2.total_cmp(&b.2));
        let (Some(fast), Some(slow), true) = (fastest, slowest, measured.len() >= 2) else {
            return "Fewer than two of these rows have a throughput in this run: no ratio to read."
                .to_string();
        };
        let describe = |(pick, row, ops): &(&Pick, &Row, f64)| {
            let placement = match self.get(pick.run) {
                Some(run) if two_runs => format!(", {} placement", run.placement_mode()),
                _ => String::new(),
            };
            format!(
                "{} ({}{}) at {} ops/s",
                md_code(&pick.client),
                md_code(&row.cell),
                format::markdown(&placement),
                format::grouped(*ops)
            )
        };
        let noise = |pick: &Pick| {
            self.get(pick.run)
                .and_then(|run| run.results.noise())
                .map(|noise| noise.median_spread)
        };
        let judged = verdict::judge(fast.1, noise(fast.0), slow.1, noise(slow.0));
        let ratio = ratio_text(fast.2 / slow.2);
        match &judged.verdict {
            verdict::Verdict::Indistinguishable(why) => format!(
                "In this run, no faster side can be named: {} and {} are indistinguishable ({}).",
                describe(fast),
                describe(slow),
                format::markdown(&format!("{why}; measured ratio {ratio}"))
            ),
            // A row measured once has no interval: the rule cannot judge it either way.
            verdict::Verdict::Unknown(why) => format!(
                "In this run, no faster side can be named: {} and {} cannot be judged ({}).",
                describe(fast),
                describe(slow),
                format::markdown(&format!("{why}; measured ratio {ratio}"))
            ),
            _ => format!(
                "In this run, the fastest is {}, the slowest {}: {ratio} the throughput{}.",
                describe(fast),
                describe(slow),
                judged.range.map_or(String::new(), |(low, high)| format!(
                    " (range {}–{})",
                    ratio_text(low),
                    ratio_text(high)
                ))
            ),
        }
    }
}

/// One lesson's body in Markdown (without its heading): its template with the run's tables and
/// the code links filled in.
fn lesson_body(lesson: &Lesson, runs: &Runs, code: &Code, prefix: Option<&str>) -> String {
    let mut env = minijinja::Environment::new();
    // A placeholder the file misspells is a bug, not an empty string.
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let tables: Vec<String> = lesson.tables.iter().map(|t| runs.table(t)).collect();
    let links: BTreeMap<&str, String> = lesson
        .code
        .iter()
        .map(|c| (c.anchor.as_str(), code.markdown(c, prefix)))
        .collect();
    let context = minijinja::context! {
        measured => runs.measured(lesson),
        tables => tables,
        code => links,
    };
    let body = env
        .render_str(lesson.body, context)
        .unwrap_or_else(|error| panic!("lessons/{}.md: {error:#}", lesson.id));
    // A blank line after it, as after every paragraph, so lessons concatenate.
    format!("{}\n\n", body.trim_end())
}

/// A code span; text holding a backtick, a line break or a pipe is escaped as plain text instead.
fn md_code(text: &str) -> String {
    if text.contains(['`', '\n', '\r', '|']) {
        format::markdown(text)
    } else {
        format!("`{text}`")
    }
}

/// Markdown to the report's HTML: tables scroll and right-align their numbers with the page's
/// classes, and every link is a source link (the only links lessons have), which the report's
/// check follows.
fn html(markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let events = Parser::new_ext(markdown, Options::ENABLE_TABLES).map(|event| match event {
        Event::Start(Tag::Link { dest_url, .. }) => Event::InlineHtml(
            format!(
                "<a class=\"{}\" href=\"{}\">",
                crate::check::SOURCE_LINK_CLASS,
                esc(&dest_url)
            )
            .into(),
        ),
        Event::End(TagEnd::Link) => Event::InlineHtml("</a>".into()),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out.replace(
        "<table>",
        "<div class=\"scroll\"><table class=\"lesson-table\">",
    )
    .replace("</table>", "</table></div>")
    .replace(" style=\"text-align: right\"", " class=\"num\"")
}

// --- Outputs -----------------------------------------------------------------------------------

/// Every lesson in Markdown, headed `<heading> n. title` (`##`); links relative to `prefix` (the
/// path from the document's folder to the repository root), or none.
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
            format!(
                "{heading} {}. {}\n\n{}",
                index + 1,
                lesson.title,
                lesson_body(lesson, runs, code, prefix)
            )
        })
        .collect()
}

/// The Lessons section of a run's `index.html`: the same Markdown as the documents, as HTML.
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
        let _ = write!(
            body,
            "<article class=\"lesson-item\" id=\"lesson-{}\">\n<h3>{}. {}</h3>\n{}</article>\n",
            esc(lesson.id),
            index + 1,
            esc(&lesson.title),
            html(&lesson_body(lesson, runs, code, prefix))
        );
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

/// The table of one client crate's README: its clients' rows (`clients` separated by spaces) in
/// the main cells.
pub fn measured_markdown(runs: &Runs, clients: &str) -> String {
    let clients: Vec<&str> = clients.split_whitespace().collect();
    let results = runs.main.results;
    let mut out = format!(
        "Measured in {}. Every number below is that file's; `make lessons` rewrites them.",
        runs.main.describe()
    );
    out.push_str(
        "\n\n| client | cell | ops/s | CPU/op (user + sys) | syscalls/op | allocs/op | p99 |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|--:|\n");
    let mut absent = Vec::new();
    for &(title, op, size, depth) in MAIN_CELLS {
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
            absent.push(title);
            continue;
        }
        rows.sort_by_key(|r| (r.transport, clients.iter().position(|c| *c == r.client)));
        for row in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md_code(&row.client),
                md_code(&row.cell),
                Lookup::Found(row).ops_cell(),
                cost_cells(Some(row))
            );
        }
    }
    if !absent.is_empty() {
        let _ = writeln!(out, "\nNot measured in this run: {}.", absent.join("; "));
    }
    out
}

/// The headline block of the top-level README: Redis over TCP, GET 3 B and the deepest
/// pipelined SET of the run, for the best hand-written client, the libraries and the baselines.
pub fn headline_markdown(runs: &Runs) -> String {
    let results = runs.main.results;
    let redis_tcp = |r: &&Row| r.backend == Backend::Redis && r.transport == Transport::Tcp;
    let depth = (results.rows.iter().filter(redis_tcp))
        .filter(|r| r.op == Op::PipelineSet)
        .map(|r| r.pipeline)
        .max();
    let noise = results.noise().map(|n| n.median_spread);
    let column = |op: Op, depth: u64| -> Vec<&Row> {
        (results.rows.iter().filter(redis_tcp))
            .filter(|r| {
                r.op == op && r.value_size == 3 && r.pipeline == depth && r.concurrency == 1
            })
            .collect()
    };
    // Without a pipelined SET in the run, its column is empty: every row says so.
    let columns = [
        column(Op::Get, 1),
        depth.map_or(Vec::new(), |d| column(Op::PipelineSet, d)),
    ];
    let mut out = format!(
        "Redis over TCP, one connection, in {}.\n\n| client | GET 3 B, ops/s | × redis-benchmark \
         | pipelined SET, depth {}, ops/s | × redis-benchmark |\n|---|--:|--:|--:|--:|\n",
        runs.main.describe(),
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
    for (label, role) in roles {
        let _ = write!(out, "| {label} |");
        for rows in &columns {
            let chosen = role.choose(rows);
            let lookup = chosen.map_or(Lookup::Missing, Lookup::Found);
            let ops = lookup.ops_cell();
            let value = match (role, chosen.filter(|r| r.ops().is_some())) {
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
                    match names.as_slice() {
                        [one] => format!("{one} {ops}"),
                        _ => format!(
                            "{ops}: {} (indistinguishable in this run)",
                            names.join(", ")
                        ),
                    }
                }
                (_, Some(row)) => format!("{} {ops}", md_code(&row.client)),
            };
            let baseline = (rows.iter().copied())
                .find(|r| r.client == model::BASELINE_CLIENT && r.ops().is_some());
            let ratio = match (lookup.ops().and(chosen), baseline) {
                (Some(row), Some(base)) if std::ptr::eq(row, base) => "1.00×".to_string(),
                (Some(row), Some(base)) => {
                    let judged = verdict::judge(row, noise, base, noise);
                    judged.ratio.map_or("–".to_string(), |r| {
                        verdict::ratio_with_range(r, judged.range)
                            .replace("no range: measured once", "1 run")
                    })
                }
                _ => "–".to_string(),
            };
            let _ = write!(out, " {value} | {ratio} |");
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "\nRatios are quoted with their range (from each side's interval: criterion's confidence \
         interval, or the range of its runs). Run-to-run noise: {}.\n\nGet your own numbers: \
         `make bench` (this run took {}), then `make lessons RUN=<run-id>`. What each difference \
         comes from, with these numbers and the code that causes it: \
         [docs/lessons.md](docs/lessons.md).\n",
        crate::html::noise_text(results),
        format::run_duration(results.run.duration_s)
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
/// `summary.md`). Every code anchor must resolve and every marker be there exactly once, or
/// nothing is written.
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
    let source = &runs.main.source;

    // Every document's new text first: a marker problem anywhere writes nothing.
    let docs = root.join(DOCS_FILE);
    let docs_prefix = source::prefix_to_root(docs.parent().unwrap_or(&root), &root);
    let bodies = lessons_markdown(&runs, &code, "##", docs_prefix.as_deref());
    let mut documents = vec![(docs, LESSONS.iter().map(|l| l.id).zip(bodies).collect())];
    for (folder, clients) in CRATES {
        let readme = root.join("crates").join(folder).join("README.md");
        documents.push((
            readme,
            vec![(MEASURED_BLOCK, measured_markdown(&runs, clients))],
        ));
    }
    let headline = vec![(HEADLINE_BLOCK, headline_markdown(&runs))];
    documents.push((root.join("README.md"), headline));
    let mut texts = Vec::new();
    for (path, blocks) in documents {
        let mut text = fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        for (name, body) in blocks {
            text = markers::replace_block(&text, name, source, &body).map_err(|problem| {
                Error::Marker {
                    path: path.clone(),
                    name: name.to_string(),
                    problem,
                }
            })?;
        }
        texts.push((path, text));
    }

    // The run's own lessons page, and its report.
    let run_prefix = source::prefix_to_root(run_dir, &root);
    let mut page = format!(
        "# Lessons from run {}\n\nGenerated by `make lessons` from `{source}`; do not edit (the \
         text is in `crates/report/lessons/`, the explanation of the page in \
         `docs/lessons.md`).\n\n",
        format::markdown(&runs.main.id),
    );
    page.extend(lessons_markdown(&runs, &code, "##", run_prefix.as_deref()));
    texts.push((run_dir.join(LESSONS_FILE), page));
    let mut generated = Generated::default();
    for (path, text) in texts {
        crate::write(&path, &text)?;
        generated.written.push(path);
    }
    crate::render_run_sections(
        run_dir,
        &results,
        &[section(&runs, &code, run_prefix.as_deref())],
    )?;
    generated.written.push(run_dir.join(crate::INDEX_FILE));
    generated.written.push(run_dir.join(crate::SUMMARY_FILE));
    Ok(generated)
}

#[cfg(test)]
mod tests;
