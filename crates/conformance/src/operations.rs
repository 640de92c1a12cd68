//! The behaviours of the contract's optional operations ([`Operation`]), and of
//! `get_many_pipelined`, which every client has (its default is one GET after another).
//!
//! A client whose spec does not declare an operation meets [`refuses`] instead of the
//! behaviour: every call of the operation must fail with [`Error::Unsupported`], leave nothing on
//! the server and leave the connection usable, and the case is reported unsupported, never as a
//! pass.

use std::sync::atomic::{AtomicBool, Ordering};

use kvbench_core::{Backend, Client, Error, Operation};

use crate::{Case, Failure, Outcome, Reference, expect_miss, expect_value, preview};

/// Keys in the batch of the `get_many` and `get_many_pipelined` behaviours.
pub const BATCH_KEYS: usize = 1000;

/// Keys in that batch for a client whose every round trip is slow by design: the default
/// `get_many_pipelined` makes one round trip per key, 20 of ~40 ms each.
pub const SLOW_BATCH_KEYS: usize = 20;

/// Keys each transaction of the atomicity check stores, and how many such transactions run
/// while a reader watches.
pub const TRANSACTION_KEYS: usize = 200;
/// See [`TRANSACTION_KEYS`].
pub const TRANSACTION_ROUNDS: usize = 40;

/// The same for a client whose round trips are slow by design: a client may wait for each
/// `QUEUED`, and 3 transactions of 200 keys would take 24 s.
pub const SLOW_TRANSACTION_KEYS: usize = 10;
/// See [`SLOW_TRANSACTION_KEYS`].
pub const SLOW_TRANSACTION_ROUNDS: usize = 3;

/// Length of each value the atomicity check stores: 200 such SETs are ~60 KiB, more than the
/// 16 KiB Redis reads from a connection at once, so SETs sent without `MULTI` would reach the
/// server in several reads, between which the reader's `MGET` could run.
const TRANSACTION_VALUE_LEN: usize = 256;

/// What a client that does not implement `operation` must do when it is called anyway: refuse
/// every call of it with [`Error::Unsupported`], send nothing (the key stays absent), and answer
/// the next command correctly.
pub(crate) fn refuses(c: &mut Case, operation: Operation) -> Outcome {
    let key = c.key("refused");
    let calls: Vec<(&str, kvbench_core::Result<()>)> = match operation {
        Operation::Incr => vec![("incr", c.client.incr(&key).map(drop))],
        Operation::GetMany => vec![("get_many", c.client.get_many(&[&key, &key]).map(drop))],
        Operation::Hash => vec![
            ("hset_many", c.client.hset_many(&key, &[(b"f", b"v")])),
            ("hgetall", c.client.hgetall(&key).map(drop)),
        ],
        Operation::Transaction => vec![("transaction", c.client.transaction(&[(&key, b"v")]))],
    };
    for (call, result) in calls {
        match result {
            Err(Error::Unsupported(_)) => {}
            other => {
                return Err(Failure::Check(format!(
                    "{call}: the spec does not declare {}, so want Error::Unsupported, got {other:?}",
                    operation.name()
                )));
            }
        }
    }
    if c.reference.exists(&key)? {
        return Err("the refused call stored something on the server"
            .to_string()
            .into());
    }
    c.still_usable()
}

/// `value` as `what` expects it: the failure names both.
fn expect_eq<T: PartialEq + std::fmt::Debug>(got: T, want: T, what: &str) -> Outcome {
    if got == want {
        Ok(())
    } else {
        Err(Failure::Check(format!(
            "{what}: got {got:?}, want {want:?}"
        )))
    }
}

/// The message of the error reply `result` must be; the connection is then checked by the
/// caller's next command.
fn expect_server_error<T: std::fmt::Debug>(
    result: kvbench_core::Result<T>,
    what: &str,
) -> Result<String, Failure> {
    match result {
        Err(Error::Server(message)) => Ok(message),
        other => Err(Failure::Check(format!(
            "{what}: want Error::Server, got {other:?}"
        ))),
    }
}

pub(crate) fn incr(c: &mut Case) -> Outcome {
    // Counters are stored as decimal text, written here by the reference. memcached rewrites
    // a counter in place: 99 + 1 needs one more digit.
    let counter = c.key("counter");
    for (stored, want) in [(41, 42), (99, 100)] {
        c.reference.set(&counter, stored.to_string().as_bytes())?;
        expect_eq(c.client.incr(&counter)?, want, &format!("incr of {stored}"))?;
        let held = c.reference.get(&counter)?;
        expect_value(
            held,
            want.to_string().as_bytes(),
            "reference get after incr",
        )?;
    }

    let missing = c.key("missing");
    match c.backend {
        Backend::Redis | Backend::RedisCluster => {
            expect_eq(c.client.incr(&missing)?, 1, "incr of a missing key")?;
            expect_value(c.reference.get(&missing)?, b"1", "reference get after incr")?;
        }
        Backend::Memcached => {
            let result = c.client.incr(&missing);
            expect_server_error(result, "incr of a missing key (NOT_FOUND)")?;
            expect_miss(c.reference.get(&missing)?, "reference get after incr")?;
        }
    }

    let text = c.key("not-a-counter");
    c.reference.set(&text, b"forty-one")?;
    let result = c.client.incr(&text);
    expect_server_error(result, "incr of a value that is not a number")?;
    expect_value(c.reference.get(&text)?, b"forty-one", "reference get")?;

    let largest = c.key("largest");
    let max = i64::MAX.to_string();
    c.reference.set(&largest, max.as_bytes())?;
    let message = expect_server_error(c.client.incr(&largest), "incr of i64::MAX")?;
    match c.backend {
        // Redis refuses the increment and leaves the value alone.
        Backend::Redis | Backend::RedisCluster => {
            expect_value(c.reference.get(&largest)?, max.as_bytes(), "reference")?
        }
        // A memcached counter is unsigned 64-bit: the server holds i64::MAX + 1, which the
        // client cannot return, so it must say what the server holds.
        Backend::Memcached => {
            let held = (i64::MAX as u64 + 1).to_string();
            expect_value(c.reference.get(&largest)?, held.as_bytes(), "reference")?;
            if !message.contains(&held) {
                return Err(format!(
                    "incr past i64::MAX: the error {message:?} does not name the value {held}"
                )
                .into());
            }
        }
    }
    c.still_usable()
}

/// A multi-key read, one command or pipelined.
type MultiGet = fn(&mut dyn Client, &[&[u8]]) -> kvbench_core::Result<Vec<Option<Vec<u8>>>>;

pub(crate) fn get_many(c: &mut Case) -> Outcome {
    multi_get(c, |client, keys| client.get_many(keys))
}

pub(crate) fn get_many_pipelined(c: &mut Case) -> Outcome {
    multi_get(c, |client, keys| client.get_many_pipelined(keys))
}

/// Reads written by the reference, through `read`: hits and misses interleaved, a key twice,
/// values with every byte (a reply terminator and a RESP header among them) and an empty one;
/// one key; no key; and a batch of [`BATCH_KEYS`]. Values come back in the order of the keys.
fn multi_get(c: &mut Case, read: MultiGet) -> Outcome {
    let mut binary: Vec<u8> = (0..=255u8).collect();
    binary.extend_from_slice(b"\r\n$-1\r\n*2\r\nEND\r\n");
    let stored = [
        (c.key("binary"), binary),
        (c.key("empty"), Vec::new()),
        (c.key("text"), b"text".to_vec()),
    ];
    let [binary, empty, text] = stored.clone().map(|(key, _)| key);
    let (miss, other_miss) = (c.key("miss"), c.key("other-miss"));
    c.reference.set_many(&stored)?;
    let batch_len = if c.slow { SLOW_BATCH_KEYS } else { BATCH_KEYS };
    // Every third key of the batch is a miss; the others hold values that name their key.
    let batch: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..batch_len)
        .map(|i| {
            let value = (i % 3 != 1).then(|| format!("value-{i}").into_bytes());
            (c.key(&format!("b{i}")), value)
        })
        .collect();
    let batch_hits: Vec<(Vec<u8>, Vec<u8>)> = (batch.iter())
        .filter_map(|(key, value)| Some((key.clone(), value.clone()?)))
        .collect();
    c.reference.set_many(&batch_hits)?;

    let value = |key: &Vec<u8>| {
        stored
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let reads: [(&str, Vec<&Vec<u8>>); 4] = [
        (
            "hits and misses, a key twice",
            vec![&binary, &miss, &empty, &other_miss, &binary, &text],
        ),
        ("one key", vec![&text]),
        ("one missing key", vec![&miss]),
        ("no key", vec![]),
    ];
    for (what, keys) in reads {
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|key| value(key)).collect();
        let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_slice()).collect();
        expect_values(read(&mut *c.client, &keys)?, &want, what)?;
    }
    let keys: Vec<&[u8]> = batch.iter().map(|(key, _)| key.as_slice()).collect();
    let want: Vec<Option<Vec<u8>>> = batch.iter().map(|(_, value)| value.clone()).collect();
    let what = format!("a batch of {batch_len} keys");
    expect_values(read(&mut *c.client, &keys)?, &want, &what)?;
    c.still_usable()
}

/// Checks a multi-key read value by value, naming the first position that differs.
fn expect_values(got: Vec<Option<Vec<u8>>>, want: &[Option<Vec<u8>>], what: &str) -> Outcome {
    if got.len() != want.len() {
        return Err(Failure::Check(format!(
            "{what}: got {} values, want {}",
            got.len(),
            want.len()
        )));
    }
    let shown = |value: &Option<Vec<u8>>| match value {
        Some(bytes) => format!("{} bytes {:?}", bytes.len(), preview(bytes)),
        None => "a miss".into(),
    };
    match got.iter().zip(want).position(|(got, want)| got != want) {
        None => Ok(()),
        Some(i) => Err(Failure::Check(format!(
            "{what}: value {i} of {}: got {}, want {}",
            want.len(),
            shown(&got[i]),
            shown(&want[i])
        ))),
    }
}

/// Fields of the hash the client writes.
const HASH_FIELDS: usize = 100;

pub(crate) fn hash(c: &mut Case) -> Outcome {
    let key = c.key("hash");
    let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..HASH_FIELDS)
        .map(|i| (format!("field-{i}").into(), format!("value-{i}").into()))
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (&f[..], &v[..])).collect();
    c.client.hset_many(&key, &borrowed)?;
    // Fields have no order: compare them sorted.
    let sorted = |mut fields: Vec<(Vec<u8>, Vec<u8>)>| {
        fields.sort();
        fields
    };
    let want = sorted(fields);
    expect_fields(
        sorted(c.reference.hgetall(&key)?),
        &want,
        "reference hgetall",
    )?;
    expect_fields(sorted(c.client.hgetall(&key)?), &want, "client hgetall")?;

    // Written by the reference, with every byte in a field and an empty value.
    let by_reference = c.key("hash-by-reference");
    let binary: Vec<u8> = (0..=255u8).rev().collect();
    let written: [(&[u8], &[u8]); 2] = [(&binary, b"\r\n$3\r\nfoo\r\n\0"), (b"empty", b"")];
    c.reference.hset(&by_reference, &written)?;
    let want = sorted((written.iter().map(|(f, v)| (f.to_vec(), v.to_vec()))).collect());
    let got = sorted(c.client.hgetall(&by_reference)?);
    expect_fields(got, &want, "client hgetall of a hash the reference wrote")?;

    let missing = c.key("missing");
    expect_fields(c.client.hgetall(&missing)?, &[], "hgetall of a missing key")?;

    let string = c.key("a-string");
    c.reference.set(&string, b"v")?;
    let message = expect_server_error(c.client.hgetall(&string), "hgetall of a string")?;
    if !message.contains("WRONGTYPE") {
        return Err(format!("hgetall of a string: want WRONGTYPE, got {message:?}").into());
    }
    c.still_usable()
}

fn expect_fields(got: Vec<(Vec<u8>, Vec<u8>)>, want: &[(Vec<u8>, Vec<u8>)], what: &str) -> Outcome {
    if got == want {
        return Ok(());
    }
    let missing = want.iter().find(|field| !got.contains(field));
    let extra = got.iter().find(|field| !want.contains(field));
    let show = |field: Option<&(Vec<u8>, Vec<u8>)>| match field {
        Some((f, v)) => format!("{:?} = {:?}", preview(f), preview(v)),
        None => "none".into(),
    };
    Err(Failure::Check(format!(
        "{what}: got {} fields, want {}; first missing: {}; first unexpected: {}",
        got.len(),
        want.len(),
        show(missing),
        show(extra)
    )))
}

pub(crate) fn transaction(c: &mut Case) -> Outcome {
    let items: Vec<(Vec<u8>, Vec<u8>)> = (0..3)
        .map(|i| (c.key(&format!("item:{i}")), format!("value-{i}").into()))
        .collect();
    let borrowed: Vec<(&[u8], &[u8])> = items.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    c.client.transaction(&borrowed)?;
    for (key, value) in &items {
        expect_value(c.reference.get(key)?, value, "reference get")?;
    }
    atomic_to_a_reader(c)?;
    c.still_usable()
}

/// The value every key of round `round` gets: long, and different in every round.
fn round_value(round: usize) -> Vec<u8> {
    let mut value = format!("round-{round}:").into_bytes();
    value.resize(TRANSACTION_VALUE_LEN, b'.');
    value
}

/// Transactions of [`TRANSACTION_KEYS`] keys, one value for all of them per round, while a
/// reader on a connection of its own reads every key with one `MGET` (atomic itself) again and
/// again: it must never see keys of different rounds. Afterwards every key holds the last round's
/// value, and the server ran `EXEC` at least once per transaction.
fn atomic_to_a_reader(c: &mut Case) -> Outcome {
    let (keys, rounds) = match c.slow {
        false => (TRANSACTION_KEYS, TRANSACTION_ROUNDS),
        true => (SLOW_TRANSACTION_KEYS, SLOW_TRANSACTION_ROUNDS),
    };
    let keys: Vec<Vec<u8>> = (0..keys).map(|i| c.key(&format!("atomic:{i}"))).collect();
    let execs_before = c.reference.command_calls("exec")?;
    let done = AtomicBool::new(false);
    let mut reader = Reference::connect(Backend::Redis, &c.endpoint)?;
    let (written, read) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| watch_rounds(&mut reader, &keys, &done));
        let mut written = Ok(());
        for round in 0..rounds {
            let value = round_value(round);
            let items: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &value[..])).collect();
            if let Err(err) = c.client.transaction(&items) {
                written = Err(Failure::Check(format!(
                    "transaction {round}: {err} ({err:?})"
                )));
                break;
            }
        }
        done.store(true, Ordering::SeqCst);
        let read = (reader.join()).unwrap_or_else(|_| Err("the reader panicked".into()));
        (written, read)
    });
    written?;
    read?;
    let last = round_value(rounds - 1);
    let held = c.reference.get_many(&keys)?;
    let want = vec![Some(last); keys.len()];
    expect_values(held, &want, "reference MGET after the last transaction")?;
    let execs = c.reference.command_calls("exec")? - execs_before;
    // Other cases may run transactions on the same server at the same time: at least.
    if execs < rounds as u64 {
        return Err(format!(
            "{rounds} transactions, but the server ran EXEC {execs} times: the SETs were not \
             sent inside MULTI … EXEC"
        )
        .into());
    }
    Ok(())
}

/// The reader of [`atomic_to_a_reader`]: reads until `done` is set, then once more; fails on
/// the first read that sees keys of different rounds.
fn watch_rounds(reader: &mut Reference, keys: &[Vec<u8>], done: &AtomicBool) -> Result<(), String> {
    let mut reads = 0;
    loop {
        let finished = done.load(Ordering::SeqCst);
        let values = reader.get_many(keys)?;
        reads += 1;
        if let Some(i) = values.iter().position(|value| *value != values[0]) {
            let round = |value: &Option<Vec<u8>>| match value {
                Some(bytes) => preview(&bytes[..bytes.len().min(12)]),
                None => "missing".into(),
            };
            return Err(format!(
                "read {reads} saw part of a transaction: key 0 holds {}, key {i} holds {}",
                round(&values[0]),
                round(&values[i])
            ));
        }
        if finished {
            return Ok(());
        }
    }
}
