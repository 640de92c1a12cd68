//! [`kvbench_resp::blocking::Connection`], the connection every blocking hand-written Redis
//! client is built on, fed arbitrary server bytes through an in-memory stream, a few bytes per
//! read (the first input byte picks how many): every call returns, none panics, and after an
//! error that breaks the connection the next call writes nothing. Then the same bytes again, as
//! replies to the optional operations (INCR, MGET, HSET, HGETALL, a transaction) and to a
//! pipelined transaction, with the same checks.
#![no_main]

use kvbench_core::Client;
use kvbench_resp::blocking::{Connection, MultiBulk, read_transaction};
use kvbench_servers::script::{Script, after_a_break_nothing_is_sent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&step, replies)) = input.split_first() else {
        return;
    };
    let script = Script::new(replies, usize::from(step % 16) + 1);
    let mut connection = Connection::new(script.clone(), MultiBulk);
    after_a_break_nothing_is_sent(&mut connection, |c| c.stream().written);

    let mut connection = Connection::new(script, MultiBulk);
    let items: [(&[u8], &[u8]); 2] = [(b"a", b"1"), (b"b", b"")];
    let mut written_at_break = None;
    for round in 0..6 {
        let result = match round {
            0 => connection.incr(b"k").map(drop),
            1 => connection.get_many(&[b"a", b"b", b"a"]).map(drop),
            2 => connection.hset_many(b"h", &items),
            3 => connection.hgetall(b"h").map(drop),
            4 => connection.transaction(&items),
            _ => connection.pipeline(
                // What is written does not matter: the script answers what it answers.
                |write_buf| kvbench_resp::encode_command(write_buf, &[b"MULTI"]),
                |read_buf, stream| read_transaction(read_buf, stream, items.len()),
            ),
        };
        if let Some(before) = written_at_break {
            assert!(result.is_err(), "a broken connection answered {result:?}");
            assert_eq!(connection.stream().written, before, "a broken connection wrote");
        } else if connection.is_broken() {
            written_at_break = Some(connection.stream().written);
        }
    }
});
