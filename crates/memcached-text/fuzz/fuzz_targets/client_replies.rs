//! `TextConnection` fed arbitrary server bytes through an in-memory stream, a few bytes per read (the
//! first input byte picks how many): every call returns, none panics, and once a call has broken
//! the connection the next ones fail without writing.
#![no_main]

use kvbench_servers::script::{Script, after_a_break_nothing_is_sent};
use kvbench_memcached_text::TextConnection;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&step, replies)) = input.split_first() else {
        return;
    };
    let mut client = TextConnection::new(Script::new(replies, usize::from(step % 16) + 1));
    after_a_break_nothing_is_sent(&mut client, |c| c.stream_mut().written);
});
