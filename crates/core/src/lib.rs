//! `kvbench-core`: the contract every client implements, and the plumbing every hand-written
//! client shares. Its lesson is a small contract: four required methods and a `set_many` whose
//! default loops over `set` let one conformance kit and one benchmark run every client, and make
//! pipelining an override whose gain is measured. It gives up everything the contract does not
//! name (scripts, pub/sub, WATCH, async calls from the blocking face). Read it first, then compare
//! `raw-tcp` (which keeps the default `set_many`) with `buffered` (which overrides it).
//!
//! The contract is small on purpose. [`Client`] has four required methods — [`Client::get`],
//! [`Client::set`], [`Client::set_ex`] and [`Client::delete`] — and two provided ones,
//! [`Client::set_many`] and [`Client::get_many_pipelined`], whose defaults send one command after
//! another. A client that can pipeline overrides them; every other client gets a correct (if slow)
//! pipeline for free, and the benchmark shows what the override buys.
//!
//! Beyond those, the optional operations ([`Operation`]: [`Client::incr`], the one-command batch
//! read [`Client::get_many`], a hash's [`Client::hset_many`] and [`Client::hgetall`], and
//! [`Client::transaction`]) refuse by default with [`Error::Unsupported`] before sending anything.
//! A client that implements one declares it in [`ClientSpec::operations`]; the kit checks both
//! that declared operations work and that the others refuse, and the bench reports a client
//! without one as `unsupported` in that operation's cells.
//!
//! A client is described by a [`ClientSpec`]: its name, backend and transports, whether it is
//! hand-written or a library, how its `set_many` works ([`Pipelining`]), what it cannot do (and
//! why), a function that connects it to an [`Endpoint`] (a library that is async anyway adds its
//! [`AsyncClient`] face) and how it serves many callers at once ([`Concurrency`]). The suite's
//! one list of clients is a list of these; the kit and the bench select by what they declare.
//!
//! Errors are one typed [`Error`]: connection failures, timeouts, malformed replies, error replies
//! from the server, and input the protocol cannot carry are distinct variants, so a test can tell
//! "the server said no" from "the client misread the reply".
//!
//! A little plumbing lives here because the hand-written clients need it the same way:
//! [`ReadBuffer`] (the reused read buffer replies are parsed in, whatever the protocol) and
//! [`ReplyDeadline`] (a read timeout for a whole reply, not just one `read`) for the blocking
//! ones; [`Broken`] (the state of a connection that must not be used again) and the socket set-up
//! of [`connect_tcp_stream`] and [`connect_unix_stream`] for all of them. [`Stream`] (either
//! transport's socket as one type) is for the suite's own probes, meters and test servers.
#![deny(missing_docs)]

mod read_buffer;
mod stream;

use std::fmt;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::{Duration, Instant};

pub use crate::read_buffer::ReadBuffer;
pub use crate::stream::Stream;

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

/// Who wrote the protocol code a client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// One of this workspace's minimal clients: the code is the lesson.
    HandWritten,
    /// A published client library behind a thin adapter: the yardstick.
    Library,
}

impl Kind {
    /// Name used in results files (`hand-written` or `library`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::HandWritten => "hand-written",
            Kind::Library => "library",
        }
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
/// Timeouts exist so that no client can hang on a dead or dripping server: a read or write that
/// makes no progress for this long fails with [`Error::Timeout`].
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

// ANCHOR: core_error
/// Everything that can go wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection could not be established.
    #[error("cannot connect to {endpoint}: {source}")]
    Connect {
        /// Where we tried to connect.
        endpoint: String,
        /// What the operating system said.
        source: io::Error,
    },
    /// The connection failed or was closed by the peer after it was established.
    #[error("connection error: {0}")]
    Io(#[source] io::Error),
    /// A read or write made no progress within its timeout.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server sent bytes that are not a valid reply. The connection is out of sync and is not
    /// reused.
    #[error("malformed reply: {0}")]
    Protocol(String),
    /// The server answered with an error reply (`-ERR ...`, `SERVER_ERROR ...`). The connection is
    /// still in sync and can be used again.
    #[error("server error: {0}")]
    Server(String),
    /// The key or value cannot be carried by this client's protocol; nothing was sent.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The client cannot do this at all (for example, a library without the feature).
    #[error("unsupported: {0}")]
    Unsupported(String),
}
// ANCHOR_END: core_error

impl Error {
    /// True for errors after which the connection must not be used again.
    pub fn breaks_connection(&self) -> bool {
        matches!(
            self,
            Error::Connect { .. } | Error::Io(_) | Error::Timeout(_) | Error::Protocol(_)
        )
    }

    /// This error, with `peer` (one of several servers a client talks to) named in its message,
    /// for a broken connection, a timeout or a malformed reply: which of several servers failed
    /// is the first question. [`Error::Connect`] names its endpoint already, and an error reply
    /// stays as the server wrote it (a client may parse it).
    pub fn with_peer(self, peer: &str) -> Error {
        match self {
            Error::Io(source) => {
                Error::Io(io::Error::new(source.kind(), format!("{peer}: {source}")))
            }
            Error::Timeout(message) => Error::Timeout(format!("{peer}: {message}")),
            Error::Protocol(message) => Error::Protocol(format!("{peer}: {message}")),
            other => other,
        }
    }

    /// This error, met while connecting to `endpoint`, as the contract reports a connection
    /// that could not be established: a failed or timed-out connection (a library's handshake
    /// included) becomes [`Error::Connect`], a timeout with [`io::ErrorKind::TimedOut`]. Any
    /// other error (an error reply, a bad URL) stays as it is.
    pub fn while_connecting(self, endpoint: &Endpoint) -> Error {
        let source = match self {
            Error::Io(source) => source,
            Error::Timeout(message) => io::Error::new(io::ErrorKind::TimedOut, message),
            other => return other,
        };
        Error::Connect {
            endpoint: endpoint.to_string(),
            source,
        }
    }
}

impl From<io::Error> for Error {
    /// Socket timeouts surface as `WouldBlock` or `TimedOut` depending on the platform; both mean
    /// [`Error::Timeout`]. Everything else is a broken connection.
    fn from(err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout(err.to_string()),
            _ => Error::Io(err),
        }
    }
}

/// Result type of every contract method.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The read timeout applied to one whole reply rather than to each `read`.
///
/// A socket's read timeout (`SO_RCVTIMEO`, [`Options::read_timeout`]) bounds each `read`, so it
/// only notices a server that goes silent: a server dripping one byte every 100 ms satisfies
/// every read and could hold a call for as long as it liked. This bounds the whole reply:
/// [`start`](Self::start) when waiting for a reply begins, [`check`](Self::check) before every
/// read of it ([`ReadBuffer`] does both for its owner); a reply still incomplete after the limit
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

// ANCHOR: core_broken
/// Whether a connection may still be used.
///
/// Requests and replies are matched by their order alone. After an error that may leave a reply
/// half read ([`Error::breaks_connection`]), the next bytes could belong to any reply, so the
/// first such error is kept and every later call fails with it at once, without touching the
/// socket. Errors that leave the stream in step (an error reply, refused input) change nothing.
#[derive(Debug, Default)]
pub struct Broken(Option<String>);

impl Broken {
    /// `Err` once the connection is broken, naming the error that broke it.
    pub fn check(&self) -> Result<()> {
        match &self.0 {
            None => Ok(()),
            Some(reason) => Err(Error::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("connection unusable after an earlier error: {reason}"),
            ))),
        }
    }

    /// Passes `result` through, first remembering its error if that breaks the connection.
    pub fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(err) = &result
            && err.breaks_connection()
            && self.0.is_none()
        {
            self.0 = Some(err.to_string());
        }
        result
    }

    /// True once an error has left the connection out of step.
    pub fn is_broken(&self) -> bool {
        self.0.is_some()
    }
}
// ANCHOR_END: core_broken

/// The values of a batch read, checked to be one per key: a library converts an array of
/// another length without complaint, which would pair values with the wrong keys.
pub fn one_per_key(values: Vec<Option<Vec<u8>>>, keys: usize) -> Result<Vec<Option<Vec<u8>>>> {
    if values.len() != keys {
        return Err(Error::Protocol(format!(
            "{} values for {keys} keys",
            values.len()
        )));
    }
    Ok(values)
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

// ANCHOR: core_client
/// The synchronous interface every client implements.
///
/// Required: [`get`](Client::get), [`set`](Client::set), [`set_ex`](Client::set_ex),
/// [`delete`](Client::delete). Provided: [`set_many`](Client::set_many), which loops over `set`;
/// override it where you can be faster (pipelining).
///
/// Keys and values are bytes. A client whose protocol cannot carry some bytes refuses them with
/// [`Error::InvalidInput`] *before* writing anything.
pub trait Client: Send {
    /// Reads a key: `Some(bytes)` on a hit, `None` on a miss.
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Stores a value with no expiry.
    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Stores a value that expires after `ttl_secs` seconds (at least 1).
    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()>;

    /// Removes a key. Returns whether it existed.
    fn delete(&mut self, key: &[u8]) -> Result<bool>;

    /// Stores many values. The default sends one [`set`](Client::set) per item and waits for each
    /// reply; a pipelining client overrides it to send them without a round trip per item.
    ///
    /// On error, some items may have been stored and others not.
    // ANCHOR: default_set_many
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        for (key, value) in items {
            self.set(key, value)?;
        }
        Ok(())
    }
    // ANCHOR_END: default_set_many

    // ANCHOR: core_get_many_pipelined
    /// Reads many keys, in order: `None` for each miss. The default sends one
    /// [`get`](Client::get) per key and waits for each reply; a pipelining client overrides it to
    /// send them all before reading any reply. Compare [`Client::get_many`], one command.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|key| self.get(key)).collect()
    }
    // ANCHOR_END: core_get_many_pipelined

    /// The contract's optional operations. Each default refuses with [`Error::Unsupported`]
    /// before sending anything; a client that overrides one declares it in
    /// [`ClientSpec::operations`], and the conformance kit holds both to it.
    ///
    /// Adds 1 to the counter stored at `key` and returns its new value. A missing key: Redis
    /// starts it from 0 (and returns 1); memcached has no counter there and answers
    /// [`Error::Server`] (`NOT_FOUND`). A value that is not a counter, or one that would pass
    /// `i64::MAX` (Redis refuses the increment; a memcached counter, unsigned 64-bit, may hold
    /// more than an `i64`), is [`Error::Server`]; the connection stays usable.
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        let _ = key;
        Err(Operation::Incr.unsupported())
    }

    /// Reads many keys with one command (Redis `MGET`, memcached `get k1 … kN`), in order:
    /// `None` for each miss.
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let _ = keys;
        Err(Operation::GetMany.unsupported())
    }

    /// Stores the fields of the hash at `key` with one command (Redis `HSET key f1 v1 …`).
    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        let _ = (key, fields);
        Err(Operation::Hash.unsupported())
    }

    /// Reads every field of the hash at `key` (Redis `HGETALL`), in no promised order (a
    /// library may pass the reply through a map); empty for a missing key.
    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let _ = key;
        Err(Operation::Hash.unsupported())
    }

    /// Stores every item atomically: the SETs inside `MULTI` … `EXEC` (Redis). Succeeds only
    /// if `EXEC` answered an `OK` for every SET; no other client sees some of the items stored
    /// and others not.
    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let _ = items;
        Err(Operation::Transaction.unsupported())
    }
}
// ANCHOR_END: core_client

// ANCHOR: core_operation
/// The contract's optional operations: what a [`ClientSpec`] declares it implements beyond GET,
/// SET, SET with expiry, DELETE and `set_many`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// [`Client::incr`].
    Incr,
    /// [`Client::get_many`], one command for many keys.
    GetMany,
    /// [`Client::hset_many`] and [`Client::hgetall`] (Redis only).
    Hash,
    /// [`Client::transaction`] (Redis only).
    Transaction,
}
// ANCHOR_END: core_operation

impl Operation {
    /// Every optional operation.
    pub const ALL: &'static [Operation] = &[
        Operation::Incr,
        Operation::GetMany,
        Operation::Hash,
        Operation::Transaction,
    ];

    /// Its name in reports and errors.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Incr => "incr",
            Operation::GetMany => "get_many",
            Operation::Hash => "hash",
            Operation::Transaction => "transaction",
        }
    }

    /// The error of a client that does not implement it.
    pub fn unsupported(self) -> Error {
        Error::Unsupported(format!("this client does not implement {}", self.name()))
    }
}

/// Implements [`Client`] for a type that holds an async client in its `inner` field (with async
/// `get`, `set`, `set_ex`, `delete` and `set_many` of the contract's signatures) and a runtime
/// in its `runtime` field, by blocking on each call: how the library adapters put an async
/// client behind the synchronous contract. After a `;`, the methods with defaults it forwards
/// too: `get_many_pipelined`, and the optional operations by [`Operation::name`] (`incr,
/// get_many, hash, transaction`); the others keep their defaults. This crate depends on no runtime; the expansion uses
/// the caller's.
#[macro_export]
macro_rules! impl_client_by_blocking_on {
    ($type:ty $(; $($op:ident),* $(,)?)?) => {
        impl $crate::Client for $type {
            fn get(&mut self, key: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
                self.runtime.block_on(self.inner.get(key))
            }

            fn set(&mut self, key: &[u8], value: &[u8]) -> $crate::Result<()> {
                self.runtime.block_on(self.inner.set(key, value))
            }

            fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> $crate::Result<()> {
                self.runtime
                    .block_on(self.inner.set_ex(key, value, ttl_secs))
            }

            fn delete(&mut self, key: &[u8]) -> $crate::Result<bool> {
                self.runtime.block_on(self.inner.delete(key))
            }

            fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> $crate::Result<()> {
                self.runtime.block_on(self.inner.set_many(items))
            }

            $($($crate::__blocking_op!($op);)*)?
        }
    };
}

/// One optional operation of [`impl_client_by_blocking_on!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __blocking_op {
    (get_many_pipelined) => {
        fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> $crate::Result<Vec<Option<Vec<u8>>>> {
            self.runtime.block_on(self.inner.get_many_pipelined(keys))
        }
    };
    (incr) => {
        fn incr(&mut self, key: &[u8]) -> $crate::Result<i64> {
            self.runtime.block_on(self.inner.incr(key))
        }
    };
    (get_many) => {
        fn get_many(&mut self, keys: &[&[u8]]) -> $crate::Result<Vec<Option<Vec<u8>>>> {
            self.runtime.block_on(self.inner.get_many(keys))
        }
    };
    (hash) => {
        fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            self.runtime.block_on(self.inner.hset_many(key, fields))
        }
        fn hgetall(&mut self, key: &[u8]) -> $crate::Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.runtime.block_on(self.inner.hgetall(key))
        }
    };
    (transaction) => {
        fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            self.runtime.block_on(self.inner.transaction(items))
        }
    };
}

/// A future of one [`AsyncClient`] call. Boxed, so that the trait can be a trait object (the
/// bench holds `Box<dyn AsyncClient>` without knowing the library) and this crate names no
/// runtime: the future runs on whatever runtime the library needs, which its caller provides.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + 'a>>;

/// The contract's operations, natively async: how the bench drives a client whose library is
/// async without a `block_on` per call. Same semantics as [`Client`]; `set_many` has no default,
/// since only a library that is async anyway offers this face.
pub trait AsyncClient: Send {
    /// [`Client::get`].
    fn get<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, Option<Vec<u8>>>;

    /// [`Client::set`].
    fn set<'a>(&'a mut self, key: &'a [u8], value: &'a [u8]) -> BoxFuture<'a, ()>;

    /// [`Client::set_ex`].
    fn set_ex<'a>(&'a mut self, key: &'a [u8], value: &'a [u8], ttl_secs: u32)
    -> BoxFuture<'a, ()>;

    /// [`Client::delete`].
    fn delete<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, bool>;

    /// [`Client::set_many`].
    fn set_many<'a>(&'a mut self, items: &'a [(&'a [u8], &'a [u8])]) -> BoxFuture<'a, ()>;

    /// [`Client::get_many_pipelined`]; the default awaits one [`get`](AsyncClient::get) after
    /// the other, as the blocking one does.
    fn get_many_pipelined<'a>(
        &'a mut self,
        keys: &'a [&'a [u8]],
    ) -> BoxFuture<'a, Vec<Option<Vec<u8>>>> {
        Box::pin(async move {
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                values.push(self.get(key).await?);
            }
            Ok(values)
        })
    }

    /// [`Client::incr`]; the default refuses, as the blocking one does.
    fn incr<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, i64> {
        let _ = key;
        Box::pin(std::future::ready(Err(Operation::Incr.unsupported())))
    }

    /// [`Client::get_many`].
    fn get_many<'a>(&'a mut self, keys: &'a [&'a [u8]]) -> BoxFuture<'a, Vec<Option<Vec<u8>>>> {
        let _ = keys;
        Box::pin(std::future::ready(Err(Operation::GetMany.unsupported())))
    }

    /// [`Client::hset_many`].
    fn hset_many<'a>(
        &'a mut self,
        key: &'a [u8],
        fields: &'a [(&'a [u8], &'a [u8])],
    ) -> BoxFuture<'a, ()> {
        let _ = (key, fields);
        Box::pin(std::future::ready(Err(Operation::Hash.unsupported())))
    }

    /// [`Client::hgetall`].
    fn hgetall<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, Vec<(Vec<u8>, Vec<u8>)>> {
        let _ = key;
        Box::pin(std::future::ready(Err(Operation::Hash.unsupported())))
    }

    /// [`Client::transaction`].
    fn transaction<'a>(&'a mut self, items: &'a [(&'a [u8], &'a [u8])]) -> BoxFuture<'a, ()> {
        let _ = items;
        Box::pin(std::future::ready(
            Err(Operation::Transaction.unsupported()),
        ))
    }
}

/// Implements [`AsyncClient`] for a type with async `get`, `set`, `set_ex`, `delete` and
/// `set_many` methods of the contract's signatures (taking `&self` or `&mut self`), by boxing
/// each call's future, and defines `$connect`, the [`ConnectAsyncFn`]
/// that boxes the type's `async fn connect(&Endpoint, &Options) -> Result<Self>`: how the
/// library adapters offer their native async face. After a `;`, the methods with defaults it
/// forwards too, as in [`impl_client_by_blocking_on!`].
#[macro_export]
macro_rules! impl_async_client_by_boxing {
    ($type:ty, $connect:ident $(; $($op:ident),* $(,)?)?) => {
        fn $connect<'a>(
            endpoint: &'a $crate::Endpoint,
            options: &'a $crate::Options,
        ) -> $crate::BoxFuture<'a, Box<dyn $crate::AsyncClient>> {
            Box::pin(async move {
                Ok(Box::new(<$type>::connect(endpoint, options).await?)
                    as Box<dyn $crate::AsyncClient>)
            })
        }

        impl $crate::AsyncClient for $type {
            fn get<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, Option<Vec<u8>>> {
                Box::pin(<$type>::get(self, key))
            }

            fn set<'a>(&'a mut self, key: &'a [u8], value: &'a [u8]) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set(self, key, value))
            }

            fn set_ex<'a>(
                &'a mut self,
                key: &'a [u8],
                value: &'a [u8],
                ttl_secs: u32,
            ) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set_ex(self, key, value, ttl_secs))
            }

            fn delete<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, bool> {
                Box::pin(<$type>::delete(self, key))
            }

            fn set_many<'a>(
                &'a mut self,
                items: &'a [(&'a [u8], &'a [u8])],
            ) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set_many(self, items))
            }

            $($($crate::__boxed_op!($type, $op);)*)?
        }
    };
}

/// One optional operation of [`impl_async_client_by_boxing!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __boxed_op {
    ($type:ty, get_many_pipelined) => {
        fn get_many_pipelined<'a>(
            &'a mut self,
            keys: &'a [&'a [u8]],
        ) -> $crate::BoxFuture<'a, Vec<Option<Vec<u8>>>> {
            Box::pin(<$type>::get_many_pipelined(self, keys))
        }
    };
    ($type:ty, incr) => {
        fn incr<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, i64> {
            Box::pin(<$type>::incr(self, key))
        }
    };
    ($type:ty, get_many) => {
        fn get_many<'a>(
            &'a mut self,
            keys: &'a [&'a [u8]],
        ) -> $crate::BoxFuture<'a, Vec<Option<Vec<u8>>>> {
            Box::pin(<$type>::get_many(self, keys))
        }
    };
    ($type:ty, hash) => {
        fn hset_many<'a>(
            &'a mut self,
            key: &'a [u8],
            fields: &'a [(&'a [u8], &'a [u8])],
        ) -> $crate::BoxFuture<'a, ()> {
            Box::pin(<$type>::hset_many(self, key, fields))
        }
        fn hgetall<'a>(
            &'a mut self,
            key: &'a [u8],
        ) -> $crate::BoxFuture<'a, Vec<(Vec<u8>, Vec<u8>)>> {
            Box::pin(<$type>::hgetall(self, key))
        }
    };
    ($type:ty, transaction) => {
        fn transaction<'a>(
            &'a mut self,
            items: &'a [(&'a [u8], &'a [u8])],
        ) -> $crate::BoxFuture<'a, ()> {
            Box::pin(<$type>::transaction(self, items))
        }
    };
}

/// How a client's `set_many` sends its items, with one line for reports on how it does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipelining {
    /// `set_many` is overridden to send items without waiting for a reply to each.
    Pipelined(&'static str),
    /// `set_many` is the contract's default loop: one round trip per item.
    OneByOne(&'static str),
}

impl Pipelining {
    /// The line for reports.
    pub fn description(self) -> &'static str {
        match self {
            Pipelining::Pipelined(text) | Pipelining::OneByOne(text) => text,
        }
    }
}

/// What a library's first call does on one hostile-server case, when that is ordinary (a typed
/// error, a value the bytes really hold) rather than a [`KnownDefect`]. The hostile-server test
/// asserts exactly this outcome, so a change in the library's behaviour fails it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostileOutcome {
    /// The hostile-server case (`line_without_end`), as named in the conformance crate's
    /// `tests/hostile.rs`.
    pub input: &'static str,
    /// What the first call returns, as that test reports it: [`HostileOutcome::TIMED_OUT`],
    /// `Ok(Some(1 byte))`, ….
    pub outcome: &'static str,
}

/// A `&'static [HostileOutcome]` from `"input" => outcome` pairs, for a spec's table.
#[macro_export]
macro_rules! hostile_outcomes {
    ($($input:literal => $outcome:expr),* $(,)?) => {
        &[$($crate::HostileOutcome { input: $input, outcome: $outcome }),*]
    };
}

impl HostileOutcome {
    /// The call failed with [`Error::Timeout`].
    pub const TIMED_OUT: &'static str = "Err(Timeout)";
    /// The call failed with [`Error::Protocol`].
    pub const PROTOCOL: &'static str = "Err(Protocol)";
    /// The call failed with [`Error::Io`].
    pub const IO: &'static str = "Err(Io)";
    /// The call failed with [`Error::Server`].
    pub const SERVER: &'static str = "Err(Server)";
}

/// A behaviour of the conformance kit that a client cannot perform, and why.
///
/// The kit does not skip such a case: it checks that the client refuses it with a typed error
/// and reports the case as unsupported, with this reason.
#[derive(Debug, Clone, Copy)]
pub struct Limitation {
    /// Name of the kit behaviour, for example `binary_safe`.
    pub behaviour: &'static str,
    /// Why the client cannot do it.
    pub reason: &'static str,
}

/// A fault of a library client, pinned to the version the suite measures: what the library does
/// on one hostile input. The hostile-server tests assert exactly this outcome, so a change in the
/// library's behaviour (a fix, or a new failure) fails them until the entry is updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownDefect {
    /// The crate's name on crates.io (`fred`, `redis`, `memcache`).
    pub library: &'static str,
    /// The crate's version, as locked in `Cargo.lock`.
    pub version: &'static str,
    /// The hostile-server case that meets it (`deeply_nested_arrays`), as named in the
    /// conformance crate's `tests/hostile.rs`; the conformance kit's many-callers case
    /// (`server_close`) or cluster case (`cluster_slot_migration`, `cluster_node_stopped`),
    /// which then accepts the outcome; or a case of the library's own tests that pins it.
    pub input: &'static str,
    /// What happens, as the hostile-server test reports the first call: `Ok(Some(5 bytes))`,
    /// `panicked: ...`, `process killed by SIGABRT: ...`.
    pub outcome: &'static str,
}

/// Connects a client to an endpoint.
pub type ConnectFn = fn(&Endpoint, &Options) -> Result<Box<dyn Client>>;

/// Connects a client's natively async face to an endpoint; the future runs on the runtime the
/// library needs (tokio, current-thread, for the libraries here).
pub type ConnectAsyncFn =
    for<'a> fn(&'a Endpoint, &'a Options) -> BoxFuture<'a, Box<dyn AsyncClient>>;

/// How a client serves C callers at once: the concurrency axis of the matrix. With one caller
/// there is nothing to share: every model is [`ClientSpec::connect`] (or its async face), one
/// connection, or the pool of a spec that is one.
#[derive(Debug, Clone, Copy)]
pub enum Concurrency {
    /// C OS threads, each with its own connection from [`ClientSpec::connect`]: the default of
    /// every blocking client. Simple and isolated; it pays a thread (stack, context switches)
    /// and a socket per caller, and every caller's request is its own `write`.
    Threads,
    /// C callers share one connection: [`Concurrency::Multiplexed`]'s function opens it, and
    /// each caller takes a [`SharedClient::handle`] on it.
    Multiplexed(ConnectSharedFn),
    /// C callers share a pool of `connections` connections, opened by `connect`; each caller
    /// takes a [`SharedClient::handle`].
    Pool {
        /// The connections in the pool (P).
        connections: usize,
        /// Opens the pool.
        connect: ConnectSharedFn,
    },
}

impl Concurrency {
    /// The sockets C callers open under this model.
    pub fn connections(self, callers: usize) -> usize {
        match self {
            Concurrency::Threads => callers,
            Concurrency::Multiplexed(_) => 1,
            Concurrency::Pool { connections, .. } => connections,
        }
    }

    /// The shared connection's opener, for the models that share one.
    pub fn connect_shared(self) -> Option<ConnectSharedFn> {
        match self {
            Concurrency::Threads => None,
            Concurrency::Multiplexed(connect) | Concurrency::Pool { connect, .. } => Some(connect),
        }
    }
}

/// One caller's handle on a [`SharedClient`]: natively async (the caller is a task on the
/// runtime the shared client was opened on) or blocking (the caller is a thread).
pub enum Handle {
    /// A task's handle; its calls run on the runtime the shared client was opened on.
    Async(Box<dyn AsyncClient>),
    /// A thread's handle.
    Blocking(Box<dyn Client>),
}

/// A connection (or pool of connections) many callers share: each caller takes its own
/// [`Handle`], and the client keeps every reply with the caller whose request it answers.
pub trait SharedClient: Send + Sync {
    /// A new caller's handle.
    fn handle(&self) -> Handle;
}

/// Opens a [`SharedClient`] with `connections` connections (1 for a multiplexed client). An
/// async client must be opened on the runtime its callers' tasks will run on: a current-thread
/// tokio runtime, for the clients here.
pub type ConnectSharedFn =
    for<'a> fn(&'a Endpoint, &'a Options, usize) -> BoxFuture<'a, Box<dyn SharedClient>>;

/// A [`SharedClient`] that opens itself: [`connect_shared_boxed::<Self>`](connect_shared_boxed)
/// is then the [`ConnectSharedFn`] its spec's [`Concurrency`] names.
pub trait ConnectShared: SharedClient + Sized + 'static {
    /// Opens it with `connections` connections (1 for a multiplexed client). An async client
    /// must be opened on the runtime its callers' tasks will run on.
    fn connect_shared(
        endpoint: &Endpoint,
        options: &Options,
        connections: usize,
    ) -> impl Future<Output = Result<Self>>;
}

/// The [`ConnectSharedFn`] of a [`ConnectShared`] type: its opener, boxed.
pub fn connect_shared_boxed<'a, S: ConnectShared>(
    endpoint: &'a Endpoint,
    options: &'a Options,
    connections: usize,
) -> BoxFuture<'a, Box<dyn SharedClient>> {
    Box::pin(async move {
        let shared = S::connect_shared(endpoint, options, connections).await?;
        Ok(Box::new(shared) as Box<dyn SharedClient>)
    })
}

/// Description of one client: what it is, where it can go, and how to connect it.
#[derive(Clone, Copy)]
pub struct ClientSpec {
    /// Unique name, as shown in tests and reports (`raw-tcp`, `raw-tcp/per-token`, `fred`).
    pub name: &'static str,
    /// The server it speaks to.
    pub backend: Backend,
    /// The transports it supports.
    pub transports: &'static [Transport],
    /// Hand-written or library.
    pub kind: Kind,
    /// One line for reports: the design choice, or how the library is configured.
    pub summary: &'static str,
    /// How `set_many` works for this client.
    pub pipelining: Pipelining,
    /// Kit behaviours it cannot perform, with reasons.
    pub limitations: &'static [Limitation],
    /// Set when every round trip of this client is slow by design (tens of milliseconds): the
    /// reason. Such a client is a lesson, not a contender: the kit runs its `set_many` with a
    /// few hundred items instead of 100,000, and the bench leaves it out of pipeline cells and
    /// cells with many callers (reported `unsupported`).
    pub slow_round_trip: Option<&'static str>,
    /// Faults of the library at its pinned version; empty for hand-written clients (their faults
    /// fail the tests instead).
    pub known_defects: &'static [KnownDefect],
    /// What a library does on each hostile-server case that is not one of its known defects;
    /// empty for hand-written clients (the test holds them to typed errors instead).
    pub hostile_outcomes: &'static [HostileOutcome],
    /// Set on the client the bench measures the loopback floor with (for its backend, on the
    /// transports it supports): the fastest hand-written client, so that the floor, which
    /// answers from memory with no server, leaves only the transport and this client's code.
    pub loopback_floor: bool,
    /// Opens a connection.
    pub connect: ConnectFn,
    /// Opens the client's natively async face, for a library that is async anyway: the bench
    /// then drives it without a `block_on` per call. `None` for synchronous clients.
    pub connect_async: Option<ConnectAsyncFn>,
    /// How it serves many callers at once.
    pub concurrency: Concurrency,
    // ANCHOR: core_spec_operations
    /// The optional operations it implements ([`Operation`]); the others refuse.
    pub operations: &'static [Operation],
    // ANCHOR_END: core_spec_operations
}

impl ClientSpec {
    /// True if the client can use this transport.
    pub fn supports(&self, transport: Transport) -> bool {
        self.transports.contains(&transport)
    }

    /// True if `set_many` is pipelined.
    pub fn pipelines(&self) -> bool {
        matches!(self.pipelining, Pipelining::Pipelined(_))
    }

    /// The reason the client cannot perform a kit behaviour, if it cannot.
    pub fn limitation(&self, behaviour: &str) -> Option<&'static str> {
        self.limitations
            .iter()
            .find(|limit| limit.behaviour == behaviour)
            .map(|limit| limit.reason)
    }

    /// True if the client implements the optional operation.
    pub fn implements(&self, operation: Operation) -> bool {
        self.operations.contains(&operation)
    }
}

impl fmt::Debug for ClientSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSpec")
            .field("name", &self.name)
            .field("backend", &self.backend)
            .field("transports", &self.transports)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting {
        sets: usize,
    }

    impl Client for Counting {
        fn get(&mut self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(None)
        }
        fn set(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
            self.sets += 1;
            Ok(())
        }
        fn set_ex(&mut self, key: &[u8], value: &[u8], _ttl: u32) -> Result<()> {
            self.set(key, value)
        }
        fn delete(&mut self, _key: &[u8]) -> Result<bool> {
            Ok(false)
        }
    }

    #[test]
    fn default_set_many_sets_each_item_once() {
        let mut client = Counting { sets: 0 };
        let items: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        client.set_many(&items).unwrap();
        assert_eq!(client.sets, 3);
    }

    #[test]
    fn socket_timeouts_become_timeout_errors() {
        for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::TimedOut] {
            let err = Error::from(io::Error::from(kind));
            assert!(matches!(err, Error::Timeout(_)), "{kind:?} gave {err:?}");
            assert!(err.breaks_connection());
        }
        let reset = Error::from(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(matches!(reset, Error::Io(_)));
        assert!(!Error::Server("WRONGTYPE".into()).breaks_connection());
    }

    #[test]
    fn failures_while_connecting_are_connect_errors() {
        let endpoint = Endpoint::Tcp("127.0.0.1:1".into());
        let timeout = Error::Timeout("handshake".into()).while_connecting(&endpoint);
        assert!(
            matches!(&timeout, Error::Connect { endpoint, source }
                if endpoint == "tcp://127.0.0.1:1" && source.kind() == io::ErrorKind::TimedOut),
            "{timeout:?}"
        );
        let refused =
            Error::Io(io::ErrorKind::ConnectionRefused.into()).while_connecting(&endpoint);
        assert!(matches!(refused, Error::Connect { .. }), "{refused:?}");
        let reply = Error::Server("NOAUTH".into()).while_connecting(&endpoint);
        assert!(matches!(reply, Error::Server(_)), "{reply:?}");
    }

    #[test]
    fn a_reply_deadline_expires_only_once_started_and_late() {
        let mut unlimited = ReplyDeadline::default();
        assert!(unlimited.check().is_ok() && unlimited.check().is_ok());
        let mut deadline = ReplyDeadline::new(Some(Duration::ZERO));
        assert!(deadline.check().is_ok(), "the first check starts the clock");
        let err = Error::from(deadline.check().unwrap_err());
        assert!(matches!(err, Error::Timeout(_)), "{err:?}");
        deadline.start();
        assert!(deadline.check().is_ok(), "a new reply gets a new clock");
    }

    #[test]
    fn only_errors_that_break_the_stream_break_the_connection() {
        let mut broken = Broken::default();
        assert!(broken.note::<()>(Err(Error::Server("ERR".into()))).is_err());
        assert!(broken.check().is_ok() && !broken.is_broken());
        let _ = broken.note::<()>(Err(Error::Protocol("first".into())));
        let _ = broken.note::<()>(Err(Error::Protocol("second".into())));
        let err = broken.check().unwrap_err();
        assert!(err.to_string().contains("first"), "{err}");
    }

    #[test]
    fn endpoints_name_their_transport() {
        assert_eq!(
            Endpoint::Tcp("127.0.0.1:1".into()).transport(),
            Transport::Tcp
        );
        let unix = Endpoint::Unix("/tmp/s.sock".into());
        assert_eq!(unix.transport(), Transport::Unix);
        assert_eq!(unix.to_string(), "unix:///tmp/s.sock");
    }
}
