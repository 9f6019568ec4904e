// Webhooks and their delivery attempts.
import { call, type Schemas } from './client';

export type Webhook = Schemas['Webhook'];
export type CreateWebhook = Schemas['CreateWebhook'];
export type DeliveryAttempt = Schemas['Attempt'];

const id = (value: string) => ({ id: value });

export const webhooksApi = {
  list: () => call('get', '/api/webhooks', { query: { limit: 1000 } }),
  create: (body: CreateWebhook) => call('post', '/api/webhooks', { body }),
  remove: (webhookId: string) => call('delete', '/api/webhooks/{id}', { params: id(webhookId) }),
  deliveries: (webhookId: string) =>
    call('get', '/api/webhooks/{id}/deliveries', { params: id(webhookId), query: { limit: 100 } }),
};

/**
 * The event types a webhook can ask for, as the service documents them (`*` is every one).
 * Other names the service knows can still be typed in by hand.
 */
export const WEBHOOK_EVENT_TYPES = [
  'session.created',
  'session.status',
  'session.message',
  'session.result',
  'session.error',
  'session.closed',
  'stream.event',
  'permission.decision',
] as const;
