//! The orderly end of a running [`Application`]: the HTTP server stops taking work, every
//! session, agent, terminal and process ends, and what is written is flushed, in that order.

use crate::actors::agents::ShutdownAgents;
use crate::actors::bus::CloseStreams;
use crate::actors::janitor::StopJanitor;
use crate::actors::registry::Shutdown;
use crate::actors::terminal::ShutdownTerminals;
use crate::actors::workbench::ShutdownProcesses;

use super::Application;

impl Application {
    /// Serves until SIGINT/SIGTERM (or the server is stopped through its handle), then stops
    /// accepting work and ends every session (stdin closed, SIGINT to each group, grace,
    /// SIGKILL) with everything written flushed.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let handle = self.server.handle();
        let mut server = actix_web::rt::spawn(self.server);
        // A server stopped through its handle (an embedder) ends the sessions just the same.
        let served = tokio::select! {
            finished = &mut server => {
                tracing::info!("the HTTP server stopped; shutting down");
                Some(finished.unwrap_or_else(|e| Err(std::io::Error::other(e))))
            }
            _ = terminate.recv() => { tracing::info!("SIGTERM received; shutting down"); None }
            _ = interrupt.recv() => { tracing::info!("SIGINT received; shutting down"); None }
        };
        // No idle closes race the shutdown's own.
        if self.janitor.send(StopJanitor).await.is_err() {
            tracing::warn!("the janitor had already stopped");
        }
        let stop_http = async {
            if served.is_none() {
                handle.stop(true).await;
            }
        };
        let end_work = async {
            let ended = tokio::join!(
                self.registry.send(Shutdown(self.on_shutdown)),
                self.agents.send(ShutdownAgents),
                self.terminals.send(ShutdownTerminals),
                self.workbench.send(ShutdownProcesses),
            );
            // Every session's end has been told: the streams end with it, rather than at the
            // HTTP server's timeout, so clients see the service go at once.
            if self.bus.send(CloseStreams).await.is_err() {
                tracing::warn!("the event bus had already stopped");
            }
            ended
        };
        let (_, (ended, agents_ended, terminals_ended, processes_ended)) = tokio::join!(stop_http, end_work);
        if processes_ended.is_err() {
            tracing::error!("the workbench stopped before shutdown");
        }
        if ended.is_err() {
            tracing::error!("the session registry stopped before shutdown");
        }
        if agents_ended.is_err() {
            tracing::error!("the agent registry stopped before shutdown");
        }
        if terminals_ended.is_err() {
            tracing::error!("the terminal registry stopped before shutdown");
        }
        if let Err(e) = self.writer.flush().await {
            tracing::error!(error = %e, "could not flush the last writes");
        }
        match self.audit.send(crate::actors::audit::Flush).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "could not store the last audit rows"),
            Err(_) => tracing::error!("the auditor stopped before shutdown"),
        }
        if let Some(cluster) = &self.cluster {
            if cluster.send(crate::actors::cluster::Leave).await.is_err() {
                tracing::warn!("the cluster membership had already stopped");
            }
        }
        // Every CLI has ended (or was left to its keeper) by now; whatever a failed stop left in
        // a cgroup ends here, and the service's cgroup folder goes with it when nothing was left.
        let kept: std::collections::HashSet<String> =
            ended.as_ref().map(|left| left.iter().map(|id| id.to_string()).collect()).unwrap_or_default();
        if !kept.is_empty() {
            tracing::info!(sessions = kept.len(), "sessions left running under their keepers");
        }
        let (containment, controllers) = (self.containment.clone(), self.controllers.clone());
        let cleared = tokio::task::spawn_blocking(move || {
            let left = containment.root().map_or(0, |root| root.clear_except(&kept));
            // The v1 folders of what was ended (the tree is gone: they are empty or emptied).
            controllers.clear_except(&kept, false);
            left
        });
        let left = cleared.await.unwrap_or(0);
        if left > 0 {
            tracing::warn!(cgroups = left, "processes outlived their sessions; killed at shutdown");
        }
        tracing::info!("shutdown complete");
        served.unwrap_or(Ok(()))
    }
}
