//! A client that exists only in this test passes the conformance kit and runs a bench cell,
//! though no list, driver or table in the suite knows its name: the kit and the bench select
//! clients by what their specs declare. It wraps the connection of the first hand-written Redis
//! client over TCP in a type of its own, under a name of its own.
//!
//! The bench cell is run in-process through `runner::run_with`, in criterion's `--test` mode (this
//! binary takes no criterion arguments, so criterion runs its functions once, as tests).

use std::process::ExitCode;

use kvbench_bench_suite::costs::CountingAllocator;
use kvbench_bench_suite::matrix::{Matrix, Mode, Placement, Settings};
use kvbench_bench_suite::results::{Results, Status};
use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Kind, Options, Result, Transport};

/// Counts allocations for the bench cell's cost pass, as `benches/matrix.rs` does.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const NAME: &str = "test-only/wrapped";
const CELL: &str = "redis/get/3B/tcp";

/// The client the wrapper borrows its connection from, chosen by its spec's properties.
fn wrapped_spec() -> ClientSpec {
    kvbench_clients::all()
        .into_iter()
        .find(|spec| {
            spec.kind == Kind::HandWritten
                && spec.backend == Backend::Redis
                && spec.supports(Transport::Tcp)
                && spec.slow_round_trip.is_none()
        })
        .expect("a hand-written Redis client over TCP")
}

/// A client type no crate defines: every call goes through to the wrapped connection.
struct Wrapped(Box<dyn Client>);

impl Client for Wrapped {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.get(key)
    }
    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.set(key, value)
    }
    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.0.set_ex(key, value, ttl_secs)
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.0.delete(key)
    }
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.0.set_many(items)
    }
}

fn connect(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    let inner = (wrapped_spec().connect)(endpoint, options)?;
    Ok(Box::new(Wrapped(inner)))
}

/// The extra client's spec: the wrapped client's declarations, with its own name and connect,
/// and no role of the wrapped one (the loopback floor stays with the suite's client).
fn extra_spec() -> ClientSpec {
    ClientSpec {
        name: NAME,
        summary: "a test-only wrapper of a hand-written Redis connection",
        loopback_floor: false,
        connect,
        connect_async: None,
        concurrency: kvbench_core::Concurrency::Threads,
        // The wrapper forwards only the contract's required operations.
        operations: &[],
        ..wrapped_spec()
    }
}

/// Runs the one cell with the extra client (the suite's clients are there too, for the floor)
/// and checks what the run recorded.
fn bench_cell() -> std::result::Result<(), String> {
    let reports = std::env::temp_dir().join(format!("kvbench-extra-client-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&reports);
    let settings = Settings {
        mode: Mode::Test,
        placement: Placement::parse("none", 1).map_err(|err| err.to_string())?,
        clients: vec![NAME.into()],
        cells: vec![CELL.into()],
        run_id: Some("extra-client".into()),
        repeat: 1,
        repeat_cells: Vec::new(),
        order_seed: 1,
        matrix: Matrix::Full,
        // The one plain cell only.
        concurrency: Vec::new(),
        count: kvbench_bench_suite::matrix::Counting::Off,
        #[cfg(feature = "fault-injection")]
        stop_server_at: None,
    };
    let mut clients = kvbench_clients::all();
    clients.push(extra_spec());
    let run = kvbench_bench_suite::runner::run_with(clients, settings, &reports);
    let path = reports.join("extra-client").join("results.json");
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_dir_all(&reports);
    run.map_err(|err| format!("the run failed: {err:#}"))?;
    let text = text.map_err(|err| format!("{}: {err}", path.display()))?;
    let results: Results = serde_json::from_str(&text).map_err(|err| err.to_string())?;
    let rows: Vec<String> = results
        .rows
        .iter()
        .map(|row| format!("{} {} {}", row.cell, row.client, row.status))
        .collect();
    let ok = |client: &str| {
        results
            .rows
            .iter()
            .any(|row| row.cell == CELL && row.client == client && row.status == Status::Ok)
    };
    if !ok(NAME) || !ok(kvbench_bench_suite::baselines::LOOPBACK_FLOOR) {
        return Err(format!(
            "want {NAME} and the loopback floor verified in {CELL}, got: {rows:?}"
        ));
    }
    if results
        .rows
        .iter()
        .any(|row| row.kind == kvbench_results::Kind::HandWritten && row.client != NAME)
    {
        return Err(format!("only {NAME} was selected, got: {rows:?}"));
    }
    eprintln!("extra client: bench rows {rows:?}");
    Ok(())
}

fn main() -> ExitCode {
    let kit = kvbench_conformance::kit::run(&[extra_spec()]);
    if kit != ExitCode::SUCCESS {
        return kit;
    }
    match bench_cell() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
