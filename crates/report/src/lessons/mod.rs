//! Lessons: one short explanation per trade-off the suite measures, with the numbers of a run.
//!
//! The prose of each lesson lives once, in a Markdown file under `crates/report/lessons/` (see
//! [`catalogue`] for its format). Numbers come only from a run's results.json: a row is found by
//! client and cell id (backend, op, value size or depth, transport, callers), and a row the run
//! does not have is shown as "not measured in this run" (a failed or unsupported row as its status
//! and reason), never filled in. A ratio between two rows of one cell is their paired ratio
//! (the median of the per-round ratios, with its interval); any other is computed from the
//! numbers shown.
//!
//! One renderer: each lesson's template is filled in (minijinja) to Markdown, which goes as it is
//! into `reports/<id>/lessons.md` and the generated blocks of `docs/lessons.md`
//! ([`generate`], `make lessons`; see [`markers`] for the block format), and through pulldown-cmark
//! into the Lessons section of every run's `index.html` ([`section`]). `make lessons` also
//! rewrites the "Measured" block of each client crate's README and the headline block of the
//! top-level README.
//!
//! Which clients a crate's "Measured" block shows is said by the crate's own README, in a comment
//! above the block (`<!-- lessons:measured clients: raw-tcp raw-tcp/nagle -->`): no code outside
//! a client's crate names it. The headline names no client either: it shows the best hand-written
//! client and every library that has rows in its cells.
//!
//! Code references are anchors in the source (`// ANCHOR: name` … `// ANCHOR_END: name`) resolved
//! to line numbers at generation time ([`source`]); `make lessons` fails if an anchor no longer
//! exists, the report only omits the link. The tour (`docs/tour.md`) links code through the same
//! anchors ([`tour`]).

pub mod catalogue;
pub mod markers;
pub mod source;
pub mod tour;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::format::{self, html as esc};
use crate::model::{self, BASELINE_CLIENT, Cell, OPEN_P99_NS, OpenCell, OpenLine};
use crate::paired;
use crate::results::{
    Backend, Instructions, Kind, Op, PairedRatio, RESULTS_FILE, Results, Row, Transport,
};
use crate::{Error, Section};
use catalogue::{CodeRef, LESSONS, Lesson, MAIN_CELLS, Pick, Reading, Which};
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
/// The README comment that names the clients of a crate's "Measured" block.
const CLIENTS_COMMENT: &str = "<!-- lessons:measured clients:";

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
            id: model::run_id(results, dir),
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
        let (id, source) = (md_code(&self.id), md_code(&self.source));
        format!("run {id}{}{source}", format::markdown(&text))
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
        let resolved = (LESSONS.iter().flat_map(|l| &l.code))
            .map(|code| Ok((code.clone(), source::resolve(root, code)?)))
            .collect::<Result<_, Error>>()?;
        Ok(Code { resolved })
    }

    /// Resolves what it can; a reference that does not resolve is shown without lines.
    pub fn lenient(root: Option<&Path>) -> Code {
        let resolved = (LESSONS.iter().flat_map(|l| &l.code))
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

/// A row as a lesson sees it: found, not in the run, or in a split run that was not given.
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

    /// The ops/s cell: the throughput, else why there is none. With `notes`, a failed or
    /// unsupported row's reason, which is long, goes there (for a line under the table: a reason
    /// inside the cell crushes the table's other columns) and the cell says `failed (note n)`.
    fn ops_cell(&self, notes: Option<&mut Vec<String>>) -> String {
        let row = match self {
            Lookup::Missing => return "not measured in this run".to_string(),
            Lookup::NoRun => return "no split run given".to_string(),
            Lookup::Found(row) => row,
        };
        let word = model::status_word(row);
        match (row.ops(), row.unmeasured_reason(), notes) {
            (Some(ops), ..) => format::grouped(ops),
            (None, Some(why), Some(notes)) if !row.is_ok() => {
                let (client, cell) = (md_code(&row.client), md_code(&row.cell));
                notes.push(format!(
                    "{client} ({cell}): {}",
                    format::markdown(&format!("{word}: {why}"))
                ));
                format!("{word} (note {})", notes.len())
            }
            (None, Some(why), None) if !row.is_ok() => format::markdown(&format!("{word}: {why}")),
            _ => "not timed".to_string(),
        }
    }
}

/// The metric cells shared by every table, in Markdown: instructions/op, CPU/op (user + sys,
/// tick-sampled), syscalls/op, bytes read/op (with `bytes`: the lessons' tables,
/// [`LESSON_COST_HEAD`]), allocs/op, p99.
fn cost_cells(row: Option<&Row>, bytes: bool) -> String {
    let ok = row.filter(|r| r.is_ok());
    let instructions = match ok {
        Some(row) => instructions_cell(row),
        None => "–".to_string(),
    };
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
    let p99 = ok.and_then(|r| r.latency_ns.map(|l| l.p99 as f64));
    let read = match bytes {
        true => format!(
            " | {}",
            format::opt(ok.and_then(|r| r.bytes_read_per_op), format::bytes)
        ),
        false => String::new(),
    };
    format!(
        "{instructions} | {cpu} | {}{read} | {} | {}",
        count(ok.and_then(|r| r.syscalls_per_op)),
        count(ok.and_then(|r| r.allocs_per_op)),
        format::opt(p99, format::duration_ns)
    )
}

/// Header of the ratio column: throughput over the first row of the table that has one.
const RATIO_HEAD: &str = "× first measured row";

/// A measured row's counted instructions per operation (`8,986 (spread 38 %)`), or
/// `not counted`.
fn instructions_cell(row: &Row) -> String {
    match &row.instructions_per_op {
        Some(counted) => format::markdown(&format::instructions(counted)),
        None => format::NOT_COUNTED.to_string(),
    }
}

/// Header and alignment of the metric columns every table ends with.
const COST_HEAD: &str =
    "instructions/op | CPU/op, tick-sampled (user + sys) | syscalls/op | allocs/op | p99";
const COST_ALIGN: &str = "--:|--:|--:|--:|--:";

/// The lessons' tables add the bytes the client read per operation (from the server's
/// counters) beside the system calls that read them; the crate READMEs' tables do not.
const LESSON_COST_HEAD: &str = "instructions/op | CPU/op, tick-sampled (user + sys) | syscalls/op \
     | bytes read/op | allocs/op | p99";
const LESSON_COST_ALIGN: &str = "--:|--:|--:|--:|--:|--:";

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
        (run.results.rows.iter())
            .find(|row| row.cell == pick.cell && row.client == pick.client)
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

    /// A lesson's table in Markdown, then the sentence that reads it: by time, or, where the
    /// question is the client's own work, by its counted instructions first.
    fn table(&self, picks: &[Pick], reading: Reading) -> String {
        let two_runs = picks.iter().any(|p| p.run == Which::Split);
        let found: Vec<Lookup> = picks.iter().map(|p| self.lookup(p)).collect();
        let first = (picks.iter().zip(&found))
            .find_map(|(pick, lookup)| Some((pick.run, lookup.row()?, lookup.ops()?)));
        // Cells whose rows this table quotes paired ratios of, with their A/A figures.
        let mut paired_cells: Vec<&Row> = Vec::new();
        let (run_head, run_align) = if two_runs {
            ("run (placement) | ", "---|")
        } else {
            ("", "")
        };
        // A table with many callers says how each client served them, and at what memory.
        let many = picks.iter().any(|p| p.cell.contains("/c"));
        let (many_head, many_align) = if many {
            ("model (connections) | memory/caller | ", "---|--:|")
        } else {
            ("", "")
        };
        let mut out = format!(
            "| {run_head}client | cell | {many_head}ops/s | {RATIO_HEAD} | {LESSON_COST_HEAD} |\n\
             |{run_align}---|---|{many_align}--:|--:|{LESSON_COST_ALIGN}|\n"
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
            let ratio = match (lookup.row(), lookup.ops(), first) {
                (Some(row), Some(ops), Some((run, first_row, first_ops))) => {
                    match paired_with(pick.run, row, run, first_row) {
                        Some(paired) if !std::ptr::eq(row, first_row) => {
                            if !paired_cells.iter().any(|r| r.cell == row.cell) {
                                paired_cells.push(row);
                            }
                            paired::paired_text(&paired)
                        }
                        _ => ratio_text(ops / first_ops),
                    }
                }
                _ => "–".to_string(),
            };
            let model = match lookup.row().filter(|_| many) {
                Some(row) => format!(
                    "{} ({}) | {} | ",
                    row.model,
                    row.connections,
                    format::opt(row.memory_per_caller_bytes, format::bytes)
                ),
                None if many => "– | – | ".to_string(),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "{} | {} | {model}{} | {} | {} |",
                md_code(&pick.client),
                md_code(lookup.row().map_or(&pick.cell, |row| &row.cell)),
                lookup.ops_cell(Some(&mut notes)),
                ratio,
                cost_cells(lookup.row(), true)
            );
        }
        out.push('\n');
        if !paired_cells.is_empty() {
            let cells: Vec<String> = (paired_cells.iter())
                .map(|row| format!("{} ({})", md_code(&row.cell), paired::aa_text(row)))
                .collect();
            let _ = writeln!(
                out,
                "A ratio with an interval is paired: the median of the per-round ratios to the \
                 first row over the rounds of its cell, with its 95 % bootstrap interval; {}.\n",
                cells.join(", ")
            );
        }
        for (index, note) in notes.iter().enumerate() {
            let _ = writeln!(out, "Note {}: {note}\n", index + 1);
        }
        if reading == Reading::Work {
            out.push_str(&self.work_reading(picks, &found));
            out.push_str("\n\n");
        }
        out.push_str(&self.reading(picks, &found, two_runs));
        out
    }

    /// Why the rows of a table or an owner table have no counts: the run's own note on valgrind
    /// where it has none, else that these rows were not counted.
    fn not_counted(&self, picks: &[Pick]) -> String {
        let run = picks.first().and_then(|p| self.get(p.run));
        let note = run
            .filter(|run| run.results.run.valgrind.is_none())
            .and_then(|run| (run.results.run.notes.iter()).find(|n| n.contains("valgrind")));
        match note {
            Some(note) => format!(
                "not counted in this run (its note: {})",
                format::markdown(note.trim_end_matches('.'))
            ),
            None => "not counted in this run".to_string(),
        }
    }

    /// The sentence on the client's own work: each counted row's instructions per operation,
    /// as a multiple of the first counted row's; a difference within the two rows' spreads is
    /// said to be one.
    fn work_reading(&self, picks: &[Pick], found: &[Lookup]) -> String {
        let counted: Vec<(&Pick, &Row, &Instructions)> = (picks.iter().zip(found))
            .filter_map(|(pick, lookup)| {
                let row = lookup.row().filter(|r| r.is_ok())?;
                Some((pick, row, row.instructions_per_op.as_ref()?))
            })
            .collect();
        let Some(&(_, first_row, first)) = counted.first() else {
            return format!(
                "Instructions per operation, the client's own work: {}.",
                self.not_counted(picks)
            );
        };
        let name = |row: &Row| format!("{} ({})", md_code(&row.client), md_code(&row.cell));
        let mut parts = vec![format!(
            "{} {}",
            name(first_row),
            format::markdown(&format::instructions(first))
        )];
        for &(_, row, count) in &counted[1..] {
            let ratio = count.per_op / first.per_op;
            let within = (ratio - 1.0).abs() <= first.spread.max(count.spread);
            let same = format::grouped(count.per_op) == format::grouped(first.per_op);
            let versus = match (same, within) {
                (true, _) => format!("the same as {}'s", md_code(&first_row.client)),
                (false, true) => format!("within their spread of {}'s", md_code(&first_row.client)),
                (false, false) => format!(
                    "{} {}'s",
                    format::markdown(&ratio_text(ratio)),
                    md_code(&first_row.client)
                ),
            };
            let shown = format::markdown(&format::instructions(count));
            parts.push(format!("{} {shown}, {versus}", name(row)));
        }
        let uncounted: Vec<String> = (picks.iter().zip(found))
            .filter(|(_, lookup)| lookup.row().is_some_and(|r| r.is_ok()))
            .filter(|(_, lookup)| (lookup.row()).is_some_and(|r| r.instructions_per_op.is_none()))
            .map(|(pick, _)| md_code(&pick.client))
            .collect();
        let mut out = format!(
            "Counted, the client's own work in user-space instructions per operation: {}.",
            parts.join("; ")
        );
        if !uncounted.is_empty() {
            let _ = write!(out, " Not counted: {}.", uncounted.join(", "));
        }
        out
    }

    /// Where each row's counted instructions went: a table by owner (`ours`, `library`, `tokio`,
    /// `std`, `allocator`, `libc`, then any other owner the run names), the top functions of each
    /// row, and the sentence that reads them: each row's largest owner, and, where the first two
    /// rows are one client in two cells, how each owner's share moved between them.
    fn owners(&self, picks: &[Pick]) -> String {
        let found: Vec<Lookup> = picks.iter().map(|p| self.lookup(p)).collect();
        let counted: Vec<(&Pick, Option<&Instructions>)> = (picks.iter().zip(&found))
            .map(|(pick, lookup)| {
                let row = lookup.row().filter(|r| r.is_ok());
                (pick, row.and_then(|r| r.instructions_per_op.as_ref()))
            })
            .collect();
        if counted.iter().all(|(_, c)| c.is_none()) {
            return format!(
                "Where the instructions go, by owner and function: {}.",
                self.not_counted(picks)
            );
        }
        let mut owners: Vec<&str> = OWNERS.to_vec();
        for share in counted
            .iter()
            .filter_map(|(_, c)| *c)
            .flat_map(|c| &c.owners)
        {
            if !owners.contains(&share.name.as_str()) {
                owners.push(&share.name);
            }
        }
        let share_of = |counted: &Instructions, owner: &str| {
            (counted.owners.iter())
                .find(|s| s.name == owner)
                .map(|s| s.per_op)
        };
        let mut out = format!(
            "| client | cell | instructions/op | {} |\n|---|---|--:|{}\n",
            owners.join(" | "),
            "--:|".repeat(owners.len())
        );
        for (pick, count) in &counted {
            let cells: Vec<String> = match count {
                Some(count) => (owners.iter())
                    .map(|o| format::opt(share_of(count, o), format::grouped))
                    .collect(),
                None => vec!["–".to_string(); owners.len()],
            };
            let total = match count {
                Some(count) => format::markdown(&format::instructions(count)),
                None => format::NOT_COUNTED.to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {total} | {} |",
                md_code(&pick.client),
                md_code(&pick.cell),
                cells.join(" | ")
            );
        }
        let _ = write!(
            out,
            "\nThe functions that ran the most, each its own instructions per operation (not its \
             callees'), the top {TOP_FUNCTIONS} of each row:\n\n| client | cell | function | \
             instructions/op |\n|---|---|---|--:|\n"
        );
        for (pick, count) in &counted {
            for share in count
                .iter()
                .flat_map(|c| c.functions.iter().take(TOP_FUNCTIONS))
            {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    md_code(&pick.client),
                    md_code(&pick.cell),
                    md_code(&share.name),
                    format::grouped(share.per_op)
                );
            }
        }
        let largest: Vec<String> = (counted.iter())
            .filter_map(|(pick, count)| {
                let count = (*count)?;
                let top = count
                    .owners
                    .iter()
                    .max_by(|a, b| a.per_op.total_cmp(&b.per_op))?;
                Some(format!(
                    "{} ({}): {} {} of {} ({})",
                    md_code(&pick.client),
                    md_code(&pick.cell),
                    md_code(&top.name),
                    format::grouped(top.per_op),
                    format::grouped(count.per_op),
                    share_percent(top.per_op, count.per_op)
                ))
            })
            .collect();
        let _ = write!(
            out,
            "\nThe largest owner of each row: {}.",
            largest.join("; ")
        );
        if let [(a, Some(before)), (b, Some(after)), ..] = counted[..]
            && a.client == b.client
        {
            let moved: Vec<String> = (owners.iter())
                .filter_map(|owner| {
                    let (x, y) = (share_of(before, owner), share_of(after, owner));
                    (x.is_some() || y.is_some()).then(|| {
                        format!(
                            "{} {} → {}",
                            md_code(owner),
                            format::grouped(x.unwrap_or(0.0)),
                            format::grouped(y.unwrap_or(0.0))
                        )
                    })
                })
                .collect();
            let _ = write!(
                out,
                " From {} to {}, {}: in all {} → {} instructions per operation.",
                md_code(&a.cell),
                md_code(&b.cell),
                md_code(&a.client),
                format::grouped(before.per_op),
                format::grouped(after.per_op)
            );
            let _ = write!(out, " By owner: {}.", moved.join(", "));
        }
        let missing: Vec<String> = (counted.iter())
            .filter(|(_, count)| count.is_none())
            .map(|(pick, _)| format!("{} ({})", md_code(&pick.client), md_code(&pick.cell)))
            .collect();
        if !missing.is_empty() {
            let _ = write!(out, " Not counted in this run: {}.", missing.join(", "));
        }
        out
    }

    /// The computed sentence under a table: fastest against slowest measured row, named only as
    /// [`verdict::judge`] allows.
    fn reading(&self, picks: &[Pick], found: &[Lookup], two_runs: bool) -> String {
        let measured: Vec<(&Pick, &Row, f64)> = (picks.iter().zip(found))
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
            let run = self.get(pick.run)?;
            Some(run.results.noise()?.median_spread)
        };
        // Rows of two runs share a cell name but not their rounds: never paired.
        let judged = match fast.0.run == slow.0.run {
            true => verdict::judge(fast.1, noise(fast.0), slow.1, noise(slow.0)),
            false => verdict::judge_unpaired(fast.1, noise(fast.0), slow.1, noise(slow.0)),
        };
        let quoted = format::markdown(&paired::interval_text(&judged));
        let basis = format::markdown(&paired::basis_text(&judged, fast.1));
        let (fast, slow) = (describe(fast), describe(slow));
        let undecided = |what: &str, why: &str| {
            let why = format::markdown(why);
            format!(
                "In this run, no faster side can be named: {fast} and {slow} {what} ({why}; ratio \
                 {quoted}, {basis})."
            )
        };
        match &judged.verdict {
            verdict::Verdict::Indistinguishable(why) => undecided("are indistinguishable", why),
            // A row measured once has no interval: the rule cannot judge it either way.
            verdict::Verdict::Unknown(why) => undecided("cannot be judged", why),
            _ => format!(
                "In this run, the fastest is {fast}, the slowest {slow}: {quoted} the throughput \
                 ({basis})."
            ),
        }
    }
}

/// The owners of an owner table's columns, in this order (others the run names follow).
const OWNERS: [&str; 6] = ["ours", "library", "tokio", "std", "allocator", "libc"];

/// Functions an owner table lists per row.
const TOP_FUNCTIONS: usize = 3;

/// `part` as a share of `whole`: `66 %`.
fn share_percent(part: f64, whole: f64) -> String {
    match whole > 0.0 {
        true => format!("{:.0} %", part / whole * 100.0),
        false => "–".to_string(),
    }
}

/// The paired ratio of `row` (of run `run`) over `other` (of run `other_run`), when both were
/// timed in the same rounds: one run, one cell.
fn paired_with(run: Which, row: &Row, other_run: Which, other: &Row) -> Option<PairedRatio> {
    if run != other_run || !verdict::are_paired(row, other) {
        return None;
    }
    verdict::paired_rows(row, other)
}

/// The open-loop cells a lesson can quote (`open[...]`, `closed_vs_open[...]`).
pub const OPEN_CELLS: [&str; 3] = [
    "redis/get/3B/tcp/c256/open",
    "redis/get/3B/tcp/c16/open",
    "memcached/get/3B/tcp/c256/open",
];

impl Runs<'_> {
    /// The main run's open-loop cell `id`, if it has one.
    fn open_cell(&self, id: &str) -> Option<OpenCell<'_>> {
        OpenCell::new(self.main.results)
            .into_iter()
            .find(|c| c.label == id)
    }

    /// Each of [`OPEN_CELLS`] as a Markdown table: a row per client, its p99 from the intended
    /// start at each offered rate (saturated: the rate it achieved), its highest rate with p99
    /// ≤ 1 ms and the highest it kept up with; a sentence where the run has no such cell.
    fn open_tables(&self) -> BTreeMap<&'static str, String> {
        (OPEN_CELLS.iter())
            .map(|&id| {
                let Some(cell) = self.open_cell(id) else {
                    return (id, format!("`{id}`: not measured in this run."));
                };
                let mut out = String::from("| client |");
                for rate in &cell.rates {
                    let _ = write!(out, " {}/s |", format::grouped(*rate as f64));
                }
                out.push_str(" p99 ≤ 1 ms up to | kept up to |\n|---|");
                out.push_str(&"--:|".repeat(cell.rates.len() + 2));
                out.push('\n');
                for line in &cell.lines {
                    let _ = write!(out, "| {} |", md_code(line.client));
                    for rate in &cell.rates {
                        let _ = write!(out, " {} |", open_words(line.rows.get(rate).copied()));
                    }
                    let within = line.highest_within(OPEN_P99_NS);
                    let within = within.map_or("–".to_string(), |r| format::grouped(r as f64));
                    let kept_up = line.highest_kept_up();
                    let kept_up = kept_up.map_or("–".to_string(), |r| format::grouped(r as f64));
                    let _ = writeln!(out, " {within} | {kept_up} |");
                }
                (id, out)
            })
            .collect()
    }

    /// For each of [`OPEN_CELLS`]: each client's closed-loop row of the same cell (without
    /// `/open`): its throughput and p99, beside its open-loop p99 at the highest offered rate
    /// not above that throughput, and where its open-loop curve ends.
    fn closed_vs_open(&self) -> BTreeMap<&'static str, String> {
        (OPEN_CELLS.iter())
            .map(|&id| {
                let closed_id = id.trim_end_matches("/open");
                let Some(cell) = self.open_cell(id) else {
                    return (id, format!("`{id}`: not measured in this run."));
                };
                let mut out = format!(
                    "| client | closed loop (`{closed_id}`): ops/s | its p99 | open loop: \
                     offered rate at or below that | p99 there | saturated at |\n\
                     |---|--:|--:|--:|--:|---|\n"
                );
                for line in &cell.lines {
                    let closed = (self.main.results.rows.iter())
                        .find(|r| r.cell == closed_id && r.client == line.client);
                    let ops = closed.and_then(Row::ops);
                    let closed_p99 = closed.and_then(|r| r.latency_ns).map(|l| l.p99);
                    let at = ops.and_then(|ops| {
                        (line.rows.iter().rev()).find(|(rate, _)| **rate as f64 <= ops)
                    });
                    let saturated = line.saturated_at().map_or("–".to_string(), |(r, a)| {
                        let achieved = a.map_or(String::new(), |a| {
                            format!(" (achieved {}/s)", format::grouped(a))
                        });
                        format!("{}/s{achieved}", format::grouped(r as f64))
                    });
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {} | {saturated} |",
                        md_code(line.client),
                        ops.map_or("–".to_string(), format::grouped),
                        closed_p99.map_or("–".to_string(), |ns| format::duration_ns(ns as f64)),
                        at.map_or("–".to_string(), |(r, _)| format::grouped(*r as f64)),
                        open_words(at.map(|(_, row)| *row)),
                    );
                }
                (id, out)
            })
            .collect()
    }
}

/// An open-loop row in a lesson's table: its p99, `saturated (achieved …/s)`, or why not.
fn open_words(row: Option<&Row>) -> String {
    let Some(row) = row else {
        return "–".to_string();
    };
    match (model::open_p99(row), row.open_loop) {
        (Some(p99), _) => format::duration_ns(p99 as f64),
        (None, Some(open)) if open.saturated && row.is_ok() => match open.achieved_rate {
            Some(a) => format!("saturated ({}/s)", format::grouped(a)),
            None => "saturated below".to_string(),
        },
        _ => model::status_word(row).to_string(),
    }
}

/// One lesson's body in Markdown (without its heading): its template with the run's tables and
/// the code links filled in.
fn lesson_body(lesson: &Lesson, runs: &Runs, code: &Code, prefix: Option<&str>) -> String {
    let mut env = minijinja::Environment::new();
    // A placeholder the file misspells is a bug, not an empty string.
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let links: BTreeMap<&str, String> = (lesson.code.iter())
        .map(|c| (c.anchor.as_str(), code.markdown(c, prefix)))
        .collect();
    let context = minijinja::context! {
        measured => runs.measured(lesson),
        tables => (lesson.tables.iter().zip(&lesson.readings))
            .map(|(t, reading)| runs.table(t, *reading))
            .collect::<Vec<_>>(),
        owners => lesson.owners.iter().map(|o| runs.owners(o)).collect::<Vec<_>>(),
        open => runs.open_tables(),
        closed_vs_open => runs.closed_vs_open(),
        congestion_control => runs.main.results.run.describe_congestion_control(),
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
    (1..)
        .zip(LESSONS.iter())
        .map(|(number, lesson)| {
            let body = lesson_body(lesson, runs, code, prefix);
            format!("{heading} {number}. {}\n\n{body}", lesson.title)
        })
        .collect()
}

/// The Lessons section of a run's `index.html`: the same Markdown as the documents, as HTML.
pub fn section(runs: &Runs, code: &Code, prefix: Option<&str>) -> Section {
    let lessons: Vec<_> = (LESSONS.iter())
        .map(|l| (l.id, &l.title, html(&lesson_body(l, runs, code, prefix))))
        .collect();
    let context = minijinja::context! { linked => prefix.is_some(), lessons };
    Section {
        id: "trade-offs".to_string(),
        title: "Lessons: the trade-offs, measured".to_string(),
        html: crate::template::render("lessons.html", &context),
    }
}

/// The section for `render_run`: this run, its `split/` run if it has one, code resolved in the
/// checkout around `dir` if there is one (no line links otherwise).
pub fn default_section(results: &Results, dir: &Path) -> Section {
    let split_dir = dir.join(SPLIT_DIR);
    let split = Results::load(&split_dir).ok();
    let root = source::find_root(dir);
    let prefix = (root.as_deref()).and_then(|root| source::prefix_to_root(dir, root));
    let name = |d: &Path| match &root {
        Some(root) => relative_source(d, root),
        None => format!("{}", d.join(RESULTS_FILE).display()),
    };
    let runs = Runs {
        main: RunRef::new(results, dir, name(dir)),
        split: (split.as_ref()).map(|split| RunRef::new(split, &split_dir, name(&split_dir))),
    };
    section(&runs, &Code::lenient(root.as_deref()), prefix.as_deref())
}

/// `reports/<id>/results.json`: the results file of `dir` as seen from `root` (else as given).
fn relative_source(dir: &Path, root: &Path) -> String {
    let file = dir.join(RESULTS_FILE);
    let inside = match (file.canonicalize(), root.canonicalize()) {
        (Ok(file), Ok(root)) => file.strip_prefix(&root).map(Path::to_path_buf).ok(),
        _ => None,
    };
    inside.unwrap_or(file).display().to_string()
}

/// The table of one client crate's README: its clients' rows (`clients` separated by spaces) in
/// the main cells.
pub fn measured_markdown(runs: &Runs, clients: &str) -> String {
    let clients: Vec<&str> = clients.split_whitespace().collect();
    let mut out = format!(
        "Measured in {}. Every number below is that file's; `make lessons` rewrites them.\n\n\
         | client | cell | ops/s | {COST_HEAD} |\n|---|---|--:|{COST_ALIGN}|\n",
        runs.main.describe()
    );
    let mut absent = Vec::new();
    for &(title, op, size, depth) in MAIN_CELLS {
        let mut rows: Vec<&Row> = (runs.main.results.rows.iter())
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
        }
        rows.sort_by_key(|r| (r.transport, clients.iter().position(|c| *c == r.client)));
        for row in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md_code(&row.client),
                md_code(&row.cell),
                Lookup::Found(row).ops_cell(None),
                cost_cells(Some(row), false)
            );
        }
    }
    if !absent.is_empty() {
        let _ = writeln!(out, "\nNot measured in this run: {}.", absent.join("; "));
    }
    out
}

/// The headline block of the top-level README: Redis over TCP, GET 3 B and the deepest
/// pipelined SET of the run, then GET 3 B with the most callers in flight, for the best
/// hand-written client, every library, and the baselines.
pub fn headline_markdown(runs: &Runs) -> String {
    let results = runs.main.results;
    let noise = results.noise().map(|n| n.median_spread);
    let redis_tcp = |r: &&Row| r.backend == Backend::Redis && r.transport == Transport::Tcp;
    let depth = (results.rows.iter().filter(redis_tcp))
        .filter(|r| r.op == Op::PipelineSet)
        .map(|r| r.pipeline)
        .max();
    let callers = (results.rows.iter().filter(redis_tcp))
        .filter(|r| r.op == Op::Get && r.offered_rate.is_none())
        .map(|r| r.concurrency)
        .max()
        .filter(|&c| c > 1);
    // Without a pipelined SET (or a concurrency cell) in the run, its column is empty: every row
    // says so.
    let columns = [
        (Op::Get, 1, 1),
        (Op::PipelineSet, depth.unwrap_or(0), 1),
        (Op::Get, 1, callers.unwrap_or(0)),
    ]
    .map(|(op, depth, callers)| {
        let rows = (results.rows.iter().filter(redis_tcp))
            .filter(|r| r.op == op && r.value_size == 3 && r.pipeline == depth)
            .filter(|r| r.concurrency == callers && r.offered_rate.is_none());
        Cell::new(rows.collect(), noise)
    });
    let callers = callers.map_or("C".to_string(), |c| c.to_string());
    let mut out = format!(
        "Redis over TCP, in {}: one caller on one connection for GET and the pipeline; {callers} \
         callers in flight in the last column, served the way each client serves many callers (a \
         thread and connection each, one multiplexed connection, or a pool: see each row's model \
         in the report).\n\n| client | GET 3 B, ops/s | × fastest hand-written | × \
         redis-benchmark | pipelined SET, depth {}, ops/s | × fastest hand-written | × \
         redis-benchmark | GET 3 B, {callers} callers, ops/s | × fastest hand-written | × \
         redis-benchmark | GET 3 B, 256 callers, open loop: highest offered rate with p99 ≤ 1 \
         ms |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
        runs.main.describe(),
        depth.map_or("1M".to_string(), format::depth)
    );
    let mut libraries: Vec<&str> = (columns.iter().flat_map(|c| &c.rows))
        .filter(|r| r.kind == Kind::Library)
        .map(|r| r.client.as_str())
        .collect();
    libraries.sort();
    libraries.dedup();
    let mut lines: Vec<(String, Role)> =
        vec![("fastest hand-written".into(), Role::BestHandWritten)];
    lines.extend(
        libraries
            .iter()
            .map(|name| (md_code(name), Role::Client(name))),
    );
    lines.push((
        format!("`{BASELINE_CLIENT}` (shipped with Redis; C)"),
        Role::Client(BASELINE_CLIENT),
    ));
    // A remote Redis has the network floor in its cells: the round trip to that host.
    let floor = if results.run.servers.redis.remote {
        "network floor (the round trip to the remote host)"
    } else {
        "loopback floor (the transport alone)"
    };
    lines.push((floor.into(), Role::Floor));
    // The open-loop cell of the same GET: each client's highest rate with p99 ≤ 1 ms.
    let open = (OpenCell::new(results).into_iter())
        .find(|c| c.backend == Backend::Redis && c.transport == Transport::Tcp);
    for (label, role) in lines {
        let _ = write!(out, "| {label} |");
        for cell in &columns {
            let (value, row) = role.show(cell);
            let measured = row.filter(|r| r.ops().is_some());
            let to_fastest = role.to_fastest(cell, measured);
            let to_baseline = match (measured, cell.baseline) {
                (Some(row), Some(base)) if std::ptr::eq(row, base) => paired::ratio(1.0),
                (Some(row), Some(_)) => (cell.against_baseline(row))
                    .map_or("–".to_string(), |judged| paired::quote(&judged)),
                _ => "–".to_string(),
            };
            let _ = write!(
                out,
                " {value} | {} | {} |",
                format::markdown(&to_fastest),
                format::markdown(&to_baseline)
            );
        }
        let _ = writeln!(out, " {} |", role.within_1ms(open.as_ref()));
    }
    let _ = write!(out, "| A/A: the cell's reference against itself |");
    for cell in &columns {
        let _ = write!(out, " {} | – | – |", aa_cell(cell));
    }
    out.push_str(" – |");
    let _ = write!(
        out,
        "\n\nEach cell timed its contenders in short alternating blocks, every round visiting each \
         once in a fresh random order: a ratio of two rows of one cell is the median of the \
         per-round ratios, with its 95 % bootstrap interval over the rounds. \"× fastest \
         hand-written\" is over the fastest hand-written client of the same column; a ratio \
         marked \"timed apart\" compares rows that did not share rounds (its range from both \
         rows' intervals). A client is named fastest only when the paired interval excludes 1 and \
         the difference exceeds the cell's A/A deviation (the last row). A/A check over the run: \
         {}. Run-to-run noise, for rows timed apart: {}. The last column is an open loop (lesson \
         15): the 256 callers share an offered rate, and latency runs from each request's \
         intended start; it names the highest rate of the cell's ladder at which the client's \
         p99 stayed at or below 1 ms.\n\nGet your own numbers: `make bench` \
         (this run took {}), then `make lessons RUN=<run-id>`. What each difference comes from, \
         with these numbers and the code that causes it: [docs/lessons.md](docs/lessons.md).\n",
        format::markdown(&paired::aa_summary_text(results)),
        format::markdown(&model::noise_text(results)),
        format::run_duration(results.run.duration_s)
    );
    out
}

/// A headline cell's A/A figure: `0.4 %: \`raw-tcp\` against itself, 1.00× (1.00–1.01×)`, the
/// prior where the cell had no A/A check, or that it had no paired rounds.
fn aa_cell(cell: &Cell) -> String {
    let Some(reference) = cell.reference else {
        return match cell.rows.is_empty() {
            true => "not measured in this run".to_string(),
            false => "no paired rounds".to_string(),
        };
    };
    match reference.aa_ratio {
        Some(aa) => format!(
            "{}: {} against itself, {}",
            paired::percent(verdict::aa_deviation(&aa)),
            md_code(&reference.client),
            format::markdown(&paired::paired_text(&aa))
        ),
        None => format::markdown(&paired::aa_text(reference)),
    }
}

/// A row of the headline table.
#[derive(Clone, Copy)]
enum Role<'n> {
    /// The hand-written client with the highest throughput in the cell, with every hand-written
    /// client this run cannot tell apart from it (named in the cell).
    BestHandWritten,
    /// A client or baseline by name.
    Client(&'n str),
    /// The loopback floor (named in the cell).
    Floor,
}

impl Role<'_> {
    /// The open-loop column: the role's highest offered rate with p99 ≤ 1 ms in `open` (the
    /// best hand-written client's, named), `none` when it had none, `–` where the role has no
    /// open loop.
    fn within_1ms(self, open: Option<&OpenCell>) -> String {
        let Some(open) = open else {
            return "not measured in this run".to_string();
        };
        let rate = |line: &OpenLine| line.highest_within(OPEN_P99_NS);
        let words = |rate: Option<u64>| {
            rate.map_or("none of the ladder's rates".to_string(), |r| {
                format!("{}/s", format::grouped(r as f64))
            })
        };
        match self {
            Role::Client(name) => match open.lines.iter().find(|l| l.client == name) {
                Some(line) => words(rate(line)),
                None => "– (no open loop)".to_string(),
            },
            Role::BestHandWritten => {
                let best = (open.lines.iter())
                    .filter(|l| l.kind == Kind::HandWritten)
                    .max_by_key(|l| rate(l));
                match best {
                    Some(line) if rate(line).is_some() => {
                        format!("{} {}", md_code(line.client), words(rate(line)))
                    }
                    _ => words(None),
                }
            }
            Role::Floor => "–".to_string(),
        }
    }

    /// What the role's table cell shows in `cell`, and the row it shows.
    fn show<'r>(self, cell: &Cell<'r>) -> (String, Option<&'r Row>) {
        let row = match self {
            Role::BestHandWritten => cell.best(Some(Kind::HandWritten)),
            Role::Client(name) => cell.client(name),
            Role::Floor => cell.rows.iter().copied().find(|r| r.is_floor()),
        };
        let ops = row.map_or(Lookup::Missing, Lookup::Found).ops_cell(None);
        let value = match (self, row.filter(|r| r.ops().is_some())) {
            (Role::Client(_), _) | (_, None) => ops,
            (Role::BestHandWritten, Some(_)) => {
                let leaders = cell.leaders(Some(Kind::HandWritten));
                let names: Vec<String> = leaders.iter().map(|r| md_code(&r.client)).collect();
                match names.as_slice() {
                    [one] => format!("{one} {ops}"),
                    _ => format!(
                        "{ops}: {} (indistinguishable in this run)",
                        names.join(", ")
                    ),
                }
            }
            (Role::Floor, Some(row)) => format!("{} {ops}", md_code(&row.client)),
        };
        (value, row)
    }

    /// The "× fastest hand-written" cell of the role's `row` in `cell` (plain text): its ratio to
    /// the fastest hand-written client, paired where both ran in the cell's rounds. The fastest's
    /// own cell gives the ratios of the clients named with it, which the rule could not separate
    /// from it.
    fn to_fastest(self, cell: &Cell, row: Option<&Row>) -> String {
        let (Some(row), Some(best)) = (row, cell.best(Some(Kind::HandWritten))) else {
            return "–".to_string();
        };
        if !std::ptr::eq(row, best) {
            return paired::quote(&cell.judge(row, best));
        }
        let others: Vec<String> = (cell.leaders(Some(Kind::HandWritten)).iter())
            .filter(|leader| !std::ptr::eq(**leader, best))
            .map(|leader| {
                format!(
                    "{} {}",
                    leader.client,
                    paired::quote(&cell.judge(leader, best))
                )
            })
            .collect();
        match others.is_empty() {
            true => paired::ratio(1.0),
            false => format!("1.00×; {}", others.join("; ")),
        }
    }
}

// --- make lessons ------------------------------------------------------------------------------

/// The client crates' READMEs under `root` that have a "Measured" block, each with the clients
/// its comment names (separated by spaces), by folder name.
pub fn client_readmes(root: &Path) -> Result<Vec<(PathBuf, String)>, Error> {
    let crates = root.join("crates");
    let entries = fs::read_dir(&crates).map_err(|source| Error::Read {
        path: crates.clone(),
        source,
    })?;
    let mut readmes: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path().join("README.md")))
        .filter(|path| path.is_file())
        .collect();
    readmes.sort();
    let mut out = Vec::new();
    for readme in readmes {
        let text = crate::read(&readme)?;
        let clients = (text.lines()).find_map(|line| {
            let clients = line.trim().strip_prefix(CLIENTS_COMMENT)?;
            Some(clients.strip_suffix("-->")?.trim().to_string())
        });
        out.extend(clients.map(|clients| (readme, clients)));
    }
    Ok(out)
}

/// `make lessons`: reads `<run_dir>/results.json` (and the split run: `split_dir`, else
/// `<run_dir>/split/` if it exists) and rewrites, under the repository `root` (default: found
/// around `run_dir`): the blocks of `docs/lessons.md`, each client crate's README block, the
/// top-level README's headline block, `<run_dir>/lessons.md`, and `<run_dir>/index.html` (with
/// `summary.md`). Every code anchor must resolve and every marker be there exactly once, or
/// nothing is written. Returns the files written, in order.
pub fn generate(
    run_dir: &Path,
    split_dir: Option<&Path>,
    root: Option<&Path>,
) -> Result<Vec<PathBuf>, Error> {
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => source::find_root(run_dir).ok_or_else(|| Error::NoSourceTree {
            start: run_dir.to_path_buf(),
        })?,
    };
    let results = Results::load(run_dir)?;
    let default_split = run_dir.join(SPLIT_DIR);
    let split_dir = split_dir.map(Path::to_path_buf).or_else(|| {
        default_split
            .join(RESULTS_FILE)
            .is_file()
            .then_some(default_split)
    });
    let split = split_dir.as_deref().map(Results::load).transpose()?;
    let runs = Runs {
        main: RunRef::new(&results, run_dir, relative_source(run_dir, &root)),
        split: (split.as_ref().zip(split_dir.as_deref()))
            .map(|(split, dir)| RunRef::new(split, dir, relative_source(dir, &root))),
    };
    let code = Code::strict(&root)?;
    let source = &runs.main.source;

    // Every document's new text first: a marker problem anywhere writes nothing.
    let docs = root.join(DOCS_FILE);
    let docs_prefix = source::prefix_to_root(docs.parent().unwrap_or(&root), &root);
    let bodies = lessons_markdown(&runs, &code, "##", docs_prefix.as_deref());
    let mut documents = vec![(docs, LESSONS.iter().map(|l| l.id).zip(bodies).collect())];
    for (readme, clients) in client_readmes(&root)? {
        documents.push((
            readme,
            vec![(MEASURED_BLOCK, measured_markdown(&runs, &clients))],
        ));
    }
    let headline = vec![(HEADLINE_BLOCK, headline_markdown(&runs))];
    documents.push((root.join("README.md"), headline));
    let mut texts = Vec::new();
    for (path, blocks) in documents {
        let mut text = crate::read(&path)?;
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
    let mut written = Vec::new();
    for (path, text) in texts {
        crate::write(&path, &text)?;
        written.push(path);
    }
    let lessons = section(&runs, &code, run_prefix.as_deref());
    crate::render_run_sections(run_dir, &results, &[lessons])?;
    written.extend([crate::INDEX_FILE, crate::SUMMARY_FILE].map(|file| run_dir.join(file)));
    Ok(written)
}

#[cfg(test)]
mod tests;
