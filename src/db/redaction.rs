//! `conduit redact --all`: rows stored before the `at_rest` redaction (or under `in_flight`)
//! rewritten without their secrets, in batches of one transaction each, so a running service
//! goes on writing meanwhile. Only rows that change are written; running it again changes
//! nothing.

use std::collections::BTreeMap;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;

use super::schema::{agent_executions, messages, permission_log, session_events, sessions, webhook_deliveries};
use super::{DbConnection, StoreError};
use crate::secrets::{scrub_any, scrub_json, scrub_lines, scrub_optional_text};

const BATCH: i64 = 1000;

/// What one table's pass changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableReport {
    pub table: &'static str,
    pub rows_read: u64,
    pub rows_changed: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub tables: Vec<TableReport>,
    /// Secrets taken out, by kind (`github-token`: 3).
    pub redacted: BTreeMap<String, u64>,
    /// SQLite: whether the file was rewritten from the live rows (`VACUUM`) and its WAL
    /// emptied. Until then the bytes of old row versions can remain in the file's free space
    /// and the WAL's frames; `false`: the service was writing (run again once it is stopped).
    pub file_rewritten: Option<bool>,
}

impl Report {
    fn count_markers(&mut self, before: &str, after: &str) {
        for (kind, n) in markers(after) {
            let was = markers(before).get(&kind).copied().unwrap_or(0);
            if n > was {
                *self.redacted.entry(kind).or_default() += n - was;
            }
        }
    }

    /// Every field's change goes through here: the marker count is the report's figure.
    fn fields(&mut self, fields: &[(&str, &str)]) {
        for (before, after) in fields {
            if before != after {
                self.count_markers(before, after);
            }
        }
    }
}

fn markers(text: &str) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    for part in text.split("[REDACTED:").skip(1) {
        if let Some(end) = part.find(']') {
            *found.entry(part[..end].to_string()).or_default() += 1;
        }
    }
    found
}

/// One table's rows read and rewritten.
type Pass = fn(&mut DbConnection, &mut Report) -> Result<TableReport, StoreError>;

/// Redacts every stored row. Blocking.
pub fn redact_all(conn: &mut DbConnection) -> Result<Report, StoreError> {
    let mut report = Report::default();
    if let DbConnection::Sqlite(c) = conn {
        // The old text of a rewritten row is zeroed, not left in a free page (what is left
        // when the file cannot be rewritten at the end).
        c.batch_execute("PRAGMA secure_delete = ON")?;
    }
    let passes: [Pass; 6] =
        [messages_pass, events_pass, decisions_pass, executions_pass, sessions_pass, deliveries_pass];
    for pass in passes {
        let table = pass(conn, &mut report)?;
        report.tables.push(table);
    }
    if let DbConnection::Sqlite(c) = conn {
        report.file_rewritten = Some(rewrite_file(c)?);
    }
    Ok(report)
}

/// Pages keep what earlier writes left in their unused space (a split moves cells and does not
/// clear where they were), so the file is rebuilt from its live rows; then the WAL, whose
/// frames hold pages as they were, is copied in and truncated.
fn rewrite_file(conn: &mut diesel::SqliteConnection) -> Result<bool, StoreError> {
    if let Err(e) = conn.batch_execute("VACUUM") {
        tracing::warn!(error = %e, "the database file could not be rewritten (is the service writing?)");
        return Ok(false);
    }
    #[derive(QueryableByName)]
    struct Checkpoint {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        busy: i32,
    }
    let result: Vec<Checkpoint> = diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").load(conn)?;
    Ok(result.first().is_some_and(|c| c.busy == 0))
}

fn messages_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "messages", ..Default::default() };
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, String)> = messages::table
            .select((messages::id, messages::content))
            .filter(messages::id.gt(after))
            .order(messages::id)
            .limit(BATCH)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| r.0) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (id, content) in rows {
                let mut clean = content.clone();
                if scrub_any(&mut clean) {
                    diesel::update(messages::table.find(id)).set(messages::content.eq(&clean)).execute(conn)?;
                    report.fields(&[(&content, &clean)]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}

fn events_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "session_events", ..Default::default() };
    // By (session, number): PostgreSQL's key, and an index on SQLite.
    let mut after = (String::new(), -1i64);
    loop {
        let rows: Vec<(String, i64, String)> = session_events::table
            .select((session_events::session_id, session_events::seq, session_events::data))
            .filter(
                session_events::session_id
                    .gt(&after.0)
                    .or(session_events::session_id.eq(&after.0).and(session_events::seq.gt(after.1))),
            )
            .order((session_events::session_id, session_events::seq))
            .limit(BATCH)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| (r.0.clone(), r.1)) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (session, seq, data) in rows {
                let mut clean = data.clone();
                if scrub_json(&mut clean) {
                    let row = session_events::table
                        .filter(session_events::session_id.eq(&session))
                        .filter(session_events::seq.eq(seq));
                    diesel::update(row).set(session_events::data.eq(&clean)).execute(conn)?;
                    report.fields(&[(&data, &clean)]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}

type DecisionText = (i64, String, Option<String>, Option<String>);

fn decisions_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "permission_log", ..Default::default() };
    let mut after = 0i64;
    loop {
        let rows: Vec<DecisionText> = permission_log::table
            .select((
                permission_log::id,
                permission_log::tool_input,
                permission_log::reason,
                permission_log::command_reading,
            ))
            .filter(permission_log::id.gt(after))
            .order(permission_log::id)
            .limit(BATCH)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| r.0) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (id, input, reason, reading) in rows {
                let (mut input2, mut reason2, mut reading2) = (input.clone(), reason.clone(), reading.clone());
                let changed = scrub_any(&mut input2)
                    | scrub_optional_text(&mut reason2)
                    | reading2.as_mut().is_some_and(scrub_json);
                if changed {
                    diesel::update(permission_log::table.find(id))
                        .set((
                            permission_log::tool_input.eq(&input2),
                            permission_log::reason.eq(&reason2),
                            permission_log::command_reading.eq(&reading2),
                        ))
                        .execute(conn)?;
                    let none = String::new();
                    report.fields(&[
                        (&input, &input2),
                        (reason.as_ref().unwrap_or(&none), reason2.as_ref().unwrap_or(&none)),
                        (reading.as_ref().unwrap_or(&none), reading2.as_ref().unwrap_or(&none)),
                    ]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}

type ExecutionText = (String, String, String, Option<String>);

fn executions_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "agent_executions", ..Default::default() };
    let mut after = String::new();
    loop {
        // Outputs can be megabytes each: smaller batches.
        let rows: Vec<ExecutionText> = agent_executions::table
            .select((
                agent_executions::id,
                agent_executions::output,
                agent_executions::raw_output,
                agent_executions::error,
            ))
            .filter(agent_executions::id.gt(&after))
            .order(agent_executions::id)
            .limit(BATCH / 10)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| r.0.clone()) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (id, output, raw, error) in rows {
                let (mut output2, mut raw2, mut error2) = (output.clone(), raw.clone(), error.clone());
                let changed = crate::secrets::scrub_text(&mut output2)
                    | scrub_lines(&mut raw2)
                    | scrub_optional_text(&mut error2);
                if changed {
                    diesel::update(agent_executions::table.find(&id))
                        .set((
                            agent_executions::output.eq(&output2),
                            agent_executions::raw_output.eq(&raw2),
                            agent_executions::error.eq(&error2),
                        ))
                        .execute(conn)?;
                    let none = String::new();
                    report.fields(&[
                        (&output, &output2),
                        (&raw, &raw2),
                        (error.as_ref().unwrap_or(&none), error2.as_ref().unwrap_or(&none)),
                    ]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}

fn sessions_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "sessions", ..Default::default() };
    let mut after = String::new();
    loop {
        let rows: Vec<(String, Option<String>, Option<String>)> = sessions::table
            .select((sessions::id, sessions::error_message, sessions::status_reason))
            .filter(sessions::id.gt(&after))
            .order(sessions::id)
            .limit(BATCH)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| r.0.clone()) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (id, error, reason) in rows {
                let (mut error2, mut reason2) = (error.clone(), reason.clone());
                if scrub_optional_text(&mut error2) | scrub_optional_text(&mut reason2) {
                    diesel::update(sessions::table.find(&id))
                        .set((sessions::error_message.eq(&error2), sessions::status_reason.eq(&reason2)))
                        .execute(conn)?;
                    let none = String::new();
                    report.fields(&[
                        (error.as_ref().unwrap_or(&none), error2.as_ref().unwrap_or(&none)),
                        (reason.as_ref().unwrap_or(&none), reason2.as_ref().unwrap_or(&none)),
                    ]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}

fn deliveries_pass(conn: &mut DbConnection, report: &mut Report) -> Result<TableReport, StoreError> {
    let mut table = TableReport { table: "webhook_deliveries", ..Default::default() };
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, Option<String>)> = webhook_deliveries::table
            .select((webhook_deliveries::id, webhook_deliveries::error))
            .filter(webhook_deliveries::id.gt(after))
            .order(webhook_deliveries::id)
            .limit(BATCH)
            .load(conn)?;
        let Some(last) = rows.last().map(|r| r.0) else { break };
        after = last;
        table.rows_read += rows.len() as u64;
        conn.write_transaction::<_, StoreError, _>(|conn| {
            for (id, error) in rows {
                let mut error2 = error.clone();
                if scrub_optional_text(&mut error2) {
                    diesel::update(webhook_deliveries::table.find(id))
                        .set(webhook_deliveries::error.eq(&error2))
                        .execute(conn)?;
                    report.fields(&[(error.as_deref().unwrap_or(""), error2.as_deref().unwrap_or(""))]);
                    table.rows_changed += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(table)
}
