// A project's work-in-progress limit (`max_running_turns`) as typed in its forms, and what the
// forms send: a whole number from 1 to 1000, or empty for no limit (`null`). Unchanged, it is
// left out of an update, as the budgets are (lib/budgets.ts).
import type { Project, UpdateProject } from '../api/client';

export const MAX_RUNNING_TURNS = 1000;

export type ParsedTurnLimit = { value: number | null; error?: undefined } | { value?: undefined; error: string };

/** A limit as typed ("3", ""): `null` when empty, else the number, or why not. */
export function parseTurnLimit(text: string): ParsedTurnLimit {
  const t = text.trim();
  if (!t) return { value: null };
  if (!/^\d+$/.test(t)) return { error: 'Enter a whole number of turns from 1 to 1000, or leave it empty for no limit.' };
  const value = Number(t);
  if (value < 1) return { error: 'At least 1 turn at once, or leave it empty for no limit.' };
  if (value > MAX_RUNNING_TURNS) return { error: 'At most 1000 turns at once.' };
  return { value };
}

/** A stored limit as the field's text: empty for none. */
export function turnLimitInput(project: Partial<Pick<Project, 'max_running_turns'>>): string {
  const v = project.max_running_turns;
  return v === null || v === undefined ? '' : String(v);
}

type TurnLimitField = Required<Pick<UpdateProject, 'max_running_turns'>>;

/**
 * The limit, for a (partial) update, when it differs from the project's: `null` clears it; left
 * out when unchanged. For a new project (`was` = `{}`): the limit when one is set. Only for a
 * text `parseTurnLimit` passed.
 */
export function turnLimitChanges(text: string, was: Partial<Pick<Project, 'max_running_turns'>>): Partial<TurnLimitField> {
  const now = parseTurnLimit(text).value ?? null;
  return now === (was.max_running_turns ?? null) ? {} : { max_running_turns: now };
}
