// A project's limits as its forms (new project, settings) hold them: the daily and monthly
// budgets (lib/budgets.ts) and the turns at once (lib/turnLimit.ts), checked together and sent
// as one part of the body.
import type { Project, UpdateProject } from '../api/client';
import { budgetChanges, budgetValuesOf, checkBudgets, NO_BUDGETS, type BudgetErrors, type BudgetValues } from './budgets';
import { parseTurnLimit, turnLimitChanges, turnLimitInput } from './turnLimit';

/** The limits as typed; `turns`: the "Turns at once" field. */
export interface LimitValues extends BudgetValues {
  turns: string;
}

export type LimitErrors = BudgetErrors & { turns?: string };

export const NO_LIMITS: LimitValues = { ...NO_BUDGETS, turns: '' };

type Limited = Pick<Project, 'budget_daily_usd' | 'budget_monthly_usd' | 'max_running_turns'>;

/** A stored project's limits as the fields' text. */
export function limitValuesOf(project: Limited): LimitValues {
  return { ...budgetValuesOf(project), turns: turnLimitInput(project) };
}

/** What is wrong with each field, if anything. */
export function checkLimits(v: LimitValues): LimitErrors {
  const errors: LimitErrors = checkBudgets(v);
  const turns = parseTurnLimit(v.turns).error;
  if (turns) errors.turns = turns;
  return errors;
}

/**
 * The limits that differ from the project's, for its update (`null` clears one, unchanged ones
 * are left out); for a new project (`was` = `{}`), those set. Only for values `checkLimits` passed.
 */
export function limitChanges(
  v: LimitValues,
  was: Partial<Limited>,
): Partial<Pick<UpdateProject, 'budget_daily_usd' | 'budget_monthly_usd' | 'max_running_turns'>> {
  return { ...budgetChanges(v, was), ...turnLimitChanges(v.turns, was) };
}
