//! Where a client connects and how long it may wait: the server and transport
//! ([`Backend`], [`Transport`], [`Endpoint`]), the [`Options`] every client honours and their
//! timeout rules, the per-reply [`ReplyDeadline`], and the socket set-up every hand-written client
//! shares ([`connect_tcp_stream`], [`connect_unix_stream`]).

use std::fmt;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// The server a client speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Redis, over RESP (or the inline command form).
    Redis,
    /// memcached, over its text or binary protocol.
    Memcached,
    /// Redis Cluster: several Redis primaries sharing the 16,384 hash slots, reached through a
    /// seed node. Same protocol as [`Backend::Redis`]; a client must route each key to its node.
    RedisCluster,
}

impl Backend {
    /// Lower-case name used in test names, benchmark groups and results files.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Redis => "redis",
            Backend::Memcached => "memcached",
            Backend::RedisCluster => "redis-cluster",
        }
    }

    /// True for the backends that speak Redis's protocol (RESP): Redis and Redis Cluster.
    pub fn is_redis(self) -> bool {
        matches!(self, Backend::Redis | Backend::RedisCluster)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the bytes travel between client and server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// TCP over loopback (`127.0.0.1`) or any other address.
    Tcp,
    /// A Unix domain stream socket.
    Unix,
}

impl Transport {
    /// Both transports, in the order reports list them.
    pub const ALL: &'static [Transport] = &[Transport::Tcp, Transport::Unix];

    /// Lower-case name used in test names, benchmark groups and results files.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Unix => "unix",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where to connect: a TCP address or a Unix socket path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `host:port`, for example `127.0.0.1:6379`.
    Tcp(String),
    /// Path of a Unix domain socket, for example `/tmp/x/redis.sock`.
    Unix(PathBuf),
}

impl Endpoint {
    /// The transport this endpoint implies.
    pub fn transport(&self) -> Transport {
        match self {
            Endpoint::Tcp(_) => Transport::Tcp,
            Endpoint::Unix(_) => Transport::Unix,
        }
    }

    /// The URL Redis client libraries take for it: `redis://host:port/` or `redis+unix:///path`.
    pub fn redis_url(&self) -> String {
        match self {
            Endpoint::Tcp(addr) => format!("redis://{addr}/"),
            Endpoint::Unix(path) => format!("redis+unix://{}", path.display()),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(addr) => write!(f, "tcp://{addr}"),
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

/// Connection settings every client honours.
///
/// # Timeouts
///
/// Timeouts exist so that no client can hang on a dead or dripping server. The rules every
/// client follows (each crate's docs link here and say only what it does differently):
///
/// - [`connect_timeout`](Options::connect_timeout) bounds a TCP connect. A Unix connect has
///   none: `std` offers no `UnixStream::connect_timeout`, and a local connect fails at once when
///   nothing listens and completes at once while the server's accept backlog has room; only a
///   server that has stopped calling `accept` with a full backlog makes it wait.
/// - [`write_timeout`](Options::write_timeout) bounds each `write` (the socket's `SO_SNDTIMEO`).
/// - [`read_timeout`](Options::read_timeout) bounds each `read` *and* each whole reply (in a
///   pipeline: each reply). The socket's own timeout only notices a server that goes silent, so
///   a server dripping one byte every 100 ms would otherwise hold a call for as long as it
///   liked; a [`ReplyDeadline`] fails a reply still incomplete after the read timeout at its next
///   read, so within twice the timeout at worst.
///
/// Each fails the call with [`Error::Timeout`] (a connect: [`Error::Connect`]), and the
/// connection is not used again ([`Error::breaks_connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long to wait for the connection to be established.
    pub connect_timeout: Duration,
    /// How long one read may wait for bytes.
    pub read_timeout: Duration,
    /// How long one write may wait for the socket to accept bytes.
    pub write_timeout: Duration,
}

impl Options {
    /// The same `timeout` for the connect, each read and each write.
    pub fn with_timeout(timeout: Duration) -> Options {
        Options {
            connect_timeout: timeout,
            read_timeout: timeout,
            write_timeout: timeout,
        }
    }

    /// Default for all three timeouts: long enough for a 1 MiB value on a loaded 2-core machine,
    /// short enough that a test against a silent server fails in seconds, not minutes.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
}

impl Default for Options {
    fn default() -> Self {
        Options {
            connect_timeout: Self::DEFAULT_TIMEOUT,
            read_timeout: Self::DEFAULT_TIMEOUT,
            write_timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// The read timeout applied to one whole reply rather than to each `read`.
///
/// A socket's read timeout (`SO_RCVTIMEO`, [`Options::read_timeout`]) bounds each `read`, so it
/// only notices a server that goes silent: a server dripping one byte every 100 ms satisfies
/// every read and could hold a call for as long as it liked. This bounds the whole reply:
/// [`start`](Self::start) when waiting for a reply begins, [`check`](Self::check) before every
/// read of it ([`ReadBuffer`](crate::ReadBuffer) does both for its owner); a reply still incomplete after the limit
/// fails at the next read, so within twice the limit at worst.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyDeadline {
    limit: Option<Duration>,
    /// When the first read of the current reply was made; `None` before it.
    started: Option<Instant>,
}

impl ReplyDeadline {
    /// A deadline of `limit` per reply; `None` never expires.
    pub fn new(limit: Option<Duration>) -> Self {
        ReplyDeadline {
            limit,
            started: None,
        }
    }

    /// Changes the limit; `None` leaves only the socket's own per-read timeout.
    pub fn set_limit(&mut self, limit: Option<Duration>) {
        self.limit = limit;
    }

    /// Starts timing a new reply: the clock starts at the next [`check`](Self::check).
    pub fn start(&mut self) {
        self.started = None;
    }

    // ANCHOR: core_reply_deadline_check
    /// Called before every read of a reply: one clock read, no system call. Fails with
    /// [`io::ErrorKind::TimedOut`] (which becomes [`Error::Timeout`]) once the reply is late.
    pub fn check(&mut self) -> io::Result<()> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        match self.started {
            None => self.started = Some(Instant::now()),
            Some(started) if started.elapsed() >= limit => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("reply still incomplete after the {limit:?} read timeout"),
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }
    // ANCHOR_END: core_reply_deadline_check
}

/// Connects over TCP the way every hand-written client does: each address `addr` resolves to is
/// tried in turn within [`Options::connect_timeout`], then `TCP_NODELAY` is set as asked and the
/// socket gets the options' read and write timeouts. Any failure is [`Error::Connect`].
// ANCHOR: connect_tcp_stream
pub fn connect_tcp_stream(addr: &str, options: &Options, nodelay: bool) -> Result<TcpStream> {
    let fail = |source| Error::Connect {
        endpoint: format!("tcp://{addr}"),
        source,
    };
    let mut last_error = io::Error::new(io::ErrorKind::InvalidInput, "address resolved to nothing");
    for socket_addr in addr.to_socket_addrs().map_err(fail)? {
        match TcpStream::connect_timeout(&socket_addr, options.connect_timeout) {
            Ok(stream) => {
                // ANCHOR: set_nodelay
                stream.set_nodelay(nodelay).map_err(fail)?;
                // ANCHOR_END: set_nodelay
                let (read, write) = (options.read_timeout, options.write_timeout);
                stream.set_read_timeout(Some(read)).map_err(fail)?;
                stream.set_write_timeout(Some(write)).map_err(fail)?;
                return Ok(stream);
            }
            Err(err) => last_error = err,
        }
    }
    Err(fail(last_error))
}
// ANCHOR_END: connect_tcp_stream

/// Connects to a Unix socket and gives it the options' read and write timeouts. Any failure is
/// [`Error::Connect`]. [`Options::connect_timeout`] is not applied: `std` offers no
/// `UnixStream::connect_timeout`, and a local connect only waits while the server's accept
/// backlog is full.
pub fn connect_unix_stream(path: &Path, options: &Options) -> Result<UnixStream> {
    let fail = |source| Error::Connect {
        endpoint: format!("unix://{}", path.display()),
        source,
    };
    let stream = UnixStream::connect(path).map_err(fail)?;
    let (read, write) = (options.read_timeout, options.write_timeout);
    stream.set_read_timeout(Some(read)).map_err(fail)?;
    stream.set_write_timeout(Some(write)).map_err(fail)?;
    Ok(stream)
}
