//! The cluster behaviours: what only a client of a Redis Cluster must do. Such a client
//! ([`Backend::RedisCluster`]) meets every behaviour of the kit through a seed node, and these
//! too: it routes each key to the node serving its slot, keeps keys of one hash tag together,
//! follows a slot that moves (`ASK` while it migrates, `MOVED` once it has) without the caller
//! seeing either, and fails promptly, with an error, on a node that is gone.
//!
//! Where a key lives is asked of the nodes themselves (`CLUSTER KEYSLOT`, and `EXISTS` on one
//! node's own connection), never of the client under test, and the values are read back through
//! the kit's [`Reference`] (redis-rs's cluster client).
//!
//! A migration and a stopped node change a cluster for everyone on it, so those two cases run
//! on a private cluster of their own, started for the case and stopped after it.

use std::time::{Duration, Instant};

use kvbench_core::{Backend, Client, Options};
use kvbench_servers::{Cluster, ClusterNode, Reply, StartOptions};

use crate::{Failure, Outcome, Reference, expect_value};

/// One behaviour of a cluster client.
pub struct ClusterBehaviour {
    /// Short name, used in case names.
    pub name: &'static str,
    /// What it checks, in one line.
    pub about: &'static str,
    /// True if it reconfigures or stops nodes, and so runs on a private cluster of its own.
    pub own_cluster: bool,
    run: fn(&mut ClusterCase) -> Outcome,
}

/// Why a case of a behaviour with [`ClusterBehaviour::own_cluster`] cannot run against an
/// external cluster.
pub const OWN_CLUSTER_NEEDS: &str =
    "the case moves a slot or stops a node, on a private cluster it starts for itself";

/// Every cluster behaviour, in the order cases are listed.
pub const CLUSTER_BEHAVIOURS: &[ClusterBehaviour] = &[
    ClusterBehaviour {
        name: "cluster_spread",
        about: "keys written through the client are each on the node serving their slot, and \
                every node holds some",
        own_cluster: false,
        run: spread,
    },
    ClusterBehaviour {
        name: "cluster_hash_tag",
        about: "two keys with one {hash tag} share a slot and a node",
        own_cluster: false,
        run: hash_tag,
    },
    ClusterBehaviour {
        name: "cluster_slot_migration",
        about: "a slot migrated mid-test is followed through ASK, then MOVED: no error reaches \
                the caller and no key is lost",
        own_cluster: true,
        run: slot_migration,
    },
    ClusterBehaviour {
        name: "cluster_node_stopped",
        about: "a stopped node's keys fail promptly with an error, alone and in a batch over \
                every node; the other nodes' keys still read back their own values",
        own_cluster: true,
        run: node_down,
    },
];

/// Longest a call to a stopped node may take to fail: a hang guard, not a performance claim
/// (the stopped process's sockets are closed, so an honest client learns it at once).
const NODE_DOWN_DEADLINE: Duration = Duration::from_secs(10);

/// The cluster a case runs on.
pub enum OnCluster<'a> {
    /// The kit's, shared with every other case.
    Shared(&'a Cluster),
    /// A private one, the case's alone ([`ClusterBehaviour::own_cluster`]).
    Own(Box<Cluster>),
}

/// One cluster case: the client under test, connected through the cluster's seed node.
pub struct ClusterCase<'a> {
    client: Box<dyn Client>,
    on: OnCluster<'a>,
    namespace: String,
    /// Every key the case wrote (deleted afterwards from an external cluster).
    pub written: Vec<Vec<u8>>,
}

impl<'a> ClusterCase<'a> {
    /// Connects `connect`'s client to `cluster`'s seed node.
    pub fn connect(
        connect: kvbench_core::ConnectFn,
        on: OnCluster<'a>,
        namespace: String,
    ) -> Result<Self, String> {
        let seed = match &on {
            OnCluster::Shared(cluster) => cluster.seed(),
            OnCluster::Own(cluster) => cluster.seed(),
        };
        let client = connect(&seed, &Options::default())
            .map_err(|err| format!("connect to the cluster at {seed}: {err}"))?;
        Ok(ClusterCase {
            client,
            on,
            namespace,
            written: Vec::new(),
        })
    }

    /// The cluster it runs on.
    pub fn cluster(&self) -> &Cluster {
        match &self.on {
            OnCluster::Shared(cluster) => cluster,
            OnCluster::Own(cluster) => cluster,
        }
    }

    /// Stops node `index` of the case's own cluster.
    fn stop_node(&mut self, index: usize) -> Outcome {
        let OnCluster::Own(cluster) = &mut self.on else {
            return Err("a node of the shared cluster would be stopped"
                .to_string()
                .into());
        };
        cluster
            .stop_node(index)
            .map_err(|err| format!("stopping node {index}: {err}").into())
    }

    /// Runs `behaviour`.
    pub fn run(&mut self, behaviour: &ClusterBehaviour) -> Outcome {
        (behaviour.run)(self)
    }

    fn key(&mut self, name: &str) -> Vec<u8> {
        let key = format!("{}{name}", self.namespace).into_bytes();
        self.written.push(key.clone());
        key
    }

    /// Sends one command to one node, on the node's own connection.
    fn on(&self, node: &ClusterNode, args: &[Vec<u8>]) -> Result<Reply, Failure> {
        let what = || format!("{:?} on {}", lossy(args), node.addr);
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        match self.cluster().command(node, &args) {
            Ok(Reply::Error(error)) => Err(format!("{}: {error}", what()).into()),
            Ok(reply) => Ok(reply),
            Err(err) => Err(format!("{}: {err}", what()).into()),
        }
    }

    /// A command that must answer a number.
    fn integer(&self, node: &ClusterNode, args: &[Vec<u8>]) -> Result<i64, Failure> {
        match self.on(node, args)? {
            Reply::Integer(n) => Ok(n),
            other => Err(format!("{:?} answered {other:?}, not a number", lossy(args)).into()),
        }
    }

    /// A command that must answer `+OK`.
    fn ok(&self, node: &ClusterNode, args: &[Vec<u8>]) -> Outcome {
        match self.on(node, args)? {
            Reply::Status(status) if status == "OK" => Ok(()),
            other => Err(format!("{:?} answered {other:?}", lossy(args)).into()),
        }
    }

    /// The slot of `key`, as the cluster computes it.
    fn slot(&self, key: &[u8]) -> Result<u16, Failure> {
        let keyslot = [b"CLUSTER".to_vec(), b"KEYSLOT".to_vec(), key.to_vec()];
        let slot = self.integer(&self.cluster().nodes()[0], &keyslot)?;
        u16::try_from(slot).map_err(|_| format!("CLUSTER KEYSLOT answered {slot}").into())
    }

    /// The index, among the nodes, of the one serving `key`'s slot.
    fn owner(&self, key: &[u8]) -> Result<usize, Failure> {
        let slot = self.slot(key)?;
        let owner = self.cluster().nodes().iter().position(|n| n.serves(slot));
        owner.ok_or_else(|| format!("no node serves slot {slot}").into())
    }

    /// Checks that node `index` holds `key`.
    fn expect_on(&self, index: usize, key: &[u8]) -> Outcome {
        let node = &self.cluster().nodes()[index];
        match self.integer(node, &[b"EXISTS".to_vec(), key.to_vec()])? {
            1 => Ok(()),
            _ => Err(format!(
                "{} is not on {}, the node serving its slot",
                String::from_utf8_lossy(key),
                node.addr
            )
            .into()),
        }
    }

    /// Reads every key back through the kit's reference (redis-rs's cluster client) and
    /// through the client.
    fn expect_all(&mut self, items: &[(Vec<u8>, Vec<u8>)], when: &str) -> Outcome {
        let mut reference = Reference::connect(Backend::RedisCluster, &self.cluster().seed())?;
        for (key, value) in items {
            let what = |by| format!("{by} get {} {when}", String::from_utf8_lossy(key));
            expect_value(self.client.get(key)?, value, &what("client"))?;
            expect_value(reference.get(key)?, value, &what("reference"))?;
        }
        Ok(())
    }
}

fn lossy(args: &[Vec<u8>]) -> Vec<String> {
    args.iter()
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect()
}

/// `count` items named `name:<i>`, each with a value of its own, written through the client.
fn write_items(c: &mut ClusterCase, name: &str, count: usize) -> Result<Items, Failure> {
    let items: Items = (0..count)
        .map(|i| {
            (
                c.key(&format!("{name}:{i}")),
                format!("value-{i}").into_bytes(),
            )
        })
        .collect();
    for (key, value) in &items {
        c.client.set(key, value)?;
    }
    Ok(items)
}

type Items = Vec<(Vec<u8>, Vec<u8>)>;

fn spread(c: &mut ClusterCase) -> Outcome {
    let items = write_items(c, "spread", 100)?;
    let mut held = vec![0; c.cluster().nodes().len()];
    for (key, _) in &items {
        let owner = c.owner(key)?;
        c.expect_on(owner, key)?;
        held[owner] += 1;
    }
    if held.contains(&0) {
        return Err(format!("100 keys, held per node: {held:?}; want some on every node").into());
    }
    c.expect_all(&items, "")
}

fn hash_tag(c: &mut ClusterCase) -> Outcome {
    // Only the part between the first `{` and the next `}` is hashed (the kit's prefix has
    // neither), so these two share a slot; the third, untagged, is hashed whole.
    let following = c.key("{user1000}.following");
    let followers = c.key("{user1000}.followers");
    c.client.set(&following, b"a")?;
    c.client.set(&followers, b"b")?;
    let slot = c.slot(&following)?;
    if c.slot(&followers)? != slot {
        return Err("two keys tagged {user1000} are in different slots"
            .to_string()
            .into());
    }
    let owner = c.owner(&following)?;
    c.expect_on(owner, &following)?;
    c.expect_on(owner, &followers)?;
    c.expect_all(
        &[(following, b"a".to_vec()), (followers, b"b".to_vec())],
        "",
    )
}

fn slot_migration(c: &mut ClusterCase) -> Outcome {
    // Twenty keys in one slot (one hash tag), written before anything moves.
    let mut items = write_items(c, "{moving}", 20)?;
    let slot = c.slot(&items[0].0)?.to_string();
    let nodes = c.cluster().nodes().to_vec();
    let from = c.owner(&items[0].0)?;
    let (source, target) = (&nodes[from], &nodes[(from + 1) % nodes.len()]);
    let setslot =
        |state: &str, node: &ClusterNode| words(&["CLUSTER", "SETSLOT", &slot, state, &node.id]);
    let (host, port) = (target.addr.rsplit_once(':')).ok_or("an address".to_string())?;
    let migrate = |moved: &[(Vec<u8>, Vec<u8>)]| {
        let mut args = words(&["MIGRATE", host, port, "", "0", "5000", "KEYS"]);
        args.extend(moved.iter().map(|(key, _)| key.clone()));
        args
    };
    c.ok(target, &setslot("IMPORTING", source))?;
    c.ok(source, &setslot("MIGRATING", target))?;

    // The first half moves to the target: the source now answers ASK for those keys, and for a
    // key it does not have.
    c.ok(source, &migrate(&items[..10]))?;
    c.expect_all(&items, "while its slot migrates (ASK)")?;
    let new_key = c.key("{moving}:written-while-migrating");
    c.client.set(&new_key, b"new")?;
    items.push((new_key, b"new".to_vec()));

    // The rest moves, and every node is told the slot is the target's: now MOVED.
    c.ok(source, &migrate(&items[10..20]))?;
    for node in [target, source].into_iter().chain(&nodes) {
        c.ok(node, &setslot("NODE", target))?;
    }
    c.expect_all(&items, "after its slot moved (MOVED)")?;
    c.client.set(&items[0].0, b"after")?;
    items[0].1 = b"after".to_vec();
    c.expect_all(&items, "after a write to the moved slot")?;
    let count = |node| c.integer(node, &words(&["CLUSTER", "COUNTKEYSINSLOT", &slot]));
    match (count(source)?, count(target)?) {
        (0, n) if n == items.len() as i64 => Ok(()),
        (left, moved) => Err(format!(
            "after the migration the source holds {left} keys of the slot and the target \
             {moved}; want 0 and {}",
            items.len()
        )
        .into()),
    }
}

/// A command's words as arguments.
fn words(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|word| word.as_bytes().to_vec()).collect()
}

fn node_down(c: &mut ClusterCase) -> Outcome {
    let items = write_items(c, "down", 60)?;
    let owners = items
        .iter()
        .map(|(key, _)| c.owner(key))
        .collect::<Result<Vec<_>, _>>()?;
    // The middle node: a batch then has replies in flight on a node before it and after it,
    // whatever order a client writes and reads its nodes in.
    let stopped = 1;
    let Some(lost) = owners.iter().position(|&owner| owner == stopped) else {
        return Err(format!("60 keys, owners {owners:?}: want some on node {stopped}").into());
    };
    c.stop_node(stopped)?;

    // A batch over every node fails, as a whole, promptly.
    let pairs: Vec<(&[u8], &[u8])> = (items.iter())
        .map(|(key, value)| (&key[..], &value[..]))
        .collect();
    if within_deadline(|| c.client.set_many(&pairs))?.is_ok() {
        return Err("a set_many over a stopped node's keys returned Ok"
            .to_string()
            .into());
    }
    if let Ok(value) = within_deadline(|| c.client.get(&items[lost].0))? {
        return Err(format!("a get from the stopped node returned {value:?}").into());
    }
    // Every other key reads back its own value: the failed batch left no reply of its own
    // behind on a connection still in use, for a later call to take as its answer.
    for ((key, value), &owner) in items.iter().zip(&owners) {
        if owner != stopped {
            let what = "get from a node still up, after a batch that failed";
            expect_value(c.client.get(key)?, value, what)?;
        }
    }
    Ok(())
}

/// Runs a call that must fail promptly on a stopped node, and returns its result, unless it
/// took longer than [`NODE_DOWN_DEADLINE`].
fn within_deadline<T>(
    call: impl FnOnce() -> kvbench_core::Result<T>,
) -> Result<kvbench_core::Result<T>, Failure> {
    let started = Instant::now();
    let result = call();
    match started.elapsed() {
        took if took > NODE_DOWN_DEADLINE => {
            Err(format!("a call to the stopped node returned only after {took:?}").into())
        }
        _ => Ok(result),
    }
}

/// Starts the private cluster a case of its own needs.
pub fn start_own_cluster() -> Result<Cluster, String> {
    Cluster::start_private(&StartOptions::default()).map_err(|err| format!("{err}"))
}
