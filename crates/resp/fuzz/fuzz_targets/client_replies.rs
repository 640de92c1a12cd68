//! The hand-written Redis clients' reply readers (`raw-tcp`'s, which `raw-unix` shares, and
//! `inline`'s) fed arbitrary server bytes through an in-memory stream: every call returns, none
//! panics, and after an error that breaks the connection the next call writes nothing.
#![no_main]

use std::io::{self, Read, Write};

use kvbench_core::Client;
use libfuzzer_sys::fuzz_target;

/// Replays the fuzzer's bytes as the server's replies, a few bytes per read (the first input
/// byte picks how many), and counts what the client writes.
struct Script<'a> {
    replies: &'a [u8],
    step: usize,
    written: usize,
}

impl Read for Script<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.replies.len());
        buf[..n].copy_from_slice(&self.replies[..n]);
        self.replies = &self.replies[n..];
        Ok(n)
    }
}

impl Write for Script<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A few calls of every kind; once a call breaks the connection, the rest must fail unsent.
fn exercise<C: Client>(client: &mut C, written: impl Fn(&C) -> usize) {
    let mut broken_at = None;
    for round in 0..4 {
        let result = match round {
            0 => client.get(b"k").map(drop),
            1 => client.set(b"k", b"v"),
            2 => client.delete(b"k").map(drop),
            _ => client.set_ex(b"k", b"v", 10),
        };
        if let Some(before) = broken_at {
            assert!(result.is_err(), "a broken connection answered {result:?}");
            assert_eq!(written(client), before, "a broken connection wrote");
        } else if let Err(err) = result
            && err.breaks_connection()
        {
            broken_at = Some(written(client));
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&step, replies)) = input.split_first() else {
        return;
    };
    let step = usize::from(step % 16) + 1;
    let script = || Script {
        replies,
        step,
        written: 0,
    };
    let mut raw =
        kvbench_raw_tcp::RawConnection::new(script(), kvbench_raw_tcp::WriteStrategy::PerCommand);
    exercise(&mut raw, |c| c.stream().written);
    let mut inline = kvbench_inline::InlineConnection::new(script());
    exercise(&mut inline, |c| c.stream().written);
});
