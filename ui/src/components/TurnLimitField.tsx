// A project's work-in-progress limit: how many of its sessions may run a turn at once. A plain
// text input with a numeric keypad, as the budgets' (BudgetFields.tsx): a number input would
// empty itself on "abc", which would read as "no limit" instead of saying what is wrong.
import { Field, FieldError } from './ui';

export function TurnLimitField(props: { value: string; onChange: (value: string) => void; error?: string }) {
  return (
    <Field label="Turns at once" hint="How many of its sessions may run a turn at the same time; the others wait in line. Empty: no limit.">
      <input
        name="max_running_turns"
        inputMode="numeric"
        autoComplete="off"
        value={props.value}
        placeholder="no limit"
        onChange={(e) => props.onChange(e.target.value)}
        aria-invalid={!!props.error}
      />
      <FieldError text={props.error} />
    </Field>
  );
}
