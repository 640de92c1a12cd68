//! The run: every cell × every client that serves it, side by side in one criterion group per
//! cell (a cell with many callers runs each client's callers as its spec declares, see
//! [`crate::callers`]), plus cost passes and same-run baselines. Settings come from the
//! environment (`MODE`, `PLACEMENT`, `CLIENTS`, `CELLS`, `RUN_ID`, `REPEAT`, `REPEAT_CELLS`,
//! `ORDER_SEED`, `CONCURRENCY`; see `bench-suite/README.md` and [`Settings::from_env`]). Behind
//! both `benches/matrix.rs` and the `kvbench-matrix` binary.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::callers;
use crate::cell;
use crate::costs::{self, SyscallCounter};
use crate::count::{self, Counter};
use crate::environment;
use crate::matrix::{Counting, Matrix, Mode, Settings};
use crate::network_floor;
use crate::plan::{self, Plan, Visit};
use crate::results::{self, Results, Row, RowExt, Run, Status};
use anyhow::{Context, Result};
use criterion::Criterion;
use kvbench_core::{Backend, ClientSpec};
use kvbench_results::verdict::paired_ratio;
use kvbench_results::{ClusterNodeRecord, ClusterRecord, Server, Servers as ServersRecord};
use kvbench_servers::{Servers, StartOptions};

/// `pair <cell>/<client>: <status> (<how it was timed, or why not>)`, one line per row.
pub fn pair_line(row: &Row) -> String {
    let detail = match (&row.error, row.ops_per_sec, &row.timing) {
        (Some(error), _, _) => error.clone(),
        (None, Some(ops), Some(timing)) => format!("{ops:.0} ops/s; {timing}"),
        (None, None, Some(timing)) => timing.clone(),
        (None, Some(ops), None) => format!("{ops:.0} ops/s"),
        (None, None, None) => String::from("verified"),
    };
    let ratio = match (&row.ratio_to_reference, &row.reference) {
        (Some(r), Some(reference)) => format!(
            " [{:.3}x {reference} ({:.3}-{:.3}), {} rounds]",
            r.median, r.lower, r.upper, r.rounds
        ),
        _ => String::new(),
    };
    // An open cell's pair: the client at one rate, and what came of it.
    let open = match row.open_loop {
        Some(_) if row.is_ok() => format!(" [{}]", crate::open_loop::describe(row)),
        _ => String::new(),
    };
    format!(
        "pair {}/{}: {}{ratio}{open} ({detail})",
        row.cell, row.client, row.status
    )
}

/// The run's results as they grow: one row per pair, merged over the pair's runs.
struct Harness {
    settings: Settings,
    dir: PathBuf,
    results: Arc<Mutex<Results>>,
    /// Every run of every pair so far, in the order pairs first ran; `results.rows` holds one
    /// row per pair, merged from these.
    runs: Vec<Vec<Row>>,
    /// Each cell's A/A twin's rounds, over its runs (pooled like the rows').
    twins: Vec<(String, Vec<f64>)>,
    /// Each cell's rounds so far, over its runs: a later run's round indices count on from here.
    rounds: Vec<(String, u32)>,
    started: Instant,
}

impl Harness {
    /// Records a visit's rows and lists their pairs (`--test` included): criterion no longer
    /// prints what it times, so these lines account for every pair.
    fn push(&mut self, visit: &Visit, outcome: cell::Outcome) {
        let (repeat, id) = (visit.repeat, visit.cell.id());
        let cell = id.as_str();
        let offset = match self.rounds.iter_mut().find(|(c, _)| c == cell) {
            Some((_, rounds)) => {
                *rounds += outcome.rounds;
                *rounds - outcome.rounds
            }
            None => {
                self.rounds.push((cell.to_string(), outcome.rounds));
                0
            }
        };
        // criterion's pages for the cell, when it drew them (`PLOTS=1`): the first run's group.
        let link = format!(
            "criterion/{}/report/index.html",
            results::criterion_dir_name(cell)
        );
        let link = self.dir.join(&link).exists().then_some(link);
        for mut row in outcome.rows {
            if repeat == 1 {
                row.criterion_report = link.clone();
            }
            // Every row's rounds by their index over all of the cell's runs, so that runs pool.
            if row.round_indices.is_empty() {
                row.round_indices = (0..row.round_ops_per_sec.len() as u32).collect();
            }
            for index in row.round_indices.iter_mut() {
                *index += offset;
            }
            match self.settings.visits_of(&visit.cell) {
                1 => eprintln!("{}", pair_line(&row)),
                visits => eprintln!("{} [visit {repeat} of {visits}]", pair_line(&row)),
            }
            // An open cell's pair is a client at one offered rate.
            let same_pair = |runs: &Vec<Row>| {
                runs[0].cell == row.cell
                    && runs[0].client == row.client
                    && runs[0].offered_rate == row.offered_rate
            };
            match self.runs.iter().position(same_pair) {
                Some(index) => self.runs[index].push(row),
                None => self.runs.push(vec![row]),
            }
        }
        match (
            self.twins.iter_mut().find(|(c, _)| c == cell),
            outcome.twin_rounds,
        ) {
            (Some((_, rounds)), Some(more)) => rounds.extend(more),
            (None, Some(rounds)) => self.twins.push((cell.to_string(), rounds)),
            // A run without a twin leaves the pooled rounds unaligned: no A/A for the cell.
            (Some((_, rounds)), None) => rounds.clear(),
            (None, None) => {}
        }
        self.merge_cell(cell);
    }

    /// Merges the runs of `cell`'s pairs into rows, and pairs them again over the pooled rounds.
    fn merge_cell(&mut self, cell: &str) {
        let total = (self.rounds.iter())
            .find(|(c, _)| c == cell)
            .map_or(0, |(_, n)| *n);
        let merged: Vec<(usize, Row)> = (self.runs.iter().enumerate())
            .filter(|(_, runs)| runs[0].cell == cell)
            .map(|(i, runs)| (i, results::merge(runs)))
            .collect();
        // The reference of the cell's latest run.
        let reference = (merged.iter())
            .filter_map(|(_, row)| row.reference.clone())
            .next_back();
        let merged: Vec<(usize, Row)> = (merged.into_iter())
            .map(|(i, mut row)| {
                // A row that ran in every round needs no indices.
                if row.round_indices.len() as u32 == total
                    && (row.round_indices.iter().enumerate()).all(|(i, &r)| r == i as u32)
                {
                    row.round_indices.clear();
                }
                (i, row)
            })
            .collect();
        let reference_row = reference.as_ref().and_then(|name| {
            (merged.iter())
                .find(|(_, row)| &row.client == name && row.is_ok())
                .map(|(_, row)| row.clone())
        });
        let reference_rounds = reference_row
            .as_ref()
            .map(|row| row.round_ops_per_sec.clone());
        let twin = (self.twins.iter()).find(|(c, _)| c == cell).map(|(_, r)| r);
        let aa = match (&reference_rounds, twin) {
            (Some(reference), Some(twin)) => paired_ratio(reference, twin),
            _ => None,
        };
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        for (i, mut row) in merged {
            if row.is_ok() && !row.round_ops_per_sec.is_empty() {
                row.reference = reference.clone();
                row.aa_ratio = aa;
                row.ratio_to_reference = match &reference_row {
                    Some(theirs) if row.client != theirs.client => {
                        kvbench_results::verdict::paired_rows(&row, theirs)
                    }
                    _ => None,
                };
            }
            match results.rows.get_mut(i) {
                Some(slot) => *slot = row,
                None => results.rows.push(row),
            }
        }
    }

    fn save(&self) -> Result<()> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results.run.duration_s = self.started.elapsed().as_secs_f64();
        results.run.aa = kvbench_results::verdict::aa_summary(&results.rows);
        results::write(&self.dir, &results)
    }
}

/// The run's method, in words, for `results.json`.
fn method(settings: &Settings) -> String {
    let policy = settings.mode.policy();
    format!(
        "paired rounds: every contender of a cell connected to the same fresh server, then timed \
         in blocks of a fixed number of calls sized to ~{:?} (many callers: the calls they \
         complete over a stretch of {:?}), one block \
         of each per round in a fresh random order (seed {}), until a minimum of rounds and a \
         time budget are both reached; the reference contender timed twice for the A/A check{}; \
         a ratio is the median of the per-round ratios with a 95 % bootstrap interval over the \
         rounds. Baseline tools take part as short runs of their own at their reported rate. \
         criterion's per-contender statistics and reports are fed the blocks' times (it times \
         nothing itself). Cost pass after the rounds: ~{} s of calls per contender.",
        policy.block,
        policy.block_many,
        settings.order_seed,
        if policy.aa { "" } else { " (not in this run)" },
        policy.cost_pass_seconds
    )
}

/// Raises the soft limit on open files (`RLIMIT_NOFILE`) for `sockets` open at once (see
/// [`open_files_wanted`]).
fn raise_open_file_limit(sockets: usize) -> Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error()).context("reading RLIMIT_NOFILE");
    }
    let Some(want) = open_files_wanted(sockets, limit.rlim_cur, limit.rlim_max)? else {
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

/// The soft limit on open files that `sockets` open at once need, if the current `soft` one is
/// too low: the bench's sockets, or as many server ends in a server's process (the servers
/// inherit the limit), plus room for the rest. Refuses, naming the limit, when the `hard` limit
/// is too low: better than failing halfway through the run.
fn open_files_wanted(sockets: usize, soft: u64, hard: u64) -> Result<Option<u64>> {
    let want = sockets as u64 + 1024;
    if soft >= want {
        return Ok(None);
    }
    if hard < want {
        anyhow::bail!(
            "a cell needs {sockets} sockets at once ({want} open files), but the hard limit on \
             open files (RLIMIT_NOFILE, `ulimit -Hn`) is {hard}: raise it, or lower CONCURRENCY"
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
    if let Ok(json) = std::env::var(count::COUNT_VAR) {
        return count::run_job(&json, &all_clients())
            .map_err(|err| anyhow::anyhow!("count: {err}"));
    }
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
    if args.iter().any(|a| a == "--list") {
        // What a run would do, without starting a server: external servers are known from
        // their URLs; whether one is remote is decided when the run starts.
        let servers = plan::Servers {
            external: (["REDIS_URL", "MEMCACHED_URL", "REDIS_CLUSTER_URL"].iter())
                .zip([Backend::Redis, Backend::Memcached, Backend::RedisCluster])
                .filter(|(var, _)| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
                .map(|(_, backend)| backend)
                .collect(),
            ..plan::Servers::default()
        };
        // A reader that stops early (`| head`) is not an error.
        let text = Plan::new(&settings, &all_clients(), &servers).describe();
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
        return Ok(());
    }
    run_with(all_clients(), settings, &environment::reports_dir())
}

/// valgrind and this program, when the run counts instructions per operation; the run records
/// valgrind's version, or the reason nothing is counted.
fn counter(settings: &Settings, program: Option<&Path>, h: &Harness) -> Result<Option<Counter>> {
    if settings.count == Counting::Off {
        return Ok(None);
    }
    let found = match (count::Valgrind::find(), program) {
        (Ok(valgrind), Some(program)) => Ok(Counter {
            valgrind,
            program: program.to_path_buf(),
            parallel: environment::online_cpus().max(1),
        }),
        (Err(reason), _) => Err(reason),
        (_, None) => Err("this program cannot run itself as the counted child".to_string()),
    };
    let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
    match found {
        Ok(counter) => {
            results.run.valgrind = Some(counter.valgrind.version.clone());
            if (settings.cells().iter()).any(|c| c.pipeline > count::COUNTED_ITEMS) {
                results.run.notes.push(format!(
                    "instructions_per_op of a pipeline deeper than {} items is counted on calls \
                     of its first {0} items: a million items take about 15 s a call under \
                     valgrind, and per item the same code runs",
                    count::COUNTED_ITEMS
                ));
            }
            Ok(Some(counter))
        }
        Err(reason) if settings.count == Counting::Only => anyhow::bail!("COUNT=only: {reason}"),
        Err(reason) => {
            results
                .run
                .notes
                .push(format!("instructions_per_op missing: {reason}"));
            Ok(None)
        }
    }
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
    // Every contender of a cell is connected at once: the busiest cell's sockets, counted from a
    // plan that assumes private servers (an external one only has fewer: no baseline tools).
    let sockets = Plan::new(&settings, &clients, &plan::Servers::default()).max_sockets();
    raise_open_file_limit(sockets)?;
    // Servers first: the thread that starts (and restarts) them must keep every CPU, and the
    // bench's own pinning below applies to this thread only.
    let server_options = StartOptions {
        redis_cpu: placement.server_cpu,
        memcached_cpu: placement.server_cpu,
        // Every contender's connections at once, the reference connection's, and a few more.
        max_connections: sockets + 64,
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
    let mut notes = Vec::new();
    #[cfg(feature = "fault-injection")]
    if let Some((cell, client)) = &settings.stop_server_at {
        notes.push(format!(
            "fault test: the server is stopped during {cell}, after {client}'s verification"
        ));
    }
    match environment::keep_freed_memory() {
        Ok(note) => notes.push(note),
        Err(reason) => notes.push(format!(
            "the allocator's thresholds are not fixed: {reason}"
        )),
    }
    let congestion_control = environment::tcp_congestion_control();
    if let Some(warning) =
        (congestion_control.as_deref()).and_then(environment::congestion_control_warning)
    {
        eprintln!("kvbench: warning: {warning}");
        notes.push(warning);
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
        tcp_congestion_control: congestion_control,
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
        method: method(&settings),
        aa: None,
        valgrind: None,
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

    // criterion times nothing: each contender's blocks are fed to it (`cell::feed_criterion`),
    // so its warm-up and measurement are the blocks' times, replayed in microseconds.
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(10))
        .measurement_time(Duration::from_millis(100))
        .sample_size(10)
        .nresamples(10_000)
        .output_directory(&dir.join("criterion"))
        .configure_from_args();
    let plan_servers = plan::Servers {
        external: ([Backend::Redis, Backend::Memcached, Backend::RedisCluster].into_iter())
            .filter(|&backend| servers.is_external(backend))
            .collect(),
        remote: remote.clone(),
        unreachable: (settings.cells().iter())
            .filter(|cell| servers.endpoint(cell.backend, cell.transport).is_none())
            .map(|cell| (cell.backend, cell.transport))
            .collect(),
    };
    let plan = Plan::new(&settings, &clients, &plan_servers);
    eprintln!(
        "kvbench: {} cells ({} visits, REPEAT={}), mode {}, placement {} (servers on CPU {:?}, \
         bench on CPU {:?}), order seed {}, about {:.0} min, results in {}",
        settings.cells().len(),
        plan.visits.len(),
        settings.repeat,
        settings.mode.as_str(),
        placement.mode_str(),
        placement.server_cpu,
        placement.client_cpu,
        settings.order_seed,
        plan.estimate().as_secs_f64() / 60.0,
        dir.display()
    );

    let mut h = Harness {
        settings: settings.clone(),
        dir: dir.clone(),
        results,
        runs: Vec::new(),
        twins: Vec::new(),
        rounds: Vec::new(),
        started: Instant::now(),
    };
    let mut servers = servers;
    let memory_probe = MEMORY_PROBE_PROGRAM.get().cloned();
    let counter = counter(&settings, memory_probe.as_deref(), &h)?;
    for (i, visit) in plan.visits.iter().enumerate() {
        let elapsed = h.started.elapsed();
        let eta = if i == 0 {
            String::from("?")
        } else {
            format!(
                "{:.0?}",
                elapsed / i as u32 * (plan.visits.len() - i) as u32
            )
        };
        eprintln!(
            "[{}/{}] {}{}  (elapsed {:.0?}, about {eta} left)",
            i + 1,
            plan.visits.len(),
            visit.cell,
            if visit.repeat > 1 {
                format!(" (visit {})", visit.repeat)
            } else {
                String::new()
            },
            Duration::from_secs(elapsed.as_secs())
        );
        let mut notes = Vec::new();
        let outcome = {
            let mut ctx = cell::Context {
                settings: &settings,
                servers: &mut servers,
                dir: &dir,
                count_syscalls,
                memory_probe: memory_probe.as_deref(),
                counter: counter.as_ref(),
                notes: &mut notes,
                criterion: &mut criterion,
            };
            cell::run(&mut ctx, visit)
        };
        if !notes.is_empty() {
            let mut results = h.results.lock().unwrap_or_else(|e| e.into_inner());
            results.run.notes.extend(notes);
        }
        let outcome = outcome.unwrap_or_else(|err| {
            eprintln!("  cell {} failed: {err:#}", visit.cell);
            cell::Outcome {
                rounds: 0,
                rows: (visit.measured())
                    .map(|c| {
                        results::new_row(&visit.cell, c.name, c.kind)
                            .fail(Status::Failed, format!("cell setup: {err:#}"))
                    })
                    .collect(),
                twin_rounds: None,
            }
        });
        h.push(visit, outcome);
        h.save()?;
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
        if let Some(aa) = &results.run.aa {
            eprintln!(
                "kvbench: A/A over {} cells: median |ratio - 1| {:.2} %, worst {:.2} % ({}); \
                 {} within 1 %, {} within 2 %",
                aa.cells,
                aa.median_deviation * 100.0,
                aa.worst_deviation * 100.0,
                aa.worst_cell,
                aa.within_1_percent,
                aa.within_2_percent
            );
        }
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
    drop(servers);
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
        assert_eq!(open_files_wanted(2048, 20_000, 20_000).unwrap(), None);
        assert_eq!(open_files_wanted(2048, 1024, 4096).unwrap(), Some(3072));
        let err = open_files_wanted(4096, 1024, 4096).unwrap_err().to_string();
        assert!(
            err.contains("RLIMIT_NOFILE") && err.contains("4096"),
            "{err}"
        );
    }
}
