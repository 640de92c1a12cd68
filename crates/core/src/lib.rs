//! `kvbench-core`: the contract every client implements, and the plumbing every hand-written
//! client shares. Its lesson is a small contract: four required methods and a `set_many` whose
//! default loops over `set` let one conformance kit and one benchmark run every client, and make
//! pipelining an override whose gain is measured. It gives up everything the contract does not
//! name (scripts, pub/sub, WATCH, async calls from the blocking face). Read it first, then compare
//! `raw-tcp` (which keeps the default `set_many`) with `buffered` (which overrides it).
//!
//! # The contract
//!
//! [`Client`] has four required methods — [`get`](Client::get), [`set`](Client::set),
//! [`set_ex`](Client::set_ex) and [`delete`](Client::delete) — and two provided ones,
//! [`set_many`](Client::set_many) and [`get_many_pipelined`](Client::get_many_pipelined), whose
//! defaults send one command after another: a client that can pipeline overrides them, every
//! other client gets a correct (if slow) pipeline for free, and the benchmark shows what the
//! override buys. The optional operations ([`Operation`]) refuse by default with
//! [`Error::Unsupported`] before sending anything; a client that implements one declares it in
//! its spec, and the kit checks both that declared operations work and that the others refuse.
//!
//! # The rest, one concern a module
//!
//! - [`error`]: one typed [`Error`] (a test can tell "the server said no" from "the client
//!   misread the reply"), and [`Broken`], the state of a connection that must not be used again.
//! - [`spec`]: a [`ClientSpec`] describes a client (name, backend, transports, how `set_many`
//!   works, what it cannot do, how to connect it); the suite's one list of clients is a list of
//!   these, and the kit and the bench select by what they declare.
//!   [`ClientSpec::HAND_WRITTEN`] is the base a hand-written client's spec starts from.
//! - [`shared`]: how a client serves many callers at once ([`Concurrency`], [`SharedClient`]).
//! - [`asynchronous`]: the natively async face ([`AsyncClient`]) and the macros that put a
//!   library's async client behind either face.
//! - [`endpoint`]: where to connect ([`Endpoint`]), the [`Options`] every client honours — with
//!   the [timeout rules](Options#timeouts) every client follows — and the socket set-up every
//!   hand-written client shares ([`connect_tcp_stream`], [`connect_unix_stream`]).
//! - [`ReadBuffer`]: the reused read buffer replies are parsed in, whatever the protocol, with its
//!   [`ReplyDeadline`]; [`Wire`]: a blocking stream with that buffer, a reused write buffer and its
//!   [`Broken`] state, which every hand-written blocking connection is built on. [`Stream`] (either
//!   transport's socket as one type) is for the suite's own probes, meters and test servers.
#![deny(missing_docs)]

pub use client::{Client, Operation, one_per_key};
pub use error::{Broken, Error, Result};

pub mod asynchronous;
pub mod client;
pub mod endpoint;
pub mod error;
mod read_buffer;
pub mod shared;
pub mod spec;
mod stream;
mod wire;

pub use asynchronous::{AsyncClient, BoxFuture};
pub use endpoint::{
    Backend, Endpoint, Options, ReplyDeadline, Transport, connect_tcp_stream, connect_unix_stream,
};
pub use read_buffer::ReadBuffer;
pub use shared::{
    Concurrency, ConnectShared, ConnectSharedFn, Handle, SharedClient, connect_shared_boxed,
};
pub use spec::{
    ClientSpec, ConnectAsyncFn, ConnectFn, HostileOutcome, Kind, KnownDefect, Limitation,
    Pipelining,
};
pub use stream::Stream;
pub use wire::Wire;

#[cfg(test)]
mod tests;
