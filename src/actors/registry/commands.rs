//! Spawning the workbench's commands here, where every pid tokio waits for is listed: the
//! orphan sweep of a subreaper service must never reap a command's bash before tokio's wait
//! does (its exit status would be lost). The command is listed in the same handler that spawns
//! it, and unlisted by `ProcessGone` once it has been waited for.

use actix::prelude::*;

use super::SessionRegistry;
use crate::actors::workbench::spawn::{spawn, Launch, Running};

/// Spawns one command of the workbench (see [`crate::actors::workbench`]).
#[derive(Message)]
#[rtype(result = "Result<Running, String>")]
pub struct SpawnCommand(pub Launch);

impl Handler<SpawnCommand> for SessionRegistry {
    type Result = Result<Running, String>;

    fn handle(&mut self, msg: SpawnCommand, _ctx: &mut Context<Self>) -> Self::Result {
        let running = spawn(msg.0)?;
        self.children.insert(running.pid);
        Ok(running)
    }
}
