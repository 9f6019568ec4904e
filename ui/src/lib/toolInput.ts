// A tool call's input (JSON text, secrets already redacted by the service) in the fewest
// words that say what it does: the command, the file, the address, else the JSON cut short.

const SUBJECT_KEYS = ['command', 'cmd', 'file_path', 'notebook_path', 'path', 'pattern', 'url', 'query', 'description', 'prompt'];
const LIMIT = 300;

export function inputSummary(toolInput: string): string {
  let value: unknown;
  try {
    value = JSON.parse(toolInput);
  } catch {
    return cut(toolInput);
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    for (const k of SUBJECT_KEYS) {
      const s = v[k];
      if (typeof s === 'string' && s) return cut(s);
      // Codex gives commands as argument lists.
      if (Array.isArray(s) && s.every((p) => typeof p === 'string')) return cut(s.join(' '));
    }
  }
  return cut(JSON.stringify(value));
}

/** The whole input, indented, for the row's details. */
export function inputPretty(toolInput: string): string {
  try {
    return JSON.stringify(JSON.parse(toolInput), null, 2);
  } catch {
    return toolInput;
  }
}

function cut(text: string): string {
  return text.length > LIMIT ? `${text.slice(0, LIMIT)}…` : text;
}
