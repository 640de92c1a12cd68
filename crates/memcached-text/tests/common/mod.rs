//! Shared by the integration test binaries: a private memcached (via `kvbench-servers`), raw
//! `stats`, and a stream wrapper that counts system calls.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::time::Duration;

use kvbench_core::{Backend, Endpoint, Options, Stream, Transport};
use kvbench_memcached_text::TextConnection;
use kvbench_servers::Servers;

/// Private servers for one test: nothing another test does can change what this one counts.
pub fn servers() -> Servers {
    Servers::start_private(&Default::default()).expect("start private servers")
}

pub fn endpoint(servers: &Servers, transport: Transport) -> Endpoint {
    servers
        .endpoint(Backend::Memcached, transport)
        .expect("memcached endpoint")
}

/// A raw connection to either transport, so one test body runs over both.
pub fn connect(endpoint: &Endpoint) -> Stream {
    Stream::connect(endpoint, &Options::with_timeout(Duration::from_secs(10))).unwrap()
}

/// Counts `read` and `write` calls: each is one system call on a socket.
pub struct Counting<S> {
    pub inner: S,
    pub reads: usize,
    pub writes: usize,
}

impl<S: Read> Read for Counting<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        self.inner.read(buf)
    }
}

impl<S: Write> Write for Counting<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writes += 1;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A client over a counted stream.
pub fn counted_client(endpoint: &Endpoint) -> TextConnection<Counting<Stream>> {
    TextConnection::new(Counting {
        inner: connect(endpoint),
        reads: 0,
        writes: 0,
    })
}

/// A client through the suite's entry point, with default options.
pub fn client(endpoint: &Endpoint) -> Box<dyn kvbench_core::Client> {
    kvbench_memcached_text::connect(endpoint, &Options::default()).expect("connect")
}

/// The server's `stats`, read on a separate raw connection (independent of the client under test).
pub fn stats(endpoint: &Endpoint) -> HashMap<String, String> {
    let mut stream = connect(endpoint);
    stream.write_all(b"stats\r\n").unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.ends_with(b"END\r\n") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "server closed the stats connection");
        reply.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(reply)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let mut fields = line.strip_prefix("STAT ")?.splitn(2, ' ');
            Some((fields.next()?.to_string(), fields.next()?.to_string()))
        })
        .collect()
}

/// One numeric `stats` field.
pub fn stat(endpoint: &Endpoint, name: &str) -> u64 {
    stats(endpoint)[name].parse().unwrap()
}
