//! Deterministic costs of a hand-written client, asserted by counting, never by timing: a small
//! GET or SET is exactly one `write` and one `read` system call, a GET hit makes at most one
//! allocation (the value it returns) and a miss makes none. Each client's crate runs
//! [`assert_small_call_costs`] over its own connection type, handed a [`Counted`] socket.
//!
//! System calls are counted with [`Counted`], a socket wrapper that counts every `read` and
//! `write` the client makes on it: each is one system call on a blocking socket. Allocations are
//! counted by [`CountingAllocator`], which the test binary installs as its global allocator; it
//! keeps a per-thread count, so tests running in parallel do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kvbench_core::{Backend, Client, Endpoint, Options, Stream, Transport};

use crate::Servers;

/// A global allocator that counts the calling thread's allocations; install it with
/// `#[global_allocator]` in the test binary that calls [`assert_small_call_costs`].
pub struct CountingAllocator;

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

/// Allocations the calling thread has made so far (zero unless [`CountingAllocator`] is the
/// global allocator).
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// A shared socket that counts the `read` and `write` calls made on it: each is one system
/// call on a blocking socket. Shared (`Arc`) so the test can read the counts while the client
/// owns its handle; usable through `&` like `TcpStream`, as a client with a reader thread needs.
#[derive(Clone)]
pub struct Counted(Arc<CountedInner>);

struct CountedInner {
    socket: Stream,
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl Counted {
    /// Connects to `endpoint` as the hand-written clients do (`TCP_NODELAY`, the default
    /// timeouts), or panics.
    pub fn connect(endpoint: &Endpoint) -> Counted {
        let socket = Stream::connect(endpoint, &Options::default()).unwrap();
        Counted(Arc::new(CountedInner {
            socket,
            reads: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
        }))
    }

    /// `(reads, writes)` so far.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.0.reads.load(Ordering::Relaxed),
            self.0.writes.load(Ordering::Relaxed),
        )
    }

    /// Shuts down both directions of the socket.
    pub fn shutdown_both(&self) -> io::Result<()> {
        self.0.socket.shutdown(Shutdown::Both)
    }
}

impl Read for &Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.reads.fetch_add(1, Ordering::Relaxed);
        (&self.0.socket).read(buf)
    }
}

impl Write for &Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.writes.fetch_add(1, Ordering::Relaxed);
        (&self.0.socket).write(buf)
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

/// Calls measured per operation, after one warm-up call.
const OPS: usize = 200;

/// A client over a counted socket, and the socket's counts.
struct Probe {
    client: Box<dyn Client>,
    socket: Counted,
}

impl Probe {
    /// Runs `op` [`OPS`] times and returns (reads, writes, allocations) per op.
    fn measure(&mut self, mut op: impl FnMut(&mut dyn Client)) -> (f64, f64, f64) {
        op(self.client.as_mut()); // warm up: buffers reach their working size
        let (reads_before, writes_before) = self.socket.counts();
        let allocations_before = allocations();
        for _ in 0..OPS {
            op(self.client.as_mut());
        }
        let allocated = allocations() - allocations_before;
        let (reads, writes) = self.socket.counts();
        let per_op = |n: usize| n as f64 / OPS as f64;
        (
            per_op(reads - reads_before),
            per_op(writes - writes_before),
            per_op(allocated),
        )
    }
}

/// Asserts, over `backend` on `transport`, that a client built by `build` on a [`Counted`]
/// socket makes one `write` and one `read` per small GET hit, GET miss and SET, at most one
/// allocation per hit and none per miss or SET. Each check gets a fresh connection.
pub fn assert_small_call_costs<C: Client + 'static>(
    servers: &Servers,
    backend: Backend,
    transport: Transport,
    build: impl Fn(Counted) -> C,
) {
    let endpoint = servers
        .endpoint(backend, transport)
        .unwrap_or_else(|| panic!("no {backend} endpoint over {transport}"));
    let probe = || {
        let socket = Counted::connect(&endpoint);
        Probe {
            client: Box::new(build(socket.clone())),
            socket,
        }
    };
    let key = |name: &str| servers.key(backend, format!("costs:{transport}:{name}").as_bytes());
    let here = format!("{backend}/{transport}");

    let (hit, mut on_hit) = (key("hit"), probe());
    on_hit.client.set(&hit, b"bar").expect("set");
    let (reads, writes, allocations) = on_hit.measure(|client| {
        assert_eq!(client.get(&hit).expect("get").as_deref(), Some(&b"bar"[..]));
    });
    assert_eq!(
        (reads, writes),
        (1.0, 1.0),
        "{here}: reads, writes per GET hit"
    );
    assert!(
        allocations <= 1.0,
        "{here}: {allocations} allocations per GET hit, want <= 1"
    );
    println!("{here}: GET hit = {writes} write + {reads} read, {allocations} allocation");

    let (never_written, mut on_miss) = (key("never-written"), probe());
    let (reads, writes, allocations) = on_miss.measure(|client| {
        assert_eq!(client.get(&never_written).expect("get"), None);
    });
    assert_eq!(
        (reads, writes),
        (1.0, 1.0),
        "{here}: reads, writes per GET miss"
    );
    assert_eq!(allocations, 0.0, "{here}: allocations per GET miss");
    println!("{here}: GET miss = {writes} write + {reads} read, {allocations} allocations");

    let (set, mut on_set) = (key("set"), probe());
    let (reads, writes, allocations) = on_set.measure(|client| {
        client.set(&set, b"bar").expect("set");
    });
    assert_eq!((reads, writes), (1.0, 1.0), "{here}: reads, writes per SET");
    assert_eq!(allocations, 0.0, "{here}: allocations per SET");
    println!("{here}: SET = {writes} write + {reads} read, {allocations} allocations");
}
