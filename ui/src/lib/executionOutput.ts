// What a run of a scheduled agent says, built from its stream's frames
// (`GET /api/executions/{id}/stream`): the normalized events every agent kind shares
// (`assistant.delta|message`, `tool.started|finished`, `turn.result|error`) become readable
// entries; `agent.execution.output` frames are the CLI's raw lines, kept apart.
import type { Frame } from './sse';

export type OutputEntry =
  | { kind: 'text'; key: string; text: string; itemId: string | null; done: boolean }
  | { kind: 'tool'; key: string; toolUseId: string | null; tool: string; input: string; output?: string; isError?: boolean }
  | { kind: 'result'; key: string; ok: boolean; status: string; text: string; cost: number | null }
  | { kind: 'note'; key: string; text: string; bad?: boolean };

export interface RunOutput {
  entries: OutputEntry[];
  /** The CLI's lines as they came (JSON text). */
  raw: string[];
  /** The run's `agent.execution.finished` frame arrived. */
  finished: boolean;
  /** The service dropped some of the run's events for this reader (`raw` is not whole). */
  missed: boolean;
  /** The last frame's sequence number (to resume with `?since=`). */
  lastSeq: number | null;
}

export const EMPTY_OUTPUT: RunOutput = { entries: [], raw: [], finished: false, missed: false, lastSeq: null };

type Data = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Tool inputs and outputs as short readable text. */
export function brief(value: unknown, max = 2000): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value && typeof value === 'object' && typeof (value as Data).command === 'string') {
    text = (value as Data).command as string;
  } else text = JSON.stringify(value, null, 2) ?? '';
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `state` with one more frame applied (a new object when anything changed). */
export function applyRunFrame(state: RunOutput, frame: Frame, id: number | null): RunOutput {
  const lastSeq = id ?? state.lastSeq;
  if (frame.event === 'warning') {
    const note: OutputEntry = {
      kind: 'note',
      key: `w${lastSeq ?? ''}-${state.entries.length}`,
      text: `${frame.dropped ?? 'Some'} events of this run were missed; the final output below is complete.`,
      bad: true,
    };
    return { ...state, lastSeq, missed: true, entries: [...state.entries, note] };
  }
  const data = (frame.data && typeof frame.data === 'object' ? frame.data : {}) as Data;
  const key = `${frame.seq ?? id ?? state.entries.length}`;
  const entries = state.entries;
  switch (frame.type) {
    case 'agent.execution.output':
      return { ...state, lastSeq, raw: [...state.raw, typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data)] };
    case 'agent.execution.started':
      return { ...state, lastSeq, entries: [...entries, { kind: 'note', key, text: 'Run started.' }] };
    case 'agent.execution.finished':
      return { ...state, lastSeq, finished: true };
    case 'agent.execution.limit_reached': {
      // Not an end: the same run goes again after the reset, on this stream.
      const at = str(data.resumes_at);
      const when = at ? ` at ${new Date(at).toLocaleString()}` : ' after the reset';
      const text = `Stopped by a usage limit; the run goes again${when}.`;
      return { ...state, lastSeq, entries: [...entries, { kind: 'note', key, text, bad: true }] };
    }
    case 'assistant.delta': {
      const itemId = str(data.item_id);
      const last = entries[entries.length - 1];
      if (last?.kind === 'text' && !last.done && last.itemId === itemId) {
        const grown = { ...last, text: last.text + (str(data.text) ?? '') };
        return { ...state, lastSeq, entries: [...entries.slice(0, -1), grown] };
      }
      return { ...state, lastSeq, entries: [...entries, { kind: 'text', key, text: str(data.text) ?? '', itemId, done: false }] };
    }
    case 'assistant.message': {
      // The whole message replaces the pieces streamed before it.
      const itemId = str(data.item_id);
      const entry: OutputEntry = { kind: 'text', key, text: str(data.text) ?? '', itemId, done: true };
      const last = entries[entries.length - 1];
      if (last?.kind === 'text' && !last.done) {
        return { ...state, lastSeq, entries: [...entries.slice(0, -1), { ...entry, key: last.key }] };
      }
      return { ...state, lastSeq, entries: [...entries, entry] };
    }
    case 'tool.started':
      return {
        ...state,
        lastSeq,
        entries: [
          ...entries,
          { kind: 'tool', key, toolUseId: str(data.tool_use_id), tool: str(data.tool) ?? 'tool', input: brief(data.input) },
        ],
      };
    case 'tool.finished': {
      const toolUseId = str(data.tool_use_id);
      const at = toolUseId ? entries.findIndex((e) => e.kind === 'tool' && e.toolUseId === toolUseId) : -1;
      const finished = { output: brief(data.output), isError: data.is_error === true };
      if (at >= 0) {
        return { ...state, lastSeq, entries: entries.map((e, i) => (i === at ? { ...e, ...finished } : e)) };
      }
      const tool: OutputEntry = { kind: 'tool', key, toolUseId, tool: str(data.tool) ?? 'tool', input: '', ...finished };
      return { ...state, lastSeq, entries: [...entries, tool] };
    }
    case 'turn.result':
      return {
        ...state,
        lastSeq,
        entries: [
          ...entries,
          {
            kind: 'result',
            key,
            ok: data.is_error !== true,
            status: str(data.status) ?? '',
            text: str(data.text) ?? '',
            cost: num(data.cost_usd),
          },
        ],
      };
    case 'turn.error':
      return { ...state, lastSeq, entries: [...entries, { kind: 'note', key, text: str(data.message) ?? 'The turn failed.', bad: true }] };
    default:
      return lastSeq === state.lastSeq ? state : { ...state, lastSeq };
  }
}
