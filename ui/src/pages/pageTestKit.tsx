// What the page tests share: a fake service behind `fetch` (answers by method and path, every
// call recorded), server-sent event bodies the test writes into, and a page rendered with the
// app's query client and routes.
import { QueryClientProvider } from '@tanstack/react-query';
import { render } from '@testing-library/react';
import type { ReactElement } from 'react';
import { MemoryRouter, Route, Routes, useLocation } from 'react-router-dom';
import { queryClient } from '../query/client';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

type Reply = { status?: number; body?: unknown; stream?: ReadableStream<Uint8Array> };
type Handler = (req: Recorded) => Reply | Promise<Reply>;

export class FakeService {
  readonly calls: Recorded[] = [];
  private readonly routes: { method: string; pattern: RegExp; handler: Handler }[] = [];

  /** `path` may hold `*` for one path segment. */
  on(method: string, path: string, handler: Handler | Reply): this {
    const pattern = new RegExp(`^${path.replace(/[.?+()[\]{}]/g, '\\$&').replace(/\*/g, '[^/]+')}$`);
    this.routes.push({ method, pattern, handler: typeof handler === 'function' ? handler : () => handler });
    return this;
  }

  callsTo(method: string, path: string): Recorded[] {
    return this.calls.filter((c) => c.method === method && c.path === path);
  }

  readonly fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input), 'http://conduit.test');
    const method = (init?.method ?? 'GET').toUpperCase();
    const req: Recorded = {
      method,
      path: url.pathname,
      query: url.searchParams,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    };
    this.calls.push(req);
    // Last registered first: a test can override a default answer.
    const route = [...this.routes].reverse().find((r) => r.method === method && r.pattern.test(url.pathname));
    if (!route) return json(404, { error: { code: 'not_found', message: `No fake for ${method} ${url.pathname}` } });
    const reply = await route.handler(req);
    if (reply.stream) {
      return new Response(reply.stream, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
    }
    if (reply.status === 204) return new Response(null, { status: 204 });
    return json(reply.status ?? 200, reply.body);
  };
}

function json(status: number, body: unknown): Response {
  return new Response(body === undefined ? '' : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

/** A `text/event-stream` body the test writes frames into. */
export function sseBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  return {
    stream,
    send(id: number, frame: Record<string, unknown>) {
      controller.enqueue(encoder.encode(`id: ${id}\nevent: ${String(frame.event ?? 'message')}\ndata: ${JSON.stringify(frame)}\n\n`));
    },
    close() {
      controller.close();
    },
  };
}

function Where() {
  const l = useLocation();
  return <div data-testid="location">{l.pathname + l.search}</div>;
}

/** Renders `routes` (path → page) at `at`, with the app's query client. */
export function renderAt(at: string, routes: Record<string, ReactElement>) {
  return render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter initialEntries={[at]}>
        <Routes>
          {Object.entries(routes).map(([path, element]) => (
            <Route key={path} path={path} element={element} />
          ))}
        </Routes>
        <Where />
      </MemoryRouter>
    </QueryClientProvider>,
  );
}
