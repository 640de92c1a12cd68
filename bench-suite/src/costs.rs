//! Cost per operation, measured in a second pass after criterion's timing: CPU time, system
//! calls, allocations, and (for request/response cells) latency percentiles.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};

/// A global allocator that counts allocations and bytes while [`CountingAllocator::enable`] is
/// on, across every thread of the process (fred and tokio allocate on their own tasks).
///
/// Off, it costs one relaxed load per allocation, so criterion's timings are not burdened by
/// the counting.
pub struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

impl CountingAllocator {
    /// Starts or stops counting.
    pub fn enable(on: bool) {
        COUNTING.store(on, Ordering::SeqCst);
    }

    /// Stops counting, returning whether it was on (for [`CountingAllocator::enable`] to restore
    /// after work that is not the measured work, such as starting a caller's thread).
    pub fn pause() -> bool {
        COUNTING.swap(false, Ordering::SeqCst)
    }

    /// (allocations, bytes) so far.
    pub fn counts() -> (u64, u64) {
        (
            ALLOCATIONS.load(Ordering::SeqCst),
            ALLOCATED_BYTES.load(Ordering::SeqCst),
        )
    }

    fn note(bytes: usize) {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            ALLOCATED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only
// atomics and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), if the kernel has it.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim_start_matches(':')
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Resets the process's peak resident memory (`VmHWM`) to its current resident memory, and
/// returns that (Linux: writing 5 to `/proc/self/clear_refs`). `None` where it cannot.
pub fn reset_peak_rss() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_bytes("VmRSS")
}

/// The process's peak resident memory since the last [`reset_peak_rss`], in bytes.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM")
}

/// CPU time of the whole process (every thread), from `CLOCK_PROCESS_CPUTIME_ID`.
pub fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// User and system CPU time of the whole process (every thread) so far, from `getrusage`.
///
/// The split between the two is the kernel's: with tick-based accounting it samples which mode
/// each tick found the process in and divides the precise total in that proportion, so a cost
/// pass of a second (a few hundred ticks) gives it to within a few percent, a tenth of a second
/// (the quick run) more roughly.
pub fn user_and_system_time() -> (Duration, Duration) {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let time = |tv: libc::timeval| {
        Duration::new(tv.tv_sec.max(0) as u64, (tv.tv_usec.max(0) as u32) * 1_000)
    };
    (time(usage.ru_utime), time(usage.ru_stime))
}

/// The system calls that move bytes through a socket. Clients reach the same socket through
/// different calls (std reads a socket with `recv`, which is the `recvfrom` syscall, and writes
/// with `write`; fred writes with `writev`), so the whole family is counted.
const IO_SYSCALLS: &[&str] = &[
    "read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg",
];

const TRACEFS: &str = "/sys/kernel/tracing/events";

/// Counts system calls made by the calling thread and the threads it starts while counting
/// (perf tracepoint counters with `inherit`), through the kernel's tracepoints
/// `syscalls:sys_enter_*` and `raw_syscalls:sys_enter`.
///
/// Open one per measurement, right before it: `inherit` follows every thread started after
/// the counter is opened, and the counts of exited children survive a reset. Opened early, it
/// would also count the loopback floor's server thread and every earlier child process.
///
/// Needs tracefs at `/sys/kernel/tracing` and permission to open tracepoint counters (root, or
/// `perf_event_paranoid` <= -1); `bench-suite/setup.sh` mounts tracefs. Without them, syscall
/// counts are reported as missing, with the reason, and the run goes on.
pub struct SyscallCounter {
    io: Vec<Counter>,
    all: Counter,
}

fn tracepoint(name: &str) -> std::io::Result<Counter> {
    let id_file = format!("{TRACEFS}/{name}/id");
    let id: u64 = std::fs::read_to_string(&id_file)
        .map_err(|err| std::io::Error::new(err.kind(), format!("{id_file}: {err}")))?
        .trim()
        .parse()
        .map_err(|_| std::io::Error::other(format!("{id_file}: not a number")))?;
    Builder::new(Tracepoint::with_id(id))
        // `raw_syscalls:sys_enter` fires with the kernel's registers, not the caller's: excluding
        // kernel events (the builder's default) would drop every one of them and count zero.
        .exclude_kernel(false)
        .observe_self()
        .any_cpu()
        .inherit(true)
        .enabled(false)
        .build()
}

impl SyscallCounter {
    /// Opens the counters (disabled).
    pub fn open() -> Result<SyscallCounter, String> {
        let io = IO_SYSCALLS
            .iter()
            .map(|name| tracepoint(&format!("syscalls/sys_enter_{name}")))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|err| format!("syscall counters unavailable: {err}"))?;
        let all = tracepoint("raw_syscalls/sys_enter")
            .map_err(|err| format!("syscall counters unavailable: {err}"))?;
        Ok(SyscallCounter { io, all })
    }

    fn each(&mut self, f: impl Fn(&mut Counter) -> std::io::Result<()>) -> std::io::Result<()> {
        for counter in self.io.iter_mut().chain(std::iter::once(&mut self.all)) {
            f(counter)?;
        }
        Ok(())
    }

    /// Starts the counters.
    pub fn start(&mut self) -> std::io::Result<()> {
        self.each(|c| c.enable())
    }

    /// Stops the counters and returns (socket I/O syscalls, all syscalls).
    pub fn stop(&mut self) -> std::io::Result<(u64, u64)> {
        self.each(|c| c.disable())?;
        let mut io = 0;
        for counter in &mut self.io {
            io += counter.read()?;
        }
        Ok((io, self.all.read()?))
    }
}

/// Closing a tracepoint counter takes the kernel tens of milliseconds (seen here: ~40 ms per
/// counter, nine counters per pass), which would add a third of a second to every pair. Counters
/// are handed to this thread to close. It must exist before any counter is opened, so that no
/// counter's `inherit` follows it: [`start_closer`] starts it once, at the beginning of a run.
static CLOSER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<SyscallCounter>>> =
    std::sync::OnceLock::new();

/// Starts the thread that closes used syscall counters (see [`CLOSER`]). Without it, counters
/// are closed in place.
pub fn start_closer() {
    CLOSER.get_or_init(|| {
        let (sender, receiver) = std::sync::mpsc::channel::<SyscallCounter>();
        std::thread::Builder::new()
            .name("counter-closer".into())
            .spawn(move || receiver.into_iter().for_each(drop))
            .expect("spawn the counter-closing thread");
        std::sync::Mutex::new(sender)
    });
}

fn close(counter: SyscallCounter) {
    match CLOSER.get() {
        Some(sender) => {
            let sender = sender.lock().unwrap_or_else(|e| e.into_inner());
            // If the thread is gone, the counter comes back in the error and is dropped here.
            let _ = sender.send(counter);
        }
        None => drop(counter),
    }
}

/// What one cost pass measured, per operation (per command for pipelines).
#[derive(Debug, Clone, Default)]
pub struct Costs {
    /// Process CPU time per op, ns (all threads of the bench process; the server is not included).
    pub cpu_ns_per_op: Option<f64>,
    /// read/write/send/recv-family syscalls per op.
    pub syscalls_per_op: Option<f64>,
    /// All syscalls per op (epoll, futex, ... included).
    pub all_syscalls_per_op: Option<f64>,
    /// Allocations per op.
    pub allocs_per_op: Option<f64>,
    /// The user-space part of the CPU time per op (`getrusage`), ns.
    pub user_ns_per_op: Option<f64>,
    /// The kernel part of the CPU time per op (`getrusage`), ns.
    pub sys_ns_per_op: Option<f64>,
    /// Bytes allocated per op.
    pub alloc_bytes_per_op: Option<f64>,
    /// Bytes the client read per op: the server's output over the whole pass (both halves),
    /// from its own counters ([`crate::wire`]); set by the runner, which reads them.
    pub bytes_read_per_op: Option<f64>,
    /// Bytes the client wrote per op: the server's input, likewise.
    pub bytes_written_per_op: Option<f64>,
    /// Why the bytes on the wire are missing, when the runner wanted them and failed.
    pub wire_error: Option<String>,
    /// Latency percentiles of single operations, ns (request/response cells only).
    pub latency_ns: Option<[u64; 3]>,
    /// Operations measured.
    pub ops: u64,
    /// Wall time of all the calls together.
    pub elapsed: Duration,
}

/// Measures the costs of `run(n, each)` — which performs `n` calls, each covering
/// `ops_per_call` operations, reporting each call's duration to `each` — in two passes:
///
/// 1. a clean pass of `calls` calls, timed one by one: latency percentiles and CPU time (user
///    and system) come from here, with nothing else watching (none when `calls` is 0);
/// 2. a counting pass of `count_calls` calls with the syscall tracepoints (when `count_syscalls`
///    is set and they open) and the counting allocator on. Counting every system call costs the
///    kernel time on each one, so timing under it would inflate both the latency and the system
///    CPU time; the counts themselves are the same per operation in either pass.
pub fn measure(
    count_syscalls: bool,
    (calls, count_calls): (u64, u64),
    ops_per_call: u64,
    with_latency: bool,
    mut run: impl FnMut(u64, &mut dyn FnMut(Duration)) -> kvbench_core::Result<()>,
) -> kvbench_core::Result<Costs> {
    // 3 significant digits from 1 ns to 60 s: enough for 8 us round trips and 1 s pipelines.
    let mut histogram =
        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
    let cpu_before = process_cpu_time();
    let rusage_before = user_and_system_time();
    let mut elapsed_total = Duration::ZERO;
    run(calls, &mut |elapsed| {
        elapsed_total += elapsed;
        if with_latency {
            let _ = histogram.record(elapsed.as_nanos().max(1) as u64);
        }
    })?;
    let cpu = process_cpu_time() - cpu_before;
    let (user, system) = {
        let (user_after, system_after) = user_and_system_time();
        (
            user_after.saturating_sub(rusage_before.0),
            system_after.saturating_sub(rusage_before.1),
        )
    };

    let mut syscalls = if count_syscalls {
        SyscallCounter::open().ok()
    } else {
        None
    };
    if let Some(counter) = syscalls.as_mut() {
        counter.start().map_err(kvbench_core::Error::Io)?;
    }
    let (allocs_before, bytes_before) = CountingAllocator::counts();
    CountingAllocator::enable(true);
    let result = run(count_calls, &mut |_| {});
    CountingAllocator::enable(false);
    let (allocs_after, bytes_after) = CountingAllocator::counts();
    let counted = match syscalls {
        Some(mut counter) => {
            let counted = counter.stop().map_err(kvbench_core::Error::Io);
            close(counter);
            Some(counted?)
        }
        None => None,
    };
    result?;
    let counted_ops = (count_calls * ops_per_call).max(1) as f64;
    let per_counted_op = |n: f64| n / counted_ops;

    let ops = calls * ops_per_call;
    // No clean half (`calls` 0): no CPU time from this pass.
    let per_op = |n: f64| (ops > 0).then(|| n / ops as f64);
    Ok(Costs {
        cpu_ns_per_op: per_op(cpu.as_nanos() as f64),
        user_ns_per_op: per_op(user.as_nanos() as f64),
        sys_ns_per_op: per_op(system.as_nanos() as f64),
        syscalls_per_op: counted.map(|(io, _)| per_counted_op(io as f64)),
        all_syscalls_per_op: counted.map(|(_, all)| per_counted_op(all as f64)),
        allocs_per_op: Some(per_counted_op((allocs_after - allocs_before) as f64)),
        alloc_bytes_per_op: Some(per_counted_op((bytes_after - bytes_before) as f64)),
        bytes_read_per_op: None,
        bytes_written_per_op: None,
        wire_error: None,
        latency_ns: (with_latency && !histogram.is_empty()).then(|| {
            [
                histogram.value_at_quantile(0.5),
                histogram.value_at_quantile(0.99),
                histogram.value_at_quantile(0.999),
            ]
        }),
        ops,
        elapsed: elapsed_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every socket read or write is a system call: the count of all system calls can never be
    /// below the count of socket ones (where the counters open at all).
    #[test]
    fn all_syscalls_are_at_least_the_socket_ones() {
        let Ok(mut counter) = SyscallCounter::open() else {
            eprintln!("syscall counters unavailable here: nothing to check");
            return;
        };
        let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        counter.start().unwrap();
        for _ in 0..100 {
            std::io::Write::write_all(&mut a, b"x").unwrap();
            std::io::Read::read_exact(&mut b, &mut [0]).unwrap();
        }
        let (io, all) = counter.stop().unwrap();
        assert!(io >= 200, "socket syscalls {io}");
        assert!(all >= io, "all syscalls {all} < socket syscalls {io}");
    }
}
