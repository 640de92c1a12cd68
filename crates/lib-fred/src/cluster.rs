//! fred in clustered mode behind the contract: the `fred` client, configured with
//! `ServerConfig::Clustered` and one seed node, left to find the rest. fred asks the seed for
//! `CLUSTER SLOTS`, opens one connection per primary, and its router sends each command to the
//! node that owns its key's slot, and follows `MOVED` (up to `max_redirections`, 5 by default).
//!
//! **`fred/cluster`** is one fred `Client`, configured as [`SPEC`](crate::SPEC)'s (the same
//! timeouts, no reconnect policy), but with `ServerConfig::Clustered { hosts: [seed], policy }`
//! and fred's default discovery policy (`ConfigEndpoint`: the cluster is re-read from the seed).
//! A pipeline needs nothing more on a cluster: fred routes each of its commands on its own, so
//! `set_many` and `get_many_pipelined` are one `client.pipeline()` as for a single server, its
//! commands written to whichever node owns each key. Many callers share the client
//! (`Concurrency::Multiplexed`): each node's connection is shared as the single server's is.
//!
//! It implements `incr` and the hash operations (one key each). Not `get_many`: fred sends one
//! `MGET` to the node of its first key, which a cluster refuses with `CROSSSLOT` when the keys'
//! slots differ. Not `transaction`, for the same reason.
//!
//! On a stable cluster it does what `fred` does on one server. But it does not survive a change:
//! the first command that meets `ASK` while a slot migrates fails, and so does the first sent to
//! a node that stopped, and after either every call, to any node, waits out its timeout
//! ([`CLUSTER_DEFECTS`]).

use std::time::Duration;

use fred::prelude::{Config, ServerConfig};
use kvbench_core::{
    Backend, Client, ClientSpec, Concurrency, ConnectShared, Endpoint, Error, Handle, Kind,
    KnownDefect, Operation, Options, Pipelining, Result, SharedClient, Transport,
    connect_shared_boxed,
};

use crate::{AsyncFred, command_timeout};

/// What fred 10.1.0 in clustered mode gets wrong, met on a real cluster; `tests/cluster.rs`
/// shows each one. (Its replies go through `fred`'s parser, whose defects on a hostile server are
/// [`KNOWN_DEFECTS`](crate::KNOWN_DEFECTS).)
pub const CLUSTER_DEFECTS: &[KnownDefect] = &[
    KnownDefect {
        library: "fred",
        version: "10.1.0",
        input: "cluster_slot_migration",
        // After `ASKING` on the target, the redirected command is routed by its slot again,
        // which the slot map still gives to the source: ASK again, until the command's attempts
        // (3) run out. (With more attempts it ends in `Too many redirections` instead.)
        outcome: "a command meeting ASK fails with Err(Io) `Routing Error: Max attempts \
                  reached`; then every later call, to any node, fails with Err(Timeout)",
    },
    KnownDefect {
        library: "fred",
        version: "10.1.0",
        input: "cluster_node_stopped",
        // No reconnect policy is set (as for `fred`): the lost connection is not replaced, and
        // the client stops serving the nodes that still run too.
        outcome: "the first GET of a key the stopped node served fails with Err(Io) `Connection \
                  closed`; then every later call, to any node, fails with Err(Timeout)",
    },
    crate::SERVER_CLOSE_DEFECT,
];

/// Commands of one fred pipeline. fred times a pipeline as one command, so all of it must be
/// answered within the command timeout: a pipeline of 100,000 SETs over three nodes took about
/// 11 s in a debug build, past the kit's 5 s. Pipelines of 10,000 keep each well within it.
pub const PIPELINE_COMMANDS: usize = 10_000;

/// fred, clustered, from one seed node, driven from a blocking caller.
pub const SPEC_CLUSTER: ClientSpec = ClientSpec {
    name: "fred/cluster",
    backend: Backend::RedisCluster,
    transports: &[Transport::Tcp],
    kind: Kind::Library,
    summary: "fred 10.1 Client with ServerConfig::Clustered from one seed node (otherwise as fred: \
              no reconnect policy, connection/command timeouts from Options), block_on on an owned \
              current-thread runtime",
    pipelining: Pipelining::Pipelined(
        "client.pipeline() with one SET per item, then all(), 10,000 items a pipeline; each SET \
         routed to its key's node, one writev per command",
    ),
    limitations: &[],
    slow_round_trip: None,
    known_defects: CLUSTER_DEFECTS,
    // The hostile fakes are single servers: one cannot answer CLUSTER SLOTS for a cluster. The
    // replies go through `fred`'s parser, whose outcomes are `SPEC`'s.
    hostile_outcomes: &[],
    loopback_floor: false,
    connect: connect_boxed,
    connect_async: Some(connect_async_boxed),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<SharedFredCluster>),
    operations: &[Operation::Incr, Operation::Hash],
};

/// fred's configuration for the cluster `seed` belongs to.
fn cluster_config(seed: &Endpoint) -> Result<Config> {
    let refused = |why: &str| Error::InvalidInput(format!("{seed}: {why}"));
    let Endpoint::Tcp(addr) = seed else {
        return Err(refused(
            "a cluster is reached over TCP (CLUSTER SLOTS names its nodes by host and port)",
        ));
    };
    let (host, port) = addr
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
        .ok_or_else(|| refused("not host:port"))?;
    Ok(Config {
        server: ServerConfig::new_clustered(vec![(host, port)]),
        ..Config::default()
    })
}

/// The contract's operations on a clustered fred client, for the bench to drive natively: those
/// of [`AsyncFred`] that a cluster can serve whatever the keys' slots. Cloning is cheap and
/// shares the connections.
#[derive(Clone)]
pub struct AsyncFredCluster {
    fred: AsyncFred,
}

impl AsyncFredCluster {
    /// Connects to the seed, reads the cluster's slots and connects to every primary. Must run
    /// inside a tokio runtime: fred spawns its router and reader tasks onto it.
    pub async fn connect(seed: &Endpoint, options: &Options) -> Result<AsyncFredCluster> {
        let config = cluster_config(seed)?;
        let fred = AsyncFred::open_config(config, seed, options, 1).await?;
        Ok(AsyncFredCluster { fred })
    }

    /// The single-server adapter it delegates to, and through it the fred client.
    pub fn fred(&self) -> &AsyncFred {
        &self.fred
    }

    /// `GET key`, on the key's node.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.fred.get(key).await
    }

    /// `SET key value`.
    pub async fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.fred.set(key, value).await
    }

    /// `SET key value EX ttl`.
    pub async fn set_ex(&self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.fred.set_ex(key, value, ttl_secs).await
    }

    /// `DEL key`: whether it existed.
    pub async fn delete(&self, key: &[u8]) -> Result<bool> {
        self.fred.delete(key).await
    }

    /// Pipelines of `SET`s, [`PIPELINE_COMMANDS`] at a time, each SET written to its key's node.
    pub async fn set_many(&self, items: &[(&[u8], &[u8])]) -> Result<()> {
        for chunk in items.chunks(PIPELINE_COMMANDS) {
            self.fred.set_many(chunk).await?;
        }
        Ok(())
    }

    /// Pipelines of `GET`s, [`PIPELINE_COMMANDS`] at a time, each written to its key's node; the
    /// values in the keys' order.
    pub async fn get_many_pipelined(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut values = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(PIPELINE_COMMANDS) {
            values.extend(self.fred.get_many_pipelined(chunk).await?);
        }
        Ok(values)
    }

    /// `INCR key`: the new value.
    pub async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.fred.incr(key).await
    }

    /// `HSET key field value …`.
    pub async fn hset_many(&self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        self.fred.hset_many(key, fields).await
    }

    /// `HGETALL key`, in the order of fred's `Map`.
    pub async fn hgetall(&self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.fred.hgetall(key).await
    }

    /// Sends `QUIT` on every node's connection.
    pub async fn quit(&self) -> Result<()> {
        self.fred.quit().await
    }
}

kvbench_core::impl_async_client_by_boxing!(AsyncFredCluster, connect_async_boxed;
    get_many_pipelined, incr, hash);

/// The clustered client many callers share: each handle is a clone of one [`AsyncFredCluster`].
/// Dropping it sends `QUIT` (spawned on the runtime it is dropped in, if any), as
/// [`SharedFred`](crate::SharedFred) does.
pub struct SharedFredCluster {
    fred: AsyncFredCluster,
}

impl SharedClient for SharedFredCluster {
    fn handle(&self) -> Handle {
        Handle::Async(Box::new(self.fred.clone()))
    }
}

impl ConnectShared for SharedFredCluster {
    /// One client, whatever `connections` says: one connection per node, shared.
    async fn connect_shared(
        seed: &Endpoint,
        options: &Options,
        _connections: usize,
    ) -> Result<SharedFredCluster> {
        let fred = AsyncFredCluster::connect(seed, options).await?;
        Ok(SharedFredCluster { fred })
    }
}

impl Drop for SharedFredCluster {
    fn drop(&mut self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let fred = self.fred.clone();
            runtime.spawn(async move { fred.quit().await });
        }
    }
}

/// [`AsyncFredCluster`] behind the synchronous contract: it owns a current-thread runtime and
/// blocks on each call, as [`BlockingFred`](crate::BlockingFred) does.
pub struct BlockingFredCluster {
    inner: AsyncFredCluster,
    runtime: kvbench_block_on::Runtime,
    quit_timeout: Duration,
}

impl BlockingFredCluster {
    /// Builds the runtime and connects on it.
    pub fn connect(seed: &Endpoint, options: &Options) -> Result<BlockingFredCluster> {
        let connect = AsyncFredCluster::connect(seed, options);
        let (runtime, inner) = kvbench_block_on::connect_on_own_runtime(connect)?;
        let quit_timeout = command_timeout(options);
        Ok(BlockingFredCluster {
            inner,
            runtime,
            quit_timeout,
        })
    }
}

fn connect_boxed(seed: &Endpoint, options: &Options) -> Result<Box<dyn Client>> {
    Ok(Box::new(BlockingFredCluster::connect(seed, options)?))
}

kvbench_core::impl_client_by_blocking_on!(BlockingFredCluster; get_many_pipelined, incr, hash);

impl Drop for BlockingFredCluster {
    /// Quits as [`BlockingFred`](crate::BlockingFred) does: a dead node cannot hold the drop
    /// longer than the command timeout.
    fn drop(&mut self) {
        let quit = async { tokio::time::timeout(self.quit_timeout, self.inner.quit()).await };
        let _ = self.runtime.block_on(quit);
    }
}
