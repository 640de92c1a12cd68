//! Same-run baselines: `redis-benchmark` (the benchmark tool shipped with Redis) on every Redis
//! cell it can express (a cell of many items by the command that comes closest: `MGET` of the
//! cell's keys, `-P` for pipelined GETs and SETs), `memaslap` on memcached's TCP GET, SET and
//! multi-get cells whose preloaded keys fit the server (both with one connection per caller,
//! `-c C`, driven by one thread), and a loopback floor — a server that does no work, in
//! one-caller GET and SET cells — so every row can be read as a multiple of what the transport
//! itself costs. Rows of many items count per item, as the clients' do.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kvbench_core::{Backend, ClientSpec, Endpoint, Transport};

use crate::drivers::Workload;
use crate::matrix::Cell;
use crate::ops;
use crate::results::Latency;

/// Name of the redis-benchmark rows.
pub const REDIS_BENCHMARK: &str = kvbench_results::REDIS_BENCHMARK;
/// Name of the memaslap rows.
pub const MEMASLAP: &str = kvbench_results::MEMASLAP;
/// Name of the loopback floor rows.
pub const LOOPBACK_FLOOR: &str = kvbench_results::LOOPBACK_FLOOR;
/// The key redis-benchmark uses when not given `-r`.
pub(crate) const REDIS_BENCHMARK_KEY: &[u8] = b"key:__rand_int__";
/// Sets redis-benchmark's key to a value (`Some`) or deletes it (`None`).
pub type PrepareKey<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<()> + 'a;

/// What redis-benchmark runs for a cell ([`crate::ops::redis_benchmark`]): the arguments of each
/// command (after the connection, `-c`, `--csv` and `-n`), how many of the cell's items one
/// request does, and how the row words it.
pub struct RedisBenchmarkCommands {
    /// One command, or two whose times add up to one call of the cell (the hash: HSET, then
    /// HGETALL).
    pub commands: Vec<Vec<String>>,
    /// Items of the cell one request does: 100 for MGET of a hundred keys, 1 for a GET.
    pub items_per_request: u64,
    /// What the row says beside the command lines (empty: nothing).
    pub note: &'static str,
}

impl RedisBenchmarkCommands {
    /// One command, each of whose requests does one of the cell's items.
    pub fn one(command: Vec<String>, note: &'static str) -> RedisBenchmarkCommands {
        RedisBenchmarkCommands {
            commands: vec![command],
            items_per_request: 1,
            note,
        }
    }
}

/// One run of a baseline tool in a paired round: the operations it reports, and how long they
/// took at its own reported rate (its start-up is not counted).
#[derive(Debug, Clone, Copy)]
pub struct ToolBlock {
    /// Items done (keys for a multi-get, items for a pipeline).
    pub ops: f64,
    /// Seconds they took, at the tool's reported rate.
    pub seconds: f64,
    /// Its latency percentiles, where it reports them per request.
    pub latency: Option<Latency>,
}

/// A baseline tool ready to run in a cell's paired rounds, each round one short run of its own.
pub struct Tool {
    /// redis-benchmark or memaslap.
    which: Which,
    /// CPU it is pinned to (`taskset`), the bench's.
    cpu: Option<usize>,
    /// Its command lines; redis-benchmark's without `-n`, which [`Tool::calibrate`] sizes and
    /// which goes between its options and its command (`common`).
    commands: Vec<Vec<String>>,
    /// redis-benchmark's options before `-n` and the command.
    common: Vec<String>,
    /// Requests per redis-benchmark run.
    requests: u64,
    /// Items of the cell one request does (100 for an MGET of a hundred keys).
    items_per_request: u64,
    /// What the row says of the work (how it differs from the cell's), before the commands.
    note: String,
    /// memaslap's block of statistics the row is read from: its GETs' or its SETs'.
    statistics: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    RedisBenchmark,
    Memaslap,
}

impl Tool {
    /// redis-benchmark for `w`'s cell: `prepare` sets or deletes its key the way the cell needs
    /// (a value of the cell's size, or absent); a command over the cell's own keys (MGET, HSET)
    /// finds them as the cell prepared them. One connection per caller (`-c`), driven by its
    /// own event loop.
    pub fn redis_benchmark(
        w: &Workload,
        endpoint: &Endpoint,
        cpu: Option<usize>,
        prepare: &mut PrepareKey<'_>,
    ) -> Result<Tool> {
        let cell = &w.cell;
        let plan = ops::redis_benchmark(w, prepare)?;
        let mut common: Vec<String> = match endpoint {
            Endpoint::Tcp(addr) => {
                let (host, port) = addr
                    .rsplit_once(':')
                    .context("TCP endpoint without a port")?;
                vec!["-h".into(), host.into(), "-p".into(), port.into()]
            }
            Endpoint::Unix(path) => vec!["-s".into(), path.display().to_string()],
        };
        if cell.backend == Backend::RedisCluster {
            // It reads the slot map from the node given, and sends each key to its node.
            common.push("--cluster".into());
        }
        // -c: its event loop drives the cell's callers as that many connections.
        common.extend([
            "-c".to_string(),
            cell.concurrency.to_string(),
            "--csv".into(),
        ]);
        Ok(Tool {
            which: Which::RedisBenchmark,
            cpu,
            commands: plan.commands,
            common,
            requests: first_requests(cell, plan.items_per_request),
            items_per_request: plan.items_per_request,
            note: plan.note.to_string(),
            statistics: GET_STATISTICS,
        })
    }

    /// memaslap for a memcached TCP cell ([`memaslap_serves`]): `-c C -T 1` (one thread
    /// driving the cell's callers as connections), the cell's value size, get-only or set-only
    /// through its configuration file, which `dir` holds. Each run lasts two of its one-second
    /// periods: the first holds its preloading, the second is the measurement.
    pub fn memaslap(
        cell: &Cell,
        endpoint: &Endpoint,
        cpu: Option<usize>,
        dir: &Path,
    ) -> Result<Tool> {
        let Endpoint::Tcp(addr) = endpoint else {
            bail!("memaslap has no Unix-socket support");
        };
        let work = ops::memaslap(cell).context("memaslap cannot express the cell's operation")?;
        // Command type 0 is SET, 1 is GET; the proportions make it one or the other.
        let (set, get) = if work.gets { (0, 1) } else { (1, 0) };
        let size = cell.value_size;
        let config = dir.join("memaslap.cfg");
        let config_text = format!("key\n16 16 1\nvalue\n{size} {size} 1\ncmd\n0 {set}\n1 {get}\n");
        std::fs::write(&config, &config_text)
            .with_context(|| format!("writing {}", config.display()))?;
        // Two one-second periods: the preloading, then the measurement; with many connections
        // the preloading takes longer (256 connections × 1,024 keys), and a run as long as its
        // preloading has been seen never to stop.
        let seconds = if cell.concurrency > 1 { "4s" } else { "2s" };
        let mut args: Vec<String> = [
            "-s",
            addr,
            "-T",
            "1",
            "-w",
            "1k",
            "-S",
            "1s",
            "-t",
            seconds,
            "-c",
            &cell.concurrency.to_string(),
            "-F",
            path_str(&config)?,
        ]
        .map(String::from)
        .to_vec();
        // A multi-get of the cell's count of keys; its periods count multi-gets, not keys.
        if work.keys_per_request > 1 {
            args.push(format!("--division={}", work.keys_per_request));
        }
        Ok(Tool {
            which: Which::Memaslap,
            cpu,
            commands: vec![args],
            common: Vec::new(),
            requests: 0,
            items_per_request: work.keys_per_request as u64,
            note: format!(
                "{}; {MEMASLAP_DIFFERENCES} (config: {})",
                work.described,
                config_text.replace('\n', " ")
            ),
            statistics: if work.gets {
                GET_STATISTICS
            } else {
                SET_STATISTICS
            },
        })
    }

    /// One short run: every command once (redis-benchmark's hash cell runs two, whose times
    /// per field add up to one call of the cell's).
    pub fn run(&mut self) -> Result<ToolBlock> {
        match self.which {
            Which::RedisBenchmark => self.redis_benchmark_run()?.with_context(|| {
                format!(
                    "redis-benchmark's run of {} requests took under the millisecond its clock \
                     counts in, and it reported no rate",
                    self.requests
                )
            }),
            Which::Memaslap => {
                let stdout = run_tool(
                    "memcaslap",
                    "libmemcached-tools",
                    self.cpu,
                    &self.commands[0],
                )?;
                let tps = parse_memaslap(&stdout, self.statistics)?;
                Ok(ToolBlock {
                    ops: tps * self.items_per_request as f64,
                    seconds: 1.0,
                    latency: None,
                })
            }
        }
    }

    /// Sizes redis-benchmark's runs to about `seconds` of work at the rate of one first run
    /// (never below that first run's size, which is at least a pipeline's depth and a hundred
    /// requests per caller); memaslap's periods are fixed at a second.
    pub fn calibrate(&mut self, seconds: f64) -> Result<()> {
        if self.which == Which::Memaslap {
            return Ok(());
        }
        // A run shorter than redis-benchmark's clock (milliseconds) reports an infinite rate:
        // 500 GETs pipelined 100 deep take about 0.2 ms, and one such rate once sized every
        // later run at 2^64 - 1 requests. Ten times the requests until it reports one.
        let mut tries = 0;
        let first = loop {
            if let Some(run) = self.redis_benchmark_run()? {
                break run;
            }
            tries += 1;
            if tries == 4 {
                bail!(
                    "redis-benchmark reported no rate even for {} requests",
                    self.requests
                );
            }
            self.requests *= 10;
        };
        let requests_per_second = first.ops / self.items_per_request as f64 / first.seconds;
        // Never fewer than the first run's: it counts its time in milliseconds, and a run of a
        // few of them would be mostly rounding.
        self.requests = ((requests_per_second * seconds) as u64).max(self.requests);
        Ok(())
    }

    /// One run of redis-benchmark: every command once, their times added. `None` when a
    /// command's run was too short for its clock (it reports an infinite rate then).
    fn redis_benchmark_run(&mut self) -> Result<Option<ToolBlock>> {
        let mut seconds = 0.0;
        let mut latency = None;
        for command in &self.commands {
            let args = self.args(command);
            let stdout = run_tool("redis-benchmark", "redis-tools", self.cpu, &args)?;
            let (rps, run_latency) = parse_csv(&stdout)?;
            let Some(rps) = rps else { return Ok(None) };
            seconds += self.requests as f64 / rps;
            latency = Some(run_latency);
        }
        Ok(Some(ToolBlock {
            ops: (self.requests * self.items_per_request) as f64,
            seconds,
            latency,
        }))
    }

    /// One run's arguments for `command`: redis-benchmark's options, `-n`, then the command
    /// (anything after the command is the command's); memaslap's as they are.
    fn args(&self, command: &[String]) -> Vec<String> {
        match self.which {
            Which::RedisBenchmark => {
                let n = ["-n".to_string(), self.requests.to_string()];
                [&self.common[..], &n, command].concat()
            }
            Which::Memaslap => command.to_vec(),
        }
    }

    /// How the row was measured, with the exact command lines.
    pub fn describe(&self) -> String {
        let program = match self.which {
            Which::RedisBenchmark => "redis-benchmark",
            Which::Memaslap => "memcaslap",
        };
        let shown: Vec<String> = (self.commands.iter())
            .map(|command| format!("`{}`", command_line(program, self.cpu, &self.args(command))))
            .collect();
        let what = match self.which {
            Which::RedisBenchmark => "redis-benchmark: one short run of its own per round",
            Which::Memaslap => {
                "memaslap: one run of two 1-second periods per round, the second measured"
            }
        };
        match self.note.as_str() {
            "" => format!("{what}; {}", shown.join(" and ")),
            note => format!("{what}; {note}; {}", shown.join(" and ")),
        }
    }
}

/// redis-benchmark's requests in its first (calibrating) run: about a twentieth of a second of
/// work at the speeds seen here. A request that carries a cell's hundred items itself (MGET,
/// HSET, HGETALL of a hundred) counts as a hundred.
fn first_requests(cell: &Cell, items_per_request: u64) -> u64 {
    let requests: u64 = match cell.op {
        op if op.is_pipeline_set() => 100_000,
        _ if items_per_request > 1 && cell.value_size >= 1024 => 100,
        _ if items_per_request > 1 => 500,
        _ if cell.value_size >= 1 << 20 => 100,
        _ if cell.value_size >= 100 << 10 => 500,
        _ => 2_000,
    };
    // A cluster's run makes its SETs first (its key per node), then the GETs the row is of.
    let requests = match cell.backend {
        Backend::RedisCluster => requests * 5,
        _ => requests,
    };
    requests
        .max(cell.pipeline as u64)
        .max(100 * cell.concurrency as u64)
}

/// A baseline's command line as it ran, for its row; a long argument (a value) is shown as its
/// length, and a long list of arguments (a hundred keys) by its first and last ones and how many
/// are left out.
fn command_line(program: &str, cpu: Option<usize>, args: &[String]) -> String {
    let mut words: Vec<String> = match cpu {
        Some(cpu) => vec!["taskset".into(), "-c".into(), cpu.to_string()],
        None => Vec::new(),
    };
    words.push(program.into());
    let shown = |arg: &String| match arg.len() {
        0..=64 => arg.clone(),
        len => format!("<{len} bytes>"),
    };
    const HEAD: usize = 16;
    const TAIL: usize = 2;
    if args.len() > HEAD + TAIL + 1 {
        words.extend(args[..HEAD].iter().map(shown));
        words.push(format!("… {} more arguments …", args.len() - HEAD - TAIL));
        words.extend(args[args.len() - TAIL..].iter().map(shown));
    } else {
        words.extend(args.iter().map(shown));
    }
    words.join(" ")
}

/// Runs a baseline tool (from Debian's `package`) with `args`, pinned to `cpu` (by `taskset`)
/// when the run places its client, and returns what it printed.
fn run_tool(program: &str, package: &str, cpu: Option<usize>, args: &[String]) -> Result<String> {
    let mut command = match cpu {
        Some(cpu) => {
            let mut command = Command::new("taskset");
            command.args(["-c", &cpu.to_string(), program]);
            command
        }
        None => Command::new(program),
    };
    command.args(args);
    let finished = crate::child::run_within(&mut command, TOOL_DEADLINE)
        .with_context(|| format!("running {program} (apt-get install {package})"))?;
    let Some(status) = finished.status else {
        bail!("{program} ran for more than {TOOL_DEADLINE:?} and was stopped");
    };
    let (stdout, stderr) = (finished.stdout, finished.stderr);
    if !status.success() {
        // memcaslap explains itself on standard output, redis-benchmark on standard error.
        bail!("{program} failed: {} {}", stderr.trim(), stdout.trim());
    }
    Ok(stdout)
}

/// The longest a baseline tool's run may take: a run is sized to ~100 ms (memaslap's to a few
/// seconds), so a run past this has hung (memaslap has been seen to keep running with many
/// connections), and the row fails rather than the run stalling.
const TOOL_DEADLINE: Duration = Duration::from_secs(60);

/// Whether memaslap can run `cell`: GET, SET or a multi-get (`get_many`, its `--division`)
/// over TCP (it has no Unix-socket support), with values small enough that its preloaded keys
/// (a window of 1,024 per connection, its minimum) take at most an eighth of the private
/// server's 256 MiB. It has no pipelined GETs.
pub fn memaslap_serves(cell: &Cell) -> bool {
    let preloaded = cell.concurrency * 1024 * (cell.value_size + 64);
    cell.backend == Backend::Memcached
        && cell.transport == Transport::Tcp
        && ops::memaslap(cell).is_some()
        // An eighth of the server's memory: a 100 KiB cell's 105 MB preload left later clients
        // of the cell reading a miss for the value they had just stored.
        && preloaded <= 32 << 20
}

/// How memaslap's work differs from the cell's, for its row.
const MEMASLAP_DIFFERENCES: &str = "16-byte keys (its minimum), 1,024 keys per connection (its \
    smallest window)";

fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))
}

/// memaslap's block of statistics for its `get` command.
pub const GET_STATISTICS: &str = "Get Statistics";
/// memaslap's block of statistics for its `set` command.
pub const SET_STATISTICS: &str = "Set Statistics";

/// The median TPS of memaslap's one-second `Period` lines in its `block` of statistics
/// ([`GET_STATISTICS`] or [`SET_STATISTICS`]), leaving out the first period (preloading).
pub fn parse_memaslap(output: &str, block: &str) -> Result<f64> {
    let mut periods = Vec::new();
    let mut in_block = false;
    for line in output.lines() {
        let line = line.trim_start_matches(|c: char| c == '\x1b' || "[;0123456789HJ".contains(c));
        if line.ends_with("Statistics") {
            in_block = line == block;
        } else if in_block && line.starts_with("Period") {
            // Type Time(s) Ops TPS(ops/s) ...
            let tps: f64 = line
                .split_whitespace()
                .nth(3)
                .and_then(|tps| tps.parse().ok())
                .with_context(|| format!("memaslap period line {line:?}"))?;
            periods.push(tps);
        }
    }
    if periods.len() < 2 {
        bail!(
            "memaslap printed {} {block} periods, want at least 2",
            periods.len()
        );
    }
    kvbench_results::median(&periods[1..]).context("no period")
}

/// Parses `--csv` output: a header, then `"test","rps","avg_latency_ms","min_latency_ms",
/// "p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"`. The rate is `None`
/// for a run shorter than redis-benchmark's clock, for which it prints `"inf"`.
pub fn parse_csv(csv: &str) -> Result<(Option<f64>, Latency)> {
    let line = csv
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty() && !line.starts_with("\"test\""))
        .context("redis-benchmark printed no result line")?;
    let fields: Vec<f64> = line
        .rsplitn(8, ',')
        .take(7)
        .map(|field| field.trim().trim_matches('"').parse::<f64>())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("redis-benchmark result line {line:?}"))?;
    // rsplitn yields from the right: max, p99, p95, p50, min, avg, rps.
    let [_max, p99, _p95, p50, _min, _avg, rps] = fields[..] else {
        bail!("redis-benchmark result line {line:?} has too few fields");
    };
    let ns = |ms: f64| (ms * 1e6).round() as u64;
    // It divides by its run's milliseconds: a run shorter than one prints "inf".
    let rps = (rps.is_finite() && rps > 0.0).then_some(rps);
    Ok((
        rps,
        Latency {
            p50: ns(p50),
            p99: ns(p99),
            p999: None,
        },
    ))
}

/// A server that reads exactly one request's worth of bytes and answers a canned reply, on
/// one connection, pinned to the servers' CPU: the cheapest a round trip can be on this
/// transport, with no parsing, no hashing and no event loop.
pub struct LoopbackFloor {
    /// Where the floor listens.
    pub endpoint: Endpoint,
    thread: Option<JoinHandle<()>>,
}

fn serve(mut stream: impl Read + Write, request_len: usize, reply: &[u8]) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = 0usize;
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => pending += n,
        }
        while pending >= request_len {
            pending -= request_len;
            if stream.write_all(reply).is_err() {
                return;
            }
        }
    }
}

impl LoopbackFloor {
    /// Starts the floor for `w` on `transport`; `dir` holds its Unix socket.
    pub fn start(
        w: &Workload,
        transport: Transport,
        cpu: Option<usize>,
        dir: &Path,
    ) -> Result<LoopbackFloor> {
        // The bytes of a request from the client the floor is measured with (`raw-tcp`/`raw-unix`
        // for Redis, `memcached-text` for memcached), and the reply a real server would send.
        let ops::Exchange { request_len, reply } = ops::floor_exchange(w)?;
        let pin = move || {
            if let Some(cpu) = cpu {
                let _ = kvbench_servers::pin_current_thread(cpu);
            }
        };
        let (endpoint, thread) = match transport {
            Transport::Tcp => {
                let listener = TcpListener::bind("127.0.0.1:0")?;
                let endpoint = Endpoint::Tcp(listener.local_addr()?.to_string());
                let thread = std::thread::spawn(move || {
                    pin();
                    if let Ok((stream, _)) = listener.accept() {
                        let _ = stream.set_nodelay(true);
                        serve(stream, request_len, &reply);
                    }
                });
                (endpoint, thread)
            }
            Transport::Unix => {
                let path = dir.join(format!("floor-{}.sock", std::process::id()));
                let _ = std::fs::remove_file(&path);
                let listener = UnixListener::bind(&path)?;
                let thread = std::thread::spawn(move || {
                    pin();
                    if let Ok((stream, _)) = listener.accept() {
                        serve(stream, request_len, &reply);
                    }
                });
                (Endpoint::Unix(path), thread)
            }
        };
        Ok(LoopbackFloor {
            endpoint,
            thread: Some(thread),
        })
    }

    /// The client the floor is measured with: the first of `specs` that declares the role
    /// ([`ClientSpec::loopback_floor`]) for this backend and transport.
    pub fn client(
        specs: &[ClientSpec],
        backend: Backend,
        transport: Transport,
    ) -> Option<&ClientSpec> {
        specs
            .iter()
            .find(|spec| spec.loopback_floor && spec.backend == backend && spec.supports(transport))
    }

    /// Waits for the server thread, which ends when the client disconnects.
    pub fn join(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Endpoint::Unix(path) = &self.endpoint {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Op;

    #[test]
    fn parses_redis_benchmark_csv() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"GET\",\"82034.45\",\"0.011\",\"0.008\",\"0.011\",\"0.015\",\"0.023\",\"0.311\"\n";
        let (rps, latency) = parse_csv(csv).unwrap();
        assert_eq!(rps, Some(82034.45));
        assert_eq!(
            (latency.p50, latency.p99, latency.p999),
            (11_000, 23_000, None)
        );
    }

    #[test]
    fn parses_a_custom_command_with_commas_in_its_name() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"SET key:__rand_int__ a,b EX 100\",\"1000.00\",\"1.0\",\"0.5\",\"0.9\",\"2.0\",\"3.0\",\"4.0\"\n";
        let (rps, latency) = parse_csv(csv).unwrap();
        assert_eq!(rps, Some(1000.0));
        assert_eq!(latency.p99, 3_000_000);
    }

    #[test]
    fn parses_memaslap_periods_after_the_first() {
        let output = "\x1b[1;1H\x1b[2J\nGet Statistics\nType Time(s) Ops TPS(ops/s) Net\n\
            Period 1 100 100 2.5\nGlobal 1 100 100 2.5\n\nTotal Statistics\n\
            Period 1 999 999 2.5\n\x1b[1;1H\x1b[2J\nGet Statistics\nType\n\
            Period 1 300 300 1.9\nGlobal 2 400 200 2\n\x1b[1;1H\x1b[2J\nGet Statistics\n\
            Period 1 500 500 1.9\nTotal Statistics\nPeriod 1 7 7 1\n";
        assert_eq!(parse_memaslap(output, GET_STATISTICS).unwrap(), 400.0);
        assert!(parse_memaslap(output, SET_STATISTICS).is_err());
        let cell = Cell {
            backend: Backend::Memcached,
            op: Op::Get,
            value_size: 1 << 20,
            pipeline: 1,
            transport: Transport::Tcp,
            concurrency: 1,
            open: false,
        };
        assert!(!memaslap_serves(&cell), "1 MiB values would be evicted");
        assert!(memaslap_serves(&Cell {
            value_size: 3,
            concurrency: 256,
            ..cell
        }));
    }

    #[test]
    fn a_long_command_line_shows_its_ends_and_how_much_is_left_out() {
        let mut args: Vec<String> = ["-h", "127.0.0.1", "-n", "100", "MGET"]
            .map(String::from)
            .to_vec();
        args.extend((0..100).map(|i| format!("many:3:{i}")));
        let shown = command_line("redis-benchmark", Some(1), &args);
        assert!(
            shown.starts_with("taskset -c 1 redis-benchmark -h 127.0.0.1 -n 100 MGET many:3:0 "),
            "{shown}"
        );
        assert!(
            shown.ends_with(" … 87 more arguments … many:3:98 many:3:99"),
            "{shown}"
        );
        let value = "x".repeat(2048);
        assert_eq!(
            command_line("redis-benchmark", None, &["SET".into(), value]),
            "redis-benchmark SET <2048 bytes>"
        );
    }

    #[test]
    fn memaslap_reads_many_keys_in_one_multi_get_only() {
        let cell = Cell {
            backend: Backend::Memcached,
            op: Op::GetMany,
            value_size: 3,
            pipeline: 100,
            transport: Transport::Tcp,
            concurrency: 1,
            open: false,
        };
        assert!(memaslap_serves(&cell));
        let pipelined = Cell {
            op: Op::GetManyPipelined,
            ..cell
        };
        assert!(
            !memaslap_serves(&pipelined),
            "memaslap has no pipelined GETs"
        );
        let transaction = Cell {
            backend: Backend::Redis,
            op: Op::TransactionMulti,
            ..cell
        };
        assert!(ops::redis_benchmark_cannot(transaction.op).is_some());
        assert!(ops::redis_benchmark_cannot(Op::TransactionPipeline).is_none());
    }

    #[test]
    fn a_run_too_short_for_its_clock_has_no_rate() {
        // 500 GETs pipelined 100 deep, as redis-benchmark 7 printed them.
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"GET\",\"inf\",\"0.134\",\"0.040\",\"0.055\",\"0.455\",\"0.455\",\"0.455\"\n";
        let (rps, latency) = parse_csv(csv).unwrap();
        assert_eq!(rps, None);
        assert_eq!(latency.p50, 55_000);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_csv("").is_err());
        assert!(parse_csv("\"GET\",\"fast\"\n").is_err());
    }
}
