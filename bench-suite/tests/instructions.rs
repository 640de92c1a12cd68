//! Instructions per operation, counted under valgrind (`kvbench_bench_suite::count`) against real
//! private servers. A count is deterministic for a locked Cargo.lock and a build profile, so it
//! is asserted: the same blocking pair counted twice agrees to 0.1 %, and the teaching clients
//! cost the fraction of a library's instructions that is their reason to exist. A regression in
//! a teaching client fails here. No time is asserted.
//!
//! The counts are of this test build's `kvbench-matrix` (unoptimised workspace crates and
//! libraries alike); `make cost` counts the release build. The ratios asserted hold in both, with
//! room; the release build's numbers are in the reference run.

use std::path::{Path, PathBuf};

use kvbench_bench_suite::count::{self, Count, Job, Valgrind};
use kvbench_bench_suite::drivers::Workload;
use kvbench_bench_suite::matrix::{Cell, full_matrix};
use kvbench_bench_suite::ops;
use kvbench_conformance::Reference;
use kvbench_core::{Backend, Concurrency, Endpoint, Kind, Transport};
use kvbench_servers::{Servers, StartOptions};

/// Calls per phase of a GET, as the bench's counted pass makes them. redis-rs's cost per GET
/// grows with its connection's calls (a read buffer zeroed afresh as it grows: memset is half of
/// its count by the 3,000th call), so its figure is of this many calls, like the bench's.
const GET_CALLS: u64 = 1_000;

struct Bench {
    servers: Servers,
    valgrind: Valgrind,
    dir: PathBuf,
}

impl Bench {
    fn start() -> Bench {
        let valgrind = Valgrind::find()
            .unwrap_or_else(|reason| panic!("instructions are counted under valgrind: {reason}"));
        let servers = Servers::start(&StartOptions::default()).expect("private servers");
        let dir = servers.dir().expect("a private folder").join("counts");
        Bench {
            servers,
            valgrind,
            dir,
        }
    }

    /// `client`'s instructions per operation in the cell `id` (its keys prepared first), with
    /// `calls` calls per phase.
    fn count(&self, client: &str, id: &str, calls: u64) -> Count {
        let cell = cell(id);
        let endpoint = self.servers.endpoint(cell.backend, cell.transport).unwrap();
        let w = Workload::new(cell, |key| key.to_vec());
        let mut reference = Reference::connect(cell.backend, &endpoint).expect("reference");
        ops::prepare(&mut reference, &w).expect("prepare the cell's keys");
        let (tcp, unix) = match endpoint {
            Endpoint::Tcp(addr) => (Some(addr), None),
            Endpoint::Unix(path) => (None, Some(path)),
        };
        let job = Job {
            client: client.to_string(),
            cell: id.to_string(),
            callers: cell.concurrency,
            tcp,
            unix,
            prefix: String::new(),
            first: None,
            calls,
        };
        let ops_per_call = (cell.pipeline * cell.concurrency) as u64;
        (self
            .valgrind
            .count(program(), &self.dir, &job, ops_per_call))
        .unwrap_or_else(|err| panic!("counting {client} in {id}: {err}"))
    }
}

fn program() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kvbench-matrix"))
}

fn cell(id: &str) -> Cell {
    (full_matrix(&[256]).into_iter())
        .find(|cell| cell.id() == id)
        .unwrap_or_else(|| panic!("no cell {id}"))
}

#[test]
fn a_blocking_client_counted_twice_gives_the_same_count() {
    let bench = Bench::start();
    for (client, id) in [
        ("raw-tcp", "redis/get/3B/tcp"),
        ("buffered", "redis/get/3B/tcp"),
        ("memcached-text", "memcached/get/3B/tcp"),
    ] {
        let (first, second) = (
            bench.count(client, id, GET_CALLS),
            bench.count(client, id, GET_CALLS),
        );
        let apart = (first.per_op - second.per_op).abs() / first.per_op;
        eprintln!(
            "{client} {id}: {:.1} and {:.1} instructions per GET (phases {:.4} apart)",
            first.per_op, second.per_op, first.spread
        );
        assert!(apart <= 0.001, "{client}: {first:?} vs {second:?}");
        assert!(first.spread <= 0.001, "{client}'s phases differ: {first:?}");
    }
}

#[test]
fn the_teaching_clients_cost_a_fraction_of_a_librarys_instructions() {
    let bench = Bench::start();
    // Every hand-written blocking Redis client's GET 3 B: at most 0.2x redis-rs's, over the
    // same transport (raw-unix speaks only Unix sockets).
    let library =
        ["tcp", "unix"].map(|t| bench.count("redis-rs", &format!("redis/get/3B/{t}"), GET_CALLS));
    let blocking = (kvbench_clients::all().into_iter()).filter(|spec| {
        spec.kind == Kind::HandWritten
            && spec.backend == Backend::Redis
            && spec.connect_async.is_none()
            && matches!(spec.concurrency, Concurrency::Threads)
    });
    let mut seen = 0;
    for spec in blocking {
        let (transport, library) = match spec.supports(Transport::Tcp) {
            true => ("tcp", &library[0]),
            false => ("unix", &library[1]),
        };
        // A client slow by design waits 40 ms a call: a few calls count it just as well.
        let calls = if spec.slow_round_trip.is_some() {
            5
        } else {
            GET_CALLS
        };
        let ours = bench.count(spec.name, &format!("redis/get/3B/{transport}"), calls);
        let ratio = ours.per_op / library.per_op;
        eprintln!(
            "GET 3 B over {transport}: {} {:.0} instructions, {ratio:.3}x redis-rs's {:.0}",
            spec.name, ours.per_op, library.per_op
        );
        assert!(ratio <= 0.2, "{}: {ratio:.3}x redis-rs", spec.name);
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} hand-written blocking Redis clients");

    // buffered's pipelined SET: at most 0.2x redis-rs's per item.
    let id = "redis/pipeline_set/1000/tcp";
    let (ours, theirs) = (
        bench.count("buffered", id, 2),
        bench.count("redis-rs", id, 2),
    );
    eprintln!(
        "pipelined SET: buffered {:.0}, redis-rs {:.0} instructions per item",
        ours.per_op, theirs.per_op
    );
    assert!(ours.per_op <= 0.2 * theirs.per_op);

    // memcached-meta's quiet pipeline: at most 0.5x memcached-text's per item, which reads,
    // parses and checks a `STORED` per item (and formats each item's numbers afresh, where meta
    // keeps its line from item to item). About 0.47x in the release build.
    let id = "memcached/pipeline_set/1000/tcp";
    let meta = bench.count("memcached-meta", id, 2);
    let text = bench.count("memcached-text", id, 2);
    eprintln!(
        "pipelined SET: memcached-meta {:.0}, memcached-text {:.0} instructions per item",
        meta.per_op, text.per_op
    );
    assert!(meta.per_op <= 0.5 * text.per_op);
}

#[test]
fn the_multiplexer_costs_a_fraction_of_redis_rs_async() {
    // GET 3 B, at one caller and at 256 callers on one connection, against redis-rs's
    // multiplexed connection, on the same runtime. At one caller `multiplexed` writes and reads
    // for itself, with no task hop: about 0.37x redis-rs/async's instructions in the release
    // build; at 256 callers its batches keep it near 0.34x.
    let bench = Bench::start();
    for (id, calls) in [
        ("redis/get/3B/tcp", GET_CALLS),
        ("redis/get/3B/tcp/c256", 20),
    ] {
        let ours = bench.count("multiplexed", id, calls);
        let theirs = bench.count("redis-rs/async", id, calls);
        let ratio = ours.per_op / theirs.per_op;
        eprintln!(
            "{id}: multiplexed {:.0}, redis-rs/async {:.0} instructions per GET ({ratio:.3}x)",
            ours.per_op, theirs.per_op
        );
        assert!(
            ratio <= 0.5,
            "{id}: multiplexed at {ratio:.3}x redis-rs/async"
        );
    }
}

#[test]
fn callgrind_dumps_are_read_with_their_compressed_names() {
    // One function named where it is first called (cfn=), then by id alone (fn=); a call's
    // inclusive cost is the callee's, not the caller's own.
    let text = "\
events: Ir
fn=(1) main
0 10
cfn=(2) kvbench::get
calls=1 0
0 500
fn=(2)
0 480
summary: 490
";
    let dump = count::Dump::parse(text).expect("a dump");
    assert_eq!(dump.total, 490);
    assert_eq!(
        dump.functions,
        [("kvbench::get".to_string(), 480), ("main".to_string(), 10)]
    );
}
