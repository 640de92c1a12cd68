//! A real private Redis Cluster: three processes that form one cluster, serve every slot, answer
//! on their own ports and sockets, and leave nothing behind; and the external cluster that
//! `REDIS_CLUSTER_URL` names.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

mod common;

use common::{cpus_allowed, env_of, gone};
use kvbench_servers::cluster::{PRIVATE_NODES, REDIS_CLUSTER_URL_VAR, SLOT_COUNT};
use kvbench_servers::{
    Cluster, Endpoint, Error, ExternalCluster, Reply, Servers, StartOptions, Transport,
};

fn start() -> Cluster {
    Cluster::start_private(&StartOptions::default()).expect("start a private cluster")
}

fn status(text: &str) -> Reply {
    Reply::Status(text.into())
}

/// The slot `key` hashes to, as the cluster computes it.
fn key_slot(cluster: &Cluster, key: &[u8]) -> u16 {
    let reply = cluster
        .command(&cluster.nodes()[0], &[b"CLUSTER", b"KEYSLOT", key])
        .unwrap();
    reply.integer().and_then(|n| u16::try_from(n).ok()).unwrap()
}

#[test]
fn a_private_cluster_serves_every_slot_and_vanishes_on_drop() {
    let cluster = start();
    let dir = cluster.dir().unwrap().to_path_buf();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);

    let nodes = cluster.nodes();
    assert_eq!(nodes.len(), PRIVATE_NODES);
    let ids: HashSet<&str> = nodes.iter().map(|node| node.id.as_str()).collect();
    assert_eq!(ids.len(), PRIVATE_NODES, "{nodes:?}");
    let served: usize = nodes
        .iter()
        .flat_map(|node| node.slots.iter().map(|range| range.len()))
        .sum();
    assert_eq!(served, usize::from(SLOT_COUNT));
    for slot in [0, 5460, 5461, 10922, 10923, SLOT_COUNT - 1] {
        let owners = nodes.iter().filter(|node| node.serves(slot)).count();
        assert_eq!(owners, 1, "slot {slot}");
    }
    assert_eq!(cluster.seed(), nodes[0].endpoint());
    assert!(nodes[0].serves(0));

    for (number, node) in (1..).zip(nodes) {
        let info = cluster.command(node, &[b"CLUSTER", b"INFO"]).unwrap();
        assert!(
            info.text().unwrap().contains("cluster_state:ok"),
            "{info:?}"
        );
        let myid = cluster.command(node, &[b"CLUSTER", b"MYID"]).unwrap();
        assert_eq!(myid.text().unwrap(), node.id);
        let unix = node.unix.as_ref().unwrap();
        assert_eq!(unix, &dir.join(format!("node-{number}/redis.sock")));
        assert!(dir.join(format!("node-{number}/nodes.conf")).exists());
    }

    let info = cluster.info();
    assert!(!info.external && info.url.is_none() && !cluster.is_external());
    assert!(
        info.version.starts_with(|c: char| c.is_ascii_digit()),
        "{info:?}"
    );
    assert_eq!(info.processes.len(), PRIVATE_NODES);
    assert_eq!(info.endpoints.len(), 2 * PRIVATE_NODES);
    assert_eq!(info.endpoints[0].transport(), Transport::Tcp);
    for process in &info.processes {
        let line = process.command_line();
        assert!(line.contains("--cluster-enabled yes"), "{line}");
        assert!(
            line.contains("--cluster-require-full-coverage no"),
            "{line}"
        );
        assert_eq!(process.cpu, None);
    }
    let create = cluster.create_command().unwrap();
    assert!(create.contains("--cluster create 127.0.0.1:"), "{create}");
    assert!(
        create.ends_with("--cluster-replicas 0 --cluster-yes"),
        "{create}"
    );
    assert!(cluster.is_alive());
    assert_eq!(cluster.key(b"k"), b"k", "no prefix on a private cluster");

    let pids = info.pids();
    drop(cluster);
    for pid in pids {
        assert!(gone(pid), "node pid {pid} still exists after drop");
    }
    assert!(!dir.exists(), "{} not removed", dir.display());
}

#[test]
fn a_key_is_read_through_the_node_that_owns_its_slot() {
    let cluster = start();
    let key = b"greeting";
    let owner = cluster.node_for_slot(key_slot(&cluster, key)).unwrap();
    let set = cluster.command(owner, &[b"SET", key, b"hello"]).unwrap();
    assert_eq!(set, status("OK"));
    let get = cluster.command(owner, &[b"GET", key]).unwrap();
    assert_eq!(get, Reply::Bulk(Some(b"hello".to_vec())));
    for other in cluster.nodes().iter().filter(|node| node.id != owner.id) {
        match cluster.command(other, &[b"GET", key]).unwrap() {
            Reply::Error(moved) => {
                assert!(moved.starts_with("MOVED "), "{moved}");
                assert!(moved.ends_with(&owner.addr), "{moved} names {}", owner.addr);
            }
            reply => panic!(
                "{} answered {reply:?} for a key it does not own",
                other.addr
            ),
        }
    }
}

#[test]
fn each_node_answers_on_its_own_socket() {
    let cluster = start();
    for node in cluster.nodes() {
        let mut stream = UnixStream::connect(node.unix.as_ref().unwrap()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(b"CLUSTER MYID\r\n").unwrap();
        // `$40\r\n<id>\r\n`
        let mut reply = vec![0; 4 + 1 + node.id.len() + 2];
        stream.read_exact(&mut reply).unwrap();
        let reply = String::from_utf8(reply).unwrap();
        assert_eq!(reply, format!("${}\r\n{}\r\n", node.id.len(), node.id));
    }
}

#[test]
fn pinned_nodes_all_run_on_the_server_cpu() {
    let options = StartOptions {
        redis_cpu: Some(0),
        ..StartOptions::default()
    };
    let cluster = Cluster::start_private(&options).unwrap();
    for process in &cluster.info().processes {
        assert_eq!(process.cpu, Some(0));
        assert_eq!(cpus_allowed(process.pid), "0", "pid {}", process.pid);
    }
}

#[test]
fn a_stopped_node_takes_only_its_own_slots_away() {
    let mut cluster = start();
    let pid = cluster.info().processes[1].pid;
    cluster.stop_node(1).unwrap();
    assert!(gone(pid));
    assert!(!cluster.is_alive());
    let err = cluster
        .command(&cluster.nodes()[1], &[b"PING"])
        .unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err}");
    for index in [0, 2] {
        let node = &cluster.nodes()[index];
        let key = (0..)
            .map(|n| format!("key-{n}").into_bytes())
            .find(|key| node.serves(key_slot(&cluster, key)))
            .unwrap();
        let set = cluster.command(node, &[b"SET", &key, b"v"]).unwrap();
        assert_eq!(set, status("OK"), "{} no longer serves its keys", node.addr);
    }
}

#[test]
fn an_external_cluster_is_found_from_one_node_and_never_stopped() {
    let owner = start();
    let second = &owner.nodes()[1];
    let url = format!("redis://127.0.0.1:1,{}", second.addr);
    let external = ExternalCluster::parse(&url).unwrap();
    assert_eq!(external.seeds().len(), 2);
    let mut guest = Cluster::start_with(Some(external), &StartOptions::default()).unwrap();
    assert!(guest.is_external() && guest.dir().is_none());
    assert_eq!(guest.info().url.as_deref(), Some(url.as_str()));
    assert!(guest.info().processes.is_empty() && guest.create_command().is_none());
    let ids = |cluster: &Cluster| -> Vec<String> {
        cluster.nodes().iter().map(|node| node.id.clone()).collect()
    };
    assert_eq!(ids(&guest), ids(&owner));
    assert_eq!(guest.nodes()[0].slots, owner.nodes()[0].slots);
    assert!(guest.nodes().iter().all(|node| node.unix.is_none()));
    let prefix = guest.key_prefix().to_string();
    assert!(
        prefix.starts_with(&format!("kvbench:{}-", std::process::id())),
        "{prefix}"
    );
    assert!(
        !prefix.contains(['{', '}']),
        "a prefix must not move keys between slots"
    );
    assert_eq!(guest.key(b"k"), format!("{prefix}k").into_bytes());
    assert!(guest.is_alive());
    assert!(matches!(guest.stop_node(0), Err(Error::NotPrivate(_))));
    drop(guest);
    assert!(owner.is_alive());
}

#[test]
fn the_url_in_the_environment_is_parsed_and_checked() {
    let options = StartOptions {
        startup_timeout: Duration::from_secs(2),
        ..StartOptions::default()
    };
    let bad = env_of(&[(REDIS_CLUSTER_URL_VAR, "redis+unix:///tmp/r.sock")]);
    let err = Cluster::start_with_env(&options, &bad).unwrap_err();
    assert!(matches!(err, Error::BadUrl { .. }), "{err}");
    assert!(err.to_string().contains("over TCP"), "{err}");

    let nobody = env_of(&[(REDIS_CLUSTER_URL_VAR, "redis://127.0.0.1:1")]);
    let err = Cluster::start_with_env(&options, &nobody).unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err}");

    // A Redis that is not a cluster is refused with its own words.
    let single = Servers::start_private(&StartOptions::default()).unwrap();
    let Some(Endpoint::Tcp(addr)) =
        single.endpoint(kvbench_servers::Backend::Redis, Transport::Tcp)
    else {
        panic!("private redis listens on TCP");
    };
    let url = format!("redis://{addr}");
    let not_cluster = env_of(&[(REDIS_CLUSTER_URL_VAR, &url)]);
    let err = Cluster::start_with_env(&options, &not_cluster).unwrap_err();
    assert!(
        err.to_string().contains("cluster support disabled"),
        "{err}"
    );
}

#[test]
fn a_missing_server_binary_starts_nothing() {
    let env = env_of(&[("REDIS_SERVER_BIN", "/nonexistent/redis-server")]);
    let err = Cluster::start_with_env(&StartOptions::default(), &env).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingBinary {
                program: "redis-server",
                ..
            }
        ),
        "{err}"
    );
}
