//! Many callers on one connection or a pool: the [`Concurrency`] models, and the
//! [`SharedClient`] each caller takes a [`Handle`] on.

use crate::{AsyncClient, BoxFuture, Client, Endpoint, Options, Result};

/// How a client serves C callers at once: the concurrency axis of the matrix. With one caller
/// there is nothing to share: every model is [`ClientSpec::connect`](crate::ClientSpec::connect) (or its async face), one
/// connection, or the pool of a spec that is one.
#[derive(Debug, Clone, Copy)]
pub enum Concurrency {
    /// C OS threads, each with its own connection from [`ClientSpec::connect`](crate::ClientSpec::connect): the default of
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
