//! How a client is driven through a cell: the workload, the timed operation, and the clients
//! whose spec has an async face (`ClientSpec::connect_async`) run natively on a runtime of their
//! own.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kvbench_core::{AsyncClient, Backend, Client, ClientSpec, Endpoint, Error, Options, Result};
use tokio::runtime::Runtime;

use crate::matrix::{Cell, Op, SET_EX_TTL};

/// The keys and bytes of one cell, prepared once before anything is timed.
#[derive(Clone)]
pub struct Workload {
    /// The cell.
    pub cell: Cell,
    /// The key every operation uses (with the run prefix on an external server).
    pub key: Vec<u8>,
    /// The value a GET expects or a SET writes.
    pub value: Vec<u8>,
}

impl Workload {
    /// The workload of `cell`; keys are built with `key` (the servers' run prefix).
    pub fn new(cell: Cell, key: impl Fn(&[u8]) -> Vec<u8>) -> Workload {
        let (name, value) = match cell.op {
            // The seed of the original benchmarks: foo = bar.
            Op::Get if cell.value_size == 3 => (b"foo".to_vec(), b"bar".to_vec()),
            Op::Get => (
                format!("value:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::GetMiss => (b"missing".to_vec(), Vec::new()),
            Op::Set => (
                format!("set:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::SetEx => (
                format!("setex:{}", cell.value_size).into_bytes(),
                value(cell.value_size),
            ),
            Op::PipelineSet => (b"foo".to_vec(), b"bar".to_vec()),
        };
        Workload {
            cell,
            key: key(&name),
            value,
        }
    }

    /// The items of one pipelined call: `pipeline` times (key, value).
    pub fn items(&self) -> Vec<(&[u8], &[u8])> {
        match self.cell.op {
            Op::PipelineSet => vec![(&self.key[..], &self.value[..]); self.cell.pipeline],
            _ => Vec::new(),
        }
    }
}

fn value(len: usize) -> Vec<u8> {
    if len == 3 {
        b"bar".to_vec()
    } else {
        kvbench_conformance::patterned_value(len)
    }
}

/// A GET that answers with the wrong length is a wrong client, even inside the timed loop.
fn check_hit(got: Option<Vec<u8>>, want: usize) -> Result<()> {
    match got {
        Some(value) if value.len() == want => {
            black_box(value);
            Ok(())
        }
        Some(value) => Err(Error::Protocol(format!(
            "GET returned {} bytes, want {want}",
            value.len()
        ))),
        None => Err(Error::Protocol(
            "GET returned a miss for a key that holds a value".into(),
        )),
    }
}

/// The timed operation, through the synchronous contract.
pub fn run_sync(client: &mut dyn Client, w: &Workload, items: &[(&[u8], &[u8])]) -> Result<()> {
    match w.cell.op {
        Op::Get => check_hit(client.get(&w.key)?, w.value.len()),
        Op::GetMiss => match client.get(&w.key)? {
            None => Ok(()),
            Some(_) => Err(Error::Protocol(
                "GET of a missing key returned a value".into(),
            )),
        },
        Op::Set => client.set(&w.key, &w.value),
        Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL),
        Op::PipelineSet => client.set_many(items),
    }
}

/// The timed operation, natively async.
pub async fn run_async(
    client: &mut dyn AsyncClient,
    w: &Workload,
    items: &[(&[u8], &[u8])],
) -> Result<()> {
    match w.cell.op {
        Op::Get => check_hit(client.get(&w.key).await?, w.value.len()),
        Op::GetMiss => match client.get(&w.key).await? {
            None => Ok(()),
            Some(_) => Err(Error::Protocol(
                "GET of a missing key returned a value".into(),
            )),
        },
        Op::Set => client.set(&w.key, &w.value).await,
        Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL).await,
        Op::PipelineSet => client.set_many(items).await,
    }
}

/// An async client with the runtime it runs on: a current-thread runtime, so every task of
/// the library runs on the benchmark's own (pinned) thread and obeys the placement setting.
pub struct AsyncDriver {
    /// The runtime; criterion's `to_async` blocks on it.
    pub runtime: Runtime,
    /// The client's natively async face.
    pub inner: Box<dyn AsyncClient>,
}

// Every operation, the optional ones included: the client's own refuse as they would.
kvbench_core::impl_client_by_blocking_on!(
    AsyncDriver;
    get_many_pipelined, incr, get_many, hash, transaction
);

/// A connected client of either kind.
pub enum Driver {
    /// Through the synchronous contract.
    Sync(Box<dyn Client>),
    /// Natively async.
    Async(AsyncDriver),
}

impl Driver {
    /// Connects `spec` to `endpoint`: natively async where the spec has an async face.
    pub fn connect(spec: &ClientSpec, endpoint: &Endpoint, options: &Options) -> Result<Driver> {
        let Some(connect_async) = spec.connect_async else {
            return Ok(Driver::Sync((spec.connect)(endpoint, options)?));
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Io)?;
        let client = runtime.block_on(connect_async(endpoint, options))?;
        Ok(Driver::Async(AsyncDriver {
            runtime,
            inner: client,
        }))
    }

    /// The driver through the synchronous contract (for verification).
    pub fn client(&mut self) -> &mut dyn Client {
        match self {
            Driver::Sync(client) => client.as_mut(),
            Driver::Async(driver) => driver,
        }
    }

    /// Runs the timed operation `n` times, natively (async clients inside one `block_on`),
    /// calling `each` with the duration of every operation.
    pub fn run_n(
        &mut self,
        w: &Workload,
        items: &[(&[u8], &[u8])],
        n: u64,
        each: &mut dyn FnMut(Duration),
    ) -> Result<()> {
        match self {
            Driver::Sync(client) => {
                for _ in 0..n {
                    let start = Instant::now();
                    run_sync(client.as_mut(), w, items)?;
                    each(start.elapsed());
                }
                Ok(())
            }
            Driver::Async(AsyncDriver {
                runtime,
                inner: client,
            }) => runtime.block_on(async {
                for _ in 0..n {
                    let start = Instant::now();
                    run_async(&mut **client, w, items).await?;
                    each(start.elapsed());
                }
                Ok(())
            }),
        }
    }
}

/// Which backend a cell's clients must speak.
pub fn serves(spec: &ClientSpec, cell: &Cell) -> bool {
    spec.backend == cell.backend && spec.supports(cell.transport)
}

/// True for memcached cells (they have no TTL command to verify SET EX with).
pub fn is_memcached(cell: &Cell) -> bool {
    cell.backend == Backend::Memcached
}
