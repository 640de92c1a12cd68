//! Private `redis-server` and `memcached` processes for tests and benchmarks — and the guarantee
//! that none of them outlives the run.
//!
//! [`Servers::start`] gives every test and benchmark the same thing: a Redis and a memcached that
//! answer on TCP (`127.0.0.1`, a free port) and on a Unix socket, their versions and exact
//! command lines for the report, and a key prefix that keeps the suite's keys apart from anyone
//! else's. The harness, not each test, owns this setup (see the sibling `kvbench-conformance`).
//!
//! [`Cluster::start`] does the same for a Redis Cluster of three primaries, each with its own
//! port, socket and folder, joined by `redis-cli --cluster create` (or the external cluster that
//! `REDIS_CLUSTER_URL` names), for the cluster clients: see [`cluster`].
//!
//! Two servers that are not processes serve the clients' own tests: [`script`] plays replies
//! from bytes in memory (for unit tests and fuzz targets), [`silent`] accepts connections and never
//! answers (for timeouts).
//! [`costs`] counts a hand-written client's system calls and allocations per call over a real
//! server, for the exact costs each client's own tests assert, and [`AcceptedConnections`] the
//! connections a shared client opens.
//!
//! # Private or external
//!
//! By default both servers are private: children of this process, not daemonized, in a fresh
//! directory with mode 0700 that holds their sockets and logs. Setting `REDIS_URL` or
//! `MEMCACHED_URL` makes that backend *external* (the other one stays private); see
//! [`External::parse`] for the accepted forms.
//!
//! # Key safety on external servers
//!
//! An external server may hold someone else's data. So on an external server every key the suite
//! writes goes through [`Servers::key`], which prepends a per-run prefix
//! (`kvbench:<pid>-<unix-nanos>:`), and **nothing is ever flushed**: this crate never sends
//! FLUSHALL, FLUSHDB or `flush_all`, and neither may anything built on it. On a private server the
//! prefix is empty (the server is thrown away with everything in it).
//!
//! # No orphans, ever
//!
//! A server is stopped (SIGTERM, then SIGKILL after a short grace) and reaped, and the directory
//! removed, when the [`Servers`] is dropped — also while a panic unwinds; on SIGINT, SIGTERM or
//! SIGHUP (a `ctrlc` handler, which then runs the [`on_interrupt`] hooks and exits with status
//! 130); on `exit()` without a drop (an `atexit` hook); and, when the process dies in a way no code
//! sees (SIGKILL, abort), by the kernel (`PR_SET_PDEATHSIG`). That last one has a pitfall: it fires
//! when the *thread* that spawned the child exits. This crate therefore spawns every server from
//! one internal thread that lives as long as the process, so a `Servers` may be created on any
//! thread (a test thread, a `OnceLock` initializer) and shared. Only in the SIGKILL case is the
//! directory left behind (in `$TMPDIR`, named `kvbench-servers-*`).
//!
//! The `ctrlc` handler is process-wide and there can be only one: a program using this crate
//! registers its own clean-up with [`on_interrupt`] instead of calling `ctrlc::set_handler`.
//!
//! # What it gives up
//!
//! Linux only (`prctl`, `sched_setaffinity`, `/proc`). It starts servers with fixed settings
//! (no persistence, `-m 256 -I 2m` for memcached); anything else belongs in docker/.

#![deny(missing_docs)]

pub mod cluster;
pub mod costs;
mod probe;
mod process;
pub mod script;
pub mod silent;
mod url;

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use cluster::{Cluster, ClusterNode, ExternalCluster};
pub use kvbench_core::{Backend, Endpoint, Transport};
pub use probe::{AcceptedConnections, Reply};

use process::{Handle, Spec, Stop};

/// Environment variable: URL of an external Redis (makes Redis external).
pub const REDIS_URL_VAR: &str = "REDIS_URL";
/// Environment variable: URL of an external memcached (makes memcached external).
pub const MEMCACHED_URL_VAR: &str = "MEMCACHED_URL";
/// Environment variable: path of the `redis-server` binary (default: found on `PATH`).
pub const REDIS_SERVER_BIN_VAR: &str = "REDIS_SERVER_BIN";
/// Environment variable: path of the `memcached` binary (default: found on `PATH`).
pub const MEMCACHED_BIN_VAR: &str = "MEMCACHED_BIN";

/// How many fresh ports to try when another process takes the one we picked before our server
/// could bind it (we find a port by binding port 0 and closing it, which leaves a small race).
const PORT_ATTEMPTS: u32 = 5;

/// Longest time one readiness probe may take; the overall limit is the startup timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How often a starting server is asked whether it is up.
const PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// How much of a failed server's log an error carries.
const LOG_TAIL_BYTES: u64 = 2048;

/// `sun_path` holds 108 bytes including the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Everything that can go wrong starting, checking or stopping servers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server binary for a private backend was not found.
    #[error(
        "{program} not found ({reason}). Install it: `apt-get install redis-server memcached` \
         (as root), or run the servers from docker/ (see docker/README.md) and set REDIS_URL / \
         MEMCACHED_URL."
    )]
    MissingBinary {
        /// `redis-server` or `memcached`.
        program: &'static str,
        /// Where we looked, for example `REDIS_SERVER_BIN=/nonexistent does not exist`.
        reason: String,
    },
    /// The operating system refused to start the server process.
    #[error("cannot start {backend} ({}): {source}", program.display())]
    Spawn {
        /// Which server.
        backend: Backend,
        /// The binary we tried to run.
        program: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// A private server exited early or did not answer within the startup timeout.
    #[error("{backend} did not become ready: {reason}\n--- end of its log ---\n{log_tail}")]
    NotReady {
        /// Which server.
        backend: Backend,
        /// Exited early, answered as someone else's process, or no answer in time.
        reason: String,
        /// The server's log file. Already removed when a failed start returns this error (the
        /// private directory goes with it): `log_tail` is the copy that survives.
        log: PathBuf,
        /// The last lines the server wrote there.
        log_tail: String,
    },
    /// `REDIS_URL` / `MEMCACHED_URL` (or an [`External::parse`] argument) is not usable.
    #[error("bad {backend} URL {url:?}: {reason}")]
    BadUrl {
        /// The backend the URL was meant for.
        backend: Backend,
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An external server did not answer.
    #[error("external {backend} at {endpoint} does not answer: {reason}")]
    Unreachable {
        /// Which server.
        backend: Backend,
        /// Where we tried.
        endpoint: Endpoint,
        /// What went wrong (connection refused, an error reply such as NOAUTH, a timeout).
        reason: String,
    },
    /// The CPU a server should be pinned to is not one this process may use.
    #[error("cannot pin {backend} to cpu {cpu}: this process may only use cpus {allowed}")]
    BadCpu {
        /// Which server.
        backend: Backend,
        /// The CPU asked for.
        cpu: usize,
        /// The CPUs available, for example `0,1`.
        allowed: String,
    },
    /// Stop or restart was asked of a server this crate did not start.
    #[error("{0} is external: kvbench never stops or restarts a server it did not start")]
    NotPrivate(Backend),
    /// The process-wide Ctrl-C handler could not be installed.
    #[error("cannot install the Ctrl-C clean-up handler: {0}")]
    SignalHandler(String),
    /// Any other I/O failure (creating the private directory, finding a free port).
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// What the operating system said.
        source: io::Error,
    },
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Settings for starting private servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartOptions {
    /// Pin the private Redis (all its threads) to this CPU.
    pub redis_cpu: Option<usize>,
    /// Pin both private memcached processes (all their threads) to this CPU.
    pub memcached_cpu: Option<usize>,
    /// How long each server (private or external) may take to answer.
    pub startup_timeout: Duration,
    /// Client connections each private server must accept at once: memcached's `-c` (its
    /// default, 1,024, when lower) and Redis's `--maxclients` (its default, 10,000, when lower).
    /// Each server raises its own open-file limit to fit, up to the hard limit it inherits.
    pub max_connections: usize,
}

impl StartOptions {
    /// Default startup timeout: Redis and memcached start in milliseconds, but a loaded 2-core
    /// machine running other test binaries can stall a start for seconds, and a private
    /// cluster's join (`redis-cli --cluster create` waiting for the nodes' gossip) was seen to
    /// take more than 10 s there, in the conformance kit of a `make test`.
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            redis_cpu: None,
            memcached_cpu: None,
            startup_timeout: Self::DEFAULT_STARTUP_TIMEOUT,
            max_connections: 1024,
        }
    }
}

/// A server someone else runs: the suite connects to it, namespaces its keys, and never stops,
/// restarts or flushes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct External {
    url: String,
    endpoint: Endpoint,
}

impl External {
    /// Parses a URL.
    ///
    /// Redis: `redis://host[:port][/0]`, `redis+unix:///path`, `unix:///path`.
    /// memcached: `memcache://host[:port]`, `tcp://host[:port]`, `memcache:///path`,
    /// `unix:///path`. Default ports are 6379 and 11211; IPv6 hosts go in brackets.
    ///
    /// Refused, with a reason: credentials, query options, and a Redis database other than 0
    /// (clients connect by [`Endpoint`], which has no database; keys are prefixed instead).
    pub fn parse(backend: Backend, url: &str) -> Result<External> {
        match url::parse(backend, url) {
            Ok(endpoint) => Ok(External {
                url: url.to_string(),
                endpoint,
            }),
            Err(reason) => Err(Error::BadUrl {
                backend,
                url: url.to_string(),
                reason,
            }),
        }
    }

    /// An external server at a known endpoint (for example a private server of another
    /// [`Servers`], to test external-mode behaviour).
    pub fn new(endpoint: Endpoint) -> External {
        External {
            url: endpoint.to_string(),
            endpoint,
        }
    }

    /// The URL as given (or the endpoint's URL form for [`External::new`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// What the suite knows about one backend, for reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// Which server.
    pub backend: Backend,
    /// Redis: `redis_version` of `INFO server`; memcached: the `VERSION` reply.
    pub version: String,
    /// True if the server was given by URL, not started here.
    pub external: bool,
    /// The URL of an external server.
    pub url: Option<String>,
    /// Every endpoint it answers on, TCP first.
    pub endpoints: Vec<Endpoint>,
    /// The processes started for it (empty for an external server). Memcached has two: it
    /// cannot serve TCP and a Unix socket from one process.
    pub processes: Vec<ProcessInfo>,
}

impl ServerInfo {
    /// The pids of its processes (current ones: a restart changes them).
    pub fn pids(&self) -> Vec<u32> {
        self.processes.iter().map(|process| process.pid).collect()
    }
}

/// One private server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid (of the latest start: [`Servers::restart`] updates it).
    pub pid: u32,
    /// The binary.
    pub program: PathBuf,
    /// The arguments it was started with.
    pub args: Vec<String>,
    /// The endpoints this process serves.
    pub endpoints: Vec<Endpoint>,
    /// The CPU it is pinned to, if any.
    pub cpu: Option<usize>,
    /// Its log file (stdout and stderr too), inside the private directory.
    pub log: PathBuf,
    /// Index in the process group.
    slot: usize,
}

impl ProcessInfo {
    /// The command line, quoted so it can be pasted into a shell.
    pub fn command_line(&self) -> String {
        let mut words = vec![shell_quote(&self.program.to_string_lossy())];
        words.extend(self.args.iter().map(|arg| shell_quote(arg)));
        words.join(" ")
    }
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A Redis and a memcached, private or external. Dropping it stops and reaps every private
/// process and removes the private directory.
pub struct Servers {
    redis: ServerInfo,
    memcached: ServerInfo,
    /// Prefix for keys on external servers.
    run_prefix: String,
    startup_timeout: Duration,
    /// Owns the private processes and directory; `None` if both servers are external.
    handle: Option<Handle>,
    /// The Redis Cluster, once [`start_cluster`](Servers::start_cluster) has started it, and
    /// the options it was started with (a restart starts a new one with them).
    cluster: Option<(Cluster, StartOptions)>,
    /// What [`info`](Servers::info) says of a cluster not started: no endpoint.
    no_cluster: ServerInfo,
}

impl fmt::Debug for Servers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Servers")
            .field("redis", &self.redis)
            .field("memcached", &self.memcached)
            .field("run_prefix", &self.run_prefix)
            .field("dir", &self.dir())
            .finish()
    }
}

impl Servers {
    /// Starts the servers the environment asks for: a backend whose `REDIS_URL` /
    /// `MEMCACHED_URL` is set (and not empty) is external, the other is started privately.
    pub fn start(options: &StartOptions) -> Result<Servers> {
        Self::start_with_env(options, &|name| std::env::var_os(name))
    }

    /// Starts both servers privately, whatever the environment says about URLs.
    pub fn start_private(options: &StartOptions) -> Result<Servers> {
        Self::start_with(None, None, options)
    }

    /// Uses the given external servers and starts the others (`None`) privately.
    pub fn start_with(
        redis: Option<External>,
        memcached: Option<External>,
        options: &StartOptions,
    ) -> Result<Servers> {
        start(redis, memcached, options, &|name| std::env::var_os(name))
    }

    /// Like [`start`](Servers::start), but reads `REDIS_URL`, `MEMCACHED_URL`,
    /// `REDIS_SERVER_BIN`, `MEMCACHED_BIN` and `PATH` through `env` instead of the process
    /// environment (tests cannot safely change the environment of a multithreaded process).
    pub fn start_with_env(
        options: &StartOptions,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Servers> {
        let redis = external_from_env(Backend::Redis, REDIS_URL_VAR, env)?;
        let memcached = external_from_env(Backend::Memcached, MEMCACHED_URL_VAR, env)?;
        start(redis, memcached, options, env)
    }

    /// Versions, command lines, pids and endpoints of one backend.
    pub fn info(&self, backend: Backend) -> &ServerInfo {
        match backend {
            Backend::Redis => &self.redis,
            Backend::Memcached => &self.memcached,
            Backend::RedisCluster => match &self.cluster {
                Some((cluster, _)) => cluster.info(),
                None => &self.no_cluster,
            },
        }
    }

    /// Starts the Redis Cluster next to the other servers (or uses `REDIS_CLUSTER_URL`'s), with
    /// the same options, for the [`Backend::RedisCluster`] clients; until then that backend has
    /// no endpoint. Three more processes and about a second: only the runs that need it pay.
    pub fn start_cluster(&mut self, options: &StartOptions) -> Result<()> {
        if self.cluster.is_none() {
            self.cluster = Some((Cluster::start(options)?, options.clone()));
        }
        Ok(())
    }

    /// The Redis Cluster, if started.
    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref().map(|(cluster, _)| cluster)
    }

    /// Where to reach `backend` over `transport`; `None` if it does not listen there (an
    /// external server offers only the transport of its URL).
    pub fn endpoint(&self, backend: Backend, transport: Transport) -> Option<Endpoint> {
        let info = self.info(backend);
        info.endpoints
            .iter()
            .find(|endpoint| endpoint.transport() == transport)
            .cloned()
    }

    /// The transports `backend` can be reached over, TCP first.
    pub fn transports(&self, backend: Backend) -> Vec<Transport> {
        self.info(backend)
            .endpoints
            .iter()
            .map(Endpoint::transport)
            .collect()
    }

    /// True if `backend` was given by URL rather than started here.
    pub fn is_external(&self, backend: Backend) -> bool {
        self.info(backend).external
    }

    /// The prefix every key on `backend` must carry: empty for a private server,
    /// `kvbench:<pid>-<unix-nanos>:` for an external one. See the crate docs on key safety.
    pub fn key_prefix(&self, backend: Backend) -> &str {
        if let (Backend::RedisCluster, Some(cluster)) = (backend, self.cluster()) {
            cluster.key_prefix()
        } else if self.is_external(backend) {
            &self.run_prefix
        } else {
            ""
        }
    }

    /// `key` with [`key_prefix`](Servers::key_prefix) in front. (The prefix is about 35 bytes
    /// long; memcached keys are limited to 250 bytes in all.)
    pub fn key(&self, backend: Backend, key: &[u8]) -> Vec<u8> {
        let prefix = self.key_prefix(backend).as_bytes();
        let mut full = Vec::with_capacity(prefix.len() + key.len());
        full.extend_from_slice(prefix);
        full.extend_from_slice(key);
        full
    }

    /// The private directory holding sockets and logs; `None` if both servers are external.
    pub fn dir(&self) -> Option<&Path> {
        self.handle.as_ref().map(Handle::dir)
    }

    fn private(&self, backend: Backend) -> Result<&Handle> {
        match &self.handle {
            Some(handle) if !self.is_external(backend) => Ok(handle),
            _ => Err(Error::NotPrivate(backend)),
        }
    }

    /// Stops a private server's processes (for fault tests); [`restart`](Servers::restart)
    /// brings them back.
    pub fn stop(&mut self, backend: Backend) -> Result<()> {
        if let (Backend::RedisCluster, Some((cluster, _))) = (backend, &mut self.cluster) {
            return (0..cluster.nodes().len()).try_for_each(|node| cluster.stop_node(node));
        }
        let handle = self.private(backend)?;
        for process in &self.info(backend).processes {
            handle.stop(process.slot);
        }
        Ok(())
    }

    /// Stops (if running) and starts again a private server's processes, with the same
    /// arguments, port and socket path, and waits until they answer. The pids change.
    ///
    /// A private cluster is not restarted node by node: a new one is started in its place, with
    /// the same options (on new ports), so no slot migration or stopped node of a test remains.
    pub fn restart(&mut self, backend: Backend) -> Result<()> {
        if let (Backend::RedisCluster, Some((cluster, options))) = (backend, &self.cluster) {
            if cluster.is_external() {
                return Err(Error::NotPrivate(backend));
            }
            let options = options.clone();
            // The old one stops (and its directory goes) before the new one starts.
            self.cluster = None;
            self.cluster = Some((Cluster::start_private(&options)?, options));
            return Ok(());
        }
        let timeout = self.startup_timeout;
        // Borrows of disjoint fields: the handle is read while the info's pids are updated.
        let info = match backend {
            Backend::Redis => &mut self.redis,
            Backend::Memcached => &mut self.memcached,
            // Not started: there is nothing to restart.
            Backend::RedisCluster => return Err(Error::NotPrivate(backend)),
        };
        let (Some(handle), false) = (&self.handle, info.external) else {
            return Err(Error::NotPrivate(backend));
        };
        for process in &mut info.processes {
            handle.stop(process.slot);
            let log_start = file_len(&process.log);
            process.pid = handle.start(process.slot).map_err(|source| Error::Spawn {
                backend,
                program: process.program.clone(),
                source,
            })?;
            if let Err(failure) =
                wait_ready(handle, process.slot, backend, &process.endpoints, timeout)
            {
                handle.stop(process.slot);
                return Err(failure.into_error(backend, &process.log, log_start));
            }
        }
        Ok(())
    }

    /// Private server: true if every one of its processes is running. External server: true if
    /// it answers within a second.
    pub fn is_alive(&self, backend: Backend) -> bool {
        if backend == Backend::RedisCluster {
            return self.cluster().is_some_and(Cluster::is_alive);
        }
        let info = self.info(backend);
        match &self.handle {
            Some(handle) if !info.external => info
                .processes
                .iter()
                .all(|process| handle.why_not_running(process.slot).is_none()),
            _ => info
                .endpoints
                .iter()
                .all(|endpoint| probe::ask(backend, endpoint, PROBE_TIMEOUT).is_ok()),
        }
    }
}

/// Registers `hook` to run on SIGINT, SIGTERM or SIGHUP, after every private server has been
/// stopped and before the process exits with status 130 (for example, to save partial results).
/// Also installs the handler if no server has been started yet.
///
/// Hooks run on the handler's thread, in registration order; a panicking hook is skipped.
pub fn on_interrupt(hook: impl Fn() + Send + Sync + 'static) -> Result<()> {
    process::add_hook(Box::new(hook)).map_err(Error::SignalHandler)
}

/// Makes the kernel kill the child that `command` spawns (SIGKILL) when this process dies,
/// whatever the way (Ctrl-C, SIGTERM, SIGKILL, a panic), as it does for the private servers: a
/// baseline tool whose server has gone may otherwise spin on reconnecting for good. The signal
/// follows the *thread* that spawns the child, so spawn it from a thread that waits for it.
pub fn die_with_parent(command: &mut std::process::Command) {
    process::die_with_parent(command);
}

/// Pins the calling thread (and every thread it spawns afterwards) to one CPU. Tests and
/// benchmarks use it to put the client where the placement setting says: on this kind of VM a
/// round trip costs ~8 us when client and server share a core and ~90 us when they do not.
// ANCHOR: pin_current_thread
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("no CPU {cpu}"),
        ));
    }
    set_current_thread_cpus(cpu..=cpu)
}

/// Lets the calling thread (and every thread or process it starts afterwards) run on any CPU
/// again, undoing [`pin_current_thread`]. Work whose result does not depend on where it runs,
/// such as counting instructions under valgrind, then uses every CPU instead of the one the
/// timed client is pinned to.
pub fn unpin_current_thread() -> std::io::Result<()> {
    // The kernel keeps the CPUs of the set that exist and are allowed.
    set_current_thread_cpus(0..libc::CPU_SETSIZE as usize)
}

fn set_current_thread_cpus(cpus: impl IntoIterator<Item = usize>) -> std::io::Result<()> {
    // SAFETY: `cpu_set_t` is plain data for which all-zero is the empty set; CPU_SET writes
    // inside it (only below CPU_SETSIZE) and sched_setaffinity only reads it.
    let result = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus
            .into_iter()
            .filter(|&cpu| cpu < libc::CPU_SETSIZE as usize)
        {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
// ANCHOR_END: pin_current_thread

fn external_from_env(
    backend: Backend,
    var: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<External>> {
    let Some(value) = env(var).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    match value.to_str() {
        Some(url) => External::parse(backend, url).map(Some),
        None => Err(Error::BadUrl {
            backend,
            url: value.to_string_lossy().into_owned(),
            reason: format!("{var} is not valid UTF-8"),
        }),
    }
}

fn start(
    redis: Option<External>,
    memcached: Option<External>,
    options: &StartOptions,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Servers> {
    // Everything that can fail without side effects comes first, so a missing binary or a bad
    // CPU starts nothing. Binaries are only looked up for private backends.
    let redis = plan(Backend::Redis, redis, options.redis_cpu, env)?;
    let memcached = plan(Backend::Memcached, memcached, options.memcached_cpu, env)?;

    let timeout = options.startup_timeout;
    // From here on, `handle` owns whatever was started: an early return drops it, which stops
    // the processes and removes the directory.
    let mut handle = None;
    let redis = match redis {
        Plan::External(external) => connect_external(Backend::Redis, external, timeout)?,
        Plan::Private(program) => start_redis(private_handle(&mut handle)?, program, options)?,
    };
    let memcached = match memcached {
        Plan::External(external) => connect_external(Backend::Memcached, external, timeout)?,
        Plan::Private(program) => start_memcached(private_handle(&mut handle)?, program, options)?,
    };
    Ok(Servers {
        redis,
        memcached,
        run_prefix: run_prefix(),
        startup_timeout: timeout,
        handle,
        cluster: None,
        no_cluster: ServerInfo {
            backend: Backend::RedisCluster,
            version: "not started".into(),
            external: false,
            url: None,
            endpoints: Vec::new(),
            processes: Vec::new(),
        },
    })
}

/// What to do for one backend.
enum Plan {
    External(External),
    /// Start this binary.
    Private(PathBuf),
}

fn plan(
    backend: Backend,
    external: Option<External>,
    cpu: Option<usize>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Plan> {
    match external {
        Some(external) => Ok(Plan::External(external)),
        None => {
            check_cpu(backend, cpu)?;
            find_binary(backend, env).map(Plan::Private)
        }
    }
}

/// The private group, created on first use (so an all-external run creates no directory).
fn private_handle(handle: &mut Option<Handle>) -> Result<&Handle> {
    match handle {
        Some(handle) => Ok(handle),
        None => Ok(handle.insert(Handle::new(private_dir()?).map_err(Error::SignalHandler)?)),
    }
}

/// `kvbench:<pid>-<unix-nanos>:` — unique per run, and it says who wrote the key.
fn run_prefix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("kvbench:{}-{nanos}:", std::process::id())
}

fn find_binary(backend: Backend, env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    let (program, var) = match backend {
        Backend::Redis | Backend::RedisCluster => ("redis-server", REDIS_SERVER_BIN_VAR),
        Backend::Memcached => ("memcached", MEMCACHED_BIN_VAR),
    };
    let missing = |reason: String| Error::MissingBinary { program, reason };
    // Names without a slash are looked up on PATH, as a shell would; cwd is then unused.
    let on_path = |name: &OsString| which::which_in(name, env("PATH"), "/").ok();
    match env(var).filter(|value| !value.is_empty()) {
        Some(value) if value.to_string_lossy().contains('/') => {
            let path = PathBuf::from(&value);
            if path.is_file() {
                Ok(path)
            } else if path.exists() {
                Err(missing(format!("{var}={} is not a file", path.display())))
            } else {
                Err(missing(format!("{var}={} does not exist", path.display())))
            }
        }
        Some(name) => on_path(&name)
            .ok_or_else(|| missing(format!("{var}={} is not on PATH", name.to_string_lossy()))),
        None => on_path(&OsString::from(program))
            .ok_or_else(|| missing(format!("not on PATH, and {var} is not set"))),
    }
}

fn check_cpu(backend: Backend, cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let allowed = process::spawner_cpus().map_err(|source| Error::Io {
        context: "sched_getaffinity".into(),
        source,
    })?;
    if allowed.contains(&cpu) {
        return Ok(());
    }
    let allowed = allowed
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    Err(Error::BadCpu {
        backend,
        cpu,
        allowed,
    })
}

/// A fresh directory only we can enter: the sockets in it are then reachable by us alone,
/// whatever their own mode.
fn private_dir() -> Result<tempfile::TempDir> {
    let io_error = |context: String| move |source| Error::Io { context, source };
    let owner_only = fs::Permissions::from_mode(0o700);
    let dir = tempfile::Builder::new()
        .prefix("kvbench-servers-")
        .permissions(owner_only.clone())
        .tempdir()
        .map_err(io_error("cannot create a private directory".into()))?;
    // The mode above passes through the umask, which can only remove bits; set it exactly.
    fs::set_permissions(dir.path(), owner_only).map_err(io_error(format!(
        "cannot chmod 700 {}",
        dir.path().display()
    )))?;
    let longest = dir.path().join("memcached.sock");
    if longest.to_str().is_none() || longest.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(Error::Io {
            context: format!(
                "{} is too long or not UTF-8 for a Unix socket path; set TMPDIR to a short \
                 directory such as /tmp",
                longest.display()
            ),
            source: io::ErrorKind::InvalidInput.into(),
        });
    }
    Ok(dir)
}

/// A port that was free a moment ago. Another process may take it before our server binds it;
/// `Launch::run` notices and tries another.
fn free_port() -> Result<u16> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|source| Error::Io {
            context: "cannot find a free TCP port".into(),
            source,
        })
}

fn connect_external(backend: Backend, external: External, timeout: Duration) -> Result<ServerInfo> {
    let answer =
        probe::ask(backend, &external.endpoint, timeout).map_err(|reason| Error::Unreachable {
            backend,
            endpoint: external.endpoint.clone(),
            reason,
        })?;
    Ok(ServerInfo {
        backend,
        version: answer.version,
        external: true,
        url: Some(external.url),
        endpoints: vec![external.endpoint],
        processes: Vec::new(),
    })
}

/// The arguments of a private `redis-server` on `port` whose socket (`redis.sock`), log
/// (`redis.log`) and working files live in `dir`. The cluster's nodes add their own.
fn redis_args(port: Option<u16>, dir: &Path, options: &StartOptions) -> Vec<String> {
    let port = port.map(|port| port.to_string()).unwrap_or_default();
    let max_clients = options.max_connections.max(10_000).to_string();
    let (socket, log) = (dir.join("redis.sock"), dir.join("redis.log"));
    #[rustfmt::skip]
    let args = [
        "--maxclients", &max_clients,
        "--port", &port, "--bind", "127.0.0.1",
        "--unixsocket", path_str(&socket), "--unixsocketperm", "700",
        // No persistence: nothing to write on shutdown, so SIGTERM stops it at once.
        "--save", "", "--appendonly", "no",
        // A child we can wait for, not a daemon we would have to find again by pid file.
        "--daemonize", "no",
        "--dir", path_str(dir), "--logfile", path_str(&log),
    ];
    args.map(String::from).to_vec()
}

fn start_redis(handle: &Handle, program: PathBuf, options: &StartOptions) -> Result<ServerInfo> {
    let args = |port: Option<u16>| redis_args(port, handle.dir(), options);
    let launch = Launch {
        backend: Backend::Redis,
        program,
        cpu: options.redis_cpu,
        log: handle.dir().join("redis.log"),
        tcp: true,
        unix: Some(handle.dir().join("redis.sock")),
        args: &args,
    };
    let (process, version) = launch.run(handle, options.startup_timeout)?;
    Ok(ServerInfo {
        backend: Backend::Redis,
        version,
        external: false,
        url: None,
        endpoints: process.endpoints.clone(),
        processes: vec![process],
    })
}

fn start_memcached(
    handle: &Handle,
    program: PathBuf,
    options: &StartOptions,
) -> Result<ServerInfo> {
    // -m 256: a cap, not an allocation. -I 2m: the default 1 MiB item limit includes item
    // overhead, so a 1 MiB value would be refused.
    let max_connections = options.max_connections.max(1024).to_string();
    let mut common = vec!["-m", "256", "-I", "2m", "-c", &max_connections];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // memcached refuses to run as root unless told which user to be.
        common.extend(["-u", "root"]);
    }
    let socket = handle.dir().join("memcached.sock");
    // memcached cannot serve TCP and a Unix socket from one process (`-s` turns TCP off).
    let tcp_args = |port: Option<u16>| {
        let port = port.map(|port| port.to_string()).unwrap_or_default();
        // -U 0: no UDP listener (it would need a second free port).
        let mut args = vec!["-l", "127.0.0.1", "-p", &port, "-U", "0"];
        args.extend(&common);
        args.into_iter().map(String::from).collect()
    };
    let unix_args = |_: Option<u16>| {
        let mut args = vec!["-s", path_str(&socket), "-a", "700"];
        args.extend(&common);
        args.into_iter().map(String::from).collect()
    };
    let launches = [
        Launch {
            backend: Backend::Memcached,
            program: program.clone(),
            cpu: options.memcached_cpu,
            log: handle.dir().join("memcached-tcp.log"),
            tcp: true,
            unix: None,
            args: &tcp_args,
        },
        Launch {
            backend: Backend::Memcached,
            program,
            cpu: options.memcached_cpu,
            log: handle.dir().join("memcached-unix.log"),
            tcp: false,
            unix: Some(socket.clone()),
            args: &unix_args,
        },
    ];
    let mut processes = Vec::new();
    let mut version = String::new();
    for launch in launches {
        let (process, answered) = launch.run(handle, options.startup_timeout)?;
        version = answered;
        processes.push(process);
    }
    Ok(ServerInfo {
        backend: Backend::Memcached,
        version,
        external: false,
        url: None,
        endpoints: processes
            .iter()
            .flat_map(|process| process.endpoints.clone())
            .collect(),
        processes,
    })
}

/// The private directory is checked to be UTF-8 when created, so its paths are too.
fn path_str(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

/// How to start one private server process.
struct Launch<'a> {
    backend: Backend,
    program: PathBuf,
    cpu: Option<usize>,
    log: PathBuf,
    /// Listens on a TCP port we must pick.
    tcp: bool,
    /// Listens on this Unix socket.
    unix: Option<PathBuf>,
    /// Builds the arguments for the picked port (`None` if `tcp` is false).
    args: &'a dyn Fn(Option<u16>) -> Vec<String>,
}

impl Launch<'_> {
    /// Starts the process and waits until it answers; on a port race, tries a new port.
    fn run(self, handle: &Handle, timeout: Duration) -> Result<(ProcessInfo, String)> {
        let mut slot = None;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = if self.tcp { Some(free_port()?) } else { None };
            let args = (self.args)(port);
            let mut endpoints = Vec::new();
            if let Some(port) = port {
                endpoints.push(Endpoint::Tcp(format!("127.0.0.1:{port}")));
            }
            if let Some(socket) = &self.unix {
                endpoints.push(Endpoint::Unix(socket.clone()));
            }
            let log_start = file_len(&self.log);
            let spawn_error = |source| Error::Spawn {
                backend: self.backend,
                program: self.program.clone(),
                source,
            };
            let current = match slot {
                None => handle
                    .add(Spec {
                        program: self.program.clone(),
                        args: args.clone(),
                        cpu: self.cpu,
                        log: self.log.clone(),
                        stop: match self.backend {
                            Backend::Memcached => Stop::Kill,
                            Backend::Redis | Backend::RedisCluster => Stop::Term,
                        },
                    })
                    .map_err(spawn_error)?,
                Some(slot) => {
                    handle.set_args(slot, args.clone());
                    handle.start(slot).map_err(spawn_error)?;
                    slot
                }
            };
            slot = Some(current);
            match wait_ready(handle, current, self.backend, &endpoints, timeout) {
                Ok(version) => {
                    let process = ProcessInfo {
                        pid: handle.pid(current).unwrap_or_default(),
                        program: self.program,
                        args,
                        endpoints,
                        cpu: self.cpu,
                        log: self.log,
                        slot: current,
                    };
                    return Ok((process, version));
                }
                Err(failure) => {
                    handle.stop(current);
                    let port_taken = failure.foreign
                        || read_log_tail(&self.log, log_start).contains("Address already in use");
                    if !(port_taken && attempt < PORT_ATTEMPTS) {
                        return Err(failure.into_error(self.backend, &self.log, log_start));
                    }
                }
            }
        }
    }
}

/// Why a private process is not ready.
struct Failure {
    reason: String,
    /// Something answered, but as another process: our port was taken by someone else's server.
    foreign: bool,
}

impl Failure {
    fn into_error(self, backend: Backend, log: &Path, log_start: u64) -> Error {
        Error::NotReady {
            backend,
            reason: self.reason,
            log: log.to_path_buf(),
            log_tail: read_log_tail(log, log_start),
        }
    }
}

/// Polls until the process answers on every endpoint *as itself* (by pid), exits, or the
/// timeout passes.
fn wait_ready(
    handle: &Handle,
    slot: usize,
    backend: Backend,
    endpoints: &[Endpoint],
    timeout: Duration,
) -> Result<String, Failure> {
    let deadline = Instant::now() + timeout;
    let pid = handle.pid(slot);
    let mut last_error = String::from("no answer yet");
    loop {
        if let Some(reason) = handle.why_not_running(slot) {
            return Err(Failure {
                reason,
                foreign: false,
            });
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let mut version = None;
        for endpoint in endpoints {
            match probe::ask(backend, endpoint, remaining.min(PROBE_TIMEOUT)) {
                Ok(answer) if answer.pid == pid => version = Some(answer.version),
                Ok(answer) => {
                    let reason = format!(
                        "{endpoint} answered as pid {:?}, not our pid {pid:?} (port taken)",
                        answer.pid
                    );
                    return Err(Failure {
                        reason,
                        foreign: true,
                    });
                }
                Err(err) => {
                    last_error = format!("{endpoint}: {err}");
                    version = None;
                    break;
                }
            }
        }
        if let Some(version) = version {
            return Ok(version);
        }
        if remaining.is_zero() {
            let reason = format!("no answer within {timeout:?} (last: {last_error})");
            return Err(Failure {
                reason,
                foreign: false,
            });
        }
        thread::sleep(PROBE_INTERVAL.min(remaining));
    }
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|meta| meta.len()).unwrap_or(0)
}

/// The last [`LOG_TAIL_BYTES`] written to `path` since offset `from`, cut at a line start.
fn read_log_tail(path: &Path, from: u64) -> String {
    let read = || -> io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let start = from.max(len.saturating_sub(LOG_TAIL_BYTES));
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        // Drop a partial first line when we started mid-file.
        Ok(match text.split_once('\n') {
            Some((_, rest)) if start > from => rest.to_string(),
            _ => text,
        })
    };
    match read() {
        Ok(text) if text.trim().is_empty() => "(the log is empty)".into(),
        Ok(text) => text,
        Err(err) => format!("(cannot read the log: {err})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        assert_eq!(shell_quote("--save"), "--save");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn run_prefix_names_the_process() {
        let prefix = run_prefix();
        let expected_start = format!("kvbench:{}-", std::process::id());
        assert!(prefix.starts_with(&expected_start), "{prefix}");
        assert!(prefix.ends_with(':'), "{prefix}");
    }

    /// memcached is killed at once (it would wait for its clock tick); Redis is asked to shut
    /// down and does so cleanly.
    #[test]
    fn memcached_is_killed_and_redis_shuts_down() {
        use std::os::unix::process::ExitStatusExt;
        let servers = Servers::start_private(&StartOptions::default()).unwrap();
        let handle = servers.handle.as_ref().unwrap();
        for process in &servers.memcached.processes {
            let status = handle.stop(process.slot).unwrap();
            assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
        }
        for process in &servers.redis.processes {
            let status = handle.stop(process.slot).unwrap();
            assert!(status.success(), "{status}");
        }
    }

    #[test]
    fn log_tail_skips_older_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        fs::write(&log, "old: Address already in use\n").unwrap();
        let from = file_len(&log);
        fs::write(&log, "old: Address already in use\nnew: bad config\n").unwrap();
        assert_eq!(read_log_tail(&log, from), "new: bad config\n");
        assert!(read_log_tail(&dir.path().join("none"), 0).starts_with("(cannot read"));
    }

    /// The CPUs the calling thread may run on.
    fn current_thread_cpus() -> Vec<usize> {
        crate::process::allowed_cpus().expect("sched_getaffinity of the calling thread")
    }

    #[test]
    fn an_unpinned_thread_gets_back_every_cpu_it_had() {
        // A thread of its own: the test harness's threads keep their CPUs.
        std::thread::spawn(|| {
            let every = current_thread_cpus();
            let last = *every.last().expect("at least one CPU");
            pin_current_thread(last).unwrap();
            assert_eq!(current_thread_cpus(), vec![last]);
            // A thread started now inherits the pinning, and the unpinning does the same.
            let inherited = std::thread::spawn(current_thread_cpus).join().unwrap();
            assert_eq!(inherited, vec![last]);
            // Every CPU it had, and more if the process was started on fewer than it may use.
            unpin_current_thread().unwrap();
            let unpinned = current_thread_cpus();
            assert!(
                every.iter().all(|cpu| unpinned.contains(cpu)),
                "{unpinned:?}"
            );
            let inherited = std::thread::spawn(current_thread_cpus).join().unwrap();
            assert_eq!(inherited, unpinned);
            assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
        })
        .join()
        .unwrap();
    }
}
