//! Deterministic costs of the hand-written clients, asserted by counting, never by timing:
//! a small GET or SET is exactly one `write` and one `read` system call, a GET hit makes at most
//! one allocation (the value it returns) and a miss makes none.
//!
//! System calls are counted with `Counted`, a wrapper around the socket that counts every
//! `read` and `write` the client makes on it — each is one system call on a blocking socket.
//! Allocations are counted by a global allocator that keeps a per-thread count, so tests running
//! in parallel do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use kvbench_core::{Backend, Client, Endpoint, Transport};
use kvbench_servers::{Servers, StartOptions};

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counter is a
// const-initialised thread-local `Cell` without a destructor, so touching it never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we forward.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// A blocking socket of either transport.
enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A shared socket that counts the `read` and `write` calls made on it: each is one system
/// call on a blocking socket. Shared (`Arc`) so the test can read the counts while the client
/// owns its handle; usable through `&` like `TcpStream`, which `buffered` requires.
#[derive(Clone)]
struct Counted(Arc<CountedInner>);

struct CountedInner {
    socket: Socket,
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl Counted {
    fn new(socket: Socket) -> Self {
        Counted(Arc::new(CountedInner {
            socket,
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        }))
    }

    fn counts(&self) -> (usize, usize) {
        (
            self.0.reads.load(Ordering::Relaxed),
            self.0.writes.load(Ordering::Relaxed),
        )
    }
}

impl Read for &Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.reads.fetch_add(1, Ordering::Relaxed);
        match &self.0.socket {
            Socket::Tcp(stream) => (&*stream).read(buf),
            Socket::Unix(stream) => (&*stream).read(buf),
        }
    }
}

impl Write for &Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.writes.fetch_add(1, Ordering::Relaxed);
        match &self.0.socket {
            Socket::Tcp(stream) => (&*stream).write(buf),
            Socket::Unix(stream) => (&*stream).write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl kvbench_buffered::Duplex for Counted {
    fn shutdown_both(&self) -> io::Result<()> {
        match &self.0.socket {
            Socket::Tcp(stream) => stream.shutdown(std::net::Shutdown::Both),
            Socket::Unix(stream) => stream.shutdown(std::net::Shutdown::Both),
        }
    }
}

/// A client over a counted socket, and the socket's counts.
struct Probe {
    client: Box<dyn Client>,
    socket: Counted,
}

fn probe<C: Client + 'static>(socket: Socket, build: impl FnOnce(Counted) -> C) -> Probe {
    let socket = Counted::new(socket);
    Probe {
        client: Box::new(build(socket.clone())),
        socket,
    }
}

fn servers() -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(|| Servers::start(&StartOptions::default()).expect("start servers"))
}

fn tcp(backend: Backend) -> Socket {
    let Some(Endpoint::Tcp(addr)) = servers().endpoint(backend, Transport::Tcp) else {
        panic!("no {backend} TCP endpoint");
    };
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    Socket::Tcp(stream)
}

fn unix(backend: Backend) -> Socket {
    let Some(Endpoint::Unix(path)) = servers().endpoint(backend, Transport::Unix) else {
        panic!("no {backend} Unix endpoint");
    };
    Socket::Unix(UnixStream::connect(path).expect("connect"))
}

/// Every hand-written client, on every transport, over a counted socket.
fn hand_written() -> Vec<(&'static str, Backend, Probe)> {
    use kvbench_inline::{Inline, InlineConnection};
    use kvbench_raw_tcp::{RawConnection, WriteStrategy::PerCommand};
    let redis = Backend::Redis;
    let memcached = Backend::Memcached;
    vec![
        (
            "raw-tcp",
            redis,
            probe(tcp(redis), |s| RawConnection::new(s, PerCommand)),
        ),
        (
            "raw-unix",
            redis,
            probe(unix(redis), |s| RawConnection::new(s, PerCommand)),
        ),
        (
            "buffered/tcp",
            redis,
            probe(tcp(redis), |s: Counted| {
                kvbench_buffered::BufferedConnection::new(s)
            }),
        ),
        (
            "buffered/unix",
            redis,
            probe(unix(redis), |s: Counted| {
                kvbench_buffered::BufferedConnection::new(s)
            }),
        ),
        (
            "inline/tcp",
            redis,
            probe(tcp(redis), |s| InlineConnection::new(s, Inline)),
        ),
        (
            "inline/unix",
            redis,
            probe(unix(redis), |s| InlineConnection::new(s, Inline)),
        ),
        (
            "memcached-text/tcp",
            memcached,
            probe(tcp(memcached), kvbench_memcached_text::TextClient::new),
        ),
        (
            "memcached-text/unix",
            memcached,
            probe(unix(memcached), kvbench_memcached_text::TextClient::new),
        ),
    ]
}

const OPS: usize = 200;

/// Runs `op` OPS times and returns (reads, writes, allocations) per op.
fn measure(probe: &mut Probe, mut op: impl FnMut(&mut dyn Client)) -> (f64, f64, f64) {
    op(probe.client.as_mut()); // warm up: buffers reach their working size
    let (reads_before, writes_before) = probe.socket.counts();
    let allocations_before = allocations();
    for _ in 0..OPS {
        op(probe.client.as_mut());
    }
    let allocated = allocations() - allocations_before;
    let (reads, writes) = probe.socket.counts();
    let per_op = |n: usize| n as f64 / OPS as f64;
    (
        per_op(reads - reads_before),
        per_op(writes - writes_before),
        per_op(allocated),
    )
}

fn key(backend: Backend, name: &str) -> Vec<u8> {
    servers().key(backend, format!("costs:{name}").as_bytes())
}

#[test]
fn small_get_hit_is_one_write_one_read_one_allocation() {
    for (name, backend, mut probe) in hand_written() {
        let key = key(backend, &format!("{name}:hit"));
        probe.client.set(&key, b"bar").expect("set");
        let (reads, writes, allocations) = measure(&mut probe, |client| {
            assert_eq!(client.get(&key).expect("get").as_deref(), Some(&b"bar"[..]));
        });
        assert_eq!(
            (reads, writes),
            (1.0, 1.0),
            "{name}: reads, writes per GET hit"
        );
        assert!(
            allocations <= 1.0,
            "{name}: {allocations} allocations per GET hit, want <= 1"
        );
        println!("{name}: GET hit = {writes} write + {reads} read, {allocations} allocation");
    }
}

#[test]
fn get_miss_is_one_write_one_read_no_allocation() {
    for (name, backend, mut probe) in hand_written() {
        let key = key(backend, &format!("{name}:never-written"));
        let (reads, writes, allocations) = measure(&mut probe, |client| {
            assert_eq!(client.get(&key).expect("get"), None);
        });
        assert_eq!(
            (reads, writes),
            (1.0, 1.0),
            "{name}: reads, writes per GET miss"
        );
        assert_eq!(allocations, 0.0, "{name}: allocations per GET miss");
        println!("{name}: GET miss = {writes} write + {reads} read, {allocations} allocations");
    }
}

#[test]
fn small_set_is_one_write_one_read() {
    for (name, backend, mut probe) in hand_written() {
        let key = key(backend, &format!("{name}:set"));
        let (reads, writes, allocations) = measure(&mut probe, |client| {
            client.set(&key, b"bar").expect("set");
        });
        assert_eq!((reads, writes), (1.0, 1.0), "{name}: reads, writes per SET");
        assert_eq!(allocations, 0.0, "{name}: allocations per SET");
        println!("{name}: SET = {writes} write + {reads} read, {allocations} allocations");
    }
}
