//! The fifteen lessons: one Markdown file each under `crates/report/lessons/`, built into the
//! binary so a report renders them wherever it runs. No measured number belongs in those files:
//! numbers come from the run's results.json when the lessons are rendered.
//!
//! A lesson file is front matter between two `---` lines, then the lesson's Markdown:
//!
//! ```text
//! ---
//! title: TCP vs Unix socket
//! table: raw-tcp redis/get/3B/tcp, raw-unix redis/get/3B/unix
//! code: connect_unix crates/raw-unix/src/lib.rs
//! ---
//! **Question.** …
//!
//! {{ measured }}
//!
//! {{ tables[0] }}
//!
//! - {{ code.connect_unix }}: what these lines do.
//! ```
//!
//! Each `table:` line is one table, rows separated by `, `: a client and the bench's name of the
//! cell (backend/op/value size or pipeline depth/transport, then `/c<C>` for C callers), then
//! `split` for a row of the split-placement run. Its reading sentence names the fastest and the
//! slowest row by their paired wall-clock ratio: a question of time. A `table by instructions:`
//! line is a table whose question is the client's own work: its reading gives the rows' counted
//! instructions per operation first. An `owners:` line (rows as in a table) is a table of where
//! each row's counted instructions went, by owner, with its top functions (`owners[i]`). Each `code:` line names an anchor
//! (`// ANCHOR: <name>` … `// ANCHOR_END: <name>` in the file that follows). The body is a
//! minijinja template: `measured` is the paragraph naming the run(s), `tables[i]` the `i`-th table
//! with its reading, `owners[i]` the `i`-th owner table, `code.<anchor>` the link to the
//! anchor's lines; `open[<cell>]` and `closed_vs_open[<cell>]` are an open-loop cell's tables
//! (lesson 15).

use std::sync::LazyLock;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// Which of the two runs a row comes from (only lesson 9 uses the second).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The run the lessons are generated from (same-core placement in the reference).
    Main,
    /// The split-placement run (`SPLIT_RUN`, or `<run>/split/`).
    Split,
}

/// One row of results.json: a client in a cell (one caller, or C callers in a `/c<C>` cell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// Which run.
    pub run: Which,
    /// Client name as registered.
    pub client: String,
    /// The bench's cell name, e.g. `redis/get/3B/tcp`, `redis/pipeline_set/100000/tcp` or
    /// `redis/get/3B/tcp/c256`.
    pub cell: String,
}

/// A few lines of our code that cause a measured difference: an anchor in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CodeRef {
    /// The anchor's name, unique in the repository.
    pub anchor: String,
    /// Path from the repository root, for example `crates/raw-tcp/src/lib.rs`.
    pub path: String,
}

/// What a table's reading sentence answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A question of time (`table:`): the paired wall-clock ratio of the fastest row to the
    /// slowest.
    Time,
    /// A question of the client's own work (`table by instructions:`): the rows' counted
    /// instructions per operation first, then the paired wall-clock ratio.
    Work,
}

/// One trade-off.
#[derive(Debug, Clone)]
pub struct Lesson {
    /// Stable id: the file name, the marker name in docs (`lessons:<id>`) and the HTML anchor.
    pub id: &'static str,
    /// Title.
    pub title: String,
    /// The tables, each a list of rows; ratios are to the first measured row.
    pub tables: Vec<Vec<Pick>>,
    /// How each table (by index) is read: by time, or by the client's own work.
    pub readings: Vec<Reading>,
    /// The owner tables: where each row's counted instructions went (`owners[i]`).
    pub owners: Vec<Vec<Pick>>,
    /// The code that causes the difference.
    pub code: Vec<CodeRef>,
    /// The lesson's Markdown template (after the front matter).
    pub body: &'static str,
}

impl Lesson {
    /// Whether a table reads the split-placement run.
    pub fn uses_split(&self) -> bool {
        self.tables.iter().flatten().any(|p| p.run == Which::Split)
    }
}

macro_rules! lesson_files {
    ($($id:literal),* $(,)?) => {
        [$(($id, include_str!(concat!("../../lessons/", $id, ".md")))),*]
    };
}

/// The lesson files, in reading order.
const FILES: [(&str, &str); 15] = lesson_files![
    "1-transport",
    "2-writes",
    "3-buffered",
    "4-inline",
    "5-pipelining",
    "6-libraries",
    "7-async",
    "8-redis-memcached",
    "9-placement",
    "10-multiplexing",
    "11-transactions",
    "12-batch-reads",
    "13-meta-quiet",
    "14-cluster",
    "15-open-loop",
];

/// The fifteen lessons, in reading order. The files are part of the build, so a malformed one is a
/// bug that every test shows, not an input error.
pub static LESSONS: LazyLock<Vec<Lesson>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|&(id, text)| parse(id, text).unwrap_or_else(|why| panic!("lessons/{id}.md: {why}")))
        .collect()
});

fn parse(id: &'static str, text: &'static str) -> Result<Lesson, String> {
    let (front, body) = (text.strip_prefix("---\n"))
        .and_then(|rest| rest.split_once("\n---\n"))
        .ok_or("no front matter between `---` lines")?;
    let mut lesson = Lesson {
        id,
        title: String::new(),
        tables: Vec::new(),
        readings: Vec::new(),
        owners: Vec::new(),
        code: Vec::new(),
        body,
    };
    let picks = |value: &str| value.split(", ").map(pick).collect::<Result<Vec<_>, _>>();
    for line in front.lines() {
        let (key, value) = line.split_once(": ").unwrap_or((line, ""));
        let words: Vec<&str> = value.split_whitespace().collect();
        match (key, &words[..]) {
            ("title", _) => lesson.title = value.to_string(),
            ("table" | "table by instructions", _) => {
                lesson.tables.push(picks(value)?);
                lesson.readings.push(match key {
                    "table" => Reading::Time,
                    _ => Reading::Work,
                });
            }
            ("owners", _) => lesson.owners.push(picks(value)?),
            ("code", &[anchor, path]) => lesson.code.push(CodeRef {
                anchor: anchor.to_string(),
                path: path.to_string(),
            }),
            ("code", _) => return Err(format!("{line:?} is not `code: <anchor> <path>`")),
            _ => {
                return Err(format!(
                    "{line:?} is not `title:`, `table:`, `table by instructions:`, `owners:` or \
                     `code:`"
                ));
            }
        }
    }
    Ok(lesson)
}

/// `<client> <cell>`, or `<client> <cell> split` for a row of the split-placement run.
fn pick(row: &str) -> Result<Pick, String> {
    let (client, cell, run) = match row.split_whitespace().collect::<Vec<_>>()[..] {
        [client, cell] => (client, cell, Which::Main),
        [client, cell, "split"] => (client, cell, Which::Split),
        _ => {
            return Err(format!(
                "table row {row:?} is not `<client> <cell> [split]`"
            ));
        }
    };
    let (client, cell) = (client.to_string(), cell.to_string());
    Ok(Pick { run, client, cell })
}

/// The cells a crate's "Measured" table shows, in this order: (title, op, value size or `None`
/// for any, depth). Those absent from a run are named under the table by their title.
pub const MAIN_CELLS: &[(&str, &str, Option<u64>, u64)] = &[
    ("GET (hit) 3 B", "get", Some(3), 1),
    ("GET (hit) 1 MiB", "get", Some(MIB), 1),
    ("GET (miss)", "get_miss", None, 1),
    ("SET 3 B", "set", Some(3), 1),
    ("SET with expiry 100 KiB", "set_ex", Some(100 * KIB), 1),
    ("Pipelined SET, depth 1k", "pipeline_set", Some(3), 1_000),
    (
        "Pipelined SET, depth 100k",
        "pipeline_set",
        Some(3),
        100_000,
    ),
    (
        "Pipelined SET, depth 1M",
        "pipeline_set",
        Some(3),
        1_000_000,
    ),
];
