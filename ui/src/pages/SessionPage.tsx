// One session: its totals, its controls, and its conversation as it happens. Data comes from
// lib/useSessionData.ts (read once, then kept by the event stream).
import { useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import { useQueryClient } from '@tanstack/react-query';
import type { Session } from '../api/client';
import { sessionApi } from '../api/sessions';
import { keys } from '../query/client';
import { Card, ErrorNote, Loading, StatusBadge } from '../components/ui';
import { LimitNotice, TurnWaitNotice } from '../components/LimitNotice';
import { SessionResources } from '../components/SessionResources';
import { Transcript } from '../components/Transcript';
import { leftBy, Controls, describeFailure, MessageBox, SurvivalButtons, type Act } from '../components/SessionControls';
import { ago, count, isLive, statusLabel, usd } from '../lib/format';
import { appendLive, emptyFeed, type Feed } from '../lib/sessionFeed';
import { buildTranscript } from '../lib/transcript';
import { errorText, useSessionData } from '../lib/useSessionData';
import './SessionPage.css';

let sentCount = 0;

export function SessionPage() {
  const { sessionId = '' } = useParams();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const { session, feed, decisions, options, pending, older, epoch } = useSessionData(sessionId);
  const lines = feed.data?.lines;
  const items = useMemo(() => buildTranscript(lines ?? [], decisions.data ?? []), [lines, decisions.data]);
  const [actionError, setActionError] = useState<string>();
  useEffect(() => setActionError(undefined), [epoch, sessionId]);

  if (session.isPending) return <Loading />;
  if (!session.data) return <ErrorNote error={errorText(session.error) ?? 'This session does not exist.'} what="open this session" />;
  const s = session.data;
  const act: Act = async (what) => {
    try {
      setActionError(undefined);
      await what();
      return true;
    } catch (e) {
      setActionError(describeFailure(e));
      return false;
    }
  };
  const resume = () =>
    void act(async () => qc.setQueryData<Session>(keys.session(s.id), await sessionApi.resume(s.id)));
  const fork = () =>
    void act(async () => {
      const forked = await sessionApi.fork(s);
      navigate(`/sessions/${forked.id}`);
    });
  // What was just sent shows at once; the next read of the stored lines replaces it.
  const sent = (text: string) =>
    qc.setQueryData<Feed>(keys.sessionMessages(s.id), (f) =>
      appendLive(f ?? emptyFeed(), [
        {
          key: `u${++sentCount}`, seq: null, direction: 'to_cli', message_type: 'user', message_subtype: null,
          content: JSON.stringify({ type: 'user', message: { role: 'user', content: text } }),
          timestamp: new Date().toISOString(), ephemeral: true,
        },
      ]),
    );
  const live = isLive(s.status);
  const canWrite = live || leftBy(s) !== undefined;
  const feedError = errorText(feed.error);

  return (
    <div className="page session-page">
      <div className="page-head">
        <div>
          <div className="crumbs">
            <Link to={`/projects/${s.project_id}`}>← Project</Link>
            {' · '}
            <Link to={`/sessions/${s.id}/review`}>Review</Link>
          </div>
          <h1>
            {s.name} <StatusBadge status={s.status} />
            {s.closed_reason && <span className="muted small closed-reason">({s.closed_reason})</span>}
          </h1>
          <div className="muted small">
            Started {ago(s.created_at)} · last active {ago(s.last_active_at)}
            {s.session_id && <span className="mono"> · CLI session {s.session_id.slice(0, 8)}</span>}
          </div>
          {/* The page's read of the session carries its first reading (frames carry none). */}
          <SessionResources sessionId={s.id} live={live} initial={'resources' in s ? s.resources : null} />
        </div>
        <div className="totals" data-testid="session-totals">
          <Total label="Cost" value={usd(s.total_cost_usd)} />
          {s.max_budget_usd != null && (
            <Total
              label="Cost cap"
              value={usd(s.max_budget_usd)}
              spent={s.total_cost_usd >= s.max_budget_usd}
              title="The most this session may cost, across resumes: it is paused once reached."
              testId="session-cap"
            />
          )}
          <Total label="Turns" value={String(s.num_turns)} />
          <Total label="Tokens in / out" value={`${count(s.total_input_tokens)} / ${count(s.total_output_tokens)}`} />
        </div>
      </div>
      {s.error_message && <ErrorNote error={s.error_message} what="keep the CLI running" />}
      <LimitNotice session={s} />
      <TurnWaitNotice session={s} />
      {/* Keyed on the model too: the field shows the model the CLI reports once it is known. */}
      {live && (
        <Controls key={`${s.id}:${s.model ?? ''}`} session={s} options={options.data} act={act}>
          <SurvivalButtons session={s} onResume={resume} onFork={fork} />
        </Controls>
      )}
      <ErrorNote error={actionError} />
      <Card title="Transcript" className="transcript-card">
        <ErrorNote error={feedError} what={feed.data?.loaded ? 'bring the transcript up to date' : 'load the transcript'} />
        <ErrorNote error={errorText(decisions.error)} what="load the permission decisions" />
        {feed.data?.loaded ? (
          <Transcript items={items} pending={pending} agent={s.agent} older={older} />
        ) : (
          !feedError && <Loading />
        )}
      </Card>
      {canWrite && <MessageBox session={s} epoch={epoch} onSent={sent} />}
      {!live && (
        <div className="ended-note">
          <span>
            {leftBy(s) ? `${leftBy(s)}.` : `This session has ended: ${endedHow(s)}.`} Its transcript
            stays here.
          </span>
          <SurvivalButtons session={s} onResume={resume} onFork={fork} />
        </div>
      )}
    </div>
  );
}

function endedHow(s: Session): string {
  return s.closed_reason ? `${statusLabel(s.status)} (${s.closed_reason})` : statusLabel(s.status);
}

function Total(props: { label: string; value: string; spent?: boolean; title?: string; testId?: string }) {
  return (
    <div className={props.spent ? 'total total-spent' : 'total'} title={props.title} data-testid={props.testId}>
      <div className="tile-label">{props.label}</div>
      <div className="total-value">{props.value}</div>
    </div>
  );
}
