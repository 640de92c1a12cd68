//! The network floor: what one round trip to a remote server costs before any client does any
//! work.
//!
//! The loopback floor ([`crate::baselines::LoopbackFloor`]) answers from memory on this machine,
//! so only the transport and the client code remain. A server named by `REDIS_URL` or
//! `MEMCACHED_URL` on another host ([`is_remote`]) is reached over a network that floor knows
//! nothing about: a client there can never be faster than the network's round trip. So for a
//! remote server the run measures that host's own floor instead: the round trip of the smallest
//! command the server answers (Redis `PING` → `+PONG`, memcached `version` → `VERSION …`) over a
//! raw connection, single calls timed one by one after a warm-up. It is measured once at the
//! start of the run for the run's environment ([`measure`]), and again in each one-caller
//! request/response cell of that server, as the cell's `network-floor` row ([`row`]), where the
//! loopback floor's row would otherwise be.
//!
//! The bytes go through the hand-written codecs: `kvbench-resp` encodes `PING` and reads its
//! status reply; `kvbench-memcached-reply` frames memcached's reply line. Every connect, read,
//! write and whole reply is bounded by a timeout: a silent host fails the measurement with
//! [`Error::Timeout`], it never hangs the run.

use std::io::{self, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kvbench_core::{Backend, Endpoint, Error, Options, ReadBuffer, Result, Stream};
use kvbench_servers::Servers;

use crate::matrix::{Cell, Mode};

/// Name of the network floor rows.
pub const NETWORK_FLOOR: &str = kvbench_results::NETWORK_FLOOR;

/// Test hook: `KVBENCH_TREAT_AS_REMOTE=1` treats every external server (`REDIS_URL`,
/// `MEMCACHED_URL`) as remote, whatever its host, so the remote path can be exercised against
/// servers on this machine. No effect on private servers.
pub const TREAT_AS_REMOTE_VAR: &str = "KVBENCH_TREAT_AS_REMOTE";

/// Whether `endpoint` is on another host: a TCP endpoint whose host is neither `localhost` nor
/// resolves only to loopback addresses (127.0.0.0/8, `::1`, or the IPv4-mapped form of those).
/// A Unix socket is always on this machine. A name that resolves to several addresses is remote
/// if any of them is: a connection may land on that one. The unspecified address (`0.0.0.0`,
/// `::`) counts as this machine, which is where Linux sends a connection to it.
///
/// Resolving a name can fail (`io::Error`): the caller decides what that means.
pub fn is_remote(endpoint: &Endpoint) -> io::Result<bool> {
    let Endpoint::Tcp(addr) = endpoint else {
        return Ok(false);
    };
    let host = addr
        .rsplit_once(':')
        .map_or(addr.as_str(), |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // `localhost` is loopback by definition (RFC 6761), whatever a resolver says.
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return Ok(false);
    }
    let mut addresses = addr.to_socket_addrs()?.peekable();
    if addresses.peek().is_none() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{addr} resolves to no address"),
        ));
    }
    Ok(addresses.any(|address| !is_this_machine(address.ip())))
}

/// Loopback (v4, v6, or v4 mapped into v6) or unspecified.
fn is_this_machine(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    ip.is_loopback() || ip.is_unspecified()
}

/// Whether [`TREAT_AS_REMOTE_VAR`] is set to `1` in the environment.
pub fn treat_as_remote_from_env() -> bool {
    std::env::var_os(TREAT_AS_REMOTE_VAR).is_some_and(|value| value == "1")
}

/// The backends of `servers` that are remote: external ones whose endpoint [`is_remote`] (every
/// external one with `treat_as_remote`). A private server is never remote.
pub fn remote_backends(servers: &Servers, treat_as_remote: bool) -> anyhow::Result<Vec<Backend>> {
    let mut remote = Vec::new();
    for backend in [Backend::Redis, Backend::Memcached] {
        if !servers.is_external(backend) {
            continue;
        }
        for endpoint in &servers.info(backend).endpoints {
            let far = treat_as_remote
                || is_remote(endpoint).map_err(|err| {
                    anyhow::anyhow!("resolving the external {backend} server {endpoint}: {err}")
                })?;
            if far && !remote.contains(&backend) {
                remote.push(backend);
            }
        }
    }
    Ok(remote)
}

/// Whether a cell of a remote server gets a network floor row: the cells whose one caller makes
/// one request and waits for its reply (the loopback floor's GET and SET cells, INCR too). A
/// floor of many items or many callers would be a different measurement.
pub fn serves(cell: &Cell) -> bool {
    cell.is_request_response() && cell.concurrency == 1
}

/// A raw connection that sends the smallest command its server answers, one at a time.
pub struct Pinger {
    backend: Backend,
    stream: Stream,
    read_buf: ReadBuffer,
    request: Vec<u8>,
    address: String,
}

/// Longer than memcached's longest reply line ([`kvbench_memcached_reply::MAX_LINE_LEN`]), as
/// [`ReadBuffer`] requires; `+PONG\r\n` and `VERSION 1.6.21\r\n` need a few bytes.
const READ_BUFFER_LEN: usize = 4 * 1024;

impl Pinger {
    /// Connects to `backend` at `endpoint`, with `options`' timeouts on the connect, on each read
    /// and write, and on each whole reply.
    pub fn connect(backend: Backend, endpoint: &Endpoint, options: &Options) -> Result<Pinger> {
        // TCP_NODELAY: one small request per round trip, which Nagle's algorithm would delay.
        let stream = Stream::connect(endpoint, options)?;
        let address = match &stream {
            // The address the name resolved to: the report says which host answered.
            Stream::Tcp(tcp) => tcp
                .peer_addr()
                .map_err(|source| Error::Connect {
                    endpoint: endpoint.to_string(),
                    source,
                })?
                .to_string(),
            Stream::Unix(_) => endpoint.to_string(),
        };
        let mut read_buf = ReadBuffer::new(READ_BUFFER_LEN);
        read_buf.set_reply_timeout(Some(options.read_timeout));
        let mut request = Vec::new();
        match backend {
            Backend::Redis | Backend::RedisCluster => {
                kvbench_resp::encode_command(&mut request, &[b"PING"])
            }
            Backend::Memcached => request.extend_from_slice(b"version\r\n"),
        }
        Ok(Pinger {
            backend,
            stream,
            read_buf,
            request,
            address,
        })
    }

    /// The command it sends, for people: `PING` or `version`.
    pub fn command(&self) -> &'static str {
        match self.backend {
            Backend::Redis | Backend::RedisCluster => "PING",
            Backend::Memcached => "version",
        }
    }

    /// Where it is connected: the resolved `ip:port`, or the socket's path.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// One round trip: the command written, its whole reply read and checked.
    pub fn round_trip(&mut self) -> Result<()> {
        self.stream.write_all(&self.request)?;
        match self.backend {
            Backend::Redis | Backend::RedisCluster => {
                kvbench_resp::blocking::read_status(&mut self.read_buf, &mut self.stream, "PONG")
            }
            Backend::Memcached => self.read_version(),
        }
    }

    /// Reads memcached's `VERSION <version>\r\n`. The expected line is recognised as bytes, as
    /// `kvbench-resp` recognises `+PONG`: nothing parsed, nothing allocated. Anything else (a
    /// line cut by the end of a read, an error, a bare LF, no line end within `MAX_LINE_LEN`)
    /// goes through the reply reader, which frames it and says what is wrong; it knows only the
    /// replies to data commands, so a `VERSION` line it is given is a reply it cannot name.
    fn read_version(&mut self) -> Result<()> {
        self.read_buf.start_reply();
        loop {
            if let Some(len) = version_line_len(self.read_buf.pending()) {
                self.read_buf.consume(len);
                return Ok(());
            }
            match kvbench_memcached_reply::parse_line(self.read_buf.pending()) {
                Ok(None) => self.read_buf.fill(&mut self.stream)?,
                Err(err) => return Err(err.into()),
                Ok(Some((reply, _))) => {
                    return Err(Error::Protocol(format!(
                        "version answered {reply:?}, not VERSION"
                    )));
                }
            }
        }
    }

    /// `n` round trips, each timed on its own and reported to `each`.
    pub fn timed(&mut self, n: u64, each: &mut dyn FnMut(Duration)) -> Result<()> {
        for _ in 0..n {
            let started = Instant::now();
            self.round_trip()?;
            each(started.elapsed());
        }
        Ok(())
    }

    /// `warm_up` untimed round trips; returns how long one took on average (zero for none), for
    /// [`Budget::calls`].
    pub fn warm_up(&mut self, warm_up: u64) -> Result<Duration> {
        let started = Instant::now();
        for _ in 0..warm_up {
            self.round_trip()?;
        }
        Ok(started.elapsed() / warm_up.max(1) as u32)
    }
}

/// The length of the `VERSION <version>\r\n` line at the start of `pending`, CRLF included, if
/// it is there whole (within `MAX_LINE_LEN`, CR before LF).
fn version_line_len(pending: &[u8]) -> Option<usize> {
    let searched = &pending[..pending.len().min(kvbench_memcached_reply::MAX_LINE_LEN)];
    let lf = searched.iter().position(|&byte| byte == b'\n')?;
    let line = searched[..lf].strip_suffix(b"\r")?;
    line.starts_with(b"VERSION ").then_some(lf + 1)
}

/// How many round trips a measurement makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Untimed calls first (the connection's first round trips, a cold route or ARP entry).
    pub warm_up: u64,
    /// The most calls timed.
    pub calls: u64,
    /// About how long the timed calls may take, at the warm-up's speed: a host 50 ms away gets
    /// fewer calls than one 50 µs away, never fewer than [`Budget::MIN_CALLS`].
    pub time: Duration,
}

impl Budget {
    /// The fewest calls timed: a 99th percentile of fewer is one call's time.
    pub const MIN_CALLS: u64 = 100;

    /// The measurement for the run's environment, once per remote server.
    pub fn environment(mode: Mode) -> Budget {
        match mode {
            Mode::Full => Budget {
                warm_up: 200,
                calls: 10_000,
                time: Duration::from_secs(5),
            },
            Mode::Quick => Budget {
                warm_up: 50,
                calls: 2_000,
                time: Duration::from_millis(500),
            },
            Mode::Test => Budget {
                warm_up: 10,
                calls: Self::MIN_CALLS,
                time: Duration::ZERO,
            },
        }
    }

    /// The warm-up of a cell's network floor contender, and the calls of a short measurement
    /// (a test's).
    pub fn row(mode: Mode) -> Budget {
        let seconds = mode.policy().cost_pass_seconds;
        Budget {
            warm_up: Budget::environment(mode).warm_up / 2,
            calls: match mode {
                Mode::Full => 5_000,
                Mode::Quick => 1_000,
                Mode::Test => Self::MIN_CALLS,
            },
            time: Duration::from_secs_f64(seconds),
        }
    }

    /// Calls to time when one took `per_call` in the warm-up.
    pub fn calls(&self, per_call: Duration) -> u64 {
        let fits = self.time.as_secs_f64() / per_call.as_secs_f64().max(1e-9);
        (fits as u64).clamp(Self::MIN_CALLS, self.calls.max(Self::MIN_CALLS))
    }
}

/// Measures the network floor of `backend` at `endpoint` for the run's environment: a fresh raw
/// connection, the budget's warm-up, then single round trips timed one by one into an
/// HdrHistogram.
pub fn measure(
    backend: Backend,
    endpoint: &Endpoint,
    budget: Budget,
    options: &Options,
) -> Result<kvbench_results::NetworkFloor> {
    let mut pinger = Pinger::connect(backend, endpoint, options)?;
    let per_call = pinger.warm_up(budget.warm_up)?;
    let calls = budget.calls(per_call);
    let mut histogram = new_histogram();
    pinger.timed(calls, &mut |took| {
        let _ = histogram.record(nanos(took));
    })?;
    Ok(kvbench_results::NetworkFloor {
        address: pinger.address().to_string(),
        command: pinger.command().to_string(),
        warm_up: budget.warm_up,
        calls,
        median_ns: histogram.value_at_quantile(0.5),
        p99_ns: histogram.value_at_quantile(0.99),
    })
}

/// 3 significant digits from 1 ns to 60 s, as the cost pass's.
fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

fn nanos(took: Duration) -> u64 {
    u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// The network floor's words for the run's notes and the progress line: `redis at
/// 192.0.2.7:6379: PING round trip median 412 µs, p99 1.2 ms (10000 calls)`.
pub fn describe(backend: Backend, floor: &kvbench_results::NetworkFloor) -> String {
    format!(
        "{backend} at {}: {} round trip median {:.1} µs, p99 {:.1} µs ({} calls after {} untimed)",
        floor.address,
        floor.command,
        floor.median_ns as f64 / 1e3,
        floor.p99_ns as f64 / 1e3,
        floor.calls,
        floor.warm_up
    )
}

/// Marks the remote servers of `run` as such and measures each one's network floor for its
/// environment record; a floor that cannot be measured is left out, with the reason in the run's
/// notes (the cells of that server will meet the same problem and say so).
pub fn record(run: &mut kvbench_results::Run, servers: &Servers, remote: &[Backend], mode: Mode) {
    for &backend in remote {
        let record = match backend {
            Backend::Redis => &mut run.servers.redis,
            Backend::Memcached => &mut run.servers.memcached,
            // Not among `remote_backends`: a cluster's cells have no floor row.
            Backend::RedisCluster => continue,
        };
        record.remote = true;
        let Some(endpoint) = servers.info(backend).endpoints.first() else {
            continue;
        };
        match measure(
            backend,
            endpoint,
            Budget::environment(mode),
            &Options::default(),
        ) {
            Ok(floor) => {
                eprintln!("kvbench: network floor of {}", describe(backend, &floor));
                record.network_floor = Some(floor);
            }
            Err(err) => run.notes.push(format!(
                "the network floor of the remote {backend} server could not be measured: {err}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(addr: &str) -> Endpoint {
        Endpoint::Tcp(addr.to_string())
    }

    #[test]
    fn loopback_hosts_and_unix_sockets_are_this_machine() {
        for addr in [
            "127.0.0.1:6379",
            "127.8.9.10:6379",
            "[::1]:6379",
            "[::ffff:127.0.0.1]:6379",
            "localhost:6379",
            "LOCALHOST.:11211",
            "cache.localhost:11211",
            "0.0.0.0:6379",
        ] {
            assert!(!is_remote(&tcp(addr)).unwrap(), "{addr} is this machine");
        }
        assert!(!is_remote(&Endpoint::Unix("/tmp/redis.sock".into())).unwrap());
    }

    #[test]
    fn any_other_address_is_remote() {
        // Literals, so nothing is looked up: documentation addresses (RFC 5737, RFC 3849) and a
        // private one (a host on the same LAN is still another host).
        for addr in ["192.0.2.7:6379", "10.0.0.1:11211", "[2001:db8::7]:6379"] {
            assert!(is_remote(&tcp(addr)).unwrap(), "{addr} is remote");
        }
    }

    #[test]
    fn a_name_that_does_not_resolve_is_an_error_not_a_guess() {
        // `.invalid` never resolves (RFC 6761).
        assert!(is_remote(&tcp("no-such-host.invalid:6379")).is_err());
    }

    #[test]
    fn a_version_line_is_recognised_only_whole() {
        assert_eq!(version_line_len(b"VERSION 1.6.21\r\n"), Some(16));
        assert_eq!(version_line_len(b"VERSION 1.6.21\r\nVERSION"), Some(16));
        for not_yet_or_not_it in [
            &b"VERSION 1.6"[..],
            b"VERSION 1.6.21\n",
            b"ERROR\r\n",
            b"VERSIONS\r\n",
            b"",
        ] {
            assert_eq!(version_line_len(not_yet_or_not_it), None);
        }
    }

    #[test]
    fn the_budget_fits_slow_hosts_but_keeps_enough_calls_for_a_p99() {
        let budget = Budget::environment(Mode::Full);
        assert_eq!(budget.calls(Duration::from_micros(10)), 10_000);
        assert_eq!(budget.calls(Duration::from_millis(1)), 5_000);
        assert_eq!(budget.calls(Duration::from_millis(200)), Budget::MIN_CALLS);
        assert_eq!(
            Budget::row(Mode::Test).calls(Duration::ZERO),
            Budget::MIN_CALLS
        );
    }
}
