//! The contract's optional operations on a Redis library client, through `&mut dyn Client`:
//! shared by the redis-rs tests and, through `#[path]`, by fred's, since both adapters must
//! answer them alike and neither test crate can depend on the other library.

use kvbench_core::{
    Backend, Client, ClientSpec, Endpoint, Error, Handle, Result, SharedClient, Transport,
};
use kvbench_servers::script;

/// A many-key read: [`Client::get_many`] or [`Client::get_many_pipelined`].
type GetMany = fn(&mut dyn Client, &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>>;

/// [`check`] on each of `specs` over each transport, against private servers; `set_maxmemory`
/// sets the server's `maxmemory` through a connection of its own.
pub fn check_on_both_transports(specs: &[ClientSpec], set_maxmemory: impl Fn(&Endpoint, &str)) {
    for &transport in Transport::ALL {
        let (_servers, endpoint) = script::private_endpoint(Backend::Redis, transport);
        for spec in specs {
            let mut client = script::connect(spec, &endpoint);
            let mut second = script::connect(spec, &endpoint);
            let mut set_maxmemory = |bytes: &str| set_maxmemory(&endpoint, bytes);
            let key = |name: &str| format!("{}:{transport}:{name}", spec.name).into_bytes();
            check(&mut *client, &mut *second, &mut set_maxmemory, key);
        }
    }
}

/// Every optional operation on `client`, on keys `key(name)`: the edges first (a miss in a
/// batch, a 1-key batch, duplicates, an empty batch), then the errors that must leave the
/// connection usable. `second` is another connection of the same client that reads the
/// transaction's values back; `set_maxmemory` sets the server's `maxmemory`, so that a
/// transaction can be refused.
pub fn check(
    client: &mut dyn Client,
    second: &mut dyn Client,
    set_maxmemory: &mut dyn FnMut(&str),
    key: impl Fn(&str) -> Vec<u8>,
) {
    let (a, b, missing) = (key("ops:a"), key("ops:b"), key("ops:missing"));
    client.set(&a, b"1").unwrap();
    client.set(&b, b"\x00two\r\n").unwrap();
    let hits = |values: &[Option<&[u8]>]| -> Vec<Option<Vec<u8>>> {
        values
            .iter()
            .map(|value| value.map(<[u8]>::to_vec))
            .collect()
    };
    let batch: Vec<&[u8]> = vec![&a, &missing, &b, &a];
    let expected = hits(&[Some(b"1"), None, Some(b"\x00two\r\n"), Some(b"1")]);
    let one = hits(&[Some(b"1")]);
    let reads: [(&str, GetMany); 2] = [
        ("get_many", |client, keys| client.get_many(keys)),
        ("get_many_pipelined", |client, keys| {
            client.get_many_pipelined(keys)
        }),
    ];
    for (name, get_many) in reads {
        assert_eq!(get_many(client, &batch).unwrap(), expected, "{name}");
        assert_eq!(get_many(client, &[&a]).unwrap(), one, "{name} of one key");
        assert_eq!(
            get_many(client, &[&missing]).unwrap(),
            [None],
            "{name}: one miss"
        );
        assert!(
            get_many(client, &[]).unwrap().is_empty(),
            "{name} of no key"
        );
    }

    let counter = key("ops:counter");
    assert_eq!(client.incr(&counter).unwrap(), 1, "INCR starts from 0");
    assert_eq!(client.incr(&counter).unwrap(), 2);
    client
        .set(&counter, i64::MAX.to_string().as_bytes())
        .unwrap();
    let overflow = client.incr(&counter);
    assert!(matches!(overflow, Err(Error::Server(_))), "{overflow:?}");
    let not_a_number = client.incr(&b);
    assert!(
        matches!(not_a_number, Err(Error::Server(_))),
        "{not_a_number:?}"
    );
    assert_eq!(
        client.get(&a).unwrap().as_deref(),
        Some(&b"1"[..]),
        "usable"
    );

    let hash = key("ops:hash");
    let fields: Vec<(&[u8], &[u8])> = vec![(b"f1", b"v1"), (b"\xff\x00", b""), (b"f3", b"\r\n")];
    client.hset_many(&hash, &fields).unwrap();
    // Sorted: the server's order is its own (and fred's map keeps none).
    let mut all = client.hgetall(&hash).unwrap();
    all.sort();
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = (fields.iter())
        .map(|(field, value)| (field.to_vec(), value.to_vec()))
        .collect();
    want.sort();
    assert_eq!(all, want, "hgetall");
    let single = key("ops:single");
    client.hset_many(&single, &[(b"f", b"v")]).unwrap();
    let one_field = client.hgetall(&single).unwrap();
    assert_eq!(
        one_field,
        [(b"f".to_vec(), b"v".to_vec())],
        "a 1-field hash"
    );
    client.hset_many(&hash, &[(b"f1", b"new")]).unwrap();
    let f1 = client
        .hgetall(&hash)
        .unwrap()
        .into_iter()
        .find(|(f, _)| f == b"f1");
    assert_eq!(
        f1,
        Some((b"f1".to_vec(), b"new".to_vec())),
        "one field overwritten"
    );
    assert!(client.hgetall(&missing).unwrap().is_empty(), "missing hash");
    let wrongtype = client.hgetall(&a);
    assert!(
        matches!(&wrongtype, Err(Error::Server(m)) if m.contains("WRONGTYPE")),
        "{wrongtype:?}"
    );

    let (t1, t2) = (key("ops:t1"), key("ops:t2"));
    client.transaction(&[(&t1, b"one"), (&t2, b"two")]).unwrap();
    assert_eq!(
        second.get_many(&[&t1, &t2]).unwrap(),
        hits(&[Some(b"one"), Some(b"two")]),
        "the transaction's values, seen by another connection"
    );
    client.transaction(&[]).unwrap();
    // Above `maxmemory`, Redis refuses each SET as it is queued, then EXEC with `EXECABORT`.
    set_maxmemory("1");
    let refused = client.transaction(&[(&t1, b"never")]);
    set_maxmemory("0");
    assert!(matches!(refused, Err(Error::Server(_))), "{refused:?}");
    assert_eq!(
        client.get(&t1).unwrap().as_deref(),
        Some(&b"one"[..]),
        "usable, t1 kept"
    );
}

/// `callers` callers of `shared` at once, on the runtime `local` runs on: the even ones store
/// two keys of their own in a transaction and read them back, the odd ones SET and GET. A
/// command that landed between another caller's `MULTI` and `EXEC` would be answered `QUEUED`
/// (a wrong value), and that `EXEC` would answer one reply too many (a protocol error).
pub fn transactions_among_other_callers(
    local: &tokio::task::LocalSet,
    shared: &dyn SharedClient,
    callers: usize,
    key: impl Fn(usize, &str) -> Vec<u8>,
) {
    const ROUNDS: usize = 20;
    for caller in 0..callers {
        let Handle::Async(mut client) = shared.handle() else {
            panic!("the Redis libraries' shared clients hand out async handles")
        };
        let (k1, k2) = (key(caller, "1"), key(caller, "2"));
        local.spawn_local(async move {
            for round in 0..ROUNDS {
                let value = format!("caller {caller} round {round}").into_bytes();
                if caller % 2 == 0 {
                    let items: [(&[u8], &[u8]); 2] = [(&k1, &value), (&k2, &value)];
                    client.transaction(&items).await.unwrap();
                    let got = client.get_many(&[&k1, &k2]).await.unwrap();
                    assert_eq!(got, [Some(value.clone()), Some(value)], "caller {caller}");
                } else {
                    client.set(&k1, &value).await.unwrap();
                    let got = client.get(&k1).await.unwrap();
                    assert_eq!(got, Some(value), "caller {caller}");
                }
            }
        });
    }
}
