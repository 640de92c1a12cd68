//! Bytes on the wire, from the servers' own counters (`kvbench_bench_suite::wire`), against real
//! private servers: the meter's own exchanges cancel out to the byte, a pipelined SET costs
//! memcached-text a `STORED\r\n` per item and memcached-meta's quiet batch one `MN\r\n` in all,
//! and a whole run records both per item in its rows (null for a baseline and for an external
//! server). Byte counts are deterministic and asserted exactly; no time is asserted.

mod common;

use std::time::Duration;

use common::run_matrix;
use kvbench_bench_suite::drivers::{Driver, Workload};
use kvbench_bench_suite::matrix::{Cell, Op};
use kvbench_bench_suite::results::Status;
use kvbench_bench_suite::wire::{Traffic, WireMeter};
use kvbench_core::{Backend, Options, Transport};
use kvbench_results::{Kind, Row};
use kvbench_servers::{Servers, StartOptions};

const TIMEOUT: Duration = Duration::from_secs(5);
const ITEMS: usize = 10_000;

/// Digits of `i` in decimal.
fn digits(i: usize) -> u64 {
    i.to_string().len() as u64
}

/// The traffic of one call of `client`'s timed operation in `cell`, metered as the bench meters a
/// cost pass (connected and checked first, so only the call is between the readings).
fn one_call(servers: &Servers, client: &str, cell: Cell) -> Traffic {
    let spec = kvbench_clients::by_name(client).expect("a registered client");
    let endpoint = servers.endpoint(cell.backend, cell.transport).unwrap();
    let w = Workload::new(cell, |key| key.to_vec());
    let args = w.args();
    let mut driver = Driver::connect(&spec, &endpoint, &Options::default()).expect("connect");
    let meter = WireMeter::start(cell.backend, std::slice::from_ref(&endpoint), TIMEOUT)
        .expect("opening reading");
    driver.run_n(&w, &args, 1, &mut |_| {}).expect("the call");
    meter.finish().expect("closing reading")
}

fn pipeline(backend: Backend, items: usize) -> Cell {
    Cell {
        backend,
        op: Op::PipelineSet,
        value_size: 3,
        pipeline: items,
        transport: Transport::Tcp,
        concurrency: 1,
        open: false,
    }
}

#[test]
fn the_meters_own_exchanges_count_nothing() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    for backend in [Backend::Redis, Backend::Memcached] {
        for transport in [Transport::Tcp, Transport::Unix] {
            let endpoint = servers.endpoint(backend, transport).unwrap();
            let meter = WireMeter::start(backend, std::slice::from_ref(&endpoint), TIMEOUT)
                .expect("opening reading");
            let traffic = meter.finish().expect("closing reading");
            assert_eq!(traffic, Traffic::default(), "{backend} over {transport}");
        }
    }
}

#[test]
fn a_redis_set_is_its_request_and_ok() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    let cell = Cell {
        op: Op::Set,
        pipeline: 1,
        ..pipeline(Backend::Redis, 1)
    };
    // SET set:3 <3 bytes>: `*3\r\n$3\r\nSET\r\n$5\r\nset:3\r\n$3\r\n...\r\n`, answered `+OK\r\n`.
    let traffic = one_call(&servers, "raw-tcp", cell);
    assert_eq!(
        traffic,
        Traffic {
            read: 5,
            written: 33
        }
    );
}

#[test]
fn quiet_mode_reads_almost_nothing_back() {
    let servers = Servers::start_private(&StartOptions::default()).expect("private servers");
    let cell = pipeline(Backend::Memcached, ITEMS);

    let text = one_call(&servers, "memcached-text", cell);
    // `set foo 0 0 3\r\nbar\r\n` per item, answered `STORED\r\n`.
    assert_eq!(
        text,
        Traffic {
            read: 8 * ITEMS as u64,
            written: 20 * ITEMS as u64
        }
    );

    let meta = one_call(&servers, "memcached-meta", cell);
    // `ms foo 3 q O<i>\r\nbar\r\n` per item, then `mn\r\n`; only `MN\r\n` comes back.
    let written: u64 = (0..ITEMS).map(|i| 19 + digits(i)).sum::<u64>() + 4;
    assert_eq!(meta, Traffic { read: 4, written });

    let (text_read, _) = text.per_op(ITEMS as u64);
    let (meta_read, _) = meta.per_op(ITEMS as u64);
    assert!(text_read >= 8.0, "text reads {text_read} bytes per item");
    assert!(
        meta_read <= 0.1 * text_read,
        "meta reads {meta_read} bytes per item, text {text_read}"
    );
}

/// A whole `--test` run of the cells `CELLS` selects, with memcached-text and memcached-meta.
fn run_cells(name: &str, cells: &str) -> kvbench_results::Results {
    let run = run_matrix(
        name,
        &[
            ("CLIENTS", "memcached-text,memcached-meta".into()),
            ("CELLS", cells.into()),
        ],
    );
    assert!(run.status.success(), "{}", run.stderr);
    run.results
}

fn row<'a>(results: &'a kvbench_results::Results, cell: &str, client: &str) -> &'a Row {
    (results.rows.iter())
        .find(|r| r.cell == cell && r.client == client)
        .unwrap_or_else(|| panic!("no row {cell} {client}"))
}

/// The runner puts the bytes per item of its cost pass into the rows of a pipelined SET.
#[test]
fn a_run_records_bytes_per_item() {
    let cell = "memcached/pipeline_set/1000/tcp";
    let results = run_cells("wire-bytes-pipeline", cell);
    let (text, meta) = (
        row(&results, cell, "memcached-text"),
        row(&results, cell, "memcached-meta"),
    );
    assert_eq!((text.status, meta.status), (Status::Ok, Status::Ok));
    assert_eq!(text.bytes_read_per_op, Some(8.0), "{:?}", text.flags);
    assert_eq!(text.bytes_written_per_op, Some(20.0));
    let meta_read = meta.bytes_read_per_op.expect("meta's bytes read");
    assert!(meta_read <= 0.1 * 8.0, "meta reads {meta_read} per item");
}

/// A single SET's bytes, and none for the loopback floor (a server of its own).
#[test]
fn a_run_records_no_bytes_for_the_floor() {
    let cell = "memcached/set/3B/tcp";
    let results = run_cells("wire-bytes-set", cell);
    // `set set:3 0 0 3\r\n<3 bytes>\r\n` (22 bytes), answered `STORED\r\n`.
    let text = row(&results, cell, "memcached-text");
    assert_eq!(text.bytes_read_per_op, Some(8.0), "{:?}", text.flags);
    assert_eq!(text.bytes_written_per_op, Some(22.0));
    let floor = row(&results, cell, kvbench_results::LOOPBACK_FLOOR);
    assert_eq!((floor.kind, floor.status), (Kind::Baseline, Status::Ok));
    assert_eq!(
        (floor.bytes_read_per_op, floor.bytes_written_per_op),
        (None, None)
    );
}

/// Against an external server the counters are everyone's: the rows have none, and the run's
/// notes say why.
#[test]
fn an_external_server_gets_no_bytes_per_op() {
    let owner = Servers::start_private(&StartOptions::default()).expect("the user's servers");
    let endpoint = owner.endpoint(Backend::Memcached, Transport::Tcp).unwrap();
    let kvbench_core::Endpoint::Tcp(addr) = &endpoint else {
        unreachable!()
    };
    let run = run_matrix(
        "wire-bytes-external",
        &[
            ("MEMCACHED_URL", format!("memcache://{addr}")),
            ("CLIENTS", "memcached-text".into()),
            ("CELLS", "memcached/set/3B/tcp".into()),
        ],
    );
    assert!(run.status.success(), "{}", run.stderr);
    let row = (run.results.rows.iter())
        .find(|r| r.client == "memcached-text")
        .expect("memcached-text's row");
    assert_eq!(row.status, Status::Ok);
    assert_eq!(
        (row.bytes_read_per_op, row.bytes_written_per_op),
        (None, None)
    );
    assert!(
        (run.results.run.notes.iter())
            .any(|note| note.contains("bytes_read_per_op") && note.contains("memcached")),
        "{:?}",
        run.results.run.notes
    );
}
