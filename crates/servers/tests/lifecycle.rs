//! Real servers, real processes: start, answer, stop, and leave nothing behind — after a drop, a
//! panic, Ctrl-C, SIGTERM, an exit without a drop, and SIGKILL.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

mod common;

use common::{cpus_allowed, env_of, gone};
use kvbench_servers::{Backend, Endpoint, Error, External, Servers, StartOptions, Transport};

const BACKENDS: [Backend; 2] = [Backend::Redis, Backend::Memcached];

/// Sends one request and reads one `\r\n`-terminated line back.
fn ask(endpoint: &Endpoint, request: &[u8]) -> String {
    let timeout = Some(Duration::from_secs(5));
    let mut stream: Box<dyn ReadWrite> = match endpoint {
        Endpoint::Tcp(addr) => {
            let stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(timeout).unwrap();
            Box::new(stream)
        }
        Endpoint::Unix(path) => {
            let stream = UnixStream::connect(path).unwrap();
            stream.set_read_timeout(timeout).unwrap();
            Box::new(stream)
        }
    };
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8];
    while !reply.ends_with(b"\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "{endpoint} closed mid-reply"
        );
        reply.push(byte[0]);
    }
    String::from_utf8(reply).unwrap()
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Checks that the server behind `endpoint` answers, and returns what it said.
fn hello(backend: Backend, endpoint: &Endpoint) -> String {
    match backend {
        Backend::Redis | Backend::RedisCluster => {
            assert_eq!(ask(endpoint, b"PING\r\n"), "+PONG\r\n", "{endpoint}");
            "+PONG".into()
        }
        Backend::Memcached => {
            let reply = ask(endpoint, b"version\r\n");
            assert!(reply.starts_with("VERSION "), "{endpoint} said {reply:?}");
            reply.trim_end().trim_start_matches("VERSION ").into()
        }
    }
}

fn all_pids(servers: &Servers) -> Vec<u32> {
    BACKENDS
        .iter()
        .flat_map(|&backend| servers.info(backend).pids())
        .collect()
}

#[test]
fn private_servers_answer_everywhere_and_vanish_on_drop() {
    let servers = Servers::start_private(&StartOptions::default()).unwrap();
    let dir = servers.dir().unwrap().to_path_buf();
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    for name in ["redis.sock", "memcached.sock", "redis.log"] {
        assert!(
            dir.join(name).exists(),
            "{name} missing from {}",
            dir.display()
        );
    }

    for backend in BACKENDS {
        let info = servers.info(backend);
        assert!(!info.external && info.url.is_none());
        assert_eq!(servers.transports(backend), Transport::ALL);
        assert_eq!(servers.key_prefix(backend), "");
        assert_eq!(servers.key(backend, b"k1"), b"k1");
        assert!(
            info.version.starts_with(|c: char| c.is_ascii_digit()),
            "{info:?}"
        );
        for &transport in Transport::ALL {
            let endpoint = servers.endpoint(backend, transport).unwrap();
            assert_eq!(endpoint.transport(), transport);
            let said = hello(backend, &endpoint);
            if backend == Backend::Memcached {
                assert_eq!(said, info.version);
            }
        }
        assert!(servers.is_alive(backend));
    }

    let redis = &servers.info(Backend::Redis).processes;
    assert_eq!(redis.len(), 1);
    assert!(
        redis[0]
            .args
            .windows(2)
            .any(|pair| pair == ["--daemonize", "no"]),
        "{redis:?}"
    );
    assert!(
        redis[0]
            .command_line()
            .contains("--save '' --appendonly no"),
        "{}",
        redis[0].command_line()
    );
    let memcached = &servers.info(Backend::Memcached).processes;
    assert_eq!(memcached.len(), 2, "one TCP and one Unix process");
    for process in memcached {
        assert!(
            process.args.windows(2).any(|pair| pair == ["-I", "2m"]),
            "{process:?}"
        );
    }

    let pids = all_pids(&servers);
    assert_eq!(pids.len(), 3);
    drop(servers);
    for pid in pids {
        assert!(gone(pid), "pid {pid} still exists after drop");
    }
    assert!(!dir.exists(), "{} not removed", dir.display());
}

#[test]
fn pinned_servers_run_only_on_their_cpu() {
    let last_cpu = thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    let options = StartOptions {
        redis_cpu: Some(0),
        memcached_cpu: Some(last_cpu),
        ..StartOptions::default()
    };
    let servers = Servers::start_private(&options).unwrap();
    for pid in servers.info(Backend::Redis).pids() {
        assert_eq!(cpus_allowed(pid), "0");
    }
    for pid in servers.info(Backend::Memcached).pids() {
        assert_eq!(cpus_allowed(pid), last_cpu.to_string());
    }
    assert_eq!(servers.info(Backend::Redis).processes[0].cpu, Some(0));
}

#[test]
fn a_cpu_we_may_not_use_is_refused_before_anything_starts() {
    let options = StartOptions {
        redis_cpu: Some(100_000),
        ..StartOptions::default()
    };
    let err = Servers::start_private(&options).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadCpu {
                backend: Backend::Redis,
                cpu: 100_000,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn missing_binary_says_how_to_install() {
    let env = env_of(&[("REDIS_SERVER_BIN", "/nonexistent")]);
    let err = Servers::start_with_env(&StartOptions::default(), &env).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingBinary {
                program: "redis-server",
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("REDIS_SERVER_BIN=/nonexistent does not exist"),
        "{message}"
    );
    assert!(
        message.contains("apt-get install redis-server memcached"),
        "{message}"
    );
    assert!(message.contains("REDIS_URL / MEMCACHED_URL"), "{message}");

    let env = env_of(&[("PATH", "/nonexistent-dir")]);
    let err = Servers::start_with_env(&StartOptions::default(), &env).unwrap_err();
    assert!(
        err.to_string()
            .contains("redis-server not found (not on PATH"),
        "{err}"
    );
}

#[test]
fn binaries_are_only_looked_up_for_private_backends() {
    let private = Servers::start_private(&StartOptions::default()).unwrap();
    let redis_url = format!(
        "{}",
        private.endpoint(Backend::Redis, Transport::Tcp).unwrap()
    )
    .replace("tcp://", "redis://");
    let env = env_of(&[
        ("REDIS_URL", &redis_url),
        ("REDIS_SERVER_BIN", "/nonexistent"),
    ]);
    let servers = Servers::start_with_env(&StartOptions::default(), &env).unwrap();
    assert!(servers.is_external(Backend::Redis));
    assert!(!servers.is_external(Backend::Memcached));
    assert_eq!(
        servers.info(Backend::Redis).url.as_deref(),
        Some(redis_url.as_str())
    );

    let env = env_of(&[("MEMCACHED_URL", "memcache:///no/such.sock")]);
    let err = Servers::start_with_env(&StartOptions::default(), &env).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unreachable {
                backend: Backend::Memcached,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn bad_url_in_the_environment_is_a_typed_error() {
    let env = env_of(&[("REDIS_URL", "redis://127.0.0.1:6379/5")]);
    let err = Servers::start_with_env(&StartOptions::default(), &env).unwrap_err();
    match err {
        Error::BadUrl {
            backend: Backend::Redis,
            url,
            reason,
        } => {
            assert_eq!(url, "redis://127.0.0.1:6379/5");
            assert!(reason.contains("database"), "{reason}");
        }
        other => panic!("expected BadUrl, got {other:?}"),
    }
    let err = External::parse(Backend::Memcached, "http://x").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("bad memcached URL \"http://x\""),
        "{err}"
    );
}

#[test]
fn external_servers_get_a_key_prefix_and_are_never_stopped() {
    let owner = Servers::start_private(&StartOptions::default()).unwrap();
    let redis_unix = owner.endpoint(Backend::Redis, Transport::Unix).unwrap();
    let memcached_tcp = owner.endpoint(Backend::Memcached, Transport::Tcp).unwrap();
    let mut guest = Servers::start_with(
        Some(External::new(redis_unix.clone())),
        Some(External::new(memcached_tcp.clone())),
        &StartOptions::default(),
    )
    .unwrap();
    assert!(guest.dir().is_none(), "all-external creates no directory");

    for (backend, own) in [
        (Backend::Redis, Transport::Unix),
        (Backend::Memcached, Transport::Tcp),
    ] {
        let info = guest.info(backend);
        assert!(info.external && info.processes.is_empty());
        assert_eq!(info.version, owner.info(backend).version);
        assert_eq!(
            guest.transports(backend),
            [own],
            "an external URL gives only its transport"
        );
        assert!(guest.endpoint(backend, own).is_some());
        let prefix = guest.key_prefix(backend);
        assert!(
            prefix.starts_with(&format!("kvbench:{}-", std::process::id())),
            "{prefix}"
        );
        assert!(prefix.ends_with(':'));
        assert_eq!(guest.key(backend, b"k"), format!("{prefix}k").into_bytes());
        assert!(guest.is_alive(backend));
        assert!(matches!(guest.restart(backend), Err(Error::NotPrivate(b)) if b == backend));
        assert!(matches!(guest.stop(backend), Err(Error::NotPrivate(_))));
    }

    drop(guest);
    assert!(owner.is_alive(Backend::Redis) && owner.is_alive(Backend::Memcached));
    hello(Backend::Redis, &redis_unix);
    hello(Backend::Memcached, &memcached_tcp);
}

#[test]
fn restart_keeps_endpoints_and_changes_pids() {
    let mut servers = Servers::start_private(&StartOptions::default()).unwrap();
    for backend in BACKENDS {
        let endpoints = servers.info(backend).endpoints.clone();
        let old_pids = servers.info(backend).pids();

        servers.stop(backend).unwrap();
        assert!(!servers.is_alive(backend));
        for &pid in &old_pids {
            assert!(gone(pid), "{backend} pid {pid} survived stop");
        }

        servers.restart(backend).unwrap();
        assert!(servers.is_alive(backend));
        assert_eq!(servers.info(backend).endpoints, endpoints);
        let new_pids = servers.info(backend).pids();
        assert!(
            new_pids.iter().all(|pid| !old_pids.contains(pid)),
            "{old_pids:?} {new_pids:?}"
        );
        for endpoint in &endpoints {
            hello(backend, endpoint);
        }

        // Restarting a running server works too.
        servers.restart(backend).unwrap();
        assert_ne!(servers.info(backend).pids(), new_pids);
    }
    let pids = all_pids(&servers);
    drop(servers);
    assert!(pids.into_iter().all(gone));
}

#[test]
fn a_restart_onto_a_taken_port_fails_with_the_servers_own_words() {
    let mut servers = Servers::start_private(&StartOptions::default()).unwrap();
    let Some(Endpoint::Tcp(addr)) = servers.endpoint(Backend::Redis, Transport::Tcp) else {
        panic!("no TCP endpoint")
    };
    servers.stop(Backend::Redis).unwrap();
    let squatter = std::net::TcpListener::bind(&addr).unwrap();
    match servers.restart(Backend::Redis) {
        Err(Error::NotReady {
            backend: Backend::Redis,
            reason,
            log_tail,
            ..
        }) => {
            assert!(reason.contains("exited early"), "{reason}");
            assert!(log_tail.contains("Address already in use"), "{log_tail}");
        }
        other => panic!("expected NotReady, got {other:?}"),
    }
    assert!(!servers.is_alive(Backend::Redis));
    drop(squatter);
    servers.restart(Backend::Redis).unwrap();
    hello(
        Backend::Redis,
        &servers.endpoint(Backend::Redis, Transport::Tcp).unwrap(),
    );
}

#[test]
fn a_server_that_exits_at_once_is_not_ready() {
    let env = env_of(&[("REDIS_SERVER_BIN", "/bin/false")]);
    let err = Servers::start_with_env(&StartOptions::default(), &env).unwrap_err();
    match err {
        Error::NotReady {
            backend: Backend::Redis,
            reason,
            ..
        } => {
            assert!(reason.contains("exited early"), "{reason}")
        }
        other => panic!("expected NotReady, got {other:?}"),
    }
}

/// A stand-in server that logs a line and then never answers.
const SILENT_SERVER: &str = "#!/bin/sh
[ \"$1\" = --probe ] && exit 0
echo \"silent server pid $$\" >&2
exec sleep 60
";

#[test]
fn a_server_that_never_answers_times_out_and_is_killed() {
    let scratch = tempfile::tempdir().unwrap();
    let program = scratch.path().join("silent-server");
    std::fs::write(&program, SILENT_SERVER).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test thread may have forked while the file was open for writing; exec fails with
    // ETXTBSY until that child has exec'd too. Wait for a clean run before the real one.
    while let Err(err) = Command::new(&program).arg("--probe").status() {
        assert_eq!(err.raw_os_error(), Some(libc::ETXTBSY), "{err}");
        thread::sleep(Duration::from_millis(10));
    }

    let options = StartOptions {
        startup_timeout: Duration::from_millis(500),
        ..StartOptions::default()
    };
    let env = env_of(&[("MEMCACHED_BIN", program.to_str().unwrap())]);
    let started = Instant::now();
    let err = Servers::start_with_env(&options, &env).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let Error::NotReady {
        backend: Backend::Memcached,
        reason,
        log_tail,
        ..
    } = &err
    else {
        panic!("expected NotReady, got {err:?}")
    };
    assert!(reason.contains("no answer within 500ms"), "{reason}");
    let pid: u32 = log_tail
        .trim()
        .strip_prefix("silent server pid ")
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("log tail {log_tail:?}"));
    assert!(gone(pid), "the silent server {pid} was left running");
    assert!(
        err.to_string().contains("silent server pid"),
        "the message carries the log: {err}"
    );
}

/// The PR_SET_PDEATHSIG pitfall: the signal follows the *thread* that forked. Servers started
/// on a thread that then ends must keep running.
#[test]
fn servers_outlive_the_thread_that_started_them() {
    let servers = thread::spawn(|| Servers::start_private(&StartOptions::default()).unwrap())
        .join()
        .unwrap();
    thread::sleep(Duration::from_millis(300));
    for backend in BACKENDS {
        assert!(
            servers.is_alive(backend),
            "{backend} died with its starting thread"
        );
        hello(backend, &servers.endpoint(backend, Transport::Tcp).unwrap());
    }
}

// --- Clean-up when the process ends: each case re-runs this test binary as a child. ---

const CHILD_MODE_VAR: &str = "KVBENCH_SERVERS_TEST_CHILD";

/// The child's side: start servers, report pids and directory, then end as `mode` says.
fn child_main(mode: &str) {
    let servers = Servers::start_private(&StartOptions::default()).unwrap();
    let pids: Vec<String> = all_pids(&servers).iter().map(u32::to_string).collect();
    println!("KVBENCH-PIDS {}", pids.join(" "));
    println!("KVBENCH-DIR {}", servers.dir().unwrap().display());
    match mode {
        "wait" => {
            thread::sleep(Duration::from_secs(60));
            panic!("no signal arrived within 60 s");
        }
        "panic" => panic!("deliberate panic with servers running"),
        "forget" => std::mem::forget(servers),
        other => panic!("unknown child mode {other}"),
    }
}

struct ChildRun {
    status: ExitStatus,
    pids: Vec<u32>,
    dir: PathBuf,
}

/// Re-runs `test` (this very test) in a child process in `mode`, sends `signal` once it has
/// reported its servers, and waits for it to exit.
fn run_child(test: &str, mode: &str, signal: Option<libc::c_int>) -> ChildRun {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture"])
        .env(CHILD_MODE_VAR, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let stderr_text = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });

    let (mut pids, mut dir) = (None, None);
    while pids.is_none() || dir.is_none() {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(30)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "child reported no servers; stderr:\n{}",
                stderr_text.join().unwrap()
            );
        };
        if let Some(list) = line.strip_prefix("KVBENCH-PIDS ") {
            pids = Some(
                list.split(' ')
                    .map(|pid| pid.parse().unwrap())
                    .collect::<Vec<u32>>(),
            );
        } else if let Some(path) = line.strip_prefix("KVBENCH-DIR ") {
            dir = Some(PathBuf::from(path));
        }
    }
    if let Some(signal) = signal {
        // SAFETY: kill(2) on our own unreaped child.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "child did not exit; stderr:\n{}",
                stderr_text.join().unwrap()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    ChildRun {
        status,
        pids: pids.unwrap(),
        dir: dir.unwrap(),
    }
}

fn assert_cleaned_up(run: &ChildRun) {
    assert_eq!(run.pids.len(), 3);
    for &pid in &run.pids {
        assert!(gone(pid), "server pid {pid} outlived the child");
    }
    assert!(!run.dir.exists(), "{} left behind", run.dir.display());
}

/// Either plays the child (when re-executed) or runs it and checks the outcome.
fn child_case(test: &str, mode: &str, signal: Option<libc::c_int>) -> Option<ChildRun> {
    if let Ok(mode) = std::env::var(CHILD_MODE_VAR) {
        child_main(&mode);
        return None;
    }
    Some(run_child(test, mode, signal))
}

#[test]
fn sigint_stops_every_server_and_exits_130() {
    if let Some(run) = child_case(
        "sigint_stops_every_server_and_exits_130",
        "wait",
        Some(libc::SIGINT),
    ) {
        assert_eq!(run.status.code(), Some(130), "{:?}", run.status);
        assert_cleaned_up(&run);
    }
}

#[test]
fn sigterm_stops_every_server_and_exits_130() {
    if let Some(run) = child_case(
        "sigterm_stops_every_server_and_exits_130",
        "wait",
        Some(libc::SIGTERM),
    ) {
        assert_eq!(run.status.code(), Some(130), "{:?}", run.status);
        assert_cleaned_up(&run);
    }
}

#[test]
fn a_panic_stops_every_server() {
    if let Some(run) = child_case("a_panic_stops_every_server", "panic", None) {
        assert_eq!(
            run.status.code(),
            Some(101),
            "the child's test fails: {:?}",
            run.status
        );
        assert_cleaned_up(&run);
    }
}

#[test]
fn exit_without_drop_stops_every_server() {
    if let Some(run) = child_case("exit_without_drop_stops_every_server", "forget", None) {
        assert!(run.status.success(), "{:?}", run.status);
        assert_cleaned_up(&run);
    }
}

/// SIGKILL runs none of our code: the kernel's parent-death signal must stop the servers. The
/// directory is the one thing left behind, so this test removes it.
#[test]
fn sigkill_still_leaves_no_server_running() {
    let test = "sigkill_still_leaves_no_server_running";
    if std::env::var_os(CHILD_MODE_VAR).is_none() {
        // The orphaned servers are reparented to the nearest subreaper: make that us, so we can
        // reap them and see what killed them (a container's init may never reap them at all).
        // SAFETY: prctl with integer arguments only.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) }, 0);
    }
    if let Some(run) = child_case(test, "wait", Some(libc::SIGKILL)) {
        assert_eq!(ExitStatusExt::signal(&run.status), Some(libc::SIGKILL));
        for &pid in &run.pids {
            assert_eq!(
                reap_orphan(pid),
                Ok(libc::SIGKILL),
                "how server pid {pid} ended"
            );
        }
        let _ = std::fs::remove_dir_all(&run.dir);
    }
}

/// Waits for the orphan `pid` (reparented to us) to end; returns the signal that killed it.
fn reap_orphan(pid: u32) -> Result<libc::c_int, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut status = 0;
        // SAFETY: waitpid on one pid with a valid status pointer.
        let reaped = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if reaped < 0 {
            return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
        }
        if reaped > 0 {
            return match libc::WIFSIGNALED(status) {
                true => Ok(libc::WTERMSIG(status)),
                false => Err(format!("exited with status {}", libc::WEXITSTATUS(status))),
            };
        }
        if Instant::now() > deadline {
            return Err("still running 5 s after its parent was killed".into());
        }
        thread::sleep(Duration::from_millis(20));
    }
}
