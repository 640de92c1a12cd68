//! The contract's optional operations on `raw-tcp`'s connection against a private Redis, over TCP
//! and (as `raw-unix` runs it) over a Unix socket: INCR, MGET, HSET/HGETALL and a transaction,
//! one round trip per command, including the replies that are errors (INCR past `i64::MAX`,
//! WRONGTYPE, a SET refused inside MULTI), each leaving the connection usable.

use std::io::{Read, Write};

use kvbench_core::{Backend, Client, Endpoint, Error, Operation, Options, Transport};
use kvbench_raw_tcp::{Config, RawConnection, WriteStrategy};
use kvbench_resp::blocking::read_status;
use kvbench_servers::{Servers, StartOptions};

/// Sends one command that answers `+OK`, for the set-up the contract has no method for (ACL).
fn admin<S: Read + Write>(con: &mut RawConnection<S>, args: &[&[u8]]) {
    con.pipeline(
        |write_buf| kvbench_resp::encode_command(write_buf, args),
        |read_buf, stream| read_status(read_buf, stream, "OK"),
    )
    .unwrap_or_else(|err| panic!("{:?}: {err}", args[0].escape_ascii().to_string()));
}

fn server_error<T: std::fmt::Debug>(outcome: kvbench_core::Result<T>, starts: &str) {
    assert!(
        matches!(&outcome, Err(Error::Server(msg)) if msg.starts_with(starts)),
        "want Error::Server({starts}…), got {outcome:?}"
    );
}

fn operations<S: Read + Write + Send>(con: &mut RawConnection<S>) {
    // INCR: a missing key starts from 0; past i64::MAX is the server's error, and the value and
    // the connection are untouched.
    assert_eq!(con.incr(b"counter").unwrap(), 1);
    assert_eq!(con.incr(b"counter").unwrap(), 2);
    let max = i64::MAX.to_string().into_bytes();
    con.set(b"counter", &max).unwrap();
    server_error(
        con.incr(b"counter"),
        "ERR increment or decrement would overflow",
    );
    assert_eq!(con.get(b"counter").unwrap(), Some(max));
    con.set(b"word", b"abc").unwrap();
    server_error(con.incr(b"word"), "ERR value is not an integer");

    // MGET: in the keys' order, a nil for each miss, duplicates answered twice.
    con.set_many(&[(b"m:a", b"1"), (b"m:c", b"\r\n$3\r\n")])
        .unwrap();
    let keys: [&[u8]; 5] = [b"m:a", b"m:b", b"m:c", b"m:a", b"m:z"];
    let (a, c) = (Some(b"1".to_vec()), Some(b"\r\n$3\r\n".to_vec()));
    let want = vec![a.clone(), None, c, a, None];
    assert_eq!(con.get_many(&keys).unwrap(), want);
    assert_eq!(con.get_many_pipelined(&keys).unwrap(), want);
    assert_eq!(con.get_many(&[]).unwrap(), Vec::<Option<Vec<u8>>>::new());

    // HSET and HGETALL: a missing hash is empty; a string is WRONGTYPE.
    assert_eq!(con.hgetall(b"h").unwrap(), vec![]);
    let fields: [(&[u8], &[u8]); 3] = [(b"f1", b"v1"), (b"f2", b""), (b"f\r\n3", b"v3")];
    con.hset_many(b"h", &fields).unwrap();
    con.hset_many(b"h", &[(b"f1", b"new")]).unwrap();
    let mut all = con.hgetall(b"h").unwrap();
    all.sort();
    let owned = |(f, v): (&[u8], &[u8])| (f.to_vec(), v.to_vec());
    let mut want: Vec<_> = [(&b"f1"[..], &b"new"[..]), fields[1], fields[2]]
        .map(owned)
        .into();
    want.sort();
    assert_eq!(all, want);
    server_error(con.hgetall(b"word"), "WRONGTYPE");
    server_error(con.hset_many(b"word", &fields), "WRONGTYPE");

    // A transaction's values are all stored.
    let items: [(&[u8], &[u8]); 3] = [(b"t:1", b"one"), (b"t:2", b""), (b"t:1", b"again")];
    con.transaction(&items).unwrap();
    let stored = con.get_many(&[b"t:1", b"t:2"]).unwrap();
    assert_eq!(stored, [Some(b"again".to_vec()), Some(Vec::new())]);
    con.transaction(&[]).unwrap();

    // A SET refused while queued (no write permission on `no:*`) aborts it: nothing is
    // stored, and the transaction is over (the next command runs, not queued).
    admin(
        con,
        &[
            b"ACL",
            b"SETUSER",
            b"default",
            b"resetkeys",
            b"~t:*",
            b"~ok:*",
        ],
    );
    let refused: [(&[u8], &[u8]); 3] = [(b"ok:1", b"1"), (b"no:2", b"2"), (b"ok:3", b"3")];
    server_error(con.transaction(&refused), "NOPERM");
    assert_eq!(con.get_many(&[b"ok:1", b"ok:3"]).unwrap(), [None, None]);
    admin(con, &[b"ACL", b"SETUSER", b"default", b"allkeys"]);
    assert_eq!(con.get(b"no:2").unwrap(), None);
    assert!(!con.is_broken());
}

#[test]
fn every_operation_round_trips_on_both_transports() {
    assert_eq!(kvbench_raw_tcp::SPEC.operations, Operation::ALL);
    let options = Options::default();
    for &transport in Transport::ALL {
        // A server each: the keys above are written afresh.
        let servers = Servers::start_private(&StartOptions::default()).expect("start servers");
        match servers.endpoint(Backend::Redis, transport) {
            Some(Endpoint::Tcp(addr)) => {
                let config = Config::default();
                operations(&mut kvbench_raw_tcp::connect_tcp(&addr, &options, config).unwrap());
                let per_token = Config {
                    strategy: WriteStrategy::PerToken,
                    ..config
                };
                let mut con = kvbench_raw_tcp::connect_tcp(&addr, &options, per_token).unwrap();
                assert_eq!(con.incr(b"per-token").unwrap(), 1);
            }
            Some(Endpoint::Unix(path)) => {
                // What `raw-unix` connects (it depends on this crate, so it cannot be used here).
                let unix = kvbench_resp::blocking::connect_unix(
                    &path,
                    &options,
                    WriteStrategy::PerCommand,
                );
                operations(&mut unix.unwrap());
            }
            None => panic!("private redis listens on {transport}"),
        }
    }
}
