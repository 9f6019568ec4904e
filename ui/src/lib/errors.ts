import { ApiError } from '../api/client';

/** The sentence to show for a failed call: the service's own message when it sent one. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError || e instanceof Error) return e.message;
  return String(e);
}
