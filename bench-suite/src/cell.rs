//! One visit of a cell, as one straight line: a fresh server, the cell's keys prepared, every
//! contender connected and verified against it, then all of them timed together in paired
//! rounds, then each one's cost pass, then one row per contender.
//!
//! **Paired rounds.** A round runs one block of every contender, in a fresh random order, back
//! to back against the same server; a block is a fixed number of calls sized to the plan's block
//! length (10-80 ms). A slow period of the machine (seconds long on a small VM) then falls on
//! every contender of a round alike, and each round gives one ratio of each contender's
//! throughput to the reference's. The reference is timed twice (its A/A twin: a second
//! connection, or a second set of callers), and its ratio to itself is the cell's noise floor.
//! Rows carry every round's throughput, so any two rows of the cell can be paired
//! ([`kvbench_results::verdict`]).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use criterion::Criterion;
use kvbench_conformance::Reference;
use kvbench_core::{Backend, ClientSpec, Endpoint, Options};
use kvbench_results::verdict::{self, paired_ratio};
use kvbench_results::{Instructions, Kind, Share};
use kvbench_servers::Servers;

use crate::baselines::{LoopbackFloor, Tool};
use crate::callers::{self, Callers};
use crate::contender::{Block, Cpu, Live, Runner};
use crate::costs;
use crate::count::{self, Counter, Job};
use crate::drivers::{Args, Driver, Workload};
use crate::matrix::{Cell, Counting, Settings};
use crate::network_floor::Pinger;
use crate::plan::{Decision, Items, Measure, Rounds, Source, Visit};
use crate::results::{self, Row, RowExt, Status};
use crate::verify::{self, Rejection};
use crate::wire::{StatsError, WireMeter};

/// Connection settings for the bench: the default 5 s connect timeout, but 60 s for reads and
/// writes, because fred times a whole pipeline as one command and a million commands through
/// it take several seconds on a loaded 2-CPU machine.
pub fn bench_options() -> Options {
    Options {
        read_timeout: Duration::from_secs(60),
        write_timeout: Duration::from_secs(60),
        ..Options::default()
    }
}

/// How long a reading of a server's byte counters may take ([`crate::wire`]).
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// What a visit needs from the run.
pub struct Context<'a> {
    /// The run's settings.
    pub settings: &'a Settings,
    /// The servers (restarted for each visit).
    pub servers: &'a mut Servers,
    /// The run's folder (the floor's socket, memaslap's configuration).
    pub dir: &'a Path,
    /// Syscall counters could be opened at start-up.
    pub count_syscalls: bool,
    /// This program, to measure memory per caller in a fresh process of itself.
    pub memory_probe: Option<&'a Path>,
    /// valgrind and this program, when the run counts instructions per operation.
    pub counter: Option<&'a Counter>,
    /// The run's notes (a server found dead).
    pub notes: &'a mut Vec<String>,
    /// Where each contender's block times go for criterion's own statistics and report.
    pub criterion: &'a mut Criterion,
}

/// A visit's rows, and its A/A twin's throughput in each round (to pool with later visits).
pub struct Outcome {
    /// One row per contender, in the plan's order.
    pub rows: Vec<Row>,
    /// Rounds the visit ran (each row's `round_indices` count from 0 within them).
    pub rounds: u32,
    /// The A/A twin's throughput per round, when the visit had one.
    pub twin_rounds: Option<Vec<f64>>,
}

/// A measured contender in a visit: its row so far, and what the rounds gave it.
struct Entry<'w> {
    row: Row,
    /// The client, for a client's entry (its A/A twin and memory probe connect it again).
    spec: Option<ClientSpec>,
    live: Live<'w>,
    measure: Measure,
    blocks: Vec<Block>,
    /// The round of each block, from 0.
    rounds_run: Vec<u32>,
    /// Seconds spent on it (connect, verify, calibrate, blocks, cost pass).
    seconds: f64,
}

/// Where a visit's time went, printed after it: most of a run's hour is not its timed rounds.
#[derive(Default)]
struct Took {
    /// The server restarted and the cell's keys prepared.
    prepare: Duration,
    /// Every contender connected and verified.
    connect: Duration,
    /// Calibration, which warms every contender up.
    warm_up: Duration,
    /// The paired rounds, the baseline tools' runs among them ...
    rounds: Duration,
    /// ... of which the sparse contenders' blocks (the baseline tools' runs, slow calls).
    sparse: Duration,
    /// The cost passes (a cell's first part only).
    costs: Duration,
    /// The counted children (a cell's first visit only).
    count: Duration,
}

impl std::fmt::Display for Took {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |d: Duration| d.as_secs_f64();
        let total = self.prepare + self.connect + self.warm_up + self.rounds + self.costs;
        write!(
            f,
            "{:.1} s: server {:.1}, connect and verify {:.1}, warm-up {:.1}, rounds {:.1} \
             (sparse {:.1}), cost passes {:.1}, counting {:.1}",
            s(total + self.count),
            s(self.prepare),
            s(self.connect),
            s(self.warm_up),
            s(self.rounds),
            s(self.sparse),
            s(self.costs),
            s(self.count)
        )
    }
}

/// The time since `phase`, which starts again.
fn lap(phase: &mut Instant) -> Duration {
    let took = phase.elapsed();
    *phase = Instant::now();
    took
}

/// Runs one visit of a cell.
pub fn run(ctx: &mut Context<'_>, visit: &Visit) -> Result<Outcome> {
    if visit.cell.open {
        return crate::open_loop::run(ctx, visit);
    }
    let cell = visit.cell;
    let mut took = Took::default();
    let mut phase = Instant::now();
    let mut rows: Vec<Option<Row>> = vec![None; visit.contenders.len()];
    for (slot, contender) in rows.iter_mut().zip(&visit.contenders) {
        if let Decision::Unsupported(why) = &contender.decision {
            *slot = Some(new_row(&cell, contender).fail(Status::Unsupported, why));
        }
    }
    if visit.measured().next().is_none() {
        return Ok(Outcome {
            rows: rows.into_iter().flatten().collect(),
            rounds: 0,
            twin_rounds: None,
        });
    }
    let (endpoint, w, mut reference) = prepare(ctx, cell)?;
    let args = w.args();
    took.prepare += lap(&mut phase);

    // Connected and verified, every one, before anything is timed; a deep pipeline at its own
    // depth in the cell's first part only (the later ones warm up on a call of it).
    let depth = match visit.part {
        1 => verify::Depth::Cell,
        _ => verify::Depth::Short,
    };
    let mut entries: Vec<(usize, Entry)> = Vec::new();
    for (i, contender) in visit.contenders.iter().enumerate() {
        let Decision::Measure(measure) = contender.decision else {
            continue;
        };
        let started = Instant::now();
        let row = new_row(&cell, contender);
        let source = contender.source;
        let server = (&endpoint, &mut reference);
        let at = (visit.rounds.block, depth);
        match connect(ctx, &w, &args, server, source, measure, at) {
            Ok((live, row_model)) => {
                let mut row = row;
                if let Some((model, connections)) = row_model {
                    row.model = model;
                    row.connections = connections;
                }
                entries.push((
                    i,
                    Entry {
                        row,
                        spec: match source {
                            Source::Client(spec) => Some(spec),
                            _ => None,
                        },
                        live,
                        measure,
                        blocks: Vec::new(),
                        rounds_run: Vec::new(),
                        seconds: started.elapsed().as_secs_f64(),
                    },
                ));
            }
            Err(Refusal::Unsupported(why)) => rows[i] = Some(row.fail(Status::Unsupported, why)),
            Err(Refusal::Failed(why)) => {
                let why = pair_error(ctx.servers, &cell, &why);
                rows[i] = Some(row.fail(Status::Failed, why));
            }
        }
    }
    took.connect += lap(&mut phase);
    let (rounds_run, twin_rates) = if ctx.settings.count == Counting::Only {
        (0, None)
    } else {
        time(ctx, visit, &w, &args, &endpoint, &mut entries, &mut took)
    };
    phase = Instant::now();
    // Counted in the cell's first visit only: a count does not depend on the server start.
    if let Some(counter) = ctx.counter.filter(|_| visit.repeat == 1) {
        let prefix = ctx.servers.key_prefix(cell.backend).to_string();
        count_pass(counter, ctx.dir, (&endpoint, prefix), &cell, &mut entries);
    }
    took.count += lap(&mut phase);
    eprintln!("  took {took}");

    leave_nothing(ctx, &w, &mut reference)?;
    for (i, entry) in entries {
        let mut row = entry.row;
        row.seconds = Some(entry.seconds);
        rows[i] = Some(row);
        entry.live.finish();
    }
    Ok(Outcome {
        rows: rows.into_iter().flatten().collect(),
        rounds: rounds_run,
        twin_rounds: twin_rates,
    })
}

/// The timing of a visit: calibration, the paired rounds, rows from them with their ratios to
/// the reference, criterion fed, then each contender's cost pass. Returns the rounds run and the
/// A/A twin's throughput in each.
fn time<'w>(
    ctx: &mut Context<'_>,
    visit: &Visit,
    w: &Workload,
    args: &Args<'w>,
    endpoint: &Endpoint,
    entries: &mut Vec<(usize, Entry<'w>)>,
    took: &mut Took,
) -> (u32, Option<Vec<f64>>) {
    let cell = visit.cell;
    let mut phase = Instant::now();
    let reference_at = (visit.reference_candidates.iter())
        .find_map(|name| entries.iter().position(|(_, e)| e.live.name == *name));
    let mut twin = match reference_at {
        Some(at) if visit.aa => connect_twin(w, args, endpoint, &entries[at].1),
        _ => None,
    };

    for (_, entry) in entries.iter_mut() {
        let started = Instant::now();
        if let Err(err) = entry.live.calibrate(w, visit.rounds.block) {
            let why = pair_error(ctx.servers, &cell, &format!("warming up: {err:#}"));
            entry.row = entry.row.clone().fail(Status::Failed, why);
        }
        entry.seconds += started.elapsed().as_secs_f64();
    }
    if let Some(twin) = twin.as_mut() {
        // Warmed up like every contender, then the reference's block, so that the two do the
        // same work in each round. Without the warm-up, a twin of GET 1 MiB over TCP ran 1.8
        // times slower than its reference in one quick run's Redis cell, and 1.2 times faster
        // in its memcached cell: a fresh connection is not in the state the reference's
        // verification and warm-up left its own in.
        if let Err(err) = twin.calibrate(w, visit.rounds.block) {
            eprintln!("  {cell}: the A/A twin failed to warm up: {err:#}");
        }
        twin.calls_per_block = entries[reference_at.unwrap_or(0)].1.live.calls_per_block;
    }

    took.warm_up += lap(&mut phase);
    let (rounds_run, twin_blocks, sparse) =
        rounds(ctx, visit, w, entries, reference_at, twin.as_mut());
    took.rounds += lap(&mut phase);
    took.sparse += sparse;

    // Rows from the rounds: each contender's own time per operation, then its ratio to the
    // reference, paired round by round.
    for (_, entry) in entries.iter_mut().filter(|(_, e)| e.row.is_ok()) {
        entry.row = with_rounds(entry.row.clone(), entry, visit, rounds_run);
    }
    let reference_row = reference_at
        .map(|at| entries[at].1.row.clone())
        .filter(|row| row.is_ok());
    let twin_rates = twin_blocks.as_deref().map(rates);
    let aa = match (&reference_row, &twin_rates) {
        (Some(reference), Some(twin)) => paired_ratio(&reference.round_ops_per_sec, twin),
        _ => None,
    };
    for (i, (_, entry)) in entries.iter_mut().enumerate() {
        let Some(reference) = reference_row.as_ref().filter(|_| entry.row.is_ok()) else {
            continue;
        };
        entry.row.reference = Some(reference.client.clone());
        entry.row.aa_ratio = aa;
        if Some(i) != reference_at {
            entry.row.ratio_to_reference = verdict::paired_rows(&entry.row, reference);
        }
    }
    feed_criterion(ctx, visit, entries);

    // The cost passes, one contender at a time, after every block is done.
    phase = Instant::now();
    for (_, entry) in entries.iter_mut() {
        let started = Instant::now();
        if entry.row.is_ok() && entry.measure.cost_calls > 0 && visit.part == 1 {
            let row = cost_pass(ctx, &cell, w, entry);
            entry.row = row;
        }
        entry.seconds += started.elapsed().as_secs_f64();
    }

    took.costs += lap(&mut phase);
    if let Some(twin) = twin {
        twin.finish();
    }
    (rounds_run, twin_rates)
}

/// Counts the instructions per operation of every client of the visit, under valgrind
/// ([`count`]), a child per CPU at once. A blocking client's count does not depend on where its
/// child runs, so those run on any CPU. An async client's does: its runtime polls more or less
/// often as replies arrive sooner or later, so its children run where it was timed, on the
/// bench's CPU, one at a time (the bench-suite README, **Where counted children run**).
fn count_pass(
    counter: &Counter,
    dir: &Path,
    (endpoint, prefix): (&Endpoint, String),
    cell: &Cell,
    entries: &mut [(usize, Entry)],
) {
    let (tcp, unix) = match endpoint {
        Endpoint::Tcp(addr) => (Some(addr.clone()), None),
        Endpoint::Unix(path) => (None, Some(path.clone())),
    };
    let mut jobs: Vec<(usize, Job, u64, bool)> = (entries.iter().enumerate())
        .filter(|(_, (_, entry))| entry.spec.is_some() && entry.row.is_ok())
        .map(|(at, (_, entry))| {
            let first = match (&entry.live.runner, entry.measure.items) {
                (_, Items::Cell) | (Runner::Many { .. }, _) => None,
                (Runner::One { args, .. }, _) => Some(args.items.len().max(args.keys.len())),
                _ => None,
            };
            // A deep pipeline is counted on its first items ([`count::COUNTED_ITEMS`]).
            let first = match first.unwrap_or(cell.pipeline) {
                items if items > count::COUNTED_ITEMS => Some(count::COUNTED_ITEMS),
                _ => first,
            };
            let ops = match first {
                Some(items) => items as u64,
                None => entry.live.ops_per_call,
            };
            let items = (ops as usize / cell.concurrency).max(1);
            let job = Job {
                client: entry.live.name.to_string(),
                cell: cell.id(),
                callers: cell.concurrency,
                tcp: tcp.clone(),
                unix: unix.clone(),
                prefix: prefix.clone(),
                first,
                // A client slow by design (40 ms a call) makes few calls: its instructions are
                // the same as its fast twin's, its time is in waiting.
                calls: match entry.measure.slow {
                    true => count::SLOW_CALLS,
                    false => count::calls_for(cell, items),
                },
            };
            let on_bench_cpu = entry.spec.is_some_and(|spec| spec.connect_async.is_some());
            (at, job, ops, on_bench_cpu)
        })
        .collect();
    // The bench's CPU first: its jobs are the front of the queue, the others its back.
    jobs.sort_by_key(|(.., on_bench_cpu)| !on_bench_cpu);
    let queue = std::sync::Mutex::new(std::collections::VecDeque::from(jobs));
    let counts = std::sync::Mutex::new(Vec::new());
    let count_from = |take: &dyn Fn(&mut std::collections::VecDeque<_>) -> Option<_>| loop {
        let job = take(&mut queue.lock().unwrap_or_else(|e| e.into_inner()));
        let Some((at, job, ops, _)) = job else { break };
        let count = counter.count(dir, &job, ops);
        let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.push((at, count));
    };
    std::thread::scope(|scope| {
        // The children a thread starts inherit its CPUs: this one keeps the bench's, takes the
        // async clients one at a time, then helps with the rest.
        scope.spawn(|| count_from(&|queue| queue.pop_front()));
        for _ in 1..counter.parallel.max(1) {
            scope.spawn(|| {
                if let Err(err) = kvbench_servers::unpin_current_thread() {
                    eprintln!("  {cell}: counting on the bench's CPU only: {err}");
                }
                count_from(&|queue| queue.pop_back_if(|(.., on_bench_cpu)| !*on_bench_cpu));
            });
        }
    });
    for (at, count) in counts.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let entry = &mut entries[at].1;
        match count {
            Ok(count) => {
                let share = |(name, per_op): (String, f64)| Share { name, per_op };
                entry.row.instructions_per_op = Some(Instructions {
                    per_op: count.per_op,
                    spread: count.spread,
                    calls: count.calls,
                    owners: (count.owners.into_iter())
                        .map(|(owner, n)| share((owner.to_string(), n)))
                        .collect(),
                    functions: count.functions.into_iter().map(share).collect(),
                })
            }
            Err(err) => {
                eprintln!("  {cell} {}: not counted: {err}", entry.live.name);
                entry
                    .row
                    .flags
                    .push(format!("instructions not counted: {err}"));
            }
        }
    }
}

/// The cell's server started afresh, its endpoint, the cell's workload, and a reference
/// connection that has prepared the server for it.
pub(crate) fn prepare(
    ctx: &mut Context<'_>,
    cell: Cell,
) -> Result<(Endpoint, Workload, Reference)> {
    fresh_server(ctx, &cell)?;
    // A fresh cluster is a new one, on new ports.
    let endpoint = (ctx.servers.endpoint(cell.backend, cell.transport)).with_context(|| {
        format!(
            "the fresh {} server has no {}",
            cell.backend, cell.transport
        )
    })?;
    let w = Workload::new(cell, |key| ctx.servers.key(cell.backend, key));
    let mut reference = Reference::connect(cell.backend, &endpoint).map_err(anyhow::Error::msg)?;
    crate::ops::prepare(&mut reference, &w).map_err(anyhow::Error::msg)?;
    Ok((endpoint, w, reference))
}

/// On someone else's server, leaves nothing behind: the cell's keys go (verification already
/// removed its own).
pub(crate) fn leave_nothing(
    ctx: &Context<'_>,
    w: &Workload,
    reference: &mut Reference,
) -> Result<()> {
    let cell = &w.cell;
    if ctx.servers.is_external(cell.backend) {
        reference
            .delete_many(&w.server_keys())
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("removing {cell}'s keys from the external server"))?;
    }
    Ok(())
}

/// The rounds: each a block of every contender still running, in a fresh random order (the A/A
/// twin among them), until the plan's minimum is done, its budget is spent and every baseline
/// tool has run its minimum, or the maximum is reached. A baseline tool's run takes ~100 ms (a
/// block of a client one caller's ~2 ms), so a tool runs in a round only once the budget over the
/// policy's `tool_runs` has passed since its last run ([`pace`]). Returns the rounds run and the
/// twin's blocks, if it ran every round.
fn rounds(
    ctx: &mut Context<'_>,
    visit: &Visit,
    w: &Workload,
    entries: &mut [(usize, Entry)],
    reference_at: Option<usize>,
    mut twin: Option<&mut Live>,
) -> (u32, Option<Vec<Block>>, Duration) {
    let cell = &visit.cell;
    let id = cell.id();
    let policy = ctx.settings.mode.policy();
    let cell_seed = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng =
        fastrand::Rng::with_seed(ctx.settings.order_seed ^ cell_seed ^ u64::from(visit.repeat));
    let deep = cell.is_deep_pipeline();
    let crowd = cell.concurrency >= crate::plan::PARTED_CALLERS;
    // How long a contender's block takes: in a crowd's cell the whole window, its callers' start
    // and stop included, which the block's own seconds leave out (the calibration's, or the
    // first round's if shorter, as in [`block_time`]); elsewhere [`block_time`].
    let length_of = |e: &Entry, first_wall: Option<Duration>| match crowd {
        true => first_wall.map_or(e.live.block_time, |wall| wall.min(e.live.block_time)),
        false => block_time(e.live.block_time, &e.blocks),
    };
    // `None`: a block in every round. Decided on the calibration, then in a deep pipeline or a
    // crowd's cell again on the first round.
    let paces_of = |entries: &[(usize, Entry)], walls: &[Option<Duration>]| -> Vec<Option<Aim>> {
        let reference_block = reference_at.map(|at| length_of(&entries[at].1, walls[at]));
        (entries.iter().zip(walls))
            .map(|((_, e), &wall)| {
                let tool = matches!(e.live.runner, Runner::Tool { .. }).then_some(e.live.name);
                let (rounds, tool_runs) = (&visit.rounds, policy.tool_runs);
                pace(
                    tool,
                    length_of(e, wall),
                    reference_block,
                    (deep, crowd),
                    rounds,
                    tool_runs,
                )
            })
            .collect()
    };
    // Each contender's first timed block, start to end.
    let mut first_wall: Vec<Option<Duration>> = vec![None; entries.len()];
    let mut paces = paces_of(entries, &first_wall);
    // When each contender last ran, in the dense contenders' time.
    let mut last_run: Vec<Option<Duration>> = vec![None; entries.len()];
    let mut twin_blocks = Some(Vec::new());
    let started = Instant::now();
    // The budget is the dense contenders': a sparse one's runs (memaslap's are two seconds) come
    // on top, so that the others still get the rounds the budget buys.
    let mut sparse_time = Duration::ZERO;
    // Index `entries.len()` is the twin.
    let mut order: Vec<usize> = (0..=entries.len()).collect();
    let mut done = 0;
    for round in 0..visit.rounds.max {
        rng.shuffle(&mut order);
        for &at in &order {
            if at == entries.len() {
                if let (Some(twin), Some(blocks)) = (twin.as_deref_mut(), twin_blocks.as_mut()) {
                    match twin.block(w) {
                        Ok(block) => blocks.push(block),
                        Err(err) => {
                            eprintln!("  {id}: the A/A twin failed: {err:#}");
                            twin_blocks = None;
                        }
                    }
                }
                continue;
            }
            let entry = &mut entries[at].1;
            // A sparse contender runs in its rounds only (every other one in a crowd's cell), once
            // the others have had its interval since its last run (counted in their time: its
            // own runs, memaslap's two seconds, would otherwise make it due again at once), and,
            // once it has its runs, not in the rounds past the budget that the others need for
            // their minimum.
            let dense = started.elapsed() - sparse_time;
            let skips = paces[at].is_some_and(|aim| {
                let waits = round % aim.every != 0
                    || last_run[at].is_some_and(|last| dense - last < aim.interval);
                let has_enough =
                    entry.blocks.len() as u32 >= aim.min_runs && dense >= visit.rounds.budget;
                waits || has_enough
            });
            if !entry.row.is_ok() || skips {
                continue;
            }
            let block_started = Instant::now();
            last_run[at] = Some(dense);
            match entry.live.block(w) {
                Ok(block) => {
                    entry.blocks.push(block);
                    entry.rounds_run.push(round);
                    first_wall[at].get_or_insert(block_started.elapsed());
                }
                Err(err) => {
                    let why = pair_error(ctx.servers, cell, &format!("during timing: {err:#}"));
                    entry.row = entry.row.clone().fail(Status::Failed, why);
                }
            }
            entry.seconds += block_started.elapsed().as_secs_f64();
            if paces[at].is_some() {
                sparse_time += block_started.elapsed();
            }
        }
        done = round + 1;
        if round == 0 && (deep || crowd) {
            paces = paces_of(entries, &first_wall);
        }
        let tools_done = (entries.iter().zip(&paces))
            .filter(|((_, e), _)| e.row.is_ok())
            .all(|((_, e), pace)| pace.is_none_or(|aim| e.blocks.len() as u32 >= aim.min_runs));
        let spent = started.elapsed() - sparse_time;
        if done >= visit.rounds.min && spent >= visit.rounds.budget && tools_done {
            break;
        }
    }
    (done, twin.and(twin_blocks), sparse_time)
}

/// Calls of a deep pipeline's contender longer than this many of the reference's make it sparse.
const LONG_CALL: u32 = 4;

/// How long a contender's block takes: its calibration's figure, or its first timed block's if
/// shorter. A deep pipeline's calibration is its first call ever, which can take three times a
/// later one: the cluster's first pipeline of 100,000 took 211 ms and its later ones 70 ms, so
/// that a client at 836 ms came in under [`LONG_CALL`] times it and ran in every round.
fn block_time(calibrated: Duration, blocks: &[Block]) -> Duration {
    let first = blocks
        .first()
        .map(|block| Duration::from_secs_f64(block.seconds));
    first.map_or(calibrated, |first| first.min(calibrated))
}

/// Blocks of a contender in a crowd's cell ([`crate::plan::PARTED_CALLERS`]) longer than this
/// many of the reference's make it run in every other round.
const LONG_CROWD_BLOCK: u32 = 2;

/// The pace of a contender that runs in some rounds only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Aim {
    /// Runs it waits for, past the budget if need be.
    min_runs: u32,
    /// The other contenders' time between two of its runs.
    interval: Duration,
    /// It runs in one round of this many at most (every other round: 2).
    every: u32,
}

/// Whether a contender runs in some rounds only, and how often (`None`: in every round). Sparse
/// are a baseline tool (`tool`: its name; a run of its own takes ~100 ms, memaslap's two
/// seconds), a client whose one call is ten blocks long (a client slow by design, ~40 ms a
/// round trip), and in a deep pipeline, where every block is one call, a client whose call takes
/// over [`LONG_CALL`] times the reference's (fred's pipeline of a million took 6 s, the
/// reference's 0.3 s). Running them every round would stretch every round, and put the others'
/// blocks far apart in time: with fred in every round, a round of a million items took 15 s,
/// and a cell ran six of them. A short sparse contender runs up to the policy's `tool_runs`
/// times over the budget; a long one (memaslap, a deep pipeline's long call) aims at its
/// minimum, so that its runs add no more time than they must.
///
/// In a crowd's cell (`crowd`), a client whose block takes over [`LONG_CROWD_BLOCK`] times the
/// reference's runs in every other round. Its block is a window of the same 20 ms, but a
/// thread per caller takes its time to start and stop: 53-180 ms in all against the
/// multiplexer's 21 ms (the reference of 55e81f5), four fifths or more of each round. Those
/// clients are 2.5 to 140 times slower than the reference; half the rounds still give their
/// ratios intervals a few percent wide, and the reference and its A/A twin keep every round.
fn pace(
    tool: Option<&str>,
    block_time: Duration,
    reference_block: Option<Duration>,
    (deep, crowd): (bool, bool),
    rounds: &Rounds,
    tool_runs: u32,
) -> Option<Aim> {
    let memaslap = tool == Some(crate::baselines::MEMASLAP);
    let min_runs = match memaslap {
        true => rounds.min_memaslap_runs,
        false => rounds.min_tool_runs,
    };
    let longer_than = |times: u32| reference_block.is_some_and(|block| block_time > block * times);
    let long_call = deep && longer_than(LONG_CALL);
    // A crowd's block is a window of the callers' calls, never a call ten blocks long.
    let slow_by_design = !deep && !crowd && block_time > rounds.block * 10;
    let (min_runs, runs_aimed) = match tool {
        Some(_) if memaslap => (min_runs, min_runs),
        Some(_) => (min_runs, tool_runs),
        None if long_call => (rounds.min_long_call_runs, rounds.min_long_call_runs),
        None if slow_by_design => (min_runs, tool_runs),
        None if crowd && longer_than(LONG_CROWD_BLOCK) => {
            return Some(Aim {
                min_runs: rounds.min.div_ceil(2),
                interval: Duration::ZERO,
                every: 2,
            });
        }
        None => return None,
    };
    Some(Aim {
        min_runs,
        interval: rounds.budget / runs_aimed.max(1),
        every: 1,
    })
}

/// Each block's throughput, in round order.
fn rates(blocks: &[Block]) -> Vec<f64> {
    blocks.iter().map(Block::rate).collect()
}

/// The row with its time per operation from the blocks: the median over the rounds, its 95 %
/// bootstrap interval, the mean, every round's throughput (and which rounds, for a contender
/// that did not run in each of the visit's `rounds`), and how it was timed.
fn with_rounds(row: Row, entry: &Entry, visit: &Visit, rounds: u32) -> Row {
    let Some(wall) = results::wall_of_rounds(&rates(&entry.blocks)) else {
        return row.fail(Status::Failed, "during timing: no block was timed");
    };
    let live = &entry.live;
    let how = match &live.runner {
        Runner::Tool { tool, .. } => tool.describe(),
        Runner::Many { window, .. } => format!(
            "blocks of the callers' calls over a stretch of {window:.1?} once each caller has \
             had a turn, ~{:.1?} each in all",
            live.block_time
        ),
        _ => format!(
            "blocks of {} call(s) of {} operation(s), ~{:.1?} each",
            live.calls_per_block, live.ops_per_call, live.block_time
        ),
    };
    let timing = format!(
        "paired: {} of {rounds} rounds, each a block of every contender in a fresh random order \
         against the same server; median of the blocks, 95 % bootstrap CI over the rounds; {how}",
        entry.blocks.len()
    );
    let mut row = row.with_wall(wall, &timing);
    row.round_ops_per_sec = rates(&entry.blocks);
    with_rounds_cpu(&mut row, &entry.blocks);
    if entry.rounds_run.len() as u32 != rounds {
        row.round_indices = entry.rounds_run.clone();
    }
    if let Runner::Tool { latency, .. } = &live.runner {
        row.latency_ns = latency.filter(|_| visit.cell.is_request_response());
    }
    row
}

/// The row's CPU time per operation from the same blocks as its throughput: every thread's CPU
/// time over all of them, and `getrusage`'s user/system split of it (tick-sampled, so summed over
/// every block). A baseline tool's blocks are another process's: none.
fn with_rounds_cpu(row: &mut Row, blocks: &[Block]) {
    let ops: f64 = blocks.iter().map(|b| b.ops).sum();
    let Some(cpu) = blocks
        .iter()
        .map(|b| b.cpu)
        .try_fold(Cpu::default(), |sum, cpu| {
            let cpu = cpu?;
            Some(Cpu {
                total: sum.total + cpu.total,
                user: sum.user + cpu.user,
                system: sum.system + cpu.system,
            })
        })
        .filter(|_| ops > 0.0)
    else {
        return;
    };
    let per_op = |d: Duration| Some(d.as_nanos() as f64 / ops);
    row.cpu_ns_per_op = per_op(cpu.total);
    row.user_ns_per_op = per_op(cpu.user);
    row.sys_ns_per_op = per_op(cpu.system);
}

/// Why a contender could not be connected.
pub(crate) enum Refusal {
    /// The client refused the cell's input before sending (listed unsupported).
    Unsupported(String),
    /// It failed, or answered wrongly.
    Failed(String),
}

/// The row's concurrency model and counted connections, when a client set them.
pub(crate) type Model = Option<(kvbench_results::ConcurrencyModel, u32)>;

/// Connects a contender to the visit's server and verifies a client's work once.
pub(crate) fn connect<'w>(
    ctx: &mut Context<'_>,
    w: &Workload,
    args: &Args<'w>,
    (endpoint, reference): (&Endpoint, &mut Reference),
    source: Source,
    measure: Measure,
    (block, depth): (Duration, verify::Depth),
) -> std::result::Result<(Live<'w>, Model), Refusal> {
    let cell = &w.cell;
    let failed =
        |what: &str, err: &dyn std::fmt::Display| Refusal::Failed(format!("{what}: {err}"));
    match source {
        Source::Client(spec) => {
            let sockets_before = callers::Sockets::now();
            let mut driver = Driver::connect(&spec, endpoint, &bench_options())
                .map_err(|err| failed("connect", &err))?;
            let verified_in = match verify::verify(driver.client(), reference, &spec, w, depth) {
                Ok(took) => took,
                Err(Rejection::Refused(reason)) => {
                    return Err(Refusal::Unsupported(format!(
                        "refused before sending: {reason}"
                    )));
                }
                Err(Rejection::Failed(err)) => {
                    eprintln!("  {}: verification failed: {err}", spec.name);
                    return Err(Refusal::Failed(format!("verification: {err}")));
                }
            };
            #[cfg(feature = "fault-injection")]
            maybe_stop_server(ctx, cell, spec.name);
            if cell.concurrency > 1 {
                drop(driver);
                return connect_callers(&spec, endpoint, w)
                    .map(|(live, model)| (live, Some(model)));
            }
            // Counted after verification, so a pool that connects lazily has connected.
            let connections = sockets_before.opened_since() as u32;
            let model = (callers::model_of(spec.concurrency), connections);
            let args = client_args(args, measure, &mut driver, w, block);
            // Items per call: the cell's, or the first ones the plan gives it (a cluster's GET
            // has keys to take turns with, but reads one of them a call).
            let ops = match measure.items {
                Items::Cell => cell.pipeline,
                Items::First(_) | Items::FitBlock => args.items.len(),
            } as u64;
            let runner = Runner::One {
                driver,
                args,
                floor: None,
            };
            let mut live = Live::new(spec.name, runner, ops);
            // Verification made the blocks' very call: a long one needs no other to size them.
            if measure.items == Items::Cell
                && cell.op.is_pipeline_set()
                && depth == verify::Depth::Cell
            {
                live.one_call = Some(verified_in);
            }
            Ok((live, Some(model)))
        }
        Source::LoopbackFloor(spec) => {
            let spec =
                spec.ok_or_else(|| Refusal::Failed("no client declares the floor".into()))?;
            let cpu = ctx.settings.placement.server_cpu;
            let floor = LoopbackFloor::start(w, cell.transport, cpu, ctx.dir)
                .map_err(|err| failed("starting the floor server", &format!("{err:#}")))?;
            let driver = Driver::connect(&spec, &floor.endpoint, &bench_options())
                .map_err(|err| failed("connect", &err))?;
            let runner = Runner::One {
                driver,
                args: Args::default(),
                floor: Some(floor),
            };
            Ok((Live::new(crate::baselines::LOOPBACK_FLOOR, runner, 1), None))
        }
        Source::NetworkFloor => {
            let mut pinger = Pinger::connect(cell.backend, endpoint, &Options::default())
                .map_err(|err| failed("network floor", &err))?;
            pinger
                .warm_up(100)
                .map_err(|err| failed("network floor", &err))?;
            let name = crate::network_floor::NETWORK_FLOOR;
            Ok((Live::new(name, Runner::Pinger(pinger), 1), None))
        }
        Source::RedisBenchmark => {
            let cpu = ctx.settings.placement.client_cpu;
            let tool = Tool::redis_benchmark(w, endpoint, cpu, &mut |key, value| {
                match value {
                    Some(value) => reference.set(key, value),
                    None => reference.delete_many(&[key.to_vec()]),
                }
                .map_err(anyhow::Error::msg)
            })
            .map_err(|err| failed("redis-benchmark", &format!("{err:#}")))?;
            let runner = Runner::Tool {
                tool,
                latency: None,
            };
            Ok((
                Live::new(crate::baselines::REDIS_BENCHMARK, runner, 1),
                tool_model(cell),
            ))
        }
        Source::Memaslap => {
            let cpu = ctx.settings.placement.client_cpu;
            let tool = Tool::memaslap(cell, endpoint, cpu, ctx.dir)
                .map_err(|err| failed("memaslap", &format!("{err:#}")))?;
            let runner = Runner::Tool {
                tool,
                latency: None,
            };
            Ok((
                Live::new(crate::baselines::MEMASLAP, runner, 1),
                tool_model(cell),
            ))
        }
    }
}

/// A baseline tool's model: one connection per caller, driven by one event loop.
fn tool_model(cell: &Cell) -> Model {
    let model = match cell.concurrency {
        1 => kvbench_results::ConcurrencyModel::Threads,
        _ => kvbench_results::ConcurrencyModel::EventLoop,
    };
    Some((model, cell.concurrency as u32))
}

/// One call's arguments for a client: the cell's, or its first items ([`Items`]). A client that
/// fits its items to a block is timed on the first 100 items to learn its speed per item.
fn client_args<'w>(
    args: &Args<'w>,
    measure: Measure,
    driver: &mut Driver,
    w: &Workload,
    block: Duration,
) -> Args<'w> {
    match measure.items {
        Items::Cell => args.first(usize::MAX),
        Items::First(n) => args.first(n),
        Items::FitBlock => {
            let probe = args.first(100);
            let started = Instant::now();
            let per_item = match driver.run_n(w, &probe, 1, &mut |_| {}) {
                Ok(()) => started.elapsed().as_secs_f64() / 100.0,
                // The rounds meet the same error and report it.
                Err(_) => 1e-3,
            };
            let fit = (block.as_secs_f64() / per_item.max(1e-9)) as usize;
            let items = (fit / 100 * 100).clamp(100, w.cell.pipeline);
            args.first(items)
        }
    }
}

/// The cell's callers of `spec`, connected as its spec's concurrency model says.
fn connect_callers<'w>(
    spec: &ClientSpec,
    endpoint: &Endpoint,
    w: &Workload,
) -> std::result::Result<(Live<'w>, (kvbench_results::ConcurrencyModel, u32)), Refusal> {
    let cell = &w.cell;
    let callers =
        Callers::connect(spec, endpoint, &bench_options(), cell.concurrency, w).map_err(|err| {
            Refusal::Failed(format!("connecting {} callers: {err}", cell.concurrency))
        })?;
    let model = (callers.model, callers.connections as u32);
    let ops = cell.concurrency as u64;
    let runner = Runner::Many {
        callers,
        window: Duration::ZERO,
    };
    Ok((Live::new(spec.name, runner, ops), model))
}

/// The reference's A/A twin: the same client on a second connection (or a second set of
/// callers), with the same arguments, not verified again (the same code just was).
fn connect_twin<'w>(
    w: &Workload,
    args: &Args<'w>,
    endpoint: &Endpoint,
    reference: &Entry<'w>,
) -> Option<Live<'w>> {
    let spec = reference.spec?;
    let outcome = if w.cell.concurrency > 1 {
        connect_callers(&spec, endpoint, w).map(|(live, _)| live)
    } else {
        match Driver::connect(&spec, endpoint, &bench_options()) {
            Ok(driver) => {
                let args = match &reference.live.runner {
                    Runner::One { args: theirs, .. } => {
                        args.first(theirs.items.len().max(theirs.keys.len()).max(1))
                    }
                    _ => args.first(usize::MAX),
                };
                let ops = reference.live.ops_per_call;
                let runner = Runner::One {
                    driver,
                    args,
                    floor: None,
                };
                Ok(Live::new(spec.name, runner, ops))
            }
            Err(err) => Err(Refusal::Failed(err.to_string())),
        }
    };
    match outcome {
        Ok(live) => Some(live),
        Err(Refusal::Failed(why) | Refusal::Unsupported(why)) => {
            eprintln!("  {}: no A/A twin: {why}", w.cell);
            None
        }
    }
}

/// The row of a contender in `cell`, nothing measured yet.
pub(crate) fn new_row(cell: &Cell, contender: &crate::plan::Contender) -> Row {
    results::new_row(cell, contender.name, contender.kind)
}

/// A pair's error, with the likely cause when the server is gone.
pub(crate) fn pair_error(servers: &Servers, cell: &Cell, what: &str) -> String {
    if servers.is_alive(cell.backend) {
        what.to_string()
    } else {
        format!("{what} (the {} server is no longer running)", cell.backend)
    }
}

/// The test-only fault (`KVBENCH_FAULT_STOP_SERVER`): stops the cell's server after `client`'s
/// verification, so its timing and every later pair of the cell meet a dead server.
#[cfg(feature = "fault-injection")]
fn maybe_stop_server(ctx: &mut Context<'_>, cell: &Cell, client: &str) {
    let wanted = ctx.settings.stop_server_at.as_ref();
    if wanted.is_some_and(|(c, name)| *c == cell.id() && name == client) {
        eprintln!(
            "  fault: stopping the {} server during {cell}",
            cell.backend
        );
        if let Err(err) = ctx.servers.stop(cell.backend) {
            eprintln!("  fault: could not stop the server: {err}");
        }
    }
}

/// Starts the cell's private server afresh, so no state of an earlier cell (memory, expiring
/// keys, a connection still closing) is left for this one: a dead one is noted, a live one just
/// restarted. An external server is checked for an answer instead.
fn fresh_server(ctx: &mut Context<'_>, cell: &Cell) -> Result<()> {
    let backend = cell.backend;
    if ctx.servers.is_external(backend) {
        if ctx.servers.is_alive(backend) {
            return Ok(());
        }
        anyhow::bail!("the external {backend} server does not answer");
    }
    if !ctx.servers.is_alive(backend) {
        let note = format!("the private {backend} server had died; restarted before {cell}");
        eprintln!("  {note}");
        ctx.notes.push(note);
    }
    ctx.servers
        .restart(backend)
        .with_context(|| format!("restarting the private {backend} server"))
}

/// Starts reading the cell's server's byte counters around a cost pass ([`crate::wire`]), unless
/// the row is a baseline's (the loopback floor talks to a server of its own) or the server is
/// external (its counters include every other client's traffic): their bytes stay null.
fn wire_meter(servers: &Servers, cell: &Cell, kind: Kind) -> Option<Result<WireMeter, StatsError>> {
    if kind == Kind::Baseline || servers.is_external(cell.backend) {
        return None;
    }
    let endpoints = match servers.cluster() {
        // Every node's traffic: a cluster client talks to all of them.
        Some(cluster) if cell.backend == Backend::RedisCluster => (cluster.nodes().iter())
            .map(|node| node.endpoint())
            .collect(),
        _ => vec![servers.endpoint(cell.backend, cell.transport)?],
    };
    Some(WireMeter::start(cell.backend, &endpoints, STATS_TIMEOUT))
}

/// The cost pass of a timed contender (clients and floors): about the mode's seconds of calls at
/// the speed its blocks ran, at most the plan's calls; at least ten calls in a request/response
/// cell, for percentiles; a client slow by design gets the mode's few. A clean half times them
/// one by one (CPU time, percentiles); a counting half (a tenth as many, as many with many
/// callers) counts system calls and allocations. The server's byte counters around both give
/// the bytes on the wire.
fn cost_pass(ctx: &Context<'_>, cell: &Cell, w: &Workload, entry: &mut Entry) -> Row {
    let policy = ctx.settings.mode.policy();
    let row = entry.row.clone();
    let per_call = entry
        .blocks
        .iter()
        .map(|b| b.seconds / entry.live.calls_per_block as f64)
        .fold(f64::MAX, f64::min);
    let fits = (policy.cost_pass_seconds / per_call.max(1e-9)).ceil() as u64;
    let at_least = if cell.is_request_response() { 10 } else { 1 };
    let mut calls = entry.measure.cost_calls.min(fits.max(at_least));
    if entry.measure.slow {
        calls = calls.min(policy.slow_client_calls);
    }
    let many = cell.concurrency > 1;
    let count_calls = if many { calls } else { calls.div_ceil(10) };
    // The clean half is for the latency percentiles of single operations; the CPU time comes
    // from the rounds' blocks. A cell of many items per call has no percentiles: counting only.
    let calls = if cell.is_request_response() { calls } else { 0 };
    let meter = wire_meter(ctx.servers, cell, row.kind);
    let ops_per_call = entry.live.ops_per_call;
    let count_syscalls = ctx.count_syscalls;
    let outcome = match &mut entry.live.runner {
        Runner::One { driver, args, .. } => costs::measure(
            count_syscalls,
            (calls, count_calls),
            ops_per_call,
            cell.is_request_response(),
            |n, each| driver.run_n(w, args, n, each),
        ),
        Runner::Many { callers, .. } => costs::measure(
            count_syscalls,
            (calls, count_calls),
            ops_per_call,
            true,
            |n, each| {
                let round = callers.round(w, n, true)?;
                round
                    .latencies
                    .iter()
                    .for_each(|&ns| each(Duration::from_nanos(ns)));
                Ok(())
            },
        ),
        Runner::Pinger(pinger) => {
            costs::measure(count_syscalls, (calls, count_calls), 1, true, |n, each| {
                pinger.timed(n, each)
            })
        }
        Runner::Tool { .. } => return row,
    };
    let ops = (calls + count_calls) * ops_per_call;
    let outcome = with_wire_bytes(meter, outcome, ops);
    let rounds_cpu = (row.cpu_ns_per_op, row.user_ns_per_op, row.sys_ns_per_op);
    let mut row = match outcome {
        Ok(costs) => {
            let mut row = row.with_costs(&costs);
            (row.cpu_ns_per_op, row.user_ns_per_op, row.sys_ns_per_op) = rounds_cpu;
            row
        }
        Err(err) => {
            let why = pair_error(ctx.servers, cell, &format!("cost pass: {err}"));
            return row.fail(Status::Failed, why);
        }
    };
    if many
        && let Some(program) = ctx.memory_probe
        && let Some(spec) = entry.spec
    {
        let endpoint = ctx.servers.endpoint(cell.backend, cell.transport);
        match endpoint.map(|e| callers::memory_per_caller(program, &spec, &e, w)) {
            Some(Ok(bytes)) => row.memory_per_caller_bytes = Some(bytes),
            Some(Err(err)) => row
                .flags
                .push(format!("memory per caller not measured: {err}")),
            None => {}
        }
    }
    row
}

/// The cost pass's `outcome` with the bytes per operation of its `ops` operations (both halves)
/// from `meter`; a reading that failed leaves them null, and the row's flags say why.
fn with_wire_bytes(
    meter: Option<Result<WireMeter, StatsError>>,
    outcome: kvbench_core::Result<costs::Costs>,
    ops: u64,
) -> kvbench_core::Result<costs::Costs> {
    let Some(meter) = meter else {
        return outcome;
    };
    let mut costs = outcome?;
    match meter.and_then(WireMeter::finish) {
        Ok(traffic) => {
            let (read, written) = traffic.per_op(ops);
            costs.bytes_read_per_op = Some(read);
            costs.bytes_written_per_op = Some(written);
        }
        Err(err) => costs.wire_error = Some(err.to_string()),
    }
    Ok(costs)
}

/// Gives criterion each contender's block times, so that its statistics and report (one group
/// per cell, one function per contender, side by side) describe the paired blocks. criterion
/// times nothing itself: each sample it asks for is that many operations at the next block's
/// time per operation.
fn feed_criterion(ctx: &mut Context<'_>, visit: &Visit, entries: &[(usize, Entry)]) {
    let group_name = match visit.repeat {
        1 => visit.cell.id(),
        repeat => format!("{} (visit {repeat})", visit.cell.id()),
    };
    let mut group = ctx.criterion.benchmark_group(group_name);
    // Throughput before any function is registered, or it applies to none. Cells of many items
    // count items, whatever their size, so that the ways of doing the same work compare per item.
    group.throughput(match visit.cell.pipeline {
        1 if visit.cell.value_size >= 1024 => {
            criterion::Throughput::Bytes(visit.cell.value_size as u64)
        }
        _ => criterion::Throughput::Elements(1),
    });
    for (_, entry) in entries
        .iter()
        .filter(|(_, e)| e.row.is_ok() && !e.blocks.is_empty())
    {
        let per_op: Vec<f64> = entry.blocks.iter().map(|b| 1e9 / b.rate()).collect();
        let mut next = 0usize;
        group.bench_function(entry.live.name, |b| {
            b.iter_custom(|iters| {
                let ns = per_op[next % per_op.len()];
                next += 1;
                Duration::from_secs_f64(ns * iters as f64 / 1e9)
            })
        });
    }
    group.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_slow_clients_and_a_deep_pipelines_long_calls_run_in_some_rounds_only() {
        let rounds = Rounds {
            block: Duration::from_millis(2),
            min: 5,
            max: 5_000,
            budget: Duration::from_secs(8),
            min_tool_runs: 2,
            min_memaslap_runs: 3,
            min_long_call_runs: 1,
        };
        let ms = Duration::from_millis;
        let pace = |tool, block: u64, reference: Option<u64>, deep| {
            pace(
                tool,
                ms(block),
                reference.map(ms),
                (deep, false),
                &rounds,
                8,
            )
        };
        let aim = |min_runs, interval: u64| {
            Some(Aim {
                min_runs,
                interval: ms(interval),
                every: 1,
            })
        };
        // A baseline tool: up to `tool_runs` runs over the budget; memaslap: its minimum.
        assert_eq!(
            pace(Some("redis-benchmark"), 100, Some(2), false),
            aim(2, 1_000)
        );
        assert_eq!(
            pace(Some("redis-benchmark"), 800, Some(300), true),
            aim(2, 1_000)
        );
        let memaslap = Aim {
            min_runs: 3,
            interval: rounds.budget / 3,
            every: 1,
        };
        assert_eq!(
            pace(Some("memaslap"), 2_000, Some(2), false),
            Some(memaslap)
        );
        // A client: every round, unless its block is ten of the plan's (slow by design).
        assert_eq!(pace(None, 2, Some(2), false), None);
        assert_eq!(pace(None, 20, Some(2), false), None);
        assert_eq!(pace(None, 40, Some(2), false), aim(2, 1_000));
        // A deep pipeline: every block is one call, long for everyone; a client whose call is
        // over four of the reference's aims at its minimum, the others run in every round.
        assert_eq!(pace(None, 6_000, Some(300), true), aim(1, 8_000));
        assert_eq!(pace(None, 1_200, Some(300), true), None);
        assert_eq!(pace(None, 700, Some(300), true), None);
        assert_eq!(pace(None, 6_000, None, true), None);
        // A deep pipeline's first call, slower than the later ones, decides nothing once a
        // block is timed: the cluster's reference at 211 ms then 70 ms, a client at 836 ms.
        let timed = |seconds| Block {
            ops: 100_000.0,
            seconds,
            cpu: None,
        };
        assert_eq!(block_time(ms(211), &[]), ms(211));
        assert_eq!(block_time(ms(211), &[timed(0.070), timed(0.300)]), ms(70));
        assert_eq!(block_time(ms(836), &[timed(0.900)]), ms(836));
        assert_eq!(pace(None, 836, Some(211), true), None);
        assert_eq!(pace(None, 836, Some(70), true), aim(1, 8_000));
        // Hundreds of callers: a client whose block is over twice the reference's runs in every
        // other round, half the rounds; a baseline tool as anywhere.
        let crowd = |tool, block: u64| {
            super::pace(tool, ms(block), Some(ms(21)), (false, true), &rounds, 8)
        };
        let alternate = Some(Aim {
            min_runs: 3,
            interval: Duration::ZERO,
            every: 2,
        });
        assert_eq!(crowd(None, 59), alternate);
        assert_eq!(crowd(None, 180), alternate);
        assert_eq!(crowd(None, 26), None);
        assert_eq!(crowd(None, 21), None);
        assert_eq!(crowd(Some("redis-benchmark"), 100), aim(2, 1_000));
    }
}
