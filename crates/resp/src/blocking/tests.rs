//! The blocking readers on replies played from memory ([`Script`]), cut into reads of every size
//! from one byte to all at once: each must give the same outcome whatever the cut, and one that
//! leaves the connection in step must have read exactly its replies.

use std::fmt::Debug;
use std::io;

use kvbench_servers::script::Script;
use proptest::prelude::*;

use super::*;
use crate::Reply;
use crate::tests::{any_reply, cases};
use kvbench_core::Error;

/// Reads `replies` with `read` at every read size from 1 byte to all of them; every size must
/// give the same outcome (compared as printed), returned. Unless that outcome breaks the
/// connection, every byte must have been consumed: the next reply would start right after.
fn at_every_split<'r, T: Debug>(
    replies: &'r [u8],
    read: impl Fn(&mut ReadBuffer, &mut Script<'r>) -> Result<T>,
) -> Result<T> {
    let mut outcome: Option<Result<T>> = None;
    for step in 1..=replies.len() {
        let mut read_buf = ReadBuffer::new(READ_BUF_LEN);
        let mut script = Script::new(replies, step);
        let got = read(&mut read_buf, &mut script);
        if !matches!(&got, Err(err) if err.breaks_connection()) {
            let unread = read_buf.pending().len() + script.replies.len();
            assert_eq!(unread, 0, "step {step}: {got:?} left bytes unread");
        }
        if let Some(first) = &outcome {
            assert_eq!(format!("{got:?}"), format!("{first:?}"), "step {step}");
        }
        outcome = Some(got);
    }
    outcome.expect("replies to read")
}

fn server_error<T: Debug>(outcome: Result<T>, want: &str) {
    assert!(
        matches!(&outcome, Err(Error::Server(msg)) if msg == want),
        "want Error::Server({want:?}), got {outcome:?}"
    );
}

fn protocol_error<T: Debug>(outcome: Result<T>) {
    assert!(
        matches!(outcome, Err(Error::Protocol(_))),
        "want Error::Protocol, got {outcome:?}"
    );
}

fn value(bytes: &[u8]) -> Option<Vec<u8>> {
    Some(bytes.to_vec())
}

// --- Status replies ----------------------------------------------------------------------------

#[test]
fn statuses_are_counted_and_error_replies_drained() {
    let read =
        |count| move |rb: &mut ReadBuffer, s: &mut Script<'_>| read_statuses(rb, s, count, "OK");
    assert!(at_every_split(b"+OK\r\n+OK\r\n+OK\r\n", read(3)).is_ok());
    let replies = b"+OK\r\n+OK\r\n-ERR one\r\n+OK\r\n-ERR two\r\n+OK\r\n";
    let outcome = at_every_split(replies, read(6));
    server_error(outcome, "2 of 6 commands failed; the first: ERR one");
    server_error(
        at_every_split(b"+OK\r\n-OOM no memory\r\n", read(2)),
        "OOM no memory",
    );
    let queued = |rb: &mut ReadBuffer, s: &mut Script<'_>| read_status(rb, s, "QUEUED");
    assert!(at_every_split(b"+QUEUED\r\n", queued).is_ok());
}

#[test]
fn a_status_other_than_the_one_wanted_is_a_protocol_error() {
    for bad in ["+QUEUED", "+OKAY", "+", ":1", "$-1", "*0", "!oops"] {
        let replies = format!("+OK\r\n{bad}\r\n+OK\r\n");
        let outcome = at_every_split(replies.as_bytes(), |rb, s| read_statuses(rb, s, 3, "OK"));
        protocol_error(outcome);
    }
}

#[test]
fn missing_replies_are_an_eof_error() {
    let outcome = at_every_split(b"+OK\r\n+OK", |rb, s| read_statuses(rb, s, 3, "OK"));
    assert!(
        matches!(&outcome, Err(Error::Io(err)) if err.kind() == io::ErrorKind::UnexpectedEof),
        "{outcome:?}"
    );
}

// --- MGET ------------------------------------------------------------------------------------

#[test]
fn mget_values_come_in_order_with_nils() {
    let replies = b"*5\r\n$1\r\na\r\n$-1\r\n$0\r\n\r\n$5\r\nx\r\n\r\n\r\n$1\r\na\r\n";
    let values = at_every_split(replies, |rb, s| read_values(rb, s, 5)).unwrap();
    let want = [
        value(b"a"),
        None,
        value(b""),
        value(b"x\r\n\r\n"),
        value(b"a"),
    ];
    assert_eq!(values, want);
    assert_eq!(
        at_every_split(b"*0\r\n", |rb, s| read_values(rb, s, 0)).unwrap(),
        []
    );
}

#[test]
fn an_mget_reply_of_another_shape_is_refused() {
    let read = |rb: &mut ReadBuffer, s: &mut Script<'_>| read_values(rb, s, 2);
    // Another count than the keys asked for, or no array: out of step.
    for bad in [
        &b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"[..],
        b"*-1\r\n",
        b"$1\r\na\r\n",
    ] {
        protocol_error(at_every_split(bad, read));
    }
    protocol_error(at_every_split(b"*2\r\n:1\r\n$1\r\nb\r\n", read));
    protocol_error(at_every_split(b"*2\r\n*0\r\n$1\r\nb\r\n", read));
    // An error reply, in place of the array or of an element, is read whole: still in step.
    server_error(at_every_split(b"-ERR no\r\n", read), "ERR no");
    server_error(
        at_every_split(b"*2\r\n-ERR no\r\n$1\r\nb\r\n", read),
        "ERR no",
    );
}

// --- HGETALL -----------------------------------------------------------------------------------

#[test]
fn hgetall_pairs_fields_with_values() {
    let replies = b"*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$4\r\nf\r\n2\r\n$0\r\n\r\n";
    let pairs = at_every_split(replies, read_pairs).unwrap();
    let want = [
        (b"f1".to_vec(), b"v1".to_vec()),
        (b"f\r\n2".to_vec(), Vec::new()),
    ];
    assert_eq!(pairs, want);
    assert_eq!(at_every_split(b"*0\r\n", read_pairs).unwrap(), []);
    let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    let outcome = at_every_split(wrongtype, read_pairs);
    server_error(
        outcome,
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
}

#[test]
fn a_hgetall_reply_of_another_shape_is_refused() {
    for bad in [
        &b"*1\r\n$1\r\nf\r\n"[..],
        b"*-1\r\n",
        b"*2\r\n$1\r\nf\r\n$-1\r\n",
        b":0\r\n",
    ] {
        protocol_error(at_every_split(bad, read_pairs));
    }
}

#[test]
fn a_huge_claimed_array_reserves_nothing_it_has_not_seen() {
    // 2^32 - 2 elements claimed, one sent: reserving room for the claim would abort the process
    // (or take 100 GiB). The read ends at the end of the stream instead.
    let replies = format!("*{}\r\n$1\r\nf\r\n", crate::MAX_ARRAY_LEN - 1);
    let outcome = at_every_split(replies.as_bytes(), read_pairs);
    assert!(matches!(outcome, Err(Error::Io(_))), "{outcome:?}");
}

// --- EXEC and whole transactions -------------------------------------------------------------

#[test]
fn exec_answers_one_ok_per_set() {
    let read = |rb: &mut ReadBuffer, s: &mut Script<'_>| read_exec(rb, s, 2);
    assert!(at_every_split(b"*2\r\n+OK\r\n+OK\r\n", read).is_ok());
    let aborted = "EXEC answered nil: the transaction was aborted";
    server_error(at_every_split(b"*-1\r\n", read), aborted);
    let execabort = "EXECABORT Transaction discarded because of previous errors.";
    server_error(
        at_every_split(format!("-{execabort}\r\n").as_bytes(), read),
        execabort,
    );
    server_error(
        at_every_split(b"*2\r\n-ERR late\r\n+OK\r\n", read),
        "ERR late",
    );
    for bad in [
        &b"*1\r\n+OK\r\n"[..],
        b"*3\r\n+OK\r\n+OK\r\n+OK\r\n",
        b"*2\r\n+OK\r\n:1\r\n",
    ] {
        protocol_error(at_every_split(bad, read));
    }
}

#[test]
fn a_pipelined_transaction_is_read_to_its_end() {
    let read = |rb: &mut ReadBuffer, s: &mut Script<'_>| read_transaction(rb, s, 2);
    let ok = b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n";
    assert!(at_every_split(ok, read).is_ok());
    // A SET refused while queued: reported once EXEC's -EXECABORT is read too.
    let refused = b"+OK\r\n-ERR wrong number of arguments\r\n+QUEUED\r\n-EXECABORT discarded\r\n";
    server_error(
        at_every_split(refused, read),
        "ERR wrong number of arguments",
    );
    // A refused MULTI: the SETs ran on their own, nothing after it is what was asked for.
    let multi_refused = b"-ERR MULTI calls can not be nested\r\n+OK\r\n+OK\r\n-ERR EXEC\r\n";
    protocol_error(at_every_split(multi_refused, read));
    protocol_error(at_every_split(
        b"+OK\r\n+OK\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n",
        read,
    ));
    let malformed_exec = b"+OK\r\n-ERR no\r\n+QUEUED\r\n*9\r\n";
    protocol_error(at_every_split(malformed_exec, read));
}

#[test]
fn a_set_refused_while_queued_is_discarded_on_a_round_trip_connection() {
    // MULTI, SET a (queued), SET b (refused): DISCARD follows, and SET c is never sent.
    let replies = b"+OK\r\n+QUEUED\r\n-OOM command not allowed\r\n+OK\r\n+OK\r\n";
    let mut connection = Connection::new(Script::new(replies, 3), MultiBulk);
    let items: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
    server_error(connection.transaction(&items), "OOM command not allowed");
    assert_eq!(connection.stream().writes, 4, "MULTI, two SETs, DISCARD");
    assert!(!connection.is_broken());
    connection.set(b"after", b"v").unwrap();
    assert!(connection.stream().replies.is_empty());
}

// --- Properties ------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2_000)))]

    #[test]
    fn mget_and_hgetall_replies_read_back_what_was_encoded(
        values in proptest::collection::vec(proptest::option::of(
            proptest::collection::vec(any::<u8>(), 0..40)), 0..12),
        step in 1..64usize,
    ) {
        let mut bytes = Vec::new();
        let reply = Reply::Array(Some(values.iter().cloned().map(Reply::Bulk).collect()));
        crate::encode_reply(&mut bytes, &reply);
        let mut read_buf = ReadBuffer::new(READ_BUF_LEN);
        let read = read_values(&mut read_buf, &mut Script::new(&bytes, step), values.len());
        prop_assert_eq!(read.ok(), Some(values.clone()));

        let flat: Option<Vec<Vec<u8>>> = values.into_iter().collect();
        if let Some(flat) = flat.filter(|flat| flat.len() % 2 == 0) {
            let pairs: Vec<_> = flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
            let mut read_buf = ReadBuffer::new(READ_BUF_LEN);
            let read = read_pairs(&mut read_buf, &mut Script::new(&bytes, step));
            prop_assert_eq!(read.ok(), Some(pairs));
        }
    }

    #[test]
    fn the_readers_never_panic_on_any_reply(
        reply in any_reply(3, 16),
        count in 0..4usize,
        step in 1..16usize,
    ) {
        let mut bytes = Vec::new();
        crate::encode_reply(&mut bytes, &reply);
        for which in 0..5 {
            let mut read_buf = ReadBuffer::new(READ_BUF_LEN);
            let stream = &mut Script::new(&bytes, step);
            let _ = match which {
                0 => read_values(&mut read_buf, stream, count).map(drop),
                1 => read_pairs(&mut read_buf, stream).map(drop),
                2 => read_exec(&mut read_buf, stream, count),
                3 => read_transaction(&mut read_buf, stream, count),
                _ => read_statuses(&mut read_buf, stream, count, "OK"),
            };
        }
    }
}
