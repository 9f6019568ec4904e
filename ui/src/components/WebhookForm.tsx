// Register a webhook: its name, address, the events it gets, and the secret that signs them.
import { useState, type FormEvent } from 'react';
import { WEBHOOK_EVENT_TYPES, webhooksApi, type Webhook } from '../api/webhooks';
import { messageOf } from '../lib/errors';
import {
  checkWebhookForm,
  EMPTY_WEBHOOK_FORM,
  webhookBody,
  type WebhookFormErrors,
  type WebhookFormValues,
} from '../lib/webhookForm';
import { queryClient } from '../query/client';
import { putWebhook } from '../query/webhookFrames';
import { ErrorNote, Field, Modal } from './ui';

export function WebhookFormDialog(props: { onClose: () => void; onSaved: (hook: Webhook) => void }) {
  const [values, setValues] = useState<WebhookFormValues>(EMPTY_WEBHOOK_FORM);
  const [errors, setErrors] = useState<WebhookFormErrors>({});
  const [apiError, setApiError] = useState<string>();
  const [saving, setSaving] = useState(false);
  const set = (change: Partial<WebhookFormValues>, field?: keyof WebhookFormErrors) => {
    setValues((v) => ({ ...v, ...change }));
    if (field) setErrors((e) => ({ ...e, [field]: undefined }));
  };
  const toggle = (type: string, on: boolean) =>
    set({ picked: on ? [...values.picked, type] : values.picked.filter((t) => t !== type) }, 'events');

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const found = checkWebhookForm(values);
    setErrors(found);
    setApiError(undefined);
    if (Object.values(found).some(Boolean)) return;
    setSaving(true);
    try {
      const saved = await webhooksApi.create(webhookBody(values));
      putWebhook(queryClient, saved);
      props.onSaved(saved);
    } catch (err) {
      setApiError(messageOf(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <Modal title="New webhook" onClose={props.onClose}>
      <form className="form scroll-form" onSubmit={submit} noValidate data-testid="webhook-form">
        <Field label="Name">
          <input name="name" value={values.name} onChange={(e) => set({ name: e.target.value }, 'name')} aria-invalid={!!errors.name} autoFocus />
          {errors.name && <span className="field-error">{errors.name}</span>}
        </Field>
        <Field label="URL" hint="Each event is POSTed here as JSON.">
          <input name="url" type="url" className="mono" placeholder="https://example.com/conduit" value={values.url} onChange={(e) => set({ url: e.target.value }, 'url')} aria-invalid={!!errors.url} />
          {errors.url && <span className="field-error">{errors.url}</span>}
        </Field>
        <fieldset className="field plain-fieldset">
          <legend className="field-label">Events</legend>
          <label className="check-line">
            <input type="checkbox" name="all-events" checked={values.all} onChange={(e) => set({ all: e.target.checked }, 'events')} /> Every event
          </label>
          {!values.all && (
            <>
              <div className="events-pick">
                {WEBHOOK_EVENT_TYPES.map((t) => (
                  <label key={t}>
                    <input type="checkbox" name={`event-${t}`} checked={values.picked.includes(t)} onChange={(e) => toggle(t, e.target.checked)} />
                    <code>{t}</code>
                  </label>
                ))}
              </div>
              <input name="other-events" placeholder="Other event types, e.g. agent.execution.finished" value={values.other} onChange={(e) => set({ other: e.target.value }, 'events')} />
            </>
          )}
          {errors.events && <span className="field-error">{errors.events}</span>}
        </fieldset>
        <Field label="Secret (optional)" hint="Signs each delivery (X-Conduit-Signature). Empty: the service's CONDUIT_WEBHOOK_SECRET, if set. It is never shown again.">
          <input name="secret" type="password" autoComplete="new-password" value={values.secret} onChange={(e) => set({ secret: e.target.value }, 'secret')} aria-invalid={!!errors.secret} />
          {errors.secret && <span className="field-error">{errors.secret}</span>}
        </Field>
        <ErrorNote error={apiError} what="register the webhook" />
        <div className="form-buttons">
          <button type="button" className="button ghost" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={saving} data-testid="webhook-save">
            {saving ? 'Saving…' : 'Create webhook'}
          </button>
        </div>
      </form>
    </Modal>
  );
}
