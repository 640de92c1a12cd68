//! `inline` against real private Redis servers. Each test starts its own servers, so that DBSIZE
//! counts only its own keys.

use kvbench_core::{Backend, Client, Endpoint, Error, Options, Transport};
use kvbench_inline::{INLINE_MAX_LEN, Inline, InlineConnection, connect_tcp, connect_unix};
use kvbench_servers::costs::{CountingAllocator, assert_small_call_costs};
use kvbench_servers::{Servers, StartOptions};

/// Counts allocations per thread, for the exact-costs test.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn start() -> Servers {
    Servers::start_private(&StartOptions::default()).expect("start private servers")
}

fn client(servers: &Servers, transport: Transport) -> Box<dyn Client> {
    let options = Options::default();
    match servers
        .endpoint(Backend::Redis, transport)
        .expect("private redis endpoint")
    {
        Endpoint::Tcp(addr) => Box::new(connect_tcp(&addr, &options).expect("connect tcp")),
        Endpoint::Unix(path) => Box::new(connect_unix(&path, &options).expect("connect unix")),
    }
}

/// An independent connection (redis-rs, multi-bulk) to look at what the server holds.
fn reference(servers: &Servers) -> redis::Connection {
    let Some(Endpoint::Tcp(addr)) = servers.endpoint(Backend::Redis, Transport::Tcp) else {
        panic!("private redis listens on tcp");
    };
    redis::Client::open(format!("redis://{addr}/"))
        .and_then(|c| c.get_connection())
        .expect("reference connection")
}

/// A small GET or SET is one `write` and one `read`, a GET hit one allocation at most, a miss
/// none ([`kvbench_servers::costs`]).
#[test]
fn small_calls_are_one_write_one_read() {
    let servers = start();
    for &transport in Transport::ALL {
        let inline = |socket| InlineConnection::new(socket, Inline);
        assert_small_call_costs(&servers, Backend::Redis, transport, inline);
    }
}

fn dbsize(con: &mut redis::Connection) -> usize {
    redis::cmd("DBSIZE").query(con).expect("DBSIZE")
}

fn get(con: &mut redis::Connection, key: &[u8]) -> Option<Vec<u8>> {
    redis::cmd("GET").arg(key).query(con).expect("GET")
}

#[test]
fn every_command_round_trips_on_both_transports() {
    let servers = start();
    let mut reference = reference(&servers);
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport);
        let key = format!("k:{transport}").into_bytes();
        assert_eq!(con.get(&key).unwrap(), None);
        con.set(&key, b"bar").unwrap();
        assert_eq!(con.get(&key).unwrap(), Some(b"bar".to_vec()));
        assert_eq!(get(&mut reference, &key), Some(b"bar".to_vec()));
        con.set_ex(&key, b"short-lived", 100).unwrap();
        let ttl: i64 = redis::cmd("TTL").arg(&key).query(&mut reference).unwrap();
        assert!((1..=100).contains(&ttl), "ttl {ttl}");
        assert!(con.delete(&key).unwrap());
        assert!(!con.delete(&key).unwrap());
        // Overwrite (the kit's own overwrite case uses a value with spaces).
        con.set(&key, b"the-first,longer-value").unwrap();
        con.set(&key, b"2").unwrap();
        assert_eq!(con.get(&key).unwrap(), Some(b"2".to_vec()));
        assert_eq!(get(&mut reference, &key), Some(b"2".to_vec()));
        // Replies are RESP: a value the inline form could never send still reads back.
        redis::cmd("SET")
            .arg(&key)
            .arg(b"with spaces\r\nand CRLF\0")
            .exec(&mut reference)
            .unwrap();
        assert_eq!(
            con.get(&key).unwrap(),
            Some(b"with spaces\r\nand CRLF\0".to_vec())
        );
        con.set_many(&[(b"m:1", b"one"), (b"m:2", b"two")]).unwrap();
        assert_eq!(get(&mut reference, b"m:2"), Some(b"two".to_vec()));
    }
}

#[test]
fn bytes_the_splitter_ignores_arrive_intact() {
    let servers = start();
    let mut reference = reference(&servers);
    // Every byte except whitespace, quotes and NUL: backslashes, `$`, `*`, high bytes.
    let value: Vec<u8> = (1..=255u8)
        .filter(|&b| kvbench_inline::forbidden(b).is_none())
        .collect();
    let key = b"k\\x41\xff*$".to_vec();
    let mut con = client(&servers, Transport::Tcp);
    con.set(&key, &value).unwrap();
    assert_eq!(get(&mut reference, &key), Some(value.clone()));
    assert_eq!(con.get(&key).unwrap(), Some(value));
}

#[test]
fn an_injected_command_never_reaches_the_server() {
    let servers = start();
    let mut reference = reference(&servers);
    redis::cmd("SET")
        .arg("canary")
        .arg("alive")
        .exec(&mut reference)
        .unwrap();
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport);
        let attacks: [&[u8]; 6] = [
            b"a\r\nFLUSHALL",
            b"a\nFLUSHALL",
            b"a\rFLUSHALL",
            b"a FLUSHALL",
            b"\"a\" FLUSHALL",
            b"a\0\r\nFLUSHALL",
        ];
        for key in attacks {
            let before = dbsize(&mut reference);
            for outcome in [
                con.set(key, b"v"),
                con.set_ex(key, b"v", 10),
                con.get(key).map(drop),
                con.delete(key).map(drop),
            ] {
                assert!(
                    matches!(outcome, Err(Error::InvalidInput(_))),
                    "{:?}: {outcome:?}",
                    key.escape_ascii().to_string()
                );
            }
            // Nothing was sent: the keyspace is unchanged, the key and its prefix not created.
            assert_eq!(dbsize(&mut reference), before);
            assert_eq!(get(&mut reference, b"canary"), Some(b"alive".to_vec()));
            assert_eq!(get(&mut reference, b"a"), None);
            assert_eq!(get(&mut reference, key), None);
            // And the connection is untouched.
            assert_eq!(con.get(b"canary").unwrap(), Some(b"alive".to_vec()));
        }
        // A value can carry an attack too.
        assert!(matches!(
            con.set(b"k", b"v\r\nFLUSHALL"),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(get(&mut reference, b"k"), None);
        assert_eq!(dbsize(&mut reference), 1);
    }
}

#[test]
fn the_longest_line_redis_reads_is_accepted_and_one_more_byte_is_refused() {
    let servers = start();
    let mut reference = reference(&servers);
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport);
        // "SET k " + value + "\r\n" == INLINE_MAX_LEN.
        let value: Vec<u8> = (0..INLINE_MAX_LEN - 8)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        con.set(b"k", &value).unwrap();
        assert_eq!(get(&mut reference, b"k"), Some(value.clone()));
        let longer = [&value[..], b"z"].concat();
        assert!(matches!(
            con.set(b"k", &longer),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(con.get(b"k").unwrap(), Some(value));
    }
}

#[test]
fn an_error_reply_is_typed_and_the_connection_survives() {
    let servers = start();
    let mut reference = reference(&servers);
    redis::cmd("RPUSH")
        .arg("a-list")
        .arg("x")
        .exec(&mut reference)
        .unwrap();
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport);
        assert!(
            matches!(con.get(b"a-list"), Err(Error::Server(msg)) if msg.starts_with("WRONGTYPE"))
        );
        con.set(b"after", b"ok").unwrap();
        assert_eq!(con.get(b"after").unwrap(), Some(b"ok".to_vec()));
    }
}

/// The optional operations, each one inline line. A SET of a transaction that the inline form
/// cannot carry is refused after MULTI went out: the transaction is discarded, so nothing of it
/// is stored and the next command is not queued.
#[test]
fn every_operation_round_trips_and_a_refused_transaction_is_discarded() {
    let servers = start();
    let mut reference = reference(&servers);
    for transport in Transport::ALL {
        let mut con = client(&servers, *transport);
        assert_eq!(con.incr(b"n").unwrap(), 1);
        con.set(b"n", i64::MAX.to_string().as_bytes()).unwrap();
        assert!(matches!(con.incr(b"n"), Err(Error::Server(_))));
        let values = con.get_many(&[b"n", b"missing"]).unwrap();
        assert_eq!(values, [Some(i64::MAX.to_string().into_bytes()), None]);
        assert_eq!(con.hgetall(b"h").unwrap(), []);
        con.hset_many(b"h", &[(b"f", b"v")]).unwrap();
        assert_eq!(con.hgetall(b"h").unwrap(), [(b"f".to_vec(), b"v".to_vec())]);
        assert!(matches!(
            con.hset_many(b"h", &[(b"f", b"two words")]),
            Err(Error::InvalidInput(_))
        ));

        let refused: [(&[u8], &[u8]); 3] = [(b"t:1", b"1"), (b"t:2", b"two words"), (b"t:3", b"3")];
        assert!(matches!(
            con.transaction(&refused),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(get(&mut reference, b"t:1"), None);
        assert_eq!(con.get(b"t:1").unwrap(), None, "a GET answered, not queued");
        con.transaction(&[(b"t:1", b"1"), (b"t:3", b"3")]).unwrap();
        assert_eq!(get(&mut reference, b"t:3"), Some(b"3".to_vec()));
        redis::cmd("FLUSHALL").exec(&mut reference).unwrap();
    }
}
