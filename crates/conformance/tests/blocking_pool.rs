//! The kit over a pool that exists only in this test: blocking connections of the suite's first
//! hand-written client of each backend, checked out for each call, a connection that an error
//! broke replaced by a new one. Its handles are [`Handle::Blocking`], so the shared-client cases
//! run their callers as threads: the path a library's pool takes, which no client of the suite
//! takes yet.

use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use kvbench_core::{
    Backend, BoxFuture, Client, ClientSpec, Concurrency, Endpoint, Kind, Options, Result,
    SharedClient,
};

/// Connections in the pool.
const CONNECTIONS: usize = 8;

/// The client whose connections the pool holds: chosen by its spec's properties.
fn wrapped(backend: Backend) -> ClientSpec {
    kvbench_clients::all()
        .into_iter()
        .find(|spec| {
            spec.backend == backend
                && spec.kind == Kind::HandWritten
                && matches!(spec.concurrency, Concurrency::Threads)
                && spec.slow_round_trip.is_none()
        })
        .expect("a hand-written client of each backend")
}

/// The idle connections, and how many are open in all (idle or checked out).
struct Pool {
    connect: kvbench_core::ConnectFn,
    endpoint: Endpoint,
    options: Options,
    idle: Mutex<(Vec<Box<dyn Client>>, usize)>,
    returned: Condvar,
}

impl Pool {
    /// Runs one call on a connection of the pool: an idle one, a new one while fewer than
    /// [`CONNECTIONS`] are open, or the next one returned.
    fn with<T>(&self, call: impl FnOnce(&mut dyn Client) -> Result<T>) -> Result<T> {
        let mut client = self.take()?;
        let result = call(&mut *client);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        match &result {
            Err(err) if err.breaks_connection() => idle.1 -= 1,
            _ => idle.0.push(client),
        }
        self.returned.notify_one();
        result
    }

    fn take(&self) -> Result<Box<dyn Client>> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(client) = idle.0.pop() {
                return Ok(client);
            }
            if idle.1 < CONNECTIONS {
                idle.1 += 1;
                drop(idle);
                let opened = (self.connect)(&self.endpoint, &self.options);
                if opened.is_err() {
                    self.idle.lock().unwrap_or_else(PoisonError::into_inner).1 -= 1;
                    self.returned.notify_one();
                }
                return opened;
            }
            idle = self
                .returned
                .wait(idle)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

struct Shared(Arc<Pool>);

impl SharedClient for Shared {
    fn handle(&self) -> kvbench_core::Handle {
        kvbench_core::Handle::Blocking(Box::new(Checkout(Arc::clone(&self.0))))
    }
}

/// A caller's handle: each call checks a connection out.
struct Checkout(Arc<Pool>);

impl Client for Checkout {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.with(|client| client.get(key))
    }
    fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.with(|client| client.set(key, value))
    }
    fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> Result<()> {
        self.0.with(|client| client.set_ex(key, value, ttl_secs))
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool> {
        self.0.with(|client| client.delete(key))
    }
    fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.0.with(|client| client.set_many(items))
    }
    // The optional operations, each on one checked-out connection: a transaction's commands
    // then go out on a connection no other caller holds.
    fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.0.with(|client| client.get_many_pipelined(keys))
    }
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        self.0.with(|client| client.incr(key))
    }
    fn get_many(&mut self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.0.with(|client| client.get_many(keys))
    }
    fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<()> {
        self.0.with(|client| client.hset_many(key, fields))
    }
    fn hgetall(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.0.with(|client| client.hgetall(key))
    }
    fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> Result<()> {
        self.0.with(|client| client.transaction(items))
    }
}

fn open<'a>(
    backend: Backend,
    endpoint: &'a Endpoint,
    options: &'a Options,
) -> BoxFuture<'a, Box<dyn SharedClient>> {
    let pool = Pool {
        connect: wrapped(backend).connect,
        endpoint: endpoint.clone(),
        options: options.clone(),
        idle: Mutex::new((Vec::new(), 0)),
        returned: Condvar::new(),
    };
    Box::pin(async move { Ok(Box::new(Shared(Arc::new(pool))) as Box<dyn SharedClient>) })
}

fn open_redis<'a>(
    endpoint: &'a Endpoint,
    options: &'a Options,
    _connections: usize,
) -> BoxFuture<'a, Box<dyn SharedClient>> {
    open(Backend::Redis, endpoint, options)
}

fn open_memcached<'a>(
    endpoint: &'a Endpoint,
    options: &'a Options,
    _connections: usize,
) -> BoxFuture<'a, Box<dyn SharedClient>> {
    open(Backend::Memcached, endpoint, options)
}

/// The pool's spec: the wrapped client's declarations (its optional operations among them: the
/// handles forward every call), with a name and a concurrency model of its own, and no role of
/// the wrapped one.
fn pool_spec(backend: Backend) -> ClientSpec {
    let (name, connect): (_, kvbench_core::ConnectSharedFn) = match backend {
        Backend::Redis => ("test-only/pool/redis", open_redis),
        Backend::Memcached => ("test-only/pool/memcached", open_memcached),
        Backend::RedisCluster => unreachable!("the test pools single servers' clients"),
    };

    ClientSpec {
        name,
        summary: "a test-only pool of a hand-written client's blocking connections",
        loopback_floor: false,
        connect_async: None,
        concurrency: Concurrency::Pool {
            connections: CONNECTIONS,
            connect,
        },
        ..wrapped(backend)
    }
}

fn main() -> ExitCode {
    kvbench_conformance::kit::run(&[pool_spec(Backend::Redis), pool_spec(Backend::Memcached)])
}
