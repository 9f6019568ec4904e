// A project's limits in its forms (the new-project dialog, its settings): the daily and monthly
// budgets side by side, then the turns at once. `useProjectLimits` holds what is typed and the
// fields' errors; a field's error goes as soon as it is edited, and `check` (on submit) shows
// every field's problem at once.
import { useState } from 'react';
import { hasErrors } from '../lib/budgets';
import { checkLimits, type LimitErrors, type LimitValues } from '../lib/projectLimits';
import { BudgetFields } from './BudgetFields';
import { TurnLimitField } from './TurnLimitField';

export interface ProjectLimits {
  values: LimitValues;
  errors: LimitErrors;
  change: (field: keyof LimitValues, value: string) => void;
  /** Shows what is wrong, if anything; whether the values may be sent. */
  check: () => boolean;
}

export function useProjectLimits(initial: LimitValues | (() => LimitValues)): ProjectLimits {
  const [values, setValues] = useState(initial);
  const [errors, setErrors] = useState<LimitErrors>({});
  return {
    values,
    errors,
    change: (field, value) => {
      setValues((v) => ({ ...v, [field]: value }));
      setErrors((e) => ({ ...e, [field]: undefined }));
    },
    check: () => {
      const found = checkLimits(values);
      setErrors(found);
      return !hasErrors(found);
    },
  };
}

export function ProjectLimitFields({ limits }: { limits: ProjectLimits }) {
  const { values, errors, change } = limits;
  return (
    <>
      <BudgetFields values={values} errors={errors} onChange={change} />
      <TurnLimitField value={values.turns} onChange={(v) => change('turns', v)} error={errors.turns} />
    </>
  );
}
