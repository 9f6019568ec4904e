import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { CostChart } from '../components/CostChart';
import { DecisionsList } from '../components/DecisionsList';
import { RulesEditor } from '../components/RulesEditor';
import { SessionsTable } from '../components/SessionsTable';
import { UsageLimitsCard } from '../components/UsageLimitsCard';
import { count, duration, usd } from '../lib/format';
import { useOverview } from '../lib/overview';
import { computeStats, dailyCosts, todayFigures, utcDays } from '../lib/stats';
import { decisionsQuery, healthQuery, usageQuery } from '../query/queries';

/** Bars in the cost chart: today and the 13 UTC days before it. */
const CHART_DAYS = 14;

const errorText = (e: Error | null) => e?.message;

export function DashboardPage() {
  const overview = useOverview();
  const health = useQuery(healthQuery());
  const decisions = useQuery(decisionsQuery({ limit: 12 }));
  // Money and tokens from the cost ledger (scheduled agents' runs included), by UTC day. The
  // all-time total is the top bar's query: the same cached answer.
  const total = useQuery(usageQuery());
  // A new UTC day is a new window (a new key): the old bars stay until it is read.
  const byDay = useQuery({ ...usageQuery({ group_by: 'day', from: utcDays(CHART_DAYS)[0] }), placeholderData: keepPreviousData });
  const today = todayFigures(byDay.data);
  const sessions = overview.sessions;
  const stats = computeStats(overview.projects.length, sessions);
  const live = [...overview.live].sort((a, b) => b.last_active_at.localeCompare(a.last_active_at));
  // Health has no events; the live list does: its count is current between health reads.
  const activeNow = overview.loading ? health.data?.active_sessions : overview.live.length;

  // Turns need every project's sessions: no partial sums meanwhile.
  const wait = overview.historyLoading;

  return (
    <div className="page">
      <h1>Dashboard</h1>
      <ErrorNote error={overview.error} what="load projects and sessions" />
      <div className="tiles" data-testid="stat-tiles">
        <Tile label="Projects" value={overview.loading ? '…' : String(stats.projects)} />
        <Tile label="Live sessions" value={overview.loading ? '…' : String(overview.live.length)} />
        <Tile label="Turns" value={wait ? '…' : count(stats.turns)} />
        <Tile
          label="Cost today"
          value={byDay.data ? usd(today.cost_usd) : '…'}
          sub={total.data ? `${usd(total.data.total.cost_usd)} all time` : undefined}
          testId="tile-cost"
        />
        <Tile label="Tokens today" value={byDay.data ? count(today.input_tokens + today.output_tokens) : '…'} />
      </div>
      <UsageLimitsCard />
      <div className="grid two">
        <Card title="System health" testId="health">
          {health.isPending && <Loading />}
          <ErrorNote error={errorText(health.error)} what="reach the service" />
          {health.data && (
            <div className="health">
              <div className={`health-status health-${health.data.status}`}>{health.data.status}</div>
              <div className="capacity">
                <div className="capacity-label">
                  Session capacity <span>{activeNow} of {health.data.max_sessions}</span>
                </div>
                <div className="capacity-bar">
                  <div style={{ width: `${capacityPct(activeNow ?? 0, health.data.max_sessions)}%` }} />
                </div>
              </div>
              <ul className="checks">
                <Check ok={health.data.checks.cli_available} label="Claude Code CLI" bad="not found: set CONDUIT_CLI_PATH" />
                <Check ok={health.data.checks.database_ok} label="Database" bad="failing queries" />
                <Check
                  ok={health.data.checks.unstored_lines === 0}
                  label="Session storage"
                  bad={`${health.data.checks.unstored_lines} lines could not be stored`}
                />
              </ul>
              <div className="muted small">
                Up {duration(health.data.uptime_seconds)} · version {health.data.version} · {health.data.event_subscribers} live
                subscriber{health.data.event_subscribers === 1 ? '' : 's'}
              </div>
            </div>
          )}
        </Card>
        <Card title={`Cost over the last ${CHART_DAYS} days`}>
          {byDay.isPending && <Loading />}
          <ErrorNote error={errorText(byDay.error)} what="load the costs" />
          {byDay.data && <CostChart days={dailyCosts(byDay.data, CHART_DAYS)} />}
        </Card>
      </div>
      <Card title="Live sessions" testId="live-sessions">
        {overview.loading && <Loading />}
        {!overview.loading && live.length === 0 && !overview.error && (
          <Empty title="No session is running.">Open a project and start one with “New session”.</Empty>
        )}
        {live.length > 0 && <SessionsTable sessions={live} projects={overview.projects} />}
      </Card>
      <div className="grid two">
        <Card title="Latest permission decisions">
          {decisions.isPending && <Loading />}
          <ErrorNote error={errorText(decisions.error)} what="load the audit log" />
          {decisions.data && decisions.data.length === 0 && (
            <Empty title="No tool calls decided yet.">Every tool call a session makes is decided and listed here.</Empty>
          )}
          {decisions.data && decisions.data.length > 0 && <DecisionsList decisions={decisions.data} />}
        </Card>
        <Card title="Global permission rules">
          <RulesEditor />
        </Card>
      </div>
    </div>
  );
}

function capacityPct(active: number, max: number): number {
  return max > 0 ? Math.min(100, (active / max) * 100) : 0;
}

function Tile(props: { label: string; value: string; sub?: string; testId?: string }) {
  return (
    <div className="tile" data-testid={props.testId}>
      <div className="tile-label">{props.label}</div>
      <div className="tile-value">{props.value}</div>
      {props.sub && <div className="tile-sub">{props.sub}</div>}
    </div>
  );
}

function Check(props: { ok: boolean; label: string; bad: string }) {
  return (
    <li className={props.ok ? 'check ok' : 'check bad'}>
      <span className="dot" />
      {props.label}
      <span className="muted">{props.ok ? 'ok' : props.bad}</span>
    </li>
  );
}
