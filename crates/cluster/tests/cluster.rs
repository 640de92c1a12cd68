//! `cluster` against a real private Redis Cluster of three primaries (`kvbench_servers::Cluster`):
//! keys go to the node that owns their slot, batches split by node and come back in order, a
//! slot migrated during the test is followed through ASK and MOVED, and a node that goes away
//! fails only its own keys, promptly.

use std::time::{Duration, Instant};

use kvbench_cluster::{ClusterClient, SPEC, key_slot};
use kvbench_core::{Client, Error, Options};
use kvbench_servers::{Cluster, ClusterNode, Endpoint, Reply, StartOptions};

fn start() -> Cluster {
    Cluster::start_private(&StartOptions::default()).expect("start a private cluster")
}

fn seed(cluster: &Cluster) -> String {
    match cluster.seed() {
        Endpoint::Tcp(addr) => addr,
        Endpoint::Unix(path) => panic!("a seed over a Unix socket: {}", path.display()),
    }
}

fn connect(cluster: &Cluster, options: &Options) -> ClusterClient {
    ClusterClient::connect(&seed(cluster), options).expect("connect to the cluster")
}

/// One command on one node, which must not be refused.
fn on(cluster: &Cluster, node: &ClusterNode, args: &[&[u8]]) -> Reply {
    match cluster.command(node, args).expect("the node answers") {
        Reply::Error(message) => panic!("{} refused {args:?}: {message}", node.addr),
        reply => reply,
    }
}

fn count(cluster: &Cluster, node: &ClusterNode) -> i64 {
    on(cluster, node, &[b"DBSIZE"]).integer().unwrap()
}

fn owner(cluster: &Cluster, key: &[u8]) -> ClusterNode {
    cluster.node_for_slot(key_slot(key)).unwrap().clone()
}

#[test]
fn the_spec_connects_by_one_seed_and_round_trips() {
    let cluster = start();
    let mut client = (SPEC.connect)(&cluster.seed(), &Options::default()).unwrap();
    assert_eq!(client.get(b"missing").unwrap(), None);
    client.set(b"greeting", b"hello").unwrap();
    assert_eq!(
        client.get(b"greeting").unwrap().as_deref(),
        Some(&b"hello"[..])
    );
    client.set_ex(b"brief", b"x", 60).unwrap();
    let ttl = on(&cluster, &owner(&cluster, b"brief"), &[b"TTL", b"brief"]);
    assert!(matches!(ttl.integer(), Some(1..=60)), "{ttl:?}");
    assert!(client.delete(b"greeting").unwrap());
    assert!(!client.delete(b"greeting").unwrap());
    assert_eq!(client.incr(b"counter").unwrap(), 1);
    assert_eq!(client.incr(b"counter").unwrap(), 2);
    client.hset_many(b"hash", &[(b"f", b"v")]).unwrap();
    assert_eq!(
        client.hgetall(b"hash").unwrap(),
        [(b"f".to_vec(), b"v".to_vec())]
    );
    let err = client.get_many(&[b"a", b"b"]).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");

    let unix = Endpoint::Unix(cluster.nodes()[0].unix.clone().unwrap());
    let refused = (SPEC.connect)(&unix, &Options::default()).err().unwrap();
    assert!(matches!(refused, Error::Unsupported(_)), "{refused}");
}

#[test]
fn keys_spread_over_every_node_and_live_where_their_slot_says() {
    let cluster = start();
    let mut client = connect(&cluster, &Options::default());
    let keys: Vec<Vec<u8>> = (0..300).map(|n| format!("key:{n}").into_bytes()).collect();
    for key in &keys {
        client.set(key, key).unwrap();
    }
    for node in cluster.nodes() {
        assert!(
            count(&cluster, node) > 50,
            "{} holds too few keys",
            node.addr
        );
        assert_eq!(
            client.node_for_slot(*node.slots[0].start()),
            Some(&*node.addr)
        );
    }
    let total: i64 = cluster
        .nodes()
        .iter()
        .map(|node| count(&cluster, node))
        .sum();
    assert_eq!(total, 300);
    for key in &keys {
        let stored = on(&cluster, &owner(&cluster, key), &[b"GET", key]);
        assert_eq!(stored, Reply::Bulk(Some(key.clone())));
    }
}

#[test]
fn a_hash_tag_keeps_keys_on_one_node() {
    let cluster = start();
    let mut client = connect(&cluster, &Options::default());
    let (following, followers) = (&b"{user1000}.following"[..], &b"{user1000}.followers"[..]);
    client.set(following, b"200").unwrap();
    client.set(followers, b"3000").unwrap();
    let node = owner(&cluster, b"user1000");
    assert_eq!(owner(&cluster, following), node);
    assert_eq!(count(&cluster, &node), 2);
    // Both in one command: only possible because they share a slot.
    let both = on(&cluster, &node, &[b"MGET", following, followers]);
    let values = [b"200".to_vec(), b"3000".to_vec()].map(|v| Reply::Bulk(Some(v)));
    assert_eq!(both, Reply::Array(Some(values.to_vec())));
    // The slot is the server's own (CLUSTER KEYSLOT), whatever the length of the key (the CRC
    // takes 16 bytes per step) and wherever its braces are.
    let text = b"0123456789abcdefghijklmnopqrstuvwxyz{}{}";
    let mut keys: Vec<&[u8]> = (0..=text.len()).map(|len| &text[..len]).collect();
    keys.extend([
        &b"{}a"[..],
        b"a{b",
        b"a}b{c}",
        b"{{x}}",
        b"abcdefghijklmnopq{tag}rest",
    ]);
    for key in keys {
        let slot = on(&cluster, &node, &[b"CLUSTER", b"KEYSLOT", key]).integer();
        assert_eq!(slot, Some(i64::from(key_slot(key))), "{key:?}");
    }
}

#[test]
fn a_hundred_thousand_sets_split_by_node_in_order() {
    let cluster = start();
    let mut client = connect(&cluster, &Options::default());
    let keys: Vec<Vec<u8>> = (0..100_000).map(|n| format!("k{n}").into_bytes()).collect();
    let values: Vec<Vec<u8>> = (0..100_000).map(|n| format!("v{n}").into_bytes()).collect();
    let mut items: Vec<(&[u8], &[u8])> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (&k[..], &v[..]))
        .collect();
    // The same key twice: the later item must win, as it would one SET at a time.
    items.push((b"k7", b"last"));
    client.set_many(&items).unwrap();
    let total: i64 = cluster
        .nodes()
        .iter()
        .map(|node| count(&cluster, node))
        .sum();
    assert_eq!(total, 100_000);
    let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let read = client.get_many_pipelined(&key_refs).unwrap();
    assert_eq!(read.len(), keys.len());
    for (n, value) in read.iter().enumerate() {
        let want = if n == 7 { &b"last"[..] } else { &values[n] };
        assert_eq!(value.as_deref(), Some(want), "key k{n}");
    }
    assert_eq!(
        client.get_many_pipelined(&[b"nope", b"k1"]).unwrap(),
        [None, Some(b"v1".to_vec())]
    );
}

#[test]
fn a_slot_migrated_during_the_test_is_followed_without_an_error() {
    let cluster = start();
    let mut client = connect(&cluster, &Options::default());
    let slot = key_slot(b"moving");
    let keys: Vec<Vec<u8>> = (0..40)
        .map(|n| format!("{{moving}}:{n}").into_bytes())
        .collect();
    for key in &keys {
        client.set(key, key).unwrap();
    }
    let source = owner(&cluster, b"moving");
    let target = cluster
        .nodes()
        .iter()
        .find(|node| node.id != source.id)
        .unwrap()
        .clone();
    let (host, port) = target.addr.rsplit_once(':').unwrap();
    let slot_arg = slot.to_string();
    let slot_arg = slot_arg.as_bytes();
    let migrate = |keys: &[Vec<u8>]| {
        let mut args: Vec<&[u8]> = vec![b"MIGRATE", host.as_bytes(), port.as_bytes(), b"", b"0"];
        args.extend([&b"5000"[..], b"KEYS"]);
        args.extend(keys.iter().map(Vec::as_slice));
        assert_eq!(on(&cluster, &source, &args), Reply::Status("OK".into()));
    };

    // Half the keys leave: the source answers ASK for them, the client follows each once.
    on(
        &cluster,
        &target,
        &[
            b"CLUSTER",
            b"SETSLOT",
            slot_arg,
            b"IMPORTING",
            source.id.as_bytes(),
        ],
    );
    on(
        &cluster,
        &source,
        &[
            b"CLUSTER",
            b"SETSLOT",
            slot_arg,
            b"MIGRATING",
            target.id.as_bytes(),
        ],
    );
    migrate(&keys[..20]);
    let asked = cluster.command(&source, &[b"GET", &keys[0]]).unwrap();
    assert!(
        matches!(&asked, Reply::Error(ask) if ask.starts_with("ASK ")),
        "{asked:?}"
    );
    for key in &keys {
        assert_eq!(
            client.get(key).unwrap().as_ref(),
            Some(key),
            "during the migration"
        );
    }
    client.set(b"{moving}:new", b"new").unwrap();
    let batch: Vec<(&[u8], &[u8])> = keys.iter().map(|key| (&key[..], &b"again"[..])).collect();
    client.set_many(&batch).unwrap();
    let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let read = client.get_many_pipelined(&key_refs).unwrap();
    assert!(
        read.iter().all(|value| value.as_deref() == Some(b"again")),
        "{read:?}"
    );
    assert_eq!(
        client.node_for_slot(slot),
        Some(&*source.addr),
        "ASK leaves the map alone"
    );

    // The rest leave, and the slot is handed over: every node now answers MOVED.
    let left = on(
        &cluster,
        &source,
        &[b"CLUSTER", b"GETKEYSINSLOT", slot_arg, b"1000"],
    );
    let left: Vec<Vec<u8>> = left
        .elements()
        .unwrap()
        .iter()
        .map(|k| k.text().unwrap().into_bytes())
        .collect();
    assert_eq!(left.len(), 20);
    migrate(&left);
    // The new owner first, so that no node points to one that does not know yet.
    let others = cluster.nodes().iter().filter(|node| node.id != target.id);
    for node in std::iter::once(&target).chain(others) {
        let handover = [
            b"CLUSTER",
            b"SETSLOT",
            slot_arg,
            b"NODE",
            target.id.as_bytes(),
        ];
        on(&cluster, node, &handover);
    }
    assert_eq!(
        client.get(&keys[39]).unwrap().as_deref(),
        Some(&b"again"[..])
    );
    assert_eq!(
        client.node_for_slot(slot),
        Some(&*target.addr),
        "MOVED refreshed the map"
    );
    assert_eq!(
        client.get(b"{moving}:new").unwrap().as_deref(),
        Some(&b"new"[..])
    );
    let slot_keys = |node| on(&cluster, node, &[b"CLUSTER", b"COUNTKEYSINSLOT", slot_arg]);
    assert_eq!(slot_keys(&target), Reply::Integer(41), "no key lost");
    assert_eq!(slot_keys(&source), Reply::Integer(0));
}

#[test]
fn a_node_that_goes_away_fails_only_its_keys_and_promptly() {
    let mut cluster = start();
    let timeout = Duration::from_secs(2);
    let mut client = connect(&cluster, &Options::with_timeout(timeout));
    // A key on each node, each stored through the client (so every connection is open).
    let keys: Vec<Vec<u8>> = cluster
        .nodes()
        .iter()
        .map(|node| {
            (0..)
                .map(|n| format!("key:{n}").into_bytes())
                .find(|key| node.serves(key_slot(key)))
                .unwrap()
        })
        .collect();
    for key in &keys {
        client.set(key, b"v").unwrap();
    }
    let gone = cluster.nodes()[1].addr.clone();
    cluster.stop_node(1).unwrap();
    for attempt in ["on its open connection", "on a new connection"] {
        let started = Instant::now();
        let err = client.get(&keys[1]).unwrap_err();
        assert!(
            started.elapsed() < timeout,
            "{attempt}: took {:?}",
            started.elapsed()
        );
        assert!(err.breaks_connection(), "{attempt}: {err:?}");
        assert!(
            err.to_string().contains(&gone),
            "{attempt}: {err} does not name {gone}"
        );
    }
    for index in [0, 2] {
        assert_eq!(
            client.get(&keys[index]).unwrap().as_deref(),
            Some(&b"v"[..])
        );
        client.set(&keys[index], b"w").unwrap();
    }
    let batch: Vec<(&[u8], &[u8])> = keys.iter().map(|key| (&key[..], &b"x"[..])).collect();
    let err = client.set_many(&batch).unwrap_err();
    assert!(err.to_string().contains(&gone), "{err}");
}
