//! [redis-rs](https://docs.rs/redis/1.8) behind the kvbench contract: the yardstick the hand-written
//! Redis clients are measured against. What it shows is what a general-purpose client adds to
//! each call — typed commands, a reply parser for every RESP type and, in the async client, a
//! multiplexer driven by a runtime — in exchange for the features the minimal clients give up.
//! Compare its sync client with `raw-tcp`, and its `pipe()` with `buffered`.
//!
//! It is longer than a hand-written client (about 380 code lines to their ~300) because it
//! adapts two clients, the synchronous connection and the async multiplexer, and puts the second
//! behind three faces (async, shared by many callers, blocking); each has every optional
//! operation in the library's own calls, and each spec records what the library does on every
//! hostile-server case.
//!
//! Two clients, both configured the way its documentation shows:
//!
//! - **`redis-rs`** — the synchronous [`redis::Connection`] from
//!   `Client::open(url)?.get_connection_with_timeout(connect_timeout)`, then
//!   `set_read_timeout`/`set_write_timeout` from [`Options`]. Commands go through the generic
//!   [`redis::Commands`] methods (`get`, `set`, `set_ex`, `del`), `set_many` through one
//!   [`redis::pipe()`] with `.ignore()` on every `SET`.
//! - **`redis-rs/async`** — a [`MultiplexedConnection`] from
//!   `get_multiplexed_async_connection_with_config`, with the connection and response timeouts
//!   taken from [`Options`]. The adapter owns a current-thread tokio runtime and `block_on`s each
//!   call; [`AsyncRedis`] (over [`connect_async`]) is its natively async face, which the spec
//!   declares (`ClientSpec::connect_async`) so that the bench drives it without a `block_on`.
//!   For many callers it is multiplexed (`Concurrency::Multiplexed`): one connection opened,
//!   and each caller's handle a clone of it. The connection's driver task matches replies to
//!   requests by their order on the one socket and ends when the last clone is dropped.
//!   `redis-rs` serves many callers the default way: a thread and a connection each.
//!
//! Both implement every optional operation of the contract with redis-rs's own calls: `incr`
//! (`incr(key, 1)`, sent as `INCRBY key 1`), `get_many` (`mget`, which sends `MGET` and gets an
//! array back for one key as for many), `get_many_pipelined` (one `redis::pipe()` of `GET`s),
//! `hset_many` (`hset_multiple`, sent as `HMSET`, the older name of a many-field `HSET`),
//! `hgetall` (into `Vec<(Vec<u8>, Vec<u8>)>`, in the server's order) and `transaction`
//! (`redis::pipe().atomic()` with the `SET`s, `EXEC`'s reply checked for one `OK` per `SET`).
//! An atomic pipeline is one packed request, so on the multiplexed connection no other caller's
//! command can land between `MULTI` and `EXEC`. An `MGET` reply of another length than its keys
//! is [`Error::Protocol`]; an empty batch sends nothing.
//!
//! What a user pays for, beyond the bytes on the wire:
//!
//! - Every call builds a [`redis::Cmd`] (argument vector, then packed bytes) and decodes the
//!   reply into a [`redis::Value`] tree before converting it to the requested type: one extra
//!   allocation and copy per value compared to a client that reads straight into the caller's
//!   buffer.
//! - Connecting sends `CLIENT SETINFO LIB-NAME` and `LIB-VER` (one pipelined round trip).
//! - TCP sockets keep Nagle's algorithm on (`TcpSettings::nodelay` defaults to `false`); every
//!   request is written with one `write`, so a request/response client does not wait on it.
//! - The multiplexed connection hands each request to a driver task over a channel and gets the
//!   reply back over a oneshot, arming a tokio timer for the response timeout (500 ms by
//!   default; here [`Options::read_timeout`]). From a blocking caller this adds a `block_on`
//!   and a few task wake-ups per call.
//! - The synchronous pipeline writes all commands before reading any reply. Redis queues the
//!   replies (normal clients have no output-buffer limit), so it does not deadlock here, but the
//!   whole packed pipeline is held in memory first.
//!
//! What is unfair about the comparison: redis-rs is general (RESP3, cluster, pub/sub, scripts,
//! typed conversions), and its generality is part of what is measured; the hand-written clients
//! implement four commands. The async client is measured through `block_on` in the synchronous
//! suite, which charges it for a runtime the bench could otherwise amortise: compare with the
//! bench's native async runs of [`AsyncRedis`].
#![deny(missing_docs)]

mod cluster;

use std::io;

use kvbench_core::{
    Backend, Client, ClientSpec, Concurrency, ConnectShared, Endpoint, Error, Handle,
    HostileOutcome, Kind, KnownDefect, Operation, Options, Pipelining, Result, SharedClient,
    Transport, connect_shared_boxed,
};
use redis::aio::MultiplexedConnection;
use redis::{
    AsyncCommands, AsyncConnectionConfig, Commands, ErrorKind, Pipeline, RedisError, RedisResult,
    Value,
};

pub use crate::cluster::{
    ASYNC_CLUSTER_DEFECTS, AsyncRedisCluster, IN_FLIGHT, RedisClusterSync, SPEC_CLUSTER_ASYNC,
    SPEC_CLUSTER_SYNC, SYNC_CLUSTER_DEFECTS, cluster_client, connect_cluster_async,
};

/// What redis-rs 1.8.1 gets wrong on a hostile server (both connections share the parser). The
/// conformance crate's hostile-server test asserts each outcome.
pub const KNOWN_DEFECTS: &[KnownDefect] = &[KnownDefect {
    library: "redis",
    version: "1.8.1",
    input: "negative_bulk_length",
    // RESP's only negative bulk length is -1 (nil); `$-5` is malformed, but reads as a miss.
    outcome: "Ok(None)",
}];

/// What both connections do on the hostile-server cases that are not known defects (they share
/// the parser), followed by `$differs`: the cases where the two differ.
macro_rules! redis_rs_outcomes {
    ($($differs:tt)*) => {
        kvbench_core::hostile_outcomes![
            // The rest of the reply never comes: it waits until its timeout, holding at most
            // what arrived (an absurd length is not allocated up front).
            "truncated_reply_then_silence" => HostileOutcome::TIMED_OUT,
            "absurd_bulk_length" => HostileOutcome::TIMED_OUT,
            "absurd_array_length" => HostileOutcome::TIMED_OUT,
            "largest_allowed_bulk_then_silence" => HostileOutcome::TIMED_OUT,
            // It reads a 100 KiB line and waits for its end.
            "line_without_end" => HostileOutcome::TIMED_OUT,
            // `!` is RESP3's blob error: `!5\r\nhello\r\n` reads as an error reply `hello`.
            "wrong_type_byte" => HostileOutcome::SERVER,
            "reply_of_the_wrong_type" => HostileOutcome::PROTOCOL,
            "missing_crlf_after_bulk" => HostileOutcome::PROTOCOL,
            "deeply_nested_arrays" => HostileOutcome::PROTOCOL,
            "bare_lf_in_header" => HostileOutcome::PROTOCOL,
            // A bulk `42` where INCR's integer belongs converts to the number it holds.
            "incr_answered_with_a_bulk" => "Ok(42)",
            "mget_array_too_short" => HostileOutcome::PROTOCOL,
            "mget_array_too_long" => HostileOutcome::PROTOCOL,
            "mget_absurd_array_length" => HostileOutcome::TIMED_OUT,
            "mget_largest_allowed_array_then_silence" => HostileOutcome::TIMED_OUT,
            "exec_nil" => HostileOutcome::SERVER,
            "exec_execabort" => HostileOutcome::PROTOCOL,
            "exec_array_too_short" => HostileOutcome::PROTOCOL,
            "exec_array_too_long" => HostileOutcome::PROTOCOL,
            "exec_after_a_missing_queued" => HostileOutcome::TIMED_OUT,
            $($differs)*
        ]
    };
}

/// The synchronous redis-rs client.
pub const SPEC_SYNC: ClientSpec = ClientSpec {
    name: "redis-rs",
    backend: Backend::Redis,
    transports: Transport::ALL,
    kind: Kind::Library,
    summary: "redis 1.8 sync Connection (get_connection_with_timeout + socket read/write timeouts), \
              typed Commands, default features without TLS",
    pipelining: Pipelining::Pipelined(
        "one redis::pipe() with .ignore() per SET, written whole, then all replies read",
    ),
    // No kit behaviour is out of reach for it.
    limitations: &[],
    slow_round_trip: None,
    known_defects: KNOWN_DEFECTS,
    hostile_outcomes: redis_rs_outcomes![
        "closed_mid_bulk" => HostileOutcome::IO,
        // The timeout bounds each read, not the reply: a reply dripped a byte every 100 ms
        // arrives whole.
        "dripped_past_the_timeout" => "Ok(Some(1 byte))",
    ],
    loopback_floor: false,
    connect: connect_sync_boxed,
    connect_async: None,
    concurrency: Concurrency::Threads,
    operations: Operation::ALL,
};

/// The multiplexed async redis-rs client, driven from a blocking caller.
pub const SPEC_ASYNC: ClientSpec = ClientSpec {
    name: "redis-rs/async",
    backend: Backend::Redis,
    transports: Transport::ALL,
    kind: Kind::Library,
    summary: "redis 1.8 MultiplexedConnection (tokio-comp, connection/response timeouts from Options), \
              block_on on an owned current-thread runtime per call",
    pipelining: Pipelining::Pipelined(
        "one redis::pipe() with .ignore() per SET, sent through the multiplexer as one request",
    ),
    // No kit behaviour is out of reach for it.
    limitations: &[],
    slow_round_trip: None,
    known_defects: KNOWN_DEFECTS,
    hostile_outcomes: redis_rs_outcomes![
        // The end of the stream mid-reply is reported as a parse error.
        "closed_mid_bulk" => HostileOutcome::PROTOCOL,
        // The response timeout bounds the whole command.
        "dripped_past_the_timeout" => HostileOutcome::TIMED_OUT,
    ],
    loopback_floor: false,
    connect: connect_blocking_async_boxed::<AsyncRedis>,
    connect_async: Some(connect_async_boxed),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<AsyncRedis>),
    operations: Operation::ALL,
};

/// The redis-rs connection URL for an endpoint: `redis://host:port/` or `redis+unix:///path`.
pub fn url(endpoint: &Endpoint) -> String {
    endpoint.redis_url()
}

/// Maps a redis-rs error to the contract's error, by what happened rather than by message.
pub fn map_error(err: RedisError) -> Error {
    // redis-rs keeps the `io::Error` private; its predicates are the public view of it.
    if err.is_timeout() {
        return Error::Timeout(err.to_string());
    }
    match err.kind() {
        // Error replies from the server (`-WRONGTYPE ...`, `-ERR ...`), including the first
        // failed reply of a pipeline. The whole reply was read: the connection is in step.
        ErrorKind::Server(_) | ErrorKind::Extension | ErrorKind::AuthenticationFailed => {
            Error::Server(err.to_string())
        }
        ErrorKind::Io if err.is_connection_refusal() => Error::Io(io::Error::new(
            io::ErrorKind::ConnectionRefused,
            err.to_string(),
        )),
        ErrorKind::Io => Error::Io(io::Error::other(err.to_string())),
        // The reply was not RESP, or not the type the command promises.
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType => Error::Protocol(err.to_string()),
        ErrorKind::InvalidClientConfig => Error::InvalidInput(err.to_string()),
        // Only the cluster clients report these: no connection to the node a slot belongs to,
        // or no node known for a slot (the slot map could not be read).
        ErrorKind::ClusterConnectionNotFound | ErrorKind::Client => {
            Error::Io(io::Error::new(io::ErrorKind::NotConnected, err.to_string()))
        }
        _ => Error::Unsupported(err.to_string()),
    }
}

fn connect_failed(endpoint: &Endpoint, err: RedisError) -> Error {
    map_error(err).while_connecting(endpoint)
}

/// One `GET` per key, in one pipeline: written whole, then every reply read.
fn pipelined_gets(keys: &[&[u8]]) -> Pipeline {
    let mut pipe = redis::pipe();
    for &key in keys {
        pipe.get(key);
    }
    pipe
}

/// The `SET`s inside `MULTI` … `EXEC` (`atomic()`): one packed request, so on the multiplexed
/// connection no other caller's command can land between `MULTI` and `EXEC`.
fn transaction_of_sets(items: &[(&[u8], &[u8])]) -> Pipeline {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for &(key, value) in items {
        pipe.set(key, value);
    }
    pipe
}

/// `EXEC`'s reply, as `query::<Value>` hands it over: nil when the server aborted the
/// transaction, else one reply per `SET`, each of which must be `OK`.
fn check_exec(reply: Value, sets: usize) -> Result<()> {
    match reply {
        Value::Nil => Err(Error::Server(
            "EXEC answered nil: transaction aborted".into(),
        )),
        Value::Array(replies)
            if replies.len() == sets && replies.iter().all(|reply| *reply == Value::Okay) =>
        {
            Ok(())
        }
        other => Err(Error::Protocol(format!(
            "EXEC of {sets} SETs answered {other:?}"
        ))),
    }
}

/// What the synchronous client sends differently on one server and on a cluster: the batches
/// and the transaction. The one-key commands are the same on any [`redis::ConnectionLike`].
pub trait SyncConnection: redis::ConnectionLike + Send {
    /// [`Client::set_many`], `items` not empty.
    fn send_sets(&mut self, items: &[(&[u8], &[u8])]) -> RedisResult<()>;

    /// [`Client::get_many_pipelined`], `keys` not empty.
    fn send_gets(&mut self, keys: &[&[u8]]) -> RedisResult<Vec<Option<Vec<u8>>>>;

    /// [`Client::transaction`]: nothing is sent for no items.
    fn send_transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()>;
}

impl SyncConnection for redis::Connection {
    // ANCHOR: redis_sync_set_many
    fn send_sets(&mut self, items: &[(&[u8], &[u8])]) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for &(key, value) in items {
            pipe.set(key, value).ignore();
        }
        pipe.exec(self)
    }
    // ANCHOR_END: redis_sync_set_many

    fn send_gets(&mut self, keys: &[&[u8]]) -> RedisResult<Vec<Option<Vec<u8>>>> {
        // redis-rs reads one reply per command of the pipeline, no more, no less.
        pipelined_gets(keys).query(self)
    }

    fn send_transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let reply = transaction_of_sets(items).query(self);
        check_exec(reply.map_err(map_error)?, items.len())
    }
}

/// The synchronous client: one [`redis::Connection`], or the cluster's connection
/// ([`RedisClusterSync`]).
pub struct RedisSync<C = redis::Connection> {
    con: C,
}

impl RedisSync {
    /// Connects with the connect timeout, then sets the socket read and write timeouts.
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<RedisSync> {
        let fail = |err| connect_failed(endpoint, err);
        let client = redis::Client::open(url(endpoint)).map_err(fail)?;
        let con = client
            .get_connection_with_timeout(options.connect_timeout)
            .map_err(fail)?;
        con.set_read_timeout(Some(options.read_timeout))
            .map_err(fail)?;
        con.set_write_timeout(Some(options.write_timeout))
            .map_err(fail)?;
        Ok(RedisSync { con })
    }
}

impl<C> RedisSync<C> {
    /// The underlying connection, for anything beyond the contract.
    pub fn connection(&mut self) -> &mut C {
        &mut self.con
    }
}

fn connect_sync_boxed(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    Ok(Box::new(<RedisSync>::connect(endpoint, options)?))
}

impl<C: SyncConnection> Client for RedisSync<C> {
    // ANCHOR: redis_sync_get
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.con.get(key).map_err(map_error)
    }
    // ANCHOR_END: redis_sync_get

    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.con.set(key, value).map_err(map_error)
    }

    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.con
            .set_ex(key, value, u64::from(ttl_secs))
            .map_err(map_error)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let removed: usize = self.con.del(key).map_err(map_error)?;
        Ok(removed > 0)
    }

    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        self.con.send_sets(items).map_err(map_error)
    }

    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values = self.con.send_gets(keys).map_err(map_error)?;
        kvbench_core::one_per_key(values, keys.len())
    }

    /// `INCRBY key 1`: what redis-rs's `incr` sends.
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.con.incr(key, 1).map_err(map_error)
    }

    /// `MGET`, which a cluster connection splits into one `MGET` per slot.
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        kvbench_core::one_per_key(self.con.mget(keys).map_err(map_error)?, keys.len())
    }

    /// `HMSET`: what redis-rs's `hset_multiple` sends (the older name of a many-field `HSET`).
    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        if fields.is_empty() {
            return Ok(());
        }
        self.con.hset_multiple(key, fields).map_err(map_error)
    }

    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.con.hgetall(key).map_err(map_error)
    }

    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.con.send_transaction(items)
    }
}

/// Opens a multiplexed async connection with the connection and response timeouts from
/// `options`. Must be awaited inside a tokio runtime (the connection spawns its driver task).
///
/// The response timeout bounds a whole request (write and reply): redis-rs has no separate
/// write timeout for async connections, so the larger of `read_timeout` and `write_timeout` is
/// used.
// ANCHOR: connect_async
pub async fn connect_async(
    endpoint: &Endpoint,
    options: &Options,
) -> Result<MultiplexedConnection> {
    let fail = |err| connect_failed(endpoint, err);
    let client = redis::Client::open(url(endpoint)).map_err(fail)?;
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(Some(options.read_timeout.max(options.write_timeout)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(fail)
}
// ANCHOR_END: connect_async

/// The contract's operations as async methods on a redis-rs async connection `C` (a
/// [`MultiplexedConnection`] unless named; [`AsyncRedisCluster`] is the cluster's), for the
/// bench to drive natively. Cloning is cheap and shares the connection (that is the
/// multiplexer). The one-key commands are the same on any connection; how a batch is sent
/// depends on it.
#[derive(Clone)]
pub struct AsyncRedis<C = MultiplexedConnection> {
    con: C,
}

impl AsyncRedis {
    /// Connects; see [`connect_async`].
    pub async fn connect(endpoint: &Endpoint, options: &Options) -> Result<AsyncRedis> {
        Ok(AsyncRedis {
            con: connect_async(endpoint, options).await?,
        })
    }

    /// One pipeline of `SET`s, every reply ignored unless it is an error.
    pub async fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let mut pipe = redis::pipe();
        for &(key, value) in items {
            pipe.set(key, value).ignore();
        }
        pipe.exec_async(&mut self.con).await.map_err(map_error)
    }

    /// One pipeline of `GET`s, sent through the multiplexer as one request.
    pub async fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values = pipelined_gets(keys).query_async(&mut self.con).await;
        values.map_err(map_error)
    }

    /// `MULTI`, the `SET`s, `EXEC`: one request through the multiplexer.
    pub async fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let reply = transaction_of_sets(items).query_async(&mut self.con).await;
        check_exec(reply.map_err(map_error)?, items.len())
    }
}

impl<C: redis::aio::ConnectionLike + Send + Sync> AsyncRedis<C> {
    /// The underlying connection.
    pub fn connection(&self) -> &C {
        &self.con
    }

    /// `GET key`: `Some(bytes)` on a hit.
    pub async fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.con.get(key).await.map_err(map_error)
    }

    /// `SET key value`.
    pub async fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.con.set(key, value).await.map_err(map_error)
    }

    /// `SETEX key ttl value`.
    pub async fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.con
            .set_ex(key, value, u64::from(ttl_secs))
            .await
            .map_err(map_error)
    }

    /// `DEL key`: whether it existed.
    pub async fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let removed: usize = self.con.del(key).await.map_err(map_error)?;
        Ok(removed > 0)
    }

    /// `INCRBY key 1`: the new value.
    pub async fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.con.incr(key, 1).await.map_err(map_error)
    }

    /// `MGET key …`: one value per key, `None` for a miss (a cluster connection splits it
    /// into one `MGET` per slot).
    pub async fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values = self.con.mget(keys).await.map_err(map_error)?;
        kvbench_core::one_per_key(values, keys.len())
    }

    /// `HMSET key field value …`.
    pub async fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        if fields.is_empty() {
            return Ok(());
        }
        self.con.hset_multiple(key, fields).await.map_err(map_error)
    }

    /// `HGETALL key`: every field and value, in the server's order.
    pub async fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.con.hgetall(key).await.map_err(map_error)
    }
}

kvbench_core::impl_async_client_by_boxing!(AsyncRedis, connect_async_boxed;
    get_many_pipelined, incr, get_many, hash, transaction);

impl<C: Clone + Send + Sync + 'static> SharedClient for AsyncRedis<C>
where
    AsyncRedis<C>: kvbench_core::AsyncClient,
{
    /// A clone: another sender into the same driver task, so no new connection.
    fn handle(&self) -> Handle {
        Handle::Async(Box::new(self.clone()))
    }
}

impl ConnectShared for AsyncRedis {
    /// Connects once for any number of callers (`connections` is 1 under this model, and
    /// unused): each caller's handle is a clone of the one multiplexed connection.
    async fn connect_shared(
        endpoint: &Endpoint,
        options: &Options,
        _connections: usize,
    ) -> Result<AsyncRedis> {
        <AsyncRedis>::connect(endpoint, options).await
    }
}

/// An async client `A` ([`AsyncRedis`] unless named) behind the synchronous contract: it owns a
/// current-thread runtime and blocks on each call. The driver task runs only while a call is
/// being blocked on.
pub struct BlockingAsyncRedis<A = AsyncRedis> {
    inner: A,
    runtime: kvbench_block_on::Runtime,
}

impl<A: ConnectShared> BlockingAsyncRedis<A> {
    /// Builds the runtime and connects on it (one connection, as for one caller).
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<BlockingAsyncRedis<A>> {
        let connect = A::connect_shared(endpoint, options, 1);
        let (runtime, inner) = kvbench_block_on::connect_on_own_runtime(connect)?;
        Ok(BlockingAsyncRedis { inner, runtime })
    }
}

fn connect_blocking_async_boxed<A: ConnectShared>(
    endpoint: &Endpoint,
    options: &Options,
) -> Result<Box<dyn Client>>
where
    BlockingAsyncRedis<A>: Client,
{
    Ok(Box::new(BlockingAsyncRedis::<A>::connect(
        endpoint, options,
    )?))
}

kvbench_core::impl_client_by_blocking_on!(BlockingAsyncRedis;
    get_many_pipelined, incr, get_many, hash, transaction);
