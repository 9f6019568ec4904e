// The webhook form's values, checks and body (CreateWebhook).
import type { CreateWebhook } from '../api/webhooks';

export interface WebhookFormValues {
  name: string;
  url: string;
  /** Every event (`*`), or the ones picked plus the ones typed. */
  all: boolean;
  picked: string[];
  /** More event type names, separated by commas or spaces. */
  other: string;
  secret: string;
}

export type WebhookFormErrors = Partial<Record<'name' | 'url' | 'events' | 'secret', string>>;

export const EMPTY_WEBHOOK_FORM: WebhookFormValues = { name: '', url: '', all: true, picked: [], other: '', secret: '' };

export function eventsOf(v: WebhookFormValues): string[] {
  if (v.all) return ['*'];
  const typed = v.other.split(/[\s,]+/).filter(Boolean);
  return [...new Set([...v.picked, ...typed])];
}

export function checkWebhookForm(v: WebhookFormValues): WebhookFormErrors {
  const errors: WebhookFormErrors = {};
  const name = v.name.trim();
  if (!name) errors.name = 'Give it a name.';
  else if (name.length > 200) errors.name = 'At most 200 characters.';
  const url = v.url.trim();
  if (!url) errors.url = 'Where should events be sent?';
  else if (url.length > 2000) errors.url = 'At most 2000 characters.';
  else if (!isHttpUrl(url)) errors.url = 'An http:// or https:// address.';
  if (eventsOf(v).length === 0) errors.events = 'Choose at least one event type, or all.';
  if (v.secret.length > 256) errors.secret = 'At most 256 characters.';
  return errors;
}

export function webhookBody(v: WebhookFormValues): CreateWebhook {
  const body: CreateWebhook = { name: v.name.trim(), url: v.url.trim(), events: eventsOf(v) };
  if (v.secret) body.secret = v.secret;
  return body;
}

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host !== '';
  } catch {
    return false;
  }
}
