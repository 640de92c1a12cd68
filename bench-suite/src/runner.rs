//! The run: every cell × every client that serves it, side by side in one criterion group per
//! cell (a cell with many callers runs each client's callers as its spec declares, see
//! [`crate::callers`]), plus cost passes and same-run baselines. Settings come from the
//! environment (`MODE`, `PLACEMENT`, `CLIENTS`, `CELLS`, `RUN_ID`, `REPEAT`, `REPEAT_CELLS`,
//! `ORDER_SEED`, `CONCURRENCY`; see `bench-suite/README.md` and [`Settings::from_env`]). Behind
//! both `benches/matrix.rs` and the `kvbench-matrix` binary.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::baselines::{self, LoopbackFloor};
use crate::callers::{self, Callers};
use crate::costs::{self, SyscallCounter};
use crate::drivers::{self, Args, Driver, Workload};
use crate::environment;
use crate::matrix::{Cell, Matrix, Mode, Settings};
use crate::network_floor;
use crate::results::{self, Results, Row, RowExt, Run, Status, Wall};
use crate::verify::{self, Rejection};
use crate::wire::{StatsError, WireMeter};
use anyhow::{Context, Result};
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use kvbench_conformance::Reference;
use kvbench_core::{Backend, ClientSpec, Options};
use kvbench_results::{ClusterNodeRecord, ClusterRecord, Kind, Server, Servers as ServersRecord};
use kvbench_servers::{Servers, StartOptions};

/// Pipelines at least this deep, through a client without pipelining, are timed by a single
/// call within a time budget instead of by criterion (see [`choose_timing`]); criterion gives
/// them ten flat samples otherwise.
const SINGLE_SHOT_DEPTH: usize = 100_000;

/// Connection settings for the bench: the default 5 s connect timeout, but 60 s for reads and
/// writes, because fred times a whole pipeline as one command and a million commands through
/// it take several seconds on a loaded 2-CPU machine.
fn bench_options() -> Options {
    Options {
        read_timeout: Duration::from_secs(60),
        write_timeout: Duration::from_secs(60),
        ..Options::default()
    }
}

/// `pair <cell>/<client>: <status> (<how it was timed, or why not>)`, one line per row.
pub fn pair_line(row: &Row) -> String {
    let detail = match (&row.error, row.ops_per_sec, &row.timing) {
        (Some(error), _, _) => error.clone(),
        (None, Some(ops), Some(timing)) => format!("{ops:.0} ops/s; {timing}"),
        (None, None, Some(timing)) => timing.clone(),
        (None, Some(ops), None) => format!("{ops:.0} ops/s"),
        (None, None, None) => String::from("verified"),
    };
    format!(
        "pair {}/{}: {} ({detail})",
        row.cell, row.client, row.status
    )
}

/// Calls in a cost pass: enough operations for stable per-op numbers, a fraction of a second.
fn cost_pass_calls(cell: &Cell, mode: Mode) -> u64 {
    let calls: u64 = match cell.op {
        op if op.is_pipeline_set() && cell.pipeline >= 100_000 => 1,
        op if op.is_pipeline_set() => 100,
        // A hundred items a call (get_many, hash, transactions).
        _ if cell.pipeline > 1 => 500,
        _ if cell.value_size >= 1 << 20 => 200,
        _ if cell.value_size >= 100 << 10 => 1_000,
        _ => 5_000,
    };
    calls.div_ceil(mode.policy().cost_pass_divisor)
}

/// How long a reading of a server's byte counters may take ([`crate::wire`]).
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// Starts reading the cell's server's byte counters around a cost pass ([`crate::wire`]), unless
/// the row is a baseline's (the loopback floor talks to a server of its own) or the server is
/// external (its counters include every other client's traffic): their bytes stay null.
fn wire_meter(h: &Harness, cell: &Cell, kind: Kind) -> Option<Result<WireMeter, StatsError>> {
    if kind == Kind::Baseline || h.servers.is_external(cell.backend) {
        return None;
    }
    let endpoints = match h.servers.cluster() {
        // Every node's traffic: a cluster client talks to all of them.
        Some(cluster) if cell.backend == Backend::RedisCluster => (cluster.nodes().iter())
            .map(|node| node.endpoint())
            .collect(),
        _ => vec![h.servers.endpoint(cell.backend, cell.transport)?],
    };
    Some(WireMeter::start(cell.backend, &endpoints, STATS_TIMEOUT))
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

fn kind(spec: &ClientSpec) -> Kind {
    results::kind(spec.kind)
}

struct Harness {
    settings: Settings,
    /// Every client the run knows, selected or not: the loopback floor's is among them.
    clients: Vec<ClientSpec>,
    servers: Servers,
    dir: PathBuf,
    results: Arc<Mutex<Results>>,
    /// Every run of every pair so far, in the order pairs first ran; `results.rows` holds one
    /// row per pair, merged from these.
    runs: Vec<Vec<Row>>,
    /// Syscall counters could be opened at start-up (else the run's notes say why).
    count_syscalls: bool,
    started: Instant,
    /// The round of the cell being run (1 to `REPEAT`).
    round: u32,
    /// Backends on another host: a network floor instead of the loopback floor.
    remote: Vec<Backend>,
}

impl Harness {
    /// Records a row and lists its pair: criterion prints only the pairs it times, and a run
    /// (`--test` included) must account for every one, single shots, baselines and refused or
    /// failed pairs too.
    fn push(&mut self, row: Row) {
        if self.settings.repeat > 1 {
            eprintln!(
                "{} [run {} of {}]",
                pair_line(&row),
                self.round,
                self.settings.repeat
            );
        } else {
            eprintln!("{}", pair_line(&row));
        }
        // `runs[i]` are the runs of the pair whose merged row is `results.rows[i]`: only the
        // pair that changed is merged again.
        let same_pair = |runs: &Vec<Row>| runs[0].cell == row.cell && runs[0].client == row.client;
        let index = match self.runs.iter().position(same_pair) {
            Some(index) => {
                self.runs[index].push(row);
                index
            }
            None => {
                self.runs.push(vec![row]);
                self.runs.len() - 1
            }
        };
        let merged = results::merge(&self.runs[index]);
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        match results.rows.get_mut(index) {
            Some(slot) => *slot = merged,
            None => results.rows.push(merged),
        }
    }

    fn save(&self) -> Result<()> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.duration_s = self.started.elapsed().as_secs_f64();
        results::write(&self.dir, &results)
    }

    fn criterion_dir(&self) -> PathBuf {
        self.dir.join("criterion")
    }

    /// The criterion group of `cell` in this round: the cell id, with the round after the first.
    fn group_name(&self, cell: &Cell) -> String {
        match self.round {
            1 => cell.id(),
            round => format!("{} (run {round})", cell.id()),
        }
    }

    /// criterion's estimate for `function` in `cell`, per operation.
    fn wall(&self, cell: &Cell, function: &str, samples: usize) -> Result<Wall> {
        let per_iteration = results::criterion_estimate(
            &self.criterion_dir(),
            &self.group_name(cell),
            function,
            samples as u32,
        )?;
        let ops = cell.ops_per_iteration() as f64;
        let mut wall = per_iteration;
        wall.median /= ops;
        wall.mean = wall.mean.map(|mean| mean / ops);
        if let Some(interval) = wall.interval.as_mut() {
            interval.lower /= ops;
            interval.upper /= ops;
        }
        Ok(wall)
    }

    fn report_link(&self, cell: &Cell) -> Option<String> {
        let relative = format!(
            "criterion/{}/report/index.html",
            results::criterion_dir_name(&cell.id())
        );
        self.dir.join(&relative).exists().then_some(relative)
    }
}

/// Times one driver inside the cell's group; returns the first error the work met, if any.
#[allow(
    clippy::await_holding_refcell_ref,
    reason = "the runtime is current-thread and criterion awaits one iteration batch at a time: \
              the borrow cannot be contended"
)]
fn time_driver(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    driver: &mut Driver,
    w: &Workload,
    args: &Args,
) -> Option<kvbench_core::Error> {
    // An error inside the timed loop is kept and stops the work; the row is then marked failed.
    let failure = std::cell::RefCell::new(None);
    match driver {
        Driver::Sync(client) => {
            group.bench_function(name, |b| {
                b.iter(|| {
                    if failure.borrow().is_none()
                        && let Err(err) = drivers::run_sync(client.as_mut(), w, args)
                    {
                        *failure.borrow_mut() = Some(err);
                    }
                })
            });
        }
        Driver::Async(async_driver) => {
            let runtime = &async_driver.runtime;
            let client = std::cell::RefCell::new(&mut async_driver.inner);
            group.bench_function(name, |b| {
                b.to_async(runtime).iter_custom(|iters| {
                    let (client, failure) = (&client, &failure);
                    async move {
                        let mut client = client.borrow_mut();
                        let start = Instant::now();
                        for _ in 0..iters {
                            if failure.borrow().is_some() {
                                break;
                            }
                            if let Err(err) = drivers::run_async(&mut ***client, w, args).await {
                                *failure.borrow_mut() = Some(err);
                            }
                        }
                        start.elapsed()
                    }
                })
            });
        }
    }
    failure.into_inner()
}

/// Runs the cost pass for a driver and returns the row with costs filled in. `call_took` is
/// how long one call took in verification: calls that take long get fewer of them.
fn with_cost_pass(
    h: &mut Harness,
    row: Row,
    driver: &mut Driver,
    w: &Workload,
    args: &Args,
    call_took: Duration,
    slow: bool,
) -> Row {
    // About a second of calls (0.1 s in the quick run), at least 10 for request/response
    // cells (percentiles), and never more than the cell's count: the `memcache` crate's
    // 1,000-item default loop takes 0.2 s a call, and 100 of them would be 20 s per client.
    let policy = h.settings.mode.policy();
    let fits = (policy.cost_pass_seconds / call_took.as_secs_f64().max(1e-9)).ceil() as u64;
    let at_least = if w.cell.is_request_response() { 10 } else { 1 };
    let calls = cost_pass_calls(&w.cell, h.settings.mode).min(fits.max(at_least));
    // A client slow by design (~40 ms a round trip once its connection has left TCP's quick-ACK
    // start) may look fast in its one verification call: it gets the policy's few calls,
    // whatever it looked like.
    let calls = if slow {
        calls.min(policy.slow_client_calls)
    } else {
        calls
    };
    // Counts per operation are the same in every call: a tenth of the calls count them.
    let meter = wire_meter(h, &w.cell, row.kind);
    let outcome = costs::measure(
        h.count_syscalls,
        (calls, calls.div_ceil(10)),
        w.cell.ops_per_iteration(),
        w.cell.is_request_response(),
        |n, each| driver.run_n(w, args, n, each),
    );
    let ops = (calls + calls.div_ceil(10)) * w.cell.ops_per_iteration();
    let outcome = with_wire_bytes(meter, outcome, ops);
    match outcome {
        Ok(costs) => row.with_costs(&costs),
        Err(err) => row.fail(Status::Failed, format!("cost pass: {err}")),
    }
}

/// How a verified pair is timed.
enum Timing {
    /// In the cell's criterion group.
    Criterion,
    /// `calls` calls of the first `depth` items, each timed on its own (see [`choose_timing`]).
    SingleShots {
        calls: u64,
        depth: usize,
        why: String,
    },
}

/// criterion unless one call is too long for it: a client without pipelining at depths of
/// [`SINGLE_SHOT_DEPTH`] and more writes what fits in the mode's time budget, once; a call that
/// took the policy's `long_call` or more in verification is repeated `long_call_repeats` times.
fn choose_timing(spec: &ClientSpec, w: &Workload, mode: Mode, verified_in: Duration) -> Timing {
    let cell = &w.cell;
    let policy = mode.policy();
    if !cell.op.is_pipeline_set() {
        return Timing::Criterion;
    }
    if cell.pipeline >= SINGLE_SHOT_DEPTH && !spec.pipelines() {
        let verified_items = verify::pipeline_depth(spec, w) as f64;
        let per_item = verified_in.as_secs_f64() / verified_items;
        let fits = (policy.single_shot_budget.as_secs_f64() / per_item.max(1e-9)) as usize;
        let depth = if mode == Mode::Test {
            verify::DEFAULT_LOOP_VERIFY_DEPTH
        } else {
            (fits / 1_000 * 1_000).clamp(1_000, cell.pipeline)
        };
        let why = if depth < cell.pipeline {
            format!(
                "single-shot: the first {depth} of {} items, in one call ({:?} budget; no \
                 pipelining: one round trip per item at any depth)",
                cell.pipeline, policy.single_shot_budget
            )
        } else {
            format!("single-shot: one call of {depth} items (no pipelining)")
        };
        return Timing::SingleShots {
            calls: 1,
            depth,
            why,
        };
    }
    if verified_in >= policy.long_call {
        let calls = policy.long_call_repeats;
        // A --test run has just run the whole call in verification; the timed path is
        // exercised on the first items only.
        let depth = if mode == Mode::Test {
            cell.pipeline.min(verify::DEFAULT_LOOP_VERIFY_DEPTH)
        } else {
            cell.pipeline
        };
        return Timing::SingleShots {
            calls,
            depth,
            why: format!(
                "single-shot: {calls} call(s) of {depth} items, each timed (one took {:.1} s, \
                 too long for criterion's 11)",
                verified_in.as_secs_f64()
            ),
        };
    }
    Timing::Criterion
}

/// Times `calls` calls of `args` one by one; the costs are measured over the same calls.
fn single_shots(
    h: &Harness,
    row: Row,
    driver: &mut Driver,
    w: &Workload,
    args: &Args,
    calls: u64,
    why: &str,
) -> Row {
    let mut durations = Vec::new();
    // The first `calls` durations are the clean pass's; one more call counts.
    let meter = wire_meter(h, &w.cell, row.kind);
    let outcome = costs::measure(
        h.count_syscalls,
        (calls, 1),
        args.items.len() as u64,
        false,
        |n, each| {
            driver.run_n(w, args, n, &mut |took| {
                durations.push(took);
                each(took)
            })
        },
    );
    let outcome = with_wire_bytes(meter, outcome, (calls + 1) * args.items.len() as u64);
    match outcome {
        Ok(costs) => {
            let per_op: Vec<f64> = durations[..calls as usize]
                .iter()
                .map(|d| d.as_nanos() as f64 / args.items.len() as f64)
                .collect();
            match results::wall_of(&per_op) {
                Some(wall) => row.with_wall(wall, why).with_costs(&costs),
                None => row.fail(Status::Failed, "during timing: no call was timed"),
            }
        }
        Err(err) => row.fail(Status::Failed, format!("during timing: {err}")),
    }
}

/// A pair's error, with the likely cause when the server is gone.
fn pair_error(h: &Harness, cell: &Cell, what: &str, err: impl std::fmt::Display) -> String {
    if h.servers.is_alive(cell.backend) {
        format!("{what}: {err}")
    } else {
        format!(
            "{what}: {err} (the {} server is no longer running)",
            cell.backend
        )
    }
}

/// The test-only fault (`KVBENCH_FAULT_STOP_SERVER`): stops the cell's server after `client`'s
/// verification, so its timing and every later pair of the cell meet a dead server.
#[cfg(feature = "fault-injection")]
fn maybe_stop_server(h: &mut Harness, cell: &Cell, client: &str) {
    let wanted = h.settings.stop_server_at.as_ref();
    if wanted.is_some_and(|(c, name)| *c == cell.id() && name == client) {
        eprintln!(
            "  fault: stopping the {} server during {cell}",
            cell.backend
        );
        if let Err(err) = h.servers.stop(cell.backend) {
            eprintln!("  fault: could not stop the server: {err}");
        }
    }
}

/// Verifies and times one client in the cell.
fn run_pair(
    h: &mut Harness,
    group: &mut BenchmarkGroup<'_, WallTime>,
    cell: &Cell,
    spec: &ClientSpec,
    (endpoint, reference): (&kvbench_core::Endpoint, &mut Reference),
    w: &Workload,
    args: &Args,
) -> Row {
    let mut row = results::new_row(cell, spec.name, kind(spec));
    if let Some(reason) = spec.slow_round_trip
        && (cell.pipeline > 1 || cell.concurrency > 1)
    {
        return row.fail(
            Status::Unsupported,
            format!("not run: every round trip is slow by design ({reason})"),
        );
    }
    // Listed, not left out: a reader sees which clients lack the operation.
    if let Some(operation) = cell.operation()
        && !spec.implements(operation)
    {
        return row.fail(
            Status::Unsupported,
            format!(
                "not run: the client does not implement {} (not among its spec's operations)",
                operation.name()
            ),
        );
    }
    let sockets_before = callers::open_sockets();
    let mut driver = match Driver::connect(spec, endpoint, &bench_options()) {
        Ok(driver) => driver,
        Err(err) => return row.fail(Status::Failed, pair_error(h, cell, "connect", err)),
    };
    let verified_in = match verify::verify(driver.client(), reference, spec, w) {
        Ok(took) => took,
        Err(Rejection::Refused(reason)) => {
            return row.fail(
                Status::Unsupported,
                format!("refused before sending: {reason}"),
            );
        }
        Err(Rejection::Failed(err)) => {
            eprintln!("  {}: verification failed: {err}", spec.name);
            return row.fail(Status::Failed, pair_error(h, cell, "verification", err));
        }
    };
    // Counted after verification, so a pool that connects lazily has connected.
    row.model = callers::model_of(spec.concurrency);
    row.connections = callers::open_sockets().saturating_sub(sockets_before) as u32;
    #[cfg(feature = "fault-injection")]
    maybe_stop_server(h, cell, spec.name);
    if cell.concurrency > 1 {
        drop(driver);
        return run_callers(h, group, row, spec, endpoint, w);
    }

    let slow = spec.slow_round_trip.is_some();
    match choose_timing(spec, w, h.settings.mode, verified_in) {
        Timing::SingleShots { calls, depth, why } => {
            single_shots(h, row, &mut driver, w, &args.first(depth), calls, &why)
        }
        Timing::Criterion => {
            if slow {
                // ~40 ms a call: ten flat samples, not the hundreds of iterations of linear
                // sampling (the group's settings apply to the functions registered after them).
                group.sample_size(10).sampling_mode(SamplingMode::Flat);
            }
            let failure = time_driver(group, spec.name, &mut driver, w, args);
            if slow {
                configure_group(group, cell, h.settings.mode);
            }
            match failure {
                Some(err) => row.fail(Status::Failed, pair_error(h, cell, "during timing", err)),
                None if h.settings.mode == Mode::Test => {
                    with_cost_pass(h, row, &mut driver, w, args, verified_in, slow)
                }
                None => match h.wall(
                    cell,
                    spec.name,
                    if slow {
                        10
                    } else {
                        group_samples(cell, h.settings.mode)
                    },
                ) {
                    Ok(wall) => with_cost_pass(
                        h,
                        row.with_wall(wall, "criterion: median of the samples, its 95 % CI"),
                        &mut driver,
                        w,
                        args,
                        verified_in,
                        slow,
                    ),
                    Err(err) => row.fail(Status::Failed, format!("no criterion estimate: {err:#}")),
                },
            }
        }
    }
}

/// Times the cell's callers of `spec` (already verified with one connection): connected as the
/// spec's concurrency model says, timed in the cell's group (an iteration is one operation of
/// every caller), then a cost pass over rounds of every caller.
fn run_callers(
    h: &mut Harness,
    group: &mut BenchmarkGroup<'_, WallTime>,
    mut row: Row,
    spec: &ClientSpec,
    endpoint: &kvbench_core::Endpoint,
    w: &Workload,
) -> Row {
    let cell = &w.cell;
    let mut callers = match Callers::connect(spec, endpoint, &bench_options(), cell.concurrency, w)
    {
        Ok(callers) => callers,
        Err(err) => {
            let what = format!("connecting {} callers", cell.concurrency);
            return row.fail(Status::Failed, pair_error(h, cell, &what, err));
        }
    };
    row.model = callers.model;
    row.connections = callers.connections as u32;
    if let Some(program) = MEMORY_PROBE_PROGRAM.get() {
        match callers::memory_per_caller(program, spec, endpoint, w) {
            Ok(bytes) => row.memory_per_caller_bytes = Some(bytes),
            Err(err) => row
                .flags
                .push(format!("memory per caller not measured: {err}")),
        }
    }
    let failure = std::cell::RefCell::new(None);
    group.bench_function(spec.name, |b| {
        b.iter_custom(|iters| {
            if failure.borrow().is_some() {
                return Duration::from_nanos(1);
            }
            match callers.round(w, iters, false) {
                Ok(round) => round.elapsed,
                Err(err) => {
                    *failure.borrow_mut() = Some(err);
                    Duration::from_nanos(1)
                }
            }
        })
    });
    if let Some(err) = failure.into_inner() {
        return row.fail(Status::Failed, pair_error(h, cell, "during timing", err));
    }
    let row = if h.settings.mode == Mode::Test {
        row
    } else {
        match h.wall(cell, spec.name, group_samples(cell, h.settings.mode)) {
            Ok(wall) => row.with_wall(
                wall,
                &format!(
                    "criterion: median of the samples, its 95 % CI; an iteration is one operation \
                     of each of {} callers",
                    cell.concurrency
                ),
            ),
            Err(err) => return row.fail(Status::Failed, format!("no criterion estimate: {err:#}")),
        }
    };
    // The cell's operations shared out among the callers, at least 20 each (percentiles); the
    // counting half runs as many, so that starting the callers' threads (counted in all
    // syscalls, not in socket ones) weighs little per operation.
    let calls = (cost_pass_calls(cell, h.settings.mode) / cell.concurrency as u64).max(20);
    let meter = wire_meter(h, cell, row.kind);
    let outcome = costs::measure(
        h.count_syscalls,
        (calls, calls),
        cell.ops_per_iteration(),
        true,
        |n, each| {
            let round = callers.round(w, n, true)?;
            round
                .latencies
                .iter()
                .for_each(|&ns| each(Duration::from_nanos(ns)));
            Ok(())
        },
    );
    let outcome = with_wire_bytes(meter, outcome, 2 * calls * cell.ops_per_iteration());
    match outcome {
        Ok(costs) => row.with_costs(&costs),
        Err(err) => row.fail(Status::Failed, pair_error(h, cell, "cost pass", err)),
    }
}

/// The group's sample size: the run's, or ten for deep pipelines.
fn group_samples(cell: &Cell, mode: Mode) -> usize {
    if cell.pipeline >= SINGLE_SHOT_DEPTH {
        10
    } else {
        mode.policy().samples
    }
}

/// The group's sampling: the run's sample size, or ten flat samples for deep pipelines.
fn configure_group(group: &mut BenchmarkGroup<'_, WallTime>, cell: &Cell, mode: Mode) {
    let samples = group_samples(cell, mode);
    if cell.pipeline >= SINGLE_SHOT_DEPTH {
        group.sample_size(samples).sampling_mode(SamplingMode::Flat);
    } else {
        group.sample_size(samples).sampling_mode(SamplingMode::Auto);
    }
}

/// What runs in a cell: each client that serves it, and the baselines.
#[derive(Debug, Clone, Copy)]
enum Entry<'a> {
    Client(&'a ClientSpec),
    Floor,
    NetworkFloor,
    RedisBenchmark,
    Memaslap,
}

/// The entries of `cell` in this visit's order: shuffled with a seed from the run's order seed,
/// the cell and the round, so no client always runs first (or right after a given other) and the
/// order can be replayed (`ORDER_SEED`).
fn entries<'a>(h: &Harness, cell: &Cell, specs: &'a [ClientSpec]) -> Vec<Entry<'a>> {
    let mut entries: Vec<Entry> = specs
        .iter()
        .filter(|spec| drivers::serves(spec, cell))
        .map(Entry::Client)
        .collect();
    // The floor is one connection's: it has no many-caller form. A remote server's cells
    // measure that host's own floor instead: the loopback floor says nothing of the network.
    if h.remote.contains(&cell.backend) {
        if network_floor::serves(cell) {
            entries.push(Entry::NetworkFloor);
        }
    } else if cell.has_floor() {
        entries.push(Entry::Floor);
    }
    if cell.backend.is_redis() {
        entries.push(Entry::RedisBenchmark);
    }
    if baselines::memaslap_serves(cell) {
        entries.push(Entry::Memaslap);
    }
    let id = cell.id();
    let cell_seed = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = fastrand::Rng::with_seed(h.settings.order_seed ^ cell_seed ^ u64::from(h.round));
    rng.shuffle(&mut entries);
    entries
}

/// Starts the cell's private server afresh, so no state of an earlier cell (memory, expiring
/// keys, a connection still closing) is left for this one: a dead one is noted, a live one just
/// restarted. An external server is checked for an answer instead.
fn fresh_server(h: &mut Harness, cell: &Cell) -> Result<()> {
    let backend = cell.backend;
    if h.servers.is_external(backend) {
        if h.servers.is_alive(backend) {
            return Ok(());
        }
        anyhow::bail!("the external {backend} server does not answer");
    }
    if !h.servers.is_alive(backend) {
        let note = format!("the private {backend} server had died; restarted before {cell}");
        eprintln!("  {note}");
        let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.notes.push(note);
    }
    h.servers
        .restart(backend)
        .with_context(|| format!("restarting the private {backend} server"))
}

/// One visit of a cell: a fresh server, then every entry in a shuffled order.
fn run_cell(
    h: &mut Harness,
    criterion: &mut Criterion,
    cell: &Cell,
    specs: &[ClientSpec],
) -> Result<()> {
    if h.servers.endpoint(cell.backend, cell.transport).is_none() {
        // An external server is reached over its URL's transport only.
        for spec in specs.iter().filter(|spec| drivers::serves(spec, cell)) {
            h.push(results::new_row(cell, spec.name, kind(spec)).fail(
                Status::Unsupported,
                format!(
                    "the {} server given by URL is not reachable over {}",
                    cell.backend, cell.transport
                ),
            ));
        }
        return h.save();
    }
    fresh_server(h, cell)?;
    // A fresh cluster is a new one, on new ports.
    let endpoint = (h.servers.endpoint(cell.backend, cell.transport)).with_context(|| {
        format!(
            "the fresh {} server has no {}",
            cell.backend, cell.transport
        )
    })?;
    let w = Workload::new(*cell, |key| h.servers.key(cell.backend, key));
    let args = w.args();
    let mut reference = Reference::connect(cell.backend, &endpoint).map_err(anyhow::Error::msg)?;
    verify::prepare(&mut reference, &w).map_err(anyhow::Error::msg)?;

    let mut group = criterion.benchmark_group(h.group_name(cell));
    // Throughput before any function is registered, or it applies to none.
    // Cells of many items count items (commands, keys, fields, SETs), whatever their size, so
    // that the ways of doing the same work compare per item.
    group.throughput(match cell.pipeline {
        1 if cell.value_size >= 1024 => Throughput::Bytes(cell.value_size as u64),
        items => Throughput::Elements(items as u64),
    });
    configure_group(&mut group, cell, h.settings.mode);

    for entry in entries(h, cell, specs) {
        let started = Instant::now();
        let mut row = match entry {
            Entry::Client(spec) => run_pair(
                h,
                &mut group,
                cell,
                spec,
                (&endpoint, &mut reference),
                &w,
                &args,
            ),
            Entry::Floor => floor_row(h, &mut group, cell, &w, &bench_options()),
            Entry::NetworkFloor => {
                network_floor::row(cell, &endpoint, h.settings.mode, h.count_syscalls)
            }
            Entry::RedisBenchmark => redis_benchmark_row(h, &w, &endpoint, &mut reference),
            Entry::Memaslap => memaslap_row(h, cell, &endpoint),
        };
        row.seconds = Some(started.elapsed().as_secs_f64());
        h.push(row);
    }
    group.finish();

    // On someone else's server, leave nothing behind: the cell's keys (every pipeline item uses
    // its one key; a cell of many distinct items has them too) go; verification already removed
    // its own keys.
    if h.servers.is_external(cell.backend) {
        reference
            .delete_many(&w.server_keys())
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("removing {cell}'s keys from the external server"))?;
    }

    if h.round == 1 {
        let link = h.report_link(cell);
        let id = cell.id();
        for runs in h.runs.iter_mut().filter(|runs| runs[0].cell == id) {
            for row in runs.iter_mut() {
                row.criterion_report = link.clone();
            }
        }
        let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        for row in results.rows.iter_mut().filter(|row| row.cell == id) {
            row.criterion_report = link.clone();
        }
    }
    h.save()
}

/// A baseline tool's row in `cell` from `run`, unless the cell's server is external: the tools
/// write keys of their own, without the run's prefix.
fn tool_row(h: &Harness, cell: &Cell, tool: &str, run: impl FnOnce() -> Row) -> Row {
    if h.servers.is_external(cell.backend) {
        return results::new_row(cell, tool, Kind::Baseline).fail(
            Status::Unsupported,
            format!("{tool} writes unprefixed keys: not run against an external server"),
        );
    }
    let row = run();
    if row.status == Status::Failed {
        let err = row.error.clone().unwrap_or_default();
        return row.fail(Status::Failed, pair_error(h, cell, tool, err));
    }
    row
}

fn redis_benchmark_row(
    h: &Harness,
    w: &Workload,
    endpoint: &kvbench_core::Endpoint,
    reference: &mut Reference,
) -> Row {
    tool_row(h, &w.cell, baselines::REDIS_BENCHMARK, || {
        baselines::redis_benchmark(
            w,
            endpoint,
            h.settings.placement.client_cpu,
            h.settings.mode,
            &mut |key, value| {
                match value {
                    Some(value) => reference.set(key, value),
                    None => reference.delete_many(&[key.to_vec()]),
                }
                .map_err(anyhow::Error::msg)
            },
        )
    })
}

fn memaslap_row(h: &Harness, cell: &Cell, endpoint: &kvbench_core::Endpoint) -> Row {
    tool_row(h, cell, baselines::MEMASLAP, || {
        let cpu = h.settings.placement.client_cpu;
        baselines::memaslap(cell, endpoint, cpu, h.settings.mode, &h.dir)
    })
}

fn floor_row(
    h: &mut Harness,
    group: &mut BenchmarkGroup<'_, WallTime>,
    cell: &Cell,
    w: &Workload,
    options: &Options,
) -> Row {
    let row = results::new_row(cell, baselines::LOOPBACK_FLOOR, Kind::Baseline);
    let Some(spec) = LoopbackFloor::client(&h.clients, cell.backend, cell.transport).copied()
    else {
        return row.fail(
            Status::Failed,
            format!("no client declares the loopback floor of {cell}"),
        );
    };
    let client_name = spec.name;
    let floor =
        match LoopbackFloor::start(w, cell.transport, h.settings.placement.server_cpu, &h.dir) {
            Ok(floor) => floor,
            Err(err) => {
                return row.fail(
                    Status::Failed,
                    format!("starting the floor server: {err:#}"),
                );
            }
        };
    let row = match Driver::connect(&spec, &floor.endpoint, options) {
        Err(err) => row.fail(Status::Failed, format!("connect: {err}")),
        Ok(mut driver) => {
            let name = baselines::LOOPBACK_FLOOR;
            let row = match time_driver(group, name, &mut driver, w, &Args::default()) {
                Some(err) => row.fail(Status::Failed, format!("during timing: {err}")),
                None if h.settings.mode == Mode::Test => with_cost_pass(
                    h,
                    row,
                    &mut driver,
                    w,
                    &Args::default(),
                    Duration::ZERO,
                    false,
                ),
                None => match h.wall(cell, name, group_samples(cell, h.settings.mode)) {
                    Ok(wall) => {
                        let row = row.with_wall(
                            wall,
                            &format!(
                                "criterion: median of the samples, its 95 % CI ({client_name} \
                                 against a canned reply)"
                            ),
                        );
                        with_cost_pass(
                            h,
                            row,
                            &mut driver,
                            w,
                            &Args::default(),
                            Duration::ZERO,
                            false,
                        )
                    }
                    Err(err) => row.fail(Status::Failed, format!("no criterion estimate: {err:#}")),
                },
            };
            drop(driver);
            row
        }
    };
    floor.join();
    row
}

/// Raises the soft limit on open files (`RLIMIT_NOFILE`) for `callers` in flight (see
/// [`open_files_wanted`]).
fn raise_open_file_limit(callers: usize) -> Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error()).context("reading RLIMIT_NOFILE");
    }
    let Some(want) = open_files_wanted(callers, limit.rlim_cur, limit.rlim_max)? else {
        return Ok(());
    };
    limit.rlim_cur = want;
    // SAFETY: `limit` is a valid rlimit, within the hard limit just read.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("raising RLIMIT_NOFILE to {want}"));
    }
    Ok(())
}

/// The soft limit on open files `callers` in flight need, if the current `soft` one is too low:
/// their sockets in the bench, a baseline's in its process and the servers' ends (the servers
/// inherit the limit), plus room for the rest. Refuses, naming the limit, when the `hard` limit
/// is too low: better than failing halfway through the run.
fn open_files_wanted(callers: usize, soft: u64, hard: u64) -> Result<Option<u64>> {
    let want = 2 * callers as u64 + 1024;
    if soft >= want {
        return Ok(None);
    }
    if hard < want {
        anyhow::bail!(
            "{callers} callers need {want} open files, but the hard limit on open files \
             (RLIMIT_NOFILE, `ulimit -Hn`) is {hard}: raise it, or lower CONCURRENCY"
        );
    }
    Ok(Some(want))
}

fn server_record(servers: &Servers, backend: Backend) -> Server {
    let info = servers.info(backend);
    let config = match &info.url {
        Some(url) => url.clone(),
        None => info
            .processes
            .iter()
            .map(|p| p.command_line())
            .collect::<Vec<_>>()
            .join(" ; "),
    };
    Server {
        version: info.version.clone(),
        config,
        external: info.external,
        // Set, with the network floor, for a remote server (`network_floor::record`).
        remote: false,
        network_floor: None,
    }
}

fn run_id(settings: &Settings) -> String {
    settings.run_id.clone().unwrap_or_else(|| {
        let stamp = environment::now_utc().replace(':', "-");
        format!("{stamp}-{}", settings.mode.as_str())
    })
}

/// Runs the matrix as configured by the environment and criterion's arguments; the exit code
/// fails when any pair failed.
pub fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// This program, when it can measure memory per caller by running itself again as a probe:
/// set by [`main`] (a test that calls [`run_with`] from a program of its own has no probe).
static MEMORY_PROBE_PROGRAM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

fn run() -> Result<()> {
    if let Ok(json) = std::env::var(callers::MEMORY_PROBE_VAR) {
        return callers::run_memory_probe(&json, &all_clients())
            .map_err(|err| anyhow::anyhow!("memory probe: {err}"));
    }
    if let Ok(program) = std::env::current_exe() {
        let _ = MEMORY_PROBE_PROGRAM.set(program);
    }
    // criterion runs every benchmark once, as a test, when given `--test` or when started
    // without `--bench` (as `cargo test --bench matrix` does): a smoke run.
    let args: Vec<String> = std::env::args().collect();
    let test_flag = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");
    let settings = Settings::from_env(test_flag)?;
    run_with(all_clients(), settings, &environment::reports_dir())
}

/// Every client the matrix runs: the single servers' and the cluster's (each serves the cells of
/// its own backend).
fn all_clients() -> Vec<ClientSpec> {
    [kvbench_clients::all(), kvbench_clients::cluster()].concat()
}

/// Runs the matrix over `clients` (those `settings` select) with `settings`, writing the run
/// under `reports`. criterion still reads the process's arguments (`--test`, `--bench`, a
/// filter), so its mode must agree with `settings.mode`.
pub fn run_with(clients: Vec<ClientSpec>, settings: Settings, reports: &Path) -> Result<()> {
    let placement = settings.placement;
    let max_concurrency = settings.max_concurrency();
    raise_open_file_limit(max_concurrency)?;
    // Servers first: the thread that starts (and restarts) them must keep every CPU, and the
    // bench's own pinning below applies to this thread only.
    let server_options = StartOptions {
        redis_cpu: placement.server_cpu,
        memcached_cpu: placement.server_cpu,
        // The callers, redis-benchmark's or memaslap's connections, and a few more.
        max_connections: max_concurrency + 64,
        ..StartOptions::default()
    };
    let mut servers = Servers::start(&server_options)?;
    if (settings.cells().iter()).any(|cell| cell.backend == Backend::RedisCluster) {
        // Its three nodes go where the single Redis goes (`redis_cpu`).
        servers.start_cluster(&server_options)?;
    }
    if let Some(cpu) = placement.client_cpu {
        kvbench_servers::pin_current_thread(cpu)
            .with_context(|| format!("pinning the bench to CPU {cpu}"))?;
    }
    let remote =
        network_floor::remote_backends(&servers, network_floor::treat_as_remote_from_env())?;

    let id = run_id(&settings);
    let dir = reports.join(&id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let policy = settings.mode.policy();
    let (warm_up, measurement, samples) = (policy.warm_up, policy.measurement, policy.samples);
    #[allow(unused_mut, reason = "only the fault-injection build adds a note here")]
    let mut notes = Vec::new();
    #[cfg(feature = "fault-injection")]
    if let Some((cell, client)) = &settings.stop_server_at {
        notes.push(format!(
            "fault test: the server is stopped during {cell}, after {client}'s verification"
        ));
    }
    costs::start_closer();
    let count_syscalls = match SyscallCounter::open() {
        Ok(_) => true,
        Err(reason) => {
            notes.push(format!("syscalls_per_op missing: {reason}"));
            false
        }
    };
    for backend in [Backend::Redis, Backend::Memcached, Backend::RedisCluster] {
        if servers.is_external(backend) {
            notes.push(format!(
                "bytes_read_per_op and bytes_written_per_op missing in {backend} cells: the \
                 external server's byte counters include every other client's traffic"
            ));
        }
    }
    let mut run = Run {
        id: id.clone(),
        started_at: environment::now_utc(),
        finished_at: None,
        git_sha: environment::git_sha(),
        mode: settings.mode.record(),
        rustc: environment::rustc_version(),
        kernel: environment::kernel(),
        cpu_model: environment::cpu_model(),
        cores: environment::online_cpus() as u32,
        placement: placement.record(),
        servers: ServersRecord {
            redis: server_record(&servers, Backend::Redis),
            memcached: server_record(&servers, Backend::Memcached),
            redis_cluster: servers.cluster().map(|cluster| ClusterRecord {
                server: server_record(&servers, Backend::RedisCluster),
                create_command: cluster.create_command().map(str::to_string),
                nodes: (cluster.nodes().iter())
                    .map(|node| ClusterNodeRecord {
                        addr: node.addr.clone(),
                        id: node.id.clone(),
                        slots: (node.slots.iter())
                            .map(|slots| format!("{}-{}", slots.start(), slots.end()))
                            .collect(),
                    })
                    .collect(),
            }),
        },
        duration_s: 0.0,
        criterion_args: format!(
            "warm_up={warm_up:?} measurement={measurement:?} sample_size={samples} \
             nresamples={}; 10 flat \
             samples for pipelines >= {SINGLE_SHOT_DEPTH} and clients slow by design; single \
             shots instead of criterion for clients without pipelining at depths >= \
             {SINGLE_SHOT_DEPTH} ({:?} budget) and for calls >= {:?} ({} each)",
            policy.resamples, policy.single_shot_budget, policy.long_call, policy.long_call_repeats,
        ),
        filters: format!(
            "CLIENTS={} CELLS={} REPEAT={} REPEAT_CELLS={}{}",
            settings.clients.join(","),
            settings.cells.join(","),
            settings.repeat,
            settings.repeat_cells.join(","),
            match (settings.mode, settings.matrix) {
                (Mode::Test, Matrix::Quick) => " (quick cells)",
                (Mode::Test, Matrix::Smoke) => {
                    " (smoke cells: of the optional operations' cells, one or two each)"
                }
                _ => "",
            }
        ),
        repeat: settings.repeat,
        order_seed: settings.order_seed,
        notes,
        known_defects: clients
            .iter()
            .flat_map(|spec| {
                spec.known_defects
                    .iter()
                    .map(|defect| kvbench_results::KnownDefect {
                        client: spec.name.to_string(),
                        library: format!("{} {}", defect.library, defect.version),
                        input: defect.input.to_string(),
                        outcome: defect.outcome.to_string(),
                    })
            })
            .collect(),
    };
    // After pinning: the bench's placement applies to the network floor as to every client.
    network_floor::record(&mut run, &servers, &remote, settings.mode);
    let results = Arc::new(Mutex::new(Results {
        schema_version: results::SCHEMA_VERSION,
        run,
        rows: Vec::new(),
    }));
    {
        // Ctrl-C: the servers crate stops the servers; this keeps what was measured so far.
        let (results, dir) = (Arc::clone(&results), dir.clone());
        kvbench_servers::on_interrupt(move || {
            if let Ok(results) = results.lock() {
                let _ = results::write(&dir, &results);
                eprintln!(
                    "interrupted: partial results in {}",
                    dir.join("results.json").display()
                );
            }
        })?;
    }

    let mut criterion = Criterion::default()
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .sample_size(samples)
        .nresamples(policy.resamples)
        .output_directory(&dir.join("criterion"))
        .configure_from_args();
    let specs: Vec<ClientSpec> = clients
        .iter()
        .filter(|s| settings.wants_client(s.name))
        .copied()
        .collect();
    let visits = settings.visits();
    eprintln!(
        "kvbench: {} cells ({} visits, REPEAT={}), {} clients, mode {}, placement {} (servers on \
         CPU {:?}, bench on CPU {:?}), client order seed {}, results in {}",
        settings.cells().len(),
        visits.len(),
        settings.repeat,
        specs.len(),
        settings.mode.as_str(),
        placement.mode_str(),
        placement.server_cpu,
        placement.client_cpu,
        settings.order_seed,
        dir.display()
    );

    let mut h = Harness {
        settings,
        clients,
        servers,
        dir: dir.clone(),
        results,
        runs: Vec::new(),
        count_syscalls,
        started: Instant::now(),
        round: 1,
        remote,
    };
    for (i, (round, cell)) in visits.iter().enumerate() {
        h.round = *round;
        let elapsed = h.started.elapsed();
        let eta = if i == 0 {
            String::from("?")
        } else {
            format!("{:.0?}", elapsed / i as u32 * (visits.len() - i) as u32)
        };
        eprintln!(
            "[{}/{}] {cell}{}  (elapsed {:.0?}, about {eta} left)",
            i + 1,
            visits.len(),
            if *round > 1 {
                format!(" (run {round})")
            } else {
                String::new()
            },
            Duration::from_secs(elapsed.as_secs())
        );
        if let Err(err) = run_cell(&mut h, &mut criterion, cell, &specs) {
            eprintln!("  cell {cell} failed: {err:#}");
            for spec in specs.iter().filter(|spec| drivers::serves(spec, cell)) {
                h.push(
                    results::new_row(cell, spec.name, kind(spec))
                        .fail(Status::Failed, format!("cell setup: {err:#}")),
                );
            }
            h.save()?;
        }
    }
    criterion.final_summary();

    {
        let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.finished_at = Some(environment::now_utc());
        // Flags need the run's noise figure, known only now.
        let noise = results.noise().map(|noise| noise.median_spread);
        for row in &mut results.rows {
            results::flag_disagreement(row, noise);
        }
    }
    h.save()?;
    results::update_latest(reports, &id)?;
    match kvbench_report::render_run(&h.dir) {
        Ok(()) => eprintln!("kvbench: report in {}", h.dir.join("index.html").display()),
        Err(err) => eprintln!("kvbench: the report could not be rendered: {err}"),
    }
    let failed = {
        let results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        results
            .rows
            .iter()
            .filter(|row| row.status == Status::Failed)
            .map(|row| {
                format!(
                    "{} {}: {}",
                    row.cell,
                    row.client,
                    row.error.clone().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
    };
    eprintln!(
        "kvbench: results in {}",
        Path::new(&h.dir).join("results.json").display()
    );
    drop(h);
    if !failed.is_empty() {
        anyhow::bail!("{} pairs failed:\n{}", failed.len(), failed.join("\n"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::open_files_wanted;

    #[test]
    fn the_open_file_limit_is_raised_within_the_hard_limit_or_refused_by_name() {
        assert_eq!(open_files_wanted(256, 20_000, 20_000).unwrap(), None);
        assert_eq!(open_files_wanted(256, 1024, 4096).unwrap(), Some(1536));
        let err = open_files_wanted(4096, 1024, 4096).unwrap_err().to_string();
        assert!(
            err.contains("RLIMIT_NOFILE") && err.contains("4096"),
            "{err}"
        );
    }
}
