// Webhooks: where events are POSTed, which ones, and how their deliveries went.
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { webhooksApi, type Webhook } from '../api/webhooks';
import { WebhookDeliveries } from '../components/WebhookDeliveries';
import { WebhookFormDialog } from '../components/WebhookForm';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { messageOf } from '../lib/errors';
import { ago } from '../lib/format';
import { keys, queryClient } from '../query/client';
import { dropWebhook } from '../query/webhookFrames';
import './automation.css';

export function WebhooksPage() {
  const hooks = useQuery({ queryKey: keys.webhooks, queryFn: webhooksApi.list });
  const [creating, setCreating] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string>();

  const remove = async (hook: Webhook) => {
    if (!window.confirm(`Delete the webhook ${hook.name}? Its delivery history goes with it.`)) return;
    setBusy(hook.id);
    setError(undefined);
    try {
      await webhooksApi.remove(hook.id);
      dropWebhook(queryClient, hook.id);
    } catch (e) {
      setError(`Could not delete ${hook.name}: ${messageOf(e)}`);
    } finally {
      setBusy(null);
    }
  };

  return (
    <div className="page" data-testid="webhooks-page">
      <div className="page-head wrap">
        <div>
          <h1>Webhooks</h1>
          <p className="description">Conduit POSTs the events you choose to these addresses, retrying up to three times.</p>
        </div>
        <button className="button primary" data-testid="webhook-new" onClick={() => setCreating(true)}>
          New webhook
        </button>
      </div>
      <ErrorNote error={error} />
      <Card title="Webhooks">
        <ErrorNote error={hooks.error ? messageOf(hooks.error) : undefined} what="load the webhooks" />
        {hooks.isPending && <Loading />}
        {hooks.data?.length === 0 && <Empty title="No webhook yet.">Add one to hear about sessions, results and permission decisions elsewhere.</Empty>}
        {hooks.data && hooks.data.length > 0 && (
          <ul className="stack-list" data-testid="webhook-list">
            {hooks.data.map((h) => (
              <li key={h.id} className="stack-row-wrap" data-testid="webhook-row" data-webhook-id={h.id}>
                <div className="stack-row">
                  <div className="stack-main">
                    <div className="stack-title">
                      <strong>{h.name}</strong>
                      {!h.active && <span className="badge">inactive</span>}
                      {h.signed ? <span className="badge agent-active">signed</span> : <span className="badge">unsigned</span>}
                    </div>
                    <code className="subject break">{h.url}</code>
                    <div className="stack-facts small muted">
                      <span>
                        {h.events.map((ev) => (
                          <span key={ev} className="tag first-tag">
                            {ev === '*' ? 'every event' : ev}
                          </span>
                        ))}
                      </span>
                      <span>added {ago(h.created_at)}</span>
                      {h.dropped_deliveries > 0 && (
                        <span className="tool-error">{h.dropped_deliveries} events missed (the receiver fell too far behind)</span>
                      )}
                    </div>
                  </div>
                  <div className="stack-actions">
                    <button
                      className="button small"
                      data-testid="webhook-deliveries-toggle"
                      aria-expanded={open === h.id}
                      onClick={() => setOpen(open === h.id ? null : h.id)}
                    >
                      {open === h.id ? 'Hide deliveries' : 'Deliveries'}
                    </button>
                    <button className="button small danger-ghost" data-testid="webhook-delete" disabled={busy === h.id} onClick={() => remove(h)}>
                      Delete
                    </button>
                  </div>
                </div>
                {open === h.id && <WebhookDeliveries webhookId={h.id} />}
              </li>
            ))}
          </ul>
        )}
      </Card>
      {creating && <WebhookFormDialog onClose={() => setCreating(false)} onSaved={() => setCreating(false)} />}
    </div>
  );
}
