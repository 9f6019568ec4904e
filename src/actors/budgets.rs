//! `BudgetKeeper`: which budgets are spent. It owns that one piece of state; the ledger is the
//! truth it reads.
//!
//! After every turn result and agent run it is told [`TurnCost`], and after every change to a
//! project's caps [`Reevaluate`]; it sums the project's and the service's spending for the day
//! and the month from the daily rollup (on the blocking pool) and compares them with the caps.
//! A budget that runs out is announced (`budget.exhausted`) and the registry holds the sessions it covers
//! (`paused`); one that is no longer spent (raised, cleared, or its period rolled over, checked
//! at each UTC midnight) is announced (`budget.resumed`) and they are released. Requests that
//! would start work ask [`CheckBudget`] first and get a 402 while a budget covering them is
//! spent.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;

use super::bus::{Event, Publish};
use crate::db::{projects, usage, Store, StoreError};
use crate::domain::budget::{exhausted, Caps, Exhaustion, Spent};
use crate::domain::ids::ProjectId;
use crate::domain::usage::{day_of, month_start, next_day};

/// May work start in this project (`None`: outside any project)? `Err` names the spent budget.
#[derive(Message)]
#[rtype(result = "Result<(), Exhaustion>")]
pub struct CheckBudget {
    pub project_id: Option<ProjectId>,
}

/// Spending or caps changed for this project (`None`: only the service's own budget).
/// Answers, once evaluated, with the spent budget that now covers the project, if any.
#[derive(Message, Clone)]
#[rtype(result = "Option<Exhaustion>")]
pub struct Reevaluate {
    pub project_id: Option<ProjectId>,
}

/// A turn or a run added `cost_usd` to the ledger (committed) for this project (`None`: outside
/// any project). Answers as [`Reevaluate`] does, but reads the store only when a budget could
/// have run out: the turn cost something and a cap covers the project. Most turns meet no cap,
/// and the session waits for this answer before it shows itself at rest.
#[derive(Message, Clone)]
#[rtype(result = "Option<Exhaustion>")]
pub struct TurnCost {
    pub project_id: Option<ProjectId>,
    pub cost_usd: f64,
}

/// Hold (`hold: Some(reason)`) or release the live sessions of a project, or of every project
/// (`project_id: None`) but those in `except` (still held by their own budget).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct HoldSessions {
    pub project_id: Option<ProjectId>,
    pub hold: Option<String>,
    pub except: Vec<ProjectId>,
}

/// Where the keeper sends holds; it starts evaluating once it has it.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Connect(pub Recipient<HoldSessions>);

pub struct BudgetKeeper {
    store: Store,
    global: Caps,
    bus: Recipient<Publish>,
    holds: Option<Recipient<HoldSessions>>,
    /// Spent budgets by scope: a project, or `None` for the service's own.
    spent: HashMap<Option<ProjectId>, Exhaustion>,
    /// The projects with a cap, as last read (`None` until the first listing): a project's
    /// caps are read again whenever they change (the API sends [`Reevaluate`]).
    capped: Option<HashSet<ProjectId>>,
}

/// One scope's caps and spending, read together.
struct Reading {
    scope: Option<ProjectId>,
    caps: Caps,
    spent: Spent,
}

impl BudgetKeeper {
    pub fn new(store: Store, global: Caps, bus: Recipient<Publish>) -> Self {
        BudgetKeeper { store, global, bus, holds: None, spent: HashMap::new(), capped: None }
    }

    /// Reads the scopes' caps and spending on the blocking pool, then applies them.
    fn evaluate(&self, scopes: Vec<Option<ProjectId>>, ctx: &mut Context<Self>) {
        ctx.spawn(self.evaluation(scopes));
    }

    fn evaluation(&self, scopes: Vec<Option<ProjectId>>) -> impl ActorFuture<Self, Output = ()> + 'static {
        let (global, store) = (self.global, self.store.clone());
        let read = async move {
            store
                .run(move |conn| {
                    let now = Utc::now();
                    let (day, month) = (day_of(&now), day_of(&month_start(&now)));
                    let mut readings = Vec::new();
                    for scope in scopes {
                        let caps = match &scope {
                            None => global,
                            Some(id) => match projects::find(conn, id)? {
                                Some(p) => Caps { daily: p.budget_daily_usd, monthly: p.budget_monthly_usd },
                                // A deleted project has no budget left to hold anything.
                                None => Caps::default(),
                            },
                        };
                        if caps == Caps::default() {
                            readings.push(Reading { scope, caps, spent: Spent::default() });
                            continue;
                        }
                        let project = scope.as_ref().map(ToString::to_string);
                        let spent = Spent {
                            today: usage::spent_since(conn, &day, project.as_deref())?,
                            month: usage::spent_since(conn, &month, project.as_deref())?,
                        };
                        readings.push(Reading { scope, caps, spent });
                    }
                    Ok::<_, StoreError>(readings)
                })
                .await
        };
        read.into_actor(self).map(|read, act, _ctx| match read {
            Ok(readings) => readings.into_iter().for_each(|r| act.apply(r)),
            Err(e) => tracing::warn!(error = %e, "could not read what budgets have spent; they keep their state"),
        })
    }

    /// The service's and the project's budgets read again; then the spent one covering it.
    fn reevaluated(&self, project_id: Option<ProjectId>) -> ResponseActFuture<Self, Option<Exhaustion>> {
        let mut scopes = vec![None];
        if project_id.is_some() {
            scopes.push(project_id.clone());
        }
        Box::pin(self.evaluation(scopes).map(move |(), act, _ctx| act.covering(project_id.as_ref())))
    }

    /// The spent budget covering a project: the service's first, then its own.
    fn covering(&self, project_id: Option<&ProjectId>) -> Option<Exhaustion> {
        if let Some(spent) = self.spent.get(&None) {
            return Some(spent.clone());
        }
        project_id.and_then(|p| self.spent.get(&Some(p.clone()))).cloned()
    }

    fn apply(&mut self, r: Reading) {
        if let (Some(capped), Some(project)) = (self.capped.as_mut(), r.scope.as_ref()) {
            if r.caps == Caps::default() {
                capped.remove(project);
            } else {
                capped.insert(project.clone());
            }
        }
        let project = r.scope.as_ref().map(ToString::to_string);
        let now = exhausted(r.caps, r.spent, project.as_deref(), &Utc::now());
        match (self.spent.contains_key(&r.scope), now) {
            (false, Some(spent)) => {
                tracing::warn!(budget = ?spent.budget, project = ?project, "a budget is spent");
                self.announce("budget.exhausted", "budget_exhausted", &spent);
                self.hold(r.scope.clone(), Some(spent.message()));
                self.spent.insert(r.scope, spent);
            }
            (true, Some(spent)) => {
                self.spent.insert(r.scope, spent);
            }
            (true, None) => {
                if let Some(was) = self.spent.remove(&r.scope) {
                    tracing::info!(budget = ?was.budget, project = ?project, "a budget is no longer spent");
                    self.announce("budget.resumed", "budget_resumed", &was);
                }
                // Sessions stay held while another spent budget covers them.
                let global_spent = self.spent.contains_key(&None);
                if r.scope.is_none() || !global_spent {
                    self.hold(r.scope, None);
                }
            }
            (false, None) => {}
        }
    }

    fn hold(&self, project_id: Option<ProjectId>, hold: Option<String>) {
        let except = if project_id.is_none() && hold.is_none() {
            self.spent.keys().flatten().cloned().collect()
        } else {
            Vec::new()
        };
        if let Some(holds) = &self.holds {
            holds.do_send(HoldSessions { project_id, hold, except });
        }
    }

    fn announce(&self, kind: &'static str, name: &str, spent: &Exhaustion) {
        let data = serde_json::to_string(spent).unwrap_or_else(|_| "null".to_string());
        let project = spent.project_id.as_deref().and_then(|p| p.parse().ok());
        self.bus.do_send(Publish(Event::new(kind, name, None, data).in_project(project)));
    }

    /// At each UTC midnight (a day and perhaps a month roll over) every spent budget is read
    /// again.
    fn schedule_rollover(&self, ctx: &mut Context<Self>) {
        let now = Utc::now();
        let wait = (next_day(&now) - now).to_std().unwrap_or_default() + Duration::from_secs(1);
        ctx.run_later(wait, |act, ctx| {
            let scopes: Vec<Option<ProjectId>> = act.spent.keys().cloned().collect();
            act.evaluate(scopes, ctx);
            act.schedule_rollover(ctx);
        });
    }
}

impl Actor for BudgetKeeper {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.schedule_rollover(ctx);
    }
}

impl Handler<Connect> for BudgetKeeper {
    type Result = ();

    /// Evaluates every budget once: the service's and each project's with a cap.
    fn handle(&mut self, msg: Connect, ctx: &mut Context<Self>) {
        self.holds = Some(msg.0);
        let store = self.store.clone();
        let listed = async move { store.run(projects::with_budgets).await };
        ctx.spawn(listed.into_actor(self).map(|listed, act, ctx| {
            let mut scopes = vec![None];
            match listed {
                Ok(ids) => {
                    act.capped = Some(ids.iter().cloned().collect());
                    scopes.extend(ids.into_iter().map(Some));
                }
                Err(e) => tracing::warn!(error = %e, "could not list the projects with budgets"),
            }
            act.evaluate(scopes, ctx);
        }));
    }
}

impl Handler<Reevaluate> for BudgetKeeper {
    type Result = ResponseActFuture<Self, Option<Exhaustion>>;

    fn handle(&mut self, msg: Reevaluate, _ctx: &mut Context<Self>) -> Self::Result {
        self.reevaluated(msg.project_id)
    }
}

impl Handler<TurnCost> for BudgetKeeper {
    type Result = ResponseActFuture<Self, Option<Exhaustion>>;

    fn handle(&mut self, msg: TurnCost, _ctx: &mut Context<Self>) -> Self::Result {
        let uncapped = |capped: &HashSet<ProjectId>| msg.project_id.as_ref().is_none_or(|p| !capped.contains(p));
        let nothing_to_read =
            msg.cost_usd <= 0.0 || (self.global == Caps::default() && self.capped.as_ref().is_some_and(uncapped));
        if nothing_to_read {
            return Box::pin(fut::ready(self.covering(msg.project_id.as_ref())));
        }
        self.reevaluated(msg.project_id)
    }
}

impl Handler<CheckBudget> for BudgetKeeper {
    type Result = Result<(), Exhaustion>;

    fn handle(&mut self, msg: CheckBudget, _ctx: &mut Context<Self>) -> Self::Result {
        match self.covering(msg.project_id.as_ref()) {
            Some(spent) => Err(spent),
            None => Ok(()),
        }
    }
}
