// Budgets and spending caps as typed in forms, and what the forms send. The checks mirror the
// API's schema: a project's daily or monthly budget is 0 or more (0 allows nothing), a
// session's or a scheduled agent's per-run cap more than 0, both less than $1,000,000; an empty
// field means none (`null`).
import type { Project, UpdateProject } from '../api/client';

export const MAX_USD = 1_000_000;

/** `budget`: a project's daily or monthly budget (0 allowed); `cap`: a session's or run's cap (> 0). */
export type UsdKind = 'budget' | 'cap';

export type ParsedUsd = { value: number | null; error?: undefined } | { value?: undefined; error: string };

const AMOUNT = /^(\d+(\.\d*)?|\.\d+)$/;

/** An amount as typed ("25", "7.50", "$7.50", ""): `null` when empty, else the number, or why not. */
export function parseUsd(text: string, kind: UsdKind): ParsedUsd {
  const t = text.trim().replace(/^\$\s*/, '');
  if (!t) return { value: null };
  if (/^-\s*\$?\s*(\d|\.\d)/.test(t)) {
    return { error: kind === 'budget' ? 'A budget cannot be negative: $0 or more, or empty for none.' : 'A cap must be more than $0, or empty for none.' };
  }
  if (!AMOUNT.test(t)) {
    return {
      error:
        kind === 'budget'
          ? 'Enter an amount in USD, like 25 or 7.50, or leave it empty for no budget.'
          : 'Enter an amount in USD, like 2 or 0.50, or leave it empty for no cap.',
    };
  }
  const value = Number(t);
  if (kind === 'cap' && value === 0) return { error: 'A cap must be more than $0, or empty for none.' };
  if (value >= MAX_USD) return { error: 'Less than $1,000,000.' };
  return { value };
}

/** A stored amount as the field's text: empty for none. */
export function usdInput(value: number | null | undefined): string {
  return value === null || value === undefined ? '' : String(value);
}

/** A project's two budgets, as typed. */
export interface BudgetValues {
  daily: string;
  monthly: string;
}

export type BudgetErrors = Partial<Record<keyof BudgetValues, string>>;

export const NO_BUDGETS: BudgetValues = { daily: '', monthly: '' };

export function budgetValuesOf(project: Pick<Project, 'budget_daily_usd' | 'budget_monthly_usd'>): BudgetValues {
  return { daily: usdInput(project.budget_daily_usd), monthly: usdInput(project.budget_monthly_usd) };
}

export function checkBudgets(v: BudgetValues): BudgetErrors {
  const errors: BudgetErrors = {};
  const daily = parseUsd(v.daily, 'budget');
  if (daily.error) errors.daily = daily.error;
  const monthly = parseUsd(v.monthly, 'budget');
  if (monthly.error) errors.monthly = monthly.error;
  return errors;
}

export const hasErrors = (errors: object) => Object.values(errors).some(Boolean);

type BudgetFields = Required<Pick<UpdateProject, 'budget_daily_usd' | 'budget_monthly_usd'>>;

/** Both budgets as the API takes them (`null`: none). Only for values `checkBudgets` passed. */
export function budgetsBody(v: BudgetValues): BudgetFields {
  return { budget_daily_usd: parseUsd(v.daily, 'budget').value ?? null, budget_monthly_usd: parseUsd(v.monthly, 'budget').value ?? null };
}

/**
 * The budgets that differ from the project's, for its (partial) update: `null` clears one.
 * Unchanged ones are left out, so saving other settings neither overwrites a budget changed
 * meanwhile nor makes the service weigh its budgets again. For a new project (`was` = `{}`):
 * the budgets set, none being the default.
 */
export function budgetChanges(v: BudgetValues, was: Partial<Pick<Project, 'budget_daily_usd' | 'budget_monthly_usd'>>): Partial<BudgetFields> {
  const now = budgetsBody(v);
  const body: Partial<BudgetFields> = {};
  if (now.budget_daily_usd !== (was.budget_daily_usd ?? null)) body.budget_daily_usd = now.budget_daily_usd;
  if (now.budget_monthly_usd !== (was.budget_monthly_usd ?? null)) body.budget_monthly_usd = now.budget_monthly_usd;
  return body;
}

/** The UTC day and month `now` falls in, as `from` for the usage windows (`YYYY-MM-DD`: midnight UTC). */
export function budgetWindows(now: number): { day: string; month: string } {
  const day = new Date(now).toISOString().slice(0, 10);
  return { day, month: `${day.slice(0, 8)}01` };
}

/** When a daily or monthly budget starts again: the next UTC midnight, or the next month's first. */
export function nextReset(period: 'day' | 'month', now: number): number {
  const d = new Date(now);
  return period === 'day'
    ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
    : Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** Whether a budget is spent: reaching it counts (as for the service: a budget of 0 allows nothing). */
export function isSpent(spent: number | undefined, cap: number | null | undefined): boolean {
  return spent !== undefined && cap !== null && cap !== undefined && spent >= cap;
}
