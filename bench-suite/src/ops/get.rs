//! GET of a key that holds a value of the cell's size ([`Op::Get`]), and of a key that does not
//! exist ([`Op::GetMiss`]).

use std::hint::black_box;

use anyhow::{Result as AnyResult, bail};
use kvbench_conformance::Reference;
use kvbench_core::{AsyncClient, Backend, Client, Error, Result};

use super::{Exchange, Facts, ItemNames, MemaslapWork, value_of_size, words};
use crate::baselines::{PrepareKey, REDIS_BENCHMARK_KEY, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{CLUSTER_GET_KEYS, Cell, Op, size_label};
use crate::verify::{Checked, Verification, expect};

pub(super) struct Get;

impl Facts for Get {
    fn id_size(cell: &Cell) -> String {
        match cell.op {
            Op::GetMiss => "none".to_string(),
            _ => size_label(cell.value_size),
        }
    }

    fn key_and_value(cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        match cell.op {
            Op::GetMiss => (b"missing".to_vec(), Vec::new()),
            // The seed of the original benchmarks: foo = bar.
            _ if cell.value_size == 3 => (b"foo".to_vec(), b"bar".to_vec()),
            _ => (
                format!("value:{}", cell.value_size).into_bytes(),
                value_of_size(cell.value_size),
            ),
        }
    }

    /// A cluster's keys are spread over its nodes: each call reads the next of several keys, so
    /// that every node serves some of the calls.
    fn item_names(cell: &Cell) -> Option<ItemNames> {
        (cell.op == Op::Get && cell.backend == Backend::RedisCluster).then(|| ItemNames {
            stem: "spread".to_string(),
            count: CLUSTER_GET_KEYS,
            are_keys: true,
        })
    }

    fn prepare(reference: &mut Reference, w: &Workload) -> std::result::Result<(), String> {
        match w.cell.op {
            Op::GetMiss => reference.delete_many(std::slice::from_ref(&w.key)),
            _ if w.names.is_empty() => reference.set(&w.key, &w.value),
            _ => (w.names.iter().zip(&w.values))
                .try_for_each(|(key, value)| reference.set(key, value)),
        }
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, args: &Args) -> Result<()> {
        match w.cell.op {
            Op::GetMiss => miss(client.get(&w.key)?),
            _ => check_hit(client.get(args.get_key(w))?, w.value.len()),
        }
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, args: &Args<'_>) -> Result<()> {
        match w.cell.op {
            Op::GetMiss => miss(client.get(&w.key).await?),
            _ => check_hit(client.get(args.get_key(w)).await?, w.value.len()),
        }
    }

    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        if w.cell.op == Op::GetMiss {
            let got = v.timed(|client| client.get(&w.key)).map_err(Ok)?;
            return expect(got, None, "GET of a missing key").map_err(Err);
        }
        if w.names.is_empty() {
            let got = v.timed(|client| client.get(&w.key)).map_err(Ok)?;
            return expect(got, Some(&w.value), "GET").map_err(Err);
        }
        // A cluster's GET cell reads its keys in turn: each must hold its own value.
        for (key, value) in w.names.iter().zip(&w.values) {
            let got = v.timed(|client| client.get(key)).map_err(Ok)?;
            expect(got, Some(value), "GET").map_err(Err)?;
        }
        v.took /= w.names.len() as u32;
        Ok(())
    }

    const HAS_FLOOR: bool = true;

    fn floor_exchange(w: &Workload) -> AnyResult<Exchange> {
        let hit = w.cell.op == Op::Get;
        let mut request = Vec::new();
        let mut reply = Vec::new();
        match w.cell.backend {
            Backend::Redis => {
                kvbench_resp::encode_command(&mut request, &[b"GET", &w.key[..]]);
                let value = hit.then(|| w.value.clone());
                kvbench_resp::encode_reply(&mut reply, &kvbench_resp::Reply::Bulk(value));
            }
            Backend::RedisCluster => bail!("the loopback floor is a single server's"),
            Backend::Memcached => {
                request.extend_from_slice(&[b"get ", &w.key[..], b"\r\n"].concat());
                if hit {
                    let len = w.value.len().to_string();
                    reply.extend_from_slice(
                        &[b"VALUE ", &w.key[..], b" 0 ", len.as_bytes(), b"\r\n"].concat(),
                    );
                    reply.extend_from_slice(&w.value);
                    reply.extend_from_slice(b"\r\n");
                }
                reply.extend_from_slice(b"END\r\n");
            }
        }
        Ok(Exchange {
            request_len: request.len(),
            reply,
        })
    }

    fn redis_benchmark(
        w: &Workload,
        prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        let size = w.cell.value_size.to_string();
        Ok(match w.cell.op {
            Op::GetMiss => {
                prepare(REDIS_BENCHMARK_KEY, None)?;
                RedisBenchmarkCommands::one(words(&["-t", "get"]), "")
            }
            // In cluster mode it puts a hash tag of each node's into its key: a run of SETs
            // fills those keys, then the GETs run (the row is the last line, GET's).
            _ if w.cell.backend == Backend::RedisCluster => RedisBenchmarkCommands::one(
                words(&["-t", "set,get", "-d", &size]),
                "in cluster mode, after SETs that fill its keys (one per node); the row is the \
                 GETs'",
            ),
            // It reads its fixed key: fill it with a value of the cell's size first.
            _ => {
                prepare(
                    REDIS_BENCHMARK_KEY,
                    Some("x".repeat(w.cell.value_size).as_bytes()),
                )?;
                RedisBenchmarkCommands::one(words(&["-t", "get"]), "")
            }
        })
    }

    fn memaslap(cell: &Cell) -> Option<MemaslapWork> {
        (cell.op == Op::Get).then(|| MemaslapWork {
            gets: true,
            keys_per_request: 1,
            described: "GETs of keys it preloaded".to_string(),
        })
    }
}

/// A GET that answers with the wrong length is a wrong client, even inside the timed loop.
pub(super) fn check_hit(got: Option<Vec<u8>>, want: usize) -> Result<()> {
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

fn miss(got: Option<Vec<u8>>) -> Result<()> {
    match got {
        None => Ok(()),
        Some(_) => Err(Error::Protocol(
            "GET of a missing key returned a value".into(),
        )),
    }
}
