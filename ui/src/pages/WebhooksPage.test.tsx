import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import type { DeliveryAttempt, Webhook } from '../api/webhooks';
import { listenForPageFrames } from '../query/pageFrames';
import { queryClient } from '../query/client';
import { applyFrame } from '../store/live';
import { FakeService, renderAt } from './pageTestKit';
import { WebhooksPage } from './WebhooksPage';

const hook = (over: Partial<Webhook> = {}): Webhook => ({
  id: 'w1', name: 'slack relay', url: 'https://hooks.example/slack', events: ['*'], signed: true, active: true,
  dropped_deliveries: 0, created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z', ...over,
});
const attempt = (over: Partial<DeliveryAttempt> = {}): DeliveryAttempt => ({
  id: 1, delivery_id: 'd1234567890', webhook_id: 'w1', event_type: 'session.result', attempt: 1, duration_ms: 42,
  succeeded: true, status_code: 200, attempted_at: '2026-01-01T00:00:00Z', ...over,
});

let service: FakeService;
let stopFrames: () => void;
beforeAll(() => {
  stopFrames = listenForPageFrames();
});
afterAll(() => stopFrames());
beforeEach(() => {
  queryClient.clear();
  service = new FakeService().on('GET', '/api/webhooks', { body: [hook()] });
  vi.stubGlobal('fetch', service.fetch);
});
afterEach(() => vi.unstubAllGlobals());

describe('the webhooks page', () => {
  it('checks the form, shows the refusal, then registers a webhook for chosen events with its secret', async () => {
    let answer: { status: number; body: unknown } = {
      status: 422, body: { error: { code: 'validation_failed', message: 'Unknown event type "agent.nope".' } },
    };
    service.on('POST', '/api/webhooks', () => answer);
    renderAt('/webhooks', { '/webhooks': <WebhooksPage /> });
    await screen.findByText('slack relay');
    fireEvent.click(screen.getByTestId('webhook-new'));
    const form = screen.getByTestId('webhook-form');
    const field = (name: string) => form.querySelector(`[name="${name}"]`) as HTMLInputElement;

    fireEvent.change(field('url'), { target: { value: 'ftp://files.example' } });
    fireEvent.click(field('all-events'));
    fireEvent.click(screen.getByTestId('webhook-save'));
    expect(within(form).getByText('Give it a name.')).toBeTruthy();
    expect(within(form).getByText('An http:// or https:// address.')).toBeTruthy();
    expect(within(form).getByText('Choose at least one event type, or all.')).toBeTruthy();
    expect(service.callsTo('POST', '/api/webhooks')).toHaveLength(0);

    fireEvent.change(field('name'), { target: { value: 'ci' } });
    fireEvent.change(field('url'), { target: { value: 'https://ci.example/hook' } });
    fireEvent.click(field('event-session.result'));
    fireEvent.click(field('event-permission.decision'));
    fireEvent.change(field('other-events'), { target: { value: 'agent.nope' } });
    fireEvent.change(field('secret'), { target: { value: 's3cret' } });
    fireEvent.click(screen.getByTestId('webhook-save'));
    expect((await within(form).findByRole('alert')).textContent).toBe('Could not register the webhook: Unknown event type "agent.nope".');

    answer = { status: 201, body: hook({ id: 'w2', name: 'ci', url: 'https://ci.example/hook', events: ['session.result', 'permission.decision'] }) };
    fireEvent.change(field('other-events'), { target: { value: '' } });
    fireEvent.click(screen.getByTestId('webhook-save'));
    await waitFor(() => expect(screen.queryByTestId('webhook-form')).toBeNull());
    expect(service.callsTo('POST', '/api/webhooks')[1].body).toEqual({
      name: 'ci', url: 'https://ci.example/hook', events: ['session.result', 'permission.decision'], secret: 's3cret',
    });
    await waitFor(() => expect(screen.getAllByTestId('webhook-row')).toHaveLength(2));
    expect(screen.getByText('https://ci.example/hook')).toBeTruthy();
  });

  it('follows webhook.created and webhook.deleted frames, and shows a webhook deliveries with their status', async () => {
    service.on('GET', '/api/webhooks/w1/deliveries', {
      body: [attempt({ id: 2, attempt: 2, succeeded: false, status_code: 500, error: 'HTTP 500' }), attempt()],
    });
    renderAt('/webhooks', { '/webhooks': <WebhooksPage /> });
    await screen.findByText('slack relay');
    act(() => applyFrame({ event: 'webhook_created', type: 'webhook.created', data: hook({ id: 'w0', name: 'audit' }) }, 1));
    await waitFor(() => expect(screen.getAllByTestId('webhook-row')).toHaveLength(2));
    act(() => applyFrame({ event: 'webhook_deleted', type: 'webhook.deleted', data: { id: 'w0' } }, 2));
    await waitFor(() => expect(screen.getAllByTestId('webhook-row')).toHaveLength(1));
    expect(service.callsTo('GET', '/api/webhooks')).toHaveLength(1);

    fireEvent.click(screen.getByTestId('webhook-deliveries-toggle'));
    const rows = await screen.findAllByTestId('delivery-row');
    expect(rows[0].textContent).toContain('failed · HTTP 500');
    expect(rows[0].textContent).toContain('2 of 4');
    expect(rows[1].textContent).toContain('delivered · HTTP 200');
    fireEvent.click(screen.getByTestId('webhook-deliveries-refresh'));
    await waitFor(() => expect(service.callsTo('GET', '/api/webhooks/w1/deliveries')).toHaveLength(2));
  });

  it('deletes a webhook and says why when the service refuses', async () => {
    vi.spyOn(window, 'confirm').mockReturnValue(true);
    service.on('DELETE', '/api/webhooks/w1', { status: 404, body: { error: { code: 'not_found', message: 'No webhook w1.' } } });
    renderAt('/webhooks', { '/webhooks': <WebhooksPage /> });
    fireEvent.click(await screen.findByTestId('webhook-delete'));
    expect((await screen.findByRole('alert')).textContent).toBe('Could not delete slack relay: No webhook w1.');
    service.on('DELETE', '/api/webhooks/w1', { status: 204 });
    fireEvent.click(screen.getByTestId('webhook-delete'));
    await waitFor(() => expect(screen.getByText('No webhook yet.')).toBeTruthy());
  });
});
