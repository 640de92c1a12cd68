//! The matrix: which cells exist, and which settings a run uses.

use std::fmt;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kvbench_core::{Backend, Operation, Transport};

pub use kvbench_results::Op;

/// Expiry used by SET EX cells, in seconds.
pub const SET_EX_TTL: u32 = 100;

/// One cell of the matrix: an operation, a size, a transport and a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    /// Redis or memcached.
    pub backend: Backend,
    /// What is measured.
    pub op: Op,
    /// Value size in bytes (3 for `bar`); 0 where the cell has no value of its own (a miss, a
    /// counter).
    pub value_size: usize,
    /// Items per call: commands per `set_many` of a pipeline, keys of a `get_many`, fields of
    /// a hash, SETs of a transaction; 1 for single operations. Throughput counts items.
    pub pipeline: usize,
    /// TCP or Unix socket.
    pub transport: Transport,
    /// Callers in flight, each waiting for its own reply before its next request (a closed
    /// loop): 1 for one caller.
    pub concurrency: usize,
    /// An open loop: the callers share an offered rate instead, each request sent at its
    /// scheduled time whether or not the previous one was answered ([`crate::open_loop`]); the
    /// id ends `/open`.
    pub open: bool,
}

/// `3B`, `2KiB`, `100KiB`, `1MiB`.
pub fn size_label(bytes: usize) -> String {
    match bytes {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}KiB", n >> 10),
        n => format!("{n}B"),
    }
}

impl Cell {
    /// Whether the cell is a pipeline of at least [`crate::plan::DEEP_PIPELINE`] items: a block
    /// there is one call, of up to seconds.
    pub fn is_deep_pipeline(&self) -> bool {
        self.op.is_pipeline_set() && self.pipeline >= crate::plan::DEEP_PIPELINE
    }

    /// Group id, for example `redis/get/3B/unix`, `memcached/pipeline_set/100000/tcp`,
    /// `redis/incr/counter/tcp`, `memcached/get_many/100/2KiB/tcp` or
    /// `redis/transaction_multi/100/unix`.
    pub fn id(&self) -> String {
        let size = crate::ops::id_size(self);
        let id = format!(
            "{}/{}/{size}/{}",
            self.backend,
            self.op.as_str(),
            self.transport
        );
        let id = match self.concurrency {
            1 => id,
            callers => format!("{id}/c{callers}"),
        };
        if self.open { format!("{id}/open") } else { id }
    }

    /// Operations per timed iteration: the pipeline depth, times the callers (an iteration is
    /// one operation of every caller).
    pub fn ops_per_iteration(&self) -> u64 {
        (self.pipeline * self.concurrency) as u64
    }

    /// Request/response cells (one item per call) get latency percentiles; cells of many items
    /// per call do not (a call's time is not an item's).
    pub fn is_request_response(&self) -> bool {
        self.pipeline == 1
    }

    /// Whether the loopback floor is measured in this cell: one caller, and one of the
    /// operations whose exact request and reply the floor knows (GET, SET, SET EX).
    pub fn has_floor(&self) -> bool {
        self.concurrency == 1
            && self.backend != Backend::RedisCluster
            && crate::ops::has_floor(self.op)
    }

    /// The optional operation of the contract a client must implement to serve this cell
    /// ([`kvbench_core::ClientSpec::implements`]); `None` when every client can.
    pub fn operation(&self) -> Option<Operation> {
        crate::ops::contract(self.op)
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// Items per call of the cells of many items (`get_many`, `hash`, the transactions).
pub const BATCH: usize = 100;

fn cells_for(ops: &[(Op, usize, usize)]) -> Vec<Cell> {
    cells_on(&[Backend::Redis, Backend::Memcached], ops)
}

fn cells_on(backends: &[Backend], ops: &[(Op, usize, usize)]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &backend in backends {
        for &(op, value_size, pipeline) in ops {
            for &transport in Transport::ALL {
                cells.push(Cell {
                    backend,
                    op,
                    value_size,
                    pipeline,
                    transport,
                    concurrency: 1,
                    open: false,
                });
            }
        }
    }
    cells
}

/// The concurrency cells: each of `ops` at each level of `callers` above one (one caller is the
/// plain cell), on both backends and transports.
fn concurrency_cells(ops: &[(Op, usize)], callers: &[usize]) -> Vec<Cell> {
    let plain: Vec<(Op, usize, usize)> = ops.iter().map(|&(op, size)| (op, size, 1)).collect();
    let mut cells = Vec::new();
    for &concurrency in callers.iter().filter(|&&c| c > 1) {
        cells.extend(cells_for(&plain).into_iter().map(|cell| Cell {
            concurrency,
            ..cell
        }));
    }
    cells
}

/// Callers of the open-loop cells.
pub const OPEN_CALLERS: usize = 256;

/// Callers of the second Redis open-loop cell (in a run whose `callers` include it, as a full
/// run's do): the curve's low end, where a thread per caller has few threads to switch between.
pub const OPEN_FEW_CALLERS: usize = 16;

/// The open-loop cells ([`crate::open_loop`]): GET 3 B over TCP with `callers` callers sharing
/// each offered rate of a ladder, on each of `backends`.
fn open_cells(backends: &[Backend], callers: usize) -> Vec<Cell> {
    (backends.iter())
        .map(|&backend| Cell {
            backend,
            op: Op::Get,
            value_size: 3,
            pipeline: 1,
            transport: Transport::Tcp,
            concurrency: callers,
            open: true,
        })
        .collect()
}

/// The transaction cells' three ways of writing the same [`BATCH`] SETs.
const TRANSACTIONS: [(Op, usize, usize); 3] = [
    (Op::TransactionPlain, 3, BATCH),
    (Op::TransactionMulti, 3, BATCH),
    (Op::TransactionPipeline, 3, BATCH),
];

/// The cells of the contract's optional operations, TCP and Unix: INCR and [`BATCH`] keys read
/// both ways (one command, pipelined GETs) at 3 B and 2 KiB on Redis and memcached; a hash of
/// [`BATCH`] fields and the three ways of a transaction on Redis, which alone has them.
fn operation_cells() -> Vec<Cell> {
    let mut cells = cells_for(&[
        (Op::Incr, 0, 1),
        (Op::GetMany, 3, BATCH),
        (Op::GetManyPipelined, 3, BATCH),
        (Op::GetMany, 2 * KIB, BATCH),
        (Op::GetManyPipelined, 2 * KIB, BATCH),
    ]);
    cells.extend(cells_on(&[Backend::Redis], &[(Op::Hash, 3, BATCH)]));
    cells.extend(cells_on(&[Backend::Redis], &TRANSACTIONS));
    cells
}

/// The Redis Cluster cells, over TCP only (a cluster announces its nodes by address, so no
/// cluster client here speaks Unix sockets): GET 3 B of keys spread over every node, SET 3 B,
/// and a pipelined SET of [`CLUSTER_PIPELINE`] distinct keys spread over every slot; then the
/// same pipeline of distinct keys on one server (`redis/pipeline_set_distinct/…`). The same
/// clients' single-server cells are in the same run: the difference is what routing costs.
pub fn cluster_cells() -> Vec<Cell> {
    let mut cells = cells_on(
        &[Backend::RedisCluster],
        &[
            (Op::Get, 3, 1),
            (Op::Set, 3, 1),
            (Op::PipelineSet, 3, CLUSTER_PIPELINE),
        ],
    );
    cells.extend(cells_on(
        &[Backend::Redis],
        &[(Op::PipelineSetDistinct, 3, CLUSTER_PIPELINE)],
    ));
    cells.retain(|cell| cell.transport == Transport::Tcp);
    cells
}

/// Items of the cluster's pipelined SET, each a key of its own.
pub const CLUSTER_PIPELINE: usize = 100_000;

/// Keys the cluster's GET cell reads in turn: enough to put several on every node.
pub const CLUSTER_GET_KEYS: usize = 30;

/// Every cell: GET 3 B / 2 KiB / 100 KiB / 1 MiB, GET miss, SET 3 B / 100 KiB, SET EX 100 KiB,
/// pipelined SET at depths 1,000 / 100,000 / 1,000,000; the optional operations (INCR,
/// `get_many` both ways, hash, transaction three ways); then GET 3 B and SET 3 B with each
/// number of `callers` in flight; TCP and Unix; Redis and memcached; GET 3 B over TCP in an
/// open loop on both backends with 256 callers, and on Redis with 16 when 16 is among `callers`
/// (a full run's default); then the Redis Cluster's cells.
pub fn full_matrix(callers: &[usize]) -> Vec<Cell> {
    let mut cells = cells_for(&[
        (Op::Get, 3, 1),
        (Op::Get, 2 * KIB, 1),
        (Op::Get, 100 * KIB, 1),
        (Op::Get, MIB, 1),
        (Op::GetMiss, 0, 1),
        (Op::Set, 3, 1),
        (Op::Set, 100 * KIB, 1),
        (Op::SetEx, 100 * KIB, 1),
        (Op::PipelineSet, 3, 1_000),
        (Op::PipelineSet, 3, 100_000),
        (Op::PipelineSet, 3, 1_000_000),
    ]);
    cells.extend(operation_cells());
    cells.extend(concurrency_cells(&[(Op::Get, 3), (Op::Set, 3)], callers));
    cells.extend(open_cells(
        &[Backend::Redis, Backend::Memcached],
        OPEN_CALLERS,
    ));
    if callers.contains(&OPEN_FEW_CALLERS) {
        cells.extend(open_cells(&[Backend::Redis], OPEN_FEW_CALLERS));
    }
    cells.extend(cluster_cells());
    cells
}

/// The representative subset, sized so that a fresh clone's `make bench-quick` (build included)
/// takes about four minutes: GET 3 B over both transports; over TCP only, GET 1 MiB, SET EX
/// 100 KiB, pipelined SET of 100,000, `get_many` of [`BATCH`] keys of 3 B both ways, Redis's
/// three ways of a transaction and GET 3 B with each number of `callers` in flight; Redis's
/// open-loop GET. Each other cell of the full matrix differs from one of these in size,
/// transport or operation only, but for the Redis Cluster's (a cluster of three to start).
pub fn quick_matrix(callers: &[usize]) -> Vec<Cell> {
    let tcp = |cell: &Cell| cell.transport == Transport::Tcp;
    let mut cells = cells_for(&[(Op::Get, 3, 1)]);
    cells.extend(
        cells_for(&[
            (Op::Get, MIB, 1),
            (Op::SetEx, 100 * KIB, 1),
            (Op::PipelineSet, 3, 100_000),
            (Op::GetMany, 3, BATCH),
            (Op::GetManyPipelined, 3, BATCH),
        ])
        .into_iter()
        .filter(tcp),
    );
    cells.extend(
        cells_on(&[Backend::Redis], &TRANSACTIONS)
            .into_iter()
            .filter(tcp),
    );
    cells.extend(
        concurrency_cells(&[(Op::Get, 3)], callers)
            .into_iter()
            .filter(tcp),
    );
    cells.extend(open_cells(&[Backend::Redis], OPEN_CALLERS));
    cells
}

/// The optional operations' cells a smoke run keeps (see [`smoke_matrix`]): each operation at
/// least once, on both backends where both have it, over both transports between them.
const SMOKE_OPERATION_CELLS: &[&str] = &[
    "redis/incr/counter/tcp",
    "memcached/incr/counter/unix",
    "redis/get_many/100/3B/unix",
    "memcached/get_many/100/2KiB/tcp",
    "redis/get_many_pipelined/100/2KiB/tcp",
    "memcached/get_many_pipelined/100/3B/unix",
    "redis/hash/100/unix",
    "redis/transaction_plain/100/tcp",
    "redis/transaction_multi/100/unix",
    "redis/transaction_pipeline/100/tcp",
];

/// The smoke run's cells (`cargo test --bench matrix`, part of `make test`): the full matrix,
/// but of the optional operations' cells only [`SMOKE_OPERATION_CELLS`], and no pipeline deeper
/// than [`SMOKE_DEEPEST_PIPELINE`]. Their other cells run the same code with another size,
/// transport or backend, and each costs the smoke a few seconds (a fresh server, every client's
/// connection, a baseline tool's run); a pipeline of a million costs minutes in a debug build
/// (about 390 s of a 630 s smoke), while the 100,000-deep cells, and the kit's `set_many` of
/// 100,000 items, already send far more than the socket buffers hold before reading.
pub fn smoke_matrix(callers: &[usize]) -> Vec<Cell> {
    let kept = |cell: &Cell| {
        (!is_operation_cell(cell) || SMOKE_OPERATION_CELLS.contains(&cell.id().as_str()))
            && !(cell.op.is_pipeline_set() && cell.pipeline > SMOKE_DEEPEST_PIPELINE)
    };
    full_matrix(callers).into_iter().filter(kept).collect()
}

/// The deepest pipeline a smoke run sends.
pub const SMOKE_DEEPEST_PIPELINE: usize = 100_000;

/// Whether `cell` is one of [`operation_cells`].
fn is_operation_cell(cell: &Cell) -> bool {
    !(cell.op.is_pipeline_set() || matches!(cell.op, Op::Get | Op::GetMiss | Op::Set | Op::SetEx))
}

/// Whether a run counts instructions per operation ([`crate::count`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Not counted.
    Off,
    /// Counted after each visit's timing.
    Also,
    /// Counted, and nothing timed: every pair connected, verified and counted (`make cost`).
    Only,
}

/// Which cells a run covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrix {
    /// [`full_matrix`]: `MODE=full`, and a timed run without `MODE`.
    Full,
    /// [`quick_matrix`]: `MODE=quick`.
    Quick,
    /// [`smoke_matrix`]: a `--test` run without `MODE`.
    Smoke,
}

/// How much of the matrix a run covers, and with what criterion settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The whole matrix.
    Full,
    /// The representative subset, short measurements.
    Quick,
    /// criterion's `--test`: every pair once, verification included (CI smoke test).
    Test,
}

impl Mode {
    /// Name recorded in results.json.
    pub fn as_str(self) -> &'static str {
        self.record().as_str()
    }

    /// The schema's name for it.
    pub fn record(self) -> kvbench_results::Mode {
        match self {
            Mode::Full => kvbench_results::Mode::Full,
            Mode::Quick => kvbench_results::Mode::Quick,
            Mode::Test => kvbench_results::Mode::Test,
        }
    }

    /// Every budget and setting that differs between the modes.
    pub fn policy(self) -> &'static Policy {
        match self {
            Mode::Full => &FULL,
            Mode::Quick => &QUICK,
            Mode::Test => &TEST,
        }
    }
}

/// What a mode spends where: the one table of every budget and setting that differs between a
/// full, a quick and a test run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Length a block aims at with one caller: long enough that a block's start and end weigh
    /// little (a thousand calls of 20 µs), short enough that a slow period of the machine (seconds
    /// long here) spans several rounds rather than one contender's blocks.
    pub block: Duration,
    /// Length a block aims at with many callers: the stretch of time whose completed calls
    /// count ([`crate::callers::Window`]).
    pub block_many: Duration,
    /// Rounds every visit runs (unless a contender fails).
    pub min_rounds: u32,
    /// Rounds a visit of many callers runs: their blocks' rates move by ±15 % from one block to
    /// the next, so a ratio needs more of them than one caller's do.
    pub min_rounds_many: u32,
    /// Rounds a cell of hundreds of callers ([`crate::plan::PARTED_CALLERS`]) runs, over all its
    /// visits: their blocks scatter the most.
    pub min_rounds_crowd: u32,
    /// Rounds a visit of a deep pipeline runs (a block is one call of up to seconds).
    pub min_rounds_deep: u32,
    /// Rounds at most.
    pub max_rounds: u32,
    /// Rounds go on past the minimum while the visit's rounds took less than this.
    pub round_budget: Duration,
    /// The same for a deep pipeline.
    pub round_budget_deep: Duration,
    /// Runs of redis-benchmark a visit aims at: a run takes ~100 ms, so it runs in a round only
    /// when the budget over this has passed since its last run.
    pub tool_runs: u32,
    /// Runs of a baseline tool a visit waits for, past its budget if need be.
    pub min_tool_runs: u32,
    /// The same for memaslap, whose runs take seconds: also the runs it aims at (the budget
    /// over this between two).
    pub min_memaslap_runs: u32,
    /// Runs a deep pipeline's long call waits for, over all of a cell's visits (a client whose
    /// call is several of the reference's: `cell::pace`).
    pub min_long_call_runs: u32,
    /// Whether the reference contender is timed a second time in the same rounds (the A/A
    /// check); without it, verdicts use the prior A/A figure instead. It costs one block per
    /// round, so every mode has it.
    pub aa: bool,
    /// Seconds of calls in a cost pass's clean half (at least ten calls for request/response
    /// cells, for percentiles).
    pub cost_pass_seconds: f64,
    /// Divides the cost pass's call count per cell kind (`plan::cost_calls`).
    pub cost_pass_divisor: u64,
    /// The most cost-pass calls of a client slow by design (about 40 ms a round trip).
    pub slow_client_calls: u64,
    /// Cost-pass calls each caller makes at least in a many-caller cell (its percentiles pool
    /// every caller's calls).
    pub cost_pass_calls_per_caller: u64,
    /// Callers in flight in the concurrency cells (`CONCURRENCY` overrides); a test run
    /// exercises every model at the larger level only.
    pub concurrency: &'static [usize],
    /// Visits a cell whose ratios move between server starts gets, its rounds shared out among
    /// them ([`crate::plan::parts`]).
    pub parts: u32,
    /// Which cells memaslap runs in (of those it can run): its runs take seconds each.
    pub memaslap: MemaslapCells,
}

/// The cells memaslap runs in, of those it can run ([`crate::baselines::memaslap_serves`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemaslapCells {
    /// Every one.
    All,
    /// The one-caller GET only (the headline's "× memaslap"): its runs of 2 s (4 s with many
    /// callers) were a quarter of a quick run.
    OneCallerGet,
}

/// The whole matrix, timed for numbers to quote.
pub const FULL: Policy = Policy {
    block: Duration::from_millis(2),
    // Stretches of 20 ms, three times as many as of 60 ms in about the same time: in the four
    // TCP cells of 256 callers the A/A intervals were 1.5-3.0 % wide (one run) against
    // 1.6-9.1 % with 60 ms and 30 rounds (two runs).
    block_many: Duration::from_millis(20),
    min_rounds: 30,
    min_rounds_many: 90,
    // With 90 rounds, the A/A intervals of the eight cells of 256 callers were ±1-2 % wide and
    // three of their medians were 1.2-1.5 % from 1 (the reference of 7f5719b): the noise of a
    // median over that many rounds, not an offset (every interval held 1).
    min_rounds_crowd: 180,
    min_rounds_deep: 15,
    max_rounds: 5_000,
    // 4.5 s (5 s before 2026-12-06): at 5 s the one-caller cells' A/A intervals were 0.4-0.5 %
    // wide (400-600 rounds), and their misses offsets, not noise; the half second of each of
    // about 60 visits went to the hour's goal.
    round_budget: Duration::from_millis(4_500),
    round_budget_deep: Duration::from_secs(20),
    tool_runs: 8,
    min_tool_runs: 5,
    // As many as redis-benchmark's. A run of memaslap takes about 3 s with one caller and 5-10 s
    // with many (its preloading), and eight of them were the largest part of a memcached TCP
    // cell: 25 of the 40 s of its one-caller GET, 30 of the 60 s of each visit of its GET at 256
    // callers (the visits' breakdowns, 2026-12-06).
    min_memaslap_runs: 5,
    // One in each of the three visits (five before 2026-12-07): fred's pipeline of a million
    // takes 10-13 s a call, 0.05-0.07 of the reference's rate, and its five calls, with fred's
    // pool's, were about 220 s of the two Redis cells of a million. The ratio is twenty times
    // from 1; three calls name that as well as five.
    min_long_call_runs: 3,
    aa: true,
    cost_pass_seconds: 0.5,
    cost_pass_divisor: 1,
    slow_client_calls: 50,
    cost_pass_calls_per_caller: 20,
    concurrency: &[16, 256],
    parts: 3,
    memaslap: MemaslapCells::All,
};

/// The representative subset with short timing: numbers to read as rough. A fresh clone's
/// `make bench-quick` is its build (about two and a half minutes on two CPUs) and this run, and
/// the two should fit in four minutes: the run's budgets below were cut for that on 2026-12-07,
/// from a run of 98 s (rounds 41 s, cost passes 22 s, the open loop 19 s, the rest connecting,
/// verifying and warming up).
pub const QUICK: Policy = Policy {
    block: Duration::from_millis(2),
    // 20 ms, as in a full run (40 ms before): the two cells of 256 callers spent 11 s in rounds.
    block_many: Duration::from_millis(20),
    min_rounds: 10,
    min_rounds_many: 10,
    min_rounds_crowd: 10,
    min_rounds_deep: 3,
    max_rounds: 5_000,
    // 0.45 s (0.7 s before): 20-40 rounds of a one-caller cell, enough to name gaps of a few
    // per cent; the full run's hundreds are what ratios are quoted from.
    round_budget: Duration::from_millis(450),
    round_budget_deep: Duration::from_secs(1),
    tool_runs: 4,
    min_tool_runs: 3,
    // One of memaslap's runs of two seconds (about 3 s with its start; two before 2026-12-07):
    // its ratio is shown, but fewer than three rounds judge nothing, and two did not either.
    min_memaslap_runs: 1,
    min_long_call_runs: 3,
    aa: true,
    cost_pass_seconds: 0.05,
    cost_pass_divisor: 2,
    slow_client_calls: 10,
    cost_pass_calls_per_caller: 20,
    concurrency: &[256],
    parts: 1,
    memaslap: MemaslapCells::OneCallerGet,
};

/// Every pair a few times, verification included: every path exercised, numbers meaningless
/// (a debug build, blocks of one call).
pub const TEST: Policy = Policy {
    block: Duration::from_millis(1),
    block_many: Duration::from_millis(1),
    min_rounds: 3,
    min_rounds_many: 3,
    min_rounds_crowd: 3,
    min_rounds_deep: 3,
    max_rounds: 3,
    round_budget: Duration::ZERO,
    round_budget_deep: Duration::ZERO,
    tool_runs: 3,
    min_tool_runs: 3,
    // One shows that it runs: three took a third of a smoke run's time.
    min_memaslap_runs: 1,
    min_long_call_runs: 3,
    aa: true,
    cost_pass_seconds: 0.05,
    cost_pass_divisor: 500,
    slow_client_calls: 10,
    cost_pass_calls_per_caller: 2,
    concurrency: &[256],
    parts: 1,
    memaslap: MemaslapCells::All,
};

/// Where the servers and the benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementMode {
    /// Servers and client pinned to the same CPU: a round trip needs no cross-CPU wake-up.
    SameCore,
    /// Servers on one CPU, client on another.
    Split,
    /// No pinning: the scheduler decides, differently from run to run.
    None,
}

/// CPU placement of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The mode it came from.
    pub mode: PlacementMode,
    /// CPU of every server (and the loopback floor's server thread).
    pub server_cpu: Option<usize>,
    /// CPU of the benchmark process (every client thread and runtime).
    pub client_cpu: Option<usize>,
}

impl Placement {
    /// `same-core` (default), `split` or `none`, on a machine with `cores` CPUs.
    // ANCHOR: placement_parse
    pub fn parse(value: &str, cores: usize) -> Result<Placement> {
        let last = cores.saturating_sub(1);
        let (mode, server_cpu, client_cpu) = match value {
            "same-core" | "" => (PlacementMode::SameCore, Some(last), Some(last)),
            "split" if cores >= 2 => (PlacementMode::Split, Some(last), Some(0)),
            "split" => bail!("PLACEMENT=split needs two CPUs; this machine has {cores}"),
            "none" => (PlacementMode::None, None, None),
            other => bail!("PLACEMENT={other:?}: want same-core, split or none"),
        };
        Ok(Placement {
            mode,
            server_cpu,
            client_cpu,
        })
    }
    // ANCHOR_END: placement_parse

    /// Name recorded in results.json.
    pub fn mode_str(&self) -> &'static str {
        self.record().mode.as_str()
    }

    /// As recorded in results.json.
    pub fn record(&self) -> kvbench_results::Placement {
        kvbench_results::Placement {
            mode: match self.mode {
                PlacementMode::SameCore => kvbench_results::PlacementMode::SameCore,
                PlacementMode::Split => kvbench_results::PlacementMode::Split,
                PlacementMode::None => kvbench_results::PlacementMode::None,
            },
            server_cpu: self.server_cpu.map(|cpu| cpu as u32),
            client_cpu: self.client_cpu.map(|cpu| cpu as u32),
        }
    }
}

/// Everything a run is configured with, from the environment (the Makefile passes these).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Full, quick or test.
    pub mode: Mode,
    /// CPU placement.
    pub placement: Placement,
    /// `CLIENTS=raw-tcp,fred`: only these clients (exact names); empty means all.
    pub clients: Vec<String>,
    /// `CELLS=get,unix`: only cells whose id contains every one of these words ([`id_has`]: a
    /// word ending in `$` must end the id, and `a|b` is either).
    pub cells: Vec<String>,
    /// `RUN_ID`: the folder under `reports/`; default: the start time and mode.
    pub run_id: Option<String>,
    /// `REPEAT=K`: how many times the repeated cells run, each time against freshly started
    /// servers, interleaved (every cell once, then every repeated cell again, …).
    pub repeat: u32,
    /// `REPEAT_CELLS=get/3B,pipeline_set/1000000`: the cells repeated, as a list of filters, any
    /// of which a cell id must contain every `+`-joined word of; empty means every cell.
    pub repeat_cells: Vec<String>,
    /// `ORDER_SEED`: seed of the client order within each cell (default: from the clock).
    pub order_seed: u64,
    /// The cells it covers: `MODE=quick` the quick subset, `MODE=full` every cell, also in a
    /// `--test` run; a `--test` run without `MODE` the smoke subset.
    pub matrix: Matrix,
    /// `CONCURRENCY=1,16,256`: callers in flight of the concurrency cells (levels above one;
    /// default: the mode's).
    pub concurrency: Vec<usize>,
    /// `COUNT=0|1|only`: whether each client's instructions per operation are counted under
    /// valgrind ([`crate::count`]), and whether that is all the run does (`make cost`).
    /// Default: counted in a full run, not in a quick or test run.
    pub count: Counting,
    /// `KVBENCH_FAULT_STOP_SERVER=<cell-id>@<client>`: a fault for tests — the cell's server
    /// is stopped right after that client's verification, in the middle of the cell. Only in a
    /// build with the `fault-injection` feature (the whole-run fault test's).
    #[cfg(feature = "fault-injection")]
    pub stop_server_at: Option<(String, String)>,
}

/// Whether a cell id has `word` of a filter: contains it, or, for a word ending in `$`, ends
/// with it (`get/3B/tcp$` is the one-caller cell, not `get/3B/tcp/c256`). A word may give
/// alternatives, any of which will do: `get/3B/tcp$|pipeline_set/1000000/`.
pub fn id_has(id: &str, word: &str) -> bool {
    word.split('|')
        .any(|alternative| match alternative.strip_suffix('$') {
            Some(end) => id.ends_with(end),
            None => id.contains(alternative),
        })
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|word| !word.is_empty())
        .map(String::from)
        .collect()
}

impl Settings {
    /// Reads `MODE`, `PLACEMENT`, `CLIENTS`, `CELLS`, `RUN_ID`, `REPEAT`, `REPEAT_CELLS`,
    /// `ORDER_SEED`, `CONCURRENCY` (and, with the `fault-injection` feature,
    /// `KVBENCH_FAULT_STOP_SERVER`); `test_flag` is true when criterion was given `--test`.
    pub fn from_env(test_flag: bool) -> Result<Settings> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mode = match (test_flag, var("MODE").as_deref()) {
            (true, _) => Mode::Test,
            (false, None | Some("full")) => Mode::Full,
            (false, Some("quick")) => Mode::Quick,
            (false, Some(other)) => bail!("MODE={other:?}: want full or quick"),
        };
        #[cfg(feature = "fault-injection")]
        let stop_server_at = match var("KVBENCH_FAULT_STOP_SERVER") {
            None => None,
            Some(value) => match value.split_once('@') {
                Some((cell, client)) => Some((cell.to_string(), client.to_string())),
                None => bail!("KVBENCH_FAULT_STOP_SERVER={value:?}: want <cell-id>@<client>"),
            },
        };
        #[cfg(not(feature = "fault-injection"))]
        if var("KVBENCH_FAULT_STOP_SERVER").is_some() {
            bail!("KVBENCH_FAULT_STOP_SERVER needs a build with the fault-injection feature");
        }
        let repeat = match var("REPEAT") {
            None => 1,
            Some(value) => match value.parse::<u32>() {
                Ok(k) if (1..=20).contains(&k) => k,
                _ => bail!("REPEAT={value:?}: want a number of runs from 1 to 20"),
            },
        };
        let order_seed = match var("ORDER_SEED") {
            Some(value) => value
                .parse()
                .with_context(|| format!("ORDER_SEED={value:?}: want a number"))?,
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        };
        let matrix = match (var("MODE").as_deref(), mode) {
            (Some("quick"), _) => Matrix::Quick,
            (None, Mode::Test) => Matrix::Smoke,
            _ => Matrix::Full,
        };
        let concurrency = match var("CONCURRENCY") {
            None => mode.policy().concurrency.to_vec(),
            Some(value) => parse_concurrency(&value)?,
        };
        let count = match var("COUNT").as_deref() {
            None if mode == Mode::Full => Counting::Also,
            None | Some("0") => Counting::Off,
            Some("1") => Counting::Also,
            Some("only") => Counting::Only,
            Some(other) => bail!("COUNT={other:?}: want 0, 1 or only"),
        };
        let cores = crate::environment::online_cpus();
        let placement = Placement::parse(var("PLACEMENT").as_deref().unwrap_or(""), cores)
            .context("reading PLACEMENT")?;
        Ok(Settings {
            mode,
            placement,
            clients: list(var("CLIENTS")),
            cells: list(var("CELLS")),
            run_id: var("RUN_ID"),
            repeat,
            repeat_cells: list(var("REPEAT_CELLS")),
            order_seed,
            matrix,
            concurrency,
            count,
            #[cfg(feature = "fault-injection")]
            stop_server_at,
        })
    }

    /// The cells this run covers. `COUNT=only` leaves out the open-loop cells: their rows are
    /// rates and latencies, which only a timed run has, and nothing of theirs is counted.
    pub fn cells(&self) -> Vec<Cell> {
        let all = match self.matrix {
            Matrix::Full => full_matrix(&self.concurrency),
            Matrix::Quick => quick_matrix(&self.concurrency),
            Matrix::Smoke => smoke_matrix(&self.concurrency),
        };
        all.into_iter()
            .filter(|cell| !(cell.open && self.count == Counting::Only))
            .filter(|cell| {
                let id = cell.id();
                self.cells.iter().all(|word| id_has(&id, word))
            })
            .collect()
    }

    /// Whether `cell` runs again in rounds 2..=K. An open-loop cell runs once: its rows are
    /// (client, rate) pairs of one run, not throughputs to pool.
    pub fn repeats(&self, cell: &Cell) -> bool {
        let id = cell.id();
        !cell.open
            && (self.repeat_cells.is_empty()
                || (self.repeat_cells.iter())
                    .any(|filter| filter.split('+').all(|word| id_has(&id, word))))
    }

    /// How many times `cell` is visited, each time against freshly started servers: its runs
    /// (`REPEAT`, when the cell is repeated) times the parts its rounds are shared out among
    /// ([`crate::plan::parts`]); once when nothing is timed (`COUNT=only`).
    pub fn visits_of(&self, cell: &Cell) -> u32 {
        // Nothing timed: one visit counts.
        if self.count == Counting::Only {
            return 1;
        }
        let runs = if self.repeats(cell) { self.repeat } else { 1 };
        runs * crate::plan::parts(self.mode, cell)
    }

    /// The cells in the order they run: every cell once, then every cell with a second visit
    /// again, and so on (interleaved rather than back to back, so a slow period of the machine
    /// does not fall on one cell's visits only). Each visit is `(visit, cell)`, visits from 1.
    pub fn visits(&self) -> Vec<(u32, Cell)> {
        let cells = self.cells();
        let most = cells.iter().map(|cell| self.visits_of(cell)).max();
        (1..=most.unwrap_or(1))
            .flat_map(|visit| {
                (cells.iter())
                    .filter(move |cell| self.visits_of(cell) >= visit)
                    .map(move |cell| (visit, *cell))
            })
            .collect()
    }

    /// The most callers any cell of this run has in flight.
    pub fn max_concurrency(&self) -> usize {
        self.cells()
            .iter()
            .map(|cell| cell.concurrency)
            .max()
            .unwrap_or(1)
    }

    /// True if the client is selected.
    pub fn wants_client(&self, name: &str) -> bool {
        self.clients.is_empty() || self.clients.iter().any(|c| c == name)
    }
}

/// `1,16,256`: numbers of callers, each from 1 to 65,536.
fn parse_concurrency(value: &str) -> Result<Vec<usize>> {
    let mut levels = Vec::new();
    for word in list(Some(value.to_string())) {
        match word.parse::<usize>() {
            Ok(c) if (1..=65_536).contains(&c) => levels.push(c),
            _ => bail!(
                "CONCURRENCY={value:?}: want numbers of callers from 1 to 65536, like 1,16,256"
            ),
        }
    }
    levels.sort_unstable();
    levels.dedup();
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_ids_are_unique_and_readable() {
        let cells = full_matrix(FULL.concurrency);
        // 28 cells of the optional operations: INCR and get_many (two ways, two sizes) on both
        // backends, the hash and three transaction ways on Redis; each over TCP and Unix. Then
        // 3 of the Redis Cluster and the single server's pipeline of the same keys, over TCP.
        // The open loops: both backends with 256 callers, Redis with 16.
        assert_eq!(cells.len(), 44 + 28 + 16 + (2 + 1) + 3 + 1);
        let ids: std::collections::HashSet<_> = cells.iter().map(Cell::id).collect();
        assert_eq!(ids.len(), cells.len());
        for id in [
            "redis/incr/counter/tcp",
            "memcached/get_many/100/2KiB/unix",
            "redis/get_many_pipelined/100/3B/tcp",
            "redis/hash/100/unix",
            "redis/transaction_plain/100/tcp",
            "redis/transaction_multi/100/tcp",
            "redis/transaction_pipeline/100/unix",
        ] {
            assert!(ids.contains(id), "{id}");
        }
        assert!(
            !ids.iter()
                .any(|id| id.starts_with("memcached/hash")
                    || id.starts_with("memcached/transaction"))
        );
        let batch = cells.iter().find(|c| c.op == Op::GetMany).unwrap();
        assert_eq!(
            batch.ops_per_iteration(),
            BATCH as u64,
            "throughput counts keys"
        );
        assert!(!batch.is_request_response());
        assert!(ids.contains("redis/get/3B/unix"));
        assert!(ids.contains("memcached/pipeline_set/1000000/tcp"));
        assert!(ids.contains("redis/get/1MiB/tcp"));
        assert!(ids.contains("redis/get_miss/none/tcp"));
        assert!(ids.contains("memcached/set/3B/unix/c16"));
        assert!(ids.contains("redis/get/3B/tcp/c256"));
        assert!(ids.contains("redis/get/3B/tcp/c256/open"));
        assert!(ids.contains("redis/get/3B/tcp/c16/open"));
        assert!(ids.contains("memcached/get/3B/tcp/c256/open"));
        assert!(ids.contains("redis-cluster/pipeline_set/100000/tcp"));
        assert!(ids.contains("redis/pipeline_set_distinct/100000/tcp"));
        assert!(
            !ids.iter()
                .any(|id| id.starts_with("redis-cluster/") && id.ends_with("unix"))
        );
    }

    #[test]
    fn concurrency_levels_parse_and_one_caller_adds_no_cell() {
        assert_eq!(parse_concurrency("256, 1,16,16").unwrap(), [1, 16, 256]);
        assert!(parse_concurrency("0").is_err() && parse_concurrency("many").is_err());
        let cells = full_matrix(&[1, 1024]);
        let c1024: Vec<String> = cells
            .iter()
            .filter(|cell| cell.concurrency > 1 && !cell.open)
            .map(Cell::id)
            .collect();
        // GET and SET, both backends, both transports.
        assert_eq!(c1024.len(), 8, "{c1024:?}");
        assert!(c1024.contains(&"redis/get/3B/unix/c1024".to_string()));
        assert_eq!(cells[0].ops_per_iteration(), 1);
    }

    #[test]
    fn quick_matrix_is_a_subset() {
        let full = full_matrix(&[16, 256]);
        let quick = quick_matrix(&[256]);
        assert_eq!(quick.len(), 4 + 10 + 3 + 2 + 1);
        assert!(quick.iter().all(|cell| full.contains(cell)));
    }

    #[test]
    fn the_smoke_runs_each_optional_operation_without_all_its_cells() {
        let full = full_matrix(&[256]);
        let smoke = smoke_matrix(&[256]);
        let ids: Vec<String> = smoke.iter().map(Cell::id).collect();
        // Not the four pipelines of a million.
        assert_eq!(
            smoke.len(),
            44 - 4 + SMOKE_OPERATION_CELLS.len() + 8 + 2 + 3 + 1
        );
        for id in SMOKE_OPERATION_CELLS {
            assert!(ids.iter().any(|cell| cell == id), "{id} is not a cell");
        }
        let ops: std::collections::BTreeSet<Op> = smoke.iter().map(|cell| cell.op).collect();
        let every: std::collections::BTreeSet<Op> = full.iter().map(|cell| cell.op).collect();
        assert_eq!(ops, every, "every operation is smoked");
        for backend in [Backend::Redis, Backend::Memcached] {
            for op in [Op::Incr, Op::GetMany, Op::GetManyPipelined] {
                assert!(
                    smoke.iter().any(|c| c.op == op && c.backend == backend),
                    "{op} on {backend}"
                );
            }
        }
    }

    #[test]
    fn a_filter_word_ending_in_a_dollar_sign_must_end_the_id_and_a_bar_gives_alternatives() {
        let ids = |cells: &[&str]| -> Vec<String> {
            let settings = Settings {
                mode: Mode::Full,
                placement: Placement::parse("none", 1).unwrap(),
                clients: Vec::new(),
                cells: cells.iter().map(|word| word.to_string()).collect(),
                run_id: None,
                repeat: 1,
                repeat_cells: Vec::new(),
                order_seed: 1,
                matrix: Matrix::Full,
                concurrency: vec![16, 256],
                count: Counting::Off,
                #[cfg(feature = "fault-injection")]
                stop_server_at: None,
            };
            settings.cells().iter().map(Cell::id).collect()
        };
        assert_eq!(
            ids(&["get/3B/tcp$"]),
            [
                "redis/get/3B/tcp",
                "memcached/get/3B/tcp",
                "redis-cluster/get/3B/tcp"
            ]
        );
        assert_eq!(
            ids(&["get/3B/tcp/c256$"]),
            ["redis/get/3B/tcp/c256", "memcached/get/3B/tcp/c256"]
        );
        assert!(ids(&["get/3B/tcp"]).len() > 3, "without `$`, a substring");
        assert_eq!(
            ids(&["redis/get/3B/unix$|pipeline_set/1000000/", "redis/"]),
            [
                "redis/get/3B/unix",
                "redis/pipeline_set/1000000/tcp",
                "redis/pipeline_set/1000000/unix"
            ]
        );
    }

    #[test]
    fn repeated_cells_are_interleaved_not_back_to_back() {
        let settings = Settings {
            mode: Mode::Quick,
            placement: Placement::parse("none", 1).unwrap(),
            clients: Vec::new(),
            cells: vec!["redis/".into(), "tcp".into()],
            run_id: None,
            repeat: 3,
            repeat_cells: vec!["get/3B".into(), "pipeline_set+100000".into()],
            order_seed: 1,
            matrix: Matrix::Quick,
            concurrency: vec![256],
            count: Counting::Off,
            #[cfg(feature = "fault-injection")]
            stop_server_at: None,
        };
        let visits: Vec<String> = settings
            .visits()
            .iter()
            .map(|(round, cell)| format!("{round} {cell}"))
            .collect();
        assert_eq!(
            visits,
            [
                "1 redis/get/3B/tcp",
                "1 redis/get/1MiB/tcp",
                "1 redis/set_ex/100KiB/tcp",
                "1 redis/pipeline_set/100000/tcp",
                "1 redis/get_many/100/3B/tcp",
                "1 redis/get_many_pipelined/100/3B/tcp",
                "1 redis/transaction_plain/100/tcp",
                "1 redis/transaction_multi/100/tcp",
                "1 redis/transaction_pipeline/100/tcp",
                "1 redis/get/3B/tcp/c256",
                "1 redis/get/3B/tcp/c256/open",
                "2 redis/get/3B/tcp",
                "2 redis/pipeline_set/100000/tcp",
                "2 redis/get/3B/tcp/c256",
                "3 redis/get/3B/tcp",
                "3 redis/pipeline_set/100000/tcp",
                "3 redis/get/3B/tcp/c256",
            ]
        );
    }

    #[test]
    fn placement_modes() {
        let same = Placement::parse("same-core", 2).unwrap();
        assert_eq!((same.server_cpu, same.client_cpu), (Some(1), Some(1)));
        let split = Placement::parse("split", 2).unwrap();
        assert_eq!((split.server_cpu, split.client_cpu), (Some(1), Some(0)));
        assert!(Placement::parse("split", 1).is_err());
        assert_eq!(Placement::parse("none", 2).unwrap().client_cpu, None);
        assert!(Placement::parse("sideways", 2).is_err());
    }
}
