//! The whole run, decided before anything is measured: visits of cells (a cell once per
//! repetition), the contenders of each, and for each contender either the reason it is not run
//! or how it is measured. Printable (`make bench-plan`), and unit-tested without a server.
//!
//! Every contender of a visit is measured the same way ([`crate::cell`]): connected and verified
//! against the visit's fresh server, then timed in paired rounds, one block per contender per
//! round in a fresh random order, then costed. What differs between contenders is decided here:
//! how many items one call carries, how many cost-pass calls it gets, and whether it is run.

use std::fmt::Write as _;
use std::time::Duration;

use kvbench_core::{Backend, ClientSpec, Concurrency, Kind as ClientKind, Transport};
use kvbench_results::Kind;

use crate::baselines;
use crate::drivers;
use crate::matrix::{Cell, Counting, MemaslapCells, Mode, Op, Settings};
use crate::network_floor;

/// Pipelines at least this deep, through a client without pipelining, carry only as many items
/// per call as fit in one block: every item is a round trip at any depth, so the rate per item
/// does not depend on how many ran.
pub const DEEP_PIPELINE: usize = 100_000;

/// Callers from which a cell's rounds are shared out among several visits ([`parts`]).
pub const PARTED_CALLERS: usize = 256;

/// Pipelines at least this deep have their rounds shared out among several visits ([`parts`]).
pub const PARTED_PIPELINE: usize = 1_000_000;

/// Values of this size have their rounds shared out among several visits ([`parts`]).
pub const PARTED_VALUE: usize = 100 << 10;

/// How many visits, each against a freshly started server, share a cell's rounds: the mode's
/// `parts` for a cell whose ratios were seen to move between server starts by more than its
/// intervals allowed, else one. With 256 callers, a thread per caller ran 20-30 % slower against
/// one start of the server than against another (relative to the multiplexer, in the same
/// rounds); through a pipeline of a million, the reference's own A/A ratio was 0.93 in one run
/// and 1.15 in another, and its blocks' rates fall in two clusters far apart. With values of
/// 100 KiB, two connections of the same client differ by a fixed amount that a fresh start
/// draws again: the A/A ratio of Redis's SET EX over a Unix socket read 0.990 (0.984-0.994) in
/// one run and 0.984 (0.980-0.988) in the next, memcached's over TCP 0.997 and 0.988
/// (0.983-0.991), Redis's GET over a Unix socket 1.017 and 1.006, each interval excluding 1
/// (1 MiB values stayed within 0.5 % in both). Rounds of one visit cannot see that, and a row's
/// ratio then follows the one server start it had; three starts, a third of the rounds each,
/// pooled, average it, for about the same time.
pub fn parts(mode: Mode, cell: &Cell) -> u32 {
    let parted = cell.concurrency >= PARTED_CALLERS
        || (cell.op.is_pipeline_set() && cell.pipeline >= PARTED_PIPELINE)
        || cell.value_size == PARTED_VALUE;
    match parted && !cell.open {
        true => mode.policy().parts.max(1),
        false => 1,
    }
}

/// Where a contender's measurements come from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A client: one caller, or the cell's callers in its concurrency model.
    Client(ClientSpec),
    /// The loopback floor: this client (the one whose spec declares it) against a server that
    /// answers a canned reply; `None` when no client declares it (then it is not run).
    LoopbackFloor(Option<ClientSpec>),
    /// A remote server's own round trip, over a raw connection.
    NetworkFloor,
    /// redis-benchmark, in short runs of its own.
    RedisBenchmark,
    /// memaslap, in short runs of its own.
    Memaslap,
}

/// How a measured contender is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Items per call: the cell's, or fewer for a client without pipelining in a deep pipeline
    /// ([`Items`]).
    pub items: Items,
    /// Calls of the cost pass's clean half, at most (cut to the mode's seconds at the speed the
    /// blocks ran); 0 for the baseline tools, which have none.
    pub cost_calls: u64,
    /// A client slow by design: its cost pass gets the mode's few calls.
    pub slow: bool,
}

/// Items one call of a contender carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Items {
    /// The cell's count (1 for single operations).
    Cell,
    /// The first items of the cell's pipeline, as many as take one block (whole hundreds, at
    /// least a hundred), found when the contender is calibrated.
    FitBlock,
    /// The first `n` items (a test run: the timed path on the first items only, the whole depth
    /// having run in verification).
    First(usize),
}

/// What becomes of a contender in a visit.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Not run, with the reason (listed, not left out: a reader sees who lacks what).
    Unsupported(String),
    /// Run and measured.
    Measure(Measure),
}

/// One contender of a visit.
#[derive(Debug, Clone)]
pub struct Contender {
    /// The row's client name.
    pub name: &'static str,
    /// Who wrote it.
    pub kind: Kind,
    /// What it runs.
    pub source: Source,
    /// Run or not, and how.
    pub decision: Decision,
}

/// How the paired rounds of a visit run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rounds {
    /// Length a block aims at: each contender's calls per block are sized to it (a call longer
    /// than this is a block of one call).
    pub block: Duration,
    /// Rounds always run (unless a contender fails).
    pub min: u32,
    /// Rounds at most.
    pub max: u32,
    /// Rounds go on past `min` while the rounds so far took less than this.
    pub budget: Duration,
    /// Runs of a baseline tool the rounds wait for (past the budget if need be).
    pub min_tool_runs: u32,
    /// The same for memaslap, whose runs take seconds.
    pub min_memaslap_runs: u32,
    /// The same for a deep pipeline's long call (`cell::pace`).
    pub min_long_call_runs: u32,
}

/// One visit of a cell: its contenders, its reference and its rounds.
#[derive(Debug, Clone)]
pub struct Visit {
    /// The cell's visit, from 1 (to its runs, `REPEAT`, times its parts).
    pub repeat: u32,
    /// Which of the cell's [`parts`] this visit is, from 1: the first of each run also makes
    /// the cost passes (the others only add rounds). The cell's first visit also counts.
    pub part: u32,
    /// The cell.
    pub cell: Cell,
    /// Every contender, run or not.
    pub contenders: Vec<Contender>,
    /// The contenders that may be the reference, best first: the first that connects and
    /// verifies is the one every ratio of the visit is against.
    pub reference_candidates: Vec<&'static str>,
    /// Whether the reference is timed a second time in the same rounds (the A/A check).
    pub aa: bool,
    /// The rounds.
    pub rounds: Rounds,
}

/// What the run will do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Full, quick or test.
    pub mode: Mode,
    /// Whether instructions are counted, and whether that is all.
    pub count: Counting,
    /// Every visit, in order.
    pub visits: Vec<Visit>,
}

/// What the plan needs to know of the servers, so that it can be made without them.
#[derive(Debug, Clone, Default)]
pub struct Servers {
    /// Backends given by URL (someone else's server: the baseline tools write unprefixed keys).
    pub external: Vec<Backend>,
    /// Backends on another host: a network floor instead of the loopback floor.
    pub remote: Vec<Backend>,
    /// (backend, transport) pairs with no endpoint (an external server's other transport).
    pub unreachable: Vec<(Backend, Transport)>,
}

/// The rounds of a visit of `cell` in `mode`: [`crate::matrix::Policy`]'s, with its own blocks
/// and more rounds for many callers, and fewer rounds for a deep pipeline (a block is one call
/// there).
fn rounds(mode: Mode, cell: &Cell, part: u32) -> Rounds {
    let policy = mode.policy();
    let deep = cell.is_deep_pipeline();
    // A part of a cell's visits runs its share of the rounds and of the tools' runs.
    let parts = parts(mode, cell);
    let (min, budget) = match (deep, cell.concurrency) {
        (true, _) => (policy.min_rounds_deep, policy.round_budget_deep),
        (false, 1) => (policy.min_rounds, policy.round_budget),
        (false, c) if c >= PARTED_CALLERS => (policy.min_rounds_crowd, policy.round_budget),
        (false, _) => (policy.min_rounds_many, policy.round_budget),
    };
    Rounds {
        block: match cell.concurrency {
            1 => policy.block,
            _ => policy.block_many,
        },
        min: min.div_ceil(parts),
        max: policy.max_rounds,
        budget: budget / parts,
        min_tool_runs: share(policy.min_tool_runs, parts, part),
        min_memaslap_runs: share(policy.min_memaslap_runs, parts, part),
        min_long_call_runs: share(policy.min_long_call_runs, parts, part),
    }
}

/// Part `part` (from 1) of `total` runs shared out among `parts` visits: the earlier parts take
/// the remainder, so that the parts add up to `total` (and each has one at least, for its rows).
/// Rounded up in every part, memaslap's five runs became six over three visits, one more of its
/// 5-10 s runs in each cell of 256 callers.
fn share(total: u32, parts: u32, part: u32) -> u32 {
    (total / parts + u32::from(part <= total % parts)).max(1)
}

/// Calls in the cost pass's clean half, at most: enough operations for stable per-op numbers.
pub fn cost_calls(cell: &Cell, mode: Mode) -> u64 {
    let calls: u64 = match cell.op {
        _ if cell.is_deep_pipeline() => 1,
        op if op.is_pipeline_set() => 100,
        // A hundred items a call (get_many, hash, transactions).
        _ if cell.pipeline > 1 => 500,
        _ if cell.value_size >= 1 << 20 => 200,
        _ if cell.value_size >= 100 << 10 => 1_000,
        _ => 5_000,
    };
    let calls = calls.div_ceil(mode.policy().cost_pass_divisor);
    match cell.concurrency {
        // Shared out among the callers, at least a few each (percentiles).
        1 => calls,
        callers => (calls / callers as u64).max(mode.policy().cost_pass_calls_per_caller),
    }
}

impl Plan {
    /// The most sockets any visit holds open at once ([`Visit::sockets`]).
    pub fn max_sockets(&self) -> usize {
        self.visits.iter().map(Visit::sockets).max().unwrap_or(0)
    }

    /// The plan of a run with `settings`, over the selected ones of `clients` (every client the
    /// run knows: the loopback floor's client is found among them even when not selected).
    pub fn new(settings: &Settings, clients: &[ClientSpec], servers: &Servers) -> Plan {
        let selected: Vec<ClientSpec> = (clients.iter())
            .filter(|spec| settings.wants_client(spec.name))
            .copied()
            .collect();
        let visits = (settings.visits().into_iter())
            .map(|(repeat, cell)| visit(settings.mode, repeat, cell, &selected, clients, servers))
            .collect();
        Plan {
            mode: settings.mode,
            count: settings.count,
            visits,
        }
    }

    /// Roughly how long the run takes: each visit's server restart and connections, its rounds'
    /// budget (or the minimum rounds of slow blocks), the baseline tools' runs and the cost
    /// passes. An estimate for planning, not a promise.
    pub fn estimate(&self) -> Duration {
        (self.visits.iter())
            .map(|v| v.estimate(self.mode, self.count))
            .sum()
    }

    /// The plan in words: one line per visit, one per contender.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let measured: usize = (self.visits.iter())
            .map(|v| v.measured().count() + usize::from(v.aa))
            .sum();
        let _ = writeln!(
            out,
            "{} visits, {measured} contender measurements (A/A twins included), mode {}{}, about \
             {} min, at most {} connections to a server at once",
            self.visits.len(),
            self.mode.as_str(),
            match self.count {
                Counting::Off => "",
                Counting::Also => ", instructions counted",
                Counting::Only => ", instructions counted and nothing timed",
            },
            (self.estimate().as_secs_f64() / 60.0).ceil(),
            self.max_sockets()
        );
        for (i, v) in self.visits.iter().enumerate() {
            let r = &v.rounds;
            let how = match v.cell.open {
                true => crate::open_loop::describe_ladder(v, self.mode),
                false => format!(
                    "rounds {}-{} within {:.1?}, blocks of ~{:?}; reference {}{}",
                    r.min,
                    r.max,
                    r.budget,
                    r.block,
                    v.reference_candidates.first().copied().unwrap_or("none"),
                    if v.aa { ", A/A twin" } else { "" },
                ),
            };
            let _ = writeln!(
                out,
                "[{}/{}] {}{}: {how}; ~{:.0} s",
                i + 1,
                self.visits.len(),
                v.cell,
                if v.repeat > 1 {
                    format!(" (visit {})", v.repeat)
                } else {
                    String::new()
                },
                v.estimate(self.mode, self.count).as_secs_f64()
            );
            for c in &v.contenders {
                let what = match &c.decision {
                    Decision::Unsupported(why) => format!("unsupported: {why}"),
                    Decision::Measure(m) => {
                        let items = match m.items {
                            Items::Cell => format!("{} item(s) a call", v.cell.pipeline),
                            Items::FitBlock => "the first items that fit a block".to_string(),
                            Items::First(n) => format!("the first {n} items"),
                        };
                        match m.cost_calls {
                            _ if v.cell.open => "every rate of the ladder".to_string(),
                            0 => format!("{items}; its own runs, no cost pass"),
                            calls => format!("{items}; cost pass up to {calls} calls"),
                        }
                    }
                };
                let _ = writeln!(out, "    {:<28} {what}", c.name);
            }
        }
        out
    }
}

impl Visit {
    /// The sockets the visit's contenders hold open at once on the bench's side (and the
    /// server's): every contender is connected before the rounds, a thread per caller one each,
    /// a multiplexed client one, a pool its connections, a baseline tool one per caller while it
    /// runs, and the A/A twin as many as the reference.
    pub fn sockets(&self) -> usize {
        let callers = self.cell.concurrency;
        let of = |c: &Contender| match c.source {
            Source::Client(spec) => spec.concurrency.connections(callers),
            Source::RedisBenchmark | Source::Memaslap => callers,
            Source::LoopbackFloor(_) | Source::NetworkFloor => 1,
        };
        let twin = (self.aa)
            .then(|| self.reference_candidates.first())
            .flatten()
            .and_then(|name| self.contenders.iter().find(|c| c.name == *name))
            .map_or(0, of);
        self.measured().map(of).sum::<usize>() + twin
    }

    /// The contenders that are measured.
    pub fn measured(&self) -> impl Iterator<Item = &Contender> {
        (self.contenders.iter()).filter(|c| matches!(c.decision, Decision::Measure(_)))
    }

    fn estimate(&self, mode: Mode, count: Counting) -> Duration {
        if self.cell.open {
            return crate::open_loop::estimate(self, mode);
        }
        let contenders = self.measured().count() as f64 + f64::from(u8::from(self.aa));
        let policy = mode.policy();
        // One call of a deep pipeline through a fast client: about 500,000 items a second.
        let deep_call = self.cell.pipeline as f64 / 500_000.0;
        // Restarting the server, preparing the keys, connecting and verifying.
        let mut seconds = 0.5 + 0.05 * contenders;
        // A cell's later parts make no cost pass, and only its first visit counts.
        let costs = self.part == 1;
        if count != Counting::Off && self.repeat == 1 {
            // A counted child takes about a second under valgrind, two with values of 100 KiB or
            // more, three with a deep pipeline, seven with 256 callers; two run at once.
            let per_child = match self.cell.concurrency {
                1 if self.cell.is_deep_pipeline() => 3.0,
                1 if self.cell.value_size >= PARTED_VALUE => 2.0,
                1 => 1.0,
                callers => 1.0 + callers as f64 / 40.0,
            };
            let clients = (self.measured())
                .filter(|c| matches!(c.source, Source::Client(_)))
                .count();
            seconds += clients as f64 * per_child / 2.0;
        }
        if count == Counting::Only {
            return Duration::from_secs_f64(seconds);
        }
        if self.cell.is_deep_pipeline() {
            // Verification writes the whole pipeline once per contender, reads it back and
            // deletes it, and a block is one call: about a second through a fast client, several
            // through a library that times the pipeline as one command, which runs in a few
            // rounds only (`cell::pace`). A later part verifies a short pipeline, then warms up
            // on one call of the cell's (Redis's million over TCP: 14 s instead of 24).
            let rounds = contenders * deep_call / 3.0 * f64::from(self.rounds.min);
            let verify = if self.part == 1 { 1.0 } else { 0.6 };
            seconds +=
                verify * contenders * deep_call + rounds.max(self.rounds.budget.as_secs_f64());
        } else {
            // A window of hundreds of callers opens once each has made a call and ends when the
            // call each has in flight returns: through a client of a few thousand calls a
            // second, tens of milliseconds around a block of 20. The reference's later visits of
            // those cells took about 2.5 times their blocks when each window started its
            // threads; with the threads kept ([`crate::crew`]) a visit took 15 % less, and with
            // those slow windows in every other round (`cell::pace`) a visit's rounds took 23-26 s
            // in Redis's GET over TCP (30-32 s before) and 29-32 s in memcached's SET (40-49 s).
            let block = match self.cell.concurrency {
                callers if callers >= PARTED_CALLERS => 1.8 * self.rounds.block.as_secs_f64(),
                _ => self.rounds.block.as_secs_f64(),
            };
            seconds += (self.rounds.budget.as_secs_f64())
                .max(contenders * block * f64::from(self.rounds.min));
        }
        for c in self.measured() {
            match c.source {
                // A tool runs in some rounds only (`cell::pace`): redis-benchmark up to the
                // policy's `tool_runs` times, ~0.15 s each; memaslap its minimum, as long as its
                // runs took in the reference of 2205216: 3 s with one caller, 5 s with many,
                // and 10 s for 256 callers' GETs, which first preload 1,024 keys each.
                Source::RedisBenchmark => seconds += 0.15 * f64::from(policy.tool_runs),
                Source::Memaslap => {
                    let run = match self.cell.concurrency {
                        1 => 3.0,
                        callers if self.cell.op == Op::Get => 5.0 + callers as f64 / 50.0,
                        _ => 5.0,
                    };
                    seconds += run * f64::from(self.rounds.min_memaslap_runs);
                }
                // A cost pass stops at the cell's count of calls or its time, whichever comes
                // first. The visits' breakdowns (2026-12-06): a one-caller cell's eleven passes
                // 2.7-3.1 s, a 256-caller cell's eight 7.9 s, a deep pipeline's eleven (one call
                // each) 15-17.5 s.
                _ if costs => {
                    seconds += match self.cell.concurrency {
                        _ if self.cell.is_deep_pipeline() => 0.8 * deep_call,
                        callers if callers >= PARTED_CALLERS => 2.0 * policy.cost_pass_seconds,
                        _ => 0.6 * policy.cost_pass_seconds,
                    }
                }
                _ => {}
            }
            if costs && self.cell.concurrency > 1 && matches!(c.source, Source::Client(_)) {
                // The memory probe: a fresh process connects the callers.
                seconds += 0.5;
            }
        }
        Duration::from_secs_f64(seconds)
    }
}

/// One visit of `cell`: every selected client that speaks its backend and transport, then the
/// floors and baseline tools that fit it.
fn visit(
    mode: Mode,
    repeat: u32,
    cell: Cell,
    selected: &[ClientSpec],
    clients: &[ClientSpec],
    servers: &Servers,
) -> Visit {
    let unreachable = servers
        .unreachable
        .contains(&(cell.backend, cell.transport));
    let mut contenders: Vec<Contender> = (selected.iter())
        .filter(|spec| drivers::serves(spec, &cell))
        .map(|spec| Contender {
            name: spec.name,
            kind: crate::results::kind(spec.kind),
            source: Source::Client(*spec),
            decision: match client_refusal(spec, &cell) {
                _ if unreachable => Decision::Unsupported(format!(
                    "the {} server given by URL is not reachable over {}",
                    cell.backend, cell.transport
                )),
                Some(reason) => Decision::Unsupported(reason),
                None => Decision::Measure(Measure {
                    items: items(spec, &cell, mode),
                    cost_calls: cost_calls(&cell, mode),
                    slow: spec.slow_round_trip.is_some(),
                }),
            },
        })
        .collect();
    // An open loop has no baseline tool (neither runs at a fixed rate) and no reference: its
    // rows are curves, not ratios.
    if !unreachable && !cell.open {
        contenders.extend(baseline_contenders(mode, &cell, clients, servers));
    }
    let reference_candidates = match cell.open {
        true => Vec::new(),
        false => reference_candidates(&cell, &contenders),
    };
    let part = (repeat - 1) % parts(mode, &cell) + 1;
    Visit {
        repeat,
        part,
        cell,
        aa: mode.policy().aa && !reference_candidates.is_empty(),
        reference_candidates,
        rounds: rounds(mode, &cell, part),
        contenders,
    }
}

/// Why a client does not serve `cell`, if it does not.
fn client_refusal(spec: &ClientSpec, cell: &Cell) -> Option<String> {
    if let Some(reason) = spec.slow_round_trip
        && (cell.pipeline > 1 || cell.concurrency > 1)
    {
        return Some(format!(
            "not run: every round trip is slow by design ({reason})"
        ));
    }
    let operation = cell.operation()?;
    (!spec.implements(operation)).then(|| {
        format!(
            "not run: the client does not implement {} (not among its spec's operations)",
            operation.name()
        )
    })
}

/// Items per call of a client in `cell`.
fn items(spec: &ClientSpec, cell: &Cell, mode: Mode) -> Items {
    let pipeline = cell.op.is_pipeline_set();
    if mode == Mode::Test && pipeline {
        return Items::First(cell.pipeline.min(crate::verify::DEFAULT_LOOP_VERIFY_DEPTH));
    }
    if cell.is_deep_pipeline() && !spec.pipelines() {
        return Items::FitBlock;
    }
    Items::Cell
}

/// The floors and baseline tools of `cell`.
fn baseline_contenders(
    mode: Mode,
    cell: &Cell,
    clients: &[ClientSpec],
    servers: &Servers,
) -> Vec<Contender> {
    let baseline = |name: &'static str, source: Source, decision: Decision| Contender {
        name,
        kind: Kind::Baseline,
        source,
        decision,
    };
    let measure = |cost_calls: u64| {
        Decision::Measure(Measure {
            items: Items::Cell,
            cost_calls,
            slow: false,
        })
    };
    let mut out = Vec::new();
    // The floor is one connection's: it has no many-caller form. A remote server's cells
    // measure that host's own floor instead: the loopback floor says nothing of the network.
    if servers.remote.contains(&cell.backend) {
        if network_floor::serves(cell) {
            out.push(baseline(
                network_floor::NETWORK_FLOOR,
                Source::NetworkFloor,
                measure(cost_calls(cell, mode)),
            ));
        }
    } else if cell.has_floor() {
        let spec = baselines::LoopbackFloor::client(clients, cell.backend, cell.transport);
        let decision = match spec {
            Some(_) => measure(cost_calls(cell, mode)),
            None => {
                Decision::Unsupported(format!("no client declares the loopback floor of {cell}"))
            }
        };
        out.push(baseline(
            baselines::LOOPBACK_FLOOR,
            Source::LoopbackFloor(spec.copied()),
            decision,
        ));
    }
    out.extend(tool_contenders(mode, cell, servers));
    out
}

/// redis-benchmark in every Redis cell and memaslap where it can run, unless the server is
/// someone else's.
fn tool_contenders(mode: Mode, cell: &Cell, servers: &Servers) -> Vec<Contender> {
    let external = servers.external.contains(&cell.backend);
    let tool = |name: &'static str, source: Source, cannot: Option<&str>| Contender {
        name,
        kind: Kind::Baseline,
        source,
        decision: match cannot {
            _ if external => Decision::Unsupported(format!(
                "{name} writes unprefixed keys: not run against an external server"
            )),
            Some(reason) => Decision::Unsupported(reason.to_string()),
            None => Decision::Measure(Measure {
                items: Items::Cell,
                cost_calls: 0,
                slow: false,
            }),
        },
    };
    let mut out = Vec::new();
    if cell.backend.is_redis() {
        out.push(tool(
            baselines::REDIS_BENCHMARK,
            Source::RedisBenchmark,
            crate::ops::redis_benchmark_cannot(cell.op),
        ));
    }
    if baselines::memaslap_serves(cell) {
        let headline = cell.op == Op::Get && cell.concurrency == 1;
        let cannot = match mode.policy().memaslap {
            MemaslapCells::OneCallerGet if !headline => Some(
                "memaslap: run in the one-caller GET only in a quick run (each run takes 2 s; \
                 `make bench` runs it here)",
            ),
            _ => None,
        };
        out.push(tool(baselines::MEMASLAP, Source::Memaslap, cannot));
    }
    out
}

/// The contenders that may be the cell's reference, best first: the hand-written clients that
/// are measured and not slow by design. The best-known for the cell's question comes first: in
/// a cell of many callers, one built to share a connection among them; in a pipeline or a cell
/// of many items, one that pipelines; otherwise the one that measures the loopback floor (the
/// fastest hand-written client of its backend and transport). Ties keep the list's order.
fn reference_candidates(cell: &Cell, contenders: &[Contender]) -> Vec<&'static str> {
    let mut candidates: Vec<(u8, usize, &'static str)> = (contenders.iter().enumerate())
        .filter_map(|(i, c)| match (&c.source, &c.decision) {
            (Source::Client(spec), Decision::Measure(m))
                if spec.kind == ClientKind::HandWritten && !m.slow =>
            {
                let fits = if cell.concurrency > 1 {
                    matches!(spec.concurrency, Concurrency::Multiplexed(_))
                } else if cell.pipeline > 1 {
                    spec.pipelines()
                } else {
                    spec.loopback_floor
                };
                Some((u8::from(!fits), i, spec.name))
            }
            _ => None,
        })
        .collect();
    candidates.sort();
    candidates.into_iter().map(|(_, _, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{FULL, Matrix, Placement};

    fn settings(mode: Mode, cells: &[&str], repeat: u32) -> Settings {
        Settings {
            mode,
            placement: Placement::parse("none", 1).unwrap(),
            clients: Vec::new(),
            cells: cells.iter().map(|c| c.to_string()).collect(),
            run_id: None,
            repeat,
            repeat_cells: Vec::new(),
            order_seed: 1,
            matrix: match mode {
                Mode::Quick => Matrix::Quick,
                _ => Matrix::Full,
            },
            concurrency: vec![256],
            count: Counting::Off,
            #[cfg(feature = "fault-injection")]
            stop_server_at: None,
        }
    }

    fn all() -> Vec<ClientSpec> {
        [kvbench_clients::all(), kvbench_clients::cluster()].concat()
    }

    fn visit_of<'p>(plan: &'p Plan, id: &str) -> &'p Visit {
        (plan.visits.iter())
            .find(|v| v.cell.id() == id)
            .unwrap_or_else(|| panic!("no visit of {id}"))
    }

    fn decision<'v>(v: &'v Visit, name: &str) -> &'v Decision {
        &(v.contenders.iter())
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} is not a contender of {}", v.cell))
            .decision
    }

    #[test]
    fn every_contender_of_a_cell_is_listed_with_its_decision() {
        let plan = Plan::new(
            &settings(Mode::Full, &["redis/get/3B/tcp"], 1),
            &all(),
            &Servers::default(),
        );
        let v = visit_of(&plan, "redis/get/3B/tcp");
        // Every Redis client on TCP, the floor and redis-benchmark; nothing of memcached's.
        assert!(v.contenders.iter().all(|c| !c.name.starts_with("memcache")));
        for name in ["raw-tcp", "buffered", "redis-rs", "fred", "loopback-floor"] {
            assert!(matches!(decision(v, name), Decision::Measure(_)), "{name}");
        }
        assert!(matches!(
            decision(v, "redis-benchmark"),
            Decision::Measure(Measure { cost_calls: 0, .. })
        ));
        // The slow-by-design client is timed in a one-caller cell (its 1,000x is the lesson).
        assert!(matches!(
            decision(v, "raw-tcp/per-token/nagle"),
            Decision::Measure(Measure { slow: true, .. })
        ));
        // The reference is the floor's client, the best-known hand-written one; an A/A twin.
        assert_eq!(v.reference_candidates[0], "raw-tcp");
        assert!(!v.reference_candidates.contains(&"raw-tcp/per-token/nagle"));
        assert!(!v.reference_candidates.contains(&"redis-rs"));
        assert!(v.aa);
        assert_eq!(v.rounds.block, crate::matrix::FULL.block);
    }

    #[test]
    fn cells_whose_ratios_move_between_server_starts_are_visited_in_parts() {
        let full = Plan::new(
            &settings(Mode::Full, &["/"], 1),
            &all(),
            &Servers::default(),
        );
        let parts_of = |id: &str| full.visits.iter().filter(|v| v.cell.id() == id).count();
        for id in [
            "redis/get/3B/tcp/c256",
            "redis/pipeline_set/1000000/unix",
            "redis/set_ex/100KiB/unix",
            "memcached/set/100KiB/tcp",
            "memcached/get/100KiB/unix",
        ] {
            assert_eq!(parts_of(id), 3, "{id}");
        }
        for id in [
            "redis/get/3B/tcp",
            "redis/get/1MiB/tcp",
            "memcached/get/2KiB/tcp",
        ] {
            assert_eq!(parts_of(id), 1, "{id}");
        }
        // A third of the rounds each, and the tools' runs shared out so that they add up.
        let part = visit_of(&full, "redis/set_ex/100KiB/tcp").rounds;
        assert_eq!(part.min, FULL.min_rounds.div_ceil(3));
        let memaslap: u32 = (full.visits.iter())
            .filter(|v| v.cell.id() == "memcached/get/3B/tcp/c256")
            .map(|v| v.rounds.min_memaslap_runs)
            .sum();
        assert_eq!(memaslap, FULL.min_memaslap_runs);
        // A deep pipeline's long call: once in each of the three.
        let long_calls: Vec<u32> = (full.visits.iter())
            .filter(|v| v.cell.id() == "redis/pipeline_set/1000000/tcp")
            .map(|v| v.rounds.min_long_call_runs)
            .collect();
        assert_eq!(long_calls, [1, 1, 1]);
        assert_eq!([1, 2, 3].map(|part| share(5, 3, part)), [2, 2, 1]);
        assert_eq!([1, 2, 3].map(|part| share(8, 3, part)), [3, 3, 2]);
        assert_eq!([1, 2].map(|part| share(1, 2, part)), [1, 1]);
        // A quick run visits every cell once.
        let quick = Plan::new(
            &settings(Mode::Quick, &["/"], 1),
            &all(),
            &Servers::default(),
        );
        let set = quick
            .visits
            .iter()
            .filter(|v| v.cell.id() == "redis/set/100KiB/tcp");
        assert!(set.count() <= 1);
    }

    #[test]
    fn the_reference_fits_the_cells_question() {
        let plan = Plan::new(
            &settings(Mode::Full, &["/tcp"], 1),
            &all(),
            &Servers::default(),
        );
        let first = |id: &str| visit_of(&plan, id).reference_candidates[0];
        assert_eq!(first("redis/pipeline_set/1000000/tcp"), "buffered");
        assert_eq!(first("redis/get/3B/tcp/c256"), "multiplexed");
        assert_eq!(first("memcached/get/3B/tcp"), "memcached-text");
        assert_eq!(first("memcached/get/3B/tcp/c256"), "multiplexed/memcached");
        assert_eq!(first("redis-cluster/get/3B/tcp"), "cluster");
    }

    #[test]
    fn refusals_are_decided_up_front_with_their_reasons() {
        let plan = Plan::new(
            &settings(Mode::Full, &["/tcp"], 1),
            &all(),
            &Servers::default(),
        );
        let unsupported = |id: &str, name: &str| match decision(visit_of(&plan, id), name) {
            Decision::Unsupported(why) => why.clone(),
            other => panic!("{name} in {id}: {other:?}"),
        };
        assert!(
            unsupported("redis/pipeline_set/1000/tcp", "raw-tcp/per-token/nagle")
                .contains("slow by design")
        );
        assert!(
            unsupported("redis/get/3B/tcp/c256", "raw-tcp/per-token/nagle")
                .contains("slow by design")
        );
        assert!(
            unsupported("redis/transaction_multi/100/tcp", "redis-benchmark").contains("MULTI")
        );
        assert!(unsupported("memcached/incr/counter/tcp", "memcached-meta").contains("incr"));
        // A client without pipelining writes what fits a block of a deep pipeline.
        let deep = visit_of(&plan, "redis/pipeline_set/1000000/tcp");
        assert!(matches!(
            decision(deep, "raw-tcp"),
            Decision::Measure(Measure {
                items: Items::FitBlock,
                cost_calls: 1,
                ..
            })
        ));
        assert!(matches!(
            decision(deep, "buffered"),
            Decision::Measure(Measure {
                items: Items::Cell,
                ..
            })
        ));
        // No floor with many callers or many items.
        assert!(
            visit_of(&plan, "redis/get/3B/tcp/c256")
                .contenders
                .iter()
                .all(|c| c.name != "loopback-floor")
        );
        // memaslap where it can run.
        assert!(matches!(
            decision(visit_of(&plan, "memcached/get/3B/tcp"), "memaslap"),
            Decision::Measure(_)
        ));
        assert!(matches!(
            decision(visit_of(&plan, "memcached/get/3B/tcp/c256"), "memaslap"),
            Decision::Measure(_)
        ));
        // A quick run keeps it to the one-caller GET.
        let quick = Plan::new(
            &settings(Mode::Quick, &["memcached/"], 1),
            &all(),
            &Servers::default(),
        );
        assert!(matches!(
            decision(visit_of(&quick, "memcached/get/3B/tcp"), "memaslap"),
            Decision::Measure(_)
        ));
        let Decision::Unsupported(why) =
            decision(visit_of(&quick, "memcached/get/3B/tcp/c256"), "memaslap")
        else {
            panic!("memaslap runs with many callers in a quick run")
        };
        assert!(why.contains("`make bench` runs it here"), "{why}");
    }

    #[test]
    fn external_and_remote_servers_change_the_baselines() {
        let servers = Servers {
            external: vec![Backend::Redis],
            remote: vec![Backend::Redis],
            unreachable: vec![(Backend::Redis, Transport::Unix)],
        };
        let plan = Plan::new(
            &settings(Mode::Full, &["redis/get/3B/"], 1),
            &all(),
            &servers,
        );
        let tcp = visit_of(&plan, "redis/get/3B/tcp");
        assert!(
            matches!(decision(tcp, "redis-benchmark"), Decision::Unsupported(why) if why.contains("unprefixed"))
        );
        assert!(matches!(
            decision(tcp, "network-floor"),
            Decision::Measure(_)
        ));
        assert!(tcp.contenders.iter().all(|c| c.name != "loopback-floor"));
        let unix = visit_of(&plan, "redis/get/3B/unix");
        assert!(
            matches!(decision(unix, "raw-unix"), Decision::Unsupported(why) if why.contains("not reachable"))
        );
        assert!(unix.reference_candidates.is_empty() && !unix.aa);
    }

    #[test]
    fn modes_differ_in_rounds_and_budget() {
        let quick = Plan::new(
            &settings(Mode::Quick, &["redis/get/3B/tcp"], 1),
            &all(),
            &Servers::default(),
        );
        let v = &quick.visits[0];
        assert!(v.aa);
        assert!(v.rounds.min >= 3 && v.rounds.budget < Duration::from_secs(1));
        let test = Plan::new(
            &settings(Mode::Test, &["redis/pipeline_set/100000/tcp"], 1),
            &all(),
            &Servers::default(),
        );
        let v = &test.visits[0];
        assert_eq!((v.rounds.min, v.rounds.max), (3, 3));
        assert!(matches!(
            decision(v, "buffered"),
            Decision::Measure(Measure {
                items: Items::First(1_000),
                ..
            })
        ));
    }

    #[test]
    fn repeats_are_visits_and_the_plan_prints_and_estimates() {
        let mut s = settings(Mode::Full, &["get/3B/tcp"], 2);
        s.repeat_cells = vec!["redis/get/3B/tcp".into()];
        let plan = Plan::new(&s, &all(), &Servers::default());
        let ids: Vec<String> = (plan.visits.iter())
            .map(|v| format!("{} {}", v.repeat, v.cell))
            .collect();
        assert_eq!(
            ids,
            [
                "1 redis/get/3B/tcp",
                "1 memcached/get/3B/tcp",
                "1 redis/get/3B/tcp/c256",
                "1 memcached/get/3B/tcp/c256",
                "1 redis/get/3B/tcp/c256/open",
                "1 memcached/get/3B/tcp/c256/open",
                "1 redis-cluster/get/3B/tcp",
                "2 redis/get/3B/tcp",
                "2 redis/get/3B/tcp/c256",
                "2 memcached/get/3B/tcp/c256",
                "3 redis/get/3B/tcp/c256",
                "3 memcached/get/3B/tcp/c256",
                "4 redis/get/3B/tcp/c256",
                "5 redis/get/3B/tcp/c256",
                "6 redis/get/3B/tcp/c256",
            ]
        );
        // 256 callers: each run's rounds (and the tools' runs) shared out among three visits,
        // the first of each run making the cost passes.
        let c256 = |cell: &str| -> Vec<(u32, Rounds)> {
            (plan.visits.iter())
                .filter(|v| v.cell.id() == cell)
                .map(|v| (v.part, v.rounds))
                .collect()
        };
        let redis = c256("redis/get/3B/tcp/c256");
        let parts: Vec<u32> = redis.iter().map(|(part, _)| *part).collect();
        assert_eq!(parts, [1, 2, 3, 1, 2, 3]);
        // Hundreds of callers' own rounds (180, a third per visit) and blocks; the tools' five
        // runs 2, 2 and 1.
        let rounds = redis[0].1;
        assert_eq!(
            (rounds.min, rounds.min_tool_runs, rounds.min_memaslap_runs),
            (60, 2, 2)
        );
        assert_eq!(redis[2].1.min_tool_runs, 1);
        assert_eq!(rounds.budget, FULL.round_budget / 3);
        assert_eq!(rounds.block, FULL.block_many);
        assert_eq!(c256("memcached/get/3B/tcp/c256").len(), 3);
        // Nothing timed (`make cost`): each cell once.
        let mut counted = s.clone();
        counted.count = Counting::Only;
        let counted = Plan::new(&counted, &all(), &Servers::default());
        // The open-loop cells have nothing to count.
        assert_eq!(counted.visits.len(), 5);
        assert!(counted.visits.iter().all(|v| !v.cell.open));
        let one = visit_of(&plan, "redis/get/3B/tcp");
        assert_eq!(
            (one.part, one.rounds.min, one.rounds.budget),
            (1, 30, FULL.round_budget)
        );
        let text = plan.describe();
        assert!(text.starts_with("15 visits"), "{text}");
        assert!(text.contains("[8/15] redis/get/3B/tcp (visit 2)"), "{text}");
        assert!(text.contains("reference raw-tcp, A/A twin"), "{text}");
        assert!(text.contains("unsupported: not run: every round trip is slow by design"));
        let minutes = plan.estimate().as_secs_f64() / 60.0;
        assert!((0.5..15.0).contains(&minutes), "{minutes}");
        // Every thread-per-caller client's 256 connections at once, and the baselines'.
        let c256 = visit_of(&plan, "memcached/get/3B/tcp/c256");
        assert!(c256.sockets() >= 5 * 256, "{}", c256.sockets());
        assert_eq!(
            plan.max_sockets(),
            (plan.visits.iter().map(Visit::sockets)).max().unwrap()
        );
    }

    #[test]
    fn an_open_cell_runs_every_client_of_its_callers_over_the_ladder_without_baselines() {
        let plan = Plan::new(
            &settings(Mode::Full, &["/open"], 1),
            &all(),
            &Servers::default(),
        );
        let ids: Vec<String> = plan.visits.iter().map(|v| v.cell.id()).collect();
        assert_eq!(
            ids,
            [
                "redis/get/3B/tcp/c256/open",
                "memcached/get/3B/tcp/c256/open"
            ]
        );
        let v = &plan.visits[0];
        // Every client of the closed cell of 256 callers, no baseline tool, no reference.
        let closed = Plan::new(
            &settings(Mode::Full, &["redis/get/3B/tcp/c256"], 1),
            &all(),
            &Servers::default(),
        );
        let clients = |v: &Visit| -> Vec<&str> {
            (v.measured())
                .filter(|c| matches!(c.source, Source::Client(_)))
                .map(|c| c.name)
                .collect()
        };
        let closed_visit = visit_of(&closed, "redis/get/3B/tcp/c256");
        assert_eq!(clients(v), clients(closed_visit));
        assert!(v.measured().all(|c| matches!(c.source, Source::Client(_))));
        assert!(v.reference_candidates.is_empty() && !v.aa);
        let text = plan.describe();
        assert!(
            text.contains("open loop: offered rates 4000, 8700, 19000, 41000, 88000, 190000"),
            "{text}"
        );
        // The ladder: 8 rates, geometric, from ~5 % to past the fastest client's capacity.
        let rates = crate::open_loop::ladder(Mode::Full, Backend::Redis);
        assert_eq!(rates.len(), crate::open_loop::STEPS);
        assert_eq!(
            crate::open_loop::ladder(Mode::Quick, Backend::Redis).len(),
            3
        );
        // Both cells together add at most ten minutes to the full run.
        assert!(
            plan.estimate() <= Duration::from_secs(600),
            "{:?}",
            plan.estimate()
        );
    }
}
