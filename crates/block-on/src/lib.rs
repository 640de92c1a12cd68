//! `kvbench-block-on`: how an async library client is put behind the synchronous contract. Its
//! lesson is the price of a blocking face on an async client: the adapter owns a current-thread
//! tokio runtime and blocks on each call, so the library's tasks (a multiplexer's driver, a
//! router, a reader) run only while a call is being blocked on. It gives up what such a library is
//! built for, many callers on one connection; a library's shared client
//! ([`kvbench_core::Concurrency`]) gives that back.
//!
//! [`kvbench_core::impl_client_by_blocking_on!`] writes each call's `block_on`; this crate builds
//! the runtime and opens the client on it, once for every async library (`kvbench-lib-redis`,
//! `kvbench-lib-fred`). `kvbench-core` names no runtime, so this cannot live there.
#![deny(missing_docs)]

use std::future::Future;

use kvbench_core::{Error, Result};
pub use tokio::runtime::Runtime;

/// Builds the current-thread runtime a blocking adapter owns (I/O and timers enabled) and runs
/// `connect` to completion on it. Returns both: the client, whose tasks live on that runtime, and
/// the runtime each later call blocks on.
///
/// `connect` is created before the runtime exists but polled only inside it, so it may spawn
/// tasks (an `async fn` does nothing until it is first polled).
pub fn connect_on_own_runtime<T>(connect: impl Future<Output = Result<T>>) -> Result<(Runtime, T)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Io)?;
    let client = runtime.block_on(connect)?;
    Ok((runtime, client))
}
