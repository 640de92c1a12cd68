//! redis-rs's cluster clients behind the contract: the same library as `redis-rs` and
//! `redis-rs/async`, given one node of a Redis Cluster and left to find the rest. What they show
//! is what a cluster adds to each call: a key's slot (CRC16 of the key) picked out of every
//! command, a slot map to look the node up in, a connection per node, and redirections
//! (`MOVED`, `ASK`) followed when the map is stale.
//!
//! Two clients, both built the way redis-rs's documentation shows,
//! `ClusterClient::builder([seed]).connection_timeout(..).response_timeout(..).build()`, with
//! the one seed node the contract's [`Endpoint`] names (TCP only: `CLUSTER SLOTS` announces
//! nodes as host and port). Connecting asks the seed for `CLUSTER SLOTS` and connects to every
//! primary it names; the retry policy is redis-rs's default (16 attempts).
//!
//! - **`redis-rs/cluster`** — the synchronous [`redis::cluster::ClusterConnection`]: one
//!   blocking [`redis::Connection`] per node, `response_timeout` as each one's read timeout and
//!   [`Options::write_timeout`] set on all of them. `set_many` and `get_many_pipelined` go
//!   through one [`cluster_pipe()`]: redis-rs splits it into one pipeline per node, writes each
//!   whole, one node after the other, then reads each node's replies in turn.
//! - **`redis-rs/cluster-async`** — the multiplexed [`redis::cluster_async::ClusterConnection`]
//!   (one [`redis::aio::MultiplexedConnection`] per node, driven by a task that routes every
//!   request). Its pipelines cannot span slots (redis-rs 1.8 refuses them with `CROSSSLOT`
//!   before sending, and would retry a pipeline redirected as a whole), so `set_many` and
//!   `get_many_pipelined` send one command per key, [`IN_FLIGHT`] at a time, and await them in
//!   order: each is routed, and redirected, on its own, and each node's multiplexed connection
//!   writes together whatever is queued for it. The timeout bounds each request including its
//!   retries. Many callers share the one cluster connection (`Concurrency::Multiplexed`), as
//!   with `redis-rs/async`.
//!
//! Both implement `incr`, `get_many` and the hash operations, each one key's command or, for
//! `get_many`, redis-rs's `MGET`, which the cluster client splits into one `MGET` per slot (the
//! synchronous one sends them one after the other, the async one all at once) and puts back in
//! the keys' order. A transaction is not implemented: `MULTI` … `EXEC` over keys of different
//! slots fails with `CROSSSLOT`, and redis-rs's cluster pipeline refuses `atomic()`.
//!
//! On a stable cluster both do what the single-server clients do. While a slot migrates, both
//! follow a single command's `ASK` and `MOVED`, but not everything else does: the synchronous
//! client's pipelines fail on either redirection, and its `get_many` panics inside redis-rs
//! ([`SYNC_CLUSTER_DEFECTS`]); the async client's requests redirected by `ASK` at the same time
//! fail ([`ASYNC_CLUSTER_DEFECTS`]). A stopped node's keys fail at once with `Err(Io)` on the
//! synchronous client, and by the timeout on the async one; the other nodes' keys are served.
//!
//! What the specs cannot show: a cluster client is a library of its own kind, so the hostile
//! fake servers (one fake node cannot answer `CLUSTER SLOTS` for a cluster) are not run against
//! it; its replies go through the same parser as `redis-rs`'s, whose outcomes are listed there.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt, stream};
use kvbench_core::{
    Backend, Client, ClientSpec, Concurrency, ConnectShared, Endpoint, Error, Kind, KnownDefect,
    Operation, Options, Pipelining, Result, Transport, connect_shared_boxed,
};
use redis::cluster::{ClusterClient, ClusterConnection, cluster_pipe};
use redis::cluster_async::ClusterConnection as ClusterConnectionAsync;
use redis::{AsyncCommands, RedisResult};

use crate::{
    AsyncRedis, BlockingAsyncRedis, RedisSync, SyncConnection, connect_blocking_async_boxed,
    map_error, url,
};

/// The optional operations both cluster clients implement: the one-key ones, and `MGET`, which
/// redis-rs splits by slot. No transaction: its keys may be in different slots.
const OPERATIONS: &[Operation] = &[Operation::Incr, Operation::GetMany, Operation::Hash];

/// What redis-rs 1.8.1's synchronous cluster client gets wrong, met on a real cluster while a
/// slot migrates; `tests/cluster.rs` shows each one. (Its replies go through `redis-rs`'s
/// parser, whose defects on a hostile server are [`KNOWN_DEFECTS`](crate::KNOWN_DEFECTS).)
pub const SYNC_CLUSTER_DEFECTS: &[KnownDefect] = &[
    KnownDefect {
        library: "redis",
        version: "1.8.1",
        input: "cluster_migration_pipeline",
        // Each node's replies are read as values, so a redirection is an error reply like any
        // other, and the slot map is not refreshed: batches keep failing until a single command
        // meets the redirection.
        outcome: "set_many and get_many_pipelined meeting ASK or MOVED fail with Err(Server) \
                  naming each redirected command",
    },
    KnownDefect {
        library: "redis",
        version: "1.8.1",
        input: "cluster_migration_get_many",
        // `combine_and_sort_array_results` sizes the combined reply by summing the per-slot
        // arrays, but restarts the sum at 0 on a reply that is not an array (the slot's `ASK`,
        // `TRYAGAIN` or `MOVED`), then writes past its end. Only if that reply is the first in
        // its (hash map) order of the slots is it reported instead, as an unexpected type.
        outcome: "panicked: index out of bounds, when get_many (MGET split by slot) meets ASK, \
                  TRYAGAIN or MOVED for one of the slots (or Err(Protocol), if that slot comes first)",
    },
];

/// What redis-rs 1.8.1's async cluster client gets wrong, met on a real cluster;
/// `tests/cluster.rs` shows each one.
pub const ASYNC_CLUSTER_DEFECTS: &[KnownDefect] = &[
    KnownDefect {
        library: "redis",
        version: "1.8.1",
        input: "cluster_migration_concurrent_ask",
        // `ASKING` is sent as a request of its own on the node's shared multiplexed connection,
        // and the redirected command after its reply, so several redirected requests at once
        // send their `ASKING`s together: the first command uses up the flag, the others are
        // refused with MOVED back to the source, which answers ASK again.
        outcome: "commands redirected by ASK to the same node at the same time (set_many, \
                  get_many_pipelined, many callers) fail with Err(Server) Ask once the retries \
                  run out",
    },
    KnownDefect {
        library: "redis",
        version: "1.8.1",
        input: "cluster_node_stopped",
        // It retries, reconnecting to the node in the background, until the response timeout;
        // the synchronous client fails at once with Err(Io).
        outcome: "a GET of a key the stopped node served fails only by the response timeout, \
                  with Err(Timeout)",
    },
    KnownDefect {
        library: "redis",
        version: "1.8.1",
        input: "server_close",
        // The same retrying as for a stopped node: a request on a connection the node closed is
        // sent again once the connection is replaced in the background, and may meet its
        // response timeout first (in the kit, some runs see every caller go on answering, others
        // every caller time out).
        outcome: "callers in flight when every node closes its connections go on answering, or \
                  fail with Timeout",
    },
];

/// The synchronous redis-rs cluster client.
pub const SPEC_CLUSTER_SYNC: ClientSpec = ClientSpec {
    name: "redis-rs/cluster",
    backend: Backend::RedisCluster,
    transports: &[Transport::Tcp],
    kind: Kind::Library,
    summary: "redis 1.8 sync cluster::ClusterConnection from one seed node (feature cluster; \
              connection/response timeouts from Options, write timeout on every node), typed Commands",
    pipelining: Pipelining::Pipelined(
        "one cluster_pipe() with .ignore() per SET, split by redis-rs into one pipeline per node, \
         each written whole, then every node's replies read",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: SYNC_CLUSTER_DEFECTS,
    // The hostile fakes are single servers; see the module documentation.
    hostile_outcomes: &[],
    loopback_floor: false,
    connect: connect_sync_boxed,
    connect_async: None,
    concurrency: Concurrency::Threads,
    operations: OPERATIONS,
};

/// The multiplexed async redis-rs cluster client, driven from a blocking caller.
pub const SPEC_CLUSTER_ASYNC: ClientSpec = ClientSpec {
    name: "redis-rs/cluster-async",
    backend: Backend::RedisCluster,
    transports: &[Transport::Tcp],
    kind: Kind::Library,
    summary: "redis 1.8 cluster_async::ClusterConnection from one seed node (features cluster-async, \
              tokio-comp; connection/response timeouts from Options), block_on on an owned \
              current-thread runtime per call",
    pipelining: Pipelining::Pipelined(
        "one SET per item, 1024 in flight, awaited in order (async cluster pipelines cannot \
         span slots); each node's multiplexed connection writes what is queued for it together",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: ASYNC_CLUSTER_DEFECTS,
    hostile_outcomes: &[],
    loopback_floor: false,
    connect: connect_blocking_async_boxed::<AsyncRedisCluster>,
    connect_async: Some(connect_async_boxed),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<AsyncRedisCluster>),
    operations: OPERATIONS,
};

/// The cluster client for one seed node: the nodes' connect timeout, and `response_timeout`
/// for every reply (a request as a whole, retries included, for the async connection).
pub fn cluster_client(
    endpoint: &Endpoint,
    options: &Options,
    response_timeout: Duration,
) -> Result<ClusterClient> {
    if let Endpoint::Unix(_) = endpoint {
        return Err(Error::InvalidInput(format!(
            "{endpoint}: a cluster is reached over TCP (CLUSTER SLOTS names its nodes by host and port)"
        )));
    }
    ClusterClient::builder([url(endpoint)])
        .connection_timeout(options.connect_timeout)
        .response_timeout(response_timeout)
        .build()
        .map_err(map_error)
}

/// The synchronous cluster client: [`RedisSync`] on the cluster's connection, one blocking
/// connection per node.
pub type RedisClusterSync = RedisSync<ClusterConnection>;

impl RedisClusterSync {
    /// Connects to the seed, reads the slot map and connects to every primary.
    pub fn connect(endpoint: &Endpoint, options: &Options) -> Result<RedisClusterSync> {
        let fail = |err| map_error(err).while_connecting(endpoint);
        let client = cluster_client(endpoint, options, options.read_timeout)?;
        let con = client.get_connection().map_err(fail)?;
        // Applied to the node connections open now and to any opened later.
        con.set_write_timeout(Some(options.write_timeout))
            .map_err(fail)?;
        Ok(RedisSync { con })
    }
}

fn connect_sync_boxed(endpoint: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    Ok(Box::new(RedisClusterSync::connect(endpoint, options)?))
}

impl SyncConnection for ClusterConnection {
    /// One [`cluster_pipe()`], which redis-rs splits into one pipeline per node.
    fn send_sets(&mut self, items: &[(&[u8], &[u8])]) -> RedisResult<()> {
        let mut pipe = cluster_pipe();
        for &(key, value) in items {
            pipe.set(key, value).ignore();
        }
        pipe.exec(self)
    }

    /// One [`cluster_pipe()`]; each node's replies are put back at their commands' places.
    fn send_gets(&mut self, keys: &[&[u8]]) -> RedisResult<Vec<Option<Vec<u8>>>> {
        let mut pipe = cluster_pipe();
        for &key in keys {
            pipe.get(key);
        }
        pipe.query(self)
    }

    /// Refused: its keys may be in different slots, and a cluster pipeline cannot be atomic.
    fn send_transaction(&mut self, _items: &[(&[u8], &[u8])]) -> Result<()> {
        Err(Operation::Transaction.unsupported())
    }
}

/// Opens the async cluster connection: its driver task is spawned on the current tokio runtime.
/// The response timeout bounds a whole request, retries and redirections included; redis-rs has
/// no separate write timeout for async connections, so it is the larger of `read_timeout` and
/// `write_timeout`.
pub async fn connect_cluster_async(
    endpoint: &Endpoint,
    options: &Options,
) -> Result<ClusterConnectionAsync> {
    let timeout = options.read_timeout.max(options.write_timeout);
    let client = cluster_client(endpoint, options, timeout)?;
    let connection = client.get_async_connection().await;
    connection.map_err(|err| map_error(err).while_connecting(endpoint))
}

/// The requests of one `set_many` or `get_many_pipelined` the async cluster client has sent and
/// not yet had answered, at most. All at once would not do: the response timeout runs from the
/// moment a request is made, and the last of 100,000 made at once would wait for the 99,999
/// before it to be sent.
pub const IN_FLIGHT: usize = 1024;

/// Awaits `requests` (each on its own clone of the connection: a sender into its driver task),
/// [`IN_FLIGHT`] at a time, each routed and redirected on its own: the results in their order,
/// or the first error.
async fn in_flight_together<T>(
    requests: impl Iterator<Item = impl Future<Output = RedisResult<T>>>,
) -> Result<Vec<T>> {
    let results = stream::iter(requests).buffered(IN_FLIGHT);
    results.try_collect().await.map_err(map_error)
}

/// [`AsyncRedis`] on the cluster's connection: the one-key commands as on one server, each
/// routed by its key; the batches as below. Cloning is cheap and shares the connection and its
/// per-node connections.
pub type AsyncRedisCluster = AsyncRedis<ClusterConnectionAsync>;

impl AsyncRedisCluster {
    /// Connects; see [`connect_cluster_async`].
    pub async fn connect(endpoint: &Endpoint, options: &Options) -> Result<AsyncRedisCluster> {
        let con = connect_cluster_async(endpoint, options).await?;
        Ok(AsyncRedis { con })
    }

    /// One `SET` per item, [`IN_FLIGHT`] at a time; the first error, if any, is returned.
    pub async fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        let sets = items.iter().map(|&(key, value)| {
            let mut con = self.connection().clone();
            async move { con.set::<_, _, ()>(key, value).await }
        });
        let _: Vec<()> = in_flight_together(sets).await?;
        Ok(())
    }

    /// One `GET` per key, [`IN_FLIGHT`] at a time; the values in the keys' order.
    pub async fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let gets = keys.iter().map(|&key| {
            let mut con = self.connection().clone();
            async move { con.get(key).await }
        });
        in_flight_together(gets).await
    }
}

kvbench_core::impl_async_client_by_boxing!(AsyncRedisCluster, connect_async_boxed;
    get_many_pipelined, incr, get_many, hash);

impl ConnectShared for AsyncRedisCluster {
    /// Connects once for any number of callers: each caller's handle is a clone.
    async fn connect_shared(
        endpoint: &Endpoint,
        options: &Options,
        _connections: usize,
    ) -> Result<AsyncRedisCluster> {
        AsyncRedisCluster::connect(endpoint, options).await
    }
}

kvbench_core::impl_client_by_blocking_on!(BlockingAsyncRedis<AsyncRedisCluster>;
    get_many_pipelined, incr, get_many, hash);
