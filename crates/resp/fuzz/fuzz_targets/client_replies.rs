//! [`kvbench_resp::blocking::Connection`], the connection every blocking hand-written Redis
//! client is built on, fed arbitrary server bytes through an in-memory stream, a few bytes per
//! read (the first input byte picks how many): every call returns, none panics, and after an
//! error that breaks the connection the next call writes nothing.
#![no_main]

use kvbench_servers::script::{Script, after_a_break_nothing_is_sent};
use kvbench_resp::blocking::{Connection, MultiBulk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&step, replies)) = input.split_first() else {
        return;
    };
    let script = Script::new(replies, usize::from(step % 16) + 1);
    let mut connection = Connection::new(script, MultiBulk);
    after_a_break_nothing_is_sent(&mut connection, |c| c.stream().written);
});
