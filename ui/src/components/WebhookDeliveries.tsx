// A webhook's delivery attempts, newest first. The service sends no event for them, so they
// are read when opened and again on "Refresh".
import { useQuery } from '@tanstack/react-query';
import { webhooksApi } from '../api/webhooks';
import { messageOf } from '../lib/errors';
import { ago } from '../lib/format';
import { keys } from '../query/client';
import { Empty, ErrorNote, Loading } from './ui';

export function WebhookDeliveries({ webhookId }: { webhookId: string }) {
  const q = useQuery({ queryKey: keys.webhookDeliveries(webhookId), queryFn: () => webhooksApi.deliveries(webhookId) });
  return (
    <div className="deliveries" data-testid="webhook-deliveries">
      <div className="form-buttons">
        <span className="muted small spacer">Delivery attempts, newest first (kept 7 days).</span>
        <button className="button small" data-testid="webhook-deliveries-refresh" disabled={q.isFetching} onClick={() => q.refetch()}>
          {q.isFetching ? 'Loading…' : 'Refresh'}
        </button>
      </div>
      <ErrorNote error={q.error ? messageOf(q.error) : undefined} what="load the deliveries" />
      {q.isPending && <Loading />}
      {q.data?.length === 0 && <Empty title="Nothing delivered yet.">Attempts show here once an event it asked for happens.</Empty>}
      {q.data && q.data.length > 0 && (
        <div className="table-scroll">
          <table className="table compact">
            <thead>
              <tr>
                <th>When</th>
                <th>Event</th>
                <th>Response</th>
                <th className="num">Attempt</th>
                <th className="num">Took</th>
                <th>Delivery</th>
              </tr>
            </thead>
            <tbody>
              {q.data.map((a) => (
                <tr key={a.id} data-testid="delivery-row">
                  <td title={new Date(a.attempted_at).toLocaleString()}>{ago(a.attempted_at)}</td>
                  <td>
                    <code>{a.event_type}</code>
                  </td>
                  <td className={a.succeeded ? 'delivery-ok' : 'delivery-bad'}>
                    {a.succeeded ? 'delivered' : 'failed'}
                    {a.status_code != null && ` · HTTP ${a.status_code}`}
                    {a.error && a.error !== `HTTP ${a.status_code}` && <div className="small cell-text">{a.error}</div>}
                  </td>
                  <td className="num">{a.attempt} of 4</td>
                  <td className="num">{a.duration_ms} ms</td>
                  <td>
                    <code title={a.delivery_id}>{a.delivery_id.slice(0, 8)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
