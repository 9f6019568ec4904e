//! The sandbox's cost at launch: POST-to-idle of a session in a sandboxed project (`workspace`:
//! bubblewrap, its own network through pasta) against one in a project with `sandbox: off`,
//! interleaved, medians of N, launches 300 ms apart as a service's launches come (a network
//! made ahead of time is then ready: `actors::network_pool`). Then the mechanism alone, spawn
//! to exit of `true`: bubblewrap by itself, with a network made on the spot (what a launch that
//! finds no spare waits for), and joining one made ahead of time.

use serde_json::{json, Value};

use std::os::unix::process::CommandExt;

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
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..n {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        with.push(bench.launch_to_idle_in(&fenced).await);
        without.push(bench.launch_to_idle_in(&bare).await);
    }
    let (w, b) = (median(with), median(without));
    println!(
        "sandbox: POST-to-idle median {:.2} ms sandboxed (workspace: bubblewrap, its own network made ahead of time) vs {:.2} ms with sandbox off: {:.2} ms added, ratio {:.2}x (target: <= 10 ms added)",
        ms(w),
        ms(b),
        ms(w.saturating_sub(b)),
        w.as_secs_f64() / b.as_secs_f64()
    );
    mechanism(n).await;
}

/// Spawn to exit of `true` in the smallest sandbox, three ways, medians of `n`.
async fn mechanism(n: usize) {
    let (Some(bwrap), Some(pasta)) = (resolve("bwrap"), resolve("pasta")) else {
        println!("sandbox mechanism: skipped (bwrap or pasta is not installed)");
        return;
    };
    let launcher = env!("CARGO_BIN_EXE_conduit");
    let trial: Vec<String> = ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--", "true"]
        .map(String::from)
        .into();
    let run = |program: &str, args: Vec<String>| {
        let started = std::time::Instant::now();
        let status = std::process::Command::new(program).args(args).process_group(0).status().expect("runs");
        assert!(status.success(), "{program}: {status}");
        started.elapsed()
    };
    let own = |extra: Vec<String>| {
        let mut args = vec!["sandbox-net".to_string(), "--pasta".to_string(), pasta.clone()];
        args.extend(extra);
        args.push("--".to_string());
        args.push(bwrap.clone());
        args.extend(trial.clone());
        args
    };
    let (mut alone, mut made, mut joined) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        alone.push(run(&bwrap, trial.clone()));
        made.push(run(launcher, own(Vec::new())));
        let mut warden = std::process::Command::new(launcher)
            .args(["sandbox-net-warden", "--pasta", &pasta])
            .process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("a warden");
        let mut line = String::new();
        let stdout = warden.stdout.take().expect("its output");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("ready");
        let holder = line.trim().strip_prefix("ready ").expect("ready <holder>").to_string();
        joined.push(run(launcher, own(vec!["--join".to_string(), holder])));
        drop(warden.stdin.take());
        let _ = warden.wait();
    }
    let (a, m, j) = (median(alone), median(made), median(joined));
    println!(
        "sandbox mechanism (spawn to exit of `true`): bubblewrap alone {:.2} ms; with its own network made on the spot (pasta) {:.2} ms, {:.2} ms added; joining one made ahead of time {:.2} ms, {:.2} ms added",
        ms(a),
        ms(m),
        ms(m.saturating_sub(a)),
        ms(j),
        ms(j.saturating_sub(a))
    );
}

fn resolve(program: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}
