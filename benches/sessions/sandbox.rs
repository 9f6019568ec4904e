//! The sandbox's cost at launch: POST-to-idle of a session in a sandboxed project (`workspace`:
//! bubblewrap, its own network through pasta) against one in a project with `sandbox: off`,
//! interleaved, medians of N. Twice: launches 300 ms apart, as a service's launches come (the
//! network made ahead of time is ready: `actors::network_pool`), and back to back (none is:
//! each launch waits for pasta to start).

use serde_json::{json, Value};

use super::{median, ms, Bench};

async fn project(bench: &Bench, name: &str, sandbox: &str) -> String {
    let folder = bench._service.dir.path().join(name);
    std::fs::create_dir_all(&folder).expect("project folder");
    let res = bench
        .client
        .post(format!("{}/api/projects", bench.base))
        .json(&json!({"name": name, "folder_path": name, "sandbox": sandbox}))
        .send()
        .await
        .expect("create project");
    let v: Value = res.json().await.expect("json");
    v["id"].as_str().unwrap_or_else(|| panic!("project {name}: {v}")).to_string()
}

pub async fn sandbox_overhead(bench: &Bench, n: usize) {
    let (fenced, bare) = (project(bench, "p-fenced", "workspace").await, project(bench, "p-bare", "off").await);
    for _ in 0..3 {
        bench.launch_to_idle_in(&fenced).await;
        bench.launch_to_idle_in(&bare).await;
    }
    for (pause, how) in [(300, "300 ms apart: a network made ahead of time"), (0, "back to back: each makes its own network")] {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..n {
            tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            with.push(bench.launch_to_idle_in(&fenced).await);
            without.push(bench.launch_to_idle_in(&bare).await);
        }
        let (w, b) = (median(with), median(without));
        println!(
            "sandbox ({how}): POST-to-idle median {:.2} ms sandboxed (workspace: bubblewrap, own network) vs {:.2} ms with sandbox off: {:.2} ms added, ratio {:.2}x (target: <= 10 ms added)",
            ms(w),
            ms(b),
            ms(w.saturating_sub(b)),
            w.as_secs_f64() / b.as_secs_f64()
        );
    }
}
