import { ApiError } from '../api/client';
import { duration } from './format';

/**
 * A 402 `budget_exhausted`: a budget covering the call is spent (a project's daily or monthly
 * one, the service's, or a session's own cap), so launches, messages, resumes and runs are
 * refused until it resets or is raised.
 */
export function isBudgetExhausted(e: unknown): e is ApiError {
  return e instanceof ApiError && e.code === 'budget_exhausted';
}

/** The sentence to show for a failed call: the service's own message when it sent one. */
export function messageOf(e: unknown): string {
  if (isBudgetExhausted(e)) return budgetMessage(e);
  if (e instanceof ApiError || e instanceof Error) return e.message;
  return String(e);
}

/**
 * The service names the budget, what it allows and when it resets (an RFC 3339 time); its
 * `Retry-After` says the same as a wait, which reads better: "Resets in 5h 12m."
 */
function budgetMessage(e: ApiError): string {
  if (e.retryAfter === undefined || e.retryAfter <= 0) return e.message;
  const sentence = /[.!?]$/.test(e.message) ? e.message : `${e.message}.`;
  return `${sentence} Resets in ${duration(e.retryAfter)}.`;
}
