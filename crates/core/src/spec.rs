//! A client as the suite lists it: its [`ClientSpec`] and what the spec is made of.

use std::fmt;

use crate::{
    AsyncClient, Backend, BoxFuture, Client, Concurrency, Endpoint, Error, Operation, Options,
    Result, Transport,
};

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
    /// The base of a hand-written client's spec, so that the spec names only what makes the
    /// client different: `ClientSpec { name, backend, summary, connect, .., ..ClientSpec::HAND_WRITTEN }`.
    /// Both transports, one connection per caller ([`Concurrency::Threads`]), the contract's
    /// default `set_many` loop, no optional operation, no limitation, not the loopback floor.
    /// Its `name`, `backend`, `summary` and `connect` are placeholders that every spec sets.
    pub const HAND_WRITTEN: ClientSpec = ClientSpec {
        name: "",
        backend: Backend::Redis,
        transports: Transport::ALL,
        kind: Kind::HandWritten,
        summary: "",
        pipelining: Pipelining::OneByOne("one round trip per item (the contract's default loop)"),
        limitations: &[],
        slow_round_trip: None,
        known_defects: &[],
        hostile_outcomes: &[],
        loopback_floor: false,
        connect: |_, _| Err(Error::Unsupported("a spec that sets no connect".into())),
        connect_async: None,
        concurrency: Concurrency::Threads,
        operations: &[],
    };

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
