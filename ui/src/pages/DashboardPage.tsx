import { useQuery } from '@tanstack/react-query';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { CostChart } from '../components/CostChart';
import { DecisionsList } from '../components/DecisionsList';
import { RulesEditor } from '../components/RulesEditor';
import { SessionsTable } from '../components/SessionsTable';
import { count, duration, usd } from '../lib/format';
import { useOverview } from '../lib/overview';
import { computeStats, costByDay } from '../lib/stats';
import { decisionsQuery, healthQuery } from '../query/queries';

const errorText = (e: Error | null) => e?.message;

export function DashboardPage() {
  const overview = useOverview();
  const health = useQuery(healthQuery());
  const decisions = useQuery(decisionsQuery({ limit: 12 }));
  const sessions = overview.sessions;
  const stats = computeStats(overview.projects.length, sessions);
  const live = [...overview.live].sort((a, b) => b.last_active_at.localeCompare(a.last_active_at));
  // Health has no events; the live list does: its count is current between health reads.
  const activeNow = overview.loading ? health.data?.active_sessions : overview.live.length;

  // Costs and turns need every project's sessions: no partial sums meanwhile.
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
          value={wait ? '…' : usd(stats.todayCost)}
          sub={wait ? undefined : `${usd(stats.totalCost)} all time`}
          testId="tile-cost"
        />
        <Tile label="Tokens today" value={wait ? '…' : count(stats.todayTokens)} />
      </div>
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
        <Card title="Cost over the last 14 days">
          {wait ? <Loading /> : <CostChart days={costByDay(sessions, 14)} />}
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
