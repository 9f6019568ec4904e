use std::process::ExitCode;

use clap::Parser;
use conduit::cli::{Cli, Command, DbAction, NetworkArgs, UserAction};
use conduit::config::Settings;
use conduit::startup::{Application, ServeOptions};
use conduit::{db, telemetry};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The sandbox's own steps run before anything of the service (no settings, no logging, no
    // runtime: `sandbox-net` forks, which wants this process to have one thread).
    match cli.command {
        Some(Command::SandboxExec { tcp_ports, command }) => {
            let (program, args) = command.split_first().map(|(p, a)| (p.as_str(), a)).unwrap_or(("", &[]));
            ExitCode::from(conduit::sandbox::netlock::limit_tcp_and_exec(&tcp_ports, program, args))
        }
        Some(Command::SandboxNet { network: NetworkArgs { pasta, tcp, udp }, join, bwrap }) => {
            let launch = conduit::sandbox::network::Launch { pasta, tcp, udp, join, bwrap };
            ExitCode::from(conduit::sandbox::network::launch(launch))
        }
        Some(Command::Keeper) => ExitCode::from(conduit::keeper::start::run()),
        Some(Command::SandboxNetWarden { network: NetworkArgs { pasta, tcp, udp } }) => {
            let ports = conduit::sandbox::network::Ports { tcp, udp };
            ExitCode::from(conduit::sandbox::network::warden(&pasta, &ports))
        }
        _ => actix_web::rt::System::new().block_on(service(cli)),
    }
}

async fn service(cli: Cli) -> ExitCode {
    conduit::process::return_large_blocks_to_the_system();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("conduit: {e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(&settings.log_level, settings.log_format, settings.redaction.in_flight());

    let outcome = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            if let Err(e) = conduit::process::avoid_huge_page_stalls() {
                tracing::debug!(error = %e, "transparent huge pages stay on");
            }
            match conduit::process::raise_open_file_limit() {
                Ok(n) => tracing::debug!(open_files = n, "open-file limit"),
                Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
            }
            // Orphaned tool processes are re-parented to the service, so none outlives its session.
            let subreaper = match conduit::process::become_subreaper() {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot become a child subreaper; detached tool processes may outlive sessions");
                    false
                }
            };
            let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
            let first_user = match conduit::accounts::NewUser::from_env(&env) {
                Ok(user) => user.map(std::sync::Arc::new),
                Err(e) => {
                    eprintln!("conduit: {e}");
                    return ExitCode::from(2);
                }
            };
            serve(settings, ServeOptions { insecure: cli.insecure, subreaper, first_user, launcher: None }).await
        }
        Command::Migrate => migrate(&settings).await,
        Command::Db { action: DbAction::Reset { yes } } => reset(&settings, yes).await,
        Command::Redact { all } => redact(&settings, all).await,
        Command::User { action: UserAction::Add { name } } => user_add(&settings, &name).await,
        Command::SandboxExec { .. }
        | Command::SandboxNet { .. }
        | Command::SandboxNetWarden { .. }
        | Command::Keeper => Ok(()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("conduit: {message}");
            ExitCode::from(1)
        }
    }
}

async fn serve(settings: Settings, options: ServeOptions) -> Result<(), String> {
    let host = settings.host.clone();
    let scheme = if settings.tls.is_some() { "https" } else { "http" };
    let app = Application::build(settings, options).await.map_err(|e| e.to_string())?;
    // On stdout, for people and scripts (with port 0 this is how they learn the port).
    println!("conduit listening on {scheme}://{host}:{}", app.port());
    app.run_until_stopped().await.map_err(|e| format!("server error: {e}"))
}

async fn migrate(settings: &Settings) -> Result<(), String> {
    maintain(settings, false).await
}

async fn reset(settings: &Settings, yes: bool) -> Result<(), String> {
    if !yes {
        return Err(format!("refusing to erase {} without --yes (nothing was changed)", settings.database));
    }
    maintain(settings, true).await
}

/// `conduit redact --all`: every stored row without its secrets, and a report of what changed.
async fn redact(settings: &Settings, all: bool) -> Result<(), String> {
    if !all {
        return Err("say what to redact: --all (every stored row; nothing was changed)".to_string());
    }
    let store = db::Store::open_blocking(settings.database.clone(), 1, settings.db_busy_timeout_ms)
        .await
        .map_err(|e| e.to_string())?;
    let report = store.run(db::redaction::redact_all).await.map_err(|e| e.to_string())?;
    for table in &report.tables {
        println!("{}: {} row(s) read, {} changed", table.table, table.rows_read, table.rows_changed);
    }
    let total: u64 = report.redacted.values().sum();
    println!("redacted {total} secret(s) in {}", settings.database);
    for (kind, n) in &report.redacted {
        println!("  {kind}: {n}");
    }
    if report.file_rewritten == Some(false) {
        println!("the file was not rewritten (the service was using it): old bytes may remain in its free space; run again once it is stopped");
    }
    Ok(())
}

/// Migrates the database (after erasing it, with `erase`), holding its lock throughout: never
/// under a running service's feet (that one holds the lock, and this refuses, naming it).
async fn maintain(settings: &Settings, erase: bool) -> Result<(), String> {
    let (path, database, timeout) = (settings.db_path.clone(), settings.database.clone(), settings.db_busy_timeout_ms);
    let applied = tokio::task::spawn_blocking(move || {
        let _lock = db::lock::InstanceLock::acquire(&path).map_err(|e| e.to_string())?;
        match &database {
            db::Database::Sqlite(path) => {
                if erase {
                    erase_sqlite(path)?;
                }
                let mut conn = db::open_sqlite(path, timeout).map_err(|e| e.to_string())?;
                db::run_migrations(&mut conn).map_err(|e| e.to_string())
            }
            db::Database::Postgres(url) => {
                let _claim = db::claim::PostgresClaim::acquire(url, timeout).map_err(|e| e.to_string())?;
                let mut conn = db::backend::open_postgres(url, timeout).map_err(|e| e.to_string())?;
                if erase {
                    let reverted = db::backend::revert_all(&mut conn).map_err(|e| e.to_string())?;
                    println!("erased {database}: reverted {} migration(s)", reverted.len());
                }
                db::migrate(&mut db::DbConnection::Pg(conn)).map_err(|e| e.to_string())
            }
        }
    })
    .await
    .map_err(|e| e.to_string())??;
    if applied.is_empty() {
        println!("database {} is up to date", settings.database);
    } else {
        println!("applied {} migration(s) to {}: {}", applied.len(), settings.database, applied.join(", "));
    }
    Ok(())
}

/// Deletes a SQLite database with its WAL and shared-memory files.
fn erase_sqlite(path: &std::path::Path) -> Result<(), String> {
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove {}: {e}", file.display())),
        }
    }
    println!("erased {}", path.display());
    Ok(())
}

/// `conduit user add NAME`: the password is the first line of standard input. While a service
/// runs on the database it has migrated it, and the user is simply added beside it.
async fn user_add(settings: &Settings, name: &str) -> Result<(), String> {
    let mut line = String::new();
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprint!("password for {name} (shown as typed): ");
    }
    std::io::stdin().read_line(&mut line).map_err(|e| format!("cannot read the password from standard input: {e}"))?;
    let password = line.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(&line);
    let user = conduit::accounts::NewUser::new(name, password).map_err(|e| e.to_string())?;
    let (path, database, timeout) = (settings.db_path.clone(), settings.database.clone(), settings.db_busy_timeout_ms);
    let added = tokio::task::spawn_blocking(move || {
        let lock = db::lock::InstanceLock::acquire(&path);
        let mut conn = database.connect(timeout).map_err(|e| e.to_string())?;
        // Migrations only under the lock, never under a running service's feet.
        if lock.is_ok() || database.is_postgres() {
            db::migrate(&mut conn).map_err(|e| e.to_string())?;
        }
        conduit::accounts::add(&mut conn, &user).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())??;
    println!("user {} added to {}", added.name, settings.database);
    Ok(())
}
