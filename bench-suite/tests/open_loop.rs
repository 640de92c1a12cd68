//! The open-loop generator ([`kvbench_bench_suite::open_loop`]) against a server whose replies
//! are scripted in time ([`DelayedServer`]): a known delay reads as itself, a stall shows at its
//! length where a closed loop hides it, and the schedule holds its rate. Each test runs for
//! about a second and asserts with margins a busy two-CPU machine keeps. Like the bench under
//! `PLACEMENT=same-core`, each test pins itself (so its server's threads and its callers) to one
//! CPU: on this kind of VM a reply that wakes a thread on another, idle CPU costs ~90 us of
//! wake-up, which is the hypervisor's and not the generator's. The tests run one at a time.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kvbench_bench_suite::callers::Callers;
use kvbench_bench_suite::drivers::Workload;
use kvbench_bench_suite::matrix::{self, Cell};
use kvbench_bench_suite::open_loop::{Run, Schedule, percentiles};
use kvbench_core::{Backend, ClientSpec, Options};
use kvbench_servers::script::DelayedServer;

const MS: f64 = 1e6;

/// One test at a time, pinned to the last CPU (where `same-core` puts the bench and servers);
/// threads started later (the server's, the callers') inherit the pinning.
fn alone_on_one_cpu() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    kvbench_servers::pin_current_thread(cpus - 1).expect("pinning the test");
    guard
}

fn spec(name: &str) -> ClientSpec {
    *(kvbench_clients::all().iter())
        .find(|spec| spec.name == name)
        .unwrap_or_else(|| panic!("no client {name}"))
}

/// `callers` callers of `client` connected to `server`, and the GET 3 B workload.
fn callers(client: &str, server: &DelayedServer, callers: usize) -> (Callers, Workload) {
    // The matrix's own open cell of Redis's GET 3 B, with fewer callers.
    let cell = (matrix::full_matrix(&[]).into_iter())
        .find(|cell| cell.open && cell.backend == Backend::Redis)
        .expect("an open cell");
    let cell = Cell {
        concurrency: callers,
        ..cell
    };
    let w = Workload::new(cell, |key| key.to_vec());
    let endpoint = server.endpoint();
    let connected = Callers::connect(&spec(client), &endpoint, &Options::default(), callers, &w)
        .unwrap_or_else(|err| panic!("{client}: {err}"));
    (connected, w)
}

fn open(callers: &mut Callers, w: &Workload, rate: f64, seconds: f64) -> Run {
    let schedule = Schedule::new(rate, callers.count(), Duration::from_secs_f64(seconds));
    callers.open_round(w, schedule).expect("open-loop run")
}

fn ms(ns: u64) -> f64 {
    ns as f64 / MS
}

/// The p50 and floor of `callers` raw-tcp callers at `rate` against a server that answers after
/// `delay`.
fn p50_at(delay: Duration, rate: f64) -> (u64, kvbench_results::OpenLatency) {
    let server = DelayedServer::start(delay).unwrap();
    let (mut callers, w) = callers("raw-tcp", &server, 16);
    let run = open(&mut callers, &w, rate, 1.0);
    let record = run.record();
    assert!(!record.saturated, "saturated at {rate}/s");
    let latency = record.latency_ns.expect("latencies");
    eprintln!(
        "{delay:?} server at {rate}/s: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(latency.p50),
        ms(latency.p99),
        ms(latency.max)
    );
    (
        latency.p50,
        record.floor_ns.expect("callers waited for their slots"),
    )
}

#[test]
fn a_fixed_1ms_reply_reads_as_1ms_at_a_low_rate() {
    let _alone = alone_on_one_cpu();
    // The same callers, rate and schedule against a server with no delay: the round trip and
    // the generator's floor, which a 1 ms delay adds to.
    let (round_trip, _) = p50_at(Duration::ZERO, 400.0);
    let (p50, floor) = p50_at(Duration::from_millis(1), 400.0);
    eprintln!(
        "1 ms delay: p50 {:.3} ms, {:.3} ms over the round trip without it; the generator's \
         floor p50 {:.3} ms, p99 {:.3} ms",
        ms(p50),
        ms(p50 - round_trip),
        ms(floor.p50),
        ms(floor.p99)
    );
    assert!(p50 >= 1_000_000, "no reply can come before 1 ms");
    let delay = p50.saturating_sub(round_trip) as f64;
    assert!(
        (0.9 * MS..=1.1 * MS).contains(&delay),
        "the 1 ms delay read as {} ms (p50 {} ms, {} ms without the delay)",
        delay / MS,
        ms(p50),
        ms(round_trip)
    );
}

#[test]
fn a_stall_shows_at_its_length_in_an_open_loop_and_hides_in_a_closed_one() {
    let _alone = alone_on_one_cpu();
    let stall = Duration::from_millis(100);
    let server = DelayedServer::start(Duration::from_millis(1)).unwrap();
    let (mut callers, w) = callers("raw-tcp", &server, 16);

    // Open: 2,000 requests a second for a second, the stall in the middle. Every request due
    // in the stall waits for its end: about a tenth of them, so p99 is most of the stall.
    server.stall(Instant::now() + Duration::from_millis(500), stall);
    let run = open(&mut callers, &w, 2_000.0, 1.0);
    let latency = percentiles(&run.latency).expect("latencies");

    // Closed: the same callers back to back for about a second, the same stall. Each caller
    // is stuck once, so 16 requests of some 10,000 see it.
    server.stall(Instant::now() + Duration::from_millis(500), stall);
    let round = callers.round(&w, 700, true).expect("closed-loop round");
    let mut closed = round.latencies;
    closed.sort_unstable();
    let closed_p99 = closed[closed.len() * 99 / 100];
    let closed_max = *closed.last().unwrap();
    eprintln!(
        "100 ms stall: open loop (2,000/s) p99 {:.1} ms, p99.9 {:.1} ms, max {:.1} ms; closed \
         loop ({} requests in {:?}) p99 {:.2} ms, max {:.1} ms",
        ms(latency.p99),
        ms(latency.p999),
        ms(latency.max),
        closed.len(),
        round.elapsed,
        ms(closed_p99),
        ms(closed_max)
    );
    // The open loop sees the stall at its length.
    assert!(
        (80.0..=150.0).contains(&ms(latency.max)),
        "open max {} ms",
        ms(latency.max)
    );
    assert!(ms(latency.p99) >= 50.0, "open p99 {} ms", ms(latency.p99));
    // The closed loop met the same stall (its maximum) but its p99 hardly moved.
    assert!(ms(closed_max) >= 80.0, "closed max {} ms", ms(closed_max));
    assert!(ms(closed_p99) <= 10.0, "closed p99 {} ms", ms(closed_p99));
    assert!(
        latency.p99 >= 10 * closed_p99,
        "open p99 {} ms against closed p99 {} ms",
        ms(latency.p99),
        ms(closed_p99)
    );
}

#[test]
fn the_schedule_holds_its_rate_on_a_fast_server() {
    let _alone = alone_on_one_cpu();
    let server = DelayedServer::start(Duration::ZERO).unwrap();
    // A thread per caller, and tasks woken by the pacer.
    for (client, n) in [("raw-tcp", 16), ("multiplexed", 64)] {
        let (mut callers, w) = callers(client, &server, n);
        let rate = 5_000.0;
        let run = open(&mut callers, &w, rate, 1.0);
        let record = run.record();
        let floor = record.floor_ns.expect("callers waited for their slots");
        eprintln!(
            "{client}, {n} callers at {rate}/s: achieved {:.1}/s ({} of {} answered), floor p50 \
             {:.3} ms, p99 {:.3} ms",
            run.achieved(),
            run.completed,
            run.offered,
            ms(floor.p50),
            ms(floor.p99)
        );
        // Answered within the run, bar the few a short slow period of the machine leaves in
        // flight at its end (10 of 5,000 once, under a loaded `make test`).
        assert!(
            run.completed as f64 >= 0.99 * run.offered as f64,
            "{client}: {} of {} answered",
            run.completed,
            run.offered
        );
        assert!(!record.saturated, "{client}");
        let off = (run.achieved() / rate - 1.0).abs();
        assert!(
            off <= 0.01,
            "{client}: achieved {} of {rate}",
            run.achieved()
        );
    }
}

#[test]
fn a_client_that_cannot_keep_up_is_saturated_with_its_achieved_rate() {
    let _alone = alone_on_one_cpu();
    let server = DelayedServer::start(Duration::from_millis(1)).unwrap();
    // Four callers of a 1 ms server answer at most 4,000 a second.
    let (mut callers, w) = callers("raw-tcp", &server, 4);
    let run = open(&mut callers, &w, 10_000.0, 0.5);
    let record = run.record();
    eprintln!(
        "4 callers, 1 ms server, 10,000/s offered: achieved {:.0}/s, backlog {} halfway, {} at \
         the end",
        run.achieved(),
        run.backlog_middle,
        run.backlog_end
    );
    assert!(record.saturated);
    assert!(record.latency_ns.is_none(), "no latency when saturated");
    assert!(run.achieved() < 4_100.0, "achieved {}", run.achieved());
    assert!(run.backlog_end > run.backlog_middle);
}
