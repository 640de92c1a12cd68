//! Bytes on the wire per operation, counted by the server itself: what the client read is what
//! the server wrote, and what the client wrote is what the server read.
//!
//! Redis counts both in `INFO stats` (`total_net_output_bytes`, `total_net_input_bytes`),
//! memcached in `stats` (`bytes_written`, `bytes_read`). A [`WireMeter`] reads them over a
//! connection of its own just before and just after the measured calls; the difference is the
//! calls' traffic plus the meter's own, which it knows to the byte and subtracts:
//!
//! - a server takes its numbers after reading a stats request and before writing the reply, so
//!   between two readings it has counted the first reading's **reply** and the second's
//!   **request**, and nothing else of the meter's;
//! - each request and each reply is exactly what this side wrote and read, so both are known.
//!
//! Redis runs every command on one thread, which counts a reply's bytes before it reads the next
//! command: the closing reading sees all of the calls' bytes. memcached's worker threads each
//! count their own, just after each send returns, and a client that has its last reply can ask
//! for the stats before the thread that sent it has counted it. Seen here in most tries: the last
//! 128 bytes of `STORED` lines, or the 4 of an `MN`, counted after the closing reading (on a
//! shared CPU the sending thread is preempted by the client it woke). The same can happen at the
//! opening reading, to the last reply before the measured calls: it would be counted inside them
//! (seen too: an `MN` too many over a Unix socket). So each reading the meter uses is *settled*:
//! the meter passes a barrier through every worker thread, opening as many connections as the
//! server has threads (memcached deals new connections out to its threads in turn), and reads
//! again until the server's `total_connections` says each was taken in, which a thread does only
//! between two events, after the counting of the one before. The barrier's connections send
//! nothing: they add no bytes.
//!
//! The counters are the whole server's, every connection's. They measure one client only when
//! nothing else talks to the server meanwhile: the bench's private servers, where the reference
//! connection is idle during a cost pass. An external server is shared, so its rows get none.
//!
//! The exchange is a raw request and a bounded reply, like `kvbench-servers`' probes: Redis's
//! reply is framed by the hand-written RESP codec (`kvbench_resp::decode`), memcached's is the
//! `STAT <name> <value>` lines up to `END`. Every read and write has a timeout, and so has a whole
//! reply.

use std::fmt;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use kvbench_core::{Backend, Endpoint, Options, Stream};

/// Largest stats reply accepted: Redis's `INFO stats` is about 1.5 KiB, memcached's `stats`
/// about 3 KiB; anything far bigger is not the server we think it is.
pub const MAX_REPLY: usize = 64 * 1024;

/// How long to wait between readings for the barrier's connections to be taken in.
const BARRIER_POLL: Duration = Duration::from_micros(200);

/// `INFO stats`, multi-bulk: read-only, and the section that holds the byte counters.
const REDIS_REQUEST: &[u8] = b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n";
/// memcached's general-purpose statistics.
const MEMCACHED_REQUEST: &[u8] = b"stats\r\n";

/// Why the server's byte counters could not be read.
#[derive(Debug)]
pub enum StatsError {
    /// The meter could not connect.
    Connect(kvbench_core::Error),
    /// A read or write failed.
    Io(io::Error),
    /// No complete reply within the timeout.
    Timeout(Duration),
    /// The server closed the connection before the reply was complete.
    Closed,
    /// The reply grew past [`MAX_REPLY`] bytes without ending.
    TooLong,
    /// The server answered with an error (a managed server may refuse `INFO`).
    Refused(String),
    /// The reply is not the stats reply (or holds bytes after it).
    Malformed(String),
    /// The reply lacks a counter.
    Missing(&'static str),
    /// A counter went backwards between two readings: the server restarted in between.
    Backwards,
    /// The worker threads did not take in the barrier's connections within the timeout.
    Barrier(Duration),
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::Connect(err) => write!(f, "{err}"),
            StatsError::Io(err) => write!(f, "stats exchange: {err}"),
            StatsError::Timeout(limit) => write!(f, "no complete stats reply within {limit:?}"),
            StatsError::Closed => f.write_str("the server closed the stats connection"),
            StatsError::TooLong => write!(f, "stats reply longer than {MAX_REPLY} bytes"),
            StatsError::Refused(text) => write!(f, "stats refused: {text}"),
            StatsError::Malformed(why) => write!(f, "malformed stats reply: {why}"),
            StatsError::Missing(name) => write!(f, "stats reply without `{name}`"),
            StatsError::Backwards => {
                f.write_str("byte counters went backwards (the server restarted?)")
            }
            StatsError::Barrier(limit) => write!(
                f,
                "the server's threads did not take in the meter's connections within {limit:?}"
            ),
        }
    }
}

impl std::error::Error for StatsError {}

/// A server's byte counters, as the server names them: what it read and what it wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerBytes {
    /// Bytes the server read (Redis `total_net_input_bytes`, memcached `bytes_read`).
    pub read: u64,
    /// Bytes the server wrote (Redis `total_net_output_bytes`, memcached `bytes_written`).
    pub written: u64,
}

impl ServerBytes {
    /// What moved from `earlier` to `self`; an error if either counter went back.
    fn since(self, earlier: ServerBytes) -> Result<ServerBytes, StatsError> {
        Ok(ServerBytes {
            read: (self.read.checked_sub(earlier.read)).ok_or(StatsError::Backwards)?,
            written: (self.written.checked_sub(earlier.written)).ok_or(StatsError::Backwards)?,
        })
    }
}

/// One stats reply: the byte counters, and what the barrier needs (see the module's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// The byte counters.
    pub bytes: ServerBytes,
    /// Connections the server has taken in since it started (Redis
    /// `total_connections_received`, memcached `total_connections`).
    pub connections: u64,
    /// Threads that send replies and count their bytes each: memcached's `threads`; 1 for Redis,
    /// which writes and counts on the thread that runs the commands.
    pub threads: u64,
}

/// What a client exchanged with the server, from the client's side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes the client read: the server's output.
    pub read: u64,
    /// Bytes the client wrote: the server's input.
    pub written: u64,
}

impl Traffic {
    /// (read, written) per operation, over `ops` operations.
    pub fn per_op(self, ops: u64) -> (f64, f64) {
        let ops = ops.max(1) as f64;
        (self.read as f64 / ops, self.written as f64 / ops)
    }
}

/// `total_net_input_bytes`, `total_net_output_bytes` and `total_connections_received` of an
/// `INFO` text (`name:value` lines).
pub fn parse_redis_info(text: &str) -> Result<Counters, StatsError> {
    let field = |name: &'static str| {
        let value = text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .ok_or(StatsError::Missing(name))?;
        (value.trim().parse::<u64>()).map_err(|_| StatsError::Malformed(format!("{name}:{value}")))
    };
    Ok(Counters {
        bytes: ServerBytes {
            read: field("total_net_input_bytes")?,
            written: field("total_net_output_bytes")?,
        },
        connections: field("total_connections_received")?,
        threads: 1,
    })
}

/// `bytes_read`, `bytes_written`, `total_connections` and `threads` of a memcached `stats` text
/// (`STAT <name> <value>` lines).
pub fn parse_memcached_stats(text: &str) -> Result<Counters, StatsError> {
    let field = |name: &'static str| {
        let value = text
            .lines()
            .find_map(|line| {
                line.strip_prefix("STAT ")?
                    .strip_prefix(name)?
                    .strip_prefix(' ')
            })
            .ok_or(StatsError::Missing(name))?;
        (value.trim().parse::<u64>())
            .map_err(|_| StatsError::Malformed(format!("STAT {name} {value}")))
    };
    Ok(Counters {
        bytes: ServerBytes {
            read: field("bytes_read")?,
            written: field("bytes_written")?,
        },
        connections: field("total_connections")?,
        threads: field("threads")?,
    })
}

/// The length of the complete memcached `stats` reply at the start of `buf` (`Ok(None)`: not
/// yet), checked line by line: `STAT` lines, then `END`. An error line is a refusal.
fn memcached_reply_len(buf: &[u8]) -> Result<Option<usize>, StatsError> {
    let mut start = 0;
    while let Some(end) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + end + 1];
        let text = String::from_utf8_lossy(line);
        let Some(text) = text.strip_suffix("\r\n") else {
            return Err(StatsError::Malformed("a line without CRLF".into()));
        };
        if text == "END" {
            return Ok(Some(start + line.len()));
        }
        if text == "ERROR" || text.starts_with("CLIENT_ERROR") || text.starts_with("SERVER_ERROR") {
            return Err(StatsError::Refused(text.to_string()));
        }
        if !text.starts_with("STAT ") {
            return Err(StatsError::Malformed(format!("line {text:?}")));
        }
        start += line.len();
    }
    Ok(None)
}

/// The length and text of the complete `INFO` reply at the start of `buf` (`Ok(None)`: not yet).
fn redis_reply(buf: &[u8]) -> Result<Option<(usize, String)>, StatsError> {
    let decoded =
        kvbench_resp::decode(buf).map_err(|err| StatsError::Malformed(err.to_string()))?;
    match decoded {
        None => Ok(None),
        Some((kvbench_resp::Reply::Bulk(Some(text)), len)) => {
            Ok(Some((len, String::from_utf8_lossy(&text).into_owned())))
        }
        Some((kvbench_resp::Reply::Error(text), _)) => Err(StatsError::Refused(
            String::from_utf8_lossy(&text).into_owned(),
        )),
        Some((other, _)) => Err(StatsError::Malformed(format!("{other:?}"))),
    }
}

/// A connection that reads a server's byte counters.
pub struct StatsConnection {
    backend: Backend,
    endpoint: Endpoint,
    stream: Stream,
    timeout: Duration,
    buf: Vec<u8>,
    /// The connection's own bytes the server has counted as of the latest reading: every
    /// request so far, and every reply but the latest (counted after it).
    own: ServerBytes,
    /// The latest reply's bytes.
    last_reply: u64,
}

impl StatsConnection {
    /// Connects to `backend` at `endpoint`; each read and write, and each whole reply, times out
    /// after `timeout`.
    pub fn connect(
        backend: Backend,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<StatsConnection, StatsError> {
        Ok(StatsConnection {
            backend,
            endpoint: endpoint.clone(),
            stream: open(endpoint, timeout)?,
            timeout,
            buf: Vec::with_capacity(8 * 1024),
            own: ServerBytes::default(),
            last_reply: 0,
        })
    }

    /// The server's counters now, as far as its threads have counted.
    pub fn counters(&mut self) -> Result<Counters, StatsError> {
        let request = match self.backend {
            Backend::Redis | Backend::RedisCluster => REDIS_REQUEST,
            Backend::Memcached => MEMCACHED_REQUEST,
        };
        let (counters, reply) = self.exchange(request)?;
        self.own.read += request.len() as u64;
        self.own.written += self.last_reply;
        self.last_reply = reply;
        Ok(counters)
    }

    /// The server's counters once every thread has counted what it sent before this call: a
    /// reading, then on a server of many threads the barrier (see the module's docs).
    pub fn settled_counters(&mut self) -> Result<Counters, StatsError> {
        let mut counters = self.counters()?;
        if counters.threads > 1 {
            let want = counters.connections + counters.threads;
            let deadline = Instant::now() + self.timeout;
            let _barrier = (0..counters.threads)
                .map(|_| open(&self.endpoint, self.timeout))
                .collect::<Result<Vec<_>, _>>()?;
            while counters.connections < want {
                if Instant::now() >= deadline {
                    return Err(StatsError::Barrier(self.timeout));
                }
                std::thread::sleep(BARRIER_POLL);
                counters = self.counters()?;
            }
        }
        Ok(counters)
    }

    /// Sends `request` and reads the stats reply: the counters, and the reply's length.
    fn exchange(&mut self, request: &[u8]) -> Result<(Counters, u64), StatsError> {
        self.stream
            .write_all(request)
            .map_err(|err| self.io_error(err))?;
        let deadline = Instant::now() + self.timeout;
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        loop {
            let complete = match self.backend {
                Backend::Redis | Backend::RedisCluster => redis_reply(&self.buf)?
                    .map(|(len, text)| parse_redis_info(&text).map(|counters| (len, counters)))
                    .transpose()?,
                Backend::Memcached => memcached_reply_len(&self.buf)?
                    .map(|len| {
                        parse_memcached_stats(&String::from_utf8_lossy(&self.buf[..len]))
                            .map(|counters| (len, counters))
                    })
                    .transpose()?,
            };
            if let Some((len, counters)) = complete {
                if len != self.buf.len() {
                    return Err(StatsError::Malformed("bytes after the reply".into()));
                }
                return Ok((counters, len as u64));
            }
            if self.buf.len() > MAX_REPLY {
                return Err(StatsError::TooLong);
            }
            if Instant::now() >= deadline {
                return Err(StatsError::Timeout(self.timeout));
            }
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|err| self.io_error(err))?;
            if n == 0 {
                return Err(StatsError::Closed);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn io_error(&self, err: io::Error) -> StatsError {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                StatsError::Timeout(self.timeout)
            }
            _ => StatsError::Io(err),
        }
    }
}

/// A connection to `endpoint` with `timeout` on connecting, each read and each write.
fn open(endpoint: &Endpoint, timeout: Duration) -> Result<Stream, StatsError> {
    Stream::connect(endpoint, &Options::with_timeout(timeout)).map_err(StatsError::Connect)
}

/// The traffic of whatever runs between [`WireMeter::start`] and [`WireMeter::finish`], from the
/// server's counters less the meter's own exchanges (see the module's docs).
pub struct WireMeter {
    /// One reading per server: a cluster's traffic is the sum of its nodes'.
    servers: Vec<ServerMeter>,
}

/// The readings of one server.
struct ServerMeter {
    conn: StatsConnection,
    /// The settled counters at the start.
    opening: Counters,
    /// The meter's own bytes counted in them.
    own: ServerBytes,
}

impl WireMeter {
    /// Connects to each of `endpoints` (one server, or every node of a cluster) and takes the
    /// opening readings, once every thread of each server has counted what it sent before (what
    /// a client did just before must not fall into the window).
    pub fn start(
        backend: Backend,
        endpoints: &[Endpoint],
        timeout: Duration,
    ) -> Result<WireMeter, StatsError> {
        let servers = (endpoints.iter())
            .map(|endpoint| {
                let mut conn = StatsConnection::connect(backend, endpoint, timeout)?;
                let opening = conn.settled_counters()?;
                let own = conn.own;
                Ok(ServerMeter { conn, opening, own })
            })
            .collect::<Result<_, StatsError>>()?;
        Ok(WireMeter { servers })
    }

    /// Takes the closing readings, once every thread of each server has counted what it sent,
    /// and returns the traffic since the opening ones, the meter's own exchanges subtracted.
    pub fn finish(self) -> Result<Traffic, StatsError> {
        let mut traffic = Traffic::default();
        for mut server in self.servers {
            let closing = server.conn.settled_counters()?;
            let total = closing.bytes.since(server.opening.bytes)?;
            let own = server.conn.own.since(server.own)?;
            traffic.read += total.written.saturating_sub(own.written);
            traffic.written += total.read.saturating_sub(own.read);
        }
        Ok(traffic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_info_gives_the_net_byte_counters() {
        let text = "# Stats\r\ntotal_connections_received:3\r\ntotal_net_input_bytes:1234\r\n\
                    total_net_output_bytes:56789\r\ntotal_net_repl_input_bytes:0\r\n";
        assert_eq!(
            parse_redis_info(text).unwrap(),
            Counters {
                bytes: ServerBytes {
                    read: 1234,
                    written: 56789
                },
                connections: 3,
                threads: 1
            }
        );
        // `total_net_repl_input_bytes` must not be taken for `total_net_input_bytes`.
        let only_repl = "total_net_repl_input_bytes:7\r\ntotal_net_output_bytes:1\r\n";
        assert!(matches!(
            parse_redis_info(only_repl),
            Err(StatsError::Missing("total_net_input_bytes"))
        ));
        assert!(matches!(
            parse_redis_info("total_net_input_bytes:x\r\ntotal_net_output_bytes:1\r\n"),
            Err(StatsError::Malformed(_))
        ));
    }

    #[test]
    fn memcached_stats_give_bytes_read_and_written() {
        let reply = b"STAT pid 42\r\nSTAT total_connections 9\r\nSTAT bytes_read 700\r\n\
                      STAT bytes_written 9000\r\nSTAT threads 4\r\nSTAT bytes 12\r\nEND\r\n";
        let len = memcached_reply_len(reply).unwrap().unwrap();
        assert_eq!(len, reply.len());
        let text = String::from_utf8_lossy(reply);
        assert_eq!(
            parse_memcached_stats(&text).unwrap(),
            Counters {
                bytes: ServerBytes {
                    read: 700,
                    written: 9000
                },
                connections: 9,
                threads: 4
            }
        );
        // `STAT bytes` is a prefix of both names, and a different number.
        assert!(matches!(
            parse_memcached_stats("STAT bytes 12\r\nEND\r\n"),
            Err(StatsError::Missing("bytes_read"))
        ));
    }

    #[test]
    fn a_memcached_reply_is_complete_only_at_its_end_line() {
        assert_eq!(memcached_reply_len(b"").unwrap(), None);
        assert_eq!(memcached_reply_len(b"STAT pid 42\r\nEN").unwrap(), None);
        assert!(matches!(
            memcached_reply_len(b"ERROR\r\n"),
            Err(StatsError::Refused(_))
        ));
        assert!(matches!(
            memcached_reply_len(b"VALUE k 0 1\r\n"),
            Err(StatsError::Malformed(_))
        ));
        assert!(matches!(
            memcached_reply_len(b"STAT pid 42\n"),
            Err(StatsError::Malformed(_))
        ));
    }

    #[test]
    fn a_redis_reply_is_a_bulk_string_or_a_refusal() {
        assert_eq!(redis_reply(b"$5\r\nab").unwrap(), None);
        let (len, text) = redis_reply(b"$5\r\nabcde\r\n").unwrap().unwrap();
        assert_eq!((len, text.as_str()), (11, "abcde"));
        assert!(matches!(
            redis_reply(b"-NOPERM no INFO for you\r\n"),
            Err(StatsError::Refused(text)) if text.contains("NOPERM")
        ));
        assert!(matches!(
            redis_reply(b":1\r\n"),
            Err(StatsError::Malformed(_))
        ));
    }

    #[test]
    fn traffic_per_op_divides_both_ways() {
        let traffic = Traffic {
            read: 80,
            written: 300,
        };
        assert_eq!(traffic.per_op(10), (8.0, 30.0));
        assert_eq!(traffic.per_op(0), (80.0, 300.0));
    }
}
