//! Command injection: a key holding CR, LF, CRLF, a space or a NUL (and, for memcached, a
//! 251-byte key) must never make a client send a command nobody asked for. One test per client,
//! against real private servers, with every operation (`set`, `get`, `set_ex`, `set_many`,
//! `delete`).
//!
//! A client may do one of two safe things with such a key, and the test accepts either:
//! - **refuse it** with `Error::InvalidInput` before sending (`inline`, whose separators are
//!   in-band; `memcached-text`, whose keys are fields on a command line). Then the server must
//!   have run no command at all.
//! - **carry it** as one literal key (the multi-bulk RESP clients, which length-prefix every
//!   argument: `raw-*`, `buffered`). Then each operation must have run exactly its own one
//!   command, and the key must be stored under its exact bytes, its harmless-looking prefix
//!   (`inj:a`) not created.
//!
//! What ran is counted on the server: Redis's `INFO commandstats` (calls per command) and
//! memcached's `stats` (`cmd_get`, `cmd_set`, `cmd_flush`, ...), read on independent connections
//! before and after each operation. The tests run one at a time so that the counts are exact,
//! and each prints its row of the table.
//!
//! `crates/inline/tests/server.rs` and `crates/memcached-text/tests/memcached.rs` test their
//! refusals in more depth (quotes, tabs, DEL, the exact refusal message); this file is the one
//! table across every client.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use kvbench_core::{Backend, Client, ClientSpec, Endpoint, Error, Options, Transport};
use kvbench_servers::{Servers, StartOptions};
use libtest_mimic::{Arguments, Failed, Trial};

/// A key that is harmless only if it stays one key.
struct HostileKey {
    name: &'static str,
    key: Vec<u8>,
}

fn hostile_keys(backend: Backend) -> Vec<HostileKey> {
    let injected: &[u8] = match backend {
        Backend::Redis | Backend::RedisCluster => b"FLUSHALL",
        Backend::Memcached => b"flush_all",
    };
    let with = |name, separator: &[u8]| HostileKey {
        name,
        key: [PREFIX, separator, injected].concat(),
    };
    let mut keys = vec![
        with("cr", b"\r"),
        with("lf", b"\n"),
        with("crlf", b"\r\n"),
        with("space", b" "),
        with("nul", b"\0"),
    ];
    if backend == Backend::Memcached {
        // memcached's KEY_MAX_LENGTH is 250: the server would answer CLIENT_ERROR and then read
        // the rest of the line, or the data block, as commands.
        keys.push(HostileKey {
            name: "251_bytes",
            key: vec![b'k'; 251],
        });
    }
    keys
}

/// The part of every hostile key before its separator: it must never become a key of its own.
const PREFIX: &[u8] = b"inj:a";

/// Stored before the tests; a flush would remove it.
const CANARY: (&[u8], &[u8]) = (b"inj:canary", b"alive");

/// The five operations, and the command each may run on the server when it carries the key.
#[derive(Debug, Clone, Copy)]
enum Op {
    Set,
    Get,
    SetEx,
    SetMany,
    Delete,
}

impl Op {
    const ALL: [Op; 5] = [Op::Set, Op::Get, Op::SetEx, Op::SetMany, Op::Delete];

    /// What the server may count for this operation (one of these, once).
    fn allowed(self, backend: Backend) -> &'static [&'static str] {
        match (backend, self) {
            // A library may say SETEX or MSET where the hand-written clients say SET.
            (Backend::Redis | Backend::RedisCluster, Op::Set) => &["set"],
            (Backend::Redis | Backend::RedisCluster, Op::SetEx) => &["set", "setex"],
            (Backend::Redis | Backend::RedisCluster, Op::SetMany) => &["set", "mset"],
            (Backend::Redis | Backend::RedisCluster, Op::Get) => &["get"],
            (Backend::Redis | Backend::RedisCluster, Op::Delete) => &["del"],
            (Backend::Memcached, Op::Set | Op::SetEx | Op::SetMany) => &["cmd_set"],
            (Backend::Memcached, Op::Get) => &["cmd_get"],
            (Backend::Memcached, Op::Delete) => &["delete_hits"],
        }
    }

    fn run(self, client: &mut dyn Client, key: &[u8], value: &[u8]) -> Result<String, Error> {
        match self {
            Op::Set => client.set(key, value).map(|()| "stored".into()),
            Op::Get => client.get(key).map(|got| match got {
                Some(got) if got == value => "read back".into(),
                other => format!("read back {other:?}"),
            }),
            Op::SetEx => client.set_ex(key, value, 100).map(|()| "stored".into()),
            Op::SetMany => client.set_many(&[(key, value)]).map(|()| "stored".into()),
            Op::Delete => client
                .delete(key)
                .map(|existed| format!("deleted: {existed}")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What the server counted
// ---------------------------------------------------------------------------------------------

/// Counters read from the server: calls per command (Redis), or `stats` fields (memcached).
type Counters = BTreeMap<String, u64>;

fn redis_counters(reference: &mut redis::Connection) -> Counters {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(reference)
        .expect("INFO commandstats");
    // cmdstat_set:calls=3,usec=12,...
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
            // Our own INFO calls are not the client's doing.
            if name == "info" {
                return None;
            }
            Some((name.to_string(), calls.parse().ok()?))
        })
        .collect()
}

/// memcached's counters of commands and of what they did.
const MEMCACHED_COUNTERS: &[&str] = &[
    "cmd_get",
    "cmd_set",
    "cmd_flush",
    "cmd_touch",
    "get_hits",
    "get_misses",
    "delete_hits",
    "delete_misses",
    "incr_hits",
    "incr_misses",
    "decr_hits",
    "decr_misses",
    "cas_hits",
    "cas_misses",
    "touch_hits",
    "touch_misses",
];

fn memcached_counters(addr: &str) -> Counters {
    let mut stream = TcpStream::connect(addr).expect("memcached stats connection");
    stream.write_all(b"stats\r\n").expect("send stats");
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.ends_with(b"END\r\n") {
        let n = stream.read(&mut buf).expect("read stats");
        assert!(n > 0, "memcached closed the stats connection");
        reply.extend_from_slice(&buf[..n]);
    }
    // STAT cmd_get 12
    String::from_utf8_lossy(&reply)
        .lines()
        .filter_map(|line| {
            let mut fields = line.strip_prefix("STAT ")?.split(' ');
            let (name, value) = (fields.next()?, fields.next()?);
            if !MEMCACHED_COUNTERS.contains(&name) {
                return None;
            }
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The counters that moved, and by how much.
fn delta(before: &Counters, after: &Counters) -> Counters {
    after
        .iter()
        .filter_map(|(name, &now)| {
            let moved = now - before.get(name).copied().unwrap_or(0);
            (moved > 0).then(|| (name.clone(), moved))
        })
        .collect()
}

/// Independent views of the servers under test.
struct Reference {
    redis: redis::Connection,
    memcached_addr: String,
}

impl Reference {
    fn connect(servers: &Servers) -> Reference {
        let Some(Endpoint::Tcp(redis_addr)) = servers.endpoint(Backend::Redis, Transport::Tcp)
        else {
            panic!("private redis listens on tcp");
        };
        let Some(Endpoint::Tcp(memcached_addr)) =
            servers.endpoint(Backend::Memcached, Transport::Tcp)
        else {
            panic!("private memcached listens on tcp");
        };
        let redis = redis::Client::open(format!("redis://{redis_addr}/"))
            .and_then(|client| client.get_connection())
            .expect("reference redis connection");
        Reference {
            redis,
            memcached_addr,
        }
    }

    fn counters(&mut self, backend: Backend) -> Counters {
        match backend {
            Backend::Redis => redis_counters(&mut self.redis),
            Backend::Memcached => memcached_counters(&self.memcached_addr),
            Backend::RedisCluster => {
                unreachable!("cluster clients are not in kvbench_clients::all()")
            }
        }
    }

    fn redis_get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        redis::cmd("GET")
            .arg(key)
            .query(&mut self.redis)
            .expect("reference GET")
    }

    fn redis_dbsize(&mut self) -> u64 {
        redis::cmd("DBSIZE").query(&mut self.redis).expect("DBSIZE")
    }
}

// ---------------------------------------------------------------------------------------------
// One client
// ---------------------------------------------------------------------------------------------

/// How a client treated one hostile key.
enum Verdict {
    Refused,
    CarriedLiterally,
}

/// Runs every operation with `key` and checks what the server counted for each. Returns how the
/// client treated the key.
fn try_key(
    client: &mut dyn Client,
    reference: &mut Reference,
    backend: Backend,
    key: &[u8],
) -> Result<Verdict, String> {
    let value: &[u8] = b"injected?";
    let mut verdict = None;
    for op in Op::ALL {
        let before = reference.counters(backend);
        let outcome = op.run(client, key, value);
        let ran = delta(&before, &reference.counters(backend));
        let this = match &outcome {
            Err(Error::InvalidInput(_)) => Verdict::Refused,
            Ok(_) => Verdict::CarriedLiterally,
            Err(other) => return Err(format!("{op:?}: want Ok or InvalidInput, got {other:?}")),
        };
        match (&this, &verdict) {
            (Verdict::Refused, Some(Verdict::CarriedLiterally))
            | (Verdict::CarriedLiterally, Some(Verdict::Refused)) => {
                return Err(format!(
                    "{op:?}: {outcome:?}, unlike the operations before it"
                ));
            }
            _ => {}
        }
        match this {
            Verdict::Refused if !ran.is_empty() => {
                return Err(format!(
                    "{op:?} was refused, yet the server counted {ran:?}"
                ));
            }
            Verdict::CarriedLiterally => {
                let allowed = op.allowed(backend);
                // The command itself, and for memcached the hit it caused (get_hits with
                // cmd_get): nothing else, and only once.
                let extra: Vec<_> = ran
                    .iter()
                    .filter(|(name, _)| {
                        !allowed.contains(&name.as_str()) && name.as_str() != "get_hits"
                    })
                    .collect();
                let commands: u64 = ran
                    .iter()
                    .filter(|(name, _)| allowed.contains(&name.as_str()))
                    .map(|(_, n)| n)
                    .sum();
                if commands != 1 || !extra.is_empty() {
                    return Err(format!(
                        "{op:?} ({outcome:?}): the server counted {ran:?}, want one of {allowed:?} once"
                    ));
                }
                if let Ok(got) = &outcome
                    && got.starts_with("read back ")
                {
                    return Err(format!("{op:?}: {got}, want the value just stored"));
                }
                if backend == Backend::Redis {
                    check_literal_redis(reference, op, key, value)?;
                }
            }
            Verdict::Refused => {}
        }
        verdict = Some(this);
    }
    Ok(verdict.expect("at least one operation"))
}

/// After an operation that carried the key: Redis holds exactly that key (or, after delete, not),
/// and nothing under the key's prefix.
fn check_literal_redis(
    reference: &mut Reference,
    op: Op,
    key: &[u8],
    value: &[u8],
) -> Result<(), String> {
    let stored = reference.redis_get(key);
    let want = match op {
        Op::Delete => None,
        _ => Some(value.to_vec()),
    };
    if stored != want {
        return Err(format!(
            "after {op:?} the server holds {stored:?} under the key, want {want:?}"
        ));
    }
    if reference.redis_get(PREFIX).is_some() {
        return Err(format!(
            "after {op:?} the key's prefix exists as a key of its own"
        ));
    }
    // The canary, and at most the hostile key itself.
    let want_size = if want.is_some() { 2 } else { 1 };
    let size = reference.redis_dbsize();
    if size != want_size {
        return Err(format!("after {op:?} DBSIZE is {size}, want {want_size}"));
    }
    Ok(())
}

fn injection(spec: &ClientSpec, servers: &Servers) -> Result<String, String> {
    let transport = spec.transports[0];
    let endpoint = servers
        .endpoint(spec.backend, transport)
        .ok_or_else(|| format!("no {} server on {transport}", spec.backend))?;
    let mut client =
        (spec.connect)(&endpoint, &Options::default()).map_err(|err| format!("connect: {err}"))?;
    let mut reference = Reference::connect(servers);
    client
        .set(CANARY.0, CANARY.1)
        .map_err(|err| format!("set the canary: {err}"))?;
    let (mut refused, mut carried) = (Vec::new(), Vec::new());
    for hostile in hostile_keys(spec.backend) {
        match try_key(&mut *client, &mut reference, spec.backend, &hostile.key).map_err(|err| {
            format!(
                "key {:?} ({}): {err}",
                hostile.key.escape_ascii().to_string(),
                hostile.name
            )
        })? {
            Verdict::Refused => refused.push(hostile.name),
            Verdict::CarriedLiterally => carried.push(hostile.name),
        }
    }
    match client.get(CANARY.0) {
        Ok(Some(value)) if value == CANARY.1 => {}
        other => return Err(format!("the canary is gone: {other:?}")),
    }
    let mut row = format!("{transport}: ");
    if !refused.is_empty() {
        row += &format!(
            "refused before sending ({}): the server ran nothing",
            refused.join(", ")
        );
    }
    if !carried.is_empty() {
        if !refused.is_empty() {
            row += "; ";
        }
        row += &format!(
            "carried as one literal key ({}): each operation ran exactly its one command",
            carried.join(", ")
        );
    }
    Ok(row)
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    // One at a time: each test reads the servers' counters, which any other test would move.
    args.test_threads = Some(1);
    let servers = match Servers::start_private(&StartOptions::default()) {
        Ok(servers) => Arc::new(servers),
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let rows = Arc::new(Mutex::new(Vec::new()));
    let trials = kvbench_clients::all()
        .into_iter()
        .map(|spec| {
            let (servers, rows) = (Arc::clone(&servers), Arc::clone(&rows));
            Trial::test(format!("{}/injection", spec.name), move || {
                let row = injection(&spec, &servers).map_err(Failed::from)?;
                rows.lock()
                    .unwrap()
                    .push(format!("{:<24} {row}", spec.name));
                Ok(())
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    let rows = std::mem::take(&mut *rows.lock().unwrap());
    if !rows.is_empty() {
        println!("\nKeys with CR, LF, CRLF, space, NUL (memcached: also 251 bytes), per client:");
        for row in rows {
            println!("  {row}");
        }
    }
    // Stop the servers before exiting: `Conclusion::exit` would skip their destructors.
    drop(servers);
    conclusion.exit_code()
}
