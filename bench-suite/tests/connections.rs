//! The `connections` a row records are counted, not declared: the sockets the bench process has
//! open after a client connected and made its first calls, less those before. This test counts
//! them the way the bench does, for every registered client over TCP, and checks the count
//! against what each concurrency model implies: C callers of `threads` open C sockets, of
//! `multiplexed` one, of a `pool` its size. One caller opens one socket, or, for a pool, at most
//! the pool's size (a pool may also serve a single caller).

use kvbench_bench_suite::callers::{self, Callers};
use kvbench_bench_suite::drivers::{Driver, Workload};
use kvbench_bench_suite::matrix::{Cell, Op};
use kvbench_core::{Concurrency, Options, Transport};
use kvbench_servers::{Servers, StartOptions};

const CALLERS: usize = 3;

fn set_cell(spec: &kvbench_core::ClientSpec, concurrency: usize) -> Cell {
    Cell {
        backend: spec.backend,
        op: Op::Set,
        value_size: 3,
        pipeline: 1,
        transport: Transport::Tcp,
        concurrency,
        open: false,
    }
}

#[test]
fn every_row_counts_the_sockets_its_client_opened() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    let options = Options::default();
    let mut checked = 0;
    for spec in kvbench_clients::all() {
        if !spec.supports(Transport::Tcp) || spec.slow_round_trip.is_some() {
            continue;
        }
        let endpoint = servers.endpoint(spec.backend, Transport::Tcp).unwrap();

        // One caller, as the bench's single-caller cells connect it.
        let w = Workload::new(set_cell(&spec, 1), |key| key.to_vec());
        let before = callers::Sockets::now();
        let mut driver = Driver::connect(&spec, &endpoint, &options).expect("connect");
        driver.client().set(&w.key, &w.value).expect("a SET");
        let one = before.opened_since();
        let most = match spec.concurrency {
            Concurrency::Pool { connections, .. } => connections,
            _ => 1,
        };
        assert!(
            (1..=most).contains(&one),
            "{}: one caller opened {one} sockets, expected 1..={most}",
            spec.name
        );
        drop(driver);

        // C callers, as the bench's many-caller cells connect them.
        let w = Workload::new(set_cell(&spec, CALLERS), |key| key.to_vec());
        let many = Callers::connect(&spec, &endpoint, &options, CALLERS, &w).expect("callers");
        let want = spec.concurrency.connections(CALLERS);
        assert_eq!(
            many.connections, want,
            "{}: {CALLERS} callers ({:?}) opened {} sockets",
            spec.name, many.model, many.connections
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} clients checked");
}
