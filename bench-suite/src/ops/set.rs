//! SET of a value of the cell's size ([`Op::Set`]), and with a 100 s expiry ([`Op::SetEx`]).

use anyhow::{Result as AnyResult, bail};
use kvbench_core::{AsyncClient, Backend, Client, Result};

use super::{Exchange, Facts, MemaslapWork, value_of_size, words};
use crate::baselines::{PrepareKey, REDIS_BENCHMARK_KEY, RedisBenchmarkCommands};
use crate::drivers::{Args, Workload};
use crate::matrix::{Cell, Op, SET_EX_TTL, size_label};
use crate::verify::{Checked, Verification, expect};

pub(super) struct Set;

impl Facts for Set {
    fn id_size(cell: &Cell) -> String {
        size_label(cell.value_size)
    }

    fn key_and_value(cell: &Cell) -> (Vec<u8>, Vec<u8>) {
        let stem = match cell.op {
            Op::SetEx => "setex",
            _ => "set",
        };
        (
            format!("{stem}:{}", cell.value_size).into_bytes(),
            value_of_size(cell.value_size),
        )
    }

    fn run_sync(client: &mut dyn Client, w: &Workload, _args: &Args) -> Result<()> {
        match w.cell.op {
            Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL),
            _ => client.set(&w.key, &w.value),
        }
    }

    async fn run_async(client: &mut dyn AsyncClient, w: &Workload, _args: &Args<'_>) -> Result<()> {
        match w.cell.op {
            Op::SetEx => client.set_ex(&w.key, &w.value, SET_EX_TTL).await,
            _ => client.set(&w.key, &w.value).await,
        }
    }

    /// The value must be what the reference reads back; after SET EX, a Redis key must also
    /// carry an expiry within the one set (memcached has no command that reads it).
    fn verify(v: &mut Verification<'_>) -> Checked {
        let w = v.w;
        let expiring = w.cell.op == Op::SetEx;
        v.timed(|client| {
            if expiring {
                client.set_ex(&w.key, &w.value, SET_EX_TTL)
            } else {
                client.set(&w.key, &w.value)
            }
        })
        .map_err(Ok)?;
        let reference = &mut *v.reference;
        let what = if expiring {
            "reference GET after SET EX"
        } else {
            "reference GET after SET"
        };
        expect(reference.get(&w.key).map_err(Err)?, Some(&w.value), what).map_err(Err)?;
        if expiring && w.cell.backend == Backend::Redis {
            let ttl = reference.ttl(&w.key).map_err(Err)?;
            if !(1..=i64::from(SET_EX_TTL)).contains(&ttl) {
                return Err(Err(format!("TTL after SET EX {SET_EX_TTL} is {ttl}")));
            }
        }
        Ok(())
    }

    const HAS_FLOOR: bool = true;

    fn floor_exchange(w: &Workload) -> AnyResult<Exchange> {
        let ttl = SET_EX_TTL.to_string();
        let mut request = Vec::new();
        let reply: &[u8] = match w.cell.backend {
            Backend::Redis => {
                let mut args: Vec<&[u8]> = vec![b"SET", &w.key, &w.value];
                if w.cell.op == Op::SetEx {
                    args.extend([&b"EX"[..], ttl.as_bytes()]);
                }
                kvbench_resp::encode_command(&mut request, &args);
                b"+OK\r\n"
            }
            Backend::RedisCluster => bail!("the loopback floor is a single server's"),
            Backend::Memcached => {
                let exptime = if w.cell.op == Op::SetEx {
                    ttl.as_str()
                } else {
                    "0"
                };
                let line = format!(" 0 {exptime} {}\r\n", w.value.len());
                request.extend_from_slice(&[b"set ", &w.key[..], line.as_bytes()].concat());
                request.extend_from_slice(&w.value);
                request.extend_from_slice(b"\r\n");
                b"STORED\r\n"
            }
        };
        Ok(Exchange {
            request_len: request.len(),
            reply: reply.to_vec(),
        })
    }

    fn redis_benchmark(
        w: &Workload,
        _prepare: &mut PrepareKey<'_>,
    ) -> AnyResult<RedisBenchmarkCommands> {
        let size = w.cell.value_size;
        Ok(match w.cell.op {
            Op::SetEx => RedisBenchmarkCommands::one(
                vec![
                    "SET".into(),
                    String::from_utf8_lossy(REDIS_BENCHMARK_KEY).into_owned(),
                    "x".repeat(size),
                    "EX".into(),
                    SET_EX_TTL.to_string(),
                ],
                "",
            ),
            _ => RedisBenchmarkCommands::one(words(&["-t", "set", "-d", &size.to_string()]), ""),
        })
    }

    fn memaslap(cell: &Cell) -> Option<MemaslapWork> {
        (cell.op == Op::Set).then(|| MemaslapWork {
            gets: false,
            keys_per_request: 1,
            described: "SETs only".to_string(),
        })
    }
}
