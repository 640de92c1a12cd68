//! Against a real memcached (1.6, private, `-I 2m`), over TCP and over a Unix socket: the replies
//! a real server gives to each command, a quiet batch, and a batch with one item the server
//! refuses in the middle.

use kvbench_core::{Backend, Client, Endpoint, Error, Kind, Options, Transport};
use kvbench_memcached_meta::SPEC;
use kvbench_servers::Servers;

/// Runs `test` once per transport, with a fresh client on this test's own private memcached.
fn on_both(test: impl Fn(&mut dyn Client)) {
    let servers = Servers::start_private(&Default::default()).expect("start private servers");
    for &transport in Transport::ALL {
        let endpoint: Endpoint = servers
            .endpoint(Backend::Memcached, transport)
            .expect("memcached endpoint");
        let mut client = (SPEC.connect)(&endpoint, &Options::default()).expect("connect");
        test(&mut *client);
    }
}

#[test]
fn spec_describes_this_client() {
    assert_eq!(
        (SPEC.name, SPEC.backend, SPEC.kind, SPEC.transports),
        (
            "memcached-meta",
            Backend::Memcached,
            Kind::HandWritten,
            Transport::ALL
        )
    );
    assert!(SPEC.pipelines() && SPEC.limitations.is_empty() && !SPEC.loopback_floor);
}

#[test]
fn get_set_delete_as_a_real_server_answers_them() {
    on_both(|client| {
        assert_eq!(client.get(b"never-written").unwrap(), None);
        client.set(b"foo", b"bar\r\nEN\r\n").unwrap();
        assert_eq!(
            client.get(b"foo").unwrap().as_deref(),
            Some(&b"bar\r\nEN\r\n"[..])
        );
        client.set_ex(b"foo", b"", 100).unwrap();
        assert_eq!(client.get(b"foo").unwrap().as_deref(), Some(&b""[..]));
        assert!(client.delete(b"foo").unwrap());
        assert!(!client.delete(b"foo").unwrap());
        assert_eq!(client.get(b"foo").unwrap(), None);
    });
}

#[test]
fn a_quiet_batch_stores_every_item() {
    on_both(|client| {
        let keys: Vec<String> = (0..20_000).map(|i| format!("batch:{i}")).collect();
        let items: Vec<(&[u8], &[u8])> =
            keys.iter().map(|k| (k.as_bytes(), k.as_bytes())).collect();
        client.set_many(&items).unwrap();
        for key in keys.iter().step_by(997) {
            assert_eq!(
                client.get(key.as_bytes()).unwrap().as_deref(),
                Some(key.as_bytes())
            );
        }
        client.set_many(&[]).unwrap();
    });
}

#[test]
fn an_item_the_server_refuses_fails_the_batch_and_the_rest_is_stored() {
    on_both(|client| {
        // Over the private server's 2 MiB item limit: SERVER_ERROR, its data skipped.
        let too_large = vec![b'x'; 2 * 1024 * 1024 + 1];
        let items: &[(&[u8], &[u8])] = &[
            (b"before", b"1"),
            (b"too-large", &too_large),
            (b"after", b"3"),
        ];
        match client.set_many(items) {
            Err(Error::Server(msg)) => assert!(msg.contains("1 of 3 items failed"), "{msg}"),
            other => panic!("want Err(Server), got {other:?}"),
        }
        assert_eq!(client.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(client.get(b"too-large").unwrap(), None);
        assert_eq!(client.get(b"after").unwrap().as_deref(), Some(&b"3"[..]));
        // A single set of it is refused the same way, and the connection stays in step.
        assert!(matches!(
            client.set(b"too-large", &too_large),
            Err(Error::Server(_))
        ));
        client.set(b"still", b"usable").unwrap();
        assert_eq!(
            client.get(b"still").unwrap().as_deref(),
            Some(&b"usable"[..])
        );
    });
}

#[test]
fn quiet_gets_answer_in_key_order_with_misses_and_repeats() {
    on_both(|client| {
        let binary: Vec<u8> = (0..=255u8).chain(*b"\r\nMN\r\nEN\r\n").collect();
        let stored: &[(&[u8], &[u8])] = &[(b"one", b"1"), (b"binary", &binary), (b"empty", b"")];
        client.set_many(stored).unwrap();
        let keys: [&[u8]; 7] = [
            b"one", b"miss", b"binary", b"one", b"empty", b"miss", b"one",
        ];
        let want: [Option<&[u8]>; 7] = [
            Some(b"1"),
            None,
            Some(&binary),
            Some(b"1"),
            Some(b""),
            None,
            Some(b"1"),
        ];
        let want = want.map(|value| value.map(<[u8]>::to_vec));
        assert_eq!(client.get_many_pipelined(&keys).unwrap(), want);
        assert_eq!(client.get_many_pipelined(&[b"miss"]).unwrap(), [None]);
        assert_eq!(
            client.get(b"one").unwrap().as_deref(),
            Some(&b"1"[..]),
            "in step"
        );
    });
}

#[test]
fn quiet_gets_of_twenty_thousand_keys_with_large_values_among_them() {
    // Many chunks, and 20 values of 256 KiB that keep the server waiting on its output while
    // this side still writes: reading a chunk behind must keep both sides moving.
    let keys: Vec<String> = (0..20_000).map(|i| format!("key{i}")).collect();
    let large = vec![b'L'; 256 * 1024];
    let want: Vec<Option<Vec<u8>>> = (0..keys.len())
        .map(|i| match (i % 2, i % 1_000) {
            (1, _) => None,
            (_, 0) => Some(large.clone()),
            _ => Some(i.to_string().into_bytes()),
        })
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(String::as_bytes).collect();
    let stored: Vec<(&[u8], &[u8])> = (0..keys.len())
        .filter_map(|i| Some((refs[i], want[i].as_deref()?)))
        .collect();
    on_both(|client| {
        client.set_many(&stored).unwrap();
        assert_eq!(client.get_many_pipelined(&refs).unwrap(), want);
    });
}
