// Test helpers for pages: a fetch that answers by "METHOD /path", and a render inside the app's
// query client and a router. The app's own `queryClient` is used (the live-frame listener
// writes into it), emptied before each test.
import { QueryClientProvider } from '@tanstack/react-query';
import { render } from '@testing-library/react';
import type { ReactNode } from 'react';
import { MemoryRouter, Route, Routes } from 'react-router-dom';
import { queryClient } from '../query/client';

export interface Request {
  method: string;
  url: URL;
  body: unknown;
}

/** A route's answer: a Response as is, or any other value as a 200 JSON body. */
export type Handler = (req: Request) => unknown;

export function json(status: number, body: unknown): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

export function apiError(status: number, code: string, message: string, extra: Record<string, unknown> = {}): Response {
  return json(status, { error: { code, message }, ...extra });
}

/** Replaces `fetch`; unknown routes answer 404. Returns the requests seen, in order. */
export function mockApi(routes: Record<string, Handler>): Request[] {
  const seen: Request[] = [];
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input), 'http://localhost');
    const method = (init?.method ?? 'GET').toUpperCase();
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined;
    const req = { method, url, body };
    seen.push(req);
    const handler = routes[`${method} ${url.pathname}`];
    if (!handler) return apiError(404, 'not_found', `no mock for ${method} ${url.pathname}`);
    const answer = await handler(req);
    return answer instanceof Response ? answer : json(200, answer);
  });
  vi.stubGlobal('fetch', fetchMock);
  return seen;
}

/** Renders `page` at `path` (matched against `route`, e.g. `/sessions/:sessionId/review`). */
export function renderPage(page: ReactNode, path: string, route = path.split('?')[0]) {
  queryClient.clear();
  queryClient.setDefaultOptions({ queries: { ...queryClient.getDefaultOptions().queries, retry: false } });
  return render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter initialEntries={[path]}>
        <Routes>
          <Route path={route} element={page} />
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>,
  );
}
