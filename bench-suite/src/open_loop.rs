//! Open loop: C callers share an offered rate R, and every request has an intended start on a
//! fixed schedule, whether or not the one before it was answered. This is what an application's
//! traffic does, and what a closed loop (each caller waits for its reply before its next
//! request, [`crate::callers`]) cannot show: a caller that is stuck there stops sending, and
//! the queue it would have built never shows in the latency (coordinated omission; wrk2 is the
//! HTTP tool that measures this way).
//!
//! - **The schedule** ([`Schedule`]): slot j starts at `start + j / R` and belongs to caller
//!   `j mod C`, so each caller's requests are evenly spaced (C / R apart) and the callers are
//!   staggered by 1 / R.
//! - **Latency runs from the intended start** to the reply, into an HdrHistogram. A caller that
//!   falls behind sends its late requests at once, and their lateness counts.
//! - **The floor** is the schedule's own jitter: how late a request left when its caller was
//!   idle, waiting for it. The latency cannot be read below it.
//! - **Saturation**: a client that answers less than 95 % of R, or whose backlog (requests due
//!   but not sent) still grows at the end, is saturated at R: its row gives the achieved rate
//!   and no latency. A queue that grows for as long as the run lasts has no percentile worth
//!   reading.
//!
//! The callers are the closed loop's ([`crate::callers::Callers`]), run the way the client's
//! spec declares. A thread per caller sleeps until its next intended start itself (with a
//! timer slack of 1 ns, so that it wakes when asked, not up to 50 us later). Tasks on the
//! bench's current-thread runtime cannot: tokio's timer counts whole milliseconds, which would
//! make the floor a millisecond. A pacer task among them waits for each slot on a `timerfd`
//! (nanosecond deadlines, woken by the runtime's own event loop like a socket) and wakes the
//! slot's task ([`tokio::sync::Notify`]), releasing every slot already due at once, and
//! waking at most every [`PACER_QUANTUM`]: a wake-up per slot cost more of the shared CPU than
//! the clients' own work at high rates, and saturated the generator before any client. (A pacer
//! *thread* did the same at first: its wake-ups had to cross threads into the runtime, and the
//! floor's p99 was 3-4 ms at 4,000 requests a second, where the threads' was 0.1-0.4 ms.)
//!
//! The cells ([`run`]): `redis/get/3B/tcp/c256/open` and `memcached/get/3B/tcp/c256/open` (and, in
//! a full run, `redis/get/3B/tcp/c16/open`, the curve's low end), each client over a geometric
//! ladder of offered rates ([`ladder`]), the same ladder for every client and run, one row per
//! (client, rate). Rates climb. Each rate runs as a few short repeats ([`step`]), each repeat
//! visiting every client in a fresh random order, so that a slow period of the machine falls on
//! one repeat of the clients it meets rather than on all of one client's; a row's percentiles are
//! the median of its repeats' ([`record`]), with the range of their p99s beside them. Once a
//! client is saturated (in most of a rate's repeats), its higher rates are recorded as saturated
//! without running (their rows say so).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kvbench_core::{AsyncClient, Backend, Client, Concurrency, Error, Result};
use kvbench_results::{OpenLatency, OpenLoop, OpenRange};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio::task::LocalSet;

use crate::callers;
use crate::cell::{self, Context, Outcome};
use crate::contender::Runner;
use crate::drivers::{Args, Workload};
use crate::matrix::Mode;
use crate::ops;
use crate::plan::{Decision, Source, Visit};
use crate::results::{Row, RowExt, Status};

/// How long after a schedule is fixed its first slot starts: the callers' threads or tasks are
/// released by then.
const LEAD: Duration = Duration::from_millis(5);

/// Below this share of the offered rate, a client is saturated.
pub const SATURATED_BELOW: f64 = 0.95;

/// Rates of a ladder.
pub const STEPS: usize = 8;

/// Redis's ladder, requests per second: up to past the fastest client's closed-loop capacity
/// with 256 callers (`multiplexed`, 844,000 GETs a second in the reference run of 2026-12-03),
/// and down to where every client of the cell has a rate it sustains. About 5 % of that
/// capacity (33,000) is already more than a thread-per-caller client answers with 256 callers
/// (12,000-20,000 in a quick run of this cell), and more than any client answers one request at
/// a time on the shared CPU: every client but the multiplexed ones was saturated there, and
/// their curves had no point.
const REDIS_LADDER: (f64, f64) = (4_000.0, 900_000.0);

/// memcached's: the same from `multiplexed/memcached`'s 497,000 a second, and down to below the
/// `memcache` library's 2,800 (its pool checks each connection on checkout).
const MEMCACHED_LADDER: (f64, f64) = (2_000.0, 550_000.0);

/// The offered rates of an open cell of `backend` in `mode`, lowest first: [`STEPS`] rates
/// spaced geometrically (each about twice the last), rounded to two significant digits; a
/// quick run takes the lowest, one from the middle and the highest of Redis's, a test run its
/// lowest only.
pub fn ladder(mode: Mode, backend: Backend) -> Vec<u64> {
    let (low, high) = match backend {
        Backend::Memcached => MEMCACHED_LADDER,
        _ => REDIS_LADDER,
    };
    let ratio = (high / low).powf(1.0 / (STEPS - 1) as f64);
    let full: Vec<u64> = (0..STEPS)
        .map(|i| two_digits(low * ratio.powi(i as i32)))
        .collect();
    match mode {
        Mode::Full => full,
        Mode::Quick => vec![full[0], full[STEPS / 2], full[STEPS - 1]],
        Mode::Test => vec![full[0]],
    }
}

fn two_digits(x: f64) -> u64 {
    let scale = 10f64.powi(x.log10().floor() as i32 - 1);
    ((x / scale).round() * scale) as u64
}

/// How each (client, rate) runs: as this many short repeats of one length, interleaved with the
/// other clients' repeats of the same rate.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// Repeats of each (client, rate).
    pub repeats: u32,
    /// Each repeat's schedule.
    pub each: Duration,
}

/// How each (client, rate) runs in `mode`. One p99 from one run of 2 s moved tenfold with the
/// machine: a stall of a few tens of milliseconds (this VM's slow periods) puts a p99's worth
/// of requests behind it at any rate. In the reference run of 2026-12-04, `multiplexed`'s p99 at
/// 256 callers read 1.48, 0.33 and 0.38 ms at 4,000, 8,700 and 19,000 requests/s, its floor's
/// 0.81, 0.16 and 0.13 ms: the first was the machine's. Five repeats of 0.4 s in the same 2 s,
/// each visiting every client in a fresh order, put a stall in one repeat of the clients it
/// falls on, and the median of the repeats' p99s passes over it. A quick run keeps three, of
/// 0.1 s (400 requests at the lowest rate: four past the p99; rough, as its numbers are): of 0.2 s
/// they were a fifth of its run, 19 of 98 s.
pub fn step(mode: Mode) -> Step {
    let (repeats, each) = match mode {
        Mode::Full => (5, Duration::from_millis(400)),
        Mode::Quick => (3, Duration::from_millis(100)),
        Mode::Test => (1, Duration::from_millis(50)),
    };
    Step { repeats, each }
}

/// When each request of a run should start.
#[derive(Debug)]
pub struct Schedule {
    /// Requests per second, over all callers.
    rate: f64,
    callers: usize,
    duration: Duration,
    /// Fixed by the first caller to ask ([`Schedule::start`]).
    start: OnceLock<Instant>,
}

impl Schedule {
    /// `callers` callers sharing `rate` requests a second for `duration`.
    pub fn new(rate: f64, callers: usize, duration: Duration) -> Schedule {
        Schedule {
            rate,
            callers: callers.max(1),
            duration,
            start: OnceLock::new(),
        }
    }

    /// The first slot's time: [`LEAD`] after the first call.
    pub fn start(&self) -> Instant {
        *self.start.get_or_init(|| Instant::now() + LEAD)
    }

    /// Requests offered: every slot before the end.
    pub fn slots(&self) -> u64 {
        (self.rate * self.duration.as_secs_f64()).ceil() as u64
    }

    /// Slot `j`'s intended start.
    fn at(&self, slot: u64) -> Instant {
        self.start() + Duration::from_secs_f64(slot as f64 / self.rate)
    }

    fn end(&self) -> Instant {
        self.start() + self.duration
    }

    fn middle(&self) -> Instant {
        self.start() + self.duration / 2
    }
}

/// An empty latency histogram: 1 ns to 100 s, two significant digits (1 % resolution).
fn histogram() -> Histogram<u32> {
    Histogram::new_with_bounds(1, 100_000_000_000, 2).expect("valid histogram bounds")
}

/// One caller's account of its run.
struct CallerLog {
    caller: u64,
    /// This caller's requests so far (the next one's number).
    next: u64,
    latency: Histogram<u32>,
    floor: Histogram<u32>,
    started_by_middle: u64,
    done: u64,
    last_done: Option<Instant>,
    error: Option<Error>,
}

impl CallerLog {
    fn new(caller: usize) -> CallerLog {
        CallerLog {
            caller: caller as u64,
            next: 0,
            latency: histogram(),
            floor: histogram(),
            started_by_middle: 0,
            done: 0,
            last_done: None,
            error: None,
        }
    }

    /// The next request's intended start, or `None` once the schedule has no more for this
    /// caller or its end has passed (a caller behind then stops: what is left is backlog).
    fn next(&self, s: &Schedule) -> Option<Instant> {
        let slot = self.next * s.callers as u64 + self.caller;
        (slot < s.slots() && Instant::now() < s.end()).then(|| s.at(slot))
    }

    /// The request of `intended` is being sent now; `waited` if its caller was idle until it.
    fn sent(&mut self, s: &Schedule, intended: Instant, waited: bool) {
        let now = Instant::now();
        if waited {
            let _ = self
                .floor
                .record(ns(now.saturating_duration_since(intended)));
        }
        if now < s.middle() {
            self.started_by_middle += 1;
        }
        self.next += 1;
    }

    /// Its reply came (or an error): false when the caller must stop.
    fn answered(&mut self, intended: Instant, outcome: Result<()>) -> bool {
        let now = Instant::now();
        match outcome {
            Ok(()) => {
                let _ = (self.latency).record(ns(now.saturating_duration_since(intended)));
                self.done += 1;
                self.last_done = Some(now);
                true
            }
            Err(err) => {
                self.error = Some(err);
                false
            }
        }
    }
}

fn ns(d: Duration) -> u64 {
    (d.as_nanos() as u64).clamp(1, 100_000_000_000)
}

/// Lets this thread's sleeps end when asked: the kernel's default timer slack would add up to
/// 50 us to each.
fn precise_sleeps() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer and affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

// ANCHOR: open_caller
/// A thread per caller, each sleeping until its next intended start.
pub(crate) fn threads(clients: &mut [Box<dyn Client>], w: &Workload, s: &Schedule) -> Result<Run> {
    // The schedule starts once every caller runs: on a busy CPU the last of 256 released
    // threads may run milliseconds after the first, and its lateness would be the harness's.
    let ready = std::sync::Barrier::new(clients.len());
    let logs = callers::on_threads(clients, |caller, client| {
        precise_sleeps();
        ready.wait();
        s.start();
        let args = Args::default();
        let mut log = CallerLog::new(caller);
        while let Some(intended) = log.next(s) {
            let now = Instant::now();
            let waited = now < intended;
            if waited {
                std::thread::sleep(intended - now);
            }
            log.sent(s, intended, waited);
            let outcome = ops::run_sync(client, w, &args);
            if !log.answered(intended, outcome) {
                break;
            }
        }
        log
    });
    Run::gather(s, logs)
}
// ANCHOR_END: open_caller

/// A task per caller on the bench's runtime, each woken for its slots by a pacer task.
pub(crate) fn tasks(
    runtime: &Runtime,
    local: &LocalSet,
    handles: &mut Vec<Box<dyn AsyncClient>>,
    w: &Workload,
    s: Schedule,
) -> Result<Run> {
    let s = Rc::new(s);
    let wake: Rc<Vec<Notify>> = Rc::new((0..handles.len()).map(|_| Notify::new()).collect());
    let w = Rc::new(w.clone());
    let timer = {
        // Registering the timer with the runtime's event loop needs its context.
        let _context = runtime.enter();
        Timer::new().map_err(Error::Io)?
    };
    let pacer = local.spawn_local(pace(Rc::clone(&s), Rc::clone(&wake), timer));
    let (_, logs) = callers::on_tasks(runtime, local, handles, |caller, mut handle| {
        let (s, wake, w) = (Rc::clone(&s), Rc::clone(&wake), Rc::clone(&w));
        async move {
            let args = Args::default();
            let mut log = CallerLog::new(caller);
            while let Some(intended) = log.next(&s) {
                let waited = Instant::now() < intended;
                // A wake-up left over from a slot this caller was late for is spent here.
                while Instant::now() < intended {
                    wake[caller].notified().await;
                }
                log.sent(&s, intended, waited);
                let outcome = ops::run_async(handle.as_mut(), &w, &args).await;
                if !log.answered(intended, outcome) {
                    break;
                }
            }
            (handle, log)
        }
    });
    // Callers that stopped early leave the pacer slots to release: it goes with the run.
    pacer.abort();
    match local.block_on(runtime, pacer) {
        Ok(Err(err)) => return Err(Error::Io(err)),
        Err(err) if !err.is_cancelled() => {
            return Err(Error::Protocol(format!("the pacer: {err}")));
        }
        _ => {}
    }
    Run::gather(&s, logs)
}

/// The pacer, a task among the callers: waits for each slot's time and wakes its caller's
/// task; slots already due are released together. It waits on a [`Timer`], so the runtime's
/// own event loop wakes it: no other thread, whose wake-ups the runtime would have to take
/// across threads, and no millisecond ticks.
async fn pace(s: Rc<Schedule>, wake: Rc<Vec<Notify>>, timer: Timer) -> std::io::Result<()> {
    // Spawned before the callers, it runs first and fixes the start; every caller's first poll
    // comes before the first slot's time.
    s.start();
    let mut released = 0;
    let mut woke = Instant::now();
    for slot in 0..s.slots() {
        let at = s.at(slot);
        if at > Instant::now() {
            timer.sleep_until(at.max(woke + PACER_QUANTUM)).await?;
            woke = Instant::now();
            released = 0;
        } else if released == RELEASED_AT_ONCE {
            // Behind the schedule: the callers must get to run, or a pacer slower than the
            // rate would release every slot before any caller sent one.
            tokio::task::yield_now().await;
            released = 0;
        }
        wake[(slot % wake.len() as u64) as usize].notify_one();
        released += 1;
    }
    Ok(())
}

/// The least time between two of the pacer's wake-ups: slots closer together than this are
/// released together, each at most this late (the floor includes it). A wake-up costs the
/// runtime a timer arm, an event-loop turn and a read, and one a slot starved the callers of
/// the shared CPU: at 83,000 requests a second `multiplexed` with 16 callers answered 50,000,
/// and at 180,000 it answered 288, where its closed loop answers 500,000. With 20 us between
/// wake-ups it held 180,000 (p99 0.69 ms) and 380,000 with 256 callers, and the floor's p99
/// fell from ~0.27 ms to ~0.09 ms (one CPU, one run each).
const PACER_QUANTUM: Duration = Duration::from_micros(20);

/// Slots the pacer releases in a row before it lets the callers run.
const RELEASED_AT_ONCE: u32 = 64;

/// A timer with nanosecond deadlines that the runtime's event loop waits on like a socket: a
/// Linux `timerfd`. tokio's own timer rounds every deadline up to a whole millisecond, which
/// would make the generator's floor a millisecond.
struct Timer(AsyncFd<OwnedFd>);

impl Timer {
    /// A monotonic timer, registered with the current runtime.
    fn new() -> std::io::Result<Timer> {
        // SAFETY: timerfd_create takes two integer arguments and returns a new descriptor.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the descriptor is open, and `OwnedFd` keeps it open, the same file, until the
        // `AsyncFd` drops it; `as_raw_fd` returns it.
        let registered = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) };
        Ok(Timer(registered.map_err(std::io::Error::from)?))
    }

    /// Returns at `at`: arms the timer, then waits until it has expired.
    async fn sleep_until(&self, at: Instant) -> std::io::Result<()> {
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            },
        };
        let fd = self.0.get_ref().as_raw_fd();
        // SAFETY: `fd` is a timerfd this timer owns; `spec` is a valid itimerspec.
        if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        loop {
            let mut ready = self.0.readable().await?;
            // An expired timerfd reads as its count of expirations (8 bytes).
            let read = ready.try_io(|fd| {
                let mut count = [0u8; 8];
                // SAFETY: reads at most 8 bytes into `count` from a descriptor this timer owns.
                let n = unsafe { libc::read(fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
                match n {
                    n if n < 0 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                }
            });
            match read {
                Ok(result) => return result,
                // Not expired yet: readiness cleared, wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

/// What one run at one rate measured, over every caller.
#[derive(Debug)]
pub struct Run {
    /// The offered rate, requests a second.
    pub rate: f64,
    /// Callers.
    pub callers: usize,
    /// The schedule's length.
    pub duration: Duration,
    /// Requests offered.
    pub offered: u64,
    /// Requests answered.
    pub completed: u64,
    /// Requests sent.
    pub started: u64,
    /// Requests due but not sent halfway through.
    pub backlog_middle: u64,
    /// Requests due but not sent at the end.
    pub backlog_end: u64,
    /// From the schedule's start to the last answer.
    pub elapsed: Duration,
    /// Latency from each request's intended start, ns.
    pub latency: Histogram<u32>,
    /// How late requests were sent when their caller was waiting for them, ns.
    pub floor: Histogram<u32>,
}

impl Run {
    fn gather(s: &Schedule, logs: Vec<Result<CallerLog>>) -> Result<Run> {
        let mut latency = histogram();
        let mut floor = histogram();
        let (mut started, mut started_by_middle, mut completed) = (0, 0, 0);
        let mut last_done = s.start();
        for log in logs {
            let log = log?;
            if let Some(err) = log.error {
                return Err(err);
            }
            let _ = latency.add(&log.latency);
            let _ = floor.add(&log.floor);
            started += log.next;
            started_by_middle += log.started_by_middle;
            completed += log.done;
            last_done = last_done.max(log.last_done.unwrap_or(last_done));
        }
        let offered = s.slots();
        let due_by_middle = (s.rate * s.duration.as_secs_f64() / 2.0).ceil() as u64;
        Ok(Run {
            rate: s.rate,
            callers: s.callers,
            duration: s.duration,
            offered,
            completed,
            started,
            backlog_middle: due_by_middle.saturating_sub(started_by_middle),
            backlog_end: offered.saturating_sub(started),
            elapsed: last_done - s.start(),
            latency,
            floor,
        })
    }

    /// Requests answered per second, from the schedule's start to the last answer.
    pub fn achieved(&self) -> f64 {
        self.completed as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    // ANCHOR: open_saturated
    /// Answered less than [`SATURATED_BELOW`] of the offered rate, or its backlog grew in the
    /// second half by more than a request per caller and 1 % of the requests.
    pub fn saturated(&self) -> bool {
        let growth = (self.callers as u64).max(self.offered / 100);
        self.achieved() < SATURATED_BELOW * self.rate
            || self.backlog_end > self.backlog_middle + growth
    }
    // ANCHOR_END: open_saturated

    /// The row's record of this run alone.
    pub fn record(&self) -> OpenLoop {
        record(std::slice::from_ref(self))
    }
}

// ANCHOR: open_record
/// The row's record of a rate's repeats: saturated when most of them were; the counts summed,
/// the achieved rate over their summed time, the backlogs the largest; each percentile (the
/// latency's and the floor's) the median of the repeats' own, and the maximum the largest.
pub fn record(runs: &[Run]) -> OpenLoop {
    let saturated = 2 * runs.iter().filter(|run| run.saturated()).count() > runs.len();
    let completed: u64 = runs.iter().map(|run| run.completed).sum();
    let elapsed: f64 = runs.iter().map(|run| run.elapsed.as_secs_f64()).sum();
    let latency: Vec<OpenLatency> = (runs.iter())
        .filter_map(|run| percentiles(&run.latency))
        .collect();
    let p99s = latency.iter().map(|l| l.p99);
    let p99_range_ns = (p99s.clone().min().zip(p99s.max()))
        .filter(|_| latency.len() > 1 && !saturated)
        .map(|(lowest, highest)| OpenRange { lowest, highest });
    OpenLoop {
        seconds: runs.iter().map(|run| run.duration.as_secs_f64()).sum(),
        offered: runs.iter().map(|run| run.offered).sum(),
        completed,
        achieved_rate: Some(completed as f64 / elapsed.max(1e-9)),
        saturated,
        backlog_mid: runs.iter().map(|run| run.backlog_middle).max().unwrap_or(0),
        backlog_end: runs.iter().map(|run| run.backlog_end).max().unwrap_or(0),
        latency_ns: (!saturated).then(|| median_of(&latency)).flatten(),
        repeats: runs.len() as u32,
        p99_range_ns,
        floor_ns: median_of(
            &(runs.iter())
                .filter_map(|run| percentiles(&run.floor))
                .collect::<Vec<_>>(),
        ),
    }
}
// ANCHOR_END: open_record

/// Each percentile the median of `each`'s (the upper one of an even count), the maximum the
/// largest; `None` for none.
fn median_of(each: &[OpenLatency]) -> Option<OpenLatency> {
    let median = |at: fn(&OpenLatency) -> u64| {
        let mut values: Vec<u64> = each.iter().map(at).collect();
        values.sort_unstable();
        values[values.len() / 2]
    };
    (!each.is_empty()).then(|| OpenLatency {
        p50: median(|l| l.p50),
        p99: median(|l| l.p99),
        p999: median(|l| l.p999),
        max: each.iter().map(|l| l.max).max().unwrap_or(0),
    })
}

/// p50, p99, p99.9 and the maximum, or `None` for an empty histogram.
pub fn percentiles(h: &Histogram<u32>) -> Option<OpenLatency> {
    (!h.is_empty()).then(|| OpenLatency {
        p50: h.value_at_quantile(0.5),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    })
}

/// Roughly how long a visit of an open cell takes: connecting each client's callers, then its
/// rates; a thread-per-caller client is counted for three rates (it saturates early, and its
/// higher rates are not run).
pub fn estimate(visit: &Visit, mode: Mode) -> Duration {
    let rates = ladder(mode, visit.cell.backend).len() as f64;
    let Step { repeats, each } = step(mode);
    let step = f64::from(repeats) * (each.as_secs_f64() + 0.02);
    let seconds: f64 = (visit.measured())
        .map(|c| match c.source {
            Source::Client(spec) if matches!(spec.concurrency, Concurrency::Threads) => {
                0.5 + rates.min(3.0) * step
            }
            _ => 0.3 + rates * step,
        })
        .sum();
    Duration::from_secs_f64(0.5 + seconds)
}

/// The ladder in words, for the plan: `open loop: offered rates 32000, … requests/s, each rate
/// 5 repeats of 400ms per client, …`.
pub fn describe_ladder(visit: &Visit, mode: Mode) -> String {
    let rates: Vec<String> = (ladder(mode, visit.cell.backend).iter())
        .map(u64::to_string)
        .collect();
    let Step { repeats, each } = step(mode);
    format!(
        "open loop: offered rates {} requests/s, each rate {repeats} repeat(s) of {each:?} per \
         client, interleaved; a client's rates above the one it is saturated at are not run",
        rates.join(", "),
    )
}

/// A client of the visit, its callers connected.
struct Entry {
    name: &'static str,
    row: Row,
    callers: Option<callers::Callers>,
    /// The rate it was first saturated at.
    saturated_at: Option<u64>,
    seconds: f64,
}

/// One visit of an open cell: a fresh server, every client's callers connected and verified,
/// then each rate of the ladder, lowest first, every client once per rate in a fresh random
/// order; one row per (client, rate).
pub fn run(ctx: &mut Context<'_>, visit: &Visit) -> anyhow::Result<Outcome> {
    let cell = visit.cell;
    let mode = ctx.settings.mode;
    let rates = ladder(mode, cell.backend);
    let step = step(mode);
    let mut rows: Vec<Row> = Vec::new();
    let at_rate = |row: &Row, rate: u64| Row {
        offered_rate: Some(rate),
        ..row.clone()
    };
    for contender in &visit.contenders {
        if let Decision::Unsupported(why) = &contender.decision {
            let row = cell::new_row(&cell, contender).fail(Status::Unsupported, why);
            rows.extend(rates.iter().map(|&rate| at_rate(&row, rate)));
        }
    }
    if visit.measured().next().is_none() {
        return Ok(Outcome {
            rows,
            rounds: 0,
            twin_rounds: None,
        });
    }
    let (endpoint, w, mut reference) = cell::prepare(ctx, cell)?;
    let args = w.args();

    let mut entries: Vec<Entry> = Vec::new();
    for contender in visit.measured() {
        let Decision::Measure(measure) = contender.decision else {
            continue;
        };
        let started = Instant::now();
        let mut row = cell::new_row(&cell, contender);
        let server = (&endpoint, &mut reference);
        let at = (visit.rounds.block, crate::verify::Depth::Cell);
        let callers = match cell::connect(ctx, &w, &args, server, contender.source, measure, at) {
            Ok((live, model)) => {
                if let Some((model, connections)) = model {
                    (row.model, row.connections) = (model, connections);
                }
                match live.runner {
                    Runner::Many { callers, .. } => Some(callers),
                    _ => {
                        row = row.fail(Status::Failed, "an open cell runs many callers");
                        None
                    }
                }
            }
            Err(cell::Refusal::Unsupported(why)) => {
                row = row.fail(Status::Unsupported, why);
                None
            }
            Err(cell::Refusal::Failed(why)) => {
                row = row.fail(Status::Failed, cell::pair_error(ctx.servers, &cell, &why));
                None
            }
        };
        entries.push(Entry {
            name: contender.name,
            row,
            callers,
            saturated_at: None,
            seconds: started.elapsed().as_secs_f64(),
        });
    }

    let mut rng = fastrand::Rng::with_seed(ctx.settings.order_seed ^ u64::from(visit.repeat));
    let mut order: Vec<usize> = (0..entries.len()).collect();
    let mut measured: Vec<Vec<Row>> = vec![Vec::new(); entries.len()];
    for &rate in &rates {
        // Every client still running, once per repeat, in a fresh order each time.
        let mut repeats: Vec<Vec<Run>> = entries.iter().map(|_| Vec::new()).collect();
        for _ in 0..step.repeats {
            rng.shuffle(&mut order);
            for &at in &order {
                let entry = &mut entries[at];
                let (Some(callers), None) = (&mut entry.callers, entry.saturated_at) else {
                    continue;
                };
                let started = Instant::now();
                let schedule = Schedule::new(rate as f64, cell.concurrency, step.each);
                match callers.open_round(&w, schedule) {
                    Ok(run) => repeats[at].push(run),
                    Err(err) => {
                        let why = format!("at {rate} requests/s: {err}");
                        let why = cell::pair_error(ctx.servers, &cell, &why);
                        entry.callers = None;
                        entry.row = entry.row.clone().fail(Status::Failed, why);
                    }
                }
                entry.seconds += started.elapsed().as_secs_f64();
            }
        }
        for ((entry, runs), rows) in entries.iter_mut().zip(&repeats).zip(&mut measured) {
            let row = at_rate(&entry.row, rate);
            rows.push(match (&entry.callers, entry.saturated_at) {
                // Never connected, or failed (at this rate or a lower one): the failure's row.
                (None, _) => row,
                (Some(_), Some(lower)) => not_run(row, &cell, lower),
                (Some(_), None) => {
                    let row = with_runs(row, runs, step);
                    if row.open_loop.is_some_and(|open| open.saturated) {
                        entry.saturated_at = Some(rate);
                    }
                    row
                }
            });
        }
    }
    for (entry, mut runs) in entries.into_iter().zip(measured) {
        let per_rate = entry.seconds / runs.len().max(1) as f64;
        for row in runs.iter_mut() {
            row.seconds = Some(per_rate);
        }
        eprintln!(
            "  {}: {}",
            entry.name,
            (runs.iter()).map(describe).collect::<Vec<_>>().join(", ")
        );
        rows.extend(runs);
    }
    cell::leave_nothing(ctx, &w, &mut reference)?;
    Ok(Outcome {
        rows,
        rounds: 0,
        twin_rounds: None,
    })
}

/// The row of a rate's repeats.
fn with_runs(mut row: Row, runs: &[Run], step: Step) -> Row {
    let record = record(runs);
    let (callers, rate) = (row.concurrency, row.offered_rate.unwrap_or(0));
    row.timing = Some(format!(
        "open loop: {callers} callers share {rate} requests/s in {} repeat(s) of {:?}, \
         interleaved with the other clients' (each caller's requests {:.0} us apart, callers \
         staggered); latency from each request's intended start, each percentile the median of \
         the repeats'; {} of {} answered, at most {} still due at the end of a repeat",
        runs.len(),
        step.each,
        f64::from(callers) / rate.max(1) as f64 * 1e6,
        record.completed,
        record.offered,
        record.backlog_end
    ));
    row.open_loop = Some(record);
    row
}

/// A rate above the one a client was saturated at: recorded saturated, not run.
fn not_run(mut row: Row, cell: &crate::matrix::Cell, lower: u64) -> Row {
    row.timing = Some(format!(
        "not run: saturated at {lower} requests/s, a lower rate of {cell}'s ladder"
    ));
    row.open_loop = Some(OpenLoop {
        seconds: 0.0,
        offered: 0,
        completed: 0,
        achieved_rate: None,
        saturated: true,
        backlog_mid: 0,
        backlog_end: 0,
        latency_ns: None,
        repeats: 0,
        p99_range_ns: None,
        floor_ns: None,
    });
    row
}

/// `32000/s: p99 0.41 ms`, `800000/s: saturated (612000/s)`.
pub fn describe(row: &Row) -> String {
    let rate = row.offered_rate.unwrap_or(0);
    match (&row.open_loop, &row.error) {
        (_, Some(error)) => format!("{rate}/s: {error}"),
        (Some(open), _) => match (open.latency_ns, open.achieved_rate) {
            (Some(latency), _) => format!("{rate}/s: p99 {:.2} ms", latency.p99 as f64 / 1e6),
            (None, Some(achieved)) => format!("{rate}/s: saturated ({achieved:.0}/s)"),
            (None, None) => format!("{rate}/s: saturated below"),
        },
        (None, None) => format!("{rate}/s: -"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run at 10,000 requests/s for 0.4 s whose latencies are 1,000 requests at `typical` ns
    /// and 10 at `slow` ns (its p99 is `typical`, its maximum `slow`); answered at `answered`
    /// of the rate.
    fn run(typical: u64, slow: u64, answered: f64) -> Run {
        let mut latency = histogram();
        latency.record_n(typical, 1_000).unwrap();
        latency.record_n(slow, 10).unwrap();
        let mut floor = histogram();
        floor.record_n(typical / 10, 100).unwrap();
        Run {
            rate: 10_000.0,
            callers: 16,
            duration: Duration::from_millis(400),
            offered: 4_000,
            completed: 4_000,
            started: 4_000,
            backlog_middle: 0,
            backlog_end: 0,
            elapsed: Duration::from_secs_f64(0.4 / answered),
            latency,
            floor,
        }
    }

    fn near(value: u64, expected: u64) -> bool {
        value.abs_diff(expected) * 100 <= expected
    }

    #[test]
    fn a_stall_in_one_repeat_moves_the_median_p99_little_and_shows_in_the_max_and_range() {
        let runs = [
            run(300_000, 900_000, 1.0),
            run(40_000_000, 50_000_000, 1.0),
            run(400_000, 1_000_000, 1.0),
        ];
        let record = record(&runs);
        let latency = record.latency_ns.expect("not saturated");
        assert!(near(latency.p99, 400_000), "{latency:?}");
        assert!(near(latency.max, 50_000_000), "{latency:?}");
        let range = record.p99_range_ns.expect("three repeats");
        assert!(near(range.lowest, 300_000) && near(range.highest, 40_000_000));
        assert_eq!(
            (record.repeats, record.offered, record.completed),
            (3, 12_000, 12_000)
        );
        assert!(near(record.floor_ns.expect("floor").p99, 40_000));
        assert!((record.seconds - 1.2).abs() < 1e-9);
    }

    #[test]
    fn saturated_when_most_repeats_are() {
        let one = record(&[
            run(300_000, 900_000, 1.0),
            run(300_000, 900_000, 0.5),
            run(300_000, 900_000, 1.0),
        ]);
        assert!(!one.saturated && one.latency_ns.is_some());
        let two = record(&[
            run(300_000, 900_000, 0.5),
            run(300_000, 900_000, 1.0),
            run(300_000, 900_000, 0.5),
        ]);
        assert!(two.saturated && two.latency_ns.is_none() && two.p99_range_ns.is_none());
        // 12,000 answered over 0.8 + 0.4 + 0.8 s.
        let achieved = two.achieved_rate.expect("ran");
        assert!((achieved - 6_000.0).abs() < 1.0, "{achieved}");
    }

    #[test]
    fn one_repeat_is_the_run_itself() {
        let record = run(300_000, 900_000, 1.0).record();
        assert_eq!(record.repeats, 1);
        assert_eq!(record.p99_range_ns, None);
        assert!(near(record.latency_ns.expect("kept up").p99, 300_000));
    }
}
