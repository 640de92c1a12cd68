//! The nine lessons: the fixed prose of each (question, what the faster side gives up, which
//! code causes the difference) and the rows it compares. Everything here is written once and
//! rendered to Markdown (`docs/lessons.md`, `reports/<run>/lessons.md`) and to the Lessons
//! section of each run's `index.html`. No measured number belongs in this file: numbers come from
//! the run's results.json when the lessons are generated.
//!
//! Prose may use `code` spans; nothing else is interpreted.

use super::source::{CodeRef, Extent};

/// Which of the two runs a row comes from (only lesson 9 uses the second).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The run the lessons are generated from (same-core placement in the reference).
    Main,
    /// The split-placement run (`SPLIT_RUN`, or `<run>/split/`).
    Split,
}

/// One row of results.json, by its coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// Which run.
    pub run: Which,
    /// `redis` or `memcached`.
    pub backend: &'static str,
    /// `get`, `set`, `set_ex`, `pipeline_set`, …
    pub op: &'static str,
    /// Value size in bytes.
    pub size: u64,
    /// Pipeline depth (1 outside pipelines).
    pub pipeline: u64,
    /// `tcp` or `unix`.
    pub transport: &'static str,
    /// Client name as registered.
    pub client: &'static str,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

const fn row(
    backend: &'static str,
    op: &'static str,
    size: u64,
    pipeline: u64,
    transport: &'static str,
    client: &'static str,
) -> Pick {
    Pick {
        run: Which::Main,
        backend,
        op,
        size,
        pipeline,
        transport,
        client,
    }
}

const fn split(pick: Pick) -> Pick {
    Pick {
        run: Which::Split,
        ..pick
    }
}

const fn redis_get(size: u64, transport: &'static str, client: &'static str) -> Pick {
    row("redis", "get", size, 1, transport, client)
}

const fn redis_set_ex(transport: &'static str, client: &'static str) -> Pick {
    row("redis", "set_ex", 100 * KIB, 1, transport, client)
}

const fn pipelined(
    backend: &'static str,
    depth: u64,
    transport: &'static str,
    client: &'static str,
) -> Pick {
    row(backend, "pipeline_set", 3, depth, transport, client)
}

/// Depth 1 of the pipelining lesson: the plain SET of the same 3-byte value.
const fn set3(backend: &'static str, transport: &'static str, client: &'static str) -> Pick {
    row(backend, "set", 3, 1, transport, client)
}

/// A table of a lesson: rows compared side by side; ratios are to the first row.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Caption (prose).
    pub title: &'static str,
    /// The rows, the reference first.
    pub rows: &'static [Pick],
}

/// One trade-off.
#[derive(Debug, Clone, Copy)]
pub struct Lesson {
    /// Stable id: the marker name in docs (`lessons:<id>`) and the HTML anchor.
    pub id: &'static str,
    /// Title.
    pub title: &'static str,
    /// The question the numbers answer.
    pub question: &'static str,
    /// How to read the rows (what is equal, what differs), before the tables.
    pub setup: &'static str,
    /// The comparisons.
    pub tables: &'static [Table],
    /// The code that causes the difference.
    pub code: &'static [CodeRef],
    /// What the faster side gives up.
    pub gives_up: &'static str,
}

const RAW_TCP: &str = "crates/raw-tcp/src/lib.rs";
const RAW_UNIX: &str = "crates/raw-unix/src/lib.rs";
const CORE: &str = "crates/core/src/lib.rs";
const BUFFERED: &str = "crates/buffered/src/lib.rs";
const INLINE: &str = "crates/inline/src/lib.rs";
const RESP: &str = "crates/resp/src/lib.rs";
const MEMCACHED_TEXT: &str = "crates/memcached-text/src/lib.rs";
const LIB_REDIS: &str = "crates/lib-redis/src/lib.rs";
const LIB_FRED: &str = "crates/lib-fred/src/lib.rs";
const LIB_MEMCACHE: &str = "crates/lib-memcache/src/lib.rs";

/// `raw-tcp`'s `get` (the shared `RawConnection`, also `raw-unix`'s).
const RAW_GET: CodeRef = CodeRef {
    path: "crates/resp/src/blocking.rs",
    anchors: &["Client for Connection", "fn get("],
    extent: Extent::Item,
    what: "`raw-tcp` and `raw-unix`: one write, one read of the header, the bulk read straight into a `Vec` of the announced size",
};

/// `memcached-text`'s `get`.
const TEXT_GET: CodeRef = CodeRef {
    path: MEMCACHED_TEXT,
    anchors: &["Client for TextClient", "fn get("],
    extent: Extent::Item,
    what: "`memcached-text`: the key checked, `get <key>\\r\\n` in one write, the `VALUE … END` reply read by its byte count",
};

/// The nine lessons, in reading order.
pub const LESSONS: &[Lesson] = &[
    Lesson {
        id: "1-transport",
        title: "TCP vs Unix socket",
        question: "What does the TCP/IP stack cost on a loopback round trip, when nothing else changes?",
        setup: "`raw-unix` contains no protocol code: it hands a `UnixStream` to `raw-tcp`'s own \
                `RawConnection`. Same buffers, same single write per command, same parser; only the \
                socket differs. The loopback floor (a server thread answering a canned reply) shows \
                the transport alone, and `memcached-text` shows the same client on both transports. \
                The floor's CPU/op is higher than `raw-tcp`'s because its server thread runs inside \
                the measured process: its CPU time counts both ends of the socket, a real server's \
                does not.",
        tables: &[
            Table {
                title: "Redis GET 3 B",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    redis_get(3, "unix", "raw-unix"),
                ],
            },
            Table {
                title: "Redis GET 1 MiB",
                rows: &[
                    redis_get(MIB, "tcp", "raw-tcp"),
                    redis_get(MIB, "unix", "raw-unix"),
                ],
            },
            Table {
                title: "One client on both transports: memcached GET 3 B",
                rows: &[
                    row("memcached", "get", 3, 1, "tcp", "memcached-text"),
                    row("memcached", "get", 3, 1, "unix", "memcached-text"),
                ],
            },
            Table {
                title: "The transport alone: loopback floor, Redis GET 3 B",
                rows: &[
                    redis_get(3, "tcp", "loopback-floor"),
                    redis_get(3, "unix", "loopback-floor"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: RAW_UNIX,
                anchors: &["pub fn connect_unix("],
                extent: Extent::Item,
                what: "all of `raw-unix`: connect a `UnixStream`, wrap it in `raw-tcp`'s `RawConnection`",
            },
            CodeRef {
                path: RAW_TCP,
                anchors: &["pub fn connect_tcp("],
                extent: Extent::Item,
                what: "`raw-tcp`: the same `RawConnection` over a `TcpStream`",
            },
            CodeRef {
                path: CORE,
                anchors: &["pub fn connect_tcp_stream("],
                extent: Extent::Item,
                what: "the TCP socket set-up: `TCP_NODELAY` and timeouts, nothing else",
            },
        ],
        gives_up: "Reach. A Unix socket exists only inside one machine's kernel, so the Unix numbers \
                   say nothing about a client on another host; there, TCP's cost is paid and the \
                   wire's latency is added to it. Access control becomes file permissions (the \
                   suite's sockets are `0700` in a private folder) instead of addresses and ports.",
    },
    Lesson {
        id: "2-writes",
        title: "One write per command vs one write per token, with and without TCP_NODELAY",
        question: "What happens when a command leaves in several small writes instead of one, and \
                   what has Nagle's algorithm to do with it?",
        setup: "Four configurations of the same `raw-tcp` connection: `raw-tcp` (one write per \
                command, `TCP_NODELAY` on), `raw-tcp/nagle` (one write per command, Nagle on), \
                `raw-tcp/per-token` (one write per protocol token, `TCP_NODELAY` on) and \
                `raw-tcp/per-token/nagle` (both). With Nagle on, a small segment waits until the \
                previous one is acknowledged, and the server delays its ACK hoping to piggyback it \
                on a reply that cannot come before the rest of the command.",
        tables: &[
            Table {
                title: "Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    redis_get(3, "tcp", "raw-tcp/nagle"),
                    redis_get(3, "tcp", "raw-tcp/per-token"),
                    redis_get(3, "tcp", "raw-tcp/per-token/nagle"),
                ],
            },
            Table {
                title: "Redis SET EX 100 KiB, TCP",
                rows: &[
                    redis_set_ex("tcp", "raw-tcp"),
                    redis_set_ex("tcp", "raw-tcp/nagle"),
                    redis_set_ex("tcp", "raw-tcp/per-token"),
                    redis_set_ex("tcp", "raw-tcp/per-token/nagle"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: RAW_TCP,
                anchors: &["fn send("],
                extent: Extent::Item,
                what: "the two strategies: encode into one reused buffer and `write_all` once, or one write per token",
            },
            CodeRef {
                path: CORE,
                anchors: &["pub fn connect_tcp_stream(", "set_nodelay("],
                extent: Extent::Line,
                what: "`TCP_NODELAY`, set or not at connect time",
            },
            CodeRef {
                path: RAW_TCP,
                anchors: &["pub const SPEC_PER_TOKEN_NAGLE"],
                extent: Extent::Item,
                what: "the slow combination, marked `slow_round_trip` so the bench keeps it out of pipeline cells",
            },
        ],
        gives_up: "One write per command encodes the whole command into a reused buffer first: every \
                   byte of the value is copied once more (the whole 100 KiB of a SET EX) and the \
                   buffer keeps the size of the largest command sent. Per token, the value goes \
                   straight from the caller's slice, but every token costs a system call (see \
                   syscalls/op), and with Nagle on each command stalls for the delayed ACK: tens of \
                   milliseconds. `TCP_NODELAY` gives up Nagle's coalescing of small writes into \
                   fewer packets: free for a client that writes whole commands, costly on a real \
                   network for one that does not.",
    },
    Lesson {
        id: "3-buffered",
        title: "Buffered pipelining vs raw round trips",
        question: "What does `buffered` buy over `raw-tcp`, with the same codec and the same reply \
                   reader, by putting many commands on the wire before reading the first reply?",
        setup: "`buffered` answers `get`, `set`, `set_ex` and `delete` exactly like `raw-tcp`; only \
                `set_many` differs. `raw-tcp` and `raw-unix` use the contract's default loop, one \
                round trip per item (timed once, not by criterion, at depths of 100,000 and more). \
                The GET table shows the single-command path, where the two should agree.",
        tables: &[
            Table {
                title: "Redis pipelined SET, depth 100k, TCP",
                rows: &[
                    pipelined("redis", 100_000, "tcp", "raw-tcp"),
                    pipelined("redis", 100_000, "tcp", "buffered"),
                ],
            },
            Table {
                title: "Redis pipelined SET, depth 100k, Unix socket",
                rows: &[
                    pipelined("redis", 100_000, "unix", "raw-unix"),
                    pipelined("redis", 100_000, "unix", "buffered"),
                ],
            },
            Table {
                title: "No pipeline possible: Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    redis_get(3, "tcp", "buffered"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: CORE,
                anchors: &["pub trait Client", "fn set_many("],
                extent: Extent::Item,
                what: "what `raw-tcp` uses: the contract's default `set_many`, one `set` and one round trip per item",
            },
            CodeRef {
                path: BUFFERED,
                anchors: &["Client for BufferedConnection", "fn set_many("],
                extent: Extent::Item,
                what: "`buffered`'s override: one chunk is written and read on the calling thread, more go through the pipeline",
            },
            CodeRef {
                path: BUFFERED,
                anchors: &["fn encode_set("],
                extent: Extent::Item,
                what: "SETs appended to one reused 64 KiB chunk: no allocation and no system call per command",
            },
            CodeRef {
                path: BUFFERED,
                anchors: &["fn pipeline<"],
                extent: Extent::Item,
                what: "the writer on the calling thread, a scoped reader thread counting `+OK` replies",
            },
        ],
        gives_up: "Error detail and simplicity. One error reply fails the whole batch with the first \
                   message, reported only after every reply has been drained; the items around it \
                   were stored, and which ones failed is not reported. Replies are counted, not \
                   returned. A batch larger than one chunk starts a reader thread per call. A \
                   `raw-tcp` SET knows its own outcome before the next one is sent.",
    },
    Lesson {
        id: "4-inline",
        title: "Inline vs multi-bulk commands",
        question: "Is the inline command form (`GET foo\\r\\n`, what you type into telnet) any faster \
                   than multi-bulk, and what can it not carry?",
        setup: "`inline` and `raw-tcp`/`raw-unix` differ only in how a request is encoded; replies \
                are read by the same code (`raw-tcp`'s `read_head` over a `ReadBuffer`). Multi-bulk announces every argument's length \
                (`*2\\r\\n$3\\r\\nGET\\r\\n$3\\r\\nfoo\\r\\n`, 22 bytes); inline separates arguments \
                with spaces (`GET foo\\r\\n`, 9 bytes).",
        tables: &[
            Table {
                title: "Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    redis_get(3, "tcp", "inline"),
                ],
            },
            Table {
                title: "Redis GET 3 B, Unix socket",
                rows: &[
                    redis_get(3, "unix", "raw-unix"),
                    redis_get(3, "unix", "inline"),
                ],
            },
            Table {
                title: "Redis SET EX 100 KiB, TCP: more than an inline line can hold",
                rows: &[
                    redis_set_ex("tcp", "raw-tcp"),
                    redis_set_ex("tcp", "inline"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: INLINE,
                anchors: &["pub fn encode_inline("],
                extent: Extent::Item,
                what: "the inline encoder: checks every byte and refuses, before sending anything, what the form cannot carry",
            },
            CodeRef {
                path: INLINE,
                anchors: &["pub fn forbidden("],
                extent: Extent::Item,
                what: "the bytes an inline argument cannot hold, and why",
            },
            CodeRef {
                path: RESP,
                anchors: &["pub fn encode_command("],
                extent: Extent::Item,
                what: "multi-bulk: a length before every argument, so any byte can follow",
            },
        ],
        gives_up: "Inline gives up binary safety: no space, tab, CR, LF, quote or NUL inside a key or \
                   value, no empty argument, and no command line over Redis's 64 KiB inline limit \
                   (`PROTO_INLINE_MAX_SIZE`; the 100 KiB SET EX above is refused before sending). \
                   Sent unchecked, the key `a\\r\\nFLUSHALL` would be two commands and the second would \
                   empty the database: command injection, as with SQL built by string \
                   concatenation. So every argument is scanned before it is sent, and the server \
                   scans every byte to split the line. Multi-bulk gives up a few bytes per command \
                   and the ability to type it by hand.",
    },
    Lesson {
        id: "5-pipelining",
        title: "Pipelining depth: 1, 1k, 100k, 1M",
        question: "How do throughput and CPU time per command change as more commands share one \
                   round trip?",
        setup: "Depth 1 is the plain SET of the same 3-byte value (one command, one reply); the \
                deeper rows are `set_many` batches of 1,000, 100,000 and 1,000,000 SETs. Ratios are \
                to depth 1 of the same client. `redis-benchmark` (the benchmark tool shipped with Redis) runs with `-P <depth>`.",
        tables: &[
            Table {
                title: "`buffered`, Redis, TCP",
                rows: &[
                    set3("redis", "tcp", "buffered"),
                    pipelined("redis", 1_000, "tcp", "buffered"),
                    pipelined("redis", 100_000, "tcp", "buffered"),
                    pipelined("redis", 1_000_000, "tcp", "buffered"),
                ],
            },
            Table {
                title: "`redis-rs`, Redis, TCP",
                rows: &[
                    set3("redis", "tcp", "redis-rs"),
                    pipelined("redis", 1_000, "tcp", "redis-rs"),
                    pipelined("redis", 100_000, "tcp", "redis-rs"),
                    pipelined("redis", 1_000_000, "tcp", "redis-rs"),
                ],
            },
            Table {
                title: "`redis-benchmark` (shipped with Redis; C), Redis, TCP",
                rows: &[
                    set3("redis", "tcp", "redis-benchmark"),
                    pipelined("redis", 1_000, "tcp", "redis-benchmark"),
                    pipelined("redis", 100_000, "tcp", "redis-benchmark"),
                    pipelined("redis", 1_000_000, "tcp", "redis-benchmark"),
                ],
            },
            Table {
                title: "`memcached-text`, memcached, TCP",
                rows: &[
                    set3("memcached", "tcp", "memcached-text"),
                    pipelined("memcached", 1_000, "tcp", "memcached-text"),
                    pipelined("memcached", 100_000, "tcp", "memcached-text"),
                    pipelined("memcached", 1_000_000, "tcp", "memcached-text"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: BUFFERED,
                anchors: &["pub const CHUNK_LEN"],
                extent: Extent::Line,
                what: "`buffered` writes 64 KiB per system call, whatever the depth",
            },
            CodeRef {
                path: LIB_REDIS,
                anchors: &["impl Client for RedisSync", "fn set_many("],
                extent: Extent::Item,
                what: "`redis-rs`: one `pipe()` packed whole in memory, written, then every reply read",
            },
            CodeRef {
                path: MEMCACHED_TEXT,
                anchors: &["Client for TextClient", "fn set_many("],
                extent: Extent::Item,
                what: "`memcached-text`: every key checked first, then chunks written with the previous chunk's replies read in between",
            },
        ],
        gives_up: "Latency and error detail for throughput. No command of a batch is confirmed until \
                   its reply is read, so the first one waits for the whole batch to be written; an \
                   error is reported for the batch. Memory: `redis-rs` packs the whole pipeline \
                   before writing it, the server queues the replies of a batch, and a client that \
                   writes everything before reading can deadlock a server that stops reading when \
                   its output is full: the hand-written pipelines read while they write.",
    },
    Lesson {
        id: "6-libraries",
        title: "Hand-written vs library clients",
        question: "What do the library clients cost next to a hand-written client sending the same \
                   command, and what does that cost buy?",
        setup: "Same cell, same transport, same placement. `redis-rs` is the synchronous \
                `Connection`; `fred` runs natively async on a current-thread tokio runtime. For \
                memcached, `memcache` uses the crate's default pool (a `version` round trip before \
                every operation), `no-check` builds the pool without that test, and `ascii` speaks \
                the text protocol instead of the binary one. CPU/op is split into user time (the \
                client's own code: encoding, parsing, conversions, the runtime) and kernel time \
                (the system calls and loopback delivery, the same for every client that makes the \
                same calls): the user part is what a library's design costs.",
        tables: &[
            Table {
                title: "Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    redis_get(3, "tcp", "redis-rs"),
                    redis_get(3, "tcp", "fred"),
                ],
            },
            Table {
                title: "Redis GET 1 MiB, TCP",
                rows: &[
                    redis_get(MIB, "tcp", "raw-tcp"),
                    redis_get(MIB, "tcp", "redis-rs"),
                    redis_get(MIB, "tcp", "fred"),
                ],
            },
            Table {
                title: "memcached GET 3 B, TCP",
                rows: &[
                    row("memcached", "get", 3, 1, "tcp", "memcached-text"),
                    row("memcached", "get", 3, 1, "tcp", "memcache/ascii/no-check"),
                    row("memcached", "get", 3, 1, "tcp", "memcache/no-check"),
                    row("memcached", "get", 3, 1, "tcp", "memcache"),
                ],
            },
        ],
        code: &[
            RAW_GET,
            CodeRef {
                path: LIB_REDIS,
                anchors: &["impl Client for RedisSync", "fn get("],
                extent: Extent::Item,
                what: "`redis-rs`: a `Cmd` built and packed, the reply parsed into a `Value` tree, then converted to `Option<Vec<u8>>`",
            },
            CodeRef {
                path: LIB_FRED,
                anchors: &["impl AsyncFred", "pub async fn get("],
                extent: Extent::Item,
                what: "`fred`: the command sent to its router task over a channel, the reply checked for UTF-8 and copied",
            },
            CodeRef {
                path: LIB_MEMCACHE,
                anchors: &["test_on_check_out(false)"],
                extent: Extent::Line,
                what: "`memcache/no-check`: the pool setting that removes the `version` round trip before each operation",
            },
        ],
        gives_up: "The hand-written clients give up everything but four commands: no reconnect (a \
                   connection that saw an error refuses further calls), no typed conversions (bytes \
                   in, bytes out), no RESP3, pub/sub, scripts or transactions, no cluster or \
                   sentinel, no pool. `redis-rs` buys typed `FromRedisValue` conversions, RESP3, \
                   pub/sub and scripts, and cluster support behind a feature this suite does not \
                   enable; `fred` buys many concurrent callers on one connection, reconnect \
                   policies (none is set here), cluster and sentinel. `memcache`'s default pool \
                   buys detection of a dead connection, paid with a second round trip per operation.",
    },
    Lesson {
        id: "7-async",
        title: "Sync vs async runtime",
        question: "What does an async runtime cost a single caller: `redis-rs`'s blocking connection, \
                   its multiplexed async connection, and `fred`, in CPU per operation and p99 latency?",
        setup: "The async clients run natively under criterion's `to_async` on a current-thread \
                tokio runtime, on the same pinned CPU as everything else (see \
                `bench-suite/README.md`); CPU/op counts every thread of the process. p99 is from a \
                histogram of single operations.",
        tables: &[
            Table {
                title: "Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "redis-rs"),
                    redis_get(3, "tcp", "redis-rs/async"),
                    redis_get(3, "tcp", "fred"),
                ],
            },
            Table {
                title: "Redis GET 3 B, Unix socket",
                rows: &[
                    redis_get(3, "unix", "redis-rs"),
                    redis_get(3, "unix", "redis-rs/async"),
                    redis_get(3, "unix", "fred"),
                ],
            },
            Table {
                title: "Redis SET EX 100 KiB, TCP",
                rows: &[
                    redis_set_ex("tcp", "redis-rs"),
                    redis_set_ex("tcp", "redis-rs/async"),
                    redis_set_ex("tcp", "fred"),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: LIB_REDIS,
                anchors: &["impl Client for RedisSync", "fn get("],
                extent: Extent::Item,
                what: "sync `redis-rs`: the calling thread writes and blocks in `read`",
            },
            CodeRef {
                path: LIB_REDIS,
                anchors: &["pub async fn connect_async("],
                extent: Extent::Item,
                what: "the multiplexed connection: a driver task, each request handed over a channel, a response timer armed per request",
            },
            CodeRef {
                path: LIB_FRED,
                anchors: &["impl AsyncFred", "pub async fn connect("],
                extent: Extent::Item,
                what: "`fred`: a router task and a reader task spawned by `init()`",
            },
        ],
        gives_up: "The synchronous client gives up concurrency: one caller per connection, and a \
                   blocked thread for every request in flight. The multiplexed connection lets many \
                   tasks share one socket and pipelines their requests; `fred` adds reconnect \
                   policies, cluster and sentinel on top. A single caller uses none of that and \
                   pays for it in task hops, channel sends and timers (CPU/op), and its tail \
                   latency includes the runtime's wake-ups.",
    },
    Lesson {
        id: "8-redis-memcached",
        title: "Redis vs memcached through equivalent clients",
        question: "With clients built alike (one write and one read per command, reused buffers, same \
                   transport, same sizes), how do Redis and memcached compare?",
        setup: "`raw-tcp`/`raw-unix` (RESP) and `memcached-text` (memcached's text protocol) share a \
                cost model: one write per command, one read per small reply, one allocation per \
                returned value. For pipelines, `buffered` and `memcached-text` both write large \
                chunks and read the replies while writing.",
        tables: &[
            Table {
                title: "GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    row("memcached", "get", 3, 1, "tcp", "memcached-text"),
                ],
            },
            Table {
                title: "GET 3 B, Unix socket",
                rows: &[
                    redis_get(3, "unix", "raw-unix"),
                    row("memcached", "get", 3, 1, "unix", "memcached-text"),
                ],
            },
            Table {
                title: "SET with expiry, 100 KiB, TCP",
                rows: &[
                    redis_set_ex("tcp", "raw-tcp"),
                    row("memcached", "set_ex", 100 * KIB, 1, "tcp", "memcached-text"),
                ],
            },
            Table {
                title: "Pipelined SET, depth 100k, TCP",
                rows: &[
                    pipelined("redis", 100_000, "tcp", "buffered"),
                    pipelined("memcached", 100_000, "tcp", "memcached-text"),
                ],
            },
        ],
        code: &[
            RAW_GET,
            TEXT_GET,
            CodeRef {
                path: MEMCACHED_TEXT,
                anchors: &["Client for TextClient", "fn set_many("],
                extent: Extent::Item,
                what: "`memcached-text`'s pipeline: every key checked, then written in chunks, replies read in between",
            },
        ],
        gives_up: "This compares servers and protocols more than clients. memcached's text protocol \
                   gives up keys with spaces or control characters and keys over 250 bytes (refused \
                   before sending: a CR/LF in a key would start another command), and every reply \
                   to a GET echoes the key. memcached gives up Redis's data types, persistence and \
                   replication; Redis executes every command on one thread, which one connection on \
                   one pinned CPU cannot tell apart from memcached's worker threads.",
    },
    Lesson {
        id: "9-placement",
        title: "CPU placement: same core vs split cores",
        question: "How much does it matter, on this 2-vCPU VM, whether client and server share a CPU?",
        setup: "The same rows from two runs: one with the servers and the bench pinned to the same CPU \
                (`PLACEMENT=same-core`, the default) and one with them on different CPUs \
                (`PLACEMENT=split`). On a VM, a request to a server on another virtual CPU must wake \
                that CPU from idle, and the hypervisor does that slowly; pipelines send few \
                requests and so feel it less.",
        tables: &[
            Table {
                title: "`raw-tcp`, Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "raw-tcp"),
                    split(redis_get(3, "tcp", "raw-tcp")),
                ],
            },
            Table {
                title: "`redis-benchmark` (shipped with Redis; C), Redis GET 3 B, TCP",
                rows: &[
                    redis_get(3, "tcp", "redis-benchmark"),
                    split(redis_get(3, "tcp", "redis-benchmark")),
                ],
            },
            Table {
                title: "`buffered`, pipelined SET, depth 100k, TCP",
                rows: &[
                    pipelined("redis", 100_000, "tcp", "buffered"),
                    split(pipelined("redis", 100_000, "tcp", "buffered")),
                ],
            },
        ],
        code: &[
            CodeRef {
                path: "bench-suite/src/matrix.rs",
                anchors: &["impl Placement", "pub fn parse("],
                extent: Extent::Item,
                what: "`PLACEMENT`: same-core pins servers and bench to the last CPU, split moves the bench to CPU 0",
            },
            CodeRef {
                path: "crates/servers/src/lib.rs",
                anchors: &["pub fn pin_current_thread("],
                extent: Extent::Item,
                what: "the pinning itself: `sched_setaffinity` on the calling thread",
            },
        ],
        gives_up: "Same-core gives up parallelism: client and server take turns on one CPU, so work \
                   that could overlap (the server executing while the client encodes the next batch) \
                   does not, and the result is not what two machines would see. Split gives each \
                   side its own CPU but pays the idle CPU's wake-up on every request. Between two \
                   real machines a network round trip is added to every request instead: compare \
                   runs only at equal placement, and read absolute numbers as \"on this machine, \
                   with this placement\".",
    },
];

/// Client crates and the clients each one registers, for the "Measured" table of each crate's
/// README.
pub const CRATES: &[(&str, &[&str])] = &[
    (
        "raw-tcp",
        &[
            "raw-tcp",
            "raw-tcp/nagle",
            "raw-tcp/per-token",
            "raw-tcp/per-token/nagle",
        ],
    ),
    ("raw-unix", &["raw-unix"]),
    ("buffered", &["buffered"]),
    ("inline", &["inline"]),
    ("memcached-text", &["memcached-text"]),
    ("lib-redis", &["redis-rs", "redis-rs/async"]),
    ("lib-fred", &["fred"]),
    (
        "lib-memcache",
        &[
            "memcache",
            "memcache/no-check",
            "memcache/ascii",
            "memcache/ascii/no-check",
        ],
    ),
];

/// The cells a crate's "Measured" table shows, in this order: (op, value size or `None` for
/// any, depth). Those absent from a run are named under the table.
pub const MAIN_CELLS: &[(&str, Option<u64>, u64)] = &[
    ("get", Some(3), 1),
    ("get", Some(MIB), 1),
    ("get_miss", None, 1),
    ("set", Some(3), 1),
    ("set_ex", Some(100 * KIB), 1),
    ("pipeline_set", Some(3), 1_000),
    ("pipeline_set", Some(3), 100_000),
    ("pipeline_set", Some(3), 1_000_000),
];
