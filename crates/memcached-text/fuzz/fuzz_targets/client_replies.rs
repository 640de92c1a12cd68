//! `TextClient` fed arbitrary server bytes through an in-memory stream: every call returns, none
//! panics, and once a call has broken the connection the next ones fail without writing.
#![no_main]

use std::io::{self, Read, Write};

use kvbench_core::Client;
use kvbench_memcached_text::TextClient;
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

fuzz_target!(|input: &[u8]| {
    let Some((&step, replies)) = input.split_first() else {
        return;
    };
    let mut client = TextClient::new(Script {
        replies,
        step: usize::from(step % 16) + 1,
        written: 0,
    });
    let items: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"k", b"22"), (b"c", b"")];
    let mut broken_at = None;
    for round in 0..5 {
        let result = match round {
            0 => client.get(b"k").map(drop),
            1 => client.set(b"k", b"v"),
            2 => client.set_many(&items),
            3 => client.delete(b"k").map(drop),
            _ => client.set_ex(b"k", b"v", 10),
        };
        let written = client.stream_mut().written;
        if let Some(before) = broken_at {
            assert!(result.is_err(), "a broken connection answered {result:?}");
            assert_eq!(written, before, "a broken connection wrote");
        } else if client.is_broken() {
            broken_at = Some(written);
        }
    }
});
