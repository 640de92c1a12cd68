//! Allocation counts against a real memcached: a small `get` hit allocates exactly once (the
//! returned value), a miss, a `set` and a `delete` not at all; and a small call is one `write` and
//! one `read`. A test binary of its own, because it replaces the global allocator.

mod common;

use kvbench_core::{Backend, Client, Transport};
use kvbench_memcached_text::TextConnection;
use kvbench_servers::costs::{CountingAllocator, allocations, assert_small_call_costs};

use common::{counted_client, endpoint, servers};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations_in<T>(op: impl FnOnce() -> T) -> (usize, T) {
    let before = allocations();
    let result = op();
    (allocations() - before, result)
}

#[test]
fn a_hit_allocates_once_and_a_miss_never() {
    let servers = servers();
    for &transport in Transport::ALL {
        let mut client = counted_client(&endpoint(&servers, transport));
        let value = vec![b'v'; 100];
        let (n, result) = allocations_in(|| client.set(b"key", &value));
        result.unwrap();
        assert_eq!(n, 0, "{transport}: allocations in set");
        let (n, hit) = allocations_in(|| client.get(b"key"));
        assert_eq!(hit.unwrap(), Some(value));
        assert_eq!(n, 1, "{transport}: allocations in a get hit");
        let (n, miss) = allocations_in(|| client.get(b"nope"));
        assert_eq!(miss.unwrap(), None);
        assert_eq!(n, 0, "{transport}: allocations in a get miss");
        let (n, deleted) = allocations_in(|| client.delete(b"key"));
        assert!(deleted.unwrap());
        assert_eq!(n, 0, "{transport}: allocations in a delete");
    }
}

/// A small GET or SET is also one `write` and one `read` ([`kvbench_servers::costs`]).
#[test]
fn small_calls_are_one_write_one_read() {
    let servers = servers();
    for &transport in Transport::ALL {
        assert_small_call_costs(&servers, Backend::Memcached, transport, TextConnection::new);
    }
}
