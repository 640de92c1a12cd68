//! A private Redis Cluster — three primaries, no replicas — or an external one named by
//! `REDIS_CLUSTER_URL`, for the cluster clients' tests and benchmarks.
//!
//! [`Cluster::start`] starts three `redis-server` processes with `--cluster-enabled yes`, each
//! with its own free TCP port (and cluster bus port), its own Unix socket and its own folder
//! (`node-1/` … `node-3/`: socket, log, `nodes.conf`) inside a fresh private 0700 directory. They
//! are spawned exactly like [`Servers`](crate::Servers)' Redis, with the same guarantees: one
//! spawner thread and `PR_SET_PDEATHSIG`, a stop on drop (also while a panic unwinds), on Ctrl-C
//! and at exit (see the crate docs, "No orphans, ever"). Then `redis-cli --cluster create …
//! --cluster-replicas 0 --cluster-yes` joins them (a child of the same group), and the start
//! waits until every node's `CLUSTER INFO` says `cluster_state:ok` and every node's `CLUSTER
//! SLOTS` is the same map, covering all 16,384 slots. What it gives: the [`nodes`] (TCP address,
//! Unix socket, node id, slot ranges), a [`seed`] to connect a cluster client to, and the run's
//! environment as [`ServerInfo`] (version, each node's command line and CPU) plus the
//! [`create_command`].
//!
//! Placement: [`StartOptions::redis_cpu`] pins all three nodes to that one CPU, as the bench's
//! same-core placement pins the single Redis, and each [`ProcessInfo`] records it.
//!
//! The nodes run with `--cluster-require-full-coverage no`: with it on (Redis's default), a node
//! stopped for a fault test ([`Cluster::stop_node`]) would, once the others mark it failed, make
//! them refuse every key with `CLUSTERDOWN`. Off, the others keep serving their own slots, as a
//! cluster with replicas would after a failover.
//!
//! # External
//!
//! `REDIS_CLUSTER_URL=redis://host:port[,host:port…]` makes the cluster external
//! ([`ExternalCluster::parse`]): its nodes are found from the first named node that answers, and
//! the rules of an external server hold: every key goes through [`Cluster::key`] (the per-run
//! prefix, which holds no `{` or `}`, so it never changes a key's slot), nothing is ever flushed,
//! and a test deletes exactly the keys it wrote. Nothing is started, stopped or reconfigured.
//!
//! [`nodes`]: Cluster::nodes
//! [`seed`]: Cluster::seed
//! [`create_command`]: Cluster::create_command

use std::ffi::OsString;
use std::fs;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::probe::{self, Reply};
use crate::process::{Handle, Spec, Stop};
use crate::{
    Backend, Endpoint, Error, Launch, MAX_SOCKET_PATH, ProcessInfo, Result, ServerInfo,
    StartOptions, find_binary, free_port, path_str, private_dir, read_log_tail, redis_args,
    run_prefix, shell_quote,
};

/// Environment variable: `redis://host:port[,host:port…]` of an external cluster.
pub const REDIS_CLUSTER_URL_VAR: &str = "REDIS_CLUSTER_URL";

/// Hash slots in a Redis Cluster: a key belongs to slot `CRC16(key) mod 16384`.
pub const SLOT_COUNT: u16 = 16384;

/// Primaries of the private cluster: the fewest `redis-cli --cluster create` accepts.
pub const PRIVATE_NODES: usize = 3;

/// How often a forming cluster is asked whether it is ready.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// One primary of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNode {
    /// `host:port` as the cluster announces it in `CLUSTER SLOTS` (what a client connects to).
    pub addr: String,
    /// Its Unix socket (private nodes only; a cluster announces none).
    pub unix: Option<PathBuf>,
    /// Its node id (`CLUSTER MYID`).
    pub id: String,
    /// The slots it served when the cluster was started (a migration does not update them).
    pub slots: Vec<RangeInclusive<u16>>,
    /// Index of its process in [`ServerInfo::processes`] (private nodes only).
    process: Option<usize>,
}

impl ClusterNode {
    /// Its TCP endpoint.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::Tcp(self.addr.clone())
    }

    /// True if it served `slot` when the cluster was started.
    pub fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|range| range.contains(&slot))
    }
}

/// A cluster someone else runs, by the nodes its URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalCluster {
    url: String,
    seeds: Vec<Endpoint>,
}

impl ExternalCluster {
    /// Parses `redis://host:port[,host:port…]`: each node by the rules of a Redis URL
    /// ([`External::parse`](crate::External::parse)), TCP only.
    pub fn parse(url: &str) -> Result<ExternalCluster> {
        match crate::url::parse_cluster(url) {
            Ok(seeds) => Ok(ExternalCluster {
                url: url.to_string(),
                seeds,
            }),
            Err(reason) => Err(Error::BadUrl {
                backend: Backend::RedisCluster,
                url: url.to_string(),
                reason,
            }),
        }
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The nodes it names, in its order.
    pub fn seeds(&self) -> &[Endpoint] {
        &self.seeds
    }
}

/// A Redis Cluster, private or external. Dropping it stops and reaps every private node and
/// removes the private directory.
#[derive(Debug)]
pub struct Cluster {
    info: ServerInfo,
    nodes: Vec<ClusterNode>,
    create_command: Option<String>,
    run_prefix: String,
    timeout: Duration,
    /// Owns the private processes and directory; `None` for an external cluster.
    handle: Option<HandleDebug>,
}

/// The process group, wrapped so that `Cluster` can derive `Debug` (the directory is shown).
struct HandleDebug(Handle);

impl std::fmt::Debug for HandleDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.dir().fmt(f)
    }
}

impl Cluster {
    /// Uses the cluster `REDIS_CLUSTER_URL` names, if set (and not empty); otherwise starts a
    /// private one.
    pub fn start(options: &StartOptions) -> Result<Cluster> {
        Self::start_with_env(options, &|name| std::env::var_os(name))
    }

    /// Starts a private cluster, whatever the environment says.
    pub fn start_private(options: &StartOptions) -> Result<Cluster> {
        Self::start_with_env_and(None, options, &|name| std::env::var_os(name))
    }

    /// Uses the given external cluster, or starts a private one (`None`).
    pub fn start_with(
        external: Option<ExternalCluster>,
        options: &StartOptions,
    ) -> Result<Cluster> {
        Self::start_with_env_and(external, options, &|name| std::env::var_os(name))
    }

    /// Like [`start`](Cluster::start), but reads `REDIS_CLUSTER_URL`, `REDIS_SERVER_BIN` and
    /// `PATH` through `env`.
    pub fn start_with_env(
        options: &StartOptions,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Cluster> {
        let external = match env(REDIS_CLUSTER_URL_VAR).filter(|value| !value.is_empty()) {
            None => None,
            Some(value) => Some(ExternalCluster::parse(value.to_str().ok_or_else(
                || Error::BadUrl {
                    backend: Backend::RedisCluster,
                    url: value.to_string_lossy().into_owned(),
                    reason: format!("{REDIS_CLUSTER_URL_VAR} is not valid UTF-8"),
                },
            )?)?),
        };
        Self::start_with_env_and(external, options, env)
    }

    fn start_with_env_and(
        external: Option<ExternalCluster>,
        options: &StartOptions,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<Cluster> {
        match external {
            Some(external) => connect_external(external, options.startup_timeout),
            None => start_private(options, env),
        }
    }

    /// Versions, each node's command line, pid and CPU, and every endpoint (TCP first).
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The primaries, in the order of their slots (the node serving slot 0 first).
    pub fn nodes(&self) -> &[ClusterNode] {
        &self.nodes
    }

    /// Where a cluster client starts: the first node's TCP endpoint (it discovers the others).
    pub fn seed(&self) -> Endpoint {
        self.nodes[0].endpoint()
    }

    /// The node that served `slot` when the cluster was started.
    pub fn node_for_slot(&self, slot: u16) -> Option<&ClusterNode> {
        self.nodes.iter().find(|node| node.serves(slot))
    }

    /// The `redis-cli --cluster create …` command line that joined a private cluster.
    pub fn create_command(&self) -> Option<&str> {
        self.create_command.as_deref()
    }

    /// True if the cluster was given by URL rather than started here.
    pub fn is_external(&self) -> bool {
        self.info.external
    }

    /// The prefix every key must carry: empty for a private cluster, `kvbench:<pid>-<nanos>:`
    /// for an external one (see [`Servers::key_prefix`](crate::Servers::key_prefix)).
    pub fn key_prefix(&self) -> &str {
        if self.is_external() {
            &self.run_prefix
        } else {
            ""
        }
    }

    /// `key` with [`key_prefix`](Cluster::key_prefix) in front.
    pub fn key(&self, key: &[u8]) -> Vec<u8> {
        [self.key_prefix().as_bytes(), key].concat()
    }

    /// The private directory (one folder per node inside); `None` for an external cluster.
    pub fn dir(&self) -> Option<&Path> {
        self.handle.as_ref().map(|handle| handle.0.dir())
    }

    /// Sends one command to one node on a fresh connection and returns its reply (an error reply
    /// is [`Reply::Error`]): for tests that set a cluster up or look at one node, such as
    /// `CLUSTER SETSLOT` or `CLUSTER COUNTKEYSINSLOT`. Replies longer than 64 KiB are refused.
    pub fn command(&self, node: &ClusterNode, args: &[&[u8]]) -> Result<Reply> {
        let endpoint = node.endpoint();
        probe::command(&endpoint, args, self.timeout).map_err(|reason| Error::Unreachable {
            backend: Backend::RedisCluster,
            endpoint,
            reason,
        })
    }

    /// Stops the private node `index` (of [`nodes`](Cluster::nodes)), for fault tests: its
    /// slots are then served by no one, and the other nodes go on serving theirs.
    pub fn stop_node(&mut self, index: usize) -> Result<()> {
        let (Some(handle), Some(process)) = (
            &self.handle,
            self.nodes.get(index).and_then(|node| node.process),
        ) else {
            return Err(Error::NotPrivate(Backend::RedisCluster));
        };
        handle.0.stop(self.info.processes[process].slot);
        Ok(())
    }

    /// Private cluster: true if every node runs. External: true if every node answers.
    pub fn is_alive(&self) -> bool {
        match &self.handle {
            Some(handle) => self
                .info
                .processes
                .iter()
                .all(|process| handle.0.why_not_running(process.slot).is_none()),
            None => self.nodes.iter().all(|node| {
                probe::ask(
                    Backend::RedisCluster,
                    &node.endpoint(),
                    crate::PROBE_TIMEOUT,
                )
                .is_ok()
            }),
        }
    }
}

fn start_private(
    options: &StartOptions,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Cluster> {
    crate::check_cpu(Backend::RedisCluster, options.redis_cpu)?;
    let server = find_binary(Backend::RedisCluster, env)?;
    let cli = find_cli(&server, env)?;
    // From here on, `handle` owns whatever was started: an early return stops it all.
    let handle = Handle::new(private_dir()?).map_err(Error::SignalHandler)?;
    let mut processes = Vec::new();
    let mut version = String::new();
    for number in 1..=PRIVATE_NODES {
        let (process, answered) = start_node(&handle, &server, number, options)?;
        version = answered;
        processes.push(process);
    }
    let addrs: Vec<String> = processes.iter().map(tcp_addr).collect();
    let create = create_cluster(&handle, cli, &addrs, options.startup_timeout)?;
    let map = wait_until_ok(&processes, options.startup_timeout)?;
    let nodes = map
        .into_iter()
        .map(|mut node| {
            node.process = addrs.iter().position(|addr| *addr == node.addr);
            node.unix = node.process.and_then(|i| unix_path(&processes[i]));
            node
        })
        .collect();
    let endpoints = processes
        .iter()
        .flat_map(|process| process.endpoints.iter().cloned())
        .collect();
    Ok(Cluster {
        info: ServerInfo {
            backend: Backend::RedisCluster,
            version,
            external: false,
            url: None,
            endpoints: sorted_tcp_first(endpoints),
            processes,
        },
        nodes,
        create_command: Some(create),
        run_prefix: run_prefix(),
        timeout: options.startup_timeout,
        handle: Some(HandleDebug(handle)),
    })
}

fn unix_path(process: &ProcessInfo) -> Option<PathBuf> {
    process
        .endpoints
        .iter()
        .find_map(|endpoint| match endpoint {
            Endpoint::Unix(path) => Some(path.clone()),
            Endpoint::Tcp(_) => None,
        })
}

fn tcp_addr(process: &ProcessInfo) -> String {
    match process.endpoints.first() {
        Some(Endpoint::Tcp(addr)) => addr.clone(),
        _ => String::new(),
    }
}

fn sorted_tcp_first(mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    endpoints.sort_by_key(Endpoint::transport);
    endpoints
}

/// `redis-cli`, next to `redis-server` if it is there, else on `PATH`.
fn find_cli(server: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    let sibling = server.with_file_name("redis-cli");
    if sibling.is_file() {
        return Ok(sibling);
    }
    which::which_in("redis-cli", env("PATH"), "/").map_err(|_| Error::MissingBinary {
        program: "redis-cli",
        reason: format!("not next to {} nor on PATH", server.display()),
    })
}

/// Starts node `number` in its own folder, on a free port and a free cluster bus port.
fn start_node(
    handle: &Handle,
    program: &Path,
    number: usize,
    options: &StartOptions,
) -> Result<(ProcessInfo, String)> {
    let dir = handle.dir().join(format!("node-{number}"));
    fs::create_dir(&dir).map_err(|source| Error::Io {
        context: format!("cannot create {}", dir.display()),
        source,
    })?;
    let socket = dir.join("redis.sock");
    if socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(Error::Io {
            context: format!(
                "{} is too long for a Unix socket path; set TMPDIR to a short directory such \
                 as /tmp",
                socket.display()
            ),
            source: std::io::ErrorKind::InvalidInput.into(),
        });
    }
    let nodes_conf = dir.join("nodes.conf");
    let args = |port: Option<u16>| {
        let mut args = redis_args(port, &dir, options);
        // The bus port is port + 10000 unless set: above 55535 that does not exist, and below it
        // may be taken. A fresh one per attempt, like the client port.
        let bus = (0..PORT_ATTEMPTS_FOR_BUS)
            .filter_map(|_| free_port().ok())
            .find(|bus| Some(*bus) != port)
            .map_or_else(String::new, |bus| bus.to_string());
        #[rustfmt::skip]
        let cluster = [
            "--cluster-enabled", "yes",
            "--cluster-config-file", path_str(&nodes_conf),
            "--cluster-port", &bus,
            "--cluster-require-full-coverage", "no",
        ];
        args.extend(cluster.map(String::from));
        args
    };
    Launch {
        backend: Backend::RedisCluster,
        program: program.to_path_buf(),
        cpu: options.redis_cpu,
        log: dir.join("redis.log"),
        tcp: true,
        unix: Some(socket.clone()),
        args: &args,
    }
    .run(handle, options.startup_timeout)
}

/// Tries for a bus port distinct from the client port.
const PORT_ATTEMPTS_FOR_BUS: usize = 3;

/// Runs `redis-cli --cluster create` as a child of the group and waits for it to exit; returns
/// its command line.
fn create_cluster(
    handle: &Handle,
    cli: PathBuf,
    addrs: &[String],
    timeout: Duration,
) -> Result<String> {
    let log = handle.dir().join("cluster-create.log");
    let mut args = vec!["--cluster".to_string(), "create".into()];
    args.extend(addrs.iter().cloned());
    args.extend(["--cluster-replicas", "0", "--cluster-yes"].map(String::from));
    let command = [path_str(&cli).to_string()]
        .iter()
        .chain(&args)
        .map(|word| shell_quote(word))
        .collect::<Vec<_>>()
        .join(" ");
    let spec = Spec {
        program: cli.clone(),
        args,
        cpu: None,
        log: log.clone(),
        stop: Stop::Term,
    };
    let not_ready = |reason: String| Error::NotReady {
        backend: Backend::RedisCluster,
        reason,
        log: log.clone(),
        log_tail: read_log_tail(&log, 0),
    };
    let slot = handle.add(spec).map_err(|source| Error::Spawn {
        backend: Backend::RedisCluster,
        program: cli,
        source,
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        match handle.exit_status(slot) {
            Ok(Some(status)) if status.success() => return Ok(command),
            Ok(Some(status)) => return Err(not_ready(format!("`{command}` failed ({status})"))),
            Err(err) => return Err(not_ready(format!("`{command}`: {err}"))),
            Ok(None) if Instant::now() >= deadline => {
                handle.stop(slot);
                return Err(not_ready(format!(
                    "`{command}` ran longer than {timeout:?}"
                )));
            }
            Ok(None) => thread::sleep(POLL_INTERVAL),
        }
    }
}

/// Polls every node until each says `cluster_state:ok` and all report the same slot map,
/// covering every slot; returns that map.
fn wait_until_ok(processes: &[ProcessInfo], timeout: Duration) -> Result<Vec<ClusterNode>> {
    let deadline = Instant::now() + timeout;
    loop {
        let views: std::result::Result<Vec<_>, String> = processes
            .iter()
            .map(|process| {
                let endpoint = process.endpoints[0].clone();
                cluster_view(&endpoint, crate::PROBE_TIMEOUT)
                    .map_err(|reason| format!("{endpoint}: {reason}"))
            })
            .collect();
        let last = match views {
            Ok(views) if views.windows(2).all(|pair| pair[0] == pair[1]) => {
                return Ok(views.into_iter().next().unwrap_or_default());
            }
            Ok(_) => "the nodes do not agree on the slot map yet".to_string(),
            Err(reason) => reason,
        };
        if Instant::now() >= deadline {
            let log = processes[0].log.clone();
            return Err(Error::NotReady {
                backend: Backend::RedisCluster,
                reason: format!("the cluster is not ready within {timeout:?} (last: {last})"),
                log_tail: read_log_tail(&log, 0),
                log,
            });
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// One node's view of the cluster: its `cluster_state` must be `ok`, and its `CLUSTER SLOTS`
/// must cover every slot; returns the primaries by their first slot.
fn cluster_view(
    endpoint: &Endpoint,
    timeout: Duration,
) -> std::result::Result<Vec<ClusterNode>, String> {
    let info = probe::command(endpoint, &[b"CLUSTER", b"INFO"], timeout)?;
    let info = match &info {
        Reply::Error(message) => return Err(format!("CLUSTER INFO answered -{message}")),
        other => other.text().unwrap_or_default(),
    };
    let state = info
        .lines()
        .find_map(|line| line.strip_prefix("cluster_state:"));
    if state.map(str::trim) != Some("ok") {
        return Err(format!("cluster_state is {state:?}, not ok"));
    }
    let host = match endpoint {
        Endpoint::Tcp(addr) => addr.rsplit_once(':').map_or("", |(host, _)| host),
        Endpoint::Unix(_) => "",
    };
    let slots = probe::command(endpoint, &[b"CLUSTER", b"SLOTS"], timeout)?;
    let mut nodes: Vec<ClusterNode> = Vec::new();
    let mut ranges = Vec::new();
    for range in slots.elements().ok_or("CLUSTER SLOTS is not an array")? {
        let (start, end, addr, id) = slot_range(range, host)?;
        ranges.push((start, end));
        match nodes.iter_mut().find(|node| node.id == id) {
            Some(node) => node.slots.push(start..=end),
            None => nodes.push(ClusterNode {
                addr,
                unix: None,
                id,
                slots: vec![start..=end],
                process: None,
            }),
        }
    }
    ranges.sort_unstable();
    let mut next = 0u32;
    for (start, end) in ranges {
        if u32::from(start) != next {
            return Err(format!("slot {next} is not served (CLUSTER SLOTS)"));
        }
        next = u32::from(end) + 1;
    }
    if next != u32::from(SLOT_COUNT) {
        return Err(format!("slot {next} is not served (CLUSTER SLOTS)"));
    }
    for node in &mut nodes {
        node.slots.sort_unstable_by_key(|range| *range.start());
    }
    nodes.sort_unstable_by_key(|node| node.slots.first().map(|range| *range.start()));
    Ok(nodes)
}

/// One element of `CLUSTER SLOTS`: `[start, end, [ip, port, id, …], replicas…]` → the range and
/// its primary's `host:port` and id. An empty ip means "the host you asked" (older servers).
fn slot_range(
    range: &Reply,
    host: &str,
) -> std::result::Result<(u16, u16, String, String), String> {
    let bad = || format!("unexpected CLUSTER SLOTS element {range:?}");
    let fields = range.elements().ok_or_else(bad)?;
    let slot = |i: usize| {
        fields
            .get(i)
            .and_then(Reply::integer)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|&n| n < SLOT_COUNT)
    };
    let primary = fields.get(2).and_then(Reply::elements).ok_or_else(bad)?;
    let ip = primary.first().and_then(Reply::text).ok_or_else(bad)?;
    let port = primary.get(1).and_then(Reply::integer).ok_or_else(bad)?;
    let id = primary.get(2).and_then(Reply::text).ok_or_else(bad)?;
    let (Some(start), Some(end)) = (slot(0), slot(1)) else {
        return Err(bad());
    };
    if start > end {
        return Err(bad());
    }
    let ip = if ip.is_empty() { host.to_string() } else { ip };
    // An IPv6 address is written in brackets in host:port, as the URLs here do.
    let addr = if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    };
    Ok((start, end, addr, id))
}

fn connect_external(external: ExternalCluster, timeout: Duration) -> Result<Cluster> {
    let mut last = None;
    for seed in &external.seeds {
        let answer = probe::ask(Backend::RedisCluster, seed, timeout)
            .and_then(|answer| Ok((answer, cluster_view(seed, timeout)?)));
        match answer {
            Ok((answer, nodes)) => {
                return Ok(Cluster {
                    info: ServerInfo {
                        backend: Backend::RedisCluster,
                        version: answer.version,
                        external: true,
                        url: Some(external.url.clone()),
                        endpoints: nodes.iter().map(ClusterNode::endpoint).collect(),
                        processes: Vec::new(),
                    },
                    nodes,
                    create_command: None,
                    run_prefix: run_prefix(),
                    timeout,
                    handle: None,
                });
            }
            Err(reason) => last = Some((seed.clone(), reason)),
        }
    }
    let (endpoint, reason) = last.unwrap_or_else(|| {
        let none = Endpoint::Tcp(String::new());
        (none, "the URL names no node".into())
    });
    Err(Error::Unreachable {
        backend: Backend::RedisCluster,
        endpoint,
        reason,
    })
}
