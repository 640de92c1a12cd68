//! [fred](https://docs.rs/fred/10.1) behind the kvbench contract: an async, tokio-based Redis
//! client, measured against the hand-written clients and against redis-rs (`kvbench-lib-redis`).
//! What it shows is the cost of a client built for many concurrent callers (a command queue and
//! a runtime) when one caller waits for each reply, and what it gives back when many callers
//! share it. Compare it with `redis-rs/async` and, for pipelines, with `buffered`; compare `fred`
//! with `fred/pool` for what several connections buy many callers over one.
//!
//! It is longer than a hand-written client (about 350 code lines to their ~300) because fred is
//! async only: its client and its pool each need the async face, the shared face and a blocking
//! face on a runtime of their own, with the optional operations in fred's calls, and each spec
//! records the library's known defects and what it does on every hostile-server case.
//!
//! Configured the way fred's README shows: `Config::from_url(url)`,
//! `Builder::from_config(config).build()`, `client.init().await`, then the typed
//! [`KeysInterface`] commands — `get`, `set` (with `Some(Expiration::EX(secs))` for `set_ex`),
//! `del` — and `client.pipeline()` … `all().await` for `set_many`. The feature set is fred's
//! default (`transactions`, `i-std`) plus `unix-sockets`; no TLS. From [`Options`]:
//! `connection_timeout` and `internal_command_timeout` (the handshake) take the connect timeout,
//! `default_command_timeout` takes the larger of the read and write timeouts (fred times a
//! command as a whole; it has no separate write timeout). No reconnect policy is set, so a lost
//! connection is not replaced behind the caller's back. But it does not fail fast either: a
//! command in flight when the server closes the connection gets an I/O error, but one sent on a
//! connection the server closed while it was idle waits until the command timeout expires
//! (without `default_command_timeout`, fred's default of 0, it would wait forever): fred does not
//! notice the close (a known defect, in [`KNOWN_DEFECTS`]). The contract's callers reconnect after
//! the first I/O error.
//!
//! Two specs, one per way fred serves many callers:
//!
//! - **`fred`** — one `Client`. Many callers share it (`Concurrency::Multiplexed`): each
//!   caller's handle is a clone, and fred's router queues their commands on the one connection
//!   (feeding up to 200 before a flush) and answers each caller over its own oneshot.
//! - **`fred/pool`** — fred's round-robin `Pool` of [`POOL_CONNECTIONS`] clients,
//!   `Builder::from_config(config).build_pool(n)`: each command goes out on the pool's next
//!   client (`Concurrency::Pool`; a pipeline or a transaction on one client, `pool.next()`).
//!   A single caller gets the same pool, so its commands take turns over the connections.
//!
//! Both implement every optional operation of the contract with fred's own calls: `incr`,
//! `mget` for `get_many`, a pipeline of `GET`s for `get_many_pipelined`, [`HashesInterface`]'s
//! `hset` and `hgetall`, and `client.multi()` … `exec(true)` for `transaction` (`EXEC`'s reply
//! checked for one `OK` per `SET`). `hgetall` answers in no particular order: fred collects the
//! reply into its `Map`, a `HashMap`, before anything else sees it, so the server's order is
//! lost. A transaction runs alone on its connection: fred's router first waits for every
//! command in flight to be answered, then writes `MULTI` … `EXEC` and reads their replies
//! before it writes anything else, so another caller's command never lands inside it (it waits
//! meanwhile). An `MGET` reply of another length than its keys is [`Error::Protocol`]; an empty
//! batch sends nothing.
//!
//! What a user pays for, beyond the bytes on the wire:
//!
//! - Connecting sends `PING`, `CLIENT ID` and `INFO server` before the first command (one round
//!   trip each).
//! - Every command is a task hop: the caller's future sends a `Command` to fred's router task
//!   over a channel, the router writes it, a reader task decodes the reply and answers over a
//!   oneshot. From a blocking caller, add a `block_on` and the wake-ups of those tasks.
//! - Keys and values are copied into `Bytes`; every bulk reply is checked for UTF-8 (to become a
//!   `Value::String` when it is text) before being copied into the caller's `Vec<u8>`.
//! - A pipeline is kept for reuse: `all()` clones the queued commands (cheap `Bytes` clones).
//!   Each pipelined command still reaches the socket in its own `writev` call (seen with
//!   `strace`: 1000 calls for `set_many` of 1000 items, where redis-rs makes one), so fred's
//!   pipeline saves round trips but not system calls.
//! - The RESP2 decoder parses a reply from its start again after every read until it is whole,
//!   so a reply of many elements (`MGET`, `HGETALL`) that arrives in many reads, as over a Unix
//!   socket, costs time quadratic in its elements. `MGET` of 2,500, 5,000, 10,000 and 20,000
//!   values of 1 KiB took 41 ms, 144 ms, 561 ms and 2.6 s over a Unix socket, and 19 ms to
//!   206 ms over TCP (a debug build; redis-rs took 31 ms to 511 ms over the same socket).
//! - TCP sockets keep Nagle's algorithm on (`TcpConfig::nodelay` is `None`).
//! - fred turns error replies into its generic kinds (`ERR` → `Unknown`, `WRONGTYPE` →
//!   `InvalidArgument`), the same kinds it uses for some client-side errors; [`map_error`] can
//!   only follow the kind.
//!
//! What is unfair about the comparison: fred is built for many concurrent callers sharing one
//! connection (and for clusters, sentinels, pub/sub); a single blocking caller pays for that
//! machinery without using it. The bench's native async runs of [`AsyncFred`] are the fairer
//! view.
#![deny(missing_docs)]

mod cluster;

use std::io;
use std::time::Duration;

use fred::clients::Pool;
use fred::prelude::{
    Builder, Config, Error as FredError, ErrorKind, Expiration, HashesInterface, KeysInterface,
    TransactionInterface, Value,
};
use kvbench_core::{
    AsyncClient, Backend, Client, ClientSpec, Concurrency, ConnectShared, Endpoint, Error, Handle,
    HostileOutcome, Kind, KnownDefect, Operation, Options, Pipelining, Result, SharedClient,
    Transport, connect_shared_boxed,
};

pub use crate::cluster::{
    AsyncFredCluster, BlockingFredCluster, CLUSTER_DEFECTS, SPEC_CLUSTER, SharedFredCluster,
};

/// What fred 10.1.0 gets wrong, one client or a pool alike. The conformance crate's hostile-server
/// test asserts each hostile outcome; `tests/fred.rs` shows the last one on both specs.
pub const KNOWN_DEFECTS: &[KnownDefect] = &[
    KnownDefect {
        library: "fred",
        version: "10.1.0",
        input: "deeply_nested_arrays",
        // Its RESP decoder recurses once per nesting level with no limit: a reply of arrays
        // nested 100,000 deep overflows an 8 MiB stack and the runtime aborts the process.
        outcome: "process killed by SIGABRT: fatal runtime error: stack overflow, aborting",
    },
    KnownDefect {
        library: "fred",
        version: "10.1.0",
        input: "missing_crlf_after_bulk",
        // `$5\r\nhelloXY`: the two bytes where `\r\n` belongs are skipped unchecked, and the
        // malformed reply is returned as the value `hello`.
        outcome: "Ok(Some(5 bytes))",
    },
    KnownDefect {
        library: "fred",
        version: "10.1.0",
        input: "reply_of_the_wrong_type",
        // An integer reply (`:1`) to GET, which no server sends, is returned as the value `1`.
        outcome: "Ok(Some(1 byte))",
    },
    SERVER_CLOSE_DEFECT,
];

/// Without a reconnect policy, fred does not notice that the server closed an idle connection
/// (the client still says it is connected): a command that goes out on it after the close gets a
/// timeout, not an I/O error. The kit's callers are in flight when the server closes, but a
/// connection can be idle at that moment even so (between two of fred's write batches), with one
/// client, the pool, or a clustered client's connection to each node.
pub(crate) const SERVER_CLOSE_DEFECT: KnownDefect = KnownDefect {
    library: "fred",
    version: "10.1.0",
    input: "server_close",
    outcome: "callers that call after the close fail with Timeout",
};

/// What fred does on the hostile-server cases that are not known defects, whether one client or a
/// pool meets them.
const HOSTILE_OUTCOMES: &[HostileOutcome] = kvbench_core::hostile_outcomes![
    // The rest of the reply never comes: it waits until its timeout, holding at most what
    // arrived (an absurd length is not allocated up front).
    "truncated_reply_then_silence" => HostileOutcome::TIMED_OUT,
    "absurd_bulk_length" => HostileOutcome::TIMED_OUT,
    "absurd_array_length" => HostileOutcome::TIMED_OUT,
    "largest_allowed_bulk_then_silence" => HostileOutcome::TIMED_OUT,
    // It reads a 100 KiB line and waits for its end.
    "line_without_end" => HostileOutcome::TIMED_OUT,
    // The command timeout bounds the whole command, not each read.
    "dripped_past_the_timeout" => HostileOutcome::TIMED_OUT,
    // `!` is RESP3's blob error: `!5\r\nhello\r\n` reads as an error reply `hello`.
    "wrong_type_byte" => HostileOutcome::SERVER,
    "bare_lf_in_header" => HostileOutcome::PROTOCOL,
    "negative_bulk_length" => HostileOutcome::PROTOCOL,
    "closed_mid_bulk" => HostileOutcome::IO,
    // A bulk `42` where INCR's integer belongs converts to the number it holds.
    "incr_answered_with_a_bulk" => "Ok(42)",
    "mget_array_too_short" => HostileOutcome::PROTOCOL,
    "mget_array_too_long" => HostileOutcome::PROTOCOL,
    "mget_absurd_array_length" => HostileOutcome::TIMED_OUT,
    "mget_largest_allowed_array_then_silence" => HostileOutcome::TIMED_OUT,
    "exec_nil" => HostileOutcome::SERVER,
    "exec_execabort" => HostileOutcome::SERVER,
    "exec_array_too_short" => HostileOutcome::PROTOCOL,
    "exec_array_too_long" => HostileOutcome::PROTOCOL,
    "exec_after_a_missing_queued" => HostileOutcome::TIMED_OUT,
];

const PIPELINING: Pipelining = Pipelining::Pipelined(
    "client.pipeline() with one SET per item, then all(); one writev per command",
);

/// The connections of `fred/pool`, for one caller or many.
pub const POOL_CONNECTIONS: usize = 4;

/// fred, driven from a blocking caller; many callers share its one connection.
pub const SPEC: ClientSpec = ClientSpec {
    name: "fred",
    backend: Backend::Redis,
    transports: Transport::ALL,
    kind: Kind::Library,
    summary: "fred 10.1 Client (Config::from_url, default features + unix-sockets, no reconnect policy, \
              connection/command timeouts from Options), block_on on an owned current-thread runtime",
    pipelining: PIPELINING,
    // No kit behaviour is out of reach for it.
    limitations: &[],
    slow_round_trip: None,
    known_defects: KNOWN_DEFECTS,
    hostile_outcomes: HOSTILE_OUTCOMES,
    loopback_floor: false,
    connect: connect_boxed::<fred::clients::Client>,
    connect_async: Some(connect_async_boxed),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<SharedFred>),
    operations: Operation::ALL,
};

/// fred's round-robin pool of [`POOL_CONNECTIONS`] clients, configured as [`SPEC`]'s client.
pub const SPEC_POOL: ClientSpec = ClientSpec {
    name: "fred/pool",
    summary: "fred 10.1 Pool of 4 (Builder::build_pool, each command on the next client), otherwise \
              as fred; block_on on an owned current-thread runtime",
    connect: connect_boxed::<Pool>,
    connect_async: Some(connect_pool_async_boxed),
    concurrency: Concurrency::Pool {
        connections: POOL_CONNECTIONS,
        connect: connect_shared_boxed::<SharedFred<Pool>>,
    },
    ..SPEC
};

/// The fred connection URL for an endpoint: `redis://host:port/` or `redis+unix:///path`.
pub fn url(endpoint: &Endpoint) -> String {
    endpoint.redis_url()
}

/// Maps a fred error to the contract's error by its kind.
pub fn map_error(err: FredError) -> Error {
    let message = err.to_string();
    match err.kind() {
        // In clustered mode, a command whose node connection's task has gone (the server closed
        // it) fails with this message under `Unknown`, the kind of an error reply: it is no reply.
        ErrorKind::Unknown if message.ends_with("channel closed") => {
            Error::Io(io::Error::new(io::ErrorKind::ConnectionAborted, message))
        }
        // fred's `pretty_error` files every error reply under one of these kinds; the reply was
        // read whole, so the connection is still in step.
        ErrorKind::Unknown
        | ErrorKind::InvalidArgument
        | ErrorKind::InvalidCommand
        | ErrorKind::Auth
        | ErrorKind::Cluster => Error::Server(message),
        ErrorKind::Timeout => Error::Timeout(message),
        ErrorKind::Protocol | ErrorKind::Parse | ErrorKind::NotFound => Error::Protocol(message),
        ErrorKind::Config | ErrorKind::Url => Error::InvalidInput(message),
        // The connection closed under the command (`Canceled`) or failed.
        ErrorKind::Canceled => Error::Io(io::Error::new(io::ErrorKind::ConnectionAborted, message)),
        _ => Error::Io(io::Error::other(message)),
    }
}

/// The two fred client types the adapter drives, and what differs between them: one
/// [`fred::clients::Client`], or a [`Pool`] that sends each command on its next client.
pub trait FredClient: KeysInterface + HashesInterface + Clone + Send + Sync + 'static {
    /// The connections it opens for a single caller.
    const CONNECTIONS: usize;

    /// Builds it with `connections` connections (a client has one, whatever is asked).
    fn build(builder: &Builder, connections: usize) -> Result<Self, FredError>;

    /// The client a pipeline or a transaction is queued on: either is one client's, so that
    /// its commands go out on one connection.
    fn pipeline_client(&self) -> &fred::clients::Client;
}

impl FredClient for fred::clients::Client {
    const CONNECTIONS: usize = 1;

    fn build(builder: &Builder, _connections: usize) -> Result<Self, FredError> {
        builder.build()
    }

    fn pipeline_client(&self) -> &fred::clients::Client {
        self
    }
}

impl FredClient for Pool {
    const CONNECTIONS: usize = POOL_CONNECTIONS;

    fn build(builder: &Builder, connections: usize) -> Result<Self, FredError> {
        builder.build_pool(connections)
    }

    fn pipeline_client(&self) -> &fred::clients::Client {
        self.next()
    }
}

/// The contract's operations as async methods on a fred client `C` (one [`fred::clients::Client`]
/// unless named), for the bench to drive natively. Cloning is cheap and shares the connections.
#[derive(Clone)]
pub struct AsyncFred<C: FredClient = fred::clients::Client> {
    client: C,
}

impl<C: FredClient> AsyncFred<C> {
    /// Connects for a single caller: `C`'s [`FredClient::CONNECTIONS`]; see [`open`](Self::open).
    pub async fn connect(endpoint: &Endpoint, options: &Options) -> Result<AsyncFred<C>> {
        Self::open(endpoint, options, C::CONNECTIONS).await
    }

    /// Builds the client for the server at `endpoint` with `connections` connections and waits
    /// for them; see [`open_config`](Self::open_config).
    pub async fn open(
        endpoint: &Endpoint,
        options: &Options,
        connections: usize,
    ) -> Result<AsyncFred<C>> {
        let config = Config::from_url(&url(endpoint));
        let config = config.map_err(|err| map_error(err).while_connecting(endpoint))?;
        Self::open_config(config, endpoint, options, connections).await
    }

    /// Builds the client from `config` (its server: `endpoint`, named in errors) with the
    /// timeouts from `options` and `connections` connections, and waits for them. Must run
    /// inside a tokio runtime: fred spawns its router and reader tasks onto it.
    // ANCHOR: fred_connect
    pub async fn open_config(
        config: Config,
        endpoint: &Endpoint,
        options: &Options,
        connections: usize,
    ) -> Result<AsyncFred<C>> {
        let connect_failed = |err: FredError| map_error(err).while_connecting(endpoint);
        let mut builder = Builder::from_config(config);
        builder
            .with_connection_config(|connection| {
                connection.connection_timeout = options.connect_timeout;
                connection.internal_command_timeout = options.connect_timeout;
            })
            .with_performance_config(|performance| {
                performance.default_command_timeout = command_timeout(options);
            });
        let client = C::build(&builder, connections).map_err(connect_failed)?;
        // The returned handle is the router task(s); it ends when the client quits.
        client.init().await.map_err(connect_failed)?;
        Ok(AsyncFred { client })
    }
    // ANCHOR_END: fred_connect

    /// The underlying fred client.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// `GET key`: `Some(bytes)` on a hit.
    // ANCHOR: fred_get
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.client.get(key).await.map_err(map_error)
    }
    // ANCHOR_END: fred_get

    /// `SET key value`.
    pub async fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.client
            .set(key, value, None, None, false)
            .await
            .map_err(map_error)
    }

    /// `SET key value EX ttl`.
    pub async fn set_ex(&self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        let expire = Some(Expiration::EX(i64::from(ttl_secs)));
        self.client
            .set(key, value, expire, None, false)
            .await
            .map_err(map_error)
    }

    /// `DEL key`: whether it existed.
    pub async fn delete(&self, key: &[u8]) -> Result<bool> {
        let removed: i64 = self.client.del(key).await.map_err(map_error)?;
        Ok(removed > 0)
    }

    /// One pipeline of `SET`s; the first error reply, if any, is returned.
    pub async fn set_many(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let pipeline = self.client.pipeline_client().pipeline();
        for &(key, value) in items {
            // Resolves as soon as the command is queued in memory.
            let () = pipeline
                .set(key, value, None, None, false)
                .await
                .map_err(map_error)?;
        }
        pipeline.all().await.map_err(map_error)
    }

    /// One pipeline of `GET`s, on one connection.
    pub async fn get_many_pipelined(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let pipeline = self.client.pipeline_client().pipeline();
        for &key in keys {
            let () = pipeline.get(key).await.map_err(map_error)?;
        }
        // fred answers a pipeline once it holds one reply per command.
        pipeline.all().await.map_err(map_error)
    }

    /// `INCR key`: the new value.
    pub async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.client.incr(key).await.map_err(map_error)
    }

    /// `MGET key …`: one value per key, `None` for a miss.
    pub async fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values = self.client.mget(keys.to_vec()).await.map_err(map_error)?;
        kvbench_core::one_per_key(values, keys.len())
    }

    /// `HSET key field value …`, the fields first collected into fred's `Map` (a `HashMap`).
    pub async fn hset_many(&self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        if fields.is_empty() {
            return Ok(());
        }
        let hset = self.client.hset(key, fields.to_vec());
        hset.await.map_err(map_error)
    }

    /// `HGETALL key`: every field and value, in the order of fred's `Map`, not the server's.
    pub async fn hgetall(&self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.client.hgetall(key).await.map_err(map_error)
    }

    /// `MULTI`, the `SET`s, `EXEC`, with `exec(true)`: fred's router writes them with nothing
    /// of another caller's between, and reads every reply before it sends anything else.
    pub async fn transaction(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let transaction = self.client.pipeline_client().multi();
        for &(key, value) in items {
            // Resolves as soon as the command is queued in memory.
            let () = (transaction.set(key, value, None, None, false).await).map_err(map_error)?;
        }
        match transaction.exec(true).await.map_err(map_error)? {
            Value::Null => Err(Error::Server(
                "EXEC answered nil: transaction aborted".into(),
            )),
            Value::Array(replies)
                if replies.len() == items.len()
                    && replies
                        .iter()
                        .all(|reply| reply.as_str().as_deref() == Some("OK")) =>
            {
                Ok(())
            }
            other => Err(Error::Protocol(format!(
                "EXEC of {} SETs answered {other:?}",
                items.len()
            ))),
        }
    }

    /// Sends `QUIT` (on every connection) and lets the connections close.
    pub async fn quit(&self) -> Result<()> {
        self.client.quit().await.map_err(map_error)
    }
}

kvbench_core::impl_async_client_by_boxing!(AsyncFred, connect_async_boxed;
    get_many_pipelined, incr, get_many, hash, transaction);
kvbench_core::impl_async_client_by_boxing!(AsyncFred<Pool>, connect_pool_async_boxed;
    get_many_pipelined, incr, get_many, hash, transaction);

pub(crate) fn command_timeout(options: &Options) -> Duration {
    options.read_timeout.max(options.write_timeout)
}

/// The client many callers share: each [`handle`](SharedClient::handle) is a clone of one
/// [`AsyncFred`], so fred's router keeps every reply with the command it answers.
///
/// fred's tasks hold the connections until `QUIT`, not until the last clone is dropped: dropping
/// this sends it (spawned on the runtime it is dropped in, if any), and handles still held fail
/// after that.
pub struct SharedFred<C: FredClient = fred::clients::Client> {
    fred: AsyncFred<C>,
}

impl<C: FredClient> SharedClient for SharedFred<C>
where
    AsyncFred<C>: AsyncClient,
{
    fn handle(&self) -> Handle {
        Handle::Async(Box::new(self.fred.clone()))
    }
}

impl<C: FredClient> ConnectShared for SharedFred<C>
where
    AsyncFred<C>: AsyncClient,
{
    /// Opens `connections` connections (a [`fred::clients::Client`] always has one), on the
    /// runtime the callers' tasks will run on.
    async fn connect_shared(
        endpoint: &Endpoint,
        options: &Options,
        connections: usize,
    ) -> Result<SharedFred<C>> {
        let fred = AsyncFred::open(endpoint, options, connections).await?;
        Ok(SharedFred { fred })
    }
}

impl<C: FredClient> Drop for SharedFred<C> {
    fn drop(&mut self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let fred = self.fred.clone();
            runtime.spawn(async move { fred.quit().await });
        }
    }
}

/// [`AsyncFred`] behind the synchronous contract: it owns a current-thread runtime and blocks on
/// each call. fred's tasks run only while a call is being blocked on.
pub struct BlockingFred<C: FredClient = fred::clients::Client> {
    inner: AsyncFred<C>,
    runtime: kvbench_block_on::Runtime,
    quit_timeout: Duration,
}

impl<C: FredClient> BlockingFred<C> {
    /// Builds the runtime and connects on it.
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<BlockingFred<C>> {
        let connect = AsyncFred::connect(endpoint, options);
        let (runtime, inner) = kvbench_block_on::connect_on_own_runtime(connect)?;
        Ok(BlockingFred {
            inner,
            runtime,
            quit_timeout: command_timeout(options),
        })
    }
}

fn connect_boxed<C: FredClient>(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>>
where
    BlockingFred<C>: Client,
{
    Ok(Box::new(BlockingFred::<C>::connect(endpoint, options)?))
}

kvbench_core::impl_client_by_blocking_on!(BlockingFred;
    get_many_pipelined, incr, get_many, hash, transaction);
kvbench_core::impl_client_by_blocking_on!(BlockingFred<Pool>;
    get_many_pipelined, incr, get_many, hash, transaction);

impl<C: FredClient> Drop for BlockingFred<C> {
    /// Quits the way fred's examples do, so the server sees a clean `QUIT`; a dead server cannot
    /// hold the drop longer than the command timeout.
    fn drop(&mut self) {
        // The timer must be created inside the runtime, hence the `async` block.
        let quit = async { tokio::time::timeout(self.quit_timeout, self.inner.quit()).await };
        let _ = self.runtime.block_on(quit);
    }
}
