//! Allocation counts against a real memcached: a small `get` hit allocates exactly once (the
//! returned value), a miss, a `set` and a `delete` not at all. A test binary of its own, because it
//! replaces the global allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use kvbench_core::{Client, Transport};

use common::{counted_client, endpoint, servers};

/// Counts allocations made by the current thread (tests run on several threads at once).
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: delegates every call to the system allocator unchanged; it only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations_in<T>(op: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATIONS.with(Cell::get);
    let result = op();
    (ALLOCATIONS.with(Cell::get) - before, result)
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
