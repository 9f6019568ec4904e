// Small building blocks shared by every page.
import { useEffect, type ReactNode } from 'react';
import { statusLabel } from '../lib/format';

export function Card(props: { title?: ReactNode; actions?: ReactNode; children: ReactNode; className?: string; testId?: string }) {
  return (
    <section className={`card ${props.className ?? ''}`} data-testid={props.testId}>
      {(props.title || props.actions) && (
        <header className="card-head">
          <h2>{props.title}</h2>
          <div className="card-actions">{props.actions}</div>
        </header>
      )}
      <div className="card-body">{props.children}</div>
    </section>
  );
}

/** What an empty panel says instead of staying blank. */
export function Empty(props: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <strong>{props.title}</strong>
      {props.children && <p>{props.children}</p>}
    </div>
  );
}

export function ErrorNote(props: { error: string | undefined; what?: string }) {
  if (!props.error) return null;
  return (
    <div className="error-note" role="alert">
      {props.what ? `Could not ${props.what}: ` : ''}
      {props.error}
    </div>
  );
}

export function Loading() {
  return <div className="loading">Loading…</div>;
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status}`}>{statusLabel(status)}</span>;
}

export function DecisionBadge({ decision }: { decision: string }) {
  return <span className={`badge decision-${decision}`}>{decision}</span>;
}

export function Modal(props: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && props.onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [props]);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && props.onClose()}>
      <div className={`modal ${props.wide ? 'modal-wide' : ''}`} role="dialog" aria-label={props.title}>
        <header className="modal-head">
          <h2>{props.title}</h2>
          <button className="icon-button" aria-label="Close" onClick={props.onClose}>
            ×
          </button>
        </header>
        {props.children}
      </div>
    </div>
  );
}

export function Field(props: { label: string; hint?: string; children: ReactNode }) {
  return (
    <label className="field">
      <span className="field-label">{props.label}</span>
      {props.children}
      {props.hint && <span className="field-hint">{props.hint}</span>}
    </label>
  );
}

/** A field's own problem, under its input (the input says `aria-invalid`). */
export function FieldError({ text }: { text?: string }) {
  return text ? <span className="field-error">{text}</span> : null;
}

// The contract's six modes (`delegate` is gone: the CLI refuses it). The session page asks the CLI instead.
export const PERMISSION_MODES = ['default', 'acceptEdits', 'plan', 'auto', 'dontAsk', 'bypassPermissions'] as const;
export const MODELS = ['claude-sonnet-4-5', 'claude-opus-4-1', 'claude-haiku-4-5'];
