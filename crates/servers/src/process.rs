//! Child processes and the machinery that guarantees they die with us.
//!
//! Four independent ways a server gets stopped, because each covers a hole in the others:
//!
//! 1. [`Group`]'s owner ([`Handle`]) stops and reaps every child on drop — also while a panic
//!    unwinds.
//! 2. A `ctrlc` handler (SIGINT, SIGTERM, SIGHUP) stops every registered group, removes their
//!    directories, runs the user's [`on_interrupt`](crate::on_interrupt) hooks and exits 130.
//!    Without it, Ctrl-C would kill us with the default action and no destructor would run.
//! 3. An `atexit` hook does the same for groups that were never dropped (a `Servers` in a
//!    `static`, or `mem::forget`): `exit()` runs no Rust destructors.
//! 4. `PR_SET_PDEATHSIG = SIGKILL`, set in the child between fork and exec, makes the kernel
//!    kill the server when we die in a way no code of ours sees (SIGKILL, abort, OOM killer).
//!    Pitfall: the signal fires when the *thread* that forked the child exits, not the process.
//!    A server spawned from a test thread would be killed when that test's thread ends, even if
//!    the `Servers` lives on in a `static`. So every spawn runs on one dedicated thread that
//!    lives as long as the process (see [`on_spawner_thread`]).
//!
//! Every child is in a group, every group is in the registry, and a child is only ever touched
//! with its group's lock held — so no path can signal a pid after another path reaped it (when
//! the pid may already belong to someone else).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a server gets to exit after SIGTERM before SIGKILL. Redis without persistence exits
/// in milliseconds; the grace only matters on a badly overloaded machine.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Exit status after Ctrl-C, as a shell reports a process killed by SIGINT (128 + 2).
const INTERRUPTED_EXIT_CODE: i32 = 130;

/// How to (re)start one server process.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cpu: Option<usize>,
    /// Where stdout and stderr go (and Redis's own `--logfile`).
    pub log: PathBuf,
    /// How it is told to stop: each server acts on a different signal without delay.
    pub stop: Stop,
}

/// How a process is told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// SIGTERM, and SIGKILL only if it has not exited after [`STOP_GRACE`]: the server shuts
    /// itself down (Redis closes its clients and logs why).
    Term,
    /// SIGKILL at once, for a server with nothing to finish. memcached 1.6 acts on SIGTERM only at
    /// its next one-second clock tick, so a polite stop costs about half a second on average; a
    /// run starts and stops a private memcached at every visit of a memcached cell.
    Kill,
}

struct Proc {
    spec: Spec,
    /// `None` once stopped and reaped.
    child: Option<Child>,
}

/// The processes of one `Servers` and the directory they live in.
struct Group {
    procs: Vec<Proc>,
    /// Removed (by drop) when the group is shut down.
    dir: Option<TempDir>,
    /// Set by shutdown; a closed group spawns nothing more.
    closed: bool,
}

impl Group {
    /// SIGTERM to everyone first, so the servers shut down in parallel, then reap each.
    fn shutdown(&mut self) {
        self.closed = true;
        for proc in &mut self.procs {
            if let Some(child) = &mut proc.child {
                terminate(child, proc.spec.stop);
            }
        }
        for proc in &mut self.procs {
            if let Some(mut child) = proc.child.take() {
                reap(&mut child);
            }
        }
        // TempDir's drop removes the directory; errors are ignored (nothing else to do on exit).
        self.dir = None;
    }
}

static REGISTRY: Mutex<BTreeMap<u64, Arc<Mutex<Group>>>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
type Hook = Box<dyn Fn() + Send + Sync>;
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// A poisoned lock only means another thread panicked while holding it; the data (pids, paths)
/// is still what we need to clean up, so cleanup must not give up because of it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Owner of one registered group; dropping it stops every process and removes the directory.
pub(crate) struct Handle {
    id: u64,
    group: Arc<Mutex<Group>>,
    dir: PathBuf,
}

impl Handle {
    /// Registers a new, empty group living in `dir`. Installs the signal and exit hooks first.
    pub fn new(dir: TempDir) -> Result<Handle, String> {
        install_cleanup()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let path = dir.path().to_path_buf();
        let group = Arc::new(Mutex::new(Group {
            procs: Vec::new(),
            dir: Some(dir),
            closed: false,
        }));
        lock(&REGISTRY).insert(id, Arc::clone(&group));
        Ok(Handle {
            id,
            group,
            dir: path,
        })
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Adds a process slot and starts it. Returns the slot number.
    pub fn add(&self, spec: Spec) -> io::Result<usize> {
        let slot = {
            let mut group = lock(&self.group);
            group.procs.push(Proc { spec, child: None });
            group.procs.len() - 1
        };
        self.start(slot)?;
        Ok(slot)
    }

    /// Starts the slot's process (it must be stopped). Returns its pid.
    pub fn start(&self, slot: usize) -> io::Result<u32> {
        let group = Arc::clone(&self.group);
        on_spawner_thread(move || -> io::Result<u32> {
            // The lock is held across the spawn so the signal handler either sees the new child
            // or finds the group closed — never a child it does not know about.
            let mut group = lock(&group);
            if group.closed {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "servers are shutting down",
                ));
            }
            let proc = &mut group.procs[slot];
            let child = spawn(&proc.spec)?;
            let pid = child.id();
            proc.child = Some(child);
            Ok(pid)
        })?
    }

    /// Stops (as its [`Stop`] says) and reaps the slot's process, if running; returns how it
    /// ended.
    pub fn stop(&self, slot: usize) -> Option<ExitStatus> {
        let mut group = lock(&self.group);
        let stop = group.procs[slot].spec.stop;
        let mut child = group.procs[slot].child.take()?;
        terminate(&mut child, stop);
        reap(&mut child)
    }

    /// Replaces the arguments used by the next [`start`](Handle::start).
    pub fn set_args(&self, slot: usize, args: Vec<String>) {
        lock(&self.group).procs[slot].spec.args = args;
    }

    /// `None` while the slot's process runs; otherwise why it does not.
    pub fn why_not_running(&self, slot: usize) -> Option<String> {
        let mut group = lock(&self.group);
        match &mut group.procs[slot].child {
            None => Some("stopped".into()),
            Some(child) => match child.try_wait() {
                Ok(None) => None,
                Ok(Some(status)) => Some(format!("exited early ({status})")),
                Err(err) => Some(format!("cannot check whether it runs: {err}")),
            },
        }
    }

    /// The slot's exit status once its process has exited by itself (a command run to its end,
    /// such as `redis-cli --cluster create`); `Ok(None)` while it runs.
    pub fn exit_status(&self, slot: usize) -> io::Result<Option<ExitStatus>> {
        match &mut lock(&self.group).procs[slot].child {
            None => Err(io::Error::other("stopped before it exited")),
            Some(child) => child.try_wait(),
        }
    }

    pub fn pid(&self, slot: usize) -> Option<u32> {
        lock(&self.group).procs[slot].child.as_ref().map(Child::id)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Unregister first so the signal handler does not wait on us; if it already took the
        // group, shutdown below finds it closed and empty.
        lock(&REGISTRY).remove(&self.id);
        lock(&self.group).shutdown();
    }
}

/// Spawns with stdin closed, output appended to the log, and the two pre-exec settings.
fn spawn(spec: &Spec) -> io::Result<Child> {
    // Append mode: Redis opens the same file for --logfile; O_APPEND keeps both writers whole.
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    die_with_parent(&mut command);
    let cpus = spec.cpu.map(cpu_set);
    // SAFETY: the closure runs between fork and exec and only makes an async-signal-safe syscall
    // (sched_setaffinity) on data prepared before the fork; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if let Some(set) = &cpus {
                // Affinity is inherited by every thread the server creates later.
                if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Arms `command` so that the kernel kills its process (SIGKILL) when the thread that spawns it
/// exits: when this process dies in any way, or that thread ends first (the pitfall in this
/// module's doc). The child keeps it across `exec` (`taskset` running a tool stays armed).
pub(crate) fn die_with_parent(command: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe syscalls
    // (prctl, getppid) on a value copied before the fork; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // If we died between fork and prctl, the death signal was never armed.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// A cpu set with just `cpu`. The caller has checked `cpu < CPU_SETSIZE`.
fn cpu_set(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu < CPU_SETSIZE` (it came from `allowed_cpus`), so the bit is inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set
}

/// The cpus the spawner thread may run on, which its children inherit and can be pinned within.
/// Asked of the spawner, not of the caller: a benchmark that pins its own thread to one CPU after
/// starting the servers must still be able to restart a server on another.
pub(crate) fn spawner_cpus() -> io::Result<Vec<usize>> {
    on_spawner_thread(allowed_cpus)?
}

/// The cpus the calling thread may run on.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: all-zero is a valid empty set; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size we pass.
    if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let cpus = 0..libc::CPU_SETSIZE as usize;
    // SAFETY: every cpu in the range is a bit inside `set`.
    Ok(cpus
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

fn terminate(child: &mut Child, stop: Stop) {
    let signal = match stop {
        Stop::Term => libc::SIGTERM,
        Stop::Kill => libc::SIGKILL,
    };
    if let Ok(None) = child.try_wait() {
        // SAFETY: kill(2) with a pid we have not reaped yet (so it is still ours).
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    }
}

/// Waits up to the grace for the child to exit, then SIGKILLs and reaps it; returns how it ended
/// (`None` if waiting for it failed).
fn reap(child: &mut Child) -> Option<ExitStatus> {
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Err(_) => return None,
            Ok(None) => thread::sleep(Duration::from_millis(5)),
        }
    }
    let _ = child.kill();
    child.wait().ok()
}

/// Runs `job` on the process-lifetime spawner thread and returns its result.
///
/// Why: PR_SET_PDEATHSIG fires when the forking *thread* exits. This thread never exits (it waits
/// on a channel whose sender lives in a static), so children die only when the process does.
fn on_spawner_thread<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
    type Job = Box<dyn FnOnce() + Send>;
    static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);
    let sender = {
        let mut spawner = lock(&SPAWNER);
        match &*spawner {
            Some(sender) => sender.clone(),
            None => {
                let (sender, receiver) = mpsc::channel::<Job>();
                thread::Builder::new()
                    .name("kvbench-spawner".into())
                    .spawn(move || {
                        for job in receiver {
                            job();
                        }
                    })?;
                spawner.insert(sender).clone()
            }
        }
    };
    let gone = || io::Error::other("the kvbench-spawner thread is gone");
    let (reply, result) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = reply.send(job());
    });
    sender.send(job).map_err(|_| gone())?;
    result.recv().map_err(|_| gone())
}

/// Stops every registered group and removes its directory.
fn stop_everything() {
    let groups = std::mem::take(&mut *lock(&REGISTRY));
    for group in groups.values() {
        lock(group).shutdown();
    }
}

/// Installs, once per process, the ctrlc handler and the atexit hook. The outcome of the first
/// attempt is remembered: a second `ctrlc::set_handler` would fail anyway.
pub(crate) fn install_cleanup() -> Result<(), String> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            // SAFETY: registers a plain extern "C" fn that never unwinds.
            if unsafe { libc::atexit(at_exit) } != 0 {
                return Err("atexit failed".into());
            }
            ctrlc::set_handler(on_signal).map_err(|err| {
                format!(
                    "{err} (another Ctrl-C handler is installed? register cleanup with \
                     kvbench_servers::on_interrupt instead)"
                )
            })
        })
        .clone()
}

pub(crate) fn add_hook(hook: Hook) -> Result<(), String> {
    install_cleanup()?;
    lock(&HOOKS).push(hook);
    Ok(())
}

/// Runs on ctrlc's own thread for SIGINT, SIGTERM and SIGHUP.
fn on_signal() {
    // Servers first: a hook that hangs or panics must not leave them running.
    stop_everything();
    let hooks = std::mem::take(&mut *lock(&HOOKS));
    for hook in &hooks {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook));
    }
    std::process::exit(INTERRUPTED_EXIT_CODE);
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit(): catch it and carry on exiting.
    let _ = std::panic::catch_unwind(stop_everything);
}
