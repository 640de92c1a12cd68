//! Runs the conformance kit over every client in `kvbench_clients::all()`, one named test per
//! `client/transport/behaviour`, against private servers (or `REDIS_URL` / `MEMCACHED_URL`).

fn main() -> std::process::ExitCode {
    kvbench_conformance::kit::run(&kvbench_clients::all())
}
