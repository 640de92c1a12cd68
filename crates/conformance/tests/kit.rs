//! Runs the conformance kit over every client in `kvbench_clients::all()` and every cluster
//! client in `kvbench_clients::cluster()`, one named test per `client/transport/behaviour`,
//! against private servers (or `REDIS_URL` / `MEMCACHED_URL` / `REDIS_CLUSTER_URL`).

fn main() -> std::process::ExitCode {
    let clients = [kvbench_clients::all(), kvbench_clients::cluster()].concat();
    kvbench_conformance::kit::run(&clients)
}
