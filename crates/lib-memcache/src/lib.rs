//! The [`memcache`](https://docs.rs/memcache/0.21) crate behind the kvbench contract: the library
//! yardstick for the hand-written memcached client (`kvbench-memcached-text`). What it shows is
//! what a connection pool's health check costs (a `version` round trip before every operation,
//! unless turned off) and what the binary protocol changes against the text one. Compare it with
//! `memcached-text`.
//!
//! It is longer than a hand-written client (about 370 code lines to their ~300) because it
//! serves four configurations (two protocols, with and without the pool's health check), checks
//! what the library returns where its API is looser than the contract (a multi-get's map, a
//! counter past `i64::MAX`), and records per spec the library's known defects and what it does on
//! every hostile-server case.
//!
//! Four configurations, two protocols times two pools:
//!
//! - **`memcache`** (binary protocol) and **`memcache/ascii`** (text protocol,
//!   `?protocol=ascii`): `memcache::Client::builder().add_server(url)` with the connection, read
//!   and write timeouts from [`Options`] — what `memcache::connect(url)` builds, plus timeouts.
//!   Its r2d2 pool (one connection) tests the connection on every checkout by sending `version`:
//!   **every operation costs two round trips**.
//! - **`memcache/no-check`** and **`memcache/ascii/no-check`**: the same connection in a pool
//!   built by hand with `test_on_check_out(false)` and handed to `Client::with_pool`: one round
//!   trip per operation. The price: a broken connection is no longer detected and replaced by
//!   the pool; the caller must reconnect after an I/O error (which the contract asks anyway).
//!
//! Many callers share one `memcache::Client` (`Concurrency::Pool`) only in the two checking
//! configurations: the same configuration with the pool sized to [`POOL_CONNECTIONS`], built by
//! hand with the checkout test on, and handed to `Client::with_pool`. Each caller's handle shares
//! the client; each call checks a connection out of the pool for itself. A single caller keeps
//! its one-connection pool. The no-check configurations give each caller a client of its own
//! (`Concurrency::Threads`), because a shared no-check pool hands out a connection whose stream
//! is out of step: memcache 0.21's `ConnectionManager::has_broken` always answers "not broken",
//! so a connection whose read timed out goes back into the pool with the late reply still on its
//! way, and the next caller to check it out reads that reply as its own (a GET of one key
//! returned another caller's value in the conformance kit; `tests/memcache.rs` shows it with a
//! paused server). The checkout test is what saves the checking pools: `version` reads the stale
//! reply instead of a version, fails, and r2d2 opens a new connection.
//!
//! Of the contract's optional operations, the text configurations offer `incr` (the crate's
//! `increment(key, 1)`: `incr <key> 1`) and `get_many` (its `gets`: one `gets k1 … kN`). The
//! binary ones offer none, for two faults of the crate's binary protocol
//! (`tests/memcache.rs` shows both):
//!
//! - Its `increment` sends an expiration of 0 with an initial value of 0, which asks memcached
//!   to create a missing counter at 0 (and answer 0) where the contract wants `NOT_FOUND`; it
//!   has no way to send the expiration that means "never create".
//! - Its `gets` writes a quiet `GETKQ` per key, each header field in a `write` of its own, and a
//!   `NOOP`, all before reading any reply. Over a Unix socket, where every small write takes
//!   its own share of the socket buffer, the server stops reading while its replies wait for
//!   the client, and the client's writes then wait for the server until the timeout: 1000 keys
//!   of 1 KiB time out every time, 100 keys some of the time. Over TCP 50,000 came back.
//!
//! `get_many_pipelined` is the contract's default, one `get` after another: the crate cannot
//! pipeline separate `GET`s. memcached has no hashes or transactions.
//!
//! What a user pays for, beyond the bytes on the wire:
//!
//! - Keys are `&str`. A key that is not UTF-8 is refused here with [`Error::InvalidInput`]; on
//!   the text protocol so is a key with a space or control character, which the library would
//!   send as is and desynchronise the connection.
//! - Requests are written straight to the socket, unbuffered. The binary protocol writes each
//!   header field with its own call: a GET is 10 `sendto` calls, and its reply is read in 10
//!   `recvfrom` calls (seen with `strace`; redis-rs makes one of each). The text protocol sends
//!   a GET in 4 pieces and a SET in 11. With `TCP_NODELAY` (the crate's default) each piece can
//!   leave as its own segment and wake the server on its own.
//! - Each pool starts three r2d2 worker threads, and every call checks the connection out of
//!   the pool and back in (a mutex and a condition variable) even though there is only one.
//! - Connecting to a server that refuses is retried by r2d2 until the connect timeout expires:
//!   a refused connection fails after [`Options::connect_timeout`], not at once.
//! - Read and write timeouts: over TCP the URL's `timeout=` parameter sets them on every
//!   connection the crate opens. A Unix-socket connection gets them only from
//!   `Client::set_read_timeout`/`set_write_timeout`, which check a connection out of the pool
//!   first — and the default pool's checkout sends `version` on a socket that has no timeout
//!   yet. So **`memcache` and `memcache/ascii` over a Unix socket hang in `connect` if the server
//!   accepts but never answers** (seen: still blocked after 5 s with a 300 ms timeout); the
//!   no-check pools time out. And on a Unix socket, whichever the pool, a connection r2d2 opens
//!   later (after a failed check, or to replace one idle for 10 minutes or 30 minutes old) has
//!   no timeouts at all.
//! - The default pool hides a lost connection: the failed `version` check makes r2d2 open a new
//!   one (so after a server restart the next call simply works), and while the server is down
//!   each call retries for the whole connect timeout before failing.
//! - `gets` answers a `HashMap` by key: each value is copied once more into the keys' order.
//! - Expiry: memcached reads an expiration above 30 days as a Unix timestamp, and 0 as "never";
//!   `set_ex` refuses both with [`Error::InvalidInput`] rather than store something else.
//!
//! What is unfair about the comparison: the classic client has no pipelined set, so `set_many`
//! is one round trip per item (two with the checking pool), against clients that pipeline.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use kvbench_core::{
    Backend, BoxFuture, Client, ClientSpec, Concurrency, ConnectFn, Endpoint, Error, Handle,
    HostileOutcome, Kind, KnownDefect, Limitation, Operation, Options, Pipelining, Result,
    SharedClient, Transport,
};
use memcache::{ClientError, MemcacheError, ServerError};

/// The connections in the pool many callers share, whichever the protocol and checkout.
pub const POOL_CONNECTIONS: usize = 4;

/// memcached's limit for a relative expiration; larger values are absolute Unix times.
pub const MAX_RELATIVE_TTL_SECS: u32 = 30 * 24 * 60 * 60;

/// No kit behaviour is out of reach (kit keys are ASCII; values are binary-safe in both
/// protocols).
const LIMITATIONS: &[Limitation] = &[];

const NO_PIPELINE: Pipelining =
    Pipelining::OneByOne("one round trip per item: the classic memcache::Client has no multi-set");
const NO_PIPELINE_CHECKED: Pipelining = Pipelining::OneByOne(
    "two round trips per item: no multi-set, and the pool sends `version` before each set",
);

/// What the crate does on the binary-protocol hostile-server cases that are not known defects.
const BINARY_OUTCOMES: &[HostileOutcome] = kvbench_core::hostile_outcomes![
    // The rest of the header never comes: it waits until its timeout.
    "truncated_header_then_silence" => HostileOutcome::TIMED_OUT,
    "bad_magic_byte" => HostileOutcome::PROTOCOL,
    // A non-zero status is the server's answer to the command.
    "unknown_status" => HostileOutcome::SERVER,
    "closed_mid_body" => HostileOutcome::IO,
    // The timeout bounds each read, not the reply: a reply dripped a byte every 100 ms arrives
    // whole.
    "dripped_past_the_timeout" => "Ok(Some(5 bytes))",
];

/// What the crate does on the text-protocol hostile-server cases that are not known defects.
const ASCII_OUTCOMES: &[HostileOutcome] = kvbench_core::hostile_outcomes![
    // The rest of the reply never comes: it waits until its timeout.
    "truncated_reply_then_silence" => HostileOutcome::TIMED_OUT,
    "largest_allowed_value_then_silence" => HostileOutcome::TIMED_OUT,
    // It reads a status line up to `\r\n`: `END\n` is not one, so it waits for more.
    "bare_lf_in_status" => HostileOutcome::TIMED_OUT,
    // It rejects the 4 KiB line it is given.
    "line_without_end" => HostileOutcome::PROTOCOL,
    "wrong_type_byte" => HostileOutcome::PROTOCOL,
    "unknown_status_line" => HostileOutcome::PROTOCOL,
    "negative_value_length" => HostileOutcome::PROTOCOL,
    "byte_count_below_the_data" => HostileOutcome::PROTOCOL,
    "byte_count_above_the_data" => HostileOutcome::PROTOCOL,
    "value_for_another_key" => HostileOutcome::PROTOCOL,
    "incr_answered_with_a_value" => HostileOutcome::PROTOCOL,
    "get_many_value_for_a_key_not_asked" => HostileOutcome::PROTOCOL,
    "closed_mid_value" => HostileOutcome::IO,
    // The timeout bounds each read, not the reply: a reply dripped a byte every 100 ms arrives
    // whole.
    "dripped_past_the_timeout" => "Ok(Some(1 byte))",
];

/// Which memcached protocol the connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The binary protocol (the crate's default).
    Binary,
    /// The text protocol (`?protocol=ascii`).
    Ascii,
}

impl Protocol {
    /// The contract's optional operations the crate gets right on this protocol: none on the
    /// binary one (the crate docs say why).
    pub const fn operations(self) -> &'static [Operation] {
        match self {
            Protocol::Binary => &[],
            Protocol::Ascii => &[Operation::Incr, Operation::GetMany],
        }
    }
}

/// How the r2d2 pool hands out its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checkout {
    /// The crate's default: `version` round trip before every operation.
    Tested,
    /// A pool built with `test_on_check_out(false)`.
    Untested,
}

/// What memcache 0.21.0 gets wrong on a hostile server speaking the binary protocol. The
/// conformance crate's hostile-server test asserts each outcome.
pub const BINARY_DEFECTS: &[KnownDefect] = &[
    KnownDefect {
        library: "memcache",
        version: "0.21.0",
        input: "absurd_body_length",
        // The body is allocated at the length the header claims (here 4 GiB) before a byte of it
        // arrives. Where that much memory can be reserved, the call times out instead.
        outcome: "process killed by SIGABRT: memory allocation of 4294967291 bytes failed",
    },
    KnownDefect {
        library: "memcache",
        version: "0.21.0",
        input: "body_shorter_than_its_extras",
        // The value length is the body length minus the extras, unchecked: a body that claims
        // fewer bytes than its extras underflows. With overflow checks (test builds) that panics.
        outcome: "panicked: attempt to subtract with overflow",
    },
];

/// What memcache 0.21.0 gets wrong on a hostile server speaking the text protocol. The
/// conformance crate's hostile-server test asserts each outcome.
pub const ASCII_DEFECTS: &[KnownDefect] = &[KnownDefect {
    library: "memcache",
    version: "0.21.0",
    input: "absurd_value_length",
    // `VALUE k 0 99999999999`: the value buffer is allocated at the claimed length (plus the
    // CRLF) before any of it arrives, and the failed allocation aborts the process.
    outcome: "process killed by SIGABRT: memory allocation of 100000000001 bytes failed",
}];

/// Binary protocol, default pool (`memcache::connect` plus timeouts).
pub const SPEC_BINARY: ClientSpec = spec(
    "memcache",
    "memcache 0.21 binary protocol, Client::builder() pool (max 1, version sent on every checkout), timeouts from Options",
    NO_PIPELINE_CHECKED,
    Protocol::Binary,
    |endpoint, options| connect_boxed(endpoint, options, Protocol::Binary, Checkout::Tested),
    Concurrency::Pool {
        connections: POOL_CONNECTIONS,
        connect: |endpoint, options, size| pooled(endpoint, options, size, Protocol::Binary),
    },
);

/// Binary protocol, pool without the checkout test.
pub const SPEC_BINARY_NO_CHECK: ClientSpec = spec(
    "memcache/no-check",
    "memcache 0.21 binary protocol, r2d2 pool built with test_on_check_out(false) + Client::with_pool, timeouts from Options; many callers get a client each (a shared no-check pool reuses a timed-out connection)",
    NO_PIPELINE,
    Protocol::Binary,
    |endpoint, options| connect_boxed(endpoint, options, Protocol::Binary, Checkout::Untested),
    // Not shared: see the crate docs on why a no-check pool must not be.
    Concurrency::Threads,
);

/// Text protocol, default pool.
pub const SPEC_ASCII: ClientSpec = spec(
    "memcache/ascii",
    "memcache 0.21 text protocol (?protocol=ascii), Client::builder() pool (max 1, version sent on every checkout), timeouts from Options",
    NO_PIPELINE_CHECKED,
    Protocol::Ascii,
    |endpoint, options| connect_boxed(endpoint, options, Protocol::Ascii, Checkout::Tested),
    Concurrency::Pool {
        connections: POOL_CONNECTIONS,
        connect: |endpoint, options, size| pooled(endpoint, options, size, Protocol::Ascii),
    },
);

/// Text protocol, pool without the checkout test.
pub const SPEC_ASCII_NO_CHECK: ClientSpec = spec(
    "memcache/ascii/no-check",
    "memcache 0.21 text protocol (?protocol=ascii), r2d2 pool built with test_on_check_out(false) + Client::with_pool, timeouts from Options; many callers get a client each (a shared no-check pool reuses a timed-out connection)",
    NO_PIPELINE,
    Protocol::Ascii,
    |endpoint, options| connect_boxed(endpoint, options, Protocol::Ascii, Checkout::Untested),
    Concurrency::Threads,
);

const fn spec(
    name: &'static str,
    summary: &'static str,
    pipelining: Pipelining,
    protocol: Protocol,
    connect: ConnectFn,
    concurrency: Concurrency,
) -> ClientSpec {
    let (known_defects, hostile_outcomes) = match protocol {
        Protocol::Binary => (BINARY_DEFECTS, BINARY_OUTCOMES),
        Protocol::Ascii => (ASCII_DEFECTS, ASCII_OUTCOMES),
    };
    ClientSpec {
        name,
        backend: Backend::Memcached,
        transports: Transport::ALL,
        kind: Kind::Library,
        summary,
        pipelining,
        limitations: LIMITATIONS,
        slow_round_trip: None,
        known_defects,
        hostile_outcomes,
        loopback_floor: false,
        connect,
        connect_async: None,
        concurrency,
        operations: protocol.operations(),
    }
}

/// The crate's URL for an endpoint: `memcache://host:port?timeout=S` or `memcache:///path`,
/// with `protocol=ascii` for the text protocol.
pub fn url(endpoint: &Endpoint, protocol: Protocol, options: &Options) -> String {
    let mut query = Vec::new();
    let url = match endpoint {
        Endpoint::Tcp(addr) => {
            // Applied by the crate to every TCP connection it opens (read and write alike).
            let timeout = options.read_timeout.max(options.write_timeout);
            query.push(format!("timeout={}", timeout.as_secs_f64()));
            format!("memcache://{addr}")
        }
        Endpoint::Unix(path) => format!("memcache://{}", path.display()),
    };
    if protocol == Protocol::Ascii {
        query.push("protocol=ascii".to_string());
    }
    if query.is_empty() {
        url
    } else {
        format!("{url}?{}", query.join("&"))
    }
}

/// Maps a `memcache` error to the contract's error.
pub fn map_error(err: MemcacheError) -> Error {
    match err {
        MemcacheError::IOError(io_err) => Error::from(io_err),
        // `SERVER_ERROR ...` (text) is read as one whole line; the server swallows the rest of
        // the request, so the connection is still in step.
        MemcacheError::ServerError(ServerError::Error(line)) => {
            Error::Server(line.trim_end().to_string())
        }
        MemcacheError::ServerError(other) => Error::Protocol(other.to_string()),
        // A non-zero binary status (too large, invalid arguments, ...) or `ERROR` (text): the
        // server's answer, read whole.
        MemcacheError::CommandError(command) => Error::Server(command.to_string()),
        MemcacheError::ClientError(ClientError::KeyTooLong) => {
            Error::InvalidInput("memcached keys are at most 250 bytes".into())
        }
        MemcacheError::ClientError(ClientError::Error(text)) => {
            if text.starts_with("CLIENT_ERROR") {
                Error::Server(text.trim_end().to_string())
            } else if text == "Ascii protocol no line found" {
                // The crate's name for end of stream while waiting for a reply line.
                Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, text))
            } else {
                Error::Protocol(text.into_owned())
            }
        }
        MemcacheError::ParseError(parse) => Error::Protocol(parse.to_string()),
        MemcacheError::BadURL(text) => Error::InvalidInput(text),
        // r2d2 gave up getting a connection within the connect timeout.
        MemcacheError::PoolError(pool) => Error::Io(io::Error::other(pool.to_string())),
    }
}

/// One `memcache::Client` (its pool of one connection, or of [`POOL_CONNECTIONS`] that callers
/// share) and the protocol it speaks. A clone shares the client and its pool.
#[derive(Clone)]
pub struct Memcache {
    client: Arc<memcache::Client>,
    protocol: Protocol,
}

impl Memcache {
    /// Builds the pool (which opens its connection) and sets the socket timeouts.
    pub fn connect(
        endpoint: &Endpoint,
        options: &Options,
        protocol: Protocol,
        checkout: Checkout,
    ) -> Result<Memcache> {
        if checkout == Checkout::Untested {
            return Memcache::connect_pool(endpoint, options, protocol, checkout, 1);
        }
        let client = memcache::Client::builder()
            .add_server(url(endpoint, protocol, options))
            .and_then(|builder| {
                builder
                    .with_connection_timeout(options.connect_timeout)
                    .with_read_timeout(options.read_timeout)
                    .with_write_timeout(options.write_timeout)
                    .build()
            })
            .map_err(|err| connect_failed(endpoint, err))?;
        Ok(Memcache {
            client: Arc::new(client),
            protocol,
        })
    }

    /// Builds an r2d2 pool of `connections` connections by hand, tested on checkout or not as
    /// `checkout` says, hands it to `Client::with_pool` and gives every connection the socket
    /// timeouts. Many callers share the result: each [`SharedClient::handle`] is a clone.
    pub fn connect_pool(
        endpoint: &Endpoint,
        options: &Options,
        protocol: Protocol,
        checkout: Checkout,
        connections: usize,
    ) -> Result<Memcache> {
        let size = u32::try_from(connections)
            .ok()
            .filter(|&size| size > 0)
            .ok_or_else(|| Error::InvalidInput(format!("a pool of {connections} connections")))?;
        let url = url(endpoint, protocol, options);
        let url = memcache::Url::parse(&url)
            .map_err(|err| Error::InvalidInput(format!("{url}: {err}")))?;
        // ANCHOR: no_check_pool
        let pool = memcache::Pool::builder()
            .max_size(size)
            .test_on_check_out(checkout == Checkout::Tested)
            .connection_timeout(options.connect_timeout)
            .build(memcache::ConnectionManager::new(url))
            .map_err(|err| connect_failed(endpoint, err.into()))?;
        // ANCHOR_END: no_check_pool
        let client = memcache::Client::with_pool(pool.clone())
            .and_then(|client| set_timeouts(&client, &pool, options).map(|()| client))
            .map_err(|err| connect_failed(endpoint, err))?;
        Ok(Memcache {
            client: Arc::new(client),
            protocol,
        })
    }

    /// The underlying client.
    pub fn client(&self) -> &memcache::Client {
        &self.client
    }

    /// `Err(Unsupported)`, before anything is sent, for an optional operation the protocol does
    /// not offer.
    fn offers(&self, operation: Operation) -> Result<()> {
        if self.protocol.operations().contains(&operation) {
            Ok(())
        } else {
            Err(operation.unsupported())
        }
    }

    /// The key as the `&str` the crate takes, or why it cannot be sent.
    fn key<'k>(&self, key: &'k [u8]) -> Result<&'k str> {
        let key = std::str::from_utf8(key).map_err(|_| {
            Error::InvalidInput("memcache takes &str keys: key is not UTF-8".into())
        })?;
        let unsafe_in_text = |b: u8| b <= b' ' || b == 0x7f;
        if self.protocol == Protocol::Ascii && (key.is_empty() || key.bytes().any(unsafe_in_text)) {
            return Err(Error::InvalidInput(
                "text protocol keys cannot be empty or hold spaces or control characters".into(),
            ));
        }
        Ok(key)
    }
}

/// Gives every connection of `pool` the socket timeouts. Over TCP the URL's `timeout=` did as
/// each connection opened; a Unix socket gets them only from `Client::set_read_timeout` and
/// `set_write_timeout`, which reach the one connection they check out. So every connection is
/// held but one at a time, and the setters meet the only idle one.
fn set_timeouts(
    client: &memcache::Client,
    pool: &memcache::Pool,
    options: &Options,
) -> Result<(), MemcacheError> {
    let mut held = Vec::new();
    while let Some(connection) = pool.try_get() {
        held.push(connection);
    }
    for _ in 0..held.len() {
        drop(held.remove(0));
        client.set_read_timeout(Some(options.read_timeout))?;
        client.set_write_timeout(Some(options.write_timeout))?;
        held.push(pool.get()?);
    }
    Ok(())
}

fn connect_failed(endpoint: &Endpoint, err: MemcacheError) -> Error {
    map_error(err).while_connecting(endpoint)
}

impl SharedClient for Memcache {
    /// A clone: the same client and pool; each call checks a connection out for itself.
    fn handle(&self) -> Handle {
        Handle::Blocking(Box::new(self.clone()))
    }
}

/// The shared client of [`Concurrency::Pool`]: a checking pool of `size` connections.
fn pooled<'a>(
    endpoint: &'a Endpoint,
    options: &'a Options,
    size: usize,
    protocol: Protocol,
) -> BoxFuture<'a, Box<dyn SharedClient>> {
    // Blocking: the pool is opened when the future is first polled, and the future is ready then.
    Box::pin(async move {
        let shared = Memcache::connect_pool(endpoint, options, protocol, Checkout::Tested, size)?;
        Ok(Box::new(shared) as Box<dyn SharedClient>)
    })
}

fn connect_boxed(
    endpoint: &Endpoint,
    options: &Options,
    protocol: Protocol,
    checkout: Checkout,
) -> Result<Box<dyn Client>> {
    Ok(Box::new(Memcache::connect(
        endpoint, options, protocol, checkout,
    )?))
}

impl Client for Memcache {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let key = self.key(key)?;
        self.client.get(key).map_err(map_error)
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let key = self.key(key)?;
        self.client.set(key, value, 0).map_err(map_error)
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        let key = self.key(key)?;
        if ttl_secs == 0 || ttl_secs > MAX_RELATIVE_TTL_SECS {
            return Err(Error::InvalidInput(format!(
                "memcached reads an expiration of {ttl_secs} as {}; relative TTLs are 1..={MAX_RELATIVE_TTL_SECS} s",
                if ttl_secs == 0 {
                    "never"
                } else {
                    "a Unix time"
                }
            )));
        }
        self.client.set(key, value, ttl_secs).map_err(map_error)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let key = self.key(key)?;
        self.client.delete(key).map_err(map_error)
    }

    /// `incr <key> 1`, on the text protocol only.
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.offers(Operation::Incr)?;
        let key = self.key(key)?;
        let value = self.client.increment(key, 1).map_err(map_error)?;
        // memcached counters are unsigned 64-bit; the contract's are `i64`.
        i64::try_from(value)
            .map_err(|_| Error::Server(format!("counter {value} is above i64::MAX")))
    }

    /// `gets k1 … kN`, on the text protocol only. The crate answers a map by key, so each value
    /// is copied once more into the keys' order (twice for a key asked twice).
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.offers(Operation::GetMany)?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<&str> = keys
            .iter()
            .map(|key| self.key(key))
            .collect::<Result<_>>()?;
        let found: HashMap<String, Vec<u8>> = self.client.gets(&keys).map_err(map_error)?;
        Ok(keys.iter().map(|&key| found.get(key).cloned()).collect())
    }
}
