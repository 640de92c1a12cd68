//! `buffered` against real private Redis servers. Each test starts its own servers, so that
//! DBSIZE counts only its own keys and stopping a server disturbs no other test. Pipelines far
//! larger than the socket buffers must store every item, in order, with one `write` per chunk.

use std::io::{self, Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use kvbench_buffered::{BufferedConnection, CHUNK_LEN, Duplex, connect_tcp, connect_unix};
use kvbench_core::{Backend, Client, Endpoint, Error, Options, Transport};
use kvbench_servers::costs::{Counted, CountingAllocator, assert_small_call_costs};
use kvbench_servers::{Servers, StartOptions};

/// Counts allocations per thread, for the exact-costs test.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

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

/// One command on the reference connection: `query(con, &["DBSIZE"])`.
fn query<T: redis::FromRedisValue>(con: &mut redis::Connection, args: &[&[u8]]) -> T {
    let mut command = redis::cmd(&String::from_utf8_lossy(args[0]));
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(con).expect("reference query")
}

fn dbsize(con: &mut redis::Connection) -> usize {
    query(con, &[b"DBSIZE"])
}

/// A counted socket ([`kvbench_servers::costs::Counted`]) as `buffered` needs it: read and
/// written through `&`, and shut down by either of its threads (a local type, because both
/// `Duplex` and `Counted` belong to other crates).
struct Shared(Counted);

impl Shared {
    fn connect(endpoint: &Endpoint) -> Self {
        Shared(Counted::connect(endpoint))
    }

    /// `write` calls so far, from either of the client's threads.
    fn writes(&self) -> usize {
        self.0.counts().1
    }
}

impl Duplex for Shared {
    fn shutdown_both(&self) -> io::Result<()> {
        self.0.shutdown_both()
    }
}

impl Read for &Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.0).read(buf)
    }
}

impl Write for &Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&self.0).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A small GET or SET is one `write` and one `read`, a GET hit one allocation at most, a miss
/// none ([`kvbench_servers::costs`]).
#[test]
fn small_calls_are_one_write_one_read() {
    let servers = start();
    for &transport in Transport::ALL {
        assert_small_call_costs(&servers, Backend::Redis, transport, |socket| {
            BufferedConnection::new(Shared(socket))
        });
    }
}

/// How many chunks `set_many` cuts `items` into: a chunk is closed once it holds at least
/// `CHUNK_LEN` bytes of whole SET commands.
fn chunks(items: &[(&[u8], &[u8])]) -> usize {
    let (mut chunks, mut len) = (0, CHUNK_LEN);
    for (key, value) in items {
        if len >= CHUNK_LEN {
            (chunks, len) = (chunks + 1, 0);
        }
        let mut command = Vec::new();
        kvbench_resp::encode_command(&mut command, &[b"SET", key, value]);
        len += command.len();
    }
    chunks
}

/// `set_many` on a counted connection: it must succeed with one `write` per chunk. A blocking
/// socket's `write` takes the whole buffer unless a signal or the write timeout cuts it short,
/// so the count is exact: no write per command, no chunk split or merged.
fn set_many_counted(con: &mut BufferedConnection<Shared>, items: &[(&[u8], &[u8])]) {
    let before = con.stream().writes();
    con.set_many(items)
        .unwrap_or_else(|err| panic!("set_many: {err}"));
    assert_eq!(con.stream().writes() - before, chunks(items), "writes");
}

fn million(transport: Transport) {
    const ITEMS: usize = 1_000_000;
    let servers = start();
    let mut reference = reference(&servers);
    let mut con = BufferedConnection::new(Shared::connect(&endpoint(&servers, transport)));
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

    // ~34 MB of commands against 5 MB of replies: far beyond both socket buffers, so the
    // pipeline only completes if replies are read while commands are still being written.
    set_many_counted(&mut con, &borrowed);
    assert_eq!(dbsize(&mut reference) - before, ITEMS);
    for i in [0, 1, 2_184, 2_185, 499_999, 777_777, ITEMS - 2, ITEMS - 1] {
        assert_eq!(
            query::<Option<Vec<u8>>>(&mut reference, &[b"GET", &items[i].0]),
            Some(items[i].1.clone()),
            "item {i}"
        );
    }
    // In sync afterwards: the next reply is the next command's.
    assert_eq!(
        con.get(b"million:123456").unwrap(),
        Some(b"value-123456".to_vec())
    );

    // The benchmark's case (and redis-benchmark's): one small key overwritten a million times,
    // 31 bytes a command, so 2,115 commands a chunk and 473 writes in all.
    let same: Vec<(&[u8], &[u8])> = vec![(b"foo", b"bar"); ITEMS];
    assert_eq!(chunks(&same), 473);
    set_many_counted(&mut con, &same);
    assert_eq!(dbsize(&mut reference) - before, ITEMS + 1);
    assert_eq!(
        query::<Option<Vec<u8>>>(&mut reference, &[b"GET", b"foo"]),
        Some(b"bar".to_vec())
    );
    con.set(b"after", b"the batches").unwrap();
    assert_eq!(con.get(b"after").unwrap(), Some(b"the batches".to_vec()));
}

#[test]
fn set_many_of_a_million_items_on_both_transports() {
    for transport in Transport::ALL {
        million(*transport);
    }
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
        assert_eq!(
            query::<Option<Vec<u8>>>(&mut reference, &[b"GET", &key]),
            Some(b"v\r\n$1\r\n".to_vec())
        );
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
    let items = kvbench_servers::script::items(&keys, &values);
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport, &Options::default());
        con.set_many(&items).unwrap();
        for (key, value) in keys.iter().zip(&values) {
            assert_eq!(
                query::<Option<Vec<u8>>>(&mut reference, &[b"GET", key]).as_ref(),
                Some(value)
            );
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
