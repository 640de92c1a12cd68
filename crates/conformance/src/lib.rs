//! The conformance kit: each behaviour written once, run over every (client, transport) pair.
//!
//! Like ripgrep's searcher tester, a behaviour is a plain function over the contract
//! ([`kvbench_core::Client`]); [`cases`] crosses the list of behaviours with the list of clients
//! and the transports each client supports, and names every case `client/transport/behaviour`.
//!
//! What the server holds is always checked through an independent [`Reference`] connection, so a
//! client cannot pass by reading back its own mistakes.
//!
//! A behaviour a client declares it cannot perform (a [`kvbench_core::Limitation`]) is not
//! skipped: the case checks that the client *refuses* it with a typed error
//! ([`Error::InvalidInput`] or [`Error::Unsupported`]), and that the connection still works after.
//!
//! The contract's optional operations ([`Operation`]) have a behaviour each (`incr`, `get_many`,
//! `hash`, `transaction`; and `get_many_pipelined`, which every client has). A client whose spec
//! does not declare one ([`kvbench_core::ClientSpec::operations`]) is not skipped either: its
//! case checks that each call of the operation fails with [`Error::Unsupported`], stores nothing
//! and leaves the connection usable, and is reported unsupported.
//!
//! A client many callers share (its spec's `concurrency` is `Multiplexed` or `Pool`) also meets
//! the [`shared`] behaviours, on the same transports and under the same names: many callers at
//! once, each of which must get exactly its own replies, also when calls are cancelled, when one
//! caller's command gets an error reply, when the server closes the connection, and when some
//! callers run transactions among the others' commands.
//!
//! Keys carry the server's run prefix (empty on a private server; `kvbench:<run>:` on an external
//! one), and on an external server every key a case wrote is deleted when it ends. Nothing is
//! ever flushed.
#![deny(missing_docs)]

pub mod cluster;
pub mod kit;
mod operations;
mod reference;
pub mod shared;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Error, Operation, Options, Transport};
use kvbench_servers::Servers;

pub use cluster::{CLUSTER_BEHAVIOURS, ClusterBehaviour};
pub use operations::{
    BATCH_KEYS, SLOW_BATCH_KEYS, SLOW_TRANSACTION_KEYS, SLOW_TRANSACTION_ROUNDS, TRANSACTION_KEYS,
    TRANSACTION_ROUNDS,
};
pub use reference::Reference;
pub use shared::{SERVER_CLOSE, SHARED_BEHAVIOURS, SharedBehaviour};

/// One behaviour of the kit.
pub struct Behaviour {
    /// Short name, used in case names and in [`kvbench_core::Limitation::behaviour`].
    pub name: &'static str,
    /// What it checks, in one line.
    pub about: &'static str,
    /// The optional operation it exercises: a client whose spec does not declare it meets a
    /// refusal check instead.
    pub operation: Option<Operation>,
    run: fn(&mut Case) -> Outcome,
}

/// Every behaviour, in the order cases are listed.
pub const BEHAVIOURS: &[Behaviour] = &[
    Behaviour {
        name: "hit",
        about: "a stored value reads back, both ways",
        operation: None,
        run: hit,
    },
    Behaviour {
        name: "miss",
        about: "a key never written reads as none",
        operation: None,
        run: miss,
    },
    Behaviour {
        name: "overwrite",
        about: "a second set replaces the first",
        operation: None,
        run: overwrite,
    },
    Behaviour {
        name: "empty_value",
        about: "an empty value is a hit, not a miss",
        operation: None,
        run: empty_value,
    },
    Behaviour {
        name: "binary_safe",
        about: "all 256 byte values, CR LF and NUL included",
        operation: None,
        run: binary_safe,
    },
    Behaviour {
        name: "large_value",
        about: "a 1 MiB value round-trips",
        operation: None,
        run: large_value,
    },
    Behaviour {
        name: "set_ex",
        about: "set with expiry: the TTL is visible / the key expires",
        operation: None,
        run: set_ex,
    },
    Behaviour {
        name: "delete",
        about: "delete removes, and says whether the key existed",
        operation: None,
        run: delete,
    },
    Behaviour {
        name: "set_many",
        about: "a pipelined set of 100,000 items, all verified (10,000 for a set_many that waits \
                for each reply)",
        operation: None,
        run: set_many,
    },
    Behaviour {
        name: "error_reply",
        about: "a server error is typed and the connection survives",
        operation: None,
        run: error_reply,
    },
    Behaviour {
        name: "incr",
        about: "a stored counter increments; a missing key counts from 0 (Redis) or is an error \
                reply (memcached); a value that is not a number, and i64::MAX, are error replies, \
                the value left as the server has it",
        operation: Some(Operation::Incr),
        run: operations::incr,
    },
    Behaviour {
        name: "get_many",
        about: "one command for many keys: hits and misses interleaved, a key twice, binary and \
                empty values, 1 key, none, 1,000 keys; values in key order",
        operation: Some(Operation::GetMany),
        run: operations::get_many,
    },
    Behaviour {
        name: "get_many_pipelined",
        about: "the same reads as get_many, by get_many_pipelined (every client has it)",
        operation: None,
        run: operations::get_many_pipelined,
    },
    Behaviour {
        name: "hash",
        about: "100 fields by hset_many read back by hgetall (and the reference's by the client); \
                a missing key is empty; a string is a WRONGTYPE error reply",
        operation: Some(Operation::Hash),
        run: operations::hash,
    },
    Behaviour {
        name: "transaction",
        about: "items stored by MULTI … EXEC; a reader on its own connection never sees part of a \
                transaction of 200 keys; the server counted an EXEC per transaction",
        operation: Some(Operation::Transaction),
        run: operations::transaction,
    },
];

/// Number of items in the `set_many` behaviour.
pub const SET_MANY_ITEMS: usize = 100_000;

/// Items in `set_many` for a client whose every round trip is slow by design
/// ([`kvbench_core::ClientSpec::slow_round_trip`]): 200 round trips of ~40 ms are 8 s; 100,000
/// would be over an hour.
pub const SLOW_SET_MANY_ITEMS: usize = 200;

/// Items in `set_many` for a client whose `set_many` waits for each reply
/// ([`kvbench_core::Pipelining::OneByOne`]): with one command in flight, no batch fills the
/// socket buffers, so 100,000 items would only repeat the loop (for the `memcache` library's
/// eight configurations, whose pool checks each connection out with a round trip of its own,
/// that took ~160 s of the kit's case time).
pub const ONE_BY_ONE_SET_MANY_ITEMS: usize = 10_000;

/// How many items `set_many` stores for `spec`'s client, and why, if fewer than
/// [`SET_MANY_ITEMS`].
pub fn set_many_len(spec: &ClientSpec) -> (usize, Option<&'static str>) {
    match spec.slow_round_trip {
        Some(reason) => (SLOW_SET_MANY_ITEMS, Some(reason)),
        None if !spec.pipelines() => (
            ONE_BY_ONE_SET_MANY_ITEMS,
            Some("its set_many waits for each reply, so no batch fills the socket buffers"),
        ),
        None => (SET_MANY_ITEMS, None),
    }
}

/// What a behaviour other than `set_many` ([`set_many_len`]) does less of for a client whose
/// round trips are slow by design, if anything: `"20 keys in its batch, not 1000"`.
pub fn slow_sizes(behaviour: &str) -> Option<String> {
    Some(match behaviour {
        "get_many" | "get_many_pipelined" => {
            format!("{SLOW_BATCH_KEYS} keys in its batch, not {BATCH_KEYS}")
        }
        "transaction" => format!(
            "{SLOW_TRANSACTION_ROUNDS} watched transactions of {SLOW_TRANSACTION_KEYS} keys, not \
             {TRANSACTION_ROUNDS} of {TRANSACTION_KEYS}"
        ),
        _ => return None,
    })
}

/// Size of the `large_value` behaviour's value: the largest value the benchmark uses.
pub const LARGE_VALUE_LEN: usize = 1024 * 1024;

/// Why a behaviour failed.
#[derive(Debug)]
pub enum Failure {
    /// The client returned an error.
    Client(Error),
    /// The client answered, but wrongly; or the reference connection failed.
    Check(String),
}

impl From<Error> for Failure {
    fn from(err: Error) -> Self {
        Failure::Client(err)
    }
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure::Check(msg)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Client(err) => write!(f, "client error: {err} ({err:?})"),
            Failure::Check(msg) => f.write_str(msg),
        }
    }
}

/// Result of one behaviour.
pub type Outcome = Result<(), Failure>;

/// What a behaviour works with: the client under test, a reference connection, and a key space.
pub struct Case {
    /// The client under test, freshly connected.
    pub client: Box<dyn Client>,
    /// The backend it talks to.
    pub backend: Backend,
    /// An independent connection to the same server.
    pub reference: Reference,
    /// Where the server is, for a connection of a behaviour's own.
    endpoint: Endpoint,
    namespace: String,
    written: Vec<Vec<u8>>,
    /// The client's round trips are slow by design: behaviours with many round trips make fewer.
    slow: bool,
    /// How many items `set_many` stores ([`set_many_len`]).
    set_many_len: usize,
}

impl Case {
    /// A key private to this case (run prefix + client + transport + behaviour + `name`), recorded
    /// so that it can be removed from an external server afterwards.
    pub fn key(&mut self, name: &str) -> Vec<u8> {
        let key = format!("{}{name}", self.namespace).into_bytes();
        self.written.push(key.clone());
        key
    }

    /// Proves the client's connection still answers correctly.
    fn still_usable(&mut self) -> Outcome {
        let key = self.key("still-usable");
        self.client.set(&key, b"yes")?;
        expect_value(self.client.get(&key)?, b"yes", "get after the error")
    }
}

fn expect_value(got: Option<Vec<u8>>, want: &[u8], what: &str) -> Outcome {
    match got {
        Some(bytes) if bytes == want => Ok(()),
        Some(bytes) => Err(Failure::Check(format!(
            "{what}: got {} bytes {:?}, want {} bytes {:?}",
            bytes.len(),
            preview(&bytes),
            want.len(),
            preview(want)
        ))),
        None => Err(Failure::Check(format!(
            "{what}: got a miss, want {} bytes",
            want.len()
        ))),
    }
}

fn expect_miss(got: Option<Vec<u8>>, what: &str) -> Outcome {
    match got {
        None => Ok(()),
        Some(bytes) => Err(Failure::Check(format!(
            "{what}: want a miss, got {:?}",
            preview(&bytes)
        ))),
    }
}

fn preview(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(40)];
    let ellipsis = if bytes.len() > shown.len() { "..." } else { "" };
    format!("{}{ellipsis}", shown.escape_ascii())
}

fn hit(c: &mut Case) -> Outcome {
    let written_by_client = c.key("by-client");
    c.client.set(&written_by_client, b"bar")?;
    expect_value(c.client.get(&written_by_client)?, b"bar", "client get")?;
    expect_value(
        c.reference.get(&written_by_client)?,
        b"bar",
        "reference get",
    )?;

    let written_by_reference = c.key("by-reference");
    c.reference
        .set(&written_by_reference, b"from the reference")?;
    expect_value(
        c.client.get(&written_by_reference)?,
        b"from the reference",
        "client get",
    )
}

fn miss(c: &mut Case) -> Outcome {
    let key = c.key("never-written");
    expect_miss(c.client.get(&key)?, "client get")?;
    // A miss must leave the connection in step: the next reply is the next command's.
    c.still_usable()
}

fn overwrite(c: &mut Case) -> Outcome {
    let key = c.key("k");
    c.client.set(&key, b"the-first-and-longer-value")?;
    c.client.set(&key, b"2")?;
    expect_value(c.client.get(&key)?, b"2", "client get")?;
    expect_value(c.reference.get(&key)?, b"2", "reference get")
}

fn empty_value(c: &mut Case) -> Outcome {
    let key = c.key("k");
    c.client.set(&key, b"")?;
    expect_value(c.client.get(&key)?, b"", "client get")?;
    expect_value(c.reference.get(&key)?, b"", "reference get")
}

fn binary_safe(c: &mut Case) -> Outcome {
    // Every byte value, then the byte sequences a careless parser trips on: a reply terminator,
    // a RESP header, and memcached's end marker, inside the data.
    let mut value: Vec<u8> = (0..=255u8).collect();
    value.extend_from_slice(b"\r\n$3\r\nfoo\r\n\r\nEND\r\n\0\0");
    let key = c.key("k");
    c.client.set(&key, &value)?;
    expect_value(c.client.get(&key)?, &value, "client get")?;
    expect_value(c.reference.get(&key)?, &value, "reference get")
}

/// A value that is not a repeat of a short pattern, so an off-by-one shows up.
pub fn patterned_value(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn large_value(c: &mut Case) -> Outcome {
    let value = patterned_value(LARGE_VALUE_LEN);
    let key = c.key("k");
    c.client.set(&key, &value)?;
    expect_value(c.client.get(&key)?, &value, "client get")?;
    expect_value(c.reference.get(&key)?, &value, "reference get")?;
    c.still_usable()
}

fn set_ex(c: &mut Case) -> Outcome {
    match c.backend {
        Backend::Redis | Backend::RedisCluster => {
            let key = c.key("with-ttl");
            c.client.set_ex(&key, b"v", 100)?;
            expect_value(c.client.get(&key)?, b"v", "client get")?;
            let ttl = c.reference.ttl(&key)?;
            if !(1..=100).contains(&ttl) {
                return Err(format!("TTL after set_ex(100) is {ttl}, want 1..=100").into());
            }
            let plain = c.key("without-ttl");
            c.client.set(&plain, b"v")?;
            match c.reference.ttl(&plain)? {
                -1 => Ok(()),
                ttl => Err(format!("TTL after a plain set is {ttl}, want -1 (no expiry)").into()),
            }
        }
        Backend::Memcached => {
            // memcached has no TTL command: watch the key disappear instead. Its clock ticks
            // once a second, so a 2 s expiry ends between 1 and 2 s from now.
            let key = c.key("with-ttl");
            let started = Instant::now();
            c.client.set_ex(&key, b"v", 2)?;
            expect_value(
                c.reference.get(&key)?,
                b"v",
                "reference get right after set_ex(2)",
            )?;
            while c.reference.get(&key)?.is_some() {
                if started.elapsed() > Duration::from_secs(5) {
                    return Err("key set with a 2 s expiry still there after 5 s"
                        .to_string()
                        .into());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            expect_miss(c.client.get(&key)?, "client get after expiry")
        }
    }
}

fn delete(c: &mut Case) -> Outcome {
    let key = c.key("k");
    c.client.set(&key, b"v")?;
    if !c.client.delete(&key)? {
        return Err("delete of an existing key returned false"
            .to_string()
            .into());
    }
    expect_miss(c.client.get(&key)?, "client get after delete")?;
    expect_miss(c.reference.get(&key)?, "reference get after delete")?;
    if c.client.delete(&key)? {
        return Err("delete of a missing key returned true".to_string().into());
    }
    Ok(())
}

fn set_many(c: &mut Case) -> Outcome {
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..c.set_many_len)
        .map(|i| {
            (
                c.key(&format!("item:{i}")),
                format!("value-{i}").into_bytes(),
            )
        })
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    c.client.set_many(&borrowed)?;

    // Small chunks: the `memcache` crate writes a whole multi-get before reading any of it, and
    // over a Unix socket 1,000-key requests were seen to hang here (100-key ones do not).
    for chunk in items.chunks(100) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|(k, _)| k.clone()).collect();
        let values = c.reference.get_many(&keys)?;
        for ((key, want), got) in chunk.iter().zip(values) {
            expect_value(
                got,
                want,
                &format!("reference get {}", String::from_utf8_lossy(key)),
            )?;
        }
    }
    // The connection is in step after a pipeline: the next reply belongs to the next command.
    c.still_usable()
}

fn error_reply(c: &mut Case) -> Outcome {
    let result = match c.backend {
        Backend::Redis | Backend::RedisCluster => {
            let key = c.key("a-list");
            c.reference.make_list(&key)?;
            c.client.get(&key).map(drop)
        }
        Backend::Memcached => {
            // Larger than the private server's item limit (`-I 2m`).
            let key = c.key("too-large");
            c.client.set(&key, &patterned_value(2 * 1024 * 1024 + 1))
        }
    };
    match result {
        Err(Error::Server(_)) => c.still_usable(),
        Err(other) => Err(format!("want Error::Server, got {other:?}").into()),
        Ok(()) => Err("want Error::Server, got success".to_string().into()),
    }
}

/// Why a case checks for a refusal instead of the behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client declares it cannot perform the behaviour, for this reason: it must refuse
    /// with [`Error::InvalidInput`] or [`Error::Unsupported`] before sending.
    Limitation(&'static str),
    /// The behaviour exercises an optional operation the client's spec does not declare: every
    /// call of it must fail with [`Error::Unsupported`], sending nothing.
    Operation(Operation),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Limitation(reason) => f.write_str(reason),
            Refusal::Operation(operation) => write!(
                f,
                "its spec does not declare the optional operation {}",
                operation.name()
            ),
        }
    }
}

/// One (client, transport, behaviour) case, ready to run.
pub struct KitCase {
    /// `client/transport/behaviour`.
    pub name: String,
    /// If the client cannot perform the behaviour: why. The case then checks for a typed
    /// refusal instead, and is reported unsupported.
    pub unsupported: Option<Refusal>,
    /// Set when the servers offer no endpoint for this pair (an external server given on the
    /// other transport only): the case cannot run, and says why.
    pub unavailable: Option<String>,
    /// The client's [`kvbench_core::ClientSpec::slow_round_trip`] reason, if any.
    pub slow_round_trip: Option<&'static str>,
    servers: Arc<Servers>,
    spec: ClientSpec,
    transport: Transport,
    check: Check,
}

/// What a case checks: a behaviour of one connection, or of a client many callers share.
#[derive(Clone, Copy)]
enum Check {
    Client(&'static Behaviour),
    Shared(&'static SharedBehaviour, kvbench_core::ConnectSharedFn),
    Cluster(&'static ClusterBehaviour),
}

impl KitCase {
    /// What the case does less of than its behaviour's full size, and why; `None` if nothing.
    pub fn reduced(&self) -> Option<String> {
        if self.unsupported.is_some() || !matches!(self.check, Check::Client(_)) {
            return None;
        }
        if self.behaviour_name() == "set_many" {
            let (len, why) = set_many_len(&self.spec);
            return why.map(|why| format!("{len} items, not {SET_MANY_ITEMS}: {why}"));
        }
        let reason = self.slow_round_trip?;
        slow_sizes(self.behaviour_name()).map(|fewer| format!("{fewer}: {reason}"))
    }

    /// The behaviour's name.
    pub fn behaviour_name(&self) -> &'static str {
        match self.check {
            Check::Client(behaviour) => behaviour.name,
            Check::Shared(behaviour, _) => behaviour.name,
            Check::Cluster(behaviour) => behaviour.name,
        }
    }

    /// Runs the case; `Err` says what went wrong.
    pub fn run(&self) -> Result<(), String> {
        match self.check {
            Check::Client(behaviour) => self.run_client(behaviour),
            Check::Shared(behaviour, connect) => self.run_shared(behaviour, connect),
            Check::Cluster(behaviour) => self.run_cluster(behaviour),
        }
    }

    fn run_cluster(&self, behaviour: &ClusterBehaviour) -> Result<(), String> {
        let on = if behaviour.own_cluster {
            cluster::OnCluster::Own(Box::new(cluster::start_own_cluster()?))
        } else {
            cluster::OnCluster::Shared(self.servers.cluster().ok_or("no cluster was started")?)
        };
        let prefix = match &on {
            cluster::OnCluster::Shared(cluster) => cluster.key_prefix(),
            cluster::OnCluster::Own(_) => "",
        };
        let namespace = format!("{prefix}kit:{}:", self.name);
        let mut case = cluster::ClusterCase::connect(self.spec.connect, on, namespace)?;
        let mut verdict = case.run(behaviour).map_err(|failure| failure.to_string());
        let known = (self.spec.known_defects.iter()).find(|defect| defect.input == behaviour.name);
        if let (Some(defect), Err(failure)) = (known, &verdict) {
            // The library's own tests pin what happens; here it must fail in time, not hang.
            eprintln!(
                "kit: {} meets the known defect of {} {}: {failure} (declared: {})",
                self.name, defect.library, defect.version, defect.outcome
            );
            verdict = Ok(());
        }
        if case.cluster().is_external() {
            // Leave nothing behind on a cluster we do not own.
            let seed = case.cluster().seed();
            Reference::connect(Backend::RedisCluster, &seed)?.delete_many(&case.written)?;
        }
        verdict
    }

    fn run_shared(
        &self,
        behaviour: &SharedBehaviour,
        connect: kvbench_core::ConnectSharedFn,
    ) -> Result<(), String> {
        let backend = self.spec.backend;
        let endpoint = self
            .servers
            .endpoint(backend, self.transport)
            .ok_or_else(|| format!("no {backend} server on {}", self.transport))?;
        let mut case = shared::SharedCase {
            backend,
            connect,
            connections: self.spec.concurrency.connections(shared::MOST_CALLERS),
            multiplexed: matches!(
                self.spec.concurrency,
                kvbench_core::Concurrency::Multiplexed(_)
            ),
            reference: Reference::connect(backend, &endpoint)?,
            known_defects: self.spec.known_defects,
            endpoint,
            namespace: format!("{}kit:{}:", self.servers.key_prefix(backend), self.name),
            written: Vec::new(),
        };
        let outcome = match self.unsupported {
            Some(Refusal::Operation(operation)) => case.refuses(operation),
            _ => case.run(behaviour),
        };
        let verdict = outcome.map_err(|failure| failure.to_string());
        if self.servers.is_external(backend) {
            // Leave nothing behind on a server we do not own.
            let written = std::mem::take(&mut case.written);
            case.reference.delete_many(&written)?;
        }
        verdict
    }

    fn run_client(&self, behaviour: &Behaviour) -> Result<(), String> {
        let backend = self.spec.backend;
        let endpoint = self
            .servers
            .endpoint(backend, self.transport)
            .ok_or_else(|| format!("no {backend} server on {}", self.transport))?;
        let client = (self.spec.connect)(&endpoint, &Options::default())
            .map_err(|err| format!("connect to {endpoint}: {err}"))?;
        let reference = Reference::connect(backend, &endpoint)?;
        let mut case = Case {
            client,
            backend,
            reference,
            endpoint,
            namespace: format!("{}kit:{}:", self.servers.key_prefix(backend), self.name),
            written: Vec::new(),
            slow: self.spec.slow_round_trip.is_some(),
            set_many_len: set_many_len(&self.spec).0,
        };

        let verdict = match self.unsupported {
            None => (behaviour.run)(&mut case).map_err(|failure| failure.to_string()),
            Some(Refusal::Operation(operation)) => {
                operations::refuses(&mut case, operation).map_err(|failure| failure.to_string())
            }
            Some(Refusal::Limitation(reason)) => match (behaviour.run)(&mut case) {
                Err(Failure::Client(Error::InvalidInput(_) | Error::Unsupported(_))) => case
                    .still_usable()
                    .map_err(|failure| format!("after the refusal: {failure}")),
                Ok(()) => Err(format!(
                    "declared unsupported ({reason}) but it passed: remove the limitation"
                )),
                Err(other) => Err(format!(
                    "declared unsupported ({reason}): want a typed refusal \
                     (InvalidInput or Unsupported) before sending, got {other}"
                )),
            },
        };

        if self.servers.is_external(backend) {
            // Leave nothing behind on a server we do not own.
            let written = std::mem::take(&mut case.written);
            case.reference.delete_many(&written)?;
        }
        verdict
    }
}

/// Every case for `clients`: each behaviour, on each transport the client and the servers share;
/// for a client many callers share ([`kvbench_core::Concurrency::Multiplexed`] or `Pool`), each
/// shared behaviour too.
pub fn cases(servers: &Arc<Servers>, clients: &[ClientSpec]) -> Vec<KitCase> {
    let mut cases = Vec::new();
    for spec in clients {
        for limitation in spec.limitations {
            assert!(
                BEHAVIOURS.iter().any(|b| b.name == limitation.behaviour),
                "{} declares a limitation on unknown behaviour {:?}",
                spec.name,
                limitation.behaviour
            );
        }
        for &transport in spec.transports {
            let unavailable = servers
                .endpoint(spec.backend, transport)
                .is_none()
                .then(|| {
                    format!(
                        "the external {} server has no {transport} endpoint",
                        spec.backend
                    )
                });
            // A declared limitation, or an optional operation the spec leaves out.
            let refusal = |name: &str, operation: Option<Operation>| {
                (spec.limitation(name).map(Refusal::Limitation)).or_else(|| {
                    let left_out = operation.filter(|&operation| !spec.implements(operation));
                    left_out.map(Refusal::Operation)
                })
            };
            let case = |name: &str, operation, check| KitCase {
                unavailable: unavailable.clone(),
                slow_round_trip: spec.slow_round_trip,
                name: format!("{}/{transport}/{name}", spec.name),
                unsupported: refusal(name, operation),
                servers: Arc::clone(servers),
                spec: *spec,
                transport,
                check,
            };
            for behaviour in BEHAVIOURS {
                let check = Check::Client(behaviour);
                cases.push(case(behaviour.name, behaviour.operation, check));
            }
            if spec.backend == Backend::RedisCluster {
                for behaviour in CLUSTER_BEHAVIOURS {
                    let mut case = case(behaviour.name, None, Check::Cluster(behaviour));
                    if behaviour.own_cluster && servers.is_external(spec.backend) {
                        case.unavailable.get_or_insert_with(|| {
                            format!("the cluster is external: {}", cluster::OWN_CLUSTER_NEEDS)
                        });
                    }
                    cases.push(case);
                }
            }
            let Some(connect) = spec.concurrency.connect_shared() else {
                continue;
            };
            for behaviour in SHARED_BEHAVIOURS {
                let check = Check::Shared(behaviour, connect);
                let mut case = case(behaviour.name, behaviour.operation, check);
                if behaviour.name == shared::SERVER_CLOSE && servers.is_external(spec.backend) {
                    // It runs on private servers of its own, which an external setup may not
                    // be able to start.
                    case.unavailable.get_or_insert_with(|| {
                        format!(
                            "the {} server is external: {}",
                            spec.backend,
                            shared::CLOSE_NEEDS
                        )
                    });
                }
                cases.push(case);
            }
        }
    }
    cases
}
