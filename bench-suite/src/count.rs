//! What a client's own code costs, counted: user-space instructions per operation under
//! valgrind's cachegrind, which runs the client (this program again, as a child) on a simulated
//! CPU and counts every instruction it retires. The server runs natively and the kernel is not
//! counted, so the figure is the client's work alone, the same on any machine and in any slow
//! period: a client that does more work and a client that waits differently are told apart,
//! which wall-clock time and tick-sampled CPU time cannot do.
//!
//! **Only the calls are counted.** The child connects, then makes its calls in three phases of
//! N calls each, and calls [`kvbench_count_phase`] before each phase and after the last.
//! valgrind runs it under callgrind with `--dump-before=kvbench_count_phase`: every entry to that
//! function writes the instructions since the last one to a file of their own. The three middle
//! files are the three phases; valgrind's start, the program's, the connection and the exit
//! fall outside them. So a phase over N is the instructions of one call, and the three phases
//! are three measures of the same thing: their spread is the count's own. A blocking client's is
//! zero or nearly (the same instructions every call); an async client's includes its runtime's
//! polling, which depends on when replies arrive under valgrind's slowdown, so its spread is
//! measured and reported, not assumed. (The alternative, a difference of two runs of N and 2N
//! calls under cachegrind, cancels the set-up just as well but takes two runs of everything;
//! valgrind's client requests would need its C macros in every client's process.) The dumps also
//! say which functions the instructions went to ([`Dump`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use kvbench_core::{ClientSpec, Endpoint, Options};
use serde::{Deserialize, Serialize};

use crate::callers::Callers;
use crate::cell::bench_options;
use crate::drivers::{Driver, Workload};
use crate::matrix::{Cell, full_matrix};

/// The environment variable that makes the bench process a counted child: one [`Job`], in JSON.
pub const COUNT_VAR: &str = "KVBENCH_COUNT";

/// Items a counted call of a deeper pipeline sends: its first ones. A million items through a
/// library take about 15 s a call under valgrind (fred's 100,000 over two minutes for a child's
/// four calls), and per item a pipeline of 10,000 runs the same code as a deeper one.
pub const COUNTED_ITEMS: usize = 10_000;

/// Instructions one counted phase may spend on its calls: about a tenth of a second under
/// callgrind. A blocking client retires the same instructions every call, so a few calls are
/// already exact; an async client's phases differ a little, and their spread says how much.
/// Four times as many took twice as long and moved few counts beyond their spread (the numbers:
/// **Counted passes are budgeted** in the bench-suite README).
const INSTRUCTIONS_PER_PHASE: f64 = 5e6;

/// The most calls a counting run makes (one caller's GET 3 B: a few thousand instructions a
/// call, so a few thousand calls are already exact to the instruction).
const MOST_CALLS: u64 = 2_000;

/// The fewest calls one caller makes in a phase: an async client's runtime and a library's
/// buffers do some of their work every few calls, which a phase of one or two calls (100 items
/// each, or 1 MiB) would catch or miss whole.
const LEAST_CALLS: u64 = 5;

/// Items in a phase past which one caller's calls need no floor: a pipeline of 1,000 items or
/// more already does a buffer's periodic work many times inside one call, so five calls of a
/// deep pipeline's counted 10,000 items only made its children longer (the deep cells' first
/// visits: **Counted passes are budgeted** in the bench-suite README).
const LEAST_ITEMS: u64 = 500;

/// The fewest calls each of many callers makes in a phase: their threads' scheduling moves the
/// count a little, and more calls spread it thinner. Ten each instead took about as long at 256
/// callers (a child's time there is mostly its start: valgrind, the callers, their connections).
const LEAST_CALLS_OF_MANY: u64 = 20;

/// Calls in a phase of a client slow by design (about 40 ms a call, waiting): it runs its fast
/// twin's code, so a few calls count it exactly.
pub const SLOW_CALLS: u64 = 5;

/// How long one counted child may take before it is stopped.
const RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// One (cell, client) pair, described for the counted child.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// The client's name.
    pub client: String,
    /// The cell's id.
    pub cell: String,
    /// The cell's callers (1, or the concurrency cell's).
    pub callers: usize,
    /// The server, over TCP.
    pub tcp: Option<String>,
    /// The server, over a Unix socket.
    pub unix: Option<PathBuf>,
    /// The servers' key prefix (empty on private servers).
    pub prefix: String,
    /// Items per call, when the contender uses only the first ones of the cell's.
    pub first: Option<usize>,
    /// Calls each caller makes.
    pub calls: u64,
}

/// A pair's count: instructions per operation (per item in a cell of many items), and how far
/// its phases were apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Count {
    /// User-space instructions per operation.
    pub per_op: f64,
    /// The phases' highest count less their lowest, over their mean: 0 for a client that does
    /// the same work every call.
    pub spread: f64,
    /// Calls per caller in each phase (N).
    pub calls: u64,
    /// Instructions per operation by whose code ran them ([`owner_of`]), largest first.
    pub owners: Vec<(&'static str, f64)>,
    /// The functions that ran the most instructions per operation (their own, not their
    /// callees'), largest first.
    pub functions: Vec<(String, f64)>,
}

/// Functions kept per count ([`Count::functions`]).
pub const TOP_FUNCTIONS: usize = 8;

/// Whose code a function (callgrind's demangled name) is: `ours` (this workspace), a library
/// (`redis`, `fred`, `memcache`, and what they build on), `tokio`, `std` (with `core` and
/// `alloc`: generic code of theirs instantiated by any of the others lands here too),
/// `allocator` (glibc's malloc family) or `libc` (glibc's memcpy and the system calls' stubs).
pub fn owner_of(function: &str) -> &'static str {
    let crate_name = function
        .trim_start_matches('<')
        .split("::")
        .next()
        .unwrap_or(function);
    match crate_name {
        name if name.starts_with("kvbench") => "ours",
        "std" | "core" | "alloc" => "std",
        "tokio" | "mio" => "tokio",
        _ if function.contains("::") => "library",
        name if name.contains("malloc") || name.contains("free") || name.starts_with("_int_") => {
            "allocator"
        }
        _ => "libc",
    }
}

/// Phases of counted calls a child makes.
pub const PHASES: usize = 3;

/// Marks the start of a counted phase (and the end of the last): callgrind dumps its counts on
/// every entry (`--dump-before`). It does nothing, and must stay a function of its own under
/// this exact name.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kvbench_count_phase(phase: u64) -> u64 {
    std::hint::black_box(phase)
}

/// What a run counts with: valgrind, the program to count (this bench program), and how many
/// children may run at once.
#[derive(Debug, Clone)]
pub struct Counter {
    /// valgrind.
    pub valgrind: Valgrind,
    /// The program valgrind runs as the counted child: this bench program, which reads
    /// [`COUNT_VAR`].
    pub program: PathBuf,
    /// Children at once: the CPUs (a count does not depend on what else runs).
    pub parallel: usize,
}

impl Counter {
    /// Counts `job`'s pair in `dir` ([`Valgrind::count`]).
    pub fn count(&self, dir: &Path, job: &Job, ops_per_call: u64) -> Result<Count, String> {
        self.valgrind.count(&self.program, dir, job, ops_per_call)
    }
}

/// valgrind, found and working.
#[derive(Debug, Clone)]
pub struct Valgrind {
    program: PathBuf,
    /// Its version, as it prints it (`valgrind-3.19.0`).
    pub version: String,
}

impl Valgrind {
    /// valgrind on the `PATH` (or `VALGRIND`), with its version; the reason when there is none.
    pub fn find() -> Result<Valgrind, String> {
        let program = PathBuf::from(std::env::var_os("VALGRIND").unwrap_or("valgrind".into()));
        let output = Command::new(&program)
            .arg("--version")
            .output()
            .map_err(|err| {
                format!("valgrind not found ({err}); bench-suite/setup.sh installs it")
            })?;
        let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success() || version.is_empty() {
            return Err(format!("`{} --version` failed", program.display()));
        }
        Ok(Valgrind { program, version })
    }

    /// Counts `job`'s pair: `program` (this bench program, which reads [`COUNT_VAR`]) under
    /// callgrind, in `dir` (its dump files go there, and are removed). `ops_per_call` is the
    /// operations one call of every caller does together (items, times the callers).
    pub fn count(
        &self,
        program: &Path,
        dir: &Path,
        job: &Job,
        ops_per_call: u64,
    ) -> Result<Count, String> {
        let phases = self.phases(program, dir, job)?;
        let ops = (job.calls.max(1) * ops_per_call.max(1)) as f64;
        let per_op: Vec<f64> = phases
            .iter()
            .map(|phase| phase.total as f64 / ops)
            .collect();
        let mean = per_op.iter().sum::<f64>() / per_op.len() as f64;
        let (low, high) =
            (per_op.iter()).fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        if mean <= 0.0 {
            return Err("the counted phases retired no instructions".into());
        }
        // Where the instructions went: every phase's functions together, per operation.
        let mut functions: std::collections::HashMap<&str, f64> = Default::default();
        for phase in &phases {
            for (name, n) in &phase.functions {
                *functions.entry(name).or_default() += *n as f64 / ops / phases.len() as f64;
            }
        }
        let mut owners: Vec<(&'static str, f64)> = Vec::new();
        for (name, n) in &functions {
            match owners
                .iter_mut()
                .find(|(owner, _)| *owner == owner_of(name))
            {
                Some((_, total)) => *total += n,
                None => owners.push((owner_of(name), *n)),
            }
        }
        let mut functions: Vec<(String, f64)> = functions
            .into_iter()
            .map(|(name, n)| (name.to_string(), n))
            .collect();
        let largest_first = |a: &f64, b: &f64| b.total_cmp(a);
        functions.sort_by(|a, b| largest_first(&a.1, &b.1).then_with(|| a.0.cmp(&b.0)));
        functions.truncate(TOP_FUNCTIONS);
        owners.sort_by(|a, b| largest_first(&a.1, &b.1));
        Ok(Count {
            per_op: mean,
            spread: (high - low) / mean,
            calls: job.calls,
            owners,
            functions,
        })
    }

    /// One counted child: its [`PHASES`] phases, each less its empty round, with its functions'
    /// own instructions.
    pub fn phases(&self, program: &Path, dir: &Path, job: &Job) -> Result<Vec<Dump>, String> {
        let json = serde_json::to_string(job).map_err(|err| err.to_string())?;
        std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        // A name of this child's own: children of one run may count at once.
        static CHILDREN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let child = CHILDREN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let out = dir.join(format!("callgrind.{}.{child}.out", std::process::id()));
        let mut command = Command::new(&self.program);
        command
            .args(["--tool=callgrind", "--dump-before=kvbench_count_phase"])
            .arg(format!("--callgrind-out-file={}", out.display()))
            // valgrind's default of 500 threads is too few for a pool's helper threads beside
            // 256 callers' own.
            .arg(format!("--max-threads={}", 500 + 4 * job.callers))
            .arg(program)
            .env(COUNT_VAR, json);
        let finished = crate::child::run_within(&mut command, RUN_DEADLINE)
            .map_err(|err| format!("starting valgrind: {err}"))?;
        let status =
            (finished.status).ok_or_else(|| format!("a counted child took over {RUN_DEADLINE:?}"));
        let text = finished.stderr;
        // Dump k (from 1) holds what ran before the k-th mark: 1 is the start, then each
        // phase's empty round and its round of calls.
        let read = |k: usize| -> Result<Dump, String> {
            let file = PathBuf::from(format!("{}.{k}", out.display()));
            let text = std::fs::read_to_string(&file)
                .map_err(|err| format!("{}: {err}", file.display()))?;
            Dump::parse(&text).ok_or_else(|| format!("{}: no totals", file.display()))
        };
        let dumps: Vec<Result<Dump, String>> = (0..PHASES)
            .map(|phase| Ok(read(2 * phase + 3)?.less(&read(2 * phase + 2)?)))
            .collect();
        remove_dumps(&out);
        let status = status?;
        if !status.success() {
            let last = (text.lines().rev())
                .find(|l| !l.starts_with("==") && !l.trim().is_empty())
                .unwrap_or("");
            return Err(format!("the counted child failed ({status}): {last}"));
        }
        dumps.into_iter().collect()
    }
}

/// Removes `out` and its numbered dumps.
fn remove_dumps(out: &Path) {
    let (Some(dir), Some(name)) = (out.parent(), out.file_name()) else {
        return;
    };
    let name = name.to_string_lossy().to_string();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// One callgrind dump: its total, and each function's own instructions (exclusive: not those of
/// what it called).
#[derive(Debug, Clone, Default)]
pub struct Dump {
    /// Every instruction of the dump.
    pub total: u64,
    /// (function, own instructions), largest first.
    pub functions: Vec<(String, u64)>,
}

impl Dump {
    /// This dump with `other`'s counts taken away (a phase less its empty round).
    pub fn less(&self, other: &Dump) -> Dump {
        let theirs: std::collections::HashMap<&str, u64> = (other.functions.iter())
            .map(|(name, n)| (name.as_str(), *n))
            .collect();
        let mut functions: Vec<(String, u64)> = (self.functions.iter())
            .map(|(name, n)| {
                (
                    name.clone(),
                    n.saturating_sub(theirs.get(name.as_str()).copied().unwrap_or(0)),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Dump {
            total: self.total.saturating_sub(other.total),
            functions,
        }
    }

    /// Reads callgrind's format: `fn=(id) name` opens a function (a name is given once, then
    /// its id alone), and cost lines (`<line> <Ir>`, or `+n <Ir>` with compressed positions)
    /// add to it; `calls=` lines are followed by the callee's inclusive cost, which is not the
    /// caller's own; `totals:` or `summary:` is the whole.
    pub fn parse(text: &str) -> Option<Dump> {
        let mut names: std::collections::HashMap<String, String> = Default::default();
        let mut own: std::collections::HashMap<String, u64> = Default::default();
        let mut total = None;
        let mut current: Option<String> = None;
        let mut skip_next = false;
        for line in text.lines() {
            if let Some(rest) = line
                .strip_prefix("totals:")
                .or(line.strip_prefix("summary:"))
            {
                total = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            } else if let Some(rest) = line.strip_prefix("fn=") {
                current = Some(resolve(&mut names, rest));
            } else if let Some(rest) = line.strip_prefix("cfn=") {
                // A called function's name may be given here first; fn= then names it by id.
                resolve(&mut names, rest);
            } else if line.starts_with("calls=") {
                skip_next = true;
            } else if line
                .starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-' || c == '*')
            {
                if std::mem::take(&mut skip_next) {
                    continue;
                }
                let cost = line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse::<u64>().ok());
                if let (Some(function), Some(cost)) = (&current, cost) {
                    *own.entry(function.clone()).or_default() += cost;
                }
            }
        }
        let mut functions: Vec<(String, u64)> = own.into_iter().collect();
        functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Some(Dump {
            total: total?,
            functions,
        })
    }
}

/// A name of callgrind's compressed form: `(7) name` defines id 7, `(7)` refers to it.
fn resolve(names: &mut std::collections::HashMap<String, String>, text: &str) -> String {
    let text = text.trim();
    match text.strip_prefix('(').and_then(|rest| rest.split_once(')')) {
        Some((id, "")) => names.get(id).cloned().unwrap_or_else(|| format!("({id})")),
        Some((id, name)) => {
            let name = name.trim().to_string();
            names.insert(id.to_string(), name.clone());
            name
        }
        None => text.to_string(),
    }
}

/// Calls per caller in each phase of a counted child of `cell`: about [`INSTRUCTIONS_PER_PHASE`]
/// over a pessimistic guess of one call's instructions (a library's ~20,000 per item, and a copy
/// of every value byte), at least [`LEAST_CALLS`] (fewer once they carry [`LEAST_ITEMS`];
/// [`LEAST_CALLS_OF_MANY`] for many callers) and at most [`MOST_CALLS`].
pub fn calls_for(cell: &Cell, items_per_call: usize) -> u64 {
    let items_per_call = items_per_call.max(1) as u64;
    let per_item = 20_000.0 + cell.value_size as f64;
    let per_call = per_item * items_per_call as f64 * cell.concurrency as f64;
    let least = if cell.concurrency > 1 {
        LEAST_CALLS_OF_MANY
    } else {
        LEAST_CALLS.min(LEAST_ITEMS.div_ceil(items_per_call))
    };
    ((INSTRUCTIONS_PER_PHASE / per_call) as u64).clamp(least, MOST_CALLS)
}

/// The child's side: connects `job`'s client to its server, makes one warm-up phase of calls,
/// then [`PHASES`] phases between calls of [`kvbench_count_phase`], and exits. No clock is read
/// and nothing is recorded: every instruction of a phase is the client's, or the loop's own few.
pub fn run_job(json: &str, clients: &[ClientSpec]) -> Result<(), String> {
    run_counted(json, clients).map_err(|err| err.to_string())
}

fn run_counted(json: &str, clients: &[ClientSpec]) -> Result<(), Box<dyn std::error::Error>> {
    let job: Job = serde_json::from_str(json).map_err(|err| err.to_string())?;
    let spec = (clients.iter())
        .find(|spec| spec.name == job.client)
        .ok_or_else(|| format!("no client named {}", job.client))?;
    let cell = (full_matrix(&[job.callers]).into_iter())
        .find(|cell| cell.id() == job.cell)
        .ok_or_else(|| format!("no cell {}", job.cell))?;
    let endpoint = match (job.tcp, job.unix) {
        (Some(addr), _) => Endpoint::Tcp(addr),
        (None, Some(path)) => Endpoint::Unix(path),
        (None, None) => return Err("no endpoint".into()),
    };
    let prefix = job.prefix.as_bytes();
    let w = &Workload::new(cell, |key| [prefix, key].concat());
    let options: Options = bench_options();
    // The warm-up grows every buffer to its size, so that the counted phases repeat. Each
    // phase is an empty round (no calls: the harness's own set-up of a round, which for many
    // callers starts a thread or task each) and then a round of the calls; the parent
    // subtracts the first from the second.
    let mut run: Box<dyn FnMut(u64) -> kvbench_core::Result<()>> = if cell.concurrency > 1 {
        let mut callers = Callers::connect(spec, &endpoint, &options, cell.concurrency, w)?;
        Box::new(move |calls| callers.round(w, calls, false).map(|_| ()))
    } else {
        let all = w.args();
        let args = match job.first {
            Some(n) => all.first(n),
            None => all,
        };
        let mut driver = Driver::connect(spec, &endpoint, &options)?;
        Box::new(move |calls| driver.repeat(w, &args, calls))
    };
    run(job.calls)?;
    for phase in 0..PHASES as u64 {
        kvbench_count_phase(2 * phase);
        run(0)?;
        kvbench_count_phase(2 * phase + 1);
        run(job.calls)?;
    }
    kvbench_count_phase(2 * PHASES as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(id: &str, items_per_call: usize) -> u64 {
        let cells = full_matrix(&[16, 256]);
        let cell = (cells.iter().find(|cell| cell.id() == id)).expect("a cell of the full matrix");
        calls_for(cell, items_per_call)
    }

    #[test]
    fn a_phase_is_sized_by_its_instructions_with_a_floor_of_calls_or_items() {
        // Five million instructions over 20,003 per GET of 3 B.
        assert_eq!(calls("redis/get/3B/tcp", 1), 249);
        // A GET of 1 MiB and a batch of 100 would fit one or two calls: the floor of five.
        assert_eq!(calls("redis/get/1MiB/tcp", 1), LEAST_CALLS);
        assert_eq!(calls("redis/get_many/100/3B/tcp", 100), LEAST_CALLS);
        // A pipeline of 1,000 items or a deep one's counted 10,000 is past the floor in items.
        assert_eq!(calls("redis/pipeline_set/1000/tcp", 1_000), 1);
        assert_eq!(calls("redis/pipeline_set/1000000/tcp", COUNTED_ITEMS), 1);
        // Many callers: the budget over all of them, at least twenty calls each.
        assert_eq!(calls("redis/get/3B/tcp/c16", 1), LEAST_CALLS_OF_MANY);
        assert_eq!(calls("redis/get/3B/tcp/c256", 1), LEAST_CALLS_OF_MANY);
    }
}
