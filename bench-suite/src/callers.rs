//! Many callers at once: the C callers of a concurrency cell, served the way the client's spec
//! declares ([`Concurrency`]). Each caller makes its requests back to back and waits for its own
//! reply before the next (a closed loop); every caller runs the whole timed period, and the
//! throughput counts the operations of all of them.
//!
//! - **Threads** (and a pool's blocking handles): one OS thread per caller, released together
//!   through a barrier, so the threads' start is not timed. Timed windows run on a [`Crew`]
//!   whose threads wait between windows; a counted round starts threads of its own, so that the
//!   syscall counters' `inherit` follows them. They inherit the bench's CPU placement.
//! - **Tasks** (a multiplexed client's or a pool's async handles): one task per caller on the
//!   bench's current-thread runtime, so every task runs on the bench's pinned CPU.
//!
//! A timed block is a [`Window`], not a number of calls each: the callers make calls until a
//! stretch of a set length has passed, and only the calls completed inside it count. The
//! stretch opens once as many calls have completed as there are callers, so the start of 256
//! threads released together (which takes milliseconds on one CPU) and the end, when the last
//! callers finish alone, are not timed. With a fixed number of calls each they were: at 256
//! threads a block of 60 ms is a handful of calls per caller, and a thread-per-caller client
//! measured 0.031 of the reference in blocks of 60 ms and 0.016 in blocks of 20 ms; over
//! stretches, 0.043 and 0.046 (one run each).
//!
//! Memory per caller is measured in a fresh process of the bench ([`memory_per_caller`]): in the
//! measuring process, memory freed by earlier pairs and the thread stacks the C library keeps
//! for reuse would be taken again without growing it, and hide what C callers cost.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use kvbench_core::{
    AsyncClient, Client, ClientSpec, Concurrency, Endpoint, Error, Handle, Options, Result,
    SharedClient,
};
use kvbench_results::ConcurrencyModel;
use tokio::runtime::Runtime;
use tokio::task::LocalSet;

use serde::{Deserialize, Serialize};

use crate::costs::{self, CountingAllocator};
use crate::crew::Crew;
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op};
use crate::open_loop;
use crate::ops;

/// How the callers run.
enum Served {
    /// A blocking client per caller, each driven by its own thread.
    Threads(Crew),
    /// An async handle per caller, each driven by its own task in a round.
    Tasks(Vec<Box<dyn AsyncClient>>),
}

/// The C callers of one (cell, client) pair, connected.
pub struct Callers {
    served: Served,
    /// The runtime the tasks (and an async shared client's own tasks) run on.
    runtime: Runtime,
    local: LocalSet,
    /// The connection(s) the handles share; kept open while the callers live.
    _shared: Option<Box<dyn SharedClient>>,
    /// How the callers share connections, for the row.
    pub model: ConcurrencyModel,
    /// Sockets the callers opened.
    pub connections: usize,
}

/// One round's outcome: its wall time, and every operation's latency when asked for.
pub struct Round {
    /// From the moment every caller may start to the moment the last one finished.
    pub elapsed: Duration,
    /// Each operation's duration, ns, over all callers (empty unless recorded).
    pub latencies: Vec<u64>,
}

impl Callers {
    /// Connects `callers` callers of `spec` to `endpoint`, and checks them with one short round
    /// of `w`.
    pub fn connect(
        spec: &ClientSpec,
        endpoint: &Endpoint,
        options: &Options,
        callers: usize,
        w: &Workload,
    ) -> Result<Callers> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Io)?;
        let local = LocalSet::new();
        let sockets_before = Sockets::now();
        let (served, shared) = match spec.concurrency {
            Concurrency::Threads => {
                let clients = (0..callers)
                    .map(|_| (spec.connect)(endpoint, options))
                    .collect::<Result<Vec<_>>>()?;
                (Served::Threads(Crew::new(clients)), None)
            }
            Concurrency::Multiplexed(connect) | Concurrency::Pool { connect, .. } => {
                let connections = spec.concurrency.connections(callers);
                let shared = local.block_on(&runtime, connect(endpoint, options, connections))?;
                let handles: Vec<Handle> = (0..callers).map(|_| shared.handle()).collect();
                let served = if handles.iter().all(|h| matches!(h, Handle::Async(_))) {
                    Served::Tasks(handles.into_iter().filter_map(into_async).collect())
                } else {
                    let clients = handles.into_iter().filter_map(into_blocking).collect();
                    Served::Threads(Crew::new(clients))
                };
                (served, Some(shared))
            }
        };
        let mut callers_ = Callers {
            served,
            runtime,
            local,
            _shared: shared,
            model: model_of(spec.concurrency),
            connections: 0,
        };
        if callers_.count() != callers {
            return Err(Error::Protocol(format!(
                "{}: the shared client mixed async and blocking handles",
                spec.name
            )));
        }
        callers_.round(w, 2, false)?;
        // Counted after a round, so a pool that connects lazily has connected.
        callers_.connections = sockets_before.opened_since();
        Ok(callers_)
    }

    /// The number of callers.
    pub fn count(&self) -> usize {
        match &self.served {
            Served::Threads(crew) => crew.count(),
            Served::Tasks(handles) => handles.len(),
        }
    }

    /// An open-loop run of `w`: the callers share `schedule`'s offered rate
    /// ([`crate::open_loop`]); the first error any caller met is returned.
    pub fn open_round(
        &mut self,
        w: &Workload,
        schedule: open_loop::Schedule,
    ) -> Result<open_loop::Run> {
        match &mut self.served {
            Served::Threads(crew) => open_loop::threads(crew.clients()?, w, &schedule),
            Served::Tasks(handles) => {
                open_loop::tasks(&self.runtime, &self.local, handles, w, schedule)
            }
        }
    }

    /// Every caller makes calls of `w` back to back until a stretch of `length` has passed
    /// since it opened (once as many calls had completed as there are callers); the calls
    /// completed in it ([`Window`]). The first error any caller met is returned; the others
    /// stop at their next call ([`Stretch::abandon`]).
    pub fn window(&mut self, w: &Workload, length: Duration) -> Result<Window> {
        let stretch = Arc::new(Stretch::new(self.count(), length));
        let outcomes: Vec<Result<()>> = match &mut self.served {
            Served::Threads(crew) => {
                let (w, stretch) = (w.clone(), Arc::clone(&stretch));
                let outcomes = crew.run(move |_, client| {
                    loop {
                        if let Err(err) = ops::run_sync(client, &w, &Args::default()) {
                            stretch.abandon();
                            return Err(err);
                        }
                        if !stretch.completed() {
                            return Ok(());
                        }
                    }
                })?;
                (outcomes.into_iter())
                    .map(|outcome| outcome.and_then(|result| result))
                    .collect()
            }
            Served::Tasks(handles) => {
                let w = Rc::new(w.clone());
                let (_, outcomes) =
                    on_tasks(&self.runtime, &self.local, handles, |_, mut handle| {
                        let (w, stretch) = (Rc::clone(&w), Arc::clone(&stretch));
                        async move {
                            let outcome = loop {
                                let args = Args::default();
                                if let Err(err) = ops::run_async(handle.as_mut(), &w, &args).await {
                                    stretch.abandon();
                                    break Err(err);
                                }
                                if !stretch.completed() {
                                    break Ok(());
                                }
                            };
                            (handle, outcome)
                        }
                    });
                (outcomes.into_iter())
                    .map(|outcome| outcome.and_then(|result| result))
                    .collect()
            }
        };
        // A caller that failed stops: the others would wait for it to open the window.
        outcomes.into_iter().collect::<Result<Vec<()>>>()?;
        stretch.window()
    }

    /// Every caller makes `n` operations of `w`, back to back; the first error any caller met
    /// is returned (the others finish their round).
    pub fn round(&mut self, w: &Workload, n: u64, record: bool) -> Result<Round> {
        match &mut self.served {
            Served::Threads(crew) => threads_round(crew.clients()?, w, n, record),
            Served::Tasks(handles) => {
                tasks_round(&self.runtime, &self.local, handles, w, n, record)
            }
        }
    }
}

/// What a [`Callers::window`] timed.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Calls completed inside the stretch (one operation of one caller each).
    pub calls: u64,
    /// The stretch's length.
    pub elapsed: Duration,
    /// Calls completed in all, the start and the end included.
    pub all_calls: u64,
}

/// The stretch a window times, shared by its callers. It opens once as many calls have
/// completed as there are callers (every caller has had its turn: threads released together
/// take milliseconds to all start on one CPU) and closes at the first call that completes
/// `length` later; every caller stops after the call it has in flight then, untimed.
struct Stretch {
    callers: u64,
    length: Duration,
    calls: AtomicU64,
    /// When it opened, and the calls completed by then.
    opened: OnceLock<(Instant, u64)>,
    closed: OnceLock<(Instant, u64)>,
    stop: AtomicBool,
}

impl Stretch {
    fn new(callers: usize, length: Duration) -> Stretch {
        Stretch {
            callers: callers as u64,
            length,
            calls: AtomicU64::new(0),
            opened: OnceLock::new(),
            closed: OnceLock::new(),
            stop: AtomicBool::new(false),
        }
    }

    /// Counts a completed call; whether its caller goes on.
    fn completed(&self) -> bool {
        let done = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let now = Instant::now();
        if done >= self.callers {
            let &(opened, _) = self.opened.get_or_init(|| (now, done));
            if now - opened >= self.length {
                self.closed.get_or_init(|| (now, done));
                self.stop.store(true, Ordering::Relaxed);
            }
        }
        !self.stop.load(Ordering::Relaxed)
    }

    /// A caller failed: the others stop too (the window may never open without it).
    fn abandon(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn window(&self) -> Result<Window> {
        match (self.opened.get(), self.closed.get()) {
            (Some(&(opened, calls_before)), Some(&(closed, calls_by))) => Ok(Window {
                calls: calls_by - calls_before,
                elapsed: closed - opened,
                all_calls: self.calls.load(Ordering::Relaxed),
            }),
            _ => Err(Error::Protocol(
                "the callers stopped before their window closed".into(),
            )),
        }
    }
}

/// The row's name for a spec's concurrency model.
pub fn model_of(concurrency: Concurrency) -> ConcurrencyModel {
    match concurrency {
        Concurrency::Threads => ConcurrencyModel::Threads,
        Concurrency::Multiplexed(_) => ConcurrencyModel::Multiplexed,
        Concurrency::Pool { .. } => ConcurrencyModel::Pool,
    }
}

/// The sockets this process has open: the kernel's name of each (`socket:[inode]`), one per
/// file descriptor that is a socket. What a client really opened, whatever its spec declares,
/// is [`Sockets::opened_since`] a snapshot taken before it connected: a pool that a single
/// caller also gets opens all of its connections (fred's), another opens one (memcache's r2d2
/// pool, sized to one for one caller). A set rather than a count, because a client dropped
/// earlier may close its sockets late, from a thread of its own (r2d2's workers hold the pool
/// for a moment), and a count would subtract that close from the next client's opens.
#[derive(Debug, Clone, Default)]
pub struct Sockets(std::collections::BTreeSet<std::ffi::OsString>);

impl Sockets {
    /// The sockets open now.
    pub fn now() -> Sockets {
        let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
            return Sockets::default();
        };
        let names = fds
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .map(|target| target.into_os_string())
            .filter(|target| target.to_string_lossy().starts_with("socket:"));
        Sockets(names.collect())
    }

    /// The sockets open now that were not open in `self`.
    pub fn opened_since(&self) -> usize {
        Sockets::now().0.difference(&self.0).count()
    }
}

fn into_async(handle: Handle) -> Option<Box<dyn AsyncClient>> {
    match handle {
        Handle::Async(handle) => Some(handle),
        Handle::Blocking(_) => None,
    }
}

fn into_blocking(handle: Handle) -> Option<Box<dyn Client>> {
    match handle {
        Handle::Blocking(handle) => Some(handle),
        Handle::Async(_) => None,
    }
}

/// One caller's `n` operations, each timed when `record` is set; `latencies` is allocated by
/// the caller beforehand, outside the counted work.
fn caller_loop(
    mut op: impl FnMut() -> Result<()>,
    n: u64,
    record: bool,
    mut latencies: Vec<u64>,
) -> (Result<()>, Vec<u64>) {
    for _ in 0..n {
        let start = Instant::now();
        if let Err(err) = op() {
            return (Err(err), latencies);
        }
        if record {
            latencies.push(start.elapsed().as_nanos().max(1) as u64);
        }
    }
    (Ok(()), latencies)
}

fn threads_round(
    clients: &mut [Box<dyn Client>],
    w: &Workload,
    n: u64,
    record: bool,
) -> Result<Round> {
    let outcomes = on_threads(clients, |_, client| {
        let latencies = Vec::with_capacity(if record { n as usize } else { 0 });
        // Each caller's own clock: on a shared CPU the released threads may run before the
        // thread that released them does.
        let start = Instant::now();
        let outcome = caller_loop(
            || ops::run_sync(client, w, &Args::default()),
            n,
            record,
            latencies,
        );
        (start, Instant::now(), outcome)
    });
    let mut first_start: Option<Instant> = None;
    let mut last_end: Option<Instant> = None;
    let mut results = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        match outcome {
            Ok((start, end, result)) => {
                first_start = Some(first_start.map_or(start, |first| first.min(start)));
                last_end = Some(last_end.map_or(end, |last| last.max(end)));
                results.push(result);
            }
            Err(err) => results.push((Err(err), Vec::new())),
        }
    }
    let elapsed = match (first_start, last_end) {
        (Some(start), Some(end)) => end - start,
        _ => Duration::ZERO,
    };
    gather(elapsed, results.into_iter())
}

/// Runs `caller(i, client)` for every client at once, each on a thread of its own, released
/// together through a barrier (their start is set-up, not work: its allocations are not
/// counted); each caller's outcome, in order, or the error of one that panicked.
pub(crate) fn on_threads<T: Send>(
    clients: &mut [Box<dyn Client>],
    caller: impl Fn(usize, &mut dyn Client) -> T + Sync,
) -> Vec<Result<T>> {
    // Starting a thread allocates: those allocations are the round's set-up, not its work.
    let counting = CountingAllocator::pause();
    let barrier = Arc::new(Barrier::new(clients.len() + 1));
    let caller = &caller;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (clients.iter_mut().enumerate())
            .map(|(i, client)| {
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    barrier.wait();
                    caller(i, client.as_mut())
                })
            })
            .collect();
        barrier.wait();
        CountingAllocator::enable(counting);
        (workers.into_iter())
            .map(|worker| (worker.join()).map_err(|_| Error::Protocol("a caller panicked".into())))
            .collect()
    })
}

fn tasks_round(
    runtime: &Runtime,
    local: &LocalSet,
    handles: &mut Vec<Box<dyn AsyncClient>>,
    w: &Workload,
    n: u64,
    record: bool,
) -> Result<Round> {
    let w = Rc::new(w.clone());
    let (elapsed, outcomes) = on_tasks(runtime, local, handles, |_, mut handle| {
        let w = Rc::clone(&w);
        let mut latencies = Vec::with_capacity(if record { n as usize } else { 0 });
        async move {
            let mut outcome = Ok(());
            for _ in 0..n {
                let start = Instant::now();
                let args = Args::default();
                if let Err(err) = ops::run_async(handle.as_mut(), &w, &args).await {
                    outcome = Err(err);
                    break;
                }
                if record {
                    latencies.push(start.elapsed().as_nanos().max(1) as u64);
                }
            }
            (handle, (outcome, latencies))
        }
    });
    let results = (outcomes.into_iter()).map(|outcome| match outcome {
        Ok(result) => result,
        Err(err) => (Err(err), Vec::new()),
    });
    gather(elapsed, results)
}

/// Runs the future `caller(i, handle)` makes for every handle at once, each a task of its own
/// on the bench's current-thread runtime (spawning is set-up: its allocations are not
/// counted); the time from their start to the last one's end, and each caller's outcome in
/// order (the error of a task that failed). The handles come back with their tasks.
#[allow(
    clippy::await_holding_refcell_ref,
    reason = "no RefCell: handles are moved into their task and back"
)]
pub(crate) fn on_tasks<T: 'static, F>(
    runtime: &Runtime,
    local: &LocalSet,
    handles: &mut Vec<Box<dyn AsyncClient>>,
    caller: impl Fn(usize, Box<dyn AsyncClient>) -> F,
) -> (Duration, Vec<Result<T>>)
where
    F: std::future::Future<Output = (Box<dyn AsyncClient>, T)> + 'static,
{
    // Spawning a task allocates: the round's set-up, not its work.
    let counting = CountingAllocator::pause();
    let owned = std::mem::take(handles);
    let (elapsed, outcomes) = local.block_on(runtime, async {
        // Spawned tasks wait until this one yields: every caller starts with the clock.
        let tasks: Vec<_> = (owned.into_iter().enumerate())
            .map(|(i, handle)| tokio::task::spawn_local(caller(i, handle)))
            .collect();
        CountingAllocator::enable(counting);
        let start = Instant::now();
        let mut outcomes = Vec::with_capacity(tasks.len());
        for task in tasks {
            outcomes.push(task.await);
        }
        (start.elapsed(), outcomes)
    });
    let mut results = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        match outcome {
            Ok((handle, result)) => {
                handles.push(handle);
                results.push(Ok(result));
            }
            Err(err) => results.push(Err(Error::Protocol(format!("a caller's task: {err}")))),
        }
    }
    (elapsed, results)
}

/// The round's outcome from every caller's: the first error, or all latencies.
fn gather(
    elapsed: Duration,
    outcomes: impl Iterator<Item = (Result<()>, Vec<u64>)>,
) -> Result<Round> {
    let mut latencies = Vec::new();
    let mut first_error = None;
    for (outcome, caller_latencies) in outcomes {
        match outcome {
            Ok(()) => latencies.extend(caller_latencies),
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(Round { elapsed, latencies }),
    }
}

/// The environment variable that makes the bench process a memory probe (see
/// [`memory_per_caller`]): one pair, described in JSON.
pub const MEMORY_PROBE_VAR: &str = "KVBENCH_MEMORY_PROBE";

/// One pair's callers, described for a fresh process.
#[derive(Serialize, Deserialize)]
struct MemoryProbe {
    client: String,
    tcp: Option<String>,
    unix: Option<std::path::PathBuf>,
    op: Op,
    key: Vec<u8>,
    value: Vec<u8>,
    callers: usize,
}

/// Memory per caller of `spec`'s `callers` callers in `w`'s cell, in bytes: this program run
/// again as a probe (`program`, with [`MEMORY_PROBE_VAR`] set), which connects the callers, runs
/// a short round so that every thread, stack and buffer exists, and reports the growth of its
/// peak resident memory over the callers. `None`, with the reason, when it cannot.
pub fn memory_per_caller(
    program: &std::path::Path,
    spec: &ClientSpec,
    endpoint: &Endpoint,
    w: &Workload,
) -> std::result::Result<f64, String> {
    let (tcp, unix) = match endpoint {
        Endpoint::Tcp(addr) => (Some(addr.clone()), None),
        Endpoint::Unix(path) => (None, Some(path.clone())),
    };
    let probe = MemoryProbe {
        client: spec.name.to_string(),
        tcp,
        unix,
        op: w.cell.op,
        key: w.key.clone(),
        value: w.value.clone(),
        callers: w.cell.concurrency,
    };
    let json = serde_json::to_string(&probe).map_err(|err| err.to_string())?;
    let output = std::process::Command::new(program)
        .env(MEMORY_PROBE_VAR, json)
        .output()
        .map_err(|err| format!("starting the memory probe: {err}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match (output.status.success(), stdout.trim().parse::<f64>()) {
        (true, Ok(bytes)) => Ok(bytes),
        _ => Err(format!(
            "the memory probe failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

/// The probe's side of [`memory_per_caller`]: prints the bytes per caller.
pub fn run_memory_probe(json: &str, clients: &[ClientSpec]) -> std::result::Result<(), String> {
    let probe: MemoryProbe = serde_json::from_str(json).map_err(|err| err.to_string())?;
    let spec = clients
        .iter()
        .find(|spec| spec.name == probe.client)
        .ok_or_else(|| format!("no client named {}", probe.client))?;
    let endpoint = match (probe.tcp, probe.unix) {
        (Some(addr), _) => Endpoint::Tcp(addr),
        (None, Some(path)) => Endpoint::Unix(path),
        (None, None) => return Err("no endpoint".into()),
    };
    let cell = Cell {
        backend: spec.backend,
        op: probe.op,
        value_size: probe.value.len(),
        pipeline: 1,
        transport: endpoint.transport(),
        concurrency: probe.callers,
        open: false,
    };
    let w = Workload {
        cell,
        key: probe.key,
        value: probe.value,
        names: Vec::new(),
        names_are_keys: true,
        values: Vec::new(),
    };
    let before = costs::reset_peak_rss().ok_or("cannot reset the peak resident memory")?;
    let callers = Callers::connect(spec, &endpoint, &Options::default(), probe.callers, &w)
        .map_err(|err| err.to_string())?;
    let peak = costs::peak_rss().ok_or("cannot read the peak resident memory")?;
    drop(callers);
    println!(
        "{}",
        peak.saturating_sub(before) as f64 / probe.callers as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_the_calls_between_the_callers_first_turn_and_its_length() {
        let stretch = Stretch::new(2, Duration::from_millis(5));
        // The first two calls are the callers' first turn: the stretch opens at the second.
        assert!(stretch.completed());
        assert!(stretch.completed());
        assert!(stretch.window().is_err(), "open, not closed");
        assert!(stretch.completed(), "within the length");
        std::thread::sleep(Duration::from_millis(6));
        assert!(!stretch.completed(), "the call past the length closes it");
        assert!(
            !stretch.completed(),
            "a call in flight then is not counted in the window"
        );
        let window = stretch.window().expect("closed");
        assert_eq!(window.calls, 2);
        assert_eq!(window.all_calls, 5);
        assert!(window.elapsed >= Duration::from_millis(5));
    }

    #[test]
    fn a_failed_caller_stops_the_others() {
        let stretch = Stretch::new(3, Duration::from_secs(60));
        stretch.abandon();
        assert!(!stretch.completed());
        assert!(
            stretch.window().is_err(),
            "never opened: an error, not a rate"
        );
    }
}
