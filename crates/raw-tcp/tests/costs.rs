//! `RawConnection`'s exact costs: a small GET or SET is one `write` and one `read` system call, a
//! GET hit makes at most one allocation (the value) and a miss none ([`kvbench_servers::costs`]).
//! Over TCP for `raw-tcp`, and over a Unix socket for `raw-unix`, which is this same connection
//! type on the other transport. A test binary of its own, because it replaces the global
//! allocator.

use kvbench_core::{Backend, Transport};
use kvbench_raw_tcp::{RawConnection, WriteStrategy::PerCommand};
use kvbench_servers::costs::{CountingAllocator, assert_small_call_costs};
use kvbench_servers::{Servers, StartOptions};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn small_calls_are_one_write_one_read() {
    let servers = Servers::start(&StartOptions::default()).expect("start servers");
    for &transport in Transport::ALL {
        assert_small_call_costs(&servers, Backend::Redis, transport, |socket| {
            RawConnection::new(socket, PerCommand)
        });
    }
}
