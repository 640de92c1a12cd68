//! The client as the suite lists it ([`SPEC`], [`SPEC_MEMCACHED`]), and its two faces: the
//! natively async one each caller of a shared connection gets a clone of, and the blocking one
//! the specs' `connect` gives, the async face on a current-thread runtime of its own.

use kvbench_core::{
    AsyncClient, Backend, BoxFuture, Client, ClientSpec, Concurrency, ConnectShared, Endpoint,
    Handle, Operation, Options, Pipelining, Result, SharedClient, connect_shared_boxed,
};

use crate::{Multiplexed, Protocol, Resp, Text};

/// The Redis client.
pub const SPEC: ClientSpec = ClientSpec {
    name: "multiplexed",
    backend: Backend::Redis,
    summary: "hand-written multiplexer: one connection for every caller, a writer task sending \
              all that is queued behind commands in flight in one write, callers taking turns \
              to read and answering each other in order",
    connect: |endpoint, options| connect_blocking(connect_async_resp(endpoint, options)),
    connect_async: Some(connect_async_resp),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<Multiplexed<Resp>>),
    operations: Operation::ALL,
    ..SPEC_MEMCACHED
};

/// The same client over memcached's text protocol.
pub const SPEC_MEMCACHED: ClientSpec = ClientSpec {
    name: "multiplexed/memcached",
    backend: Backend::Memcached,
    summary: "the hand-written multiplexer over memcached's text protocol",
    pipelining: Pipelining::Pipelined(
        "sets queued through the multiplexer, at most 4,096 (1 MiB) awaiting replies; the writer \
         sends whatever is queued in one write",
    ),
    connect: |endpoint, options| connect_blocking(connect_async_text(endpoint, options)),
    connect_async: Some(connect_async_text),
    concurrency: Concurrency::Multiplexed(connect_shared_boxed::<Multiplexed<Text>>),
    operations: &[Operation::Incr, Operation::GetMany],
    ..ClientSpec::HAND_WRITTEN
};

kvbench_core::impl_async_client_by_boxing!(Multiplexed<Resp>, connect_async_resp;
    get_many_pipelined, incr, get_many, hash, transaction);
kvbench_core::impl_async_client_by_boxing!(Multiplexed<Text>, connect_async_text;
    get_many_pipelined, incr, get_many);

impl<P: Protocol> SharedClient for Multiplexed<P>
where
    Self: AsyncClient,
{
    /// A clone: another handle on the same connection.
    fn handle(&self) -> Handle {
        Handle::Async(Box::new(self.clone()))
    }
}

impl<P: Protocol> ConnectShared for Multiplexed<P>
where
    Self: AsyncClient,
{
    /// One connection, whatever number of connections is asked for.
    async fn connect_shared(endpoint: &Endpoint, options: &Options, _: usize) -> Result<Self> {
        Self::connect(endpoint, options).await
    }
}

/// One caller behind the blocking [`Client`] contract: the async face on a current-thread
/// runtime of its own, blocked on for each call (the reader and the writer run while a call
/// waits).
struct Blocking {
    inner: Box<dyn AsyncClient>,
    runtime: kvbench_block_on::Runtime,
}

// Every operation is forwarded: the async face of either protocol refuses what it lacks.
kvbench_core::impl_client_by_blocking_on!(Blocking;
    get_many_pipelined, incr, get_many, hash, transaction);

/// The specs' blocking `connect`: `connect`, the async face's, run on the runtime it will keep.
fn connect_blocking(connect: BoxFuture<'_, Box<dyn AsyncClient>>) -> Result<Box<dyn Client>> {
    let (runtime, inner) = kvbench_block_on::connect_on_own_runtime(connect)?;
    Ok(Box::new(Blocking { inner, runtime }))
}
