import { ApiError, call, retryAfterSeconds } from '../api/client';
import { isBudgetExhausted, messageOf } from './errors';

const SPENT = "The project's daily budget of $5.00 is spent ($5.0123); it resets at 2026-11-28T00:00:00Z, or when it is raised.";

describe('a failed call in words', () => {
  afterEach(() => vi.unstubAllGlobals());

  it("reads a 402 budget_exhausted's message and Retry-After, and says how long until the reset", async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () =>
        new Response(JSON.stringify({ error: { code: 'budget_exhausted', message: SPENT } }), {
          status: 402,
          headers: { 'Content-Type': 'application/json', 'Retry-After': '18720' },
        }),
      ),
    );
    const failure = await call('post', '/api/projects/{id}/sessions', { params: { id: 'p1' }, body: {} }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiError);
    expect(isBudgetExhausted(failure)).toBe(true);
    expect((failure as ApiError).retryAfter).toBe(18_720);
    expect(messageOf(failure)).toBe(`${SPENT} Resets in 5h 12m.`);
  });

  it("says only the service's words when no reset is known (a session's own cap never resets)", () => {
    const capped = new ApiError(402, 'budget_exhausted', "The session's budget of $2.00 is spent ($2.0100); it is spent for good unless raised.");
    expect(messageOf(capped)).toBe("The session's budget of $2.00 is spent ($2.0100); it is spent for good unless raised.");
    expect(isBudgetExhausted(new ApiError(409, 'conflict', 'no'))).toBe(false);
    expect(messageOf(new ApiError(409, 'conflict', 'The session is closed.'))).toBe('The session is closed.');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds('Fri, 27 Nov 2026 13:00:00 GMT', now)).toBe(3600);
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
  });
});
