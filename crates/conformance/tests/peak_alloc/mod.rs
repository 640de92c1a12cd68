//! A global allocator that tracks live and peak heap bytes per thread, and the largest single
//! request in the process. It forwards every call to the system allocator unchanged.
//!
//! Per thread, because test cases run on several threads at once and each must see only its own
//! client's allocations. Memory freed by another thread than the one that allocated it (rare in
//! these clients) stays counted on the allocating thread, so a peak may be overstated, never
//! understated: the safe direction for a limit.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct PeakAlloc;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

static LARGEST_REQUEST: AtomicUsize = AtomicUsize::new(0);

/// `bytes` more are live on this thread, after a request for `request` bytes.
fn grow(bytes: usize, request: usize) {
    // `try_with`: the thread-locals are const-initialised and have no destructor, but a thread
    // that is being torn down must still be able to allocate.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + bytes);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
    LARGEST_REQUEST.fetch_max(request, Ordering::Relaxed);
}

fn shrink(bytes: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(bytes)));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping touches only
// const-initialised thread-locals without destructors and atomics, none of which allocate.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size(), layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which we forward.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grow(layout.size(), layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            grow(new_size - layout.size(), new_size);
        } else {
            shrink(layout.size() - new_size);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Starts a new measurement on this thread: the peak becomes what is live now.
pub fn reset_thread_peak() -> usize {
    let live = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(live));
    live
}

/// The most this thread had live since [`reset_thread_peak`].
pub fn thread_peak() -> usize {
    PEAK.with(Cell::get)
}

/// Starts a new measurement of the largest request (process-wide: meant for a process that
/// runs one case).
pub fn reset_largest_request() {
    LARGEST_REQUEST.store(0, Ordering::Relaxed);
}

/// The largest single allocation request the process made since [`reset_largest_request`].
pub fn largest_request() -> usize {
    LARGEST_REQUEST.load(Ordering::Relaxed)
}

/// Bytes for people: `512.0 MiB`, `12.3 KiB`, `17 B`.
pub fn human(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
