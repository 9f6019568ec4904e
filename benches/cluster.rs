//! Cluster benchmarks: `scripts/bench.sh cluster` (PostgreSQL only: bench.sh runs it under
//! scripts/with-postgres.sh, a throwaway server with fsync on). Three `conduit serve` nodes on
//! one database, on 127.0.0.1, driving the fake CLI; every figure next to a baseline measured in
//! the same run, as a ratio:
//!
//! 1. Cross-node event latency (cluster/latency.rs): 20 sessions on node A, the fake CLI
//!    writing 1,000 events/s in all with its write time stamped in each line (as in
//!    benches/streams.rs); one WebSocket subscriber per session on node B and, at the same time
//!    on the same events, one on node A (the same-node baseline). Median and p99 from the CLI's
//!    write to receipt (also per second of the run), the events lost, out of order or
//!    duplicated on each side, and the nodes' CPU meanwhile. Target: p99 <= 20 ms cross-node,
//!    nothing lost.
//! 2. Many sessions (cluster/launches.rs): N fake-CLI sessions launched (POST until idle, 16 in
//!    flight) asked of the three nodes in turn and placed by the cluster, against the same N
//!    launched on a single service (cluster mode off, its own database on the same server) in
//!    the same run, the two taking turns in rounds of N / 4. The machine is one: the three nodes share its two cores, so the ratio shows
//!    what placement, forwarding and the cluster's bookkeeping cost, not what more machines
//!    would add. And memory per idle session per node: each node's RSS growth (after a warm-up,
//!    until all are idle) over the sessions it owns, against the single service's. A refused
//!    launch is not retried: it is counted and reported with its answer.
//!
//! Sizes: BENCH_CLUSTER_SESSIONS (default 1000), BENCH_CLUSTER_CONCURRENCY (default 16),
//! BENCH_CLUSTER_ROUNDS (default 4), BENCH_CLUSTER_LATENCY_SESSIONS (default 20),
//! BENCH_CLUSTER_RATE (events/s over all of them, default 1000), BENCH_CLUSTER_SECONDS (default
//! 10). BENCH_PARTS: latency, launches (default both). BENCH_CLUSTER_BACKLOG=1 also samples node A's write backlog (its health) during the
//! latency run, to tell A's storage lag from the relay's: off by default, as it slows A a little.

mod common;
#[path = "cluster/latency.rs"]
mod latency;
#[path = "cluster/launches.rs"]
mod launches;
#[path = "cluster/node.rs"]
mod node;

use common::env_usize;

fn main() {
    // `cargo test --all-targets` runs this binary without --bench: nothing to do there.
    if !std::env::args().any(|a| a == "--bench") {
        println!("cluster benchmark: skipped (run it with scripts/bench.sh cluster)");
        return;
    }
    if common::database::postgres_server().is_none() {
        eprintln!(
            "cluster benchmark: cluster mode needs PostgreSQL, and CONDUIT_TEST_POSTGRES_URL is not set; run it with scripts/bench.sh cluster (it starts a throwaway server with scripts/with-postgres.sh)"
        );
        std::process::exit(2);
    }
    let sessions = env_usize("BENCH_CLUSTER_SESSIONS", 1000).max(1);
    let concurrency = env_usize("BENCH_CLUSTER_CONCURRENCY", 16).max(1);
    let latency_sessions = env_usize("BENCH_CLUSTER_LATENCY_SESSIONS", 20).max(1);
    let rate = env_usize("BENCH_CLUSTER_RATE", 1000).max(1) as u64;
    let seconds = env_usize("BENCH_CLUSTER_SECONDS", 10).max(1) as u64;
    let parts = std::env::var("BENCH_PARTS").unwrap_or_default();
    let part = |name: &str| parts.is_empty() || parts.split(',').any(|p| p.trim() == name);
    let _ = conduit::process::raise_open_file_limit();
    // The clients on two threads; each node in its own process. The nodes are started from
    // this (the main) thread: see node.rs.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let cluster = node::Cluster::start(sessions + latency_sessions + 50).await;
        println!("cluster: nodes a, b, c on one PostgreSQL database ({})", cluster.nodes[0].base);
        if part("latency") {
            let backlog = env_usize("BENCH_CLUSTER_BACKLOG", 0) == 1;
            latency::cross_node(&cluster, latency_sessions, rate, seconds, backlog).await;
        }
        if part("launches") {
            let rounds = env_usize("BENCH_CLUSTER_ROUNDS", 4);
            launches::compare(&cluster, sessions, concurrency, rounds).await;
        }
    });
}
