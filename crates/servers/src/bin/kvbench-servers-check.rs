//! Starts the servers the suite would use (private, or `REDIS_URL` / `MEMCACHED_URL` /
//! `REDIS_CLUSTER_URL`: a Redis, a memcached and a Redis Cluster), prints what it found, and
//! stops them. `make test` runs it first, so a missing binary fails in a
//! second with the install hint instead of as a panic inside the first test that needs a server.

use std::process::ExitCode;

use kvbench_servers::{Backend, Servers, StartOptions};

fn main() -> ExitCode {
    let options = StartOptions::default();
    let started = Servers::start(&options).and_then(|mut servers| {
        servers.start_cluster(&options)?;
        Ok(servers)
    });
    match started {
        Ok(servers) => {
            for backend in [Backend::Redis, Backend::Memcached, Backend::RedisCluster] {
                let info = servers.info(backend);
                let origin = if info.external { "external" } else { "private" };
                let endpoints: Vec<String> =
                    info.endpoints.iter().map(ToString::to_string).collect();
                println!(
                    "{origin} {backend} {}: {}",
                    info.version,
                    endpoints.join(", ")
                );
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
