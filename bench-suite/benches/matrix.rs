//! The matrix: every cell × every client that serves it, side by side in one criterion group
//! per cell, plus cost passes and same-run baselines. Settings come from the environment
//! (`MODE`, `PLACEMENT`, `CLIENTS`, `CELLS`, `RUN_ID`; see `bench-suite/README.md`).
//!
//! `cargo bench --bench matrix -- --test` runs every pair once, verification included; so does
//! `cargo test --bench matrix`, with the debug build `make test` has already made.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use kvbench_bench_suite::baselines::{self, LoopbackFloor};
use kvbench_bench_suite::costs::{self, CountingAllocator, SyscallCounter};
use kvbench_bench_suite::drivers::{self, Driver, Workload};
use kvbench_bench_suite::matrix::{Cell, Mode, Op, Settings};
use kvbench_bench_suite::results::{
    self, Interval, PlacementRecord, Results, Row, Run, ServerRecord, ServersRecord,
};
use kvbench_bench_suite::verify::{self, Rejection};
use kvbench_conformance::Reference;
use kvbench_core::{Backend, ClientSpec, Options};
use kvbench_servers::{Servers, StartOptions};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Pipelines at least this deep, through a client without pipelining, are timed once instead of
/// by criterion: one call is a million round trips (seconds), and criterion needs ten samples.
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

/// Calls in a cost pass: enough operations for stable per-op numbers, a fraction of a second.
fn cost_pass_calls(cell: &Cell, mode: Mode) -> u64 {
    let calls = match cell.op {
        Op::PipelineSet if cell.pipeline >= 100_000 => 1,
        Op::PipelineSet => 100,
        _ if cell.value_size >= 1 << 20 => 200,
        _ if cell.value_size >= 100 << 10 => 1_000,
        _ => 5_000,
    };
    if mode == Mode::Test {
        calls.min(10)
    } else {
        calls
    }
}

fn kind(spec: &ClientSpec) -> &'static str {
    spec.kind.as_str()
}

struct Harness {
    settings: Settings,
    servers: Servers,
    dir: PathBuf,
    results: Arc<Mutex<Results>>,
    /// Syscall counters could be opened at start-up (else the run's notes say why).
    count_syscalls: bool,
    started: Instant,
}

impl Harness {
    fn push(&self, row: Row) {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results.rows.push(row);
    }

    fn save(&self) -> Result<()> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.duration_s = self.started.elapsed().as_secs_f64();
        results::write(&self.dir, &results)
    }

    fn criterion_dir(&self) -> PathBuf {
        self.dir.join("criterion")
    }

    /// criterion's estimate for `function` in `cell`, per operation.
    fn wall(&self, cell: &Cell, function: &str) -> Result<Interval> {
        let per_iteration =
            results::criterion_estimate(&self.criterion_dir(), &cell.id(), function)?;
        let ops = cell.ops_per_iteration() as f64;
        Ok(Interval {
            mean: per_iteration.mean / ops,
            lower: per_iteration.lower / ops,
            upper: per_iteration.upper / ops,
        })
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
    items: &[(&[u8], &[u8])],
) -> Option<kvbench_core::Error> {
    // An error inside the timed loop is kept and stops the work; the row is then marked failed.
    let failure = std::cell::RefCell::new(None);
    match driver {
        Driver::Sync(client) => {
            group.bench_function(name, |b| {
                b.iter(|| {
                    if failure.borrow().is_none()
                        && let Err(err) = drivers::run_sync(client.as_mut(), w, items)
                    {
                        *failure.borrow_mut() = Some(err);
                    }
                })
            });
        }
        Driver::Async(async_driver) => {
            let runtime = &async_driver.runtime;
            let client = std::cell::RefCell::new(&mut async_driver.client);
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
                            if let Err(err) = client.run(w, items).await {
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

/// Runs the cost pass for a driver and returns the row with costs filled in.
fn with_cost_pass(
    h: &mut Harness,
    row: Row,
    driver: &mut Driver,
    w: &Workload,
    items: &[(&[u8], &[u8])],
    slow: bool,
) -> Row {
    // A client that is slow by design (~40 ms a round trip) gets 50 calls: 2 s, not 4 minutes.
    let calls = if slow {
        50
    } else {
        cost_pass_calls(&w.cell, h.settings.mode)
    };
    let outcome = costs::measure(
        h.count_syscalls,
        calls,
        w.cell.ops_per_iteration(),
        w.cell.is_request_response(),
        |n, each| driver.run_n(w, items, n, each),
    );
    match outcome {
        Ok(costs) => row.with_costs(&costs),
        Err(err) => row.fail("failed", format!("cost pass: {err}")),
    }
}

/// One cell: verify and time every client, the floor, then redis-benchmark.
fn run_cell(
    h: &mut Harness,
    criterion: &mut Criterion,
    cell: &Cell,
    specs: &[ClientSpec],
) -> Result<()> {
    let endpoint = h
        .servers
        .endpoint(cell.backend, cell.transport)
        .with_context(|| format!("no {} endpoint on {}", cell.backend, cell.transport))?;
    let w = Workload::new(*cell, |key| h.servers.key(cell.backend, key));
    let items = w.items();
    let mut reference = Reference::connect(cell.backend, &endpoint).map_err(anyhow::Error::msg)?;
    verify::prepare(&mut reference, &w).map_err(anyhow::Error::msg)?;
    let options = bench_options();
    let test_mode = h.settings.mode == Mode::Test;

    let mut group = criterion.benchmark_group(cell.id());
    // Throughput before any function is registered, or it applies to none.
    group.throughput(match cell.op {
        Op::PipelineSet => Throughput::Elements(cell.pipeline as u64),
        _ if cell.value_size >= 1024 => Throughput::Bytes(cell.value_size as u64),
        _ => Throughput::Elements(1),
    });
    if cell.pipeline >= SINGLE_SHOT_DEPTH {
        group.sample_size(10).sampling_mode(SamplingMode::Flat);
    }

    for spec in specs.iter().filter(|spec| drivers::serves(spec, cell)) {
        let row = Row::new(cell, spec.name, kind(spec));
        if let (Some(reason), Op::PipelineSet) = (spec.slow_round_trip, cell.op) {
            h.push(row.fail(
                "unsupported",
                format!("not run: every round trip is slow by design ({reason})"),
            ));
            continue;
        }
        let mut driver = match Driver::connect(spec, &endpoint, &options) {
            Ok(driver) => driver,
            Err(err) => {
                h.push(row.fail("failed", format!("connect: {err}")));
                continue;
            }
        };
        match verify::verify(driver.client(), &mut reference, spec, &w) {
            Ok(()) => {}
            Err(Rejection::Refused(reason)) => {
                h.push(row.fail("unsupported", format!("refused before sending: {reason}")));
                continue;
            }
            Err(Rejection::Failed(err)) => {
                eprintln!("  {}: verification failed: {err}", spec.name);
                h.push(row.fail("failed", format!("verification: {err}")));
                continue;
            }
        }

        let slow = spec.slow_round_trip.is_some();
        let row = if cell.pipeline >= SINGLE_SHOT_DEPTH && !spec.pipelines() {
            // Timed once, by the cost pass itself: see SINGLE_SHOT_DEPTH. In a --test run the
            // default loop runs 1,000 items: its behaviour does not depend on depth, and the
            // smoke run must stay short.
            let depth = if test_mode {
                verify::DEFAULT_LOOP_VERIFY_DEPTH
            } else {
                cell.pipeline
            };
            let items = &items[..depth];
            let outcome = costs::measure(h.count_syscalls, 1, depth as u64, false, |n, each| {
                driver.run_n(&w, items, n, each)
            });
            match outcome {
                Ok(costs) => {
                    let per_op = costs.elapsed.as_nanos() as f64 / depth as f64;
                    let interval = Interval {
                        mean: per_op,
                        lower: per_op,
                        upper: per_op,
                    };
                    let timing = format!("single-shot: one call of {depth} (no pipelining)");
                    row.with_wall(interval, &timing).with_costs(&costs)
                }
                Err(err) => row.fail("failed", format!("{err}")),
            }
        } else {
            match time_driver(&mut group, spec.name, &mut driver, &w, &items) {
                Some(err) => row.fail("failed", format!("during timing: {err}")),
                None if test_mode => with_cost_pass(h, row, &mut driver, &w, &items, slow),
                None => match h.wall(cell, spec.name) {
                    Ok(interval) => with_cost_pass(
                        h,
                        row.with_wall(interval, "criterion"),
                        &mut driver,
                        &w,
                        &items,
                        slow,
                    ),
                    Err(err) => row.fail("failed", format!("no criterion estimate: {err:#}")),
                },
            }
        };
        h.push(row);
    }

    if cell.is_request_response() {
        let row = floor_row(h, &mut group, cell, &w, &options);
        h.push(row);
    }
    group.finish();

    if cell.backend == Backend::Redis {
        let row = if h.servers.is_external(Backend::Redis) {
            Row::new(cell, baselines::REDIS_BENCHMARK, "baseline").fail(
                "unsupported",
                "redis-benchmark writes unprefixed keys: not run against an external server",
            )
        } else {
            baselines::redis_benchmark(
                cell,
                &endpoint,
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
        };
        h.push(row);
    }

    let link = h.report_link(cell);
    {
        let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        for row in results.rows.iter_mut().filter(|row| row.cell == cell.id()) {
            row.criterion_report = link.clone();
        }
    }
    h.save()
}

fn floor_row(
    h: &mut Harness,
    group: &mut BenchmarkGroup<'_, WallTime>,
    cell: &Cell,
    w: &Workload,
    options: &Options,
) -> Row {
    let client_name = LoopbackFloor::client_name(cell.backend, cell.transport);
    let row = Row::new(cell, baselines::LOOPBACK_FLOOR, "baseline");
    let Some(spec) = kvbench_clients::by_name(client_name) else {
        return row.fail("failed", format!("no client named {client_name}"));
    };
    let floor =
        match LoopbackFloor::start(w, cell.transport, h.settings.placement.server_cpu, &h.dir) {
            Ok(floor) => floor,
            Err(err) => return row.fail("failed", format!("starting the floor server: {err:#}")),
        };
    let row = match Driver::connect(&spec, &floor.endpoint, options) {
        Err(err) => row.fail("failed", format!("connect: {err}")),
        Ok(mut driver) => {
            let name = baselines::LOOPBACK_FLOOR;
            let row = match time_driver(group, name, &mut driver, w, &[]) {
                Some(err) => row.fail("failed", format!("during timing: {err}")),
                None if h.settings.mode == Mode::Test => {
                    with_cost_pass(h, row, &mut driver, w, &[], false)
                }
                None => match h.wall(cell, name) {
                    Ok(interval) => {
                        let row = row.with_wall(
                            interval,
                            &format!("criterion ({client_name} against a canned reply)"),
                        );
                        with_cost_pass(h, row, &mut driver, w, &[], false)
                    }
                    Err(err) => row.fail("failed", format!("no criterion estimate: {err:#}")),
                },
            };
            drop(driver);
            row
        }
    };
    floor.join();
    row
}

fn server_record(servers: &Servers, backend: Backend) -> ServerRecord {
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
    ServerRecord {
        version: info.version.clone(),
        config,
        external: info.external,
    }
}

fn run_id(settings: &Settings) -> String {
    settings.run_id.clone().unwrap_or_else(|| {
        let stamp = results::now_utc().replace(':', "-");
        format!("{stamp}-{}", settings.mode.as_str())
    })
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    // criterion runs every benchmark once, as a test, when given `--test` or when started
    // without `--bench` (as `cargo test --bench matrix` does): a smoke run.
    let args: Vec<String> = std::env::args().collect();
    let test_flag = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");
    let settings = Settings::from_env(test_flag)?;
    let placement = settings.placement;
    if let Some(cpu) = placement.client_cpu {
        kvbench_servers::pin_current_thread(cpu)
            .with_context(|| format!("pinning the bench to CPU {cpu}"))?;
    }
    let servers = Servers::start(&StartOptions {
        redis_cpu: placement.server_cpu,
        memcached_cpu: placement.server_cpu,
        ..StartOptions::default()
    })?;

    let id = run_id(&settings);
    let reports = results::reports_dir();
    let dir = reports.join(&id);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (warm_up, measurement, samples) = settings.mode.timing();
    let mut notes = Vec::new();
    let count_syscalls = match SyscallCounter::open() {
        Ok(_) => true,
        Err(reason) => {
            notes.push(format!("syscalls_per_op missing: {reason}"));
            false
        }
    };
    let run = Run {
        id: id.clone(),
        started_at: results::now_utc(),
        finished_at: None,
        git_sha: results::git_sha(),
        mode: settings.mode.as_str().into(),
        rustc: results::rustc_version(),
        kernel: results::kernel(),
        cpu_model: results::cpu_model(),
        cores: results::online_cpus(),
        placement: PlacementRecord {
            mode: placement.mode_str().into(),
            server_cpu: placement.server_cpu,
            client_cpu: placement.client_cpu,
        },
        servers: ServersRecord {
            redis: server_record(&servers, Backend::Redis),
            memcached: server_record(&servers, Backend::Memcached),
        },
        duration_s: 0.0,
        criterion_args: format!(
            "warm_up={warm_up:?} measurement={measurement:?} sample_size={samples} (10, flat sampling, for pipelines >= {SINGLE_SHOT_DEPTH})"
        ),
        filters: format!(
            "CLIENTS={} CELLS={}",
            settings.clients.join(","),
            settings.cells.join(",")
        ),
        notes,
    };
    let results = Arc::new(Mutex::new(Results {
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
        .output_directory(&dir.join("criterion"))
        .configure_from_args();
    let specs: Vec<ClientSpec> = kvbench_clients::all()
        .into_iter()
        .filter(|s| settings.wants_client(s.name))
        .collect();
    let cells = settings.cells();
    eprintln!(
        "kvbench: {} cells, {} clients, mode {}, placement {} (servers on CPU {:?}, bench on CPU {:?}), results in {}",
        cells.len(),
        specs.len(),
        settings.mode.as_str(),
        placement.mode_str(),
        placement.server_cpu,
        placement.client_cpu,
        dir.display()
    );

    let mut h = Harness {
        settings,
        servers,
        dir: dir.clone(),
        results,
        count_syscalls,
        started: Instant::now(),
    };
    for (i, cell) in cells.iter().enumerate() {
        let elapsed = h.started.elapsed();
        let eta = if i == 0 {
            String::from("?")
        } else {
            format!("{:.0?}", elapsed / i as u32 * (cells.len() - i) as u32)
        };
        eprintln!(
            "[{}/{}] {cell}  (elapsed {:.0?}, about {eta} left)",
            i + 1,
            cells.len(),
            Duration::from_secs(elapsed.as_secs())
        );
        if let Err(err) = run_cell(&mut h, &mut criterion, cell, &specs) {
            eprintln!("  cell {cell} failed: {err:#}");
            for spec in specs.iter().filter(|spec| drivers::serves(spec, cell)) {
                h.push(
                    Row::new(cell, spec.name, kind(spec))
                        .fail("failed", format!("cell setup: {err:#}")),
                );
            }
            h.save()?;
        }
    }
    criterion.final_summary();

    {
        let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.finished_at = Some(results::now_utc());
    }
    h.save()?;
    results::update_latest(&reports, &id)?;
    match kvbench_report::render_run(&h.dir) {
        Ok(()) => eprintln!("kvbench: report in {}", h.dir.join("index.html").display()),
        Err(err) => eprintln!("kvbench: the report could not be rendered: {err}"),
    }
    let failed = {
        let results = h.results.lock().unwrap_or_else(|e| e.into_inner());
        results
            .rows
            .iter()
            .filter(|row| row.status == "failed")
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
