//! Reference connections: how the kit looks at the server without trusting the client under test.
//!
//! A client that writes the wrong bytes and reads them back the same wrong way would pass a kit
//! that only used the client itself. So every check of what the server holds goes through a
//! published library (redis-rs for Redis, `memcache` for memcached) on its own connection.

use kvbench_core::{Backend, Endpoint};
use redis::ConnectionLike;

/// A connection to the server, owned by the kit, independent of the client under test.
pub enum Reference {
    /// redis-rs, synchronous: a plain connection, or its cluster client for a Redis Cluster.
    Redis(RedisConnection),
    /// The `memcache` crate on the text protocol, and where it is connected. (Its binary
    /// protocol sends a request per key of a multi-get: reading back a 100,000-key pipeline took
    /// 3 s that way, 0.3 s on the text protocol's one `gets` line per 1,000 keys.)
    Memcached(memcache::Client, Endpoint),
}

/// The kit's own Redis connection: to one server, or through redis-rs's cluster client to a
/// Redis Cluster. Either way it is a redis-rs [`ConnectionLike`], so each command is written once.
pub enum RedisConnection {
    /// One server.
    Single(redis::Connection),
    /// A Redis Cluster, each command routed by redis-rs.
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl RedisConnection {
    /// Runs an admin command (`INFO`, `CLIENT KILL`) on the one server, or on every primary of
    /// the cluster; each one's reply as text (empty for a status).
    fn on_each_node(&mut self, cmd: &redis::Cmd) -> RefResult<Vec<String>> {
        use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
        let text = |value: redis::Value| match value {
            redis::Value::Okay | redis::Value::Nil => Ok(String::new()),
            value => redis::from_redis_value::<String>(value).map_err(|err| err.to_string()),
        };
        match self {
            RedisConnection::Single(con) => Ok(vec![text(cmd.query(con).map_err(redis_err)?)?]),
            RedisConnection::Cluster(con) => {
                let all = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                match con.route_command(cmd, all).map_err(redis_err)? {
                    redis::Value::Map(replies) => {
                        replies.into_iter().map(|(_, v)| text(v)).collect()
                    }
                    value => Ok(vec![text(value)?]),
                }
            }
        }
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        self.inner().req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.inner().req_packed_commands(cmd, offset, count)
    }

    fn req_command(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<redis::Value> {
        self.inner().req_command(cmd)
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConnection::Single(con) => con.get_db(),
            RedisConnection::Cluster(con) => con.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        match self {
            RedisConnection::Single(con) => con.supports_pipelining(),
            RedisConnection::Cluster(con) => con.supports_pipelining(),
        }
    }

    fn check_connection(&mut self) -> bool {
        self.inner().check_connection()
    }

    fn is_open(&self) -> bool {
        match self {
            RedisConnection::Single(con) => con.is_open(),
            RedisConnection::Cluster(con) => con.is_open(),
        }
    }
}

impl RedisConnection {
    fn inner(&mut self) -> &mut dyn ConnectionLike {
        match self {
            RedisConnection::Single(con) => con,
            RedisConnection::Cluster(con) => &mut **con,
        }
    }
}

/// Why a reference operation failed; these are failures of the test environment, not the client.
pub type RefResult<T> = Result<T, String>;

fn redis_err(err: redis::RedisError) -> String {
    format!("reference redis connection: {err}")
}

fn mc_err(err: memcache::MemcacheError) -> String {
    format!("reference memcache connection: {err}")
}

fn mc_key(key: &[u8]) -> RefResult<&str> {
    std::str::from_utf8(key).map_err(|_| "kit keys are ASCII".to_string())
}

impl Reference {
    /// Opens a reference connection to `endpoint`.
    pub fn connect(backend: Backend, endpoint: &Endpoint) -> RefResult<Reference> {
        match backend {
            Backend::Redis => {
                let client = redis::Client::open(endpoint.redis_url()).map_err(redis_err)?;
                let con = client.get_connection().map_err(redis_err)?;
                Ok(Reference::Redis(RedisConnection::Single(con)))
            }
            Backend::RedisCluster => {
                // redis-rs's own routing (slot map, MOVED/ASK, multi-key commands split by slot),
                // not the routing of any client under test.
                let client = redis::cluster::ClusterClient::new(vec![endpoint.redis_url()])
                    .map_err(redis_err)?;
                let con = client.get_connection().map_err(redis_err)?;
                Ok(Reference::Redis(RedisConnection::Cluster(Box::new(con))))
            }
            Backend::Memcached => {
                let url = match endpoint {
                    Endpoint::Tcp(addr) => format!("memcache://{addr}?protocol=ascii"),
                    Endpoint::Unix(path) => format!("memcache://{}?protocol=ascii", path.display()),
                };
                // One connection, not tested on every checkout: the crate's default pool sends
                // `version` before each operation, which doubles the time of reading back a
                // million-key pipeline.
                let url = memcache::Url::parse(&url).map_err(|err| format!("{url}: {err}"))?;
                let pool = memcache::Pool::builder()
                    .max_size(1)
                    .test_on_check_out(false)
                    .build(memcache::ConnectionManager::new(url))
                    .map_err(|err| mc_err(err.into()))?;
                let client = memcache::Client::with_pool(pool).map_err(mc_err)?;
                Ok(Reference::Memcached(client, endpoint.clone()))
            }
        }
    }

    /// Reads one key.
    pub fn get(&mut self, key: &[u8]) -> RefResult<Option<Vec<u8>>> {
        match self {
            Reference::Redis(con) => redis::cmd("GET").arg(key).query(con).map_err(redis_err),
            Reference::Memcached(client, _) => client.get(mc_key(key)?).map_err(mc_err),
        }
    }

    /// Reads many keys in one request (a cluster: one pipeline of `GET`s, see
    /// [`Reference::delete_many`]); the result is in the order of `keys`.
    pub fn get_many(&mut self, keys: &[Vec<u8>]) -> RefResult<Vec<Option<Vec<u8>>>> {
        match self {
            Reference::Redis(RedisConnection::Cluster(con)) => {
                let mut gets = redis::cluster::cluster_pipe();
                keys.iter().for_each(|key| _ = gets.cmd("GET").arg(key));
                gets.query(con).map_err(redis_err)
            }
            Reference::Redis(con) => redis::cmd("MGET").arg(keys).query(con).map_err(redis_err),
            Reference::Memcached(client, _) => {
                let names = keys
                    .iter()
                    .map(|k| mc_key(k))
                    .collect::<RefResult<Vec<_>>>()?;
                let mut found = client.gets::<Vec<u8>>(&names).map_err(mc_err)?;
                Ok(names.iter().map(|name| found.remove(*name)).collect())
            }
        }
    }

    /// Stores one value.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> RefResult<()> {
        match self {
            Reference::Redis(con) => redis::cmd("SET")
                .arg(key)
                .arg(value)
                .exec(con)
                .map_err(redis_err),
            Reference::Memcached(client, _) => client.set(mc_key(key)?, value, 0).map_err(mc_err),
        }
    }

    /// Stores many values with few round trips: Redis `MSET`, 1,000 items a command (a
    /// cluster: one pipeline of `SET`s, see [`Reference::delete_many`]); memcached one pass of
    /// `set … noreply` closed by `version`, as [`Reference::delete_many`] deletes.
    pub fn set_many(&mut self, items: &[(Vec<u8>, Vec<u8>)]) -> RefResult<()> {
        match self {
            Reference::Redis(RedisConnection::Cluster(con)) => {
                let mut sets = redis::cluster::cluster_pipe();
                (items.iter()).for_each(|(key, value)| _ = sets.cmd("SET").arg(key).arg(value));
                sets.query(con).map_err(redis_err)
            }
            Reference::Redis(con) => {
                for chunk in items.chunks(1000) {
                    let mut mset = redis::cmd("MSET");
                    for (key, value) in chunk {
                        mset.arg(key).arg(value);
                    }
                    mset.exec(con).map_err(redis_err)?;
                }
                Ok(())
            }
            Reference::Memcached(_, endpoint) => {
                let mut commands = Vec::new();
                for (key, value) in items {
                    commands.extend_from_slice(b"set ");
                    commands.extend_from_slice(key);
                    commands
                        .extend_from_slice(format!(" 0 0 {} noreply\r\n", value.len()).as_bytes());
                    commands.extend_from_slice(value);
                    commands.extend_from_slice(b"\r\n");
                }
                send_quietly(endpoint, commands)
                    .map_err(|err| format!("storing kit keys in memcached: {err}"))
            }
        }
    }

    /// True if the key exists, whatever it holds.
    pub fn exists(&mut self, key: &[u8]) -> RefResult<bool> {
        match self {
            Reference::Redis(con) => redis::cmd("EXISTS").arg(key).query(con).map_err(redis_err),
            Reference::Memcached(..) => Ok(self.get(key)?.is_some()),
        }
    }

    /// Stores fields of the Redis hash at `key` (`HSET`).
    pub fn hset(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> RefResult<()> {
        match self {
            Reference::Redis(con) => {
                let mut hset = redis::cmd("HSET");
                hset.arg(key);
                for (field, value) in fields {
                    hset.arg(field).arg(value);
                }
                hset.exec(con).map_err(redis_err)
            }
            Reference::Memcached(..) => Err("memcached has no hashes".into()),
        }
    }

    /// Every field of the Redis hash at `key` (`HGETALL`), in the server's order.
    pub fn hgetall(&mut self, key: &[u8]) -> RefResult<Vec<(Vec<u8>, Vec<u8>)>> {
        match self {
            Reference::Redis(con) => redis::cmd("HGETALL").arg(key).query(con).map_err(redis_err),
            Reference::Memcached(..) => Err("memcached has no hashes".into()),
        }
    }

    /// How many times the Redis server has run `command` successfully since it started
    /// (`INFO commandstats`; 0 if never).
    pub fn command_calls(&mut self, command: &str) -> RefResult<u64> {
        let Reference::Redis(con) = self else {
            return Err("memcached keeps no per-command counts".into());
        };
        let mut info = redis::cmd("INFO");
        info.arg("commandstats");
        let prefix = format!("cmdstat_{}:calls=", command.to_ascii_lowercase());
        // On a cluster, the sum over every primary.
        let mut total = 0;
        for info in con.on_each_node(&info)? {
            let Some(line) = info.lines().find_map(|line| line.strip_prefix(&prefix)) else {
                continue;
            };
            let calls = line.split(',').next().unwrap_or_default();
            total += calls
                .parse::<u64>()
                .map_err(|_| format!("INFO commandstats: {prefix}{line:?} is not a count"))?;
        }
        Ok(total)
    }

    /// Seconds to live of a Redis key (`TTL`): -2 missing, -1 no expiry.
    pub fn ttl(&mut self, key: &[u8]) -> RefResult<i64> {
        match self {
            Reference::Redis(con) => redis::cmd("TTL").arg(key).query(con).map_err(redis_err),
            Reference::Memcached(..) => Err("memcached has no TTL command".into()),
        }
    }

    /// Makes `key` hold a Redis list, so that `GET key` is a WRONGTYPE error.
    pub fn make_list(&mut self, key: &[u8]) -> RefResult<()> {
        match self {
            Reference::Redis(con) => redis::cmd("RPUSH")
                .arg(key)
                .arg("x")
                .exec(con)
                .map_err(redis_err),
            Reference::Memcached(..) => Err("memcached has no lists".into()),
        }
    }

    /// Makes a Redis server close the connection of every normal client but this one
    /// (`CLIENT KILL TYPE normal SKIPME yes`). Only for a server of the caller's own: every
    /// other client of it loses its connection.
    pub fn kill_other_clients(&mut self) -> RefResult<()> {
        match self {
            Reference::Redis(con) => {
                let mut kill = redis::cmd("CLIENT");
                kill.arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"]);
                con.on_each_node(&kill).map(drop)
            }
            Reference::Memcached(..) => {
                Err("memcached cannot close its clients' connections".into())
            }
        }
    }

    /// Deletes keys; only the suite's own keys are ever passed here. On a cluster, the keys go
    /// in one pipeline, which redis-rs splits by node: it splits a `DEL` (or `MGET`) of many keys
    /// by slot instead, a round trip per slot, and reading back and deleting 100,000 keys took
    /// about 15 s that way in a debug build, against about 3 s in pipelines.
    pub fn delete_many(&mut self, keys: &[Vec<u8>]) -> RefResult<()> {
        match self {
            Reference::Redis(RedisConnection::Cluster(con)) => {
                let mut dels = redis::cluster::cluster_pipe();
                keys.iter().for_each(|key| _ = dels.cmd("DEL").arg(key));
                dels.query(con).map_err(redis_err)
            }
            Reference::Redis(con) => {
                for chunk in keys.chunks(1000) {
                    redis::cmd("DEL").arg(chunk).exec(con).map_err(redis_err)?;
                }
                Ok(())
            }
            Reference::Memcached(_, endpoint) => {
                let mut commands = Vec::new();
                for key in keys {
                    commands.extend_from_slice(b"delete ");
                    commands.extend_from_slice(key);
                    commands.extend_from_slice(b" noreply\r\n");
                }
                send_quietly(endpoint, commands)
                    .map_err(|err| format!("deleting kit keys from memcached: {err}"))
            }
        }
    }
}

/// Sends memcached `noreply` commands in one pass, then `version\r\n`, whose reply proves every
/// command before it was processed. The `memcache` crate would take a round trip per key (two
/// for a delete); cleaning 100,000 keys off an external server that way takes minutes.
fn send_quietly(endpoint: &Endpoint, mut commands: Vec<u8>) -> std::io::Result<()> {
    use std::io::{BufRead, BufReader, Write};
    commands.extend_from_slice(b"version\r\n");
    let timeout = Some(std::time::Duration::from_secs(30));
    let mut line = String::new();
    match endpoint {
        Endpoint::Tcp(addr) => {
            let mut stream = std::net::TcpStream::connect(addr)?;
            stream.set_read_timeout(timeout)?;
            stream.write_all(&commands)?;
            BufReader::new(stream).read_line(&mut line)?;
        }
        Endpoint::Unix(path) => {
            let mut stream = std::os::unix::net::UnixStream::connect(path)?;
            stream.set_read_timeout(timeout)?;
            stream.write_all(&commands)?;
            BufReader::new(stream).read_line(&mut line)?;
        }
    }
    if line.starts_with("VERSION") {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("unexpected reply {line:?}")))
    }
}
