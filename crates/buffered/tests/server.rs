//! `buffered` against real private Redis servers. Each test starts its own servers, so that
//! DBSIZE counts only its own keys and stopping a server disturbs no other test. Pipelines far
//! larger than the socket buffers must store every item, in order, with one `write` per chunk.

use std::io::{self, Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use kvbench_buffered::{BufferedConnection, CHUNK_LEN, Duplex, connect_tcp, connect_unix};
use kvbench_core::{Backend, Client, Endpoint, Error, Operation, Options, Transport};
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

/// With `only_ok`, the default user may touch only keys under `ok:`: every other SET gets
/// -NOPERM, the rest succeed. Without, every key again.
fn restrict_keys(reference: &mut redis::Connection, only_ok: bool) {
    let keys: &[&str] = if only_ok {
        &["resetkeys", "~ok:*"]
    } else {
        &["allkeys"]
    };
    redis::cmd("ACL")
        .arg(&["SETUSER", "default"])
        .arg(keys)
        .exec(reference)
        .unwrap();
}

#[test]
fn error_replies_fail_the_batch_after_every_reply_is_drained() {
    let servers = start();
    let mut reference = reference(&servers);
    restrict_keys(&mut reference, true);
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
                let count = format!("{} of {items} commands failed", items / 2);
                assert!(msg.starts_with(&count) && msg.contains("NOPERM"), "{msg}");
            }
            other => panic!("want Error::Server, got {other:?}"),
        }
        assert_eq!(dbsize(&mut reference), items / 2);
        // The connection is still in step: the next reply is the next command's.
        assert_eq!(con.get(b"ok:2").unwrap(), Some(b"v".to_vec()));
        con.set(b"ok:after", b"yes").unwrap();
        assert_eq!(con.get(b"ok:after").unwrap(), Some(b"yes".to_vec()));
    }
    restrict_keys(&mut reference, false);
}

/// The operations beyond GET and SET. INCR, MGET and the hash go through `raw-tcp`'s
/// connection; `get_many_pipelined` and `transaction` are this crate's: each one `write`.
#[test]
fn every_operation_on_both_transports_and_the_pipelined_ones_in_one_write() {
    assert_eq!(kvbench_buffered::SPEC.operations, Operation::ALL);
    let servers = start();
    let mut reference = reference(&servers);
    for &transport in Transport::ALL {
        redis::cmd("FLUSHALL").exec(&mut reference).unwrap();
        let mut con = BufferedConnection::new(Shared::connect(&endpoint(&servers, transport)));
        let max = i64::MAX.to_string();
        con.set(b"n", max.as_bytes()).unwrap();
        let overflow = con.incr(b"n");
        assert!(
            matches!(&overflow, Err(Error::Server(m)) if m.contains("overflow")),
            "{overflow:?}"
        );
        assert_eq!(con.incr(b"fresh").unwrap(), 1);

        con.set_many(&[(b"a", b"1"), (b"c", b"3")]).unwrap();
        let keys: [&[u8]; 4] = [b"a", b"b", b"c", b"a"];
        let want = [
            Some(b"1".to_vec()),
            None,
            Some(b"3".to_vec()),
            Some(b"1".to_vec()),
        ];
        assert_eq!(con.get_many(&keys).unwrap(), want);
        let writes = con.stream().writes();
        assert_eq!(con.get_many_pipelined(&keys).unwrap(), want);
        assert_eq!(con.stream().writes() - writes, 1, "one write for every GET");
        assert_eq!(con.get_many_pipelined(&[]).unwrap(), []);

        assert_eq!(con.hgetall(b"h").unwrap(), []);
        con.hset_many(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(con.hgetall(b"h").unwrap(), [(b"f".to_vec(), b"v".to_vec())]);

        let items: Vec<(Vec<u8>, Vec<u8>)> = (0..1_000)
            .map(|i| (format!("t:{i}").into_bytes(), vec![b'v'; i]))
            .collect();
        let borrowed: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let writes = con.stream().writes();
        con.transaction(&borrowed).unwrap();
        assert_eq!(
            con.stream().writes() - writes,
            1,
            "MULTI, 1,000 SETs and EXEC in one write"
        );
        for i in [0, 1, 999] {
            let stored = query::<Option<Vec<u8>>>(&mut reference, &[b"GET", &items[i].0]);
            assert_eq!(stored.as_ref(), Some(&items[i].1), "t:{i}");
        }
    }
}

/// Far more GETs, and far more replies, than the socket buffers hold, written before any reply
/// is read: Redis reads on while its replies wait, so this completes instead of deadlocking.
#[test]
fn a_pipelined_get_of_half_a_million_keys_completes() {
    let servers = start();
    let values: Vec<Vec<u8>> = (0..1_000u64).map(|i| i.to_le_bytes().repeat(2)).collect();
    let keys: Vec<Vec<u8>> = (0..values.len())
        .map(|i| format!("k:{i}").into_bytes())
        .collect();
    for &transport in Transport::ALL {
        let mut con = client(&servers, transport, &Options::default());
        con.set_many(&kvbench_servers::script::items(&keys, &values))
            .unwrap();
        // 13 MB of commands, 12 MB of replies: each far beyond what the sockets buffer.
        let mut asked: Vec<&[u8]> = keys.iter().cycle().take(500_000).map(|k| &k[..]).collect();
        asked[123_456] = b"k:missing";
        let got = con.get_many_pipelined(&asked).unwrap();
        assert_eq!(got.len(), asked.len());
        for (i, value) in got.iter().enumerate() {
            let want = (i != 123_456).then(|| &values[i % values.len()]);
            assert_eq!(value.as_ref(), want, "{transport}, key {i}");
        }
    }
}

/// A SET refused while queued (no write permission on its key) aborts the pipelined
/// transaction: nothing is stored, and once EXEC's reply is read too, the connection is in step.
#[test]
fn a_refused_set_aborts_the_pipelined_transaction() {
    let servers = start();
    let mut reference = reference(&servers);
    restrict_keys(&mut reference, true);
    for &transport in Transport::ALL {
        let mut con = client(&servers, transport, &Options::default());
        let items: [(&[u8], &[u8]); 3] = [(b"ok:1", b"1"), (b"no:2", b"2"), (b"ok:3", b"3")];
        let outcome = con.transaction(&items);
        assert!(
            matches!(&outcome, Err(Error::Server(m)) if m.starts_with("NOPERM")),
            "{outcome:?}"
        );
        assert_eq!(dbsize(&mut reference), 0);
        con.transaction(&[(b"ok:1", b"1"), (b"ok:3", b"3")])
            .unwrap();
        assert_eq!(
            con.get_many(&[b"ok:1", b"ok:3"]).unwrap(),
            [Some(b"1".to_vec()), Some(b"3".to_vec())]
        );
        redis::cmd("FLUSHALL").exec(&mut reference).unwrap();
    }
    restrict_keys(&mut reference, false);
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
    let keys: Vec<&[u8]> = borrowed.iter().map(|(k, _)| *k).collect();
    for transport in Transport::ALL {
        // A million SETs block the writer; ten wait for their replies (the pipelined GETs and
        // the transaction write with the same `write_all` as ten SETs, on the calling thread).
        for (call, batch) in [
            (0, &borrowed[..]),
            (0, &borrowed[..10]),
            (1, &borrowed[..10]),
            (2, &borrowed[..10]),
        ] {
            let mut con = client(&servers, *transport, &options);
            con.set(b"warm", b"up").unwrap();
            signal(pid, "STOP");
            let started = Instant::now();
            let outcome = match call {
                0 => con.set_many(batch),
                1 => con.get_many_pipelined(&keys[..batch.len()]).map(drop),
                _ => con.transaction(batch),
            };
            let elapsed = started.elapsed();
            signal(pid, "CONT");
            assert!(
                matches!(outcome, Err(Error::Timeout(_))),
                "{transport}, call {call}, {} items: {outcome:?}",
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
