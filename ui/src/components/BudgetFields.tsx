// Inputs for amounts in USD: a project's daily and monthly budgets, a session's or a run's cap.
// Plain text inputs (with a decimal keypad on phones), not `type="number"`: a browser empties a
// number input holding "abc", which would read as "no budget" instead of saying what is wrong.
import type { BudgetErrors, BudgetValues } from '../lib/budgets';
import { Field, FieldError } from './ui';

export function UsdField(props: {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  error?: string;
  hint?: string;
  placeholder?: string;
}) {
  return (
    <Field label={props.label} hint={props.hint}>
      <input
        name={props.name}
        inputMode="decimal"
        autoComplete="off"
        value={props.value}
        placeholder={props.placeholder ?? 'none'}
        onChange={(e) => props.onChange(e.target.value)}
        aria-invalid={!!props.error}
      />
      <FieldError text={props.error} />
    </Field>
  );
}

/** A project's daily and monthly budgets, side by side. */
export function BudgetFields(props: { values: BudgetValues; errors: BudgetErrors; onChange: (field: keyof BudgetValues, value: string) => void }) {
  const { values, errors, onChange } = props;
  return (
    <div className="form-row">
      <UsdField
        label="Daily budget (USD)"
        name="budget_daily_usd"
        value={values.daily}
        onChange={(v) => onChange('daily', v)}
        error={errors.daily}
        hint="Per UTC day. Empty: no budget."
      />
      <UsdField
        label="Monthly budget (USD)"
        name="budget_monthly_usd"
        value={values.monthly}
        onChange={(v) => onChange('monthly', v)}
        error={errors.monthly}
        hint="Per UTC month. Empty: no budget."
      />
    </div>
  );
}
