// Webhooks in the query cache: written from `webhook.created|deleted` frames and from the
// answers of the page's own calls. Delivery attempts have no events: they load when opened.
import type { QueryClient } from '@tanstack/react-query';
import type { Webhook } from '../api/webhooks';
import type { Frame } from '../lib/sse';
import { keys } from './client';
import { byName, isRow, removeById, upsertById } from './rows';

export function putWebhook(client: QueryClient, row: Webhook): void {
  client.setQueryData<Webhook[]>(keys.webhooks, (list) => upsertById(list, row, byName));
}

export function dropWebhook(client: QueryClient, webhookId: string): void {
  client.setQueryData<Webhook[]>(keys.webhooks, (list) => removeById(list, webhookId));
  client.removeQueries({ queryKey: keys.webhookDeliveries(webhookId), exact: true });
}

export function applyWebhookFrame(client: QueryClient, frame: Frame): void {
  const data = frame.data;
  if (!isRow(data)) return;
  if (frame.type === 'webhook.deleted') dropWebhook(client, String(data.id));
  else if ((frame.type === 'webhook.created' || frame.type === 'webhook.updated') && typeof data.url === 'string') {
    putWebhook(client, data as unknown as Webhook);
  }
}
