//! The `results.json` schema: one set of serde types that the bench writes and every reader (the
//! report, `make compare`, the lessons) reads, so the two sides cannot drift apart.
//!
//! Reading is strict. A field this crate does not know, a status or kind outside its enums, or a
//! file without the current [`SCHEMA_VERSION`] is an error that names the field, never a value
//! kept on the side. `reports/results.schema.json` is generated from these types for other tools
//! (`make schema`); a test checks that the committed file matches the types and that the
//! committed reference run validates against it.
//!
//! Every time interval says what it is ([`Interval`]): criterion's 95 % confidence interval of the
//! median, or the range of a few runs. A row measured once has none. [`verdict`] holds the one rule
//! every sentence that names a faster side follows.
#![deny(missing_docs)]

pub mod verdict;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of this schema, written in every file. Version 3 times every contender of a cell in
/// paired rounds: each row carries its throughput in every round, its ratio to the cell's
/// reference contender with a paired interval, and the cell's A/A ratio ([`PairedRatio`]); the run
/// carries the A/A summary. Version 2 made every interval say what it is, added repeated runs,
/// the user/system CPU split and the concurrency fields, and made reading strict (version 1 files
/// had no `schema_version`).
pub const SCHEMA_VERSION: u32 = 3;

/// File name of a run's results inside its folder.
pub const RESULTS_FILE: &str = "results.json";

/// Name of the redis-benchmark rows: the same-run baseline every ratio column refers to.
pub const REDIS_BENCHMARK: &str = "redis-benchmark";
/// Name of the memaslap rows (Debian's `memcaslap`): the same-run baseline of memcached's TCP
/// cells, as redis-benchmark is Redis's.
pub const MEMASLAP: &str = "memaslap";
/// Name of the loopback floor rows: a server that does no work, so the transport alone.
pub const LOOPBACK_FLOOR: &str = "loopback-floor";
/// Name of the network floor rows, which stand in for the loopback floor in the cells of a
/// remote server ([`Server::remote`]): the round trip of its smallest command, so the network
/// alone.
pub const NETWORK_FLOOR: &str = "network-floor";

/// The whole file: what ran and where, then one row per (cell, client) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Results {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// When, where and how the run was made.
    pub run: Run,
    /// One row per (cell, client) pair, baselines included, in the order the cells ran.
    pub rows: Vec<Row>,
}

/// The run's environment and settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Folder name under `reports/`.
    pub id: String,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    /// RFC 3339 UTC end time (null while running, or if the run was interrupted).
    pub finished_at: Option<String>,
    /// `git rev-parse HEAD`, with `-dirty` if tracked code outside `reports/` had changed.
    pub git_sha: String,
    /// How much of the matrix ran, with which timing.
    pub mode: Mode,
    /// `rustc --version`.
    pub rustc: String,
    /// Kernel release.
    pub kernel: String,
    /// The kernel's TCP congestion control (`net.ipv4.tcp_congestion_control`), which every
    /// loopback connection of the run used, the servers' included; null when unreadable (or in
    /// runs older than this field). It matters for large replies: `bbr` paces each connection
    /// by its own bandwidth estimate, so two connections of one client can differ by a half.
    #[serde(default)]
    pub tcp_congestion_control: Option<String>,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cores: u32,
    /// Where the servers and the bench ran.
    pub placement: Placement,
    /// Both servers.
    pub servers: Servers,
    /// Wall time of the run so far, seconds.
    pub duration_s: f64,
    /// How the cells were timed: the paired rounds' settings (block length, rounds, budgets)
    /// and the exceptions to them.
    pub method: String,
    /// The A/A check over the run's cells: how far each cell's reference contender, timed twice
    /// in the same rounds, was from itself. Null when no cell had one (a quick or test run may
    /// leave it out).
    pub aa: Option<AaSummary>,
    /// The valgrind that counted `instructions_per_op` (`valgrind-3.19.0`); null when none did
    /// (the notes say why).
    #[serde(default)]
    pub valgrind: Option<String>,
    /// Filters the run was given (`CLIENTS`, `CELLS`, `REPEAT`, `REPEAT_CELLS`).
    pub filters: String,
    /// How many times the repeated cells ran (`REPEAT`), each against freshly started servers.
    pub repeat: u32,
    /// Seed of the order clients ran in within each cell (shuffled per cell and run).
    pub order_seed: u64,
    /// What the reader should know about the whole run: a measurement missing from every row,
    /// a server restarted, a fault injected by a test.
    pub notes: Vec<String>,
    /// Library behaviours the suite knows to be wrong, with the version they were seen in.
    pub known_defects: Vec<KnownDefect>,
}

/// The run's measured noise floor: the A/A ratios of its cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AaSummary {
    /// Cells with an A/A ratio.
    pub cells: u32,
    /// Median over those cells of |A/A ratio - 1| (0.004 = 0.4 %).
    pub median_deviation: f64,
    /// The largest |A/A ratio - 1|.
    pub worst_deviation: f64,
    /// The cell with the largest deviation.
    pub worst_cell: String,
    /// Cells whose |A/A ratio - 1| is at most 1 %.
    pub within_1_percent: u32,
    /// Cells whose |A/A ratio - 1| is at most 2 %.
    pub within_2_percent: u32,
}

/// A ratio of throughputs from paired rounds: in each round both sides ran one block, back to
/// back against the same server, and the round gives one ratio. The median of those ratios, and
/// its 95 % interval from a bootstrap over the rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairedRatio {
    /// Median of the per-round ratios (above 1: faster than the other side).
    pub median: f64,
    /// Lower end of the 95 % bootstrap interval of that median.
    pub lower: f64,
    /// Upper end.
    pub upper: f64,
    /// Rounds it stands on.
    pub rounds: u32,
}

/// A library's known wrong behaviour on some input, as the hostile-server tests assert it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnownDefect {
    /// Client name as registered.
    pub client: String,
    /// Library and version, for example `fred 10.1.0`.
    pub library: String,
    /// The input that triggers it.
    pub input: String,
    /// What happens.
    pub outcome: String,
}

/// How much of the matrix a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The whole matrix, full timing.
    Full,
    /// A representative subset, short timing.
    Quick,
    /// criterion's `--test`: every pair verified and run once, nothing timed.
    Test,
}

/// Where the servers and the bench were pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// The placement setting.
    pub mode: PlacementMode,
    /// CPU of every private server (and the loopback floor's server thread), if pinned. A
    /// remote server's ([`Server::remote`]) placement is unknown.
    pub server_cpu: Option<u32>,
    /// CPU of the bench (every client thread and runtime), if pinned.
    pub client_cpu: Option<u32>,
}

/// `PLACEMENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementMode {
    /// Servers and bench on one CPU: a round trip needs no cross-CPU wake-up.
    SameCore,
    /// Servers on one CPU, bench on another.
    Split,
    /// Not pinned: the scheduler decides, differently from run to run.
    None,
}

/// Both servers of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Servers {
    /// Redis.
    pub redis: Server,
    /// memcached.
    pub memcached: Server,
    /// The Redis Cluster, in a run with cluster cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_cluster: Option<ClusterRecord>,
}

/// A Redis Cluster: its nodes' version and command lines (or the URL it was given by), how it
/// was joined, and which slots each node served when the run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterRecord {
    /// The nodes, as one server: version, every node's command line (`;`-separated), external.
    pub server: Server,
    /// The `redis-cli --cluster create …` command that joined a private cluster.
    pub create_command: Option<String>,
    /// The primaries, in the order of their slots.
    pub nodes: Vec<ClusterNodeRecord>,
}

/// One primary of a Redis Cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterNodeRecord {
    /// `host:port`, as the cluster announces it.
    pub addr: String,
    /// Its node id.
    pub id: String,
    /// The slot ranges it served, `first-last` (`0-5460`).
    pub slots: Vec<String>,
}

/// One server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Version it reported.
    pub version: String,
    /// Command lines it was started with, or the URL it was given by.
    pub config: String,
    /// True if given by URL (`REDIS_URL`, `MEMCACHED_URL`), not started by the suite.
    pub external: bool,
    /// True if given by a URL whose host is not this machine's loopback (127.0.0.0/8, `::1`,
    /// `localhost`) nor a Unix socket: its placement is unknown, and its cells have a network
    /// floor instead of the loopback floor. Absent (false) in files written before it existed.
    #[serde(default)]
    pub remote: bool,
    /// A remote server's network floor, measured once at the start of the run; null for a
    /// server on this machine (or if the run could not measure it: its notes say why).
    #[serde(default)]
    pub network_floor: Option<NetworkFloor>,
}

/// The round trip of a server's smallest command (Redis `PING` → `+PONG`, memcached `version`
/// → `VERSION …`) over a raw connection, single calls timed one by one after a warm-up: what
/// any client of that server pays before doing any work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkFloor {
    /// The address connected to: the URL's host, resolved (`192.0.2.7:6379`).
    pub address: String,
    /// The command timed, as sent (`PING`, `version`).
    pub command: String,
    /// Untimed calls before the timed ones.
    pub warm_up: u64,
    /// Calls timed.
    pub calls: u64,
    /// Median round trip, ns.
    pub median_ns: u64,
    /// 99th percentile round trip, ns.
    pub p99_ns: u64,
}

/// The server a row's client spoke to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Redis.
    Redis,
    /// memcached.
    Memcached,
    /// Redis Cluster: several Redis primaries sharing the hash slots.
    RedisCluster,
}

/// How the bytes travelled.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// TCP over loopback (or the address of an external server).
    Tcp,
    /// A Unix domain socket.
    Unix,
}

/// The operation a cell measures.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// GET of a key that holds a value of the cell's size.
    Get,
    /// GET of a key that does not exist.
    GetMiss,
    /// SET of a value of the cell's size.
    Set,
    /// SET with a 100 s expiry (memcached: `set` with an exptime).
    SetEx,
    /// `set_many` of `pipeline` items: one key over and over on one server (the classic
    /// pipelined benchmark), distinct keys spread over every slot on a Redis Cluster.
    PipelineSet,
    /// `set_many` of `pipeline` distinct keys, each with its own value: the Redis Cluster's
    /// pipelined SET on one server, so that the two differ only by the cluster.
    PipelineSetDistinct,
    /// INCR of a counter the cell stores first (memcached: `incr <key> 1`).
    Incr,
    /// `get_many` of `pipeline` distinct keys in one command: Redis `MGET`, memcached
    /// `get k1 … kN`. Throughput counts keys.
    GetMany,
    /// `get_many_pipelined` of `pipeline` distinct keys: a GET each, all written before any
    /// reply is read (a client without pipelining sends one after another). Throughput counts
    /// keys.
    GetManyPipelined,
    /// `hset_many` of `pipeline` fields into one hash, then `hgetall` of it (Redis only).
    /// Throughput counts fields.
    Hash,
    /// `pipeline` SETs of distinct keys, one `set` call after another (Redis only): the plain
    /// way of the transaction cells. Throughput counts SETs.
    TransactionPlain,
    /// The same SETs inside `MULTI` … `EXEC` (`transaction`; Redis only). Throughput counts
    /// SETs.
    TransactionMulti,
    /// The same SETs in one `set_many` (pipelined where the client pipelines; Redis only).
    /// Throughput counts SETs.
    TransactionPipeline,
}

/// Who wrote the protocol code a row ran.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One of the workspace's minimal clients.
    HandWritten,
    /// A published client library behind a thin adapter.
    Library,
    /// A yardstick that is not a client of the contract: redis-benchmark, memaslap, the loopback
    /// and network floors.
    Baseline,
}

/// What became of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Verified, then measured.
    Ok,
    /// Verification or measurement failed: not timed (the error says why).
    Failed,
    /// The client cannot do this (the error says why).
    Unsupported,
}

/// How C callers in flight share connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ConcurrencyModel {
    /// One OS thread and one connection per caller (one caller: the calling thread).
    Threads,
    /// Callers share one connection.
    Multiplexed,
    /// Callers share a pool of connections.
    Pool,
    /// One thread's event loop drives a connection per caller: how the baseline tools
    /// (redis-benchmark, memaslap) serve many callers.
    EventLoop,
}

/// One (cell, client) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Cell id and criterion group name, for example `redis/get/3B/unix`.
    pub cell: String,
    /// Server.
    pub backend: Backend,
    /// Operation.
    pub op: Op,
    /// Value size in bytes.
    pub value_size: u64,
    /// Items per call: the pipeline depth, the keys of a `get_many`, the fields of a hash, the
    /// SETs of a transaction; 1 for single operations.
    pub pipeline: u64,
    /// Transport.
    pub transport: Transport,
    /// Client name as registered, or a baseline's name.
    pub client: String,
    /// Who wrote it.
    pub kind: Kind,
    /// What became of the pair.
    pub status: Status,
    /// Why it failed or is unsupported.
    pub error: Option<String>,
    /// Callers in flight.
    pub concurrency: u32,
    /// Sockets the client opened for them, counted (the bench's open sockets after connecting,
    /// less those before).
    pub connections: u32,
    /// How the callers share the connections.
    pub model: ConcurrencyModel,
    /// Operations per second, from the headline time per operation: in a cell of many items
    /// per call (`pipeline` > 1), items per second (pipelined commands, keys, fields, SETs).
    pub ops_per_sec: Option<f64>,
    /// Time per operation, ns.
    pub wall_ns_per_op: Option<Wall>,
    /// How the time was measured, in words (criterion, single calls, the baseline tool).
    pub timing: Option<String>,
    /// Times the pair was measured, each in its own run of the cell against freshly started
    /// servers (0 when not measured).
    pub runs: u32,
    /// Run-to-run spread: the highest ops/s of the runs over the lowest (1.04 = 4 %); null
    /// with fewer than two runs.
    pub spread: Option<f64>,
    /// Process CPU time (all threads) per operation, ns, from the cost pass after timing.
    pub cpu_ns_per_op: Option<f64>,
    /// The user-space part of `cpu_ns_per_op`: the client's own code (and the bench's).
    pub user_ns_per_op: Option<f64>,
    /// The kernel part of `cpu_ns_per_op`: system calls and loopback delivery.
    pub sys_ns_per_op: Option<f64>,
    /// Socket read/write-family system calls per operation.
    pub syscalls_per_op: Option<f64>,
    /// Every system call per operation.
    pub all_syscalls_per_op: Option<f64>,
    /// Heap allocations per operation.
    pub allocs_per_op: Option<f64>,
    /// Heap bytes allocated per operation.
    pub alloc_bytes_per_op: Option<f64>,
    /// Bytes the client read per operation (per item in a cell of many items): the server's
    /// output during the cost pass, from its own counters (Redis `total_net_output_bytes`,
    /// memcached `bytes_written`), the counters' own exchanges subtracted. Null for the
    /// baselines, against an external server (its counters include other clients' traffic),
    /// and in files written before it was measured.
    #[serde(default)]
    pub bytes_read_per_op: Option<f64>,
    /// Bytes the client wrote per operation: the server's input (`total_net_input_bytes`,
    /// `bytes_read`), likewise.
    #[serde(default)]
    pub bytes_written_per_op: Option<f64>,
    /// Latency percentiles of single operations (null for cells of many items per call).
    pub latency_ns: Option<Latency>,
    /// User-space instructions the client's process retired per operation (per item in a cell
    /// of many items), counted under valgrind's callgrind: the client's own work, the kernel and
    /// the server not counted. Exact, unlike `user_ns_per_op`: the same on any machine and in any
    /// slow period. A pipeline deeper than 10,000 items is counted on calls of its first 10,000.
    /// Null for the baselines and floors, where valgrind was missing (the run's notes say so),
    /// and in files written before it was counted.
    #[serde(default)]
    pub instructions_per_op: Option<Instructions>,
    /// An open-loop cell's offered rate, requests per second shared by the callers: the row is
    /// this client at this rate (part of the row's key). Null in every other cell.
    #[serde(default)]
    pub offered_rate: Option<u64>,
    /// What an open-loop cell measured at [`Row::offered_rate`]; null in every other cell.
    #[serde(default)]
    pub open_loop: Option<OpenLoop>,
    /// Memory per caller: the growth of the process's peak resident memory while the callers
    /// were connected and running, over the callers (a thread's stack and socket against a
    /// task's state); null at one caller.
    pub memory_per_caller_bytes: Option<f64>,
    /// What a reader should check before trusting the row (for example, the cost pass's median
    /// disagrees with the headline by more than the run-to-run spread).
    pub flags: Vec<String>,
    /// Relative path, inside the run folder, of criterion's report for the cell.
    pub criterion_report: Option<String>,
    /// Wall-clock seconds the run spent on the pair (connect, verify, time, cost pass; all runs).
    pub seconds: Option<f64>,
    /// The cell's reference contender, the side of every `ratio_to_reference` in the cell (a
    /// hand-written client, or the baseline tool where that is the question); null where the
    /// cell had no paired rounds.
    pub reference: Option<String>,
    /// This row's throughput over the reference's, from the cell's paired rounds (1 for the
    /// reference itself is left null: its noise is `aa_ratio`).
    pub ratio_to_reference: Option<PairedRatio>,
    /// The cell's A/A ratio: the reference contender timed twice in the same rounds (a second
    /// connection, or a second set of callers), the first over the second. Its distance from 1
    /// is the smallest difference this cell can resolve. The same value on every row of a cell.
    pub aa_ratio: Option<PairedRatio>,
    /// Throughput (ops/s, items/s in a cell of many items) in each paired round it ran in, in the
    /// order the rounds ran; the rows of a cell share the rounds, so any two rows of it can be
    /// paired round by round ([`verdict::paired_rows`]). With `REPEAT=K`, the rounds of every run
    /// one after the other.
    pub round_ops_per_sec: Vec<f64>,
    /// The rounds `round_ops_per_sec` are of, counted from 0 over the cell's rounds, when the
    /// row did not run in every round (a baseline tool's runs take ~100 ms, so it runs in some
    /// rounds only); empty when it ran in every one.
    pub round_indices: Vec<u32>,
}

/// Instructions per operation, counted ([`Row::instructions_per_op`]): the client's process
/// under valgrind's callgrind, counting three phases of N calls each after a warm-up phase
/// (connection, start and exit outside them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Instructions {
    /// The phases' mean, per operation (per item in a cell of many items).
    pub per_op: f64,
    /// The phases' highest count less their lowest, over their mean: 0 for a client that does
    /// the same work every call; an async client's runtime polls as replies arrive, so its
    /// counts move a little.
    pub spread: f64,
    /// N: calls per caller in each phase.
    pub calls: u64,
    /// `per_op` by whose code ran it, largest first: `ours` (this workspace's crates), `library`
    /// (the client library and the crates it builds on), `tokio`, `std` (with `core` and `alloc`,
    /// generic code instantiated by the others included), `allocator` (glibc's malloc family),
    /// `libc` (memcpy, system call stubs).
    #[serde(default)]
    pub owners: Vec<Share>,
    /// The functions that ran the most of `per_op` (their own instructions, not their
    /// callees'), largest first.
    #[serde(default)]
    pub functions: Vec<Share>,
}

/// A part of [`Instructions::per_op`]: whose, or which function's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Share {
    /// The owner, or the function's name as callgrind demangles it.
    pub name: String,
    /// Its instructions per operation.
    pub per_op: f64,
}

/// Time per operation, ns: the headline statistic, the mean beside it, and how sure it is.
/// From paired rounds: the median of the rounds' blocks (each block's time over its
/// operations), its 95 % bootstrap interval over the rounds, the mean of the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wall {
    /// The median time per operation over the blocks (a baseline tool's: over its runs). A short
    /// stall on a shared machine moves the mean, not the median.
    pub median: f64,
    /// The mean, for comparison with the median.
    pub mean: Option<f64>,
    /// How far the median can be trusted; null when measured once.
    pub interval: Option<Interval>,
}

/// An interval that says what it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// What the bounds are.
    pub kind: IntervalKind,
    /// Paired rounds or a network floor's calls (`ci95`), or the runs or calls (`range`).
    pub n: u32,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// What an [`Interval`]'s bounds are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// A 95 % bootstrap confidence interval of the median: over the paired rounds' blocks (a
    /// network floor's: the distribution-free interval of its calls' median, from their order
    /// statistics).
    Ci95,
    /// The lowest and highest of `n` measurements (runs of the cell, calls, or baseline runs).
    Range,
}

/// Latency percentiles of single operations, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile (redis-benchmark does not report it).
    pub p999: Option<u64>,
}

/// One client at one offered rate of an open-loop cell: C callers share the rate, each request
/// has an intended start on a fixed schedule (evenly spaced per caller, the callers staggered),
/// and its latency runs from that intended start, so a caller that falls behind counts its
/// lateness (no coordinated omission).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLoop {
    /// Seconds the schedule ran for.
    pub seconds: f64,
    /// Requests the schedule offered (the offered rate times its seconds).
    pub offered: u64,
    /// Requests answered.
    pub completed: u64,
    /// Requests answered per second, from the schedule's start to the last answer; null when
    /// the rate was not run (the client was saturated at a lower one).
    pub achieved_rate: Option<f64>,
    /// The client could not sustain the rate: it answered less than 95 % of it, or its backlog
    /// (requests due but not yet sent) was still growing at the end. Its latency is then left
    /// out: a queue that grows without bound has no percentile worth reading.
    pub saturated: bool,
    /// Requests due but not yet sent, halfway through the schedule.
    pub backlog_mid: u64,
    /// Requests due but not yet sent, at the end of the schedule.
    pub backlog_end: u64,
    /// Latency from each request's intended start to its reply, ns; null when saturated. Over
    /// several repeats, each percentile is the median of the repeats' own (a stall of the
    /// machine that falls on one repeat moves it little) and the maximum the largest of them.
    pub latency_ns: Option<OpenLatency>,
    /// How many short repeats the rate ran as, interleaved with the other clients' repeats of
    /// the same rate (1 in runs before repeats were recorded).
    #[serde(default = "one_repeat")]
    pub repeats: u32,
    /// The lowest and the highest of the repeats' p99s, ns: how far the percentile moved from
    /// repeat to repeat. Null for a single repeat, or when saturated.
    #[serde(default)]
    pub p99_range_ns: Option<OpenRange>,
    /// The generator's floor: how late a request was sent after its intended start when its
    /// caller was waiting for it, ns (the schedule's own jitter: what the latency cannot
    /// resolve below). Null when no caller ever waited.
    pub floor_ns: Option<OpenLatency>,
}

fn one_repeat() -> u32 {
    1
}

/// The lowest and the highest of several measurements, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRange {
    /// The lowest.
    pub lowest: u64,
    /// The highest.
    pub highest: u64,
}

/// Percentiles and maximum of an open-loop row's latency, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLatency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Maximum.
    pub max: u64,
}

/// Everything that can go wrong reading a results file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not of this schema (serde's message names the field and the line).
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why.
        #[source]
        source: serde_json::Error,
    },
    /// The file was written by another version of the schema.
    #[error(
        "{}: schema_version {found:?}, this build reads {SCHEMA_VERSION}; re-run the bench \
         (or use the kvbench commit that wrote it)",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it says (none: written before versions were recorded).
        found: Option<u64>,
    },
}

impl Results {
    /// Parses a results file's text; `path` only names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Results, Error> {
        // The version first, so an old file says "old", not "unknown field".
        let version = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|source| Error::Parse {
                path: path.to_path_buf(),
                source,
            })?
            .get("schema_version")
            .and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(SCHEMA_VERSION)) {
            return Err(Error::Version {
                path: path.to_path_buf(),
                found: version,
            });
        }
        serde_json::from_str(text).map_err(|source| Error::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads and parses `<dir>/results.json`.
    pub fn load(dir: &Path) -> Result<Results, Error> {
        let path = dir.join(RESULTS_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        Results::parse(&text, &path)
    }

    /// The run-level noise figure: the median spread over the rows measured in two runs or more,
    /// or `None` when no row was.
    pub fn noise(&self) -> Option<Noise> {
        let spread_rows: Vec<(f64, &Row)> = (self.rows.iter())
            .filter_map(|row| Some((row.spread.filter(|s| s.is_finite() && *s >= 1.0)?, row)))
            .collect();
        let spreads: Vec<f64> = spread_rows.iter().map(|&(spread, _)| spread).collect();
        let median_spread = median(&spreads)?;
        let &(max_spread, largest) = (spread_rows.iter()).max_by(|a, b| a.0.total_cmp(&b.0))?;
        Some(Noise {
            rows: spreads.len(),
            median_spread,
            max_spread,
            largest_at: format!("{} in {}", largest.client, largest.cell),
        })
    }

    /// The JSON Schema of these types, as committed in `reports/results.schema.json`.
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(Results);
        let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
        text.push('\n');
        text
    }
}

/// The median of the finite values (the mean of the middle two for an even count), or `None`.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    })
}

/// How much the run's repeated rows moved from run to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Rows measured in two runs or more.
    pub rows: usize,
    /// Median of their spreads (max/min of ops/s).
    pub median_spread: f64,
    /// The largest spread.
    pub max_spread: f64,
    /// Where it is, `client in cell`: one row of a bimodal client can dwarf all the others.
    pub largest_at: String,
}

impl Row {
    /// The row of `key` in cell `cell`, with nothing measured yet: status `ok` until the pair
    /// fails, one connection for one caller.
    pub fn new(cell: String, key: RowKey, kind: Kind) -> Row {
        Row {
            cell,
            backend: key.backend,
            op: key.op,
            value_size: key.value_size,
            pipeline: key.pipeline,
            transport: key.transport,
            client: key.client,
            kind,
            status: Status::Ok,
            error: None,
            concurrency: key.concurrency,
            connections: 1,
            model: ConcurrencyModel::Threads,
            ops_per_sec: None,
            wall_ns_per_op: None,
            timing: None,
            runs: 0,
            spread: None,
            cpu_ns_per_op: None,
            user_ns_per_op: None,
            sys_ns_per_op: None,
            syscalls_per_op: None,
            all_syscalls_per_op: None,
            allocs_per_op: None,
            alloc_bytes_per_op: None,
            bytes_read_per_op: None,
            bytes_written_per_op: None,
            latency_ns: None,
            offered_rate: key.offered_rate,
            open_loop: None,
            memory_per_caller_bytes: None,
            instructions_per_op: None,
            flags: Vec::new(),
            criterion_report: None,
            seconds: None,
            reference: None,
            ratio_to_reference: None,
            aa_ratio: None,
            round_ops_per_sec: Vec::new(),
            round_indices: Vec::new(),
        }
    }

    /// Whether the pair was measured.
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// Throughput, if the row was timed.
    pub fn ops(&self) -> Option<f64> {
        self.ops_per_sec
            .filter(|ops| self.is_ok() && ops.is_finite() && *ops > 0.0)
    }

    /// Throughput bounds `(low, high)` from the time interval, per operation.
    pub fn ops_interval(&self) -> Option<(f64, f64)> {
        self.ops()?;
        let interval = self.wall_ns_per_op?.interval?;
        let valid = |v: f64| v.is_finite() && v > 0.0;
        (valid(interval.lower) && valid(interval.upper) && interval.lower <= interval.upper)
            .then(|| (1e9 / interval.upper, 1e9 / interval.lower))
    }

    /// The row's matrix coordinates and client: what identifies it across runs.
    pub fn key(&self) -> RowKey {
        RowKey {
            backend: self.backend,
            op: self.op,
            value_size: self.value_size,
            pipeline: self.pipeline,
            transport: self.transport,
            concurrency: self.concurrency,
            offered_rate: self.offered_rate,
            client: self.client.clone(),
        }
    }

    /// Whether this is a same-run baseline tool's row (redis-benchmark, memaslap): the cell's
    /// external reference.
    pub fn is_baseline_tool(&self) -> bool {
        self.kind == Kind::Baseline && !self.is_floor()
    }

    /// Whether this is a floor, the loopback floor or a remote server's network floor (not a
    /// client doing the cell's work).
    pub fn is_floor(&self) -> bool {
        self.kind == Kind::Baseline
            && matches!(self.client.as_str(), LOOPBACK_FLOOR | NETWORK_FLOOR)
    }

    /// Why the row has no throughput (`None` when it has one).
    pub fn unmeasured_reason(&self) -> Option<String> {
        if self.ops().is_some() {
            return None;
        }
        Some(match (&self.error, self.status) {
            (Some(error), _) if !error.is_empty() => error.clone(),
            (_, Status::Ok) => "not timed (a --test run times nothing)".to_string(),
            (_, status) => format!("{status} (no reason given)"),
        })
    }

    /// How many measurements the row's time stands on, for people: `1 run`, `3 runs`,
    /// `95 % CI of 30` (rounds, or a floor's calls).
    pub fn measured_text(&self) -> String {
        match self.wall_ns_per_op.and_then(|w| w.interval) {
            Some(Interval {
                kind: IntervalKind::Ci95,
                n,
                ..
            }) => format!("95 % CI of {n}"),
            Some(Interval {
                kind: IntervalKind::Range,
                n,
                ..
            }) => format!("range of {n}"),
            None if self.wall_ns_per_op.is_some() => "1 run".to_string(),
            None => "–".to_string(),
        }
    }
}

/// A row's identity across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey {
    /// Server.
    pub backend: Backend,
    /// Operation.
    pub op: Op,
    /// Value size, bytes.
    pub value_size: u64,
    /// Pipeline depth.
    pub pipeline: u64,
    /// Transport.
    pub transport: Transport,
    /// Callers in flight.
    pub concurrency: u32,
    /// An open-loop row's offered rate (requests per second).
    pub offered_rate: Option<u64>,
    /// Client name.
    pub client: String,
}

macro_rules! names {
    ($($ty:ty { $($variant:ident => $name:literal),+ $(,)? })+) => {$(
        impl $ty {
            /// The name used in results files, cell ids and reports.
            pub fn as_str(self) -> &'static str {
                match self { $(<$ty>::$variant => $name),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )+};
}

names! {
    Mode { Full => "full", Quick => "quick", Test => "test" }
    PlacementMode { SameCore => "same-core", Split => "split", None => "none" }
    Backend { Redis => "redis", Memcached => "memcached", RedisCluster => "redis-cluster" }
    Transport { Tcp => "tcp", Unix => "unix" }
    Op {
        Get => "get", GetMiss => "get_miss", Set => "set", SetEx => "set_ex",
        PipelineSet => "pipeline_set", PipelineSetDistinct => "pipeline_set_distinct",
        Incr => "incr", GetMany => "get_many",
        GetManyPipelined => "get_many_pipelined", Hash => "hash",
        TransactionPlain => "transaction_plain", TransactionMulti => "transaction_multi",
        TransactionPipeline => "transaction_pipeline",
    }
    Kind { HandWritten => "hand-written", Library => "library", Baseline => "baseline" }
    Status { Ok => "ok", Failed => "failed", Unsupported => "unsupported" }
    ConcurrencyModel { Threads => "threads", Multiplexed => "multiplexed", Pool => "pool", EventLoop => "event-loop" }
    IntervalKind { Ci95 => "ci95", Range => "range" }
}

impl Op {
    /// A pipelined SET, of one key or of distinct keys: one `set_many` of `pipeline` items.
    pub fn is_pipeline_set(self) -> bool {
        matches!(self, Op::PipelineSet | Op::PipelineSetDistinct)
    }
}

impl Run {
    /// What differs between two runs' machines and settings, so their ratios describe machines
    /// rather than code: CPU model, cores, kernel, placement, mode, server versions.
    pub fn differences(&self, other: &Run) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what}: {a} vs {b}"));
            }
        };
        differ("CPU model", self.cpu_model.clone(), other.cpu_model.clone());
        differ("cores", self.cores.to_string(), other.cores.to_string());
        differ("kernel", self.kernel.clone(), other.kernel.clone());
        differ(
            "TCP congestion control",
            self.describe_congestion_control(),
            other.describe_congestion_control(),
        );
        differ(
            "placement",
            self.describe_placement(),
            other.describe_placement(),
        );
        differ("mode", self.mode.to_string(), other.mode.to_string());
        differ(
            "redis version",
            self.servers.redis.version.clone(),
            other.servers.redis.version.clone(),
        );
        differ(
            "memcached version",
            self.servers.memcached.version.clone(),
            other.servers.memcached.version.clone(),
        );
        out
    }

    /// The TCP congestion control, or `not recorded` (a run older than the field).
    pub fn describe_congestion_control(&self) -> String {
        (self.tcp_congestion_control.clone()).unwrap_or_else(|| "not recorded".into())
    }

    /// The placement with what it cannot say: `same-core (servers on CPU 1, bench on CPU 1)`, or,
    /// with a remote server, `same-core (redis: unknown, a remote host; memcached on CPU 1; bench
    /// on CPU 1)`.
    pub fn describe_placement(&self) -> String {
        let remote = [
            ("redis", &self.servers.redis),
            ("memcached", &self.servers.memcached),
        ];
        if !remote.iter().any(|(_, server)| server.remote) {
            return self.placement.describe();
        }
        let cpu = |cpu: Option<u32>| cpu.map_or("any".to_string(), |c| c.to_string());
        let servers: Vec<String> = (remote.iter())
            .map(|(name, server)| {
                if server.remote {
                    format!("{name}: unknown, a remote host")
                } else {
                    format!("{name} on CPU {}", cpu(self.placement.server_cpu))
                }
            })
            .collect();
        format!(
            "{} ({}; bench on CPU {})",
            self.placement.mode,
            servers.join("; "),
            cpu(self.placement.client_cpu)
        )
    }

    /// Clients with known defects, by name.
    pub fn defective_clients(&self) -> BTreeSet<&str> {
        self.known_defects
            .iter()
            .map(|d| d.client.as_str())
            .collect()
    }
}

impl Placement {
    /// `same-core (servers on CPU 1, bench on CPU 1)`.
    pub fn describe(&self) -> String {
        let cpu = |cpu: Option<u32>| cpu.map_or("any".to_string(), |c| c.to_string());
        format!(
            "{} (servers on CPU {}, bench on CPU {})",
            self.mode,
            cpu(self.server_cpu),
            cpu(self.client_cpu)
        )
    }
}
