//! What a cluster library client must do on a real private cluster of three primaries
//! ([`kvbench_servers::Cluster`]), through `&mut dyn Client`: shared by the redis-rs tests and,
//! through `#[path]`, by fred's, as `redis_operations` is. Every scenario connects the spec to
//! the cluster's seed node only; the client finds the other two.
//!
//! A slot is migrated the way `redis-cli --cluster reshard` does it ([`SlotMigration`]), and a
//! node is stopped with [`Cluster::stop_node`]. Each node is looked at directly through
//! [`Cluster::command`], never through the client under test.

use std::time::{Duration, Instant};

use kvbench_core::{Client, ClientSpec, Error, HostileOutcome, Operation, Options, Result};
use kvbench_servers::{
    AcceptedConnections, Backend, Cluster, ClusterNode, Reply, StartOptions, script,
};

/// Keys a batch scenario stores: enough that every node gets thousands.
pub const MANY: usize = 100_000;

/// A private cluster; panics if it cannot start.
pub fn start() -> Cluster {
    Cluster::start_private(&StartOptions::default()).expect("start a private cluster")
}

/// Connects `spec` to the cluster's seed node; panics, naming the spec, if it cannot.
pub fn connect(spec: &ClientSpec, cluster: &Cluster, options: &Options) -> Box<dyn Client> {
    (spec.connect)(&cluster.seed(), options)
        .unwrap_or_else(|err| panic!("{} cannot connect to the cluster: {err}", spec.name))
}

/// One command on one node, which must not be refused.
pub fn on(cluster: &Cluster, node: &ClusterNode, args: &[&[u8]]) -> Reply {
    match cluster.command(node, args).expect("the node answers") {
        Reply::Error(message) => panic!("{} refused {args:?}: {message}", node.addr),
        reply => reply,
    }
}

/// The slot of `key`, as the cluster computes it.
pub fn slot_of(cluster: &Cluster, key: &[u8]) -> u16 {
    let reply = on(cluster, &cluster.nodes()[0], &[b"CLUSTER", b"KEYSLOT", key]);
    let slot = reply.integer().expect("CLUSTER KEYSLOT answers a number");
    u16::try_from(slot).expect("a slot")
}

/// The index of the node that served `key`'s slot when the cluster started.
pub fn owner(cluster: &Cluster, key: &[u8]) -> usize {
    let slot = slot_of(cluster, key);
    (cluster.nodes().iter())
        .position(|node| node.serves(slot))
        .expect("every slot is served")
}

/// The keys stored on `node`, as it counts them.
pub fn keys_on(cluster: &Cluster, node: &ClusterNode) -> i64 {
    on(cluster, node, &[b"DBSIZE"]).integer().expect("DBSIZE")
}

/// For each node, in order, a hash tag whose slot it serves: a key `{tag}:name` lives there.
pub fn tag_per_node(cluster: &Cluster) -> Vec<String> {
    (0..cluster.nodes().len())
        .map(|index| {
            (0..)
                .map(|n| format!("node-{n}"))
                .find(|tag| owner(cluster, tag.as_bytes()) == index)
                .expect("some tag lands on every node")
        })
        .collect()
}

/// The round trips of [`script::round_trips`] on every node (each with keys of its own hash
/// tag), each value checked on the node that owns it, then the optional operations `spec`
/// declares on keys of every node, and a pipelined read across all of them, in order.
pub fn round_trips_on_every_node(spec: &ClientSpec) {
    let cluster = start();
    let mut client = connect(spec, &cluster, &Options::default());
    let tags = tag_per_node(&cluster);
    for (node, tag) in cluster.nodes().iter().zip(&tags) {
        let key = |name: &str| format!("{{{tag}}}:{name}").into_bytes();
        script::round_trips(&mut *client, key);
        client.set(&key("here"), tag.as_bytes()).unwrap();
        let stored = on(&cluster, node, &[b"GET", &key("here")]);
        assert_eq!(stored.text().as_deref(), Some(&tag[..]), "on {}", node.addr);
    }

    let here: Vec<Vec<u8>> = tags
        .iter()
        .map(|tag| format!("{{{tag}}}:here").into_bytes())
        .collect();
    let mut batch: Vec<&[u8]> = here.iter().map(Vec::as_slice).collect();
    batch.insert(1, b"{node-x}:missing");
    let mut expected: Vec<Option<Vec<u8>>> = tags
        .iter()
        .map(|tag| Some(tag.clone().into_bytes()))
        .collect();
    expected.insert(1, None);
    let read = client.get_many_pipelined(&batch).unwrap();
    assert_eq!(read, expected, "get_many_pipelined across the nodes");
    let get_many = client.get_many(&batch);
    if spec.implements(Operation::GetMany) {
        assert_eq!(get_many.unwrap(), expected, "get_many across the nodes");
    } else {
        assert!(
            matches!(get_many, Err(Error::Unsupported(_))),
            "{get_many:?}"
        );
    }

    for tag in &tags {
        let key = |name: &str| format!("{{{tag}}}:{name}").into_bytes();
        let incr = client.incr(&key("counter"));
        let hset = client.hset_many(&key("hash"), &[(b"f", b"v"), (b"g", b"w")]);
        let transaction = client.transaction(&[(&key("t1"), b"1"), (&key("t2"), b"2")]);
        if spec.implements(Operation::Incr) {
            assert_eq!(incr.unwrap(), 1);
        } else {
            assert!(matches!(incr, Err(Error::Unsupported(_))), "{incr:?}");
        }
        if spec.implements(Operation::Hash) {
            hset.unwrap();
            let mut fields = client.hgetall(&key("hash")).unwrap();
            fields.sort();
            assert_eq!(
                fields,
                [
                    (b"f".to_vec(), b"v".to_vec()),
                    (b"g".to_vec(), b"w".to_vec())
                ]
            );
        } else {
            assert!(matches!(hset, Err(Error::Unsupported(_))), "{hset:?}");
        }
        assert!(
            spec.implements(Operation::Transaction)
                || matches!(transaction, Err(Error::Unsupported(_))),
            "{transaction:?}"
        );
    }

    for tag in &tags {
        let key = |name: &str| format!("{{{tag}}}:{name}").into_bytes();
        script::expires_within(&mut *client, key, Duration::from_millis(1100));
    }
}

/// [`MANY`] items in one `set_many`, spread over every node, then read back in one
/// `get_many_pipelined`: every value, in the keys' order, and each node holding its share. With
/// `timeout` on every call: for a client whose timeout bounds a whole batch.
pub fn set_many_spread_over_the_nodes(spec: &ClientSpec, timeout: Duration) {
    let cluster = start();
    let mut client = connect(spec, &cluster, &Options::with_timeout(timeout));
    let (keys, values) = script::numbered(|name| name.as_bytes().to_vec(), MANY);
    client.set_many(&script::items(&keys, &values)).unwrap();
    let stored: Vec<i64> = (cluster.nodes().iter())
        .map(|node| keys_on(&cluster, node))
        .collect();
    assert_eq!(
        stored.iter().sum::<i64>(),
        MANY as i64,
        "keys per node: {stored:?}"
    );
    assert!(
        stored.iter().all(|&n| n > MANY as i64 / 10),
        "keys per node: {stored:?}"
    );
    let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let read = client.get_many_pipelined(&key_refs).unwrap();
    assert_eq!(read.len(), MANY);
    for (n, (value, want)) in read.iter().zip(&values).enumerate() {
        assert_eq!(value.as_ref(), Some(want), "key many:{n}");
    }
}

/// A slot moved from one node to another the way `redis-cli --cluster reshard` moves it: the
/// target is told it is `IMPORTING` the slot, the source that it is `MIGRATING` it, keys are
/// moved with `MIGRATE`, then every node is told the target owns it (`SETSLOT … NODE`).
/// Meanwhile the source answers `ASK` for a key of the slot it no longer holds, and once the
/// slot is handed over every node answers `MOVED`.
pub struct SlotMigration {
    /// The slot that moves.
    pub slot: u16,
    /// Where it is served from when the migration begins.
    pub source: ClusterNode,
    /// Where it goes: the next node.
    pub target: ClusterNode,
}

/// `MIGRATE`'s timeout, in milliseconds.
const MIGRATE_TIMEOUT_MS: &[u8] = b"5000";

impl SlotMigration {
    /// Marks `slot` as leaving its node for the next one (no key has moved yet).
    pub fn begin(cluster: &Cluster, slot: u16) -> SlotMigration {
        let nodes = cluster.nodes();
        let from = (nodes.iter())
            .position(|node| node.serves(slot))
            .expect("served");
        let migration = SlotMigration {
            slot,
            source: nodes[from].clone(),
            target: nodes[(from + 1) % nodes.len()].clone(),
        };
        let (source, target) = (&migration.source, &migration.target);
        migration.set_slot(cluster, target, b"IMPORTING", source);
        migration.set_slot(cluster, source, b"MIGRATING", target);
        migration
    }

    /// Moves up to `count` of the slot's keys still on the source; returns how many moved.
    pub fn move_keys(&self, cluster: &Cluster, count: usize) -> usize {
        let (slot, count) = (self.slot.to_string(), count.to_string());
        let keys = on(
            cluster,
            &self.source,
            &[
                b"CLUSTER",
                b"GETKEYSINSLOT",
                slot.as_bytes(),
                count.as_bytes(),
            ],
        );
        let keys: Vec<Vec<u8>> = (keys.elements().expect("an array").iter())
            .map(|key| match key {
                Reply::Bulk(Some(key)) => key.clone(),
                other => panic!("GETKEYSINSLOT answered {other:?}"),
            })
            .collect();
        if keys.is_empty() {
            return 0;
        }
        let (host, port) = self.target.addr.rsplit_once(':').expect("host:port");
        let mut migrate: Vec<&[u8]> = vec![
            b"MIGRATE",
            host.as_bytes(),
            port.as_bytes(),
            b"",
            b"0",
            MIGRATE_TIMEOUT_MS,
            b"KEYS",
        ];
        migrate.extend(keys.iter().map(Vec::as_slice));
        assert_eq!(
            on(cluster, &self.source, &migrate),
            Reply::Status("OK".into())
        );
        keys.len()
    }

    /// Moves every key left, then hands the slot to the target: the target and the source are
    /// told first, then the other nodes.
    pub fn finish(self, cluster: &Cluster) {
        while self.move_keys(cluster, 1000) > 0 {}
        let others = (cluster.nodes().iter())
            .filter(|node| node.id != self.source.id && node.id != self.target.id);
        for node in [&self.target, &self.source].into_iter().chain(others) {
            self.set_slot(cluster, node, b"NODE", &self.target);
        }
    }

    /// `CLUSTER SETSLOT <slot> <state> <about's id>` on `node`.
    fn set_slot(&self, cluster: &Cluster, node: &ClusterNode, state: &[u8], about: &ClusterNode) {
        let slot = self.slot.to_string();
        let args: &[&[u8]] = &[
            b"CLUSTER",
            b"SETSLOT",
            slot.as_bytes(),
            state,
            about.id.as_bytes(),
        ];
        on(cluster, node, args);
    }
}

/// How a call ended, as the migration and node-stop records name it: `Ok`, `Ok(wrong)` for a
/// value that is not the one expected, or the error's variant as the hostile-server tests name
/// it (`Err(Server)`, …).
pub fn outcome<T: PartialEq>(result: &Result<T>, expected: &T) -> &'static str {
    match result {
        Ok(value) if value == expected => "Ok",
        Ok(_) => "Ok(wrong)",
        Err(Error::Server(_)) => HostileOutcome::SERVER,
        Err(Error::Io(_)) => HostileOutcome::IO,
        Err(Error::Timeout(_)) => HostileOutcome::TIMED_OUT,
        Err(Error::Protocol(_)) => HostileOutcome::PROTOCOL,
        Err(Error::Connect { .. }) => "Err(Connect)",
        Err(Error::InvalidInput(_)) => "Err(InvalidInput)",
        Err(Error::Unsupported(_)) => "Err(Unsupported)",
    }
}

/// What each call of [`a_slot_migration`] did at each stage, and the first error's text.
#[derive(Debug, Default)]
pub struct Migrated {
    /// `(stage, call, outcome)`, in the order the calls were made.
    pub calls: Vec<(&'static str, &'static str, &'static str)>,
    /// The first error met, in full.
    pub first_error: Option<String>,
}

impl Migrated {
    /// Makes one call and notes how it ended; a panic (in the library) is caught and noted as
    /// `panicked`.
    fn call<T: PartialEq>(
        &mut self,
        stage: &'static str,
        call: &'static str,
        expected: &T,
        f: impl FnOnce() -> Result<T>,
    ) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let (ended, error) = match &result {
            Ok(result) => (
                outcome(result, expected),
                result.as_ref().err().map(Error::to_string),
            ),
            Err(_) => ("panicked", Some("panicked".to_string())),
        };
        self.calls.push((stage, call, ended));
        if self.first_error.is_none()
            && let Some(error) = error
        {
            self.first_error = Some(format!("{stage} {call}: {error}"));
        }
    }
}

/// Keys of one slot (hash tag `{moving}`) and a key on every node are stored; the slot is
/// migrated half-way (the source answers `ASK` for the keys that left), then handed over (every
/// node answers `MOVED`). At each stage the client reads every key (GETs, stopping at the first
/// that fails, and the batch reads it has), stores a new key of the slot and overwrites every
/// key in one `set_many` across the nodes; each call's outcome is recorded. With `timeout` on
/// every call, so that a client that stops answering costs seconds. At the end, looking at the
/// nodes directly: no key lost or left behind, wherever the calls failed.
pub fn a_slot_migration(spec: &ClientSpec, timeout: Duration) -> Migrated {
    let cluster = start();
    let mut client = connect(spec, &cluster, &Options::with_timeout(timeout));
    let moving: Vec<Vec<u8>> = (0..40)
        .map(|n| format!("{{moving}}:{n}").into_bytes())
        .collect();
    let tags = tag_per_node(&cluster);
    let elsewhere = tags
        .iter()
        .map(|tag| format!("{{{tag}}}:still").into_bytes());
    let all: Vec<Vec<u8>> = moving.iter().cloned().chain(elsewhere).collect();
    let key_refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    let set_all = |client: &mut dyn Client, value: &[u8]| {
        let items: Vec<(&[u8], &[u8])> = all.iter().map(|key| (&key[..], value)).collect();
        client.set_many(&items)
    };
    set_all(&mut *client, b"before").unwrap();

    let mut seen = Migrated::default();
    // The batches first: a client that has met no redirection yet for the slot meets its first
    // in a batch.
    let stage = |seen: &mut Migrated, client: &mut dyn Client, stage: &'static str, now: &[u8]| {
        let expected = vec![Some(now.to_vec()); all.len()];
        seen.call(stage, "get_many_pipelined", &expected, || {
            client.get_many_pipelined(&key_refs)
        });
        if spec.implements(Operation::GetMany) {
            seen.call(stage, "get_many", &expected, || client.get_many(&key_refs));
        }
        let expected = Some(now.to_vec());
        seen.call(stage, "get", &expected, || {
            let first_wrong = all
                .iter()
                .map(|key| client.get(key))
                .find(|got| got.as_ref().ok() != Some(&expected));
            first_wrong.unwrap_or(Ok(expected.clone()))
        });
        seen.call(stage, "set", &(), || {
            client.set(b"{moving}:new", stage.as_bytes())
        });
        seen.call(stage, "set_many", &(), || set_all(client, stage.as_bytes()));
    };

    let slot = slot_of(&cluster, b"moving");
    let migration = SlotMigration::begin(&cluster, slot);
    assert_eq!(migration.move_keys(&cluster, 20), 20);
    let asked = cluster
        .command(&migration.source, &[b"GET", b"{moving}:nowhere"])
        .unwrap();
    assert!(
        matches!(&asked, Reply::Error(ask) if ask.starts_with("ASK ")),
        "{asked:?}"
    );
    stage(&mut seen, &mut *client, "half-way", b"before");

    let (source, target) = (migration.source.clone(), migration.target.clone());
    migration.finish(&cluster);
    // Whatever the calls above stored, every key now holds this, set on the node that owns it.
    for key in &all {
        let node = if moving.contains(key) {
            &target
        } else {
            &cluster.nodes()[owner(&cluster, key)]
        };
        on(&cluster, node, &[b"SET", key, b"handed over"]);
    }
    stage(&mut seen, &mut *client, "handed over", b"handed over");

    let slot = slot.to_string();
    let count = |node: &ClusterNode| {
        on(
            &cluster,
            node,
            &[b"CLUSTER", b"COUNTKEYSINSLOT", slot.as_bytes()],
        )
        .integer()
    };
    assert_eq!(count(&source), Some(0), "nothing left behind");
    let total: i64 = (cluster.nodes().iter())
        .map(|node| keys_on(&cluster, node))
        .sum();
    let new = i64::from(count(&target) == Some(moving.len() as i64 + 1));
    assert_eq!(
        count(&target),
        Some(moving.len() as i64 + new),
        "every key of the slot moved"
    );
    assert_eq!(total, all.len() as i64 + new, "no key lost, none doubled");
    seen
}

/// What calls did once a node was stopped: for a key on the stopped node and for keys on the
/// others, each call's outcome and how long it took.
#[derive(Debug)]
pub struct AfterAStop {
    /// GETs of a key the stopped node served, one after the other.
    pub stopped: Vec<(&'static str, Duration)>,
    /// Then one GET per node still running, of a key it serves.
    pub running: Vec<(&'static str, Duration)>,
}

/// Connects with `timeout`, stores a key on every node, stops the last node (not the seed), and
/// records `gets` GETs of its key, then one GET of each other node's key.
pub fn after_a_node_stops(spec: &ClientSpec, timeout: Duration, gets: usize) -> AfterAStop {
    let mut cluster = start();
    let mut client = connect(spec, &cluster, &Options::with_timeout(timeout));
    let keys: Vec<Vec<u8>> = (tag_per_node(&cluster).iter())
        .map(|tag| format!("{{{tag}}}:k").into_bytes())
        .collect();
    for key in &keys {
        client.set(key, b"v").unwrap();
    }
    let stopped = keys.len() - 1;
    cluster.stop_node(stopped).expect("stop a private node");
    let mut timed = |key: &[u8]| {
        let started = Instant::now();
        let got = client.get(key);
        (outcome(&got, &Some(b"v".to_vec())), started.elapsed())
    };
    let on_stopped = (0..gets).map(|_| timed(&keys[stopped])).collect();
    let on_running = keys[..stopped].iter().map(|key| timed(key)).collect();
    AfterAStop {
        stopped: on_stopped,
        running: on_running,
    }
}

/// `callers` callers at once share `spec`'s shared client, opened on the seed node: each sets
/// and reads back values of its own ([`script::callers_get_their_own_values`]), on keys spread
/// over every node. Returns the connections each node accepted meanwhile, counted by the node.
pub fn callers_share_the_cluster(spec: &ClientSpec, callers: usize) -> Vec<u64> {
    let cluster = start();
    let connect = (spec.concurrency.connect_shared())
        .unwrap_or_else(|| panic!("{} declares no shared client", spec.name));
    let mut counters: Vec<AcceptedConnections> = (cluster.nodes().iter())
        .map(|node| {
            AcceptedConnections::open(Backend::Redis, &node.endpoint(), Options::DEFAULT_TIMEOUT)
                .expect("a counting connection")
        })
        .collect();
    let mut counts = || -> Vec<u64> {
        (counters.iter_mut())
            .map(|counter| counter.count().expect("INFO stats"))
            .collect()
    };
    let before = counts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (seed, options) = (cluster.seed(), Options::default());
    runtime.block_on(async {
        let connections = spec.concurrency.connections(callers);
        let shared = connect(&seed, &options, connections).await;
        let shared = shared.expect("the shared client connects");
        let key = |caller: usize| format!("caller:{caller}").into_bytes();
        script::callers_get_their_own_values(&*shared, callers, key).await;
        // Dropped inside the runtime: a client that quits on drop spawns its QUIT there.
        drop(shared);
    });
    let after = counts();
    after
        .iter()
        .zip(&before)
        .map(|(after, before)| after - before)
        .collect()
}
