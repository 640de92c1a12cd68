//! `buffered` against real private Redis servers. Each test starts its own servers, so that
//! DBSIZE counts only its own keys and stopping a server disturbs no other test.

use std::process::Command;
use std::time::{Duration, Instant};

use kvbench_buffered::{CHUNK_LEN, connect_tcp, connect_unix};
use kvbench_core::{Backend, Client, Endpoint, Error, Options, Transport};
use kvbench_servers::{Servers, StartOptions};

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

fn endpoint(servers: &Servers, transport: Transport) -> Endpoint {
    servers
        .endpoint(Backend::Redis, transport)
        .expect("private redis listens on both transports")
}

fn client(servers: &Servers, transport: Transport, options: &Options) -> Box<dyn Client> {
    let endpoint = endpoint(servers, transport);
    match &endpoint {
        Endpoint::Tcp(addr) => Box::new(connect_tcp(addr, options).expect("connect tcp")),
        Endpoint::Unix(path) => Box::new(connect_unix(path, options).expect("connect unix")),
    }
}

/// An independent connection (redis-rs) to look at what the server holds.
fn reference(servers: &Servers) -> redis::Connection {
    let url = match endpoint(servers, Transport::Tcp) {
        Endpoint::Tcp(addr) => format!("redis://{addr}/"),
        Endpoint::Unix(_) => unreachable!("asked for tcp"),
    };
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("reference connection")
}

fn dbsize(con: &mut redis::Connection) -> usize {
    redis::cmd("DBSIZE").query(con).expect("DBSIZE")
}

fn get(con: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(con).expect("GET")
}

/// User and system CPU time used so far by this whole process (every thread): the client's
/// cost, since the server is another process.
fn process_cpu() -> (Duration, Duration) {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage for the call to write into.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (time(usage.ru_utime), time(usage.ru_stime))
}

/// Runs one timed `set_many` and prints wall time, rate and client CPU per command.
fn timed_set_many(con: &mut dyn Client, items: &[(&[u8], &[u8])], what: &str) {
    let (started, (user, system)) = (Instant::now(), process_cpu());
    con.set_many(items)
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    let elapsed = started.elapsed();
    let (user_after, system_after) = process_cpu();
    let per_item = |cpu: Duration| cpu.as_nanos() as f64 / items.len() as f64;
    eprintln!(
        "{what}: {} items in {elapsed:.3?} = {:.0} ops/s, client CPU per item {:.1} ns user + {:.1} ns system",
        items.len(),
        items.len() as f64 / elapsed.as_secs_f64(),
        per_item(user_after - user),
        per_item(system_after - system),
    );
}

fn million(transport: Transport) {
    const ITEMS: usize = 1_000_000;
    let servers = start();
    let mut reference = reference(&servers);
    let mut con = client(&servers, transport, &Options::default());
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..ITEMS)
        .map(|i| {
            (
                format!("million:{i}").into_bytes(),
                format!("value-{i}").into_bytes(),
            )
        })
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let before = dbsize(&mut reference);

    timed_set_many(
        &mut *con,
        &borrowed,
        &format!("buffered {transport} distinct keys"),
    );
    assert_eq!(dbsize(&mut reference) - before, ITEMS);
    for i in [0, 1, 2_184, 2_185, 499_999, 777_777, ITEMS - 2, ITEMS - 1] {
        assert_eq!(
            get(&mut reference, &items[i].0),
            Some(items[i].1.clone()),
            "item {i}"
        );
    }
    // In sync afterwards: the next reply is the next command's.
    assert_eq!(
        con.get(b"million:123456").unwrap(),
        Some(b"value-123456".to_vec())
    );

    // The benchmark's case (and redis-benchmark's): one small key overwritten a million times.
    let same: Vec<(&[u8], &[u8])> = vec![(b"foo", b"bar"); ITEMS];
    timed_set_many(&mut *con, &same, &format!("buffered {transport} foo bar"));
    assert_eq!(dbsize(&mut reference) - before, ITEMS + 1);
    assert_eq!(get(&mut reference, b"foo"), Some(b"bar".to_vec()));
    con.set(b"after", b"the batches").unwrap();
    assert_eq!(con.get(b"after").unwrap(), Some(b"the batches".to_vec()));
}

#[test]
fn set_many_of_a_million_items_over_tcp() {
    million(Transport::Tcp);
}

#[test]
fn set_many_of_a_million_items_over_unix() {
    million(Transport::Unix);
}

#[test]
fn single_commands_round_trip_on_both_transports() {
    let servers = start();
    let mut reference = reference(&servers);
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport, &Options::default());
        let key = format!("single:{transport}").into_bytes();
        assert_eq!(con.get(&key).unwrap(), None);
        con.set(&key, b"v\r\n$1\r\n").unwrap();
        assert_eq!(con.get(&key).unwrap(), Some(b"v\r\n$1\r\n".to_vec()));
        assert_eq!(get(&mut reference, &key), Some(b"v\r\n$1\r\n".to_vec()));
        con.set_ex(&key, b"short-lived", 100).unwrap();
        let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut reference).unwrap();
        assert!((1..=100).contains(&ttl), "ttl {ttl}");
        assert!(con.delete(&key).unwrap());
        assert!(!con.delete(&key).unwrap());
        // An empty batch sends nothing and succeeds.
        con.set_many(&[]).unwrap();
    }
}

#[test]
fn large_values_pipeline_one_chunk_each() {
    let servers = start();
    let mut reference = reference(&servers);
    let values: Vec<Vec<u8>> = (0..48u8)
        .map(|i| {
            (0..2 * CHUNK_LEN + usize::from(i))
                .map(|j| (j % 251) as u8 ^ i)
                .collect()
        })
        .collect();
    let keys: Vec<Vec<u8>> = (0..values.len())
        .map(|i| format!("large:{i}").into_bytes())
        .collect();
    let items: Vec<(&[u8], &[u8])> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (&k[..], &v[..]))
        .collect();
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport, &Options::default());
        con.set_many(&items).unwrap();
        for (key, value) in keys.iter().zip(&values) {
            assert_eq!(get(&mut reference, key).as_ref(), Some(value));
        }
        assert_eq!(con.get(&keys[47]).unwrap().as_ref(), Some(&values[47]));
        redis::cmd("FLUSHALL").exec(&mut reference).unwrap();
    }
}

#[test]
fn error_replies_fail_the_batch_after_every_reply_is_drained() {
    let servers = start();
    let mut reference = reference(&servers);
    // Only keys under `ok:` may be written: every other SET gets -NOPERM, the rest succeed.
    redis::cmd("ACL")
        .arg(&["SETUSER", "default", "resetkeys", "~ok:*"])
        .exec(&mut reference)
        .unwrap();
    for (transport, items) in [
        (Transport::Tcp, 10_000),
        (Transport::Unix, 10_000),
        (Transport::Tcp, 4),
    ] {
        redis::cmd("FLUSHALL").exec(&mut reference).unwrap();
        let mut con = client(&servers, transport, &Options::default());
        let keys: Vec<Vec<u8>> = (0..items)
            .map(|i| format!("{}:{i}", if i % 2 == 0 { "ok" } else { "no" }).into_bytes())
            .collect();
        let batch: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &b"v"[..])).collect();
        match con.set_many(&batch) {
            Err(Error::Server(msg)) => {
                let count = format!("{} of {items} SETs failed", items / 2);
                assert!(msg.starts_with(&count) && msg.contains("NOPERM"), "{msg}");
            }
            other => panic!("want Error::Server, got {other:?}"),
        }
        assert_eq!(dbsize(&mut reference), items / 2);
        // The connection is still in sync: the next reply is the next command's.
        assert_eq!(con.get(b"ok:2").unwrap(), Some(b"v".to_vec()));
        con.set(b"ok:after", b"yes").unwrap();
        assert_eq!(con.get(b"ok:after").unwrap(), Some(b"yes".to_vec()));
    }
    redis::cmd("ACL")
        .arg(&["SETUSER", "default", "allkeys"])
        .exec(&mut reference)
        .unwrap();
}

/// SIGSTOP (then SIGCONT) the private Redis: a real server that stops reading and answering.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

#[test]
fn a_frozen_server_ends_the_pipeline_with_a_timeout_not_a_hang() {
    let servers = start();
    let pid = servers.info(Backend::Redis).pids()[0];
    let timeout = Duration::from_millis(300);
    let options = Options {
        read_timeout: timeout,
        write_timeout: timeout,
        ..Options::default()
    };
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..1_000_000)
        .map(|i| (format!("frozen:{i}").into_bytes(), b"bar".to_vec()))
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    for transport in Transport::ALL {
        for batch in [&borrowed[..], &borrowed[..10]] {
            let mut con = client(&servers, *transport, &options);
            con.set(b"warm", b"up").unwrap();
            signal(pid, "STOP");
            let started = Instant::now();
            let outcome = con.set_many(batch);
            let elapsed = started.elapsed();
            signal(pid, "CONT");
            assert!(
                matches!(outcome, Err(Error::Timeout(_))),
                "{transport}, {} items: {outcome:?}",
                batch.len()
            );
            assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
            // Broken now: refused at once rather than reading someone else's reply.
            let started = Instant::now();
            assert!(matches!(con.get(b"warm"), Err(Error::Io(_))));
            assert!(started.elapsed() < timeout);
        }
    }
}
