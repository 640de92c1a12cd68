//! Against a real memcached (1.6, private, `-m 256 -I 2m`), over TCP and over a Unix socket.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use kvbench_core::{Backend, Client, Endpoint, Error, Kind, Operation, Options, Transport};
use kvbench_memcached_text::{READ_BUF_LEN, SPEC, connect_tcp, connect_unix};

use common::{client, counted_client, endpoint, servers, stat, stats};

/// Runs `test` once per transport, each against its own memcached process.
fn on_both(test: impl Fn(&Endpoint)) {
    let servers = servers();
    for &transport in Transport::ALL {
        test(&endpoint(&servers, transport));
    }
}

fn patterned(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn spec_describes_this_client() {
    assert_eq!(SPEC.name, "memcached-text");
    assert_eq!(SPEC.backend, Backend::Memcached);
    assert_eq!(SPEC.kind, Kind::HandWritten);
    assert!(SPEC.supports(Transport::Tcp) && SPEC.supports(Transport::Unix));
    assert!(SPEC.limitations.is_empty());
    assert_eq!(SPEC.operations, [Operation::Incr, Operation::GetMany]);
    on_both(|endpoint| {
        let mut client = (SPEC.connect)(endpoint, &Options::default()).unwrap();
        client.set(b"via-spec", b"yes").unwrap();
        assert_eq!(
            client.get(b"via-spec").unwrap().as_deref(),
            Some(&b"yes"[..])
        );
    });
}

#[test]
fn hit_miss_and_overwrite() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        assert_eq!(client.get(b"never-written").unwrap(), None);
        client.set(b"foo", b"bar").unwrap();
        assert_eq!(client.get(b"foo").unwrap().as_deref(), Some(&b"bar"[..]));
        client.set(b"foo", b"a second, longer value").unwrap();
        assert_eq!(
            client.get(b"foo").unwrap().as_deref(),
            Some(&b"a second, longer value"[..])
        );
        client.set(b"foo", b"1").unwrap();
        assert_eq!(client.get(b"foo").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(
            client.get(b"never-written").unwrap(),
            None,
            "a miss after hits"
        );
    });
}

#[test]
fn empty_value_is_a_hit_not_a_miss() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        client.set(b"empty", b"").unwrap();
        assert_eq!(client.get(b"empty").unwrap(), Some(Vec::new()));
    });
}

#[test]
fn binary_value_with_all_256_bytes() {
    // Every byte value, plus the end-of-reply marker inside the data.
    let mut value: Vec<u8> = (0..=255u8).collect();
    value.extend_from_slice(b"\r\nEND\r\nVALUE x 0 1\r\n\0");
    // Every byte a key may hold: printable ASCII except the space.
    let key: Vec<u8> = (0x21..=0x7e).collect();
    on_both(|endpoint| {
        let mut client = client(endpoint);
        client.set(&key, &value).unwrap();
        assert_eq!(client.get(&key).unwrap(), Some(value.clone()));
    });
}

#[test]
fn one_mib_value_and_values_around_the_read_buffer_size() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        let mib = patterned(1024 * 1024);
        client.set(b"mib", &mib).unwrap();
        assert_eq!(client.get(b"mib").unwrap(), Some(mib));
        // Where a value stops arriving with its header and its rest is read straight into its Vec.
        for len in READ_BUF_LEN - 40..READ_BUF_LEN + 8 {
            let value = patterned(len);
            client.set(b"edge", &value).unwrap();
            assert_eq!(
                client.get(b"edge").unwrap(),
                Some(value),
                "value of {len} bytes"
            );
        }
        assert_eq!(
            client.get(b"never-written").unwrap(),
            None,
            "in step after large values"
        );
    });
}

#[test]
fn set_ex_expires_and_long_ttls_do_not() {
    let servers = servers();
    let endpoints: Vec<Endpoint> = Transport::ALL
        .iter()
        .map(|&t| endpoint(&servers, t))
        .collect();
    let mut clients: Vec<Box<dyn Client>> = endpoints.iter().map(client).collect();
    let started = Instant::now();
    for client in &mut clients {
        client.set_ex(b"short", b"v", 2).unwrap();
        assert_eq!(
            client.get(b"short").unwrap().as_deref(),
            Some(&b"v"[..]),
            "right after set_ex"
        );
        // Above 30 days memcached reads an exptime as a Unix time: sent raw, this would expire
        // at once (in 1970).
        client.set_ex(b"long", b"v", 31 * 24 * 3600).unwrap();
        assert!(matches!(
            client.set_ex(b"zero", b"v", 0),
            Err(Error::InvalidInput(_))
        ));
    }
    // memcached's clock ticks once a second: a 2 s expiry ends 1 to 2 s from now.
    for client in &mut clients {
        while client.get(b"short").unwrap().is_some() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "still there after 5 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            started.elapsed() >= Duration::from_millis(900),
            "expired too early"
        );
        assert_eq!(client.get(b"long").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

#[test]
fn delete_says_whether_the_key_existed() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        client.set(b"doomed", b"v").unwrap();
        assert!(client.delete(b"doomed").unwrap());
        assert_eq!(client.get(b"doomed").unwrap(), None);
        assert!(!client.delete(b"doomed").unwrap());
    });
}

#[test]
fn hostile_keys_are_refused_and_never_reach_the_server() {
    let too_long = vec![b'k'; 251];
    let hostile: &[&[u8]] = &[
        b"a\r\nflush_all",
        b"a b",
        b"",
        &too_long,
        b"tab\there",
        b"nul\0",
        b"del\x7f",
        b"lf\n",
        b"a\rb",
    ];
    on_both(|endpoint| {
        let mut client = client(endpoint);
        client.set(b"sentinel", b"still here").unwrap();
        let before = stats(endpoint);
        for &key in hostile {
            let shown = key.escape_ascii().to_string();
            assert!(
                matches!(client.get(key), Err(Error::InvalidInput(_))),
                "get {shown}"
            );
            assert!(
                matches!(client.set(key, b"v"), Err(Error::InvalidInput(_))),
                "set {shown}"
            );
            assert!(
                matches!(client.set_ex(key, b"v", 60), Err(Error::InvalidInput(_))),
                "set_ex {shown}"
            );
            assert!(
                matches!(client.delete(key), Err(Error::InvalidInput(_))),
                "delete {shown}"
            );
            // One bad key refuses the whole batch, the good item before it included.
            let batch: [(&[u8], &[u8]); 2] = [(b"good", b"1"), (key, b"2")];
            assert!(
                matches!(client.set_many(&batch), Err(Error::InvalidInput(_))),
                "set_many {shown}"
            );
        }
        let after = stats(endpoint);
        for field in [
            "cmd_get",
            "cmd_set",
            "cmd_flush",
            "cmd_touch",
            "curr_items",
            "total_items",
            "delete_hits",
            "delete_misses",
        ] {
            assert_eq!(before[field], after[field], "stats field {field} changed");
        }
        assert_eq!(after["cmd_flush"], "0");
        assert_eq!(
            client.get(b"sentinel").unwrap().as_deref(),
            Some(&b"still here"[..])
        );
        assert_eq!(client.get(b"good").unwrap(), None);
        // 250 bytes is the limit, not one too many.
        let longest = vec![b'k'; 250];
        client.set(&longest, b"v").unwrap();
        assert_eq!(client.get(&longest).unwrap().as_deref(), Some(&b"v"[..]));
    });
}

#[test]
fn too_large_value_is_a_server_error_and_the_connection_survives() {
    let huge = patterned(2 * 1024 * 1024 + 1); // over the server's `-I 2m`
    on_both(|endpoint| {
        let mut client = client(endpoint);
        match client.set(b"huge", &huge) {
            Err(Error::Server(msg)) => assert!(msg.contains("object too large for cache"), "{msg}"),
            other => panic!("want Error::Server, got {other:?}"),
        }
        // The server skipped the data block: the next reply is the next command's.
        client.set(b"small", b"v").unwrap();
        assert_eq!(client.get(b"small").unwrap().as_deref(), Some(&b"v"[..]));
        assert_eq!(client.get(b"huge").unwrap(), None);

        let items: [(&[u8], &[u8]); 3] = [(b"p1", b"1"), (b"huge", &huge), (b"p2", b"2")];
        assert!(matches!(client.set_many(&items), Err(Error::Server(_))));
        assert_eq!(client.get(b"p1").unwrap().as_deref(), Some(&b"1"[..]));
        client.set(b"after", b"pipeline").unwrap();
        assert_eq!(
            client.get(b"after").unwrap().as_deref(),
            Some(&b"pipeline"[..])
        );
    });
}

#[test]
fn a_small_command_is_one_write_and_one_read() {
    on_both(|endpoint| {
        let mut client = counted_client(endpoint);
        let mut step = |what: &str, op: &mut dyn FnMut(&mut dyn Client)| {
            let (reads, writes) = (client.stream_mut().reads, client.stream_mut().writes);
            op(&mut client);
            let stream = client.stream_mut();
            assert_eq!(
                (stream.writes - writes, stream.reads - reads),
                (1, 1),
                "{what}: (writes, reads)"
            );
        };
        step("set", &mut |c| c.set(b"foo", b"bar").unwrap());
        step("get hit", &mut |c| {
            assert!(c.get(b"foo").unwrap().is_some())
        });
        step("get miss", &mut |c| {
            assert!(c.get(b"nope").unwrap().is_none())
        });
        step("delete", &mut |c| assert!(c.delete(b"foo").unwrap()));
    });
}

/// 1,000,000 `foo<i>` = `bar` items in one `set_many`, then checked through `stats` and gets.
fn set_many_a_million(transport: Transport) {
    const ITEMS: usize = 1_000_000;
    let servers = servers();
    let endpoint = endpoint(&servers, transport);
    let keys: Vec<String> = (0..ITEMS).map(|i| format!("foo{i}")).collect();
    let items: Vec<(&[u8], &[u8])> = keys
        .iter()
        .map(|key| (key.as_bytes(), &b"bar"[..]))
        .collect();
    let mut client = client(&endpoint);

    let started = Instant::now();
    client.set_many(&items).unwrap();
    let elapsed = started.elapsed();
    eprintln!(
        "set_many of {ITEMS} items over {transport}: {:.3} s ({:.0} items/s)",
        elapsed.as_secs_f64(),
        ITEMS as f64 / elapsed.as_secs_f64()
    );

    for field in ["curr_items", "total_items", "cmd_set"] {
        assert_eq!(stat(&endpoint, field), ITEMS as u64, "stats {field}");
    }
    for i in (0..ITEMS).step_by(9_973).chain([ITEMS - 1]) {
        assert_eq!(
            client.get(keys[i].as_bytes()).unwrap().as_deref(),
            Some(&b"bar"[..]),
            "{}",
            keys[i]
        );
    }
    client.set(b"after", b"pipeline").unwrap();
    assert_eq!(
        client.get(b"after").unwrap().as_deref(),
        Some(&b"pipeline"[..])
    );
}

#[test]
fn set_many_a_million_on_both_transports() {
    for transport in Transport::ALL {
        set_many_a_million(*transport);
    }
}

#[test]
fn set_many_mixing_many_small_items_and_a_large_one() {
    // A pipeline chunked by bytes only would send ~1,600 small sets, then block writing the 1 MiB
    // value while those replies sit unread: on a Unix socket memcached stops reading after ~1,400
    // unread replies, and the two sides wait on each other until the write timeout.
    let keys: Vec<String> = (0..5_000).map(|i| format!("small{i}")).collect();
    let large = patterned(1024 * 1024);
    let mut items: Vec<(&[u8], &[u8])> = keys[..3_000]
        .iter()
        .map(|k| (k.as_bytes(), &b"bar"[..]))
        .collect();
    items.push((b"large", &large));
    items.extend(keys[3_000..].iter().map(|k| (k.as_bytes(), &b"bar"[..])));
    on_both(|endpoint| {
        let mut client = client(endpoint);
        client.set_many(&items).unwrap();
        assert_eq!(stat(endpoint, "curr_items"), items.len() as u64);
        assert_eq!(client.get(b"large").unwrap().as_deref(), Some(&large[..]));
        assert_eq!(
            client.get(b"small4999").unwrap().as_deref(),
            Some(&b"bar"[..])
        );
    });
}

#[test]
fn incr_counts_and_refuses_what_is_no_counter() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        let server_error = |result: kvbench_core::Result<i64>, says: &str| match result {
            Err(Error::Server(msg)) => assert!(msg.contains(says), "{msg:?} lacks {says:?}"),
            other => panic!("want a server error saying {says:?}, got {other:?}"),
        };
        client.set(b"counter", b"41").unwrap();
        assert_eq!(client.incr(b"counter").unwrap(), 42);
        assert_eq!(client.get(b"counter").unwrap().as_deref(), Some(&b"42"[..]));
        server_error(client.incr(b"no-such-counter"), "NOT_FOUND");
        client.set(b"text", b"forty-two").unwrap();
        server_error(client.incr(b"text"), "non-numeric");
        // memcached's counters are unsigned 64-bit: it goes past i64::MAX, the contract cannot.
        client.set(b"big", i64::MAX.to_string().as_bytes()).unwrap();
        server_error(client.incr(b"big"), "9223372036854775808");
        let big = client.get(b"big").unwrap();
        assert_eq!(big.as_deref(), Some(&b"9223372036854775808"[..]));
        assert_eq!(client.incr(b"counter").unwrap(), 43, "still in step");
    });
}

#[test]
fn get_many_answers_in_key_order_with_misses_and_repeats() {
    on_both(|endpoint| {
        let mut client = client(endpoint);
        let large = patterned(3 * READ_BUF_LEN + 7);
        let tricky = b"\r\nEND\r\nVALUE x 0 1\r\n".to_vec();
        let stored: [(&[u8], &[u8]); 4] = [
            (b"one", b"1"),
            (b"large", &large),
            (b"tricky", &tricky),
            (b"empty", b""),
        ];
        client.set_many(&stored).unwrap();
        let keys: [&[u8]; 8] = [
            b"one", b"miss", b"large", b"one", b"tricky", b"empty", b"miss", b"one",
        ];
        let want: Vec<Option<Vec<u8>>> = keys
            .iter()
            .map(|key| {
                stored
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.to_vec())
            })
            .collect();
        assert_eq!(client.get_many(&keys).unwrap(), want);
        assert_eq!(client.get_many_pipelined(&keys).unwrap(), want);
        assert_eq!(client.get_many(&[b"miss", b"miss"]).unwrap(), [None, None]);
        assert!(client.get_many(&[]).unwrap().is_empty());
        let refused = client.get_many(&[b"one", b"two words"]);
        assert!(
            matches!(refused, Err(Error::InvalidInput(_))),
            "{refused:?}"
        );
        assert_eq!(client.get(b"one").unwrap().as_deref(), Some(&b"1"[..]));
    });
}

#[test]
fn twenty_thousand_keys_with_large_values_among_them_in_one_batch() {
    // The pipelined gets cross 79 chunks; 20 values of 256 KiB make the server wait on its
    // output while this side still writes: the chunking must keep both sides moving.
    let keys: Vec<String> = (0..20_000).map(|i| format!("key{i}")).collect();
    let large = patterned(256 * 1024);
    let value = |i: usize| match i % 1_000 {
        0 => large.clone(),
        _ => i.to_string().into_bytes(),
    };
    let want: Vec<Option<Vec<u8>>> = (0..keys.len())
        .map(|i| (i % 2 == 0).then(|| value(i)))
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    on_both(|endpoint| {
        let mut client = client(endpoint);
        let stored: Vec<(&[u8], &[u8])> = (0..keys.len())
            .filter_map(|i| Some((refs[i], want[i].as_deref()?)))
            .collect();
        client.set_many(&stored).unwrap();
        assert_eq!(client.get_many_pipelined(&refs).unwrap(), want);
        assert_eq!(client.get_many(&refs).unwrap(), want);
    });
}

#[test]
fn a_silent_server_times_out_and_breaks_the_connection() {
    let options = Options {
        read_timeout: Duration::from_millis(300),
        ..Options::default()
    };

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut tcp = connect_tcp(&addr, &options).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.sock");
    let _unix_listener = UnixListener::bind(&path).unwrap();
    let mut unix = connect_unix(&path, &options).unwrap();

    let clients: [&mut dyn Client; 2] = [&mut tcp, &mut unix];
    for client in clients {
        let started = Instant::now();
        assert!(matches!(client.get(b"k"), Err(Error::Timeout(_))));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "took {:?}",
            started.elapsed()
        );
        let err = client.get(b"k").unwrap_err();
        assert!(err.breaks_connection(), "{err:?}");
    }
    assert!(tcp.is_broken() && unix.is_broken());
}

#[test]
fn nothing_listening_is_a_connect_error() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let err = connect_tcp(&addr, &Options::default()).err().unwrap();
    assert!(
        matches!(&err, Error::Connect { source, .. } if source.kind() == ErrorKind::ConnectionRefused),
        "{err:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = connect_unix(&dir.path().join("none.sock"), &Options::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
}
