//! Reference connections: how the kit looks at the server without trusting the client under test.
//!
//! A client that writes the wrong bytes and reads them back the same wrong way would pass a kit
//! that only used the client itself. So every check of what the server holds goes through a
//! published library (redis-rs for Redis, `memcache` for memcached) on its own connection.

use kvbench_core::{Backend, Endpoint};

/// A connection to the server, owned by the kit, independent of the client under test.
pub enum Reference {
    /// redis-rs, synchronous.
    Redis(redis::Connection),
    /// The `memcache` crate on the text protocol, and where it is connected. (Its binary
    /// protocol sends a request per key of a multi-get: reading back a 100,000-key pipeline took
    /// 3 s that way, 0.3 s on the text protocol's one `gets` line per 1,000 keys.)
    Memcached(memcache::Client, Endpoint),
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
                let url = match endpoint {
                    Endpoint::Tcp(addr) => format!("redis://{addr}/"),
                    Endpoint::Unix(path) => format!("redis+unix://{}", path.display()),
                };
                let client = redis::Client::open(url).map_err(redis_err)?;
                Ok(Reference::Redis(
                    client.get_connection().map_err(redis_err)?,
                ))
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

    /// Reads many keys in one request; the result is in the order of `keys`.
    pub fn get_many(&mut self, keys: &[Vec<u8>]) -> RefResult<Vec<Option<Vec<u8>>>> {
        match self {
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
            Reference::Redis(con) => redis::cmd("CLIENT")
                .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                .exec(con)
                .map_err(redis_err),
            Reference::Memcached(..) => {
                Err("memcached cannot close its clients' connections".into())
            }
        }
    }

    /// Deletes keys; only the suite's own keys are ever passed here.
    pub fn delete_many(&mut self, keys: &[Vec<u8>]) -> RefResult<()> {
        match self {
            Reference::Redis(con) => {
                for chunk in keys.chunks(1000) {
                    redis::cmd("DEL").arg(chunk).exec(con).map_err(redis_err)?;
                }
                Ok(())
            }
            Reference::Memcached(_, endpoint) => delete_quietly(endpoint, keys)
                .map_err(|err| format!("deleting kit keys from memcached: {err}")),
        }
    }
}

/// Deletes memcached keys in one pass: `delete <key> noreply\r\n` per key, then `version\r\n`,
/// whose reply proves every delete before it was processed. The `memcache` crate would take two
/// round trips per key; cleaning 100,000 keys off an external server that way takes minutes.
fn delete_quietly(endpoint: &Endpoint, keys: &[Vec<u8>]) -> std::io::Result<()> {
    use std::io::{BufRead, BufReader, Write};
    let mut commands = Vec::new();
    for key in keys {
        commands.extend_from_slice(b"delete ");
        commands.extend_from_slice(key);
        commands.extend_from_slice(b" noreply\r\n");
    }
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
